//! The reactor: events whose tag matches a glob in `reactor:` trigger reactions, Salt's way.
//! A reaction file is YAML rendered as a Jinja template with the event's `tag` and `data`:
//!
//! ```yaml
//! greet:
//!   local.test.echo:          # publish a job: tgt, tgt_type, arg, kwarg, ret
//!     - tgt: {{ data['id'] }}
//!     - arg: [welcome]
//! accept:
//!   wheel.key.accept:         # a wheel function (`wheel.rs`): key accept, reject, delete...
//!     - match: {{ data['id'] }}
//! report:
//!   runner.jobs.list_jobs: [] # a runner, keyword arguments from the list of dicts
//! deploy:
//!   runner.state.orchestrate: # Salt's `args` form: the runner's keyword arguments
//!     - args:
//!       - mods: orch.deploy
//!       - pillar: {event_tag: {{ tag }}}
//! ```
//!
//! Reactions run concurrently in a bounded pool; a failing one fires `salt/reactor/error` and the
//! reactor goes on.

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::StreamExt;
use saltq_proto::v1 as pb;
use saltq_semantics::python::fnmatch;
use saltq_transport::value;
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;

use crate::events::Missed;
use crate::state::Master;

/// The tag of the event fired when a reaction fails.
pub const ERROR_TAG: &str = "salt/reactor/error";

/// Runs the reactor until the bus closes.
pub async fn run(master: Arc<Master>) {
    let mut bus = master.events.subscribe();
    let pool = Arc::new(Semaphore::new(master.cfg.reactor_workers));
    loop {
        let event = match bus.next().await {
            Some(Ok(e)) => e,
            Some(Err(Missed(n))) => {
                tracing::warn!("reactor fell behind the event bus, {n} events not reacted to");
                master.events.missed(n);
                continue;
            }
            None => return,
        };
        if event.tag == ERROR_TAG {
            continue;
        }
        for (glob, files) in &master.cfg.reactor {
            if !fnmatch(&event.tag, glob) {
                continue;
            }
            for file in files {
                let Ok(permit) = pool.clone().acquire_owned().await else {
                    return;
                };
                let (master, file, tag, data) = (
                    master.clone(),
                    file.clone(),
                    event.tag.clone(),
                    event.data.clone(),
                );
                tokio::spawn(async move {
                    if let Err(e) = react(&master, &file, &tag, &data).await {
                        tracing::warn!(file = %file.display(), %tag, "reaction failed: {e}");
                        master.events.fire(
                            ERROR_TAG,
                            json!({"file": file.display().to_string(), "tag": tag, "error": e}),
                        );
                    }
                    drop(permit);
                });
            }
        }
    }
}

/// Renders one reaction file for one event and carries out its reactions.
async fn react(
    master: &Arc<Master>,
    file: &PathBuf,
    tag: &str,
    data: &Map<String, Value>,
) -> Result<(), String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let env = minijinja::Environment::new();
    let rendered = env
        .render_str(&text, minijinja::context! { tag => tag, data => data })
        .map_err(|e| format!("cannot render {}: {e}", file.display()))?;
    let doc: Value = saltq_transport::config::yaml_from_str(&rendered)
        .map_err(|e| format!("invalid YAML in {} after rendering: {e}", file.display()))?;
    let Value::Object(reactions) = doc else {
        return Ok(());
    };
    for (name, body) in reactions {
        let Value::Object(calls) = body else {
            return Err(format!(
                "reaction {name}: expected `kind.function: [options]`"
            ));
        };
        for (call, opts) in calls {
            let opts = merge_options(opts);
            let (kind, fun) = call
                .split_once('.')
                .ok_or_else(|| format!("reaction {name}: {call:?} is not kind.function"))?;
            match kind {
                "local" => local(master, fun, &opts).await,
                "runner" => runner(master, fun, &opts).await,
                "wheel" => wheel(master, fun, &opts),
                other => Err(format!(
                    "unknown reaction kind {other:?}: expected local, runner or wheel"
                )),
            }
            .map_err(|e| format!("reaction {name} ({call}): {e}"))?;
        }
    }
    Ok(())
}

/// A runner's or wheel function's arguments from a reaction's options, as Salt's reactor
/// reads them: `arg` is the positional list and the other options are keyword arguments;
/// with `args` (the documented form, `- args: [{mods: orch.deploy}]`), a list of one-key
/// dicts is the keyword arguments and any other list the positional ones.
fn call_args(mut o: Map<String, Value>) -> (Vec<Value>, Map<String, Value>) {
    if let Some(args) = o.remove("args") {
        let dictlist = matches!(&args, Value::Array(items) if items.iter().all(Value::is_object));
        return match args {
            Value::Object(m) => (Vec::new(), m),
            Value::Array(_) if dictlist => (Vec::new(), merge_options(args)),
            other => (list(Some(&other)), Map::new()),
        };
    }
    let args = list(o.remove("arg").as_ref());
    (args, o)
}

/// Salt writes options as a list of one-key dicts; a dict works too.
fn merge_options(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        Value::Array(items) => items
            .into_iter()
            .filter_map(|i| match i {
                Value::Object(m) => Some(m),
                _ => None,
            })
            .flatten()
            .collect(),
        _ => Map::new(),
    }
}

fn list(v: Option<&Value>) -> Vec<Value> {
    match v {
        Some(Value::Array(a)) => a.clone(),
        Some(Value::Null) | None => vec![],
        Some(other) => vec![other.clone()],
    }
}

async fn local(master: &Arc<Master>, fun: &str, o: &Map<String, Value>) -> Result<(), String> {
    let tgt = o
        .get("tgt")
        .and_then(Value::as_str)
        .ok_or("local reactions need tgt")?;
    let tgt_type = o
        .get("tgt_type")
        .or_else(|| o.get("expr_form"))
        .and_then(Value::as_str)
        .unwrap_or("glob");
    let req = pb::PublishRequest {
        tgt: tgt.into(),
        tgt_type: tgt_type.into(),
        fun: vec![fun.into()],
        arg: list(o.get("arg")).iter().map(value::to_prost).collect(),
        kwarg: o
            .get("kwarg")
            .and_then(Value::as_object)
            .map(value::map_to_struct),
        ret: o
            .get("ret")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .into(),
        ..Default::default()
    };
    let (spec, target) = master.validate(req).map_err(|s| s.message().to_owned())?;
    // Nobody follows a reaction's job: its returns are checked against the job cache.
    master
        .publish(spec, &target, "reactor")
        .await
        .map_err(|s| s.message().to_owned())?;
    Ok(())
}

async fn runner(master: &Arc<Master>, fun: &str, o: &Map<String, Value>) -> Result<(), String> {
    let jid = master
        .next_jid("")
        .await
        .map_err(|s| s.message().to_owned())?
        .to_string();
    let (args, kwargs) = call_args(o.clone());
    let out = crate::runners::execute(
        master.clone(),
        "reactor".into(),
        jid,
        fun.into(),
        args,
        kwargs,
    )
    .await;
    if out.success {
        Ok(())
    } else {
        Err(out.ret.as_str().unwrap_or("runner failed").to_owned())
    }
}

fn wheel(master: &Arc<Master>, fun: &str, o: &Map<String, Value>) -> Result<(), String> {
    let (args, kwargs) = call_args(o.clone());
    crate::wheel::call(master, fun, &args, &kwargs).map(|_| ())
}
