//! Salt's `timezone` state module (`salt/states/timezone.py`): `timezone.system` sets the
//! system's zone and, with `utc`, the hardware clock's, through `timezone.zone_compare`,
//! `timezone.get_hwclock`, `timezone.set_zone` and `timezone.set_hwclock`.
//!
//! As in Salt, only a failed comparison is caught; an error reading the hardware clock
//! (`timedatectl` installed without a running systemd) fails the state with its text, where
//! Salt's comment is the traceback of the same error.

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param};
use saltq_semantics::python::{self, truthy};

use super::{Ret, StateCall, StateError, StateFunction, exec, state_handler};

const PARAMS: &[Param] = &[Param::req("name"), Param::opt("utc", Lit::Bool(true))];

/// The `timezone` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[StateFunction {
    name: "timezone.system",
    params: PARAMS,
    kwargs: false,
    handler: state_handler!(system),
}];

/// Python's `a != b` between the `utc` argument and a bool.
fn differs(utc: &Value, mine: bool) -> bool {
    match utc {
        Value::Bool(b) => *b != mine,
        Value::Number(n) => n.as_f64() != Some(if mine { 1.0 } else { 0.0 }),
        _ => true,
    }
}

async fn system(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let utc = call.param(PARAMS, "utc");
    let mut ret = Ret::new(&name);
    ret.result = None;
    let compzone = match exec(
        &call,
        "timezone.zone_compare",
        vec![json!(name)],
        Map::new(),
    )
    .await
    {
        Ok(v) => v,
        Err(e) => {
            ret.result = Some(false);
            ret.comment = format!(
                "Unable to compare desired timezone '{name}' to system timezone: {}",
                e.0
            );
            return Ok(ret);
        }
    };
    let hwclock = exec(&call, "timezone.get_hwclock", vec![], Map::new()).await?;
    let myutc = hwclock != json!("localtime");
    let mut messages = Vec::new();
    let mut do_zone = false;
    let mut do_utc = false;
    if compzone == json!(true) {
        ret.result = Some(true);
        messages.push(format!("Timezone {name} already set"));
    } else {
        do_zone = true;
    }
    if truthy(&utc) && differs(&utc, myutc) {
        ret.result = None;
        do_utc = true;
    } else if truthy(&utc) {
        messages.push(format!("UTC already set to {name}"));
    }
    if ret.result == Some(true) {
        ret.comment = messages.join(", ");
        return Ok(ret);
    }
    let utc_text = python::str(&utc);
    if call.test {
        let mut messages = Vec::new();
        if compzone == json!(false) {
            messages.push(format!("Timezone {name} needs to be set"));
        }
        if truthy(&utc) && differs(&utc, myutc) {
            messages.push(format!("UTC needs to be set to {utc_text}"));
        }
        ret.comment = messages.join(", ");
        return Ok(ret);
    }
    let mut messages = Vec::new();
    if do_zone {
        let set = exec(&call, "timezone.set_zone", vec![json!(name)], Map::new()).await?;
        if truthy(&set) {
            ret.changes.insert("timezone".into(), json!(name));
            messages.push(format!("Set timezone {name}"));
            ret.result = Some(true);
        } else {
            messages.push("Failed to set timezone".into());
            ret.result = Some(false);
        }
    }
    if do_utc {
        let clock = if truthy(&utc) { "UTC" } else { "localtime" };
        let set = exec(
            &call,
            "timezone.set_hwclock",
            vec![json!(clock)],
            Map::new(),
        )
        .await?;
        if truthy(&set) {
            ret.changes.insert("utc".into(), utc.clone());
            messages.push(format!("Set UTC to {utc_text}"));
            ret.result = Some(true);
        } else {
            messages.push(format!("Failed to set UTC to {utc_text}"));
            ret.result = Some(false);
        }
    }
    ret.comment = messages.join(", ");
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_compares_as_python() {
        assert!(!differs(&json!(true), true));
        assert!(differs(&json!(true), false));
        assert!(!differs(&json!(1), true));
        assert!(differs(&json!("yes"), true));
    }
}
