//! `file.accumulated` and the accumulator store it fills for `file.blockreplace` (appended
//! to the block's content) and `file.managed` (the template's `accumulator` variable).
//!
//! Salt keeps the store in a file per state run and deletes it when the run ends; saltq
//! keeps it in memory, one [`Accumulators`] per run: the state runner makes it when the run
//! starts and hands it to every state function through [`StateCall::accumulators`], so it
//! goes when the run does and two runs in one process (a swarm of minions, concurrent
//! orchestrations) never share one. `file.accumulated` needs the chunk's
//! `require_in`/`watch_in` in its arguments (Salt reads them from the low chunk) to know
//! which file states it feeds.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use saltq_exec::Param;
use serde_json::{Map, Value};

use super::{Ret, StateCall, error, py_str};
use crate::modules::StateError;

/// Per target file: each accumulator's texts (in the order they came) and the IDs of the
/// states it was declared for.
#[derive(Debug, Default)]
struct Accum {
    data: Vec<(String, Vec<Value>)>,
    deps: BTreeMap<String, Vec<String>>,
}

/// One state run's accumulators, per target file. Clones share the store: the runner
/// hands a clone to each state function of the run; a new run starts with an empty one.
#[derive(Debug, Clone, Default)]
pub struct Accumulators(Arc<Mutex<BTreeMap<String, Accum>>>);

impl Accumulators {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Accum>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether nothing was accumulated in this run.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// The texts accumulated for `filename` that feed the state `id`, in order: those whose
/// requisites name `id`, or all of them when none does (Salt's `blockreplace`).
pub(super) fn texts_for(accumulators: &Accumulators, filename: &str, id: &str) -> Vec<Value> {
    let store = accumulators.lock();
    let Some(acc) = store.get(filename) else {
        return Vec::new();
    };
    let wanted: Vec<&String> = acc
        .deps
        .iter()
        .filter(|(name, ids)| {
            ids.iter().any(|i| i == id) && acc.data.iter().any(|(n, _)| n == *name)
        })
        .map(|(name, _)| name)
        .collect();
    acc.data
        .iter()
        .filter(|(n, _)| wanted.is_empty() || wanted.contains(&n))
        .flat_map(|(_, texts)| texts.iter().cloned())
        .collect()
}

/// The template's `accumulator` variable for `filename`: `{name: [texts]}`, if any.
pub(super) fn context_for(accumulators: &Accumulators, filename: &str) -> Option<Value> {
    let store = accumulators.lock();
    let acc = store.get(filename)?;
    let m: Map<String, Value> = acc
        .data
        .iter()
        .map(|(n, t)| (n.clone(), Value::Array(t.clone())))
        .collect();
    Some(Value::Object(m))
}

/// `file.accumulated`'s parameters.
pub(super) const PARAMS: &[Param] = &[
    Param::req("name"),
    Param::req("filename"),
    Param::req("text"),
];

/// The IDs a requisite list names: `[{file: id}]` gives the values, a bare string its
/// characters (as Salt's `list.extend(str)` does).
fn requisite_ids(v: Option<&Value>) -> Vec<Value> {
    match v {
        Some(Value::Array(items)) => items.clone(),
        Some(other) => vec![other.clone()],
        None => Vec::new(),
    }
}

/// `file.accumulated`.
pub(super) async fn accumulated(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(name.clone());
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.accumulated"));
    }
    let Some(text) = call.arg("text").cloned() else {
        ret.result = Some(false);
        ret.comment = "No text supplied for accumulator".into();
        return Ok(ret);
    };
    let mut deps = requisite_ids(call.args.get("require_in"));
    deps.extend(requisite_ids(call.args.get("watch_in")));
    let names_file = |d: &Value| match d {
        Value::Object(m) => m.contains_key("file"),
        Value::String(s) => s.contains("file"),
        Value::Array(a) => a.iter().any(|x| x.as_str() == Some("file")),
        _ => false,
    };
    if !deps.iter().any(names_file) {
        ret.result = Some(false);
        ret.comment = format!("Orphaned accumulator {name} in {}:{}", call.sls, call.id);
        return Ok(ret);
    }
    let texts: Vec<Value> = match text {
        Value::Array(a) => a,
        other => vec![other],
    };
    let filename = call.arg("filename").map(py_str).unwrap_or_default();
    let mut store = call.accumulators.lock();
    let acc = store.entry(filename.clone()).or_default();
    let ids = acc.deps.entry(name.clone()).or_default();
    for d in &deps {
        match d {
            Value::Object(m) => ids.extend(m.values().map(py_str)),
            Value::String(s) => ids.extend(s.chars().map(String::from)),
            other => ids.push(py_str(other)),
        }
    }
    if !acc.data.iter().any(|(n, _)| *n == name) {
        acc.data.push((name.clone(), Vec::new()));
    }
    let slot = &mut acc
        .data
        .iter_mut()
        .find(|(n, _)| *n == name)
        .expect("inserted")
        .1;
    for chunk in texts {
        if !slot.contains(&chunk) {
            slot.push(chunk);
            ret.comment = format!("Accumulator {name} for file {filename} was charged by text");
        }
    }
    Ok(ret)
}
