//! Salt's `schedule` module (`salt/modules/schedule.py`, 3007.8): list and change the
//! minion's schedule. As in Salt, each change is a request to the minion's scheduler (its
//! `manage_schedule` event), answered with the `/salt/minion/minion_schedule_*_complete`
//! event's data, which this module fires too and reads its answer from.

use serde_json::{Map, Value, json};

use saltq_semantics::python::truthy;
use saltq_semantics::schedule::book::list_view;
use saltq_semantics::schedule::when::strptime;

use crate::error::ExecError;
use crate::spec::{Call, Function, Lit, Param};

/// The `schedule` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("schedule.add", handler!(add))
        .params(&[Param::req("name")])
        .kwargs()
        .doc("Add a job to the schedule\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.add job1 function='test.ping' seconds=3600\n"),
    Function::new("schedule.delete", handler!(delete))
        .params(&[Param::req("name")])
        .kwargs()
        .doc("Delete a job from the minion's schedule\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.delete job1\n"),
    Function::new("schedule.disable", handler!(disable))
        .kwargs()
        .doc("Disable all scheduled jobs on the minion\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.disable\n"),
    Function::new("schedule.disable_job", handler!(disable_job))
        .params(&[Param::req("name")])
        .kwargs()
        .doc("Disable a job in the minion's schedule\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.disable_job job1\n"),
    Function::new("schedule.enable", handler!(enable))
        .kwargs()
        .doc("Enable all scheduled jobs on the minion\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.enable\n"),
    Function::new("schedule.enable_job", handler!(enable_job))
        .params(&[Param::req("name")])
        .kwargs()
        .doc("Enable a job in the minion's schedule\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.enable_job job1\n"),
    Function::new("schedule.is_enabled", handler!(is_enabled))
        .params(&[Param::opt("name", Lit::None)])
        .doc("List a Job only if its enabled\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.is_enabled name=job_name\n"),
    Function::new("schedule.job_status", handler!(job_status))
        .params(&[Param::req("name"), Param::opt("time_fmt", Lit::Str("%Y-%m-%dT%H:%M:%S"))])
        .doc("Return the information for a specified job in the schedule\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.job_status job_name\n"),
    Function::new("schedule.list", handler!(list))
        .py_name("list_")
        .params(&[
            Param::opt("show_all", Lit::Bool(false)),
            Param::opt("show_disabled", Lit::Bool(true)),
            Param::opt("where", Lit::None),
            Param::opt("return_yaml", Lit::Bool(true)),
            Param::opt("offline", Lit::Bool(false)),
        ])
        .doc("List the jobs currently scheduled on the minion\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.list\n"),
    Function::new("schedule.modify", handler!(modify))
        .params(&[Param::req("name")])
        .kwargs()
        .doc("Modify an existing job in the schedule\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.modify job1 function='test.ping' seconds=3600\n"),
    Function::new("schedule.copy", handler!(copy))
        .params(&[Param::req("name"), Param::req("target")])
        .kwargs()
        .doc("Copy scheduled job to another minion or minions.\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.copy jobname target\n"),
    Function::new("schedule.move", handler!(move_))
        .py_name("move")
        .params(&[Param::req("name"), Param::req("target")])
        .kwargs()
        .doc("Move scheduled job to another minion or minions.\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.move jobname target\n"),
    Function::new("schedule.postpone_job", handler!(postpone_job))
        .params(&[Param::req("name"), Param::req("current_time"), Param::req("new_time")])
        .kwargs()
        .doc("Postpone a job in the minion's schedule\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.postpone_job job current_time new_time\n"),
    Function::new("schedule.purge", handler!(purge))
        .kwargs()
        .doc("Purge all the jobs currently scheduled on the minion\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.purge\n"),
    Function::new("schedule.reload", handler!(reload))
        .py_name("reload_")
        .doc("Reload saved scheduled jobs on the minion\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.reload\n"),
    Function::new("schedule.run_job", handler!(run_job))
        .params(&[Param::req("name"), Param::opt("force", Lit::Bool(false))])
        .doc("Run a scheduled job on the minion immediately\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.run_job job1\n"),
    Function::new("schedule.save", handler!(save))
        .kwargs()
        .doc("Save all scheduled jobs on the minion\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.save\n"),
    Function::new("schedule.show_next_fire_time", handler!(show_next_fire_time))
        .params(&[Param::req("name")])
        .kwargs()
        .doc("Show the next fire time for scheduled job\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.show_next_fire_time job_name\n"),
    Function::new("schedule.skip_job", handler!(skip_job))
        .params(&[Param::req("name"), Param::req("current_time")])
        .kwargs()
        .doc("Skip a job in the minion's schedule at specified time.\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' schedule.skip_job job time\n"),
];

/// The tag of the event Salt fires when the scheduler finished `func`.
fn complete_tag(func: &str) -> &'static str {
    match func {
        "add" => "/salt/minion/minion_schedule_add_complete",
        "delete" | "modify" => "/salt/minion/minion_schedule_delete_complete",
        "enable_job" => "/salt/minion/minion_schedule_enabled_job_complete",
        "disable_job" => "/salt/minion/minion_schedule_disabled_job_complete",
        "enable" => "/salt/minion/minion_schedule_enabled_complete",
        "disable" => "/salt/minion/minion_schedule_disabled_complete",
        "save_schedule" => "/salt/minion/minion_schedule_saved",
        "postpone_job" => "/salt/minion/minion_schedule_postpone_job_complete",
        "skip_job" => "/salt/minion/minion_schedule_skip_job_complete",
        "get_next_fire_time" => "/salt/minion/minion_schedule_next_fire_time_complete",
        "job_status" => "/salt/minion/minion_schedule_job_status_complete",
        _ => "/salt/minion/minion_schedule_list_complete",
    }
}

/// Sends `request` to the minion's scheduler, fires the completion event and answers it.
fn manage(call: &Call, request: Value) -> Result<Value, ExecError> {
    let Some(sched) = &call.ctx.schedule else {
        return Err(ExecError::execution(
            "the scheduler is not available: schedule.* runs on a minion",
        ));
    };
    let func = request["func"].as_str().unwrap_or_default().to_owned();
    let mut answer = sched.manage(request);
    let event = match &mut answer {
        Value::Object(m) => {
            let mut m = m.clone();
            m.remove("saved");
            Value::Object(m)
        }
        other => other.clone(),
    };
    if !matches!(func.as_str(), "run_job" | "reload")
        && let Some(events) = &call.ctx.events
    {
        events.send(complete_tag(&func), event);
    }
    Ok(answer)
}

fn schedule_of(answer: &Value) -> Map<String, Value> {
    answer
        .get("schedule")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn kw_true(call: &Call, key: &str) -> bool {
    call.kwargs().get(key).is_some_and(truthy)
}

fn persist(call: &Call) -> bool {
    call.kwargs().get("persist").is_none_or(truthy)
}

fn name_of(call: &Call) -> String {
    saltq_semantics::python::str(call.arg("name"))
}

/// The current schedule seen by `list_(show_all=True, where=..., return_yaml=False)`.
fn current(call: &Call, where_: Option<&str>) -> Result<Map<String, Value>, ExecError> {
    let answer = manage(call, json!({"func": "list", "where": where_}))?;
    Ok(list_view(&schedule_of(&answer), true, true, None))
}

/// `offline=True`: Salt's functions then read and write `minion.d/_schedule.conf` beside
/// the minion's config themselves, with no running scheduler (a minion not started yet).
fn offline(call: &Call) -> bool {
    call.kwargs().get("offline").is_some_and(truthy)
}

/// Salt's `_get_schedule_config_file`: `minion.d/_schedule.conf` in the config directory
/// (`conf_dir`, the directory of `conf_file`, the minion's `config_dir`, else `/etc/salt`).
fn schedule_file(call: &Call) -> std::path::PathBuf {
    let opts = &call.ctx.opts;
    let s = |k: &str| {
        opts.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let dir = s("conf_dir")
        .map(std::path::PathBuf::from)
        .or_else(|| s("conf_file").and_then(|f| std::path::Path::new(f).parent().map(Into::into)))
        .or_else(|| s("config_dir").map(std::path::PathBuf::from))
        .unwrap_or_else(|| "/etc/salt".into());
    dir.join("minion.d").join("_schedule.conf")
}

/// The `schedule` dict `_schedule.conf` holds (empty without the file).
fn read_offline(call: &Call) -> Result<Map<String, Value>, ExecError> {
    let path = schedule_file(call);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => {
            return Err(ExecError::execution(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    let doc: Value = serde_yaml_ng::from_str(&text)
        .map_err(|e| ExecError::execution(format!("{} is not YAML: {e}", path.display())))?;
    Ok(doc
        .get("schedule")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default())
}

/// Writes `{"schedule": schedule}` to `_schedule.conf`, as Salt's offline mode does.
fn write_offline(call: &Call, schedule: Map<String, Value>) -> Result<(), ExecError> {
    let path = schedule_file(call);
    let text = saltq_semantics::output::render(
        saltq_semantics::output::Outputter::Yaml,
        &json!({ "schedule": schedule }),
        &saltq_semantics::output::OutputOptions::default(),
    );
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, text.as_bytes())
    };
    write().map_err(|e| {
        ExecError::execution(format!(
            "failed to persist the updated schedule to {}: {e}",
            path.display()
        ))
    })
}

/// `list_(show_all=True, return_yaml=False, offline=True)`: the file's jobs as listed.
fn current_offline(call: &Call) -> Result<Map<String, Value>, ExecError> {
    Ok(list_view(&read_offline(call)?, true, true, None))
}

async fn list(call: Call) -> Result<Value, ExecError> {
    let (answer, saved) = if truthy(call.arg("offline")) {
        let saved = read_offline(&call)?;
        (json!({ "schedule": saved.clone() }), saved)
    } else {
        let where_ = call.arg("where").as_str().map(str::to_owned);
        let answer = manage(&call, json!({"func": "list", "where": where_}))?;
        let saved = answer
            .get("saved")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        (answer, saved)
    };
    let return_yaml = truthy(call.arg("return_yaml"));
    let view = list_view(
        &schedule_of(&answer),
        truthy(call.arg("show_all")),
        truthy(call.arg("show_disabled")),
        return_yaml.then_some(&saved),
    );
    if !return_yaml {
        return Ok(Value::Object(view));
    }
    let doc = json!({ "schedule": view });
    Ok(Value::String(saltq_semantics::output::render(
        saltq_semantics::output::Outputter::Yaml,
        &doc,
        &saltq_semantics::output::OutputOptions::default(),
    )))
}

async fn is_enabled(call: Call) -> Result<Value, ExecError> {
    let answer = manage(&call, json!({"func": "list", "where": null}))?;
    let view = list_view(&schedule_of(&answer), false, true, None);
    match call.arg("name") {
        Value::Null => Ok(view.get("enabled").cloned().unwrap_or(json!(true))),
        name => Ok(view
            .get(&saltq_semantics::python::str(name))
            .cloned()
            .unwrap_or_else(|| json!({}))),
    }
}

/// Salt's `build_schedule_item`: the job's options from the call's keyword arguments, or
/// the `{comment, result: False}` answer naming what is wrong.
fn build_item(name: &str, kw: &Map<String, Value>) -> Result<Map<String, Value>, Value> {
    let fail = |c: &str| json!({"comment": c, "result": false});
    let mut job = Map::new();
    job.insert(
        "function".into(),
        kw.get("function").cloned().unwrap_or(Value::Null),
    );
    let timed = ["seconds", "minutes", "hours", "days"]
        .iter()
        .any(|k| kw.contains_key(*k));
    if timed && (kw.contains_key("when") || kw.contains_key("cron")) {
        return Err(fail(
            r#"Unable to use "seconds", "minutes", "hours", or "days" with "when" or "cron" options."#,
        ));
    }
    if kw.contains_key("when") && kw.contains_key("cron") {
        return Err(fail(
            r#"Unable to use "when" and "cron" options together.  Ignoring."#,
        ));
    }
    for k in [
        "seconds",
        "minutes",
        "hours",
        "days",
        "return_job",
        "metadata",
    ] {
        if let Some(v) = kw.get(k) {
            job.insert(k.into(), v.clone());
        }
    }
    match kw.get("job_args") {
        Some(Value::Array(a)) => _ = job.insert("args".into(), Value::Array(a.clone())),
        Some(_) => {
            return Err(fail(
                "job_args is not a list. please correct and try again.",
            ));
        }
        None => {}
    }
    match kw.get("job_kwargs") {
        Some(Value::Object(m)) => _ = job.insert("kwargs".into(), Value::Object(m.clone())),
        Some(_) => {
            return Err(fail(
                "job_kwargs is not a dict. please correct and try again.",
            ));
        }
        None => {}
    }
    job.insert(
        "maxrunning".into(),
        kw.get("maxrunning").cloned().unwrap_or(json!(1)),
    );
    job.insert(
        "name".into(),
        kw.get("name").cloned().unwrap_or(json!(name)),
    );
    job.insert(
        "enabled".into(),
        kw.get("enabled").cloned().unwrap_or(json!(true)),
    );
    job.insert(
        "jid_include".into(),
        kw.get("jid_include").cloned().unwrap_or(json!(true)),
    );
    if let Some(s) = kw.get("splay") {
        job.insert("splay".into(), s.clone());
    }
    if let Some(w) = kw.get("when") {
        let items = match w {
            Value::Array(a) => a.clone(),
            v => vec![v.clone()],
        };
        for item in items {
            let ok = item
                .as_str()
                .and_then(|s| saltq_semantics::schedule::when::parse(s, today()))
                .is_some();
            if !ok {
                let s = saltq_semantics::python::str(&item);
                return Err(fail(&format!(
                    r#"Schedule item {s} for "when" in invalid."#
                )));
            }
        }
    }
    for k in [
        "range",
        "when",
        "once",
        "once_fmt",
        "cron",
        "returner",
        "after",
        "return_config",
        "return_kwargs",
        "until",
        "run_on_start",
        "skip_during_range",
    ] {
        if let Some(v) = kw.get(k) {
            job.insert(k.into(), v.clone());
        }
    }
    Ok(job)
}

/// The keyword arguments Salt's functions see, without the `__pub_*` keys.
fn user_kwargs(call: &Call) -> Map<String, Value> {
    call.kwargs()
        .iter()
        .filter(|(k, _)| !k.starts_with("__"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

async fn add(call: Call) -> Result<Value, ExecError> {
    let name = name_of(&call);
    let mut ret = json!({"comment": format!("Failed to add job {name} to schedule."), "result": false, "changes": {}});
    let existing = if offline(&call) {
        current_offline(&call)?
    } else {
        current(&call, None)?
    };
    if existing.contains_key(&name) {
        ret["comment"] = json!(format!("Job {name} already exists in schedule."));
        return Ok(ret);
    }
    let kw = user_kwargs(&call);
    let timed = ["seconds", "minutes", "hours", "days"]
        .iter()
        .any(|k| kw.contains_key(*k));
    if timed && (kw.contains_key("when") || kw.contains_key("cron")) {
        ret["comment"] = json!(
            r#"Error: Unable to use "seconds", "minutes", "hours", or "days" with "when" or "cron" options."#
        );
        return Ok(ret);
    }
    let job = match build_item(&name, &kw) {
        Ok(j) => j,
        Err(e) => return Ok(e),
    };
    if kw_true(&call, "test") {
        return Ok(
            json!({"comment": format!("Job: {name} would be added to schedule."), "result": true, "changes": {}}),
        );
    }
    if offline(&call) {
        let mut schedule = existing;
        schedule.insert(name.clone(), Value::Object(job));
        write_offline(&call, schedule)?;
        return Ok(
            json!({"comment": format!("Added job: {name} to schedule."), "result": true, "changes": {&name: "added"}}),
        );
    }
    let answer = manage(
        &call,
        json!({"name": name, "schedule": {&name: job}, "func": "add", "persist": persist(&call)}),
    )?;
    if schedule_of(&answer).contains_key(&name) {
        ret = json!({"comment": format!("Added job: {name} to schedule."), "result": true, "changes": {&name: "added"}});
    }
    Ok(ret)
}

async fn delete(call: Call) -> Result<Value, ExecError> {
    let name = name_of(&call);
    if kw_true(&call, "test") {
        return Ok(
            json!({"comment": format!("Job: {name} would be deleted from schedule."), "result": true, "changes": {}}),
        );
    }
    let mut ret = json!({"comment": format!("Failed to delete job {name} from schedule."), "result": false, "changes": {}});
    if offline(&call) {
        let mut schedule = current_offline(&call)?;
        // Salt's offline delete meets a KeyError here.
        if schedule.shift_remove(&name).is_none() {
            return Err(ExecError::execution(format!(
                "job {name} is not in {}",
                schedule_file(&call).display()
            )));
        }
        write_offline(&call, schedule)?;
        return Ok(
            json!({"comment": format!("Deleted Job {name} from schedule."), "result": true, "changes": {&name: "removed"}}),
        );
    }
    let in_opts = current(&call, Some("opts"))?.contains_key(&name);
    if !in_opts && !current(&call, Some("pillar"))?.contains_key(&name) {
        ret["comment"] = json!(format!("Job {name} does not exist."));
        return Ok(ret);
    }
    let answer = manage(
        &call,
        json!({"name": name, "func": "delete", "persist": in_opts && persist(&call),
        "where": if in_opts { Value::Null } else { json!("pillar") }}),
    )?;
    if !schedule_of(&answer).contains_key(&name) {
        ret = json!({"comment": format!("Deleted Job {name} from schedule."), "result": true, "changes": {&name: "removed"}});
    }
    Ok(ret)
}

async fn purge(call: Call) -> Result<Value, ExecError> {
    let mut comments = Vec::new();
    let mut changes = Map::new();
    let off = offline(&call);
    let mut schedule = if off {
        current_offline(&call)?
    } else {
        current(&call, None)?
    };
    for name in schedule.clone().keys() {
        if name == "enabled" || name.starts_with("__") {
            continue;
        }
        if kw_true(&call, "test") {
            comments.push(json!(format!(
                "Job: {name} would be deleted from schedule."
            )));
            continue;
        }
        if off {
            schedule.shift_remove(name);
            comments.push(json!(format!("Deleted job: {name} from schedule.")));
            changes.insert(name.clone(), json!("removed"));
            continue;
        }
        let answer = manage(
            &call,
            json!({"name": name, "func": "delete", "persist": persist(&call)}),
        )?;
        if schedule_of(&answer).contains_key(name) {
            comments.push(json!(format!("Failed to delete job {name} from schedule.")));
        } else {
            changes.insert(name.clone(), json!("removed"));
            comments.push(json!(format!("Deleted job: {name} from schedule.")));
        }
    }
    // Salt writes the file at the end in offline mode.
    if off {
        write_offline(&call, schedule)?;
    }
    Ok(json!({"comment": comments, "changes": changes, "result": true}))
}

async fn modify(call: Call) -> Result<Value, ExecError> {
    let name = name_of(&call);
    let mut kw = user_kwargs(&call);
    let timed = ["seconds", "minutes", "hours", "days"]
        .iter()
        .any(|k| kw.contains_key(*k));
    if timed && (kw.contains_key("when") || kw.contains_key("cron")) {
        return Ok(
            json!({"comment": r#"Error: Unable to use "seconds", "minutes", "hours", or "days" with "when" option."#, "changes": {}, "result": false}),
        );
    }
    let off = offline(&call);
    let all = if off {
        current_offline(&call)?
    } else {
        current(&call, None)?
    };
    let Some(Value::Object(cur)) = all.get(&name) else {
        return Ok(
            json!({"comment": format!("Job {name} does not exist in schedule."), "changes": {}, "result": false}),
        );
    };
    let mut cur = cur.clone();
    if !kw.contains_key("function") {
        kw.insert(
            "function".into(),
            cur.get("function").cloned().unwrap_or(Value::Null),
        );
    }
    if let Some(s) = cur.remove("_seconds") {
        cur.insert("seconds".into(), s);
    }
    let new = match build_item(&name, &kw) {
        Ok(j) => j,
        Err(e) => return Ok(e),
    };
    if Value::Object(new.clone()) == Value::Object(cur.clone()) {
        return Ok(
            json!({"comment": format!("Job {name} in correct state"), "changes": {}, "result": true}),
        );
    }
    let changes = json!({&name: {"old": cur, "new": new}});
    if kw_true(&call, "test") {
        return Ok(
            json!({"comment": format!("Job: {name} would be modified in schedule."), "changes": changes, "result": true}),
        );
    }
    if off {
        let mut schedule = all.clone();
        if let Some(Value::Object(job)) = schedule.get_mut(&name) {
            job.extend(new);
        }
        write_offline(&call, schedule)?;
        return Ok(
            json!({"comment": format!("Modified job: {name} in schedule."), "changes": changes, "result": true}),
        );
    }
    let in_opts = current(&call, Some("opts"))?.contains_key(&name);
    manage(
        &call,
        json!({"name": name, "schedule": new, "func": "modify",
        "persist": in_opts && persist(&call), "where": if in_opts { Value::Null } else { json!("pillar") }}),
    )?;
    Ok(
        json!({"comment": format!("Modified job: {name} in schedule."), "changes": changes, "result": true}),
    )
}

async fn run_job(call: Call) -> Result<Value, ExecError> {
    let name = name_of(&call);
    let all = current(&call, None)?;
    let Some(job) = all.get(&name) else {
        return Ok(json!({"comment": format!("Job {name} does not exist."), "result": false}));
    };
    if job.get("enabled").is_some_and(|e| !truthy(e)) && !truthy(call.arg("force")) {
        return Ok(json!({"comment": format!("Job {name} is disabled."), "result": true}));
    }
    manage(&call, json!({"name": name, "func": "run_job"}))?;
    Ok(json!({"comment": format!("Scheduling Job {name} on minion."), "result": true}))
}

/// `enable_job` and `disable_job`.
fn set_job(call: &Call, on: bool) -> Result<Value, ExecError> {
    let name = name_of(call);
    let (verb, func) = if on {
        ("enable", "enable_job")
    } else {
        ("disable", "disable_job")
    };
    if kw_true(call, "test") {
        return Ok(
            json!({"comment": format!("Job: {name} would be {verb}d in schedule."), "result": true, "changes": {}}),
        );
    }
    let in_opts = current(call, Some("opts"))?.contains_key(&name);
    if !in_opts && !current(call, Some("pillar"))?.contains_key(&name) {
        return Ok(
            json!({"comment": format!("Job {name} does not exist."), "result": false, "changes": {}}),
        );
    }
    let answer = manage(
        call,
        json!({"name": name, "func": func, "persist": in_opts && persist(call),
        "where": if in_opts { Value::Null } else { json!("pillar") }}),
    )?;
    let now = schedule_of(&answer)
        .get(&name)
        .and_then(|j| j.get("enabled"))
        .map(truthy);
    let cap = if on { "Enabled" } else { "Disabled" };
    Ok(if now == Some(on) {
        json!({"comment": format!("{cap} Job {name} in schedule."), "result": true, "changes": {&name: format!("{verb}d")}})
    } else {
        json!({"comment": format!("Failed to {verb} job {name} in schedule."), "result": false, "changes": {}})
    })
}

async fn enable_job(call: Call) -> Result<Value, ExecError> {
    set_job(&call, true)
}

async fn disable_job(call: Call) -> Result<Value, ExecError> {
    set_job(&call, false)
}

/// `enable` and `disable`: the whole schedule.
fn set_all(call: &Call, on: bool) -> Result<Value, ExecError> {
    let verb = if on { "enable" } else { "disable" };
    if kw_true(call, "test") {
        return Ok(
            json!({"comment": format!("Schedule would be {verb}d."), "changes": {}, "result": true}),
        );
    }
    let answer = manage(call, json!({"func": verb, "persist": persist(call)}))?;
    let state = schedule_of(&answer).get("enabled").is_none_or(truthy);
    let cap = if on { "Enabled" } else { "Disabled" };
    Ok(if state == on {
        json!({"comment": format!("{cap} schedule on minion."), "changes": {"schedule": format!("{verb}d")}, "result": true})
    } else {
        json!({"comment": format!("Failed to {verb} schedule on minion."), "changes": {}, "result": false})
    })
}

async fn enable(call: Call) -> Result<Value, ExecError> {
    set_all(&call, true)
}

async fn disable(call: Call) -> Result<Value, ExecError> {
    set_all(&call, false)
}

async fn save(call: Call) -> Result<Value, ExecError> {
    if kw_true(&call, "test") {
        return Ok(json!({"comment": "Schedule would be saved.", "result": true}));
    }
    let answer = manage(&call, json!({"func": "save_schedule"}))?;
    Ok(if answer.get("complete").is_some_and(truthy) {
        json!({"comment": "Schedule (non-pillar items) saved.", "result": true})
    } else {
        json!({"comment": "Failed to save schedule.", "result": false})
    })
}

async fn reload(call: Call) -> Result<Value, ExecError> {
    let mut comments = Vec::new();
    if call.ctx.pillar().get("schedule").is_some() {
        let ok = call.ctx.jobs.refresh_pillar();
        comments.push(json!(if ok {
            "Reloaded schedule from pillar on minion."
        } else {
            "Failed to reload schedule from pillar on minion."
        }));
    }
    let answer = manage(&call, json!({"func": "reload"}))?;
    if let Some(e) = answer.get("error").and_then(Value::as_str) {
        comments.push(json!(format!("Unable to read existing schedule file: {e}")));
        return Ok(json!({"comment": comments, "result": false}));
    }
    if answer.get("reloaded").is_some_and(truthy) {
        comments.push(json!("Reloaded schedule on minion from schedule.conf."));
    } else if answer.get("empty").is_some_and(truthy) {
        comments.push(json!(
            "Failed to reload schedule on minion.  Saved file is empty or invalid."
        ));
        return Ok(json!({"comment": comments, "result": false}));
    }
    Ok(json!({"comment": comments, "result": true}))
}

/// `move` and `copy`, as Salt's: the job's options (from the config's jobs, else the
/// pillar's) published to `target` as `schedule.add key=value ...` through `publish.publish`
/// (the master's `peer` rules decide), then, for a move, the job deleted here. Without
/// peer publishing `publish.publish` answers nothing, as Salt's does with no master.
async fn relocate(call: &Call, moving: bool) -> Result<Value, ExecError> {
    let name = name_of(call);
    let mut ret = json!({"comment": [], "result": true});
    if name.is_empty() {
        ret = json!({"comment": "Job name is required.", "result": false});
    }
    let verb = if moving { "moved" } else { "copied" };
    if kw_true(call, "test") {
        ret["comment"] = json!(format!("Job: {name} would be {verb} from schedule."));
        return Ok(ret);
    }
    let opts = current(call, Some("opts"))?;
    let data = match opts.get(&name) {
        Some(d) => d.clone(),
        None => match current(call, Some("pillar"))?.get(&name) {
            Some(d) => d.clone(),
            None => {
                return Ok(
                    json!({"comment": format!("Job {name} does not exist."), "result": false}),
                );
            }
        },
    };
    let words: Vec<Value> = data
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| json!(format!("{k}={}", saltq_semantics::python::str(v))))
        .collect();
    let target = call.arg("target").clone();
    let args = vec![target, json!("schedule.add"), Value::Array(words)];
    let response =
        match crate::dispatch::call_direct(&call.ctx, "publish.publish", args, Map::new()).await {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
    let minions: Vec<&String> = response.keys().collect();
    let errors: Vec<&String> = response
        .iter()
        .filter(|(_, r)| !truthy(r))
        .map(|(id, _)| id)
        .collect();
    if response.is_empty() {
        ret["comment"] = json!("no servers answered the published schedule.add command");
        return Ok(ret);
    }
    if !errors.is_empty() {
        ret["comment"] = json!("the following minions return False");
        ret["minions"] = json!(errors);
        return Ok(ret);
    }
    if moving {
        crate::dispatch::call_direct(&call.ctx, "schedule.delete", vec![json!(name)], Map::new())
            .await
            .map_err(|e| match e {
                crate::dispatch::DirectError::Failed(e) => e,
                crate::dispatch::DirectError::Missing => {
                    ExecError::execution("schedule.delete is not available")
                }
            })?;
        ret["comment"] = json!(format!("Moved Job {name} from schedule."));
    } else {
        ret["comment"] = json!(format!("Copied Job {name} from schedule to minion(s)."));
    }
    ret["result"] = json!(true);
    ret["minions"] = json!(minions);
    Ok(ret)
}

async fn move_(call: Call) -> Result<Value, ExecError> {
    relocate(&call, true).await
}

async fn copy(call: Call) -> Result<Value, ExecError> {
    relocate(&call, false).await
}

/// `postpone_job` and `skip_job`: one explicit time (two for postpone).
fn explicit(call: &Call, postpone: bool) -> Result<Value, ExecError> {
    let name = name_of(call);
    let fmt = call
        .kwargs()
        .get("time_fmt")
        .and_then(Value::as_str)
        .unwrap_or("%Y-%m-%dT%H:%M:%S")
        .to_owned();
    let fail = |c: &str| Ok(json!({"comment": c, "result": false}));
    let time = saltq_semantics::python::str(call.arg("current_time"));
    if time.is_empty() || call.arg("current_time").is_null() {
        return fail(if postpone {
            "Job current time is required."
        } else {
            "Job time is required."
        });
    }
    if strptime(&time, &fmt).is_none() {
        return fail("Date string could not be parsed.");
    }
    let mut request = json!({"name": name, "time": time, "time_fmt": fmt, "func": "skip_job"});
    if postpone {
        let new_time = call
            .opt_arg("new_time")
            .map(saltq_semantics::python::str)
            .unwrap_or_default();
        if new_time.is_empty() {
            return fail("Job new_time is required.");
        }
        if strptime(&new_time, &fmt).is_none() {
            return fail("Date string could not be parsed.");
        }
        request["new_time"] = json!(new_time);
        request["func"] = json!("postpone_job");
    }
    if call.ctx.opt("test").is_some_and(truthy) {
        let verb = if postpone { "postponed" } else { "skipped" };
        return Ok(
            json!({"comment": format!("Job: {name} would be {verb} in schedule."), "result": true}),
        );
    }
    if !current(call, None)?.contains_key(&name) {
        return fail(&format!("Job {name} does not exist."));
    }
    let answer = manage(call, request)?;
    let ok = schedule_of(&answer)
        .get(&name)
        .and_then(|j| j.get("enabled"))
        .is_some_and(truthy);
    Ok(match (ok, postpone) {
        (true, true) => {
            json!({"comment": format!("Postponed Job {name} in schedule."), "result": true})
        }
        (true, false) => {
            json!({"comment": format!("Added Skip Job {name} in schedule."), "result": true})
        }
        (false, true) => {
            json!({"comment": format!("Failed to postpone job {name} in schedule."), "result": false})
        }
        (false, false) => {
            json!({"comment": format!("Failed to skip job {name} in schedule."), "result": false})
        }
    })
}

async fn postpone_job(call: Call) -> Result<Value, ExecError> {
    explicit(&call, true)
}

async fn skip_job(call: Call) -> Result<Value, ExecError> {
    explicit(&call, false)
}

async fn show_next_fire_time(call: Call) -> Result<Value, ExecError> {
    let name = name_of(&call);
    let answer = manage(&call, json!({"name": name, "func": "get_next_fire_time"}))?;
    // Salt answers with the event's `next_fire_time`, null for a job it does not know;
    // the comment is for no answer at all.
    Ok(match answer.get("next_fire_time") {
        Some(t) => json!({"result": true, "next_fire_time": t}),
        None => json!({"result": true, "comment": "next fire time not available."}),
    })
}

async fn job_status(call: Call) -> Result<Value, ExecError> {
    let name = name_of(&call);
    let fmt = saltq_semantics::python::str(call.arg("time_fmt"));
    let answer = manage(
        &call,
        json!({"name": name, "func": "job_status", "fire_event": true, "time_fmt": fmt}),
    )?;
    Ok(answer.get("data").cloned().unwrap_or_else(|| json!({})))
}

/// Today's local date, for reading `when` strings as dateutil does.
fn today() -> chrono::NaiveDate {
    chrono::Local::now().date_naive()
}

#[cfg(test)]
mod tests {
    //! Salt's answers, recorded by `schedule_record.sh` (`schedule_salt3007.json`), replayed
    //! in order against this module over the minion's own request handling
    //! (`Book::manage`), with a scheduler evaluated before each request as the minion's tick
    //! does, and `_schedule.conf` kept in memory.

    use std::sync::{Arc, Mutex, RwLock};

    use saltq_semantics::schedule::book::Book;
    use saltq_semantics::schedule::{Eval, Scheduler};
    use serde_json::{Map, Value, json};

    use crate::CallContext;
    use crate::context::ScheduleControl;
    use crate::testutil::{ctx, run_in};

    /// The recording's minion: its schedule, its scheduler and its (empty) pillar.
    struct Minion {
        state: Mutex<(Book, Scheduler)>,
        /// `_schedule.conf`'s `schedule`.
        saved: Mutex<Value>,
        pillar: Map<String, Value>,
    }

    impl ScheduleControl for Minion {
        fn manage(&self, req: Value) -> Value {
            let mut st = self.state.lock().unwrap();
            let (book, sched) = &mut *st;
            let idle = |_: &str| 0;
            let ev = Eval {
                now: chrono::Local::now().naive_local(),
                pillar_whens: None,
                grain_whens: None,
                running: &idle,
            };
            sched.due(&book.merged(&self.pillar), &ev);
            let mut saved = self.saved.lock().unwrap();
            if let Some(done) = book.manage(&req, &self.pillar, sched) {
                if done.save {
                    *saved = book.persisted()["schedule"].clone();
                }
                let mut answer = done.answer;
                if req["func"] == "list" {
                    answer["saved"] = saved.clone();
                }
                return answer;
            }
            match req["func"].as_str().unwrap_or_default() {
                "save_schedule" => {
                    *saved = book.persisted()["schedule"].clone();
                    json!({"complete": true})
                }
                // The recording's minion has no `minion.d/schedule.conf` to reload.
                "reload" => json!({"complete": true, "reloaded": false}),
                _ => json!({"complete": true}),
            }
        }
    }

    /// Times in an answer as the recording has them: `<time>`.
    fn normalised(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), normalised(v))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(normalised).collect()),
            Value::String(s)
                if !s.starts_with("2030")
                    && chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").is_ok() =>
            {
                json!("<time>")
            }
            v => v.clone(),
        }
    }

    #[tokio::test]
    async fn answers_as_salt_3007_does() {
        let cases: Value = serde_json::from_str(include_str!("schedule_salt3007.json")).unwrap();
        let base = ctx();
        let minion = Minion {
            state: Mutex::new((Book::default(), Scheduler::new(1, 7))),
            saved: Mutex::new(json!({})),
            pillar: Map::new(),
        };
        let ctx = CallContext::new(
            Arc::new(RwLock::new(base.grains())),
            Arc::new(RwLock::new(json!({}))),
            Arc::new(json!({"id": "m1"})),
            base.jobs.clone(),
        )
        .with_schedule(Arc::new(minion));
        let mut failed = Vec::new();
        for case in cases["cases"].as_array().unwrap() {
            let fun = case["fun"].as_str().unwrap();
            let out = run_in(&ctx, fun, case["args"].clone(), case["kwargs"].clone()).await;
            let got = normalised(&out.ret);
            if got != case["ret"] {
                failed.push(format!(
                    "{fun} {} {}:\n  salt:  {}\n  saltq: {got}",
                    case["args"], case["kwargs"], case["ret"]
                ));
            }
        }
        assert!(failed.is_empty(), "{}", failed.join("\n"));
    }

    /// `offline=True` (Salt's "when the Salt minion is not running"): the functions edit
    /// `minion.d/_schedule.conf` beside the config themselves, with no scheduler at all.
    #[tokio::test]
    async fn offline_calls_edit_the_schedule_file_without_a_scheduler() {
        let dir = tempfile::tempdir().unwrap();
        let base = ctx();
        let ctx = CallContext::new(
            Arc::new(RwLock::new(base.grains())),
            Arc::new(RwLock::new(json!({}))),
            Arc::new(json!({"id": "m1", "config_dir": dir.path().display().to_string()})),
            base.jobs.clone(),
        );
        let file = dir.path().join("minion.d").join("_schedule.conf");
        let off = |extra: Value| {
            let mut kw = json!({"offline": true});
            kw.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            kw
        };
        let out = run_in(
            &ctx,
            "schedule.add",
            json!(["job1"]),
            off(json!({"function": "test.ping", "seconds": 3600})),
        )
        .await;
        assert_eq!(
            out.ret,
            json!({"comment": "Added job: job1 to schedule.", "result": true, "changes": {"job1": "added"}}),
        );
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.contains("job1:") && text.contains("seconds: 3600"),
            "{text}"
        );
        let again = run_in(
            &ctx,
            "schedule.add",
            json!(["job1"]),
            off(json!({"function": "test.ping", "seconds": 5})),
        )
        .await;
        assert_eq!(
            again.ret["comment"],
            json!("Job job1 already exists in schedule.")
        );
        let listed = run_in(
            &ctx,
            "schedule.list",
            json!([]),
            json!({"offline": true, "return_yaml": false}),
        )
        .await;
        assert_eq!(listed.ret["job1"]["seconds"], json!(3600), "{}", listed.ret);
        let modified = run_in(
            &ctx,
            "schedule.modify",
            json!(["job1"]),
            off(json!({"function": "test.ping", "seconds": 60})),
        )
        .await;
        assert_eq!(
            modified.ret["comment"],
            json!("Modified job: job1 in schedule."),
            "{}",
            modified.ret
        );
        assert!(
            std::fs::read_to_string(&file)
                .unwrap()
                .contains("seconds: 60")
        );
        run_in(
            &ctx,
            "schedule.add",
            json!(["job2"]),
            off(json!({"function": "test.true", "minutes": 5})),
        )
        .await;
        let deleted = run_in(&ctx, "schedule.delete", json!(["job2"]), off(json!({}))).await;
        assert_eq!(
            deleted.ret,
            json!({"comment": "Deleted Job job2 from schedule.", "result": true, "changes": {"job2": "removed"}}),
        );
        let missing = run_in(&ctx, "schedule.delete", json!(["job2"]), off(json!({}))).await;
        assert!(!missing.success, "{}", missing.ret);
        assert!(
            missing.ret.as_str().unwrap().contains("job2"),
            "{}",
            missing.ret
        );
        let purged = run_in(&ctx, "schedule.purge", json!([]), off(json!({}))).await;
        assert_eq!(
            purged.ret,
            json!({"comment": ["Deleted job: job1 from schedule."], "changes": {"job1": "removed"}, "result": true}),
        );
        let empty = run_in(
            &ctx,
            "schedule.list",
            json!([]),
            json!({"offline": true, "return_yaml": false}),
        )
        .await;
        assert_eq!(empty.ret, json!({}));
        // Without offline, the same call needs the minion's scheduler.
        let online = run_in(&ctx, "schedule.list", json!([]), json!({})).await;
        assert!(!online.success);
    }

    #[tokio::test]
    async fn outside_a_minion_the_call_fails_with_a_clear_error() {
        let out = run_in(&ctx(), "schedule.list", json!([]), json!({})).await;
        assert!(!out.success);
        assert!(
            out.ret
                .as_str()
                .unwrap()
                .contains("schedule.* runs on a minion"),
            "{}",
            out.ret
        );
    }
}
