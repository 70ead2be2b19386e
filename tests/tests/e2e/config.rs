//! A Salt estate's configuration starts saltq (issue #27): Salt 3007.8's shipped `conf/master`
//! and `conf/minion` (from its sdist, `SALTQ_TEST_SALT_CONF`; `.ci/run` downloads it), as
//! shipped and with every documented key uncommented at its default, are the main files of a
//! real master and minion, with the test's own settings in `master.d`/`minion.d` overriding
//! them as Salt's `default_include` does; a salt-formula-style `master.d`/`minion.d` set;
//! duplicate and unknown keys refused naming the file and the key; `saltq config check`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use saltq_tests::{Scratch, bin, eventually};

/// Salt's shipped `conf/` directory, or `None` (the test says it skipped) unless CI.
fn salt_conf() -> Option<PathBuf> {
    match std::env::var_os("SALTQ_TEST_SALT_CONF") {
        Some(d) => Some(PathBuf::from(d)),
        None => {
            assert!(
                std::env::var_os("SALTQ_CI").is_none(),
                "SALTQ_TEST_SALT_CONF (Salt 3007.8's sdist conf/) must be set in CI"
            );
            eprintln!(
                "skipped: set SALTQ_TEST_SALT_CONF to Salt 3007.8's sdist conf/ directory \
                 (pip download salt==3007.8 --no-binary :all: --no-deps)"
            );
            None
        }
    }
}

/// Every documented key of a shipped Salt config uncommented at the default it shows: a line
/// `#key: value` (the first of each key: the files show some twice, as alternatives) and the
/// lines of its block after it (`#  indented` or `#- item`). Prose (`# Text`) stays a comment.
/// Left commented: the keys whose shown value is an example, not Salt's default, that needs
/// what the test has not (`cluster_*`: a cluster of masters, in saltq over NATS and
/// PostgreSQL; `ext_pillar`: hiera, which saltq refuses at start as an unknown source).
fn uncomment(text: &str) -> String {
    const EXAMPLES: &[&str] = &[
        "cluster_id",
        "cluster_peers",
        "cluster_pki_dir",
        "ext_pillar",
    ];
    let mut seen = std::collections::HashSet::new();
    let mut out = String::new();
    // Inside a key's block: Some(true) uncommenting it, Some(false) leaving a repeat alone.
    let mut block: Option<bool> = None;
    for line in text.lines() {
        let key = line.strip_prefix('#').and_then(|rest| {
            let (k, after) = rest.split_once(':')?;
            let is_key = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            (is_key && (after.is_empty() || after.starts_with([' ', '\t']))).then_some(k)
        });
        if let Some(k) = key {
            let first = seen.insert(k.to_owned()) && !EXAMPLES.contains(&k);
            block = Some(first);
            out.push_str(if first { &line[1..] } else { line });
        } else if let Some(on) = block
            && let Some(rest) = line.strip_prefix('#')
            && (rest.starts_with("  ") && !rest.trim().is_empty() || rest.starts_with("- "))
        {
            out.push_str(if on { rest } else { line });
        } else {
            block = None;
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// A daemon process killed on drop.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `saltq-master -c DIR/etc` whose `etc/master` is `main` and `etc/master.d/` holds
/// `d_files`; the test's own `99-test.conf` there binds loopback on a free port under
/// `DIR/root`. Returns the process and its port once it listens.
fn master(dir: &Path, main: &str, d_files: &[(&str, &str)]) -> (Daemon, u16) {
    let etc = dir.join("etc");
    std::fs::create_dir_all(etc.join("master.d")).unwrap();
    std::fs::write(etc.join("master"), main).unwrap();
    for (name, text) in d_files {
        std::fs::write(etc.join("master.d").join(name), text).unwrap();
    }
    let root = dir.join("root");
    std::fs::write(
        etc.join("master.d/99-test.conf"),
        format!(
            "root_dir: {}\ninterface: 127.0.0.1\nport: 0\nhttp_interface: 127.0.0.1\n\
             http_port: 0\nlog_level: debug\nidle_timeout: 3\nkeep_alive: 1\n\
             cachedir: /var/cache/saltq/master\nauto_accept: true\n",
            root.display()
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("master.log")).unwrap();
    let mut child = Command::new(bin("saltq-master"))
        .arg("-c")
        .arg(&etc)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let listen = root.join("var/cache/saltq/master/listen.json");
    let log_path = dir.join("master.log");
    let v: serde_json::Value = eventually("master listening", Duration::from_secs(30), || {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "saltq-master exited with {status}:\n{}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
        }
        std::fs::read_to_string(&listen)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
    });
    let addr = v["quic"].as_str().expect("a QUIC address");
    let port = addr.rsplit(':').next().unwrap().parse().unwrap();
    // The check agrees: this config starts.
    let pki = Command::new(bin("saltq-master"))
        .arg("--check-config")
        .arg("-c")
        .arg(&etc)
        .output()
        .unwrap();
    assert_eq!(pki.status.code(), Some(0), "{pki:?}");
    (Daemon(child), port)
}

/// Starts `saltq-minion -c DIR/etc` with `etc/minion` = `main`, `minion.d/` = `d_files`, and the
/// test's `99-test.conf` naming the master on `port`.
fn minion(dir: &Path, id: &str, port: u16, main: &str, d_files: &[(&str, &str)]) -> Daemon {
    let etc = dir.join("etc");
    std::fs::create_dir_all(etc.join("minion.d")).unwrap();
    std::fs::write(etc.join("minion"), main).unwrap();
    for (name, text) in d_files {
        std::fs::write(etc.join("minion.d").join(name), text).unwrap();
    }
    std::fs::write(
        etc.join("minion.d/99-test.conf"),
        format!(
            "root_dir: {}\nid: {id}\nmaster: 127.0.0.1\nmaster_port: {port}\n\
             acceptance_wait_time: 0.3\nrecon_default: 100\nrecon_max: 1000\nlog_level: debug\n\
             idle_timeout: 3\nkeep_alive: 1\n",
            dir.join("root").display()
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("minion.log")).unwrap();
    Daemon(
        Command::new(bin("saltq-minion"))
            .arg("-c")
            .arg(&etc)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    )
}

/// `saltq -c CLI -L id test.ping` answers true within 30 s; the CLI's config names the port
/// and the master's `pki_dir` (Salt's default, under the test's root).
fn pinged(master_dir: &Path, port: u16, pki_dir: &str, id: &str) {
    let cli = master_dir.join("cli");
    std::fs::create_dir_all(&cli).unwrap();
    std::fs::write(
        cli.join("master"),
        format!(
            "root_dir: {}\ninterface: 127.0.0.1\nport: {port}\npki_dir: {pki_dir}\n",
            master_dir.join("root").display()
        ),
    )
    .unwrap();
    eventually(
        &format!("{id} answers test.ping"),
        Duration::from_secs(40),
        || {
            let o = Command::new(bin("saltq"))
                .arg("-c")
                .arg(&cli)
                .args(["-L", id, "test.ping", "--out", "json", "-t", "2"])
                .output()
                .unwrap();
            (o.status.success() && String::from_utf8_lossy(&o.stdout).contains("true"))
                .then_some(())
        },
    );
}

#[test]
fn salts_shipped_configs_start_master_and_minion_as_shipped_and_uncommented() {
    let Some(conf) = salt_conf() else {
        return;
    };
    let master_text = std::fs::read_to_string(conf.join("master")).unwrap();
    let minion_text = std::fs::read_to_string(conf.join("minion")).unwrap();
    for (variant, m, n) in [
        ("shipped", master_text.clone(), minion_text.clone()),
        (
            "uncommented",
            uncomment(&master_text),
            uncomment(&minion_text),
        ),
    ] {
        if variant == "uncommented" {
            // The uncommented files set what the test's master.d overrides.
            assert!(m.contains("\nauto_accept: False\n"), "{variant}");
        }
        let md = Scratch::new(&format!("cfg-master-{variant}"));
        let (_master, port) = master(&md.0, &m, &[]);
        let nd = Scratch::new(&format!("cfg-minion-{variant}"));
        let _minion = minion(&nd.0, "shipped-conf", port, &n, &[]);
        // Salt's pki_dir once uncommented; saltq's default while it is commented out.
        let pki = if variant == "shipped" {
            "/etc/saltq/pki/master"
        } else {
            "/etc/salt/pki/master"
        };
        pinged(&md.0, port, pki, "shipped-conf");
        // Keys saltq does not do yet are named in the log at start.
        if variant == "uncommented" {
            let log = std::fs::read_to_string(md.0.join("master.log")).unwrap();
            assert!(
                log.contains("config key gitfs_remotes") && log.contains("not yet in saltq"),
                "{log}"
            );
        }
    }
}

/// The equivalent of salt-formula's rendered files (`salt/files/master.d/f_defaults.conf`,
/// `minion.d/f_defaults.conf` from its `pillar.example`): written here, not fetched.
const FORMULA_MASTER_D: &str = "\
# This file managed by Salt, do not edit by hand!!
#  Based on salt version 3007 default config
fileserver_backend:
  - roots
  - git
file_roots:
  base:
    - /srv/salt
    - /srv/formulas
pillar_roots:
  base:
    - /srv/pillar
gitfs_remotes:
  - https://github.com/saltstack-formulas/salt-formula.git:
    - base: master
worker_threads: 5
timeout: 10
job_cache: True
keep_jobs: 24
event_return: ''
user: root
ipv6: False
";

const FORMULA_MINION_D: &str = "\
# This file managed by Salt, do not edit by hand!!
id:
master_type: str
file_client: remote
hash_type: sha256
mine_functions:
  network.ip_addrs: [eth0]
  test.ping: []
mine_interval: 60
grains:
  roles:
    - webserver
    - memcache
log_level: warning
log_level_logfile: warning
multiprocessing: True
startup_states: ''
";

#[test]
fn a_salt_formula_style_master_d_and_minion_d_start() {
    let md = Scratch::new("cfg-formula-master");
    let (_master, port) = master(
        &md.0,
        "# The master's main file is Salt's default: everything in master.d\n",
        &[("f_defaults.conf", FORMULA_MASTER_D)],
    );
    let nd = Scratch::new("cfg-formula-minion");
    let _minion = minion(
        &nd.0,
        "formula-minion",
        port,
        "",
        &[("f_defaults.conf", FORMULA_MINION_D)],
    );
    pinged(&md.0, port, "/etc/saltq/pki/master", "formula-minion");
    // The grains of minion.d reach the minion.
    let cli = md.0.join("cli");
    let o = Command::new(bin("saltq"))
        .arg("-c")
        .arg(&cli)
        .args([
            "-L",
            "formula-minion",
            "grains.get",
            "roles",
            "--out",
            "json",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("webserver") && out.contains("memcache"),
        "{o:?}"
    );
}

/// Runs the daemon on a config dir it must refuse: its exit code and stderr.
fn refused(daemon: &str, dir: &Path) -> (i32, String) {
    let o = Command::new(bin(daemon))
        .arg("-c")
        .arg(dir)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn duplicate_and_unknown_keys_are_refused_naming_the_file_and_key() {
    let d = Scratch::new("cfg-refused");
    let etc = d.0.join("etc");
    std::fs::create_dir_all(etc.join("master.d")).unwrap();
    std::fs::write(
        etc.join("master"),
        format!("root_dir: {}\n", d.0.join("root").display()),
    )
    .unwrap();
    // A duplicate key in the main file stops the master (Salt's exits 1)...
    let root_line = format!("root_dir: {}\n", d.0.join("root").display());
    std::fs::write(
        etc.join("master"),
        format!("{root_line}auto_accept: True\nauto_accept: False\n"),
    )
    .unwrap();
    let (code, err) = refused("saltq-master", &etc);
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains(&etc.join("master").display().to_string())
            && err.contains("found conflicting ID 'auto_accept'")
            && err.contains("line 3"),
        "{err}"
    );
    std::fs::write(etc.join("master"), &root_line).unwrap();
    // ... in a master.d file, Salt 3007.8's master logs it and goes on without that file.
    let dup = etc.join("master.d/auth.conf");
    std::fs::write(
        &dup,
        "auto_accept: True\nworker_threads: 4\nauto_accept: False\n",
    )
    .unwrap();
    let o = Command::new(bin("saltq-master"))
        .arg("--check-config")
        .arg("-c")
        .arg(&etc)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains(&format!("# warning: {}", dup.display()))
            && out.contains("found conflicting ID 'auto_accept'")
            && out.contains("skipped")
            && !out.contains("worker_threads:"),
        "{out}"
    );
    // The minion refuses a broken minion.d file (salt-minion exits 1).
    let mdup = d.0.join("minion-dup");
    std::fs::create_dir_all(mdup.join("minion.d")).unwrap();
    std::fs::write(
        mdup.join("minion"),
        format!("root_dir: {}\n", d.0.join("mdroot").display()),
    )
    .unwrap();
    std::fs::write(mdup.join("minion.d/id.conf"), "id: a\nid: b\n").unwrap();
    let (code, err) = refused("saltq-minion", &mdup);
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("minion.d/id.conf") && err.contains("found conflicting ID 'id'"),
        "{err}"
    );

    std::fs::write(&dup, "auto_acept: True\n").unwrap();
    let (code, err) = refused("saltq-master", &etc);
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains(&dup.display().to_string())
            && err.contains("unknown key `auto_acept`")
            && err.contains("did you mean `auto_accept`?"),
        "{err}"
    );

    // The minion: an unknown key in an `include`d file.
    let m = d.0.join("minion-etc");
    std::fs::create_dir_all(m.join("extra")).unwrap();
    std::fs::write(
        m.join("minion"),
        format!(
            "root_dir: {}\ninclude: extra/*.conf\n",
            d.0.join("mroot").display()
        ),
    )
    .unwrap();
    std::fs::write(m.join("extra/a.conf"), "master_prot: 4506\n").unwrap();
    let (code, err) = refused("saltq-minion", &m);
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("extra/a.conf")
            && err.contains("unknown key `master_prot`")
            && err.contains("did you mean `master_port`?"),
        "{err}"
    );
}

#[test]
fn config_check_reports_each_key_and_exits_as_the_daemon_would() {
    let d = Scratch::new("cfg-check");
    let etc = d.0.join("etc");
    std::fs::create_dir_all(etc.join("master.d")).unwrap();
    std::fs::write(
        etc.join("master"),
        format!(
            "root_dir: {}\nauto_accept: False\nworker_threads: 8\n",
            d.0.join("root").display()
        ),
    )
    .unwrap();
    std::fs::write(
        etc.join("master.d/a.conf"),
        "auto_accept: True\ngitfs_remotes: [https://example.com/x.git]\n",
    )
    .unwrap();
    let check = |args: &[&str]| {
        let o = Command::new(bin("saltq"))
            .args(["config", "check"])
            .args(args)
            .arg(&etc)
            .output()
            .unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    let (code, out) = check(&[]);
    assert_eq!(code, 0, "{out}");
    let a_conf = etc.join("master.d/a.conf").display().to_string();
    assert!(
        out.lines()
            .any(|l| l.starts_with("auto_accept: implemented") && l.contains(&a_conf)),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("worker_threads: no effect (")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("gitfs_remotes: not yet (")),
        "{out}"
    );
    assert!(
        out.contains("# the master starts with this config"),
        "{out}"
    );

    // An unknown key: reported, and the exit code is the daemon's.
    std::fs::write(etc.join("master.d/b.conf"), "worker_thread: 2\n").unwrap();
    let (code, out) = check(&["--as", "master"]);
    assert_eq!(code, 64, "{out}");
    assert!(
        out.contains("worker_thread: unknown (did you mean `worker_threads`?)"),
        "{out}"
    );
    // A bad value for a key saltq implements.
    std::fs::remove_file(etc.join("master.d/b.conf")).unwrap();
    std::fs::write(etc.join("master.d/c.conf"), "port: many\n").unwrap();
    let (code, out) = check(&[]);
    assert_eq!(code, 64, "{out}");
    assert!(
        out.contains("would not start") && out.contains("c.conf"),
        "{out}"
    );

    // A directory holding neither config.
    let empty = Scratch::new("cfg-check-empty");
    let o = Command::new(bin("saltq"))
        .args(["config", "check"])
        .arg(&empty.0)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(64), "{o:?}");
}
