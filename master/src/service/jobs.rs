//! JobService: publish, run (publish and follow to the end, find_job included), look up, list.

use std::sync::Arc;
use std::time::Duration;

use saltq_jobcache::JobFilter;
use saltq_proto::v1::{self as pb, job_service_server::JobService, run_response::Kind};
use saltq_transport::value;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::follow::Follower;
use crate::load::load_from_json;
use crate::state::Master;
use crate::tracker::Silence;

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

/// The longest `timeout` or `gather_job_timeout` a job may ask for (about 31 years): past it a
/// deadline would not fit the clock.
const MAX_WAIT_SECS: f64 = 1e9;

/// A job's `timeout` or `gather_job_timeout` (`field`): 0, negative or not a number is the
/// master's default, as an unset field; more than [`MAX_WAIT_SECS`] is refused.
fn secs(field: &str, v: f64, default: Duration) -> Result<Duration, Status> {
    if !(v.is_finite() && v > 0.0) {
        return Ok(default);
    }
    if v > MAX_WAIT_SECS {
        return Err(Status::invalid_argument(format!(
            "{field} {v} is more seconds than saltq waits (at most {MAX_WAIT_SECS})"
        )));
    }
    Ok(Duration::from_secs_f64(v))
}

type Out = mpsc::Sender<Result<pb::RunResponse, Status>>;

async fn send(out: &Out, kind: Kind) -> bool {
    out.send(Ok(pb::RunResponse { kind: Some(kind) }))
        .await
        .is_ok()
}

/// Streams a published job's returns as they are stored, then who did not return and why.
async fn follow(mut job: Follower, jid: String, out: Out) {
    loop {
        tokio::select! {
            r = job.next() => match r {
                Some(ret) => {
                    if !send(&out, Kind::MinionReturn((*ret).clone())).await {
                        break;
                    }
                }
                None => break,
            },
            _ = out.closed() => break,
        }
    }
    let outcome = job.finish();
    for (id, why) in &outcome.silent {
        let reason = match why {
            Silence::NoResponse => pb::NoReturnReason::NoResponse,
            Silence::NotConnected => pb::NoReturnReason::NotConnected,
            Silence::Unreachable => pb::NoReturnReason::Unreachable,
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
    send(
        &out,
        Kind::Finished(pb::RunFinished {
            jid,
            returned: outcome.returned,
            not_returned: outcome.silent.len() as u32,
        }),
    )
    .await;
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
        let who = super::caller(&req)?;
        let (spec, target) = self.master.validate(req.into_inner())?;
        // Nobody follows an async job: its returns are checked against the job cache.
        let published = self.master.publish_for_client(spec, &target, &who).await?;
        Ok(Response::new(published.resp))
    }

    async fn run(&self, req: Request<pb::RunRequest>) -> Result<Response<Self::RunStream>, Status> {
        let who = super::caller(&req)?;
        let user = who.name().to_owned();
        let body = req.into_inner();
        let publish = body
            .publish
            .ok_or_else(|| Status::invalid_argument("run needs a publish request"))?;
        let timeout = secs("timeout", body.timeout, self.master.cfg.timeout)?;
        let gather = secs(
            "gather_job_timeout",
            body.gather_job_timeout,
            self.master.cfg.gather_job_timeout,
        )?;
        let (mut spec, target) = self.master.validate(publish)?;
        // Syndics below follow the job as long as this caller waits (Salt's `to`).
        spec.timeout = Some(timeout);
        let published = self.master.publish_for_client(spec, &target, &who).await?;
        let (tx, out) = mpsc::channel(256);
        send(&tx, Kind::Published(published.resp.clone())).await;
        let jid = published.resp.jid.clone();
        // The tracker is built after the reply goes out: returns arriving meanwhile wait in the
        // job's fan-out (`published.following`), so none is lost.
        let master = self.master.clone();
        tokio::spawn(async move {
            let job = Follower::new(master, published, &user, timeout, gather);
            follow(job, jid, tx).await;
        });
        Ok(Response::new(ReceiverStream::new(out)))
    }

    async fn lookup_job(
        &self,
        req: Request<pb::LookupJobRequest>,
    ) -> Result<Response<pb::LookupJobResponse>, Status> {
        let who = super::caller(&req)?;
        self.master.cfg.acl.jobs(&who, "jobs.lookup_jid")?;
        let jid = req.into_inner().jid;
        saltq_semantics::jid::Jid::parse(&jid)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let unavailable = |e: saltq_jobcache::CacheError| {
            saltq_transport::part_unavailable("job-cache", format!("job cache unavailable: {e}"))
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
        let who = super::caller(&req)?;
        self.master.cfg.acl.jobs(&who, "jobs.list_jobs")?;
        let r = req.into_inner();
        let filter = JobFilter {
            function: (!r.function.is_empty()).then_some(r.function),
            target: (!r.target.is_empty()).then_some(r.target),
            start_time: from_timestamp(r.start_time.as_ref()),
            end_time: from_timestamp(r.end_time.as_ref()),
            limit: (r.limit > 0).then_some(r.limit as usize),
        };
        let jobs = self.master.cache.list_jobs(&filter).await.map_err(|e| {
            saltq_transport::part_unavailable("job-cache", format!("job cache unavailable: {e}"))
        })?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (found by tests/tests/e2e/fuzz_grpc.rs): `RunRequest.timeout` of 1e300
    /// panicked the handler converting it (the client saw its HTTP/3 stream end without
    /// headers). Too large is now INVALID_ARGUMENT naming the field; 0, negative and NaN stay
    /// the master's default, as an unset field.
    #[test]
    fn job_timeouts_are_checked() {
        let d = Duration::from_secs(5);
        assert_eq!(
            secs("timeout", 2.5, d).unwrap(),
            Duration::from_millis(2500)
        );
        for v in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(secs("timeout", v, d).unwrap(), d, "{v}");
        }
        for v in [1e300, 1.8e19, 1e10] {
            let e = secs("gather_job_timeout", v, d).unwrap_err();
            assert_eq!(e.code(), tonic::Code::InvalidArgument);
            assert!(e.message().starts_with("gather_job_timeout "), "{e:?}");
        }
    }
}
