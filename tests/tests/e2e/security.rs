//! The security suite (issue #15), in one place: every way a peer may try to get past the
//! master's rule that identity comes from the TLS certificate and decides what may be called,
//! or to wear the master out, and the exact refusal each one gets. Real master and minion
//! processes, real QUIC (and TLS over TCP where both listeners apply), no stand-ins.
//!
//! - Handshake: no certificate, a certificate from another CA, an expired certificate.
//! - Lanes: a client certificate calling MinionService, a minion certificate calling the client
//!   services, a self-signed certificate dressed as a client.
//! - The minion protocol: a return for a job the minion was not sent, reserved event tags.
//! - Keys: a pending key subscribing, a changed key for an accepted id, a deleted key
//!   reconnecting, a rejected key.
//! - Resources: oversized messages (unary and streamed), deep nesting, 10,000 concurrent streams
//!   on one connection.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use saltq_proto::v1::{
    self as pb, event_service_client::EventServiceClient, job_service_client::JobServiceClient,
    key_service_client::KeyServiceClient, minion_service_client::MinionServiceClient,
    runner_service_client::RunnerServiceClient,
};
use saltq_tests::{Master, Scratch, eventually, watched_until};
use saltq_transport::pki::{Ca, CertKey, CertRole, IssueRequest, load_certs};
use saltq_transport::tls::ServerTrust;
use saltq_transport::{Channel, ConnectOptions, Limits, TransportKind, connect};
use serde_json::json;
use tonic::Code;

const TRANSPORTS: [TransportKind; 2] = [TransportKind::Quic, TransportKind::H2];

/// Dials the master over `transport` as the holder of `cert`/`key`, trusting its CA.
async fn dial(
    master: &Master,
    transport: TransportKind,
    cert: &Path,
    key: &Path,
) -> Result<Channel, saltq_transport::ConnectError> {
    let opts = ConnectOptions {
        ipv6: None,
        host: "127.0.0.1".into(),
        port: master.port,
        transport,
        identity: CertKey::load(cert, key).expect("identity"),
        trust: ServerTrust::Ca(load_certs(&master.pki_dir().join("ca.crt")).expect("ca")),
        limits: Limits::default(),
        connect_timeout: Duration::from_secs(5),
        reuse: None,
    };
    connect(&opts).await
}

/// [`dial`] that must succeed.
async fn channel(master: &Master, transport: TransportKind, cert: &Path, key: &Path) -> Channel {
    dial(master, transport, cert, key)
        .await
        .unwrap_or_else(|e| panic!("connect over {}: {e}", transport.as_str()))
}

/// A channel with the master's own client certificate (`admin`).
async fn as_admin(master: &Master, transport: TransportKind) -> Channel {
    let pki = master.pki_dir();
    channel(
        master,
        transport,
        &pki.join("admin.crt"),
        &pki.join("admin.key"),
    )
    .await
}

/// A channel with the key a minion's pki_dir holds.
async fn as_minion(master: &Master, transport: TransportKind, pki: &Path) -> Channel {
    channel(
        master,
        transport,
        &pki.join("minion.crt"),
        &pki.join("minion.key"),
    )
    .await
}

/// Writes a self-signed minion key for `id` into `dir` (as `minion.crt`/`minion.key`), as a
/// minion makes on its first start.
fn self_signed(dir: &Path, id: &str) -> PathBuf {
    let (cert, key) = saltq_transport::pki::self_signed_minion(id, None).expect("self-signed");
    std::fs::write(dir.join("minion.crt"), cert).unwrap();
    std::fs::write(dir.join("minion.key"), key).unwrap();
    dir.to_path_buf()
}

fn ret(jid: &str, value: serde_json::Value) -> pb::ReturnRequest {
    pb::ReturnRequest {
        jid: jid.into(),
        fun: vec!["test.echo".into()],
        fun_args: None,
        r#return: Some(saltq_transport::value::to_prost(&value)),
        retcode: 0,
        success: true,
        out: String::new(),
        metadata: None,
    }
}

fn run_request(tgt: &str, fun: &str, arg: serde_json::Value) -> pb::RunRequest {
    pb::RunRequest {
        publish: Some(pb::PublishRequest {
            tgt: tgt.into(),
            tgt_type: "list".into(),
            fun: vec![fun.into()],
            arg: vec![saltq_transport::value::to_prost(&arg)],
            ..Default::default()
        }),
        timeout: 10.0,
        gather_job_timeout: 5.0,
    }
}

/// The key state the master attached to a refusal (`saltq-key-state`).
fn key_state(s: &tonic::Status) -> Option<String> {
    s.metadata()
        .get(saltq_transport::KEY_STATE_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Asserts a refusal's code and exact message.
#[track_caller]
fn refused<T: std::fmt::Debug>(
    what: &str,
    r: Result<T, tonic::Status>,
    code: Code,
    message: &str,
) -> tonic::Status {
    let s = match r {
        Ok(v) => panic!("{what}: accepted ({v:?}), expected {code:?} {message:?}"),
        Err(s) => s,
    };
    assert_eq!((s.code(), s.message()), (code, message), "{what}: {s:?}");
    s
}

// ---------------------------------------------------------------------------------------------
// Handshake: refused before any request is served.
// ---------------------------------------------------------------------------------------------

/// A client TLS configuration trusting the master's CA, with `identity` (or none).
fn tls_client(master: &Master, alpn: &[u8], identity: Option<&CertKey>) -> rustls::ClientConfig {
    let ca = load_certs(&master.pki_dir().join("ca.crt")).expect("ca");
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca[0].clone()).expect("root");
    let builder = rustls::ClientConfig::builder_with_provider(saltq_transport::tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("tls13")
        .with_root_certificates(roots);
    let mut cfg = match identity {
        Some(id) => builder
            .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
            .expect("client auth"),
        None => builder.with_no_client_auth(),
    };
    cfg.alpn_protocols = vec![alpn.to_vec()];
    cfg
}

/// What a QUIC client with `identity` sees when it dials the master: the connection error.
/// Panics if the master lets it in (it stays up past the master's verdict).
async fn quic_refusal(master: &Master, identity: Option<&CertKey>) -> String {
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", master.port).parse().unwrap();
    let cfg = tls_client(master, b"h3", identity);
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(cfg).expect("quic crypto");
    let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).expect("endpoint");
    ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let res = ep.connect(addr, "localhost").expect("connect").await;
    let err = match res {
        Err(e) => e.to_string(),
        // TLS 1.3 lets the client finish first; the master's verdict then closes the connection.
        Ok(c) => tokio::time::timeout(Duration::from_secs(5), c.closed())
            .await
            .expect("the master closes a connection it refuses")
            .to_string(),
    };
    ep.wait_idle().await;
    err
}

/// What a TLS-over-TCP client with `identity` sees: the alert it reads after its handshake.
async fn tcp_refusal(master: &Master, identity: Option<&CertKey>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let cfg = tls_client(master, b"h2", identity);
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", master.port))
        .await
        .expect("tcp");
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    match tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(name, tcp)
        .await
    {
        Err(e) => e.to_string(),
        Ok(mut s) => {
            let _ = s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await;
            let mut buf = [0u8; 64];
            match s.read(&mut buf).await {
                Err(e) => e.to_string(),
                Ok(n) => panic!("read {n} bytes: the master answered a refused client"),
            }
        }
    }
}

/// Runs `saltq key -L` with an explicit identity over `transport`.
fn cli_with(
    master: &Master,
    ca: &Path,
    cert: &Path,
    key: &Path,
    transport: &str,
) -> saltq_tests::Out {
    let addr = format!("127.0.0.1:{}", master.port);
    master.saltq_with(
        &[
            "--master",
            &addr,
            "--ca",
            ca.to_str().unwrap(),
            "--cert",
            cert.to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
            "--transport",
            transport,
        ],
        &["key", "-L"],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_client_certificate_is_refused_in_the_handshake() {
    let master = tokio::task::spawn_blocking(|| Master::start(""))
        .await
        .expect("master");
    // QUIC: CONNECTION_CLOSE with the TLS alert certificate_required (116) as crypto error.
    let err = quic_refusal(&master, None).await;
    assert_eq!(
        err,
        "aborted by peer: the cryptographic handshake failed: error 116: peer sent no certificates",
        "quic"
    );
    // TCP: the same alert.
    let err = tcp_refusal(&master, None).await;
    assert_eq!(err, "received fatal alert: CertificateRequired", "tcp");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_from_another_ca_is_refused_in_the_handshake() {
    let master = tokio::task::spawn_blocking(|| Master::start(""))
        .await
        .expect("master");
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
    let (crt, key_path) = (other.0.join("c.crt"), other.0.join("c.key"));
    std::fs::write(&crt, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    let id = CertKey::load(&crt, &key_path).unwrap();

    // The alert unknown_ca (48).
    let err = quic_refusal(&master, Some(&id)).await;
    assert_eq!(
        err,
        "aborted by peer: the cryptographic handshake failed: error 48: invalid peer certificate: UnknownIssuer",
        "quic"
    );
    let err = tcp_refusal(&master, Some(&id)).await;
    assert_eq!(err, "received fatal alert: UnknownCA", "tcp");

    // What the user of the CLI reads.
    let addr = format!("127.0.0.1:{}", master.port);
    let master_ca = master.pki_dir().join("ca.crt");
    for transport in ["quic", "h2"] {
        let o = cli_with(&master, &master_ca, &crt, &key_path, transport);
        assert_eq!(o.code, 69, "{transport}: {o:?}");
        assert!(
            o.stderr.contains(&format!(
                "cannot reach the master at {addr} over {transport}: the master rejected our certificate"
            )),
            "{transport}: {o:?}"
        );
    }
    // And the other way round: a master whose certificate our CA file did not sign.
    let pki = master.pki_dir();
    let o = cli_with(
        &master,
        &other.0.join("ca.crt"),
        &pki.join("admin.crt"),
        &pki.join("admin.key"),
        "quic",
    );
    assert_eq!(o.code, 69, "{o:?}");
    assert!(
        o.stderr.contains(&format!(
            "cannot reach the master at {addr} over quic: the master's certificate is not trusted"
        )),
        "{o:?}"
    );
}

/// Writes a certificate for `cn` (with organizational unit `ou`) valid only in 2020, signed by
/// the master's CA when `by_master_ca`, self-signed otherwise; returns the cert and key paths.
fn expired_certificate(
    master: &Master,
    dir: &Path,
    cn: &str,
    ou: Option<&str>,
    by_master_ca: bool,
) -> (PathBuf, PathBuf) {
    use rcgen::{
        CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair, KeyUsagePurpose,
    };
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, cn);
    if let Some(ou) = ou {
        params
            .distinguished_name
            .push(DnType::OrganizationalUnitName, ou);
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2020, 12, 31);
    let pem = if by_master_ca {
        let pki = master.pki_dir();
        let ca_pem = std::fs::read_to_string(pki.join("ca.crt")).unwrap();
        let ca_key = KeyPair::from_pem(&std::fs::read_to_string(pki.join("ca.key")).unwrap())
            .expect("ca key");
        let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key).expect("ca");
        let cert = params.signed_by(&key, &issuer).expect("sign");
        format!("{}{ca_pem}", cert.pem())
    } else {
        params.self_signed(&key).expect("self-sign").pem()
    };
    let (crt, k) = (dir.join(format!("{cn}.crt")), dir.join(format!("{cn}.key")));
    std::fs::write(&crt, pem).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    (crt, k)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_certificate_is_refused_in_the_handshake() {
    let master = tokio::task::spawn_blocking(|| Master::start("auto_accept: true"))
        .await
        .expect("master");
    let dir = Scratch::new("expired");
    // A client certificate from the master's own CA, and a minion's self-signed one (which
    // auto_accept would otherwise let in): both past their not_after.
    let client = expired_certificate(&master, &dir.0, "old-admin", Some("saltq-client"), true);
    let minion = expired_certificate(&master, &dir.0, "old-minion", None, false);
    for (what, (crt, key)) in [("client", &client), ("minion", &minion)] {
        let id = CertKey::load(crt, key).unwrap();
        // The alert certificate_expired (45), not unknown_ca: the issuer is known, the date is not.
        let err = quic_refusal(&master, Some(&id)).await;
        assert!(
            err.starts_with(
                "aborted by peer: the cryptographic handshake failed: error 45: invalid peer certificate: Expired"
            ),
            "{what} over quic: {err}"
        );
        let err = tcp_refusal(&master, Some(&id)).await;
        assert_eq!(
            err, "received fatal alert: CertificateExpired",
            "{what} over tcp"
        );
    }
    let addr = format!("127.0.0.1:{}", master.port);
    let ca = master.pki_dir().join("ca.crt");
    for transport in ["quic", "h2"] {
        let o = cli_with(&master, &ca, &client.0, &client.1, transport);
        assert_eq!(o.code, 69, "{transport}: {o:?}");
        assert!(
            o.stderr.contains(&format!(
                "cannot reach the master at {addr} over {transport}: the master rejected our certificate"
            )),
            "{transport}: {o:?}"
        );
    }
    // Nothing of the minion reached the key store.
    let o = master.saltq(&["key", "-L", "--out", "json"]);
    assert_eq!(
        o.json(),
        json!({"minions": [], "minions_pre": [], "minions_rejected": [], "minions_denied": []}),
        "{o:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Lanes: which certificate may call which service.
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificate_cannot_call_minion_service() {
    let master = tokio::task::spawn_blocking(|| Master::start("auto_accept: true"))
        .await
        .expect("master");
    let msg = "client certificate \"admin\" cannot pose as a minion: MinionService needs a minion certificate";
    for transport in TRANSPORTS {
        let t = transport.as_str();
        let mut c = MinionServiceClient::new(as_admin(&master, transport).await);
        refused(
            &format!("{t} Subscribe"),
            c.subscribe(pb::SubscribeRequest::default()).await,
            Code::PermissionDenied,
            msg,
        );
        refused(
            &format!("{t} Return"),
            c.r#return(ret("20000101000000000000", json!(1))).await,
            Code::PermissionDenied,
            msg,
        );
        refused(
            &format!("{t} SendEvent"),
            c.send_event(pb::SendEventRequest {
                tag: "salt/minion/admin/start".into(),
                data: None,
            })
            .await,
            Code::PermissionDenied,
            msg,
        );
        refused(
            &format!("{t} GetFile"),
            c.get_file(pb::GetFileRequest {
                saltenv: "base".into(),
                path: "top.sls".into(),
            })
            .await,
            Code::PermissionDenied,
            msg,
        );
    }
    // The refusals left no trace in the key store: "admin" never became a minion.
    let o = tokio::task::spawn_blocking(move || {
        let o = master.saltq(&["key", "-L", "--out", "json"]);
        (o, master)
    })
    .await
    .unwrap()
    .0;
    assert_eq!(o.json()["minions"], json!([]), "{o:?}");
}

/// Every client service, called with `ch`: each must answer PERMISSION_DENIED with `msg(svc)`.
async fn client_services_refuse(ch: Channel, what: &str, msg: impl Fn(&str) -> String) {
    let mut jobs = JobServiceClient::new(ch.clone());
    let job = |svc: &str| (format!("{what}: {svc}"), msg(svc));
    let (w, m) = job("saltq.v1.JobService");
    refused(
        &w,
        jobs.publish(run_request("*", "test.ping", json!([])).publish.unwrap())
            .await,
        Code::PermissionDenied,
        &m,
    );
    refused(
        &w,
        jobs.run(run_request("*", "cmd.run", json!("id"))).await,
        Code::PermissionDenied,
        &m,
    );
    refused(
        &w,
        jobs.list_jobs(pb::ListJobsRequest::default()).await,
        Code::PermissionDenied,
        &m,
    );
    let mut keys = KeyServiceClient::new(ch.clone());
    let (w, m) = job("saltq.v1.KeyService");
    refused(
        &w,
        keys.list_keys(pb::ListKeysRequest::default()).await,
        Code::PermissionDenied,
        &m,
    );
    refused(
        &w,
        keys.accept_keys(pb::AcceptKeysRequest {
            r#match: "*".into(),
            include_rejected: true,
            include_denied: true,
        })
        .await,
        Code::PermissionDenied,
        &m,
    );
    refused(
        &w,
        keys.delete_keys(pb::DeleteKeysRequest {
            r#match: "*".into(),
        })
        .await,
        Code::PermissionDenied,
        &m,
    );
    let mut runners = RunnerServiceClient::new(ch.clone());
    let (w, m) = job("saltq.v1.RunnerService");
    refused(
        &w,
        runners
            .run_runner(pb::RunRunnerRequest {
                fun: "manage.up".into(),
                ..Default::default()
            })
            .await,
        Code::PermissionDenied,
        &m,
    );
    let mut events = EventServiceClient::new(ch);
    let (w, m) = job("saltq.v1.EventService");
    refused(
        &w,
        events
            .fire_event(pb::FireEventRequest {
                tag: "salt/auth".into(),
                data: None,
            })
            .await,
        Code::PermissionDenied,
        &m,
    );
    refused(
        &w,
        events
            .stream_events(pb::StreamEventsRequest::default())
            .await,
        Code::PermissionDenied,
        &m,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minion_certificate_cannot_call_client_services() {
    let (master, m, pending) = tokio::task::spawn_blocking(|| {
        let master = Master::start("");
        let m = master.minion("sm1", "");
        master.accept_and_wait("sm1");
        // A second minion waits in pending: accepting it is what a hijacked minion would try.
        let pending = master.minion("sm2", "");
        eventually("sm2 pending", Duration::from_secs(20), || {
            let o = master.saltq(&["key", "-l", "pre", "--out", "json"]);
            o.stdout.contains("\"sm2\"").then_some(())
        });
        (master, m, pending)
    })
    .await
    .unwrap();
    for transport in TRANSPORTS {
        let ch = as_minion(&master, transport, &m.pki_dir()).await;
        client_services_refuse(ch, &format!("sm1 over {}", transport.as_str()), |svc| {
            format!("minion sm1 may not call {svc}: it needs a client certificate")
        })
        .await;
    }
    // A self-signed certificate that names itself "admin" in the client's organizational unit is
    // a minion called admin, whatever its subject claims: only the master's CA makes clients.
    let dir = Scratch::new("fake-admin");
    let (cert, key) = saltq_transport::pki::self_signed_minion("admin", None).expect("self-signed");
    let key_pair = rcgen::KeyPair::from_pem(&key).unwrap();
    let _ = cert;
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "admin");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationalUnitName, "saltq-client");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let forged = params.self_signed(&key_pair).unwrap();
    std::fs::write(dir.0.join("admin.crt"), forged.pem()).unwrap();
    std::fs::write(dir.0.join("admin.key"), key).unwrap();
    for transport in TRANSPORTS {
        let ch = channel(
            &master,
            transport,
            &dir.0.join("admin.crt"),
            &dir.0.join("admin.key"),
        )
        .await;
        client_services_refuse(
            ch,
            &format!("forged admin over {}", transport.as_str()),
            |svc| format!("minion admin may not call {svc}: it needs a client certificate"),
        )
        .await;
    }
    // None of it took effect: sm2 is still pending, sm1 still accepted.
    let o = tokio::task::spawn_blocking(move || {
        let o = master.saltq(&["key", "-L", "--out", "json"]);
        drop((m, pending));
        (o, master)
    })
    .await
    .unwrap()
    .0;
    assert_eq!(o.json()["minions"], json!(["sm1"]), "{o:?}");
    assert_eq!(o.json()["minions_pre"], json!(["sm2"]), "{o:?}");
}

// ---------------------------------------------------------------------------------------------
// The minion protocol: a minion speaks only for itself.
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minion_cannot_return_for_a_job_it_was_not_sent() {
    let (master, m1, m2, jid) = tokio::task::spawn_blocking(|| {
        let master = Master::start("auto_accept: true");
        let m1 = master.minion("p1", "");
        let m2 = master.minion("p2", "");
        master.wait_for("p1");
        master.wait_for("p2");
        let o = master.saltq(&["-L", "p1", "test.echo", "real"]);
        assert_eq!(o.code, 0, "{o:?}");
        let list = master.saltq(&["jobs", "list", "--function", "test.echo", "--out", "json"]);
        let jid = list
            .json()
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        (master, m1, m2, jid)
    })
    .await
    .unwrap();
    let lookup = |master: &Master| {
        let o = master.saltq(&["jobs", "lookup", &jid, "--out", "json"]);
        o.json()
    };
    for transport in TRANSPORTS {
        let t = transport.as_str();
        // p2 was not sent this job: refused, nothing stored.
        let mut c2 = MinionServiceClient::new(as_minion(&master, transport, &m2.pki_dir()).await);
        let s = refused(
            &format!("{t}: p2 returns for p1's job"),
            c2.r#return(ret(&jid, json!("intruder"))).await,
            Code::PermissionDenied,
            &format!("job {jid} was not sent to minion p2"),
        );
        assert_eq!(key_state(&s), None, "not a key refusal: {s:?}");
        // A jid nobody published.
        refused(
            &format!("{t}: unknown jid"),
            c2.r#return(ret("20000101000000000000", json!(1))).await,
            Code::NotFound,
            "unknown jid 20000101000000000000: no such job",
        );
        // p1 returns again for its own job: acknowledged, but the first return stands.
        let mut c1 = MinionServiceClient::new(as_minion(&master, transport, &m1.pki_dir()).await);
        let r = c1
            .r#return(ret(&jid, json!("forged")))
            .await
            .expect("acknowledged");
        assert!(!r.into_inner().stored, "{t}: a second return is not stored");
        assert_eq!(lookup(&master), json!({"p1": "real"}), "{t}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minion_cannot_fire_reserved_tags() {
    let (master, m2) = tokio::task::spawn_blocking(|| {
        let master = Master::start("auto_accept: true");
        let m2 = master.minion("p2", "");
        master.wait_for("p2");
        (master, m2)
    })
    .await
    .unwrap();
    let jid = "20260101000000000000";
    let watch = master.watch_all_events("*");
    let event = |tag: &str| pb::SendEventRequest {
        tag: tag.into(),
        data: None,
    };
    for transport in TRANSPORTS {
        let mut c = MinionServiceClient::new(as_minion(&master, transport, &m2.pki_dir()).await);
        for (tag, ns) in [
            ("salt/minion/p1/start", "salt/minion/p1/"),
            (&*format!("salt/job/{jid}/ret/p1"), "salt/job/"),
            (&*format!("salt/job/{jid}/new"), "salt/job/"),
            (&*format!("salt/run/{jid}/new"), "salt/run/"),
            ("salt/wheel/x/ret", "salt/wheel/"),
            ("salt/auth", "salt/auth/"),
            ("salt/key", "salt/key/"),
            ("salt/cluster/peer/join", "salt/cluster/"),
            ("salt/presence/change", "salt/presence/"),
        ] {
            let owner = if ns.starts_with("salt/minion/") {
                "minion p1"
            } else {
                "the master"
            };
            refused(
                &format!("{} {tag}", transport.as_str()),
                c.send_event(event(tag)).await,
                Code::PermissionDenied,
                &format!("minion p2 may not fire {tag:?}: tags under {ns} belong to {owner}"),
            );
        }
        refused(
            "empty tag",
            c.send_event(event("")).await,
            Code::InvalidArgument,
            "event tag must not be empty",
        );
        c.send_event(event("salt/minion/p2/custom"))
            .await
            .expect("its own tag");
        c.send_event(event("myapp/deployed"))
            .await
            .expect("a custom tag");
    }
    // The allowed events were sent after the refused ones; read until all four arrived.
    let allowed = |l: &String| {
        l.split('\t')
            .next()
            .is_some_and(|t| t == "salt/minion/p2/custom" || t == "myapp/deployed")
    };
    let seen = tokio::task::spawn_blocking(move || {
        let lines = watched_until(watch, Duration::from_secs(20), |lines| {
            lines.iter().filter(|l| allowed(l)).count() >= 4
        });
        drop(master);
        lines.join("\n")
    })
    .await
    .unwrap();
    let tags: Vec<&str> = seen.lines().filter_map(|l| l.split('\t').next()).collect();
    assert_eq!(
        tags.iter()
            .filter(|t| **t == "salt/minion/p2/custom" || **t == "myapp/deployed")
            .count(),
        4,
        "both allowed tags, once per transport: {tags:?}"
    );
    let leaked: Vec<&&str> = tags
        .iter()
        .filter(|t| {
            t.starts_with("salt/minion/p1")
                || t.contains(jid)
                || t.starts_with("salt/wheel/")
                || t.starts_with("salt/cluster/")
                || t.starts_with("salt/presence/")
                || **t == "salt/key"
        })
        .collect();
    assert!(
        leaked.is_empty(),
        "refused tags reached the bus: {leaked:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Keys: only an accepted key gets a subscription.
// ---------------------------------------------------------------------------------------------

/// Subscribe, and the Welcome's master id when the subscription is granted.
async fn subscribe(ch: Channel) -> Result<String, tonic::Status> {
    let mut c = MinionServiceClient::new(ch);
    let mut stream = c
        .subscribe(pb::SubscribeRequest::default())
        .await?
        .into_inner();
    match stream.message().await? {
        Some(pb::SubscribeResponse {
            kind: Some(pb::subscribe_response::Kind::Welcome(w)),
        }) => Ok(w.master_id),
        other => panic!("expected a Welcome first, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_key_cannot_subscribe_or_speak() {
    let master = tokio::task::spawn_blocking(|| Master::start(""))
        .await
        .expect("master");
    let dir = Scratch::new("pending");
    let pki = self_signed(&dir.0, "pend1");
    let pending =
        "the key of minion pend1 is pending acceptance on the master (saltq key -a pend1)";
    for transport in TRANSPORTS {
        let t = transport.as_str();
        let ch = as_minion(&master, transport, &pki).await;
        let s = refused(
            &format!("{t} Subscribe"),
            subscribe(ch.clone()).await,
            Code::PermissionDenied,
            pending,
        );
        assert_eq!(key_state(&s).as_deref(), Some("pending"), "{t}");
        let mut c = MinionServiceClient::new(ch);
        refused(
            &format!("{t} Return"),
            c.r#return(ret("20000101000000000000", json!(1))).await,
            Code::PermissionDenied,
            pending,
        );
        refused(
            &format!("{t} SendEvent"),
            c.send_event(pb::SendEventRequest {
                tag: "salt/minion/pend1/start".into(),
                data: None,
            })
            .await,
            Code::PermissionDenied,
            pending,
        );
        refused(
            &format!("{t} GetPillar"),
            c.get_pillar(pb::GetPillarRequest::default()).await,
            Code::PermissionDenied,
            pending,
        );
    }
    // Accepted, the same key subscribes at once.
    let master = tokio::task::spawn_blocking(move || {
        let o = master.saltq(&["key", "-a", "pend1", "-y"]);
        assert_eq!(o.code, 0, "{o:?}");
        master
    })
    .await
    .unwrap();
    let welcome = subscribe(as_minion(&master, TransportKind::Quic, &pki).await)
        .await
        .expect("subscribed once accepted");
    assert!(!welcome.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_key_for_an_accepted_id_is_denied_never_accepted() {
    let (master, mut m) = tokio::task::spawn_blocking(|| {
        let master = Master::start("auto_accept: true");
        let m = master.minion("app1", "");
        master.wait_for("app1");
        (master, m)
    })
    .await
    .unwrap();
    // The same id with another key: an impostor, or a reinstall; Salt denies it either way,
    // auto_accept or not.
    let dir = Scratch::new("impostor");
    let pki = self_signed(&dir.0, "app1");
    let denied = "minion app1 presented a key that differs from the accepted one: denied";
    for transport in TRANSPORTS {
        let s = refused(
            transport.as_str(),
            subscribe(as_minion(&master, transport, &pki).await).await,
            Code::PermissionDenied,
            denied,
        );
        assert_eq!(key_state(&s).as_deref(), Some("denied"));
    }
    tokio::task::spawn_blocking(move || {
        let o = master.saltq(&["key", "-L", "--out", "json"]);
        assert_eq!(o.json()["minions"], json!(["app1"]), "{o:?}");
        assert_eq!(o.json()["minions_denied"], json!(["app1"]), "{o:?}");
        // The real app1 is untouched by the impostor.
        master.wait_for("app1");
        // A real minion that lost its key (a reinstall) meets the same refusal.
        m.stop();
        std::fs::remove_file(m.pki_dir().join("minion.key")).expect("remove key");
        m.restart();
        eventually("app1's new key refused", Duration::from_secs(20), || {
            let log = std::fs::read_to_string(m.log()).unwrap_or_default();
            log.contains(denied).then_some(())
        });
        let o = master.saltq(&[
            "-L",
            "app1",
            "test.ping",
            "-t",
            "1",
            "--gather-job-timeout",
            "1",
        ]);
        assert_eq!(o.code, 1, "{o:?}");
        assert!(
            o.stdout.contains("Minion did not return. [Not connected]"),
            "{o:?}"
        );
    })
    .await
    .unwrap();
}

fn present(master: &Master) -> serde_json::Value {
    let o = master.saltq(&["run", "manage.present", "--out", "json"]);
    assert_eq!(o.code, 0, "{o:?}");
    o.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_key_reconnecting_is_pending_again() {
    let (master, m) = tokio::task::spawn_blocking(|| {
        let master = Master::start("");
        let m = master.minion("rv1", "");
        master.accept_and_wait("rv1");
        assert_eq!(present(&master), json!(["rv1"]));
        // Deleting the key closes the minion's subscription at once; it asks again, as pending.
        assert_eq!(master.saltq(&["key", "-d", "rv1", "-y"]).code, 0);
        eventually("rv1 back as pending", Duration::from_secs(15), || {
            let o = master.saltq(&["key", "-l", "pre", "--out", "json"]);
            o.stdout.contains("\"rv1\"").then_some(())
        });
        assert_eq!(present(&master), json!([]));
        (master, m)
    })
    .await
    .unwrap();
    // The refusal the reconnecting key gets, on either transport.
    for transport in TRANSPORTS {
        let s = refused(
            transport.as_str(),
            subscribe(as_minion(&master, transport, &m.pki_dir()).await).await,
            Code::PermissionDenied,
            "the key of minion rv1 is pending acceptance on the master (saltq key -a rv1)",
        );
        assert_eq!(key_state(&s).as_deref(), Some("pending"));
    }
    // Accepted again, it is back without a restart.
    tokio::task::spawn_blocking(move || {
        assert_eq!(master.saltq(&["key", "-a", "rv1", "-y"]).code, 0);
        master.wait_for("rv1");
        drop(m);
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_key_closes_the_subscription_and_is_refused() {
    let (master, m) = tokio::task::spawn_blocking(|| {
        let master = Master::start("");
        let m = master.minion("rv2", "");
        master.accept_and_wait("rv2");
        let o = master.saltq(&["key", "-r", "rv2", "--include-accepted", "-y"]);
        assert_eq!(o.code, 0, "{o:?}");
        eventually("rv2 refused as rejected", Duration::from_secs(15), || {
            let log = std::fs::read_to_string(m.log()).unwrap_or_default();
            log.contains("was rejected by the master").then_some(())
        });
        assert_eq!(present(&master), json!([]));
        let o = master.saltq(&["-L", "rv2", "test.ping", "-t", "2", "--out", "json"]);
        assert_ne!(o.code, 0, "a rejected minion must not answer: {o:?}");
        (master, m)
    })
    .await
    .unwrap();
    for transport in TRANSPORTS {
        let s = refused(
            transport.as_str(),
            subscribe(as_minion(&master, transport, &m.pki_dir()).await).await,
            Code::PermissionDenied,
            "the key of minion rv2 was rejected by the master",
        );
        assert_eq!(key_state(&s).as_deref(), Some("rejected"));
    }
}

// ---------------------------------------------------------------------------------------------
// Resources: size, depth, streams.
// ---------------------------------------------------------------------------------------------

/// Sends `body` (an already encoded protobuf message) to `path` as a unary call; the reply is
/// returned undecoded. For requests no well-behaved client would build.
async fn raw_unary(
    ch: Channel,
    path: &'static str,
    body: Vec<u8>,
) -> Result<Vec<u8>, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(ch);
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let path = tonic::codegen::http::uri::PathAndQuery::from_static(path);
    grpc.unary(tonic::Request::new(body), path, Raw)
        .await
        .map(tonic::Response::into_inner)
}

/// [`raw_unary`] for a server-streaming method: every reply message, undecoded.
async fn raw_streaming(
    ch: Channel,
    path: &'static str,
    body: Vec<u8>,
) -> Result<Vec<Vec<u8>>, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(ch);
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let path = tonic::codegen::http::uri::PathAndQuery::from_static(path);
    let mut stream = grpc
        .server_streaming(tonic::Request::new(body), path, Raw)
        .await?
        .into_inner();
    let mut out = Vec::new();
    while let Some(m) = stream.message().await? {
        out.push(m);
    }
    Ok(out)
}

/// A codec that passes message bytes through as they are.
#[derive(Clone, Copy, Default)]
struct Raw;

impl tonic::codec::Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl tonic::codec::Encoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn encode(
        &mut self,
        item: Vec<u8>,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        bytes::BufMut::put_slice(dst, &item);
        Ok(())
    }
}

impl tonic::codec::Decoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn decode(
        &mut self,
        src: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<Vec<u8>>, tonic::Status> {
        let n = bytes::Buf::remaining(src);
        Ok(Some(bytes::Buf::copy_to_bytes(src, n).to_vec()))
    }
}

fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A length-delimited field `number` holding `body`.
fn field(number: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![(number << 3) | 2];
    put_varint(&mut out, body.len());
    out.extend_from_slice(body);
    out
}

/// One wrapping of a nested message: `before`, then field tag `tag` holding what is inside.
struct Layer {
    before: &'static [u8],
    tag: u8,
}

/// `Value.list_value` → `ListValue.values`: one JSON list level.
const LIST: &[Layer] = &[
    Layer {
        before: &[],
        tag: 0x0a,
    },
    Layer {
        before: &[],
        tag: 0x32,
    },
];
/// `Value.struct_value` → `Struct.fields` → the entry `{"k": ...}`: one JSON object level.
const OBJECT: &[Layer] = &[
    Layer {
        before: &[0x0a, 1, b'k'],
        tag: 0x12,
    },
    Layer {
        before: &[],
        tag: 0x0a,
    },
    Layer {
        before: &[],
        tag: 0x2a,
    },
];

/// A `google.protobuf.Value` holding the string "bottom" inside `levels` JSON levels of
/// `layers`, encoded by hand from the inside out: building it as a message and encoding it
/// recursively would need the very stack depth this is about.
fn nested_value(layers: &[Layer], levels: usize) -> Vec<u8> {
    let bottom = field(3, b"bottom");
    let mut heads: Vec<Vec<u8>> = Vec::with_capacity(levels * layers.len());
    let mut len = bottom.len();
    for _ in 0..levels {
        for l in layers {
            let mut h = l.before.to_vec();
            h.push(l.tag);
            put_varint(&mut h, len);
            len += h.len();
            heads.push(h);
        }
    }
    let mut out = Vec::with_capacity(len);
    for h in heads.iter().rev() {
        out.extend_from_slice(h);
    }
    out.extend_from_slice(&bottom);
    out
}

/// A ReturnRequest for `jid` whose `return` is `value` (encoded).
fn raw_return(jid: &str, value: &[u8]) -> Vec<u8> {
    let mut out = prost::Message::encode_to_vec(&pb::ReturnRequest {
        jid: jid.into(),
        fun: vec!["test.echo".into()],
        success: true,
        ..Default::default()
    });
    out.extend(field(4, value));
    out
}

/// A RunRequest of `test.echo` on `tgt` whose one argument is `value` (encoded).
fn raw_run(tgt: &str, value: &[u8]) -> Vec<u8> {
    let mut publish = prost::Message::encode_to_vec(&pb::PublishRequest {
        tgt: tgt.into(),
        tgt_type: "list".into(),
        fun: vec!["test.echo".into()],
        ..Default::default()
    });
    publish.extend(field(4, value));
    let mut out = prost::Message::encode_to_vec(&pb::RunRequest {
        publish: None,
        timeout: 10.0,
        gather_job_timeout: 5.0,
    });
    out.extend(field(1, &publish));
    out
}

const RETURN: &str = "/saltq.v1.MinionService/Return";
const RUN: &str = "/saltq.v1.JobService/Run";

/// How many JSON levels deep `v` is (a scalar is 0).
fn json_depth(v: &serde_json::Value) -> usize {
    let mut deepest = 0;
    let mut todo = vec![(v, 0)];
    while let Some((v, d)) = todo.pop() {
        deepest = deepest.max(d);
        match v {
            serde_json::Value::Array(a) => todo.extend(a.iter().map(|x| (x, d + 1))),
            serde_json::Value::Object(o) => todo.extend(o.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    deepest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_messages_are_resource_exhausted() {
    let (master, m) = tokio::task::spawn_blocking(|| {
        let master = Master::start("auto_accept: true\nmax_message_size: 65536");
        let m = master.minion("big1", "");
        master.wait_for("big1");
        (master, m)
    })
    .await
    .unwrap();
    let big = "x".repeat(100_000);
    let under = "x".repeat(60_000);
    for transport in TRANSPORTS {
        let t = transport.as_str();
        // Unary: a minion's return over the limit.
        let mut c = MinionServiceClient::new(as_minion(&master, transport, &m.pki_dir()).await);
        let req = ret("20000101000000000000", json!(big));
        let size = prost::Message::encoded_len(&req);
        refused(
            &format!("{t}: a return over the limit"),
            c.r#return(req).await,
            Code::ResourceExhausted,
            &format!(
                "Error, decoded message length too large: found {size} bytes, the limit is: 65536 bytes"
            ),
        );
        // Under the limit it is decoded and judged on its merits (an unknown jid).
        refused(
            &format!("{t}: a return under the limit"),
            c.r#return(ret("20000101000000000000", json!(under))).await,
            Code::NotFound,
            "unknown jid 20000101000000000000: no such job",
        );
        // Streamed: a Run (server-streaming) whose request is over the limit.
        let mut jobs = JobServiceClient::new(as_admin(&master, transport).await);
        let req = run_request("big1", "test.echo", json!(big));
        let size = prost::Message::encoded_len(&req);
        refused(
            &format!("{t}: a run over the limit"),
            jobs.run(req).await.map(|_| ()),
            Code::ResourceExhausted,
            &format!(
                "Error, decoded message length too large: found {size} bytes, the limit is: 65536 bytes"
            ),
        );
        // The same connection goes on working.
        let mut stream = jobs
            .run(run_request("big1", "test.echo", json!("small")))
            .await
            .expect("run")
            .into_inner();
        let mut echoed = None;
        while let Some(msg) = stream.message().await.expect("run stream") {
            if let Some(pb::run_response::Kind::MinionReturn(r)) = msg.kind {
                echoed = r.r#return.map(|v| saltq_transport::value::from_prost(&v));
            }
        }
        assert_eq!(echoed, Some(json!("small")), "{t}");
    }
    // What the user of the CLI reads.
    tokio::task::spawn_blocking(move || {
        let o = master.saltq(&["big1", "test.echo", &big]);
        assert_eq!(o.code, 64, "{o:?}");
        assert!(
            o.stderr.contains(
                "the master refused the request as too large (its max_message_size): Error, decoded message length too large"
            ),
            "{o:?}"
        );
        assert_eq!(
            master.saltq(&["big1", "test.echo", "small"]).stdout,
            "big1:\n    small\n"
        );
        drop(m);
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_nesting_is_refused_with_a_status_naming_it() {
    let (master, m) = tokio::task::spawn_blocking(|| {
        let master = Master::start("auto_accept: true");
        let m = master.minion("deep1", "");
        master.wait_for("deep1");
        (master, m)
    })
    .await
    .unwrap();
    for transport in TRANSPORTS {
        let t = transport.as_str();
        let minion = as_minion(&master, transport, &m.pki_dir()).await;
        let admin = as_admin(&master, transport).await;
        // prost names each field on the way down (a map entry is not one of them).
        for (shape, layers, inner, fields) in [
            ("lists", LIST, "ListValue.values", 101),
            ("objects", OBJECT, "Struct.fields", 68),
        ] {
            let deep = nested_value(layers, 5000);
            let too_deep =
                "does not decode: recursion limit reached (more than 100 nested messages), at";
            let s = raw_unary(
                minion.clone(),
                RETURN,
                raw_return("20000101000000000000", &deep),
            )
            .await
            .unwrap_err();
            assert_eq!(
                s.code(),
                Code::InvalidArgument,
                "{t} return of {shape}: {s:?}"
            );
            assert_eq!(
                s.message(),
                format!(
                    "the request to saltq.v1.MinionService/Return {too_deep} ReturnRequest.return > Value.kind > {inner} > … ({fields} fields deep)"
                ),
                "{t} return of {shape}"
            );
            let s = raw_streaming(admin.clone(), RUN, raw_run("deep1", &deep))
                .await
                .unwrap_err();
            assert_eq!(s.code(), Code::InvalidArgument, "{t} run of {shape}: {s:?}");
            assert_eq!(
                s.message(),
                format!(
                    "the request to saltq.v1.JobService/Run {too_deep} RunRequest.publish > PublishRequest.arg > Value.kind > … ({fields} fields deep)"
                ),
                "{t} run of {shape}"
            );
        }
        // Nesting within the limit goes through, to the minion and back.
        let ok = nested_value(LIST, 20);
        let replies = raw_streaming(admin.clone(), RUN, raw_run("deep1", &ok))
            .await
            .expect("a run nested 20 deep");
        let echoed = replies
            .iter()
            .filter_map(|b| {
                let r: pb::RunResponse = prost::Message::decode(b.as_slice()).ok()?;
                match r.kind? {
                    pb::run_response::Kind::MinionReturn(r) => r.r#return,
                    _ => None,
                }
            })
            .map(|v| saltq_transport::value::from_prost(&v))
            .next()
            .expect("deep1 returned");
        assert_eq!(json_depth(&echoed), 20, "{t}: {echoed}");
    }
    // The master is none the worse.
    tokio::task::spawn_blocking(move || {
        master.wait_for("deep1");
        drop(m);
    })
    .await
    .unwrap();
}

/// The master's resident memory, from /proc.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("master status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS")
}

/// 10,000 event streams opened at once on one connection by a client that follows the
/// protocol: the master lets `max_concurrent_streams` (64) be open and the client queues the
/// rest; none fails, the master answers others meanwhile, and its memory stays put.
async fn streams_are_capped_and_queued(transport: TransportKind) {
    let t = transport.as_str();
    let master = tokio::task::spawn_blocking(|| Master::start(""))
        .await
        .expect("master");
    let pid = master.pid().expect("master pid");
    let before = rss_kib(pid);
    let ch = as_admin(&master, transport).await;
    let opened = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..10_000 {
        let mut c = EventServiceClient::new(ch.clone());
        let (opened, failed) = (opened.clone(), failed.clone());
        calls.spawn(async move {
            match c.stream_events(pb::StreamEventsRequest::default()).await {
                Ok(stream) => {
                    opened.fetch_add(1, Ordering::SeqCst);
                    // Held open until the test drops it.
                    std::future::pending::<()>().await;
                    drop(stream);
                }
                Err(s) => failed.lock().unwrap().push(s),
            }
        });
    }
    eventually(
        &format!("{t}: 64 streams open"),
        Duration::from_secs(30),
        || (opened.load(Ordering::SeqCst) >= 64).then_some(()),
    );
    // The rest wait their turn: none is refused, none gets in beside the 64.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(opened.load(Ordering::SeqCst), 64, "{t}: open streams");
    assert!(
        failed.lock().unwrap().is_empty(),
        "{t}: {:?}",
        failed.lock().unwrap()
    );
    // Another client is served meanwhile, over either transport.
    let master = tokio::task::spawn_blocking(move || {
        for other in ["quic", "h2"] {
            let o = master.saltq(&["--transport", other, "key", "-L"]);
            assert_eq!(o.code, 0, "{t}, then a client over {other}: {o:?}");
        }
        master
    })
    .await
    .unwrap();
    let during = rss_kib(pid);
    assert!(
        during < before + 64 * 1024,
        "{t}: master memory grew from {before} KiB to {during} KiB"
    );
    // Cancelled, the open and the queued ones go away without trouble.
    calls.abort_all();
    while calls.join_next().await.is_some() {}
    // Over HTTP/2 the client's RST_STREAM frees each slot at once. Over HTTP/3 the client
    // can only send STOP_SENDING, which the master learns when it next writes on the stream
    // (h3 offers no other way): an event, written on every open event stream, frees them.
    let mut events = EventServiceClient::new(as_admin(&master, transport).await);
    events
        .fire_event(pb::FireEventRequest {
            tag: "security/streams/released".into(),
            data: None,
        })
        .await
        .expect("fire an event");
    // The connection itself is still good.
    let mut keys = KeyServiceClient::new(ch);
    keys.list_keys(pb::ListKeysRequest::default())
        .await
        .unwrap_or_else(|s| panic!("{t}: the same connection after the flood: {s:?}"));
    drop(master);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_streams_on_one_quic_connection_are_capped() {
    streams_are_capped_and_queued(TransportKind::Quic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_streams_on_one_h2_connection_are_capped() {
    streams_are_capped_and_queued(TransportKind::H2).await;
}

/// What a client ignoring the HTTP/2 stream limit was told, frame by frame.
#[derive(Debug, Default)]
struct H2Told {
    /// SETTINGS_MAX_CONCURRENT_STREAMS in the master's SETTINGS.
    max_concurrent_streams: Option<u32>,
    /// RST_STREAM frames, by error code.
    resets: std::collections::BTreeMap<u32, usize>,
    /// Response HEADERS frames.
    responses: usize,
    /// GOAWAY: last stream id, error code, debug data.
    goaway: Option<(u32, u32, String)>,
}

const H2_SETTINGS: u8 = 0x4;
const H2_PING: u8 = 0x6;
const H2_HEADERS: u8 = 0x1;
const H2_RST_STREAM: u8 = 0x3;
const H2_GOAWAY: u8 = 0x7;
const REFUSED_STREAM: u32 = 0x7;

fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = len.to_be_bytes()[1..].to_vec();
    f.push(kind);
    f.push(flags);
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An HPACK block of literal fields (never indexed, no Huffman): short names and values only.
fn hpack_literal(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in fields {
        out.push(0x00);
        out.push(name.len() as u8);
        out.extend_from_slice(name.as_bytes());
        out.push(value.len() as u8);
        out.extend_from_slice(value.as_bytes());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_streams_ignoring_the_h2_limit_are_refused() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let master = tokio::task::spawn_blocking(|| Master::start(""))
        .await
        .expect("master");
    let pid = master.pid().expect("master pid");
    let before = rss_kib(pid);
    let pki = master.pki_dir();
    let id = CertKey::load(&pki.join("admin.crt"), &pki.join("admin.key")).unwrap();
    let cfg = tls_client(&master, b"h2", Some(&id));
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", master.port))
        .await
        .expect("tcp");
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(name, tcp)
        .await
        .expect("tls with the admin certificate");
    let (mut rd, wr) = tokio::io::split(tls);
    let wr = Arc::new(tokio::sync::Mutex::new(wr));
    {
        let mut w = wr.lock().await;
        w.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .unwrap();
        w.write_all(&h2_frame(H2_SETTINGS, 0, 0, &[]))
            .await
            .unwrap();
    }
    // Reads the master's frames until every stream was answered one way or the other, or the
    // connection ends; acknowledges its SETTINGS (telling the main task) and PINGs, as any
    // client must.
    let (settled_tx, settled) = tokio::sync::oneshot::channel();
    let reader = {
        let wr = wr.clone();
        tokio::spawn(async move {
            let mut told = H2Told::default();
            let mut settled_tx = Some(settled_tx);
            let mut head = [0u8; 9];
            while told.resets.values().sum::<usize>() < 10_000 - 64 && told.goaway.is_none() {
                if rd.read_exact(&mut head).await.is_err() {
                    break;
                }
                let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
                let (kind, flags) = (head[3], head[4]);
                let mut payload = vec![0u8; len];
                if rd.read_exact(&mut payload).await.is_err() {
                    break;
                }
                let word = |at: usize| {
                    u32::from_be_bytes([
                        payload[at],
                        payload[at + 1],
                        payload[at + 2],
                        payload[at + 3],
                    ])
                };
                match kind {
                    H2_SETTINGS if flags & 1 == 0 => {
                        for s in payload.chunks(6) {
                            if u16::from_be_bytes([s[0], s[1]]) == 0x3 {
                                told.max_concurrent_streams =
                                    Some(u32::from_be_bytes([s[2], s[3], s[4], s[5]]));
                            }
                        }
                        let _ = wr
                            .lock()
                            .await
                            .write_all(&h2_frame(H2_SETTINGS, 1, 0, &[]))
                            .await;
                        if let Some(tx) = settled_tx.take() {
                            let _ = tx.send(());
                        }
                    }
                    H2_PING if flags & 1 == 0 => {
                        let _ = wr
                            .lock()
                            .await
                            .write_all(&h2_frame(H2_PING, 1, 0, &payload))
                            .await;
                    }
                    H2_RST_STREAM => *told.resets.entry(word(0)).or_default() += 1,
                    H2_HEADERS => told.responses += 1,
                    H2_GOAWAY => {
                        told.goaway = Some((
                            word(0) & 0x7fff_ffff,
                            word(4),
                            String::from_utf8_lossy(&payload[8..]).into_owned(),
                        ))
                    }
                    _ => {}
                }
            }
            (told, rd)
        })
    };
    tokio::time::timeout(Duration::from_secs(5), settled)
        .await
        .expect("the master's SETTINGS")
        .unwrap();
    // 10,000 requests opened at once, each its HEADERS and nothing more: the request body
    // never comes, so every stream the master accepts stays open.
    let block = hpack_literal(&[
        (":method", "POST"),
        (":scheme", "https"),
        (":path", "/saltq.v1.EventService/StreamEvents"),
        (":authority", "127.0.0.1"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]);
    let mut flood = Vec::new();
    for i in 0..10_000u32 {
        flood.extend(h2_frame(H2_HEADERS, 0x4, 2 * i + 1, &block));
    }
    wr.lock()
        .await
        .write_all(&flood)
        .await
        .expect("the flood is read");
    let (told, rd) = tokio::time::timeout(Duration::from_secs(30), reader)
        .await
        .expect("every stream answered")
        .unwrap();
    assert_eq!(told.max_concurrent_streams, Some(64), "{told:?}");
    // Streams past the 64th are refused one by one (RST_STREAM REFUSED_STREAM); the first 64
    // stay open, waiting for a request body, unanswered; the connection stays up.
    assert_eq!(
        told.resets.get(&REFUSED_STREAM),
        Some(&(10_000 - 64)),
        "{told:?}"
    );
    assert_eq!(told.resets.len(), 1, "{told:?}");
    assert_eq!(told.responses, 0, "{told:?}");
    assert_eq!(told.goaway, None, "{told:?}");
    // Meanwhile, and after, others are served and the master's memory stayed put.
    let after = rss_kib(pid);
    assert!(
        after < before + 64 * 1024,
        "master memory grew from {before} KiB to {after} KiB"
    );
    tokio::task::spawn_blocking(move || {
        for other in ["quic", "h2"] {
            let o = master.saltq(&["--transport", other, "key", "-L"]);
            assert_eq!(o.code, 0, "a client over {other}: {o:?}");
        }
    })
    .await
    .unwrap();
    drop((rd, wr));
}
