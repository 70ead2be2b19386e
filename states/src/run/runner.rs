//! The run itself: one [`Runner`] per run holds Salt's `running` and `pre` dicts, the active
//! set and the run counter, and walks the chunks as `call_chunks` and `call_chunk` do.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use saltq_exec::CallContext;
use saltq_semantics::python::{fnmatch, str as py_str};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::checks::{run_check, run_check_cmd};
use super::requisite::{self, Direction, Outcome, ReqStatus, Requisite};
use crate::compile::high_to_low;
use crate::modules::{self, StateCall};

/// The keys the runner keeps for itself besides the requisites (`STATE_RUNTIME_KEYWORDS`):
/// never passed to a state function.
const RUNTIME: &[&str] = &[
    "fun",
    "state",
    "check_cmd",
    "cmd_opts_exclude",
    "failhard",
    "onlyif",
    "unless",
    "creates",
    "retry",
    "order",
    "parallel",
    "reload_modules",
    "reload_grains",
    "reload_pillar",
    "runas",
    "runas_password",
    "fire_event",
    "saltenv",
    "umask",
    "__env__",
    "__sls__",
    "__id__",
    "__sls_included_from__",
    "__orchestration_jid__",
    "__pub_user",
    "__pub_arg",
    "__pub_jid",
    "__pub_fun",
    "__pub_tgt",
    "__pub_ret",
    "__pub_pid",
    "__pub_tgt_type",
    "__prereq__",
    "__prerequired__",
    "__umask__",
];

/// How a run goes.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Test mode (`test=True`): state functions report what they would change.
    pub test: bool,
    /// The `failhard` option: the first failure stops the run.
    pub failhard: bool,
    /// The `disabled_requisites` option.
    pub disabled_requisites: Vec<String>,
    /// The saltenv of the run (states without `__env__` use it).
    pub saltenv: String,
    /// Pause and stop requests from outside the run.
    pub control: RunControl,
    /// The `state_events` option: a `salt/job/<jid>/prog/<id>/<run_num>` event per state.
    pub state_events: bool,
    /// The job's id, in event tags.
    pub jid: String,
    /// The minion's id, in event tags.
    pub minion_id: String,
}

/// What the engine asks of a running run, checked before each chunk (`state.pause`,
/// `state.resume`, `state.soft_kill`). A paused run waits on the control's notification,
/// which `resume` and `soft_kill` send.
#[derive(Debug, Clone, Default)]
pub struct RunControl(Arc<Control>);

/// The shared part of a [`RunControl`].
#[derive(Debug, Default)]
struct Control {
    state: Mutex<ControlState>,
    /// Woken on every change, so a paused run goes on as soon as it may.
    changed: Notify,
}

#[derive(Debug, Default)]
struct ControlState {
    paused: bool,
    killed: bool,
    /// The job's pause file (`<cachedir>/state_pause/<jid>`), read before each state as
    /// Salt's `check_pause` reads it, so `state.pause`/`soft_kill` can name one state.
    pause_file: Option<std::path::PathBuf>,
}

/// What a run does before a state, as [`RunControl::check`] decides it.
enum Gate {
    /// Run the state.
    Go,
    /// Stop the run.
    Stop,
    /// Wait for the control to change (paused through [`RunControl::pause`]).
    Wait,
    /// Wait for the control to change or a second to pass, then read the pause file again.
    Poll,
}

impl RunControl {
    /// Holds the run before its next chunk until [`RunControl::resume`].
    pub fn pause(&self) {
        self.lock().paused = true;
        self.0.changed.notify_waiters();
    }

    /// Lets a paused run go on.
    pub fn resume(&self) {
        self.lock().paused = false;
        self.0.changed.notify_waiters();
    }

    /// Stops the run before its next chunk (`state.soft_kill`); what ran is returned.
    pub fn soft_kill(&self) {
        self.lock().killed = true;
        self.0.changed.notify_waiters();
    }

    /// Also obeys the job's pause file at `path` (see [`crate::engine::pause`]).
    pub fn with_pause_file(self, path: std::path::PathBuf) -> Self {
        self.lock().pause_file = Some(path);
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ControlState> {
        self.0.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The gate before the state `id`, `waited` seconds after the run first stopped there.
    fn gate(&self, id: &str, waited: f64) -> Gate {
        use crate::engine::pause::{Action, decide, read};
        let st = self.lock();
        if st.killed {
            return Gate::Stop;
        }
        if st.paused {
            return Gate::Wait;
        }
        match st.pause_file.as_deref().map(|p| decide(&read(p), id)) {
            None | Some(Action::Run) => Gate::Go,
            Some(Action::Kill) => Gate::Stop,
            Some(Action::Wait(Some(d))) if waited > d => Gate::Go,
            Some(Action::Wait(_)) => Gate::Poll,
        }
    }

    /// `check_pause` before the state `id`: waits while paused; true when the run must stop.
    /// The pause file is read once a second, as Salt reads it; a pause with a duration ends
    /// when that many seconds have passed.
    async fn check(&self, id: &str) -> bool {
        let start = tokio::time::Instant::now();
        loop {
            // Registered before the state is read, so a change in between is not missed.
            let changed = self.0.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match self.gate(id, start.elapsed().as_secs_f64()) {
                Gate::Go => return false,
                Gate::Stop => return true,
                Gate::Wait => changed.await,
                Gate::Poll => {
                    let _ = tokio::time::timeout(Duration::from_secs(1), changed).await;
                }
            }
        }
    }
}

/// Salt's `STATE_INTERNAL_KEYWORDS`: a requisite keyword or a runtime one.
fn is_internal(key: &str) -> bool {
    Requisite::parse(key).is_some() || RUNTIME.contains(&key)
}

/// Salt's tag of a chunk: `<state>_|-<id>_|-<name>_|-<fun>`.
pub fn tag_of(low: &Map<String, Value>) -> String {
    let f = |k: &str| low.get(k).map(py_str).unwrap_or_default();
    format!(
        "{}_|-{}_|-{}_|-{}",
        f("state"),
        f("__id__"),
        f("name"),
        f("fun")
    )
}

/// Runs high data as `State.call_high`: compile errors come back as Salt's list.
pub async fn call_high(
    high: Map<String, Value>,
    ctx: &CallContext,
    opts: &RunOptions,
) -> Result<Map<String, Value>, Vec<String>> {
    let chunks = high_to_low(high, &opts.disabled_requisites)?;
    Ok(run(chunks, ctx, opts).await)
}

/// `state.single`: one state function called directly (`verify_data`, then `call`; no
/// requisites). `Err` is Salt's answer instead of a result: `"Invalid function passed"` or
/// the list of `verify_data` errors (retcode 1 for both).
pub async fn single(
    fun: &str,
    name: &Value,
    kwargs: Map<String, Value>,
    ctx: &CallContext,
    opts: &RunOptions,
) -> Result<Map<String, Value>, Value> {
    let comps: Vec<&str> = fun.split('.').collect();
    if comps.len() < 2 {
        return Err(json!("Invalid function passed"));
    }
    let mut low = kwargs;
    low.insert("state".into(), json!(comps[0]));
    low.insert("fun".into(), json!(comps[1]));
    low.insert("__id__".into(), name.clone());
    low.insert("name".into(), name.clone());
    let errors = Runner::verify_data(&mut low.clone());
    if !errors.is_empty() {
        return Err(json!(errors));
    }
    let mut runner = Runner::new(ctx, opts);
    runner.chunks = vec![low.clone()];
    runner.index = ChunkIndex::new(&runner.chunks);
    let ret = runner.call(&mut low, 1).await;
    let mut out = Map::new();
    out.insert(tag_of(&low), Value::Object(ret));
    Ok(out)
}

/// Runs ordered low chunks (`call_chunks`, then the `listen` watchers), into Salt's result
/// map.
pub async fn run(
    chunks: Vec<Map<String, Value>>,
    ctx: &CallContext,
    opts: &RunOptions,
) -> Map<String, Value> {
    let mut runner = Runner::new(ctx, opts);
    let ret = runner.call_chunks(chunks.clone()).await;
    // The run's accumulators go with the runner, as Salt deletes its accumulator file
    // when call_high ends.
    runner.call_listen(&chunks, ret).await
}

/// Runs the chunks of one state ID as `state.sls_id` does: each through `call_chunk` with
/// every chunk of the run at hand (so its requisites run first) and a fresh record of what
/// ran, the answers merged. Empty when no chunk has that ID.
pub async fn run_id(
    chunks: Vec<Map<String, Value>>,
    id: &str,
    ctx: &CallContext,
    opts: &RunOptions,
) -> Map<String, Value> {
    let mut runner = Runner::new(ctx, opts);
    runner.index = ChunkIndex::new(&chunks);
    runner.chunks = chunks;
    let mut ret = Map::new();
    for idx in 0..runner.chunks.len() {
        if runner.chunks[idx].get("__id__").map(py_str).as_deref() != Some(id) {
            continue;
        }
        runner.running = Map::new();
        runner.active.clear();
        runner.call_chunk(idx, 0).await;
        runner.reconcile_all().await;
        runner.running.shift_remove("__FAILHARD__");
        ret.extend(std::mem::take(&mut runner.running));
    }
    ret
}

/// A local time of day as Salt prints `start_time` (Python's `time.isoformat()`: no
/// fraction when the microseconds are zero).
fn now_time() -> String {
    use chrono::Timelike;
    let now = chrono::Local::now();
    let micros = now.nanosecond() / 1000 % 1_000_000;
    if micros == 0 {
        now.format("%H:%M:%S").to_string()
    } else {
        format!("{}.{micros:06}", now.format("%H:%M:%S"))
    }
}

/// A duration in Salt's milliseconds with microseconds.
fn millis(d: Duration) -> f64 {
    (d.as_micros() as f64) / 1000.0
}

fn not_run(comment: impl Into<String>, result: bool, run_num: i64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("changes".into(), json!({}));
    m.insert("result".into(), json!(result));
    m.insert("duration".into(), json!(0.0));
    m.insert("start_time".into(), json!(now_time()));
    m.insert("comment".into(), json!(comment.into()));
    m.insert("__run_num__".into(), json!(run_num));
    m
}

fn copy_ids(ret: &mut Map<String, Value>, low: &Map<String, Value>) {
    for key in ["__sls__", "__id__", "name"] {
        ret.insert(key.into(), low.get(key).cloned().unwrap_or(Value::Null));
    }
}

/// `trim_req`: a requisite as `(kind, target)`, a bare string being an ID, `cmd.run: x`
/// being `cmd: x`.
fn trim_req(req: &Value) -> Option<(String, Value)> {
    match req {
        Value::String(_) => Some(("id".into(), req.clone())),
        Value::Object(m) => m
            .iter()
            .next()
            .map(|(k, v)| (k.split('.').next().unwrap_or(k).to_owned(), v.clone())),
        _ => None,
    }
}

type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Each requisite of a chunk and the chunks (indices) it names.
type ReqChunks = Vec<(Requisite, Vec<usize>)>;

/// Per requisite, the `(kind, target)` entries that name no chunk.
type Lost = Vec<(Requisite, Vec<(String, Value)>)>;

/// Salt's comment for requisites that name no chunk.
fn lost_comment(lost: &Lost) -> String {
    let mut comment = String::from("The following requisites were not found:\n");
    for (requisite, l) in lost {
        if l.is_empty() {
            continue;
        }
        comment += &format!("{}{}:\n", " ".repeat(19), requisite.name());
        for (k, v) in l {
            comment += &format!("{}{}: {}\n", " ".repeat(23), k, py_str(v));
        }
    }
    comment
}

struct Runner {
    ctx: CallContext,
    opts: RunOptions,
    chunks: Vec<Map<String, Value>>,
    running: Map<String, Value>,
    pre: Map<String, Value>,
    active: HashSet<String>,
    run_num: i64,
    /// Parallel states still running: their tag and task.
    procs: Vec<(String, JoinHandle<Map<String, Value>>)>,
    /// What requisites are matched against in `chunks`, read once per list.
    index: ChunkIndex,
    /// This run's `file.accumulated` store, handed to every state function it calls.
    accumulators: modules::file::Accumulators,
}

/// The text requisites are matched against, per chunk, with the exact-text lookups a
/// pattern without glob characters needs (requisite matching is the run's hot path).
#[derive(Debug, Default)]
struct ChunkIndex {
    /// Per chunk: state, name, ID, SLS (as text) and the SLS it was included from.
    keys: Vec<[String; 4]>,
    included: Vec<Vec<String>>,
    by_name: std::collections::HashMap<String, Vec<usize>>,
    by_id: std::collections::HashMap<String, Vec<usize>>,
}

impl ChunkIndex {
    fn new(chunks: &[Map<String, Value>]) -> Self {
        let mut index = ChunkIndex::default();
        for (i, chunk) in chunks.iter().enumerate() {
            let text = |k: &str| match chunk.get(k) {
                Some(Value::String(s)) => s.clone(),
                Some(v) => py_str(v),
                None => String::new(),
            };
            let keys = [text("state"), text("name"), text("__id__"), text("__sls__")];
            index.by_name.entry(keys[1].clone()).or_default().push(i);
            index.by_id.entry(keys[2].clone()).or_default().push(i);
            index.keys.push(keys);
            index.included.push(
                chunk
                    .get("__sls_included_from__")
                    .and_then(Value::as_array)
                    .map(|l| {
                        l.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
            );
        }
        index
    }
}

impl Runner {
    fn new(ctx: &CallContext, opts: &RunOptions) -> Self {
        Runner {
            ctx: ctx.clone(),
            opts: opts.clone(),
            chunks: Vec::new(),
            running: Map::new(),
            pre: Map::new(),
            active: HashSet::new(),
            run_num: 0,
            procs: Vec::new(),
            index: ChunkIndex::default(),
            accumulators: Default::default(),
        }
    }

    fn next_run_num(&mut self) -> i64 {
        let n = self.run_num;
        self.run_num += 1;
        n
    }

    /// `call_chunks`.
    fn call_chunks(&mut self, chunks: Vec<Map<String, Value>>) -> BoxFut<'_, Map<String, Value>> {
        Box::pin(async move {
            let (chunks, disabled) = self.disabled_chunks(chunks);
            let saved_index = std::mem::replace(&mut self.index, ChunkIndex::new(&chunks));
            let saved_chunks = std::mem::replace(&mut self.chunks, chunks);
            let saved_running = std::mem::take(&mut self.running);
            let mut failhard = false;
            for idx in 0..self.chunks.len() {
                if self.running.shift_remove("__FAILHARD__").is_some() {
                    failhard = true;
                    break;
                }
                let tag = tag_of(&self.chunks[idx]);
                if !self.running.contains_key(&tag) {
                    let id = self.chunks[idx]
                        .get("__id__")
                        .map(py_str)
                        .unwrap_or_default();
                    if self.opts.control.check(&id).await {
                        break;
                    }
                    self.call_chunk(idx, 0).await;
                    let low = self.chunks[idx].clone();
                    if self.check_failhard(&low) {
                        failhard = true;
                        break;
                    }
                }
                self.active.clear();
            }
            self.reconcile_all().await;
            self.running.shift_remove("__FAILHARD__");
            let _ = failhard;
            self.chunks = saved_chunks;
            self.index = saved_index;
            let running = std::mem::replace(&mut self.running, saved_running);
            let mut ret = disabled;
            ret.extend(running);
            ret
        })
    }

    /// The chunks the `state_runs_disabled` grain (`state.disable`) leaves to run, and the
    /// results of those it stops.
    fn disabled_chunks(
        &mut self,
        chunks: Vec<Map<String, Value>>,
    ) -> (Vec<Map<String, Value>>, Map<String, Value>) {
        let patterns: Vec<String> = self
            .ctx
            .grains()
            .get("state_runs_disabled")
            .and_then(Value::as_array)
            .map(|l| l.iter().map(py_str).collect())
            .unwrap_or_default();
        let mut disabled = Map::new();
        if patterns.is_empty() {
            return (chunks, disabled);
        }
        let mut keep = Vec::new();
        for low in chunks {
            let full = format!(
                "{}.{}",
                low.get("state").map(py_str).unwrap_or_default(),
                low.get("fun").map(py_str).unwrap_or_default()
            );
            match patterns.iter().find(|p| fnmatch(&full, p)) {
                Some(pat) => {
                    let mut ret = Map::new();
                    ret.insert("changes".into(), json!({}));
                    ret.insert("result".into(), json!(false));
                    ret.insert(
                        "comment".into(),
                        json!(format!(
                            "The state function \"{full}\" is currently disabled by \"{pat}\", to re-enable, run state.enable {pat}."
                        )),
                    );
                    ret.insert("__run_num__".into(), json!(self.next_run_num()));
                    ret.insert(
                        "__sls__".into(),
                        low.get("__sls__").cloned().unwrap_or(Value::Null),
                    );
                    disabled.insert(tag_of(&low), Value::Object(ret));
                }
                None => keep.push(low),
            }
        }
        (keep, disabled)
    }

    /// Waits for every parallel state and puts its result in place.
    async fn reconcile_all(&mut self) {
        let procs = std::mem::take(&mut self.procs);
        for (tag, handle) in procs {
            self.finish_proc(&tag, handle).await;
        }
    }

    /// Waits for the parallel states among `tags`.
    async fn reconcile_tags(&mut self, tags: &[String]) {
        let (wait, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.procs)
            .into_iter()
            .partition(|(t, _)| tags.contains(t));
        self.procs = keep;
        for (tag, handle) in wait {
            self.finish_proc(&tag, handle).await;
        }
    }

    async fn finish_proc(&mut self, tag: &str, handle: JoinHandle<Map<String, Value>>) {
        let ret = match handle.await {
            Ok(r) => r,
            Err(_) => {
                let mut m = Map::new();
                m.insert("result".into(), json!(false));
                m.insert("comment".into(), json!("Parallel process failed to return"));
                m.insert("changes".into(), json!({}));
                m
            }
        };
        if let Some(Value::Object(slot)) = self.running.get_mut(tag) {
            for (k, v) in ret {
                slot.insert(k, v);
            }
        }
    }

    /// `check_failhard`.
    fn check_failhard(&self, low: &Map<String, Value>) -> bool {
        if self.opts.test {
            return false;
        }
        let fh = low
            .get("failhard")
            .map(saltq_semantics::python::truthy)
            .unwrap_or(self.opts.failhard);
        if !fh {
            return false;
        }
        match self.running.get(&tag_of(low)).and_then(|r| r.get("result")) {
            Some(Value::Bool(b)) => !b,
            Some(Value::Null) => false,
            Some(_) => false,
            None => false,
        }
    }

    /// The chunks a requisite `(kind, target)` designates.
    fn find_reqs(&self, key: &str, val: &Value) -> Vec<usize> {
        let Some(val_s) = val.as_str() else {
            return Vec::new();
        };
        let index = &self.index;
        // A pattern without glob characters matches only itself (POSIX fnmatch).
        let literal = !val_s.contains(['*', '?', '[']);
        let matches = |text: &str| {
            if literal {
                text == val_s
            } else {
                fnmatch(text, val_s)
            }
        };
        if key == "sls" {
            return (0..index.keys.len())
                .filter(|i| {
                    matches(&index.keys[*i][3]) || index.included[*i].iter().any(|s| s == val_s)
                })
                .collect();
        }
        let state_ok = |i: &usize| key == "id" || index.keys[*i][0] == key;
        if literal {
            let mut out: Vec<usize> = index
                .by_name
                .get(val_s)
                .into_iter()
                .chain(index.by_id.get(val_s))
                .flatten()
                .copied()
                .filter(state_ok)
                .collect();
            out.sort_unstable();
            out.dedup();
            return out;
        }
        (0..index.keys.len())
            .filter(state_ok)
            .filter(|i| matches(&index.keys[*i][1]) || matches(&index.keys[*i][2]))
            .collect()
    }

    fn has_mod_watch(low: &Map<String, Value>) -> bool {
        let state = low.get("state").and_then(Value::as_str).unwrap_or_default();
        modules::lookup(&format!("{state}.mod_watch")).is_some()
    }

    /// Turns `watch`/`watch_any` into `require`/`require_any` when the module has no
    /// `mod_watch` (Salt does this on the chunk itself).
    fn watch_to_require(low: &mut Map<String, Value>) -> bool {
        let mut present = false;
        for (watch, require) in [
            (Requisite::Watch, Requisite::Require),
            (Requisite::WatchAny, Requisite::RequireAny),
        ] {
            let (watch, require) = (watch.name(), require.name());
            if !low.contains_key(watch) {
                continue;
            }
            if Self::has_mod_watch(low) {
                present = true;
                continue;
            }
            let moved = low.shift_remove(watch).unwrap_or(Value::Null);
            match (low.get_mut(require), moved) {
                (Some(Value::Array(dest)), Value::Array(items)) => dest.extend(items),
                (_, moved) => {
                    low.insert(require.into(), moved);
                }
            }
        }
        present
    }

    /// `check_requisite`: the status and the chunks of each requisite. The chunks are
    /// looked up and the parallel ones among them waited for; the status is the pure
    /// [`requisite::status`] of what they left.
    async fn check_requisite(&mut self, idx: usize, pre: bool) -> (ReqStatus, ReqChunks) {
        let Some(reqs) = self.requisite_chunks(idx, pre) else {
            return (ReqStatus::Unmet, Vec::new());
        };
        if reqs.is_empty() {
            return (ReqStatus::Met, reqs);
        }
        let waited: Vec<String> = reqs
            .iter()
            .filter(|(r, _)| *r != Requisite::Prereq)
            .flat_map(|(_, idxs)| idxs.iter().map(|i| tag_of(&self.chunks[*i])))
            .collect();
        self.reconcile_tags(&waited).await;
        let outcomes: Vec<(Requisite, Vec<Option<Outcome>>)> = reqs
            .iter()
            .map(|(r, idxs)| {
                let dict = if *r == Requisite::Prereq {
                    &self.pre
                } else {
                    &self.running
                };
                let found = idxs
                    .iter()
                    .map(|i| {
                        dict.get(&tag_of(&self.chunks[*i]))
                            .and_then(Value::as_object)
                            .map(Outcome::of)
                    })
                    .collect();
                (*r, found)
            })
            .collect();
        (requisite::status(&outcomes), reqs)
    }

    /// The chunks each requisite of the chunk at `idx` names, in `check_requisite`'s order
    /// (`prerequired` too when `pre`); a disabled requisite names none. Empty when the chunk
    /// has no requisite to check; `None` when one names no chunk at all (unmet).
    fn requisite_chunks(&mut self, idx: usize, pre: bool) -> Option<ReqChunks> {
        let mut low = self.chunks[idx].clone();
        Self::watch_to_require(&mut low);
        self.chunks[idx] = low.clone();
        let mut kinds = Requisite::CHECKED.to_vec();
        let present = kinds
            .iter()
            .chain([&Requisite::Prerequired])
            .any(|r| low.contains_key(r.name()));
        if !present {
            return Some(Vec::new());
        }
        if pre {
            kinds.push(Requisite::Prerequired);
        }
        let mut reqs = Vec::new();
        for r in kinds {
            let mut found_chunks = Vec::new();
            if let Some(list) = low.get(r.name()).filter(|v| !v.is_null())
                && !self.opts.disabled_requisites.iter().any(|d| d == r.name())
            {
                for req in list.as_array().cloned().unwrap_or_default() {
                    let Some((key, val)) = trim_req(&req) else {
                        continue;
                    };
                    if val.is_null() {
                        continue;
                    }
                    let found = self.find_reqs(&key, &val);
                    if found.is_empty() {
                        return None;
                    }
                    found_chunks.extend(found);
                }
            }
            reqs.push((r, found_chunks));
        }
        Some(reqs)
    }

    /// Calls the chunk at `idx` and writes back what `call` changed on it.
    async fn call_idx(&mut self, idx: usize) -> Map<String, Value> {
        let mut low = self.chunks[idx].clone();
        let ret = self.call(&mut low, 1).await;
        self.chunks[idx] = low;
        ret
    }

    /// Whether the chunk at `idx` is being run as a `prereq` (in test mode, into `pre`).
    fn is_prereq(&self, idx: usize) -> bool {
        self.chunks[idx]
            .get("__prereq__")
            .is_some_and(saltq_semantics::python::truthy)
    }

    /// `call_chunk`: checks the chunk's requisites and does what their status says.
    fn call_chunk(&mut self, idx: usize, depth: u32) -> BoxFut<'_, ()> {
        Box::pin(async move {
            let tag = tag_of(&self.chunks[idx]);
            if !self.chunks[idx]
                .get(Requisite::Prerequired.name())
                .is_some_and(saltq_semantics::python::truthy)
            {
                self.active.insert(tag.clone());
            }
            let pre = !self.is_prereq(idx);
            let (status, reqs) = self.check_requisite(idx, pre).await;
            match status {
                ReqStatus::Unmet => return self.unmet(idx, depth, &tag, pre).await,
                ReqStatus::Fail => self.failed_requisite(idx, &tag, &reqs),
                ReqStatus::Change if !self.is_prereq(idx) => {
                    self.watched_change(idx, &tag, &reqs).await;
                }
                ReqStatus::Pre => {
                    let mut ret = not_run("No changes detected", true, self.run_num);
                    copy_ids(&mut ret, &self.chunks[idx].clone());
                    self.pre.insert(tag.clone(), Value::Object(ret.clone()));
                    self.running.insert(tag.clone(), Value::Object(ret));
                    self.run_num += 1;
                }
                ReqStatus::Onfail | ReqStatus::Onchanges => {
                    self.not_triggered(idx, &tag, status);
                }
                ReqStatus::Met | ReqStatus::Change => {
                    let r = self.call_idx(idx).await;
                    if self.is_prereq(idx) || r.contains_key("__prereq_done__") {
                        self.pre.insert(tag.clone(), Value::Object(r));
                    } else {
                        self.running.insert(tag.clone(), Value::Object(r));
                    }
                }
            }
            self.chunk_done(idx, &tag);
        })
    }

    /// After a chunk: drops the `__prereq_done__` mark and sends its event.
    fn chunk_done(&mut self, idx: usize, tag: &str) {
        if let Some(Value::Object(r)) = self.running.get_mut(tag) {
            r.shift_remove("__prereq_done__");
        }
        if let Some(Value::Object(r)) = self.running.get(tag) {
            let r = r.clone();
            let fire = self.chunks[idx].get("fire_event").cloned();
            self.event(&r, fire.as_ref());
        }
        if let Some(Value::Object(r)) = self.pre.get_mut(tag) {
            r.shift_remove("__prereq_done__");
        }
    }

    /// An `onfail`/`onchanges` state whose requisites did not fail/change: not run.
    fn not_triggered(&mut self, idx: usize, tag: &str, status: ReqStatus) {
        let comment = if status == ReqStatus::Onfail {
            "State was not run because onfail req did not change"
        } else {
            "State was not run because none of the onchanges reqs changed"
        };
        let mut ret = not_run(comment, true, self.run_num);
        ret.shift_remove("__run_num__");
        ret.insert("__state_ran__".into(), json!(false));
        ret.insert("__run_num__".into(), json!(self.run_num));
        copy_ids(&mut ret, &self.chunks[idx].clone());
        self.running.insert(tag.to_owned(), Value::Object(ret));
        self.run_num += 1;
    }

    /// A requisite failed: the chunk is not run ("One or more requisite failed"), or its
    /// prereq run's answer stands, without changes.
    fn failed_requisite(&mut self, idx: usize, tag: &str, reqs: &ReqChunks) {
        let low = self.chunks[idx].clone();
        if let Some(Value::Object(mut p)) = self.pre.get(tag).cloned() {
            if p.get("changes")
                .is_some_and(saltq_semantics::python::truthy)
            {
                p.insert("changes".into(), json!({}));
            }
            p.insert("__run_num__".into(), json!(self.run_num));
            copy_ids(&mut p, &low);
            self.running.insert(tag.to_owned(), Value::Object(p));
        } else {
            let mut failed: Vec<String> = Vec::new();
            for i in reqs.iter().flat_map(|(_, idxs)| idxs) {
                let req_low = &self.chunks[*i];
                let req_tag = tag_of(req_low);
                let req_ret = self
                    .pre
                    .get(&req_tag)
                    .or_else(|| self.running.get(&req_tag));
                if req_ret.and_then(|r| r.get("result")) == Some(&json!(false)) {
                    let key = format!(
                        "{}.{}",
                        req_low.get("__sls__").map(py_str).unwrap_or_default(),
                        req_low.get("__id__").map(py_str).unwrap_or_default()
                    );
                    if !failed.contains(&key) {
                        failed.push(key);
                    }
                }
            }
            let comment = format!("One or more requisite failed: {}", failed.join(", "));
            let mut ret = not_run(comment, false, self.run_num);
            copy_ids(&mut ret, &low);
            self.pre.insert(tag.to_owned(), Value::Object(ret.clone()));
            self.running.insert(tag.to_owned(), Value::Object(ret));
        }
        self.run_num += 1;
    }

    /// A watched state changed: the chunk runs, then its `mod_watch` unless it changed
    /// something itself (or said `skip_watch`).
    async fn watched_change(&mut self, idx: usize, tag: &str, reqs: &ReqChunks) {
        let mut ret = self.call_idx(idx).await;
        let changed = ret
            .get("changes")
            .is_some_and(saltq_semantics::python::truthy);
        let skip = ret
            .get("skip_watch")
            .is_some_and(saltq_semantics::python::truthy);
        if !changed && !skip {
            let mut low = self.chunks[idx].clone();
            let sfun = low.get("fun").cloned().unwrap_or(Value::Null);
            low.insert("sfun".into(), sfun);
            low.insert("fun".into(), json!("mod_watch"));
            let mut reqs_v = Map::new();
            for (r, idxs) in reqs {
                let list: Vec<Value> = idxs
                    .iter()
                    .map(|i| {
                        let mut c = self.chunks[*i].clone();
                        let changed = self
                            .running
                            .get(&tag_of(&c))
                            .and_then(|r| r.get("changes"))
                            .is_some_and(saltq_semantics::python::truthy);
                        c.insert("__changed__".into(), json!(changed));
                        Value::Object(c)
                    })
                    .collect();
                reqs_v.insert(r.name().into(), Value::Array(list));
            }
            low.insert("__reqs__".into(), Value::Object(reqs_v));
            ret = self.call(&mut low, 1).await;
        }
        self.running.insert(tag.to_owned(), Value::Object(ret));
    }

    /// Unmet requisites: Salt's "not found" answer when one names nothing, else the chunks
    /// they name run first (a recursion is reported), then this one again.
    async fn unmet(&mut self, idx: usize, depth: u32, tag: &str, pre: bool) {
        let low = self.chunks[idx].clone();
        let (lost, req_idxs) = self.mark_requisites(idx, pre);
        if lost.iter().any(|(_, l)| !l.is_empty()) {
            let n = self.next_run_num();
            let mut ret = not_run(lost_comment(&lost), false, n);
            copy_ids(&mut ret, &low);
            self.event(&ret, low.get("fire_event"));
            if self.is_prereq(idx) {
                self.pre.insert(tag.to_owned(), Value::Object(ret));
            } else {
                self.running.insert(tag.to_owned(), Value::Object(ret));
            }
            return;
        }
        let mut last = idx;
        for ci in req_idxs {
            last = ci;
            let ctag = tag_of(&self.chunks[ci]);
            if self.running.contains_key(&ctag) {
                continue;
            }
            if self.active.contains(&ctag) {
                return self.recursive(idx, tag, ci).await;
            }
            self.call_chunk(ci, 0).await;
            let chunk = self.chunks[ci].clone();
            if self.check_failhard(&chunk) {
                self.running.insert("__FAILHARD__".into(), json!(true));
                return;
            }
        }
        if self.is_prereq(idx) {
            let (status, _) = self.check_requisite(idx, false).await;
            let mut r = self.call_idx(idx).await;
            if status == ReqStatus::Change
                && !r
                    .get("changes")
                    .is_some_and(saltq_semantics::python::truthy)
            {
                r.insert("changes".into(), json!({"watch": "watch"}));
                r.insert("result".into(), Value::Null);
            }
            self.pre.insert(tag.to_owned(), Value::Object(r));
        } else if depth + 1 >= 20 {
            let mut ret = Map::new();
            ret.insert("changes".into(), json!({}));
            ret.insert("result".into(), json!(false));
            ret.insert("comment".into(), json!("Recursive requisite found"));
            ret.insert("__run_num__".into(), json!(self.run_num));
            copy_ids(&mut ret, &self.chunks[idx].clone());
            self.running.insert(tag.to_owned(), Value::Object(ret));
        } else {
            self.call_chunk(idx, depth + 1).await;
        }
        let chunk = self.chunks[last].clone();
        if self.check_failhard(&chunk) {
            self.running.insert("__FAILHARD__".into(), json!(true));
        }
    }

    /// The chunk at `idx` needs `ctag`, which is still being worked on: a prereq cycle
    /// runs this chunk as the prereq, anything else is "Recursive requisite found".
    async fn recursive(&mut self, idx: usize, tag: &str, ci: usize) {
        let ctag = tag_of(&self.chunks[ci]);
        if self.chunks[ci]
            .get("__prerequired__")
            .is_some_and(saltq_semantics::python::truthy)
        {
            if !self.pre.contains_key(tag) {
                self.chunks[idx].insert("__prereq__".into(), json!(true));
                let r = self.call_idx(idx).await;
                self.pre.insert(ctag, Value::Object(r));
            }
            return;
        }
        let low = self.chunks[idx].clone();
        let n = self.run_num;
        let mut ret = Map::new();
        ret.insert("changes".into(), json!({}));
        ret.insert("result".into(), json!(false));
        ret.insert("comment".into(), json!("Recursive requisite found"));
        ret.insert("__run_num__".into(), json!(n));
        copy_ids(&mut ret, &low);
        self.running
            .insert(tag.to_owned(), Value::Object(ret.clone()));
        self.run_num += 1;
        self.event(&ret, low.get("fire_event"));
    }

    /// `call_chunk`'s walk over an unmet chunk's requisites: per requisite, what names no
    /// chunk (Salt's "lost"), and the chunks named, in order, each marked `__prereq__` or
    /// `__prerequired__` as its requisite says.
    fn mark_requisites(&mut self, idx: usize, pre: bool) -> (Lost, Vec<usize>) {
        let low = self.chunks[idx].clone();
        let mut kinds = Requisite::REPORTED.to_vec();
        if pre {
            kinds.push(Requisite::Prerequired);
        }
        let mut lost: Lost = Vec::new();
        let mut req_idxs: Vec<usize> = Vec::new();
        for r in kinds {
            let mut l = Vec::new();
            for req in low
                .get(r.name())
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
            {
                let Some((key, val)) = trim_req(&req) else {
                    continue;
                };
                if val.is_null() {
                    l.push((key, val));
                    continue;
                }
                let found = self.find_reqs(&key, &val);
                for i in &found {
                    if r == Requisite::Prereq {
                        self.chunks[*i].insert("__prereq__".into(), json!(true));
                    } else if r == Requisite::Prerequired && key != "sls" {
                        self.chunks[*i].insert("__prerequired__".into(), json!(true));
                    }
                    req_idxs.push(*i);
                }
                if found.is_empty() {
                    l.push((key, val));
                }
            }
            lost.push((r, l));
        }
        (lost, req_idxs)
    }

    /// `event`: a state's result on the event bus, when `state_events` is on (progress
    /// events) or the state has `fire_event` (`salt/state_result/...`).
    fn event(&self, ret: &Map<String, Value>, fire_event: Option<&Value>) {
        let fire = fire_event.filter(|f| saltq_semantics::python::truthy(f));
        if !self.opts.state_events && fire.is_none() {
            return;
        }
        let Some(events) = &self.ctx.events else {
            return;
        };
        let mut data = Map::new();
        data.insert("ret".into(), Value::Object(ret.clone()));
        let jid = &self.opts.jid;
        let id = &self.opts.minion_id;
        let tag = match fire {
            Some(Value::Bool(true)) => format!(
                "salt/state_result/{jid}/{id}/{}",
                ret.get("name").map(py_str).unwrap_or_default()
            ),
            Some(other) => format!("salt/state_result/{jid}/{id}/{}", py_str(other)),
            None => {
                data.insert("len".into(), json!(self.chunks.len()));
                format!(
                    "salt/job/{jid}/prog/{id}/{}",
                    ret.get("__run_num__").map(py_str).unwrap_or_default()
                )
            }
        };
        events.send(&tag, Value::Object(data));
    }

    /// `verify_data`: what must be right before a chunk can run.
    fn verify_data(low: &mut Map<String, Value>) -> Vec<String> {
        let mut errors = Vec::new();
        for k in ["state", "fun", "name"] {
            if !low.contains_key(k) {
                errors.push(format!("Missing \"{k}\" data"));
            }
        }
        if errors.is_empty() {
            let name = &low["name"];
            if saltq_semantics::python::truthy(name) && !name.is_string() {
                let sls = low
                    .get("__sls__")
                    .map(|s| format!("in SLS '{}' ", py_str(s)))
                    .unwrap_or_default();
                let ty = saltq_semantics::python::type_name(name);
                errors.push(format!(
                    "ID '{}' {sls}is not formed as a string, but is a {ty}",
                    py_str(name)
                ));
            }
        }
        if let Some(umask) = low.shift_remove("umask") {
            match i64::from_str_radix(&py_str(&umask), 8) {
                Ok(v) => {
                    low.insert("__umask__".into(), json!(v));
                }
                Err(_) => errors.push(format!("Invalid umask: {}", py_str(&umask))),
            }
        }
        if !errors.is_empty() {
            return errors;
        }
        let full = format!("{}.{}", py_str(&low["state"]), py_str(&low["fun"]));
        match modules::lookup(&full) {
            None => {
                if let Some(sls) = low.get("__sls__") {
                    errors.push(format!(
                        "State '{full}' was not found in SLS '{}'",
                        py_str(sls)
                    ));
                    errors.push(format!("Reason: '{full}' is not available."));
                } else {
                    errors.push(format!("Specified state '{full}' was not found"));
                }
            }
            Some(f) => {
                for p in f.params.iter().filter(|p| p.default.is_none()) {
                    if !low.contains_key(p.name) {
                        errors.push(format!("Missing parameter {} for state {full}", p.name));
                    }
                }
            }
        }
        let mut reqdec = "";
        let (require, watch) = (Requisite::Require.name(), Requisite::Watch.name());
        if low.contains_key(require) {
            reqdec = require;
        }
        if low.contains_key(watch) {
            if Self::has_mod_watch(low) {
                reqdec = watch;
            } else {
                Self::watch_to_require(low);
                reqdec = require;
            }
        }
        if !reqdec.is_empty() {
            let state = py_str(&low["state"]);
            let name = py_str(&low["name"]);
            let id = low.get("__id__").map(py_str).unwrap_or_default();
            for req in low[reqdec].as_array().cloned().unwrap_or_default() {
                let Some((first, val)) = req.as_object().and_then(|m| m.iter().next()) else {
                    continue;
                };
                if *first == state {
                    let v = py_str(val);
                    if fnmatch(&name, &v) || fnmatch(&id, &v) {
                        errors.push(format!(
                            "Recursive require detected in SLS {} for require {} in ID {id}",
                            low.get("__sls__").map(py_str).unwrap_or_default(),
                            saltq_semantics::python::repr(&req)
                        ));
                    }
                }
            }
        }
        errors
    }

    /// `call`: one state function with its checks, into its result.
    fn call<'a>(
        &'a mut self,
        low: &'a mut Map<String, Value>,
        retries: i64,
    ) -> BoxFut<'a, Map<String, Value>> {
        Box::pin(async move {
            let start = Instant::now();
            let start_time = now_time();
            let errors = Self::verify_data(low);
            if !errors.is_empty() {
                let mut ret = Map::new();
                ret.insert("result".into(), json!(false));
                ret.insert(
                    "name".into(),
                    low.get("name").cloned().unwrap_or(Value::Null),
                );
                ret.insert("changes".into(), json!({}));
                let comment: String = errors.iter().map(|e| format!("{e}\n")).collect();
                ret.insert("comment".into(), json!(comment));
                ret.insert("__run_num__".into(), json!(self.next_run_num()));
                return ret;
            }
            let prereq = low
                .get("__prereq__")
                .is_some_and(saltq_semantics::python::truthy);
            let test = self.opts.test || prereq;
            let name = low["name"].clone();
            let mut ret = Map::new();
            ret.insert("result".into(), json!(false));
            ret.insert("name".into(), name.clone());
            ret.insert("changes".into(), json!({}));
            let mut skip = false;
            if ["unless", "onlyif", "creates"]
                .iter()
                .any(|k| low.contains_key(*k))
            {
                let check = run_check(&self.ctx, low).await;
                ret.insert("result".into(), json!(check.result));
                ret.insert("comment".into(), json!(check.comment.join("\n")));
                for key in ["__sls__", "__id__", "name"] {
                    ret.insert(key.into(), low.get(key).cloned().unwrap_or(Value::Null));
                }
                if let Some(s) = check.skip_watch {
                    ret.insert("skip_watch".into(), json!(s));
                }
                skip = check.result;
            }
            if !skip {
                let full = format!("{}.{}", py_str(&low["state"]), py_str(&low["fun"]));
                let f = modules::lookup(&full).expect("verified above");
                let call = self.state_call(low, f, test);
                let parallel = !prereq
                    && low
                        .get("parallel")
                        .is_some_and(saltq_semantics::python::truthy);
                match call {
                    Err(msg) => {
                        ret = Map::new();
                        ret.insert("result".into(), json!(false));
                        ret.insert("name".into(), name.clone());
                        ret.insert("changes".into(), json!({}));
                        ret.insert(
                            "comment".into(),
                            json!(format!("An exception occurred in this state: {msg}")),
                        );
                    }
                    Ok(mut call) if parallel => {
                        let _ =
                            super::slots::format_call(&self.ctx, &mut call.name, &mut call.args)
                                .await;
                        let handler = f.handler;
                        let pname = name.clone();
                        let retry = low.get("retry").map(verify_retry);
                        let test = self.opts.test;
                        let handle = tokio::spawn(async move {
                            let start = Instant::now();
                            let start_time = now_time();
                            let mut r = to_map(handler(call.clone()).await, &pname);
                            r.insert("start_time".into(), json!(start_time));
                            r.insert("duration".into(), json!(millis(start.elapsed())));
                            r.insert("__parallel__".into(), json!(true));
                            match retry {
                                Some(retry) if !test => {
                                    parallel_retry(r, &retry, handler, call, &pname).await
                                }
                                Some(retry) => {
                                    let comment = r.get("comment").map(py_str).unwrap_or_default();
                                    r.insert(
                                        "comment".into(),
                                        json!(retry_notice(&comment, &retry)),
                                    );
                                    r
                                }
                                None => r,
                            }
                        });
                        self.procs.push((tag_of(low), handle));
                        ret = Map::new();
                        ret.insert("name".into(), name.clone());
                        ret.insert("result".into(), Value::Null);
                        ret.insert("changes".into(), json!({}));
                        ret.insert("comment".into(), json!("Started in a separate process"));
                    }
                    Ok(mut call) => {
                        match super::slots::format_call(&self.ctx, &mut call.name, &mut call.args)
                            .await
                        {
                            Ok(()) => ret = to_map((f.handler)(call).await, &name),
                            Err(msg) => {
                                ret = Map::new();
                                ret.insert("result".into(), json!(false));
                                ret.insert("name".into(), json!(call.name));
                                ret.insert("changes".into(), json!({}));
                                ret.insert(
                                    "comment".into(),
                                    json!(format!("An exception occurred in this state: {msg}")),
                                );
                            }
                        }
                    }
                }
            }
            if low.contains_key("check_cmd") {
                let (result, comment) = run_check_cmd(&self.ctx, low).await;
                ret.insert("result".into(), json!(result));
                ret.insert("comment".into(), json!(comment));
                for key in ["__sls__", "__id__", "name"] {
                    ret.insert(key.into(), low.get(key).cloned().unwrap_or(Value::Null));
                }
            }
            if prereq {
                low.insert("__prereq__".into(), json!(false));
                ret.insert("__prereq_done__".into(), json!(true));
                return ret;
            }
            ret.insert(
                "__sls__".into(),
                low.get("__sls__").cloned().unwrap_or(Value::Null),
            );
            ret.insert("__run_num__".into(), json!(self.next_run_num()));
            self.check_refresh(low);
            ret.insert("start_time".into(), json!(start_time));
            ret.insert("duration".into(), json!(millis(start.elapsed())));
            ret.insert(
                "__id__".into(),
                low.get("__id__").cloned().unwrap_or(Value::Null),
            );
            if low.contains_key("retry") && !low.contains_key("parallel") {
                let retry = verify_retry(&low["retry"]);
                low.insert("retry".into(), retry.clone());
                let until = retry["until"].clone();
                if !self.opts.test {
                    let attempts = retry["attempts"].as_i64().unwrap_or(0);
                    if until != ret["result"] && attempts > retries {
                        let interval = retry_interval(&retry);
                        tokio::time::sleep(Duration::from_secs(interval.max(0) as u64)).await;
                        let orig = ret;
                        let mut again = self.call(low, retries + 1).await;
                        let again_comment = again.get("comment").map(py_str).unwrap_or_default();
                        again.insert(
                            "comment".into(),
                            json!(format!(
                                "Attempt {retries}: Returned a result of \"{}\", with the following comment: \"{}\"\n{}",
                                py_bool(&orig["result"]),
                                orig.get("comment").map(py_str).unwrap_or_default(),
                                again_comment
                            )),
                        );
                        let d = again["duration"].as_f64().unwrap_or(0.0)
                            + orig["duration"].as_f64().unwrap_or(0.0)
                            + (interval * 1000) as f64;
                        again.insert("duration".into(), json!(d));
                        if retries == 1 {
                            again.insert("start_time".into(), orig["start_time"].clone());
                        }
                        ret = again;
                    }
                } else {
                    let comment = ret.get("comment").map(py_str).unwrap_or_default();
                    ret.insert("comment".into(), json!(retry_notice(&comment, &retry)));
                }
            }
            ret
        })
    }

    /// `check_refresh`: `reload_grains` and `reload_pillar` refresh the minion's data before
    /// the next state (`reload_modules` has nothing to reload here).
    fn check_refresh(&self, low: &Map<String, Value>) {
        let on = |k: &str| low.get(k).is_some_and(saltq_semantics::python::truthy);
        if on("reload_grains") {
            self.ctx.jobs.refresh_grains();
        }
        if on("reload_pillar") {
            self.ctx.jobs.refresh_pillar();
        }
    }

    /// The call a state function gets: Salt's `format_call` over the chunk.
    fn state_call(
        &self,
        low: &Map<String, Value>,
        f: &modules::StateFunction,
        test: bool,
    ) -> Result<StateCall, String> {
        let mut args = Map::new();
        let mut extra = Vec::new();
        for (k, v) in low {
            // As Salt's `format_call`: a runtime keyword the function names as a parameter
            // (`salt.state`'s `saltenv` and `failhard`, `cmd.run`'s `runas`) reaches it too.
            let named = f.params.iter().any(|p| p.name == k);
            if k == "name" || (is_internal(k) && !named) {
                continue;
            }
            if f.kwargs || named {
                args.insert(k.clone(), v.clone());
            } else {
                extra.push(k.clone());
            }
        }
        // file.accumulated reads its require_in/watch_in from the low chunk, as in Salt.
        if f.name == "file.accumulated" {
            for k in [Requisite::Require, Requisite::Watch].map(|r| r.keyword(Direction::In)) {
                let Some(k) = k else { continue };
                if let Some(v) = low.get(k) {
                    args.insert(k.into(), v.clone());
                }
            }
        }
        if !extra.is_empty() {
            let quoted: Vec<String> = extra.iter().map(|e| format!("'{e}'")).collect();
            return Err(if extra.len() == 1 {
                format!(
                    "{} is an invalid keyword argument for '{}'",
                    quoted[0], f.name
                )
            } else {
                format!(
                    "{} and {} are invalid keyword arguments for '{}'",
                    quoted[..quoted.len() - 1].join(", "),
                    quoted[quoted.len() - 1],
                    f.name
                )
            });
        }
        let saltenv = low
            .get("saltenv")
            .or_else(|| low.get("__env__"))
            .map(py_str)
            .unwrap_or_else(|| {
                if self.opts.saltenv.is_empty() {
                    "base".into()
                } else {
                    self.opts.saltenv.clone()
                }
            });
        Ok(StateCall {
            ctx: self.ctx.clone(),
            name: py_str(&low["name"]),
            args,
            test,
            saltenv,
            sls: low.get("__sls__").map(py_str).unwrap_or_default(),
            id: low.get("__id__").map(py_str).unwrap_or_default(),
            accumulators: self.accumulators.clone(),
        })
    }

    /// `call_listen`: each `listen`/`listen_in` whose target changed runs the listener's
    /// `mod_watch` at the end, as `listener_<id>`.
    async fn call_listen(
        &mut self,
        chunks: &[Map<String, Value>],
        mut running: Map<String, Value>,
    ) -> Map<String, Value> {
        let key_of = |c: &Map<String, Value>| {
            (
                c.get("state").map(py_str).unwrap_or_default(),
                c.get("__id__").map(py_str).unwrap_or_default(),
                c.get("name").map(py_str).unwrap_or_default(),
            )
        };
        let mut crefs: Vec<(CrefKey, Map<String, Value>)> = Vec::new();
        let mut listeners: Vec<((String, String, String), Vec<Value>)> = Vec::new();
        for chunk in chunks {
            let k = key_of(chunk);
            match crefs.iter_mut().find(|(c, _)| *c == k) {
                Some(slot) => slot.1 = chunk.clone(),
                None => crefs.push((k.clone(), chunk.clone())),
            }
            if let Some(l) = chunk.get(Requisite::Listen.name()) {
                listeners.push((k.clone(), l.as_array().cloned().unwrap_or_default()));
            }
            if let Some(Value::Array(l_in)) = Requisite::Listen
                .keyword(Direction::In)
                .and_then(|k| chunk.get(k))
            {
                for item in l_in {
                    if let Value::Object(m) = item {
                        for (key, val) in m {
                            listeners.push((
                                (key.clone(), py_str(val), "lookup".into()),
                                vec![json!({k.0.clone(): k.1.clone()})],
                            ));
                        }
                    }
                }
            }
        }
        let in_cref = |c: &(String, String, String), v: &str| c.0 == v || c.1 == v || c.2 == v;
        let mut mod_watchers = Vec::new();
        let mut errors: Vec<(String, Map<String, Value>)> = Vec::new();
        let add_error = |errors: &mut Vec<(String, Map<String, Value>)>, lkey: &str, lval: &str| {
            let tag = format!("Listen_Error_|-listen_{lval}_|-listen_{lkey}_|-Listen_Error");
            let mut m = Map::new();
            m.insert(
                "comment".into(),
                json!(format!("Referenced state {lkey}: {lval} does not exist")),
            );
            m.insert("name".into(), json!(format!("listen_{lkey}:{lval}")));
            m.insert("result".into(), json!(false));
            m.insert("changes".into(), json!({}));
            errors.retain(|(t, _)| *t != tag);
            errors.push((tag, m));
        };
        for (key, val) in listeners {
            for listen_to in val {
                let listen_to = match listen_to {
                    Value::Object(m) => m,
                    other => {
                        let s = py_str(&other);
                        let mut found = None;
                        for chunk in chunks {
                            if chunk.get("__id__").map(py_str).as_deref() == Some(&s)
                                || chunk.get("name").map(py_str).as_deref() == Some(&s)
                            {
                                let mut m = Map::new();
                                m.insert(
                                    chunk.get("state").map(py_str).unwrap_or_default(),
                                    chunk.get("__id__").cloned().unwrap_or(Value::Null),
                                );
                                found = Some(m);
                            }
                        }
                        match found {
                            Some(m) => m,
                            None => continue,
                        }
                    }
                };
                for (lkey, lval) in listen_to {
                    let lval = py_str(&lval);
                    let lkey = lkey.split('.').next().unwrap_or(&lkey).to_owned();
                    if !crefs.iter().any(|(c, _)| c.0 == lkey && in_cref(c, &lval)) {
                        add_error(&mut errors, &lkey, &lval);
                        continue;
                    }
                    let to_tags: Vec<String> = crefs
                        .iter()
                        .filter(|(c, _)| c.0 == lkey && in_cref(c, &lval))
                        .map(|(_, d)| tag_of(d))
                        .collect();
                    for to_tag in to_tags {
                        let Some(r) = running.get(&to_tag) else {
                            continue;
                        };
                        if !r
                            .get("changes")
                            .is_some_and(saltq_semantics::python::truthy)
                        {
                            continue;
                        }
                        if !crefs
                            .iter()
                            .any(|(c, _)| key.0 == c.0 && in_cref(c, &key.1))
                        {
                            add_error(&mut errors, &key.0, &key.1);
                            continue;
                        }
                        for (_, chunk) in crefs
                            .iter()
                            .filter(|(c, _)| key.0 == c.0 && in_cref(c, &key.1))
                        {
                            let mut low = chunk.clone();
                            let sfun = low.get("fun").cloned().unwrap_or(Value::Null);
                            low.insert("sfun".into(), sfun);
                            low.insert("fun".into(), json!("mod_watch"));
                            let id = low.get("__id__").map(py_str).unwrap_or_default();
                            low.insert("__id__".into(), json!(format!("listener_{id}")));
                            for req in Requisite::state_keywords() {
                                low.shift_remove(req);
                            }
                            mod_watchers.push(low);
                        }
                    }
                }
            }
        }
        let ret = self.call_chunks(mod_watchers).await;
        for (k, v) in ret {
            running.insert(k, v);
        }
        for (tag, mut m) in errors {
            m.insert("__run_num__".into(), json!(self.next_run_num()));
            running.insert(tag, Value::Object(m));
        }
        running
    }
}

/// A chunk as `call_listen` looks it up: (state, id, name).
type CrefKey = (String, String, String);

/// Python's `str()` of a bool-or-None result.
fn py_bool(v: &Value) -> String {
    match v {
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        other => py_str(other),
    }
}

/// The comment of a state that would be retried, in test mode.
fn retry_notice(comment: &str, retry: &Value) -> String {
    format!(
        "{comment}  The state would be retried every {} seconds (with a splay of up to {} \
         seconds) a maximum of {} times or until a result of {} is returned",
        retry["interval"],
        retry["splay"],
        retry["attempts"],
        py_bool(&retry["until"])
    )
}

/// A pause of `interval` seconds plus up to `splay` more.
fn retry_interval(retry: &Value) -> i64 {
    let mut interval = retry["interval"].as_i64().unwrap_or(30);
    let splay = retry["splay"].as_i64().unwrap_or(0);
    if splay > 0 {
        interval += (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .subsec_nanos() as i64)
            % (splay + 1);
    }
    interval
}

/// `retry` of a parallel state (`_call_parallel_target`): the function called again in
/// place until its result is `until`, each attempt noted with the new answer's result and
/// comment, as Salt words it there.
async fn parallel_retry(
    mut ret: Map<String, Value>,
    retry: &Value,
    handler: modules::StateHandler,
    call: StateCall,
    name: &Value,
) -> Map<String, Value> {
    let attempts = retry["attempts"].as_i64().unwrap_or(0);
    let mut retries = 1;
    while attempts >= retries {
        if retry["until"] == ret["result"] {
            break;
        }
        let interval = retry_interval(retry);
        tokio::time::sleep(Duration::from_secs(interval.max(0) as u64)).await;
        let mut again = to_map(handler(call.clone()).await, name);
        again.insert("duration".into(), json!(0.0));
        let comment = again.get("comment").map(py_str).unwrap_or_default();
        let note = if comment.is_empty() {
            String::new()
        } else {
            format!(
                "Attempt {retries}: Returned a result of \"{}\", with the following comment: \"{comment}\"",
                py_bool(&again["result"])
            )
        };
        let orig = ret;
        again.insert(
            "comment".into(),
            json!(format!(
                "{}\n{note}",
                orig.get("comment").map(py_str).unwrap_or_default()
            )),
        );
        let d = orig["duration"].as_f64().unwrap_or(0.0) + (interval * 1000) as f64;
        again.insert("duration".into(), json!(d));
        if retries == 1
            && let Some(t) = orig.get("start_time")
        {
            again.insert("start_time".into(), t.clone());
        }
        ret = again;
        retries += 1;
    }
    ret
}

/// `verify_retry_data`.
fn verify_retry(v: &Value) -> Value {
    let defaults = json!({"until": true, "attempts": 2, "splay": 0, "interval": 30});
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for key in ["until", "attempts", "interval", "splay"] {
                let ok = match (key, m.get(key)) {
                    ("until", Some(Value::Bool(_))) => true,
                    (_, Some(Value::Number(n))) if key != "until" => n.is_i64(),
                    _ => false,
                };
                out.insert(
                    key.into(),
                    if ok {
                        m[key].clone()
                    } else {
                        defaults[key].clone()
                    },
                );
            }
            Value::Object(out)
        }
        Value::Bool(false) => json!({"until": true, "attempts": 0, "splay": 0, "interval": 30}),
        _ => defaults,
    }
}

/// The `extra` key by which a state function whose Salt dict literal is not
/// `{name, changes, result, comment}` gives its key order (`["name", "result", ...]`);
/// never shown.
pub const KEY_ORDER: &str = "__key_order__";

/// A state function's answer as Salt's return dict.
fn to_map(r: Result<modules::Ret, modules::StateError>, name: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    match r {
        Ok(ret) => {
            m.insert("name".into(), json!(ret.name));
            m.insert("changes".into(), Value::Object(ret.changes));
            m.insert(
                "result".into(),
                ret.result.map(Value::Bool).unwrap_or(Value::Null),
            );
            m.insert("comment".into(), json!(ret.comment));
            let order = ret.extra.get(KEY_ORDER).cloned();
            for (k, v) in ret.extra {
                if k != KEY_ORDER {
                    m.insert(k, v);
                }
            }
            if let Some(Value::Array(order)) = order {
                let mut sorted = Map::new();
                for k in order.iter().filter_map(Value::as_str) {
                    if let Some(v) = m.shift_remove(k) {
                        sorted.insert(k.to_owned(), v);
                    }
                }
                sorted.extend(m);
                m = sorted;
            }
        }
        Err(e) => {
            m.insert("result".into(), json!(false));
            m.insert("name".into(), name.clone());
            m.insert("changes".into(), json!({}));
            m.insert("comment".into(), json!(e.0));
        }
    }
    m
}
