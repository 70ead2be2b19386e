//! Which replica holds the single-runner duties (reactor, presence, pruner, event returns):
//! the one holding a PostgreSQL advisory lock named after the cluster. PostgreSQL releases the
//! lock when the holder's session ends, so a dead replica hands the duties on by itself; no
//! election protocol of our own.
//!
//! The holder checks its session every second and lets go at the first failed check, so a
//! replica cut off from the database stops its duties about when PostgreSQL drops its lock.

use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tokio_postgres::{Client, Config, NoTls};

use crate::duties::Leadership;

/// How often the holder checks its session, and a contender asks for the lock.
const TICK: Duration = Duration::from_secs(1);

/// The advisory lock key for `cluster_id`: the first 8 bytes of a SHA-256, stable across
/// versions and replicas.
pub fn lock_key(cluster_id: &str) -> i64 {
    let digest = Sha256::digest(format!("saltq-cluster-duties:{cluster_id}"));
    let mut b = [0u8; 8];
    b.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(b)
}

/// Leadership through a PostgreSQL advisory lock.
pub struct PgLeadership {
    held: watch::Sender<bool>,
}

impl Leadership for PgLeadership {
    fn watch(&self) -> watch::Receiver<bool> {
        self.held.subscribe()
    }
}

impl PgLeadership {
    /// Starts contending for the lock of `cluster_id` on the database of `url`, until the
    /// replica stops.
    pub fn start(url: &str, cluster_id: &str, tasks: &super::tasks::Tasks) -> PgLeadership {
        let shutdown = tasks.stopping();
        let (held, _) = watch::channel(false);
        let key = lock_key(cluster_id);
        let config = url.parse::<Config>();
        let tx = held.clone();
        tasks.spawn_watching(async move {
            let mut config = match config {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!("cannot contend for the cluster's duties: {e}");
                    return;
                }
            };
            config.application_name("saltq-master duties");
            config.connect_timeout(Duration::from_secs(5));
            contend(config, key, tx, shutdown).await;
        });
        PgLeadership { held }
    }
}

async fn connect(config: &Config) -> Result<Client, tokio_postgres::Error> {
    let (client, conn) = config.connect(NoTls).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// Holds the lock whenever it can, saying so on `held`.
async fn contend(
    config: Config,
    key: i64,
    held: watch::Sender<bool>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut client: Option<Client> = None;
    loop {
        if *shutdown.borrow() {
            held.send_replace(false);
            return;
        }
        if client.as_ref().is_none_or(Client::is_closed) {
            held.send_replace(false);
            client = connect(&config)
                .await
                .map_err(|e| tracing::warn!("duties lock: cannot reach PostgreSQL: {e}"))
                .ok();
        }
        if let Some(c) = &client {
            let step = if *held.borrow() {
                // Still ours while the session lives.
                tokio::time::timeout(TICK * 3, c.simple_query("SELECT 1"))
                    .await
                    .map_err(|_| "timed out".to_owned())
                    .and_then(|r| r.map(|_| true).map_err(|e| e.to_string()))
            } else {
                tokio::time::timeout(
                    TICK * 3,
                    c.query_one("SELECT pg_try_advisory_lock($1)", &[&key]),
                )
                .await
                .map_err(|_| "timed out".to_owned())
                .and_then(|r| r.map_err(|e| e.to_string()))
                .and_then(|row| row.try_get::<_, bool>(0).map_err(|e| e.to_string()))
            };
            match step {
                Ok(now_held) => {
                    if now_held && !*held.borrow() {
                        tracing::info!("this replica holds the cluster's single-runner duties");
                    }
                    held.send_replace(now_held);
                }
                Err(e) => {
                    tracing::warn!("duties lock: session lost, letting go: {e}");
                    held.send_replace(false);
                    client = None;
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = shutdown.changed() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_keys_are_stable_and_per_cluster() {
        assert_eq!(lock_key("prod"), lock_key("prod"));
        assert_ne!(lock_key("prod"), lock_key("staging"));
    }
}
