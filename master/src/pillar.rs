//! Master-side pillar: plain YAML under `pillar_roots`, chosen per minion by a `top.sls` in
//! Salt's structure (`base:` → target → list of pillar names, with an optional `- match:` entry).
//! No templating. Files are `NAME.sls` or `NAME/init.sls` (dots in NAME are directories),
//! merged in order, later values winning, dicts merged recursively.

use std::path::{Path, PathBuf};

use saltq_semantics::target::{MinionFacts, Nodegroups, Target, TargetType};
use serde_json::{Map, Value};

/// Why a pillar could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum PillarError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid YAML.
    #[error("invalid YAML in {path}: {message}")]
    Yaml { path: PathBuf, message: String },
    /// The top file has the wrong shape or a bad target.
    #[error("top file {path}: {message}")]
    Top { path: PathBuf, message: String },
    /// A pillar file whose data is not a mapping (Salt's words).
    #[error("SLS '{name}' does not render to a dictionary ({path})")]
    NotADict { name: String, path: PathBuf },
    /// A pillar named in the top file does not exist. Salt's words; the name as written
    /// (quoted, not escaped: a name with a backslash must still be found in the top file).
    #[error(
        "Specified SLS '{name}' in the pillar top file is not available on the salt master (pillar_roots: {roots})"
    )]
    Missing { name: String, roots: String },
}

fn read_yaml(path: &Path) -> Result<Value, PillarError> {
    let text = std::fs::read_to_string(path).map_err(|source| PillarError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    saltq_transport::config::yaml_from_str(&text).map_err(|message| PillarError::Yaml {
        path: path.to_path_buf(),
        message,
    })
}

/// Merges `src` into `dst`: dicts recursively, anything else replaced.
pub fn merge(dst: &mut Value, src: Value) {
    match (dst, src) {
        (Value::Object(d), Value::Object(s)) => {
            for (k, v) in s {
                match d.get_mut(&k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        d.insert(k, v);
                    }
                }
            }
        }
        (d, s) => *d = s,
    }
}

/// The pillar of minion `id` with `grains`.
pub fn compile(roots: &[PathBuf], id: &str, grains: &Value) -> Result<Value, PillarError> {
    let mut pillar = Value::Object(Map::new());
    let Some(top_path) = roots
        .iter()
        .map(|r| r.join("top.sls"))
        .find(|p| p.is_file())
    else {
        return Ok(pillar);
    };
    let top = read_yaml(&top_path)?;
    let bad = |message: String| PillarError::Top {
        path: top_path.clone(),
        message,
    };
    let Some(base) = top.get("base") else {
        return Ok(pillar);
    };
    let base = base
        .as_object()
        .ok_or_else(|| bad("base must map targets to lists of pillar names".into()))?;
    for (tgt, entries) in base {
        let entries = entries
            .as_array()
            .ok_or_else(|| bad(format!("target {tgt:?} must map to a list")))?;
        let mut tgt_type = TargetType::Glob;
        let mut names = Vec::new();
        for e in entries {
            match e {
                Value::String(n) => names.push(n.clone()),
                Value::Object(m) if m.contains_key("match") => {
                    let t = m["match"].as_str().unwrap_or_default();
                    tgt_type = t.parse().map_err(|e| bad(format!("target {tgt:?}: {e}")))?;
                }
                other => return Err(bad(format!("target {tgt:?}: unexpected entry {other}"))),
            }
        }
        let target = Target::compile(tgt, tgt_type, None, &Nodegroups::new())
            .map_err(|e| bad(e.to_string()))?;
        let facts = MinionFacts {
            id,
            grains: Some(grains),
            pillar: None,
        };
        if !target.matches(&facts) {
            continue;
        }
        for name in names {
            let rel = name.replace('.', "/");
            let file = roots.iter().find_map(|r| {
                [r.join(format!("{rel}.sls")), r.join(&rel).join("init.sls")]
                    .into_iter()
                    .find(|p| p.is_file())
            });
            let file = file.ok_or_else(|| PillarError::Missing {
                name: name.clone(),
                roots: roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
            // As Salt: data that is false in Python adds nothing, other data must be a dict.
            match read_yaml(&file)? {
                data @ Value::Object(_) => merge(&mut pillar, data),
                data if !saltq_semantics::python::truthy(&data) => {}
                _ => return Err(PillarError::NotADict { name, path: file }),
            }
        }
    }
    Ok(pillar)
}

#[cfg(test)]
mod prop_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn top_file_selects_and_merges() {
        let d = std::env::temp_dir().join(format!("saltq-pillar-{}", std::process::id()));
        std::fs::create_dir_all(d.join("users")).unwrap();
        std::fs::write(
            d.join("top.sls"),
            "base:\n  '*':\n    - common\n  'web*':\n    - users.web\n  'os:Debian':\n    - match: grain\n    - debian\n",
        )
        .unwrap();
        std::fs::write(d.join("common.sls"), "role: base\nusers: {root: 0}\n").unwrap();
        std::fs::write(d.join("users/web.sls"), "role: web\nusers: {www: 33}\n").unwrap();
        std::fs::write(d.join("debian.sls"), "pkg: apt\n").unwrap();
        let roots = vec![d.clone()];
        let p = compile(&roots, "web1", &json!({"os": "Debian"})).unwrap();
        assert_eq!(
            p,
            json!({"role": "web", "users": {"root": 0, "www": 33}, "pkg": "apt"})
        );
        let p = compile(&roots, "db1", &json!({"os": "RedHat"})).unwrap();
        assert_eq!(p, json!({"role": "base", "users": {"root": 0}}));
        std::fs::write(d.join("top.sls"), "base:\n  '*':\n    - nope\n").unwrap();
        assert!(
            compile(&roots, "db1", &json!({}))
                .unwrap_err()
                .to_string()
                .contains("nope")
        );
        let _ = std::fs::remove_dir_all(d);
    }
}
