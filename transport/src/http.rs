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

/// Serves GET requests with `handler(path)` until `shutdown` turns true.
pub async fn serve<F, Fut>(listener: TcpListener, handler: F, shutdown: watch::Receiver<bool>)
where
    F: Fn(String) -> Fut + Clone + Send + Sync + 'static,
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
    F: Fn(String) -> Fut + Clone + Send + Sync + 'static,
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
                            handler(req.uri().path().to_owned()).await
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
            |p: String| async move {
                if p == "/healthz" {
                    (200, "text/plain", "ok\n".to_owned())
                } else {
                    (404, "text/plain", "not found\n".to_owned())
                }
            },
            rx,
        ));
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut buf = String::new();
        s.read_to_string(&mut buf).await.unwrap();
        assert!(buf.starts_with("HTTP/1.1 200"), "{buf}");
        assert!(buf.ends_with("ok\n"), "{buf}");
        let _ = tx.send(true);
    }
}
