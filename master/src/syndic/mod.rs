//! Syndic (Salt's master of masters). A top master (`order_masters: True`) forwards each job,
//! target unresolved, to the syndics subscribed to it; a lower master with `syndic_master`
//! holds that subscription (`link.rs`), republishes the job to its own minions under the same
//! jid, says which minions it expects (Salt's `syndic/<id>/<jid>` event with `minions`) and
//! forwards their returns once it stored them. The top's service is `service.rs`; what the
//! top's `Run` waits for is decided by the pure [`crate::tracker::Tracker`] (its syndic
//! accounting); this file holds the config and the top's registry of syndics and of what they
//! said about each forwarded job.

pub mod link;
pub mod service;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use saltq_proto::v1 as pb;
use tokio::sync::{mpsc, watch};

use crate::config::RawConfig;

/// Salt's default `syndic_wait`, in seconds.
pub const DEFAULT_SYNDIC_WAIT: f64 = 5.0;

/// Returns a top master's follower of a job has room for beyond its own minions': its
/// syndics' minions return in batches of up to 500, unannounced to the fan-out's sizing.
pub const FOLLOW_ROOM: usize = 16_384;

/// How long the top remembers what syndics said about a forwarded job.
const NOTES_KEPT: Duration = Duration::from_secs(3600);

/// Which top master a syndic with several tries first (Salt's `syndic_failover`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failover {
    /// In a random order, as Salt's default.
    Random,
    /// In the order listed.
    Ordered,
}

/// The syndic keys of the master config, validated.
#[derive(Debug, Clone)]
pub struct SyndicConfig {
    /// This master takes syndics and forwards jobs to them (`order_masters`).
    pub order_masters: bool,
    /// The top masters this master is a syndic of (`syndic_master`), empty when it is none.
    pub masters: Vec<String>,
    /// Their port (`syndic_master_port`).
    pub port: u16,
    /// How long a top master's caller waits for syndics (`syndic_wait`).
    pub wait: Duration,
    /// The order the top masters are tried in (`syndic_failover`).
    pub failover: Failover,
    /// Salt's `syndic_forward_all_events`: accepted as a bool and without effect, as in Salt
    /// 3007.8, which declares it (default False) and reads it nowhere: its syndic sends events
    /// to the first top master that takes them, as saltq's (one link at a time) does.
    pub forward_all_events: bool,
    /// The top master's CA fingerprint to pin on first contact (`syndic_finger`).
    pub finger: Option<String>,
}

impl SyndicConfig {
    /// Validates the syndic keys; an error names the key and what was expected.
    pub fn from_raw(raw: &RawConfig) -> Result<SyndicConfig, (&'static str, String)> {
        let wait = raw.syndic_wait.unwrap_or(DEFAULT_SYNDIC_WAIT);
        if !(wait.is_finite() && (0.0..=86400.0).contains(&wait)) {
            return Err((
                "syndic_wait",
                format!("{wait} is not a number of seconds between 0 and 86400"),
            ));
        }
        let failover = match raw.syndic_failover.as_deref().unwrap_or("random") {
            "random" => Failover::Random,
            "ordered" => Failover::Ordered,
            other => {
                return Err((
                    "syndic_failover",
                    format!("unknown value {other:?}: expected random or ordered"),
                ));
            }
        };
        let masters = raw
            .syndic_master
            .as_ref()
            .map(|m| m.names())
            .unwrap_or_default();
        if let Some(bad) = masters.iter().find(|m| m.contains('/') || m.contains(' ')) {
            return Err((
                "syndic_master",
                format!("{bad:?} is not a host name or address"),
            ));
        }
        for m in &masters {
            host_port(m, 4506).map_err(|e| ("syndic_master", e))?;
        }
        Ok(SyndicConfig {
            order_masters: raw.order_masters.unwrap_or(false),
            masters,
            port: raw.syndic_master_port.unwrap_or(4506),
            wait: Duration::from_secs_f64(wait),
            failover,
            forward_all_events: raw.syndic_forward_all_events.unwrap_or(false),
            finger: raw.syndic_finger.clone().filter(|f| !f.is_empty()),
        })
    }

    /// The top masters in the order to try them, the `attempt`-th time round: listed order
    /// for `ordered`; for `random`, a rotation chosen by `seed` (so each syndic of a fleet
    /// starts elsewhere), then the listed order from there.
    pub fn try_order(&self, seed: u64) -> Vec<String> {
        let mut m = self.masters.clone();
        if self.failover == Failover::Random && !m.is_empty() {
            let k = (seed % m.len() as u64) as usize;
            m.rotate_left(k);
        }
        m
    }
}

/// A top master's address as `syndic_master` names it: `HOST`, `HOST:PORT` (as Salt's
/// `parse_host_port` reads its masters), `[IPV6]:PORT` or a bare IPv6 address; `port` when
/// none is named.
pub fn host_port(s: &str, port: u16) -> Result<(String, u16), String> {
    let parse = |p: &str| match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{s:?}: port {p:?} is not a number from 1 to 65535")),
    };
    if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("{s:?}: no closing bracket"))?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((h.to_owned(), parse(p)?)),
            None if after.is_empty() => Ok((h.to_owned(), port)),
            None => Err(format!("{s:?}: expected :PORT after the bracket")),
        };
    }
    match s.split_once(':') {
        Some((h, p)) if !p.contains(':') => Ok((h.to_owned(), parse(p)?)),
        _ => Ok((s.to_owned(), port)),
    }
}

/// One job message to a syndic.
pub type SyndicTx = mpsc::Sender<Arc<pb::SyndicSubscribeResponse>>;

/// What the syndics said about one forwarded job, in the order they said it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notes {
    /// The syndics the job was forwarded to.
    pub sent: Vec<String>,
    /// Each syndic's expected minions, as it reported them (a syndic may report twice).
    pub expected: Vec<(String, Vec<String>)>,
}

struct Job {
    notes: watch::Sender<Notes>,
    at: Instant,
}

/// A top master's syndics: their subscriptions, and what they said about each job.
#[derive(Default)]
pub struct Syndics {
    links: Mutex<HashMap<String, (u64, SyndicTx)>>,
    jobs: Mutex<HashMap<String, Job>>,
    next_conn: std::sync::atomic::AtomicU64,
}

impl Syndics {
    /// Records syndic `id`'s subscription (replacing an older one); returns its connection id.
    pub fn attach(&self, id: &str, tx: SyndicTx) -> u64 {
        let conn = self
            .next_conn
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.links).insert(id.to_owned(), (conn, tx));
        conn
    }

    /// Forgets syndic `id`'s subscription, unless a newer one replaced it.
    pub fn detach(&self, id: &str, conn: u64) {
        let mut links = lock(&self.links);
        if links.get(id).is_some_and(|(c, _)| *c == conn) {
            links.remove(id);
        }
    }

    /// The syndics holding a subscription, sorted.
    #[cfg(test)]
    pub fn connected(&self) -> Vec<String> {
        let mut v: Vec<String> = lock(&self.links).keys().cloned().collect();
        v.sort();
        v
    }

    /// Forwards `load` to every syndic (as Salt's top master publishes to all of them: each
    /// resolves the target below), and starts keeping notes for the job before any syndic can
    /// answer. Returns the syndics it was handed to.
    pub fn forward(&self, load: &pb::JobLoad, timeout: Duration, now: Instant) -> Vec<String> {
        let links: Vec<(String, SyndicTx)> = lock(&self.links)
            .iter()
            .map(|(id, (_, tx))| (id.clone(), tx.clone()))
            .collect();
        let msg = Arc::new(pb::SyndicSubscribeResponse {
            kind: Some(pb::syndic_subscribe_response::Kind::Job(pb::SyndicJob {
                load: Some(load.clone()),
                timeout: timeout.as_secs_f64(),
            })),
        });
        {
            let mut jobs = lock(&self.jobs);
            jobs.retain(|_, j| now.saturating_duration_since(j.at) < NOTES_KEPT);
            jobs.insert(
                load.jid.clone(),
                Job {
                    notes: watch::channel(Notes::default()).0,
                    at: now,
                },
            );
        }
        let mut sent: Vec<String> = links
            .into_iter()
            .filter(|(id, tx)| match tx.try_send(msg.clone()) {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(syndic = %id, jid = %load.jid, "job not forwarded to syndic: {e}");
                    false
                }
            })
            .map(|(id, _)| id)
            .collect();
        sent.sort();
        if let Some(j) = lock(&self.jobs).get(&load.jid) {
            j.notes.send_modify(|n| n.sent = sent.clone());
        }
        sent
    }

    /// Whether job `jid` was forwarded to syndic `id` (its returns are taken then).
    pub fn was_sent(&self, jid: &str, id: &str) -> bool {
        lock(&self.jobs)
            .get(jid)
            .is_some_and(|j| j.notes.borrow().sent.iter().any(|s| s == id))
    }

    /// Syndic `id` expects `minions` to return for `jid`. False when the job was not
    /// forwarded to it.
    pub fn expect(&self, jid: &str, id: &str, minions: Vec<String>) -> bool {
        let jobs = lock(&self.jobs);
        let Some(j) = jobs.get(jid) else {
            return false;
        };
        if !j.notes.borrow().sent.iter().any(|s| s == id) {
            return false;
        }
        j.notes
            .send_modify(|n| n.expected.push((id.to_owned(), minions)));
        true
    }

    /// What the syndics say about `jid` as they say it, if it was forwarded.
    pub fn watch(&self, jid: &str) -> Option<watch::Receiver<Notes>> {
        lock(&self.jobs).get(jid).map(|j| j.notes.subscribe())
    }
}

/// Salt's `MINION_EVENT_BLACKLIST`: tags a master never fires on behalf of what is below it
/// (a syndic's `salt/job/<jid>/new` is read for its minions, never fired at the top).
const EVENT_BLACKLIST: &[&str] = &[
    "salt/job/*/publish",
    "salt/job/*/new",
    "salt/job/*/return",
    "salt/key",
    "salt/cloud/*",
    "salt/run/*",
    "salt/cluster/*",
    "salt/wheel/*/new",
    "salt/wheel/*/return",
];

/// Whether a top master fires an event a syndic forwarded (Salt's `valid_minion_tag`).
pub fn fired_from_below(tag: &str) -> bool {
    !EVENT_BLACKLIST
        .iter()
        .any(|b| saltq_semantics::python::fnmatch(tag, b))
}

/// Salt's `salt.utils.jid.is_jid`: 20 digits, optionally followed by `_` and a suffix.
pub fn is_jid(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = b.len() >= 20 && b[..20].iter().all(u8::is_ascii_digit);
    digits && (b.len() == 20 || (b.len() > 21 && b[20] == b'_'))
}

/// Whether a syndic forwards an event of its master's bus up, as Salt's syndic (`sync`
/// mode) does: every event without a `retcode` (returns go up as returns), except the
/// job's bare-jid minion list (it goes up as [`pb::SyndicExpectRequest`]) and what the top
/// would not fire anyway.
pub fn forwards_up(tag: &str, data: &serde_json::Map<String, serde_json::Value>) -> bool {
    !data.contains_key("retcode") && !is_jid(tag) && fired_from_below(tag)
}

/// The tags a top master fires for event `tag` of syndic `id`: under `syndic/<id>/` always,
/// and as is (Salt's "old dup event") when a minion of that name could fire it here, so a
/// syndic never speaks for this master (`salt/job/...`, `salt/auth`) nor for its minions.
pub fn tags_at_top(id: &str, tag: &str) -> Vec<String> {
    let mut tags = vec![format!("syndic/{id}/{tag}")];
    let segs: Vec<&str> = tag.split('/').collect();
    // A minion below the syndic speaks about itself under salt/minion/<its id>/.
    let speaker = match segs.as_slice() {
        ["salt", "minion" | "beacon", who, ..] => who,
        _ => id,
    };
    if crate::tags::check_minion_tag(speaker, tag).is_ok() {
        tags.push(tag.to_owned());
    }
    tags
}

/// Where a top master records the ids that subscribed as syndics (Salt's `syndic_dir`).
pub fn syndic_dir(cachedir: &std::path::Path) -> std::path::PathBuf {
    cachedir.join("syndics")
}

/// Records `id` as a syndic, so it is never expected to answer as a minion.
pub fn remember_syndic(cachedir: &std::path::Path, id: &str) {
    let dir = syndic_dir(cachedir);
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join(id), b"")) {
        tracing::warn!(syndic = %id, "cannot record the syndic in {}: {e}", dir.display());
    }
}

/// Removes the ids recorded as syndics from `expected`, as Salt's top does not report its
/// syndics as minions that did not return.
pub fn drop_syndics(cachedir: &std::path::Path, expected: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(syndic_dir(cachedir)) else {
        return;
    };
    let syndics: std::collections::HashSet<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    expected.retain(|id| !syndics.contains(id));
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(yaml: &str) -> RawConfig {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn config_defaults_and_errors() {
        let c = SyndicConfig::from_raw(&raw("{}")).unwrap();
        assert!(!c.order_masters && c.masters.is_empty());
        assert_eq!(c.wait, Duration::from_secs(5));
        assert_eq!((c.port, c.failover), (4506, Failover::Random));
        let c = SyndicConfig::from_raw(&raw(
            "syndic_master: [a, b, c]\nsyndic_failover: ordered\nsyndic_wait: 0.5\nsyndic_master_port: 4606",
        ))
        .unwrap();
        assert_eq!(c.try_order(7), vec!["a", "b", "c"]);
        assert_eq!((c.port, c.wait), (4606, Duration::from_millis(500)));
        let e = SyndicConfig::from_raw(&raw("syndic_failover: sideways")).unwrap_err();
        assert_eq!(e.0, "syndic_failover");
        assert!(e.1.contains("sideways"), "{e:?}");
        // Accepted as Salt accepts it (declared, read nowhere).
        let c = SyndicConfig::from_raw(&raw("syndic_forward_all_events: true")).unwrap();
        assert!(c.forward_all_events);
        assert!(serde_yaml_ng::from_str::<RawConfig>("syndic_forward_all_events: often").is_err());
        let e = SyndicConfig::from_raw(&raw("syndic_wait: -1")).unwrap_err();
        assert_eq!(e.0, "syndic_wait");
        let e = SyndicConfig::from_raw(&raw("syndic_master: 'a/b'")).unwrap_err();
        assert_eq!(e.0, "syndic_master");
    }

    #[test]
    fn top_master_addresses() {
        assert_eq!(host_port("top", 4506), Ok(("top".into(), 4506)));
        assert_eq!(host_port("top:4606", 4506), Ok(("top".into(), 4606)));
        assert_eq!(host_port("[::1]:4606", 4506), Ok(("::1".into(), 4606)));
        assert_eq!(host_port("::1", 4506), Ok(("::1".into(), 4506)));
        assert!(
            host_port("top:http", 4506)
                .unwrap_err()
                .contains("\"http\"")
        );
        let e = SyndicConfig::from_raw(&raw("syndic_master: ['a:0']")).unwrap_err();
        assert_eq!(e.0, "syndic_master");
    }

    #[test]
    fn random_failover_rotates_by_seed() {
        let c = SyndicConfig::from_raw(&raw("syndic_master: a,b,c")).unwrap();
        assert_eq!(c.try_order(0), vec!["a", "b", "c"]);
        assert_eq!(c.try_order(1), vec!["b", "c", "a"]);
        assert_eq!(c.try_order(5), vec!["c", "a", "b"]);
    }

    fn load(jid: &str) -> pb::JobLoad {
        pb::JobLoad {
            jid: jid.into(),
            tgt: "*".into(),
            tgt_type: "glob".into(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn forward_reaches_every_syndic_and_notes_only_theirs() {
        let s = Syndics::default();
        let (tx_a, mut rx_a) = mpsc::channel(4);
        let (tx_b, mut rx_b) = mpsc::channel(4);
        s.attach("a", tx_a);
        let conn_b = s.attach("b", tx_b);
        let now = Instant::now();
        let sent = s.forward(&load("1"), Duration::from_secs(5), now);
        assert_eq!(sent, vec!["a", "b"]);
        for rx in [&mut rx_a, &mut rx_b] {
            let m = rx.recv().await.unwrap();
            let Some(pb::syndic_subscribe_response::Kind::Job(j)) = &m.kind else {
                panic!("not a job: {m:?}");
            };
            assert_eq!(j.load.as_ref().unwrap().tgt, "*");
            assert_eq!(j.timeout, 5.0);
        }
        let w = s.watch("1").unwrap();
        assert!(s.expect("1", "a", vec!["m1".into()]));
        assert!(!s.expect("1", "c", vec!["x".into()]), "never sent to c");
        assert!(!s.expect("2", "a", vec![]), "unknown jid");
        assert_eq!(w.borrow().expected, vec![("a".into(), vec!["m1".into()])]);
        assert!(s.was_sent("1", "b") && !s.was_sent("1", "c"));
        s.detach("b", conn_b);
        assert_eq!(s.connected(), vec!["a"]);
        assert_eq!(
            s.forward(&load("2"), Duration::from_secs(5), now),
            vec!["a"]
        );
    }

    #[test]
    fn recorded_syndics_are_not_expected_as_minions() {
        let dir = std::env::temp_dir().join(format!("saltq-syndic-dir-{}", std::process::id()));
        let mut expected = vec!["m1".to_owned(), "syn1".to_owned()];
        drop_syndics(&dir, &mut expected);
        assert_eq!(expected.len(), 2, "nothing recorded yet");
        remember_syndic(&dir, "syn1");
        drop_syndics(&dir, &mut expected);
        assert_eq!(expected, vec!["m1"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn which_events_go_up_and_how_the_top_fires_them() {
        let m = |v: serde_json::Value| v.as_object().unwrap().clone();
        let jid = "20261207120000123456";
        assert!(is_jid(jid) && is_jid("20261207120000123456_1") && !is_jid("2026120712"));
        assert!(!is_jid("20261207120000123456x") && !is_jid("salt/job"));
        // A return carries a retcode: it goes up as a return, not as an event.
        let ret = m(json!({"id": "a1", "retcode": 0, "return": true}));
        assert!(!forwards_up(&format!("salt/job/{jid}/ret/a1"), &ret));
        // The bare-jid minion list goes up as SyndicExpect; the new-job event is Salt-blacklisted.
        assert!(!forwards_up(jid, &m(json!({"minions": ["a1"]}))));
        assert!(!forwards_up(
            &format!("salt/job/{jid}/new"),
            &m(json!({"minions": []}))
        ));
        assert!(!forwards_up("salt/key", &m(json!({"act": "accept"}))));
        for tag in [
            "salt/minion/a1/start",
            "salt/auth",
            "custom/app/deploy",
            "syndic/x/y",
        ] {
            assert!(forwards_up(tag, &m(json!({"data": 1}))), "{tag}");
        }
        assert_eq!(
            tags_at_top("syn1", "salt/minion/a1/start"),
            vec!["syndic/syn1/salt/minion/a1/start", "salt/minion/a1/start"]
        );
        assert_eq!(
            tags_at_top("syn1", "custom/app"),
            vec!["syndic/syn1/custom/app", "custom/app"]
        );
        // Never as the top master's own.
        assert_eq!(
            tags_at_top("syn1", "salt/auth"),
            vec!["syndic/syn1/salt/auth"]
        );
        assert!(!fired_from_below("salt/job/1/new") && fired_from_below("salt/auth"));
    }

    #[test]
    fn old_notes_are_dropped() {
        let s = Syndics::default();
        let t0 = Instant::now();
        s.forward(&load("1"), Duration::from_secs(5), t0);
        assert!(s.watch("1").is_some());
        s.forward(&load("2"), Duration::from_secs(5), t0 + NOTES_KEPT);
        assert!(s.watch("1").is_none() && s.watch("2").is_some());
    }
}
