//! What an execution function can see of the minion: grains, pillar, config, the minion's
//! running jobs, an event sink, and the process groups the current job has started.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Map, Value};

/// The publication a job came from, as Salt passes it to functions taking `**kwargs` in the
/// `__pub_*` keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PubInfo {
    /// The job id (`__pub_jid`).
    pub jid: String,
    /// The target as published: a string, or a list for list targeting (`__pub_tgt`).
    pub tgt: Value,
    /// The target type, `glob` by default (`__pub_tgt_type`).
    pub tgt_type: String,
    /// Returner names, comma-separated, empty for none (`__pub_ret`).
    pub ret: String,
    /// The user who published the job (`__pub_user`).
    pub user: String,
    /// The job's `arg` list as published, keyword arguments packed in (`__pub_arg`).
    pub arg: Vec<Value>,
}

/// The minion's side of `saltutil.*`: its table of running jobs and its refresh triggers.
/// The minion crate implements this; execution functions only delegate to it.
pub trait JobControl: Send + Sync {
    /// One entry per running job, as `saltutil.running` returns them:
    /// `{pid, fun, arg, tgt, jid, ret, tgt_type, user}`.
    fn running(&self) -> Vec<Value>;

    /// The running job with this jid, or `{}` (`saltutil.find_job`).
    fn find_job(&self, jid: &str) -> Value {
        self.running()
            .into_iter()
            .find(|job| job.get("jid").and_then(Value::as_str) == Some(jid))
            .unwrap_or_else(|| Value::Object(Map::new()))
    }

    /// Sends `signal` to the job (`saltutil.signal_job`). Salt answers
    /// `Signal <n> sent to job <jid> at pid <pid>`, or `""` when no such job runs.
    fn signal_job(&self, jid: &str, signal: i32) -> Value;

    /// Kills the job (`saltutil.kill_job`, signal 9).
    fn kill_job(&self, jid: &str) -> Value {
        self.signal_job(jid, Signal::SIGKILL as i32)
    }

    /// Recomputes the grains (`saltutil.refresh_grains`); true when the refresh was started.
    fn refresh_grains(&self) -> bool;

    /// Fetches the pillar again (`saltutil.refresh_pillar`); true when the refresh was started.
    fn refresh_pillar(&self) -> bool;
}

/// A `JobControl` for calls made outside a minion (tests, local calls): no jobs, refreshes
/// do nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoJobs;

impl JobControl for NoJobs {
    fn running(&self) -> Vec<Value> {
        Vec::new()
    }

    fn signal_job(&self, _jid: &str, _signal: i32) -> Value {
        Value::String(String::new())
    }

    fn refresh_grains(&self) -> bool {
        true
    }

    fn refresh_pillar(&self) -> bool {
        true
    }
}

/// Where `event.send` and progress events go (the minion forwards them to the master).
pub trait EventSink: Send + Sync {
    /// Fires one event with this tag and data.
    fn send(&self, tag: &str, data: Value);
}

/// One file of the master's `file_roots/_<kind>` directory, as `saltutil.sync_*` receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncedFile {
    /// The file's name, relative to `_<kind>` (`mymod.py`); no `..` and not absolute.
    pub name: String,
    /// The file's contents.
    pub contents: Vec<u8>,
    /// Whether the file is executable on the master (kept on the minion: mode 0700, else 0600).
    pub executable: bool,
}

/// The future a [`ModuleSource`] answers with.
pub type FetchFuture = Pin<Box<dyn Future<Output = Result<Vec<SyncedFile>, String>> + Send>>;

/// Where `saltutil.sync_*` gets external modules from: the master's `file_roots/_<kind>`.
/// The minion implements it with an RPC to the master.
pub trait ModuleSource: Send + Sync {
    /// Every file under `_<kind>` on the master (`kind` is `modules`); an error names what
    /// failed (it becomes the job's `ERROR: ...` return).
    fn fetch(&self, kind: &str) -> FetchFuture;
}

/// The process groups a job's commands run in, so that the minion can signal them
/// (`saltutil.signal_job`) while the job runs. Each `cmd.*` child leads its own group;
/// the group is listed here from spawn until the command is done with.
#[derive(Debug, Clone, Default)]
pub struct ProcessGroups(Arc<Mutex<BTreeSet<i32>>>);

impl ProcessGroups {
    /// The ids of the groups now running.
    pub fn pgids(&self) -> Vec<i32> {
        self.lock().iter().copied().collect()
    }

    /// Sends `signal` to every group; returns how many groups received it.
    pub fn signal(&self, signal: i32) -> usize {
        let Ok(sig) = Signal::try_from(signal) else {
            return 0;
        };
        self.pgids()
            .into_iter()
            .filter(|pgid| killpg(Pid::from_raw(*pgid), sig).is_ok())
            .count()
    }

    pub(crate) fn insert(&self, pgid: i32) {
        self.lock().insert(pgid);
    }

    pub(crate) fn remove(&self, pgid: i32) {
        self.lock().remove(&pgid);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<i32>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Everything an execution function may use of the minion. Cheap to clone (all shared).
#[derive(Clone)]
pub struct CallContext {
    /// The minion's grains; `saltutil.refresh_grains` replaces them through `jobs`.
    pub grains: Arc<RwLock<Value>>,
    /// The minion's pillar as last fetched from the master.
    pub pillar: Arc<RwLock<Value>>,
    /// The minion's configuration (Salt's `__opts__`), e.g. `id`, `cmd_safe`,
    /// `cmd_blacklist_glob`, `pillar_raise_on_missing`.
    pub opts: Arc<Value>,
    /// The minion's running jobs, for `saltutil.*`.
    pub jobs: Arc<dyn JobControl>,
    /// Where events from execution functions go; `None` drops them.
    pub events: Option<Arc<dyn EventSink>>,
    /// Where `saltutil.sync_*` fetches external modules from; `None` makes them fail.
    pub modules: Option<Arc<dyn ModuleSource>>,
    /// The process groups of this job's commands. Use [`CallContext::for_job`] to give each
    /// job its own.
    pub processes: ProcessGroups,
}

impl CallContext {
    /// A context over the minion's shared state, with no event sink.
    pub fn new(
        grains: Arc<RwLock<Value>>,
        pillar: Arc<RwLock<Value>>,
        opts: Arc<Value>,
        jobs: Arc<dyn JobControl>,
    ) -> Self {
        Self {
            grains,
            pillar,
            opts,
            jobs,
            events: None,
            modules: None,
            processes: ProcessGroups::default(),
        }
    }

    /// A context for calls outside a minion: these grains and opts, an empty pillar, no jobs.
    pub fn local(grains: Value, opts: Value) -> Self {
        Self::new(
            Arc::new(RwLock::new(grains)),
            Arc::new(RwLock::new(Value::Object(Map::new()))),
            Arc::new(opts),
            Arc::new(NoJobs),
        )
    }

    /// The same context with this event sink.
    pub fn with_events(mut self, events: Arc<dyn EventSink>) -> Self {
        self.events = Some(events);
        self
    }

    /// The same context with this source of external modules.
    pub fn with_modules(mut self, modules: Arc<dyn ModuleSource>) -> Self {
        self.modules = Some(modules);
        self
    }

    /// The same shared state with a fresh, empty set of process groups: one per job, so that
    /// signalling a job reaches only its own commands.
    pub fn for_job(&self) -> Self {
        Self {
            processes: ProcessGroups::default(),
            ..self.clone()
        }
    }

    /// A copy of the grains as they are now.
    pub fn grains(&self) -> Value {
        self.grains
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A copy of the pillar as it is now.
    pub fn pillar(&self) -> Value {
        self.pillar
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// One config option, if set.
    pub fn opt(&self, key: &str) -> Option<&Value> {
        self.opts.get(key)
    }
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("opts", &self.opts)
            .field("events", &self.events.is_some())
            .field("modules", &self.modules.is_some())
            .field("processes", &self.processes)
            .finish_non_exhaustive()
    }
}
