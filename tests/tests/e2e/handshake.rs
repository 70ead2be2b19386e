//! Dialling the master when it cannot take us: nothing listening, or too many handshakes at
//! once (refused as busy, then admitted). The handshake's refusals of bad certificates are in
//! the security suite (`security.rs`).

use std::sync::Arc;

use saltq_tests::{Master, Scratch};

#[test]
fn nothing_listening_says_where_and_why() {
    let dir = Scratch::new("nolisten");
    let master = Master::start("");
    let addr = "127.0.0.1:1".to_string();
    let _ = dir;
    for transport in ["h2", "quic"] {
        let o = master.saltq_with(
            &[
                "--master",
                &addr,
                "--ca",
                master.pki_dir().join("ca.crt").to_str().unwrap(),
                "--cert",
                master.pki_dir().join("admin.crt").to_str().unwrap(),
                "--key",
                master.pki_dir().join("admin.key").to_str().unwrap(),
                "--transport",
                transport,
            ],
            &["key", "-L"],
        );
        assert_eq!(o.code, 69, "{o:?}");
        assert!(
            o.stderr.contains(&addr) && o.stderr.contains(transport),
            "{o:?}"
        );
        let why = if transport == "h2" {
            "connection refused"
        } else {
            "timed out"
        };
        assert!(o.stderr.contains(why), "{transport}: {o:?}");
    }
}

/// A server certificate verifier that tells when the handshake reached it, then stalls it: the
/// master's side of that handshake stays in progress meanwhile.
#[derive(Debug)]
struct StallingVerifier {
    reached: std::sync::mpsc::Sender<()>,
    stall: std::time::Duration,
}

impl rustls::client::danger::ServerCertVerifier for StallingVerifier {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        let _ = self.reached.send(());
        std::thread::sleep(self.stall);
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("TLS 1.2 is not offered".into()))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let algs = saltq_transport::tls::provider().signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, &algs)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        saltq_transport::tls::provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Starts a QUIC handshake with the master that stalls `stall` once it reached our side's
/// certificate check, holding one of the master's turns meanwhile. Returns when the handshake
/// got there; the thread ends when the stall is over.
fn stalled_handshake(master: &Master, stall: std::time::Duration) -> std::thread::JoinHandle<()> {
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", master.port).parse().unwrap();
    let (reached_tx, reached) = std::sync::mpsc::channel();
    let slow = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut cfg =
                rustls::ClientConfig::builder_with_provider(saltq_transport::tls::provider())
                    .with_protocol_versions(&[&rustls::version::TLS13])
                    .expect("tls13")
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(StallingVerifier {
                        reached: reached_tx,
                        stall,
                    }))
                    .with_no_client_auth();
            cfg.alpn_protocols = vec![b"h3".to_vec()];
            let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(cfg).unwrap();
            let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
            ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
            // It has no client certificate, so the master refuses it once it finishes.
            let _ = ep.connect(addr, "localhost").unwrap().await;
        })
    });
    reached
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the slow handshake reached the master");
    slow
}

#[test]
fn connections_beyond_max_handshakes_are_refused_as_busy_then_admitted() {
    let master = Master::start("max_handshakes: 1\nhandshake_queue_seconds: 0.3\n");

    // A handshake that holds the master's only turn (for up to its 2 s turn limit).
    let slow = stalled_handshake(&master, std::time::Duration::from_secs(3));

    // Meanwhile another connection waits 0.3 s for a turn, then is refused, and says why.
    let busy = master.saltq(&["--transport", "quic", "key", "-L"]);
    assert_eq!(busy.code, 69, "{busy:?}");
    assert!(busy.stderr.contains("busy"), "{busy:?}");

    // Once the slow handshake is over, the turn is free again.
    slow.join().unwrap();
    let ok = master.saltq(&["--transport", "quic", "key", "-L"]);
    assert_eq!(ok.code, 0, "{ok:?}");
}

/// A peer that stops answering in mid-handshake (one that gave up while it was queued, or a
/// dead link) holds its turn for 2 s, not until the idle timeout (20 s here): with one turn and
/// a queue patience of 6 s, the next connection is admitted and served while the stalled
/// handshake is still under way. Holding the turn to the end, the next one would wait in vain
/// (the CLI gives up after 5 s).
#[test]
fn a_stalled_handshake_gives_up_its_turn_after_two_seconds() {
    let master = Master::start(
        "max_handshakes: 1\nhandshake_queue_seconds: 6\nidle_timeout: 20\nkeep_alive: 1\n",
    );
    let stall = std::time::Duration::from_secs(12);
    let slow = stalled_handshake(&master, stall);
    let started = std::time::Instant::now();

    let ok = master.saltq(&["--transport", "quic", "key", "-L"]);
    assert_eq!(
        ok.code, 0,
        "admitted while the other handshake stalls: {ok:?}"
    );
    assert!(
        started.elapsed() < stall,
        "served before the stalled handshake ended: {:?}",
        started.elapsed()
    );
    assert_eq!(
        counter(
            &master,
            "saltq_handshakes_total{outcome=\"outlasted_turn\"}"
        ),
        1
    );
    assert_eq!(
        counter(&master, "saltq_handshakes_total{outcome=\"refused_busy\"}"),
        0
    );
    drop(slow); // ends on its own when the stall is over
}

/// A counter from the master's `/metrics`.
fn counter(master: &Master, name: &str) -> u64 {
    let http = master.http.clone().expect("http address");
    let (code, text) = crate::ops::get(&http, "/metrics");
    assert_eq!(code, 200, "{text}");
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
}

/// A minion reconnecting to a restarted master resumes its TLS session with a ticket of the
/// master's previous process (the ticket secret is kept in `pki_dir/tls_ticket.key`), so a
/// fleet's reconnect verifies and signs nothing; with the secret gone, the same minion does a
/// full handshake and is back all the same.
#[test]
fn a_restarted_master_resumes_its_minions_tls_sessions() {
    let mut master = Master::start("auto_accept: true");
    let _m = master.minion("res1", "");
    master.wait_for("res1");
    let resumed = "saltq_handshakes_resumed_total";
    assert_eq!(counter(&master, resumed), 0, "a first connection");
    assert!(master.pki_dir().join("tls_ticket.key").is_file());

    // The minion's first connection trusted the master's CA on first use and pinned it; its
    // next one trusts the pinned CA, another TLS configuration, so it starts a new session.
    master.kill();
    master.relaunch();
    master.wait_for("res1");
    assert_eq!(
        counter(&master, resumed),
        0,
        "the first dial with the pinned CA"
    );

    // From then on a restart is a resumption.
    master.kill();
    master.relaunch();
    master.wait_for("res1");
    assert_eq!(
        counter(&master, resumed),
        1,
        "the minion resumed its session"
    );
    assert_eq!(master.saltq(&["res1", "test.ping"]).code, 0);

    std::fs::remove_file(master.pki_dir().join("tls_ticket.key")).unwrap();
    master.restart();
    master.wait_for("res1");
    assert_eq!(
        counter(&master, resumed),
        0,
        "a new secret opens no old ticket"
    );
    assert_eq!(master.saltq(&["res1", "test.ping"]).code, 0);
}
