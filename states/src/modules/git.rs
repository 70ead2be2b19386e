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

mod args;
mod clone;
mod cloned;
mod update;

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
        handler: state_handler!(cloned::cloned),
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

impl<'a> Git<'a> {
    /// The run-as arguments of `call`, with `identity` as the state resolved it.
    fn new(call: &'a StateCall, identity: Value) -> Self {
        let string = |k: &str| call.arg(k).map_or(Value::Null, |v| json!(python::str(v)));
        Git {
            call,
            user: string("user"),
            password: call.arg("password").cloned().unwrap_or(Value::Null),
            identity,
            https_user: string("https_user"),
            https_pass: string("https_pass"),
        }
    }

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
    let ret = Ret::new(&call.name);
    let given = args::Given(&call.args);
    let a = match args::check_args(&given, LATEST_PARAMS) {
        Ok(a) => a,
        Err(msg) => return Ok(fail(ret, msg, &[])),
    };
    let identity = match cached_identity(&call, a.identity.as_deref()).await {
        Ok(identity) => identity,
        Err(msg) => return Ok(fail(ret, msg, &[])),
    };
    let git = Git::new(&call, identity);
    let name = call.name.as_str();
    let (mirror, bare) = (
        given.flag("mirror"),
        given.flag("mirror") || given.flag("bare"),
    );
    let checked = args::check_target(&a.target, Path::new(&a.target).is_file())
        .and_then(|()| {
            saltq_exec::git::add_http_basic_auth(
                name,
                git.https_user.as_str(),
                git.https_pass.as_str(),
            )
            .map_err(|e| e.to_string())
        })
        .and_then(|url| args::check_bare_rev(&a.rev, bare).map(|()| url));
    let desired_fetch_url = match checked {
        Ok(url) => url,
        Err(msg) => return Ok(fail(ret, msg, &[])),
    };
    let refs = match remote_refs(&git, name).await {
        Ok(refs) => refs,
        Err(msg) => return Ok(fail(ret, msg, &[])),
    };
    let depth = call.arg("depth").cloned();
    let r = match args::resolve(&refs, &a.rev, &a.remote, bare, depth.is_some()) {
        Ok(r) => r,
        Err(msg) => return Ok(fail(ret, msg, &[])),
    };
    let plan = Plan {
        name,
        target: &a.target,
        rev: &r.rev,
        branch: a.branch.as_deref(),
        remote: &a.remote,
        force_reset: a.force_reset,
        update_head: given.flag("update_head"),
        force_checkout: given.flag("force_checkout"),
        force_fetch: given.flag("force_fetch"),
        submodules: given.flag("submodules"),
        sync_tags: given.flag("sync_tags"),
        bare,
        mirror,
        depth,
        refspecs: args::refspecs(
            given.flag("fetch_tags"),
            &a.remote,
            &python::str(&given.param("refspec_branch")),
            &python::str(&given.param("refspec_tag")),
        ),
        desired: r.desired.clone(),
        redacted_fetch_url: saltq_exec::git::redact_http_basic_auth(&desired_fetch_url),
        desired_fetch_url,
        remote_rev: r.remote_rev.as_deref(),
        remote_rev_type: r.remote_rev_type,
        remote_loc: r.remote_loc.as_deref(),
        default_branch: r.default_branch.as_deref(),
        has_remote_head: r.has_remote_head,
        test: call.test,
    };
    let mut comments = Vec::new();
    let outcome = if is_clone(&git, &a.target, bare).await {
        update::update(&git, &plan, ret.clone(), &mut comments).await
    } else {
        clone::clone(&git, &plan, ret.clone(), &mut comments).await
    };
    Ok(outcome.unwrap_or_else(|e| fail(ret, strip_exc(&e.0), &comments)))
}

/// `identity` with `~` expanded and `salt://` keys cached, each checked to be absolute
/// (Salt's order: each key is cached, then checked, before the next).
async fn cached_identity(call: &StateCall, given: Option<&[String]>) -> Result<Value, String> {
    let Some(given) = given else {
        return Ok(Value::Null);
    };
    let identity: Vec<String> = given.iter().map(|i| expanduser(i)).collect();
    for id in &identity {
        let mut path = id.clone();
        if path.contains("salt://") {
            let cached = call
                .salt(
                    "cp.cache_file",
                    vec![json!(path), json!(call.saltenv)],
                    Map::new(),
                )
                .await;
            match cached {
                Ok(v) => path = python::str(&v),
                Err(_) => return Err(format!("identity '{path}' does not exist.")),
            }
        }
        if !Path::new(&path).is_absolute() {
            return Err(format!("identity '{path}' is not an absolute path"));
        }
    }
    Ok(json!(identity))
}

/// `git.remote_refs` of the remote: every ref, HEAD included.
async fn remote_refs(git: &Git<'_>, name: &str) -> Result<Map<String, Value>, String> {
    let refs = git
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
        .await;
    match refs {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Ok(Map::new()),
        Err(e) => Err(format!("Failed to check remote refs: {}", strip_exc(&e.0))),
    }
}

/// Whether `target` is a clone already (its `.git`, or `refs` when bare, or a worktree).
async fn is_clone(git: &Git<'_>, target: &str, bare: bool) -> bool {
    let check = if bare { "refs" } else { ".git" };
    Path::new(target).join(check).is_dir()
        || truthy(
            &git.run("is_worktree", vec![json!(target)], &[])
                .await
                .unwrap_or(Value::Bool(false)),
        )
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

/// A plan for unit tests: `rev: HEAD` at the remote HEAD `aaaaaaa1111` of `origin`, into
/// `/srv/repo`; tests change the fields they are about.
#[cfg(test)]
fn test_plan() -> Plan<'static> {
    Plan {
        name: "file:///r.git",
        target: "/srv/repo",
        rev: "HEAD",
        branch: None,
        remote: "origin",
        force_reset: ForceReset::No,
        update_head: true,
        force_checkout: false,
        force_fetch: false,
        submodules: false,
        sync_tags: true,
        bare: false,
        mirror: false,
        depth: None,
        refspecs: Vec::new(),
        desired: Desired::None,
        desired_fetch_url: "file:///r.git".into(),
        redacted_fetch_url: "file:///r.git".into(),
        remote_rev: Some("aaaaaaa1111"),
        remote_rev_type: Some("sha1"),
        remote_loc: Some("remote HEAD (aaaaaaa)"),
        default_branch: Some("main"),
        has_remote_head: true,
        test: false,
    }
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
