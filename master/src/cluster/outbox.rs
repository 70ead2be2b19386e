//! The ordered "queue → publish" task of a replica, written once: a bounded queue that never
//! makes the sender wait (a full queue drops the message and counts it on `/metrics`), and one
//! task that publishes what it holds in order. At stop it publishes what is still queued, so a
//! goodbye queued last still leaves. The replica runs three: its events, its routes, and what
//! it shares (returns, facts, keys).

use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use tokio::sync::mpsc;

use super::counts::Counts;
use super::nats::Nats;
use super::tasks::Tasks;

/// Where an outbox publishes: NATS, or a recorder in tests.
pub trait Publish: Send + Sync + 'static {
    /// Publishes `body` on `subject`.
    fn publish(&self, subject: String, body: Bytes) -> BoxFuture<'_, Result<(), String>>;
}

impl Publish for Nats {
    fn publish(&self, subject: String, body: Bytes) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(Nats::publish(self, subject, body))
    }
}

/// The sending side of an ordered publisher of `T`.
pub struct Outbox<T> {
    name: &'static str,
    tx: mpsc::Sender<T>,
    dropped: Arc<Counts>,
}

impl<T: Send + 'static> Outbox<T> {
    /// Starts the task that publishes what is queued, in order, each message made by `encode`
    /// (`None`: nothing to send). At most `capacity` wait; past that, messages are dropped
    /// and counted in `dropped` under `name`.
    pub fn start<P, E>(
        name: &'static str,
        capacity: usize,
        to: P,
        encode: E,
        dropped: Arc<Counts>,
        tasks: &Tasks,
    ) -> Outbox<T>
    where
        P: Publish,
        E: Fn(T) -> Option<(String, Bytes)> + Send + Sync + 'static,
    {
        let (tx, mut rx) = mpsc::channel::<T>(capacity);
        let mut stop = tasks.stopping();
        tasks.spawn_watching(async move {
            let send = |item: T| {
                let msg = encode(item);
                let to = &to;
                async move {
                    if let Some((subject, body)) = msg
                        && let Err(e) = to.publish(subject.clone(), body).await
                    {
                        tracing::warn!(queue = name, %subject, "cluster message not sent: {e}");
                    }
                }
            };
            loop {
                tokio::select! {
                    biased;
                    item = rx.recv() => match item {
                        Some(item) => send(item).await,
                        None => return,
                    },
                    () = Tasks::stopped(&mut stop) => break,
                }
            }
            // Stopping: what was queued before still leaves, in order.
            rx.close();
            while let Some(item) = rx.recv().await {
                send(item).await;
            }
        });
        Outbox { name, tx, dropped }
    }

    /// Queues `item`; a full (or stopped) queue drops it and counts the drop.
    pub fn send(&self, item: T) -> bool {
        match self.tx.try_send(item) {
            Ok(()) => true,
            Err(_) => {
                self.dropped.add(self.name, 1);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    /// Records what is published; holds every publish until `gate` opens.
    struct Recorder {
        seen: Arc<Mutex<Vec<(String, Bytes)>>>,
        gate: tokio::sync::watch::Receiver<bool>,
    }

    impl Publish for Recorder {
        fn publish(&self, subject: String, body: Bytes) -> BoxFuture<'_, Result<(), String>> {
            Box::pin(async move {
                let mut gate = self.gate.clone();
                let _ = gate.wait_for(|open| *open).await;
                self.seen.lock().unwrap().push((subject, body));
                Ok(())
            })
        }
    }

    fn encode(n: u32) -> Option<(String, Bytes)> {
        // Odd numbers have nothing to send.
        n.is_multiple_of(2)
            .then(|| ("s".to_owned(), Bytes::from(n.to_string())))
    }

    #[tokio::test]
    async fn publishes_in_order_drops_past_capacity_and_drains_at_stop() {
        let tasks = Tasks::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (open, gate) = tokio::sync::watch::channel(false);
        let dropped = Arc::new(Counts::new(&["test", "other"]));
        let out = Outbox::start(
            "test",
            4,
            Recorder {
                seen: seen.clone(),
                gate,
            },
            encode,
            dropped.clone(),
            &tasks,
        );
        // The task takes the first message and waits on the gate with it; four more fill the
        // queue; the rest are dropped, and counted.
        assert!(out.send(0));
        for _ in 0..100 {
            if out.tx.capacity() == 4 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let accepted: Vec<u32> = (1..=10).filter(|n| out.send(*n)).collect();
        assert_eq!(accepted, vec![1, 2, 3, 4]);
        assert_eq!(dropped.get("test"), 6);
        // Stopping while the gate is still shut: everything queued leaves, in order.
        let stopping = tokio::spawn(async move { tasks.stop(Duration::from_secs(10)).await });
        open.send_replace(true);
        stopping.await.unwrap();
        let got: Vec<String> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
            .collect();
        assert_eq!(got, vec!["0", "2", "4"]);
        assert!(!out.send(6), "a stopped outbox takes nothing");
        assert_eq!(dropped.get("test"), 7);
    }
}
