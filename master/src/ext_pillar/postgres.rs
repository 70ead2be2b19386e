//! `postgres` ext_pillar (`salt/pillar/postgres.py`): the entry's queries (Salt's
//! `sql_base` forms) run against PostgreSQL for each minion, `%s` bound to its id. The
//! connection is Salt's `postgres:` mapping in the master config: `host` (localhost),
//! `user` (salt), `pass` (salt), `db` (salt), `port` (5432). A connection or query that
//! fails is an error naming the server and the query (Salt logs and answers nothing).

use std::sync::Arc;

use saltq_states::pillar::ext::{ExtContext, ExtPillar, block_on};
use serde_json::{Map, Value};
use tokio_postgres::types::Type;

use super::sql_base::{Query, Shaper, bind_minion, extract_queries, query_error};

/// Salt's `postgres:` connection options.
#[derive(Debug, Clone, PartialEq)]
pub struct Conn {
    /// `host`.
    pub host: String,
    /// `user`.
    pub user: String,
    /// `pass`.
    pub pass: String,
    /// `db`.
    pub db: String,
    /// `port`.
    pub port: u16,
}

impl Conn {
    /// A failed connection to this server, `kind` naming the database (Salt's words).
    pub fn connect_error(&self, kind: &str, e: impl std::fmt::Display) -> String {
        format!(
            "cannot connect to {kind} {}@{}:{}/{}: {e}",
            self.user, self.host, self.port, self.db
        )
    }
}

/// Reads `opts[section]` with Salt's defaults (`port` its own per database).
pub fn conn_opts(opts: &Value, section: &str, port: u16) -> Result<Conn, String> {
    let sec = opts.get(section).filter(|v| !v.is_null());
    if let Some(v) = sec
        && !v.is_object()
    {
        return Err(format!(
            "{section}: expected a mapping of host, user, pass, db, port, got {v}"
        ));
    }
    let s = |k: &str, d: &str| -> String {
        sec.and_then(|m| m.get(k))
            .filter(|v| !v.is_null())
            .map(saltq_semantics::python::str)
            .unwrap_or_else(|| d.to_owned())
    };
    let port = match sec.and_then(|m| m.get("port")).filter(|v| !v.is_null()) {
        None => port,
        Some(p) => saltq_semantics::python::str(p)
            .parse()
            .map_err(|_| format!("{section}: port {p} is not a port number"))?,
    };
    Ok(Conn {
        host: s("host", "localhost"),
        user: s("user", "salt"),
        pass: s("pass", "salt"),
        db: s("db", "salt"),
        port,
    })
}

/// One `postgres` entry.
pub struct Postgres {
    conn: Conn,
    queries: Vec<Query>,
}

/// Builds the source from its entry and the master's `postgres:` options.
pub fn build(args: &Value, opts: &Value) -> Result<Arc<dyn ExtPillar>, String> {
    Ok(Arc::new(Postgres {
        conn: conn_opts(opts, "postgres", 5432)?,
        queries: extract_queries(args)?,
    }))
}

/// A column's value as pillar data; types without a JSON form are an error naming them.
fn cell(row: &tokio_postgres::Row, i: usize) -> Result<Value, String> {
    let col = &row.columns()[i];
    let ty = col.type_().clone();
    let err = |e: tokio_postgres::Error| format!("column {}: {e}", col.name());
    Ok(match ty {
        Type::BOOL => row
            .try_get::<_, Option<bool>>(i)
            .map_err(err)?
            .map_or(Value::Null, Value::from),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)
            .map_err(err)?
            .map_or(Value::Null, Value::from),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)
            .map_err(err)?
            .map_or(Value::Null, Value::from),
        Type::INT8 => row
            .try_get::<_, Option<i64>>(i)
            .map_err(err)?
            .map_or(Value::Null, Value::from),
        Type::FLOAT4 => row
            .try_get::<_, Option<f32>>(i)
            .map_err(err)?
            .map_or(Value::Null, |f| Value::from(f as f64)),
        Type::FLOAT8 => row
            .try_get::<_, Option<f64>>(i)
            .map_err(err)?
            .map_or(Value::Null, Value::from),
        Type::JSON | Type::JSONB => row
            .try_get::<_, Option<Value>>(i)
            .map_err(err)?
            .unwrap_or(Value::Null),
        _ => match row.try_get::<_, Option<String>>(i) {
            Ok(v) => v.map_or(Value::Null, Value::String),
            Err(_) => {
                return Err(format!(
                    "column {} has type {} that saltq cannot read (cast it to text in the query)",
                    col.name(),
                    ty
                ));
            }
        },
    })
}

impl Postgres {
    async fn fetch(&self, minion_id: &str) -> Result<Map<String, Value>, String> {
        let c = &self.conn;
        let mut cfg = tokio_postgres::Config::new();
        cfg.host(&c.host)
            .user(&c.user)
            .password(&c.pass)
            .dbname(&c.db)
            .port(c.port);
        cfg.connect_timeout(std::time::Duration::from_secs(10));
        let (client, connection) = cfg
            .connect(tokio_postgres::NoTls)
            .await
            .map_err(|e| c.connect_error("POSTGRES", e))?;
        let driver = tokio::spawn(connection);
        let mut shaper = Shaper::new();
        for q in &self.queries {
            let (sql, n) = bind_minion(&q.query, "$1");
            let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                if n > 0 { vec![&minion_id] } else { Vec::new() };
            let stmt = client.prepare(&sql).await.map_err(|e| query_error(q, e))?;
            let rows = client
                .query(&stmt, &params)
                .await
                .map_err(|e| query_error(q, e))?;
            let fields: Vec<String> = stmt.columns().iter().map(|c| c.name().to_owned()).collect();
            let mut data = Vec::with_capacity(rows.len());
            for row in &rows {
                data.push(
                    (0..fields.len())
                        .map(|i| cell(row, i))
                        .collect::<Result<Vec<_>, _>>()?,
                );
            }
            shaper.process(q, &fields, &data);
        }
        drop(client);
        driver.abort();
        Ok(shaper.into_pillar())
    }
}

impl ExtPillar for Postgres {
    fn name(&self) -> &str {
        "postgres"
    }

    fn compile(&self, cx: &ExtContext<'_>) -> Result<Map<String, Value>, String> {
        block_on(self.fetch(cx.minion_id))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn connection_options_default_as_salts() {
        let c = conn_opts(&json!({}), "postgres", 5432).unwrap();
        assert_eq!(
            (
                c.host.as_str(),
                c.user.as_str(),
                c.pass.as_str(),
                c.db.as_str(),
                c.port
            ),
            ("localhost", "salt", "salt", "salt", 5432)
        );
        let c = conn_opts(
            &json!({"postgres": {"host": "127.0.0.1", "port": "5433", "db": "test"}}),
            "postgres",
            5432,
        )
        .unwrap();
        assert_eq!(
            (c.host.as_str(), c.db.as_str(), c.port),
            ("127.0.0.1", "test", 5433)
        );
        assert!(
            conn_opts(&json!({"postgres": "x"}), "postgres", 5432)
                .unwrap_err()
                .contains("expected a mapping")
        );
    }

    /// Against the real PostgreSQL (`SALTQ_TEST_POSTGRES` set by CI; skipped, saying so,
    /// without it).
    #[test]
    fn queries_the_real_postgresql_with_the_minion_id_bound() {
        if std::env::var_os("SALTQ_TEST_POSTGRES").is_none() {
            eprintln!("skipped: SALTQ_TEST_POSTGRES is not set");
            return;
        }
        let opts = json!({"postgres": {"host": "127.0.0.1", "user": "postgres", "pass": "", "db": "test"}});
        let setup = "CREATE TABLE IF NOT EXISTS ext33_pillar_unit (minion text, k text, v int, j jsonb); \
                     DELETE FROM ext33_pillar_unit; \
                     INSERT INTO ext33_pillar_unit VALUES ('u1','a',1,'{\"x\": [1]}'), ('u1','b',NULL,NULL), ('u2','a',9,NULL)";
        block_on(async {
            let (client, conn) = tokio_postgres::connect(
                "host=127.0.0.1 user=postgres dbname=test",
                tokio_postgres::NoTls,
            )
            .await
            .unwrap();
            tokio::spawn(conn);
            client.batch_execute(setup).await.unwrap();
        })
        .unwrap();
        let src = build(
            &json!({
                "kv": {"query": "SELECT k, v FROM ext33_pillar_unit WHERE minion = %s ORDER BY k", "ignore_null": true},
                "doc": {"query": "SELECT j FROM ext33_pillar_unit WHERE minion = %s AND j IS NOT NULL", "as_json": true},
            }),
            &opts,
        )
        .unwrap();
        let (g, p) = (json!({}), Map::new());
        let got = src
            .compile(&ExtContext {
                minion_id: "u1",
                grains: &g,
                pillar: &p,
                pillarenv: None,
                opts: &opts,
            })
            .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"doc": {"x": [1]}, "kv": {"a": 1}})
        );
        let bad = build(
            &json!(["SELECT nope FROM ext33_missing WHERE id = %s"]),
            &opts,
        )
        .unwrap();
        let err = bad
            .compile(&ExtContext {
                minion_id: "u1",
                grains: &g,
                pillar: &p,
                pillarenv: None,
                opts: &opts,
            })
            .unwrap_err();
        assert!(err.contains("ext33_missing"), "{err}");
    }
}
