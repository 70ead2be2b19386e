//! SyndicService, on a top master (`order_masters: True`): the subscription a syndic holds,
//! the minions it expects for a job, its minions' returns and its forwarded events. The
//! syndic is admitted as a minion is, by the key of its certificate through the key store
//! (Salt's syndic key is a minion key on the top master), and is a syndic because it calls
//! this service: it is never targeted as a minion.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::Stream;
use saltq_proto::v1::{self as pb, syndic_service_server::SyndicService};
use saltq_transport::value;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tonic::{Request, Response, Status};

use crate::service::minion::MinionApi;
use crate::state::Master;

/// The service.
pub struct SyndicApi {
    master: Arc<Master>,
    /// Admission by key, shared with the minions' service.
    minions: MinionApi,
}

impl SyndicApi {
    /// Serves `master`; `minions` admits callers by their key.
    pub fn new(master: Arc<Master>, minions: MinionApi) -> SyndicApi {
        SyndicApi { master, minions }
    }

    /// The calling syndic's id, once its key is accepted and this master takes syndics.
    fn admit<T>(&self, req: &Request<T>, announce: bool) -> Result<String, Status> {
        if !self.master.cfg.syndic.order_masters {
            return Err(Status::failed_precondition(format!(
                "master {} does not take syndics: order_masters is not set in {}",
                self.master.cfg.id,
                self.master.cfg.file.display()
            )));
        }
        self.minions.admit(req, announce)
    }
}

/// A syndic's subscription stream; dropping it forgets the syndic.
pub struct SyndicStream {
    rx: mpsc::Receiver<Arc<pb::SyndicSubscribeResponse>>,
    master: Arc<Master>,
    id: String,
    conn: u64,
}

impl Stream for SyndicStream {
    type Item = Result<pb::SyndicSubscribeResponse, Status>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx
            .poll_recv(cx)
            .map(|m| m.map(|m| Ok(Arc::unwrap_or_clone(m))))
    }
}

impl Drop for SyndicStream {
    fn drop(&mut self) {
        self.master.syndics.detach(&self.id, self.conn);
        tracing::info!(syndic = %self.id, "syndic unsubscribed");
    }
}

#[tonic::async_trait]
impl SyndicService for SyndicApi {
    type SyndicSubscribeStream = SyndicStream;

    async fn syndic_subscribe(
        &self,
        req: Request<pb::SyndicSubscribeRequest>,
    ) -> Result<Response<SyndicStream>, Status> {
        let id = self.admit(&req, true)?;
        let (tx, rx) = mpsc::channel(1024);
        let hello = pb::SyndicSubscribeResponse {
            kind: Some(pb::syndic_subscribe_response::Kind::MasterId(
                self.master.cfg.id.clone(),
            )),
        };
        tx.try_send(Arc::new(hello))
            .map_err(|_| Status::internal("syndic subscription channel closed"))?;
        crate::syndic::remember_syndic(&self.master.cfg.cachedir, &id);
        let conn = self.master.syndics.attach(&id, tx);
        tracing::info!(syndic = %id, version = %req.get_ref().version, "syndic subscribed");
        let data = format!("Syndic {id} started");
        self.master.events.fire(
            format!("salt/syndic/{id}/start"),
            json!({"id": id, "cmd": "_minion_event", "data": data}),
        );
        Ok(Response::new(SyndicStream {
            rx,
            master: self.master.clone(),
            id,
            conn,
        }))
    }

    async fn syndic_expect(
        &self,
        req: Request<pb::SyndicExpectRequest>,
    ) -> Result<Response<pb::SyndicExpectResponse>, Status> {
        let id = self.admit(&req, false)?;
        let body = req.into_inner();
        if !self
            .master
            .syndics
            .expect(&body.jid, &id, body.minions.clone())
        {
            return Err(Status::permission_denied(format!(
                "job {} was not forwarded to syndic {id}",
                body.jid
            )));
        }
        // The top's job cache expects them too (Salt's `save_minions(jid, minions,
        // syndic_id)`, merged into the load's `Minions`), so the job's listing and lookups
        // name the minions below.
        if !body.minions.is_empty() {
            tracing::debug!(jid = %body.jid, syndic = %id, minions = ?body.minions, "adding minions for job from syndic master");
            match self
                .master
                .cache
                .add_minions(&body.jid, &body.minions)
                .await
            {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!(jid = %body.jid, syndic = %id, "the job cache holds no such job: the syndic's minions not recorded")
                }
                Err(e) => {
                    tracing::warn!(jid = %body.jid, syndic = %id, "the syndic's minions not recorded: {e}")
                }
            }
        }
        // Salt's shapes: the lower master fires `{"minions": [...]}` under the bare jid; its
        // syndic forwards it, and the top fires it as is and under `syndic/<id>/` (what the
        // top's `get_iter_returns` listens to).
        let data = json!({"minions": body.minions});
        self.master.events.fire(body.jid.clone(), data.clone());
        self.master
            .events
            .fire(format!("syndic/{id}/{}", body.jid), data);
        Ok(Response::new(pb::SyndicExpectResponse {}))
    }

    async fn syndic_return(
        &self,
        req: Request<pb::SyndicReturnRequest>,
    ) -> Result<Response<pb::SyndicReturnResponse>, Status> {
        let id = self.admit(&req, false)?;
        let mut stored = 0;
        for r in req.into_inner().returns {
            if r.minion_id.is_empty() {
                return Err(Status::invalid_argument(format!(
                    "a return forwarded by syndic {id} names no minion"
                )));
            }
            let Some(ret) = r.r#return else {
                return Err(Status::invalid_argument(format!(
                    "the return of minion {} forwarded by syndic {id} is empty",
                    r.minion_id
                )));
            };
            if self
                .master
                .accept_syndic_return(&id, &r.minion_id, ret)
                .await?
            {
                stored += 1;
            }
        }
        Ok(Response::new(pb::SyndicReturnResponse { stored }))
    }

    async fn syndic_events(
        &self,
        req: Request<pb::SyndicEventsRequest>,
    ) -> Result<Response<pb::SyndicEventsResponse>, Status> {
        let id = self.admit(&req, false)?;
        for e in req.into_inner().events {
            if e.tag.is_empty() {
                return Err(Status::invalid_argument(format!(
                    "an event forwarded by syndic {id} has an empty tag"
                )));
            }
            // Salt's `_minion_event` with a `pretag`: blacklisted tags are dropped, the rest
            // fired under `syndic/<id>/` and, where the syndic may speak so, as is.
            if !crate::syndic::fired_from_below(&e.tag) {
                continue;
            }
            let data = Value::Object(value::opt_struct(e.data.as_ref()));
            for tag in crate::syndic::tags_at_top(&id, &e.tag) {
                self.master.events.fire(tag, data.clone());
            }
        }
        Ok(Response::new(pb::SyndicEventsResponse {}))
    }
}
