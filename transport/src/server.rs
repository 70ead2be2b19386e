//! The master's listeners: gRPC over HTTP/3 (QUIC, UDP) and gRPC over HTTP/2 (TLS, TCP),
//! normally on the same port number, serving the same tonic routes.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::body::Body;
use tonic::transport::server::Connected;
use tower::Service;
use tracing::{debug, info, warn};

use crate::admission::Admission;
use crate::guard::{self, Caps, Gate, Slot};
use crate::identity::{self, PeerInfo, Transport};
use crate::tls::{self, ServerCert, Trust};

/// Limits applied to every connection.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest message accepted or sent, in bytes (RESOURCE_EXHAUSTED beyond it).
    pub max_message_size: usize,
    /// A peer silent for this long is considered gone.
    pub idle_timeout: Duration,
    /// How often to ping an otherwise idle peer.
    pub keep_alive: Duration,
    /// Concurrent streams one connection may have open.
    pub max_concurrent_streams: u32,
    /// TLS handshakes the master works on at once; later ones wait their turn (server only).
    pub max_handshakes: usize,
    /// How long a new connection may wait for its turn before it is refused, so the peer
    /// backs off and retries instead of timing out (server only). The default, 7 s, with the
    /// 2 s a turn may last, stays under the clients' 10 s connect timeout. It was 4 s: with
    /// 10,000 minions reconnecting at once, 5,000–8,400 were turned away and came back spread
    /// over their 10 s busy wait, and the last of them made half the restarts miss 15 s
    /// (BENCHMARKS.md); with 7 s fewer are turned away and the queue takes them in order.
    pub handshake_queue: Duration,
    /// Connections the QUIC listener holds at once (server only; no cap per source by default:
    /// a fleet behind NAT shares one address).
    pub quic_connections: Caps,
    /// Connections the HTTP/2 listener holds at once, counted from the accept, handshake
    /// included (server only).
    pub h2_connections: Caps,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_size: 16 * 1024 * 1024,
            idle_timeout: Duration::from_secs(10),
            keep_alive: Duration::from_secs(3),
            max_concurrent_streams: 64,
            max_handshakes: 256,
            handshake_queue: Duration::from_secs(7),
            quic_connections: Caps::QUIC,
            h2_connections: Caps::H2,
        }
    }
}

/// Where to listen. `None` turns a listener off.
#[derive(Debug, Clone)]
pub struct ListenConfig {
    /// UDP address for QUIC.
    pub quic: Option<SocketAddr>,
    /// TCP address for HTTP/2.
    pub h2: Option<SocketAddr>,
    /// The QUIC stateless-reset secret, kept across restarts (see [`crate::udp::endpoint`]).
    pub reset_key: Option<Vec<u8>>,
    /// The TLS session-ticket secret, kept across restarts (see [`crate::tickets`]); `None`:
    /// no tickets, every connection does a full handshake.
    pub ticket_key: Option<Vec<u8>>,
}

/// Errors binding the listeners.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The address could not be bound (in use, not permitted, no such interface).
    #[error("cannot listen on {transport} {addr}: {source}")]
    Bind {
        transport: &'static str,
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// TLS configuration failed.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// Neither listener is enabled.
    #[error("both the QUIC and the HTTP/2 listeners are turned off")]
    NothingToServe,
}

/// Bound sockets, ready to serve.
pub struct Listeners {
    quic: Option<quinn::Endpoint>,
    h2: Option<(TcpListener, Arc<rustls::ServerConfig>)>,
    trust: Trust,
    limits: Limits,
    handshakes: Arc<HandshakeStats>,
    quic_gate: Gate,
    h2_gate: Gate,
}

/// What the handshake admission did, since the listeners were bound: counters an operator
/// reads to see whether new connections wait, are turned away, or take long to complete.
#[derive(Debug, Default)]
pub struct HandshakeStats {
    /// Connections that got a turn and completed their handshake (and identified the peer).
    pub completed: AtomicU64,
    /// Connections that got a turn and then failed: handshake error or timeout, an
    /// unusable certificate.
    pub failed: AtomicU64,
    /// Connections turned away because no turn came within the queue's patience (or would
    /// not, at the pace turns end).
    pub refused_busy: AtomicU64,
    /// Connections whose handshake outlasted its turn (2 s) and went on without one.
    pub outlasted: AtomicU64,
    /// Time the admitted connections waited for their turn, in microseconds, summed.
    pub wait_micros: AtomicU64,
    /// Time from a turn to the end of the handshake, in microseconds, summed over completed
    /// and failed ones.
    pub handshake_micros: AtomicU64,
    /// Session tickets opened: connections that resumed a TLS session (no certificate
    /// verified or signed in their handshake).
    pub resumed: AtomicU64,
}

impl Listeners {
    /// Binds both listeners. With port 0 for both on the same host, the TCP port chosen by the
    /// system is reused for UDP, so one number serves both. Both serve `identity` and verify
    /// with `trust` as they are at each handshake (see [`ServerCert::replace`],
    /// [`Trust::update`]).
    pub async fn bind(
        cfg: &ListenConfig,
        identity: &ServerCert,
        trust: Trust,
        limits: Limits,
    ) -> Result<Listeners, BindError> {
        if cfg.quic.is_none() && cfg.h2.is_none() {
            return Err(BindError::NothingToServe);
        }
        let handshakes = Arc::<HandshakeStats>::default();
        let h2 = match cfg.h2 {
            Some(addr) => {
                let l = TcpListener::bind(addr)
                    .await
                    .map_err(|source| BindError::Bind {
                        transport: "tcp",
                        addr,
                        source,
                    })?;
                let mut tls = tls::server_config(identity, &trust, tls::ALPN_H2)?;
                tickets(&mut tls, cfg.ticket_key.as_deref(), &handshakes);
                Some((l, Arc::new(tls)))
            }
            None => None,
        };
        let quic = match cfg.quic {
            Some(mut addr) => {
                if addr.port() == 0
                    && let Some((l, _)) = &h2
                {
                    let tcp = l.local_addr().map_err(|source| BindError::Bind {
                        transport: "tcp",
                        addr,
                        source,
                    })?;
                    if tcp.ip() == addr.ip() {
                        addr.set_port(tcp.port());
                    }
                }
                let mut tls = tls::server_config(identity, &trust, tls::ALPN_H3)?;
                tls.max_early_data_size = 0;
                tickets(&mut tls, cfg.ticket_key.as_deref(), &handshakes);
                let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
                    .map_err(|e| tls::TlsError::Anchor(format!("quic server config: {e}")))?;
                let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
                let mut transport = transport_config(&limits);
                // GSO batches many datagrams of one connection into one send; the master sends
                // each minion little at a time, and every connection would keep a buffer sized
                // for a batch (about 13 KiB each, 130 MB with 10,000 minions).
                transport.enable_segmentation_offload(false);
                server.transport_config(Arc::new(transport));
                let ep = crate::udp::bind(addr)
                    .and_then(|socket| {
                        crate::udp::endpoint(socket, Some(server), cfg.reset_key.as_deref())
                    })
                    .map_err(|source| BindError::Bind {
                        transport: "udp",
                        addr,
                        source,
                    })?;
                Some(ep)
            }
            None => None,
        };
        // A TCP connection holds a descriptor; a QUIC one does not (one UDP socket for all).
        let fds = guard::nofile_limit().unwrap_or(u64::MAX);
        let quic_gate = Gate::new("quic", limits.quic_connections);
        let h2_gate = Gate::new("h2", limits.h2_connections.within_fds(fds));
        Ok(Listeners {
            quic,
            h2,
            trust,
            limits,
            handshakes,
            quic_gate,
            h2_gate,
        })
    }

    /// The handshake admission's counters, live while the listeners serve.
    pub fn handshakes(&self) -> Arc<HandshakeStats> {
        self.handshakes.clone()
    }

    /// The listeners' connection gates (QUIC, HTTP/2), for their counters.
    pub fn gates(&self) -> Vec<Gate> {
        vec![self.quic_gate.clone(), self.h2_gate.clone()]
    }

    /// The bound QUIC (UDP) address.
    pub fn quic_addr(&self) -> Option<SocketAddr> {
        self.quic.as_ref().and_then(|e| e.local_addr().ok())
    }

    /// The bound HTTP/2 (TCP) address.
    pub fn h2_addr(&self) -> Option<SocketAddr> {
        self.h2.as_ref().and_then(|(l, _)| l.local_addr().ok())
    }

    /// Serves `svc` on both listeners until `shutdown` turns true.
    pub async fn serve<S>(self, svc: S, mut shutdown: watch::Receiver<bool>)
    where
        S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
            + Clone
            + Send
            + 'static,
        S::Future: Send,
    {
        let mut tasks = tokio::task::JoinSet::new();
        let admission = Admission::new(&self.limits, self.handshakes.clone());
        if let Some(ep) = self.quic {
            let svc = svc.clone();
            let trust = self.trust.clone();
            let admission = admission.clone();
            let gate = self.quic_gate.clone();
            let mut stop = shutdown.clone();
            tasks.spawn(async move {
                loop {
                    tokio::select! {
                        inc = ep.accept() => match inc {
                            Some(inc) => {
                                let slot = match gate.admit(inc.remote_address().ip()) {
                                    Ok(slot) => slot,
                                    Err(why) => {
                                        debug!(remote = %inc.remote_address(), "refusing quic connection: {why}");
                                        inc.refuse();
                                        continue;
                                    }
                                };
                                let (svc, trust, admission) = (svc.clone(), trust.clone(), admission.clone());
                                tokio::spawn(async move {
                                    // Held while the connection waits for its turn and serves.
                                    let _slot = slot;
                                    let Some(turn) = admission.wait().await else {
                                        debug!(remote = %inc.remote_address(), "refusing quic connection: too many handshakes in progress");
                                        return inc.refuse();
                                    };
                                    crate::h3::serve_connection(inc, svc, trust, turn).await
                                });
                            }
                            None => break,
                        },
                        _ = stop.wait_for(|s| *s) => break,
                    }
                }
                ep.close(0u32.into(), b"master shutting down");
                let _ = tokio::time::timeout(Duration::from_secs(2), ep.wait_idle()).await;
            });
        }
        if let Some((listener, tls)) = self.h2 {
            let trust = self.trust.clone();
            let limits = self.limits.clone();
            let stop = shutdown.clone();
            let gate = self.h2_gate.clone();
            tasks.spawn(serve_h2(
                listener, tls, trust, limits, admission, gate, svc, stop,
            ));
        }
        let _ = shutdown.wait_for(|s| *s).await;
        while tasks.join_next().await.is_some() {}
        info!("listeners stopped");
    }
}

/// Issues session tickets sealed with `secret`, when there is one: two per connection, since
/// a client spends a ticket on every attempt, also one the admission turns away as busy.
fn tickets(tls: &mut rustls::ServerConfig, secret: Option<&[u8]>, stats: &Arc<HandshakeStats>) {
    if let Some(secret) = secret {
        tls.ticketer = Arc::new(crate::tickets::Tickets::new(secret, stats.clone()));
        tls.send_tls13_tickets = 2;
    }
}

fn transport_config(limits: &Limits) -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.max_idle_timeout(limits.idle_timeout.try_into().ok());
    t.keep_alive_interval(Some(limits.keep_alive));
    t.max_concurrent_bidi_streams(limits.max_concurrent_streams.into());
    t.max_concurrent_uni_streams(16u32.into());
    // Ask the peer to delay its acknowledgements up to ACK_DELAY (QUIC's ACK_FREQUENCY
    // extension, which quinn speaks on both ends): an acknowledgement then mostly rides on the
    // answer (a job's return, the return's receipt) instead of a packet of its own, and the
    // delay counts in the probe timeout, so a peer that is busy for a moment (a master taking
    // 10,000 returns, a swarm taking 10,000 jobs) is not sent probes it has no time for. The
    // cost: a lost last packet is resent up to ACK_DELAY later.
    let mut ack = quinn::AckFrequencyConfig::default();
    ack.max_ack_delay(Some(ACK_DELAY));
    t.ack_frequency_config(Some(ack));
    t
}

/// The longest a peer is asked to delay an acknowledgement. Measured with 10,000 minions
/// reconnecting to a restarted master (BENCHMARKS.md): with quinn's default (25 ms) the first
/// job after the wave took 2.0–2.5 s; with 200 ms, 1.8–2.1 s.
const ACK_DELAY: std::time::Duration = std::time::Duration::from_millis(200);

/// Client-side QUIC transport settings: keep-alive so a dead master is noticed within seconds.
pub fn client_transport_config(limits: &Limits) -> quinn::TransportConfig {
    transport_config(limits)
}

/// A TLS connection over TCP with the identity of its peer, for tonic's HTTP/2 server.
struct H2Conn {
    io: tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
    info: PeerInfo,
    /// The connection's place in the listener's gate, given back when tonic drops it.
    _slot: Slot,
}

impl Connected for H2Conn {
    type ConnectInfo = PeerInfo;
    fn connect_info(&self) -> PeerInfo {
        self.info.clone()
    }
}

impl AsyncRead for H2Conn {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for H2Conn {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write(cx, buf)
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

// Each argument is one part of the listener; a struct bundling them would only move the list.
#[allow(clippy::too_many_arguments)]
async fn serve_h2<S>(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    trust: Trust,
    limits: Limits,
    admission: Admission,
    gate: Gate,
    svc: S,
    mut stop: watch::Receiver<bool>,
) where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<H2Conn, std::io::Error>>(64);
    let accept_stop = stop.clone();
    // Handshakes run in their own tasks so a slow or hostile peer cannot hold up the others.
    tokio::spawn(async move {
        let mut accept_stop = accept_stop;
        let mut backoff = guard::Backoff::default();
        loop {
            let (tcp, remote) = tokio::select! {
                v = guard::accept(&listener, &gate, &mut backoff) => v,
                _ = accept_stop.wait_for(|s| *s) => break,
            };
            // Refused before the handshake: closing costs nothing, a handshake would.
            let slot = match gate.admit(remote.ip()) {
                Ok(slot) => slot,
                Err(why) => {
                    debug!(%remote, "refusing tcp connection: {why}");
                    continue;
                }
            };
            let _ = tcp.set_nodelay(true);
            let acceptor = acceptor.clone();
            let trust = trust.clone();
            let tx = tx.clone();
            let admission = admission.clone();
            tokio::spawn(async move {
                let Some(turn) = admission.wait().await else {
                    return debug!(%remote, "refusing tcp connection: too many handshakes in progress");
                };
                let hs = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp));
                let (turn, hs) = crate::admission::within_turn(turn, hs).await;
                let io = match hs {
                    Ok(Ok(io)) => io,
                    Ok(Err(e)) => return debug!(%remote, "tls handshake failed: {e}"),
                    Err(_) => return debug!(%remote, "tls handshake timed out"),
                };
                let chain: Option<Vec<CertificateDer<'static>>> = io
                    .get_ref()
                    .1
                    .peer_certificates()
                    .map(|c| c.iter().map(|c| c.clone().into_owned()).collect());
                let identified = identity::identify(chain.as_deref(), &trust);
                if let Some(turn) = turn {
                    turn.done(identified.is_ok());
                }
                match identified {
                    Ok(peer) => {
                        let info = PeerInfo {
                            peer,
                            remote_addr: remote,
                            transport: Transport::H2,
                        };
                        let _ = tx
                            .send(Ok(H2Conn {
                                io,
                                info,
                                _slot: slot,
                            }))
                            .await;
                    }
                    Err(e) => warn!(%remote, "refusing tcp connection: {e}"),
                }
            });
        }
    });
    let incoming = tokio_stream::wrappers::ReceiverStream::new(rx);
    let res = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(limits.keep_alive))
        .http2_keepalive_timeout(Some(limits.idle_timeout))
        .max_concurrent_streams(limits.max_concurrent_streams)
        .serve_with_incoming_shutdown(svc, incoming, async move {
            let _ = stop.wait_for(|s| *s).await;
        })
        .await;
    if let Err(e) = res {
        warn!("http/2 server stopped: {e}");
    }
}
