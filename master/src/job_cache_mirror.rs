//! `master_job_cache`: every minion job's load and returns copied into a returner's store
//! (Salt's `jids` and `salt_returns` tables, or redis keys), so tools that read Salt's job
//! cache schema (Alcali, dashboards, SQL reports) see saltq's jobs as they see Salt's.
//!
//! saltq's own job cache stays the one the master works from; this is a copy, fed from the
//! event bus: `salt/job/<jid>/new` becomes the returner's `save_load(jid, load)` and
//! `salt/job/<jid>/ret/<id>` its `returner(ret)`, in the order they were fired, so a job's
//! load is written before its returns. A return whose job this master never announced (a
//! start-up state run, a job published by another replica) has its load read from the job
//! cache first. The database returners' tables are created at start when missing (as on
//! their first use), so readers find them before the first job. Reading the bus never slows
//! it: a copy that falls behind loses events and says how many. In a cluster only the replica
//! holding the single-runner duties copies, because every replica's bus carries every event.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, watch};

use crate::state::Master;

/// The returners that can hold jobs (they have `save_load`).
pub const RETURNERS: &[&str] = &["mysql", "postgres", "pgjsonb", "redis"];

/// Events waiting for the database at most; more are dropped and counted.
const QUEUE: usize = 10_000;

/// Jids whose load is known to be stored, remembered at most.
const REMEMBERED: usize = 4096;

/// What one bus event asks of the returner.
#[derive(Debug, PartialEq)]
enum Write {
    /// Salt's `save_load(jid, load)`.
    Load { jid: String, load: Value },
    /// Salt's `returner(ret)`.
    Return { jid: String, ret: Value },
}

/// The write an event asks for, if any: a job's `new` event without the event-only keys
/// (`_stamp`, `minions`, `missing`) is the load the job cache holds; a `ret` event without
/// `_stamp` is the return as the minion sent it.
fn write_for(tag: &str, data: &Map<String, Value>) -> Option<Write> {
    let rest = tag.strip_prefix("salt/job/")?;
    let (jid, kind) = rest.split_once('/')?;
    let strip = |keys: &[&str]| {
        let mut m = data.clone();
        for k in keys {
            m.remove(*k);
        }
        Value::Object(m)
    };
    if kind == "new" {
        return Some(Write::Load {
            jid: jid.to_owned(),
            load: strip(&["_stamp", "minions", "missing"]),
        });
    }
    let id = kind.strip_prefix("ret/")?;
    (!id.is_empty() && !id.contains('/')).then(|| Write::Return {
        jid: jid.to_owned(),
        ret: strip(&["_stamp"]),
    })
}

/// Jids whose load was stored recently, oldest forgotten first.
#[derive(Default)]
struct Seen {
    order: VecDeque<String>,
    set: HashSet<String>,
}

impl Seen {
    fn contains(&self, jid: &str) -> bool {
        self.set.contains(jid)
    }

    fn insert(&mut self, jid: &str) {
        if self.set.insert(jid.to_owned()) {
            self.order.push_back(jid.to_owned());
            if self.order.len() > REMEMBERED
                && let Some(old) = self.order.pop_front()
            {
                self.set.remove(&old);
            }
        }
    }
}

/// Copies jobs into returner `name` until the bus closes. `held` says whether this master
/// holds the single-runner duties (always, outside a cluster).
pub async fn run(
    master: Arc<Master>,
    returners: saltq_returners::Returners,
    name: String,
    held: watch::Receiver<bool>,
) {
    let (tx, mut rx) = mpsc::channel::<Write>(QUEUE);
    let writer = {
        let master = master.clone();
        tokio::spawn(async move {
            // Salt's tables exist from the start, so their readers find them before any job.
            if name != "redis"
                && let Err(e) = returners.create_schema(&name, None).await
            {
                tracing::error!("master_job_cache {name}: tables not created: {e}");
            }
            let mut seen = Seen::default();
            while let Some(w) = rx.recv().await {
                write(&master, &returners, &name, &mut seen, w).await;
            }
        })
    };
    let mut bus = master.events.subscribe();
    let mut dropped = 0u64;
    loop {
        match futures_util::StreamExt::next(&mut bus).await {
            Some(Ok(e)) => {
                if !*held.borrow() {
                    continue;
                }
                if let Some(w) = write_for(&e.tag, &e.data)
                    && tx.try_send(w).is_err()
                {
                    dropped += 1;
                    if dropped.is_power_of_two() {
                        tracing::warn!(
                            dropped,
                            "master_job_cache is behind, jobs not copied to the returner"
                        );
                    }
                }
            }
            Some(Err(crate::events::Missed(n))) => {
                tracing::warn!("master_job_cache fell behind the bus, {n} events not copied");
                master.events.missed(n);
            }
            None => break,
        }
    }
    drop(tx);
    let _ = writer.await;
}

/// Performs one write; a failure is logged and never touches the job.
async fn write(
    master: &Master,
    returners: &saltq_returners::Returners,
    name: &str,
    seen: &mut Seen,
    w: Write,
) {
    match w {
        Write::Load { jid, load } => {
            match returners.save_load(name, &jid, &load).await {
                Ok(()) => seen.insert(&jid),
                Err(e) => tracing::error!(%jid, "master_job_cache {name}: job load not saved: {e}"),
            };
        }
        Write::Return { jid, ret } => {
            if !seen.contains(&jid) {
                match master.cache.get_job(&jid).await {
                    Ok(Some(job)) => match returners.save_load(name, &jid, &job.load).await {
                        Ok(()) => seen.insert(&jid),
                        Err(e) => {
                            tracing::error!(%jid, "master_job_cache {name}: job load not saved: {e}")
                        }
                    },
                    Ok(None) => tracing::warn!(%jid, "master_job_cache: no job {jid} to copy"),
                    Err(e) => tracing::error!(%jid, "master_job_cache: job cache unreadable: {e}"),
                }
            }
            if let Err(e) = returners.returner(name, &ret, None, None).await {
                tracing::error!(%jid, "master_job_cache {name}: return not saved: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(tag: &str, data: Value, expected: Option<Write>) {
        let Value::Object(m) = data else {
            unreachable!()
        };
        assert_eq!(write_for(tag, &m), expected, "{tag}");
    }

    #[test]
    fn events_to_writes() {
        let jid = "20261126090000123456";
        check(
            &format!("salt/job/{jid}/new"),
            json!({"jid": jid, "fun": "test.ping", "user": "admin", "minions": ["m1"],
                   "missing": [], "_stamp": "x"}),
            Some(Write::Load {
                jid: jid.into(),
                load: json!({"jid": jid, "fun": "test.ping", "user": "admin"}),
            }),
        );
        check(
            &format!("salt/job/{jid}/ret/m1"),
            json!({"id": "m1", "jid": jid, "return": true, "_stamp": "x"}),
            Some(Write::Return {
                jid: jid.into(),
                ret: json!({"id": "m1", "jid": jid, "return": true}),
            }),
        );
        check(&format!("salt/job/{jid}/ret/"), json!({}), None);
        check(&format!("salt/job/{jid}/prog/m1/0"), json!({}), None);
        check(&format!("salt/run/{jid}/new"), json!({}), None);
        check("salt/auth", json!({}), None);
    }

    #[test]
    fn seen_forgets_the_oldest() {
        let mut s = Seen::default();
        for i in 0..=REMEMBERED {
            s.insert(&i.to_string());
        }
        assert!(!s.contains("0"));
        assert!(s.contains("1") && s.contains(&REMEMBERED.to_string()));
        assert_eq!(s.order.len(), REMEMBERED);
    }
}
