//! Failed logins, counted per user and source address: after [`MAX_FAILURES`] failures of one
//! user name from one address within [`WINDOW`], that user is refused from that address until
//! the window has passed, while other users behind the same address (a reverse proxy, a NAT)
//! still log in. A looser bound per address, [`MAX_SOURCE_FAILURES`] failures of any user
//! names, stops one address from trying user names without end. The source is the peer, or
//! for a peer in `rest_cherrypy: trusted_proxies` the client it names in `X-Forwarded-For`
//! ([`client_ip`]). Time is an argument, so the rules are tested without waiting.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ipnet::IpNet;

/// Failures allowed per user name and address within [`WINDOW`].
pub const MAX_FAILURES: usize = 5;
/// Failures allowed per address within [`WINDOW`], whatever the user names.
pub const MAX_SOURCE_FAILURES: usize = 50;
/// How long a failure counts.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Entries kept before expired ones are dropped.
const MAX_ENTRIES: usize = 10_000;
/// Bytes of a user name used as its key (longer names are cut there).
const MAX_USER_KEY: usize = 256;

/// Why a login is refused before its password is checked, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocked {
    /// This user failed too often from this address.
    User(Duration),
    /// This address failed too often, over any user names.
    Source(Duration),
}

/// Recent failures by user and address, and by address.
#[derive(Debug, Default)]
pub struct LoginLimiter {
    failures: Mutex<Failures>,
}

#[derive(Debug, Default)]
struct Failures {
    by_user: HashMap<(IpAddr, String), Vec<Instant>>,
    by_source: HashMap<IpAddr, Vec<Instant>>,
}

fn user_key(user: &str) -> String {
    let mut end = user.len().min(MAX_USER_KEY);
    while !user.is_char_boundary(end) {
        end -= 1;
    }
    user[..end].to_owned()
}

/// The wait left when `v` (pruned to the window at `now`) holds `max` failures.
fn over(v: &mut Vec<Instant>, max: usize, now: Instant) -> Option<Duration> {
    v.retain(|t| now.saturating_duration_since(*t) < WINDOW);
    if v.len() >= max {
        v.first()
            .map(|t| WINDOW.saturating_sub(now.saturating_duration_since(*t)))
    } else {
        None
    }
}

impl LoginLimiter {
    /// Whether a login of `user` from `ip` is refused at `now`, and for how long.
    pub fn blocked(&self, ip: IpAddr, user: &str, now: Instant) -> Option<Blocked> {
        let mut f = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = f.by_user.get_mut(&(ip, user_key(user)))
            && let Some(wait) = over(v, MAX_FAILURES, now)
        {
            return Some(Blocked::User(wait));
        }
        let v = f.by_source.get_mut(&ip)?;
        over(v, MAX_SOURCE_FAILURES, now).map(Blocked::Source)
    }

    /// Records a failed login of `user` from `ip`.
    pub fn failed(&self, ip: IpAddr, user: &str, now: Instant) {
        let mut f = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let live = |v: &Vec<Instant>| v.iter().any(|t| now.saturating_duration_since(*t) < WINDOW);
        // Bounded: entries whose failures all expired are dropped.
        if f.by_user.len() > MAX_ENTRIES {
            f.by_user.retain(|_, v| live(v));
        }
        if f.by_source.len() > MAX_ENTRIES {
            f.by_source.retain(|_, v| live(v));
        }
        let v = f.by_user.entry((ip, user_key(user))).or_default();
        v.retain(|t| now.saturating_duration_since(*t) < WINDOW);
        v.push(now);
        let v = f.by_source.entry(ip).or_default();
        v.retain(|t| now.saturating_duration_since(*t) < WINDOW);
        // The per-address count needs no more than its bound.
        if v.len() >= MAX_SOURCE_FAILURES {
            v.remove(0);
        }
        v.push(now);
    }

    /// A successful login clears that user's failures from that address. The address's own
    /// count stays: a valid login must not reset the bound on guessing other users.
    pub fn succeeded(&self, ip: IpAddr, user: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .by_user
            .remove(&(ip, user_key(user)));
    }
}

/// The client address of a request from `peer`: the peer itself, unless it is one of the
/// `trusted` proxies; then the nearest address in `X-Forwarded-For` (read right to left,
/// the values of every such header in order) that is not a trusted proxy. An entry that is
/// no address stops the walk at the last trusted hop, which is then the client.
pub fn client_ip(peer: IpAddr, forwarded_for: &[&str], trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let hops: Vec<&str> = forwarded_for
        .iter()
        .flat_map(|h| h.split(','))
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        let Some(ip) = parse_hop(hop) else {
            return client;
        };
        client = ip;
        if !is_trusted(&ip) {
            return ip;
        }
    }
    client
}

/// One `X-Forwarded-For` entry: an address, `[v6]:port` or `v4:port`.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    if let Ok(sa) = hop.parse::<std::net::SocketAddr>() {
        return Some(sa.ip().to_canonical());
    }
    None
}

/// Reads `trusted_proxies` entries: CIDR blocks or single addresses; a bad one is an error
/// naming it.
pub fn parse_trusted(entries: &[String]) -> Result<Vec<IpNet>, String> {
    entries
        .iter()
        .map(|e| {
            let e = e.trim();
            e.parse::<IpNet>()
                .or_else(|_| e.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    format!("{e:?} is not an address or CIDR block (e.g. 10.0.0.0/8, ::1)")
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_failures_block_one_user_from_one_address_for_the_window() {
        let l = LoginLimiter::default();
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        let t0 = Instant::now();
        for i in 0..MAX_FAILURES {
            assert!(l.blocked(a, "alice", t0).is_none(), "{i}");
            l.failed(a, "alice", t0 + Duration::from_secs(i as u64));
        }
        let t = t0 + Duration::from_secs(10);
        assert_eq!(
            l.blocked(a, "alice", t),
            Some(Blocked::User(Duration::from_secs(50)))
        );
        // Another user behind the same address, and the same user elsewhere, log in.
        assert!(l.blocked(a, "bob", t).is_none());
        assert!(l.blocked(b, "alice", t).is_none());
        // The first failure ages out of the window.
        assert!(l.blocked(a, "alice", t0 + WINDOW).is_none());
        l.failed(b, "bob", t);
        l.succeeded(b, "bob");
        let f = l.failures.lock().unwrap();
        assert!(!f.by_user.contains_key(&(b, "bob".to_owned())));
        assert_eq!(
            f.by_source[&b].len(),
            1,
            "a success keeps the address's count"
        );
    }

    #[test]
    fn one_address_cannot_try_user_names_without_end() {
        let l = LoginLimiter::default();
        let a: IpAddr = [10, 0, 0, 1].into();
        let t0 = Instant::now();
        for i in 0..MAX_SOURCE_FAILURES {
            let user = format!("user{i}");
            assert!(l.blocked(a, &user, t0).is_none(), "{i}");
            l.failed(a, &user, t0);
        }
        let t = t0 + Duration::from_secs(1);
        assert_eq!(
            l.blocked(a, "someone-else", t),
            Some(Blocked::Source(Duration::from_secs(59)))
        );
        assert!(l.blocked([10, 0, 0, 2].into(), "someone-else", t).is_none());
        assert!(l.blocked(a, "x", t0 + WINDOW).is_none());
        // Long names share one key past the cut, and memory per entry stays bounded.
        let long = "x".repeat(10_000);
        assert_eq!(user_key(&long).len(), MAX_USER_KEY);
        assert_eq!(user_key("é".repeat(200).as_str()).len(), 256);
    }

    #[test]
    fn forwarded_for_is_read_only_from_trusted_proxies() {
        let trusted = parse_trusted(&["127.0.0.0/8".into(), "::1".into()]).unwrap();
        let proxy: IpAddr = [127, 0, 0, 1].into();
        let outside: IpAddr = [192, 0, 2, 7].into();
        let check = |peer: IpAddr, xff: &[&str], want: &str| {
            assert_eq!(
                client_ip(peer, xff, &trusted),
                want.parse::<IpAddr>().unwrap(),
                "{peer} {xff:?}"
            );
        };
        check(proxy, &[], "127.0.0.1");
        check(proxy, &["198.51.100.4"], "198.51.100.4");
        // Right to left: the nearest untrusted hop; a client's own claims further left are
        // not believed.
        check(proxy, &["6.6.6.6, 198.51.100.4, 127.0.0.2"], "198.51.100.4");
        check(proxy, &["6.6.6.6", "198.51.100.4"], "198.51.100.4");
        check(proxy, &["[2001:db8::1]:443"], "2001:db8::1");
        check(proxy, &["198.51.100.4:5000"], "198.51.100.4");
        check(proxy, &["garbage, 198.51.100.4"], "198.51.100.4");
        check(proxy, &["198.51.100.4, garbage"], "127.0.0.1");
        check(proxy, &["127.0.0.3"], "127.0.0.3");
        // An untrusted peer's header is ignored.
        check(outside, &["198.51.100.4"], "192.0.2.7");
        check(outside, &[], "192.0.2.7");
        assert!(
            parse_trusted(&["10.0.0.0/33".into()])
                .unwrap_err()
                .contains("10.0.0.0/33")
        );
        assert!(parse_trusted(&["proxy.example".into()]).is_err());
    }
}
