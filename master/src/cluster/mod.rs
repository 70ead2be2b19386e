//! Cluster mode (`cluster_id`): several replicas that are one master, on NATS for live traffic
//! and PostgreSQL for shared state; no consensus or gossip of our own. Each part fills one of
//! the job path's seams (ARCHITECTURE.md): the event bus ([`events::ClusterBus`]), the
//! single-runner duties ([`leader::PgLeadership`]), jid allocation (the shared job cache,
//! `jids.rs`).

pub mod events;
pub mod leader;
pub mod nats;

use std::sync::Arc;

use tokio::sync::watch;

use crate::config::{ClusterConfig, MasterConfig};
use crate::duties::Leadership;
use crate::events::Bus;

/// The parts a replica runs with.
pub struct Cluster {
    /// The NATS connection.
    pub nats: nats::Nats,
    /// The cluster-wide event bus.
    pub bus: Arc<events::ClusterBus>,
    /// Who holds the single-runner duties.
    pub leadership: Arc<leader::PgLeadership>,
}

impl Cluster {
    /// Connects to NATS and starts the cluster's bus and the contest for the duties.
    pub async fn start(
        cfg: &MasterConfig,
        cluster: &ClusterConfig,
        shutdown: watch::Receiver<bool>,
    ) -> Result<Cluster, nats::NatsError> {
        let nats = nats::Nats::connect(&nats::NatsOptions {
            servers: cluster.nats.clone(),
            cluster_id: cluster.id.clone(),
            // Unique per process even where replicas share one config (and so one id).
            replica: format!("{}-{:08x}", cfg.id, rand::random::<u32>()),
            ca_file: cluster.nats_ca_file.clone(),
            client_cert: cluster.nats_client_cert.clone(),
        })
        .await?;
        let bus = events::ClusterBus::start(nats.clone(), 8192).await?;
        let url = match &cfg.job_cache {
            saltq_jobcache::CacheConfig::Postgres { url, .. } => url.clone(),
            // Refused by the config check: a cluster always has the PostgreSQL job cache.
            saltq_jobcache::CacheConfig::Sqlite { .. } => String::new(),
        };
        let leadership = Arc::new(leader::PgLeadership::start(&url, &cluster.id, shutdown));
        Ok(Cluster {
            nats,
            bus,
            leadership,
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
}
