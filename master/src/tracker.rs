//! Following one job to its end, without I/O: who is expected, who returned, when the wait
//! ends, who must be asked `saltutil.find_job`, and why each silent minion did not return.
//!
//! As quinn-proto is to quinn: a [`Tracker`] is fed returns, find_job replies and `now`, and
//! answers what to do next ([`Step`]); the async driver (`follow.rs`) only moves messages and
//! sleeps until [`Tracker::deadline`]. Salt's rule: after `timeout`, the connected minions that
//! have not returned are asked whether they still run the job; while any says yes, the wait
//! starts again; the rest are reported `No response` (connected) or `Not connected`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

/// What the driver should do after [`Tracker::poll`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing until [`Tracker::deadline`] or the next message.
    Wait,
    /// Ask these minions (sorted) whether they still run the job, then report who was
    /// actually sent the question with [`Tracker::asked`].
    FindJob(Vec<String>),
    /// The job is over: every expected minion returned, or the wait ran out.
    Done,
}

/// Why an expected minion did not return, as the CLI prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Silence {
    /// Connected but silent (Salt's `[No response]`); also listed ids without an accepted key.
    NoResponse,
    /// Not connected when the wait ended (Salt's `[Not connected]`).
    NotConnected,
    /// Connected to a replica of the cluster that could not be reached with the job.
    Unreachable,
}

/// The end of a followed job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// How many expected minions returned.
    pub returned: u32,
    /// Who did not return and why: the expected ones sorted, then the listed ids without a key.
    pub silent: Vec<(String, Silence)>,
}

/// Where a followed job stands.
#[derive(Debug)]
enum Phase {
    /// Waiting for returns until `until`.
    Waiting { until: Instant },
    /// A find_job round: `asked` have not answered yet, `running` said they still run the job.
    Asking {
        until: Instant,
        asked: HashSet<String>,
        running: usize,
    },
    /// Over.
    Done,
}

/// One followed job.
#[derive(Debug)]
pub struct Tracker {
    /// Expected minions that have not returned.
    pending: BTreeSet<String>,
    /// Listed ids without an accepted key: never sent the job, reported as not returned.
    missing: Vec<String>,
    /// Expected minions whose replica could not be reached with the job.
    unreachable: HashSet<String>,
    returned: u32,
    timeout: Duration,
    /// How long a find_job round waits for answers; `None` when the job is not to be asked
    /// after (a runner's gather simply stops at the timeout).
    gather: Option<Duration>,
    phase: Phase,
    /// A top master's wait for its syndics (`order_masters`), if it is one.
    syndic: Option<SyndicWait>,
}

/// Salt's rule for a top master (`get_iter_returns` with `order_masters`): the wait is not
/// over before `syndic_wait` has passed, even when every minion known so far returned, since
/// a syndic may still report minions of its own; a return from any minion counts.
#[derive(Debug)]
struct SyndicWait {
    /// Start + `syndic_wait`.
    until: Instant,
    /// `syndic_wait`, which a find_job round also waits for on top of `gather` (Salt).
    wait: Duration,
    /// The syndic that reported each of its minions.
    owner: HashMap<String, String>,
    /// Every minion that returned, so a syndic's late list does not wait on them again.
    returned: HashSet<String>,
    /// `until` has been seen passing by [`Tracker::poll`].
    passed: bool,
}

impl Tracker {
    /// Follows a job expecting `expected`, asking find_job after `timeout` and waiting
    /// `gather` for the answers, as the salt command does.
    pub fn new(
        expected: impl IntoIterator<Item = String>,
        missing: Vec<String>,
        timeout: Duration,
        gather: Duration,
        now: Instant,
    ) -> Tracker {
        let pending: BTreeSet<String> = expected.into_iter().collect();
        let phase = if pending.is_empty() {
            Phase::Done
        } else {
            Phase::Waiting {
                until: now + timeout,
            }
        };
        Tracker {
            pending,
            missing,
            unreachable: HashSet::new(),
            returned: 0,
            timeout,
            gather: Some(gather),
            phase,
            syndic: None,
        }
    }

    /// Follows the job as a top master does: not over before `wait` from `now`, whatever
    /// returned, and open to the minions syndics report ([`Tracker::on_syndic_expect`]).
    pub fn with_syndics(mut self, wait: Duration, now: Instant) -> Tracker {
        if matches!(self.phase, Phase::Done) {
            self.phase = Phase::Waiting {
                until: now + self.timeout,
            };
        }
        self.syndic = Some(SyndicWait {
            until: now + wait,
            wait,
            owner: HashMap::new(),
            returned: HashSet::new(),
            passed: false,
        });
        self
    }

    /// Syndic `syndic` published the job to `minions` (Salt's `syndic/<id>/<jid>` event):
    /// those that have not returned yet are waited for too.
    pub fn on_syndic_expect(&mut self, syndic: &str, minions: &[String]) {
        let Some(sw) = &mut self.syndic else {
            return;
        };
        if matches!(self.phase, Phase::Done) {
            return;
        }
        for m in minions {
            if sw.returned.contains(m) {
                continue;
            }
            self.missing.retain(|x| x != m);
            self.pending.insert(m.clone());
            sw.owner.insert(m.clone(), syndic.to_owned());
        }
    }

    /// Follows a job until every expected minion returned or `timeout` passed, with no find_job.
    pub fn plain(
        expected: impl IntoIterator<Item = String>,
        timeout: Duration,
        now: Instant,
    ) -> Tracker {
        Tracker {
            gather: None,
            ..Tracker::new(expected, vec![], timeout, Duration::ZERO, now)
        }
    }

    /// A return from `id` arrived. True when it is the first from an expected minion: the
    /// driver passes it on; a repeat or a stranger's is dropped.
    pub fn on_return(&mut self, id: &str) -> bool {
        if let Some(sw) = &mut self.syndic {
            // As Salt's top master: any minion's first return for the job counts.
            if matches!(self.phase, Phase::Done) || !sw.returned.insert(id.to_owned()) {
                return false;
            }
            self.pending.remove(id);
            self.missing.retain(|x| x != id);
            self.returned += 1;
            if let Phase::Asking { asked, .. } = &mut self.phase {
                asked.remove(id);
            }
            return true;
        }
        if matches!(self.phase, Phase::Done) || !self.pending.remove(id) {
            return false;
        }
        self.returned += 1;
        if let Phase::Asking { asked, .. } = &mut self.phase {
            asked.remove(id);
        }
        if self.pending.is_empty() {
            self.phase = Phase::Done;
        }
        true
    }

    /// These expected minions could not be reached (their replica did not answer); unless
    /// they return after all, they are reported [`Silence::Unreachable`].
    pub fn unreachable(&mut self, ids: impl IntoIterator<Item = String>) {
        self.unreachable.extend(ids);
    }

    /// Who was actually sent the find_job question (some may have gone away meanwhile);
    /// minions below syndics were asked through them.
    pub fn asked(&mut self, sent: impl IntoIterator<Item = String>) {
        if let Phase::Asking { asked, .. } = &mut self.phase {
            let sent: HashSet<String> = sent.into_iter().collect();
            let below = |id: &str| {
                self.syndic
                    .as_ref()
                    .is_some_and(|s| s.owner.contains_key(id))
            };
            asked.retain(|id| sent.contains(id) || below(id));
        }
    }

    /// `id` answered find_job: `running` when its answer names the job.
    pub fn on_find_job_reply(&mut self, id: &str, running: bool) {
        if let Phase::Asking {
            asked, running: n, ..
        } = &mut self.phase
            && asked.remove(id)
            && running
            && self.pending.contains(id)
        {
            *n += 1;
        }
    }

    /// What to do at `now`; `connected` tells whether a minion has a live subscription.
    pub fn poll(&mut self, now: Instant, connected: impl Fn(&str) -> bool) -> Step {
        loop {
            if let Some(step) = self.syndic_step(now) {
                return step;
            }
            match &self.phase {
                Phase::Done => return Step::Done,
                Phase::Waiting { until } if now < *until => return Step::Wait,
                Phase::Waiting { .. } => {
                    let Some(gather) = self.gather else {
                        self.phase = Phase::Done;
                        continue;
                    };
                    // A top master asks its syndics' minions too: the question goes down
                    // the syndics as the job did (Salt's `gather_job_info` with
                    // `order_masters`), and waits `syndic_wait` longer for the answers.
                    let below = |id: &str| {
                        self.syndic
                            .as_ref()
                            .is_some_and(|s| s.owner.contains_key(id))
                    };
                    let ask: Vec<String> = self
                        .pending
                        .iter()
                        .filter(|id| connected(id) || below(id))
                        .cloned()
                        .collect();
                    if ask.is_empty() {
                        self.phase = Phase::Done;
                        continue;
                    }
                    let extra = self.syndic.as_ref().map_or(Duration::ZERO, |s| s.wait);
                    self.phase = Phase::Asking {
                        until: now + gather + extra,
                        asked: ask.iter().cloned().collect(),
                        running: 0,
                    };
                    return Step::FindJob(ask);
                }
                Phase::Asking {
                    until,
                    asked,
                    running,
                } => {
                    if now < *until && !asked.is_empty() {
                        return Step::Wait;
                    }
                    self.phase = if *running == 0 {
                        Phase::Done
                    } else {
                        Phase::Waiting {
                            until: now + self.timeout,
                        }
                    };
                }
            }
        }
    }

    /// A top master's decision before the usual ones: over once every known minion
    /// returned (at least one) and `syndic_wait` passed; waiting while it has not passed.
    fn syndic_step(&mut self, now: Instant) -> Option<Step> {
        let sw = self.syndic.as_mut()?;
        if now >= sw.until {
            sw.passed = true;
        }
        if matches!(self.phase, Phase::Done) || !self.pending.is_empty() {
            return None;
        }
        if !sw.passed {
            return Some(Step::Wait);
        }
        if self.returned > 0 {
            self.phase = Phase::Done;
            return Some(Step::Done);
        }
        None
    }

    /// When [`Tracker::poll`] must be called again, if no message comes first.
    pub fn deadline(&self) -> Option<Instant> {
        let until = match &self.phase {
            Phase::Waiting { until } | Phase::Asking { until, .. } => *until,
            Phase::Done => return None,
        };
        match &self.syndic {
            Some(sw) if self.pending.is_empty() && !sw.passed => Some(until.min(sw.until)),
            _ => Some(until),
        }
    }

    /// Whether a find_job round is under way (its replies still matter).
    pub fn is_asking(&self) -> bool {
        matches!(self.phase, Phase::Asking { .. })
    }

    /// Whether the job is over.
    #[cfg(test)]
    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    /// Ends the job (early when the caller went away) and says who did not return and why.
    pub fn finish(self, connected: impl Fn(&str) -> bool) -> Outcome {
        let mut silent: Vec<(String, Silence)> = self
            .pending
            .into_iter()
            .map(|id| {
                let below = self
                    .syndic
                    .as_ref()
                    .is_some_and(|s| s.owner.contains_key(&id));
                let why = if self.unreachable.contains(&id) {
                    Silence::Unreachable
                } else if below || connected(&id) {
                    Silence::NoResponse
                } else {
                    Silence::NotConnected
                };
                (id, why)
            })
            .collect();
        silent.extend(self.missing.into_iter().map(|id| (id, Silence::NoResponse)));
        Outcome {
            returned: self.returned,
            silent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(5);
    const G: Duration = Duration::from_secs(10);

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("m{i:05}")).collect()
    }

    fn all(_: &str) -> bool {
        true
    }

    #[test]
    fn every_return_ends_the_job_before_the_timeout() {
        let t0 = Instant::now();
        let mut t = Tracker::new(ids(3), vec![], T, G, t0);
        assert_eq!(t.poll(t0, all), Step::Wait);
        assert_eq!(t.deadline(), Some(t0 + T));
        assert!(t.on_return("m00000"));
        assert!(!t.on_return("m00000"), "a repeat is dropped");
        assert!(
            !t.on_return("stranger"),
            "a minion that was not sent the job is dropped"
        );
        assert!(t.on_return("m00001"));
        assert!(t.on_return("m00002"));
        assert!(t.is_done());
        assert_eq!(t.poll(t0, all), Step::Done);
        assert_eq!(t.deadline(), None);
        let out = t.finish(all);
        assert_eq!(out.returned, 3);
        assert!(out.silent.is_empty());
    }

    #[test]
    fn minions_behind_an_unreachable_replica_are_reported_so_unless_they_return() {
        let t0 = Instant::now();
        let mut t = Tracker::new(ids(4), vec![], T, G, t0);
        t.unreachable(["m00001".to_owned(), "m00002".to_owned()]);
        t.on_return("m00000");
        // m00002 returned after all (the replica got the job but its answer was lost).
        t.on_return("m00002");
        let connected = |id: &str| id != "m00003";
        assert_eq!(
            t.poll(t0 + T, connected),
            Step::FindJob(vec!["m00001".into()])
        );
        t.asked(Vec::<String>::new());
        assert_eq!(t.poll(t0 + T, connected), Step::Done);
        let out = t.finish(connected);
        assert_eq!(
            out.silent,
            vec![
                ("m00001".into(), Silence::Unreachable),
                ("m00003".into(), Silence::NotConnected),
            ]
        );
    }

    #[test]
    fn timeout_asks_only_connected_silent_minions() {
        let t0 = Instant::now();
        let mut t = Tracker::new(ids(4), vec![], T, G, t0);
        t.on_return("m00000");
        assert_eq!(t.poll(t0 + T - Duration::from_millis(1), all), Step::Wait);
        let connected = |id: &str| id != "m00003";
        assert_eq!(
            t.poll(t0 + T, connected),
            Step::FindJob(vec!["m00001".into(), "m00002".into()])
        );
        assert!(t.is_asking());
        assert_eq!(t.deadline(), Some(t0 + T + G));
    }

    #[test]
    fn nobody_running_ends_the_job_with_reasons() {
        let t0 = Instant::now();
        let mut t = Tracker::new(ids(3), vec!["ghost".into()], T, G, t0);
        t.on_return("m00000");
        let connected = |id: &str| id != "m00002";
        assert!(matches!(t.poll(t0 + T, connected), Step::FindJob(_)));
        t.asked(["m00001".to_owned()]);
        t.on_find_job_reply("m00001", false);
        // Every asked minion answered: no need to wait for the gather timeout.
        assert_eq!(t.poll(t0 + T, connected), Step::Done);
        let out = t.finish(connected);
        assert_eq!(out.returned, 1);
        assert_eq!(
            out.silent,
            vec![
                ("m00001".into(), Silence::NoResponse),
                ("m00002".into(), Silence::NotConnected),
                ("ghost".into(), Silence::NoResponse),
            ]
        );
    }

    #[test]
    fn a_minion_still_running_restarts_the_wait() {
        let t0 = Instant::now();
        let mut t = Tracker::new(ids(2), vec![], T, G, t0);
        assert!(matches!(t.poll(t0 + T, all), Step::FindJob(_)));
        t.on_find_job_reply("m00000", true);
        // m00001 never answers: the round ends at the gather deadline.
        assert_eq!(t.poll(t0 + T + Duration::from_secs(1), all), Step::Wait);
        let end_of_round = t0 + T + G;
        assert_eq!(t.poll(end_of_round, all), Step::Wait);
        assert_eq!(t.deadline(), Some(end_of_round + T));
        assert!(!t.is_asking());
        // It returns during the second wait; m00001 is asked again at the next timeout.
        assert!(t.on_return("m00000"));
        assert_eq!(
            t.poll(end_of_round + T, all),
            Step::FindJob(vec!["m00001".into()])
        );
        t.on_find_job_reply("m00001", false);
        assert_eq!(t.poll(end_of_round + T, all), Step::Done);
        let out = t.finish(all);
        assert_eq!(out.returned, 1);
        assert_eq!(out.silent, vec![("m00001".into(), Silence::NoResponse)]);
    }

    #[test]
    fn a_real_return_during_find_job_counts_and_is_not_asked_again() {
        let t0 = Instant::now();
        let mut t = Tracker::new(ids(2), vec![], T, G, t0);
        assert!(matches!(t.poll(t0 + T, all), Step::FindJob(_)));
        assert!(t.on_return("m00000"));
        // Its late find_job reply saying it runs the job no longer keeps the job open.
        t.on_find_job_reply("m00000", true);
        t.on_find_job_reply("m00001", false);
        assert_eq!(t.poll(t0 + T, all), Step::Done);
        assert_eq!(t.finish(all).returned, 1);
    }

    #[test]
    fn minions_not_sent_find_job_are_not_waited_for() {
        let t0 = Instant::now();
        let mut t = Tracker::new(ids(2), vec![], T, G, t0);
        assert!(matches!(t.poll(t0 + T, all), Step::FindJob(_)));
        t.asked(Vec::new());
        assert_eq!(t.poll(t0 + T, all), Step::Done);
    }

    #[test]
    fn nobody_connected_ends_without_asking() {
        let t0 = Instant::now();
        let mut t = Tracker::new(ids(2), vec![], T, G, t0);
        assert_eq!(t.poll(t0 + T, |_| false), Step::Done);
        let out = t.finish(|_| false);
        assert!(out.silent.iter().all(|(_, s)| *s == Silence::NotConnected));
    }

    #[test]
    fn plain_follow_stops_at_the_timeout() {
        let t0 = Instant::now();
        let mut t = Tracker::plain(ids(2), T, t0);
        t.on_return("m00001");
        assert_eq!(t.poll(t0 + T, all), Step::Done);
        assert_eq!(t.finish(all).silent.len(), 1);
    }

    #[test]
    fn no_expected_minion_is_done_at_once() {
        let t0 = Instant::now();
        let mut t = Tracker::new(Vec::<String>::new(), vec!["ghost".into()], T, G, t0);
        // Nothing to wait for: done at once, and the listed id without a key is reported.
        assert!(t.is_done());
        assert_eq!(t.poll(t0, all), Step::Done);
        assert_eq!(
            t.finish(all).silent,
            vec![("ghost".into(), Silence::NoResponse)]
        );
    }

    #[test]
    fn ten_thousand_minions_with_stragglers() {
        let t0 = Instant::now();
        let n = 10_000;
        let mut t = Tracker::new(ids(n), vec![], T, G, t0);
        // All but 100 return; 50 of those are disconnected, 25 still run the job and return
        // in the second wait, 25 answer that they do not run it.
        for id in ids(n).iter().take(n - 100) {
            assert!(t.on_return(id));
        }
        let connected = |id: &str| id < "m09950";
        let Step::FindJob(ask) = t.poll(t0 + T, connected) else {
            panic!("expected find_job");
        };
        assert_eq!(ask.len(), 50);
        t.asked(ask.clone());
        for (i, id) in ask.iter().enumerate() {
            t.on_find_job_reply(id, i < 25);
        }
        assert_eq!(t.poll(t0 + T, connected), Step::Wait);
        for id in ask.iter().take(25) {
            assert!(t.on_return(id));
        }
        let end = t.deadline().expect("waiting again");
        assert_eq!(end, t0 + T + T);
        assert_eq!(t.poll(end, connected), Step::FindJob(ask[25..].to_vec()));
        assert_eq!(t.poll(end + G, connected), Step::Done);
        let out = t.finish(connected);
        assert_eq!(out.returned as usize, n - 75);
        let not_connected = out
            .silent
            .iter()
            .filter(|(_, s)| *s == Silence::NotConnected)
            .count();
        assert_eq!((out.silent.len(), not_connected), (75, 50));
    }

    const W: Duration = Duration::from_secs(2);

    fn direct(id: &str) -> bool {
        id.starts_with('m')
    }

    #[test]
    fn a_top_master_waits_syndic_wait_even_when_every_known_minion_returned() {
        let t0 = Instant::now();
        let mut t = Tracker::new(ids(1), vec![], T, G, t0).with_syndics(W, t0);
        assert!(t.on_return("m00000"));
        assert_eq!(t.poll(t0, direct), Step::Wait, "syndic_wait has not passed");
        assert_eq!(t.deadline(), Some(t0 + W));
        t.on_syndic_expect("syn1", &["s1-a".into(), "s1-b".into()]);
        assert_eq!(t.poll(t0 + W, direct), Step::Wait, "s1-a, s1-b pending");
        assert_eq!(t.deadline(), Some(t0 + T));
        assert!(t.on_return("s1-a"));
        assert!(t.on_return("s1-b"));
        assert!(!t.on_return("s1-b"), "a repeat is dropped");
        assert_eq!(t.poll(t0 + W, direct), Step::Done);
        assert_eq!(t.finish(direct).returned, 3);
    }

    #[test]
    fn a_top_master_with_no_minions_of_its_own_waits_for_syndics() {
        let t0 = Instant::now();
        let mut t = Tracker::new(Vec::<String>::new(), vec![], T, G, t0).with_syndics(W, t0);
        assert!(
            !t.is_done(),
            "order_masters does not short-circuit on no minions"
        );
        assert_eq!(
            t.poll(t0 + W, direct),
            Step::Wait,
            "nothing returned yet: up to the timeout"
        );
        assert_eq!(t.deadline(), Some(t0 + T));
        // A return reported before its syndic's list counts, and the list does not re-add it.
        assert!(t.on_return("s2-a"));
        t.on_syndic_expect("syn2", &["s2-a".into(), "s2-b".into()]);
        assert!(t.on_return("s2-b"));
        assert_eq!(t.poll(t0 + W, direct), Step::Done);
        let out = t.finish(direct);
        assert_eq!((out.returned, out.silent.len()), (2, 0));
    }

    #[test]
    fn minions_of_a_silent_syndic_are_reported_no_response_at_the_timeout() {
        let t0 = Instant::now();
        let mut t = Tracker::new(ids(1), vec![], T, G, t0).with_syndics(W, t0);
        t.on_return("m00000");
        t.on_syndic_expect("dead", &["d-a".into(), "d-b".into()]);
        t.on_syndic_expect("live", &["l-a".into()]);
        t.on_return("l-a");
        assert_eq!(t.poll(t0 + W, direct), Step::Wait);
        // At the timeout the dead syndic's minions are asked find_job through the syndics;
        // nobody answers within gather_job_timeout + syndic_wait, and the wait ends.
        assert_eq!(
            t.poll(t0 + T, direct),
            Step::FindJob(vec!["d-a".into(), "d-b".into()])
        );
        t.asked(Vec::<String>::new());
        assert_eq!(t.deadline(), Some(t0 + T + G + W));
        assert_eq!(t.poll(t0 + T + G, direct), Step::Wait);
        assert_eq!(t.poll(t0 + T + G + W, direct), Step::Done);
        let out = t.finish(direct);
        assert_eq!(out.returned, 2);
        assert_eq!(
            out.silent,
            vec![
                ("d-a".to_owned(), Silence::NoResponse),
                ("d-b".to_owned(), Silence::NoResponse)
            ]
        );
    }

    #[test]
    fn a_minion_below_a_syndic_still_running_the_job_keeps_the_top_waiting() {
        let t0 = Instant::now();
        let mut t = Tracker::new(Vec::<String>::new(), vec![], T, G, t0).with_syndics(W, t0);
        t.on_syndic_expect("syn", &["slow".into(), "quick".into()]);
        t.on_return("quick");
        // Asked through its syndic at the timeout (the top holds no subscription of it).
        assert_eq!(t.poll(t0 + T, direct), Step::FindJob(vec!["slow".into()]));
        t.asked(vec![]);
        t.on_find_job_reply("slow", true);
        // It still runs the job: the top waits another timeout rather than reporting it.
        assert_eq!(t.poll(t0 + T + G + W, direct), Step::Wait);
        assert_eq!(t.deadline(), Some(t0 + T + G + W + T));
        assert!(t.on_return("slow"));
        assert_eq!(t.poll(t0 + T + G + W, direct), Step::Done);
        let out = t.finish(direct);
        assert_eq!((out.returned, out.silent.len()), (2, 0));
    }

    #[test]
    fn a_syndic_list_naming_a_listed_id_without_a_key_here_moves_it_to_pending() {
        let t0 = Instant::now();
        let mut t =
            Tracker::new(Vec::<String>::new(), vec!["low".into()], T, G, t0).with_syndics(W, t0);
        t.on_syndic_expect("syn", &["low".into()]);
        t.on_return("low");
        assert_eq!(t.poll(t0 + W, direct), Step::Done);
        assert!(
            t.finish(direct).silent.is_empty(),
            "not reported missing after returning"
        );
    }

    #[test]
    fn without_syndics_strangers_stay_dropped_and_expectations_are_ignored() {
        let t0 = Instant::now();
        let mut t = Tracker::new(ids(1), vec![], T, G, t0);
        t.on_syndic_expect("syn", &["x".into()]);
        assert!(!t.on_return("x"));
        assert!(t.on_return("m00000"));
        assert!(t.is_done());
    }
}
