//! The master's config file (`DIR/master`, YAML), with Salt's key names where the concept is
//! Salt's. Raw YAML is validated into [`MasterConfig`] before any port is bound.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use saltq_semantics::target::Nodegroups;
use saltq_transport::config::{ConfigError, rooted};
use serde::Deserialize;

/// The file as written: every key optional, unknown keys refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawConfig {
    /// Prefix for every path below (Salt's `root_dir`).
    pub root_dir: Option<PathBuf>,
    /// The master's id (default: `<hostname>_master`).
    pub id: Option<String>,
    /// Address to listen on (Salt's `interface`).
    pub interface: Option<IpAddr>,
    /// Port for both listeners (Salt's `port`, the return port, default 4506).
    pub port: Option<u16>,
    /// Serve gRPC over HTTP/3 on QUIC (default true).
    pub quic_enabled: Option<bool>,
    /// UDP port for QUIC, when it should differ from `port`.
    pub quic_port: Option<u16>,
    /// Serve gRPC over HTTP/2 on TCP (default true).
    pub h2_enabled: Option<bool>,
    /// TCP port for HTTP/2, when it should differ from `port`.
    pub h2_port: Option<u16>,
    /// Certificates, CA and minion keys.
    pub pki_dir: Option<PathBuf>,
    /// Job cache and other state.
    pub cachedir: Option<PathBuf>,
    /// Accept every new minion key (Salt's `auto_accept`).
    pub auto_accept: Option<bool>,
    /// Accept whatever key a minion presents, even a rejected or changed one (Salt's
    /// `open_mode`).
    pub open_mode: Option<bool>,
    /// File of minion id globs whose keys are accepted on sight (Salt's `autosign_file`).
    pub autosign_file: Option<PathBuf>,
    /// Accept minions whose certificate our CA or an external CA issued, without the pending step.
    pub accept_ca_signed_minions: Option<bool>,
    /// PEM files of external CAs (e.g. cert-manager) trusted to issue minion certificates.
    pub minion_ca_files: Option<Vec<PathBuf>>,
    /// PEM files of external CAs (e.g. cert-manager) trusted to issue client certificates.
    pub client_ca_files: Option<Vec<PathBuf>>,
    /// Serve this certificate (PEM chain) instead of the one the master issues itself.
    pub master_cert_file: Option<PathBuf>,
    /// The key of `master_cert_file`.
    pub master_key_file: Option<PathBuf>,
    /// Extra names and addresses for the master's server certificate.
    pub cert_sans: Option<Vec<String>>,
    /// Lifetime in days (fractions allowed) of the minion certificates the master's CA issues
    /// over `RenewCertificate` (default 30). Not a Salt key: Salt's minion keys never expire.
    pub minion_cert_days: Option<f64>,
    /// Issue a certificate from the master's CA to a minion that connects with a self-signed
    /// one once its key is accepted (default false: such minions keep their own certificate).
    pub issue_minion_certs: Option<bool>,
    /// Plain-HTTP port for /healthz, /readyz and /metrics (default 8080; 0 picks a free port).
    pub http_port: Option<u16>,
    /// Address of the HTTP port (default: `interface`).
    pub http_interface: Option<IpAddr>,
    /// A file holding the bearer token `/metrics` requires (Prometheus' `credentials_file`);
    /// unset, `/metrics` is open. `/healthz` and `/readyz` stay open for probes.
    pub metrics_token_file: Option<PathBuf>,
    /// Serve the HTTP port at all (default true).
    pub http_enabled: Option<bool>,
    /// Log level: error, warning, info, debug, trace.
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
    /// Implemented (#27): Salt's `log_granular_levels`, logger (`saltq_master.run`) to level.
    pub log_granular_levels: Option<std::collections::BTreeMap<String, String>>,
    /// Implemented (#27) by the CLI (`saltq`, as Salt's `salt` reads the master's config):
    /// Salt's `cli_summary`, the returns summary after the returns.
    pub cli_summary: Option<bool>,
    /// Implemented (#27) by the CLI: Salt's `state_output` (full, terse, mixed, changes,
    /// filter, with `_id`), the highstate outputter's default; `--state-output` overrides it.
    pub state_output: Option<String>,
    /// Implemented (#27) by the CLI: Salt's `state_verbose`.
    pub state_verbose: Option<bool>,
    /// Implemented (#27) by the CLI: Salt's `state_tabular` (`True`; a format string is taken
    /// as false).
    pub state_tabular: Option<serde_json::Value>,
    /// Implemented (#27) by the CLI: Salt's `state_output_diff`.
    pub state_output_diff: Option<bool>,
    /// Implemented (#27) by the CLI: Salt's `state_output_profile`.
    pub state_output_profile: Option<bool>,
    /// Implemented (#27) by the CLI: Salt's `state_output_pct`.
    pub state_output_pct: Option<bool>,
    /// Implemented (#27) by the CLI: Salt's `state_compress_ids`.
    pub state_compress_ids: Option<bool>,
    /// Implemented (#27): Salt's `user`: the master gives its directories and log file to
    /// this user and switches to it before it binds its ports (Salt's `check_user`).
    pub user: Option<String>,
    /// Largest gRPC message, in bytes (default 16 MiB).
    pub max_message_size: Option<usize>,
    /// Seconds of silence after which a peer is considered gone (default 10).
    pub idle_timeout: Option<f64>,
    /// Seconds between keep-alive pings (default 3).
    pub keep_alive: Option<f64>,
    /// Concurrent streams per connection (default 64).
    pub max_concurrent_streams: Option<u32>,
    /// TLS handshakes worked on at once; more wait their turn (default 256).
    pub max_handshakes: Option<usize>,
    /// Seconds a new connection may wait for its turn before it is refused (default 7).
    pub handshake_queue_seconds: Option<f64>,
    /// How long jobs stay in the job cache (Salt's `keep_jobs_seconds`, default 86400).
    pub keep_jobs_seconds: Option<u64>,
    /// Implemented (#27): Salt's deprecated `keep_jobs`, in hours (default 24): used only
    /// when `keep_jobs_seconds` is at its default and `keep_jobs` is not, as Salt 3007.8's
    /// `get_keep_jobs_seconds`.
    pub keep_jobs: Option<u64>,
    /// Job cache backend: `sqlite` (default) or `postgres`; Salt's bool is accepted too
    /// (`True`, Salt's default, is the default backend; saltq always keeps its job cache).
    pub job_cache: Option<JobCacheKey>,
    /// PostgreSQL connection string for `job_cache: postgres`.
    pub job_cache_postgres: Option<String>,
    /// PostgreSQL schema for the job cache.
    pub job_cache_postgres_schema: Option<String>,
    /// Named compound targets (Salt's `nodegroups`).
    pub nodegroups: Option<Nodegroups>,
    /// Pillar roots: `{base: [dir, ...]}` (Salt's `pillar_roots`).
    pub pillar_roots: Option<std::collections::BTreeMap<String, Vec<PathBuf>>>,
    /// How pillar sources merge: smart, recurse, aggregate, overwrite, list, none (Salt's).
    pub pillar_source_merging_strategy: Option<String>,
    /// Pillar merging appends lists instead of replacing them (Salt's).
    pub pillar_merge_lists: Option<bool>,
    /// An included pillar SLS wins over the one including it (Salt's).
    pub pillar_includes_override_sls: Option<bool>,
    /// Pillar `_errors` only say "see master log" (Salt's, default true).
    pub pillar_safe_render_error: Option<bool>,
    /// Accepted as Salt's; pillar top files ignore it, as in Salt.
    pub top_file_merging_strategy: Option<String>,
    /// Compile pillar from this environment only (Salt's).
    pub pillarenv: Option<String>,
    /// A request's saltenv is its pillarenv (Salt's).
    pub pillarenv_from_saltenv: Option<bool>,
    /// Render pipeline of files without a shebang (Salt's `renderer`, default `jinja|yaml`).
    pub renderer: Option<String>,
    /// External pillar is compiled before the SLS pillar, which sees it (Salt's).
    pub ext_pillar_first: Option<bool>,
    /// External pillar sources in Salt's list form (`- cmd_json: ...`, `- postgres: ...`).
    pub ext_pillar: Option<serde_json::Value>,
    /// The sources a `pillar.ext` call may name (Salt's, default `[libvirt, virtkey]`).
    pub on_demand_ext_pillar: Option<Vec<String>>,
    /// The `postgres` ext_pillar's connection (Salt's: host, user, pass, db, port).
    pub postgres: Option<serde_json::Value>,
    /// The `mysql` ext_pillar's connection (Salt's: host, user, pass, db, port, ssl).
    pub mysql: Option<serde_json::Value>,
    /// Where the `gpg` renderer's keys are (Salt's, default `<config dir>/gpgkeys`).
    pub gpg_keydir: Option<PathBuf>,
    /// Fire `salt/presence/*` events (Salt's `presence_events`).
    pub presence_events: Option<bool>,
    /// Which mine functions each minion may read with `mine.get` (Salt's `mine_get`):
    /// `{minion id regex: [function regex, ...]}`; unset, every minion reads every function.
    pub mine_get: Option<std::collections::BTreeMap<String, Vec<String>>>,
    /// Default seconds before find_job is asked (Salt's `timeout`, default 5).
    pub timeout: Option<f64>,
    /// Default seconds to wait for find_job answers (Salt's `gather_job_timeout`, default 10).
    pub gather_job_timeout: Option<f64>,
    /// File roots: `{saltenv: [dir, ...]}` (Salt's `file_roots`), served to minions
    /// (`salt://`); base's also hold `_modules` and `_runners`.
    pub file_roots: Option<std::collections::BTreeMap<String, Vec<PathBuf>>>,
    /// Digest of fileserver files (Salt's `hash_type`, default sha256).
    pub hash_type: Option<String>,
    /// Serve no symlinks from file_roots (Salt's `fileserver_ignoresymlinks`, default false).
    /// Symlinks resolving outside their root are never served.
    pub fileserver_ignoresymlinks: Option<bool>,
    /// Regular expressions of paths the fileserver neither lists nor serves (Salt's
    /// `file_ignore_regex`).
    pub file_ignore_regex: Option<Vec<String>>,
    /// Globs of paths the fileserver neither lists nor serves (Salt's `file_ignore_glob`).
    pub file_ignore_glob: Option<Vec<String>>,
    /// Directories of external runners (Salt's `runner_dirs`).
    pub runner_dirs: Option<Vec<PathBuf>>,
    /// Which client certificate may run which functions on which minions (Salt's `publisher_acl`).
    pub publisher_acl: Option<crate::acl::PublisherAcl>,
    /// Which client certificate may run which runners.
    pub runner_acl: Option<crate::acl::RunnerAcl>,
    /// Per client certificate, a user's list in Salt's `external_auth` syntax: function globs,
    /// `{minion glob: [function globs]}`, `@runner`, `@wheel`, `@jobs`.
    pub client_acl: Option<crate::acl::PublisherAcl>,
    /// Reactions: a list of `{tag_glob: [reaction files]}` (Salt's `reactor`).
    pub reactor: Option<Vec<std::collections::BTreeMap<String, Vec<PathBuf>>>>,
    /// Runners run on a schedule (Salt's master `schedule`): `{name: {function, seconds, ...}}`.
    pub schedule: Option<serde_json::Map<String, serde_json::Value>>,
    /// Concurrent reactions at most (default 10).
    pub reactor_worker_threads: Option<usize>,
    /// Returners that receive every event (Salt's `event_return`: a name or a list).
    pub event_return: Option<OneOrMany>,
    /// Events per batch (Salt's `event_return_queue`, default 0: send at once).
    pub event_return_queue: Option<usize>,
    /// Seconds a partial batch may wait (Salt's `event_return_queue_max_seconds`, default 0: no
    /// limit).
    pub event_return_queue_max_seconds: Option<f64>,
    /// Tag globs sent to event returners (Salt's `event_return_whitelist`).
    pub event_return_whitelist: Option<Vec<String>>,
    /// Tag globs not sent (Salt's `event_return_blacklist`).
    pub event_return_blacklist: Option<Vec<String>>,
    /// Events buffered while returners are down, at most (default 10000).
    pub event_return_buffer: Option<usize>,
    /// A database returner that also receives every job's load and returns, so tools reading
    /// Salt's `jids`/`salt_returns` tables see saltq's jobs (Salt's `master_job_cache`;
    /// `local_cache`, the default, adds nothing to saltq's own job cache).
    pub master_job_cache: Option<String>,
    /// Turns cluster mode on: masters with the same `cluster_id` are replicas of one master
    /// (Salt 3007's name). Letters, digits, `_` and `-`.
    pub cluster_id: Option<String>,
    /// The NATS servers the replicas talk through: a URL (`nats://host:4222`, `tls://...`) or a
    /// list of them.
    pub cluster_nats: Option<OneOrMany>,
    /// PEM file of the CA that issued the NATS servers' certificates (TLS to NATS).
    pub cluster_nats_ca_file: Option<PathBuf>,
    /// Client certificate (PEM) this master shows NATS, with `cluster_nats_key_file`.
    pub cluster_nats_cert_file: Option<PathBuf>,
    /// The key of `cluster_nats_cert_file`.
    pub cluster_nats_key_file: Option<PathBuf>,
    /// What every replica shares: the CA, the server and the admin certificates (Salt 3007's
    /// `cluster_pki_dir`). The first replica creates them there if the folder is empty.
    pub cluster_pki_dir: Option<PathBuf>,
    /// Serves Salt's REST API (salt-api's `rest_cherrypy`: `port`, `host`, `ssl_crt`,
    /// `ssl_key`, `disable_ssl`, `debug`, `root_prefix`, `webhook_url`,
    /// `webhook_disable_auth`, `expire_responses`, `collect_stats`, `stats_disable_auth`).
    pub rest_cherrypy: Option<saltq_netapi::config::RawRestConfig>,
    /// Serves salt-api's Tornado flavour (`rest_tornado`: `port`, `address`, `ssl_crt`,
    /// `ssl_key`, `disable_ssl`, `debug`, `websockets`, `webhook_disable_auth`,
    /// `cors_origin`, `num_processes`, `backlog`), on its own port beside `rest_cherrypy`.
    pub rest_tornado: Option<saltq_netapi::config::RawTornadoConfig>,
    /// The salt-api clients a request may use (Salt's `netapi_enable_clients`, default none).
    pub netapi_enable_clients: Option<Vec<String>>,
    /// salt-api users: eauth backends, users and their permissions (Salt's `external_auth`).
    pub external_auth: Option<serde_json::Value>,
    /// Seconds a salt-api token lasts (Salt's `token_expire`, default 43200).
    pub token_expire: Option<f64>,
    /// The PAM service salt-api's `pam` eauth backend checks passwords with (default `login`).
    #[serde(rename = "auth.pam.service")]
    pub auth_pam_service: Option<String>,
    /// Live salt-api tokens a user may hold; the oldest goes when a new one is made (default
    /// 1000; saltq's key, Salt has no bound).
    pub max_tokens_per_user: Option<u64>,
    /// This master is a top master: it takes syndics and forwards jobs to them (Salt's
    /// `order_masters`, default false).
    pub order_masters: Option<bool>,
    /// The top master(s) this master is a syndic of (Salt's `syndic_master`).
    pub syndic_master: Option<OneOrMany>,
    /// The top master's port (Salt's `syndic_master_port`, default 4506).
    pub syndic_master_port: Option<u16>,
    /// Seconds a top master's caller waits for syndics' expected minions (default 5).
    pub syndic_wait: Option<f64>,
    /// Which top master a syndic tries first: `random` (default) or `ordered`.
    pub syndic_failover: Option<String>,
    /// Send the syndic's events to every top master it is connected to (Salt's
    /// `syndic_forward_all_events`); saltq's syndic holds one link at a time.
    pub syndic_forward_all_events: Option<bool>,
    /// The top master's CA fingerprint the syndic pins on first contact.
    pub syndic_finger: Option<String>,
    /// Accepted for Salt configs; saltq's syndic logs with the master.
    pub syndic_log_file: Option<PathBuf>,
}

/// `job_cache`: Salt's bool (keep jobs or not) or saltq's backend name.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum JobCacheKey {
    /// Salt's `job_cache: True`/`False`: the default backend (saltq's CLI and `find_job`
    /// need the job cache, so `False` keeps it too; the value is not read).
    Salt(#[allow(dead_code)] bool),
    /// `sqlite` or `postgres`.
    Backend(String),
}

/// A string or a list of strings.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// One name (a comma-separated list, as Salt allows).
    One(String),
    /// Several names.
    Many(Vec<String>),
}

impl OneOrMany {
    /// The names.
    pub fn names(&self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => s
                .split(',')
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty())
                .collect(),
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// The validated config the master runs with.
///
/// As in Salt, `root_dir` prefixes `pki_dir`, `cachedir` and `autosign_file`; other paths
/// (pillar roots, CA files, certificates) are taken as written.
#[derive(Debug, Clone)]
pub struct MasterConfig {
    /// Where the config was read from (for messages).
    pub file: PathBuf,
    /// The master's id.
    pub id: String,
    /// UDP address for QUIC, or off.
    pub quic: Option<SocketAddr>,
    /// TCP address for HTTP/2, or off.
    pub h2: Option<SocketAddr>,
    /// Certificates and minion keys.
    pub pki_dir: PathBuf,
    /// State.
    pub cachedir: PathBuf,
    /// Accept every minion key.
    pub auto_accept: bool,
    /// Accept any key a minion presents, replacing the accepted one (Salt's `open_mode`).
    pub open_mode: bool,
    /// Globs of minion ids accepted on sight.
    pub autosign_file: Option<PathBuf>,
    /// Accept CA-issued minion certificates without the pending step.
    pub accept_ca_signed_minions: bool,
    /// External CAs for minion certificates.
    pub minion_ca_files: Vec<PathBuf>,
    /// External CAs for client certificates.
    pub client_ca_files: Vec<PathBuf>,
    /// An externally issued server certificate and key, instead of the self-issued pair.
    pub master_cert: Option<(PathBuf, PathBuf)>,
    /// Extra SANs.
    pub cert_sans: Vec<String>,
    /// Lifetime of the minion certificates the master issues.
    pub minion_cert_lifetime: Duration,
    /// Issue certificates to accepted minions that connect with a self-signed one.
    pub issue_minion_certs: bool,
    /// The HTTP probe and metrics address, or off.
    pub http: Option<SocketAddr>,
    /// The bearer token `/metrics` requires, read from `metrics_token_file` at start.
    pub metrics_token: Option<String>,
    /// Log level.
    pub log_level: String,
    /// Salt's logging keys (`log_file`, `log_fmt_*`, ...), checked.
    pub log: saltq_transport::salt_log::LogOptions,
    /// Salt's `user`, when set.
    pub user: Option<String>,
    /// Transport limits.
    pub limits: saltq_transport::Limits,
    /// Job retention.
    pub keep_jobs: Duration,
    /// Job cache backend.
    pub job_cache: saltq_jobcache::CacheConfig,
    /// Nodegroups.
    pub nodegroups: Nodegroups,
    /// Pillar roots of the `base` environment.
    pub pillar_roots: Vec<PathBuf>,
    /// The pillar compiler's settings and cache (every pillar key).
    pub pillar: crate::pillar::PillarConfig,
    /// External pillar: the sources, `on_demand_ext_pillar` and what they read.
    #[allow(dead_code)] // read by `pillar.ext` (on_demand_ext_pillar), not yet served
    pub ext_pillar: crate::ext_pillar::ExtPillarConfig,
    /// Presence events on.
    pub presence_events: bool,
    /// The master-side `mine.get` ACL (`mine_get`), its regexes checked at start.
    pub mine_get: Option<crate::mine::MineGetAcl>,
    /// Default timeout.
    pub timeout: Duration,
    /// Default gather_job_timeout.
    pub gather_job_timeout: Duration,
    /// Syndic settings: a top master's (`order_masters`) and a lower master's link up.
    pub syndic: crate::syndic::SyndicConfig,
    /// File roots of the `base` environment (`_modules`, `_runners`).
    pub file_roots: Vec<PathBuf>,
    /// Every saltenv's file roots, as the fileserver serves them.
    pub fileserver: saltq_fileserver::Roots,
    /// The fileserver's digest (`hash_type`).
    pub hash_type: String,
    /// Where external runners are looked up (runner_dirs, then synced ones).
    pub runner_dirs: Vec<PathBuf>,
    /// Where `saltutil.sync_runners` puts runners.
    pub extension_runners: PathBuf,
    /// Who may do what.
    pub acl: crate::acl::Acl,
    /// Reactions by tag glob.
    pub reactor: Vec<(String, Vec<PathBuf>)>,
    /// The master's schedule of runners (`schedule.rs`), run by the duty holder.
    pub schedule: serde_json::Map<String, serde_json::Value>,
    /// Concurrent reactions.
    pub reactor_workers: usize,
    /// Event returners and their queue settings.
    pub event_return: Option<saltq_returners::EventReturnConfig>,
    /// The returner mirroring jobs into Salt's tables (`master_job_cache`), if any.
    pub master_job_cache: Option<String>,
    /// Returner options (Salt's `returner.*`, `mysql.*`, ... keys) and `id`.
    pub returner_opts: serde_json::Value,
    /// Cluster mode, when `cluster_id` is set.
    pub cluster: Option<ClusterConfig>,
    /// salt-api, when `rest_cherrypy` is set.
    pub netapi: Option<saltq_netapi::Config>,
    /// salt-api's Tornado flavour, when `rest_tornado` is set.
    pub netapi_tornado: Option<saltq_netapi::Config>,
    /// The files read and what saltq does with each key (logged at start,
    /// `--check-config`).
    pub salt: saltq_states::saltconf::SaltConfig,
}

/// A master that is one replica of several (`cluster_id`).
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The cluster's name; replicas with the same one are one master.
    pub id: String,
    /// NATS server URLs.
    pub nats: Vec<String>,
    /// CA of the NATS servers, for TLS.
    pub nats_ca_file: Option<PathBuf>,
    /// Client certificate and key for NATS.
    pub nats_client_cert: Option<(PathBuf, PathBuf)>,
    /// Where the shared CA, server and admin certificates are.
    pub pki_dir: PathBuf,
}

impl MasterConfig {
    /// Where the CA, the server and the admin certificates are: `cluster_pki_dir` in a
    /// cluster, `pki_dir` otherwise. Minion keys stay under `pki_dir`.
    pub fn cert_dir(&self) -> &Path {
        self.cluster.as_ref().map_or(&self.pki_dir, |c| &c.pki_dir)
    }
}

/// `minion_cert_days` (default 30) as a duration: positive, at least one second, at most a
/// century.
fn minion_cert_lifetime(days: Option<f64>) -> Result<Duration, String> {
    let days = days.unwrap_or(30.0);
    let secs = days * 86400.0;
    if !(secs.is_finite() && (1.0..=36500.0 * 86400.0).contains(&secs)) {
        return Err(format!(
            "{days} is not a usable number of days: from 1 second (0.0000116) to 36500 days"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}
/// Salt 3007.8's `get_keep_jobs_seconds`: `keep_jobs_seconds` (default 86400), unless it is
/// at its default and the deprecated `keep_jobs` (hours, default 24) is not.
fn keep_jobs_seconds(seconds: Option<u64>, hours: Option<u64>) -> u64 {
    let seconds = seconds.unwrap_or(86400);
    match hours {
        Some(h) if seconds == 86400 && h != 24 => h.saturating_mul(3600),
        _ => seconds,
    }
}

/// The token in `path` (surrounding whitespace and a final newline are not part of it).
fn metrics_token(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("{} holds no token", path.display()));
    }
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "{} holds more than one word: a bearer token has no spaces",
            path.display()
        ));
    }
    Ok(token.to_owned())
}

/// The most seconds a duration in the config may be (about 31 years): longer ones would not
/// fit the clocks and timers they set.
const MAX_SECS: f64 = 1e9;

/// Default config directory, as Salt's `/etc/salt`.
pub const DEFAULT_CONFIG_DIR: &str = "/etc/saltq";

/// `DIR/master`, `master.d/*.conf` and the `include`s merged as Salt 3007.8 merges them
/// (`saltq_states::saltconf::daemon::load`): the typed keys, the returner options apart, and
/// the report. A key neither Salt nor saltq knows is refused.
fn load_salt(
    dir: &Path,
) -> Result<
    (
        RawConfig,
        serde_json::Map<String, serde_json::Value>,
        saltq_states::saltconf::SaltConfig,
    ),
    ConfigError,
> {
    saltq_states::saltconf::daemon::load(
        saltq_states::saltconf::Daemon::Master,
        dir,
        Path::new(DEFAULT_CONFIG_DIR),
        &saltq_returners::is_returner_option,
    )
}

/// `saltq-master --check-config`: every key of `dir`'s config with what saltq does with it,
/// then whether the master would start. The exit code: 0 when it would, else the load's.
pub fn check(dir: &Path) -> i32 {
    saltq_states::saltconf::daemon::check::<RawConfig>(
        saltq_states::saltconf::Daemon::Master,
        dir,
        Path::new(DEFAULT_CONFIG_DIR),
        &saltq_returners::is_returner_option,
        || MasterConfig::load(dir).map(drop),
    )
}

impl MasterConfig {
    /// Reads and validates `DIR/master` with its `master.d/*.conf` and `include`s, as Salt
    /// 3007.8 reads them (`saltq_states::saltconf`). A missing file means all defaults.
    pub fn load(dir: &Path) -> Result<MasterConfig, ConfigError> {
        let (raw, returner_opts, salt) = load_salt(dir)?;
        let file = salt.loaded.file.clone();
        let mut cfg = Self::from_raw(raw, file.clone())
            .map_err(|e| saltq_states::saltconf::daemon::placed(&salt, e))?;
        cfg.salt = salt;
        let mut opts = returner_opts;
        opts.insert("id".into(), serde_json::Value::String(cfg.id.clone()));
        opts.insert(
            "keep_jobs_seconds".into(),
            serde_json::json!(cfg.keep_jobs.as_secs()),
        );
        cfg.returner_opts = serde_json::Value::Object(opts);
        Ok(cfg)
    }

    /// Validates raw values: concern by concern, in the order the keys have always been
    /// checked (the first bad key found is the one named).
    pub fn from_raw(raw: RawConfig, file: PathBuf) -> Result<MasterConfig, ConfigError> {
        Self::validate(raw, &file).map_err(|(key, message)| ConfigError::Value {
            path: file.clone(),
            key,
            message,
        })
    }

    /// [`MasterConfig::from_raw`] without the file: an error is the key and what is wrong.
    fn validate(raw: RawConfig, file: &Path) -> Result<MasterConfig, Invalid> {
        let root = root_dir(&raw)?;
        let path =
            |p: Option<PathBuf>, default: &str| rooted(&root, &p.unwrap_or_else(|| default.into()));
        let network = Network::from_raw(&raw)?;
        let log_level = raw.log_level.clone().unwrap_or_else(|| "warning".into());
        check_log_level(&log_level).map_err(|m| invalid("log_level", m))?;
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
        .map_err(|(k, m)| invalid(k, m))?;
        let cachedir = path(raw.cachedir.clone(), "/var/cache/saltq/master");
        let pki_dir = path(raw.pki_dir.clone(), "/etc/saltq/pki/master");
        let job_cache = job_cache(&raw, &cachedir)?;
        let master_cert = both(
            (raw.master_cert_file.clone(), "master_cert_file"),
            (raw.master_key_file.clone(), "master_key_file"),
        )?;
        let max_message_size = max_message_size(raw.max_message_size)?;
        let cluster = cluster_config(&raw, &job_cache).map_err(|(k, m)| invalid(k, m))?;
        let (hash_type, fileserver) = fileserver(&raw)?;
        let id = master_id(raw.id.clone())?;
        check_acls(&raw)?;
        // salt-api serves the master's own certificate unless rest_cherrypy names one.
        let netapi_tls = master_cert.clone().unwrap_or_else(|| {
            let dir = cluster.as_ref().map_or(&pki_dir, |c| &c.pki_dir);
            (
                dir.join(crate::run::PkiFiles::MASTER_CERT),
                dir.join(crate::run::PkiFiles::MASTER_KEY),
            )
        });
        let (netapi, netapi_tornado) = netapi(&raw, netapi_tls, &cachedir)?;
        let minion_cert_lifetime = minion_cert_lifetime(raw.minion_cert_days)
            .map_err(|m| invalid("minion_cert_days", m))?;
        let metrics_token = raw
            .metrics_token_file
            .as_ref()
            .map(|p| metrics_token(&rooted(&root, p)))
            .transpose()
            .map_err(|m| invalid("metrics_token_file", m))?;
        let limits = limits(&raw, max_message_size)?;
        let event_return = event_return(&raw)?;
        let master_job_cache = master_job_cache(raw.master_job_cache.as_deref())?;
        let timeout = secs("timeout", raw.timeout, 5.0)?;
        // Salt's default: beside the config file.
        let config_dir = file.parent().unwrap_or(Path::new("/etc/saltq"));
        let gpg_keydir = raw
            .gpg_keydir
            .clone()
            .unwrap_or_else(|| config_dir.join("gpgkeys"));
        let ext_pillar = crate::ext_pillar::ExtPillarConfig::from_raw(
            raw.ext_pillar.as_ref(),
            raw.on_demand_ext_pillar.as_deref(),
            raw.postgres.as_ref(),
            raw.mysql.as_ref(),
            Some(&gpg_keydir),
        )
        .map_err(|(k, m)| invalid(k, m))?;
        let gather_job_timeout = secs("gather_job_timeout", raw.gather_job_timeout, 10.0)?;
        let pillar = crate::pillar::PillarConfig::from_raw(&raw, &id, &cachedir, &gpg_keydir)?
            .with_ext(ext_pillar.sources().map_err(|m| invalid("ext_pillar", m))?);
        let syndic = crate::syndic::SyndicConfig::from_raw(&raw).map_err(|(k, m)| invalid(k, m))?;
        Ok(MasterConfig {
            id,
            quic: network.quic,
            h2: network.h2,
            http: network.http,
            pki_dir,
            auto_accept: raw.auto_accept.unwrap_or(false),
            open_mode: raw.open_mode.unwrap_or(false),
            autosign_file: raw.autosign_file.map(|p| rooted(&root, &p)),
            accept_ca_signed_minions: raw.accept_ca_signed_minions.unwrap_or(true),
            minion_ca_files: raw.minion_ca_files.unwrap_or_default(),
            client_ca_files: raw.client_ca_files.unwrap_or_default(),
            master_cert,
            cert_sans: raw.cert_sans.unwrap_or_default(),
            minion_cert_lifetime,
            issue_minion_certs: raw.issue_minion_certs.unwrap_or(false),
            metrics_token,
            log_level,
            log,
            user: raw.user.clone().filter(|u| !u.is_empty()),
            limits,
            keep_jobs: Duration::from_secs(keep_jobs_seconds(raw.keep_jobs_seconds, raw.keep_jobs)),
            job_cache,
            nodegroups: raw.nodegroups.unwrap_or_default(),
            ext_pillar,
            pillar,
            pillar_roots: raw
                .pillar_roots
                .and_then(|mut m| m.remove("base"))
                .unwrap_or_default(),
            presence_events: raw.presence_events.unwrap_or(false),
            mine_get: raw
                .mine_get
                .map(crate::mine::MineGetAcl::new)
                .transpose()
                .map_err(|m| invalid("mine_get", m))?,
            file_roots: raw
                .file_roots
                .as_ref()
                .and_then(|m| m.get("base").cloned())
                .unwrap_or_default(),
            fileserver,
            hash_type,
            runner_dirs: raw
                .runner_dirs
                .unwrap_or_default()
                .into_iter()
                .chain(std::iter::once(cachedir.join("extmods/runners")))
                .collect(),
            extension_runners: cachedir.join("extmods/runners"),
            acl: crate::acl::Acl {
                publisher: raw.publisher_acl,
                runner: raw.runner_acl,
                client: raw.client_acl,
            },
            schedule: raw.schedule.unwrap_or_default(),
            reactor: raw
                .reactor
                .unwrap_or_default()
                .into_iter()
                .flat_map(|m| m.into_iter())
                .collect(),
            reactor_workers: raw.reactor_worker_threads.unwrap_or(10).max(1),
            event_return,
            master_job_cache,
            returner_opts: serde_json::Value::Null,
            salt: Default::default(),
            timeout,
            gather_job_timeout,
            syndic,
            netapi,
            netapi_tornado,
            cluster,
            cachedir,
            file: file.to_path_buf(),
        })
    }
}

/// A bad value found while validating: the key and what is wrong with it (`from_raw` adds
/// the file).
type Invalid = (String, String);

/// An [`Invalid`] for `key`.
fn invalid(key: &str, message: impl Into<String>) -> Invalid {
    (key.to_owned(), message.into())
}

/// `root_dir` (default `/`), which must be absolute.
fn root_dir(raw: &RawConfig) -> Result<PathBuf, Invalid> {
    let root = raw.root_dir.clone().unwrap_or_else(|| PathBuf::from("/"));
    if !root.is_absolute() {
        return Err(invalid(
            "root_dir",
            format!("{} is not an absolute path", root.display()),
        ));
    }
    Ok(root)
}

/// Where the master listens: `interface`, `port`, the QUIC and HTTP/2 switches and ports, and
/// the HTTP probe port.
#[derive(Debug, PartialEq, Eq)]
struct Network {
    /// UDP address for QUIC, or off.
    quic: Option<SocketAddr>,
    /// TCP address for HTTP/2, or off.
    h2: Option<SocketAddr>,
    /// The HTTP probe and metrics address, or off.
    http: Option<SocketAddr>,
}

impl Network {
    /// Validates the network keys: at least one of QUIC and HTTP/2 must listen.
    fn from_raw(raw: &RawConfig) -> Result<Network, Invalid> {
        let interface = raw.interface.unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let port = raw.port.unwrap_or(4506);
        let quic = raw
            .quic_enabled
            .unwrap_or(true)
            .then(|| SocketAddr::new(interface, raw.quic_port.unwrap_or(port)));
        let h2 = raw
            .h2_enabled
            .unwrap_or(true)
            .then(|| SocketAddr::new(interface, raw.h2_port.unwrap_or(port)));
        if quic.is_none() && h2.is_none() {
            return Err(invalid(
                "quic_enabled",
                "both quic_enabled and h2_enabled are false: nothing would listen",
            ));
        }
        // On `interface` unless told otherwise: a master kept to loopback or one network
        // does not expose its metrics on every other.
        let http = raw.http_enabled.unwrap_or(true).then(|| {
            SocketAddr::new(
                raw.http_interface.unwrap_or(interface),
                raw.http_port.unwrap_or(8080),
            )
        });
        Ok(Network { quic, h2, http })
    }
}

/// A duration key in seconds (`default` when unset): positive and at most [`MAX_SECS`].
fn secs(key: &str, v: Option<f64>, default: f64) -> Result<Duration, Invalid> {
    let v = v.unwrap_or(default);
    if v > 0.0 && v <= MAX_SECS {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(invalid(
            key,
            format!("{v} is not a positive number of seconds (at most {MAX_SECS})"),
        ))
    }
}

/// The job cache backend (`job_cache`, `job_cache_postgres`, `job_cache_postgres_schema`);
/// the environment's `SALTQ_JOB_CACHE_POSTGRES` wins over `job_cache_postgres`.
fn job_cache(raw: &RawConfig, cachedir: &Path) -> Result<saltq_jobcache::CacheConfig, Invalid> {
    let backend = match &raw.job_cache {
        Some(JobCacheKey::Backend(name)) => name.as_str(),
        None | Some(JobCacheKey::Salt(_)) => "sqlite",
    };
    match backend {
        "sqlite" => Ok(saltq_jobcache::CacheConfig::Sqlite {
            path: cachedir.join("jobs.sqlite"),
        }),
        "postgres" => Ok(saltq_jobcache::CacheConfig::Postgres {
            // The environment keeps a password out of the config file (e.g. from a Secret).
            url: std::env::var("SALTQ_JOB_CACHE_POSTGRES")
                .ok()
                .filter(|v| !v.is_empty())
                .or_else(|| raw.job_cache_postgres.clone())
                .ok_or_else(|| {
                    invalid("job_cache_postgres", "required when job_cache is postgres")
                })?,
            schema: raw.job_cache_postgres_schema.clone(),
        }),
        other => Err(invalid(
            "job_cache",
            format!("unknown backend {other:?}: expected sqlite or postgres"),
        )),
    }
}

/// Two keys that go together (a certificate and its key): both or neither.
fn both<T>(a: (Option<T>, &str), b: (Option<T>, &str)) -> Result<Option<(T, T)>, Invalid> {
    match (a.0, b.0) {
        (Some(x), Some(y)) => Ok(Some((x, y))),
        (None, None) => Ok(None),
        (Some(_), None) => Err(invalid(b.1, format!("required with {}", a.1))),
        (None, Some(_)) => Err(invalid(a.1, format!("required with {}", b.1))),
    }
}

/// `max_message_size` (default 16 MiB), at least 1024 bytes.
fn max_message_size(v: Option<usize>) -> Result<usize, Invalid> {
    let max = v.unwrap_or(16 * 1024 * 1024);
    if max < 1024 {
        return Err(invalid(
            "max_message_size",
            format!("{max} bytes is too small (at least 1024)"),
        ));
    }
    Ok(max)
}

/// The transport limits: `max_message_size` (checked before), the timeouts and the
/// handshake bounds; the listeners' connection caps keep their defaults.
fn limits(raw: &RawConfig, max_message_size: usize) -> Result<saltq_transport::Limits, Invalid> {
    let defaults = saltq_transport::Limits::default();
    Ok(saltq_transport::Limits {
        max_message_size,
        idle_timeout: secs("idle_timeout", raw.idle_timeout, 10.0)?,
        keep_alive: secs("keep_alive", raw.keep_alive, 3.0)?,
        max_concurrent_streams: raw.max_concurrent_streams.unwrap_or(64),
        max_handshakes: match raw.max_handshakes {
            Some(0) => return Err(invalid("max_handshakes", "must be at least 1")),
            v => v.unwrap_or(256),
        },
        handshake_queue: secs(
            "handshake_queue_seconds",
            raw.handshake_queue_seconds,
            defaults.handshake_queue.as_secs_f64(),
        )?,
        ..defaults
    })
}

/// The fileserver: `hash_type` (checked), the file roots of every saltenv, and what it never
/// serves (`fileserver_ignoresymlinks`, `file_ignore_regex`, `file_ignore_glob`).
fn fileserver(raw: &RawConfig) -> Result<(String, saltq_fileserver::Roots), Invalid> {
    let hash_type = raw
        .hash_type
        .clone()
        .unwrap_or_else(|| saltq_fileserver::DEFAULT_HASH_TYPE.into());
    saltq_fileserver::Hasher::new(&hash_type).map_err(|e| invalid("hash_type", e.to_string()))?;
    let mut roots = saltq_fileserver::Roots::new(raw.file_roots.clone().unwrap_or_default());
    roots.ignore_symlinks = raw.fileserver_ignoresymlinks.unwrap_or(false);
    roots.ignore = saltq_fileserver::Ignore::new(
        raw.file_ignore_regex.as_deref().unwrap_or_default(),
        raw.file_ignore_glob.as_deref().unwrap_or_default(),
    )
    .map_err(|m| invalid("file_ignore_regex", m))?;
    Ok((hash_type, roots))
}

/// The master's `id` (default `<hostname>_master`), which must not be blank.
fn master_id(id: Option<String>) -> Result<String, Invalid> {
    match id {
        Some(id) if id.trim().is_empty() => Err(invalid("id", "must not be empty")),
        Some(id) => Ok(id),
        None => Ok(format!("{}_master", gethostname())),
    }
}

/// The argument specs in `publisher_acl` and `client_acl`.
fn check_acls(raw: &RawConfig) -> Result<(), Invalid> {
    for (key, acl) in [
        ("publisher_acl", &raw.publisher_acl),
        ("client_acl", &raw.client_acl),
    ] {
        crate::acl::check_arg_specs(acl.as_ref()).map_err(|m| invalid(key, m))?;
    }
    Ok(())
}

/// salt-api (`rest_cherrypy`, `rest_tornado` and their companions), validated by the netapi
/// crate; `tls` is the certificate each serves unless its key names one.
type NetapiConfigs = (Option<saltq_netapi::Config>, Option<saltq_netapi::Config>);
fn netapi(
    raw: &RawConfig,
    tls: (PathBuf, PathBuf),
    cachedir: &Path,
) -> Result<NetapiConfigs, Invalid> {
    let n = saltq_netapi::RawConfig {
        rest_cherrypy: raw.rest_cherrypy.clone(),
        rest_tornado: raw.rest_tornado.clone(),
        netapi_enable_clients: raw.netapi_enable_clients.clone(),
        external_auth: raw.external_auth.clone(),
        token_expire: raw.token_expire,
        pam_service: raw.auth_pam_service.clone(),
        max_tokens_per_user: raw.max_tokens_per_user,
    };
    let cherrypy = saltq_netapi::Config::from_raw(&n, tls.clone(), cachedir.to_path_buf())?;
    let tornado = saltq_netapi::Config::tornado_from_raw(&n, tls, cachedir.to_path_buf())?;
    Ok((cherrypy, tornado))
}

/// The event returners (`event_return` and its `event_return_*` settings), by known names.
fn event_return(raw: &RawConfig) -> Result<Option<saltq_returners::EventReturnConfig>, Invalid> {
    let Some(names) = &raw.event_return else {
        return Ok(None);
    };
    let names = names.names();
    // Salt's default is `''`: no event returner.
    if names.is_empty() {
        return Ok(None);
    }
    if let Some(n) = names
        .iter()
        .find(|n| !saltq_returners::KNOWN.contains(&n.as_str()))
    {
        return Err(invalid(
            "event_return",
            format!(
                "unknown returner {n:?}: expected one of {}",
                saltq_returners::KNOWN.join(", ")
            ),
        ));
    }
    let max_age = raw.event_return_queue_max_seconds.unwrap_or(0.0);
    if max_age.is_nan() || max_age > MAX_SECS {
        return Err(invalid(
            "event_return_queue_max_seconds",
            format!("{max_age} is not a number of seconds (at most {MAX_SECS})"),
        ));
    }
    Ok(Some(saltq_returners::EventReturnConfig {
        returners: names,
        whitelist: raw.event_return_whitelist.clone().unwrap_or_default(),
        blacklist: raw.event_return_blacklist.clone().unwrap_or_default(),
        queue: raw.event_return_queue.unwrap_or(0),
        max_buffer: raw.event_return_buffer.unwrap_or(10_000),
        queue_max_age: Duration::from_secs_f64(max_age.max(0.0)),
        ..Default::default()
    }))
}

/// `master_job_cache`: `local_cache` (saltq's own, nothing added) or a returner that can hold
/// jobs.
fn master_job_cache(name: Option<&str>) -> Result<Option<String>, Invalid> {
    match name {
        None | Some("local_cache") => Ok(None),
        Some(n) if crate::job_cache_mirror::RETURNERS.contains(&n) => Ok(Some(n.to_owned())),
        Some(n) => Err(invalid(
            "master_job_cache",
            format!(
                "{n:?} cannot hold saltq's jobs: expected local_cache or one of {}",
                crate::job_cache_mirror::RETURNERS.join(", ")
            ),
        )),
    }
}

/// Validates the cluster keys: all or nothing, and a cluster needs the PostgreSQL job cache.
/// An error names the key and the reason.
fn cluster_config(
    raw: &RawConfig,
    job_cache: &saltq_jobcache::CacheConfig,
) -> Result<Option<ClusterConfig>, (&'static str, String)> {
    let Some(id) = raw.cluster_id.clone() else {
        let stray = [
            ("cluster_nats", raw.cluster_nats.is_some()),
            ("cluster_nats_ca_file", raw.cluster_nats_ca_file.is_some()),
            (
                "cluster_nats_cert_file",
                raw.cluster_nats_cert_file.is_some(),
            ),
            ("cluster_nats_key_file", raw.cluster_nats_key_file.is_some()),
            ("cluster_pki_dir", raw.cluster_pki_dir.is_some()),
        ];
        if let Some((key, _)) = stray.into_iter().find(|(_, set)| *set) {
            return Err((
                key,
                "only meaningful with cluster_id, which is not set".into(),
            ));
        }
        return Ok(None);
    };
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err((
            "cluster_id",
            format!("{id:?} is not a cluster name: use letters, digits, '_' and '-'"),
        ));
    }
    if !matches!(job_cache, saltq_jobcache::CacheConfig::Postgres { .. }) {
        return Err((
            "job_cache",
            "cluster_id requires job_cache: postgres (the replicas share jobs, keys and minion \
             data there)"
                .into(),
        ));
    }
    let nats = raw.cluster_nats.as_ref().map(OneOrMany::names);
    let nats = match nats {
        Some(n) if !n.is_empty() => n,
        _ => {
            return Err((
                "cluster_nats",
                "required with cluster_id: the NATS servers the replicas talk through, e.g. \
                 nats://127.0.0.1:4222"
                    .into(),
            ));
        }
    };
    for url in &nats {
        crate::cluster::nats::check_url(url).map_err(|m| ("cluster_nats", m))?;
    }
    let nats_client_cert = match (
        raw.cluster_nats_cert_file.clone(),
        raw.cluster_nats_key_file.clone(),
    ) {
        (Some(c), Some(k)) => Some((c, k)),
        (None, None) => None,
        (Some(_), None) => {
            return Err((
                "cluster_nats_key_file",
                "required with cluster_nats_cert_file".into(),
            ));
        }
        (None, Some(_)) => {
            return Err((
                "cluster_nats_cert_file",
                "required with cluster_nats_key_file".into(),
            ));
        }
    };
    let pki_dir = raw.cluster_pki_dir.as_ref().ok_or((
        "cluster_pki_dir",
        "required with cluster_id: the folder every replica shares for the CA, the server and \
         the admin certificates"
            .to_owned(),
    ))?;
    Ok(Some(ClusterConfig {
        id,
        nats,
        nats_ca_file: raw.cluster_nats_ca_file.clone(),
        nats_client_cert,
        // As in Salt, root_dir does not prefix it: replicas with roots of their own share it.
        pki_dir: pki_dir.clone(),
    }))
}

/// Salt's log level names.
pub fn check_log_level(level: &str) -> Result<(), String> {
    match level {
        "quiet" | "critical" | "error" | "warning" | "info" | "profile" | "debug" | "trace"
        | "garbage" | "all" => Ok(()),
        other => Err(format!(
            "unknown log level {other:?}: expected one of quiet, critical, error, warning, info, debug, trace, all"
        )),
    }
}

fn gethostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

#[cfg(test)]
pub(crate) mod prop_tests;
#[cfg(test)]
mod salt_keys;

#[cfg(test)]
mod tests {
    use super::*;

    fn load(yaml: &str) -> Result<MasterConfig, String> {
        let raw: RawConfig = serde_yaml_ng::from_str(yaml).map_err(|e| e.to_string())?;
        MasterConfig::from_raw(raw, PathBuf::from("/etc/saltq/master")).map_err(|e| e.to_string())
    }

    #[test]
    fn file_roots_keep_every_saltenv_and_hash_type_is_checked() {
        let cfg = load(
            "file_roots:\n  base: [/srv/salt, /srv/more]\n  dev: [/srv/dev]\nfileserver_ignoresymlinks: true\n",
        )
        .unwrap();
        assert_eq!(
            cfg.file_roots,
            [PathBuf::from("/srv/salt"), "/srv/more".into()]
        );
        assert_eq!(cfg.fileserver.saltenvs(), ["base", "dev"]);
        assert_eq!(cfg.fileserver.dirs("dev"), [PathBuf::from("/srv/dev")]);
        assert!(cfg.fileserver.ignore_symlinks);
        assert_eq!(cfg.hash_type, "sha256");
        assert_eq!(load("hash_type: md5\n").unwrap().hash_type, "md5");
        let err = load("file_ignore_regex: ['(']\n").unwrap_err();
        assert!(err.contains("key \"file_ignore_regex\""), "{err}");
        let cfg = load("file_roots: {base: [/s]}\nfile_ignore_glob: ['*.bak']\n").unwrap();
        assert!(cfg.fileserver.ignore.matches("a/b.bak"));
        let err = load("hash_type: crc\n").unwrap_err();
        assert!(
            err.contains("key \"hash_type\"") && err.contains("crc"),
            "{err}"
        );
    }

    #[test]
    fn master_job_cache_names_a_returner_that_stores_jobs() {
        assert_eq!(load("").unwrap().master_job_cache, None);
        assert_eq!(
            load("master_job_cache: local_cache\n")
                .unwrap()
                .master_job_cache,
            None
        );
        assert_eq!(
            load("master_job_cache: mysql\n").unwrap().master_job_cache,
            Some("mysql".into())
        );
        for bad in ["syslog", "sqlite", "mongo"] {
            let err = load(&format!("master_job_cache: {bad}\n")).unwrap_err();
            assert!(
                err.contains("key \"master_job_cache\"") && err.contains(bad),
                "{err}"
            );
        }
    }

    #[test]
    fn the_http_port_listens_on_interface_unless_http_interface_says_otherwise() {
        let http = |yaml: &str| load(yaml).unwrap().http.map(|a| a.to_string());
        assert_eq!(http(""), Some("0.0.0.0:8080".into()));
        assert_eq!(
            http("interface: 127.0.0.1\n"),
            Some("127.0.0.1:8080".into())
        );
        assert_eq!(
            http("interface: 127.0.0.1\nhttp_interface: 0.0.0.0\nhttp_port: 9\n"),
            Some("0.0.0.0:9".into())
        );
        assert_eq!(http("http_enabled: false\n"), None);
    }

    #[test]
    fn the_metrics_token_file_holds_one_word() {
        let dir = std::env::temp_dir().join(format!("saltq-mtok-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("token");
        let with = |text: &str| {
            std::fs::write(&f, text).unwrap();
            load(&format!("metrics_token_file: {}\n", f.display())).map(|c| c.metrics_token)
        };
        assert_eq!(with("s3cret\n").unwrap(), Some("s3cret".into()));
        for (text, want) in [("\n", "holds no token"), ("a b\n", "more than one word")] {
            let err = with(text).unwrap_err();
            assert!(
                err.contains("key \"metrics_token_file\"") && err.contains(want),
                "{text:?}: {err}"
            );
        }
        let err = load("metrics_token_file: /no/such/token\n").unwrap_err();
        assert!(err.contains("cannot read /no/such/token"), "{err}");
        assert_eq!(load("").unwrap().metrics_token, None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    const PG: &str = "job_cache: postgres\njob_cache_postgres: 'host=db'\n";

    #[test]
    fn cluster_mode_needs_every_part_and_names_the_missing_key() {
        let ok = load(&format!(
            "{PG}cluster_id: prod\ncluster_nats: [nats://n1:4222, 'tls://n2:4222']\ncluster_pki_dir: /srv/cluster-pki\n"
        ))
        .expect("a whole cluster config");
        let c = ok.cluster.as_ref().expect("cluster mode");
        assert_eq!(c.id, "prod");
        assert_eq!(c.nats, ["nats://n1:4222", "tls://n2:4222"]);
        assert_eq!(ok.cert_dir(), Path::new("/srv/cluster-pki"));
        assert!(load("").unwrap().cluster.is_none());
        assert_eq!(load("").unwrap().cert_dir(), load("").unwrap().pki_dir);

        let cases = [
            (
                "cluster_id: prod\ncluster_nats: nats://n1\ncluster_pki_dir: /p\n".to_owned(),
                "key \"job_cache\": cluster_id requires job_cache: postgres",
            ),
            (
                format!("{PG}cluster_id: prod\ncluster_pki_dir: /p\n"),
                "key \"cluster_nats\": required with cluster_id",
            ),
            (
                format!("{PG}cluster_id: prod\ncluster_nats: nats://n1\n"),
                "key \"cluster_pki_dir\": required with cluster_id",
            ),
            (
                format!("{PG}cluster_id: 'a b'\ncluster_nats: nats://n1\ncluster_pki_dir: /p\n"),
                "key \"cluster_id\": \"a b\" is not a cluster name",
            ),
            (
                format!("{PG}cluster_id: prod\ncluster_nats: 'http://n1'\ncluster_pki_dir: /p\n"),
                "key \"cluster_nats\": \"http://n1\"",
            ),
            (
                "cluster_nats: nats://n1\n".to_owned(),
                "key \"cluster_nats\": only meaningful with cluster_id",
            ),
            (
                format!(
                    "{PG}cluster_id: prod\ncluster_nats: nats://n1\ncluster_pki_dir: /p\ncluster_nats_cert_file: /c.pem\n"
                ),
                "key \"cluster_nats_key_file\": required with cluster_nats_cert_file",
            ),
        ];
        for (yaml, expected) in cases {
            let err = load(&yaml).expect_err(&yaml);
            assert!(
                err.contains(expected),
                "{yaml}\n{err}\nexpected: {expected}"
            );
        }
    }

    #[test]
    fn minion_certificates_last_minion_cert_days_and_are_issued_only_when_asked() {
        let cfg = load("").unwrap();
        assert_eq!(cfg.minion_cert_lifetime, Duration::from_secs(30 * 86400));
        assert!(!cfg.issue_minion_certs);
        let cfg = load(
            "minion_cert_days: 0.5
issue_minion_certs: true
",
        )
        .unwrap();
        assert_eq!(cfg.minion_cert_lifetime, Duration::from_secs(43200));
        assert!(cfg.issue_minion_certs);
        for bad in ["0", "-1", ".nan", "0.000001", "40000"] {
            let err = load(&format!("minion_cert_days: {bad}\n")).unwrap_err();
            assert!(
                err.contains("key \"minion_cert_days\"") && err.contains("1 second"),
                "{bad}: {err}"
            );
        }
        let err = load("minion_cert_days: soon\n").unwrap_err();
        assert!(err.contains("minion_cert_days"), "{err}");
    }

    fn raw(yaml: &str) -> RawConfig {
        serde_yaml_ng::from_str(yaml).expect("test yaml")
    }

    #[test]
    fn the_network_keys_give_the_listeners_and_refuse_none_at_all() {
        let check = |yaml: &str, expected: Result<[Option<&str>; 3], &str>| {
            let got = Network::from_raw(&raw(yaml))
                .map(|n| [n.quic, n.h2, n.http].map(|a| a.map(|a| a.to_string())));
            let expected = expected
                .map(|e| e.map(|a| a.map(str::to_owned)))
                .map_err(|k| k.to_owned());
            assert_eq!(got.map_err(|(k, _)| k), expected, "{yaml}");
        };
        check(
            "{}",
            Ok([
                Some("0.0.0.0:4506"),
                Some("0.0.0.0:4506"),
                Some("0.0.0.0:8080"),
            ]),
        );
        check(
            "interface: 127.0.0.2\nport: 1\nh2_port: 2\nhttp_enabled: false\n",
            Ok([Some("127.0.0.2:1"), Some("127.0.0.2:2"), None]),
        );
        check(
            "quic_enabled: false\nhttp_interface: ::1\nhttp_port: 0\n",
            Ok([None, Some("0.0.0.0:4506"), Some("[::1]:0")]),
        );
        check(
            "quic_enabled: false\nh2_enabled: false\n",
            Err("quic_enabled"),
        );
    }

    #[test]
    fn paired_keys_go_together_and_name_the_missing_one() {
        let check =
            |a: Option<u8>, b: Option<u8>, expected: Result<Option<(u8, u8)>, (&str, &str)>| {
                let expected = expected.map_err(|(k, m)| (k.to_owned(), m.to_owned()));
                assert_eq!(both((a, "a_file"), (b, "b_file")), expected);
            };
        check(Some(1), Some(2), Ok(Some((1, 2))));
        check(None, None, Ok(None));
        check(Some(1), None, Err(("b_file", "required with a_file")));
        check(None, Some(2), Err(("a_file", "required with b_file")));
    }

    #[test]
    fn limits_durations_and_returner_keys_are_checked_one_by_one() {
        let key = |r: Result<(), Invalid>| r.err().map(|(k, _)| k);
        let limits_of = |yaml: &str| key(limits(&raw(yaml), 4096).map(drop));
        assert_eq!(limits_of("{}"), None);
        assert_eq!(limits_of("idle_timeout: 0\n"), Some("idle_timeout".into()));
        assert_eq!(limits_of("keep_alive: -1\n"), Some("keep_alive".into()));
        assert_eq!(
            limits_of("max_handshakes: 0\n"),
            Some("max_handshakes".into())
        );
        assert_eq!(
            limits_of("handshake_queue_seconds: 2e9\n"),
            Some("handshake_queue_seconds".into())
        );
        let l = limits(&raw("max_concurrent_streams: 9\nkeep_alive: 1.5\n"), 4096).unwrap();
        assert_eq!(
            (l.max_message_size, l.max_concurrent_streams, l.keep_alive),
            (4096, 9, Duration::from_millis(1500))
        );
        assert_eq!(
            key(max_message_size(Some(1023)).map(drop)),
            Some("max_message_size".into())
        );
        assert_eq!(max_message_size(None), Ok(16 * 1024 * 1024));
        assert!(matches!(event_return(&raw("{}")), Ok(None)));
        assert_eq!(
            key(event_return(&raw("event_return: mysql,nosuch\n")).map(drop)),
            Some("event_return".into())
        );
        assert_eq!(
            key(event_return(&raw(
                "event_return: [mysql]\nevent_return_queue_max_seconds: .nan\n"
            ))
            .map(drop)),
            Some("event_return_queue_max_seconds".into())
        );
        let er = event_return(&raw("event_return: mysql, redis\nevent_return_queue: 5\n"))
            .unwrap()
            .unwrap();
        assert_eq!(
            (er.returners, er.queue),
            (vec!["mysql".into(), "redis".into()], 5)
        );
        assert_eq!(master_job_cache(Some("local_cache")), Ok(None));
        assert_eq!(
            key(master_job_cache(Some("syslog")).map(drop)),
            Some("master_job_cache".into())
        );
        assert_eq!(
            key(master_id(Some(" ".into())).map(drop)),
            Some("id".into())
        );
        assert_eq!(master_id(Some("m1".into())), Ok("m1".into()));
    }

    #[test]
    fn with_several_bad_keys_the_first_checked_is_named() {
        // The order keys are checked in is part of the behaviour: each line below makes the
        // next one's key the first bad one when removed.
        let mut lines = vec![
            "root_dir: relative",
            "quic_enabled: false\nh2_enabled: false",
            "log_level: loud",
            "job_cache: mongo",
            "master_cert_file: /c.pem",
            "max_message_size: 10",
            "cluster_nats: nats://127.0.0.1:4222",
            "hash_type: crc",
            "id: ' '",
            "minion_cert_days: 0",
            "idle_timeout: 0",
            "max_handshakes: 0",
            "event_return: nosuch",
            "master_job_cache: syslog",
            "timeout: 0",
            "gather_job_timeout: 0",
        ];
        let keys = [
            "root_dir",
            "quic_enabled",
            "log_level",
            "job_cache",
            "master_key_file",
            "max_message_size",
            "cluster_nats",
            "hash_type",
            "id",
            "minion_cert_days",
            "idle_timeout",
            "max_handshakes",
            "event_return",
            "master_job_cache",
            "timeout",
            "gather_job_timeout",
        ];
        for key in keys {
            let yaml = lines.join("\n") + "\n";
            let err = load(&yaml).unwrap_err();
            assert!(err.contains(&format!("key {key:?}:")), "{key}: {err}");
            lines.remove(0);
        }
        assert!(load(&lines.join("\n")).is_ok());
    }

    /// Salt 3007.8's `get_keep_jobs_seconds`: the deprecated `keep_jobs` (hours) counts only
    /// when `keep_jobs_seconds` is at its default and `keep_jobs` is not.
    #[test]
    fn keep_jobs_hours_as_salt() {
        assert_eq!(keep_jobs_seconds(None, None), 86400);
        assert_eq!(keep_jobs_seconds(None, Some(2)), 7200);
        assert_eq!(keep_jobs_seconds(Some(600), Some(2)), 600);
        assert_eq!(keep_jobs_seconds(Some(86400), Some(48)), 172800);
        assert_eq!(keep_jobs_seconds(Some(60), Some(24)), 60);
        assert_eq!(keep_jobs_seconds(None, Some(0)), 0);
    }
}
