//! The `state.*` execution functions: the [`Engine`] the minion attaches to its call context.
//!
//! Each function follows `salt/modules/state.py`: refuse (or queue behind) another state run,
//! settle test mode, saltenv and the pillar override, compile on a blocking thread (rendering
//! fetches `salt://` files and may call execution functions), run the low chunks, and set
//! Salt's retcode: 1 for a list of compile errors, 2 when a state failed, 5 for pillar errors.

pub mod introspect;
pub mod options;
pub mod pause;
pub mod queue;
pub mod request;
pub mod source;

use std::path::PathBuf;
use std::time::Duration;

use saltq_exec::{BoxFuture, Call, CallContext, ExecError, StateSystem};
use saltq_semantics::python;
use serde_json::{Map, Value, json};

use crate::render::{RenderContext, render_template};

use self::options::EX_PILLAR_FAILURE;
use self::queue::Queue;

/// The state system of one minion (or of `salt-call --local`).
#[derive(Debug, Default)]
pub struct Engine {}

impl Engine {
    /// A state system with nothing running.
    pub fn new() -> Self {
        Self::default()
    }
}

impl StateSystem for Engine {
    fn call(&self, call: Call) -> BoxFuture {
        Box::pin(dispatch(call))
    }

    fn render_template(
        &self,
        ctx: &CallContext,
        text: &str,
        engine: &str,
        saltenv: &str,
        extra: Map<String, Value>,
    ) -> Result<String, String> {
        let rc = RenderContext {
            ctx: ctx.clone(),
            grains: ctx.grains(),
            pillar: ctx.pillar(),
            opts: (*ctx.opts).clone(),
            saltenv: saltenv.to_owned(),
            sls: String::new(),
            source: String::new(),
            extra,
        };
        render_template(text, engine, &rc).map_err(|e| e.to_string())
    }
}

/// The minion's cachedir (`cachedir`, Salt's default otherwise).
fn cachedir(ctx: &CallContext) -> PathBuf {
    ctx.opt("cachedir")
        .and_then(Value::as_str)
        .map_or_else(|| PathBuf::from("/var/cache/salt/minion"), PathBuf::from)
}

/// The job's own jid (`__pub_jid`), empty for a call outside a job.
fn own_jid(call: &Call) -> String {
    call.kwargs()
        .get("__pub_jid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// The caller's keyword arguments without the publication's `__pub_*` keys.
fn user_kwargs(call: &Call) -> Map<String, Value> {
    call.kwargs()
        .iter()
        .filter(|(k, _)| !k.starts_with("__pub_"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

async fn dispatch(call: Call) -> Result<Value, ExecError> {
    match call.fun {
        "state.running" => Ok(running(&call)),
        "state.pause" | "state.resume" | "state.soft_kill" => pause_fun(&call),
        "state.check_request" => {
            let req = request::read(&cachedir(&call.ctx));
            Ok(match call.opt_arg("name").and_then(Value::as_str) {
                Some(name) => req
                    .get(name)
                    .cloned()
                    .ok_or_else(|| ExecError::execution(format!("KeyError: '{name}'")))?,
                None => Value::Object(req),
            })
        }
        "state.clear_request" => {
            let name = call.opt_arg("name").and_then(Value::as_str);
            request::clear(&cachedir(&call.ctx), name)
                .map(Value::Bool)
                .map_err(|e| ExecError::execution(format!("cannot write the request file: {e}")))
        }
        "state.clear_cache" => Ok(clear_cache(&call.ctx)),
        f if f.starts_with("sys.") => introspect::call(&call),
        _ => run::state_run(call).await,
    }
}

/// `state.running`: Salt's message for every other state run in progress.
fn running(call: &Call) -> Value {
    if call.arg("concurrent") == &Value::Bool(true) {
        return json!([]);
    }
    let runs = queue::state_runs(&call.ctx.jobs.running(), &own_jid(call));
    json!(queue::conflict_messages(&runs))
}

/// `state.pause`, `state.resume`, `state.soft_kill`: edit the run's pause file; `None`.
fn pause_fun(call: &Call) -> Result<Value, ExecError> {
    let jid = match call.arg("jid") {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let state_id = call
        .opt_arg("state_id")
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
        .unwrap_or_else(|| "__all__".to_owned());
    let fun = call.fun;
    let duration = call
        .bound
        .params
        .get("duration")
        .cloned()
        .unwrap_or_default();
    pause::update(&cachedir(&call.ctx), &jid, |data| match fun {
        "state.resume" => {
            if state_id == "__all__" {
                data.clear();
            } else {
                data.remove(&state_id);
            }
        }
        _ => {
            let entry = data.entry(state_id.clone()).or_insert_with(|| json!({}));
            if let Some(e) = entry.as_object_mut() {
                if fun == "state.soft_kill" {
                    e.insert("kill".into(), Value::Bool(true));
                } else if let Some(d) = duration
                    .as_f64()
                    .or_else(|| duration.as_str().and_then(|s| s.trim().parse().ok()))
                {
                    e.insert("duration".into(), json!(d));
                }
            }
        }
    })
    .map_err(|e| ExecError::execution(format!("cannot write the pause file of {jid}: {e}")))?;
    Ok(Value::Null)
}

/// `state.clear_cache`: removes `*.cache.p` from the cachedir, listing them.
fn clear_cache(ctx: &CallContext) -> Value {
    let dir = cachedir(ctx);
    let mut removed = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".cache.p")
                && e.path().is_file()
                && std::fs::remove_file(e.path()).is_ok()
            {
                removed.push(Value::String(name));
            }
        }
    }
    Value::Array(removed)
}

/// Waits or refuses as `queue` (or `state_queue`) says while other state runs are in
/// progress: `Some(messages)` is Salt's refusal (retcode 1).
async fn check_queue(call: &Call) -> Option<Vec<String>> {
    let given = call
        .bound
        .params
        .get("queue")
        .filter(|v| !v.is_null())
        .or_else(|| call.kwargs().get("queue"))
        .cloned()
        .or_else(|| call.ctx.opt("state_queue").cloned());
    let jid = own_jid(call);
    let concurrent = call.kwargs().get("concurrent") == Some(&Value::Bool(true));
    let wait = |cap: Option<u64>| async move {
        let prior =
            |c: &Call| queue::prior_runs(&queue::state_runs(&c.ctx.jobs.running(), &jid), &jid);
        if cap.is_some_and(|cap| prior(call).len() as u64 >= cap) {
            return false;
        }
        while !prior(call).is_empty() {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        true
    };
    let waited = match Queue::from_value(given.as_ref()) {
        Queue::Wait => wait(None).await,
        Queue::UpTo(cap) => wait(Some(cap)).await,
        Queue::Refuse => false,
    };
    if waited || concurrent {
        return None;
    }
    let runs = queue::state_runs(&call.ctx.jobs.running(), &own_jid(call));
    let conflict = queue::conflict_messages(&runs);
    (!conflict.is_empty()).then_some(conflict)
}

mod run;

/// A list of strings as the return with `retcode` (Salt's compile and pillar errors).
fn errors(call: &Call, errors: Vec<String>, retcode: i32) -> Value {
    call.set_retcode(retcode);
    json!(errors)
}

/// The saltenv and pillarenv a state run asks its pillar for, as Salt's `get_sls_opts`:
/// `saltenv=` (else the `saltenv` option); `pillarenv=`, or with `pillarenv_from_saltenv`
/// the `saltenv=` given, else the `pillarenv` option. `None` when the call names neither
/// `saltenv` nor `pillarenv`: the run takes the pillar the minion holds.
pub fn pillar_envs(
    kwargs: &Map<String, Value>,
    opts: &Value,
) -> Option<(Option<String>, Option<String>)> {
    let text = |v: Option<&Value>| {
        v.filter(|v| !v.is_null())
            .map(|v| v.as_str().map_or_else(|| python::str(v), str::to_owned))
    };
    let (saltenv_arg, pillarenv_arg) = (text(kwargs.get("saltenv")), text(kwargs.get("pillarenv")));
    if saltenv_arg.is_none() && pillarenv_arg.is_none() {
        return None;
    }
    let saltenv = saltenv_arg.clone().or_else(|| text(opts.get("saltenv")));
    let from_saltenv = opts.get("pillarenv_from_saltenv") == Some(&Value::Bool(true));
    let pillarenv = if kwargs.contains_key("pillarenv") || from_saltenv {
        pillarenv_arg.or(saltenv_arg)
    } else {
        text(opts.get("pillarenv"))
    };
    Some((saltenv, pillarenv))
}

/// The pillar a run sees, or Salt's refusal of a bad override / pillar errors. A run that
/// names a `saltenv` or `pillarenv` gets its pillar compiled for them (Salt's state runs
/// compile theirs with the run's opts); the others the minion's.
async fn run_pillar(call: &Call) -> Result<Result<Value, Value>, ExecError> {
    let base = match (
        pillar_envs(call.kwargs(), &call.ctx.opts),
        &call.ctx.pillar_client,
    ) {
        (Some((saltenv, pillarenv)), Some(client)) => {
            let what = format!(
                "saltenv {} and pillarenv {}",
                saltenv.as_deref().unwrap_or("None"),
                pillarenv.as_deref().unwrap_or("None")
            );
            client.compile_env(saltenv, pillarenv).await.map_err(|e| {
                ExecError::execution(format!("the pillar for {what} could not be compiled: {e}"))
            })?
        }
        _ => call.ctx.pillar(),
    };
    let over = call.kwargs().get("pillar").cloned().unwrap_or(Value::Null);
    let merge_lists = call
        .ctx
        .opt("pillar_merge_lists")
        .is_some_and(|v| v == &Value::Bool(true));
    let pillar = options::merge_pillar(base, &over, merge_lists).map_err(ExecError::Invocation)?;
    let forced = call.kwargs().get("force") == Some(&Value::Bool(true));
    if !forced
        && let Some(errs) = pillar.get("_errors").and_then(Value::as_array)
        && !errs.is_empty()
    {
        let mut out = vec!["Pillar failed to render with the following messages:".to_owned()];
        out.extend(errs.iter().map(saltq_semantics::python::str));
        return Ok(Err(errors(call, out, EX_PILLAR_FAILURE)));
    }
    Ok(Ok(pillar))
}
