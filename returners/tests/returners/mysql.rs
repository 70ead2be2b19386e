//! mysql against a real MySQL or MariaDB (`SALTQ_TEST_MYSQL`): Salt's tables and column
//! types, rows read back, `ret_config` / `ret_kwargs`, and a server that is not there.

use mysql_async::prelude::Queryable;
use saltq_returners::{Event, Returners};
use serde_json::{Map, Value, json};

use crate::support::{MYSQL_ENV, MyDb, assert_mentions, closed_port, gate, jid, load, opts};

/// `(column, type)` of a table, in order, as `information_schema.columns.column_type` spells them.
async fn columns(c: &mut mysql_async::Conn, table: &str) -> Vec<(String, String)> {
    c.exec(
        "SELECT column_name, column_type FROM information_schema.columns \
         WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position",
        (table,),
    )
    .await
    .expect("read columns")
}

fn cols(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[tokio::test]
async fn mysql_writes_salts_tables() {
    let Some(url) = gate(MYSQL_ENV, "mysql_writes_salts_tables") else {
        return;
    };
    let db = MyDb::create(&url).await;
    let mut o = db.opts(None);
    o.insert("id".into(), json!("master-my"));
    let returners = Returners::from_opts(&Value::Object(o)).expect("config");
    let jid = jid();
    let mut ret = load("minion-m", &jid);
    ret["success"] = json!(false);
    returners
        .returner("mysql", &ret, None, None)
        .await
        .expect("mysql returner");

    let mut c = db.conn().await;
    // MariaDB spells `BIGINT` as `bigint(20)`, MySQL 8 as `bigint`.
    let mut events_cols = columns(&mut c, "salt_events").await;
    if let Some(col) = events_cols.first_mut() {
        col.1 = col.1.replace("bigint(20)", "bigint");
    }
    assert_eq!(
        columns(&mut c, "jids").await,
        cols(&[("jid", "varchar(255)"), ("load", "mediumtext")])
    );
    assert_eq!(
        columns(&mut c, "salt_returns").await,
        cols(&[
            ("fun", "varchar(50)"),
            ("jid", "varchar(255)"),
            ("return", "mediumtext"),
            ("id", "varchar(255)"),
            ("success", "varchar(10)"),
            ("full_ret", "mediumtext"),
            ("alter_time", "timestamp"),
        ])
    );
    assert_eq!(
        events_cols,
        cols(&[
            ("id", "bigint"),
            ("tag", "varchar(255)"),
            ("data", "mediumtext"),
            ("alter_time", "timestamp"),
            ("master_id", "varchar(255)"),
        ])
    );

    let row: Option<(String, String, String, String, String, String, bool)> = c
        .query_first(
            "SELECT `fun`, `jid`, `return`, `id`, `success`, `full_ret`, `alter_time` IS NOT NULL FROM `salt_returns`",
        )
        .await
        .expect("one row");
    let (fun, got_jid, ret_text, id, success, full_ret, stamped) =
        row.expect("a row in salt_returns");
    assert_eq!(fun, "test.echo");
    assert_eq!(got_jid, jid);
    assert_eq!(ret_text, r#"{"echo": "héllo", "n": [1, 2.5, true, null]}"#);
    assert_eq!(id, "minion-m");
    // MySQLdb writes a Python bool as 1 or 0.
    assert_eq!(success, "0");
    assert_eq!(
        serde_json::from_str::<Value>(&full_ret).expect("full_ret is JSON"),
        ret
    );
    assert!(
        full_ret.starts_with(r#"{"id": "minion-m", "jid": ""#),
        "{full_ret}"
    );
    assert!(stamped);

    returners
        .save_load("mysql", &jid, &json!({"v": 1}))
        .await
        .expect("save_load");
    returners
        .save_load("mysql", &jid, &json!({"v": 2}))
        .await
        .expect("save_load again");
    let loads: Vec<String> = c
        .exec("SELECT `load` FROM `jids` WHERE `jid` = ?", (jid.as_str(),))
        .await
        .expect("loads");
    assert_eq!(loads, [r#"{"v": 1}"#]);

    let events: Vec<Event> = (0..1200)
        .map(|n| {
            let mut data = Map::new();
            data.insert("n".into(), json!(n));
            Event {
                tag: format!("salt/test/{n}"),
                data,
            }
        })
        .collect();
    returners
        .event_return("mysql", &events)
        .await
        .expect("event_return of 1200 events");
    let rows: Vec<(String, String, String)> = c
        .query("SELECT `tag`, `data`, `master_id` FROM `salt_events` ORDER BY `id`")
        .await
        .expect("events");
    assert_eq!(rows.len(), 1200);
    for (n, (tag, data, master)) in rows.into_iter().enumerate() {
        assert_eq!(
            (tag, data, master),
            (
                format!("salt/test/{n}"),
                format!(r#"{{"n": {n}}}"#),
                "master-my".to_owned()
            )
        );
    }
}

#[tokio::test]
async fn mysql_ret_config_and_ret_kwargs_choose_the_database() {
    let Some(url) = gate(
        MYSQL_ENV,
        "mysql_ret_config_and_ret_kwargs_choose_the_database",
    ) else {
        return;
    };
    let (alt, kw) = (MyDb::create(&url).await, MyDb::create(&url).await);
    let mut o = alt.opts(None);
    o.insert("mysql.db".into(), json!("saltq_ret_no_such_db"));
    // The profile in its dict form, overriding only the database.
    o.insert("alt.mysql".into(), json!({"db": alt.name}));
    let returners = Returners::from_opts(&Value::Object(o)).expect("config");

    let err = returners
        .returner("mysql", &load("m", &jid()), None, None)
        .await
        .expect_err("no such database");
    assert_mentions(&err, &["mysql returner", "saltq_ret_no_such_db"]);

    returners
        .returner("mysql", &load("via-profile", &jid()), Some("alt"), None)
        .await
        .expect("ret_config");
    let kwargs = opts(json!({"db": kw.name}));
    returners
        .returner("mysql", &load("via-kwargs", &jid()), None, Some(&kwargs))
        .await
        .expect("ret_kwargs");

    let in_alt: Vec<String> = alt
        .conn()
        .await
        .query("SELECT `id` FROM `salt_returns`")
        .await
        .expect("alt rows");
    let in_kw: Vec<String> = kw
        .conn()
        .await
        .query("SELECT `id` FROM `salt_returns`")
        .await
        .expect("kw rows");
    assert_eq!(in_alt, ["via-profile"]);
    assert_eq!(in_kw, ["via-kwargs"]);
}

#[tokio::test]
async fn mysql_server_that_is_not_there_is_named_in_the_error() {
    let port = closed_port().await;
    let o = json!({"mysql.host": "127.0.0.1", "mysql.port": port, "mysql.pass": "s3cret-pass"});
    let returners = Returners::from_opts(&o).expect("config");
    let err = returners
        .returner("mysql", &load("m", &jid()), None, None)
        .await
        .expect_err("nothing listens");
    assert_mentions(
        &err,
        &[
            "mysql returner could not connect",
            &format!("127.0.0.1:{port}/salt as salt"),
        ],
    );
    assert!(
        !err.to_string().contains("s3cret-pass"),
        "the password leaked: {err}"
    );
}
