//! Connections as a bounded resource: how many one listener holds at once, in total and per
//! source address, and the accept loop every TCP listener shares (a backoff on accept errors).
//!
//! Each connection costs the master a file descriptor and some memory from the moment it is
//! accepted, before anyone knows who is on the other end. Without a bound, a thousand idle
//! unauthenticated connections to salt-api used up the descriptors and the HTTP/2 port stopped
//! answering too (issue #31). So every listener has its own [`Gate`]: a connection is admitted
//! only while the listener holds fewer than [`Caps::total`] and its source address fewer than
//! [`Caps::per_source`]; the [`Slot`] it gets is given back when the connection ends (dropped),
//! also while it waits for a handshake turn. One listener under attack fills only its own gate.
//!
//! The decision is [`Tally::admit`], pure: a map of counts, no socket and no clock.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};

/// How many connections one listener may hold at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Connections open at once on the listener, from everyone.
    pub total: usize,
    /// Connections open at once from one source address; `None`: no cap per source (the QUIC
    /// listener: minions behind NAT share an address, and the benchmark swarm connects 10,000
    /// minions from 127.0.0.1).
    pub per_source: Option<usize>,
}

impl Caps {
    /// The QUIC listener's default: a global cap only, large (a QUIC connection costs no
    /// descriptor, and a fleet may connect from one NAT address).
    pub const QUIC: Caps = Caps {
        total: 100_000,
        per_source: None,
    };
    /// The HTTP/2 gRPC listener's default: minions and CLIs behind one NAT address still fit.
    pub const H2: Caps = Caps {
        total: 4096,
        per_source: Some(512),
    };
    /// salt-api's default: a client needs a few connections (cheroot serves 100 threads).
    pub const SALT_API: Caps = Caps {
        total: 1024,
        per_source: Some(128),
    };
    /// The health and metrics listener's default: probes and a scraper.
    pub const HEALTH: Caps = Caps {
        total: 64,
        per_source: Some(16),
    };

    /// These caps within a process allowed `nofile` descriptors: a TCP listener's total is at
    /// most a quarter of them (three TCP listeners then leave a quarter for the job cache,
    /// files and the rest), at least 16. A refused connection is closed at once; an admitted
    /// one past the descriptors would instead make `accept` fail for everyone.
    pub fn within_fds(self, nofile: u64) -> Caps {
        let quarter = usize::try_from(nofile / 4).unwrap_or(usize::MAX).max(16);
        Caps {
            total: self.total.min(quarter),
            per_source: self.per_source.map(|p| p.min(quarter)),
        }
    }

    /// Checks caps read from a config: both at least 1. `key` names the setting.
    pub fn validate(self, key: &str) -> Result<Caps, String> {
        if self.total == 0 {
            return Err(format!("{key}: the total must be at least 1"));
        }
        if self.per_source == Some(0) {
            return Err(format!("{key}: the cap per source must be at least 1"));
        }
        Ok(self)
    }
}

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The listener holds its total already.
    #[error("too many connections to this listener (at most {limit})")]
    ListenerFull {
        /// The listener's total.
        limit: usize,
    },
    /// The source address holds its share already.
    #[error("too many connections from {ip} (at most {limit})")]
    SourceFull {
        /// The source address.
        ip: IpAddr,
        /// The cap per source.
        limit: usize,
    },
}

impl Refusal {
    /// The reason as a metrics label.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::ListenerFull { .. } => "listener_full",
            Refusal::SourceFull { .. } => "source_full",
        }
    }
}

/// The connections one listener holds, by source: the pure core of admission.
#[derive(Debug, Default)]
pub struct Tally {
    total: usize,
    by_source: HashMap<IpAddr, usize>,
}

impl Tally {
    /// Admits one more connection from `ip` under `caps`, or says why not (and counts nothing).
    pub fn admit(&mut self, caps: &Caps, ip: IpAddr) -> Result<(), Refusal> {
        let ip = canonical(ip);
        if self.total >= caps.total {
            return Err(Refusal::ListenerFull { limit: caps.total });
        }
        let from = self.by_source.get(&ip).copied().unwrap_or(0);
        if let Some(limit) = caps.per_source
            && from >= limit
        {
            return Err(Refusal::SourceFull { ip, limit });
        }
        self.total += 1;
        *self.by_source.entry(ip).or_insert(0) += 1;
        Ok(())
    }

    /// One connection from `ip` ended.
    pub fn release(&mut self, ip: IpAddr) {
        let ip = canonical(ip);
        if let Some(n) = self.by_source.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                self.by_source.remove(&ip);
            }
            self.total -= 1;
        }
    }

    /// Connections held now.
    pub fn open(&self) -> usize {
        self.total
    }

    /// Source addresses holding connections now.
    pub fn sources(&self) -> usize {
        self.by_source.len()
    }
}

/// An IPv4 peer on a dual-stack socket arrives as `::ffff:a.b.c.d`; it is the same source.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// What a listener's gate did since it was made, for `/metrics`.
#[derive(Debug, Default)]
pub struct GateStats {
    /// Connections refused because the listener was full.
    pub refused_listener_full: AtomicU64,
    /// Connections refused because their source address had its share.
    pub refused_source_full: AtomicU64,
    /// `accept` calls that failed (out of descriptors, buffers, a connection reset before it
    /// was accepted...).
    pub accept_errors: AtomicU64,
    /// HTTP connections closed for sending no request (or its headers, or its body) in time.
    pub timeouts: AtomicU64,
}

/// One listener's gate: its caps, the connections it holds, and its counters. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Gate(Arc<GateInner>);

#[derive(Debug)]
struct GateInner {
    listener: &'static str,
    caps: Caps,
    tally: Mutex<Tally>,
    stats: GateStats,
}

impl Gate {
    /// A gate for the listener named `listener` (a metrics label: `quic`, `h2`, `salt_api`,
    /// `health`), listed by [`snapshots`] while it lives.
    pub fn new(listener: &'static str, caps: Caps) -> Gate {
        let gate = Gate(Arc::new(GateInner {
            listener,
            caps,
            tally: Mutex::new(Tally::default()),
            stats: GateStats::default(),
        }));
        let mut all = GATES.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|g| g.strong_count() > 0);
        all.push(Arc::downgrade(&gate.0));
        gate
    }

    /// The listener's name.
    pub fn listener(&self) -> &'static str {
        self.0.listener
    }

    /// The gate's caps.
    pub fn caps(&self) -> Caps {
        self.0.caps
    }

    /// The counters.
    pub fn stats(&self) -> &GateStats {
        &self.0.stats
    }

    /// Admits a connection from `ip` (its slot is held until dropped), or counts the refusal
    /// and says why.
    pub fn admit(&self, ip: IpAddr) -> Result<Slot, Refusal> {
        let verdict = self.tally().admit(&self.0.caps, ip);
        match verdict {
            Ok(()) => Ok(Slot {
                gate: self.clone(),
                ip,
            }),
            Err(r) => {
                let c = match r {
                    Refusal::ListenerFull { .. } => &self.0.stats.refused_listener_full,
                    Refusal::SourceFull { .. } => &self.0.stats.refused_source_full,
                };
                c.fetch_add(1, Ordering::Relaxed);
                Err(r)
            }
        }
    }

    /// Connections held now.
    pub fn open(&self) -> usize {
        self.tally().open()
    }

    /// The counters and the connections held, read now.
    pub fn snapshot(&self) -> GateSnapshot {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let s = &self.0.stats;
        GateSnapshot {
            listener: self.0.listener,
            open: self.open() as u64,
            refused_listener_full: n(&s.refused_listener_full),
            refused_source_full: n(&s.refused_source_full),
            accept_errors: n(&s.accept_errors),
            timeouts: n(&s.timeouts),
        }
    }

    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        // Nothing panics while holding the lock; a poisoned count is still the best we have.
        self.0.tally.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Every gate of the process, as the metrics scrape finds them: each listener makes its own
/// where it is served, and the scrape need not be handed each one.
static GATES: Mutex<Vec<std::sync::Weak<GateInner>>> = Mutex::new(Vec::new());

/// The figures of every live gate of this process, in the order they were made.
pub fn snapshots() -> Vec<GateSnapshot> {
    let all = GATES.lock().unwrap_or_else(|e| e.into_inner());
    all.iter()
        .filter_map(|g| g.upgrade())
        .map(|g| Gate(g).snapshot())
        .collect()
}

/// A gate's figures at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateSnapshot {
    /// The listener's name.
    pub listener: &'static str,
    /// Connections held.
    pub open: u64,
    /// Refused: the listener was full.
    pub refused_listener_full: u64,
    /// Refused: the source had its share.
    pub refused_source_full: u64,
    /// Failed `accept` calls.
    pub accept_errors: u64,
    /// HTTP connections closed for slowness (a 408).
    pub timeouts: u64,
}

/// An admitted connection's place in its listener; given back on drop.
#[derive(Debug)]
pub struct Slot {
    gate: Gate,
    ip: IpAddr,
}

impl Slot {
    /// The listener's gate.
    pub fn gate(&self) -> &Gate {
        &self.gate
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.gate.tally().release(self.ip);
    }
}

/// The pause after a failed `accept`, as tokio's mini-redis does: 10 ms, doubling up to 1 s,
/// back to 10 ms after a success. Out of descriptors, `accept` fails at once and the
/// listening socket stays readable: without a pause the loop spins and logs without end.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Backoff {
    /// The first pause.
    pub const FIRST: Duration = Duration::from_millis(10);
    /// The longest pause.
    pub const MAX: Duration = Duration::from_secs(1);

    /// The pause to take after a failure (and the next one doubles).
    pub fn failed(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        d
    }

    /// An accept succeeded: the next failure starts over.
    pub fn succeeded(&mut self) {
        self.next = Self::FIRST;
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { next: Self::FIRST }
    }
}

/// Accepts the next connection on `listener`, pausing after each failure by `backoff` and
/// counting it on `gate`; logs a failure at most once per pause (each is followed by one).
/// Cancel-safe: a pause interrupted by `select!` is simply not finished.
pub async fn accept(
    listener: &TcpListener,
    gate: &Gate,
    backoff: &mut Backoff,
) -> (TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(v) => {
                backoff.succeeded();
                return v;
            }
            Err(e) => {
                gate.stats().accept_errors.fetch_add(1, Ordering::Relaxed);
                let pause = backoff.failed();
                tracing::warn!(
                    listener = gate.listener(),
                    "accept failed: {e}; pausing {} ms",
                    pause.as_millis()
                );
                tokio::time::sleep(pause).await;
            }
        }
    }
}

/// The open-file soft limit of this process (`RLIMIT_NOFILE`, read from `/proc/self/limits`);
/// `None` when unknown or unlimited.
pub fn nofile_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    soft_nofile(&text)
}

/// The soft "Max open files" of a `/proc/<pid>/limits` text.
fn soft_nofile(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_source_past_its_share_is_refused_and_others_still_come_in() {
        let caps = Caps {
            total: 10,
            per_source: Some(2),
        };
        let mut t = Tally::default();
        assert_eq!(t.admit(&caps, ip("127.0.0.2")), Ok(()));
        assert_eq!(t.admit(&caps, ip("127.0.0.2")), Ok(()));
        assert_eq!(
            t.admit(&caps, ip("127.0.0.2")),
            Err(Refusal::SourceFull {
                ip: ip("127.0.0.2"),
                limit: 2
            })
        );
        assert_eq!(t.admit(&caps, ip("127.0.0.3")), Ok(()));
        assert_eq!(t.open(), 3);
        t.release(ip("127.0.0.2"));
        assert_eq!(t.admit(&caps, ip("127.0.0.2")), Ok(()));
    }

    #[test]
    fn the_listener_total_holds_whatever_the_sources() {
        let caps = Caps {
            total: 3,
            per_source: Some(2),
        };
        let mut t = Tally::default();
        for a in ["10.0.0.1", "10.0.0.2", "10.0.0.3"] {
            assert_eq!(t.admit(&caps, ip(a)), Ok(()));
        }
        assert_eq!(
            t.admit(&caps, ip("10.0.0.4")),
            Err(Refusal::ListenerFull { limit: 3 })
        );
        t.release(ip("10.0.0.1"));
        assert_eq!(t.admit(&caps, ip("10.0.0.4")), Ok(()));
        assert_eq!(t.sources(), 3);
    }

    #[test]
    fn without_a_cap_per_source_one_address_may_take_the_whole_listener() {
        let caps = Caps {
            total: 10_000,
            per_source: None,
        };
        let mut t = Tally::default();
        for _ in 0..10_000 {
            t.admit(&caps, ip("127.0.0.1")).unwrap();
        }
        assert!(matches!(
            t.admit(&caps, ip("127.0.0.1")),
            Err(Refusal::ListenerFull { .. })
        ));
        assert!(Caps::QUIC.per_source.is_none());
        const { assert!(Caps::QUIC.total >= 10_000) };
    }

    #[test]
    fn an_ipv4_peer_on_a_dual_stack_socket_is_one_source() {
        let caps = Caps {
            total: 10,
            per_source: Some(1),
        };
        let mut t = Tally::default();
        t.admit(&caps, ip("127.0.0.5")).unwrap();
        assert_eq!(
            t.admit(&caps, ip("::ffff:127.0.0.5")),
            Err(Refusal::SourceFull {
                ip: ip("127.0.0.5"),
                limit: 1
            })
        );
        t.release(ip("::ffff:127.0.0.5"));
        assert_eq!(t.open(), 0);
        assert_eq!(t.sources(), 0);
    }

    #[test]
    fn releasing_an_unknown_source_changes_nothing() {
        let mut t = Tally::default();
        t.release(ip("::1"));
        assert_eq!(t.open(), 0);
    }

    #[test]
    fn slots_give_their_place_back_when_dropped_and_refusals_are_counted() {
        let g = Gate::new(
            "salt_api",
            Caps {
                total: 2,
                per_source: Some(1),
            },
        );
        let a = g.admit(ip("127.0.0.2")).unwrap();
        let err = g.admit(ip("127.0.0.2")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "too many connections from 127.0.0.2 (at most 1)"
        );
        assert_eq!(err.reason(), "source_full");
        let _b = g.admit(ip("127.0.0.3")).unwrap();
        let full = g.admit(ip("127.0.0.4")).unwrap_err();
        assert_eq!(full.reason(), "listener_full");
        drop(a);
        let _c = g.admit(ip("127.0.0.2")).unwrap();
        assert!(snapshots().contains(&g.snapshot()));
        let s = g.snapshot();
        assert_eq!(
            (s.open, s.refused_source_full, s.refused_listener_full),
            (2, 1, 1)
        );
    }

    #[test]
    fn caps_fit_within_the_descriptors() {
        assert_eq!(
            Caps::SALT_API.within_fds(256),
            Caps {
                total: 64,
                per_source: Some(64)
            }
        );
        assert_eq!(Caps::SALT_API.within_fds(1 << 20), Caps::SALT_API);
        assert_eq!(Caps::HEALTH.within_fds(8).total, 16);
        assert!(
            Caps {
                total: 0,
                per_source: None
            }
            .validate("k")
            .is_err()
        );
        assert!(
            Caps {
                total: 1,
                per_source: Some(0)
            }
            .validate("k")
            .unwrap_err()
            .contains("k: the cap per source")
        );
    }

    #[test]
    fn the_soft_descriptor_limit_is_read_from_proc() {
        let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                    Max open files            1024                 524288               files     \n";
        assert_eq!(soft_nofile(text), Some(1024));
        assert_eq!(
            soft_nofile("Max open files unlimited unlimited files"),
            None
        );
        assert!(nofile_limit().is_some());
    }

    #[test]
    fn the_accept_backoff_doubles_to_a_second_and_starts_over_after_a_success() {
        let mut b = Backoff::default();
        let pauses: Vec<u128> = (0..9).map(|_| b.failed().as_millis()).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        b.succeeded();
        assert_eq!(b.failed(), Duration::from_millis(10));
    }
}
