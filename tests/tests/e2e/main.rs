//! End-to-end tests: real `saltq-master`, `saltq-minion` and `saltq` processes on 127.0.0.1,
//! over real QUIC and TLS/TCP sockets with mutual TLS.

mod cli;
mod cluster;
mod failover;
mod foundation;
mod handshake;
mod interop;
mod jobs;
mod minion_link;
mod ops;
mod protocol;
mod revocation;
mod runners;
