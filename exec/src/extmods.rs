//! External execution modules: executables, in any language, that the minion runs for
//! functions it does not have built in.
//!
//! A module is a file in one of the directories of the `module_dirs` option (a list) or in
//! `<cachedir>/extmods/modules/` (where `saltutil.sync_modules` puts the master's
//! `file_roots/_modules`). `NAME`, `NAME.py` or `NAME.sh` is module `NAME` (one extension is
//! stripped); the first directory holding a name wins. Executable files run directly; a
//! non-executable `.py` runs with `python3` and a `.sh` with `/bin/sh`.
//!
//! The protocol: `EXE --list` prints a JSON list of function names; `EXE --doc FUNCTION`
//! prints the function's doc; `EXE FUNCTION` reads `{"args": [...], "kwargs": {...}}` on
//! stdin and prints JSON on stdout: `{"return": ..., "retcode": N}` or any other JSON value,
//! taken as the return. Every run is bounded by `ext_module_timeout` seconds (default 60),
//! after which its process group is killed.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Map, Value, json};

use saltq_semantics::python;

use crate::context::{CallContext, ProcessGroups};
use crate::error::ExecError;
use crate::process::{self, Finished, Spawn};

/// The timeout of one run when `ext_module_timeout` is not set.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How much of a module's output an error message quotes.
const QUOTE_LIMIT: usize = 300;

/// One external module found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExtModule {
    /// The module name (`mymod` for `mymod.py`).
    pub name: String,
    /// The file.
    pub path: PathBuf,
}

/// The directory `saltutil.sync_modules` writes to: `<cachedir>/extmods/modules`.
pub(crate) fn synced_dir(opts: &Value) -> Option<PathBuf> {
    synced_dir_for(opts, "modules")
}

/// The directory `saltutil.sync_<kind>` writes to: `<cachedir>/extmods/<kind>`.
pub(crate) fn synced_dir_for(opts: &Value, kind: &str) -> Option<PathBuf> {
    let cachedir = opts.get("cachedir").and_then(Value::as_str)?;
    Some(Path::new(cachedir).join("extmods").join(kind))
}

/// The directories searched, in order: `module_dirs` (a list, or one path), then the synced
/// directory.
pub(crate) fn module_dirs(opts: &Value) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = match opts.get("module_dirs") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| PathBuf::from(python::str(v)))
            .collect(),
        Some(Value::String(s)) if !s.is_empty() => vec![PathBuf::from(s)],
        _ => Vec::new(),
    };
    dirs.extend(synced_dir(opts));
    dirs
}

/// The module name a file name gives, if it may be a module: one extension stripped, the
/// rest a Python-style identifier.
pub(crate) fn module_name(file_name: &str) -> Option<String> {
    let stem = match file_name.rsplit_once('.') {
        Some((stem, _ext)) => stem,
        None => file_name,
    };
    let valid = !stem.is_empty()
        && !stem.starts_with(|c: char| c.is_ascii_digit())
        && stem.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then(|| stem.to_owned())
}

/// How to run a module file: directly when executable, else by its extension.
fn interpreter(path: &Path) -> Option<Vec<OsString>> {
    let meta = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    if meta.permissions().mode() & 0o111 != 0 {
        return Some(vec![path.into()]);
    }
    let prog = match path.extension().and_then(|e| e.to_str()) {
        Some("py") => "python3",
        Some("sh") => "/bin/sh",
        _ => return None,
    };
    Some(vec![prog.into(), path.into()])
}

/// Every external module, sorted by name; the first directory holding a name wins.
pub(crate) fn discover(opts: &Value) -> Vec<ExtModule> {
    discover_in(module_dirs(opts))
}

/// Every module in these directories, sorted by name; the first directory holding a name
/// wins.
fn discover_in(dirs: Vec<PathBuf>) -> Vec<ExtModule> {
    let mut found: Vec<ExtModule> = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut here: Vec<ExtModule> = entries
            .flatten()
            .filter_map(|e| {
                let file = e.file_name().into_string().ok()?;
                let name = module_name(&file)?;
                let path = e.path();
                interpreter(&path)?;
                Some(ExtModule { name, path })
            })
            .collect();
        here.sort_by(|a, b| a.path.cmp(&b.path));
        for m in here {
            if !found.iter().any(|f| f.name == m.name) {
                found.push(m);
            }
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// The module named `name`, if any.
pub(crate) fn find(opts: &Value, name: &str) -> Option<ExtModule> {
    discover(opts).into_iter().find(|m| m.name == name)
}

fn timeout(opts: &Value) -> Duration {
    opts.get("ext_module_timeout")
        .and_then(Value::as_f64)
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64)
}

/// What one run of a module printed.
struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs the module with these arguments, within the timeout, in its own process group.
async fn run(
    m: &ExtModule,
    args: &[&str],
    stdin: Option<Vec<u8>>,
    opts: &Value,
    groups: &ProcessGroups,
) -> Result<Output, ExecError> {
    let mut argv = interpreter(&m.path).ok_or_else(|| {
        ExecError::execution(format!(
            "external module {} is no longer runnable at {}",
            m.name,
            m.path.display()
        ))
    })?;
    argv.extend(args.iter().map(OsString::from));
    let limit = timeout(opts);
    let spec = Spawn {
        argv,
        cwd: PathBuf::from("/"),
        env: std::env::vars_os().collect(),
        stdin: Some(stdin.unwrap_or_default()),
        merge_stderr: false,
        timeout: Some(limit),
        ..Spawn::default()
    };
    let finished = process::run(&spec, groups).await.map_err(|e| {
        ExecError::execution(format!(
            "external module {} could not be started from {}: {e}",
            m.name,
            m.path.display()
        ))
    })?;
    match finished {
        Finished::TimedOut { .. } => Err(ExecError::execution(format!(
            "external module {} timed out after {} seconds running {} (its process group was killed)",
            m.name,
            limit.as_secs_f64(),
            args.join(" ")
        ))),
        Finished::Exited {
            code,
            stdout,
            stderr,
            ..
        } => Ok(Output {
            code,
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }),
    }
}

/// The start of a text, for error messages.
fn quote(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(QUOTE_LIMIT) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The error for a run that exited non-zero without printing JSON.
fn exit_error(m: &ExtModule, what: &str, out: &Output) -> ExecError {
    let detail = if out.stderr.trim().is_empty() {
        quote(&out.stdout)
    } else {
        quote(&out.stderr)
    };
    ExecError::execution(format!(
        "external module {} exited with code {} running {what}: {detail}",
        m.name, out.code
    ))
}

/// The file identity a cached function list is valid for: changed files are listed again.
type Stamp = (u64, u64, i64, i64);

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.ino(), meta.size(), meta.mtime(), meta.mtime_nsec()))
}

/// Function lists by module file, each with the file identity it was read from.
type ListCache = HashMap<PathBuf, (Stamp, Vec<String>)>;

/// `--list` answers by file, so that a call does not run the module twice.
static LISTS: LazyLock<Mutex<ListCache>> = LazyLock::new(Mutex::default);

/// Forgets the cached function lists (`saltutil.refresh_modules`).
pub(crate) fn clear_cache() {
    LISTS.lock().unwrap_or_else(PoisonError::into_inner).clear();
}

/// The module's function names (`EXE --list`).
pub(crate) async fn list(
    m: &ExtModule,
    opts: &Value,
    groups: &ProcessGroups,
) -> Result<Vec<String>, ExecError> {
    let st = stamp(&m.path);
    if let Some(st) = st {
        let cache = LISTS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((cached, names)) = cache.get(&m.path)
            && *cached == st
        {
            return Ok(names.clone());
        }
    }
    let out = run(m, &["--list"], None, opts, groups).await?;
    if out.code != 0 {
        return Err(exit_error(m, "--list", &out));
    }
    let names: Vec<String> = serde_json::from_str::<Vec<Value>>(out.stdout.trim())
        .map_err(|e| {
            ExecError::execution(format!(
                "external module {} printed invalid JSON for --list (expected a list of function names): {e}: {:?}",
                m.name,
                quote(&out.stdout)
            ))
        })?
        .iter()
        .map(python::str)
        .collect();
    if let Some(st) = st {
        LISTS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(m.path.clone(), (st, names.clone()));
    }
    Ok(names)
}

/// The doc of one function (`EXE --doc FUNCTION`), trailing whitespace removed.
pub(crate) async fn doc(
    m: &ExtModule,
    fun: &str,
    opts: &Value,
    groups: &ProcessGroups,
) -> Result<String, ExecError> {
    let out = run(m, &["--doc", fun], None, opts, groups).await?;
    if out.code != 0 {
        return Err(exit_error(m, &format!("--doc {fun}"), &out));
    }
    Ok(out.stdout.trim_end().to_owned())
}

/// Runs `module.fun` with these arguments: its return value and retcode.
pub(crate) async fn call(
    m: &ExtModule,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
    ctx: &CallContext,
) -> Result<(Value, i32), ExecError> {
    let input = json!({"args": args, "kwargs": kwargs})
        .to_string()
        .into_bytes();
    let out = run(m, &[fun], Some(input), &ctx.opts, &ctx.processes).await?;
    let parsed: Result<Value, _> = serde_json::from_str(out.stdout.trim());
    match parsed {
        Ok(Value::Object(mut obj)) if obj.contains_key("return") => {
            let ret = obj.remove("return").unwrap_or(Value::Null);
            let code = match obj.get("retcode") {
                None | Some(Value::Null) => out.code,
                Some(v) => v
                    .as_i64()
                    .and_then(|c| i32::try_from(c).ok())
                    .ok_or_else(|| {
                        ExecError::execution(format!(
                            "external module {} gave a retcode that is not an integer for {fun}: {v}",
                            m.name
                        ))
                    })?,
            };
            Ok((ret, code))
        }
        Ok(ret) => Ok((ret, out.code)),
        Err(_) if out.code != 0 => Err(exit_error(m, fun, &out)),
        Err(e) => Err(ExecError::execution(format!(
            "external module {} printed invalid JSON for {fun}: {e}: {:?}",
            m.name,
            quote(&out.stdout)
        ))),
    }
}

/// The directories searched for external state modules, in order: `states_dirs` (a list,
/// or one path), then `<cachedir>/extmods/states` (where `saltutil.sync_states` puts the
/// master's `file_roots/_states`).
pub fn state_dirs(opts: &Value) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = match opts.get("states_dirs") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| PathBuf::from(python::str(v)))
            .collect(),
        Some(Value::String(s)) if !s.is_empty() => vec![PathBuf::from(s)],
        _ => Vec::new(),
    };
    dirs.extend(synced_dir_for(opts, "states"));
    dirs
}

/// An external state module's answer to running one of its functions.
#[derive(Debug, Clone, PartialEq)]
pub enum StateOutput {
    /// The module has no such function (or there is no such module).
    Missing,
    /// What the function printed, parsed as JSON.
    Ran(Value),
}

/// Runs the function `fun` of the external state module `module` (in [`state_dirs`]) with
/// `input` on its stdin, as external execution modules are run (`EXE FUNCTION`, bounded by
/// `ext_module_timeout`, in its own process group); the JSON it printed. `Missing` when no
/// such module or function exists (its `--list` does not name `fun`).
pub async fn call_state(
    ctx: &CallContext,
    module: &str,
    fun: &str,
    input: &Value,
) -> Result<StateOutput, ExecError> {
    let Some(m) = discover_in(state_dirs(&ctx.opts))
        .into_iter()
        .find(|m| m.name == module)
    else {
        return Ok(StateOutput::Missing);
    };
    if !list(&m, &ctx.opts, &ctx.processes)
        .await?
        .iter()
        .any(|n| n == fun)
    {
        return Ok(StateOutput::Missing);
    }
    let stdin = input.to_string().into_bytes();
    let out = run(&m, &[fun], Some(stdin), &ctx.opts, &ctx.processes).await?;
    match serde_json::from_str::<Value>(out.stdout.trim()) {
        Ok(v) => Ok(StateOutput::Ran(v)),
        Err(_) if out.code != 0 => Err(exit_error(&m, fun, &out)),
        Err(e) => Err(ExecError::execution(format!(
            "external state module {} printed invalid JSON for {fun}: {e}: {:?}",
            m.name,
            quote(&out.stdout)
        ))),
    }
}

/// Whether an external state module of this name exists (for "not available" errors).
pub fn state_module_exists(opts: &Value, module: &str) -> bool {
    discover_in(state_dirs(opts))
        .iter()
        .any(|m| m.name == module)
}

#[cfg(test)]
mod tests;
