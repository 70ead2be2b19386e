//! `user.present`'s decisions (`plan`) over accounts as `user.info` and `shadow.info` give
//! them: the cases of Salt's own `tests/pytests/unit/states/test_user.py` that apply on
//! Linux, and the group bookkeeping of `_changes`.

use serde_json::{Value, json};

use super::*;

fn account() -> Value {
    json!({"name": "alice", "uid": 5000, "gid": 5000, "groups": ["alice", "audio", "video"],
           "home": "/home/alice", "shell": "/bin/sh", "passwd": "x", "fullname": "Alice",
           "roomnumber": "", "workphone": "", "homephone": "", "other": ""})
}

fn shadow() -> Value {
    json!({"name": "alice", "passwd": "$6$s$h", "lstchg": 19000, "min": 0, "max": 99999,
           "warn": 7, "inact": -1, "expire": -1})
}

fn want() -> Wanted {
    Wanted {
        name: "alice".into(),
        remove_groups: true,
        createhome: true,
        enforce_password: true,
        ..Wanted::default()
    }
}

fn run(w: &Wanted) -> Result<Vec<(String, Value)>, String> {
    let gids = |g: &Value| match g.as_str().unwrap_or_default() {
        "alice" => json!(5000),
        "audio" => json!(29),
        "video" => json!(44),
        "staff" => json!(50),
        "sound" => json!(29),
        _ => g.as_i64().map_or(json!(""), |n| json!(n)),
    };
    let names = |g: &Value| match g.as_i64() {
        Some(5000) => json!("alice"),
        Some(29) => json!("audio"),
        Some(44) => json!("video"),
        Some(50) => json!("staff"),
        _ => match g.as_str() {
            Some("staff") => json!("staff"),
            _ => g.clone(),
        },
    };
    let dirs = |p: &str| p == "/home/alice";
    plan(
        w,
        &Facts {
            user: &account(),
            shadow: &shadow(),
            group_to_gid: &gids,
            gid_to_group: &names,
            is_dir: &dirs,
        },
    )
}

fn keys(r: Result<Vec<(String, Value)>, String>) -> Vec<String> {
    r.unwrap_or_default().into_iter().map(|(k, _)| k).collect()
}

#[test]
fn nothing_to_change() {
    assert_eq!(run(&want()), Ok(vec![]));
    let mut w = want();
    w.groups = Some(vec!["audio".into(), "video".into()]);
    w.shell = json!("/bin/sh");
    w.gecos[0] = json!("Alice");
    assert_eq!(run(&w), Ok(vec![]));
}

#[test]
fn groups_compared_without_the_primary_and_own_group() {
    let mut w = want();
    w.groups = Some(vec!["audio".into()]);
    assert_eq!(run(&w), Ok(vec![("groups".to_owned(), json!(["audio"]))]));
    // Without remove_groups, a subset needs nothing.
    w.remove_groups = false;
    assert_eq!(run(&w), Ok(vec![]));
    w.groups = Some(vec!["staff".into()]);
    assert_eq!(
        run(&w),
        Ok(vec![(
            "groups".to_owned(),
            json!(["audio", "staff", "video"])
        )])
    );
    // A group sharing a gid with one the user is in counts as that one.
    let mut w = want();
    w.groups = Some(vec!["audio".into(), "sound".into(), "video".into()]);
    assert_eq!(run(&w), Ok(vec![]));
    // groups=[] removes every supplementary group.
    let mut w = want();
    w.groups = Some(vec![]);
    assert_eq!(keys(run(&w)), ["groups"]);
}

#[test]
fn attributes_in_salts_order() {
    let mut w = want();
    w.uid = json!(5001);
    w.gid = json!("staff");
    w.home = json!("/srv/alice");
    w.shell = json!("/bin/bash");
    w.password = json!("$6$t$x");
    w.ageing[1] = json!(90);
    w.gecos[1] = json!("101");
    w.password_lock = json!(true);
    w.allow_uid_change = true;
    w.allow_gid_change = true;
    assert_eq!(
        keys(run(&w)),
        [
            "uid",
            "gid",
            // The old primary group becomes a wanted supplementary one, as in Salt.
            "groups",
            "home",
            "homeDoesNotExist",
            "shell",
            "passwd",
            "maxdays",
            "password_lock",
            "roomnumber"
        ]
    );
    // enforce_password=False keeps a password that is set.
    let mut w = want();
    w.password = json!("$6$t$x");
    w.enforce_password = false;
    assert_eq!(run(&w), Ok(vec![]));
    w.empty_password = true;
    assert_eq!(keys(run(&w)), ["empty_password"]);
}

#[test]
fn uid_and_gid_changes_need_permission() {
    // salt-call --local state.single user.present name=nobody uid=1 gid=2 test=True
    let mut w = want();
    w.uid = json!(1);
    w.gid = json!(2);
    assert_eq!(
        run(&w),
        Err("Encountered error checking for needed changes. Additional info follows:\n\n- Changing uid (5000 -> 1) not permitted, set allow_uid_change to True to force this change. Note that this will not change file ownership.\n- Changing gid (5000 -> 2) not permitted, set allow_gid_change to True to force this change. Note that this will not change file ownership.".into())
    );
}
