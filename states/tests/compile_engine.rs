//! The whole path, as a minion runs it: `state.*` through the engine (fileserver, renderer,
//! compiler, runner) on the recorded requisite and compile cases, compared with what Salt
//! 3007.8 answered (`data/requisites`, `data/compile`). Where the engine's composition
//! differs from Salt's the case is listed with the difference, so it shows when fixed.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use saltq_exec::{CallContext, PubInfo};
use saltq_states::Engine;
use serde_json::{Map, Value, json};

use common::{DirFiles, compare, data_dir, load_cases, yaml};

/// Cases whose engine answer differs from Salt's today, and how (none now; a case listed
/// here that starts matching fails the test, so the list stays true).
const ENGINE_DIFFERS: &[(&str, &str)] = &[];

/// A minion's context over these files, with the state engine attached.
fn ctx(
    root: &std::path::Path,
    files: &BTreeMap<String, String>,
    config: &Map<String, Value>,
) -> CallContext {
    let files = DirFiles::write(root, files);
    let mut grains = config.get("grains").cloned().unwrap_or(json!({}));
    grains["id"] = json!("minion");
    grains["shell"] = json!("/bin/bash");
    let mut opts = config.clone();
    opts.insert("id".into(), json!("minion"));
    opts.insert(
        "cachedir".into(),
        json!(root.join("cache").display().to_string()),
    );
    opts.shift_remove("grains");
    let ctx = CallContext::local(grains, Value::Object(opts))
        .with_files(Arc::new(files))
        .with_states(Arc::new(Engine::new()));
    let mut pillar = Map::new();
    if let Some(Value::Object(p)) = config.get("__pillar__") {
        pillar = p.clone();
    }
    *ctx.pillar.write().expect("pillar lock") = Value::Object(pillar);
    ctx
}

/// `salt-call` words into the call's arguments.
fn split_call(words: &[String]) -> (String, Vec<Value>, Map<String, Value>) {
    let mut args = Vec::new();
    let mut kwargs = Map::new();
    for w in &words[1..] {
        match w.split_once('=') {
            Some((k, v)) => {
                kwargs.insert(k.to_owned(), yaml(v).unwrap_or(json!(v)));
            }
            None => args.push(json!(w)),
        }
    }
    (words[0].clone(), args, kwargs)
}

async fn check(
    name: &str,
    files: BTreeMap<String, String>,
    config: Map<String, Value>,
    words: Vec<String>,
    expected: &Value,
    failures: &mut Vec<String>,
) {
    let root = tempfile::tempdir().expect("tempdir");
    let tmp = root.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let tmp_s = tmp.display().to_string();
    let files: BTreeMap<String, String> = files
        .into_iter()
        .map(|(k, v)| (k, v.replace("{TMP}", &tmp_s)))
        .collect();
    let ctx = ctx(root.path(), &files, &config);
    let (fun, args, kwargs) = split_call(&words);
    let out = saltq_exec::call(&ctx, &fun, args, kwargs, &PubInfo::default()).await;
    let got: Value = serde_json::from_str(
        &serde_json::to_string(&out.ret)
            .expect("json")
            .replace(&tmp_s, "{TMP}"),
    )
    .expect("json");
    let want_code = expected["retcode"].as_i64().unwrap_or(-1);
    let ret = &expected["return"];
    let verdict = if ret.is_object()
        && got.is_object()
        && fun != "state.show_top"
        && !fun.starts_with("state.show_")
    {
        compare(ret, &got)
    } else if serde_json::to_string(ret).ok() == serde_json::to_string(&got).ok() {
        Ok(())
    } else {
        Err(format!("  salt: {ret}\n  ours: {got}"))
    };
    let verdict = verdict.and_then(|()| {
        if i64::from(out.retcode) == want_code {
            Ok(())
        } else {
            Err(format!("  retcode: salt {want_code}, ours {}", out.retcode))
        }
    });
    let differs = ENGINE_DIFFERS.iter().find(|(n, _)| *n == name);
    match (verdict, differs) {
        (Ok(()), None) => {}
        (Ok(()), Some(_)) => failures.push(format!(
            "{name}: now matches Salt, drop it from ENGINE_DIFFERS"
        )),
        (Err(e), None) => failures.push(format!("{name}:\n{e}")),
        (Err(_), Some(_)) => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_answers_as_salt() {
    let mut failures = Vec::new();
    let mut ran = 0;
    // Salt's requisite cases: the SLS files sit in `base`.
    let (cases, recorded) = load_cases("requisites");
    for case in &cases {
        if case.name.contains("ordering_and_errors_10") {
            continue; // Salt itself crashes on this tree.
        }
        let files = case
            .files
            .iter()
            .map(|(k, v)| (format!("base/{k}"), v.clone()))
            .collect();
        let mut words = vec![case.call.fun.clone()];
        words.extend(case.call.args.iter().map(saltq_semantics::python::str));
        for (k, v) in &case.call.kwargs {
            let v = if v.is_string() {
                saltq_semantics::python::str(v)
            } else {
                v.to_string()
            };
            words.push(format!("{k}={v}"));
        }
        check(
            &case.name,
            files,
            Map::new(),
            words,
            &recorded[&case.name],
            &mut failures,
        )
        .await;
        ran += 1;
    }
    // Our compile and run cases.
    let dir = data_dir("compile");
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).expect("cases"))
            .expect("cases parse");
    let recorded: Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("recorded.json")).expect("rec"))
            .expect("recorded parses");
    for case in cases {
        let name = case["name"].as_str().unwrap_or_default().to_owned();
        let files: BTreeMap<String, String> =
            serde_json::from_value(case["files"].clone()).expect("files");
        let mut config = case["config"].as_object().cloned().unwrap_or_default();
        let mut pillar = Map::new();
        for (k, v) in &files {
            if let Some(p) = k.strip_prefix("pillar/")
                && p != "top.sls"
                && let Ok(Value::Object(m)) = yaml(v)
            {
                pillar.extend(m);
            }
        }
        config.insert("__pillar__".into(), Value::Object(pillar));
        let words: Vec<String> = serde_json::from_value(case["call"].clone()).expect("call");
        check(&name, files, config, words, &recorded[&name], &mut failures).await;
        ran += 1;
    }
    assert!(ran > 150, "only {ran} cases ran");
    assert!(
        failures.is_empty(),
        "{} of {ran} differ:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
