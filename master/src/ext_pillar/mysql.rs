//! `mysql` ext_pillar (`salt/pillar/mysql.py`): the entry's queries (Salt's `sql_base`
//! forms) run against MySQL/MariaDB for each minion, `%s` bound to its id. The connection
//! is Salt's `mysql:` mapping in the master config: `host` (localhost), `user` (salt),
//! `pass` (salt), `db` (salt), `port` (3306). A failure is an error naming the server and
//! the query.

use std::sync::Arc;

use mysql_async::prelude::Queryable;
use saltq_states::pillar::ext::{ExtContext, ExtPillar, block_on};
use serde_json::{Map, Value};

use super::postgres::{Conn, conn_opts};
use super::sql_base::{Query, Shaper, bind_minion, extract_queries, query_error};

/// One `mysql` entry.
pub struct Mysql {
    conn: Conn,
    queries: Vec<Query>,
}

/// Builds the source from its entry and the master's `mysql:` options.
pub fn build(args: &Value, opts: &Value) -> Result<Arc<dyn ExtPillar>, String> {
    Ok(Arc::new(Mysql {
        conn: conn_opts(opts, "mysql", 3306)?,
        queries: extract_queries(args)?,
    }))
}

/// A MySQL value as pillar data, as MySQLdb gives it (text as str, numbers as numbers).
fn cell(v: mysql_async::Value) -> Value {
    use mysql_async::Value as M;
    match v {
        M::NULL => Value::Null,
        M::Int(i) => Value::from(i),
        M::UInt(u) => Value::from(u),
        M::Float(f) => Value::from(f as f64),
        M::Double(f) => Value::from(f),
        M::Bytes(b) => Value::String(String::from_utf8_lossy(&b).into_owned()),
        M::Date(y, mo, d, h, mi, s, us) => Value::String(if (h, mi, s, us) == (0, 0, 0, 0) {
            format!("{y:04}-{mo:02}-{d:02}")
        } else {
            format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
        }),
        M::Time(neg, d, h, mi, s, _) => Value::String(format!(
            "{}{}:{mi:02}:{s:02}",
            if neg { "-" } else { "" },
            d * 24 + h as u32
        )),
    }
}

impl Mysql {
    async fn fetch(&self, minion_id: &str) -> Result<Map<String, Value>, String> {
        let c = &self.conn;
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname(c.host.clone())
            .tcp_port(c.port)
            .user(Some(c.user.clone()))
            .pass(Some(c.pass.clone()).filter(|p| !p.is_empty()))
            .db_name(Some(c.db.clone()));
        let mut conn = mysql_async::Conn::new(opts)
            .await
            .map_err(|e| c.connect_error("MySQL", e))?;
        let mut shaper = Shaper::new();
        for q in &self.queries {
            let (sql, n) = bind_minion(&q.query, "?");
            let params = if n > 0 {
                mysql_async::Params::Positional(vec![minion_id.into(); n])
            } else {
                mysql_async::Params::Empty
            };
            let mut result = conn
                .exec_iter(sql, params)
                .await
                .map_err(|e| query_error(q, e))?;
            let fields: Vec<String> = result
                .columns_ref()
                .iter()
                .map(|c| c.name_str().into_owned())
                .collect();
            let rows: Vec<mysql_async::Row> =
                result.collect().await.map_err(|e| query_error(q, e))?;
            drop(result);
            let data: Vec<Vec<Value>> = rows
                .into_iter()
                .map(|r| r.unwrap().into_iter().map(cell).collect())
                .collect();
            shaper.process(q, &fields, &data);
        }
        let _ = conn.disconnect().await;
        Ok(shaper.into_pillar())
    }
}

impl ExtPillar for Mysql {
    fn name(&self) -> &str {
        "mysql"
    }

    fn compile(&self, cx: &ExtContext<'_>) -> Result<Map<String, Value>, String> {
        block_on(self.fetch(cx.minion_id))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Against the real MariaDB (`SALTQ_TEST_MYSQL` set by CI; skipped, saying so, without).
    #[test]
    fn queries_the_real_mariadb_with_the_minion_id_bound() {
        if std::env::var_os("SALTQ_TEST_MYSQL").is_none() {
            eprintln!("skipped: SALTQ_TEST_MYSQL is not set");
            return;
        }
        let opts =
            json!({"mysql": {"host": "127.0.0.1", "user": "root", "pass": "", "db": "test"}});
        block_on(async {
            let mut c = mysql_async::Conn::from_url("mysql://root@127.0.0.1:3306/test").await.unwrap();
            c.query_drop("CREATE TABLE IF NOT EXISTS ext33_pillar_unit (minion VARCHAR(64), app VARCHAR(64), k VARCHAR(64), v INT)").await.unwrap();
            c.query_drop("DELETE FROM ext33_pillar_unit").await.unwrap();
            c.query_drop("INSERT INTO ext33_pillar_unit VALUES ('m1','web','port',80),('m1','web','port',443),('m1','db','port',5432),('m2','x','y',1)").await.unwrap();
        })
        .unwrap();
        let src = build(
            &json!([{"query": "SELECT app, k, v FROM ext33_pillar_unit WHERE minion = %s ORDER BY app DESC, v", "as_list": true}]),
            &opts,
        )
        .unwrap();
        let (g, p) = (json!({}), Map::new());
        let got = src
            .compile(&ExtContext {
                minion_id: "m1",
                grains: &g,
                pillar: &p,
                pillarenv: None,
                opts: &opts,
            })
            .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"web": {"port": [80, 443]}, "db": {"port": 5432}})
        );
        let bad = build(
            &json!(["SELECT 1"]),
            &json!({"mysql": {"host": "127.0.0.1", "port": 1, "db": "test"}}),
        )
        .unwrap();
        let err = bad
            .compile(&ExtContext {
                minion_id: "m1",
                grains: &g,
                pillar: &p,
                pillarenv: None,
                opts: &opts,
            })
            .unwrap_err();
        assert!(
            err.starts_with("cannot connect to MySQL salt@127.0.0.1:1/test"),
            "{err}"
        );
    }
}
