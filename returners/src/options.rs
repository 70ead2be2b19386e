//! Returner options: which config keys belong to which returner, their types and Salt's
//! defaults, and Salt's lookup order (`salt/returners/__init__.py: get_returner_options`).
//!
//! For option `host` of the pgjsonb returner (prefix `returner.pgjsonb`), with `ret_config: alt`:
//! 1. `alt.returner.pgjsonb` (a dict) key `host`, else the flat key `alt.returner.pgjsonb.host`;
//!    used only when truthy (Python's truthiness: not null, false, 0, "", [] or {});
//! 2. otherwise `returner.pgjsonb` (a dict) key `host`, else the flat key `returner.pgjsonb.host`;
//! 3. a falsy result falls back to Salt's default for the option, if it has one (except that an
//!    explicitly empty password means no password: Salt would use its default `salt`);
//! 4. `ret_kwargs` (keys are option names: `host`, `db`, ...) then override everything.
//!
//! Keys in `ret_kwargs` that the returner does not take are ignored, as in Salt: one job's
//! `ret_kwargs` go to every returner named in its `ret`, and each takes what it knows.

use std::time::Duration;

use saltq_semantics::python::truthy;
use serde_json::{Map, Value};

use crate::error::ReturnerError;

/// What values an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A string; a number is taken as its text (YAML types `port: 5432` and `pass: 1234`).
    Str,
    /// A string that is never logged or shown in an error.
    Secret,
    /// A TCP port: an integer or a string of digits (Salt applies `int()`), 1 to 65535.
    Port,
    /// A non-negative integer, or a string of digits.
    Int,
    /// `true` or `false`.
    Bool,
    /// A list of strings.
    StrList,
    /// A map of strings to strings.
    StrMap,
    /// A positive number of seconds, integer or fractional.
    Seconds,
    /// Any value (redis cluster nodes, accepted so that cluster mode can be refused clearly).
    Any,
}

/// Salt's default for an option.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Fallback {
    /// A string.
    Str(&'static str),
    /// An integer.
    Int(i64),
    /// The empty list.
    EmptyList,
}

impl Fallback {
    fn value(self) -> Value {
        match self {
            Fallback::Str(s) => Value::String(s.to_owned()),
            Fallback::Int(n) => Value::from(n),
            Fallback::EmptyList => Value::Array(Vec::new()),
        }
    }
}

/// One option of one returner.
#[derive(Debug)]
pub(crate) struct Attr {
    /// The option's name inside the returner and in `ret_kwargs`, e.g. `startup_nodes`.
    pub name: &'static str,
    /// What follows the returner's prefix in a config key, e.g. `cluster.startup_nodes`.
    pub key: &'static str,
    /// What values it takes.
    pub kind: Kind,
    /// Salt's default, used when the configured value is missing or falsy.
    pub default: Option<Fallback>,
}

/// The returners saltq has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Name {
    /// Salt's `postgres` returner: JSON as text columns.
    Postgres,
    /// Salt's `pgjsonb` returner: JSON as jsonb columns.
    Pgjsonb,
    /// Salt's `mysql` returner (MySQL or MariaDB).
    Mysql,
    /// Salt's `redis` returner (`redis_return.py`).
    Redis,
    /// Salt's `rawfile_json` returner: one JSON object per line.
    RawfileJson,
    /// Salt's `syslog` returner.
    Syslog,
    /// saltq's own: an HTTP POST of the return as JSON.
    Webhook,
}

/// Every returner, in the order of [`crate::KNOWN`].
pub(crate) const ALL: [Name; 7] = [
    Name::Postgres,
    Name::Pgjsonb,
    Name::Mysql,
    Name::Redis,
    Name::RawfileJson,
    Name::Syslog,
    Name::Webhook,
];

const fn attr(name: &'static str, kind: Kind, default: Option<Fallback>) -> Attr {
    Attr {
        name,
        key: name,
        kind,
        default,
    }
}

const PGJSONB: &[Attr] = &[
    attr("host", Kind::Str, Some(Fallback::Str("localhost"))),
    attr("user", Kind::Str, Some(Fallback::Str("salt"))),
    attr("pass", Kind::Secret, Some(Fallback::Str("salt"))),
    attr("db", Kind::Str, Some(Fallback::Str("salt"))),
    attr("port", Kind::Port, Some(Fallback::Int(5432))),
    attr("sslmode", Kind::Str, None),
    attr("sslcert", Kind::Str, None),
    attr("sslkey", Kind::Str, None),
    attr("sslrootcert", Kind::Str, None),
    attr("sslcrl", Kind::Str, None),
];

const POSTGRES: &[Attr] = &[
    attr("host", Kind::Str, Some(Fallback::Str("localhost"))),
    attr("user", Kind::Str, Some(Fallback::Str("salt"))),
    attr("passwd", Kind::Secret, Some(Fallback::Str("salt"))),
    attr("db", Kind::Str, Some(Fallback::Str("salt"))),
    attr("port", Kind::Port, Some(Fallback::Int(5432))),
];

const MYSQL: &[Attr] = &[
    attr("host", Kind::Str, Some(Fallback::Str("salt"))),
    attr("user", Kind::Str, Some(Fallback::Str("salt"))),
    attr("pass", Kind::Secret, Some(Fallback::Str("salt"))),
    attr("db", Kind::Str, Some(Fallback::Str("salt"))),
    attr("port", Kind::Port, Some(Fallback::Int(3306))),
    attr("ssl_ca", Kind::Str, None),
    attr("ssl_cert", Kind::Str, None),
    attr("ssl_key", Kind::Str, None),
];

// Salt's code has no defaults for redis; its documentation (and its proxy-minion branch) says
// host `salt`, port 6379, db 0.
const REDIS: &[Attr] = &[
    attr("host", Kind::Str, Some(Fallback::Str("salt"))),
    attr("port", Kind::Port, Some(Fallback::Int(6379))),
    attr("unix_socket_path", Kind::Str, None),
    attr("db", Kind::Int, None),
    attr("password", Kind::Secret, None),
    attr("cluster_mode", Kind::Bool, None),
    Attr {
        name: "startup_nodes",
        key: "cluster.startup_nodes",
        kind: Kind::Any,
        default: None,
    },
    Attr {
        name: "skip_full_coverage_check",
        key: "cluster.skip_full_coverage_check",
        kind: Kind::Bool,
        default: None,
    },
];

const RAWFILE_JSON: &[Attr] = &[attr(
    "filename",
    Kind::Str,
    Some(Fallback::Str("/var/log/salt/events")),
)];

const SYSLOG: &[Attr] = &[
    attr("level", Kind::Str, Some(Fallback::Str("LOG_INFO"))),
    attr("facility", Kind::Str, Some(Fallback::Str("LOG_USER"))),
    attr("tag", Kind::Str, None),
    attr("options", Kind::StrList, Some(Fallback::EmptyList)),
    // saltq's own: where to send (`/dev/log`, another socket path, or `host:port` over UDP)
    // and how to frame it (`rfc3164`, the default, or `rfc5424`).
    attr("address", Kind::Str, Some(Fallback::Str("/dev/log"))),
    attr("format", Kind::Str, Some(Fallback::Str("rfc3164"))),
];

const WEBHOOK: &[Attr] = &[
    attr("url", Kind::Str, None),
    attr("headers", Kind::StrMap, None),
    attr("timeout", Kind::Seconds, Some(Fallback::Int(10))),
];

impl Name {
    /// The name used in `--return`, `event_return` and errors.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Name::Postgres => "postgres",
            Name::Pgjsonb => "pgjsonb",
            Name::Mysql => "mysql",
            Name::Redis => "redis",
            Name::RawfileJson => "rawfile_json",
            Name::Syslog => "syslog",
            Name::Webhook => "webhook",
        }
    }

    /// Salt's `virtualname` argument to `get_returner_options`: the prefix of the config keys.
    pub(crate) fn prefix(self) -> &'static str {
        match self {
            Name::Postgres => "returner.postgres",
            Name::Pgjsonb => "returner.pgjsonb",
            Name::Mysql => "mysql",
            Name::Redis => "redis",
            Name::RawfileJson => "rawfile_json",
            Name::Syslog => "syslog",
            Name::Webhook => "webhook",
        }
    }

    /// The options it takes.
    pub(crate) fn attrs(self) -> &'static [Attr] {
        match self {
            Name::Postgres => POSTGRES,
            Name::Pgjsonb => PGJSONB,
            Name::Mysql => MYSQL,
            Name::Redis => REDIS,
            Name::RawfileJson => RAWFILE_JSON,
            Name::Syslog => SYSLOG,
            Name::Webhook => WEBHOOK,
        }
    }

    /// The returner called `name`, or an error naming it and listing the known ones.
    pub(crate) fn parse(name: &str) -> Result<Name, ReturnerError> {
        ALL.into_iter()
            .find(|n| n.as_str() == name)
            .ok_or_else(|| ReturnerError::UnknownReturner {
                name: name.to_owned(),
                known: crate::KNOWN.join(", "),
            })
    }

    fn attr_by_key(self, key: &str) -> Option<&'static Attr> {
        self.attrs().iter().find(|a| a.key == key)
    }

    fn expected_keys(self) -> String {
        let keys: Vec<String> = self
            .attrs()
            .iter()
            .map(|a| format!("{}.{}", self.prefix(), a.key))
            .collect();
        keys.join(", ")
    }
}

/// What a top-level config key is, as far as returners are concerned.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum KeyClass<'k> {
    /// Nothing to do with returners (`id`, `master`, ...).
    Other,
    /// A returner option: `[profile.]prefix.attr`, or `[profile.]prefix` holding a dict.
    Option {
        /// The returner.
        name: Name,
        /// The `ret_config` profile, if the key has one.
        profile: Option<&'k str>,
        /// The option, or None for the dict form.
        attr: Option<&'static Attr>,
    },
    /// A key shaped like a returner option that names no option of that returner.
    Unknown(Name),
}

impl PartialEq for Attr {
    fn eq(&self, other: &Attr) -> bool {
        self.name == other.name && self.key == other.key
    }
}
impl Eq for Attr {}

/// Sorts a config key: a returner option (with or without a `ret_config` profile), a near
/// miss, or something else.
pub(crate) fn classify(key: &str) -> KeyClass<'_> {
    let mut near_miss = None;
    // Each position where a dotted segment starts: 0 and just after every '.'.
    let starts = std::iter::once(0).chain(key.match_indices('.').map(|(i, _)| i + 1));
    for start in starts {
        let profile = match start {
            0 => None,
            _ => Some(&key[..start - 1]),
        };
        if profile == Some("") {
            continue;
        }
        let rest = &key[start..];
        // `alternative.pgjsonb.host`, as Salt's pgjsonb documentation (wrongly) spells it: Salt's
        // code reads `alternative.returner.pgjsonb.host`.
        for (bare, name) in [("pgjsonb", Name::Pgjsonb), ("postgres", Name::Postgres)] {
            if rest == bare || rest.strip_prefix(bare).is_some_and(|r| r.starts_with('.')) {
                near_miss = near_miss.or(Some(name));
            }
        }
        for name in ALL {
            let prefix = name.prefix();
            let Some(after) = rest.strip_prefix(prefix) else {
                continue;
            };
            if after.is_empty() {
                return KeyClass::Option {
                    name,
                    profile,
                    attr: None,
                };
            }
            let Some(attr_key) = after.strip_prefix('.') else {
                continue;
            };
            match name.attr_by_key(attr_key) {
                Some(attr) => {
                    return KeyClass::Option {
                        name,
                        profile,
                        attr: Some(attr),
                    };
                }
                None => near_miss = near_miss.or(Some(name)),
            }
        }
    }
    near_miss.map_or(KeyClass::Other, KeyClass::Unknown)
}

/// Checks every returner key of a config: its value's type, and that no key is a near miss.
/// Returns the returner keys with their values, and the `ret_config` profiles they use.
pub(crate) fn validate_opts(
    opts: &Map<String, Value>,
) -> Result<(Map<String, Value>, Vec<String>), ReturnerError> {
    let mut kept = Map::new();
    let mut profiles: Vec<String> = Vec::new();
    for (key, value) in opts {
        match classify(key) {
            KeyClass::Other => continue,
            KeyClass::Unknown(name) => {
                return Err(ReturnerError::UnknownOption {
                    key: key.clone(),
                    returner: name.as_str(),
                    expected: name.expected_keys(),
                });
            }
            KeyClass::Option {
                name,
                profile,
                attr,
            } => {
                match attr {
                    Some(attr) => check_kind(attr.kind, value, key)?,
                    None => check_dict(name, key, value)?,
                }
                if let Some(p) = profile
                    && !profiles.iter().any(|q| q == p)
                {
                    profiles.push(p.to_owned());
                }
                kept.insert(key.clone(), value.clone());
            }
        }
    }
    Ok((kept, profiles))
}

/// The dict form (`syslog: {level: LOG_ERR}`): every inner key must be an option of the returner.
fn check_dict(name: Name, key: &str, value: &Value) -> Result<(), ReturnerError> {
    let map = match value {
        Value::Null => return Ok(()),
        Value::Object(map) => map,
        _ => {
            return Err(ReturnerError::InvalidOption {
                key: key.to_owned(),
                reason: format!("expected a mapping of {} options", name.as_str()),
            });
        }
    };
    for (inner, v) in map {
        let full = format!("{key}.{inner}");
        match name.attr_by_key(inner) {
            Some(attr) => check_kind(attr.kind, v, &full)?,
            None => {
                return Err(ReturnerError::UnknownOption {
                    key: full,
                    returner: name.as_str(),
                    expected: name.expected_keys(),
                });
            }
        }
    }
    Ok(())
}

/// Checks that `value` (from `key`) is of the kind; null always is (it means unset).
pub(crate) fn check_kind(kind: Kind, value: &Value, key: &str) -> Result<(), ReturnerError> {
    if value.is_null() {
        return Ok(());
    }
    let bad = |reason: &str| ReturnerError::InvalidOption {
        key: key.to_owned(),
        reason: reason.to_owned(),
    };
    match kind {
        Kind::Str | Kind::Secret => match value {
            Value::String(_) | Value::Number(_) => Ok(()),
            _ => Err(bad("expected a string")),
        },
        Kind::Port => to_int(value)
            .and_then(|n| u16::try_from(n).ok())
            .filter(|&p| p > 0)
            .map(|_| ())
            .ok_or_else(|| bad("expected a port number from 1 to 65535")),
        Kind::Int => to_int(value)
            .filter(|&n| n >= 0)
            .map(|_| ())
            .ok_or_else(|| bad("expected a non-negative integer")),
        Kind::Bool => match value {
            Value::Bool(_) => Ok(()),
            _ => Err(bad("expected true or false")),
        },
        Kind::StrList => match value {
            Value::Array(items) if items.iter().all(Value::is_string) => Ok(()),
            _ => Err(bad("expected a list of strings")),
        },
        Kind::StrMap => match value {
            Value::Object(m) if m.values().all(|v| v.is_string() || v.is_number()) => Ok(()),
            _ => Err(bad("expected a mapping of names to strings")),
        },
        Kind::Seconds => to_seconds(value)
            .map(|_| ())
            .ok_or_else(|| bad("expected a positive number of seconds")),
        Kind::Any => Ok(()),
    }
}

/// An integer, or a string of digits (with surrounding spaces), as Python's `int()`.
fn to_int(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn to_seconds(value: &Value) -> Option<Duration> {
    let secs = match value {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    (secs.is_finite() && secs > 0.0 && secs < 1e9).then(|| Duration::from_secs_f64(secs))
}

/// One option's value after Salt's lookup, and the key it came from.
#[derive(Debug, Clone)]
struct Found {
    value: Value,
    origin: String,
}

/// A returner's options for one call, after Salt's lookup order.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    name: Name,
    values: Vec<(&'static Attr, Found)>,
}

/// Salt's `get_returner_options` for returner `name`.
pub(crate) fn resolve(
    name: Name,
    opts: &Map<String, Value>,
    ret_config: Option<&str>,
    ret_kwargs: Option<&Map<String, Value>>,
) -> Result<Resolved, ReturnerError> {
    let prefix = name.prefix();
    let mut values = Vec::new();
    for attr in name.attrs() {
        // Salt treats an empty password as unset, so its default (`salt`) applies and a server
        // without a password cannot be configured; saltq takes an explicit "" as no password.
        let set = |f: &Found| truthy(&f.value) || (attr.kind == Kind::Secret && f.value == "");
        let mut found = None;
        if let Some(profile) = ret_config.filter(|p| !p.is_empty()) {
            found = lookup(opts, &format!("{profile}.{prefix}"), attr.key).filter(set);
        }
        if found.is_none() {
            found = lookup(opts, prefix, attr.key);
        }
        let found = match found {
            Some(f) if set(&f) => Some(f),
            _ => attr.default.map(|d| Found {
                value: d.value(),
                origin: format!("{prefix}.{} (default)", attr.key),
            }),
        };
        if let Some(f) = found {
            values.push((attr, f));
        }
    }
    if let Some(kwargs) = ret_kwargs {
        for (key, value) in kwargs {
            let Some(attr) = name.attrs().iter().find(|a| a.name == key) else {
                tracing::debug!(
                    returner = name.as_str(),
                    key,
                    "ret_kwargs key not used by this returner"
                );
                continue;
            };
            let origin = format!("ret_kwargs.{key}");
            check_kind(attr.kind, value, &origin)?;
            values.retain(|(a, _)| a.name != attr.name);
            values.push((
                attr,
                Found {
                    value: value.clone(),
                    origin,
                },
            ));
        }
    }
    if name == Name::Mysql {
        // Salt's mysql returner reads the string "None" (any case) as None.
        values.retain(
            |(_, f)| !matches!(&f.value, Value::String(s) if s.eq_ignore_ascii_case("none")),
        );
    }
    Ok(Resolved { name, values })
}

/// Salt's `c_cfg.get(attr, cfg("<prefix>.<attr>"))`: the dict form wins over the flat key.
fn lookup(opts: &Map<String, Value>, prefix: &str, key: &str) -> Option<Found> {
    if let Some(Value::Object(dict)) = opts.get(prefix)
        && let Some(v) = dict.get(key)
    {
        return Some(Found {
            value: v.clone(),
            origin: format!("{prefix}.{key}"),
        });
    }
    let flat = format!("{prefix}.{key}");
    opts.get(&flat).map(|v| Found {
        value: v.clone(),
        origin: flat,
    })
}

impl Resolved {
    /// The returner these options are for.
    pub(crate) fn name(&self) -> Name {
        self.name
    }

    fn get(&self, name: &str) -> Option<&Found> {
        self.values
            .iter()
            .find(|(a, _)| a.name == name)
            .map(|(_, f)| f)
            .filter(|f| !f.value.is_null())
    }

    fn bad(&self, name: &str, reason: impl Into<String>) -> ReturnerError {
        let key = self.get(name).map_or_else(
            || format!("{}.{name}", self.name.prefix()),
            |f| f.origin.clone(),
        );
        ReturnerError::InvalidOption {
            key,
            reason: reason.into(),
        }
    }

    /// Error for option `name` (named by where its value came from).
    pub(crate) fn invalid(&self, name: &str, reason: impl Into<String>) -> ReturnerError {
        self.bad(name, reason)
    }

    /// A string option (numbers as their text).
    pub(crate) fn str(&self, name: &str) -> Result<Option<String>, ReturnerError> {
        match self.get(name).map(|f| &f.value) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(self.bad(name, "expected a string")),
        }
    }

    /// A port option.
    pub(crate) fn port(&self, name: &str) -> Result<Option<u16>, ReturnerError> {
        match self.get(name) {
            None => Ok(None),
            Some(f) => to_int(&f.value)
                .and_then(|n| u16::try_from(n).ok())
                .filter(|&p| p > 0)
                .map(Some)
                .ok_or_else(|| self.bad(name, "expected a port number from 1 to 65535")),
        }
    }

    /// A non-negative integer option.
    pub(crate) fn int(&self, name: &str) -> Result<Option<i64>, ReturnerError> {
        match self.get(name) {
            None => Ok(None),
            Some(f) => to_int(&f.value)
                .filter(|&n| n >= 0)
                .map(Some)
                .ok_or_else(|| self.bad(name, "expected a non-negative integer")),
        }
    }

    /// A boolean option; unset is false.
    pub(crate) fn flag(&self, name: &str) -> Result<bool, ReturnerError> {
        match self.get(name).map(|f| &f.value) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.bad(name, "expected true or false")),
        }
    }

    /// A list-of-strings option; unset is empty.
    pub(crate) fn str_list(&self, name: &str) -> Result<Vec<String>, ReturnerError> {
        match self.get(name).map(|f| &f.value) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| self.bad(name, "expected a list of strings"))
                })
                .collect(),
            Some(_) => Err(self.bad(name, "expected a list of strings")),
        }
    }

    /// A map-of-strings option; unset is empty.
    pub(crate) fn str_map(&self, name: &str) -> Result<Vec<(String, String)>, ReturnerError> {
        match self.get(name).map(|f| &f.value) {
            None => Ok(Vec::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    Value::Number(n) => Ok((k.clone(), n.to_string())),
                    _ => Err(self.bad(name, format!("header {k} is not a string"))),
                })
                .collect(),
            Some(_) => Err(self.bad(name, "expected a mapping of names to strings")),
        }
    }

    /// A duration option in seconds.
    pub(crate) fn seconds(&self, name: &str) -> Result<Option<Duration>, ReturnerError> {
        match self.get(name) {
            None => Ok(None),
            Some(f) => to_seconds(&f.value)
                .map(Some)
                .ok_or_else(|| self.bad(name, "expected a positive number of seconds")),
        }
    }

    /// Whether option `name` has a value other than null.
    pub(crate) fn is_set(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn classify_keys() {
        let check = |key: &str, expected: Option<(Name, Option<&str>, Option<&str>)>| {
            let got = match classify(key) {
                KeyClass::Option {
                    name,
                    profile,
                    attr,
                } => Some((name, profile, attr.map(|a| a.key))),
                _ => None,
            };
            assert_eq!(got, expected, "{key}");
        };
        check(
            "returner.pgjsonb.host",
            Some((Name::Pgjsonb, None, Some("host"))),
        );
        check(
            "returner.postgres.passwd",
            Some((Name::Postgres, None, Some("passwd"))),
        );
        check(
            "alt.returner.pgjsonb.port",
            Some((Name::Pgjsonb, Some("alt"), Some("port"))),
        );
        check("mysql.host", Some((Name::Mysql, None, Some("host"))));
        check("mysql", Some((Name::Mysql, None, None)));
        check(
            "alternative.mysql",
            Some((Name::Mysql, Some("alternative"), None)),
        );
        check(
            "redis.cluster.startup_nodes",
            Some((Name::Redis, None, Some("cluster.startup_nodes"))),
        );
        check(
            "rawfile_json.filename",
            Some((Name::RawfileJson, None, Some("filename"))),
        );
        check("syslog.level", Some((Name::Syslog, None, Some("level"))));
        check(
            "a.b.syslog.tag",
            Some((Name::Syslog, Some("a.b"), Some("tag"))),
        );
        check("webhook.url", Some((Name::Webhook, None, Some("url"))));
        // Salt's pgjsonb takes `pass`, postgres takes `passwd`.
        check("returner.pgjsonb.passwd", None);
        check("id", None);
        check("master", None);
        check("mysqlx.host", None);
        check(".mysql.host", None);
        assert_eq!(classify("mysql.hots"), KeyClass::Unknown(Name::Mysql));
        assert_eq!(
            classify("returner.pgjsonb.passwd"),
            KeyClass::Unknown(Name::Pgjsonb)
        );
        assert_eq!(
            classify("alt.redis.pasword"),
            KeyClass::Unknown(Name::Redis)
        );
        assert_eq!(
            classify("alternative.pgjsonb.host"),
            KeyClass::Unknown(Name::Pgjsonb)
        );
        assert_eq!(classify("postgres.host"), KeyClass::Unknown(Name::Postgres));
        assert_eq!(classify("keep_jobs_seconds"), KeyClass::Other);
        assert_eq!(classify("returner"), KeyClass::Other);
    }

    #[test]
    fn validate_refuses_typos_and_bad_types() {
        let err = validate_opts(&opts(json!({"mysql.hots": "db"})))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`mysql.hots`") && err.contains("mysql.host"),
            "{err}"
        );
        let err = validate_opts(&opts(json!({"syslog": {"levle": "LOG_ERR"}})))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`syslog.levle`"), "{err}");
        let err = validate_opts(&opts(json!({"returner.pgjsonb.port": "x"})))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`returner.pgjsonb.port`") && err.contains("port number"),
            "{err}"
        );
        let err = validate_opts(&opts(json!({"alt.redis.port": 70000})))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`alt.redis.port`"), "{err}");
        let (kept, profiles) = validate_opts(&opts(json!({
            "id": "m1", "mysql.port": "3307", "alt.mysql.host": "h", "b.syslog": {"level": "LOG_ERR"}
        })))
        .unwrap();
        assert_eq!(kept.len(), 3);
        assert_eq!(profiles, vec!["alt".to_owned(), "b".to_owned()]);
    }

    #[test]
    fn salt_lookup_order() {
        let o = opts(json!({
            "returner.pgjsonb.host": "flat",
            "returner.pgjsonb.user": "flatuser",
            "returner.pgjsonb": {"user": "dictuser"},
            "alt.returner.pgjsonb.host": "althost",
            "alt.returner.pgjsonb.db": "",
            "returner.pgjsonb.port": 0,
        }));
        let r = resolve(Name::Pgjsonb, &o, None, None).unwrap();
        assert_eq!(r.str("host").unwrap().as_deref(), Some("flat"));
        // The dict form wins over the flat key.
        assert_eq!(r.str("user").unwrap().as_deref(), Some("dictuser"));
        // Falsy values fall back to Salt's defaults.
        assert_eq!(r.port("port").unwrap(), Some(5432));
        assert_eq!(r.str("db").unwrap().as_deref(), Some("salt"));
        assert_eq!(r.str("sslmode").unwrap(), None);

        let r = resolve(Name::Pgjsonb, &o, Some("alt"), None).unwrap();
        assert_eq!(r.str("host").unwrap().as_deref(), Some("althost"));
        // A falsy profile value falls back to the default location, then the default.
        assert_eq!(r.str("db").unwrap().as_deref(), Some("salt"));
        assert_eq!(r.str("user").unwrap().as_deref(), Some("dictuser"));

        let kw = opts(json!({"db": "other", "port": "6543", "unrelated": 1}));
        let r = resolve(Name::Pgjsonb, &o, Some("alt"), Some(&kw)).unwrap();
        assert_eq!(r.str("db").unwrap().as_deref(), Some("other"));
        assert_eq!(r.port("port").unwrap(), Some(6543));

        let kw = opts(json!({"port": "nope"}));
        let err = resolve(Name::Pgjsonb, &o, None, Some(&kw))
            .unwrap_err()
            .to_string();
        assert!(err.contains("ret_kwargs.port"), "{err}");
    }

    #[test]
    fn an_empty_password_is_no_password() {
        let o = opts(json!({"mysql.pass": "", "mysql.user": ""}));
        let r = resolve(Name::Mysql, &o, None, None).unwrap();
        assert_eq!(r.str("pass").unwrap().as_deref(), Some(""));
        assert_eq!(r.str("user").unwrap().as_deref(), Some("salt"));
        let r = resolve(Name::Mysql, &opts(json!({})), None, None).unwrap();
        assert_eq!(r.str("pass").unwrap().as_deref(), Some("salt"));
    }

    #[test]
    fn mysql_none_string_is_none() {
        let o = opts(json!({"mysql.ssl_ca": "None", "mysql.host": "NONE"}));
        let r = resolve(Name::Mysql, &o, None, None).unwrap();
        assert_eq!(r.str("ssl_ca").unwrap(), None);
        assert_eq!(r.str("host").unwrap(), None);
    }

    #[test]
    fn redis_cluster_keys_use_their_option_names() {
        let o = opts(json!({"redis.cluster.skip_full_coverage_check": true}));
        let r = resolve(Name::Redis, &o, None, None).unwrap();
        assert!(r.flag("skip_full_coverage_check").unwrap());
        assert_eq!(r.str("host").unwrap().as_deref(), Some("salt"));
    }
}
