//! Salt's config keys that estates set most, as they show at runtime (#27): `log_file` in
//! Salt's format, syslog over UDP, `log_fmt_console`, and `user` dropping the master's
//! privileges.

use std::net::UdpSocket;
use std::time::Duration;

use saltq_tests::{Master, eventually, refused_start};

/// Checks one line of Salt's default log file format:
/// `YYYY-MM-DD HH:MM:SS,mmm [name<pad>:line<pad>][LEVEL<pad>][pid] message`.
fn salt_logfile_line(line: &str, pid: u32) -> Option<(String, String)> {
    let (date, rest) = line.split_at_checked(19)?;
    let b = date.as_bytes();
    let date_ok = date.len() == 19
        && [4, 7].iter().all(|&i| b[i] == b'-')
        && b[10] == b' '
        && [13, 16].iter().all(|&i| b[i] == b':')
        && b.iter()
            .enumerate()
            .all(|(i, c)| [4, 7, 10, 13, 16].contains(&i) || c.is_ascii_digit());
    let rest = rest.strip_prefix(',')?;
    let (msecs, rest) = rest.split_at_checked(3)?;
    let rest = rest.strip_prefix(" [")?;
    let (name_line, rest) = rest.split_once("][")?;
    let (name, lineno) = name_line.split_once(':')?;
    // `%(name)-17s` and `%(lineno)-4d`: padded on the right to at least 17 and 4.
    let padded = name.len() >= 17 && lineno.len() >= 4;
    let lineno_ok = lineno.trim_end().parse::<u32>().is_ok();
    let (level, rest) = rest.split_once("][")?;
    let (pid_text, message) = rest.split_once("] ")?;
    let ok = date_ok
        && msecs.bytes().all(|c| c.is_ascii_digit())
        && padded
        && lineno_ok
        && level.len() == 8
        && pid_text == pid.to_string();
    ok.then(|| (level.trim_end().to_owned(), message.to_owned()))
}

#[test]
fn log_file_is_written_in_salts_format_under_root_dir() {
    let master = Master::start(
        "log_file: /var/log/salt/master\nlog_level_logfile: info\n\
         log_fmt_console: '%(levelname)s|%(name)s|%(message)s'\n",
    );
    let pid = master.pid().expect("running");
    // As Salt's, an absolute log_file is placed under root_dir.
    let path = master.dir.0.join("root/var/log/salt/master");
    let (level, message) = eventually(
        &format!("a Salt-format line in {}", path.display()),
        Duration::from_secs(20),
        || {
            let text = std::fs::read_to_string(&path).ok()?;
            text.lines()
                .filter_map(|l| salt_logfile_line(l, pid))
                .find(|(_, m)| m.starts_with("master listening"))
        },
    );
    assert_eq!(level, "INFO");
    assert!(message.contains("quic="), "{message}");
    // Every line of the file is in the format, and nothing below info is there.
    let text = std::fs::read_to_string(&path).expect("log file");
    for line in text.lines() {
        let (level, _) = salt_logfile_line(line, pid)
            .unwrap_or_else(|| panic!("not Salt's log file format: {line:?}"));
        assert!(
            ["INFO", "WARNING", "ERROR"].contains(&level.as_str()),
            "{line}"
        );
    }
    // The console (the harness's master.log) is written with log_fmt_console, at log_level.
    let console = std::fs::read_to_string(master.log()).expect("console log");
    assert!(
        console
            .lines()
            .any(|l| l.starts_with("INFO|saltq_master.") && l.contains("|master listening")),
        "{console}"
    );
    assert!(
        console.lines().any(|l| l.starts_with("DEBUG|")),
        "{console}"
    );
}

#[test]
fn syslog_over_udp_reaches_a_listener() {
    let listener = UdpSocket::bind("127.0.0.1:0").expect("bind");
    listener
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let port = listener.local_addr().expect("addr").port();
    let master = Master::start(&format!(
        "log_file: udp://127.0.0.1:{port}/LOG_LOCAL0\nlog_level_logfile: info\n"
    ));
    let pid = master.pid().expect("running");
    let mut buf = vec![0u8; 65536];
    let mut seen = Vec::new();
    let found = loop {
        let n = listener
            .recv(&mut buf)
            .expect("a syslog datagram within 20 s");
        let datagram = String::from_utf8_lossy(&buf[..n]).into_owned();
        seen.push(datagram.clone());
        // `<PRI>` + the record in Salt's log file format + NUL, as Python's SysLogHandler.
        let body = datagram.strip_suffix('\0').expect("NUL-terminated");
        let (pri, line) = body
            .strip_prefix('<')
            .and_then(|b| b.split_once('>'))
            .expect("<PRI>");
        let pri: u32 = pri.parse().expect("numeric priority");
        let (level, message) =
            salt_logfile_line(line, pid).unwrap_or_else(|| panic!("not Salt's format: {line:?}"));
        // LOG_LOCAL0 is facility 16.
        assert_eq!(pri >> 3, 16, "{datagram:?}");
        if message.starts_with("master listening") {
            break (pri, level);
        }
        assert!(seen.len() < 1000, "no 'master listening' in {seen:?}");
    };
    // info is syslog severity 6.
    assert_eq!(found, (16 * 8 + 6, "INFO".to_owned()));
}

#[test]
fn bad_logging_keys_are_refused_with_the_key_named() {
    for (config, key, says) in [
        (
            "log_fmt_logfile: '%(when)s %(message)s'\n",
            "log_fmt_logfile",
            "unknown log record field %(when)s",
        ),
        (
            "log_level_logfile: chatty\n",
            "log_level_logfile",
            "unknown log level",
        ),
        (
            "log_file: udp://127.0.0.1/LOG_NOPE\n",
            "log_file",
            "facility 'LOG_NOPE' is not known",
        ),
        (
            "log_granular_levels:\n  saltq_master: loud\n",
            "log_granular_levels",
            "unknown log level",
        ),
    ] {
        let (code, err) = refused_start("saltq-master", "master", config);
        assert_eq!(code, 64, "{config}: {err}");
        assert!(err.contains(key) && err.contains(says), "{config}: {err}");
    }
    let (code, err) = refused_start("saltq-master", "master", "user: no-such-user-h8\n");
    assert_eq!(code, 67, "{err}");
    assert!(
        err.contains("no-such-user-h8") && err.contains("not available"),
        "{err}"
    );
}

/// The uids (real, effective, saved, filesystem) of a process, from /proc.
fn uids(pid: u32) -> Vec<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .expect("Uid line")
        .split_whitespace()
        .map(|u| u.parse().expect("uid"))
        .collect()
}

#[test]
fn user_switches_the_master_to_that_account() {
    if !nix_is_root() {
        eprintln!("skipped: switching users needs root (run the suite as root, as CI does)");
        return;
    }
    let nobody = passwd_uid("nobody").expect("a nobody user");
    let master = Master::start("user: nobody\nlog_file: /var/log/salt/master\n");
    let pid = master.pid().expect("running");
    assert_eq!(uids(pid), vec![nobody; 4]);
    // Its files were given to it, and it still works: a minion is accepted and answers.
    let log = master.dir.0.join("root/var/log/salt/master");
    assert_eq!(owner_uid(&log), nobody);
    assert_eq!(owner_uid(&master.pki_dir()), nobody);
    let _minion = master.minion("m-user", "");
    master.accept_and_wait("m-user");
    let out = master.saltq(&["m-user", "test.ping", "--out", "json"]);
    assert_eq!(out.json()["m-user"], true, "{}", out.stderr);
}

fn nix_is_root() -> bool {
    uids(std::process::id())[1] == 0
}

fn owner_uid(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).expect("metadata").uid()
}

/// A user's uid from /etc/passwd.
fn passwd_uid(name: &str) -> Option<u32> {
    std::fs::read_to_string("/etc/passwd")
        .ok()?
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.first() == Some(&name)).then(|| f.get(2)?.parse().ok())?
        })
}

#[test]
fn cli_summary_in_the_master_config_prints_salts_summary() {
    let master = Master::start("cli_summary: true\nstate_output: terse\n");
    let _minion = master.minion("m-summary", "");
    master.accept_and_wait("m-summary");
    let out = master.saltq(&["m-summary", "test.ping"]);
    let rule = "-".repeat(43);
    // Salt 3007.8's `_print_returns_summary`, after the nested return.
    assert_eq!(
        out.stdout,
        format!(
            "m-summary:\n    True\n\n\n{rule}\nSummary\n{rule}\n# of minions targeted: 1\n\
             # of minions returned: 1\n# of minions that did not return: 0\n\
             # of minions with errors: 0\n{rule}\n"
        ),
        "{}",
        out.stderr
    );
    // As Salt, no summary with an outputter chosen.
    let out = master.saltq(&["m-summary", "test.ping", "--out", "json"]);
    assert_eq!(out.json()["m-summary"], true);
    assert!(!out.stdout.contains("Summary"), "{}", out.stdout);
    // state_output: terse from the master config: one line per state.
    let out = master.saltq(&[
        "m-summary",
        "state.single",
        "test.succeed_without_changes",
        "name=x",
    ]);
    assert!(
        out.stdout
            .contains("Name: x - Function: test.succeed_without_changes - Result: Clean"),
        "{}",
        out.stdout
    );
}

/// Salt's minion id keys (#27), through `saltq-minion --check-config` on a config without `id`:
/// the generated id (the host's name) is lowercased, its domain removed and cached in
/// `<root_dir>/etc/saltq/minion_id` (Salt's `minion_id_caching`, on by default); the cache is
/// then used over a new name and `append_domain` goes on it; the report lists the keys as
/// implemented.
#[test]
fn minion_id_keys_generate_cache_and_append() {
    let dir = std::env::temp_dir().join(format!("saltq-e2e-minion-id-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let etc = dir.join("etc");
    std::fs::create_dir_all(etc.join("minion.d")).unwrap();
    let root = dir.join("root");
    std::fs::write(
        etc.join("minion"),
        format!(
            "root_dir: {}\nmaster: 127.0.0.1\nminion_id_lowercase: True\n\
             minion_id_remove_domain: True\n",
            root.display()
        ),
    )
    .unwrap();
    let check = || {
        let o = std::process::Command::new(saltq_tests::bin("saltq-minion"))
            .arg("--check-config")
            .arg("-c")
            .arg(&etc)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(o.status.code(), Some(0), "{out}");
        out
    };
    let out = check();
    assert!(
        out.contains("minion_id_lowercase: implemented")
            && out.contains("minion_id_remove_domain: implemented"),
        "{out}"
    );
    let cache = root.join("etc/saltq/minion_id");
    let host = gethostname_lower();
    let cached = std::fs::read_to_string(&cache).expect("the generated id is cached");
    assert_eq!(cached, host.split('.').next().unwrap(), "{out}");
    // The cache wins (a renamed host keeps its id); append_domain goes on it, in minion.d.
    std::fs::write(&cache, "web7\n").unwrap();
    std::fs::write(
        etc.join("minion.d/domain.conf"),
        "append_domain: corp.example\n",
    )
    .unwrap();
    check();
    let o = std::process::Command::new(saltq_tests::bin("saltq-minion"))
        .arg("-c")
        .arg(&etc)
        .args(["call", "--local", "grains.get", "id", "--out", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let id = serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["local"].clone();
    assert_eq!(id, serde_json::json!("web7.corp.example"), "{o:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The host's name as Salt's generated id starts from, lowercased (this host's own FQDN
/// lookup is the minion's; only its first label is compared).
fn gethostname_lower() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_lowercase()
}

/// The minion's `ipv6` chooses the family of the master's address as Salt's `dns_check`:
/// `true` asks for IPv6 and, for an IPv4 master (127.0.0.1 has no IPv6 form), falls back to
/// IPv4 and connects; `false` keeps to IPv4 and connects as well.
#[test]
fn the_minions_ipv6_key_chooses_the_address_family_and_falls_back_as_salt() {
    let master = Master::start("auto_accept: true\n");
    let _v6 = master.minion("fam6", "ipv6: true\n");
    let _v4 = master.minion("fam4", "ipv6: false\n");
    master.wait_for("fam6");
    master.wait_for("fam4");
    let o = master.saltq(&["-L", "fam6,fam4", "test.ping", "--out", "json", "--static"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(
        o.stdout.contains("\"fam6\": true") && o.stdout.contains("\"fam4\": true"),
        "{o:?}"
    );
}
