//! Salt's `locale` state module (`salt/states/locale.py`): `locale.system` sets the system
//! locale (`locale.get_locale`, `locale.set_locale`), `locale.present` generates a locale
//! unless it is available (`locale.avail`, `locale.gen_locale`).

use serde_json::{Map, json};

use saltq_exec::Param;
use saltq_semantics::python::{self, truthy};

use super::{Ret, StateCall, StateError, StateFunction, exec, state_handler};

/// The `locale` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "locale.system",
        params: &[Param::req("name")],
        kwargs: false,
        handler: state_handler!(system),
    },
    StateFunction {
        name: "locale.present",
        params: &[Param::req("name")],
        kwargs: false,
        handler: state_handler!(present),
    },
];

async fn system(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    ret.result = None;
    // Salt catches the module's CommandExecutionError around the whole state.
    let outcome: Result<(), StateError> = async {
        let current = exec(&call, "locale.get_locale", vec![], Map::new()).await?;
        if python::str(&current) == name && current.is_string() {
            ret.result = Some(true);
            ret.comment = format!("System locale {name} already set");
            return Ok(());
        }
        if call.test {
            ret.comment = format!("System locale {name} needs to be set");
            return Ok(());
        }
        let set = exec(&call, "locale.set_locale", vec![json!(name)], Map::new()).await?;
        if truthy(&set) {
            ret.changes.insert("locale".into(), json!(name));
            ret.result = Some(true);
            ret.comment = format!("Set system locale {name}");
        } else {
            ret.result = Some(false);
            ret.comment = format!("Failed to set system locale to {name}");
        }
        Ok(())
    }
    .await;
    if let Err(e) = outcome {
        ret.changes.clear();
        ret.result = Some(false);
        ret.comment = format!("Failed to set system locale: {}", e.0);
    }
    Ok(ret)
}

async fn present(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    ret.result = None;
    if truthy(&exec(&call, "locale.avail", vec![json!(name)], Map::new()).await?) {
        ret.result = Some(true);
        ret.comment = format!("Locale {name} is already present");
        return Ok(ret);
    }
    if call.test {
        ret.comment = format!("Locale {name} needs to be generated");
        return Ok(ret);
    }
    if truthy(&exec(&call, "locale.gen_locale", vec![json!(name)], Map::new()).await?) {
        ret.changes.insert("locale".into(), json!(name));
        ret.result = Some(true);
        ret.comment = format!("Generated locale {name}");
    } else {
        ret.result = Some(false);
        ret.comment = format!("Failed to generate locale {name}");
    }
    Ok(ret)
}
