//! The minion's cache of fileserver files: `<cachedir>/files/<saltenv>/<path>`, the layout of
//! Salt's `cp.cache_file`. A file is written to a temporary name beside its place, hashed as
//! it arrives, and renamed into place only when its hash is the one announced, so a reader
//! never sees half a file and a corrupt transfer never replaces a good copy.

use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::hash::Hasher;
use crate::{FsError, Roots, path};

/// Where the cache keeps `rel` of `saltenv`.
pub fn cache_path(cachedir: &Path, saltenv: &str, rel: &str) -> Result<PathBuf, FsError> {
    path::check_saltenv(saltenv)?;
    let clean = path::clean(rel)?;
    if clean.is_empty() {
        return Err(FsError::BadPath {
            path: rel.to_owned(),
            why: "it names no file",
        });
    }
    Ok(cachedir.join("files").join(saltenv).join(clean))
}

/// The digest of a cached copy, `None` when there is none (or it cannot be read).
pub fn cached_hash(dest: &Path, hash_type: &str) -> Option<String> {
    dest.is_file()
        .then(|| crate::hash::hash_file(dest, hash_type).ok())
        .flatten()
}

/// A file being written into the cache.
pub struct CacheWriter {
    dest: PathBuf,
    tmp: PathBuf,
    file: Option<std::fs::File>,
    hasher: Option<Hasher>,
    written: u64,
}

impl CacheWriter {
    /// Starts writing `dest` (its directories are made, private to the minion's user).
    pub fn create(dest: &Path, hash_type: &str) -> Result<Self, FsError> {
        let dir = dest.parent().ok_or_else(|| FsError::BadPath {
            path: dest.display().to_string(),
            why: "it has no parent directory",
        })?;
        if dir.is_file() {
            // As Salt's cache: a file where a directory must go is stale.
            std::fs::remove_file(dir).map_err(|e| FsError::io(dir, e))?;
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| FsError::io(dir, e))?;
        let name = dest
            .file_name()
            .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tmp = dir.join(format!(".{name}.partial.{}.{nonce}", std::process::id()));
        let file = std::fs::File::create(&tmp).map_err(|e| FsError::io(&tmp, e))?;
        Ok(CacheWriter {
            dest: dest.to_owned(),
            tmp,
            file: Some(file),
            hasher: Some(Hasher::new(hash_type)?),
            written: 0,
        })
    }

    /// Appends a chunk.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), FsError> {
        if let (Some(f), Some(h)) = (self.file.as_mut(), self.hasher.as_mut()) {
            f.write_all(chunk).map_err(|e| FsError::io(&self.tmp, e))?;
            h.update(chunk);
            self.written += chunk.len() as u64;
        }
        Ok(())
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Checks what arrived against `expected` (hex) and moves it into place; on a mismatch
    /// the temporary file is removed and the cached copy, if any, is left alone.
    pub fn finish(mut self, expected: &str) -> Result<PathBuf, FsError> {
        drop(self.file.take());
        let got = self.hasher.take().map(Hasher::hex).unwrap_or_default();
        if !got.eq_ignore_ascii_case(expected) {
            return Err(FsError::HashMismatch {
                path: self.dest.display().to_string(),
                expected: expected.to_owned(),
                got,
            });
        }
        std::fs::rename(&self.tmp, &self.dest).map_err(|e| FsError::io(&self.dest, e))?;
        Ok(std::mem::take(&mut self.dest))
    }
}

impl Drop for CacheWriter {
    fn drop(&mut self) {
        if self.hasher.is_some() || !self.dest.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// The fileserver as `salt-call --local` sees it (`file_client: local`): the minion's own
/// `file_roots`, cached into its cachedir exactly as files from a master are.
#[derive(Debug, Clone)]
pub struct LocalFiles {
    /// The minion's `file_roots`.
    pub roots: Roots,
    /// The minion's cachedir.
    pub cachedir: PathBuf,
    /// Salt's `hash_type`.
    pub hash_type: String,
}

impl LocalFiles {
    /// Makes sure the cache holds the current copy of `rel`: copied only when the cached
    /// copy's hash differs. `None` when no root has the file.
    pub fn cache_file(&self, saltenv: &str, rel: &str) -> Result<Option<PathBuf>, FsError> {
        let Some(found) = self.roots.find(saltenv, rel)? else {
            return Ok(None);
        };
        let hsum = crate::hash::hash_file(&found.full, &self.hash_type)?;
        let dest = cache_path(&self.cachedir, saltenv, &found.rel)?;
        if cached_hash(&dest, &self.hash_type).as_deref() == Some(hsum.as_str()) {
            return Ok(Some(dest));
        }
        let mut w = CacheWriter::create(&dest, &self.hash_type)?;
        let mut src = std::fs::File::open(&found.full).map_err(|e| FsError::io(&found.full, e))?;
        let mut buf = vec![0u8; crate::CHUNK_SIZE];
        loop {
            let n =
                std::io::Read::read(&mut src, &mut buf).map_err(|e| FsError::io(&found.full, e))?;
            if n == 0 {
                break;
            }
            w.write(&buf[..n])?;
        }
        w.finish(&hsum).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_paths_follow_salts_layout_and_refuse_escapes() {
        let c = Path::new("/var/cache/m");
        assert_eq!(
            cache_path(c, "base", "web/./x.conf").unwrap(),
            Path::new("/var/cache/m/files/base/web/x.conf")
        );
        assert!(cache_path(c, "base", "../x").is_err());
        assert!(cache_path(c, "../base", "x").is_err());
        assert!(cache_path(c, "base", "").is_err());
    }

    #[test]
    fn a_file_lands_only_when_its_hash_checks_out() {
        let d = tempfile::tempdir().unwrap();
        let dest = d.path().join("files/base/a/b.txt");
        let mut w = CacheWriter::create(&dest, "sha256").unwrap();
        w.write(b"hello ").unwrap();
        w.write(b"world\n").unwrap();
        assert_eq!(w.written(), 12);
        let good = "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447";
        assert_eq!(w.finish(good).unwrap(), dest);
        assert_eq!(std::fs::read(&dest).unwrap(), b"hello world\n");
        assert_eq!(cached_hash(&dest, "sha256").as_deref(), Some(good));

        let mut w = CacheWriter::create(&dest, "sha256").unwrap();
        w.write(b"tampered\n").unwrap();
        let e = w.finish(good).unwrap_err().to_string();
        assert!(e.contains("b.txt") && e.contains(good), "{e}");
        assert_eq!(
            std::fs::read(&dest).unwrap(),
            b"hello world\n",
            "old copy kept"
        );
        let left: Vec<_> = std::fs::read_dir(dest.parent().unwrap()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left behind");

        let w = CacheWriter::create(&d.path().join("files/base/c"), "sha256").unwrap();
        drop(w);
        assert!(!d.path().join("files/base/c").exists());
        assert_eq!(
            std::fs::read_dir(d.path().join("files/base"))
                .unwrap()
                .count(),
            1
        );
    }

    #[test]
    fn local_files_copy_only_what_changed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("srv")).unwrap();
        std::fs::write(d.path().join("srv/f.txt"), "one\n").unwrap();
        let lf = LocalFiles {
            roots: Roots::new([("base".to_owned(), vec![d.path().join("srv")])].into()),
            cachedir: d.path().join("cache"),
            hash_type: "sha256".into(),
        };
        let p = lf.cache_file("base", "f.txt").unwrap().unwrap();
        assert_eq!(p, d.path().join("cache/files/base/f.txt"));
        let before = std::fs::metadata(&p).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        lf.cache_file("base", "f.txt").unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().modified().unwrap(), before);
        std::fs::write(d.path().join("srv/f.txt"), "two\n").unwrap();
        lf.cache_file("base", "f.txt").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two\n");
        assert_eq!(lf.cache_file("base", "nope").unwrap(), None);
        assert!(lf.cache_file("base", "../srv/f.txt").is_err());
    }
}
