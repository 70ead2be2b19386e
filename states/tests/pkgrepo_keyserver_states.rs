//! apt signing keys from a keyserver replayed against Salt 3007.8's answers
//! (`data/pkgrepo_keyserver/cases.json`, recorded by `data/pkgrepo_keyserver/gen.py`):
//! `pkgrepo.managed` with `keyid`/`keyserver` and `aptkey: False`, `pkgrepo.absent` with
//! `keyid`, and `pkg.add_repo_key`/`get_repo_keys`/`del_repo_key`. The keyserver is a tiny
//! HKP server this test runs on 127.0.0.1, serving the recorded key. After each step the
//! sources file's text and the names of the key files are compared with what Salt left.
//!
//! Needs root, apt with /etc/apt/keyrings, gpg and dirmngr; `pkgrepo.absent` refreshes the
//! package lists, as Salt's `del_repo` does. Everything made is removed at the end, whatever
//! happens.

#[path = "support/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;

use serde_json::{Map, Value, json};

const LIST: &str = "/etc/apt/sources.list.d/saltq-rec-ks.list";
const KEYRINGS: &str = "/etc/apt/keyrings";
const KEYDIR: &str = "/tmp/saltq-rec-ks-keys";

/// The key files this test (and Salt's recording) make in /etc/apt/keyrings.
fn ours() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(KEYRINGS)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("saltq-rec-ks"))
        .collect();
    names.sort();
    names
}

fn listing(dir: &str) -> Value {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Value::Null;
    };
    let mut names: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    json!(names)
}

/// Removes the sources file, our key files and the exec steps' key directory.
struct Cleanup;

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(LIST);
        for n in ours() {
            let _ = std::fs::remove_file(Path::new(KEYRINGS).join(n));
        }
        let _ = std::fs::remove_dir_all(KEYDIR);
    }
}

/// The lock the apt-running tests share (see pkg_states.rs).
fn apt_lock() -> std::fs::File {
    let f = std::fs::File::create("/tmp/saltq-apt-tests.lock")
        .unwrap_or_else(|e| panic!("/tmp/saltq-apt-tests.lock: {e}"));
    f.lock()
        .unwrap_or_else(|e| panic!("locking /tmp/saltq-apt-tests.lock: {e}"));
    f
}

/// An HKP keyserver on 127.0.0.1 answering `GET /pks/lookup?...search=0x<keyid>` with
/// `key`, anything else with 404; its URL.
fn keyserver(key: String, keyid: String) -> String {
    let listener =
        TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("binding 127.0.0.1:0: {e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            // The rest of the request head.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let wanted = request.starts_with("GET /pks/lookup")
                && request
                    .to_lowercase()
                    .contains(&format!("search=0x{}", keyid.to_lowercase()));
            let mut out = &stream;
            let _ = if wanted {
                write!(
                    out,
                    "HTTP/1.0 200 OK\r\nContent-Type: application/pgp-keys\r\nContent-Length: {}\r\n\r\n{key}",
                    key.len()
                )
            } else {
                write!(out, "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            };
        }
    });
    format!("hkp://127.0.0.1:{port}")
}

fn subst(v: &Value, from: &str, to: &str) -> Value {
    match v {
        Value::String(s) => json!(s.replace(from, to)),
        Value::Array(a) => Value::Array(a.iter().map(|x| subst(x, from, to)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), subst(x, from, to)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[tokio::test]
async fn pkgrepo_keyserver_matches_salt() {
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let have = |p: &str| Path::new(p).exists();
    if !root || !have(KEYRINGS) || !have("/usr/bin/gpg") || !have("/usr/bin/dirmngr") {
        eprintln!("skipped: needs root, apt with /etc/apt/keyrings, gpg and dirmngr");
        return;
    }
    if have(LIST) || have(KEYDIR) || !ours().is_empty() {
        panic!("{LIST}, {KEYDIR} or {KEYRINGS}/saltq-rec-ks* exist already: left by another run?");
    }
    let _apt = apt_lock();
    let _cleanup = Cleanup;
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pkgrepo_keyserver/cases.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rec: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let url = keyserver(
        rec["key"].as_str().unwrap_or_default().to_owned(),
        rec["keyid"].as_str().unwrap_or_default().to_owned(),
    );
    std::fs::create_dir_all(KEYDIR).unwrap_or_else(|e| panic!("{KEYDIR}: {e}"));
    let ctx = common::ctx();
    let mut failures = Vec::new();
    let steps = rec["steps"].as_array().cloned().unwrap_or_default();
    for step in &steps {
        let id = step["id"].as_str().unwrap_or_default();
        let fun = step["fun"].as_str().unwrap_or_default();
        let test = step["test"].as_bool().unwrap_or(false);
        let args = subst(&step["args"], "@KEYSERVER@", &url);
        let got = if step["kind"] == "exec" {
            let kwargs: Map<String, Value> = args
                .as_array()
                .into_iter()
                .flatten()
                .map(|kv| (kv[0].as_str().unwrap_or_default().to_owned(), kv[1].clone()))
                .collect();
            common::exec_as_salt_call(&ctx, fun, kwargs).await
        } else {
            common::as_salt(&common::run_state(&ctx, fun, id, &args, test).await)
        };
        let got = subst(&got, &url, "@KEYSERVER@");
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
        let (keyrings, keydir) = (json!(ours()), listing(KEYDIR));
        if keyrings != step["keyrings"] || keydir != step["keydir"] {
            failures.push(format!(
                "{id}: key files\n  salt:  {} {}\n  saltq: {keyrings} {keydir}",
                step["keyrings"], step["keydir"]
            ));
        }
        // The keyring fetched holds the key.
        if id == "k02_managed" {
            let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let shown = std::process::Command::new("gpg")
                .args([
                    "--no-default-keyring",
                    "--keyring",
                    "/etc/apt/keyrings/saltq-rec-ks.gpg",
                    "--with-colons",
                    "--list-keys",
                ])
                .env("GNUPGHOME", home.path())
                .output()
                .unwrap_or_else(|e| panic!("gpg: {e}"));
            let _ = std::process::Command::new("gpgconf")
                .args(["--kill", "all"])
                .env("GNUPGHOME", home.path())
                .output();
            let listed = String::from_utf8_lossy(&shown.stdout).into_owned();
            if !listed.contains(rec["keyid"].as_str().unwrap_or("?")) {
                failures.push(format!("k02_managed: the keyring lacks the key: {listed}"));
            }
        }
    }
    assert_eq!(steps.len(), 17);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
