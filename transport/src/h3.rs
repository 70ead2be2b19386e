//! gRPC over HTTP/3: the one module that bridges tonic services and clients onto `h3` + `quinn`.
//!
//! We own this loop rather than use tonic-h3 (0.0.x, a thin layer over axum-h3 and h3-util whose
//! router does not hand the QUIC connection's peer certificate to requests): the minion's identity
//! must come from exactly that certificate, so each request gets a [`PeerInfo`] extension here.
//! Nothing outside this module names an h3 type, so the bridge can be replaced in one place.

use std::convert::Infallible;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes};
use futures_util::future::BoxFuture;
use http_body::Frame;
use http_body_util::BodyExt;
use rustls::pki_types::CertificateDer;
use tonic::body::Body;
use tower::{Service, ServiceExt};
use tracing::{debug, warn};

use crate::identity::{self, PeerInfo, Transport};
use crate::tls::Trust;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The receiving half of an h3 request stream, on either side.
trait RecvHalf: Send + 'static {
    fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Bytes>, h3::error::StreamError>>;
    fn poll_trailers(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<http::HeaderMap>, h3::error::StreamError>>;
}

macro_rules! recv_half {
    ($ty:ty) => {
        impl RecvHalf for $ty {
            fn poll_data(
                &mut self,
                cx: &mut Context<'_>,
            ) -> Poll<Result<Option<Bytes>, h3::error::StreamError>> {
                self.poll_recv_data(cx)
                    .map_ok(|b| b.map(|mut b| b.copy_to_bytes(b.remaining())))
            }
            fn poll_trailers(
                &mut self,
                cx: &mut Context<'_>,
            ) -> Poll<Result<Option<http::HeaderMap>, h3::error::StreamError>> {
                self.poll_recv_trailers(cx)
            }
        }
    };
}
recv_half!(h3::server::RequestStream<h3_quinn::RecvStream, Bytes>);
recv_half!(h3::client::RequestStream<h3_quinn::RecvStream, Bytes>);

/// An HTTP body read from an h3 stream: data frames, then optional trailers (gRPC's status).
struct RecvBody<R> {
    recv: R,
    state: RecvState,
}

#[derive(PartialEq)]
enum RecvState {
    Data,
    Trailers,
    Done,
}

impl<R: RecvHalf> RecvBody<R> {
    fn new(recv: R) -> Self {
        RecvBody {
            recv,
            state: RecvState::Data,
        }
    }
}

impl<R: RecvHalf + Unpin> http_body::Body for RecvBody<R> {
    type Data = Bytes;
    type Error = h3::error::StreamError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if this.state == RecvState::Data {
            match ready!(this.recv.poll_data(cx)) {
                Ok(Some(data)) => return Poll::Ready(Some(Ok(Frame::data(data)))),
                Ok(None) => this.state = RecvState::Trailers,
                Err(e) => {
                    this.state = RecvState::Done;
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
        if this.state == RecvState::Trailers {
            let res = ready!(this.recv.poll_trailers(cx));
            this.state = RecvState::Done;
            return Poll::Ready(match res {
                Ok(Some(t)) => Some(Ok(Frame::trailers(t))),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            });
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.state == RecvState::Done
    }
}

/// The sending half of an h3 request stream, on either side.
trait SendHalf: Send {
    async fn data(&mut self, b: Bytes) -> Result<(), h3::error::StreamError>;
    async fn trailers(&mut self, t: http::HeaderMap) -> Result<(), h3::error::StreamError>;
    async fn finish(&mut self) -> Result<(), h3::error::StreamError>;
}

macro_rules! send_half {
    ($ty:ty) => {
        impl SendHalf for $ty {
            async fn data(&mut self, b: Bytes) -> Result<(), h3::error::StreamError> {
                self.send_data(b).await
            }
            async fn trailers(&mut self, t: http::HeaderMap) -> Result<(), h3::error::StreamError> {
                self.send_trailers(t).await
            }
            async fn finish(&mut self) -> Result<(), h3::error::StreamError> {
                <$ty>::finish(self).await
            }
        }
    };
}
send_half!(h3::server::RequestStream<h3_quinn::SendStream<Bytes>, Bytes>);
send_half!(h3::client::RequestStream<h3_quinn::SendStream<Bytes>, Bytes>);

/// Copies an HTTP body onto an h3 stream: data, then trailers, then the end of the stream.
async fn send_body<S: SendHalf>(send: &mut S, body: Body) -> Result<(), BoxError> {
    let mut body = std::pin::pin!(body);
    let mut trailers_sent = false;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|s| -> BoxError { Box::new(s) })?;
        match frame.into_data() {
            Ok(data) => send.data(data).await?,
            Err(frame) => {
                if let Ok(t) = frame.into_trailers() {
                    send.trailers(t).await?;
                    trailers_sent = true;
                }
            }
        }
    }
    if !trailers_sent {
        send.finish().await?;
    }
    Ok(())
}

/// Serves one accepted QUIC connection: identifies the peer, then answers its requests.
pub(crate) async fn serve_connection<S>(
    incoming: quinn::Incoming,
    svc: S,
    trust: Trust,
    turn: crate::admission::Turn,
) where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    let remote = incoming.remote_address();
    let (turn, conn) = crate::admission::within_turn(turn, incoming.into_future()).await;
    let conn = match conn {
        Ok(c) => c,
        Err(e) => {
            debug!(%remote, "quic handshake failed: {e}");
            return;
        }
    };
    let chain = conn
        .peer_identity()
        .and_then(|id| id.downcast::<Vec<CertificateDer<'static>>>().ok());
    let identified = identity::identify(chain.as_deref().map(Vec::as_slice), &trust);
    if let Some(turn) = turn {
        turn.done(identified.is_ok());
    }
    let peer = match identified {
        Ok(p) => p,
        Err(e) => {
            warn!(%remote, "refusing quic connection: {e}");
            conn.close(
                crate::client::CLOSE_CERTIFICATE_REJECTED.into(),
                b"no usable client certificate",
            );
            return;
        }
    };
    let info = PeerInfo {
        peer,
        remote_addr: remote,
        transport: Transport::Quic,
    };
    let mut h3conn = match h3::server::builder()
        .build::<_, Bytes>(h3_quinn::Connection::new(conn.clone()))
        .await
    {
        Ok(c) => c,
        Err(e) => {
            debug!(%remote, "http/3 setup failed: {e}");
            return;
        }
    };
    loop {
        match h3conn.accept().await {
            Ok(Some(resolver)) => {
                let svc = svc.clone();
                let info = info.clone();
                let conn = conn.clone();
                tokio::spawn(async move {
                    let (req, stream) = match resolver.resolve_request().await {
                        Ok(r) => r,
                        Err(e) => {
                            debug!("bad http/3 request: {e}");
                            return;
                        }
                    };
                    let (mut send, recv) = stream.split();
                    let mut req = req.map(|()| Body::new(RecvBody::new(recv)));
                    req.extensions_mut().insert(info);
                    let Ok(resp) = svc.oneshot(req).await;
                    let (parts, body) = resp.into_parts();
                    let res = async {
                        send.send_response(http::Response::from_parts(parts, ()))
                            .await?;
                        send_body(&mut send, body).await
                    };
                    // A closed connection ends the response, so a long-lived stream notices a
                    // peer that went away even when it has nothing to send.
                    tokio::select! {
                        r = res => if let Err(e) = r { debug!("http/3 response aborted: {e}") },
                        _ = conn.closed() => {}
                    }
                });
            }
            Ok(None) => break,
            Err(e) => {
                if !e.is_h3_no_error() {
                    debug!(%remote, "http/3 connection ended: {e}");
                }
                break;
            }
        }
    }
}

/// A tonic-compatible client channel over one HTTP/3 connection.
#[derive(Clone)]
pub struct H3Channel {
    send_request: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    authority: Arc<str>,
    conn: quinn::Connection,
    endpoint: quinn::Endpoint,
}

impl H3Channel {
    /// Starts HTTP/3 on an established QUIC connection. `authority` is `host:port`.
    pub(crate) async fn new(
        endpoint: quinn::Endpoint,
        conn: quinn::Connection,
        authority: &str,
    ) -> Result<H3Channel, BoxError> {
        let (mut driver, send_request) =
            h3::client::new(h3_quinn::Connection::new(conn.clone())).await?;
        tokio::spawn(async move {
            let e = poll_fn(|cx| driver.poll_close(cx)).await;
            if !e.is_h3_no_error() {
                debug!("http/3 client connection closed: {e}");
            }
        });
        Ok(H3Channel {
            send_request,
            authority: authority.into(),
            conn,
            endpoint,
        })
    }

    /// Closes the connection and waits (briefly) until the peer was told.
    pub async fn close(&self) {
        self.conn.close(0u32.into(), b"closing");
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), self.endpoint.wait_idle())
            .await;
    }

    /// The underlying QUIC connection.
    pub fn connection(&self) -> &quinn::Connection {
        &self.conn
    }
}

impl Service<http::Request<Body>> for H3Channel {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let mut sr = self.send_request.clone();
        let authority = self.authority.clone();
        Box::pin(async move {
            let (mut parts, body) = req.into_parts();
            let path = parts
                .uri
                .path_and_query()
                .map(|p| p.as_str().to_owned())
                .unwrap_or_else(|| "/".into());
            parts.uri = http::Uri::builder()
                .scheme("https")
                .authority(&*authority)
                .path_and_query(path)
                .build()?;
            let stream = sr
                .send_request(http::Request::from_parts(parts, ()))
                .await?;
            let (mut send, mut recv) = stream.split();
            tokio::spawn(async move {
                if let Err(e) = send_body(&mut send, body).await {
                    debug!("http/3 request body aborted: {e}");
                }
            });
            let resp = recv.recv_response().await?;
            Ok(resp.map(|()| Body::new(RecvBody::new(recv))))
        })
    }
}
