//! saltq's transport, shared by the master, the minion and the CLI: the PKI, mutual TLS,
//! gRPC over HTTP/3 on QUIC and over HTTP/2 on TCP, and the peer identity every request carries.

pub mod client;
pub mod config;
mod h3;
pub mod http;
pub mod identity;
pub mod pki;
pub mod server;
pub mod tls;
pub mod udp;
pub mod value;

pub use client::{
    Channel, ConnectError, ConnectOptions, TransportKind, connect, connect_via, shared_endpoint,
};
pub use identity::{Issuer, Peer, PeerInfo, Transport};
pub use quinn::Endpoint as QuicEndpoint;
pub use server::{Limits, ListenConfig, Listeners};
