//! The minion's config file (`DIR/minion`, YAML), with Salt's key names.

use std::path::{Path, PathBuf};
use std::time::Duration;

use saltq_transport::TransportKind;
use saltq_transport::config::{ConfigError, load_yaml, rooted};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The file as written: every key optional, unknown keys refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawConfig {
    /// Prefix for every path (Salt's `root_dir`).
    pub root_dir: Option<PathBuf>,
    /// Minion id (default: the host's FQDN).
    pub id: Option<String>,
    /// Master host name or address (default `salt`, as Salt).
    pub master: Option<String>,
    /// Master port (default 4506).
    pub master_port: Option<u16>,
    /// `quic` (default) or `h2`.
    pub transport: Option<String>,
    /// The minion's key and the pinned master CA.
    pub pki_dir: Option<PathBuf>,
    /// State: synced modules under `extmods/` (Salt's `cachedir`).
    pub cachedir: Option<PathBuf>,
    /// Directories of external execution modules (Salt's `module_dirs`).
    pub module_dirs: Option<Vec<PathBuf>>,
    /// CA file that vouches for the master; without it the master's CA is pinned on first use.
    pub ca_file: Option<PathBuf>,
    /// Expected fingerprint of the master's CA (Salt's `master_finger`).
    pub master_finger: Option<String>,
    /// Seconds between tries while the key is pending (Salt's `acceptance_wait_time`, default 10).
    pub acceptance_wait_time: Option<f64>,
    /// First reconnect delay in milliseconds (Salt's `recon_default`, default 1000).
    pub recon_default: Option<u64>,
    /// Largest reconnect delay in milliseconds (Salt's `recon_max`, default 10000).
    pub recon_max: Option<u64>,
    /// Randomize reconnect delays (Salt's `recon_randomize`, default true).
    pub recon_randomize: Option<bool>,
    /// Static grains that override computed ones (Salt's `grains`).
    pub grains: Option<Map<String, Value>>,
    /// Log level.
    pub log_level: Option<String>,
    /// Seconds of silence after which the master is considered gone (default 10).
    pub idle_timeout: Option<f64>,
    /// Seconds between keep-alive pings (default 3).
    pub keep_alive: Option<f64>,
    /// Largest message, in bytes (default 16 MiB); larger returns are truncated with a marker.
    pub max_message_size: Option<usize>,
    /// Returners for every job, after the master has the return (Salt's `return`).
    #[serde(rename = "return")]
    pub returners: Option<String>,
    /// Opt-in plain-HTTP port for /healthz (200 while subscribed, 503 otherwise).
    pub health_port: Option<u16>,
    /// Address of the health port (default 0.0.0.0).
    pub health_interface: Option<std::net::IpAddr>,
}

/// The validated config.
#[derive(Debug, Clone)]
pub struct MinionConfig {
    /// Where it was read from.
    pub file: PathBuf,
    /// Minion id.
    pub id: String,
    /// Master host.
    pub master: String,
    /// Master port.
    pub master_port: u16,
    /// Transport.
    pub transport: TransportKind,
    /// Key directory.
    pub pki_dir: PathBuf,
    /// State directory.
    pub cachedir: PathBuf,
    /// External module directories.
    pub module_dirs: Vec<PathBuf>,
    /// CA vouching for the master.
    pub ca_file: Option<PathBuf>,
    /// Expected master CA fingerprint.
    pub master_finger: Option<String>,
    /// Wait while pending.
    pub acceptance_wait_time: Duration,
    /// Reconnect backoff.
    pub recon_default: Duration,
    /// Reconnect backoff cap.
    pub recon_max: Duration,
    /// Jitter reconnects.
    pub recon_randomize: bool,
    /// Static grains.
    pub grains: Map<String, Value>,
    /// Log level.
    pub log_level: String,
    /// Transport limits.
    pub limits: saltq_transport::Limits,
    /// The opt-in health endpoint.
    pub health: Option<std::net::SocketAddr>,
    /// Returners for every job (Salt's `return`).
    pub returners: Vec<String>,
    /// Returner connections, built once from the returner option keys.
    pub returner_set: Option<saltq_returners::Returners>,
    /// The whole file as JSON, for `config.get` (Salt's `__opts__`).
    pub opts: Value,
}

/// Default config directory.
pub const DEFAULT_CONFIG_DIR: &str = "/etc/saltq";

impl MinionConfig {
    /// Reads and validates `DIR/minion`.
    pub fn load(dir: &Path, id_override: Option<String>) -> Result<MinionConfig, ConfigError> {
        let file = dir.join("minion");
        let (mut raw, returner_opts): (RawConfig, Map<String, Value>) =
            saltq_transport::config::load_yaml_split(&file, saltq_returners::is_returner_option)?;
        if id_override.is_some() {
            raw.id = id_override;
        }
        let opts: Value =
            load_yaml::<Option<Value>>(&file, false)?.unwrap_or(Value::Object(Map::new()));
        let mut cfg = Self::from_raw(raw, opts, file.clone())?;
        let mut ropts = returner_opts;
        ropts.insert("id".into(), Value::String(cfg.id.clone()));
        let set = saltq_returners::Returners::from_opts(&Value::Object(ropts)).map_err(|e| {
            ConfigError::Invalid {
                path: file.clone(),
                message: e.to_string(),
            }
        })?;
        cfg.returner_set = Some(set);
        // What execution modules read of the minion's setup (Salt's __opts__ keys).
        if let Value::Object(o) = &mut cfg.opts {
            o.insert(
                "grains_file".into(),
                Value::String(dir.join("grains").display().to_string()),
            );
            o.insert(
                "cachedir".into(),
                Value::String(cfg.cachedir.display().to_string()),
            );
            o.insert("module_dirs".into(), serde_json::json!(cfg.module_dirs));
        }
        Ok(cfg)
    }

    fn from_raw(
        raw: RawConfig,
        mut opts: Value,
        file: PathBuf,
    ) -> Result<MinionConfig, ConfigError> {
        let bad = |key: &str, message: String| ConfigError::Value {
            path: file.clone(),
            key: key.into(),
            message,
        };
        let root = raw.root_dir.unwrap_or_else(|| PathBuf::from("/"));
        if !root.is_absolute() {
            return Err(bad(
                "root_dir",
                format!("{} is not an absolute path", root.display()),
            ));
        }
        let id = match raw.id {
            Some(id) if id.trim().is_empty() || id.contains('/') => {
                return Err(bad("id", format!("{id:?} is not a valid minion id")));
            }
            Some(id) => id,
            None => fqdn(),
        };
        let transport = raw
            .transport
            .as_deref()
            .unwrap_or("quic")
            .parse()
            .map_err(|e: String| bad("transport", e))?;
        let secs = |key: &str, v: Option<f64>, default: f64| -> Result<Duration, ConfigError> {
            let v = v.unwrap_or(default);
            if !(v.is_finite() && v > 0.0) {
                return Err(bad(key, format!("{v} is not a positive number of seconds")));
            }
            Ok(Duration::from_secs_f64(v))
        };
        let log_level = raw.log_level.unwrap_or_else(|| "warning".into());
        if let Value::Object(m) = &mut opts {
            m.insert("id".into(), Value::String(id.clone()));
        }
        Ok(MinionConfig {
            id,
            master: raw.master.unwrap_or_else(|| "salt".into()),
            master_port: raw.master_port.unwrap_or(4506),
            transport,
            pki_dir: rooted(
                &root,
                &raw.pki_dir
                    .unwrap_or_else(|| "/etc/saltq/pki/minion".into()),
            ),
            cachedir: rooted(
                &root,
                &raw.cachedir
                    .clone()
                    .unwrap_or_else(|| "/var/cache/saltq/minion".into()),
            ),
            module_dirs: raw.module_dirs.clone().unwrap_or_default(),
            ca_file: raw.ca_file.map(|p| rooted(&root, &p)),
            master_finger: raw.master_finger,
            acceptance_wait_time: secs("acceptance_wait_time", raw.acceptance_wait_time, 10.0)?,
            recon_default: Duration::from_millis(raw.recon_default.unwrap_or(1000)),
            recon_max: Duration::from_millis(raw.recon_max.unwrap_or(10000)),
            recon_randomize: raw.recon_randomize.unwrap_or(true),
            grains: raw.grains.unwrap_or_default(),
            log_level,
            limits: saltq_transport::Limits {
                max_message_size: raw.max_message_size.unwrap_or(16 * 1024 * 1024),
                idle_timeout: secs("idle_timeout", raw.idle_timeout, 10.0)?,
                keep_alive: secs("keep_alive", raw.keep_alive, 3.0)?,
                ..Default::default()
            },
            returners: match raw.returners.as_deref() {
                Some(list) => saltq_returners::parse_return_list(list)
                    .map_err(|e| bad("return", e.to_string()))?,
                None => vec![],
            },
            returner_set: None,
            health: raw.health_port.map(|p| {
                std::net::SocketAddr::new(
                    raw.health_interface
                        .unwrap_or(std::net::IpAddr::from([0, 0, 0, 0])),
                    p,
                )
            }),
            opts,
            file,
        })
    }
}

impl MinionConfig {
    /// This minion's grains: computed ones, then the grains file, then the config's `grains`.
    pub fn compute_grains(&self) -> Value {
        let file = self
            .opts
            .get("grains_file")
            .and_then(Value::as_str)
            .map(std::path::PathBuf::from);
        let statics = saltq_exec::static_grains(file.as_deref(), &self.grains);
        saltq_exec::compute_grains(&self.id, Some(&statics))
    }
}

/// The host's fully qualified name, as Salt's default minion id.
pub fn fqdn() -> String {
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    if host.contains('.') {
        return host;
    }
    // Look the name up the way getfqdn does: the canonical name from /etc/hosts, if any.
    if let Ok(hosts) = std::fs::read_to_string("/etc/hosts") {
        for line in hosts.lines() {
            let words: Vec<&str> = line
                .split('#')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            if words.len() > 2 && words[2..].contains(&host.as_str()) && words[1].contains('.') {
                return words[1].to_owned();
            }
            if words.len() > 1 && words[1].starts_with(&format!("{host}.")) {
                return words[1].to_owned();
            }
        }
    }
    host
}
