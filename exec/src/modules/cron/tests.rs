//! `cron.*`: the table logic replayed against salt 3007.8's own functions (run with an
//! in-memory crontab, each step's answer and resulting crontab recorded below), then the
//! real `crontab` on this host for a throwaway user when both exist.

use serde_json::{Map, Value, json};

use saltq_semantics::python;

use super::*;
use crate::testutil::{check, run_kw};

const PRE: &str = "# m h dom mon dow command\nMAILTO=root\n";
const HEAD: &str =
    "# m h dom mon dow command\nMAILTO=root\n# Lines below here are managed by Salt, do not edit\n";

fn times(m: &str, h: &str, dm: &str, mo: &str, dw: &str) -> Map<String, Value> {
    TIME_FIELDS
        .iter()
        .zip([m, h, dm, mo, dw])
        .map(|(f, v)| ((*f).to_owned(), json!(v)))
        .collect()
}

fn job(
    t: Map<String, Value>,
    cmd: &str,
    comment: Option<&str>,
    id: Option<&str>,
    commented: bool,
) -> Job {
    Job {
        times: t,
        cmd: cmd.into(),
        commented,
        comment: comment.map(String::from),
        identifier: id.map(String::from),
    }
}

/// Applies a `set_job` to the text, as the module does: the outcome and the new text.
fn set(text: &str, j: Job) -> (&'static str, String) {
    let mut tab = parse_tab(text);
    let outcome = set_job_in(&mut tab, j);
    let new = if outcome == "present" {
        text.to_owned()
    } else {
        render_tab(&tab)
    };
    (outcome, new)
}

fn rm(text: &str, cmd: &str, t: Map<String, Value>, id: Option<&str>) -> (&'static str, String) {
    let mut tab = parse_tab(text);
    if remove_job(&mut tab, cmd, &t, id) {
        ("removed", render_tab(&tab))
    } else {
        ("absent", text.to_owned())
    }
}

#[test]
fn replays_salts_answers() {
    let any = || times("*", "*", "*", "*", "*");
    let none = Map::new;
    let (r, t) = set(
        PRE,
        job(times("5", "*", "*", "*", "*"), "/bin/a", None, None, false),
    );
    assert_eq!(
        (r, t.as_str()),
        ("new", &*format!("{HEAD}5 * * * * /bin/a\n"))
    );
    // Salt answers "updated" for the same job again (its identifier test always differs).
    let (r, t) = set(
        &t,
        job(times("5", "*", "*", "*", "*"), "/bin/a", None, None, false),
    );
    assert_eq!(
        (r, t.as_str()),
        ("updated", &*format!("{HEAD}5 * * * * /bin/a\n"))
    );
    let (r, t) = set(
        &t,
        job(times("6", "*", "*", "*", "*"), "/bin/a", None, None, false),
    );
    assert_eq!(
        (r, t.as_str()),
        ("updated", &*format!("{HEAD}6 * * * * /bin/a\n"))
    );
    let (r, t) = set(
        &t,
        job(
            times("0", "1", "*", "*", "1"),
            "/bin/b",
            Some("nightly b"),
            Some("b-id"),
            false,
        ),
    );
    assert_eq!(
        (r, t.as_str()),
        (
            "new",
            &*format!(
                "{HEAD}6 * * * * /bin/a\n# nightly b SALT_CRON_IDENTIFIER:b-id\n0 1 * * 1 /bin/b\n"
            )
        )
    );
    let (r, t) = set(
        &t,
        job(
            times("0", "2", "*", "*", "1"),
            "/bin/b2",
            None,
            Some("b-id"),
            false,
        ),
    );
    assert_eq!(
        (r, t.as_str()),
        (
            "updated",
            &*format!(
                "{HEAD}6 * * * * /bin/a\n# nightly b SALT_CRON_IDENTIFIER:b-id\n0 2 * * 1 /bin/b2\n"
            )
        )
    );
    let (r, t) = set(
        &t,
        job(times("30", "*", "*", "*", "*"), "/bin/c", None, None, true),
    );
    let full = format!(
        "{HEAD}6 * * * * /bin/a\n# nightly b SALT_CRON_IDENTIFIER:b-id\n0 2 * * 1 /bin/b2\n#DISABLED#30 * * * * /bin/c\n"
    );
    assert_eq!((r, t.as_str()), ("new", full.as_str()));
    assert_eq!(
        parse_tab(&t),
        json!({
            "pre": ["# m h dom mon dow command", "MAILTO=root"],
            "crons": [
                {"minute": "6", "hour": "*", "daymonth": "*", "month": "*", "dayweek": "*",
                 "identifier": null, "cmd": "/bin/a", "comment": null, "commented": false},
                {"minute": "0", "hour": "2", "daymonth": "*", "month": "*", "dayweek": "1",
                 "identifier": "b-id", "cmd": "/bin/b2", "comment": "nightly b", "commented": false},
                {"minute": "30", "hour": "*", "daymonth": "*", "month": "*", "dayweek": "*",
                 "identifier": null, "cmd": "/bin/c", "comment": null, "commented": true},
            ],
            "special": [],
            "env": [],
        })
    );
    let mut seven = none();
    seven.insert("minute".into(), json!("7"));
    assert_eq!(rm(&t, "/bin/a", seven, None).0, "absent");
    let (r, t) = rm(&t, "/bin/a", none(), None);
    assert_eq!(r, "removed");
    assert_eq!(rm(&t, "/bin/a", none(), None).0, "absent");
    let (r, t) = rm(&t, "ignored", none(), Some("b-id"));
    assert_eq!(
        (r, t.as_str()),
        ("removed", &*format!("{HEAD}#DISABLED#30 * * * * /bin/c\n"))
    );
    let _ = any();
}

#[test]
fn specials_env_and_random_times() {
    let text = "# Lines below here are managed by Salt, do not edit\nPATH=/usr/bin\nEMPTY=\n# hourly job SALT_CRON_IDENTIFIER:h\n@hourly /bin/h\n#DISABLED#@daily /bin/d\n";
    let tab = parse_tab(text);
    assert_eq!(
        tab["special"],
        json!([
            {"spec": "@hourly", "cmd": "/bin/h", "identifier": "h", "comment": "hourly job", "commented": false},
            {"spec": "@daily", "cmd": "/bin/d", "identifier": null, "comment": null, "commented": true},
        ])
    );
    assert_eq!(
        tab["env"],
        json!([{"name": "PATH", "value": "/usr/bin"}, {"name": "EMPTY", "value": ""}])
    );
    assert_eq!(
        render_tab(&tab),
        "# Lines below here are managed by Salt, do not edit\nPATH=/usr/bin\nEMPTY=\"\"\n# hourly job SALT_CRON_IDENTIFIER:h\n@hourly /bin/h\n#DISABLED#@daily /bin/d\n"
    );
    let mut tab = parse_tab("");
    let r = set_job_in(
        &mut tab,
        job(
            times("random", "1:3", "random", "2", "*"),
            "/bin/r",
            None,
            None,
            false,
        ),
    );
    assert_eq!(r, "new");
    let entry = &tab["crons"][0];
    let minute: u32 = python::str(&entry["minute"]).parse().unwrap_or(99);
    let hour: u32 = python::str(&entry["hour"]).parse().unwrap_or(99);
    let day: u32 = python::str(&entry["daymonth"]).parse().unwrap_or(99);
    assert!(
        minute < 60 && (1..=3).contains(&hour) && (1..=28).contains(&day),
        "{entry}"
    );
}

#[tokio::test]
async fn on_this_host() {
    let Some(_) = crate::modules::cmd::which_path("crontab") else {
        println!("cron: no crontab command on this machine; checking the error only");
        check(
            "cron.list_tab",
            json!(["root"]),
            json!({}),
            json!("Command required for 'cron.list_tab' not found: crontab"),
            1,
        )
        .await;
        return;
    };
    if !nix::unistd::Uid::current().is_root() {
        println!("cron: not root, so no throwaway user; listing the own crontab only");
        let me = std::env::var("USER").unwrap_or_default();
        let out = run_kw("cron.list_tab", json!([me]), json!({})).await;
        assert!(out.ret.get("crons").is_some(), "{}", out.ret);
        return;
    }
    let user = "saltqcron1";
    /// Removes the throwaway user and its crontab whatever the test's outcome.
    struct Cleanup(&'static str);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = std::process::Command::new("crontab")
                .args(["-r", "-u", self.0])
                .output();
            let _ = std::process::Command::new("userdel").arg(self.0).output();
        }
    }
    let added = std::process::Command::new("useradd")
        .args(["-M", "-N", user])
        .status();
    assert!(added.is_ok_and(|s| s.success()), "useradd {user} failed");
    let _cleanup = Cleanup(user);
    let steps = async {
        let call =
            |fun: &'static str, args: Value| async move { run_kw(fun, args, json!({})).await.ret };
        assert_eq!(
            call("cron.list_tab", json!([user])).await,
            json!({"pre": [], "crons": [], "special": [], "env": []})
        );
        assert_eq!(
            call(
                "cron.set_job",
                json!([user, "5", "*", "*", "*", "*", "/bin/true"])
            )
            .await,
            json!("new")
        );
        let tab = call("cron.list_tab", json!([user])).await;
        assert_eq!(tab["crons"][0]["cmd"], json!("/bin/true"));
        assert_eq!(
            call("cron.rm_job", json!([user, "/bin/true"])).await,
            json!("removed")
        );
        assert_eq!(
            call("cron.rm_job", json!([user, "/bin/true"])).await,
            json!("absent")
        );
    };
    steps.await;
}
