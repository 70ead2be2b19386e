//! The master's gRPC services. Each is a thin adapter from protobuf to [`crate::state::Master`];
//! who may call what is decided once, in [`authorize`], from the peer's certificate.

pub mod events;
pub mod jobs;
pub mod keys;
pub mod mine;
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

/// Who is calling: the salt-api user the in-process netapi attached to the request, else the
/// client certificate's name. A request from the network cannot carry the former: extensions
/// are set in this process only.
pub fn caller<T>(req: &Request<T>) -> Result<crate::acl::Caller, Status> {
    if let Some(c) = req.extensions().get::<crate::acl::Caller>() {
        return Ok(c.clone());
    }
    client_name(req).map(crate::acl::Caller::Cert)
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
        ("saltq.v1.MinionService" | "saltq.v1.SyndicService", Peer::Minion { .. }) => Ok(()),
        ("saltq.v1.SyndicService", Peer::Client { name }) => {
            Err(Status::permission_denied(format!(
                "client certificate {name:?} cannot pose as a syndic: SyndicService needs a minion certificate"
            )))
        }
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
                let uri = req.uri().clone();
                let path = req.uri().path().to_owned();
                let fut = self.inner.call(req);
                Box::pin(async move {
                    use futures_util::FutureExt;
                    // A handler that panics (a bug) answers INTERNAL instead of leaving the
                    // stream without headers, which the client reads as a broken connection.
                    let mut resp = match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
                        Ok(resp) => resp?,
                        Err(panic) => return Ok(panicked(&path, panic.as_ref()).into_http()),
                    };
                    size_limit_is_resource_exhausted(&mut resp);
                    undecodable_is_invalid_argument(uri.path(), &mut resp);
                    Ok(resp)
                })
            }
            Err(status) => Box::pin(std::future::ready(Ok(status.into_http()))),
        }
    }
}

/// The status for a request whose handler panicked, logged with the panic's message.
fn panicked(path: &str, panic: &(dyn std::any::Any + Send)) -> Status {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    tracing::error!(path, "request handler panicked: {what}");
    Status::internal(format!(
        "the master failed on {path}: {what} (a bug: the master's log has the details)"
    ))
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

/// tonic answers a request that does not decode as its protobuf message with INTERNAL, as if
/// the master had failed; the caller sent it, so the answer is INVALID_ARGUMENT naming the
/// method and what is wrong (see [`undecodable_request`]).
fn undecodable_is_invalid_argument(path: &str, resp: &mut http::Response<Body>) {
    if resp.headers().get("grpc-status").is_none_or(|v| v != "13") {
        return;
    }
    let Some(status) = Status::from_header_map(resp.headers()) else {
        return;
    };
    let method = path.trim_start_matches('/');
    if let Some(message) = undecodable_request(method, status.message()) {
        let _ = Status::invalid_argument(message).add_header(resp.headers_mut());
    }
}

/// prost's nesting limit: a message inside this many others does not decode.
const PROST_RECURSION_LIMIT: usize = 100;

/// The message for a request to `method` that prost could not decode, from tonic's INTERNAL
/// `message`; `None` when that is not a decode error. prost names every field on the way down
/// (innermost first), a hundred of them for a value nested too deep: the first three from the
/// top and the depth are kept.
pub fn undecodable_request(method: &str, message: &str) -> Option<String> {
    let rest = message.strip_prefix("failed to decode Protobuf message: ")?;
    let ident = |x: &str| !x.is_empty() && x.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    // `Message.field`, the field as prost names it (`r#return` for the keyword): shown as in
    // the .proto file.
    let field = |s: &str| {
        let (m, f) = s.split_once('.')?;
        let f = f.strip_prefix("r#").unwrap_or(f);
        (ident(m) && ident(f)).then(|| format!("{m}.{f}"))
    };
    let mut path = Vec::new();
    let mut description = rest;
    while let Some((head, tail)) = description.split_once(": ") {
        let Some(f) = field(head) else { break };
        path.push(f);
        description = tail;
    }
    let mut out = format!("the request to {method} does not decode: {description}");
    if description == "recursion limit reached" {
        out.push_str(&format!(
            " (more than {PROST_RECURSION_LIMIT} nested messages)"
        ));
    }
    if !path.is_empty() {
        path.reverse();
        let shown: Vec<&str> = path.iter().take(3).map(String::as_str).collect();
        out.push_str(&format!(", at {}", shown.join(" > ")));
        if path.len() > shown.len() {
            out.push_str(&format!(" > … ({} fields deep)", path.len()));
        }
    }
    Some(out)
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

    #[test]
    fn undecodable_requests_name_the_method_and_the_problem() {
        let check = |message: &str, want: Option<&str>| {
            assert_eq!(
                undecodable_request("saltq.v1.JobService/Run", message).as_deref(),
                want,
                "{message}"
            );
        };
        check("job cache unavailable", None);
        check(
            "failed to decode Protobuf message: invalid wire type value: 7",
            Some(
                "the request to saltq.v1.JobService/Run does not decode: invalid wire type value: 7",
            ),
        );
        check(
            "failed to decode Protobuf message: PublishRequest.tgt: RunRequest.publish: invalid string value: data is not UTF-8 encoded",
            Some(
                "the request to saltq.v1.JobService/Run does not decode: invalid string value: data is not UTF-8 encoded, at RunRequest.publish > PublishRequest.tgt",
            ),
        );
        // A value nested too deep: prost names every level.
        let mut deep = String::from("failed to decode Protobuf message: ");
        for _ in 0..48 {
            deep.push_str("Value.kind: ListValue.values: ");
        }
        deep.push_str(
            "Value.kind: PublishRequest.arg: RunRequest.publish: recursion limit reached",
        );
        check(
            &deep,
            Some(
                "the request to saltq.v1.JobService/Run does not decode: recursion limit reached (more than 100 nested messages), at RunRequest.publish > PublishRequest.arg > Value.kind > … (99 fields deep)",
            ),
        );
    }

    #[test]
    fn an_undecodable_request_becomes_invalid_argument() {
        let mut resp = Status::internal(
            "failed to decode Protobuf message: ReturnRequest.r#return: recursion limit reached",
        )
        .into_http::<Body>();
        undecodable_is_invalid_argument("/saltq.v1.MinionService/Return", &mut resp);
        let s = Status::from_header_map(resp.headers()).unwrap();
        assert_eq!(s.code(), tonic::Code::InvalidArgument);
        assert_eq!(
            s.message(),
            "the request to saltq.v1.MinionService/Return does not decode: recursion limit reached (more than 100 nested messages), at ReturnRequest.return"
        );
        // Any other INTERNAL answer stays what it is.
        let mut resp = Status::internal("pillar for m1 failed to compile").into_http::<Body>();
        undecodable_is_invalid_argument("/saltq.v1.MinionService/GetPillar", &mut resp);
        let s = Status::from_header_map(resp.headers()).unwrap();
        assert_eq!(s.code(), tonic::Code::Internal);
        assert_eq!(s.message(), "pillar for m1 failed to compile");
    }

    /// A service that panics on every request, as a handler with a bug would.
    #[derive(Clone)]
    struct Panics;

    impl Service<http::Request<Body>> for Panics {
        type Response = http::Response<Body>;
        type Error = Infallible;
        type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _req: http::Request<Body>) -> Self::Future {
            Box::pin(async { panic!("cannot convert float seconds to Duration") })
        }
    }

    /// Found by tests/tests/e2e/fuzz_grpc.rs: a panicking handler left its stream without
    /// headers, which a client over HTTP/3 reads as a broken connection. It answers INTERNAL.
    #[tokio::test]
    async fn a_panicking_handler_answers_internal() {
        let mut svc = Authorize::new(Panics);
        let mut req = http::Request::new(Body::empty());
        *req.uri_mut() = "/saltq.v1.JobService/Run".parse().unwrap();
        req.extensions_mut().insert(PeerInfo {
            peer: Peer::Client {
                name: "admin".into(),
            },
            remote_addr: ([127, 0, 0, 1], 1).into(),
            transport: saltq_transport::Transport::Quic,
        });
        let resp = svc.call(req).await.unwrap();
        let status = Status::from_header_map(resp.headers()).expect("a grpc status");
        assert_eq!(status.code(), tonic::Code::Internal);
        assert!(
            status.message().contains("/saltq.v1.JobService/Run")
                && status.message().contains("cannot convert float seconds"),
            "{status:?}"
        );
    }
}
