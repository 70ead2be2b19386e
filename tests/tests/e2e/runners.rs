//! Runners, returners, event returns, the reactor and ACLs, against real minions and real
//! databases.

use std::time::Duration;

use saltq_tests::{Master, eventually};
use serde_json::json;

#[test]
fn manage_status_with_a_minion_stopped_and_jobs_runners() {
    let master = Master::start("auto_accept: true");
    let _a = master.minion("r1", "");
    let mut b = master.minion("r2", "");
    master.wait_for("r1");
    master.wait_for("r2");
    b.stop();
    let o = master.saltq(&["run", "manage.status", "timeout=2", "--out", "json"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(o.json(), json!({"up": ["r1"], "down": ["r2"]}));
    let o = master.saltq(&["run", "manage.present", "--out", "json"]);
    assert_eq!(o.json(), json!(["r1"]));
    let o = master.saltq(&["run", "manage.not_present", "--out", "json"]);
    assert_eq!(o.json(), json!(["r2"]));

    // jobs.active while a sleep runs, then lookup of both the job and a runner job.
    let o = master.saltq(&["r1", "test.sleep", "3", "--async"]);
    let jid = o.stdout.trim().rsplit(' ').next().unwrap().to_owned();
    let o = master.saltq(&["run", "jobs.active", "--out", "json"]);
    assert_eq!(o.code, 0, "{o:?}");
    let v = o.json();
    assert_eq!(v[&jid]["Function"], "test.sleep", "{v}");
    assert_eq!(
        v[&jid]["Running"],
        json!([{"r1": v[&jid]["Running"][0]["r1"]}])
    );
    let o = eventually("sleep returned", Duration::from_secs(10), || {
        let o = master.saltq(&["run", "jobs.lookup_jid", &jid, "--out", "json"]);
        (o.json() == json!({"r1": true})).then_some(o)
    });
    assert_eq!(o.code, 0);
    let o = master.saltq(&["run", "jobs.list_job", &jid, "--out", "json"]);
    let v = o.json();
    assert_eq!(
        (
            v["Function"].clone(),
            v["Minions"].clone(),
            v["Result"]["r1"]["return"].clone()
        ),
        (json!("test.sleep"), json!(["r1"]), json!(true)),
        "{v}"
    );
    assert!(
        v["StartTime"].as_str().is_some_and(|s| s.contains(", ")),
        "{v}"
    );
    let o = master.saltq(&["run", "jobs.exit_success", &jid, "--out", "json"]);
    assert_eq!(o.json(), json!({"r1": true}));
    let o = master.saltq(&[
        "run",
        "jobs.list_jobs",
        "search_function=test.sleep",
        "--out",
        "json",
    ]);
    assert!(o.json().get(&jid).is_some(), "{o:?}");
    // A runner job is in the job cache too, under the master's id.
    let o = master.saltq(&[
        "run",
        "jobs.list_jobs",
        "search_function=runner.manage.*",
        "--out",
        "json",
    ]);
    let runner_jid = o.json().as_object().unwrap().keys().next().unwrap().clone();
    let o = master.saltq(&["run", "jobs.lookup_jid", &runner_jid, "--out", "json"]);
    let v = o.json();
    let (id, ret) = v.as_object().unwrap().iter().next().unwrap();
    assert!(id.ends_with("_master"), "{v}");
    assert!(ret.is_object() || ret.is_array(), "{v}");
    // Bad input: unknown runner, bad arguments, an error inside a runner.
    let o = master.saltq(&["run", "jobs.nosuch"]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (1, "'jobs.nosuch' is not available.\n"),
        "{o:?}"
    );
    let o = master.saltq(&["run", "jobs.lookup_jid"]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(
        o.stdout
            .contains("missing 1 required positional argument: 'jid'"),
        "{o:?}"
    );
    let o = master.saltq(&["run", "jobs.lookup_jid", "notajid"]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(
        o.stdout
            .contains("Exception occurred in runner jobs.lookup_jid"),
        "{o:?}"
    );
    // The master is still there.
    assert_eq!(
        master.saltq(&["run", "test.echo", "alive"]).stdout,
        "alive\n"
    );
    let o = master.saltq(&["run", "test.arg", "1", "two", "k=v", "--out", "json"]);
    assert_eq!(o.json(), json!({"args": [1, "two"], "kwargs": {"k": "v"}}));
    let o = master.saltq(&["run", "cache.grains", "tgt=r1", "--out", "json"]);
    assert_eq!(o.json()["r1"]["id"], "r1");
}

#[test]
fn async_runner_fires_salt_events() {
    let master = Master::start("");
    let child = master.watch_events("salt/run/*", 2);
    let o = master.saltq(&["run", "--async", "test.sleep", "1"]);
    assert!(
        o.stdout
            .contains("This execution is running under tag salt/run/"),
        "{o:?}"
    );
    let jid = o.stdout.trim().rsplit('/').next().unwrap().to_owned();
    let out = child.wait_with_output().expect("events");
    let text = String::from_utf8_lossy(&out.stdout);
    let events: Vec<(String, serde_json::Value)> = text
        .lines()
        .map(|l| {
            let (t, d) = l.split_once('\t').unwrap();
            (t.to_owned(), serde_json::from_str(d).unwrap())
        })
        .collect();
    assert_eq!(events[0].0, format!("salt/run/{jid}/new"), "{text}");
    assert_eq!(events[0].1["fun"], "runner.test.sleep");
    assert_eq!(events[0].1["fun_args"], json!([1]));
    assert_eq!(events[1].0, format!("salt/run/{jid}/ret"));
    assert_eq!(
        (
            events[1].1["return"].clone(),
            events[1].1["success"].clone()
        ),
        (json!(true), json!(true))
    );
}

#[test]
fn acl_refusals_name_the_rule() {
    let master = Master::start(
        "auto_accept: true\npublisher_acl:\n  alice:\n    - test.*\n  bob:\n    - test.*\n\
         \x20   - 'acl*': [{cmd.run: {args: ['echo .*']}}]\n\
         runner_acl:\n  alice:\n    - jobs.*\nclient_acl:\n  ops: ['@wheel', '@runner']\n",
    );
    let _m = master.minion("acl1", "");
    master.wait_for("acl1");
    for name in ["alice", "bob", "ops"] {
        let issued = master.saltq(&["pki", "issue", name]);
        assert_eq!(issued.code, 0, "{issued:?}");
    }
    let dir = master.pki_dir().join("issued");
    let addr = format!("127.0.0.1:{}", master.port);
    let client = |name: &str, args: &[&str]| {
        master.saltq_with(
            &[
                "--master",
                &addr,
                "--ca",
                dir.join("ca.crt").to_str().unwrap(),
                "--cert",
                dir.join(format!("{name}.crt")).to_str().unwrap(),
                "--key",
                dir.join(format!("{name}.key")).to_str().unwrap(),
            ],
            args,
        )
    };
    let alice = |args: &[&str]| client("alice", args);
    let o = alice(&["acl1", "test.ping"]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "acl1:\n    True\n"),
        "{o:?}"
    );
    let o = alice(&["acl1", "cmd.run", "id"]);
    assert_eq!(o.code, 77, "{o:?}");
    assert!(
        o.stderr
            .contains("publisher_acl: client alice may not run cmd.run on acl1"),
        "{o:?}"
    );
    let o = alice(&["run", "manage.status"]);
    assert_eq!(o.code, 77, "{o:?}");
    assert!(
        o.stderr
            .contains("runner_acl: client alice may not run runner manage.status"),
        "{o:?}"
    );
    assert_eq!(alice(&["run", "jobs.list_jobs", "--out", "json"]).code, 0);
    // A certificate meant for pinging may not manage keys or run runners (it would otherwise
    // admit a rogue minion); one with @wheel and @runner in client_acl may.
    let _rogue = master.minion("rogue", "");
    let o = client("bob", &["key", "-A", "-y"]);
    assert_eq!(o.code, 77, "{o:?}");
    assert!(
        o.stderr.contains("client bob may not manage keys (key.")
            && o.stderr.contains("needs @wheel"),
        "{o:?}"
    );
    // An argument-restricted entry: bob may run cmd.run only as `echo ...`.
    let o = client("bob", &["acl1", "cmd.run", "echo hi"]);
    assert_eq!((o.code, o.stdout.as_str()), (0, "acl1:\n    hi\n"), "{o:?}");
    let o = client("bob", &["acl1", "cmd.run", "id"]);
    assert_eq!(o.code, 77, "{o:?}");
    assert!(
        o.stderr
            .contains("publisher_acl: client bob may not run cmd.run on acl1"),
        "{o:?}"
    );
    let o = client("bob", &["run", "manage.status"]);
    assert_eq!(o.code, 77, "{o:?}");
    assert!(
        o.stderr
            .contains("runner_acl: client bob may not run runner manage.status"),
        "{o:?}"
    );
    let o = client("bob", &["jobs", "list"]);
    assert_eq!(o.code, 77, "{o:?}");
    assert!(
        o.stderr
            .contains("client bob may not run runner jobs.list_jobs"),
        "{o:?}"
    );
    assert_eq!(client("ops", &["key", "-L"]).code, 0);
    let o = client("ops", &["run", "manage.status"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(client("bob", &["acl1", "test.ping"]).code, 0);
    // The master's own admin certificate is not restricted.
    assert_eq!(master.saltq(&["acl1", "cmd.run", "echo ok"]).code, 0);
}

#[test]
fn reactor_accepts_new_minions_and_greets_them() {
    let master = Master::start_with(|dir| {
        let r = dir.join("reactor");
        std::fs::create_dir_all(&r).unwrap();
        std::fs::write(r.join("accept.sls"), "{% if data['act'] == 'pend' %}\naccept:\n  wheel.key.accept:\n    - match: {{ data['id'] }}\n{% endif %}\n").unwrap();
        std::fs::write(r.join("greet.sls"), "greet:\n  local.grains.setval:\n    - tgt: {{ data['id'] }}\n    - arg: [greeted, true]\n").unwrap();
        std::fs::write(r.join("broken.sls"), "oops:\n  local.test.ping: []\n").unwrap();
        format!(
            "reactor:\n  - 'salt/auth':\n    - {}\n  - 'salt/minion/*/start':\n    - {}\n    - {}\n",
            r.join("accept.sls").display(),
            r.join("greet.sls").display(),
            r.join("broken.sls").display()
        )
    });
    let errs = master.watch_events("salt/reactor/error", 1);
    // No auto_accept, no saltq key -a: the reactor accepts it on salt/auth, then greets it.
    let _m = master.minion("new1", "");
    master.wait_for("new1");
    eventually(
        "greeting grain set by the reactor",
        Duration::from_secs(15),
        || {
            let o = master.saltq(&["new1", "grains.get", "greeted", "--out", "json"]);
            (o.json() == json!({"new1": true})).then_some(())
        },
    );
    // The broken reaction (a local job without tgt) fired an error event and the reactor went on.
    let out = errs.wait_with_output().expect("error event");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("local reactions need tgt"), "{text}");
}

#[test]
fn returners_and_event_return_from_a_real_minion() {
    let master_dir = saltq_tests::Scratch::new("retfiles");
    let events_file = master_dir.0.join("events.jsonl");
    let rets_file = master_dir.0.join("returns.jsonl");
    let master = Master::start(&format!(
        "auto_accept: true\nevent_return: rawfile_json\nevent_return_queue: 2\nevent_return_queue_max_seconds: 0.5\nevent_return_whitelist: ['salt/job/*']\nrawfile_json.filename: {}\n",
        events_file.display()
    ));
    let mut extra = format!("rawfile_json.filename: {}\n", rets_file.display());
    let redis = std::env::var("SALTQ_TEST_REDIS").ok();
    if redis.is_some() {
        extra.push_str("redis.host: 127.0.0.1\nredis.port: 6379\nredis.db: 0\n");
    }
    let _m = master.minion("ret1", &extra);
    master.wait_for("ret1");
    let ret = if redis.is_some() {
        "rawfile_json,redis"
    } else {
        "rawfile_json"
    };
    let o = master.saltq(&["ret1", "test.echo", "returned", "--return", ret]);
    assert_eq!(o.code, 0, "{o:?}");
    let line = eventually(
        "the rawfile_json returner wrote the return",
        Duration::from_secs(10),
        || {
            std::fs::read_to_string(&rets_file)
                .ok()
                .filter(|t| t.contains("returned"))
        },
    );
    let v: serde_json::Value = serde_json::from_str(line.lines().last().unwrap()).unwrap();
    assert_eq!(
        (v["id"].clone(), v["fun"].clone(), v["return"].clone()),
        (json!("ret1"), json!("test.echo"), json!("returned")),
        "{v}"
    );
    let jid = v["jid"].as_str().unwrap().to_owned();
    if redis.is_some() {
        let stored = eventually(
            "the redis returner wrote ret:<jid>",
            Duration::from_secs(10),
            || {
                let out = std::process::Command::new("redis-cli")
                    .args(["hget", &format!("ret:{jid}"), "ret1"])
                    .output()
                    .ok()?;
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                text.contains("returned").then_some(text)
            },
        );
        let v: serde_json::Value =
            serde_json::from_str(stored.trim()).expect("Salt stores the return as JSON");
        assert_eq!(v["return"], "returned", "{v}");
        let _ = std::process::Command::new("redis-cli")
            .args(["del", &format!("ret:{jid}")])
            .output();
    } else {
        eprintln!("skipped the redis part: SALTQ_TEST_REDIS is not set");
    }
    // Every salt/job/* event reached the event returner, nothing else did.
    let text = eventually("job events returned", Duration::from_secs(10), || {
        std::fs::read_to_string(&events_file)
            .ok()
            .filter(|t| t.contains(&format!("salt/job/{jid}/ret/ret1")))
    });
    assert!(text.contains(&format!("salt/job/{jid}/new")), "{text}");
    assert!(!text.contains("salt/auth"), "whitelist: {text}");
    // A failing returner does not change the job's result.
    let o = master.saltq(&["ret1", "test.echo", "still-ok", "--return", "webhook"]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "ret1:\n    still-ok\n"),
        "{o:?}"
    );
}

#[test]
fn external_modules_synced_from_the_master_and_external_runners() {
    let master = Master::start_with(|dir| {
        let roots = dir.join("files");
        std::fs::create_dir_all(roots.join("_modules")).unwrap();
        let runners = dir.join("runners");
        std::fs::create_dir_all(&runners).unwrap();
        let module = "#!/bin/sh\ncase \"$1\" in\n  --list) echo '[\"greet\"]' ;;\n  --doc) echo 'Say hello.' ;;\n  greet) read input; name=$(echo \"$input\" | sed -n 's/.*\"name\": *\"\\([^\"]*\\)\".*/\\1/p'); echo \"{\\\"return\\\": \\\"hello $name\\\"}\" ;;\n  *) exit 3 ;;\nesac\n";
        for (path, text) in [
            (roots.join("_modules/hello.sh"), module),
            (
                runners.join("tally.py"),
                "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\nprint(json.dumps({'fun': sys.argv[1], 'sum': sum(req['args'])}))\n",
            ),
        ] {
            std::fs::write(&path, text).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        format!(
            "auto_accept: true\nfile_roots:\n  base:\n    - {}\nrunner_dirs:\n  - {}\n",
            roots.display(),
            runners.display()
        )
    });
    let _m = master.minion("ext1", "");
    master.wait_for("ext1");
    let o = master.saltq(&["ext1", "hello.greet", "name=bob"]);
    assert!(
        o.stdout.contains("'hello.greet' is not available."),
        "not synced yet: {o:?}"
    );
    let o = master.saltq(&["ext1", "saltutil.sync_all", "--out", "json"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(
        o.json()["ext1"]["modules"],
        json!(["modules.hello"]),
        "{o:?}"
    );
    let o = master.saltq(&["ext1", "hello.greet", "name=bob"]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "ext1:\n    hello bob\n"),
        "{o:?}"
    );
    let o = master.saltq(&["ext1", "sys.list_functions", "hello", "--out", "json"]);
    assert_eq!(o.json(), json!({"ext1": ["hello.greet"]}), "{o:?}");
    let o = master.saltq(&["run", "tally.count", "1", "2", "3", "--out", "json"]);
    assert_eq!(o.json(), json!({"fun": "count", "sum": 6}), "{o:?}");
}
