//! `file_tree` (`salt/pillar/file_tree.py`): pillar from a directory tree, where each
//! directory is a key and each file a key whose value is the file's contents.
//!
//! `<root_dir>/hosts/<minion_id>/` gives the minion's data; `<root_dir>/nodegroups/<name>/`
//! gives data to the members of nodegroup `<name>` (the master's `nodegroups`), merged
//! first, the host's data over it (recursively). Options as Salt's: `root_dir` (relative:
//! under each `pillar_roots` directory of the `pillarenv`), `follow_dir_links`,
//! `keep_newline` (a bool, or globs of the paths whose final newline is kept), `template`
//! with `render_default`, `renderer_blacklist` and `renderer_whitelist`, `debug`.
//! Files are read in name order (Salt's `os.walk` order is the filesystem's); a file that
//! cannot be read is an error naming it (Salt logs and skips it).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use saltq_semantics::python::fnmatch;
use saltq_semantics::target::{MinionFacts, Nodegroups, Target, TargetType};
use serde_json::{Map, Value};

use super::{ExtContext, ExtPillar};

/// `keep_newline`: a bool, or the globs of files whose final newline is kept.
#[derive(Debug, Clone, PartialEq)]
pub enum KeepNewline {
    /// `true` keeps every file's final newline; `false` strips it.
    All(bool),
    /// Paths (relative to the host or nodegroup directory) matching one of these keep it.
    Globs(Vec<String>),
}

/// One `file_tree` entry's options.
#[derive(Debug, Clone, PartialEq)]
pub struct FileTree {
    /// `root_dir`.
    pub root_dir: PathBuf,
    /// `follow_dir_links` (default false).
    pub follow_dir_links: bool,
    /// `keep_newline` (default false).
    pub keep_newline: KeepNewline,
    /// `template` (default false): render each file.
    pub template: bool,
    /// `render_default`: the pipeline of files without a shebang (default the `renderer`
    /// option).
    pub render_default: Option<String>,
    /// `renderer_blacklist`.
    pub blacklist: Vec<String>,
    /// `renderer_whitelist` (empty: any).
    pub whitelist: Vec<String>,
}

fn strings(key: &str, v: Option<&Value>) -> Result<Vec<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| Ok(saltq_semantics::python::str(x)))
            .collect(),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(other) => Err(format!("{key}: expected a list of names, got {other}")),
    }
}

/// Reads the entry's options (a mapping of Salt's keyword arguments).
pub fn parse(args: &Value) -> Result<FileTree, String> {
    let Value::Object(m) = args else {
        return Err(format!(
            "expected a mapping of options (root_dir: ...), got {args}"
        ));
    };
    const KNOWN: &[&str] = &[
        "root_dir",
        "follow_dir_links",
        "debug",
        "keep_newline",
        "render_default",
        "renderer_blacklist",
        "renderer_whitelist",
        "template",
    ];
    if let Some(k) = m.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(format!(
            "unknown option '{k}' (expected one of {})",
            KNOWN.join(", ")
        ));
    }
    let root_dir = match m.get("root_dir") {
        Some(Value::String(s)) if !s.is_empty() => PathBuf::from(s),
        _ => return Err("no root_dir specified".into()),
    };
    let flag = |k: &str| match m.get(k) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(format!("{k}: expected true or false, got {other}")),
    };
    let keep_newline = match m.get("keep_newline") {
        None | Some(Value::Null) => KeepNewline::All(false),
        Some(Value::Bool(b)) => KeepNewline::All(*b),
        Some(Value::Array(a)) => {
            KeepNewline::Globs(a.iter().map(saltq_semantics::python::str).collect())
        }
        Some(other) => {
            return Err(format!(
                "keep_newline must be either True/False or a list of file globs, got {other}"
            ));
        }
    };
    flag("debug")?;
    Ok(FileTree {
        root_dir,
        follow_dir_links: flag("follow_dir_links")?,
        keep_newline,
        template: flag("template")?,
        render_default: m
            .get("render_default")
            .and_then(Value::as_str)
            .map(str::to_owned),
        blacklist: strings("renderer_blacklist", m.get("renderer_blacklist"))?,
        whitelist: strings("renderer_whitelist", m.get("renderer_whitelist"))?,
    })
}

/// Builds the source from its entry.
pub fn build(args: &Value, _opts: &Value) -> Result<Arc<dyn ExtPillar>, String> {
    Ok(Arc::new(parse(args)?))
}

impl FileTree {
    /// Whether `prefix/name`'s final newline is stripped (Salt's `_check_newline`).
    fn strip_newline(&self, prefix: &str, name: &str) -> bool {
        match &self.keep_newline {
            KeepNewline::All(keep) => !keep,
            KeepNewline::Globs(globs) => {
                let full = if prefix.is_empty() || prefix == "." {
                    name.to_string()
                } else {
                    format!("{prefix}/{name}")
                };
                !globs.iter().any(|g| fnmatch(&full, g))
            }
        }
    }

    /// The directories to read: `root_dir`, or, when relative, under each of the
    /// `pillarenv`'s `pillar_roots`.
    fn roots(&self, cx: &ExtContext<'_>) -> Result<Vec<PathBuf>, String> {
        if self.root_dir.is_absolute() {
            return Ok(vec![self.root_dir.clone()]);
        }
        let env = cx
            .pillarenv
            .ok_or("root_dir is relative but pillarenv is not set")?;
        let roots = cx
            .opts
            .get("pillar_roots")
            .and_then(|r| r.get(env))
            .and_then(Value::as_array)
            .ok_or_else(|| {
                format!(
                    "root_dir is relative but no pillar_roots are specified for pillarenv {env}"
                )
            })?;
        let mut dirs: Vec<PathBuf> = Vec::new();
        for r in roots.iter().filter_map(Value::as_str) {
            let d = Path::new(r).join(&self.root_dir);
            if dirs.last() != Some(&d) {
                dirs.push(d);
            }
        }
        Ok(dirs)
    }

    /// One directory's tree as data (Salt's `_construct_pillar`).
    fn construct(&self, top: &Path, cx: &ExtContext<'_>) -> Result<Map<String, Value>, String> {
        self.walk(top, "", cx)
    }

    fn walk(
        &self,
        dir: &Path,
        prefix: &str,
        cx: &ExtContext<'_>,
    ) -> Result<Map<String, Value>, String> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(Result::ok)
            .collect();
        entries.sort_by_key(|e| e.file_name());
        let mut node = Map::new();
        let mut files = Vec::new();
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            let is_link = e.file_type().map(|t| t.is_symlink()).unwrap_or(false);
            if path.is_dir() {
                let sub = if is_link && !self.follow_dir_links {
                    Map::new()
                } else {
                    let p = if prefix.is_empty() {
                        name.clone()
                    } else {
                        format!("{prefix}/{name}")
                    };
                    self.walk(&path, &p, cx)?
                };
                node.insert(name, Value::Object(sub));
            } else {
                files.push((name, path));
            }
        }
        for (name, path) in files {
            if !path.is_file() {
                tracing::error!("file_tree: {}: not a regular file", path.display());
                continue;
            }
            let mut bytes = std::fs::read(&path)
                .map_err(|e| format!("error reading {}: {e}", path.display()))?;
            if bytes.ends_with(b"\n") && self.strip_newline(prefix, &name) {
                bytes.pop();
            }
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let value = if self.template {
                self.render(&text, &path, cx)?
            } else {
                Value::String(text)
            };
            node.insert(name, value);
        }
        Ok(node)
    }

    /// A file rendered as Salt's `compile_template_str`, with the black- and whitelist.
    fn render(&self, text: &str, path: &Path, cx: &ExtContext<'_>) -> Result<Value, String> {
        let mut opts = cx.opts.clone();
        if let (Some(d), Value::Object(m)) = (&self.render_default, &mut opts) {
            m.insert("renderer".into(), Value::String(d.clone()));
        }
        let steps =
            crate::render::pipeline(text, &opts).map_err(|e| format!("{}: {e}", path.display()))?;
        for step in steps {
            let name = format!("{step:?}").to_lowercase();
            if self.blacklist.contains(&name)
                || (!self.whitelist.is_empty() && !self.whitelist.contains(&name))
            {
                return Err(format!(
                    "{}: the renderer '{name}' is not allowed (renderer_blacklist/renderer_whitelist)",
                    path.display()
                ));
            }
        }
        let rc = crate::render::RenderContext {
            ctx: saltq_exec::CallContext::local(cx.grains.clone(), cx.opts.clone()),
            grains: cx.grains.clone(),
            pillar: Value::Object(cx.pillar.clone()),
            opts,
            saltenv: cx.pillarenv.unwrap_or("base").to_string(),
            sls: String::new(),
            source: String::new(),
            extra: Map::new(),
        };
        crate::render::render_sls(text, &rc)
            .map_err(|e| format!("{}: {}", path.display(), e.message))
    }

    /// One root's data for the minion (Salt's `_ext_pillar`): nodegroups first, the host's
    /// directory merged over them.
    fn one_root(&self, root: &Path, cx: &ExtContext<'_>) -> Result<Map<String, Value>, String> {
        if !root.is_dir() {
            return Err(format!(
                "root_dir {} does not exist or is not a directory",
                root.display()
            ));
        }
        let mut out = Map::new();
        let groups_dir = root.join("nodegroups");
        let nodegroups: Nodegroups = match cx.opts.get("nodegroups") {
            Some(v @ Value::Object(_)) => {
                serde_json::from_value(v.clone()).map_err(|e| format!("nodegroups: {e}"))?
            }
            _ => Nodegroups::new(),
        };
        if groups_dir.is_dir() && !nodegroups.is_empty() {
            let mut names: Vec<String> = std::fs::read_dir(&groups_dir)
                .map_err(|e| format!("{}: {e}", groups_dir.display()))?
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            let pillar = Value::Object(cx.pillar.clone());
            let facts = MinionFacts {
                id: cx.minion_id,
                grains: Some(cx.grains),
                pillar: Some(&pillar),
            };
            for name in names.iter().filter(|n| nodegroups.contains_key(*n)) {
                let t = Target::compile(name, TargetType::Nodegroup, None, &nodegroups)
                    .map_err(|e| format!("nodegroup {name}: {e}"))?;
                if t.matches(&facts) {
                    let data = self.construct(&groups_dir.join(name), cx)?;
                    saltq_exec::dict_update(&mut out, &data, false);
                }
            }
        }
        let host = root.join("hosts").join(cx.minion_id);
        if host.is_dir() {
            let data = self.construct(&host, cx)?;
            saltq_exec::dict_update(&mut out, &data, false);
        } else if host.exists() {
            return Err(format!("{} exists, but is not a directory", host.display()));
        }
        Ok(out)
    }
}

impl ExtPillar for FileTree {
    fn name(&self) -> &str {
        "file_tree"
    }

    fn compile(&self, cx: &ExtContext<'_>) -> Result<Map<String, Value>, String> {
        let mut out = Map::new();
        for root in self.roots(cx)? {
            let data = self.one_root(&root, cx)?;
            saltq_exec::dict_update(&mut out, &data, false);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn compile(cfg: Value, id: &str, opts: Value) -> Result<Value, String> {
        let src = build(&cfg, &Value::Null)?;
        let grains = json!({"os": "Debian"});
        let pillar = Map::new();
        src.compile(&ExtContext {
            minion_id: id,
            grains: &grains,
            pillar: &pillar,
            pillarenv: Some("base"),
            opts: &opts,
        })
        .map(Value::Object)
    }

    #[test]
    fn hosts_and_nodegroups_layout_with_salts_newline_rules() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        write(r, "hosts/web1/apache/port", "80\n");
        write(r, "hosts/web1/apache/conf.d/site", "<VirtualHost>\n");
        write(r, "hosts/web1/motd", "hello\n\n");
        std::fs::create_dir_all(r.join("hosts/web1/empty")).unwrap();
        write(r, "hosts/db1/role", "db");
        write(r, "nodegroups/webs/role", "web\n");
        write(r, "nodegroups/webs/apache/port", "8080");
        write(r, "nodegroups/dbs/role", "db\n");
        let opts = json!({"nodegroups": {"webs": "web*", "dbs": "L@db1"}});
        let cfg = json!({"root_dir": r.display().to_string(), "keep_newline": ["apache/conf.d/*"]});
        let got = compile(cfg, "web1", opts.clone()).unwrap();
        assert_eq!(
            got,
            json!({
                "role": "web",
                "apache": {"port": "80", "conf.d": {"site": "<VirtualHost>\n"}},
                "empty": {},
                "motd": "hello\n",
            })
        );
        let got = compile(
            json!({"root_dir": r.display().to_string(), "keep_newline": true}),
            "db1",
            opts,
        )
        .unwrap();
        assert_eq!(got, json!({"role": "db"}));
        assert_eq!(
            compile(
                json!({"root_dir": r.display().to_string()}),
                "nobody",
                json!({})
            )
            .unwrap(),
            json!({})
        );
    }

    #[test]
    fn templates_render_with_the_pipeline_and_the_lists() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        write(r, "hosts/m/conf", "port: {{ 40 + 2 }}\n");
        let root = r.display().to_string();
        let got = compile(json!({"root_dir": root, "template": true}), "m", json!({})).unwrap();
        assert_eq!(got, json!({"conf": {"port": 42}}));
        let got = compile(
            json!({"root_dir": root, "template": true, "render_default": "jinja"}),
            "m",
            json!({}),
        )
        .unwrap();
        assert_eq!(got, json!({"conf": "port: 42"}));
        let err = compile(
            json!({"root_dir": root, "template": true, "renderer_blacklist": ["jinja"]}),
            "m",
            json!({}),
        )
        .unwrap_err();
        assert!(err.contains("the renderer 'jinja' is not allowed"), "{err}");
    }

    #[test]
    fn relative_root_dir_is_under_the_pillarenvs_roots_and_bad_options_are_named() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "tree/hosts/m/k", "v");
        let opts = json!({"pillar_roots": {"base": [d.path().display().to_string()]}});
        assert_eq!(
            compile(json!({"root_dir": "tree"}), "m", opts).unwrap(),
            json!({"k": "v"})
        );
        assert!(
            compile(json!({"root_dir": "/nonexistent/x"}), "m", json!({}))
                .unwrap_err()
                .contains("does not exist")
        );
        assert_eq!(parse(&json!({})).unwrap_err(), "no root_dir specified");
        assert!(
            parse(&json!({"root_dir": "/x", "keep_newline": "yes"}))
                .unwrap_err()
                .contains("keep_newline")
        );
        assert!(
            parse(&json!({"root_dir": "/x", "rootdir": 1}))
                .unwrap_err()
                .contains("unknown option 'rootdir'")
        );
    }
}
