//! Salt's `alternatives` state module (`salt/states/alternatives.py`): `install`, `remove`,
//! `set` (Salt's `set_`) and `auto`, with the execution side they call
//! (`salt/modules/alternatives.py`: `display`, `check_exists`, `check_installed`, `install`,
//! `remove`, `set`, `auto`) run through `update-alternatives` (`alternatives` on the RedHat
//! family); the current choice comes from exec's `alternatives.show_current`.

use serde_json::{Value, json};

use saltq_exec::Param;
use saltq_semantics::python;

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

/// The `alternatives` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "alternatives.install",
        params: &[
            Param::req("name"),
            Param::req("link"),
            Param::req("path"),
            Param::req("priority"),
        ],
        kwargs: false,
        handler: state_handler!(install),
    },
    StateFunction {
        name: "alternatives.remove",
        params: &[Param::req("name"), Param::req("path")],
        kwargs: false,
        handler: state_handler!(remove),
    },
    StateFunction {
        name: "alternatives.set",
        params: &[Param::req("name"), Param::req("path")],
        kwargs: false,
        handler: state_handler!(set),
    },
    StateFunction {
        name: "alternatives.auto",
        params: &[Param::req("name")],
        kwargs: false,
        handler: state_handler!(auto),
    },
];

/// The tool: `alternatives` on the RedHat family, else `update-alternatives`.
fn tool(call: &StateCall) -> &'static str {
    if call.ctx.grains().get("os_family").and_then(Value::as_str) == Some("RedHat") {
        "alternatives"
    } else {
        "update-alternatives"
    }
}

/// Salt's `cmd.run_all`: (exit code, stdout, stderr), each stripped at the end.
async fn run(call: &StateCall, args: &[&str]) -> Result<(i32, String, String), StateError> {
    let program = tool(call);
    let out = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StateError(format!("{program}: command not found")),
            _ => StateError(format!("failed to run {program}: {e}")),
        })?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).trim_end().to_owned(),
        String::from_utf8_lossy(&out.stderr).trim_end().to_owned(),
    ))
}

/// `alternatives.display`: stdout, or stderr when the tool failed saying something.
async fn display(call: &StateCall, name: &str) -> Result<String, StateError> {
    let (code, out, err) = run(call, &["--display", name]).await?;
    Ok(if code > 0 && !err.is_empty() {
        err
    } else {
        out
    })
}

/// `alternatives.check_exists`: a `--display` line starts with the path.
async fn check_exists(call: &StateCall, name: &str, path: &str) -> Result<bool, StateError> {
    let (code, out, err) = run(call, &["--display", name]).await?;
    if code > 0 && !err.is_empty() {
        return Ok(false);
    }
    Ok(out.lines().any(|l| l.starts_with(path)))
}

/// `alternatives.show_current` (the execution function): where `/etc/alternatives/<name>`
/// points, `None` without it.
async fn show_current(call: &StateCall, name: &str) -> Result<Option<String>, StateError> {
    let current = call
        .salt(
            "alternatives.show_current",
            vec![json!(name)],
            Default::default(),
        )
        .await?;
    Ok(match current {
        Value::String(s) if !s.is_empty() => Some(s),
        _ => None,
    })
}

/// A changing command's answer as Salt's `install`/`remove`/`set`/`auto` give it: stderr
/// when it failed (and, for `install`, said something), else stdout.
fn answer((code, out, err): (i32, String, String), need_stderr: bool) -> String {
    if code > 0 && (!need_stderr || !err.is_empty()) {
        err
    } else {
        out
    }
}

fn arg(call: &StateCall, key: &str) -> String {
    call.arg(key).map(python::str).unwrap_or_default()
}

async fn install(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let link = arg(&call, "link");
    let path = arg(&call, "path");
    let priority = call.arg("priority").cloned().unwrap_or(Value::Null);
    let prio = python::str(&priority);
    let mut ret = Ret::new(&name);
    for (k, v) in [
        ("link", json!(link)),
        ("path", json!(path)),
        ("priority", priority.clone()),
    ] {
        ret.extra.insert(k.into(), v);
    }
    if check_exists(&call, &name, &path).await? {
        ret.comment = format!("Alternative {path} for {name} is already registered");
        return Ok(ret);
    }
    if call.test {
        ret.comment = format!("Alternative will be set for {name} to {path} with priority {prio}");
        ret.result = None;
        return Ok(ret);
    }
    let out = answer(
        run(&call, &["--install", &link, &name, &path, &prio]).await?,
        true,
    );
    if check_exists(&call, &name, &path).await? {
        ret.comment = if show_current(&call, &name).await?.as_deref() == Some(path.as_str()) {
            format!("Alternative for {name} set to path {path} with priority {prio}")
        } else {
            format!(
                "Alternative {path} for {name} registered with priority {prio} and not set to \
                 default"
            )
        };
        ret.changes = serde_json::Map::from_iter([
            ("name".to_owned(), json!(name)),
            ("link".to_owned(), json!(link)),
            ("path".to_owned(), json!(path)),
            ("priority".to_owned(), priority),
        ]);
    } else {
        ret.result = Some(false);
        ret.comment = format!("Alternative for {name} not installed: {out}");
    }
    Ok(ret)
}

async fn remove(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let path = arg(&call, "path");
    let mut ret = Ret::new(&name);
    ret.extra.insert("path".into(), json!(path));
    if check_exists(&call, &name, &path).await? {
        if call.test {
            ret.comment = format!("Alternative for {name} will be removed");
            ret.result = None;
            return Ok(ret);
        }
        run(&call, &["--remove", &name, &path]).await?;
        if let Some(current) = show_current(&call, &name).await? {
            ret.comment = format!("Alternative for {name} removed. Falling back to path {current}");
            ret.changes.insert("path".into(), json!(current));
        } else {
            ret.comment = format!("Alternative for {name} removed");
        }
        return Ok(ret);
    }
    if let Some(current) = show_current(&call, &name).await? {
        ret.comment = format!("Alternative for {name} is set to it's default path {current}");
        return Ok(ret);
    }
    ret.result = Some(false);
    ret.comment = format!("Alternative for {name} doesn't exist");
    Ok(ret)
}

async fn set(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let path = arg(&call, "path");
    let mut ret = Ret::new(&name);
    ret.extra.insert("path".into(), json!(path));
    if show_current(&call, &name).await?.as_deref() == Some(path.as_str()) {
        ret.comment = format!("Alternative for {name} already set to {path}");
        return Ok(ret);
    }
    let shown = display(&call, &name).await?;
    if !shown.lines().any(|l| l.starts_with(&path)) {
        ret.result = Some(false);
        ret.comment = format!("Alternative {path} for {name} doesn't exist");
        return Ok(ret);
    }
    if call.test {
        ret.comment = format!("Alternative for {name} will be set to path {path}");
        ret.result = None;
        return Ok(ret);
    }
    run(&call, &["--set", &name, &path]).await?;
    match show_current(&call, &name).await? {
        Some(current) if current == path => {
            ret.comment = format!("Alternative for {name} set to path {current}");
            ret.changes.insert("path".into(), json!(current));
        }
        _ => ret.comment = format!("Alternative for {name} not updated"),
    }
    Ok(ret)
}

async fn auto(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    let shown = display(&call, &name).await?;
    if shown.lines().next().unwrap_or("").ends_with(" auto mode") {
        ret.comment = format!("{name} already in auto mode");
        return Ok(ret);
    }
    if call.test {
        ret.comment = format!("{name} will be put in auto mode");
        ret.result = None;
        return Ok(ret);
    }
    let out = answer(run(&call, &["--auto", &name]).await?, false);
    ret.changes.insert("result".into(), json!(out));
    Ok(ret)
}
