//! redis against a real Redis (`SALTQ_TEST_REDIS`): Salt's key layout read back, lifetimes,
//! `ret_config` / `ret_kwargs` choosing the database, and a server that is not there.
//!
//! Every test uses its own minion ids and jids, so parallel tests and other suites sharing the
//! server do not collide; the keys written are deleted afterwards.

use redis::AsyncCommands;
use saltq_returners::Returners;
use serde_json::json;

use crate::support::{
    REDIS_ENV, assert_mentions, closed_port, gate, jid, load, opts, redis_host_port, unique,
};

async fn connect(url: &str, db: i64) -> redis::aio::MultiplexedConnection {
    let base = url.trim().trim_end_matches('/');
    let client =
        redis::Client::open(format!("{base}/{db}")).expect("SALTQ_TEST_REDIS is a redis:// URL");
    client
        .get_multiplexed_async_connection()
        .await
        .expect("connect to Redis")
}

/// Deletes what a return and a load for `id`/`jid` wrote.
async fn clean(c: &mut redis::aio::MultiplexedConnection, id: &str, jid: &str, fun: &str) {
    let _: Result<(), _> = c
        .del(&[
            format!("ret:{jid}"),
            format!("load:{jid}"),
            format!("{id}:{fun}"),
        ])
        .await;
    let _: Result<(), _> = c.srem("minions", id).await;
}

#[tokio::test]
async fn redis_writes_salts_key_layout() {
    let Some(url) = gate(REDIS_ENV, "redis_writes_salts_key_layout") else {
        return;
    };
    let (host, port) = redis_host_port(&url);
    let o =
        json!({"redis.host": host, "redis.port": port, "redis.db": 0, "keep_jobs_seconds": 3600});
    let returners = Returners::from_opts(&o).expect("config");
    let (id, jid) = (unique("minion"), jid());
    let ret = load(&id, &jid);
    returners
        .returner("redis", &ret, None, None)
        .await
        .expect("redis returner");
    returners
        .save_load("redis", &jid, &json!({"fun": "test.echo", "jid": jid}))
        .await
        .expect("save_load");

    let mut c = connect(&url, 0).await;
    let stored: Option<String> = c.hget(format!("ret:{jid}"), &id).await.expect("hget");
    let stored = stored.expect("ret:<jid> holds the minion's return");
    // `salt.utils.json.dumps(ret)`: Python's separators, non-ASCII kept.
    assert_eq!(
        stored,
        format!(
            r#"{{"id": "{id}", "jid": "{jid}", "fun": "test.echo", "fun_args": ["héllo"], "return": {{"echo": "héllo", "n": [1, 2.5, true, null]}}, "retcode": 0, "success": true}}"#
        )
    );
    let ttl: i64 = c.ttl(format!("ret:{jid}")).await.expect("ttl");
    assert!(
        (3500..=3600).contains(&ttl),
        "ret:<jid> lives keep_jobs_seconds, got {ttl}"
    );
    let last: Option<String> = c.get(format!("{id}:test.echo")).await.expect("get");
    assert_eq!(last.as_deref(), Some(jid.as_str()));
    let member: bool = c.sismember("minions", &id).await.expect("sismember");
    assert!(member);
    let saved: Option<String> = c.get(format!("load:{jid}")).await.expect("get load");
    assert_eq!(
        saved,
        Some(format!(r#"{{"fun": "test.echo", "jid": "{jid}"}}"#))
    );
    let ttl: i64 = c.ttl(format!("load:{jid}")).await.expect("ttl");
    assert!(
        (3500..=3600).contains(&ttl),
        "load:<jid> lives keep_jobs_seconds, got {ttl}"
    );

    let err = returners.event_return("redis", &[]).await;
    assert!(err.is_ok(), "an empty batch is nothing to do");
    let err = returners
        .event_return(
            "redis",
            &[saltq_returners::Event {
                tag: "t".into(),
                data: Default::default(),
            }],
        )
        .await
        .expect_err("Salt's redis returner has no event_return");
    assert_mentions(&err, &["redis", "event_return"]);
    clean(&mut c, &id, &jid, "test.echo").await;
}

#[tokio::test]
async fn redis_keeps_keys_forever_when_keep_jobs_seconds_is_zero() {
    let Some(url) = gate(
        REDIS_ENV,
        "redis_keeps_keys_forever_when_keep_jobs_seconds_is_zero",
    ) else {
        return;
    };
    let (host, port) = redis_host_port(&url);
    let o = json!({"redis": {"host": host, "port": port}, "keep_jobs_seconds": 0});
    let returners = Returners::from_opts(&o).expect("config");
    let (id, jid) = (unique("minion"), jid());
    returners
        .returner("redis", &load(&id, &jid), None, None)
        .await
        .expect("redis returner");
    returners
        .save_load("redis", &jid, &json!({"v": 1}))
        .await
        .expect("save_load");
    let mut c = connect(&url, 0).await;
    let ttl: i64 = c.ttl(format!("ret:{jid}")).await.expect("ttl");
    assert_eq!(ttl, -1);
    let ttl: i64 = c.ttl(format!("load:{jid}")).await.expect("ttl");
    assert_eq!(ttl, -1);
    clean(&mut c, &id, &jid, "test.echo").await;
}

#[tokio::test]
async fn redis_ret_config_and_ret_kwargs_choose_the_database() {
    let Some(url) = gate(
        REDIS_ENV,
        "redis_ret_config_and_ret_kwargs_choose_the_database",
    ) else {
        return;
    };
    let (host, port) = redis_host_port(&url);
    let o = json!({"redis.host": host, "redis.port": port, "alt.redis.db": 7});
    let returners = Returners::from_opts(&o).expect("config");
    let (id, jid_alt, jid_kw) = (unique("minion"), jid(), jid());
    returners
        .returner("redis", &load(&id, &jid_alt), Some("alt"), None)
        .await
        .expect("ret_config");
    let kwargs = opts(json!({"db": "8"}));
    returners
        .returner("redis", &load(&id, &jid_kw), Some("alt"), Some(&kwargs))
        .await
        .expect("ret_kwargs");

    let (mut c0, mut c7, mut c8) = (
        connect(&url, 0).await,
        connect(&url, 7).await,
        connect(&url, 8).await,
    );
    let in7: bool = c7
        .hexists(format!("ret:{jid_alt}"), &id)
        .await
        .expect("hexists");
    let in8: bool = c8
        .hexists(format!("ret:{jid_kw}"), &id)
        .await
        .expect("hexists");
    let in0: bool = c0.exists(format!("ret:{jid_alt}")).await.expect("exists");
    let misplaced: bool = c7.exists(format!("ret:{jid_kw}")).await.expect("exists");
    assert!(
        in7 && in8 && !in0 && !misplaced,
        "db 7: {in7}, db 8: {in8}, db 0: {in0}, kw in 7: {misplaced}"
    );
    clean(&mut c7, &id, &jid_alt, "test.echo").await;
    clean(&mut c8, &id, &jid_kw, "test.echo").await;
}

#[tokio::test]
async fn redis_server_that_is_not_there_is_named_in_the_error() {
    let port = closed_port().await;
    let o = json!({"redis.host": "127.0.0.1", "redis.port": port, "redis.password": "s3cret-pass"});
    let returners = Returners::from_opts(&o).expect("config");
    let err = returners
        .returner("redis", &load("m", &jid()), None, None)
        .await
        .expect_err("nothing listens");
    assert_mentions(
        &err,
        &[
            "redis returner could not connect",
            &format!("127.0.0.1:{port} db 0"),
        ],
    );
    assert!(
        !err.to_string().contains("s3cret-pass"),
        "the password leaked: {err}"
    );
    let err = Returners::from_opts(&json!({"redis.cluster_mode": true})).expect_err("cluster mode");
    assert_mentions(&err, &["redis.cluster_mode", "not supported"]);
}
