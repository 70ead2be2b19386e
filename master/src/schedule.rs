//! The master's scheduler (Salt's `schedule` in the master config): runners on a schedule,
//! decided by the pure core (`semantics::schedule`) on a one-second tick and run as salt-run
//! runs them (a jid, `salt/run/<jid>/new` and `/ret`, the job cache). It is one of the
//! single-runner duties (`duties.rs`): in a cluster only the duty holder runs it, so each
//! scheduled runner runs once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use saltq_semantics::schedule::{Eval, Scheduler};

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
