//! dnf/yum repositories as Salt's `yumpkg` sees them: the INI `.repo` files of the
//! repository directories (`basedir`, else the `reposdir` of the yum/dnf config, else
//! `/etc/yum/repos.d` and `/etc/yum.repos.d`), read as Python's `configparser` reads them
//! (option names lowercased, continuation lines, `#`/`;` comment lines) and written back as
//! Salt's `mod_repo`/`del_repo` write them, header and per-repository comments included.
//! Pure over paths, so the tests work on a temporary tree.

use std::path::Path;

use serde_json::{Map, Value, json};

use saltq_semantics::python;

use crate::error::ExecError;

/// The yum/dnf config files Salt looks for, first found wins (`_get_yum_config`).
const CONFIGS: [&str; 4] = [
    "/etc/yum/yum.conf",
    "/etc/yum.conf",
    "/etc/dnf/dnf.conf",
    "/etc/tdnf/tdnf.conf",
];

/// The repository directories when the config names none.
const DEFAULT_REPOSDIRS: [&str; 2] = ["/etc/yum/repos.d", "/etc/yum.repos.d"];

/// One `.repo` file: the comment lines before its first section and its sections.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RepoFile {
    /// `#` lines before the first section, each with its newline.
    pub header: String,
    /// Section name to `{option: value}` (values as text; `comments`: the section's `#`
    /// lines, without the `#`).
    pub repos: Map<String, Value>,
}

/// A section's options while reading: each value's lines, joined at the end.
type Options = Vec<(String, Vec<String>)>;

/// Python's `{:2d}`.
fn lineno(n: usize) -> String {
    format!("{n:>2}")
}

/// `configparser.ConfigParser(strict=strict).read_string(text)`: the sections (`DEFAULT`
/// left out) with their options, or `Ok(None)` for a file whose first entry is not a section
/// header (Salt's `MissingSectionHeaderError`, which it answers as an empty file).
pub fn parse_ini(
    text: &str,
    source: &str,
    strict: bool,
) -> Result<Option<Map<String, Value>>, String> {
    let mut sections: Vec<(String, Options)> = Vec::new();
    let mut cur: Option<usize> = None; // index in `sections`; `usize::MAX` for DEFAULT
    let mut defaults: Options = Vec::new();
    let mut optname: Option<String> = None;
    let mut indent_level = 0usize;
    let mut errors: Vec<String> = Vec::new();
    let mut seen_options: Vec<(String, String)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let no = i + 1;
        let value = line.trim();
        let is_comment = value.starts_with('#') || value.starts_with(';');
        if value.is_empty() || is_comment {
            if value.is_empty()
                && let (Some(c), Some(opt)) = (cur, &optname)
            {
                let opts = if c == usize::MAX {
                    &mut defaults
                } else {
                    &mut sections[c].1
                };
                if let Some((_, v)) = opts.iter_mut().find(|(k, _)| k == opt) {
                    v.push(String::new());
                }
            }
            continue;
        }
        let cur_indent = line.len() - line.trim_start().len();
        if let (Some(c), Some(opt)) = (cur, &optname)
            && cur_indent > indent_level
        {
            let opts = if c == usize::MAX {
                &mut defaults
            } else {
                &mut sections[c].1
            };
            if let Some((_, v)) = opts.iter_mut().find(|(k, _)| k == opt) {
                v.push(value.to_owned());
            }
            continue;
        }
        indent_level = cur_indent;
        if let Some(rest) = value.strip_prefix('[')
            && let Some(end) = rest.rfind(']')
            && end > 0
        {
            let name = &rest[..end];
            optname = None;
            if let Some(idx) = sections.iter().position(|(n, _)| n == name) {
                if strict {
                    return Err(format!(
                        "While reading from '{source}' [line {}]: section '{name}' already exists",
                        lineno(no)
                    ));
                }
                cur = Some(idx);
            } else if name == "DEFAULT" {
                cur = Some(usize::MAX);
            } else {
                sections.push((name.to_owned(), Vec::new()));
                cur = Some(sections.len() - 1);
            }
            continue;
        }
        let Some(c) = cur else {
            return Ok(None);
        };
        let split = value.find(['=', ':']);
        let Some(at) = split.filter(|at| !value[..*at].trim().is_empty()) else {
            errors.push(format!(
                "\n\t[line {}]: {}",
                lineno(no),
                python::str_repr(line)
            ));
            continue;
        };
        let name = value[..at].trim_end().to_lowercase();
        let val = value[at + 1..].trim().to_owned();
        let section = if c == usize::MAX {
            "DEFAULT".to_owned()
        } else {
            sections[c].0.clone()
        };
        if strict && seen_options.contains(&(section.clone(), name.clone())) {
            return Err(format!(
                "While reading from '{source}' [line {}]: option '{name}' in section '{section}' already exists",
                lineno(no)
            ));
        }
        seen_options.push((section, name.clone()));
        let opts = if c == usize::MAX {
            &mut defaults
        } else {
            &mut sections[c].1
        };
        match opts.iter_mut().find(|(k, _)| *k == name) {
            Some((_, v)) => *v = vec![val],
            None => opts.push((name.clone(), vec![val])),
        }
        optname = Some(name);
    }
    if !errors.is_empty() {
        return Err(format!(
            "Source contains parsing errors: '{source}'{}",
            errors.concat()
        ));
    }
    Ok(Some(
        sections
            .into_iter()
            .map(|(name, opts)| {
                let opts: Map<String, Value> = opts
                    .into_iter()
                    .map(|(k, v)| (k, json!(v.join("\n").trim_end())))
                    .collect();
                (name, Value::Object(opts))
            })
            .collect(),
    ))
}

/// Salt's `_parse_repo_file`: the file's sections, plus its header comments and each
/// section's comments. A file that cannot be read is an empty one, as configparser has it.
pub fn parse_repo_file(path: &Path, strict: bool) -> Result<RepoFile, ExecError> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let source = path.display().to_string();
    let Some(mut repos) = parse_ini(&text, &source, strict).map_err(ExecError::execution)? else {
        return Ok(RepoFile::default());
    };
    let mut header = String::new();
    let mut section: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(comment) = line.strip_prefix('#') {
            match &section {
                None => {
                    header.push_str(line);
                    header.push('\n');
                }
                Some(s) => {
                    if let Some(Value::Object(opts)) = repos.get_mut(s)
                        && let Value::Array(list) = opts
                            .entry("comments")
                            .or_insert_with(|| Value::Array(Vec::new()))
                    {
                        list.push(json!(comment.trim_start()));
                    }
                }
            }
        } else if line.starts_with('[') && line.ends_with(']') && line.len() >= 2 {
            section = Some(line[1..line.len() - 1].to_owned());
        }
    }
    Ok(RepoFile { header, repos })
}

/// Salt's `salt.utils.pkg.rpm.combine_comments`: each comment as a `# ` line.
pub fn combine_comments(comments: &Value) -> String {
    let list = match comments {
        Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
    list.iter()
        .map(|c| {
            let c = python::str(c);
            format!("# {}\n", c.trim_start_matches('#').trim_start())
        })
        .collect()
}

/// `root`-relative path of one of Salt's absolute paths.
fn under(root: &Path, abs: &str) -> std::path::PathBuf {
    root.join(abs.trim_start_matches('/'))
}

/// Salt's `_get_yum_config_value("reposdir")`: the `reposdir` of the first yum/dnf config
/// found under `root` (comma-separated), the defaults when it names none.
pub fn reposdir(root: &Path) -> Result<Vec<String>, ExecError> {
    let Some(path) = CONFIGS.iter().map(|c| under(root, c)).find(|p| p.exists()) else {
        let tried: Vec<Value> = CONFIGS
            .iter()
            .map(|c| json!(under(root, c).display().to_string()))
            .collect();
        let tuple = python::repr(&Value::Array(tried));
        return Err(ExecError::execution(format!(
            "No suitable yum config file found in: ({})",
            &tuple[1..tuple.len() - 1]
        )));
    };
    let source = path.display().to_string();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| ExecError::execution(format!("Unable to read from {source}: {e}")))?;
    let sections = parse_ini(&text, &source, true)
        .map_err(ExecError::execution)?
        .unwrap_or_default();
    Ok(
        match sections
            .get("main")
            .and_then(|m| m.get("reposdir"))
            .map(python::str)
        {
            Some(dirs) => dirs.split(',').map(|d| d.trim().to_owned()).collect(),
            None => DEFAULT_REPOSDIRS.iter().map(|d| (*d).to_owned()).collect(),
        },
    )
}

/// Salt's `_normalize_basedir`: `basedir` (comma-separated text or a list), else the
/// config's repository directories.
pub fn normalize_basedir(basedir: Option<&Value>, root: &Path) -> Result<Vec<String>, ExecError> {
    let dirs: Vec<String> = match basedir {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => s.split(',').map(|d| d.trim().to_owned()).collect(),
        Some(Value::Array(a)) => a.iter().map(python::str).collect(),
        Some(other) if !python::truthy(other) => Vec::new(),
        Some(_) => {
            return Err(ExecError::invocation(
                "Could not determine any repo directories",
            ));
        }
    };
    let dirs = if dirs.is_empty() {
        reposdir(root)?
    } else {
        dirs
    };
    if dirs.is_empty() {
        return Err(ExecError::invocation(
            "Could not determine any repo directories",
        ));
    }
    Ok(dirs)
}

/// Salt's `list_repos`: every repository of the `.repo` files in `basedirs` with its
/// `file`, a later directory's repository replacing an earlier one of the same id. Files
/// are read in name order (Salt takes the directory's order).
pub fn list_repos(basedirs: &[String], strict: bool) -> Result<Map<String, Value>, ExecError> {
    let mut out = Map::new();
    for dir in basedirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".repo"))
            .collect();
        names.sort();
        for name in names {
            let path = format!("{dir}/{name}");
            let file = parse_repo_file(Path::new(&path), strict)?;
            for (id, repo) in file.repos {
                let mut repo = repo.as_object().cloned().unwrap_or_default();
                repo.insert("file".into(), json!(path));
                out.insert(id, Value::Object(repo));
            }
        }
    }
    Ok(out)
}

/// Salt's `get_repo`: the repository's options (without `file`), `{}` when none has the id.
pub fn get_repo(basedirs: &[String], repo: &str, strict: bool) -> Result<Value, ExecError> {
    let repos = list_repos(basedirs, strict)?;
    let Some(file) = repos.get(repo).and_then(|r| r.get("file")).map(python::str) else {
        return Ok(json!({}));
    };
    let parsed = parse_repo_file(Path::new(&file), strict)?;
    Ok(parsed.repos.get(repo).cloned().unwrap_or_else(|| json!({})))
}

/// A value as Salt writes it into a `.repo` file: booleans as `1`/`0`, continuation lines
/// indented.
fn ini_value(v: &Value) -> String {
    match v {
        Value::Bool(b) => if *b { "1" } else { "0" }.to_owned(),
        Value::String(s) => s.replace('\n', "\n "),
        other => python::str(other),
    }
}

/// Salt's `del_repo`: the repository's section removed from its file, the file deleted when
/// it held only that one. Salt answers a missing repository with an `Error: ...` text, not
/// an error.
pub fn del_repo(basedirs: &[String], repo: &str, strict: bool) -> Result<String, ExecError> {
    let repos = list_repos(basedirs, strict)?;
    let Some(file) = repos.get(repo).and_then(|r| r.get("file")).map(python::str) else {
        let dirs: Vec<Value> = basedirs.iter().map(|d| json!(d)).collect();
        return Ok(format!(
            "Error: the {repo} repo does not exist in {}",
            python::repr(&Value::Array(dirs))
        ));
    };
    let only = !repos
        .iter()
        .any(|(id, r)| id != repo && r.get("file").map(python::str).as_deref() == Some(&file));
    if only {
        std::fs::remove_file(&file)
            .map_err(|e| ExecError::execution(format!("removing {file}: {e}")))?;
        return Ok(format!(
            "File {file} containing repo {repo} has been removed"
        ));
    }
    let parsed = parse_repo_file(Path::new(&file), strict)?;
    let mut content = parsed.header;
    for (id, opts) in &parsed.repos {
        if id == repo {
            continue;
        }
        let mut opts = opts.as_object().cloned().unwrap_or_default();
        let comments = opts
            .shift_remove("comments")
            .map(|c| combine_comments(&c))
            .unwrap_or_default();
        content.push_str(&format!("\n[{id}]"));
        for (k, v) in &opts {
            let v = match v {
                Value::String(s) => s.replace('\n', "\n "),
                other => python::str(other),
            };
            content.push_str(&format!("\n{k}={v}"));
        }
        content.push_str(&format!("\n{comments}\n"));
    }
    std::fs::write(&file, content).map_err(|e| ExecError::execution(format!("{file}: {e}")))?;
    Ok(format!("Repo {repo} has been removed from {file}"))
}

/// Salt's `mod_repo`: sets the options `opts` of the repository (a blank value deletes the
/// option; `baseurl` and `mirrorlist` replace each other), creating it in
/// `<first existing basedir>/<repo>.repo` when no file has it. Answers `{file: {repo id:
/// options}}` for every repository of the file written.
pub fn mod_repo(
    basedirs: &[String],
    repo: &str,
    opts: &Map<String, Value>,
    strict: bool,
) -> Result<Value, ExecError> {
    let mut opts = opts.clone();
    if opts.contains_key("mirrorlist") && opts.contains_key("baseurl") {
        return Err(ExecError::invocation(
            "Only one of 'mirrorlist' and 'baseurl' can be specified",
        ));
    }
    // Python's `value != 0 and not value`: blanks go, False and 0 stay.
    let blank = |v: &Value| match v {
        Value::Bool(_) | Value::Number(_) => false,
        other => !python::truthy(other),
    };
    let mut todelete: Vec<String> = Vec::new();
    opts.retain(|k, v| {
        if blank(v) {
            todelete.push(k.clone());
            false
        } else {
            true
        }
    });
    if opts.contains_key("mirrorlist") {
        todelete.push("baseurl".into());
    } else if opts.contains_key("baseurl") {
        todelete.push("mirrorlist".into());
    }
    if todelete.iter().any(|k| k == "name") {
        return Err(ExecError::invocation("The repo name cannot be deleted"));
    }
    let repos = list_repos(basedirs, strict)?;
    let (repofile, header, mut filerepos) = match repos
        .get(repo)
        .and_then(|r| r.get("file"))
        .map(python::str)
    {
        Some(file) => {
            let parsed = parse_repo_file(Path::new(&file), strict)?;
            (file, parsed.header, parsed.repos)
        }
        None => {
            let Some(dir) = basedirs.iter().find(|d| Path::new(d).exists()) else {
                let dirs: Vec<Value> = basedirs.iter().map(|d| json!(d)).collect();
                return Err(ExecError::invocation(format!(
                    "The repo does not exist and needs to be created, but none of the following basedir directories exist: {}",
                    python::repr(&Value::Array(dirs))
                )));
            };
            if !opts.contains_key("name") {
                return Err(ExecError::invocation(
                    "The repo does not exist and needs to be created, but a name was not given",
                ));
            }
            if !opts.contains_key("baseurl") && !opts.contains_key("mirrorlist") {
                return Err(ExecError::invocation(
                    "The repo does not exist and needs to be created, but either a baseurl or a mirrorlist needs to be given",
                ));
            }
            let mut m = Map::new();
            m.insert(repo.to_owned(), json!({}));
            (format!("{dir}/{repo}.repo"), String::new(), m)
        }
    };
    let has = |m: &Map<String, Value>, k: &str| {
        m.get(repo)
            .and_then(Value::as_object)
            .is_some_and(|r| r.contains_key(k))
    };
    if todelete.iter().any(|k| k == "baseurl")
        && !opts.contains_key("mirrorlist")
        && !has(&filerepos, "mirrorlist")
    {
        return Err(ExecError::invocation(
            "Cannot delete baseurl without specifying mirrorlist",
        ));
    }
    if todelete.iter().any(|k| k == "mirrorlist")
        && !opts.contains_key("baseurl")
        && !has(&filerepos, "baseurl")
    {
        return Err(ExecError::invocation(
            "Cannot delete mirrorlist without specifying baseurl",
        ));
    }
    if let Some(Value::Object(r)) = filerepos.get_mut(repo) {
        for k in &todelete {
            r.shift_remove(k);
        }
        for (k, v) in opts {
            r.insert(k, v);
        }
    }
    let mut content = header;
    for (id, r) in filerepos.iter_mut() {
        let Value::Object(r) = r else { continue };
        let comments = r
            .shift_remove("comments")
            .map(|c| combine_comments(&c))
            .unwrap_or_default();
        content.push_str(&format!("[{id}]\n"));
        for (k, v) in r.iter() {
            content.push_str(&format!("{k}={}\n", ini_value(v)));
        }
        content.push_str(&comments);
        content.push('\n');
    }
    std::fs::write(&repofile, content)
        .map_err(|e| ExecError::execution(format!("{repofile}: {e}")))?;
    Ok(json!({ repofile: filerepos }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
        r.unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn ini_as_configparser_reads_it() {
        let text = "# head\n[a]\nName = A\nBaseURL: http://x/\n  http://y/\n\n  http://z/\n; c\n[DEFAULT]\nk=v\n[b]\nx=1\n";
        let got = ok(parse_ini(text, "f", true)).unwrap_or_default();
        assert_eq!(
            Value::Object(got),
            json!({"a": {"name": "A", "baseurl": "http://x/\nhttp://y/\n\nhttp://z/"}, "b": {"x": "1"}})
        );
        assert_eq!(ok(parse_ini("x=1\n[a]\n", "f", true)), None);
        assert_eq!(
            parse_ini("[a]\nx=1\n[a]\n", "f", true),
            Err("While reading from 'f' [line  3]: section 'a' already exists".into())
        );
        assert_eq!(
            parse_ini("[a]\nx=1\nX=2\n", "f", true),
            Err(
                "While reading from 'f' [line  3]: option 'x' in section 'a' already exists".into()
            )
        );
        assert_eq!(
            ok(parse_ini("[a]\nx=1\nx=2\n", "f", false)).unwrap_or_default()["a"],
            json!({"x": "2"})
        );
        assert_eq!(
            parse_ini("[a]\nnovalue\n", "f", true),
            Err("Source contains parsing errors: 'f'\n\t[line  2]: 'novalue'".into())
        );
    }

    #[test]
    fn comments_combined_as_salt() {
        // Python's `c.lstrip("#").lstrip()`: a `#` after spaces stays.
        assert_eq!(
            combine_comments(&json!(["one", "#two", "  # three"])),
            "# one\n# two\n# # three\n"
        );
        assert_eq!(combine_comments(&json!("solo")), "# solo\n");
    }

    #[test]
    fn basedir_and_config() {
        let tmp = ok(tempfile::tempdir());
        let root = tmp.path();
        let err = ok(normalize_basedir(None, root)
            .map(|_| ())
            .err()
            .ok_or("no error"));
        assert!(
            err.to_string()
                .contains("No suitable yum config file found in: ("),
            "{err}"
        );
        assert_eq!(
            ok(normalize_basedir(Some(&json!("/a, /b")), root)),
            ["/a", "/b"]
        );
        ok(std::fs::create_dir_all(root.join("etc/dnf")));
        ok(std::fs::write(
            root.join("etc/dnf/dnf.conf"),
            "[main]\ngpgcheck=1\n",
        ));
        assert_eq!(
            ok(normalize_basedir(None, root)),
            ["/etc/yum/repos.d", "/etc/yum.repos.d"]
        );
        ok(std::fs::write(
            root.join("etc/dnf/dnf.conf"),
            "[main]\nreposdir=/r1,/r2\n",
        ));
        assert_eq!(
            ok(normalize_basedir(Some(&json!([])), root)),
            ["/r1", "/r2"]
        );
    }

    #[test]
    fn create_change_and_delete() {
        let tmp = ok(tempfile::tempdir());
        let dir = tmp.path().display().to_string();
        let dirs = vec![dir.clone()];
        let opts = |v: Value| v.as_object().cloned().unwrap_or_default();
        let err = mod_repo(&dirs, "r", &opts(json!({"baseurl": "http://x/"})), true);
        assert!(err.is_err_and(|e| e.to_string().contains("a name was not given")));
        let got = ok(mod_repo(
            &dirs,
            "r",
            &opts(json!({"name": "R", "baseurl": "http://x/", "enabled": true, "comments": ["n"]})),
            true,
        ));
        let file = format!("{dir}/r.repo");
        assert_eq!(
            got,
            json!({ &file: {"r": {"name": "R", "baseurl": "http://x/", "enabled": true}} })
        );
        assert_eq!(
            ok(std::fs::read_to_string(&file)),
            "[r]\nname=R\nbaseurl=http://x/\nenabled=1\n# n\n\n"
        );
        ok(mod_repo(
            &dirs,
            "r",
            &opts(json!({"mirrorlist": "http://m/", "enabled": ""})),
            true,
        ));
        assert_eq!(
            ok(get_repo(&dirs, "r", true)),
            json!({"name": "R", "mirrorlist": "http://m/", "comments": ["n"]})
        );
        assert_eq!(
            ok(del_repo(&dirs, "r", true)),
            format!("File {file} containing repo r has been removed")
        );
        assert_eq!(
            ok(del_repo(&dirs, "r", true)),
            format!("Error: the r repo does not exist in ['{dir}']")
        );
    }
}
