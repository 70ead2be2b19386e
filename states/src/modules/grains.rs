//! Salt's `grains` state module (`salt/states/grains.py`): `grains.exists`, `present`,
//! `absent`, `list_present`, `list_absent` and `append`, writing the minion's grains file
//! (the `grains_file` option) through `grains.set`, `grains.setval`, `grains.append` and
//! `grains.remove`, which also update the grains in memory and have the minion re-send them.
//!
//! Grains are read from the minion's grains as they are now (Salt's `grains.get`), nested
//! keys with `:`. The `delimiter` argument is replaced by `:` in the name as plain text (Salt
//! uses it as a regular expression). Not kept: Salt's `pending_grains` context, which in a
//! test run remembers what earlier `list_present` states would add.

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param};
use saltq_semantics::python::{self, truthy};
use saltq_semantics::target::traverse;

use super::{Ret, StateCall, StateError, StateFunction, exec, state_handler};

const DELIMITER: Param = Param::opt("delimiter", Lit::Str(":"));

/// The `grains` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "grains.exists",
        params: &[Param::req("name"), DELIMITER],
        kwargs: false,
        handler: state_handler!(exists),
    },
    StateFunction {
        name: "grains.present",
        params: &[
            Param::req("name"),
            Param::req("value"),
            DELIMITER,
            Param::opt("force", Lit::Bool(false)),
        ],
        kwargs: false,
        handler: state_handler!(present),
    },
    StateFunction {
        name: "grains.list_present",
        params: &[Param::req("name"), Param::req("value"), DELIMITER],
        kwargs: false,
        handler: state_handler!(list_present),
    },
    StateFunction {
        name: "grains.list_absent",
        params: &[Param::req("name"), Param::req("value"), DELIMITER],
        kwargs: false,
        handler: state_handler!(list_absent),
    },
    StateFunction {
        name: "grains.absent",
        params: &[
            Param::req("name"),
            Param::opt("destructive", Lit::Bool(false)),
            DELIMITER,
            Param::opt("force", Lit::Bool(false)),
        ],
        kwargs: false,
        handler: state_handler!(absent),
    },
    StateFunction {
        name: "grains.append",
        params: &[
            Param::req("name"),
            Param::req("value"),
            Param::opt("convert", Lit::Bool(false)),
            DELIMITER,
        ],
        kwargs: false,
        handler: state_handler!(append),
    },
];

/// The name with the state's delimiter turned into `:`.
fn grain_name(call: &StateCall) -> String {
    let delimiter = call
        .arg("delimiter")
        .map_or_else(|| ":".to_owned(), python::str);
    if delimiter.is_empty() || delimiter == ":" {
        call.name.clone()
    } else {
        call.name.replace(&delimiter, ":")
    }
}

/// The grain's value now, `None` when the minion has no such grain.
fn grain(call: &StateCall, name: &str) -> Option<Value> {
    traverse(&call.ctx.grains(), name, ":").cloned()
}

fn value(call: &StateCall) -> Value {
    call.arg("value").cloned().unwrap_or(Value::Null)
}

/// Python's `v is True` (Salt tests `destructive is True`, `convert is True`), not `is_true`.
fn is_literally_true(v: Option<&Value>) -> bool {
    v == Some(&Value::Bool(true))
}

/// A `grains.set` answer (`{comment, changes, result}`) as the state's return.
fn from_set(name: &str, answer: &Value) -> Ret {
    let mut ret = Ret::new(name);
    ret.comment = answer.get("comment").map(python::str).unwrap_or_default();
    ret.changes = answer
        .get("changes")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    ret.result = match answer.get("result") {
        Some(Value::Bool(b)) => Some(*b),
        Some(Value::Null) => None,
        _ => Some(true),
    };
    ret
}

async fn exists(call: StateCall) -> Result<Ret, StateError> {
    let name = grain_name(&call);
    let mut ret = Ret::new(&name);
    ret.comment = "Grain exists".into();
    if grain(&call, &name).is_none() {
        ret.result = Some(false);
        ret.comment = "Grain does not exist".into();
    }
    Ok(ret)
}

async fn present(call: StateCall) -> Result<Ret, StateError> {
    let name = grain_name(&call);
    let value = value(&call);
    let mut ret = Ret::new(&name);
    let existing = grain(&call, &name);
    if existing.as_ref() == Some(&value) {
        ret.comment = "Grain is already set".into();
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        if existing.is_none() {
            ret.comment = format!("Grain {name} is set to be added");
            ret.changes.insert("new".into(), json!(name));
        } else {
            ret.comment = format!("Grain {name} is set to be changed");
            ret.changes
                .insert("changed".into(), json!({ name.clone(): value }));
        }
        return Ok(ret);
    }
    let answer = exec(
        &call,
        "grains.set",
        vec![json!(name), value.clone()],
        Map::from_iter([(
            "force".to_owned(),
            json!(is_literally_true(call.arg("force"))),
        )]),
    )
    .await?;
    let mut ret = from_set(&name, &answer);
    if ret.result == Some(true) && !ret.changes.is_empty() {
        ret.comment = format!("Set grain {name} to {}", python::str_sls(&value));
    }
    Ok(ret)
}

/// Salt's `make_hashable`: each item as Python's `frozenset(item)` (a string's characters,
/// a dict's keys), nested lists flattened; a set of them.
fn hashable(list: &[Value], out: &mut Vec<Vec<String>>) {
    for item in list {
        match item {
            Value::Array(inner) => hashable(inner, out),
            other => {
                let mut members: Vec<String> = match other {
                    Value::String(s) => s.chars().map(String::from).collect(),
                    Value::Object(m) => m.keys().cloned().collect(),
                    v => vec![python::str(v)],
                };
                members.sort();
                members.dedup();
                if !out.contains(&members) {
                    out.push(members);
                }
            }
        }
    }
}

fn hashable_subset(value: &[Value], grain: &[Value]) -> bool {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    hashable(value, &mut a);
    hashable(grain, &mut b);
    a.iter().all(|x| b.contains(x))
}

async fn list_present(call: StateCall) -> Result<Ret, StateError> {
    let name = grain_name(&call);
    let value = value(&call);
    let mut ret = Ret::new(&name);
    let current = grain(&call, &name).unwrap_or_else(|| json!(""));
    if truthy(&current) {
        let Value::Array(list) = &current else {
            ret.result = Some(false);
            ret.comment = format!("Grain {name} is not a valid list");
            return Ok(ret);
        };
        let already = match &value {
            Value::Array(want) => hashable_subset(want, list),
            v => list.contains(v),
        };
        if already {
            ret.comment = format!(
                "Value {} is already in grain {name}",
                python::str_sls(&value)
            );
            return Ok(ret);
        }
        if call.test {
            ret.result = None;
            ret.comment = format!(
                "Value {} is set to be appended to grain {name}",
                python::str_sls(&value)
            );
            ret.changes.insert("new".into(), current.clone());
            return Ok(ret);
        }
    }
    if call.test {
        ret.result = None;
        ret.comment = format!("Grain {name} is set to be added");
        ret.changes.insert("new".into(), current);
        return Ok(ret);
    }
    let new_grains = exec(
        &call,
        "grains.append",
        vec![json!(name), value.clone()],
        Map::new(),
    )
    .await?;
    let after = grain(&call, &name).unwrap_or_else(|| json!(""));
    let after: Vec<Value> = after.as_array().cloned().unwrap_or_default();
    let ok = match &value {
        Value::Array(want) => want.iter().all(|v| after.contains(v)),
        v => after.contains(v),
    };
    if !ok {
        ret.result = Some(false);
        ret.comment = format!(
            "Failed append value {} to grain {name}",
            python::str_sls(&value)
        );
        return Ok(ret);
    }
    ret.comment = format!("Append value {} to grain {name}", python::str_sls(&value));
    ret.changes.insert("new".into(), new_grains);
    Ok(ret)
}

async fn list_absent(call: StateCall) -> Result<Ret, StateError> {
    let name = grain_name(&call);
    let mut ret = Ret::new(&name);
    let current = grain(&call, &name).unwrap_or(Value::Null);
    if !truthy(&current) {
        ret.comment = format!("Grain {name} does not exist");
        return Ok(ret);
    }
    let Value::Array(list) = current else {
        ret.result = Some(false);
        ret.comment = format!("Grain {name} is not a valid list");
        return Ok(ret);
    };
    let values = match value(&call) {
        Value::Array(v) => v,
        other => vec![other],
    };
    let mut comments = Vec::new();
    let mut deleted = Vec::new();
    for val in values {
        let shown = python::str_sls(&val);
        if !list.contains(&val) {
            comments.push(format!("Value {shown} is absent from grain {name}"));
        } else if call.test {
            ret.result = None;
            comments.push(format!(
                "Value {shown} in grain {name} is set to be deleted"
            ));
            deleted.push(val);
        } else {
            exec(
                &call,
                "grains.remove",
                vec![json!(name), val.clone()],
                Map::new(),
            )
            .await?;
            comments.push(format!("Value {shown} was deleted from grain {name}"));
            deleted.push(val);
        }
    }
    if !deleted.is_empty() {
        ret.changes.insert("deleted".into(), Value::Array(deleted));
    }
    ret.comment = comments.join("\n");
    Ok(ret)
}

async fn absent(call: StateCall) -> Result<Ret, StateError> {
    let name = grain_name(&call);
    let destructive = is_literally_true(call.arg("destructive"));
    let force = is_literally_true(call.arg("force"));
    let mut ret = Ret::new(&name);
    let Some(current) = grain(&call, &name) else {
        ret.comment = format!("Grain {name} does not exist");
        return Ok(ret);
    };
    if call.test {
        ret.result = None;
        if destructive {
            ret.comment = format!("Grain {name} is set to be deleted");
            ret.changes.insert("deleted".into(), json!(name));
        } else if !current.is_null() {
            ret.comment = format!("Value for grain {name} is set to be deleted (None)");
            ret.changes.insert("grain".into(), json!(name));
            ret.changes.insert("value".into(), Value::Null);
        }
        return Ok(ret);
    }
    let answer = exec(
        &call,
        "grains.set",
        vec![json!(name), Value::Null],
        Map::from_iter([
            ("destructive".to_owned(), json!(destructive)),
            ("force".to_owned(), json!(force)),
        ]),
    )
    .await?;
    let mut ret = from_set(&name, &answer);
    if ret.result == Some(true) {
        if destructive {
            ret.comment = format!("Grain {name} was deleted");
            ret.changes = Map::from_iter([("deleted".to_owned(), json!(name))]);
        } else if !current.is_null() {
            ret.comment = format!("Value for grain {name} was set to None");
            ret.changes = Map::from_iter([
                ("grain".to_owned(), json!(name)),
                ("value".to_owned(), Value::Null),
            ]);
        }
    }
    Ok(ret)
}

async fn append(call: StateCall) -> Result<Ret, StateError> {
    let name = grain_name(&call);
    let value = value(&call);
    let shown = python::str_sls(&value);
    let mut ret = Ret::new(&name);
    let current = grain(&call, &name);
    let top_level = call
        .ctx
        .grains()
        .as_object()
        .is_some_and(|g| g.contains_key(&name));
    if !(current.as_ref().is_some_and(truthy) || top_level) {
        ret.result = Some(false);
        ret.comment = format!("Grain {name} does not exist");
        return Ok(ret);
    }
    match current {
        Some(Value::Array(list)) => {
            if list.contains(&value) {
                ret.comment = format!("Value {shown} is already in the list for grain {name}");
                return Ok(ret);
            }
            if call.test {
                ret.result = None;
                ret.comment = format!("Value {shown} in grain {name} is set to be added");
                ret.changes.insert("added".into(), value);
                return Ok(ret);
            }
            exec(
                &call,
                "grains.append",
                vec![json!(name), value.clone()],
                Map::new(),
            )
            .await?;
        }
        other if is_literally_true(call.arg("convert")) => {
            if call.test {
                ret.result = None;
                ret.comment = format!(
                    "Grain {name} is set to be converted to list and value {shown} will be added"
                );
                ret.changes.insert("added".into(), value);
                return Ok(ret);
            }
            let mut list = match other {
                None | Some(Value::Null) => Vec::new(),
                Some(v) => vec![v],
            };
            list.push(value.clone());
            exec(
                &call,
                "grains.setval",
                vec![json!(name), Value::Array(list)],
                Map::new(),
            )
            .await?;
        }
        _ => {
            ret.result = Some(false);
            ret.comment = format!("Grain {name} is not a valid list");
            return Ok(ret);
        }
    }
    ret.comment = format!("Value {shown} was added to grain {name}");
    ret.changes.insert("added".into(), value);
    Ok(ret)
}
