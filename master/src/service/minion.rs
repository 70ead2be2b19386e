//! MinionService: the subscription each minion holds, and its returns and events.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::Stream;
use saltq_proto::v1::{self as pb, minion_service_server::MinionService};
use saltq_transport::{Peer, value};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tonic::metadata::MetadataValue;
use tonic::{Request, Response, Status};

use crate::keys::Admission;
use crate::state::Master;

/// Metadata key carrying the minion's key state on a refusal, so it knows to wait and retry.
pub const KEY_STATE_HEADER: &str = saltq_transport::KEY_STATE_HEADER;

/// The service.
pub struct MinionApi {
    master: Arc<Master>,
}

impl MinionApi {
    /// Serves `master`.
    pub fn new(master: Arc<Master>) -> Self {
        MinionApi { master }
    }

    /// The calling minion's id, once its key is accepted. `announce` fires `salt/auth`.
    fn admit<T>(&self, req: &Request<T>, announce: bool) -> Result<String, Status> {
        let Peer::Minion {
            id,
            public_key_pem,
            issuer,
            ..
        } = super::peer(req)?
        else {
            return Err(Status::permission_denied(
                "MinionService needs a minion certificate",
            ));
        };
        let keys = &self.master.keys;
        let admission = if keys.is_admitted(id, public_key_pem) {
            Admission::Accepted
        } else {
            // Admitting a new key waits for the disk: let the runtime move this worker's
            // other tasks (handshakes, returns) elsewhere meanwhile.
            tokio::task::block_in_place(|| keys.admit(id, public_key_pem, *issuer))
                .map_err(|e| Status::internal(e.to_string()))?
        };
        if announce || admission != Admission::Accepted {
            self.master.events.fire(
                "salt/auth",
                json!({"act": admission.act(), "id": id, "result": admission != Admission::Rejected && admission != Admission::Denied}),
            );
        }
        let refuse = |state: &str, msg: String| {
            let mut s = Status::permission_denied(msg);
            if let Ok(v) = MetadataValue::try_from(state) {
                s.metadata_mut().insert(KEY_STATE_HEADER, v);
            }
            s
        };
        match admission {
            Admission::Accepted => Ok(id.clone()),
            Admission::Pending => Err(refuse(
                "pending",
                format!(
                    "the key of minion {id} is pending acceptance on the master (saltq key -a {id})"
                ),
            )),
            Admission::Rejected => Err(refuse(
                "rejected",
                format!("the key of minion {id} was rejected by the master"),
            )),
            Admission::Denied => Err(refuse(
                "denied",
                format!("minion {id} presented a key that differs from the accepted one: denied"),
            )),
        }
    }
}

/// Compiles a minion's pillar on the blocking pool: it reads and renders files, and a fleet
/// subscribing at once must not hold the async workers on them.
async fn compile_pillar(master: &Arc<Master>, id: &str, grains: Value) -> Result<Value, String> {
    let roots = master.cfg.pillar_roots.clone();
    let id = id.to_owned();
    tokio::task::spawn_blocking(move || {
        crate::pillar::compile(&roots, &id, &grains).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| format!("pillar compilation failed: {e}"))?
}

/// A subscription stream that tells the master when the minion goes away.
pub struct SubscriptionStream {
    rx: mpsc::Receiver<Arc<pb::SubscribeResponse>>,
    master: Arc<Master>,
    id: String,
    conn_id: u64,
}

impl Stream for SubscriptionStream {
    type Item = Result<pb::SubscribeResponse, Status>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx
            .poll_recv(cx)
            .map(|m| m.map(|m| Ok(Arc::unwrap_or_clone(m))))
    }
}

impl Drop for SubscriptionStream {
    fn drop(&mut self) {
        self.master.unsubscribe(&self.id, self.conn_id);
        tracing::info!(minion = %self.id, "minion unsubscribed");
    }
}

#[tonic::async_trait]
impl MinionService for MinionApi {
    type SubscribeStream = SubscriptionStream;

    async fn subscribe(
        &self,
        req: Request<pb::SubscribeRequest>,
    ) -> Result<Response<SubscriptionStream>, Status> {
        let id = self.admit(&req, true)?;
        let body = req.into_inner();
        let grains = Value::Object(value::opt_struct(body.grains.as_ref()));
        let pillar = compile_pillar(&self.master, &id, grains.clone())
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(minion = %id, "pillar failed to compile: {e}");
                json!({"_errors": [e]})
            });
        let (tx, rx) = mpsc::channel(1024);
        let welcome = pb::SubscribeResponse {
            kind: Some(pb::subscribe_response::Kind::Welcome(pb::Welcome {
                master_id: self.master.cfg.id.clone(),
                pillar: Some(value::json_to_struct(&pillar)),
            })),
        };
        tx.try_send(Arc::new(welcome))
            .map_err(|_| Status::internal("subscription channel closed"))?;
        let conn_id = self.master.subscribe(&id, grains, pillar, tx);
        tracing::info!(minion = %id, version = %body.version, "minion subscribed");
        let ours = env!("CARGO_PKG_VERSION");
        if !body.version.is_empty() && body.version != ours {
            // Salt's manage.versions tells the same story on demand; a mixed fleet is worth a
            // line in the master's log as it happens.
            tracing::warn!(minion = %id, "minion runs saltq {}, the master {ours}", body.version);
        }
        self.master.events.fire(
            format!("salt/minion/{id}/start"),
            json!({"id": id, "cmd": "_minion_event", "data": format!("Minion {id} started")}),
        );
        self.master.events.fire(
            "minion_start",
            json!({"id": id, "cmd": "_minion_event", "data": format!("Minion {id} started")}),
        );
        Ok(Response::new(SubscriptionStream {
            rx,
            master: self.master.clone(),
            id,
            conn_id,
        }))
    }

    async fn r#return(
        &self,
        req: Request<pb::ReturnRequest>,
    ) -> Result<Response<pb::ReturnResponse>, Status> {
        let id = self.admit(&req, false)?;
        let stored = self.master.accept_return(&id, req.into_inner()).await?;
        Ok(Response::new(pb::ReturnResponse { stored }))
    }

    async fn send_event(
        &self,
        req: Request<pb::SendEventRequest>,
    ) -> Result<Response<pb::SendEventResponse>, Status> {
        let id = self.admit(&req, false)?;
        let body = req.into_inner();
        if body.tag.is_empty() {
            return Err(Status::invalid_argument("event tag must not be empty"));
        }
        crate::tags::check_minion_tag(&id, &body.tag).map_err(Status::permission_denied)?;
        let mut data = value::opt_struct(body.data.as_ref());
        data.insert("id".into(), Value::String(id));
        self.master.events.fire(body.tag, Value::Object(data));
        Ok(Response::new(pb::SendEventResponse {}))
    }

    async fn get_pillar(
        &self,
        req: Request<pb::GetPillarRequest>,
    ) -> Result<Response<pb::GetPillarResponse>, Status> {
        let id = self.admit(&req, false)?;
        let grains = self.master.facts.grains(&id).unwrap_or(json!({}));
        let pillar = compile_pillar(&self.master, &id, grains)
            .await
            .map_err(|e| Status::internal(format!("pillar for {id} failed to compile: {e}")))?;
        self.master.facts.set_pillar(&id, pillar.clone());
        Ok(Response::new(pb::GetPillarResponse {
            pillar: Some(value::json_to_struct(&pillar)),
        }))
    }

    async fn update_grains(
        &self,
        req: Request<pb::UpdateGrainsRequest>,
    ) -> Result<Response<pb::UpdateGrainsResponse>, Status> {
        let id = self.admit(&req, false)?;
        let grains = Value::Object(value::opt_struct(req.into_inner().grains.as_ref()));
        self.master.facts.set_grains(&id, &grains);
        Ok(Response::new(pb::UpdateGrainsResponse {}))
    }

    async fn sync_files(
        &self,
        req: Request<pb::SyncFilesRequest>,
    ) -> Result<Response<pb::SyncFilesResponse>, Status> {
        self.admit(&req, false)?;
        let kind = req.into_inner().kind;
        if !matches!(kind.as_str(), "modules" | "grains" | "returners") {
            return Err(Status::invalid_argument(format!(
                "unknown sync kind {kind:?}: expected modules, grains or returners"
            )));
        }
        let mut files = Vec::new();
        for root in &self.master.cfg.file_roots {
            let dir = root.join(format!("_{kind}"));
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let path = e.path();
                if !path.is_file() {
                    continue;
                }
                use std::os::unix::fs::PermissionsExt;
                let meta = e
                    .metadata()
                    .map_err(|err| Status::internal(format!("{}: {err}", path.display())))?;
                let contents = std::fs::read(&path)
                    .map_err(|err| Status::internal(format!("{}: {err}", path.display())))?;
                files.push(pb::SyncedFile {
                    name: e.file_name().to_string_lossy().into_owned(),
                    contents,
                    executable: meta.permissions().mode() & 0o111 != 0,
                });
            }
        }
        files.sort_by(|a, b| a.name.cmp(&b.name));
        files.dedup_by(|a, b| a.name == b.name);
        Ok(Response::new(pb::SyncFilesResponse { files }))
    }
}
