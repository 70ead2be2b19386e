//! The minion's running jobs: what `saltutil.running` lists and `kill_job` stops, and the
//! recently seen jids (Salt keeps the last 100) so a job published twice runs once.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use saltq_exec::{JobControl, ProcessGroups};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// Requests from execution functions to the minion's main loop.
#[derive(Debug, Clone, Copy)]
pub enum Refresh {
    /// Recompute and resend grains.
    Grains,
    /// Fetch the pillar again.
    Pillar,
}

struct Running {
    info: Value,
    processes: ProcessGroups,
    abort: Option<AbortHandle>,
}

/// The table of running jobs.
pub struct Jobs {
    running: Mutex<HashMap<String, Running>>,
    seen: Mutex<VecDeque<String>>,
    refresh: mpsc::UnboundedSender<Refresh>,
}

const SEEN: usize = 100;

impl Jobs {
    /// An empty table; refresh requests go to `refresh`.
    pub fn new(refresh: mpsc::UnboundedSender<Refresh>) -> Jobs {
        Jobs {
            running: Mutex::new(HashMap::new()),
            seen: Mutex::new(VecDeque::new()),
            refresh,
        }
    }

    /// True the first time a jid is seen among the last 100.
    pub fn first_sighting(&self, jid: &str) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.iter().any(|j| j == jid) {
            return false;
        }
        seen.push_back(jid.to_owned());
        if seen.len() > SEEN {
            seen.pop_front();
        }
        true
    }

    /// Records a job about to run.
    pub fn start(&self, jid: &str, info: Value, processes: ProcessGroups) {
        let mut r = self.running.lock().unwrap_or_else(|e| e.into_inner());
        r.insert(
            jid.to_owned(),
            Running {
                info,
                processes,
                abort: None,
            },
        );
    }

    /// Attaches the task running the job, so it can be killed.
    pub fn attach(&self, jid: &str, abort: AbortHandle) {
        let mut r = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(job) = r.get_mut(jid) {
            job.abort = Some(abort);
        }
    }

    /// Removes a finished job.
    pub fn finish(&self, jid: &str) {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(jid);
    }
}

impl Jobs {
    /// Ends every running job and its commands (on shutdown: nobody would take their returns).
    pub fn kill_all(&self) -> usize {
        let jobs: Vec<Running> = {
            let mut r = self.running.lock().unwrap_or_else(|e| e.into_inner());
            r.drain().map(|(_, j)| j).collect()
        };
        for job in &jobs {
            job.processes.signal(libc::SIGKILL);
            if let Some(abort) = &job.abort {
                abort.abort();
            }
        }
        jobs.len()
    }
}

impl JobControl for Jobs {
    fn running(&self) -> Vec<Value> {
        let r = self.running.lock().unwrap_or_else(|e| e.into_inner());
        r.values().map(|j| j.info.clone()).collect()
    }

    fn signal_job(&self, jid: &str, signal: i32) -> Value {
        let job = {
            let mut r = self.running.lock().unwrap_or_else(|e| e.into_inner());
            if signal == libc::SIGKILL || signal == libc::SIGTERM {
                r.remove(jid)
            } else {
                r.get(jid).map(|j| Running {
                    info: j.info.clone(),
                    processes: j.processes.clone(),
                    abort: None,
                })
            }
        };
        let Some(job) = job else {
            return json!("");
        };
        job.processes.signal(signal);
        if let Some(abort) = job.abort {
            abort.abort();
        }
        let pid = job
            .info
            .get("pid")
            .cloned()
            .unwrap_or(json!(std::process::id()));
        json!(format!("Signal {signal} sent to job {jid} at pid {pid}"))
    }

    fn refresh_grains(&self) -> bool {
        self.refresh.send(Refresh::Grains).is_ok()
    }

    fn refresh_pillar(&self) -> bool {
        self.refresh.send(Refresh::Pillar).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_last_hundred_jids() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let jobs = Jobs::new(tx);
        assert!(jobs.first_sighting("1"));
        assert!(!jobs.first_sighting("1"));
        for i in 2..=101 {
            assert!(jobs.first_sighting(&i.to_string()));
        }
        // "1" fell out of the window of 100.
        assert!(jobs.first_sighting("1"));
    }
}
