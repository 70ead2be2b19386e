//! The `redis` returner: Salt's key layout from `salt/returners/redis_return.py`.
//!
//! - `ret:<jid>`: a hash, field `<minion id>`, value the whole return as JSON; expires after
//!   `keep_jobs_seconds`;
//! - `<minion id>:<fun>`: the jid of the minion's latest run of `fun`;
//! - `minions`: a set of every minion id that returned;
//! - `load:<jid>`: the job's publish load as JSON (`save_load`), with the same lifetime.
//!
//! One multiplexed connection per server and database, re-opened after an error. Cluster mode
//! is refused when configured (not supported yet).

use std::collections::HashMap;
use std::sync::Mutex;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo};
use serde_json::Value;

use crate::error::{ReturnerError, chain};
use crate::options::Resolved;
use crate::{CONNECT_TIMEOUT, OP_TIMEOUT, ReturnFields};
use saltq_semantics::python::salt_dumps;

const RETURNER: &str = "redis";

/// Where and how to connect, from Salt's option names.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Settings {
    host: String,
    port: u16,
    unix_socket_path: Option<String>,
    db: i64,
    /// Never shown.
    password: Option<String>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.target())
    }
}

impl Settings {
    /// Reads `host`, `port`, `unix_socket_path`, `db`, `password`; refuses `cluster_mode`.
    pub(crate) fn from_options(r: &Resolved) -> Result<Settings, ReturnerError> {
        if r.flag("cluster_mode")? {
            return Err(r.invalid(
                "cluster_mode",
                "redis cluster mode is not supported by saltq's returners yet",
            ));
        }
        Ok(Settings {
            host: r.str("host")?.unwrap_or_else(|| "salt".into()),
            port: r.port("port")?.unwrap_or(6379),
            unix_socket_path: r.str("unix_socket_path")?.filter(|p| !p.is_empty()),
            db: r.int("db")?.unwrap_or(0),
            password: r.str("password")?.filter(|p| !p.is_empty()),
        })
    }

    fn target(&self) -> String {
        match &self.unix_socket_path {
            Some(path) => format!("{path} db {}", self.db),
            None => format!("{}:{} db {}", self.host, self.port, self.db),
        }
    }
}

/// Open connections per server and database.
#[derive(Default)]
pub(crate) struct Pools {
    map: Mutex<HashMap<Settings, MultiplexedConnection>>,
}

impl Pools {
    fn cached(&self, s: &Settings) -> Option<MultiplexedConnection> {
        self.map.lock().ok()?.get(s).cloned()
    }

    fn store(&self, s: &Settings, conn: Option<MultiplexedConnection>) {
        if let Ok(mut map) = self.map.lock() {
            match conn {
                Some(c) => map.insert(s.clone(), c),
                None => map.remove(s),
            };
        }
    }

    async fn connection(&self, s: &Settings) -> Result<MultiplexedConnection, ReturnerError> {
        if let Some(conn) = self.cached(s) {
            return Ok(conn);
        }
        let connect_error = |e: &redis::RedisError| ReturnerError::Connect {
            returner: RETURNER,
            target: s.target(),
            cause: chain(e),
        };
        let addr = match &s.unix_socket_path {
            Some(path) => ConnectionAddr::Unix(path.into()),
            None => ConnectionAddr::Tcp(s.host.clone(), s.port),
        };
        let mut redis_info = RedisConnectionInfo::default().set_db(s.db);
        if let Some(p) = &s.password {
            redis_info = redis_info.set_password(p);
        }
        let info = addr
            .into_connection_info()
            .map_err(|e| connect_error(&e))?
            .set_redis_settings(redis_info);
        let client = redis::Client::open(info).map_err(|e| connect_error(&e))?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(OP_TIMEOUT));
        let conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| connect_error(&e))?;
        self.store(s, Some(conn.clone()));
        Ok(conn)
    }

    /// Runs `pipe` on the server; a failure drops the cached connection so the next call
    /// reconnects.
    async fn run(
        &self,
        s: &Settings,
        action: &str,
        pipe: &redis::Pipeline,
    ) -> Result<(), ReturnerError> {
        let mut conn = self.connection(s).await?;
        match pipe.exec_async(&mut conn).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.store(s, None);
                Err(ReturnerError::Backend {
                    returner: RETURNER,
                    target: s.target(),
                    action: action.to_owned(),
                    cause: chain(&e),
                })
            }
        }
    }
}

/// `returner(ret)`: `HSET ret:<jid> <id> <json>`, `EXPIRE`, `SET <id>:<fun> <jid>`,
/// `SADD minions <id>`, pipelined without a transaction as Salt does.
pub(crate) async fn returner(
    pools: &Pools,
    s: &Settings,
    ttl: Option<u64>,
    load: &Value,
) -> Result<(), ReturnerError> {
    let f = ReturnFields::of(RETURNER, load)?;
    let ret_key = format!("ret:{}", f.jid);
    let mut pipe = redis::pipe();
    pipe.hset(&ret_key, f.id, salt_dumps(load)).ignore();
    if let Some(ttl) = ttl {
        pipe.expire(&ret_key, i64::try_from(ttl).unwrap_or(i64::MAX))
            .ignore();
    }
    pipe.set(format!("{}:{}", f.id, f.fun), f.jid).ignore();
    pipe.sadd("minions", f.id).ignore();
    pools
        .run(
            s,
            &format!("store the return of {} for job {}", f.id, f.jid),
            &pipe,
        )
        .await
}

/// `save_load(jid, load)`: `SETEX load:<jid> <ttl> <json>` (plain `SET` when jobs are kept
/// forever: Salt would pass a zero lifetime, which Redis refuses).
pub(crate) async fn save_load(
    pools: &Pools,
    s: &Settings,
    ttl: Option<u64>,
    jid: &str,
    load: &Value,
) -> Result<(), ReturnerError> {
    let key = format!("load:{jid}");
    let mut pipe = redis::pipe();
    match ttl {
        Some(ttl) => pipe.set_ex(&key, salt_dumps(load), ttl).ignore(),
        None => pipe.set(&key, salt_dumps(load)).ignore(),
    };
    pools
        .run(s, &format!("save the load of job {jid}"), &pipe)
        .await
}
