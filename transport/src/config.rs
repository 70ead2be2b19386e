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
    init(level, json, None);
}

/// As [`init_tracing`], with each kind of message (callsite) limited to
/// [`crate::lograte::RateLimit::DAEMON`]: for a daemon whose peers' input is logged, so that no
/// input repeated can fill its disk.
pub fn init_tracing_rate_limited(level: &str, json: bool) {
    init(
        level,
        json,
        Some(crate::lograte::RateLimitLayer::new(
            crate::lograte::RateLimit::DAEMON,
        )),
    );
}

fn init(level: &str, json: bool, limit: Option<crate::lograte::RateLimitLayer>) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = match level {
        "quiet" => "off",
        "critical" | "error" => "error",
        "warning" => "warn",
        "info" | "profile" => "info",
        "debug" => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("SALTQ_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter));
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    // The filter first, so the limit counts only what would be written.
    let registry = tracing_subscriber::registry().with(filter).with(limit);
    if json {
        registry.with(fmt.json()).init();
    } else {
        registry.with(fmt).init();
    }
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
