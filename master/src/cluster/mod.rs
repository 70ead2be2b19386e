//! Cluster mode (`cluster_id`): several replicas that are one master, on NATS for live traffic
//! and PostgreSQL for shared state; no consensus or gossip of our own. Each part fills one of
//! the job path's seams (ARCHITECTURE.md):
//!
//! - delivery: [`delivery::ClusterDelivery`] routes a job to the replica holding each
//!   minion's subscription ([`routes::Routes`] is the table, without I/O);
//! - return fan-out: a stored return is announced on NATS, and the replica following its job
//!   streams it to the caller ([`Cluster::share_return`]);
//! - minion facts: grains and pillar go to PostgreSQL and, live, to every replica
//!   ([`Cluster::share_facts`]);
//! - keys: every change is written to PostgreSQL and announced; the other replicas copy it
//!   into their key store ([`crate::keys::KeyStore::mirror`]);
//! - the event bus: [`events::ClusterBus`];
//! - single-runner duties: [`leader::PgLeadership`];
//! - jids: the shared job cache (`jids.rs`).

pub mod counts;
pub mod delivery;
pub mod events;
pub mod leader;
pub mod nats;
pub mod routes;
pub mod store;

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use prost::Message;
use saltq_proto::cluster::v1 as cpb;
use saltq_proto::v1 as pb;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::config::{ClusterConfig, MasterConfig};
use crate::delivery::Delivery;
use crate::duties::Leadership;
use crate::events::Bus;
use crate::returns::ReturnSink;
use crate::state::Master;

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

/// The parts a replica runs with.
pub struct Cluster {
    /// The NATS connection.
    pub nats: nats::Nats,
    /// The cluster-wide event bus.
    pub bus: Arc<events::ClusterBus>,
    /// Who holds the single-runner duties.
    pub leadership: Arc<leader::PgLeadership>,
    /// Delivery to subscriptions on any replica.
    pub delivery: Arc<delivery::ClusterDelivery>,
    /// Keys and minion data in PostgreSQL.
    pub store: Arc<store::ClusterStore>,
    /// Messages for NATS, sent in order by a task: `(subject, body)`.
    outbox: mpsc::UnboundedSender<(String, Bytes)>,
}

impl Cluster {
    /// Connects to NATS and PostgreSQL and starts the cluster's bus, delivery and the contest
    /// for the duties.
    pub async fn start(
        cfg: &MasterConfig,
        cluster: &ClusterConfig,
        shutdown: watch::Receiver<bool>,
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
        let bus = events::ClusterBus::start(nats.clone(), 8192).await?;
        let delivery = delivery::ClusterDelivery::start(nats.clone(), shutdown.clone()).await?;
        let leadership = Arc::new(leader::PgLeadership::start(&url, &cluster.id, shutdown));
        let (outbox, mut queued) = mpsc::unbounded_channel::<(String, Bytes)>();
        let out = nats.clone();
        tokio::spawn(async move {
            while let Some((subject, body)) = queued.recv().await {
                if let Err(e) = out.publish(subject, body).await {
                    tracing::warn!("cluster message not sent: {e}");
                }
            }
        });
        Ok(Cluster {
            nats,
            bus,
            leadership,
            delivery,
            store,
            outbox,
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
            dropped: vec![(
                "events",
                self.bus.dropped.load(std::sync::atomic::Ordering::Relaxed),
            )],
        }
    }

    /// Announces a return this replica stored, for the replica following its job.
    pub fn share_return(&self, ret: &pb::JobReturn) {
        let notice = cpb::ReturnNotice {
            ret: Some(ret.clone()),
        };
        let _ = self.outbox.send((
            self.nats.subject("returns"),
            Bytes::from(notice.encode_to_vec()),
        ));
    }

    /// Shares a minion's grains and pillar with the other replicas and the database.
    pub fn share_facts(&self, id: &str, grains: &Value, pillar: &Value) {
        let notice = cpb::FactsNotice {
            id: id.to_owned(),
            grains_json: grains.to_string(),
            pillar_json: pillar.to_string(),
        };
        let _ = self.outbox.send((
            self.nats.subject("facts"),
            Bytes::from(notice.encode_to_vec()),
        ));
        let store = self.store.clone();
        tokio::spawn(async move {
            let n = notice;
            if let Err(e) = store.put_facts(&n.id, &n.grains_json, &n.pillar_json).await {
                tracing::warn!(minion = %n.id, "minion data not stored in PostgreSQL: {e}");
            }
        });
    }
}

/// Brings this replica's keys and minion data in line with the cluster's, then keeps them so:
/// other replicas' returns, minion data and key changes are applied here, and this replica's
/// key changes are written to PostgreSQL and announced.
pub async fn sync(master: Arc<Master>) -> Result<(), ClusterError> {
    let Some(c) = master.cluster.as_ref() else {
        return Ok(());
    };
    let me = c.nats.replica().to_owned();
    let mut returns = c.nats.subscribe(c.nats.subject("returns")).await?;
    let mut facts = c.nats.subscribe(c.nats.subject("facts")).await?;
    let mut keys = c.nats.subscribe(c.nats.subject("keys")).await?;
    let mut local_keys = master.keys.changes();

    // Keys: PostgreSQL holds the cluster's; the first replica seeds it with its own.
    let stored = c.store.all_keys().await.map_err(ClusterError::Store)?;
    if stored.is_empty() {
        // An id with keys in two states (accepted and denied) is written once.
        let ids: std::collections::BTreeSet<String> =
            master.keys.all().into_iter().map(|(_, id, _)| id).collect();
        for id in ids {
            let entries = master.keys.entries(&id);
            c.store
                .put_keys(&id, &entries)
                .await
                .map_err(ClusterError::Store)?;
        }
    } else {
        let mut by_id: std::collections::BTreeMap<String, Vec<(crate::keys::KeyState, String)>> =
            Default::default();
        for (id, state, pem) in stored {
            by_id.entry(id).or_default().push((state, pem));
        }
        for (_, id, _) in master.keys.all() {
            by_id.entry(id).or_default();
        }
        for (id, entries) in by_id {
            if let Err(e) = master.keys.mirror(&id, &entries) {
                tracing::warn!(minion = %id, "key not copied from the cluster: {e}");
            }
        }
    }
    // Minion data for targeting.
    for (id, grains, pillar) in c.store.all_facts().await.map_err(ClusterError::Store)? {
        if let (Ok(g), Ok(p)) = (serde_json::from_str(&grains), serde_json::from_str(&pillar)) {
            master.facts.set(&id, &g, p);
        }
    }

    // Cluster-wide job counters, from the bus that carries every replica's events.
    let m = master.clone();
    tokio::spawn(async move {
        use std::sync::atomic::Ordering::Relaxed;
        let mut bus = m.events.subscribe();
        while let Some(e) = bus.next().await {
            let Ok(e) = e else { continue };
            if let Some(rest) = e.tag.strip_prefix("salt/job/") {
                if rest.ends_with("/new") {
                    m.metrics.cluster_jobs.fetch_add(1, Relaxed);
                } else if rest.contains("/ret/") {
                    m.metrics.cluster_returns.fetch_add(1, Relaxed);
                }
            }
        }
    });
    let m = master.clone();
    let my = me.clone();
    tokio::spawn(async move {
        while let Some(msg) = returns.next().await {
            if msg.replica == my {
                continue;
            }
            if let Ok(cpb::ReturnNotice { ret: Some(ret) }) = cpb::ReturnNotice::decode(msg.payload)
            {
                m.followers.announce(Arc::new(ret));
            }
        }
    });
    let m = master.clone();
    let my = me.clone();
    tokio::spawn(async move {
        while let Some(msg) = facts.next().await {
            if msg.replica == my {
                continue;
            }
            let Ok(n) = cpb::FactsNotice::decode(msg.payload) else {
                continue;
            };
            if let (Ok(g), Ok(p)) = (
                serde_json::from_str::<Value>(&n.grains_json),
                serde_json::from_str::<Value>(&n.pillar_json),
            ) {
                m.facts.set(&n.id, &g, p);
            }
        }
    });
    let m = master.clone();
    let my = me.clone();
    tokio::spawn(async move {
        while let Some(msg) = keys.next().await {
            if msg.replica == my {
                continue;
            }
            let id = String::from_utf8_lossy(&msg.payload).into_owned();
            let Some(c) = m.cluster.as_ref() else { return };
            match c.store.keys(&id).await {
                Ok(entries) => {
                    if let Err(e) = m.keys.mirror(&id, &entries) {
                        tracing::warn!(minion = %id, "key not copied from the cluster: {e}");
                    }
                }
                Err(e) => tracing::warn!(minion = %id, "cannot read the cluster's key: {e}"),
            }
        }
    });
    let m = master.clone();
    tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            let id = match local_keys.recv().await {
                Ok(change) if change.mirrored => continue,
                Ok(change) => change.id,
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!("{n} key changes missed for the cluster; sending them all");
                    for (_, id, _) in m.keys.all() {
                        share_key(&m, &id).await;
                    }
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            share_key(&m, &id).await;
        }
    });
    Ok(())
}

/// Writes `id`'s keys as this replica has them to PostgreSQL and tells the other replicas.
async fn share_key(master: &Master, id: &str) {
    let Some(c) = master.cluster.as_ref() else {
        return;
    };
    let entries = master.keys.entries(id);
    match c.store.put_keys(id, &entries).await {
        Ok(()) => {
            let _ = c.outbox.send((
                c.nats.subject("keys"),
                Bytes::copy_from_slice(id.as_bytes()),
            ));
        }
        Err(e) => tracing::warn!(minion = %id, "key change not shared with the cluster: {e}"),
    }
}
