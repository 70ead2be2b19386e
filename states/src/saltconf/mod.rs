//! Salt 3007.8's config loading, for both daemons (`salt/config/__init__.py`: `master_config`,
//! `minion_config`, `load_config`, `include_config`): the main file (`DIR/master`,
//! `DIR/minion`, or the file `SALT_MASTER_CONFIG`/`SALT_MINION_CONFIG`/`SALT_CONFIG_DIR`
//! name), then `default_include` (`master.d/*.conf`), then `include`, merged as Salt merges
//! them. Every file is read by Salt's YAML loader ([`crate::render::load_yaml`]: YAML 1.1,
//! "found conflicting ID" for a duplicate key). [`keys`] says what saltq does with each key.
//!
//! The merge is pure ([`update`], [`include_order`]); only [`load`] touches the disk.

pub mod daemon;
pub mod keys;
pub mod salt_tables;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Which daemon's config: the file name, the environment variable and the include directory
/// differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Daemon {
    /// `salt-master` / `saltq-master`.
    #[default]
    Master,
    /// `salt-minion` / `saltq-minion`.
    Minion,
}

impl Daemon {
    /// The main file's name in the config directory.
    pub fn name(self) -> &'static str {
        match self {
            Daemon::Master => "master",
            Daemon::Minion => "minion",
        }
    }

    /// Salt's environment variable naming the main file.
    pub fn env_var(self) -> &'static str {
        match self {
            Daemon::Master => "SALT_MASTER_CONFIG",
            Daemon::Minion => "SALT_MINION_CONFIG",
        }
    }

    /// Salt's `default_include` default.
    pub fn default_include(self) -> &'static str {
        match self {
            Daemon::Master => "master.d/*.conf",
            Daemon::Minion => "minion.d/*.conf",
        }
    }
}

/// A config that could not be read: the file and what was wrong.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct LoadError {
    /// The file at fault.
    pub path: PathBuf,
    /// What was wrong, with the line when known.
    pub message: String,
    /// The I/O error, when the file could not be read at all.
    pub io: Option<std::io::ErrorKind>,
    /// The key at fault, when one is.
    pub key: Option<String>,
}

/// The merged config: every top-level key with its value and the file that set it.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The main file (it need not exist: then every key comes from includes or defaults).
    pub file: PathBuf,
    /// The merged top-level keys, in the order they were first set.
    pub opts: Map<String, Value>,
    /// The file that set each top-level key last.
    pub origin: BTreeMap<String, PathBuf>,
    /// Every file read, in the order read.
    pub files: Vec<PathBuf>,
    /// What the daemon should warn about (an `include` matching nothing, a broken
    /// `_schedule.conf` skipped as Salt skips it).
    pub warnings: Vec<String>,
}

impl Loaded {
    /// The file that set `key` (the main file when unknown).
    pub fn origin_of(&self, key: &str) -> &Path {
        self.origin.get(key).map_or(&self.file, PathBuf::as_path)
    }
}

/// A daemon's config as Salt reads it, and what saltq does with each of its keys.
#[derive(Debug, Clone, Default)]
pub struct SaltConfig {
    /// Whose config.
    pub daemon: Daemon,
    /// The merged files.
    pub loaded: Loaded,
    /// Every key with its kind.
    pub report: keys::Report,
}

impl SaltConfig {
    /// Reads `dir`'s config (the one the environment names when `dir` is `default_dir`, as
    /// Salt) and classifies every key against `fields` (the daemon's `RawConfig`) and
    /// `extra` (keys taken apart, such as returner options). Unknown keys are not refused
    /// here: see [`SaltConfig::check`].
    pub fn read(
        daemon: Daemon,
        dir: &Path,
        default_dir: &Path,
        fields: &[&str],
        extra: &dyn Fn(&str) -> bool,
    ) -> Result<SaltConfig, LoadError> {
        let file = main_file(daemon, dir, default_dir, &|k| std::env::var(k).ok(), &|p| {
            p.is_file()
        });
        let loaded = load(daemon, &file)?;
        let report = keys::Report::new(daemon, &loaded, fields, extra);
        Ok(SaltConfig {
            daemon,
            loaded,
            report,
        })
    }

    /// The first key neither Salt nor saltq knows, as an error naming its file and the
    /// closest known key.
    pub fn check(&self) -> Result<(), LoadError> {
        self.report.check(self.daemon)
    }

    /// The `RawConfig` fields deserialized into `T`, and the keys `extra` takes, apart.
    pub fn typed<T: serde::de::DeserializeOwned>(
        &self,
        fields: &[&str],
        extra: &dyn Fn(&str) -> bool,
    ) -> Result<(T, Map<String, Value>), LoadError> {
        let (typed, apart) = keys::partition(&self.loaded, fields, extra);
        Ok((keys::typed(&self.loaded, typed)?, apart))
    }

    /// The file that set the key of a path such as `rest_cherrypy.port` or `"port"`.
    pub fn origin_of_path(&self, key: &str) -> &Path {
        let top = key
            .trim_matches('"')
            .split(['.', '['])
            .next()
            .unwrap_or(key);
        let top = if self.loaded.opts.contains_key(key) {
            key
        } else {
            top
        };
        self.loaded.origin_of(top)
    }

    /// The report in the log at start: the loader's warnings and the keys saltq does not do
    /// yet as warnings, the keys without effect as info, the implemented ones at debug.
    pub fn log(&self) {
        for w in &self.loaded.warnings {
            tracing::warn!("{w}");
        }
        for f in &self.loaded.files {
            tracing::debug!("config read from {}", f.display());
        }
        for e in &self.report.entries {
            match e.kind {
                Some(keys::Kind::NotYet(why)) => tracing::warn!(
                    "config key {} ({}): not yet in saltq: {why}",
                    e.key,
                    e.file.display()
                ),
                Some(keys::Kind::NoEffect(why)) => tracing::info!(
                    "config key {} ({}): no effect in saltq: {why}",
                    e.key,
                    e.file.display()
                ),
                Some(keys::Kind::Implemented(_)) => {
                    tracing::debug!("config key {} ({}): implemented", e.key, e.file.display())
                }
                None => tracing::error!("config key {} ({}): unknown", e.key, e.file.display()),
            }
        }
    }
}

/// Salt's `load_config` choice of the main file. `dir` is the `-c` directory and
/// `default_dir` the daemon's default one: only when they are the same does the environment
/// count — `SALT_MASTER_CONFIG` (`SALT_MINION_CONFIG`) if it names a file, else
/// `SALT_CONFIG_DIR/master` if that is a file.
pub fn main_file(
    daemon: Daemon,
    dir: &Path,
    default_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    is_file: &dyn Fn(&Path) -> bool,
) -> PathBuf {
    let path = dir.join(daemon.name());
    if path != default_dir.join(daemon.name()) {
        return path;
    }
    let named = env(daemon.env_var())
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            env("SALT_CONFIG_DIR")
                .filter(|d| !d.is_empty())
                .map(|d| Path::new(&d).join(daemon.name()))
                .filter(|p| is_file(p))
        });
    match named {
        Some(p) if is_file(&p) => p,
        _ => path,
    }
}

/// Reads the main file and its includes and merges them as Salt 3007.8 does.
pub fn load(daemon: Daemon, file: &Path) -> Result<Loaded, LoadError> {
    let mut loaded = Loaded {
        file: file.to_path_buf(),
        ..Loaded::default()
    };
    let main = match read_file(file)? {
        Some(m) => {
            loaded.files.push(file.to_path_buf());
            m
        }
        None => Map::new(),
    };
    for k in main.keys() {
        loaded.origin.insert(k.clone(), file.to_path_buf());
    }
    let default_include = main
        .get("default_include")
        .cloned()
        .unwrap_or_else(|| Value::String(daemon.default_include().into()));
    let include = main.get("include").cloned().unwrap_or(Value::Null);
    loaded.opts = main;
    for (list, verbose, key) in [
        (default_include, false, "default_include"),
        (include, true, "include"),
    ] {
        let (opts, origin) = include_config(daemon, &list, file, verbose, key, &mut loaded, 0)?;
        for (k, v) in opts {
            loaded.opts.insert(k.clone(), v);
            if let Some(o) = origin.get(&k) {
                loaded.origin.insert(k, o.clone());
            }
        }
    }
    Ok(loaded)
}

/// What one include list gives: the merged keys and the file that set each.
type Included = (Map<String, Value>, BTreeMap<String, PathBuf>);

/// Nested includes deeper than this are refused (a file including itself would never end;
/// Salt recurses until Python's stack gives out).
const MAX_INCLUDE_DEPTH: usize = 16;

/// Salt's `include_config`: every file the globs match, each glob's matches in sorted order,
/// merged into one mapping with [`update`] (lists joined), a file's own `include` over it.
fn include_config(
    daemon: Daemon,
    include: &Value,
    orig: &Path,
    verbose: bool,
    key: &str,
    loaded: &mut Loaded,
    depth: usize,
) -> Result<Included, LoadError> {
    let bad = |message: String| LoadError {
        path: orig.to_path_buf(),
        message,
        io: None,
        key: Some(key.to_owned()),
    };
    let patterns: Vec<String> = match include {
        Value::Null => vec![],
        Value::String(s) if s.is_empty() => vec![],
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.clone()),
                other => Err(bad(format!(
                    "{other} is not a path: `{key}` is a path or glob, or a list of them"
                ))),
            })
            .collect::<Result<_, _>>()?,
        Value::Bool(false) => vec![],
        other => {
            return Err(bad(format!(
                "{other} is not a path: `{key}` is a path or glob, or a list of them"
            )));
        }
    };
    if depth > MAX_INCLUDE_DEPTH {
        return Err(bad(format!(
            "includes nested more than {MAX_INCLUDE_DEPTH} deep (does a file include itself?)"
        )));
    }
    let base = orig.parent().unwrap_or(Path::new("/"));
    let mut configuration = Map::new();
    let mut origin = BTreeMap::new();
    for pattern in patterns {
        let pattern = expand_user(&pattern);
        let full = if Path::new(&pattern).is_absolute() {
            PathBuf::from(&pattern)
        } else {
            base.join(&pattern)
        };
        let matches = include_order(glob(&full));
        if matches.is_empty() && verbose {
            loaded.warnings.push(format!(
                "{}: `{key}` path/glob {} matches no files",
                orig.display(),
                full.display()
            ));
        }
        for file in matches {
            let mut opts = match read_file(&file) {
                Ok(Some(m)) => m,
                Ok(None) => continue,
                // Salt renames a broken _schedule.conf aside and goes on without it.
                Err(e) if file.to_string_lossy().ends_with("_schedule.conf") => {
                    loaded.warnings.push(format!(
                        "{}: {} (skipped, as Salt skips a broken _schedule.conf)",
                        file.display(),
                        e.message
                    ));
                    continue;
                }
                // Salt's include_config logs a file it cannot parse (bad YAML, a duplicate
                // key, not a mapping) and goes on without it, unless told to exit on config
                // errors: salt-minion is (exit 1), salt-master is not, and a nested include
                // never is. An unreadable file is an error for both (Salt's traceback).
                Err(e) if e.io.is_none() && (daemon == Daemon::Master || depth > 0) => {
                    loaded.warnings.push(format!(
                        "{}: {} (skipped: Salt 3007.8's {} goes on without an included file \
                         it cannot parse)",
                        file.display(),
                        e.message,
                        if depth > 0 { "loader" } else { "master" }
                    ));
                    continue;
                }
                Err(e) => return Err(e),
            };
            loaded.files.push(file.clone());
            let mut from: BTreeMap<String, PathBuf> =
                opts.keys().map(|k| (k.clone(), file.clone())).collect();
            if let Some(nested) = opts.get("include").cloned()
                && !is_empty(&nested)
            {
                let (more, more_origin) = include_config(
                    daemon,
                    &nested,
                    &file,
                    verbose,
                    "include",
                    loaded,
                    depth + 1,
                )?;
                for (k, v) in more {
                    opts.insert(k, v);
                }
                from.extend(more_origin);
            }
            // Salt's special case: a file's schedule entries replace whole jobs.
            if let Some(Value::Object(jobs)) = opts.get("schedule")
                && !jobs.is_empty()
                && let Some(Value::Object(have)) = configuration.get_mut("schedule")
            {
                for (name, job) in jobs {
                    have.insert(name.clone(), job.clone());
                }
            }
            update(&mut configuration, opts, true);
            origin.extend(from);
        }
    }
    Ok((configuration, origin))
}

/// Python's truthiness of an `include` value, for "if include:".
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Bool(true) => false,
    }
}

/// `os.path.expanduser` for a leading `~` or `~/`.
fn expand_user(path: &str) -> String {
    match (path.strip_prefix('~'), std::env::var("HOME")) {
        (Some(rest), Ok(home)) if rest.is_empty() || rest.starts_with('/') => {
            format!("{home}{rest}")
        }
        _ => path.to_owned(),
    }
}

/// Salt's `sorted(glob.glob(path))`: the matches in code point order of their paths.
pub fn include_order(mut matches: Vec<PathBuf>) -> Vec<PathBuf> {
    matches.sort_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
    matches
}

/// Python's `glob.glob` for an absolute pattern: `*`, `?` and `[...]` within one path
/// component; names starting with `.` are matched only by a component starting with `.`;
/// a pattern without wildcards matches itself when it exists.
fn glob(pattern: &Path) -> Vec<PathBuf> {
    let mut found = vec![PathBuf::from("/")];
    let mut components = pattern.components().peekable();
    if !pattern.is_absolute() {
        found = vec![PathBuf::new()];
    }
    while let Some(c) = components.next() {
        let std::path::Component::Normal(part) = c else {
            if let std::path::Component::ParentDir = c {
                found = found.into_iter().map(|p| p.join("..")).collect();
            }
            continue;
        };
        let part = part.to_string_lossy();
        let last = components.peek().is_none();
        let mut next = Vec::new();
        for dir in &found {
            if !part.contains(['*', '?', '[']) {
                let p = dir.join(&*part);
                if (last && p.exists()) || (!last && p.is_dir()) {
                    next.push(p);
                }
                continue;
            }
            let Ok(entries) = std::fs::read_dir(if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            }) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') && !part.starts_with('.') {
                    continue;
                }
                if saltq_semantics::python::fnmatch(&name, &part) {
                    let p = dir.join(&name);
                    if last || p.is_dir() {
                        next.push(p);
                    }
                }
            }
        }
        found = next;
    }
    found
}

/// Salt's `salt.utils.dictupdate.update(dest, upd, recursive_update=True, merge_lists)`:
/// mappings merge key by key, lists join (without the items `dest` has) when `merge_lists`,
/// anything else is replaced.
pub fn update(dest: &mut Map<String, Value>, upd: Map<String, Value>, merge_lists: bool) {
    for (key, val) in upd {
        match (dest.get_mut(&key), val) {
            (Some(Value::Object(d)), Value::Object(u)) => update(d, u, merge_lists),
            (Some(Value::Array(d)), Value::Array(u)) if merge_lists => {
                for item in u {
                    if !d.contains(&item) {
                        d.push(item);
                    }
                }
            }
            (_, val) => {
                dest.insert(key, val);
            }
        }
    }
}

/// Reads one config file as Salt's `_read_conf_file`: YAML by Salt's loader, a mapping (an
/// empty file is none), a non-string `id` made a string. `None` when the file is missing.
fn read_file(path: &Path) -> Result<Option<Map<String, Value>>, LoadError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(LoadError {
                path: path.to_path_buf(),
                message: format!("cannot read config file {}: {e}", path.display()),
                io: Some(e.kind()),
                key: None,
            });
        }
    };
    let value = crate::render::load_yaml(&text).map_err(|e| {
        let mut message = yaml_error(&e.message, e.line);
        let key = conflicting_key(&e.message).or_else(|| {
            let key = top_key_at(&text, e.line?)?;
            message = format!("under `{key}`: {message}");
            Some(key)
        });
        LoadError {
            path: path.to_path_buf(),
            message,
            io: None,
            key,
        }
    })?;
    let mut map = match value {
        Value::Null => Map::new(),
        Value::Object(m) => m,
        other => {
            return Err(LoadError {
                path: path.to_path_buf(),
                message: format!(
                    "the file must be a mapping of keys to values, not {}",
                    saltq_semantics::python::type_name(&other)
                ),
                io: None,
                key: None,
            });
        }
    };
    // Salt: "allow using numeric ids: convert int to string". A null id is no id here
    // (Salt would make it the string "None"; its own default is null).
    if let Some(id) = map.get_mut("id") {
        match id {
            Value::String(_) => {}
            Value::Null => {
                map.remove("id");
            }
            other => *other = Value::String(saltq_semantics::python::str(other)),
        }
    }
    Ok(Some(map))
}

/// The top-level key whose block holds `line` (1-based): the last unindented `key:` line at
/// or before it.
fn top_key_at(text: &str, line: usize) -> Option<String> {
    text.lines()
        .take(line)
        .filter(|l| !l.starts_with([' ', '\t', '#', '-']) && !l.trim().is_empty())
        .filter_map(|l| {
            l.split_once(':')
                .map(|(k, _)| k.trim().trim_matches(['\'', '"']))
        })
        .filter(|k| !k.is_empty())
        .last()
        .map(str::to_owned)
}

/// The key of a "found conflicting ID 'x'" error.
fn conflicting_key(message: &str) -> Option<String> {
    let rest = message.split("found conflicting ID '").nth(1)?;
    Some(rest.split('\'').next()?.to_owned())
}

/// PyYAML's several-line message on one line, with its line number.
fn yaml_error(message: &str, line: Option<usize>) -> String {
    let text: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("in \"<unicode string>\""))
        .collect();
    let text = text.join(": ");
    match line {
        Some(l) => format!("{text} at line {l}"),
        None => text,
    }
}

/// The field names serde knows for struct `T` (its `#[serde(rename)]`d names), for the
/// key table: the keys a daemon's `RawConfig` implements.
pub fn struct_fields<'de, T: serde::Deserialize<'de>>() -> &'static [&'static str] {
    struct Fields(std::cell::Cell<&'static [&'static str]>);
    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("stop")
        }
    }
    impl std::error::Error for Stop {}
    impl serde::de::Error for Stop {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Stop
        }
    }
    impl<'de> serde::Deserializer<'de> for &Fields {
        type Error = Stop;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0.set(fields);
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let fields = Fields(std::cell::Cell::new(&[]));
    let _ = T::deserialize(&fields);
    fields.0.get()
}

#[cfg(test)]
mod tests;
