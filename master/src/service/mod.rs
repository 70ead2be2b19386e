//! The master's gRPC services. Each is a thin adapter from protobuf to [`crate::state::Master`];
//! who may call what is decided once, in [`authorize`], from the peer's certificate.

pub mod events;
pub mod jobs;
pub mod keys;
pub mod minion;
pub mod runner;

use std::convert::Infallible;
use std::task::{Context, Poll};

use futures_util::future::BoxFuture;
use saltq_transport::{Peer, PeerInfo};
use tonic::body::Body;
use tonic::{Request, Status};
use tower::Service;

/// The authenticated peer of a request (set by the transport on every connection).
pub fn peer<T>(req: &Request<T>) -> Result<&Peer, Status> {
    req.extensions()
        .get::<PeerInfo>()
        .map(|p| &p.peer)
        .ok_or_else(|| Status::unauthenticated("no peer identity on this connection"))
}

/// The client name of a request from a client certificate (Salt's `user`).
pub fn client_name<T>(req: &Request<T>) -> Result<String, Status> {
    match peer(req)? {
        Peer::Client { name } => Ok(name.clone()),
        Peer::Minion { id, .. } => Err(Status::permission_denied(format!(
            "minion {id} cannot call this service"
        ))),
    }
}

/// Who may call which service: minions only the minion service, clients everything else;
/// health and reflection are open to any authenticated peer.
pub fn authorize(path: &str, peer: Option<&Peer>) -> Result<(), Status> {
    let Some(peer) = peer else {
        return Err(Status::unauthenticated(
            "no peer identity on this connection",
        ));
    };
    let service = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default();
    if service.starts_with("grpc.health.") || service.starts_with("grpc.reflection.") {
        return Ok(());
    }
    match (service, peer) {
        ("saltq.v1.MinionService", Peer::Minion { .. }) => Ok(()),
        ("saltq.v1.MinionService", Peer::Client { name }) => {
            Err(Status::permission_denied(format!(
                "client certificate {name:?} cannot pose as a minion: MinionService needs a minion certificate"
            )))
        }
        (_, Peer::Client { .. }) => Ok(()),
        (svc, Peer::Minion { id, .. }) => Err(Status::permission_denied(format!(
            "minion {id} may not call {svc}: it needs a client certificate"
        ))),
    }
}

/// Applies [`authorize`] in front of the routes.
#[derive(Clone)]
pub struct Authorize<S> {
    inner: S,
}

impl<S> Authorize<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        Authorize { inner }
    }
}

impl<S> Service<http::Request<Body>> for Authorize<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let peer = req.extensions().get::<PeerInfo>().map(|p| &p.peer);
        match authorize(req.uri().path(), peer) {
            Ok(()) => {
                let fut = self.inner.call(req);
                Box::pin(async move {
                    let mut resp = fut.await?;
                    size_limit_is_resource_exhausted(&mut resp);
                    Ok(resp)
                })
            }
            Err(status) => Box::pin(std::future::ready(Ok(status.into_http()))),
        }
    }
}

/// tonic answers a message over `max_message_size` with OUT_OF_RANGE; gRPC's convention (and
/// saltq's contract) is RESOURCE_EXHAUSTED, so the status is rewritten here, in one place.
fn size_limit_is_resource_exhausted(resp: &mut http::Response<Body>) {
    let too_large = resp
        .headers()
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|m| m.contains("too%20large") || m.contains("too large"));
    let out_of_range = resp.headers().get("grpc-status").is_some_and(|v| v == "11");
    if too_large && out_of_range {
        resp.headers_mut()
            .insert("grpc-status", http::HeaderValue::from_static("8"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use saltq_transport::Issuer;

    #[test]
    fn minions_and_clients_stay_in_their_lanes() {
        let client = Peer::Client {
            name: "admin".into(),
        };
        let minion = Peer::Minion {
            id: "web1".into(),
            fingerprint: String::new(),
            public_key_pem: String::new(),
            issuer: Issuer::SelfSigned,
        };
        assert!(authorize("/saltq.v1.JobService/Publish", Some(&client)).is_ok());
        assert!(authorize("/saltq.v1.KeyService/AcceptKeys", Some(&client)).is_ok());
        assert!(authorize("/saltq.v1.MinionService/Subscribe", Some(&minion)).is_ok());
        let e = authorize("/saltq.v1.JobService/Publish", Some(&minion)).unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert!(e.message().contains("web1"));
        let e = authorize("/saltq.v1.MinionService/Return", Some(&client)).unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert!(authorize("/grpc.health.v1.Health/Check", Some(&minion)).is_ok());
        assert!(authorize("/saltq.v1.JobService/Publish", None).is_err());
    }
}
