//! `git.latest`'s decisions before it touches the clone: its arguments checked in Salt's
//! order, and its rev resolved against what `git.remote_refs` answered. Pure functions of
//! the arguments and of the facts already read, unit-tested without git.

use serde_json::{Map, Value};

use saltq_exec::Param;
use saltq_semantics::python::{self, truthy};

use super::{Desired, ForceReset, LATEST_PARAMS, short};

/// The state's arguments as the function sees them (Salt's defaults filled in).
pub(super) struct Given<'a>(pub(super) &'a Map<String, Value>);

impl Given<'_> {
    /// As [`super::StateCall::param`]: given (`None` included), else the default.
    pub(super) fn param(&self, key: &str) -> Value {
        match self.0.get(key) {
            Some(v) => v.clone(),
            None => LATEST_PARAMS
                .iter()
                .find(|p| p.name == key)
                .and_then(|p| p.default)
                .map_or(Value::Null, |d| d.to_value()),
        }
    }

    /// As [`super::StateCall::arg`]: given and not `None`.
    pub(super) fn arg(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    /// A boolean argument with its default.
    pub(super) fn flag(&self, key: &str) -> bool {
        truthy(&self.param(key))
    }
}

/// `git.latest`'s arguments once Salt's first checks passed.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Args {
    /// `remote`, as a string.
    pub(super) remote: String,
    /// `target`, an absolute path.
    pub(super) target: String,
    /// `rev`, as given (a SHA1 is lower-cased once resolved).
    pub(super) rev: String,
    /// `force_reset`, told apart.
    pub(super) force_reset: ForceReset,
    /// `branch`, `None` when not given.
    pub(super) branch: Option<String>,
    /// `identity` as given (before `~` is expanded), `None` when not given.
    pub(super) identity: Option<Vec<String>>,
}

/// Salt's checks of `git.latest`'s arguments, in its order: the first failure's comment.
pub(super) fn check_args(given: &Given<'_>, params: &[Param]) -> Result<Args, String> {
    // Salt's `clean_kwargs` drops the `__`-prefixed keys; the rest are not valid.
    let invalid: Vec<String> = given
        .0
        .iter()
        .filter(|(k, _)| !k.starts_with("__") && !params.iter().any(|q| q.name == k.as_str()))
        .map(|(k, v)| format!("{k}={}", python::str(v)))
        .collect();
    if !invalid.is_empty() {
        return Err(format!(
            "The following keyword arguments are not valid: {}",
            invalid.join(", ")
        ));
    }
    let remote_v = given.param("remote");
    if !truthy(&remote_v) {
        return Err("'remote' argument is required".into());
    }
    let target_v = given.param("target");
    if !truthy(&target_v) {
        return Err("'target' argument is required".into());
    }
    let rev_v = given.param("rev");
    if !truthy(&rev_v) {
        return Err(format!(
            "'{}' is not a valid value for the 'rev' argument",
            python::str(&rev_v)
        ));
    }
    let force_reset = ForceReset::parse(&given.param("force_reset"))
        .ok_or("'force_reset' must be one of True, False, or 'remote-changes'")?;
    let target = python::str(&target_v);
    if !std::path::Path::new(&target).is_absolute() {
        return Err(format!("target '{target}' is not an absolute path"));
    }
    let identity = match given.arg("identity") {
        None => None,
        Some(Value::String(s)) => Some(vec![s.clone()]),
        Some(Value::Array(items)) => Some(items.iter().map(python::str).collect()),
        Some(_) => return Err("identity must be either a list or a string".into()),
    };
    Ok(Args {
        remote: python::str(&remote_v),
        target,
        rev: python::str(&rev_v),
        force_reset,
        branch: given.arg("branch").map(python::str),
        identity,
    })
}

/// Salt's checks once the target was looked at: not a regular file, and a rev only
/// without `bare`/`mirror` (the fetch URL's own check comes between them, in
/// [`super::latest`]).
pub(super) fn check_target(target: &str, target_is_file: bool) -> Result<(), String> {
    if target_is_file {
        return Err(format!(
            "Target '{target}' exists and is a regular file, cannot proceed"
        ));
    }
    Ok(())
}

/// Salt's refusal of a rev with a bare clone.
pub(super) fn check_bare_rev(rev: &str, bare: bool) -> Result<(), String> {
    if rev != "HEAD" && bare {
        return Err("'rev' is not compatible with the 'mirror' and 'bare' arguments".into());
    }
    Ok(())
}

/// The refspecs `git.fetch` is given: both, with `fetch_tags`, else none.
pub(super) fn refspecs(fetch_tags: bool, remote: &str, branch: &str, tag: &str) -> Vec<String> {
    if fetch_tags {
        vec![
            format!("refs/heads/{branch}:refs/remotes/{remote}/{branch}"),
            format!("+refs/tags/{tag}:refs/tags/{tag}"),
        ]
    } else {
        Vec::new()
    }
}

/// The rev resolved against the remote's refs.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Resolved {
    /// `rev`, lower-cased when it is taken as a SHA1.
    pub(super) rev: String,
    /// The remote's SHA1 for it, `None` when bare or not found.
    pub(super) remote_rev: Option<String>,
    /// `sha1`, `branch` or `tag`.
    pub(super) remote_rev_type: Option<&'static str>,
    /// How comments name it: `remote HEAD (abc1234)`, `origin/dev (abc1234)`, ...
    pub(super) remote_loc: Option<String>,
    /// The upstream branch wanted.
    pub(super) desired: Desired,
    /// The remote's default branch: the head whose SHA1 is the remote HEAD's.
    pub(super) default_branch: Option<String>,
    /// Whether the remote has a HEAD at all.
    pub(super) has_remote_head: bool,
}

/// Salt's resolution of `rev` over `git.remote_refs`'s answer, with its two refusals
/// (`depth` needs a branch or tag; a rev the remote lacks).
pub(super) fn resolve(
    refs: &Map<String, Value>,
    rev: &str,
    remote: &str,
    bare: bool,
    depth_given: bool,
) -> Result<Resolved, String> {
    let head_rev = refs.get("HEAD").map(python::str);
    let default_branch = head_rev.as_ref().and_then(|head| {
        refs.iter().find_map(|(refname, sha)| {
            refname
                .strip_prefix("refs/heads/")
                .filter(|_| python::str(sha) == *head)
                .map(str::to_owned)
        })
    });
    let mut rev = rev.to_owned();
    let mut desired = Desired::False;
    let (remote_rev, remote_rev_type) = if bare {
        (None, None)
    } else {
        let get = |k: &str| refs.get(k).map(python::str);
        if rev == "HEAD" {
            match &head_rev {
                Some(h) => {
                    desired = Desired::None;
                    (Some(h.clone()), Some("sha1"))
                }
                None => (None, None),
            }
        } else if let Some(sha) = get(&format!("refs/heads/{rev}")) {
            desired = Desired::Branch(format!("{remote}/{rev}"));
            (Some(sha), Some("branch"))
        } else if let Some(sha) = get(&format!("refs/tags/{rev}^{{}}")) {
            (Some(sha), Some("tag"))
        } else if let Some(sha) = get(&format!("refs/tags/{rev}")) {
            (Some(sha), Some("tag"))
        } else if rev.len() <= 40 && rev.chars().all(|c| c.is_ascii_hexdigit()) {
            rev = rev.to_lowercase();
            (Some(rev.clone()), Some("sha1"))
        } else {
            (None, None)
        }
    };
    let remote_loc = if bare {
        None
    } else {
        location(&rev, remote_rev.as_deref(), remote_rev_type, &desired)
    };
    if depth_given && !matches!(remote_rev_type, Some("branch" | "tag")) {
        return Err(
            "When 'depth' is used, 'rev' must be set to the name of a branch or tag \
                    on the remote repository"
                .into(),
        );
    }
    if remote_rev.is_none() && !bare && rev != "HEAD" {
        return Err(format!(
            "No revision matching '{rev}' exists in the remote repository"
        ));
    }
    Ok(Resolved {
        rev,
        remote_rev,
        remote_rev_type,
        remote_loc,
        desired,
        default_branch,
        has_remote_head: refs.contains_key("HEAD"),
    })
}

/// Salt's `remote_loc`: how comments name the remote rev.
fn location(
    rev: &str,
    remote_rev: Option<&str>,
    rev_type: Option<&str>,
    desired: &Desired,
) -> Option<String> {
    let r = remote_rev?;
    Some(match rev_type {
        Some("sha1") if rev == "HEAD" => format!("remote HEAD ({})", short(Some(r))),
        Some("sha1") => short(Some(r)),
        Some("branch") => format!(
            "{} ({})",
            desired.name().unwrap_or_default(),
            short(Some(r))
        ),
        _ => format!("{rev} ({})", short(Some(r))),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn check(v: Value) -> Result<Args, String> {
        let m = args(v);
        check_args(&Given(&m), LATEST_PARAMS)
    }

    #[test]
    fn arguments_are_checked_in_salts_order() {
        // An unknown keyword wins over every other fault.
        assert_eq!(
            check(json!({"frob": 1, "target": "rel", "__env__": "base"})).unwrap_err(),
            "The following keyword arguments are not valid: frob=1"
        );
        assert_eq!(
            check(json!({"target": "/t", "remote": ""})).unwrap_err(),
            "'remote' argument is required"
        );
        assert_eq!(
            check(json!({})).unwrap_err(),
            "'target' argument is required"
        );
        assert_eq!(
            check(json!({"target": "/t", "rev": ""})).unwrap_err(),
            "'' is not a valid value for the 'rev' argument"
        );
        assert_eq!(
            check(json!({"target": "rel", "force_reset": "yes"})).unwrap_err(),
            "'force_reset' must be one of True, False, or 'remote-changes'"
        );
        assert_eq!(
            check(json!({"target": "rel"})).unwrap_err(),
            "target 'rel' is not an absolute path"
        );
        assert_eq!(
            check(json!({"target": "/t", "identity": 5})).unwrap_err(),
            "identity must be either a list or a string"
        );
    }

    #[test]
    fn good_arguments_come_back_typed() {
        let a = check(json!({"target": "/t", "identity": "~/k", "branch": "dev",
                             "force_reset": "remote-changes"}))
        .unwrap();
        assert_eq!(
            a,
            Args {
                remote: "origin".into(),
                target: "/t".into(),
                rev: "HEAD".into(),
                force_reset: ForceReset::RemoteChanges,
                branch: Some("dev".into()),
                identity: Some(vec!["~/k".into()]),
            }
        );
        let a = check(json!({"target": "/t", "identity": ["/a", "/b"], "branch": null})).unwrap();
        assert_eq!(a.identity, Some(vec!["/a".into(), "/b".into()]));
        assert_eq!(a.branch, None);
        assert_eq!(a.force_reset, ForceReset::No);
    }

    #[test]
    fn target_and_bare_checks() {
        assert!(check_target("/t", false).is_ok());
        assert_eq!(
            check_target("/t", true).unwrap_err(),
            "Target '/t' exists and is a regular file, cannot proceed"
        );
        assert!(check_bare_rev("HEAD", true).is_ok());
        assert!(check_bare_rev("dev", false).is_ok());
        assert!(check_bare_rev("dev", true).is_err());
        assert_eq!(
            refspecs(true, "up", "*", "v*"),
            [
                "refs/heads/*:refs/remotes/up/*",
                "+refs/tags/v*:refs/tags/v*"
            ]
        );
        assert!(refspecs(false, "up", "*", "*").is_empty());
    }

    fn refs() -> Map<String, Value> {
        args(json!({
            "HEAD": "aaaaaaa1111",
            "refs/heads/main": "aaaaaaa1111",
            "refs/heads/dev": "bbbbbbb2222",
            "refs/tags/v1.0": "ccccccc3333",
            "refs/tags/v1.0^{}": "ddddddd4444",
            "refs/tags/v0.9": "eeeeeee5555",
        }))
    }

    #[test]
    fn revs_resolve_as_salts_do() {
        let r = resolve(&refs(), "HEAD", "origin", false, false).unwrap();
        assert_eq!(r.remote_rev.as_deref(), Some("aaaaaaa1111"));
        assert_eq!(r.remote_rev_type, Some("sha1"));
        assert_eq!(r.remote_loc.as_deref(), Some("remote HEAD (aaaaaaa)"));
        assert_eq!(r.desired, Desired::None);
        assert_eq!(r.default_branch.as_deref(), Some("main"));
        assert!(r.has_remote_head);

        let r = resolve(&refs(), "dev", "up", false, true).unwrap();
        assert_eq!(r.remote_rev_type, Some("branch"));
        assert_eq!(r.desired, Desired::Branch("up/dev".into()));
        assert_eq!(r.remote_loc.as_deref(), Some("up/dev (bbbbbbb)"));

        // An annotated tag resolves to the commit it peels to.
        let r = resolve(&refs(), "v1.0", "origin", false, false).unwrap();
        assert_eq!(r.remote_rev.as_deref(), Some("ddddddd4444"));
        assert_eq!(r.remote_loc.as_deref(), Some("v1.0 (ddddddd)"));
        let r = resolve(&refs(), "v0.9", "origin", false, true).unwrap();
        assert_eq!(
            (r.remote_rev.as_deref(), r.desired),
            (Some("eeeeeee5555"), Desired::False)
        );

        let r = resolve(&refs(), "ABCDEF0", "origin", false, false).unwrap();
        assert_eq!(r.rev, "abcdef0");
        assert_eq!(r.remote_loc.as_deref(), Some("abcdef0"));
    }

    #[test]
    fn bad_revs_are_refused() {
        assert_eq!(
            resolve(&refs(), "nosuch", "origin", false, false).unwrap_err(),
            "No revision matching 'nosuch' exists in the remote repository"
        );
        assert!(
            resolve(&refs(), "abcdef0", "origin", false, true)
                .unwrap_err()
                .starts_with("When 'depth' is used")
        );
        // Bare: nothing is resolved, and nothing is refused.
        let r = resolve(&refs(), "HEAD", "origin", true, false).unwrap();
        assert_eq!((r.remote_rev, r.remote_loc), (None, None));
        // An empty remote: HEAD resolves to nothing, and that is no fault.
        let r = resolve(&Map::new(), "HEAD", "origin", false, false).unwrap();
        assert_eq!((r.remote_rev, r.has_remote_head), (None, false));
        assert_eq!(r.desired, Desired::False);
    }
}
