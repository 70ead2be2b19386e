//! End-to-end tests: real `saltq-master`, `saltq-minion` and `saltq` processes on 127.0.0.1,
//! over real QUIC and TLS/TCP sockets with mutual TLS.

mod alcali;
mod beacons;
mod certs;
mod chaos;
mod cli;
mod cluster;
mod event_acl;
mod failover;
mod fileserver;
mod flood;
mod foundation;
mod fuzz_grpc;
mod fuzz_saltapi;
mod handshake;
mod interop;
mod jobs;
mod mine;
mod minion_link;
mod multimaster;
mod ops;
mod ops_hardening;
mod orchestrate;
mod pillar_ext;
mod protocol;
mod runners;
mod saltapi;
mod saltapi_eauth;
mod saltapi_hardening;
mod security;
mod startup_states;
mod states;
mod system_states_host;
mod system_states_mount;
mod system_states_pkg;
mod system_states_users;
