//! pgjsonb and postgres against a real PostgreSQL (`SALTQ_TEST_POSTGRES`): Salt's tables and
//! column types, rows read back, `ret_config` / `ret_kwargs`, and a server that is not there.

use saltq_returners::{Event, Returners};
use serde_json::{Map, Value, json};

use crate::support::{POSTGRES_ENV, PgDb, assert_mentions, closed_port, gate, jid, load, opts};

/// `(column, type)` of a table, in order, as `information_schema` spells them.
async fn columns(c: &tokio_postgres::Client, table: &str) -> Vec<(String, String)> {
    let rows = c
        .query(
            "SELECT column_name::text, CASE WHEN character_maximum_length IS NULL THEN data_type::text \
             ELSE data_type::text || '(' || character_maximum_length || ')' END \
             FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 \
             ORDER BY ordinal_position",
            &[&table],
        )
        .await
        .expect("read columns");
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

fn cols(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

async fn indexes(c: &tokio_postgres::Client) -> Vec<String> {
    let rows = c
        .query(
            "SELECT indexname::text FROM pg_indexes WHERE schemaname = current_schema() ORDER BY 1",
            &[],
        )
        .await
        .expect("read indexes");
    rows.iter().map(|r| r.get(0)).collect()
}

fn event(tag: &str, n: i64) -> Event {
    let mut data = Map::new();
    data.insert("n".into(), json!(n));
    data.insert("_stamp".into(), json!("2026-01-01T00:00:00.000000"));
    Event {
        tag: tag.into(),
        data,
    }
}

#[tokio::test]
async fn pgjsonb_writes_salts_tables() {
    let Some(conn) = gate(POSTGRES_ENV, "pgjsonb_writes_salts_tables") else {
        return;
    };
    let db = PgDb::create(&conn).await;
    let mut o = db.pgjsonb_opts();
    o.insert("id".into(), json!("master-one"));
    let returners = Returners::from_opts(&Value::Object(o)).expect("config");
    let jid = jid();
    let ret = load("minion-1", &jid);
    returners
        .returner("pgjsonb", &ret, None, None)
        .await
        .expect("pgjsonb returner");

    let c = db.client().await;
    // Salt's pgjsonb schema, column for column.
    assert_eq!(
        columns(&c, "jids").await,
        cols(&[("jid", "character varying(255)"), ("load", "jsonb")])
    );
    assert_eq!(
        columns(&c, "salt_returns").await,
        cols(&[
            ("fun", "character varying(50)"),
            ("jid", "character varying(255)"),
            ("return", "jsonb"),
            ("id", "character varying(255)"),
            ("success", "character varying(10)"),
            ("full_ret", "jsonb"),
            ("alter_time", "timestamp with time zone"),
        ])
    );
    assert_eq!(
        columns(&c, "salt_events").await,
        cols(&[
            ("id", "bigint"),
            ("tag", "character varying(255)"),
            ("data", "jsonb"),
            ("alter_time", "timestamp with time zone"),
            ("master_id", "character varying(255)"),
        ])
    );
    let idx = indexes(&c).await;
    for name in [
        "idx_jids_jsonb",
        "idx_salt_returns_id",
        "idx_salt_returns_jid",
        "idx_salt_returns_fun",
        "idx_salt_returns_return",
        "idx_salt_returns_full_ret",
        "idx_salt_events_tag",
        "idx_salt_events_data",
    ] {
        assert!(
            idx.iter().any(|i| i == name),
            "index {name} missing from {idx:?}"
        );
    }

    let row = c
        .query_one(
            "SELECT fun, jid, return, id, success, full_ret, alter_time IS NOT NULL FROM salt_returns",
            &[],
        )
        .await
        .expect("one row");
    assert_eq!(row.get::<_, String>(0), "test.echo");
    assert_eq!(row.get::<_, String>(1), jid);
    assert_eq!(row.get::<_, Value>(2), ret["return"]);
    assert_eq!(row.get::<_, String>(3), "minion-1");
    assert_eq!(row.get::<_, String>(4), "true");
    assert_eq!(row.get::<_, Value>(5), ret);
    assert!(row.get::<_, bool>(6));

    // save_load replaces an older load for the same jid, as Salt's ON CONFLICT does.
    returners
        .save_load("pgjsonb", &jid, &json!({"fun": "test.echo", "v": 1}))
        .await
        .expect("save_load");
    returners
        .save_load("pgjsonb", &jid, &json!({"fun": "test.echo", "v": 2}))
        .await
        .expect("save_load again");
    let row = c
        .query_one("SELECT load FROM jids WHERE jid = $1", &[&jid])
        .await
        .expect("the load");
    assert_eq!(row.get::<_, Value>(0), json!({"fun": "test.echo", "v": 2}));

    // event_return: one row per event, in order, with the master's id.
    let events = [
        event("salt/job/1/new", 1),
        event("salt/auth", 2),
        event("salt/key", 3),
    ];
    returners
        .event_return("pgjsonb", &events)
        .await
        .expect("event_return");
    let rows = c
        .query(
            "SELECT tag, data, master_id FROM salt_events ORDER BY id",
            &[],
        )
        .await
        .expect("events");
    let got: Vec<(String, Value, String)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let want: Vec<(String, Value, String)> = events
        .iter()
        .map(|e| {
            (
                e.tag.clone(),
                Value::Object(e.data.clone()),
                "master-one".to_owned(),
            )
        })
        .collect();
    assert_eq!(got, want);
}

#[tokio::test]
async fn postgres_writes_salts_text_tables() {
    let Some(conn) = gate(POSTGRES_ENV, "postgres_writes_salts_text_tables") else {
        return;
    };
    let db = PgDb::create(&conn).await;
    let mut o = db.opts("returner.postgres", "passwd");
    o.insert("id".into(), json!("master-two"));
    let returners = Returners::from_opts(&Value::Object(o)).expect("config");
    let jid = jid();
    let ret = load("minion-2", &jid);
    returners
        .returner("postgres", &ret, None, None)
        .await
        .expect("postgres returner");

    let c = db.client().await;
    assert_eq!(
        columns(&c, "jids").await,
        cols(&[("jid", "character varying(20)"), ("load", "text")])
    );
    assert_eq!(
        columns(&c, "salt_returns").await,
        cols(&[
            ("fun", "character varying(50)"),
            ("jid", "character varying(255)"),
            ("return", "text"),
            ("full_ret", "text"),
            ("id", "character varying(255)"),
            ("success", "character varying(10)"),
            ("alter_time", "timestamp with time zone"),
        ])
    );
    assert_eq!(
        columns(&c, "salt_events").await,
        cols(&[
            ("id", "bigint"),
            ("tag", "character varying(255)"),
            ("data", "text"),
            ("alter_time", "timestamp with time zone"),
            ("master_id", "character varying(255)"),
        ])
    );
    let row = c
        .query_one(
            "SELECT fun, jid, return, id, success, full_ret FROM salt_returns",
            &[],
        )
        .await
        .expect("row");
    assert_eq!(row.get::<_, String>(0), "test.echo");
    assert_eq!(row.get::<_, String>(1), jid);
    // Salt writes `salt.utils.json.dumps(...)`: Python's separators, non-ASCII kept.
    assert_eq!(
        row.get::<_, String>(2),
        r#"{"echo": "héllo", "n": [1, 2.5, true, null]}"#
    );
    assert_eq!(row.get::<_, String>(3), "minion-2");
    assert_eq!(row.get::<_, String>(4), "true");
    assert_eq!(
        row.get::<_, String>(5),
        format!(
            r#"{{"id": "minion-2", "jid": "{jid}", "fun": "test.echo", "fun_args": ["héllo"], "return": {{"echo": "héllo", "n": [1, 2.5, true, null]}}, "retcode": 0, "success": true}}"#
        )
    );

    // save_load keeps the first load (Salt ignores the duplicate key).
    returners
        .save_load("postgres", &jid, &json!({"v": 1}))
        .await
        .expect("save_load");
    returners
        .save_load("postgres", &jid, &json!({"v": 2}))
        .await
        .expect("save_load again");
    let row = c
        .query_one("SELECT load FROM jids WHERE jid = $1", &[&jid])
        .await
        .expect("the load");
    assert_eq!(row.get::<_, String>(0), r#"{"v": 1}"#);

    returners
        .event_return("postgres", &[event("salt/a", 1), event("salt/b", 2)])
        .await
        .expect("event_return");
    let rows = c
        .query(
            "SELECT tag, data, master_id FROM salt_events ORDER BY id",
            &[],
        )
        .await
        .expect("events");
    let got: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "salt/a".into(),
                r#"{"n": 1, "_stamp": "2026-01-01T00:00:00.000000"}"#.into(),
                "master-two".into()
            ),
            (
                "salt/b".into(),
                r#"{"n": 2, "_stamp": "2026-01-01T00:00:00.000000"}"#.into(),
                "master-two".into()
            ),
        ]
    );
}

#[tokio::test]
async fn ret_config_and_ret_kwargs_choose_the_database() {
    let Some(conn) = gate(
        POSTGRES_ENV,
        "ret_config_and_ret_kwargs_choose_the_database",
    ) else {
        return;
    };
    let (alt, kw) = (PgDb::create(&conn).await, PgDb::create(&conn).await);
    // The default location names a database that does not exist; the `alt` profile overrides
    // only `db`, and takes host, port, user and password from the default location.
    let mut o = alt.pgjsonb_opts();
    o.insert("returner.pgjsonb.db".into(), json!("saltq_ret_no_such_db"));
    o.insert("alt.returner.pgjsonb.db".into(), json!(alt.name));
    let returners = Returners::from_opts(&Value::Object(o)).expect("config");

    let err = returners
        .returner("pgjsonb", &load("m", &jid()), None, None)
        .await
        .expect_err("no such database");
    assert_mentions(
        &err,
        &["pgjsonb", "saltq_ret_no_such_db", "could not connect"],
    );

    returners
        .returner("pgjsonb", &load("via-profile", &jid()), Some("alt"), None)
        .await
        .expect("ret_config");
    let kwargs = opts(json!({"db": kw.name, "unrelated_option": 1}));
    returners
        .returner(
            "pgjsonb",
            &load("via-kwargs", &jid()),
            Some("alt"),
            Some(&kwargs),
        )
        .await
        .expect("ret_kwargs");

    let ids = |rows: Vec<tokio_postgres::Row>| {
        rows.iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
    };
    let in_alt = ids(alt
        .client()
        .await
        .query("SELECT id FROM salt_returns", &[])
        .await
        .expect("alt rows"));
    let in_kw = ids(kw
        .client()
        .await
        .query("SELECT id FROM salt_returns", &[])
        .await
        .expect("kw rows"));
    assert_eq!(in_alt, ["via-profile"]);
    assert_eq!(in_kw, ["via-kwargs"]);
}

#[tokio::test]
async fn schema_is_created_once_under_concurrent_first_use() {
    let Some(conn) = gate(
        POSTGRES_ENV,
        "schema_is_created_once_under_concurrent_first_use",
    ) else {
        return;
    };
    let db = PgDb::create(&conn).await;
    let returners = Returners::from_opts(&Value::Object(db.pgjsonb_opts())).expect("config");
    let mut tasks = Vec::new();
    for i in 0..16 {
        // Separate instances share nothing but the server, like separate minions.
        let own = Returners::from_opts(&Value::Object(db.pgjsonb_opts())).expect("config");
        tasks.push(tokio::spawn(async move {
            own.returner("pgjsonb", &load(&format!("m{i}"), &jid()), None, None)
                .await
        }));
    }
    for t in tasks {
        t.await.expect("task").expect("concurrent first use");
    }
    // The documented command is idempotent.
    returners
        .create_schema("pgjsonb", None)
        .await
        .expect("create_schema");
    let n: i64 = db
        .client()
        .await
        .query_one("SELECT count(*) FROM salt_returns", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(n, 16);
}

#[tokio::test]
async fn create_schema_makes_the_tables_up_front() {
    let Some(conn) = gate(POSTGRES_ENV, "create_schema_makes_the_tables_up_front") else {
        return;
    };
    let db = PgDb::create(&conn).await;
    let mut o = db.opts("prof.returner.postgres", "passwd");
    o.insert("returner.postgres.db".into(), json!("saltq_ret_no_such_db"));
    let returners = Returners::from_opts(&Value::Object(o)).expect("config");
    returners
        .create_schema("postgres", Some("prof"))
        .await
        .expect("create_schema under a profile");
    let c = db.client().await;
    let n: i64 = c
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() \
             AND table_name IN ('jids', 'salt_returns', 'salt_events')",
            &[],
        )
        .await
        .expect("count")
        .get(0);
    assert_eq!(n, 3);
    let err = returners
        .create_schema("redis", None)
        .await
        .expect_err("redis has no schema");
    assert_mentions(&err, &["redis", "create_schema"]);
}

#[tokio::test]
async fn a_server_that_is_not_there_is_named_in_the_error() {
    // No server needed: nothing listens on the port.
    let port = closed_port().await;
    let o = json!({
        "returner.pgjsonb.host": "127.0.0.1",
        "returner.pgjsonb.port": port,
        "returner.pgjsonb.pass": "s3cret-pass",
    });
    let returners = Returners::from_opts(&o).expect("config");
    let err = returners
        .returner("pgjsonb", &load("m", &jid()), None, None)
        .await
        .expect_err("nothing listens");
    assert_mentions(
        &err,
        &[
            "pgjsonb returner could not connect",
            &format!("127.0.0.1:{port}/salt as salt"),
        ],
    );
    assert!(
        !err.to_string().contains("s3cret-pass"),
        "the password leaked: {err}"
    );
    let err = returners
        .event_return("pgjsonb", &[event("t", 1)])
        .await
        .expect_err("nothing listens");
    assert_mentions(&err, &["pgjsonb", &format!("127.0.0.1:{port}")]);
}
