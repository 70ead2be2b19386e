//! The event bus of a cluster: every replica's events on every replica's bus, each once.
//!
//! Firing puts the event on this replica's own bus at once (local subscribers never wait for
//! NATS) and queues it for NATS; a task forwards the queue in order, and another puts the
//! events of the other replicas on the local bus, skipping this replica's own. Core NATS, not
//! JetStream: Salt's events are fire-and-forget, a subscriber sees what is fired while it
//! listens, and a replica that was away has nobody to replay them to (ARCHITECTURE.md).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::nats::Nats;
use crate::events::{Bus, Event, EventStream, LocalBus};

/// Events waiting for NATS at most; past that, new ones are dropped (and counted) rather than
/// making anyone wait.
const QUEUE: usize = 65_536;

/// An event on the wire.
#[derive(Serialize, Deserialize)]
struct WireEvent {
    tag: String,
    data: Map<String, Value>,
}

/// The cluster's bus for one replica.
pub struct ClusterBus {
    local: Arc<LocalBus>,
    outbox: mpsc::Sender<Arc<Event>>,
    /// Events dropped because NATS could not take them fast enough.
    pub dropped: Arc<AtomicU64>,
}

impl ClusterBus {
    /// Starts forwarding this replica's events to NATS and the others' to the local bus.
    pub async fn start(
        nats: Nats,
        capacity: usize,
    ) -> Result<Arc<ClusterBus>, super::nats::NatsError> {
        let subject = nats.subject("events");
        let local = Arc::new(LocalBus::new(capacity));
        let mut inbound = nats.subscribe(subject.clone()).await?;
        let (outbox, mut queued) = mpsc::channel::<Arc<Event>>(QUEUE);
        let me = nats.replica().to_owned();
        let to_local = local.clone();
        tokio::spawn(async move {
            while let Some(m) = inbound.next().await {
                if m.replica == me {
                    continue;
                }
                match serde_json::from_slice::<WireEvent>(&m.payload) {
                    Ok(e) => to_local.publish(Arc::new(Event {
                        tag: e.tag,
                        data: e.data,
                    })),
                    Err(e) => {
                        tracing::warn!(replica = %m.replica, "undecodable event from NATS: {e}")
                    }
                }
            }
        });
        tokio::spawn(async move {
            while let Some(e) = queued.recv().await {
                let wire = WireEvent {
                    tag: e.tag.clone(),
                    data: e.data.clone(),
                };
                let Ok(body) = serde_json::to_vec(&wire) else {
                    continue;
                };
                if let Err(err) = nats.publish(subject.clone(), Bytes::from(body)).await {
                    tracing::warn!(tag = %e.tag, "event not sent to the other replicas: {err}");
                }
            }
        });
        Ok(Arc::new(ClusterBus {
            local,
            outbox,
            dropped: Arc::default(),
        }))
    }
}

impl Bus for ClusterBus {
    fn publish(&self, event: Arc<Event>) {
        self.local.publish(event.clone());
        if self.outbox.try_send(event).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn subscribe(&self) -> EventStream {
        self.local.subscribe()
    }
}
