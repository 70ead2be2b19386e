//! The `test` state module (`salt/states/test.py`): states that succeed, fail, change or
//! not on demand, for trying out requisites and outputs.

use saltq_exec::{Lit, Param};
use saltq_semantics::python::str as py_str;
use serde_json::{Map, Value, json};

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

const NAME_ONLY: &[Param] = &[Param::req("name")];

/// The `test` state functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "test.nop",
        params: NAME_ONLY,
        kwargs: true,
        handler: state_handler!(nop),
    },
    StateFunction {
        name: "test.succeed_without_changes",
        params: NAME_ONLY,
        kwargs: true,
        handler: state_handler!(succeed_without_changes),
    },
    StateFunction {
        name: "test.fail_without_changes",
        params: NAME_ONLY,
        kwargs: true,
        handler: state_handler!(fail_without_changes),
    },
    StateFunction {
        name: "test.succeed_with_changes",
        params: NAME_ONLY,
        kwargs: true,
        handler: state_handler!(succeed_with_changes),
    },
    StateFunction {
        name: "test.fail_with_changes",
        params: NAME_ONLY,
        kwargs: true,
        handler: state_handler!(fail_with_changes),
    },
    StateFunction {
        name: "test.configurable_test_state",
        params: &[
            Param::req("name"),
            Param::opt("changes", Lit::Bool(true)),
            Param::opt("result", Lit::Bool(true)),
            Param::opt("comment", Lit::Str("")),
            Param::opt("warnings", Lit::None),
            Param::opt("allow_test_mode_failure", Lit::Bool(false)),
        ],
        kwargs: false,
        handler: state_handler!(configurable_test_state),
    },
    StateFunction {
        name: "test.show_notification",
        params: &[Param::req("name"), Param::opt("text", Lit::None)],
        kwargs: true,
        handler: state_handler!(show_notification),
    },
    StateFunction {
        name: "test.check_pillar",
        params: &[
            Param::req("name"),
            Param::opt("present", Lit::None),
            Param::opt("boolean", Lit::None),
            Param::opt("integer", Lit::None),
            Param::opt("string", Lit::None),
            Param::opt("listing", Lit::None),
            Param::opt("dictionary", Lit::None),
            Param::opt("verbose", Lit::Bool(false)),
        ],
        kwargs: false,
        handler: state_handler!(check_pillar),
    },
    StateFunction {
        name: "test.mod_watch",
        params: &[Param::req("name"), Param::opt("sfun", Lit::None)],
        kwargs: true,
        handler: state_handler!(mod_watch),
    },
];

/// The pretend change the `*_with_changes` states report.
fn pretend_change() -> Map<String, Value> {
    let Value::Object(m) =
        json!({"testing": {"old": "Unchanged", "new": "Something pretended to change"}})
    else {
        unreachable!("a literal object")
    };
    m
}

/// `comment=` as given, or the default.
fn comment_or(call: &StateCall, default: &str) -> String {
    call.args
        .get("comment")
        .map(py_str)
        .unwrap_or_else(|| default.to_owned())
}

async fn nop(call: StateCall) -> Result<Ret, StateError> {
    let mut ret = Ret::new(&call.name);
    ret.comment = "Success!".into();
    Ok(ret)
}

async fn succeed_without_changes(call: StateCall) -> Result<Ret, StateError> {
    let mut ret = Ret::new(&call.name);
    ret.comment = comment_or(&call, "Success!");
    Ok(ret)
}

async fn fail_without_changes(call: StateCall) -> Result<Ret, StateError> {
    let mut ret = Ret::new(&call.name);
    ret.result = Some(false);
    ret.comment = comment_or(&call, "Failure!");
    if call.test {
        ret.comment = "If we weren't testing, this would be a failure!".into();
    }
    Ok(ret)
}

async fn succeed_with_changes(call: StateCall) -> Result<Ret, StateError> {
    let mut ret = Ret::new(&call.name);
    ret.comment = comment_or(&call, "Success!");
    ret.changes = pretend_change();
    if call.test {
        ret.result = None;
        ret.comment = "If we weren't testing, this would be successful with changes".into();
    }
    Ok(ret)
}

async fn fail_with_changes(call: StateCall) -> Result<Ret, StateError> {
    let mut ret = Ret::new(&call.name);
    ret.result = Some(false);
    ret.comment = comment_or(&call, "Failure!");
    ret.changes = pretend_change();
    if call.test {
        ret.result = None;
        ret.comment = "If we weren't testing, this would be failed with changes".into();
    }
    Ok(ret)
}

/// Salt's `random.choice((True, False))`.
fn coin() -> bool {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos()
        .is_multiple_of(2)
}

async fn configurable_test_state(call: StateCall) -> Result<Ret, StateError> {
    let changes = call.args.get("changes").cloned().unwrap_or(json!(true));
    let result = call.args.get("result").cloned().unwrap_or(json!(true));
    let comment = call.args.get("comment").map(py_str).unwrap_or_default();
    let mut ret = Ret::new(&call.name);
    ret.result = Some(false);
    ret.comment = comment.clone();
    match &changes {
        Value::Bool(true) => ret.changes = pretend_change(),
        Value::Bool(false) => {}
        other if py_str(other).to_lowercase() == "random" => {
            if coin() {
                ret.changes = pretend_change();
            }
        }
        _ => {
            return Err(StateError(
                "You have specified the state option 'changes' with invalid arguments. It \
                 must be either True, False, or 'Random'"
                    .into(),
            ));
        }
    }
    match &result {
        Value::Bool(b) => ret.result = Some(*b),
        other if py_str(other).to_lowercase() == "random" => ret.result = Some(coin()),
        _ => {
            return Err(StateError(
                "You have specified the state option 'result' with invalid arguments. It must \
                 be either True, False, or 'Random'"
                    .into(),
            ));
        }
    }
    match call.arg("warnings") {
        None => {}
        Some(Value::String(s)) => {
            ret.extra.insert("warnings".into(), json!([s]));
        }
        Some(Value::Array(l)) => {
            ret.extra.insert("warnings".into(), Value::Array(l.clone()));
        }
        Some(_) => {
            return Err(StateError(
                "You have specified the state option 'warnings' with invalid arguments. It \
                 must be a string or a list of strings"
                    .into(),
            ));
        }
    }
    if call.test {
        let allow = call
            .arg("allow_test_mode_failure")
            .is_some_and(saltq_semantics::python::truthy);
        ret.result = if allow && result == json!(false) {
            Some(false)
        } else if changes == json!(false) {
            Some(true)
        } else {
            None
        };
        ret.comment = if comment.is_empty() {
            "This is a test".into()
        } else {
            comment
        };
    }
    Ok(ret)
}

async fn show_notification(call: StateCall) -> Result<Ret, StateError> {
    let text = call
        .arg("text")
        .filter(|t| saltq_semantics::python::truthy(t))
        .ok_or_else(|| StateError("Missing required argument text.".into()))?;
    let mut ret = Ret::new(&call.name);
    ret.comment = py_str(text);
    Ok(ret)
}

async fn mod_watch(call: StateCall) -> Result<Ret, StateError> {
    let mut has_changes = Vec::new();
    if let Some(watch) = call
        .args
        .get("__reqs__")
        .and_then(|r| r.get("watch"))
        .and_then(Value::as_array)
    {
        for req in watch {
            if req.get("__changed__") == Some(&json!(true)) {
                has_changes.push(json!(format!(
                    "{}: {}",
                    req.get("state").map(py_str).unwrap_or_default(),
                    req.get("__id__").map(py_str).unwrap_or_default()
                )));
            }
        }
    }
    let mut ret = Ret::new(&call.name);
    ret.extra.insert(
        crate::run::KEY_ORDER.into(),
        json!(["name", "result", "comment", "changes"]),
    );
    ret.result = match call.args.get("result") {
        Some(Value::Null) => None,
        Some(v) => Some(saltq_semantics::python::truthy(v)),
        None => Some(true),
    };
    ret.comment = call
        .args
        .get("comment")
        .map(py_str)
        .unwrap_or_else(|| "Watch statement fired.".into());
    ret.changes = match call.args.get("changes") {
        Some(Value::Object(m)) => m.clone(),
        Some(_) => Map::new(),
        None => {
            let mut m = Map::new();
            m.insert("Requisites with changes".into(), Value::Array(has_changes));
            m
        }
    };
    Ok(ret)
}

/// The types `check_pillar` checks, as Python prints them, with their check.
const PILLAR_TYPES: &[(&str, &str)] = &[
    ("present", "None"),
    ("boolean", "<class 'bool'>"),
    ("integer", "<class 'int'>"),
    ("string", "(<class 'str'>,)"),
    ("listing", "<class 'list'>"),
    ("dictionary", "<class 'dict'>"),
];

/// Python's `isinstance` for the checked types (a bool is an int).
fn is_type(v: &Value, arg: &str) -> bool {
    match arg {
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64() || v.is_boolean(),
        "string" => v.is_string(),
        "listing" => v.is_array(),
        "dictionary" => v.is_object(),
        _ => true,
    }
}

async fn check_pillar(call: StateCall) -> Result<Ret, StateError> {
    let given = |k: &str| call.arg(k).filter(|v| saltq_semantics::python::truthy(v));
    if PILLAR_TYPES.iter().all(|(k, _)| given(k).is_none()) {
        return Err(StateError("Missing required argument text.".into()));
    }
    let verbose = call
        .arg("verbose")
        .is_some_and(saltq_semantics::python::truthy);
    let pillar = call.ctx.pillar();
    let mut ret = Ret::new(&call.name);
    let mut fine: Vec<(String, &str)> = Vec::new();
    let mut failed: Vec<(String, Option<&str>)> = Vec::new();
    for (arg, type_name) in PILLAR_TYPES {
        let keys: Vec<String> = match given(arg) {
            None => Vec::new(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(l)) => l.iter().map(py_str).collect(),
            Some(_) => return Err(StateError("TypeError".into())),
        };
        for key in keys {
            let value =
                saltq_semantics::target::traverse(&pillar, &key, ":").filter(|v| !v.is_null());
            let entry = match value {
                None => Some(None),
                Some(v) if *arg != "present" && !is_type(v, arg) => Some(Some(*type_name)),
                Some(_) => None,
            };
            match entry {
                // A Python dict: setting a key again keeps its place.
                Some(t) => {
                    ret.result = Some(false);
                    match failed.iter_mut().find(|(k, _)| *k == key) {
                        Some(slot) => slot.1 = t,
                        None => failed.push((key, t)),
                    }
                }
                None if verbose => match fine.iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => slot.1 = type_name,
                    None => fine.push((key, type_name)),
                },
                None => {}
            }
        }
    }
    for (key, t) in &failed {
        ret.comment += &match t {
            None => format!("Pillar key \"{key}\" is missing.\n"),
            Some(t) => format!("Pillar key \"{key}\" is not {t}.\n"),
        };
    }
    if verbose && !fine.is_empty() {
        ret.comment += "Those keys passed the check:\n";
        for (key, t) in &fine {
            ret.comment += &format!("- {key} ({t})\n");
        }
    }
    Ok(ret)
}
