//! The digests Salt's `hash_type` names (Python's `hashlib` names), as lowercase hex.

use std::io::Read;
use std::path::Path;

use md5::Md5;
use sha1::Sha1;
use sha2::{Digest, Sha224, Sha256, Sha384, Sha512};

use crate::FsError;

/// Salt's default `hash_type`.
pub const DEFAULT_HASH_TYPE: &str = "sha256";

/// A running digest of one of Salt's `hash_type`s.
pub enum Hasher {
    /// `md5`.
    Md5(Md5),
    /// `sha1`.
    Sha1(Sha1),
    /// `sha224`.
    Sha224(Sha224),
    /// `sha256`, the default.
    Sha256(Sha256),
    /// `sha384`.
    Sha384(Sha384),
    /// `sha512`.
    Sha512(Sha512),
}

impl Hasher {
    /// A new digest named `hash_type`, or an error naming it.
    pub fn new(hash_type: &str) -> Result<Self, FsError> {
        Ok(match hash_type {
            "md5" => Self::Md5(Md5::new()),
            "sha1" => Self::Sha1(Sha1::new()),
            "sha224" => Self::Sha224(Sha224::new()),
            "sha256" => Self::Sha256(Sha256::new()),
            "sha384" => Self::Sha384(Sha384::new()),
            "sha512" => Self::Sha512(Sha512::new()),
            other => return Err(FsError::HashType(other.to_owned())),
        })
    }

    /// Feeds bytes in.
    pub fn update(&mut self, data: &[u8]) {
        match self {
            Self::Md5(h) => h.update(data),
            Self::Sha1(h) => h.update(data),
            Self::Sha224(h) => h.update(data),
            Self::Sha256(h) => h.update(data),
            Self::Sha384(h) => h.update(data),
            Self::Sha512(h) => h.update(data),
        }
    }

    /// The digest as lowercase hex.
    pub fn hex(self) -> String {
        let bytes = match self {
            Self::Md5(h) => h.finalize().to_vec(),
            Self::Sha1(h) => h.finalize().to_vec(),
            Self::Sha224(h) => h.finalize().to_vec(),
            Self::Sha256(h) => h.finalize().to_vec(),
            Self::Sha384(h) => h.finalize().to_vec(),
            Self::Sha512(h) => h.finalize().to_vec(),
        };
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The hex digest of a file's contents, read in blocks (never whole in memory).
pub fn hash_file(path: &Path, hash_type: &str) -> Result<String, FsError> {
    let mut h = Hasher::new(hash_type)?;
    let mut f = std::fs::File::open(path).map_err(|e| FsError::io(path, e))?;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = f.read(&mut buf).map_err(|e| FsError::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.hex())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_match_known_values() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "hello world\n").unwrap();
        // Salt 3007.8's cp.hash_file of the same contents (exec/src/modules/cp/data).
        assert_eq!(
            hash_file(&p, "sha256").unwrap(),
            "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447"
        );
        assert_eq!(
            hash_file(&p, "md5").unwrap(),
            "6f5902ac237024bdd0c176cb93063dc4"
        );
        let err = hash_file(&p, "crc32").unwrap_err().to_string();
        assert!(err.contains("crc32"), "{err}");
    }
}
