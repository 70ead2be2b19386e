//! Test fixtures: a cache in a temporary SQLite file or a throwaway PostgreSQL schema, and
//! builders for jobs and returns.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, TimeZone, Utc};
use saltq_jobcache::{CacheConfig, JobCache, JobRecord, ReturnRecord};
use serde_json::{Value, json};

/// The environment variable naming the PostgreSQL server for the PostgreSQL runs.
pub const POSTGRES_ENV: &str = "SALTQ_TEST_POSTGRES";

/// Where one test's cache lives; cleaned up on drop (also when the test panics).
pub struct Fixture {
    /// The config every handle of this test opens.
    pub cfg: CacheConfig,
    /// What to clean up.
    place: Place,
}

/// The backing store of a fixture.
enum Place {
    /// A temporary folder holding `cache.db`; removed when the fixture is dropped.
    Sqlite { _dir: tempfile::TempDir },
    /// A schema of its own, dropped on drop.
    Postgres { url: String, schema: String },
}

/// Says on stderr (not captured by the test harness) that a test was skipped, and why.
pub fn skipped(test: &str, why: &str) {
    note(&format!("skipped {test}: {why}"));
}

/// Writes a line to stderr, where the test harness does not capture it.
pub fn note(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

impl Fixture {
    /// A cache file in a fresh temporary folder.
    pub fn sqlite() -> Fixture {
        let dir = tempfile::tempdir().expect("create a temporary folder");
        let cfg = CacheConfig::Sqlite {
            path: dir.path().join("cache.db"),
        };
        Fixture {
            cfg,
            place: Place::Sqlite { _dir: dir },
        }
    }

    /// A schema of its own on the server named by `SALTQ_TEST_POSTGRES`, or `None` (after saying
    /// so) when the variable is unset.
    pub async fn postgres(test: &str) -> Option<Fixture> {
        let Ok(url) = std::env::var(POSTGRES_ENV) else {
            skipped(
                &format!("postgres::{test}"),
                &format!(
                    "{POSTGRES_ENV} is not set (set it to a libpq connection string, e.g. host=127.0.0.1 user=postgres dbname=test)"
                ),
            );
            return None;
        };
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let short: String = test.chars().take(28).collect();
        let schema = format!(
            "saltq_t_{short}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let cfg = CacheConfig::Postgres {
            url: url.clone(),
            schema: Some(schema.clone()),
        };
        Some(Fixture {
            cfg,
            place: Place::Postgres { url, schema },
        })
    }

    /// The SQLite file, for SQLite-only tests.
    pub fn sqlite_path(&self) -> Option<&std::path::Path> {
        match &self.cfg {
            CacheConfig::Sqlite { path } => Some(path),
            CacheConfig::Postgres { .. } => None,
        }
    }

    /// Opens a handle on this fixture's cache.
    pub async fn open(&self) -> JobCache {
        match JobCache::open(&self.cfg).await {
            Ok(cache) => cache,
            Err(e) => panic!("{e}"),
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let Place::Postgres { url, schema } = &self.place else {
            return;
        };
        let (url, schema) = (url.clone(), schema.clone());
        // A runtime of its own on a thread of its own: this may run inside the test's runtime,
        // or while it unwinds from a panic.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                let (client, connection) =
                    tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
                tokio::spawn(connection);
                client
                    .batch_execute(&format!(
                        "SET lock_timeout = '10s'; DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
                    ))
                    .await
            })?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            skipped("schema cleanup", "could not drop a test schema");
        }
    }
}

/// A fixed start for test times, so that jids are predictable.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5)
        .single()
        .expect("a valid time")
}

/// The jid Salt would give a job published at `t`.
pub fn jid_at(t: DateTime<Utc>) -> String {
    t.format("%Y%m%d%H%M%S%6f").to_string()
}

/// A job published at `start` running `fun` on `tgt`, expecting `minions`.
pub fn job(start: DateTime<Utc>, fun: Value, tgt: Value, minions: &[&str]) -> JobRecord {
    let jid = jid_at(start);
    JobRecord {
        load: json!({
            "jid": jid,
            "tgt": tgt,
            "tgt_type": if tgt.is_array() { "list" } else { "glob" },
            "fun": fun,
            "arg": [],
            "kwarg": {},
            "user": "root",
            "ret": "",
            "metadata": {"ticket": "T-1"},
        }),
        jid,
        minions: minions.iter().map(|m| (*m).to_owned()).collect(),
        start_time: start,
    }
}

/// A `test.ping` job published at `start`.
pub fn ping_job(start: DateTime<Utc>, minions: &[&str]) -> JobRecord {
    job(start, json!("test.ping"), json!("*"), minions)
}

/// `id`'s successful return for `jid`, returning `ret`.
pub fn ret(jid: &str, id: &str, ret: Value) -> ReturnRecord {
    ReturnRecord {
        jid: jid.to_owned(),
        id: id.to_owned(),
        fun: json!("test.ping"),
        fun_args: json!([]),
        ret,
        retcode: 0,
        success: true,
        out: None,
        metadata: None,
        stored_at: t0(),
    }
}

/// The jids of a job list, in order.
pub fn jids(summaries: &[saltq_jobcache::JobSummary]) -> Vec<&str> {
    summaries.iter().map(|s| s.job.jid.as_str()).collect()
}
