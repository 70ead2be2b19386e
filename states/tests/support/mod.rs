//! Replaying Salt's recorded state returns (`data/<dir>/cases.json`, written by each
//! directory's `gen.py`) against the state functions, driving `StateCall` directly.
#![allow(dead_code)]

use std::path::PathBuf;

use saltq_exec::CallContext;
use saltq_states::modules::{Ret, StateCall, lookup};
use serde_json::{Map, Value, json};

/// A local context: no master, no events.
pub fn ctx() -> CallContext {
    CallContext::local(
        json!({"id": "labminion", "os": "Debian"}),
        json!({"id": "labminion"}),
    )
}

/// The recorded cases of `data/<dir>/cases.json`, or of `data/<file>.json` when `dir` names
/// a file (`pkg/installs`).
pub fn cases(dir: &str) -> Vec<Value> {
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let file = base.join(format!("{dir}.json"));
    let path = if file.is_file() {
        file
    } else {
        base.join(dir).join("cases.json")
    };
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str::<Vec<Value>>(&text)
        .unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// A chunk's arguments as the SLS gives them: a list of one-key dicts.
pub fn chunk_args(args: &Value) -> (String, Map<String, Value>) {
    let mut name = None;
    let mut out = Map::new();
    for item in args.as_array().into_iter().flatten() {
        for (k, v) in item.as_object().into_iter().flatten() {
            if k == "name" {
                name = Some(saltq_semantics::python::str(v));
            } else {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    (name.unwrap_or_default(), out)
}

/// Runs one state function as the runner would.
pub async fn run_state(ctx: &CallContext, fun: &str, id: &str, args: &Value, test: bool) -> Ret {
    let (name, args) = chunk_args(args);
    let name = if name.is_empty() { id.to_owned() } else { name };
    let f = lookup(fun).unwrap_or_else(|| panic!("{fun} is not registered"));
    let call = StateCall {
        ctx: ctx.clone(),
        name,
        args,
        test,
        saltenv: "base".into(),
        sls: "cases".into(),
        id: id.into(),
        accumulators: Default::default(),
    };
    match (f.handler)(call).await {
        Ok(ret) => ret,
        Err(e) => Ret {
            result: Some(false),
            comment: e.0,
            ..Ret::default()
        },
    }
}

/// A [`Ret`] in the shape of Salt's return (`name` replaced by `extra.name` when set).
pub fn as_salt(ret: &Ret) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(ret.name));
    m.insert("result".into(), json!(ret.result));
    m.insert("comment".into(), json!(ret.comment));
    m.insert("changes".into(), Value::Object(ret.changes.clone()));
    for (k, v) in &ret.extra {
        m.insert(k.clone(), v.clone());
    }
    Value::Object(m)
}

/// Replays every case of `data/<dir>`, comparing with Salt's answer; the number checked.
pub async fn check_cases(dir: &str, ctx: &CallContext) -> usize {
    check_cases_except(dir, ctx, &[]).await
}

/// [`check_cases`] but the cases `(id, test)` listed are run without comparing: their
/// difference from Salt lies outside the state modules (each listed with its reason where
/// it is called).
pub async fn check_cases_except(dir: &str, ctx: &CallContext, except: &[(&str, bool)]) -> usize {
    let mut failures = Vec::new();
    let all = cases(dir);
    let mut checked = 0;
    for case in &all {
        let id = case["id"].as_str().unwrap_or_default();
        let fun = case["fun"].as_str().unwrap_or_default();
        let test = case["test"].as_bool().unwrap_or(false);
        let compare = !except.contains(&(id, test));
        let ret = run_state(ctx, fun, id, &case["args"], test).await;
        let got = as_salt(&ret);
        if !compare {
            // Run (later cases may depend on what it did), not compared.
            continue;
        }
        checked += 1;
        if got != case["ret"] {
            failures.push(format!(
                "{dir}/{id} (test={test}):\n  salt:   {}\n  saltq:  {got}",
                case["ret"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    checked
}

/// Calls an execution function as `salt-call --local` reports it in the recordings:
/// `{"ret", "retcode"}` (any non-zero retcode is salt-call's exit status 1), or `{"error",
/// "retcode": 1}` with salt-call's text for an invocation or execution error.
pub async fn exec_as_salt_call(ctx: &CallContext, fun: &str, kwargs: Map<String, Value>) -> Value {
    let out = saltq_exec::call(
        ctx,
        fun,
        Vec::new(),
        kwargs,
        &saltq_exec::PubInfo::default(),
    )
    .await;
    if out.retcode != 0
        && let Value::String(text) = &out.ret
    {
        if let Some(m) = text.strip_prefix(&format!("ERROR executing '{fun}': ")) {
            return json!({"error": format!("Passed invalid arguments: {m}."), "retcode": 1});
        }
        if let Some(m) = text.strip_prefix("ERROR: ") {
            return json!({"error": format!("Error running '{fun}': {m}"), "retcode": 1});
        }
    }
    json!({"ret": out.ret, "retcode": i32::from(out.retcode != 0)})
}
