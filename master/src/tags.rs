//! Which event tags a minion may fire (`MinionService.SendEvent`), without I/O.
//!
//! Salt lets a minion fire any tag; saltq does not let one speak for the master or for another
//! minion, since a reactor keyed on those tags would believe it. Refused: the master's own
//! namespaces (`salt/auth`, `salt/key`, `salt/job/`, `salt/run/`, `salt/wheel/`,
//! `salt/cluster/`, `salt/presence/`) and another minion's (`salt/minion/<other>/`). Every other
//! tag, including the minion's own `salt/minion/<id>/...`, is fired as given.

/// The master's tags: exact names and prefixes.
const MASTER_EXACT: &[&str] = &["salt/auth", "salt/key"];
const MASTER_PREFIXES: &[&str] = &[
    "salt/auth/",
    "salt/key/",
    "salt/job/",
    "salt/run/",
    "salt/wheel/",
    "salt/cluster/",
    "salt/presence/",
];

/// Checks that minion `id` may fire `tag`; the error names the rule that refuses it.
pub fn check_minion_tag(id: &str, tag: &str) -> Result<(), String> {
    if MASTER_EXACT.contains(&tag) || MASTER_PREFIXES.iter().any(|p| tag.starts_with(p)) {
        return Err(format!(
            "minion {id} may not fire {tag:?}: tags under salt/auth, salt/key, salt/job/, \
             salt/run/, salt/wheel/, salt/cluster/ and salt/presence/ belong to the master"
        ));
    }
    if let Some(rest) = tag.strip_prefix("salt/minion/") {
        let owner = rest.split('/').next().unwrap_or("");
        if owner != id {
            return Err(format!(
                "minion {id} may not fire {tag:?}: tags under salt/minion/{owner}/ belong to \
                 minion {owner}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(id: &str, tag: &str, allowed: bool) {
        assert_eq!(
            check_minion_tag(id, tag).is_ok(),
            allowed,
            "{id} firing {tag}: {:?}",
            check_minion_tag(id, tag)
        );
    }

    #[test]
    fn a_minion_speaks_only_for_itself() {
        for tag in [
            "salt/auth",
            "salt/key",
            "salt/job/20260101000000000000/ret/m2",
            "salt/job/20260101000000000000/new",
            "salt/run/20260101000000000000/new",
            "salt/wheel/20260101000000000000/ret",
            "salt/cluster/peer/join",
            "salt/presence/present",
            "salt/minion/m2/start",
            "salt/minion//start",
            "salt/minion/m10/start",
        ] {
            check("m1", tag, false);
        }
        for tag in [
            "salt/minion/m1/start",
            "salt/minion/m1",
            "myapp/deploy/done",
            "salt/beacon/m1/inotify",
            "salt/authx",
            "minion_start",
            "salt/jobs",
        ] {
            check("m1", tag, true);
        }
        let e = check_minion_tag("m1", "salt/minion/m2/start").unwrap_err();
        assert!(e.contains("belong to minion m2"), "{e}");
        let e = check_minion_tag("m1", "salt/auth").unwrap_err();
        assert!(e.contains("belong to the master"), "{e}");
    }
}
