//! The master's shared state and the job path: who is connected, publishing a job to exactly
//! the minions its target names, accepting and storing returns, and following a job to its end.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use saltq_jobcache::{JobCache, JobRecord, ReturnRecord, StoreOutcome};
use saltq_proto::v1::{self as pb, subscribe_response::Kind};
use saltq_semantics::jid::{Jid, JidGenerator};
use saltq_semantics::target::{MinionFacts, Target, TargetType};
use saltq_transport::value;
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, mpsc};
use tonic::Status;

use crate::config::MasterConfig;
use crate::events::EventBus;
use crate::keys::KeyStore;
use crate::minion_data::MinionDataWriter;

/// Salt's message when a target matches nobody.
pub const NO_MINIONS: &str =
    "No minions matched the target. No command was sent, no jid was assigned.";

/// The sender half of a minion's subscription stream. Messages are shared, so a job published
/// to many minions is one allocation until each stream encodes it, and a subscription's queue
/// costs a pointer per slot (tokio allocates a queue's slots 32 at a time, per subscription).
pub type SubscriptionTx = mpsc::Sender<Arc<pb::SubscribeResponse>>;

/// A connected minion's subscription.
struct Subscription {
    tx: SubscriptionTx,
    /// Distinguishes this connection from a later one of the same minion.
    conn_id: u64,
}

/// What the master knows of one minion.
#[derive(Default)]
struct MinionEntry {
    grains: Option<GrainsText>,
    pillar: Option<Value>,
    subscription: Option<Subscription>,
}

/// A minion's grains kept as compact JSON text. Parsed, a host's grains take about 23 KiB of
/// small allocations (a map per object, a string per value); as text about a quarter of that,
/// which with 10,000 minions is the difference of some 150 MB. Only grain and ipcidr targets
/// and the grains runners read them, and those parse what they look at.
#[derive(Clone)]
struct GrainsText(Arc<str>);

impl GrainsText {
    fn new(grains: &Value) -> GrainsText {
        GrainsText(grains.to_string().into())
    }

    fn parse(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or_else(|_| Value::Object(Map::new()))
    }
}

/// The text of `data.json`: `{"grains": ..., "pillar": ...}`.
fn minion_data_json(grains: Option<&GrainsText>, pillar: Option<&Value>) -> String {
    let grains = grains.map_or("null", |g| &g.0);
    let pillar = pillar.map_or_else(|| "null".to_owned(), Value::to_string);
    format!("{{\"grains\":{grains},\"pillar\":{pillar}}}")
}

/// `data.json` as read back: the grains stay text.
#[derive(serde::Deserialize)]
struct MinionDataFile {
    grains: Option<Box<serde_json::value::RawValue>>,
    pillar: Option<Value>,
}

/// A job still being followed: who is expected, who returned, and who is watching.
pub struct ActiveJob {
    /// The load as published.
    pub load: pb::JobLoad,
    /// Minions expected to return.
    pub expected: HashSet<String>,
    returned: Mutex<HashSet<String>>,
    watch: broadcast::Sender<Arc<pb::JobReturn>>,
}

/// Everything the services share.
pub struct Master {
    /// The validated config.
    pub cfg: MasterConfig,
    /// Minion keys.
    pub keys: KeyStore,
    /// The event bus.
    pub events: EventBus,
    /// The job cache.
    pub cache: JobCache,
    /// Counters and histograms for /metrics.
    pub metrics: Arc<crate::metrics::Metrics>,
    minions: Mutex<HashMap<String, MinionEntry>>,
    jobs: Mutex<HashMap<String, Arc<ActiveJob>>>,
    jids: Mutex<JidGenerator>,
    next_conn: AtomicU64,
    minion_data: MinionDataWriter,
}

/// A validated publish request.
pub struct PublishSpec {
    /// The target as given.
    pub tgt: String,
    /// Its type.
    pub tgt_type: TargetType,
    /// The load fields other than jid and user.
    pub req: pb::PublishRequest,
}

impl Master {
    /// Builds the state; `last_jid` comes from the job cache so jids never repeat.
    pub fn new(
        cfg: MasterConfig,
        keys: KeyStore,
        cache: JobCache,
        last_jid: Option<Jid>,
    ) -> Master {
        let minion_data_dir = cfg.cachedir.join("minions");
        let mut minions = HashMap::new();
        // Cached grains and pillar of minions seen before, so targeting works before they reconnect.
        if let Ok(dir) = std::fs::read_dir(&minion_data_dir) {
            for e in dir.flatten() {
                let id = e.file_name().to_string_lossy().into_owned();
                if let Ok(text) = std::fs::read_to_string(e.path().join("data.json"))
                    && let Ok(v) = serde_json::from_str::<MinionDataFile>(&text)
                {
                    minions.insert(
                        id,
                        MinionEntry {
                            grains: v
                                .grains
                                .filter(|g| g.get() != "null")
                                .map(|g| GrainsText(Arc::from(g.get()))),
                            pillar: v.pillar.filter(|p| !p.is_null()),
                            subscription: None,
                        },
                    );
                }
            }
        }
        let metrics = Arc::new(crate::metrics::Metrics::default());
        Master {
            cfg,
            keys,
            events: EventBus::new(8192, metrics.clone()),
            cache,
            metrics,
            minions: Mutex::new(minions),
            jobs: Mutex::new(HashMap::new()),
            jids: Mutex::new(JidGenerator::new(last_jid.as_ref())),
            next_conn: AtomicU64::new(1),
            minion_data: MinionDataWriter::start(minion_data_dir),
        }
    }

    /// Records a minion's subscription and grains; returns the connection id.
    pub fn subscribe(&self, id: &str, grains: Value, pillar: Value, tx: SubscriptionTx) -> u64 {
        let conn_id = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let grains = GrainsText::new(&grains);
        let data = minion_data_json(Some(&grains), Some(&pillar));
        {
            let mut m = self.minions.lock().unwrap_or_else(|e| e.into_inner());
            let e = m.entry(id.to_owned()).or_default();
            e.grains = Some(grains);
            e.pillar = Some(pillar);
            e.subscription = Some(Subscription { tx, conn_id });
        }
        self.minion_data.write(id, data);
        if self.cfg.presence_events {
            self.events
                .fire("salt/presence/change", json!({"new": [id], "lost": []}));
        }
        conn_id
    }

    /// Forgets a subscription, unless a newer connection of the same minion replaced it.
    pub fn unsubscribe(&self, id: &str, conn_id: u64) {
        let mut m = self.minions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = m.get_mut(id)
            && e.subscription
                .as_ref()
                .is_some_and(|s| s.conn_id == conn_id)
        {
            e.subscription = None;
        }
    }

    /// Replaces the cached grains of a minion.
    pub fn update_grains(&self, id: &str, grains: Value) {
        let data = {
            let mut m = self.minions.lock().unwrap_or_else(|e| e.into_inner());
            let e = m.entry(id.to_owned()).or_default();
            e.grains = Some(GrainsText::new(&grains));
            minion_data_json(e.grains.as_ref(), e.pillar.as_ref())
        };
        self.minion_data.write(id, data);
    }

    /// Replaces the cached pillar of a minion (after it fetched a fresh one).
    pub fn update_pillar(&self, id: &str, pillar: Value) {
        let data = {
            let mut m = self.minions.lock().unwrap_or_else(|e| e.into_inner());
            let e = m.entry(id.to_owned()).or_default();
            e.pillar = Some(pillar);
            minion_data_json(e.grains.as_ref(), e.pillar.as_ref())
        };
        self.minion_data.write(id, data);
    }

    /// The cached grains and pillar of a minion.
    pub fn cached(&self, id: &str) -> (Option<Value>, Option<Value>) {
        let m = self.minions.lock().unwrap_or_else(|e| e.into_inner());
        m.get(id)
            .map(|e| (e.grains.as_ref().map(GrainsText::parse), e.pillar.clone()))
            .unwrap_or_default()
    }

    /// Forgets the cached grains and/or pillar of a minion (cache.clear_*).
    pub fn clear_cached(&self, id: &str, grains: bool, pillar: bool) {
        let data = {
            let mut m = self.minions.lock().unwrap_or_else(|e| e.into_inner());
            let Some(e) = m.get_mut(id) else { return };
            if grains {
                e.grains = None;
            }
            if pillar {
                e.pillar = None;
            }
            minion_data_json(e.grains.as_ref(), e.pillar.as_ref())
        };
        self.minion_data.write(id, data);
    }

    /// The cached grains of a minion.
    pub fn grains_of(&self, id: &str) -> Option<Value> {
        let m = self.minions.lock().unwrap_or_else(|e| e.into_inner());
        m.get(id)
            .and_then(|e| e.grains.as_ref().map(GrainsText::parse))
    }

    /// Waits until the cached grains and pillar handed over so far are on disk.
    pub fn flush_minion_data(&self) {
        self.minion_data.flush();
    }

    /// Whether a minion has a live subscription.
    pub fn is_connected(&self, id: &str) -> bool {
        let m = self.minions.lock().unwrap_or_else(|e| e.into_inner());
        m.get(id).is_some_and(|e| e.subscription.is_some())
    }

    /// Ids with a live subscription.
    pub fn connected(&self) -> Vec<String> {
        let m = self.minions.lock().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<String> = m
            .iter()
            .filter(|(_, e)| e.subscription.is_some())
            .map(|(id, _)| id.clone())
            .collect();
        v.sort();
        v
    }

    /// Validates a publish request: function names and target, before anything is sent.
    pub fn validate(&self, req: pb::PublishRequest) -> Result<(PublishSpec, Target), Status> {
        if req.fun.is_empty() || req.fun.iter().any(|f| f.trim().is_empty()) {
            return Err(Status::invalid_argument(
                "no function given: fun must name at least one function, e.g. test.ping",
            ));
        }
        for f in &req.fun {
            if !f.contains('.') {
                return Err(Status::invalid_argument(format!(
                    "invalid function name {f:?}: expected module.function, e.g. test.ping"
                )));
            }
        }
        if req.fun.len() > 1 && !req.arg.is_empty() && req.arg.len() != req.fun.len() {
            return Err(Status::invalid_argument(format!(
                "a multi-function job of {} functions needs one argument list per function, got {}",
                req.fun.len(),
                req.arg.len()
            )));
        }
        let tgt_type: TargetType =
            req.tgt_type
                .parse()
                .map_err(|e: saltq_semantics::target::TargetError| {
                    Status::invalid_argument(e.to_string())
                })?;
        let delimiter = (!req.delimiter.is_empty()).then_some(req.delimiter.as_str());
        let target = Target::compile(&req.tgt, tgt_type, delimiter, &self.cfg.nodegroups)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        Ok((
            PublishSpec {
                tgt: req.tgt.clone(),
                tgt_type,
                req,
            },
            target,
        ))
    }

    /// Minions the master expects to match, and listed ids that have no accepted key.
    pub fn resolve(&self, target: &Target) -> (Vec<String>, Vec<String>) {
        let accepted = self.keys.accepted();
        let minions = self.minions.lock().unwrap_or_else(|e| e.into_inner());
        let reads_grains = target.reads_grains();
        let expected: Vec<String> = accepted
            .iter()
            .filter(|id| {
                let e = minions.get(id.as_str());
                let grains = e
                    .and_then(|e| e.grains.as_ref())
                    .filter(|_| reads_grains)
                    .map(GrainsText::parse);
                target.matches_greedy(&MinionFacts {
                    id,
                    grains: grains.as_ref(),
                    pillar: e.and_then(|e| e.pillar.as_ref()),
                })
            })
            .cloned()
            .collect();
        let accepted: HashSet<&String> = accepted.iter().collect();
        let missing = target
            .listed_ids()
            .into_iter()
            .filter(|id| !accepted.contains(id))
            .collect();
        (expected, missing)
    }

    /// A new jid (or the caller's, validated).
    pub fn next_jid(&self, requested: &str) -> Result<Jid, Status> {
        if !requested.is_empty() {
            return Jid::parse(requested).map_err(|e| Status::invalid_argument(e.to_string()));
        }
        let mut g = self.jids.lock().unwrap_or_else(|e| e.into_inner());
        Ok(g.next(chrono::Utc::now()))
    }

    /// Publishes a validated job. Returns the reply and the job being followed.
    pub async fn publish(
        &self,
        spec: PublishSpec,
        target: &Target,
        user: &str,
    ) -> Result<
        (
            pb::PublishResponse,
            Arc<ActiveJob>,
            broadcast::Receiver<Arc<pb::JobReturn>>,
        ),
        Status,
    > {
        let (expected, missing) = self.resolve(target);
        if expected.is_empty() && missing.is_empty() {
            return Err(Status::not_found(NO_MINIONS));
        }
        self.cfg.acl.check_publish(user, &spec.req.fun, &expected)?;
        let jid = self.next_jid(&spec.req.jid)?;
        let now = chrono::Utc::now();
        let req = spec.req;
        // Minions have no nodegroups: publish the expanded compound, as Salt does.
        let (tgt, tgt_type) = match (spec.tgt_type, target.expanded_compound()) {
            (TargetType::Nodegroup, Some(expr)) => (expr, TargetType::Compound),
            _ => (spec.tgt, spec.tgt_type),
        };
        let load = pb::JobLoad {
            jid: jid.to_string(),
            tgt,
            tgt_type: tgt_type.as_str().to_owned(),
            fun: req.fun,
            arg: req.arg,
            kwarg: req.kwarg,
            ret: req.ret,
            user: user.to_owned(),
            metadata: req.metadata,
            delimiter: req.delimiter,
            ret_config: req.ret_config,
            ret_kwargs: req.ret_kwargs,
            start_time: Some(prost_types::Timestamp {
                seconds: now.timestamp(),
                nanos: now.timestamp_subsec_nanos() as i32,
            }),
        };
        let record = JobRecord {
            jid: load.jid.clone(),
            load: load_to_json(&load),
            minions: expected.clone(),
            start_time: now,
        };
        let stored = async {
            self.cache.save_job(&record).await?;
            self.cache.record_jid(&record.jid).await
        };
        if let Err(e) = stored.await {
            tracing::error!("job cache unavailable, refusing job: {e}");
            return Err(Status::unavailable(format!(
                "the job cache cannot be written, no job was published: {e}"
            )));
        }
        // Room for every expected return, so a follower subscribed now never lags.
        let (watch, first_rx) = broadcast::channel(expected.len().max(16) + 16);
        let job = Arc::new(ActiveJob {
            load: load.clone(),
            expected: expected.iter().cloned().collect(),
            returned: Mutex::new(HashSet::new()),
            watch,
        });
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(load.jid.clone(), job.clone());
        let mut new = load_to_json(&load);
        if let Value::Object(m) = &mut new {
            m.insert("minions".into(), json!(expected));
            m.insert("missing".into(), json!(missing));
        }
        self.events.fire(format!("salt/job/{}/new", load.jid), new);
        self.metrics.jobs_published.fetch_add(1, Ordering::Relaxed);
        let msg = Arc::new(pb::SubscribeResponse {
            kind: Some(Kind::Job(load.clone())),
        });
        let senders: Vec<(String, SubscriptionTx)> = {
            let m = self.minions.lock().unwrap_or_else(|e| e.into_inner());
            expected
                .iter()
                .filter_map(|id| {
                    m.get(id)
                        .and_then(|e| e.subscription.as_ref())
                        .map(|s| (id.clone(), s.tx.clone()))
                })
                .collect()
        };
        for (id, tx) in senders {
            if tx.try_send(msg.clone()).is_err() {
                tracing::warn!(minion = %id, jid = %load.jid, "subscription full or closed, job not delivered");
            }
        }
        Ok((
            pb::PublishResponse {
                jid: load.jid,
                minions: expected,
                missing,
            },
            job,
            first_rx,
        ))
    }

    /// Accepts a return from minion `id`: checks the job was sent to it, stores it, announces it.
    pub async fn accept_return(&self, id: &str, r: pb::ReturnRequest) -> Result<bool, Status> {
        let active = self
            .jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&r.jid)
            .cloned();
        let (expected, started) = match &active {
            Some(j) => (
                j.expected.contains(id),
                j.load.start_time.as_ref().and_then(|t| {
                    chrono::DateTime::from_timestamp(t.seconds, t.nanos.max(0) as u32)
                }),
            ),
            None => match self.cache.get_job(&r.jid).await {
                Ok(Some(job)) => (job.minions.iter().any(|m| m == id), Some(job.start_time)),
                Ok(None) => {
                    return Err(Status::not_found(format!(
                        "unknown jid {}: no such job",
                        r.jid
                    )));
                }
                Err(e) => return Err(Status::unavailable(format!("job cache unavailable: {e}"))),
            },
        };
        if !expected {
            return Err(Status::permission_denied(format!(
                "job {} was not sent to minion {id}",
                r.jid
            )));
        }
        let fun = fun_json(&r.fun);
        let fun_args = Value::Array(value::from_list(r.fun_args.as_ref()));
        let ret_json = r
            .r#return
            .as_ref()
            .map(value::from_prost)
            .unwrap_or(Value::Null);
        let now = chrono::Utc::now();
        let record = ReturnRecord {
            jid: r.jid.clone(),
            id: id.to_owned(),
            fun: fun.clone(),
            fun_args: fun_args.clone(),
            ret: ret_json.clone(),
            retcode: r.retcode,
            success: r.success,
            out: (!r.out.is_empty()).then(|| r.out.clone()),
            metadata: r
                .metadata
                .as_ref()
                .map(|m| Value::Object(value::struct_to_map(m))),
            stored_at: now,
        };
        let write_started = std::time::Instant::now();
        let outcome = self.cache.store_return(record).await;
        self.metrics
            .cache_write_latency
            .observe(write_started.elapsed());
        match outcome {
            Ok(StoreOutcome::Duplicate) => {
                self.metrics
                    .returns_duplicate
                    .fetch_add(1, Ordering::Relaxed);
                tracing::info!(minion = id, jid = %r.jid, "duplicate return dropped (possible replay)");
                return Ok(false);
            }
            Ok(StoreOutcome::Stored) => {
                self.metrics.returns_stored.fetch_add(1, Ordering::Relaxed);
                if let Some(t) = started {
                    self.metrics
                        .return_latency
                        .observe((chrono::Utc::now() - t).to_std().unwrap_or_default());
                }
            }
            Err(e) => {
                return Err(Status::unavailable(format!(
                    "job cache unavailable, return not stored: {e}"
                )));
            }
        }
        let user = active
            .as_ref()
            .map(|j| j.load.user.clone())
            .unwrap_or_default();
        self.events.fire(
            format!("salt/job/{}/ret/{id}", r.jid),
            json!({"cmd": "_return", "fun": fun, "fun_args": fun_args, "id": id, "jid": r.jid,
                   "retcode": r.retcode, "return": ret_json, "success": r.success, "user": user}),
        );
        if let Some(job) = active {
            let done = {
                let mut returned = job.returned.lock().unwrap_or_else(|e| e.into_inner());
                returned.insert(id.to_owned());
                returned.len() >= job.expected.len()
            };
            let _ = job.watch.send(Arc::new(pb::JobReturn {
                id: id.to_owned(),
                jid: r.jid.clone(),
                fun: r.fun,
                fun_args: r.fun_args,
                r#return: r.r#return,
                retcode: r.retcode,
                success: r.success,
                out: r.out,
                metadata: r.metadata,
                stored_at: Some(prost_types::Timestamp {
                    seconds: now.timestamp(),
                    nanos: now.timestamp_subsec_nanos() as i32,
                }),
            }));
            if done {
                self.forget_job(&r.jid);
            }
        }
        Ok(true)
    }

    /// Stops following a job in memory (its record stays in the cache).
    pub fn forget_job(&self, jid: &str) {
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(jid);
    }
}

/// Salt's `fun` field: a string for one function, a list for several.
pub fn fun_json(fun: &[String]) -> Value {
    match fun {
        [one] => Value::String(one.clone()),
        many => json!(many),
    }
}

/// The load as stored in the job cache and shown in `salt/job/<jid>/new`.
pub fn load_to_json(l: &pb::JobLoad) -> Value {
    let mut m = Map::new();
    m.insert("jid".into(), json!(l.jid));
    m.insert("tgt".into(), json!(l.tgt));
    m.insert("tgt_type".into(), json!(l.tgt_type));
    m.insert("fun".into(), fun_json(&l.fun));
    m.insert(
        "arg".into(),
        Value::Array(l.arg.iter().map(value::from_prost).collect()),
    );
    m.insert(
        "kwarg".into(),
        Value::Object(value::opt_struct(l.kwarg.as_ref())),
    );
    m.insert("ret".into(), json!(l.ret));
    m.insert("user".into(), json!(l.user));
    if let Some(md) = &l.metadata {
        m.insert("metadata".into(), Value::Object(value::struct_to_map(md)));
    }
    if !l.delimiter.is_empty() {
        m.insert("delimiter".into(), json!(l.delimiter));
    }
    Value::Object(m)
}

/// Rebuilds a load from its stored form.
pub fn load_from_json(v: &Value) -> pb::JobLoad {
    let s = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let fun = match v.get("fun") {
        Some(Value::String(f)) => vec![f.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|f| f.as_str().map(str::to_owned))
            .collect(),
        _ => vec![],
    };
    let obj = |k: &str| match v.get(k) {
        Some(Value::Object(m)) => Some(value::map_to_struct(m)),
        _ => None,
    };
    pb::JobLoad {
        jid: s("jid"),
        tgt: s("tgt"),
        tgt_type: s("tgt_type"),
        fun,
        arg: v
            .get("arg")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(value::to_prost).collect())
            .unwrap_or_default(),
        kwarg: obj("kwarg"),
        ret: s("ret"),
        user: s("user"),
        metadata: obj("metadata"),
        delimiter: s("delimiter"),
        ret_config: String::new(),
        ret_kwargs: None,
        start_time: None,
    }
}
