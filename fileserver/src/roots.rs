//! `file_roots` per saltenv, as Salt's `roots` fileserver backend serves them: the first root
//! holding a file wins, a saltenv that is not configured has no files, and nothing outside a
//! root is ever reached (a symlink resolving outside its root is refused when asked for and
//! left out of listings).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use crate::{FsError, hash, path};

/// The configured roots.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    /// Directories per saltenv, in the order written (`file_roots`).
    envs: BTreeMap<String, Vec<PathBuf>>,
    /// Skip symlinks altogether (Salt's `fileserver_ignoresymlinks`).
    pub ignore_symlinks: bool,
    /// Paths never served or listed (Salt's `file_ignore_regex`, `file_ignore_glob`).
    pub ignore: Ignore,
}

/// Salt's `file_ignore_regex` (searched anywhere in the path) and `file_ignore_glob`
/// (Python's `fnmatch`, where `*` also matches `/`). Listings test the path relative to the
/// root, lookups the path on disk, as Salt's `roots` backend does.
#[derive(Debug, Clone, Default)]
pub struct Ignore {
    regexes: Vec<regex::Regex>,
    globs: Vec<String>,
}

impl Ignore {
    /// From the config's lists; an error names the regular expression that does not compile.
    pub fn new(regexes: &[String], globs: &[String]) -> Result<Self, String> {
        let regexes = regexes
            .iter()
            .map(|r| {
                regex::Regex::new(r).map_err(|e| format!("{r:?} is not a regular expression: {e}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Ignore {
            regexes,
            globs: globs.to_vec(),
        })
    }

    /// Whether `path` is ignored.
    pub fn matches(&self, path: &str) -> bool {
        self.regexes.iter().any(|r| r.is_match(path))
            || self
                .globs
                .iter()
                .any(|g| saltq_semantics::python::fnmatch(path, g))
    }
}

/// A file found in the roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its path on disk.
    pub full: PathBuf,
    /// Its path relative to the root, normalised (`web/files/nginx.conf`).
    pub rel: String,
}

/// Everything under a saltenv's roots, each list sorted without duplicates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Regular files (`cp.list_master`).
    pub files: Vec<String>,
    /// Directories, the roots themselves left out (`cp.list_master_dirs`).
    pub dirs: Vec<String>,
    /// Directories with nothing in them (`file_list_emptydirs`).
    pub empty_dirs: Vec<String>,
}

impl Roots {
    /// Roots from Salt's `file_roots` shape: `{saltenv: [dir, ...]}`.
    pub fn new(envs: BTreeMap<String, Vec<PathBuf>>) -> Self {
        Roots {
            envs,
            ignore_symlinks: false,
            ignore: Ignore::default(),
        }
    }

    /// The configured saltenvs, sorted (`cp.envs`).
    pub fn saltenvs(&self) -> Vec<String> {
        self.envs.keys().cloned().collect()
    }

    /// The directories of one saltenv (none when it is not configured).
    pub fn dirs(&self, saltenv: &str) -> &[PathBuf] {
        self.envs.get(saltenv).map_or(&[], Vec::as_slice)
    }

    /// The file at `rel` in `saltenv`: from the first root that holds it as a file. `None` when
    /// no root has it; an error when the path is refused or resolves outside its root.
    pub fn find(&self, saltenv: &str, rel: &str) -> Result<Option<Found>, FsError> {
        let clean = path::clean(rel)?;
        if clean.is_empty() {
            return Ok(None);
        }
        for root in self.dirs(saltenv) {
            let full = root.join(&clean);
            let Ok(lmeta) = std::fs::symlink_metadata(&full) else {
                continue;
            };
            if lmeta.file_type().is_symlink() && self.ignore_symlinks {
                continue;
            }
            let Ok(meta) = std::fs::metadata(&full) else {
                continue; // a dangling link
            };
            if !meta.is_file() || self.ignore.matches(&full.to_string_lossy()) {
                continue;
            }
            let (Ok(real), Ok(real_root)) = (full.canonicalize(), root.canonicalize()) else {
                continue;
            };
            if !real.starts_with(&real_root) {
                return Err(FsError::Escape {
                    path: rel.to_owned(),
                    saltenv: saltenv.to_owned(),
                });
            }
            return Ok(Some(Found { full, rel: clean }));
        }
        Ok(None)
    }

    /// The file's digest, `None` when there is no such file.
    pub fn hash(
        &self,
        saltenv: &str,
        rel: &str,
        hash_type: &str,
    ) -> Result<Option<String>, FsError> {
        match self.find(saltenv, rel)? {
            Some(f) => hash::hash_file(&f.full, hash_type).map(Some),
            None => Ok(None),
        }
    }

    /// Files, directories and empty directories of `saltenv` whose path starts with `prefix`
    /// (a plain string prefix, as Salt's: `web` also matches `webapp.txt`).
    pub fn list(&self, saltenv: &str, prefix: &str) -> Listing {
        let prefix = prefix.trim_matches('/');
        let (mut files, mut dirs, mut empty) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
        for root in self.dirs(saltenv) {
            let Ok(real_root) = root.canonicalize() else {
                continue;
            };
            let mut seen = HashSet::from([real_root.clone()]);
            let mut stack = vec![(root.clone(), String::new())];
            while let Some((dir, rel)) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                let mut any = false;
                for e in entries.flatten() {
                    let Some(name) = e.file_name().to_str().map(str::to_owned) else {
                        continue; // not UTF-8: no salt:// path can name it
                    };
                    let full = e.path();
                    let Some(kind) = self.kind(&full, &real_root, &mut seen) else {
                        continue;
                    };
                    any = true;
                    let child = if rel.is_empty() {
                        name
                    } else {
                        format!("{rel}/{name}")
                    };
                    // An ignored directory is still walked: what is under it may be kept.
                    let keep = !self.ignore.matches(&child);
                    match kind {
                        Kind::File if keep => {
                            files.insert(child);
                        }
                        Kind::File => {}
                        Kind::Dir => {
                            if keep {
                                dirs.insert(child.clone());
                            }
                            stack.push((full, child));
                        }
                    }
                }
                if !any && !rel.is_empty() && !self.ignore.matches(&rel) {
                    empty.insert(rel);
                }
            }
        }
        let keep = |set: BTreeSet<String>| -> Vec<String> {
            set.into_iter().filter(|p| p.starts_with(prefix)).collect()
        };
        Listing {
            files: keep(files),
            dirs: keep(dirs),
            empty_dirs: keep(empty),
        }
    }

    /// What a directory entry is once links are followed, or `None` to leave it out (an
    /// ignored or dangling symlink, one leading outside the root, a directory already walked).
    fn kind(&self, full: &Path, real_root: &Path, seen: &mut HashSet<PathBuf>) -> Option<Kind> {
        let lmeta = std::fs::symlink_metadata(full).ok()?;
        let is_link = lmeta.file_type().is_symlink();
        if is_link && self.ignore_symlinks {
            return None;
        }
        let meta = if is_link {
            let real = full.canonicalize().ok()?;
            if !real.starts_with(real_root) {
                return None;
            }
            let meta = std::fs::metadata(&real).ok()?;
            if meta.is_dir() && !seen.insert(real) {
                return None;
            }
            meta
        } else {
            lmeta
        };
        if meta.is_file() {
            Some(Kind::File)
        } else if meta.is_dir() {
            Some(Kind::Dir)
        } else {
            None
        }
    }
}

enum Kind {
    File,
    Dir,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, Roots) {
        let d = tempfile::tempdir().unwrap();
        let w = |p: &str, s: &str| {
            let p = d.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s).unwrap();
        };
        w("srv/hello.txt", "hello world\n");
        w("srv/web/init.sls", "x\n");
        w("srv/web/files/nginx.conf", "server {}\n");
        w("srv/webapp.txt", "w\n");
        std::fs::create_dir_all(d.path().join("srv/web/files/empty")).unwrap();
        w("srv2/hello.txt", "shadowed\n");
        w("srv2/extra/only2.txt", "2\n");
        w("dev/hello.txt", "hello dev\n");
        w("secret/key", "top secret\n");
        std::os::unix::fs::symlink(d.path().join("secret/key"), d.path().join("srv/leak")).unwrap();
        std::os::unix::fs::symlink(d.path().join("secret"), d.path().join("srv/leakdir")).unwrap();
        std::os::unix::fs::symlink("hello.txt", d.path().join("srv/alias.txt")).unwrap();
        std::os::unix::fs::symlink("..", d.path().join("srv/web/up")).unwrap();
        let roots = Roots::new(BTreeMap::from([
            (
                "base".to_owned(),
                vec![d.path().join("srv"), d.path().join("srv2")],
            ),
            ("dev".to_owned(), vec![d.path().join("dev")]),
        ]));
        (d, roots)
    }

    #[test]
    fn the_first_root_holding_the_file_wins() {
        let (d, roots) = tree();
        let f = roots.find("base", "hello.txt").unwrap().unwrap();
        assert_eq!(f.full, d.path().join("srv/hello.txt"));
        let f = roots.find("base", "./extra//only2.txt").unwrap().unwrap();
        assert_eq!(f.full, d.path().join("srv2/extra/only2.txt"));
        assert_eq!(f.rel, "extra/only2.txt");
        let f = roots.find("dev", "hello.txt").unwrap().unwrap();
        assert_eq!(f.full, d.path().join("dev/hello.txt"));
        assert_eq!(roots.find("base", "nope").unwrap(), None);
        assert_eq!(roots.find("base", "web").unwrap(), None, "a directory");
        assert_eq!(roots.find("nosuchenv", "hello.txt").unwrap(), None);
        assert_eq!(
            roots
                .hash("base", "hello.txt", "sha256")
                .unwrap()
                .as_deref(),
            Some("a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447")
        );
    }

    #[test]
    fn escapes_are_refused_naming_the_path() {
        let (_d, roots) = tree();
        for (p, why) in [
            ("../secret/key", "'..'"),
            ("/etc/passwd", "absolute"),
            ("leak", "outside the file roots"),
            ("leakdir/key", "outside the file roots"),
        ] {
            let e = roots.find("base", p).unwrap_err().to_string();
            assert!(e.contains(p) && e.contains(why), "{p}: {e}");
        }
        // A link that stays inside its root is served.
        assert!(roots.find("base", "alias.txt").unwrap().is_some());
        let mut strict = roots.clone();
        strict.ignore_symlinks = true;
        assert_eq!(strict.find("base", "alias.txt").unwrap(), None);
    }

    #[test]
    fn listings_merge_roots_filter_by_string_prefix_and_skip_escapes() {
        let (_d, roots) = tree();
        let all = roots.list("base", "");
        assert_eq!(
            all.files,
            [
                "alias.txt",
                "extra/only2.txt",
                "hello.txt",
                "web/files/nginx.conf",
                "web/init.sls",
                "webapp.txt"
            ]
        );
        // `web/up` points at the root, already walked: left out, so no loop.
        assert_eq!(all.dirs, ["extra", "web", "web/files", "web/files/empty"]);
        assert_eq!(all.empty_dirs, ["web/files/empty"]);
        let web = roots.list("base", "web/");
        assert_eq!(
            web.files,
            ["web/files/nginx.conf", "web/init.sls", "webapp.txt"]
        );
        assert_eq!(roots.list("dev", "").files, ["hello.txt"]);
        assert_eq!(roots.list("dev", "").dirs, Vec::<String>::new());
        assert_eq!(roots.list("nosuchenv", ""), Listing::default());
        let mut strict = roots.clone();
        strict.ignore_symlinks = true;
        assert!(!strict.list("base", "").files.contains(&"alias.txt".into()));
    }

    #[test]
    fn ignored_paths_are_neither_listed_nor_served() {
        let (_d, mut roots) = tree();
        roots.ignore =
            Ignore::new(&["\\.sls$".into()], &["*nginx*".into(), "extra".into()]).unwrap();
        let all = roots.list("base", "");
        assert_eq!(
            all.files,
            ["alias.txt", "extra/only2.txt", "hello.txt", "webapp.txt"]
        );
        assert_eq!(all.dirs, ["web", "web/files", "web/files/empty"]);
        assert_eq!(roots.find("base", "web/init.sls").unwrap(), None);
        assert_eq!(roots.find("base", "web/files/nginx.conf").unwrap(), None);
        assert!(roots.find("base", "hello.txt").unwrap().is_some());
        let err = Ignore::new(&["(".into()], &[]).unwrap_err();
        assert!(err.contains("\"(\""), "{err}");
    }
}
