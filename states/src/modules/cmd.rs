//! The `cmd` state module (`salt/states/cmd.py`): `run`, `script`, `wait`, `wait_script`
//! and `mod_watch`, over the `cmd.run_all` and `cmd.script` execution functions.

use saltq_exec::{Lit, Param, PubInfo};
use saltq_semantics::python::{str as py_str, truthy};
use serde_json::{Map, Value, json};

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

const RUN_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("cwd", Lit::None),
    Param::opt("root", Lit::None),
    Param::opt("runas", Lit::None),
    Param::opt("shell", Lit::None),
    Param::opt("env", Lit::None),
    Param::opt("prepend_path", Lit::None),
    Param::opt("stateful", Lit::Bool(false)),
    Param::opt("output_loglevel", Lit::Str("debug")),
    Param::opt("hide_output", Lit::Bool(false)),
    Param::opt("timeout", Lit::None),
    Param::opt("ignore_timeout", Lit::Bool(false)),
    Param::opt("use_vt", Lit::Bool(false)),
    Param::opt("success_retcodes", Lit::None),
    Param::opt("success_stdout", Lit::None),
    Param::opt("success_stderr", Lit::None),
];

const WAIT_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("cwd", Lit::None),
    Param::opt("root", Lit::None),
    Param::opt("runas", Lit::None),
    Param::opt("shell", Lit::None),
    Param::opt("env", Lit::None),
    Param::opt("stateful", Lit::Bool(false)),
    Param::opt("output_loglevel", Lit::Str("debug")),
    Param::opt("hide_output", Lit::Bool(false)),
    Param::opt("use_vt", Lit::Bool(false)),
    Param::opt("success_retcodes", Lit::None),
    Param::opt("success_stdout", Lit::None),
    Param::opt("success_stderr", Lit::None),
];

const SCRIPT_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("source", Lit::None),
    Param::opt("template", Lit::None),
    Param::opt("cwd", Lit::None),
    Param::opt("runas", Lit::None),
    Param::opt("password", Lit::None),
    Param::opt("shell", Lit::None),
    Param::opt("env", Lit::None),
    Param::opt("stateful", Lit::Bool(false)),
    Param::opt("timeout", Lit::None),
    Param::opt("use_vt", Lit::Bool(false)),
    Param::opt("output_loglevel", Lit::Str("debug")),
    Param::opt("hide_output", Lit::Bool(false)),
    Param::opt("defaults", Lit::None),
    Param::opt("context", Lit::None),
    Param::opt("success_retcodes", Lit::None),
    Param::opt("success_stdout", Lit::None),
    Param::opt("success_stderr", Lit::None),
];

/// The `cmd` state functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "cmd.run",
        params: RUN_PARAMS,
        kwargs: true,
        handler: state_handler!(run),
    },
    StateFunction {
        name: "cmd.script",
        params: SCRIPT_PARAMS,
        kwargs: true,
        handler: state_handler!(script),
    },
    StateFunction {
        name: "cmd.wait",
        params: WAIT_PARAMS,
        kwargs: true,
        handler: state_handler!(wait),
    },
    StateFunction {
        name: "cmd.watch",
        params: WAIT_PARAMS,
        kwargs: true,
        handler: state_handler!(wait),
    },
    StateFunction {
        name: "cmd.wait_script",
        params: SCRIPT_PARAMS,
        kwargs: true,
        handler: state_handler!(wait),
    },
    StateFunction {
        name: "cmd.mod_watch",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(mod_watch),
    },
];

/// Keys the runner hands `mod_watch` that no command takes.
const NOT_FOR_COMMANDS: &[&str] = &["sfun", "__reqs__", "stateful", "ignore_timeout"];

/// A script ready to run: a local path, removed afterwards when it is a rendered copy.
struct LocalScript {
    path: std::path::PathBuf,
    _rendered: Option<tempfile::TempPath>,
}

/// The script behind `source`: a `salt://` file fetched through the fileserver
/// (`cp.cache_file`), a local path as it is; rendered through `template` when given.
/// `Ok(None)` when the fileserver has no such file.
async fn fetch_script(
    call: &StateCall,
    source: &str,
    template: Option<Value>,
) -> Result<Option<LocalScript>, String> {
    let path = if let Some(rel) = source.strip_prefix("salt://") {
        let Some(files) = &call.ctx.files else {
            return Ok(None);
        };
        match files.cache_file(&call.saltenv, rel).await? {
            Some(p) => p,
            None => return Ok(None),
        }
    } else {
        std::path::PathBuf::from(source.strip_prefix("file://").unwrap_or(source))
    };
    let Some(engine) = template.filter(truthy).map(|t| py_str(&t)) else {
        return Ok(Some(LocalScript {
            path,
            _rendered: None,
        }));
    };
    let Some(states) = call.ctx.states.clone() else {
        return Err(format!("cannot render {source}: no template engine here"));
    };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let ctx = call.ctx.clone();
    let saltenv = call.saltenv.clone();
    let context = call
        .arg("context")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let rendered = tokio::task::spawn_blocking(move || {
        states.render_template(&ctx, &text, &engine, &saltenv, context)
    })
    .await
    .map_err(|e| e.to_string())??;
    let file = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    std::fs::write(file.path(), rendered).map_err(|e| e.to_string())?;
    let tmp = file.into_temp_path();
    Ok(Some(LocalScript {
        path: tmp.to_path_buf(),
        _rendered: Some(tmp),
    }))
}

/// `cmd.wait` and friends: nothing until watched.
async fn wait(call: StateCall) -> Result<Ret, StateError> {
    Ok(Ret::new(&call.name))
}

/// `stateful` as Salt reads it: `true`, or a list whose first item names a `test_name`.
fn stateful(call: &StateCall) -> (bool, Option<String>) {
    match call.arg("stateful") {
        Some(Value::Array(l)) => {
            let test_name = l.first().and_then(|f| f.get("test_name")).map(py_str);
            (true, test_name)
        }
        Some(Value::Bool(true)) => (true, None),
        _ => (false, None),
    }
}

/// `_reinterpreted_state`: a stateful command's output read as its result.
fn reinterpreted(mut ret: Ret) -> Ret {
    let out_changes = std::mem::take(&mut ret.changes);
    ret.comment = String::new();
    let out = out_changes.get("stdout").map(py_str).unwrap_or_default();
    if out.is_empty() {
        if let Some(err) = out_changes.get("stderr").filter(|e| truthy(e)) {
            ret.comment = py_str(err);
        }
        return ret;
    }
    let mut is_json = false;
    let mut idx: Option<usize> = None;
    let mut data = Map::new();
    match serde_json::from_str::<Value>(&out) {
        Ok(Value::Object(m)) => {
            data = m;
            is_json = true;
        }
        Ok(_) => {
            ret.comment = "script JSON output must be a JSON object (e.g., {})!".into();
            ret.result = Some(false);
            return ret;
        }
        Err(_) => {
            let trimmed = out.trim_end();
            let mut line = out.as_str();
            if let Some(i) = trimmed.rfind('\n') {
                idx = Some(i);
                line = &out[i + 1..];
            }
            let mut ok = true;
            match shlex_split(line) {
                Some(items) => {
                    for item in items {
                        let parts: Vec<&str> = item.split('=').collect();
                        if parts.len() != 2 {
                            ok = false;
                            break;
                        }
                        data.insert(parts[0].to_owned(), json!(parts[1]));
                    }
                }
                None => ok = false,
            }
            if !ok {
                ret.comment =
                    "Failed parsing script output! Stdout must be JSON or a line of name=value \
                     pairs."
                        .into();
                ret.result = Some(false);
                ret.changes.extend(out_changes);
                return ret;
            }
        }
    }
    let changed_v = data.get("changed").cloned().unwrap_or(json!("no"));
    let changed = match py_str(&changed_v).to_lowercase().as_str() {
        "true" | "yes" | "1" if truthy(&changed_v) => true,
        "false" | "no" | "0" => false,
        other => {
            ret.comment = format!("Failed parsing boolean value: {other}");
            ret.result = Some(false);
            return ret;
        }
    };
    if let Some(c) = data.shift_remove("comment") {
        ret.comment = py_str(&c);
    }
    if changed {
        for (k, v) in &out_changes {
            data.entry(k.clone()).or_insert_with(|| v.clone());
        }
        let stdout = if is_json {
            String::new()
        } else {
            let s = data.get("stdout").map(py_str).unwrap_or_default();
            match idx {
                Some(i) if i <= s.len() => s[..i].to_owned(),
                Some(_) => s,
                None => s[..s.len().saturating_sub(1)].to_owned(),
            }
        };
        data.insert("stdout".into(), json!(stdout));
        ret.changes = data;
    }
    ret
}

/// The keyword arguments for the execution function: the state's extra arguments and its
/// command options, unset ones left out.
fn cmd_kwargs(call: &StateCall, keys: &[&str]) -> Map<String, Value> {
    let mut kw: Map<String, Value> = call
        .args
        .iter()
        .filter(|(k, v)| !v.is_null() && !NOT_FOR_COMMANDS.contains(&k.as_str()))
        .filter(|(k, _)| {
            !RUN_PARAMS.iter().any(|p| p.name == k.as_str()) || keys.contains(&k.as_str())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let shell = call
        .arg("shell")
        .cloned()
        .or_else(|| call.ctx.grains().get("shell").cloned());
    if let Some(shell) = shell {
        kw.insert("shell".into(), shell);
    }
    kw
}

async fn run(call: StateCall) -> Result<Ret, StateError> {
    let (is_stateful, test_name) = stateful(&call);
    let name = match (&test_name, call.test) {
        (Some(t), true) => t.clone(),
        _ => call.name.clone(),
    };
    let mut ret = Ret::new(&name);
    ret.result = Some(false);
    if let Some(env) = call.arg("env")
        && !env.is_array()
        && !env.is_object()
    {
        ret.comment = "Invalidly-formatted 'env' parameter. See documentation.".into();
        return Ok(ret);
    }
    if call.test && test_name.is_none() {
        ret.result = None;
        ret.comment = format!("Command \"{name}\" would have been executed");
        ret.changes.insert("cmd".into(), json!(name));
        return Ok(if is_stateful { reinterpreted(ret) } else { ret });
    }
    if let Some(cwd) = call.arg("cwd").map(py_str).filter(|c| !c.is_empty())
        && !std::path::Path::new(&cwd).is_dir()
    {
        ret.comment = format!("Desired working directory \"{cwd}\" is not available");
        return Ok(ret);
    }
    let mut kw = cmd_kwargs(
        &call,
        &[
            "cwd",
            "root",
            "runas",
            "use_vt",
            "env",
            "prepend_path",
            "output_loglevel",
            "hide_output",
            "success_retcodes",
            "success_stdout",
            "success_stderr",
            "timeout",
        ],
    );
    kw.insert("cmd".into(), json!(name));
    kw.insert("python_shell".into(), json!(true));
    let out = saltq_exec::call(
        &call.ctx,
        "cmd.run_all",
        Vec::new(),
        kw,
        &PubInfo::default(),
    )
    .await;
    let Value::Object(cmd_all) = out.ret else {
        ret.comment = py_str(&out.ret);
        return Ok(ret);
    };
    let retcode = cmd_all.get("retcode").cloned().unwrap_or(json!(0));
    ret.result = Some(!truthy(&retcode));
    ret.changes = cmd_all;
    ret.comment = format!("Command \"{name}\" run");
    if call.arg("ignore_timeout").is_some_and(truthy)
        && ret.changes.get("retcode") == Some(&json!(1))
        && ret
            .changes
            .get("stdout")
            .is_some_and(|s| py_str(s).contains("Timed out after"))
    {
        ret.changes.insert("retcode".into(), json!(0));
        ret.result = Some(true);
    }
    if is_stateful {
        ret = reinterpreted(ret);
    }
    if call.test && retcode == json!(0) && !ret.changes.is_empty() {
        ret.result = None;
    }
    Ok(ret)
}

async fn script(call: StateCall) -> Result<Ret, StateError> {
    let (is_stateful, test_name) = stateful(&call);
    let name = match (&test_name, call.test) {
        (Some(t), true) => t.clone(),
        _ => call.name.clone(),
    };
    let mut ret = Ret::new(&name);
    ret.result = Some(false);
    if let Some(env) = call.arg("env")
        && !env.is_array()
        && !env.is_object()
    {
        ret.comment = "Invalidly-formatted 'env' parameter. See documentation.".into();
        return Ok(ret);
    }
    if call
        .arg("context")
        .is_some_and(|c| truthy(c) && !c.is_object())
    {
        ret.comment = "Invalidly-formatted 'context' parameter. Must be formed as a dict.".into();
        return Ok(ret);
    }
    if call
        .arg("defaults")
        .is_some_and(|c| truthy(c) && !c.is_object())
    {
        ret.comment = "Invalidly-formatted 'defaults' parameter. Must be formed as a dict.".into();
        return Ok(ret);
    }
    let mut context = call
        .arg("defaults")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(c) = call.arg("context").and_then(Value::as_object) {
        context.extend(c.clone());
    }
    let mut kw = cmd_kwargs(
        &call,
        &[
            "runas",
            "password",
            "env",
            "cwd",
            "template",
            "timeout",
            "output_loglevel",
            "hide_output",
            "use_vt",
            "success_retcodes",
            "success_stdout",
            "success_stderr",
        ],
    );
    kw.shift_remove("source");
    kw.shift_remove("defaults");
    kw.insert("context".into(), Value::Object(context));
    kw.insert("saltenv".into(), json!(call.saltenv));
    let source = call
        .arg("source")
        .map(py_str)
        .unwrap_or_else(|| name.clone());
    if !kw.get("args").is_some_and(truthy)
        && let Some((_, rest)) = name.split_once(' ')
        && name.split_whitespace().count() > 1
    {
        kw.insert("args".into(), json!(rest));
    }
    if call.test && test_name.is_none() {
        ret.result = None;
        ret.comment = format!("Command '{name}' would have been executed");
        return Ok(if is_stateful { reinterpreted(ret) } else { ret });
    }
    if let Some(cwd) = call.arg("cwd").map(py_str).filter(|c| !c.is_empty())
        && !std::path::Path::new(&cwd).is_dir()
    {
        ret.comment = format!("Desired working directory \"{cwd}\" is not available");
        return Ok(ret);
    }
    kw.insert("python_shell".into(), json!(true));
    let local = match fetch_script(&call, &source, kw.shift_remove("template")).await {
        Ok(Some(path)) => path,
        Ok(None) => {
            ret.changes = serde_json::from_value(
                json!({"pid": 0, "retcode": 1, "stdout": "", "stderr": "", "cache_error": true}),
            )
            .unwrap_or_default();
            ret.comment = format!(
                "Unable to cache script {source} from saltenv '{}'",
                call.saltenv
            );
            return Ok(ret);
        }
        Err(e) => {
            ret.comment = e;
            return Ok(ret);
        }
    };
    let out = saltq_exec::call(
        &call.ctx,
        "cmd.script",
        vec![json!(local.path.display().to_string())],
        kw,
        &PubInfo::default(),
    )
    .await;
    let Value::Object(cmd_all) = out.ret else {
        ret.comment = py_str(&out.ret).trim_start_matches("ERROR: ").to_owned();
        return Ok(ret);
    };
    let retcode = cmd_all.get("retcode").cloned().unwrap_or(json!(0));
    ret.result = Some(!truthy(&retcode));
    ret.comment = if cmd_all.get("cache_error").is_some_and(truthy) {
        format!(
            "Unable to cache script {source} from saltenv '{}'",
            call.saltenv
        )
    } else {
        format!("Command '{name}' run")
    };
    ret.changes = cmd_all;
    if is_stateful {
        ret = reinterpreted(ret);
    }
    if call.test && retcode == json!(0) && !ret.changes.is_empty() {
        ret.result = None;
    }
    Ok(ret)
}

async fn mod_watch(call: StateCall) -> Result<Ret, StateError> {
    let sfun = call.args.get("sfun").map(py_str).unwrap_or_default();
    let is_stateful = call.arg("stateful").is_some_and(truthy);
    match sfun.as_str() {
        "wait" | "run" | "watch" => {
            let ret = run(call).await?;
            Ok(if is_stateful { reinterpreted(ret) } else { ret })
        }
        "wait_script" | "script" => {
            let ret = script(call).await?;
            Ok(if is_stateful { reinterpreted(ret) } else { ret })
        }
        "wait_call" | "call" => {
            let mut ret = Ret::new(&call.name);
            ret.result = Some(false);
            ret.comment = format!("cmd.{sfun} needs a named parameter func");
            Ok(ret)
        }
        _ => {
            let mut ret = Ret::new(&call.name);
            ret.result = Some(false);
            ret.comment = format!(
                "cmd.{sfun} does not work with the watch requisite, please use cmd.wait or \
                 cmd.wait_script"
            );
            Ok(ret)
        }
    }
}

/// Python's `shlex.split` (POSIX mode): words split on whitespace, quotes removed,
/// backslash escapes outside single quotes; `None` for an unclosed quote.
fn shlex_split(s: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        ch => cur.push(ch),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.peek() {
                            Some(&n) if matches!(n, '"' | '\\') => {
                                cur.push(n);
                                chars.next();
                            }
                            _ => cur.push('\\'),
                        },
                        ch => cur.push(ch),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Some(words)
}
