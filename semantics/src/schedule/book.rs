//! The schedule's entries and how `schedule.*` changes them (Salt's `Schedule.add_job`,
//! `delete_job`, `modify_job`, `enable_job`, ..., `persist`, and `schedule.list`'s view),
//! without I/O: the minion keeps a [`Book`], applies requests to it, writes
//! [`Book::persisted`] to `minion.d/_schedule.conf` and evaluates [`Book::merged`].

use serde_json::{Map, Value, json};

use super::{GLOBAL_KEYS, Scheduler, TIME_FMT};
use crate::python::truthy;

/// The keys `schedule.list` shows of a job (Salt's `SCHEDULE_CONF`).
pub const SCHEDULE_CONF: [&str; 28] = [
    "name",
    "maxrunning",
    "function",
    "splay",
    "range",
    "when",
    "once",
    "once_fmt",
    "returner",
    "jid_include",
    "args",
    "kwargs",
    "_seconds",
    "seconds",
    "minutes",
    "hours",
    "days",
    "enabled",
    "return_job",
    "metadata",
    "cron",
    "until",
    "after",
    "return_config",
    "return_kwargs",
    "run_on_start",
    "skip_during_range",
    "run_after_skip_range",
];

/// The schedule from config and run-time changes (Salt's `opts["schedule"]`); the pillar's
/// schedule is passed in where it counts, since it is refreshed apart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Book {
    /// The jobs and global keys, in insertion order.
    pub opts: Map<String, Value>,
}

/// What a change did, for the log (Salt logs a warning for pillar jobs and does nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The book changed.
    Done,
    /// The job lives in the pillar: not changed.
    InPillar,
    /// No such job: nothing changed.
    Missing,
}

impl Book {
    /// A book over the config's `schedule` (a dict) and the saved `_schedule.conf` jobs on
    /// top; an error names what is not a dict.
    pub fn new(config: Option<&Value>, saved: Option<&Value>) -> Result<Book, String> {
        let mut opts = Map::new();
        for (what, v) in [("schedule", config), ("_schedule.conf schedule", saved)] {
            match v {
                None | Some(Value::Null) => {}
                Some(Value::Object(m)) => opts.extend(m.clone()),
                Some(other) => {
                    return Err(format!(
                        "{what} must be of type dict, not {}",
                        crate::python::type_name(other)
                    ));
                }
            }
        }
        Ok(Book { opts })
    }

    /// Salt's `_get_schedule()`: the pillar's jobs, then the config's over them.
    pub fn merged(&self, pillar: &Map<String, Value>) -> Map<String, Value> {
        let mut m = pillar.clone();
        m.extend(self.opts.clone());
        m
    }

    fn pillar_only(&self, name: &str, pillar: &Map<String, Value>) -> bool {
        !self.opts.contains_key(name) && pillar.contains_key(name)
    }

    /// `add_job`: a new job, or new settings for one; `enabled` defaults to true.
    pub fn add(
        &mut self,
        name: &str,
        mut job: Map<String, Value>,
        pillar: &Map<String, Value>,
    ) -> Change {
        if pillar.contains_key(name) {
            return Change::InPillar;
        }
        job.entry("enabled").or_insert(json!(true));
        self.opts.insert(name.to_owned(), Value::Object(job));
        Change::Done
    }

    /// `delete_job`.
    pub fn delete(&mut self, name: &str, pillar: &Map<String, Value>) -> Change {
        if self.opts.shift_remove(name).is_some() {
            Change::Done
        } else if pillar.contains_key(name) {
            Change::InPillar
        } else {
            Change::Missing
        }
    }

    /// `modify_job`: the job's settings replaced.
    pub fn modify(
        &mut self,
        name: &str,
        job: Map<String, Value>,
        pillar: &Map<String, Value>,
    ) -> Change {
        if self.pillar_only(name, pillar) {
            return Change::InPillar;
        }
        self.opts.insert(name.to_owned(), Value::Object(job));
        Change::Done
    }

    /// `enable_job`/`disable_job`.
    pub fn set_job_enabled(&mut self, name: &str, on: bool, pillar: &Map<String, Value>) -> Change {
        match self.opts.get_mut(name) {
            Some(Value::Object(job)) => {
                job.insert("enabled".into(), json!(on));
                Change::Done
            }
            _ if pillar.contains_key(name) => Change::InPillar,
            _ => Change::Missing,
        }
    }

    /// `enable_schedule`/`disable_schedule`.
    pub fn set_enabled(&mut self, on: bool) {
        self.opts.insert("enabled".into(), json!(on));
    }

    /// `reload`: the saved jobs over the current ones.
    pub fn reload(&mut self, saved: &Value) {
        let saved = saved.get("schedule").unwrap_or(saved);
        if let Value::Object(m) = saved {
            self.opts.extend(m.clone());
        }
    }

    /// `skip_job` (and half of `postpone_job`): skip the run at `time`.
    pub fn push_explicit(
        &mut self,
        name: &str,
        key: &str,
        time: &str,
        fmt: &str,
        pillar: &Map<String, Value>,
    ) -> Change {
        match self.opts.get_mut(name) {
            Some(Value::Object(job)) => {
                let list = job.entry(key).or_insert_with(|| json!([]));
                if let Value::Array(a) = list {
                    a.push(json!({"time": time, "time_fmt": fmt}));
                }
                Change::Done
            }
            _ if pillar.contains_key(name) => Change::InPillar,
            _ => Change::Missing,
        }
    }

    /// What `persist` writes to `_schedule.conf`: `{"schedule": ...}` without `_` keys.
    pub fn persisted(&self) -> Value {
        let mut out = Map::new();
        for (k, v) in &self.opts {
            let v = match v {
                Value::Object(job) => Value::Object(
                    job.iter()
                        .filter(|(k, _)| !k.starts_with('_'))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                ),
                v => v.clone(),
            };
            out.insert(k.clone(), v);
        }
        json!({ "schedule": out })
    }
}

/// What [`Book::manage`] did with a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Managed {
    /// The data of the completion event Salt's scheduler fires, which `schedule.*` reads.
    pub answer: Value,
    /// The book changed and the request asks for it to be saved (`persist`, true unless
    /// false).
    pub save: bool,
}

impl Book {
    /// Salt's `manage_schedule` (`salt/minion.py`) for the requests that read or change the
    /// schedule alone: `list` (the caller adds `saved`), `add`, `delete`, `modify`,
    /// `enable_job`, `disable_job`, `enable`, `disable`, `postpone_job`, `skip_job`,
    /// `get_next_fire_time` and `job_status`, over the pillar's jobs and the scheduler's
    /// state. `None` for what needs the driver: `save_schedule`, `reload`, `run_job`, or a
    /// request Salt does not know.
    pub fn manage(
        &mut self,
        req: &Value,
        pillar: &Map<String, Value>,
        sched: &Scheduler,
    ) -> Option<Managed> {
        let func = req["func"].as_str().unwrap_or_default();
        let name = req["name"].as_str().unwrap_or_default();
        let persist = req.get("persist").is_none_or(truthy);
        let obj = |v: &Value| v.as_object().cloned().unwrap_or_default();
        let answer = |save: bool, answer: Value| Some(Managed { answer, save });
        match func {
            "list" => {
                let sched = match req["where"].as_str() {
                    Some("pillar") => pillar.clone(),
                    Some("opts") => self.opts.clone(),
                    _ => self.merged(pillar),
                };
                return answer(false, json!({"complete": true, "schedule": sched}));
            }
            "add" => {
                for (n, job) in obj(&req["schedule"]) {
                    self.add(&n, obj(&job), pillar);
                }
            }
            "delete" => _ = self.delete(name, pillar),
            "modify" => _ = self.modify(name, obj(&req["schedule"]), pillar),
            "enable_job" | "disable_job" => {
                _ = self.set_job_enabled(name, func == "enable_job", pillar)
            }
            "enable" | "disable" => self.set_enabled(func == "enable"),
            "postpone_job" | "skip_job" => {
                let fmt = req["time_fmt"].as_str().unwrap_or(TIME_FMT);
                let time = req["time"].as_str().unwrap_or_default();
                self.push_explicit(name, "skip_explicit", time, fmt, pillar);
                if func == "postpone_job" {
                    let new_time = req["new_time"].as_str().unwrap_or_default();
                    self.push_explicit(name, "run_explicit", new_time, fmt, pillar);
                }
                // Salt changes the job in memory and does not persist it.
                return answer(
                    false,
                    json!({"complete": true, "schedule": self.merged(pillar)}),
                );
            }
            "get_next_fire_time" => {
                let t = sched
                    .next_fire_time(name)
                    .map(|t| t.format(TIME_FMT).to_string());
                return answer(false, json!({"complete": true, "next_fire_time": t}));
            }
            "job_status" => {
                let mut data = self.merged(pillar).get(name).map(obj).unwrap_or_default();
                if !data.is_empty() {
                    data.insert("name".into(), json!(name));
                    data.extend(sched.status(name));
                }
                return answer(false, json!({"complete": true, "data": data}));
            }
            _ => return None,
        }
        answer(
            persist,
            json!({"complete": true, "schedule": self.merged(pillar)}),
        )
    }
}

/// `schedule.list`'s view of a schedule: jobs named `__*` hidden unless `show_all`, only
/// `SCHEDULE_CONF` keys, `enabled` filled in, `None` values dropped, `"true"`/`"false"`
/// read as booleans, disabled jobs dropped unless `show_disabled`; `saved` marks each job
/// found in `_schedule.conf` when `saved` is given (the YAML form).
pub fn list_view(
    schedule: &Map<String, Value>,
    show_all: bool,
    show_disabled: bool,
    saved: Option<&Map<String, Value>>,
) -> Map<String, Value> {
    let mut out = Map::new();
    for (name, job) in schedule {
        if GLOBAL_KEYS[..3].contains(&name.as_str()) {
            out.insert(name.clone(), job.clone());
            continue;
        }
        if name.starts_with("__") && !show_all {
            continue;
        }
        let Value::Object(job) = job else {
            out.insert(name.clone(), job.clone());
            continue;
        };
        let mut view = Map::new();
        view.insert("name".into(), json!(name));
        for (k, v) in job {
            if !SCHEDULE_CONF.contains(&k.as_str()) || k == "_seconds" || v.is_null() {
                continue;
            }
            let v = match v.as_str() {
                Some("true") => json!(true),
                Some("false") => json!(false),
                _ => v.clone(),
            };
            view.insert(k.clone(), v);
        }
        view.entry("enabled").or_insert(json!(true));
        if !show_disabled && !view["enabled"].as_bool().unwrap_or(true) {
            continue;
        }
        if let Some(saved) = saved {
            view.insert("saved".into(), json!(saved.contains_key(name)));
        }
        out.insert(name.clone(), Value::Object(view));
    }
    out
}
