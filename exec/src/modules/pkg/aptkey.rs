//! apt's repository signing keys as Salt's `aptpkg` handles them: `get_repo_keys`,
//! `add_repo_key` (a file, a text, or a key id fetched from a keyserver) and `del_repo_key`,
//! with `apt-key` or, without it (`aptkey=False`), as keyring files in a key directory
//! (`/etc/apt/keyrings`) read and written with gpg.
//!
//! gpg runs with a throwaway home directory (Salt uses root's `~/.gnupg`): the keyrings
//! named are absolute paths, so the result is the same, root's home is left alone, and the
//! dirmngr a keyserver fetch starts is stopped afterwards.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::error::ExecError;
use crate::modules::{run_cmd, run_cmd_env};
use crate::process::Output;
use crate::spec::Call;

/// Where keys go without apt-key.
pub(crate) const KEYRINGS: &str = "/etc/apt/keyrings";

/// How long a keyserver fetch may take before saltq gives up on it.
const FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Salt's `_convert_if_int`: a field that is a whole number becomes one.
fn field(s: &str) -> Value {
    let s = s.trim();
    if s.is_empty() {
        return Value::Null;
    }
    match s.parse::<i64>() {
        Ok(n) => json!(n),
        Err(_) => json!(s),
    }
}

/// Salt's `_parse_repo_keys_output`: gpg's `--with-colons` listing as `{keyid: {algorithm,
/// bits, capability, date_creation, date_expiration, keyid, validity, fingerprint, uid,
/// uid_hash, subkey}}`.
pub(crate) fn parse_repo_keys(out: &str) -> Map<String, Value> {
    let mut keys: Vec<Map<String, Value>> = Vec::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let items: Vec<Value> = line.split(':').map(field).collect();
        if items.len() < 2 {
            continue;
        }
        let at = |i: usize| items.get(i).cloned().unwrap_or(Value::Null);
        let kind = saltq_semantics::python::str(&items[0]);
        match kind.as_str() {
            "pub" | "sub" => {
                let props = Map::from_iter([
                    ("algorithm".to_owned(), at(3)),
                    ("bits".to_owned(), at(2)),
                    ("capability".to_owned(), at(11)),
                    ("date_creation".to_owned(), at(5)),
                    ("date_expiration".to_owned(), at(6)),
                    (
                        "keyid".to_owned(),
                        json!(saltq_semantics::python::str(&at(4))),
                    ),
                    ("validity".to_owned(), at(1)),
                ]);
                if kind == "pub" {
                    keys.push(props);
                } else if let Some(last) = keys.last_mut() {
                    last.insert("subkey".into(), Value::Object(props));
                }
            }
            "fpr" => {
                if let Some(last) = keys.last_mut() {
                    match last.get_mut("subkey") {
                        Some(Value::Object(sub)) => {
                            sub.insert("fingerprint".into(), at(9));
                        }
                        _ => {
                            last.insert("fingerprint".into(), at(9));
                        }
                    }
                }
            }
            "uid" => {
                if let Some(last) = keys.last_mut() {
                    last.insert("uid".into(), at(9));
                    last.insert("uid_hash".into(), at(7));
                }
            }
            _ => {}
        }
    }
    keys.into_iter()
        .map(|k| {
            let id = k
                .get("keyid")
                .map(saltq_semantics::python::str)
                .unwrap_or_default();
            (id, Value::Object(k))
        })
        .collect()
}

/// A gpg home directory that lives for one call; its agents are stopped and it is removed
/// on drop.
struct GpgHome(PathBuf);

impl GpgHome {
    fn new() -> Result<Self, ExecError> {
        use std::os::unix::fs::DirBuilderExt;
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "saltq-gnupg-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| ExecError::execution(format!("creating {}: {e}", dir.display())))?;
        Ok(Self(dir))
    }
}

impl Drop for GpgHome {
    fn drop(&mut self) {
        let _ = std::process::Command::new("gpgconf")
            .args(["--kill", "all"])
            .env("GNUPGHOME", &self.0)
            .output();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs gpg with a throwaway home; a missing gpg is a failed run, as Salt's `cmd.run_all`.
async fn gpg(call: &Call, args: &[&str]) -> Result<Output, ExecError> {
    let home = GpgHome::new()?;
    let home_s = home.0.display().to_string();
    let mut argv = vec!["gpg"];
    argv.extend_from_slice(args);
    let env = [("GNUPGHOME", home_s.as_str())];
    let run = run_cmd_env(call, &argv, None, &env);
    match tokio::time::timeout(FETCH_TIMEOUT, run).await {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(ExecError::CommandNotFound(_))) => Ok(Output {
            code: 127,
            stdout: String::new(),
            stderr: "gpg: command not found".into(),
        }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(ExecError::execution(format!(
            "gpg {} did not finish within {}s (is the keyserver reachable?)",
            args.join(" "),
            FETCH_TIMEOUT.as_secs()
        ))),
    }
}

/// The keys of each file of `keydir` (Salt's `gpg --no-default-keyring --keyring FILE
/// --list-keys --with-colons`), by file, in name order.
async fn keys_by_file(
    call: &Call,
    keydir: &Path,
) -> Result<Vec<(PathBuf, Map<String, Value>)>, ExecError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(keydir)
        .map_err(|e| ExecError::execution(format!("{}: {e}", keydir.display())))?
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let path = f.display().to_string();
        let listed = gpg(
            call,
            &[
                "--no-default-keyring",
                "--keyring",
                &path,
                "--list-keys",
                "--with-colons",
            ],
        )
        .await?;
        out.push((f, parse_repo_keys(&listed.stdout)));
    }
    Ok(out)
}

/// Whether apt-key is there: Salt turns `aptkey` off without it.
pub(crate) fn has_apt_key() -> bool {
    crate::modules::cmd::which_path("apt-key").is_some()
}

/// Salt's `get_repo_keys`: the keys apt-key knows, or (`aptkey=False`) those of the key
/// files in `keydir`; `None` when `keydir` is not a directory (Salt answers `False`).
pub(crate) async fn get_repo_keys(
    call: &Call,
    aptkey: bool,
    keydir: &Path,
) -> Result<Option<Map<String, Value>>, ExecError> {
    if aptkey && has_apt_key() {
        let out = run_cmd(
            call,
            &[
                "apt-key",
                "adv",
                "--batch",
                "--list-public-keys",
                "--with-fingerprint",
                "--with-fingerprint",
                "--with-colons",
                "--fixed-list-mode",
            ],
        )
        .await?;
        if out.code != 0 {
            return Err(ExecError::execution(format!(
                "apt-key failed to list the keys: {}",
                out.stderr.trim()
            )));
        }
        return Ok(Some(parse_repo_keys(&out.stdout)));
    }
    if !keydir.is_dir() {
        return Ok(None);
    }
    let mut all = Map::new();
    for (_, keys) in keys_by_file(call, keydir).await? {
        all.extend(keys);
    }
    Ok(Some(all))
}

/// What `add_repo_key` is given.
#[derive(Debug, Default)]
pub(crate) struct AddKey {
    /// A key file (`salt://` or local).
    pub path: Option<String>,
    /// The key itself.
    pub text: Option<String>,
    /// The keyserver to fetch `keyid` from.
    pub keyserver: Option<String>,
    /// The key's id.
    pub keyid: Option<String>,
    /// The fileserver environment of `path`.
    pub saltenv: String,
    /// Use apt-key (turned off without it).
    pub aptkey: bool,
    /// Where key files go without apt-key.
    pub keydir: PathBuf,
    /// The key file's name in `keydir` (a path replaces `keydir`).
    pub keyfile: Option<String>,
}

/// Salt's `add_repo_key`: `Ok(false)` for the failures Salt logs and answers `False` to.
pub(crate) async fn add_repo_key(call: &Call, k: AddKey) -> Result<bool, ExecError> {
    if !k.aptkey && !k.keydir.is_dir() {
        return Ok(false);
    }
    let aptkey = k.aptkey && has_apt_key();
    if let Some(id) = k.keyid.as_deref().filter(|i| !i.is_empty()) {
        let known = get_repo_keys(call, aptkey, &k.keydir)
            .await?
            .unwrap_or_default();
        if known.keys().any(|cur| cur.ends_with(id)) {
            return Ok(true);
        }
    }
    let out = if let Some(path) = k.path.as_deref().filter(|p| !p.is_empty()) {
        let cached = match crate::modules::cp::cache_one(call, path, &k.saltenv).await? {
            Value::String(p) if !p.is_empty() => p,
            _ => return Ok(false),
        };
        if aptkey {
            run_cmd(call, &["apt-key", "add", &cached]).await?
        } else {
            let key = dearmored(call, &cached).await?;
            let name = match &k.keyfile {
                Some(f) => f.clone(),
                None => {
                    let n = Path::new(&key)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    n.strip_suffix(".decrypted").map(str::to_owned).unwrap_or(n)
                }
            };
            let dest = k.keydir.join(name);
            std::fs::copy(&key, &dest).map_err(|e| {
                ExecError::execution(format!("copying {key} to {}: {e}", dest.display()))
            })?;
            return Ok(true);
        }
    } else if let Some(text) = k.text.as_deref().filter(|t| !t.is_empty()) {
        match crate::modules::run_cmd_stdin(call, &["apt-key", "add", "-"], Some(text.as_bytes()))
            .await
        {
            Ok(out) => out,
            Err(ExecError::CommandNotFound(_)) => return Ok(false),
            Err(e) => return Err(e),
        }
    } else if let Some(ks) = k.keyserver.as_deref().filter(|s| !s.is_empty()) {
        let Some(id) = k.keyid.as_deref().filter(|i| !i.is_empty()) else {
            return Err(ExecError::invocation(format!(
                "No keyid or keyid too short for keyserver: {ks}"
            )));
        };
        if aptkey {
            run_cmd(
                call,
                &["apt-key", "adv", "--batch", "--keyserver", ks, "--recv", id],
            )
            .await?
        } else {
            let Some(keyfile) = &k.keyfile else {
                return Ok(false);
            };
            let ring = k.keydir.join(keyfile).display().to_string();
            gpg(
                call,
                &[
                    "--no-default-keyring",
                    "--keyring",
                    &ring,
                    "--keyserver",
                    ks,
                    "--recv-keys",
                    id,
                ],
            )
            .await?
        }
    } else if let Some(id) = k.keyid.as_deref().filter(|i| !i.is_empty()) {
        return Err(ExecError::invocation(format!(
            "No keyserver specified for keyid: {id}"
        )));
    } else {
        return Err(ExecError::InvalidArguments(
            "add_repo_key() takes at least 1 argument (0 given)".into(),
        ));
    };
    // Salt's `cmd.run_all` leaves the command's exit code as the job's retcode.
    call.set_retcode(out.code);
    Ok(out.code == 0)
}

/// Salt's `_decrypt_key`: an ASCII-armored key dearmored to `<file>.decrypted`.
async fn dearmored(call: &Call, file: &str) -> Result<String, ExecError> {
    let armored =
        std::fs::read_to_string(file).is_ok_and(|t| t.trim_matches('-').starts_with("BEGIN PGP"));
    if !armored {
        return Ok(file.to_owned());
    }
    let out_path = format!("{file}.decrypted");
    let out = gpg(call, &["--yes", "--output", &out_path, "--dearmor", file]).await?;
    if out.code != 0 {
        return Err(ExecError::execution(format!(
            "Failed to decrypt the key {file}: {}",
            out.stderr.trim()
        )));
    }
    Ok(out_path)
}

/// Salt's `del_repo_key`: removes the key `keyid` (apt-key's, or the key file of `keydir`
/// holding it); answers the key id, or `false` when there is nothing to remove.
pub(crate) async fn del_repo_key(
    call: &Call,
    name: Option<&str>,
    aptkey: bool,
    keydir: &Path,
) -> Result<Value, ExecError> {
    if !aptkey && !keydir.is_dir() {
        return Ok(json!(false));
    }
    let aptkey = aptkey && has_apt_key();
    let kw = call.kwargs();
    let keyid = if kw
        .get("keyid_ppa")
        .is_some_and(saltq_semantics::python::truthy)
    {
        return Err(match name {
            Some(n) if n.starts_with("ppa:") => ExecError::execution(format!(
                "keyid_ppa looks the key of {n} up on Launchpad, which needs the network: saltq does not do it; give keyid instead"
            )),
            _ => ExecError::invocation("keyid_ppa requires that a PPA be passed"),
        });
    } else if let Some(id) = kw.get("keyid") {
        saltq_semantics::python::str(id)
    } else {
        return Err(ExecError::invocation(
            "keyid or keyid_ppa and PPA name must be passed",
        ));
    };
    if aptkey {
        let out = run_cmd(call, &["apt-key", "del", &keyid]).await?;
        if out.code != 0 {
            let mut msg = format!("Failed to remove keyid {keyid}");
            if !out.stderr.is_empty() {
                msg.push_str(&format!(": {}", out.stderr));
            }
            return Err(ExecError::execution(msg));
        }
        return Ok(json!(keyid));
    }
    if ![8, 16].contains(&keyid.len()) {
        return Ok(json!(false));
    }
    for (file, keys) in keys_by_file(call, keydir).await? {
        let holds = keys.values().any(|k| {
            k.get("keyid")
                .map(saltq_semantics::python::str)
                .is_some_and(|id| id.ends_with(&keyid))
        });
        if holds {
            std::fs::remove_file(&file)
                .map_err(|e| ExecError::execution(format!("{}: {e}", file.display())))?;
            return Ok(json!(keyid));
        }
    }
    Ok(json!(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colon_listing_as_salt_parses_it() {
        let out = "tru:o:1:1795676005:1:3:1:5\n\
pub:u:255:22:B5A30BA8DD4EFE2F:1795676005:::u:::scSC:::::ed25519:::0:\n\
fpr:::::::::AA81BCEBB6B06C4F417DD9ADB5A30BA8DD4EFE2F:\n\
uid:u::::1795676005::5F2C::ks test <ks@saltq.invalid>::::::::::0:\n\
sub:u:255:18:1122334455667788:1795676005::::::e:::::cv25519::\n\
fpr:::::::::99991122334455667788:\n";
        let got = parse_repo_keys(out);
        assert_eq!(
            Value::Object(got),
            json!({"B5A30BA8DD4EFE2F": {
                "algorithm": 22, "bits": 255, "capability": "scSC",
                "date_creation": 1795676005, "date_expiration": null,
                "keyid": "B5A30BA8DD4EFE2F", "validity": "u",
                "fingerprint": "AA81BCEBB6B06C4F417DD9ADB5A30BA8DD4EFE2F",
                "uid": "ks test <ks@saltq.invalid>", "uid_hash": "5F2C",
                "subkey": {"algorithm": 18, "bits": 255, "capability": "e",
                    "date_creation": 1795676005, "date_expiration": null,
                    "keyid": "1122334455667788", "validity": "u",
                    "fingerprint": "99991122334455667788"},
            }})
        );
    }
}
