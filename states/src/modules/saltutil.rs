//! Salt's `saltutil` state module (`salt/states/saltutil.py`): `saltutil.sync_all` and the
//! `saltutil.sync_<kind>` states run the execution function of the same name with the
//! state's keyword arguments and report what it synced as changes.
//!
//! Every state of Salt's module is here; a kind saltq's minion does not sync (it syncs
//! `modules` and `states`) fails with the execution function's "is not available" text, as
//! Salt's fails when its loader lacks the function.

use serde_json::{Map, Value};

use saltq_exec::Param;
use saltq_semantics::python::truthy;

use super::{Ret, StateCall, StateError, StateFunction, exec, state_handler};

macro_rules! sync_state {
    ($name:literal, $f:ident, $kind:literal) => {
        StateFunction {
            name: $name,
            params: &[Param::req("name")],
            kwargs: true,
            handler: {
                async fn $f(call: StateCall) -> Result<Ret, StateError> {
                    sync_single(call, $kind).await
                }
                state_handler!($f)
            },
        }
    };
}

/// The `saltutil` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "saltutil.sync_all",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(sync_all),
    },
    sync_state!("saltutil.sync_beacons", beacons, "beacons"),
    sync_state!("saltutil.sync_clouds", clouds, "clouds"),
    sync_state!("saltutil.sync_engines", engines, "engines"),
    sync_state!("saltutil.sync_grains", grains, "grains"),
    sync_state!("saltutil.sync_executors", executors, "executors"),
    sync_state!("saltutil.sync_log_handlers", log_handlers, "log_handlers"),
    sync_state!("saltutil.sync_modules", modules, "modules"),
    sync_state!("saltutil.sync_output", output, "output"),
    sync_state!("saltutil.sync_outputters", outputters, "outputters"),
    sync_state!("saltutil.sync_pillar", pillar, "pillar"),
    sync_state!("saltutil.sync_proxymodules", proxymodules, "proxymodules"),
    sync_state!("saltutil.sync_matchers", matchers, "matchers"),
    sync_state!("saltutil.sync_renderers", renderers, "renderers"),
    sync_state!("saltutil.sync_returners", returners, "returners"),
    sync_state!("saltutil.sync_sdb", sdb, "sdb"),
    sync_state!("saltutil.sync_states", states, "states"),
    sync_state!("saltutil.sync_tops", tops, "tops"),
    sync_state!("saltutil.sync_thorium", thorium, "thorium"),
    sync_state!("saltutil.sync_utils", utils, "utils"),
    sync_state!("saltutil.sync_serializers", serializers, "serializers"),
    sync_state!("saltutil.sync_wrapper", wrapper, "wrapper"),
];

/// The state's keyword arguments, passed on to the execution function.
fn kwargs(call: &StateCall) -> Map<String, Value> {
    call.args
        .iter()
        .filter(|(k, _)| k.as_str() != "name")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Salt's `_sync_single`.
async fn sync_single(call: StateCall, kind: &str) -> Result<Ret, StateError> {
    let mut ret = Ret::new(&call.name);
    if call.test {
        ret.result = None;
        ret.comment = format!("saltutil.sync_{kind} would have been run");
        return Ok(ret);
    }
    match exec(
        &call,
        &format!("saltutil.sync_{kind}"),
        vec![],
        kwargs(&call),
    )
    .await
    {
        Ok(status) => {
            if truthy(&status) {
                ret.changes.insert(kind.to_owned(), status);
                ret.comment = format!("Updated {kind}.");
            }
        }
        Err(e) => {
            ret.result = Some(false);
            ret.comment = format!("Failed to run sync_{kind}: {}", e.0);
            return Ok(ret);
        }
    }
    if ret.changes.is_empty() {
        ret.comment = "No updates to sync".into();
    }
    Ok(ret)
}

async fn sync_all(call: StateCall) -> Result<Ret, StateError> {
    let mut ret = Ret::new(&call.name);
    if call.test {
        ret.result = None;
        ret.comment = "saltutil.sync_all would have been run".into();
        return Ok(ret);
    }
    match exec(&call, "saltutil.sync_all", vec![], kwargs(&call)).await {
        Ok(Value::Object(status)) => {
            for (key, value) in status {
                if truthy(&value) {
                    ret.changes.insert(key, value);
                    ret.comment = "Sync performed".into();
                }
            }
        }
        Ok(_) => {}
        Err(e) => {
            ret.result = Some(false);
            ret.comment = format!("Failed to run sync_all: {}", e.0);
            return Ok(ret);
        }
    }
    if ret.changes.is_empty() {
        ret.comment = "No updates to sync".into();
    }
    Ok(ret)
}
