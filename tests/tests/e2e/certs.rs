//! Certificates over time: the master takes new certificate, key and CA files from disk while it
//! serves (connections already up stay up, new ones see the new files, broken files are refused
//! and the old ones kept), and minions renew the certificates the master's CA issues them before
//! they expire; an expired one is refused with a message that says so.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::pki_types::CertificateDer;
use saltq_tests::{Master, Scratch, eventually, watched_until};
use saltq_transport::pki::{self, Ca, CertRole, CertifyRequest, IssueRequest, Validity};

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64
}

/// Issues a server certificate for 127.0.0.1/localhost from `ca` into `dir/tls.crt` and
/// `dir/tls.key`, the certificate first (a tool writing them one after the other), and returns
/// its leaf.
pub(crate) fn write_server_pair(ca: &Ca, dir: &Path) -> CertificateDer<'static> {
    let (cert, key) = ca
        .issue(&IssueRequest {
            common_name: "e2e-master".into(),
            role: CertRole::Server,
            dns_names: vec!["localhost".into()],
            ips: vec!["127.0.0.1".parse().unwrap()],
            days: 2,
        })
        .expect("issue a server certificate");
    std::fs::create_dir_all(dir).expect("tls dir");
    std::fs::write(dir.join("tls.crt"), &cert).expect("write tls.crt");
    std::fs::write(dir.join("tls.key"), &key).expect("write tls.key");
    leaf(&cert)
}

fn leaf(pem: &str) -> CertificateDer<'static> {
    pki::certs_from_pem(pem.as_bytes(), Path::new("pem")).expect("a certificate")[0].clone()
}

fn serial(cert: &CertificateDer<'_>) -> String {
    pki::serial_hex(cert).expect("serial")
}

/// A client TLS config with the admin certificate, trusting the master's CA, for `alpn`.
fn admin_tls(master: &Master, alpn: &[u8]) -> rustls::ClientConfig {
    let pki_dir = master.pki_dir();
    let ca = pki::load_certs(&pki_dir.join("ca.crt")).expect("ca");
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca[0].clone()).expect("root");
    let admin = pki::CertKey::load(&pki_dir.join("admin.crt"), &pki_dir.join("admin.key"))
        .expect("admin certificate");
    let mut cfg = rustls::ClientConfig::builder_with_provider(saltq_transport::tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("tls13")
        .with_root_certificates(roots)
        .with_client_auth_cert(admin.chain, admin.key)
        .expect("client auth");
    cfg.alpn_protocols = vec![alpn.to_vec()];
    cfg
}

/// The leaf certificate a new connection to the master is served, over QUIC and over TCP.
fn served(master: &Master) -> (CertificateDer<'static>, CertificateDer<'static>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", master.port).parse().unwrap();
    rt.block_on(async {
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(admin_tls(master, b"h3"))
            .expect("quic crypto");
        let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).expect("endpoint");
        ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
        let conn = tokio::time::timeout(
            Duration::from_secs(10),
            ep.connect(addr, "localhost").expect("connect"),
        )
        .await
        .expect("quic handshake in time")
        .expect("quic handshake");
        let quic = conn
            .peer_identity()
            .and_then(|id| id.downcast::<Vec<CertificateDer<'static>>>().ok())
            .expect("the master's chain")[0]
            .clone();
        conn.close(0u32.into(), b"done");
        ep.wait_idle().await;

        let tcp = tokio::net::TcpStream::connect(addr).await.expect("tcp");
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let tls = tokio::time::timeout(
            Duration::from_secs(10),
            tokio_rustls::TlsConnector::from(Arc::new(admin_tls(master, b"h2"))).connect(name, tcp),
        )
        .await
        .expect("tls handshake in time")
        .expect("tls handshake");
        let h2 = tls
            .get_ref()
            .1
            .peer_certificates()
            .expect("the master's chain")[0]
            .clone()
            .into_owned();
        (quic, h2)
    })
}

/// A log's text without its colours (`field=value` reads as written).
fn log_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters, ended by a letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn count(path: &Path, needle: &str) -> usize {
    log_of(path).matches(needle).count()
}

fn wait_for_log(path: &Path, what: &str, needles: &[&str]) -> String {
    eventually(what, Duration::from_secs(20), || {
        let log = log_of(path);
        log.lines()
            .find(|l| needles.iter().all(|n| l.contains(n)))
            .map(str::to_owned)
    })
}

/// The master's CA made before the master starts (it keeps a CA it finds in pki_dir), so the
/// test can issue the replacement from the CA the CLI and the minions trust.
fn master_with_own_files(extra: &str) -> (Master, Ca, PathBuf) {
    let mut made = None;
    let master = Master::start_with(|dir| {
        let pki_dir = dir.join("root/etc/saltq/pki/master");
        let ca = Ca::create("e2e CA", &pki_dir.join("ca.crt"), &pki_dir.join("ca.key"))
            .expect("create CA");
        let tls = dir.join("tls");
        write_server_pair(&ca, &tls);
        made = Some((ca, tls.clone()));
        format!(
            "master_cert_file: {}\nmaster_key_file: {}\n{extra}",
            tls.join("tls.crt").display(),
            tls.join("tls.key").display()
        )
    });
    let (ca, tls) = made.expect("setup ran");
    (master, ca, tls)
}

#[test]
fn replaced_master_certificate_reaches_new_connections_and_existing_ones_stay_up() {
    let (master, ca, tls) = master_with_own_files("auto_accept: true\n");
    let minion = master.minion("cert1", "");
    master.wait_for("cert1");
    let mut watcher = master.watch_all_events("*");
    let first = leaf(&std::fs::read_to_string(tls.join("tls.crt")).unwrap());
    assert_eq!(served(&master), (first.clone(), first.clone()));

    // cert-manager renews the certificate: new key, new serial.
    let second = write_server_pair(&ca, &tls);
    assert_ne!(serial(&first), serial(&second));
    eventually(
        "new connections get the new certificate",
        Duration::from_secs(20),
        || (served(&master) == (second.clone(), second.clone())).then_some(()),
    );
    wait_for_log(
        &master.log(),
        "the reload is logged",
        &[
            "reloaded the master's certificate from",
            "tls.crt",
            &format!("serial {}", serial(&second)),
        ],
    );

    // The minion's connection and the event stream were not dropped.
    let o = master.saltq(&["cert1", "test.echo", "after-the-swap", "--out", "json"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(o.json(), serde_json::json!({"cert1": "after-the-swap"}));
    assert_eq!(
        count(&minion.log(), "connected to master"),
        1,
        "the minion kept its connection"
    );
    assert_eq!(
        count(&master.log(), "minion subscribed minion=cert1"),
        1,
        "the master saw one subscription"
    );

    // A broken replacement: not a certificate. Refused, named, the one in use kept.
    std::fs::write(tls.join("tls.crt"), "not a certificate\n").unwrap();
    let line = wait_for_log(
        &master.log(),
        "the unparsable certificate is refused",
        &[
            "not reloading the master's certificate",
            "tls.crt",
            "keeping the one in use",
        ],
    );
    assert!(line.contains("no certificate"), "{line}");
    // A certificate whose key is not the one beside it.
    let key = std::fs::read(tls.join("tls.key")).unwrap();
    let third = write_server_pair(&ca, &tls);
    std::fs::write(tls.join("tls.key"), key).unwrap();
    let line = wait_for_log(
        &master.log(),
        "the mismatched pair is refused",
        &["not reloading the master's certificate", "do not match"],
    );
    assert!(line.contains("tls.key"), "{line}");
    let now = served(&master);
    assert_eq!(now, (second.clone(), second.clone()), "still the second");
    assert_ne!(now.0, third);

    // Through all of it the minion answered on its one connection, and the stream stayed open.
    let o = master.saltq(&[
        "cert1",
        "test.echo",
        "after-the-broken-files",
        "--out",
        "json",
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(count(&minion.log(), "connected to master"), 1);
    assert!(
        watcher.try_wait().expect("watcher").is_none(),
        "saltq events is still running"
    );
    let returned = |lines: &[String], echo: &str| {
        lines
            .iter()
            .any(|l| l.contains("/ret/cert1") && l.contains(echo))
    };
    let lines = watched_until(watcher, Duration::from_secs(20), |lines| {
        returned(lines, "after-the-swap") && returned(lines, "after-the-broken-files")
    });
    let seen = lines.join("\n");
    for echo in ["after-the-swap", "after-the-broken-files"] {
        assert!(
            returned(&lines, echo),
            "the open event stream saw the return of {echo}: {seen}"
        );
    }
}

#[test]
fn a_client_ca_added_to_the_bundle_is_trusted_without_a_restart() {
    let other = Scratch::new("client-ca");
    let first = Ca::create(
        "first",
        &other.0.join("first.crt"),
        &other.0.join("first.key"),
    )
    .expect("first CA");
    let second = Ca::create(
        "second",
        &other.0.join("second.crt"),
        &other.0.join("second.key"),
    )
    .expect("second CA");
    let bundle = other.0.join("bundle.pem");
    std::fs::write(&bundle, first.cert_pem()).unwrap();
    let (cert, key) = second
        .issue(&IssueRequest {
            common_name: "bob".into(),
            role: CertRole::Client,
            dns_names: vec![],
            ips: vec![],
            days: 1,
        })
        .unwrap();
    std::fs::write(other.0.join("bob.crt"), cert).unwrap();
    std::fs::write(other.0.join("bob.key"), key).unwrap();
    let master = Master::start(&format!("client_ca_files: [{}]\n", bundle.display()));
    let addr = format!("127.0.0.1:{}", master.port);
    let ca_path = master.pki_dir().join("ca.crt");
    let bob = || {
        master.saltq_with(
            &[
                "--master",
                &addr,
                "--ca",
                ca_path.to_str().unwrap(),
                "--cert",
                other.0.join("bob.crt").to_str().unwrap(),
                "--key",
                other.0.join("bob.key").to_str().unwrap(),
            ],
            &["key", "-L", "--out", "json"],
        )
    };
    let o = bob();
    assert_eq!(o.code, 69, "not trusted yet: {o:?}");
    assert!(o.stderr.contains("rejected our certificate"), "{o:?}");

    std::fs::write(
        &bundle,
        format!("{}{}", first.cert_pem(), second.cert_pem()),
    )
    .unwrap();
    eventually("bob's CA trusted", Duration::from_secs(20), || {
        (bob().code == 0).then_some(())
    });
    wait_for_log(
        &master.log(),
        "the reload is logged",
        &["reloaded the trusted CAs from", "bundle.pem"],
    );

    // A bundle broken halfway through a copy: refused, named, the CAs in use kept.
    std::fs::write(&bundle, "-----BEGIN CERTIFICATE-----\nMIIB\n").unwrap();
    wait_for_log(
        &master.log(),
        "the broken bundle is refused",
        &[
            "not reloading the trusted CAs",
            "bundle.pem",
            "keeping the one in use",
        ],
    );
    assert_eq!(bob().code, 0, "still trusted");

    // Taken out of the bundle, the CA is no longer trusted by new connections.
    std::fs::write(&bundle, first.cert_pem()).unwrap();
    eventually(
        "bob's CA no longer trusted",
        Duration::from_secs(20),
        || (bob().code == 69).then_some(()),
    );
}

/// The serial and validity of the certificate in a minion's `minion.crt`, and whether the
/// minion made it itself.
fn minion_cert(pki_dir: &Path) -> Option<(String, Validity, bool)> {
    let chain = pki::load_certs(&pki_dir.join("minion.crt")).ok()?;
    let s = pki::subject(&chain[0]).ok()?;
    Some((
        serial(&chain[0]),
        pki::validity(&chain[0]).ok()?,
        s.self_issued,
    ))
}

#[test]
fn a_short_lived_minion_certificate_is_renewed_and_the_minion_answers_after_it_expired() {
    // 20-second certificates: renewed about 12 s after issue, 8 s before they expire.
    let days = 20.0 / 86400.0;
    let mut master = Master::start(&format!(
        "auto_accept: true\nissue_minion_certs: true\nminion_cert_days: {days}\n"
    ));
    let minion = master.minion("short1", "");
    master.wait_for("short1");
    let pki_dir = minion.pki_dir();

    // Accepted with its self-signed certificate, the minion is offered one from the master's CA.
    let (first_serial, first, _) = eventually(
        "the minion holds an issued certificate",
        Duration::from_secs(20),
        || minion_cert(&pki_dir).filter(|(_, _, self_signed)| !self_signed),
    );
    assert_eq!(
        first.not_after - first.not_before,
        22,
        "20 s, backdated 2 s"
    );
    let (second_serial, second, _) = eventually(
        "the minion renews it before it expires",
        Duration::from_secs(30),
        || minion_cert(&pki_dir).filter(|(s, _, _)| *s != first_serial),
    );
    // Issued (backdated 2 s) before the first one expired.
    assert!(
        second.not_before + 2 <= first.not_after,
        "renewed before the first one expired: {second:?} after {first:?}"
    );
    assert!(
        second.not_after > first.not_after,
        "{second:?} after {first:?}"
    );
    wait_for_log(
        &minion.log(),
        "the minion logs the renewal",
        &[
            "renewed the minion certificate",
            &format!("(serial {second_serial})"),
        ],
    );

    // Once the first certificate has expired the minion still answers on its connection.
    let wait = first.not_after + 2 - unix_now();
    if wait > 0 {
        std::thread::sleep(Duration::from_secs(wait as u64));
    }
    let o = master.saltq(&["short1", "test.ping", "--out", "json"]);
    assert_eq!(o.json(), serde_json::json!({"short1": true}), "{o:?}");

    // A new connection: the minion presents its current, renewed certificate, which the master
    // checks as one from its CA, and keeps renewing over the new connection. Restarted right
    // after a renewal, so the certificate has its whole life left however slow the restart.
    let current = minion_cert(&pki_dir).expect("minion.crt").0;
    eventually("the next renewal", Duration::from_secs(30), || {
        minion_cert(&pki_dir).filter(|(s, _, _)| *s != current)
    });
    master.restart();
    master.wait_for("short1");
    let log = log_of(&master.log());
    let restarted = log
        .rsplit("master listening")
        .next()
        .expect("the restarted master's part of the log");
    assert!(
        restarted.contains("minion subscribed minion=short1")
            && restarted.contains("certificate=MasterCa"),
        "the minion came back with the certificate the master's CA issued: {restarted}"
    );
    assert!(
        !log.contains("refusing the certificate of short1"),
        "never refused: {log}"
    );
    let last = minion_cert(&pki_dir).expect("minion.crt").0;
    eventually(
        "renewed again over the new connection",
        Duration::from_secs(30),
        || {
            let log = log_of(&master.log());
            let restarted = log.rsplit("master listening").next().unwrap_or_default();
            (restarted.contains("issued minion short1 a certificate")
                && minion_cert(&pki_dir).is_some_and(|(s, _, _)| s != last))
            .then_some(())
        },
    );
}

#[test]
fn an_expired_minion_certificate_is_refused_with_a_clear_message() {
    let master = Master::start("auto_accept: true\n");
    let mut minion = master.minion("old1", "");
    master.wait_for("old1");
    minion.stop();

    // While it was stopped, the certificate the master's CA had issued it ran out.
    let pki_dir = minion.pki_dir();
    let own = pki::load_certs(&pki_dir.join("minion.crt")).expect("minion.crt");
    let spki = pki::spki_from_pem(&pki::subject(&own[0]).unwrap().public_key_pem).unwrap();
    let ca = Ca::load(
        &master.pki_dir().join("ca.crt"),
        &master.pki_dir().join("ca.key"),
    )
    .expect("the master's CA");
    let now = unix_now();
    let expired = ca
        .certify(&CertifyRequest {
            common_name: "old1".into(),
            role: CertRole::Minion,
            public_key_der: spki,
            validity: Validity {
                not_before: now - 3600,
                not_after: now - 60,
            },
        })
        .expect("certify");
    std::fs::write(pki_dir.join("minion.crt"), &expired).unwrap();
    let expired_serial = serial(&leaf(&expired));
    minion.restart();

    let line = wait_for_log(
        &master.log(),
        "the master says why it refuses the certificate",
        &["refusing the certificate of old1", "expired at"],
    );
    assert!(
        line.contains("issued by the master's CA") && line.contains(&expired_serial),
        "{line}"
    );
    let line = wait_for_log(
        &minion.log(),
        "the minion says why it is refused",
        &["the master refused our certificate", "expired at"],
    );
    assert!(line.contains("minion.crt"), "{line}");
    let o = master.saltq(&["old1", "test.ping", "--out", "json", "-t", "2"]);
    assert_ne!(
        o.json(),
        serde_json::json!({"old1": true}),
        "an expired certificate must not get in: {o:?}"
    );

    // As the message says: without the expired file the minion comes back with a self-signed
    // certificate for the key the master accepted.
    minion.stop();
    std::fs::remove_file(pki_dir.join("minion.crt")).unwrap();
    minion.restart();
    master.wait_for("old1");
}
