//! The Salt Mine's store: each minion's mine (`{function: data}`, Salt's `minions/<id>`
//! bank, key `mine`) in the job cache's database, so the replicas of a cluster sharing the
//! PostgreSQL cache share the mine. One row per minion; the merge of a new `mine.update`
//! into the stored data happens in one transaction (SQLite) or one statement (PostgreSQL).
//!
//! Mine writes do not go through the batching writer: they are few (one per minion per
//! `mine_interval`) and the caller waits for each. SQLite writes take their own connection
//! on the blocking pool (WAL and the busy timeout order them with the writer's batches).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use serde_json::{Map, Value};

use crate::error::ReadError;
use crate::{CacheError, JobCache, Reader};

/// Each minion's mine: minion id to `{function: data}`.
pub type MineData = BTreeMap<String, Map<String, Value>>;

/// How long an SQLite mine write waits for the writer's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

impl JobCache {
    /// Stores minion `id`'s mine data: merged into what is stored (new functions replace old
    /// ones of the same name), or replacing all of it when `clear` (Salt's `mine.update
    /// clear=True`).
    pub async fn mine_store(
        &self,
        id: &str,
        data: Map<String, Value>,
        clear: bool,
    ) -> Result<(), CacheError> {
        let what = format!("mine data of minion {id}");
        let id = id.to_owned();
        let result = match &self.inner.reader {
            Reader::Sqlite(r) => {
                let path = r.path().to_owned();
                tokio::task::spawn_blocking(move || {
                    sqlite_write(&path, &id, move |old| {
                        let mut merged = if clear { Map::new() } else { old };
                        merged.extend(data);
                        Some(merged)
                    })
                })
                .await
                .map_err(ReadError::from)
                .and_then(|r| r)
            }
            Reader::Postgres(r) => {
                let sql = format!(
                    "INSERT INTO {t} AS m (minion_id, data) VALUES ($1, $2::jsonb)
                     ON CONFLICT (minion_id) DO UPDATE SET data = CASE WHEN $3::bool
                         THEN EXCLUDED.data ELSE m.data || EXCLUDED.data END",
                    t = r.mine_table()
                );
                async {
                    let conn = r.conn().await?;
                    conn.client
                        .execute(&sql, &[&id, &Value::Object(data), &clear])
                        .await?;
                    Ok(())
                }
                .await
            }
        };
        result.map_err(|e| self.write_error(e, what))
    }

    /// Removes function `fun` from minion `id`'s mine (`mine.delete`); whether it was there.
    pub async fn mine_delete(&self, id: &str, fun: &str) -> Result<bool, CacheError> {
        let what = format!("mine function {fun} of minion {id}");
        let (id, fun) = (id.to_owned(), fun.to_owned());
        let result = match &self.inner.reader {
            Reader::Sqlite(r) => {
                let path = r.path().to_owned();
                tokio::task::spawn_blocking(move || {
                    let mut found = false;
                    sqlite_write(&path, &id, |mut old| {
                        found = old.remove(&fun).is_some();
                        found.then_some(old)
                    })?;
                    Ok(found)
                })
                .await
                .map_err(ReadError::from)
                .and_then(|r| r)
            }
            Reader::Postgres(r) => {
                let sql = format!(
                    "UPDATE {t} SET data = data - $2 WHERE minion_id = $1 AND data ? $2",
                    t = r.mine_table()
                );
                async {
                    let conn = r.conn().await?;
                    Ok(conn.client.execute(&sql, &[&id, &fun]).await? > 0)
                }
                .await
            }
        };
        result.map_err(|e| self.write_error(e, what))
    }

    /// Removes all of minion `id`'s mine (`mine.flush`, and a deleted key); whether it had one.
    pub async fn mine_flush(&self, id: &str) -> Result<bool, CacheError> {
        let what = format!("mine of minion {id}");
        let id = id.to_owned();
        let result = match &self.inner.reader {
            Reader::Sqlite(r) => {
                let path = r.path().to_owned();
                tokio::task::spawn_blocking(move || -> Result<bool, ReadError> {
                    let conn = sqlite_writer(&path)?;
                    Ok(conn.execute("DELETE FROM mine WHERE minion_id = ?1", [&id])? > 0)
                })
                .await
                .map_err(ReadError::from)
                .and_then(|r| r)
            }
            Reader::Postgres(r) => {
                let sql = format!("DELETE FROM {t} WHERE minion_id = $1", t = r.mine_table());
                async {
                    let conn = r.conn().await?;
                    Ok(conn.client.execute(&sql, &[&id]).await? > 0)
                }
                .await
            }
        };
        result.map_err(|e| self.write_error(e, what))
    }

    /// The mine of the given minions (every minion with a mine when `ids` is `None`); a
    /// minion without one is absent from the answer.
    pub async fn mine_fetch(&self, ids: Option<Vec<String>>) -> Result<MineData, CacheError> {
        let result = match &self.inner.reader {
            Reader::Sqlite(r) => {
                r.with_conn(move |conn| {
                    let mut stmt = conn.prepare_cached("SELECT minion_id, data FROM mine")?;
                    let rows = stmt.query_map([], |row| {
                        Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                    })?;
                    let mut out = MineData::new();
                    for row in rows {
                        let (id, text) = row?;
                        if ids.as_ref().is_none_or(|ids| ids.contains(&id)) {
                            out.insert(id.clone(), decode(&text, &id)?);
                        }
                    }
                    Ok(out)
                })
                .await
            }
            Reader::Postgres(r) => {
                let sql = format!(
                    "SELECT minion_id, data FROM {t}
                     WHERE $1::text[] IS NULL OR minion_id = ANY($1::text[])",
                    t = r.mine_table()
                );
                async {
                    let conn = r.conn().await?;
                    let mut out = MineData::new();
                    for row in conn.client.query(&sql, &[&ids]).await? {
                        let id: String = row.try_get(0)?;
                        match row.try_get::<_, Value>(1)? {
                            Value::Object(m) => out.insert(id, m),
                            _ => {
                                return Err(ReadError::Corrupt(format!(
                                    "mine of minion {id} is not a dict"
                                )));
                            }
                        };
                    }
                    Ok(out)
                }
                .await
            }
        };
        result.map_err(|e| e.into_cache_error("the mine", &self.inner.location))
    }

    /// A failed mine write as the cache's write error.
    fn write_error(&self, e: ReadError, what: String) -> CacheError {
        let location = self.inner.location.clone();
        match e {
            ReadError::Db(cause) => CacheError::Write {
                what,
                location,
                cause,
            },
            ReadError::Corrupt(reason) => CacheError::Corrupt {
                what,
                location,
                reason,
            },
        }
    }
}

/// A write connection on the SQLite cache (the read pool's connections are query-only).
fn sqlite_writer(path: &std::path::Path) -> Result<Connection, ReadError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

/// Reads minion `id`'s mine, lets `change` decide its new value (`None`: leave it), and
/// writes it back, in one immediate transaction.
fn sqlite_write(
    path: &std::path::Path,
    id: &str,
    change: impl FnOnce(Map<String, Value>) -> Option<Map<String, Value>>,
) -> Result<(), ReadError> {
    let mut conn = sqlite_writer(path)?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let old: Option<String> = tx
        .query_row("SELECT data FROM mine WHERE minion_id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()?;
    let old = old.map(|t| decode(&t, id)).transpose()?.unwrap_or_default();
    if let Some(new) = change(old) {
        let text =
            serde_json::to_string(&Value::Object(new)).map_err(|e| ReadError::Db(Arc::new(e)))?;
        tx.execute(
            "INSERT INTO mine (minion_id, data) VALUES (?1, ?2)
             ON CONFLICT (minion_id) DO UPDATE SET data = excluded.data",
            [id, &text],
        )?;
    }
    tx.commit()?;
    Ok(())
}

/// A stored mine from its JSON text.
fn decode(text: &str, id: &str) -> Result<Map<String, Value>, ReadError> {
    match serde_json::from_str(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ReadError::Corrupt(format!(
            "mine of minion {id} is not a dict"
        ))),
        Err(e) => Err(ReadError::Corrupt(format!(
            "mine of minion {id} is not JSON: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CacheConfig;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("not a dict"),
        }
    }

    async fn check_store(cache: &JobCache) {
        let id = format!("mine-test-{}", std::process::id());
        cache.mine_flush(&id).await.unwrap();
        cache
            .mine_store(&id, map(json!({"a": [1], "b": {"x": "y"}})), false)
            .await
            .unwrap();
        cache
            .mine_store(&id, map(json!({"a": [2], "c": true})), false)
            .await
            .unwrap();
        let got = cache.mine_fetch(Some(vec![id.clone()])).await.unwrap();
        assert_eq!(
            Value::Object(got[&id].clone()),
            json!({"a": [2], "b": {"x": "y"}, "c": true})
        );
        assert!(cache.mine_delete(&id, "b").await.unwrap());
        assert!(!cache.mine_delete(&id, "b").await.unwrap());
        cache
            .mine_store(&id, map(json!({"z": 1})), true)
            .await
            .unwrap();
        let got = cache.mine_fetch(None).await.unwrap();
        assert_eq!(Value::Object(got[&id].clone()), json!({"z": 1}));
        assert!(cache.mine_flush(&id).await.unwrap());
        assert!(!cache.mine_flush(&id).await.unwrap());
        let got = cache.mine_fetch(Some(vec![id.clone()])).await.unwrap();
        assert!(got.is_empty());
    }

    #[tokio::test]
    async fn sqlite_mine_merges_deletes_and_flushes() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = CacheConfig::Sqlite {
            path: dir.path().join("cache.db"),
        };
        let cache = JobCache::open(&cfg).await.unwrap();
        check_store(&cache).await;
        // The mine survives reopening the cache (a master restart).
        cache
            .mine_store("m1", map(json!({"f": "kept"})), false)
            .await
            .unwrap();
        cache.close().await;
        let cache = JobCache::open(&cfg).await.unwrap();
        let got = cache.mine_fetch(None).await.unwrap();
        assert_eq!(Value::Object(got["m1"].clone()), json!({"f": "kept"}));
    }

    #[tokio::test]
    async fn postgres_mine_merges_deletes_and_flushes() {
        let Ok(url) = std::env::var("SALTQ_TEST_POSTGRES") else {
            eprintln!("SALTQ_TEST_POSTGRES is not set: skipping the PostgreSQL mine test");
            return;
        };
        let cfg = CacheConfig::Postgres {
            url,
            schema: Some("saltq_mine_test".into()),
        };
        let cache = JobCache::open(&cfg).await.unwrap();
        check_store(&cache).await;
    }
}
