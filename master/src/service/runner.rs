//! RunnerService: master-side functions (salt-run), synchronously or in the background.

use std::sync::Arc;

use saltq_proto::v1::{self as pb, runner_service_server::RunnerService};
use saltq_transport::value;
use serde_json::Value;
use tonic::{Request, Response, Status};

use crate::state::Master;

/// A prepared run: its jid, positional and keyword arguments.
type Prepared = (String, Vec<Value>, serde_json::Map<String, Value>);

/// The service.
pub struct RunnerApi {
    master: Arc<Master>,
}

impl RunnerApi {
    /// Serves `master`.
    pub fn new(master: Arc<Master>) -> Self {
        RunnerApi { master }
    }

    async fn prepare(
        &self,
        who: &crate::acl::Caller,
        fun: &str,
        arg: &[prost_types::Value],
        kwarg: Option<&prost_types::Struct>,
    ) -> Result<Prepared, Status> {
        if !fun.contains('.') {
            return Err(Status::invalid_argument(format!(
                "invalid runner name {fun:?}: expected module.function, e.g. jobs.list_jobs"
            )));
        }
        let arg: Vec<serde_json::Value> = arg.iter().map(value::from_prost).collect();
        let kwarg = value::opt_struct(kwarg);
        let call = crate::acl::CallArgs {
            arg: &arg,
            kwarg: (!kwarg.is_empty()).then_some(&kwarg),
        };
        self.master.cfg.acl.runner(who, fun, call)?;
        let jid = self.master.next_jid("").await?.to_string();
        Ok((jid, arg, kwarg))
    }
}

#[tonic::async_trait]
impl RunnerService for RunnerApi {
    async fn run_runner(
        &self,
        req: Request<pb::RunRunnerRequest>,
    ) -> Result<Response<pb::RunRunnerResponse>, Status> {
        let who = super::caller(&req)?;
        let user = who.name().to_owned();
        let r = req.into_inner();
        let (jid, args, kwargs) = self.prepare(&who, &r.fun, &r.arg, r.kwarg.as_ref()).await?;
        let out =
            crate::runners::execute(self.master.clone(), user, jid.clone(), r.fun, args, kwargs)
                .await;
        Ok(Response::new(pb::RunRunnerResponse {
            jid,
            r#return: Some(value::to_prost(&out.ret)),
            success: out.success,
        }))
    }

    async fn run_runner_async(
        &self,
        req: Request<pb::RunRunnerAsyncRequest>,
    ) -> Result<Response<pb::RunRunnerAsyncResponse>, Status> {
        let who = super::caller(&req)?;
        let user = who.name().to_owned();
        let r = req.into_inner();
        let (jid, args, kwargs) = self.prepare(&who, &r.fun, &r.arg, r.kwarg.as_ref()).await?;
        // A long runner never blocks others: each runs in its own task.
        tokio::spawn(crate::runners::execute(
            self.master.clone(),
            user,
            jid.clone(),
            r.fun,
            args,
            kwargs,
        ));
        Ok(Response::new(pb::RunRunnerAsyncResponse {
            tag: format!("salt/run/{jid}"),
            jid,
        }))
    }
}
