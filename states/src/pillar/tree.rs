//! The pillar tree on disk (`pillar_roots`): which SLS each environment has (Salt's
//! `list_states`, sorted), where an SLS's file is (`a/b.sls` in any root, then
//! `a/b/init.sls`), and reading a file with a bound on its size.

use std::path::{Path, PathBuf};

/// Directories per pillar environment, in the order Salt lists them (`base` first).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tree {
    /// `(saltenv, roots)`, `base` first, then as configured.
    pub envs: Vec<(String, Vec<PathBuf>)>,
}

/// Deepest directory walked when listing an environment (symlink loops end here).
const MAX_DEPTH: usize = 32;

/// Where an SLS was found.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Its path relative to the root (`users/init.sls`), for `tplfile` and relative includes.
    pub source: String,
    /// Its path on disk.
    pub path: PathBuf,
}

impl Tree {
    /// The environments Salt compiles (`_get_envs`): `base`, then the configured others.
    pub fn env_names(&self) -> Vec<String> {
        let mut out = vec!["base".to_owned()];
        for (name, _) in &self.envs {
            if !out.contains(name) {
                out.push(name.clone());
            }
        }
        out
    }

    /// The roots of `env`; `None` when the environment is not configured.
    pub fn roots(&self, env: &str) -> Option<&[PathBuf]> {
        self.envs
            .iter()
            .find(|(n, _)| n == env)
            .map(|(_, r)| r.as_slice())
    }

    /// Every SLS of `env`, sorted (`users.web` for `users/web.sls`, `users` for
    /// `users/init.sls`); `None` when the environment is not configured.
    pub fn avail(&self, env: &str) -> Option<Vec<String>> {
        let roots = self.roots(env)?;
        let mut out = std::collections::BTreeSet::new();
        for root in roots {
            walk(root, "", 0, &mut out);
        }
        Some(out.into_iter().collect())
    }

    /// The file of `sls` in `env` (Salt's `get_state`).
    pub fn find(&self, sls: &str, env: &str) -> Option<Found> {
        let roots = self.roots(env)?;
        let rel = sls.replace('.', "/");
        for source in [format!("{rel}.sls"), format!("{rel}/init.sls")] {
            for root in roots {
                let path = root.join(&source);
                if path.is_file() {
                    return Some(Found { source, path });
                }
            }
        }
        None
    }

    /// The file `rel` (`top.sls`) in `env`, first root first.
    pub fn file(&self, rel: &str, env: &str) -> Option<Found> {
        self.roots(env)?.iter().find_map(|root| {
            let path = root.join(rel);
            path.is_file().then(|| Found {
                source: rel.to_owned(),
                path,
            })
        })
    }
}

fn walk(dir: &Path, prefix: &str, depth: usize, out: &mut std::collections::BTreeSet<String>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let rel = format!("{prefix}{name}");
        if path.is_dir() {
            walk(&path, &format!("{rel}/"), depth + 1, out);
        } else if let Some(stem) = rel.strip_suffix(".sls") {
            let stem = stem.strip_suffix("/init").unwrap_or(stem);
            out.insert(stem.replace('/', "."));
        }
    }
}

/// Reads `path`, refusing a file over `max` bytes with a message naming it.
pub fn read_bounded(path: &Path, max: u64) -> Result<String, String> {
    let len = std::fs::metadata(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .len();
    if len > max {
        return Err(format!(
            "{} is {len} bytes, over the {max} bytes a pillar file may have \
             (pillar_max_file_bytes)",
            path.display()
        ));
    }
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_finds_as_salt() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join("users/extra")).unwrap();
        std::fs::write(root.join("top.sls"), "").unwrap();
        std::fs::write(root.join("users/init.sls"), "").unwrap();
        std::fs::write(root.join("users/web.sls"), "").unwrap();
        std::fs::write(root.join("users/extra/init.sls"), "").unwrap();
        std::fs::write(root.join("notes.txt"), "").unwrap();
        let tree = Tree {
            envs: vec![("base".into(), vec![root.to_path_buf()])],
        };
        assert_eq!(
            tree.avail("base").unwrap(),
            ["top", "users", "users.extra", "users.web"]
        );
        assert_eq!(tree.avail("dev"), None);
        assert_eq!(tree.find("users", "base").unwrap().source, "users/init.sls");
        assert_eq!(
            tree.find("users.web", "base").unwrap().source,
            "users/web.sls"
        );
        assert!(tree.find("nope", "base").is_none());
        std::fs::write(root.join("big.sls"), "x: 1\n".repeat(100)).unwrap();
        let err = read_bounded(&root.join("big.sls"), 10).unwrap_err();
        assert!(
            err.contains("big.sls") && err.contains("500 bytes"),
            "{err}"
        );
    }
}
