//! The minion's link to its master as a pure state machine (sans-IO, as linkerd2-proxy's
//! `reconnect`): `Disconnected { backoff }` → `Connecting` → `Subscribed`, and `Stopped`.
//!
//! It never touches a socket or a clock. The driver (`daemon.rs`) tells it what happened and
//! passes a random unit in [0, 1) for jitter; it answers what to do next. So the reconnect
//! policy is tested here with exact delays, and the driver only moves bytes.

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
}

impl Link {
    /// A disconnected link that backs off with `backoff` and waits `acceptance_wait` (Salt's
    /// `acceptance_wait_time`) while the master has not accepted our key.
    pub fn new(backoff: Backoff, acceptance_wait: Duration) -> Link {
        Link {
            state: State::Disconnected,
            backoff,
            acceptance_wait,
        }
    }

    /// Where the link stands.
    pub fn state(&self) -> State {
        self.state
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
                Action::Serve
            }
            Input::KeyRefused(_) => {
                // Acceptance is a person's decision, not an overload: no growing backoff.
                self.state = State::Disconnected;
                Action::DialAfter(self.acceptance_wait)
            }
            Input::ConnectFailed(_) | Input::SubscribeFailed | Input::StreamEnded => {
                self.state = State::Disconnected;
                Action::DialAfter(self.backoff.next_delay(unit))
            }
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
}
