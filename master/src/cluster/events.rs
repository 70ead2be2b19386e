//! The event bus of a cluster: every replica's events on every replica's bus, each once.
//!
//! Firing puts the event on this replica's own bus at once (local subscribers never wait for
//! NATS) and queues it for NATS; a task forwards the queue in order, and another puts the
//! events of the other replicas on the local bus, skipping this replica's own. Core NATS, not
//! JetStream: Salt's events are fire-and-forget, a subscriber sees what is fired while it
//! listens, and a replica that was away has nobody to replay them to (ARCHITECTURE.md).

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::counts::Counts;
use super::nats::Nats;
use super::outbox::Outbox;
use super::tasks::Tasks;
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
    outbox: Outbox<Arc<Event>>,
}

impl ClusterBus {
    /// Starts forwarding this replica's events to NATS and the others' to the local bus;
    /// events dropped for a full queue are counted in `dropped` as `events`.
    pub async fn start(
        nats: Nats,
        capacity: usize,
        dropped: Arc<Counts>,
        tasks: &Tasks,
    ) -> Result<Arc<ClusterBus>, super::nats::NatsError> {
        let subject = nats.subject("events");
        let local = Arc::new(LocalBus::new(capacity));
        let mut inbound = nats.subscribe_others(subject.clone()).await?;
        let to_local = local.clone();
        tasks.spawn(async move {
            while let Some(m) = inbound.next().await {
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
        let outbox = Outbox::start(
            "events",
            QUEUE,
            nats,
            move |e: Arc<Event>| {
                let wire = WireEvent {
                    tag: e.tag.clone(),
                    data: e.data.clone(),
                };
                let body = serde_json::to_vec(&wire).ok()?;
                Some((subject.clone(), Bytes::from(body)))
            },
            dropped,
            tasks,
        );
        Ok(Arc::new(ClusterBus { local, outbox }))
    }
}

impl Bus for ClusterBus {
    fn publish(&self, event: Arc<Event>) {
        self.local.publish(event.clone());
        self.outbox.send(event);
    }

    fn subscribe(&self) -> EventStream {
        self.local.subscribe()
    }
}
