//! `pkgrepo.managed`/`pkgrepo.absent` with apt replayed against Salt 3007.8's answers
//! (`data/pkgrepo/cases.json`, recorded by `data/pkgrepo/gen.py`): a throwaway sources file
//! in `/etc/apt/sources.list.d` and a keyring in `/etc/apt/keyrings`, both removed at the end
//! whatever happens. After each step the file's text and the keyring's presence are compared
//! with what Salt left. Needs root and apt; `pkgrepo.absent` refreshes the package lists
//! (network), as Salt's `del_repo` does.

#[path = "support/mod.rs"]
mod common;

use std::path::Path;

use serde_json::Value;

const LIST: &str = "/etc/apt/sources.list.d/saltq-rec-repo.list";
const KEYRING: &str = "/etc/apt/keyrings/saltq-rec-repo.gpg";
const KEYDIR: &str = "/tmp/saltq-rec-repo-key";

/// Removes the sources file, the keyring and the key given to `key_url`.
struct Cleanup;

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(LIST);
        let _ = std::fs::remove_file(KEYRING);
        let _ = std::fs::remove_dir_all(KEYDIR);
    }
}

/// The lock the apt-running tests share (see pkg_states.rs): the sources file this test
/// writes names repositories `apt-get update` cannot read.
fn apt_lock() -> std::fs::File {
    let f = std::fs::File::create("/tmp/saltq-apt-tests.lock")
        .unwrap_or_else(|e| panic!("/tmp/saltq-apt-tests.lock: {e}"));
    f.lock()
        .unwrap_or_else(|e| panic!("locking /tmp/saltq-apt-tests.lock: {e}"));
    f
}

#[tokio::test]
async fn pkgrepo_apt_matches_salt() {
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if !root || !Path::new("/etc/apt/keyrings").is_dir() || !Path::new("/usr/bin/gpg").is_file() {
        eprintln!("skipped: needs root, apt with /etc/apt/keyrings, and gpg");
        return;
    }
    if Path::new(LIST).exists() || Path::new(KEYRING).exists() {
        panic!("{LIST} or {KEYRING} exists already: left by another run?");
    }
    let _apt = apt_lock();
    let _cleanup = Cleanup;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pkgrepo/cases.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rec: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(KEYDIR).unwrap_or_else(|e| panic!("{KEYDIR}: {e}"));
    std::fs::write(
        format!("{KEYDIR}/saltq-rec-repo.gpg"),
        rec["key"].as_str().unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));

    let ctx = common::ctx();
    let mut failures = Vec::new();
    let steps = rec["steps"].as_array().cloned().unwrap_or_default();
    for step in &steps {
        let id = step["id"].as_str().unwrap_or_default();
        let fun = step["fun"].as_str().unwrap_or_default();
        let test = step["test"].as_bool().unwrap_or(false);
        let got = common::as_salt(&common::run_state(&ctx, fun, id, &step["args"], test).await);
        if got != step["ret"] {
            failures.push(format!(
                "{id} (test={test}):\n  salt:  {}\n  saltq: {got}",
                step["ret"]
            ));
        }
        let file = std::fs::read_to_string(LIST).ok();
        if step["file"].as_str() != file.as_deref() {
            failures.push(format!(
                "{id}: {LIST}:\n  salt:  {:?}\n  saltq: {file:?}",
                step["file"]
            ));
        }
        if step["keyring"].as_bool() != Some(Path::new(KEYRING).is_file()) {
            failures.push(format!("{id}: {KEYRING} present: salt {}", step["keyring"]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(steps.len(), 14);
    // The keyring apt reads is the key, dearmored: binary, and gpg finds the key in it.
    let keyring = std::fs::read(KEYRING).unwrap_or_else(|e| panic!("{KEYRING}: {e}"));
    assert!(!keyring.starts_with(b"-----"), "{KEYRING} is still armored");
    let shown = std::process::Command::new("gpg")
        .args(["--batch", "--show-keys", KEYRING])
        .output()
        .unwrap_or_else(|e| panic!("gpg: {e}"));
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("saltq test repo"),
        "{shown:?}"
    );
}
