//! The job path end to end: targeting of every type over minions with different grains and
//! pillar, multi-function jobs, find_job, minions dying, the master restarting, duplicate and
//! foreign returns, events, oversized returns.

use std::path::Path;
use std::time::{Duration, Instant};

use saltq_tests::{Master, Minion, eventually};
use serde_json::json;

/// A master with pillar and nodegroups, and three minions: web1, web2 (role web), db1 (role db).
fn fleet() -> (Master, Vec<Minion>) {
    let master = Master::start_with(|dir: &Path| {
        let pillar = dir.join("pillar");
        std::fs::create_dir_all(&pillar).unwrap();
        std::fs::write(
            pillar.join("top.sls"),
            "base:\n  '*':\n    - common\n  'role:web':\n    - match: grain\n    - web\n",
        )
        .unwrap();
        std::fs::write(pillar.join("common.sls"), "env: prod\n").unwrap();
        std::fs::write(
            pillar.join("web.sls"),
            "app:\n  name: shop\n  tier: front\n",
        )
        .unwrap();
        format!(
            "auto_accept: true\npillar_roots:\n  base:\n    - {}\nnodegroups:\n  webs: 'G@role:web'\n  everyone: 'N@webs or L@db1'\n  loop1: 'N@loop2'\n  loop2: 'N@loop1'\n",
            pillar.display()
        )
    });
    let minions = vec![
        master.minion("web1", "grains:\n  role: web\n  tier: [front, edge]\n"),
        master.minion("web2", "grains:\n  role: web\n"),
        master.minion("db1", "grains:\n  role: db\n"),
    ];
    for m in &minions {
        master.wait_for(&m.id);
    }
    (master, minions)
}

fn ids(master: &Master, args: &[&str]) -> Vec<String> {
    let mut a = args.to_vec();
    a.extend(["test.ping", "--out", "json", "--static", "-t", "3"]);
    let o = master.saltq(&a);
    assert_eq!(o.code, 0, "{args:?}: {o:?}");
    let mut v: Vec<String> = o
        .json()
        .as_object()
        .expect("object")
        .keys()
        .cloned()
        .collect();
    v.sort();
    v
}

#[test]
fn every_target_type() {
    let (master, _m) = fleet();
    let webs = vec!["web1".to_owned(), "web2".to_owned()];
    let all = vec!["db1".to_owned(), "web1".to_owned(), "web2".to_owned()];
    assert_eq!(ids(&master, &["web*"]), webs);
    assert_eq!(ids(&master, &["*"]), all);
    assert_eq!(ids(&master, &["-E", r"web\d"]), webs);
    assert_eq!(ids(&master, &["-E", r"(?!web)\w+1"]), vec!["db1"]);
    assert_eq!(ids(&master, &["-L", "web1,db1"]), vec!["db1", "web1"]);
    assert_eq!(ids(&master, &["-G", "role:web"]), webs);
    assert_eq!(ids(&master, &["-G", "tier:edge"]), vec!["web1"]);
    assert_eq!(ids(&master, &["-P", "role:w.b"]), webs);
    assert_eq!(ids(&master, &["-I", "app:tier:front"]), webs);
    assert_eq!(ids(&master, &["-J", "app:name:sh.p"]), webs);
    assert_eq!(ids(&master, &["-I", "env:prod"]), all);
    assert_eq!(ids(&master, &["-S", "127.0.0.0/8"]), all);
    assert_eq!(
        ids(&master, &["-C", "G@role:web and not web2"]),
        vec!["web1"]
    );
    assert_eq!(
        ids(
            &master,
            &["-C", "( G@role:db or I@app:name:shop ) and not L@web1"]
        ),
        vec!["db1", "web2"]
    );
    assert_eq!(ids(&master, &["-N", "webs"]), webs);
    assert_eq!(ids(&master, &["-N", "everyone"]), all);
    // Nodegroups inside a compound: expanded on the master, so the minions run the job.
    assert_eq!(ids(&master, &["-C", "N@webs or db1"]), all);
    assert_eq!(
        ids(&master, &["-C", "( N@everyone ) and not N@webs"]),
        vec!["db1"]
    );
    assert_eq!(ids(&master, &["-C", "not N@webs"]), vec!["db1"]);
    assert_eq!(ids(&master, &["--delimiter", "|", "-G", "role|web"]), webs);

    // Minion jobs only: each `saltq jobs list` is itself a runner job in the cache, as in Salt.
    let jobs = || {
        let o = master.saltq(&["jobs", "list", "--out", "json"]);
        o.json()
            .as_object()
            .map(|m| {
                m.values()
                    .filter(|j| {
                        !j["Function"]
                            .as_str()
                            .unwrap_or_default()
                            .starts_with("runner.")
                    })
                    .count()
            })
            .unwrap_or_default()
    };
    let before = jobs();
    // Invalid targets: refused before anything is published, naming the bad word.
    for (args, needle) in [
        (vec!["-C", "G@role:web and"], "\"and\""),
        (vec!["-C", "X@foo"], "X@foo"),
        (vec!["-E", "web("], "web("),
        (vec!["-N", "nosuch"], "nosuch"),
        (vec!["-N", "loop1"], "loop"),
        (vec!["-S", "300.1.1.1/8"], "300.1.1.1/8"),
    ] {
        let mut a = args.clone();
        a.push("test.ping");
        let o = master.saltq(&a);
        assert_eq!(o.code, 64, "{args:?}: {o:?}");
        assert!(o.stderr.contains(needle), "{args:?}: {o:?}");
    }
    let o = master.saltq(&["-R", "%cluster", "test.ping"]);
    assert_eq!(o.code, 64, "{o:?}");
    assert!(o.stderr.contains("not supported"), "{o:?}");
    let o = master.saltq(&["nomatch*", "test.ping"]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(
        o.stdout
            .contains("No minions matched the target. No command was sent, no jid was assigned.")
    );
    // Nothing was published for any of them.
    assert_eq!(jobs(), before);
}

#[test]
fn multi_function_job_and_error_returns() {
    let (master, _m) = fleet();
    let o = master.saltq(&[
        "-L",
        "web1",
        "test.ping,test.echo,grains.item",
        ",",
        "hi",
        ",",
        "role",
        "--out",
        "json",
        "--static",
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(
        o.json(),
        json!({"web1": {"test.ping": true, "test.echo": "hi", "grains.item": {"role": "web"}}})
    );
    let o = master.saltq(&["-L", "web1", "test.foo"]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (1, "web1:\n    'test.foo' is not available.\n"),
        "{o:?}"
    );
    assert_eq!(
        o.stderr,
        "ERROR: Minions returned with non-zero exit code\n"
    );
    let o = master.saltq(&["-L", "web1", "test.echo"]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(
        o.stdout.contains("Passed invalid arguments to test.echo"),
        "{o:?}"
    );
    let o = master.saltq(&["-L", "web1", "pillar.get", "app:name"]);
    assert_eq!(o.stdout, "web1:\n    shop\n", "{o:?}");
}

#[test]
fn find_job_keeps_a_long_job_alive_and_dead_minions_are_reported() {
    let (master, mut m) = fleet();
    let start = Instant::now();
    let o = master.saltq(&[
        "-L",
        "web1",
        "test.sleep",
        "4",
        "-t",
        "1",
        "--gather-job-timeout",
        "2",
    ]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "web1:\n    True\n"),
        "{o:?}"
    );
    assert!(start.elapsed() >= Duration::from_secs(4));
    // db1 dies in the middle of a job: reported as not returned, exit 1. The job touches a
    // marker when it starts, and db1 is killed only once the marker is there.
    let marker = master.dir.0.join("db1-job-started");
    let cmd = format!("touch {}; sleep 20", marker.display());
    let master_ref = &master;
    let killer = std::thread::scope(|s| {
        let h = s.spawn(move || {
            master_ref.saltq(&[
                "-L",
                "db1",
                "cmd.run",
                &cmd,
                "python_shell=True",
                "-t",
                "1",
                "--gather-job-timeout",
                "1",
            ])
        });
        eventually("db1 runs the job", Duration::from_secs(10), || {
            marker.exists().then_some(())
        });
        m[2].kill();
        h.join().expect("cli thread")
    });
    assert_eq!(killer.code, 1, "{killer:?}");
    assert!(
        killer
            .stdout
            .starts_with("db1:\n    Minion did not return."),
        "{killer:?}"
    );
}

#[test]
fn return_is_resent_after_master_restart_and_cache_survives() {
    let (mut master, _m) = fleet();
    let o = master.saltq(&["-L", "web2", "test.sleep", "3", "--async"]);
    assert_eq!(o.code, 0, "{o:?}");
    let jid = o.stdout.trim().rsplit(' ').next().unwrap().to_owned();
    assert_eq!(jid.len(), 20);
    // The master goes away while web2 sleeps, and comes back on the same port.
    master.restart();
    let got = eventually(
        "web2's return stored after the restart",
        Duration::from_secs(30),
        || {
            let o = master.saltq(&["jobs", "lookup", &jid, "--out", "json"]);
            (o.code == 0 && o.json() == json!({"web2": true})).then_some(o.stdout)
        },
    );
    assert!(got.contains("true"));
    // Restart again: the job cache is intact.
    master.restart();
    let o = master.saltq(&["jobs", "lookup", &jid, "--out", "json"]);
    assert_eq!(o.json(), json!({"web2": true}), "{o:?}");
    // Jids keep increasing across restarts.
    let o = master.saltq(&["*", "test.ping", "--async"]);
    let jid2 = o.stdout.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(jid2 > jid, "{jid2} > {jid}");
}

#[test]
fn events_arrive_in_order_with_salt_data() {
    let (master, _m) = fleet();
    let child = master.watch_events("salt/job/*", 2);
    let o = master.saltq(&["-L", "web1", "test.echo", "ordered"]);
    assert_eq!(o.code, 0, "{o:?}");
    let out = child.wait_with_output().expect("events output");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let (tag0, data0) = lines[0].split_once('\t').expect("tag<TAB>json");
    let (tag1, data1) = lines[1].split_once('\t').expect("tag<TAB>json");
    assert!(
        tag0.starts_with("salt/job/") && tag0.ends_with("/new"),
        "{tag0}"
    );
    assert!(tag1.ends_with("/ret/web1"), "{tag1}");
    let d0: serde_json::Value = serde_json::from_str(data0).unwrap();
    let d1: serde_json::Value = serde_json::from_str(data1).unwrap();
    assert_eq!(d0["fun"], "test.echo");
    assert_eq!(d0["minions"], json!(["web1"]));
    assert_eq!(d1["return"], "ordered");
    assert_eq!(d1["id"], "web1");
    assert_eq!(d1["jid"], d0["jid"]);
    assert!(d1["_stamp"].is_string());
}

#[test]
fn oversized_return_is_truncated_with_a_marker() {
    let master = Master::start("auto_accept: true");
    let _m = master.minion("big1", "max_message_size: 200000");
    master.wait_for("big1");
    let o = master.saltq(&[
        "-L",
        "big1",
        "cmd.run",
        "head -c 300000 /dev/zero | tr '\\0' a",
        "python_shell=True",
        "--out",
        "json",
    ]);
    assert_eq!(o.code, 1, "{o:?}");
    let v = o.json();
    let msg = v["big1"].as_str().expect("a marker string");
    assert!(
        msg.contains("return truncated") && msg.contains("200000"),
        "{msg}"
    );
    // The subscription survived: the next job works.
    master.wait_for("big1");
}
