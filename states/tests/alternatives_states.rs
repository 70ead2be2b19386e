//! `alternatives.install/remove/set/auto` replayed against Salt 3007.8
//! (`data/alternatives/cases.json`, recorded by `data/alternatives/gen.py`) with the host's
//! update-alternatives: Salt reads `/etc/alternatives`, so this runs only as root, on a
//! group named for this run alone (`saltq-rec-alt` replaced), removed again whatever happens.

mod sysrec;

use serde_json::{Map, Value, json};

/// Removes the run's group and its link.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::process::Command::new("update-alternatives")
            .args(["--remove-all", &self.0])
            .output();
        let _ = std::fs::remove_file(format!("/usr/local/bin/{}", self.0));
    }
}

fn salt_keys(v: &Value) -> Value {
    let mut out = Map::new();
    for k in ["name", "result", "comment", "changes"] {
        out.insert(k.into(), v[k].clone());
    }
    Value::Object(out)
}

#[tokio::test]
async fn alternatives_states_match_salt() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: update-alternatives on /etc/alternatives needs root");
        return;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let group = format!("saltq-alt-{}-{nanos}", std::process::id());
    let _cleanup = Cleanup(group.clone());
    let rec = sysrec::subst(&sysrec::load("alternatives"), "saltq-rec-alt", &group);
    let dir = tempfile::tempdir().expect("temp dir");
    let ctx = sysrec::ctx_for(&rec, dir.path(), Map::new(), json!({}));
    let root = dir.path().display().to_string();
    let mut failures = Vec::new();
    for step in rec["steps"].as_array().into_iter().flatten() {
        let got = salt_keys(&sysrec::run_step(&ctx, step, &root).await);
        let want = salt_keys(&step["ret"]);
        if got != want {
            failures.push(format!(
                "{} (test={}):\n  salt:  {want}\n  saltq: {got}",
                step["id"], step["test"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(sysrec::steps(&rec) >= 20);
    assert!(
        std::fs::symlink_metadata(format!("/etc/alternatives/{group}")).is_err(),
        "the last remove left /etc/alternatives/{group}"
    );
}
