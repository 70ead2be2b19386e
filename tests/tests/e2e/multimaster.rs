//! Salt's hot multi-master: one minion listing two independent masters (each with its own CA,
//! key set, pillar and job cache) with the default `master_type: str` takes jobs from both, and
//! each master sees only its own returns, even under the same jid.

use std::time::Duration;

use saltq_proto::v1::{self as pb, job_service_client::JobServiceClient};
use saltq_tests::{Master, Minion, eventually};
use saltq_transport::pki::{CertKey, fingerprint_cert, load_certs};
use saltq_transport::tls::ServerTrust;
use saltq_transport::{ConnectOptions, Limits, TransportKind, connect, value};
use serde_json::json;

/// A master whose pillar says `who: NAME`.
fn master_named(name: &str, extra: &str) -> Master {
    let name = name.to_owned();
    let extra = extra.to_owned();
    Master::start_with(move |dir| {
        let p = dir.join("pillar");
        std::fs::create_dir_all(&p).expect("pillar dir");
        std::fs::write(p.join("top.sls"), "base:\n  '*':\n    - who\n").expect("top");
        std::fs::write(p.join("who.sls"), format!("who: {name}\n")).expect("who");
        format!("pillar_roots:\n  base:\n    - {}\n{extra}", p.display())
    })
}

/// The `master:` list naming `masters`, with the default master_type.
fn both(masters: &[&Master]) -> String {
    let list: String = masters
        .iter()
        .map(|m| format!("  - 127.0.0.1:{}\n", m.port))
        .collect();
    format!("master:\n{list}")
}

fn log_of(m: &Minion) -> String {
    std::fs::read_to_string(m.log()).unwrap_or_default()
}

/// Publishes `cmd.run CMD python_shell=True` (Salt 3007's cmd.run runs no shell unless told,
/// from the master too) to `id` on `master`, under `jid` when given; the jid.
async fn shell(master: &Master, id: &str, cmd: &str, jid: &str) -> String {
    publish(
        master,
        id,
        "cmd.run",
        &[json!(cmd)],
        json!({"python_shell": true}),
        jid,
    )
    .await
}

/// Publishes `fun args kwarg` (`kwarg` a JSON object) to `id` on `master` as its admin, under
/// `jid` when given; the jid.
async fn publish(
    master: &Master,
    id: &str,
    fun: &str,
    args: &[serde_json::Value],
    kwarg: serde_json::Value,
    jid: &str,
) -> String {
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
    let r = c
        .publish(pb::PublishRequest {
            tgt: id.into(),
            tgt_type: "list".into(),
            fun: vec![fun.into()],
            arg: args.iter().map(value::to_prost).collect(),
            kwarg: Some(value::json_to_struct(&kwarg)),
            jid: jid.into(),
            ..Default::default()
        })
        .await
        .expect("publish")
        .into_inner();
    assert_eq!(r.minions, vec![id.to_owned()], "{fun} published to {id}");
    r.jid
}

/// The returns `master` stored for `jid`, as `jobs lookup` prints them in JSON.
fn stored(master: &Master, jid: &str) -> serde_json::Value {
    let o = master.saltq(&["jobs", "lookup", jid, "--out", "json"]);
    if o.code == 0 { o.json() } else { json!(null) }
}

/// Two masters with different CAs: each CA pinned in its own file, each master's pillar on the
/// jobs it sends, concurrent jobs from both under one jid each returned to its own master only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minion_takes_jobs_from_two_masters_and_returns_each_its_own() {
    let m1 = master_named("one", "auto_accept: true\n");
    let m2 = master_named("two", "auto_accept: true\n");
    let ca1 = std::fs::read(m1.pki_dir().join("ca.crt")).expect("ca 1");
    let ca2 = std::fs::read(m2.pki_dir().join("ca.crt")).expect("ca 2");
    assert_ne!(ca1, ca2, "the masters are independent: two CAs");
    let m = Minion::start_at(&both(&[&m1, &m2]), "mm1", "");
    m1.wait_for("mm1");
    m2.wait_for("mm1");
    // Each master's CA pinned on first use, in a file of its own.
    let pinned1 = std::fs::read(m.pki_dir().join("master_ca.crt")).expect("pin 1");
    let pinned2 = std::fs::read(
        m.pki_dir()
            .join(format!("master_ca.127.0.0.1_{}.crt", m2.port)),
    )
    .expect("pin 2");
    assert_ne!(pinned1, pinned2);
    // Each master's jobs run with its own pillar.
    for (master, who) in [(&m1, "one"), (&m2, "two")] {
        let o = master.saltq(&["mm1", "pillar.get", "who", "--out", "json"]);
        assert_eq!(o.json(), json!({"mm1": who}), "{o:?}");
    }
    // The same jid from both masters, both jobs running at once: two jobs, two returns.
    let cmd = |who: &str| format!("sleep 2; echo from-{who}");
    let jid = shell(&m1, "mm1", &cmd("one"), "").await;
    let again = shell(&m2, "mm1", &cmd("two"), &jid).await;
    assert_eq!(again, jid);
    for (master, who) in [(&m1, "one"), (&m2, "two")] {
        eventually(
            &format!("the return of {jid} stored by master {who}"),
            Duration::from_secs(20),
            || (stored(master, &jid) == json!({"mm1": format!("from-{who}")})).then_some(()),
        );
    }
    // Neither master got the other's return (nothing came in late).
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(stored(&m1, &jid), json!({"mm1": "from-one"}));
    assert_eq!(stored(&m2, &jid), json!({"mm1": "from-two"}));
    let log = log_of(&m);
    assert!(log.contains("linking to 2 masters at once"), "{log}");
}

/// A master killed while the minion runs its job: the other master keeps working, and the
/// killed one gets the return once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_killed_mid_job_gets_its_return_when_back_while_the_other_works() {
    let mut m1 = master_named("one", "auto_accept: true\n");
    let m2 = master_named("two", "auto_accept: true\n");
    let _m = Minion::start_at(&both(&[&m1, &m2]), "mm2", "");
    m1.wait_for("mm2");
    m2.wait_for("mm2");
    let jid = shell(&m1, "mm2", "sleep 4; echo late", "").await;
    // Running on the minion (saltutil.running lists every job of the process, so master two
    // sees it too), then master one dies.
    eventually("the job runs", Duration::from_secs(10), || {
        let o = m2.saltq(&["mm2", "saltutil.running", "--out", "json", "-t", "3"]);
        o.stdout.contains(&jid).then_some(())
    });
    m1.kill();
    // Master two is not held up: it runs jobs while one is away.
    for _ in 0..3 {
        let o = m2.saltq(&["mm2", "pillar.get", "who", "--out", "json", "-t", "5"]);
        assert_eq!(o.json(), json!({"mm2": "two"}), "{o:?}");
    }
    let o = m2.saltq(&["mm2", "test.echo", "still-here", "--out", "json"]);
    assert_eq!(o.json(), json!({"mm2": "still-here"}), "{o:?}");
    // Back after the job ended: the return waited in master one's outbox.
    tokio::time::sleep(Duration::from_secs(4)).await;
    m1.relaunch();
    eventually(
        "the return stored by the restarted master",
        Duration::from_secs(30),
        || (stored(&m1, &jid) == json!({"mm2": "late"})).then_some(()),
    );
    // It went to master one only: master two never heard of the job.
    assert_ne!(stored(&m2, &jid), json!({"mm2": "late"}));
    m1.wait_for("mm2");
}

/// The minion's key rejected by one master: the other still takes it and runs its jobs.
#[test]
fn a_key_rejected_by_one_master_leaves_the_other_working() {
    let m1 = master_named("one", "auto_accept: true\n");
    let m2 = master_named("two", "");
    let m = Minion::start_at(&both(&[&m1, &m2]), "mm3", "");
    m1.wait_for("mm3");
    eventually("mm3 pending on master two", Duration::from_secs(20), || {
        let o = m2.saltq(&["key", "-l", "pre", "--out", "json"]);
        o.stdout.contains("\"mm3\"").then_some(())
    });
    let o = m2.saltq(&["key", "-r", "mm3", "-y"]);
    assert_eq!(o.code, 0, "{o:?}");
    // The minion says so, under master two's name.
    let at2 = format!("127.0.0.1:{}", m2.port);
    eventually(
        "the minion told its key is rejected by master two",
        Duration::from_secs(20),
        || {
            log_of(&m)
                .lines()
                .any(|l| l.contains("was rejected by the master") && l.contains(&at2))
                .then_some(())
        },
    );
    let o = m2.saltq(&["key", "-l", "rej", "--out", "json"]);
    assert!(o.stdout.contains("\"mm3\""), "{o:?}");
    // Master one is unaffected.
    let o = m1.saltq(&["mm3", "pillar.get", "who", "--out", "json"]);
    assert_eq!(o.json(), json!({"mm3": "one"}), "{o:?}");
    // Master two cannot reach it.
    let o = m2.saltq(&["mm3", "test.ping", "--out", "json", "-t", "2"]);
    assert!(o.code != 0 && !o.stdout.contains("true"), "{o:?}");
}

/// Two masters with different CAs and `master_finger` per master (a list, one fingerprint per
/// master in the order of `master:`): each master is taken only with its own CA, and a wrong
/// fingerprint for one master keeps the minion off that master alone, its log saying why.
#[test]
fn master_finger_per_master_checks_each_ca() {
    let m1 = master_named("one", "auto_accept: true\n");
    let m2 = master_named("two", "auto_accept: true\n");
    let finger = |m: &Master| {
        let ca = load_certs(&m.pki_dir().join("ca.crt")).expect("ca");
        fingerprint_cert(&ca[0]).expect("fingerprint")
    };
    let (f1, f2) = (finger(&m1), finger(&m2));
    assert_ne!(f1, f2, "the masters are independent: two CAs");
    let fingers =
        |a: &str, b: &str| format!("{}master_finger:\n  - '{a}'\n  - '{b}'", both(&[&m1, &m2]));
    // Each master's own fingerprint: both take the minion, and it pins each CA.
    let good = Minion::start_at(&fingers(&f1, &f2), "mm4", "");
    m1.wait_for("mm4");
    m2.wait_for("mm4");
    for (master, who) in [(&m1, "one"), (&m2, "two")] {
        let o = master.saltq(&["mm4", "pillar.get", "who", "--out", "json"]);
        assert_eq!(o.json(), json!({"mm4": who}), "{o:?}");
    }
    let pin2 = good
        .pki_dir()
        .join(format!("master_ca.127.0.0.1_{}.crt", m2.port));
    assert!(
        pin2.exists(),
        "master two's CA pinned in {}",
        pin2.display()
    );
    // Master one's fingerprint given for master two too: master two's CA is refused, master
    // one still serves the minion.
    let wrong = Minion::start_at(&fingers(&f1, &f1), "mm5", "");
    m1.wait_for("mm5");
    let at2 = format!("127.0.0.1:{}", m2.port);
    eventually(
        "the minion says master two's CA does not match its fingerprint",
        Duration::from_secs(20),
        || {
            log_of(&wrong)
                .lines()
                .any(|l| l.contains("does not match master_finger") && l.contains(&at2))
                .then_some(())
        },
    );
    let log = log_of(&wrong);
    assert!(
        !log.lines()
            .any(|l| l.contains("does not match master_finger") && !l.contains(&at2)),
        "only master two is refused:\n{log}"
    );
    let o = m1.saltq(&["mm5", "pillar.get", "who", "--out", "json"]);
    assert_eq!(o.json(), json!({"mm5": "one"}), "{o:?}");
    let o = m2.saltq(&["mm5", "test.ping", "--out", "json", "-t", "2"]);
    assert!(o.code != 0 && !o.stdout.contains("true"), "{o:?}");
    let pin2 = wrong
        .pki_dir()
        .join(format!("master_ca.127.0.0.1_{}.crt", m2.port));
    assert!(!pin2.exists(), "no CA pinned for master two");
}

/// Several jobs from both masters at once (three each, published together, all running at the
/// same time on the minion): every job's return is stored by the master that published it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_jobs_from_both_masters_each_return_to_their_own() {
    let m1 = master_named("one", "auto_accept: true\n");
    let m2 = master_named("two", "auto_accept: true\n");
    let _m = Minion::start_at(&both(&[&m1, &m2]), "mm6", "");
    m1.wait_for("mm6");
    m2.wait_for("mm6");
    let mut jobs = Vec::new();
    for i in 0..3 {
        for (master, who) in [(&m1, "one"), (&m2, "two")] {
            let said = format!("{who}-{i}");
            let jid = shell(master, "mm6", &format!("sleep 2; echo {said}"), "").await;
            jobs.push((master, jid, said));
        }
    }
    for (master, jid, said) in &jobs {
        eventually(
            &format!("the return of {jid} ({said})"),
            Duration::from_secs(30),
            || (stored(master, jid) == json!({"mm6": said})).then_some(()),
        );
    }
    // The other master knows none of them.
    for (master, jid, _) in &jobs {
        let other = if std::ptr::eq(*master, &m1) { &m2 } else { &m1 };
        let got = stored(other, jid);
        assert!(got.get("mm6").is_none(), "{jid} is not the other's: {got}");
    }
}
