//! Salt's `mine` module: `mine.update` runs the `mine_functions` of the minion's config and
//! pillar and stores their returns on the master (through the context's
//! [`MineClient`](crate::MineClient)); `mine.get` reads other minions' data back. Without a
//! master (`call --local`) the mine lives in the minion's cachedir, as Salt's masterless
//! minion keeps it in its `data` store.
//!
//! The shapes Salt gives the data (`__saltmine_acl__` wrapping, one function or several in
//! `mine.get`) are the pure functions at the top, shared with the master.

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use saltq_semantics::python;
use saltq_semantics::target::{MinionFacts, Nodegroups, Target, TargetType};

use crate::dispatch::call_direct;
use crate::error::ExecError;
use crate::spec::{Call, Function, Lit, Param};

/// The key marking a mine entry wrapped with a minion-side ACL (`salt.utils.mine`).
pub const ACL_ID: &str = "__saltmine_acl__";
/// The key holding the data of a wrapped entry.
pub const ACL_DATA: &str = "__data__";

/// One `mine_functions` entry, read as Salt's `parse_function_definition` reads it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Definition {
    /// The function to run when the entry is an alias (`mine_function:`).
    pub function: Option<String>,
    /// Positional arguments.
    pub args: Vec<Value>,
    /// Keyword arguments.
    pub kwargs: Map<String, Value>,
    /// `allow_tgt` and `allow_tgt_type`, the falsey ones left out.
    pub acl: Map<String, Value>,
}

/// Reads an entry: a dict is keyword arguments, a list is positional arguments with dicts
/// among them merged into the keyword arguments; `mine_function`, `allow_tgt` and
/// `allow_tgt_type` are taken out of the keyword arguments. Anything else is no arguments.
pub fn parse_definition(def: &Value) -> Definition {
    let mut out = Definition::default();
    match def {
        Value::Object(m) => out.kwargs = m.clone(),
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Object(m) => out.kwargs.extend(m.clone()),
                    other => out.args.push(other.clone()),
                }
            }
        }
        _ => {}
    }
    out.function = out.kwargs.remove("mine_function").map(|v| python::str(&v));
    for key in ["allow_tgt", "allow_tgt_type"] {
        if let Some(v) = out.kwargs.remove(key).filter(python::truthy) {
            out.acl.insert(key.to_owned(), v);
        }
    }
    out
}

/// Salt's `wrap_acl_structure`: the data with the ACL marker and the `allow_tgt` fields.
pub fn wrap_acl(data: Value, acl: &Map<String, Value>) -> Value {
    let mut m = Map::new();
    m.insert(ACL_DATA.to_owned(), data);
    m.insert(ACL_ID.to_owned(), json!(1));
    m.extend(acl.clone());
    Value::Object(m)
}

/// The data of a stored entry: a wrapped entry's `__data__`, else the entry itself.
pub fn entry_data(entry: &Value) -> &Value {
    match entry.as_object() {
        Some(m) if m.contains_key(ACL_ID) => m.get(ACL_DATA).unwrap_or(&Value::Null),
        _ => entry,
    }
}

/// The functions `mine.get` asks for and whether the answer is keyed by function: a string
/// is split on commas (deduplicated; by function when more than one), a list always keys by
/// function. `None` for any other value (Salt answers `{}`).
pub fn requested_functions(fun: &Value) -> Option<(Vec<String>, bool)> {
    match fun {
        Value::String(s) => {
            let mut funs: Vec<String> = Vec::new();
            for f in s.split(',') {
                if !funs.iter().any(|x| x == f) {
                    funs.push(f.to_owned());
                }
            }
            let by_function = funs.len() > 1;
            Some((funs, by_function))
        }
        Value::Array(items) => Some((items.iter().map(python::str).collect(), true)),
        _ => None,
    }
}

/// Adds one minion's data for one function to a `mine.get` answer.
pub fn put_answer(
    out: &mut Map<String, Value>,
    by_function: bool,
    fun: &str,
    id: &str,
    data: Value,
) {
    if by_function {
        let slot = out
            .entry(fun.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = slot {
            m.insert(id.to_owned(), data);
        }
    } else {
        out.insert(id.to_owned(), data);
    }
}

/// The `mine` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("mine.update", handler!(update))
        .params(&[
            Param::opt("clear", Lit::Bool(false)),
            Param::opt("mine_functions", Lit::None),
        ])
        .doc(UPDATE_DOC),
    Function::new("mine.send", handler!(send))
        .params(&[Param::req("name")])
        .varargs()
        .kwargs()
        .doc(SEND_DOC),
    Function::new("mine.get", handler!(get))
        .params(&[
            Param::req("tgt"),
            Param::req("fun"),
            Param::opt("tgt_type", Lit::Str("glob")),
            Param::opt("exclude_minion", Lit::Bool(false)),
        ])
        .doc(GET_DOC),
    Function::new("mine.delete", handler!(delete))
        .params(&[Param::req("fun")])
        .doc(DELETE_DOC),
    Function::new("mine.flush", handler!(flush)).doc(FLUSH_DOC),
    Function::new("mine.valid", handler!(valid)).doc(VALID_DOC),
];

const UPDATE_DOC: &str = "Update the mine data on the master with the returns of the functions
listed in the minion config or pillar under ``mine_functions``

    mine_functions:
      network.ip_addrs: []
      eth0_ips:
        - mine_function: network.ip_addrs
        - interface: eth0

:param bool clear: replace the minion's whole mine instead of updating it
:param dict mine_functions: update with these instead of the configured ones

CLI Example:

.. code-block:: bash

    salt '*' mine.update
";

const SEND_DOC: &str = "Send a specific function and its result to the salt mine

:param str name: the function to run, or the alias to store under with ``mine_function``
:param str allow_tgt: targeting specification of the minions allowed to get this entry
:param str allow_tgt_type: the type of ``allow_tgt``

CLI Example:

.. code-block:: bash

    salt '*' mine.send network.ip_addrs interface=eth0
    salt '*' mine.send eth0_ip_addrs mine_function=network.ip_addrs interface=eth0
";

const GET_DOC: &str = "Get data from the mine

:param str tgt: target whose mine data to get
:param fun: function(s) to get: a list or a comma-separated string
:param str tgt_type: default ``glob``; pillar matches are exact
:param bool exclude_minion: leave the calling minion out

CLI Example:

.. code-block:: bash

    salt '*' mine.get '*' network.interfaces
    salt '*' mine.get 'os:Fedora' network.interfaces grain
";

const DELETE_DOC: &str = "Remove specific function contents of minion; ``True`` on success

CLI Example:

.. code-block:: bash

    salt '*' mine.delete 'network.interfaces'
";

const FLUSH_DOC: &str = "Remove all mine contents of minion; ``True`` on success

CLI Example:

.. code-block:: bash

    salt '*' mine.flush
";

const VALID_DOC: &str = "List valid entries in mine configuration

CLI Example:

.. code-block:: bash

    salt '*' mine.valid
";

/// Salt's `config.merge("mine_functions", {})`: the minion config's value, with the
/// pillar's `master:mine_functions` and `mine_functions` under it (config wins for a dict);
/// lists are concatenated; `{}` when neither has one.
fn configured(call: &Call) -> Value {
    let pillar = call.ctx.pillar();
    let sources = [
        call.ctx.opt("mine_functions").cloned(),
        pillar
            .get("master")
            .and_then(|m| m.get("mine_functions"))
            .cloned(),
        pillar.get("mine_functions").cloned(),
    ];
    let mut ret: Option<Value> = None;
    for tmp in sources.into_iter().flatten() {
        ret = Some(match (ret, tmp) {
            (None, tmp) => tmp,
            (Some(Value::Object(mine)), Value::Object(mut under)) => {
                under.extend(mine);
                Value::Object(under)
            }
            (Some(Value::Array(mut mine)), Value::Array(under)) => {
                mine.extend(under);
                Value::Array(mine)
            }
            (Some(keep), _) => keep,
        });
        if ret.as_ref().is_some_and(Value::is_string) {
            break;
        }
    }
    ret.unwrap_or_else(|| json!({}))
}

/// Runs one mine function; `None` when it is missing or fails, as Salt skips it (Salt logs
/// it; exec has no log of its own: the entry is absent from the mine).
async fn run_function(
    call: &Call,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
) -> Option<Value> {
    call_direct(&call.ctx, fun, args, kwargs).await.ok()
}

async fn update(call: Call) -> Result<Value, ExecError> {
    // The first run (the schedule's `run_on_start`) waits for the master's welcome: the
    // functions then see the pillar, and the mine is sent once.
    if let Some(mine) = &call.ctx.mine {
        mine.ready()
            .await
            .map_err(|e| ExecError::execution(format!("cannot reach the master's mine: {e}")))?;
    }
    let functions = match call.opt_arg("mine_functions").filter(|v| python::truthy(v)) {
        None => configured(&call),
        Some(v) => v.clone(),
    };
    let functions: Map<String, Value> = match functions {
        Value::Object(m) => m,
        Value::Array(items) => items.iter().map(|f| (python::str(f), json!({}))).collect(),
        _ => return Ok(Value::Null),
    };
    if functions.is_empty() {
        return Ok(Value::Null);
    }
    let mut data = Map::new();
    for (alias, def) in &functions {
        let def = parse_definition(def);
        let fun = def.function.clone().unwrap_or_else(|| alias.clone());
        let Some(res) = run_function(&call, &fun, def.args, def.kwargs).await else {
            continue;
        };
        let res = if def.acl.contains_key("allow_tgt") {
            wrap_acl(res, &def.acl)
        } else {
            res
        };
        data.insert(alias.clone(), res);
    }
    store(&call, data, python::truthy(call.arg("clear"))).await
}

async fn send(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let mut kwargs: Map<String, Value> = call
        .kwargs()
        .iter()
        .filter(|(k, _)| !k.starts_with("__"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let function = kwargs
        .remove("mine_function")
        .map_or_else(|| name.clone(), |v| python::str(&v));
    let mut acl = Map::new();
    for key in ["allow_tgt", "allow_tgt_type"] {
        if let Some(v) = kwargs.remove(key).filter(python::truthy) {
            acl.insert(key.to_owned(), v);
        }
    }
    let Some(res) = run_function(&call, &function, call.varargs().to_vec(), kwargs).await else {
        return Ok(Value::Bool(false));
    };
    let res = if acl.contains_key("allow_tgt") {
        wrap_acl(res, &acl)
    } else {
        res
    };
    let mut data = Map::new();
    data.insert(name, res);
    store(&call, data, false).await
}

/// Stores mine data on the master, or in the cachedir without one; `True` as Salt answers.
async fn store(call: &Call, data: Map<String, Value>, clear: bool) -> Result<Value, ExecError> {
    match &call.ctx.mine {
        Some(mine) => mine.store(data, clear).await.map_err(|e| {
            ExecError::execution(format!("cannot send mine data to the master: {e}"))
        })?,
        None => {
            let mut stored = if clear { Map::new() } else { read_local(call)? };
            stored.extend(data);
            write_local(call, &stored)?;
        }
    }
    Ok(Value::Bool(true))
}

async fn get(call: Call) -> Result<Value, ExecError> {
    let tgt = python::str(call.arg("tgt"));
    let tgt_type = python::str(call.arg("tgt_type"));
    let fun = call.arg("fun").clone();
    let Some(mine) = call.ctx.mine.clone() else {
        return get_local(&call, &tgt, &tgt_type, &fun);
    };
    let mut ret = mine
        .get(&tgt, &tgt_type, fun)
        .await
        .map_err(|e| ExecError::execution(format!("cannot get mine data from the master: {e}")))?;
    if python::truthy(call.arg("exclude_minion"))
        && let (Value::Object(m), Some(id)) = (&mut ret, call.ctx.opt("id"))
    {
        m.remove(&python::str(id));
    }
    Ok(ret)
}

/// Masterless `mine.get`: this minion's own cached data, when the target matches it.
fn get_local(call: &Call, tgt: &str, tgt_type: &str, fun: &Value) -> Result<Value, ExecError> {
    let id = call.ctx.opt("id").map(python::str).unwrap_or_default();
    // Salt looks the matcher up in a dict of nine: another name is its KeyError.
    let kind: TargetType = tgt_type
        .parse()
        .ok()
        .filter(|t| !matches!(t, TargetType::PillarExact | TargetType::Nodegroup))
        .ok_or_else(|| ExecError::exception("KeyError", python::repr(&json!(tgt_type))))?;
    let target = Target::compile(tgt, kind, None, &Nodegroups::new())
        .map_err(|e| ExecError::execution(format!("mine.get: {e}")))?;
    let (grains, pillar) = (call.ctx.grains(), call.ctx.pillar());
    let facts = MinionFacts {
        id: &id,
        grains: Some(&grains),
        pillar: Some(&pillar),
    };
    let mut ret = Map::new();
    if !target.matches(&facts) {
        return Ok(Value::Object(ret));
    }
    let Some((functions, by_function)) = requested_functions(fun) else {
        return Ok(Value::Object(ret));
    };
    let data = read_local(call)?;
    for f in &functions {
        if let Some(entry) = data.get(f) {
            // Salt tests `"__saltmine_acl__" in entry`, a TypeError for a bool or a number.
            if matches!(entry, Value::Bool(_) | Value::Number(_) | Value::Null) {
                return Err(ExecError::InvalidArguments(format!(
                    "argument of type '{}' is not iterable",
                    python::type_name(entry)
                )));
            }
            put_answer(&mut ret, by_function, f, &id, entry_data(entry).clone());
        }
    }
    Ok(Value::Object(ret))
}

async fn delete(call: Call) -> Result<Value, ExecError> {
    let fun = python::str(call.arg("fun"));
    match &call.ctx.mine {
        Some(mine) => mine.delete(&fun).await.map_err(|e| {
            ExecError::execution(format!("cannot delete mine data on the master: {e}"))
        })?,
        None => {
            let mut stored = read_local(&call)?;
            stored.remove(&fun);
            write_local(&call, &stored)?;
        }
    }
    Ok(Value::Bool(true))
}

async fn flush(call: Call) -> Result<Value, ExecError> {
    match &call.ctx.mine {
        Some(mine) => mine.flush().await.map_err(|e| {
            ExecError::execution(format!("cannot flush mine data on the master: {e}"))
        })?,
        None => write_local(&call, &Map::new())?,
    }
    Ok(Value::Bool(true))
}

async fn valid(call: Call) -> Result<Value, ExecError> {
    let Value::Object(functions) = configured(&call) else {
        return Ok(Value::Null);
    };
    if functions.is_empty() {
        return Ok(Value::Null);
    }
    let mut ret = Map::new();
    for (alias, raw) in &functions {
        let def = parse_definition(raw);
        let fun = def.function.clone().unwrap_or_else(|| alias.clone());
        if !crate::dispatch::available(&call.ctx, &fun).await {
            continue;
        }
        let value = match def.function {
            Some(f) => {
                let mut args = def.args.clone();
                args.extend(def.kwargs.iter().map(|(k, v)| json!({ k: v })));
                json!({ f: args })
            }
            None => raw.clone(),
        };
        ret.insert(alias.clone(), value);
    }
    Ok(Value::Object(ret))
}

/// Where a masterless minion keeps its mine.
fn local_path(call: &Call) -> PathBuf {
    call.ctx
        .opt("cachedir")
        .map_or_else(
            || PathBuf::from("/var/cache/saltq/minion"),
            |v| PathBuf::from(python::str(v)),
        )
        .join("mine.json")
}

fn read_local(call: &Call) -> Result<Map<String, Value>, ExecError> {
    let path = local_path(call);
    match std::fs::read(&path) {
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) | Err(_) => Err(ExecError::execution(format!(
                "the mine cache {} is not a JSON dict",
                path.display()
            ))),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Map::new()),
        Err(e) => Err(ExecError::execution(format!(
            "cannot read the mine cache {}: {e}",
            path.display()
        ))),
    }
}

fn write_local(call: &Call, data: &Map<String, Value>) -> Result<(), ExecError> {
    let path = local_path(call);
    let fail = |e: std::io::Error| {
        ExecError::execution(format!(
            "cannot write the mine cache {}: {e}",
            path.display()
        ))
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, Value::Object(data.clone()).to_string()).map_err(fail)?;
    std::fs::rename(&tmp, &path).map_err(fail)
}

#[cfg(test)]
mod tests;
