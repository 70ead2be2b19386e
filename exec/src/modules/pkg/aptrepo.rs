//! apt's repositories as Salt's `aptpkg` sees them without python3-apt: one-line `deb`
//! entries in `/etc/apt/sources.list` and `/etc/apt/sources.list.d/**/*.list` (deb822
//! `.sources` files are not read, as in Salt), parsed and written back line by line as
//! Salt's fallback `SourceEntry`/`SourcesList` do, `[arch=... signed-by=...]` options
//! included. Pure over a root directory, so the tests work on a temporary tree.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// One line of a sources file, as Salt's `SourceEntry`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SourceEntry {
    /// The line as read (or as given), newline included when read from a file.
    pub line: String,
    /// The file it belongs to.
    pub file: String,
    /// Not a repository line (blank, a plain comment, malformed): written back as it was.
    pub invalid: bool,
    /// Commented out (`# deb ...`).
    pub disabled: bool,
    /// The text after a `#` following the entry.
    pub comment: String,
    /// `deb` or `deb-src`.
    pub kind: String,
    /// The repository's URI.
    pub uri: String,
    /// The suite (`bookworm`, `./`).
    pub dist: String,
    /// The components.
    pub comps: Vec<String>,
    /// `arch=` values.
    pub architectures: Vec<String>,
    /// `signed-by=` value.
    pub signedby: String,
}

/// One `[...]` option: its key (`arch`, `signedby`, other names as written), the text as
/// written (`arch=amd64`) and its value.
#[derive(Debug, Clone, PartialEq)]
struct Opt {
    key: String,
    full: String,
}

/// Salt's `_get_opts`: the options in the first `[...=...]` of a line, in order.
fn get_opts(line: &str) -> Vec<Opt> {
    let (Some(start), Some(end)) = (line.find('['), line.rfind(']')) else {
        return Vec::new();
    };
    if end < start || !line[start..end].contains('=') {
        return Vec::new();
    }
    line[start + 1..end]
        .split_whitespace()
        .map(|opt| {
            let key = if opt.starts_with("arch") {
                "arch".to_owned()
            } else if opt.starts_with("signed-by") {
                "signedby".to_owned()
            } else {
                opt.split('=').next().unwrap_or(opt).to_owned()
            };
            Opt {
                key,
                full: opt.to_owned(),
            }
        })
        .collect()
}

fn opt_value(full: &str) -> &str {
    full.split_once('=').map_or("", |(_, v)| v)
}

impl SourceEntry {
    /// Salt's `SourceEntry(line, file)`.
    pub fn parse(line: &str, file: &str) -> Self {
        let mut e = Self {
            line: line.to_owned(),
            file: file.to_owned(),
            ..Self::default()
        };
        let mut text = line.trim();
        if text.is_empty() {
            e.invalid = true;
            return e;
        }
        if let Some(rest) = text.strip_prefix('#') {
            e.disabled = true;
            text = rest;
        }
        let owned;
        if let Some(idx) = text.find('#').filter(|i| *i > 0) {
            e.comment = text[idx + 1..].to_owned();
            owned = text[..idx].to_owned();
            text = &owned;
        }
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.len() < 3 || !["deb", "deb-src", "rpm", "rpm-src"].contains(&words[0]) {
            e.invalid = true;
            return e;
        }
        if words[1].starts_with('[') && !words[1..].iter().any(|w| w.ends_with(']')) {
            e.invalid = true;
            return e;
        }
        let mut words: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
        if words[1].starts_with('[') {
            words = words
                .iter()
                .map(|w| w.trim_matches(['[', ']']).to_owned())
                .filter(|w| !w.is_empty())
                .collect();
            for opt in get_opts(line) {
                match opt.key.as_str() {
                    "arch" => e.architectures.extend(
                        opt_value(&opt.full)
                            .split(',')
                            .map(str::to_owned)
                            .collect::<Vec<_>>(),
                    ),
                    "signedby" => e.signedby = opt_value(&opt.full).to_owned(),
                    _ => {}
                }
                if let Some(i) = words.iter().position(|w| *w == opt.full) {
                    words.remove(i);
                }
            }
        }
        if words.len() < 3 {
            e.invalid = true;
            return e;
        }
        e.kind = words[0].clone();
        e.uri = words[1].clone();
        e.dist = words[2].clone();
        e.comps = words[3..].to_vec();
        e
    }

    /// Salt's `repo_line()`: the line written back to the file.
    pub fn repo_line(&self) -> String {
        if self.invalid {
            return self.line.clone();
        }
        let mut parts: Vec<String> = Vec::new();
        if self.disabled {
            parts.push("#".into());
        }
        parts.push(self.kind.clone());
        let mut opts = get_opts(&self.line);
        let mut set = |key: &str, full: String| match opts.iter_mut().find(|o| o.key == key) {
            Some(o) => o.full = full,
            None => opts.push(Opt {
                key: key.into(),
                full,
            }),
        };
        if !self.architectures.is_empty() {
            set("arch", format!("arch={}", self.architectures.join(",")));
        }
        if !self.signedby.is_empty() {
            set("signedby", format!("signed-by={}", self.signedby));
        }
        let written: Vec<&str> = opts
            .iter()
            .map(|o| o.full.as_str())
            .filter(|f| !f.is_empty())
            .collect();
        if !written.is_empty() {
            parts.push(format!("[{}]", written.join(" ")));
        }
        parts.push(self.uri.clone());
        parts.push(self.dist.clone());
        parts.push(self.comps.join(" "));
        if !self.comment.is_empty() {
            parts.push(format!("#{}", self.comment));
        }
        format!("{}\n", parts.join(" "))
    }

    /// The entry as `list_repos`/`get_repo` report it.
    pub fn to_value(&self) -> Value {
        json!({
            "file": self.file,
            "comps": self.comps,
            "disabled": self.disabled,
            "dist": self.dist,
            "type": self.kind,
            "uri": self.uri,
            "line": self.line.trim(),
            "architectures": self.architectures,
            "signedby": self.signedby,
        })
    }
}

/// `root/etc/apt/sources.list`, where a new entry goes without `file`.
pub fn default_file(root: &Path) -> PathBuf {
    root.join("etc/apt/sources.list")
}

/// Every line of the sources files under `root`, as Salt's `SourcesList`.
pub fn load(root: &Path) -> Vec<SourceEntry> {
    let mut files = vec![default_file(root)];
    let mut dirs = vec![root.join("etc/apt/sources.list.d")];
    let mut found = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "list") {
                found.push(p);
            }
        }
    }
    found.sort();
    files.extend(found);
    let mut out = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let name = f.display().to_string();
        for line in text.split_inclusive('\n') {
            out.push(SourceEntry::parse(line, &name));
        }
    }
    out
}

/// Salt's `SourcesList.save`: every file that still has entries rewritten with them.
pub fn save(list: &[SourceEntry]) -> std::io::Result<()> {
    let mut files: Vec<(&str, String)> = Vec::new();
    for e in list {
        let line = e.repo_line();
        match files.iter_mut().find(|(f, _)| *f == e.file) {
            Some((_, text)) => text.push_str(&line),
            None => files.push((&e.file, line)),
        }
    }
    for (file, text) in files {
        let path = Path::new(file);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("saltq-tmp");
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, path)?;
    }
    Ok(())
}

/// Salt's `list_repos`: the valid entries by URI.
pub fn list_repos(list: &[SourceEntry]) -> Map<String, Value> {
    let mut out = Map::new();
    for e in list.iter().filter(|e| !e.invalid) {
        if let Value::Array(a) = out
            .entry(e.uri.clone())
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            a.push(e.to_value());
        }
    }
    out
}

fn same_uri(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// Salt's `get_repo`: the first entry of the same type, URI and suite sharing a component
/// (any, when the definition names none); an empty dict when none does.
pub fn get_repo(list: &[SourceEntry], repo: &str) -> Value {
    let want = SourceEntry::parse(repo, "");
    for e in list.iter().filter(|e| !e.invalid) {
        if e.kind == want.kind
            && same_uri(&e.uri, &want.uri)
            && e.dist == want.dist
            && (want.comps.is_empty() || want.comps.iter().any(|c| e.comps.contains(c)))
        {
            return e.to_value();
        }
    }
    json!({})
}

/// What `mod_repo` changes in an entry (`comps`, `architectures`, `disabled`, `file`,
/// `comments`), given already split as Salt splits them.
#[derive(Debug, Clone, Default)]
pub struct RepoChange {
    /// `comps` as given (`main,contrib`), added to the definition's.
    pub comps: Option<Vec<String>>,
    /// `architectures` as given.
    pub architectures: Option<Vec<String>>,
    /// `disabled` (or `not enabled`).
    pub disabled: Option<bool>,
    /// The file to write the entry in.
    pub file: Option<String>,
    /// `comments`, joined.
    pub comments: Option<String>,
}

/// Salt's `mod_repo` on the loaded list (without keys and refresh): finds the entry to
/// change or appends one, applies the change, and answers the entry as Salt reports it.
/// `Err` for a definition that is not a repository line.
pub fn mod_repo(
    list: &mut Vec<SourceEntry>,
    root: &Path,
    repo: &str,
    change: &RepoChange,
) -> Result<Value, String> {
    let entry = SourceEntry::parse(repo, "");
    if entry.invalid {
        return Err(format!(
            "Name {repo} is not valid. This must be the complete repo entry as seen in the sources file"
        ));
    }
    let mut comps: Vec<String> = entry.comps.clone();
    if let Some(extra) = &change.comps {
        for c in extra {
            if !comps.contains(c) {
                comps.push(c.clone());
            }
        }
    }
    let new_comps = change.comps.clone().unwrap_or_else(|| comps.clone());
    let architectures = change
        .architectures
        .clone()
        .unwrap_or_else(|| entry.architectures.clone());
    let found = list.iter().position(|s| {
        let matches = s.kind == entry.kind && same_uri(&s.uri, &entry.uri) && s.dist == entry.dist;
        matches
            && (comps.iter().any(|c| s.comps.contains(c))
                || s.comps.is_empty()
                || architectures != s.architectures)
    });
    let idx = match found {
        Some(i) => i,
        None => {
            let mut e = SourceEntry::parse(repo, &default_file(root).display().to_string());
            if let Some(c) = &change.comments {
                e.comment = c.clone();
            }
            list.push(e);
            list.len() - 1
        }
    };
    let src = &mut list[idx];
    if found.is_some()
        && let Some(c) = &change.comments
    {
        src.comment = c.clone();
    }
    src.line = if repo.ends_with('\n') {
        repo.to_owned()
    } else {
        format!("{repo}\n")
    };
    src.comps = new_comps;
    src.architectures = architectures;
    src.signedby = entry.signedby.clone();
    if let Some(d) = change.disabled {
        src.disabled = d;
    }
    if let Some(f) = &change.file {
        src.file = f.clone();
    }
    if src.uri != entry.uri {
        src.uri = entry.uri.clone();
        src.line = src.repo_line();
    }
    let mut v = src.to_value();
    if let Value::Object(m) = &mut v {
        m.remove("dist");
        m.insert("line".into(), json!(src.line));
    }
    Ok(json!({ repo: v }))
}

/// Salt's `del_repo` on the loaded list: drops the definition's components from matching
/// entries (entries left without one go), and answers the files touched with how many
/// entries each keeps. `Err` when nothing matched.
pub fn del_repo(list: &mut Vec<SourceEntry>, repo: &str) -> Result<Vec<(String, usize)>, String> {
    let entry = SourceEntry::parse(repo, "");
    let mut touched: Vec<String> = Vec::new();
    let mut i = 0;
    while i < list.len() {
        let s = &mut list[i];
        if !s.invalid
            && s.kind == entry.kind
            && s.architectures == entry.architectures
            && same_uri(&s.uri, &entry.uri)
            && s.dist == entry.dist
        {
            let shared = s.comps.iter().any(|c| entry.comps.contains(c));
            if shared || (s.comps.is_empty() && entry.comps.is_empty()) {
                if !touched.contains(&s.file) {
                    touched.push(s.file.clone());
                }
                s.comps.retain(|c| !entry.comps.contains(c));
                if s.comps.is_empty() {
                    list.remove(i);
                    continue;
                }
            }
        }
        i += 1;
    }
    if touched.is_empty() {
        return Err(format!("Repo {repo} doesn't exist in the sources.list(s)"));
    }
    Ok(touched
        .into_iter()
        .map(|f| {
            let n = list.iter().filter(|s| s.file == f).count();
            (f, n)
        })
        .collect())
}

/// Salt's `_expand_repo_def` for Debian: the definition as `pkgrepo.managed` compares it
/// with what `get_repo` found (`comps`/`architectures` given as comma-separated text
/// replace the line's).
pub fn expand_repo_def(repo: &str, kwargs: &Map<String, Value>) -> Map<String, Value> {
    let mut e = SourceEntry::parse(repo, "");
    let split = |v: &Value| -> Vec<String> {
        saltq_semantics::python::str(v)
            .split(',')
            .map(|s| s.trim().to_owned())
            .collect()
    };
    if let Some(v) = kwargs.get("comps") {
        e.comps = split(v);
    }
    if let Some(v) = kwargs.get("architectures") {
        e.architectures = split(v);
    }
    if let Some(v) = kwargs.get("disabled") {
        e.disabled = saltq_semantics::python::is_true(v);
    }
    if let Some(v) = kwargs.get("dist") {
        e.dist = saltq_semantics::python::str(v);
    }
    if let Some(v) = kwargs.get("uri") {
        e.uri = saltq_semantics::python::str(v);
    }
    // Salt rebuilds the line from the parts (`SourcesList.add`), in the default file.
    let mut opts = Vec::new();
    if !e.architectures.is_empty() {
        opts.push(format!("arch={}", e.architectures.join(",")));
    }
    if !e.signedby.is_empty() {
        opts.push(format!("signed-by={}", e.signedby));
    }
    let opts = if opts.is_empty() {
        String::new()
    } else {
        format!("[{}]", opts.join(" "))
    };
    let rebuilt = [
        e.kind.as_str(),
        &opts,
        e.uri.as_str(),
        e.dist.as_str(),
        &e.comps.join(" "),
    ]
    .iter()
    .filter(|p| !p.trim().is_empty())
    .copied()
    .collect::<Vec<_>>()
    .join(" ");
    let mut added = SourceEntry::parse(&rebuilt, "/etc/apt/sources.list");
    added.disabled = e.disabled;
    added.line = added.repo_line();
    let mut out = match added.to_value() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    out.insert("signedby".into(), json!(e.signedby));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_like_salts_source_entry() {
        let e = SourceEntry::parse(
            "deb [arch=amd64 signed-by=/etc/apt/keyrings/x.gpg] https://example.org/debian bookworm main contrib # note\n",
            "/etc/apt/sources.list.d/x.list",
        );
        assert!(!e.invalid && !e.disabled);
        assert_eq!(e.kind, "deb");
        assert_eq!(e.uri, "https://example.org/debian");
        assert_eq!(e.dist, "bookworm");
        assert_eq!(e.comps, ["main", "contrib"]);
        assert_eq!(e.architectures, ["amd64"]);
        assert_eq!(e.signedby, "/etc/apt/keyrings/x.gpg");
        assert_eq!(e.comment, " note");
        assert_eq!(
            e.repo_line(),
            "deb [arch=amd64 signed-by=/etc/apt/keyrings/x.gpg] https://example.org/debian bookworm main contrib # note\n"
        );
        let off = SourceEntry::parse("# deb file:///tmp/r ./\n", "f");
        assert!(off.disabled && !off.invalid);
        assert_eq!(off.repo_line(), "# deb file:///tmp/r ./ \n");
        for bad in [
            "",
            "# a comment\n",
            "deb x\n",
            "deb [arch=amd64 http://x y\n",
        ] {
            let e = SourceEntry::parse(bad, "f");
            assert!(e.invalid, "{bad:?}");
            assert_eq!(e.repo_line(), bad);
        }
    }

    #[test]
    fn add_find_and_delete_in_a_tree() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = tmp.path();
        let d = root.join("etc/apt/sources.list.d");
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            d.join("keep.list"),
            "# kept\ndeb http://deb.example/debian bookworm main\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let file = d.join("new.list").display().to_string();
        let line = "deb [signed-by=/k.gpg] file:///tmp/r ./";
        let mut list = load(root);
        assert_eq!(get_repo(&list, line), json!({}));
        let change = RepoChange {
            file: Some(file.clone()),
            ..RepoChange::default()
        };
        let got = mod_repo(&mut list, root, line, &change).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got[line]["file"], json!(file));
        save(&list).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            std::fs::read_to_string(&file).unwrap_or_default(),
            "deb [signed-by=/k.gpg] file:///tmp/r ./ \n"
        );
        let list = load(root);
        assert_eq!(get_repo(&list, line)["signedby"], json!("/k.gpg"));
        assert_eq!(
            list_repos(&list)["http://deb.example/debian"][0]["comps"],
            json!(["main"])
        );
        let mut list = list;
        let touched = del_repo(&mut list, line).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(touched, [(file.clone(), 0)]);
        assert!(del_repo(&mut list, line).is_err());
    }

    #[test]
    fn expanded_definition() {
        let got = expand_repo_def(
            "deb [signed-by=/k.gpg] file:///tmp/r ./",
            &Map::from_iter([("comps".to_owned(), json!("main, extra"))]),
        );
        assert_eq!(
            got["line"],
            json!("deb [signed-by=/k.gpg] file:///tmp/r ./ main extra")
        );
        assert_eq!(got["comps"], json!(["main", "extra"]));
        assert_eq!(got["file"], json!("/etc/apt/sources.list"));
    }
}
