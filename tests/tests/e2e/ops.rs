//! Operating saltq: HTTP probes and Prometheus metrics, the minion's health port, pillar refresh,
//! and several masters sharing one PostgreSQL job cache.

use std::io::{Read, Write};
use std::time::Duration;

use saltq_tests::{Master, eventually};
use serde_json::json;

pub(crate) fn get(addr: &str, path: &str) -> (u16, String) {
    get_as(addr, path, None)
}

/// `GET path` with an `Authorization` header when one is given: the status and the body.
pub(crate) fn get_as(addr: &str, path: &str, authorization: Option<&str>) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect http");
    let auth = authorization
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = String::new();
    s.read_to_string(&mut buf).unwrap();
    let status = buf
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = buf
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

pub(crate) use saltq_tests::free_port;

#[test]
fn probes_and_metrics() {
    let master = Master::start("auto_accept: true");
    let http = master.http.clone().expect("http address");
    assert_eq!(get(&http, "/healthz"), (200, "ok\n".into()));
    assert_eq!(get(&http, "/readyz").0, 200);
    assert_eq!(get(&http, "/nope").0, 404);
    let hp = free_port();
    let _m = master.minion(
        "h1",
        &format!("health_interface: 127.0.0.1\nhealth_port: {hp}"),
    );
    master.wait_for("h1");
    let minion_health = format!("127.0.0.1:{hp}");
    assert_eq!(
        get(&minion_health, "/healthz"),
        (200, "subscribed\n".into())
    );
    assert_eq!(master.saltq(&["h1", "test.ping"]).code, 0);
    let (code, text) = get(&http, "/metrics");
    assert_eq!(code, 200);
    for line in [
        "saltq_minions{state=\"connected\"} 1",
        "saltq_minions{state=\"accepted\"} 1",
        "# TYPE saltq_return_latency_seconds histogram",
        "# TYPE saltq_job_cache_write_seconds histogram",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    let counter = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    assert!(counter("saltq_jobs_published_total") >= 2);
    assert!(counter("saltq_returns_stored_total") >= 2);
    // The master going away makes the minion unhealthy (it is a readiness signal).
    drop(master);
    eventually(
        "minion reports not subscribed",
        Duration::from_secs(15),
        || (get(&minion_health, "/healthz").0 == 503).then_some(()),
    );
}

#[test]
fn pillar_refresh_reaches_minion_and_master_targeting() {
    let master = Master::start_with(|dir| {
        let p = dir.join("pillar");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("top.sls"), "base:\n  '*':\n    - data\n").unwrap();
        std::fs::write(p.join("data.sls"), "color: blue\n").unwrap();
        format!(
            "auto_accept: true\npillar_roots:\n  base:\n    - {}\n",
            p.display()
        )
    });
    let _m = master.minion("pl1", "");
    master.wait_for("pl1");
    let o = master.saltq(&["pl1", "pillar.get", "color"]);
    assert_eq!(o.stdout, "pl1:\n    blue\n");
    std::fs::write(master.dir.0.join("pillar/data.sls"), "color: green\n").unwrap();
    let o = master.saltq(&["pl1", "saltutil.refresh_pillar"]);
    assert_eq!(o.code, 0, "{o:?}");
    eventually("new pillar on the minion", Duration::from_secs(10), || {
        let o = master.saltq(&["pl1", "pillar.get", "color"]);
        (o.stdout == "pl1:\n    green\n").then_some(())
    });
    let o = master.saltq(&[
        "-I",
        "color:green",
        "test.ping",
        "--out",
        "json",
        "--static",
    ]);
    assert_eq!(o.json(), json!({"pl1": true}), "{o:?}");
}

#[test]
fn two_masters_share_one_postgres_job_cache() {
    let Ok(pg) = std::env::var("SALTQ_TEST_POSTGRES") else {
        eprintln!("skipped: SALTQ_TEST_POSTGRES is not set (libpq string of a PostgreSQL server)");
        return;
    };
    let schema = format!("saltq_e2e_shared_{}", std::process::id());
    let cfg = format!(
        "auto_accept: true\njob_cache: postgres\njob_cache_postgres: '{pg}'\njob_cache_postgres_schema: {schema}\n"
    );
    let a = Master::start(&cfg);
    let b = Master::start(&cfg);
    let _m1 = a.minion("shared1", "");
    let _m2 = b.minion("shared2", "");
    a.wait_for("shared1");
    b.wait_for("shared2");
    let jid_of = |o: &saltq_tests::Out| {
        assert_eq!(o.code, 0, "{o:?}");
        o.stdout.trim().rsplit(' ').next().unwrap().to_owned()
    };
    let jid = jid_of(&a.saltq(&["shared1", "test.echo", "from-a", "--async"]));
    // Master B never saw the job, yet its cache answers for it.
    let o = eventually("b sees a's return", Duration::from_secs(10), || {
        let o = b.saltq(&["jobs", "lookup", &jid, "--out", "json"]);
        (o.json() == json!({"shared1": "from-a"})).then_some(o)
    });
    assert_eq!(o.code, 0);

    // Both masters publish at once: every publish succeeds and no jid is issued twice.
    const EACH: usize = 25;
    let burst = |m: &Master, id: &str| -> Vec<String> {
        (0..EACH)
            .map(|_| jid_of(&m.saltq(&[id, "test.ping", "--async"])))
            .collect()
    };
    let (from_a, from_b) = std::thread::scope(|s| {
        let ta = s.spawn(|| burst(&a, "shared1"));
        let tb = s.spawn(|| burst(&b, "shared2"));
        (ta.join().unwrap(), tb.join().unwrap())
    });
    let all: std::collections::BTreeSet<&String> = from_a.iter().chain(&from_b).collect();
    assert_eq!(all.len(), 2 * EACH, "a: {from_a:?}\nb: {from_b:?}");
    let listed = b.saltq(&["jobs", "list", "--out", "json"]).json();
    for jid in &all {
        assert!(
            listed.get(jid.as_str()).is_some(),
            "{jid} not listed: {listed}"
        );
    }

    // Jids are ordered across masters, not only within one: once any master took a jid, the
    // next one from either master comes after it, whatever their clocks say.
    let psql = |sql: &str| {
        let o = std::process::Command::new("psql")
            .arg(&pg)
            .args(["-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .expect("psql");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    psql(&format!(
        "UPDATE {schema}.saltq_last_jid SET jid = '29990101000000999999'"
    ));
    let next = [
        jid_of(&a.saltq(&["shared1", "test.ping", "--async"])),
        jid_of(&b.saltq(&["shared2", "test.ping", "--async"])),
        jid_of(&a.saltq(&["shared1", "test.ping", "--async"])),
    ];
    assert_eq!(
        next,
        [
            "29990101000001000000",
            "29990101000001000001",
            "29990101000001000002"
        ],
    );
    let _ = std::process::Command::new("psql")
        .arg(&pg)
        .arg("-c")
        .arg(format!("DROP SCHEMA {schema} CASCADE"))
        .output();
}

/// An unprivileged master cannot raise its UDP buffers past `net.core.rmem_max`; it says so,
/// naming the sysctl, and serves anyway.
#[test]
fn unprivileged_master_names_the_sysctl_that_caps_its_udp_buffers() {
    let max: usize = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    let is_root = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    let setpriv = std::path::Path::new("/usr/bin/setpriv");
    if !is_root || !setpriv.exists() || max >= 32 * 1024 * 1024 {
        eprintln!(
            "skipped: needs root and setpriv to run the master as nobody, and net.core.rmem_max \
             below 32 MiB (it is {max})"
        );
        return;
    }
    let dir = saltq_tests::Scratch::new("unprivileged");
    let port = free_port();
    std::fs::create_dir_all(dir.0.join("etc")).unwrap();
    std::fs::write(
        dir.0.join("etc/master"),
        format!(
            "root_dir: {}\nport: {port}\nhttp_enabled: false\n",
            dir.0.display()
        ),
    )
    .unwrap();
    let chown = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&dir.0)
        .status()
        .unwrap();
    assert!(chown.success());
    let mut master = std::process::Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(saltq_tests::bin("saltq-master"))
        .arg("-c")
        .arg(dir.0.join("etc"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = master.stderr.take().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = seen.clone();
    // Reads until the master exits (killed below).
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = stderr.read(&mut buf) {
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let warned = || {
        let log = seen.lock().unwrap();
        (log.contains("net.core.rmem_max") && log.contains("net.core.wmem_max")).then_some(())
    };
    let start = std::time::Instant::now();
    while warned().is_none() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = master.kill();
    let _ = master.wait();
    reader.join().unwrap();
    let log = seen.lock().unwrap().clone();
    assert!(
        log.contains("net.core.rmem_max") && log.contains("receive buffer"),
        "{log}"
    );
    assert!(log.contains("net.core.wmem_max"), "{log}");
}

/// A master killed and started again on the same address resets the connections of its
/// previous process at their next packet (the stateless-reset secret is kept in pki_dir), so
/// its minions reconnect at once instead of after their 60 s idle timeout (issue 15, defect 5).
#[test]
fn a_restarted_master_gets_its_minions_back_before_their_idle_timeout() {
    let live = "idle_timeout: 60\nkeep_alive: 1\n";
    let mut master = Master::start(&format!("auto_accept: true\n{live}"));
    let minions: Vec<_> = (0..3)
        .map(|i| master.minion(&format!("rs{i}"), live))
        .collect();
    for m in &minions {
        master.wait_for(&m.id);
    }
    assert!(master.pki_dir().join("quic_reset.key").is_file());
    master.kill();
    master.relaunch();
    // Well inside the 60 s idle timeout: only a recognised stateless reset gets them back now.
    eventually("every minion back", Duration::from_secs(20), || {
        let o = master.saltq(&["*", "test.ping", "--out", "json", "--static", "-t", "2"]);
        (o.json() == json!({"rs0": true, "rs1": true, "rs2": true})).then_some(())
    });
}
