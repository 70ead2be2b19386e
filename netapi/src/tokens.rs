//! eauth tokens, one file each in the master's `cachedir/tokens` (Salt's `token_dir`), so a
//! token survives a master restart; it lasts `token_expire` and `/logout` deletes it.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What a token stands for (the fields of Salt's token data).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Token {
    /// The token: 40 hex digits.
    pub token: String,
    /// Unix time it was made.
    pub start: f64,
    /// Unix time it stops working.
    pub expire: f64,
    /// The user.
    pub name: String,
    /// The eauth backend that checked the password.
    pub eauth: String,
}

/// Errors of the token store.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The token directory cannot be written.
    #[error("cannot write token file {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The token directory.
#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
}

/// Whether `t` looks like a token (hex, as Salt's `int(token, 16)` check): anything else
/// never reaches the file system.
pub fn well_formed(t: &str) -> bool {
    !t.is_empty() && t.len() <= 128 && t.bytes().all(|b| b.is_ascii_hexdigit())
}

impl TokenStore {
    /// Tokens in `dir` (created on the first login).
    pub fn new(dir: PathBuf) -> TokenStore {
        TokenStore { dir }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A new token for `name` from `eauth`, valid `expire_secs` from `now`.
    pub fn create(
        &self,
        name: &str,
        eauth: &str,
        now: f64,
        expire_secs: f64,
    ) -> Result<Token, TokenError> {
        let bytes: [u8; 20] = rand::random();
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let t = Token {
            token,
            start: now,
            expire: now + expire_secs,
            name: name.to_owned(),
            eauth: eauth.to_owned(),
        };
        let path = self.dir.join(&t.token);
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(&self.dir)?;
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
            let mut f = opts.open(&path)?;
            f.write_all(serde_json::to_string(&t).unwrap_or_default().as_bytes())?;
            f.sync_all()
        };
        write().map_err(|source| TokenError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(t)
    }

    /// The token `t` if it exists and has not expired at `now`; an expired one is removed.
    pub fn get(&self, t: &str, now: f64) -> Option<Token> {
        if !well_formed(t) {
            return None;
        }
        let path = self.dir.join(t);
        let text = std::fs::read_to_string(&path).ok()?;
        let tok: Token = match serde_json::from_str(&text) {
            Ok(tok) => tok,
            Err(e) => {
                tracing::warn!("token file {} is unreadable: {e}", path.display());
                return None;
            }
        };
        if tok.expire <= now {
            let _ = std::fs::remove_file(&path);
            return None;
        }
        Some(tok)
    }

    /// Revokes `t`; whether it existed.
    pub fn remove(&self, t: &str) -> bool {
        well_formed(t) && std::fs::remove_file(self.dir.join(t)).is_ok()
    }

    /// Removes every token expired at `now`; how many.
    pub fn prune(&self, now: f64) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut n = 0;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if well_formed(&name) && self.get(&name, now).is_none() && !e.path().exists() {
                n += 1;
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_persist_expire_and_revoke() {
        let d = tempfile::tempdir().unwrap();
        let store = TokenStore::new(d.path().join("tokens"));
        let t = store.create("alice", "file", 1000.0, 60.0).unwrap();
        assert_eq!(t.token.len(), 40);
        assert!(well_formed(&t.token));
        // Another store on the same directory (a restarted master) knows it.
        let again = TokenStore::new(d.path().join("tokens"));
        assert_eq!(again.get(&t.token, 1059.0), Some(t.clone()));
        assert_eq!(again.get(&t.token, 1060.0), None);
        assert!(!d.path().join("tokens").join(&t.token).exists());
        let t2 = store.create("bob", "file", 1000.0, 60.0).unwrap();
        assert!(store.remove(&t2.token));
        assert_eq!(store.get(&t2.token, 1001.0), None);
        assert!(!store.remove(&t2.token));
        assert_eq!(store.get("../../etc/passwd", 0.0), None);
        assert!(!well_formed("0x12"));
        let t3 = store.create("carol", "file", 1000.0, 10.0).unwrap();
        let t4 = store.create("dave", "file", 1000.0, 100.0).unwrap();
        assert_eq!(store.prune(1050.0), 1);
        assert!(store.get(&t3.token, 0.0).is_none());
        assert!(store.get(&t4.token, 1050.0).is_some());
    }
}
