//! Salt's `event` state module (`salt/states/event.py`): `event.send` (aliases
//! `event.fire_master` and `event.mod_watch`) fires an event through the execution
//! function `event.send` (the minion's event sink); `event.wait` does nothing until watched.

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param, call_direct};
use saltq_semantics::python::truthy;

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

const SEND_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("data", Lit::None),
    Param::opt("preload", Lit::None),
    Param::opt("with_env", Lit::Bool(false)),
    Param::opt("with_grains", Lit::Bool(false)),
    Param::opt("with_pillar", Lit::Bool(false)),
    Param::opt("show_changed", Lit::Bool(true)),
];

/// The `event` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "event.send",
        params: SEND_PARAMS,
        kwargs: true,
        handler: state_handler!(send),
    },
    StateFunction {
        name: "event.fire_master",
        params: SEND_PARAMS,
        kwargs: true,
        handler: state_handler!(send),
    },
    StateFunction {
        name: "event.mod_watch",
        params: SEND_PARAMS,
        kwargs: true,
        handler: state_handler!(send),
    },
    StateFunction {
        name: "event.wait",
        params: &[
            Param::req("name"),
            Param::opt("sfun", Lit::None),
            Param::opt("data", Lit::None),
        ],
        kwargs: false,
        handler: state_handler!(wait),
    },
];

async fn send(call: StateCall) -> Result<Ret, StateError> {
    let data = call.arg("data").cloned().unwrap_or(Value::Null);
    let mut ret = Ret::new(call.name.clone());
    ret.result = Some(false);
    if call.args.get("show_changed").is_none_or(truthy) {
        ret.changes.insert("tag".into(), json!(call.name));
        ret.changes.insert("data".into(), data.clone());
    }
    if call.test {
        ret.result = None;
        ret.comment = "Event would have been fired".into();
        return Ok(ret);
    }
    let mut kwargs = Map::new();
    kwargs.insert("data".into(), data);
    for (key, val) in &call.args {
        if !matches!(key.as_str(), "data" | "show_changed" | "sfun" | "__reqs__") {
            kwargs.insert(key.clone(), val.clone());
        }
    }
    let fired = call_direct(&call.ctx, "event.send", vec![json!(call.name)], kwargs)
        .await
        .map_err(|e| StateError(format!("event.send failed: {e:?}")))?;
    ret.result = Some(truthy(&fired));
    ret.comment = "Event fired".into();
    Ok(ret)
}

async fn wait(call: StateCall) -> Result<Ret, StateError> {
    Ok(Ret::new(call.name))
}
