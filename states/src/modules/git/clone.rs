//! `git.latest` where there is no clone yet (Salt's second branch of the state): what to do
//! with a directory already at the target, the `git clone` options, and what to answer are
//! pure functions of the plan and of what was read; [`clone`] runs the `git.*` calls.

use std::path::Path;

use serde_json::{Value, json};

use saltq_semantics::python;

use super::update::start_point;
use super::{
    Git, Plan, Ret, StateError, empty_dir, fail, format_comments, neutral_test, revs_equal,
    strip_exc, submodule_update, upstream_change,
};

/// What to do with what is at the target before cloning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Existing {
    /// Nothing there, or an empty directory: clone into it.
    Clone,
    /// `force_clone` in test mode: answer that the contents would be deleted.
    WouldForce(String),
    /// `force_clone`: empty the directory, then clone.
    Force,
    /// A non-empty directory without `force_clone`: refuse.
    Refuse(String),
}

/// Salt's handling of a directory at the target (`None`: there is none).
pub(super) fn existing(plan: &Plan<'_>, has_contents: Option<bool>, force_clone: bool) -> Existing {
    let (name, target) = (plan.name, plan.target);
    match has_contents {
        None => Existing::Clone,
        Some(_) if force_clone && plan.test => Existing::WouldForce(format!(
            "Target directory {target} exists. Since force_clone=True, the contents of \
             {target} would be deleted, and {name} would be cloned into this directory."
        )),
        Some(_) if force_clone => Existing::Force,
        Some(true) => Existing::Refuse(format!(
            "Target '{target}' exists, is non-empty and is not a git repository. Set the \
             'force_clone' option to True to remove this directory's contents and proceed \
             with cloning the remote repository"
        )),
        Some(false) => Existing::Clone,
    }
}

/// `git clone`'s options: `--mirror`/`--bare`, `--origin`, `--depth` with `--branch`.
pub(super) fn clone_opts(plan: &Plan<'_>) -> Vec<String> {
    let mut opts: Vec<String> = if plan.mirror {
        vec!["--mirror".into()]
    } else if plan.bare {
        vec!["--bare".into()]
    } else {
        Vec::new()
    };
    if plan.remote != "origin" {
        opts.extend(["--origin".into(), plan.remote.to_owned()]);
    }
    if let Some(depth) = &plan.depth {
        opts.extend([
            "--depth".into(),
            python::str(depth),
            "--branch".into(),
            plan.rev.to_owned(),
        ]);
    }
    opts
}

/// The comment once cloned.
pub(super) fn cloned_comment(plan: &Plan<'_>) -> String {
    let how = if plan.mirror {
        " as mirror"
    } else if plan.bare {
        " as bare repository"
    } else {
        ""
    };
    format!("{} cloned to {}{how}", plan.name, plan.target)
}

/// Salt's refusal when the remote was empty but a rev was asked for.
pub(super) fn empty_remote(plan: &Plan<'_>) -> Option<String> {
    (plan.rev != "HEAD").then(|| {
        format!(
            "Repository was cloned but is empty, so {}/{} cannot be checked out",
            plan.remote, plan.rev
        )
    })
}

/// Salt's refusal when the clone's HEAD names a branch the remote does not have.
const DANGLING_HEAD: &str = "Remote HEAD refers to a ref that does not exist. This can \
    happen when the default branch on the remote repository is renamed or deleted. If you \
    are unable to fix the remote repository, you can work around this by setting the \
    'branch' argument (which will ensure that the named branch is created if it does not \
    already exist).";

/// A refusal's comment, or an error from a `git.*` call.
type Step<T> = Result<Result<T, String>, StateError>;

/// `git.latest` where there is no clone yet (Salt's second branch of the state).
pub(super) async fn clone(
    git: &Git<'_>,
    plan: &Plan<'_>,
    mut ret: Ret,
    comments: &mut Vec<String>,
) -> Result<Ret, StateError> {
    let (name, target) = (plan.name, plan.target);
    let new = json!(format!("{name} => {target}"));
    if let Some(answer) = prepare_dir(git, plan, &mut ret, comments, &new) {
        return Ok(answer);
    }
    if plan.test {
        ret.changes.insert("new".into(), new);
        let msg = format!("Repository {name} would be cloned to {target}");
        return Ok(neutral_test(ret, msg));
    }
    let cloned = git
        .run(
            "clone",
            vec![json!(target), json!(name)],
            &[
                ("opts", json!(clone_opts(plan))),
                ("identity", git.identity.clone()),
                ("https_user", git.https_user.clone()),
                ("https_pass", git.https_pass.clone()),
                ("saltenv", git.saltenv()),
            ],
        )
        .await;
    if let Err(e) = cloned {
        let msg = format!("Clone failed: {}", strip_exc(&e.0));
        return Ok(fail(ret, msg, comments));
    }
    ret.changes.insert("new".into(), new);
    comments.push(cloned_comment(plan));
    if !plan.bare {
        let settled = match plan.remote_rev {
            None => empty_remote(plan).map_or(Ok(()), Err),
            Some(remote_rev) => settle(git, plan, comments, remote_rev).await?,
        };
        if let Err(msg) = settled {
            return Ok(fail(ret, msg, comments));
        }
    }
    if plan.submodules
        && plan.remote_rev.is_some()
        && let Err(e) = submodule_update(git, target).await
    {
        let msg = format!("Failed to update submodules: {}", strip_exc(&e.0));
        return Ok(fail(ret, msg, comments));
    }
    let new_rev = git
        .string(
            "revision",
            vec![json!(target)],
            &[("ignore_retcode", json!(true))],
        )
        .await
        .ok();
    ret.comment = format_comments(comments);
    if let Some(new_rev) = new_rev {
        ret.changes
            .insert("revision".into(), json!({"old": null, "new": new_rev}));
    }
    Ok(ret)
}

/// Deals with a directory at the target as [`existing`] decides: `Some` is the answer.
fn prepare_dir(
    git: &Git<'_>,
    plan: &Plan<'_>,
    ret: &mut Ret,
    comments: &[String],
    new: &Value,
) -> Option<Ret> {
    let dir = Path::new(plan.target);
    let has_contents = dir.is_dir().then(|| {
        std::fs::read_dir(dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(false)
    });
    let force_clone = python::truthy(&git.call.param(super::LATEST_PARAMS, "force_clone"));
    match existing(plan, has_contents, force_clone) {
        Existing::Clone => None,
        Existing::WouldForce(msg) => {
            ret.changes.insert("forced clone".into(), json!(true));
            ret.changes.insert("new".into(), new.clone());
            Some(neutral_test(ret.clone(), msg))
        }
        Existing::Force => {
            let errors = empty_dir(dir);
            if !errors.is_empty() {
                let lines: Vec<String> = errors
                    .iter()
                    .map(|(p, e)| format!("  {p}\n    {e}"))
                    .collect();
                let msg = format!("Unable to remove\n{}", lines.join("\n"));
                return Some(fail(ret.clone(), msg, comments));
            }
            ret.changes.insert("forced clone".into(), json!(true));
            None
        }
        Existing::Refuse(msg) => Some(fail(ret.clone(), msg, &[])),
    }
}

/// After cloning a non-empty remote: the tag is there, the branch is checked out, HEAD is
/// at the remote rev and tracks the desired upstream. `Err` is a refusal's comment.
async fn settle(
    git: &Git<'_>,
    plan: &Plan<'_>,
    comments: &mut Vec<String>,
    remote_rev: &str,
) -> Step<()> {
    let target = plan.target;
    let t = || json!(target);
    if plan.remote_rev_type == Some("tag")
        && !git
            .list("list_tags", target)
            .await?
            .iter()
            .any(|x| x == plan.rev)
    {
        return Ok(Err(format!(
            "Revision '{}' does not exist in clone",
            plan.rev
        )));
    }
    if let Some(b) = plan.branch
        && !git
            .list("list_branches", target)
            .await?
            .iter()
            .any(|x| x == b)
    {
        let opts = [("opts", json!(["-b", b]))];
        git.run(
            "checkout",
            vec![t(), json!(start_point(plan, remote_rev))],
            &opts,
        )
        .await?;
        comments.push(format!(
            "Branch '{b}' checked out, with {} as a starting point",
            plan.remote_loc.unwrap_or("None")
        ));
    }
    let (local_rev, local_branch) = git.local_rev_and_branch(target).await;
    if local_branch.is_none() && !plan.has_remote_head {
        return Ok(Err(DANGLING_HEAD.into()));
    }
    if !revs_equal(local_rev.as_deref(), Some(remote_rev), plan.remote_rev_type) {
        let opts = [("opts", json!(["--hard", remote_rev]))];
        git.run("reset", vec![t()], &opts).await?;
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
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::super::test_plan;
    use super::*;

    #[test]
    fn a_directory_at_the_target_is_dealt_with_as_salts() {
        let plan = test_plan();
        assert_eq!(existing(&plan, None, true), Existing::Clone);
        assert_eq!(existing(&plan, Some(false), false), Existing::Clone);
        assert_eq!(existing(&plan, Some(true), true), Existing::Force);
        assert_eq!(existing(&plan, Some(false), true), Existing::Force);
        let Existing::Refuse(msg) = existing(&plan, Some(true), false) else {
            panic!("a non-empty directory is refused");
        };
        assert!(msg.starts_with("Target '/srv/repo' exists, is non-empty"));
        let plan = Plan {
            test: true,
            ..test_plan()
        };
        assert_eq!(
            existing(&plan, Some(true), true),
            Existing::WouldForce(
                "Target directory /srv/repo exists. Since force_clone=True, the contents of \
                 /srv/repo would be deleted, and file:///r.git would be cloned into this \
                 directory."
                    .into()
            )
        );
        // Test mode without force_clone refuses as a real run does.
        assert!(matches!(
            existing(&plan, Some(true), false),
            Existing::Refuse(_)
        ));
    }

    #[test]
    fn clone_options_and_comments() {
        let plan = test_plan();
        assert!(clone_opts(&plan).is_empty());
        assert_eq!(cloned_comment(&plan), "file:///r.git cloned to /srv/repo");
        let plan = Plan {
            remote: "upstream",
            rev: "main",
            depth: Some(json!(1)),
            ..test_plan()
        };
        assert_eq!(
            clone_opts(&plan),
            ["--origin", "upstream", "--depth", "1", "--branch", "main"]
        );
        let plan = Plan {
            mirror: true,
            bare: true,
            ..test_plan()
        };
        assert_eq!(clone_opts(&plan), ["--mirror"]);
        assert_eq!(
            cloned_comment(&plan),
            "file:///r.git cloned to /srv/repo as mirror"
        );
        let plan = Plan {
            bare: true,
            ..test_plan()
        };
        assert_eq!(clone_opts(&plan), ["--bare"]);
        assert_eq!(
            cloned_comment(&plan),
            "file:///r.git cloned to /srv/repo as bare repository"
        );
    }

    #[test]
    fn an_empty_remote_is_refused_only_for_a_rev() {
        assert_eq!(empty_remote(&test_plan()), None);
        let plan = Plan {
            rev: "main",
            ..test_plan()
        };
        assert_eq!(
            empty_remote(&plan).as_deref(),
            Some("Repository was cloned but is empty, so origin/main cannot be checked out")
        );
    }
}
