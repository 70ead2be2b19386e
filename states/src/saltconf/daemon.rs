//! What both daemons do with their Salt config, with the daemon as a parameter: load it into
//! the daemon's `RawConfig` (refusing a key neither Salt nor saltq knows), turn the loader's
//! errors into the daemon's [`ConfigError`] naming the file that set the key, and print the
//! `--check-config` report. Each daemon keeps only its own fields and validation.

use std::path::Path;

use saltq_transport::config::ConfigError;
use serde_json::{Map, Value};

use super::{Daemon, LoadError, SaltConfig, struct_fields};

/// `DIR/master` (`DIR/minion`), its `*.d/*.conf` and `include`s merged as Salt 3007.8 merges
/// them, every key classified: the typed keys `T` (the daemon's `RawConfig`), the keys
/// `extra` takes apart (returner options), and the report. A key neither Salt nor saltq knows
/// is refused, naming its file and the closest known key.
pub fn load<T: serde::de::DeserializeOwned>(
    daemon: Daemon,
    dir: &Path,
    default_dir: &Path,
    extra: &dyn Fn(&str) -> bool,
) -> Result<(T, Map<String, Value>, SaltConfig), ConfigError> {
    let fields = struct_fields::<T>();
    let salt = SaltConfig::read(daemon, dir, default_dir, fields, extra).map_err(config_error)?;
    salt.check().map_err(config_error)?;
    let (raw, apart) = salt.typed(fields, extra).map_err(config_error)?;
    Ok((raw, apart, salt))
}

/// The loader's error as the daemon's: unreadable files keep their I/O kind (exit codes), a
/// value error names its key.
pub fn config_error(e: LoadError) -> ConfigError {
    match (e.io, e.key) {
        (Some(kind), _) => ConfigError::Read {
            path: e.path,
            source: std::io::Error::new(kind, e.message),
        },
        (None, Some(key)) if !e.message.starts_with("unknown key") => ConfigError::Value {
            path: e.path,
            key,
            message: e.message,
        },
        _ => ConfigError::Invalid {
            path: e.path,
            message: e.message,
        },
    }
}

/// A value error with the file that set the key (a `*.d` file, an `include`) instead of the
/// main file the daemon's validation names.
pub fn placed(salt: &SaltConfig, e: ConfigError) -> ConfigError {
    match e {
        ConfigError::Value { key, message, .. } => ConfigError::Value {
            path: salt.origin_of_path(&key).to_path_buf(),
            key,
            message,
        },
        other => other,
    }
}

/// `--check-config`: every key of `dir`'s config with what saltq does with it (on stdout),
/// then whether the daemon would start (`start` loads it as the daemon does). The exit code:
/// 0 when it would, else the load's.
pub fn check<T: serde::de::DeserializeOwned>(
    daemon: Daemon,
    dir: &Path,
    default_dir: &Path,
    extra: &dyn Fn(&str) -> bool,
    start: impl FnOnce() -> Result<(), ConfigError>,
) -> i32 {
    print!("{}", report::<T>(daemon, dir, default_dir, extra));
    match start() {
        Ok(()) => {
            println!("# the {} starts with this config", daemon.name());
            0
        }
        Err(e) => {
            println!("# the {} would not start: {e}", daemon.name());
            e.exit_code()
        }
    }
}

/// The report [`check`] prints: the files read, the loader's warnings, one line per key.
pub fn report<T: serde::de::DeserializeOwned>(
    daemon: Daemon,
    dir: &Path,
    default_dir: &Path,
    extra: &dyn Fn(&str) -> bool,
) -> String {
    let mut out = String::new();
    match SaltConfig::read(daemon, dir, default_dir, struct_fields::<T>(), extra) {
        Ok(salt) => {
            for f in &salt.loaded.files {
                out.push_str(&format!("# read {}\n", f.display()));
            }
            for w in &salt.loaded.warnings {
                out.push_str(&format!("# warning: {w}\n"));
            }
            for line in salt.report.lines() {
                out.push_str(&line);
                out.push('\n');
            }
        }
        Err(e) => out.push_str(&format!("# {}: {e}\n", e.path.display())),
    }
    out
}
