//! Salt's answers to the functions formulas call from Jinja (`defaults`, `file` paths,
//! `slsutil`, `log`, `grains.filter_by`/`fetch`, `match`, `alternatives`,
//! `network.interface`), recorded by `formula_funcs_record.sh`
//! (`formula_funcs_salt3007.json`) and replayed here against a context with the recording
//! minion's id, static grains, pillar and `salt://core/defaults.yaml`. The host-dependent
//! cases (`/etc/os-release`, `/etc/alternatives`, the interfaces) ask this machine, as the
//! recording asked it.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::CallContext;
use crate::testutil::run_in;

/// The recording minion's context: grains, pillar and file roots as in the script.
fn context(root: &std::path::Path) -> CallContext {
    std::fs::create_dir_all(root.join("states/core")).unwrap();
    std::fs::write(
        root.join("states/core/defaults.yaml"),
        "users:\n  root: {shell: /bin/bash}\nport: 80\n",
    )
    .unwrap();
    let roots =
        saltq_fileserver::Roots::new([("base".to_owned(), vec![root.join("states")])].into());
    let files = saltq_fileserver::LocalFiles {
        roots,
        cachedir: root.join("cache"),
        hash_type: "sha256".into(),
    };
    let grains = json!({
        "id": "m1",
        "os_family": "Debian",
        "role": "webserver",
        "roles": ["web", "db"],
        "num": 12,
        "nested": {"key": "deep"},
        "ipv4": ["10.1.2.3", "127.0.0.1"],
    });
    let ctx = CallContext::local(grains, json!({"id": "m1", "cachedir": root.join("cache")}))
        .with_files(Arc::new(files));
    *ctx.pillar.write().unwrap() = json!({"app": {"name": "foobar"}});
    ctx
}

/// saltq's return in the recording's form: an error becomes the line salt-call prints on
/// stderr for it.
fn as_recorded(fun: &str, ret: &Value, success: bool) -> Value {
    let Value::String(text) = ret else {
        return ret.clone();
    };
    if success {
        return ret.clone();
    }
    let line = if let Some(msg) = text.strip_prefix("ERROR: ") {
        format!("Error running '{fun}': {msg}")
    } else if let Some(rest) = text.strip_prefix(&format!("Passed invalid arguments to {fun}: ")) {
        let msg = rest.split("\n\n").next().unwrap_or(rest);
        // salt-call ends the line with a period.
        format!("Passed invalid arguments: {msg}.")
    } else if let Some(rest) = text.strip_prefix("The minion function caused an exception: ") {
        match rest.strip_prefix("SaltException: ") {
            Some(msg) => format!("salt.exceptions.SaltException: {msg}"),
            None => match rest.strip_prefix("DeserializationError: ") {
                Some(msg) => format!("salt.serializers.DeserializationError: {msg}"),
                None => rest.to_owned(),
            },
        }
    } else {
        text.clone()
    };
    json!({ "_stderr": line })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_as_salt_3007_does() {
    let cases: Value = serde_json::from_str(include_str!("formula_funcs_salt3007.json")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let mut failed = Vec::new();
    let mut count = 0;
    for case in cases["cases"].as_array().unwrap() {
        let fun = case["fun"].as_str().unwrap();
        let out = run_in(&ctx, fun, case["args"].clone(), case["kwargs"].clone()).await;
        let got = as_recorded(fun, &out.ret, out.success);
        count += 1;
        if got != case["ret"] {
            failed.push(format!(
                "{fun} {} {}:\n  salt:  {}\n  saltq: {got}",
                case["args"], case["kwargs"], case["ret"]
            ));
        }
    }
    assert!(count > 100, "the recording has {count} cases");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// `defaults.merge` with `in_place=False` leaves what it was given alone, and `deepcopy`
/// copies; both through the table, as the CLI calls them.
#[tokio::test]
async fn merge_returns_the_merged_dict() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let out = run_in(
        &ctx,
        "defaults.merge",
        json!([{"a": {"b": 1}}, {"a": {"c": 2}}]),
        json!({"in_place": false}),
    )
    .await;
    assert_eq!(out.ret, json!({"a": {"b": 1, "c": 2}}));
    let out = run_in(
        &ctx,
        "slsutil.deserialize",
        json!(["json", "{\"a\": [1, null]}"]),
        json!({}),
    )
    .await;
    assert_eq!(out.ret, json!({"a": [1, null]}));
    let out = run_in(
        &ctx,
        "slsutil.deserialize",
        json!(["json", "{bad"]),
        json!({}),
    )
    .await;
    assert!(!out.success, "{}", out.ret);
}
