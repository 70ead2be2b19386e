//! The master's shared state and the job path: publishing a job to exactly the minions its
//! target names and accepting and storing returns. The parts a second replica replaces are
//! seams of their own: minion facts (`facts.rs`), delivery to subscriptions (`delivery.rs`),
//! return fan-out (`returns.rs`), the event bus (`events.rs`); following a job to its end is
//! `follow.rs` around the pure `tracker.rs`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use saltq_jobcache::{JobCache, JobRecord, ReturnRecord, StoreOutcome};
use saltq_proto::v1::{self as pb, subscribe_response::Kind};
use saltq_semantics::jid::Jid;
use saltq_semantics::target::Target;
use saltq_transport::value;
use serde_json::{Value, json};
use tonic::Status;

use crate::acl::CallArgs;
use crate::config::MasterConfig;
use crate::delivery::{Delivery, SubscriptionTx};
use crate::events::EventBus;
use crate::facts::FactStore;
use crate::jids::JidSource;
use crate::keys::KeyStore;
use crate::load::{PublishSpec, fun_json, load_to_json};
use crate::returns::{Followers, Following, ReturnSink};

/// Salt's message when a target matches nobody.
pub const NO_MINIONS: &str =
    "No minions matched the target. No command was sent, no jid was assigned.";

/// Everything the services share.
pub struct Master {
    /// The validated config.
    pub cfg: MasterConfig,
    /// Minion keys.
    pub keys: Arc<KeyStore>,
    /// The event bus.
    pub events: EventBus,
    /// The job cache.
    pub cache: JobCache,
    /// Counters and histograms for /metrics.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Grains and pillar of every minion seen, for targeting.
    pub facts: Arc<FactStore>,
    /// Where jobs for minions go.
    pub delivery: Arc<dyn Delivery>,
    /// Jobs followed here, and the fan-out of their returns.
    pub followers: Arc<Followers>,
    /// Where jids come from: this master's clock, or the job cache other masters share.
    jids: Box<dyn JidSource>,
    /// Where a stored return goes besides the followers here (the other replicas of a
    /// cluster), once plugged in.
    returns_elsewhere: std::sync::OnceLock<Arc<dyn ReturnSink>>,
    /// The TLS material in use: the CA that issues the certificates of keys made here
    /// (`key.gen_accept`) and the chain whose root a new minion pins. Set once at start.
    pub certs: Option<Arc<crate::certs::Live>>,
    /// The syndics subscribed here (`order_masters`), and what they said about each job.
    pub syndics: Arc<crate::syndic::Syndics>,
}

/// A published job: the reply, its returns as they are stored, and who was actually sent it.
pub struct Published {
    /// The reply to the publisher: jid, expected minions, listed ids without a key.
    pub resp: pb::PublishResponse,
    /// The job's returns; dropping it stops following the job.
    pub following: Following,
    /// The expected minions the job was handed to (connected, with room in their queue).
    pub sent: Vec<String>,
    /// Expected minions held by a replica of the cluster that did not answer.
    pub unreachable: Vec<String>,
}

/// The jid of a job a minion started on its own (Salt's `"req"`: `startup_states`); the
/// master gives its return a jid of its own.
pub const STANDALONE_JID: &str = "req";

impl Master {
    /// Records a job minion `id` ran on its own (its return's jid is `"req"`) as Salt's
    /// master does: a new jid, a load targeting the minion alone (`tgt` its id, `tgt_type`
    /// glob, `arg` its arguments), so its return is stored and found like any other.
    /// A scheduled job with a returner comes with the jid the minion gave it (`own`), as
    /// Salt's does, and is recorded under it.
    async fn record_standalone(
        &self,
        id: &str,
        r: &pb::ReturnRequest,
        own: Option<String>,
    ) -> Result<String, Status> {
        let jid = match own {
            Some(j) => j,
            None => self.next_jid("").await?.to_string(),
        };
        let load = json!({
            "jid": jid, "fun": fun_json(&r.fun), "arg": value::from_list(r.fun_args.as_ref()),
            "tgt": id, "tgt_type": "glob",
        });
        let record = JobRecord {
            jid: jid.clone(),
            load,
            minions: vec![id.to_owned()],
            start_time: chrono::Utc::now(),
        };
        self.cache.save_job(&record).await.map_err(|e| {
            saltq_transport::part_unavailable(
                "job-cache",
                format!("job cache unavailable, return not stored: {e}"),
            )
        })?;
        tracing::info!(minion = id, %jid, "standalone job recorded");
        Ok(jid)
    }

    /// Whether `r` is a scheduled job's return (its metadata names the job) under a
    /// well-formed jid the master has never seen: the minion's own jid for a job with a
    /// returner (Salt sends `req` only when there is none).
    async fn is_new_scheduled_jid(&self, r: &pb::ReturnRequest) -> bool {
        let scheduled = r
            .metadata
            .as_ref()
            .is_some_and(|m| m.fields.contains_key("__schedule__"));
        scheduled
            && Jid::parse(&r.jid).is_ok()
            && self.followers.get(&r.jid).is_none()
            && matches!(self.cache.get_job(&r.jid).await, Ok(None))
    }

    /// Builds the state; `last_jid` comes from the job cache so jids never repeat.
    pub fn new(
        cfg: MasterConfig,
        keys: KeyStore,
        cache: JobCache,
        last_jid: Option<Jid>,
        bus: Arc<dyn crate::events::Bus>,
        delivery: Arc<dyn Delivery>,
    ) -> Master {
        let metrics = Arc::new(crate::metrics::Metrics::default());
        Master {
            facts: Arc::new(FactStore::open(cfg.cachedir.join("minions"))),
            cfg,
            keys: Arc::new(keys),
            events: EventBus::on(bus, metrics.clone()),
            metrics,
            delivery,
            followers: Arc::new(Followers::default()),
            jids: crate::jids::source_for(&cache, last_jid.as_ref()),
            cache,
            returns_elsewhere: std::sync::OnceLock::new(),
            certs: None,
            syndics: Arc::default(),
        }
    }

    /// From now on, also announces every stored return to `sink` (once; a second call is
    /// ignored): a cluster's fan-out to the other replicas.
    pub fn share_returns_with(&self, sink: Arc<dyn ReturnSink>) {
        let _ = self.returns_elsewhere.set(sink);
    }

    /// Records a minion's subscription, grains and pillar; returns the connection id.
    pub fn subscribe(&self, id: &str, grains: &Value, pillar: Value, tx: SubscriptionTx) -> u64 {
        self.facts.set(id, grains, pillar);
        let conn_id = self.delivery.attach(id, tx);
        if self.cfg.presence_events {
            self.events
                .fire("salt/presence/change", json!({"new": [id], "lost": []}));
        }
        conn_id
    }

    /// Forgets a subscription, unless a newer connection of the same minion replaced it.
    pub fn unsubscribe(&self, id: &str, conn_id: u64) {
        self.delivery.detach(id, conn_id);
    }

    /// Ids with a live subscription.
    pub fn connected(&self) -> Vec<String> {
        self.delivery.connected()
    }

    /// How many minions have a live subscription.
    pub fn connected_count(&self) -> usize {
        self.delivery.connected_count()
    }

    /// Validates a publish request against this master's nodegroups.
    pub fn validate(&self, req: pb::PublishRequest) -> Result<(PublishSpec, Target), Status> {
        crate::load::validate(req, &self.cfg.nodegroups)
    }

    /// Minions the master expects to match, and listed ids that have no accepted key.
    pub fn resolve(&self, target: &Target) -> (Vec<String>, Vec<String>) {
        let accepted = self.keys.accepted();
        let missing = {
            let known: std::collections::HashSet<&String> = accepted.iter().collect();
            target
                .listed_ids()
                .into_iter()
                .filter(|id| !known.contains(id))
                .collect()
        };
        (self.facts.matching(target, accepted), missing)
    }

    /// A new jid (or the caller's, validated).
    pub async fn next_jid(&self, requested: &str) -> Result<Jid, Status> {
        if !requested.is_empty() {
            return Jid::parse(requested).map_err(|e| Status::invalid_argument(e.to_string()));
        }
        self.jids.next().await
    }

    /// Publishes a client's job, once `publisher_acl`/`client_acl` allow `user` to run its
    /// functions on every expected minion.
    pub async fn publish_for_client(
        &self,
        spec: PublishSpec,
        target: &Target,
        who: &crate::acl::Caller,
    ) -> Result<Published, Status> {
        self.publish_as(spec, target, who.name(), Some(who)).await
    }

    /// Publishes a job of the master's own (a runner the caller was allowed to run, the
    /// reactor, find_job): recorded as `user`'s, not checked against the publisher ACL, as
    /// Salt's runners publish with the master's rights.
    pub async fn publish(
        &self,
        spec: PublishSpec,
        target: &Target,
        user: &str,
    ) -> Result<Published, Status> {
        self.publish_as(spec, target, user, None).await
    }

    /// Publishes a validated job: stores its load, starts following it, announces it, and
    /// hands it to the expected minions' subscriptions.
    async fn publish_as(
        &self,
        spec: PublishSpec,
        target: &Target,
        user: &str,
        check_acl: Option<&crate::acl::Caller>,
    ) -> Result<Published, Status> {
        let (mut expected, missing) = self.resolve(target);
        if self.cfg.syndic.order_masters {
            // Syndics hold minion keys here but are not minions (Salt's `syndic_dir`).
            crate::syndic::drop_syndics(&self.cfg.cachedir, &mut expected);
        }
        // A top master does not short-circuit: its syndics resolve the target below.
        if expected.is_empty() && missing.is_empty() && !self.cfg.syndic.order_masters {
            return Err(Status::not_found(NO_MINIONS));
        }
        if let Some(who) = check_acl {
            let (args, kwarg) = call_args(&spec.req);
            let calls: Vec<CallArgs> = args
                .iter()
                .map(|a| CallArgs {
                    arg: a,
                    kwarg: kwarg.as_ref(),
                })
                .collect();
            self.cfg
                .acl
                .publish(who, &spec.req.fun, &calls, &expected)?;
        }
        let jid = self.next_jid(&spec.req.jid).await?;
        let now = chrono::Utc::now();
        let to = spec.timeout.unwrap_or(self.cfg.timeout);
        let load = crate::load::make(spec, target, &jid, user, now);
        let record = JobRecord {
            jid: load.jid.clone(),
            load: load_to_json(&load),
            minions: expected.clone(),
            start_time: now,
        };
        // Saving the job also raises the stored last jid, in the same transaction.
        if let Err(e) = self.cache.save_job(&record).await {
            tracing::error!("job cache unavailable, refusing job: {e}");
            return Err(saltq_transport::part_unavailable(
                "job-cache",
                format!("the job cache cannot be written, no job was published: {e}"),
            ));
        }
        // Followed before any minion can return.
        // A top master hears of its syndics' minions only as they return, in batches.
        let room = if self.cfg.syndic.order_masters {
            crate::syndic::FOLLOW_ROOM
        } else {
            0
        };
        let following = self
            .followers
            .follow_with_room(&load.jid, &expected, room, user, now);
        let mut new = record.load;
        if let Value::Object(m) = &mut new {
            m.insert("minions".into(), json!(expected));
            m.insert("missing".into(), json!(missing));
        }
        self.events.fire(format!("salt/job/{}/new", load.jid), new);
        self.metrics.jobs_published.fetch_add(1, Ordering::Relaxed);
        let jid = load.jid.clone();
        let msg = Arc::new(pb::SubscribeResponse {
            kind: Some(Kind::Job(load)),
        });
        if let (true, Some(Kind::Job(l))) = (self.cfg.syndic.order_masters, &msg.kind) {
            let now = std::time::Instant::now();
            self.syndics.forward(l, to, now);
        }
        let delivered = self.delivery.deliver(&expected, msg).await;
        if delivered.sent.len() < expected.len() {
            tracing::debug!(%jid, expected = expected.len(), sent = delivered.sent.len(), unreachable = delivered.unreachable.len(), "job not delivered to every expected minion");
        }
        Ok(Published {
            resp: pb::PublishResponse {
                jid,
                minions: expected,
                missing,
            },
            following,
            sent: delivered.sent,
            unreachable: delivered.unreachable,
        })
    }

    /// Accepts a return from minion `id`: checks the job was sent to it, stores it, announces it.
    pub async fn accept_return(&self, id: &str, mut r: pb::ReturnRequest) -> Result<bool, Status> {
        if r.jid == STANDALONE_JID {
            r.jid = self.record_standalone(id, &r, None).await?;
        } else if self.is_new_scheduled_jid(&r).await {
            self.record_standalone(id, &r, Some(r.jid.clone())).await?;
        }
        let (expected, started, user) = match self.followers.get(&r.jid) {
            Some(f) => (f.expected.contains(id), Some(f.started), f.user.clone()),
            None => match self.cache.get_job(&r.jid).await {
                Ok(Some(job)) => (
                    job.minions.iter().any(|m| m == id),
                    Some(job.start_time),
                    job.load
                        .get("user")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                ),
                Ok(None) => {
                    return Err(Status::not_found(format!(
                        "unknown jid {}: no such job",
                        r.jid
                    )));
                }
                Err(e) => {
                    return Err(saltq_transport::part_unavailable(
                        "job-cache",
                        format!("job cache unavailable: {e}"),
                    ));
                }
            },
        };
        if !expected {
            return Err(Status::permission_denied(format!(
                "job {} was not sent to minion {id}",
                r.jid
            )));
        }
        self.store_return(id, r, started, user).await
    }

    /// Accepts a return that syndic `syndic` forwarded from its minion `id`, once the job
    /// was forwarded to that syndic: stored and announced as a direct minion's.
    pub async fn accept_syndic_return(
        &self,
        syndic: &str,
        id: &str,
        r: pb::ReturnRequest,
    ) -> Result<bool, Status> {
        if !self.syndics.was_sent(&r.jid, syndic) {
            return Err(Status::permission_denied(format!(
                "job {} was not forwarded to syndic {syndic}",
                r.jid
            )));
        }
        let (started, user) = match self.followers.get(&r.jid) {
            Some(f) => (Some(f.started), f.user.clone()),
            None => (None, String::new()),
        };
        self.store_return(id, r, started, user).await
    }

    /// Stores a checked return of minion `id`, announces it and hands it to the followers.
    async fn store_return(
        &self,
        id: &str,
        mut r: pb::ReturnRequest,
        started: Option<chrono::DateTime<chrono::Utc>>,
        user: String,
    ) -> Result<bool, Status> {
        // A scheduled job's name (the minion's scheduler puts it in the metadata) becomes
        // the `schedule` field of the return event, as in Salt.
        let schedule = r
            .metadata
            .as_mut()
            .and_then(|m| m.fields.remove("__schedule__"));
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
                return Err(saltq_transport::part_unavailable(
                    "job-cache",
                    format!("job cache unavailable, return not stored: {e}"),
                ));
            }
        }
        let mut event = json!({"cmd": "_return", "fun": fun, "fun_args": fun_args, "id": id,
            "jid": r.jid, "retcode": r.retcode, "return": ret_json, "success": r.success, "user": user});
        if let Some(s) = schedule.as_ref() {
            event["schedule"] = value::from_prost(s);
        }
        self.events
            .fire(format!("salt/job/{}/ret/{id}", r.jid), event);
        let ret = Arc::new(pb::JobReturn {
            id: id.to_owned(),
            jid: r.jid,
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
        });
        if let Some(elsewhere) = self.returns_elsewhere.get() {
            elsewhere.announce(ret.clone());
        }
        self.followers.announce(ret);
        Ok(true)
    }
}

/// A job's arguments per function, as Salt's ACL checks see them: one list for a single
/// function (with the keyword arguments, when any), or one list per function of a
/// multi-function job (keyword arguments travel inside those lists there).
fn call_args(
    req: &pb::PublishRequest,
) -> (Vec<Vec<Value>>, Option<serde_json::Map<String, Value>>) {
    let arg: Vec<Value> = req.arg.iter().map(value::from_prost).collect();
    if req.fun.len() > 1 {
        let per_fun = arg
            .into_iter()
            .map(|a| match a {
                Value::Array(v) => v,
                other => vec![other],
            })
            .collect();
        return (per_fun, None);
    }
    let kwarg = req
        .kwarg
        .as_ref()
        .map(value::struct_to_map)
        .filter(|m| !m.is_empty());
    (vec![arg], kwarg)
}
