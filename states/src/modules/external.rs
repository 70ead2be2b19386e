//! External state modules: executables, in any language, that the minion runs for state
//! functions it does not have built in (Salt's custom states in `file_roots/_states`).
//!
//! Where they live: `saltutil.sync_states` (and `saltutil.sync_all`) copy the master's
//! `file_roots/_states` into `<cachedir>/extmods/states`; the `states_dirs` option (a list, or
//! one path) adds directories searched first. `NAME`, `NAME.py` or `NAME.sh` is state module
//! `NAME`; an executable file runs directly, a non-executable `.py` with `python3` and `.sh`
//! with `/bin/sh` (as external execution modules, `saltq_exec`'s `extmods`).
//!
//! The protocol: `EXE --list` prints a JSON list of function names; `EXE FUNCTION` reads one
//! JSON object on stdin:
//!
//! ```json
//! {"name": "web", "args": [], "kwargs": {"name": "web", "port": 80},
//!  "test": false, "saltenv": "base", "sls": "app", "id": "web"}
//! ```
//!
//! (`kwargs` is the chunk's arguments with `name`, so that `fun(*args, **kwargs)` works) and
//! prints Salt's state return: `{"result": true|false|null, "comment": "...", "changes":
//! {...}}`, optionally with `name` (the state's name by default) and other keys (kept in
//! [`Ret::extra`]); a `comment` list is joined with newlines. `{"return": {...}}` is
//! unwrapped. A run is bounded by `ext_module_timeout` seconds (default 60).
//!
//! For the runner: a chunk whose `state.fun` has no built-in [`super::lookup`] entry is
//! tried here,
//!
//! ```text
//! match saltq_states::modules::external::run(call, module, fun).await {
//!     Some(Ok(ret)) => /* the state's return */,
//!     Some(Err(e)) => /* failed: result False, comment e.0 */,
//!     None => /* no such external state function: Salt's "not available" error */,
//! }
//! ```
//!
//! and [`exists`] tells whether a module of that name is there at all (to word the error as
//! Salt does for a missing module or a missing function).

use serde_json::{Map, Value, json};

use saltq_exec::{StateOutput, call_state, state_module_exists};
use saltq_semantics::python;

use super::{Ret, StateCall, StateError};

/// Whether an external state module named `module` exists on this minion.
pub fn exists(ctx: &saltq_exec::CallContext, module: &str) -> bool {
    state_module_exists(&ctx.opts, module)
}

/// The JSON an external state function receives on stdin.
pub fn input(call: &StateCall) -> Value {
    let mut kwargs = Map::new();
    kwargs.insert("name".into(), json!(call.name));
    kwargs.extend(call.args.clone());
    json!({
        "name": call.name,
        "args": [],
        "kwargs": kwargs,
        "test": call.test,
        "saltenv": call.saltenv,
        "sls": call.sls,
        "id": call.id,
    })
}

/// Runs the state function `module.fun` from an external state module: `None` when no
/// external module has it, else its return (an error names what the module did wrong).
pub async fn run(call: StateCall, module: &str, fun: &str) -> Option<Result<Ret, StateError>> {
    let out = match call_state(&call.ctx, module, fun, &input(&call)).await {
        Ok(StateOutput::Missing) => return None,
        Ok(StateOutput::Ran(v)) => v,
        Err(e) => return Some(Err(StateError(e.to_string()))),
    };
    Some(parse(&call.name, &format!("{module}.{fun}"), out))
}

/// Turns what an external state function printed into a [`Ret`].
pub fn parse(name: &str, fun: &str, out: Value) -> Result<Ret, StateError> {
    let bad = |why: &str| {
        StateError(format!(
            "external state {fun} returned {why}: expected a dict with result, comment and changes"
        ))
    };
    let mut obj = match out {
        Value::Object(mut m) if !m.contains_key("result") && m.contains_key("return") => {
            match m.remove("return") {
                Some(Value::Object(inner)) => inner,
                _ => return Err(bad("a return that is not a dict")),
            }
        }
        Value::Object(m) => m,
        other => return Err(bad(&python::repr(&other))),
    };
    let result = match obj.remove("result") {
        Some(Value::Bool(b)) => Some(b),
        Some(Value::Null) => None,
        Some(other) => return Err(bad(&format!("result {}", python::repr(&other)))),
        None => return Err(bad("no result")),
    };
    let comment = match obj.remove("comment") {
        None | Some(Value::Null) => String::new(),
        Some(Value::Array(lines)) => lines.iter().map(python::str).collect::<Vec<_>>().join("\n"),
        Some(other) => python::str(&other),
    };
    let changes = match obj.remove("changes") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(c)) => c,
        Some(other) => return Err(bad(&format!("changes {}", python::repr(&other)))),
    };
    let name = match obj.remove("name") {
        Some(Value::String(n)) => n,
        Some(other) => python::str(&other),
        None => name.to_owned(),
    };
    Ok(Ret {
        name,
        result,
        comment,
        changes,
        extra: obj,
    })
}
