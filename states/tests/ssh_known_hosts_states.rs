//! `ssh_known_hosts.present`/`absent` replayed against Salt 3007.8
//! (`data/ssh_known_hosts/cases.json`, recorded by `data/ssh_known_hosts/gen.py`) on a
//! known_hosts file in a temporary directory (`config:`): each return compared with Salt's,
//! a name hashed by `ssh-keygen -H` (random salt) compared as "hashed", and the file's
//! entries checked with `ssh-keygen -F` at the end.

mod sysrec;

use serde_json::{Map, Value, json};

/// `|1|salt|hash` host names (hashed with a random salt) as one marker.
fn unhash(v: &Value) -> Value {
    match v {
        Value::String(s) if s.starts_with("|1|") => json!("|1|<hashed>"),
        Value::Array(a) => Value::Array(a.iter().map(unhash).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), unhash(v))).collect()),
        other => other.clone(),
    }
}

#[tokio::test]
async fn ssh_known_hosts_states_match_salt() {
    let rec = sysrec::load("ssh_known_hosts");
    let dir = sysrec::scratch(&rec);
    let ctx = sysrec::ctx_for(&rec, dir.path(), Map::new(), json!({}));
    let root = dir.path().display().to_string();
    let mut failures = Vec::new();
    for step in rec["steps"].as_array().into_iter().flatten() {
        let got = unhash(&sysrec::run_step(&ctx, step, &root).await);
        let want = unhash(&step["ret"]);
        if got != want {
            failures.push(format!(
                "{} (test={}):\n  salt:  {want}\n  saltq: {got}",
                step["id"], step["test"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(sysrec::steps(&rec) >= 18);
    // What is left: two.example, unhashed then hashed by the last hashing add.
    let file = dir.path().join("known_hosts");
    let out = std::process::Command::new("ssh-keygen")
        .args(["-F", "two.example", "-f"])
        .arg(&file)
        .output()
        .expect("ssh-keygen");
    assert!(
        out.status.success(),
        "two.example is gone from {}",
        file.display()
    );
    let text = std::fs::read_to_string(&file).expect("known_hosts");
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("|1|"), "{text}");
}
