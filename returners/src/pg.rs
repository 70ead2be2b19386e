//! The `pgjsonb` and `postgres` returners: Salt's `jids`, `salt_returns` and `salt_events`
//! tables on PostgreSQL, with JSON in jsonb columns (pgjsonb) or as Python-style JSON text
//! (postgres), exactly as `salt/returners/pgjsonb.py` and `postgres.py` lay them out.
//!
//! Connections are kept per server, database and user, and re-opened when the server drops
//! them. The tables are created on first use if missing (checked first, so a user that may only
//! insert works once someone ran `create_schema`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio_postgres::{Client, NoTls};

use crate::error::{ReturnerError, chain};
use crate::options::{Name, Resolved};
use crate::{CONNECT_TIMEOUT, Event, OP_TIMEOUT, ReturnFields};
use saltq_semantics::python::salt_dumps;

/// Idle connections kept per database.
const MAX_IDLE: usize = 4;

/// Salt's two PostgreSQL layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Flavor {
    /// `pgjsonb`: `load`, `return`, `full_ret` and `data` are jsonb.
    Jsonb,
    /// `postgres`: the same columns as text holding JSON.
    Text,
}

impl Flavor {
    fn returner(self) -> &'static str {
        match self {
            Flavor::Jsonb => "pgjsonb",
            Flavor::Text => "postgres",
        }
    }
}

/// Where and how to connect, from Salt's option names.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Settings {
    flavor: Flavor,
    host: String,
    port: u16,
    user: String,
    /// Never shown.
    password: Option<String>,
    db: String,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} {}", self.flavor, self.target())
    }
}

impl Settings {
    /// Reads pgjsonb's (`pass`, ssl options) or postgres's (`passwd`) options.
    pub(crate) fn from_options(r: &Resolved) -> Result<Settings, ReturnerError> {
        let (flavor, password_key) = match r.name() {
            Name::Pgjsonb => (Flavor::Jsonb, "pass"),
            _ => (Flavor::Text, "passwd"),
        };
        if flavor == Flavor::Jsonb {
            for key in ["sslmode", "sslcert", "sslkey", "sslrootcert", "sslcrl"] {
                let value = r.str(key)?;
                let off = match value.as_deref() {
                    None => true,
                    Some(v) => {
                        v.eq_ignore_ascii_case("none") || (key == "sslmode" && v == "disable")
                    }
                };
                if !off {
                    return Err(r.invalid(
                        key,
                        "TLS to PostgreSQL is not supported by saltq's returners yet \
                         (leave the ssl options unset, or set sslmode to disable)",
                    ));
                }
            }
        }
        let required = |key: &str| {
            r.str(key)?
                .filter(|s| !s.is_empty())
                .ok_or_else(|| r.invalid(key, "must not be empty"))
        };
        Ok(Settings {
            flavor,
            host: required("host")?,
            port: r.port("port")?.unwrap_or(5432),
            user: required("user")?,
            password: r.str(password_key)?.filter(|p| !p.is_empty()),
            db: required("db")?,
        })
    }

    /// `host:port/db as user`, for messages.
    fn target(&self) -> String {
        format!("{}:{}/{} as {}", self.host, self.port, self.db, self.user)
    }

    fn key(&self) -> PoolKey {
        PoolKey {
            host: self.host.clone(),
            port: self.port,
            user: self.user.clone(),
            password: self.password.clone(),
            db: self.db.clone(),
        }
    }
}

/// What makes two connections interchangeable (the flavor does not).
#[derive(Clone, PartialEq, Eq, Hash)]
struct PoolKey {
    host: String,
    port: u16,
    user: String,
    password: Option<String>,
    db: String,
}

/// Connections per database.
#[derive(Default)]
pub(crate) struct Pools {
    map: Mutex<HashMap<PoolKey, Arc<Pool>>>,
}

/// Idle connections to one database, and which layouts are known to exist there.
struct Pool {
    config: tokio_postgres::Config,
    target: String,
    idle: Mutex<Vec<Client>>,
    jsonb_ready: AtomicBool,
    text_ready: AtomicBool,
}

/// A connection taken from a pool; back to the pool only through [`Lease::release`], so one
/// that failed mid-statement is dropped rather than reused.
struct Lease {
    client: Client,
    pool: Arc<Pool>,
}

impl Lease {
    fn release(self) {
        if self.client.is_closed() {
            return;
        }
        if let Ok(mut idle) = self.pool.idle.lock()
            && idle.len() < MAX_IDLE
        {
            idle.push(self.client);
        }
    }
}

impl Pools {
    fn pool(&self, s: &Settings) -> Arc<Pool> {
        let mut map = match self.map.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        map.entry(s.key())
            .or_insert_with(|| {
                let mut config = tokio_postgres::Config::new();
                config
                    .host(&s.host)
                    .port(s.port)
                    .user(&s.user)
                    .dbname(&s.db)
                    .application_name("saltq-returners")
                    .connect_timeout(CONNECT_TIMEOUT);
                if let Some(p) = &s.password {
                    config.password(p);
                }
                Arc::new(Pool {
                    config,
                    target: s.target(),
                    idle: Mutex::new(Vec::new()),
                    jsonb_ready: AtomicBool::new(false),
                    text_ready: AtomicBool::new(false),
                })
            })
            .clone()
    }
}

impl Pool {
    async fn lease(self: &Arc<Pool>, returner: &'static str) -> Result<Lease, ReturnerError> {
        loop {
            let client = match self.idle.lock() {
                Ok(mut idle) => idle.pop(),
                Err(_) => None,
            };
            match client {
                Some(c) if c.is_closed() => continue,
                Some(client) => {
                    return Ok(Lease {
                        client,
                        pool: self.clone(),
                    });
                }
                None => break,
            }
        }
        let connect = self.config.connect(NoTls);
        let (client, connection) = match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => {
                return Err(ReturnerError::Connect {
                    returner,
                    target: self.target.clone(),
                    cause: chain(&e),
                });
            }
            Err(_) => {
                return Err(ReturnerError::Timeout {
                    returner,
                    target: self.target.clone(),
                    action: "connect".into(),
                    after: CONNECT_TIMEOUT,
                });
            }
        };
        let target = self.target.clone();
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(target = %target, error = %e, "returner connection to PostgreSQL ended");
            }
        });
        Ok(Lease {
            client,
            pool: self.clone(),
        })
    }

    fn ready(&self, flavor: Flavor) -> &AtomicBool {
        match flavor {
            Flavor::Jsonb => &self.jsonb_ready,
            Flavor::Text => &self.text_ready,
        }
    }
}

/// Runs `op` on a pooled connection with the layout's tables in place, within [`OP_TIMEOUT`].
async fn with_client<T, F>(
    pools: &Pools,
    s: &Settings,
    action: &str,
    op: F,
) -> Result<T, ReturnerError>
where
    F: AsyncFnOnce(&mut Client) -> Result<T, tokio_postgres::Error>,
{
    let returner = s.flavor.returner();
    let pool = pools.pool(s);
    let work = async {
        let mut lease = pool.lease(returner).await?;
        if !pool.ready(s.flavor).load(Ordering::Acquire) {
            ensure_schema(&lease.client, s.flavor, false)
                .await
                .map_err(|e| backend(returner, &pool.target, "create Salt's tables", &e))?;
            pool.ready(s.flavor).store(true, Ordering::Release);
        }
        let out = op(&mut lease.client)
            .await
            .map_err(|e| backend(returner, &pool.target, action, &e))?;
        lease.release();
        Ok(out)
    };
    match tokio::time::timeout(OP_TIMEOUT, work).await {
        Ok(result) => result,
        Err(_) => Err(ReturnerError::Timeout {
            returner,
            target: pool.target.clone(),
            action: action.to_owned(),
            after: OP_TIMEOUT,
        }),
    }
}

fn backend(
    returner: &'static str,
    target: &str,
    action: &str,
    e: &tokio_postgres::Error,
) -> ReturnerError {
    ReturnerError::Backend {
        returner,
        target: target.to_owned(),
        action: action.to_owned(),
        cause: chain(e),
    }
}

/// Salt's `pgjsonb` schema (from the module's documentation), made idempotent.
const JSONB_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jids (
   jid varchar(255) NOT NULL primary key,
   load jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_jids_jsonb ON jids USING gin (load) WITH (fastupdate=on);
CREATE TABLE IF NOT EXISTS salt_returns (
  fun varchar(50) NOT NULL,
  jid varchar(255) NOT NULL,
  return jsonb NOT NULL,
  id varchar(255) NOT NULL,
  success varchar(10) NOT NULL,
  full_ret jsonb NOT NULL,
  alter_time TIMESTAMP WITH TIME ZONE DEFAULT NOW());
CREATE INDEX IF NOT EXISTS idx_salt_returns_id ON salt_returns (id);
CREATE INDEX IF NOT EXISTS idx_salt_returns_jid ON salt_returns (jid);
CREATE INDEX IF NOT EXISTS idx_salt_returns_fun ON salt_returns (fun);
CREATE INDEX IF NOT EXISTS idx_salt_returns_return ON salt_returns USING gin (return) WITH (fastupdate=on);
CREATE INDEX IF NOT EXISTS idx_salt_returns_full_ret ON salt_returns USING gin (full_ret) WITH (fastupdate=on);
CREATE SEQUENCE IF NOT EXISTS seq_salt_events_id;
CREATE TABLE IF NOT EXISTS salt_events (
    id BIGINT NOT NULL UNIQUE DEFAULT nextval('seq_salt_events_id'),
    tag varchar(255) NOT NULL,
    data jsonb NOT NULL,
    alter_time TIMESTAMP WITH TIME ZONE DEFAULT NOW(),
    master_id varchar(255) NOT NULL);
CREATE INDEX IF NOT EXISTS idx_salt_events_tag ON salt_events (tag);
CREATE INDEX IF NOT EXISTS idx_salt_events_data ON salt_events USING gin (data) WITH (fastupdate=on);
";

/// Salt's `postgres` schema (from the module's documentation), made idempotent.
const TEXT_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jids (
  jid   varchar(20) PRIMARY KEY,
  load  text NOT NULL
);
CREATE TABLE IF NOT EXISTS salt_returns (
  fun       varchar(50) NOT NULL,
  jid       varchar(255) NOT NULL,
  return    text NOT NULL,
  full_ret  text,
  id        varchar(255) NOT NULL,
  success   varchar(10) NOT NULL,
  alter_time   TIMESTAMP WITH TIME ZONE DEFAULT now()
);
CREATE INDEX IF NOT EXISTS idx_salt_returns_id ON salt_returns (id);
CREATE INDEX IF NOT EXISTS idx_salt_returns_jid ON salt_returns (jid);
CREATE INDEX IF NOT EXISTS idx_salt_returns_fun ON salt_returns (fun);
CREATE INDEX IF NOT EXISTS idx_salt_returns_updated ON salt_returns (alter_time);
CREATE SEQUENCE IF NOT EXISTS seq_salt_events_id;
CREATE TABLE IF NOT EXISTS salt_events (
    id BIGINT NOT NULL UNIQUE DEFAULT nextval('seq_salt_events_id'),
    tag varchar(255) NOT NULL,
    data text NOT NULL,
    alter_time TIMESTAMP WITH TIME ZONE DEFAULT NOW(),
    master_id varchar(255) NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_salt_events_tag ON salt_events (tag);
";

/// Creates the layout's tables unless all three exist (or always, when `force`). Serialized
/// across processes by an advisory lock, since concurrent `CREATE ... IF NOT EXISTS` can race.
async fn ensure_schema(
    client: &Client,
    flavor: Flavor,
    force: bool,
) -> Result<(), tokio_postgres::Error> {
    if !force {
        let row = client
            .query_one(
                "SELECT to_regclass('jids') IS NOT NULL AND to_regclass('salt_returns') IS NOT NULL \
                 AND to_regclass('salt_events') IS NOT NULL",
                &[],
            )
            .await?;
        if row.get::<_, bool>(0) {
            return Ok(());
        }
    }
    let ddl = match flavor {
        Flavor::Jsonb => JSONB_SCHEMA,
        Flavor::Text => TEXT_SCHEMA,
    };
    client
        .batch_execute(&format!(
            "BEGIN; SELECT pg_advisory_xact_lock(hashtext('saltq-returners schema')); {ddl} COMMIT;"
        ))
        .await
    // On failure the transaction is left open, but the caller drops the connection.
}

/// Salt's `success` column: psycopg2 turns a bool into `true`/`false`.
fn success_text(v: &Value) -> String {
    match v {
        Value::Bool(b) => b.to_string(),
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
    let f = ReturnFields::of(s.flavor.returner(), load)?;
    let success = success_text(f.success);
    match s.flavor {
        Flavor::Jsonb => {
            with_client(pools, s, "insert into salt_returns", async |c| {
                c.execute(
                    "INSERT INTO salt_returns (fun, jid, return, id, success, full_ret, alter_time) \
                     VALUES ($1, $2, $3, $4, $5, $6, now())",
                    &[&f.fun, &f.jid, f.ret, &f.id, &success, load],
                )
                .await
            })
            .await?;
        }
        Flavor::Text => {
            let (ret, full) = (salt_dumps(f.ret), salt_dumps(load));
            with_client(pools, s, "insert into salt_returns", async |c| {
                c.execute(
                    "INSERT INTO salt_returns (fun, jid, return, id, success, full_ret) \
                     VALUES ($1, $2, $3, $4, $5, $6)",
                    &[&f.fun, &f.jid, &ret, &f.id, &success, &full],
                )
                .await
            })
            .await?;
        }
    }
    Ok(())
}

/// `event_return(events)`: all of them into `salt_events` in one statement, so in one
/// transaction, in order.
pub(crate) async fn event_return(
    pools: &Pools,
    s: &Settings,
    master_id: &str,
    events: &[Event],
) -> Result<(), ReturnerError> {
    let tags: Vec<&str> = events.iter().map(|e| e.tag.as_str()).collect();
    let action = format!("insert {} events into salt_events", events.len());
    match s.flavor {
        Flavor::Jsonb => {
            let data: Vec<Value> = events
                .iter()
                .map(|e| Value::Object(e.data.clone()))
                .collect();
            with_client(pools, s, &action, async |c| {
                c.execute(
                    "INSERT INTO salt_events (tag, data, master_id, alter_time) \
                     SELECT t, d, $3, now() FROM unnest($1::varchar[], $2::jsonb[]) WITH ORDINALITY AS u(t, d, n) \
                     ORDER BY n",
                    &[&tags, &data, &master_id],
                )
                .await
            })
            .await?;
        }
        Flavor::Text => {
            let data: Vec<String> = events
                .iter()
                .map(|e| salt_dumps(&Value::Object(e.data.clone())))
                .collect();
            with_client(pools, s, &action, async |c| {
                c.execute(
                    "INSERT INTO salt_events (tag, data, master_id) \
                     SELECT t, d, $3 FROM unnest($1::varchar[], $2::text[]) WITH ORDINALITY AS u(t, d, n) \
                     ORDER BY n",
                    &[&tags, &data, &master_id],
                )
                .await
            })
            .await?;
        }
    }
    Ok(())
}

/// `save_load(jid, load)`: pgjsonb replaces an older load for the jid (Salt's `ON CONFLICT ...
/// DO UPDATE`); postgres keeps the first (Salt ignores the duplicate-key error).
pub(crate) async fn save_load(
    pools: &Pools,
    s: &Settings,
    jid: &str,
    load: &Value,
) -> Result<(), ReturnerError> {
    let action = format!("save the load of job {jid} into jids");
    match s.flavor {
        Flavor::Jsonb => {
            with_client(pools, s, &action, async |c| {
                c.execute(
                    "INSERT INTO jids (jid, load) VALUES ($1, $2) \
                     ON CONFLICT (jid) DO UPDATE SET load = EXCLUDED.load",
                    &[&jid, load],
                )
                .await
            })
            .await?;
        }
        Flavor::Text => {
            let text = salt_dumps(load);
            with_client(pools, s, &action, async |c| {
                c.execute(
                    "INSERT INTO jids (jid, load) VALUES ($1, $2) ON CONFLICT (jid) DO NOTHING",
                    &[&jid, &text],
                )
                .await
            })
            .await?;
        }
    }
    Ok(())
}

/// Creates the tables now (each statement is `IF NOT EXISTS`).
pub(crate) async fn create_schema(pools: &Pools, s: &Settings) -> Result<(), ReturnerError> {
    let flavor = s.flavor;
    with_client(pools, s, "create Salt's tables", async |c| {
        ensure_schema(c, flavor, true).await
    })
    .await
}
