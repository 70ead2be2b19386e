//! What salt-api needs from the master: run a lowstate chunk as an eauth user, fire an event,
//! watch the bus. The master implements it with its own gRPC service code.

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

/// An authenticated eauth user, attached to every call the backend makes for them.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    /// The user name: the job load's `user`.
    pub user: String,
    /// The eauth backend that vouched for them (`file`).
    pub eauth: String,
    /// How this request proved it: `token`, or `eauth` for credentials in a `/run` chunk
    /// (Salt names it in its refusals).
    pub auth_type: String,
    /// Their `external_auth` entries (Salt's format), checked by the master's ACL code.
    pub perms: Vec<Value>,
}

/// A refusal or failure with the HTTP status salt-api answers it with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// Salt's message.
    pub message: String,
}

impl ApiError {
    /// 400.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 400,
            message: message.into(),
        }
    }

    /// 401.
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 401,
            message: message.into(),
        }
    }

    /// 500.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 500,
            message: message.into(),
        }
    }

    /// 503.
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 503,
            message: message.into(),
        }
    }
}

/// Salt's message when the eauth user may not run what a chunk asks for.
pub const AUTHORIZATION_ERROR: &str = "Authorization error occurred.";

/// The clients the backend runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// Publish and wait for the returns.
    Local,
    /// Publish and answer the jid.
    LocalAsync,
    /// Publish over a sliding window of minions; one answer per minion.
    LocalBatch,
    /// Run a runner and answer its return.
    Runner,
    /// Start a runner and answer its jid and tag.
    RunnerAsync,
    /// Run a wheel function, answered as `{data, tag}`.
    Wheel,
    /// Start a wheel function and answer its jid and tag.
    WheelAsync,
}

/// One lowstate chunk, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Low {
    /// Which client.
    pub client: Client,
    /// The function; for a multi-function job, its functions joined with `,` (for logs only).
    pub fun: String,
    /// A multi-function job's functions (`fun` sent as a list), each run with its own list of
    /// arguments in `arg` (one list per function), as Salt's `LocalClient.cmd` takes them and
    /// the CLI's `test.ping,test.echo`; empty for one function (named by `fun`).
    pub multi: Vec<String>,
    /// Target (local clients).
    pub tgt: String,
    /// Target type (default glob).
    pub tgt_type: String,
    /// Positional arguments; for a multi-function job, one list per function.
    pub arg: Vec<Value>,
    /// Keyword arguments: `kwarg` and, for runners and wheels, every other key of the chunk.
    pub kwarg: Map<String, Value>,
    /// `full_return`: `{id: {ret, retcode, jid}}`.
    pub full_return: bool,
    /// Seconds to wait for returns (local).
    pub timeout: Option<f64>,
    /// Returner for the job (local).
    pub ret: String,
    /// `local_batch`'s `batch`, `batch_wait`, `failhard` and `gather_job_timeout`.
    pub batch: Option<Batch>,
    /// `local` answers only the minions that returned, and [`NO_MINIONS_MATCHED`] when the
    /// target matched none (rest_tornado's `_disbatch_local`); rest_cherrypy's names every
    /// expected minion, with `Minion did not return` for the silent ones.
    pub returned_only: bool,
}

/// rest_tornado's `local` answer when the target matched no minion.
pub const NO_MINIONS_MATCHED: &str =
    "No minions matched the target. No command was sent, no jid was assigned.";

/// How a `local_batch` chunk walks its minions.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// The window (`batch`, default `10%` as Salt's `cmd_batch`).
    pub size: saltq_semantics::batch::BatchSize,
    /// Seconds a finished minion holds its slot (`batch_wait`).
    pub wait: f64,
    /// Stop at the first minion with a non-zero retcode (`failhard`).
    pub failhard: bool,
    /// Seconds to wait for a `find_job` answer (`gather_job_timeout`).
    pub gather_job_timeout: Option<f64>,
}

/// One event of the bus.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Its tag.
    pub tag: String,
    /// Its data.
    pub data: Value,
}

/// The master, as salt-api sees it.
pub trait Backend: Send + Sync + 'static {
    /// Runs `low` for `who`: the answer is the chunk's entry in `{"return": [...]}`; for
    /// `local_batch`, a list of entries (one `{id: ret}` per minion), spliced into it.
    fn run(&self, who: Identity, low: Low) -> BoxFuture<'static, Result<Value, ApiError>>;

    /// Fires an event on the master's bus.
    fn fire(&self, tag: String, data: Value);

    /// Every event from now on. The channel is bounded: when this reader falls behind, the
    /// backend drops events for it, never blocking the bus.
    fn events(&self) -> mpsc::Receiver<Event>;

    /// The system groups of `user`, for `group%` entries.
    fn groups(&self, user: &str) -> Vec<String>;

    /// Whether `who` may run runner `fun` with keyword arguments `kwarg` (Salt's
    /// `runner_check`), without running it: `POST /token` asks it for `auth.mk_token`.
    fn may_run_runner(
        &self,
        who: &Identity,
        fun: &str,
        kwarg: &Map<String, Value>,
    ) -> Result<(), ApiError>;
}
