//! The compiler and the runner against Salt 3007.8 on our own state trees: the cases and
//! Salt's answers are in `data/compile/` (`gen.py` holds the trees and records the answers
//! with `salt-call --local`). Compile answers (`show_top`, `show_sls`, `show_low_sls`,
//! `show_highstate`, `show_lowstate`, error lists) must match byte for byte as JSON, key
//! order included; run results are compared per state as in `requisites.rs`.

mod common;

use std::collections::BTreeMap;

use saltq_semantics::target::Nodegroups;
use saltq_states::compile::{
    CompileOptions, Highstate, Matches, Minion, TopOptions, highstate, show_highstate,
    show_low_sls, show_lowstate, show_sls, show_top, sls_high, split_mods,
};
use saltq_states::run::{RunOptions, call_high, retcode, single};
use serde_json::{Map, Value, json};

use std::sync::Arc;

use saltq_exec::CallContext;

use common::{DirFiles, MemTree, compare, data_dir, yaml};

/// One case of `data/compile/cases.json`.
#[derive(Debug, serde::Deserialize)]
struct Case {
    name: String,
    files: BTreeMap<String, String>,
    envs: Vec<String>,
    config: Map<String, Value>,
    call: Vec<String>,
    /// Why the case is not replayed yet (it needs another helper's state module).
    #[serde(default)]
    pending: Option<String>,
}

/// The minion a case describes: grains and nodegroups from its config, pillar from its
/// pillar files.
struct MinionData {
    grains: Value,
    pillar: Value,
    nodegroups: Nodegroups,
}

fn minion_of(case: &Case) -> MinionData {
    let mut grains = case.config.get("grains").cloned().unwrap_or(json!({}));
    grains["id"] = json!("minion");
    let mut pillar = Map::new();
    for (k, v) in &case.files {
        if let Some(path) = k.strip_prefix("pillar/") {
            if path == "top.sls" {
                continue;
            }
            if let Ok(Value::Object(m)) = yaml(v) {
                pillar.extend(m);
            }
        }
    }
    let nodegroups: Nodegroups =
        serde_json::from_value(case.config.get("nodegroups").cloned().unwrap_or(json!({})))
            .expect("nodegroups");
    MinionData {
        grains,
        pillar: Value::Object(pillar),
        nodegroups,
    }
}

fn top_options(case: &Case, saltenv: Option<String>) -> TopOptions {
    let s = |k: &str| {
        case.config
            .get(k)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let mut opts = TopOptions {
        saltenv,
        ..TopOptions::default()
    };
    if let Some(m) = s("top_file_merging_strategy") {
        opts.top_file_merging_strategy = m;
    }
    if let Some(d) = s("default_top") {
        opts.default_top = d;
    }
    opts.state_top_saltenv = s("state_top_saltenv");
    if let Some(Value::Array(order)) = case.config.get("env_order") {
        opts.env_order = order
            .iter()
            .filter_map(|e| e.as_str().map(str::to_owned))
            .collect();
    }
    opts
}

fn to_value(matches: &Matches) -> Value {
    Value::Object(matches.iter().map(|(e, l)| (e.clone(), json!(l))).collect())
}

/// The minion's context for a case: its grains, its files served as `salt://`.
fn case_ctx(case: &Case, root: &std::path::Path) -> CallContext {
    let m = minion_of(case);
    let mut grains = m.grains;
    grains["shell"] = json!("/bin/bash");
    let files = DirFiles::write(root, &case.files);
    let ctx = CallContext::local(grains, json!({"id": "minion"})).with_files(Arc::new(files));
    *ctx.pillar.write().expect("pillar lock") = m.pillar;
    ctx
}

async fn answer(case: &Case) -> Value {
    let tree = MemTree::from_prefixed(&case.files, &case.envs);
    let root = tempfile::tempdir().expect("tempdir");
    let ctx = || case_ctx(case, root.path());
    let fun = case.call[0].as_str();
    let mut args = Vec::new();
    let mut kwargs = Map::new();
    for word in &case.call[1..] {
        match word.split_once('=') {
            Some((k, v)) => {
                kwargs.insert(k.to_owned(), yaml(v).expect("kwarg"));
            }
            None => args.push(word.clone()),
        }
    }
    let saltenv = kwargs
        .get("saltenv")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let opts = RunOptions {
        test: kwargs.get("test") == Some(&json!(true)),
        // `state.sls` ignores a `failhard=` argument: only the option counts.
        failhard: case.config.get("failhard") == Some(&json!(true)),
        saltenv: "base".into(),
        ..RunOptions::default()
    };
    let m = minion_of(case);
    let minion = Minion {
        id: "minion",
        grains: &m.grains,
        pillar: &m.pillar,
        nodegroups: &m.nodegroups,
    };
    let top_opts = top_options(case, saltenv);
    let copts = CompileOptions {
        state_auto_order: case.config.get("state_auto_order") != Some(&json!(false)),
        ..CompileOptions::default()
    };
    let mods = || split_mods(&json!(args[0]));
    let either = |r: Result<Value, Vec<String>>| r.unwrap_or_else(|e| json!(e));
    match fun {
        "state.show_top" => either(show_top(&tree, &minion, &top_opts).map(|m| to_value(&m))),
        "state.show_highstate" => {
            either(show_highstate(&tree, &copts, &minion, &top_opts).map(Value::Object))
        }
        "state.show_lowstate" => {
            either(show_lowstate(&tree, &copts, &minion, &top_opts).map(|c| json!(c)))
        }
        "state.highstate" => match highstate(&tree, &copts, &minion, &top_opts, &Value::Null) {
            Highstate::Nothing(r) => Value::Object(r),
            Highstate::Errors(e) => json!(e),
            Highstate::High(high) => {
                either(call_high(high, &ctx(), &opts).await.map(Value::Object))
            }
        },
        "state.single" => {
            let mut kw = kwargs.clone();
            kw.shift_remove("test");
            let name = kw.get("name").cloned().unwrap_or(Value::Null);
            kw.shift_remove("name");
            match single(&args[0], &name, kw, &ctx(), &opts).await {
                Ok(r) => Value::Object(r),
                Err(e) => e,
            }
        }
        "state.show_sls" => either(show_sls(&tree, &copts, "base", &mods()).map(Value::Object)),
        "state.show_low_sls" => {
            either(show_low_sls(&tree, &copts, "base", &mods()).map(|c| json!(c)))
        }
        "state.sls" => match sls_high(&tree, &copts, "base", &mods(), &Value::Null) {
            Err(e) => json!(e),
            Ok(high) => {
                let ret = either(
                    call_high(high.clone(), &ctx(), &opts)
                        .await
                        .map(Value::Object),
                );
                if let Value::Object(m) = &ret {
                    // The retcode looks at the high data for `onfail_stop`.
                    let mut m = m.clone();
                    m.insert("__retcode__".into(), json!(retcode(&ret, Some(&high))));
                    return Value::Object(m);
                }
                ret
            }
        },
        other => panic!("{}: unknown call {other}", case.name),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compiler_and_runner_match_salt() {
    let dir = data_dir("compile");
    let cases: Vec<Case> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).expect("cases"))
            .expect("cases parse");
    let recorded: Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("recorded.json")).expect("rec"))
            .expect("recorded parses");
    let mut failures = Vec::new();
    let mut passed = 0;
    let mut pending = 0;
    for case in &cases {
        if case.pending.is_some() {
            pending += 1;
            continue;
        }
        let expected = &recorded[&case.name]["return"];
        let mut got = answer(case).await;
        let sls_code = got
            .as_object_mut()
            .and_then(|m| m.shift_remove("__retcode__"))
            .and_then(|c| c.as_i64());
        let is_run = ["state.sls", "state.highstate", "state.single"]
            .contains(&case.call[0].as_str())
            && got.is_object()
            && !got
                .as_object()
                .is_some_and(|m| m.contains_key("no_|-states_|-states_|-None"));
        let verdict = if is_run {
            compare(expected, &got)
        } else if serde_json::to_string(expected).ok() == serde_json::to_string(&got).ok() {
            Ok(())
        } else {
            Err(format!("  salt: {expected}\n  ours: {got}"))
        };
        let want_code = recorded[&case.name]["retcode"].as_i64().unwrap_or(-1);
        let code = match case.call[0].as_str() {
            _ if sls_code.is_some() => sls_code.unwrap_or_default(),
            "state.show_lowstate" => 0,
            "state.single" if !got.is_object() => 1,
            // An error list (strings) sets 1; low chunks are a list too.
            "state.show_top" | "state.show_sls" | "state.show_low_sls" => i64::from(
                got.as_array()
                    .is_some_and(|a| a.first().is_some_and(Value::is_string)),
            ),
            _ => i64::from(retcode(&got, None)),
        };
        let verdict = verdict.and_then(|()| {
            if code == want_code {
                Ok(())
            } else {
                Err(format!("  retcode: salt {want_code}, ours {code}"))
            }
        });
        match verdict {
            Ok(()) => passed += 1,
            Err(e) => failures.push(format!("{}:\n{e}", case.name)),
        }
    }
    assert!(pending <= 1, "{pending} cases pending");
    assert!(passed + failures.len() >= 60, "only {passed} cases ran");
    assert!(
        failures.is_empty(),
        "{passed} passed, {} failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
