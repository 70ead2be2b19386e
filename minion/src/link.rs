//! The minion's link to its master as a pure state machine (sans-IO, as linkerd2-proxy's
//! `reconnect`): `Disconnected { backoff }` → `Connecting` → `Subscribed`, and `Stopped`.
//!
//! It never touches a socket or a clock. The driver (`daemon.rs`) tells it what happened and
//! passes a random unit in [0, 1) for jitter; it answers what to do next. So the reconnect
//! policy is tested here with exact delays, and the driver only moves bytes.
//!
//! It also picks the master (Salt's `master_type: failover`): the driver holds the list and
//! dials `masters[link.master()]`. A master that cannot be reached, refuses the subscription
//! or is lost hands over to the next one at once; the backoff applies only once a whole round
//! of the list has failed since the last subscription. With one master that is the plain
//! reconnect backoff.

use std::time::Duration;

use saltq_transport::client::FailureKind;

use crate::backoff::Backoff;

/// Where the link stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No connection; waiting out a delay before the next dial (none before the first).
    Disconnected,
    /// Dialing the master or asking for the subscription.
    Connecting,
    /// The subscription is held; jobs arrive on it.
    Subscribed,
    /// Shut down; nothing more will be dialed.
    Stopped,
}

/// The master's key state, sent with a refused subscription (`saltq_transport::KEY_STATE_HEADER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyState {
    /// Not accepted yet (`minions_pre`).
    Pending,
    /// Rejected (`minions_rejected`).
    Rejected,
    /// Denied: another key is accepted under this id (`minions_denied`).
    Denied,
}

impl KeyState {
    /// Parses the header's value; an unknown value counts as pending, so the minion keeps asking.
    pub fn parse(s: &str) -> KeyState {
        match s {
            "rejected" => KeyState::Rejected,
            "denied" => KeyState::Denied,
            _ => KeyState::Pending,
        }
    }
}

/// What happened to the link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// The connection to the master is up (TLS done); the subscription is to be asked for.
    Connected,
    /// The dial failed, classified.
    ConnectFailed(FailureKind),
    /// The master holds our subscription.
    Subscribed,
    /// The master refused the subscription because of our key's state.
    KeyRefused(KeyState),
    /// The master refused the subscription for another reason.
    SubscribeFailed,
    /// The subscription ended (the master went away or closed it).
    StreamEnded,
    /// SIGTERM, Ctrl-C, or the swarm stopping.
    Shutdown,
}

/// What the driver is to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Dial the master now.
    Dial,
    /// Wait this long, then dial (back off, or wait for the key to be accepted).
    DialAfter(Duration),
    /// Ask the master for the subscription on the new connection.
    Subscribe,
    /// Serve the subscription until it ends.
    Serve,
    /// Stop: end running jobs, drop the connection, return.
    Stop,
}

/// The link's state machine.
#[derive(Debug, Clone)]
pub struct Link {
    state: State,
    backoff: Backoff,
    acceptance_wait: Duration,
    /// How many masters there are to go through (one unless `master_type: failover`).
    masters: usize,
    /// The master dialed or served: an index into the driver's list.
    current: usize,
    /// Masters that failed in a row since the last subscription; a whole round backs off.
    failed: usize,
    /// Salt's `retry_dns`: an unresolved name waits this long on the same master.
    retry_dns: Option<Duration>,
    /// Salt's `random_reauth_delay`: a master too busy for our handshake is dialed again after
    /// a random wait up to this (zero: the backoff).
    busy_wait: Duration,
}

impl Link {
    /// A disconnected link to one master that backs off with `backoff` and waits
    /// `acceptance_wait` (Salt's `acceptance_wait_time`) while the master has not accepted
    /// our key.
    pub fn new(backoff: Backoff, acceptance_wait: Duration) -> Link {
        Link {
            state: State::Disconnected,
            backoff,
            acceptance_wait,
            masters: 1,
            current: 0,
            failed: 0,
            retry_dns: None,
            busy_wait: Duration::ZERO,
        }
    }

    /// Goes through `n` masters in order, the next when one fails (at least one).
    pub fn with_masters(mut self, n: usize) -> Link {
        self.masters = n.max(1);
        self
    }

    /// Waits `wait` after a name that does not resolve, instead of the backoff (Salt's
    /// `retry_dns`; the config leaves it out with failover, which moves on instead).
    pub fn with_retry_dns(mut self, wait: Option<Duration>) -> Link {
        self.retry_dns = wait;
        self
    }

    /// After the master turned the connection away as busy (its handshake admission was
    /// full), waits a random time up to `wait` before dialing it again. A whole fleet that lost
    /// its master at once (a restart) then comes back spread over `wait`, at a rate the master
    /// can admit, instead of returning within the backoff's few seconds and being turned away
    /// again and again. Masters not refusing anyone are dialed as before.
    pub fn with_busy_wait(mut self, wait: Duration) -> Link {
        self.busy_wait = wait;
        self
    }

    /// Where the link stands.
    pub fn state(&self) -> State {
        self.state
    }

    /// The master to dial (or being served): an index into the driver's list.
    pub fn master(&self) -> usize {
        self.current
    }

    /// The first step: dial at once.
    pub fn start(&mut self) -> Action {
        self.state = State::Connecting;
        Action::Dial
    }

    /// Feeds what happened; `unit` in [0, 1) picks the jitter of a backoff delay.
    pub fn on(&mut self, input: Input, unit: f64) -> Action {
        if self.state == State::Stopped {
            return Action::Stop;
        }
        match input {
            Input::Shutdown => {
                self.state = State::Stopped;
                Action::Stop
            }
            Input::Connected => {
                self.state = State::Connecting;
                Action::Subscribe
            }
            Input::Subscribed => {
                self.state = State::Subscribed;
                self.backoff.reset();
                self.failed = 0;
                Action::Serve
            }
            Input::KeyRefused(_) => {
                // Acceptance is a person's decision, not an overload: no growing backoff. The
                // master answered, so the round starts over; it stays the one we ask (a
                // cluster's replicas share the key set: another would say the same).
                self.state = State::Disconnected;
                self.failed = 0;
                Action::DialAfter(self.acceptance_wait)
            }
            Input::ConnectFailed(FailureKind::Resolve) if self.retry_dns.is_some() => {
                // The name may appear (DNS not up yet): ask again after retry_dns, without
                // growing the backoff.
                self.state = State::Disconnected;
                Action::DialAfter(self.retry_dns.unwrap_or_default())
            }
            Input::ConnectFailed(FailureKind::Busy)
                if !self.busy_wait.is_zero() && self.failed + 1 >= self.masters =>
            {
                // Every master tried in this round is busy: a wait spread uniformly over the
                // busy wait (full jitter), never shorter than the backoff's step (itself
                // growing), so that no one dials again at once.
                self.failed = 0;
                self.current = (self.current + 1) % self.masters;
                self.state = State::Disconnected;
                let spread = self.busy_wait.mul_f64(unit.clamp(0.0, 1.0));
                let step = self.backoff.next_delay(unit).min(self.busy_wait);
                Action::DialAfter(spread.max(step))
            }
            Input::ConnectFailed(_) | Input::SubscribeFailed | Input::StreamEnded => {
                self.move_on(unit)
            }
        }
    }

    /// The current master failed: the next one at once, or, when every master has failed in
    /// a row, the next one after the backoff.
    fn move_on(&mut self, unit: f64) -> Action {
        self.failed += 1;
        self.current = (self.current + 1) % self.masters;
        if self.failed < self.masters {
            self.state = State::Connecting;
            Action::Dial
        } else {
            self.failed = 0;
            self.state = State::Disconnected;
            Action::DialAfter(self.backoff.next_delay(unit))
        }
    }

    /// The wait before a dial is over.
    pub fn waited(&mut self) -> Action {
        if self.state == State::Stopped {
            return Action::Stop;
        }
        self.state = State::Connecting;
        Action::Dial
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn link(randomize: bool) -> Link {
        Link::new(Backoff::new(ms(1000), ms(10_000), randomize), ms(10_000))
    }

    /// Fails `n` dials in a row, returning the delays asked for.
    fn fail(l: &mut Link, n: usize, unit: f64) -> Vec<u64> {
        (0..n)
            .map(|_| {
                let a = l.on(Input::ConnectFailed(FailureKind::Refused), unit);
                assert_eq!(l.state(), State::Disconnected);
                assert_eq!(l.waited(), Action::Dial);
                match a {
                    Action::DialAfter(d) => d.as_millis() as u64,
                    other => panic!("expected a delay, got {other:?}"),
                }
            })
            .collect()
    }

    #[test]
    fn first_dial_is_immediate() {
        let mut l = link(true);
        assert_eq!(l.state(), State::Disconnected);
        assert_eq!(l.start(), Action::Dial);
        assert_eq!(l.state(), State::Connecting);
        assert_eq!(l.on(Input::Connected, 0.5), Action::Subscribe);
        assert_eq!(l.on(Input::Subscribed, 0.5), Action::Serve);
        assert_eq!(l.state(), State::Subscribed);
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let mut l = link(false);
        l.start();
        assert_eq!(
            fail(&mut l, 6, 0.0),
            vec![1000, 2000, 4000, 8000, 10_000, 10_000]
        );
    }

    #[test]
    fn jitter_spreads_each_delay_over_its_upper_half() {
        let mut low = link(true);
        let mut high = link(true);
        low.start();
        high.start();
        assert_eq!(fail(&mut low, 5, 0.0), vec![500, 1000, 2000, 4000, 5000]);
        assert_eq!(
            fail(&mut high, 5, 0.999_999),
            vec![999, 1999, 3999, 7999, 9999]
        );
        // A fleet drawing different units does not dial in lockstep.
        let mut a = link(true);
        let mut b = link(true);
        a.start();
        b.start();
        assert_ne!(fail(&mut a, 3, 0.1), fail(&mut b, 3, 0.9));
    }

    #[test]
    fn a_refused_subscription_and_a_lost_stream_back_off_too() {
        let mut l = link(false);
        l.start();
        assert_eq!(l.on(Input::Connected, 0.0), Action::Subscribe);
        assert_eq!(
            l.on(Input::SubscribeFailed, 0.0),
            Action::DialAfter(ms(1000))
        );
        l.waited();
        l.on(Input::Connected, 0.0);
        assert_eq!(
            l.on(Input::SubscribeFailed, 0.0),
            Action::DialAfter(ms(2000))
        );
    }

    #[test]
    fn a_busy_master_is_dialed_again_spread_over_the_busy_wait() {
        let mut l = link(true).with_busy_wait(ms(10_000));
        l.start();
        let busy = || Input::ConnectFailed(FailureKind::Busy);
        // Spread uniformly over the whole wait, never below the backoff's step (1 s doubling,
        // jittered over its upper half).
        assert_eq!(l.on(busy(), 0.5), Action::DialAfter(ms(5_000)));
        assert_eq!(l.waited(), Action::Dial);
        assert_eq!(l.on(busy(), 0.9), Action::DialAfter(ms(9_000)));
        assert_eq!(l.waited(), Action::Dial);
        assert_eq!(l.on(busy(), 0.0), Action::DialAfter(ms(2_000)));
        // Other failures keep the plain backoff, which went on growing; a subscription
        // resets it.
        l.waited();
        assert_eq!(
            l.on(Input::ConnectFailed(FailureKind::TimedOut), 0.0),
            Action::DialAfter(ms(4_000))
        );
        l.waited();
        l.on(Input::Connected, 0.0);
        assert_eq!(l.on(Input::Subscribed, 0.0), Action::Serve);
        assert_eq!(l.on(busy(), 0.0), Action::DialAfter(ms(500)));
    }

    #[test]
    fn a_busy_master_without_a_busy_wait_is_the_backoff_and_failover_moves_on() {
        let mut l = link(false);
        l.start();
        let busy = || Input::ConnectFailed(FailureKind::Busy);
        assert_eq!(l.on(busy(), 0.7), Action::DialAfter(ms(1_000)));
        // With two masters, a busy first one moves on to the second at once; both busy wait.
        let mut f = link(false).with_masters(2).with_busy_wait(ms(10_000));
        f.start();
        assert_eq!(f.on(busy(), 0.3), Action::Dial);
        assert_eq!(f.master(), 1);
        assert_eq!(f.on(busy(), 0.3), Action::DialAfter(ms(3_000)));
        assert_eq!(f.master(), 0);
    }

    #[test]
    fn a_subscription_resets_the_backoff() {
        let mut l = link(false);
        l.start();
        fail(&mut l, 4, 0.0);
        l.on(Input::Connected, 0.0);
        assert_eq!(l.on(Input::Subscribed, 0.0), Action::Serve);
        assert_eq!(l.on(Input::StreamEnded, 0.0), Action::DialAfter(ms(1000)));
        assert_eq!(l.state(), State::Disconnected);
        assert_eq!(l.waited(), Action::Dial);
        assert_eq!(fail(&mut l, 1, 0.0), vec![2000]);
    }

    #[test]
    fn a_pending_key_waits_acceptance_wait_time_without_growing_the_backoff() {
        let mut l = link(false);
        l.start();
        fail(&mut l, 2, 0.0); // 1000, 2000
        for state in [KeyState::Pending, KeyState::Rejected, KeyState::Denied] {
            for _ in 0..3 {
                l.on(Input::Connected, 0.0);
                assert_eq!(
                    l.on(Input::KeyRefused(state), 0.0),
                    Action::DialAfter(ms(10_000))
                );
                assert_eq!(l.state(), State::Disconnected);
                assert_eq!(l.waited(), Action::Dial);
            }
        }
        // The backoff carries on from where the failures left it.
        assert_eq!(fail(&mut l, 1, 0.0), vec![4000]);
    }

    #[test]
    fn key_state_header_values() {
        assert_eq!(KeyState::parse("pending"), KeyState::Pending);
        assert_eq!(KeyState::parse("rejected"), KeyState::Rejected);
        assert_eq!(KeyState::parse("denied"), KeyState::Denied);
        assert_eq!(KeyState::parse("something new"), KeyState::Pending);
    }

    #[test]
    fn shutdown_stops_from_every_state_and_stays_stopped() {
        type Reach = fn(&mut Link);
        let reach: [(&str, Reach); 5] = [
            ("disconnected before start", |_| {}),
            ("connecting", |l| {
                l.start();
            }),
            ("waiting after a failure", |l| {
                l.start();
                l.on(Input::ConnectFailed(FailureKind::TimedOut), 0.0);
            }),
            ("waiting for key acceptance", |l| {
                l.start();
                l.on(Input::Connected, 0.0);
                l.on(Input::KeyRefused(KeyState::Pending), 0.0);
            }),
            ("subscribed", |l| {
                l.start();
                l.on(Input::Connected, 0.0);
                l.on(Input::Subscribed, 0.0);
            }),
        ];
        for (name, go) in reach {
            let mut l = link(true);
            go(&mut l);
            assert_eq!(l.on(Input::Shutdown, 0.5), Action::Stop, "{name}");
            assert_eq!(l.state(), State::Stopped, "{name}");
            // Nothing brings a stopped link back.
            assert_eq!(l.waited(), Action::Stop, "{name}");
            assert_eq!(l.on(Input::Connected, 0.5), Action::Stop, "{name}");
            assert_eq!(l.on(Input::StreamEnded, 0.5), Action::Stop, "{name}");
            assert_eq!(l.state(), State::Stopped, "{name}");
        }
    }

    /// A link over `n` masters, without jitter: delays are exact.
    fn over(n: usize) -> Link {
        link(false).with_masters(n)
    }

    /// What the driver would do: `Dial(master)` now, or `After(ms, master)`.
    #[derive(Debug, PartialEq, Eq)]
    enum Step {
        Dial(usize),
        After(u64, usize),
        Subscribe,
        Serve,
    }

    /// Feeds `input` and says what is dialed next, and where.
    fn step(l: &mut Link, input: Input) -> Step {
        match l.on(input, 0.0) {
            Action::Dial => {
                assert_eq!(l.state(), State::Connecting);
                Step::Dial(l.master())
            }
            Action::DialAfter(d) => {
                assert_eq!(l.state(), State::Disconnected);
                Step::After(d.as_millis() as u64, l.master())
            }
            Action::Subscribe => Step::Subscribe,
            Action::Serve => Step::Serve,
            Action::Stop => panic!("stopped"),
        }
    }

    fn refused() -> Input {
        Input::ConnectFailed(FailureKind::Refused)
    }

    #[test]
    fn failover_tries_each_master_at_once_and_backs_off_after_a_full_round() {
        let mut l = over(3);
        assert_eq!(l.start(), Action::Dial);
        assert_eq!(l.master(), 0);
        assert_eq!(step(&mut l, refused()), Step::Dial(1));
        assert_eq!(
            step(&mut l, Input::ConnectFailed(FailureKind::TimedOut)),
            Step::Dial(2)
        );
        // Every master failed: back off, then start the next round where this one started.
        assert_eq!(step(&mut l, refused()), Step::After(1000, 0));
        assert_eq!(l.waited(), Action::Dial);
        assert_eq!(l.master(), 0);
        assert_eq!(step(&mut l, refused()), Step::Dial(1));
        assert_eq!(step(&mut l, refused()), Step::Dial(2));
        // The backoff grows round by round, not master by master.
        assert_eq!(step(&mut l, refused()), Step::After(2000, 0));
        l.waited();
        assert_eq!(step(&mut l, refused()), Step::Dial(1));
        assert_eq!(step(&mut l, Input::Connected), Step::Subscribe);
        assert_eq!(step(&mut l, Input::Subscribed), Step::Serve);
        assert_eq!(l.master(), 1);
        assert_eq!(l.state(), State::Subscribed);
    }

    #[test]
    fn failover_stays_on_a_working_master_and_moves_on_when_it_is_lost() {
        let mut l = over(3);
        l.start();
        step(&mut l, Input::Connected);
        assert_eq!(step(&mut l, Input::Subscribed), Step::Serve);
        assert_eq!(l.master(), 0);
        // Lost: the next master at once, no backoff.
        assert_eq!(step(&mut l, Input::StreamEnded), Step::Dial(1));
        step(&mut l, Input::Connected);
        step(&mut l, Input::Subscribed);
        assert_eq!(step(&mut l, Input::StreamEnded), Step::Dial(2));
        // The lost master counts in the round: two more failures complete it.
        assert_eq!(step(&mut l, refused()), Step::Dial(0));
        assert_eq!(step(&mut l, refused()), Step::After(1000, 1));
        l.waited();
        // A subscription resets both the round and the backoff.
        step(&mut l, Input::Connected);
        step(&mut l, Input::Subscribed);
        assert_eq!(step(&mut l, Input::StreamEnded), Step::Dial(2));
        assert_eq!(step(&mut l, refused()), Step::Dial(0));
        assert_eq!(step(&mut l, refused()), Step::After(1000, 1));
    }

    #[test]
    fn failover_moves_on_when_a_master_refuses_the_subscription() {
        let mut l = over(2);
        l.start();
        step(&mut l, Input::Connected);
        assert_eq!(step(&mut l, Input::SubscribeFailed), Step::Dial(1));
        step(&mut l, Input::Connected);
        assert_eq!(step(&mut l, Input::SubscribeFailed), Step::After(1000, 0));
    }

    #[test]
    fn failover_waits_for_key_acceptance_on_the_same_master() {
        let mut l = over(3);
        l.start();
        assert_eq!(step(&mut l, refused()), Step::Dial(1));
        step(&mut l, Input::Connected);
        for _ in 0..3 {
            assert_eq!(
                step(&mut l, Input::KeyRefused(KeyState::Pending)),
                Step::After(10_000, 1)
            );
            assert_eq!(l.waited(), Action::Dial);
            assert_eq!(l.master(), 1);
            step(&mut l, Input::Connected);
        }
        // The master answered: the round starts over from it, and the backoff is untouched.
        assert_eq!(step(&mut l, Input::SubscribeFailed), Step::Dial(2));
        assert_eq!(step(&mut l, refused()), Step::Dial(0));
        assert_eq!(step(&mut l, refused()), Step::After(1000, 1));
    }

    #[test]
    fn any_master_failing_in_a_row_tries_every_master_once_then_backs_off() {
        for n in 1..=5 {
            for first in 0..n {
                let mut l = over(n);
                l.start();
                // Reach `first` through failures, then succeed there.
                while l.master() != first {
                    if let Step::After(..) = step(&mut l, refused()) {
                        l.waited();
                    }
                }
                step(&mut l, Input::Connected);
                step(&mut l, Input::Subscribed);
                let mut dialed = vec![first];
                let mut input = Input::StreamEnded;
                let last = loop {
                    match step(&mut l, input) {
                        Step::Dial(m) => dialed.push(m),
                        other => break other,
                    }
                    input = refused();
                };
                dialed.sort_unstable();
                assert_eq!(dialed, (0..n).collect::<Vec<_>>(), "n={n} first={first}");
                // The next round starts again where this one did.
                assert_eq!(last, Step::After(1000, first), "n={n} first={first}");
            }
        }
    }

    #[test]
    fn an_unresolved_name_waits_retry_dns_without_growing_the_backoff() {
        let resolve = || Input::ConnectFailed(FailureKind::Resolve);
        let mut l = link(false).with_retry_dns(Some(ms(30_000)));
        l.start();
        assert_eq!(fail(&mut l, 2, 0.0), vec![1000, 2000]);
        for _ in 0..3 {
            assert_eq!(step(&mut l, resolve()), Step::After(30_000, 0));
            assert_eq!(l.waited(), Action::Dial);
        }
        assert_eq!(fail(&mut l, 1, 0.0), vec![4000]);
        // Without retry_dns (0, or failover) an unresolved name is a failure like any other.
        let mut l = link(false);
        l.start();
        assert_eq!(step(&mut l, resolve()), Step::After(1000, 0));
        let mut l = over(2);
        l.start();
        assert_eq!(step(&mut l, resolve()), Step::Dial(1));
        assert_eq!(step(&mut l, resolve()), Step::After(1000, 0));
    }

    #[test]
    fn one_master_is_the_plain_reconnect_backoff() {
        let mut l = over(1);
        l.start();
        assert_eq!(step(&mut l, refused()), Step::After(1000, 0));
        l.waited();
        step(&mut l, Input::Connected);
        step(&mut l, Input::Subscribed);
        assert_eq!(step(&mut l, Input::StreamEnded), Step::After(1000, 0));
        // Zero masters is taken as one.
        let mut l = over(0);
        l.start();
        assert_eq!(step(&mut l, refused()), Step::After(1000, 0));
    }

    #[test]
    fn shutdown_stops_a_failover_link_between_masters() {
        let mut l = over(3);
        l.start();
        assert_eq!(step(&mut l, refused()), Step::Dial(1));
        assert_eq!(l.on(Input::Shutdown, 0.0), Action::Stop);
        assert_eq!(l.on(refused(), 0.0), Action::Stop);
        assert_eq!(l.waited(), Action::Stop);
        assert_eq!(l.state(), State::Stopped);
    }
}
