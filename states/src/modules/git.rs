//! Salt's `git` state module (`salt/states/git.py`): `git.latest` keeps a clone at a remote's
//! rev (clone, fetch, fast-forward, hard reset with `force_reset`, branch checkout and
//! tracking, tags kept in sync) and `git.cloned` only makes sure a clone exists, on the
//! branch asked for. Both work through the `git.*` execution functions, as Salt's call
//! `__salt__`; their comments and `changes` are Salt's, `test=True` included.
//!
//! Differences: Git LFS is not looked for (Salt passes `identity` to `git reset` when the
//! global config has `filter.lfs.*`; saltq's `git.reset` does not need it for local files),
//! git is taken to be 1.8.1.6 or newer (`--set-upstream-to`, `merge --ff-only`), and the
//! `new_tags` change is a sorted list (Salt's is a Python set, a list once it crosses the
//! wire).

use std::path::Path;

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param};
use saltq_semantics::python::{self, truthy};

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

const LATEST_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::req("target"),
    Param::opt("rev", Lit::Str("HEAD")),
    Param::opt("branch", Lit::None),
    Param::opt("user", Lit::None),
    Param::opt("password", Lit::None),
    Param::opt("update_head", Lit::Bool(true)),
    Param::opt("force_checkout", Lit::Bool(false)),
    Param::opt("force_clone", Lit::Bool(false)),
    Param::opt("force_fetch", Lit::Bool(false)),
    Param::opt("force_reset", Lit::Bool(false)),
    Param::opt("submodules", Lit::Bool(false)),
    Param::opt("bare", Lit::Bool(false)),
    Param::opt("mirror", Lit::Bool(false)),
    Param::opt("remote", Lit::Str("origin")),
    Param::opt("fetch_tags", Lit::Bool(true)),
    Param::opt("sync_tags", Lit::Bool(true)),
    Param::opt("depth", Lit::None),
    Param::opt("identity", Lit::None),
    Param::opt("https_user", Lit::None),
    Param::opt("https_pass", Lit::None),
    Param::opt("refspec_branch", Lit::Str("*")),
    Param::opt("refspec_tag", Lit::Str("*")),
    Param::opt("output_encoding", Lit::None),
];

const CLONED_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::req("target"),
    Param::opt("branch", Lit::None),
    Param::opt("user", Lit::None),
    Param::opt("password", Lit::None),
    Param::opt("identity", Lit::None),
    Param::opt("https_user", Lit::None),
    Param::opt("https_pass", Lit::None),
    Param::opt("output_encoding", Lit::None),
];

/// The `git` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "git.latest",
        params: LATEST_PARAMS,
        kwargs: true,
        handler: state_handler!(latest),
    },
    StateFunction {
        name: "git.cloned",
        params: CLONED_PARAMS,
        kwargs: false,
        handler: state_handler!(cloned),
    },
];

/// Salt's `_revs_equal`: SHA1s compare by prefix (`rev2` is the possibly short one).
fn revs_equal(rev1: Option<&str>, rev2: Option<&str>, rev_type: Option<&str>) -> bool {
    match (rev1, rev2) {
        (None, None) => true,
        (Some(a), Some(b)) if rev_type == Some("sha1") => a.starts_with(b),
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// Salt's `_short_sha`.
fn short(sha: Option<&str>) -> String {
    sha.map_or_else(|| "None".to_owned(), |s| s.chars().take(7).collect())
}

/// Salt's `_format_comments`: joined with `. `, a final period when there are several.
fn format_comments<S: AsRef<str>>(comments: &[S]) -> String {
    let mut ret = comments
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(". ");
    if comments.len() > 1 {
        ret.push('.');
    }
    ret
}

/// Salt's `_strip_exc`: the error without its leading `Command '...' failed: `.
fn strip_exc(msg: &str) -> String {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"^Command ['"].+['"] failed: "#).expect("static regex")
    });
    RE.replace(msg, "").into_owned()
}

/// Python's `str.capitalize()`.
fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map_or_else(String::new, |first| {
        first
            .to_uppercase()
            .chain(chars.flat_map(char::to_lowercase))
            .collect()
    })
}

/// Salt's `_need_branch_change`.
fn need_branch_change(branch: Option<&str>, local_branch: Option<&str>) -> bool {
    branch.is_some() && branch != local_branch
}

/// `force_reset` as Salt tells it apart: `True`, `False` or `'remote-changes'`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ForceReset {
    No,
    Yes,
    RemoteChanges,
}

impl ForceReset {
    fn parse(v: &Value) -> Option<Self> {
        match v {
            Value::Bool(false) | Value::Null => Some(Self::No),
            Value::Bool(true) => Some(Self::Yes),
            Value::Number(n) if n.as_i64() == Some(0) => Some(Self::No),
            Value::Number(n) if n.as_i64() == Some(1) => Some(Self::Yes),
            Value::String(s) if s == "remote-changes" => Some(Self::RemoteChanges),
            _ => None,
        }
    }

    /// Whether anything but `No` was asked for (Salt tests the argument's truth).
    fn wanted(self) -> bool {
        self != Self::No
    }
}

/// Salt's `desired_upstream`: `False` (a tag or SHA1: no tracking branch), `None` (the
/// remote HEAD: leave tracking alone), or the remote branch to track.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Desired {
    False,
    None,
    Branch(String),
}

impl Desired {
    fn name(&self) -> Option<&str> {
        match self {
            Self::Branch(b) => Some(b),
            _ => None,
        }
    }
}

/// Salt's `_fail`.
fn fail(mut ret: Ret, msg: impl Into<String>, comments: &[String]) -> Ret {
    let mut msg = msg.into();
    ret.result = Some(false);
    if !comments.is_empty() {
        msg.push_str("\n\nChanges already made: ");
        msg.push_str(&format_comments(comments));
    }
    ret.comment = msg;
    ret
}

/// Salt's `_neutral_test`.
fn neutral_test(mut ret: Ret, comment: String) -> Ret {
    ret.result = None;
    ret.comment = comment;
    ret
}

/// Salt's `_uptodate`.
fn uptodate<S: AsRef<str>>(
    mut ret: Ret,
    target: &str,
    comments: &[S],
    local_changes: bool,
    test: bool,
) -> Ret {
    ret.comment = format!("Repository {target} is up-to-date");
    if local_changes {
        ret.comment.push_str(
            ", but with uncommitted changes. Set 'force_reset' to True to purge uncommitted \
             changes.",
        );
    }
    if !comments.is_empty() {
        ret.comment.push_str(&format!(
            "\n\nChanges {}made: {}",
            if test { "that would be " } else { "" },
            format_comments(comments)
        ));
    }
    ret
}

/// Salt's `_failed_fetch`.
fn failed_fetch(ret: Ret, exc: &str, comments: &[String]) -> Ret {
    let msg = format!(
        "Fetch failed. Set 'force_fetch' to True to force the fetch if the failure was due to \
         not being able to fast-forward. Output of the fetch command follows:\n\n{}",
        strip_exc(exc)
    );
    fail(ret, msg, comments)
}

/// What [`not_fast_forward`] reports about.
struct NotFf<'a> {
    rev: &'a str,
    pre: Option<&'a str>,
    post: Option<&'a str>,
    branch: Option<&'a str>,
    local_branch: Option<&'a str>,
    default_branch: Option<&'a str>,
    local_changes: bool,
}

/// Salt's `_not_fast_forward`.
fn not_fast_forward(ret: Ret, n: &NotFf<'_>, comments: &[String]) -> Ret {
    let mut branch_msg = String::new();
    let local = n.local_branch.unwrap_or("None");
    if n.branch.is_none() {
        if n.rev != "HEAD" {
            if n.local_branch != Some(n.rev) {
                branch_msg = format!(
                    " The desired rev ({0}) differs from the name of the local branch ({1}), if \
                     the desired rev is a branch name then a forced update could possibly be \
                     avoided by setting the 'branch' argument to '{0}' instead.",
                    n.rev, local
                );
            }
        } else if let Some(default) = n.default_branch
            && n.local_branch != Some(default)
        {
            branch_msg = format!(
                " The default remote branch ({0}) differs from the local branch ({1}). This \
                 could be caused by changing the default remote branch, or if the local branch \
                 was manually changed. Rather than forcing an update, it may be advisable to set \
                 the 'branch' argument to '{0}' instead. To ensure that this state follows the \
                 '{0}' branch instead of the remote HEAD, set the 'rev' argument to '{0}'.",
                default, local
            );
        }
    }
    let (pre, post) = (short(n.pre), short(n.post));
    let update = if n.local_changes && pre != post {
        format!("from {pre} to {post}")
    } else {
        format!("to {post}")
    };
    let checkout = if need_branch_change(n.branch, n.local_branch) {
        format!(
            " (after checking out local branch '{}')",
            n.branch.unwrap_or_default()
        )
    } else {
        String::new()
    };
    let msg = format!(
        "Repository would be updated {update}{checkout}, but {}. Set 'force_reset' to True{} to \
         force this update{}.{branch_msg}",
        if n.local_changes {
            "there are uncommitted changes"
        } else {
            "this is not a fast-forward merge"
        },
        if n.local_changes {
            " (or 'remote-changes')"
        } else {
            ""
        },
        if n.local_changes {
            " and discard these changes"
        } else {
            ""
        },
    );
    fail(ret, msg, comments)
}

/// Python's `os.path.expanduser`.
fn expanduser(path: &str) -> String {
    let Some(rest) = path.strip_prefix('~') else {
        return path.to_owned();
    };
    let (who, tail) = rest.split_once('/').map_or((rest, ""), |(w, t)| (w, t));
    let home = if who.is_empty() {
        std::env::var("HOME").ok().or_else(|| {
            nix::unistd::User::from_uid(nix::unistd::Uid::current())
                .ok()
                .flatten()
                .map(|u| u.dir.display().to_string())
        })
    } else {
        nix::unistd::User::from_name(who)
            .ok()
            .flatten()
            .map(|u| u.dir.display().to_string())
    };
    match home {
        Some(h) if tail.is_empty() => h,
        Some(h) => format!("{}/{tail}", h.trim_end_matches('/')),
        None => path.to_owned(),
    }
}

/// The execution functions as the state calls them, with the run-as arguments every call
/// carries.
struct Git<'a> {
    call: &'a StateCall,
    user: Value,
    password: Value,
    identity: Value,
    https_user: Value,
    https_pass: Value,
}

impl Git<'_> {
    /// Calls `git.<fun>` with `user` and `password` plus `kwargs`.
    async fn run(
        &self,
        fun: &str,
        args: Vec<Value>,
        kwargs: &[(&str, Value)],
    ) -> Result<Value, StateError> {
        let mut kw = Map::new();
        kw.insert("user".into(), self.user.clone());
        kw.insert("password".into(), self.password.clone());
        for (k, v) in kwargs {
            kw.insert((*k).to_owned(), v.clone());
        }
        self.call.salt(&format!("git.{fun}"), args, kw).await
    }

    async fn string(
        &self,
        fun: &str,
        args: Vec<Value>,
        kwargs: &[(&str, Value)],
    ) -> Result<String, StateError> {
        Ok(python::str(&self.run(fun, args, kwargs).await?))
    }

    async fn list(&self, fun: &str, target: &str) -> Result<Vec<String>, StateError> {
        let v = self.run(fun, vec![json!(target)], &[]).await?;
        Ok(v.as_array()
            .map(|a| a.iter().map(python::str).collect())
            .unwrap_or_default())
    }

    /// `git.rev_parse`, `None` when it fails.
    async fn rev_parse(&self, target: &str, rev: &str, opts: Option<Value>) -> Option<String> {
        let mut kw = vec![("ignore_retcode", json!(true))];
        if let Some(o) = opts {
            kw.push(("opts", o));
        }
        self.string("rev_parse", vec![json!(target), json!(rev)], &kw)
            .await
            .ok()
    }

    /// Salt's `_get_local_rev_and_branch`.
    async fn local_rev_and_branch(&self, target: &str) -> (Option<String>, Option<String>) {
        let ignore = [("ignore_retcode", json!(true))];
        let rev = self
            .string("revision", vec![json!(target)], &ignore)
            .await
            .ok();
        let branch = self
            .string("current_branch", vec![json!(target)], &ignore)
            .await
            .ok();
        (rev, branch)
    }

    fn saltenv(&self) -> Value {
        json!(self.call.saltenv)
    }
}

/// A state argument as a string, `None` when not given or `None`.
fn opt_str(call: &StateCall, key: &str) -> Option<String> {
    call.arg(key).map(python::str)
}

/// A boolean argument with its default.
fn flag(call: &StateCall, params: &[Param], key: &str) -> bool {
    truthy(&call.param(params, key))
}

/// The tracking-branch change a run makes: its comment and `git branch` options.
fn upstream_change(
    upstream: Option<&str>,
    desired: &Desired,
    branch: Option<&str>,
    all_local_branches: &[String],
) -> Option<(String, Option<Vec<String>>)> {
    let set_opts = |d: &str| {
        if branch.is_some_and(|b| !all_local_branches.iter().any(|l| l == b)) {
            // Checking the new branch out sets its upstream.
            None
        } else {
            Some(vec!["--set-upstream-to".to_owned(), d.to_owned()])
        }
    };
    match (upstream, desired) {
        (None, Desired::Branch(d)) => {
            Some((format!("Tracking branch was set to {d}"), set_opts(d)))
        }
        (Some(_), Desired::False) => Some((
            "Tracking branch was unset".to_owned(),
            Some(vec!["--unset-upstream".to_owned()]),
        )),
        (Some(u), Desired::Branch(d)) if u != d => {
            Some((format!("Tracking branch was updated to {d}"), set_opts(d)))
        }
        _ => None,
    }
}

async fn latest(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let ret = Ret::new(&name);
    let p = LATEST_PARAMS;
    // Salt's `clean_kwargs` drops the `__`-prefixed keys; the rest are not valid.
    let invalid: Vec<String> = call
        .args
        .iter()
        .filter(|(k, _)| !k.starts_with("__") && !p.iter().any(|q| q.name == k.as_str()))
        .map(|(k, v)| format!("{k}={}", python::str(v)))
        .collect();
    if !invalid.is_empty() {
        return Ok(fail(
            ret,
            format!(
                "The following keyword arguments are not valid: {}",
                invalid.join(", ")
            ),
            &[],
        ));
    }
    let remote_v = call.param(p, "remote");
    if !truthy(&remote_v) {
        return Ok(fail(ret, "'remote' argument is required", &[]));
    }
    let remote = python::str(&remote_v);
    let target_v = call.param(p, "target");
    if !truthy(&target_v) {
        return Ok(fail(ret, "'target' argument is required", &[]));
    }
    let rev_v = call.param(p, "rev");
    if !truthy(&rev_v) {
        return Ok(fail(
            ret,
            format!(
                "'{}' is not a valid value for the 'rev' argument",
                python::str(&rev_v)
            ),
            &[],
        ));
    }
    let Some(force_reset) = ForceReset::parse(&call.param(p, "force_reset")) else {
        return Ok(fail(
            ret,
            "'force_reset' must be one of True, False, or 'remote-changes'",
            &[],
        ));
    };
    let mut rev = python::str(&rev_v);
    let target = python::str(&target_v);
    if !Path::new(&target).is_absolute() {
        return Ok(fail(
            ret,
            format!("target '{target}' is not an absolute path"),
            &[],
        ));
    }
    let branch = opt_str(&call, "branch");
    let identity = match call.arg("identity") {
        None => Value::Null,
        Some(Value::String(s)) => json!([expanduser(s)]),
        Some(Value::Array(items)) => Value::Array(
            items
                .iter()
                .map(|i| json!(expanduser(&python::str(i))))
                .collect(),
        ),
        Some(_) => {
            return Ok(fail(ret, "identity must be either a list or a string", &[]));
        }
    };
    for id in identity.as_array().into_iter().flatten() {
        let mut path = python::str(id);
        if path.contains("salt://") {
            match call
                .salt(
                    "cp.cache_file",
                    vec![json!(path), json!(call.saltenv)],
                    Map::new(),
                )
                .await
            {
                Ok(v) => path = python::str(&v),
                Err(_) => {
                    return Ok(fail(ret, format!("identity '{path}' does not exist."), &[]));
                }
            }
        }
        if !Path::new(&path).is_absolute() {
            return Ok(fail(
                ret,
                format!("identity '{path}' is not an absolute path"),
                &[],
            ));
        }
    }
    let git = Git {
        call: &call,
        user: call
            .arg("user")
            .map_or(Value::Null, |u| json!(python::str(u))),
        password: call.arg("password").cloned().unwrap_or(Value::Null),
        identity: identity.clone(),
        https_user: call
            .arg("https_user")
            .map_or(Value::Null, |u| json!(python::str(u))),
        https_pass: call
            .arg("https_pass")
            .map_or(Value::Null, |u| json!(python::str(u))),
    };
    if Path::new(&target).is_file() {
        return Ok(fail(
            ret,
            format!("Target '{target}' exists and is a regular file, cannot proceed"),
            &[],
        ));
    }
    let desired_fetch_url = match saltq_exec::git::add_http_basic_auth(
        &name,
        git.https_user.as_str(),
        git.https_pass.as_str(),
    ) {
        Ok(u) => u,
        Err(e) => return Ok(fail(ret, e.to_string(), &[])),
    };
    let redacted_fetch_url = saltq_exec::git::redact_http_basic_auth(&desired_fetch_url);
    let mirror = flag(&call, p, "mirror");
    let bare = mirror || flag(&call, p, "bare");
    if rev != "HEAD" && bare {
        return Ok(fail(
            ret,
            "'rev' is not compatible with the 'mirror' and 'bare' arguments",
            &[],
        ));
    }
    let refspecs: Vec<String> = if flag(&call, p, "fetch_tags") {
        let rb = python::str(&call.param(p, "refspec_branch"));
        let rt = python::str(&call.param(p, "refspec_tag"));
        vec![
            format!("refs/heads/{rb}:refs/remotes/{remote}/{rb}"),
            format!("+refs/tags/{rt}:refs/tags/{rt}"),
        ]
    } else {
        Vec::new()
    };
    let all_remote_refs = match git
        .run(
            "remote_refs",
            vec![json!(name)],
            &[
                ("heads", json!(false)),
                ("tags", json!(false)),
                ("identity", git.identity.clone()),
                ("https_user", git.https_user.clone()),
                ("https_pass", git.https_pass.clone()),
                ("ignore_retcode", json!(false)),
                ("saltenv", git.saltenv()),
            ],
        )
        .await
    {
        Ok(Value::Object(m)) => m,
        Ok(_) => Map::new(),
        Err(e) => {
            return Ok(fail(
                ret,
                format!("Failed to check remote refs: {}", strip_exc(&e.0)),
                &[],
            ));
        }
    };
    let head_rev = all_remote_refs.get("HEAD").map(python::str);
    let default_branch = head_rev.as_ref().and_then(|head| {
        all_remote_refs.iter().find_map(|(refname, sha)| {
            refname
                .strip_prefix("refs/heads/")
                .filter(|_| python::str(sha) == *head)
                .map(str::to_owned)
        })
    });
    let mut desired = Desired::False;
    let (remote_rev, remote_rev_type, remote_loc): (Option<String>, Option<&str>, Option<String>) =
        if bare {
            (None, None, None)
        } else {
            let refs = |k: &str| all_remote_refs.get(k).map(python::str);
            let (rr, rt) = if rev == "HEAD" {
                match &head_rev {
                    Some(h) => {
                        desired = Desired::None;
                        (Some(h.clone()), Some("sha1"))
                    }
                    None => (None, None),
                }
            } else if let Some(sha) = refs(&format!("refs/heads/{rev}")) {
                desired = Desired::Branch(format!("{remote}/{rev}"));
                (Some(sha), Some("branch"))
            } else if let Some(sha) = refs(&format!("refs/tags/{rev}^{{}}")) {
                (Some(sha), Some("tag"))
            } else if let Some(sha) = refs(&format!("refs/tags/{rev}")) {
                (Some(sha), Some("tag"))
            } else if rev.len() <= 40 && rev.chars().all(|c| c.is_ascii_hexdigit()) {
                rev = rev.to_lowercase();
                (Some(rev.clone()), Some("sha1"))
            } else {
                (None, None)
            };
            let loc = match (&rr, rt) {
                (Some(r), Some("sha1")) if rev == "HEAD" => {
                    Some(format!("remote HEAD ({})", short(Some(r))))
                }
                (Some(r), Some("sha1")) => Some(short(Some(r))),
                (Some(r), Some("branch")) => Some(format!(
                    "{} ({})",
                    desired.name().unwrap_or_default(),
                    short(Some(r))
                )),
                (Some(r), _) => Some(format!("{rev} ({})", short(Some(r)))),
                _ => None,
            };
            (rr, rt, loc)
        };
    let depth = call.arg("depth").cloned();
    if depth.is_some() && !matches!(remote_rev_type, Some("branch" | "tag")) {
        return Ok(fail(
            ret,
            "When 'depth' is used, 'rev' must be set to the name of a branch or tag on the \
             remote repository",
            &[],
        ));
    }
    if remote_rev.is_none() && !bare && rev != "HEAD" {
        return Ok(fail(
            ret,
            format!("No revision matching '{rev}' exists in the remote repository"),
            &[],
        ));
    }
    let plan = Plan {
        name: &name,
        target: &target,
        rev: &rev,
        branch: branch.as_deref(),
        remote: &remote,
        force_reset,
        update_head: flag(&call, p, "update_head"),
        force_checkout: flag(&call, p, "force_checkout"),
        force_fetch: flag(&call, p, "force_fetch"),
        submodules: flag(&call, p, "submodules"),
        sync_tags: flag(&call, p, "sync_tags"),
        bare,
        mirror,
        depth,
        refspecs,
        desired,
        desired_fetch_url,
        redacted_fetch_url,
        remote_rev: remote_rev.as_deref(),
        remote_rev_type,
        remote_loc: remote_loc.as_deref(),
        default_branch: default_branch.as_deref(),
        has_remote_head: all_remote_refs.contains_key("HEAD"),
        test: call.test,
    };
    let check = if bare { "refs" } else { ".git" };
    let existing = Path::new(&target).join(check).is_dir()
        || truthy(
            &git.run("is_worktree", vec![json!(target)], &[])
                .await
                .unwrap_or(Value::Bool(false)),
        );
    let mut comments = Vec::new();
    let outcome = if existing {
        update(&git, &plan, ret.clone(), &mut comments).await
    } else {
        clone(&git, &plan, ret.clone(), &mut comments).await
    };
    Ok(outcome.unwrap_or_else(|e| fail(ret, strip_exc(&e.0), &comments)))
}

/// What `git.latest` was asked for, checked and resolved against the remote's refs.
struct Plan<'a> {
    name: &'a str,
    target: &'a str,
    rev: &'a str,
    branch: Option<&'a str>,
    remote: &'a str,
    force_reset: ForceReset,
    update_head: bool,
    force_checkout: bool,
    force_fetch: bool,
    submodules: bool,
    sync_tags: bool,
    bare: bool,
    mirror: bool,
    depth: Option<Value>,
    refspecs: Vec<String>,
    desired: Desired,
    desired_fetch_url: String,
    redacted_fetch_url: String,
    remote_rev: Option<&'a str>,
    remote_rev_type: Option<&'a str>,
    remote_loc: Option<&'a str>,
    default_branch: Option<&'a str>,
    has_remote_head: bool,
    test: bool,
}

impl Plan<'_> {
    /// `remote_loc`, capitalised as Salt does when the rev is the remote HEAD.
    fn loc_for_comment(&self) -> String {
        let loc = self.remote_loc.unwrap_or("None");
        if self.rev == "HEAD" {
            capitalize(loc)
        } else {
            loc.to_owned()
        }
    }

    fn fetch_kwargs(&self, git: &Git<'_>) -> Vec<(&'static str, Value)> {
        vec![
            ("remote", json!(self.remote)),
            ("force", json!(self.force_fetch)),
            ("refspecs", json!(self.refspecs)),
            ("identity", git.identity.clone()),
            ("saltenv", git.saltenv()),
        ]
    }
}

/// `git.latest` on an existing clone (Salt's first branch of the state).
async fn update(
    git: &Git<'_>,
    plan: &Plan<'_>,
    mut ret: Ret,
    comments: &mut Vec<String>,
) -> Result<Ret, StateError> {
    let target = plan.target;
    let t = || json!(target);
    let all_local_branches = git.list("list_branches", target).await?;
    let all_local_tags: std::collections::BTreeSet<String> =
        git.list("list_tags", target).await?.into_iter().collect();
    let (local_rev, local_branch) = git.local_rev_and_branch(target).await;
    let (local_rev, local_branch) = (local_rev.as_deref(), local_branch.as_deref());
    if !plan.bare && plan.remote_rev.is_none() && local_rev.is_some() {
        return Ok(fail(
            ret,
            "Remote repository is empty, cannot update from a non-empty to an empty repository",
            &[],
        ));
    }
    let mut base_rev = local_rev.map(str::to_owned);
    let mut base_branch = local_branch.map(str::to_owned);
    if need_branch_change(plan.branch, local_branch) {
        let b = plan.branch.unwrap_or_default();
        if !all_local_branches.iter().any(|l| l == b) {
            base_rev = plan.remote_rev.map(str::to_owned);
        } else {
            base_branch = Some(b.to_owned());
            match git
                .string(
                    "rev_parse",
                    vec![t(), json!(format!("{b}^{{commit}}"))],
                    &[("ignore_retcode", json!(true))],
                )
                .await
            {
                Ok(r) => base_rev = Some(r),
                Err(e) => {
                    return Ok(fail(
                        ret,
                        format!(
                            "Unable to get position of local branch '{b}': {}",
                            strip_exc(&e.0)
                        ),
                        comments,
                    ));
                }
            }
        }
    }
    let remotes = git
        .run("remotes", vec![t()], &[("redact_auth", json!(false))])
        .await?;
    let revs_match = revs_equal(local_rev, plan.remote_rev, plan.remote_rev_type);
    let local_changes = !plan.bare
        && git
            .run("diff", vec![t(), json!("HEAD")], &[])
            .await
            .is_ok_and(|d| truthy(&d));
    if local_changes && revs_match {
        if plan.force_reset == ForceReset::Yes {
            if plan.test {
                ret.changes.insert("forced update".into(), json!(true));
                let mut msg = format!(
                    "{target} is up-to-date, but with uncommitted changes. Since 'force_reset' \
                     is set to True, these local changes would be reset. To only reset when \
                     there are changes in the remote repository, set 'force_reset' to \
                     'remote-changes'."
                );
                if !comments.is_empty() {
                    msg.push_str(&format_comments(comments));
                }
                return Ok(neutral_test(ret, msg));
            }
        } else {
            return Ok(uptodate(ret, target, comments, true, plan.test));
        }
    }
    let mut has_remote_rev = false;
    if plan.remote_rev_type == Some("sha1")
        && let (Some(base), Some(remote_rev)) = (&base_rev, plan.remote_rev)
        && base.starts_with(remote_rev)
    {
        has_remote_rev = true;
    } else if let Some(remote_rev) = plan.remote_rev
        && git
            .rev_parse(target, &format!("{remote_rev}^{{commit}}"), None)
            .await
            .is_some()
    {
        match plan.remote_rev_type {
            Some("branch") => {
                if remotes.get(plan.remote).is_some()
                    && let Some(up) = plan.desired.name()
                    && git.rev_parse(target, up, None).await.as_deref() == Some(remote_rev)
                {
                    has_remote_rev = true;
                }
            }
            Some("tag") if all_local_tags.contains(plan.rev) => {
                let local_tag = git
                    .rev_parse(target, &format!("{}^{{commit}}", plan.rev), None)
                    .await;
                if local_tag.as_deref() == Some(remote_rev) {
                    has_remote_rev = true;
                } else if !plan.force_reset.wanted() {
                    return Ok(fail(
                        ret,
                        format!(
                            "'{}' is a tag, but the remote SHA1 for this tag ({}) doesn't \
                                 match the local SHA1 ({}). Set 'force_reset' to True to force \
                                 this update.",
                            plan.rev,
                            short(Some(remote_rev)),
                            short(local_tag.as_deref())
                        ),
                        &[],
                    ));
                }
            }
            Some("sha1") => has_remote_rev = true,
            _ => {}
        }
    }
    let not_ff = NotFf {
        rev: plan.rev,
        pre: base_rev.as_deref(),
        post: plan.remote_rev,
        branch: plan.branch,
        local_branch,
        default_branch: plan.default_branch,
        local_changes,
    };
    let mut fast_forward: Option<bool> =
        (local_changes && plan.force_reset != ForceReset::RemoteChanges).then_some(false);
    let merge_base = |base: String, remote_rev: String, ignore: bool| async move {
        let mut kw = vec![
            ("refs", json!([base, remote_rev])),
            ("is_ancestor", json!(true)),
        ];
        if ignore {
            kw.push(("ignore_retcode", json!(true)));
        }
        git.run("merge_base", vec![json!(target)], &kw)
            .await
            .map(|v| truthy(&v))
    };
    let head_not_updated = |local_rev: Option<&str>| {
        format!(
            "{} is already present and local HEAD ({}) does not match, but update_head=False. \
             HEAD has not been updated locally.",
            plan.loc_for_comment(),
            short(local_rev)
        )
    };
    if has_remote_rev {
        if (!revs_match && !plan.update_head)
            && (plan.branch.is_none() || plan.branch == local_branch)
        {
            ret.comment = head_not_updated(local_rev);
            return Ok(ret);
        }
        if fast_forward != Some(false) {
            fast_forward = Some(match &base_rev {
                None => true,
                Some(base) => {
                    merge_base(
                        base.clone(),
                        plan.remote_rev.unwrap_or_default().to_owned(),
                        true,
                    )
                    .await?
                }
            });
        }
    }
    let merge_action = match fast_forward {
        Some(false) => {
            if plan.force_reset == ForceReset::No {
                return Ok(not_fast_forward(ret, &not_ff, comments));
            }
            "hard-reset"
        }
        Some(true) => "fast-forwarded",
        None => "updated",
    };
    let upstream: Option<String> = match &base_branch {
        None => None,
        Some(b) => git
            .rev_parse(
                target,
                &format!("{b}@{{upstream}}"),
                Some(json!(["--abbrev-ref"])),
            )
            .await
            .filter(|u| !u.is_empty()),
    };
    let fetch_url = remotes
        .get(plan.remote)
        .and_then(|r| r.get("fetch"))
        .map(python::str);
    if plan.remote_rev.is_some() && Some(&plan.desired_fetch_url) != fetch_url.as_ref() {
        if plan.test {
            let Some(fetch_url) = &fetch_url else {
                // Salt redacts `None` here and fails with Python's TypeError.
                return Ok(fail(
                    ret,
                    "expected string or bytes-like object, got 'NoneType'",
                    comments,
                ));
            };
            let mut actions = vec![format!(
                "Remote '{}' would be changed from {} to {}",
                plan.remote,
                saltq_exec::git::redact_http_basic_auth(fetch_url),
                plan.redacted_fetch_url
            )];
            if !has_remote_rev {
                actions.push("Remote would be fetched".into());
            }
            if !revs_match && plan.update_head {
                ret.changes.insert(
                    "revision".into(),
                    json!({"old": local_rev, "new": plan.remote_rev}),
                );
                if fast_forward == Some(false) {
                    ret.changes.insert("forced update".into(), json!(true));
                }
                actions.push(format!(
                    "Repository would be {merge_action} to {}",
                    short(plan.remote_rev)
                ));
            }
            if !ret.changes.is_empty() {
                return Ok(neutral_test(ret, format_comments(&actions)));
            }
            if !revs_match && !plan.update_head {
                ret.comment = format_comments(&actions);
                return Ok(ret);
            }
            return Ok(uptodate(ret, target, &actions, false, true));
        }
        git.run(
            "remote_set",
            vec![t()],
            &[
                ("url", json!(plan.name)),
                ("remote", json!(plan.remote)),
                ("https_user", git.https_user.clone()),
                ("https_pass", git.https_pass.clone()),
            ],
        )
        .await?;
        match &fetch_url {
            None => {
                comments.push(format!(
                    "Remote '{}' set to {}",
                    plan.remote, plan.redacted_fetch_url
                ));
                ret.changes.insert(
                    "new".into(),
                    json!(format!("{} => {}", plan.name, plan.remote)),
                );
            }
            Some(old) => comments.push(format!(
                "Remote '{}' changed from {} to {}",
                plan.remote,
                saltq_exec::git::redact_http_basic_auth(old),
                plan.redacted_fetch_url
            )),
        }
    }
    if let Some(remote_rev) = plan.remote_rev {
        if plan.test {
            let mut actions: Vec<String> = Vec::new();
            if !has_remote_rev {
                actions.push(format!("Remote '{}' would be fetched", plan.remote));
            }
            if !revs_match
                && (plan.update_head || (plan.branch.is_some() && plan.branch != local_branch))
            {
                ret.changes.insert(
                    "revision".into(),
                    json!({"old": local_rev, "new": remote_rev}),
                );
            }
            if need_branch_change(plan.branch, local_branch) {
                let b = plan.branch.unwrap_or_default();
                if !all_local_branches.iter().any(|l| l == b) {
                    actions.push(format!(
                        "New branch '{b}' would be checked out, with {} as a starting point",
                        plan.remote_loc.unwrap_or("None")
                    ));
                    if let Some(d) = plan.desired.name() {
                        actions.push(format!("Tracking branch would be set to {d}"));
                    }
                } else {
                    actions.push(format!(
                        "Branch '{b}' would be checked out and {merge_action} to {}",
                        short(Some(remote_rev))
                    ));
                }
            } else if !revs_match {
                if plan.update_head {
                    if fast_forward == Some(true) {
                        actions.push(format!(
                            "Repository would be fast-forwarded from {} to {}",
                            short(local_rev),
                            short(Some(remote_rev))
                        ));
                    } else {
                        actions.push(format!(
                            "Repository would be {} from {} to {}",
                            if plan.force_reset.wanted() && has_remote_rev {
                                "hard-reset"
                            } else {
                                "updated"
                            },
                            short(local_rev),
                            short(Some(remote_rev))
                        ));
                    }
                } else {
                    actions.push(format!(
                        "Local HEAD ({}) does not match {} but update_head=False, HEAD would \
                         not be updated locally",
                        short(local_rev),
                        plan.remote_loc.unwrap_or("None")
                    ));
                }
            }
            match (&upstream, &plan.desired) {
                (None, Desired::Branch(d)) => {
                    actions.push(format!("Tracking branch would be set to {d}"));
                }
                (Some(_), Desired::False) => actions.push("Tracking branch would be unset".into()),
                (Some(u), Desired::Branch(d)) if u != d => {
                    actions.push(format!("Tracking branch would be updated to {d}"));
                }
                _ => {}
            }
            if !ret.changes.is_empty() {
                return Ok(neutral_test(ret, format_comments(&actions)));
            }
            let formatted = format_comments(&actions);
            if !revs_match && !plan.update_head && !formatted.is_empty() {
                ret.comment = formatted;
                return Ok(ret);
            }
            return Ok(uptodate(ret, target, &actions, false, true));
        }
        let tracking = upstream_change(
            upstream.as_deref(),
            &plan.desired,
            plan.branch,
            &all_local_branches,
        );
        let branch_opts = tracking.as_ref().and_then(|(_, o)| o.clone());
        if branch_opts.is_some() && local_branch.is_none() {
            return Ok(fail(
                ret,
                "Cannot set/unset upstream tracking branch, local HEAD refers to nonexistent \
                 branch. This may have been caused by cloning a remote repository for which the \
                 default branch was renamed or deleted. If you are unable to fix the remote \
                 repository, you can work around this by setting the 'branch' argument (which \
                 will ensure that the named branch is created if it does not already exist).",
                comments,
            ));
        }
        let remote_tags: std::collections::BTreeSet<String> = git
            .run(
                "ls_remote",
                vec![],
                &[
                    ("cwd", t()),
                    ("remote", json!(plan.remote)),
                    ("opts", json!("--tags")),
                    ("identity", git.identity.clone()),
                    ("saltenv", git.saltenv()),
                    ("ignore_retcode", json!(true)),
                ],
            )
            .await?
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
            .filter(|k| !k.contains("^{}"))
            .map(|k| k.replace("refs/tags/", ""))
            .collect();
        if all_local_tags != remote_tags {
            has_remote_rev = false;
            let new_tags: Vec<&String> = remote_tags.difference(&all_local_tags).collect();
            let deleted: Vec<&String> = all_local_tags.difference(&remote_tags).collect();
            if !new_tags.is_empty() {
                ret.changes.insert("new_tags".into(), json!(new_tags));
            }
            if plan.sync_tags && !deleted.is_empty() {
                let mut removed = Vec::new();
                for tag in deleted {
                    let outcome = if plan.test {
                        Ok(Value::Null)
                    } else {
                        git.run("tag", vec![t(), json!(tag)], &[("opts", json!("-d"))])
                            .await
                    };
                    match outcome {
                        Ok(_) => removed.push(tag.clone()),
                        Err(e) => {
                            let warnings = ret.extra.entry("warnings").or_insert_with(|| json!([]));
                            if let Value::Array(w) = warnings {
                                w.push(json!(format!(
                                    "Failed to remove local tag '{tag}':\n\n{}\n\n",
                                    e.0
                                )));
                            }
                        }
                    }
                }
                if !removed.is_empty() {
                    comments.push(format!(
                        "The following tags {} removed from the local checkout: {}",
                        if plan.test { "would be" } else { "were" },
                        removed.join(", ")
                    ));
                    ret.changes.insert("deleted_tags".into(), json!(removed));
                }
            }
        }
        if !has_remote_rev {
            match git.run("fetch", vec![t()], &plan.fetch_kwargs(git)).await {
                Err(e) => return Ok(failed_fetch(ret, &e.0, comments)),
                Ok(changes) => {
                    if truthy(&changes) {
                        comments.push(format!(
                            "{} was fetched, resulting in updated refs",
                            plan.name
                        ));
                    }
                }
            }
            if let Err(e) = git
                .string(
                    "rev_parse",
                    vec![t(), json!(format!("{remote_rev}^{{commit}}"))],
                    &[("ignore_retcode", json!(true))],
                )
                .await
            {
                return Ok(fail(
                    ret,
                    format!(
                        "Fetch did not successfully retrieve rev '{}' from {}: {}",
                        plan.rev, plan.name, e.0
                    ),
                    &[],
                ));
            }
            if (!revs_match && !plan.update_head)
                && (plan.branch.is_none() || plan.branch == local_branch)
            {
                ret.comment = head_not_updated(local_rev);
                return Ok(ret);
            }
            let ff = match &base_rev {
                None => true,
                Some(base) => merge_base(base.clone(), remote_rev.to_owned(), false).await?,
            };
            fast_forward = Some(ff);
            // Salt: not a fast-forward, or a fast-forward over uncommitted changes.
            if plan.force_reset == ForceReset::No && (!ff || local_changes) {
                return Ok(not_fast_forward(ret, &not_ff, comments));
            }
        }
        if need_branch_change(plan.branch, local_branch) {
            let b = plan.branch.unwrap_or_default();
            if local_changes && !plan.force_checkout {
                return Ok(fail(
                    ret,
                    format!(
                        "Local branch '{}' has uncommitted changes. Set 'force_checkout' to True \
                         to discard them and proceed.",
                        local_branch.unwrap_or("None")
                    ),
                    &[],
                ));
            }
            let new_branch = !all_local_branches.iter().any(|l| l == b);
            let (checkout_rev, opts) = if new_branch {
                let rev = if plan.rev == "HEAD" {
                    remote_rev.to_owned()
                } else {
                    plan.desired.name().unwrap_or(plan.rev).to_owned()
                };
                (rev, json!(["-b", b]))
            } else {
                (b.to_owned(), json!([]))
            };
            git.run(
                "checkout",
                vec![t(), json!(checkout_rev)],
                &[("force", json!(plan.force_checkout)), ("opts", opts)],
            )
            .await?;
            if new_branch {
                comments.push(format!(
                    "New branch '{b}' was checked out, with {} as a starting point",
                    plan.remote_loc.unwrap_or("None")
                ));
            } else {
                comments.push(format!("'{checkout_rev}' was checked out"));
            }
        }
        if fast_forward == Some(false) {
            git.run(
                "reset",
                vec![t()],
                &[("opts", json!(["--hard", remote_rev]))],
            )
            .await?;
            ret.changes.insert("forced update".into(), json!(true));
            if local_changes {
                comments.push("Uncommitted changes were discarded".into());
            }
            comments.push(format!(
                "Repository was hard-reset to {}",
                plan.remote_loc.unwrap_or("None")
            ));
        } else if fast_forward == Some(true) && local_changes && plan.force_reset.wanted() {
            git.run("discard_local_changes", vec![t()], &[]).await?;
            comments.push("Uncommitted changes were discarded".into());
        }
        if let (Some((action, _)), Some(opts)) = (&tracking, &branch_opts) {
            git.run("branch", vec![t()], &[("opts", json!(opts))])
                .await?;
            comments.push(action.clone());
        }
        if fast_forward == Some(true)
            && !revs_equal(base_rev.as_deref(), Some(remote_rev), plan.remote_rev_type)
        {
            if plan.desired.name().is_some() || plan.rev == "HEAD" {
                let head = git
                    .run(
                        "symbolic_ref",
                        vec![t(), json!("HEAD")],
                        &[
                            ("opts", json!(["--quiet"])),
                            ("ignore_retcode", json!(true)),
                        ],
                    )
                    .await?;
                if !truthy(&head) {
                    return Ok(fail(
                        ret,
                        "Unable to fast-forward, HEAD is detached",
                        comments,
                    ));
                }
                git.run(
                    "merge",
                    vec![t()],
                    &[("rev", json!(remote_rev)), ("opts", json!(["--ff-only"]))],
                )
                .await?;
                comments.push(format!(
                    "Repository was fast-forwarded to {}",
                    plan.remote_loc.unwrap_or("None")
                ));
            } else {
                let to = if plan.rev == "HEAD" {
                    remote_rev
                } else {
                    plan.rev
                };
                git.run("reset", vec![t()], &[("opts", json!(["--hard", to]))])
                    .await?;
                comments.push(format!(
                    "Repository was reset to {} (fast-forward)",
                    plan.rev
                ));
            }
        }
        if plan.submodules
            && let Err(e) = submodule_update(git, target).await
        {
            return Ok(fail(
                ret,
                format!("Failed to update submodules: {}", strip_exc(&e.0)),
                comments,
            ));
        }
    } else if plan.bare {
        if plan.test {
            let msg = format!("Bare repository at {target} would be fetched");
            if !ret.changes.is_empty() {
                return Ok(neutral_test(ret, msg));
            }
            // Salt passes the message where a list of comments goes, so it is joined
            // character by character.
            let chars: Vec<String> = msg.chars().map(String::from).collect();
            return Ok(uptodate(ret, target, &chars, false, true));
        }
        match git.run("fetch", vec![t()], &plan.fetch_kwargs(git)).await {
            Err(e) => return Ok(failed_fetch(ret, &e.0, comments)),
            Ok(changes) => comments.push(format!(
                "Bare repository at {target} was fetched{}",
                if truthy(&changes) {
                    ", resulting in updated refs"
                } else {
                    ""
                }
            )),
        }
    }
    let new_rev = git
        .string("revision", vec![t()], &[("ignore_retcode", json!(true))])
        .await
        .ok();
    if !plan.bare && !revs_equal(new_rev.as_deref(), plan.remote_rev, plan.remote_rev_type) {
        return Ok(fail(ret, "Failed to update repository", comments));
    }
    if local_rev != new_rev.as_deref() {
        ret.comment = format_comments(comments);
        ret.changes
            .insert("revision".into(), json!({"old": local_rev, "new": new_rev}));
        Ok(ret)
    } else {
        Ok(uptodate(ret, target, comments, false, plan.test))
    }
}

async fn submodule_update(git: &Git<'_>, target: &str) -> Result<Value, StateError> {
    git.run(
        "submodule",
        vec![json!(target), json!("update")],
        &[
            ("opts", json!(["--init", "--recursive"])),
            ("identity", git.identity.clone()),
            ("saltenv", git.saltenv()),
        ],
    )
    .await
}

/// Removes everything inside `dir`: the paths that could not be removed, with why.
fn empty_dir(dir: &Path) -> Vec<(String, String)> {
    let mut errors = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let removed = if path.is_dir() && !path.is_symlink() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        if let Err(e) = removed
            && e.kind() != std::io::ErrorKind::NotFound
        {
            errors.push((path.display().to_string(), e.to_string()));
        }
    }
    errors
}

/// `git.latest` where there is no clone yet (Salt's second branch of the state).
async fn clone(
    git: &Git<'_>,
    plan: &Plan<'_>,
    mut ret: Ret,
    comments: &mut Vec<String>,
) -> Result<Ret, StateError> {
    let (name, target) = (plan.name, plan.target);
    let t = || json!(target);
    let new = json!(format!("{name} => {target}"));
    let dir = Path::new(target);
    if dir.is_dir() {
        let has_contents = std::fs::read_dir(dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(false);
        if truthy(&git.call.param(LATEST_PARAMS, "force_clone")) {
            if plan.test {
                ret.changes.insert("forced clone".into(), json!(true));
                ret.changes.insert("new".into(), new);
                return Ok(neutral_test(
                    ret,
                    format!(
                        "Target directory {target} exists. Since force_clone=True, the contents \
                         of {target} would be deleted, and {name} would be cloned into this \
                         directory."
                    ),
                ));
            }
            let errors = empty_dir(dir);
            if !errors.is_empty() {
                let lines: Vec<String> = errors
                    .iter()
                    .map(|(p, e)| format!("  {p}\n    {e}"))
                    .collect();
                return Ok(fail(
                    ret,
                    format!("Unable to remove\n{}", lines.join("\n")),
                    comments,
                ));
            }
            ret.changes.insert("forced clone".into(), json!(true));
        } else if has_contents {
            return Ok(fail(
                ret,
                format!(
                    "Target '{target}' exists, is non-empty and is not a git repository. Set \
                     the 'force_clone' option to True to remove this directory's contents and \
                     proceed with cloning the remote repository"
                ),
                &[],
            ));
        }
    }
    if plan.test {
        ret.changes.insert("new".into(), new);
        return Ok(neutral_test(
            ret,
            format!("Repository {name} would be cloned to {target}"),
        ));
    }
    let mut clone_opts: Vec<String> = if plan.mirror {
        vec!["--mirror".into()]
    } else if plan.bare {
        vec!["--bare".into()]
    } else {
        Vec::new()
    };
    if plan.remote != "origin" {
        clone_opts.extend(["--origin".into(), plan.remote.to_owned()]);
    }
    if let Some(depth) = &plan.depth {
        clone_opts.extend([
            "--depth".into(),
            python::str(depth),
            "--branch".into(),
            plan.rev.to_owned(),
        ]);
    }
    if let Err(e) = git
        .run(
            "clone",
            vec![t(), json!(name)],
            &[
                ("opts", json!(clone_opts)),
                ("identity", git.identity.clone()),
                ("https_user", git.https_user.clone()),
                ("https_pass", git.https_pass.clone()),
                ("saltenv", git.saltenv()),
            ],
        )
        .await
    {
        return Ok(fail(
            ret,
            format!("Clone failed: {}", strip_exc(&e.0)),
            comments,
        ));
    }
    ret.changes.insert("new".into(), new);
    comments.push(format!(
        "{name} cloned to {target}{}",
        if plan.mirror {
            " as mirror"
        } else if plan.bare {
            " as bare repository"
        } else {
            ""
        }
    ));
    if !plan.bare {
        match plan.remote_rev {
            None => {
                if plan.rev != "HEAD" {
                    return Ok(fail(
                        ret,
                        format!(
                            "Repository was cloned but is empty, so {}/{} cannot be checked out",
                            plan.remote, plan.rev
                        ),
                        comments,
                    ));
                }
            }
            Some(remote_rev) => {
                if plan.remote_rev_type == Some("tag")
                    && !git
                        .list("list_tags", target)
                        .await?
                        .iter()
                        .any(|x| x == plan.rev)
                {
                    return Ok(fail(
                        ret,
                        format!("Revision '{}' does not exist in clone", plan.rev),
                        comments,
                    ));
                }
                if let Some(b) = plan.branch
                    && !git
                        .list("list_branches", target)
                        .await?
                        .iter()
                        .any(|x| x == b)
                {
                    let checkout_rev = if plan.rev == "HEAD" {
                        remote_rev.to_owned()
                    } else {
                        plan.desired.name().unwrap_or(plan.rev).to_owned()
                    };
                    git.run(
                        "checkout",
                        vec![t(), json!(checkout_rev)],
                        &[("opts", json!(["-b", b]))],
                    )
                    .await?;
                    comments.push(format!(
                        "Branch '{b}' checked out, with {} as a starting point",
                        plan.remote_loc.unwrap_or("None")
                    ));
                }
                let (local_rev, local_branch) = git.local_rev_and_branch(target).await;
                if local_branch.is_none() && !plan.has_remote_head {
                    return Ok(fail(
                        ret,
                        "Remote HEAD refers to a ref that does not exist. This can happen when \
                         the default branch on the remote repository is renamed or deleted. If \
                         you are unable to fix the remote repository, you can work around this \
                         by setting the 'branch' argument (which will ensure that the named \
                         branch is created if it does not already exist).",
                        comments,
                    ));
                }
                if !revs_equal(local_rev.as_deref(), Some(remote_rev), plan.remote_rev_type) {
                    git.run(
                        "reset",
                        vec![t()],
                        &[("opts", json!(["--hard", remote_rev]))],
                    )
                    .await?;
                    comments.push(format!(
                        "Repository was reset to {}",
                        plan.remote_loc.unwrap_or("None")
                    ));
                }
                let local_branch = local_branch.unwrap_or_else(|| "None".to_owned());
                let upstream = git
                    .rev_parse(
                        target,
                        &format!("{local_branch}@{{upstream}}"),
                        Some(json!(["--abbrev-ref"])),
                    )
                    .await
                    .filter(|u| !u.is_empty());
                let branches = git.list("list_branches", target).await?;
                if let Some((action, Some(opts))) =
                    upstream_change(upstream.as_deref(), &plan.desired, plan.branch, &branches)
                {
                    git.run("branch", vec![t()], &[("opts", json!(opts))])
                        .await?;
                    comments.push(action);
                }
            }
        }
    }
    if plan.submodules
        && plan.remote_rev.is_some()
        && let Err(e) = submodule_update(git, target).await
    {
        return Ok(fail(
            ret,
            format!("Failed to update submodules: {}", strip_exc(&e.0)),
            comments,
        ));
    }
    let new_rev = git
        .string("revision", vec![t()], &[("ignore_retcode", json!(true))])
        .await
        .ok();
    ret.comment = format_comments(comments);
    if let Some(new_rev) = new_rev {
        ret.changes
            .insert("revision".into(), json!({"old": null, "new": new_rev}));
    }
    Ok(ret)
}

async fn cloned(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    ret.result = Some(false);
    let Some(target) = call.arg("target").map(python::str) else {
        ret.comment = "'target' argument is required".into();
        return Ok(ret);
    };
    if !Path::new(&target).is_absolute() {
        ret.comment = "'target' path must be absolute".into();
        return Ok(ret);
    }
    let branch = opt_str(&call, "branch");
    if branch.as_deref() == Some("") {
        ret.comment = "Invalid 'branch' argument".into();
        return Ok(ret);
    }
    let git = Git {
        call: &call,
        user: call
            .arg("user")
            .map_or(Value::Null, |u| json!(python::str(u))),
        password: call.arg("password").cloned().unwrap_or(Value::Null),
        identity: call.arg("identity").cloned().unwrap_or(Value::Null),
        https_user: call
            .arg("https_user")
            .map_or(Value::Null, |u| json!(python::str(u))),
        https_pass: call
            .arg("https_pass")
            .map_or(Value::Null, |u| json!(python::str(u))),
    };
    let t = || json!(target);
    let need_clone = !Path::new(&target).exists();
    if !need_clone && let Err(e) = git.run("status", vec![t()], &[]).await {
        ret.comment = e.0;
        return Ok(ret);
    }
    let with_branch = branch
        .as_ref()
        .map_or_else(String::new, |b| format!(" with branch '{b}'"));
    if need_clone {
        ret.changes
            .insert("new".into(), json!(format!("{name} => {target}")));
        if call.test {
            return Ok(neutral_test(
                ret,
                format!("{name} would be cloned to {target}{with_branch}"),
            ));
        }
        let opts = branch
            .as_ref()
            .map_or(Value::Null, |b| json!(["--branch", b]));
        if let Err(e) = git
            .run(
                "clone",
                vec![t(), json!(name)],
                &[
                    ("opts", opts),
                    ("identity", git.identity.clone()),
                    ("https_user", git.https_user.clone()),
                    ("https_pass", git.https_pass.clone()),
                ],
            )
            .await
        {
            ret.changes.clear();
            return Ok(fail(ret, format!("Clone failed: {}", strip_exc(&e.0)), &[]));
        }
        ret.comment = format_comments(&[format!("{name} cloned to {target}{with_branch}")]);
        ret.result = Some(true);
        return Ok(ret);
    }
    let already = |mut ret: Ret, branch: Option<&str>| {
        ret.result = Some(true);
        ret.comment = format!(
            "Repository already exists at {target}{}",
            branch.map_or_else(String::new, |b| format!(
                " and is checked out to branch '{b}'"
            ))
        );
        ret
    };
    let Some(branch) = branch else {
        return Ok(already(ret, None));
    };
    let current = git.string("current_branch", vec![t()], &[]).await?;
    if current == branch {
        return Ok(already(ret, Some(&branch)));
    }
    let change = json!({"old": current, "new": branch});
    if call.test {
        ret.changes.insert("branch".into(), change);
        return Ok(neutral_test(
            ret,
            format!("Branch would be changed to '{branch}'"),
        ));
    }
    let (checkout_rev, opts) = match git.rev_parse(&target, &branch, None).await {
        Some(_) => (branch.clone(), Value::Null),
        None => (format!("origin/{branch}"), json!(["-b", branch])),
    };
    if let Err(e) = git
        .run(
            "checkout",
            vec![t()],
            &[("rev", json!(checkout_rev)), ("opts", opts)],
        )
        .await
    {
        return Ok(fail(
            ret,
            format!("Failed to change branch to '{branch}': {}", e.0),
            &[],
        ));
    }
    ret.changes.insert("branch".into(), change);
    ret.comment = format_comments(&[format!("Branch changed to '{branch}'")]);
    ret.result = Some(true);
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_match_salts() {
        assert!(revs_equal(Some("abcdef12"), Some("abcdef"), Some("sha1")));
        assert!(!revs_equal(
            Some("abcdef12"),
            Some("abcdef"),
            Some("branch")
        ));
        assert!(revs_equal(None, None, None));
        assert!(!revs_equal(None, Some("a"), Some("sha1")));
        assert_eq!(format_comments(&["one"]), "one");
        assert_eq!(format_comments(&["one", "two"]), "one. two.");
        assert_eq!(capitalize("remote HEAD (abc1234)"), "Remote head (abc1234)");
        assert_eq!(
            strip_exc("Command 'git fetch origin' failed: fatal: no\nCommand 'x' failed: y"),
            "fatal: no\nCommand 'x' failed: y"
        );
        assert_eq!(strip_exc("plain error"), "plain error");
        assert_eq!(short(Some("0123456789")), "0123456");
        assert_eq!(short(None), "None");
        assert_eq!(ForceReset::parse(&json!("yes")), None);
        assert_eq!(
            ForceReset::parse(&json!("remote-changes")),
            Some(ForceReset::RemoteChanges)
        );
    }

    #[test]
    fn tracking_changes() {
        let d = Desired::Branch("origin/dev".into());
        let none: &[String] = &[];
        assert_eq!(
            upstream_change(None, &d, None, none),
            Some((
                "Tracking branch was set to origin/dev".into(),
                Some(vec!["--set-upstream-to".into(), "origin/dev".into()])
            ))
        );
        // A branch to be created by checkout gets its upstream from the checkout.
        assert_eq!(
            upstream_change(Some("origin/main"), &d, Some("dev"), none),
            Some(("Tracking branch was updated to origin/dev".into(), None))
        );
        assert_eq!(
            upstream_change(Some("origin/main"), &Desired::False, None, none).map(|(a, _)| a),
            Some("Tracking branch was unset".into())
        );
        assert_eq!(upstream_change(Some("origin/dev"), &d, None, none), None);
        assert_eq!(upstream_change(Some("x"), &Desired::None, None, none), None);
    }
}
