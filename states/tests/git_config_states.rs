//! `git.config_set`/`git.config_unset` replayed against Salt 3007.8
//! (`data/git_config/cases.json`, recorded by `data/git_config/gen.py`) on a repository made
//! by `git init` in a temporary directory: each return compared with Salt's.

mod sysrec;

use serde_json::{Map, json};

#[tokio::test]
async fn git_config_states_match_salt() {
    let rec = sysrec::load("git_config");
    let dir = sysrec::scratch(&rec);
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .arg(dir.path().join("repo"))
        .status()
        .expect("git init");
    assert!(status.success());
    let ctx = sysrec::ctx_for(&rec, dir.path(), Map::new(), json!({}));
    // unset_all: Salt 3007.8 raises KeyError('foo.bar') after unsetting every value of the
    // key (its post-check indexes the key it just removed); saltq reports the values unset.
    let failures = sysrec::replay(&rec, &ctx, dir.path(), &["unset_all"]).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(sysrec::steps(&rec) >= 21);
    let step = rec["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["id"] == "unset_all"))
        .expect("unset_all step");
    // Run again on a fresh key to see what saltq says where Salt raised.
    let mut again = step.clone();
    again["args"] = json!([{"name": "foo.baz"}, {"all": true}, {"repo": "@DIR@/repo"}]);
    let root = dir.path().display().to_string();
    for v in ["one", "two"] {
        let ok = std::process::Command::new("git")
            .args(["config", "--add", "foo.baz", v])
            .current_dir(dir.path().join("repo"))
            .status()
            .expect("git config");
        assert!(ok.success());
    }
    let got = sysrec::run_step(&ctx, &again, &root).await;
    assert_eq!(
        got,
        json!({"name": "foo.baz", "result": true, "comment": "Value(s) successfully unset",
               "changes": {"foo.baz": ["one", "two"]}})
    );
}
