//! Counters and histograms the master exposes as Prometheus text on its HTTP port.
//! Plain atomics: recording never locks or allocates on the job path.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A histogram with fixed bucket bounds, in seconds.
pub struct Histogram {
    bounds: &'static [f64],
    counts: Vec<AtomicU64>,
    sum_micros: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    /// Records one observation.
    pub fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        for (b, c) in self.bounds.iter().zip(&self.counts) {
            if s <= *b {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.sum_micros
            .fetch_add(d.as_micros() as u64, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (b, c) in self.bounds.iter().zip(&self.counts) {
            let _ = writeln!(
                out,
                "{name}_bucket{{le=\"{b}\"}} {}",
                c.load(Ordering::Relaxed)
            );
        }
        let count = self.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {count}");
    }
}

const LATENCY: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The master's metrics.
pub struct Metrics {
    /// Jobs published.
    pub jobs_published: AtomicU64,
    /// Returns stored (duplicates not counted).
    pub returns_stored: AtomicU64,
    /// Duplicate returns dropped.
    pub returns_duplicate: AtomicU64,
    /// Events fired.
    pub events_fired: AtomicU64,
    /// Events that slow subscribers missed.
    pub events_missed: AtomicU64,
    /// Slow-subscriber incidents (a subscriber fell behind).
    pub slow_subscribers: AtomicU64,
    /// From publish to a return stored.
    pub return_latency: Histogram,
    /// Job cache write of one return (includes batching).
    pub cache_write_latency: Histogram,
    /// Jobs published anywhere in the cluster (counted from the cluster-wide bus).
    pub cluster_jobs: AtomicU64,
    /// Returns stored anywhere in the cluster (counted from the cluster-wide bus).
    pub cluster_returns: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            jobs_published: AtomicU64::new(0),
            returns_stored: AtomicU64::new(0),
            returns_duplicate: AtomicU64::new(0),
            events_fired: AtomicU64::new(0),
            events_missed: AtomicU64::new(0),
            slow_subscribers: AtomicU64::new(0),
            return_latency: Histogram::new(LATENCY),
            cache_write_latency: Histogram::new(LATENCY),
            cluster_jobs: AtomicU64::new(0),
            cluster_returns: AtomicU64::new(0),
        }
    }
}

/// Gauges read at scrape time.
pub struct Gauges {
    /// Minions with a live subscription.
    pub connected: usize,
    /// Keys per state name.
    pub keys: Vec<(&'static str, usize)>,
    /// In a cluster: this replica's name, the subscriptions it holds, and the live replicas.
    pub cluster: Option<ClusterGauges>,
    /// Write transactions the job cache committed.
    pub cache_transactions: u64,
    /// What the handshake admission did.
    pub handshakes: Handshakes,
}

/// The handshake admission's counters, read at scrape time.
#[derive(Debug, Default, Clone, Copy)]
pub struct Handshakes {
    /// Handshakes completed with an identified peer.
    pub completed: u64,
    /// Handshakes that got a turn and failed.
    pub failed: u64,
    /// Connections turned away as busy.
    pub refused_busy: u64,
    /// Handshakes that outlasted their turn and went on without one.
    pub outlasted: u64,
    /// Seconds admitted connections waited for their turn, summed.
    pub wait_seconds: f64,
    /// Seconds from a turn to the handshake's end, summed.
    pub handshake_seconds: f64,
    /// Handshakes that resumed a TLS session.
    pub resumed: u64,
}

impl Handshakes {
    /// Reads the transport's counters.
    pub fn read(s: &saltq_transport::server::HandshakeStats) -> Handshakes {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Handshakes {
            completed: n(&s.completed),
            failed: n(&s.failed),
            refused_busy: n(&s.refused_busy),
            outlasted: n(&s.outlasted),
            wait_seconds: n(&s.wait_micros) as f64 / 1e6,
            handshake_seconds: n(&s.handshake_micros) as f64 / 1e6,
            resumed: n(&s.resumed),
        }
    }
}

/// A replica's share of the cluster, read at scrape time.
pub struct ClusterGauges {
    /// This replica's name.
    pub replica: String,
    /// Subscriptions held by this replica.
    pub here: usize,
    /// Replicas heard from recently, this one included.
    pub replicas: usize,
    /// NATS messages this replica published.
    pub nats_sent: u64,
    /// The same, by kind (subject).
    pub nats_published: Vec<(&'static str, u64)>,
    /// PostgreSQL statements this replica sent for the cluster's tables, by kind.
    pub pg_statements: Vec<(&'static str, u64)>,
    /// Messages dropped from the replica's full queues, by queue.
    pub dropped: Vec<(&'static str, u64)>,
}

impl Metrics {
    /// Prometheus text exposition.
    pub fn render(&self, g: &Gauges) -> String {
        let mut out = String::new();
        let counter = |out: &mut String, name: &str, help: &str, v: &AtomicU64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                v.load(Ordering::Relaxed)
            );
        };
        let _ = writeln!(
            out,
            "# HELP saltq_minions Minions by state: connected, and keys per state.\n# TYPE saltq_minions gauge"
        );
        let _ = writeln!(out, "saltq_minions{{state=\"connected\"}} {}", g.connected);
        for (state, n) in &g.keys {
            let _ = writeln!(out, "saltq_minions{{state=\"{state}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP saltq_job_cache_transactions_total Write transactions the job cache committed (one per batch).\n\
             # TYPE saltq_job_cache_transactions_total counter\nsaltq_job_cache_transactions_total {}",
            g.cache_transactions
        );
        let h = &g.handshakes;
        let _ = writeln!(
            out,
            "# HELP saltq_handshakes_total New connections by what the handshake admission did with them.\n\
             # TYPE saltq_handshakes_total counter\n\
             saltq_handshakes_total{{outcome=\"completed\"}} {}\n\
             saltq_handshakes_total{{outcome=\"failed\"}} {}\n\
             saltq_handshakes_total{{outcome=\"refused_busy\"}} {}\n\
             saltq_handshakes_total{{outcome=\"outlasted_turn\"}} {}\n\
             # HELP saltq_handshakes_resumed_total New connections that resumed a TLS session (a ticket of this master or of its previous process).\n\
             # TYPE saltq_handshakes_resumed_total counter\n\
             saltq_handshakes_resumed_total {}\n\
             # HELP saltq_handshake_wait_seconds_total Time admitted connections waited for their turn.\n\
             # TYPE saltq_handshake_wait_seconds_total counter\n\
             saltq_handshake_wait_seconds_total {}\n\
             # HELP saltq_handshake_seconds_total Time from a connection's turn to the end of its handshake.\n\
             # TYPE saltq_handshake_seconds_total counter\n\
             saltq_handshake_seconds_total {}",
            h.completed,
            h.failed,
            h.refused_busy,
            h.outlasted,
            h.resumed,
            h.wait_seconds,
            h.handshake_seconds
        );
        counter(
            &mut out,
            "saltq_jobs_published_total",
            "Jobs published.",
            &self.jobs_published,
        );
        counter(
            &mut out,
            "saltq_returns_stored_total",
            "Returns stored in the job cache.",
            &self.returns_stored,
        );
        counter(
            &mut out,
            "saltq_returns_duplicate_total",
            "Duplicate returns dropped.",
            &self.returns_duplicate,
        );
        counter(
            &mut out,
            "saltq_events_fired_total",
            "Events fired on the bus.",
            &self.events_fired,
        );
        counter(
            &mut out,
            "saltq_events_missed_total",
            "Events slow subscribers missed.",
            &self.events_missed,
        );
        counter(
            &mut out,
            "saltq_slow_subscriber_lags_total",
            "Times a subscriber fell behind the bus.",
            &self.slow_subscribers,
        );
        if let Some(c) = &g.cluster {
            let _ = writeln!(
                out,
                "# HELP saltq_replica_minions_connected Minions subscribed through this replica.\n\
                 # TYPE saltq_replica_minions_connected gauge\n\
                 saltq_replica_minions_connected{{replica=\"{}\"}} {}",
                c.replica, c.here
            );
            let _ = writeln!(
                out,
                "# HELP saltq_cluster_replicas Replicas of the cluster heard from recently.\n\
                 # TYPE saltq_cluster_replicas gauge\nsaltq_cluster_replicas {}",
                c.replicas
            );
            let _ = writeln!(
                out,
                "# HELP saltq_cluster_nats_messages_sent_total NATS messages this replica published.\n\
                 # TYPE saltq_cluster_nats_messages_sent_total counter\n\
                 saltq_cluster_nats_messages_sent_total {}",
                c.nats_sent
            );
            for (name, help, label, counts) in [
                (
                    "saltq_cluster_nats_published_total",
                    "NATS messages this replica published, by kind.",
                    "kind",
                    &c.nats_published,
                ),
                (
                    "saltq_cluster_pg_statements_total",
                    "PostgreSQL statements this replica sent for the cluster's tables, by kind.",
                    "kind",
                    &c.pg_statements,
                ),
                (
                    "saltq_cluster_queue_dropped_total",
                    "Messages dropped because a cluster queue was full, by queue.",
                    "queue",
                    &c.dropped,
                ),
            ] {
                let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
                for (kind, n) in counts {
                    let _ = writeln!(out, "{name}{{{label}=\"{kind}\"}} {n}");
                }
            }
            counter(
                &mut out,
                "saltq_cluster_jobs_published_total",
                "Jobs published by any replica of the cluster, seen on the bus.",
                &self.cluster_jobs,
            );
            counter(
                &mut out,
                "saltq_cluster_returns_stored_total",
                "Returns stored by any replica of the cluster, seen on the bus.",
                &self.cluster_returns,
            );
        }
        render_listeners(&mut out, &saltq_transport::guard::snapshots());
        self.return_latency.render(
            &mut out,
            "saltq_return_latency_seconds",
            "From publish to the return stored.",
        );
        self.cache_write_latency.render(
            &mut out,
            "saltq_job_cache_write_seconds",
            "Job cache write of one return.",
        );
        out
    }
}

/// Appends `saltq_log_suppressed_total`: log lines the rate limit dropped (`lograte`).
pub fn render_log_suppressed(out: &mut String, n: u64) {
    let _ = writeln!(
        out,
        "# HELP saltq_log_suppressed_total Log lines dropped by the per-kind log rate limit.\n\
         # TYPE saltq_log_suppressed_total counter\nsaltq_log_suppressed_total {n}"
    );
}

/// What each listener's connection gate did: connections held, refused (by reason), failed
/// accepts, and HTTP connections closed for sending nothing in time.
pub fn render_listeners(out: &mut String, gates: &[saltq_transport::guard::GateSnapshot]) {
    let _ = writeln!(
        out,
        "# HELP saltq_connections_open Connections a listener holds now.\n\
         # TYPE saltq_connections_open gauge"
    );
    for g in gates {
        let _ = writeln!(
            out,
            "saltq_connections_open{{listener=\"{}\"}} {}",
            g.listener, g.open
        );
    }
    let _ = writeln!(
        out,
        "# HELP saltq_connections_refused_total Connections a listener refused, by reason.\n\
         # TYPE saltq_connections_refused_total counter"
    );
    for g in gates {
        for (reason, n) in [
            ("listener_full", g.refused_listener_full),
            ("source_full", g.refused_source_full),
        ] {
            let _ = writeln!(
                out,
                "saltq_connections_refused_total{{listener=\"{}\",reason=\"{reason}\"}} {n}",
                g.listener
            );
        }
    }
    let _ = writeln!(
        out,
        "# HELP saltq_accept_errors_total Failed accepts on a listener (out of descriptors...).\n\
         # TYPE saltq_accept_errors_total counter"
    );
    for g in gates {
        let _ = writeln!(
            out,
            "saltq_accept_errors_total{{listener=\"{}\"}} {}",
            g.listener, g.accept_errors
        );
    }
    let _ = writeln!(
        out,
        "# HELP saltq_connection_timeouts_total HTTP connections closed for sending no request (or body) in time.\n\
         # TYPE saltq_connection_timeouts_total counter"
    );
    for g in gates {
        let _ = writeln!(
            out,
            "saltq_connection_timeouts_total{{listener=\"{}\"}} {}",
            g.listener, g.timeouts
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_are_rendered_by_name_and_reason() {
        let mut out = String::new();
        render_listeners(
            &mut out,
            &[saltq_transport::guard::GateSnapshot {
                listener: "salt_api",
                open: 3,
                refused_listener_full: 1,
                refused_source_full: 7,
                accept_errors: 2,
                timeouts: 5,
            }],
        );
        for line in [
            "saltq_connections_open{listener=\"salt_api\"} 3",
            "saltq_connections_refused_total{listener=\"salt_api\",reason=\"listener_full\"} 1",
            "saltq_connections_refused_total{listener=\"salt_api\",reason=\"source_full\"} 7",
            "saltq_accept_errors_total{listener=\"salt_api\"} 2",
            "saltq_connection_timeouts_total{listener=\"salt_api\"} 5",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} not in {out}");
        }
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let m = Metrics::default();
        m.return_latency.observe(Duration::from_micros(700));
        m.return_latency.observe(Duration::from_millis(20));
        let text = m.render(&Gauges {
            connected: 2,
            keys: vec![("accepted", 3)],
            cluster: None,
            cache_transactions: 0,
            handshakes: Handshakes {
                completed: 5,
                failed: 1,
                refused_busy: 2,
                outlasted: 7,
                wait_seconds: 0.5,
                handshake_seconds: 0.25,
                resumed: 4,
            },
        });
        assert!(
            text.contains("saltq_handshakes_total{outcome=\"completed\"} 5"),
            "{text}"
        );
        assert!(
            text.contains("saltq_handshakes_total{outcome=\"refused_busy\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("saltq_handshakes_total{outcome=\"outlasted_turn\"} 7"),
            "{text}"
        );
        assert!(text.contains("saltq_handshakes_resumed_total 4"), "{text}");
        assert!(
            text.contains("saltq_handshake_seconds_total 0.25"),
            "{text}"
        );
        assert!(
            text.contains("saltq_return_latency_seconds_bucket{le=\"0.001\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("saltq_return_latency_seconds_bucket{le=\"0.025\"} 2"),
            "{text}"
        );
        assert!(text.contains("saltq_return_latency_seconds_count 2"));
        assert!(text.contains("saltq_minions{state=\"connected\"} 2"));
        assert!(text.contains("saltq_minions{state=\"accepted\"} 3"));
        assert!(!text.contains("saltq_cluster"));
        m.cluster_jobs.fetch_add(4, Ordering::Relaxed);
        let text = m.render(&Gauges {
            connected: 2,
            keys: vec![],
            cluster: Some(ClusterGauges {
                replica: "r1-0a".into(),
                here: 1,
                replicas: 3,
                nats_sent: 7,
                nats_published: vec![("facts", 5), ("routes", 2)],
                pg_statements: vec![("facts", 1)],
                dropped: vec![("events", 0)],
            }),
            cache_transactions: 2,
            handshakes: Handshakes::default(),
        });
        assert!(
            text.contains("saltq_replica_minions_connected{replica=\"r1-0a\"} 1"),
            "{text}"
        );
        assert!(text.contains("saltq_cluster_replicas 3"), "{text}");
        assert!(
            text.contains("saltq_cluster_nats_published_total{kind=\"facts\"} 5"),
            "{text}"
        );
        assert!(
            text.contains("saltq_cluster_pg_statements_total{kind=\"facts\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("saltq_cluster_jobs_published_total 4"),
            "{text}"
        );
    }
}
