//! salt-api's TLS when `rest_cherrypy` names no `ssl_crt`: the master's own certificate,
//! the one it has loaded, so a renewed certificate (cert-manager rewriting the files) reaches
//! salt-api's new connections without a restart, as it reaches the minions'.

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use saltq_tests::{Master, eventually};
use saltq_transport::pki::{self, Ca};

use super::{USERS, api_addr};
use crate::certs::write_server_pair;

/// The leaf salt-api serves to a new connection (checked against the master's CA).
fn served(master: &Master, ca_pem: &str) -> CertificateDer<'static> {
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = TcpStream::connect(api_addr(master)).expect("connect to salt-api");
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(cfg), name).unwrap();
    let mut s = rustls::StreamOwned::new(conn, tcp);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("TLS handshake with salt-api");
    s.conn.peer_certificates().expect("salt-api's chain")[0].clone()
}

#[test]
fn salt_api_serves_the_masters_certificate_and_its_renewals() {
    let mut made = None;
    let master = Master::start_with(|dir| {
        let pki_dir = dir.join("root/etc/saltq/pki/master");
        let ca = Ca::create("e2e CA", &pki_dir.join("ca.crt"), &pki_dir.join("ca.key"))
            .expect("create CA");
        let tls = dir.join("tls");
        let first = write_server_pair(&ca, &tls);
        std::fs::write(dir.join("users.txt"), USERS).unwrap();
        let extra = format!(
            "master_cert_file: {}\nmaster_key_file: {}\n\
             external_auth: {{file: {{^filename: {}, alice: ['.*']}}}}\n\
             netapi_enable_clients: [local]\nrest_cherrypy: {{port: 0, host: 127.0.0.1}}\n",
            tls.join("tls.crt").display(),
            tls.join("tls.key").display(),
            dir.join("users.txt").display()
        );
        made = Some((ca, tls, first));
        extra
    });
    let (ca, tls, first) = made.expect("setup ran");
    let ca_pem = ca.cert_pem().to_owned();
    assert_eq!(served(&master, &ca_pem), first);
    let second = write_server_pair(&ca, &tls);
    assert_ne!(first, second);
    eventually(
        "salt-api's new connections get the renewed certificate",
        Duration::from_secs(20),
        || (served(&master, &ca_pem) == second).then_some(()),
    );
}

/// `ssl_crt`/`ssl_key` name the certificate salt-api serves instead of the master's.
#[test]
fn salt_api_serves_ssl_crt_when_given() {
    let mut made = None;
    let master = Master::start_with(|dir| {
        let other = Ca::create("api CA", &dir.join("api-ca.crt"), &dir.join("api-ca.key"))
            .expect("create CA");
        let tls = dir.join("api-tls");
        let leaf = write_server_pair(&other, &tls);
        made = Some((other.cert_pem().to_owned(), leaf));
        format!(
            "rest_cherrypy: {{port: 0, host: 127.0.0.1, ssl_crt: {}, ssl_key: {}}}\n",
            tls.join("tls.crt").display(),
            tls.join("tls.key").display()
        )
    });
    let (ca_pem, leaf) = made.expect("setup ran");
    assert_eq!(served(&master, &ca_pem), leaf);
    let masters_own = std::fs::read_to_string(master.pki_dir().join("master.crt")).unwrap();
    assert_ne!(
        pki::certs_from_pem(masters_own.as_bytes(), &master.pki_dir()).unwrap()[0],
        leaf
    );
}
