//! Salt's `master_type: failover` on the minion: a list of masters used one at a time, the
//! next when the one in use is unreachable or lost. The cluster test runs three replicas on
//! the real nats-server and PostgreSQL (gated by `SALTQ_TEST_NATS` and `SALTQ_TEST_POSTGRES`).

use std::time::Duration;

use saltq_tests::{Master, Minion, eventually};

use crate::cluster::{Cluster, servers};

/// A UDP port nothing listens on (bound, then released).
fn dead_port() -> u16 {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind a udp port");
    s.local_addr().expect("local address").port()
}

/// The `master:` list and `master_type: failover`, as config lines.
fn failover_to(masters: &[String]) -> String {
    let list: String = masters.iter().map(|m| format!("  - {m}\n")).collect();
    format!("master:\n{list}master_type: failover")
}

fn log_of(m: &Minion) -> String {
    std::fs::read_to_string(m.log()).unwrap_or_default()
}

/// A name that does not resolve and a port nobody answers on are skipped, in order, for the
/// live master after them.
#[test]
fn a_failover_minion_skips_masters_it_cannot_reach() {
    let master = Master::start("auto_accept: true");
    let nowhere = "saltq-e2e-nowhere.invalid:4506".to_owned();
    let dead = format!("127.0.0.1:{}", dead_port());
    let live = format!("127.0.0.1:{}", master.port);
    let m = Minion::start_at(
        &failover_to(&[nowhere.clone(), dead.clone(), live.clone()]),
        "fo1",
        "",
    );
    master.wait_for("fo1");
    let log = log_of(&m);
    for said in [
        format!("master {nowhere} unreachable, trying {dead}"),
        format!("master {dead} unreachable, trying {live}"),
        format!("connected to master {live} over quic"),
    ] {
        assert!(log.contains(&said), "minion log lacks {said:?}:\n{log}");
    }
}

/// A minion listing three replicas uses the first; when that one is killed it answers through
/// the next within seconds, and the job it was running has its return stored.
#[test]
fn a_minion_fails_over_to_the_next_replica_and_keeps_its_returns() {
    let Some((nats, pg)) = servers() else { return };
    let mut c = Cluster::start(3, &nats, &pg, "");
    let at: Vec<String> = c
        .replicas
        .iter()
        .map(|r| format!("127.0.0.1:{}", r.port))
        .collect();
    let m = Minion::start_at(&failover_to(&at), "fo2", "");
    c.replicas[0].wait_for("fo2");
    let log = log_of(&m);
    assert!(
        log.contains(&format!("connected to master {} over quic", at[0])),
        "{log}"
    );
    assert!(!log.contains("unreachable, trying"), "{log}");

    // A job published through the replica about to die, running on the minion when it dies.
    let o = c.replicas[0].saltq(&["-L", "fo2", "test.sleep", "6", "--async"]);
    assert_eq!(o.code, 0, "{o:?}");
    let jid = o.stdout.trim().rsplit(' ').next().unwrap().to_owned();
    eventually("the job runs on fo2", Duration::from_secs(10), || {
        let o = c.replicas[1].saltq(&[
            "-L",
            "fo2",
            "saltutil.running",
            "--out",
            "json",
            "-t",
            "3",
            "--static",
        ]);
        o.stdout.contains(&jid).then_some(())
    });
    c.replicas[0].kill();

    // The QUIC idle timeout (3 s here) notices; the next replica is dialed at once.
    eventually(
        "fo2 connected to the second replica",
        Duration::from_secs(15),
        || {
            log_of(&m)
                .contains(&format!("connected to master {} over quic", at[1]))
                .then_some(())
        },
    );
    let log = log_of(&m);
    assert!(
        log.contains(&format!("master {} lost, trying {}", at[0], at[1])),
        "{log}"
    );
    c.replicas[2].wait_for("fo2");

    // The return, unacknowledged when the replica died, went to the next one.
    eventually(
        "the job's return stored in the cluster",
        Duration::from_secs(30),
        || {
            let o = c.replicas[2].saltq(&["jobs", "lookup", &jid, "--out", "json"]);
            (o.code == 0 && o.json() == serde_json::json!({"fo2": true})).then_some(())
        },
    );
}

/// A master listed twice is refused at start, naming the key (several masters without
/// failover are Salt's multi-master, linked all at once: `multimaster.rs`).
#[test]
fn a_master_listed_twice_is_refused_naming_master() {
    let (code, err) = saltq_tests::refused_start(
        "saltq-minion",
        "minion",
        "id: fo3\nmaster:\n  - 127.0.0.1:4506\n  - 127.0.0.1:4507\n  - 127.0.0.1:4506\n",
    );
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("key \"master\"")
            && err.contains("127.0.0.1:4506 is listed twice (as master 1 and 3)"),
        "{err}"
    );
}
