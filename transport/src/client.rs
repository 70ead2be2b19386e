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

/// Classifies an error from a dial or a first request by walking its chain.
pub fn classify(err: &(dyn std::error::Error + 'static)) -> FailureKind {
    let mut text = String::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        text.push_str(&format!("{e} {e:?} "));
        cur = e.source();
    }
    classify_text(&text)
}

/// Classifies an error from its text (also used for tonic statuses, which keep only text).
///
/// A certificate problem reported by the peer (quinn's "aborted by peer", rustls's "received
/// fatal alert") means the master refused our certificate; one found locally means we do not
/// trust the master's.
pub fn classify_text(text: &str) -> FailureKind {
    let t = text.to_ascii_lowercase();
    let has = |s: &str| t.contains(s);
    let remote = has("aborted by peer")
        || has("received fatal alert")
        || has("no usable client certificate");
    let cert = has("certificate")
        || has("unknownissuer")
        || has("unknownca")
        || has("unknown ca")
        || has("notvalidforname")
        || has("decrypterror")
        || has("master_finger");
    if cert && remote {
        return FailureKind::CertificateRejected;
    }
    if cert {
        return FailureKind::ServerNotTrusted;
    }
    // QUIC's CONNECTION_REFUSED: the master's admission control, not a closed port.
    if has("connection_refused") || has("refused to accept a new connection") {
        return FailureKind::Busy;
    }
    if has("connection refused") || has("connectionrefused") {
        return FailureKind::Refused;
    }
    if has("timed out") || has("timedout") || has("timeout") {
        return FailureKind::TimedOut;
    }
    if has("failed to lookup") || has("name or service not known") || has("no address") {
        return FailureKind::Resolve;
    }
    FailureKind::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        let c = classify_text;
        assert_eq!(
            c(
                "aborted by peer: the cryptographic handshake failed: error 48: invalid peer certificate: UnknownIssuer"
            ),
            FailureKind::CertificateRejected
        );
        assert_eq!(
            c("received fatal alert: CertificateRequired"),
            FailureKind::CertificateRejected
        );
        assert_eq!(
            c(
                "the cryptographic handshake failed: error 42: invalid peer certificate: UnknownIssuer"
            ),
            FailureKind::ServerNotTrusted
        );
        assert_eq!(
            c("invalid peer certificate: NotValidForName"),
            FailureKind::ServerNotTrusted
        );
        assert_eq!(c("Connection refused (os error 111)"), FailureKind::Refused);
        assert_eq!(
            c("no answer within 5s (quic handshake)"),
            FailureKind::Other
        );
        assert_eq!(c("operation timed out"), FailureKind::TimedOut);
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

    /// Why the underlying connection closed, if it did.
    pub fn close_reason(&self) -> Option<String> {
        match &self.inner {
            Inner::Quic(c) => c.connection().close_reason().map(|r| format!("{r} {r:?}")),
            Inner::H2(_) => None,
        }
    }

    /// Describes a failed request the way a failed dial is described: address, transport, why.
    pub fn failure(&self, status: &tonic::Status) -> ConnectError {
        // tonic keeps the transport's error (e.g. the TLS alert) as the status's source.
        let mut chain = Vec::new();
        let mut cur: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
        while let Some(e) = cur {
            chain.push(e.to_string());
            cur = e.source();
        }
        let reason = self.close_reason().unwrap_or_default();
        let text = format!(
            "{} {} {reason} {status:?}",
            status.message(),
            chain.join(": ")
        );
        let detail = match chain.last() {
            Some(root) => format!("{}: {root}", status.message()),
            None => status.message().to_owned(),
        };
        ConnectError {
            address: self.address.to_string(),
            transport: self.transport.as_str(),
            kind: classify_text(&text),
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
    let mut addrs = tokio::net::lookup_host((opts.host.as_str(), opts.port))
        .await
        .map_err(|e| fail(FailureKind::Resolve, e.to_string()))?;
    addrs
        .next()
        .ok_or_else(|| fail(FailureKind::Resolve, "no address".into()))
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
