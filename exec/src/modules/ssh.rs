//! Salt's `ssh` module, the part the `ssh_auth` states use: a user's `authorized_keys`
//! (`config`, relative to the home directory, `%u`/`%h` expanded) read, checked, added to and
//! removed from, keys given one by one or in a file from the fileserver. Parsing and editing
//! the file are pure functions ([`parse_auth_keys`], [`format_auth_line`]), tested as data.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{Map, Value, json};

use saltq_semantics::python;

use crate::error::ExecError;
use crate::modules::cp::cache_one;
use crate::modules::user::info_at;

use crate::spec::{Call, Function, Lit, Param};

const CONFIG: Param = Param::opt("config", Lit::Str(".ssh/authorized_keys"));
const FP_HASH: Param = Param::opt("fingerprint_hash_type", Lit::None);

/// The `ssh` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("ssh.auth_keys", handler!(auth_keys))
        .params(&[Param::opt("user", Lit::None), CONFIG, FP_HASH])
        .doc(AUTH_KEYS_DOC),
    Function::new("ssh.check_key", handler!(check_key))
        .params(&[
            Param::req("user"),
            Param::req("key"),
            Param::req("enc"),
            Param::req("comment"),
            Param::req("options"),
            CONFIG,
            Param::opt("cache_keys", Lit::None),
            FP_HASH,
        ])
        .doc(CHECK_KEY_DOC),
    Function::new("ssh.check_key_file", handler!(check_key_file))
        .params(&[
            Param::req("user"),
            Param::req("source"),
            CONFIG,
            Param::opt("saltenv", Lit::Str("base")),
            FP_HASH,
        ])
        .doc(CHECK_KEY_FILE_DOC),
    Function::new("ssh.rm_auth_key", handler!(rm_auth_key))
        .params(&[Param::req("user"), Param::req("key"), CONFIG, FP_HASH])
        .doc(RM_AUTH_KEY_DOC),
    Function::new("ssh.rm_auth_key_from_file", handler!(rm_auth_key_from_file))
        .params(&[
            Param::req("user"),
            Param::req("source"),
            CONFIG,
            Param::opt("saltenv", Lit::Str("base")),
            FP_HASH,
        ])
        .doc(RM_AUTH_KEY_FROM_FILE_DOC),
    Function::new("ssh.set_auth_key", handler!(set_auth_key))
        .params(&[
            Param::req("user"),
            Param::req("key"),
            Param::opt("enc", Lit::Str("ssh-rsa")),
            Param::opt("comment", Lit::Str("")),
            Param::opt("options", Lit::None),
            CONFIG,
            Param::opt("cache_keys", Lit::None),
            FP_HASH,
        ])
        .doc(SET_AUTH_KEY_DOC),
    Function::new(
        "ssh.set_auth_key_from_file",
        handler!(set_auth_key_from_file),
    )
    .params(&[
        Param::req("user"),
        Param::req("source"),
        CONFIG,
        Param::opt("saltenv", Lit::Str("base")),
        FP_HASH,
    ])
    .doc(SET_AUTH_KEY_FROM_FILE_DOC),
];

/// Salt's `_refine_enc`: the key type as written in the file, or the error naming it.
pub fn refine_enc(enc: &str) -> Result<String, String> {
    const ALSO: &[&str] = &[
        "rsa-sha2-512",
        "rsa-sha2-256",
        "rsa-sha2-512-cert-v01@openssh.com",
        "rsa-sha2-256-cert-v01@openssh.com",
        "ssh-rsa-cert-v01@openssh.com",
        "ecdsa-sha2-nistp256-cert-v01@openssh.com",
        "ecdsa-sha2-nistp384-cert-v01@openssh.com",
        "ecdsa-sha2-nistp521-cert-v01@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
        "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
        "ssh-ed25519-cert-v01@openssh.com",
        "sk-ssh-ed25519@openssh.com",
        "sk-ssh-ed25519-cert-v01@openssh.com",
    ];
    Ok(match enc {
        "r" | "rsa" | "ssh-rsa" => "ssh-rsa".into(),
        "d" | "dsa" | "dss" | "ssh-dss" => "ssh-dss".into(),
        "e" | "ecdsa" => "ecdsa-sha2-nistp256".into(),
        "ecdsa-sha2-nistp521" | "ecdsa-sha2-nistp384" | "ecdsa-sha2-nistp256" => enc.into(),
        "ed25519" | "ssh-ed25519" => "ssh-ed25519".into(),
        e if ALSO.contains(&e) => enc.into(),
        _ => return Err(format!("Incorrect encryption key type '{enc}'.")),
    })
}

/// Salt's `_format_auth_line`: `[options ]enc key comment\n`.
pub fn format_auth_line(key: &str, enc: &str, comment: &str, options: &[String]) -> String {
    let mut line = String::new();
    if !options.is_empty() {
        line.push_str(&options.join(","));
        line.push(' ');
    }
    line.push_str(&format!("{enc} {key} {comment}\n"));
    line
}

/// Salt's `_fingerprint`: the key's digest as `xx:xx:...`, `None` when the key is not
/// strict base64 (Python's `b64decode(validate=True)`).
pub fn fingerprint(key: &str, hash_type: Option<&str>) -> Result<Option<String>, String> {
    let hash_type = hash_type.map_or_else(|| "sha256".to_owned(), str::to_lowercase);
    let mut hasher = saltq_fileserver::Hasher::new(&hash_type)
        .map_err(|_| format!("The fingerprint_hash_type {hash_type} is not supported."))?;
    let Some(raw) = b64decode_strict(key) else {
        return Ok(None);
    };
    hasher.update(&raw);
    let hex = hasher.hex();
    let pairs: Vec<&str> = (0..hex.len()).step_by(2).map(|i| &hex[i..i + 2]).collect();
    Ok(Some(pairs.join(":")))
}

/// Python's `base64.b64decode(s, validate=True)`: the alphabet and at most two `=` at the
/// end, padded to a multiple of four; trailing bits may be set.
fn b64decode_strict(s: &str) -> Option<Vec<u8>> {
    let body = s.trim_end_matches('=');
    if s.len() - body.len() > 2
        || !body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
    {
        return None;
    }
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical),
    );
    engine.decode(s).ok()
}

/// The line pattern of Salt's `_validate_keys` and `rm_auth_key`: `{options} {enc key ...}`.
fn line_re() -> &'static regex::Regex {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(r"^(.*?)\s?((?:sk-)?(?:ssh\-|ecds)[\w@.-]+\s.+)$").expect("valid regex")
    })
}

/// Salt's `_validate_keys` over a file's text: key → `{enc, comment, options, fingerprint}`,
/// in the file's order; keys that are not base64 are left out.
pub fn parse_auth_keys(text: &str, hash_type: Option<&str>) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(caps) = line_re().captures(line) else {
            continue;
        };
        let opts = caps.get(1).map_or("", |m| m.as_str());
        let comps: Vec<&str> = caps[2].split_whitespace().collect();
        if comps.len() < 2 {
            continue;
        }
        let options: Vec<&str> = if opts.is_empty() {
            Vec::new()
        } else {
            opts.split(',').collect()
        };
        let Some(fp) = fingerprint(comps[1], hash_type)? else {
            continue;
        };
        out.insert(
            comps[1].to_owned(),
            json!({"enc": comps[0], "comment": comps[2..].join(" "), "options": options,
                   "fingerprint": fp}),
        );
    }
    Ok(out)
}

/// Salt's `_expand_authorized_keys_path`: `%u`, `%h` and `%%` expanded.
pub fn expand_path(path: &str, user: &str, home: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut escape = false;
    for c in path.chars() {
        if escape {
            escape = false;
            match c {
                '%' => out.push('%'),
                'u' => out.push_str(user),
                'h' => out.push_str(home),
                other => {
                    return Err(format!(
                        "AuthorizedKeysFile path: unknown token character \"%{other}\""
                    ));
                }
            }
        } else if c == '%' {
            escape = true;
        } else {
            out.push(c);
        }
    }
    if escape {
        return Err("AuthorizedKeysFile path: Last character can't be escape character".into());
    }
    Ok(out)
}

/// Salt's `_get_config_file`: the absolute path of the user's keys file.
fn config_file(user: &str, config: &str) -> Result<PathBuf, ExecError> {
    let info = info_at(None, user);
    let Some(home) = info["home"].as_str() else {
        return Err(ExecError::execution(format!(
            "User '{user}' does not exist"
        )));
    };
    let config = expand_path(config, user, home).map_err(ExecError::execution)?;
    Ok(Path::new(home).join(config))
}

fn fp_hash(call: &Call) -> Option<String> {
    call.opt_arg("fingerprint_hash_type").map(python::str)
}

/// One user's keys (`{}` when the user or the file is missing).
fn user_keys(
    user: &str,
    config: &str,
    hash: Option<&str>,
) -> Result<Map<String, Value>, ExecError> {
    let Ok(full) = config_file(user, config) else {
        return Ok(Map::new());
    };
    if !full.is_file() {
        return Ok(Map::new());
    }
    let text = std::fs::read_to_string(&full).map_err(|_| {
        ExecError::execution(format!("Problem reading ssh key file {}", full.display()))
    })?;
    parse_auth_keys(&text, hash).map_err(ExecError::execution)
}

/// A list argument (`options`): a list, or `None`/empty for none.
fn string_list(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().map(python::str).collect(),
        Value::Null => Vec::new(),
        Value::String(s) if s.is_empty() => Vec::new(),
        other => vec![python::str(other)],
    }
}

const AUTH_KEYS_DOC: &str = "Return the authorized keys of a user (``{key: {enc, comment,
options, fingerprint}}``), or of several users or every user keyed by user

CLI Example:

.. code-block:: bash

    salt '*' ssh.auth_keys
    salt '*' ssh.auth_keys root
    salt '*' ssh.auth_keys user=root
    salt '*' ssh.auth_keys user=\"[user1, user2]\"
";

async fn auth_keys(call: Call) -> Result<Value, ExecError> {
    let config = python::str(call.arg("config"));
    let hash = fp_hash(&call);
    let (users, one) = match call.arg("user") {
        Value::Array(items) => (items.iter().map(python::str).collect::<Vec<_>>(), false),
        v if python::truthy(v) => (vec![python::str(v)], true),
        _ => {
            let text = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
            let mut names: Vec<String> = super::user::parse_passwd(&text)
                .into_iter()
                .map(|u| u.name)
                .collect();
            names.sort();
            (names, false)
        }
    };
    let mut all = Map::new();
    for user in &users {
        if let Ok(full) = config_file(user, &config)
            && full.is_file()
        {
            all.insert(
                user.clone(),
                Value::Object(user_keys(user, &config, hash.as_deref())?),
            );
        }
    }
    if one {
        return Ok(all.remove(&users[0]).unwrap_or_else(|| json!({})));
    }
    Ok(Value::Object(all))
}

/// Salt's `check_key`: `add`, `update` or `exists`.
fn check(
    user: &str,
    key: &str,
    enc: &str,
    comment: &str,
    options: &[String],
    config: &str,
    hash: Option<&str>,
) -> Result<&'static str, ExecError> {
    let enc = refine_enc(enc).map_err(ExecError::execution)?;
    let current = user_keys(user, config, hash)?;
    let Some(have) = current.get(key) else {
        return Ok("add");
    };
    let nline = format_auth_line(key, &enc, comment, options);
    let cline = format_auth_line(
        key,
        have["enc"].as_str().unwrap_or(""),
        have["comment"].as_str().unwrap_or(""),
        &string_list(&have["options"]),
    );
    Ok(if cline == nline { "exists" } else { "update" })
}

const CHECK_KEY_DOC: &str = "Check whether a key needs adding or updating: ``add``, ``update`` or
``exists``

CLI Example:

.. code-block:: bash

    salt '*' ssh.check_key <user> <key> <enc> <comment> <options>
";

async fn check_key(call: Call) -> Result<Value, ExecError> {
    Ok(json!(check(
        &python::str(call.arg("user")),
        &python::str(call.arg("key")),
        &python::str(call.arg("enc")),
        &python::str(call.arg("comment")),
        &string_list(call.arg("options")),
        &python::str(call.arg("config")),
        fp_hash(&call).as_deref(),
    )?))
}

/// The keys of a file from the fileserver: `None` when it cannot be cached, else its keys
/// (empty when none is valid).
async fn source_keys(
    call: &Call,
    source: &str,
    saltenv: &str,
    hash: Option<&str>,
) -> Result<Option<Map<String, Value>>, ExecError> {
    let cached = cache_one(call, source, saltenv).await?;
    let Some(path) = cached.as_str().filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let Ok(text) = std::fs::read_to_string(path) else {
        return Err(ExecError::execution(format!(
            "Problem reading ssh key file {path}"
        )));
    };
    Ok(Some(
        parse_auth_keys(&text, hash).map_err(ExecError::execution)?,
    ))
}

const CHECK_KEY_FILE_DOC: &str = "Check the keys of a file from the fileserver against the user's
keys: ``{key: add|update|exists}``, ``{}`` when the file is missing or holds no key

CLI Example:

.. code-block:: bash

    salt '*' ssh.check_key_file root salt://ssh/keyfile
";

async fn check_key_file(call: Call) -> Result<Value, ExecError> {
    let user = python::str(call.arg("user"));
    let config = python::str(call.arg("config"));
    let hash = fp_hash(&call);
    let source = python::str(call.arg("source"));
    let saltenv = python::str(call.arg("saltenv"));
    let Some(keys) = source_keys(&call, &source, &saltenv, hash.as_deref()).await? else {
        return Ok(json!({}));
    };
    let mut out = Map::new();
    for (key, v) in &keys {
        let status = check(
            &user,
            key,
            v["enc"].as_str().unwrap_or(""),
            v["comment"].as_str().unwrap_or(""),
            &string_list(&v["options"]),
            &config,
            hash.as_deref(),
        )?;
        out.insert(key.clone(), json!(status));
    }
    Ok(Value::Object(out))
}

/// The lines of the keys file with `key`'s line removed, as Salt's `rm_auth_key` rewrites it
/// (blank lines dropped, lines that are no key dropped, comments kept).
pub fn remove_key_lines(text: &str, key: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let Some(caps) = line_re().captures(line) else {
            continue;
        };
        let comps: Vec<&str> = caps[2].split_whitespace().collect();
        if comps.len() >= 2 && comps[1] == key {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The lines of the keys file with `key`'s line replaced by `auth_line`, as Salt's
/// `_replace_auth_key` rewrites it.
pub fn replace_key_lines(text: &str, key: &str, auth_line: &str) -> String {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r"((.*)\s)?((?:sk-)?(?:ssh|ecdsa)-[a-z0-9@.-]+)\s([a-zA-Z0-9+/]+={0,2})(\s(.*))?",
        )
        .expect("valid regex")
    });
    let mut out = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if !line.starts_with('#')
            && re
                .captures(line)
                .and_then(|c| c.get(4))
                .is_some_and(|m| m.as_str() == key)
        {
            out.push_str(auth_line);
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Salt's `rm_auth_key`: `Key removed`, `Key not present`, or what went wrong.
fn remove(user: &str, key: &str, config: &str, hash: Option<&str>) -> Result<String, ExecError> {
    let current = user_keys(user, config, hash)?;
    if !current.contains_key(key) {
        return Ok("Key not present".into());
    }
    let full = config_file(user, config)?;
    if !full.is_file() {
        return Ok(format!(
            "Authorized keys file {} not present",
            full.display()
        ));
    }
    let done = std::fs::read_to_string(&full)
        .and_then(|text| std::fs::write(&full, remove_key_lines(&text, key)));
    Ok(match done {
        Ok(()) => "Key removed".into(),
        Err(_) => "Key not removed".into(),
    })
}

const RM_AUTH_KEY_DOC: &str = "Remove a key from a user's authorized keys file: ``Key removed``
or ``Key not present``

CLI Example:

.. code-block:: bash

    salt '*' ssh.rm_auth_key <user> <key>
";

async fn rm_auth_key(call: Call) -> Result<Value, ExecError> {
    Ok(json!(remove(
        &python::str(call.arg("user")),
        &python::str(call.arg("key")),
        &python::str(call.arg("config")),
        fp_hash(&call).as_deref(),
    )?))
}

/// The error text Salt keeps in `__context__["ssh_auth.error"]` for a file without keys.
pub fn no_keys_error(source: &str) -> String {
    format!("No keys detected in {source}. Is file properly formatted?")
}

const RM_AUTH_KEY_FROM_FILE_DOC: &str = "Remove the keys of a file from the fileserver from a
user's authorized keys: ``Key removed``, ``Key not present``, ``Key not removed`` or ``fail``

CLI Example:

.. code-block:: bash

    salt '*' ssh.rm_auth_key_from_file <user> salt://ssh_keys/<user>.id_rsa.pub
";

async fn rm_auth_key_from_file(call: Call) -> Result<Value, ExecError> {
    let user = python::str(call.arg("user"));
    let config = python::str(call.arg("config"));
    let hash = fp_hash(&call);
    let source = python::str(call.arg("source"));
    let saltenv = python::str(call.arg("saltenv"));
    let Some(keys) = source_keys(&call, &source, &saltenv, hash.as_deref()).await? else {
        return Err(ExecError::execution(
            "Failed to pull key file from salt file server",
        ));
    };
    if keys.is_empty() {
        return Ok(json!("fail"));
    }
    let mut all = String::new();
    for key in keys.keys() {
        all.push_str(&remove(&user, key, &config, hash.as_deref())?);
    }
    Ok(json!(if all.contains("Key not removed") {
        "Key not removed"
    } else if all.contains("Key removed") {
        "Key removed"
    } else {
        "Key not present"
    }))
}

/// Salt's `set_auth_key`: `new`, `replace`, `no change`, `fail`, `invalid` or
/// `Invalid public key`.
#[allow(clippy::too_many_arguments)]
fn set(
    user: &str,
    key: &str,
    enc: &str,
    comment: &str,
    options: &[String],
    config: &str,
    hash: Option<&str>,
) -> Result<&'static str, ExecError> {
    if key.split_whitespace().count() > 1 {
        return Ok("invalid");
    }
    let enc = refine_enc(enc).map_err(ExecError::execution)?;
    let info = info_at(None, user);
    if info.as_object().is_none_or(|m| m.is_empty()) {
        return Ok("fail");
    }
    if fingerprint(key, hash)
        .map_err(ExecError::execution)?
        .is_none()
    {
        return Ok("Invalid public key");
    }
    let auth_line = format_auth_line(key, &enc, comment, options);
    match check(user, key, &enc, comment, options, config, hash)? {
        "exists" => return Ok("no change"),
        "update" => {
            let full = config_file(user, config)?;
            std::fs::read_to_string(&full)
                .and_then(|text| std::fs::write(&full, replace_key_lines(&text, key, &auth_line)))
                .map_err(|e| {
                    ExecError::execution(format!("Problem reading or writing to key file: {e}"))
                })?;
            return Ok("replace");
        }
        _ => {}
    }
    let full = config_file(user, config)?;
    let home = info["home"].as_str().unwrap_or("");
    if full.to_string_lossy().starts_with(home) && !Path::new(home).is_dir() {
        return Ok("fail");
    }
    let uid = info["uid"].as_u64().and_then(|u| u32::try_from(u).ok());
    let gid = info["gid"].as_u64().and_then(|g| u32::try_from(g).ok());
    let root = nix::unistd::Uid::effective().is_root();
    let chown = |p: &Path| {
        if root {
            let _ = nix::unistd::chown(
                p,
                uid.map(nix::unistd::Uid::from_raw),
                gid.map(nix::unistd::Gid::from_raw),
            );
        }
    };
    if let Some(dir) = full.parent().filter(|d| !d.is_dir()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            ExecError::execution(format!("could not create {}: {e}", dir.display()))
        })?;
        chown(dir);
        let _ = std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700));
    }
    let new_file = !full.is_file();
    let mut data = std::fs::read(&full).unwrap_or_default();
    if data.last().is_some_and(|b| *b != b'\n') {
        data.push(b'\n');
    }
    data.extend_from_slice(auth_line.as_bytes());
    std::fs::write(&full, data)
        .map_err(|e| ExecError::execution(format!("Could not write to key file: {e}")))?;
    if new_file {
        chown(&full);
        let _ =
            std::fs::set_permissions(&full, std::os::unix::fs::PermissionsExt::from_mode(0o600));
    }
    Ok("new")
}

const SET_AUTH_KEY_DOC: &str = "Add a key to a user's authorized keys file (the key alone: no type,
no comment): ``new``, ``replace``, ``no change``, ``fail`` or ``invalid``

CLI Example:

.. code-block:: bash

    salt '*' ssh.set_auth_key <user> '<key>' enc='dsa'
";

async fn set_auth_key(call: Call) -> Result<Value, ExecError> {
    Ok(json!(set(
        &python::str(call.arg("user")),
        &python::str(call.arg("key")),
        &python::str(call.arg("enc")),
        &python::str(call.arg("comment")),
        &string_list(call.arg("options")),
        &python::str(call.arg("config")),
        fp_hash(&call).as_deref(),
    )?))
}

const SET_AUTH_KEY_FROM_FILE_DOC: &str = "Add the keys of a file from the fileserver to a user's
authorized keys: ``new``, ``replace``, ``no change`` or ``fail``

CLI Example:

.. code-block:: bash

    salt '*' ssh.set_auth_key_from_file <user> salt://ssh_keys/<user>.id_rsa.pub
";

async fn set_auth_key_from_file(call: Call) -> Result<Value, ExecError> {
    let user = python::str(call.arg("user"));
    let config = python::str(call.arg("config"));
    let hash = fp_hash(&call);
    let source = python::str(call.arg("source"));
    let saltenv = python::str(call.arg("saltenv"));
    let Some(keys) = source_keys(&call, &source, &saltenv, hash.as_deref()).await? else {
        return Err(ExecError::execution(
            "Failed to pull key file from salt file server",
        ));
    };
    if keys.is_empty() {
        return Ok(json!("fail"));
    }
    let mut all = String::new();
    for (key, v) in &keys {
        all.push_str(set(
            &user,
            key,
            v["enc"].as_str().unwrap_or(""),
            v["comment"].as_str().unwrap_or(""),
            &string_list(&v["options"]),
            &config,
            hash.as_deref(),
        )?);
    }
    Ok(json!(if all.contains("fail") {
        "fail"
    } else if all.contains("replace") {
        "replace"
    } else if all.contains("new") {
        "new"
    } else {
        "no change"
    }))
}

#[cfg(test)]
mod tests;
