//! `user.*` and `group.*`: parsing checked against salt 3007.8's answers for `nobody` and
//! `nogroup` on this machine, then a throwaway user and group added and deleted when the
//! tests run as root (skipped with a message otherwise).

use serde_json::json;

use super::*;
use crate::testutil::{check, run, run_kw};

/// Removes the throwaway user and group whatever the test's outcome.
struct Cleanup(&'static str, &'static str);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::process::Command::new("userdel")
            .args(["-r", self.0])
            .output();
        let _ = std::process::Command::new("groupdel").arg(self.1).output();
    }
}

#[test]
fn passwd_and_group_entries() {
    let users = parse_passwd(
        "root:x:0:0:root:/root:/bin/bash\n# comment\nbad line\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nfull:x:1000:1000:Full Name,101,555-1,555-2,other,more:/home/full:/bin/sh\n",
    );
    assert_eq!(users.len(), 3);
    // salt 3007.8: user.info nobody
    assert_eq!(
        format_info(&users[1], vec!["nogroup".into()]),
        json!({"gid": 65534, "groups": ["nogroup"], "home": "/nonexistent", "name": "nobody",
               "passwd": "x", "shell": "/usr/sbin/nologin", "uid": 65534, "fullname": "nobody",
               "roomnumber": "", "workphone": "", "homephone": "", "other": ""})
    );
    let full = format_info(&users[2], vec![]);
    assert_eq!(
        (
            full["fullname"].clone(),
            full["roomnumber"].clone(),
            full["other"].clone()
        ),
        (json!("Full Name"), json!("101"), json!("other,more"))
    );
    assert_eq!(
        crate::modules::group::parse_group("nogroup:x:65534:\nwheel:x:10:alice,bob\n"),
        [
            json!({"name": "nogroup", "passwd": "x", "gid": 65534, "members": []}),
            json!({"name": "wheel", "passwd": "x", "gid": 10, "members": ["alice", "bob"]}),
        ]
    );
}

#[tokio::test]
async fn read_only_on_this_host() {
    let out = run("user.info", json!(["root"])).await.ret;
    assert_eq!(
        (out["uid"].clone(), out["home"].clone()),
        (json!(0), json!("/root"))
    );
    assert!(
        out["groups"]
            .as_array()
            .is_some_and(|g| g.contains(&json!("root")))
    );
    check(
        "user.info",
        json!(["nosuchuser_x"]),
        json!({}),
        json!({}),
        0,
    )
    .await;
    let users = run("user.list_users", json!([])).await.ret;
    let names: Vec<String> = serde_json::from_value(users).unwrap_or_default();
    assert!(names.contains(&"root".to_owned()));
    assert!(names.windows(2).all(|w| w[0] <= w[1]), "sorted");
    let all = run("user.getent", json!([])).await.ret;
    assert_eq!(all[0]["name"], json!("root"), "passwd order, root first");
    let root_group = run("group.info", json!(["root"])).await.ret;
    assert_eq!(
        root_group,
        json!({"name": "root", "passwd": "x", "gid": 0, "members": []})
    );
    check("group.info", json!(["nosuch_x"]), json!({}), json!({}), 0).await;
    let groups = run("group.getent", json!([])).await.ret;
    assert_eq!(groups[0]["name"], json!("root"));
}

#[tokio::test]
async fn add_and_delete_a_throwaway_user() {
    if !nix::unistd::Uid::current().is_root() {
        println!("user.add/delete, group.add/delete: skipped, the tests do not run as root");
        return;
    }
    let (user, group) = ("saltqtest1", "saltqgrp1");
    let _cleanup = Cleanup(user, group);
    // The sequence run against salt 3007.8, with its answers.
    check("group.add", json!([group]), json!({}), json!(true), 0).await;
    check("group.add", json!([group]), json!({}), json!(false), 0).await;
    check(
        "user.add",
        json!([user]),
        json!({"groups": [group], "fullname": "Salt Q", "shell": "/bin/sh"}),
        json!(true),
        0,
    )
    .await;
    check("user.add", json!([user]), json!({}), json!(false), 0).await;
    let info = run("user.info", json!([user])).await.ret;
    assert_eq!(info["name"], json!(user));
    assert_eq!(info["shell"], json!("/bin/sh"));
    assert_eq!(info["fullname"], json!("Salt Q"));
    assert!(
        info["groups"]
            .as_array()
            .is_some_and(|g| g.contains(&json!(group))),
        "{info}"
    );
    let g = run("group.info", json!([group])).await.ret;
    assert_eq!(g["members"], json!([user]));
    check(
        "user.delete",
        json!([user]),
        json!({"remove": true}),
        json!(true),
        0,
    )
    .await;
    check("user.delete", json!([user]), json!({}), json!(false), 0).await;
    check("user.info", json!([user]), json!({}), json!({}), 0).await;
    check("group.delete", json!([group]), json!({}), json!(true), 0).await;
    check("group.delete", json!([group]), json!({}), json!(false), 0).await;
    let _ = run_kw("user.list_users", json!([]), json!({})).await;
}
