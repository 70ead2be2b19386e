//! A master cluster (`cluster_id`): replicas on the real nats-server and PostgreSQL of this
//! machine. Gated by `SALTQ_TEST_NATS` (a NATS URL, set by scripts/test and CI when a server
//! answers) and `SALTQ_TEST_POSTGRES`.

use std::io::Read;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use saltq_tests::{Master, PrivatePostgres, Scratch, bin, eventually};

/// The NATS URL and PostgreSQL string, or `None` after saying why the test is skipped.
pub(crate) fn servers() -> Option<(String, String)> {
    let nats = std::env::var("SALTQ_TEST_NATS").ok();
    let pg = std::env::var("SALTQ_TEST_POSTGRES").ok();
    match (nats, pg) {
        (Some(n), Some(p)) => Some((n, p)),
        _ => {
            eprintln!("skipped: needs SALTQ_TEST_NATS (a nats-server URL) and SALTQ_TEST_POSTGRES");
            None
        }
    }
}

/// A cluster of replicas sharing one PKI folder, one PostgreSQL schema and one NATS (also
/// used by `failover.rs`).
pub(crate) struct Cluster {
    /// The replicas, in start order.
    pub(crate) replicas: Vec<Master>,
    _pki: Scratch,
    pg: String,
    schema: String,
}

impl Cluster {
    /// Starts `n` replicas at once (they race to create the shared PKI), with `extra` config.
    pub(crate) fn start(n: usize, nats: &str, pg: &str, extra: &str) -> Cluster {
        let pki = Scratch::new("cluster-pki");
        let schema = format!("saltq_e2e_cluster_{}_{}", std::process::id(), rand_suffix());
        let cluster_id = format!("e2e-{schema}").replace('_', "-");
        let accept = if extra.contains("auto_accept") {
            ""
        } else {
            "auto_accept: true\n"
        };
        let cfg = format!(
            "{accept}job_cache: postgres\njob_cache_postgres: '{pg}'\n\
             job_cache_postgres_schema: {schema}\ncluster_id: {cluster_id}\n\
             cluster_nats: '{nats}'\ncluster_pki_dir: {}\n{extra}\n",
            pki.0.join("shared").display()
        );
        let replicas = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|i| {
                    let cfg = format!("id: replica{i}\n{cfg}");
                    s.spawn(move || Master::start(&cfg))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        Cluster {
            replicas,
            _pki: pki,
            pg: pg.to_owned(),
            schema,
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for r in &mut self.replicas {
            r.stop();
        }
        let _ = Command::new("psql")
            .arg(&self.pg)
            .arg("-c")
            .arg(format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema))
            .output();
    }
}

fn rand_suffix() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    t.subsec_nanos()
}

/// Reads an event watcher's `tag<TAB>json` lines until it exits or `deadline` passes (then it
/// is killed).
fn lines_of(mut child: Child, deadline: Duration) -> Vec<(String, serde_json::Value)> {
    let start = Instant::now();
    while start.elapsed() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    let mut text = String::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut text)
        .expect("watcher output");
    text.lines()
        .map(|l| {
            let (t, d) = l.split_once('\t').expect("tag<TAB>json");
            (t.to_owned(), serde_json::from_str(d).expect("json"))
        })
        .collect()
}

/// Runs saltq-master with `config` (after a loopback listener setup) until it exits; its exit
/// code and stderr.
fn refused(config: &str) -> (i32, String) {
    saltq_tests::refused_start(
        "saltq-master",
        "master",
        &format!("interface: 127.0.0.1\nport: 0\nhttp_enabled: false\n{config}"),
    )
}

/// Cluster mode without its parts, or with a NATS nobody answers on, is refused at start,
/// naming the key.
#[test]
fn a_cluster_without_its_parts_is_refused_naming_the_key() {
    let (code, err) = refused("cluster_id: prod\ncluster_nats: nats://127.0.0.1:4222\n");
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("key \"job_cache\": cluster_id requires job_cache: postgres"),
        "{err}"
    );
    let (code, err) = refused(
        "job_cache: postgres\njob_cache_postgres: 'host=127.0.0.1'\ncluster_id: prod\ncluster_pki_dir: /nonexistent\n",
    );
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("key \"cluster_nats\": required with cluster_id"),
        "{err}"
    );
    let Some((_, pg)) = servers() else { return };
    let (code, err) = refused(&format!(
        "job_cache: postgres\njob_cache_postgres: '{pg}'\njob_cache_postgres_schema: saltq_e2e_nonats_{}\n\
         cluster_id: prod\ncluster_nats: nats://127.0.0.1:1\ncluster_pki_dir: /tmp/saltq-e2e-unused-{}\n",
        std::process::id(),
        std::process::id()
    ));
    assert_eq!(code, 69, "{err}");
    assert!(
        err.contains("key cluster_nats")
            && err.contains("cannot connect to NATS at nats://127.0.0.1:1"),
        "{err}"
    );
    let _ = Command::new("psql")
        .arg(&pg)
        .arg("-c")
        .arg(format!(
            "DROP SCHEMA IF EXISTS saltq_e2e_nonats_{} CASCADE",
            std::process::id()
        ))
        .output();
}

/// Three replicas started at once share one CA; each one's bus carries every replica's
/// events, each once, including the minion events of a minion connected elsewhere.
#[test]
fn replicas_share_one_pki_and_every_event() {
    let Some((nats, pg)) = servers() else { return };
    let c = Cluster::start(3, &nats, &pg, "");
    // One CA for all: each replica's CLI (reading cluster_pki_dir) is admitted by every other.
    for r in &c.replicas {
        let o = r.saltq(&["key", "-L", "--out", "json"]);
        assert_eq!(o.code, 0, "{o:?}");
    }
    let (a, b, z) = (&c.replicas[0], &c.replicas[1], &c.replicas[2]);
    let on_b = b.watch_events("e2e/probe/*", 2);
    let on_z = z.watch_events("e2e/probe/*", 2);
    assert_eq!(
        a.saltq(&["run", "event.send", "e2e/probe/1", "data={n: 1}"])
            .code,
        0
    );
    assert_eq!(
        z.saltq(&["run", "event.send", "e2e/probe/2", "data={n: 2}"])
            .code,
        0
    );
    for seen in [
        lines_of(on_b, Duration::from_secs(15)),
        lines_of(on_z, Duration::from_secs(15)),
    ] {
        let tags: Vec<&str> = seen.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(tags, ["e2e/probe/1", "e2e/probe/2"], "{seen:?}");
        assert_eq!(seen[0].1["n"], 1);
    }

    // A minion of replica a announces itself on z's bus.
    let on_z = z.watch_events("salt/minion/*/start", 1);
    let _m = a.minion("cm1", "");
    let seen = lines_of(on_z, Duration::from_secs(30));
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].0, "salt/minion/cm1/start");
    assert_eq!(seen[0].1["id"], "cm1");
}

/// The reactor runs on the one replica holding the duties: an event fired on any replica is
/// reacted to once; when that replica stops, another takes over.
#[test]
fn the_reactor_reacts_once_in_the_cluster_and_moves_when_its_replica_stops() {
    let Some((nats, pg)) = servers() else { return };
    let reactions = Scratch::new("cluster-reactor");
    let sls = reactions.0.join("react.sls");
    std::fs::write(
        &sls,
        "reacted:\n  runner.event.send:\n    - tag: e2e/reacted\n    - data:\n        to: {{ data['n'] }}\n",
    )
    .unwrap();
    let extra = format!("reactor:\n  - 'e2e/react':\n    - {}\n", sls.display());
    let mut c = Cluster::start(3, &nats, &pg, &extra);
    let holder = |c: &Cluster| {
        eventually(
            "a replica holds the duties",
            Duration::from_secs(20),
            || {
                let held: Vec<usize> = c
                    .replicas
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| {
                        std::fs::read_to_string(r.log())
                            .unwrap_or_default()
                            .contains("holds the cluster's single-runner duties")
                    })
                    .map(|(i, _)| i)
                    .collect();
                (!held.is_empty()).then_some(held)
            },
        )
    };
    let held = holder(&c);
    assert_eq!(
        held.len(),
        1,
        "exactly one replica holds the duties: {held:?}"
    );
    let leader = held[0];
    let others: Vec<usize> = (0..3).filter(|i| *i != leader).collect();

    // Fired on a replica that does not hold the duties, watched on the third.
    let watch = c.replicas[others[1]].watch_all_events("e2e/reacted");
    assert_eq!(
        c.replicas[others[0]]
            .saltq(&["run", "event.send", "e2e/react", "data={n: 1}"])
            .code,
        0
    );
    // A duplicate reaction would follow within milliseconds; two seconds is ample.
    let seen = lines_of(watch, Duration::from_secs(3));
    assert_eq!(seen.len(), 1, "one reaction in the cluster: {seen:?}");
    assert_eq!(seen[0].1["to"], 1);

    // The holder stops; another replica takes the duties and reacts.
    c.replicas[leader].stop();
    let next = eventually(
        "another replica holds the duties",
        Duration::from_secs(20),
        || {
            let held: Vec<usize> = others
                .iter()
                .copied()
                .filter(|i| {
                    std::fs::read_to_string(c.replicas[*i].log())
                        .unwrap_or_default()
                        .contains("holds the cluster's single-runner duties")
                })
                .collect();
            (held.len() == 1).then(|| held[0])
        },
    );
    let other = *others.iter().find(|i| **i != next).unwrap();
    let watch = c.replicas[next].watch_all_events("e2e/reacted");
    assert_eq!(
        c.replicas[other]
            .saltq(&["run", "event.send", "e2e/react", "data={n: 2}"])
            .code,
        0
    );
    let seen = lines_of(watch, Duration::from_secs(3));
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].1["to"], 2);
}

/// Three replicas are one master: minions spread over them all answer a job published on any
/// one, find_job follows a long job across replicas, and the key set is one.
#[test]
fn a_job_published_on_any_replica_reaches_the_minions_of_every_replica() {
    let Some((nats, pg)) = servers() else { return };
    let c = Cluster::start(3, &nats, &pg, "");
    let _m: Vec<_> = (0..3)
        .map(|i| c.replicas[i].minion(&format!("cm{i}"), ""))
        .collect();
    for i in 0..3 {
        c.replicas[i].wait_for(&format!("cm{i}"));
    }
    // Each replica reaches the whole fleet, exactly once per minion.
    for r in &c.replicas {
        let o = eventually(
            "every minion answers through this replica",
            Duration::from_secs(20),
            || {
                let o = r.saltq(&["*", "test.ping", "--out", "json", "--static", "-t", "3"]);
                (o.code == 0).then_some(o)
            },
        );
        assert_eq!(
            o.json(),
            serde_json::json!({"cm0": true, "cm1": true, "cm2": true}),
            "{o:?}"
        );
    }
    // The keys accepted on each replica are the cluster's, and the runners see every minion.
    let o = c.replicas[1].saltq(&["key", "-L", "--out", "json"]);
    assert_eq!(
        o.json()["minions"],
        serde_json::json!(["cm0", "cm1", "cm2"]),
        "{o:?}"
    );
    let o = c.replicas[2].saltq(&["run", "manage.status", "--out", "json"]);
    assert_eq!(
        o.json(),
        serde_json::json!({"up": ["cm0", "cm1", "cm2"], "down": []}),
        "{o:?}"
    );

    // find_job across replicas keeps a long job alive past the timeout.
    let start = Instant::now();
    let o = c.replicas[0].saltq(&[
        "-L",
        "cm2",
        "test.sleep",
        "3",
        "-t",
        "1",
        "--gather-job-timeout",
        "2",
    ]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "cm2:\n    True\n"),
        "{o:?}"
    );
    assert!(start.elapsed() >= Duration::from_secs(3));

    // The job is in the cache every replica reads, with every return.
    let o = c.replicas[2].saltq(&["*", "test.echo", "shared", "--async"]);
    let jid = o.stdout.trim().rsplit(' ').next().unwrap().to_owned();
    eventually("all returns stored", Duration::from_secs(15), || {
        let o = c.replicas[1].saltq(&["jobs", "lookup", &jid, "--out", "json"]);
        (o.json() == serde_json::json!({"cm0": "shared", "cm1": "shared", "cm2": "shared"}))
            .then_some(())
    });

    // Each replica's metrics: its own share, the cluster's replicas, cluster-wide job counts.
    let http = c.replicas[1].http.clone().expect("http port");
    assert_eq!(
        crate::ops::get(&http, "/readyz"),
        (200, "ready\n".to_owned())
    );
    let (code, body) = crate::ops::get(&http, "/metrics");
    assert_eq!(code, 200);
    assert!(body.contains("saltq_cluster_replicas 3"), "{body}");
    assert!(
        body.contains("saltq_minions{state=\"connected\"} 3"),
        "{body}"
    );
    let line = |name: &str| -> u64 {
        body.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {body}"))
    };
    assert_eq!(
        line("saltq_replica_minions_connected{replica=\"replica1-"),
        1
    );
    // Jobs published on replicas 0 and 2 count here too.
    assert!(line("saltq_cluster_jobs_published_total") >= 6, "{body}");
}

/// A key deleted on one replica closes the minion's connection on another, and the minion
/// comes back as pending everywhere; a replica that stops takes its minions with it and a job
/// reports them not connected.
#[test]
fn keys_and_disconnects_are_seen_by_every_replica() {
    let Some((nats, pg)) = servers() else { return };
    let mut c = Cluster::start(3, &nats, &pg, "");
    let _m: Vec<_> = (0..3)
        .map(|i| c.replicas[i].minion(&format!("ck{i}"), ""))
        .collect();
    for i in 0..3 {
        c.replicas[i].wait_for(&format!("ck{i}"));
    }
    // auto_accept is on, so the deleted key comes straight back: as accepted, through a new
    // subscription. The point is the old connection, on another replica, is closed at once.
    let o = c.replicas[0].saltq(&["key", "-d", "ck2", "-y"]);
    assert_eq!(o.code, 0, "{o:?}");
    eventually(
        "ck2's subscription on replica 2 closed",
        Duration::from_secs(15),
        || {
            std::fs::read_to_string(c.replicas[2].log())
                .unwrap_or_default()
                .contains("key no longer accepted, subscription closed")
                .then_some(())
        },
    );
    // It comes back (auto_accept), reachable from another replica.
    c.replicas[1].wait_for("ck2");

    // Replica 1 stops: ck1 is not connected anywhere, and a job says so.
    c.replicas[1].stop();
    let o = eventually(
        "ck1 reported not connected",
        Duration::from_secs(20),
        || {
            let o =
                c.replicas[0].saltq(&["*", "test.ping", "-t", "2", "--gather-job-timeout", "1"]);
            o.stdout
                .contains("ck1:\n    Minion did not return. [Not connected]")
                .then_some(o)
        },
    );
    assert!(o.stdout.contains("ck0:\n    True"), "{o:?}");
    assert!(o.stdout.contains("ck2:\n    True"), "{o:?}");
    assert_eq!(o.code, 1, "{o:?}");
}

/// A nats-server of this test's own, so stopping it disturbs no other test.
struct PrivateNats {
    bin: &'static str,
    child: Option<Child>,
    port: u16,
    dir: Scratch,
    extra: Vec<String>,
}

impl PrivateNats {
    fn start() -> Option<PrivateNats> {
        PrivateNats::start_with(&[])
    }

    /// A server started with extra flags (TLS).
    fn start_with(extra: &[&str]) -> Option<PrivateNats> {
        let bin = ["/usr/sbin/nats-server", "/usr/bin/nats-server"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())?;
        let mut n = PrivateNats {
            bin,
            child: None,
            port: crate::ops::free_port(),
            dir: Scratch::new("nats"),
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        };
        n.launch();
        Some(n)
    }

    /// Starts the server (again) on its port.
    fn launch(&mut self) {
        let child = Command::new(self.bin)
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string(), "-l"])
            .arg(self.dir.0.join("nats.log"))
            .args(&self.extra)
            .spawn()
            .expect("nats-server");
        self.child = Some(child);
        let addr = format!("127.0.0.1:{}", self.port);
        eventually("nats-server listening", Duration::from_secs(10), || {
            std::net::TcpStream::connect(&addr).ok().map(|_| ())
        });
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for PrivateNats {
    fn drop(&mut self) {
        self.kill();
    }
}

/// NATS goes away and comes back: each replica keeps serving its own minions, a job published
/// meanwhile names the minions it could not reach, and the cluster heals without a restart.
#[test]
fn a_nats_outage_names_the_minions_it_cut_off_and_heals() {
    let Some((_, pg)) = servers() else { return };
    let Some(mut nats) = PrivateNats::start() else {
        eprintln!("skipped: no nats-server binary to run a private server");
        return;
    };
    let c = Cluster::start(2, &nats.url(), &pg, "");
    let _m: Vec<_> = (0..2)
        .map(|i| c.replicas[i].minion(&format!("co{i}"), ""))
        .collect();
    for i in 0..2 {
        c.replicas[i].wait_for(&format!("co{i}"));
    }
    let both = serde_json::json!({"co0": true, "co1": true});
    let ping = |r: &Master| r.saltq(&["*", "test.ping", "--out", "json", "--static", "-t", "3"]);
    eventually(
        "both minions through replica 0",
        Duration::from_secs(20),
        || (ping(&c.replicas[0]).json() == both).then_some(()),
    );

    nats.kill();
    let o = c.replicas[0].saltq(&["*", "test.ping", "-t", "2", "--gather-job-timeout", "1"]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(o.stdout.contains("co0:\n    True"), "{o:?}");
    assert!(
        o.stdout
            .contains("co1:\n    Minion did not return. [Its master replica could not be reached]"),
        "{o:?}"
    );

    nats.launch();
    eventually("the cluster heals", Duration::from_secs(40), || {
        (ping(&c.replicas[0]).json() == both && ping(&c.replicas[1]).json() == both).then_some(())
    });
}

/// Without auto_accept: a new minion's key is pending on every replica; two replicas accepting
/// it at once leave one accepted key everywhere, and the minion (connected to a third) is in.
#[test]
fn a_key_accepted_on_two_replicas_at_once_is_accepted_once_everywhere() {
    let Some((nats, pg)) = servers() else { return };
    let c = Cluster::start(3, &nats, &pg, "auto_accept: false");
    let _m = c.replicas[2].minion("kr", "");
    for r in &c.replicas {
        eventually(
            "kr pending on every replica",
            Duration::from_secs(20),
            || {
                let o = r.saltq(&["key", "-l", "pre", "--out", "json"]);
                o.stdout.contains("\"kr\"").then_some(())
            },
        );
    }
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| c.replicas[0].saltq(&["key", "-a", "kr", "-y"]));
        let b = s.spawn(|| c.replicas[1].saltq(&["key", "-a", "kr", "-y"]));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!((a.code, b.code), (0, 0), "{a:?}\n{b:?}");
    for r in &c.replicas {
        eventually(
            "kr accepted, and only accepted",
            Duration::from_secs(20),
            || {
                let v = r.saltq(&["key", "-L", "--out", "json"]).json();
                (v["minions"] == serde_json::json!(["kr"])
                    && v["minions_pre"] == serde_json::json!([]))
                .then_some(())
            },
        );
    }
    // The minion waits acceptance_wait_time (10 s by default) before it asks again.
    c.replicas[0].wait_for("kr");
}

/// `event_return` on every replica returns each event of the cluster once: only the replica
/// holding the single-runner duties feeds its returners, and its bus carries every replica's
/// events.
#[test]
fn event_returners_return_each_event_of_the_cluster_once() {
    let Some((nats, pg)) = servers() else { return };
    let out = Scratch::new("cluster-event-return");
    let file = out.0.join("events.json");
    let extra = format!(
        "event_return: rawfile_json\nevent_return_whitelist: ['e2e/once/*']\n\
         rawfile_json.filename: {}\n",
        file.display()
    );
    let c = Cluster::start(3, &nats, &pg, &extra);
    eventually(
        "a replica holds the duties",
        Duration::from_secs(20),
        || {
            c.replicas
                .iter()
                .any(|r| {
                    std::fs::read_to_string(r.log())
                        .unwrap_or_default()
                        .contains("holds the cluster's single-runner duties")
                })
                .then_some(())
        },
    );
    for (i, r) in c.replicas.iter().enumerate() {
        let tag = format!("e2e/once/{i}");
        assert_eq!(r.saltq(&["run", "event.send", &tag]).code, 0);
    }
    let tags = || -> Vec<String> {
        std::fs::read_to_string(&file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["tag"].as_str().map(str::to_owned))
            .collect()
    };
    eventually("every event returned", Duration::from_secs(15), || {
        (tags().len() >= 3).then_some(())
    });
    // A second copy would be written within milliseconds of the first.
    std::thread::sleep(Duration::from_secs(1));
    let mut got = tags();
    got.sort();
    assert_eq!(got, ["e2e/once/0", "e2e/once/1", "e2e/once/2"]);
}

/// A replica killed while a `saltq` call waits on it: the caller is told the master went away,
/// with a non-zero exit, and the job still ends with its return stored through the replica of
/// the minion.
#[test]
fn the_caller_of_a_killed_replica_is_told_so() {
    let Some((nats, pg)) = servers() else { return };
    let mut c = Cluster::start(2, &nats, &pg, "");
    let _m = c.replicas[1].minion("cx1", "");
    c.replicas[1].wait_for("cx1");
    // The caller waits on replica 0 for a job running on a minion of replica 1.
    let published = c.replicas[0].watch_events("salt/job/*/new", 1);
    let call = Command::new(bin("saltq"))
        .arg("-c")
        .arg(c.replicas[0].cli_dir())
        .args(["cx1", "test.sleep", "4", "-t", "10", "--show-jid"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("saltq");
    let seen = lines_of(published, Duration::from_secs(10));
    let jid = seen
        .first()
        .and_then(|(tag, _)| tag.split('/').nth(2))
        .expect("the job's new event")
        .to_owned();
    c.replicas[0].kill();
    let out = call.wait_with_output().expect("saltq");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(69), "{stderr}");
    assert!(stderr.contains("lost the master at 127.0.0.1:"), "{stderr}");
    assert!(
        stderr.contains(&format!("saltq run jobs.lookup_jid {jid}")),
        "{stderr}"
    );
    // The minion's return is stored through its own replica, and the job is complete there.
    let o = eventually("cx1's return stored", Duration::from_secs(20), || {
        let o = c.replicas[1].saltq(&["jobs", "lookup", &jid, "--out", "json"]);
        (o.json() == serde_json::json!({"cx1": true})).then_some(o)
    });
    assert_eq!(o.code, 0);
}

/// PostgreSQL restarted under a cluster: publishes fail meanwhile with an error naming the
/// job cache, the return of a job that ends meanwhile is kept by the minion and stored once
/// the database is back, and the cluster goes on without a restart.
#[test]
fn a_postgres_restart_loses_no_return() {
    let Some((nats, _)) = servers() else { return };
    let Some(pg) = PrivatePostgres::start() else {
        eprintln!("skipped: cannot run a private PostgreSQL (initdb as the postgres user)");
        return;
    };
    let c = Cluster::start(2, &nats, &pg.url(), "");
    let _m = c.replicas[1].minion("cp1", "");
    c.replicas[1].wait_for("cp1");
    let o = c.replicas[0].saltq(&["cp1", "test.sleep", "3", "--async"]);
    assert_eq!(o.code, 0, "{o:?}");
    let jid = o.stdout.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(pg.down("fast"), "pg_ctl stop");
    let o = c.replicas[0].saltq(&["cp1", "test.ping"]);
    assert_eq!(o.code, 69, "{o:?}");
    assert!(o.stderr.contains("job cache"), "{o:?}");
    // The job ends while the database is down; its return waits on the minion.
    std::thread::sleep(Duration::from_secs(4));
    assert!(pg.up(), "pg_ctl start");
    eventually(
        "the return stored once the database is back",
        Duration::from_secs(30),
        || {
            let o = c.replicas[0].saltq(&["jobs", "lookup", &jid, "--out", "json"]);
            (o.json() == serde_json::json!({"cp1": true})).then_some(())
        },
    );
    eventually("publishing works again", Duration::from_secs(30), || {
        let o = c.replicas[0].saltq(&["cp1", "test.ping", "--out", "json", "--static"]);
        (o.json() == serde_json::json!({"cp1": true})).then_some(())
    });
}

/// `cluster_nats` over TLS: replicas verify the NATS server with `cluster_nats_ca_file` and
/// work as a cluster; a replica given another CA is refused at start, naming `cluster_nats`.
#[test]
fn replicas_reach_nats_over_tls_and_refuse_a_server_they_do_not_trust() {
    use saltq_transport::pki::{Ca, CertRole, IssueRequest, write_private, write_public};
    let Some((_, pg)) = servers() else { return };
    let certs = Scratch::new("nats-tls");
    let ca = Ca::create(
        "nats test CA",
        &certs.0.join("ca.crt"),
        &certs.0.join("ca.key"),
    )
    .expect("CA");
    let (cert, key) = ca
        .issue(&IssueRequest {
            common_name: "nats".into(),
            role: CertRole::Server,
            dns_names: vec!["localhost".into()],
            ips: vec![[127, 0, 0, 1].into()],
            days: 1,
        })
        .expect("server certificate");
    write_public(&certs.0.join("nats.crt"), &cert).unwrap();
    write_private(&certs.0.join("nats.key"), &key).unwrap();
    let other = Ca::create(
        "another CA",
        &certs.0.join("other.crt"),
        &certs.0.join("other.key"),
    )
    .expect("CA");
    drop(other);
    let (tlscert, tlskey) = (certs.0.join("nats.crt"), certs.0.join("nats.key"));
    let Some(nats) = PrivateNats::start_with(&[
        "--tls",
        "--tlscert",
        tlscert.to_str().unwrap(),
        "--tlskey",
        tlskey.to_str().unwrap(),
    ]) else {
        eprintln!("skipped: no nats-server binary to run a private server");
        return;
    };
    let url = format!("tls://127.0.0.1:{}", nats.port);
    let extra = format!(
        "cluster_nats_ca_file: {}\n",
        certs.0.join("ca.crt").display()
    );
    let c = Cluster::start(2, &url, &pg, &extra);
    let _m = c.replicas[1].minion("ct1", "");
    c.replicas[1].wait_for("ct1");
    eventually(
        "ct1 through the other replica",
        Duration::from_secs(20),
        || {
            let o = c.replicas[0].saltq(&["ct1", "test.ping", "--out", "json", "--static"]);
            (o.json() == serde_json::json!({"ct1": true})).then_some(())
        },
    );
    let (code, err) = refused(&format!(
        "job_cache: postgres\njob_cache_postgres: '{pg}'\njob_cache_postgres_schema: saltq_e2e_tls_{}\n\
         cluster_id: tls\ncluster_nats: '{url}'\ncluster_nats_ca_file: {}\n\
         cluster_pki_dir: {}\n",
        std::process::id(),
        certs.0.join("other.crt").display(),
        certs.0.join("pki").display(),
    ));
    assert_eq!(code, 69, "{err}");
    assert!(
        err.contains("key cluster_nats") && err.contains("cannot connect to NATS"),
        "{err}"
    );
    let _ = Command::new("psql")
        .arg(&pg)
        .arg("-c")
        .arg(format!(
            "DROP SCHEMA IF EXISTS saltq_e2e_tls_{} CASCADE",
            std::process::id()
        ))
        .output();
}
