//! Salt's beacons (`salt/beacons/`): small watchers the minion polls every `loop_interval`,
//! each firing events on `salt/beacon/<id>/<name>/<tag>` when what it watches crosses a
//! threshold or changes. Adding a beacon means adding its file and one line to [`BEACONS`].
//!
//! Each beacon keeps its previous reading itself (Salt's `__context__` and module globals).
//! Its decision (what changed, which threshold was crossed) is a pure function of its config,
//! that previous state and the new reading, tested without the system; reading the system
//! (`/proc`, inotify, `systemctl`, `dpkg-query`) is a separate step of its `poll`.
//!
//! [`Runner`] is Salt's `salt.beacons.Beacon.process`: which configured beacon runs on this
//! tick (`enabled`, `interval`, `disable_during_state_run`, `run_once`), validation, and the
//! events' tags and data. [`Manager`] holds the minion's `beacons` config for `beacons.*`.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use serde_json::{Map, Value};

use saltq_semantics::python::{self, truthy};

use crate::context::CallContext;

#[cfg(test)]
mod differential;
mod diskusage;
mod inotify;
mod journald;
mod load;
mod log_beacon;
mod manage;
mod memusage;
mod network_info;
mod pkg;
mod ps;
mod service;
mod status;

pub use manage::{Change, Manager, saved_file};

/// What a beacon's poll answers: the events' data (a `tag` key is the tag's suffix), or an
/// error (Salt's exception text), which fires an empty event on the beacon's bare tag.
pub type PollFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<Value>, String>> + Send + 'a>>;

/// One configured beacon: Salt's `validate`, `beacon` and `close` functions of its module.
pub trait Beacon: Send {
    /// Salt's `validate(config)`: `Err` holds its comment when the config is refused.
    fn validate(&self, config: &Value) -> Result<(), String>;

    /// Salt's `beacon(config)`: reads the system, decides, and answers the events' data.
    /// `config` is the beacon's list, `enabled`, `interval` and the like already removed.
    fn poll<'a>(&'a mut self, config: &'a [Value], ctx: &'a CallContext) -> PollFuture<'a>;

    /// Salt's `close(config)`: lets go of what the beacon holds (inotify's watches).
    fn close(&mut self) {}
}

/// A beacon module in the table: its name and how to make a fresh instance.
pub struct Kind {
    /// The module's name (`inotify`, `diskusage`, ...), as `beacon_module` names it.
    pub name: &'static str,
    /// A new instance, with no previous reading.
    pub make: fn() -> Box<dyn Beacon>,
}

/// Every beacon module.
pub const BEACONS: &[Kind] = &[
    Kind {
        name: "diskusage",
        make: || Box::new(diskusage::DiskUsage),
    },
    Kind {
        name: "inotify",
        make: || Box::<inotify::Inotify>::default(),
    },
    Kind {
        name: "journald",
        make: || Box::<journald::Journald>::default(),
    },
    Kind {
        name: "load",
        make: || Box::<load::Load>::default(),
    },
    Kind {
        name: "log",
        make: || Box::<log_beacon::LogBeacon>::default(),
    },
    Kind {
        name: "memusage",
        make: || Box::new(memusage::MemUsage),
    },
    Kind {
        name: "network_info",
        make: || Box::new(network_info::NetworkInfo),
    },
    Kind {
        name: "pkg",
        make: || Box::<pkg::Pkg>::default(),
    },
    Kind {
        name: "ps",
        make: || Box::new(ps::Ps),
    },
    Kind {
        name: "service",
        make: || Box::<service::Service>::default(),
    },
    Kind {
        name: "status",
        make: || Box::new(status::Status),
    },
];

/// The names of the beacon modules, sorted (`beacons.list_available`).
pub fn available() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = BEACONS.iter().map(|k| k.name).collect();
    names.sort_unstable();
    names
}

fn kind(name: &str) -> Option<&'static Kind> {
    BEACONS.iter().find(|k| k.name == name)
}

/// Salt's `list_to_dict`: a beacon's list of one-key dicts as one dict (later keys win).
pub fn list_to_dict(config: &[Value]) -> Map<String, Value> {
    let mut out = Map::new();
    for item in config {
        if let Value::Object(m) = item {
            out.extend(m.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    out
}

/// Salt's `remove_hidden_options`: the items whose keys start with `_` dropped.
pub fn remove_hidden(config: &[Value]) -> Vec<Value> {
    config
        .iter()
        .filter(|item| {
            !item
                .as_object()
                .is_some_and(|m| m.keys().any(|k| k.starts_with('_')))
        })
        .cloned()
        .collect()
}

/// The beacon's config as a list, or Salt's "must be a list" comment.
pub(crate) fn as_list<'a>(config: &'a Value, name: &str) -> Result<&'a [Value], String> {
    config
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| format!("Configuration for {name} beacon must be a list."))
}

/// A threshold written `90%`, `90` or `90.5`, as Salt's beacons read it.
pub(crate) fn percent(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => s.replace('%', "").trim().parse().ok(),
        other => number(other),
    }
}

/// A number, or a string holding one, as Python's `float()` reads it.
pub(crate) fn number(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => python::float_of(s),
        other => other.as_f64(),
    }
}

/// What [`plan`] decided for one configured beacon on this tick.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Run the beacon module `module` with this config (hidden and runner keys removed).
    Run {
        /// The configured name (the tag's `<name>`).
        name: String,
        /// The beacon module (`beacon_module`, else the name).
        module: String,
        /// The config list the beacon gets.
        config: Value,
        /// Disable the beacon after this run (`run_once`).
        run_once: bool,
    },
    /// A state run is in progress and the beacon has `disable_during_state_run`: close it.
    Close {
        /// The configured name.
        name: String,
    },
}

/// Salt's `Beacon.process` up to the call: which beacons run on this tick. `intervals` is
/// Salt's `interval_map` (ticks counted per beacon), `loop_interval` the seconds between
/// ticks, `state_running` whether a `state.*` job runs now.
pub fn plan(
    config: &Map<String, Value>,
    intervals: &mut BTreeMap<String, u64>,
    loop_interval: f64,
    state_running: bool,
) -> Vec<Step> {
    if config.get("enabled").is_some_and(|e| !truthy(e)) {
        return Vec::new();
    }
    let mut steps = Vec::new();
    for (name, raw) in config {
        if name == "enabled" {
            continue;
        }
        let settings = match raw {
            Value::Array(list) => list_to_dict(list),
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        if settings.get("enabled").is_some_and(|e| !truthy(e)) {
            continue;
        }
        let trimmed = trim(raw, &["enabled", "interval", "disable_during_state_run"]);
        let module = match settings.get("beacon_module") {
            Some(m) if truthy(m) => python::str(m),
            _ => name.clone(),
        };
        if let Some(interval) = settings.get("interval").filter(|v| truthy(v)) {
            let every = number(interval).unwrap_or(0.0);
            if !interval_reached(intervals, name, every, loop_interval) {
                continue;
            }
        }
        if settings.get("disable_during_state_run").is_some_and(truthy) && state_running {
            steps.push(Step::Close { name: name.clone() });
            continue;
        }
        steps.push(Step::Run {
            name: name.clone(),
            module,
            config: trimmed,
            run_once: settings.get("run_once").is_some_and(truthy),
        });
    }
    steps
}

/// Salt's `_process_interval`: the first tick only starts the count; then the beacon runs
/// once `count * loop_interval` reaches `every`, and the count starts again at 1.
fn interval_reached(
    intervals: &mut BTreeMap<String, u64>,
    name: &str,
    every: f64,
    loop_interval: f64,
) -> bool {
    match intervals.get_mut(name) {
        Some(count) => {
            if *count as f64 * loop_interval >= every {
                *count = 1;
                true
            } else {
                *count += 1;
                false
            }
        }
        None => {
            intervals.insert(name.to_owned(), 1);
            false
        }
    }
}

/// The beacon's config without the items Salt's process takes out before the call.
fn trim(raw: &Value, keys: &[&str]) -> Value {
    match raw {
        Value::Array(list) => Value::Array(
            list.iter()
                .filter(|item| {
                    !item
                        .as_object()
                        .is_some_and(|m| m.keys().any(|k| keys.contains(&k.as_str())))
                })
                .cloned()
                .collect(),
        ),
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !keys.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The event a beacon's data makes: tag `salt/beacon/<id>/<name>/` plus the data's `tag`
/// (taken out of the data), and `id` added when the data has none.
pub fn event(id: &str, name: &str, data: Value) -> (String, Value) {
    let mut tag = format!("salt/beacon/{id}/{name}/");
    let mut data = match data {
        Value::Object(m) => m,
        other => {
            let mut m = Map::new();
            m.insert("data".into(), other);
            m
        }
    };
    if let Some(t) = data.shift_remove("tag") {
        tag.push_str(&python::str(&t));
    }
    if !data.contains_key("id") {
        data.insert("id".into(), Value::String(id.to_owned()));
    }
    (tag, Value::Object(data))
}

/// What one tick produced: the events to fire and the beacons to disable (`run_once`).
#[derive(Debug, Default)]
pub struct Tick {
    /// `(tag, data)` per event, in order.
    pub events: Vec<(String, Value)>,
    /// Beacons that ran with `run_once`.
    pub run_once: Vec<String>,
    /// What Salt logs on the way (invalid configs, errors), for the minion's log.
    pub logs: Vec<String>,
}

impl Tick {
    fn log(&mut self, line: String) {
        self.logs.push(line);
    }
}

/// The beacons of one minion across ticks: each configured beacon's instance (its previous
/// reading) and Salt's interval counts.
#[derive(Default)]
pub struct Runner {
    instances: BTreeMap<String, Box<dyn Beacon>>,
    intervals: BTreeMap<String, u64>,
}

impl Runner {
    /// One tick of Salt's `process`: runs the beacons due and answers their events.
    pub async fn tick(
        &mut self,
        config: &Map<String, Value>,
        ctx: &CallContext,
        loop_interval: f64,
        state_running: bool,
    ) -> Tick {
        let id = ctx
            .opt("id")
            .map(python::str)
            .unwrap_or_else(|| "minion".into());
        // Beacons no longer configured let go of what they hold.
        let gone: Vec<String> = self
            .instances
            .keys()
            .filter(|n| !config.contains_key(n.as_str()))
            .cloned()
            .collect();
        for name in gone {
            if let Some(mut b) = self.instances.remove(&name) {
                b.close();
            }
        }
        let mut tick = Tick::default();
        for step in plan(config, &mut self.intervals, loop_interval, state_running) {
            match step {
                Step::Close { name } => {
                    if let Some(b) = self.instances.get_mut(&name) {
                        tick.log(format!("closing beacon {name}: a state run is in progress"));
                        b.close();
                    }
                }
                Step::Run {
                    name,
                    module,
                    config,
                    run_once,
                } => {
                    self.run_one(&id, &name, &module, &config, ctx, &mut tick)
                        .await;
                    if run_once {
                        tick.run_once.push(name);
                    }
                }
            }
        }
        tick
    }

    async fn run_one(
        &mut self,
        id: &str,
        name: &str,
        module: &str,
        config: &Value,
        ctx: &CallContext,
        tick: &mut Tick,
    ) {
        let Some(k) = kind(module) else {
            tick.log(format!(
                "unable to process beacon {name}: no beacon module {module:?}"
            ));
            return;
        };
        let instance = self
            .instances
            .entry(name.to_owned())
            .or_insert_with(|| (k.make)());
        if let Err(comment) = instance.validate(config) {
            tick.log(format!(
                "beacon {name} configuration invalid, not running: {comment}"
            ));
            return;
        }
        let list = config.as_array().cloned().unwrap_or_default();
        match instance.poll(&list, ctx).await {
            Ok(all) => tick
                .events
                .extend(all.into_iter().map(|data| event(id, name, data))),
            Err(error) => {
                tick.log(format!("unable to start {name} beacon, {error}"));
                tick.events.push((
                    format!("salt/beacon/{id}/{name}/"),
                    Value::Object(Map::new()),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cfg(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn interval_counts_ticks_as_salt() {
        // loop_interval 1, interval 3: the first tick starts the count, then every third.
        let c = cfg(json!({"load": [{"averages": {}}, {"interval": 3}]}));
        let mut intervals = BTreeMap::new();
        let ran: Vec<bool> = (0..8)
            .map(|_| !plan(&c, &mut intervals, 1.0, false).is_empty())
            .collect();
        assert_eq!(
            ran,
            [false, false, false, true, false, false, true, false],
            "Salt: tick 1 inserts 1, runs when count*loop >= interval"
        );
    }

    #[test]
    fn enabled_and_state_runs_decide_what_runs() {
        let c = cfg(json!({
            "enabled": true,
            "ps": [{"processes": {"sshd": "running"}}, {"enabled": false}],
            "load": [{"averages": {}}, {"disable_during_state_run": true}],
            "mine": [{"beacon_module": "diskusage"}, {"/": "50%"}, {"run_once": true}],
        }));
        let mut iv = BTreeMap::new();
        let steps = plan(&c, &mut iv, 1.0, true);
        assert_eq!(
            steps,
            vec![
                Step::Close {
                    name: "load".into()
                },
                Step::Run {
                    name: "mine".into(),
                    module: "diskusage".into(),
                    config: json!([{"beacon_module": "diskusage"}, {"/": "50%"}, {"run_once": true}]),
                    run_once: true,
                },
            ]
        );
        let steps = plan(&c, &mut iv, 1.0, false);
        assert!(matches!(&steps[0], Step::Run { name, config, .. }
            if name == "load" && *config == json!([{"averages": {}}])));
        let off = cfg(json!({"enabled": false, "load": [{"averages": {}}]}));
        assert!(plan(&off, &mut iv, 1.0, false).is_empty());
    }

    #[test]
    fn events_take_their_tag_and_id() {
        assert_eq!(
            event(
                "m1",
                "inotify",
                json!({"tag": "/tmp/d", "path": "/tmp/d/f", "change": "IN_CREATE"})
            ),
            (
                "salt/beacon/m1/inotify//tmp/d".to_owned(),
                json!({"path": "/tmp/d/f", "change": "IN_CREATE", "id": "m1"})
            )
        );
        assert_eq!(
            event("m1", "load", json!({"1m": 0.5, "id": "other"})),
            (
                "salt/beacon/m1/load/".to_owned(),
                json!({"1m": 0.5, "id": "other"})
            )
        );
    }

    #[test]
    fn hidden_options_and_lists() {
        let l = vec![
            json!({"_beacon_name": "x"}),
            json!({"a": 1}),
            json!({"a": 2, "b": 3}),
        ];
        assert_eq!(
            remove_hidden(&l),
            vec![json!({"a": 1}), json!({"a": 2, "b": 3})]
        );
        assert_eq!(
            Value::Object(list_to_dict(&l)),
            json!({"_beacon_name": "x", "a": 2, "b": 3})
        );
        assert_eq!(percent(&json!("90%")), Some(90.0));
        assert_eq!(percent(&json!(12.5)), Some(12.5));
        assert_eq!(
            available(),
            [
                "diskusage",
                "inotify",
                "journald",
                "load",
                "log",
                "memusage",
                "network_info",
                "pkg",
                "ps",
                "service",
                "status"
            ]
        );
    }
}
