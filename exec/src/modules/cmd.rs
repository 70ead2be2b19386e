//! Salt's `cmd` module: `cmd.run`, `run_all`, `run_stdout`, `run_stderr`, `retcode`, `shell`,
//! `script`, `which` and `has_exec`, with Salt's parameters, defaults, environment, working
//! directory, shell, `runas`/`group` and timeout behaviour.
//!
//! Not supported yet, and refused with an error rather than ignored: `umask`, `template`,
//! `use_vt=True`, `bg=True`. `salt://` script sources come through the minion's fileserver
//! client (`cp.cache_file`), as in Salt. `output_loglevel` only concerns
//! logging, which saltq does not do for command output. Windows-only parameters are ignored.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, fnmatch, truthy};

use crate::error::ExecError;
use crate::process::{self, Finished, Spawn};
use crate::pyish::{py_int, shlex_split};
use crate::spec::{Call, Function, Param};
use signatures::{
    RETCODE_PARAMS, RUN_ALL_PARAMS, RUN_PARAMS, RUN_STDOUT_PARAMS, SCRIPT_PARAMS, SHELL_PARAMS,
};

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
    Function::new("cmd.has_exec", handler!(has_exec))
        .params(&[Param::req("cmd")])
        .doc(HAS_EXEC_DOC),
    Function::new("cmd.run_all", handler!(run_all))
        .params(RUN_ALL_PARAMS)
        .kwargs()
        .doc(RUN_ALL_DOC),
    Function::new("cmd.run_stderr", handler!(run_stderr))
        .params(RUN_STDOUT_PARAMS)
        .kwargs()
        .doc(RUN_STDERR_DOC),
    Function::new("cmd.run_stdout", handler!(run_stdout))
        .params(RUN_STDOUT_PARAMS)
        .kwargs()
        .doc(RUN_STDOUT_DOC),
    Function::new("cmd.script", handler!(script))
        .params(SCRIPT_PARAMS)
        .kwargs()
        .doc(SCRIPT_DOC),
    Function::new("cmd.shell", handler!(shell))
        .params(SHELL_PARAMS)
        .kwargs()
        .doc(SHELL_DOC),
    Function::new("cmd.which", handler!(which))
        .params(&[Param::req("cmd")])
        .doc(WHICH_DOC),
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
async fn execute(call: &Call, cmd: &Value, mode: Mode) -> Result<Ran, ExecError> {
    for name in ["umask", "template"] {
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

    let identity = run_as(call)?;
    let (python_shell, shell) = shell_choice(call, mode.force_shell);
    let cwd = match (setting(call, "cwd"), &identity) {
        (Some(v), _) => python::str(v),
        (None, Some(id)) if id.user.is_some() => id.home.clone(),
        (None, _) => default_cwd(),
    };
    if let Some(shell) = &shell
        && !is_executable_file(Path::new(shell))
    {
        return Err(ExecError::execution(format!(
            "The shell {shell} is not available"
        )));
    }
    check_permitted(call, cmd)?;
    let env = build_env(call, identity.as_ref());
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
            argv.extend(items.iter().map(python::str));
            (argv, python::repr(cmd))
        }
        (Some(shell), other) => (
            vec![shell.clone(), "-c".into(), python::str(other)],
            python::str(other),
        ),
        (None, Value::Array(items)) => {
            let argv: Vec<String> = items.iter().map(python::str).collect();
            let shown = python::repr(&Value::from(argv.clone()));
            (argv, shown)
        }
        (None, other) => {
            let argv = shlex_split(&python::str(other))?;
            let shown = python::repr(&Value::from(argv.clone()));
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
                format!("Error: timeout {} must be a number", python::str(other)),
            ));
        }
    };
    let stdin = setting(call, "stdin").map(|v| {
        let text = python::str(v);
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
        merge_stderr: mode.merge_stderr,
        timeout,
        uid: identity.as_ref().and_then(|id| id.uid),
        gid: identity.as_ref().and_then(|id| id.gid),
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
                python::repr(&context),
                os_reason(&e, &argv[0])
            ))
        })?;

    let ignore_retcode = flag(call, "ignore_retcode", false);
    let ran = match finished {
        Finished::TimedOut { pid } => {
            let limit = timeout_value.map(python::str).unwrap_or_default();
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

/// How a public function runs its command.
#[derive(Debug, Clone, Copy, Default)]
struct Mode {
    /// Send stderr into stdout.
    merge_stderr: bool,
    /// Always through the shell (`cmd.shell`), whatever `python_shell` says.
    force_shell: bool,
}

/// Who a `runas`/`group` command runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    /// The user's name, when `runas` is given.
    user: Option<String>,
    /// The uid to switch to (unset: the minion's).
    uid: Option<u32>,
    /// The gid to switch to (unset: the minion's).
    gid: Option<u32>,
    /// The user's home directory: the default cwd and `$HOME`.
    home: String,
}

/// Resolves `runas` and `group`. Switching user needs the minion to run as root; asking for
/// the user the minion already runs as changes nothing. Supplementary groups are dropped
/// (only the primary group, or `group`, is kept).
fn run_as(call: &Call) -> Result<Option<Identity>, ExecError> {
    let runas = setting(call, "runas")
        .map(python::str)
        .filter(|s| !s.is_empty());
    let group = setting(call, "group")
        .map(python::str)
        .filter(|s| !s.is_empty());
    if runas.is_none() && group.is_none() {
        return Ok(None);
    }
    let me = nix::unistd::Uid::current();
    let mut id = Identity {
        user: None,
        uid: None,
        gid: None,
        home: default_cwd(),
    };
    if let Some(name) = &runas {
        let user = nix::unistd::User::from_name(name)
            .ok()
            .flatten()
            .ok_or_else(|| ExecError::execution(format!("User '{name}' is not available")))?;
        if user.uid != me {
            id.uid = Some(user.uid.as_raw());
            id.gid = Some(user.gid.as_raw());
        }
        id.home = user.dir.display().to_string();
        id.user = Some(user.name);
    }
    if let Some(name) = &group {
        let found = nix::unistd::Group::from_name(name)
            .ok()
            .flatten()
            .ok_or_else(|| ExecError::execution(format!("Group '{name}' is not available")))?;
        if found.gid != nix::unistd::Gid::current() || id.uid.is_some() {
            id.gid = Some(found.gid.as_raw());
        }
    }
    if (id.uid.is_some() || id.gid.is_some()) && !me.is_root() {
        let who = nix::unistd::User::from_uid(me)
            .ok()
            .flatten()
            .map_or_else(|| me.to_string(), |u| u.name);
        return Err(ExecError::execution(format!(
            "runas and group need the minion to run as root; it runs as {who}"
        )));
    }
    Ok(Some(id))
}

/// Salt's `_python_shell_default` and shell choice: `(python_shell, shell to run it with)`.
fn shell_choice(call: &Call, force_shell: bool) -> (bool, Option<String>) {
    let explicit_shell = setting(call, "shell")
        .map(python::str)
        .filter(|s| !s.is_empty());
    let python_shell = match setting(call, "python_shell") {
        _ if force_shell => true,
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
        Value::Array(items) => items.iter().map(python::str).collect::<Vec<_>>().join(" "),
        other => python::str(other),
    };
    let globs = |key: &str| -> Vec<String> {
        match call.ctx.opt(key) {
            Some(Value::Array(items)) => items.iter().map(python::str).collect(),
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
fn build_env(call: &Call, identity: Option<&Identity>) -> Vec<(OsString, OsString)> {
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
    if let Some(Identity {
        user: Some(user),
        home,
        ..
    }) = identity
    {
        for var in ["USER", "LOGNAME"] {
            env.entry(var).or_insert_with(|| Value::from(user.as_str()));
        }
        env.entry("HOME")
            .or_insert_with(|| Value::from(home.as_str()));
    }
    let notify_given = env.contains_key("NOTIFY_SOCKET");
    for (key, value) in &env {
        run_env.insert(key.into(), python::str(value).into());
    }
    if let Some(prefix) = setting(call, "prepend_path") {
        let mut path = OsString::from(python::str(prefix));
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
        Some(Value::Array(items)) => items.iter().map(python::str).collect(),
        Some(other) => python::str(other)
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
            format!("[Errno {code}] {text}: {}", python::str_repr(program))
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

:param str runas: The user to run the command as (the minion must run as root). The command
    gets the user's uid, primary gid, ``$HOME``, ``$USER`` and ``$LOGNAME``, and starts in the
    user's home unless ``cwd`` is given. Supplementary groups are not set.

:param str group: The group to run the command as (the minion must run as root).

:param str output_loglevel: Accepted for compatibility: saltq does not log command output.

``umask``, ``template``, ``use_vt`` and ``bg`` are not supported by saltq yet.
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
    let mode = Mode {
        merge_stderr: flag(&call, "redirect_stderr", true),
        ..Mode::default()
    };
    let ran = execute(&call, call.arg("cmd"), mode).await?;
    let hide = flag(&call, "hide_output", false);
    if !ran.timed_out
        && ran.retcode != 0
        && !flag(&call, "ignore_retcode", false)
        && flag(&call, "raise_err", false)
        && setting(&call, "output_loglevel")
            .map(python::str)
            .as_deref()
            != Some("quiet")
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
    let mode = Mode {
        merge_stderr: flag(&call, "redirect_stderr", false),
        ..Mode::default()
    };
    let ran = execute(&call, call.arg("cmd"), mode).await?;
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
    let mode = Mode {
        merge_stderr: true,
        ..Mode::default()
    };
    let ran = execute(&call, call.arg("cmd"), mode).await?;
    Ok(Value::from(ran.retcode))
}

/// `cmd.run_stdout` and `cmd.run_stderr`: the command's stdout or stderr, separately.
async fn one_stream(call: &Call, stdout: bool) -> Result<Value, ExecError> {
    let ran = execute(call, call.arg("cmd"), Mode::default()).await?;
    if flag(call, "hide_output", false) {
        return Ok(Value::from(""));
    }
    Ok(Value::String(if stdout { ran.stdout } else { ran.stderr }))
}

const RUN_STDOUT_DOC: &str = concat!(
    "Run a command and return only its standard output, trailing whitespace
stripped unless ``rstrip=False``. A non-zero exit code becomes the job's retcode.

",
    shared_params_doc!(),
    "
CLI Example:

.. code-block:: bash

    salt '*' cmd.run_stdout \"ls -l | awk '/foo/{print \\\\$2}'\" python_shell=True
"
);

async fn run_stdout(call: Call) -> Result<Value, ExecError> {
    one_stream(&call, true).await
}

const RUN_STDERR_DOC: &str = concat!(
    "Run a command and return only its standard error, trailing whitespace
stripped unless ``rstrip=False``. A non-zero exit code becomes the job's retcode.

",
    shared_params_doc!(),
    "
CLI Example:

.. code-block:: bash

    salt '*' cmd.run_stderr \"ls -l | awk '/foo/{print \\\\$2}'\" python_shell=True
"
);

async fn run_stderr(call: Call) -> Result<Value, ExecError> {
    one_stream(&call, false).await
}

const SHELL_DOC: &str = concat!(
    "Run a command through the shell (``python_shell=True`` always) and return
its output as ``cmd.run`` does: pipes, redirection, variables and globbing all work. The
shell is ``shell``, else the minion's ``$SHELL``, else ``/bin/sh``.

",
    shared_params_doc!(),
    "
.. warning::
    The shell accepts any input, including ``good_command; rm -rf /``: sanitize what you pass.

CLI Example:

.. code-block:: bash

    salt '*' cmd.shell \"ls -l | awk '/foo/{print \\\\$2}'\"
    salt '*' cmd.shell 'echo $HOME' runas=nobody
"
);

async fn shell(call: Call) -> Result<Value, ExecError> {
    let mode = Mode {
        merge_stderr: true,
        force_shell: true,
    };
    let ran = execute(&call, call.arg("cmd"), mode).await?;
    Ok(Value::String(if flag(&call, "hide_output", false) {
        String::new()
    } else {
        ran.stdout
    }))
}

const SCRIPT_DOC: &str = concat!(
    "Copy a script file to a temporary file (in ``cwd`` when given) and run it
with ``args``, then remove it. Returns the dict ``cmd.run_all`` returns. A missing source
gives ``{pid: 0, retcode: 1, stdout: '', stderr: '', cache_error: True}``, as in Salt.

:param str source: The script: ``salt://`` on the master's fileserver (cached on the
    minion, fetched again only when it changed), or a path on the minion (``file://``
    allowed).

:param args: Arguments: a list, each one its own argument, or a string, passed as one
    argument.

",
    shared_params_doc!(),
    "
CLI Example:

.. code-block:: bash

    salt '*' cmd.script /srv/scripts/runme.sh
    salt '*' cmd.script /srv/scripts/runme.sh args='[\"-a\", \"b c\"]'
"
);

/// Removes the script's temporary copy when the job is done with it (or dropped).
struct TempScript(PathBuf);

impl Drop for TempScript {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Copies the script to a fresh private file (mode 0500, owned by `runas`) in `dir`.
fn stage_script(source: &Path, dir: &Path, uid: Option<u32>) -> io::Result<TempScript> {
    use std::os::unix::fs::OpenOptionsExt;
    let ext = source
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let contents = std::fs::read(source)?;
    for attempt in 0..100u32 {
        let nonce: u64 = rand::random();
        let path = dir.join(format!("__salt.tmp.{nonce:016x}{ext}"));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path);
        match file {
            Ok(mut f) => {
                let staged = TempScript(path);
                io::Write::write_all(&mut f, &contents)?;
                drop(f);
                std::fs::set_permissions(&staged.0, std::fs::Permissions::from_mode(0o500))?;
                if let Some(uid) = uid {
                    std::os::unix::fs::chown(&staged.0, Some(uid), None)?;
                }
                return Ok(staged);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 99 => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free temporary file name"))
}

async fn script(call: Call) -> Result<Value, ExecError> {
    let source = python::str(call.arg("source"));
    let path = if source.starts_with("salt://") {
        // As Salt: cache it from the fileserver (fetched only when it changed), run a copy.
        let saltenv = match call.arg("saltenv") {
            v if python::truthy(v) => python::str(v),
            _ => call
                .ctx
                .opt("saltenv")
                .filter(|v| python::truthy(v))
                .map_or_else(|| "base".to_owned(), python::str),
        };
        match super::cp::cache_salt_url(&call, &source, &saltenv).await? {
            Some(p) => p,
            None => {
                call.set_retcode(1);
                return Ok(
                    json!({"pid": 0, "retcode": 1, "stdout": "", "stderr": "", "cache_error": true}),
                );
            }
        }
    } else {
        PathBuf::from(source.strip_prefix("file://").unwrap_or(&source))
    };
    let dir =
        setting(&call, "cwd").map_or_else(std::env::temp_dir, |v| PathBuf::from(python::str(v)));
    let uid = run_as(&call)?.and_then(|id| id.uid);
    let staged = match stage_script(&path, &dir, uid) {
        Ok(staged) => staged,
        Err(e) if e.kind() == io::ErrorKind::NotFound && path.exists() => {
            return Err(ExecError::execution(format!(
                "Specified cwd '{}' either not absolute or does not exist",
                dir.display()
            )));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // Salt leaves the job's retcode at 0 here; saltq reports the failure.
            call.set_retcode(1);
            return Ok(
                json!({"pid": 0, "retcode": 1, "stdout": "", "stderr": "", "cache_error": true}),
            );
        }
        Err(e) => {
            return Err(ExecError::execution(format!(
                "Unable to stage script {}: {e}",
                path.display()
            )));
        }
    };
    let mut cmd = vec![Value::from(staged.0.display().to_string())];
    match call.arg("args") {
        Value::Null => {}
        Value::Array(items) => cmd.extend(items.iter().map(|v| Value::from(python::str(v)))),
        other => cmd.push(Value::from(python::str(other))),
    }
    let ran = execute(&call, &Value::Array(cmd), Mode::default()).await?;
    drop(staged);
    let (stdout, stderr) = if flag(&call, "hide_output", false) {
        (String::new(), String::new())
    } else {
        (ran.stdout, ran.stderr)
    };
    Ok(json!({"pid": ran.pid, "retcode": ran.retcode, "stdout": stdout, "stderr": stderr}))
}

const WHICH_DOC: &str = "Return the path of an executable available on the minion, or ``None``

CLI Example:

.. code-block:: bash

    salt '*' cmd.which cat
";

/// Salt's `salt.utils.path.which`: `cmd` itself when it is an executable file, else the
/// first executable `dir/cmd` on `$PATH` and the usual system directories.
pub(crate) fn which_path(cmd: &str) -> Option<String> {
    if cmd.is_empty() {
        return None;
    }
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file())
            && nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_ok()
    };
    if executable(Path::new(cmd)) {
        return Some(cmd.to_owned());
    }
    let path = std::env::var("PATH").unwrap_or_default();
    let mut dirs: Vec<&str> = path.split(':').collect();
    for extra in [
        "/sbin",
        "/bin",
        "/usr/sbin",
        "/usr/bin",
        "/usr/local/sbin",
        "/usr/local/bin",
    ] {
        if !dirs.contains(&extra) {
            dirs.push(extra);
        }
    }
    dirs.iter()
        .map(|dir| Path::new(dir).join(cmd))
        .find(|p| executable(p))
        .map(|p| p.display().to_string())
}

async fn which(call: Call) -> Result<Value, ExecError> {
    Ok(which_path(&python::str(call.arg("cmd"))).map_or(Value::Null, Value::String))
}

const HAS_EXEC_DOC: &str = "Return ``True`` if the executable is available on the minion

CLI Example:

.. code-block:: bash

    salt '*' cmd.has_exec cat
";

async fn has_exec(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(
        which_path(&python::str(call.arg("cmd"))).is_some(),
    ))
}

mod signatures;

#[cfg(test)]
mod tests;
