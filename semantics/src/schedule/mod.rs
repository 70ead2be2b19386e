//! Salt's scheduler without I/O (`salt/utils/schedule.py`, 3007.8): which scheduled jobs
//! are due at `now`. The schedule is Salt's data (a map of job name to options, plus the
//! global `enabled`, `splay`, `skip_function` and `skip_during_range` keys); what Salt keeps
//! in each job's `_`-prefixed keys (`_next_fire_time`, `_splay`, `_seconds`, `_last_run`,
//! `_skip_reason`, ...) lives in [`Scheduler`], fed with the time. Times are naive local
//! wall times, as Salt's `datetime.datetime.now()`: the driver passes the host's local time,
//! so a DST change moves the wall clock under the schedule exactly as it does under Salt.
//! Randomness (`splay`) comes from a seeded generator, so a test replays it.

pub mod book;
pub mod cron;
pub mod when;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use chrono::{NaiveDate, NaiveDateTime, Timelike};
use serde_json::{Map, Value, json};

use crate::python::truthy;

/// The schedule's global keys, never jobs.
pub const GLOBAL_KEYS: [&str; 4] = ["enabled", "skip_function", "skip_during_range", "splay"];

/// The time format of `once`, `run_explicit`, `skip_explicit` and `show_next_fire_time`.
pub const TIME_FMT: &str = "%Y-%m-%dT%H:%M:%S";

const TIME_ELEMENTS: [&str; 4] = ["seconds", "minutes", "hours", "days"];

/// What Salt keeps in a job's `_` keys between evaluations.
#[derive(Debug, Clone, Default, PartialEq)]
struct Runtime {
    /// The job's options when this state was made: a changed job starts afresh, as Salt's
    /// does when `modify`, `add` or a pillar refresh replace its dict.
    config: Map<String, Value>,
    next_fire: Option<NaiveDateTime>,
    next_scheduled: Option<NaiveDateTime>,
    splay: Option<NaiveDateTime>,
    seconds: Option<i64>,
    last_run: Option<NaiveDateTime>,
    run_on_start: Option<bool>,
    /// `when`'s `_run`: the next `when` time is still to be run.
    when_run: Option<bool>,
    /// The `run_explicit` times `run_after_skip_range` added.
    run_after: Vec<NaiveDateTime>,
    skip_reason: Option<&'static str>,
    skipped_time: Option<NaiveDateTime>,
    error: Option<String>,
    /// What the options say, read once when they change rather than at each evaluation.
    shape: Shape,
    /// `cron` parsed once (`None`: not read yet; `Some(None)`: croniter would refuse it).
    cron: Option<Option<cron::Cron>>,
    /// `when`'s times as last read: the day they were read on (a time without a date is
    /// that day's) and each item's text (after the `whens` lookup) with its time, so an
    /// evaluation parses a `when` string once a day, not once a tick.
    when_cache: Option<(NaiveDate, Vec<WhenItem>)>,
    /// The job's fire as its options make it (name, function, arguments, returners), built
    /// once: a fire clones it and sets what the evaluation decided.
    template: Option<Fire>,
}

/// One `when` item as last read: its text (after the `whens` lookup) and its time, `None`
/// when dateutil would refuse it.
type WhenItem = (String, Option<NaiveDateTime>);

impl Runtime {
    /// A fresh state for a job with options `data`.
    fn for_job(data: &Map<String, Value>) -> Runtime {
        Runtime {
            config: data.clone(),
            shape: Shape::of(data),
            ..Runtime::default()
        }
    }
}

/// Which timing a job uses, in Salt's order of precedence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Timing {
    /// None of the timing options: the job never runs.
    #[default]
    None,
    /// `seconds`/`minutes`/`hours`/`days`.
    Interval,
    /// `once`.
    Once,
    /// `when`.
    When,
    /// `cron`.
    Cron,
}

/// The facts about a job's options each evaluation asks, read once per change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Shape {
    timing: Timing,
    /// `when` is set (it matters to the splay even when an interval wins).
    when: bool,
    cron: bool,
    once: bool,
    /// How many of `when`, `cron` and `once` are set: more than one is Salt's error.
    kinds: usize,
    run_explicit: bool,
    run_on_start: bool,
    /// The job's own `splay` is set.
    splay: bool,
    /// The job's `enabled` (true unless false).
    enabled: bool,
    /// `jid_include` (true unless false).
    jid_include: bool,
    /// `maxrunning` (1 unless set).
    maxrunning: i64,
    /// An enabled interval or cron job with no splay and no explicit runs: between its
    /// fire times an evaluation changes nothing (see [`Scheduler::idle`]).
    plain: bool,
}

impl Shape {
    fn of(data: &Map<String, Value>) -> Shape {
        let interval = TIME_ELEMENTS.iter().any(|k| data.has(k));
        let (when, cron, once) = (data.has("when"), data.has("cron"), data.has("once"));
        let timing = if interval {
            Timing::Interval
        } else if once {
            Timing::Once
        } else if when {
            Timing::When
        } else if cron {
            Timing::Cron
        } else {
            Timing::None
        };
        Shape {
            timing,
            when,
            cron,
            once,
            kinds: usize::from(when) + usize::from(cron) + usize::from(once),
            run_explicit: data.has("run_explicit"),
            run_on_start: data.opt("run_on_start").is_some_and(truthy),
            splay: data.has("splay"),
            enabled: data.opt("enabled").is_none_or(truthy),
            jid_include: data.opt("jid_include").is_none_or(truthy),
            maxrunning: data.opt("maxrunning").and_then(py_int).unwrap_or(1),
            plain: plain(data),
        }
    }
}

/// One job to start now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fire {
    /// The job's name (`schedule` in its return).
    pub name: String,
    /// The function (`function`, `func` or `fun`; `skip_function` when a range swapped it).
    pub func: String,
    /// Positional arguments (`args`).
    pub args: Vec<Value>,
    /// Keyword arguments (`kwargs`).
    pub kwargs: Map<String, Value>,
    /// Whether the job is listed among the running jobs with a jid (`jid_include`).
    pub jid_include: bool,
    /// Returner names (`returner`, a string or a list).
    pub returners: Vec<String>,
    /// `return_config`, passed to the returners.
    pub return_config: Option<Value>,
    /// `return_kwargs`, passed to the returners.
    pub return_kwargs: Option<Value>,
    /// Whether the return goes to the master (`return_job`, true unless false); `nocache`
    /// asks the master not to store it.
    pub return_job: ReturnJob,
    /// `metadata`, when a dict.
    pub metadata: Option<Map<String, Value>>,
    /// Seconds the run is late by (Salt's "runtime missed by N seconds"), 0 when on time.
    pub missed_by: i64,
}

/// Where a scheduled job's return goes, from `return_job`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReturnJob {
    /// To the master, stored in the job cache (the default).
    #[default]
    Master,
    /// To the master, not stored (`nocache`).
    NoCache,
    /// Not sent (`return_job: False`).
    No,
}

/// What an evaluation knows besides the schedule: the time, the `whens` lookups and the
/// running jobs.
pub struct Eval<'a> {
    /// The local wall time.
    pub now: NaiveDateTime,
    /// The pillar's `whens` (names for `when` times), if any.
    pub pillar_whens: Option<&'a Value>,
    /// The grains' `whens`, if any.
    pub grain_whens: Option<&'a Value>,
    /// How many instances of the named scheduled job are running (for `maxrunning`).
    pub running: &'a dyn Fn(&str) -> usize,
}

/// The state Salt's scheduler keeps between evaluations, and the evaluation itself.
#[derive(Debug, Clone)]
pub struct Scheduler {
    /// Salt's `loop_interval` in seconds (1 on a minion): the window a `when`/`once` time
    /// may be late by.
    loop_interval: i64,
    jobs: BTreeMap<String, Runtime>,
    rng: Rng,
}

/// splitmix64: a small, seeded generator (Salt uses `random.randint`).
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `random.randint(a, b)`, both ends included.
    fn randint(&mut self, a: i64, b: i64) -> i64 {
        let span = (b - a + 1).max(1) as u64;
        a + (self.next_u64() % span) as i64
    }

    /// Salt's `_splay`: `randint(1, n)` for an int, `randint(start, end)` for a dict;
    /// `None` for an inverted dict (Salt logs it and ignores the splay).
    fn splay(&mut self, cfg: &Value) -> Option<i64> {
        match cfg {
            Value::Object(m) => {
                let start = m.opt("start").and_then(py_int)?;
                let end = m.opt("end").and_then(py_int)?;
                (end >= start).then(|| self.randint(start, end))
            }
            v => py_int(v).filter(|n| *n >= 1).map(|n| self.randint(1, n)),
        }
    }
}

/// Why an evaluation step stopped looking at a job.
enum Stop {
    /// Nothing to do now (Salt's `_continue`).
    Continue,
    /// The job is wrong; Salt's message.
    Error(String),
}

type Step<T> = Result<T, Stop>;

fn err<T>(msg: String) -> Step<T> {
    Err(Stop::Error(msg))
}

fn chop(t: NaiveDateTime) -> NaiveDateTime {
    t.with_nanosecond(0).unwrap_or(t)
}

/// A job's options looked up by a walk, not a hash: a job has a few dozen keys at most,
/// and a scheduler evaluates its jobs' options many times a second of simulated time.
trait Opts {
    /// The option `key`, if set.
    fn opt(&self, key: &str) -> Option<&Value>;
    /// Whether the option `key` is set.
    fn has(&self, key: &str) -> bool {
        self.opt(key).is_some()
    }
}

impl Opts for Map<String, Value> {
    fn opt(&self, key: &str) -> Option<&Value> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

/// Python's `int()` of an option (ints, floats truncated, numeric strings).
fn py_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

/// The function a job runs (`function`, `func`, then `fun`).
pub fn job_function(data: &Map<String, Value>) -> Option<&str> {
    ["function", "func", "fun"]
        .iter()
        .find_map(|k| data.opt(k))
        .and_then(Value::as_str)
}

impl Scheduler {
    /// An empty state: `loop_interval` in seconds, `seed` for the splay's randomness.
    pub fn new(loop_interval: i64, seed: u64) -> Self {
        Scheduler {
            loop_interval: loop_interval.max(1),
            jobs: BTreeMap::new(),
            rng: Rng(seed),
        }
    }

    /// Whether evaluating the job at `now` can only find it not due: a plain job (see
    /// [`plain`]) whose next fire time is still ahead in whole seconds, under an enabled
    /// schedule with no global splay. Salt evaluates it anyway and finds the same;
    /// skipping the evaluation is what lets a virtual-time driver jump thousands of days of
    /// a large schedule at the cost of its fires alone. Clears the last evaluation's skip
    /// and error as the evaluation would.
    fn idle(rt: &mut Runtime, now: NaiveDateTime, g: &Globals) -> bool {
        if !g.enabled || g.splay.is_some() {
            return false;
        }
        let ahead = rt.next_fire.is_some_and(|t| chop(t) > chop(now));
        let quiet =
            rt.shape.plain && ahead && rt.run_on_start != Some(true) && rt.run_after.is_empty();
        if !quiet {
            return false;
        }
        rt.error = None;
        rt.skip_reason = None;
        rt.skipped_time = None;
        true
    }

    /// Salt's `eval(now)`: every job due at `ev.now`, in the schedule's order. Updates the
    /// next fire times, skips and errors (see [`Scheduler::status`]).
    pub fn due(&mut self, schedule: &Map<String, Value>, ev: &Eval) -> Vec<Fire> {
        let globals = Globals::of(schedule);
        let li = self.loop_interval;
        let mut fires = Vec::new();
        // Jobs with a state that are still in the schedule: when fewer than all, some left.
        let mut kept = 0;
        for (name, data) in schedule {
            if GLOBAL_KEYS.contains(&name.as_str()) {
                continue;
            }
            let known = self.jobs.contains_key(name);
            kept += usize::from(known);
            let Value::Object(data) = data else {
                continue;
            };
            if !known {
                self.jobs.insert(name.clone(), Runtime::for_job(data));
            }
            let Some(rt) = self.jobs.get_mut(name) else {
                continue;
            };
            // A job whose options changed starts afresh, as Salt's does when `modify`,
            // `add` or a pillar refresh replace its dict.
            if !same_job(&rt.config, data) {
                *rt = Runtime::for_job(data);
            }
            if Self::idle(rt, ev.now, &globals) {
                continue;
            }
            if let Some(f) = eval::eval_job(rt, &mut self.rng, li, name, data, ev, &globals) {
                fires.push(f);
            }
        }
        if kept < self.jobs.len() {
            self.jobs.retain(|name, _| schedule.contains_key(name));
        }
        fires
    }

    /// The next time the job fires, as Salt's `_next_fire_time`.
    pub fn next_fire_time(&self, name: &str) -> Option<NaiveDateTime> {
        self.jobs.get(name).and_then(|r| r.splay.or(r.next_fire))
    }

    /// The error that made the job be ignored at the last evaluation, in Salt's words.
    pub fn error(&self, name: &str) -> Option<&str> {
        self.jobs.get(name).and_then(|r| r.error.as_deref())
    }

    /// Why the job was skipped at the last evaluation (`disabled`, `maxrunning`,
    /// `not_in_range`, `in_skip_range`, `skip_explicit`, `until_passed`, `after_not_passed`).
    pub fn skip_reason(&self, name: &str) -> Option<&'static str> {
        self.jobs.get(name).and_then(|r| r.skip_reason)
    }

    /// The job's `_` keys as Salt's `job_status` shows them, times as `TIME_FMT` strings.
    pub fn status(&self, name: &str) -> Map<String, Value> {
        let mut m = Map::new();
        let Some(r) = self.jobs.get(name) else {
            return m;
        };
        let t = |v: Option<NaiveDateTime>| {
            v.map_or(Value::Null, |t| json!(t.format(TIME_FMT).to_string()))
        };
        m.insert("_next_fire_time".into(), t(r.next_fire));
        m.insert("_splay".into(), t(r.splay));
        if r.next_scheduled.is_some() {
            m.insert("_next_scheduled_fire_time".into(), t(r.next_scheduled));
        }
        if let Some(s) = r.seconds {
            m.insert("_seconds".into(), json!(s));
        }
        if r.last_run.is_some() {
            m.insert("_last_run".into(), t(r.last_run));
        }
        if let Some(reason) = r.skip_reason {
            m.insert("_skip_reason".into(), json!(reason));
            m.insert("_skipped_time".into(), t(r.skipped_time));
            m.insert("_skipped".into(), json!(true));
        }
        if let Some(e) = &r.error {
            m.insert("_error".into(), json!(e));
        }
        m
    }
}

/// Whether two jobs' options are equal: a walk in order first (a job unchanged between
/// evaluations keeps its order), then the map comparison.
fn same_job(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len() && (a.iter().zip(b).all(|(x, y)| x == y) || a == b)
}

/// Whether a job's options make it plain: enabled, timed by an interval or by `cron` alone
/// (no `when`, no `once`), with no `splay` and no `run_explicit`. Its evaluation between
/// fire times only finds that the time has not come.
fn plain(data: &Map<String, Value>) -> bool {
    let interval = TIME_ELEMENTS.iter().any(|k| data.has(k));
    let cron = data.has("cron");
    interval != cron
        && !data.has("when")
        && !data.has("once")
        && !data.has("splay")
        && !data.has("run_explicit")
        && data.opt("enabled").is_none_or(truthy)
}

/// The schedule's global options, borrowed from the schedule.
struct Globals<'s> {
    enabled: bool,
    splay: Option<&'s Value>,
    skip_function: Option<&'s str>,
    skip_during_range: Option<&'s Value>,
}

impl<'s> Globals<'s> {
    /// Read in one walk of the schedule's keys (jobs included: a walk of string compares
    /// costs less than four hash lookups).
    fn of(schedule: &'s Map<String, Value>) -> Globals<'s> {
        let mut g = Globals {
            enabled: true,
            splay: None,
            skip_function: None,
            skip_during_range: None,
        };
        for (k, v) in schedule {
            match k.as_str() {
                "enabled" => g.enabled = truthy(v),
                "splay" => g.splay = Some(v).filter(|v| truthy(v)),
                "skip_function" => g.skip_function = v.as_str(),
                "skip_during_range" => g.skip_during_range = Some(v).filter(|v| truthy(v)),
                _ => {}
            }
        }
        g
    }
}

mod eval;

/// The job `name` as `schedule.run_job` starts it: now, whatever its timing.
pub fn fire_now(name: &str, data: &Map<String, Value>) -> Fire {
    let func = job_function(data).unwrap_or_default().to_owned();
    let jid_include = data.opt("jid_include").is_none_or(truthy);
    eval::fire(data, name.to_owned(), func, jid_include, 0.0)
}
