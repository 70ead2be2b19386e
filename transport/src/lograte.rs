//! Rate-limiting a daemon's log per message kind (per callsite), so that no input repeated by a
//! peer (a refused handshake, a bad request) can fill a disk: each kind may write a burst, then
//! a steady few lines a second; the excess is dropped, counted, and summed up in one line
//! ("suppressed K messages like <target: first message>") when the kind may speak again.
//!
//! The decision is [`Bucket::decide`] and [`Bucket::flush`], pure and fed with `now`;
//! [`RateLimitLayer`] is the thin `tracing` driver around one bucket per callsite.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber, callsite};
use tracing_subscriber::layer::{Context, Layer};

/// The target of the summary lines; they are not limited themselves (there is at most one per
/// kind each time the kind may speak again, so they are bounded by the other kinds' rates).
pub const SUMMARY_TARGET: &str = "saltq::log";

/// How much one kind of message may write.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Lines written at once before the limit applies.
    pub burst: u32,
    /// Lines a second after the burst is spent.
    pub per_second: f64,
    /// At most one summary per kind in this time: under a steady flood the dropped lines are
    /// summed up once a window, not before every line let through.
    pub report_every: Duration,
}

impl RateLimit {
    /// The master's limit: a burst of 100 lines, then 10 a second, per callsite.
    pub const DAEMON: RateLimit = RateLimit {
        burst: 100,
        per_second: 10.0,
        report_every: Duration::from_secs(1),
    };
}

/// What to do with one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Write it; when `suppressed` is not 0, first write a summary of that many dropped lines
    /// (at most once every `report_every`; until then they are counted on).
    Allow {
        /// Lines of this kind dropped since the last line or summary written.
        suppressed: u64,
    },
    /// Drop it; `first` when it is the first dropped since the last summary (its text names
    /// the kind in the summary).
    Suppress {
        /// The first of a run of dropped lines.
        first: bool,
    },
}

/// One kind's token bucket and its count of dropped lines.
#[derive(Debug, Clone)]
pub struct Bucket {
    tokens: f64,
    last: Instant,
    suppressed: u64,
    /// When the last summary was made (or the bucket made).
    reported: Instant,
}

impl Bucket {
    /// A full bucket at `now`.
    pub fn new(limit: &RateLimit, now: Instant) -> Bucket {
        Bucket {
            tokens: f64::from(limit.burst),
            last: now,
            suppressed: 0,
            reported: now,
        }
    }

    fn refill(&mut self, limit: &RateLimit, now: Instant) {
        // A clock read out of order (`now` before `last`) refills nothing and moves nothing.
        if now > self.last {
            let elapsed = (now - self.last).as_secs_f64();
            self.tokens = (self.tokens + elapsed * limit.per_second).min(f64::from(limit.burst));
            self.last = now;
        }
    }

    /// Decides about one event of this kind at `now`.
    pub fn decide(&mut self, limit: &RateLimit, now: Instant) -> Decision {
        self.refill(limit, now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Decision::Allow {
                suppressed: self.report(limit, now),
            }
        } else {
            self.suppressed += 1;
            Decision::Suppress {
                first: self.suppressed == 1,
            }
        }
    }

    /// At a periodic tick: the number of dropped lines to report, or 0: once `report_every`
    /// has passed since the last report, whether the kind is still being dropped or has gone
    /// quiet; each dropped line is reported once.
    pub fn flush(&mut self, limit: &RateLimit, now: Instant) -> u64 {
        self.refill(limit, now);
        self.report(limit, now)
    }

    fn report(&mut self, limit: &RateLimit, now: Instant) -> u64 {
        if self.suppressed > 0 && now.saturating_duration_since(self.reported) >= limit.report_every
        {
            self.reported = now;
            std::mem::take(&mut self.suppressed)
        } else {
            0
        }
    }

    /// Lines dropped and not yet reported.
    pub fn pending(&self) -> u64 {
        self.suppressed
    }
}

/// Lines dropped by every [`RateLimitLayer`] of this process since it started.
static SUPPRESSED: AtomicU64 = AtomicU64::new(0);

/// Lines dropped by the log rate limit since the process started (`saltq_log_suppressed_total`).
pub fn suppressed_total() -> u64 {
    SUPPRESSED.load(Ordering::Relaxed)
}

struct Site {
    bucket: Bucket,
    /// `target: message` of the first dropped line of the current run.
    like: String,
}

#[derive(Default)]
struct Sites(Mutex<HashMap<callsite::Identifier, Site>>);

/// A `tracing` layer that drops events past [`RateLimit`] per callsite (see the module doc).
#[derive(Clone)]
pub struct RateLimitLayer {
    limit: RateLimit,
    sites: Arc<Sites>,
}

impl RateLimitLayer {
    /// A layer with `limit`, and a thread that writes the summaries of kinds gone quiet, every
    /// second.
    pub fn new(limit: RateLimit) -> RateLimitLayer {
        let layer = RateLimitLayer {
            limit,
            sites: Arc::default(),
        };
        let ticker = layer.clone();
        let _ = std::thread::Builder::new()
            .name("log-rate".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                    ticker.flush(Instant::now());
                }
            });
        layer
    }

    /// Writes a summary for every kind that may speak again after lines were dropped.
    fn flush(&self, now: Instant) {
        let due: Vec<(u64, String)> = match self.sites.0.lock() {
            Ok(mut sites) => sites
                .values_mut()
                .filter_map(|s| {
                    let n = s.bucket.flush(&self.limit, now);
                    (n > 0).then(|| (n, std::mem::take(&mut s.like)))
                })
                .collect(),
            Err(_) => return,
        };
        for (n, like) in due {
            summary(n, &like);
        }
    }
}

fn summary(n: u64, like: &str) {
    tracing::warn!(target: SUMMARY_TARGET, "suppressed {n} messages like {like}");
}

/// The `message` field of an event, as written.
struct Message(String);

impl Visit for Message {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0 = value.to_owned();
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: Subscriber> Layer<S> for RateLimitLayer {
    fn event_enabled(&self, event: &Event<'_>, _ctx: Context<'_, S>) -> bool {
        let meta = event.metadata();
        if meta.target() == SUMMARY_TARGET {
            return true;
        }
        let now = Instant::now();
        let (pass, report) = {
            let Ok(mut sites) = self.sites.0.lock() else {
                return true;
            };
            let site = sites.entry(meta.callsite()).or_insert_with(|| Site {
                bucket: Bucket::new(&self.limit, now),
                like: String::new(),
            });
            match site.bucket.decide(&self.limit, now) {
                Decision::Allow { suppressed: 0 } => (true, None),
                Decision::Allow { suppressed } => {
                    (true, Some((suppressed, std::mem::take(&mut site.like))))
                }
                Decision::Suppress { first } => {
                    if first {
                        let mut m = Message(String::new());
                        event.record(&mut m);
                        site.like = format!("{}: {}", meta.target(), m.0);
                    }
                    (false, None)
                }
            }
        };
        // The lock is released: the summary goes through this layer again.
        if let Some((n, like)) = report {
            summary(n, &like);
        }
        if !pass {
            SUPPRESSED.fetch_add(1, Ordering::Relaxed);
        }
        pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: RateLimit = RateLimit {
        burst: 3,
        per_second: 2.0,
        report_every: Duration::from_millis(400),
    };

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn a_burst_passes_then_the_excess_is_dropped_and_reported_once() {
        let t0 = Instant::now();
        let mut b = Bucket::new(&LIMIT, t0);
        for _ in 0..3 {
            assert_eq!(b.decide(&LIMIT, t0), Decision::Allow { suppressed: 0 });
        }
        assert_eq!(b.decide(&LIMIT, t0), Decision::Suppress { first: true });
        assert_eq!(b.decide(&LIMIT, t0), Decision::Suppress { first: false });
        assert_eq!(
            b.decide(&LIMIT, at(t0, 100)),
            Decision::Suppress { first: false }
        );
        // Half a second refills one line at 2 a second: it passes, after a summary of 3.
        assert_eq!(
            b.decide(&LIMIT, at(t0, 500)),
            Decision::Allow { suppressed: 3 }
        );
        assert_eq!(
            b.decide(&LIMIT, at(t0, 500)),
            Decision::Suppress { first: true }
        );
    }

    #[test]
    fn a_flood_writes_at_most_the_burst_and_the_rate() {
        let t0 = Instant::now();
        let mut b = Bucket::new(&LIMIT, t0);
        let (mut written, mut summaries, mut dropped) = (0u64, 0u64, 0u64);
        // 10,000 lines over 10 virtual seconds.
        for i in 0..10_000u64 {
            match b.decide(&LIMIT, at(t0, i)) {
                Decision::Allow { suppressed } => {
                    written += 1;
                    summaries += u64::from(suppressed > 0);
                    dropped += suppressed;
                }
                Decision::Suppress { .. } => {}
            }
        }
        dropped += b.pending();
        assert_eq!(written + dropped, 10_000);
        // 3 at once, then 2 a second for 10 s.
        assert!(written <= 3 + 20, "{written}");
        // One summary a window (400 ms) at most.
        assert!(summaries <= 25, "{summaries}");
    }

    #[test]
    fn a_kind_gone_quiet_is_reported_at_the_tick_once() {
        let t0 = Instant::now();
        let mut b = Bucket::new(&LIMIT, t0);
        for _ in 0..5 {
            b.decide(&LIMIT, t0);
        }
        // Within the window since the bucket was made: nothing to report yet.
        assert_eq!(b.flush(&LIMIT, at(t0, 100)), 0);
        assert_eq!(b.flush(&LIMIT, at(t0, 600)), 2);
        assert_eq!(b.flush(&LIMIT, at(t0, 1600)), 0);
        // The next line passes with nothing left to report, the bucket refilling meanwhile.
        assert_eq!(
            b.decide(&LIMIT, at(t0, 1700)),
            Decision::Allow { suppressed: 0 }
        );
    }

    #[test]
    fn time_going_backwards_refills_nothing() {
        let t0 = Instant::now() + Duration::from_secs(5);
        let mut b = Bucket::new(&LIMIT, t0);
        for _ in 0..3 {
            b.decide(&LIMIT, t0);
        }
        assert_eq!(
            b.decide(&LIMIT, t0 - Duration::from_secs(5)),
            Decision::Suppress { first: true }
        );
        // Half a second after the first reading is one line, not three.
        assert_eq!(
            b.decide(&LIMIT, at(t0, 500)),
            Decision::Allow { suppressed: 1 }
        );
        assert_eq!(
            b.decide(&LIMIT, at(t0, 500)),
            Decision::Suppress { first: true }
        );
    }
}
