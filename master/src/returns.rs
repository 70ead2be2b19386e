//! Return fan-out: a stored return goes to whoever follows its job. Today the master's own
//! return path feeds it ([`ReturnSink::announce`] after the job cache stored the return); a
//! cluster feeds it from the bus as well, so a return stored by another replica reaches the
//! caller following the job here.
//!
//! Following a job is a guard ([`Following`]): dropping it stops the fan-out for that jid, so
//! no caller has to remember to forget a job.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use saltq_proto::v1 as pb;
use tokio::sync::broadcast;

/// Where stored returns are announced.
pub trait ReturnSink: Send + Sync {
    /// A return was stored: hand it to the job's follower, if any.
    fn announce(&self, ret: Arc<pb::JobReturn>);
}

/// What the master remembers of a followed job, so returns need no job cache read.
pub struct Followed {
    /// Minions the job was published to.
    pub expected: HashSet<String>,
    /// Who published it (the `user` of its return events).
    pub user: String,
    /// When it was published.
    pub started: DateTime<Utc>,
    tx: broadcast::Sender<Arc<pb::JobReturn>>,
}

/// The jobs followed in this process.
#[derive(Default)]
pub struct Followers {
    jobs: Mutex<HashMap<String, Arc<Followed>>>,
}

impl Followers {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Followed>>> {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts following `jid`. The receiver has room for every expected return, so a follower
    /// that is busy for a moment never loses one.
    #[cfg(test)]
    pub fn follow(
        self: &Arc<Self>,
        jid: &str,
        expected: &[String],
        user: &str,
        started: DateTime<Utc>,
    ) -> Following {
        self.follow_with_room(jid, expected, 0, user, started)
    }

    /// As [`Followers::follow`], with room for `more` returns beyond the expected ones: a top
    /// master's syndics return for minions it does not know of, in batches.
    pub fn follow_with_room(
        self: &Arc<Self>,
        jid: &str,
        expected: &[String],
        more: usize,
        user: &str,
        started: DateTime<Utc>,
    ) -> Following {
        let (tx, rx) = broadcast::channel(expected.len().max(16) + 16 + more);
        let followed = Arc::new(Followed {
            expected: expected.iter().cloned().collect(),
            user: user.to_owned(),
            started,
            tx,
        });
        self.lock().insert(jid.to_owned(), followed);
        Following {
            jid: jid.to_owned(),
            rx,
            followers: self.clone(),
        }
    }

    /// The followed job `jid`, if it is followed here.
    pub fn get(&self, jid: &str) -> Option<Arc<Followed>> {
        self.lock().get(jid).cloned()
    }

    /// How many jobs are followed.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().len()
    }
}

impl ReturnSink for Followers {
    fn announce(&self, ret: Arc<pb::JobReturn>) {
        if let Some(f) = self.get(&ret.jid) {
            // A follower that went away is not an error.
            let _ = f.tx.send(ret);
        }
    }
}

/// A followed job's returns; dropping it stops following the job.
pub struct Following {
    /// The job.
    pub jid: String,
    /// Its returns as they are stored.
    pub rx: broadcast::Receiver<Arc<pb::JobReturn>>,
    followers: Arc<Followers>,
}

impl Drop for Following {
    fn drop(&mut self) {
        self.followers.lock().remove(&self.jid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ret(jid: &str, id: &str) -> Arc<pb::JobReturn> {
        Arc::new(pb::JobReturn {
            jid: jid.into(),
            id: id.into(),
            ..Default::default()
        })
    }

    #[test]
    fn returns_reach_the_follower_until_it_lets_go() {
        let followers = Arc::new(Followers::default());
        let mut f = followers.follow("1", &["m1".into()], "root", Utc::now());
        assert!(followers.get("1").unwrap().expected.contains("m1"));
        followers.announce(ret("1", "m1"));
        followers.announce(ret("2", "m1"));
        assert_eq!(f.rx.try_recv().unwrap().id, "m1");
        assert!(f.rx.try_recv().is_err());
        drop(f);
        assert_eq!(followers.len(), 0);
        followers.announce(ret("1", "m1"));
    }
}
