//! Which replica holds each minion's subscription, without I/O: the cluster's routing table.
//!
//! Every replica tells the others (over NATS) when it attaches or detaches a subscription,
//! answers a newcomer's hello with a snapshot of all it holds, and sends a heartbeat every few
//! seconds. [`Routes`] is fed those messages and `now`, and answers where a job for a minion
//! must go and which minions are connected anywhere. Of two replicas claiming one minion (it
//! reconnected elsewhere before the first noticed), the later subscription wins; a replica not
//! heard from for the table's time to live is taken for dead and its routes dropped.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// One minion's subscription as known here.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Holder {
    replica: String,
    /// When the subscription began (ms since the epoch, the holder's clock).
    since_ms: i64,
}

/// The routing table.
#[derive(Debug)]
pub struct Routes {
    me: String,
    holders: HashMap<String, Holder>,
    /// When each other replica was last heard from.
    seen: HashMap<String, Instant>,
    ttl: Duration,
}

/// Where a message for a list of minions goes.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// Held by this replica.
    pub mine: Vec<String>,
    /// Held by other replicas, by replica.
    pub others: BTreeMap<String, Vec<String>>,
    /// Held by nobody known.
    pub nowhere: Vec<String>,
}

impl Routes {
    /// An empty table for replica `me`; other replicas expire after `ttl` of silence.
    pub fn new(me: &str, ttl: Duration) -> Routes {
        Routes {
            me: me.to_owned(),
            holders: HashMap::new(),
            seen: HashMap::new(),
            ttl,
        }
    }

    fn heard(&mut self, replica: &str, now: Instant) {
        if replica != self.me {
            self.seen.insert(replica.to_owned(), now);
        }
    }

    /// `replica` attached `id` at `since_ms`.
    pub fn attach(&mut self, replica: &str, id: &str, since_ms: i64, now: Instant) {
        self.heard(replica, now);
        let newer = self
            .holders
            .get(id)
            .is_none_or(|h| since_ms >= h.since_ms || h.replica == replica);
        if newer {
            self.holders.insert(
                id.to_owned(),
                Holder {
                    replica: replica.to_owned(),
                    since_ms,
                },
            );
        }
    }

    /// `replica` detached `id`; ignored when another replica holds it now.
    pub fn detach(&mut self, replica: &str, id: &str, now: Instant) {
        self.heard(replica, now);
        if self.holders.get(id).is_some_and(|h| h.replica == replica) {
            self.holders.remove(id);
        }
    }

    /// Everything `replica` holds: its other routes are gone.
    pub fn snapshot(&mut self, replica: &str, routes: &[(String, i64)], now: Instant) {
        self.drop_replica(replica);
        self.heard(replica, now);
        for (id, since) in routes {
            self.attach(replica, id, *since, now);
        }
    }

    /// `replica` is alive.
    pub fn heartbeat(&mut self, replica: &str, now: Instant) {
        self.heard(replica, now);
    }

    /// `replica` is gone (said goodbye, or expired): its routes go with it.
    pub fn drop_replica(&mut self, replica: &str) {
        self.holders.retain(|_, h| h.replica != replica);
        self.seen.remove(replica);
    }

    /// Drops the replicas not heard from within the ttl; returns them.
    pub fn expire(&mut self, now: Instant) -> Vec<String> {
        let dead: Vec<String> = self
            .seen
            .iter()
            .filter(|(_, at)| now.saturating_duration_since(**at) > self.ttl)
            .map(|(r, _)| r.clone())
            .collect();
        for r in &dead {
            self.drop_replica(r);
        }
        dead
    }

    /// Other replicas heard from and not expired.
    pub fn replicas(&self) -> usize {
        self.seen.len()
    }

    /// The replica holding `id`'s subscription.
    pub fn holder(&self, id: &str) -> Option<&str> {
        self.holders.get(id).map(|h| h.replica.as_str())
    }

    /// Minions connected to any replica, sorted.
    pub fn connected(&self) -> Vec<String> {
        let mut v: Vec<String> = self.holders.keys().cloned().collect();
        v.sort();
        v
    }

    /// How many minions are connected to any replica.
    pub fn connected_count(&self) -> usize {
        self.holders.len()
    }

    /// Minions connected to this replica, with when, for a snapshot.
    pub fn mine(&self) -> Vec<(String, i64)> {
        self.holders
            .iter()
            .filter(|(_, h)| h.replica == self.me)
            .map(|(id, h)| (id.clone(), h.since_ms))
            .collect()
    }

    /// Splits `ids` by where their subscriptions are.
    pub fn split(&self, ids: &[String]) -> Split {
        let mut s = Split::default();
        for id in ids {
            match self.holder(id) {
                Some(r) if r == self.me => s.mine.push(id.clone()),
                Some(r) => s.others.entry(r.to_owned()).or_default().push(id.clone()),
                None => s.nowhere.push(id.clone()),
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn jobs_go_to_the_replica_holding_each_subscription() {
        let t = Instant::now();
        let mut r = Routes::new("a", Duration::from_secs(6));
        r.attach("a", "m1", 1, t);
        r.attach("b", "m2", 1, t);
        r.attach("c", "m3", 1, t);
        r.attach("b", "m4", 1, t);
        let s = r.split(&ids(&["m1", "m2", "m3", "m4", "m5"]));
        assert_eq!(s.mine, ids(&["m1"]));
        assert_eq!(s.others["b"], ids(&["m2", "m4"]));
        assert_eq!(s.others["c"], ids(&["m3"]));
        assert_eq!(s.nowhere, ids(&["m5"]));
        assert_eq!(r.connected(), ids(&["m1", "m2", "m3", "m4"]));
    }

    #[test]
    fn a_minion_that_moved_belongs_to_its_newer_subscription() {
        let t = Instant::now();
        let mut r = Routes::new("a", Duration::from_secs(6));
        r.attach("b", "m1", 100, t);
        // m1 reconnects to c before b noticed it gone; b's late messages change nothing.
        r.attach("c", "m1", 200, t);
        r.attach("b", "m1", 100, t);
        r.detach("b", "m1", t);
        assert_eq!(r.holder("m1"), Some("c"));
        // A snapshot from b sent before it noticed does not take it back either.
        r.snapshot("b", &[("m1".into(), 100)], t);
        assert_eq!(r.holder("m1"), Some("c"));
        r.detach("c", "m1", t);
        assert_eq!(r.holder("m1"), None);
    }

    #[test]
    fn a_snapshot_replaces_what_a_replica_said_before() {
        let t = Instant::now();
        let mut r = Routes::new("a", Duration::from_secs(6));
        r.attach("b", "m1", 1, t);
        r.attach("b", "m2", 1, t);
        r.snapshot("b", &[("m2".into(), 1), ("m3".into(), 5)], t);
        assert_eq!(r.connected(), ids(&["m2", "m3"]));
    }

    #[test]
    fn a_silent_replica_expires_with_its_routes_but_never_this_one() {
        let t = Instant::now();
        let mut r = Routes::new("a", Duration::from_secs(6));
        r.attach("a", "m0", 1, t);
        r.attach("b", "m1", 1, t);
        r.attach("c", "m2", 1, t);
        r.heartbeat("c", t + Duration::from_secs(5));
        assert!(r.expire(t + Duration::from_secs(6)).is_empty());
        assert_eq!(r.expire(t + Duration::from_secs(7)), ids(&["b"]));
        assert_eq!(r.connected(), ids(&["m0", "m2"]));
        r.drop_replica("c");
        assert_eq!(r.connected(), ids(&["m0"]));
        assert_eq!(r.mine(), vec![("m0".to_owned(), 1)]);
    }

    #[test]
    fn ten_thousand_minions_over_three_replicas() {
        let t = Instant::now();
        let mut r = Routes::new("r0", Duration::from_secs(6));
        let all: Vec<String> = (0..10_000).map(|i| format!("m{i}")).collect();
        for (i, id) in all.iter().enumerate() {
            r.attach(&format!("r{}", i % 3), id, 1, t);
        }
        let s = r.split(&all);
        assert_eq!(s.mine.len(), 3334);
        assert_eq!(s.others["r1"].len(), 3333);
        assert_eq!(s.others["r2"].len(), 3333);
        assert!(s.nowhere.is_empty());
    }
}
