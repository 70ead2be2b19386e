//! RunnerService: master-side functions (salt-run). The runner modules themselves are their own
//! piece of work; until one exists, a call names the runner and says it is not available, as
//! salt-run does for an unknown runner.

use std::sync::Arc;

use saltq_proto::v1::{self as pb, runner_service_server::RunnerService};
use tonic::{Request, Response, Status};

use crate::state::Master;

/// The service.
pub struct RunnerApi {
    #[allow(dead_code)]
    master: Arc<Master>,
}

impl RunnerApi {
    /// Serves `master`.
    pub fn new(master: Arc<Master>) -> Self {
        RunnerApi { master }
    }
}

fn unavailable(fun: &str) -> Status {
    Status::unimplemented(format!("'{fun}' is not available."))
}

#[tonic::async_trait]
impl RunnerService for RunnerApi {
    async fn run_runner(
        &self,
        req: Request<pb::RunRunnerRequest>,
    ) -> Result<Response<pb::RunRunnerResponse>, Status> {
        super::client_name(&req)?;
        Err(unavailable(&req.get_ref().fun))
    }

    async fn run_runner_async(
        &self,
        req: Request<pb::RunRunnerAsyncRequest>,
    ) -> Result<Response<pb::RunRunnerAsyncResponse>, Status> {
        super::client_name(&req)?;
        Err(unavailable(&req.get_ref().fun))
    }
}
