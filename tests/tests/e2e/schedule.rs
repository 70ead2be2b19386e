//! The minion's scheduler end to end: a real minion with a `schedule` in its config runs
//! `test.ping` and `state.apply` (with `test=True`) every 2 s, each run a job in the
//! master's job cache and a `salt/job/<jid>/ret/<id>` event with Salt's `schedule` field;
//! `schedule.add`/`delete` over the CLI, persisted in `minion.d/_schedule.conf` and back
//! after the minion restarts; Salt's `/salt/minion/minion_schedule_*_complete` events on the
//! master's bus; the pillar's jobs and their refresh; returners seeing the job's own jid and
//! `return_job: False`; `schedule_returner` and `return_job: nocache`; the schedule across a
//! master restart and a minion restart; and a master schedule run once per fire by the duty
//! holder of a 3-replica cluster.

use std::io::Read;
use std::time::Duration;

use saltq_tests::{Master, eventually};
use serde_json::{Value, json};

fn start_master() -> Master {
    Master::start_with(|dir| {
        let tree = dir.join("tree");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(
            tree.join("ticked.sls"),
            "ticked:\n  test.succeed_with_changes:\n    - name: tick\n",
        )
        .unwrap();
        format!(
            "auto_accept: true\nfile_roots:\n  base:\n    - {}\n",
            tree.display()
        )
    })
}

/// The jids of `fun` the job cache holds for `id`, oldest first.
fn jobs_of(master: &Master, fun: &str, id: &str) -> Vec<String> {
    let o = master.saltq(&[
        "run",
        "jobs.list_jobs",
        &format!("search_function={fun}"),
        "--out",
        "json",
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    let mut jids: Vec<String> = o
        .json()
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, j)| j["Target"] == json!(id))
        .map(|(jid, _)| jid.clone())
        .collect();
    jids.sort();
    jids
}

fn call(master: &Master, id: &str, args: &[&str]) -> Value {
    let mut a = vec![id];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--out", "json", "--static"]);
    let o = master.saltq(&a);
    assert_eq!(o.code, 0, "{o:?}");
    o.json()[id].clone()
}

#[test]
fn scheduled_jobs_run_every_two_seconds_and_are_jobs_like_any_other() {
    let master = start_master();
    let watcher = master.watch_events("salt/job/*/ret/sched-1", 1);
    let mut minion = master.minion(
        "sched-1",
        "mine_enabled: false\nschedule:\n  pinger:\n    function: test.ping\n    seconds: 2\n  applier:\n    function: state.apply\n    seconds: 2\n    args:\n      - ticked\n    kwargs:\n      test: true\n",
    );
    let mut out = String::new();
    let mut watcher = watcher;
    watcher
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let _ = watcher.wait();
    let (_, ev) = out.trim().split_once('\t').expect("one event");
    let ev: Value = serde_json::from_str(ev).unwrap();
    assert!(
        ev["schedule"] == json!("pinger") || ev["schedule"] == json!("applier"),
        "{ev}"
    );
    assert_eq!(ev["id"], json!("sched-1"));

    // Several runs of each, in the job cache.
    let pings = eventually(
        "three scheduled pings stored",
        Duration::from_secs(30),
        || {
            let j = jobs_of(&master, "test.ping", "sched-1");
            (j.len() >= 3).then_some(j)
        },
    );
    let looked = master.saltq(&["run", "jobs.lookup_jid", &pings[0], "--out", "json"]);
    assert_eq!(looked.json()["sched-1"], json!(true), "{looked:?}");
    let applied = eventually(
        "a scheduled state.apply stored",
        Duration::from_secs(30),
        || jobs_of(&master, "state.apply", "sched-1").pop(),
    );
    let looked = master.saltq(&["run", "jobs.lookup_jid", &applied, "--out", "json"]);
    let state = &looked.json()["sched-1"]["test_|-ticked_|-tick_|-succeed_with_changes"];
    assert_eq!(
        state["result"],
        json!(null),
        "test=True: would change: {looked:?}"
    );

    // The schedule as schedule.list shows it.
    let listed = call(&master, "sched-1", &["schedule.list", "return_yaml=False"]);
    assert_eq!(listed["pinger"]["function"], json!("test.ping"), "{listed}");
    assert_eq!(listed["pinger"]["seconds"], json!(2));
    assert_eq!(listed["pinger"]["enabled"], json!(true));

    // add, persisted, back after a restart; delete.
    let added = call(
        &master,
        "sched-1",
        &[
            "schedule.add",
            "later",
            "function=test.true",
            "seconds=3600",
        ],
    );
    assert_eq!(
        added,
        json!({"comment": "Added job: later to schedule.", "result": true, "changes": {"later": "added"}})
    );
    let again = call(
        &master,
        "sched-1",
        &[
            "schedule.add",
            "later",
            "function=test.true",
            "seconds=3600",
        ],
    );
    assert_eq!(
        again["comment"],
        json!("Job later already exists in schedule.")
    );
    let conf = minion.dir.0.join("etc/minion.d/_schedule.conf");
    let saved = std::fs::read_to_string(&conf).unwrap();
    assert!(
        saved.contains("later:") && saved.contains("function: test.true"),
        "{saved}"
    );
    minion.restart();
    master.wait_for("sched-1");
    let listed = eventually(
        "the minion answers after its restart",
        Duration::from_secs(30),
        || {
            let o = master.saltq(&[
                "sched-1",
                "schedule.list",
                "return_yaml=False",
                "--out",
                "json",
                "--static",
            ]);
            (o.code == 0).then(|| o.json()["sched-1"].clone())
        },
    );
    assert_eq!(listed["later"]["function"], json!("test.true"), "{listed}");
    assert_eq!(listed["later"]["seconds"], json!(3600));
    let status = call(
        &master,
        "sched-1",
        &["schedule.show_next_fire_time", "later"],
    );
    assert_eq!(status["result"], json!(true), "{status}");
    assert!(status["next_fire_time"].is_string(), "{status}");
    let deleted = call(&master, "sched-1", &["schedule.delete", "later"]);
    assert_eq!(
        deleted,
        json!({"comment": "Deleted Job later from schedule.", "result": true, "changes": {"later": "removed"}})
    );
    let missing = call(&master, "sched-1", &["schedule.delete", "later"]);
    assert_eq!(missing["comment"], json!("Job later does not exist."));
    assert!(!std::fs::read_to_string(&conf).unwrap().contains("later:"));
}

#[test]
fn the_mine_interval_job_is_hidden_unless_show_all() {
    let master = start_master();
    let _minion = master.minion("sched-mine", "mine_interval: 30\n");
    master.wait_for("sched-mine");
    let shown = call(
        &master,
        "sched-mine",
        &["schedule.list", "return_yaml=False"],
    );
    assert!(shown.get("__mine_interval").is_none(), "{shown}");
    let all = call(
        &master,
        "sched-mine",
        &["schedule.list", "show_all=True", "return_yaml=False"],
    );
    let job = &all["__mine_interval"];
    assert_eq!(job["function"], json!("mine.update"), "{all}");
    assert_eq!(job["minutes"], json!(30));
    assert_eq!(job["maxrunning"], json!(2));
    assert_eq!(job["jid_include"], json!(true));
    assert_eq!(job["return_job"], json!(false));
}

#[test]
fn a_schedule_that_is_not_a_dict_stops_the_minion_with_the_key_named() {
    let (code, err) = saltq_tests::refused_start(
        "saltq-minion",
        "minion",
        "master: 127.0.0.1\nschedule: every day\n",
    );
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("schedule"), "{err}");
}

#[test]
fn the_master_schedule_runs_a_runner_every_two_seconds() {
    let master = Master::start(
        "schedule:\n  housekeeping:\n    function: test.arg\n    seconds: 2\n    args:\n      - tidy\n",
    );
    let runs = eventually(
        "two scheduled runner runs stored",
        Duration::from_secs(30),
        || {
            let o = master.saltq(&[
                "run",
                "jobs.list_jobs",
                "search_function=runner.test.arg",
                "--out",
                "json",
            ]);
            let jobs = o.json().as_object().cloned().unwrap_or_default();
            (jobs.len() >= 2).then_some(jobs)
        },
    );
    let (jid, job) = runs.iter().next().unwrap();
    assert_eq!(job["Function"], json!("runner.test.arg"), "{job}");
    assert_eq!(job["Arguments"], json!(["tidy"]), "{job}");
    let looked = master.saltq(&["run", "jobs.lookup_jid", jid, "--out", "json"]);
    assert_eq!(looked.code, 0, "{looked:?}");
    assert!(looked.stdout.contains("tidy"), "{looked:?}");
}

/// The first event a watcher started with `count` 1 printed: its data.
fn one_event(mut watcher: std::process::Child) -> Value {
    let mut out = String::new();
    watcher
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let _ = watcher.wait();
    let (_, ev) = out.trim().split_once('\t').expect("one event");
    serde_json::from_str(ev).unwrap()
}

/// The `Arguments` of each `fun` job the job cache holds for `id`.
fn arguments_of(master: &Master, fun: &str, id: &str) -> Vec<Value> {
    let o = master.saltq(&[
        "run",
        "jobs.list_jobs",
        &format!("search_function={fun}"),
        "--out",
        "json",
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    o.json()
        .as_object()
        .unwrap()
        .values()
        .filter(|j| j["Target"] == json!(id))
        .map(|j| j["Arguments"].clone())
        .collect()
}

#[test]
fn completion_events_pillar_jobs_and_restarts_of_master_and_minion() {
    let mut master = Master::start_with(|dir| {
        let pillar = dir.join("pillar");
        std::fs::create_dir_all(&pillar).unwrap();
        std::fs::write(pillar.join("top.sls"), "base:\n  '*':\n    - sched\n").unwrap();
        std::fs::write(
            pillar.join("sched.sls"),
            "schedule:\n  pjob:\n    function: test.arg\n    seconds: 2\n    args:\n      - pillar1\n",
        )
        .unwrap();
        format!(
            "auto_accept: true\npillar_roots:\n  base:\n    - {}\n",
            pillar.display()
        )
    });
    let pillar_sls = master.dir.0.join("pillar/sched.sls");
    let mut minion = master.minion(
        "sched-ev",
        "mine_enabled: false\nschedule:\n  pinger:\n    function: test.ping\n    seconds: 2\n",
    );
    master.wait_for("sched-ev");

    // Salt's completion events, forwarded to the master's bus with the minion's id.
    let watcher = master.watch_events("/salt/minion/minion_schedule_add_complete", 1);
    let added = call(
        &master,
        "sched-ev",
        &["schedule.add", "later", "function=test.true", "hours=12"],
    );
    assert_eq!(added["result"], json!(true), "{added}");
    let ev = one_event(watcher);
    assert_eq!(ev["complete"], json!(true), "{ev}");
    assert_eq!(ev["id"], json!("sched-ev"), "{ev}");
    assert_eq!(
        ev["schedule"]["later"]["function"],
        json!("test.true"),
        "{ev}"
    );
    assert_eq!(ev["schedule"]["pjob"]["args"], json!(["pillar1"]), "{ev}");
    let watcher = master.watch_events("/salt/minion/minion_schedule_disabled_job_complete", 1);
    let disabled = call(&master, "sched-ev", &["schedule.disable_job", "later"]);
    assert_eq!(
        disabled["changes"],
        json!({"later": "disabled"}),
        "{disabled}"
    );
    let ev = one_event(watcher);
    assert_eq!(ev["schedule"]["later"]["enabled"], json!(false), "{ev}");

    // The pillar's job: listed with where=pillar, run, not deletable, refreshed.
    let from_pillar = call(
        &master,
        "sched-ev",
        &["schedule.list", "where=pillar", "return_yaml=False"],
    );
    assert_eq!(
        from_pillar["pjob"]["args"],
        json!(["pillar1"]),
        "{from_pillar}"
    );
    assert!(from_pillar.get("pinger").is_none(), "{from_pillar}");
    let from_opts = call(
        &master,
        "sched-ev",
        &["schedule.list", "where=opts", "return_yaml=False"],
    );
    assert!(from_opts.get("pjob").is_none(), "{from_opts}");
    assert_eq!(from_opts["pinger"]["seconds"], json!(2), "{from_opts}");
    eventually("the pillar's job ran", Duration::from_secs(30), || {
        arguments_of(&master, "test.arg", "sched-ev")
            .contains(&json!(["pillar1"]))
            .then_some(())
    });
    let kept = call(&master, "sched-ev", &["schedule.delete", "pjob"]);
    assert_eq!(
        kept,
        json!({"comment": "Failed to delete job pjob from schedule.", "result": false, "changes": {}})
    );
    std::fs::write(
        &pillar_sls,
        "schedule:\n  pjob:\n    function: test.arg\n    seconds: 2\n    args:\n      - pillar2\n",
    )
    .unwrap();
    let refreshed = call(
        &master,
        "sched-ev",
        &["saltutil.refresh_pillar", "wait=True"],
    );
    assert_eq!(refreshed, json!(true));
    eventually(
        "the refreshed pillar's job ran",
        Duration::from_secs(30),
        || {
            arguments_of(&master, "test.arg", "sched-ev")
                .contains(&json!(["pillar2"]))
                .then_some(())
        },
    );

    // A master restart: the minion's schedule goes on, its jobs stored by the new master.
    let before = jobs_of(&master, "test.ping", "sched-ev").len();
    master.restart();
    master.wait_for("sched-ev");
    eventually(
        "scheduled pings stored after the master restart",
        Duration::from_secs(30),
        || (jobs_of(&master, "test.ping", "sched-ev").len() >= before + 2).then_some(()),
    );
    let listed = call(&master, "sched-ev", &["schedule.list", "return_yaml=False"]);
    assert_eq!(listed["later"]["enabled"], json!(false), "{listed}");

    // A minion restart: the saved jobs are back from `_schedule.conf` and run again.
    let before = jobs_of(&master, "test.ping", "sched-ev").len();
    minion.restart();
    master.wait_for("sched-ev");
    eventually(
        "scheduled pings stored after the minion restart",
        Duration::from_secs(30),
        || (jobs_of(&master, "test.ping", "sched-ev").len() >= before + 2).then_some(()),
    );
    let listed = call(&master, "sched-ev", &["schedule.list", "return_yaml=False"]);
    assert_eq!(listed["later"]["function"], json!("test.true"), "{listed}");
    assert_eq!(listed["later"]["enabled"], json!(false), "{listed}");
    assert_eq!(listed["pjob"]["args"], json!(["pillar2"]), "{listed}");
}

#[test]
fn returners_see_the_jobs_own_jid_and_return_job_false_stays_on_the_minion() {
    let master = start_master();
    let rets = master.dir.0.join("returns.jsonl");
    let _minion = master.minion(
        "sched-ret",
        &format!(
            "mine_enabled: false\nrawfile_json.filename: {}\nschedule:\n  echoer:\n    function: test.echo\n    seconds: 2\n    args:\n      - returned\n    returner: rawfile_json\n  quiet:\n    function: test.echo\n    seconds: 2\n    args:\n      - quiet\n    returner: rawfile_json\n    return_job: false\n",
            rets.display()
        ),
    );
    let lines = |word: &str| -> Vec<Value> {
        std::fs::read_to_string(&rets)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["return"] == json!(word))
            .collect()
    };
    let returned = eventually(
        "the returner saw a scheduled echo",
        Duration::from_secs(30),
        || lines("returned").pop(),
    );
    let jid = returned["jid"].as_str().unwrap().to_owned();
    assert!(
        jid.len() == 20 && jid.bytes().all(|b| b.is_ascii_digit()),
        "a real jid, not req: {returned}"
    );
    assert_eq!(returned["id"], json!("sched-ret"), "{returned}");
    // The master stored the return under the same jid.
    let looked = eventually(
        "the master has the job under the minion's jid",
        Duration::from_secs(20),
        || {
            let o = master.saltq(&["run", "jobs.lookup_jid", &jid, "--out", "json"]);
            (o.code == 0 && o.json()["sched-ret"] == json!("returned")).then_some(o)
        },
    );
    assert_eq!(looked.json()["sched-ret"], json!("returned"));

    // return_job: False: the returner ran, the master never heard of it.
    let quiet = eventually(
        "the returner saw two quiet echoes",
        Duration::from_secs(30),
        || {
            let q = lines("quiet");
            (q.len() >= 2).then_some(q)
        },
    );
    for q in &quiet {
        let jid = q["jid"].as_str().unwrap();
        assert!(jid.len() == 20 && jid != "req", "{q}");
        let o = master.saltq(&["run", "jobs.lookup_jid", jid, "--out", "json"]);
        assert!(!o.stdout.contains("quiet"), "not sent to the master: {o:?}");
    }
    let args = arguments_of(&master, "test.echo", "sched-ret");
    assert!(args.contains(&json!(["returned"])), "{args:?}");
    assert!(!args.contains(&json!(["quiet"])), "{args:?}");
}

/// Salt's `schedule_returner` (every scheduled return also goes to these returners, so the
/// job keeps its own jid, which the master stores) and `return_job: nocache` (the return is
/// announced as `salt/job/nocache/ret/<id>` and never stored).
#[test]
fn schedule_returner_sees_every_scheduled_return_and_nocache_is_announced_not_stored() {
    let master = start_master();
    let rets = master.dir.0.join("schedule_returner.jsonl");
    let watcher = master.watch_events("salt/job/nocache/ret/sched-nc", 1);
    let _with_returner = master.minion(
        "sched-sr",
        &format!(
            "mine_enabled: false\nrawfile_json.filename: {}\nschedule_returner: rawfile_json\nschedule:\n  plain:\n    function: test.echo\n    seconds: 2\n    args:\n      - viasr\n",
            rets.display()
        ),
    );
    let _uncached = master.minion(
        "sched-nc",
        "mine_enabled: false\nschedule:\n  uncached:\n    function: test.echo\n    seconds: 2\n    args:\n      - uncached\n    return_job: nocache\n",
    );
    let ev = one_event(watcher);
    assert_eq!(ev["jid"], json!("nocache"), "{ev}");
    assert_eq!(ev["schedule"], json!("uncached"), "{ev}");
    assert_eq!(ev["return"], json!("uncached"), "{ev}");
    assert_eq!(ev["id"], json!("sched-nc"), "{ev}");

    let returned = eventually(
        "schedule_returner saw a scheduled echo",
        Duration::from_secs(30),
        || {
            std::fs::read_to_string(&rets)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|v| v["return"] == json!("viasr"))
        },
    );
    let jid = returned["jid"].as_str().unwrap().to_owned();
    assert!(
        jid.len() == 20 && jid.bytes().all(|b| b.is_ascii_digit()),
        "the job's own jid: {returned}"
    );
    assert_eq!(returned["id"], json!("sched-sr"), "{returned}");
    eventually(
        "the master stored the job under the minion's jid",
        Duration::from_secs(20),
        || {
            let o = master.saltq(&["run", "jobs.lookup_jid", &jid, "--out", "json"]);
            (o.code == 0 && o.json()["sched-sr"] == json!("viasr")).then_some(())
        },
    );
    // Several nocache runs have gone by now; none is in the job cache.
    eventually(
        "a second scheduled echo of sched-sr stored",
        Duration::from_secs(20),
        || (arguments_of(&master, "test.echo", "sched-sr").len() >= 2).then_some(()),
    );
    let args = arguments_of(&master, "test.echo", "sched-nc");
    assert!(args.is_empty(), "nocache returns are not stored: {args:?}");
}

#[test]
fn a_cluster_runs_the_master_schedule_once_per_fire_on_the_duty_holder() {
    let Some((nats, pg)) = super::cluster::servers() else {
        return;
    };
    let c = super::cluster::Cluster::start(
        3,
        &nats,
        &pg,
        "schedule:\n  tick:\n    function: test.arg\n    seconds: 2\n    args:\n      - clustered\n",
    );
    // The master's debug log may drop lines under load, so it says who runs the schedule,
    // not how often; the job cache says how often.
    let runs_logged = |i: usize| {
        String::from_utf8_lossy(&std::fs::read(c.replicas[i].log()).unwrap_or_default())
            .matches("running scheduled runner test.arg")
            .count()
    };
    let stored = || -> Vec<String> {
        let o = c.replicas[0].saltq(&[
            "run",
            "jobs.list_jobs",
            "search_function=runner.test.arg",
            "--out",
            "json",
        ]);
        let mut jids: Vec<String> = o
            .json()
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        jids.sort();
        jids
    };
    let holder = eventually(
        "a replica ran the schedule",
        Duration::from_secs(60),
        || (0..3).find(|i| runs_logged(*i) >= 1),
    );
    let jids = eventually("six runs stored", Duration::from_secs(60), || {
        let j = stored();
        (j.len() >= 6).then_some(j)
    });
    for i in (0..3).filter(|i| *i != holder) {
        assert_eq!(runs_logged(i), 0, "replica {i} does not hold the duties");
    }
    // Once per fire: consecutive runs an interval (2 s) apart. A second replica running the
    // schedule would put runs of its own between the holder's, less than a second from one.
    fn micros(jid: &str) -> Option<(&str, u64)> {
        let n = |r: std::ops::Range<usize>| jid.get(r)?.parse::<u64>().ok();
        let secs = n(8..10)? * 3600 + n(10..12)? * 60 + n(12..14)?;
        Some((jid.get(..8)?, secs * 1_000_000 + n(14..20)?))
    }
    for pair in jids.windows(2) {
        let (Some((d0, t0)), Some((d1, t1))) = (micros(&pair[0]), micros(&pair[1])) else {
            panic!("jids as Salt's: {pair:?}");
        };
        if d0 == d1 {
            assert!(
                t1 - t0 >= 1_000_000,
                "two runs less than a second apart, {pair:?}: more than one replica runs the \
                 schedule ({jids:?})"
            );
        }
    }
}
