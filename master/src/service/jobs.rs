//! JobService: publish, run (publish and follow to the end, find_job included), look up, list.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use saltq_jobcache::JobFilter;
use saltq_proto::v1::{self as pb, job_service_server::JobService, run_response::Kind};
use saltq_transport::value;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::state::{Master, load_from_json};

/// The service.
pub struct JobApi {
    master: Arc<Master>,
}

impl JobApi {
    /// Serves `master`.
    pub fn new(master: Arc<Master>) -> Self {
        JobApi { master }
    }
}

fn secs(v: f64, default: Duration) -> Duration {
    if v.is_finite() && v > 0.0 {
        Duration::from_secs_f64(v)
    } else {
        default
    }
}

type Out = mpsc::Sender<Result<pb::RunResponse, Status>>;

async fn send(out: &Out, kind: Kind) -> bool {
    out.send(Ok(pb::RunResponse { kind: Some(kind) }))
        .await
        .is_ok()
}

/// Follows a published job until every expected minion returned, or the wait ran out and
/// find_job found none still running it. Streams each return, then who did not return and why.
async fn follow(
    master: Arc<Master>,
    published: pb::PublishResponse,
    mut rx: broadcast::Receiver<Arc<pb::JobReturn>>,
    user: String,
    timeout: Duration,
    gather: Duration,
    out: Out,
) {
    let jid = published.jid.clone();
    let mut pending: HashSet<String> = published.minions.iter().cloned().collect();
    let mut returned = 0u32;
    let mut deadline = Instant::now() + timeout;
    while !pending.is_empty() {
        tokio::select! {
            r = rx.recv() => match r {
                Ok(ret) => {
                    if pending.remove(&ret.id) {
                        returned += 1;
                        if !send(&out, Kind::MinionReturn((*ret).clone())).await { break; }
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(%jid, "run follower lagged by {n} returns");
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
            _ = tokio::time::sleep_until(deadline) => {
                let ask: Vec<String> = pending.iter().filter(|id| master.is_connected(id)).cloned().collect();
                if ask.is_empty() { break; }
                let running = find_job(&master, &jid, ask, &user, gather, &mut rx, &mut pending, &mut returned, &out).await;
                if running == 0 { break; }
                deadline = Instant::now() + timeout;
            }
            _ = out.closed() => break,
        }
    }
    let mut silent: Vec<String> = pending.into_iter().collect();
    silent.sort();
    for id in &silent {
        let reason = if master.is_connected(id) {
            pb::NoReturnReason::NoResponse
        } else {
            pb::NoReturnReason::NotConnected
        };
        send(
            &out,
            Kind::NoReturn(pb::NoReturn {
                id: id.clone(),
                reason: reason as i32,
            }),
        )
        .await;
    }
    for id in &published.missing {
        send(
            &out,
            Kind::NoReturn(pb::NoReturn {
                id: id.clone(),
                reason: pb::NoReturnReason::NoResponse as i32,
            }),
        )
        .await;
    }
    send(
        &out,
        Kind::Finished(pb::RunFinished {
            jid: jid.clone(),
            returned,
            not_returned: (silent.len() + published.missing.len()) as u32,
        }),
    )
    .await;
    master.forget_job(&jid);
}

/// Asks `ask` whether they still run `jid` (saltutil.find_job), while still taking real returns.
/// Returns how many are still running it.
#[allow(clippy::too_many_arguments)]
async fn find_job(
    master: &Arc<Master>,
    jid: &str,
    ask: Vec<String>,
    user: &str,
    gather: Duration,
    rx: &mut broadcast::Receiver<Arc<pb::JobReturn>>,
    pending: &mut HashSet<String>,
    returned: &mut u32,
    out: &Out,
) -> usize {
    let req = pb::PublishRequest {
        tgt: ask.join(","),
        tgt_type: "list".into(),
        fun: vec!["saltutil.find_job".into()],
        arg: vec![value::to_prost(&Value::String(jid.to_owned()))],
        ..Default::default()
    };
    let published = match master.validate(req) {
        Ok((spec, target)) => master.publish(spec, &target, user).await,
        Err(e) => Err(e),
    };
    let (resp, _job, mut fj_rx) = match published {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(%jid, "find_job could not be published: {e}");
            return 0;
        }
    };
    let mut waiting: HashSet<String> = resp.minions.iter().cloned().collect();
    let mut running = 0;
    let deadline = Instant::now() + gather;
    while !waiting.is_empty() {
        tokio::select! {
            r = fj_rx.recv() => match r {
                Ok(ret) => {
                    if waiting.remove(&ret.id) {
                        let still = ret.r#return.as_ref().map(value::from_prost)
                            .is_some_and(|v| v.as_object().is_some_and(|m| !m.is_empty()));
                        if still && pending.contains(&ret.id) { running += 1; }
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => break,
            },
            r = rx.recv() => if let Ok(ret) = r
                && pending.remove(&ret.id) {
                    *returned += 1;
                    waiting.remove(&ret.id);
                    send(out, Kind::MinionReturn((*ret).clone())).await;
                },
            _ = tokio::time::sleep_until(deadline) => break,
        }
    }
    master.forget_job(&resp.jid);
    running
}

fn to_timestamp(t: chrono::DateTime<chrono::Utc>) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: t.timestamp(),
        nanos: t.timestamp_subsec_nanos() as i32,
    }
}

fn from_timestamp(t: Option<&prost_types::Timestamp>) -> Option<chrono::DateTime<chrono::Utc>> {
    t.and_then(|t| chrono::DateTime::from_timestamp(t.seconds, t.nanos.max(0) as u32))
}

fn to_job_return(r: saltq_jobcache::ReturnRecord) -> pb::JobReturn {
    let fun = match &r.fun {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => vec![],
    };
    pb::JobReturn {
        id: r.id,
        jid: r.jid,
        fun,
        fun_args: Some(value::to_list(
            r.fun_args.as_array().map(Vec::as_slice).unwrap_or_default(),
        )),
        r#return: Some(value::to_prost(&r.ret)),
        retcode: r.retcode,
        success: r.success,
        out: r.out.unwrap_or_default(),
        metadata: r.metadata.as_ref().map(value::json_to_struct),
        stored_at: Some(to_timestamp(r.stored_at)),
    }
}

fn to_load(job: &saltq_jobcache::JobRecord) -> pb::JobLoad {
    let mut load = load_from_json(&job.load);
    load.start_time = Some(to_timestamp(job.start_time));
    load
}

#[tonic::async_trait]
impl JobService for JobApi {
    type RunStream = ReceiverStream<Result<pb::RunResponse, Status>>;

    async fn publish(
        &self,
        req: Request<pb::PublishRequest>,
    ) -> Result<Response<pb::PublishResponse>, Status> {
        let user = super::client_name(&req)?;
        let (spec, target) = self.master.validate(req.into_inner())?;
        let (resp, _job, _rx) = self.master.publish(spec, &target, &user).await?;
        // Nobody follows an async job in memory; its returns are checked against the cache.
        self.master.forget_job(&resp.jid);
        Ok(Response::new(resp))
    }

    async fn run(&self, req: Request<pb::RunRequest>) -> Result<Response<Self::RunStream>, Status> {
        let user = super::client_name(&req)?;
        let body = req.into_inner();
        let publish = body
            .publish
            .ok_or_else(|| Status::invalid_argument("run needs a publish request"))?;
        let timeout = secs(body.timeout, self.master.cfg.timeout);
        let gather = secs(body.gather_job_timeout, self.master.cfg.gather_job_timeout);
        let (spec, target) = self.master.validate(publish)?;
        let (resp, _job, rx) = self.master.publish(spec, &target, &user).await?;
        let (tx, out) = mpsc::channel(256);
        send(&tx, Kind::Published(resp.clone())).await;
        tokio::spawn(follow(
            self.master.clone(),
            resp,
            rx,
            user,
            timeout,
            gather,
            tx,
        ));
        Ok(Response::new(ReceiverStream::new(out)))
    }

    async fn lookup_job(
        &self,
        req: Request<pb::LookupJobRequest>,
    ) -> Result<Response<pb::LookupJobResponse>, Status> {
        let jid = req.into_inner().jid;
        saltq_semantics::jid::Jid::parse(&jid)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let unavailable = |e: saltq_jobcache::CacheError| {
            Status::unavailable(format!("job cache unavailable: {e}"))
        };
        let job = self
            .master
            .cache
            .get_job(&jid)
            .await
            .map_err(unavailable)?
            .ok_or_else(|| Status::not_found(format!("no job with jid {jid}")))?;
        let returns = self
            .master
            .cache
            .get_returns(&jid)
            .await
            .map_err(unavailable)?;
        Ok(Response::new(pb::LookupJobResponse {
            load: Some(to_load(&job)),
            minions: job.minions.clone(),
            returns: returns.into_iter().map(to_job_return).collect(),
        }))
    }

    async fn list_jobs(
        &self,
        req: Request<pb::ListJobsRequest>,
    ) -> Result<Response<pb::ListJobsResponse>, Status> {
        let r = req.into_inner();
        let filter = JobFilter {
            function: (!r.function.is_empty()).then_some(r.function),
            target: (!r.target.is_empty()).then_some(r.target),
            start_time: from_timestamp(r.start_time.as_ref()),
            end_time: from_timestamp(r.end_time.as_ref()),
            limit: (r.limit > 0).then_some(r.limit as usize),
        };
        let jobs = self
            .master
            .cache
            .list_jobs(&filter)
            .await
            .map_err(|e| Status::unavailable(format!("job cache unavailable: {e}")))?;
        Ok(Response::new(pb::ListJobsResponse {
            jobs: jobs
                .into_iter()
                .map(|s| pb::JobSummary {
                    load: Some(to_load(&s.job)),
                    minions: s.job.minions.clone(),
                    returned: s.returned as u32,
                })
                .collect(),
        }))
    }
}
