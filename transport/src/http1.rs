//! HTTP/1 connections that cannot be held open for nothing (salt-api and the health port):
//! with no request in service, the next request's headers must arrive within the socket
//! timeout, else the server answers `408 Request Timeout` and closes, as Salt's cheroot does;
//! a request body that stalls that long is dropped; a connection refused by its listener's
//! [`Gate`] is answered `503` naming the reason.
//!
//! Hyper's own `header_read_timeout` closes without a word and knows nothing of responses
//! still streaming, so the connection's IO is wrapped ([`Patient`]) and the service counts the
//! requests in service ([`Tracked`]): a request is in service from the call until its
//! response body is dropped, so salt-api's `/events` stream and a `local` job waiting for its
//! returns are never cut, however quiet they are.
//!
//! What Salt 3007.8's salt-api (rest_cherrypy on cheroot, `server.socket_timeout` 10 s)
//! does, observed with `bench/salt/saltapi-peer` (the e2e test `flood.rs` checks saltq's side):
//! - a connection that sends nothing is answered after 10.0 s with
//!   `HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nContent-Type: text/plain\r\n\r\n`
//!   and closed;
//! - a keep-alive connection idle after a complete answer is closed after 10 s without a word;
//! - headers trickled a byte every 0.5 s stay open past 40 s: cheroot's timeout is per `recv`.
//!   saltq differs here on purpose: the headers must all be in within the timeout (else the
//!   408), which is what bounds a slowloris client.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

use crate::guard::{Gate, Refusal};

/// How long a connection may take to send the next request's headers, or a stalled request
/// body to go on: cheroot's `server.socket_timeout` default, which Salt's rest_cherrypy keeps.
pub const SOCKET_TIMEOUT: Duration = Duration::from_secs(10);

/// What Salt's cheroot answers a connection that sent no request in time (then it closes).
pub const REQUEST_TIMEOUT: &[u8] =
    b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nContent-Type: text/plain\r\n\r\n";

/// When an idle connection times out: `idle_since + timeout` while no request is in service,
/// never while one is.
pub fn idle_deadline(in_service: usize, idle_since: Instant, timeout: Duration) -> Option<Instant> {
    (in_service == 0).then(|| idle_since + timeout)
}

/// Requests in service on one connection, and since when none is.
#[derive(Debug, Clone)]
pub struct InService(Arc<InServiceInner>);

#[derive(Debug)]
struct InServiceInner {
    count: AtomicUsize,
    /// Requests that entered service so far.
    entered: AtomicUsize,
    idle_since: Mutex<Instant>,
    /// The connection's task, woken when the last request leaves service: hyper may have
    /// polled the connection for the last time while the request was still in service, and
    /// the idle clock must start then all the same.
    waker: Mutex<Option<std::task::Waker>>,
}

impl Default for InService {
    fn default() -> Self {
        InService(Arc::new(InServiceInner {
            count: AtomicUsize::new(0),
            entered: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            waker: Mutex::new(None),
        }))
    }
}

impl InService {
    /// A request enters service; it leaves when the returned mark is dropped.
    pub fn enter(&self) -> Busy {
        self.0.entered.fetch_add(1, Ordering::SeqCst);
        self.0.count.fetch_add(1, Ordering::SeqCst);
        Busy(self.clone())
    }

    /// Requests in service now.
    pub fn count(&self) -> usize {
        self.0.count.load(Ordering::SeqCst)
    }

    fn deadline(&self, timeout: Duration) -> Option<Instant> {
        let since = *self.0.idle_since.lock().unwrap_or_else(|e| e.into_inner());
        idle_deadline(self.count(), since, timeout)
    }
}

/// A request in service; dropping it ends the service (with the response body).
#[derive(Debug)]
pub struct Busy(InService);

impl Drop for Busy {
    fn drop(&mut self) {
        let inner = &(self.0).0;
        *inner.idle_since.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        if inner.count.fetch_sub(1, Ordering::SeqCst) == 1
            && let Some(w) = inner.waker.lock().unwrap_or_else(|e| e.into_inner()).take()
        {
            w.wake();
        }
    }
}

/// A connection's IO that fails, after writing [`REQUEST_TIMEOUT`] best-effort, when the
/// deadline of [`idle_deadline`] passes. Bytes trickling in do not move the deadline: that is
/// what cuts a slowloris client.
pub struct Patient<T> {
    io: T,
    busy: InService,
    timeout: Duration,
    sleep: Pin<Box<Sleep>>,
    gate: Option<Gate>,
    timed_out: bool,
    /// The number of requests entered when bytes last came in with none in service: equal to
    /// the number now when the next request has begun to arrive.
    began_after: Option<usize>,
}

/// Whether a connection that timed out is told so: as cheroot, when it never sent a request
/// or had begun the next one; a keep-alive connection idle after its answers is just closed.
pub fn answer_timeout(entered: usize, began_after: Option<usize>) -> bool {
    entered == 0 || began_after == Some(entered)
}

impl<T: AsyncRead + AsyncWrite + Unpin> Patient<T> {
    /// Wraps `io`; `gate` counts the timeouts.
    pub fn new(io: T, busy: InService, timeout: Duration, gate: Option<Gate>) -> Patient<T> {
        Patient {
            io,
            busy,
            timeout,
            sleep: Box::pin(tokio::time::sleep(timeout)),
            gate,
            timed_out: false,
            began_after: None,
        }
    }

    /// `Ready` when the connection is past its deadline: then it has written the 408.
    fn expired(&mut self, cx: &mut Context<'_>, answer: bool) -> Poll<io::Error> {
        if !self.timed_out {
            // Kept before the count is read, so a request leaving service just after is not
            // missed.
            *self.busy.0.waker.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
            let Some(deadline) = self.busy.deadline(self.timeout) else {
                return Poll::Pending;
            };
            if self.sleep.deadline() != deadline {
                self.sleep.as_mut().reset(deadline);
            }
            if self.sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.timed_out = true;
            if let Some(g) = &self.gate {
                g.stats().timeouts.fetch_add(1, Ordering::Relaxed);
            }
            let entered = self.busy.0.entered.load(Ordering::SeqCst);
            if answer && answer_timeout(entered, self.began_after) {
                // Best-effort: one attempt, the connection is closed right after either way.
                let _ = Pin::new(&mut self.io).poll_write(cx, REQUEST_TIMEOUT);
                let _ = Pin::new(&mut self.io).poll_flush(cx);
            }
        }
        Poll::Ready(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no request within {} s", self.timeout.as_secs_f64()),
        ))
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncRead for Patient<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if let Poll::Ready(e) = this.expired(cx, true) {
            return Poll::Ready(Err(e));
        }
        let before = buf.filled().len();
        let r = Pin::new(&mut this.io).poll_read(cx, buf);
        if buf.filled().len() > before && this.busy.count() == 0 {
            this.began_after = Some(this.busy.0.entered.load(Ordering::SeqCst));
        }
        r
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Patient<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            // A reader that takes nothing while no request is in service is as idle as one
            // that sends nothing.
            Poll::Pending => match this.expired(cx, false) {
                Poll::Ready(e) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            },
            r => r,
        }
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.io).poll_flush(cx) {
            Poll::Pending => match this.expired(cx, false) {
                Poll::Ready(e) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            },
            r => r,
        }
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A request body that fails when no frame comes for `timeout`.
pub struct TimedBody<B> {
    body: B,
    timeout: Duration,
    sleep: Pin<Box<Sleep>>,
}

impl<B> TimedBody<B> {
    /// Wraps `body`; the first frame is due within `timeout` from now.
    pub fn new(body: B, timeout: Duration) -> TimedBody<B> {
        TimedBody {
            body,
            timeout,
            sleep: Box::pin(tokio::time::sleep(timeout)),
        }
    }
}

/// The error of a request body that stalled.
#[derive(Debug, thiserror::Error)]
#[error("the request body stalled for {0} s")]
pub struct BodyStalled(f64);

impl<B> Body for TimedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(f) => {
                let next = Instant::now() + this.timeout;
                this.sleep.as_mut().reset(next);
                Poll::Ready(f.map(|r| r.map_err(Into::into)))
            }
            Poll::Pending => match this.sleep.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    Poll::Ready(Some(Err(Box::new(BodyStalled(this.timeout.as_secs_f64())))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }
    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A response body that keeps its request in service until it is dropped.
pub struct Counted<B> {
    body: B,
    _busy: Busy,
}

impl<B> Body for Counted<B>
where
    B: Body + Unpin,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }
    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }
    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A hyper service that counts its requests in service (until their response bodies are
/// dropped) and hands the inner service bodies that fail when they stall.
#[derive(Clone)]
pub struct Tracked<S> {
    inner: S,
    busy: InService,
    timeout: Duration,
}

impl<S> Tracked<S> {
    /// Wraps `inner`, counting on `busy`.
    pub fn new(inner: S, busy: InService, timeout: Duration) -> Tracked<S> {
        Tracked {
            inner,
            busy,
            timeout,
        }
    }
}

impl<S, B> hyper::service::Service<http::Request<Incoming>> for Tracked<S>
where
    S: hyper::service::Service<http::Request<TimedBody<Incoming>>, Response = http::Response<B>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Counted<B>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn call(&self, mut req: http::Request<Incoming>) -> Self::Future {
        let busy = self.busy.enter();
        // A websocket (an upgraded connection) holds its own mark while it lives.
        req.extensions_mut().insert(self.busy.clone());
        let timeout = self.timeout;
        let fut = self.inner.call(req.map(|b| TimedBody::new(b, timeout)));
        Box::pin(async move {
            let resp = fut.await?;
            Ok(resp.map(|body| Counted { body, _busy: busy }))
        })
    }
}

/// Serves one HTTP/1 connection with `svc` under `timeout` (see the module's doc); the
/// connection's timeouts are counted on `gate`. Ends with the connection.
pub async fn serve_connection<I, S, B>(io: I, svc: S, timeout: Duration, gate: Option<Gate>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::Service<http::Request<TimedBody<Incoming>>, Response = http::Response<B>>
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: Body + Unpin + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let busy = InService::default();
    let io = Patient::new(io, busy.clone(), timeout, gate);
    let svc = Tracked::new(svc, busy, timeout);
    if let Err(e) = hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(io), svc)
        .with_upgrades()
        .await
    {
        tracing::debug!("http connection ended: {e}");
    }
}

/// Answers a connection its listener refused on plain HTTP: `503 Service Unavailable` with
/// the reason, then closes. Never waits: what the peer already sent is read (so the close is
/// not a reset that could lose the answer), the answer is written if the socket takes it at
/// once, and the socket is closed.
pub fn refuse_plain(sock: TcpStream, why: &Refusal) {
    let mut scratch = [0u8; 4096];
    for _ in 0..16 {
        match sock.try_read(&mut scratch) {
            Ok(n) if n > 0 => continue,
            _ => break,
        }
    }
    let body = format!("{why}\n");
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = sock.try_write(answer.as_bytes());
    if let Ok(std) = sock.into_std() {
        let _ = std.shutdown(std::net::Shutdown::Write);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, Full};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn only_a_connection_with_nothing_in_service_has_a_deadline() {
        let t0 = Instant::now();
        let ten = Duration::from_secs(10);
        assert_eq!(idle_deadline(0, t0, ten), Some(t0 + ten));
        assert_eq!(idle_deadline(1, t0, ten), None);
        assert_eq!(idle_deadline(3, t0, ten), None);
    }

    #[test]
    fn only_a_connection_that_never_asked_or_began_asking_is_told_408() {
        assert!(answer_timeout(0, None));
        assert!(answer_timeout(0, Some(0)));
        assert!(!answer_timeout(1, None));
        assert!(!answer_timeout(2, Some(1)));
        assert!(answer_timeout(2, Some(2)));
    }

    #[tokio::test]
    async fn a_request_begun_after_an_answer_and_left_unfinished_is_told_408() {
        let (addr, _gate) = server(Duration::from_millis(300)).await;
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut first = [0u8; 12];
        s.read_exact(&mut first).await.unwrap();
        s.write_all(b"GET / HT").await.unwrap();
        let got = String::from_utf8_lossy(&first).into_owned() + &read_all(&mut s).await;
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
        assert!(got.ends_with("\r\n\r\nHTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nContent-Type: text/plain\r\n\r\n"), "{got}");
    }

    #[test]
    fn the_idle_clock_starts_when_the_last_request_leaves_service() {
        let s = InService::default();
        let a = s.enter();
        let b = s.enter();
        assert_eq!(s.deadline(SOCKET_TIMEOUT), None);
        drop(a);
        assert_eq!(s.deadline(SOCKET_TIMEOUT), None);
        let before = Instant::now();
        drop(b);
        assert!(s.deadline(SOCKET_TIMEOUT).unwrap() >= before + SOCKET_TIMEOUT);
    }

    async fn server(timeout: Duration) -> (std::net::SocketAddr, Gate) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let gate = Gate::new("health", crate::guard::Caps::HEALTH);
        let g = gate.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = l.accept().await {
                let svc = hyper::service::service_fn(
                    |req: http::Request<TimedBody<Incoming>>| async move {
                        // `/stream`: a response that stays quiet longer than the timeout.
                        let body = if req.uri().path() == "/stream" {
                            tokio::time::sleep(Duration::from_millis(1500)).await;
                            Bytes::from_static(b"late\n")
                        } else {
                            match req.into_body().collect().await {
                                Ok(b) => b.to_bytes(),
                                Err(e) => Bytes::from(format!("error: {e}\n")),
                            }
                        };
                        Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(body)))
                    },
                );
                tokio::spawn(serve_connection(tcp, svc, timeout, Some(g.clone())));
            }
        });
        (addr, gate)
    }

    async fn read_all(s: &mut tokio::net::TcpStream) -> String {
        let mut buf = vec![];
        let _ = tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut buf)).await;
        String::from_utf8_lossy(&buf).into_owned()
    }

    #[tokio::test]
    async fn an_idle_connection_is_answered_408_and_closed() {
        let (addr, gate) = server(Duration::from_millis(300)).await;
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let got = read_all(&mut s).await;
        assert_eq!(got.as_bytes(), REQUEST_TIMEOUT, "{got}");
        assert_eq!(gate.snapshot().timeouts, 1);
    }

    #[tokio::test]
    async fn headers_trickled_a_byte_at_a_time_do_not_keep_the_connection() {
        let (addr, _gate) = server(Duration::from_millis(400)).await;
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut cut = false;
        // Bounded: the whole request would take 80 × 50 ms = 4 s, ten timeouts.
        for b in b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n" {
            if s.write_all(&[*b]).await.is_err() {
                cut = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let got = read_all(&mut s).await;
        assert!(cut || got.starts_with("HTTP/1.1 408"), "{got}");
        assert!(!got.contains("200 OK"), "{got}");
    }

    #[tokio::test]
    async fn a_quiet_response_in_service_is_not_cut() {
        let (addr, _gate) = server(Duration::from_millis(300)).await;
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let got = read_all(&mut s).await;
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
        assert!(got.contains("late\n"), "{got}");
        // Then idle again, and closed without a 408, as cheroot does after an answer.
        assert!(got.ends_with("late\n"), "{got}");
    }

    #[tokio::test]
    async fn a_stalled_request_body_is_dropped() {
        let (addr, _gate) = server(Duration::from_millis(300)).await;
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
            .await
            .unwrap();
        let got = read_all(&mut s).await;
        assert!(got.contains("error: the request body stalled"), "{got}");
    }

    #[tokio::test]
    async fn a_refused_connection_reads_why() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (sock, peer) = l.accept().await.unwrap();
        refuse_plain(
            sock,
            &Refusal::SourceFull {
                ip: peer.ip(),
                limit: 2,
            },
        );
        let got = read_all(&mut c).await;
        assert!(
            got.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{got}"
        );
        assert!(
            got.ends_with("\r\n\r\ntoo many connections from 127.0.0.1 (at most 2)\n"),
            "{got}"
        );
    }
}
