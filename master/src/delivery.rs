//! Delivery to minions' subscriptions: the seam between "these minions must receive this job"
//! and the streams that carry it. In one master the streams are local ([`Subscriptions`]); a
//! cluster of masters implements [`Delivery`] by handing the job to the replica that holds each
//! minion's subscription.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use saltq_proto::v1 as pb;
use tokio::sync::mpsc;

/// The sender half of a minion's subscription stream. Messages are shared, so a job published
/// to many minions is one allocation until each stream encodes it, and a subscription's queue
/// costs a pointer per slot (tokio allocates a queue's slots 32 at a time, per subscription).
pub type SubscriptionTx = mpsc::Sender<Arc<pb::SubscribeResponse>>;

/// To whom a message was handed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// The minions whose subscription took it, in the order asked.
    pub sent: Vec<String>,
    /// Minions connected to a replica of the cluster that could not be reached: neither sent
    /// the message nor known to be disconnected.
    pub unreachable: Vec<String>,
}

/// Where jobs for minions go.
pub trait Delivery: Send + Sync {
    /// Records a minion's new subscription, replacing an older one; returns its connection id.
    fn attach(&self, id: &str, tx: SubscriptionTx) -> u64;
    /// Forgets a subscription, unless a newer connection of the same minion replaced it.
    fn detach(&self, id: &str, conn_id: u64);
    /// Ends a minion's subscription whatever its connection (its key was deleted or rejected).
    fn close(&self, id: &str) -> bool;
    /// Hands `msg` to the subscriptions of `ids`; answers to whom, in order.
    fn deliver<'a>(
        &'a self,
        ids: &'a [String],
        msg: Arc<pb::SubscribeResponse>,
    ) -> BoxFuture<'a, Delivered>;
    /// Whether a minion has a live subscription.
    fn is_connected(&self, id: &str) -> bool;
    /// Ids with a live subscription, sorted.
    fn connected(&self) -> Vec<String>;
    /// How many minions have a live subscription (no copy of the ids: `/metrics` asks often).
    fn connected_count(&self) -> usize;
}

/// A connected minion's subscription.
struct Subscription {
    tx: SubscriptionTx,
    /// Distinguishes this connection from a later one of the same minion.
    conn_id: u64,
}

/// The subscriptions held by this master process.
#[derive(Default)]
pub struct Subscriptions {
    subs: Mutex<HashMap<String, Subscription>>,
    next_conn: AtomicU64,
}

impl Subscriptions {
    /// Hands `msg` to the subscriptions held here among `ids`; returns to whom, in order.
    pub fn deliver_here(&self, ids: &[String], msg: &Arc<pb::SubscribeResponse>) -> Vec<String> {
        let senders: Vec<(&String, SubscriptionTx)> = {
            let subs = self.lock();
            ids.iter()
                .filter_map(|id| subs.get(id).map(|s| (id, s.tx.clone())))
                .collect()
        };
        let mut sent = Vec::with_capacity(senders.len());
        for (id, tx) in senders {
            match tx.try_send(msg.clone()) {
                Ok(()) => sent.push(id.clone()),
                Err(_) => {
                    tracing::warn!(minion = %id, "subscription full or closed, message not delivered")
                }
            }
        }
        sent
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Subscription>> {
        self.subs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Delivery for Subscriptions {
    fn attach(&self, id: &str, tx: SubscriptionTx) -> u64 {
        let conn_id = self.next_conn.fetch_add(1, Ordering::Relaxed) + 1;
        self.lock()
            .insert(id.to_owned(), Subscription { tx, conn_id });
        conn_id
    }

    fn detach(&self, id: &str, conn_id: u64) {
        let mut subs = self.lock();
        if subs.get(id).is_some_and(|s| s.conn_id == conn_id) {
            subs.remove(id);
        }
    }

    fn close(&self, id: &str) -> bool {
        // Dropping the sender ends the stream: the minion sees its subscription end.
        self.lock().remove(id).is_some()
    }

    fn deliver<'a>(
        &'a self,
        ids: &'a [String],
        msg: Arc<pb::SubscribeResponse>,
    ) -> BoxFuture<'a, Delivered> {
        let sent = self.deliver_here(ids, &msg);
        Box::pin(async move {
            Delivered {
                sent,
                unreachable: Vec::new(),
            }
        })
    }

    fn is_connected(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }

    fn connected(&self) -> Vec<String> {
        let mut v: Vec<String> = self.lock().keys().cloned().collect();
        v.sort();
        v
    }

    fn connected_count(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg() -> Arc<pb::SubscribeResponse> {
        Arc::new(pb::SubscribeResponse { kind: None })
    }

    #[test]
    fn delivers_to_connected_minions_and_says_to_whom() {
        let subs = Subscriptions::default();
        let (tx1, mut rx1) = mpsc::channel(4);
        let (tx2, rx2) = mpsc::channel(1);
        subs.attach("m1", tx1);
        subs.attach("m2", tx2);
        drop(rx2);
        let ids = ["m1".to_owned(), "m2".to_owned(), "m3".to_owned()];
        assert_eq!(subs.deliver_here(&ids, &msg()), vec!["m1"]);
        assert!(rx1.try_recv().is_ok());
        assert_eq!(subs.connected(), vec!["m1", "m2"]);
    }

    #[test]
    fn an_old_connection_does_not_detach_a_new_one() {
        let subs = Subscriptions::default();
        let old = subs.attach("m1", mpsc::channel(1).0);
        let new = subs.attach("m1", mpsc::channel(1).0);
        subs.detach("m1", old);
        assert!(subs.is_connected("m1"));
        subs.detach("m1", new);
        assert!(!subs.is_connected("m1"));
    }

    #[test]
    fn close_ends_the_stream() {
        let subs = Subscriptions::default();
        let (tx, mut rx) = mpsc::channel(1);
        subs.attach("m1", tx);
        assert!(subs.close("m1"));
        assert!(rx.try_recv().is_err());
        assert!(rx.is_closed());
        assert!(!subs.close("m1"));
    }
}
