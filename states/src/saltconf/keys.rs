//! The key table: what saltq does with every key of Salt 3007.8's master and minion config
//! (`DEFAULT_MASTER_OPTS`, `DEFAULT_MINION_OPTS`, the keys `VALID_OPTS` declares without a
//! default, and those its shipped `conf/master` and `conf/minion` document). A key is
//! *implemented* (a field of the daemon's `RawConfig`, or read from the minion's options as
//! Salt reads it), *accepted without effect* (with the reason), or *not yet* (accepted, with a
//! warning at start saying what saltq does instead). Any other key is an error naming the
//! closest known key. The tests check the table against the installed Salt package.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::{Daemon, LoadError, Loaded};

/// What saltq does with a key of Salt's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// It does what Salt's does: a `RawConfig` field (empty text), or read from the options
    /// where the text says.
    Implemented(&'static str),
    /// Accepted; it has no effect in saltq, for the reason given.
    NoEffect(&'static str),
    /// Accepted with a warning at start: not done yet; the text says what saltq does instead.
    NotYet(&'static str),
}

impl Kind {
    /// The word `saltq config check` prints for this kind.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Implemented(_) => "implemented",
            Kind::NoEffect(_) => "no effect",
            Kind::NotYet(_) => "not yet",
        }
    }

    /// The reason or the place, empty for a `RawConfig` field.
    pub fn text(self) -> &'static str {
        match self {
            Kind::Implemented(t) | Kind::NoEffect(t) | Kind::NotYet(t) => t,
        }
    }
}

/// Keys the loader itself reads (Salt's too): implemented for both daemons.
const LOADER_KEYS: &[&str] = &["include", "default_include"];

/// The table of `daemon`'s keys that are not `RawConfig` fields.
pub fn table(daemon: Daemon) -> &'static [(&'static [&'static str], Kind)] {
    match daemon {
        Daemon::Master => MASTER,
        Daemon::Minion => MINION,
    }
}

/// What `key` is for `daemon`, whose `RawConfig` has `fields` and which also takes the keys
/// `extra` accepts (returner options such as `mysql.host`); `None` for a key Salt does not
/// know either. A `RawConfig` field wins over the table.
pub fn classify(
    daemon: Daemon,
    key: &str,
    fields: &[&str],
    extra: &dyn Fn(&str) -> bool,
) -> Option<Kind> {
    if fields.contains(&key) || LOADER_KEYS.contains(&key) || extra(key) {
        return Some(Kind::Implemented(""));
    }
    let declared = table(daemon)
        .iter()
        .find(|(keys, _)| keys.contains(&key))
        .map(|(_, kind)| *kind);
    // `module.option` keys (`test.foo`, `mysql.host`) are modules' settings, any module's:
    // Salt's `config.get` reads them from the options.
    declared.or_else(|| {
        key.contains('.').then_some(match daemon {
            Daemon::Minion => Kind::Implemented(MODULE_OPTION),
            Daemon::Master => Kind::NoEffect(MODULE_OPTION_MASTER),
        })
    })
}

/// A minion's `module.option` key.
const MODULE_OPTION: &str = "a module's option (`module.key`), kept in the minion's options for \
     `config.get` and the module";

/// A master's `module.option` key other than a returner's.
const MODULE_OPTION_MASTER: &str = "a module's option (`module.key`): the master's modules read \
     only the returners' options";

/// The known key closest to `key` (Levenshtein distance at most a third of its length,
/// at least 2), for "did you mean"; a `RawConfig` field first on a tie.
pub fn closest(daemon: Daemon, key: &str, fields: &[&str]) -> Option<String> {
    let table = table(daemon)
        .iter()
        .flat_map(|(keys, _)| keys.iter().copied());
    let known = fields
        .iter()
        .copied()
        .chain(LOADER_KEYS.iter().copied())
        .chain(table);
    let limit = (key.chars().count() / 3).max(2);
    let mut best: Option<(usize, &str)> = None;
    for k in known {
        let d = distance(key, k);
        if d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, k));
        }
    }
    best.map(|(_, k)| k.to_owned())
}

/// Levenshtein distance between two keys.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// One key of a loaded config and what saltq does with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The key as written.
    pub key: String,
    /// The file that set it.
    pub file: PathBuf,
    /// What saltq does with it; `None`: unknown to Salt and saltq.
    pub kind: Option<Kind>,
    /// For an unknown key, the closest known one.
    pub closest: Option<String>,
}

/// Every key of a loaded config with its kind, in the order the keys were set.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The daemon whose config this is.
    pub entries: Vec<Entry>,
}

impl Report {
    /// Classifies every key of `loaded`.
    pub fn new(
        daemon: Daemon,
        loaded: &Loaded,
        fields: &[&str],
        extra: &dyn Fn(&str) -> bool,
    ) -> Report {
        let entries = loaded
            .opts
            .keys()
            .map(|key| {
                let kind = classify(daemon, key, fields, extra);
                Entry {
                    key: key.clone(),
                    file: loaded.origin_of(key).to_path_buf(),
                    kind,
                    closest: match kind {
                        None => closest(daemon, key, fields),
                        Some(_) => None,
                    },
                }
            })
            .collect();
        Report { entries }
    }

    /// The first unknown key as an error naming its file and the closest known key.
    pub fn check(&self, daemon: Daemon) -> Result<(), LoadError> {
        match self.entries.iter().find(|e| e.kind.is_none()) {
            None => Ok(()),
            Some(e) => Err(LoadError {
                path: e.file.clone(),
                message: unknown_message(daemon, e),
                io: None,
                key: Some(e.key.clone()),
            }),
        }
    }

    /// The keys with a warning at start: (key, file, what saltq does instead).
    pub fn not_yet(&self) -> impl Iterator<Item = &Entry> {
        self.entries
            .iter()
            .filter(|e| matches!(e.kind, Some(Kind::NotYet(_))))
    }

    /// One line per key, as `saltq config check` prints them: `key: kind (reason) [file]`.
    pub fn lines(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| {
                let what = match e.kind {
                    None => format!(
                        "unknown{}",
                        e.closest
                            .as_deref()
                            .map(|c| format!(" (did you mean `{c}`?)"))
                            .unwrap_or_default()
                    ),
                    Some(k) if k.text().is_empty() => k.label().to_owned(),
                    Some(k) => format!("{} ({})", k.label(), k.text()),
                };
                format!("{}: {what} [{}]", e.key, e.file.display())
            })
            .collect()
    }
}

/// "unknown key `prot`: Salt 3007.8's master has no such key, nor saltq (did you mean `port`?)".
fn unknown_message(daemon: Daemon, e: &Entry) -> String {
    let mut m = format!(
        "unknown key `{}`: neither Salt 3007.8's {} nor saltq's has it",
        e.key,
        daemon.name()
    );
    if let Some(c) = &e.closest {
        m.push_str(&format!(" (did you mean `{c}`?)"));
    }
    m
}

/// Splits the merged keys: the `RawConfig` fields (and the loader's and table's keys
/// the minion keeps in its options) for the typed config, and the keys `extra` takes apart.
/// Table keys are left out of the first map: `RawConfig` refuses keys it lacks.
pub fn partition(
    loaded: &Loaded,
    fields: &[&str],
    extra: &dyn Fn(&str) -> bool,
) -> (Map<String, Value>, Map<String, Value>) {
    let mut typed = Map::new();
    let mut apart = Map::new();
    for (k, v) in &loaded.opts {
        if fields.contains(&k.as_str()) {
            typed.insert(k.clone(), v.clone());
        } else if extra(k) {
            apart.insert(k.clone(), v.clone());
        }
    }
    (typed, apart)
}

/// Deserializes `typed` into `T`; an error names the file that set the key at fault.
pub fn typed<T: serde::de::DeserializeOwned>(
    loaded: &Loaded,
    typed: Map<String, Value>,
) -> Result<T, LoadError> {
    serde_path_to_error::deserialize(Value::Object(typed)).map_err(
        |e: serde_path_to_error::Error<serde_json::Error>| {
            let segments: Vec<String> = e.path().iter().map(ToString::to_string).collect();
            let top = segments.first().cloned().unwrap_or_default();
            let mut message = e
                .inner()
                .to_string()
                .replace("unknown field", "unknown key");
            if message.starts_with("unknown key") && segments.len() > 1 {
                let map = segments[..segments.len() - 1].join(".");
                message = format!("under `{map}`: {message}");
            }
            LoadError {
                path: loaded.origin_of(&top).to_path_buf(),
                message,
                io: None,
                key: Some(e.path().to_string()).filter(|k| k != "."),
            }
        },
    )
}

// Generated once from Salt 3007.8's tables and then kept by hand; the tests check it
// against the installed Salt package (never copied here).

const TRANSPORT: &str = "Salt's ZeroMQ/TCP transport tuning: saltq speaks gRPC over QUIC and HTTP/2 with mutual TLS (`port`, `idle_timeout`, `keep_alive`, `max_message_size` tune it)";
const PROCESS: &str = "Salt's process model: saltq is one process with an async runtime, no worker processes or queues to size or nice";
const CRYPTO: &str = "Salt's RSA keys and AES sessions: saltq authenticates both ends with mutual TLS certificates (`pki_dir`, `master_finger`, `ca_file`)";
const LOGGING: &str = "saltq does not rotate its log (logrotate does) and has no `log_fmt_jid`";
const FILESERVER: &str = "the fileserver serves `file_roots` only (Salt's `roots` backend); other backends and their settings are not read";
const WINDOWS: &str = "the Windows package repository (winrepo): saltq minions run on Linux";
const ENGINES: &str = "no Salt engines run";
const MODULES: &str = "saltq runs its own modules; only `module_dirs` (minion) and `runner_dirs` (master) add external ones";
const SSH: &str = "there is no salt-ssh; minions connect to the master";
const THORIUM: &str = "there is no Thorium reactor; the `reactor` runs";
const PILLAR_CACHE: &str =
    "pillar is cached in memory and recompiled when its files or the minion's grains change";
const PILLAR_DECRYPT: &str = "only the `gpg` renderer in a file's shebang decrypts pillar";
const GPG_MUST: &str = "an undecryptable value is always an error, as Salt 3007's default (`true`)";
const PIDFILE: &str = "no pid file is written; the service manager tracks the process";
const USER: &str = "the daemon runs as the user that started it";
const OUTPUT: &str =
    "the CLI's output is set by its flags (`--out`, `--state-output`, `--state-verbose`)";
const PROXY: &str = "proxy minions: saltq has none";
const ESKY: &str = "Salt's esky self-update: saltq is updated by its package";
const SNAPPER: &str = "no snapper snapshots around state runs";
const GRAINS: &str =
    "grains are computed at start and by `saltutil.refresh_grains`, always the full set";
const CONF_FILE: &str = "set by Salt itself to the file read; saltq knows its file";
const PEER: &str = "minions cannot publish jobs (Salt's peer communication)";
const FILE_RECV: &str = "`cp.push` is not supported: the master receives no files from minions";
const MASTER_TOPS: &str =
    "no master_tops or external job cache: the top file and the job cache are saltq's own";
const CACHE: &str =
    "Salt's minion data cache backends: saltq keeps minion data (grains, mine) in its own store";
const JOBS: &str = "the job cache keeps jobs `keep_jobs_seconds` and has no archive; jids are Salt's format, unique per master";
const MAINTENANCE: &str = "Salt's maintenance process: saltq's housekeeping runs on its own timers";
const AUTH: &str =
    "access is `publisher_acl`, `runner_acl`, `client_acl` and salt-api's `external_auth`";
const KEYS: &str = "minion keys follow `auto_accept`, `autosign_file` and `saltq key`; certificates are renewed, not rotated";
const MASTER_STATES: &str = "the master's state and template settings are Salt's defaults (the minion's own options are read)";
const MASTER_MODULES: &str =
    "the master runs runners and orchestration with its built-in modules and `file_roots`";
const OPEN_FILES: &str = "the open-file soft limit is always raised to the hard limit at start";
const PING_ON_ROTATE: &str = "Salt pings every minion after rotating its AES session key so they re-authenticate at once; saltq has no session key to rotate (each connection is its own TLS session, and a minion's certificate renewal is its own), so nothing needs a ping";
const IPV6_MASTER: &str = "saltq's listeners on `interface: '::'` are always dual-stack (IPv6 and IPv4-mapped), what Salt's `ipv6: true` turns on; `interface` alone chooses the family";
const MISC_MASTER: &str = "not supported by saltq's master";
const SYNDIC: &str =
    "Salt's syndic forwarding queues: saltq's syndic forwards each event and return as it comes";
const OPTS: &str = "read from the minion's options by the state engine and modules, as Salt's";
const MINION_FILESERVER: &str = "a masterless minion serves every file of its `file_roots`";
const MASTER_KEY: &str = "a master setting: the minion has no use for it (salt-minion neither)";
const MINION_ID: &str = "the minion id is `id`, or the cached or generated one (the host's FQDN, with `minion_id_*` and `append_domain`); no function computes it and directories do not get it appended";
const MINION_MASTER: &str =
    "masters are dialed in the order given (`random_master` shuffles), at start";
const MINION_MISC: &str = "not supported by saltq's minion";
const OTHER: &str = "a key of the other daemon: it has no use here (Salt's neither)";
const REACTOR_MINION: &str = "no reactor on the minion; the master's `reactor` runs";

/// The keys of Salt 3007.8's master that are not `RawConfig` fields, by what saltq does with them.
pub const MASTER: &[(&[&str], Kind)] = &[
    (
        &[
            "add_proxymodule_to_opts",
            "no_proxy",
            "proxy_always_alive",
            "proxy_deep_merge_pillar_in_opts",
            "proxy_keep_alive",
            "proxy_keep_alive_interval",
            "proxy_merge_grains_in_module",
            "proxy_merge_pillar_in_opts",
            "proxy_merge_pillar_in_opts_strategy",
            "proxy_mines_pillar",
        ],
        Kind::NoEffect(PROXY),
    ),
    (
        &[
            "allow_minion_key_revoke",
            "autoreject_file",
            "autosign_grains_dir",
            "max_minions",
        ],
        Kind::NotYet(KEYS),
    ),
    (&["ping_on_rotate"], Kind::NoEffect(PING_ON_ROTATE)),
    (&["ipv6"], Kind::NoEffect(IPV6_MASTER)),
    (
        &[
            "archive_jobs",
            "job_cache_store_endtime",
            "runner_returns",
            "unique_jid",
        ],
        Kind::NotYet(JOBS),
    ),
    (
        &[
            "auth_events",
            "client_acl_verify",
            "django_auth_path",
            "django_auth_settings",
            "eauth_acl_module",
            "eauth_tokens",
            "keep_acl_in_token",
            "netapi_allow_raw_shell",
            "permissive_acl",
            "publisher_acl_blacklist",
            "sudo_acl",
            "token_expire_user_override",
        ],
        Kind::NotYet(AUTH),
    ),
    (
        &[
            "auth_mode",
            "cache_sreqs",
            "cluster_mode",
            "detect_remote_minions",
            "discovery",
            "dummy_pub",
            "event_match_type",
            "http_connect_timeout",
            "http_max_body",
            "http_request_timeout",
            "ipc_mode",
            "ipc_write_buffer",
            "local",
            "max_event_size",
            "pub_hwm",
            "publish_port",
            "publish_session",
            "publish_signing_algorithm",
            "remote_minions_port",
            "request_server_aes_session",
            "request_server_ttl",
            "ret_port",
            "sock_dir",
            "sock_pool_size",
            "ssl",
            "tcp_keepalive",
            "tcp_keepalive_cnt",
            "tcp_keepalive_idle",
            "tcp_keepalive_intvl",
            "tcp_master_pub_port",
            "tcp_master_publish_pull",
            "tcp_master_pull_port",
            "tcp_master_workers",
            "transport",
            "zmq_backlog",
            "zmq_filtering",
            "zmq_monitor",
        ],
        Kind::NoEffect(TRANSPORT),
    ),
    (
        &[
            "batch_safe_limit",
            "batch_safe_size",
            "pass_dir",
            "pass_gnupghome",
            "pass_strict_fetch",
            "pass_to_ext_pillars",
            "pass_variable_prefix",
            "range_server",
            "serial",
            "ssh_list_nodegroups",
        ],
        Kind::NotYet(MISC_MASTER),
    ),
    (
        &[
            "cache",
            "enforce_mine_cache",
            "memcache_debug",
            "memcache_expire_seconds",
            "memcache_full_cleanup",
            "memcache_max_items",
            "minion_data_cache",
            "minion_data_cache_events",
            "preserve_minion_cache",
        ],
        Kind::NoEffect(CACHE),
    ),
    (
        &[
            "clean_dynamic_modules",
            "extension_modules",
            "extmod_blacklist",
            "extmod_whitelist",
            "min_extra_mods",
            "outputter_dirs",
            "thin_extra_mods",
            "utils_dirs",
        ],
        Kind::NotYet(MODULES),
    ),
    (
        &["color", "output", "output_file", "show_jid", "show_timeout"],
        Kind::NotYet(OUTPUT),
    ),
    (
        &[
            "cluster_key_pass",
            "cluster_peers",
            "cluster_pool_port",
            "drop_messages_signature_fail",
            "fips_mode",
            "key_cache",
            "key_logfile",
            "key_pass",
            "keysize",
            "master_pubkey_signature",
            "master_sign_key_name",
            "master_sign_pubkey",
            "master_use_pubkey_signature",
            "permissive_pki_access",
            "require_minion_sign_messages",
            "rotate_aes_key",
            "sign_pub_messages",
            "signing_key_pass",
        ],
        Kind::NoEffect(CRYPTO),
    ),
    (
        &[
            "con_cache",
            "loop_interval",
            "maintenance_interval",
            "master_stats",
            "master_stats_event_iter",
            "search",
        ],
        Kind::NoEffect(MAINTENANCE),
    ),
    (&["conf_file"], Kind::NoEffect(CONF_FILE)),
    (
        &[
            "bootstrap_delay",
            "cython_enable",
            "event_publisher_niceness",
            "event_return_niceness",
            "fileserver_update_niceness",
            "maintenance_niceness",
            "mworker_niceness",
            "mworker_queue_niceness",
            "optimization_order",
            "pub_server_niceness",
            "queue_dirs",
            "reactor_niceness",
            "reactor_refresh_interval",
            "reactor_worker_hwm",
            "req_server_niceness",
            "sqlite_queue_dir",
            "worker_threads",
        ],
        Kind::NoEffect(PROCESS),
    ),
    (
        &[
            "decrypt_pillar",
            "decrypt_pillar_default",
            "decrypt_pillar_delimiter",
            "decrypt_pillar_renderers",
            "gpg_cache",
            "gpg_cache_backend",
            "gpg_cache_ttl",
        ],
        Kind::NotYet(PILLAR_DECRYPT),
    ),
    (
        &[
            "default_top",
            "env_order",
            "failhard",
            "jinja_env",
            "jinja_lstrip_blocks",
            "jinja_sls_env",
            "jinja_trim_blocks",
            "lock_saltenv",
            "pillar_opts",
            "pillar_raise_on_missing",
            "pillar_version",
            "renderer_blacklist",
            "renderer_whitelist",
            "saltenv",
            "state_aggregate",
            "state_auto_order",
            "state_events",
            "state_top",
            "state_top_saltenv",
            "test",
        ],
        Kind::NotYet(MASTER_STATES),
    ),
    (
        &[
            "enable_gpu_grains",
            "enable_lspci",
            "features",
            "grains_refresh_pre_exec",
        ],
        Kind::NotYet(GRAINS),
    ),
    (
        &[
            "enable_ssh_minions",
            "regen_thin",
            "roster",
            "roster_file",
            "rosters",
            "ssh_config_file",
            "ssh_identities_only",
            "ssh_log_file",
            "ssh_minion_opts",
            "ssh_passwd",
            "ssh_port",
            "ssh_priv_passwd",
            "ssh_run_pre_flight",
            "ssh_scan_ports",
            "ssh_scan_timeout",
            "ssh_sudo",
            "ssh_sudo_user",
            "ssh_timeout",
            "ssh_update_roster",
            "ssh_use_home_key",
            "ssh_user",
        ],
        Kind::NotYet(SSH),
    ),
    (&["engines"], Kind::NotYet(ENGINES)),
    (
        &["ext_job_cache", "master_tops", "master_tops_first"],
        Kind::NotYet(MASTER_TOPS),
    ),
    (
        &[
            "file_buffer_size",
            "file_client",
            "master_roots",
            "module_dirs",
            "salt_cp_chunk_size",
        ],
        Kind::NotYet(MASTER_MODULES),
    ),
    (
        &["file_recv", "file_recv_max_size"],
        Kind::NotYet(FILE_RECV),
    ),
    (
        &[
            "fileserver_backend",
            "fileserver_events",
            "fileserver_followsymlinks",
            "fileserver_interval",
            "fileserver_verify_config",
            "git_pillar_base",
            "git_pillar_branch",
            "git_pillar_env",
            "git_pillar_fallback",
            "git_pillar_global_lock",
            "git_pillar_includes",
            "git_pillar_insecure_auth",
            "git_pillar_passphrase",
            "git_pillar_password",
            "git_pillar_privkey",
            "git_pillar_provider",
            "git_pillar_pubkey",
            "git_pillar_refspecs",
            "git_pillar_root",
            "git_pillar_ssl_verify",
            "git_pillar_update_interval",
            "git_pillar_user",
            "git_pillar_verify_config",
            "gitfs_base",
            "gitfs_disable_saltenv_mapping",
            "gitfs_fallback",
            "gitfs_global_lock",
            "gitfs_insecure_auth",
            "gitfs_mountpoint",
            "gitfs_passphrase",
            "gitfs_password",
            "gitfs_privkey",
            "gitfs_provider",
            "gitfs_pubkey",
            "gitfs_ref_types",
            "gitfs_refspecs",
            "gitfs_remotes",
            "gitfs_root",
            "gitfs_saltenv",
            "gitfs_saltenv_blacklist",
            "gitfs_saltenv_whitelist",
            "gitfs_ssl_verify",
            "gitfs_update_interval",
            "gitfs_user",
            "hgfs_base",
            "hgfs_branch_method",
            "hgfs_mountpoint",
            "hgfs_remotes",
            "hgfs_root",
            "hgfs_saltenv_blacklist",
            "hgfs_saltenv_whitelist",
            "hgfs_update_interval",
            "minionfs_blacklist",
            "minionfs_env",
            "minionfs_mountpoint",
            "minionfs_update_interval",
            "minionfs_whitelist",
            "pillar_gitfs_ssl_verify",
            "roots_update_interval",
            "s3fs_update_interval",
            "svnfs_branches",
            "svnfs_mountpoint",
            "svnfs_remotes",
            "svnfs_root",
            "svnfs_saltenv_blacklist",
            "svnfs_saltenv_whitelist",
            "svnfs_tags",
            "svnfs_trunk",
            "svnfs_update_interval",
        ],
        Kind::NotYet(FILESERVER),
    ),
    (&["gpg_decrypt_must_succeed"], Kind::NoEffect(GPG_MUST)),
    (
        &[
            "log_fmt_jid",
            "log_rotate_backup_count",
            "log_rotate_max_bytes",
        ],
        Kind::NotYet(LOGGING),
    ),
    (&["max_open_files"], Kind::NoEffect(OPEN_FILES)),
    (&["peer", "peer_run"], Kind::NotYet(PEER)),
    (&["pidfile", "syndic_pidfile"], Kind::NotYet(PIDFILE)),
    (
        &["pillar_cache", "pillar_cache_backend", "pillar_cache_ttl"],
        Kind::NotYet(PILLAR_CACHE),
    ),
    (
        &[
            "syndic_event_forward_timeout",
            "syndic_jid_forward_cache_hwm",
        ],
        Kind::NoEffect(SYNDIC),
    ),
    (
        &[
            "thorium_interval",
            "thorium_roots",
            "thorium_top",
            "thoriumenv",
        ],
        Kind::NotYet(THORIUM),
    ),
    (&["verify_env"], Kind::NotYet(USER)),
    (
        &[
            "winrepo_branch",
            "winrepo_cachefile",
            "winrepo_dir",
            "winrepo_dir_ng",
            "winrepo_fallback",
            "winrepo_insecure_auth",
            "winrepo_mastercachefile",
            "winrepo_passphrase",
            "winrepo_password",
            "winrepo_privkey",
            "winrepo_pubkey",
            "winrepo_refspecs",
            "winrepo_remotes",
            "winrepo_remotes_ng",
            "winrepo_ssl_verify",
            "winrepo_user",
        ],
        Kind::NoEffect(WINDOWS),
    ),
    (&["rest_timeout", "return"], Kind::NoEffect(OTHER)),
];

/// The keys of Salt 3007.8's minion that are not `RawConfig` fields, by what saltq does with them.
pub const MINION: &[(&[&str], Kind)] = &[
    (
        &[
            "acceptance_wait_time_max",
            "auth_safemode",
            "auth_timeout",
            "auth_tries",
            "cache_sreqs",
            "cluster_mode",
            "discovery",
            "event_match_type",
            "http_connect_timeout",
            "http_max_body",
            "http_request_timeout",
            "ipc_mode",
            "ipc_write_buffer",
            "local",
            "master_tries",
            "master_uri_format",
            "max_event_size",
            "minion_jid_queue_hwm",
            "ping_interval",
            "pub_ret",
            "rejected_retry",
            "request_channel_timeout",
            "request_channel_tries",
            "resolve_dns_fallback",
            "restart_on_error",
            "retry_dns_count",
            "return_retry_timer",
            "return_retry_timer_max",
            "return_retry_tries",
            "sock_dir",
            "sock_pool_size",
            "source_address",
            "source_interface_name",
            "source_publish_port",
            "source_ret_port",
            "ssl",
            "tcp_authentication_retries",
            "tcp_keepalive",
            "tcp_keepalive_cnt",
            "tcp_keepalive_idle",
            "tcp_keepalive_intvl",
            "tcp_pub_port",
            "tcp_pull_port",
            "tcp_reconnect_backoff",
            "zmq_filtering",
            "zmq_monitor",
        ],
        Kind::NoEffect(TRANSPORT),
    ),
    (
        &[
            "add_proxymodule_to_opts",
            "no_proxy",
            "proxy_always_alive",
            "proxy_deep_merge_pillar_in_opts",
            "proxy_host",
            "proxy_keep_alive",
            "proxy_keep_alive_interval",
            "proxy_merge_grains_in_module",
            "proxy_merge_pillar_in_opts",
            "proxy_merge_pillar_in_opts_strategy",
            "proxy_mines_pillar",
            "proxy_password",
            "proxy_port",
            "proxy_username",
        ],
        Kind::NoEffect(PROXY),
    ),
    (
        &[
            "always_verify_signature",
            "autosign_timeout",
            "encryption_algorithm",
            "fips_mode",
            "key_logfile",
            "keysize",
            "master_sign_key_name",
            "minion_sign_messages",
            "permissive_pki_access",
            "sign_pub_messages",
            "signing_algorithm",
            "verify_master_pubkey_sign",
        ],
        Kind::NoEffect(CRYPTO),
    ),
    (
        &["append_minionid_config_dirs", "id_function"],
        Kind::NotYet(MINION_ID),
    ),
    (
        &[
            "auto_accept",
            "autosign_grains",
            "event_return_queue_max_seconds",
            "interface",
            "master_tops_first",
            "publisher_acl",
            "publisher_acl_blacklist",
            "reactor_refresh_interval",
            "reactor_worker_hwm",
            "reactor_worker_threads",
            "syndic_finger",
            "thoriumenv",
        ],
        Kind::NoEffect(MASTER_KEY),
    ),
    (
        &[
            "autoload_dynamic_modules",
            "clean_dynamic_modules",
            "disable_modules",
            "disable_returners",
            "enable_zip_modules",
            "extension_modules",
            "extmod_blacklist",
            "extmod_whitelist",
            "grains_dirs",
            "providers",
            "render_dirs",
            "returner_dirs",
            "utils_dirs",
            "whitelist_modules",
        ],
        Kind::NotYet(MODULES),
    ),
    (
        &[
            "backup_mode",
            "cmd_safe",
            "default_top",
            "disabled_requisites",
            "env_order",
            "failhard",
            "pillar_includes_override_sls",
            "pillar_merge_lists",
            "pillar_source_merging_strategy",
            "pillarenv",
            "pillarenv_from_saltenv",
            "renderer",
            "saltenv",
            "state_auto_order",
            "state_events",
            "state_queue",
            "state_top",
            "state_top_saltenv",
            "states_dirs",
            "top_file_merging_strategy",
        ],
        Kind::Implemented(OPTS),
    ),
    (
        &[
            "cache",
            "cache_jobs",
            "ext_job_cache",
            "file_buffer_size",
            "file_recv",
            "file_recv_max_size",
            "global_state_conditions",
            "grains_refresh_every",
            "lock_saltenv",
            "open_mode",
            "outputter_dirs",
            "pass_to_ext_pillars",
            "password",
            "pillar_opts",
            "pillar_raise_on_missing",
            "range_server",
            "renderer_blacklist",
            "renderer_whitelist",
            "salt_cp_chunk_size",
            "ssh_merge_pillar",
            "state_aggregate",
            "test",
            "unique_jid",
            "username",
        ],
        Kind::NotYet(MINION_MISC),
    ),
    (
        &[
            "color",
            "output",
            "state_compress_ids",
            "state_output",
            "state_output_diff",
            "state_output_pct",
            "state_output_profile",
            "state_verbose",
        ],
        Kind::NotYet(OUTPUT),
    ),
    (&["conf_file"], Kind::NoEffect(CONF_FILE)),
    (
        &[
            "bootstrap_delay",
            "cython_enable",
            "enable_legacy_startup_events",
            "modules_max_memory",
            "multifunc_ordered",
            "multiprocessing",
            "optimization_order",
            "process_count_max",
            "reactor_niceness",
            "start_event_grains",
        ],
        Kind::NoEffect(PROCESS),
    ),
    (
        &[
            "decrypt_pillar",
            "decrypt_pillar_default",
            "decrypt_pillar_delimiter",
            "decrypt_pillar_renderers",
            "gpg_cache",
            "gpg_cache_backend",
            "gpg_cache_ttl",
        ],
        Kind::NotYet(PILLAR_DECRYPT),
    ),
    (
        &[
            "enable_fqdns_grains",
            "enable_gpu_grains",
            "enable_lspci",
            "features",
            "grains_blacklist",
            "grains_cache",
            "grains_cache_expiration",
            "grains_deep_merge",
            "grains_refresh_pre_exec",
        ],
        Kind::NotYet(GRAINS),
    ),
    (&["engines"], Kind::NotYet(ENGINES)),
    (
        &[
            "file_ignore_glob",
            "file_ignore_regex",
            "fileserver_ignoresymlinks",
        ],
        Kind::NotYet(MINION_FILESERVER),
    ),
    (
        &[
            "fileserver_backend",
            "fileserver_followsymlinks",
            "git_pillar_base",
            "git_pillar_branch",
            "git_pillar_env",
            "git_pillar_fallback",
            "git_pillar_global_lock",
            "git_pillar_includes",
            "git_pillar_insecure_auth",
            "git_pillar_passphrase",
            "git_pillar_password",
            "git_pillar_privkey",
            "git_pillar_pubkey",
            "git_pillar_refspecs",
            "git_pillar_root",
            "git_pillar_ssl_verify",
            "git_pillar_update_interval",
            "git_pillar_user",
            "gitfs_base",
            "gitfs_disable_saltenv_mapping",
            "gitfs_fallback",
            "gitfs_global_lock",
            "gitfs_insecure_auth",
            "gitfs_mountpoint",
            "gitfs_passphrase",
            "gitfs_password",
            "gitfs_privkey",
            "gitfs_pubkey",
            "gitfs_ref_types",
            "gitfs_refspecs",
            "gitfs_remotes",
            "gitfs_root",
            "gitfs_saltenv",
            "gitfs_saltenv_blacklist",
            "gitfs_saltenv_whitelist",
            "gitfs_ssl_verify",
            "gitfs_update_interval",
            "gitfs_user",
            "hgfs_update_interval",
            "minionfs_update_interval",
            "roots_update_interval",
            "s3fs_update_interval",
            "svnfs_update_interval",
        ],
        Kind::NotYet(FILESERVER),
    ),
    (&["gpg_decrypt_must_succeed"], Kind::NoEffect(GPG_MUST)),
    (
        &[
            "log_fmt_jid",
            "log_rotate_backup_count",
            "log_rotate_max_bytes",
        ],
        Kind::NotYet(LOGGING),
    ),
    (
        &[
            "master_failback_interval",
            "master_shuffle",
            "random_startup_delay",
            "use_master_when_local",
        ],
        Kind::NotYet(MINION_MASTER),
    ),
    (
        &[
            "minion_pillar_cache",
            "pillar_cache",
            "pillar_cache_backend",
            "pillar_cache_ttl",
        ],
        Kind::NotYet(PILLAR_CACHE),
    ),
    (
        &[
            "minion_restart_command",
            "update_restart_services",
            "update_url",
        ],
        Kind::NoEffect(ESKY),
    ),
    (&["pidfile"], Kind::NotYet(PIDFILE)),
    (
        &["snapper_states", "snapper_states_config"],
        Kind::NotYet(SNAPPER),
    ),
    (&["ssh_run_pre_flight"], Kind::NotYet(SSH)),
    (&["sudo_user", "user", "verify_env"], Kind::NotYet(USER)),
    (
        &["thorium_interval", "thorium_roots", "thorium_top"],
        Kind::NotYet(THORIUM),
    ),
    (
        &[
            "win_repo_cachefile",
            "winrepo_branch",
            "winrepo_cache_expire_max",
            "winrepo_cache_expire_min",
            "winrepo_cachefile",
            "winrepo_dir",
            "winrepo_dir_ng",
            "winrepo_fallback",
            "winrepo_insecure_auth",
            "winrepo_passphrase",
            "winrepo_password",
            "winrepo_privkey",
            "winrepo_pubkey",
            "winrepo_refspecs",
            "winrepo_remotes",
            "winrepo_remotes_ng",
            "winrepo_source_dir",
            "winrepo_ssl_verify",
            "winrepo_user",
        ],
        Kind::NoEffect(WINDOWS),
    ),
    (&["reactor"], Kind::NotYet(REACTOR_MINION)),
    (&["rest_timeout"], Kind::NoEffect(OTHER)),
];

/// Salt's keys (`salt_keys`) that have no declared kind for `daemon` (no `RawConfig` field
/// among `fields`, no table entry): what the table must gain when Salt gains a key.
pub fn undeclared<'a>(daemon: Daemon, fields: &[&str], salt_keys: &[&'a str]) -> Vec<&'a str> {
    salt_keys
        .iter()
        .copied()
        .filter(|k| classify(daemon, k, fields, &|_| false).is_none())
        .collect()
}

/// Table keys that are wrong for `daemon`: unknown to Salt (`salt_keys`), or `RawConfig`
/// fields too (implemented since: the table entry must go).
pub fn stale(daemon: Daemon, fields: &[&str], salt_keys: &[&str]) -> Vec<String> {
    table(daemon)
        .iter()
        .flat_map(|(keys, _)| keys.iter())
        .filter_map(|k| {
            if fields.contains(k) {
                Some(format!(
                    "{k} (a RawConfig field now: drop it from the table)"
                ))
            } else if !salt_keys.contains(k) {
                Some(format!("{k} (not a key of Salt 3007.8)"))
            } else {
                None
            }
        })
        .collect()
}
