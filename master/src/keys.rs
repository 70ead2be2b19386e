//! Minion keys with Salt's four states and directory layout under `pki_dir`:
//! `minions` (accepted), `minions_pre` (pending), `minions_rejected`, `minions_denied`.
//!
//! A minion's key is the public key of the certificate it connects with. The rules are Salt's:
//! an unknown key is pending until accepted (or accepted at once by `auto_accept` or an
//! `autosign_file` glob); a rejected id stays out; a key that differs from the accepted one for
//! the same id is denied, never silently accepted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tokio::sync::broadcast;

use saltq_semantics::python::fnmatch;
use saltq_transport::Issuer;
use saltq_transport::pki::{self, fingerprint_spki, spki_from_pem};

/// Salt's key states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KeyState {
    /// `minions`.
    Accepted,
    /// `minions_pre`.
    Pending,
    /// `minions_rejected`.
    Rejected,
    /// `minions_denied`.
    Denied,
}

impl KeyState {
    /// All states, in salt-key's listing order.
    pub const ALL: [KeyState; 4] = [
        KeyState::Accepted,
        KeyState::Pending,
        KeyState::Rejected,
        KeyState::Denied,
    ];

    /// The state's name in metrics.
    pub fn name(self) -> &'static str {
        match self {
            KeyState::Accepted => "accepted",
            KeyState::Pending => "pending",
            KeyState::Rejected => "rejected",
            KeyState::Denied => "denied",
        }
    }

    /// The directory name under `pki_dir`.
    pub fn dir(self) -> &'static str {
        match self {
            KeyState::Accepted => "minions",
            KeyState::Pending => "minions_pre",
            KeyState::Rejected => "minions_rejected",
            KeyState::Denied => "minions_denied",
        }
    }
}

/// What happened when a minion presented its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Accepted: the minion may subscribe, return and fire events.
    Accepted,
    /// Waiting for `saltq key -a`.
    Pending,
    /// Its id is rejected.
    Rejected,
    /// Its key differs from the one on record.
    Denied,
}

impl Admission {
    /// Salt's `act` in `salt/auth` events.
    pub fn act(self) -> &'static str {
        match self {
            Admission::Accepted => "accept",
            Admission::Pending => "pend",
            Admission::Rejected => "reject",
            Admission::Denied => "denied",
        }
    }
}

/// Policy for new keys.
#[derive(Debug, Clone)]
pub struct KeyPolicy {
    /// Salt's `auto_accept`.
    pub auto_accept: bool,
    /// Salt's `open_mode`: no checks, the presented key is accepted (replacing the accepted
    /// one), whatever was rejected, denied or pending.
    pub open_mode: bool,
    /// Salt's `autosign_file`.
    pub autosign_file: Option<PathBuf>,
    /// Accept certificates issued by a trusted CA without the pending step.
    pub accept_ca_signed: bool,
}

/// Errors reading or changing keys.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// A key file could not be read, written, moved or removed.
    #[error("key store {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The minion id cannot be a key file name.
    #[error("invalid minion id {0:?}: ids may not be empty, '.', '..' or contain '/' or NUL")]
    InvalidId(String),
    /// A PEM write failed.
    #[error(transparent)]
    Pki(#[from] pki::PkiError),
}

/// The key directories, mirrored in memory (the master is their only writer).
pub struct KeyStore {
    dir: PathBuf,
    policy: KeyPolicy,
    keys: Mutex<BTreeMap<(KeyState, String), String>>,
    /// Every change, for whoever must react: the subscription of a minion whose key is no
    /// longer accepted is closed; in a cluster, the other replicas learn of it.
    changes: broadcast::Sender<KeyChange>,
}

/// One change to the key set: `id`'s key entered (`added`) or left `state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyChange {
    /// The minion.
    pub id: String,
    /// The state its key entered or left.
    pub state: KeyState,
    /// Entered (true) or left (false).
    pub added: bool,
    /// Copied from another replica of a cluster ([`KeyStore::mirror`]), not decided here.
    pub mirrored: bool,
}

fn valid_id(id: &str) -> bool {
    !(id.is_empty() || id == "." || id == ".." || id.contains('/') || id.contains('\0'))
}

fn same_key(a: &str, b: &str) -> bool {
    // Every request of a minion is checked against its stored key, so the usual case (the
    // very text stored) must not decode both keys each time.
    if a.trim() == b.trim() {
        return true;
    }
    match (spki_from_pem(a), spki_from_pem(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a.trim() == b.trim(),
    }
}

/// Not rejected, and accepted with this very key: admitted without any change.
fn admitted(keys: &BTreeMap<(KeyState, String), String>, id: &str, pem: &str) -> bool {
    let get = |s: KeyState| keys.get(&(s, id.to_owned()));
    get(KeyState::Rejected).is_none()
        && get(KeyState::Accepted).is_some_and(|accepted| same_key(accepted, pem))
}

impl KeyStore {
    /// Opens (and creates) the key directories under `pki_dir`.
    pub fn open(pki_dir: &Path, policy: KeyPolicy) -> Result<KeyStore, KeyError> {
        let mut keys = BTreeMap::new();
        for state in KeyState::ALL {
            let d = pki_dir.join(state.dir());
            std::fs::create_dir_all(&d).map_err(|source| KeyError::Io {
                path: d.clone(),
                source,
            })?;
            let entries = std::fs::read_dir(&d).map_err(|source| KeyError::Io {
                path: d.clone(),
                source,
            })?;
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.ends_with(".tmp") || !e.path().is_file() {
                    continue;
                }
                match std::fs::read_to_string(e.path()) {
                    // An empty file: the master stopped between writing a key and syncing it
                    // (before the minion was answered); the minion will present its key again.
                    Ok(pem) if pem.trim().is_empty() => {
                        tracing::warn!(
                            "ignoring empty key file {}: the minion will be admitted again",
                            e.path().display()
                        );
                    }
                    Ok(pem) => {
                        keys.insert((state, name), pem);
                    }
                    Err(_) => {}
                }
            }
        }
        Ok(KeyStore {
            dir: pki_dir.to_path_buf(),
            policy,
            keys: Mutex::new(keys),
            changes: broadcast::channel(1024).0,
        })
    }

    /// Changes to the key set from now on.
    pub fn changes(&self) -> broadcast::Receiver<KeyChange> {
        self.changes.subscribe()
    }

    fn changed(&self, id: &str, state: KeyState, added: bool) {
        // Nobody listening is not an error.
        let _ = self.changes.send(KeyChange {
            id: id.to_owned(),
            state,
            added,
            mirrored: false,
        });
    }

    /// `id`'s keys, by state.
    pub fn entries(&self, id: &str) -> Vec<(KeyState, String)> {
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        KeyState::ALL
            .into_iter()
            .filter_map(|s| keys.get(&(s, id.to_owned())).map(|pem| (s, pem.clone())))
            .collect()
    }

    /// Every key: `(state, id, pem)`.
    pub fn all(&self) -> Vec<(KeyState, String, String)> {
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        keys.iter()
            .map(|((s, id), pem)| (*s, id.clone(), pem.clone()))
            .collect()
    }

    /// Makes `id`'s keys exactly `entries`, as another replica of the cluster decided them;
    /// the changes are announced with `mirrored` set (so the subscription of a minion whose
    /// key left `accepted` is closed here too).
    pub fn mirror(&self, id: &str, entries: &[(KeyState, String)]) -> Result<(), KeyError> {
        if !valid_id(id) {
            return Err(KeyError::InvalidId(id.to_owned()));
        }
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let mut announce = Vec::new();
        for state in KeyState::ALL {
            let want = entries.iter().find(|(s, _)| *s == state).map(|(_, p)| p);
            let have = keys.get(&(state, id.to_owned()));
            match (have, want) {
                (Some(h), Some(w)) if h == w => {}
                (_, Some(w)) => {
                    pki::write_public(&self.path(state, id), w)?;
                    keys.insert((state, id.to_owned()), w.clone());
                    announce.push((state, true));
                }
                (Some(_), None) => {
                    let p = self.path(state, id);
                    match std::fs::remove_file(&p) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(source) => return Err(KeyError::Io { path: p, source }),
                    }
                    keys.remove(&(state, id.to_owned()));
                    announce.push((state, false));
                }
                (None, None) => {}
            }
        }
        drop(keys);
        for (state, added) in announce {
            let _ = self.changes.send(KeyChange {
                id: id.to_owned(),
                state,
                added,
                mirrored: true,
            });
        }
        Ok(())
    }

    fn path(&self, state: KeyState, id: &str) -> PathBuf {
        self.dir.join(state.dir()).join(id)
    }

    fn put(
        &self,
        keys: &mut BTreeMap<(KeyState, String), String>,
        state: KeyState,
        id: &str,
        pem: &str,
    ) -> Result<(), KeyError> {
        pki::write_public(&self.path(state, id), pem)?;
        keys.insert((state, id.to_owned()), pem.to_owned());
        self.changed(id, state, true);
        Ok(())
    }

    /// [`KeyStore::put`] whose file the caller syncs ([`pki::sync_file`]) after the lock.
    fn put_unsynced(
        &self,
        keys: &mut BTreeMap<(KeyState, String), String>,
        state: KeyState,
        id: &str,
        pem: &str,
        written: &mut Vec<PathBuf>,
    ) -> Result<(), KeyError> {
        let path = self.path(state, id);
        pki::write_public_unsynced(&path, pem)?;
        keys.insert((state, id.to_owned()), pem.to_owned());
        written.push(path);
        self.changed(id, state, true);
        Ok(())
    }

    fn remove(
        &self,
        keys: &mut BTreeMap<(KeyState, String), String>,
        state: KeyState,
        id: &str,
    ) -> Result<(), KeyError> {
        let p = self.path(state, id);
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(KeyError::Io { path: p, source }),
        }
        if keys.remove(&(state, id.to_owned())).is_some() {
            self.changed(id, state, false);
        }
        Ok(())
    }

    fn autosigned(&self, id: &str) -> bool {
        let Some(f) = &self.policy.autosign_file else {
            return false;
        };
        std::fs::read_to_string(f)
            .map(|text| {
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .any(|glob| fnmatch(id, glob))
            })
            .unwrap_or(false)
    }

    /// Decides whether a minion presenting `pem` may in, recording new keys as Salt does.
    pub fn admit(&self, id: &str, pem: &str, issuer: Issuer) -> Result<Admission, KeyError> {
        if !valid_id(id) {
            return Err(KeyError::InvalidId(id.to_owned()));
        }
        // Key files written here are synced after the lock is released: a fleet's first start
        // writes thousands, and syncing each under the lock made them wait for the disk one
        // after another. The minion is answered only once its file is durable.
        let mut written = Vec::new();
        let admission = self.admit_locked(id, pem, issuer, &mut written)?;
        for path in &written {
            pki::sync_file(path)?;
        }
        Ok(admission)
    }

    /// Whether `admit` would answer Accepted without writing anything: the usual case for
    /// every request of a connected minion, decided without waiting for the disk.
    pub fn is_admitted(&self, id: &str, pem: &str) -> bool {
        admitted(
            &self.keys.lock().unwrap_or_else(|e| e.into_inner()),
            id,
            pem,
        )
    }

    fn admit_locked(
        &self,
        id: &str,
        pem: &str,
        issuer: Issuer,
        written: &mut Vec<PathBuf>,
    ) -> Result<Admission, KeyError> {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if admitted(&keys, id, pem) {
            return Ok(Admission::Accepted);
        }
        if self.policy.open_mode {
            // Salt's open mode: "nuts to checks and overwrite whatever is there". The key is
            // accepted as presented, replacing a changed one; a rejected, denied or pending
            // entry of the id goes (Salt skips those checks; here they would keep the key out).
            if keys.contains_key(&(KeyState::Accepted, id.to_owned())) {
                tracing::info!(%id, "open_mode: the minion presented another key; it replaces the accepted one");
            }
            for other in [KeyState::Rejected, KeyState::Denied, KeyState::Pending] {
                self.remove(&mut keys, other, id)?;
            }
            self.put_unsynced(&mut keys, KeyState::Accepted, id, pem, written)?;
            return Ok(Admission::Accepted);
        }
        let get = |keys: &BTreeMap<(KeyState, String), String>, s: KeyState| {
            keys.get(&(s, id.to_owned())).cloned()
        };
        if get(&keys, KeyState::Rejected).is_some() {
            return Ok(Admission::Rejected);
        }
        let ca_vouched = issuer != Issuer::SelfSigned && self.policy.accept_ca_signed;
        if get(&keys, KeyState::Accepted).is_some() {
            // Accepted with another key than the one presented.
            if ca_vouched {
                // A CA-issued certificate may carry a new key (rotation): the CA vouches for it.
                self.put_unsynced(&mut keys, KeyState::Accepted, id, pem, written)?;
                return Ok(Admission::Accepted);
            }
            self.put_unsynced(&mut keys, KeyState::Denied, id, pem, written)?;
            return Ok(Admission::Denied);
        }
        let auto = ca_vouched || self.policy.auto_accept || self.autosigned(id);
        if let Some(pending) = get(&keys, KeyState::Pending) {
            if !same_key(&pending, pem) {
                self.put_unsynced(&mut keys, KeyState::Denied, id, pem, written)?;
                return Ok(Admission::Denied);
            }
            if auto {
                self.remove(&mut keys, KeyState::Pending, id)?;
                self.put_unsynced(&mut keys, KeyState::Accepted, id, pem, written)?;
                return Ok(Admission::Accepted);
            }
            return Ok(Admission::Pending);
        }
        if auto {
            self.put_unsynced(&mut keys, KeyState::Accepted, id, pem, written)?;
            return Ok(Admission::Accepted);
        }
        self.put_unsynced(&mut keys, KeyState::Pending, id, pem, written)?;
        Ok(Admission::Pending)
    }

    /// Ids per state, sorted.
    pub fn list(&self) -> BTreeMap<KeyState, Vec<String>> {
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: BTreeMap<KeyState, Vec<String>> =
            KeyState::ALL.iter().map(|s| (*s, Vec::new())).collect();
        for (state, id) in keys.keys() {
            out.entry(*state).or_default().push(id.clone());
        }
        out
    }

    /// How many keys each state holds, every state listed (`/metrics`: no copy of the ids).
    pub fn counts(&self) -> Vec<(KeyState, usize)> {
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let mut n: BTreeMap<KeyState, usize> = KeyState::ALL.iter().map(|s| (*s, 0)).collect();
        for (state, _) in keys.keys() {
            *n.entry(*state).or_default() += 1;
        }
        n.into_iter().collect()
    }

    /// Accepted ids.
    pub fn accepted(&self) -> Vec<String> {
        self.list().remove(&KeyState::Accepted).unwrap_or_default()
    }

    /// Fingerprints of keys whose id matches `glob`, per state.
    pub fn fingerprints(&self, glob: &str) -> BTreeMap<KeyState, BTreeMap<String, String>> {
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: BTreeMap<KeyState, BTreeMap<String, String>> = BTreeMap::new();
        for ((state, id), pem) in keys.iter() {
            if fnmatch(id, glob) {
                let fp = spki_from_pem(pem)
                    .map(|d| fingerprint_spki(&d))
                    .unwrap_or_else(|| "unreadable key".into());
                out.entry(*state).or_default().insert(id.clone(), fp);
            }
        }
        out
    }

    /// Public keys (PEM) whose id matches `glob`, per state.
    pub fn public_keys(&self, glob: &str) -> BTreeMap<KeyState, BTreeMap<String, String>> {
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: BTreeMap<KeyState, BTreeMap<String, String>> = BTreeMap::new();
        for ((state, id), pem) in keys.iter() {
            if fnmatch(id, glob) {
                out.entry(*state)
                    .or_default()
                    .insert(id.clone(), pem.clone());
            }
        }
        out
    }

    /// Moves keys whose id matches `glob` from any of `from` into `to`; returns what moved.
    pub fn transition(
        &self,
        glob: &str,
        from: &[KeyState],
        to: KeyState,
    ) -> Result<Vec<(KeyState, String)>, KeyError> {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let moving: Vec<(KeyState, String, String)> = keys
            .iter()
            .filter(|((s, id), _)| from.contains(s) && fnmatch(id, glob))
            .map(|((s, id), pem)| (*s, id.clone(), pem.clone()))
            .collect();
        let mut moved = Vec::new();
        for (state, id, pem) in moving {
            self.remove(&mut keys, state, &id)?;
            self.put(&mut keys, to, &id, &pem)?;
            moved.push((state, id));
        }
        Ok(moved)
    }

    /// Records `pem` as `id`'s accepted key (Salt's `key.gen_accept`): false, and nothing
    /// written, when `id` already has an accepted key and not `force`.
    pub fn put_accepted(&self, id: &str, pem: &str, force: bool) -> Result<bool, KeyError> {
        if !valid_id(id) {
            return Err(KeyError::InvalidId(id.to_owned()));
        }
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if !force && keys.contains_key(&(KeyState::Accepted, id.to_owned())) {
            return Ok(false);
        }
        self.put(&mut keys, KeyState::Accepted, id, pem)?;
        Ok(true)
    }

    /// Deletes keys whose id matches `glob`, in every state; returns what went.
    pub fn delete(&self, glob: &str) -> Result<Vec<(KeyState, String)>, KeyError> {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let going: Vec<(KeyState, String)> = keys
            .keys()
            .filter(|(_, id)| fnmatch(id, glob))
            .cloned()
            .collect();
        for (state, id) in &going {
            self.remove(&mut keys, *state, id)?;
        }
        Ok(going)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &Path, policy: KeyPolicy) -> KeyStore {
        KeyStore::open(dir, policy).unwrap()
    }

    fn key(id: &str) -> String {
        let (cert, _) = pki::self_signed_minion(id, None).unwrap();
        let der = rustls_pem_first(&cert);
        pki::public_key_pem(&der).unwrap()
    }

    fn rustls_pem_first(pem: &str) -> rustls::pki_types::CertificateDer<'static> {
        use rustls::pki_types::pem::PemObject;
        rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes())
            .next()
            .unwrap()
            .unwrap()
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("saltq-keys-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    const MANUAL: KeyPolicy = KeyPolicy {
        auto_accept: false,
        open_mode: false,
        autosign_file: None,
        accept_ca_signed: true,
    };

    #[test]
    fn pending_then_accepted_then_changed_key_denied() {
        let d = tmp("flow");
        let ks = store(&d, MANUAL);
        let k1 = key("web1");
        assert_eq!(
            ks.admit("web1", &k1, Issuer::SelfSigned).unwrap(),
            Admission::Pending
        );
        assert!(d.join("minions_pre/web1").is_file());
        assert_eq!(
            ks.admit("web1", &k1, Issuer::SelfSigned).unwrap(),
            Admission::Pending
        );
        let moved = ks
            .transition("web*", &[KeyState::Pending], KeyState::Accepted)
            .unwrap();
        assert_eq!(moved, vec![(KeyState::Pending, "web1".to_owned())]);
        assert_eq!(
            ks.admit("web1", &k1, Issuer::SelfSigned).unwrap(),
            Admission::Accepted
        );
        let k2 = key("web1");
        assert_eq!(
            ks.admit("web1", &k2, Issuer::SelfSigned).unwrap(),
            Admission::Denied
        );
        assert!(d.join("minions_denied/web1").is_file());
        // The accepted key still works; the impostor never does.
        assert_eq!(
            ks.admit("web1", &k1, Issuer::SelfSigned).unwrap(),
            Admission::Accepted
        );
        assert_eq!(
            ks.admit("web1", &k2, Issuer::SelfSigned).unwrap(),
            Admission::Denied
        );
        // State survives a restart.
        let again = store(&d, MANUAL);
        assert_eq!(
            again.admit("web1", &k1, Issuer::SelfSigned).unwrap(),
            Admission::Accepted
        );
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn auto_accept_autosign_reject_and_ca() {
        let d = tmp("policy");
        std::fs::create_dir_all(&d).unwrap();
        let sign = d.join("autosign");
        std::fs::write(&sign, "# comment\ndb*\n").unwrap();
        let ks = store(
            &d,
            KeyPolicy {
                auto_accept: false,
                open_mode: false,
                autosign_file: Some(sign),
                accept_ca_signed: false,
            },
        );
        assert_eq!(
            ks.admit("db1", &key("db1"), Issuer::SelfSigned).unwrap(),
            Admission::Accepted
        );
        assert_eq!(
            ks.admit("web1", &key("web1"), Issuer::SelfSigned).unwrap(),
            Admission::Pending
        );
        ks.transition("web1", &[KeyState::Pending], KeyState::Rejected)
            .unwrap();
        assert_eq!(
            ks.admit("web1", &key("web1"), Issuer::SelfSigned).unwrap(),
            Admission::Rejected
        );
        // accept_ca_signed off: a CA-issued minion certificate still waits.
        assert_eq!(
            ks.admit("ca1", &key("ca1"), Issuer::MasterCa).unwrap(),
            Admission::Pending
        );
        assert!(ks.admit("../x", &key("x"), Issuer::SelfSigned).is_err());
        let ks2 = store(
            &tmp("auto"),
            KeyPolicy {
                auto_accept: true,
                ..MANUAL
            },
        );
        assert_eq!(
            ks2.admit("any", &key("any"), Issuer::SelfSigned).unwrap(),
            Admission::Accepted
        );
        assert_eq!(
            ks2.admit("ca2", &key("ca2"), Issuer::ExternalCa).unwrap(),
            Admission::Accepted
        );
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn open_mode_accepts_any_key_and_replaces_a_changed_one() {
        let d = tmp("open");
        let manual = store(&d, MANUAL);
        let (k1, k2) = (key("web1"), key("web1"));
        manual.admit("web1", &k1, Issuer::SelfSigned).unwrap();
        manual
            .transition("web1", &[KeyState::Pending], KeyState::Rejected)
            .unwrap();
        // The same keys under open_mode (a master restarted with it): the rejected id is
        // accepted with the key it presents, then a changed key replaces it.
        let open = store(
            &d,
            KeyPolicy {
                open_mode: true,
                ..MANUAL
            },
        );
        assert_eq!(
            open.admit("web1", &k1, Issuer::SelfSigned).unwrap(),
            Admission::Accepted
        );
        assert_eq!(
            open.admit("web1", &k2, Issuer::SelfSigned).unwrap(),
            Admission::Accepted
        );
        assert!(open.is_admitted("web1", &k2) && !open.is_admitted("web1", &k1));
        assert!(!d.join("minions_rejected/web1").exists());
        assert_eq!(std::fs::read_to_string(d.join("minions/web1")).unwrap(), k2);
        // A new id is accepted at once, with no pending step.
        let k3 = key("db1");
        assert_eq!(
            open.admit("db1", &k3, Issuer::SelfSigned).unwrap(),
            Admission::Accepted
        );
        assert!(!d.join("minions_pre/db1").exists());
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn keys_made_on_the_master_are_accepted_once_unless_forced() {
        let dir = tmp("genaccept");
        let ks = store(&dir, MANUAL);
        let (k1, k2) = (key("new1"), key("new1"));
        assert!(ks.put_accepted("new1", &k1, false).unwrap());
        assert!(ks.is_admitted("new1", &k1));
        assert!(
            !ks.put_accepted("new1", &k2, false).unwrap(),
            "an accepted id keeps its key"
        );
        assert!(ks.is_admitted("new1", &k1) && !ks.is_admitted("new1", &k2));
        assert!(ks.put_accepted("new1", &k2, true).unwrap());
        assert!(ks.is_admitted("new1", &k2) && !ks.is_admitted("new1", &k1));
        assert_eq!(
            std::fs::read_to_string(dir.join("minions/new1")).unwrap(),
            k2
        );
        assert!(matches!(
            ks.put_accepted("../x", &k1, false),
            Err(KeyError::InvalidId(_))
        ));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn is_admitted_only_for_the_accepted_key_and_empty_files_are_ignored() {
        let d = tmp("admitted");
        let auto = KeyPolicy {
            auto_accept: true,
            ..MANUAL
        };
        let ks = store(&d, auto);
        let k1 = key("web1");
        assert!(!ks.is_admitted("web1", &k1), "unknown before admission");
        assert_eq!(
            ks.admit("web1", &k1, Issuer::SelfSigned).unwrap(),
            Admission::Accepted
        );
        assert!(ks.is_admitted("web1", &k1));
        assert_eq!(std::fs::read_to_string(d.join("minions/web1")).unwrap(), k1);
        assert!(!ks.is_admitted("web1", &key("web1")), "another key");
        assert!(!ks.is_admitted("web2", &k1), "another id");
        ks.transition("web1", &[KeyState::Accepted], KeyState::Rejected)
            .unwrap();
        assert!(!ks.is_admitted("web1", &k1), "rejected");

        // A key file left empty by a crash before its sync is not a key.
        std::fs::write(d.join("minions/db1"), "").unwrap();
        let again = store(&d, MANUAL);
        assert!(!again.list()[&KeyState::Accepted].contains(&"db1".to_owned()));
    }
}
