//! One event returner's buffer as a state machine without I/O or clock: it is told when events
//! arrive and how a send went, with the time, and answers what to do next.
//!
//! Salt's rules (`salt/utils/event.py: EventReturn`): events wait until `event_return_queue` of
//! them are buffered, or until the oldest has waited `event_return_queue_max_seconds`, then go
//! out as one batch. saltq adds what Salt lacks: a failed batch goes back to the front and is
//! retried with exponential backoff; at most `max_buffer` events wait (the batch being sent is
//! extra), and beyond that the oldest are dropped and counted.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use crate::Event;

/// The first retry delay after a failed batch; it doubles up to the configured maximum.
pub(crate) const FIRST_RETRY: Duration = Duration::from_millis(100);

/// What the driver should do next.
#[derive(Debug)]
pub(crate) enum Step {
    /// Send these events as one batch, then report with [`Lane::sent`] or [`Lane::failed`].
    Send(Vec<Event>),
    /// Nothing to do until an event arrives or, if given, until this time.
    Wait(Option<Instant>),
    /// Closed and empty: the driver can stop.
    Finished,
}

/// Counters, cumulative since the lane was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Events stored by the returner.
    pub sent: u64,
    /// Events dropped because the buffer was full (or left over at shutdown).
    pub dropped: u64,
    /// Batches the returner failed to store (each retried unless dropped).
    pub failed_batches: u64,
}

/// The buffer of one event returner.
#[derive(Debug)]
pub(crate) struct Lane {
    /// Events not yet handed out, oldest first, with their arrival time.
    waiting: VecDeque<(Instant, Event)>,
    /// Arrival times of the batch being sent (empty when none is out).
    in_flight: Vec<Instant>,
    /// Events per batch: `max(event_return_queue, 1)`.
    batch: usize,
    /// `event_return_queue_max_seconds`: send a partial batch once its oldest is this old.
    max_age: Option<Duration>,
    /// The most events that may wait.
    max_buffer: usize,
    /// Longest retry delay.
    retry_max: Duration,
    /// Next retry delay.
    backoff: Duration,
    /// No send before this (set after a failure).
    retry_at: Option<Instant>,
    /// No more events will come: send everything, then finish.
    closing: bool,
    /// What happened so far.
    counts: Counts,
    /// Drops not yet reported in the log.
    unreported_drops: u64,
}

impl Lane {
    /// A lane sending batches of `batch` (0 is taken as 1, as Salt flushes each event then).
    pub(crate) fn new(
        batch: usize,
        max_age: Option<Duration>,
        max_buffer: usize,
        retry_max: Duration,
    ) -> Lane {
        Lane {
            waiting: VecDeque::new(),
            in_flight: Vec::new(),
            batch: batch.max(1),
            max_age: max_age.filter(|d| !d.is_zero()),
            // A buffer smaller than a batch could never fill one.
            max_buffer: max_buffer.max(batch).max(1),
            retry_max: retry_max.max(FIRST_RETRY),
            backoff: FIRST_RETRY,
            retry_at: None,
            closing: false,
            counts: Counts::default(),
            unreported_drops: 0,
        }
    }

    /// An event arrived; the oldest waiting one is dropped if the buffer is full. Returns
    /// whether the driver should look again now (a batch filled up, or a first event started
    /// the age clock); otherwise it is busy or already knows when to wake.
    pub(crate) fn push(&mut self, event: Event, now: Instant) -> bool {
        if self.waiting.len() >= self.max_buffer {
            self.waiting.pop_front();
            self.drop_counted(1);
        }
        self.waiting.push_back((now, event));
        self.in_flight.is_empty()
            && self.retry_at.is_none()
            && (self.waiting.len() == 1 || self.waiting.len() >= self.batch)
    }

    fn drop_counted(&mut self, n: u64) {
        self.counts.dropped += n;
        self.unreported_drops += n;
    }

    /// No more events will arrive.
    pub(crate) fn close(&mut self) {
        self.closing = true;
    }

    /// Whether [`Lane::close`] was called.
    pub(crate) fn is_closing(&self) -> bool {
        self.closing
    }

    /// What to do at `now`.
    pub(crate) fn poll(&mut self, now: Instant) -> Step {
        if !self.in_flight.is_empty() {
            return Step::Wait(None);
        }
        let Some(&(oldest, _)) = self.waiting.front() else {
            return if self.closing {
                Step::Finished
            } else {
                Step::Wait(None)
            };
        };
        if let Some(at) = self.retry_at
            && now < at
        {
            return Step::Wait(Some(at));
        }
        let aged = self.max_age.map(|age| oldest + age);
        let due = self.waiting.len() >= self.batch
            || self.closing
            || self.retry_at.is_some()
            || aged.is_some_and(|at| now >= at);
        if !due {
            return Step::Wait(aged);
        }
        let n = self.waiting.len().min(self.batch);
        let mut events = Vec::with_capacity(n);
        for (at, event) in self.waiting.drain(..n) {
            self.in_flight.push(at);
            events.push(event);
        }
        Step::Send(events)
    }

    /// The batch handed out was stored.
    pub(crate) fn sent(&mut self) {
        self.counts.sent += self.in_flight.len() as u64;
        self.in_flight.clear();
        self.retry_at = None;
        self.backoff = FIRST_RETRY;
    }

    /// The batch handed out (given back here) was not stored: it goes back to the front, the
    /// oldest beyond the bound are dropped, and the next try waits. Returns that wait.
    pub(crate) fn failed(&mut self, events: Vec<Event>, now: Instant) -> Duration {
        self.counts.failed_batches += 1;
        let times = std::mem::take(&mut self.in_flight);
        for (at, event) in times.into_iter().zip(events).rev() {
            self.waiting.push_front((at, event));
        }
        let excess = self.waiting.len().saturating_sub(self.max_buffer);
        if excess > 0 {
            self.waiting.drain(..excess);
            self.drop_counted(excess as u64);
        }
        let delay = self.backoff;
        self.backoff = (self.backoff * 2).min(self.retry_max);
        self.retry_at = Some(now + delay);
        delay
    }

    /// Gives up on everything still held (at shutdown, when the returner stays down): all of
    /// it counts as dropped. Returns how many.
    pub(crate) fn abandon(&mut self) -> u64 {
        let n = (self.waiting.len() + self.in_flight.len()) as u64;
        self.waiting.clear();
        self.in_flight.clear();
        self.drop_counted(n);
        n
    }

    /// The counters.
    pub(crate) fn counts(&self) -> Counts {
        self.counts
    }

    /// Events held: waiting plus the batch being sent.
    pub(crate) fn held(&self) -> usize {
        self.waiting.len() + self.in_flight.len()
    }

    /// Drops since the last call, for the log.
    pub(crate) fn take_unreported_drops(&mut self) -> u64 {
        std::mem::take(&mut self.unreported_drops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    fn ev(n: usize) -> Event {
        Event {
            tag: format!("t/{n}"),
            data: Map::new(),
        }
    }

    fn tags(events: &[Event]) -> Vec<String> {
        events.iter().map(|e| e.tag.clone()).collect()
    }

    fn send(step: Step) -> Vec<Event> {
        match step {
            Step::Send(events) => events,
            other => panic!("expected a batch, got {other:?}"),
        }
    }

    #[test]
    fn waits_for_a_full_batch_then_sends_it() {
        let t0 = Instant::now();
        let mut lane = Lane::new(3, None, 100, Duration::from_secs(10));
        lane.push(ev(0), t0);
        lane.push(ev(1), t0);
        assert!(matches!(lane.poll(t0), Step::Wait(None)));
        lane.push(ev(2), t0);
        lane.push(ev(3), t0);
        assert_eq!(tags(&send(lane.poll(t0))), ["t/0", "t/1", "t/2"]);
        // One batch at a time.
        assert!(matches!(lane.poll(t0), Step::Wait(None)));
        lane.sent();
        assert!(matches!(lane.poll(t0), Step::Wait(None)));
        assert_eq!(lane.counts().sent, 3);
        assert_eq!(lane.held(), 1);
    }

    #[test]
    fn queue_zero_sends_each_event() {
        let t0 = Instant::now();
        let mut lane = Lane::new(0, None, 100, Duration::from_secs(10));
        lane.push(ev(0), t0);
        lane.push(ev(1), t0);
        assert_eq!(tags(&send(lane.poll(t0))), ["t/0"]);
    }

    #[test]
    fn max_age_flushes_a_partial_batch() {
        let t0 = Instant::now();
        let age = Duration::from_secs(2);
        let mut lane = Lane::new(10, Some(age), 100, Duration::from_secs(10));
        lane.push(ev(0), t0);
        lane.push(ev(1), t0 + Duration::from_secs(1));
        assert!(
            matches!(lane.poll(t0 + Duration::from_secs(1)), Step::Wait(Some(at)) if at == t0 + age)
        );
        assert_eq!(send(lane.poll(t0 + age)).len(), 2);
    }

    #[test]
    fn failure_requeues_in_order_and_backs_off() {
        let t0 = Instant::now();
        let mut lane = Lane::new(2, None, 100, Duration::from_millis(350));
        for i in 0..3 {
            lane.push(ev(i), t0);
        }
        let batch = send(lane.poll(t0));
        assert_eq!(lane.failed(batch, t0), FIRST_RETRY);
        assert!(matches!(lane.poll(t0), Step::Wait(Some(at)) if at == t0 + FIRST_RETRY));
        let t1 = t0 + FIRST_RETRY;
        let batch = send(lane.poll(t1));
        assert_eq!(tags(&batch), ["t/0", "t/1"]);
        assert_eq!(lane.failed(batch, t1), 2 * FIRST_RETRY);
        let t2 = t1 + 2 * FIRST_RETRY;
        let batch = send(lane.poll(t2));
        assert_eq!(
            lane.failed(batch, t2),
            Duration::from_millis(350),
            "capped at retry_max"
        );
        let t3 = t2 + Duration::from_millis(350);
        let _ = send(lane.poll(t3));
        lane.sent();
        // After a success the backoff starts over, and the leftover waits for a full batch.
        assert!(matches!(lane.poll(t3), Step::Wait(None)));
        assert_eq!(
            lane.counts(),
            Counts {
                sent: 2,
                dropped: 0,
                failed_batches: 3
            }
        );
    }

    #[test]
    fn overflow_drops_the_oldest_and_counts_exactly() {
        let t0 = Instant::now();
        let mut lane = Lane::new(2, None, 4, Duration::from_secs(1));
        for i in 0..6 {
            lane.push(ev(i), t0);
        }
        assert_eq!(lane.counts().dropped, 2);
        let batch = send(lane.poll(t0));
        assert_eq!(tags(&batch), ["t/2", "t/3"]);
        // While the batch is out, 4 more may wait.
        for i in 6..10 {
            lane.push(ev(i), t0);
        }
        assert_eq!(lane.counts().dropped, 4);
        assert_eq!(lane.held(), 6);
        // The batch fails: back in front, then trimmed to the bound from the oldest end.
        lane.failed(batch, t0);
        assert_eq!(lane.held(), 4);
        assert_eq!(lane.counts().dropped, 6);
        assert_eq!(lane.take_unreported_drops(), 6);
        assert_eq!(lane.take_unreported_drops(), 0);
        let later = t0 + Duration::from_secs(5);
        assert_eq!(tags(&send(lane.poll(later))), ["t/6", "t/7"]);
    }

    #[test]
    fn closing_flushes_partial_batches_then_finishes() {
        let t0 = Instant::now();
        let mut lane = Lane::new(10, None, 100, Duration::from_secs(1));
        lane.push(ev(0), t0);
        lane.close();
        assert_eq!(send(lane.poll(t0)).len(), 1);
        lane.sent();
        assert!(matches!(lane.poll(t0), Step::Finished));
        let mut lane = Lane::new(10, None, 100, Duration::from_secs(1));
        lane.push(ev(0), t0);
        lane.close();
        let batch = send(lane.poll(t0));
        lane.failed(batch, t0);
        assert_eq!(lane.abandon(), 1);
        assert_eq!(lane.counts().dropped, 1);
        assert!(matches!(lane.poll(t0), Step::Finished));
    }
}
