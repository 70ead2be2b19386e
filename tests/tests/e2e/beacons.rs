//! Beacons end to end (issue #28): a real minion's inotify beacon on a temp dir fires
//! `salt/beacon/<id>/inotify/<dir>` on the master's bus, which the master's reactor turns into
//! a state applied on that minion; diskusage and load beacons with thresholds fire; and
//! `beacons.add` + `beacons.save` survive a minion restart; the reactor still hears the
//! beacon after a master restart.

use std::time::Duration;

use saltq_tests::{Master, Scratch, eventually, watched_until};
use serde_json::Value;

/// The events a watcher printed, as `(tag, data)`.
fn parse(lines: &[String]) -> Vec<(String, Value)> {
    lines
        .iter()
        .filter_map(|l| l.split_once('\t'))
        .map(|(t, d)| (t.to_owned(), serde_json::from_str(d).unwrap_or(Value::Null)))
        .collect()
}

#[test]
fn an_inotify_beacon_drives_the_reactor_and_thresholds_fire() {
    let work = Scratch::new("beacons");
    let watched = work.0.join("watched");
    std::fs::create_dir_all(&watched).unwrap();
    let marker = work.0.join("reacted");
    let sls = work.0.join("react.sls");
    // The reaction applies a state on the minion the event came from.
    std::fs::write(
        &sls,
        format!(
            "apply:\n  local.state.single:\n    - tgt: {{{{ data['id'] }}}}\n    - arg: [file.managed]\n\
             \x20   - kwarg:\n        name: {}\n        contents: \"{{{{ data['path'] }}}} {{{{ data['change'] }}}}\"\n",
            marker.display()
        ),
    )
    .unwrap();
    let master = Master::start(&format!(
        "auto_accept: true\nreactor:\n  - 'salt/beacon/*/inotify/*':\n    - {}\n",
        sls.display()
    ));
    let dir = watched.display().to_string();
    let minion = master.minion(
        "bcn1",
        &format!(
            "loop_interval: 0.5\nbeacons:\n  inotify:\n    - files:\n        {dir}:\n          mask: [create]\n\
             \x20 diskusage:\n    - '/': '0%'\n    - interval: 1\n\
             \x20 load:\n    - averages:\n        1m: [1000, 2000]\n        5m: [1000, 2000]\n        15m: [1000, 2000]\n"
        ),
    );
    master.wait_for("bcn1");
    let watch = master.watch_all_events("salt/beacon/*");
    // The beacon watches from its first poll: create files until one is reported.
    let lines = watched_until(watch, Duration::from_secs(30), |lines| {
        let _ = std::fs::write(watched.join(format!("f{}", lines.len())), "x");
        let ev = parse(lines);
        ["inotify", "diskusage", "load"].iter().all(|b| {
            ev.iter()
                .any(|(t, _)| t.starts_with(&format!("salt/beacon/bcn1/{b}/")))
        })
    });
    let events = parse(&lines);
    let (tag, data) = events
        .iter()
        .find(|(t, _)| t.starts_with("salt/beacon/bcn1/inotify/"))
        .unwrap_or_else(|| panic!("no inotify event in {lines:?}"));
    assert_eq!(tag, &format!("salt/beacon/bcn1/inotify/{dir}"));
    assert_eq!(data["change"], "IN_CREATE");
    assert_eq!(data["id"], "bcn1");
    assert!(
        data["path"]
            .as_str()
            .unwrap_or_default()
            .starts_with(&format!("{dir}/f")),
        "{data}"
    );
    let (_, disk) = events
        .iter()
        .find(|(t, _)| t == "salt/beacon/bcn1/diskusage/")
        .unwrap_or_else(|| panic!("no diskusage event in {lines:?}"));
    assert_eq!(disk["mount"], "/");
    assert!(disk["diskusage"].as_f64().is_some(), "{disk}");
    let (_, load) = events
        .iter()
        .find(|(t, _)| t == "salt/beacon/bcn1/load/")
        .unwrap_or_else(|| panic!("no load event in {lines:?}"));
    assert!(
        load["1m"].as_f64().is_some() && load["15m"].as_f64().is_some(),
        "{load}"
    );

    // The reactor applied the state on the minion.
    let written = eventually("the reactor's state ran", Duration::from_secs(30), || {
        std::fs::read_to_string(&marker).ok()
    });
    assert!(written.contains(" IN_CREATE"), "{written:?}");
    drop(minion);
}

#[test]
fn beacons_added_and_saved_survive_a_restart() {
    let master = Master::start("auto_accept: true\n");
    let mut minion = master.minion("bcn2", "loop_interval: 0.5\n");
    master.wait_for("bcn2");
    let call = |args: &[&str]| {
        let mut a = vec!["-L", "bcn2"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--out", "json", "--static"]);
        let o = master.saltq(&a);
        o.json()["bcn2"].clone()
    };
    let added = call(&[
        "beacons.add",
        "ps",
        "[{processes: {saltq-minion: running}}]",
    ]);
    assert_eq!(
        added,
        serde_json::json!({"comment": "Added beacon: ps.", "result": true})
    );
    let saved = call(&["beacons.save"]);
    assert_eq!(saved["result"], true, "{saved}");
    let conf = minion.dir.0.join("etc/minion.d/beacons.conf");
    assert_eq!(
        std::fs::read_to_string(&conf).unwrap(),
        "beacons:\n  ps:\n  - processes:\n      saltq-minion: running\n"
    );
    minion.restart();
    master.wait_for("bcn2");
    let listed = call(&["beacons.list", "return_yaml=False"]);
    assert_eq!(
        listed,
        serde_json::json!({"ps": [{"processes": {"saltq-minion": "running"}}]})
    );
    // And it runs: the ps beacon sees the minion itself running.
    let watch = master.watch_all_events("salt/beacon/bcn2/ps/");
    let lines = watched_until(watch, Duration::from_secs(20), |l| !l.is_empty());
    let ev = parse(&lines);
    assert_eq!(
        ev.first().map(|(_, d)| d["saltq-minion"].clone()),
        Some(Value::from("Running")),
        "{lines:?}"
    );
}

/// A watched directory, a marker file and a reactor SLS that writes into the marker the path
/// of the file an inotify beacon event names (on the minion the event came from).
struct ReactorSetup {
    _work: Scratch,
    watched: std::path::PathBuf,
    marker: std::path::PathBuf,
    /// The master's `reactor` key for it.
    reactor: String,
    /// The minion's `beacons` for the watched directory.
    minion: String,
}

impl ReactorSetup {
    fn new(name: &str) -> ReactorSetup {
        let work = Scratch::new(name);
        let watched = work.0.join("watched");
        std::fs::create_dir_all(&watched).unwrap();
        let marker = work.0.join("reacted");
        let sls = work.0.join("react.sls");
        std::fs::write(
            &sls,
            format!(
                "apply:\n  local.state.single:\n    - tgt: {{{{ data['id'] }}}}\n    - arg: [file.managed]\n\
                 \x20   - kwarg:\n        name: {}\n        contents: \"{{{{ data['path'] }}}}\"\n",
                marker.display()
            ),
        )
        .unwrap();
        let dir = watched.display().to_string();
        ReactorSetup {
            reactor: format!(
                "reactor:\n  - 'salt/beacon/*/inotify/*':\n    - {}\n",
                sls.display()
            ),
            minion: format!(
                "loop_interval: 0.5\nbeacons:\n  inotify:\n    - files:\n        {dir}:\n          mask: [create]\n"
            ),
            _work: work,
            watched,
            marker,
        }
    }

    /// Creates a file each half second until the reactor wrote the marker naming one of this
    /// round's files; the marker's text.
    fn react(&self, round: &str) -> String {
        let dir = self.watched.display().to_string();
        let mut n = 0;
        eventually(
            "the reactor applied the state for a beacon event",
            Duration::from_secs(40),
            || {
                n += 1;
                let _ = std::fs::write(self.watched.join(format!("{round}{n}")), "x");
                std::thread::sleep(Duration::from_millis(500));
                std::fs::read_to_string(&self.marker)
                    .ok()
                    .filter(|t| t.contains(&format!("{dir}/{round}")))
            },
        )
    }
}

/// A beacon keeps driving the reactor across a master restart: the minion reconnects and its
/// next inotify event reaches the restarted master's reactor, which applies the state again.
#[test]
fn a_beacon_drives_the_reactor_again_after_the_master_restarts() {
    let setup = ReactorSetup::new("beacons-restart");
    let mut master = Master::start(&format!("auto_accept: true\n{}", setup.reactor));
    let _minion = master.minion("bcn3", &setup.minion);
    master.wait_for("bcn3");
    setup.react("before");
    master.restart();
    master.wait_for("bcn3");
    let after = setup.react("after");
    assert!(after.contains("/after"), "{after:?}");
}

/// A beacon drives the reactor in a 3-replica cluster: the event reaches the bus on the
/// minion's replica, the replica holding the reactor duty reacts, and the state it publishes
/// reaches the minion through the replica that holds its connection, once for each of the
/// three replicas in turn.
#[test]
fn a_beacon_drives_the_reactor_in_a_cluster() {
    let Some((nats, pg)) = crate::cluster::servers() else {
        return;
    };
    let setup = ReactorSetup::new("beacons-cluster");
    let c = crate::cluster::Cluster::start(3, &nats, &pg, &setup.reactor);
    for (i, r) in c.replicas.iter().enumerate() {
        let id = format!("bcnc{i}");
        let _minion = r.minion(&id, &setup.minion);
        r.wait_for(&id);
        let seen = setup.react(&format!("r{i}-"));
        assert!(seen.contains(&format!("/r{i}-")), "{seen:?}");
    }
}
