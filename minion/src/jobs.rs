//! The minion's running jobs: what `saltutil.running` lists and `kill_job` stops, the jobs
//! whose return waits in the outbox for the master's acknowledgement (still "running" to
//! `saltutil.find_job`, so the master does not give up on a job that finished), and the
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
    /// The function returned and its return waits in the outbox: no longer listed by
    /// `saltutil.running` nor signalled, but still named by `saltutil.find_job` until the
    /// master acknowledges the return.
    unsent: bool,
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
                unsent: false,
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

    /// The job's function returned and its return is about to go to the outbox: the job stops
    /// running, but `saltutil.find_job` names it until [`Jobs::acknowledged`], so the master
    /// waits for a return that is on its way rather than report `[No response]`. Call it
    /// before handing the return to the outbox, so no find_job answer can pass it.
    pub fn returned(&self, jid: &str) {
        let mut r = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(job) = r.get_mut(jid) {
            job.unsent = true;
            job.abort = None;
        }
    }

    /// The master acknowledged the job's return (or refused it for good): the job is gone.
    pub fn acknowledged(&self, jid: &str) {
        let mut r = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if r.get(jid).is_some_and(|j| j.unsent) {
            r.remove(jid);
        }
    }
}

impl Jobs {
    /// Ends every running job and its commands (on shutdown: nobody would take their returns).
    pub fn kill_all(&self) -> usize {
        let jobs: Vec<Running> = {
            let mut r = self.running.lock().unwrap_or_else(|e| e.into_inner());
            r.drain().map(|(_, j)| j).filter(|j| !j.unsent).collect()
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
        r.values()
            .filter(|j| !j.unsent)
            .map(|j| j.info.clone())
            .collect()
    }

    fn find_job(&self, jid: &str) -> Value {
        let r = self.running.lock().unwrap_or_else(|e| e.into_inner());
        r.get(jid)
            .map(|j| j.info.clone())
            .unwrap_or_else(|| json!({}))
    }

    fn signal_job(&self, jid: &str, signal: i32) -> Value {
        let job = {
            let mut r = self.running.lock().unwrap_or_else(|e| e.into_inner());
            if r.get(jid).is_some_and(|j| j.unsent) {
                // Nothing runs any more: its return only waits to be sent.
                None
            } else if signal == libc::SIGKILL || signal == libc::SIGTERM {
                r.remove(jid)
            } else {
                r.get(jid).map(|j| Running {
                    info: j.info.clone(),
                    processes: j.processes.clone(),
                    abort: None,
                    unsent: false,
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

    /// A job whose return waits in the outbox is still found by `saltutil.find_job` (so the
    /// master's tracker hears "running" and waits, instead of `[No response]`), though
    /// `saltutil.running` no longer lists it and nothing is left to signal; the master's
    /// acknowledgement ends it.
    #[test]
    fn a_return_waiting_in_the_outbox_counts_for_find_job() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let jobs = Jobs::new(tx);
        let jid = "20261207120000000001";
        let info = json!({"jid": jid, "fun": "test.sleep", "pid": 1});
        jobs.start(jid, info.clone(), ProcessGroups::default());
        assert_eq!(jobs.find_job(jid), info);
        jobs.returned(jid);
        assert_eq!(
            jobs.find_job(jid),
            info,
            "the return is not acknowledged yet"
        );
        assert_eq!(jobs.running(), Vec::<Value>::new());
        assert_eq!(jobs.signal_job(jid, libc::SIGTERM), json!(""));
        assert_eq!(
            jobs.find_job(jid),
            info,
            "a signal does not drop an unsent return"
        );
        assert_eq!(jobs.kill_all(), 0, "nothing runs");
        jobs.start(jid, info.clone(), ProcessGroups::default());
        jobs.returned(jid);
        jobs.acknowledged(jid);
        assert_eq!(jobs.find_job(jid), json!({}));
        // An acknowledgement for a job still running (a jid seen again) leaves it alone.
        jobs.start(jid, info.clone(), ProcessGroups::default());
        jobs.acknowledged(jid);
        assert_eq!(jobs.find_job(jid), info);
        assert_eq!(jobs.running(), vec![info]);
    }
}
