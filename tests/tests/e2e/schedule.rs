//! The minion's scheduler end to end: a real minion with a `schedule` in its config runs
//! `test.ping` and `state.apply` (with `test=True`) every 2 s, each run a job in the
//! master's job cache and a `salt/job/<jid>/ret/<id>` event with Salt's `schedule` field;
//! `schedule.add`/`delete` over the CLI, persisted in `minion.d/_schedule.conf` and back
//! after the minion restarts.

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
