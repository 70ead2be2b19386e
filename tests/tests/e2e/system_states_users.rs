//! The `group`, `user`, `ssh_auth` and `cron` states end to end: an SLS served by a real
//! master's fileserver, applied on a real minion through the CLI over QUIC, making a
//! throwaway group and user with an authorized key and a cron job on this host; applied
//! again (nothing to change), then removed with `state.single`. Needs root and the shadow
//! tools and `crontab`; skipped with a message otherwise. The accounts have names and ids
//! (`sqs1e*`, 47601) no other test uses, and a guard removes them whatever happens.

use std::path::Path;
use std::process::Command;

use saltq_tests::{Master, Scratch};
use serde_json::Value;

const KEY: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIAUoDpCmN991W1dMAPLAKlFCEr4yLZ9pvEe/yLLOC6hr";

/// Why the test cannot run here, if it cannot.
fn missing() -> Option<String> {
    saltq_tests::not_root_or_missing(&["useradd", "userdel", "groupadd", "gpasswd", "crontab"])
}

/// Removes the test's crontab, user and group.
struct Accounts;

impl Drop for Accounts {
    fn drop(&mut self) {
        for c in [
            &["crontab", "-r", "-u", "sqs1eu"][..],
            &["userdel", "-r", "sqs1eu"],
            &["groupdel", "sqs1eg"],
        ] {
            let _ = Command::new(c[0]).args(&c[1..]).output();
        }
    }
}

fn sls(home: &Path) -> String {
    format!(
        "sqs1e_group:
  group.present:
    - name: sqs1eg
    - gid: 47601
sqs1e_user:
  user.present:
    - name: sqs1eu
    - uid: 47601
    - gid: 47601
    - home: {home}
    - shell: /bin/sh
    - fullname: End To End
    - require:
      - group: sqs1e_group
sqs1e_key:
  ssh_auth.present:
    - name: ssh-ed25519 {KEY} e2e@saltq
    - user: sqs1eu
    - require:
      - user: sqs1e_user
sqs1e_cron:
  cron.present:
    - name: /bin/true e2e
    - user: sqs1eu
    - minute: 7
    - identifier: e2e
    - require:
      - user: sqs1e_user
sqs1e_env:
  cron.env_present:
    - name: MAILTO
    - value: ops
    - user: sqs1eu
    - require:
      - cron: sqs1e_cron
",
        home = home.display()
    )
}

/// The states of one run by their ID: (result, comment, whether anything changed).
fn by_id(ret: &Value) -> Vec<(String, Value, String, bool)> {
    let mut out: Vec<(String, Value, String, bool)> = ret
        .as_object()
        .unwrap_or_else(|| panic!("not a state run: {ret}"))
        .values()
        .map(|s| {
            (
                s["__id__"].as_str().unwrap_or_default().to_owned(),
                s["result"].clone(),
                s["comment"].as_str().unwrap_or_default().to_owned(),
                s["changes"].as_object().is_some_and(|c| !c.is_empty()),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn users_groups_keys_and_cron_jobs_through_a_minion() {
    if let Some(why) = missing() {
        eprintln!("skipped: {why}");
        return;
    }
    let _accounts = Accounts;
    drop(Accounts);
    let scratch = Scratch::new("users-states");
    let roots = scratch.0.join("srv");
    std::fs::create_dir_all(&roots).unwrap();
    let home = scratch.0.join("home/sqs1eu");
    std::fs::create_dir_all(home.parent().unwrap()).unwrap();
    std::fs::write(roots.join("accounts.sls"), sls(&home)).unwrap();
    let master = Master::start(&format!(
        "auto_accept: true\nfile_roots:\n  base:\n    - {}\n",
        roots.display()
    ));
    let _minion = master.minion("acct1", "");
    master.wait_for("acct1");

    let apply = || {
        let o = master.saltq(&[
            "acct1",
            "state.apply",
            "accounts",
            "--out",
            "json",
            "-t",
            "60",
        ]);
        (o.json()["acct1"].clone(), o.code)
    };
    let (first, code) = apply();
    let states = by_id(&first);
    assert_eq!(states.len(), 5, "{first}");
    for (id, result, comment, changed) in &states {
        assert_eq!(result, &Value::Bool(true), "{id}: {comment}");
        assert!(changed, "{id} changed nothing: {comment}");
    }
    assert_eq!(code, 0);
    let comments: Vec<&str> = states.iter().map(|s| s.2.as_str()).collect();
    assert_eq!(
        comments,
        [
            "Cron /bin/true e2e added to sqs1eu's crontab",
            "Cron env MAILTO added to sqs1eu's crontab",
            "New group sqs1eg created",
            &*format!("The authorized host key {KEY} for user sqs1eu was added"),
            "New user sqs1eu created",
        ]
    );

    // What the host has now.
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    let line = passwd
        .lines()
        .find(|l| l.starts_with("sqs1eu:"))
        .expect("sqs1eu in /etc/passwd");
    assert_eq!(
        line,
        format!("sqs1eu:x:47601:47601:End To End:{}:/bin/sh", home.display())
    );
    let keys = std::fs::read_to_string(home.join(".ssh/authorized_keys")).unwrap();
    assert_eq!(keys, format!("ssh-ed25519 {KEY} e2e@saltq\n"));
    let tab = Command::new("crontab")
        .args(["-l", "-u", "sqs1eu"])
        .output()
        .unwrap();
    let tab = String::from_utf8_lossy(&tab.stdout).into_owned();
    assert!(
        tab.ends_with(
            "# Lines below here are managed by Salt, do not edit\nMAILTO=ops\n# SALT_CRON_IDENTIFIER:e2e\n7 * * * * /bin/true e2e\n"
        ),
        "{tab}"
    );

    // Again: nothing to change.
    let (second, code) = apply();
    for (id, result, comment, changed) in by_id(&second) {
        assert_eq!(result, Value::Bool(true), "{id}: {comment}");
        assert!(!changed, "{id} changed again: {comment}");
    }
    assert_eq!(code, 0);

    // Removed one state at a time, as Salt answers.
    let single = |args: &[&str]| {
        let mut a = vec!["acct1", "state.single"];
        a.extend_from_slice(args);
        a.extend(["--out", "json", "-t", "60"]);
        let o = master.saltq(&a);
        let ret = o.json()["acct1"].clone();
        let (_, s) = ret
            .as_object()
            .and_then(|m| m.iter().next())
            .unwrap_or_else(|| panic!("no state in {ret}"));
        (
            s["result"].clone(),
            s["comment"].clone(),
            s["changes"].clone(),
        )
    };
    let (result, comment, _) = single(&[
        "cron.absent",
        "name=/bin/true e2e",
        "user=sqs1eu",
        "identifier=e2e",
    ]);
    assert_eq!(
        (result, comment),
        (
            Value::Bool(true),
            Value::from("Cron /bin/true e2e removed from sqs1eu's crontab")
        )
    );
    let (result, comment, _) = single(&["ssh_auth.absent", &format!("name={KEY}"), "user=sqs1eu"]);
    assert_eq!(
        (result, comment),
        (Value::Bool(true), Value::from("Key removed"))
    );
    // The crontab file outlives its user (userdel leaves it): removed while the user exists.
    let _ = Command::new("crontab")
        .args(["-r", "-u", "sqs1eu"])
        .output();
    let (result, comment, changes) = single(&["user.absent", "name=sqs1eu", "purge=True"]);
    assert_eq!(
        (result, comment),
        (Value::Bool(true), Value::from("Removed user sqs1eu"))
    );
    assert_eq!(changes["sqs1eu"], Value::from("removed"));
    assert!(!home.exists(), "purge removes the home directory");
    let (result, comment, _) = single(&["group.absent", "name=sqs1eg"]);
    assert_eq!(
        (result, comment),
        (Value::Bool(true), Value::from("Removed group sqs1eg"))
    );
}
