//! The `mysql` returner: Salt's `jids`, `salt_returns` and `salt_events` tables on MySQL or
//! MariaDB, as `salt/returners/mysql.py` lays them out (JSON as Python-style text).
//!
//! One lazily connecting pool per server, database and user. The tables are created on first
//! use if missing, with `utf8mb4` rather than Salt's `utf8` (three-byte) so that any return,
//! emoji included, can be stored.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, OptsBuilder, Params, Pool, PoolConstraints, PoolOpts, TxOpts};
use serde_json::Value;

use crate::error::{ReturnerError, chain};
use crate::options::Resolved;
use crate::{CONNECT_TIMEOUT, Event, OP_TIMEOUT, ReturnFields};
use saltq_semantics::python::salt_dumps;

const RETURNER: &str = "mysql";
/// Rows per INSERT statement when storing events (3 placeholders each; MySQL allows 65535).
const EVENT_ROWS_PER_STATEMENT: usize = 500;

/// Where and how to connect, from Salt's option names.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Settings {
    host: String,
    port: u16,
    user: String,
    /// Never shown.
    pass: Option<String>,
    db: String,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.target())
    }
}

impl Settings {
    /// Reads `host`, `user`, `pass`, `db`, `port`; refuses the ssl options (not supported yet).
    pub(crate) fn from_options(r: &Resolved) -> Result<Settings, ReturnerError> {
        for key in ["ssl_ca", "ssl_cert", "ssl_key"] {
            if r.is_set(key) {
                return Err(r.invalid(
                    key,
                    "TLS to MySQL is not supported by saltq's returners yet (leave the ssl options unset)",
                ));
            }
        }
        let required = |key: &str| {
            r.str(key)?
                .filter(|s| !s.is_empty())
                .ok_or_else(|| r.invalid(key, "must not be empty"))
        };
        Ok(Settings {
            host: required("host")?,
            port: r.port("port")?.unwrap_or(3306),
            user: required("user")?,
            pass: r.str("pass")?.filter(|p| !p.is_empty()),
            db: required("db")?,
        })
    }

    fn target(&self) -> String {
        format!("{}:{}/{} as {}", self.host, self.port, self.db, self.user)
    }
}

/// A pool and whether Salt's tables are known to exist behind it.
struct Entry {
    pool: Pool,
    ready: AtomicBool,
}

/// Pools per server, database and user.
#[derive(Default)]
pub(crate) struct Pools {
    map: Mutex<HashMap<Settings, Arc<Entry>>>,
}

impl Pools {
    fn entry(&self, s: &Settings) -> Arc<Entry> {
        let mut map = match self.map.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        map.entry(s.clone())
            .or_insert_with(|| {
                let constraints = PoolConstraints::new(0, 8).unwrap_or_default();
                let opts = OptsBuilder::default()
                    .ip_or_hostname(s.host.clone())
                    .tcp_port(s.port)
                    .user(Some(s.user.clone()))
                    .pass(s.pass.clone())
                    .db_name(Some(s.db.clone()))
                    // Connect where the options say, not to a local socket found behind them.
                    .prefer_socket(false)
                    .pool_opts(PoolOpts::default().with_constraints(constraints));
                Arc::new(Entry {
                    pool: Pool::new(opts),
                    ready: AtomicBool::new(false),
                })
            })
            .clone()
    }
}

fn backend(s: &Settings, action: &str, e: &mysql_async::Error) -> ReturnerError {
    ReturnerError::Backend {
        returner: RETURNER,
        target: s.target(),
        action: action.to_owned(),
        cause: chain(e),
    }
}

/// Runs `op` on a pooled connection with Salt's tables in place, within [`OP_TIMEOUT`].
async fn with_conn<T, F>(
    pools: &Pools,
    s: &Settings,
    action: &str,
    op: F,
) -> Result<T, ReturnerError>
where
    F: AsyncFnOnce(&mut Conn) -> Result<T, mysql_async::Error>,
{
    let entry = pools.entry(s);
    let work = async {
        let mut conn = match tokio::time::timeout(CONNECT_TIMEOUT, entry.pool.get_conn()).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => {
                return Err(ReturnerError::Connect {
                    returner: RETURNER,
                    target: s.target(),
                    cause: chain(&e),
                });
            }
            Err(_) => {
                return Err(ReturnerError::Timeout {
                    returner: RETURNER,
                    target: s.target(),
                    action: "connect".into(),
                    after: CONNECT_TIMEOUT,
                });
            }
        };
        if !entry.ready.load(Ordering::Acquire) {
            ensure_schema(&mut conn, false)
                .await
                .map_err(|e| backend(s, "create Salt's tables", &e))?;
            entry.ready.store(true, Ordering::Release);
        }
        op(&mut conn).await.map_err(|e| backend(s, action, &e))
    };
    match tokio::time::timeout(OP_TIMEOUT, work).await {
        Ok(result) => result,
        Err(_) => Err(ReturnerError::Timeout {
            returner: RETURNER,
            target: s.target(),
            action: action.to_owned(),
            after: OP_TIMEOUT,
        }),
    }
}

/// Salt's mysql schema (from the module's documentation), made idempotent.
const SCHEMA: [&str; 3] = [
    "CREATE TABLE IF NOT EXISTS `jids` (
      `jid` varchar(255) NOT NULL,
      `load` mediumtext NOT NULL,
      UNIQUE KEY `jid` (`jid`)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
    "CREATE TABLE IF NOT EXISTS `salt_returns` (
      `fun` varchar(50) NOT NULL,
      `jid` varchar(255) NOT NULL,
      `return` mediumtext NOT NULL,
      `id` varchar(255) NOT NULL,
      `success` varchar(10) NOT NULL,
      `full_ret` mediumtext NOT NULL,
      `alter_time` TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
      KEY `id` (`id`),
      KEY `jid` (`jid`),
      KEY `fun` (`fun`)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
    "CREATE TABLE IF NOT EXISTS `salt_events` (
      `id` BIGINT NOT NULL AUTO_INCREMENT,
      `tag` varchar(255) NOT NULL,
      `data` mediumtext NOT NULL,
      `alter_time` TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
      `master_id` varchar(255) NOT NULL,
      PRIMARY KEY (`id`),
      KEY `tag` (`tag`)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
];

/// Creates the tables unless all three exist (or always, when `force`).
async fn ensure_schema(conn: &mut Conn, force: bool) -> Result<(), mysql_async::Error> {
    if !force {
        let present: Option<i64> = conn
            .query_first(
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() \
                 AND table_name IN ('jids', 'salt_returns', 'salt_events')",
            )
            .await?;
        if present == Some(3) {
            return Ok(());
        }
    }
    for ddl in SCHEMA {
        conn.query_drop(ddl).await?;
    }
    Ok(())
}

/// Salt's `success` column: MySQLdb turns a bool into `1`/`0`.
fn success_text(v: &Value) -> String {
    match v {
        Value::Bool(b) => if *b { "1" } else { "0" }.to_owned(),
        Value::String(s) => s.clone(),
        other => salt_dumps(other),
    }
}

/// `returner(ret)`: one row in `salt_returns`.
pub(crate) async fn returner(
    pools: &Pools,
    s: &Settings,
    load: &Value,
) -> Result<(), ReturnerError> {
    let f = ReturnFields::of(RETURNER, load)?;
    let params: Vec<mysql_async::Value> = vec![
        f.fun.into(),
        f.jid.into(),
        salt_dumps(f.ret).into(),
        f.id.into(),
        success_text(f.success).into(),
        salt_dumps(load).into(),
    ];
    with_conn(pools, s, "insert into salt_returns", async |c| {
        c.exec_drop(
            "INSERT INTO `salt_returns` (`fun`, `jid`, `return`, `id`, `success`, `full_ret`) \
             VALUES (?, ?, ?, ?, ?, ?)",
            Params::Positional(params),
        )
        .await
    })
    .await
}

/// `event_return(events)`: all of them into `salt_events` in one transaction, in order.
pub(crate) async fn event_return(
    pools: &Pools,
    s: &Settings,
    master_id: &str,
    events: &[Event],
) -> Result<(), ReturnerError> {
    let action = format!("insert {} events into salt_events", events.len());
    with_conn(pools, s, &action, async |c| {
        let mut tx = c.start_transaction(TxOpts::default()).await?;
        for chunk in events.chunks(EVENT_ROWS_PER_STATEMENT) {
            let mut sql =
                String::from("INSERT INTO `salt_events` (`tag`, `data`, `master_id`) VALUES ");
            let mut params: Vec<mysql_async::Value> = Vec::with_capacity(chunk.len() * 3);
            for (i, e) in chunk.iter().enumerate() {
                sql.push_str(if i == 0 { "(?, ?, ?)" } else { ", (?, ?, ?)" });
                params.push(e.tag.as_str().into());
                params.push(salt_dumps(&Value::Object(e.data.clone())).into());
                params.push(master_id.into());
            }
            tx.exec_drop(sql, Params::Positional(params)).await?;
        }
        tx.commit().await
    })
    .await
}

/// `save_load(jid, load)`: keeps the first load for a jid (Salt ignores the duplicate key).
pub(crate) async fn save_load(
    pools: &Pools,
    s: &Settings,
    jid: &str,
    load: &Value,
) -> Result<(), ReturnerError> {
    let params: Vec<mysql_async::Value> = vec![jid.into(), salt_dumps(load).into()];
    with_conn(pools, s, &format!("save the load of job {jid} into jids"), async |c| {
        c.exec_drop(
            "INSERT INTO `jids` (`jid`, `load`) VALUES (?, ?) ON DUPLICATE KEY UPDATE `jid` = `jid`",
            Params::Positional(params),
        )
        .await
    })
    .await
}

/// Creates the tables now (each statement is `IF NOT EXISTS`).
pub(crate) async fn create_schema(pools: &Pools, s: &Settings) -> Result<(), ReturnerError> {
    with_conn(pools, s, "create Salt's tables", async |c| {
        ensure_schema(c, true).await
    })
    .await
}
