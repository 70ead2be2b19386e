//! Syndic (master of masters): a top master with `order_masters: True`, two lower masters
//! linked to it with `syndic_master`, three minions under each; every process a real
//! saltq binary on loopback, every link mutual-TLS QUIC.

use std::time::Duration;

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

/// `top` (syndic_wait as given, `top_extra` config) → syn1 (a1 web, a2 web, a3 db), syn2 (b1
/// web, b2 db, b3 db).
fn estate(syndic_wait: &str, top_extra: &str) -> Estate {
    let top = Master::start(&format!(
        "id: top\norder_masters: true\nsyndic_wait: {syndic_wait}\nauto_accept: true\n{top_extra}"
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

/// The CLI's JSON output, or null when it printed none (no minion answered yet).
fn lenient(o: &saltq_tests::Out) -> Value {
    serde_json::from_str(&o.stdout).unwrap_or(Value::Null)
}

/// The newest job of `fun` in `master`'s job list.
fn last_jid(master: &Master, fun: &str) -> String {
    let o = master.saltq(&["run", "jobs.list_jobs", "--out", "json"]);
    let v = o.json();
    let mut jids: Vec<&String> = v
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(_, j)| j["Function"] == fun)
                .map(|(k, _)| k)
                .collect()
        })
        .unwrap_or_default();
    jids.sort();
    jids.last()
        .map(|j| j.to_string())
        .unwrap_or_else(|| panic!("no {fun} job: {o:?}"))
}

fn jid_of(o: &saltq_tests::Out) -> String {
    // `--async` prints "Executed command with job ID: <jid>".
    o.stdout.trim().rsplit(' ').next().unwrap().to_owned()
}

#[test]
fn a_top_master_targets_across_two_syndics_and_stores_at_both_levels() {
    let e = estate("1", "");
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
    // The syndics' bus events go up (Salt's syndic in its default `sync` mode): a lower
    // minion's event is fired at the top under `syndic/<id>/` and as is.
    let watch = e.top.watch_events("*e2e/syndic/probe", 2);
    let o = e.top.saltq(&[
        "-L",
        "a2",
        "event.send",
        "e2e/syndic/probe",
        "--out",
        "json",
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    let out = watch.wait_with_output().expect("events");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("syndic/syn1/e2e/syndic/probe"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("e2e/syndic/probe")),
        "{text}"
    );

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
        // Each lower master's job lists its own minions.
        let o = s.saltq(&["run", "jobs.list_job", &jid, "--out", "json"]);
        assert_eq!(minions_of(&o.json()), want, "{o:?}");
    }
    // The top's job cache holds what each syndic expected (Salt's `save_minions` with
    // `syndic_id`, merged by `get_load` into `Minions`, sorted), beside the returns.
    let o = e
        .top
        .saltq(&["run", "jobs.list_job", &jid, "--out", "json"]);
    assert_eq!(minions_of(&o.json()), all, "{o:?}");
    assert_eq!(ids(&o.json()["Result"]), all, "{o:?}");
}

/// `Minions` of a `jobs.list_job` answer (the CLI may wrap it under the master's id).
fn minions_of(v: &Value) -> Vec<String> {
    let m = v.get("Minions").or_else(|| {
        v.as_object()
            .and_then(|o| o.values().find_map(|x| x.get("Minions")))
    });
    serde_json::from_value(m.cloned().unwrap_or(Value::Null)).unwrap_or_default()
}

#[test]
fn syndic_wait_and_find_job_keep_the_top_cli_for_the_minions_below() {
    // The top has a minion of its own, which answers first: without syndic_wait the CLI
    // would stop once it returned, before the syndics said which minions they published to.
    let e = estate("3", "");
    let _t1 = e.top.minion("t1", "");
    e.top.wait_for("t1");
    let o = e
        .top
        .saltq(&["*", "test.ping", "--out", "json", "--static", "-t", "20"]);
    assert_eq!(
        ids(&o.json()),
        vec!["a1", "a2", "a3", "b1", "b2", "b3", "t1"],
        "{o:?}"
    );
    // The caller's -t goes down with the job (Salt's `to`): the lower masters follow it as
    // long as the top does, so a job shorter than -t but longer than the masters' default
    // timeout (5 s) never makes them ask saltutil.find_job.
    let o = e.top.saltq(&[
        "-L",
        "a1,b1",
        "test.sleep",
        "6",
        "--out",
        "json",
        "--static",
        "-t",
        "12",
    ]);
    assert_eq!(o.json(), json!({"a1": true, "b1": true}), "{o:?}");
    let jid = last_jid(&e.top, "test.sleep");
    for s in &e.syndics {
        let o = s.saltq(&["run", "jobs.list_jobs", "--out", "json"]);
        let jobs = o.json();
        assert!(
            jobs.as_object().is_some_and(|m| m.contains_key(&jid)),
            "the job reached the lower master: {o:?}"
        );
        let asked = jobs.as_object().unwrap().values().any(|j| {
            j["Function"] == "saltutil.find_job" && j["Arguments"].to_string().contains(&jid)
        });
        assert!(!asked, "a lower master asked find_job before -t: {o:?}");
    }
    // A job longer than the timeout: at the timeout the top asks saltutil.find_job through
    // the syndics, hears the minions below still run it, and keeps waiting for them.
    let o = e.top.saltq(&[
        "*",
        "test.sleep",
        "6",
        "--out",
        "json",
        "--static",
        "-t",
        "2",
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    let all = ["a1", "a2", "a3", "b1", "b2", "b3", "t1"];
    assert_eq!(
        o.json(),
        json!(
            all.iter()
                .map(|m| (m.to_string(), json!(true)))
                .collect::<serde_json::Map<_, _>>()
        )
    );
}

#[test]
fn a_syndic_killed_mid_job_leaves_its_minions_without_response() {
    let mut e = estate("2", "gather_job_timeout: 3\n");
    // syn2 dies while its minions run the job: they are reported as Salt's top reports them
    // (no data of them at the top, so `[No response]`, not `[Not connected]`).
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
fn syndic_failover_moves_to_the_next_top_master() {
    let tops: Vec<Master> = ["top-a", "top-b"]
        .iter()
        .map(|id| {
            Master::start(&format!(
                "id: {id}\norder_masters: true\nsyndic_wait: 1\nauto_accept: true\n"
            ))
        })
        .collect();
    let mut tops = tops.into_iter();
    let (mut a, b) = (tops.next().unwrap(), tops.next().unwrap());
    // Two independent top masters (each its own CA, pinned apart), tried in the order listed;
    // syndic_forward_all_events is accepted and, as in Salt 3007.8 (declared, read nowhere),
    // changes nothing.
    let syn = Master::start(&format!(
        "id: synf\nauto_accept: true\nsyndic_failover: ordered\n\
         syndic_forward_all_events: true\n\
         syndic_master: ['127.0.0.1:{}', '127.0.0.1:{}']\n",
        a.port, b.port
    ));
    let _m = syn.minion("f1", "");
    syn.wait_for("f1");
    let ping = |top: &Master| {
        let o = top.saltq(&["*", "test.ping", "--out", "json", "--static", "-t", "3"]);
        (lenient(&o) == json!({"f1": true})).then_some(())
    };
    eventually("the first top reaches f1", Duration::from_secs(40), || {
        ping(&a)
    });
    a.kill();
    eventually(
        "the second top reaches f1 once the first is gone",
        Duration::from_secs(60),
        || ping(&b),
    );
    let pinned: Vec<String> = std::fs::read_dir(syn.pki_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("syndic_master_ca-"))
        .collect();
    assert_eq!(pinned.len(), 2, "one pinned CA per top master: {pinned:?}");
}

#[test]
fn a_lower_master_that_is_a_cluster_serves_a_top_master() {
    let Some((nats, pg)) = crate::cluster::servers() else {
        return;
    };
    let top = Master::start("id: top\norder_masters: true\nsyndic_wait: 2\nauto_accept: true\n");
    let c = crate::cluster::Cluster::start(
        2,
        &nats,
        &pg,
        &format!(
            "syndic_master: 127.0.0.1\nsyndic_master_port: {}\n",
            top.port
        ),
    );
    // One minion on each replica: the replica holding the link republishes through the
    // cluster's delivery and forwards the returns the other replica stores.
    let _c1 = c.replicas[0].minion("c1", "");
    let _c2 = c.replicas[1].minion("c2", "");
    c.replicas[0].wait_for("c1");
    c.replicas[1].wait_for("c2");
    let o = eventually(
        "the top reaches both minions of the cluster",
        Duration::from_secs(60),
        || {
            let o = top.saltq(&["*", "test.ping", "--out", "json", "--static", "-t", "5"]);
            (ids(&lenient(&o)) == ["c1", "c2"]).then_some(o)
        },
    );
    assert_eq!(o.code, 0, "{o:?}");
    let o = top.saltq(&["*", "test.echo", "up", "--async"]);
    let jid = jid_of(&o);
    eventually(
        "both returns stored at the top",
        Duration::from_secs(20),
        || {
            let o = top.saltq(&["run", "jobs.lookup_jid", &jid, "--out", "json"]);
            (lenient(&o) == json!({"c1": "up", "c2": "up"})).then_some(())
        },
    );
    // And in the cluster's shared job cache, read through either replica.
    for r in &c.replicas {
        let o = r.saltq(&["run", "jobs.lookup_jid", &jid, "--out", "json"]);
        assert_eq!(o.json(), json!({"c1": "up", "c2": "up"}), "{o:?}");
    }
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

/// Hot multi-master under syndics: a minion serving two lower masters of one top (each lower
/// master independent, its own CA) runs a job from the top once per master, as Salt's
/// `MultiMinion` does; each lower master stores its own return, and the top stores the
/// minion's return once (the second forwarded one is a duplicate), naming it once.
#[test]
fn a_minion_of_two_syndics_answers_the_top_once() {
    let top = Master::start("id: top\norder_masters: true\nsyndic_wait: 1\nauto_accept: true\n");
    let syndics = [lower(&top, "syn1"), lower(&top, "syn2")];
    let list: String = syndics
        .iter()
        .map(|s| format!("  - 127.0.0.1:{}\n", s.port))
        .collect();
    let _m = saltq_tests::Minion::start_at(&format!("master:\n{list}"), "hm1", "");
    for s in &syndics {
        s.wait_for("hm1");
    }
    eventually("the top reaches hm1", Duration::from_secs(40), || {
        let o = top.saltq(&["*", "test.ping", "--out", "json", "--static", "-t", "3"]);
        (lenient(&o) == json!({"hm1": true})).then_some(())
    });
    let o = top.saltq(&["*", "test.echo", "twice", "--async"]);
    assert_eq!(o.code, 0, "{o:?}");
    let jid = jid_of(&o);
    for s in &syndics {
        eventually(
            "each lower master stores its own run",
            Duration::from_secs(20),
            || {
                let o = s.saltq(&["run", "jobs.lookup_jid", &jid, "--out", "json"]);
                (lenient(&o) == json!({"hm1": "twice"})).then_some(())
            },
        );
    }
    let o = eventually("the top stores it", Duration::from_secs(20), || {
        let o = top.saltq(&["run", "jobs.list_job", &jid, "--out", "json"]);
        (ids(&o.json()["Result"]) == ["hm1"]).then_some(o)
    });
    assert_eq!(minions_of(&o.json()), ["hm1"], "{o:?}");
    assert_eq!(o.json()["Result"]["hm1"]["return"], "twice", "{o:?}");
    // The other syndic's copy reached the top too, and was dropped as a duplicate.
    eventually(
        "the second return is a duplicate at the top",
        Duration::from_secs(20),
        || {
            let t = std::fs::read_to_string(top.log()).unwrap_or_default();
            t.lines()
                .any(|l| l.contains("duplicate return dropped") && l.contains(&jid))
                .then_some(())
        },
    );
}
