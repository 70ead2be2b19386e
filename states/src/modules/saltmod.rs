//! Salt's `salt` state module (`salt/states/saltmod.py`): the orchestration states. They run
//! on the master, in a state run of the orchestrate runner, and reach the master through the
//! call context's [`MasterClient`](saltq_exec::MasterClient): `salt.state` and `salt.function`
//! publish a job and gather its returns (Salt's `saltutil.cmd`), `salt.runner`,
//! `salt.parallel_runners` and `salt.wheel` run master-side functions, `salt.wait_for_event`
//! watches the master's bus. On a minion (no master client) they fail with a comment saying so.
//!
//! What each state concludes from the returns is a pure function over Salt's return shapes
//! ([`state_outcome`], [`function_outcome`], [`runner_outcome`], [`parallel_outcome`]),
//! tested without a master. Where Salt iterates a Python `set` (the minions that failed or
//! made no change), the names are listed sorted: Salt's order there is the hash order.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use saltq_exec::{Lit, MasterClient, MasterJob, Param, call_direct};
use saltq_semantics::python::{self, truthy};
use serde_json::{Map, Value, json};

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

/// The `salt` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "salt.state",
        params: &[
            Param::req("name"),
            Param::req("tgt"),
            Param::opt("ssh", Lit::Bool(false)),
            Param::opt("tgt_type", Lit::Str("glob")),
            Param::opt("ret", Lit::Str("")),
            Param::opt("ret_config", Lit::None),
            Param::opt("ret_kwargs", Lit::None),
            Param::opt("highstate", Lit::None),
            Param::opt("sls", Lit::None),
            Param::opt("top", Lit::None),
            Param::opt("saltenv", Lit::None),
            Param::opt("test", Lit::None),
            Param::opt("pillar", Lit::None),
            Param::opt("pillarenv", Lit::None),
            Param::opt("expect_minions", Lit::Bool(true)),
            Param::opt("exclude", Lit::None),
            Param::opt("fail_minions", Lit::None),
            Param::opt("allow_fail", Lit::Int(0)),
            Param::opt("concurrent", Lit::Bool(false)),
            Param::opt("timeout", Lit::None),
            Param::opt("batch", Lit::None),
            Param::opt("queue", Lit::Bool(false)),
            Param::opt("subset", Lit::None),
            Param::opt("orchestration_jid", Lit::None),
            Param::opt("failhard", Lit::None),
        ],
        kwargs: true,
        handler: state_handler!(state),
    },
    StateFunction {
        name: "salt.function",
        params: &[
            Param::req("name"),
            Param::req("tgt"),
            Param::opt("ssh", Lit::Bool(false)),
            Param::opt("tgt_type", Lit::Str("glob")),
            Param::opt("ret", Lit::Str("")),
            Param::opt("ret_config", Lit::None),
            Param::opt("ret_kwargs", Lit::None),
            Param::opt("expect_minions", Lit::Bool(false)),
            Param::opt("fail_minions", Lit::None),
            Param::opt("fail_function", Lit::None),
            Param::opt("arg", Lit::None),
            Param::opt("kwarg", Lit::None),
            Param::opt("timeout", Lit::None),
            Param::opt("batch", Lit::None),
            Param::opt("subset", Lit::None),
            Param::opt("failhard", Lit::None),
        ],
        kwargs: true,
        handler: state_handler!(function),
    },
    StateFunction {
        name: "salt.runner",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(runner),
    },
    StateFunction {
        name: "salt.parallel_runners",
        params: &[Param::req("name"), Param::req("runners")],
        kwargs: true,
        handler: state_handler!(parallel_runners),
    },
    StateFunction {
        name: "salt.wheel",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(wheel),
    },
    StateFunction {
        name: "salt.wait_for_event",
        params: &[
            Param::req("name"),
            Param::req("id_list"),
            Param::opt("event_id", Lit::Str("id")),
            Param::opt("timeout", Lit::Int(300)),
            Param::opt("node", Lit::Str("master")),
        ],
        kwargs: false,
        handler: state_handler!(wait_for_event),
    },
];

/// The master client, or the failure a state run outside the master gets.
fn master(call: &StateCall) -> Result<Arc<dyn MasterClient>, StateError> {
    call.ctx.master.clone().ok_or_else(|| {
        StateError(format!(
            "{} runs on the master only: apply it with `saltq run state.orchestrate`",
            call.id
        ))
    })
}

/// An argument or its default.
fn arg_or(call: &StateCall, key: &str, default: Value) -> Value {
    call.arg(key).cloned().unwrap_or(default)
}

/// A failed result with `comment`.
fn failed(name: &str, comment: impl Into<String>) -> Ret {
    Ret {
        name: name.to_owned(),
        result: Some(false),
        comment: comment.into(),
        ..Ret::default()
    }
}

/// `fail_minions` as Salt reads it: `None`, a comma-separated string or a list; anything
/// else is ignored with a warning.
fn fail_minions(v: Option<&Value>, ret: &mut Ret) -> Vec<String> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => s.split(',').map(|m| m.trim().to_owned()).collect(),
        Some(Value::Array(a)) => a.iter().map(python::str).collect(),
        Some(_) => {
            push_warning(
                ret,
                "'fail_minions' needs to be a list or a comma separated string. Ignored.",
            );
            Vec::new()
        }
    }
}

fn push_warning(ret: &mut Ret, w: &str) {
    let entry = ret
        .extra
        .entry("warnings")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(a) = entry {
        a.push(json!(w));
    }
}

/// The jid of the first minion's return (Salt's `__jid__`).
fn first_jid(cmd_ret: &Map<String, Value>, ret: &mut Ret) {
    if let Some(jid) = cmd_ret.values().next().and_then(|m| m.get("jid")) {
        ret.extra.insert("__jid__".into(), jid.clone());
    }
}

/// A minion's return in `saltutil.cmd`'s shape: `ret`, or `return` when there is no `ret`.
fn minion_ret(mdata: &Value) -> Option<&Value> {
    mdata.get("ret").or_else(|| mdata.get("return"))
}

/// What `salt.state` concludes from the gathered returns (the end of Salt's `state`).
pub fn state_outcome(
    name: &str,
    cmd_ret: &Map<String, Value>,
    fail_list: &Value,
    allow_fail: i64,
    expect_minions: bool,
    test: bool,
) -> Ret {
    let mut ret = Ret::new(name);
    first_jid(cmd_ret, &mut ret);
    let tolerated = fail_minions(Some(fail_list), &mut ret);
    if cmd_ret.is_empty() && expect_minions {
        ret.result = Some(false);
        ret.comment = "No minions returned".into();
        return ret;
    }
    let mut changes = Map::new();
    let mut fail = BTreeSet::new();
    let mut no_change = BTreeSet::new();
    for (minion, mdata) in cmd_ret {
        let failed = mdata.get("failed").is_some_and(truthy);
        let m_ret = if failed { None } else { minion_ret(mdata) };
        let ok = m_ret.is_some_and(|r| crate::run::check_result(r, true));
        if !ok {
            if !tolerated.contains(minion) {
                fail.insert(minion.clone());
            }
            changes.insert(minion.clone(), m_ret.cloned().unwrap_or(Value::Bool(false)));
            continue;
        }
        let changed = m_ret.and_then(Value::as_object).is_some_and(|m| {
            m.values()
                .any(|s| s.get("changes").is_some_and(|c| s.is_object() && truthy(c)))
        });
        if changed {
            changes.insert(minion.clone(), m_ret.cloned().unwrap_or(Value::Null));
        } else {
            no_change.insert(minion.clone());
        }
    }
    if !changes.is_empty() {
        ret.changes
            .insert("out".into(), Value::String("highstate".into()));
        ret.changes
            .insert("ret".into(), Value::Object(changes.clone()));
    }
    if fail.len() as i64 > allow_fail {
        ret.result = Some(false);
        ret.comment = format!(
            "Run failed on minions: {}",
            fail.into_iter().collect::<Vec<_>>().join(", ")
        );
    } else {
        ret.comment = "States ran successfully.".into();
        if !changes.is_empty() {
            let who: Vec<&str> = changes.keys().map(String::as_str).collect();
            ret.comment += &format!(" Updating {}.", who.join(", "));
        }
        if !no_change.is_empty() {
            let who: Vec<String> = no_change.into_iter().collect();
            ret.comment += &format!(" No changes made to {}.", who.join(", "));
        }
    }
    if test && !ret.changes.is_empty() && ret.result == Some(true) {
        ret.result = None;
    }
    ret
}

/// The target as given: a string, or a list (list targeting).
fn target(call: &StateCall) -> Value {
    match call.arg("tgt") {
        Some(v @ Value::Array(_)) => v.clone(),
        Some(v) => Value::String(python::str(v)),
        None => Value::String(String::new()),
    }
}

/// `timeout=` in seconds, if given.
fn timeout(call: &StateCall) -> Option<f64> {
    call.arg("timeout").and_then(|v| {
        v.as_f64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
    })
}

/// What saltq cannot do of `saltutil.cmd`'s options: salt-ssh, batches and subsets.
fn unsupported(call: &StateCall) -> Option<String> {
    if call.arg("ssh").is_some_and(truthy) {
        return Some(
            "ssh=True is refused: saltq has no salt-ssh; target minions connected to this master"
                .into(),
        );
    }
    for key in ["batch", "subset"] {
        if call.arg(key).is_some() {
            return Some(format!(
                "{key}= is not supported in orchestration by saltq: target the minions of each step directly"
            ));
        }
    }
    None
}

async fn state(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let allow_fail = match call.arg("allow_fail") {
        None => 0,
        Some(v) => match v
            .as_i64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        {
            Some(n) => n,
            None => {
                return Ok(failed(
                    &name,
                    "Passed invalid value for 'allow_fail', must be an int",
                ));
            }
        },
    };
    let mut arg = Vec::new();
    let fun = if call.arg("highstate").is_some_and(truthy) {
        "state.highstate"
    } else if let Some(top) = call.arg("top").filter(|v| truthy(v)) {
        arg.push(top.clone());
        "state.top"
    } else if let Some(sls) = call.arg("sls").filter(|v| truthy(v)) {
        arg.push(match sls {
            Value::Array(items) => {
                Value::String(items.iter().map(python::str).collect::<Vec<_>>().join(","))
            }
            other => other.clone(),
        });
        "state.sls"
    } else {
        return Ok(failed(
            &name,
            "No highstate or sls specified, no execution made",
        ));
    };
    let mut kwarg = Map::new();
    let test_arg = call.arg("test").cloned();
    if test_arg.is_some() || call.test {
        kwarg.insert(
            "test".into(),
            test_arg.clone().unwrap_or(Value::Bool(call.test)),
        );
    }
    if let Some(p) = call.arg("pillar").filter(|v| truthy(v)) {
        kwarg.insert("pillar".into(), p.clone());
    }
    for key in ["pillarenv", "saltenv", "exclude"] {
        if let Some(v) = call.arg(key) {
            kwarg.insert(key.into(), v.clone());
        }
    }
    kwarg.insert("queue".into(), arg_or(&call, "queue", Value::Bool(false)));
    match call.arg("concurrent") {
        None => {
            kwarg.insert("concurrent".into(), Value::Bool(false));
        }
        Some(Value::Bool(b)) => {
            kwarg.insert("concurrent".into(), Value::Bool(*b));
        }
        Some(_) => {
            return Ok(failed(
                &name,
                "Must pass in boolean for value of 'concurrent'",
            ));
        }
    }
    if let Some(why) = unsupported(&call) {
        return Ok(failed(&name, why));
    }
    let client = master(&call)?;
    let tgt = target(&call);
    let tgt_type = arg_or(&call, "tgt_type", json!("glob"));
    let expect_minions = call.arg("expect_minions").is_none_or(truthy);
    let job = MasterJob {
        tgt: tgt.clone(),
        tgt_type: python::str(&tgt_type),
        fun: fun.into(),
        arg: arg.clone(),
        kwarg: kwarg.clone(),
        ret: call.arg("ret").map(python::str).unwrap_or_default(),
        timeout: timeout(&call),
        expect_minions,
    };
    fire_args(
        client.as_ref(),
        json!({"type": "state", "tgt": tgt, "name": name, "args": {
            "arg": arg, "kwarg": kwarg, "ret": job.ret, "timeout": job.timeout,
            "tgt_type": tgt_type, "ssh": false, "expect_minions": expect_minions,
        }}),
    );
    let cmd_ret = client.cmd(job).await.map_err(StateError)?;
    let test = test_arg.as_ref().is_some_and(truthy) || call.test;
    Ok(state_outcome(
        &name,
        &cmd_ret,
        call.arg("fail_minions").unwrap_or(&Value::Null),
        allow_fail,
        expect_minions,
        test,
    ))
}

/// Salt's `fire_args`: `salt/run/<orchestration jid>/args` with what a step is about to do.
fn fire_args(client: &dyn MasterClient, data: Value) {
    let jid = client.orchestration_jid();
    if !jid.is_empty() {
        client.fire(&format!("salt/run/{jid}/args"), data);
    }
}

/// What `salt.function` concludes from the gathered returns; `judged` holds, per minion,
/// the answer of `fail_function` when one is given.
pub fn function_outcome(
    name: &str,
    cmd_ret: &Map<String, Value>,
    fail_list: &Value,
    judged: &Map<String, Value>,
    mut ret: Ret,
) -> Ret {
    first_jid(cmd_ret, &mut ret);
    let tolerated = fail_minions(Some(fail_list), &mut ret);
    let mut changes = Map::new();
    let mut fail = BTreeSet::new();
    for (minion, mdata) in cmd_ret {
        let mut m_ret = Value::Bool(false);
        if mdata.get("retcode").is_some_and(truthy) {
            ret.result = Some(false);
            fail.insert(minion.clone());
        }
        let m_func = if mdata.get("failed").is_some_and(truthy) {
            false
        } else {
            m_ret = minion_ret(mdata).cloned().unwrap_or(Value::Null);
            let ok = judged.get(minion).is_none_or(truthy);
            ok && m_ret != Value::Bool(false)
        };
        if !m_func && !tolerated.contains(minion) {
            fail.insert(minion.clone());
        }
        changes.insert(minion.clone(), m_ret);
    }
    if cmd_ret.is_empty() {
        ret.result = Some(false);
        ret.comment = "No minions responded".into();
        return ret;
    }
    if !changes.is_empty() {
        ret.changes
            .insert("ret".into(), Value::Object(changes.clone()));
    }
    if fail.is_empty() {
        ret.comment = "Function ran successfully.".into();
    } else {
        ret.result = Some(false);
        ret.comment = format!(
            "Running function {name} failed on minions: {}",
            fail.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    if !changes.is_empty() {
        let who: Vec<&str> = changes.keys().map(String::as_str).collect();
        ret.comment += &format!(" Function {name} ran on {}.", who.join(", "));
    }
    ret
}

async fn function(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    let kwarg = match call.arg("kwarg") {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Ok(failed(
                &name,
                format!("kwarg must be a dict, got {}", python::repr(other)),
            ));
        }
    };
    let arg = match call.arg("arg") {
        None => Vec::new(),
        Some(Value::String(s)) => {
            ret.extra.insert(
                "warnings".into(),
                json!(["Please specify 'arg' as a list of arguments."]),
            );
            s.split_whitespace().map(|w| json!(w)).collect()
        }
        Some(Value::Array(a)) => a.clone(),
        Some(other) => vec![other.clone()],
    };
    let tgt = target(&call);
    if call.test {
        ret.result = None;
        ret.comment = format!(
            "Function {name} would be executed on target {}",
            python::str(&tgt)
        );
        return Ok(ret);
    }
    if let Some(why) = unsupported(&call) {
        return Ok(failed(&name, why));
    }
    let client = master(&call)?;
    let tgt_type = arg_or(&call, "tgt_type", json!("glob"));
    let expect_minions = call.arg("expect_minions").is_some_and(truthy);
    let job = MasterJob {
        tgt: tgt.clone(),
        tgt_type: python::str(&tgt_type),
        fun: name.clone(),
        arg: arg.clone(),
        kwarg: kwarg.clone(),
        ret: call.arg("ret").map(python::str).unwrap_or_default(),
        timeout: timeout(&call),
        expect_minions,
    };
    fire_args(
        client.as_ref(),
        json!({"type": "function", "tgt": tgt, "name": name, "args": {
            "arg": arg, "kwarg": kwarg, "ret": job.ret, "timeout": job.timeout,
            "tgt_type": tgt_type, "ssh": false, "expect_minions": expect_minions,
            "_cmd_meta": true,
        }}),
    );
    let cmd_ret = match client.cmd(job).await {
        Ok(r) => r,
        Err(e) => return Ok(failed(&name, e)),
    };
    let mut judged = Map::new();
    if let Some(ff) = call.arg("fail_function").map(python::str) {
        for (minion, mdata) in &cmd_ret {
            if let Some(r) = minion_ret(mdata) {
                let v = call_direct(&call.ctx, &ff, vec![r.clone()], Map::new())
                    .await
                    .map_err(|e| StateError(format!("fail_function {ff} failed: {e:?}")))?;
                judged.insert(minion.clone(), v);
            }
        }
    }
    Ok(function_outcome(
        &name,
        &cmd_ret,
        call.arg("fail_minions").unwrap_or(&Value::Null),
        &judged,
        ret,
    ))
}

/// The runner call `saltutil.runner` makes of a state's arguments: `arg` and `kwarg` are
/// the runner's, every other argument joins `kwarg` (keys starting with `__` dropped).
fn runner_args(args: &Map<String, Value>) -> (Vec<Value>, Map<String, Value>) {
    let arg = match args.get("arg") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(other) => vec![other.clone()],
    };
    let mut kwarg = match args.get("kwarg") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    for (k, v) in args {
        if !matches!(k.as_str(), "arg" | "kwarg" | "name" | "jid" | "full_return")
            && !k.starts_with("__")
        {
            kwarg.insert(k.clone(), v.clone());
        }
    }
    (arg, kwarg)
}

/// The runners whose runs take the orchestration's jid (Salt's `orchestration_jid`).
fn is_orchestrate(name: &str) -> bool {
    matches!(name, "state.orchestrate" | "state.orch" | "state.sls")
}

/// What `salt.runner` (and `salt.wheel`, with `kind` "Wheel") concludes from a full return.
pub fn runner_outcome(kind: &str, name: &str, out: &Value) -> Ret {
    let value = out.get("return").cloned().unwrap_or(Value::Null);
    let errored = value.as_object().is_some_and(|m| m.contains_key("Error"));
    let success = !errored && out.get("success").is_none_or(truthy);
    let mut ret = Ret::new(name);
    ret.changes.insert("return".into(), value);
    ret.result = Some(success);
    ret.comment = format!(
        "{kind} function '{name}' {}.",
        if success { "executed" } else { "failed" }
    );
    if let Some(jid) = out.get("jid") {
        ret.extra.insert("__jid__".into(), jid.clone());
    }
    ret
}

async fn runner(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    if call.test {
        let mut ret = Ret::new(&name);
        ret.result = None;
        ret.comment = format!("Runner function '{name}' would be executed.");
        return Ok(ret);
    }
    let client = master(&call)?;
    let (arg, kwarg) = call_runner_args(&call.args, &name, client.as_ref());
    let out = client.runner(&name, arg, kwarg).await.map_err(StateError)?;
    Ok(runner_outcome("Runner", &name, &out))
}

/// The runner's arguments with the orchestration's jid for a nested orchestration, and the
/// `args` event Salt fires for it.
fn call_runner_args(
    args: &Map<String, Value>,
    name: &str,
    client: &dyn MasterClient,
) -> (Vec<Value>, Map<String, Value>) {
    let (arg, mut kwarg) = runner_args(args);
    let jid = client.orchestration_jid();
    if is_orchestrate(name) {
        kwarg.insert(
            "orchestration_jid".into(),
            if jid.is_empty() {
                Value::Null
            } else {
                json!(jid)
            },
        );
    }
    fire_args(
        client,
        json!({"type": "runner", "name": name, "args": arg, "kwargs": kwarg}),
    );
    (arg, kwarg)
}

async fn wheel(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    if call.test {
        let mut ret = Ret::new(&name);
        ret.result = None;
        ret.comment = format!("Wheel function '{name}' would be executed.");
        return Ok(ret);
    }
    let client = master(&call)?;
    let kwarg: Map<String, Value> = call
        .args
        .iter()
        .filter(|(k, _)| !k.starts_with("__"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    fire_args(
        client.as_ref(),
        json!({"type": "wheel", "name": name, "args": kwarg}),
    );
    let out = client
        .wheel(&name, Vec::new(), kwarg)
        .await
        .map_err(StateError)?;
    Ok(runner_outcome("Wheel", &name, &out))
}

/// `runners` as Salt normalises it: a string names one runner; each entry's list of
/// one-key dicts becomes a dict, its `name` defaulting to the entry's id.
fn normalise_runners(runners: &Value) -> Option<Vec<(String, Map<String, Value>)>> {
    match runners {
        Value::String(s) => {
            let mut m = Map::new();
            m.insert("name".into(), json!(s));
            Some(vec![(s.clone(), m)])
        }
        Value::Object(entries) => Some(
            entries
                .iter()
                .map(|(id, cfg)| {
                    let mut m = Map::new();
                    match cfg {
                        Value::Array(items) => {
                            for item in items {
                                if let Value::Object(kv) = item {
                                    m.extend(kv.clone());
                                }
                            }
                        }
                        Value::Object(kv) => m.extend(kv.clone()),
                        _ => {}
                    }
                    m.entry("name").or_insert_with(|| json!(id));
                    (id.clone(), m)
                })
                .collect(),
        ),
        _ => None,
    }
}

/// Salt's `extract_changes` over a highstate-shaped runner output.
fn extract_changes(obj: &Value) -> Value {
    let Value::Object(m) = obj else {
        return json!({});
    };
    if let Some(changes) = m.get("changes") {
        if changes.get("out").and_then(Value::as_str) == Some("highstate")
            && let Some(r) = changes.get("ret")
        {
            return r.clone();
        }
        return changes.clone();
    }
    let mut found = Map::new();
    for (k, v) in m {
        let c = extract_changes(v);
        if truthy(&c) {
            found.insert(k.clone(), c);
        }
    }
    Value::Object(found)
}

/// What `salt.parallel_runners` concludes from each runner's return value, by runner id in
/// the order given. `Err` is the failure Salt raises on a return it cannot read.
pub fn parallel_outcome(name: &str, outputs: &[(String, Value)]) -> Result<Ret, String> {
    let highstate = outputs.iter().all(|(_, out)| {
        out.get("outputter").and_then(Value::as_str) == Some("highstate")
            && out.get("data").is_some()
    });
    let mut ret = Ret::new(name);
    let failed: Vec<&String>;
    if highstate {
        failed = outputs
            .iter()
            .filter(|(_, out)| {
                out["data"]
                    .get("retcode")
                    .is_some_and(|r| r.as_f64() != Some(0.0))
            })
            .map(|(id, _)| id)
            .collect();
        ret.comment = if failed.is_empty() {
            "All runner functions executed successfully.".into()
        } else {
            failed
                .iter()
                .map(|id| {
                    let out = &outputs.iter().find(|(i, _)| i == *id).expect("listed").1;
                    format!(
                        "Runner {id} failed with return value:\n{}",
                        saltq_semantics::output::render(
                            saltq_semantics::output::Outputter::Nested,
                            out,
                            &saltq_semantics::output::OutputOptions::default(),
                        )
                        .trim_end()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        for (id, out) in outputs {
            let c = extract_changes(&out["data"]);
            if truthy(&c) {
                ret.changes.insert(id.clone(), c);
            }
        }
    } else {
        let mut f = Vec::new();
        for (id, out) in outputs {
            let Value::Object(m) = out else {
                return Err(format!(
                    "AttributeError: '{}' object has no attribute 'get' (the return of runner {id})",
                    python::type_name(out)
                ));
            };
            if m.get("exit_code").is_some_and(|c| c.as_f64() != Some(0.0)) {
                f.push(id);
            }
        }
        failed = f;
        ret.comment = match failed.as_slice() {
            [] => "All runner functions executed successfully.".into(),
            [one] => format!("Runner {one} failed."),
            many => format!(
                "Runners {} failed.",
                many.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let all: Map<String, Value> = outputs.iter().cloned().collect();
        ret.changes.insert("ret".into(), Value::Object(all));
    }
    ret.result = Some(failed.is_empty());
    Ok(ret)
}

async fn parallel_runners(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let Some(runners) = call.arg("runners").and_then(normalise_runners) else {
        return Ok(failed(
            &name,
            "The runners parameter must be a string or dict.",
        ));
    };
    let client = master(&call)?;
    let calls = runners.iter().map(|(_, cfg)| {
        let fun = cfg.get("name").map(python::str).unwrap_or_default();
        let kwarg = match cfg.get("kwarg") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        let mut args = Map::new();
        args.insert("kwarg".into(), Value::Object(kwarg));
        let (arg, kwarg) = call_runner_args(&args, &fun, client.as_ref());
        let client = client.clone();
        async move { client.runner(&fun, arg, kwarg).await }
    });
    let results = futures_join_all(calls.collect()).await;
    let mut outputs = Vec::new();
    for ((id, _), r) in runners.iter().zip(results) {
        match r {
            Ok(out) => outputs.push((id.clone(), out.get("return").cloned().unwrap_or_default())),
            Err(e) => {
                let mut ret = failed(
                    &name,
                    format!("One of the runners raised an exception: {e}"),
                );
                ret.extra.insert("success".into(), Value::Bool(false));
                return Ok(ret);
            }
        }
    }
    parallel_outcome(&name, &outputs)
        .map_err(|e| StateError(format!("An exception occurred in this state: {e}")))
}

/// Runs the futures at once (each runner in its own task, as Salt gives each a thread) and
/// answers their results in order.
async fn futures_join_all<F, T>(futs: Vec<F>) -> Vec<Result<T, String>>
where
    F: std::future::Future<Output = Result<T, String>> + Send + 'static,
    T: Send + 'static,
{
    let handles: Vec<_> = futs.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(match h.await {
            Ok(r) => r,
            Err(e) => Err(format!("the runner's task failed: {e}")),
        });
    }
    out
}

async fn wait_for_event(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = failed(&name, "");
    if call.test {
        ret.result = None;
        ret.comment = format!("Orchestration would wait for event '{name}'");
        return Ok(ret);
    }
    let mut id_list: Vec<Value> = match call.arg("id_list") {
        Some(Value::Array(a)) => a.clone(),
        Some(other) => vec![other.clone()],
        None => Vec::new(),
    };
    let event_id = call
        .arg("event_id")
        .map(python::str)
        .unwrap_or_else(|| "id".into());
    let secs = call
        .arg("timeout")
        .and_then(|v| {
            v.as_f64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
        .unwrap_or(300.0);
    if call.arg("node").is_some_and(|n| python::str(n) != "master") {
        return Ok(failed(
            &name,
            "node must be 'master': the orchestration watches the master's event bus",
        ));
    }
    let client = master(&call)?;
    let mut events = client.subscribe();
    let start = Instant::now();
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(secs.max(0.0));
    let mut seen = Vec::new();
    while !id_list.is_empty() {
        let event = tokio::select! {
            e = events.recv() => e,
            _ = tokio::time::sleep_until(deadline) => None,
        };
        let Some((tag, data)) = event else {
            ret.comment = "Timeout value reached.".into();
            if !seen.is_empty() {
                ret.changes
                    .insert("minions_seen".into(), Value::Array(seen));
            }
            return Ok(ret);
        };
        if !python::fnmatch(&tag, &name) {
            continue;
        }
        let val = data
            .get(&event_id)
            .filter(|v| !v.is_null())
            .or_else(|| data.get("data").and_then(|d| d.get(&event_id)));
        match val {
            Some(Value::Array(vals)) => {
                let found: Vec<Value> = id_list
                    .iter()
                    .filter(|id| vals.contains(id))
                    .cloned()
                    .collect();
                for f in found {
                    if let Some(i) = id_list.iter().position(|x| *x == f) {
                        id_list.remove(i);
                    }
                    seen.push(f);
                }
            }
            Some(v) => {
                if let Some(i) = id_list.iter().position(|x| x == v) {
                    seen.push(id_list.remove(i));
                }
            }
            None => {}
        }
    }
    ret.result = Some(true);
    ret.changes
        .insert("minions_seen".into(), Value::Array(seen));
    ret.comment = format!(
        "All events seen in {} seconds.",
        python::float_repr(start.elapsed().as_secs_f64())
    );
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn ok_run(changes: Value) -> Value {
        json!({"test_|-a_|-a_|-succeed": {"result": true, "changes": changes, "comment": ""}})
    }

    #[test]
    fn state_outcome_follows_salt() {
        let cmd = map(json!({
            "db1": {"ret": ok_run(json!({"x": 1})), "jid": "20260101000000000001", "retcode": 0},
            "web1": {"ret": ok_run(json!({})), "jid": "20260101000000000001", "retcode": 0},
        }));
        let r = state_outcome("s", &cmd, &Value::Null, 0, true, false);
        assert_eq!(r.result, Some(true));
        assert_eq!(
            r.comment,
            "States ran successfully. Updating db1. No changes made to web1."
        );
        assert_eq!(r.changes["out"], json!("highstate"));
        assert_eq!(r.changes["ret"]["db1"], ok_run(json!({"x": 1})));
        assert_eq!(r.extra["__jid__"], json!("20260101000000000001"));
        // Test mode with changes is the one case of result None.
        assert_eq!(
            state_outcome("s", &cmd, &Value::Null, 0, true, true).result,
            None
        );
    }

    #[test]
    fn state_outcome_failures_and_tolerance() {
        let bad = json!({"t_|-b_|-b_|-f": {"result": false, "changes": {}, "comment": "no"}});
        let cmd = map(json!({"web1": {"ret": bad, "retcode": 2}, "db1": {"failed": true}}));
        let r = state_outcome("s", &cmd, &Value::Null, 0, true, false);
        assert_eq!(r.result, Some(false));
        assert_eq!(r.comment, "Run failed on minions: db1, web1");
        assert_eq!(r.changes["ret"]["db1"], json!(false));
        let r = state_outcome("s", &cmd, &json!("web1, db1"), 0, true, false);
        assert_eq!(r.result, Some(true));
        assert_eq!(r.comment, "States ran successfully. Updating web1, db1.");
        let r = state_outcome("s", &cmd, &json!(["web1"]), 1, true, false);
        assert_eq!(r.result, Some(true));
        let r = state_outcome("s", &cmd, &json!(3), 0, true, false);
        assert_eq!(
            r.extra["warnings"],
            json!(["'fail_minions' needs to be a list or a comma separated string. Ignored."])
        );
        // A list of compile errors is a failure.
        let cmd = map(json!({"web1": {"ret": ["Rendering SLS failed"], "retcode": 1}}));
        let r = state_outcome("s", &cmd, &Value::Null, 0, true, false);
        assert_eq!(r.comment, "Run failed on minions: web1");
        let r = state_outcome("s", &Map::new(), &Value::Null, 0, true, false);
        assert_eq!(
            (r.result, r.comment.as_str()),
            (Some(false), "No minions returned")
        );
        let r = state_outcome("s", &Map::new(), &Value::Null, 0, false, false);
        assert_eq!(
            (r.result, r.comment.as_str()),
            (Some(true), "States ran successfully.")
        );
    }

    #[test]
    fn function_outcome_follows_salt() {
        let cmd = map(
            json!({"db1": {"ret": "hi", "retcode": 0, "jid": "1"}, "web1": {"ret": "hi", "retcode": 0}}),
        );
        let r = function_outcome(
            "test.echo",
            &cmd,
            &Value::Null,
            &Map::new(),
            Ret::new("test.echo"),
        );
        assert_eq!(r.result, Some(true));
        assert_eq!(
            r.comment,
            "Function ran successfully. Function test.echo ran on db1, web1."
        );
        assert_eq!(r.changes["ret"], json!({"db1": "hi", "web1": "hi"}));
        let cmd = map(
            json!({"db1": {"ret": "boom", "retcode": 1}, "web1": {"ret": false, "retcode": 0}}),
        );
        let r = function_outcome(
            "cmd.run",
            &cmd,
            &json!("web1"),
            &Map::new(),
            Ret::new("cmd.run"),
        );
        assert_eq!(r.result, Some(false));
        // A non-zero retcode fails whatever fail_minions says; a False return is tolerated.
        assert_eq!(
            r.comment,
            "Running function cmd.run failed on minions: db1 Function cmd.run ran on db1, web1."
        );
        let r = function_outcome("f", &Map::new(), &Value::Null, &Map::new(), Ret::new("f"));
        assert_eq!(
            (r.result, r.comment.as_str()),
            (Some(false), "No minions responded")
        );
        let judged = map(json!({"db1": false}));
        let cmd = map(json!({"db1": {"ret": "x", "retcode": 0}}));
        let r = function_outcome("f", &cmd, &Value::Null, &judged, Ret::new("f"));
        assert_eq!(r.result, Some(false));
    }

    #[test]
    fn runner_outcome_follows_salt() {
        let r = runner_outcome(
            "Runner",
            "manage.up",
            &json!({"jid": "2", "return": ["a"], "success": true}),
        );
        assert_eq!(r.result, Some(true));
        assert_eq!(r.comment, "Runner function 'manage.up' executed.");
        assert_eq!(r.changes["return"], json!(["a"]));
        assert_eq!(r.extra["__jid__"], json!("2"));
        let r = runner_outcome(
            "Wheel",
            "key.x",
            &json!({"return": {"Error": "no"}, "success": true}),
        );
        assert_eq!(
            (r.result, r.comment.as_str()),
            (Some(false), "Wheel function 'key.x' failed.")
        );
    }

    fn call(args: Value, test: bool) -> StateCall {
        StateCall {
            ctx: saltq_exec::CallContext::local(json!({}), json!({"id": "web1"})),
            name: "test.ping".into(),
            args: map(args),
            test,
            saltenv: "base".into(),
            sls: String::new(),
            id: "ping".into(),
            accumulators: Default::default(),
        }
    }

    #[tokio::test]
    async fn on_a_minion_the_states_say_they_run_on_the_master_only() {
        let e = function(call(json!({"tgt": "*"}), false))
            .await
            .unwrap_err();
        assert_eq!(
            e.0,
            "ping runs on the master only: apply it with `saltq run state.orchestrate`"
        );
        // Test mode answers without the master, as Salt's does.
        let r = function(call(json!({"tgt": "*"}), true)).await.unwrap();
        assert_eq!(r.result, None);
        assert_eq!(
            r.comment,
            "Function test.ping would be executed on target *"
        );
        let r = state(call(json!({"tgt": "*", "sls": "a", "ssh": true}), false))
            .await
            .unwrap();
        assert_eq!(r.result, Some(false));
        assert!(
            r.comment.starts_with("ssh=True is refused"),
            "{}",
            r.comment
        );
        let r = state(call(json!({"tgt": "*", "sls": "a", "batch": 2}), false))
            .await
            .unwrap();
        assert!(
            r.comment.starts_with("batch= is not supported"),
            "{}",
            r.comment
        );
        let r = state(call(
            json!({"tgt": "*", "sls": "a", "allow_fail": "x"}),
            false,
        ))
        .await
        .unwrap();
        assert_eq!(
            r.comment,
            "Passed invalid value for 'allow_fail', must be an int"
        );
    }

    #[test]
    fn runner_arguments_as_saltutil_runner_takes_them() {
        let (a, k) = runner_args(&map(
            json!({"arg": [1], "kwarg": {"x": 1}, "foo": "bar", "__env__": "base"}),
        ));
        assert_eq!(a, vec![json!(1)]);
        assert_eq!(Value::Object(k), json!({"x": 1, "foo": "bar"}));
    }

    #[test]
    fn parallel_outcome_follows_salt() {
        let outs = vec![
            ("a".to_owned(), json!({"args": [], "kwargs": {}})),
            ("b".to_owned(), json!({"exit_code": 1})),
        ];
        let r = parallel_outcome("p", &outs).unwrap();
        assert_eq!(
            (r.result, r.comment.as_str()),
            (Some(false), "Runner b failed.")
        );
        assert_eq!(r.changes["ret"]["a"], json!({"args": [], "kwargs": {}}));
        // A return that is not a dict fails the state, as Salt's AttributeError does.
        let outs = vec![("up".to_owned(), json!(["db1"]))];
        assert!(
            parallel_outcome("p", &outs)
                .unwrap_err()
                .contains("'list' object")
        );
        let orch = json!({"data": {"m_master": {"t_|-a_|-a_|-s": {"changes": {"out": "highstate", "ret": {"web1": 1}}}}}, "outputter": "highstate", "retcode": 0});
        let r = parallel_outcome("p", &[("o".to_owned(), orch)]).unwrap();
        assert_eq!(r.comment, "All runner functions executed successfully.");
        assert_eq!(
            r.changes["o"],
            json!({"m_master": {"t_|-a_|-a_|-s": {"web1": 1}}})
        );
        assert_eq!(
            normalise_runners(&json!({"x": [{"name": "manage.up"}], "test.arg": null})).unwrap()[1]
                .1["name"],
            json!("test.arg")
        );
    }
}
