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
pub fn classify_text(text: &str) -> FailureKind {
    let t = text.to_ascii_lowercase();
    let has = |s: &str| t.contains(s);
    if has("certificaterequired")
        || has("certificate required")
        || has("unknownca")
        || has("unknown ca")
        || has("badcertificate")
        || has("bad certificate")
        || has("no usable client certificate")
        || has("decrypterror")
        || has("alert: 116")
        || has("alert 116")
        || has("tls alert 42")
    {
        return FailureKind::CertificateRejected;
    }
    if has("invalidcertificate")
        || has("invalid peer certificate")
        || has("unknownissuer")
        || has("notvalidforname")
        || has("does not match master_finger")
    {
        return FailureKind::ServerNotTrusted;
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

/// A tonic-compatible channel to the master over either transport.
#[derive(Clone)]
pub enum Channel {
    /// HTTP/3 on QUIC.
    Quic(H3Channel),
    /// HTTP/2 on TLS/TCP.
    H2(tonic::transport::Channel),
}

impl Channel {
    /// Why the underlying connection closed, if it did.
    pub fn close_reason(&self) -> Option<String> {
        match self {
            Channel::Quic(c) => c.connection().close_reason().map(|r| format!("{r} {r:?}")),
            Channel::H2(_) => None,
        }
    }

    /// Resolves when the connection is gone (QUIC only; HTTP/2 never resolves).
    pub async fn closed(&self) {
        match self {
            Channel::Quic(c) => {
                c.connection().closed().await;
            }
            Channel::H2(_) => std::future::pending().await,
        }
    }
}

impl Service<http::Request<Body>> for Channel {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        match self {
            Channel::Quic(c) => c.poll_ready(cx),
            Channel::H2(c) => c.poll_ready(cx).map_err(Into::into),
        }
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        match self {
            Channel::Quic(c) => c.call(req),
            Channel::H2(c) => {
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
            let tls = tls::client_config(&opts.identity, &opts.trust, tls::ALPN_H3)
                .map_err(|e| fail(&e))?;
            let crypto =
                quinn::crypto::rustls::QuicClientConfig::try_from(tls).map_err(|e| fail(&e))?;
            let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
            cfg.transport_config(Arc::new(client_transport_config(&opts.limits)));
            let bind: SocketAddr = if addr.is_ipv6() {
                "[::]:0".parse().expect("valid address")
            } else {
                "0.0.0.0:0".parse().expect("valid address")
            };
            let mut ep = quinn::Endpoint::client(bind).map_err(|e| fail(&e))?;
            ep.set_default_client_config(cfg);
            let host = opts.host.trim_start_matches('[').trim_end_matches(']');
            let connecting = ep.connect(addr, host).map_err(|e| fail(&e))?;
            let conn = tokio::time::timeout(opts.connect_timeout, connecting)
                .await
                .map_err(|_| timeout("quic handshake"))?
                .map_err(|e| fail(&e))?;
            let ch = tokio::time::timeout(
                opts.connect_timeout,
                H3Channel::new(conn.clone(), &opts.address()),
            )
            .await
            .map_err(|_| timeout("http/3 setup"))?
            .map_err(|e| fail(e.as_ref()))?;
            Ok(Channel::Quic(ch))
        }
        TransportKind::H2 => {
            let tls = tls::client_config(&opts.identity, &opts.trust, tls::ALPN_H2)
                .map_err(|e| fail(&e))?;
            let connector = tokio_rustls::TlsConnector::from(Arc::new(tls));
            let name = server_name.to_owned();
            let svc = tower::service_fn(move |_uri: http::Uri| {
                let connector = connector.clone();
                let name = name.clone();
                async move {
                    let tcp = tokio::net::TcpStream::connect(addr).await?;
                    tcp.set_nodelay(true)?;
                    let tls = connector.connect(name, tcp).await?;
                    Ok::<_, std::io::Error>(TokioIo::new(tls))
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
            Ok(Channel::H2(ch))
        }
    }
}
