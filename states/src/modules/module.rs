//! Salt's `module` state module (`salt/states/module.py`): `module.run` runs execution
//! functions from a state, in both of Salt's syntaxes; `module.wait` (and its alias
//! `module.watch`) does nothing until watched, when `module.mod_watch` runs it.
//!
//! The syntax is chosen as Salt 3007 does: when every argument other than `name` is a
//! function name (it holds a `.`), the chunk uses the new syntax
//! (`- test.echo: [{text: hi}]`, several functions allowed, `name` ignored); otherwise the
//! legacy one (`- name: test.echo`, `- text: hi`, the function's own `name`/`fun`/`state`/
//! `saltenv` arguments given as `m_name`, ...).
//!
//! With the new syntax Salt's return `name` is the list of the chunk's function keys: it is
//! put in [`Ret::extra`] under `name`, to replace the string name in the result.

use serde_json::{Map, Value};

use saltq_exec::{DirectError, ExecError, Lit, Param, available, call_direct, lookup};
use saltq_semantics::python;

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

/// The `module` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "module.run",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(run),
    },
    StateFunction {
        name: "module.wait",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(wait),
    },
    StateFunction {
        name: "module.watch",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(wait),
    },
    StateFunction {
        name: "module.mod_watch",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(run),
    },
];

/// Keys of a chunk that never name a function.
const IGNORED: &[&str] = &["name", "__reqs__", "sfun"];

async fn wait(call: StateCall) -> Result<Ret, StateError> {
    Ok(Ret::new(call.name))
}

/// Whether the chunk uses the legacy syntax (Salt's test in `module.run`).
pub(crate) fn is_legacy(args: &Map<String, Value>) -> bool {
    let keys: Vec<&String> = args
        .keys()
        .filter(|k| !IGNORED.contains(&k.as_str()))
        .collect();
    // The chunk's `name` is always among Salt's kwargs, so no other key means legacy.
    keys.is_empty() || keys.iter().any(|k| !k.contains('.'))
}

async fn run(call: StateCall) -> Result<Ret, StateError> {
    if is_legacy(&call.args) {
        legacy_run(call).await
    } else {
        new_run(call).await
    }
}

/// Salt's `_get_result`: a bool is the result; a dict fails when any `result` is `False` or
/// any `retcode` is not 0, at any depth; anything else succeeded.
pub(crate) fn get_result(ret: &Value) -> bool {
    match ret {
        Value::Bool(b) => *b,
        Value::Object(m) => dict_result(m),
        _ => true,
    }
}

fn dict_result(m: &Map<String, Value>) -> bool {
    for (key, val) in m {
        if (key == "result" && val == &Value::Bool(false)) || (key == "retcode" && !is_zero(val)) {
            return false;
        }
        if let Value::Object(inner) = val
            && !dict_result(inner)
        {
            return false;
        }
    }
    true
}

/// Python's `val != 0` (`False == 0` and `0.0 == 0` too).
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Bool(b) => !b,
        _ => false,
    }
}

/// The message Python's `str(exc)` gives for an execution function's error.
fn error_text(e: &ExecError) -> String {
    match e {
        ExecError::Exception { msg, .. } => msg.clone(),
        other => other.to_string(),
    }
}

/// Salt's `salt.utils.functools.call_function` argument handling: `func_args` is a list of
/// positional values and `{key: value}` dicts; a dict's key that names a required
/// parameter is passed positionally in the parameter's place, and every default is passed
/// by keyword (so a default also given by position is given twice, Python's `TypeError`).
/// Errors are Salt's `SaltInvocationError` texts.
pub(crate) fn arrange(
    params: &[Param],
    func_args: &Value,
) -> Result<(Vec<Value>, Map<String, Value>), String> {
    let items: Vec<Value> = match func_args {
        Value::Null => Vec::new(),
        Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
    let positional: Vec<&Param> = params.iter().filter(|p| !p.keyword_only).collect();
    let expected: Vec<&str> = positional
        .iter()
        .filter(|p| p.default.is_none())
        .map(|p| p.name)
        .collect();
    let defaults: Vec<(&str, Lit)> = positional
        .iter()
        .filter_map(|p| p.default.map(|d| (p.name, d)))
        .collect();
    // Salt passes every default explicitly, by keyword.
    let mut kwargs: Map<String, Value> = defaults
        .iter()
        .map(|(n, d)| ((*n).to_owned(), d.to_value()))
        .collect();
    let mut args = Vec::new();
    let mut as_positional: Map<String, Value> = Map::new();
    for item in items.into_iter().rev() {
        match item {
            Value::Object(set) => {
                for (key, val) in &set {
                    if expected.contains(&key.as_str()) {
                        as_positional.insert(key.clone(), val.clone());
                    } else {
                        kwargs.extend(set.clone());
                    }
                }
            }
            other => args.push(other),
        }
    }
    args.reverse();
    for name in &expected {
        if let Some(v) = as_positional.get(*name) {
            args.push(v.clone());
        }
    }
    let want = expected.len();
    let mut passed = args.len();
    let mut missing = Vec::new();
    if want > passed {
        for p in positional.iter().skip(passed) {
            if kwargs.contains_key(p.name) {
                passed += 1;
            } else {
                missing.push(p.name);
            }
        }
    }
    if !missing.is_empty() {
        return Err(format!("Missing arguments: {}", missing.join(", ")));
    }
    if want > passed {
        return Err(format!(
            "Function expects {want} positional parameters, got only {passed}"
        ));
    }
    Ok((args, kwargs))
}

/// The new syntax: every `module.function` key of the chunk, each with its argument list.
async fn new_run(call: StateCall) -> Result<Ret, StateError> {
    let names: Vec<Value> = call
        .args
        .keys()
        .filter(|k| k.as_str() != "name")
        .map(|k| Value::String(k.clone()))
        .collect();
    let mut ret = Ret::new(call.name.clone());
    ret.extra.insert("name".into(), Value::Array(names));
    ret.result = None;
    let functions: Vec<&String> = call.args.keys().filter(|k| k.contains('.')).collect();
    if functions.is_empty() {
        ret.comment = "No function provided.".into();
        ret.result = Some(false);
        return Ok(ret);
    }
    let base = |f: &str| f.split(':').next().unwrap_or(f).to_owned();
    let mut missing = Vec::new();
    let mut tests = Vec::new();
    for func in &functions {
        let f = base(func);
        if !available(&call.ctx, &f).await {
            missing.push(f);
        } else if call.test {
            tests.push(f);
        }
    }
    if !missing.is_empty() || !tests.is_empty() {
        // Salt's `plr` is `len > 1 or ""`: `True` or nothing.
        let plural = |n: usize| if n > 1 { "True" } else { "" };
        let mut parts = Vec::new();
        parts.push(if missing.is_empty() {
            String::new()
        } else {
            format!(
                "Unavailable function{}: {}.",
                plural(missing.len()),
                missing.join(", ")
            )
        });
        parts.push(if tests.is_empty() {
            String::new()
        } else {
            format!(
                "Function{} {} to be executed.",
                plural(tests.len()),
                tests.join(", ")
            )
        });
        ret.comment = parts.join(" ").trim().to_owned();
        if !missing.is_empty() {
            ret.result = Some(false);
        }
        return Ok(ret);
    }

    let mut failures = Vec::new();
    let mut success = Vec::new();
    for func in functions {
        let f = base(func);
        let params: &[Param] = lookup(&f).map_or(&[], |def| def.params);
        let (args, kwargs) = match arrange(params, &call.args[func.as_str()]) {
            Ok(split) => split,
            Err(e) => {
                failures.push(format!("'{func}' failed: {e}"));
                continue;
            }
        };
        let out = match call_direct(&call.ctx, &f, args, kwargs).await {
            Ok(v) => v,
            Err(DirectError::Missing) => {
                failures.push(format!("'{func}' failed: '{f}' is not available"));
                continue;
            }
            Err(DirectError::Failed(e)) => {
                failures.push(format!("'{func}' failed: {}", error_text(&e)));
                continue;
            }
        };
        if !get_result(&out) {
            match &out {
                Value::Object(m) => failures.push(format!(
                    "'{func}' failed: {}",
                    m.get("comment")
                        .map_or_else(|| "(error message N/A)".to_owned(), python::str)
                )),
                Value::Bool(false) => failures.push(format!("'{func}': False")),
                _ => {}
            }
        } else {
            let text = match &out {
                Value::Object(m) => m
                    .get("comment")
                    .map_or_else(|| "Success".to_owned(), python::str),
                other => python::str(other),
            };
            success.push(format!("{func}: {text}"));
            ret.changes.insert(func.clone(), out);
        }
    }
    ret.result = Some(failures.is_empty());
    failures.extend(success);
    ret.comment = failures.join(", ");
    Ok(ret)
}

/// The argument a legacy chunk gives for the function's parameter `arg`: the function's
/// `name`, `fun`, `names`, `state` and `saltenv` are taken from `m_<arg>`.
fn legacy_key(arg: &str) -> String {
    match arg {
        "name" | "fun" | "names" | "state" | "saltenv" => format!("m_{arg}"),
        other => other.to_owned(),
    }
}

/// The legacy syntax: the chunk's `name` is the function, its other arguments the
/// function's.
async fn legacy_run(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(name.clone());
    ret.result = None;
    if !available(&call.ctx, &name).await {
        ret.comment = format!("Module function {name} is not available");
        ret.result = Some(false);
        return Ok(ret);
    }
    if call.test {
        ret.comment = format!("Module function {name} is set to execute");
        return Ok(ret);
    }
    // External functions have no known signature: they get every argument by keyword.
    let def = lookup(&name);
    let mut kwargs = call.args.clone();
    for key in IGNORED {
        kwargs.remove(*key);
    }
    let Some(def) = def else {
        return Ok(legacy_finish(ret, &call, &name, Vec::new(), kwargs).await);
    };
    let positional: Vec<&Param> = def.params.iter().filter(|p| !p.keyword_only).collect();
    let mut defaults: Map<String, Value> = positional
        .iter()
        .filter_map(|p| p.default.map(|d| (p.name.to_owned(), d.to_value())))
        .collect();
    let keys: Vec<String> = defaults.keys().cloned().collect();
    for arg in keys {
        let renamed = legacy_key(&arg);
        if renamed != arg
            && arg != "names"
            && let Some(v) = kwargs.shift_remove(&renamed)
        {
            defaults.insert(arg.clone(), v);
        }
        if let Some(v) = kwargs.shift_remove(&arg) {
            defaults.insert(arg, v);
        }
    }
    let mut args = Vec::new();
    let mut missing = Vec::new();
    for p in &positional {
        let rarg = legacy_key(p.name);
        if !kwargs.contains_key(&rarg) && !defaults.contains_key(p.name) {
            missing.push(rarg);
            continue;
        }
        match defaults.get(p.name) {
            Some(v) => args.push(v.clone()),
            None => args.extend(kwargs.shift_remove(&rarg)),
        }
    }
    if !missing.is_empty() {
        let mut comment = String::from("The following arguments are missing:");
        for arg in &missing {
            comment.push(' ');
            comment.push_str(arg);
        }
        ret.comment = comment;
        ret.result = Some(false);
        return Ok(ret);
    }
    if def.varargs
        && let Some(varargs) = kwargs.shift_remove("args")
    {
        let Value::Array(items) = varargs else {
            ret.comment = "'args' must be a list.".into();
            ret.result = Some(false);
            return Ok(ret);
        };
        args.extend(items);
    }
    let mut nkwargs = Map::new();
    if def.kwargs
        && let Some(given) = kwargs.shift_remove("kwargs")
    {
        let Value::Object(given) = given else {
            ret.comment = "'kwargs' must be a dict.".into();
            ret.result = Some(false);
            return Ok(ret);
        };
        nkwargs = given;
    }
    Ok(legacy_finish(ret, &call, &name, args, nkwargs).await)
}

async fn legacy_finish(
    mut ret: Ret,
    call: &StateCall,
    name: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
) -> Ret {
    match call_direct(&call.ctx, name, args, kwargs).await {
        Ok(out) => {
            ret.result = Some(get_result(&out));
            ret.changes.insert("ret".into(), out);
            ret.comment = format!("Module function {name} executed");
        }
        Err(e) => {
            let text = match e {
                DirectError::Missing => format!("'{name}' is not available"),
                DirectError::Failed(e) => error_text(&e),
            };
            ret.comment = format!("Module function {name} threw an exception. Exception: {text}");
            ret.result = Some(false);
        }
    }
    ret
}
