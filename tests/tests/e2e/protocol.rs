//! The minion protocol spoken directly, with a real minion's certificate: a duplicate return is
//! dropped, a return for a job that was not sent to this minion or for an unknown jid is refused.
//! Also: kill_job really kills, and a job cache that cannot be written stops new jobs.

use std::time::Duration;

use saltq_proto::v1::{self as pb, minion_service_client::MinionServiceClient};
use saltq_tests::{Master, eventually};
use saltq_transport::pki::{CertKey, load_certs};
use saltq_transport::tls::ServerTrust;
use saltq_transport::{ConnectOptions, Limits, TransportKind, connect};
use serde_json::json;

async fn as_minion(
    master: &Master,
    pki: &std::path::Path,
) -> MinionServiceClient<saltq_transport::Channel> {
    let opts = ConnectOptions {
        host: "127.0.0.1".into(),
        port: master.port,
        transport: TransportKind::Quic,
        identity: CertKey::load(&pki.join("minion.crt"), &pki.join("minion.key"))
            .expect("minion identity"),
        trust: ServerTrust::Ca(load_certs(&master.pki_dir().join("ca.crt")).expect("ca")),
        limits: Limits::default(),
        connect_timeout: Duration::from_secs(5),
    };
    MinionServiceClient::new(connect(&opts).await.expect("connect as minion"))
}

fn ret(jid: &str, value: serde_json::Value) -> pb::ReturnRequest {
    pb::ReturnRequest {
        jid: jid.into(),
        fun: vec!["test.echo".into()],
        fun_args: None,
        r#return: Some(saltq_transport::value::to_prost(&value)),
        retcode: 0,
        success: true,
        out: String::new(),
        metadata: None,
    }
}

#[tokio::test]
async fn duplicate_and_foreign_returns() {
    let (master, m1, m2) = tokio::task::spawn_blocking(|| {
        let master = Master::start("auto_accept: true");
        let m1 = master.minion("p1", "");
        let m2 = master.minion("p2", "");
        master.wait_for("p1");
        master.wait_for("p2");
        (master, m1, m2)
    })
    .await
    .unwrap();
    let o = master.saltq(&["-L", "p1", "test.echo", "real"]);
    assert_eq!(o.code, 0, "{o:?}");
    let list = master.saltq(&["jobs", "list", "--function", "test.echo", "--out", "json"]);
    let jid = list
        .json()
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();

    // p1 returns again for the same job: acknowledged, not stored twice.
    let mut c1 = as_minion(&master, &m1.pki_dir()).await;
    let r = c1
        .r#return(ret(&jid, json!("forged")))
        .await
        .expect("acknowledged");
    assert!(!r.into_inner().stored);
    let o = master.saltq(&["jobs", "lookup", &jid, "--out", "json"]);
    assert_eq!(o.json(), json!({"p1": "real"}));

    // p2 was not sent this job: refused, and nothing stored.
    let mut c2 = as_minion(&master, &m2.pki_dir()).await;
    let e = c2.r#return(ret(&jid, json!("intruder"))).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
    assert!(
        e.message().contains("p2") && e.message().contains(&jid),
        "{e:?}"
    );
    // An unknown jid.
    let e = c2
        .r#return(ret("20000101000000000000", json!(1)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound, "{e:?}");
    let o = master.saltq(&["jobs", "lookup", &jid, "--out", "json"]);
    assert_eq!(o.json(), json!({"p1": "real"}));

    // p2 may not speak for p1 or for the master on the bus; its own and custom tags pass.
    let watch = master.watch_all_events("*");
    let event = |tag: &str| pb::SendEventRequest {
        tag: tag.into(),
        data: None,
    };
    for (tag, rule) in [
        ("salt/minion/p1/start", "belong to minion p1"),
        (&*format!("salt/job/{jid}/ret/p1"), "belong to the master"),
        ("salt/auth", "belong to the master"),
        ("salt/key", "belong to the master"),
        ("salt/presence/change", "belong to the master"),
    ] {
        let e = c2.send_event(event(tag)).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied, "{tag}: {e:?}");
        assert!(
            e.message().contains("minion p2 may not fire") && e.message().contains(rule),
            "{tag}: {e:?}"
        );
    }
    c2.send_event(event("salt/minion/p2/custom"))
        .await
        .expect("its own tag");
    c2.send_event(event("myapp/deployed"))
        .await
        .expect("a custom tag");
    let seen = tokio::task::spawn_blocking(move || {
        std::thread::sleep(Duration::from_millis(500));
        let mut w = watch;
        let _ = w.kill();
        let out = w.wait_with_output().expect("watcher");
        String::from_utf8_lossy(&out.stdout).into_owned()
    })
    .await
    .unwrap();
    let tags: Vec<&str> = seen.lines().filter_map(|l| l.split('\t').next()).collect();
    assert!(tags.contains(&"salt/minion/p2/custom"), "{tags:?}");
    assert!(tags.contains(&"myapp/deployed"), "{tags:?}");
    assert!(
        !tags.iter().any(|t| *t == "salt/auth"
            || t.starts_with("salt/minion/p1")
            || t.ends_with("/ret/p1")),
        "{tags:?}"
    );
}

fn pid_alive(pid: i64) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn kill_job_kills_the_command() {
    let master = Master::start("auto_accept: true");
    let _m = master.minion("k1", "");
    master.wait_for("k1");
    let marker = master.dir.0.join("child.pid");
    let cmd = format!("sleep 300 & echo $! > {}; wait", marker.display());
    let o = master.saltq(&["-L", "k1", "cmd.run", &cmd, "python_shell=True", "--async"]);
    let jid = o.stdout.trim().rsplit(' ').next().unwrap().to_owned();
    let running = eventually("the job is running", Duration::from_secs(10), || {
        let o = master.saltq(&["-L", "k1", "saltutil.running", "--out", "json"]);
        let v = o.json();
        let found = v["k1"]
            .as_array()
            .is_some_and(|a| a.iter().any(|j| j["jid"] == jid.as_str()));
        found.then_some(v)
    });
    let ours = running["k1"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jid"] == jid.as_str())
        .cloned()
        .unwrap();
    assert_eq!(ours["fun"], "cmd.run");
    let o = master.saltq(&["-L", "k1", "saltutil.find_job", &jid, "--out", "json"]);
    assert_eq!(o.json()["k1"]["jid"], jid.as_str(), "{o:?}");
    // The sleeping child's pid, from the shell the job started.
    let pid: i64 = eventually("child pid written", Duration::from_secs(5), || {
        std::fs::read_to_string(&marker).ok()?.trim().parse().ok()
    });
    assert!(pid_alive(pid));
    let o = master.saltq(&["-L", "k1", "saltutil.kill_job", &jid, "--out", "json"]);
    assert!(
        o.json()["k1"]
            .as_str()
            .is_some_and(|s| s.starts_with("Signal 9 sent to job")),
        "{o:?}"
    );
    eventually("the child process is gone", Duration::from_secs(5), || {
        (!pid_alive(pid)
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z ")))
        .then_some(())
    });
    // Only the saltutil.running job itself is left (Salt lists that one too).
    let o = master.saltq(&["-L", "k1", "saltutil.running", "--out", "json"]);
    let left: Vec<String> = o.json()["k1"]
        .as_array()
        .expect("list")
        .iter()
        .map(|j| j["fun"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(left, vec!["saltutil.running"], "{o:?}");
}

#[test]
fn unwritable_job_cache_refuses_new_jobs_with_unavailable() {
    let Ok(pg) = std::env::var("SALTQ_TEST_POSTGRES") else {
        eprintln!("skipped: SALTQ_TEST_POSTGRES is not set (libpq string of a PostgreSQL server)");
        return;
    };
    let schema = format!("saltq_e2e_{}", std::process::id());
    let master = Master::start(&format!(
        "auto_accept: true\njob_cache: postgres\njob_cache_postgres: '{pg}'\njob_cache_postgres_schema: {schema}\n"
    ));
    let _m = master.minion("u1", "");
    master.wait_for("u1");
    let psql = |sql: &str| {
        let out = std::process::Command::new("psql")
            .arg(&pg)
            .arg("-c")
            .arg(sql)
            .output()
            .expect("psql");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // The database refuses writes to the cache's tables from now on.
    psql(&format!(
        "ALTER TABLE {schema}.saltq_jobs RENAME TO saltq_jobs_gone"
    ));
    let o = master.saltq(&["*", "test.ping"]);
    assert_eq!(o.code, 69, "{o:?}");
    assert!(o.stderr.contains("job cache cannot be written"), "{o:?}");
    // The master was reached and refused: the CLI says so, not that it cannot reach it.
    assert!(
        o.stderr
            .contains("answered that its job cache is unavailable"),
        "{o:?}"
    );
    assert!(!o.stderr.contains("cannot reach the master"), "{o:?}");
    psql(&format!("DROP SCHEMA {schema} CASCADE"));
}
