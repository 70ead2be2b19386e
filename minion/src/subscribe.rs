//! The subscription request, with the grains encoded once.
//!
//! A minion sends its grains with every subscription, so each reconnect (a master restart, a
//! failover) would clone the grains and convert them to a protobuf `Struct`: for a fleet
//! reconnecting at once that was a fifth of a swarm's CPU. The grains change rarely (a refresh,
//! `grains.setval`), so the encoded bytes are kept and rebuilt only when the grains differ from
//! the ones they were built from.
//!
//! On the wire the request is `saltq.v1.SubscribeRequest`: an embedded message and a `bytes`
//! field with the same number are encoded alike (tag, length, contents), so [`Wire`] carries the
//! already encoded `Struct` where the generated type would carry the `Struct` itself.

use std::sync::{PoisonError, RwLock};

use bytes::Bytes;
use prost::Message;
use saltq_proto::v1 as pb;
use saltq_transport::{Channel, value};
use serde_json::Value;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::{Status, Streaming};

/// `saltq.v1.SubscribeRequest` with its grains already encoded.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct Wire {
    /// `SubscribeRequest.grains`: an encoded `google.protobuf.Struct`.
    #[prost(bytes = "bytes", tag = "1")]
    pub grains: Bytes,
    /// `SubscribeRequest.version`.
    #[prost(string, tag = "2")]
    pub version: String,
    /// `SubscribeRequest.ordered_pillar`: this minion reads `Welcome.pillar_json`.
    #[prost(bool, tag = "3")]
    pub ordered_pillar: bool,
}

/// Builds subscription requests, re-encoding the grains only when they changed.
#[derive(Default)]
pub(crate) struct Requests {
    /// The grains the bytes were built from, and the bytes.
    built: Option<(Value, Bytes)>,
}

impl Requests {
    /// The request for the grains as they are now.
    pub(crate) fn request(&mut self, grains: &RwLock<Value>) -> Wire {
        let now = grains.read().unwrap_or_else(PoisonError::into_inner);
        let fresh = matches!(&self.built, Some((seen, _)) if *seen == *now);
        if !fresh {
            let bytes = Bytes::from(value::json_to_struct(&now).encode_to_vec());
            self.built = Some((now.clone(), bytes));
        }
        let grains = self
            .built
            .as_ref()
            .map(|(_, b)| b.clone())
            .unwrap_or_default();
        Wire {
            grains,
            version: env!("CARGO_PKG_VERSION").into(),
            ordered_pillar: true,
        }
    }
}

/// `MinionService.Subscribe` with a [`Wire`] request.
pub(crate) async fn subscribe(
    ch: Channel,
    max_message_size: usize,
    request: Wire,
) -> Result<tonic::Response<Streaming<pb::SubscribeResponse>>, Status> {
    let mut grpc = tonic::client::Grpc::new(ch)
        .max_decoding_message_size(max_message_size)
        .max_encoding_message_size(max_message_size);
    grpc.ready()
        .await
        .map_err(|e| Status::unknown(format!("Service was not ready: {e}")))?;
    let codec = tonic_prost::ProstCodec::<Wire, pb::SubscribeResponse>::default();
    let path = PathAndQuery::from_static("/saltq.v1.MinionService/Subscribe");
    let mut req = tonic::Request::new(request);
    req.extensions_mut().insert(tonic::GrpcMethod::new(
        "saltq.v1.MinionService",
        "Subscribe",
    ));
    grpc.server_streaming(req, path, codec).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decoded(w: &Wire) -> pb::SubscribeRequest {
        pb::SubscribeRequest::decode(w.encode_to_vec().as_slice()).expect("a SubscribeRequest")
    }

    #[test]
    fn the_wire_request_is_a_subscribe_request_with_the_grains() {
        let grains = json!({"id": "m1", "os": "Debian", "num_cpus": 2, "ipv4": ["127.0.0.1"],
                            "nested": {"a": [true, null, 1.5]}});
        let w = Requests::default().request(&RwLock::new(grains.clone()));
        let req = decoded(&w);
        assert_eq!(req.version, env!("CARGO_PKG_VERSION"));
        assert_eq!(
            Value::Object(value::opt_struct(req.grains.as_ref())),
            grains
        );
        // Byte for byte what the generated type encodes.
        let generated = pb::SubscribeRequest {
            grains: Some(value::json_to_struct(&grains)),
            version: env!("CARGO_PKG_VERSION").into(),
            ordered_pillar: true,
        };
        assert!(req.ordered_pillar);
        assert_eq!(w.encode_to_vec(), generated.encode_to_vec());
    }

    #[test]
    fn the_grains_are_encoded_again_only_when_they_changed() {
        let grains = RwLock::new(json!({"id": "m1", "os": "Debian"}));
        let mut requests = Requests::default();
        let first = requests.request(&grains);
        let again = requests.request(&grains);
        assert_eq!(
            first.grains.as_ptr(),
            again.grains.as_ptr(),
            "the same bytes, not a new encoding"
        );
        grains.write().unwrap()["os"] = json!("Ubuntu");
        let changed = requests.request(&grains);
        assert_eq!(
            Value::Object(value::opt_struct(decoded(&changed).grains.as_ref())),
            json!({"id": "m1", "os": "Ubuntu"})
        );
    }

    #[test]
    fn empty_grains_encode_as_an_empty_struct() {
        let w = Requests::default().request(&RwLock::new(json!({})));
        assert_eq!(
            Value::Object(value::opt_struct(decoded(&w).grains.as_ref())),
            json!({})
        );
    }
}
