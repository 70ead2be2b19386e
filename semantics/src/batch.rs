//! Salt's batch mode without I/O (`salt -b`, salt-api's `local_batch`; Salt's
//! `salt/cli/batch.py`): the batch size a user wrote, and the walk over the minions that
//! answered the ping — which of them to start now as one sub-batch, when a slot held by
//! `batch_wait` frees, when `failhard` stops the run. Time is an argument, so the CLI, the
//! master and the tests drive the same decisions.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

/// A batch size as written: `3`, `10%` or `%10`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BatchSize {
    /// This many minions at a time.
    Count(u64),
    /// This share of the minions that answered, in percent.
    Percent(f64),
}

/// A batch size that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchSizeError {
    /// Not a number nor a percentage: Salt's own message.
    #[error("Invalid batch data sent: {0}\nData must be in the form of %10, 10% or 3")]
    Syntax(String),
    /// Zero or negative: Salt would wait for a free slot for ever.
    #[error("invalid batch size {0:?}: at least one minion must run at a time")]
    NotPositive(String),
}

impl BatchSize {
    /// Reads `spec` as Salt does: with a `%` anywhere it is a percentage (a float), else an
    /// integer. Zero and negative sizes are refused (Salt loops for ever on them).
    pub fn parse(spec: &str) -> Result<BatchSize, BatchSizeError> {
        let syntax = || BatchSizeError::Syntax(spec.to_owned());
        let positive = || BatchSizeError::NotPositive(spec.to_owned());
        if spec.contains('%') {
            let pct: f64 = spec
                .trim_matches('%')
                .trim()
                .parse()
                .map_err(|_| syntax())?;
            if pct.is_nan() {
                return Err(syntax());
            }
            if pct <= 0.0 {
                return Err(positive());
            }
            return Ok(BatchSize::Percent(pct));
        }
        let n: i64 = spec.trim().parse().map_err(|_| syntax())?;
        u64::try_from(n)
            .ok()
            .filter(|n| *n > 0)
            .map(BatchSize::Count)
            .ok_or_else(positive)
    }

    /// How many minions run at a time out of `total` (Salt's `get_bnum`): a percentage below
    /// one minion rounds up to one, above it rounds down.
    pub fn window(&self, total: usize) -> usize {
        match *self {
            BatchSize::Count(n) => usize::try_from(n).unwrap_or(usize::MAX),
            BatchSize::Percent(p) => {
                let share = p / 100.0 * total as f64;
                let n = if share < 1.0 {
                    share.ceil()
                } else {
                    share.floor()
                };
                if n.is_finite() {
                    n as usize
                } else {
                    usize::MAX
                }
            }
        }
    }
}

/// What a finished minion means for the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Go on.
    Continue,
    /// `failhard` and this minion failed: start nothing more and stop now.
    Stop,
}

/// The walk of one batch run over the minions that answered, as Salt's `Batch.run`: at most
/// `window` minions run at once; a minion that finishes holds its slot `batch_wait` longer;
/// with `failhard` the first failure ends the run.
#[derive(Debug, Clone)]
pub struct Walk {
    window: usize,
    batch_wait: Duration,
    failhard: bool,
    to_run: VecDeque<String>,
    active: BTreeSet<String>,
    /// When each slot held by `batch_wait` frees, earliest first.
    waiting: VecDeque<Duration>,
    stopped: bool,
}

impl Walk {
    /// A walk over `minions` (started in this order), `window` at a time.
    pub fn new(minions: Vec<String>, window: usize, batch_wait: Duration, failhard: bool) -> Walk {
        Walk {
            window: window.max(1),
            batch_wait,
            failhard,
            to_run: minions.into(),
            active: BTreeSet::new(),
            waiting: VecDeque::new(),
            stopped: false,
        }
    }

    /// The minions to start at `now`, as one sub-batch (empty when no slot is free).
    pub fn next(&mut self, now: Duration) -> Vec<String> {
        while self.waiting.front().is_some_and(|t| *t <= now) {
            self.waiting.pop_front();
        }
        if self.stopped {
            return vec![];
        }
        let free = self
            .window
            .saturating_sub(self.active.len() + self.waiting.len());
        let n = free.min(self.to_run.len());
        let started: Vec<String> = self.to_run.drain(..n).collect();
        self.active.extend(started.iter().cloned());
        started
    }

    /// `id` finished at `now` (`failed`: a retcode above zero, as Salt judges it with
    /// `failhard`).
    pub fn finished(&mut self, id: &str, failed: bool, now: Duration) -> Step {
        if self.active.remove(id) && !self.batch_wait.is_zero() {
            self.waiting.push_back(now + self.batch_wait);
        }
        if self.failhard && failed {
            self.stopped = true;
            return Step::Stop;
        }
        Step::Continue
    }

    /// When a slot held by `batch_wait` frees while minions still wait to start: the driver
    /// calls [`Walk::next`] again then.
    pub fn wake_at(&self) -> Option<Duration> {
        if self.stopped || self.to_run.is_empty() {
            return None;
        }
        self.waiting.front().copied()
    }

    /// Nothing left to start or wait for.
    pub fn done(&self) -> bool {
        self.stopped || (self.to_run.is_empty() && self.active.is_empty())
    }

    /// Whether `failhard` stopped the run.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Minions never started.
    pub fn not_started(&self) -> usize {
        self.to_run.len()
    }

    /// The window size.
    pub fn window(&self) -> usize {
        self.window
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(spec: &str, total: usize, want: Result<usize, &str>) {
        let got = BatchSize::parse(spec)
            .map(|b| b.window(total))
            .map_err(|e| e.to_string());
        match want {
            Ok(n) => assert_eq!(got, Ok(n), "{spec} of {total}"),
            Err(part) => {
                let e = got.expect_err(spec);
                assert!(e.contains(part), "{spec}: {e}");
            }
        }
    }

    #[test]
    fn sizes_as_salt_reads_them() {
        check("10", 3, Ok(10));
        check(" 2 ", 3, Ok(2));
        check("50%", 4, Ok(2));
        check("%50", 4, Ok(2));
        check("50%", 3, Ok(1));
        check("10%", 3, Ok(1));
        check("150%", 3, Ok(4));
        check("33.4%", 3, Ok(1));
        check(
            "x",
            3,
            Err("Invalid batch data sent: x\nData must be in the form"),
        );
        check("x%", 3, Err("Invalid batch data sent: x%"));
        check("1.5", 3, Err("Invalid batch data sent: 1.5"));
        check("", 3, Err("Invalid batch data sent"));
        check("0", 3, Err("invalid batch size \"0\""));
        check("-2", 3, Err("at least one minion"));
        check("0%", 3, Err("at least one minion"));
    }

    fn ids(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("m{i}")).collect()
    }

    const T0: Duration = Duration::ZERO;

    #[test]
    fn a_window_slides_as_minions_finish() {
        let mut w = Walk::new(ids(5), 2, Duration::ZERO, false);
        assert_eq!(w.next(T0), ["m1", "m2"]);
        assert!(w.next(T0).is_empty(), "no slot is free");
        assert_eq!(w.finished("m2", true, T0), Step::Continue);
        assert_eq!(w.next(T0), ["m3"]);
        w.finished("m1", false, T0);
        w.finished("m3", false, T0);
        assert_eq!(w.next(T0), ["m4", "m5"]);
        assert!(!w.done());
        w.finished("m4", false, T0);
        w.finished("m5", false, T0);
        assert!(w.done());
        assert!(!w.stopped());
    }

    #[test]
    fn batch_wait_holds_a_slot() {
        let s = Duration::from_secs;
        let mut w = Walk::new(ids(3), 1, s(2), false);
        assert_eq!(w.next(s(0)), ["m1"]);
        w.finished("m1", false, s(1));
        assert!(w.next(s(2)).is_empty(), "m1's slot is held until 3s");
        assert_eq!(w.wake_at(), Some(s(3)));
        assert_eq!(w.next(s(3)), ["m2"]);
        assert_eq!(w.wake_at(), None, "nothing waits on a held slot");
        w.finished("m2", false, s(4));
        assert_eq!(w.next(s(6)), ["m3"]);
        w.finished("m3", false, s(7));
        assert!(w.done());
        assert_eq!(w.wake_at(), None);
    }

    #[test]
    fn failhard_stops_at_the_first_failure() {
        let mut w = Walk::new(ids(4), 2, Duration::ZERO, true);
        assert_eq!(w.next(T0), ["m1", "m2"]);
        assert_eq!(w.finished("m1", false, T0), Step::Continue);
        assert_eq!(w.finished("m2", true, T0), Step::Stop);
        assert!(w.next(T0).is_empty());
        assert!(w.done() && w.stopped());
        assert_eq!(w.not_started(), 2);
        let mut w = Walk::new(ids(2), 1, Duration::ZERO, false);
        w.next(T0);
        assert_eq!(w.finished("m1", true, T0), Step::Continue, "no failhard");
    }

    #[test]
    fn a_thousand_minions_walk_in_windows() {
        let mut w = Walk::new(
            ids(1000),
            BatchSize::Percent(10.0).window(1000),
            Duration::ZERO,
            false,
        );
        let mut batches = 0;
        while !w.done() {
            let b = w.next(T0);
            assert_eq!(b.len(), 100);
            for id in &b {
                w.finished(id, false, T0);
            }
            batches += 1;
        }
        assert_eq!(batches, 10);
    }
}
