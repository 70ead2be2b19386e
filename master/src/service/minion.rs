//! MinionService: the subscription each minion holds, and its returns and events.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::Stream;
use saltq_proto::v1::{self as pb, minion_service_server::MinionService};
use saltq_transport::pki;
use saltq_transport::{Peer, value};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tonic::metadata::MetadataValue;
use tonic::{Request, Response, Status};

use crate::certs::{self, Live};
use crate::keys::Admission;
use crate::state::Master;

/// Metadata key carrying the minion's key state on a refusal, so it knows to wait and retry.
pub const KEY_STATE_HEADER: &str = saltq_transport::KEY_STATE_HEADER;

/// The service.
pub struct MinionApi {
    master: Arc<Master>,
    /// The master's CA, which issues minion certificates (reloaded when its files change).
    certs: Arc<Live>,
}

impl MinionApi {
    /// Serves `master`, issuing minion certificates from `certs`.
    pub fn new(master: Arc<Master>, certs: Arc<Live>) -> Self {
        MinionApi { master, certs }
    }

    /// Whether the master issues the calling minion certificates.
    fn issues_certificates<T>(&self, req: &Request<T>) -> bool {
        matches!(super::peer(req), Ok(Peer::Minion { issuer, .. })
            if certs::may_issue(*issuer, self.master.cfg.issue_minion_certs).is_ok())
    }

    /// The calling minion's id, once its key is accepted. `announce` fires `salt/auth`.
    pub(crate) fn admit<T>(&self, req: &Request<T>, announce: bool) -> Result<String, Status> {
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

/// How many pillar compiles run at once: one per core. Each compile is CPU on the blocking
/// pool, and a fleet subscribing together would otherwise start one per minion (up to
/// tokio's 512 threads) beside the async workers that finish TLS handshakes. A waiting
/// subscription whose minion gives up is dropped before it compiles anything.
fn compile_permits() -> &'static tokio::sync::Semaphore {
    static PERMITS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    PERMITS.get_or_init(|| {
        tokio::sync::Semaphore::new(std::thread::available_parallelism().map_or(2, |n| n.get()))
    })
}

/// Compiles a minion's pillar on the blocking pool: it reads and renders files, and a fleet
/// subscribing at once must not hold the async workers on them.
async fn compile_pillar(
    master: &Arc<Master>,
    id: &str,
    grains: Arc<Value>,
) -> Result<Value, String> {
    let roots = master.cfg.pillar.clone();
    let id = id.to_owned();
    let _permit = compile_permits()
        .acquire()
        .await
        .map_err(|e| format!("pillar compilation failed: {e}"))?;
    tokio::task::spawn_blocking(move || {
        crate::pillar::compile(&roots, &id, &grains).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| format!("pillar compilation failed: {e}"))?
}

/// The pillar as the minion asked for it: in the ordered JSON field (Salt's key order) or, for
/// a minion that does not read it, as a `Struct`.
fn pillar_on_the_wire(pillar: &Value, ordered: bool) -> (Option<prost_types::Struct>, Vec<u8>) {
    if ordered {
        (None, value::to_ordered_json(pillar))
    } else {
        (Some(value::json_to_struct(pillar)), Vec::new())
    }
}

/// [`compile_pillar`] for a request naming a `saltenv` or a `pillarenv` (compiled afresh).
async fn compile_pillar_env(
    master: &Arc<Master>,
    id: &str,
    grains: Arc<Value>,
    saltenv: Option<String>,
    pillarenv: Option<String>,
) -> Result<Value, String> {
    let roots = master.cfg.pillar.clone();
    let id = id.to_owned();
    let _permit = compile_permits()
        .acquire()
        .await
        .map_err(|e| format!("pillar compilation failed: {e}"))?;
    tokio::task::spawn_blocking(move || {
        Arc::unwrap_or_clone(roots.compile_env(&id, &grains, saltenv, pillarenv))
    })
    .await
    .map_err(|e| format!("pillar compilation failed: {e}"))
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
        let issues_certificates = self.issues_certificates(&req);
        let issuer = match super::peer(&req)? {
            Peer::Minion { issuer, .. } => *issuer,
            Peer::Client { .. } => saltq_transport::Issuer::ClientCa,
        };
        let body = req.into_inner();
        // Shared with the pillar's compilation (on a blocking thread) rather than copied: every
        // minion of a restarted master's fleet comes through here at once.
        let grains = Arc::new(Value::Object(value::opt_struct(body.grains.as_ref())));
        drop(body.grains);
        let pillar = compile_pillar(&self.master, &id, grains.clone())
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(minion = %id, "pillar failed to compile: {e}");
                json!({"_errors": [e]})
            });
        let (tx, rx) = mpsc::channel(1024);
        let (pillar_struct, pillar_json) = pillar_on_the_wire(&pillar, body.ordered_pillar);
        let welcome = pb::SubscribeResponse {
            kind: Some(pb::subscribe_response::Kind::Welcome(pb::Welcome {
                master_id: self.master.cfg.id.clone(),
                pillar: pillar_struct,
                issues_certificates,
                pillar_json,
                // Salt's master_opts: the minion's state runs match nodegroups with these.
                nodegroups: Some(value::json_to_struct(&json!(self.master.cfg.nodegroups))),
            })),
        };
        tx.try_send(Arc::new(welcome))
            .map_err(|_| Status::internal("subscription channel closed"))?;
        let conn_id = self.master.subscribe(&id, &grains, pillar, tx);
        tracing::info!(minion = %id, version = %body.version, certificate = ?issuer, "minion subscribed");
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
        let r = req.into_inner();
        if r.jid == crate::schedule::NOCACHE_JID {
            let (tag, event) = crate::schedule::nocache_event(&id, r);
            self.master.events.fire(tag, event);
            return Ok(Response::new(pb::ReturnResponse { stored: false }));
        }
        let stored = self.master.accept_return(&id, r).await?;
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
        let body = req.into_inner();
        let grains = Arc::new(self.master.facts.grains(&id).unwrap_or(json!({})));
        let nonempty = |s: String| (!s.is_empty()).then_some(s);
        let (saltenv, pillarenv) = (nonempty(body.saltenv), nonempty(body.pillarenv));
        // The minion's own pillar (what targeting reads) is the one of no particular env: a
        // state run's `saltenv=`/`pillarenv=` compiles for that run only, as Salt's.
        let own = saltenv.is_none() && pillarenv.is_none();
        let pillar = compile_pillar_env(&self.master, &id, grains, saltenv, pillarenv)
            .await
            .map_err(|e| Status::internal(format!("pillar for {id} failed to compile: {e}")))?;
        if own {
            self.master.facts.set_pillar(&id, pillar.clone());
        }
        let (pillar, pillar_json) = pillar_on_the_wire(&pillar, body.ordered);
        Ok(Response::new(pb::GetPillarResponse {
            pillar,
            pillar_json,
            nodegroups: Some(value::json_to_struct(&json!(self.master.cfg.nodegroups))),
        }))
    }

    async fn get_ext_pillar(
        &self,
        req: Request<pb::GetExtPillarRequest>,
    ) -> Result<Response<pb::GetExtPillarResponse>, Status> {
        let id = self.admit(&req, false)?;
        crate::ext_pillar::serve(&self.master, &id, req.into_inner())
            .await
            .map(Response::new)
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
        if !matches!(kind.as_str(), "modules" | "states" | "grains" | "returners") {
            return Err(Status::invalid_argument(format!(
                "unknown sync kind {kind:?}: expected modules, states, grains or returners"
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

    async fn list_files(
        &self,
        req: Request<pb::ListFilesRequest>,
    ) -> Result<Response<pb::ListFilesResponse>, Status> {
        self.admit(&req, false)?;
        let body = req.into_inner();
        let kind = body.kind();
        let roots = self.master.cfg.fileserver.clone();
        // Walking a tree reads many directories: off the async workers.
        let listing = tokio::task::spawn_blocking(move || roots.list(&body.saltenv, &body.prefix))
            .await
            .map_err(|e| Status::internal(format!("listing the file roots failed: {e}")))?;
        let paths = match kind {
            pb::FileListKind::Unspecified | pb::FileListKind::Files => listing.files,
            pb::FileListKind::Dirs => listing.dirs,
            pb::FileListKind::EmptyDirs => listing.empty_dirs,
        };
        Ok(Response::new(pb::ListFilesResponse { paths }))
    }

    async fn list_envs(
        &self,
        req: Request<pb::ListEnvsRequest>,
    ) -> Result<Response<pb::ListEnvsResponse>, Status> {
        self.admit(&req, false)?;
        Ok(Response::new(pb::ListEnvsResponse {
            saltenvs: self.master.cfg.fileserver.saltenvs(),
        }))
    }

    async fn hash_file(
        &self,
        req: Request<pb::HashFileRequest>,
    ) -> Result<Response<pb::HashFileResponse>, Status> {
        self.admit(&req, false)?;
        let body = req.into_inner();
        let roots = self.master.cfg.fileserver.clone();
        let hash_type = self.master.cfg.hash_type.clone();
        tokio::task::spawn_blocking(move || {
            let Some(found) = roots.find(&body.saltenv, &body.path).map_err(fs_status)? else {
                return Ok(pb::HashFileResponse::default());
            };
            let size = std::fs::metadata(&found.full).map_or(0, |m| m.len());
            let hsum = saltq_fileserver::hash_file(&found.full, &hash_type).map_err(fs_status)?;
            Ok(pb::HashFileResponse {
                found: true,
                hsum,
                hash_type,
                size,
            })
        })
        .await
        .map_err(|e| Status::internal(format!("hashing a file failed: {e}")))?
        .map(Response::new)
    }

    type GetFileStream = FileStream;

    async fn get_file(
        &self,
        req: Request<pb::GetFileRequest>,
    ) -> Result<Response<FileStream>, Status> {
        let id = self.admit(&req, false)?;
        let body = req.into_inner();
        let roots = self.master.cfg.fileserver.clone();
        let (saltenv, path) = (body.saltenv, body.path);
        let found = {
            let (saltenv, path) = (saltenv.clone(), path.clone());
            tokio::task::spawn_blocking(move || roots.find(&saltenv, &path))
                .await
                .map_err(|e| Status::internal(format!("finding a file failed: {e}")))?
                .map_err(fs_status)?
        };
        let Some(found) = found else {
            return Err(Status::not_found(format!(
                "salt://{path} is not in the file roots of saltenv {saltenv}"
            )));
        };
        let file = tokio::fs::File::open(&found.full)
            .await
            .map_err(|e| Status::internal(format!("{}: {e}", found.full.display())))?;
        let size = file.metadata().await.map_or(0, |m| m.len());
        // The log line tells a fetch from a cache hit (the e2e tests count them).
        tracing::info!(minion = %id, %saltenv, path = %found.rel, size, "serving file");
        let hash_type = self.master.cfg.hash_type.clone();
        // At most two chunks wait in memory for the client.
        let (tx, rx) = mpsc::channel(2);
        tokio::spawn(send_chunks(file, found.full, hash_type, tx));
        Ok(Response::new(FileStream { rx }))
    }

    async fn mine_store(
        &self,
        req: Request<pb::MineStoreRequest>,
    ) -> Result<Response<pb::MineStoreResponse>, Status> {
        let id = self.admit(&req, false)?;
        super::mine::store(&self.master, &id, req.into_inner())
            .await
            .map(Response::new)
    }

    async fn mine_get(
        &self,
        req: Request<pb::MineGetRequest>,
    ) -> Result<Response<pb::MineGetResponse>, Status> {
        let id = self.admit(&req, false)?;
        super::mine::get(&self.master, &id, req.into_inner())
            .await
            .map(Response::new)
    }

    async fn mine_delete(
        &self,
        req: Request<pb::MineDeleteRequest>,
    ) -> Result<Response<pb::MineDeleteResponse>, Status> {
        let id = self.admit(&req, false)?;
        super::mine::delete(&self.master, &id, req.into_inner())
            .await
            .map(Response::new)
    }

    async fn mine_flush(
        &self,
        req: Request<pb::MineFlushRequest>,
    ) -> Result<Response<pb::MineFlushResponse>, Status> {
        let id = self.admit(&req, false)?;
        super::mine::flush(&self.master, &id)
            .await
            .map(Response::new)
    }

    async fn renew_certificate(
        &self,
        req: Request<pb::RenewCertificateRequest>,
    ) -> Result<Response<pb::RenewCertificateResponse>, Status> {
        self.renew(req).await
    }
}

impl MinionApi {
    /// `RenewCertificate`: a certificate from the master's CA for the key the minion connected
    /// with, its id as the common name, valid for `minion_cert_days`.
    async fn renew(
        &self,
        req: Request<pb::RenewCertificateRequest>,
    ) -> Result<Response<pb::RenewCertificateResponse>, Status> {
        let id = self.admit(&req, false)?;
        let Peer::Minion {
            issuer,
            public_key_pem,
            ..
        } = super::peer(&req)?
        else {
            return Err(Status::permission_denied(
                "MinionService needs a minion certificate",
            ));
        };
        certs::may_issue(*issuer, self.master.cfg.issue_minion_certs)
            .map_err(|why| Status::failed_precondition(why.message(&id)))?;
        let public_key_der = pki::spki_from_pem(public_key_pem).ok_or_else(|| {
            Status::internal(format!("the public key of minion {id} could not be read"))
        })?;
        let validity =
            certs::issued_validity(certs::unix_now(), self.master.cfg.minion_cert_lifetime);
        let chain = self
            .certs
            .authority()
            .certify(&pki::CertifyRequest {
                common_name: id.clone(),
                role: pki::CertRole::Minion,
                public_key_der,
                validity,
            })
            .map_err(|e| {
                Status::internal(format!("cannot issue minion {id} a certificate: {e}"))
            })?;
        let serial = pki::certs_from_pem(chain.as_bytes(), std::path::Path::new("issued"))
            .ok()
            .and_then(|c| pki::serial_hex(&c[0]).ok())
            .unwrap_or_default();
        tracing::info!(
            minion = %id,
            "issued minion {id} a certificate (serial {serial}) valid until {}",
            pki::format_time(validity.not_after)
        );
        Ok(Response::new(pb::RenewCertificateResponse {
            certificate_chain_pem: chain,
            not_before: validity.not_before,
            not_after: validity.not_after,
        }))
    }
}

/// A refused or failed fileserver request as a status naming the path.
fn fs_status(e: saltq_fileserver::FsError) -> Status {
    if e.is_refusal() {
        Status::invalid_argument(e.to_string())
    } else {
        Status::internal(e.to_string())
    }
}

/// Reads `file` in chunks onto `tx`, the last message carrying the digest of every byte sent.
/// Stops early when the client goes away. Async reads: a slow minion holds no thread while
/// the channel is full, only this task.
async fn send_chunks(
    mut file: tokio::fs::File,
    path: std::path::PathBuf,
    hash_type: String,
    tx: mpsc::Sender<Result<pb::GetFileResponse, Status>>,
) {
    use tokio::io::AsyncReadExt;
    let mut hasher = match saltq_fileserver::Hasher::new(&hash_type) {
        Ok(h) => h,
        Err(e) => {
            let _ = tx.send(Err(Status::internal(e.to_string()))).await;
            return;
        }
    };
    let mut pending: Option<Vec<u8>> = None;
    loop {
        let mut buf = vec![0u8; saltq_fileserver::CHUNK_SIZE];
        let mut n = 0;
        while n < buf.len() {
            match file.read(&mut buf[n..]).await {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) => {
                    let msg = format!("{}: {e}", path.display());
                    let _ = tx.send(Err(Status::internal(msg))).await;
                    return;
                }
            }
        }
        if n == 0 {
            break;
        }
        buf.truncate(n);
        hasher.update(&buf);
        if let Some(data) = pending.replace(buf) {
            let msg = pb::GetFileResponse {
                data,
                ..Default::default()
            };
            if tx.send(Ok(msg)).await.is_err() {
                return;
            }
        }
    }
    let last = pb::GetFileResponse {
        data: pending.unwrap_or_default(),
        hsum: hasher.hex(),
        hash_type,
    };
    let _ = tx.send(Ok(last)).await;
}

/// The chunks of one file on their way to a minion.
pub struct FileStream {
    rx: mpsc::Receiver<Result<pb::GetFileResponse, Status>>,
}

impl Stream for FileStream {
    type Item = Result<pb::GetFileResponse, Status>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `send_chunks` sends for a file of `len` bytes.
    async fn chunks(len: usize) -> (Vec<u8>, Vec<pb::GetFileResponse>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let (tx, mut rx) = mpsc::channel(64);
        let file = tokio::fs::File::open(&path).await.unwrap();
        send_chunks(file, path, "sha256".into(), tx).await;
        let mut out = Vec::new();
        while let Ok(m) = rx.try_recv() {
            out.push(m.expect("no error"));
        }
        (data, out)
    }

    #[tokio::test]
    async fn files_travel_in_full_chunks_with_the_hash_on_the_last() {
        let size = saltq_fileserver::CHUNK_SIZE;
        for (len, messages) in [(0, 1), (10, 1), (size, 1), (size + 1, 2), (3 * size + 5, 4)] {
            let (data, msgs) = chunks(len).await;
            assert_eq!(msgs.len(), messages, "{len} bytes");
            let (last, rest) = msgs.split_last().unwrap();
            assert!(
                rest.iter()
                    .all(|m| m.data.len() == size && m.hsum.is_empty())
            );
            assert_eq!(last.hash_type, "sha256");
            let joined: Vec<u8> = msgs.iter().flat_map(|m| m.data.clone()).collect();
            assert!(joined == data, "{len} bytes arrive whole");
            let mut h = saltq_fileserver::Hasher::new("sha256").unwrap();
            h.update(&data);
            assert_eq!(last.hsum, h.hex(), "{len} bytes");
        }
    }
}
