//! Handshake refusals: no client certificate, or one from another CA, is refused during the TLS
//! handshake on both QUIC and TCP, before any RPC is served.

use std::sync::Arc;

use saltq_tests::{Master, Scratch};
use saltq_transport::pki::{Ca, CertRole, IssueRequest};

fn client_without_cert(master: &Master, alpn: &[u8]) -> rustls::ClientConfig {
    let ca = saltq_transport::pki::load_certs(&master.pki_dir().join("ca.crt")).expect("ca");
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca[0].clone()).expect("root");
    let mut cfg = rustls::ClientConfig::builder_with_provider(saltq_transport::tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("tls13")
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![alpn.to_vec()];
    cfg
}

#[tokio::test]
async fn no_client_certificate_is_refused_over_quic_and_tcp() {
    let master = tokio::task::spawn_blocking(|| Master::start(""))
        .await
        .expect("master");
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", master.port).parse().unwrap();

    // QUIC: the server aborts the handshake with TLS alert certificate_required.
    let cfg = client_without_cert(&master, b"h3");
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(cfg).expect("quic crypto");
    let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).expect("endpoint");
    ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let conn = ep.connect(addr, "localhost").expect("connect").await;
    let err = match conn {
        Err(e) => e.to_string(),
        // TLS 1.3 lets the client finish first; the refusal then closes the connection.
        Ok(c) => c.closed().await.to_string(),
    };
    assert!(err.to_lowercase().contains("certificate"), "quic: {err}");

    // TCP: the server sends the same alert; nothing is served.
    let cfg = client_without_cert(&master, b"h2");
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("tcp");
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let res = tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(name, tcp)
        .await;
    let err = match res {
        Err(e) => e.to_string(),
        Ok(mut s) => {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let _ = s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await;
            let mut buf = [0u8; 64];
            match s.read(&mut buf).await {
                Err(e) => e.to_string(),
                Ok(n) => format!("read {n} bytes: the server answered without a certificate"),
            }
        }
    };
    assert!(err.to_lowercase().contains("certificate"), "tcp: {err}");
}

#[test]
fn certificate_from_another_ca_is_refused_over_quic_and_tcp() {
    let master = Master::start("");
    let other = Scratch::new("otherca");
    let ca = Ca::create(
        "another CA",
        &other.0.join("ca.crt"),
        &other.0.join("ca.key"),
    )
    .expect("ca");
    // Even a "client" certificate with the right role marker: the issuer is what counts.
    let (cert, key) = ca
        .issue(&IssueRequest {
            common_name: "mallory".into(),
            role: CertRole::Client,
            dns_names: vec![],
            ips: vec![],
            days: 1,
        })
        .expect("issue");
    std::fs::write(other.0.join("c.crt"), cert).unwrap();
    std::fs::write(other.0.join("c.key"), key).unwrap();
    let addr = format!("127.0.0.1:{}", master.port);
    let ca_path = master.pki_dir().join("ca.crt");
    for transport in ["quic", "h2"] {
        let o = master.saltq_with(
            &[
                "--master",
                &addr,
                "--ca",
                ca_path.to_str().unwrap(),
                "--cert",
                other.0.join("c.crt").to_str().unwrap(),
                "--key",
                other.0.join("c.key").to_str().unwrap(),
                "--transport",
                transport,
            ],
            &["key", "-L"],
        );
        assert_eq!(o.code, 69, "{transport}: {o:?}");
        assert!(
            o.stderr.contains("rejected our certificate"),
            "{transport}: {o:?}"
        );
        assert!(
            o.stderr.contains(&addr),
            "{transport}: names the address: {o:?}"
        );
    }
    // And a master we do not trust: our CA file is not the one that signed it.
    let o = master.saltq_with(
        &[
            "--master",
            &addr,
            "--ca",
            other.0.join("ca.crt").to_str().unwrap(),
            "--cert",
            master.pki_dir().join("admin.crt").to_str().unwrap(),
            "--key",
            master.pki_dir().join("admin.key").to_str().unwrap(),
        ],
        &["key", "-L"],
    );
    assert_eq!(o.code, 69, "{o:?}");
    assert!(o.stderr.contains("certificate is not trusted"), "{o:?}");
}

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

#[test]
fn connections_beyond_max_handshakes_are_refused_as_busy_then_admitted() {
    let master = Master::start("max_handshakes: 1\nhandshake_queue_seconds: 0.3\n");
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", master.port).parse().unwrap();

    // A handshake that holds the master's only turn for 3 s.
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
                        stall: std::time::Duration::from_secs(3),
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

    // Meanwhile another connection waits 0.3 s for a turn, then is refused, and says why.
    let busy = master.saltq(&["--transport", "quic", "key", "-L"]);
    assert_eq!(busy.code, 69, "{busy:?}");
    assert!(busy.stderr.contains("busy"), "{busy:?}");

    // Once the slow handshake is over, the turn is free again.
    slow.join().unwrap();
    let ok = master.saltq(&["--transport", "quic", "key", "-L"]);
    assert_eq!(ok.code, 0, "{ok:?}");
}
