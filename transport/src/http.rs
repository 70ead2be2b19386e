//! A minimal plain-HTTP endpoint for probes and metrics (`/healthz`, `/readyz`, `/metrics`).
//! Kubernetes probes cannot do mutual TLS, so these live on their own port, apart from gRPC.

use std::convert::Infallible;
use std::future::Future;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// What a handler answers: status code, content type, body.
pub type Reply = (u16, &'static str, String);

/// What a handler is asked: the parts of a GET request the probes and the scrape look at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// The path, without the query.
    pub path: String,
    /// The `Authorization` header, when sent and readable as text.
    pub authorization: Option<String>,
}

impl Request {
    /// Whether the request carries `Authorization: Bearer <token>` with this `token`, compared
    /// in constant time (the scheme's case does not matter, as RFC 9110 says).
    pub fn bearer_is(&self, token: &str) -> bool {
        let Some(value) = self.authorization.as_deref() else {
            return false;
        };
        let Some((scheme, given)) = value.trim().split_once(' ') else {
            return false;
        };
        scheme.eq_ignore_ascii_case("bearer") && same_secret(given.trim_start(), token)
    }
}

/// Whether `a` and `b` are equal, in time that depends on neither: their SHA-256 digests are
/// compared byte by byte without stopping early, so not even the length is told.
fn same_secret(a: &str, b: &str) -> bool {
    use sha2::{Digest, Sha256};
    let (a, b) = (Sha256::digest(a.as_bytes()), Sha256::digest(b.as_bytes()));
    let diff = a
        .iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// Serves GET requests with `handler(request)` until `shutdown` turns true.
pub async fn serve<F, Fut>(listener: TcpListener, handler: F, shutdown: watch::Receiver<bool>)
where
    F: Fn(Request) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Reply> + Send + 'static,
{
    let fds = crate::guard::nofile_limit().unwrap_or(u64::MAX);
    let gate = crate::guard::Gate::new("health", crate::guard::Caps::HEALTH.within_fds(fds));
    serve_gated(listener, gate, handler, shutdown).await
}

/// [`serve`] with connections admitted by `gate` (its counters go to `/metrics`): past its
/// caps a connection is answered 503 and closed; one that sends no request within
/// [`crate::http1::SOCKET_TIMEOUT`] is answered 408 and closed.
pub async fn serve_gated<F, Fut>(
    listener: TcpListener,
    gate: crate::guard::Gate,
    handler: F,
    mut shutdown: watch::Receiver<bool>,
) where
    F: Fn(Request) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Reply> + Send + 'static,
{
    let mut backoff = crate::guard::Backoff::default();
    loop {
        let (tcp, remote) = tokio::select! {
            v = crate::guard::accept(&listener, &gate, &mut backoff) => v,
            _ = shutdown.wait_for(|s| *s) => return,
        };
        let slot = match gate.admit(remote.ip()) {
            Ok(slot) => slot,
            Err(why) => {
                tracing::debug!(%remote, "refusing http connection: {why}");
                crate::http1::refuse_plain(tcp, &why);
                continue;
            }
        };
        let handler = handler.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let svc = service_fn(
                move |req: hyper::Request<crate::http1::TimedBody<hyper::body::Incoming>>| {
                    let handler = handler.clone();
                    async move {
                        let (status, ctype, body) = if req.method() == hyper::Method::GET {
                            let authorization = req
                                .headers()
                                .get(hyper::header::AUTHORIZATION)
                                .and_then(|v| v.to_str().ok())
                                .map(str::to_owned);
                            handler(Request {
                                path: req.uri().path().to_owned(),
                                authorization,
                            })
                            .await
                        } else {
                            (405, "text/plain", "method not allowed\n".to_owned())
                        };
                        let resp = hyper::Response::builder()
                            .status(status)
                            .header("content-type", ctype)
                            .body(Full::new(Bytes::from(body)))
                            .unwrap_or_default();
                        Ok::<_, Infallible>(resp)
                    }
                },
            );
            let gate = _slot.gate().clone();
            crate::http1::serve_connection(tcp, svc, crate::http1::SOCKET_TIMEOUT, Some(gate))
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn answers_get_by_path() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = watch::channel(false);
        tokio::spawn(serve(
            l,
            |r: Request| async move {
                match (r.path.as_str(), r.bearer_is("s3cret")) {
                    ("/healthz", _) => (200, "text/plain", "ok\n".to_owned()),
                    ("/metrics", true) => (200, "text/plain", "m 1\n".to_owned()),
                    ("/metrics", false) => (401, "text/plain", "token\n".to_owned()),
                    _ => (404, "text/plain", "not found\n".to_owned()),
                }
            },
            rx,
        ));
        let get = |path: &'static str, auth: &'static str| async move {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n");
            s.write_all(req.as_bytes()).await.unwrap();
            let mut buf = String::new();
            s.read_to_string(&mut buf).await.unwrap();
            buf
        };
        let buf = get("/healthz", "").await;
        assert!(buf.starts_with("HTTP/1.1 200"), "{buf}");
        assert!(buf.ends_with("ok\n"), "{buf}");
        // The Authorization header reaches the handler.
        let buf = get("/metrics", "Authorization: Bearer s3cret\r\n").await;
        assert!(buf.starts_with("HTTP/1.1 200"), "{buf}");
        let buf = get("/metrics", "").await;
        assert!(buf.starts_with("HTTP/1.1 401"), "{buf}");
        let _ = tx.send(true);
    }

    #[test]
    fn bearer_tokens_match_exactly() {
        let r = |a: Option<&str>| Request {
            path: "/metrics".into(),
            authorization: a.map(str::to_owned),
        };
        for (auth, want) in [
            (Some("Bearer s3cret"), true),
            (Some("bearer s3cret"), true),
            (Some("Bearer  s3cret"), true),
            (None, false),
            (Some("Bearer"), false),
            (Some("Bearer s3cre"), false),
            (Some("Bearer s3cretX"), false),
            (Some("Basic s3cret"), false),
            (Some("s3cret"), false),
            (Some("Bearer "), false),
        ] {
            assert_eq!(r(auth).bearer_is("s3cret"), want, "{auth:?}");
        }
    }
}
