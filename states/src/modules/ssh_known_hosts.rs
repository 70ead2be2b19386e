//! Salt's `ssh_known_hosts` state module (`salt/states/ssh_known_hosts.py`) with the part of
//! the `ssh` execution module it uses (`check_known_host`, `set_known_host`,
//! `get_known_host_entries`, `rm_known_host`, `hash_known_hosts`, `recv_known_host_entries`
//! in `salt/modules/ssh.py`): entries found with `ssh-keygen -F`, removed with
//! `ssh-keygen -R`, hashed with `ssh-keygen -H`, fetched with `ssh-keyscan` when no key is
//! given. Without `user` the file is `config` (absolute) or `/etc/ssh/ssh_known_hosts`; with
//! `user`, `config` (default `.ssh/known_hosts`) is relative to their home.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Map, Value, json};
use sha2::Digest;

use saltq_exec::{Lit, Param};
use saltq_semantics::python;

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

/// The `ssh_known_hosts` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "ssh_known_hosts.present",
        params: &[
            Param::req("name"),
            Param::opt("user", Lit::None),
            Param::opt("fingerprint", Lit::None),
            Param::opt("key", Lit::None),
            Param::opt("port", Lit::None),
            Param::opt("enc", Lit::None),
            Param::opt("config", Lit::None),
            Param::opt("hash_known_hosts", Lit::Bool(true)),
            Param::opt("timeout", Lit::Int(5)),
            Param::opt("fingerprint_hash_type", Lit::None),
        ],
        kwargs: false,
        handler: state_handler!(present),
    },
    StateFunction {
        name: "ssh_known_hosts.absent",
        params: &[
            Param::req("name"),
            Param::opt("user", Lit::None),
            Param::opt("config", Lit::None),
        ],
        kwargs: false,
        handler: state_handler!(absent),
    },
];

const DEFAULT_PORT: i64 = 22;

/// Runs a command: stdout with stderr after it (Salt's `cmd.run`), and whether it succeeded.
async fn run(argv: &[&str]) -> Result<(String, bool), StateError> {
    let out = tokio::process::Command::new(argv[0])
        .args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                StateError(format!("ssh.check_known_host error: {} not found", argv[0]))
            }
            _ => StateError(format!("failed to run {}: {e}", argv.join(" "))),
        })?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    if !err.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&err);
    }
    Ok((text.trim_end().to_owned(), out.status.success()))
}

/// Salt's `_fingerprint`: the hash (sha256 unless named) of the decoded key, hex pairs joined
/// with `:`; `None` for a key that is not base64.
fn fingerprint(key: &str, hash_type: Option<&str>) -> Result<Option<String>, StateError> {
    let Ok(raw) = python::b64decode(key) else {
        return Ok(None);
    };
    let hex = match hash_type.map(str::to_lowercase).as_deref() {
        None | Some("sha256") => hex(&sha2::Sha256::digest(&raw)),
        Some("sha512") => hex(&sha2::Sha512::digest(&raw)),
        Some("sha384") => hex(&sha2::Sha384::digest(&raw)),
        Some("sha224") => hex(&sha2::Sha224::digest(&raw)),
        Some("sha1") => hex(&sha1::Sha1::digest(&raw)),
        Some("md5") => hex(&md5::Md5::digest(&raw)),
        Some(other) => {
            return Err(StateError(format!(
                "The fingerprint_hash_type {other} is not supported."
            )));
        }
    };
    let pairs: Vec<&str> = (0..hex.len()).step_by(2).map(|i| &hex[i..i + 2]).collect();
    Ok(Some(pairs.join(":")))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Salt's `_parse_openssh_output`: `hostname enc key` lines with a valid key.
fn parse_entries(text: &str, hash_type: Option<&str>) -> Result<Vec<Value>, StateError> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [hostname, enc, key] = parts[..] else {
            continue;
        };
        let Some(fp) = fingerprint(key, hash_type)? else {
            continue;
        };
        out.push(json!({"hostname": hostname, "key": key, "enc": enc, "fingerprint": fp}));
    }
    Ok(out)
}

/// `[host]:port` for a port other than 22.
fn ssh_hostname(host: &str, port: Option<i64>) -> String {
    match port {
        Some(p) if p != DEFAULT_PORT => format!("[{host}]:{p}"),
        _ => host.to_owned(),
    }
}

/// The state's file, or the failed return Salt gives.
fn config_path(call: &StateCall) -> Result<String, &'static str> {
    let user = call.arg("user").map(python::str).filter(|u| !u.is_empty());
    let config = call
        .arg("config")
        .map(python::str)
        .filter(|c| !c.is_empty());
    let config = match &user {
        None => config.unwrap_or_else(|| "/etc/ssh/ssh_known_hosts".into()),
        Some(_) => config.unwrap_or_else(|| ".ssh/known_hosts".into()),
    };
    if user.is_none() && !config.starts_with('/') {
        return Err("If not specifying a \"user\", specify an absolute \"config\".");
    }
    Ok(config)
}

/// Salt's `_get_known_hosts_file`: the absolute path (a user's home joined), or its error.
fn full_path(config: &str, user: Option<&str>) -> Result<String, String> {
    if config.starts_with('/') {
        return Ok(config.to_owned());
    }
    match user {
        Some(u) => match nix::unistd::User::from_name(u) {
            Ok(Some(pw)) => Ok(pw.dir.join(config).display().to_string()),
            _ => Err(format!("User {u} does not exist")),
        },
        None => Err("Cannot determine absolute path to file.".into()),
    }
}

/// `ssh.get_known_host_entries`: the file's entries for the host (`ssh-keygen -F`).
async fn known_entries(
    full: &str,
    host: &str,
    port: Option<i64>,
    hash_type: Option<&str>,
) -> Result<Vec<Value>, StateError> {
    let name = ssh_hostname(host, port);
    let (text, _) = run(&["ssh-keygen", "-F", &name, "-f", full]).await?;
    parse_entries(&text, hash_type)
}

fn port_arg(call: &StateCall) -> Option<i64> {
    call.arg("port").and_then(|p| match p {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    })
}

fn entries_or_none(e: Vec<Value>) -> Value {
    if e.is_empty() {
        Value::Null
    } else {
        Value::Array(e)
    }
}

fn chown_to(path: &str, user: Option<&str>) {
    if let Some(u) = user
        && nix::unistd::geteuid().is_root()
        && let Ok(Some(pw)) = nix::unistd::User::from_name(u)
    {
        let _ = nix::unistd::chown(path, Some(pw.uid), Some(pw.gid));
    }
}

async fn present(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    ret.result = if call.test { None } else { Some(true) };
    let config = match config_path(&call) {
        Ok(c) => c,
        Err(msg) => {
            ret.result = Some(false);
            ret.comment = msg.into();
            return Ok(ret);
        }
    };
    let user = call.arg("user").map(python::str).filter(|u| !u.is_empty());
    let key = call.arg("key").map(python::str).filter(|k| !k.is_empty());
    let fp = call
        .arg("fingerprint")
        .map(python::str)
        .filter(|k| !k.is_empty());
    let enc = call.arg("enc").map(python::str).filter(|k| !k.is_empty());
    let hash_type = call.arg("fingerprint_hash_type").map(python::str);
    let port = port_arg(&call);
    let hash_hosts = call.arg("hash_known_hosts").is_none_or(python::truthy);
    if call.test {
        if key.is_some() && fp.is_some() {
            ret.result = Some(false);
            ret.comment = "Specify either \"key\" or \"fingerprint\", not both.".into();
            return Ok(ret);
        } else if key.is_some() && enc.is_none() {
            ret.result = Some(false);
            ret.comment = "Required argument \"enc\" if using \"key\" argument.".into();
            return Ok(ret);
        }
        let full = match full_path(&config, user.as_deref()) {
            Ok(f) => f,
            Err(e) => return Err(StateError(e)),
        };
        let entries = known_entries(&full, &name, port, hash_type.as_deref()).await?;
        let field =
            |k: &str| -> Vec<String> { entries.iter().map(|e| python::str(&e[k])).collect() };
        let result = if entries.is_empty() {
            "add"
        } else if let Some(k) = &key {
            if field("key").contains(k) {
                "exists"
            } else {
                "update"
            }
        } else if let Some(f) = &fp {
            if field("fingerprint").contains(f) {
                "exists"
            } else {
                "update"
            }
        } else {
            "exists"
        };
        match result {
            "exists" => {
                ret.result = Some(true);
                ret.comment = format!("Host {name} is already in {config}");
            }
            "add" => ret.comment = format!("Key for {name} is set to be added to {config}"),
            _ => ret.comment = format!("Key for {name} is set to be updated in {config}"),
        }
        return Ok(ret);
    }
    // ssh.set_known_host
    if port.is_some_and(|p| p != DEFAULT_PORT) && hash_hosts {
        ret.result = Some(false);
        ret.comment =
            "argument port can not be used in conjunction with argument hash_known_hosts".into();
        return Ok(ret);
    }
    let full = match full_path(&config, user.as_deref()) {
        Ok(f) => f,
        Err(e) => {
            ret.result = Some(false);
            ret.comment = e;
            return Ok(ret);
        }
    };
    let stored = known_entries(&full, &name, port, hash_type.as_deref()).await?;
    let stored_keys: Vec<String> = stored
        .iter()
        .filter(|h| enc.as_deref().is_none_or(|e| h["enc"] == e))
        .map(|h| python::str(&h["key"]))
        .collect();
    let stored_fps: Vec<String> = stored
        .iter()
        .map(|h| python::str(&h["fingerprint"]))
        .collect();
    let update = stored.is_empty()
        || fp.as_ref().is_some_and(|f| !stored_fps.contains(f))
        || key.as_ref().is_some_and(|k| !stored_keys.contains(k));
    let check = !update && key.is_none() && fp.is_none();
    if !update && !check {
        ret.comment = format!("{name} already exists in {config}");
        return Ok(ret);
    }
    let new: Vec<Value> = match &key {
        Some(k) => vec![json!({"hostname": name, "enc": enc, "key": k})],
        None => {
            let timeout = call.arg("timeout").map_or("5".to_owned(), python::str);
            let port_s = port.map(|p| p.to_string());
            let mut argv: Vec<&str> = vec!["ssh-keyscan"];
            if let Some(p) = &port_s {
                argv.extend(["-p", p]);
            }
            if let Some(e) = &enc {
                argv.extend(["-t", e]);
            }
            if hash_hosts {
                argv.push("-H");
            }
            argv.extend(["-T", &timeout, &name]);
            let mut remote = Vec::new();
            for _ in 0..5 {
                let (text, _) = run(&argv).await?;
                if !text.trim().is_empty() {
                    remote = parse_entries(&text, hash_type.as_deref())?;
                    break;
                }
            }
            if remote.is_empty() {
                ret.result = Some(false);
                ret.comment = "Unable to receive remote host keys".into();
                return Ok(ret);
            }
            let fps: Vec<String> = remote
                .iter()
                .map(|h| python::str(&h["fingerprint"]))
                .collect();
            if fp.as_ref().is_some_and(|f| !fps.contains(f)) {
                ret.result = Some(false);
                ret.comment = "Remote host public keys found but none of their fingerprints \
                               match the one you have provided"
                    .into();
                return Ok(ret);
            }
            if check {
                let mut a: Vec<String> = remote.iter().map(|h| python::str(&h["key"])).collect();
                let mut b = stored_keys.clone();
                a.sort();
                a.dedup();
                b.sort();
                b.dedup();
                if a == b {
                    ret.comment = format!("{name} already exists in {config}");
                    return Ok(ret);
                }
            }
            remote
        }
    };
    let path = std::path::Path::new(&full);
    let orig_mode = std::fs::metadata(path).ok().map(|m| m.permissions().mode());
    if path.is_file() {
        // The lines `ssh-keygen -F` reports for this host (and key type), removed.
        let (text, _) = run(&["ssh-keygen", "-F", &ssh_hostname(&name, port), "-f", &full]).await?;
        let lines: Vec<&str> = text.lines().collect();
        let mut remove: Vec<usize> = Vec::new();
        for pair in lines.chunks(2) {
            let [head, entry] = pair else { continue };
            let Some(no) = head.split_whitespace().last().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let words: Vec<&str> = entry.split_whitespace().collect();
            let line_enc = words.len().checked_sub(2).map(|i| words[i]);
            if enc.as_deref().is_some_and(|e| line_enc != Some(e)) {
                continue;
            }
            remove.push(no);
        }
        if !remove.is_empty() {
            let text = std::fs::read_to_string(path).map_err(|e| {
                StateError(format!(
                    "Couldn't remove old entry(ies) from known hosts file: '{e}'"
                ))
            })?;
            let mut kept: Vec<&str> = text.split_inclusive('\n').collect();
            remove.sort_unstable();
            for no in remove.into_iter().rev() {
                if no >= 1 && no <= kept.len() {
                    kept.remove(no - 1);
                }
            }
            std::fs::write(path, kept.concat()).map_err(|e| {
                StateError(format!(
                    "Couldn't remove old entry(ies) from known hosts file: '{e}'"
                ))
            })?;
        }
    }
    let mut text = String::new();
    for e in &new {
        let host = python::str(&e["hostname"]);
        let (enc_s, key_s) = (python::str(&e["enc"]), python::str(&e["key"]));
        if hash_hosts || port.is_none_or(|p| p == DEFAULT_PORT) || host.contains(':') {
            text.push_str(&format!("{host} {enc_s} {key_s}\n"));
        } else {
            text.push_str(&format!(
                "[{host}]:{} {enc_s} {key_s}\n",
                port.unwrap_or(22)
            ));
        }
    }
    if let Some(dir) = path.parent()
        && !dir.exists()
        && std::fs::create_dir_all(dir).is_ok()
        && user.is_some()
    {
        chown_to(&dir.display().to_string(), user.as_deref());
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(text.as_bytes()).map(|()| f))
            .map_err(|e| StateError(format!("Couldn't append to known hosts file: '{e}'")))?;
        let _ = f.flush();
    }
    chown_to(&full, user.as_deref());
    let _ = std::fs::set_permissions(
        path,
        std::fs::Permissions::from_mode(orig_mode.unwrap_or(0o600)),
    );
    if key.is_some() && hash_hosts {
        let mode = std::fs::metadata(path).ok().map(|m| m.permissions().mode());
        run(&["ssh-keygen", "-H", "-f", &full]).await?;
        if let Some(m) = mode {
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(m));
        }
        chown_to(&full, user.as_deref());
    }
    let first = |k: &str| new.first().map(|e| python::str(&e[k])).unwrap_or_default();
    ret.comment = if key.is_some() {
        format!("{name}'s key saved to {config} (key: {})", first("key"))
    } else if fp.is_some() {
        format!(
            "{name}'s key saved to {config} (fingerprint: {})",
            first("fingerprint")
        )
    } else if let Some(e) = &enc {
        format!("{name}'s {e} key saved to {config} (key: {})", first("key"))
    } else {
        format!("{name}'s key(s) saved to {config}")
    };
    ret.changes = Map::from_iter([
        ("old".to_owned(), entries_or_none(stored)),
        ("new".to_owned(), Value::Array(new)),
    ]);
    Ok(ret)
}

async fn absent(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    let config = match config_path(&call) {
        Ok(c) => c,
        Err(msg) => {
            ret.result = Some(false);
            ret.comment = msg.into();
            return Ok(ret);
        }
    };
    let user = call.arg("user").map(python::str).filter(|u| !u.is_empty());
    let full = match full_path(&config, user.as_deref()) {
        Ok(f) => f,
        Err(e) => return Err(StateError(e)),
    };
    let known = known_entries(&full, &name, None, None).await?;
    if known.is_empty() {
        ret.comment = "Host is already absent".into();
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        ret.comment = format!("Key for {name} is set to be removed from {config}");
        return Ok(ret);
    }
    if !std::path::Path::new(&full).is_file() {
        ret.result = Some(false);
        ret.comment = format!("Known hosts file {full} does not exist");
        return Ok(ret);
    }
    let (text, _) = run(&["ssh-keygen", "-R", &name, "-f", &full]).await?;
    chown_to(&full, user.as_deref());
    ret.comment = text;
    ret.changes = Map::from_iter([
        ("old".to_owned(), Value::Array(known)),
        ("new".to_owned(), Value::Null),
    ]);
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::fingerprint;

    #[test]
    fn fingerprints_are_hex_pairs_of_the_decoded_key() {
        let key = "AAAAC3NzaC1lZDI1NTE5AAAAIGwL6OrlTM1WAGPzEhxZij/R+yrGW6A7/vMxJ6uWQzpA";
        assert_eq!(
            fingerprint(key, None).unwrap().as_deref(),
            Some(
                "97:74:cc:5e:fd:f9:c9:7d:09:84:ef:4a:19:47:ab:44:21:87:a6:8a:5f:86:98:be:65:\
                 77:55:c9:76:d7:a5:a1"
            )
        );
        assert_eq!(fingerprint("not base64!", None).unwrap(), None);
        assert!(fingerprint(key, Some("crc32")).is_err());
    }
}
