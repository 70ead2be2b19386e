//! Failed logins per source address: after [`MAX_FAILURES`] within [`WINDOW`], further login
//! attempts from that address are refused until the window has passed. Time is an argument,
//! so the rule is tested without waiting.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures allowed per address within [`WINDOW`].
pub const MAX_FAILURES: usize = 5;
/// How long a failure counts.
pub const WINDOW: Duration = Duration::from_secs(60);

/// Recent failures by address.
#[derive(Debug, Default)]
pub struct LoginLimiter {
    failures: Mutex<HashMap<IpAddr, Vec<Instant>>>,
}

impl LoginLimiter {
    /// `Some(wait)` when `ip` has failed too often recently and must wait that long.
    pub fn blocked(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let v = map.get_mut(&ip)?;
        v.retain(|t| now.duration_since(*t) < WINDOW);
        if v.len() >= MAX_FAILURES {
            v.first().map(|t| WINDOW - now.duration_since(*t))
        } else {
            None
        }
    }

    /// Records a failed login from `ip`.
    pub fn failed(&self, ip: IpAddr, now: Instant) {
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded: addresses whose failures all expired are dropped.
        if map.len() > 10_000 {
            map.retain(|_, v| v.iter().any(|t| now.duration_since(*t) < WINDOW));
        }
        let v = map.entry(ip).or_default();
        v.retain(|t| now.duration_since(*t) < WINDOW);
        v.push(now);
    }

    /// A successful login clears the address's failures.
    pub fn succeeded(&self, ip: IpAddr) {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&ip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_failures_block_one_address_for_the_window() {
        let l = LoginLimiter::default();
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        let t0 = Instant::now();
        for i in 0..MAX_FAILURES {
            assert!(l.blocked(a, t0).is_none(), "{i}");
            l.failed(a, t0 + Duration::from_secs(i as u64));
        }
        let t = t0 + Duration::from_secs(10);
        assert_eq!(l.blocked(a, t), Some(Duration::from_secs(50)));
        assert!(l.blocked(b, t).is_none());
        // The first failure ages out of the window.
        assert!(l.blocked(a, t0 + WINDOW).is_none());
        l.failed(b, t);
        l.succeeded(b);
        assert!(l.failures.lock().unwrap().get(&b).is_none());
    }
}
