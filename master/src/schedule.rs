//! The master's scheduler (Salt's `schedule` in the master config): runners on a schedule,
//! decided by the pure core (`semantics::schedule`) on a one-second tick and run as salt-run
//! runs them (a jid, `salt/run/<jid>/new` and `/ret`, the job cache). It is one of the
//! single-runner duties (`duties.rs`): in a cluster only the duty holder runs it, so each
//! scheduled runner runs once. Also here: a minion's scheduled return under Salt's jid
//! `nocache` (`return_job: nocache`), announced on the bus and not stored.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use saltq_proto::v1 as pb;
use saltq_semantics::schedule::{Eval, Scheduler};
use saltq_transport::value;
use serde_json::{Value, json};

use crate::state::Master;

/// Evaluates the master's schedule every second and starts the runners that are due, until
/// the task is aborted (leadership lost, shutdown).
pub async fn run(master: Arc<Master>) {
    let schedule = master.cfg.schedule.clone();
    let mut sched = Scheduler::new(1, std::process::id() as u64);
    let running: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
    let mut every = tokio::time::interval(Duration::from_secs(1));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut logged: HashMap<String, String> = HashMap::new();
    loop {
        every.tick().await;
        let fires = {
            let count = |name: &str| {
                let r = running.lock().unwrap_or_else(|e| e.into_inner());
                r.get(name).copied().unwrap_or(0)
            };
            let ev = Eval {
                now: chrono::Local::now().naive_local(),
                pillar_whens: None,
                grain_whens: None,
                running: &count,
            };
            sched.due(&schedule, &ev)
        };
        for name in schedule.keys() {
            if let Some(e) = sched.error(name)
                && logged.get(name).map(String::as_str) != Some(e)
            {
                tracing::error!(job = %name, "{e}");
                logged.insert(name.clone(), e.to_owned());
            }
        }
        for fire in fires {
            let jid = match master.next_jid("").await {
                Ok(j) => j.to_string(),
                Err(e) => {
                    tracing::warn!(job = %fire.name, "scheduled runner not started: {}", e.message());
                    continue;
                }
            };
            tracing::info!(job = %fire.name, %jid, "running scheduled runner {}", fire.func);
            let (master, running, user) = (master.clone(), running.clone(), user.clone());
            bump(&running, &fire.name, 1);
            tokio::spawn(async move {
                crate::runners::execute(master, user, jid, fire.func, fire.args, fire.kwargs).await;
                bump(&running, &fire.name, -1);
            });
        }
    }
}

fn bump(running: &Mutex<HashMap<String, usize>>, name: &str, delta: isize) {
    let mut r = running.lock().unwrap_or_else(|e| e.into_inner());
    let n = r.entry(name.to_owned()).or_default();
    *n = n.saturating_add_signed(delta);
}

/// The jid of a scheduled return the master must not store (Salt's `return_job: nocache`).
pub const NOCACHE_JID: &str = "nocache";

/// The return event of minion `id`'s scheduled return `r` sent under [`NOCACHE_JID`]: what
/// Salt's master does with it (`salt/job/nocache/ret/<id>`, the load as the minion sent
/// it, nothing written to the job cache).
pub fn nocache_event(id: &str, mut r: pb::ReturnRequest) -> (String, Value) {
    let schedule = r
        .metadata
        .as_mut()
        .and_then(|m| m.fields.remove("__schedule__"));
    let fun = match r.fun.as_slice() {
        [one] => json!(one),
        many => json!(many),
    };
    let mut event = json!({"cmd": "_return", "id": id, "jid": NOCACHE_JID, "fun": fun,
        "fun_args": value::from_list(r.fun_args.as_ref()),
        "return": r.r#return.as_ref().map(value::from_prost).unwrap_or(Value::Null),
        "retcode": r.retcode, "success": r.success});
    if let Some(s) = schedule.as_ref() {
        event["schedule"] = value::from_prost(s);
    }
    if let Some(m) = r.metadata.as_ref().filter(|m| !m.fields.is_empty()) {
        event["metadata"] = Value::Object(value::struct_to_map(m));
    }
    (format!("salt/job/{NOCACHE_JID}/ret/{id}"), event)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nocache_return_is_announced_with_the_jobs_name() {
        let meta = json!({"__schedule__": "quiet", "owner": "ops"});
        let r = pb::ReturnRequest {
            jid: NOCACHE_JID.into(),
            fun: vec!["test.echo".into()],
            fun_args: Some(value::to_list(&[json!("hi")])),
            r#return: Some(value::to_prost(&json!("hi"))),
            retcode: 0,
            success: true,
            metadata: Some(value::json_to_struct(&meta)),
            ..Default::default()
        };
        let (tag, ev) = nocache_event("m1", r);
        assert_eq!(tag, "salt/job/nocache/ret/m1");
        assert_eq!(
            ev,
            json!({"cmd": "_return", "id": "m1", "jid": "nocache", "fun": "test.echo",
                "fun_args": ["hi"], "return": "hi", "retcode": 0, "success": true,
                "schedule": "quiet", "metadata": {"owner": "ops"}})
        );
    }
}
