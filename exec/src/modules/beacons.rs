//! Salt's `beacons` module: list, add, modify, delete, enable and disable the minion's
//! beacons at run time, save them to `minion.d/beacons.conf`, with Salt's return shapes and
//! comments. The minion's side of each change is [`crate::beacons::Manager`], which answers
//! with the completion event Salt's minion fires (`/salt/minion/minion_beacon_add_complete`);
//! the comments here are read from it as Salt's module reads them.

use serde_json::{Map, Value, json};

use saltq_semantics::output::{OutputOptions, Outputter, render};
use saltq_semantics::python::{self, truthy};

use crate::beacons::{self, Change, Manager};
use crate::error::ExecError;
use crate::spec::{Call, Function, Lit, Param};

/// The `beacons` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("beacons.list", handler!(list))
        .params(&[
            Param::opt("return_yaml", Lit::Bool(true)),
            Param::opt("include_pillar", Lit::Bool(true)),
            Param::opt("include_opts", Lit::Bool(true)),
        ])
        .kwargs()
        .doc("List the beacons currently configured on the minion, as YAML unless\n``return_yaml=False``\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' beacons.list\n"),
    Function::new("beacons.list_available", handler!(list_available))
        .params(&[Param::opt("return_yaml", Lit::Bool(true))])
        .kwargs()
        .doc("List the beacons available on the minion\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' beacons.list_available\n"),
    Function::new("beacons.add", handler!(add))
        .params(&[Param::req("name"), Param::req("beacon_data")])
        .kwargs()
        .doc("Add a beacon on the minion\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' beacons.add ps \"[{'processes': {'salt-master': 'stopped', 'apache2': 'stopped'}}]\"\n"),
    Function::new("beacons.modify", handler!(modify))
        .params(&[Param::req("name"), Param::req("beacon_data")])
        .kwargs()
        .doc("Modify an existing beacon\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' beacons.modify ps \"[{'salt-master': 'stopped'}, {'apache2': 'stopped'}]\"\n"),
    Function::new("beacons.delete", handler!(delete))
        .params(&[Param::req("name")])
        .kwargs()
        .doc("Delete a beacon item\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' beacons.delete ps\n"),
    Function::new("beacons.save", handler!(save))
        .kwargs()
        .doc("Save all configured beacons to minion.d/beacons.conf\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' beacons.save\n"),
    Function::new("beacons.enable", handler!(enable))
        .kwargs()
        .doc("Enable all beacons on the minion\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' beacons.enable\n"),
    Function::new("beacons.disable", handler!(disable))
        .kwargs()
        .doc("Disable all beacons jobs on the minion\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' beacons.disable\n"),
    Function::new("beacons.enable_beacon", handler!(enable_beacon))
        .params(&[Param::req("name")])
        .kwargs()
        .doc("Enable beacon on the minion\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' beacons.enable_beacon ps\n"),
    Function::new("beacons.disable_beacon", handler!(disable_beacon))
        .params(&[Param::req("name")])
        .kwargs()
        .doc("Disable a beacon on the minion\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' beacons.disable_beacon ps\n"),
    Function::new("beacons.reset", handler!(reset))
        .kwargs()
        .doc("Reset beacon configuration on the minion\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' beacons.reset\n"),
];

/// The minion's beacons, or Salt's answer when there is no minion to ask.
fn manager<'a>(call: &'a Call, what: &str) -> Result<&'a Manager, Value> {
    call.ctx.beacons.as_deref().ok_or_else(|| {
        json!({"result": false, "comment": format!("Event module not available. {what} failed.")})
    })
}

fn yaml(v: Value) -> Value {
    let mut m = Map::new();
    m.insert("beacons".into(), v);
    Value::String(render(
        Outputter::Yaml,
        &Value::Object(m),
        &OutputOptions::default(),
    ))
}

fn is_test(call: &Call) -> bool {
    call.kwargs().get("test").is_some_and(truthy)
}

fn name(call: &Call) -> String {
    python::str(call.arg("name"))
}

async fn list(call: Call) -> Result<Value, ExecError> {
    let m = match manager(&call, "Beacon list") {
        Ok(m) => m,
        Err(e) => return Ok(e),
    };
    let b = m.list(
        &call.ctx.pillar(),
        truthy(call.arg("include_pillar")),
        truthy(call.arg("include_opts")),
    );
    Ok(if truthy(call.arg("return_yaml")) {
        yaml(b)
    } else {
        b
    })
}

async fn list_available(call: Call) -> Result<Value, ExecError> {
    let names: Vec<Value> = beacons::available().into_iter().map(Value::from).collect();
    if names.is_empty() {
        return Ok(json!({"beacons": {}}));
    }
    Ok(if truthy(call.arg("return_yaml")) {
        yaml(Value::Array(names))
    } else {
        Value::Array(names)
    })
}

/// The beacon module a config names (`beacon_module`), else `name`.
fn module_of(name: &str, data: &Value) -> String {
    data.as_array()
        .into_iter()
        .flatten()
        .find_map(|i| i.get("beacon_module").map(python::str))
        .unwrap_or_else(|| name.to_owned())
}

/// Salt's `validate_beacon`: the module's validation of `data`.
fn validate(name: &str, data: &Value) -> Result<(), String> {
    let module = module_of(name, data);
    match beacons::BEACONS.iter().find(|k| k.name == module) {
        Some(k) => (k.make)().validate(data),
        None => Ok(()),
    }
}

async fn add(call: Call) -> Result<Value, ExecError> {
    let m = match manager(&call, "Beacon add") {
        Ok(m) => m,
        Err(e) => return Ok(e),
    };
    let (name, data, pillar) = (
        name(&call),
        call.arg("beacon_data").clone(),
        call.ctx.pillar(),
    );
    if m.list(&pillar, true, true).get(&name).is_some() {
        return Ok(
            json!({"comment": format!("Beacon {name} is already configured."), "result": true}),
        );
    }
    let module = module_of(&name, &data);
    if !beacons::available().contains(&module.as_str()) {
        return Ok(
            json!({"comment": format!("Beacon \"{module}\" is not available."), "result": false}),
        );
    }
    if is_test(&call) {
        return Ok(json!({"comment": format!("Beacon: {name} would be added."), "result": true}));
    }
    if let Err(v) = validate(&name, &data) {
        let c = format!("Beacon {name} configuration invalid, not adding.\n{v}");
        return Ok(json!({"comment": c, "result": false}));
    }
    let change = m.add(&name, data.clone(), &pillar);
    Ok(if change.complete() {
        let now = &change.beacons()[&name];
        let all_in = data.as_array().into_iter().flatten().all(|i| {
            now.as_array().is_some_and(|a| a.contains(i)) || now.get(python::str(i)).is_some()
        });
        if all_in {
            json!({"comment": format!("Added beacon: {name}."), "result": true})
        } else {
            json!({"comment": format!("Failed to add beacon {name}."), "result": false})
        }
    } else {
        json!({"comment": change.comment(), "result": false})
    })
}

/// Salt's diff of a beacon's config: `key:value` per item's entry, through `difflib`.
fn config_diff(old: &Value, new: &Value) -> String {
    let lines = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .flat_map(|m| m.iter().map(|(k, v)| format!("{k}:{}\n", python::str(v))))
            .collect()
    };
    let (a, b) = (lines(old), lines(new));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let b: Vec<&str> = b.iter().map(String::as_str).collect();
    crate::difflib::unified_diff(&a, &b)
}

async fn modify(call: Call) -> Result<Value, ExecError> {
    let m = match manager(&call, "Beacon modify") {
        Ok(m) => m,
        Err(e) => return Ok(e),
    };
    let (name, data, pillar) = (
        name(&call),
        call.arg("beacon_data").clone(),
        call.ctx.pillar(),
    );
    let current = m.list(&pillar, true, true);
    let Some(old) = current.get(&name) else {
        return Ok(json!({"comment": format!("Beacon {name} is not configured."), "result": true}));
    };
    if is_test(&call) {
        return Ok(
            json!({"comment": format!("Beacon: {name} would be modified."), "result": true}),
        );
    }
    if let Err(v) = validate(&name, &data) {
        let c = format!("Beacon {name} configuration invalid, not modifying.\n{v}");
        return Ok(json!({"comment": c, "result": false}));
    }
    if *old == data {
        return Ok(json!({"comment": format!("Job {name} in correct state"), "result": true}));
    }
    let diff = config_diff(old, &data);
    let change = m.modify(&name, data.clone(), &pillar);
    let (comment, result) = if !change.complete() {
        (change.comment(), false)
    } else if change.beacons()[&name] == data {
        (format!("Modified beacon: {name}."), true)
    } else {
        (String::new(), true)
    };
    Ok(json!({"comment": comment, "result": result, "changes": {"diff": diff}}))
}

async fn delete(call: Call) -> Result<Value, ExecError> {
    let name = name(&call);
    if is_test(&call) {
        return Ok(json!({"comment": format!("Beacon: {name} would be deleted."), "result": true}));
    }
    let m = match manager(&call, "Beacon delete") {
        Ok(m) => m,
        Err(e) => return Ok(e),
    };
    let change = m.delete(&name, &call.ctx.pillar());
    Ok(if !change.complete() {
        json!({"comment": change.comment(), "result": false})
    } else if change.beacons().get(&name).is_none() {
        json!({"comment": format!("Deleted beacon: {name}."), "result": true})
    } else {
        json!({"comment": format!("Failed to delete beacon {name}."), "result": false})
    })
}

async fn save(call: Call) -> Result<Value, ExecError> {
    let m = match manager(&call, "Beacon save") {
        Ok(m) => m,
        Err(e) => return Ok(e),
    };
    let b = m.list(&call.ctx.pillar(), false, true);
    let text = match &b {
        Value::Object(o) if !o.is_empty() => {
            yaml(b.clone()).as_str().unwrap_or_default().to_owned()
        }
        _ => String::new(),
    };
    let sfn = m.save_path().to_path_buf();
    let written = sfn
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&sfn, text));
    Ok(match written {
        Ok(()) => {
            json!({"comment": format!("Beacons saved to {}.", sfn.display()), "result": true})
        }
        Err(_) => json!({
            "comment": format!("Unable to write to beacons file at {}. Check permissions.", sfn.display()),
            "result": false,
        }),
    })
}

/// `enable` and `disable`: every beacon on or off.
fn switch_all(call: &Call, on: bool) -> Value {
    let word = if on { "enable" } else { "disable" };
    if is_test(call) {
        return json!({"comment": format!("Beacons would be {word}d."), "result": true});
    }
    let m = match manager(call, &format!("Beacons {word} job")) {
        Ok(m) => m,
        Err(e) => return e,
    };
    let change: Change = m.set_all_enabled(on);
    let now = change.beacons().get("enabled").map(truthy);
    if change.complete() && now == Some(on) {
        let w = if on { "Enabled" } else { "Disabled" };
        json!({"comment": format!("{w} beacons on minion."), "result": true})
    } else {
        json!({"comment": format!("Failed to {word} beacons on minion."), "result": false})
    }
}

async fn enable(call: Call) -> Result<Value, ExecError> {
    Ok(switch_all(&call, true))
}

async fn disable(call: Call) -> Result<Value, ExecError> {
    Ok(switch_all(&call, false))
}

/// `enable_beacon` and `disable_beacon`: one beacon on or off.
fn switch_one(call: &Call, on: bool) -> Value {
    let name = name(call);
    if name.is_empty() || name == "None" {
        return json!({"comment": "Beacon name is required.", "result": false});
    }
    if is_test(call) {
        let c = if on {
            format!("Beacon {name} would be enabled.")
        } else {
            "Beacons would be disabled.".to_owned()
        };
        return json!({"comment": c, "result": true});
    }
    let what = if on {
        "Beacon enable_beacon job"
    } else {
        "Beacon disable_beacon job"
    };
    let m = match manager(call, what) {
        Ok(m) => m,
        Err(e) => return e,
    };
    let pillar = call.ctx.pillar();
    if m.list(&pillar, true, true).get(&name).is_none() {
        let c = format!("Beacon {name} is not currently configured.");
        return json!({"comment": c, "result": false});
    }
    let change = m.set_enabled(&name, on, &pillar);
    if !change.complete() {
        return json!({"comment": change.comment(), "result": false});
    }
    let conf = match &change.beacons()[&name] {
        Value::Array(items) => Value::Object(beacons::list_to_dict(items)),
        other => other.clone(),
    };
    match (conf.get("enabled").map(truthy), on) {
        (Some(true), true) => {
            json!({"comment": format!("Enabled beacon {name} on minion."), "result": true})
        }
        (Some(false), false) => {
            json!({"comment": format!("Disabled beacon {name} on minion."), "result": true})
        }
        (_, true) => {
            json!({"comment": format!("Failed to enable beacon {name} on minion."), "result": false})
        }
        (_, false) => json!({"comment": "Failed to disable beacon on minion.", "result": false}),
    }
}

async fn enable_beacon(call: Call) -> Result<Value, ExecError> {
    Ok(switch_one(&call, true))
}

async fn disable_beacon(call: Call) -> Result<Value, ExecError> {
    Ok(switch_one(&call, false))
}

async fn reset(call: Call) -> Result<Value, ExecError> {
    if is_test(&call) {
        return Ok(json!({"comment": "Beacons would be reset.", "result": true}));
    }
    let m = match manager(&call, "Beacon reset job") {
        Ok(m) => m,
        Err(e) => return Ok(e),
    };
    let change = m.reset();
    Ok(if change.complete() {
        json!({"comment": "Beacon configuration reset.", "result": true})
    } else {
        json!({"comment": change.comment(), "result": false})
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use crate::beacons::Manager;
    use crate::testutil::{ctx, run_in};

    /// Return shapes and comments as Salt 3007.8's `salt/modules/beacons.py` builds them from
    /// the minion's completion events (read from its source: beacons.* needs a minion daemon,
    /// `salt-call --local` answers `beacons: null` without one).
    #[tokio::test]
    async fn a_beacons_life_through_the_module() {
        let dir = tempfile::tempdir().unwrap();
        let m = Arc::new(Manager::load(&json!({}), dir.path()).unwrap());
        let c = ctx().with_beacons(m.clone());
        let call = |fun: &'static str, args: serde_json::Value, kw: serde_json::Value| {
            let c = c.clone();
            async move { run_in(&c, fun, args, kw).await }
        };
        assert_eq!(
            call("beacons.list", json!([]), json!({})).await.ret,
            json!("beacons: {}\n")
        );
        let ps = json!([{"processes": {"sshd": "running"}}]);
        let out = call("beacons.add", json!(["ps", ps]), json!({})).await;
        assert_eq!(
            out.ret,
            json!({"comment": "Added beacon: ps.", "result": true})
        );
        let out = call("beacons.add", json!(["ps", ps]), json!({})).await;
        assert_eq!(
            out.ret,
            json!({"comment": "Beacon ps is already configured.", "result": true})
        );
        let out = call("beacons.add", json!(["x", [{"a": 1}]]), json!({})).await;
        assert_eq!(
            out.ret,
            json!({"comment": "Beacon \"x\" is not available.", "result": false})
        );
        assert_eq!(out.retcode, 1);
        let out = call(
            "beacons.add",
            json!(["load", [{"averages": {}}]]),
            json!({}),
        )
        .await;
        assert_eq!(
            out.ret["comment"],
            json!(
                "Beacon load configuration invalid, not adding.\nAverages configuration for load beacon must contain 1m, 5m or 15m items."
            )
        );
        assert_eq!(
            call("beacons.list", json!([]), json!({})).await.ret,
            json!("beacons:\n  ps:\n  - processes:\n      sshd: running\n")
        );
        let out = call(
            "beacons.modify",
            json!(["ps", [{"processes": {"cron": "running"}}]]),
            json!({}),
        )
        .await;
        assert_eq!(out.ret["comment"], json!("Modified beacon: ps."));
        assert_eq!(
            out.ret["changes"]["diff"],
            json!(
                "--- \n+++ \n@@ -1 +1 @@\n-processes:{'sshd': 'running'}\n+processes:{'cron': 'running'}\n"
            )
        );
        let out = call("beacons.disable_beacon", json!(["ps"]), json!({})).await;
        assert_eq!(
            out.ret,
            json!({"comment": "Disabled beacon ps on minion.", "result": true})
        );
        let out = call("beacons.disable", json!([]), json!({})).await;
        assert_eq!(
            out.ret,
            json!({"comment": "Disabled beacons on minion.", "result": true})
        );
        let out = call("beacons.save", json!([]), json!({})).await;
        let sfn = dir.path().join("minion.d/beacons.conf");
        assert_eq!(
            out.ret["comment"],
            json!(format!("Beacons saved to {}.", sfn.display()))
        );
        assert_eq!(
            std::fs::read_to_string(&sfn).unwrap(),
            "beacons:\n  enabled: false\n  ps:\n  - processes:\n      cron: running\n  - enabled: false\n"
        );
        let again = Manager::load(&json!({}), dir.path()).unwrap();
        assert_eq!(
            again.opts_beacons(),
            m.opts_beacons(),
            "saved beacons read back"
        );
        let out = call("beacons.delete", json!(["ps"]), json!({})).await;
        assert_eq!(
            out.ret,
            json!({"comment": "Deleted beacon: ps.", "result": true})
        );
        let out = call("beacons.reset", json!([]), json!({})).await;
        assert_eq!(
            out.ret,
            json!({"comment": "Beacon configuration reset.", "result": true})
        );
        let out = call("beacons.enable_beacon", json!(["ps"]), json!({})).await;
        assert_eq!(
            out.ret,
            json!({"comment": "Beacon ps is not currently configured.", "result": false})
        );
        let out = run_in(&ctx(), "beacons.list", json!([]), json!({})).await;
        assert_eq!(
            out.ret,
            json!({"result": false, "comment": "Event module not available. Beacon list failed."})
        );
        let out = call(
            "beacons.list_available",
            json!([]),
            json!({"return_yaml": false}),
        )
        .await;
        assert_eq!(out.ret[1], json!("inotify"));
    }

    /// The same calls, in the same order, answer what Salt 3007.8's module answered
    /// (`beacons_salt3007.json`, recorded as its `_recorded` key says).
    #[tokio::test]
    async fn salts_recorded_answers() {
        let rec: serde_json::Value =
            serde_json::from_str(include_str!("beacons_salt3007.json")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let m = Arc::new(Manager::load(&json!({}), dir.path()).unwrap());
        let c = ctx().with_beacons(m);
        for call in rec["calls"].as_array().unwrap() {
            let fun = format!("beacons.{}", call[0].as_str().unwrap());
            let out = run_in(&c, &fun, call[1].clone(), call[2].clone()).await;
            assert_eq!(out.ret, call[3], "{fun} {}", call[1]);
        }
    }
}
