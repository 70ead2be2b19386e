//! `status.*`: the `/proc` parsers against what salt 3007.8 made of the same text, then every
//! function on this host, its shape compared with Salt's.

use serde_json::{Value, json};

use super::*;
use crate::testutil::{check, run};

fn keys(v: &Value) -> Vec<String> {
    v.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn proc_parsers_match_salt() {
    assert_eq!(
        parse_meminfo("MemTotal:       24682416 kB\nHugePages_Total:       0\n"),
        json!({"MemTotal": {"value": "24682416", "unit": "kB"}, "HugePages_Total": {"value": "0"}})
    );
    assert_eq!(
        parse_cpuinfo(
            "processor\t: 0\nflags\t\t: fpu vme\n\nprocessor\t: 1\nflags\t\t: fpu\nbugs\t\t:\n"
        ),
        json!({"processor": "1", "flags": ["fpu"], "bugs": ""})
    );
    assert_eq!(
        parse_stat(
            "cpu  425627 0 45854 201979 1045 0 691 476 0 0\ncpu0 214445 0 1\nintr 3456634 0 5\nsoftirq 10 1 2\nctxt 99\nbtime 1795219592\n"
        ),
        json!({
            "cpu": {"idle": 201979, "iowait": 1045, "irq": 0, "nice": 0, "softirq": 691,
                    "steal": 476, "system": 45854, "user": 425627},
            "cpu0": 214445, "intr": {"total": 3456634, "irqs": [0, 5]},
            "softirq": {"total": 10, "softirqs": [1, 2]}, "ctxt": 99, "btime": 1795219592u64,
        })
    );
    let disk = parse_diskstats("   7       0 loop0 1 2 3 4 5 6 7 8 9 10 11 0 0 0 0 0 0\n");
    assert_eq!(disk["loop0"]["device"], json!("loop0"));
    assert_eq!(disk["loop0"]["weighted_ms_spent_in_io"], json!(11));
    assert_eq!(keys(&disk["loop0"]).len(), 14);
    // Salt leaves out each protocol's last counter (it iterates one short).
    assert_eq!(
        parse_netstat("IpExt: InNoRoutes InTruncatedPkts InCEPkts\nIpExt: 0 1 2\n"),
        json!({"IpExt": {"InNoRoutes": 0, "InTruncatedPkts": 1}})
    );
    assert_eq!(
        parse_procs(
            "UID          PID    PPID  C STIME TTY          TIME CMD\nroot           2       0  0 00:06 ?        00:00:00 [kthreadd]\nroot         100       1  0 00:06 ?        00:00:00   /usr/bin/x --flag a\n"
        ),
        json!({"2": {"user": "root", "cmd": "[kthreadd]"}, "100": {"user": "root", "cmd": "/usr/bin/x --flag a"}})
    );
    assert_eq!(
        parse_w("root     pts/0     10:00    1:00   0.10s  0.01s vim /etc/hosts\n"),
        json!([{"idle": "1:00", "jcpu": "0.10s", "login": "10:00", "pcpu": "0.01s",
                "tty": "pts/0", "user": "root", "what": "vim /etc/hosts"}])
    );
    assert_eq!(number("12"), json!(12));
    assert_eq!(number("1.5"), json!(1.5));
    assert_eq!(number("x"), json!("x"));
}

#[test]
fn uptime_shape() {
    // salt 3007.8: {"seconds": 3426, "since_iso": "2026-11-21T00:06:32.263487",
    // "since_t": 1795219592, "days": 0, "time": "0:57", "users": 1}
    let got = uptime_dict(3426, 1_795_223_018.263_487, Some(""));
    assert_eq!(
        got,
        json!({"seconds": 3426, "since_iso": "2026-11-21T00:06:32.263487", "since_t": 1795219592,
               "days": 0, "time": "0:57", "users": 1})
    );
    let got = uptime_dict(90_061, 1_000_000.0, None);
    assert_eq!(
        (got["days"].clone(), got["time"].clone()),
        (json!(1), json!("1:1"))
    );
    assert!(got.get("users").is_none());
}

#[tokio::test]
async fn every_function_on_this_host() {
    let up = run("status.uptime", json!([])).await;
    let mut want = vec!["seconds", "since_iso", "since_t", "days", "time"];
    if crate::modules::cmd::which_path("who").is_some() {
        want.push("users");
    }
    assert_eq!(keys(&up.ret), want);
    let load = run("status.loadavg", json!([])).await;
    assert_eq!(keys(&load.ret), ["1-min", "5-min", "15-min"]);
    assert!(load.ret["1-min"].is_f64());
    let mem = run("status.meminfo", json!([])).await;
    assert_eq!(mem.ret["MemTotal"]["unit"], json!("kB"));
    let cpu = run("status.cpuinfo", json!([])).await;
    assert!(cpu.ret.get("processor").is_some());
    let stats = run("status.cpustats", json!([])).await;
    assert_eq!(
        keys(&stats.ret["cpu"]),
        [
            "idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"
        ]
    );
    let disks = run("status.diskstats", json!([])).await;
    assert!(disks.ret.is_object());
    let net = run("status.netstats", json!([])).await;
    assert!(
        net.ret.get("TcpExt").is_some_and(Value::is_object),
        "{}",
        net.ret
    );
    let usage = run("status.diskusage", json!(["/"])).await;
    assert_eq!(keys(&usage.ret["/"]), ["available", "total"]);
    let all = run("status.diskusage", json!([])).await;
    assert!(all.ret.get("/").is_some());
    let procs = run("status.procs", json!([])).await;
    assert_eq!(procs.ret["1"]["user"], json!("root"), "pid 1 runs as root");
    let me = std::process::id().to_string();
    assert!(procs.ret.get(&me).is_some());
    // status.pid leaves out the minion's own process.
    check(
        "status.pid",
        json!(["^nosuch-process-x$"]),
        json!({}),
        json!(""),
        0,
    )
    .await;
    let pid = run("status.pid", json!(["saltq_exec"])).await;
    assert!(
        !pid.ret
            .as_str()
            .unwrap_or_default()
            .split('\n')
            .any(|p| p == me)
    );
    let version = run("status.version", json!([])).await;
    assert!(
        version
            .ret
            .as_str()
            .is_some_and(|v| v.starts_with("Linux version"))
    );
    let w = run("status.w", json!([])).await;
    assert!(w.ret.is_array());
}
