//! Salt's `cron` module: a user's crontab read with `crontab -l` and written back with
//! `crontab`, jobs below Salt's marker line managed as Salt manages them (identifiers in
//! comments, `#DISABLED#` for commented jobs). The table logic is pure and tested as data.

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, truthy};

use crate::error::ExecError;
use crate::modules::{run_cmd, run_cmd_stdin};

use crate::spec::{Call, Function, Lit, Param};

/// The `cron` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("cron.list_tab", handler!(list_tab))
        .params(&[Param::req("user")])
        .doc(LIST_TAB_DOC),
    Function::new("cron.rm_job", handler!(rm_job))
        .params(&[
            Param::req("user"),
            Param::req("cmd"),
            Param::opt("minute", Lit::None),
            Param::opt("hour", Lit::None),
            Param::opt("daymonth", Lit::None),
            Param::opt("month", Lit::None),
            Param::opt("dayweek", Lit::None),
            Param::opt("identifier", Lit::None),
        ])
        .doc(RM_JOB_DOC),
    Function::new("cron.set_job", handler!(set_job))
        .params(&[
            Param::req("user"),
            Param::req("minute"),
            Param::req("hour"),
            Param::req("daymonth"),
            Param::req("month"),
            Param::req("dayweek"),
            Param::req("cmd"),
            Param::opt("commented", Lit::Bool(false)),
            Param::opt("comment", Lit::None),
            Param::opt("identifier", Lit::None),
        ])
        .doc(SET_JOB_DOC),
    Function::new("cron.set_special", handler!(set_special))
        .params(&[
            Param::req("user"),
            Param::req("special"),
            Param::req("cmd"),
            Param::opt("commented", Lit::Bool(false)),
            Param::opt("comment", Lit::None),
            Param::opt("identifier", Lit::None),
        ])
        .doc(SET_SPECIAL_DOC),
    Function::new("cron.rm_special", handler!(rm_special))
        .params(&[
            Param::req("user"),
            Param::req("cmd"),
            Param::opt("special", Lit::None),
            Param::opt("identifier", Lit::None),
        ])
        .doc(RM_SPECIAL_DOC),
    Function::new("cron.set_env", handler!(set_env))
        .params(&[
            Param::req("user"),
            Param::req("name"),
            Param::opt("value", Lit::None),
        ])
        .doc(SET_ENV_DOC),
    Function::new("cron.rm_env", handler!(rm_env))
        .params(&[Param::req("user"), Param::req("name")])
        .doc(RM_ENV_DOC),
    Function::new("cron.raw_cron", handler!(raw_cron))
        .params(&[Param::req("user")])
        .doc(RAW_CRON_DOC),
    Function::new("cron.write_cron_file", handler!(write_cron_file))
        .params(&[Param::req("user"), Param::req("path")])
        .doc(WRITE_CRON_FILE_DOC),
    Function::new(
        "cron.write_cron_file_verbose",
        handler!(write_cron_file_verbose),
    )
    .params(&[Param::req("user"), Param::req("path")])
    .doc(WRITE_CRON_FILE_VERBOSE_DOC),
];

/// The line above the jobs Salt manages.
const TAG: &str = "# Lines below here are managed by Salt, do not edit";
const ID_MARK: &str = "SALT_CRON_IDENTIFIER";
const NO_ID: &str = "NO ID SET";
const TIME_FIELDS: [&str; 5] = ["minute", "hour", "daymonth", "month", "dayweek"];

/// Salt's `list_tab` of a crontab's text: `{pre, crons, special, env}`.
pub(crate) fn parse_tab(data: &str) -> Value {
    let (mut pre, mut crons, mut special, mut env) = (vec![], vec![], vec![], vec![]);
    let mut managed = false;
    let (mut comment, mut identifier): (Option<String>, Option<String>) = (None, None);
    for line in data.lines() {
        if line == TAG {
            managed = true;
            continue;
        }
        if !managed {
            pre.push(json!(line));
            continue;
        }
        let (line, commented) = match line.strip_prefix("#DISABLED#") {
            Some(rest) => (rest, true),
            None => (line, false),
        };
        if line.starts_with('@') {
            let comps: Vec<&str> = line.split_whitespace().collect();
            if comps.len() < 2 {
                continue;
            }
            special.push(json!({"spec": comps[0], "cmd": comps[1..].join(" "),
                "identifier": identifier.take(), "comment": comment.take(), "commented": commented}));
        } else if line.starts_with('#') {
            let mut text = line.trim_start_matches(['#', ' ']).to_owned();
            if let Some((before, after)) = text.clone().split_once(ID_MARK) {
                text = before.trim_end().to_owned();
                if after.len() > 1 {
                    identifier = Some(after[1..].to_owned());
                }
            }
            comment = Some(match comment.take() {
                Some(c) => format!("{c}\n{text}"),
                None => text,
            });
        } else if line
            .find('=')
            .is_some_and(|eq| eq > 0 && line.find(' ').is_none_or(|sp| eq < sp))
        {
            let (name, value) = line.split_once('=').unwrap_or((line, ""));
            env.push(json!({"name": name, "value": value}));
        } else if line.split(' ').count() > 5 {
            let c: Vec<&str> = line.split(' ').collect();
            crons.push(
                json!({"minute": c[0], "hour": c[1], "daymonth": c[2], "month": c[3],
                "dayweek": c[4], "identifier": identifier.take(), "cmd": c[5..].join(" "),
                "comment": comment.take(), "commented": commented}),
            );
        }
    }
    json!({"pre": pre, "crons": crons, "special": special, "env": env})
}

/// The `# comment SALT_CRON_IDENTIFIER:id` line above a job, if it has either.
fn comment_line(job: &Value) -> Option<String> {
    let comment = job["comment"].as_str();
    let id = job["identifier"].as_str();
    if job["comment"].is_null() && job["identifier"].is_null() {
        return None;
    }
    let mut line = String::from("#");
    if let Some(c) = comment.filter(|c| !c.is_empty()) {
        line.push_str(&format!(" {}", c.trim_end().replace('\n', "\n# ")));
    }
    if let Some(id) = id.filter(|i| !i.is_empty()) {
        line.push_str(&format!(" {ID_MARK}:{id}"));
    }
    Some(line)
}

/// Salt's `_render_tab`: the crontab text of a table.
pub(crate) fn render_tab(tab: &Value) -> String {
    let list = |k: &str| tab[k].as_array().cloned().unwrap_or_default();
    let mut out: Vec<String> = list("pre").iter().map(python::str).collect();
    if out.last().is_none_or(|l| l != TAG) {
        out.push(TAG.to_owned());
    }
    for env in list("env") {
        let value = match &env["value"] {
            Value::Null => "\"\"".to_owned(),
            Value::String(v) if v.is_empty() => "\"\"".to_owned(),
            v => python::str(v),
        };
        out.push(format!("{}={value}", python::str(&env["name"])));
    }
    let disabled = |job: &Value| {
        if job["commented"] == json!(true) {
            "#DISABLED#"
        } else {
            ""
        }
    };
    for job in list("crons") {
        out.extend(comment_line(&job));
        let times: Vec<String> = TIME_FIELDS.iter().map(|f| python::str(&job[*f])).collect();
        out.push(format!(
            "{}{} {}",
            disabled(&job),
            times.join(" "),
            python::str(&job["cmd"])
        ));
    }
    for job in list("special") {
        out.extend(comment_line(&job));
        out.push(format!(
            "{}{} {}",
            disabled(&job),
            python::str(&job["spec"]),
            python::str(&job["cmd"])
        ));
    }
    out.iter().map(|l| format!("{l}\n")).collect()
}

/// Salt's `_cron_id`: the job's identifier, or `NO ID SET`.
fn cron_id(job: &Value) -> String {
    job["identifier"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or(NO_ID)
        .to_owned()
}

/// Salt's `_cron_matched`: the same job by identifier, or by command without one.
pub fn matched(job: &Value, cmd: &str, identifier: Option<&str>) -> bool {
    let mut cid = cron_id(job);
    let eid = identifier.unwrap_or(NO_ID).to_owned();
    let job_cmd = job["cmd"].as_str().unwrap_or("");
    if job_cmd != cmd && cid == NO_ID && eid == NO_ID {
        return false;
    }
    if job_cmd == cmd && cid == NO_ID && identifier.is_some() {
        cid = eid.clone();
    }
    eid == cid
}

/// Salt's `_needs_change`.
pub fn needs_change(old: &Value, new: &Value) -> bool {
    if old == new {
        return false;
    }
    if new == &json!("random") {
        return old == &json!("*");
    }
    !new.is_null()
}

/// A new job's times: `random` and `a:b` ranges resolved, as Salt's `_get_cron_date_time`.
fn resolve_times(times: &Map<String, Value>) -> Map<String, Value> {
    let ranges = [
        ("minute", 0, 59),
        ("hour", 0, 23),
        ("month", 1, 12),
        ("dayweek", 0, 6),
    ];
    let mut out = Map::new();
    for (field, lo, hi) in ranges {
        let value = python::str(&times[field]).to_lowercase();
        let resolved = match value.split_once(':') {
            _ if value == "random" => rand::random_range(lo..=hi).to_string(),
            Some((a, b)) => match (a.parse::<u32>(), b.parse::<u32>()) {
                (Ok(a), Ok(b)) => rand::random_range(a.min(b)..=a.max(b)).to_string(),
                _ => value.clone(),
            },
            None => value.clone(),
        };
        out.insert(field.to_owned(), json!(resolved));
    }
    let month = python::str(&out["month"]);
    let max_day = match month.as_str() {
        "1" | "3" | "5" | "7" | "8" | "10" | "12" => 31,
        "4" | "6" | "9" | "11" => 30,
        _ => 28,
    };
    let day = python::str(&times["daymonth"]).to_lowercase();
    let day = if day == "random" {
        rand::random_range(1..=max_day).to_string()
    } else {
        day
    };
    out.insert("daymonth".into(), json!(day));
    out
}

/// One job as `set_job` is asked for it.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub times: Map<String, Value>,
    pub cmd: String,
    pub commented: bool,
    pub comment: Option<String>,
    pub identifier: Option<String>,
}

/// Salt's `rm_job` on a table: whether a job was removed.
pub(crate) fn remove_job(
    tab: &mut Value,
    cmd: &str,
    times: &Map<String, Value>,
    identifier: Option<&str>,
) -> bool {
    let Some(crons) = tab["crons"].as_array_mut() else {
        return false;
    };
    let any_time = TIME_FIELDS
        .iter()
        .any(|f| times.get(*f).is_some_and(|v| !v.is_null()));
    let time_match = |job: &Value| {
        TIME_FIELDS
            .iter()
            .all(|f| match times.get(*f).filter(|v| !v.is_null()) {
                None => true,
                Some(want) => {
                    let want = python::str(want);
                    python::str(&job[*f]) == want
                        || (want.eq_ignore_ascii_case("random") && job[*f] != json!("*"))
                }
            })
    };
    let found = crons
        .iter()
        .position(|job| matched(job, cmd, identifier) && (!any_time || time_match(job)));
    found.map(|i| crons.remove(i)).is_some()
}

/// Salt's `set_job` on a table: `new`, `updated` or `present`, and whether it changed.
pub(crate) fn set_job_in(tab: &mut Value, mut job: Job) -> &'static str {
    let existing: Vec<Value> = ["crons", "special"]
        .iter()
        .flat_map(|k| tab[*k].as_array().cloned().unwrap_or_default())
        .collect();
    for cron in existing {
        if !matched(&cron, &job.cmd, job.identifier.as_deref()) {
            continue;
        }
        let cid = cron_id(&cron);
        let set_id = cron["identifier"]
            .as_str()
            .map_or(NO_ID.to_owned(), str::to_owned);
        let mut tests: Vec<(Value, Value)> = vec![
            (cron["comment"].clone(), json!(job.comment)),
            (cron["commented"].clone(), json!(job.commented)),
            (json!(job.identifier), json!(set_id)),
            (
                cron.get("spec").cloned().unwrap_or(Value::Null),
                Value::Null,
            ),
        ];
        tests.extend(TIME_FIELDS.iter().map(|f| {
            (
                cron.get(*f).cloned().unwrap_or(Value::Null),
                job.times[*f].clone(),
            )
        }));
        tests.push((cron["cmd"].clone(), json!(job.cmd)));
        if !tests.iter().any(|(old, new)| needs_change(old, new)) {
            return "present";
        }
        let kind = if cron.get("spec").is_some() {
            "special"
        } else {
            "crons"
        };
        if let Some(list) = tab[kind].as_array_mut()
            && let Some(i) = list.iter().position(|c| c == &cron)
        {
            list.remove(i);
        }
        for f in TIME_FIELDS {
            if !needs_change(&cron.get(f).cloned().unwrap_or(Value::Null), &job.times[f]) {
                job.times
                    .insert(f.to_owned(), cron.get(f).cloned().unwrap_or(Value::Null));
            }
        }
        if !needs_change(&cron["comment"], &json!(job.comment)) {
            job.comment = cron["comment"].as_str().map(str::to_owned);
        }
        let keep_id = cid != NO_ID || cron["identifier"].is_string();
        if job.identifier.is_none() && keep_id {
            job.identifier = Some(cid);
        }
        return match set_job_in(tab, job) {
            "new" => "updated",
            other => other,
        };
    }
    let mut entry = resolve_times(&job.times);
    entry.insert("identifier".into(), json!(job.identifier));
    entry.insert("cmd".into(), json!(job.cmd));
    entry.insert("comment".into(), json!(job.comment));
    entry.insert("commented".into(), json!(job.commented));
    if let Some(crons) = tab["crons"].as_array_mut() {
        crons.push(Value::Object(entry));
    }
    "new"
}

/// One `@special` job as `set_special` is asked for it.
#[derive(Debug, Clone)]
pub(crate) struct Special {
    pub spec: String,
    pub cmd: String,
    pub commented: bool,
    pub comment: Option<String>,
    pub identifier: Option<String>,
}

/// Salt's `set_special` on a table: `new`, `updated` or `present`.
pub(crate) fn set_special_in(tab: &mut Value, mut job: Special) -> &'static str {
    let existing: Vec<Value> = ["crons", "special"]
        .iter()
        .flat_map(|k| tab[*k].as_array().cloned().unwrap_or_default())
        .collect();
    for cron in existing {
        if !matched(&cron, &job.cmd, job.identifier.as_deref()) {
            continue;
        }
        let mut cid = Some(cron_id(&cron));
        let set_id = cron["identifier"]
            .as_str()
            .map_or(NO_ID.to_owned(), str::to_owned);
        let field = |k: &str| cron.get(k).cloned().unwrap_or(Value::Null);
        let mut tests: Vec<(Value, Value)> = vec![
            (cron["comment"].clone(), json!(job.comment)),
            (cron["commented"].clone(), json!(job.commented)),
            (json!(job.identifier), json!(set_id)),
        ];
        tests.extend(TIME_FIELDS.iter().map(|f| (field(f), Value::Null)));
        tests.push((field("spec"), json!(job.spec)));
        tests.push((cron["cmd"].clone(), json!(job.cmd)));
        if !tests.iter().any(|(old, new)| needs_change(old, new)) {
            return "present";
        }
        let kind = if cron.get("spec").is_some() {
            "special"
        } else {
            "crons"
        };
        if let Some(list) = tab[kind].as_array_mut()
            && let Some(i) = list.iter().position(|c| c == &cron)
        {
            list.remove(i);
        }
        if !needs_change(&field("spec"), &json!(job.spec)) {
            job.spec = python::str(&field("spec"));
        }
        if !needs_change(&field("commented"), &json!(job.commented)) {
            job.commented = cron["commented"] == json!(true);
        }
        if !needs_change(&field("comment"), &json!(job.comment)) {
            job.comment = cron["comment"].as_str().map(str::to_owned);
        }
        if !needs_change(&cron["cmd"], &json!(job.cmd)) {
            job.cmd = python::str(&cron["cmd"]);
            if cid.as_deref() == Some(NO_ID) {
                if let Some(id) = job.identifier.clone().filter(|i| !i.is_empty()) {
                    cid = Some(id);
                }
                if cid.as_deref() == Some(NO_ID) && cron["identifier"].is_null() {
                    cid = None;
                }
            }
        }
        let keep = match &cid {
            None => true,
            Some(c) => !needs_change(&json!(c), &json!(job.identifier)),
        };
        if keep {
            job.identifier = cid;
        }
        return match set_special_in(tab, job) {
            "new" => "updated",
            other => other,
        };
    }
    if let Some(list) = tab["special"].as_array_mut() {
        list.push(
            json!({"spec": job.spec, "cmd": job.cmd, "identifier": job.identifier,
                         "comment": job.comment, "commented": job.commented}),
        );
    }
    "new"
}

/// Salt's `rm_special` on a table: whether a job was removed.
pub(crate) fn remove_special(
    tab: &mut Value,
    cmd: &str,
    special: Option<&str>,
    identifier: Option<&str>,
) -> bool {
    let Some(list) = tab["special"].as_array_mut() else {
        return false;
    };
    let found = list.iter().position(|job| {
        matched(job, cmd, identifier) && special.is_none_or(|s| job["spec"] == json!(s))
    });
    found.map(|i| list.remove(i)).is_some()
}

/// Salt's `set_env` on a table: `new`, `updated` (the variable moves to the end, as Salt's
/// remove-then-add leaves it) or `present`. A `None` value never equals the file's `""`.
pub(crate) fn set_env_in(tab: &mut Value, name: &str, value: &Value) -> &'static str {
    let env = tab["env"].as_array().cloned().unwrap_or_default();
    let mut outcome = "new";
    if let Some(e) = env.iter().find(|e| e["name"] == json!(name)) {
        if &e["value"] == value {
            return "present";
        }
        remove_env(tab, name);
        outcome = "updated";
    }
    if let Some(list) = tab["env"].as_array_mut() {
        list.push(json!({"name": name, "value": value}));
    }
    outcome
}

/// Salt's `rm_env` on a table (the last variable of that name): whether one was removed.
pub(crate) fn remove_env(tab: &mut Value, name: &str) -> bool {
    let Some(list) = tab["env"].as_array_mut() else {
        return false;
    };
    let found = list.iter().rposition(|e| e["name"] == json!(name));
    found.map(|i| list.remove(i)).is_some()
}

/// `crontab` arguments for `user`: none for the minion's own user, `-u user` as root.
fn user_args(user: &str) -> Result<Vec<String>, ExecError> {
    let me = nix::unistd::User::from_uid(nix::unistd::Uid::current())
        .ok()
        .flatten();
    if me.as_ref().is_some_and(|u| u.name == user) {
        return Ok(Vec::new());
    }
    if nix::unistd::Uid::current().is_root() {
        return Ok(vec!["-u".into(), user.to_owned()]);
    }
    Err(ExecError::execution(format!(
        "the minion must run as root or as {user} to manage {user}'s crontab"
    )))
}

/// The user's crontab text (Salt's `raw_cron`): empty when there is none.
async fn read_tab(call: &Call, user: &str) -> Result<String, ExecError> {
    let mut argv: Vec<String> = vec!["crontab".into()];
    argv.extend(user_args(user)?);
    argv.push("-l".into());
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = run_cmd(call, &refs).await?;
    let mut lines: Vec<&str> = out.stdout.split_inclusive('\n').collect();
    if lines
        .first()
        .is_some_and(|l| l.starts_with("# DO NOT EDIT THIS FILE - edit the master and reinstall."))
    {
        lines.drain(..lines.len().min(3));
    }
    Ok(lines.concat())
}

/// Installs `text` as the user's crontab: `None`, or `crontab`'s error text.
async fn write_tab(call: &Call, user: &str, text: &str) -> Result<Option<String>, ExecError> {
    let mut argv: Vec<String> = vec!["crontab".into()];
    argv.extend(user_args(user)?);
    argv.push("-".into());
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = run_cmd_stdin(call, &refs, Some(text.as_bytes())).await?;
    Ok((out.code != 0).then(|| out.stderr.trim_end().to_owned()))
}

const LIST_TAB_DOC: &str = "Return a user's crontab as ``{pre, crons, special, env}``: ``pre`` the
lines above Salt's marker, the rest the jobs and variables Salt manages

CLI Example:

.. code-block:: bash

    salt '*' cron.list_tab root
";

async fn list_tab(call: Call) -> Result<Value, ExecError> {
    Ok(parse_tab(
        &read_tab(&call, &python::str(call.arg("user"))).await?,
    ))
}

const SET_JOB_DOC: &str = "Set a cron job for a user: ``new`` when added, ``updated`` when an
existing job (same command, or same ``identifier``) changed, ``present`` when nothing had to
change. A time field may be ``random`` or a ``start:end`` range to pick from.

CLI Example:

.. code-block:: bash

    salt '*' cron.set_job root '*' '*' '*' '*' 1 /usr/local/weekly
";

async fn set_job(call: Call) -> Result<Value, ExecError> {
    let user = python::str(call.arg("user"));
    let times: Map<String, Value> = TIME_FIELDS
        .iter()
        .map(|f| {
            (
                (*f).to_owned(),
                json!(python::str(call.arg(f)).to_lowercase()),
            )
        })
        .collect();
    let job = Job {
        times,
        cmd: python::str(call.arg("cmd")),
        commented: truthy(call.arg("commented")),
        comment: call.opt_arg("comment").map(python::str),
        identifier: call.opt_arg("identifier").map(python::str),
    };
    let mut tab = parse_tab(&read_tab(&call, &user).await?);
    let outcome = set_job_in(&mut tab, job);
    if outcome == "present" {
        return Ok(json!(outcome));
    }
    match write_tab(&call, &user, &render_tab(&tab)).await? {
        Some(error) => Ok(json!(error)),
        None => Ok(json!(outcome)),
    }
}

const RM_JOB_DOC: &str = "Remove a user's cron job, matched by command (or ``identifier``) and the
time fields given: ``removed`` or ``absent``

CLI Example:

.. code-block:: bash

    salt '*' cron.rm_job root /usr/local/weekly
    salt '*' cron.rm_job root /usr/bin/foo dayweek=1
";

async fn rm_job(call: Call) -> Result<Value, ExecError> {
    let user = python::str(call.arg("user"));
    let times: Map<String, Value> = TIME_FIELDS
        .iter()
        .map(|f| ((*f).to_owned(), call.arg(f).clone()))
        .collect();
    let mut tab = parse_tab(&read_tab(&call, &user).await?);
    let identifier = call.opt_arg("identifier").map(python::str);
    if !remove_job(
        &mut tab,
        &python::str(call.arg("cmd")),
        &times,
        identifier.as_deref(),
    ) {
        return Ok(json!("absent"));
    }
    match write_tab(&call, &user, &render_tab(&tab)).await? {
        Some(error) => Ok(json!(error)),
        None => Ok(json!("removed")),
    }
}

/// Writes a table back and answers `outcome`, or `crontab`'s error text.
async fn commit(call: &Call, user: &str, tab: &Value, outcome: &str) -> Result<Value, ExecError> {
    match write_tab(call, user, &render_tab(tab)).await? {
        Some(error) => Ok(json!(error)),
        None => Ok(json!(outcome)),
    }
}

const SET_SPECIAL_DOC: &str = "Set a ``@special`` cron job (``@hourly``, ``@reboot``...) for a
user: ``new``, ``updated`` or ``present``

CLI Example:

.. code-block:: bash

    salt '*' cron.set_special root @hourly 'echo foobar'
";

async fn set_special(call: Call) -> Result<Value, ExecError> {
    let user = python::str(call.arg("user"));
    let job = Special {
        spec: python::str(call.arg("special")),
        cmd: python::str(call.arg("cmd")),
        commented: call.arg("commented") == &Value::Bool(true),
        comment: call.opt_arg("comment").map(python::str),
        identifier: call.opt_arg("identifier").map(python::str),
    };
    let mut tab = parse_tab(&read_tab(&call, &user).await?);
    let outcome = set_special_in(&mut tab, job);
    if outcome == "present" {
        return Ok(json!(outcome));
    }
    commit(&call, &user, &tab, outcome).await
}

const RM_SPECIAL_DOC: &str = "Remove a user's ``@special`` cron job, matched by command (or
``identifier``) and ``special`` when given: ``removed`` or ``absent``

CLI Example:

.. code-block:: bash

    salt '*' cron.rm_special root /usr/bin/foo
";

async fn rm_special(call: Call) -> Result<Value, ExecError> {
    let user = python::str(call.arg("user"));
    let mut tab = parse_tab(&read_tab(&call, &user).await?);
    let special = call.opt_arg("special").map(python::str);
    let identifier = call.opt_arg("identifier").map(python::str);
    let removed = remove_special(
        &mut tab,
        &python::str(call.arg("cmd")),
        special.as_deref(),
        identifier.as_deref(),
    );
    // Salt writes the crontab back either way.
    commit(
        &call,
        &user,
        &tab,
        if removed { "removed" } else { "absent" },
    )
    .await
}

const SET_ENV_DOC: &str = "Set an environment variable in a user's crontab: ``new``,
``updated`` or ``present``

CLI Example:

.. code-block:: bash

    salt '*' cron.set_env root MAILTO user@example.com
";

async fn set_env(call: Call) -> Result<Value, ExecError> {
    let user = python::str(call.arg("user"));
    let mut tab = parse_tab(&read_tab(&call, &user).await?);
    let outcome = set_env_in(&mut tab, &python::str(call.arg("name")), call.arg("value"));
    if outcome == "present" {
        return Ok(json!(outcome));
    }
    commit(&call, &user, &tab, outcome).await
}

const RM_ENV_DOC: &str = "Remove an environment variable from a user's crontab: ``removed`` or
``absent``

CLI Example:

.. code-block:: bash

    salt '*' cron.rm_env root MAILTO
";

async fn rm_env(call: Call) -> Result<Value, ExecError> {
    let user = python::str(call.arg("user"));
    let mut tab = parse_tab(&read_tab(&call, &user).await?);
    let removed = remove_env(&mut tab, &python::str(call.arg("name")));
    commit(
        &call,
        &user,
        &tab,
        if removed { "removed" } else { "absent" },
    )
    .await
}

const RAW_CRON_DOC: &str = "Return the text of a user's crontab (``''`` when there is none)

CLI Example:

.. code-block:: bash

    salt '*' cron.raw_cron root
";

async fn raw_cron(call: Call) -> Result<Value, ExecError> {
    Ok(json!(
        read_tab(&call, &python::str(call.arg("user"))).await?
    ))
}

/// `crontab [-u user] path`: its exit code, output and error.
async fn install_file(
    call: &Call,
    user: &str,
    path: &str,
) -> Result<crate::process::Output, ExecError> {
    let mut argv: Vec<String> = vec!["crontab".into()];
    argv.extend(user_args(user)?);
    argv.push(path.to_owned());
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    run_cmd(call, &refs).await
}

const WRITE_CRON_FILE_DOC: &str = "Install a file as a user's crontab: ``True`` on success

CLI Example:

.. code-block:: bash

    salt '*' cron.write_cron_file root /tmp/new_cron
";

async fn write_cron_file(call: Call) -> Result<Value, ExecError> {
    let out = install_file(
        &call,
        &python::str(call.arg("user")),
        &python::str(call.arg("path")),
    )
    .await?;
    Ok(Value::Bool(out.code == 0))
}

const WRITE_CRON_FILE_VERBOSE_DOC: &str = "Install a file as a user's crontab: ``{retcode,
stdout, stderr}`` of ``crontab``

CLI Example:

.. code-block:: bash

    salt '*' cron.write_cron_file_verbose root /tmp/new_cron
";

async fn write_cron_file_verbose(call: Call) -> Result<Value, ExecError> {
    let out = install_file(
        &call,
        &python::str(call.arg("user")),
        &python::str(call.arg("path")),
    )
    .await?;
    Ok(
        json!({"retcode": out.code, "stdout": out.stdout.trim_end_matches('\n'),
              "stderr": out.stderr.trim_end_matches('\n')}),
    )
}

#[cfg(test)]
mod tests;
