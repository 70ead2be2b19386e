//! `startup_states` end to end: a real minion configured with `startup_states` applies its
//! states once when it first connects after starting, as Salt's `Minion._state_run` does;
//! the run is a job in the master's job cache like any other (Salt's `"req"` jid replaced by
//! one of the master's), announced by its return event; reconnecting to a restarted master
//! does not run it again, restarting the minion does.

use std::io::Read;
use std::time::Duration;

use saltq_tests::{Master, eventually};
use serde_json::{Value, json};

/// The tree: an SLS for `startup_states: sls`, a top file for `startup_states: top` and the
/// default `top.sls` for `startup_states: highstate`.
fn start_master() -> Master {
    Master::start_with(|dir| {
        let tree = dir.join("tree");
        std::fs::create_dir_all(tree.join("boot")).unwrap();
        std::fs::write(
            tree.join("boot/marker.sls"),
            "marker:\n  test.succeed_with_changes:\n    - name: booted\n",
        )
        .unwrap();
        std::fs::write(
            tree.join("boot/other.sls"),
            "other:\n  test.succeed_without_changes:\n    - name: from the top file\n",
        )
        .unwrap();
        std::fs::write(
            tree.join("top_startup.sls"),
            "base:\n  'starter-top':\n    - boot.other\n",
        )
        .unwrap();
        // The default top file, for `startup_states: highstate`.
        std::fs::write(
            tree.join("top.sls"),
            "base:\n  'starter-high':\n    - boot.other\n    - boot.marker\n",
        )
        .unwrap();
        format!(
            "auto_accept: true\nfile_roots:\n  base:\n    - {}\n",
            tree.display()
        )
    })
}

/// The jobs of `fun` the job cache holds for `id`: `(jid, job)`, oldest first.
fn jobs_of(master: &Master, fun: &str, id: &str) -> Vec<(String, Value)> {
    let o = master.saltq(&[
        "run",
        "jobs.list_jobs",
        &format!("search_function={fun}"),
        "--out",
        "json",
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    let mut jobs: Vec<(String, Value)> = o
        .json()
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, j)| j["Target"] == json!(id))
        .map(|(jid, j)| (jid.clone(), j.clone()))
        .collect();
    jobs.sort_by(|a, b| a.0.cmp(&b.0));
    jobs
}

#[test]
fn startup_states_run_once_per_minion_start_and_are_jobs_like_any_other() {
    let mut master = start_master();
    let watcher = master.watch_events("salt/job/*/ret/starter-sls", 1);
    let mut sls = master.minion(
        "starter-sls",
        "startup_states: sls\nsls_list:\n  - boot.marker\n",
    );
    let _top = master.minion(
        "starter-top",
        "startup_states: top\ntop_file: top_startup.sls\n",
    );
    let _high = master.minion("starter-high", "startup_states: highstate\n");

    // The return event of the startup run, under a jid of the master's.
    let mut out = String::new();
    let mut watcher = watcher;
    watcher
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let _ = watcher.wait();
    let (tag, ev) = out.trim().split_once('\t').expect("one event");
    let ev: Value = serde_json::from_str(ev).unwrap();
    assert_eq!(ev["fun"], json!("state.sls"), "{ev}");
    assert_eq!(ev["fun_args"], json!([["boot.marker"]]));
    assert_eq!(ev["retcode"], json!(0));
    let state = &ev["return"]["test_|-marker_|-booted_|-succeed_with_changes"];
    assert_eq!(state["result"], json!(true), "{ev}");
    let jid = ev["jid"].as_str().unwrap().to_owned();
    assert_eq!(tag, format!("salt/job/{jid}/ret/starter-sls"));
    assert!(
        jid.len() == 20 && jid.bytes().all(|b| b.is_ascii_digit()),
        "{jid}"
    );

    // In the job cache: a job targeting the minion alone, its return stored.
    let jobs = jobs_of(&master, "state.sls", "starter-sls");
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].0, jid);
    assert_eq!(jobs[0].1["Target-type"], json!("glob"));
    let looked = master.saltq(&["run", "jobs.lookup_jid", &jid, "--out", "json"]);
    assert_eq!(
        looked.json()["starter-sls"]["test_|-marker_|-booted_|-succeed_with_changes"]["changes"],
        json!({"testing": {"new": "Something pretended to change", "old": "Unchanged"}}),
        "{looked:?}"
    );

    // `startup_states: top` applied the states its top file names for it.
    let top = eventually(
        "the top file's startup run is stored",
        Duration::from_secs(30),
        || jobs_of(&master, "state.top", "starter-top").pop(),
    );
    let looked = master.saltq(&["run", "jobs.lookup_jid", &top.0, "--out", "json"]);
    assert_eq!(
        looked.json()["starter-top"]["test_|-other_|-from the top file_|-succeed_without_changes"]
            ["result"],
        json!(true),
        "{looked:?}"
    );

    // `startup_states: highstate` applied what the default top file names for it.
    let high = eventually(
        "the highstate startup run is stored",
        Duration::from_secs(30),
        || jobs_of(&master, "state.highstate", "starter-high").pop(),
    );
    let looked = master.saltq(&["run", "jobs.lookup_jid", &high.0, "--out", "json"]);
    let ran = &looked.json()["starter-high"];
    let mut ids: Vec<&str> = ran
        .as_object()
        .unwrap_or_else(|| panic!("a highstate return: {looked:?}"))
        .values()
        .map(|s| s["__id__"].as_str().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, ["marker", "other"], "{looked:?}");
    assert!(
        ran.as_object()
            .unwrap()
            .values()
            .all(|s| s["result"] == json!(true)),
        "{looked:?}"
    );
    assert!(jobs_of(&master, "state.highstate", "starter-sls").is_empty());

    // A new connection of the same minion process does not run them again.
    master.restart();
    master.wait_for("starter-sls");
    assert_eq!(jobs_of(&master, "state.sls", "starter-sls").len(), 1);

    // A new minion process does.
    sls.restart();
    let again = eventually(
        "a second startup run after the minion restarted",
        Duration::from_secs(30),
        || {
            let jobs = jobs_of(&master, "state.sls", "starter-sls");
            (jobs.len() == 2).then_some(jobs)
        },
    );
    assert!(again[1].0 > jid, "{again:?}");
}

#[test]
fn a_bad_startup_states_value_stops_the_minion_with_the_key_named() {
    let (code, err) = saltq_tests::refused_start(
        "saltq-minion",
        "minion",
        "master: 127.0.0.1\nstartup_states: sls\n",
    );
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("sls_list"), "{err}");
    let (code, err) = saltq_tests::refused_start(
        "saltq-minion",
        "minion",
        "master: 127.0.0.1\nstartup_states: hihgstate\n",
    );
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("startup_states") && err.contains("expected highstate, sls or top"),
        "{err}"
    );
}
