//! Keys, identities and transports: pending → accept → subscribed, auto_accept, both
//! transports, bad config. Refusals (a changed key denied, certificates kept in their lanes,
//! oversized requests) are in the security suite (`security.rs`).

use std::process::Command;
use std::time::Duration;

use saltq_tests::{Master, Scratch, bin, eventually};
use serde_json::json;

#[test]
fn pending_then_accepted_then_subscribed() {
    let master = Master::start("");
    let _m = master.minion("web1", "");
    eventually("web1 pending", Duration::from_secs(20), || {
        let o = master.saltq(&["key", "-L", "--out", "json"]);
        (o.json()["minions_pre"] == serde_json::json!(["web1"])).then_some(())
    });
    // Pending: the job service does not count it, salt's "no minions" message and exit 2.
    let o = master.saltq(&["*", "test.ping"]);
    assert_eq!(o.code, 2, "{o:?}");
    assert_eq!(
        o.stdout,
        "No minions matched the target. No command was sent, no jid was assigned.\n"
    );
    assert_eq!(o.stderr, "ERROR: No return received\n");
    let o = master.saltq(&["key", "-a", "web1", "-y"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(
        o.stdout,
        "The following keys are going to be accepted:\nUnaccepted Keys:\nweb1\nKey for minion web1 accepted.\n"
    );
    // The minion gets in on its own (acceptance_wait_time), without a restart.
    master.wait_for("web1");
    let o = master.saltq(&["*", "test.ping"]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "web1:\n    True\n"),
        "{o:?}"
    );
    let o = master.saltq(&["key", "-L"]);
    assert_eq!(
        o.stdout,
        "Accepted Keys:\nweb1\nDenied Keys:\nUnaccepted Keys:\nRejected Keys:\n"
    );
}

#[test]
fn auto_accept_and_fingerprints() {
    let master = Master::start("auto_accept: true");
    let m = master.minion("db1", "");
    master.wait_for("db1");
    let o = master.saltq(&["key", "-f", "db1", "--out", "json"]);
    let fp = o.json()["minions"]["db1"]
        .as_str()
        .expect("fingerprint")
        .to_owned();
    assert_eq!(fp.len(), 32 * 3 - 1, "sha256 as colon-separated hex: {fp}");
    // The fingerprint is that of the key the minion holds.
    let cert = std::fs::read_to_string(m.pki_dir().join("minion.crt")).expect("minion cert");
    let der = rustls_pemfile_first(&cert);
    assert_eq!(
        saltq_transport::pki::fingerprint_cert(&der).expect("fp"),
        fp
    );
}

fn rustls_pemfile_first(pem: &str) -> rustls::pki_types::CertificateDer<'static> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .expect("a certificate")
        .expect("valid PEM")
}

#[test]
fn same_rpc_over_http3_and_http2() {
    let master = Master::start("auto_accept: true");
    let _a = master.minion("a1", "");
    let _b = master.minion("b1", "");
    master.wait_for("a1");
    master.wait_for("b1");
    let quic = master.saltq(&[
        "--transport",
        "quic",
        "*",
        "test.echo",
        "same",
        "--out",
        "json",
        "--static",
    ]);
    let h2 = master.saltq(&[
        "--transport",
        "h2",
        "*",
        "test.echo",
        "same",
        "--out",
        "json",
        "--static",
    ]);
    assert_eq!(quic.code, 0, "{quic:?}");
    assert_eq!(quic.json(), serde_json::json!({"a1": "same", "b1": "same"}));
    assert_eq!((h2.code, h2.stdout), (quic.code, quic.stdout));
    let keys_quic = master.saltq(&["--transport", "quic", "key", "-L", "--out", "json"]);
    let keys_h2 = master.saltq(&["--transport", "h2", "key", "-L", "--out", "json"]);
    assert_eq!(keys_quic.stdout, keys_h2.stdout);
}

#[test]
fn minion_pins_master_ca_and_checks_master_finger() {
    let master = Master::start("auto_accept: true");
    let fp = master.saltq(&["pki", "fingerprint"]);
    assert_eq!(fp.code, 0, "{fp:?}");
    let good = fp.stdout.trim().to_owned();
    let m = master.minion("pin1", &format!("master_finger: '{good}'"));
    master.wait_for("pin1");
    assert!(
        m.pki_dir().join("master_ca.crt").is_file(),
        "CA pinned on first use"
    );
    let bad = master.minion("pin2", "master_finger: '00:11:22'");
    // The minion checks the fingerprint before it sends its key, and says so in its log.
    eventually(
        "pin2 logs that the master's CA does not match master_finger",
        Duration::from_secs(20),
        || {
            let log = std::fs::read_to_string(bad.log()).unwrap_or_default();
            log.contains("does not match master_finger").then_some(())
        },
    );
    let o = master.saltq(&["key", "-L", "--out", "json"]);
    assert!(
        !o.stdout.contains("pin2"),
        "a minion with the wrong master_finger never reaches key acceptance: {o:?}"
    );
}

#[test]
fn ca_issued_minion_certificate_skips_pending() {
    let master = Master::start("");
    let issued = master.saltq(&["pki", "minion", "ca2"]);
    assert_eq!(issued.code, 0, "{issued:?}");
    let dir = master.pki_dir().join("issued");
    // Give the minion the CA-issued key pair before it first connects.
    let mut m = master.minion("ca2", "");
    m.stop();
    std::fs::create_dir_all(m.pki_dir()).expect("pki dir");
    std::fs::copy(dir.join("ca2.crt"), m.pki_dir().join("minion.crt")).expect("cert");
    std::fs::copy(dir.join("ca2.key"), m.pki_dir().join("minion.key")).expect("key");
    m.restart();
    // No `saltq key -a`: the CA vouched for it.
    master.wait_for("ca2");
    let o = master.saltq(&["key", "-L", "--out", "json"]);
    assert_eq!(o.json()["minions"], serde_json::json!(["ca2"]), "{o:?}");
}

#[test]
fn bad_config_stops_the_master_with_exit_64_naming_file_and_key() {
    let dir = Scratch::new("badcfg");
    std::fs::write(
        dir.0.join("master"),
        format!("root_dir: {}\nprot: 4506\n", dir.0.display()),
    )
    .unwrap();
    let o = Command::new(bin("saltq-master"))
        .arg("-c")
        .arg(&dir.0)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(64), "{err}");
    assert!(
        err.contains(&dir.0.join("master").display().to_string())
            && err.contains("unknown key `prot`"),
        "{err}"
    );

    std::fs::write(
        dir.0.join("master"),
        format!("root_dir: {}\nport: many\n", dir.0.display()),
    )
    .unwrap();
    let o = Command::new(bin("saltq-master"))
        .arg("-c")
        .arg(&dir.0)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(64), "{err}");
    assert!(
        err.contains("port") && err.contains("invalid type"),
        "{err}"
    );

    // Port in use: a second master on the first one's port.
    let first = Master::start("");
    std::fs::write(
        dir.0.join("master"),
        format!(
            "root_dir: {}\ninterface: 127.0.0.1\nport: {}\n",
            dir.0.display(),
            first.port
        ),
    )
    .unwrap();
    let o = Command::new(bin("saltq-master"))
        .arg("-c")
        .arg(&dir.0)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(64), "{err}");
    assert!(
        err.contains("cannot listen on") && err.contains("interface/port"),
        "{err}"
    );
}

#[test]
fn bad_minion_config_names_the_key() {
    let dir = Scratch::new("badmcfg");
    std::fs::write(dir.0.join("minion"), "id: x\nmaster_port: -3\n").unwrap();
    let o = Command::new(bin("saltq-minion"))
        .arg("-c")
        .arg(&dir.0)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(64), "{err}");
    assert!(err.contains("master_port"), "{err}");
}

#[test]
fn a_dead_minion_is_noticed_within_seconds() {
    let master = Master::start("auto_accept: true");
    let mut m = master.minion("dead1", "");
    master.wait_for("dead1");
    // SIGKILL: no goodbye on the wire; only the QUIC idle timeout (3 s here) can tell.
    m.kill();
    let started = std::time::Instant::now();
    eventually(
        "master notices the dead minion",
        Duration::from_secs(10),
        || {
            let o = master.saltq(&[
                "-L",
                "dead1",
                "test.ping",
                "-t",
                "1",
                "--gather-job-timeout",
                "1",
            ]);
            o.stdout.contains("[Not connected]").then_some(())
        },
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn auth_and_key_events_as_salt_fires_them() {
    let master = Master::start("");
    let auth = master.watch_events("salt/auth", 1);
    let keys = master.watch_events("salt/key", 2);
    let _m = master.minion("ev1", "");
    eventually("ev1 pending", Duration::from_secs(10), || {
        let o = master.saltq(&["key", "-l", "pre", "--out", "json"]);
        o.stdout.contains("ev1").then_some(())
    });
    assert_eq!(master.saltq(&["key", "-a", "ev1", "-y"]).code, 0);
    assert_eq!(master.saltq(&["key", "-d", "ev1", "-y"]).code, 0);
    let parse = |child: std::process::Child| -> Vec<(String, serde_json::Value)> {
        let out = child.wait_with_output().expect("events");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let (t, d) = l.split_once('\t').expect("tag<TAB>json");
                (t.to_owned(), serde_json::from_str(d).expect("json"))
            })
            .collect()
    };
    let pick = |e: &(String, serde_json::Value)| {
        assert!(e.1["_stamp"].is_string(), "{e:?}");
        (
            e.0.clone(),
            e.1["act"].clone(),
            e.1["id"].clone(),
            e.1["result"].clone(),
        )
    };
    let auth: Vec<_> = parse(auth).iter().map(pick).collect();
    assert_eq!(
        auth,
        vec![(
            "salt/auth".to_owned(),
            json!("pend"),
            json!("ev1"),
            json!(true)
        )]
    );
    let keys: Vec<_> = parse(keys).iter().map(pick).collect();
    assert_eq!(
        keys,
        vec![
            (
                "salt/key".to_owned(),
                json!("accept"),
                json!("ev1"),
                json!(true)
            ),
            (
                "salt/key".to_owned(),
                json!("delete"),
                json!("ev1"),
                json!(true)
            ),
        ]
    );
}

#[test]
fn a_listener_can_be_turned_off() {
    let master = Master::start("auto_accept: true\nh2_enabled: false");
    let _m = master.minion("q1", "");
    master.wait_for("q1");
    let quic = master.saltq(&["--transport", "quic", "q1", "test.ping"]);
    assert_eq!(quic.code, 0, "{quic:?}");
    let h2 = master.saltq(&["--transport", "h2", "q1", "test.ping"]);
    assert_eq!(h2.code, 69, "{h2:?}");
    assert!(
        h2.stderr.contains("over h2") && h2.stderr.contains("connection refused"),
        "{h2:?}"
    );
}
