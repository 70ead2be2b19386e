//! The state modules, one file per Salt state module. Each file exports `FUNCTIONS`, its part
//! of the table; adding a state module means adding its file and one line to [`MODULES`].
//!
//! A state function gets a [`StateCall`] (the chunk's name and arguments, test mode, the
//! minion's call context for execution functions) and answers a [`Ret`]: Salt's `name`,
//! `result` (`None` in test mode where something would change), `comment` and `changes`.
//! The runner ([`crate::run`]) adds `__id__`, `__sls__`, `__run_num__`, `start_time` and
//! `duration`, binds the arguments (a missing required one fails the state with Salt's
//! message) and handles the global arguments (`onlyif`, `unless`, `creates`, `check_cmd`,
//! `retry`, requisites). A module's `mod_watch` is the function named `<module>.mod_watch`.

pub mod alternatives;
pub mod archive;
pub mod cmd;
pub mod cron;
pub mod debconf;
pub mod event;
pub mod external;
pub mod file;
pub mod git;
pub mod git_config;
pub mod grains;
pub mod group;
pub mod host;
pub mod kmod;
pub mod locale;
pub mod module;
pub mod mount;
pub mod mysql;
pub mod pkg;
pub mod pkgrepo;
pub mod postgres;
pub mod saltmod;
pub mod saltutil;
pub mod service;
pub mod service_mask;
pub mod ssh_auth;
pub mod ssh_known_hosts;
pub mod sysctl;
pub mod test;
pub mod timezone;
pub mod user;

use std::future::Future;
use std::pin::Pin;

use saltq_exec::{CallContext, Param};
use serde_json::{Map, Value};

/// What a state function returns, as Salt's state return dict.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ret {
    /// The state's `name`.
    pub name: String,
    /// `Some(true)` succeeded, `Some(false)` failed, `None` would change (test mode).
    pub result: Option<bool>,
    /// The comment, lines joined with `\n`.
    pub comment: String,
    /// What changed.
    pub changes: Map<String, Value>,
    /// Other keys some states add (`warnings`, ...), kept in the result as they are.
    pub extra: Map<String, Value>,
}

impl Ret {
    /// A result for `name` with no changes and an empty comment, `result: True`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            result: Some(true),
            ..Self::default()
        }
    }
}

/// One call of a state function.
#[derive(Debug, Clone)]
pub struct StateCall {
    /// The minion's context: grains, pillar, opts, the fileserver, execution functions
    /// (`saltq_exec::call`).
    pub ctx: CallContext,
    /// The chunk's `name`.
    pub name: String,
    /// The chunk's arguments other than the runner's own keys (`name`, `state`, `fun`,
    /// `__id__`, `__sls__`, `__env__`, `order`, requisites and global arguments): what the
    /// state function takes.
    pub args: Map<String, Value>,
    /// Test mode: change nothing, answer `result: None` where a change would be made.
    pub test: bool,
    /// The saltenv the state comes from (`salt://` sources resolve there).
    pub saltenv: String,
    /// The SLS the state comes from (`web.nginx`), empty for `state.single`.
    pub sls: String,
    /// The state's ID.
    pub id: String,
    /// The run's accumulator store (`file.accumulated` fills it, `file.managed` and
    /// `file.blockreplace` read it): one per run, shared by its states' calls.
    pub accumulators: file::Accumulators,
}

impl StateCall {
    /// An argument, if given and not `None`.
    pub fn arg(&self, key: &str) -> Option<&Value> {
        self.args.get(key).filter(|v| !v.is_null())
    }

    /// An argument as the function sees it: given (`None` included), or its parameter's
    /// default from `params`, or `None`.
    pub fn param(&self, params: &[Param], key: &str) -> Value {
        match self.args.get(key) {
            Some(v) => v.clone(),
            None => params
                .iter()
                .find(|p| p.name == key)
                .and_then(|p| p.default)
                .map_or(Value::Null, |d| d.to_value()),
        }
    }

    /// Calls an execution function as Salt's state modules do (`__salt__[fun](*args,
    /// **kwargs)`): its return, or its error text.
    pub async fn salt(
        &self,
        fun: &str,
        args: Vec<Value>,
        kwargs: Map<String, Value>,
    ) -> Result<Value, StateError> {
        saltq_exec::call_direct(&self.ctx, fun, args, kwargs)
            .await
            .map_err(|e| StateError(service::error_text(e, fun)))
    }
}

/// [`StateCall::salt`] as a free function, for the modules that call it so.
pub(crate) async fn exec(
    call: &StateCall,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
) -> Result<Value, StateError> {
    call.salt(fun, args, kwargs).await
}

/// An error that fails the state with its text as the comment.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct StateError(pub String);

/// The future a state function returns.
pub type StateFuture = Pin<Box<dyn Future<Output = Result<Ret, StateError>> + Send + 'static>>;

/// A state function's implementation.
pub type StateHandler = fn(StateCall) -> StateFuture;

/// One state function as registered in the table.
#[derive(Clone, Copy)]
pub struct StateFunction {
    /// `module.function`, e.g. `file.managed`.
    pub name: &'static str,
    /// Named parameters in declaration order; `name` first, as Salt's state functions have it.
    pub params: &'static [Param],
    /// Takes `**kwargs`: the chunk's other arguments reach it in [`StateCall::args`].
    pub kwargs: bool,
    /// The implementation.
    pub handler: StateHandler,
}

impl std::fmt::Debug for StateFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateFunction")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Turns `async fn f(call: StateCall) -> Result<Ret, StateError>` into a [`StateHandler`].
#[allow(unused_macros)]
macro_rules! state_handler {
    ($f:path) => {
        |call: $crate::modules::StateCall| -> $crate::modules::StateFuture { Box::pin($f(call)) }
    };
}
#[allow(unused_imports)]
pub(crate) use state_handler;

/// Every state module's functions.
pub const MODULES: &[&[StateFunction]] = &[
    alternatives::FUNCTIONS,
    archive::FUNCTIONS,
    cmd::FUNCTIONS,
    cron::FUNCTIONS,
    debconf::FUNCTIONS,
    event::FUNCTIONS,
    file::FUNCTIONS,
    git::FUNCTIONS,
    git_config::FUNCTIONS,
    grains::FUNCTIONS,
    group::FUNCTIONS,
    host::FUNCTIONS,
    kmod::FUNCTIONS,
    locale::FUNCTIONS,
    module::FUNCTIONS,
    mount::FUNCTIONS,
    mysql::FUNCTIONS,
    pkg::FUNCTIONS,
    pkgrepo::FUNCTIONS,
    postgres::FUNCTIONS,
    saltmod::FUNCTIONS,
    saltutil::FUNCTIONS,
    service::FUNCTIONS,
    service_mask::FUNCTIONS,
    ssh_auth::FUNCTIONS,
    ssh_known_hosts::FUNCTIONS,
    sysctl::FUNCTIONS,
    test::FUNCTIONS,
    timezone::FUNCTIONS,
    user::FUNCTIONS,
];

/// The state function registered under `name` (`file.managed`), if any.
pub fn lookup(name: &str) -> Option<&'static StateFunction> {
    MODULES
        .iter()
        .flat_map(|m| m.iter())
        .find(|f| f.name == name)
}

/// Whether a state module of this name exists (`file`), for Salt's "not available" errors.
pub fn module_exists(module: &str) -> bool {
    MODULES
        .iter()
        .flat_map(|m| m.iter())
        .any(|f| f.name.split_once('.').is_some_and(|(m, _)| m == module))
}
