//! The master config keys salt-api reads: `rest_cherrypy`, `rest_tornado`,
//! `netapi_enable_clients`, `external_auth`, `token_expire` and `auth.pam.service`, validated
//! before any port is bound.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::eauth::ExternalAuth;

/// `rest_cherrypy` as written. Keys Salt has that saltq does not serve are refused by name.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawRestConfig {
    /// TCP port (required, as in Salt).
    pub port: Option<u16>,
    /// Address to listen on (default 0.0.0.0).
    pub host: Option<IpAddr>,
    /// PEM certificate chain; the master's own certificate when unset.
    pub ssl_crt: Option<PathBuf>,
    /// The key of `ssl_crt`.
    pub ssl_key: Option<PathBuf>,
    /// Serve plain HTTP.
    pub disable_ssl: Option<bool>,
    /// Errors carry details (Salt: tracebacks).
    pub debug: Option<bool>,
    /// URL prefix of every route (default `/`).
    pub root_prefix: Option<String>,
    /// Path of the webhook route (default `/hook`).
    pub webhook_url: Option<String>,
    /// Webhooks without a token.
    pub webhook_disable_auth: Option<bool>,
    /// Accepted and without effect, as in Salt 3007.8: it was CherryPy's timeout monitor,
    /// which CherryPy 12 and later (Salt's) no longer have.
    pub expire_responses: Option<bool>,
    /// Serve `/stats` with request counters (default false).
    pub collect_stats: Option<bool>,
    /// `/stats` without a token.
    pub stats_disable_auth: Option<bool>,
    /// Seconds a connection with no request in service may take to send the next request's
    /// headers (or a stalled body to go on) before the 408 (default 10: CherryPy's
    /// `server.socket_timeout`, which Salt does not expose; saltq's key).
    pub socket_timeout: Option<f64>,
    /// Connections salt-api holds at once (default 1024, at most a quarter of the open-file
    /// limit; saltq's key).
    pub max_connections: Option<usize>,
    /// Connections salt-api holds at once from one address (default 128; saltq's key).
    pub max_connections_per_source: Option<usize>,
    /// Reverse proxies (addresses or CIDR blocks) whose `X-Forwarded-For` names the client
    /// for the failed-login limits (saltq's key: Salt's rest_cherrypy has none). Default none:
    /// the header is ignored.
    pub trusted_proxies: Option<Vec<String>>,
}

/// `rest_tornado` as written: the options Salt 3007.8's `rest_tornado` reads
/// (`salt/netapi/rest_tornado/__init__.py`, `saltnado.py`), and saltq's connection bounds.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawTornadoConfig {
    /// TCP port (required, as in Salt: without it rest_tornado does not load).
    pub port: Option<u16>,
    /// Address to listen on (default all addresses).
    pub address: Option<IpAddr>,
    /// Accepted without effect: the listen backlog (Salt's default 128) is the system's.
    pub backlog: Option<u32>,
    /// PEM certificate chain; the master's own certificate when unset.
    pub ssl_crt: Option<PathBuf>,
    /// The key of `ssl_crt`.
    pub ssl_key: Option<PathBuf>,
    /// Serve plain HTTP.
    pub disable_ssl: Option<bool>,
    /// Errors carry details.
    pub debug: Option<bool>,
    /// Accepted without effect: Tornado's worker processes; saltq serves from one process.
    pub num_processes: Option<u32>,
    /// Serve the `/all_events/<token>` and `/formatted_events/<token>` websockets.
    pub websockets: Option<bool>,
    /// Webhooks without a token.
    pub webhook_disable_auth: Option<bool>,
    /// Origins answered with `Access-Control-Allow-Origin`: `*`, one origin or a list.
    pub cors_origin: Option<serde_json::Value>,
    /// As `rest_cherrypy.socket_timeout` (saltq's key).
    pub socket_timeout: Option<f64>,
    /// As `rest_cherrypy.max_connections` (saltq's key).
    pub max_connections: Option<usize>,
    /// As `rest_cherrypy.max_connections_per_source` (saltq's key).
    pub max_connections_per_source: Option<usize>,
    /// As `rest_cherrypy.trusted_proxies` (saltq's key).
    pub trusted_proxies: Option<Vec<String>>,
}

/// The keys as written in the master config.
#[derive(Debug, Clone, Default)]
pub struct RawConfig {
    /// `rest_cherrypy`: turns salt-api on.
    pub rest_cherrypy: Option<RawRestConfig>,
    /// `rest_tornado`: Salt's Tornado flavour of salt-api, on its own port.
    pub rest_tornado: Option<RawTornadoConfig>,
    /// `netapi_enable_clients` (default none, as Salt 3006+).
    pub netapi_enable_clients: Option<Vec<String>>,
    /// `external_auth`.
    pub external_auth: Option<serde_json::Value>,
    /// `token_expire` in seconds (default 43200).
    pub token_expire: Option<f64>,
    /// `auth.pam.service`: the PAM service of the `pam` backend (default `login`).
    pub pam_service: Option<String>,
    /// `max_tokens_per_user`: live tokens a user may hold, the oldest removed when a new one
    /// is made (saltq's key: Salt has no bound; default 1000).
    pub max_tokens_per_user: Option<u64>,
}

/// Where the server listens and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tls {
    /// Plain HTTP (`disable_ssl: true`).
    Off,
    /// This certificate chain and key (`ssl_crt`, `ssl_key`).
    Files {
        /// PEM chain.
        cert: PathBuf,
        /// PEM key.
        key: PathBuf,
    },
    /// The master's own certificate (no `ssl_crt`): the master serves the one it has loaded,
    /// renewals included; these are its files, for anything else that reads them.
    Master {
        /// PEM chain.
        cert: PathBuf,
        /// PEM key.
        key: PathBuf,
    },
}

/// Which of Salt's salt-api servers a [`Config`] serves: their URLs and answers differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// `rest_cherrypy`.
    Cherrypy,
    /// `rest_tornado` ("saltnado").
    Tornado,
}

impl Flavour {
    /// The config key that configures it, for messages.
    pub fn key(self) -> &'static str {
        match self {
            Flavour::Cherrypy => "rest_cherrypy",
            Flavour::Tornado => "rest_tornado",
        }
    }
}

/// `rest_tornado: cors_origin`: which `Origin`s are answered with
/// `Access-Control-Allow-Origin` (Salt's `_check_cors_origin`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorsOrigin {
    /// `*`: every origin, answered `*`.
    Any,
    /// These origins, each answered with itself.
    Listed(Vec<String>),
}

impl CorsOrigin {
    /// The `Access-Control-Allow-Origin` value for a request from `origin`, if allowed.
    pub fn allow(&self, origin: Option<&str>) -> Option<String> {
        match self {
            CorsOrigin::Any => Some("*".to_owned()),
            CorsOrigin::Listed(l) => origin
                .filter(|o| l.iter().any(|a| a == o))
                .map(str::to_owned),
        }
    }
}

/// The validated salt-api config.
#[derive(Debug, Clone)]
pub struct Config {
    /// Which server: rest_cherrypy's routes or rest_tornado's.
    pub flavour: Flavour,
    /// rest_tornado's websockets (`websockets`); rest_cherrypy always serves `/ws`.
    pub websockets: bool,
    /// rest_tornado's `cors_origin`.
    pub cors_origin: Option<CorsOrigin>,
    /// Listening address.
    pub addr: SocketAddr,
    /// TLS, or plain HTTP.
    pub tls: Tls,
    /// Errors with details.
    pub debug: bool,
    /// Prefix of every route, without a trailing `/` (empty for `/`).
    pub root_prefix: String,
    /// Path of the webhook route, without a trailing `/`.
    pub webhook_url: String,
    /// Webhooks need no token.
    pub webhook_disable_auth: bool,
    /// Serve `/stats`.
    pub collect_stats: bool,
    /// `/stats` needs no token.
    pub stats_disable_auth: bool,
    /// The clients a lowstate chunk may name.
    pub enable_clients: Vec<String>,
    /// Users, their backends and permissions.
    pub external_auth: ExternalAuth,
    /// Lifetime of a token.
    pub token_expire: Duration,
    /// Where tokens are kept (Salt's `token_dir`, `cachedir/tokens`).
    pub token_dir: PathBuf,
    /// How long an idle connection may take to send a request (`socket_timeout`).
    pub socket_timeout: Duration,
    /// Connections held at once (`max_connections`, `max_connections_per_source`).
    pub connections: saltq_transport::guard::Caps,
    /// Live tokens per user (`max_tokens_per_user`).
    pub max_tokens_per_user: usize,
    /// Proxies whose `X-Forwarded-For` is believed (`rest_cherrypy: trusted_proxies`).
    pub trusted_proxies: Vec<ipnet::IpNet>,
}

/// The clients Salt's `NetapiClient` has; `ssh` and `local_subset` are not served by saltq.
pub const CLIENTS: &[&str] = &[
    "local",
    "local_async",
    "local_batch",
    "local_subset",
    "runner",
    "runner_async",
    "ssh",
    "wheel",
    "wheel_async",
];

/// A bad key: its name and what was wrong.
pub type KeyError = (String, String);

fn bad(key: &str, message: impl Into<String>) -> KeyError {
    (key.to_owned(), message.into())
}

fn path_prefix(key: &str, v: Option<&str>, default: &str) -> Result<String, KeyError> {
    let v = v.unwrap_or(default);
    if !v.starts_with('/') {
        return Err(bad(key, format!("{v:?} must start with /")));
    }
    if v.contains(['?', '#', ' ']) {
        return Err(bad(key, format!("{v:?} is not a URL path")));
    }
    Ok(v.trim_end_matches('/').to_owned())
}

/// What both flavours read outside their own key.
struct Common {
    enable_clients: Vec<String>,
    external_auth: ExternalAuth,
    token_expire: f64,
    max_tokens_per_user: usize,
}

fn common(raw: &RawConfig) -> Result<Common, KeyError> {
    let enable_clients = raw.netapi_enable_clients.clone().unwrap_or_default();
    for c in &enable_clients {
        if !CLIENTS.contains(&c.as_str()) {
            return Err(bad(
                "netapi_enable_clients",
                format!(
                    "unknown client {c:?}: expected some of {}",
                    CLIENTS.join(", ")
                ),
            ));
        }
    }
    let external_auth =
        ExternalAuth::from_value(raw.external_auth.as_ref(), raw.pam_service.as_deref())
            .map_err(|m| bad("external_auth", m))?;
    let token_expire = raw.token_expire.unwrap_or(43200.0);
    if !(token_expire.is_finite() && token_expire > 0.0 && token_expire <= 1e9) {
        return Err(bad(
            "token_expire",
            format!("{token_expire} is not a positive number of seconds (at most 1e9)"),
        ));
    }
    let max_tokens_per_user = match raw.max_tokens_per_user {
        None => crate::tokens::DEFAULT_MAX_PER_USER,
        Some(n @ 1..=1_000_000) => n as usize,
        Some(n) => {
            return Err(bad(
                "max_tokens_per_user",
                format!("{n} is not a number of tokens from 1 to 1000000"),
            ));
        }
    };
    Ok(Common {
        enable_clients,
        external_auth,
        token_expire,
        max_tokens_per_user,
    })
}

/// The listener keys both flavours share, as written under `key`.
struct Listen<'a> {
    key: &'static str,
    socket_timeout: Option<f64>,
    max_connections: Option<usize>,
    max_connections_per_source: Option<usize>,
    trusted_proxies: Option<&'a [String]>,
    disable_ssl: Option<bool>,
    ssl_crt: &'a Option<PathBuf>,
    ssl_key: &'a Option<PathBuf>,
}

/// The validated listener keys.
struct Listening {
    tls: Tls,
    socket_timeout: Duration,
    connections: saltq_transport::guard::Caps,
    trusted_proxies: Vec<ipnet::IpNet>,
}

fn listening(l: Listen<'_>, master_tls: (PathBuf, PathBuf)) -> Result<Listening, KeyError> {
    let key = l.key;
    let trusted_proxies = crate::limit::parse_trusted(l.trusted_proxies.unwrap_or_default())
        .map_err(|m| bad(&format!("{key}.trusted_proxies"), m))?;
    let socket_timeout = l.socket_timeout.unwrap_or(10.0);
    if !(socket_timeout.is_finite() && socket_timeout > 0.0 && socket_timeout <= 86400.0) {
        return Err(bad(
            &format!("{key}.socket_timeout"),
            format!("{socket_timeout} is not a positive number of seconds (at most 86400)"),
        ));
    }
    let defaults = saltq_transport::guard::Caps::SALT_API;
    let caps_key = format!("{key}.max_connections");
    let connections = saltq_transport::guard::Caps {
        total: l.max_connections.unwrap_or(defaults.total),
        per_source: Some(
            l.max_connections_per_source
                .unwrap_or(defaults.per_source.unwrap_or(usize::MAX)),
        ),
    }
    .validate(&caps_key)
    .map_err(|m| bad(&caps_key, m))?;
    let tls = if l.disable_ssl.unwrap_or(false) {
        Tls::Off
    } else {
        match (l.ssl_crt, l.ssl_key) {
            (Some(cert), Some(key)) => Tls::Files {
                cert: cert.clone(),
                key: key.clone(),
            },
            (None, None) => Tls::Master {
                cert: master_tls.0,
                key: master_tls.1,
            },
            (Some(_), None) => {
                return Err(bad(key, "ssl_key is required with ssl_crt"));
            }
            (None, Some(_)) => {
                return Err(bad(key, "ssl_crt is required with ssl_key"));
            }
        }
    };
    Ok(Listening {
        tls,
        socket_timeout: Duration::from_secs_f64(socket_timeout),
        connections,
        trusted_proxies,
    })
}

fn cors_origin(v: Option<&serde_json::Value>) -> Result<Option<CorsOrigin>, KeyError> {
    use serde_json::Value;
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s == "*" => Ok(Some(CorsOrigin::Any)),
        Some(Value::String(s)) => Ok(Some(CorsOrigin::Listed(vec![s.clone()]))),
        Some(Value::Array(a)) => a
            .iter()
            .map(|o| {
                o.as_str().map(str::to_owned).ok_or_else(|| {
                    bad(
                        "rest_tornado.cors_origin",
                        format!(
                            "{o} is not an origin: expected a string such as https://example.com"
                        ),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|l| Some(CorsOrigin::Listed(l))),
        Some(other) => Err(bad(
            "rest_tornado.cors_origin",
            format!("{other} is not \"*\", an origin or a list of origins"),
        )),
    }
}

impl Config {
    /// Validates `raw`; `None` when `rest_cherrypy` is absent (salt-api off). `master_tls` is
    /// the master's own certificate and key, used when `ssl_crt` is not given; `cachedir` holds
    /// the tokens.
    pub fn from_raw(
        raw: &RawConfig,
        master_tls: (PathBuf, PathBuf),
        cachedir: PathBuf,
    ) -> Result<Option<Config>, KeyError> {
        let c = common(raw)?;
        let Some(rest) = &raw.rest_cherrypy else {
            return Ok(None);
        };
        let l = listening(
            Listen {
                key: "rest_cherrypy",
                socket_timeout: rest.socket_timeout,
                max_connections: rest.max_connections,
                max_connections_per_source: rest.max_connections_per_source,
                trusted_proxies: rest.trusted_proxies.as_deref(),
                disable_ssl: rest.disable_ssl,
                ssl_crt: &rest.ssl_crt,
                ssl_key: &rest.ssl_key,
            },
            master_tls,
        )?;
        let port = rest.port.ok_or_else(|| {
            bad(
                "rest_cherrypy",
                "port is required (the TCP port salt-api listens on, e.g. 8000)",
            )
        })?;
        Ok(Some(Config {
            flavour: Flavour::Cherrypy,
            websockets: true,
            cors_origin: None,
            addr: SocketAddr::new(rest.host.unwrap_or(IpAddr::from([0, 0, 0, 0])), port),
            tls: l.tls,
            debug: rest.debug.unwrap_or(false),
            root_prefix: path_prefix(
                "rest_cherrypy.root_prefix",
                rest.root_prefix.as_deref(),
                "/",
            )?,
            webhook_url: path_prefix(
                "rest_cherrypy.webhook_url",
                rest.webhook_url.as_deref(),
                "/hook",
            )?,
            webhook_disable_auth: rest.webhook_disable_auth.unwrap_or(false),
            collect_stats: rest.collect_stats.unwrap_or(false),
            stats_disable_auth: rest.stats_disable_auth.unwrap_or(false),
            enable_clients: c.enable_clients,
            external_auth: c.external_auth,
            token_expire: Duration::from_secs_f64(c.token_expire),
            token_dir: cachedir.join("tokens"),
            socket_timeout: l.socket_timeout,
            connections: l.connections,
            max_tokens_per_user: c.max_tokens_per_user,
            trusted_proxies: l.trusted_proxies,
        }))
    }

    /// Validates `rest_tornado` (with the keys both flavours read); `None` when it is absent.
    /// Its tokens are rest_cherrypy's: one store in `cachedir`, as Salt's are the master's.
    pub fn tornado_from_raw(
        raw: &RawConfig,
        master_tls: (PathBuf, PathBuf),
        cachedir: PathBuf,
    ) -> Result<Option<Config>, KeyError> {
        let c = common(raw)?;
        let Some(t) = &raw.rest_tornado else {
            return Ok(None);
        };
        let l = listening(
            Listen {
                key: "rest_tornado",
                socket_timeout: t.socket_timeout,
                max_connections: t.max_connections,
                max_connections_per_source: t.max_connections_per_source,
                trusted_proxies: t.trusted_proxies.as_deref(),
                disable_ssl: t.disable_ssl,
                ssl_crt: &t.ssl_crt,
                ssl_key: &t.ssl_key,
            },
            master_tls,
        )?;
        let port = t.port.ok_or_else(|| {
            bad(
                "rest_tornado",
                "port is required (the TCP port salt-api listens on, e.g. 8000)",
            )
        })?;
        Ok(Some(Config {
            flavour: Flavour::Tornado,
            websockets: t.websockets.unwrap_or(false),
            cors_origin: cors_origin(t.cors_origin.as_ref())?,
            addr: SocketAddr::new(t.address.unwrap_or(IpAddr::from([0, 0, 0, 0])), port),
            tls: l.tls,
            debug: t.debug.unwrap_or(false),
            root_prefix: String::new(),
            webhook_url: "/hook".to_owned(),
            webhook_disable_auth: t.webhook_disable_auth.unwrap_or(false),
            collect_stats: false,
            stats_disable_auth: false,
            enable_clients: c.enable_clients,
            external_auth: c.external_auth,
            token_expire: Duration::from_secs_f64(c.token_expire),
            token_dir: cachedir.join("tokens"),
            socket_timeout: l.socket_timeout,
            connections: l.connections,
            max_tokens_per_user: c.max_tokens_per_user,
            trusted_proxies: l.trusted_proxies,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(yaml: &str) -> Result<Option<Config>, KeyError> {
        #[derive(Deserialize)]
        struct F {
            rest_cherrypy: Option<RawRestConfig>,
            rest_tornado: Option<RawTornadoConfig>,
            netapi_enable_clients: Option<Vec<String>>,
            external_auth: Option<serde_json::Value>,
            token_expire: Option<f64>,
            #[serde(rename = "auth.pam.service")]
            pam_service: Option<String>,
            max_tokens_per_user: Option<u64>,
        }
        let f: F = serde_yaml_ng::from_str(yaml).map_err(|e| bad("yaml", e.to_string()))?;
        let raw = RawConfig {
            rest_cherrypy: f.rest_cherrypy,
            rest_tornado: f.rest_tornado,
            netapi_enable_clients: f.netapi_enable_clients,
            external_auth: f.external_auth,
            token_expire: f.token_expire,
            pam_service: f.pam_service,
            max_tokens_per_user: f.max_tokens_per_user,
        };
        let tls = || ("/pki/master.crt".into(), "/pki/master.key".into());
        let cherry = Config::from_raw(&raw, tls(), "/cache".into())?;
        let tornado = Config::tornado_from_raw(&raw, tls(), "/cache".into())?;
        Ok(cherry.or(tornado))
    }

    #[test]
    fn rest_tornado_reads_salts_options() {
        let c = load("rest_tornado: {port: 8001}").unwrap().unwrap();
        assert_eq!(c.flavour, Flavour::Tornado);
        assert_eq!(c.addr, "0.0.0.0:8001".parse().unwrap());
        assert!(!c.websockets);
        assert_eq!(c.cors_origin, None);
        assert!(matches!(c.tls, Tls::Master { .. }));
        let c = load(
            "rest_tornado: {port: 8001, address: 127.0.0.1, disable_ssl: true, websockets: true, \
             num_processes: 4, backlog: 64, webhook_disable_auth: true, debug: true, \
             cors_origin: [https://a.example, https://b.example]}",
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.addr, "127.0.0.1:8001".parse().unwrap());
        assert_eq!(c.tls, Tls::Off);
        assert!(c.websockets && c.webhook_disable_auth && c.debug);
        let cors = c.cors_origin.unwrap();
        assert_eq!(
            cors.allow(Some("https://b.example")).as_deref(),
            Some("https://b.example")
        );
        assert_eq!(cors.allow(Some("https://evil.example")), None);
        assert_eq!(cors.allow(None), None);
        let any = load("rest_tornado: {port: 1, cors_origin: '*'}")
            .unwrap()
            .unwrap()
            .cors_origin
            .unwrap();
        assert_eq!(any.allow(Some("https://x")).as_deref(), Some("*"));
        let (k, m) = load("rest_tornado: {address: 127.0.0.1}").unwrap_err();
        assert_eq!(
            (k.as_str(), m.contains("port is required")),
            ("rest_tornado", true)
        );
        let (k, m) = load("rest_tornado: {port: 1, cors_origin: 5}").unwrap_err();
        assert_eq!(k, "rest_tornado.cors_origin", "{m}");
        let (k, _) = load("rest_tornado: {port: 1, ssl_key: /k}").unwrap_err();
        assert_eq!(k, "rest_tornado");
        let (k, _) = load("rest_tornado: {port: 1, max_connections: 0}").unwrap_err();
        assert_eq!(k, "rest_tornado.max_connections");
        assert!(serde_yaml_ng::from_str::<RawTornadoConfig>("port: 1\nhost: x").is_err());
    }

    #[test]
    fn off_unless_rest_cherrypy_is_set() {
        assert!(load("token_expire: 60").unwrap().is_none());
    }

    #[test]
    fn defaults_and_the_masters_certificate() {
        let c = load("rest_cherrypy: {port: 8000}").unwrap().unwrap();
        assert_eq!(c.addr, "0.0.0.0:8000".parse().unwrap());
        assert_eq!(
            c.tls,
            Tls::Master {
                cert: "/pki/master.crt".into(),
                key: "/pki/master.key".into()
            }
        );
        assert_eq!(c.token_expire, Duration::from_secs(43200));
        assert_eq!(c.root_prefix, "");
        assert_eq!(c.webhook_url, "/hook");
        assert!(c.enable_clients.is_empty());
        assert_eq!(c.token_dir, PathBuf::from("/cache/tokens"));
        let c = load(
            "rest_cherrypy: {port: 8000, host: 127.0.0.1, disable_ssl: true, root_prefix: /api/}",
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.tls, Tls::Off);
        assert_eq!(c.root_prefix, "/api");
    }

    #[test]
    fn bad_values_name_the_key() {
        let check = |yaml: &str, key: &str, part: &str| {
            let (k, m) = load(yaml).unwrap_err();
            assert_eq!(k, key, "{yaml}: {m}");
            assert!(m.contains(part), "{yaml}: {m}");
        };
        check(
            "rest_cherrypy: {host: 127.0.0.1}",
            "rest_cherrypy",
            "port is required",
        );
        check(
            "rest_cherrypy: {port: 8000, ssl_crt: /a}",
            "rest_cherrypy",
            "ssl_key",
        );
        check(
            "rest_cherrypy: {port: 8000}\nnetapi_enable_clients: [local, lokal]",
            "netapi_enable_clients",
            "unknown client \"lokal\"",
        );
        check(
            "rest_cherrypy: {port: 8000}\ntoken_expire: -1",
            "token_expire",
            "-1",
        );
        check(
            "rest_cherrypy: {port: 8000, webhook_url: hook}",
            "rest_cherrypy.webhook_url",
            "must start with /",
        );
        check(
            "rest_cherrypy: {port: 8000}\nexternal_auth: {ldap: {alice: ['.*']}}",
            "external_auth",
            "ldap",
        );
        check(
            "rest_cherrypy: {port: 8000, trusted_proxies: [10.0.0.0/8, proxy]}",
            "rest_cherrypy.trusted_proxies",
            "\"proxy\" is not an address or CIDR block",
        );
        check(
            "rest_cherrypy: {port: 8000}\nmax_tokens_per_user: 0",
            "max_tokens_per_user",
            "0 is not a number of tokens",
        );
        let c = load("rest_cherrypy: {port: 8000, trusted_proxies: [10.0.0.0/8, '::1']}\nmax_tokens_per_user: 3")
            .unwrap()
            .unwrap();
        assert_eq!(c.trusted_proxies.len(), 2);
        assert_eq!(c.max_tokens_per_user, 3);
        assert!(serde_yaml_ng::from_str::<RawRestConfig>("port: 1\nthread_pool: 5").is_err());
    }
}
