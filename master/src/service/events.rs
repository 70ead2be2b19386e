//! EventService: watch the bus with a tag filter, and fire events (the tags a caller may fire
//! are `tags.rs`'s rules, checked by `acl.rs`).

use std::sync::Arc;

use futures_util::StreamExt;
use saltq_proto::v1::{
    self as pb, event_service_server::EventService, stream_events_response::Kind,
};
use saltq_transport::value;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::events::{Missed, TagFilter};
use crate::state::Master;

/// The service.
pub struct EventApi {
    master: Arc<Master>,
}

impl EventApi {
    /// Serves `master`.
    pub fn new(master: Arc<Master>) -> Self {
        EventApi { master }
    }
}

fn filter(r: &pb::StreamEventsRequest) -> Result<TagFilter, Status> {
    if r.tag.is_empty() {
        return Ok(TagFilter::All);
    }
    match pb::TagMatch::try_from(r.r#match).unwrap_or(pb::TagMatch::Unspecified) {
        pb::TagMatch::Unspecified | pb::TagMatch::Glob => Ok(TagFilter::Glob(r.tag.clone())),
        pb::TagMatch::Prefix => Ok(TagFilter::Prefix(r.tag.clone())),
        pb::TagMatch::Regex => regex::Regex::new(&r.tag)
            .map(TagFilter::Regex)
            .map_err(|e| Status::invalid_argument(format!("invalid tag regex {:?}: {e}", r.tag))),
    }
}

#[tonic::async_trait]
impl EventService for EventApi {
    type StreamEventsStream = ReceiverStream<Result<pb::StreamEventsResponse, Status>>;

    async fn stream_events(
        &self,
        req: Request<pb::StreamEventsRequest>,
    ) -> Result<Response<Self::StreamEventsStream>, Status> {
        super::client_name(&req)?;
        let filter = filter(req.get_ref())?;
        let events = self.master.events.clone();
        let mut bus = events.subscribe();
        let (tx, rx) = mpsc::channel(256);
        tokio::spawn(async move {
            loop {
                let kind = tokio::select! {
                    r = bus.next() => match r {
                        Some(Ok(ev)) if filter.matches(&ev.tag) => Kind::Event(pb::Event {
                            tag: ev.tag.clone(),
                            data: Some(value::map_to_struct(&ev.data)),
                        }),
                        Some(Ok(_)) => continue,
                        Some(Err(Missed(n))) => {
                            tracing::warn!("event subscriber fell behind, {n} events missed");
                            events.missed(n);
                            Kind::Missed(n)
                        }
                        None => break,
                    },
                    _ = tx.closed() => break,
                };
                if tx
                    .send(Ok(pb::StreamEventsResponse { kind: Some(kind) }))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn fire_event(
        &self,
        req: Request<pb::FireEventRequest>,
    ) -> Result<Response<pb::FireEventResponse>, Status> {
        let who = super::caller(&req)?;
        let r = req.into_inner();
        if r.tag.is_empty() {
            return Err(Status::invalid_argument("event tag must not be empty"));
        }
        // Who may fire what (`tags.rs`): the refusal names the tag and the rule.
        self.master.cfg.acl.fire(&who, &r.tag)?;
        self.master
            .events
            .fire(r.tag, Value::Object(value::opt_struct(r.data.as_ref())));
        Ok(Response::new(pb::FireEventResponse {}))
    }
}
