//! The `pkg`, `pkgrepo` and `service` states through a real master and minion (issue 16),
//! and a public formula that uses them: the ntp formula's `ntp.ng` (saltstack-formulas,
//! Apache-2.0, in ../shared/third-party/formulas/ntp with its licence), pointed by pillar into a
//! sandbox and compared with what `salt-call --local` answered for the same tree and pillar
//! (`data/formula_ntp/recorded.json`, made by `data/formula_ntp/gen.py`); and the memcached
//! formula's `memcached.config` (saltstack-formulas, Apache-2.0, in
//! ../shared/third-party/formulas/memcached), which adds `user.present` to those three, applied
//! with Debian's real `memcached` and compared the same way, then its `memcached.uninstall`;
//! and once more as it comes, without pillar, on Debian's own user and config file
//! (`data/formula_memcached/`).
//!
//! These change the host (an init script, its rc links, an apt sources file, the packages
//! `hello` and `memcached`, the memcached daemon, users, /etc/memcached.conf): they need root
//! on Debian without a running systemd, undo what they did in Drop guards, and hold the file
//! lock the apt-running tests share. Installing packages from the mirror runs only with
//! `SALTQ_TEST_PKG=1`.

use std::path::{Path, PathBuf};
use std::process::Command;

use saltq_tests::{Master, Scratch, third_party};
use serde_json::{Map, Value, json};

/// Root on Debian with apt and `update-rc.d`, systemd not running; else why not.
fn host_unsuitable() -> Option<&'static str> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if !root {
        return Some("needs root");
    }
    if !Path::new("/etc/debian_version").is_file() || !Path::new("/usr/bin/apt-get").is_file() {
        return Some("needs Debian with apt");
    }
    if Path::new("/run/systemd/system").is_dir() {
        return Some("written for a host without a running systemd (Salt's debian_service)");
    }
    if !Path::new("/usr/sbin/update-rc.d").is_file() {
        return Some("needs update-rc.d");
    }
    None
}

/// The lock the apt-running tests share (states/tests/pkg_states.rs).
fn apt_lock() -> std::fs::File {
    let f = std::fs::File::create("/tmp/saltq-apt-tests.lock").expect("apt test lock");
    f.lock().expect("locking the apt test lock");
    f
}

const INIT_SCRIPT: &str = "#!/bin/sh
### BEGIN INIT INFO
# Provides:          {name}
# Required-Start:
# Required-Stop:
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: saltq e2e test service
### END INIT INFO
MARK=/run/{name}.running
case \"$1\" in
  start) touch \"$MARK\" ;;
  stop) rm -f \"$MARK\" ;;
  restart|reload|force-reload) touch \"$MARK\" ;;
  status) [ -f \"$MARK\" ] ;;
  *) exit 3 ;;
esac
";

/// Undoes what a test did to the host: init scripts (links and markers), files, packages,
/// services a package brought (stopped before it is purged: the host's policy-rc.d keeps the
/// package's own scripts from stopping them), daemons by their pid file (once a package is
/// removed its init script no longer stops its daemon), users.
#[derive(Default)]
struct HostGuard {
    services: Vec<String>,
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
    purge: Vec<String>,
    stop: Vec<String>,
    pidfiles: Vec<PathBuf>,
    users: Vec<String>,
}

impl Drop for HostGuard {
    fn drop(&mut self) {
        for s in &self.stop {
            let _ = Command::new("service").args([s, "stop"]).output();
        }
        for p in &self.pidfiles {
            stop_by_pidfile(p);
        }
        for s in &self.services {
            let _ = Command::new("update-rc.d")
                .args(["-f", s, "remove"])
                .output();
            let _ = std::fs::remove_file(format!("/etc/init.d/{s}"));
            let _ = std::fs::remove_file(format!("/run/{s}.running"));
        }
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
        for d in &self.dirs {
            let _ = std::fs::remove_dir_all(d);
        }
        for p in &self.purge {
            let _ = Command::new("apt-get")
                .args(["-q", "-y", "purge", p])
                .env("DEBIAN_FRONTEND", "noninteractive")
                .output();
        }
        for u in &self.users {
            let _ = Command::new("userdel").arg(u).output();
        }
    }
}

/// SIGTERMs the process the pid file `path` names, if any, and waits (5 s at most) for it to go.
fn stop_by_pidfile(path: &Path) {
    let Some(pid) = std::fs::read_to_string(path)
        .ok()
        .and_then(|p| p.trim().parse::<u32>().ok())
    else {
        return;
    };
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .output();
    let proc = PathBuf::from(format!("/proc/{pid}"));
    for _ in 0..50 {
        if !proc.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn install_init_script(script: &str, name: &str) {
    let file = format!("/etc/init.d/{name}");
    std::fs::write(&file, script.replace("{name}", name)).expect("write init script");
    let mode = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
    std::fs::set_permissions(&file, mode).expect("chmod init script");
}

/// A master serving `root` as `base` and the minion web1 connected to it.
fn master_with(root: &Path) -> (Master, saltq_tests::Minion) {
    let master = Master::start(&format!(
        "auto_accept: true\nfile_roots:\n  base:\n    - {}\n",
        root.display()
    ));
    let minion = master.minion("web1", "");
    master.wait_for("web1");
    (master, minion)
}

/// web1's state results by state ID: `name`, `result`, `comment`, `changes`.
fn by_id(ret: &Value) -> Map<String, Value> {
    ret.as_object()
        .unwrap_or_else(|| panic!("not a state return: {ret}"))
        .values()
        .map(|r| {
            let keep: Map<String, Value> = ["name", "result", "comment", "changes"]
                .iter()
                .map(|k| ((*k).to_owned(), r[*k].clone()))
                .collect();
            (
                r["__id__"].as_str().unwrap_or_default().to_owned(),
                Value::Object(keep),
            )
        })
        .collect()
}

fn apply(master: &Master, args: &[&str]) -> (Map<String, Value>, i32) {
    let mut a = vec!["web1"];
    a.extend_from_slice(args);
    a.extend(["--out", "json", "-t", "120"]);
    let o = master.saltq(&a);
    (by_id(&o.json()["web1"]), o.code)
}

#[test]
fn formula_ntp_ng_applies_as_salt_call_does() {
    if let Some(why) = host_unsuitable() {
        eprintln!("skipped: {why}");
        return;
    }
    let _apt = apt_lock();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/data/formula_ntp");
    let rec: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("recorded.json")).unwrap())
            .unwrap();
    let svc = rec["service"].as_str().unwrap().to_owned();
    let sandbox = PathBuf::from(rec["sandbox"].as_str().unwrap());
    assert!(
        !Path::new(&format!("/etc/init.d/{svc}")).exists(),
        "/etc/init.d/{svc} exists: another run left it?"
    );
    let mut guard = HostGuard::default();
    guard.services.push(svc.clone());
    guard.dirs.push(sandbox.clone());
    install_init_script(rec["script"].as_str().unwrap(), &svc);
    std::fs::create_dir_all(&sandbox).unwrap();

    let formula = third_party("formulas/ntp");
    let (master, _minion) = master_with(&formula);
    let pillar = format!("pillar={}", rec["pillar"]);

    let (got, code) = apply(&master, &["state.apply", "ntp.ng", &pillar, "test=True"]);
    assert_eq!(
        Value::Object(got),
        rec["test"],
        "test=True differs from salt-call"
    );
    assert_eq!(code, 0);

    if std::env::var_os("SALTQ_TEST_PKG").is_none() {
        eprintln!("real run skipped: set SALTQ_TEST_PKG=1 to install hello from the mirror");
        return;
    }
    guard.purge.push("hello".into());
    let (got, code) = apply(&master, &["state.apply", "ntp.ng", &pillar]);
    assert_eq!(
        Value::Object(got),
        rec["real"],
        "the real run differs from salt-call"
    );
    assert_eq!(code, 0);
    let conf = std::fs::read_to_string(sandbox.join("ntp.conf")).unwrap();
    assert_eq!(conf, rec["conf"].as_str().unwrap());
    let (got, _) = apply(&master, &["state.apply", "ntp.ng", &pillar]);
    assert_eq!(
        Value::Object(got),
        rec["again"],
        "the second run differs from salt-call"
    );
}

/// web1's state results keyed as `data/formula_memcached/gen.py` keys Salt's (`<id>
/// <module>.<function>`: one ID may hold several states) with `order`, the keys in the order
/// they ran; the created user's uid and gid and the installed version as placeholders.
fn by_state(ret: &Value, uid_gid: Option<(u32, u32)>, version: &str) -> Map<String, Value> {
    let ret = ret
        .as_object()
        .unwrap_or_else(|| panic!("not a state return: {ret}"));
    let mut out = Map::new();
    let mut ran: Vec<(u64, String)> = Vec::new();
    for (tag, r) in ret {
        let parts: Vec<&str> = tag.split("_|-").collect();
        assert_eq!(parts.len(), 4, "not a state tag: {tag}");
        let key = format!("{} {}.{}", parts[1], parts[0], parts[3]);
        let mut keep: Map<String, Value> = ["name", "result", "comment", "changes"]
            .iter()
            .map(|k| ((*k).to_owned(), r[*k].clone()))
            .collect();
        let changes = &mut keep["changes"];
        if let (Some((uid, gid)), Some(c)) = (uid_gid, changes.as_object_mut())
            && c.get("uid") == Some(&json!(uid))
            && c.get("gid") == Some(&json!(gid))
        {
            c.insert("uid".into(), json!("{uid}"));
            c.insert("gid".into(), json!("{gid}"));
        }
        for side in ["/memcached/new", "/memcached/old"] {
            if let Some(v) = changes.pointer_mut(side)
                && v == version
            {
                *v = json!("{version}");
            }
        }
        ran.push((r["__run_num__"].as_u64().unwrap_or(u64::MAX), key.clone()));
        out.insert(key, Value::Object(keep));
    }
    ran.sort();
    out.insert(
        "order".into(),
        ran.into_iter().map(|(_, k)| Value::String(k)).collect(),
    );
    out
}

/// The uid and gid of `user`, if it exists.
fn ids(user: &str) -> Option<(u32, u32)> {
    let id = |flag: &str| {
        let o = Command::new("id").args([flag, user]).output().ok()?;
        o.status.success().then_some(())?;
        String::from_utf8_lossy(&o.stdout).trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

/// The version of `pkg` dpkg has installed, or the mirror's candidate when it has none (what
/// a `test=True` run says it would install).
fn pkg_version(pkg: &str) -> String {
    let o = Command::new("dpkg-query")
        .args(["-W", "-f", "${Status} ${Version}", pkg])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    if let Some(v) = out.strip_prefix("install ok installed ") {
        return v.to_owned();
    }
    let o = Command::new("apt-cache")
        .args(["policy", pkg])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Candidate: ").map(str::to_owned))
        .unwrap_or_else(|| panic!("no candidate for {pkg} in apt-cache policy"))
}

/// Where Debian's memcached keeps its pid file, its config and the formula's default log.
const MEMCACHED_PIDFILE: &str = "/run/memcached/memcached.pid";
const MEMCACHED_CONF: &str = "/etc/memcached.conf";
const MEMCACHED_LOG: &str = "/var/log/memcached.log";

/// The memcached formula served by a master with web1 connected, Salt's recording, and the
/// users the runs may make (the pillar's and Debian's `memcache`).
struct Memcached {
    rec: Value,
    users: Vec<String>,
    master: Master,
    _minion: saltq_tests::Minion,
}

impl Memcached {
    /// Checks the host has nothing of memcached (a run left nothing behind) and starts the
    /// master and minion.
    fn start() -> Self {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/data/formula_memcached");
        let rec: Value =
            serde_json::from_str(&std::fs::read_to_string(data.join("recorded.json")).unwrap())
                .unwrap();
        let users: Vec<String> = rec["users"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u.as_str().unwrap().to_owned())
            .collect();
        for u in &users {
            assert!(ids(u).is_none(), "user {u} exists: another run left it?");
        }
        let rundir = Path::new(MEMCACHED_PIDFILE).parent().unwrap();
        for p in [rundir, Path::new(MEMCACHED_CONF), Path::new(MEMCACHED_LOG)] {
            assert!(
                !p.exists(),
                "{} exists: another run left memcached?",
                p.display()
            );
        }
        let installed = Command::new("dpkg-query")
            .args(["-W", "-f", "${Status}", "memcached"])
            .output()
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&installed.stdout).contains("installed"),
            "memcached is installed: another run left it?"
        );
        let formula = third_party("formulas/memcached");
        let (master, minion) = master_with(&formula);
        Self {
            rec,
            users,
            master,
            _minion: minion,
        }
    }

    /// Has `guard` undo what a real run does: the daemon, the package, the users, its files.
    fn guard_real_runs(&self, guard: &mut HostGuard) {
        let pidfile = PathBuf::from(MEMCACHED_PIDFILE);
        guard.stop.push("memcached".into());
        guard.dirs.push(pidfile.parent().unwrap().to_owned());
        guard.pidfiles.push(pidfile);
        guard.purge.push("memcached".into());
        guard.users.extend(self.users.iter().cloned());
        guard.files.push(MEMCACHED_CONF.into());
        guard.files.push(MEMCACHED_LOG.into());
    }

    /// `state.apply sls` on web1 with `pillar` and `args`, keyed as the recording is.
    fn apply(&self, sls: &str, pillar: &Value, args: &[&str]) -> (Value, i32) {
        let pillar = format!("pillar={pillar}");
        let mut a = vec!["web1", "state.apply", sls, &pillar];
        a.extend_from_slice(args);
        a.extend(["--out", "json", "-t", "300"]);
        let o = self.master.saltq(&a);
        let ret = o.json()["web1"].clone();
        let got = by_state(&ret, ids(&self.users[0]), &pkg_version("memcached"));
        (Value::Object(got), o.code)
    }
}

#[test]
fn formula_memcached_config_applies_as_salt_call_does() {
    if let Some(why) = host_unsuitable() {
        eprintln!("skipped: {why}");
        return;
    }
    let _apt = apt_lock();
    let mut guard = HostGuard::default();
    let case = Memcached::start();
    let rec = &case.rec;
    let sandbox = PathBuf::from(rec["sandbox"].as_str().unwrap());
    guard.dirs.push(sandbox.clone());
    std::fs::create_dir_all(&sandbox).unwrap();
    let pillar = &rec["pillar"];
    let run = |args: &[&str]| case.apply("memcached.config", pillar, args);

    let (got, code) = run(&["test=True"]);
    assert_eq!(got, rec["test"], "test=True differs from salt-call");
    assert_eq!(code, 0);
    assert!(ids(&case.users[0]).is_none(), "test=True created the user");

    if std::env::var_os("SALTQ_TEST_PKG").is_none() {
        eprintln!("real run skipped: set SALTQ_TEST_PKG=1 to install memcached from the mirror");
        return;
    }
    case.guard_real_runs(&mut guard);
    let (got, code) = run(&[]);
    assert_eq!(got, rec["real"], "the real run differs from salt-call");
    assert_eq!(code, 0);
    let conf = std::fs::read_to_string(sandbox.join("memcached.conf")).unwrap();
    assert_eq!(conf, rec["conf"].as_str().unwrap());
    let (got, code) = run(&[]);
    assert_eq!(got, rec["again"], "the second run differs from salt-call");
    assert_eq!(code, 0);

    // The formula's own uninstall: service.dead does nothing here (systemd offline), as in
    // Salt; pkg.removed removes the package and leaves the daemon, which the guard stops.
    let (got, code) = case.apply("memcached.uninstall", pillar, &["test=True"]);
    assert_eq!(
        got, rec["uninstall_test"],
        "memcached.uninstall with test=True differs from salt-call"
    );
    assert_eq!(code, 0);
    let (got, code) = case.apply("memcached.uninstall", pillar, &[]);
    assert_eq!(
        got, rec["uninstall"],
        "memcached.uninstall differs from salt-call"
    );
    assert_eq!(code, 0);
}

/// The formula as it comes, without pillar: Debian's `memcache` user gets the formula's
/// shell, Debian's /etc/memcached.conf is rewritten and the diff is Salt's.
#[test]
fn formula_memcached_defaults_apply_as_salt_call_does() {
    if let Some(why) = host_unsuitable() {
        eprintln!("skipped: {why}");
        return;
    }
    let _apt = apt_lock();
    let mut guard = HostGuard::default();
    let case = Memcached::start();
    let rec = &case.rec["defaults"];
    let run = |args: &[&str]| case.apply("memcached.config", &json!({}), args);

    let (got, code) = run(&["test=True"]);
    assert_eq!(got, rec["test"], "test=True differs from salt-call");
    assert_eq!(code, 0);
    assert!(
        !Path::new(MEMCACHED_CONF).exists(),
        "test=True wrote {MEMCACHED_CONF}"
    );

    if std::env::var_os("SALTQ_TEST_PKG").is_none() {
        eprintln!("real run skipped: set SALTQ_TEST_PKG=1 to install memcached from the mirror");
        return;
    }
    case.guard_real_runs(&mut guard);
    let (got, code) = run(&[]);
    assert_eq!(got, rec["real"], "the real run differs from salt-call");
    assert_eq!(code, 0);
    let conf = std::fs::read_to_string(MEMCACHED_CONF).unwrap();
    assert_eq!(conf, rec["conf"].as_str().unwrap());
    let (got, code) = run(&[]);
    assert_eq!(got, rec["again"], "the second run differs from salt-call");
    assert_eq!(code, 0);
}

#[test]
fn pkg_pkgrepo_service_states_through_the_minion() {
    if let Some(why) = host_unsuitable() {
        eprintln!("skipped: {why}");
        return;
    }
    let _apt = apt_lock();
    // No digits in the service's name: Salt's `debian_service` (and saltq, as it) reads a
    // start link's service as what follows its last digits (`S01name`).
    let letters: String = std::process::id()
        .to_string()
        .chars()
        .map(|d| char::from(b'a' + d.to_digit(10).unwrap_or(0) as u8))
        .collect();
    let tag = format!("saltq-e{letters}");
    let svc = format!("{tag}-svc");
    let list = PathBuf::from(format!("/etc/apt/sources.list.d/{tag}.list"));
    let line = format!("deb [signed-by=/etc/apt/keyrings/{tag}.gpg] file:///tmp/{tag} ./");
    let mut guard = HostGuard::default();
    guard.services.push(svc.clone());
    guard.files.push(list.clone());
    install_init_script(INIT_SCRIPT, &svc);
    let linked = Command::new("update-rc.d")
        .args([&svc, "defaults"])
        .output()
        .unwrap();
    assert!(linked.status.success(), "{linked:?}");

    let tree = Scratch::new("sysstates");
    std::fs::write(
        tree.0.join("system.sls"),
        json!({
            "svc_disabled": {"service.disabled": [{"name": svc}]},
            "svc_running": {"service.running": [{"name": svc}, {"require": [{"service": "svc_disabled"}]}]},
            "repo": {"pkgrepo.managed": [
                {"name": line}, {"file": list}, {"refresh": false}, {"aptkey": false}
            ]},
            "bash_installed": {"pkg.installed": [{"name": "bash"}]},
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        tree.0.join("undo.sls"),
        json!({
            "repo_gone": {"pkgrepo.absent": [{"name": line}]},
            "bash_held": {"pkg.held": [{"name": "bash"}]},
            "svc_enabled": {"service.enabled": [{"name": "saltq-nosuch-svc"}]},
        })
        .to_string(),
    )
    .unwrap();
    let (master, _minion) = master_with(&tree.0);

    let (got, code) = apply(&master, &["state.apply", "system"]);
    let expect = json!({
        "svc_disabled": {"name": svc, "result": true, "changes": {svc.clone(): true},
            "comment": format!("Service {svc} has been disabled, and is in the desired state")},
        "svc_running": {"name": svc, "result": true, "changes": {},
            "comment": "Running in OFFLINE mode. Nothing to do"},
        "repo": {"name": line, "result": true, "changes": {"repo": line},
            "comment": format!("Configured package repo '{line}'")},
        "bash_installed": {"name": "bash", "result": true, "changes": {},
            "comment": "All specified packages are already installed"},
    });
    assert_eq!(Value::Object(got), expect);
    assert_eq!(code, 0);
    // What the states did is on the host: the start links became stop links, the line is
    // in the file as Salt writes it.
    let rc2: Vec<String> = std::fs::read_dir("/etc/rc2.d")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(&svc))
        .collect();
    assert!(
        rc2.iter().all(|f| f.starts_with('K')) && !rc2.is_empty(),
        "{rc2:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&list).unwrap(),
        format!("{line} \n")
    );

    // Test mode: nothing changes, each says what it would do.
    let (got, code) = apply(&master, &["state.apply", "undo", "test=True"]);
    let expect = json!({
        "repo_gone": {"name": line, "result": null, "changes": {},
            "comment": format!("Package repo '{line}' will be removed. This may cause pkg states to behave differently than stated if this action is repeated without test=True, due to the differences in the configured repositories.")},
        "bash_held": {"name": "bash", "result": true, "changes": {},
            "comment": "The following package would be held: bash"},
        "svc_enabled": {"name": "saltq-nosuch-svc", "result": null, "changes": {},
            "comment": "Service saltq-nosuch-svc not present; if created in this state run, it would have been enabled"},
    });
    assert_eq!(Value::Object(got), expect);
    assert_eq!(code, 0);
    assert!(list.is_file());
}
