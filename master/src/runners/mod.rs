//! Runners: functions that run on the master (salt-run), with Salt's names, arguments and
//! return shapes. Each run gets a jid, fires `salt/run/<jid>/new` and `/ret`, and is stored in
//! the job cache under the master's id, so `jobs.lookup_jid` finds runner jobs too.

mod args;
mod cache;
mod doc;
mod external;
mod jobs;
mod manage;
mod mine;
mod misc;
mod pillar;
mod state;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use saltq_jobcache::{JobRecord, ReturnRecord};
use serde_json::{Map, Value, json};

pub use args::{Args, Spec};

use crate::state::Master;

/// What a runner sees.
#[derive(Clone)]
pub struct RunnerCtx {
    /// The master.
    pub master: Arc<Master>,
    /// Who called (Salt's `user`).
    pub user: String,
    /// This run's jid.
    pub jid: String,
}

impl RunnerCtx {
    /// Fires `salt/run/<jid>/<suffix>` (progress events and the like).
    pub fn fire(&self, suffix: &str, data: Value) {
        self.master
            .events
            .fire(format!("salt/run/{}/{suffix}", self.jid), data);
    }
}

/// A runner's implementation.
pub type Handler = fn(RunnerCtx, Args) -> BoxFuture<'static, Result<Value, String>>;

/// One runner function.
pub struct Runner {
    /// Its spec: name, parameters, doc.
    pub spec: Spec,
    /// Its implementation.
    pub run: Handler,
}

/// Every built-in runner.
pub fn table() -> Vec<&'static Runner> {
    jobs::RUNNERS
        .iter()
        .chain(manage::RUNNERS)
        .chain(cache::RUNNERS)
        .chain(mine::RUNNERS)
        .chain(misc::RUNNERS)
        .chain(pillar::RUNNERS)
        .chain(state::RUNNERS)
        .chain(doc::RUNNERS)
        .collect()
}

/// The outcome of one run.
pub struct Outcome {
    /// The return.
    pub ret: Value,
    /// Whether it succeeded.
    pub success: bool,
}

/// Calls `fun` with Salt's argument rules; never panics the master: failures become
/// `success: false` with the error text, as salt-run reports them.
pub async fn call(
    ctx: RunnerCtx,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
) -> Outcome {
    let fail = |ret: String| Outcome {
        ret: Value::String(ret),
        success: false,
    };
    if let Some(r) = table().into_iter().find(|r| r.spec.name == fun) {
        let bound = match r.spec.bind(args, kwargs) {
            Ok(b) => b,
            Err(e) => {
                return fail(format!(
                    "Passed invalid arguments to {fun}: {e}\n{}",
                    r.spec.doc
                ));
            }
        };
        // A runner runs in its own task: a panic there is reported, not fatal.
        let fut = (r.run)(ctx, bound);
        return match tokio::spawn(fut).await {
            Ok(Ok(ret)) => {
                // Salt's runner client: a return carrying state data (`{"data": ...}`, as
                // the orchestrate runner's) succeeded when those states did.
                let success = ret
                    .get("data")
                    .is_none_or(|data| saltq_states::run::check_result(data, false));
                Outcome { ret, success }
            }
            Ok(Err(e)) => fail(format!("Exception occurred in runner {fun}: {e}")),
            Err(e) => fail(format!("Exception occurred in runner {fun}: {e}")),
        };
    }
    let dirs = ctx.master.cfg.runner_dirs.clone();
    match external::find(&dirs, fun) {
        Some(exe) => match external::run(&exe, fun, &args, &kwargs, Duration::from_secs(300)).await
        {
            Ok(ret) => Outcome { ret, success: true },
            Err(e) => fail(format!("Exception occurred in runner {fun}: {e}")),
        },
        None => fail(format!("'{fun}' is not available.")),
    }
}

/// Runs a runner as Salt does: events, job cache, result. Returns (jid, outcome).
pub async fn execute(
    master: Arc<Master>,
    user: String,
    jid: String,
    fun: String,
    args: Vec<Value>,
    mut kwargs: Map<String, Value>,
) -> Outcome {
    // As salt-run does: an orchestration runs under the runner's own jid, which its
    // `args` events and the jobs' `__orchestration_jid__` carry.
    if matches!(
        fun.as_str(),
        "state.orchestrate" | "state.orch" | "state.sls"
    ) && !kwargs.contains_key("orchestration_jid")
    {
        kwargs.insert("orchestration_jid".into(), json!(jid));
    }
    let mut fun_args = args.clone();
    if !kwargs.is_empty() {
        fun_args.push(Value::Object(kwargs.clone()));
    }
    let runner_fun = format!("runner.{fun}");
    let now = chrono::Utc::now();
    let record = JobRecord {
        jid: jid.clone(),
        load: json!({"jid": jid, "fun": runner_fun, "arg": fun_args, "tgt": master.cfg.id, "tgt_type": "list", "user": user}),
        minions: vec![master.cfg.id.clone()],
        start_time: now,
    };
    if let Err(e) = master.cache.save_job(&record).await {
        tracing::warn!(%jid, "runner job not stored in the job cache: {e}");
    }
    master.events.fire(
        format!("salt/run/{jid}/new"),
        json!({"fun": runner_fun, "fun_args": fun_args, "jid": jid, "user": user}),
    );
    let ctx = RunnerCtx {
        master: master.clone(),
        user: user.clone(),
        jid: jid.clone(),
    };
    let outcome = call(ctx, &fun, args, kwargs).await;
    let ret = ReturnRecord {
        jid: jid.clone(),
        id: master.cfg.id.clone(),
        fun: Value::String(runner_fun.clone()),
        fun_args: Value::Array(fun_args.clone()),
        ret: outcome.ret.clone(),
        retcode: if outcome.success { 0 } else { 1 },
        success: outcome.success,
        out: None,
        metadata: None,
        stored_at: chrono::Utc::now(),
    };
    if let Err(e) = master.cache.store_return(ret).await {
        tracing::warn!(%jid, "runner return not stored in the job cache: {e}");
    }
    master.events.fire(
        format!("salt/run/{jid}/ret"),
        json!({"fun": runner_fun, "fun_args": fun_args, "jid": jid, "return": outcome.ret, "success": outcome.success, "user": user}),
    );
    outcome
}

#[cfg(test)]
mod tests {
    /// A minion's `sys.list_runner_functions` and `sys.runner_doc` read
    /// `saltq_exec::runners::RUNNERS`: it must be this table, names and docs. On a difference
    /// the message is the table to paste there.
    #[test]
    fn minions_list_every_built_in_runner() {
        let mut ours: Vec<(&str, &str)> = super::table()
            .iter()
            .map(|r| (r.spec.name, r.spec.doc))
            .collect();
        ours.sort();
        let theirs: Vec<(&str, &str)> = saltq_exec::runners::RUNNERS.to_vec();
        if ours != theirs {
            let mut text = String::from("pub const RUNNERS: &[(&str, &str)] = &[\n");
            for (name, doc) in &ours {
                text.push_str(&format!("    ({name:?}, {doc:?}),\n"));
            }
            text.push_str("];\n");
            panic!(
                "exec/src/runners.rs differs from the master's runners; it should read:\n{text}"
            );
        }
    }
}
