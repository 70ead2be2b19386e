//! The digests Salt's `hash_type`, `file.get_hash` and `test.random_hash` accept (Python's
//! `hashlib` names), as lowercase hex.

use md5::Md5;
use sha1::Sha1;
use sha2::{Digest, Sha224, Sha256, Sha384, Sha512};

use crate::error::ExecError;

/// A running digest: `md5`, `sha1`, `sha224`, `sha256`, `sha384` or `sha512`.
pub(crate) enum Hasher {
    Md5(Md5),
    Sha1(Sha1),
    Sha224(Sha224),
    Sha256(Sha256),
    Sha384(Sha384),
    Sha512(Sha512),
}

impl Hasher {
    /// A new digest of the named form (`sha256`, `md5`, ...), or Salt's error for another.
    pub(crate) fn new(form: &str) -> Result<Self, ExecError> {
        Ok(match form {
            "md5" => Self::Md5(Md5::new()),
            "sha1" => Self::Sha1(Sha1::new()),
            "sha224" => Self::Sha224(Sha224::new()),
            "sha256" => Self::Sha256(Sha256::new()),
            "sha384" => Self::Sha384(Sha384::new()),
            "sha512" => Self::Sha512(Sha512::new()),
            _ => {
                return Err(ExecError::exception(
                    "ValueError",
                    format!("Invalid hash type: {form}"),
                ));
            }
        })
    }

    /// Feeds bytes in.
    pub(crate) fn update(&mut self, data: &[u8]) {
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
    pub(crate) fn hex(self) -> String {
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

/// The hex digest of `data`.
pub(crate) fn hex_digest(form: &str, data: &[u8]) -> Result<String, ExecError> {
    let mut h = Hasher::new(form)?;
    h.update(data);
    Ok(h.hex())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_match_hashlib() {
        // hashlib.new(form, b"abc").hexdigest()
        let cases = [
            ("md5", "900150983cd24fb0d6963f7d28e17f72"),
            ("sha1", "a9993e364706816aba3e25717850c26c9cd0d89d"),
            (
                "sha224",
                "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
            ),
            (
                "sha256",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
        ];
        for (form, want) in cases {
            assert_eq!(
                hex_digest(form, b"abc").ok().as_deref(),
                Some(want),
                "{form}"
            );
        }
        assert_eq!(hex_digest("sha512", b"").map(|h| h.len()).ok(), Some(128));
        assert_eq!(hex_digest("sha384", b"").map(|h| h.len()).ok(), Some(96));
        let err = hex_digest("crc", b"").err().map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some("ValueError: Invalid hash type: crc"));
    }
}
