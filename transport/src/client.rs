//! Dialling the master: a tonic-compatible [`Channel`] over QUIC (HTTP/3, the default) or over
//! TLS on TCP (HTTP/2, for networks that block UDP), and errors that say why a dial failed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::BoxFuture;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tonic::body::Body;
use tower::Service;

use crate::h3::H3Channel;
use crate::pki::CertKey;
use crate::server::{Limits, client_transport_config};
use crate::tls::{self, ServerTrust};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Which transport to dial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransportKind {
    /// gRPC over HTTP/3 on QUIC (UDP).
    #[default]
    Quic,
    /// gRPC over HTTP/2 with TLS on TCP.
    H2,
}

impl TransportKind {
    /// The name used in flags and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::Quic => "quic",
            TransportKind::H2 => "h2",
        }
    }
}

impl std::str::FromStr for TransportKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "quic" | "h3" => Ok(TransportKind::Quic),
            "h2" | "tcp" => Ok(TransportKind::H2),
            other => Err(format!("unknown transport {other:?}: expected quic or h2")),
        }
    }
}

/// Everything needed to dial the master.
#[derive(Clone)]
pub struct ConnectOptions {
    /// Host name or address of the master, as written by the user.
    pub host: String,
    /// Which address family of `host` to dial, as Salt's minion `ipv6` option: `Some(true)`
    /// IPv6 (IPv4 when the name has no IPv6 address), `Some(false)` IPv4 only, `None` the
    /// first address the system's resolver gives.
    pub ipv6: Option<bool>,
    /// Port of the master.
    pub port: u16,
    /// Transport to use.
    pub transport: TransportKind,
    /// Our certificate and key.
    pub identity: CertKey,
    /// How to trust the master.
    pub trust: ServerTrust,
    /// Keep-alive and size limits.
    pub limits: Limits,
    /// Give up dialling after this long.
    pub connect_timeout: Duration,
    /// What is kept from one dial to the next so a reconnect resumes its TLS session (see
    /// [`crate::tickets`]); `None`: every dial a full handshake.
    pub reuse: Option<Arc<TlsReuse>>,
}

/// How long a minion or the CLI gives one dial, handshake included. The master's admission may
/// keep a new connection queued up to its `handshake_queue` and then hold its turn up to 2 s
/// (`admission.rs`): both stay under this, so a queued peer is admitted or told "busy", not
/// left to time out (a test in `admission.rs` keeps the defaults so).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What a client keeps between dials so that a reconnect resumes its TLS session: the TLS
/// configuration, with the session tickets it has received. rustls resumes a ticket only
/// under the configuration (the same verifier and certificate resolver) that received it,
/// so the configuration is built once per identity, trust and protocol, not per dial; a
/// renewed certificate builds a new one (and does one full handshake).
#[derive(Default)]
pub struct TlsReuse {
    built: std::sync::Mutex<Vec<(Vec<u8>, Arc<rustls::ClientConfig>)>>,
}

impl TlsReuse {
    /// The configuration for `opts` and `alpn`, built on first use.
    fn config(
        &self,
        opts: &ConnectOptions,
        alpn: &[u8],
    ) -> Result<Arc<rustls::ClientConfig>, tls::TlsError> {
        let key = config_key(opts, alpn);
        let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, cfg)) = built.iter().find(|(k, _)| *k == key) {
            return Ok(cfg.clone());
        }
        let cfg = Arc::new(tls::client_config(&opts.identity, &opts.trust, alpn)?);
        // One per protocol: what an older identity or trust built is of no use any more.
        built.retain(|(k, _)| !k.starts_with(&alpn_tag(alpn)));
        built.push((key, cfg.clone()));
        Ok(cfg)
    }
}

fn alpn_tag(alpn: &[u8]) -> Vec<u8> {
    let mut t = (alpn.len() as u32).to_be_bytes().to_vec();
    t.extend_from_slice(alpn);
    t
}

/// What a client TLS configuration is built from: the protocol, then a digest of the
/// identity's chain and the trust.
fn config_key(opts: &ConnectOptions, alpn: &[u8]) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for c in &opts.identity.chain {
        h.update((c.len() as u64).to_be_bytes());
        h.update(c.as_ref());
    }
    match &opts.trust {
        ServerTrust::Ca(cas) => {
            h.update(b"ca");
            for c in cas {
                h.update((c.len() as u64).to_be_bytes());
                h.update(c.as_ref());
            }
        }
        ServerTrust::FirstUse {
            master_finger,
            pinned,
        } => {
            h.update(b"first use");
            h.update(master_finger.as_deref().unwrap_or_default());
            h.update((Arc::as_ptr(pinned) as usize).to_be_bytes());
        }
    }
    let mut key = alpn_tag(alpn);
    key.extend_from_slice(&h.finalize());
    key
}

/// The TLS configuration of one dial: kept from earlier dials when `opts` says so.
fn dial_config(
    opts: &ConnectOptions,
    alpn: &[u8],
) -> Result<Arc<rustls::ClientConfig>, tls::TlsError> {
    match &opts.reuse {
        Some(r) => r.config(opts, alpn),
        None => tls::client_config(&opts.identity, &opts.trust, alpn).map(Arc::new),
    }
}

impl ConnectOptions {
    /// `host:port` for messages.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Why a connection to the master failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// The name did not resolve.
    Resolve,
    /// Nothing listens there (TCP refused).
    Refused,
    /// No answer in time.
    TimedOut,
    /// The master's certificate is not trusted by us.
    ServerNotTrusted,
    /// The master refused our certificate.
    CertificateRejected,
    /// The master turned the connection away because it is busy with other handshakes
    /// (QUIC CONNECTION_REFUSED); trying again later works.
    Busy,
    /// Anything else.
    Other,
}

impl FailureKind {
    /// A short phrase for messages.
    pub fn describe(&self) -> &'static str {
        match self {
            FailureKind::Resolve => "name did not resolve",
            FailureKind::Refused => "connection refused",
            FailureKind::TimedOut => "timed out",
            FailureKind::ServerNotTrusted => "the master's certificate is not trusted",
            FailureKind::CertificateRejected => "the master rejected our certificate",
            FailureKind::Busy => "the master is busy with other connections; try again shortly",
            FailureKind::Other => "connection failed",
        }
    }
}

/// A failed dial, naming the address, the transport and the reason.
#[derive(Debug, thiserror::Error)]
#[error("cannot reach the master at {address} over {transport}: {} ({detail})", kind.describe())]
pub struct ConnectError {
    /// `host:port`.
    pub address: String,
    /// `quic` or `h2`.
    pub transport: &'static str,
    /// Why.
    pub kind: FailureKind,
    /// The underlying error text.
    pub detail: String,
}

/// The QUIC application close code with which the master turns a connection away because it
/// cannot use the client's certificate (after the handshake, `h3.rs`): a client reads it as
/// [`FailureKind::CertificateRejected`], whatever the reason text says.
pub const CLOSE_CERTIFICATE_REJECTED: u32 = 1;

/// Classifies an error from a dial or a request by the types in its chain — quinn's connection
/// errors and their codes, rustls's errors and alerts, h3's errors, `io::ErrorKind`s, tonic's
/// timeouts and statuses — never by message text, so a rewording in a dependency changes no
/// decision. Where the chain names several classes the most telling one wins (a certificate
/// problem over a refusal over a timeout).
pub fn classify(err: &(dyn std::error::Error + 'static)) -> FailureKind {
    let mut found = Vec::new();
    visit(err, &mut found, 0);
    most_telling(found)
}

/// The class that says most of those found, [`FailureKind::Other`] if none.
fn most_telling(found: Vec<FailureKind>) -> FailureKind {
    let rank = |k: &FailureKind| match k {
        FailureKind::CertificateRejected => 6,
        FailureKind::ServerNotTrusted => 5,
        FailureKind::Busy => 4,
        FailureKind::Refused => 3,
        FailureKind::TimedOut => 2,
        FailureKind::Resolve => 1,
        FailureKind::Other => 0,
    };
    found
        .into_iter()
        .max_by_key(rank)
        .unwrap_or(FailureKind::Other)
}

/// Walks `err` and its `source()` chain, and the errors some types hold without giving them as
/// a source (an `io::Error`'s inner error, h3's wrapped quinn error); bounded in depth.
fn visit(err: &(dyn std::error::Error + 'static), found: &mut Vec<FailureKind>, depth: usize) {
    let mut cur = Some(err);
    let mut depth = depth;
    while let Some(e) = cur {
        depth += 1;
        if depth > 32 {
            return;
        }
        if let Some(e) = e.downcast_ref::<quinn::ConnectionError>() {
            found.extend(quic_kind(e));
        } else if let Some(e) = e.downcast_ref::<rustls::Error>() {
            found.extend(tls_kind(e));
        } else if let Some(e) = e.downcast_ref::<std::io::Error>() {
            match e.kind() {
                std::io::ErrorKind::ConnectionRefused => found.push(FailureKind::Refused),
                std::io::ErrorKind::TimedOut => found.push(FailureKind::TimedOut),
                _ => {}
            }
            // `io::Error::source` skips the error it wraps (tokio-rustls's rustls::Error).
            if let Some(inner) = e.get_ref() {
                visit(inner, found, depth);
            }
        } else if let Some(e) = e.downcast_ref::<h3::error::ConnectionError>() {
            h3_connection(e, found, depth);
        } else if let Some(e) = e.downcast_ref::<h3::error::StreamError>() {
            match e {
                h3::error::StreamError::ConnectionError { 0: c, .. } => {
                    h3_connection(c, found, depth)
                }
                h3::error::StreamError::Undefined { 0: inner, .. } => {
                    visit(inner.as_ref(), found, depth)
                }
                _ => {}
            }
        } else if e.is::<tonic::TimeoutExpired>() {
            found.push(FailureKind::TimedOut);
        } else if let Some(s) = e.downcast_ref::<tonic::Status>()
            && s.code() == tonic::Code::DeadlineExceeded
        {
            found.push(FailureKind::TimedOut);
        }
        cur = e.source();
    }
}

/// An h3 connection error: a timeout, the master's application close code, or the quinn error
/// it wraps.
fn h3_connection(e: &h3::error::ConnectionError, found: &mut Vec<FailureKind>, depth: usize) {
    use h3::quic::ConnectionErrorIncoming as Incoming;
    match e {
        h3::error::ConnectionError::Timeout { .. } => found.push(FailureKind::TimedOut),
        h3::error::ConnectionError::Remote {
            0: Incoming::Timeout,
            ..
        } => found.push(FailureKind::TimedOut),
        h3::error::ConnectionError::Remote {
            0: Incoming::ApplicationClose { error_code },
            ..
        } if *error_code == u64::from(CLOSE_CERTIFICATE_REJECTED) => {
            found.push(FailureKind::CertificateRejected)
        }
        h3::error::ConnectionError::Remote {
            0: Incoming::Undefined(inner),
            ..
        } => visit(inner.as_ref(), found, depth),
        _ => {}
    }
}

/// A QUIC connection error. A TLS alert travels as a transport error with the crypto code
/// `0x100 + alert`: sent by the master (`ConnectionClosed`), it judged our certificate; raised
/// here (`TransportError`), we judged the master's.
fn quic_kind(e: &quinn::ConnectionError) -> Option<FailureKind> {
    match e {
        quinn::ConnectionError::TimedOut => Some(FailureKind::TimedOut),
        quinn::ConnectionError::ConnectionClosed(close) => {
            if close.error_code == quinn::TransportErrorCode::CONNECTION_REFUSED {
                // The master's admission control, not a closed port.
                Some(FailureKind::Busy)
            } else {
                crypto_alert(close.error_code)
                    .filter(is_certificate_alert)
                    .map(|_| FailureKind::CertificateRejected)
            }
        }
        quinn::ConnectionError::TransportError(t) => crypto_alert(t.code)
            .filter(is_certificate_alert)
            .map(|_| FailureKind::ServerNotTrusted),
        quinn::ConnectionError::ApplicationClosed(close)
            if close.error_code == quinn::VarInt::from(CLOSE_CERTIFICATE_REJECTED) =>
        {
            Some(FailureKind::CertificateRejected)
        }
        _ => None,
    }
}

/// The TLS alert a QUIC crypto error code carries (RFC 9001 §4.8: `0x100 + alert`).
fn crypto_alert(code: quinn::TransportErrorCode) -> Option<rustls::AlertDescription> {
    let code = u64::from(code);
    (0x100..=0x1ff)
        .contains(&code)
        .then(|| rustls::AlertDescription::from((code - 0x100) as u8))
}

/// Whether a TLS alert is about a certificate (the one sent or the one received).
fn is_certificate_alert(alert: &rustls::AlertDescription) -> bool {
    use rustls::AlertDescription as A;
    matches!(
        alert,
        A::BadCertificate
            | A::UnsupportedCertificate
            | A::CertificateRevoked
            | A::CertificateExpired
            | A::CertificateUnknown
            | A::UnknownCA
            | A::AccessDenied
            | A::DecryptError
            | A::CertificateRequired
            | A::BadCertificateStatusResponse
    )
}

/// A TLS error on the TCP transport: our verdict on the master's certificate, or the master's
/// alert about ours.
fn tls_kind(e: &rustls::Error) -> Option<FailureKind> {
    match e {
        rustls::Error::InvalidCertificate(_) => Some(FailureKind::ServerNotTrusted),
        rustls::Error::AlertReceived(alert) if is_certificate_alert(alert) => {
            Some(FailureKind::CertificateRejected)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use rustls::AlertDescription;

    #[test]
    fn the_address_family_follows_salts_ipv6_option() {
        let v4: SocketAddr = "192.0.2.1:4506".parse().unwrap();
        let v6: SocketAddr = "[2001:db8::1]:4506".parse().unwrap();
        let both = [v4, v6];
        assert_eq!(pick_address(&both, None), Some(v4), "the resolver's order");
        assert_eq!(pick_address(&both, Some(true)), Some(v6));
        assert_eq!(pick_address(&both, Some(false)), Some(v4));
        assert_eq!(pick_address(&[v6, v4], Some(false)), Some(v4));
        assert_eq!(
            pick_address(&[v4], Some(true)),
            Some(v4),
            "IPv4 when there is no IPv6"
        );
        assert_eq!(pick_address(&[v6], Some(false)), None, "IPv4 only");
        assert_eq!(pick_address(&[], None), None);
    }

    fn closed_by_master(code: quinn::TransportErrorCode) -> quinn::ConnectionError {
        quinn::ConnectionError::ConnectionClosed(quinn::ConnectionClose {
            error_code: code,
            frame_type: None,
            reason: Bytes::from_static(b"whatever the master says"),
        })
    }

    fn raised_here(code: quinn::TransportErrorCode) -> quinn::ConnectionError {
        quinn::ConnectionError::TransportError(quinn_proto::TransportError {
            code,
            frame: None,
            reason: "whatever rustls says".into(),
        })
    }

    fn alert(a: AlertDescription) -> quinn::TransportErrorCode {
        quinn::TransportErrorCode::crypto(u8::from(a))
    }

    /// A real refused TCP connection on loopback: a port that was just bound and let go.
    fn refused() -> std::io::Error {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        drop(listener);
        std::net::TcpStream::connect(addr).expect_err("nothing listens there")
    }

    #[test]
    fn a_certificate_alert_from_the_master_is_a_rejection() {
        for a in [
            AlertDescription::UnknownCA,
            AlertDescription::BadCertificate,
            AlertDescription::CertificateRequired,
            AlertDescription::CertificateExpired,
        ] {
            assert_eq!(
                classify(&closed_by_master(alert(a))),
                FailureKind::CertificateRejected,
                "{a:?}"
            );
        }
        // The master's own close after the handshake, by its code alone.
        let app = quinn::ConnectionError::ApplicationClosed(quinn::ApplicationClose {
            error_code: CLOSE_CERTIFICATE_REJECTED.into(),
            reason: Bytes::from_static(b"any words"),
        });
        assert_eq!(classify(&app), FailureKind::CertificateRejected);
        // Over TCP: rustls's alert inside tokio-rustls's io::Error.
        let tcp = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::AlertReceived(AlertDescription::CertificateRequired),
        );
        assert_eq!(classify(&tcp), FailureKind::CertificateRejected);
    }

    #[test]
    fn a_certificate_we_refuse_is_not_trusted() {
        assert_eq!(
            classify(&raised_here(alert(AlertDescription::UnknownCA))),
            FailureKind::ServerNotTrusted
        );
        // What rustls sends for a verifier's own reason (CertificateError::Other).
        assert_eq!(
            classify(&raised_here(alert(AlertDescription::CertificateUnknown))),
            FailureKind::ServerNotTrusted
        );
        let tcp = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName),
        );
        assert_eq!(classify(&tcp), FailureKind::ServerNotTrusted);
    }

    #[test]
    fn quic_connection_refused_is_busy() {
        assert_eq!(
            classify(&closed_by_master(
                quinn::TransportErrorCode::CONNECTION_REFUSED
            )),
            FailureKind::Busy
        );
    }

    #[test]
    fn a_closed_tcp_port_is_refused_through_tonic() {
        let io = refused();
        assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
        assert_eq!(classify(&io), FailureKind::Refused);
        // As tonic hands it back: a status whose source is the connector's error.
        let status = tonic::Status::from_error(Box::new(tonic::ConnectError(Box::new(refused()))));
        assert_eq!(classify(&status), FailureKind::Refused);
    }

    #[test]
    fn timeouts_are_timeouts() {
        assert_eq!(
            classify(&quinn::ConnectionError::TimedOut),
            FailureKind::TimedOut
        );
        assert_eq!(
            classify(&std::io::Error::from(std::io::ErrorKind::TimedOut)),
            FailureKind::TimedOut
        );
        let status = tonic::Status::from_error(Box::new(tonic::TimeoutExpired(())));
        assert_eq!(classify(&status), FailureKind::TimedOut);
        assert_eq!(
            classify(&tonic::Status::deadline_exceeded("slow")),
            FailureKind::TimedOut
        );
    }

    #[test]
    fn words_alone_classify_nothing() {
        // The texts the old classifier looked for, with no type behind them.
        for text in [
            "received fatal alert: CertificateRequired",
            "invalid peer certificate: UnknownIssuer",
            "Connection refused (os error 111)",
            "the server refused to accept a new connection",
            "operation timed out",
        ] {
            assert_eq!(
                classify(&tonic::Status::unavailable(text)),
                FailureKind::Other,
                "{text}"
            );
            assert_eq!(
                classify(&std::io::Error::other(text)),
                FailureKind::Other,
                "{text}"
            );
        }
        // A non-certificate alert, a stateless reset, a connection we closed ourselves.
        assert_eq!(
            classify(&closed_by_master(alert(AlertDescription::HandshakeFailure))),
            FailureKind::Other
        );
        assert_eq!(classify(&quinn::ConnectionError::Reset), FailureKind::Other);
        assert_eq!(
            classify(&quinn::ConnectionError::LocallyClosed),
            FailureKind::Other
        );
    }

    #[test]
    fn the_most_telling_class_wins() {
        // A refused port wrapped with a certificate alert: the certificate says more.
        let chain = tonic::Status::from_error(Box::new(tonic::ConnectError(Box::new(
            std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                rustls::Error::AlertReceived(AlertDescription::UnknownCA),
            ),
        ))));
        assert_eq!(classify(&chain), FailureKind::CertificateRejected);
    }
}

/// A tonic-compatible channel to the master over either transport.
#[derive(Clone)]
pub struct Channel {
    inner: Inner,
    address: Arc<str>,
    transport: TransportKind,
}

#[derive(Clone)]
enum Inner {
    Quic(H3Channel),
    H2(tonic::transport::Channel),
}

impl Channel {
    /// `host:port` of the master.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The transport in use.
    pub fn transport(&self) -> TransportKind {
        self.transport
    }

    /// The error the underlying QUIC connection closed with, if it did.
    pub fn close_error(&self) -> Option<quinn::ConnectionError> {
        match &self.inner {
            Inner::Quic(c) => c.connection().close_reason(),
            Inner::H2(_) => None,
        }
    }

    /// Classifies a failed request by its types: the status and its sources (tonic keeps the
    /// transport's error, e.g. the TLS alert, as the status's source), and the error the QUIC
    /// connection closed with (an h3 request may fail before the close is known to it).
    pub fn classify_status(&self, status: &tonic::Status) -> FailureKind {
        let mut found = vec![classify(status)];
        if let Some(closed) = self.close_error() {
            found.push(classify(&closed));
        }
        most_telling(found)
    }

    /// Describes a failed request the way a failed dial is described: address, transport, why.
    pub fn failure(&self, status: &tonic::Status) -> ConnectError {
        let mut chain = Vec::new();
        let mut cur: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
        while let Some(e) = cur {
            chain.push(e.to_string());
            cur = e.source();
        }
        let detail = match chain.last() {
            Some(root) => format!("{}: {root}", status.message()),
            None => status.message().to_owned(),
        };
        ConnectError {
            address: self.address.to_string(),
            transport: self.transport.as_str(),
            kind: self.classify_status(status),
            detail,
        }
    }

    /// Closes the connection politely, so the master notices at once rather than at its idle
    /// timeout (QUIC; an HTTP/2 connection closes when its last handle is dropped).
    pub async fn close(&self) {
        if let Inner::Quic(c) = &self.inner {
            c.close().await;
        }
    }
}

impl Service<http::Request<Body>> for Channel {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        match &mut self.inner {
            Inner::Quic(c) => c.poll_ready(cx),
            Inner::H2(c) => c.poll_ready(cx).map_err(Into::into),
        }
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        match &mut self.inner {
            Inner::Quic(c) => c.call(req),
            Inner::H2(c) => {
                let fut = c.call(req);
                Box::pin(async move { fut.await.map_err(Into::into) })
            }
        }
    }
}

async fn resolve(opts: &ConnectOptions) -> Result<SocketAddr, ConnectError> {
    let fail = |kind, detail: String| ConnectError {
        address: opts.address(),
        transport: opts.transport.as_str(),
        kind,
        detail,
    };
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((opts.host.as_str(), opts.port))
        .await
        .map_err(|e| fail(FailureKind::Resolve, e.to_string()))?
        .collect();
    pick_address(&addrs, opts.ipv6).ok_or_else(|| {
        let why = match opts.ipv6 {
            Some(false) if !addrs.is_empty() => "no IPv4 address (ipv6: false)",
            _ => "no address",
        };
        fail(FailureKind::Resolve, why.into())
    })
}

/// The address to dial among those the resolver gave, in its order, as Salt's `dns_check`
/// picks by the minion's `ipv6`: `Some(true)` the first IPv6 address (Salt asks for IPv6 and
/// looks up IPv4 when that fails), `Some(false)` the first IPv4 one, `None` the first.
pub fn pick_address(addrs: &[SocketAddr], ipv6: Option<bool>) -> Option<SocketAddr> {
    let first = |v6: bool| addrs.iter().find(|a| a.is_ipv6() == v6).copied();
    match ipv6 {
        Some(true) => first(true).or_else(|| first(false)),
        Some(false) => first(false),
        None => addrs.first().copied(),
    }
}

/// Dials the master and completes the TLS handshake.
pub async fn connect(opts: &ConnectOptions) -> Result<Channel, ConnectError> {
    connect_via(opts, None).await
}

/// A client-side QUIC endpoint (one UDP socket) that many connections can share, e.g. the
/// virtual minions of a swarm, each with its own identity and connection. Its socket has large
/// kernel buffers ([`crate::udp`]): a job to all of them arrives at once.
pub fn shared_endpoint(ipv6: bool) -> std::io::Result<quinn::Endpoint> {
    crate::udp::endpoint(crate::udp::bind(any_addr(ipv6))?, None, None)
}

/// A QUIC endpoint for one connection (a minion, the CLI): the kernel's default buffers do.
fn single_endpoint(ipv6: bool) -> std::io::Result<quinn::Endpoint> {
    quinn::Endpoint::client(any_addr(ipv6))
}

fn any_addr(ipv6: bool) -> SocketAddr {
    if ipv6 {
        SocketAddr::from(([0u16; 8], 0))
    } else {
        SocketAddr::from(([0, 0, 0, 0], 0))
    }
}

/// Like [`connect`], over `endpoint` when given (QUIC only) instead of a new UDP socket.
pub async fn connect_via(
    opts: &ConnectOptions,
    endpoint: Option<&quinn::Endpoint>,
) -> Result<Channel, ConnectError> {
    let fail = |err: &(dyn std::error::Error + 'static)| ConnectError {
        address: opts.address(),
        transport: opts.transport.as_str(),
        kind: classify(err),
        detail: err.to_string(),
    };
    let timeout = |what: &str| ConnectError {
        address: opts.address(),
        transport: opts.transport.as_str(),
        kind: FailureKind::TimedOut,
        detail: format!("no answer within {:?} ({what})", opts.connect_timeout),
    };
    let addr = resolve(opts).await?;
    let server_name = ServerName::try_from(opts.host.clone()).map_err(|e| fail(&e))?;
    match opts.transport {
        TransportKind::Quic => {
            let tls = dial_config(opts, tls::ALPN_H3).map_err(|e| fail(&e))?;
            let crypto =
                quinn::crypto::rustls::QuicClientConfig::try_from(tls).map_err(|e| fail(&e))?;
            let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
            cfg.transport_config(Arc::new(client_transport_config(&opts.limits)));
            let ep = match endpoint {
                Some(ep) => ep.clone(),
                None => single_endpoint(addr.is_ipv6()).map_err(|e| fail(&e))?,
            };
            let host = opts.host.trim_start_matches('[').trim_end_matches(']');
            let connecting = ep.connect_with(cfg, addr, host).map_err(|e| fail(&e))?;
            let conn = tokio::time::timeout(opts.connect_timeout, connecting)
                .await
                .map_err(|_| timeout("quic handshake"))?
                .map_err(|e| fail(&e))?;
            let ch = tokio::time::timeout(
                opts.connect_timeout,
                H3Channel::new(ep, conn.clone(), &opts.address()),
            )
            .await
            .map_err(|_| timeout("http/3 setup"))?
            .map_err(|e| fail(e.as_ref()))?;
            Ok(Channel {
                inner: Inner::Quic(ch),
                address: opts.address().into(),
                transport: opts.transport,
            })
        }
        TransportKind::H2 => {
            let tls = dial_config(opts, tls::ALPN_H2).map_err(|e| fail(&e))?;
            let connector = tokio_rustls::TlsConnector::from(tls);
            let name = server_name.to_owned();
            let svc = tower::service_fn(move |_uri: http::Uri| {
                let connector = connector.clone();
                let name = name.clone();
                async move {
                    let tcp = tokio::net::TcpStream::connect(addr).await?;
                    tcp.set_nodelay(true)?;
                    let mut tls = connector.connect(name, tcp).await?;
                    // TLS 1.3 lets a client finish its handshake before the server has judged the
                    // client certificate. The HTTP/2 server speaks first (SETTINGS), so waiting for
                    // its first bytes turns a refusal into the server's alert, not a broken pipe.
                    let mut first = vec![0u8; 1024];
                    let n = tokio::io::AsyncReadExt::read(&mut tls, &mut first).await?;
                    if n == 0 {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::ConnectionAborted,
                            "the master closed the connection after the TLS handshake",
                        ));
                    }
                    first.truncate(n);
                    Ok::<_, std::io::Error>(TokioIo::new(Prefixed {
                        prefix: first,
                        pos: 0,
                        inner: tls,
                    }))
                }
            });
            let endpoint =
                tonic::transport::Endpoint::from_shared(format!("https://{}", opts.address()))
                    .map_err(|e| fail(&e))?
                    .connect_timeout(opts.connect_timeout)
                    .http2_keep_alive_interval(opts.limits.keep_alive)
                    .keep_alive_timeout(opts.limits.idle_timeout)
                    .keep_alive_while_idle(true);
            let ch = endpoint
                .connect_with_connector(svc)
                .await
                .map_err(|e| fail(&e))?;
            Ok(Channel {
                inner: Inner::H2(ch),
                address: opts.address().into(),
                transport: opts.transport,
            })
        }
    }
}

/// A stream that first yields bytes already read from it.
struct Prefixed<S> {
    prefix: Vec<u8>,
    pos: usize,
    inner: S,
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.pos < self.prefix.len() {
            let n = (self.prefix.len() - self.pos).min(buf.remaining());
            let start = self.pos;
            buf.put_slice(&self.prefix[start..start + n]);
            self.pos += n;
            return Poll::Ready(Ok(()));
        }
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
