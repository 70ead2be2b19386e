//! The master's event returner (Salt's `event_return`): every event that passes the
//! whitelist and blacklist goes, in batches, to one or more returners, without ever slowing
//! the bus.
//!
//! [`EventReturnQueue::push`] only takes a short lock and appends; one task per returner sends
//! batches (the decisions are in [`lane`], which has no I/O). A returner that fails keeps its
//! events and retries with backoff, bounded by `max_buffer`; losses are counted exactly and
//! logged with their count. Delivery is at least once: a batch whose commit succeeded but whose
//! answer was lost (a connection cut at that instant) is sent again.

mod lane;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use saltq_semantics::python::Glob;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use self::lane::{Lane, Step};
use crate::{Event, ReturnerError, Returners};

/// How often, at most, drops are reported in the log while they go on.
const DROP_REPORT_INTERVAL: Duration = Duration::from_secs(10);

/// The master's event return settings, named after Salt's keys.
#[derive(Debug, Clone)]
pub struct EventReturnConfig {
    /// Salt's `event_return`: the returners that get every event.
    pub returners: Vec<String>,
    /// Salt's `event_return_whitelist`: tag globs; when not empty, only matching events go.
    pub whitelist: Vec<String>,
    /// Salt's `event_return_blacklist`: tag globs of events that never go.
    pub blacklist: Vec<String>,
    /// Salt's `event_return_queue`: events per batch; a batch goes once this many are buffered
    /// (0, Salt's default, sends each event at once).
    pub queue: usize,
    /// Salt's `event_return_queue_max_seconds`: a partial batch goes once its oldest event is
    /// this old (zero, Salt's default, never).
    pub queue_max_age: Duration,
    /// saltq: the most events kept per returner while it cannot store them (the batch being
    /// sent is extra); beyond that the oldest are dropped and counted.
    pub max_buffer: usize,
    /// saltq: the longest wait between retries of a failed batch (the first is 100 ms, then
    /// doubling).
    pub retry_max: Duration,
    /// saltq: how long, after the queue is closed, to keep trying to store what is left.
    pub shutdown_grace: Duration,
}

impl Default for EventReturnConfig {
    fn default() -> EventReturnConfig {
        EventReturnConfig {
            returners: Vec::new(),
            whitelist: Vec::new(),
            blacklist: Vec::new(),
            queue: 0,
            queue_max_age: Duration::ZERO,
            max_buffer: 10_000,
            retry_max: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

/// What the queue has done, cumulative.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventReturnStats {
    /// Events stored (counted once per returner).
    pub sent: u64,
    /// Events lost: dropped from a full buffer, or still unsent when the shutdown grace ran out.
    pub dropped: u64,
    /// Batches a returner failed to store (then retried).
    pub failed_batches: u64,
    /// Events held now, waiting or being sent.
    pub buffered: usize,
}

/// One returner's buffer, shared by the pushers and its sending task.
struct LaneCell {
    name: String,
    lane: Mutex<Lane>,
    wake: Notify,
}

impl LaneCell {
    fn lock(&self) -> MutexGuard<'_, Lane> {
        // A panic while holding the lock cannot leave the lane inconsistent in a way worth
        // losing events over.
        self.lane
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Shared by every handle and the tasks.
struct Shared {
    lanes: Vec<Arc<LaneCell>>,
    whitelist: Vec<Glob>,
    blacklist: Vec<Glob>,
}

impl Shared {
    fn close(&self) {
        for cell in &self.lanes {
            cell.lock().close();
            cell.wake.notify_one();
        }
    }
}

/// Closes the queue when the last handle goes.
struct Closer(Arc<Shared>);

impl Drop for Closer {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Every accepted event to one or more returners, batched; cheap to clone. Dropping the last
/// clone closes it, as [`EventReturnQueue::close`] does.
#[derive(Clone)]
pub struct EventReturnQueue {
    shared: Arc<Shared>,
    _closer: Arc<Closer>,
}

impl std::fmt::Debug for EventReturnQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.shared.lanes.iter().map(|c| c.name.as_str()).collect();
        f.debug_struct("EventReturnQueue")
            .field("returners", &names)
            .finish_non_exhaustive()
    }
}

impl EventReturnQueue {
    /// Starts one sending task per returner (inside the current tokio runtime). The handle
    /// finishes once the queue is closed and everything is stored or given up. Refuses an
    /// unknown returner, one without `event_return` (redis, syslog), none at all, and a glob
    /// Python's `fnmatch` would refuse.
    pub fn new(
        returners: Returners,
        config: EventReturnConfig,
    ) -> Result<(EventReturnQueue, JoinHandle<()>), ReturnerError> {
        if config.returners.is_empty() {
            return Err(ReturnerError::InvalidOption {
                key: "event_return".into(),
                reason: "names no returner".into(),
            });
        }
        let mut lanes = Vec::new();
        for name in &config.returners {
            if !Returners::supports_event_return(name)? {
                return Err(ReturnerError::Unsupported {
                    returner: crate::options::Name::parse(name)?.as_str(),
                    operation: "event_return",
                });
            }
            if lanes.iter().any(|c: &Arc<LaneCell>| &c.name == name) {
                continue;
            }
            let lane = Lane::new(
                config.queue,
                Some(config.queue_max_age),
                config.max_buffer,
                config.retry_max,
            );
            lanes.push(Arc::new(LaneCell {
                name: name.clone(),
                lane: Mutex::new(lane),
                wake: Notify::new(),
            }));
        }
        let globs = |key: &str, patterns: &[String]| -> Result<Vec<Glob>, ReturnerError> {
            patterns
                .iter()
                .map(|p| {
                    Glob::new(p).map_err(|e| ReturnerError::InvalidOption {
                        key: key.into(),
                        reason: format!("{p:?} is not a valid glob: {e}"),
                    })
                })
                .collect()
        };
        let shared = Arc::new(Shared {
            lanes,
            whitelist: globs("event_return_whitelist", &config.whitelist)?,
            blacklist: globs("event_return_blacklist", &config.blacklist)?,
        });
        let mut tasks = tokio::task::JoinSet::new();
        for cell in &shared.lanes {
            tasks.spawn(run_lane(
                returners.clone(),
                cell.clone(),
                config.shutdown_grace,
            ));
        }
        let handle = tokio::spawn(async move {
            while let Some(done) = tasks.join_next().await {
                if let Err(e) = done {
                    tracing::error!(error = %e, "an event return task failed");
                }
            }
        });
        let queue = EventReturnQueue {
            shared: shared.clone(),
            _closer: Arc::new(Closer(shared)),
        };
        Ok((queue, handle))
    }

    /// Salt's `EventReturn._filter`: with a whitelist, only tags matching one of its globs;
    /// then none matching a blacklist glob.
    pub fn accepts(&self, tag: &str) -> bool {
        let allowed = self.shared.whitelist.is_empty()
            || self.shared.whitelist.iter().any(|g| g.is_match(tag));
        allowed && !self.shared.blacklist.iter().any(|g| g.is_match(tag))
    }

    /// Queues an event for every returner if the filters accept it. Never waits: it takes a
    /// short lock per returner, and a full buffer drops its oldest event.
    pub fn push(&self, event: Event) {
        if !self.accepts(&event.tag) {
            return;
        }
        let now = Instant::now();
        let n = self.shared.lanes.len();
        let mut event = Some(event);
        for (i, cell) in self.shared.lanes.iter().enumerate() {
            let ev = if i + 1 == n {
                event.take()
            } else {
                event.clone()
            };
            let Some(ev) = ev else { continue };
            let wake = cell.lock().push(ev, now);
            if wake {
                cell.wake.notify_one();
            }
        }
    }

    /// Stops taking events; the tasks store what is left (for at most `shutdown_grace`) and
    /// end. Later pushes are still buffered but may never be sent.
    pub fn close(&self) {
        self.shared.close();
    }

    /// The counters, summed over the returners.
    pub fn stats(&self) -> EventReturnStats {
        self.stats_by_returner()
            .into_iter()
            .fold(EventReturnStats::default(), |a, (_, s)| EventReturnStats {
                sent: a.sent + s.sent,
                dropped: a.dropped + s.dropped,
                failed_batches: a.failed_batches + s.failed_batches,
                buffered: a.buffered + s.buffered,
            })
    }

    /// The counters of each returner.
    pub fn stats_by_returner(&self) -> Vec<(String, EventReturnStats)> {
        self.shared
            .lanes
            .iter()
            .map(|cell| {
                let lane = cell.lock();
                let c = lane.counts();
                let stats = EventReturnStats {
                    sent: c.sent,
                    dropped: c.dropped,
                    failed_batches: c.failed_batches,
                    buffered: lane.held(),
                };
                (cell.name.clone(), stats)
            })
            .collect()
    }
}

/// Sends one returner's batches until the queue is closed and drained (or the grace is over).
async fn run_lane(returners: Returners, cell: Arc<LaneCell>, grace: Duration) {
    let name = cell.name.as_str();
    let mut close_by: Option<Instant> = None;
    let mut last_drop_report: Option<Instant> = None;
    let mut failures_in_a_row = 0u64;
    loop {
        let now = Instant::now();
        let step = {
            let mut lane = cell.lock();
            if lane.is_closing() && close_by.is_none() {
                close_by = Some(now + grace);
            }
            match close_by {
                Some(deadline) if now >= deadline => {
                    let lost = lane.abandon();
                    if lost > 0 {
                        tracing::warn!(
                            returner = name,
                            lost,
                            "event_return: giving up at shutdown; events not stored"
                        );
                    }
                    lane.take_unreported_drops();
                    Step::Finished
                }
                _ => lane.poll(now),
            }
        };
        report_drops(&cell, now, &mut last_drop_report, false);
        match step {
            Step::Send(events) => {
                let n = events.len();
                let result = returners.event_return(name, &events).await;
                let mut lane = cell.lock();
                match result {
                    Ok(()) => {
                        lane.sent();
                        if failures_in_a_row > 0 {
                            tracing::info!(
                                returner = name,
                                failed_batches = failures_in_a_row,
                                "event_return: storing events again"
                            );
                            failures_in_a_row = 0;
                        }
                    }
                    Err(e) => {
                        failures_in_a_row += 1;
                        let delay = lane.failed(events, Instant::now());
                        let held = lane.held();
                        tracing::warn!(
                            returner = name,
                            error = %e,
                            held,
                            retry_in = ?delay,
                            "event_return: could not store {n} events; keeping them and retrying"
                        );
                    }
                }
            }
            Step::Wait(until) => {
                let until = match (until, close_by) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                match until {
                    Some(at) => {
                        tokio::select! {
                            () = cell.wake.notified() => {}
                            () = tokio::time::sleep_until(at) => {}
                        }
                    }
                    None => cell.wake.notified().await,
                }
            }
            Step::Finished => break,
        }
    }
    report_drops(&cell, Instant::now(), &mut last_drop_report, true);
}

/// Logs drops with their count, at most every [`DROP_REPORT_INTERVAL`] unless `now_anyway`.
fn report_drops(cell: &LaneCell, now: Instant, last: &mut Option<Instant>, now_anyway: bool) {
    if !now_anyway && last.is_some_and(|at| now < at + DROP_REPORT_INTERVAL) {
        return;
    }
    let (dropped, total) = {
        let mut lane = cell.lock();
        (lane.take_unreported_drops(), lane.counts().dropped)
    };
    if dropped > 0 {
        *last = Some(now);
        tracing::warn!(
            returner = cell.name.as_str(),
            dropped,
            total_dropped = total,
            "event_return: buffer full, dropped the oldest events"
        );
    }
}
