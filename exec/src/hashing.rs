//! The digests Salt's `hash_type`, `file.get_hash` and `test.random_hash` accept (Python's
//! `hashlib` names), as lowercase hex.

use crate::error::ExecError;

/// A running digest: `md5`, `sha1`, `sha224`, `sha256`, `sha384` or `sha512` — the
/// fileserver's, with Salt's `ValueError` for another name.
pub(crate) struct Hasher(saltq_fileserver::Hasher);

impl Hasher {
    /// A new digest of the named form (`sha256`, `md5`, ...), or Salt's error for another.
    pub(crate) fn new(form: &str) -> Result<Self, ExecError> {
        saltq_fileserver::Hasher::new(form)
            .map(Self)
            .map_err(|_| ExecError::exception("ValueError", format!("Invalid hash type: {form}")))
    }

    /// Feeds bytes in.
    pub(crate) fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The digest as lowercase hex.
    pub(crate) fn hex(self) -> String {
        self.0.hex()
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
