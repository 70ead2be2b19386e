//! The master's event bus: Salt's tags and data, each event stamped with `_stamp`.
//!
//! Firing never waits for subscribers. A subscriber that falls behind loses the oldest events
//! and is told how many it missed, so a slow reader never slows the master or other readers.

use std::pin::Pin;
use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use serde_json::{Map, Value};
use tokio::sync::broadcast;
use tokio_stream::wrappers::{BroadcastStream, errors::BroadcastStreamRecvError};

/// One event.
#[derive(Debug, Clone)]
pub struct Event {
    /// Salt's tag, e.g. `salt/job/<jid>/ret/<id>`.
    pub tag: String,
    /// Event data, including `_stamp`.
    pub data: Map<String, Value>,
}

/// A subscriber fell behind and lost this many events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Missed(pub u64);

/// What a subscription yields: events in order, or how many it missed.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<Arc<Event>, Missed>> + Send>>;

/// The transport of events: in one master an in-process broadcast ([`LocalBus`]); a cluster
/// carries every replica's events to every other.
pub trait Bus: Send + Sync {
    /// Sends an event to every subscriber, never waiting for any.
    fn publish(&self, event: Arc<Event>);
    /// A subscription seeing events published from now on.
    fn subscribe(&self) -> EventStream;
}

/// The in-process bus: a broadcast channel keeping `capacity` events for slow subscribers.
pub struct LocalBus {
    tx: broadcast::Sender<Arc<Event>>,
}

impl LocalBus {
    /// A bus that keeps up to `capacity` events for slow subscribers.
    pub fn new(capacity: usize) -> LocalBus {
        LocalBus {
            tx: broadcast::channel(capacity).0,
        }
    }
}

impl Bus for LocalBus {
    fn publish(&self, event: Arc<Event>) {
        // No subscriber is not an error.
        let _ = self.tx.send(event);
    }

    fn subscribe(&self) -> EventStream {
        Box::pin(
            BroadcastStream::new(self.tx.subscribe())
                .map(|r| r.map_err(|BroadcastStreamRecvError::Lagged(n)| Missed(n))),
        )
    }
}

/// Handle to the bus; cheap to clone. Stamps and counts what is fired.
#[derive(Clone)]
pub struct EventBus {
    bus: Arc<dyn Bus>,
    metrics: Arc<crate::metrics::Metrics>,
}

/// Salt's `_stamp`: UTC, ISO 8601 with microseconds and no zone suffix.
pub fn stamp() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6f")
        .to_string()
}

impl EventBus {
    /// An in-process bus that keeps up to `capacity` events for slow subscribers.
    #[cfg(test)]
    pub fn new(capacity: usize, metrics: Arc<crate::metrics::Metrics>) -> EventBus {
        EventBus::on(Arc::new(LocalBus::new(capacity)), metrics)
    }

    /// A handle firing onto `bus`.
    pub fn on(bus: Arc<dyn Bus>, metrics: Arc<crate::metrics::Metrics>) -> EventBus {
        EventBus { bus, metrics }
    }

    /// Counts events a slow subscriber missed.
    pub fn missed(&self, n: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.metrics.slow_subscribers.fetch_add(1, Relaxed);
        self.metrics.events_missed.fetch_add(n, Relaxed);
    }

    /// Fires an event; `data` should be an object (anything else is wrapped as `{"data": ...}`).
    pub fn fire(&self, tag: impl Into<String>, data: Value) {
        let mut data = match data {
            Value::Object(m) => m,
            other => {
                let mut m = Map::new();
                m.insert("data".into(), other);
                m
            }
        };
        data.insert("_stamp".into(), Value::String(stamp()));
        let event = Arc::new(Event {
            tag: tag.into(),
            data,
        });
        tracing::debug!(tag = %event.tag, "event");
        self.metrics
            .events_fired
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.bus.publish(event);
    }

    /// A new subscription, seeing events fired from now on.
    pub fn subscribe(&self) -> EventStream {
        self.bus.subscribe()
    }
}

/// Which tags a subscriber wants.
#[derive(Debug, Clone)]
pub enum TagFilter {
    /// Every event.
    All,
    /// fnmatch glob.
    Glob(String),
    /// Tag starts with.
    Prefix(String),
    /// Regular expression (searched anywhere in the tag, anchor it to match whole tags).
    Regex(regex::Regex),
}

impl TagFilter {
    /// Whether `tag` passes.
    pub fn matches(&self, tag: &str) -> bool {
        match self {
            TagFilter::All => true,
            TagFilter::Glob(g) => saltq_semantics::python::fnmatch(tag, g),
            TagFilter::Prefix(p) => tag.starts_with(p.as_str()),
            TagFilter::Regex(r) => r.is_match(tag),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn slow_subscriber_is_told_what_it_missed() {
        let bus = EventBus::new(4, Default::default());
        let mut slow = bus.subscribe();
        for i in 0..10 {
            bus.fire(format!("t/{i}"), json!({"i": i}));
        }
        match slow.next().await {
            Some(Err(Missed(n))) => assert_eq!(n, 6),
            other => panic!("expected lag, got {other:?}"),
        }
        let next = slow.next().await.unwrap().unwrap();
        assert_eq!(next.tag, "t/6");
        assert!(next.data.contains_key("_stamp"));
    }

    #[test]
    fn filters() {
        assert!(TagFilter::Glob("salt/job/*/ret/*".into()).matches("salt/job/1/ret/m"));
        assert!(!TagFilter::Glob("salt/job/*/new".into()).matches("salt/auth"));
        assert!(TagFilter::Prefix("salt/job/".into()).matches("salt/job/1/new"));
        assert!(
            TagFilter::Regex(regex::Regex::new("^salt/(auth|key)$").unwrap()).matches("salt/key")
        );
    }
}
