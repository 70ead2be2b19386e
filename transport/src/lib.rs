//! saltq's transport, shared by the master, the minion and the CLI: the PKI, mutual TLS,
//! gRPC over HTTP/3 on QUIC and over HTTP/2 on TCP, and the peer identity every request carries.

mod admission;
pub mod client;
pub mod config;
pub mod guard;
mod h3;
pub mod http;
pub mod http1;
pub mod identity;
pub mod lograte;
pub mod pki;
pub mod reload;
pub mod rlimit;
pub mod salt_log;
pub mod server;
pub mod tickets;
pub mod tls;
pub mod udp;
pub mod value;

pub use client::{
    Channel, ConnectError, ConnectOptions, TransportKind, connect, connect_via, shared_endpoint,
};
pub use identity::{Issuer, Peer, PeerInfo, Transport};
pub use quinn::Endpoint as QuicEndpoint;
pub use server::{Limits, ListenConfig, Listeners};

/// The metadata key on a refused subscription that carries the minion's key state (`pending`,
/// `rejected`, `denied`), so the minion waits `acceptance_wait_time` and asks again. Set by the
/// master, read by the minion: one name for both ends.
pub const KEY_STATE_HEADER: &str = "saltq-key-state";

/// The metadata key on an UNAVAILABLE status that the master itself answered (a part of it, such
/// as the job cache, cannot do its work), so a client tells "the master refused" from "the
/// master cannot be reached"; the value names the part. Set by the master, read by the CLI.
pub const UNAVAILABLE_PART_HEADER: &str = "saltq-unavailable-part";

/// The master's own UNAVAILABLE answer: `part` (e.g. `job-cache`) cannot do its work.
pub fn part_unavailable(part: &'static str, message: impl Into<String>) -> tonic::Status {
    let mut status = tonic::Status::unavailable(message);
    status.metadata_mut().insert(
        UNAVAILABLE_PART_HEADER,
        tonic::metadata::MetadataValue::from_static(part),
    );
    status
}
