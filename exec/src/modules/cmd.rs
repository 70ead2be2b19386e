//! Salt's `cmd` module: `cmd.run`, `cmd.run_all` and `cmd.retcode`, with Salt's parameters,
//! defaults, environment, working directory, shell and timeout behaviour.
//!
//! Not supported yet, and refused with an error rather than ignored: `runas`, `group`,
//! `umask`, `template`, `use_vt=True`, `bg=True`. Windows-only parameters are ignored.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::error::ExecError;
use crate::process::{self, Finished, Spawn};
use crate::pyish::{fnmatch, py_int, py_repr, py_repr_str, py_str, shlex_split, truthy};
use crate::spec::{Call, Function, Lit, Param};

/// The `cmd` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("cmd.retcode", handler!(retcode))
        .params(RETCODE_PARAMS)
        .kwargs()
        .doc(RETCODE_DOC),
    Function::new("cmd.run", handler!(run))
        .params(RUN_PARAMS)
        .kwargs()
        .doc(RUN_DOC),
    Function::new("cmd.run_all", handler!(run_all))
        .params(RUN_ALL_PARAMS)
        .kwargs()
        .doc(RUN_ALL_DOC),
];

const NONE: Lit = Lit::None;
const FALSE: Lit = Lit::Bool(false);
const TRUE: Lit = Lit::Bool(true);

/// `cmd.run`'s signature in salt 3007.8.
const RUN_PARAMS: &[Param] = &[
    Param::req("cmd"),
    Param::opt("cwd", NONE),
    Param::opt("stdin", NONE),
    Param::opt("runas", NONE),
    Param::opt("group", NONE),
    Param::opt("shell", NONE),
    Param::opt("python_shell", NONE),
    Param::opt("env", NONE),
    Param::opt("clean_env", FALSE),
    Param::opt("template", NONE),
    Param::opt("rstrip", TRUE),
    Param::opt("umask", NONE),
    Param::opt("output_encoding", NONE),
    Param::opt("output_loglevel", Lit::Str("debug")),
    Param::opt("log_callback", NONE),
    Param::opt("hide_output", FALSE),
    Param::opt("timeout", NONE),
    Param::opt("reset_system_locale", TRUE),
    Param::opt("ignore_retcode", FALSE),
    Param::opt("saltenv", NONE),
    Param::opt("use_vt", FALSE),
    Param::opt("redirect_stderr", TRUE),
    Param::opt("bg", FALSE),
    Param::opt("password", NONE),
    Param::opt("encoded_cmd", FALSE),
    Param::opt("raise_err", FALSE),
    Param::opt("prepend_path", NONE),
    Param::opt("success_retcodes", NONE),
    Param::opt("success_stdout", NONE),
    Param::opt("success_stderr", NONE),
];

/// `cmd.run_all`'s signature in salt 3007.8.
const RUN_ALL_PARAMS: &[Param] = &[
    Param::req("cmd"),
    Param::opt("cwd", NONE),
    Param::opt("stdin", NONE),
    Param::opt("runas", NONE),
    Param::opt("group", NONE),
    Param::opt("shell", NONE),
    Param::opt("python_shell", NONE),
    Param::opt("env", NONE),
    Param::opt("clean_env", FALSE),
    Param::opt("template", NONE),
    Param::opt("rstrip", TRUE),
    Param::opt("umask", NONE),
    Param::opt("output_encoding", NONE),
    Param::opt("output_loglevel", Lit::Str("debug")),
    Param::opt("log_callback", NONE),
    Param::opt("hide_output", FALSE),
    Param::opt("timeout", NONE),
    Param::opt("reset_system_locale", TRUE),
    Param::opt("ignore_retcode", FALSE),
    Param::opt("saltenv", NONE),
    Param::opt("use_vt", FALSE),
    Param::opt("redirect_stderr", FALSE),
    Param::opt("password", NONE),
    Param::opt("encoded_cmd", FALSE),
    Param::opt("prepend_path", NONE),
    Param::opt("success_retcodes", NONE),
    Param::opt("success_stdout", NONE),
    Param::opt("success_stderr", NONE),
];

/// `cmd.retcode`'s signature in salt 3007.8.
const RETCODE_PARAMS: &[Param] = &[
    Param::req("cmd"),
    Param::opt("cwd", NONE),
    Param::opt("stdin", NONE),
    Param::opt("runas", NONE),
    Param::opt("group", NONE),
    Param::opt("shell", NONE),
    Param::opt("python_shell", NONE),
    Param::opt("env", NONE),
    Param::opt("clean_env", FALSE),
    Param::opt("template", NONE),
    Param::opt("umask", NONE),
    Param::opt("output_encoding", NONE),
    Param::opt("output_loglevel", Lit::Str("debug")),
    Param::opt("log_callback", NONE),
    Param::opt("timeout", NONE),
    Param::opt("reset_system_locale", TRUE),
    Param::opt("ignore_retcode", FALSE),
    Param::opt("saltenv", NONE),
    Param::opt("use_vt", FALSE),
    Param::opt("password", NONE),
    Param::opt("success_retcodes", NONE),
    Param::opt("success_stdout", NONE),
    Param::opt("success_stderr", NONE),
];

/// The `LC_*` variables Salt sets to `C` (unless given) so that it can parse English output.
const LOCALE_VARS: &[&str] = &[
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_COLLATE",
    "LC_MONETARY",
    "LC_MESSAGES",
    "LC_PAPER",
    "LC_NAME",
    "LC_ADDRESS",
    "LC_TELEPHONE",
    "LC_MEASUREMENT",
    "LC_IDENTIFICATION",
    "LANGUAGE",
];

/// An argument by name, from the signature or from `**kwargs` (Salt passes unknown keywords
/// on to `_run`, so `cmd.retcode rstrip=False` works), `None` when unset or null.
fn setting<'a>(call: &'a Call, name: &str) -> Option<&'a Value> {
    call.bound
        .params
        .get(name)
        .or_else(|| call.kwargs().get(name))
        .filter(|v| !v.is_null())
}

fn flag(call: &Call, name: &str, default: bool) -> bool {
    setting(call, name).map_or(default, truthy)
}

/// What `_run` gives back to the three public functions.
#[derive(Debug)]
struct Ran {
    pid: u32,
    retcode: i32,
    stdout: String,
    stderr: String,
    timed_out: bool,
}

/// Salt's `_run`: prepares and runs the command, sets the job's retcode, and returns the
/// command's pid, exit code and decoded output.
async fn execute(call: &Call, merge_stderr: bool) -> Result<Ran, ExecError> {
    for name in ["runas", "group", "umask", "template"] {
        if setting(call, name).is_some() {
            return Err(ExecError::execution(format!(
                "saltq does not support the {name} argument of {} yet",
                call.fun
            )));
        }
    }
    for name in ["use_vt", "bg"] {
        if flag(call, name, false) {
            return Err(ExecError::execution(format!(
                "saltq does not support {name}=True in {} yet",
                call.fun
            )));
        }
    }

    let (python_shell, shell) = shell_choice(call);
    let cwd = match setting(call, "cwd") {
        Some(v) => py_str(v),
        None => default_cwd(),
    };
    if let Some(shell) = &shell
        && !is_executable_file(Path::new(shell))
    {
        return Err(ExecError::execution(format!(
            "The shell {shell} is not available"
        )));
    }
    let cmd = call.arg("cmd");
    check_permitted(call, cmd)?;
    let env = build_env(call);
    let cwd_path = PathBuf::from(&cwd);
    if !cwd_path.is_absolute() || !cwd_path.is_dir() {
        return Err(ExecError::execution(format!(
            "Specified cwd '{cwd}' either not absolute or does not exist"
        )));
    }

    // Python's subprocess with shell=True runs [shell, "-c", cmd]; otherwise a string
    // command is split like a POSIX shell would (without expanding anything).
    let (argv, shown): (Vec<String>, String) = match (&shell, cmd) {
        (Some(shell), Value::Array(items)) => {
            let mut argv = vec![shell.clone(), "-c".into()];
            argv.extend(items.iter().map(py_str));
            (argv, py_repr(cmd))
        }
        (Some(shell), other) => (
            vec![shell.clone(), "-c".into(), py_str(other)],
            py_str(other),
        ),
        (None, Value::Array(items)) => {
            let argv: Vec<String> = items.iter().map(py_str).collect();
            let shown = py_repr(&Value::from(argv.clone()));
            (argv, shown)
        }
        (None, other) => {
            let argv = shlex_split(&py_str(other))?;
            let shown = py_repr(&Value::from(argv.clone()));
            (argv, shown)
        }
    };
    if argv.is_empty() {
        return Err(ExecError::exception(
            "IndexError",
            "list index out of range",
        ));
    }
    let success_retcodes = success_retcodes(call)?;
    let success_stdout = split_input(setting(call, "success_stdout"));
    let success_stderr = split_input(setting(call, "success_stderr"));
    let timeout_value = setting(call, "timeout").filter(|v| truthy(v));
    let timeout = match timeout_value {
        None => None,
        Some(Value::Number(n)) => Some(Duration::from_secs_f64(n.as_f64().unwrap_or(0.0).max(0.0))),
        Some(other) => {
            return Err(ExecError::exception(
                "TimedProcTimeoutError",
                format!("Error: timeout {} must be a number", py_str(other)),
            ));
        }
    };
    let stdin = setting(call, "stdin").map(|v| {
        let text = py_str(v);
        let text = if flag(call, "stdin_raw_newlines", false) {
            text
        } else {
            text.replace("\\n", "\n")
        };
        text.into_bytes()
    });

    let spec = Spawn {
        argv: argv.iter().map(OsString::from).collect(),
        cwd: cwd_path,
        env,
        stdin,
        merge_stderr,
        timeout,
    };
    let finished = process::run(&spec, &call.ctx.processes)
        .await
        .map_err(|e| {
            let context = json!({
                "cwd": cwd,
                "shell": python_shell,
                "stdin": setting(call, "stdin").cloned(),
                "timeout": timeout_value.cloned(),
            });
            ExecError::execution(format!(
                "Unable to run command '{shown}' with the context '{}', reason: {}",
                py_repr(&context),
                os_reason(&e, &argv[0])
            ))
        })?;

    let ignore_retcode = flag(call, "ignore_retcode", false);
    let ran = match finished {
        Finished::TimedOut { pid } => {
            let limit = timeout_value.map(py_str).unwrap_or_default();
            Ran {
                pid,
                retcode: 1,
                stdout: format!("{shown} : Timed out after {limit} seconds"),
                stderr: String::new(),
                timed_out: true,
            }
        }
        Finished::Exited {
            pid,
            code,
            stdout,
            stderr,
        } => {
            let rstrip = flag(call, "rstrip", true);
            let decode = |bytes: &[u8]| {
                let text = String::from_utf8_lossy(bytes);
                if rstrip {
                    text.trim_end().to_owned()
                } else {
                    text.into_owned()
                }
            };
            let (stdout, stderr) = (decode(&stdout), decode(&stderr));
            let succeeded = success_retcodes.contains(&code)
                || success_stdout.iter().any(|s| stdout.contains(s.as_str()))
                || success_stderr.iter().any(|s| stderr.contains(s.as_str()));
            Ran {
                pid,
                retcode: if succeeded { 0 } else { code },
                stdout,
                stderr,
                timed_out: false,
            }
        }
    };
    // Salt leaves the job's retcode at 0 when the command timed out (it returns before
    // setting it); saltq reports the timeout as a failure.
    call.set_retcode(if ignore_retcode { 0 } else { ran.retcode });
    Ok(ran)
}

/// Salt's `_python_shell_default` and shell choice: `(python_shell, shell to run it with)`.
fn shell_choice(call: &Call) -> (bool, Option<String>) {
    let explicit_shell = setting(call, "shell").map(py_str).filter(|s| !s.is_empty());
    let python_shell = match setting(call, "python_shell") {
        Some(v) => truthy(v),
        None if explicit_shell.is_some() => true,
        None => call.ctx.opt("cmd_safe") == Some(&Value::Bool(false)),
    };
    let shell = match explicit_shell {
        Some(s) => Some(s),
        None if python_shell => Some(default_shell()),
        None => None,
    };
    (python_shell, shell.filter(|_| python_shell))
}

/// The minion's shell: `$SHELL`, else `/bin/sh` (Salt's `grains.extra.shell`).
pub(crate) fn default_shell() -> String {
    std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".to_owned())
}

/// The minion user's home directory when readable, else `/`.
fn default_cwd() -> String {
    std::env::var("HOME")
        .ok()
        .filter(|home| std::fs::read_dir(home).is_ok())
        .unwrap_or_else(|| "/".to_owned())
}

fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `cmd_blacklist_glob` and `cmd_whitelist_glob` from the minion config (Salt's `_check_avail`).
fn check_permitted(call: &Call, cmd: &Value) -> Result<(), ExecError> {
    let line = match cmd {
        Value::Array(items) => items.iter().map(py_str).collect::<Vec<_>>().join(" "),
        other => py_str(other),
    };
    let globs = |key: &str| -> Vec<String> {
        match call.ctx.opt(key) {
            Some(Value::Array(items)) => items.iter().map(py_str).collect(),
            Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
            _ => Vec::new(),
        }
    };
    let black = globs("cmd_blacklist_glob");
    let white = globs("cmd_whitelist_glob");
    let blacklisted = black.iter().any(|g| fnmatch(&line, g));
    let whitelisted = white.is_empty() || white.iter().any(|g| fnmatch(&line, g));
    if blacklisted || !whitelisted {
        return Err(ExecError::execution(format!(
            "The shell command \"{line}\" is not permitted"
        )));
    }
    Ok(())
}

/// The command's environment, built as Salt builds it: the `env` argument (a dict, or a list
/// of one-key dicts), the `C` locale unless `reset_system_locale=False`, on top of the
/// minion's own environment unless `clean_env`, `prepend_path` in front of `PATH`, and no
/// `NOTIFY_SOCKET` unless asked for.
fn build_env(call: &Call) -> Vec<(OsString, OsString)> {
    let mut env: Map<String, Value> = match setting(call, "env") {
        Some(Value::Object(m)) => m.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_object)
            .flat_map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())))
            .collect(),
        _ => Map::new(),
    };
    if setting(call, "reset_system_locale") == Some(&Value::Bool(true)) {
        for var in LOCALE_VARS {
            env.entry(*var).or_insert_with(|| Value::from("C"));
        }
    }
    let mut run_env: BTreeMap<OsString, OsString> = if flag(call, "clean_env", false) {
        BTreeMap::new()
    } else {
        std::env::vars_os().collect()
    };
    let notify_given = env.contains_key("NOTIFY_SOCKET");
    for (key, value) in &env {
        run_env.insert(key.into(), py_str(value).into());
    }
    if let Some(prefix) = setting(call, "prepend_path") {
        let mut path = OsString::from(py_str(prefix));
        path.push(":");
        path.push(
            run_env
                .get(&OsString::from("PATH"))
                .cloned()
                .unwrap_or_default(),
        );
        run_env.insert("PATH".into(), path);
    }
    if !notify_given {
        run_env.remove(&OsString::from("NOTIFY_SOCKET"));
    }
    run_env.into_iter().collect()
}

/// Salt's `split_input`: a list, or a comma-separated string.
fn split_input(v: Option<&Value>) -> Vec<String> {
    match v {
        None => Vec::new(),
        Some(Value::Array(items)) => items.iter().map(py_str).collect(),
        Some(other) => py_str(other)
            .split(',')
            .map(|s| s.trim().to_owned())
            .collect(),
    }
}

fn success_retcodes(call: &Call) -> Result<Vec<i32>, ExecError> {
    let Some(v) = setting(call, "success_retcodes") else {
        return Ok(vec![0]);
    };
    let items: Vec<Value> = match v {
        Value::Array(items) => items.clone(),
        other => split_input(Some(other))
            .into_iter()
            .map(Value::from)
            .collect(),
    };
    items
        .iter()
        .map(|i| py_int(i).ok().and_then(|i| i32::try_from(i).ok()))
        .collect::<Option<Vec<i32>>>()
        .ok_or_else(|| ExecError::invocation("success_retcodes must be a list of integers"))
}

/// An OS error as Python words it: `[Errno 2] No such file or directory: 'prog'`.
fn os_reason(e: &io::Error, program: &str) -> String {
    match e.raw_os_error() {
        Some(code) => {
            let text = e.to_string();
            let text = text
                .strip_suffix(&format!(" (os error {code})"))
                .unwrap_or(&text);
            format!("[Errno {code}] {text}: {}", py_repr_str(program))
        }
        None => e.to_string(),
    }
}

/// The parameters `cmd.run`, `cmd.run_all` and `cmd.retcode` share, for their docs.
macro_rules! shared_params_doc {
    () => {
        ":param str cmd: The command to run, e.g. ``ls -lart /home``.

:param str cwd: The directory to run it in. Defaults to the home directory of the user the
    minion runs as.

:param str stdin: Text given to the command on its standard input. ``\\n`` in it becomes a
    newline unless ``stdin_raw_newlines=True``.

:param str shell: The shell to run the command with; implies ``python_shell=True``.
    Defaults to the minion's ``$SHELL``, else ``/bin/sh``.

:param bool python_shell: If ``False`` (the default), the command is split into words like a
    shell would, without pipes, redirection, variables or globbing, and run directly. Set
    to ``True`` to have the shell run it, with all of its features.

:param dict env: Environment variables to set for the command.

    .. code-block:: bash

        salt myminion cmd.run 'some command' env='{\"FOO\": \"bar\"}'

:param bool clean_env: Run with only the variables given in ``env``.

:param str prepend_path: A ``$PATH`` segment to put in front of ``$PATH``.

:param bool reset_system_locale: Run with the ``C`` locale (the default) unless ``env`` sets it.

:param int timeout: Seconds after which the command and everything it started is killed.

:param bool ignore_retcode: Do not count a non-zero exit code as a failure of the job.

:param list success_retcodes: Exit codes to count as success (reported as 0).

:param list success_stdout: Strings whose presence in the output counts as success.

:param list success_stderr: Strings whose presence in stderr counts as success.

``runas``, ``group``, ``umask``, ``template``, ``use_vt`` and ``bg`` are not supported by saltq
yet.
"
    };
}

const RUN_DOC: &str = concat!(
    "Run a command and return its output as a string, standard error included
unless ``redirect_stderr=False``, trailing whitespace stripped unless ``rstrip=False``. A
non-zero exit code becomes the job's retcode.

",
    shared_params_doc!(),
    "
:param bool redirect_stderr: Merge standard error into the output (the default).

:param bool hide_output: Return an empty string instead of the output.

:param bool raise_err: Fail the job with the output as the error when the command exits
    non-zero.

.. warning::
    Without ``python_shell=True`` the command is not run by a shell: pipes, redirection and
    ``&&`` do not work. With it, the shell accepts any input, including
    ``good_command; rm -rf /``: sanitize what you pass.

CLI Example:

.. code-block:: bash

    salt '*' cmd.run \"ls -l | awk '/foo/{print \\\\$2}'\" python_shell=True
    salt '*' cmd.run \"grep f\" stdin='one\\\\ntwo\\\\nthree\\\\nfour\\\\nfive\\\\n'
    salt '*' cmd.run cmd='sed -e s/=/:/g'
"
);

async fn run(call: Call) -> Result<Value, ExecError> {
    let ran = execute(&call, flag(&call, "redirect_stderr", true)).await?;
    let hide = flag(&call, "hide_output", false);
    if !ran.timed_out
        && ran.retcode != 0
        && !flag(&call, "ignore_retcode", false)
        && flag(&call, "raise_err", false)
        && setting(&call, "output_loglevel").map(py_str).as_deref() != Some("quiet")
    {
        return Err(ExecError::execution(if hide {
            String::new()
        } else {
            ran.stdout
        }));
    }
    Ok(Value::String(if hide { String::new() } else { ran.stdout }))
}

const RUN_ALL_DOC: &str = concat!(
    "Run a command and return a dict of its ``pid``, ``retcode``, ``stdout``
and ``stderr`` (both stripped of trailing whitespace unless ``rstrip=False``). A non-zero exit
code becomes the job's retcode.

",
    shared_params_doc!(),
    "
:param bool redirect_stderr: Merge standard error into ``stdout``.

:param bool hide_output: Return empty ``stdout`` and ``stderr``.

CLI Example:

.. code-block:: bash

    salt '*' cmd.run_all \"ls -l | awk '/foo/{print \\\\$2}'\" python_shell=True
"
);

async fn run_all(call: Call) -> Result<Value, ExecError> {
    let ran = execute(&call, flag(&call, "redirect_stderr", false)).await?;
    let hide = flag(&call, "hide_output", false);
    let (stdout, stderr) = if hide {
        (String::new(), String::new())
    } else {
        (ran.stdout, ran.stderr)
    };
    // Salt builds the timeout answer in another order; keep it, as clients may show it.
    Ok(if ran.timed_out {
        json!({"stdout": stdout, "stderr": stderr, "retcode": ran.retcode, "pid": ran.pid})
    } else {
        json!({"pid": ran.pid, "retcode": ran.retcode, "stdout": stdout, "stderr": stderr})
    })
}

const RETCODE_DOC: &str = concat!(
    "Run a command and return its exit code, which also becomes the job's
retcode.

",
    shared_params_doc!(),
    "
CLI Example:

.. code-block:: bash

    salt '*' cmd.retcode \"file /bin/bash\"
    salt '*' cmd.retcode \"grep f\" stdin='one\\\\ntwo\\\\nthree\\\\nfour\\\\nfive\\\\n'
"
);

async fn retcode(call: Call) -> Result<Value, ExecError> {
    let ran = execute(&call, true).await?;
    Ok(Value::from(ran.retcode))
}

#[cfg(test)]
mod tests;
