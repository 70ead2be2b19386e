//! Salt's returners for saltq: a job's return (or a batch of master events) written to
//! PostgreSQL, MySQL/MariaDB, Redis, a JSON-lines file, syslog or a webhook, with Salt's config
//! keys, defaults, tables and key layout, plus the master's [`EventReturnQueue`].
//!
//! [`Returners`] is built once from the daemon's config ([`Returners::from_opts`]), which checks
//! every returner key up front, and is then shared: connections are opened on first use and
//! kept per server. Each call looks its options up in Salt's order (`ret_config` profile, dict
//! form, flat key, default, then `ret_kwargs`), so one job can write to another database.
//!
//! | returner | Salt module | stores |
//! |---|---|---|
//! | `pgjsonb` | `pgjsonb.py` | `jids`, `salt_returns`, `salt_events` with jsonb columns |
//! | `postgres` | `postgres.py` | the same tables with JSON as text |
//! | `mysql` | `mysql.py` | the same tables on MySQL or MariaDB |
//! | `redis` | `redis_return.py` | `ret:<jid>` hash, `<id>:<fun>`, `minions` set, `load:<jid>` |
//! | `rawfile_json` | `rawfile_json.py` | one JSON object per line in `filename` |
//! | `syslog` | `syslog_return.py` | one message per return, RFC 3164 or 5424 |
//! | `webhook` | (saltq) | an HTTP POST of the return as JSON |
//!
//! Config keys (Salt's names and defaults; each also in the dict form, e.g.
//! `syslog: {level: LOG_ERR}`, and behind a `ret_config` profile, e.g.
//! `alternative.returner.pgjsonb.host` or `alternative.mysql: {db: other}`):
//!
//! | returner | keys (default) |
//! |---|---|
//! | `pgjsonb` | `returner.pgjsonb.` `host` (localhost), `port` (5432), `user` (salt), `pass` (salt), `db` (salt), `sslmode`, `sslcert`, `sslkey`, `sslrootcert`, `sslcrl` (unset or `disable` only) |
//! | `postgres` | `returner.postgres.` `host` (localhost), `port` (5432), `user` (salt), `passwd` (salt), `db` (salt) |
//! | `mysql` | `mysql.` `host` (salt), `port` (3306), `user` (salt), `pass` (salt), `db` (salt), `ssl_ca`, `ssl_cert`, `ssl_key` (unset only) |
//! | `redis` | `redis.` `host` (salt), `port` (6379), `db` (0), `password`, `unix_socket_path`, `cluster_mode` (false only), `cluster.startup_nodes`, `cluster.skip_full_coverage_check` |
//! | `rawfile_json` | `rawfile_json.filename` (/var/log/salt/events) |
//! | `syslog` | `syslog.` `level` (LOG_INFO), `facility` (LOG_USER), `tag` (program name, ≤ 32), `options` ([]: LOG_PID, LOG_PERROR, ...); saltq: `address` (/dev/log, or host:port for UDP), `format` (rfc3164, or rfc5424) |
//! | `webhook` | `webhook.` `url` (required when used; http:// only), `headers` ({}), `timeout` (10 s) |
//!
//! Also read: `id` (the `master_id` of `salt_events` rows; default `<hostname>_master`) and
//! `keep_jobs_seconds` (lifetime of redis keys, default 86400; 0 keeps them).
//! `ret_kwargs` keys are the option names without prefix (`db`, `pass`, `level`, `url`).

mod error;
mod mysql;
mod options;
mod pg;
mod queue;
mod rawfile;
mod redis_return;
mod syslog;
mod webhook;

use std::sync::Arc;
use std::time::Duration;

use saltq_semantics::python::salt_dumps;
use serde_json::{Map, Value};

pub use crate::error::ReturnerError;
pub use crate::queue::{EventReturnConfig, EventReturnQueue, EventReturnStats};

use crate::options::Name;

/// Salt's return load: `id`, `jid`, `fun`, `fun_args`, `return`, `retcode`, `success`, and
/// optionally `metadata` and `out`. Stored as given: it is Salt's `full_ret`.
pub type ReturnLoad = Value;

/// The returners saltq has, by the name used in `--return`, `return` and `event_return`.
pub const KNOWN: &[&str] = &[
    "postgres",
    "pgjsonb",
    "mysql",
    "redis",
    "rawfile_json",
    "syslog",
    "webhook",
];

/// Longest any single database or server operation may take before it counts as failed.
pub(crate) const OP_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest a connection attempt may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One event from the master's bus, as event returners receive it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Salt's tag, e.g. `salt/job/<jid>/ret/<id>`.
    pub tag: String,
    /// The event's data, including `_stamp`.
    pub data: Map<String, Value>,
}

impl Event {
    /// The event as Salt hands it to `event_return`: `{"data": ..., "tag": ...}`.
    pub(crate) fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("data".into(), Value::Object(self.data.clone()));
        m.insert("tag".into(), Value::String(self.tag.clone()));
        Value::Object(m)
    }
}

/// Whether a top-level config key belongs to a returner: `returner.pgjsonb.host`,
/// `returner.postgres.passwd`, `mysql.port`, `redis.db`, `rawfile_json.filename`,
/// `syslog.level`, `webhook.url`, the dict forms (`syslog: {level: ...}`), and all of these
/// behind a `ret_config` profile (`alternative.mysql.host`, `alternative.returner.pgjsonb`).
/// A config loader should accept exactly these beside its own keys; a near miss such as
/// `mysql.hots` is false here and refused by [`Returners::from_opts`] with the expected keys.
pub fn is_returner_option(key: &str) -> bool {
    matches!(options::classify(key), options::KeyClass::Option { .. })
}

/// Splits a return list (`--return mysql,redis`, the minion's `return` option) into names,
/// refusing an unknown one with the list of known returners. Empty items are skipped and
/// duplicates kept once, in their first position (Salt runs each named returner once).
pub fn parse_return_list(list: &str) -> Result<Vec<String>, ReturnerError> {
    let mut names: Vec<String> = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        Name::parse(item)?;
        if !names.iter().any(|n| n == item) {
            names.push(item.to_owned());
        }
    }
    Ok(names)
}

/// All returners, configured once from a daemon's config; cheap to clone and share.
#[derive(Clone)]
pub struct Returners {
    inner: Arc<Inner>,
}

/// What every clone shares.
struct Inner {
    /// The config's returner keys (nothing else), as Salt's `__opts__` for the lookup.
    opts: Map<String, Value>,
    /// `master_id` of `salt_events` rows: the config's `id`, else `<hostname>_master` as Salt.
    master_id: String,
    /// Lifetime of redis keys: Salt's `keep_jobs_seconds`; None when it is 0 (keep forever).
    redis_ttl: Option<u64>,
    /// PostgreSQL connections, per server, database and user.
    pg: pg::Pools,
    /// MySQL connection pools, per server, database and user.
    mysql: mysql::Pools,
    /// Redis connections, per server and database.
    redis: redis_return::Pools,
    /// The HTTP client (it pools connections per host).
    webhook: webhook::Client,
}

impl std::fmt::Debug for Returners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Returners")
            .field("keys", &self.inner.opts.keys().collect::<Vec<_>>())
            .field("master_id", &self.inner.master_id)
            .finish_non_exhaustive()
    }
}

impl Returners {
    /// Reads and checks every returner option in `opts` (the daemon's whole config as JSON):
    /// an unknown option key, a value of the wrong type, an unsupported setting (TLS to a
    /// database, redis cluster mode, an `https` webhook, an unknown syslog level) is an error
    /// naming the key. Also reads `id` (the master id written to `salt_events`) and
    /// `keep_jobs_seconds` (the lifetime of redis keys, default 86400). Connects to nothing.
    pub fn from_opts(opts: &Value) -> Result<Returners, ReturnerError> {
        let empty = Map::new();
        let all = match opts {
            Value::Object(m) => m,
            Value::Null => &empty,
            _ => {
                return Err(ReturnerError::InvalidOption {
                    key: "(config)".into(),
                    reason: "expected a mapping of config keys".into(),
                });
            }
        };
        let (kept, profiles) = options::validate_opts(all)?;
        let master_id = match all.get("id") {
            Some(Value::String(id)) if !id.is_empty() => id.clone(),
            _ => format!("{}_master", gethostname::gethostname().to_string_lossy()),
        };
        let redis_ttl = keep_jobs_seconds(all)?;
        let returners = Returners {
            inner: Arc::new(Inner {
                opts: kept,
                master_id,
                redis_ttl: (redis_ttl > 0).then_some(redis_ttl),
                pg: pg::Pools::default(),
                mysql: mysql::Pools::default(),
                redis: redis_return::Pools::default(),
                webhook: webhook::Client::new(),
            }),
        };
        // Every returner's settings, plain and under each profile, must make sense now.
        for name in options::ALL {
            returners.settings(name, None, None)?;
            for profile in &profiles {
                returners.settings(name, Some(profile), None)?;
            }
        }
        Ok(returners)
    }

    /// Sends one return to one returner (Salt's `<name>.returner(ret)`), with the job's
    /// `ret_config` profile and `ret_kwargs` overrides. The caller logs a failure; it must not
    /// change the job's result.
    pub async fn returner(
        &self,
        name: &str,
        load: &ReturnLoad,
        ret_config: Option<&str>,
        ret_kwargs: Option<&Map<String, Value>>,
    ) -> Result<(), ReturnerError> {
        let name = Name::parse(name)?;
        let i = &self.inner;
        match self.settings(name, ret_config, ret_kwargs)? {
            Settings::Pg(s) => pg::returner(&i.pg, &s, load).await,
            Settings::Mysql(s) => mysql::returner(&i.mysql, &s, load).await,
            Settings::Redis(s) => redis_return::returner(&i.redis, &s, i.redis_ttl, load).await,
            Settings::Rawfile(s) => rawfile::returner(&s, load).await,
            Settings::Syslog(s) => syslog::returner(&s, load).await,
            Settings::Webhook(s) => webhook::post(&i.webhook, &s, &salt_dumps(load)).await,
        }
    }

    /// Stores a batch of master events (Salt's `<name>.event_return(events)`): one transaction
    /// into `salt_events` for the databases, one append for `rawfile_json`, one POST of a JSON
    /// array for `webhook`. `redis` and `syslog` have no event returner, as in Salt.
    pub async fn event_return(&self, name: &str, events: &[Event]) -> Result<(), ReturnerError> {
        let name = Name::parse(name)?;
        if events.is_empty() {
            return Ok(());
        }
        let i = &self.inner;
        match self.settings(name, None, None)? {
            Settings::Pg(s) => pg::event_return(&i.pg, &s, &i.master_id, events).await,
            Settings::Mysql(s) => mysql::event_return(&i.mysql, &s, &i.master_id, events).await,
            Settings::Rawfile(s) => rawfile::event_return(&s, events).await,
            Settings::Webhook(s) => {
                let body = Value::Array(events.iter().map(Event::to_value).collect());
                webhook::post(&i.webhook, &s, &salt_dumps(&body)).await
            }
            Settings::Redis(_) | Settings::Syslog(_) => Err(ReturnerError::Unsupported {
                returner: name.as_str(),
                operation: "event_return",
            }),
        }
    }

    /// Whether returner `name` can take events (see [`Returners::event_return`]).
    pub fn supports_event_return(name: &str) -> Result<bool, ReturnerError> {
        Ok(matches!(
            Name::parse(name)?,
            Name::Pgjsonb | Name::Postgres | Name::Mysql | Name::RawfileJson | Name::Webhook
        ))
    }

    /// Stores a job's publish load under its jid (Salt's `<name>.save_load(jid, load)`): the
    /// `jids` table of pgjsonb (replacing an older load), postgres and mysql (keeping the first),
    /// or redis `load:<jid>` with the `keep_jobs_seconds` lifetime. For a master that mirrors
    /// its job cache into a returner's store.
    pub async fn save_load(
        &self,
        name: &str,
        jid: &str,
        load: &Value,
    ) -> Result<(), ReturnerError> {
        let name = Name::parse(name)?;
        let i = &self.inner;
        match self.settings(name, None, None)? {
            Settings::Pg(s) => pg::save_load(&i.pg, &s, jid, load).await,
            Settings::Mysql(s) => mysql::save_load(&i.mysql, &s, jid, load).await,
            Settings::Redis(s) => {
                redis_return::save_load(&i.redis, &s, i.redis_ttl, jid, load).await
            }
            Settings::Rawfile(_) | Settings::Syslog(_) | Settings::Webhook(_) => {
                Err(ReturnerError::Unsupported {
                    returner: name.as_str(),
                    operation: "save_load",
                })
            }
        }
    }

    /// Creates Salt's tables for a database returner (`pgjsonb`, `postgres`, `mysql`) if they
    /// are missing, in the database its options (under `ret_config`, if given) name. The same
    /// happens on first use; this is for a setup command run by someone allowed to create
    /// tables, so that the returner's own user needs only to insert.
    pub async fn create_schema(
        &self,
        name: &str,
        ret_config: Option<&str>,
    ) -> Result<(), ReturnerError> {
        let name = Name::parse(name)?;
        let i = &self.inner;
        match self.settings(name, ret_config, None)? {
            Settings::Pg(s) => pg::create_schema(&i.pg, &s).await,
            Settings::Mysql(s) => mysql::create_schema(&i.mysql, &s).await,
            _ => Err(ReturnerError::Unsupported {
                returner: name.as_str(),
                operation: "create_schema",
            }),
        }
    }

    /// The typed settings of returner `name` for one call.
    fn settings(
        &self,
        name: Name,
        ret_config: Option<&str>,
        ret_kwargs: Option<&Map<String, Value>>,
    ) -> Result<Settings, ReturnerError> {
        let r = options::resolve(name, &self.inner.opts, ret_config, ret_kwargs)?;
        Ok(match name {
            Name::Pgjsonb | Name::Postgres => Settings::Pg(pg::Settings::from_options(&r)?),
            Name::Mysql => Settings::Mysql(mysql::Settings::from_options(&r)?),
            Name::Redis => Settings::Redis(redis_return::Settings::from_options(&r)?),
            Name::RawfileJson => Settings::Rawfile(rawfile::Settings::from_options(&r)?),
            Name::Syslog => Settings::Syslog(syslog::Settings::from_options(&r)?),
            Name::Webhook => Settings::Webhook(webhook::Settings::from_options(&r)?),
        })
    }
}

/// One returner's settings for one call.
enum Settings {
    /// pgjsonb or postgres.
    Pg(pg::Settings),
    /// mysql.
    Mysql(mysql::Settings),
    /// redis.
    Redis(redis_return::Settings),
    /// rawfile_json.
    Rawfile(rawfile::Settings),
    /// syslog.
    Syslog(syslog::Settings),
    /// webhook.
    Webhook(webhook::Settings),
}

/// Salt's `get_keep_jobs_seconds`: `keep_jobs_seconds` (default 86400), or the deprecated
/// `keep_jobs` in hours when only that one was changed.
fn keep_jobs_seconds(opts: &Map<String, Value>) -> Result<u64, ReturnerError> {
    let read = |key: &str, default: u64| match opts.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v.as_u64().ok_or_else(|| ReturnerError::InvalidOption {
            key: key.into(),
            reason: "expected a non-negative integer".into(),
        }),
    };
    let seconds = read("keep_jobs_seconds", 86400)?;
    let hours = read("keep_jobs", 24)?;
    Ok(if seconds == 86400 && hours != 24 {
        hours.saturating_mul(3600)
    } else {
        seconds
    })
}

/// The fields of a return load that the database returners store.
pub(crate) struct ReturnFields<'a> {
    /// Minion id.
    pub id: &'a str,
    /// Job id.
    pub jid: &'a str,
    /// Function; a multi-function job's list is joined with commas.
    pub fun: String,
    /// The function's return.
    pub ret: &'a Value,
    /// Salt's `ret.get("success", False)`.
    pub success: &'a Value,
}

impl<'a> ReturnFields<'a> {
    /// Reads the fields Salt's database returners index (`ret["id"]`, `ret["jid"]`, ...).
    pub(crate) fn of(
        returner: &'static str,
        load: &'a Value,
    ) -> Result<ReturnFields<'a>, ReturnerError> {
        let bad = |reason: &str| ReturnerError::BadLoad {
            returner,
            reason: reason.to_owned(),
        };
        let map = load
            .as_object()
            .ok_or_else(|| bad("the return load is not a mapping"))?;
        let text = |key: &str| match map.get(key) {
            Some(Value::String(s)) => Ok(s.as_str()),
            Some(_) => Err(bad(&format!("`{key}` is not a string"))),
            None => Err(bad(&format!("`{key}` is missing"))),
        };
        let fun = match map.get("fun") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().unwrap_or_default())
                .collect::<Vec<_>>()
                .join(","),
            _ => return Err(bad("`fun` is missing")),
        };
        const FALSE: &Value = &Value::Bool(false);
        Ok(ReturnFields {
            id: text("id")?,
            jid: text("jid")?,
            fun,
            ret: map
                .get("return")
                .ok_or_else(|| bad("`return` is missing"))?,
            success: map.get("success").unwrap_or(FALSE),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_json_matches_salt_dumps() {
        let v = json!({"id": "m1", "return": {"a": [1, 2.5, true, null]}, "s": "é\"x"});
        assert_eq!(
            salt_dumps(&v),
            r#"{"id": "m1", "return": {"a": [1, 2.5, true, null]}, "s": "é\"x"}"#
        );
    }

    #[test]
    fn return_lists() {
        assert_eq!(
            parse_return_list("mysql, redis,,mysql").unwrap(),
            vec!["mysql", "redis"]
        );
        let err = parse_return_list("mysql,mongo").unwrap_err().to_string();
        assert!(err.contains("`mongo`") && err.contains("pgjsonb"), "{err}");
    }

    #[test]
    fn keep_jobs() {
        let o = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(keep_jobs_seconds(&o(json!({}))).unwrap(), 86400);
        assert_eq!(
            keep_jobs_seconds(&o(json!({"keep_jobs": 2}))).unwrap(),
            7200
        );
        assert_eq!(
            keep_jobs_seconds(&o(json!({"keep_jobs_seconds": 60, "keep_jobs": 2}))).unwrap(),
            60
        );
        assert!(keep_jobs_seconds(&o(json!({"keep_jobs_seconds": "x"}))).is_err());
    }

    #[test]
    fn from_opts_checks_everything_up_front() {
        let err = Returners::from_opts(&json!({"redis.cluster_mode": true}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("redis.cluster_mode"), "{err}");
        let err = Returners::from_opts(&json!({"alt.syslog.level": "LOG_LOUD"}))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("alt.syslog.level") && err.contains("LOG_LOUD"),
            "{err}"
        );
        let err = Returners::from_opts(&json!({"webhook.url": "ftp://x/"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("webhook.url"), "{err}");
        let err = Returners::from_opts(&json!({"returner.pgjsonb.sslmode": "require"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("returner.pgjsonb.sslmode"), "{err}");
        let ok = Returners::from_opts(
            &json!({"id": "m", "master": "x", "returner.pgjsonb.sslmode": "disable"}),
        );
        assert!(ok.is_ok());
    }
}
