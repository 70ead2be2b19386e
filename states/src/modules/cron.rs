//! Salt's `cron` state module (`salt/states/cron.py`): `cron.present`, `cron.absent`,
//! `cron.env_present`, `cron.env_absent` and `cron.file`, through the execution functions
//! `cron.*` (the crontab is read with `crontab -l` and written with `crontab`), with Salt's
//! comments and changes. Test mode decides from `cron.list_tab` with [`check_cron`], a pure
//! function of the table. `cron.file` manages a copy of the crontab with `file.managed` and
//! installs it when it changed.

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param, cron_matched, cron_needs_change};
use saltq_semantics::python::{self, truthy};

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

const PRESENT: &[Param] = &[
    Param::req("name"),
    Param::opt("user", Lit::Str("root")),
    Param::opt("minute", Lit::Str("*")),
    Param::opt("hour", Lit::Str("*")),
    Param::opt("daymonth", Lit::Str("*")),
    Param::opt("month", Lit::Str("*")),
    Param::opt("dayweek", Lit::Str("*")),
    Param::opt("comment", Lit::None),
    Param::opt("commented", Lit::Bool(false)),
    Param::opt("identifier", Lit::Bool(false)),
    Param::opt("special", Lit::None),
];

const ABSENT: &[Param] = &[
    Param::req("name"),
    Param::opt("user", Lit::Str("root")),
    Param::opt("identifier", Lit::Bool(false)),
    Param::opt("special", Lit::None),
];

const ENV_PRESENT: &[Param] = &[
    Param::req("name"),
    Param::opt("value", Lit::None),
    Param::opt("user", Lit::Str("root")),
];

const ENV_ABSENT: &[Param] = &[Param::req("name"), Param::opt("user", Lit::Str("root"))];

const FILE: &[Param] = &[
    Param::req("name"),
    Param::opt("source_hash", Lit::Str("")),
    Param::opt("source_hash_name", Lit::None),
    Param::opt("user", Lit::Str("root")),
    Param::opt("template", Lit::None),
    Param::opt("context", Lit::None),
    Param::opt("replace", Lit::Bool(true)),
    Param::opt("defaults", Lit::None),
    Param::opt("backup", Lit::Str("")),
];

/// The `cron` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "cron.present",
        params: PRESENT,
        kwargs: false,
        handler: state_handler!(present),
    },
    StateFunction {
        name: "cron.absent",
        params: ABSENT,
        kwargs: true,
        handler: state_handler!(absent),
    },
    StateFunction {
        name: "cron.env_present",
        params: ENV_PRESENT,
        kwargs: false,
        handler: state_handler!(env_present),
    },
    StateFunction {
        name: "cron.env_absent",
        params: ENV_ABSENT,
        kwargs: false,
        handler: state_handler!(env_absent),
    },
    StateFunction {
        name: "cron.file",
        params: FILE,
        kwargs: true,
        handler: state_handler!(file),
    },
];

/// The job a state describes, as Salt's `_check_cron` normalises it (`None` where not given).
#[derive(Debug, Clone, Default)]
pub struct Check {
    /// The command.
    pub cmd: String,
    /// `minute`, `hour`, `daymonth`, `month`, `dayweek`, lowercased strings.
    pub times: [Value; 5],
    /// `comment`.
    pub comment: Value,
    /// `commented` (`commented is True`), `None` when not given.
    pub commented: Value,
    /// `identifier` as a string.
    pub identifier: Option<String>,
    /// `special`.
    pub special: Value,
}

/// Salt's `_check_cron` over a `cron.list_tab` table: `present`, `update` or `absent`.
pub fn check_cron(tab: &Value, c: &Check) -> &'static str {
    let id = json!(c.identifier);
    let cmd = json!(c.cmd);
    let (list, pairs): (&str, Vec<&str>) = if c.special.is_null() {
        (
            "crons",
            vec!["minute", "hour", "daymonth", "month", "dayweek"],
        )
    } else {
        ("special", vec!["spec"])
    };
    for cron in tab[list].as_array().into_iter().flatten() {
        if !cron_matched(cron, &c.cmd, c.identifier.as_deref()) {
            continue;
        }
        let mut tests: Vec<(&Value, &Value)> = if c.special.is_null() {
            pairs
                .iter()
                .zip(&c.times)
                .map(|(k, v)| (&cron[*k], v))
                .collect()
        } else {
            vec![(&cron["spec"], &c.special)]
        };
        tests.push((&cron["identifier"], &id));
        tests.push((&cron["cmd"], &cmd));
        tests.push((&cron["comment"], &c.comment));
        tests.push((&cron["commented"], &c.commented));
        return if tests.iter().any(|(old, new)| cron_needs_change(old, new)) {
            "update"
        } else {
            "present"
        };
    }
    "absent"
}

/// Salt's `_check_cron_env`: `present`, `update` or `absent` (a `None` value is `""`).
pub fn check_env(tab: &Value, name: &str, value: &Value) -> &'static str {
    let value = if value.is_null() { &json!("") } else { value };
    match tab["env"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["name"] == json!(name))
    {
        Some(e) if &e["value"] != value => "update",
        Some(_) => "present",
        None => "absent",
    }
}

/// `str(v).lower()` unless `None`.
fn lower(v: Value) -> Value {
    match v {
        Value::Null => Value::Null,
        v => json!(python::str(&v).to_lowercase()),
    }
}

/// The state's `identifier`: `False` (the default) means the name.
fn identifier(v: Value, name: &str) -> Value {
    if v == json!(false) { json!(name) } else { v }
}

async fn list_tab(call: &StateCall, user: &Value) -> Result<Value, StateError> {
    call.salt("cron.list_tab", vec![user.clone()], Map::new())
        .await
}

async fn present(call: StateCall) -> Result<Ret, StateError> {
    let p = |k: &str| call.param(PRESENT, k);
    let name = call.name.trim().to_owned();
    let user = p("user");
    let user_s = python::str(&user);
    let id = identifier(p("identifier"), &name);
    let mut ret = Ret::new(&name);
    if call.test {
        let c = Check {
            cmd: name.clone(),
            times: ["minute", "hour", "daymonth", "month", "dayweek"].map(|k| lower(p(k))),
            comment: p("comment"),
            commented: json!(p("commented") == json!(true)),
            identifier: (!id.is_null()).then(|| python::str(&id)),
            special: p("special"),
        };
        let tab = list_tab(&call, &user).await?;
        ret.result = None;
        ret.comment = match check_cron(&tab, &c) {
            "absent" => format!("Cron {name} is set to be added"),
            "present" => {
                ret.result = Some(true);
                format!("Cron {name} already present")
            }
            _ => format!("Cron {name} is set to be updated"),
        };
        return Ok(ret);
    }
    let mut kw = Map::new();
    kw.insert("user".into(), user.clone());
    let special = p("special");
    let data = if special.is_null() {
        for k in ["minute", "hour", "daymonth", "month", "dayweek"] {
            kw.insert(k.into(), p(k));
        }
        kw.insert("cmd".into(), json!(name));
        kw.insert("comment".into(), p("comment"));
        kw.insert("commented".into(), p("commented"));
        kw.insert("identifier".into(), id);
        call.salt("cron.set_job", vec![], kw).await?
    } else {
        kw.insert("special".into(), special);
        kw.insert("cmd".into(), json!(name));
        kw.insert("comment".into(), p("comment"));
        kw.insert("commented".into(), p("commented"));
        kw.insert("identifier".into(), id);
        call.salt("cron.set_special", vec![], kw).await?
    };
    match data.as_str() {
        Some("present") => ret.comment = format!("Cron {name} already present"),
        Some("new") => {
            ret.comment = format!("Cron {name} added to {user_s}'s crontab");
            ret.changes.insert(user_s, json!(name));
        }
        Some("updated") => {
            ret.comment = format!("Cron {name} updated");
            ret.changes.insert(user_s, json!(name));
        }
        _ => {
            ret.comment = format!(
                "Cron {name} for user {user_s} failed to commit with error \n{}",
                python::str(&data)
            );
            ret.result = Some(false);
        }
    }
    Ok(ret)
}

async fn absent(call: StateCall) -> Result<Ret, StateError> {
    let p = |k: &str| call.param(ABSENT, k);
    let name = call.name.trim().to_owned();
    let user = p("user");
    let user_s = python::str(&user);
    let id = identifier(p("identifier"), &name);
    let mut ret = Ret::new(&name);
    if call.test {
        let c = Check {
            cmd: name.clone(),
            identifier: (!id.is_null()).then(|| python::str(&id)),
            ..Check::default()
        };
        let tab = list_tab(&call, &user).await?;
        if check_cron(&tab, &c) == "absent" {
            ret.comment = format!("Cron {name} is absent");
        } else {
            ret.result = None;
            ret.comment = format!("Cron {name} is set to be removed");
        }
        return Ok(ret);
    }
    let mut kw = Map::new();
    kw.insert("identifier".into(), id);
    let special = p("special");
    let data = if special.is_null() {
        call.salt("cron.rm_job", vec![user.clone(), json!(name)], kw)
            .await?
    } else {
        kw.insert("special".into(), special);
        call.salt("cron.rm_special", vec![user.clone(), json!(name)], kw)
            .await?
    };
    match data.as_str() {
        Some("absent") => ret.comment = format!("Cron {name} already absent"),
        Some("removed") => {
            ret.comment = format!("Cron {name} removed from {user_s}'s crontab");
            ret.changes.insert(user_s, json!(name));
        }
        _ => {
            ret.comment = format!(
                "Cron {name} for user {user_s} failed to commit with error {}",
                python::str(&data)
            );
            ret.result = Some(false);
        }
    }
    Ok(ret)
}

async fn env_present(call: StateCall) -> Result<Ret, StateError> {
    let p = |k: &str| call.param(ENV_PRESENT, k);
    let name = call.name.clone();
    let user = p("user");
    let user_s = python::str(&user);
    let value = p("value");
    let mut ret = Ret::new(&name);
    if call.test {
        let tab = list_tab(&call, &user).await?;
        ret.result = None;
        ret.comment = match check_env(&tab, &name, &value) {
            "absent" => format!("Cron env {name} is set to be added"),
            "present" => {
                ret.result = Some(true);
                format!("Cron env {name} already present")
            }
            _ => format!("Cron env {name} is set to be updated"),
        };
        return Ok(ret);
    }
    let mut kw = Map::new();
    kw.insert("value".into(), value);
    let data = call
        .salt("cron.set_env", vec![user.clone(), json!(name)], kw)
        .await?;
    match data.as_str() {
        Some("present") => ret.comment = format!("Cron env {name} already present"),
        Some("new") => {
            ret.comment = format!("Cron env {name} added to {user_s}'s crontab");
            ret.changes.insert(user_s, json!(name));
        }
        Some("updated") => {
            ret.comment = format!("Cron env {name} updated");
            ret.changes.insert(user_s, json!(name));
        }
        _ => {
            ret.comment = format!(
                "Cron env {name} for user {user_s} failed to commit with error \n{}",
                python::str(&data)
            );
            ret.result = Some(false);
        }
    }
    Ok(ret)
}

async fn env_absent(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.trim().to_owned();
    let user = call.param(ENV_ABSENT, "user");
    let user_s = python::str(&user);
    let mut ret = Ret::new(&name);
    if call.test {
        let tab = list_tab(&call, &user).await?;
        if check_env(&tab, &name, &Value::Null) == "absent" {
            ret.comment = format!("Cron env {name} is absent");
        } else {
            ret.result = None;
            ret.comment = format!("Cron env {name} is set to be removed");
        }
        return Ok(ret);
    }
    let data = call
        .salt("cron.rm_env", vec![user.clone(), json!(name)], Map::new())
        .await?;
    match data.as_str() {
        Some("absent") => ret.comment = format!("Cron env {name} already absent"),
        Some("removed") => {
            ret.comment = format!("Cron env {name} removed from {user_s}'s crontab");
            ret.changes.insert(user_s, json!(name));
        }
        _ => {
            ret.comment = format!(
                "Cron env {name} for user {user_s} failed to commit with error {}",
                python::str(&data)
            );
            ret.result = Some(false);
        }
    }
    Ok(ret)
}

/// Removes the temporary copy of the crontab whatever happens.
struct TempTab(tempfile::TempPath);

async fn file(call: StateCall) -> Result<Ret, StateError> {
    let p = |k: &str| call.param(FILE, k);
    let name = call.name.clone();
    let user = p("user");
    let user_s = python::str(&user);
    let info = call
        .salt("user.info", vec![user.clone()], Map::new())
        .await?;
    let Some(group) = info["groups"].get(0).cloned() else {
        let mut ret = Ret::new(&name);
        ret.result = Some(false);
        ret.comment = format!("Could not identify group for user {user_s}");
        return Ok(ret);
    };
    let mut raw = python::str(
        &call
            .salt("cron.raw_cron", vec![user.clone()], Map::new())
            .await?,
    );
    if !raw.ends_with('\n') {
        raw.push('\n');
    }
    let tmp = tempfile::Builder::new()
        .prefix("__salt.tmp.")
        .tempfile()
        .map_err(|e| StateError(format!("could not create a temporary file: {e}")))?;
    std::fs::write(tmp.path(), &raw).map_err(|e| {
        StateError(format!(
            "could not write the crontab to {}: {e}",
            tmp.path().display()
        ))
    })?;
    let tmp = TempTab(tmp.into_temp_path());
    let path = tmp.0.to_string_lossy().to_string();
    let mut ret = Ret::new(&name);
    if !truthy(&p("replace")) && !raw.is_empty() {
        ret.comment = format!("User {user_s} already has a crontab. No changes made");
        return Ok(ret);
    }
    let mut args: Map<String, Value> = call
        .args
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "user" | "replace"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    args.insert("source".into(), json!(name));
    args.insert("user".into(), user.clone());
    args.insert("group".into(), group);
    args.insert("mode".into(), json!("0600"));
    let managed = super::file::managed(super::StateCall {
        name: path.clone(),
        args,
        ..call.clone()
    })
    .await;
    let fm = match managed {
        Ok(r) => r,
        Err(e) => {
            ret.result = Some(false);
            ret.comment = format!("Unable to manage file: {}", e.0);
            return Ok(ret);
        }
    };
    if call.test {
        // Salt's `check_managed`: ownership and mode of a file in the temp dir are not
        // reported.
        let shown: Vec<(&String, &Value)> = fm
            .changes
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "user" | "group" | "mode"))
            .collect();
        if fm.result == Some(false) {
            ret.result = Some(false);
            ret.comment = fm.comment;
        } else if shown.is_empty() {
            ret.comment = format!("The file {path} is in the correct state");
        } else {
            ret.result = None;
            ret.comment = "The following values are set to be changed:\n".into();
            for (k, v) in shown {
                ret.comment.push_str(&format!("{k}: {}\n", python::str(v)));
            }
        }
        return Ok(ret);
    }
    if fm.result == Some(false) {
        ret.result = Some(false);
        ret.comment = fm.comment;
        ret.changes = fm.changes;
        return Ok(ret);
    }
    if fm.changes.contains_key("diff") {
        let out = call
            .salt(
                "cron.write_cron_file_verbose",
                vec![user.clone(), json!(path)],
                Map::new(),
            )
            .await?;
        if out["retcode"] == json!(0) {
            ret.comment = format!("Crontab for user {user_s} was updated");
            ret.changes = fm.changes;
        } else {
            ret.result = Some(false);
            ret.comment = format!(
                "Unable to update user {user_s} crontab {path}. Error: {}",
                python::str(&out["stderr"])
            );
        }
    } else {
        ret.comment = format!("Crontab for user {user_s} is in the correct state");
    }
    drop(tmp);
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(tab: &Value, cmd: &str, times: [&str; 5], id: Option<&str>) -> &'static str {
        check_cron(
            tab,
            &Check {
                cmd: cmd.into(),
                times: times.map(|t| json!(t)),
                comment: Value::Null,
                commented: json!(false),
                identifier: id.map(str::to_owned),
                special: Value::Null,
            },
        )
    }

    #[test]
    fn test_mode_decisions() {
        let tab = json!({"pre": [], "special": [], "env": [{"name": "MAILTO", "value": "root"}],
            "crons": [{"minute": "5", "hour": "*", "daymonth": "*", "month": "*", "dayweek": "*",
                       "identifier": "/bin/a", "cmd": "/bin/a", "comment": null,
                       "commented": false}]});
        let any = ["*"; 5];
        let five = ["5", "*", "*", "*", "*"];
        assert_eq!(check(&tab, "/bin/a", five, Some("/bin/a")), "present");
        assert_eq!(check(&tab, "/bin/a", any, Some("/bin/a")), "update");
        assert_eq!(check(&tab, "/bin/b", five, Some("/bin/a")), "update");
        assert_eq!(check(&tab, "/bin/b", five, Some("/bin/b")), "absent");
        assert_eq!(check_env(&tab, "MAILTO", &json!("root")), "present");
        assert_eq!(check_env(&tab, "MAILTO", &Value::Null), "update");
        assert_eq!(check_env(&tab, "PATH", &json!("/bin")), "absent");
    }
}
