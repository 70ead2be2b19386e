//! UDP sockets for QUIC endpoints, with kernel buffers sized for many peers.
//!
//! One UDP socket carries every QUIC connection of an endpoint. With thousands of minions
//! answering a job at once, the kernel's default receive buffer (208 KiB on Linux) overflows
//! and the datagrams dropped there come back only after a loss-detection timeout: measured with
//! 1,000 virtual minions, publish-to-all-returned took 1.05 s with the default buffer and
//! 0.16 s with a large one (BENCHMARKS.md). So the sockets ask for [`SOCKET_BUFFER`] bytes each
//! way, past `net.core.rmem_max` when the process may (CAP_NET_ADMIN), and say once when the
//! kernel gave less.

use std::net::SocketAddr;

use socket2::{Domain, Protocol, Socket, Type};
use tracing::warn;

/// Receive and send buffer requested for a QUIC socket, in bytes. The kernel charges only
/// what is queued, so an idle endpoint does not hold this memory.
/// 64 MiB: with 32 MiB, a swarm of 10,000 (one socket) dropped 19,000–21,000 datagrams in
/// the first job after its master restarted, and none with more (BENCHMARKS.md).
pub const SOCKET_BUFFER: usize = 64 * 1024 * 1024;

/// Binds a UDP socket on `addr` with buffers of [`SOCKET_BUFFER`] bytes where the kernel allows.
pub fn bind(addr: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        // Like quinn's own Endpoint::server: [::] also accepts IPv4 where the system allows.
        let _ = socket.set_only_v6(false);
    }
    size_buffers(&socket, SOCKET_BUFFER);
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

/// A quinn endpoint on `socket`: a server when `server` is given, else a client only.
/// `reset_key` is the secret behind QUIC stateless resets; given the same one after a restart,
/// the endpoint resets the connections its previous process held at their next packet, so
/// peers reconnect at once instead of waiting out their idle timeout. Without it, a random one.
pub fn endpoint(
    socket: std::net::UdpSocket,
    server: Option<quinn::ServerConfig>,
    reset_key: Option<&[u8]>,
) -> std::io::Result<quinn::Endpoint> {
    let runtime = quinn::default_runtime()
        .ok_or_else(|| std::io::Error::other("no async runtime found for the QUIC endpoint"))?;
    let config = match reset_key {
        Some(key) => {
            let mut config = quinn::EndpointConfig::new(std::sync::Arc::new(ring::hmac::Key::new(
                ring::hmac::HMAC_SHA256,
                key,
            )));
            // Connection ids carry a check made with a key of their own; a restarted endpoint
            // must accept its predecessor's ids as its own, or it drops their packets unanswered
            // instead of resetting them. The key is derived from the same secret.
            let digest = ring::digest::digest(&ring::digest::SHA256, key);
            let mut cid_key = [0u8; 8];
            cid_key.copy_from_slice(&digest.as_ref()[..8]);
            let cid_key = u64::from_le_bytes(cid_key);
            config.cid_generator(move || {
                Box::new(quinn_proto::HashedConnectionIdGenerator::from_key(cid_key))
            });
            // quinn answers at most one unknown packet per 20 ms with a reset by default: after a
            // restart, 10,000 minions' keep-alives arrive within a second and all but ~50 of
            // them would wait out their idle timeout instead. Every reset is smaller than the
            // packet that caused it (quinn pads it to one byte less), so answering each one
            // reflects less than it receives and amplifies nothing.
            config.min_reset_interval(std::time::Duration::ZERO);
            config
        }
        None => quinn::EndpointConfig::default(),
    };
    quinn::Endpoint::new(config, server, socket, runtime)
}

fn size_buffers(socket: &Socket, want: usize) {
    let recv = grow(
        want,
        |n| socket.set_recv_buffer_size(n),
        || socket.recv_buffer_size(),
        |n| force_recv(socket, n),
    );
    let send = grow(
        want,
        |n| socket.set_send_buffer_size(n),
        || socket.send_buffer_size(),
        |n| force_send(socket, n),
    );
    if let Some(got) = recv {
        warn_once("receive", got, want, "net.core.rmem_max", &RECV_WARNED);
    }
    if let Some(got) = send {
        warn_once("send", got, want, "net.core.wmem_max", &SEND_WARNED);
    }
}

/// Sets the buffer, falling back to the privileged option when the kernel capped it. Returns
/// the size obtained when it is still short of `want`.
fn grow(
    want: usize,
    set: impl Fn(usize) -> std::io::Result<()>,
    get: impl Fn() -> std::io::Result<usize>,
    set_forced: impl Fn(usize) -> std::io::Result<()>,
) -> Option<usize> {
    // Linux reports twice the size granted (the doubling covers its bookkeeping).
    let granted = || {
        let got = get().unwrap_or(0);
        if cfg!(target_os = "linux") {
            got / 2
        } else {
            got
        }
    };
    let _ = set(want);
    if granted() >= want {
        return None;
    }
    let _ = set_forced(want);
    let got = granted();
    (got < want).then_some(got)
}

#[cfg(target_os = "linux")]
fn force_recv(socket: &Socket, n: usize) -> std::io::Result<()> {
    use nix::sys::socket::{setsockopt, sockopt::RcvBufForce};
    setsockopt(socket, RcvBufForce, &n).map_err(std::io::Error::from)
}

#[cfg(target_os = "linux")]
fn force_send(socket: &Socket, n: usize) -> std::io::Result<()> {
    use nix::sys::socket::{setsockopt, sockopt::SndBufForce};
    setsockopt(socket, SndBufForce, &n).map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn force_recv(_: &Socket, _: usize) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

#[cfg(not(target_os = "linux"))]
fn force_send(_: &Socket, _: usize) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

static RECV_WARNED: std::sync::Once = std::sync::Once::new();
static SEND_WARNED: std::sync::Once = std::sync::Once::new();

fn warn_once(which: &str, got: usize, want: usize, sysctl: &str, once: &std::sync::Once) {
    once.call_once(|| {
        warn!(
            "the kernel gave the QUIC socket a {which} buffer of {} KiB instead of {} KiB; \
             under load from many minions datagrams will be dropped and retransmitted. \
             Raise it with `sysctl -w {sysctl}={want}` or give the process CAP_NET_ADMIN",
            got / 1024,
            want / 1024,
        )
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sysctl(name: &str) -> usize {
        std::fs::read_to_string(format!("/proc/sys/net/core/{name}"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn sockets_get_the_large_buffers_or_the_most_the_kernel_allows() {
        let socket = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let s = socket2::SockRef::from(&socket);
        let (recv, send) = (s.recv_buffer_size().unwrap(), s.send_buffer_size().unwrap());
        // Linux reports twice what was set; unprivileged, the request is capped at the sysctl.
        let enough = |got: usize, max: usize| got >= SOCKET_BUFFER || got >= 2 * max;
        assert!(enough(recv, sysctl("rmem_max")), "receive buffer {recv}");
        assert!(enough(send, sysctl("wmem_max")), "send buffer {send}");
        let default = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let plain = socket2::SockRef::from(&default).recv_buffer_size().unwrap();
        assert!(recv > plain, "{recv} is no larger than the default {plain}");
    }
}
