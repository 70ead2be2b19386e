//! The minion's config file (`DIR/minion`, YAML), with Salt's key names.

use std::path::{Path, PathBuf};
use std::time::Duration;

use saltq_transport::TransportKind;
use saltq_transport::config::{ConfigError, rooted};
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
    /// The master: `HOST` or `HOST:PORT` (IPv6 as `[::1]:4506`), or a list of them: with
    /// `master_type: str` the minion connects to all at once (Salt's multi-master), with
    /// `failover` to one at a time (default `salt`, as Salt).
    pub master: Option<Value>,
    /// Port of a master named without one (default 4506).
    pub master_port: Option<u16>,
    /// `str` (default: every master listed, at once) or `failover` (a list, used one at a
    /// time, in order).
    pub master_type: Option<String>,
    /// Shuffle the master list once at start (Salt's `random_master`, default false).
    pub random_master: Option<bool>,
    /// Salt's return to the first master once it is back: not supported, only false.
    pub master_failback: Option<bool>,
    /// Seconds within which a lost master is noticed (Salt's `master_alive_interval`, default
    /// 0: off). saltq has no separate alive check: QUIC's keep-alive pings and idle timeout
    /// notice a master that went away, so this lowers `idle_timeout` to at most this many
    /// seconds and `keep_alive` to at most a third of that. It never raises them (QUIC keeps
    /// the smaller idle timeout of the two ends). With failover the next master is dialed.
    pub master_alive_interval: Option<f64>,
    /// Seconds to wait before dialing again when the master's name does not resolve (Salt's
    /// `retry_dns`, default 30; 0: the reconnect backoff). Unused with failover, which moves on.
    pub retry_dns: Option<f64>,
    /// Upper bound in seconds of the random wait before dialing again after the master turned
    /// the connection away as busy (Salt's `random_reauth_delay`, default 10: Salt's minions
    /// sleep a random time up to it before re-authenticating after a restart, so a fleet does
    /// not storm its master). 0: the reconnect backoff.
    pub random_reauth_delay: Option<f64>,
    /// `quic` (default) or `h2`.
    pub transport: Option<String>,
    /// The minion's key and the pinned master CA.
    pub pki_dir: Option<PathBuf>,
    /// State: synced modules under `extmods/` (Salt's `cachedir`).
    pub cachedir: Option<PathBuf>,
    /// Directories of external execution modules (Salt's `module_dirs`).
    pub module_dirs: Option<Vec<PathBuf>>,
    /// The minion's own fileserver for `saltq-minion call --local` (Salt's `file_roots` with
    /// `file_client: local`): `{saltenv: [dir, ...]}`.
    pub file_roots: Option<std::collections::BTreeMap<String, Vec<PathBuf>>>,
    /// `local` (masterless: pillar and `salt://` from this minion's own `file_roots` and
    /// `pillar_roots`, as `salt-call --local`) or `remote` (default: the master's).
    pub file_client: Option<String>,
    /// The minion's own pillar tree for masterless runs (Salt's `pillar_roots`).
    pub pillar_roots: Option<std::collections::BTreeMap<String, Vec<PathBuf>>>,
    /// Pillar given in the config (Salt's `pillar`): the base the compiled pillar merges over.
    pub pillar: Option<Map<String, Value>>,
    /// External pillar sources for masterless runs (Salt's list form).
    pub ext_pillar: Option<Value>,
    /// The sources a masterless `pillar.ext` may name (Salt's, default libvirt, virtkey).
    pub on_demand_ext_pillar: Option<Vec<String>>,
    /// Where the `gpg` renderer's keys are (Salt's, default `<config dir>/gpgkeys`).
    pub gpg_keydir: Option<PathBuf>,
    /// Digest used to compare cached files (Salt's `hash_type`, default sha256).
    pub hash_type: Option<String>,
    /// CA file that vouches for the master; without it the master's CA is pinned on first use.
    pub ca_file: Option<PathBuf>,
    /// Expected fingerprint of the master's CA (Salt's `master_finger`): one for every master,
    /// or, with several masters at once, a list with one per master (independent masters have
    /// different CAs).
    pub master_finger: Option<Value>,
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
    /// Implemented (#27, saltq_transport::salt_log): Salt's `log_file`, a path or syslog at
    /// `file:///dev/log`, `udp://host[:port]`, `tcp://host[:port]` (`/LOG_FACILITY` after);
    /// unset, saltq logs to stderr only.
    pub log_file: Option<String>,
    /// Implemented (#27): Salt's `log_level_logfile` (default: `log_level`).
    pub log_level_logfile: Option<String>,
    /// Implemented (#27): Salt's `log_fmt_console`; set, stderr is written in this format.
    pub log_fmt_console: Option<String>,
    /// Implemented (#27): Salt's `log_fmt_logfile` (default Salt's).
    pub log_fmt_logfile: Option<String>,
    /// Implemented (#27): Salt's `log_datefmt` (the console's `%(asctime)s`).
    pub log_datefmt: Option<String>,
    /// Implemented (#27): Salt's `log_datefmt_logfile`.
    pub log_datefmt_logfile: Option<String>,
    /// Implemented (#27): Salt's `log_granular_levels`, logger (`saltq_minion.daemon`) to level.
    pub log_granular_levels: Option<std::collections::BTreeMap<String, String>>,
    /// Seconds of silence after which the master is considered gone (default 10).
    pub idle_timeout: Option<f64>,
    /// Seconds between keep-alive pings (default 1). A restarted master learns of a minion
    /// only from its next packet, which it answers with a stateless reset: this interval is
    /// how long a minion may take to notice the restart (issue 15, BENCHMARKS.md).
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
    /// A state run made once, when the minion first connects after starting (Salt's
    /// `startup_states`): `highstate`, `sls` (the SLS of `sls_list`) or `top` (the top file
    /// `top_file`); empty or absent for none.
    pub startup_states: Option<String>,
    /// The SLS names `startup_states: sls` applies: a list, or one name.
    pub sls_list: Option<Value>,
    /// The Salt Mine's functions (Salt's `mine_functions`): `{function or alias: [args] or
    /// {kwargs}}` (or a list of names); read by `mine.update` from the options.
    pub mine_functions: Option<Value>,
    /// Send the mine at start and every `mine_interval` (Salt's `mine_enabled`, default true);
    /// read from the options.
    pub mine_enabled: Option<bool>,
    /// Minutes between two `mine.update` runs (Salt's `mine_interval`, default 60); read from
    /// the options.
    pub mine_interval: Option<u64>,
    /// Return the scheduled `mine.update` jobs to the master (Salt's `mine_return_job`,
    /// default false); read from the options.
    pub mine_return_job: Option<bool>,
    /// The top file `startup_states: top` applies (e.g. `top_startup.sls`).
    pub top_file: Option<String>,
    /// Scheduled jobs (Salt's `schedule`): `{name: {function, seconds, ...}}`; read by the
    /// scheduler (`schedule.rs`) from the options, with `minion.d/_schedule.conf` over it.
    pub schedule: Option<Value>,
    /// Returners every scheduled job's return also goes to (Salt's `schedule_returner`, a
    /// name or a list, merged with the pillar's as `config.merge`); read by the scheduler.
    pub schedule_returner: Option<Value>,
    /// Start the scheduler before the first connection to a master (Salt's
    /// `scheduler_before_connect`, default false: it starts at the first connection); read
    /// by the scheduler from the options.
    pub scheduler_before_connect: Option<bool>,
    /// The hosts file the `hosts` module and `host` states edit (Salt's `hosts.file`,
    /// default `/etc/hosts`); read by the execution module from the options.
    #[serde(rename = "hosts.file")]
    pub hosts_file: Option<PathBuf>,
    /// Beacons the minion polls (Salt's `beacons`): `{name: [config items]}`; read by the
    /// beacon driver (`beacon_driver.rs`) from the options, with `minion.d/beacons.conf` over it.
    pub beacons: Option<Map<String, Value>>,
    /// Poll the beacons before the first connection to the master too (Salt's
    /// `beacons_before_connect`, default false); read from the options.
    pub beacons_before_connect: Option<bool>,
    /// Seconds between two polls of the beacons (Salt's `loop_interval`, default 1); read
    /// from the options.
    pub loop_interval: Option<f64>,
    /// Implemented (#27): Salt's `minion_id_caching` (default true): a generated id (no `id`
    /// set) is written to `<root_dir>/etc/saltq/minion_id` and read back at the next start,
    /// so a renamed host keeps its minion id.
    pub minion_id_caching: Option<bool>,
    /// Implemented (#27): Salt's `minion_id_lowercase`: a generated id is lowercased.
    pub minion_id_lowercase: Option<bool>,
    /// Implemented (#27): Salt's `ipv6`: which address family of the master's name is
    /// dialled (`true` IPv6, IPv4 when it has none; `false` IPv4 only; unset the resolver's
    /// first).
    pub ipv6: Option<bool>,
    /// Implemented (#27): Salt's `minion_id_remove_domain`: `true` cuts any domain off a
    /// generated id, a domain name cuts that domain (case-insensitively).
    pub minion_id_remove_domain: Option<Value>,
    /// Implemented (#27): Salt's `append_domain`: appended to the id (set, cached or generated,
    /// unless generated as an IPv4 address) unless it ends with it already or with `.`.
    pub append_domain: Option<String>,
}

/// The state run of `startup_states`: the function and its arguments, as Salt's
/// `Minion._state_run` builds them.
#[derive(Debug, Clone, PartialEq)]
pub struct StartupRun {
    /// `state.highstate`, `state.sls` or `state.top`.
    pub fun: &'static str,
    /// Its arguments: none, `[sls_list]` or `[top_file]`.
    pub arg: Vec<Value>,
}

/// Decides the startup run from `startup_states`, `sls_list` and `top_file`; the error names
/// the key that is wrong and why.
pub fn startup_run(
    startup_states: Option<&str>,
    sls_list: Option<&Value>,
    top_file: Option<&str>,
) -> Result<Option<StartupRun>, (&'static str, String)> {
    match startup_states.map(str::trim) {
        None | Some("") => Ok(None),
        Some("highstate") => Ok(Some(StartupRun {
            fun: "state.highstate",
            arg: vec![],
        })),
        Some("sls") => {
            let list = match sls_list {
                Some(Value::Array(items)) if !items.is_empty() => {
                    if let Some(bad) = items.iter().find(|i| !i.is_string()) {
                        return Err(("sls_list", format!("{bad} is not an SLS name")));
                    }
                    Value::Array(items.clone())
                }
                Some(Value::String(one)) if !one.trim().is_empty() => Value::String(one.clone()),
                _ => {
                    return Err((
                        "sls_list",
                        "startup_states: sls needs the SLS names to apply in sls_list".into(),
                    ));
                }
            };
            Ok(Some(StartupRun {
                fun: "state.sls",
                arg: vec![list],
            }))
        }
        Some("top") => match top_file.map(str::trim) {
            Some(top) if !top.is_empty() => Ok(Some(StartupRun {
                fun: "state.top",
                arg: vec![Value::String(top.to_owned())],
            })),
            _ => Err((
                "top_file",
                "startup_states: top needs the top file to apply in top_file".into(),
            )),
        },
        Some(other) => Err((
            "startup_states",
            format!("{other:?} is not a startup run: expected highstate, sls or top"),
        )),
    }
}

/// The validated config.
#[derive(Debug, Clone)]
pub struct MinionConfig {
    /// Where it was read from.
    pub file: PathBuf,
    /// Minion id.
    pub id: String,
    /// The masters, in the order written; never empty, no master twice. Several with
    /// `master_type: str` are linked all at once (`multi.rs`), with failover one at a time.
    pub masters: Vec<MasterAddr>,
    /// The port of a master named without one (`master_port`), for `swarm --master`.
    pub master_port: u16,
    /// How the masters are used.
    pub master_type: MasterType,
    /// Shuffle the masters once at start, so a fleet spreads over a cluster's replicas.
    pub random_master: bool,
    /// Wait this long after a name that does not resolve (one master only; failover moves on).
    pub retry_dns: Option<Duration>,
    /// After a busy refusal, dial again after a random wait up to this (zero: the backoff).
    pub random_reauth_delay: Duration,
    /// Transport.
    pub transport: TransportKind,
    /// Address family of the masters' names (Salt's `ipv6`).
    pub ipv6: Option<bool>,
    /// Key directory.
    pub pki_dir: PathBuf,
    /// State directory.
    pub cachedir: PathBuf,
    /// External module directories.
    pub module_dirs: Vec<PathBuf>,
    /// The local fileserver (`file_roots`), for `call --local`.
    pub file_roots: saltq_fileserver::Roots,
    /// `file_client: local`: `call` runs masterless, as with `--local`.
    pub file_client_local: bool,
    /// The digest of `--local` file comparisons (`hash_type`).
    pub hash_type: String,
    /// CA vouching for the master.
    pub ca_file: Option<PathBuf>,
    /// Expected master CA fingerprint.
    pub master_finger: Option<String>,
    /// One expected CA fingerprint per master (a `master_finger` list), else empty.
    pub master_finger_each: Vec<String>,
    /// The file under `pki_dir` the master's CA is pinned in (`master_ca.crt`; with several
    /// masters at once, one file per master: `multi.rs`).
    pub pinned_ca_name: String,
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
    /// Salt's logging keys (`log_file`, `log_fmt_*`, ...), checked.
    pub log: saltq_transport::salt_log::LogOptions,
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
    /// The state run made once after the first connection (`startup_states`).
    pub startup: Option<StartupRun>,
    /// The files read and what saltq does with each key (logged at start,
    /// `--check-config`).
    pub salt: saltq_states::saltconf::SaltConfig,
}

/// The most seconds a duration in the config may be (about 31 years): longer ones would not
/// fit the clocks and timers they set.
const MAX_SECS: f64 = 1e9;

/// Default config directory.
pub const DEFAULT_CONFIG_DIR: &str = "/etc/saltq";

/// `DIR/minion`, `minion.d/*.conf` (with `_schedule.conf` and `beacons.conf`) and the
/// `include`s merged as Salt 3007.8 merges them (`saltq_states::saltconf::daemon::load`): the
/// typed keys, the returner options apart, and the report. A key neither Salt nor saltq knows
/// is refused.
fn load_salt(
    dir: &Path,
) -> Result<
    (
        RawConfig,
        Map<String, Value>,
        saltq_states::saltconf::SaltConfig,
    ),
    ConfigError,
> {
    saltq_states::saltconf::daemon::load(
        saltq_states::saltconf::Daemon::Minion,
        dir,
        Path::new(DEFAULT_CONFIG_DIR),
        &saltq_returners::is_returner_option,
    )
}

/// `saltq-minion --check-config`: every key of `dir`'s config with what saltq does with it,
/// then whether the minion would start. The exit code: 0 when it would, else the load's.
pub fn check(dir: &Path, id_override: Option<String>) -> i32 {
    saltq_states::saltconf::daemon::check::<RawConfig>(
        saltq_states::saltconf::Daemon::Minion,
        dir,
        Path::new(DEFAULT_CONFIG_DIR),
        &saltq_returners::is_returner_option,
        || MinionConfig::load(dir, id_override).map(drop),
    )
}

/// A master to dial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterAddr {
    /// Host name or address (an IPv6 address without brackets).
    pub host: String,
    /// Port.
    pub port: u16,
}

impl std::fmt::Display for MasterAddr {
    /// `host:port`, with an IPv6 address in brackets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl MasterAddr {
    /// Parses Salt's `HOST`, `HOST:PORT`, `[IPV6]:PORT` or a bare IPv6 address; a master named
    /// without a port gets `default_port` (as Salt's `parse_host_port`).
    pub fn parse(s: &str, default_port: u16) -> Result<MasterAddr, String> {
        let s = s.trim();
        let port = |p: &str| -> Result<u16, String> {
            match p.parse::<u16>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!("{s:?}: port {p:?} is not a number from 1 to 65535")),
            }
        };
        let v6 = |h: &str| -> Result<String, String> {
            h.parse::<std::net::Ipv6Addr>()
                .map(|a| a.to_string())
                .map_err(|_| format!("{s:?}: {h:?} is not an IPv6 address"))
        };
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (h, after) = rest
                .split_once(']')
                .ok_or_else(|| format!("{s:?}: no closing bracket"))?;
            let p = match after {
                "" => default_port,
                _ => match after.strip_prefix(':') {
                    Some(p) => port(p)?,
                    None => return Err(format!("{s:?}: expected :PORT after the bracket")),
                },
            };
            (v6(h)?, p)
        } else {
            match s.matches(':').count() {
                0 => (s.to_owned(), default_port),
                1 => {
                    let (h, p) = s.split_once(':').unwrap_or((s, ""));
                    (h.to_owned(), port(p)?)
                }
                // Several colons and no brackets: an IPv6 address without a port.
                _ => (v6(s)?, default_port),
            }
        };
        if host.is_empty() || host.contains(|c: char| c.is_whitespace() || "/[]@".contains(c)) {
            return Err(format!("{s:?} is not a host name or address"));
        }
        Ok(MasterAddr { host, port })
    }
}

/// How the minion uses its masters (Salt's `master_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MasterType {
    /// One master (Salt's default, `str`).
    Str,
    /// A list, one at a time: the next when the one in use is unreachable or lost.
    Failover,
}

/// Validates `master` and `master_type` (and `master_failback`) into the list to dial.
fn masters(
    raw_master: Option<&Value>,
    master_type: Option<&str>,
    master_failback: Option<bool>,
    default_port: u16,
) -> Result<(Vec<MasterAddr>, MasterType), (&'static str, String)> {
    let kind = match master_type.unwrap_or("str") {
        "str" => MasterType::Str,
        "failover" => MasterType::Failover,
        "func" => {
            return Err((
                "master_type",
                "func (a module function naming the master) is not supported by saltq: \
                 name the masters in master, with master_type: failover for several"
                    .into(),
            ));
        }
        "disable" => {
            return Err((
                "master_type",
                "disable (no master) is not supported by the daemon: \
                 run functions without a master with saltq-minion call --local"
                    .into(),
            ));
        }
        "distributed" => {
            return Err((
                "master_type",
                "distributed is not supported by saltq: use master_type: failover \
                 with random_master: true to spread minions over a cluster's replicas"
                    .into(),
            ));
        }
        other => {
            return Err((
                "master_type",
                format!("{other:?} is not a master type: expected str or failover"),
            ));
        }
    };
    if master_failback == Some(true) {
        return Err((
            "master_failback",
            "not supported: a failover minion stays on the master it reached until that \
             master is lost (a cluster's replicas are one master; there is nothing to fail \
             back to); set it to false or remove it"
                .into(),
        ));
    }
    let names: Vec<&str> = match raw_master {
        None => vec!["salt"],
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(list)) => list
            .iter()
            .map(|v| {
                v.as_str().ok_or_else(|| {
                    (
                        "master",
                        format!("{v} is not a host name: expected HOST or HOST:PORT"),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err((
                "master",
                format!("{other} is not a master: expected HOST, HOST:PORT or a list of them"),
            ));
        }
    };
    if names.is_empty() {
        return Err(("master", "the list of masters is empty".into()));
    }
    let list = names
        .iter()
        .map(|n| MasterAddr::parse(n, default_port))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ("master", e))?;
    if let Some((i, m)) = list
        .iter()
        .enumerate()
        .find(|(i, m)| list[..*i].contains(m))
    {
        return Err((
            "master",
            format!(
                "{m} is listed twice (as master {} and {})",
                list[..i].iter().position(|x| x == m).unwrap_or(0) + 1,
                i + 1
            ),
        ));
    }
    Ok((list, kind))
}

/// Validates `master_finger`: one fingerprint for every master (Salt's, whose masters share a
/// key), or a list with one per master when several are linked at once.
fn master_fingers(
    raw: Option<&Value>,
    masters: usize,
    kind: MasterType,
) -> Result<(Option<String>, Vec<String>), String> {
    match raw {
        None | Some(Value::Null) => Ok((None, vec![])),
        // Salt's default is `''`: no fingerprint to check.
        Some(Value::String(s)) if s.is_empty() => Ok((None, vec![])),
        Some(Value::String(s)) => Ok((Some(s.clone()), vec![])),
        Some(Value::Array(list)) if kind == MasterType::Str && masters > 1 => {
            let each = list
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("{v} is not a fingerprint: expected a string"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            if each.len() != masters {
                return Err(format!(
                    "lists {} fingerprints for {masters} masters: give one per master, in the \
                     order of master",
                    each.len()
                ));
            }
            Ok((None, each))
        }
        Some(Value::Array(_)) => Err(
            "a list (one fingerprint per master) needs several masters with master_type: str; \
             give one fingerprint"
                .into(),
        ),
        Some(other) => Err(format!(
            "{other} is not a fingerprint: expected a string, or a list of one per master"
        )),
    }
}

impl MinionConfig {
    /// Reads and validates `DIR/minion`.
    pub fn load(dir: &Path, id_override: Option<String>) -> Result<MinionConfig, ConfigError> {
        let (mut raw, returner_opts, salt) = load_salt(dir)?;
        let file = salt.loaded.file.clone();
        // Salt's config directory is the main file's (which the environment may name).
        let dir = file.parent().unwrap_or(dir);
        if id_override.is_some() {
            raw.id = id_override;
        }
        // `__opts__`: every key of every file read, merged.
        let opts = Value::Object(salt.loaded.opts.clone());
        let mut cfg = Self::from_raw(raw, opts, file.clone())
            .map_err(|e| saltq_states::saltconf::daemon::placed(&salt, e))?;
        cfg.salt = salt;
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
            // The gpg renderer's keys: Salt's default is beside the config file.
            o.insert(
                "config_dir".into(),
                Value::String(dir.display().to_string()),
            );
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
        if let Some(m) = raw
            .mine_functions
            .as_ref()
            .filter(|m| !(m.is_object() || m.is_array()))
        {
            return Err(bad(
                "mine_functions",
                format!("{m} is not a dict (or list) of mine functions"),
            ));
        }
        if let Some(s) = raw
            .schedule
            .as_ref()
            .filter(|s| !(s.is_object() || s.is_null()))
        {
            return Err(bad(
                "schedule",
                format!("{s} is not a dict of scheduled jobs"),
            ));
        }
        let file_client_local = match raw.file_client.as_deref() {
            None | Some("remote") => false,
            Some("local") => true,
            Some(other) => {
                return Err(bad(
                    "file_client",
                    format!("{other:?} is not local or remote"),
                ));
            }
        };
        if let Some(e) = &raw.ext_pillar {
            saltq_states::pillar::ext::from_config(e, &opts, &[])
                .map_err(|m| bad("ext_pillar", m))?;
        }
        let root = raw.root_dir.clone().unwrap_or_else(|| PathBuf::from("/"));
        if !root.is_absolute() {
            return Err(bad(
                "root_dir",
                format!("{} is not an absolute path", root.display()),
            ));
        }
        let id_keys = IdKeys::from_raw(&raw).map_err(|(k, m)| bad(k, m))?;
        let id = minion_id(
            raw.id.clone(),
            &id_keys,
            &rooted(
                &root,
                Path::new(DEFAULT_CONFIG_DIR).join("minion_id").as_path(),
            ),
            fqdn,
        );
        if id.trim().is_empty() || id.contains('/') {
            return Err(bad("id", format!("{id:?} is not a valid minion id")));
        }
        let transport = raw
            .transport
            .as_deref()
            .unwrap_or("quic")
            .parse()
            .map_err(|e: String| bad("transport", e))?;
        let secs = |key: &str, v: Option<f64>, default: f64| -> Result<Duration, ConfigError> {
            let v = v.unwrap_or(default);
            if v > 0.0 && v <= MAX_SECS {
                Ok(Duration::from_secs_f64(v))
            } else {
                Err(bad(
                    key,
                    format!("{v} is not a positive number of seconds (at most {MAX_SECS})"),
                ))
            }
        };
        let master_port = raw.master_port.unwrap_or(4506);
        let (masters, master_type) = masters(
            raw.master.as_ref(),
            raw.master_type.as_deref(),
            raw.master_failback,
            master_port,
        )
        .map_err(|(key, message)| bad(key, message))?;
        let (finger_one, finger_each) =
            master_fingers(raw.master_finger.as_ref(), masters.len(), master_type)
                .map_err(|m| bad("master_finger", m))?;
        let non_negative = |key: &str, v: Option<f64>, default: f64| {
            let v = v.unwrap_or(default);
            if (0.0..=MAX_SECS).contains(&v) {
                Ok(Duration::from_secs_f64(v))
            } else {
                Err(bad(
                    key,
                    format!("{v} is not a number of seconds (0 to {MAX_SECS})"),
                ))
            }
        };
        let retry_dns = non_negative("retry_dns", raw.retry_dns, 30.0)?;
        // As Salt, which sets retry_dns to 0 with failover: an unresolved name moves on.
        let retry_dns =
            (!retry_dns.is_zero() && master_type == MasterType::Str).then_some(retry_dns);
        let mut idle_timeout = secs("idle_timeout", raw.idle_timeout, 10.0)?;
        let mut keep_alive = secs("keep_alive", raw.keep_alive, 1.0)?;
        let alive = non_negative("master_alive_interval", raw.master_alive_interval, 0.0)?;
        if !alive.is_zero() {
            // The keep-alive pings and idle timeout are saltq's alive check: a lost master is
            // noticed within `alive`, and a working one is pinged well within that.
            idle_timeout = idle_timeout.min(alive);
            keep_alive = keep_alive.min(idle_timeout / 3);
        }
        let log_level = raw.log_level.unwrap_or_else(|| "warning".into());
        let log = saltq_transport::salt_log::LogOptions::from_raw(
            saltq_transport::salt_log::RawLogKeys {
                log_file: raw.log_file.clone(),
                log_level_logfile: raw.log_level_logfile.clone(),
                log_fmt_console: raw.log_fmt_console.clone(),
                log_fmt_logfile: raw.log_fmt_logfile.clone(),
                log_datefmt: raw.log_datefmt.clone(),
                log_datefmt_logfile: raw.log_datefmt_logfile.clone(),
                log_granular_levels: raw.log_granular_levels.clone(),
            },
            &root,
        )
        .map_err(|(k, m)| bad(k, m))?;
        let hash_type = raw
            .hash_type
            .clone()
            .unwrap_or_else(|| saltq_fileserver::DEFAULT_HASH_TYPE.into());
        saltq_fileserver::Hasher::new(&hash_type).map_err(|e| bad("hash_type", e.to_string()))?;
        if let Value::Object(m) = &mut opts {
            m.insert("id".into(), Value::String(id.clone()));
        }
        let startup = startup_run(
            raw.startup_states.as_deref(),
            raw.sls_list.as_ref(),
            raw.top_file.as_deref(),
        )
        .map_err(|(key, message)| bad(key, message))?;
        Ok(MinionConfig {
            ipv6: raw.ipv6,
            startup,
            id,
            masters,
            master_port,
            master_type,
            random_master: raw.random_master.unwrap_or(false),
            retry_dns,
            random_reauth_delay: non_negative(
                "random_reauth_delay",
                raw.random_reauth_delay,
                10.0,
            )?,
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
            file_roots: saltq_fileserver::Roots::new(raw.file_roots.clone().unwrap_or_default()),
            file_client_local,
            hash_type,
            ca_file: raw.ca_file.map(|p| rooted(&root, &p)),
            master_finger: finger_one,
            master_finger_each: finger_each,
            pinned_ca_name: crate::identity::PINNED_CA_FILE.into(),
            acceptance_wait_time: secs("acceptance_wait_time", raw.acceptance_wait_time, 10.0)?,
            recon_default: Duration::from_millis(raw.recon_default.unwrap_or(1000)),
            recon_max: Duration::from_millis(raw.recon_max.unwrap_or(10000)),
            recon_randomize: raw.recon_randomize.unwrap_or(true),
            grains: raw.grains.unwrap_or_default(),
            log_level,
            log,
            limits: saltq_transport::Limits {
                max_message_size: raw.max_message_size.unwrap_or(16 * 1024 * 1024),
                idle_timeout,
                keep_alive,
                ..Default::default()
            },
            returners: match raw.returners.as_deref() {
                Some(list) => saltq_returners::parse_return_list(list)
                    .map_err(|e| bad("return", e.to_string()))?,
                None => vec![],
            },
            returner_set: None,
            salt: Default::default(),
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

/// Salt's minion id keys (`get_id`, `_append_domain` in `salt/config/__init__.py`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IdKeys {
    /// `minion_id_caching` (default true).
    pub caching: bool,
    /// `minion_id_lowercase`.
    pub lowercase: bool,
    /// `minion_id_remove_domain`: `Some("")` for `true` (any domain), a domain, or `None`.
    pub remove_domain: Option<String>,
    /// `append_domain`.
    pub append_domain: Option<String>,
}

impl IdKeys {
    /// The keys as written; a wrong type is the key and what was expected.
    fn from_raw(raw: &RawConfig) -> Result<IdKeys, (&'static str, String)> {
        let remove_domain = match &raw.minion_id_remove_domain {
            None | Some(Value::Null) | Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some(String::new()),
            Some(Value::String(d)) if d.is_empty() => None,
            Some(Value::String(d)) => Some(d.clone()),
            Some(other) => {
                return Err((
                    "minion_id_remove_domain",
                    format!("{other} is not a domain name or a bool (Salt's str or bool)"),
                ));
            }
        };
        Ok(IdKeys {
            caching: raw.minion_id_caching.unwrap_or(true),
            lowercase: raw.minion_id_lowercase.unwrap_or(false),
            remove_domain,
            append_domain: raw.append_domain.clone().filter(|d| !d.is_empty()),
        })
    }
}

/// The minion id as Salt 3007.8's minion decides it: `id` when set; else the cached one
/// (`cache`, with `minion_id_caching`) unless empty or `localhost`; else `generate()`d,
/// lowercased and its domain removed as the keys say, and cached. Then `append_domain`,
/// except to a generated IPv4 address.
pub fn minion_id(
    id: Option<String>,
    keys: &IdKeys,
    cache: &Path,
    generate: impl FnOnce() -> String,
) -> String {
    let (id, generated_ip) = match id.filter(|i| !i.is_empty()) {
        Some(id) => (id, false),
        None => {
            let cached = keys
                .caching
                .then(|| std::fs::read_to_string(cache).ok())
                .flatten()
                .and_then(|t| {
                    t.lines()
                        .next()
                        .map(|l| l.trim().trim_start_matches('\u{feff}').to_owned())
                })
                .filter(|n| !n.is_empty() && n != "localhost");
            match cached {
                Some(name) => {
                    tracing::debug!(
                        "using the cached minion id from {}: {name}",
                        cache.display()
                    );
                    (name, false)
                }
                None => {
                    let mut new = generate();
                    if keys.lowercase {
                        new = new.to_lowercase();
                    }
                    match keys.remove_domain.as_deref() {
                        Some("") => {
                            if let Some((host, _)) = new.split_once('.') {
                                new = host.to_owned();
                            }
                        }
                        Some(d) => {
                            let cut = new.len().saturating_sub(d.len() + 1);
                            if new.len() > d.len()
                                && new.is_char_boundary(cut)
                                && new[cut..].eq_ignore_ascii_case(&format!(".{d}"))
                            {
                                new.truncate(cut);
                            }
                        }
                        None => {}
                    }
                    if keys.caching {
                        let written = cache
                            .parent()
                            .map_or(Ok(()), std::fs::create_dir_all)
                            .and_then(|()| std::fs::write(cache, &new));
                        if let Err(e) = written {
                            tracing::error!(
                                "could not cache the minion id in {}: {e}",
                                cache.display()
                            );
                        }
                    }
                    let ip = new.parse::<std::net::Ipv4Addr>().is_ok();
                    (new, ip)
                }
            }
        }
    };
    match &keys.append_domain {
        Some(d) if !generated_ip && !id.ends_with(d.as_str()) && !id.ends_with('.') => {
            format!("{id}.{d}")
        }
        _ => id,
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

#[cfg(test)]
mod prop_tests;
#[cfg(test)]
mod salt_keys;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn addr(host: &str, port: u16) -> MasterAddr {
        MasterAddr {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn startup_states_choose_salts_state_run() {
        let run =
            |s: Option<&str>, l: Option<Value>, t: Option<&str>| startup_run(s, l.as_ref(), t);
        assert_eq!(run(None, None, None), Ok(None));
        assert_eq!(run(Some(""), Some(json!(["a"])), None), Ok(None));
        assert_eq!(
            run(Some("highstate"), None, None),
            Ok(Some(StartupRun {
                fun: "state.highstate",
                arg: vec![]
            }))
        );
        assert_eq!(
            run(Some("sls"), Some(json!(["edit.vim", "hyper"])), None),
            Ok(Some(StartupRun {
                fun: "state.sls",
                arg: vec![json!(["edit.vim", "hyper"])]
            }))
        );
        assert_eq!(
            run(Some("sls"), Some(json!("one")), None)
                .unwrap()
                .unwrap()
                .arg,
            vec![json!("one")]
        );
        assert_eq!(
            run(Some("top"), None, Some("top_startup.sls")),
            Ok(Some(StartupRun {
                fun: "state.top",
                arg: vec![json!("top_startup.sls")]
            }))
        );
        assert_eq!(run(Some("sls"), None, None).unwrap_err().0, "sls_list");
        assert_eq!(
            run(Some("sls"), Some(json!([])), None).unwrap_err().0,
            "sls_list"
        );
        assert_eq!(
            run(Some("sls"), Some(json!([1])), None).unwrap_err().0,
            "sls_list"
        );
        assert_eq!(run(Some("top"), None, Some(" ")).unwrap_err().0, "top_file");
        let (key, msg) = run(Some("hightstate"), None, None).unwrap_err();
        assert_eq!(key, "startup_states");
        assert!(msg.contains("expected highstate, sls or top"), "{msg}");
    }

    #[test]
    fn master_addresses_parse_as_salt_parse_host_port() {
        let ok = [
            ("salt", addr("salt", 4506)),
            ("  salt.example.com ", addr("salt.example.com", 4506)),
            ("m1:1234", addr("m1", 1234)),
            ("10.0.0.1", addr("10.0.0.1", 4506)),
            ("10.0.0.1:4510", addr("10.0.0.1", 4510)),
            ("[::1]:4507", addr("::1", 4507)),
            ("[::1]", addr("::1", 4506)),
            ("::1", addr("::1", 4506)),
            (
                "fe80::a00:27ff:fedc:ba98",
                addr("fe80::a00:27ff:fedc:ba98", 4506),
            ),
            ("[2001:db8:0:0::1]:80", addr("2001:db8::1", 80)),
        ];
        for (input, want) in ok {
            assert_eq!(MasterAddr::parse(input, 4506), Ok(want), "{input:?}");
        }
        let bad = [
            ("m:0", "port \"0\""),
            ("m:x", "port \"x\""),
            ("m:70000", "port \"70000\""),
            ("m:", "port \"\""),
            ("[::1", "no closing bracket"),
            ("[::1]x", "expected :PORT"),
            ("[::1]:", "port \"\""),
            ("[salt]:4506", "not an IPv6 address"),
            ("a:b:c", "not an IPv6 address"),
            ("", "not a host"),
            (":4506", "not a host"),
            ("a b", "not a host"),
            ("user@host", "not a host"),
        ];
        for (input, want) in bad {
            let e = MasterAddr::parse(input, 4506).expect_err(input);
            assert!(e.contains(want), "{input:?}: {e}");
        }
        assert_eq!(addr("::1", 4506).to_string(), "[::1]:4506");
        assert_eq!(addr("salt", 4506).to_string(), "salt:4506");
    }

    fn load(raw: RawConfig) -> Result<MinionConfig, (String, String)> {
        let raw = RawConfig {
            id: Some("t1".into()),
            ..raw
        };
        MinionConfig::from_raw(raw, json!({}), PathBuf::from("/etc/saltq/minion")).map_err(|e| {
            match e {
                ConfigError::Value { key, message, .. } => (key, message),
                other => panic!("expected a key's error, got {other}"),
            }
        })
    }

    fn refused(raw: RawConfig, key: &str, says: &str) {
        let (k, message) = load(raw).map(|c| c.masters).expect_err("refused");
        assert_eq!(k, key, "{message}");
        assert!(message.contains(says), "{message}");
    }

    #[test]
    fn one_master_by_default() {
        let c = load(RawConfig::default()).unwrap();
        assert_eq!(c.masters, vec![addr("salt", 4506)]);
        assert_eq!(c.master_type, MasterType::Str);
        assert!(!c.random_master);
        assert_eq!(c.retry_dns, Some(Duration::from_secs(30)));
        let c = load(RawConfig {
            master: Some(json!("10.1.2.3")),
            master_port: Some(4510),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.masters, vec![addr("10.1.2.3", 4510)]);
        // A list of one is one master.
        let c = load(RawConfig {
            master: Some(json!(["m1:1"])),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.masters, vec![addr("m1", 1)]);
    }

    #[test]
    fn failover_takes_a_list_with_master_port_as_the_default() {
        let c = load(RawConfig {
            master: Some(json!(["m1", "m2:4600", "[::1]"])),
            master_port: Some(4510),
            master_type: Some("failover".into()),
            random_master: Some(true),
            master_failback: Some(false),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            c.masters,
            vec![addr("m1", 4510), addr("m2", 4600), addr("::1", 4510)]
        );
        assert_eq!(c.master_type, MasterType::Failover);
        assert!(c.random_master);
        // Failover moves on from a name that does not resolve, as Salt sets retry_dns to 0.
        assert_eq!(c.retry_dns, None);
        // A single name with failover is a list of one.
        let c = load(RawConfig {
            master: Some(json!("m1")),
            master_type: Some("failover".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.masters, vec![addr("m1", 4506)]);
    }

    #[test]
    fn several_masters_at_once_are_taken_with_a_finger_each_and_none_twice() {
        let c = load(RawConfig {
            master: Some(json!(["m1", "m2:4600"])),
            master_finger: Some(json!(["aa:01", "bb:02"])),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.masters, vec![addr("m1", 4506), addr("m2", 4600)]);
        assert_eq!(c.master_type, MasterType::Str);
        assert_eq!(c.master_finger, None);
        assert_eq!(c.master_finger_each, vec!["aa:01", "bb:02"]);
        // Salt's one finger, for masters sharing a CA.
        let c = load(RawConfig {
            master: Some(json!(["m1", "m2"])),
            master_finger: Some(json!("aa:01")),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.master_finger.as_deref(), Some("aa:01"));
        assert!(c.master_finger_each.is_empty());
        assert_eq!(c.pinned_ca_name, "master_ca.crt");
        for (master, kind, finger, key, says) in [
            (
                json!(["m1", "m1:4506"]),
                "str",
                json!(null),
                "master",
                "m1:4506 is listed twice (as master 1 and 2)",
            ),
            (
                json!(["m1", "m2", "m1"]),
                "failover",
                json!(null),
                "master",
                "m1:4506 is listed twice (as master 1 and 3)",
            ),
            (
                json!(["m1", "m2"]),
                "str",
                json!(["aa"]),
                "master_finger",
                "lists 1 fingerprints for 2 masters",
            ),
            (
                json!(["m1", "m2"]),
                "str",
                json!(["aa", 3]),
                "master_finger",
                "3 is not a fingerprint",
            ),
            (
                json!(["m1", "m2"]),
                "failover",
                json!(["aa", "bb"]),
                "master_finger",
                "needs several masters with master_type: str",
            ),
            (
                json!("m1"),
                "str",
                json!(["aa"]),
                "master_finger",
                "needs several masters",
            ),
            (
                json!("m1"),
                "str",
                json!({"a": 1}),
                "master_finger",
                "is not a fingerprint",
            ),
        ] {
            refused(
                RawConfig {
                    master: Some(master),
                    master_type: Some(kind.into()),
                    master_finger: (!finger.is_null()).then_some(finger),
                    ..Default::default()
                },
                key,
                says,
            );
        }
    }

    #[test]
    fn other_master_types_and_failback_are_refused() {
        for (kind, says) in [
            (
                "func",
                "func (a module function naming the master) is not supported",
            ),
            ("disable", "saltq-minion call --local"),
            ("distributed", "random_master: true"),
            (
                "hot",
                "\"hot\" is not a master type: expected str or failover",
            ),
        ] {
            refused(
                RawConfig {
                    master_type: Some(kind.into()),
                    ..Default::default()
                },
                "master_type",
                says,
            );
        }
        refused(
            RawConfig {
                master: Some(json!(["m1", "m2"])),
                master_type: Some("failover".into()),
                master_failback: Some(true),
                ..Default::default()
            },
            "master_failback",
            "not supported",
        );
    }

    #[test]
    fn bad_master_values_name_the_key() {
        for (v, says) in [
            (json!([]), "the list of masters is empty"),
            (json!(4506), "expected HOST, HOST:PORT or a list of them"),
            (json!(["m1", 2]), "2 is not a host name"),
            (json!(["m1", "m2:port"]), "port \"port\""),
        ] {
            refused(
                RawConfig {
                    master: Some(v),
                    master_type: Some("failover".into()),
                    ..Default::default()
                },
                "master",
                says,
            );
        }
    }

    #[test]
    fn retry_dns_is_seconds_and_zero_means_the_backoff() {
        let dns = |v: f64| {
            load(RawConfig {
                retry_dns: Some(v),
                ..Default::default()
            })
            .map(|c| c.retry_dns)
        };
        assert_eq!(dns(5.0), Ok(Some(Duration::from_secs(5))));
        assert_eq!(dns(0.5), Ok(Some(Duration::from_millis(500))));
        assert_eq!(dns(0.0), Ok(None));
        refused(
            RawConfig {
                retry_dns: Some(-1.0),
                ..Default::default()
            },
            "retry_dns",
            "not a number of seconds",
        );
    }

    #[test]
    fn random_reauth_delay_is_seconds_with_salts_default() {
        let delay = |v: Option<f64>| {
            load(RawConfig {
                random_reauth_delay: v,
                ..Default::default()
            })
            .map(|c| c.random_reauth_delay)
        };
        assert_eq!(delay(None), Ok(Duration::from_secs(10)));
        assert_eq!(delay(Some(2.5)), Ok(Duration::from_millis(2500)));
        assert_eq!(delay(Some(0.0)), Ok(Duration::ZERO));
        refused(
            RawConfig {
                random_reauth_delay: Some(-3.0),
                ..Default::default()
            },
            "random_reauth_delay",
            "not a number of seconds",
        );
    }

    #[test]
    fn master_alive_interval_bounds_the_idle_timeout_and_the_pings() {
        let limits = |alive: Option<f64>, idle: Option<f64>, keep: Option<f64>| {
            let c = load(RawConfig {
                master_alive_interval: alive,
                idle_timeout: idle,
                keep_alive: keep,
                ..Default::default()
            })
            .unwrap();
            (
                c.limits.idle_timeout.as_millis(),
                c.limits.keep_alive.as_millis(),
            )
        };
        // Off (Salt's default 0): the transport's own settings.
        assert_eq!(limits(None, None, None), (10_000, 1000));
        assert_eq!(limits(Some(0.0), None, None), (10_000, 1000));
        // Within the interval: noticed sooner, pinged more often.
        assert_eq!(limits(Some(6.0), None, None), (6000, 1000));
        assert_eq!(limits(Some(6.0), None, Some(3.0)), (6000, 2000));
        assert_eq!(limits(Some(2.0), Some(3.0), Some(1.0)), (2000, 666));
        // Never raised: QUIC uses the smaller idle timeout of the two ends anyway.
        assert_eq!(limits(Some(30.0), None, None), (10_000, 1000));
        assert_eq!(limits(Some(30.0), Some(4.0), Some(5.0)), (4000, 1333));
        refused(
            RawConfig {
                master_alive_interval: Some(f64::NAN),
                ..Default::default()
            },
            "master_alive_interval",
            "not a number of seconds",
        );
    }

    /// Salt 3007.8's `get_id`/`_append_domain`, recorded with `salt.config.minion_config`:
    /// generated `Web1.Example.COM` with `minion_id_lowercase` and `minion_id_remove_domain:
    /// example.com` is `web1`, cached in `minion_id`; the cache wins over a new host name;
    /// `append_domain` goes on any id once, not on a generated IPv4 address nor after a `.`.
    #[test]
    fn minion_id_keys_as_salt() {
        let dir = std::env::temp_dir().join(format!("saltq-minion-id-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = dir.join("etc/saltq/minion_id");
        let keys = IdKeys {
            caching: true,
            lowercase: true,
            remove_domain: Some("example.com".into()),
            append_domain: None,
        };
        assert_eq!(
            minion_id(None, &keys, &cache, || "Web1.Example.COM".into()),
            "web1"
        );
        assert_eq!(std::fs::read_to_string(&cache).unwrap(), "web1");
        assert_eq!(minion_id(None, &keys, &cache, || "renamed".into()), "web1");
        // Set ids are never cached nor changed by the generated-id keys.
        assert_eq!(
            minion_id(
                Some("Set.Example.com".into()),
                &keys,
                &cache,
                || unreachable!()
            ),
            "Set.Example.com"
        );
        std::fs::write(&cache, "localhost\n").unwrap();
        let any = IdKeys {
            remove_domain: Some(String::new()),
            lowercase: false,
            ..keys.clone()
        };
        assert_eq!(minion_id(None, &any, &cache, || "Host.a.b".into()), "Host");
        let off = IdKeys {
            caching: false,
            ..IdKeys::default()
        };
        std::fs::write(&cache, "cached\n").unwrap();
        assert_eq!(minion_id(None, &off, &cache, || "h.x".into()), "h.x");
        let append = IdKeys {
            caching: false,
            append_domain: Some("corp".into()),
            ..IdKeys::default()
        };
        assert_eq!(
            minion_id(Some("db".into()), &append, &cache, || unreachable!()),
            "db.corp"
        );
        assert_eq!(
            minion_id(Some("db.corp".into()), &append, &cache, || unreachable!()),
            "db.corp"
        );
        assert_eq!(
            minion_id(Some("db.".into()), &append, &cache, || unreachable!()),
            "db."
        );
        assert_eq!(
            minion_id(None, &append, &cache, || "10.0.0.5".into()),
            "10.0.0.5"
        );
        assert_eq!(minion_id(None, &append, &cache, || "h".into()), "h.corp");
        let bad = RawConfig {
            minion_id_remove_domain: Some(json!(3)),
            ..RawConfig::default()
        };
        assert!(
            IdKeys::from_raw(&bad)
                .unwrap_err()
                .1
                .contains("not a domain name")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
