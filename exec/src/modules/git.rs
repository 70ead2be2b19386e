//! Salt's `git` module (`salt/modules/git.py`): the system's `git` run directly (no shell,
//! `C` locale, in the job's process groups), as `user` when given, with `identity` (ssh keys,
//! through `GIT_SSH_COMMAND`) and `https_user`/`https_pass` (HTTP basic auth in the URL).
//! The functions the `git` states need, with Salt's arguments, return shapes and errors
//! (`Command 'git ...' failed: <stderr>`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, truthy};

use crate::error::ExecError;
use crate::process::{Finished, Spawn};
use crate::pyish::shlex_split;
use crate::spec::{Call, Function, Lit, Param};

#[cfg(test)]
mod tests;

const CWD: Param = Param::req("cwd");
const OPTS: Param = Param::opt("opts", Lit::Str(""));
const GIT_OPTS: Param = Param::opt("git_opts", Lit::Str(""));
const USER: Param = Param::opt("user", Lit::None);
const PASSWORD: Param = Param::opt("password", Lit::None);
const IDENTITY: Param = Param::opt("identity", Lit::None);
const HTTPS_USER: Param = Param::opt("https_user", Lit::None);
const HTTPS_PASS: Param = Param::opt("https_pass", Lit::None);
const IGNORE_RETCODE: Param = Param::opt("ignore_retcode", Lit::Bool(false));
const SALTENV: Param = Param::opt("saltenv", Lit::Str("base"));
const OUTPUT_ENCODING: Param = Param::opt("output_encoding", Lit::None);

/// The `git` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("git.branch", handler!(branch))
        .params(&[
            CWD,
            Param::opt("name", Lit::None),
            OPTS,
            GIT_OPTS,
            USER,
            PASSWORD,
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .doc(BRANCH_DOC),
    Function::new("git.checkout", handler!(checkout))
        .params(&[
            CWD,
            Param::opt("rev", Lit::None),
            Param::opt("force", Lit::Bool(false)),
            OPTS,
            GIT_OPTS,
            USER,
            PASSWORD,
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .doc(CHECKOUT_DOC),
    Function::new("git.clone", handler!(clone))
        .params(&[
            CWD,
            Param::opt("url", Lit::None),
            Param::opt("name", Lit::None),
            OPTS,
            GIT_OPTS,
            USER,
            PASSWORD,
            IDENTITY,
            HTTPS_USER,
            HTTPS_PASS,
            IGNORE_RETCODE,
            SALTENV,
            OUTPUT_ENCODING,
        ])
        .doc(CLONE_DOC),
    Function::new("git.current_branch", handler!(current_branch))
        .params(&[CWD, USER, PASSWORD, IGNORE_RETCODE, OUTPUT_ENCODING])
        .doc(CURRENT_BRANCH_DOC),
    Function::new("git.diff", handler!(diff))
        .params(&[
            CWD,
            Param::opt("item1", Lit::None),
            Param::opt("item2", Lit::None),
            OPTS,
            GIT_OPTS,
            USER,
            PASSWORD,
            Param::opt("no_index", Lit::Bool(false)),
            Param::opt("cached", Lit::Bool(false)),
            Param::opt("paths", Lit::None),
            OUTPUT_ENCODING,
        ])
        .doc(DIFF_DOC),
    Function::new("git.discard_local_changes", handler!(discard_local_changes))
        .params(&[
            CWD,
            Param::opt("path", Lit::Str(".")),
            USER,
            PASSWORD,
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .doc(DISCARD_DOC),
    Function::new("git.fetch", handler!(fetch))
        .params(&[
            CWD,
            Param::opt("remote", Lit::None),
            Param::opt("force", Lit::Bool(false)),
            Param::opt("refspecs", Lit::None),
            OPTS,
            GIT_OPTS,
            USER,
            PASSWORD,
            IDENTITY,
            IGNORE_RETCODE,
            SALTENV,
            OUTPUT_ENCODING,
        ])
        .doc(FETCH_DOC),
    Function::new("git.init", handler!(init))
        .params(&[
            CWD,
            Param::opt("bare", Lit::Bool(false)),
            Param::opt("template", Lit::None),
            Param::opt("separate_git_dir", Lit::None),
            Param::opt("shared", Lit::None),
            OPTS,
            GIT_OPTS,
            USER,
            PASSWORD,
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .doc(INIT_DOC),
    Function::new("git.is_worktree", handler!(is_worktree))
        .params(&[CWD, USER, PASSWORD, OUTPUT_ENCODING])
        .doc(IS_WORKTREE_DOC),
    Function::new("git.list_branches", handler!(list_branches))
        .params(&[
            CWD,
            Param::opt("remote", Lit::Bool(false)),
            USER,
            PASSWORD,
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .doc(LIST_BRANCHES_DOC),
    Function::new("git.list_tags", handler!(list_tags))
        .params(&[CWD, USER, PASSWORD, IGNORE_RETCODE, OUTPUT_ENCODING])
        .doc(LIST_TAGS_DOC),
    Function::new("git.ls_remote", handler!(ls_remote))
        .params(&[
            Param::opt("cwd", Lit::None),
            Param::opt("remote", Lit::Str("origin")),
            Param::opt("ref", Lit::None),
            OPTS,
            GIT_OPTS,
            USER,
            PASSWORD,
            IDENTITY,
            HTTPS_USER,
            HTTPS_PASS,
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
            SALTENV,
        ])
        .doc(LS_REMOTE_DOC),
    Function::new("git.merge", handler!(merge))
        .params(&[
            CWD,
            Param::opt("rev", Lit::None),
            OPTS,
            GIT_OPTS,
            USER,
            PASSWORD,
            IDENTITY,
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .kwargs()
        .doc(MERGE_DOC),
    Function::new("git.merge_base", handler!(merge_base))
        .params(&[
            CWD,
            Param::opt("refs", Lit::None),
            Param::opt("octopus", Lit::Bool(false)),
            Param::opt("is_ancestor", Lit::Bool(false)),
            Param::opt("independent", Lit::Bool(false)),
            Param::opt("fork_point", Lit::None),
            OPTS,
            GIT_OPTS,
            USER,
            PASSWORD,
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .kwargs()
        .doc(MERGE_BASE_DOC),
    Function::new("git.remote_get", handler!(remote_get))
        .params(&[
            CWD,
            Param::opt("remote", Lit::Str("origin")),
            USER,
            PASSWORD,
            Param::opt("redact_auth", Lit::Bool(true)),
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .doc(REMOTE_GET_DOC),
    Function::new("git.remote_refs", handler!(remote_refs))
        .params(&[
            Param::req("url"),
            Param::opt("heads", Lit::Bool(false)),
            Param::opt("tags", Lit::Bool(false)),
            USER,
            PASSWORD,
            IDENTITY,
            HTTPS_USER,
            HTTPS_PASS,
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
            SALTENV,
        ])
        .kwargs()
        .doc(REMOTE_REFS_DOC),
    Function::new("git.remote_set", handler!(remote_set))
        .params(&[
            CWD,
            Param::req("url"),
            Param::opt("remote", Lit::Str("origin")),
            USER,
            PASSWORD,
            HTTPS_USER,
            HTTPS_PASS,
            Param::opt("push_url", Lit::None),
            Param::opt("push_https_user", Lit::None),
            Param::opt("push_https_pass", Lit::None),
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .doc(REMOTE_SET_DOC),
    Function::new("git.remotes", handler!(remotes))
        .params(&[
            CWD,
            USER,
            PASSWORD,
            Param::opt("redact_auth", Lit::Bool(true)),
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .doc(REMOTES_DOC),
    Function::new("git.reset", handler!(reset))
        .params(&[
            CWD,
            OPTS,
            GIT_OPTS,
            USER,
            PASSWORD,
            IDENTITY,
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .doc(RESET_DOC),
    Function::new("git.rev_parse", handler!(rev_parse))
        .params(&[
            CWD,
            Param::opt("rev", Lit::None),
            OPTS,
            GIT_OPTS,
            USER,
            PASSWORD,
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .doc(REV_PARSE_DOC),
    Function::new("git.revision", handler!(revision))
        .params(&[
            CWD,
            Param::opt("rev", Lit::Str("HEAD")),
            Param::opt("short", Lit::Bool(false)),
            USER,
            PASSWORD,
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .doc(REVISION_DOC),
    Function::new("git.status", handler!(status))
        .params(&[CWD, USER, PASSWORD, IGNORE_RETCODE, OUTPUT_ENCODING])
        .doc(STATUS_DOC),
    Function::new("git.submodule", handler!(submodule))
        .params(&[
            CWD,
            Param::req("command"),
            OPTS,
            GIT_OPTS,
            USER,
            PASSWORD,
            IDENTITY,
            IGNORE_RETCODE,
            SALTENV,
            OUTPUT_ENCODING,
        ])
        .kwargs()
        .doc(SUBMODULE_DOC),
    Function::new("git.symbolic_ref", handler!(symbolic_ref))
        .params(&[
            CWD,
            Param::req("ref"),
            Param::opt("value", Lit::None),
            OPTS,
            GIT_OPTS,
            USER,
            PASSWORD,
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .doc(SYMBOLIC_REF_DOC),
    Function::new("git.tag", handler!(tag))
        .params(&[
            CWD,
            Param::req("name"),
            Param::opt("ref", Lit::Str("HEAD")),
            Param::opt("message", Lit::None),
            OPTS,
            GIT_OPTS,
            USER,
            PASSWORD,
            IGNORE_RETCODE,
            OUTPUT_ENCODING,
        ])
        .doc(TAG_DOC),
    Function::new("git.version", handler!(version))
        .params(&[Param::opt("versioninfo", Lit::Bool(false))])
        .doc(VERSION_DOC),
];

/// Salt's `_format_opts`: `None` is nothing, a list is its items as strings, anything else
/// is split as a shell would; a trailing `--` is dropped.
pub(crate) fn format_opts(opts: &Value) -> Result<Vec<String>, ExecError> {
    let mut out = match opts {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => return Ok(items.iter().map(python::str).collect()),
        Value::String(s) => shlex_split(s)?,
        other => vec![python::str(other)],
    };
    if out.last().is_some_and(|l| l == "--") {
        out.pop();
    }
    Ok(out)
}

/// Salt's `add_http_basic_auth(url, user, password, https_only=True)`.
pub fn add_http_basic_auth(
    url: &str,
    user: Option<&str>,
    password: Option<&str>,
) -> Result<String, ExecError> {
    if user.is_none() && password.is_none() {
        return Ok(url.to_owned());
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(ExecError::invocation("Basic Auth only supported for HTTPS"));
    };
    if scheme != "https" {
        return Err(ExecError::invocation("Basic Auth only supported for HTTPS"));
    }
    let user = user.map_or_else(|| "None".to_owned(), str::to_owned);
    let auth = match password {
        None => user,
        Some(p) => format!("{user}:{p}"),
    };
    Ok(format!("{scheme}://{auth}@{rest}"))
}

/// Salt's `redact_http_basic_auth`: `http(s)://...@` becomes `http(s)://<redacted>@`
/// (greedy up to the last `@` of the line, case-insensitive, as Salt's regex is).
pub fn redact_http_basic_auth(text: &str) -> String {
    static RE: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new("(?i)(https?)://.*@").expect("static regex"));
    RE.replace_all(text, "$1://<redacted>@").into_owned()
}

/// How one git command failed or what it printed (Salt's `cmd.run_all` subset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ran {
    /// Exit code.
    pub code: i32,
    /// Stdout (stdout and stderr with `redirect_stderr`), trailing whitespace stripped.
    pub stdout: String,
    /// Stderr, trailing whitespace stripped.
    pub stderr: String,
}

/// How to run one git command (Salt's `_git_run` keyword arguments).
#[derive(Debug, Clone, Default)]
struct How {
    /// The working directory; `None` is the user's home, as `cmd.run_all` has it.
    cwd: Option<String>,
    /// Merge stderr into stdout.
    redirect_stderr: bool,
    /// Return a failed command instead of raising its error.
    soft: bool,
    /// Use the call's `identity` argument (commands that talk to a remote).
    identity: bool,
}

/// The user a call runs git as: uid/gid to switch to (when not the minion's) and home.
struct RunAs {
    name: Option<String>,
    uid: Option<u32>,
    gid: Option<u32>,
    home: String,
}

fn run_as(call: &Call) -> Result<RunAs, ExecError> {
    let me = nix::unistd::Uid::current();
    let Some(name) = call
        .bound
        .params
        .get("user")
        .filter(|v| !v.is_null())
        .map(python::str)
    else {
        let home = nix::unistd::User::from_uid(me)
            .ok()
            .flatten()
            .map_or_else(|| "/".to_owned(), |u| u.dir.display().to_string());
        return Ok(RunAs {
            name: None,
            uid: None,
            gid: None,
            home,
        });
    };
    let user = nix::unistd::User::from_name(&name)
        .ok()
        .flatten()
        .ok_or_else(|| ExecError::execution(format!("User '{name}' is not available")))?;
    let switch = user.uid != me;
    if switch && !me.is_root() {
        return Err(ExecError::execution(format!(
            "running git as user '{name}' needs the minion to run as root"
        )));
    }
    Ok(RunAs {
        name: Some(user.name),
        uid: switch.then_some(user.uid.as_raw()),
        gid: switch.then_some(user.gid.as_raw()),
        home: user.dir.display().to_string(),
    })
}

/// Salt's `_expand_path(cwd, user)`: a relative `cwd` is taken from the user's home.
fn expand_path(call: &Call, cwd: &str) -> Result<String, ExecError> {
    Ok(Path::new(&run_as(call)?.home)
        .join(cwd)
        .display()
        .to_string())
}

/// The call's `cwd` argument, expanded.
fn cwd_arg(call: &Call) -> Result<String, ExecError> {
    expand_path(call, &python::str(call.arg("cwd")))
}

/// The ssh command Salt's `ssh-id-wrapper` runs, for one identity file.
pub(crate) fn ssh_command(identity: &str) -> String {
    let quoted = format!("'{}'", identity.replace('\'', r"'\''"));
    format!(
        "ssh -oStrictHostKeyChecking=no -oPasswordAuthentication=no \
         -oKbdInteractiveAuthentication=no -oChallengeResponseAuthentication=no \
         -oBatchMode=yes -i {quoted}"
    )
}

/// Runs one git command once, with `extra_env`.
async fn run_once(
    call: &Call,
    argv: &[String],
    how: &How,
    who: &RunAs,
    extra_env: &[(&str, String)],
) -> Result<Ran, ExecError> {
    let cwd = how.cwd.clone().unwrap_or_else(|| who.home.clone());
    if !Path::new(&cwd).is_absolute() || !Path::new(&cwd).is_dir() {
        return Err(ExecError::execution(format!(
            "Specified cwd '{cwd}' either not absolute or does not exist"
        )));
    }
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| {
            let k = k.to_string_lossy();
            k != "LANG" && k != "LANGUAGE" && !k.starts_with("LC_") && k != "GIT_DIR"
        })
        .collect();
    env.push(("LC_ALL".into(), "C".into()));
    // A minion has no terminal: a credential prompt must fail, not wait.
    env.push(("GIT_TERMINAL_PROMPT".into(), "0".into()));
    if let Some(name) = &who.name {
        env.retain(|(k, _)| k != "HOME" && k != "USER" && k != "LOGNAME");
        env.push(("HOME".into(), who.home.clone().into()));
        env.push(("USER".into(), name.into()));
        env.push(("LOGNAME".into(), name.into()));
    }
    for (k, v) in extra_env {
        env.push((OsString::from(k), OsString::from(v)));
    }
    let spec = Spawn {
        argv: argv.iter().map(OsString::from).collect(),
        cwd: PathBuf::from(&cwd),
        env,
        stdin: None,
        merge_stderr: how.redirect_stderr,
        timeout: None,
        uid: who.uid,
        gid: who.gid,
    };
    match crate::process::run(&spec, &call.ctx.processes).await {
        Ok(Finished::Exited {
            code,
            stdout,
            stderr,
            ..
        }) => Ok(Ran {
            code,
            stdout: python::rstrip(&String::from_utf8_lossy(&stdout)).to_owned(),
            stderr: python::rstrip(&String::from_utf8_lossy(&stderr)).to_owned(),
        }),
        Ok(Finished::TimedOut { .. }) => Err(ExecError::execution(format!(
            "{} timed out",
            argv.join(" ")
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(ExecError::CommandNotFound("git".into()))
        }
        Err(e) => Err(ExecError::execution(format!(
            "failed to run {}: {e}",
            redact_http_basic_auth(&argv.join(" "))
        ))),
    }
}

/// The identity files of a call's `identity` argument (a string or a list), `salt://` ones
/// cached first.
async fn identities(call: &Call) -> Result<Vec<String>, ExecError> {
    let given: Vec<String> = match call.bound.params.get("identity") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items.iter().map(python::str).collect(),
        Some(other) => vec![python::str(other)],
    };
    let mut out = Vec::new();
    for id in given {
        if id.contains("salt://") {
            let saltenv = call
                .bound
                .params
                .get("saltenv")
                .map_or_else(|| "base".to_owned(), python::str);
            let cached = crate::call_direct(
                &call.ctx,
                "cp.cache_file",
                vec![json!(id), json!(saltenv)],
                Map::new(),
            )
            .await
            .ok()
            .filter(truthy)
            .map(|v| python::str(&v));
            // A key that cannot be fetched is left out, as Salt logs and skips it.
            out.extend(cached);
        } else {
            out.push(id);
        }
    }
    Ok(out)
}

/// Salt's `_git_run`: runs `argv`; a non-zero exit is `Command '<argv>' failed: <err>`
/// unless `how.soft`. With identities, each is tried in turn until one works.
async fn git_run(call: &Call, argv: Vec<String>, how: How) -> Result<Ran, ExecError> {
    let who = run_as(call)?;
    let ids = if how.identity {
        identities(call).await?
    } else {
        Vec::new()
    };
    if !ids.is_empty() {
        let mut errors = Vec::new();
        let mut missing = Vec::new();
        let mut last = None;
        for id in &ids {
            if !Path::new(id).is_file() {
                missing.push(id.clone());
                continue;
            }
            let ran = run_once(
                call,
                &argv,
                &how,
                &who,
                &[("GIT_SSH_COMMAND", ssh_command(id))],
            )
            .await?;
            if ran.code == 0 {
                return Ok(ran);
            }
            let err = if how.redirect_stderr {
                &ran.stdout
            } else {
                &ran.stderr
            };
            if !err.is_empty() {
                errors.push(redact_http_basic_auth(err));
            }
            last = Some(ran);
        }
        if how.soft
            && let Some(ran) = last
        {
            return Ok(ran);
        }
        let mut msg = format!(
            "Unable to authenticate using identity file:\n\n{}",
            errors.join("\n")
        );
        if !missing.is_empty() {
            if !errors.is_empty() {
                msg.push_str("\n\n");
            }
            msg.push_str(&format!(
                "The following identity file(s) were not found: {}",
                missing.join(", ")
            ));
        }
        return Err(ExecError::execution(msg));
    }
    let ran = run_once(call, &argv, &how, &who, &[]).await?;
    if ran.code == 0 || how.soft {
        return Ok(ran);
    }
    let mut msg = format!(
        "Command '{}' failed",
        redact_http_basic_auth(&argv.join(" "))
    );
    let err = if how.redirect_stderr {
        &ran.stdout
    } else {
        &ran.stderr
    };
    if !err.is_empty() {
        msg.push_str(": ");
        msg.push_str(&redact_http_basic_auth(err));
    }
    Err(ExecError::execution(msg))
}

/// `git` plus the call's `git_opts`.
fn git_with_opts(call: &Call) -> Result<Vec<String>, ExecError> {
    let mut argv = vec!["git".to_owned()];
    if let Some(opts) = call.bound.params.get("git_opts") {
        argv.extend(format_opts(opts)?);
    }
    Ok(argv)
}

/// `git [git_opts] SUB [opts]`: the start of most commands, before their own arguments.
fn subcommand(call: &Call, sub: &str) -> Result<Vec<String>, ExecError> {
    let mut argv = git_with_opts(call)?;
    argv.push(sub.to_owned());
    argv.extend(opts_arg(call)?);
    Ok(argv)
}

/// The call's `opts`, formatted.
fn opts_arg(call: &Call) -> Result<Vec<String>, ExecError> {
    format_opts(call.arg("opts"))
}

fn str_arg(call: &Call, name: &str) -> Option<String> {
    call.opt_arg(name).map(python::str)
}

/// Runs in the call's expanded `cwd` and answers stdout.
async fn stdout_in_cwd(
    call: &Call,
    argv: Vec<String>,
    redirect_stderr: bool,
) -> Result<Value, ExecError> {
    let how = How {
        cwd: Some(cwd_arg(call)?),
        redirect_stderr,
        ..How::default()
    };
    Ok(json!(git_run(call, argv, how).await?.stdout))
}

const BRANCH_DOC: &str = "Interface to git-branch(1): ``True`` on success

CLI Example:

.. code-block:: bash

    salt '*' git.branch /path/to/repo mybranch opts='--set-upstream-to origin/mybranch'
";

async fn branch(call: Call) -> Result<Value, ExecError> {
    let mut argv = subcommand(&call, "branch")?;
    argv.extend(str_arg(&call, "name"));
    stdout_in_cwd(&call, argv, false).await?;
    Ok(json!(true))
}

const CHECKOUT_DOC: &str = "Interface to git-checkout(1): what it printed

CLI Example:

.. code-block:: bash

    salt '*' git.checkout /path/to/repo somebranch user=jeff
    salt '*' git.checkout /path/to/repo upstream/master opts='-b newbranch'
";

async fn checkout(call: Call) -> Result<Value, ExecError> {
    let mut argv = git_with_opts(&call)?;
    argv.push("checkout".into());
    if truthy(call.arg("force")) {
        argv.push("--force".into());
    }
    let opts = opts_arg(&call)?;
    let new_branch = opts.iter().any(|o| o == "-b" || o == "-B");
    argv.extend(opts);
    match str_arg(&call, "rev") {
        Some(rev) => argv.push(rev),
        None if !new_branch => {
            return Err(ExecError::invocation(
                "'rev' argument is required unless -b or -B in opts",
            ));
        }
        None => {}
    }
    stdout_in_cwd(&call, argv, true).await
}

const CLONE_DOC: &str = "Interface to git-clone(1): ``True`` on success. The clone is made at
``cwd``, or within ``cwd`` as ``name`` when ``name`` is given.

CLI Example:

.. code-block:: bash

    salt '*' git.clone /path/to/repo_parent_dir git://github.com/saltstack/salt.git
";

async fn clone(call: Call) -> Result<Value, ExecError> {
    let cwd = cwd_arg(&call)?;
    let Some(url) = call.opt_arg("url").filter(|v| truthy(v)).map(python::str) else {
        return Err(ExecError::invocation("Missing 'url' argument"));
    };
    let url = add_http_basic_auth(
        &url,
        str_arg(&call, "https_user").as_deref(),
        str_arg(&call, "https_pass").as_deref(),
    )?;
    let mut argv = subcommand(&call, "clone")?;
    argv.extend(["--".into(), url]);
    let clone_cwd = match str_arg(&call, "name") {
        Some(name) => {
            argv.push(name);
            std::fs::create_dir_all(&cwd)
                .map_err(|e| ExecError::execution(format!("failed to create {cwd}: {e}")))?;
            cwd
        }
        None => {
            argv.push(cwd);
            "/tmp".to_owned()
        }
    };
    let how = How {
        cwd: Some(clone_cwd),
        identity: true,
        ..How::default()
    };
    git_run(&call, argv, how).await?;
    Ok(json!(true))
}

const CURRENT_BRANCH_DOC: &str = "The current branch name of a local checkout (``HEAD`` when
detached)

CLI Example:

.. code-block:: bash

    salt '*' git.current_branch /path/to/repo
";

async fn current_branch(call: Call) -> Result<Value, ExecError> {
    let argv = ["git", "rev-parse", "--abbrev-ref", "HEAD"].map(String::from);
    stdout_in_cwd(&call, argv.to_vec(), false).await
}

const DIFF_DOC: &str = "Interface to git-diff(1): the diff's text

CLI Example:

.. code-block:: bash

    salt '*' git.diff /path/to/repo HEAD
    salt '*' git.diff /path/to/repo abcdef1 aabbccd paths=path/to/file1,path/to/file2
";

async fn diff(call: Call) -> Result<Value, ExecError> {
    let no_index = truthy(call.arg("no_index"));
    let cached = truthy(call.arg("cached"));
    if no_index && cached {
        return Err(ExecError::execution(
            "The 'no_index' and 'cached' options cannot be used together",
        ));
    }
    let mut argv = subcommand(&call, "diff")?;
    let items: Vec<String> = ["item1", "item2"]
        .iter()
        .filter_map(|k| call.opt_arg(k).filter(|v| truthy(v)).map(python::str))
        .collect();
    if no_index {
        argv.push("--no-index".into());
    } else if cached {
        argv.push("--cached".into());
        argv.extend(items.into_iter().take(1));
    } else {
        argv.extend(items);
    }
    let paths: Vec<String> = match call.opt_arg("paths") {
        None => Vec::new(),
        Some(Value::Array(items)) => items.iter().map(python::str).collect(),
        Some(other) => python::str(other).split(',').map(str::to_owned).collect(),
    };
    if !paths.is_empty() {
        argv.push("--".into());
        argv.extend(paths);
    }
    // Salt runs it in `cwd` as given, without expanding it.
    let how = How {
        cwd: Some(python::str(call.arg("cwd"))),
        redirect_stderr: true,
        soft: no_index,
        ..How::default()
    };
    Ok(json!(git_run(&call, argv, how).await?.stdout))
}

const DISCARD_DOC: &str = "Run ``git checkout -- <path>``: what it printed

CLI Example:

.. code-block:: bash

    salt '*' git.discard_local_changes /path/to/repo
";

async fn discard_local_changes(call: Call) -> Result<Value, ExecError> {
    let path = python::str(call.arg("path"));
    let argv = vec!["git".into(), "checkout".into(), "--".into(), path];
    stdout_in_cwd(&call, argv, true).await
}

/// Salt's reading of `git fetch`'s output: `{new tags, new branches, updated branches,
/// updated tags}`, only the keys with something in them.
pub(crate) fn parse_fetch(output: &str) -> Map<String, Value> {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^[\s*]*(?:([0-9a-f]+)\.\.([0-9a-f]+)|\[(?:new (tag|branch)|tag update)\])\s+(.+)->",
        )
        .expect("static regex")
    });
    let mut ret = Map::new();
    for line in output.split('\n') {
        let Some(m) = RE.captures(line) else { continue };
        let name = python::rstrip(m.get(4).map_or("", |g| g.as_str())).to_owned();
        if let Some(kind) = m.get(3) {
            let key = if kind.as_str() == "tag" {
                "new tags"
            } else {
                "new branches"
            };
            push_to(&mut ret, key, json!(name));
        } else if let (Some(old), Some(new)) = (m.get(1), m.get(2)) {
            let entry = ret.entry("updated branches").or_insert_with(|| json!({}));
            entry[name] = json!({"old": old.as_str(), "new": new.as_str()});
        } else {
            push_to(&mut ret, "updated tags", json!(name));
        }
    }
    ret
}

fn push_to(map: &mut Map<String, Value>, key: &str, item: Value) {
    if let Value::Array(items) = map.entry(key).or_insert_with(|| json!([])) {
        items.push(item);
    }
}

const FETCH_DOC: &str = "Interface to git-fetch(1): the refs it changed, as ``{new tags, new
branches, updated branches, updated tags}``

CLI Example:

.. code-block:: bash

    salt '*' git.fetch /path/to/repo upstream
    salt '*' git.fetch /path/to/repo identity=/root/.ssh/id_rsa
";

async fn fetch(call: Call) -> Result<Value, ExecError> {
    let mut argv = git_with_opts(&call)?;
    argv.push("fetch".into());
    if truthy(call.arg("force")) {
        argv.push("--force".into());
    }
    argv.extend(
        opts_arg(&call)?
            .into_iter()
            .filter(|o| o != "-f" && o != "--force"),
    );
    if let Some(remote) = call.opt_arg("remote").filter(|v| truthy(v)) {
        argv.push(python::str(remote));
    }
    match call.opt_arg("refspecs") {
        None => {}
        Some(Value::Array(items)) => argv.extend(items.iter().map(python::str)),
        Some(other) => argv.extend(python::str(other).split(',').map(str::to_owned)),
    }
    let how = How {
        cwd: Some(cwd_arg(&call)?),
        redirect_stderr: true,
        identity: true,
        ..How::default()
    };
    let out = git_run(&call, argv, how).await?;
    Ok(Value::Object(parse_fetch(&out.stdout)))
}

const INIT_DOC: &str = "Interface to git-init(1): what it printed

CLI Example:

.. code-block:: bash

    salt '*' git.init /path/to/repo
    salt '*' git.init /path/to/bare/repo.git bare=True
";

async fn init(call: Call) -> Result<Value, ExecError> {
    let cwd = cwd_arg(&call)?;
    let mut argv = git_with_opts(&call)?;
    argv.push("init".into());
    if truthy(call.arg("bare")) {
        argv.push("--bare".into());
    }
    if let Some(t) = str_arg(&call, "template") {
        argv.push(format!("--template={t}"));
    }
    if let Some(d) = str_arg(&call, "separate_git_dir") {
        argv.push(format!("--separate-git-dir={d}"));
    }
    if let Some(shared) = call.opt_arg("shared") {
        let s = match shared {
            Value::Number(n) if n.is_i64() => format!("0{n}"),
            Value::String(s) => s.clone(),
            other => python::str(other).to_lowercase(),
        };
        argv.push(format!("--shared={s}"));
    }
    argv.extend(opts_arg(&call)?);
    argv.push(cwd);
    Ok(json!(git_run(&call, argv, How::default()).await?.stdout))
}

const IS_WORKTREE_DOC: &str = "Whether ``cwd`` is a worktree made by ``git worktree add``

CLI Example:

.. code-block:: bash

    salt '*' git.is_worktree /path/to/repo
";

async fn is_worktree(call: Call) -> Result<Value, ExecError> {
    let argv = ["git", "rev-parse", "--show-toplevel"].map(String::from);
    let how = How {
        cwd: Some(cwd_arg(&call)?),
        ..How::default()
    };
    let Ok(top) = git_run(&call, argv.to_vec(), how).await else {
        return Ok(json!(false));
    };
    let Ok(text) = std::fs::read_to_string(Path::new(&top.stdout).join(".git")) else {
        return Ok(json!(false));
    };
    let first = text.lines().next().unwrap_or_default();
    let worktree = first
        .split_once(char::is_whitespace)
        .is_some_and(|(label, path)| label == "gitdir:" && path.trim_start().starts_with('/'));
    Ok(json!(worktree))
}

async fn for_each_ref(call: &Call, prefix: &str) -> Result<Value, ExecError> {
    let argv = vec![
        "git".into(),
        "for-each-ref".into(),
        "--format".into(),
        "%(refname:short)".into(),
        prefix.into(),
    ];
    let out = stdout_in_cwd(call, argv, false).await?;
    Ok(json!(python::splitlines(out.as_str().unwrap_or(""), false)))
}

const LIST_BRANCHES_DOC: &str = "The local branches (the remote-tracking ones with
``remote=True``)

CLI Example:

.. code-block:: bash

    salt '*' git.list_branches /path/to/repo
    salt '*' git.list_branches /path/to/repo remote=True
";

async fn list_branches(call: Call) -> Result<Value, ExecError> {
    let remote = truthy(call.arg("remote"));
    for_each_ref(
        &call,
        if remote {
            "refs/remotes/"
        } else {
            "refs/heads/"
        },
    )
    .await
}

const LIST_TAGS_DOC: &str = "The tags of a local checkout

CLI Example:

.. code-block:: bash

    salt '*' git.list_tags /path/to/repo
";

async fn list_tags(call: Call) -> Result<Value, ExecError> {
    for_each_ref(&call, "refs/tags/").await
}

/// `git ls-remote`'s lines as `{ref: sha1}`.
pub(crate) fn parse_ls_remote(output: &str) -> Map<String, Value> {
    output
        .split('\n')
        .filter_map(|line| {
            let line = line.trim_start();
            let (sha, name) = line.split_once(char::is_whitespace)?;
            Some((name.trim_start().to_owned(), json!(sha)))
        })
        .collect()
}

const LS_REMOTE_DOC: &str = "Interface to git-ls-remote(1): ``{ref: sha1}``

CLI Example:

.. code-block:: bash

    salt '*' git.ls_remote /path/to/repo origin master
    salt '*' git.ls_remote remote=https://mydomain.tld/repo.git ref=mytag opts='--tags'
";

async fn ls_remote(call: Call) -> Result<Value, ExecError> {
    let cwd = match str_arg(&call, "cwd") {
        Some(c) => Some(expand_path(&call, &c)?),
        None => None,
    };
    let remote = add_http_basic_auth(
        &python::str(call.arg("remote")),
        str_arg(&call, "https_user").as_deref(),
        str_arg(&call, "https_pass").as_deref(),
    )?;
    let mut argv = subcommand(&call, "ls-remote")?;
    argv.push(remote);
    if let Some(r) = call.opt_arg("ref").filter(|v| truthy(v)) {
        argv.push(python::str(r));
    }
    let how = How {
        cwd,
        identity: true,
        soft: false,
        ..How::default()
    };
    let out = git_run(&call, argv, how).await?;
    Ok(Value::Object(parse_ls_remote(&out.stdout)))
}

/// Salt's `invalid_kwargs` for the keyword arguments a function does not take.
fn reject_kwargs(call: &Call, allowed: &[&str]) -> Result<(), ExecError> {
    let bad: Vec<String> = call
        .kwargs()
        .iter()
        .filter(|(k, _)| !k.starts_with("__") && !allowed.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={}", python::str(v)))
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    Err(ExecError::invocation(format!(
        "The following keyword arguments are not valid: {}",
        bad.join(", ")
    )))
}

const MERGE_DOC: &str = "Interface to git-merge(1): what it printed

CLI Example:

.. code-block:: bash

    salt '*' git.merge /path/to/repo
    salt '*' git.merge /path/to/repo rev=upstream/foo
";

async fn merge(call: Call) -> Result<Value, ExecError> {
    reject_kwargs(&call, &[])?;
    let mut argv = subcommand(&call, "merge")?;
    if let Some(rev) = call.opt_arg("rev").filter(|v| truthy(v)) {
        argv.push(python::str(rev));
    }
    let how = How {
        cwd: Some(cwd_arg(&call)?),
        identity: true,
        ..How::default()
    };
    Ok(json!(git_run(&call, argv, how).await?.stdout))
}

const MERGE_BASE_DOC: &str = "Interface to git-merge-base(1): the best common ancestor (all of
them with ``all=True``), or with ``is_ancestor=True`` whether the first ref is an ancestor of
the second

CLI Example:

.. code-block:: bash

    salt '*' git.merge_base /path/to/repo refs=8f2e542,4ad8cab,cdc9886 octopus=True
    salt '*' git.merge_base /path/to/repo refs=8f2e542,4ad8cab is_ancestor=True
";

async fn merge_base(call: Call) -> Result<Value, ExecError> {
    reject_kwargs(&call, &["all"])?;
    let all = call.kwargs().get("all").is_some_and(truthy);
    let octopus = truthy(call.arg("octopus"));
    let is_ancestor = truthy(call.arg("is_ancestor"));
    let independent = truthy(call.arg("independent"));
    let fork_point = call
        .opt_arg("fork_point")
        .filter(|v| truthy(v))
        .map(python::str);
    if all && (independent || is_ancestor || fork_point.is_some()) {
        return Err(ExecError::invocation(
            "The 'all' argument is not compatible with 'independent', 'is_ancestor', or \
             'fork_point'",
        ));
    }
    let mut refs: Vec<String> = match call.opt_arg("refs") {
        None => Vec::new(),
        Some(Value::Array(items)) => items.iter().map(python::str).collect(),
        Some(other) => python::str(other)
            .split(',')
            .map(|s| s.trim().to_owned())
            .collect(),
    };
    let exclusive = [octopus, independent, is_ancestor, fork_point.is_some()]
        .iter()
        .filter(|b| **b)
        .count();
    if exclusive > 1 {
        return Err(ExecError::invocation(
            "Only one of 'octopus', 'independent', 'is_ancestor', and 'fork_point' is permitted",
        ));
    } else if is_ancestor && refs.len() != 2 {
        return Err(ExecError::invocation(
            "Two refs/commits are required if 'is_ancestor' is True",
        ));
    } else if fork_point.is_some() {
        if refs.len() > 1 {
            return Err(ExecError::invocation(
                "At most one ref/commit can be passed if 'fork_point' is specified",
            ));
        } else if refs.is_empty() {
            refs.push("HEAD".into());
        }
    }
    let mut argv = subcommand(&call, "merge-base")?;
    if all {
        argv.push("--all".into());
    }
    if octopus {
        argv.push("--octopus".into());
    } else if is_ancestor {
        argv.push("--is-ancestor".into());
    } else if independent {
        argv.push("--independent".into());
    } else if let Some(f) = fork_point {
        argv.extend(["--fork-point".into(), f]);
    }
    argv.extend(refs);
    let how = How {
        cwd: Some(cwd_arg(&call)?),
        soft: is_ancestor,
        ..How::default()
    };
    let out = git_run(&call, argv, how).await?;
    if is_ancestor {
        return Ok(json!(out.code == 0));
    }
    let bases = python::splitlines(&out.stdout, false);
    if all {
        return Ok(json!(bases));
    }
    bases
        .first()
        .map(|b| json!(b))
        .ok_or_else(|| ExecError::exception("IndexError", "list index out of range"))
}

/// `git remote --verbose` as `{remote: {fetch, push}}`.
pub(crate) fn parse_remotes(output: &str, redact: bool) -> Map<String, Value> {
    let mut ret = Map::new();
    for line in output.split('\n') {
        let line = line.trim();
        let Some((remote, info)) = line.split_once(char::is_whitespace) else {
            continue;
        };
        let Some((url, action)) = info.trim().rsplit_once(char::is_whitespace) else {
            continue;
        };
        let action = action
            .trim_start_matches('(')
            .trim_end_matches(')')
            .to_lowercase();
        if action != "fetch" && action != "push" {
            continue;
        }
        let url = url.trim_end();
        let url = if redact {
            redact_http_basic_auth(url)
        } else {
            url.to_owned()
        };
        ret.entry(remote)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(|m| m.insert(action, json!(url)));
    }
    ret
}

async fn remotes_of(call: &Call, cwd: &str, redact: bool) -> Result<Map<String, Value>, ExecError> {
    let argv = ["git", "remote", "--verbose"].map(String::from).to_vec();
    let how = How {
        cwd: Some(cwd.to_owned()),
        ..How::default()
    };
    Ok(parse_remotes(
        &git_run(call, argv, how).await?.stdout,
        redact,
    ))
}

const REMOTES_DOC: &str = "The remotes of a checkout: ``{remote: {fetch: url, push: url}}``

CLI Example:

.. code-block:: bash

    salt '*' git.remotes /path/to/repo
";

async fn remotes(call: Call) -> Result<Value, ExecError> {
    let cwd = cwd_arg(&call)?;
    Ok(Value::Object(
        remotes_of(&call, &cwd, truthy(call.arg("redact_auth"))).await?,
    ))
}

const REMOTE_GET_DOC: &str = "The fetch and push URLs of one remote: ``{fetch, push}``

CLI Example:

.. code-block:: bash

    salt '*' git.remote_get /path/to/repo
    salt '*' git.remote_get /path/to/repo upstream
";

async fn remote_get(call: Call) -> Result<Value, ExecError> {
    let cwd = cwd_arg(&call)?;
    let remote = python::str(call.arg("remote"));
    let all = remotes_of(&call, &cwd, truthy(call.arg("redact_auth"))).await?;
    all.get(&remote).cloned().ok_or_else(|| {
        ExecError::execution(format!(
            "Remote '{remote}' not present in git checkout located at {cwd}"
        ))
    })
}

const REMOTE_REFS_DOC: &str = "The refs of a remote repository, without a local checkout:
``{ref: sha1}``

CLI Example:

.. code-block:: bash

    salt '*' git.remote_refs https://github.com/saltstack/salt.git
    salt '*' git.remote_refs https://github.com/saltstack/salt.git filter=develop
";

async fn remote_refs(call: Call) -> Result<Value, ExecError> {
    reject_kwargs(&call, &["filter"])?;
    let mut argv = vec!["git".to_owned(), "ls-remote".to_owned()];
    if truthy(call.arg("heads")) {
        argv.push("--heads".into());
    }
    if truthy(call.arg("tags")) {
        argv.push("--tags".into());
    }
    argv.push(add_http_basic_auth(
        &python::str(call.arg("url")),
        str_arg(&call, "https_user").as_deref(),
        str_arg(&call, "https_pass").as_deref(),
    )?);
    if let Some(f) = call.kwargs().get("filter").filter(|v| truthy(v)) {
        argv.push(python::str(f));
    }
    let how = How {
        identity: true,
        ..How::default()
    };
    let out = git_run(&call, argv, how).await?;
    Ok(Value::Object(parse_ls_remote(&out.stdout)))
}

const REMOTE_SET_DOC: &str = "Set (replace) a remote's URL: the remote as ``git.remote_get``
answers it

CLI Example:

.. code-block:: bash

    salt '*' git.remote_set /path/to/repo git@github.com:user/repo.git
    salt '*' git.remote_set /path/to/repo https://github.com/user/repo.git remote=upstream
";

async fn remote_set(call: Call) -> Result<Value, ExecError> {
    let cwd = python::str(call.arg("cwd"));
    let remote = python::str(call.arg("remote"));
    let how = How {
        cwd: Some(cwd.clone()),
        ..How::default()
    };
    if remotes_of(&call, &cwd, true).await?.contains_key(&remote) {
        let argv = vec!["git".into(), "remote".into(), "rm".into(), remote.clone()];
        git_run(&call, argv, how.clone()).await?;
    }
    let url = add_http_basic_auth(
        &python::str(call.arg("url")),
        str_arg(&call, "https_user").as_deref(),
        str_arg(&call, "https_pass").as_deref(),
    )?;
    let argv = vec![
        "git".into(),
        "remote".into(),
        "add".into(),
        remote.clone(),
        url,
    ];
    git_run(&call, argv, how.clone()).await?;
    if let Some(push) = call.opt_arg("push_url").filter(|v| truthy(v)) {
        let push = add_http_basic_auth(
            &python::str(push),
            str_arg(&call, "push_https_user").as_deref(),
            str_arg(&call, "push_https_pass").as_deref(),
        )?;
        let argv = vec![
            "git".into(),
            "remote".into(),
            "set-url".into(),
            "--push".into(),
            remote.clone(),
            push,
        ];
        git_run(&call, argv, how).await?;
    }
    let expanded = expand_path(&call, &cwd)?;
    remotes_of(&call, &expanded, true)
        .await?
        .get(&remote)
        .cloned()
        .ok_or_else(|| {
            ExecError::execution(format!(
                "Remote '{remote}' not present in git checkout located at {expanded}"
            ))
        })
}

const RESET_DOC: &str = "Interface to git-reset(1): what it printed

CLI Example:

.. code-block:: bash

    salt '*' git.reset /path/to/repo master
    salt '*' git.reset /path/to/repo opts='--hard origin/master'
";

async fn reset(call: Call) -> Result<Value, ExecError> {
    let argv = subcommand(&call, "reset")?;
    let how = How {
        cwd: Some(cwd_arg(&call)?),
        identity: true,
        ..How::default()
    };
    Ok(json!(git_run(&call, argv, how).await?.stdout))
}

const REV_PARSE_DOC: &str = "Interface to git-rev-parse(1): what it printed

CLI Example:

.. code-block:: bash

    salt '*' git.rev_parse /path/to/repo HEAD
    salt '*' git.rev_parse /path/to/repo 'v1.2.3^{commit}'
    salt '*' git.rev_parse /path/to/repo opts='--git-dir'
";

async fn rev_parse(call: Call) -> Result<Value, ExecError> {
    let mut argv = subcommand(&call, "rev-parse")?;
    argv.extend(str_arg(&call, "rev"));
    stdout_in_cwd(&call, argv, false).await
}

const REVISION_DOC: &str = "The SHA1 of a rev (``HEAD`` by default), shortened with
``short=True``

CLI Example:

.. code-block:: bash

    salt '*' git.revision /path/to/repo mybranch
";

async fn revision(call: Call) -> Result<Value, ExecError> {
    let mut argv = vec!["git".to_owned(), "rev-parse".to_owned()];
    if truthy(call.arg("short")) {
        argv.push("--short".into());
    }
    argv.push(python::str(call.arg("rev")));
    stdout_in_cwd(&call, argv, false).await
}

/// `git status -z --porcelain` as Salt groups it: `{modified, new, deleted, untracked, <XY>}`.
pub(crate) fn parse_status(output: &str) -> Map<String, Value> {
    let mut ret = Map::new();
    for entry in output.split('\0') {
        let entry = entry.trim_start();
        let Some((state, file)) = entry.split_once(char::is_whitespace) else {
            continue;
        };
        let key = match state {
            "M" => "modified",
            "A" => "new",
            "D" => "deleted",
            "??" => "untracked",
            other => other,
        };
        push_to(&mut ret, key, json!(file.trim_start()));
    }
    ret
}

const STATUS_DOC: &str = "The changed files of a checkout: ``{modified, new, deleted,
untracked}``, each a list of paths

CLI Example:

.. code-block:: bash

    salt '*' git.status /path/to/git/repo
";

async fn status(call: Call) -> Result<Value, ExecError> {
    let argv = ["git", "status", "-z", "--porcelain"].map(String::from);
    let out = stdout_in_cwd(&call, argv.to_vec(), false).await?;
    Ok(Value::Object(parse_status(out.as_str().unwrap_or(""))))
}

const SUBMODULE_DOC: &str = "Interface to git-submodule(1): what it printed

CLI Example:

.. code-block:: bash

    salt '*' git.submodule /path/to/repo update opts='--init --recursive'
";

async fn submodule(call: Call) -> Result<Value, ExecError> {
    reject_kwargs(&call, &["init"])?;
    if call.kwargs().contains_key("init") {
        return Err(ExecError::invocation(
            "The 'init' argument is no longer supported. Either set 'command' to 'init', or \
             include '--init' in the 'opts' argument and set 'command' to 'update'.",
        ));
    }
    let mut argv = git_with_opts(&call)?;
    argv.extend(["submodule".into(), python::str(call.arg("command"))]);
    argv.extend(opts_arg(&call)?);
    let how = How {
        cwd: Some(cwd_arg(&call)?),
        identity: true,
        ..How::default()
    };
    Ok(json!(git_run(&call, argv, how).await?.stdout))
}

const SYMBOLIC_REF_DOC: &str = "Interface to git-symbolic-ref(1): what it printed

CLI Example:

.. code-block:: bash

    salt '*' git.symbolic_ref /path/to/repo HEAD
    salt '*' git.symbolic_ref /path/to/repo FOO opts='--delete'
";

async fn symbolic_ref(call: Call) -> Result<Value, ExecError> {
    let mut argv = git_with_opts(&call)?;
    argv.push("symbolic-ref".into());
    let opts = opts_arg(&call)?;
    let value = call.opt_arg("value");
    if value.is_some() && opts.iter().any(|o| o == "-d" || o == "--delete") {
        return Err(ExecError::invocation(
            "Value cannot be set for symbolic ref if -d/--delete is included in opts",
        ));
    }
    argv.extend(opts);
    argv.push(python::str(call.arg("ref")));
    // Salt extends the command with the value, so a string adds one argument per character.
    match value.filter(|v| truthy(v)) {
        Some(Value::Array(items)) => argv.extend(items.iter().map(python::str)),
        Some(Value::String(s)) => argv.extend(s.chars().map(String::from)),
        Some(other) => argv.push(python::str(other)),
        None => {}
    }
    stdout_in_cwd(&call, argv, false).await
}

const TAG_DOC: &str = "Interface to git-tag(1): what it printed

CLI Example:

.. code-block:: bash

    salt '*' git.tag /path/to/repo v1.2
    salt '*' git.tag /path/to/repo v1.2 opts='-d'
";

async fn tag(call: Call) -> Result<Value, ExecError> {
    let mut argv = git_with_opts(&call)?;
    argv.push("tag".into());
    let opts: Vec<String> = opts_arg(&call)?
        .into_iter()
        .filter(|o| o != "-a" && o != "--annotate")
        .collect();
    if opts.iter().any(|o| o == "-m" || o.contains("--message")) {
        return Err(ExecError::invocation(
            "Tag messages must be passed in the \"message\" argument",
        ));
    }
    let delete = opts.iter().any(|o| o == "-d" || o == "--delete");
    argv.extend(opts);
    if let Some(message) = str_arg(&call, "message") {
        argv.extend(["-a".into(), "-m".into(), message]);
    }
    argv.push(python::str(call.arg("name")));
    if !delete {
        argv.push(python::str(call.arg("ref")));
    }
    stdout_in_cwd(&call, argv, true).await
}

/// Salt's reading of `git --version`: the last word before any `(`, without `.windows...`.
pub(crate) fn parse_version(output: &str) -> String {
    let mut v = output;
    if let Some((head, _)) = v.split_once('(') {
        v = head.trim();
    }
    if let Some((head, _)) = v.split_once(".windows") {
        v = head.trim();
    }
    v.split_whitespace()
        .last()
        .map_or_else(|| "unknown".to_owned(), str::to_owned)
}

const VERSION_DOC: &str = "The version of git installed (a list of its parts with
``versioninfo=True``)

CLI Example:

.. code-block:: bash

    salt '*' git.version
";

async fn version(call: Call) -> Result<Value, ExecError> {
    let argv = vec!["git".to_owned(), "--version".to_owned()];
    let v = match git_run(&call, argv, How::default()).await {
        Ok(out) => parse_version(&out.stdout),
        Err(ExecError::CommandNotFound(_)) | Err(_) => "unknown".to_owned(),
    };
    if !truthy(call.arg("versioninfo")) {
        return Ok(json!(v));
    }
    Ok(Value::Array(
        v.split('.')
            .map(|part| {
                part.parse::<i64>()
                    .map_or_else(|_| json!(part), |n| json!(n))
            })
            .collect(),
    ))
}
