//! The global arguments checked around a state function: `onlyif`, `unless`, `creates`
//! (`State._run_check`) and `check_cmd` (`State._run_check_cmd`).

use saltq_exec::{CallContext, PubInfo};
use saltq_semantics::python::truthy;
use saltq_semantics::target::traverse;
use serde_json::{Map, Value, json};

/// The options of `cmd.retcode` the state's own arguments give (`POSSIBLE_CMD_ARGS`).
const CMD_ARGS: &[&str] = &[
    "cwd",
    "root",
    "runas",
    "env",
    "prepend_path",
    "umask",
    "timeout",
    "success_retcodes",
];

/// What a check decided: `result: true` means "do not run the state".
#[derive(Debug, Default)]
pub(crate) struct Check {
    pub result: bool,
    pub comment: Vec<String>,
    pub skip_watch: Option<bool>,
}

fn cmd_opts(low: &Map<String, Value>, grains: &Value) -> Map<String, Value> {
    let exclude: Vec<Value> = match low.get("cmd_opts_exclude") {
        Some(Value::Array(l)) => l.clone(),
        Some(v) => vec![v.clone()],
        None => Vec::new(),
    };
    let excluded = |k: &str| exclude.iter().any(|e| e.as_str() == Some(k));
    let mut opts = Map::new();
    for k in CMD_ARGS {
        if !excluded(k)
            && let Some(v) = low.get(*k).filter(|v| !v.is_null())
        {
            opts.insert((*k).into(), v.clone());
        }
    }
    if let Some(shell) = low.get("shell").filter(|_| !excluded("shell")) {
        opts.insert("shell".into(), shell.clone());
    } else if let Some(shell) = grains.get("shell") {
        opts.insert("shell".into(), shell.clone());
    }
    opts
}

/// `cmd.retcode` of a shell command, `None` when it could not run.
async fn retcode(ctx: &CallContext, cmd: &str, opts: &Map<String, Value>) -> Option<i64> {
    let mut kwargs = opts.clone();
    kwargs.insert("ignore_retcode".into(), json!(true));
    kwargs.insert("python_shell".into(), json!(true));
    let out = saltq_exec::call(
        ctx,
        "cmd.retcode",
        vec![json!(cmd)],
        kwargs,
        &PubInfo::default(),
    )
    .await;
    out.ret.as_i64()
}

/// Runs a `{fun: ..., args: [...], get_return: ..., kw: ...}` entry: (retcode, result).
async fn run_function(ctx: &CallContext, entry: &Map<String, Value>) -> (i32, Value) {
    let fun = entry.get("fun").and_then(Value::as_str).unwrap_or_default();
    let args = match entry.get("args") {
        Some(Value::Array(a)) => a.clone(),
        Some(v) => vec![v.clone()],
        None => Vec::new(),
    };
    let mut kwargs: Map<String, Value> = entry
        .iter()
        .filter(|(k, _)| !["fun", "args", "get_return"].contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut args = args;
    for a in args.iter_mut() {
        let _ = super::slots::format_value(ctx, a).await;
    }
    for v in kwargs.values_mut() {
        let _ = super::slots::format_value(ctx, v).await;
    }
    let out = saltq_exec::call(ctx, fun, args, kwargs, &PubInfo::default()).await;
    let code = if out.ret_is_function_code() {
        out.retcode
    } else {
        0
    };
    let mut result = out.ret;
    if let Some(path) = entry.get("get_return").and_then(Value::as_str) {
        result = traverse(&result, path, ":").cloned().unwrap_or(Value::Null);
    }
    (code, result)
}

/// Whether the retcode came from the function itself rather than from Salt's dict rule.
trait FunctionCode {
    fn ret_is_function_code(&self) -> bool;
}

impl FunctionCode for saltq_exec::CallOutcome {
    fn ret_is_function_code(&self) -> bool {
        !self.ret.is_object()
    }
}

fn as_list(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(l) => l.clone(),
        other => vec![other.clone()],
    }
}

/// `_run_check_onlyif`.
async fn onlyif(ctx: &CallContext, low: &Map<String, Value>, opts: &Map<String, Value>) -> Check {
    let mut ret = Check::default();
    let mut comment = String::new();
    for entry in as_list(&low["onlyif"]) {
        let code = match &entry {
            Value::String(cmd) => Some(retcode(ctx, cmd, opts).await.unwrap_or(100)),
            Value::Object(m) => {
                if !m.contains_key("fun") {
                    ret.comment = vec![format!(
                        "no `fun` argument in onlyif: {}",
                        saltq_semantics::python::repr(&entry)
                    )];
                    return ret;
                }
                let (code, result) = run_function(ctx, m).await;
                if code != 0 {
                    Some(i64::from(code))
                } else if !truthy(&result) {
                    ret.result = true;
                    ret.skip_watch = Some(true);
                    ret.comment = vec!["onlyif condition is false".into()];
                    return ret;
                } else {
                    comment = "onlyif condition is true".into();
                    ret.result = false;
                    None
                }
            }
            _ => {
                ret.comment = vec!["onlyif execution failed, bad type passed".into()];
                ret.result = false;
                return ret;
            }
        };
        if let Some(code) = code {
            if code != 0 && !ret.result {
                ret.result = true;
                ret.skip_watch = Some(true);
                ret.comment = vec!["onlyif condition is false".into()];
                return ret;
            } else if code == 0 {
                comment = "onlyif condition is true".into();
                ret.result = false;
            }
        }
    }
    ret.comment = vec![comment];
    ret
}

/// `_run_check_unless`.
async fn unless(ctx: &CallContext, low: &Map<String, Value>, opts: &Map<String, Value>) -> Check {
    let mut ret = Check::default();
    let mut comment: Option<String> = None;
    for entry in as_list(&low["unless"]) {
        let code = match &entry {
            Value::String(cmd) => Some(retcode(ctx, cmd, opts).await.unwrap_or(0)),
            Value::Object(m) => {
                if !m.contains_key("fun") {
                    ret.comment = vec![format!(
                        "no `fun` argument in unless: {}",
                        saltq_semantics::python::repr(&entry)
                    )];
                    return ret;
                }
                let (code, result) = run_function(ctx, m).await;
                if code != 0 {
                    Some(i64::from(code))
                } else if truthy(&result) {
                    ret.result = true;
                    ret.skip_watch = Some(true);
                    comment = Some("unless condition is true".into());
                    None
                } else {
                    ret.result = false;
                    ret.comment = vec!["unless condition is false".into()];
                    return ret;
                }
            }
            _ => {
                ret.result = false;
                comment = Some("unless condition is false, bad type passed".into());
                None
            }
        };
        if let Some(code) = code {
            if code == 0 {
                ret.result = true;
                ret.skip_watch = Some(true);
                comment = Some("unless condition is true".into());
            } else {
                ret.skip_watch = None;
                ret.result = false;
                ret.comment = vec!["unless condition is false".into()];
                return ret;
            }
        }
    }
    ret.comment = comment.into_iter().collect();
    ret
}

/// `_run_check_creates`.
fn creates(low: &Map<String, Value>) -> Check {
    let exists = |p: &Value| p.as_str().is_some_and(|p| std::path::Path::new(p).exists());
    match &low["creates"] {
        Value::String(p) if exists(&low["creates"]) => Check {
            result: true,
            comment: vec![format!("{p} exists")],
            skip_watch: Some(true),
        },
        Value::Array(list) if list.iter().all(exists) => Check {
            result: true,
            comment: vec!["All files in creates exist".into()],
            skip_watch: Some(true),
        },
        _ => Check {
            result: false,
            comment: vec!["Creates files not found".into()],
            skip_watch: None,
        },
    }
}

/// `_run_check`: `onlyif`, then `unless`, then `creates`; either saying "skip" skips.
pub(crate) async fn run_check(ctx: &CallContext, low: &Map<String, Value>) -> Check {
    let opts = cmd_opts(low, &ctx.grains());
    let mut ret = Check::default();
    let merge = |ret: &mut Check, c: Check, first: bool| {
        ret.result = if first {
            c.result
        } else {
            c.result || ret.result
        };
        ret.comment.extend(c.comment);
        if let Some(s) = c.skip_watch {
            ret.skip_watch = Some(if first {
                s
            } else {
                s || ret.skip_watch.unwrap_or(false)
            });
        }
    };
    if low.contains_key("onlyif") {
        let c = onlyif(ctx, low, &opts).await;
        merge(&mut ret, c, true);
    }
    if low.contains_key("unless") {
        let c = unless(ctx, low, &opts).await;
        merge(&mut ret, c, false);
    }
    if low.contains_key("creates") {
        let c = creates(low);
        merge(&mut ret, c, false);
    }
    ret
}

/// `_run_check_cmd`: `(result, comment)` after the state ran.
pub(crate) async fn run_check_cmd(ctx: &CallContext, low: &Map<String, Value>) -> (bool, String) {
    let mut opts = Map::new();
    if let Some(shell) = ctx.grains().get("shell") {
        opts.insert("shell".into(), shell.clone());
    }
    let mut result = false;
    let mut comment = String::new();
    // Salt iterates `check_cmd` as given: a string runs one command per character.
    let entries: Vec<Value> = match &low["check_cmd"] {
        Value::String(s) => s.chars().map(|c| Value::String(c.to_string())).collect(),
        other => as_list(other),
    };
    for entry in entries {
        let cmd = saltq_semantics::python::str(&entry);
        let code = retcode(ctx, &cmd, &opts).await.unwrap_or(1);
        if code == 0 && !result {
            result = true;
            comment = "check_cmd determined the state succeeded".into();
        } else if code != 0 {
            return (false, "check_cmd determined the state failed".into());
        }
    }
    (result, comment)
}
