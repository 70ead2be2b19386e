//! Syndic (master of masters): a top master with `order_masters: True`, two lower masters
//! linked to it with `syndic_master`, three minions under each; every process a real
//! saltq binary on loopback, every link mutual-TLS QUIC.

use std::time::{Duration, Instant};

use saltq_tests::{Master, Minion, eventually};
use serde_json::{Value, json};

/// A top master, its syndics and their minions.
struct Estate {
    top: Master,
    syndics: Vec<Master>,
    _minions: Vec<Minion>,
}

fn lower(top: &Master, id: &str) -> Master {
    Master::start(&format!(
        "id: {id}\nauto_accept: true\nsyndic_master: 127.0.0.1\nsyndic_master_port: {}\n",
        top.port
    ))
}

/// `top` (syndic_wait as given) → syn1 (a1 web, a2 web, a3 db), syn2 (b1 web, b2 db, b3 db).
fn estate(syndic_wait: &str) -> Estate {
    let top = Master::start(&format!(
        "id: top\norder_masters: true\nsyndic_wait: {syndic_wait}\nauto_accept: true\n"
    ));
    let syndics = vec![lower(&top, "syn1"), lower(&top, "syn2")];
    let mut minions = Vec::new();
    for (s, prefix) in syndics.iter().zip(["a", "b"]) {
        for (i, role) in (1..=3).zip(if prefix == "a" {
            ["web", "web", "db"]
        } else {
            ["web", "db", "db"]
        }) {
            minions.push(s.minion(
                &format!("{prefix}{i}"),
                &format!("grains:\n  role: {role}\n"),
            ));
        }
    }
    for (s, prefix) in syndics.iter().zip(["a", "b"]) {
        for i in 1..=3 {
            s.wait_for(&format!("{prefix}{i}"));
        }
    }
    // Both syndics hold their link once a job from the top reaches all six minions.
    eventually(
        "the top reaches all six minions",
        Duration::from_secs(40),
        || {
            let o = top.saltq(&["*", "test.ping", "--out", "json", "--static", "-t", "3"]);
            (o.json().as_object().map(|m| m.len()) == Some(6)).then_some(())
        },
    );
    Estate {
        top,
        syndics,
        _minions: minions,
    }
}

fn ids(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    k.sort();
    k
}

fn jid_of(o: &saltq_tests::Out) -> String {
    // `--async` prints "Executed command with job ID: <jid>".
    o.stdout.trim().rsplit(' ').next().unwrap().to_owned()
}

#[test]
fn a_top_master_targets_across_two_syndics_and_stores_at_both_levels() {
    let e = estate("1");
    let o = e
        .top
        .saltq(&["*", "test.ping", "--out", "json", "--static"]);
    assert_eq!(o.code, 0, "{o:?}");
    let all = ["a1", "a2", "a3", "b1", "b2", "b3"];
    assert_eq!(
        o.json(),
        json!(
            all.iter()
                .map(|m| (m.to_string(), json!(true)))
                .collect::<serde_json::Map<_, _>>()
        )
    );

    // Grains and compound targets are resolved below, by each syndic's master.
    let o = e
        .top
        .saltq(&["-G", "role:web", "test.ping", "--out", "json", "--static"]);
    assert_eq!(ids(&o.json()), vec!["a1", "a2", "b1"], "{o:?}");
    let o = e.top.saltq(&[
        "-C",
        "G@role:db and b*",
        "test.ping",
        "--out",
        "json",
        "--static",
    ]);
    assert_eq!(ids(&o.json()), vec!["b2", "b3"], "{o:?}");
    let o = e.top.saltq(&[
        "-L",
        "a3,b1",
        "test.echo",
        "hi",
        "--out",
        "json",
        "--static",
    ]);
    assert_eq!(o.json(), json!({"a3": "hi", "b1": "hi"}), "{o:?}");

    // The syndics report which of their minions they published to, under Salt's tags.
    let watch = e.top.watch_events("syndic/*", 2);
    let o = e.top.saltq(&["*", "test.echo", "stored", "--async"]);
    assert_eq!(o.code, 0, "{o:?}");
    let jid = jid_of(&o);
    let out = watch.wait_with_output().expect("events");
    let text = String::from_utf8_lossy(&out.stdout);
    for (s, mins) in [("syn1", "a1"), ("syn2", "b1")] {
        assert!(text.contains(&format!("syndic/{s}/{jid}")), "{text}");
        assert!(text.contains(mins), "{text}");
    }
    // Returns are stored at the top and at each syndic's master.
    let o = eventually(
        "all returns stored at the top",
        Duration::from_secs(15),
        || {
            let o = e
                .top
                .saltq(&["run", "jobs.lookup_jid", &jid, "--out", "json"]);
            (ids(&o.json()).len() == 6).then_some(o)
        },
    );
    assert_eq!(o.json()["b3"], json!("stored"), "{o:?}");
    for (s, prefix) in e.syndics.iter().zip(["a", "b"]) {
        let o = s.saltq(&["run", "jobs.lookup_jid", &jid, "--out", "json"]);
        let want: Vec<String> = (1..=3).map(|i| format!("{prefix}{i}")).collect();
        assert_eq!(ids(&o.json()), want, "{o:?}");
    }
}

#[test]
fn syndic_wait_and_a_syndic_killed_mid_job() {
    let mut e = estate("3");
    // Every minion answers at once, yet the top's CLI waits syndic_wait for more syndics.
    let t0 = Instant::now();
    let o = e
        .top
        .saltq(&["*", "test.ping", "--out", "json", "--static", "-t", "20"]);
    assert_eq!(ids(&o.json()).len(), 6, "{o:?}");
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_secs(3),
        "returned after {took:?}, before syndic_wait"
    );
    assert!(
        took < Duration::from_secs(15),
        "waited the timeout instead: {took:?}"
    );

    // syn2 dies while its minions run the job: they are reported as Salt's top reports them.
    let (top, syndics) = (&e.top, &mut e.syndics);
    let o = std::thread::scope(|sc| {
        let cli = sc.spawn(|| top.saltq(&["*", "test.sleep", "3", "-t", "6"]));
        std::thread::sleep(Duration::from_millis(1500));
        syndics[1].kill();
        cli.join().expect("cli")
    });
    for m in ["a1", "a2", "a3"] {
        assert!(o.stdout.contains(&format!("{m}:\n    True")), "{o:?}");
    }
    for m in ["b1", "b2", "b3"] {
        assert!(
            o.stdout
                .contains(&format!("{m}:\n    Minion did not return. [No response]")),
            "{o:?}"
        );
    }
    assert_ne!(o.code, 0, "{o:?}");
}

#[test]
fn a_master_without_order_masters_refuses_a_syndic() {
    let top = Master::start("id: plain\nauto_accept: true\n");
    let s = lower(&top, "syn9");
    let log = s.log();
    eventually("the syndic is refused", Duration::from_secs(20), || {
        let t = std::fs::read_to_string(&log).unwrap_or_default();
        t.contains("order_masters is not set").then_some(())
    });
}
