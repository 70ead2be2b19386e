//! What only the PostgreSQL backend can show: an unreachable server, a lost connection, a bad schema name.

use saltq_jobcache::{CacheConfig, CacheError, JobCache, StoreOutcome};
use serde_json::json;

use crate::support::{Fixture, note, ping_job, ret, t0};

/// An unreachable server fails `open` with an error naming the database but not the password.
#[tokio::test]
async fn unreachable_server_fails_open() {
    let cfg = CacheConfig::Postgres {
        url: "host=127.0.0.1 port=1 user=saltq password=hunter2 dbname=jobs connect_timeout=5"
            .to_owned(),
        schema: None,
    };
    assert!(!format!("{cfg:?}").contains("hunter2"));
    let err = JobCache::open(&cfg)
        .await
        .expect_err("nothing listens on port 1");
    assert!(matches!(err, CacheError::Open { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with("cannot open job cache at postgres://saltq@127.0.0.1:1/jobs: "),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
}

/// A connection string that does not parse is a config error.
#[tokio::test]
async fn bad_connection_string() {
    let cfg = CacheConfig::Postgres {
        url: "host=127.0.0.1 bogus_key=1".to_owned(),
        schema: None,
    };
    let err = JobCache::open(&cfg).await.expect_err("bad key");
    assert!(matches!(err, CacheError::Config { .. }), "{err:?}");
}

/// A schema name that cannot be an identifier is a config error.
#[tokio::test]
async fn bad_schema_name() {
    let cfg = CacheConfig::Postgres {
        url: "host=127.0.0.1 user=postgres".to_owned(),
        schema: Some(String::new()),
    };
    let err = JobCache::open(&cfg).await.expect_err("empty schema");
    assert!(matches!(err, CacheError::Config { .. }), "{err:?}");
}

/// `connection` with `application_name` set, in either connection string form.
fn with_application_name(url: &str, name: &str) -> String {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}application_name={name}")
    } else {
        format!("{url} application_name={name}")
    }
}

/// When the database drops the cache's connections, writes fail with an error (never a panic,
/// never a silent drop) until the connection is re-established, which the next write does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_connection_recovers() {
    let Some(fx) = Fixture::postgres("lost_connection_recovers").await else {
        return;
    };
    let CacheConfig::Postgres { url, schema } = &fx.cfg else {
        unreachable!("a postgres fixture")
    };
    let app = format!("saltq_test_{}", std::process::id());
    let cfg = CacheConfig::Postgres {
        url: with_application_name(url, &app),
        schema: schema.clone(),
    };
    let cache = JobCache::open(&cfg).await.expect("open");
    let j = ping_job(t0(), &["m1", "m2"]);
    cache.save_job(&j).await.expect("save");
    assert_eq!(cache.get_job(&j.jid).await.expect("get"), Some(j.clone()));

    let (admin, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("admin connection");
    tokio::spawn(connection);
    let count = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1";
    let killed = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .await
        .expect("terminate");
    assert!(
        killed.len() >= 2,
        "the writer's and the reader's connections"
    );
    for _ in 0..100 {
        let n: i64 = admin.query_one(count, &[&app]).await.expect("count").get(0);
        if n == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    // The first write may meet the dead connection (an error) or a fresh one; either way the
    // return is stored within a few tries, and an error says what failed.
    let mut outcome = None;
    for attempt in 1..=3 {
        match cache.store_return(ret(&j.jid, "m1", json!(true))).await {
            Ok(o) => {
                note(&format!(
                    "write {attempt} after the connections were dropped: {o:?}"
                ));
                outcome = Some(o);
                break;
            }
            Err(e) => {
                note(&format!(
                    "write {attempt} after the connections were dropped: {e}"
                ));
                assert!(matches!(e, CacheError::Write { .. }), "{e:?}");
                assert!(e.to_string().contains("return of job"), "{e}");
            }
        }
    }
    assert_eq!(outcome, Some(StoreOutcome::Stored));
    let mut returns = None;
    for _ in 0..3 {
        if let Ok(r) = cache.get_returns(&j.jid).await {
            returns = Some(r);
            break;
        }
    }
    assert_eq!(returns.map(|r| r.len()), Some(1));
    cache.check_writable().await.expect("writable again");
    let n: i64 = admin.query_one(count, &[&app]).await.expect("count").get(0);
    assert!(n >= 1, "reconnected");
    cache.close().await;
}
