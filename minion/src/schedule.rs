//! The minion's scheduler (Salt's `Schedule` in the minion process): the schedule from the
//! config's `schedule`, `minion.d/_schedule.conf` and the pillar's `schedule`, a one-second
//! tick (Salt's `loop_interval`) asking the pure core (`semantics::schedule`) what is due,
//! and each due job run as a job of its own: a jid, listed by `saltutil.running` when
//! `jid_include`, its return sent to the master as Salt's scheduled returns are (jid `req`,
//! so the master gives it a jid and stores it, or the job's own jid when it has returners,
//! which then see that jid; the job's name rides along for the `schedule` field of
//! `salt/job/<jid>/ret/<id>`). `return_job: False` sends nothing to the master; the
//! returners still run. `schedule.*` reaches it through [`ScheduleControl`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use saltq_exec::{CallContext, PubInfo, ScheduleControl};
use saltq_proto::v1 as pb;
use saltq_semantics::JidGenerator;
use saltq_semantics::python::truthy;
use saltq_semantics::schedule::book::Book;
use saltq_semantics::schedule::{Eval, Fire, ReturnJob, Scheduler, fire_now};
use saltq_transport::value;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, watch};

use crate::config::MinionConfig;
use crate::daemon::Outgoing;
use crate::jobs::Jobs;

/// The key of a return's `metadata` that carries the scheduled job's name to the master,
/// which moves it to the `schedule` field of the return event.
pub const SCHEDULE_KEY: &str = "__schedule__";

/// The tick: Salt's minion `loop_interval` default.
const TICK: Duration = Duration::from_secs(1);

/// The schedule, its state and what running a job needs.
pub struct MinionSchedule {
    state: Mutex<State>,
    /// `<config dir>/minion.d/_schedule.conf`.
    conf: PathBuf,
    id: String,
    /// The minion's config: its returners, for a job whose return stays on the minion.
    cfg: Arc<MinionConfig>,
    /// The job context, with this scheduler in it (set once built).
    ctx: OnceLock<CallContext>,
    jobs: Arc<Jobs>,
    ret_tx: mpsc::UnboundedSender<Outgoing>,
    /// Running instances by job name, for `maxrunning`.
    running: Mutex<HashMap<String, usize>>,
    jids: Mutex<JidGenerator>,
    /// Itself, for `run_job` (a job task holds the scheduler).
    me: OnceLock<Weak<MinionSchedule>>,
}

struct State {
    book: Book,
    sched: Scheduler,
    /// The last error logged per job, so each is logged once.
    logged: HashMap<String, String>,
}

/// The `__mine_interval` job Salt's minion adds when the mine is enabled.
fn mine_job(cfg: &MinionConfig) -> Option<Map<String, Value>> {
    let o = &cfg.opts;
    if !o.get("mine_enabled").is_none_or(truthy) {
        return None;
    }
    let minutes = o.get("mine_interval").cloned().unwrap_or(json!(60));
    let return_job = o.get("mine_return_job").cloned().unwrap_or(json!(false));
    json!({"function": "mine.update", "minutes": minutes, "jid_include": true,
           "maxrunning": 2, "run_on_start": true, "return_job": return_job, "enabled": true})
    .as_object()
    .cloned()
}

/// Salt's `config.merge(key, omit_master=True)`: the option from the config (a string as
/// is), a list or dict from the config merged with the pillar's (the config's entries win),
/// else the pillar's.
fn config_merge(opts: &Value, pillar: &Value, key: &str) -> Option<Value> {
    let mine = opts.get(key).filter(|v| !v.is_null());
    let theirs = pillar.get(key).filter(|v| !v.is_null());
    match (mine, theirs) {
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            Some(Value::Array(a.iter().chain(b).cloned().collect()))
        }
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut m = b.clone();
            m.extend(a.iter().map(|(k, v)| (k.clone(), v.clone())));
            Some(Value::Object(m))
        }
        (Some(v), _) => Some(v.clone()),
        (None, v) => v.cloned(),
    }
}

/// The returners a scheduled job's return goes to, as Salt's `handle_func` lists them: the
/// job's `returner` then `schedule_returner` (each a name or a list), first occurrence kept.
fn returners_of(job: &[String], schedule_returner: Option<&Value>) -> Vec<String> {
    let extra: Vec<String> = match schedule_returner {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let mut out: Vec<String> = Vec::new();
    for name in job.iter().chain(&extra) {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// The jid a scheduled return is sent under: the job's own when it has returners (they saw
/// it), else Salt's `req` (the master gives it one and stores it) or `nocache` (the master
/// announces it and stores nothing).
fn return_jid<'a>(returners: &[String], return_job: ReturnJob, own: &'a str) -> &'a str {
    match (returners.is_empty(), return_job) {
        (false, _) => own,
        (true, ReturnJob::NoCache) => "nocache",
        (true, _) => "req",
    }
}

/// Whether the scheduler may evaluate: Salt's minion creates and starts it once connected to
/// a master, unless `scheduler_before_connect` runs it from the start.
fn may_evaluate(before_connect: bool, connected_once: bool) -> bool {
    before_connect || connected_once
}

/// Reads `_schedule.conf`: its `schedule` dict, `None` when there is no file.
fn read_saved(conf: &Path) -> Result<Option<Value>, String> {
    let doc: Option<Value> =
        saltq_transport::config::load_yaml(conf, false).map_err(|e| e.to_string())?;
    Ok(doc.and_then(|d| d.get("schedule").cloned()))
}

/// Builds the scheduler over `ctx`, starts its tick (at the first `welcomed`, unless
/// `scheduler_before_connect`) and hands back `ctx` with it attached.
pub fn start(
    cfg: &Arc<MinionConfig>,
    ctx: CallContext,
    jobs: &Arc<Jobs>,
    ret_tx: &mpsc::UnboundedSender<Outgoing>,
    mut welcomed: watch::Receiver<bool>,
) -> CallContext {
    let dir = cfg.file.parent().map(PathBuf::from).unwrap_or_default();
    let conf = dir.join("minion.d").join("_schedule.conf");
    let saved = read_saved(&conf).unwrap_or_else(|e| {
        tracing::error!("schedule not restored: {e}");
        None
    });
    let mut book = Book::new(cfg.opts.get("schedule"), saved.as_ref()).unwrap_or_else(|e| {
        tracing::error!("schedule ignored: {e}");
        Book::default()
    });
    match mine_job(cfg) {
        Some(job) => _ = book.add("__mine_interval", job, &Map::new()),
        None => _ = book.delete("__mine_interval", &Map::new()),
    }
    let seed = std::process::id() as u64
        ^ cfg
            .id
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31) ^ b as u64);
    let me = Arc::new(MinionSchedule {
        state: Mutex::new(State {
            book,
            sched: Scheduler::new(TICK.as_secs() as i64, seed),
            logged: HashMap::new(),
        }),
        conf,
        id: cfg.id.clone(),
        cfg: cfg.clone(),
        ctx: OnceLock::new(),
        jobs: jobs.clone(),
        ret_tx: ret_tx.clone(),
        running: Mutex::new(HashMap::new()),
        jids: Mutex::new(JidGenerator::new(None)),
        me: OnceLock::new(),
    });
    let _ = me.me.set(Arc::downgrade(&me));
    let ctx = ctx.with_schedule(me.clone());
    let _ = me.ctx.set(ctx.clone());
    let ticker = Arc::downgrade(&me);
    let before_connect = cfg.opts.get("scheduler_before_connect").is_some_and(truthy);
    tokio::spawn(async move {
        let connected = *welcomed.borrow();
        if !may_evaluate(before_connect, connected) && welcomed.wait_for(|w| *w).await.is_err() {
            return;
        }
        let mut every = tokio::time::interval(TICK);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            every.tick().await;
            let Some(me) = ticker.upgrade() else { break };
            if me.ret_tx.is_closed() {
                break;
            }
            for fire in me.due(chrono::Local::now().naive_local()) {
                me.clone().spawn(fire);
            }
        }
    });
    ctx
}

impl MinionSchedule {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pillar_schedule(&self) -> Map<String, Value> {
        self.ctx
            .get()
            .map(|c| c.pillar())
            .and_then(|p| p.get("schedule").and_then(Value::as_object).cloned())
            .unwrap_or_default()
    }

    /// One evaluation at `now`: the jobs to start.
    fn due(&self, now: chrono::NaiveDateTime) -> Vec<Fire> {
        let pillar = self.pillar_schedule();
        let (pw, gw) = match self.ctx.get() {
            Some(c) => (
                c.pillar().get("whens").cloned(),
                c.grains().get("whens").cloned(),
            ),
            None => (None, None),
        };
        let running = |name: &str| {
            let r = self.running.lock().unwrap_or_else(|e| e.into_inner());
            r.get(name).copied().unwrap_or(0)
        };
        let mut st = self.lock();
        let merged = st.book.merged(&pillar);
        let ev = Eval {
            now,
            pillar_whens: pw.as_ref(),
            grain_whens: gw.as_ref(),
            running: &running,
        };
        let fires = st.sched.due(&merged, &ev);
        for name in merged.keys() {
            let Some(e) = st.sched.error(name).map(str::to_owned) else {
                continue;
            };
            if st.logged.get(name) != Some(&e) {
                tracing::error!(job = %name, "{e}");
                st.logged.insert(name.clone(), e);
            }
        }
        fires
    }

    fn next_jid(&self) -> String {
        let mut g = self.jids.lock().unwrap_or_else(|e| e.into_inner());
        g.next(chrono::Utc::now()).to_string()
    }

    fn count(&self, name: &str, delta: isize) {
        let mut r = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let n = r.entry(name.to_owned()).or_default();
        *n = n.saturating_add_signed(delta);
    }

    /// Runs one scheduled job in its own task, as Salt's `handle_func` does.
    fn spawn(self: Arc<Self>, mut fire: Fire) {
        let Some(base) = self.ctx.get() else { return };
        let ctx = base.for_job();
        let pillar = ctx.pillar();
        let schedule_returner = config_merge(&ctx.opts, &pillar, "schedule_returner");
        fire.returners = returners_of(&fire.returners, schedule_returner.as_ref());
        let jid = self.next_jid();
        tracing::info!(job = %fire.name, %jid, missed_by = fire.missed_by, "running scheduled job");
        let ret = fire.returners.join(",");
        if fire.jid_include {
            let info = json!({"pid": std::process::id(), "fun": fire.func, "arg": fire.args,
                "tgt": self.id, "jid": jid, "ret": ret, "tgt_type": "glob", "user": "root",
                "schedule": fire.name});
            self.jobs.start(&jid, info, ctx.processes.clone());
        }
        self.count(&fire.name, 1);
        tokio::spawn(async move {
            let publ = PubInfo {
                jid: jid.clone(),
                tgt: json!(self.id),
                tgt_type: "glob".into(),
                ret: ret.clone(),
                user: "root".into(),
                arg: fire.args.clone(),
            };
            let o = saltq_exec::call(
                &ctx,
                &fire.func,
                fire.args.clone(),
                fire.kwargs.clone(),
                &publ,
            )
            .await;
            self.count(&fire.name, -1);
            if fire.jid_include {
                self.jobs.returned(&jid);
                self.jobs.acknowledged(&jid);
            }
            let out = self.outgoing(&fire, o, &jid);
            match fire.return_job {
                ReturnJob::No if fire.returners.is_empty() => {}
                // Salt calls the returners, then leaves the master out.
                ReturnJob::No => self.return_here(&fire, out).await,
                _ => _ = self.ret_tx.send(out),
            }
        });
    }

    /// `return_job: False` with returners: Salt's `handle_func` calls the job's returners
    /// (and no others: the minion's `return` option is for published jobs) with the return
    /// under the job's own jid and the job's name, then sends nothing to the master.
    async fn return_here(&self, fire: &Fire, out: Outgoing) {
        let Some(set) = self.cfg.returner_set.as_ref() else {
            return;
        };
        let r = &out.req;
        let load = json!({
            "id": out.id, "jid": r.jid, "fun": fire.func, "schedule": fire.name,
            "fun_args": value::from_list(r.fun_args.as_ref()),
            "return": r.r#return.as_ref().map(value::from_prost).unwrap_or(Value::Null),
            "retcode": r.retcode, "success": r.success,
        });
        let kwargs = out.ret_kwargs.as_ref().map(value::struct_to_map);
        let ret_config = (!out.ret_config.is_empty()).then_some(out.ret_config.as_str());
        for name in &fire.returners {
            if let Err(e) = set.returner(name, &load, ret_config, kwargs.as_ref()).await {
                tracing::error!(returner = %name, jid = %r.jid, "returner failed: {e}");
            }
        }
    }

    /// The return as Salt's scheduled job sends it: `fun_args` the args then the kwargs, jid
    /// `req` (the master gives it one) or `nocache` unless the job has returners (then its
    /// own `jid`, the one the returners see), the job's name for the `schedule` field.
    fn outgoing(&self, fire: &Fire, o: saltq_exec::CallOutcome, jid: &str) -> Outgoing {
        let mut fun_args = fire.args.clone();
        if !fire.kwargs.is_empty() {
            fun_args.push(Value::Object(fire.kwargs.clone()));
        }
        let mut metadata = fire.metadata.clone().unwrap_or_default();
        metadata.insert(SCHEDULE_KEY.into(), json!(fire.name));
        let req = pb::ReturnRequest {
            jid: return_jid(&fire.returners, fire.return_job, jid).to_owned(),
            fun: vec![fire.func.clone()],
            fun_args: Some(value::to_list(&fun_args)),
            r#return: Some(value::to_prost(&o.ret)),
            retcode: o.retcode,
            success: o.success,
            out: o.out.unwrap_or_default().to_owned(),
            metadata: Some(value::json_to_struct(&Value::Object(metadata))),
        };
        let s = |v: &Option<Value>| {
            v.as_ref()
                .map(saltq_semantics::python::str)
                .unwrap_or_default()
        };
        Outgoing {
            req,
            id: self.id.clone(),
            ret: fire.returners.join(","),
            ret_config: s(&fire.return_config),
            ret_kwargs: fire.return_kwargs.as_ref().map(value::json_to_struct),
        }
    }

    /// Writes the schedule (without the pillar's jobs) to `_schedule.conf`.
    fn persist(&self, book: &Book) {
        let text = saltq_semantics::output::render(
            saltq_semantics::output::Outputter::Yaml,
            &book.persisted(),
            &saltq_semantics::output::OutputOptions::default(),
        );
        let write = || -> std::io::Result<()> {
            if let Some(dir) = self.conf.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let tmp = self.conf.with_extension("conf.tmp");
            std::fs::write(&tmp, text.as_bytes())?;
            std::fs::rename(&tmp, &self.conf)
        };
        if let Err(e) = write() {
            tracing::error!(
                "failed to persist the updated schedule to {}: {e}",
                self.conf.display()
            );
        }
    }
}

impl ScheduleControl for MinionSchedule {
    fn manage(&self, req: Value) -> Value {
        let func = req["func"].as_str().unwrap_or_default().to_owned();
        let name = req["name"].as_str().unwrap_or_default().to_owned();
        let pillar = self.pillar_schedule();
        let mut st = self.lock();
        let State { book, sched, .. } = &mut *st;
        if let Some(done) = book.manage(&req, &pillar, sched) {
            if done.save {
                self.persist(book);
            }
            let mut answer = done.answer;
            if func == "list" {
                answer["saved"] = read_saved(&self.conf).ok().flatten().unwrap_or(json!({}));
            }
            return answer;
        }
        match func.as_str() {
            "save_schedule" => {
                self.persist(book);
                json!({"complete": true})
            }
            // Salt's `schedule.reload` reads `minion.d/schedule.conf` (not the
            // `_schedule.conf` it saves to): nothing when there is no such file, a failure
            // when it holds no schedule.
            "reload" => {
                let file = self.conf.with_file_name("schedule.conf");
                if !file.is_file() {
                    return json!({"complete": true, "reloaded": false});
                }
                match read_saved(&file) {
                    Ok(Some(saved)) if saved.as_object().is_some_and(|m| !m.is_empty()) => {
                        book.reload(&saved);
                        json!({"complete": true, "reloaded": true})
                    }
                    Ok(_) => json!({"complete": true, "reloaded": false, "empty": true}),
                    Err(e) => json!({"complete": false, "error": e}),
                }
            }
            "run_job" => {
                let data = book
                    .merged(&pillar)
                    .get(&name)
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                drop(st);
                let fire = fire_now(&name, &data);
                let busy = self
                    .running
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&name)
                    .copied()
                    .unwrap_or(0);
                let max = data
                    .get("maxrunning")
                    .and_then(Value::as_i64)
                    .unwrap_or(1)
                    .max(0) as usize;
                if !(fire.jid_include && busy >= max)
                    && let Some(me) = self.me.get().and_then(Weak::upgrade)
                {
                    me.spawn(fire);
                }
                json!({"complete": true})
            }
            other => {
                json!({"complete": false, "error": format!("unknown schedule request {other:?}")})
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_returner_merges_as_config_merge_and_follows_the_jobs_returners() {
        let opts = json!({"schedule_returner": ["redis", "syslog"]});
        let pillar = json!({"schedule_returner": ["syslog", "pgjsonb"]});
        let merged = config_merge(&opts, &pillar, "schedule_returner");
        assert_eq!(
            merged,
            Some(json!(["redis", "syslog", "syslog", "pgjsonb"]))
        );
        let job = vec!["syslog".to_owned()];
        assert_eq!(
            returners_of(&job, merged.as_ref()),
            ["syslog", "redis", "pgjsonb"]
        );
        // A string in the config is taken as is; the pillar's alone when the config is silent.
        let s = config_merge(
            &json!({"schedule_returner": "redis"}),
            &pillar,
            "schedule_returner",
        );
        assert_eq!(s, Some(json!("redis")));
        let p = config_merge(&json!({}), &pillar, "schedule_returner");
        assert_eq!(returners_of(&[], p.as_ref()), ["syslog", "pgjsonb"]);
        assert!(returners_of(&[], None).is_empty());
    }

    #[test]
    fn a_return_without_returners_goes_as_req_or_nocache() {
        let none: Vec<String> = Vec::new();
        let some = vec!["redis".to_owned()];
        let own = "20261208010203123456";
        assert_eq!(return_jid(&none, ReturnJob::Master, own), "req");
        assert_eq!(return_jid(&none, ReturnJob::NoCache, own), "nocache");
        // Salt signals nocache only when no returner needs the job's own jid.
        assert_eq!(return_jid(&some, ReturnJob::NoCache, own), own);
        assert_eq!(return_jid(&some, ReturnJob::Master, own), own);
    }

    #[test]
    fn the_scheduler_waits_for_the_first_connection_unless_told_otherwise() {
        assert!(!may_evaluate(false, false));
        assert!(may_evaluate(false, true));
        assert!(may_evaluate(true, false));
    }
}
