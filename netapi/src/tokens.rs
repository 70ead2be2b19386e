//! eauth tokens, one file each in the master's `cachedir/tokens` (Salt's `token_dir`), so a
//! token survives a master restart; it lasts `token_expire` and `/logout` deletes it. Expired
//! tokens are swept every [`prune_every`] while salt-api runs, and a user holds at most
//! `max_tokens_per_user` live tokens (the oldest goes when a new one is made). What to remove
//! is decided by pure functions fed with `now` ([`expired`], [`evict`]).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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

/// The token directory, with an index of its live tokens by user for the per-user bound.
#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
    /// At most this many live tokens per user (`max_tokens_per_user`), shared by clones.
    max_per_user: Arc<AtomicUsize>,
    /// Live tokens this store knows of: token -> (user, start, expire). Built from the
    /// directory at the first sweep or login, then kept by this store's own changes.
    index: Arc<Mutex<Option<HashMap<String, Meta>>>>,
}

/// What the index keeps of a token.
#[derive(Debug, Clone, PartialEq)]
struct Meta {
    name: String,
    start: f64,
    expire: f64,
}

/// The default of `max_tokens_per_user`.
pub const DEFAULT_MAX_PER_USER: usize = 1000;

/// Whether `t` has expired at `now` (it works while `now < expire`).
pub fn expired(t: &Token, now: f64) -> bool {
    t.expire <= now
}

/// Which of one user's live tokens (`(start, token)`) to remove so that one more leaves at
/// most `max`: the oldest first.
pub fn evict(mut live: Vec<(f64, String)>, max: usize) -> Vec<String> {
    let keep = max.saturating_sub(1);
    if live.len() <= keep {
        return vec![];
    }
    live.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let n = live.len() - keep;
    live.into_iter().take(n).map(|(_, t)| t).collect()
}

/// How often expired tokens are swept: `token_expire`, at most a minute, at least a second.
pub fn prune_every(token_expire: Duration) -> Duration {
    token_expire.clamp(Duration::from_secs(1), Duration::from_secs(60))
}

/// Whether `t` looks like a token (hex, as Salt's `int(token, 16)` check): anything else
/// never reaches the file system.
pub fn well_formed(t: &str) -> bool {
    !t.is_empty() && t.len() <= 128 && t.bytes().all(|b| b.is_ascii_hexdigit())
}

impl TokenStore {
    /// Tokens in `dir` (created on the first login), at most [`DEFAULT_MAX_PER_USER`] per user.
    pub fn new(dir: PathBuf) -> TokenStore {
        TokenStore::with_max_per_user(dir, DEFAULT_MAX_PER_USER)
    }

    /// Tokens in `dir`, at most `max_per_user` live ones per user (at least one).
    pub fn with_max_per_user(dir: PathBuf, max_per_user: usize) -> TokenStore {
        TokenStore {
            dir,
            max_per_user: Arc::new(AtomicUsize::new(max_per_user.max(1))),
            index: Arc::default(),
        }
    }

    /// Sets the per-user bound (at least one) for this store and its clones.
    pub fn set_max_per_user(&self, max_per_user: usize) {
        self.max_per_user
            .store(max_per_user.max(1), Ordering::Relaxed);
    }

    /// Reads every token file: the live ones, and the names of those expired at `now`.
    /// Unreadable files are left alone (logged by [`TokenStore::get`]'s reader).
    fn scan(&self, now: f64) -> (HashMap<String, Meta>, Vec<String>) {
        let mut live = HashMap::new();
        let mut dead = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return (live, dead);
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !well_formed(&name) {
                continue;
            }
            let Some(tok) = self.read(&name) else {
                continue;
            };
            if expired(&tok, now) {
                dead.push(name);
            } else {
                live.insert(
                    name,
                    Meta {
                        name: tok.name,
                        start: tok.start,
                        expire: tok.expire,
                    },
                );
            }
        }
        (live, dead)
    }

    fn read(&self, t: &str) -> Option<Token> {
        let path = self.dir.join(t);
        let text = std::fs::read_to_string(&path).ok()?;
        match serde_json::from_str(&text) {
            Ok(tok) => Some(tok),
            Err(e) => {
                tracing::warn!("token file {} is unreadable: {e}", path.display());
                None
            }
        }
    }

    fn index(&self) -> std::sync::MutexGuard<'_, Option<HashMap<String, Meta>>> {
        self.index.lock().unwrap_or_else(|e| e.into_inner())
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
        let mut index = self.index();
        let idx = index.get_or_insert_with(|| self.scan(now).0);
        // The per-user bound: the user's oldest live tokens go before this one is made.
        let live: Vec<(f64, String)> = idx
            .iter()
            .filter(|(_, m)| m.name == t.name && m.expire > now)
            .map(|(k, m)| (m.start, k.clone()))
            .collect();
        for old in evict(live, self.max_per_user.load(Ordering::Relaxed)) {
            let _ = std::fs::remove_file(self.dir.join(&old));
            idx.remove(&old);
            tracing::info!(user = %t.name, "removed the oldest salt-api token of a user at max_tokens_per_user");
        }
        write().map_err(|source| TokenError::Write {
            path: path.clone(),
            source,
        })?;
        idx.insert(
            t.token.clone(),
            Meta {
                name: t.name.clone(),
                start: t.start,
                expire: t.expire,
            },
        );
        Ok(t)
    }

    /// The token `t` if it exists and has not expired at `now`; an expired one is removed.
    pub fn get(&self, t: &str, now: f64) -> Option<Token> {
        if !well_formed(t) {
            return None;
        }
        let tok = self.read(t)?;
        if expired(&tok, now) {
            self.remove(t);
            return None;
        }
        Some(tok)
    }

    /// Revokes `t`; whether it existed.
    pub fn remove(&self, t: &str) -> bool {
        if !well_formed(t) {
            return false;
        }
        if let Some(idx) = self.index().as_mut() {
            idx.remove(t);
        }
        std::fs::remove_file(self.dir.join(t)).is_ok()
    }

    /// Removes every token expired at `now`, and re-reads the index from the directory;
    /// how many were removed.
    pub fn prune(&self, now: f64) -> usize {
        let (live, dead) = self.scan(now);
        let n = dead
            .iter()
            .filter(|t| std::fs::remove_file(self.dir.join(t)).is_ok())
            .count();
        *self.index() = Some(live);
        n
    }

    /// How many live tokens `name` holds, as the index knows.
    pub fn count_for(&self, name: &str, now: f64) -> usize {
        let mut index = self.index();
        let idx = index.get_or_insert_with(|| self.scan(now).0);
        idx.values()
            .filter(|m| m.name == name && m.expire > now)
            .count()
    }
}

/// Sweeps expired tokens from `store` every `every` until `alive` says the server is gone
/// (checked at each tick); the file work runs off the async threads.
pub async fn prune_periodically(
    store: TokenStore,
    every: Duration,
    alive: impl Fn() -> bool + Send + 'static,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tick.tick().await;
        if !alive() {
            return;
        }
        let s = store.clone();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or_default();
        match tokio::task::spawn_blocking(move || s.prune(now)).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!("removed {n} expired salt-api tokens"),
            Err(e) => tracing::warn!("salt-api token sweep failed: {e}"),
        }
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

    #[test]
    fn expiry_and_eviction_are_decided_with_now() {
        let t = |start: f64, expire: f64| Token {
            token: "ab".into(),
            start,
            expire,
            name: "u".into(),
            eauth: "file".into(),
        };
        assert!(!expired(&t(0.0, 30.0), 29.9));
        assert!(expired(&t(0.0, 30.0), 30.0));
        let live = vec![
            (3.0, "c".to_owned()),
            (1.0, "a".to_owned()),
            (2.0, "b".to_owned()),
        ];
        assert_eq!(evict(live.clone(), 3), ["a"]);
        assert_eq!(evict(live.clone(), 2), ["a", "b"]);
        assert_eq!(evict(live.clone(), 4), Vec::<String>::new());
        assert_eq!(evict(live, 1), ["a", "b", "c"]);
        assert_eq!(
            prune_every(Duration::from_secs(30)),
            Duration::from_secs(30)
        );
        assert_eq!(
            prune_every(Duration::from_secs(43200)),
            Duration::from_secs(60)
        );
        assert_eq!(
            prune_every(Duration::from_millis(10)),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn a_user_holds_at_most_the_bound_and_the_oldest_goes() {
        let d = tempfile::tempdir().unwrap();
        let store = TokenStore::with_max_per_user(d.path().join("tokens"), 3);
        let made: Vec<Token> = (0..5)
            .map(|i| {
                store
                    .create("alice", "file", 1000.0 + f64::from(i), 60.0)
                    .unwrap()
            })
            .collect();
        let bob = store.create("bob", "file", 1000.0, 60.0).unwrap();
        assert_eq!(store.count_for("alice", 1010.0), 3);
        for t in &made[..2] {
            assert_eq!(store.get(&t.token, 1010.0), None, "the oldest went");
        }
        for t in &made[2..] {
            assert!(store.get(&t.token, 1010.0).is_some());
        }
        assert!(
            store.get(&bob.token, 1010.0).is_some(),
            "other users keep theirs"
        );
        let files = std::fs::read_dir(d.path().join("tokens")).unwrap().count();
        assert_eq!(files, 4);
        // A restarted store reads the bound's state from the directory.
        let again = TokenStore::with_max_per_user(d.path().join("tokens"), 3);
        again.create("alice", "file", 1020.0, 60.0).unwrap();
        assert_eq!(again.get(&made[2].token, 1021.0), None);
        assert_eq!(again.count_for("alice", 1021.0), 3);
    }

    #[tokio::test]
    async fn the_sweep_runs_until_the_server_is_gone() {
        let d = tempfile::tempdir().unwrap();
        let store = TokenStore::new(d.path().join("tokens"));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        for _ in 0..20 {
            store.create("alice", "file", now - 100.0, 10.0).unwrap();
        }
        let live = store.create("alice", "file", now, 3600.0).unwrap();
        let alive = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let a = alive.clone();
        let task = tokio::spawn(prune_periodically(
            store.clone(),
            Duration::from_millis(50),
            move || a.load(std::sync::atomic::Ordering::Relaxed),
        ));
        let dir = d.path().join("tokens");
        let count = || std::fs::read_dir(&dir).unwrap().count();
        for _ in 0..400 {
            if count() == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(
            count(),
            1,
            "the expired tokens were swept without a restart"
        );
        assert!(store.get(&live.token, now + 1.0).is_some());
        alive.store(false, std::sync::atomic::Ordering::Relaxed);
        tokio::time::timeout(Duration::from_secs(20), task)
            .await
            .expect("the sweep ends with the server")
            .unwrap();
    }
}
