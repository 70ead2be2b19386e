//! `external_auth`: which backend checks a user's password, and what the user may then do.
//!
//! Salt's format: `external_auth: {file: {^filename: ..., alice: ['test.*', '@runner'], '*':
//! [...], 'ops%': [...]}}`. Keys starting with `^` are the backend's options; the others are user
//! names, `*` (every user of the backend) or `group%` (users in a system group). The `file`
//! backend is Salt's `salt/auth/file.py`: a `text` file (`^field_separator`, `^username_field`,
//! `^password_field`, `^hashtype` plaintext or a hashlib digest) or an `htpasswd` file (bcrypt,
//! `{SHA}`, SHA-256/512-crypt, or plain text as passlib's default context). The `pam` backend
//! asks the system's PAM ([`crate::pam`]); `rest` POSTs the credentials to a URL
//! ([`crate::rest`]); `auto` (Salt's `salt/auth/auto.py`, "not intended
//! for production use") accepts every password of every user.
//!
//! Only `pam` knows a user's system groups (Salt's `pam.groups`), so `group%` entries apply to
//! pam users only, as in Salt.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;
use sha2::Digest;

/// A `file` backend's options.
#[derive(Debug, Clone)]
pub struct FileAuth {
    /// `^filename`.
    pub filename: PathBuf,
    /// `^filetype`: text or htpasswd.
    pub filetype: FileType,
    /// `^hashtype` of a text file: plaintext, md5, sha1, sha224, sha256, sha384, sha512.
    pub hashtype: String,
    /// `^field_separator` (default `:`).
    pub field_separator: String,
    /// `^username_field`, from 1.
    pub username_field: usize,
    /// `^password_field`, from 1.
    pub password_field: usize,
}

/// The kinds of password file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    /// `user:password` lines, the password plain or a hex digest.
    Text,
    /// Apache's htpasswd.
    Htpasswd,
}

/// One backend: how it checks passwords, and its users' permissions.
#[derive(Debug, Clone)]
pub struct Eauth {
    /// The password check.
    pub check: Check,
    /// Users, `*` and `group%` → permission entries (Salt's format, kept as written).
    pub users: BTreeMap<String, Vec<Value>>,
}

/// How a backend checks a password.
#[derive(Debug, Clone)]
pub enum Check {
    /// Salt's `file`.
    File(FileAuth),
    /// Salt's `pam`: the system's PAM.
    Pam(crate::pam::PamAuth),
    /// Salt's `auto`: every password of every user is accepted (for tests only).
    Auto,
    /// Salt's `rest`: a form POSTed to `^url` ([`crate::rest`]).
    Rest(crate::rest::RestAuth),
}

/// Every configured backend, by name.
#[derive(Debug, Clone, Default)]
pub struct ExternalAuth {
    /// Backends by eauth name.
    pub backends: BTreeMap<String, Eauth>,
}

const HASHTYPES: &[&str] = &[
    "plaintext",
    "md5",
    "sha1",
    "sha224",
    "sha256",
    "sha384",
    "sha512",
];

fn opt_str(opts: &serde_json::Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match opts.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(format!("file: {key} must be a string, not {other}")),
    }
}

fn field(
    opts: &serde_json::Map<String, Value>,
    key: &str,
    default: usize,
) -> Result<usize, String> {
    match opt_str(opts, key)? {
        None => Ok(default),
        Some(s) => match s.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!(
                "file: {key} must be a field number from 1, not {s:?}"
            )),
        },
    }
}

impl FileAuth {
    fn from_opts(opts: &serde_json::Map<String, Value>) -> Result<FileAuth, String> {
        let filename =
            opt_str(opts, "^filename")?.ok_or("file: ^filename is required (the password file)")?;
        let filetype = match opt_str(opts, "^filetype")?.as_deref().unwrap_or("text") {
            "text" => FileType::Text,
            "htpasswd" => FileType::Htpasswd,
            other => {
                return Err(format!(
                    "file: ^filetype {other:?} is not served by saltq: expected text or htpasswd"
                ));
            }
        };
        let hashtype = opt_str(opts, "^hashtype")?.unwrap_or_else(|| "plaintext".into());
        if !HASHTYPES.contains(&hashtype.as_str()) {
            return Err(format!(
                "file: ^hashtype {hashtype:?} is unknown: expected one of {}",
                HASHTYPES.join(", ")
            ));
        }
        let field_separator = opt_str(opts, "^field_separator")?.unwrap_or_else(|| ":".into());
        if field_separator.is_empty() {
            return Err("file: ^field_separator must not be empty".into());
        }
        Ok(FileAuth {
            filename: filename.into(),
            filetype,
            hashtype,
            field_separator,
            username_field: field(opts, "^username_field", 1)?,
            password_field: field(opts, "^password_field", 2)?,
        })
    }

    /// Whether `password` is `user`'s. An unreadable file is logged and refuses everyone.
    pub fn verify(&self, user: &str, password: &str) -> bool {
        let text = match std::fs::read_to_string(&self.filename) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(
                    "eauth file: cannot read ^filename {}: {e}",
                    self.filename.display()
                );
                return false;
            }
        };
        match self.filetype {
            FileType::Text => self.verify_text(&text, user, password),
            FileType::Htpasswd => verify_htpasswd(&text, user, password),
        }
    }

    /// Salt's `_text`: the first line naming the user decides.
    fn verify_text(&self, text: &str, user: &str, password: &str) -> bool {
        for line in text.lines() {
            let fields: Vec<&str> = line.trim().split(self.field_separator.as_str()).collect();
            let (Some(name), Some(stored)) = (
                fields.get(self.username_field - 1),
                fields.get(self.password_field - 1),
            ) else {
                tracing::error!(
                    "eauth file: a line of {} has no field {} or {}",
                    self.filename.display(),
                    self.username_field,
                    self.password_field
                );
                return false;
            };
            if *name == user {
                return match self.hashtype.as_str() {
                    "plaintext" => constant_eq(stored.as_bytes(), password.as_bytes()),
                    h => constant_eq(stored.as_bytes(), digest(h, password).as_bytes()),
                };
            }
        }
        false
    }
}

/// The hex digest of `text` with hashlib's `name`.
pub fn digest(name: &str, text: &str) -> String {
    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }
    let t = text.as_bytes();
    match name {
        "md5" => hex(&md5::Md5::digest(t)),
        "sha1" => hex(&sha1::Sha1::digest(t)),
        "sha224" => hex(&sha2::Sha224::digest(t)),
        "sha256" => hex(&sha2::Sha256::digest(t)),
        "sha384" => hex(&sha2::Sha384::digest(t)),
        _ => hex(&sha2::Sha512::digest(t)),
    }
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Checks `password` against `user`'s line of an htpasswd file.
pub fn verify_htpasswd(text: &str, user: &str, password: &str) -> bool {
    let Some(hash) = text.lines().find_map(|l| {
        let (name, hash) = l.trim_end().split_once(':')?;
        (name == user).then_some(hash)
    }) else {
        return false;
    };
    if hash.starts_with("$2") {
        return bcrypt::verify(password, hash).unwrap_or(false);
    }
    if let Some(b64) = hash.strip_prefix("{SHA}") {
        use base64::Engine;
        let want = base64::engine::general_purpose::STANDARD.encode(sha1::Sha1::digest(password));
        return constant_eq(b64.as_bytes(), want.as_bytes());
    }
    if hash.starts_with("$5$") || hash.starts_with("$6$") {
        return sha_crypt_matches(password, hash);
    }
    if hash.starts_with("$apr1$") || hash.starts_with("$1$") {
        tracing::error!(
            "eauth file: {user}'s htpasswd entry is MD5-crypt, which saltq does not check: use bcrypt (htpasswd -B)"
        );
        return false;
    }
    constant_eq(hash.as_bytes(), password.as_bytes())
}

/// Checks a SHA-256-crypt (`$5$`) or SHA-512-crypt (`$6$`) hash: `$id$[rounds=N$]salt$hash`.
fn sha_crypt_matches(password: &str, hash: &str) -> bool {
    let parts: Vec<&str> = hash.split('$').collect();
    let (id, rounds, salt, want) = match parts.as_slice() {
        ["", id, r, salt, want] if r.starts_with("rounds=") => {
            let Ok(n) = r["rounds=".len()..].parse::<usize>() else {
                return false;
            };
            (*id, n, *salt, *want)
        }
        ["", id, salt, want] => (*id, 5000, *salt, *want),
        _ => return false,
    };
    let got = match id {
        "5" => sha_crypt::Sha256Params::new(rounds).ok().and_then(|p| {
            sha_crypt::sha256_crypt_b64(password.as_bytes(), salt.as_bytes(), &p).ok()
        }),
        _ => sha_crypt::Sha512Params::new(rounds).ok().and_then(|p| {
            sha_crypt::sha512_crypt_b64(password.as_bytes(), salt.as_bytes(), &p).ok()
        }),
    };
    got.is_some_and(|g| constant_eq(g.as_bytes(), want.as_bytes()))
}

impl ExternalAuth {
    /// Reads `external_auth`; `None` is no backend at all. `pam_service` is Salt's
    /// `auth.pam.service` (default `login`).
    pub fn from_value(
        v: Option<&Value>,
        pam_service: Option<&str>,
    ) -> Result<ExternalAuth, String> {
        let mut out = ExternalAuth::default();
        let Some(v) = v else { return Ok(out) };
        let Value::Object(map) = v else {
            return Err(format!("expected a mapping of eauth backends, not {v}"));
        };
        for (name, conf) in map {
            let Value::Object(conf) = conf else {
                return Err(format!("{name}: expected a mapping of users, not {conf}"));
            };
            let (opts, users): (serde_json::Map<_, _>, serde_json::Map<_, _>) = conf
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .partition(|(k, _)| k.starts_with('^'));
            let check = match name.as_str() {
                "file" => Check::File(FileAuth::from_opts(&opts)?),
                "rest" => {
                    let url = opt_str(&opts, "^url")?
                        .ok_or("rest: ^url is required (where the credentials are POSTed)")?;
                    if let Some(k) = opts.keys().find(|k| *k != "^url") {
                        return Err(format!("rest: takes ^url only, not {k}"));
                    }
                    Check::Rest(crate::rest::RestAuth { url })
                }
                "pam" | "auto" if !opts.is_empty() => {
                    let keys: Vec<&String> = opts.keys().collect();
                    return Err(format!("{name}: takes no ^ options, not {keys:?}"));
                }
                "pam" => Check::Pam(crate::pam::PamAuth {
                    service: pam_service
                        .unwrap_or(crate::pam::DEFAULT_SERVICE)
                        .to_owned(),
                }),
                "auto" => Check::Auto,
                other => {
                    return Err(format!(
                        "eauth backend {other:?} is not served by saltq: the backends are file, pam, rest and auto"
                    ));
                }
            };
            let mut perms = BTreeMap::new();
            for (user, entries) in users {
                let entries = match entries {
                    Value::Array(a) => a,
                    Value::Null => vec![],
                    other => {
                        return Err(format!(
                            "{name}: {user}: expected a list of permissions, not {other}"
                        ));
                    }
                };
                for e in &entries {
                    check_entry(e).map_err(|m| format!("{name}: {user}: {m}"))?;
                }
                perms.insert(user, entries);
            }
            out.backends.insert(
                name.clone(),
                Eauth {
                    check,
                    users: perms,
                },
            );
        }
        Ok(out)
    }

    /// Whether `password` is `user`'s in backend `eauth`; an unknown backend is a refusal.
    pub async fn authenticate(&self, eauth: &str, user: &str, password: &str) -> bool {
        self.authenticate_acl(eauth, user, password).await.is_some()
    }

    /// Checks `password` as [`Self::authenticate`] does: `None` is a refusal; `Some(acl)` an
    /// authenticated user, with the permissions the backend itself gives (Salt's `<eauth>.acl`,
    /// used instead of the config's entries for credentials sent with the request), or
    /// `Some(None)` when the config's entries apply ([`Self::perms`]). Only `rest` gives its
    /// own ([`crate::rest::merge_acl`]).
    pub async fn authenticate_acl(
        &self,
        eauth: &str,
        user: &str,
        password: &str,
    ) -> Option<Option<Vec<Value>>> {
        let Some(b) = self.backends.get(eauth) else {
            tracing::warn!("the eauth system {eauth:?} is not enabled");
            return None;
        };
        match &b.check {
            Check::File(f) => f.verify(user, password).then_some(None),
            Check::Pam(p) => p.verify(user, password).await.then_some(None),
            Check::Auto => Some(None),
            Check::Rest(r) => match r.fetch(user, password).await {
                Ok(answer) => Some(crate::rest::merge_acl(b.users.get(user), &answer)),
                Err(e) => {
                    tracing::warn!(user, "eauth rest: {e}");
                    None
                }
            },
        }
    }

    /// The permissions of `user` in `eauth` (Salt's `sum_permissions`): the user's own, then
    /// `*`'s, then those of each `group%` whose group the user is in.
    pub fn perms(&self, eauth: &str, user: &str, groups: &[String]) -> Vec<Value> {
        let Some(b) = self.backends.get(eauth) else {
            return vec![];
        };
        let mut out: Vec<Value> = b.users.get(user).cloned().unwrap_or_default();
        out.extend(b.users.get("*").cloned().unwrap_or_default());
        for g in groups {
            out.extend(b.users.get(&format!("{g}%")).cloned().unwrap_or_default());
        }
        out
    }

    /// Logs a warning when a backend lets anyone in (`auto`), once salt-api starts.
    pub fn warn_if_unsafe(&self) {
        if self
            .backends
            .values()
            .any(|b| matches!(b.check, Check::Auto))
        {
            tracing::warn!(
                "external_auth: the auto backend accepts any password for any user: it is meant for tests, never production"
            );
        }
    }

    /// Whether the user's system groups are to be looked up: the backend knows groups (only
    /// `pam` does, as in Salt) and names a `group%` entry.
    pub fn has_groups(&self, eauth: &str) -> bool {
        self.backends.get(eauth).is_some_and(|b| {
            matches!(b.check, Check::Pam(_)) && b.users.keys().any(|k| k.ends_with('%'))
        })
    }
}

/// Salt's `sorted_permissions`: strings first, sorted and deduplicated, then the rest.
pub fn sorted_permissions(perms: &[Value]) -> Vec<Value> {
    let mut strs: Vec<&str> = perms.iter().filter_map(Value::as_str).collect();
    strs.sort();
    strs.dedup();
    let mut rest: Vec<&Value> = Vec::new();
    for p in perms.iter().filter(|p| !p.is_string()) {
        if !rest.contains(&p) {
            rest.push(p);
        }
    }
    rest.sort_by_key(|v| v.to_string());
    strs.into_iter()
        .map(|s| Value::String(s.into()))
        .chain(rest.into_iter().cloned())
        .collect()
}

/// A permission entry must be a function regex, or a one-key mapping of a target (or
/// `@runner`/`@wheel`/`@jobs`/`@<module>`) to a list of conditions (see [`check_conditions`]).
pub(crate) fn check_entry(e: &Value) -> Result<(), String> {
    match e {
        Value::String(s) => check_regex(s),
        Value::Object(m) => {
            for (tgt, funs) in m {
                check_conditions(funs).map_err(|err| format!("{tgt}: {err}"))?;
            }
            Ok(())
        }
        other => Err(format!("{other} is not a permission entry")),
    }
}

fn check_regex(s: &str) -> Result<(), String> {
    regex::Regex::new(s)
        .map(|_| ())
        .map_err(|err| format!("{s:?} is not a regular expression: {err}"))
}

/// A target's conditions: a list of function regexes and one-key argument-restricted entries
/// `{function regex: {args: [regex or null, ...], kwargs: {name: regex or null}}}` (or a list
/// of such `{args, kwargs}` mappings, any of which may match), as Salt's `__fun_check` and
/// `__args_check` read them. Salt silently grants nothing for a malformed one; saltq refuses
/// the config, naming it.
pub fn check_conditions(funs: &Value) -> Result<(), String> {
    let Value::Array(funs) = funs else {
        return Err(format!("expected a list of functions, not {funs}"));
    };
    for f in funs {
        match f {
            Value::String(s) => check_regex(s)?,
            Value::Object(m) if m.len() == 1 => {
                for (fun, spec) in m {
                    check_regex(fun)?;
                    check_arg_spec(spec).map_err(|e| format!("{fun}: {e}"))?;
                }
            }
            Value::Object(_) => {
                return Err(format!(
                    "{f}: an argument-restricted entry names one function, {{fun: {{args: [...], kwargs: {{...}}}}}}"
                ));
            }
            other => return Err(format!("{other} is not a function or a mapping")),
        }
    }
    Ok(())
}

/// `{args: [...], kwargs: {...}}` or a list of them.
pub fn check_arg_spec(spec: &Value) -> Result<(), String> {
    let specs: Vec<&Value> = match spec {
        Value::Array(a) => a.iter().collect(),
        v => vec![v],
    };
    for s in specs {
        let Value::Object(m) = s else {
            return Err(format!(
                "expected {{args: [...], kwargs: {{...}}}} (or a list of them), not {s}"
            ));
        };
        for (k, v) in m {
            let ok = |c: &Value| match c {
                Value::Null => Ok(()),
                Value::String(r) => check_regex(r),
                other => Err(format!("{other} is not a regular expression or null")),
            };
            match (k.as_str(), v) {
                ("args", Value::Array(a)) => a.iter().try_for_each(ok)?,
                ("kwargs", Value::Object(kw)) => kw.values().try_for_each(ok)?,
                ("args", other) => return Err(format!("args must be a list, not {other}")),
                ("kwargs", other) => return Err(format!("kwargs must be a mapping, not {other}")),
                (other, _) => {
                    return Err(format!("unknown key {other:?}: expected args and kwargs"));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ea(dir: &std::path::Path, extra: &str, file: &str) -> ExternalAuth {
        let path = dir.join("users");
        std::fs::write(&path, file).unwrap();
        let yaml = format!(
            "file:\n  ^filename: {}\n{extra}  alice: ['test.*', '@runner']\n  '*': ['grains.items']\n  'ops%': ['@wheel']\n",
            path.display()
        );
        let v: Value = serde_yaml_ng::from_str(&yaml).unwrap();
        ExternalAuth::from_value(Some(&v), None).unwrap()
    }

    #[tokio::test]
    async fn text_files_plain_and_hashed() {
        let d = tempfile::tempdir().unwrap();
        let a = ea(d.path(), "", "alice:secret\nbob:other\n");
        assert!(a.authenticate("file", "alice", "secret").await);
        assert!(!a.authenticate("file", "alice", "Secret").await);
        assert!(!a.authenticate("file", "mallory", "secret").await);
        assert!(!a.authenticate("pam", "alice", "secret").await);
        let hashed = format!("x|alice|{}\n", digest("sha256", "pw"));
        let a = ea(
            d.path(),
            "  ^hashtype: sha256\n  ^field_separator: '|'\n  ^username_field: 2\n  ^password_field: 3\n",
            &hashed,
        );
        assert!(a.authenticate("file", "alice", "pw").await);
        assert!(!a.authenticate("file", "alice", "px").await);
    }

    #[test]
    fn htpasswd_schemes() {
        let bc = bcrypt::hash("b-pw", 4).unwrap();
        let sha = {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.encode(sha1::Sha1::digest(b"s-pw"))
        };
        let text = format!("carol:{bc}\ndave:{{SHA}}{sha}\nerin:plain\n");
        assert!(verify_htpasswd(&text, "carol", "b-pw"));
        assert!(!verify_htpasswd(&text, "carol", "x"));
        assert!(verify_htpasswd(&text, "dave", "s-pw"));
        assert!(!verify_htpasswd(&text, "dave", "x"));
        assert!(verify_htpasswd(&text, "erin", "plain"));
        assert!(!verify_htpasswd(&text, "frank", "plain"));
        // `openssl passwd -5 -salt saltsalt pw` and `-6`.
        let text = "g:$5$saltsalt$0rl.MZtoLLPP3X0Rdl8riRnphIcAXJY27/aOAyK2hB5\nh:$6$saltsalt$pauPrmdmG4BTE9h2HPmywiw152IFch6BJCEsaY6D.PLTfpV8sqvXwWdyfsgVgozkYH9B80bAip/08R2BPH2xk/\n";
        assert!(verify_htpasswd(text, "h", "pw"));
        assert!(verify_htpasswd(text, "g", "pw"));
        assert!(!verify_htpasswd(text, "g", "px"));
    }

    #[test]
    fn permissions_sum_user_star_and_groups() {
        let d = tempfile::tempdir().unwrap();
        let a = ea(d.path(), "", "alice:secret\n");
        assert_eq!(
            a.perms("file", "alice", &[]),
            vec![json!("test.*"), json!("@runner"), json!("grains.items")]
        );
        assert_eq!(
            a.perms("file", "bob", &["ops".into()]),
            vec![json!("grains.items"), json!("@wheel")]
        );
        // Only pam knows groups (Salt's `pam.groups`): a file user's group% entries are unused.
        assert!(!a.has_groups("file"));
        assert_eq!(
            sorted_permissions(&[json!("b"), json!({"x": ["y"]}), json!("a"), json!("b")]),
            vec![json!("a"), json!("b"), json!({"x": ["y"]})]
        );
    }

    #[test]
    fn bad_backends_are_named() {
        let v: Value = serde_yaml_ng::from_str("file: {alice: ['.*']}").unwrap();
        assert!(
            ExternalAuth::from_value(Some(&v), None)
                .unwrap_err()
                .contains("^filename")
        );
        let v: Value =
            serde_yaml_ng::from_str("file: {^filename: /x, ^filetype: htdigest}").unwrap();
        assert!(
            ExternalAuth::from_value(Some(&v), None)
                .unwrap_err()
                .contains("htdigest")
        );
        let v: Value = serde_yaml_ng::from_str("file: {^filename: /x, alice: ['(']}").unwrap();
        assert!(
            ExternalAuth::from_value(Some(&v), None)
                .unwrap_err()
                .contains("alice")
        );
        for (conf, says) in [
            ("rest: {alice: ['.*']}", "^url is required"),
            ("rest: {^url: 'http://x/', ^timeout: 3}", "^timeout"),
            ("ldap: {alice: ['.*']}", "file, pam, rest and auto"),
        ] {
            let v: Value = serde_yaml_ng::from_str(conf).unwrap();
            let e = ExternalAuth::from_value(Some(&v), None).unwrap_err();
            assert!(e.contains(says), "{conf}: {e}");
        }
    }

    /// The `rest` backend end to end against a server on loopback that accepts one password
    /// with Alcali's answer (`[]`): the user's own entry decides for credentials sent with a
    /// request; with no entry of their own, the config's other entries do.
    #[tokio::test]
    async fn rest_backend_authenticates_and_merges() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !String::from_utf8_lossy(&got).contains("password=") {
                    let n = s.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                let ok = String::from_utf8_lossy(&got).ends_with("password=tok3n");
                let reply: &[u8] = if ok {
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]"
                } else {
                    b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 12\r\n\r\nUnauthorized"
                };
                let _ = s.write_all(reply).await;
            }
        });
        let conf = format!(
            "rest: {{^url: 'http://{addr}/api/token/verify/', alice: ['.*', '@runner'], '*': ['test.ping']}}"
        );
        let v: Value = serde_yaml_ng::from_str(&conf).unwrap();
        let a = ExternalAuth::from_value(Some(&v), None).unwrap();
        assert_eq!(
            a.authenticate_acl("rest", "alice", "tok3n").await,
            Some(Some(vec![json!(".*"), json!("@runner")]))
        );
        assert_eq!(a.authenticate_acl("rest", "bob", "tok3n").await, Some(None));
        assert_eq!(a.perms("rest", "bob", &[]), vec![json!("test.ping")]);
        assert!(!a.authenticate("rest", "alice", "wrong").await);
        assert!(a.authenticate("rest", "alice", "tok3n").await);
    }

    /// `auto` takes any password of any user (Salt's auto.py); `pam` reads `auth.pam.service`
    /// and looks groups up; neither takes `^` options.
    #[tokio::test]
    async fn auto_and_pam_backends() {
        let v: Value = serde_yaml_ng::from_str(
            "auto: {alice: ['test.*']}\npam: {bob: ['test.*'], 'ops%': ['@wheel']}",
        )
        .unwrap();
        let a = ExternalAuth::from_value(Some(&v), Some("saltq")).unwrap();
        assert!(a.authenticate("auto", "alice", "anything").await);
        assert!(a.authenticate("auto", "nobody-listed", "").await);
        assert!(a.has_groups("pam"));
        assert!(!a.has_groups("auto"));
        match &a.backends["pam"].check {
            Check::Pam(p) => assert_eq!(p.service, "saltq"),
            other => panic!("pam backend is {other:?}"),
        }
        let v: Value = serde_yaml_ng::from_str("pam: {^service: x}").unwrap();
        let e = ExternalAuth::from_value(Some(&v), None).unwrap_err();
        assert!(e.contains("pam: takes no ^ options"), "{e}");
        let v: Value = serde_yaml_ng::from_str("ldap: {}").unwrap();
        let e = ExternalAuth::from_value(Some(&v), None).unwrap_err();
        assert!(e.contains("file, pam, rest and auto"), "{e}");
    }

    /// Argument-restricted entries are checked when the config is read: Salt ignores a
    /// malformed one, saltq names it.
    #[test]
    fn argument_restricted_entries_are_validated() {
        let ok = "auto: {carol: [{'*': [{cmd.run: {args: ['ls.*', null], kwargs: {cwd: /tmp}}}, {test.echo: [{args: [a]}, {args: [b]}]}]}, {'@runner': [{jobs.lookup_jid: {kwargs: {jid: null}}}]}]}";
        let v: Value = serde_yaml_ng::from_str(ok).unwrap();
        ExternalAuth::from_value(Some(&v), None).unwrap();
        for (bad, says) in [
            ("{'*': [{cmd.run: {args: 'ls'}}]}", "args must be a list"),
            (
                "{'*': [{cmd.run: {kwargs: [cwd]}}]}",
                "kwargs must be a mapping",
            ),
            ("{'*': [{cmd.run: {argz: []}}]}", "unknown key \"argz\""),
            (
                "{'*': [{cmd.run: {args: [5]}}]}",
                "5 is not a regular expression or null",
            ),
            (
                "{'*': [{cmd.run: {args: ['(']}}]}",
                "\"(\" is not a regular expression",
            ),
            (
                "{'*': [{cmd.run: {}, test.ping: {}}]}",
                "names one function",
            ),
            ("{'*': [{cmd.run: 'ls'}]}", "cmd.run: expected {args"),
        ] {
            let v: Value = serde_yaml_ng::from_str(&format!("auto: {{carol: [{bad}]}}")).unwrap();
            let e = ExternalAuth::from_value(Some(&v), None).unwrap_err();
            assert!(
                e.contains("auto: carol: *: ") && e.contains(says),
                "{bad}: {e}"
            );
        }
    }
}
