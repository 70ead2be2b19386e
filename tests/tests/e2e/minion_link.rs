//! The minion's link to its master, seen from outside: every way a minion stops ends the
//! jobs it is running (also while its key is pending or the master is away), and the
//! outputter a function asks for travels with its return to the master and the CLI.

use std::time::Duration;

use saltq_proto::v1::{self as pb, job_service_client::JobServiceClient, run_response::Kind};
use saltq_tests::{Master, Minion, eventually};
use saltq_transport::pki::{CertKey, load_certs};
use saltq_transport::tls::ServerTrust;
use saltq_transport::{ConnectOptions, Limits, TransportKind, connect};

fn pid_alive(pid: i64) -> bool {
    // A zombie (killed, not yet reaped by its parent) counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

/// Starts a job on `m` that runs a long `sleep` and returns the sleep's pid.
fn start_sleeper(master: &Master, m: &Minion) -> i64 {
    let marker = master.dir.0.join(format!("{}.pid", m.id));
    let cmd = format!("sleep 300 & echo $! > {}; wait", marker.display());
    let o = master.saltq(&["-L", &m.id, "cmd.run", &cmd, "python_shell=True", "--async"]);
    assert_eq!(o.code, 0, "{o:?}");
    let pid = eventually("the job's child pid", Duration::from_secs(10), || {
        std::fs::read_to_string(&marker).ok()?.trim().parse().ok()
    });
    assert!(pid_alive(pid));
    pid
}

/// Stops the minion (SIGTERM) and checks that the job's command went with it.
fn stop_and_check_killed(m: &mut Minion, pid: i64, state: &str) {
    m.stop();
    let killed = !pid_alive(pid);
    // Leave no sleeper behind whatever the outcome.
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
    assert!(
        killed,
        "the job's command outlived a minion stopped while {state}"
    );
}

#[test]
fn stopping_while_the_key_is_pending_kills_running_jobs() {
    let mut master = Master::start("");
    let mut m = master.minion("lp1", "");
    master.accept_and_wait("lp1");
    let pid = start_sleeper(&master, &m);
    let told = |m: &Minion| {
        let log = std::fs::read_to_string(m.log()).unwrap_or_default();
        log.matches("pending acceptance").count()
    };
    let before = told(&m);
    // Forget the accepted key while the master is down: on its return the key is pending.
    master.stop();
    std::fs::remove_file(master.pki_dir().join("minions/lp1")).expect("accepted key file");
    master.restart();
    eventually("lp1 pending again", Duration::from_secs(20), || {
        let o = master.saltq(&["key", "-l", "pre", "--out", "json"]);
        o.stdout.contains("\"lp1\"").then_some(())
    });
    eventually(
        "the minion was told its key is pending",
        Duration::from_secs(10),
        || (told(&m) > before).then_some(()),
    );
    stop_and_check_killed(&mut m, pid, "its key was pending");
}

#[test]
fn stopping_while_disconnected_kills_running_jobs() {
    let mut master = Master::start("auto_accept: true");
    let mut m = master.minion("ld1", "");
    master.wait_for("ld1");
    let pid = start_sleeper(&master, &m);
    master.stop();
    eventually("the minion noticed", Duration::from_secs(20), || {
        let log = std::fs::read_to_string(m.log()).ok()?;
        log.contains("lost the master").then_some(())
    });
    stop_and_check_killed(&mut m, pid, "disconnected");
}

#[tokio::test]
async fn a_functions_outputter_travels_with_its_return() {
    let master = Master::start("auto_accept: true");
    let _m = master.minion("lo1", "");
    master.wait_for("lo1");
    let pki = master.pki_dir();
    let opts = ConnectOptions {
        ipv6: None,
        host: "127.0.0.1".into(),
        port: master.port,
        transport: TransportKind::Quic,
        identity: CertKey::load(&pki.join("admin.crt"), &pki.join("admin.key")).expect("admin"),
        trust: ServerTrust::Ca(load_certs(&pki.join("ca.crt")).expect("ca")),
        limits: Limits::default(),
        connect_timeout: Duration::from_secs(5),
        reuse: None,
    };
    let mut c = JobServiceClient::new(connect(&opts).await.expect("connect as admin"));
    // grains.items asks for the nested outputter (Salt's __outputter__); test.ping asks for none.
    for (fun, want) in [("grains.items", "nested"), ("test.ping", "")] {
        let req = pb::RunRequest {
            publish: Some(pb::PublishRequest {
                tgt: "lo1".into(),
                tgt_type: "list".into(),
                fun: vec![fun.into()],
                ..Default::default()
            }),
            timeout: 10.0,
            gather_job_timeout: 10.0,
        };
        let mut stream = c.run(req).await.expect("run").into_inner();
        let mut got = None;
        while let Some(msg) = stream.message().await.expect("run stream") {
            if let Some(Kind::MinionReturn(r)) = msg.kind {
                got = Some(r);
            }
        }
        // What the CLI renders with, unless --out says otherwise...
        let r = got.expect("a return from lo1");
        assert_eq!(r.out, want, "{fun}: the return streamed to the CLI");
        // ...and what the master stored.
        let stored = c
            .lookup_job(pb::LookupJobRequest { jid: r.jid.clone() })
            .await
            .expect("lookup")
            .into_inner();
        assert_eq!(stored.returns.len(), 1, "{fun}");
        assert_eq!(stored.returns[0].out, want, "{fun}: the stored return");
    }
}
