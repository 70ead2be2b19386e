//! Noticing that certificate, key and CA files changed on disk, and deciding when to take the
//! new ones: the decisions are pure (fed what a poll read), so they are tested without files,
//! sockets or clocks; the master's poll loop (`master/src/certs.rs`) only reads and applies.
//!
//! A change is taken once the files read the same on two polls in a row: a tool writing the
//! certificate and then the key (or a person copying them one by one) is not caught halfway,
//! when the pair does not match yet. cert-manager's secret volumes swap every file at once
//! (a symlink), which the next poll sees whole. A set that is still wrong once settled is
//! refused once, and the files in use stay in use until the set changes again.

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// One watched file as a poll read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    /// The file.
    pub path: PathBuf,
    /// Its bytes, or why they could not be read.
    pub contents: Result<Vec<u8>, String>,
}

impl FileRead {
    /// The bytes, or an error naming the file.
    pub fn bytes(&self) -> Result<&[u8], String> {
        self.contents
            .as_deref()
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

/// Reads every file of a watched set (a missing or unreadable file is recorded, not fatal).
pub fn read_all(paths: &[PathBuf]) -> Vec<FileRead> {
    paths.iter().map(|p| read_one(p)).collect()
}

fn read_one(path: &Path) -> FileRead {
    FileRead {
        path: path.to_path_buf(),
        contents: std::fs::read(path).map_err(|e| e.to_string()),
    }
}

/// A digest of what a poll read: the same bytes in the same files give the same digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest([u8; 32]);

/// The digest of a poll's reads.
pub fn digest(reads: &[FileRead]) -> Digest {
    let mut h = Sha256::new();
    for r in reads {
        let path = r.path.as_os_str().as_encoded_bytes();
        h.update((path.len() as u64).to_be_bytes());
        h.update(path);
        match &r.contents {
            Ok(bytes) => {
                h.update([1]);
                h.update((bytes.len() as u64).to_be_bytes());
                h.update(bytes);
            }
            Err(e) => {
                h.update([0]);
                h.update(e.as_bytes());
            }
        }
    }
    Digest(h.finalize().into())
}

/// What to do after a poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The files are the ones in use.
    Unchanged,
    /// The files changed since the last poll: wait for them to settle.
    Settling,
    /// The files changed and settled: build from them, then report [`Watch::applied`] or
    /// [`Watch::rejected`].
    Apply,
    /// The files settled on a set already refused: nothing to do, nothing to say again.
    KnownBad,
}

/// The state of one watched set of files.
#[derive(Debug, Clone)]
pub struct Watch {
    /// The set in use.
    applied: Digest,
    /// What the previous poll read.
    seen: Digest,
    /// The last set refused, so it is reported once.
    rejected: Option<Digest>,
}

impl Watch {
    /// Watching a set whose current contents (`applied`) are in use.
    pub fn new(applied: Digest) -> Watch {
        Watch {
            applied,
            seen: applied,
            rejected: None,
        }
    }

    /// Decides what a poll that read `now` calls for.
    pub fn observe(&mut self, now: Digest) -> Step {
        let previous = std::mem::replace(&mut self.seen, now);
        if now == self.applied {
            return Step::Unchanged;
        }
        if now != previous {
            return Step::Settling;
        }
        if self.rejected == Some(now) {
            return Step::KnownBad;
        }
        Step::Apply
    }

    /// The set read as `d` is now in use.
    pub fn applied(&mut self, d: Digest) {
        self.applied = d;
        self.rejected = None;
    }

    /// The set read as `d` was refused; the one in use stays.
    pub fn rejected(&mut self, d: Digest) {
        self.rejected = Some(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(files: &[(&str, Option<&str>)]) -> Digest {
        let reads: Vec<FileRead> = files
            .iter()
            .map(|(p, c)| FileRead {
                path: PathBuf::from(p),
                contents: c
                    .map(|c| c.as_bytes().to_vec())
                    .ok_or_else(|| "No such file or directory (os error 2)".to_owned()),
            })
            .collect();
        digest(&reads)
    }

    #[test]
    fn digest_tells_contents_files_and_missing_files_apart() {
        let a = set(&[("tls.crt", Some("A")), ("tls.key", Some("a"))]);
        assert_eq!(a, set(&[("tls.crt", Some("A")), ("tls.key", Some("a"))]));
        assert_ne!(a, set(&[("tls.crt", Some("B")), ("tls.key", Some("a"))]));
        assert_ne!(a, set(&[("tls.key", Some("A")), ("tls.crt", Some("a"))]));
        assert_ne!(a, set(&[("tls.crt", Some("A")), ("tls.key", None)]));
        // Moving bytes from one file to the next is a change.
        assert_ne!(
            set(&[("x", Some("ab")), ("y", Some(""))]),
            set(&[("x", Some("a")), ("y", Some("b"))])
        );
    }

    #[test]
    fn a_change_is_taken_once_it_settles() {
        let old = set(&[("tls.crt", Some("A")), ("tls.key", Some("a"))]);
        let half = set(&[("tls.crt", Some("B")), ("tls.key", Some("a"))]);
        let new = set(&[("tls.crt", Some("B")), ("tls.key", Some("b"))]);
        let mut w = Watch::new(old);
        assert_eq!(w.observe(old), Step::Unchanged);
        // The certificate is written, the key not yet: wait.
        assert_eq!(w.observe(half), Step::Settling);
        // The key follows before the next poll: still moving.
        assert_eq!(w.observe(new), Step::Settling);
        assert_eq!(w.observe(new), Step::Apply);
        w.applied(new);
        assert_eq!(w.observe(new), Step::Unchanged);
        assert_eq!(w.observe(new), Step::Unchanged);
    }

    #[test]
    fn a_bad_set_is_refused_once_and_the_next_change_is_tried() {
        let good = set(&[("tls.crt", Some("A"))]);
        let bad = set(&[("tls.crt", Some("garbage"))]);
        let fixed = set(&[("tls.crt", Some("C"))]);
        let mut w = Watch::new(good);
        assert_eq!(w.observe(bad), Step::Settling);
        assert_eq!(w.observe(bad), Step::Apply);
        w.rejected(bad);
        for _ in 0..3 {
            assert_eq!(w.observe(bad), Step::KnownBad, "said once, not every poll");
        }
        assert_eq!(w.observe(fixed), Step::Settling);
        assert_eq!(w.observe(fixed), Step::Apply);
        w.applied(fixed);
        assert_eq!(w.observe(fixed), Step::Unchanged);
        // The bad set coming back later is tried (and refused) again.
        assert_eq!(w.observe(bad), Step::Settling);
        assert_eq!(w.observe(bad), Step::Apply);
    }

    #[test]
    fn going_back_to_the_set_in_use_is_no_change() {
        let good = set(&[("ca.crt", Some("A"))]);
        let bad = set(&[("ca.crt", None)]);
        let mut w = Watch::new(good);
        assert_eq!(w.observe(bad), Step::Settling);
        assert_eq!(w.observe(bad), Step::Apply);
        w.rejected(bad);
        assert_eq!(w.observe(good), Step::Unchanged);
        assert_eq!(w.observe(good), Step::Unchanged);
    }

    #[test]
    fn reads_name_the_file_that_failed() {
        let dir = std::env::temp_dir().join(format!("saltq-reload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let present = dir.join("present.pem");
        std::fs::write(&present, "x").unwrap();
        let reads = read_all(&[present.clone(), dir.join("absent.pem")]);
        assert_eq!(reads[0].bytes().unwrap(), b"x");
        let e = reads[1].bytes().unwrap_err();
        assert!(e.contains("absent.pem"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
