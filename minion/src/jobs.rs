//! The minion's running jobs: what `saltutil.running` lists and `kill_job` stops, the jobs
//! whose return waits in the outbox for the master's acknowledgement (still "running" to
//! `saltutil.find_job`, so the master does not give up on a job that finished), and the
//! recently seen jids (Salt keeps the last 100) so a job published twice runs once.
//!
//! With several masters at once (`multi.rs`) one table holds every master's jobs, each keyed
//! by (master, jid): independent masters make their jids alone and may send the same one, and
//! those are two jobs. Each master's instance works through a [`Jobs`] view keyed by its master:
//! its jid window, `find_job`, `signal_job` and acknowledgements see only its own jobs, while
//! `saltutil.running` lists every job the process runs (as Salt's proc directory does).

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

/// A job's key: the master that published it (its position in `master:`) and its jid.
pub type JobKey = (usize, String);

/// Every running job of the process, keyed by (master, jid).
#[derive(Default)]
pub struct Table {
    running: Mutex<HashMap<JobKey, Running>>,
    /// The last jids seen, per master.
    seen: Mutex<HashMap<usize, VecDeque<String>>>,
    /// Counts the pillar refreshes that ended (fetched or failed), for
    /// `saltutil.refresh_pillar wait=True`.
    pillar_done: tokio::sync::watch::Sender<u64>,
}

/// One master's view of the table of running jobs.
pub struct Jobs {
    table: std::sync::Arc<Table>,
    /// The master whose jobs these are.
    master: usize,
    /// Where refresh requests go: every instance's loop (Salt's refresh events reach every
    /// minion instance, each refreshing from its master).
    refresh: Vec<mpsc::UnboundedSender<Refresh>>,
}

const SEEN: usize = 100;

impl Jobs {
    /// A pillar refresh ended, with a fresh pillar or an error: wakes whoever waits for it.
    pub fn pillar_refreshed(&self) {
        self.table
            .pillar_done
            .send_modify(|n| *n = n.wrapping_add(1));
    }

    /// An empty table for one master; refresh requests go to `refresh`.
    #[cfg(test)]
    pub fn new(refresh: mpsc::UnboundedSender<Refresh>) -> Jobs {
        Jobs::view(std::sync::Arc::default(), 0, vec![refresh])
    }

    /// The jobs of `master` in a table shared with other masters' views.
    pub fn view(
        table: std::sync::Arc<Table>,
        master: usize,
        refresh: Vec<mpsc::UnboundedSender<Refresh>>,
    ) -> Jobs {
        Jobs {
            table,
            master,
            refresh,
        }
    }

    fn key(&self, jid: &str) -> JobKey {
        (self.master, jid.to_owned())
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, HashMap<JobKey, Running>> {
        self.table.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True the first time this master's jid is seen among its last 100.
    pub fn first_sighting(&self, jid: &str) -> bool {
        let mut all = self.table.seen.lock().unwrap_or_else(|e| e.into_inner());
        let seen = all.entry(self.master).or_default();
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
        let key = self.key(jid);
        self.locked().insert(
            key,
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
        let key = self.key(jid);
        if let Some(job) = self.locked().get_mut(&key) {
            job.abort = Some(abort);
        }
    }

    /// The job's function returned and its return is about to go to the outbox: the job stops
    /// running, but `saltutil.find_job` names it until [`Jobs::acknowledged`], so the master
    /// waits for a return that is on its way rather than report `[No response]`. Call it
    /// before handing the return to the outbox, so no find_job answer can pass it.
    pub fn returned(&self, jid: &str) {
        let key = self.key(jid);
        if let Some(job) = self.locked().get_mut(&key) {
            job.unsent = true;
            job.abort = None;
        }
    }

    /// The master acknowledged the job's return (or refused it for good): the job is gone.
    pub fn acknowledged(&self, jid: &str) {
        let key = self.key(jid);
        let mut r = self.locked();
        if r.get(&key).is_some_and(|j| j.unsent) {
            r.remove(&key);
        }
    }
}

impl Jobs {
    /// Ends every running job of this master and its commands (on shutdown: nobody would take
    /// their returns).
    pub fn kill_all(&self) -> usize {
        let jobs: Vec<Running> = {
            let mut r = self.locked();
            let mine: Vec<JobKey> = r.keys().filter(|k| k.0 == self.master).cloned().collect();
            mine.iter()
                .filter_map(|k| r.remove(k))
                .filter(|j| !j.unsent)
                .collect()
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

impl Jobs {
    /// Sends a refresh request to every instance; true when one took it.
    fn ask(&self, r: Refresh) -> bool {
        self.refresh
            .iter()
            .map(|tx| tx.send(r).is_ok())
            .fold(false, |a, b| a | b)
    }
}

impl JobControl for Jobs {
    fn running(&self) -> Vec<Value> {
        let r = self.locked();
        r.values()
            .filter(|j| !j.unsent)
            .map(|j| j.info.clone())
            .collect()
    }

    fn find_job(&self, jid: &str) -> Value {
        let key = self.key(jid);
        self.locked()
            .get(&key)
            .map(|j| j.info.clone())
            .unwrap_or_else(|| json!({}))
    }

    fn signal_job(&self, jid: &str, signal: i32) -> Value {
        let key = self.key(jid);
        let job = {
            let mut r = self.locked();
            if r.get(&key).is_some_and(|j| j.unsent) {
                // Nothing runs any more: its return only waits to be sent.
                None
            } else if signal == libc::SIGKILL || signal == libc::SIGTERM {
                r.remove(&key)
            } else {
                r.get(&key).map(|j| Running {
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
        self.ask(Refresh::Grains)
    }

    fn refresh_pillar(&self) -> bool {
        self.ask(Refresh::Pillar)
    }

    fn pillar_refreshes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.table.pillar_done.subscribe())
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

    /// Two masters sending the same jid: two jobs, each master finding, signalling and
    /// acknowledging only its own; `saltutil.running` lists both (the process runs both).
    #[test]
    fn jobs_are_keyed_by_master_and_jid() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (tx2, mut rx2) = mpsc::unbounded_channel();
        let table = std::sync::Arc::new(Table::default());
        let a = Jobs::view(table.clone(), 0, vec![tx.clone(), tx2.clone()]);
        let b = Jobs::view(table, 1, vec![tx, tx2]);
        let jid = "20261207120000000001";
        assert!(a.first_sighting(jid));
        assert!(b.first_sighting(jid), "b's window is its own");
        assert!(!a.first_sighting(jid) && !b.first_sighting(jid));
        let ia = json!({"jid": jid, "fun": "test.sleep", "from": "a"});
        let ib = json!({"jid": jid, "fun": "test.ping", "from": "b"});
        a.start(jid, ia.clone(), ProcessGroups::default());
        b.start(jid, ib.clone(), ProcessGroups::default());
        assert_eq!(a.find_job(jid), ia);
        assert_eq!(b.find_job(jid), ib);
        let mut all = a.running();
        all.sort_by_key(|v| v["from"].as_str().map(str::to_owned));
        assert_eq!(all, vec![ia.clone(), ib.clone()]);
        // a's return is acknowledged: b's job is untouched.
        a.returned(jid);
        a.acknowledged(jid);
        assert_eq!(a.find_job(jid), json!({}));
        assert_eq!(b.find_job(jid), ib);
        // Killing from a finds nothing of b's; b's own kill ends it.
        assert_eq!(a.kill_job(jid), json!(""));
        assert_eq!(b.find_job(jid), ib);
        a.start("20261207120000000002", ia.clone(), ProcessGroups::default());
        assert_eq!(b.kill_all(), 1, "b's shutdown ends only b's jobs");
        assert_eq!(b.find_job(jid), json!({}));
        assert_eq!(a.running(), vec![ia]);
        // A refresh asked by a job from either master reaches every instance.
        assert!(b.refresh_pillar());
        assert!(matches!(rx.try_recv(), Ok(Refresh::Pillar)));
        assert!(matches!(rx2.try_recv(), Ok(Refresh::Pillar)));
    }
}
