//! `git.latest` on an existing clone (Salt's first branch of the state): what the clone is
//! is read first ([`Facts`]), what to do and what to answer is decided by pure functions of
//! the plan and those facts (the whole `test=True` answer among them), and [`update`] only
//! runs the `git.*` calls those decisions ask for, in Salt's order.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use saltq_semantics::python::{self, truthy};

use super::{
    Desired, ForceReset, Git, NotFf, Plan, Ret, StateError, fail, failed_fetch, format_comments,
    need_branch_change, neutral_test, not_fast_forward, revs_equal, short, strip_exc,
    submodule_update, upstream_change, uptodate,
};

/// What was read of the clone, and what was decided from it on the way.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Facts {
    /// `git.list_branches`.
    pub(super) branches: Vec<String>,
    /// `git.list_tags`.
    pub(super) tags: BTreeSet<String>,
    /// `git.revision`, `None` when it fails (an empty clone).
    pub(super) local_rev: Option<String>,
    /// `git.current_branch`, `None` when HEAD is detached or dangling.
    pub(super) local_branch: Option<String>,
    /// Where the update starts from: the local rev, or the branch to be checked out's.
    pub(super) base_rev: Option<String>,
    /// The branch the update starts from.
    pub(super) base_branch: Option<String>,
    /// Whether the local rev is the remote rev already.
    pub(super) revs_match: bool,
    /// Whether `git diff HEAD` shows uncommitted changes.
    pub(super) local_changes: bool,
    /// Whether the remote rev is in the clone already (no fetch needed).
    pub(super) has_remote_rev: bool,
    /// `Some(true)` a fast-forward, `Some(false)` a hard reset, `None` not known yet.
    pub(super) fast_forward: Option<bool>,
    /// How the comments name the update: `fast-forwarded`, `hard-reset`, `updated`.
    pub(super) merge_action: &'static str,
    /// The base branch's upstream (`origin/main`), `None` when it has none.
    pub(super) upstream: Option<String>,
    /// The remote's fetch URL in the clone's config, `None` when the remote is missing.
    pub(super) fetch_url: Option<String>,
}

impl Facts {
    /// The update's not-a-fast-forward report.
    fn not_ff<'a>(&'a self, plan: &'a Plan<'_>) -> NotFf<'a> {
        NotFf {
            rev: plan.rev,
            pre: self.base_rev.as_deref(),
            post: plan.remote_rev,
            branch: plan.branch,
            local_branch: self.local_branch.as_deref(),
            default_branch: plan.default_branch,
            local_changes: self.local_changes,
        }
    }

    fn has_branch(&self, b: &str) -> bool {
        self.branches.iter().any(|l| l == b)
    }
}

/// Salt's refusal to update a non-empty clone from an empty remote.
pub(super) fn empty_remote(plan: &Plan<'_>, local_rev: Option<&str>) -> Option<&'static str> {
    (!plan.bare && plan.remote_rev.is_none() && local_rev.is_some()).then_some(
        "Remote repository is empty, cannot update from a non-empty to an empty repository",
    )
}

/// Where the update starts: `(base_rev, base_branch, branch whose position must be read)`.
pub(super) fn base(plan: &Plan<'_>, f: &Facts) -> (Option<String>, Option<String>, Option<String>) {
    let (rev, branch) = (f.local_rev.clone(), f.local_branch.clone());
    if !need_branch_change(plan.branch, f.local_branch.as_deref()) {
        return (rev, branch, None);
    }
    let b = plan.branch.unwrap_or_default();
    if f.has_branch(b) {
        (rev, Some(b.to_owned()), Some(b.to_owned()))
    } else {
        (plan.remote_rev.map(str::to_owned), branch, None)
    }
}

/// Salt's answer when the clone is at the remote rev but has uncommitted changes: up to
/// date (without `force_reset=True`), or what a forced reset would do in test mode. `None`:
/// the update goes on.
pub(super) fn dirty_at_remote_rev(
    ret: &Ret,
    plan: &Plan<'_>,
    f: &Facts,
    comments: &[String],
) -> Option<Ret> {
    if !(f.local_changes && f.revs_match) {
        return None;
    }
    if plan.force_reset != ForceReset::Yes {
        return Some(uptodate(
            ret.clone(),
            plan.target,
            comments,
            true,
            plan.test,
        ));
    }
    if !plan.test {
        return None;
    }
    let mut ret = ret.clone();
    ret.changes.insert("forced update".into(), json!(true));
    let mut msg = format!(
        "{} is up-to-date, but with uncommitted changes. Since 'force_reset' is set to True, \
         these local changes would be reset. To only reset when there are changes in the \
         remote repository, set 'force_reset' to 'remote-changes'.",
        plan.target
    );
    if !comments.is_empty() {
        msg.push_str(&format_comments(comments));
    }
    Some(neutral_test(ret, msg))
}

/// Salt's comment for a tag whose remote SHA1 moved away from the local one.
pub(super) fn tag_moved(plan: &Plan<'_>, local_tag: Option<&str>) -> String {
    format!(
        "'{}' is a tag, but the remote SHA1 for this tag ({}) doesn't match the local SHA1 \
         ({}). Set 'force_reset' to True to force this update.",
        plan.rev,
        short(plan.remote_rev),
        short(local_tag)
    )
}

/// Whether the remote rev must be fetched before it can be known to be here: a SHA1 the
/// base rev starts with needs no look.
pub(super) fn sha1_in_base(plan: &Plan<'_>, base_rev: Option<&str>) -> bool {
    plan.remote_rev_type == Some("sha1")
        && matches!((base_rev, plan.remote_rev), (Some(b), Some(r)) if b.starts_with(r))
}

/// Salt's answer when the remote rev is here but `update_head=False` keeps HEAD where it is.
pub(super) fn head_kept(plan: &Plan<'_>, f: &Facts) -> Option<String> {
    let kept = !f.revs_match
        && !plan.update_head
        && (plan.branch.is_none() || plan.branch == f.local_branch.as_deref());
    kept.then(|| {
        format!(
            "{} is already present and local HEAD ({}) does not match, but \
             update_head=False. HEAD has not been updated locally.",
            plan.loc_for_comment(),
            short(f.local_rev.as_deref())
        )
    })
}

/// How the update is named, `None` when it is not a fast-forward and no reset is allowed.
pub(super) fn merge_action(fast_forward: Option<bool>, force: ForceReset) -> Option<&'static str> {
    match fast_forward {
        Some(false) if force == ForceReset::No => None,
        Some(false) => Some("hard-reset"),
        Some(true) => Some("fast-forwarded"),
        None => Some("updated"),
    }
}

/// Whether the remote's URL in the clone must be set to the one asked for.
pub(super) fn url_differs(plan: &Plan<'_>, f: &Facts) -> bool {
    plan.remote_rev.is_some() && Some(&plan.desired_fetch_url) != f.fetch_url.as_ref()
}

/// The `test=True` answer when the remote's URL would change.
pub(super) fn test_url_change(
    mut ret: Ret,
    plan: &Plan<'_>,
    f: &Facts,
    comments: &[String],
) -> Ret {
    let Some(fetch_url) = &f.fetch_url else {
        // Salt redacts `None` here and fails with Python's TypeError.
        return fail(
            ret,
            "expected string or bytes-like object, got 'NoneType'",
            comments,
        );
    };
    let mut actions = vec![format!(
        "Remote '{}' would be changed from {} to {}",
        plan.remote,
        saltq_exec::git::redact_http_basic_auth(fetch_url),
        plan.redacted_fetch_url
    )];
    if !f.has_remote_rev {
        actions.push("Remote would be fetched".into());
    }
    if !f.revs_match && plan.update_head {
        ret.changes.insert(
            "revision".into(),
            json!({"old": f.local_rev, "new": plan.remote_rev}),
        );
        if f.fast_forward == Some(false) {
            ret.changes.insert("forced update".into(), json!(true));
        }
        actions.push(format!(
            "Repository would be {} to {}",
            f.merge_action,
            short(plan.remote_rev)
        ));
    }
    if !ret.changes.is_empty() {
        return neutral_test(ret, format_comments(&actions));
    }
    if !f.revs_match && !plan.update_head {
        ret.comment = format_comments(&actions);
        return ret;
    }
    uptodate(ret, plan.target, &actions, false, true)
}

/// The comment (and `new` change) once the remote's URL was set.
pub(super) fn url_set(plan: &Plan<'_>, old: Option<&str>) -> (String, Option<Value>) {
    match old {
        None => (
            format!(
                "Remote '{}' set to {}",
                plan.remote, plan.redacted_fetch_url
            ),
            Some(json!(format!("{} => {}", plan.name, plan.remote))),
        ),
        Some(old) => (
            format!(
                "Remote '{}' changed from {} to {}",
                plan.remote,
                saltq_exec::git::redact_http_basic_auth(old),
                plan.redacted_fetch_url
            ),
            None,
        ),
    }
}

/// The `test=True` answer for a clone to bring to the remote rev: what would be done.
pub(super) fn test_answer(mut ret: Ret, plan: &Plan<'_>, f: &Facts, remote_rev: &str) -> Ret {
    let local_branch = f.local_branch.as_deref();
    let mut actions: Vec<String> = Vec::new();
    if !f.has_remote_rev {
        actions.push(format!("Remote '{}' would be fetched", plan.remote));
    }
    if !f.revs_match && (plan.update_head || (plan.branch.is_some() && plan.branch != local_branch))
    {
        ret.changes.insert(
            "revision".into(),
            json!({"old": f.local_rev, "new": remote_rev}),
        );
    }
    if need_branch_change(plan.branch, local_branch) {
        actions.extend(test_checkout(plan, f, remote_rev));
    } else if !f.revs_match {
        actions.push(test_head_move(plan, f, remote_rev));
    }
    match (&f.upstream, &plan.desired) {
        (None, Desired::Branch(d)) => actions.push(format!("Tracking branch would be set to {d}")),
        (Some(_), Desired::False) => actions.push("Tracking branch would be unset".into()),
        (Some(u), Desired::Branch(d)) if u != d => {
            actions.push(format!("Tracking branch would be updated to {d}"));
        }
        _ => {}
    }
    if !ret.changes.is_empty() {
        return neutral_test(ret, format_comments(&actions));
    }
    let formatted = format_comments(&actions);
    if !f.revs_match && !plan.update_head && !formatted.is_empty() {
        ret.comment = formatted;
        return ret;
    }
    uptodate(ret, plan.target, &actions, false, true)
}

/// What `test=True` says of the branch that would be checked out.
fn test_checkout(plan: &Plan<'_>, f: &Facts, remote_rev: &str) -> Vec<String> {
    let b = plan.branch.unwrap_or_default();
    if f.has_branch(b) {
        return vec![format!(
            "Branch '{b}' would be checked out and {} to {}",
            f.merge_action,
            short(Some(remote_rev))
        )];
    }
    let mut actions = vec![format!(
        "New branch '{b}' would be checked out, with {} as a starting point",
        plan.remote_loc.unwrap_or("None")
    )];
    if let Some(d) = plan.desired.name() {
        actions.push(format!("Tracking branch would be set to {d}"));
    }
    actions
}

/// What `test=True` says of HEAD on the same branch.
fn test_head_move(plan: &Plan<'_>, f: &Facts, remote_rev: &str) -> String {
    let (from, to) = (short(f.local_rev.as_deref()), short(Some(remote_rev)));
    if !plan.update_head {
        return format!(
            "Local HEAD ({from}) does not match {} but update_head=False, HEAD would not be \
             updated locally",
            plan.remote_loc.unwrap_or("None")
        );
    }
    if f.fast_forward == Some(true) {
        return format!("Repository would be fast-forwarded from {from} to {to}");
    }
    let how = if plan.force_reset.wanted() && f.has_remote_rev {
        "hard-reset"
    } else {
        "updated"
    };
    format!("Repository would be {how} from {from} to {to}")
}

/// The tracking-branch change to make (comment, `git branch` options), or Salt's refusal
/// when HEAD is on no branch.
pub(super) type Tracking = Option<(String, Option<Vec<String>>)>;

/// [`upstream_change`] for the update, refused when there is no local branch to set.
pub(super) fn tracking(plan: &Plan<'_>, f: &Facts) -> Result<Tracking, &'static str> {
    let change = upstream_change(
        f.upstream.as_deref(),
        &plan.desired,
        plan.branch,
        &f.branches,
    );
    let sets = change.as_ref().is_some_and(|(_, o)| o.is_some());
    if sets && f.local_branch.is_none() {
        return Err(
            "Cannot set/unset upstream tracking branch, local HEAD refers to nonexistent \
             branch. This may have been caused by cloning a remote repository for which the \
             default branch was renamed or deleted. If you are unable to fix the remote \
             repository, you can work around this by setting the 'branch' argument (which \
             will ensure that the named branch is created if it does not already exist).",
        );
    }
    Ok(change)
}

/// The remote's tag names from `git.ls_remote --tags` (peeled entries left out).
pub(super) fn remote_tag_names(ls_remote: &Value) -> BTreeSet<String> {
    ls_remote
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
        .filter(|k| !k.contains("^{}"))
        .map(|k| k.replace("refs/tags/", ""))
        .collect()
}

/// How local tags differ from the remote's: new ones (a change), and the ones to delete
/// (with `sync_tags`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TagSync {
    /// The remote's tags the clone lacks.
    pub(super) new: Vec<String>,
    /// The clone's tags the remote lacks, to delete.
    pub(super) delete: Vec<String>,
}

/// [`TagSync`], `None` when the tags are the same.
pub(super) fn tag_sync(
    local: &BTreeSet<String>,
    remote: &BTreeSet<String>,
    sync_tags: bool,
) -> Option<TagSync> {
    (local != remote).then(|| TagSync {
        new: remote.difference(local).cloned().collect(),
        delete: if sync_tags {
            local.difference(remote).cloned().collect()
        } else {
            Vec::new()
        },
    })
}

/// The branch checkout an update makes: rev, `opts`, and its comment.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Checkout {
    /// What `git.checkout` is given.
    pub(super) rev: String,
    /// `-b <branch>` for a new branch.
    pub(super) opts: Value,
    /// The comment once it is done.
    pub(super) comment: String,
}

/// The checkout a branch change needs, or Salt's refusal over uncommitted changes.
pub(super) fn checkout(
    plan: &Plan<'_>,
    f: &Facts,
    remote_rev: &str,
) -> Result<Option<Checkout>, String> {
    let local_branch = f.local_branch.as_deref();
    if !need_branch_change(plan.branch, local_branch) {
        return Ok(None);
    }
    let b = plan.branch.unwrap_or_default();
    if f.local_changes && !plan.force_checkout {
        return Err(format!(
            "Local branch '{}' has uncommitted changes. Set 'force_checkout' to True to \
             discard them and proceed.",
            local_branch.unwrap_or("None")
        ));
    }
    if f.has_branch(b) {
        return Ok(Some(Checkout {
            rev: b.to_owned(),
            opts: json!([]),
            comment: format!("'{b}' was checked out"),
        }));
    }
    Ok(Some(Checkout {
        rev: start_point(plan, remote_rev),
        opts: json!(["-b", b]),
        comment: format!(
            "New branch '{b}' was checked out, with {} as a starting point",
            plan.remote_loc.unwrap_or("None")
        ),
    }))
}

/// Where a new local branch starts: the remote rev for the remote HEAD, else the remote
/// branch (or the tag or SHA1) asked for.
pub(super) fn start_point(plan: &Plan<'_>, remote_rev: &str) -> String {
    if plan.rev == "HEAD" {
        remote_rev.to_owned()
    } else {
        plan.desired.name().unwrap_or(plan.rev).to_owned()
    }
}

/// How HEAD reaches the remote rev once on the right branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Move {
    /// `git merge --ff-only` (HEAD must be on a branch).
    Merge,
    /// `git reset --hard <rev>` (a tag or SHA1: no branch to merge into).
    Reset(String),
}

/// The fast-forward an update makes, `None` when there is none to make.
pub(super) fn fast_forward_move(plan: &Plan<'_>, f: &Facts, remote_rev: &str) -> Option<Move> {
    if f.fast_forward != Some(true)
        || revs_equal(
            f.base_rev.as_deref(),
            Some(remote_rev),
            plan.remote_rev_type,
        )
    {
        return None;
    }
    if plan.desired.name().is_some() || plan.rev == "HEAD" {
        return Some(Move::Merge);
    }
    // Neither a branch nor the remote HEAD: a tag or SHA1, reset to by name.
    Some(Move::Reset(plan.rev.to_owned()))
}

/// Salt's answer once everything ran: failed when the clone is not at the remote rev,
/// else the revision change, or up to date.
pub(super) fn finish(
    mut ret: Ret,
    plan: &Plan<'_>,
    local_rev: Option<&str>,
    new_rev: Option<String>,
    comments: &[String],
) -> Ret {
    if !plan.bare && !revs_equal(new_rev.as_deref(), plan.remote_rev, plan.remote_rev_type) {
        return fail(ret, "Failed to update repository", comments);
    }
    if local_rev == new_rev.as_deref() {
        return uptodate(ret, plan.target, comments, false, plan.test);
    }
    ret.comment = format_comments(comments);
    ret.changes
        .insert("revision".into(), json!({"old": local_rev, "new": new_rev}));
    ret
}

/// The `test=True` answer for a bare clone.
pub(super) fn test_bare(ret: Ret, target: &str) -> Ret {
    let msg = format!("Bare repository at {target} would be fetched");
    if !ret.changes.is_empty() {
        return neutral_test(ret, msg);
    }
    // Salt passes the message where a list of comments goes, so it is joined character by
    // character.
    let chars: Vec<String> = msg.chars().map(String::from).collect();
    uptodate(ret, target, &chars, false, true)
}

/// An early answer, or an error from a `git.*` call.
enum Stop {
    Answer(Ret),
    Err(StateError),
}

impl From<StateError> for Stop {
    fn from(e: StateError) -> Self {
        Self::Err(e)
    }
}

type Step<T> = Result<T, Stop>;

/// `git.latest` on an existing clone (Salt's first branch of the state).
pub(super) async fn update(
    git: &Git<'_>,
    plan: &Plan<'_>,
    ret: Ret,
    comments: &mut Vec<String>,
) -> Result<Ret, StateError> {
    match run(git, plan, ret, comments).await {
        Ok(ret) | Err(Stop::Answer(ret)) => Ok(ret),
        Err(Stop::Err(e)) => Err(e),
    }
}

async fn run(git: &Git<'_>, plan: &Plan<'_>, ret: Ret, comments: &mut Vec<String>) -> Step<Ret> {
    let target = plan.target;
    let mut f = read_local(git, target).await?;
    if let Some(msg) = empty_remote(plan, f.local_rev.as_deref()) {
        return Ok(fail(ret, msg, &[]));
    }
    let (base_rev, base_branch, lookup) = base(plan, &f);
    (f.base_rev, f.base_branch) = (base_rev, base_branch);
    if let Some(b) = lookup {
        f.base_rev = Some(branch_position(git, target, &b, &ret, comments).await?);
    }
    let remotes = git
        .run(
            "remotes",
            vec![json!(target)],
            &[("redact_auth", json!(false))],
        )
        .await?;
    f.revs_match = revs_equal(
        f.local_rev.as_deref(),
        plan.remote_rev,
        plan.remote_rev_type,
    );
    f.local_changes = !plan.bare
        && git
            .run("diff", vec![json!(target), json!("HEAD")], &[])
            .await
            .is_ok_and(|d| truthy(&d));
    if let Some(answer) = dirty_at_remote_rev(&ret, plan, &f, comments) {
        return Ok(answer);
    }
    let mut ret = ret;
    f.has_remote_rev = remote_rev_present(git, plan, &f, &remotes, &ret).await?;
    f.fast_forward =
        (f.local_changes && plan.force_reset != ForceReset::RemoteChanges).then_some(false);
    if f.has_remote_rev {
        if let Some(msg) = head_kept(plan, &f) {
            ret.comment = msg;
            return Ok(ret);
        }
        if f.fast_forward != Some(false) {
            f.fast_forward = Some(is_ancestor(git, plan, &f, true).await?);
        }
    }
    let Some(action) = merge_action(f.fast_forward, plan.force_reset) else {
        return Ok(not_fast_forward(ret, &f.not_ff(plan), comments));
    };
    f.merge_action = action;
    f.upstream = upstream(git, target, f.base_branch.as_deref()).await;
    f.fetch_url = remotes
        .get(plan.remote)
        .and_then(|r| r.get("fetch"))
        .map(python::str);
    if url_differs(plan, &f) {
        if plan.test {
            return Ok(test_url_change(ret, plan, &f, comments));
        }
        set_url(git, plan, &f, &mut ret, comments).await?;
    }
    if let Some(remote_rev) = plan.remote_rev {
        if plan.test {
            return Ok(test_answer(ret, plan, &f, remote_rev));
        }
        bring_to(git, plan, &mut f, &mut ret, comments, remote_rev).await?;
    } else if plan.bare {
        if plan.test {
            return Ok(test_bare(ret, target));
        }
        fetch_bare(git, plan, &ret, comments).await?;
    }
    let new_rev = git
        .string(
            "revision",
            vec![json!(target)],
            &[("ignore_retcode", json!(true))],
        )
        .await
        .ok();
    Ok(finish(ret, plan, f.local_rev.as_deref(), new_rev, comments))
}

/// The clone's branches, tags, rev and branch.
async fn read_local(git: &Git<'_>, target: &str) -> Result<Facts, StateError> {
    let branches = git.list("list_branches", target).await?;
    let tags = git.list("list_tags", target).await?.into_iter().collect();
    let (local_rev, local_branch) = git.local_rev_and_branch(target).await;
    Ok(Facts {
        branches,
        tags,
        local_rev,
        local_branch,
        merge_action: "updated",
        ..Facts::default()
    })
}

/// The SHA1 of local branch `b`, the update's base when it is to be checked out.
async fn branch_position(
    git: &Git<'_>,
    target: &str,
    b: &str,
    ret: &Ret,
    comments: &[String],
) -> Step<String> {
    git.string(
        "rev_parse",
        vec![json!(target), json!(format!("{b}^{{commit}}"))],
        &[("ignore_retcode", json!(true))],
    )
    .await
    .map_err(|e| {
        Stop::Answer(fail(
            ret.clone(),
            format!(
                "Unable to get position of local branch '{b}': {}",
                strip_exc(&e.0)
            ),
            comments,
        ))
    })
}

/// Whether the remote rev is in the clone already; a tag that moved on the remote stops
/// the update unless `force_reset` is set.
async fn remote_rev_present(
    git: &Git<'_>,
    plan: &Plan<'_>,
    f: &Facts,
    remotes: &Value,
    ret: &Ret,
) -> Step<bool> {
    if sha1_in_base(plan, f.base_rev.as_deref()) {
        return Ok(true);
    }
    let Some(remote_rev) = plan.remote_rev else {
        return Ok(false);
    };
    let target = plan.target;
    let commit = format!("{remote_rev}^{{commit}}");
    if git.rev_parse(target, &commit, None).await.is_none() {
        return Ok(false);
    }
    match plan.remote_rev_type {
        Some("branch") => {
            let Some(up) = plan
                .desired
                .name()
                .filter(|_| remotes.get(plan.remote).is_some())
            else {
                return Ok(false);
            };
            Ok(git.rev_parse(target, up, None).await.as_deref() == Some(remote_rev))
        }
        Some("tag") if f.tags.contains(plan.rev) => {
            let tag = format!("{}^{{commit}}", plan.rev);
            let local_tag = git.rev_parse(target, &tag, None).await;
            if local_tag.as_deref() == Some(remote_rev) {
                Ok(true)
            } else if !plan.force_reset.wanted() {
                let msg = tag_moved(plan, local_tag.as_deref());
                Err(Stop::Answer(fail(ret.clone(), msg, &[])))
            } else {
                Ok(false)
            }
        }
        Some("sha1") => Ok(true),
        _ => Ok(false),
    }
}

/// `git merge-base --is-ancestor base remote_rev`: whether the update is a fast-forward.
async fn is_ancestor(git: &Git<'_>, plan: &Plan<'_>, f: &Facts, ignore: bool) -> Step<bool> {
    let Some(base) = &f.base_rev else {
        return Ok(true);
    };
    let remote_rev = plan.remote_rev.unwrap_or_default();
    let mut kw = vec![
        ("refs", json!([base, remote_rev])),
        ("is_ancestor", json!(true)),
    ];
    if ignore {
        kw.push(("ignore_retcode", json!(true)));
    }
    Ok(git
        .run("merge_base", vec![json!(plan.target)], &kw)
        .await
        .map(|v| truthy(&v))?)
}

/// The upstream of branch `b`, `None` without a branch or an upstream.
async fn upstream(git: &Git<'_>, target: &str, b: Option<&str>) -> Option<String> {
    let b = b?;
    git.rev_parse(
        target,
        &format!("{b}@{{upstream}}"),
        Some(json!(["--abbrev-ref"])),
    )
    .await
    .filter(|u| !u.is_empty())
}

/// Sets the remote's URL to the one asked for.
async fn set_url(
    git: &Git<'_>,
    plan: &Plan<'_>,
    f: &Facts,
    ret: &mut Ret,
    comments: &mut Vec<String>,
) -> Step<()> {
    git.run(
        "remote_set",
        vec![json!(plan.target)],
        &[
            ("url", json!(plan.name)),
            ("remote", json!(plan.remote)),
            ("https_user", git.https_user.clone()),
            ("https_pass", git.https_pass.clone()),
        ],
    )
    .await?;
    let (comment, new) = url_set(plan, f.fetch_url.as_deref());
    comments.push(comment);
    if let Some(new) = new {
        ret.changes.insert("new".into(), new);
    }
    Ok(())
}

/// Brings the clone to the remote rev: tags, fetch, checkout, reset, tracking,
/// fast-forward and submodules, each step as Salt takes it.
async fn bring_to(
    git: &Git<'_>,
    plan: &Plan<'_>,
    f: &mut Facts,
    ret: &mut Ret,
    comments: &mut Vec<String>,
    remote_rev: &str,
) -> Step<()> {
    let answer = |ret: &Ret, msg: &str, comments: &[String]| {
        Stop::Answer(fail(ret.clone(), msg.to_owned(), comments))
    };
    let tracking = tracking(plan, f).map_err(|msg| answer(ret, msg, comments))?;
    sync_tags(git, plan, f, ret, comments).await?;
    if !f.has_remote_rev {
        fetch(git, plan, f, ret, comments, remote_rev).await?;
    }
    let target = plan.target;
    match checkout(plan, f, remote_rev) {
        Err(msg) => return Err(answer(ret, &msg, &[])),
        Ok(None) => {}
        Ok(Some(c)) => {
            git.run(
                "checkout",
                vec![json!(target), json!(c.rev)],
                &[("force", json!(plan.force_checkout)), ("opts", c.opts)],
            )
            .await?;
            comments.push(c.comment);
        }
    }
    reset(git, plan, f, ret, comments, remote_rev).await?;
    if let Some((action, Some(opts))) = tracking {
        git.run("branch", vec![json!(target)], &[("opts", json!(opts))])
            .await?;
        comments.push(action);
    }
    fast_forward(git, plan, f, ret, comments, remote_rev).await?;
    if plan.submodules
        && let Err(e) = submodule_update(git, target).await
    {
        let msg = format!("Failed to update submodules: {}", strip_exc(&e.0));
        return Err(answer(ret, &msg, comments));
    }
    Ok(())
}

/// Records new tags and deletes the ones the remote lost (with `sync_tags`); any
/// difference means a fetch.
async fn sync_tags(
    git: &Git<'_>,
    plan: &Plan<'_>,
    f: &mut Facts,
    ret: &mut Ret,
    comments: &mut Vec<String>,
) -> Step<()> {
    let ls_remote = git
        .run(
            "ls_remote",
            vec![],
            &[
                ("cwd", json!(plan.target)),
                ("remote", json!(plan.remote)),
                ("opts", json!("--tags")),
                ("identity", git.identity.clone()),
                ("saltenv", git.saltenv()),
                ("ignore_retcode", json!(true)),
            ],
        )
        .await?;
    let Some(sync) = tag_sync(&f.tags, &remote_tag_names(&ls_remote), plan.sync_tags) else {
        return Ok(());
    };
    f.has_remote_rev = false;
    if !sync.new.is_empty() {
        ret.changes.insert("new_tags".into(), json!(sync.new));
    }
    let mut removed = Vec::new();
    for tag in sync.delete {
        let deleted = git
            .run(
                "tag",
                vec![json!(plan.target), json!(tag)],
                &[("opts", json!("-d"))],
            )
            .await;
        match deleted {
            Ok(_) => removed.push(tag),
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
            "The following tags were removed from the local checkout: {}",
            removed.join(", ")
        ));
        ret.changes.insert("deleted_tags".into(), json!(removed));
    }
    Ok(())
}

/// Fetches the remote, checks the rev arrived, and decides the fast-forward afresh.
async fn fetch(
    git: &Git<'_>,
    plan: &Plan<'_>,
    f: &mut Facts,
    ret: &Ret,
    comments: &mut Vec<String>,
    remote_rev: &str,
) -> Step<()> {
    let target = plan.target;
    match git
        .run("fetch", vec![json!(target)], &plan.fetch_kwargs(git))
        .await
    {
        Err(e) => return Err(Stop::Answer(failed_fetch(ret.clone(), &e.0, comments))),
        Ok(changes) if truthy(&changes) => {
            comments.push(format!(
                "{} was fetched, resulting in updated refs",
                plan.name
            ));
        }
        Ok(_) => {}
    }
    let commit = format!("{remote_rev}^{{commit}}");
    let found = git
        .string(
            "rev_parse",
            vec![json!(target), json!(commit)],
            &[("ignore_retcode", json!(true))],
        )
        .await;
    if let Err(e) = found {
        let msg = format!(
            "Fetch did not successfully retrieve rev '{}' from {}: {}",
            plan.rev, plan.name, e.0
        );
        return Err(Stop::Answer(fail(ret.clone(), msg, &[])));
    }
    if let Some(msg) = head_kept(plan, f) {
        let mut ret = ret.clone();
        ret.comment = msg;
        return Err(Stop::Answer(ret));
    }
    let ff = is_ancestor(git, plan, f, false).await?;
    f.fast_forward = Some(ff);
    // Salt: not a fast-forward, or a fast-forward over uncommitted changes.
    if plan.force_reset == ForceReset::No && (!ff || f.local_changes) {
        let answer = not_fast_forward(ret.clone(), &f.not_ff(plan), comments);
        return Err(Stop::Answer(answer));
    }
    Ok(())
}

/// The hard reset of a forced update, or the discarding of uncommitted changes before a
/// fast-forward.
async fn reset(
    git: &Git<'_>,
    plan: &Plan<'_>,
    f: &Facts,
    ret: &mut Ret,
    comments: &mut Vec<String>,
    remote_rev: &str,
) -> Step<()> {
    let target = json!(plan.target);
    if f.fast_forward == Some(false) {
        git.run(
            "reset",
            vec![target],
            &[("opts", json!(["--hard", remote_rev]))],
        )
        .await?;
        ret.changes.insert("forced update".into(), json!(true));
        if f.local_changes {
            comments.push("Uncommitted changes were discarded".into());
        }
        comments.push(format!(
            "Repository was hard-reset to {}",
            plan.remote_loc.unwrap_or("None")
        ));
    } else if f.fast_forward == Some(true) && f.local_changes && plan.force_reset.wanted() {
        git.run("discard_local_changes", vec![target], &[]).await?;
        comments.push("Uncommitted changes were discarded".into());
    }
    Ok(())
}

/// The fast-forward: a merge when on a branch (refused with HEAD detached), else a reset.
async fn fast_forward(
    git: &Git<'_>,
    plan: &Plan<'_>,
    f: &Facts,
    ret: &Ret,
    comments: &mut Vec<String>,
    remote_rev: &str,
) -> Step<()> {
    let target = json!(plan.target);
    match fast_forward_move(plan, f, remote_rev) {
        None => {}
        Some(Move::Merge) => {
            let head = git
                .run(
                    "symbolic_ref",
                    vec![target.clone(), json!("HEAD")],
                    &[
                        ("opts", json!(["--quiet"])),
                        ("ignore_retcode", json!(true)),
                    ],
                )
                .await?;
            if !truthy(&head) {
                let msg = "Unable to fast-forward, HEAD is detached";
                return Err(Stop::Answer(fail(ret.clone(), msg, comments)));
            }
            git.run(
                "merge",
                vec![target],
                &[("rev", json!(remote_rev)), ("opts", json!(["--ff-only"]))],
            )
            .await?;
            comments.push(format!(
                "Repository was fast-forwarded to {}",
                plan.remote_loc.unwrap_or("None")
            ));
        }
        Some(Move::Reset(to)) => {
            git.run("reset", vec![target], &[("opts", json!(["--hard", to]))])
                .await?;
            comments.push(format!(
                "Repository was reset to {} (fast-forward)",
                plan.rev
            ));
        }
    }
    Ok(())
}

/// Fetches a bare clone.
async fn fetch_bare(
    git: &Git<'_>,
    plan: &Plan<'_>,
    ret: &Ret,
    comments: &mut Vec<String>,
) -> Step<()> {
    let fetched = git
        .run("fetch", vec![json!(plan.target)], &plan.fetch_kwargs(git))
        .await;
    match fetched {
        Err(e) => Err(Stop::Answer(failed_fetch(ret.clone(), &e.0, comments))),
        Ok(changes) => {
            comments.push(format!(
                "Bare repository at {} was fetched{}",
                plan.target,
                if truthy(&changes) {
                    ", resulting in updated refs"
                } else {
                    ""
                }
            ));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_plan;
    use super::*;

    const OLD: &str = "0000000aaaa";
    const NEW: &str = "aaaaaaa1111";

    /// A clean clone on `main` (tracking `origin/main`), one commit behind the remote HEAD
    /// and able to fast-forward.
    fn behind() -> Facts {
        Facts {
            branches: vec!["main".into()],
            tags: ["v1.0".to_owned()].into(),
            local_rev: Some(OLD.into()),
            local_branch: Some("main".into()),
            base_rev: Some(OLD.into()),
            base_branch: Some("main".into()),
            revs_match: false,
            local_changes: false,
            has_remote_rev: false,
            fast_forward: None,
            merge_action: "updated",
            upstream: Some("origin/main".into()),
            fetch_url: Some("file:///r.git".into()),
        }
    }

    fn ret() -> Ret {
        Ret::new("file:///r.git")
    }

    #[test]
    fn starting_points() {
        let plan = test_plan();
        let f = behind();
        assert_eq!(empty_remote(&plan, f.local_rev.as_deref()), None);
        let empty = Plan {
            remote_rev: None,
            ..test_plan()
        };
        assert!(empty_remote(&empty, Some(OLD)).is_some());
        assert_eq!(empty_remote(&empty, None), None);
        let bare = Plan {
            bare: true,
            ..empty
        };
        assert_eq!(empty_remote(&bare, Some(OLD)), None);

        let main = |f: &Facts| Some(f.local_rev.clone().unwrap_or_default());
        assert_eq!(base(&plan, &f), (main(&f), Some("main".into()), None));
        // An existing branch to check out: its position must be read.
        let to_dev = Plan {
            branch: Some("dev"),
            ..test_plan()
        };
        let mut with_dev = behind();
        with_dev.branches.push("dev".into());
        assert_eq!(
            base(&to_dev, &with_dev),
            (main(&f), Some("dev".into()), Some("dev".into()))
        );
        // A new branch starts at the remote rev.
        assert_eq!(
            base(&to_dev, &f),
            (Some(NEW.into()), Some("main".into()), None)
        );
    }

    #[test]
    fn uncommitted_changes_at_the_remote_rev() {
        let f = Facts {
            local_changes: true,
            revs_match: true,
            ..behind()
        };
        assert_eq!(
            dirty_at_remote_rev(&ret(), &test_plan(), &behind(), &[]),
            None
        );
        let kept = dirty_at_remote_rev(&ret(), &test_plan(), &f, &[]).unwrap();
        assert_eq!(
            kept.comment,
            "Repository /srv/repo is up-to-date, but with uncommitted changes. Set \
             'force_reset' to True to purge uncommitted changes."
        );
        assert_eq!(kept.result, Some(true));
        let remote_changes = Plan {
            force_reset: ForceReset::RemoteChanges,
            ..test_plan()
        };
        assert!(dirty_at_remote_rev(&ret(), &remote_changes, &f, &[]).is_some());
        let force = Plan {
            force_reset: ForceReset::Yes,
            ..test_plan()
        };
        assert_eq!(dirty_at_remote_rev(&ret(), &force, &f, &[]), None);
        let force_test = Plan {
            test: true,
            ..force
        };
        let would = dirty_at_remote_rev(&ret(), &force_test, &f, &[]).unwrap();
        assert_eq!(would.result, None);
        assert_eq!(would.changes["forced update"], json!(true));
        assert!(
            would
                .comment
                .starts_with("/srv/repo is up-to-date, but with uncommitted")
        );
    }

    #[test]
    fn what_is_known_before_fetching() {
        let plan = test_plan();
        assert!(!sha1_in_base(&plan, Some(OLD)));
        assert!(sha1_in_base(&plan, Some("aaaaaaa11112222")));
        let branch = Plan {
            remote_rev_type: Some("branch"),
            ..test_plan()
        };
        assert!(!sha1_in_base(&branch, Some(NEW)));
        assert_eq!(
            tag_moved(
                &Plan {
                    rev: "v1.0",
                    ..test_plan()
                },
                Some(OLD)
            ),
            "'v1.0' is a tag, but the remote SHA1 for this tag (aaaaaaa) doesn't match the \
             local SHA1 (0000000). Set 'force_reset' to True to force this update."
        );
        assert_eq!(head_kept(&plan, &behind()), None);
        let keep = Plan {
            update_head: false,
            ..test_plan()
        };
        assert_eq!(
            head_kept(&keep, &behind()).as_deref(),
            Some(
                "Remote head (aaaaaaa) is already present and local HEAD (0000000) does not \
                 match, but update_head=False. HEAD has not been updated locally."
            )
        );
        // A branch change updates HEAD whatever update_head says.
        let keep_dev = Plan {
            branch: Some("dev"),
            ..keep
        };
        assert_eq!(head_kept(&keep_dev, &behind()), None);
    }

    #[test]
    fn merge_actions() {
        use ForceReset::*;
        for (ff, force, want) in [
            (Some(false), No, None),
            (Some(false), Yes, Some("hard-reset")),
            (Some(false), RemoteChanges, Some("hard-reset")),
            (Some(true), No, Some("fast-forwarded")),
            (None, No, Some("updated")),
        ] {
            assert_eq!(merge_action(ff, force), want, "{ff:?} {force:?}");
        }
    }

    #[test]
    fn a_changed_remote_url() {
        let plan = Plan {
            desired_fetch_url: "file:///new.git".into(),
            redacted_fetch_url: "file:///new.git".into(),
            ..test_plan()
        };
        assert!(url_differs(&plan, &behind()));
        assert!(!url_differs(&test_plan(), &behind()));
        let f = Facts {
            fast_forward: Some(true),
            merge_action: "fast-forwarded",
            ..behind()
        };
        let would = test_url_change(ret(), &plan, &f, &[]);
        assert_eq!(would.result, None);
        assert_eq!(
            would.comment,
            "Remote 'origin' would be changed from file:///r.git to file:///new.git. Remote \
             would be fetched. Repository would be fast-forwarded to aaaaaaa."
        );
        assert_eq!(would.changes["revision"], json!({"old": OLD, "new": NEW}));
        let missing = Facts {
            fetch_url: None,
            ..behind()
        };
        assert_eq!(
            test_url_change(ret(), &plan, &missing, &[]).result,
            Some(false)
        );
        let at_rev = Facts {
            revs_match: true,
            has_remote_rev: true,
            ..behind()
        };
        assert_eq!(
            test_url_change(ret(), &plan, &at_rev, &[]).comment,
            "Repository /srv/repo is up-to-date\n\nChanges that would be made: Remote \
             'origin' would be changed from file:///r.git to file:///new.git"
        );
        assert_eq!(
            url_set(&plan, Some("file:///r.git")),
            (
                "Remote 'origin' changed from file:///r.git to file:///new.git".into(),
                None
            )
        );
        assert_eq!(
            url_set(&plan, None),
            (
                "Remote 'origin' set to file:///new.git".into(),
                Some(json!("file:///r.git => origin"))
            )
        );
    }

    #[test]
    fn test_mode_answers() {
        let plan = test_plan();
        let ff = Facts {
            fast_forward: Some(true),
            has_remote_rev: true,
            upstream: None,
            ..behind()
        };
        let would = test_answer(ret(), &plan, &ff, NEW);
        assert_eq!(would.result, None);
        assert_eq!(
            would.comment,
            "Repository would be fast-forwarded from 0000000 to aaaaaaa"
        );
        // Not fetched yet, and a forced reset.
        let reset = Plan {
            force_reset: ForceReset::Yes,
            ..test_plan()
        };
        let f = Facts {
            has_remote_rev: true,
            fast_forward: Some(false),
            ..behind()
        };
        assert_eq!(
            test_answer(ret(), &reset, &f, NEW).comment,
            "Repository would be hard-reset from 0000000 to aaaaaaa"
        );
        // A reset is only named so when the remote rev is here already.
        assert_eq!(
            test_answer(ret(), &reset, &behind(), NEW).comment,
            "Remote 'origin' would be fetched. Repository would be updated from 0000000 to \
             aaaaaaa."
        );
        assert_eq!(
            test_answer(ret(), &plan, &behind(), NEW).comment,
            "Remote 'origin' would be fetched. Repository would be updated from 0000000 to \
             aaaaaaa."
        );
        // A new branch tracking the remote one.
        let dev = Plan {
            rev: "dev",
            branch: Some("dev"),
            desired: Desired::Branch("origin/dev".into()),
            remote_rev_type: Some("branch"),
            remote_loc: Some("origin/dev (aaaaaaa)"),
            ..test_plan()
        };
        assert_eq!(
            test_answer(ret(), &dev, &behind(), NEW).comment,
            "Remote 'origin' would be fetched. New branch 'dev' would be checked out, with \
             origin/dev (aaaaaaa) as a starting point. Tracking branch would be set to \
             origin/dev. Tracking branch would be updated to origin/dev."
        );
        // update_head=False: no change, a plain comment.
        let keep = Plan {
            update_head: false,
            ..test_plan()
        };
        let kept = test_answer(ret(), &keep, &ff, NEW);
        assert_eq!(kept.result, Some(true));
        assert!(kept.changes.is_empty());
        assert_eq!(
            kept.comment,
            "Local HEAD (0000000) does not match remote HEAD (aaaaaaa) but update_head=False, \
             HEAD would not be updated locally"
        );
        // Up to date, but the tracking branch would be unset (a tag asked for).
        let at = Facts {
            revs_match: true,
            has_remote_rev: true,
            ..behind()
        };
        let tag = Plan {
            desired: Desired::False,
            ..test_plan()
        };
        assert_eq!(
            test_answer(ret(), &tag, &at, NEW).comment,
            "Repository /srv/repo is up-to-date\n\nChanges that would be made: Tracking \
             branch would be unset"
        );
        let bare = test_bare(ret(), "/b.git").comment;
        assert!(bare.starts_with(
            "Repository /b.git is up-to-date\n\nChanges that would be made: B. a. r. e.  . r. "
        ));
        assert!(bare.ends_with("f. e. t. c. h. e. d."));
    }

    #[test]
    fn tracking_and_tags() {
        let dev = Plan {
            desired: Desired::Branch("origin/dev".into()),
            ..test_plan()
        };
        let detached = Facts {
            local_branch: None,
            ..behind()
        };
        assert!(tracking(&dev, &detached).is_err());
        assert_eq!(
            tracking(&dev, &behind())
                .unwrap()
                .map(|(a, _)| a)
                .as_deref(),
            Some("Tracking branch was updated to origin/dev")
        );
        assert_eq!(tracking(&test_plan(), &detached), Ok(None));

        let names = remote_tag_names(&json!({
            "refs/tags/v1.0": "a", "refs/tags/v1.0^{}": "b", "refs/tags/v2.0": "c"
        }));
        assert_eq!(names, ["v1.0".to_owned(), "v2.0".to_owned()].into());
        let local: BTreeSet<String> = ["v0.9".to_owned(), "v1.0".to_owned()].into();
        assert_eq!(tag_sync(&names, &names, true), None);
        assert_eq!(
            tag_sync(&local, &names, true),
            Some(TagSync {
                new: vec!["v2.0".into()],
                delete: vec!["v0.9".into()]
            })
        );
        assert_eq!(
            tag_sync(&local, &names, false).unwrap().delete,
            Vec::<String>::new()
        );
    }

    #[test]
    fn checkouts_and_fast_forwards() {
        let plan = test_plan();
        assert_eq!(checkout(&plan, &behind(), NEW), Ok(None));
        let dev = Plan {
            rev: "dev",
            branch: Some("dev"),
            desired: Desired::Branch("origin/dev".into()),
            remote_loc: Some("origin/dev (aaaaaaa)"),
            ..test_plan()
        };
        let new = checkout(&dev, &behind(), NEW).unwrap().unwrap();
        assert_eq!(new.rev, "origin/dev");
        assert_eq!(new.opts, json!(["-b", "dev"]));
        let mut has_dev = behind();
        has_dev.branches.push("dev".into());
        assert_eq!(
            checkout(&dev, &has_dev, NEW).unwrap().unwrap(),
            Checkout {
                rev: "dev".into(),
                opts: json!([]),
                comment: "'dev' was checked out".into()
            }
        );
        let dirty = Facts {
            local_changes: true,
            ..behind()
        };
        assert_eq!(
            checkout(&dev, &dirty, NEW).unwrap_err(),
            "Local branch 'main' has uncommitted changes. Set 'force_checkout' to True to \
             discard them and proceed."
        );
        let head_dev = Plan {
            branch: Some("dev"),
            ..test_plan()
        };
        assert_eq!(
            checkout(&head_dev, &behind(), NEW).unwrap().unwrap().rev,
            NEW
        );

        let ff = Facts {
            fast_forward: Some(true),
            ..behind()
        };
        assert_eq!(fast_forward_move(&plan, &ff, NEW), Some(Move::Merge));
        assert_eq!(fast_forward_move(&plan, &behind(), NEW), None);
        let there = Facts {
            base_rev: Some(NEW.into()),
            ..ff.clone()
        };
        assert_eq!(fast_forward_move(&plan, &there, NEW), None);
        let tag = Plan {
            rev: "v1.0",
            desired: Desired::False,
            remote_rev_type: Some("tag"),
            ..test_plan()
        };
        assert_eq!(
            fast_forward_move(&tag, &ff, NEW),
            Some(Move::Reset("v1.0".into()))
        );
    }

    #[test]
    fn final_answers() {
        let plan = test_plan();
        let done = finish(ret(), &plan, Some(OLD), Some(NEW.into()), &["a".into()]);
        assert_eq!(done.comment, "a");
        assert_eq!(done.changes["revision"], json!({"old": OLD, "new": NEW}));
        let failed = finish(ret(), &plan, Some(OLD), Some(OLD.into()), &[]);
        assert_eq!(
            (failed.result, failed.comment.as_str()),
            (Some(false), "Failed to update repository")
        );
        let same = finish(ret(), &plan, Some(NEW), Some(NEW.into()), &[]);
        assert_eq!(same.comment, "Repository /srv/repo is up-to-date");
        assert!(same.changes.is_empty());
    }
}
