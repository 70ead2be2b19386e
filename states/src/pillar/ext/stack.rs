//! `stack` (PillarStack, `salt/pillar/stack.py`): configuration files list YAML files (globs,
//! relative to the configuration file's directory); each configuration and each YAML file is
//! rendered with Jinja, seeing `stack` (the data merged so far), `pillar`, `minion_id`,
//! `pillarenv`, `__opts__`, `__grains__`, `__salt__` and `__stack__` (`cfg_path`), and
//! each result is merged into the stack with PillarStack's strategies, chosen by a `__` key
//! in a mapping or a `{__: strategy}` first item in a list: `merge-last` (default),
//! `merge-first`, `remove`, `overwrite`.
//!
//! The entry is a configuration file, a list of them, or a mapping `pillar:KEY`,
//! `grains:KEY` or `opts:KEY` to `{value: file or [files]}` choosing files by that value
//! (`__env__` is the pillarenv). A missing configuration file is skipped, as Salt's. Jinja
//! `include`/`import` inside stack files are not supported (they would read `salt://`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use saltq_semantics::python::{self, fnmatch};
use serde_json::{Map, Value};

use super::{ExtContext, ExtPillar};

const STRATEGIES: &[&str] = &["overwrite", "merge-first", "merge-last", "remove"];

/// One `stack` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Stack {
    /// Configuration files always read (Salt's positional arguments).
    files: Vec<String>,
    /// `(traverse kind, key path, {value: files})` (Salt's keyword arguments), in order.
    matchers: Vec<(String, String, Map<String, Value>)>,
}

/// Reads the entry.
pub fn parse(args: &Value) -> Result<Stack, String> {
    let mut s = Stack {
        files: Vec::new(),
        matchers: Vec::new(),
    };
    match args {
        Value::String(f) => s.files.push(f.clone()),
        Value::Array(a) => {
            for f in a {
                match f {
                    Value::String(f) => s.files.push(f.clone()),
                    other => return Err(format!("expected configuration file paths, got {other}")),
                }
            }
        }
        Value::Object(m) => {
            for (k, v) in m {
                let (kind, key) = k
                    .split_once(':')
                    .ok_or_else(|| format!("'{k}': expected pillar:KEY, grains:KEY or opts:KEY"))?;
                if !["pillar", "grains", "opts"].contains(&kind) {
                    return Err(format!(
                        "Unknown traverse option \"{kind}\", should be one of pillar, grains, opts"
                    ));
                }
                let Value::Object(choices) = v else {
                    return Err(format!(
                        "'{k}': expected a mapping of values to configuration files"
                    ));
                };
                s.matchers
                    .push((kind.to_string(), key.to_string(), choices.clone()));
            }
        }
        other => {
            return Err(format!(
                "expected a configuration file, a list or a mapping, got {other}"
            ));
        }
    }
    Ok(s)
}

/// Builds the source from its entry.
pub fn build(args: &Value, _opts: &Value) -> Result<Arc<dyn ExtPillar>, String> {
    Ok(Arc::new(parse(args)?))
}

/// Salt's `traverse_dict_and_list` with `:`: `None` when the path is not there.
fn traverse<'a>(data: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = data;
    for part in path.split(':') {
        cur = match cur {
            Value::Object(m) => m.get(part)?,
            Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Python's `glob.glob(pattern)` for a pattern under `base`, sorted: each path component
/// matched with `fnmatch`, hidden names only when the component starts with `.`.
pub fn glob(base: &Path, pattern: &str) -> Vec<PathBuf> {
    let magic = |s: &str| s.contains(['*', '?', '[']);
    let mut current = vec![if pattern.starts_with('/') {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    }];
    for part in pattern.split('/').filter(|p| !p.is_empty()) {
        let mut next = Vec::new();
        for dir in &current {
            if !magic(part) {
                let p = dir.join(part);
                if p.exists() {
                    next.push(p);
                }
                continue;
            }
            let Ok(rd) = std::fs::read_dir(dir) else {
                continue;
            };
            for e in rd.filter_map(Result::ok) {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') && !part.starts_with('.') {
                    continue;
                }
                if fnmatch(&name, part) {
                    next.push(dir.join(name));
                }
            }
        }
        current = next;
    }
    current.sort();
    current
}

/// Salt's `_cleanup`: drops the `__` strategy keys from a value newly put in the stack.
fn cleanup(v: Value) -> Value {
    match v {
        Value::Object(mut m) => {
            m.shift_remove("__");
            Value::Object(m.into_iter().map(|(k, v)| (k, cleanup(v))).collect())
        }
        Value::Array(mut a) => {
            if a.first()
                .and_then(|f| f.as_object())
                .is_some_and(|f| f.contains_key("__"))
            {
                a.remove(0);
            }
            Value::Array(a)
        }
        other => other,
    }
}

fn strategy(v: Option<Value>) -> Result<String, String> {
    let s = match v {
        None => return Ok("merge-last".into()),
        Some(Value::String(s)) => s,
        Some(other) => python::str(&other),
    };
    if STRATEGIES.contains(&s.as_str()) {
        Ok(s)
    } else {
        Err(format!(
            "Unknown strategy \"{s}\", should be one of ('overwrite', 'merge-first', 'merge-last', 'remove')"
        ))
    }
}

/// Merges `obj` into `stack` with the strategy its `__` key names (Salt's `_merge_dict`).
pub fn merge_dict(
    mut stack: Map<String, Value>,
    mut obj: Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let strategy = strategy(obj.shift_remove("__"))?;
    if strategy == "overwrite" {
        return match cleanup(Value::Object(obj)) {
            Value::Object(m) => Ok(m),
            _ => unreachable!("cleanup keeps a mapping a mapping"),
        };
    }
    for (k, mut v) in obj {
        if strategy == "remove" {
            stack.shift_remove(&k);
            continue;
        }
        let Some(mut cur) = stack.get_mut(&k).map(std::mem::take) else {
            stack.insert(k, cleanup(v));
            continue;
        };
        if strategy == "merge-first" {
            std::mem::swap(&mut cur, &mut v);
            cur = cleanup(cur);
        }
        let merged = if python::type_name(&cur) != python::type_name(&v) {
            cleanup(v)
        } else {
            match (cur, v) {
                (Value::Object(c), Value::Object(v)) => Value::Object(merge_dict(c, v)?),
                (Value::Array(c), Value::Array(v)) => Value::Array(merge_list(c, v)?),
                (_, v) => v,
            }
        };
        stack.insert(k, merged);
    }
    Ok(stack)
}

/// Merges list `obj` into `stack` (Salt's `_merge_list`).
pub fn merge_list(stack: Vec<Value>, mut obj: Vec<Value>) -> Result<Vec<Value>, String> {
    let mut s = None;
    if let Some(Value::Object(first)) = obj.first()
        && let Some(v) = first.get("__")
    {
        s = Some(v.clone());
        obj.remove(0);
    }
    Ok(match strategy(s)?.as_str() {
        "overwrite" => obj,
        "remove" => stack.into_iter().filter(|i| !obj.contains(i)).collect(),
        "merge-first" => obj.into_iter().chain(stack).collect(),
        _ => stack.into_iter().chain(obj).collect(),
    })
}

/// Salt's `_parse_stack_cfg`: a YAML list, else the lines.
fn stack_cfg_items(text: &str) -> Vec<String> {
    if let Ok(Value::Array(items)) = crate::render::load_yaml(text) {
        return items.iter().map(python::str).collect();
    }
    text.lines().map(str::to_owned).collect()
}

impl Stack {
    fn config_files(&self, cx: &ExtContext<'_>) -> Vec<String> {
        let env = cx
            .pillarenv
            .or_else(|| cx.opts.get("saltenv").and_then(Value::as_str))
            .unwrap_or("base");
        let mut files = self.files.clone();
        let pillar = Value::Object(cx.pillar.clone());
        for (kind, key, choices) in &self.matchers {
            let data = match kind.as_str() {
                "pillar" => &pillar,
                "grains" => cx.grains,
                _ => cx.opts,
            };
            let value = traverse(data, key).map(|v| match v {
                Value::String(s) => s.clone(),
                other => python::str(other),
            });
            let chosen = value.and_then(|v| {
                choices.get(&v).or_else(|| {
                    if v == env {
                        choices.get("__env__")
                    } else {
                        None
                    }
                })
            });
            match chosen {
                Some(Value::Array(a)) => files.extend(a.iter().map(python::str)),
                Some(Value::String(s)) => files.push(s.clone()),
                _ => {}
            }
        }
        files
            .into_iter()
            .map(|f| f.replace("__env__", env))
            .collect()
    }

    fn render(
        &self,
        text: &str,
        path: &Path,
        cfg: &Path,
        stack: &Map<String, Value>,
        cx: &ExtContext<'_>,
    ) -> Result<String, String> {
        let mut extra = Map::new();
        extra.insert("stack".into(), Value::Object(stack.clone()));
        extra.insert("minion_id".into(), Value::String(cx.minion_id.into()));
        extra.insert(
            "pillarenv".into(),
            cx.pillarenv
                .map_or(Value::Null, |p| Value::String(p.into())),
        );
        extra.insert("__opts__".into(), cx.opts.clone());
        extra.insert("__grains__".into(), cx.grains.clone());
        extra.insert(
            "__stack__".into(),
            serde_json::json!({"cfg_path": cfg.display().to_string()}),
        );
        extra.insert("ymlpath".into(), Value::String(path.display().to_string()));
        let rc = crate::render::RenderContext {
            ctx: saltq_exec::CallContext::local(cx.grains.clone(), cx.opts.clone()),
            grains: cx.grains.clone(),
            pillar: Value::Object(cx.pillar.clone()),
            opts: cx.opts.clone(),
            saltenv: cx.pillarenv.unwrap_or("base").to_string(),
            sls: String::new(),
            source: String::new(),
            extra,
        };
        // `__salt__[...]` is the render's `salt[...]`.
        crate::render::render_template(&text.replace("__salt__", "salt"), "jinja", &rc)
            .map_err(|e| e.message)
    }

    fn process_cfg(
        &self,
        cfg: &Path,
        mut stack: Map<String, Value>,
        cx: &ExtContext<'_>,
    ) -> Result<Map<String, Value>, String> {
        let base = cfg.parent().unwrap_or(Path::new("/"));
        let text = std::fs::read_to_string(cfg).map_err(|e| format!("{}: {e}", cfg.display()))?;
        let listing = self.render(&text, cfg, cfg, &stack, cx).map_err(|e| {
            format!(
                "Stack pillar template render error in {}:\n\"{e}\"",
                cfg.display()
            )
        })?;
        for item in stack_cfg_items(&listing) {
            if item.trim().is_empty() {
                continue;
            }
            let paths = glob(base, &item);
            if paths.is_empty() {
                tracing::info!(
                    "Ignoring pillar stack template \"{item}\": can't find from root dir \"{}\"",
                    base.display()
                );
            }
            for path in paths {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let yaml = self.render(&text, &path, cfg, &stack, cx).map_err(|e| {
                    format!(
                        "Stack pillar template render error in {}:\n\"{e}\"",
                        path.display()
                    )
                })?;
                let obj = crate::render::load_yaml(&yaml).map_err(|e| {
                    format!(
                        "Stack pillar yaml parsing error in {}:\n{}",
                        path.display(),
                        e.message
                    )
                })?;
                if let Value::Object(obj) = obj {
                    stack = merge_dict(stack, obj)?;
                }
            }
        }
        Ok(stack)
    }
}

impl ExtPillar for Stack {
    fn name(&self) -> &str {
        "stack"
    }

    fn compile(&self, cx: &ExtContext<'_>) -> Result<Map<String, Value>, String> {
        let mut stack = Map::new();
        for cfg in self.config_files(cx) {
            let path = PathBuf::from(&cfg);
            if !path.is_file() {
                tracing::info!("Ignoring pillar stack cfg \"{cfg}\": file does not exist");
                continue;
            }
            stack = self.process_cfg(&path, stack, cx)?;
        }
        Ok(stack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn merge_strategies_as_pillarstack() {
        let stack = m(json!({"a": {"x": 1, "y": 2}, "l": [1, 2], "s": "old", "gone": 1}));
        let got = merge_dict(
            stack.clone(),
            m(json!({"a": {"y": 3, "z": 4}, "l": [3], "s": 5})),
        )
        .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"a": {"x": 1, "y": 3, "z": 4}, "l": [1, 2, 3], "s": 5, "gone": 1})
        );
        let got = merge_dict(
            stack.clone(),
            m(json!({"a": {"__": "merge-first", "y": 3, "z": 4}})),
        )
        .unwrap();
        assert_eq!(got["a"], json!({"x": 1, "y": 2, "z": 4}));
        let got = merge_dict(
            stack.clone(),
            m(json!({"__": "remove", "gone": null, "s": null})),
        )
        .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"a": {"x": 1, "y": 2}, "l": [1, 2]})
        );
        let got = merge_dict(
            stack.clone(),
            m(json!({"__": "overwrite", "new": {"__": "remove", "k": 1}})),
        )
        .unwrap();
        assert_eq!(Value::Object(got), json!({"new": {"k": 1}}));
        let got = merge_dict(stack.clone(), m(json!({"l": [{"__": "merge-first"}, 0]}))).unwrap();
        assert_eq!(got["l"], json!([0, 1, 2]));
        let got = merge_dict(stack.clone(), m(json!({"l": [{"__": "remove"}, 1]}))).unwrap();
        assert_eq!(got["l"], json!([2]));
        let got = merge_dict(stack.clone(), m(json!({"l": [{"__": "overwrite"}, 9]}))).unwrap();
        assert_eq!(got["l"], json!([9]));
        let err = merge_dict(stack, m(json!({"__": "merge-all"}))).unwrap_err();
        assert!(err.starts_with("Unknown strategy \"merge-all\""), "{err}");
    }

    #[test]
    fn config_files_render_with_minion_id_and_stack_globs_sorted() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        std::fs::create_dir_all(r.join("core")).unwrap();
        std::fs::create_dir_all(r.join("minions")).unwrap();
        std::fs::write(
            r.join("stack.cfg"),
            "core/*.yml\nminions/{{ minion_id }}.yml\nmissing/*.yml\n",
        )
        .unwrap();
        std::fs::write(r.join("core/a.yml"), "users: [root]\nrole: base\n").unwrap();
        std::fs::write(
            r.join("core/b.yml"),
            "users: [admin]\nfrom_grains: {{ __grains__.os }}\n",
        )
        .unwrap();
        std::fs::write(
            r.join("minions/web1.yml"),
            "role: web\nseen: {{ stack.users | length }}\nenv: {{ pillar.env }}\n",
        )
        .unwrap();
        let cfg = r.join("stack.cfg").display().to_string();
        let src = build(&json!(cfg), &Value::Null).unwrap();
        let grains = json!({"os": "Debian"});
        let pillar = m(json!({"env": "prod"}));
        let opts = json!({});
        let cx = ExtContext {
            minion_id: "web1",
            grains: &grains,
            pillar: &pillar,
            pillarenv: None,
            opts: &opts,
        };
        let got = src.compile(&cx).unwrap();
        assert_eq!(
            Value::Object(got.clone()),
            json!({"users": ["root", "admin"], "role": "web", "from_grains": "Debian", "seen": 2, "env": "prod"})
        );
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            ["users", "role", "from_grains", "seen", "env"]
        );

        let by_pillar = build(
            &json!({"pillar:env": {"prod": cfg.clone(), "dev": ["/nope.cfg"]}}),
            &Value::Null,
        )
        .unwrap();
        assert_eq!(by_pillar.compile(&cx).unwrap(), got);
        let by_grain = build(&json!({"grains:os": {"RedHat": cfg}}), &Value::Null).unwrap();
        assert!(by_grain.compile(&cx).unwrap().is_empty());
    }

    #[test]
    fn bad_yaml_and_bad_entries_are_errors_naming_them() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("s.cfg"), "bad.yml\n").unwrap();
        std::fs::write(d.path().join("bad.yml"), "a: [1\n").unwrap();
        let src = build(
            &json!(d.path().join("s.cfg").display().to_string()),
            &Value::Null,
        )
        .unwrap();
        let (g, p, o) = (json!({}), Map::new(), json!({}));
        let err = src
            .compile(&ExtContext {
                minion_id: "m",
                grains: &g,
                pillar: &p,
                pillarenv: None,
                opts: &o,
            })
            .unwrap_err();
        assert!(
            err.starts_with("Stack pillar yaml parsing error in "),
            "{err}"
        );
        assert!(err.contains("bad.yml"), "{err}");
        assert!(
            parse(&json!({"facts:os": {}}))
                .unwrap_err()
                .contains("Unknown traverse option \"facts\"")
        );
        assert!(parse(&json!(3)).is_err());
    }
}
