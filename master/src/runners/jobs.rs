//! The `jobs` runner: look up, list and follow jobs in the job cache.

use saltq_jobcache::{JobFilter, JobRecord};
use saltq_semantics::jid::Jid;
use saltq_semantics::python::truthy;
use serde_json::{Map, Value, json};

use super::{Args, Runner, RunnerCtx, Spec};

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Salt's `_format_job_instance` + `StartTime`.
fn job_instance(job: &JobRecord) -> Map<String, Value> {
    let l = &job.load;
    let mut m = Map::new();
    m.insert(
        "Function".into(),
        l.get("fun").cloned().unwrap_or(json!("unknown-function")),
    );
    m.insert(
        "Arguments".into(),
        l.get("arg").cloned().unwrap_or(json!([])),
    );
    m.insert(
        "Target".into(),
        l.get("tgt").cloned().unwrap_or(json!("unknown-target")),
    );
    m.insert(
        "Target-type".into(),
        l.get("tgt_type").cloned().unwrap_or(json!("list")),
    );
    m.insert(
        "User".into(),
        l.get("user").cloned().unwrap_or(json!("root")),
    );
    let start = Jid::parse(&job.jid)
        .map(|j| j.to_time_string())
        .unwrap_or_default();
    m.insert("StartTime".into(), json!(start));
    m
}

/// Salt's `list_job`: the instance, its minions and `Result: {id: {return, retcode, success}}`.
async fn list_job_value(ctx: &RunnerCtx, jid: &str) -> Result<Map<String, Value>, String> {
    let mut ret = Map::new();
    ret.insert("jid".into(), json!(jid));
    let Some(job) = ctx.master.cache.get_job(jid).await.map_err(err)? else {
        ret.insert(
            "Error".into(),
            json!("Cannot contact returner or no job with this jid"),
        );
        ret.insert("Result".into(), json!({}));
        return Ok(ret);
    };
    ret.extend(job_instance(&job));
    ret.insert("Minions".into(), json!(job.minions));
    let mut result = Map::new();
    for r in ctx.master.cache.get_returns(jid).await.map_err(err)? {
        result.insert(
            r.id.clone(),
            json!({"return": r.ret, "retcode": r.retcode, "success": r.success}),
        );
    }
    ret.insert("Result".into(), Value::Object(result));
    Ok(ret)
}

fn jid_arg(a: &Args) -> Result<String, String> {
    let jid = a.str("jid").unwrap_or_default();
    Jid::parse(&jid).map_err(err)?;
    Ok(jid)
}

async fn lookup_jid(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let jid = jid_arg(&a)?;
    let data = list_job_value(&ctx, &jid).await?;
    let returned = a.flag("returned");
    let mut ret = Map::new();
    let result = data
        .get("Result")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if returned {
        for (id, r) in &result {
            ret.insert(id.clone(), r.get("return").cloned().unwrap_or(Value::Null));
        }
    }
    if a.flag("missing") {
        for id in data
            .get("Minions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(id) = id.as_str()
                && !result.contains_key(id)
            {
                ret.insert(id.to_owned(), json!("Minion did not return"));
            }
        }
    }
    Ok(Value::Object(ret))
}

async fn list_job(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let jid = jid_arg(&a)?;
    Ok(Value::Object(list_job_value(&ctx, &jid).await?))
}

fn time_arg(a: &Args, name: &str) -> Result<Option<chrono::DateTime<chrono::Utc>>, String> {
    let Some(s) = a.str(name) else {
        return Ok(None);
    };
    // Salt accepts dateutil-parsable strings; the common forms are ISO dates and times.
    for fmt in ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(&s, fmt) {
            return Ok(Some(t.and_utc()));
        }
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(&s, "%Y-%m-%d") {
        return Ok(Some(d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc()));
    }
    chrono::DateTime::parse_from_rfc3339(&s)
        .map(|t| Some(t.with_timezone(&chrono::Utc)))
        .map_err(|_| {
            format!("invalid {name} {s:?}: expected e.g. 2026-11-21 or 2026-11-21T10:00:00")
        })
}

fn glob_list(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Array(a) => Some(
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","),
        ),
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

async fn list_jobs(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let filter = JobFilter {
        function: glob_list(a.get("search_function")),
        target: glob_list(a.get("search_target")),
        start_time: time_arg(&a, "start_time")?,
        end_time: time_arg(&a, "end_time")?,
        limit: None,
    };
    let metadata = a.get("search_metadata").as_object().cloned();
    let mut ret = Map::new();
    let mut jobs = ctx.master.cache.list_jobs(&filter).await.map_err(err)?;
    jobs.reverse(); // oldest first, as Salt's dict order
    for s in jobs {
        if let Some(md) = &metadata {
            let have = s.job.load.get("metadata").and_then(Value::as_object);
            if !md
                .iter()
                .all(|(k, v)| have.and_then(|h| h.get(k)) == Some(v))
            {
                continue;
            }
        }
        ret.insert(s.job.jid.clone(), Value::Object(job_instance(&s.job)));
    }
    Ok(Value::Object(ret))
}

async fn list_jobs_filter(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let count = a.get("count").as_u64().ok_or("count must be a number")? as usize;
    let skip_find_job = a.flag("filter_find_job");
    let jobs = ctx
        .master
        .cache
        .list_jobs(&JobFilter::default())
        .await
        .map_err(err)?;
    let mut ret = Map::new();
    for s in jobs
        .into_iter()
        .filter(|s| !(skip_find_job && s.job.load.get("fun") == Some(&json!("saltutil.find_job"))))
        .take(count)
    {
        ret.insert(s.job.jid.clone(), Value::Object(job_instance(&s.job)));
    }
    Ok(Value::Object(ret))
}

async fn print_job(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let jid = jid_arg(&a)?;
    let Some(job) = ctx.master.cache.get_job(&jid).await.map_err(err)? else {
        return Ok(json!({}));
    };
    let mut inst = job_instance(&job);
    let mut result = Map::new();
    for r in ctx.master.cache.get_returns(&jid).await.map_err(err)? {
        result.insert(r.id.clone(), json!({"return": r.ret}));
    }
    inst.insert("Result".into(), Value::Object(result));
    Ok(json!({ jid: inst }))
}

async fn exit_success(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let jid = jid_arg(&a)?;
    let data = list_job_value(&ctx, &jid).await?;
    let result = data
        .get("Result")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut ret = Map::new();
    for id in data
        .get("Minions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let ok = result
            .get(id)
            .and_then(|r| r.get("return"))
            .is_some_and(truthy);
        ret.insert(id.to_owned(), json!(ok));
    }
    for (id, r) in &result {
        if r.get("return").is_some_and(truthy) {
            ret.insert(id.clone(), json!(true));
        }
    }
    Ok(Value::Object(ret))
}

async fn last_run(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let filter = JobFilter {
        function: glob_list(a.get("function")),
        target: glob_list(a.get("target")),
        limit: Some(1),
        ..Default::default()
    };
    let jobs = ctx.master.cache.list_jobs(&filter).await.map_err(err)?;
    let Some(last) = jobs.into_iter().next() else {
        return Ok(json!(false));
    };
    let mut args = Args::default();
    args.named.insert("jid".into(), json!(last.job.jid));
    print_job(ctx, args).await
}

async fn active(ctx: RunnerCtx, _a: Args) -> Result<Value, String> {
    let timeout = ctx.master.cfg.timeout;
    let replies =
        super::manage::collect(&ctx, "*", "glob", "saltutil.running", vec![], timeout).await?;
    let mut ret: Map<String, Value> = Map::new();
    for (minion, data) in replies {
        for job in data.as_array().into_iter().flatten() {
            let Some(jid) = job.get("jid").and_then(Value::as_str) else {
                continue;
            };
            let entry = ret.entry(jid.to_owned()).or_insert_with(|| {
                let record = JobRecord {
                    jid: jid.to_owned(),
                    load: job.clone(),
                    minions: vec![],
                    start_time: chrono::Utc::now(),
                };
                let mut inst = job_instance(&record);
                inst.insert("Running".into(), json!([]));
                inst.insert("Returned".into(), json!([]));
                Value::Object(inst)
            });
            if let Some(list) = entry.get_mut("Running").and_then(Value::as_array_mut) {
                list.push(
                    json!({ minion.clone(): job.get("pid").cloned().unwrap_or(Value::Null) }),
                );
            }
        }
    }
    for (jid, entry) in ret.iter_mut() {
        let returned: Vec<String> = ctx
            .master
            .cache
            .get_returns(jid)
            .await
            .map_err(err)?
            .into_iter()
            .map(|r| r.id)
            .collect();
        entry["Returned"] = json!(returned);
    }
    Ok(Value::Object(ret))
}

macro_rules! runner {
    ($name:literal, $f:ident, $params:expr, $doc:literal) => {
        Runner {
            spec: Spec {
                name: $name,
                params: $params,
                varargs: false,
                kwargs: true,
                doc: $doc,
            },
            run: |ctx, a| Box::pin($f(ctx, a)),
        }
    };
}
pub(crate) use runner;

/// The `jobs` runners.
pub static RUNNERS: &[Runner] = &[
    runner!(
        "jobs.active",
        active,
        &[("display_progress", Some("false"))],
        "Return a report on all actively running jobs from a job id centric perspective."
    ),
    runner!(
        "jobs.lookup_jid",
        lookup_jid,
        &[
            ("jid", None),
            ("ext_source", Some("null")),
            ("returned", Some("true")),
            ("missing", Some("false")),
            ("display_progress", Some("false"))
        ],
        "Return the printout from a previously executed job."
    ),
    runner!(
        "jobs.list_job",
        list_job,
        &[
            ("jid", None),
            ("ext_source", Some("null")),
            ("display_progress", Some("false"))
        ],
        "List a specific job given by its jid."
    ),
    runner!(
        "jobs.list_jobs",
        list_jobs,
        &[
            ("ext_source", Some("null")),
            ("outputter", Some("null")),
            ("search_metadata", Some("null")),
            ("search_function", Some("null")),
            ("search_target", Some("null")),
            ("start_time", Some("null")),
            ("end_time", Some("null")),
            ("display_progress", Some("false"))
        ],
        "List all detectable jobs and associated functions."
    ),
    runner!(
        "jobs.list_jobs_filter",
        list_jobs_filter,
        &[
            ("count", None),
            ("filter_find_job", Some("true")),
            ("ext_source", Some("null")),
            ("outputter", Some("null")),
            ("display_progress", Some("false"))
        ],
        "List all detectable jobs and associated functions, the newest `count` of them."
    ),
    runner!(
        "jobs.print_job",
        print_job,
        &[("jid", None), ("ext_source", Some("null"))],
        "Print a specific job's detail given by its jid, including the return data."
    ),
    runner!(
        "jobs.exit_success",
        exit_success,
        &[("jid", None), ("ext_source", Some("null"))],
        "Check if a job has been executed and exit successfully."
    ),
    runner!(
        "jobs.last_run",
        last_run,
        &[
            ("ext_source", Some("null")),
            ("outputter", Some("null")),
            ("metadata", Some("null")),
            ("function", Some("null")),
            ("target", Some("null")),
            ("display_progress", Some("false"))
        ],
        "List all detectable jobs and associated functions: the last one."
    ),
];
