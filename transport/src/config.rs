//! Loading YAML config files into typed structs, with errors that name the file, the key and
//! the problem, and map to Salt's exit codes.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;

/// Salt's exit code for bad usage or a bad config value (`EX_USAGE`).
pub const EX_USAGE: i32 = 64;
/// Salt's exit code when a service is unavailable (`EX_UNAVAILABLE`).
pub const EX_UNAVAILABLE: i32 = 69;
/// Salt's exit code when a file cannot be created (`EX_CANTCREAT`).
pub const EX_CANTCREAT: i32 = 73;
/// Salt's exit code for a permission problem (`EX_NOPERM`).
pub const EX_NOPERM: i32 = 77;
/// Salt's exit code when the configured `user` does not exist (`EX_NOUSER`).
pub const EX_NOUSER: i32 = 67;

/// A config file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid YAML, has an unknown key, or a value of the wrong type.
    #[error("invalid config file {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    /// A value is well-typed but not acceptable.
    #[error("invalid config file {path}: key {key:?}: {message}")]
    Value {
        path: PathBuf,
        key: String,
        message: String,
    },
}

impl ConfigError {
    /// The exit code Salt would use for this problem.
    pub fn exit_code(&self) -> i32 {
        match self {
            ConfigError::Read { source, .. }
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                EX_NOPERM
            }
            _ => EX_USAGE,
        }
    }
}

/// Reads `path` as YAML into `T`. A missing file gives `T::default()` unless `required`.
/// An empty file is the default too, as in Salt.
pub fn load_yaml<T: DeserializeOwned + Default>(
    path: &Path,
    required: bool,
) -> Result<T, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok(T::default()),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if text.trim().is_empty() {
        return Ok(T::default());
    }
    yaml_from_str(&text).map_err(|message| ConfigError::Invalid {
        path: path.to_path_buf(),
        message: message.replace("unknown field", "unknown key"),
    })
}

/// `serde_yaml_ng::from_str` with an error that says where: serde_yaml_ng reports a stream of
/// several documents without a place (`''a` is a document, then a syntax error at column 3),
/// so the documents are read one by one to find the first real error, or the line where a
/// second document starts.
pub fn yaml_from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let err = match serde_yaml_ng::from_str(text) {
        Ok(v) => return Ok(v),
        Err(e) if e.location().is_some() => return Err(placed(&e)),
        Err(e) => e,
    };
    // The document iterator repeats a syntax error forever: two documents tell enough.
    for document in serde_yaml_ng::Deserializer::from_str(text).take(2) {
        if let Err(e) = serde_yaml_ng::Value::deserialize(document)
            && e.location().is_some()
        {
            return Err(placed(&e));
        }
    }
    match second_document_line(text) {
        Some(line) => Err(format!(
            "expected a single document, but another one starts at line {line}"
        )),
        None => Err(err.to_string()),
    }
}

/// The error's text with its place: serde_yaml_ng leaves out line 1 column 1.
fn placed(e: &serde_yaml_ng::Error) -> String {
    let text = e.to_string();
    match e.location() {
        Some(l) if !text.contains(" at line ") => {
            format!("{text} at line {} column {}", l.line(), l.column())
        }
        _ => text,
    }
}

/// The line (from 1) of the marker (`---` or `...`) that ends the first document.
fn second_document_line(text: &str) -> Option<usize> {
    let is_marker = |l: &str| {
        ["---", "..."].iter().any(|m| {
            l.strip_prefix(m)
                .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t']))
        })
    };
    let content = |l: &str| !l.trim().is_empty() && !l.trim_start().starts_with('#');
    // Whether the first document has begun: content, or a `---` opening it.
    let mut started = false;
    for (n, line) in text.lines().enumerate() {
        if is_marker(line) {
            if started {
                return Some(n + 1);
            }
            started = line.starts_with("---");
        } else if content(line) {
            started = true;
        }
    }
    None
}

/// Reads `path` as YAML; keys for which `split` is true (e.g. returner options such as
/// `mysql.host`) are returned apart, the rest is deserialized into `T` (unknown keys refused).
pub fn load_yaml_split<T: DeserializeOwned + Default>(
    path: &Path,
    split: impl Fn(&str) -> bool,
) -> Result<(T, serde_json::Map<String, serde_json::Value>), ConfigError> {
    let value: Option<serde_yaml_ng::Value> = load_yaml(path, false)?;
    let Some(serde_yaml_ng::Value::Mapping(map)) = value else {
        return match value {
            None | Some(serde_yaml_ng::Value::Null) => Ok((T::default(), serde_json::Map::new())),
            Some(_) => Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                message: "the file must be a mapping of keys to values".into(),
            }),
        };
    };
    let mut rest = serde_yaml_ng::Mapping::new();
    let mut apart = serde_json::Map::new();
    for (k, v) in map {
        match k.as_str() {
            Some(key) if split(key) => {
                let json = serde_json::to_value(&v).map_err(|e| ConfigError::Value {
                    path: path.to_path_buf(),
                    key: key.to_owned(),
                    message: e.to_string(),
                })?;
                apart.insert(key.to_owned(), json);
            }
            _ => {
                rest.insert(k, v);
            }
        }
    }
    // A value deserializer knows no line numbers; the key path names the place instead.
    let typed = serde_path_to_error::deserialize(serde_yaml_ng::Value::Mapping(rest)).map_err(
        |e: serde_path_to_error::Error<serde_yaml_ng::Error>| {
            let key = e.path().to_string();
            let mut message = e
                .inner()
                .to_string()
                .replace("unknown field", "unknown key");
            // The path of an unknown key ends with the key itself. Inside a nested map, say
            // which map: a key nobody can see (an empty one) leaves nothing to search for.
            let segments: Vec<String> = e.path().iter().map(ToString::to_string).collect();
            if message.starts_with("unknown key") && segments.len() > 1 {
                let map = segments[..segments.len() - 1].join(".");
                message = format!("under `{map}`: {message}");
            }
            if key == "." || message.starts_with("under `") {
                ConfigError::Invalid {
                    path: path.to_path_buf(),
                    message,
                }
            } else {
                ConfigError::Value {
                    path: path.to_path_buf(),
                    key,
                    message,
                }
            }
        },
    )?;
    Ok((typed, apart))
}

/// Salt's `root_dir` rule: an absolute path is placed under `root_dir`, unless it already is.
pub fn rooted(root_dir: &Path, path: &Path) -> PathBuf {
    if root_dir == Path::new("/") || path.starts_with(root_dir) {
        return path.to_path_buf();
    }
    match path.strip_prefix("/") {
        Ok(rel) => root_dir.join(rel),
        Err(_) => root_dir.join(path),
    }
}

/// Sets up `tracing` with a Salt log level name (`warning`, `debug`, ...), as text or JSON lines.
pub fn init_tracing(level: &str, json: bool) {
    Logging::console(level, json).install();
}

/// As [`init_tracing`], with each kind of message (callsite) limited to
/// [`crate::lograte::RateLimit::DAEMON`]: for a daemon whose peers' input is logged, so that no
/// input repeated can fill its disk.
pub fn init_tracing_rate_limited(level: &str, json: bool) {
    Logging::console(level, json).rate_limited().install();
}

/// The outputs of a process's log, opened but not yet installed: a daemon opens its log file
/// (as root, owned by `user`), then drops its privileges, then installs the subscriber.
pub struct Logging {
    /// The console in JSON lines.
    json: bool,
    /// Limit each kind of message ([`crate::lograte`]).
    limit: bool,
    /// The console in a Salt format (`log_fmt_console`/`log_datefmt` set), else saltq's own.
    console: Option<crate::salt_log::SaltFormatLayer>,
    /// The console's levels with `log_granular_levels`.
    console_plan: crate::salt_log::LevelPlan,
    /// The log file or syslog (`log_file`), with its levels.
    file: Option<(crate::salt_log::SaltFormatLayer, crate::salt_log::LevelPlan)>,
}

type Base = tracing_subscriber::layer::Layered<
    Option<crate::lograte::RateLimitLayer>,
    tracing_subscriber::layer::Layered<tracing_subscriber::EnvFilter, tracing_subscriber::Registry>,
>;
type BoxedLayer = Box<dyn tracing_subscriber::Layer<Base> + Send + Sync>;

/// A per-output filter from a [`crate::salt_log::LevelPlan`]: decided once per callsite when
/// no granular level applies, per event otherwise (a `log` record shares its callsite).
/// The most verbose `tracing` level a Python level number lets through.
fn level_hint(handler: u32) -> tracing_subscriber::filter::LevelFilter {
    use tracing_subscriber::filter::LevelFilter;
    match handler {
        0..=5 => LevelFilter::TRACE,
        6..=10 => LevelFilter::DEBUG,
        11..=20 => LevelFilter::INFO,
        21..=30 => LevelFilter::WARN,
        31..=40 => LevelFilter::ERROR,
        _ => LevelFilter::OFF,
    }
}

fn plan_filter(
    plan: crate::salt_log::LevelPlan,
) -> impl tracing_subscriber::layer::Filter<Base> + Send + Sync + 'static {
    use crate::salt_log::python_level;
    use tracing::subscriber::Interest;
    let hint = level_hint(plan.handler);
    let on_event = plan.clone();
    tracing_subscriber::filter::DynFilterFn::new(move |meta, _| {
        on_event.enabled(meta.target(), python_level(meta.level()).0)
    })
    .with_callsite_filter(move |meta| {
        if python_level(meta.level()).0 < plan.handler {
            Interest::never()
        } else if plan.granular.is_empty() {
            Interest::always()
        } else {
            Interest::sometimes()
        }
    })
    .with_max_level_hint(hint)
}

impl Logging {
    /// The console only, at `level`, as saltq writes it (text or JSON lines).
    pub fn console(level: &str, json: bool) -> Logging {
        Logging {
            json,
            limit: false,
            console: None,
            console_plan: crate::salt_log::LogOptions::default().console_plan(level),
            file: None,
        }
    }

    /// The console and the outputs Salt's logging keys ask for; `owner` (uid, gid) is given
    /// the log file, as Salt's `verify_log_files` does for `user`. The error names the key.
    pub fn prepare(
        level: &str,
        json: bool,
        options: &crate::salt_log::LogOptions,
        owner: Option<(u32, u32)>,
    ) -> Result<Logging, String> {
        use crate::salt_log::{DEFAULT_DATEFMT, DEFAULT_FMT_CONSOLE, SaltFormatLayer};
        use std::io::IsTerminal;
        let mut logging = Logging::console(level, json);
        logging.console_plan = options.console_plan(level);
        if !json && (options.fmt_console.is_some() || options.datefmt.is_some()) {
            let fmt = options
                .fmt_console
                .as_deref()
                .unwrap_or(DEFAULT_FMT_CONSOLE);
            let datefmt = options.datefmt.as_deref().unwrap_or(DEFAULT_DATEFMT);
            let color = std::io::stderr().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            logging.console = Some(
                SaltFormatLayer::stderr(fmt, datefmt, color)
                    .map_err(|e| format!("log_fmt_console: {e}"))?,
            );
        }
        let file_level = options.level_logfile.as_deref().unwrap_or(level);
        if let Some(target) = &options.file
            && file_level != "quiet"
        {
            let layer = SaltFormatLayer::open(
                target,
                &options.fmt_logfile,
                &options.datefmt_logfile,
                owner,
            )
            .map_err(|e| format!("log_file: {e}"))?;
            logging.file = Some((layer, options.file_plan(level)));
        }
        Ok(logging)
    }

    /// Limits each kind of message ([`crate::lograte::RateLimit::DAEMON`]), for a daemon.
    pub fn rate_limited(mut self) -> Logging {
        self.limit = true;
        self
    }

    /// Installs the subscriber. `SALTQ_LOG` (an `EnvFilter` directive), when set, filters the
    /// console instead of `log_level` and `log_granular_levels`.
    pub fn install(self) {
        use tracing_subscriber::Layer;
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        let limit = self
            .limit
            .then(|| crate::lograte::RateLimitLayer::new(crate::lograte::RateLimit::DAEMON));
        // A global filter first, at the most verbose output's level (or SALTQ_LOG's), so that
        // events no output writes (quinn's per-packet trace lines) are never built and the rate
        // limit counts only what may be written; then the filters per output.
        let global =
            tracing_subscriber::EnvFilter::try_from_env("SALTQ_LOG").unwrap_or_else(|_| {
                let most = self
                    .file
                    .as_ref()
                    .map_or(self.console_plan.handler, |(_, p)| {
                        p.handler.min(self.console_plan.handler)
                    });
                tracing_subscriber::EnvFilter::new(level_hint(most).to_string())
            });
        let mut layers: Vec<BoxedLayer> = Vec::new();
        let env = tracing_subscriber::EnvFilter::try_from_env("SALTQ_LOG").ok();
        let console: BoxedLayer = match (self.console, self.json) {
            (Some(salt), _) => Box::new(salt),
            (None, true) => Box::new(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .json(),
            ),
            (None, false) => {
                Box::new(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
            }
        };
        layers.push(match env {
            Some(env) => Box::new(console.with_filter(env)),
            None => Box::new(console.with_filter(plan_filter(self.console_plan))),
        });
        if let Some((file, plan)) = self.file {
            layers.push(Box::new(file.with_filter(plan_filter(plan))));
        }
        let _ = tracing_subscriber::registry()
            .with(global)
            .with(limit)
            .with(layers)
            .try_init();
    }
}

/// The account a daemon becomes (Salt's `user`), looked up before anything is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    /// The user name.
    pub name: String,
    /// Its uid.
    pub uid: u32,
    /// Its primary gid.
    pub gid: u32,
    /// Its home directory (`HOME` after the switch).
    pub home: PathBuf,
    /// Its shell (`SHELL` after the switch).
    pub shell: PathBuf,
}

/// Salt's `check_user` decision for `user`: `None` when the process already runs as that
/// user (by effective uid), else the account; an unknown user is Salt's `EX_NOUSER` error.
pub fn run_as(user: &str) -> Result<Option<RunAs>, (i32, String)> {
    use nix::unistd::{User, geteuid};
    let current = User::from_uid(geteuid()).ok().flatten();
    if current.as_ref().is_some_and(|u| u.name == user) {
        return Ok(None);
    }
    match User::from_name(user) {
        Ok(Some(u)) => Ok(Some(RunAs {
            name: u.name,
            uid: u.uid.as_raw(),
            gid: u.gid.as_raw(),
            home: u.dir,
            shell: u.shell,
        })),
        _ => Err((
            EX_NOUSER,
            format!("failed to prepare the environment for user {user}: the user is not available"),
        )),
    }
}

impl RunAs {
    /// The (uid, gid) its files get.
    pub fn owner(&self) -> (u32, u32) {
        (self.uid, self.gid)
    }

    /// Salt's `verify_env`: each directory is created if missing and, when running as root,
    /// it and everything under it is given to the user, so that the daemon can still use them
    /// after [`RunAs::switch`].
    pub fn prepare_dirs(&self, dirs: &[PathBuf]) -> Result<(), String> {
        let root = nix::unistd::geteuid().is_root();
        for dir in dirs {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            if root {
                chown_tree(dir, self.uid, self.gid)?;
            }
        }
        Ok(())
    }

    /// Salt's `check_user` switch: the user's groups, its gid, then its uid, and `HOME`,
    /// `SHELL`, `USER`, `LOGNAME` set to the user's where they were set. Must be called while
    /// the process has a single thread (before the runtime and the log's threads start).
    #[allow(unsafe_code)]
    pub fn switch(&self) -> Result<(), String> {
        use nix::unistd::{Gid, Uid, initgroups, setgid, setuid};
        let fail = |e: nix::Error| {
            format!(
                "configured to run as user \"{}\" but unable to switch: {e}",
                self.name
            )
        };
        let name = std::ffi::CString::new(self.name.as_str()).map_err(|e| e.to_string())?;
        initgroups(&name, Gid::from_raw(self.gid)).map_err(fail)?;
        setgid(Gid::from_raw(self.gid)).map_err(fail)?;
        setuid(Uid::from_raw(self.uid)).map_err(fail)?;
        let vars = [
            ("HOME", self.home.as_os_str().to_owned()),
            ("SHELL", self.shell.as_os_str().to_owned()),
            ("USER", self.name.clone().into()),
            ("LOGNAME", self.name.clone().into()),
        ];
        for (var, value) in vars {
            if std::env::var_os(var).is_some() {
                // SAFETY: the caller promises a single thread: nothing reads the environment
                // while it is written.
                unsafe { std::env::set_var(var, value) };
            }
        }
        Ok(())
    }
}

/// Gives `path` and everything under it (not following links) to `uid`:`gid`.
fn chown_tree(path: &Path, uid: u32, gid: u32) -> Result<(), String> {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))
        .map_err(|e| format!("cannot give {} to uid {uid}: {e}", path.display()))?;
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if meta.is_dir() {
        let entries =
            std::fs::read_dir(path).map_err(|e| format!("cannot list {}: {e}", path.display()))?;
        for entry in entries.flatten() {
            chown_tree(&entry.path(), uid, gid)?;
        }
    }
    Ok(())
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = ctrl_c.await;
            return;
        }
    };
    tokio::select! {
        _ = ctrl_c => {}
        _ = term.recv() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Sample {
        port: u16,
    }

    #[derive(Debug, Default, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Outer {
        api: Sample,
    }

    /// Regression (found by the master's config property test): an unknown key inside a
    /// nested map was reported without the map, so an empty key named nothing at all.
    #[test]
    fn an_unknown_nested_key_names_its_map() {
        let dir = std::env::temp_dir().join(format!("saltq-cfgn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("master");
        for (text, want) in [
            (
                "api:
  '': null
",
                "under `api`: unknown key ``",
            ),
            (
                "api:
  prot: 1
",
                "under `api`: unknown key `prot`",
            ),
        ] {
            std::fs::write(&f, text).unwrap();
            let e = load_yaml_split::<Outer>(&f, |_| false)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want) && e.contains("master"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn errors_name_file_and_key() {
        let dir = std::env::temp_dir().join(format!("saltq-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("master");
        std::fs::write(&f, "prot: 1\n").unwrap();
        let e = load_yaml::<Sample>(&f, true).unwrap_err().to_string();
        assert!(
            e.contains("master") && e.contains("unknown key `prot`"),
            "{e}"
        );
        std::fs::write(&f, "port: abc\n").unwrap();
        let e = load_yaml::<Sample>(&f, true).unwrap_err().to_string();
        assert!(e.contains("port") && e.contains("invalid type"), "{e}");
        assert_eq!(
            load_yaml::<Sample>(&dir.join("none"), false).unwrap().port,
            0
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn split_loading_names_the_key() {
        let dir = std::env::temp_dir().join(format!("saltq-cfgs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("master");
        std::fs::write(&f, "port: many\nmysql.host: db\n").unwrap();
        let e = load_yaml_split::<Sample>(&f, |k| k.starts_with("mysql."))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("key \"port\"") && e.contains("invalid type"),
            "{e}"
        );
        std::fs::write(&f, "port: 7\nmysql.host: db\n").unwrap();
        let (s, apart) = load_yaml_split::<Sample>(&f, |k| k.starts_with("mysql.")).unwrap();
        assert_eq!(s.port, 7);
        assert_eq!(apart["mysql.host"], "db");
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Found by the master's pillar property tests: serde_yaml_ng says "more than one document
    /// is not supported" without a place, for a syntax error after a first scalar too.
    #[test]
    fn yaml_errors_say_where() {
        let e = yaml_from_str::<serde_yaml_ng::Value>(",").unwrap_err();
        assert_eq!(
            e,
            "did not find expected node content, while parsing a block node at line 1 column 1"
        );
        let e = yaml_from_str::<serde_yaml_ng::Value>("''a").unwrap_err();
        assert_eq!(
            e,
            "did not find expected <document start> at line 1 column 3"
        );
        let e = yaml_from_str::<serde_yaml_ng::Value>("a: 1\n---\nb: 2\n").unwrap_err();
        assert_eq!(
            e,
            "expected a single document, but another one starts at line 2"
        );
        let e = yaml_from_str::<serde_yaml_ng::Value>("--- a\n--- b\n").unwrap_err();
        assert_eq!(
            e,
            "expected a single document, but another one starts at line 2"
        );
        let e = yaml_from_str::<serde_yaml_ng::Value>("# c\n---\na: 1\n...\nb\n").unwrap_err();
        assert_eq!(
            e,
            "did not find expected <document start> at line 5 column 1"
        );
        let e = yaml_from_str::<serde_yaml_ng::Value>("# c\n---\na: 1\n...\n---\nb\n").unwrap_err();
        assert_eq!(
            e,
            "expected a single document, but another one starts at line 4"
        );
        assert_eq!(
            yaml_from_str::<serde_yaml_ng::Value>("---\na: 1\n").unwrap(),
            serde_yaml_ng::from_str::<serde_yaml_ng::Value>("a: 1").unwrap()
        );
    }

    /// Salt's `check_user`: the user the process already is needs no switch; a user the
    /// system lacks is `EX_NOUSER`, named.
    #[test]
    fn run_as_decides_as_salts_check_user() {
        let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
            .unwrap()
            .unwrap()
            .name;
        assert_eq!(run_as(&me), Ok(None));
        let (code, e) = run_as("no-such-user-h8").unwrap_err();
        assert_eq!(code, EX_NOUSER);
        assert!(
            e.contains("no-such-user-h8") && e.contains("not available"),
            "{e}"
        );
    }

    #[test]
    fn root_dir_prefixes_absolute_paths() {
        let r = Path::new("/tmp/r");
        assert_eq!(
            rooted(r, Path::new("/etc/saltq/pki")),
            Path::new("/tmp/r/etc/saltq/pki")
        );
        assert_eq!(rooted(r, Path::new("/tmp/r/x")), Path::new("/tmp/r/x"));
        assert_eq!(rooted(Path::new("/"), Path::new("/etc")), Path::new("/etc"));
    }
}
