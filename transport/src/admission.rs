//! Admission control for new connections.
//!
//! Handshakes cost the master most of the CPU a connection ever needs (key exchange,
//! signatures, certificate checks); when a whole fleet connects at once, working on all of them
//! together makes every one slow, past the peers' connect timeout, and the work is wasted as
//! they all start again. So at most [`Limits::max_handshakes`] run at once, in arrival order.
//!
//! A connection is refused (QUIC CONNECTION_REFUSED, which a minion answers with its jittered
//! busy wait) in two cases:
//! - when it arrives and the queue ahead of it would take longer than
//!   [`Limits::handshake_queue`] to clear at the pace turns have been ending ([`outlook`]): it
//!   learns at once, rather than after waiting the whole patience for nothing, so the wait it
//!   then spends away starts seconds earlier;
//! - when it has waited that patience without a turn (the pace slowed, or was not known yet).
//!
//! [`Limits::max_handshakes`]: crate::server::Limits::max_handshakes
//! [`Limits::handshake_queue`]: crate::server::Limits::handshake_queue

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::server::{HandshakeStats, Limits};

/// What to do with a connection that just arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outlook {
    /// Wait for a turn (at most the queue's patience).
    Queue,
    /// Refuse now: the connections ahead would not be through within the patience.
    Refuse,
}

/// Decides for a connection arriving behind `waiting` queued ones, with `turns` handshakes
/// allowed at once and turns lasting `mean_turn` lately (`None`: none has ended yet, so no
/// pace is known and the connection queues). By Little's law the newcomer gets its turn after
/// about `(waiting + 1) / turns` turn lengths.
pub(crate) fn outlook(
    waiting: usize,
    turns: usize,
    mean_turn: Option<Duration>,
    patience: Duration,
) -> Outlook {
    let Some(mean_turn) = mean_turn else {
        return Outlook::Queue;
    };
    let rounds = (waiting as f64 + 1.0) / turns.max(1) as f64;
    if mean_turn.mul_f64(rounds) > patience {
        Outlook::Refuse
    } else {
        Outlook::Queue
    }
}

/// The running mean of turn lengths (microseconds), weighting the newest `1/8`: recent enough
/// to follow a restart's wave, steady enough that one slow peer does not swing it. `0` is "no
/// turn ended yet".
fn mean_after(mean: u64, sample: u64) -> u64 {
    if mean == 0 {
        sample.max(1)
    } else {
        (mean - mean / 8 + sample / 8).max(1)
    }
}

/// The handshake admission of one master (shared by its QUIC and HTTP/2 listeners).
#[derive(Clone)]
pub(crate) struct Admission {
    turns: Arc<tokio::sync::Semaphore>,
    max: usize,
    patience: Duration,
    /// Connections waiting for a turn now.
    waiting: Arc<AtomicUsize>,
    /// [`mean_after`] over ended turns, in microseconds.
    mean_turn: Arc<AtomicU64>,
    stats: Arc<HandshakeStats>,
}

/// The longest a handshake holds its turn. A turn limits the CPU spent on handshakes at once,
/// and a handshake that has not completed in this time is waiting (on a slow or lossy link, or
/// on a peer that gave up while it was queued), not computing: it goes on without a turn, to
/// its end or the idle timeout, and the next connection gets the turn. Without this, peers that
/// left the queue hold every turn for the whole idle timeout and nobody is admitted.
pub(crate) const TURN_LIMIT: Duration = Duration::from_secs(2);

/// Runs `handshake` holding `turn` for at most [`TURN_LIMIT`]: the output, with the turn when
/// it was still held (the caller ends it with [`Turn::done`]), `None` when it outlasted it.
pub(crate) async fn within_turn<F: std::future::Future>(
    turn: Turn,
    handshake: F,
) -> (Option<Turn>, F::Output) {
    let mut handshake = std::pin::pin!(handshake);
    match tokio::time::timeout(TURN_LIMIT, &mut handshake).await {
        Ok(out) => (Some(turn), out),
        Err(_) => {
            turn.outlasted();
            (None, handshake.await)
        }
    }
}

/// The right to complete one handshake; ending it ([`Turn::done`], or dropping it, which
/// counts as a failure) lets the next one start.
pub(crate) struct Turn {
    _permit: tokio::sync::OwnedSemaphorePermit,
    since: Instant,
    mean_turn: Arc<AtomicU64>,
    stats: Arc<HandshakeStats>,
    ended: Ended,
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Completed,
    Failed,
    /// The handshake outlasted [`TURN_LIMIT`] and went on without its turn.
    Outlasted,
}

impl Turn {
    /// Ends the turn: the handshake completed (`ok`) or failed.
    pub(crate) fn done(mut self, ok: bool) {
        self.ended = if ok { Ended::Completed } else { Ended::Failed };
    }

    /// Ends the turn of a handshake still under way (see [`TURN_LIMIT`]).
    fn outlasted(mut self) {
        self.ended = Ended::Outlasted;
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let s = &self.stats;
        let took = self.since.elapsed().as_micros() as u64;
        s.handshake_micros.fetch_add(took, Ordering::Relaxed);
        let outcome = match self.ended {
            Ended::Completed => &s.completed,
            Ended::Failed => &s.failed,
            Ended::Outlasted => &s.outlasted,
        };
        outcome.fetch_add(1, Ordering::Relaxed);
        // Two turns ending together may each fold in their own sample over the same mean; one
        // sample lost now and then does not matter to a running mean.
        let mean = self.mean_turn.load(Ordering::Relaxed);
        self.mean_turn
            .store(mean_after(mean, took), Ordering::Relaxed);
    }
}

/// Counts a connection as waiting for as long as it lives (also when the wait is cancelled).
struct Waiting(Arc<AtomicUsize>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Admission {
    pub(crate) fn new(limits: &Limits, stats: Arc<HandshakeStats>) -> Admission {
        let max = limits.max_handshakes.max(1);
        Admission {
            turns: Arc::new(tokio::sync::Semaphore::new(max)),
            max,
            patience: limits.handshake_queue,
            waiting: Arc::default(),
            mean_turn: Arc::default(),
            stats,
        }
    }

    /// The mean turn length lately; `None` before the first turn ended.
    fn mean_turn(&self) -> Option<Duration> {
        match self.mean_turn.load(Ordering::Relaxed) {
            0 => None,
            m => Some(Duration::from_micros(m)),
        }
    }

    /// Waits for a turn; `None` when the connection is refused (see the module's text).
    pub(crate) async fn wait(&self) -> Option<Turn> {
        let queued = Instant::now();
        let ahead = self.waiting.fetch_add(1, Ordering::Relaxed);
        let waiting = Waiting(self.waiting.clone());
        let refuse = || {
            self.stats.refused_busy.fetch_add(1, Ordering::Relaxed);
            None
        };
        if self.turns.available_permits() == 0
            && outlook(ahead, self.max, self.mean_turn(), self.patience) == Outlook::Refuse
        {
            return refuse();
        }
        let permit = tokio::time::timeout(self.patience, self.turns.clone().acquire_owned()).await;
        drop(waiting);
        let Ok(Ok(permit)) = permit else {
            return refuse();
        };
        let since = Instant::now();
        let waited = since.duration_since(queued).as_micros() as u64;
        self.stats.wait_micros.fetch_add(waited, Ordering::Relaxed);
        Some(Turn {
            _permit: permit,
            since,
            mean_turn: self.mean_turn.clone(),
            stats: self.stats.clone(),
            ended: Ended::Failed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_queued_peer_is_admitted_or_refused_before_its_connect_timeout() {
        // The longest a connection waits for its turn, then holds it, by default.
        let longest = Limits::default().handshake_queue + TURN_LIMIT;
        assert!(
            longest < crate::client::CONNECT_TIMEOUT,
            "{longest:?} queued and handshaking reaches the clients' {:?} connect timeout",
            crate::client::CONNECT_TIMEOUT
        );
    }

    fn limits(max: usize, patience_ms: u64) -> Limits {
        Limits {
            max_handshakes: max,
            handshake_queue: ms(patience_ms),
            ..Limits::default()
        }
    }

    #[test]
    fn a_newcomer_queues_while_the_queue_clears_within_the_patience() {
        // 256 at once, turns of 300 ms, 4 s patience: about 3,400 may wait.
        let q = |waiting| outlook(waiting, 256, Some(ms(300)), ms(4_000));
        assert_eq!(q(0), Outlook::Queue);
        assert_eq!(q(3_000), Outlook::Queue);
        assert_eq!(q(3_412), Outlook::Queue);
        assert_eq!(q(3_413), Outlook::Refuse);
        assert_eq!(q(9_000), Outlook::Refuse);
    }

    #[test]
    fn without_a_known_pace_a_newcomer_queues() {
        assert_eq!(outlook(1_000_000, 1, None, ms(1)), Outlook::Queue);
    }

    #[test]
    fn slower_turns_or_fewer_of_them_refuse_sooner() {
        assert_eq!(outlook(99, 1, Some(ms(10)), ms(1_000)), Outlook::Queue);
        assert_eq!(outlook(99, 1, Some(ms(11)), ms(1_000)), Outlook::Refuse);
        assert_eq!(outlook(199, 2, Some(ms(10)), ms(1_000)), Outlook::Queue);
        assert_eq!(outlook(199, 1, Some(ms(10)), ms(1_000)), Outlook::Refuse);
        // Zero turns is treated as one, never a division by zero.
        assert_eq!(outlook(0, 0, Some(ms(10)), ms(1_000)), Outlook::Queue);
    }

    #[test]
    fn the_mean_turn_follows_the_newest_eighth() {
        assert_eq!(mean_after(0, 800), 800, "the first sample is the mean");
        assert_eq!(mean_after(0, 0), 1, "an instant turn still marks a pace");
        assert_eq!(mean_after(800, 1_600), 900);
        let mut m = 100;
        for _ in 0..64 {
            m = mean_after(m, 10_000);
        }
        assert!(m > 9_900, "a lasting change is followed: {m}");
    }

    #[tokio::test]
    async fn admission_counts_turns_refusals_and_outcomes() {
        let stats = Arc::new(HandshakeStats::default());
        let admission = Admission::new(&limits(1, 50), stats.clone());
        let first = admission
            .wait()
            .await
            .expect("the first gets a turn at once");
        assert!(
            admission.wait().await.is_none(),
            "no second turn while the first is held"
        );
        assert_eq!(stats.refused_busy.load(Ordering::Relaxed), 1);
        first.done(true);
        let second = admission.wait().await.expect("a turn once the first ended");
        drop(second);
        assert_eq!(stats.completed.load(Ordering::Relaxed), 1);
        assert_eq!(stats.failed.load(Ordering::Relaxed), 1, "dropped is failed");
        assert_eq!(stats.refused_busy.load(Ordering::Relaxed), 1);
        assert_eq!(admission.waiting.load(Ordering::Relaxed), 0);
    }

    /// A connection waiting for a turn in the background: whether it got one (ended at once).
    fn queue_behind(admission: &Admission) -> tokio::task::JoinHandle<bool> {
        let admission = admission.clone();
        tokio::spawn(async move { admission.wait().await.map(|t| t.done(true)).is_some() })
    }

    #[tokio::test]
    async fn a_queued_connection_gets_the_turn_a_finished_one_gives_back() {
        let stats = Arc::new(HandshakeStats::default());
        let admission = Admission::new(&limits(1, 5_000), stats.clone());
        let first = admission.wait().await.expect("a turn");
        let queued = queue_behind(&admission);
        tokio::time::sleep(ms(20)).await;
        assert_eq!(admission.waiting.load(Ordering::Relaxed), 1);
        first.done(true);
        assert!(queued.await.unwrap(), "the queued one got its turn");
        assert_eq!(stats.completed.load(Ordering::Relaxed), 2);
        assert!(
            stats.wait_micros.load(Ordering::Relaxed) >= 10_000,
            "it waited"
        );
        assert_eq!(admission.waiting.load(Ordering::Relaxed), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_handshake_outlasting_its_turn_gives_the_turn_to_the_next() {
        let stats = Arc::new(HandshakeStats::default());
        let admission = Admission::new(&limits(1, 60_000), stats.clone());
        let turn = admission.wait().await.expect("a turn");
        // A peer that went away: its handshake ends only at the idle timeout.
        let stuck = tokio::spawn(within_turn(
            turn,
            tokio::time::sleep(Duration::from_secs(10)),
        ));
        let asked = tokio::time::Instant::now();
        let next = admission.wait().await.expect("the next gets the turn");
        assert_eq!(
            asked.elapsed(),
            TURN_LIMIT,
            "after the turn limit, not the idle timeout"
        );
        assert_eq!(stats.outlasted.load(Ordering::Relaxed), 1);
        let (held, ()) = stuck.await.unwrap();
        assert!(
            held.is_none(),
            "the outlasting handshake no longer holds a turn"
        );
        let (held, ok) = within_turn(next, async { true }).await;
        held.expect("a quick handshake keeps its turn").done(ok);
        assert_eq!(stats.completed.load(Ordering::Relaxed), 1);
        assert_eq!(stats.failed.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn behind_a_queue_slower_than_the_patience_a_newcomer_is_refused_at_once() {
        let stats = Arc::new(HandshakeStats::default());
        let admission = Admission::new(&limits(1, 2_000), stats.clone());
        // Turns have lasted 1.5 s: one holding the turn and one waiting behind it means a
        // newcomer would wait about 3 s, past the 2 s patience.
        admission.mean_turn.store(1_500_000, Ordering::Relaxed);
        let _held = admission
            .wait()
            .await
            .expect("a free turn is taken at once");
        let queued = queue_behind(&admission);
        tokio::time::sleep(ms(20)).await;
        let asked = Instant::now();
        assert!(admission.wait().await.is_none(), "refused");
        assert!(
            asked.elapsed() < ms(1_000),
            "at once, not after the patience: {:?}",
            asked.elapsed()
        );
        assert_eq!(stats.refused_busy.load(Ordering::Relaxed), 1);
        queued.abort();
    }
}
