//! Jobs seen from the minion's side: kill_job really kills, and a job cache that cannot be
//! written stops new jobs. What a minion may not say (returns for jobs it was not sent,
//! reserved tags) is in the security suite (`security.rs`).

use std::time::Duration;

use saltq_tests::{Master, eventually};

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
