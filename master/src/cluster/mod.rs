//! Cluster mode (`cluster_id`): several replicas that are one master, on NATS for live traffic
//! and PostgreSQL for shared state; no consensus or gossip of our own. The master does not
//! know the cluster: each part fills one of its seams, plugged in at startup (`run.rs`):
//!
//! - delivery ([`crate::delivery::Delivery`]): [`delivery::ClusterDelivery`] routes a job to
//!   the replica holding each minion's subscription ([`routes::Routes`] is the table, without
//!   I/O);
//! - return fan-out ([`crate::returns::ReturnSink`]): a stored return is announced on NATS, and
//!   the replica following its job hands it to its followers;
//! - minion facts ([`crate::facts::FactShare`]): changed grains and pillar go, live, to every
//!   replica and, in batches of one statement, to PostgreSQL;
//! - keys: every change is written to PostgreSQL and announced; the other replicas copy it
//!   into their key store ([`crate::keys::KeyStore::mirror`]);
//! - the event bus ([`crate::events::Bus`]): [`events::ClusterBus`];
//! - single-runner duties ([`crate::duties::Leadership`]): [`leader::PgLeadership`];
//! - jids: the shared job cache (`jids.rs`).
//!
//! A replica owns its tasks ([`tasks::Tasks`]): [`Cluster::stop`] says goodbye, ends them and
//! waits for them. What it sends goes through bounded [`outbox::Outbox`]es whose drops are
//! counted on `/metrics`, and it hears only the other replicas ([`nats::Nats::subscribe_others`]).

pub mod counts;
pub mod delivery;
pub mod events;
pub mod leader;
pub mod nats;
pub mod outbox;
pub mod routes;
pub mod store;
pub mod tasks;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use prost::Message;
use saltq_proto::cluster::v1 as cpb;
use saltq_proto::v1 as pb;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::config::{ClusterConfig, MasterConfig};
use crate::delivery::Delivery;
use crate::duties::Leadership;
use crate::events::Bus;
use crate::facts::{FactShare, FactStore};
use crate::keys::KeyStore;
use crate::returns::ReturnSink;

/// The queues whose drops `/metrics` counts: events, route changes, what is shared (returns,
/// facts, keys) and facts waiting for PostgreSQL.
pub const QUEUES: &[&str] = &["events", "routes", "shared", "facts_store", "other"];
/// Messages for NATS besides events and routes waiting at most.
const SHARED_QUEUE: usize = 65_536;
/// Facts waiting for PostgreSQL at most.
const FACTS_QUEUE: usize = 65_536;
/// Facts written to PostgreSQL in one statement at most.
const FACTS_BATCH: usize = 500;
/// How long the replica's tasks may take to finish at stop.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Why a replica could not join its cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// NATS did not answer.
    #[error(transparent)]
    Nats(#[from] nats::NatsError),
    /// PostgreSQL did not answer.
    #[error("cannot open the cluster's tables in PostgreSQL: {0}")]
    Store(String),
}

/// The parts of the master a replica keeps in line with the other replicas.
pub struct Seams {
    /// The key store: the cluster's keys are copied in, this replica's changes shared.
    pub keys: Arc<KeyStore>,
    /// Minion facts: the cluster's are copied in.
    pub facts: Arc<FactStore>,
    /// Where returns stored by other replicas are announced (the followers here).
    pub returns: Arc<dyn ReturnSink>,
    /// The cluster-wide job counters.
    pub metrics: Arc<crate::metrics::Metrics>,
}

/// The parts a replica runs with.
pub struct Cluster {
    nats: nats::Nats,
    bus: Arc<events::ClusterBus>,
    leadership: Arc<leader::PgLeadership>,
    delivery: Arc<delivery::ClusterDelivery>,
    store: Arc<store::ClusterStore>,
    /// Returns, facts and key changes for NATS, in order: `(subject name, body)`.
    shared: Arc<outbox::Outbox<(&'static str, Bytes)>>,
    /// Facts for PostgreSQL: `(id, grains, pillar)`, JSON text.
    facts_rows: mpsc::Sender<(String, String, String)>,
    /// Drops of the queues, by [`QUEUES`].
    dropped: Arc<counts::Counts>,
    tasks: tasks::Tasks,
}

impl Cluster {
    /// Connects to NATS and PostgreSQL and starts the cluster's bus, delivery and the contest
    /// for the duties; they run until [`Cluster::stop`].
    pub async fn start(
        cfg: &MasterConfig,
        cluster: &ClusterConfig,
    ) -> Result<Cluster, ClusterError> {
        let nats = nats::Nats::connect(&nats::NatsOptions {
            servers: cluster.nats.clone(),
            cluster_id: cluster.id.clone(),
            // Unique per process even where replicas share one config (and so one id).
            replica: format!("{}-{:08x}", cfg.id, rand::random::<u32>()),
            ca_file: cluster.nats_ca_file.clone(),
            client_cert: cluster.nats_client_cert.clone(),
        })
        .await?;
        let (url, schema) = match &cfg.job_cache {
            saltq_jobcache::CacheConfig::Postgres { url, schema } => (url.clone(), schema.clone()),
            // Refused by the config check: a cluster always has the PostgreSQL job cache.
            saltq_jobcache::CacheConfig::Sqlite { .. } => (String::new(), None),
        };
        let store = Arc::new(
            store::ClusterStore::open(&url, schema.as_deref())
                .await
                .map_err(ClusterError::Store)?,
        );
        let tasks = tasks::Tasks::default();
        let dropped = Arc::new(counts::Counts::new(QUEUES));
        let bus = events::ClusterBus::start(nats.clone(), 8192, dropped.clone(), &tasks).await?;
        let delivery =
            delivery::ClusterDelivery::start(nats.clone(), dropped.clone(), &tasks).await?;
        let leadership = Arc::new(leader::PgLeadership::start(&url, &cluster.id, &tasks));
        let n = nats.clone();
        let shared = Arc::new(outbox::Outbox::start(
            "shared",
            SHARED_QUEUE,
            nats.clone(),
            move |(name, body): (&'static str, Bytes)| Some((n.subject(name), body)),
            dropped.clone(),
            &tasks,
        ));
        let (facts_rows, rows) = mpsc::channel(FACTS_QUEUE);
        tasks.spawn_watching(write_facts(store.clone(), rows, tasks.stopping()));
        Ok(Cluster {
            nats,
            bus,
            leadership,
            delivery,
            store,
            shared,
            facts_rows,
            dropped,
            tasks,
        })
    }

    /// The bus, as the master's event bus sees it.
    pub fn event_bus(&self) -> Arc<dyn Bus> {
        self.bus.clone()
    }

    /// The duties switch.
    pub fn leadership(&self) -> Arc<dyn Leadership> {
        self.leadership.clone()
    }

    /// Delivery across the replicas.
    pub fn delivery(&self) -> Arc<dyn Delivery> {
        self.delivery.clone()
    }

    /// Whether this replica is connected to NATS now.
    pub fn is_connected(&self) -> bool {
        self.nats.is_connected()
    }

    /// This replica's share of the cluster, for /metrics.
    pub fn gauges(&self) -> crate::metrics::ClusterGauges {
        let (here, replicas) = self.delivery.counts();
        crate::metrics::ClusterGauges {
            replica: self.nats.replica().to_owned(),
            here,
            replicas,
            nats_sent: self.nats.sent(),
            nats_published: self.nats.published(),
            pg_statements: self.store.statements(),
            dropped: self.dropped.read(),
        }
    }

    /// Says goodbye to the other replicas, ends this replica's tasks (what their queues hold
    /// is sent first) and waits for them.
    pub async fn stop(&self) {
        self.delivery.goodbye();
        self.tasks.stop(STOP_GRACE).await;
        self.nats.flush().await;
    }

    /// Brings the master's keys and minion data in line with the cluster's, then keeps them
    /// so: other replicas' returns, minion data and key changes are applied here, and this
    /// replica's key changes are written to PostgreSQL and announced.
    pub async fn join(&self, seams: Seams) -> Result<(), ClusterError> {
        let nats = &self.nats;
        let mut returns = nats.subscribe_others(nats.subject("returns")).await?;
        let mut facts = nats.subscribe_others(nats.subject("facts")).await?;
        let mut keys = nats.subscribe_others(nats.subject("keys")).await?;
        let mut local_keys = seams.keys.changes();

        // Keys: PostgreSQL holds the cluster's; the first replica seeds it with its own.
        let stored = self.store.all_keys().await.map_err(ClusterError::Store)?;
        if stored.is_empty() {
            // An id with keys in two states (accepted and denied) is written once.
            let ids: std::collections::BTreeSet<String> =
                seams.keys.all().into_iter().map(|(_, id, _)| id).collect();
            for id in ids {
                let entries = seams.keys.entries(&id);
                self.store
                    .put_keys(&id, &entries)
                    .await
                    .map_err(ClusterError::Store)?;
            }
        } else {
            let mut by_id: std::collections::BTreeMap<
                String,
                Vec<(crate::keys::KeyState, String)>,
            > = Default::default();
            for (id, state, pem) in stored {
                by_id.entry(id).or_default().push((state, pem));
            }
            for (_, id, _) in seams.keys.all() {
                by_id.entry(id).or_default();
            }
            for (id, entries) in by_id {
                if let Err(e) = seams.keys.mirror(&id, &entries) {
                    tracing::warn!(minion = %id, "key not copied from the cluster: {e}");
                }
            }
        }
        // Minion data for targeting.
        for (id, grains, pillar) in self.store.all_facts().await.map_err(ClusterError::Store)? {
            mirror_facts(&seams.facts, &id, &grains, &pillar);
        }

        // Cluster-wide job counters, from the bus that carries every replica's events.
        let metrics = seams.metrics.clone();
        let mut bus = self.bus.subscribe();
        self.tasks.spawn(async move {
            use std::sync::atomic::Ordering::Relaxed;
            while let Some(e) = bus.next().await {
                let Ok(e) = e else { continue };
                if let Some(rest) = e.tag.strip_prefix("salt/job/") {
                    if rest.ends_with("/new") {
                        metrics.cluster_jobs.fetch_add(1, Relaxed);
                    } else if rest.contains("/ret/") {
                        metrics.cluster_returns.fetch_add(1, Relaxed);
                    }
                }
            }
        });
        let followers = seams.returns.clone();
        self.tasks.spawn(async move {
            while let Some(msg) = returns.next().await {
                if let Ok(cpb::ReturnNotice { ret: Some(ret) }) =
                    cpb::ReturnNotice::decode(msg.payload)
                {
                    followers.announce(Arc::new(ret));
                }
            }
        });
        let store = seams.facts.clone();
        self.tasks.spawn(async move {
            while let Some(msg) = facts.next().await {
                if let Ok(n) = cpb::FactsNotice::decode(msg.payload) {
                    mirror_facts(&store, &n.id, &n.grains_json, &n.pillar_json);
                }
            }
        });
        let (db, key_store) = (self.store.clone(), seams.keys.clone());
        self.tasks.spawn(async move {
            while let Some(msg) = keys.next().await {
                let id = String::from_utf8_lossy(&msg.payload).into_owned();
                match db.keys(&id).await {
                    Ok(entries) => {
                        if let Err(e) = key_store.mirror(&id, &entries) {
                            tracing::warn!(minion = %id, "key not copied from the cluster: {e}");
                        }
                    }
                    Err(e) => tracing::warn!(minion = %id, "cannot read the cluster's key: {e}"),
                }
            }
        });
        let (db, key_store, shared) = (self.store.clone(), seams.keys, self.shared.clone());
        self.tasks.spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                let id = match local_keys.recv().await {
                    Ok(change) if change.mirrored => continue,
                    Ok(change) => change.id,
                    Err(RecvError::Lagged(n)) => {
                        tracing::warn!("{n} key changes missed for the cluster; sending them all");
                        for (_, id, _) in key_store.all() {
                            share_key(&db, &key_store, &shared, &id).await;
                        }
                        continue;
                    }
                    Err(RecvError::Closed) => return,
                };
                share_key(&db, &key_store, &shared, &id).await;
            }
        });
        Ok(())
    }
}

impl ReturnSink for Cluster {
    /// Announces a return this replica stored, for the replica following its job.
    fn announce(&self, ret: Arc<pb::JobReturn>) {
        let notice = cpb::ReturnNotice {
            ret: Some(Arc::unwrap_or_clone(ret)),
        };
        self.shared
            .send(("returns", Bytes::from(notice.encode_to_vec())));
    }
}

impl FactShare for Cluster {
    /// Shares a minion's changed grains and pillar with the other replicas and the database.
    fn changed(&self, id: &str, grains: Option<&str>, pillar: Option<&Value>) {
        let notice = cpb::FactsNotice {
            id: id.to_owned(),
            grains_json: grains.unwrap_or("null").to_owned(),
            pillar_json: pillar.map_or_else(|| "null".to_owned(), Value::to_string),
        };
        let row = (
            notice.id.clone(),
            notice.grains_json.clone(),
            notice.pillar_json.clone(),
        );
        self.shared
            .send(("facts", Bytes::from(notice.encode_to_vec())));
        if self.facts_rows.try_send(row).is_err() {
            self.dropped.add("facts_store", 1);
        }
    }
}

/// Keeps facts shared by another replica (JSON text; `null`: not known there).
fn mirror_facts(facts: &FactStore, id: &str, grains: &str, pillar: &str) {
    match (
        serde_json::from_str::<Value>(grains),
        serde_json::from_str::<Value>(pillar),
    ) {
        (Ok(g), Ok(p)) => facts.mirror(
            id,
            Some(&g).filter(|g| !g.is_null()),
            Some(p).filter(|p| !p.is_null()),
        ),
        _ => tracing::warn!(minion = %id, "undecodable minion data from the cluster"),
    }
}

/// Writes the facts queued for PostgreSQL, as many as are waiting (up to [`FACTS_BATCH`]) in
/// one statement; at stop, what is queued is written before the task ends.
async fn write_facts(
    store: Arc<store::ClusterStore>,
    mut rows: mpsc::Receiver<(String, String, String)>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut batch = Vec::with_capacity(FACTS_BATCH);
    let mut stopping = false;
    loop {
        tokio::select! {
            biased;
            n = rows.recv_many(&mut batch, FACTS_BATCH) => {
                if n == 0 {
                    return;
                }
                if let Err(e) = store.put_facts(&batch).await {
                    tracing::warn!(minions = batch.len(), "minion data not stored in PostgreSQL: {e}");
                }
                batch.clear();
            }
            () = tasks::Tasks::stopped(&mut stop), if !stopping => {
                stopping = true;
                rows.close();
            }
        }
    }
}

/// Writes `id`'s keys as this replica has them to PostgreSQL and tells the other replicas.
async fn share_key(
    store: &store::ClusterStore,
    keys: &KeyStore,
    shared: &outbox::Outbox<(&'static str, Bytes)>,
    id: &str,
) {
    let entries = keys.entries(id);
    match store.put_keys(id, &entries).await {
        Ok(()) => {
            shared.send(("keys", Bytes::copy_from_slice(id.as_bytes())));
        }
        Err(e) => tracing::warn!(minion = %id, "key change not shared with the cluster: {e}"),
    }
}
