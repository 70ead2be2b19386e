//! dnf/yum repositories replayed against Salt 3007.8's answers on RedHat grains
//! (`data/pkgrepo_dnf/cases.json`, recorded by `data/pkgrepo_dnf/gen.py`): the state
//! functions `pkgrepo.managed`/`pkgrepo.absent` and the execution functions
//! `pkg.list_repos`/`get_repo`/`mod_repo`/`del_repo`, in a temporary repository directory
//! (`@DIR@` in the recording). After each step the directory's files are compared with the
//! ones Salt left.
//!
//! Phase 1 needs no yum/dnf config file on the host (Salt's answers there are the errors for
//! its absence); phase 2 writes `/etc/dnf/dnf.conf` naming the temporary directory as
//! `reposdir`, so it needs root and no `/etc/dnf` already, and removes it at the end
//! whatever happens.

#[path = "support/mod.rs"]
mod common;

use std::path::Path;

use saltq_exec::CallContext;
use saltq_states::modules::{StateCall, lookup};
use serde_json::{Map, Value, json};

/// The yum/dnf configs Salt looks for; phase 1 expects none.
const CONFIGS: [&str; 4] = [
    "/etc/yum/yum.conf",
    "/etc/yum.conf",
    "/etc/dnf/dnf.conf",
    "/etc/tdnf/tdnf.conf",
];

/// Removes `/etc/dnf`, made by phase 2.
struct DnfConf;

impl Drop for DnfConf {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all("/etc/dnf");
    }
}

fn subst(v: &Value, from: &str, to: &str) -> Value {
    match v {
        Value::String(s) => json!(s.replace(from, to)),
        Value::Array(a) => Value::Array(a.iter().map(|x| subst(x, from, to)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.replace(from, to), subst(x, from, to)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The files of `dir` by name.
fn files(dir: &Path) -> Value {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Value::Object(
        names
            .into_iter()
            .map(|n| {
                let text = std::fs::read_to_string(dir.join(&n)).unwrap_or_default();
                (n, json!(text))
            })
            .collect(),
    )
}

/// Runs one recorded step, answering in the recording's shape.
async fn run(ctx: &CallContext, step: &Value, dir: &str) -> Value {
    let fun = step["fun"].as_str().unwrap_or_default();
    let args = subst(&step["args"], "@DIR@", dir);
    if step["kind"] == "exec" {
        let kwargs: Map<String, Value> = args
            .as_array()
            .into_iter()
            .flatten()
            .map(|kv| (kv[0].as_str().unwrap_or_default().to_owned(), kv[1].clone()))
            .collect();
        return common::exec_as_salt_call(ctx, fun, kwargs).await;
    }
    let id = step["id"].as_str().unwrap_or_default();
    let (name, args) = common::chunk_args(&args);
    let f = lookup(fun).unwrap_or_else(|| panic!("{fun} is not registered"));
    let call = StateCall {
        ctx: ctx.clone(),
        name: name.clone(),
        args,
        test: step["test"].as_bool().unwrap_or(false),
        saltenv: "base".into(),
        sls: "step".into(),
        id: id.into(),
        accumulators: Default::default(),
    };
    match (f.handler)(call).await {
        Ok(ret) => common::as_salt(&ret),
        // As the runner reports a state function's error.
        Err(e) => json!({"name": name, "result": false, "changes": {},
            "comment": format!("An exception occurred in this state: {}", e.0)}),
    }
}

/// Replays one phase in a fresh directory; the failures.
async fn phase(ctx: &CallContext, rec: &Value, dir: &Path) -> Vec<String> {
    let d = dir.display().to_string();
    for (name, text) in rec["setup"].as_object().into_iter().flatten() {
        std::fs::write(dir.join(name), text.as_str().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let mut failures = Vec::new();
    for step in rec["steps"].as_array().into_iter().flatten() {
        let id = step["id"].as_str().unwrap_or_default();
        let got = subst(&run(ctx, step, &d).await, &d, "@DIR@");
        if got != step["ret"] {
            failures.push(format!("{id}:\n  salt:  {}\n  saltq: {got}", step["ret"]));
        }
        let have = files(dir);
        if have != step["files"] {
            failures.push(format!(
                "{id}: files\n  salt:  {}\n  saltq: {have}",
                step["files"]
            ));
        }
    }
    failures
}

#[tokio::test]
async fn pkgrepo_dnf_matches_salt() {
    if let Some(c) = CONFIGS.iter().find(|c| Path::new(c).exists()) {
        eprintln!("skipped: {c} exists, and Salt was recorded on a host without a yum/dnf config");
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pkgrepo_dnf/cases.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rec: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let mut grains = rec["grains"].clone();
    grains["id"] = json!("labminion");
    let ctx = CallContext::local(grains, json!({"id": "labminion"}));
    let phases = rec["phases"].as_array().cloned().unwrap_or_default();
    assert_eq!(phases.len(), 2);
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut failures = phase(&ctx, &phases[0], tmp.path()).await;
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if root && !Path::new("/etc/dnf").exists() {
        let _conf = DnfConf;
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all("/etc/dnf").unwrap_or_else(|e| panic!("/etc/dnf: {e}"));
        std::fs::write(
            "/etc/dnf/dnf.conf",
            format!("[main]\nreposdir={}\n", tmp.path().display()),
        )
        .unwrap_or_else(|e| panic!("/etc/dnf/dnf.conf: {e}"));
        failures.extend(phase(&ctx, &phases[1], tmp.path()).await);
        let steps = phases[1]["steps"].as_array().map_or(0, Vec::len);
        assert_eq!(steps, 29);
    } else {
        eprintln!("phase 2 skipped: needs root and no /etc/dnf (it writes /etc/dnf/dnf.conf)");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
