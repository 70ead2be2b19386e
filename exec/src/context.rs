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

    /// A watch whose value changes each time a pillar refresh ends, fetched or failed (what
    /// `saltutil.refresh_pillar wait=True` waits for: Salt's `pillar_refresh_complete`
    /// event); `None` where no refresh can be waited for.
    fn pillar_refreshes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }
}

/// A `JobControl` for calls made outside a minion (tests, local calls): no jobs, refreshes
/// do nothing. A pillar refresh answers `False`, as `salt-call --local
/// saltutil.refresh_pillar` does in Salt 3007.8 (no minion daemon hears its event; recorded),
/// while a grains refresh answers `True`, as Salt's.
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
        false
    }
}

/// The minion's scheduler as `schedule.*` reaches it (Salt's `manage_schedule` event to
/// the minion's loop). The minion crate implements it.
pub trait ScheduleControl: Send + Sync {
    /// Carries out one request (`{"func": "add"|"delete"|"list"|..., ...}`, the data of
    /// Salt's `manage_schedule` event) and answers with the data of the
    /// `/salt/minion/minion_schedule_*_complete` event Salt fires for it.
    fn manage(&self, request: Value) -> Value;
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

/// The future a [`FileClient`] answers with; the error names what failed.
pub type FileFuture<T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send>>;

/// A file's hash on the master, as `cp.hash_file` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHash {
    /// The hex digest.
    pub hsum: String,
    /// The digest's name (`sha256`, Salt's default `hash_type`).
    pub hash_type: String,
}

/// The master's fileserver (`salt://`) as the minion sees it. The minion implements it over
/// its connection to the master, with a cache by hash in its cachedir; `salt-call --local`
/// implements it over the local `file_roots`. Paths are relative to the saltenv's roots,
/// `/`-separated, without the `salt://` prefix.
pub trait FileClient: Send + Sync {
    /// Every file under `prefix` (`""` for all) in `saltenv`, sorted (`cp.list_master`).
    fn list_files(&self, saltenv: &str, prefix: &str) -> FileFuture<Vec<String>>;

    /// Every directory under `prefix` in `saltenv`, sorted (`cp.list_master_dirs`).
    fn list_dirs(&self, saltenv: &str, prefix: &str) -> FileFuture<Vec<String>>;

    /// Every empty directory under `prefix` in `saltenv`, sorted (`cp.get_dir` and
    /// `cp.cache_dir` recreate them). None unless the client knows them.
    fn list_empty_dirs(&self, _saltenv: &str, _prefix: &str) -> FileFuture<Vec<String>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    /// The file's hash on the master, `None` when there is no such file.
    fn hash(&self, saltenv: &str, path: &str) -> FileFuture<Option<FileHash>>;

    /// Makes sure the cachedir holds the master's current copy of the file, fetching it only
    /// when its hash changed; the local path, or `None` when there is no such file.
    fn cache_file(&self, saltenv: &str, path: &str) -> FileFuture<Option<std::path::PathBuf>>;

    /// The saltenvs the fileserver serves, sorted (Salt's `fileserver.envs`); `base` alone
    /// unless the client knows better.
    fn envs(&self) -> FileFuture<Vec<String>> {
        Box::pin(async { Ok(vec!["base".to_owned()]) })
    }
}

/// The state system (`state.*`), implemented by the `saltq-states` crate and attached by the
/// minion: the execution functions named `state.*` delegate to it.
pub trait StateSystem: Send + Sync {
    /// Runs the `state.*` function `call.fun` with its bound arguments.
    fn call(&self, call: crate::spec::Call) -> crate::spec::BoxFuture;

    /// Renders a template for `cp.get_template` and friends: `text` through `engine`
    /// (`jinja`) with Salt's template context in `saltenv` plus `extra` variables; the error
    /// is Salt's rendering message. Runs on the caller's thread: call it from a blocking one.
    fn render_template(
        &self,
        ctx: &CallContext,
        text: &str,
        engine: &str,
        saltenv: &str,
        extra: Map<String, Value>,
    ) -> Result<String, String>;
}

/// Told of every process group a command starts and of its end, by whoever must kill the
/// groups still running if the minion dies without doing it itself (SIGKILL, a crash): the
/// minion's reaper process. Called right after the command is spawned and when the command
/// is done with; must not block.
pub trait GroupWatch: Send + Sync {
    /// The command leading group `pgid` was spawned.
    fn started(&self, pgid: i32);
    /// The command leading group `pgid` is done with (exited, killed, or left running in
    /// the background on purpose).
    fn ended(&self, pgid: i32);
}

/// A job the master publishes for a master-side call and gathers the returns of, as Salt's
/// `saltutil.cmd` does on the master minion (the `salt.state` and `salt.function` states).
#[derive(Debug, Clone, PartialEq)]
pub struct MasterJob {
    /// The target: a string, or a list for `list` targeting.
    pub tgt: Value,
    /// The target type (`glob`, `list`, `grain`, `compound`, ...).
    pub tgt_type: String,
    /// The function.
    pub fun: String,
    /// Positional arguments.
    pub arg: Vec<Value>,
    /// Keyword arguments.
    pub kwarg: Map<String, Value>,
    /// Returner names, comma-separated, empty for none.
    pub ret: String,
    /// Seconds to wait before asking the silent minions `saltutil.find_job`; `None` for the
    /// master's `timeout`.
    pub timeout: Option<f64>,
    /// Report every expected minion that did not return as `{"failed": true}` (Salt's
    /// `expect_minions`).
    pub expect_minions: bool,
}

/// The future a [`MasterClient`] answers with; the error names what failed.
pub type MasterFuture<T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send>>;

/// The master's client API as a state run on the master sees it (Salt's `saltutil.cmd`,
/// `saltutil.runner`, `saltutil.wheel` and the master's event bus, from the master minion of
/// the orchestrate runner). The master implements it; the `salt.*` state modules use it.
pub trait MasterClient: Send + Sync {
    /// Publishes `job` and gathers its returns: `{id: {ret, retcode, jid, out?}}` per minion
    /// that returned, plus `{id: {failed: true}}` per silent one when `expect_minions`; `{}`
    /// when nothing matched.
    fn cmd(&self, job: MasterJob) -> MasterFuture<Map<String, Value>>;

    /// Runs a runner under a jid of its own: Salt's full return `{fun, jid, user, fun_args,
    /// return, success}`.
    fn runner(
        &self,
        fun: &str,
        args: Vec<Value>,
        kwargs: Map<String, Value>,
    ) -> MasterFuture<Value>;

    /// Runs a wheel function: Salt's full return `{fun, jid, user, fun_args, return, success}`.
    fn wheel(&self, fun: &str, args: Vec<Value>, kwargs: Map<String, Value>)
    -> MasterFuture<Value>;

    /// Fires an event on the master's bus.
    fn fire(&self, tag: &str, data: Value);

    /// Every event fired on the master's bus from now on, `(tag, data)`, until the receiver
    /// is dropped.
    fn subscribe(&self) -> tokio::sync::mpsc::Receiver<(String, Value)>;

    /// The jid of the orchestration this run belongs to (Salt's `__orchestration_jid__`).
    fn orchestration_jid(&self) -> String;
}

/// The master's Salt Mine as a minion reaches it (Salt's `_mine`, `_mine_get`,
/// `_mine_delete` and `_mine_flush` requests). The minion implements it over its connection,
/// the master for its own state runs (orchestration).
pub trait MineClient: Send + Sync {
    /// Stores this minion's `{function: data}`, merged into its mine or replacing it (`clear`).
    fn store(&self, data: Map<String, Value>, clear: bool) -> MasterFuture<()>;
    /// The mine data of the minions matching `tgt`: `{id: data}` for one function,
    /// `{function: {id: data}}` for several; `fun` is a string or a list.
    fn get(&self, tgt: &str, tgt_type: &str, fun: Value) -> MasterFuture<Value>;
    /// Removes one function from this minion's mine.
    fn delete(&self, fun: &str) -> MasterFuture<()>;
    /// Removes all of this minion's mine.
    fn flush(&self) -> MasterFuture<()>;
    /// Resolves once the master has welcomed the minion (its pillar in place), so the
    /// `mine.update` the scheduler runs at start goes out once, connected, as Salt's minion
    /// only starts its schedule after connecting; at once by default.
    fn ready(&self) -> MasterFuture<()> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The master's pillar compiler as `pillar.ext` reaches it (Salt's `_pillar` request with
/// `ext`). The minion implements it over its connection; a masterless minion over its own
/// pillar tree.
pub trait PillarClient: Send + Sync {
    /// This minion's pillar compiled now, the on-demand sources `ext` (`{name: arguments}`)
    /// after the configured `ext_pillar`, `pillar_override` merged last; the error is the
    /// refusal or failure in words (Salt's on_demand_ext_pillar message when not allowed).
    fn compile_ext(&self, ext: Value, pillar_override: Map<String, Value>) -> MasterFuture<Value>;

    /// This minion's pillar compiled now for a state run's `saltenv` and `pillarenv` (Salt's
    /// `_pillar` request with them: `pillarenv` compiles that environment only, else the
    /// compiler's own setting and `pillarenv_from_saltenv` decide); the error is the
    /// failure in words.
    fn compile_env(
        &self,
        saltenv: Option<String>,
        pillarenv: Option<String>,
    ) -> MasterFuture<Value> {
        let _ = (saltenv, pillarenv);
        Box::pin(async { Err("no pillar compiler to ask for another environment".to_owned()) })
    }
}

/// The process groups a job's commands run in, so that the minion can signal them
/// (`saltutil.signal_job`) while the job runs. Each `cmd.*` child leads its own group;
/// the group is listed here from spawn until the command is done with.
#[derive(Clone, Default)]
pub struct ProcessGroups {
    /// The groups now running.
    running: Arc<Mutex<BTreeSet<i32>>>,
    /// Told of each group too, so the groups die with the minion (shared by every job).
    watch: Option<Arc<dyn GroupWatch>>,
}

impl ProcessGroups {
    /// An empty set whose groups are also reported to `watch`.
    pub fn watched(watch: Arc<dyn GroupWatch>) -> Self {
        Self {
            running: Arc::default(),
            watch: Some(watch),
        }
    }

    /// A new, empty set reporting to the same watch (one set per job).
    pub fn fresh(&self) -> Self {
        Self {
            running: Arc::default(),
            watch: self.watch.clone(),
        }
    }

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
        if let Some(w) = &self.watch {
            w.started(pgid);
        }
    }

    pub(crate) fn remove(&self, pgid: i32) {
        self.lock().remove(&pgid);
        if let Some(w) = &self.watch {
            w.ended(pgid);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<i32>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for ProcessGroups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessGroups")
            .field("running", &*self.lock())
            .field("watched", &self.watch.is_some())
            .finish()
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
    /// The master's fileserver (`salt://`); `None` makes `cp.*` and `salt://` sources fail.
    pub files: Option<Arc<dyn FileClient>>,
    /// Where a render's own `salt://` imports resolve when that is not `files`: a pillar
    /// render's, from `pillar_roots`, while its `salt['cp.*']` read `file_roots` (Salt's
    /// pillar file client beside the master's `cp`); `None` uses `files`.
    pub template_files: Option<Arc<dyn FileClient>>,
    /// The state system behind `state.*`; `None` makes those functions unavailable.
    pub states: Option<Arc<dyn StateSystem>>,
    /// The master's client API, for state runs on the master (orchestration); `None` on a
    /// minion, where the `salt.*` states refuse to run.
    pub master: Option<Arc<dyn MasterClient>>,
    /// The master's mine (`mine.*`); `None` keeps the mine in the minion's cachedir, as a
    /// masterless Salt minion does.
    pub mine: Option<Arc<dyn MineClient>>,
    /// The master's pillar compiler for `pillar.ext`; `None` makes `pillar.ext` fail.
    pub pillar_client: Option<Arc<dyn PillarClient>>,
    /// The process groups of this job's commands. Use [`CallContext::for_job`] to give each
    /// job its own.
    pub processes: ProcessGroups,
    /// The minion's beacons config, for `beacons.*`; `None` outside a minion daemon.
    pub beacons: Option<Arc<crate::beacons::Manager>>,
    /// The minion's scheduler, for `schedule.*`; `None` outside a minion daemon.
    pub schedule: Option<Arc<dyn ScheduleControl>>,
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
            files: None,
            template_files: None,
            states: None,
            master: None,
            mine: None,
            pillar_client: None,
            processes: ProcessGroups::default(),
            beacons: None,
            schedule: None,
        }
    }

    /// The same context with the minion's scheduler.
    pub fn with_schedule(mut self, schedule: Arc<dyn ScheduleControl>) -> Self {
        self.schedule = Some(schedule);
        self
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

    /// The same context with this fileserver client.
    pub fn with_files(mut self, files: Arc<dyn FileClient>) -> Self {
        self.files = Some(files);
        self
    }

    /// The same context with this client for a render's own `salt://` imports.
    pub fn with_template_files(mut self, files: Arc<dyn FileClient>) -> Self {
        self.template_files = Some(files);
        self
    }

    /// The same context with this state system.
    pub fn with_states(mut self, states: Arc<dyn StateSystem>) -> Self {
        self.states = Some(states);
        self
    }

    /// The same context with its commands' process groups reported to `watch`.
    pub fn with_process_watch(mut self, watch: Arc<dyn GroupWatch>) -> Self {
        self.processes = ProcessGroups::watched(watch);
        self
    }

    /// The same context with the minion's beacons config (for `beacons.*`).
    pub fn with_beacons(mut self, beacons: Arc<crate::beacons::Manager>) -> Self {
        self.beacons = Some(beacons);
        self
    }

    /// The same context with the master's client API (a state run on the master).
    pub fn with_master(mut self, master: Arc<dyn MasterClient>) -> Self {
        self.master = Some(master);
        self
    }

    /// The same context with the master's mine.
    pub fn with_mine(mut self, mine: Arc<dyn MineClient>) -> Self {
        self.mine = Some(mine);
        self
    }

    /// The same context with the pillar compiler `pillar.ext` asks.
    pub fn with_pillar_client(mut self, client: Arc<dyn PillarClient>) -> Self {
        self.pillar_client = Some(client);
        self
    }

    /// The same shared state with a fresh, empty set of process groups (still reported to
    /// the same watch): one per job, so that signalling a job reaches only its own commands.
    pub fn for_job(&self) -> Self {
        Self {
            processes: self.processes.fresh(),
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
            .field("files", &self.files.is_some())
            .field("states", &self.states.is_some())
            .field("master", &self.master.is_some())
            .field("processes", &self.processes)
            .finish_non_exhaustive()
    }
}
