//! The master's event return queue: filters, batches (one transaction each), several
//! returners at once, a PostgreSQL outage played by cutting a TCP proxy (the shared server keeps
//! running), exact drop counts past the bound, and shutdown.

use std::time::Duration;

use saltq_returners::{Event, EventReturnConfig, EventReturnQueue, EventReturnStats, Returners};
use serde_json::{Map, Value, json};

use crate::eventually;
use crate::support::{POSTGRES_ENV, PgDb, Proxy, closed_port, gate, pause};

fn event(tag: &str, seq: usize) -> Event {
    let mut data = Map::new();
    data.insert("seq".into(), json!(seq));
    Event {
        tag: tag.into(),
        data,
    }
}

#[tokio::test]
async fn whitelist_and_blacklist_pick_the_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("events");
    let returners = Returners::from_opts(&json!({"rawfile_json.filename": path})).expect("config");
    let config = EventReturnConfig {
        returners: vec!["rawfile_json".into()],
        whitelist: vec!["salt/job/*".into(), "salt/key".into()],
        blacklist: vec!["salt/job/*/ret/ignored*".into()],
        ..EventReturnConfig::default()
    };
    let (queue, done) = EventReturnQueue::new(returners, config).expect("queue");
    assert!(queue.accepts("salt/job/1/new") && queue.accepts("salt/key"));
    assert!(!queue.accepts("salt/auth") && !queue.accepts("salt/job/1/ret/ignored-minion"));
    let tags = [
        "salt/job/1/new",
        "salt/auth",
        "salt/job/1/ret/m1",
        "salt/job/1/ret/ignored-m2",
        "salt/key",
        "minion_start",
    ];
    for (i, tag) in tags.iter().enumerate() {
        queue.push(event(tag, i));
    }
    drop(queue);
    tokio::time::timeout(Duration::from_secs(10), done)
        .await
        .expect("closes")
        .expect("task");
    let text = std::fs::read_to_string(&path).expect("the file");
    let got: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("JSON")["tag"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(got, ["salt/job/1/new", "salt/job/1/ret/m1", "salt/key"]);
}

#[tokio::test]
async fn batches_are_one_transaction_each_and_reach_every_returner() {
    let Some(conn) = gate(
        POSTGRES_ENV,
        "batches_are_one_transaction_each_and_reach_every_returner",
    ) else {
        return;
    };
    let db = PgDb::create(&conn).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("events");
    let mut o = db.pgjsonb_opts();
    o.insert("rawfile_json.filename".into(), json!(path));
    o.insert("id".into(), json!("master-q"));
    let returners = Returners::from_opts(&Value::Object(o)).expect("config");
    let config = EventReturnConfig {
        returners: vec!["pgjsonb".into(), "rawfile_json".into()],
        queue: 10,
        ..EventReturnConfig::default()
    };
    let (queue, done) = EventReturnQueue::new(returners, config).expect("queue");
    for i in 0..30 {
        queue.push(event(&format!("salt/test/{i}"), i));
        if i % 7 == 0 {
            pause(5).await;
        }
    }
    eventually!(
        10.0,
        "60 events stored (30 per returner)",
        queue.stats().sent == 60
    );
    let stats = queue.stats();
    assert_eq!(
        stats,
        EventReturnStats {
            sent: 60,
            dropped: 0,
            failed_batches: 0,
            buffered: 0
        }
    );
    drop(queue);
    tokio::time::timeout(Duration::from_secs(10), done)
        .await
        .expect("closes")
        .expect("task");

    let c = db.client().await;
    // Rows inserted by one transaction share its xmin: 30 events in batches of 10 are 3.
    let rows = c
        .query(
            "SELECT xmin::text, count(*), min((data->>'seq')::int), max((data->>'seq')::int) \
             FROM salt_events GROUP BY xmin::text ORDER BY 3",
            &[],
        )
        .await
        .expect("transactions");
    let batches: Vec<(i64, i32, i32)> = rows
        .iter()
        .map(|r| (r.get(1), r.get(2), r.get(3)))
        .collect();
    assert_eq!(batches, [(10, 0, 9), (10, 10, 19), (10, 20, 29)]);
    let masters: i64 = c
        .query_one(
            "SELECT count(*) FROM salt_events WHERE master_id = 'master-q'",
            &[],
        )
        .await
        .expect("n")
        .get(0);
    assert_eq!(masters, 30);
    assert_eq!(
        std::fs::read_to_string(&path)
            .expect("file")
            .lines()
            .count(),
        30
    );
}

/// The `seq` of every stored event, in insertion order.
async fn stored_seqs(db: &PgDb) -> Vec<usize> {
    let rows = db
        .client()
        .await
        .query(
            "SELECT (data->>'seq')::int FROM salt_events ORDER BY id",
            &[],
        )
        .await
        .expect("events");
    rows.iter()
        .map(|r| usize::try_from(r.get::<_, i32>(0)).unwrap_or(usize::MAX))
        .collect()
}

#[tokio::test]
async fn a_database_outage_is_survived_within_the_bound_and_counted_beyond_it() {
    let test = "a_database_outage_is_survived_within_the_bound_and_counted_beyond_it";
    let Some(conn) = gate(POSTGRES_ENV, test) else {
        return;
    };
    let db = PgDb::create(&conn).await;
    let Some(upstream) = db.tcp_addr().await else {
        eprintln!(
            "skipped {test}: {POSTGRES_ENV} names a socket directory, and the proxy needs TCP"
        );
        return;
    };
    let proxy = Proxy::start(upstream).await;
    let mut o = db.pgjsonb_opts();
    o.insert("returner.pgjsonb.host".into(), json!("127.0.0.1"));
    o.insert("returner.pgjsonb.port".into(), json!(proxy.port));
    let returners = Returners::from_opts(&Value::Object(o)).expect("config");
    returners
        .create_schema("pgjsonb", None)
        .await
        .expect("schema through the proxy");
    const BOUND: usize = 50;
    let config = EventReturnConfig {
        returners: vec!["pgjsonb".into()],
        queue: 5,
        queue_max_age: Duration::from_millis(50),
        max_buffer: BOUND,
        retry_max: Duration::from_millis(300),
        ..EventReturnConfig::default()
    };
    let (queue, done) = EventReturnQueue::new(returners, config).expect("queue");
    let mut seq = 0;
    let mut push = |queue: &EventReturnQueue| {
        queue.push(event("salt/test", seq));
        seq += 1;
    };

    // Normal flow.
    for _ in 0..20 {
        push(&queue);
        pause(2).await;
    }
    eventually!(10.0, "the first 20 events", queue.stats().sent == 20);

    // Outage 1, shorter than the bound: nothing is lost.
    proxy.cut().await;
    for _ in 0..30 {
        push(&queue);
        pause(3).await;
    }
    eventually!(
        10.0,
        "a failed batch during the outage",
        queue.stats().failed_batches > 0
    );
    assert_eq!(queue.stats().sent, 20, "nothing gets through a cut proxy");
    proxy.restore().await;
    eventually!(
        15.0,
        "all 50 events after the first outage",
        queue.stats().sent == 50
    );
    assert_eq!(queue.stats().dropped, 0);

    // Outage 2, longer than the bound: 100 events arrive, BOUND wait, the oldest 50 are dropped.
    proxy.cut().await;
    for _ in 0..100 {
        push(&queue);
        pause(2).await;
    }
    eventually!(10.0, "the buffer to settle at its bound", {
        let s = queue.stats();
        s.buffered == BOUND && s.dropped == 50
    });
    proxy.restore().await;
    eventually!(
        15.0,
        "the buffered events after the second outage",
        queue.stats().sent == 100
    );
    let stats = queue.stats();
    assert_eq!((stats.sent, stats.dropped, stats.buffered), (100, 50, 0));
    assert!(stats.failed_batches >= 2, "{stats:?}");
    drop(queue);
    tokio::time::timeout(Duration::from_secs(10), done)
        .await
        .expect("closes")
        .expect("task");

    // Exactly the first 50, then the newest 50 of the second outage; the 50 before them lost.
    let want: Vec<usize> = (0..50).chain(100..150).collect();
    assert_eq!(stored_seqs(&db).await, want);
}

#[tokio::test]
async fn shutdown_gives_up_after_the_grace_and_counts_the_loss() {
    let port = closed_port().await;
    let returners = Returners::from_opts(
        &json!({"returner.pgjsonb.host": "127.0.0.1", "returner.pgjsonb.port": port}),
    )
    .expect("config");
    let config = EventReturnConfig {
        returners: vec!["pgjsonb".into()],
        queue: 2,
        retry_max: Duration::from_millis(100),
        shutdown_grace: Duration::from_millis(400),
        ..EventReturnConfig::default()
    };
    let (queue, done) = EventReturnQueue::new(returners, config).expect("queue");
    for i in 0..5 {
        queue.push(event("salt/test", i));
    }
    let watcher = queue.clone();
    queue.close();
    tokio::time::timeout(Duration::from_secs(5), done)
        .await
        .expect("ends after the grace")
        .expect("task");
    let stats = watcher.stats();
    assert_eq!((stats.sent, stats.dropped, stats.buffered), (0, 5, 0));
    assert!(stats.failed_batches > 0);
}

#[tokio::test]
async fn returners_without_event_return_are_refused() {
    let returners = Returners::from_opts(&json!({})).expect("config");
    for name in ["redis", "syslog"] {
        let config = EventReturnConfig {
            returners: vec![name.into()],
            ..EventReturnConfig::default()
        };
        let err = EventReturnQueue::new(returners.clone(), config).expect_err("no event_return");
        assert!(
            err.to_string().contains(name) && err.to_string().contains("event_return"),
            "{err}"
        );
    }
    let config = EventReturnConfig {
        returners: vec!["mongo".into()],
        ..EventReturnConfig::default()
    };
    let err = EventReturnQueue::new(returners.clone(), config).expect_err("unknown");
    assert!(err.to_string().contains("`mongo`"), "{err}");
    let err =
        EventReturnQueue::new(returners, EventReturnConfig::default()).expect_err("no returner");
    assert!(err.to_string().contains("event_return"), "{err}");
}
