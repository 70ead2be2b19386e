//! The Salt Mine end to end: two real minions with `mine_functions` send their mine to the
//! master when they first connect (Salt's `mine.update` on start); `mine.get` reads it from
//! the CLI, from a state's Jinja (an `/etc/hosts`-like file built from the mine), from the
//! `mine.get` and `cache.mine` runners; `allow_tgt` keeps an entry from a minion it does not
//! name; the mine is stored in the job cache (it survives a master restart) and goes with
//! the minion's key. `mine_functions` from pillar, the master's `mine_get` ACL and
//! `mine_return_job` (the start-up `mine.update` a job of its own, sent once).

use std::time::Duration;

use saltq_tests::{Master, eventually};
use serde_json::{Value, json};

/// Minion `mine-a`'s and `mine-b`'s `mine_functions`: an alias of `test.echo` giving each an
/// address of its own, `network.ip_addrs`, and on `mine-b` an entry only `mine-a` may read.
fn mine_config(ip: &str, acl: bool) -> String {
    let mut c = format!(
        "mine_functions:\n  network.ip_addrs: []\n  ip_alias:\n    - mine_function: test.echo\n    - {ip}\n"
    );
    if acl {
        c.push_str(
            "  secret:\n    - mine_function: test.echo\n    - s3cret\n    - allow_tgt: mine-a\n",
        );
    }
    c
}

/// `saltq -L <on> <fun> <args...>`: the minion's return.
fn call(master: &Master, on: &str, args: &[&str]) -> Value {
    let mut argv = vec!["-L", on];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--out", "json", "--static", "-t", "10"]);
    let o = master.saltq(&argv);
    assert_eq!(o.code, 0, "{argv:?}: {o:?}");
    o.json()[on].clone()
}

/// `saltq run <args...>`: the runner's return.
fn run(master: &Master, args: &[&str]) -> Value {
    let mut argv = vec!["run"];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--out", "json"]);
    let o = master.saltq(&argv);
    assert_eq!(o.code, 0, "{argv:?}: {o:?}");
    o.json()
}

#[test]
fn mine_is_shared_through_the_master_and_read_by_states_and_runners() {
    let mut master = Master::start_with(|dir| {
        let tree = dir.join("tree");
        std::fs::create_dir_all(&tree).unwrap();
        // The formula pattern the mine exists for: a hosts file of every minion's address.
        std::fs::write(
            tree.join("hosts.sls"),
            "{% set addrs = salt['mine.get']('mine-*', 'ip_alias') %}\n\
             hosts:\n  file.managed:\n    - name: {{ pillar['out'] }}\n    - contents: |\n\
             {%- for id, ip in addrs|dictsort %}\n        {{ ip }} {{ id }}\n{%- endfor %}\n",
        )
        .unwrap();
        format!(
            "auto_accept: true\nfile_roots:\n  base:\n    - {}\n",
            tree.display()
        )
    });
    let _a = master.minion("mine-a", &mine_config("10.0.0.1", false));
    let _b = master.minion("mine-b", &mine_config("10.0.0.2", true));
    master.wait_for("mine-a");
    master.wait_for("mine-b");

    // Both minions sent their mine on connecting; mine.get '*' from the CLI sees both.
    let got = eventually("both mines on the master", Duration::from_secs(30), || {
        let v = call(&master, "mine-a", &["mine.get", "*", "network.ip_addrs"]);
        (v.as_object().is_some_and(|m| m.len() == 2)).then_some(v)
    });
    for id in ["mine-a", "mine-b"] {
        assert!(got[id].is_array(), "{id}: {got}");
    }
    assert_eq!(
        call(&master, "mine-b", &["mine.get", "mine-*", "ip_alias"]),
        json!({"mine-a": "10.0.0.1", "mine-b": "10.0.0.2"})
    );
    // Several functions key by function; a compound target; exclude_minion.
    assert_eq!(
        call(
            &master,
            "mine-a",
            &[
                "mine.get",
                "mine-* and not mine-b",
                "ip_alias,nosuch",
                "compound"
            ]
        ),
        json!({"ip_alias": {"mine-a": "10.0.0.1"}})
    );
    assert_eq!(
        call(
            &master,
            "mine-a",
            &["mine.get", "*", "ip_alias", "exclude_minion=True"]
        ),
        json!({"mine-b": "10.0.0.2"})
    );
    assert_eq!(
        call(
            &master,
            "mine-a",
            &["mine.get", "mine-a,mine-b", "ip_alias", "list"]
        ),
        json!({"mine-a": "10.0.0.1", "mine-b": "10.0.0.2"})
    );

    // allow_tgt: mine-b's secret is for mine-a only.
    assert_eq!(
        call(&master, "mine-a", &["mine.get", "mine-b", "secret"]),
        json!({"mine-b": "s3cret"})
    );
    assert_eq!(
        call(&master, "mine-b", &["mine.get", "mine-b", "secret"]),
        json!({})
    );

    // A state whose Jinja reads the mine builds the hosts file.
    let out = master.dir.0.join("hosts");
    let pillar = format!("pillar={{\"out\": \"{}\"}}", out.display());
    let ret = call(&master, "mine-a", &["state.apply", "hosts", &pillar]);
    let states = ret.as_object().expect("state return");
    assert!(states.values().all(|s| s["result"] == json!(true)), "{ret}");
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "10.0.0.1 mine-a\n10.0.0.2 mine-b\n"
    );

    // The runners: mine.get as the master (the ACL'd entry names only mine-a), cache.mine raw.
    assert_eq!(
        run(&master, &["mine.get", "*", "ip_alias"]),
        json!({"mine-a": "10.0.0.1", "mine-b": "10.0.0.2"})
    );
    assert_eq!(run(&master, &["mine.get", "*", "secret"]), json!({}));
    let cached = run(&master, &["cache.mine", "tgt=mine-b"]);
    assert_eq!(
        cached["mine-b"]["secret"],
        json!({"__data__": "s3cret", "__saltmine_acl__": 1, "allow_tgt": "mine-a"})
    );

    // mine.send, mine.delete, mine.valid on a minion.
    assert_eq!(
        call(
            &master,
            "mine-b",
            &["mine.send", "sent", "mine_function=test.echo", "hi"]
        ),
        json!(true)
    );
    assert_eq!(
        run(&master, &["mine.get", "mine-b", "sent"]),
        json!({"mine-b": "hi"})
    );
    assert_eq!(
        call(&master, "mine-b", &["mine.delete", "sent"]),
        json!(true)
    );
    assert_eq!(run(&master, &["mine.get", "mine-b", "sent"]), json!({}));
    assert_eq!(
        call(&master, "mine-a", &["mine.valid"]),
        json!({"network.ip_addrs": [], "ip_alias": {"test.echo": ["10.0.0.1"]}})
    );

    // The mine is in the job cache: a restarted master still has it (the minions do not
    // send it again on reconnecting, only at their own start).
    master.restart();
    master.wait_for("mine-a");
    master.wait_for("mine-b");
    assert_eq!(
        run(&master, &["mine.get", "*", "ip_alias"]),
        json!({"mine-a": "10.0.0.1", "mine-b": "10.0.0.2"})
    );

    // mine.flush empties one minion's mine.
    assert_eq!(call(&master, "mine-a", &["mine.flush"]), json!(true));
    assert_eq!(
        run(&master, &["mine.get", "*", "ip_alias"]),
        json!({"mine-b": "10.0.0.2"})
    );

    // Deleting mine-b's key removes its mine: auto_accept lets the same process back in,
    // and it does not send its mine again until it restarts.
    let o = master.saltq(&["key", "-d", "mine-b", "-y"]);
    assert_eq!(o.code, 0, "{o:?}");
    master.wait_for("mine-b");
    assert_eq!(
        run(&master, &["cache.mine", "tgt=mine-b"]),
        json!({"mine-b": {}})
    );
}

#[test]
fn the_replicas_of_a_cluster_share_one_mine() {
    let Some((nats, pg)) = crate::cluster::servers() else {
        return;
    };
    let c = crate::cluster::Cluster::start(3, &nats, &pg, "");
    let _m0 = c.replicas[0].minion("cmine0", &mine_config("10.1.0.1", false));
    let _m2 = c.replicas[2].minion("cmine2", &mine_config("10.1.0.3", false));
    c.replicas[0].wait_for("cmine0");
    c.replicas[2].wait_for("cmine2");
    let both = json!({"cmine0": "10.1.0.1", "cmine2": "10.1.0.3"});
    // Every replica reads the mine the others stored, from the shared PostgreSQL.
    for r in &c.replicas {
        eventually(
            "the whole mine on every replica",
            Duration::from_secs(30),
            || (run(r, &["mine.get", "*", "ip_alias"]) == both).then_some(()),
        );
    }
    // A minion held by one replica reads the mine of a minion held by another.
    assert_eq!(
        call(
            &c.replicas[0],
            "cmine0",
            &["mine.get", "cmine2", "ip_alias"]
        ),
        json!({"cmine2": "10.1.0.3"})
    );
    // A key deleted on one replica takes its mine away for all of them.
    let o = c.replicas[1].saltq(&["key", "-d", "cmine2", "-y"]);
    assert_eq!(o.code, 0, "{o:?}");
    c.replicas[2].wait_for("cmine2");
    for r in &c.replicas {
        eventually(
            "the deleted minion's mine gone",
            Duration::from_secs(20),
            || {
                (run(r, &["mine.get", "*", "ip_alias"]) == json!({"cmine0": "10.1.0.1"}))
                    .then_some(())
            },
        );
    }
}

/// The jids of `mine.update` jobs the job cache holds for minion `id`.
fn mine_update_jobs(master: &Master, id: &str) -> Vec<String> {
    let jobs = run(master, &["jobs.list_jobs", "search_function=mine.update"]);
    let mut jids: Vec<String> = jobs
        .as_object()
        .expect("jobs.list_jobs answers a dict")
        .iter()
        .filter(|(_, j)| j["Target"] == json!(id))
        .map(|(jid, _)| jid.clone())
        .collect();
    jids.sort();
    jids
}

#[test]
fn mine_functions_from_pillar_the_masters_mine_get_acl_and_mine_return_job() {
    let master = Master::start_with(|dir| {
        let pillar = dir.join("pillar");
        std::fs::create_dir_all(&pillar).unwrap();
        std::fs::write(pillar.join("top.sls"), "base:\n  'mp-*':\n    - mine\n").unwrap();
        // Both minions' mine_functions come from pillar only; `guarded` is for mp-a only,
        // named by a compound allow_tgt.
        std::fs::write(
            pillar.join("mine.sls"),
            "mine_functions:\n  pillar_alias:\n    - mine_function: test.echo\n    - from-pillar\n\
             \x20 guarded:\n    - mine_function: test.echo\n    - g\n\
             \x20   - allow_tgt: 'mp-a or G@nosuch:grain'\n    - allow_tgt_type: compound\n",
        )
        .unwrap();
        // The master's mine_get: mp-a reads both, mp-b only `guarded`, the master nothing.
        format!(
            "auto_accept: true\npillar_roots:\n  base:\n    - {}\n\
             mine_get:\n  'mp-a':\n    - 'pillar_.*'\n    - guarded\n  'mp-b$':\n    - guarded\n",
            pillar.display()
        )
    });
    // mp-a returns its scheduled mine.update jobs (mine_return_job); mp-b does not (Salt's
    // default).
    let _a = master.minion("mp-a", "mine_return_job: true\n");
    let _b = master.minion("mp-b", "");
    master.wait_for("mp-a");
    master.wait_for("mp-b");

    // The start-up mine.update ran with the pillar the master sent on connecting.
    let both = json!({"mp-a": "from-pillar", "mp-b": "from-pillar"});
    eventually(
        "both pillar mines on the master",
        Duration::from_secs(30),
        || (call(&master, "mp-a", &["mine.get", "mp-*", "pillar_alias"]) == both).then_some(()),
    );
    // mine_get gives mp-b `guarded` only, and the master (the runner) nothing at all.
    assert_eq!(
        call(&master, "mp-b", &["mine.get", "mp-*", "pillar_alias"]),
        json!({})
    );
    assert_eq!(
        run(&master, &["mine.get", "mp-*", "pillar_alias"]),
        json!({})
    );
    // Asked for two, mp-b may read `guarded` only, and allow_tgt gives it to mp-a alone.
    assert_eq!(
        call(
            &master,
            "mp-b",
            &["mine.get", "mp-*", "pillar_alias,guarded"]
        ),
        json!({})
    );
    assert_eq!(
        call(
            &master,
            "mp-a",
            &["mine.get", "mp-*", "pillar_alias,guarded"]
        ),
        json!({"pillar_alias": {"mp-a": "from-pillar", "mp-b": "from-pillar"},
               "guarded": {"mp-a": "g", "mp-b": "g"}})
    );

    // mine_return_job: mp-a's start-up mine.update is in the job cache, once, and it
    // succeeded (it waited for the master instead of failing unconnected); mp-b's is not.
    let jids = eventually("mp-a's mine.update job", Duration::from_secs(30), || {
        let jids = mine_update_jobs(&master, "mp-a");
        (!jids.is_empty()).then_some(jids)
    });
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        mine_update_jobs(&master, "mp-a"),
        jids,
        "one mine.update at start"
    );
    assert_eq!(jids.len(), 1, "{jids:?}");
    assert_eq!(
        run(&master, &["jobs.lookup_jid", &jids[0]]),
        json!({"mp-a": true})
    );
    assert!(mine_update_jobs(&master, "mp-b").is_empty());
}
