//! The cluster's shared state in PostgreSQL, beside the job cache (same database and schema):
//! every minion key in its states, and every minion's grains and pillar for targeting. A
//! replica that starts reads them all; changes are written here first and announced on NATS,
//! and a replica told of a change reads it back from here, so all replicas converge on what
//! the database holds.

use std::time::Duration;

use tokio::sync::Mutex;
use tokio_postgres::{Client, Config, NoTls};

use super::counts::Counts;
use crate::keys::KeyState;

/// The cluster's tables.
pub struct ClusterStore {
    config: Config,
    /// `schema.` or empty.
    prefix: String,
    conn: Mutex<Option<Client>>,
    /// Statements sent, by kind ([`KINDS`]), for /metrics.
    statements: Counts,
}

/// The kinds of statement counted on `/metrics`.
pub const KINDS: &[&str] = &["facts", "keys", "read", "schema", "other"];

/// A database error, as text for messages.
pub type StoreError = String;

fn parse_state(s: &str) -> Option<KeyState> {
    KeyState::ALL.into_iter().find(|k| k.name() == s)
}

impl ClusterStore {
    /// Connects and creates the tables if missing.
    pub async fn open(url: &str, schema: Option<&str>) -> Result<ClusterStore, StoreError> {
        let mut config: Config = url.parse().map_err(|e| format!("{e}"))?;
        config.application_name("saltq-master cluster");
        config.connect_timeout(Duration::from_secs(5));
        let prefix = schema
            .map(|s| format!("\"{}\".", s.replace('"', "\"\"")))
            .unwrap_or_default();
        let store = ClusterStore {
            config,
            prefix,
            conn: Mutex::new(None),
            statements: Counts::new(KINDS),
        };
        let p = &store.prefix;
        let create_schema = schema
            .map(|s| {
                format!(
                    "CREATE SCHEMA IF NOT EXISTS \"{}\";",
                    s.replace('"', "\"\"")
                )
            })
            .unwrap_or_default();
        store
            .batch(&format!(
                "SELECT pg_advisory_xact_lock(7305357172391010001);
                 {create_schema}
                 CREATE TABLE IF NOT EXISTS {p}saltq_cluster_keys (
                     id    text NOT NULL,
                     state text NOT NULL,
                     pem   text NOT NULL,
                     PRIMARY KEY (id, state)
                 );
                 CREATE TABLE IF NOT EXISTS {p}saltq_cluster_minions (
                     id         text PRIMARY KEY,
                     grains     text NOT NULL,
                     pillar     text NOT NULL,
                     updated_at timestamptz NOT NULL DEFAULT now()
                 );"
            ))
            .await?;
        Ok(store)
    }

    async fn client(&self) -> Result<tokio::sync::MappedMutexGuard<'_, Client>, StoreError> {
        let mut slot = self.conn.lock().await;
        if slot.as_ref().is_none_or(Client::is_closed) {
            let (client, conn) = self
                .config
                .connect(NoTls)
                .await
                .map_err(|e| e.to_string())?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            *slot = Some(client);
        }
        Ok(tokio::sync::MutexGuard::map(slot, |c| {
            c.as_mut().expect("connected above")
        }))
    }

    /// Statements sent so far, by kind.
    pub fn statements(&self) -> Vec<(&'static str, u64)> {
        self.statements.read()
    }

    async fn batch(&self, sql: &str) -> Result<(), StoreError> {
        self.statements.add("schema", 1);
        let mut c = self.client().await?;
        let tx = c.transaction().await.map_err(|e| e.to_string())?;
        tx.batch_execute(sql).await.map_err(|e| e.to_string())?;
        tx.commit().await.map_err(|e| e.to_string())
    }

    /// Makes `id`'s stored keys exactly `entries`.
    pub async fn put_keys(
        &self,
        id: &str,
        entries: &[(KeyState, String)],
    ) -> Result<(), StoreError> {
        let p = &self.prefix;
        let mut c = self.client().await?;
        let tx = c.transaction().await.map_err(|e| e.to_string())?;
        self.statements.add("keys", 1 + entries.len() as u64);
        tx.execute(
            &format!("DELETE FROM {p}saltq_cluster_keys WHERE id = $1"),
            &[&id],
        )
        .await
        .map_err(|e| e.to_string())?;
        for (state, pem) in entries {
            tx.execute(
                &format!("INSERT INTO {p}saltq_cluster_keys (id, state, pem) VALUES ($1, $2, $3)"),
                &[&id, &state.name(), pem],
            )
            .await
            .map_err(|e| e.to_string())?;
        }
        tx.commit().await.map_err(|e| e.to_string())
    }

    /// `id`'s stored keys.
    pub async fn keys(&self, id: &str) -> Result<Vec<(KeyState, String)>, StoreError> {
        let p = &self.prefix;
        let c = self.client().await?;
        self.statements.add("read", 1);
        let rows = c
            .query(
                &format!("SELECT state, pem FROM {p}saltq_cluster_keys WHERE id = $1"),
                &[&id],
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok(rows
            .iter()
            .filter_map(|r| Some((parse_state(r.get(0))?, r.get::<_, String>(1))))
            .collect())
    }

    /// Every stored key: `(id, state, pem)`.
    pub async fn all_keys(&self) -> Result<Vec<(String, KeyState, String)>, StoreError> {
        let p = &self.prefix;
        let c = self.client().await?;
        self.statements.add("read", 1);
        let rows = c
            .query(
                &format!("SELECT id, state, pem FROM {p}saltq_cluster_keys"),
                &[],
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok(rows
            .iter()
            .filter_map(|r| Some((r.get(0), parse_state(r.get(1))?, r.get(2))))
            .collect())
    }

    /// Records minions' grains and pillar (JSON text), `(id, grains, pillar)`, in one
    /// statement; of two rows for one id the later wins.
    pub async fn put_facts(&self, rows: &[(String, String, String)]) -> Result<(), StoreError> {
        // One statement may not change a row twice: keep each id's last row.
        let mut last: std::collections::HashMap<&str, usize> = Default::default();
        for (i, (id, _, _)) in rows.iter().enumerate() {
            last.insert(id, i);
        }
        let mut keep: Vec<usize> = last.into_values().collect();
        keep.sort_unstable();
        if keep.is_empty() {
            return Ok(());
        }
        let column = |f: fn(&(String, String, String)) -> &String| -> Vec<&str> {
            keep.iter().map(|&i| f(&rows[i]).as_str()).collect()
        };
        let (ids, grains, pillars) = (column(|r| &r.0), column(|r| &r.1), column(|r| &r.2));
        let p = &self.prefix;
        let c = self.client().await?;
        self.statements.add("facts", 1);
        c.execute(
            &format!(
                "INSERT INTO {p}saltq_cluster_minions (id, grains, pillar)
                 SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
                 ON CONFLICT (id) DO UPDATE
                 SET grains = EXCLUDED.grains, pillar = EXCLUDED.pillar, updated_at = now()"
            ),
            &[&ids, &grains, &pillars],
        )
        .await
        .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Every minion's grains and pillar: `(id, grains, pillar)`, JSON text.
    pub async fn all_facts(&self) -> Result<Vec<(String, String, String)>, StoreError> {
        let p = &self.prefix;
        let c = self.client().await?;
        self.statements.add("read", 1);
        let rows = c
            .query(
                &format!("SELECT id, grains, pillar FROM {p}saltq_cluster_minions"),
                &[],
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect())
    }
}
