//! Salt's `git.cloned`: make sure a clone exists at the target, on the branch asked for.
//! Its argument checks and answers are pure functions of the arguments and of what was
//! read (whether the target exists, its current branch, whether the branch is local);
//! [`cloned`] runs the `git.*` calls.

use std::path::Path;

use serde_json::{Value, json};

use saltq_semantics::python;

use super::{Git, Ret, StateCall, StateError, fail, format_comments, neutral_test, strip_exc};

/// Salt's checks of `target` and `branch`: the target and branch, or the failure's comment.
pub(super) fn check_args(
    target: Option<&Value>,
    branch: Option<&Value>,
) -> Result<(String, Option<String>), &'static str> {
    let target = target
        .map(python::str)
        .ok_or("'target' argument is required")?;
    if !Path::new(&target).is_absolute() {
        return Err("'target' path must be absolute");
    }
    let branch = branch.map(python::str);
    if branch.as_deref() == Some("") {
        return Err("Invalid 'branch' argument");
    }
    Ok((target, branch))
}

/// ` with branch 'dev'`, or nothing.
fn with_branch(branch: Option<&str>) -> String {
    branch.map_or_else(String::new, |b| format!(" with branch '{b}'"))
}

/// The answer for a clone there is no need to make or change.
pub(super) fn already(mut ret: Ret, target: &str, branch: Option<&str>) -> Ret {
    ret.result = Some(true);
    let on = branch.map_or_else(String::new, |b| {
        format!(" and is checked out to branch '{b}'")
    });
    ret.comment = format!("Repository already exists at {target}{on}");
    ret
}

/// The `test=True` answer for a clone to make.
pub(super) fn would_clone(mut ret: Ret, name: &str, target: &str, branch: Option<&str>) -> Ret {
    ret.changes
        .insert("new".into(), json!(format!("{name} => {target}")));
    let msg = format!("{name} would be cloned to {target}{}", with_branch(branch));
    neutral_test(ret, msg)
}

/// The answer once cloned.
pub(super) fn was_cloned(mut ret: Ret, name: &str, target: &str, branch: Option<&str>) -> Ret {
    ret.changes
        .insert("new".into(), json!(format!("{name} => {target}")));
    let done = format!("{name} cloned to {target}{}", with_branch(branch));
    ret.comment = format_comments(&[done]);
    ret.result = Some(true);
    ret
}

/// The branch change: its `changes` entry.
fn branch_change(current: &str, branch: &str) -> Value {
    json!({"old": current, "new": branch})
}

/// The `test=True` answer for a branch to change.
pub(super) fn would_change(mut ret: Ret, current: &str, branch: &str) -> Ret {
    ret.changes
        .insert("branch".into(), branch_change(current, branch));
    neutral_test(ret, format!("Branch would be changed to '{branch}'"))
}

/// The answer once the branch changed.
pub(super) fn changed(mut ret: Ret, current: &str, branch: &str) -> Ret {
    ret.changes
        .insert("branch".into(), branch_change(current, branch));
    ret.comment = format_comments(&[format!("Branch changed to '{branch}'")]);
    ret.result = Some(true);
    ret
}

/// `git.checkout`'s rev and `opts`: the local branch, or a new one from `origin`'s.
pub(super) fn checkout_args(branch: &str, is_local: bool) -> (String, Value) {
    if is_local {
        (branch.to_owned(), Value::Null)
    } else {
        (format!("origin/{branch}"), json!(["-b", branch]))
    }
}

/// Salt's `git.cloned`.
pub(super) async fn cloned(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.as_str();
    let mut ret = Ret::new(name);
    ret.result = Some(false);
    let (target, branch) = match check_args(call.arg("target"), call.arg("branch")) {
        Ok(checked) => checked,
        Err(msg) => {
            ret.comment = msg.into();
            return Ok(ret);
        }
    };
    let identity = call.arg("identity").cloned().unwrap_or(Value::Null);
    let git = Git::new(&call, identity);
    let t = || json!(target);
    if !Path::new(&target).exists() {
        if call.test {
            return Ok(would_clone(ret, name, &target, branch.as_deref()));
        }
        return Ok(clone(&git, ret, name, &target, branch.as_deref()).await);
    }
    if let Err(e) = git.run("status", vec![t()], &[]).await {
        ret.comment = e.0;
        return Ok(ret);
    }
    let Some(branch) = branch else {
        return Ok(already(ret, &target, None));
    };
    let current = git.string("current_branch", vec![t()], &[]).await?;
    if current == branch {
        return Ok(already(ret, &target, Some(&branch)));
    }
    if call.test {
        return Ok(would_change(ret, &current, &branch));
    }
    let is_local = git.rev_parse(&target, &branch, None).await.is_some();
    let (rev, opts) = checkout_args(&branch, is_local);
    let kwargs = [("rev", json!(rev)), ("opts", opts)];
    if let Err(e) = git.run("checkout", vec![t()], &kwargs).await {
        let msg = format!("Failed to change branch to '{branch}': {}", e.0);
        return Ok(fail(ret, msg, &[]));
    }
    Ok(changed(ret, &current, &branch))
}

/// Clones `name` into `target`, on `branch` when given.
async fn clone(git: &Git<'_>, ret: Ret, name: &str, target: &str, branch: Option<&str>) -> Ret {
    let opts = branch.map_or(Value::Null, |b| json!(["--branch", b]));
    let cloned = git
        .run(
            "clone",
            vec![json!(target), json!(name)],
            &[
                ("opts", opts),
                ("identity", git.identity.clone()),
                ("https_user", git.https_user.clone()),
                ("https_pass", git.https_pass.clone()),
            ],
        )
        .await;
    match cloned {
        Ok(_) => was_cloned(ret, name, target, branch),
        Err(e) => fail(ret, format!("Clone failed: {}", strip_exc(&e.0)), &[]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_in_salts_order() {
        let (rel, abs, empty) = (json!("rel"), json!("/srv/c"), json!(""));
        assert_eq!(
            check_args(None, Some(&empty)),
            Err("'target' argument is required")
        );
        assert_eq!(
            check_args(Some(&rel), Some(&empty)),
            Err("'target' path must be absolute")
        );
        assert_eq!(
            check_args(Some(&abs), Some(&empty)),
            Err("Invalid 'branch' argument")
        );
        assert_eq!(
            check_args(Some(&abs), None),
            Ok(("/srv/c".to_owned(), None))
        );
        assert_eq!(
            check_args(Some(&abs), Some(&json!("dev"))),
            Ok(("/srv/c".to_owned(), Some("dev".to_owned())))
        );
    }

    #[test]
    fn answers() {
        let ret = || Ret::new("file:///r.git");
        let would = would_clone(ret(), "file:///r.git", "/c", Some("dev"));
        assert_eq!(
            (would.result, would.comment.as_str()),
            (
                None,
                "file:///r.git would be cloned to /c with branch 'dev'"
            )
        );
        assert_eq!(would.changes["new"], json!("file:///r.git => /c"));
        let done = was_cloned(ret(), "file:///r.git", "/c", None);
        assert_eq!(
            (done.result, done.comment.as_str()),
            (Some(true), "file:///r.git cloned to /c")
        );
        assert_eq!(
            already(ret(), "/c", Some("dev")).comment,
            "Repository already exists at /c and is checked out to branch 'dev'"
        );
        assert_eq!(
            already(ret(), "/c", None).comment,
            "Repository already exists at /c"
        );
        let would = would_change(ret(), "main", "dev");
        assert_eq!(would.result, None);
        assert_eq!(would.comment, "Branch would be changed to 'dev'");
        assert_eq!(
            would.changes["branch"],
            json!({"old": "main", "new": "dev"})
        );
        let done = changed(ret(), "main", "dev");
        assert_eq!(
            (done.result, done.comment.as_str()),
            (Some(true), "Branch changed to 'dev'")
        );
    }

    #[test]
    fn checkout_of_a_local_or_a_remote_branch() {
        assert_eq!(checkout_args("dev", true), ("dev".into(), Value::Null));
        assert_eq!(
            checkout_args("dev", false),
            ("origin/dev".into(), json!(["-b", "dev"]))
        );
    }
}
