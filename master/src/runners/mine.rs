//! The `mine` runner: `mine.get` from the master, as Salt's `salt/runners/mine.py` asks its
//! own `_mine_get` under the master's id.

use serde_json::Value;

use super::jobs::runner;
use super::{Args, Runner, RunnerCtx, Spec};

async fn get(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let tgt = a.str("tgt").ok_or("mine.get needs a target (tgt)")?;
    let fun = a.get("fun").clone();
    if fun.is_null() {
        return Err("mine.get needs a function (fun)".into());
    }
    let tgt_type = a.str("tgt_type").unwrap_or_else(|| "glob".into());
    let id = ctx.master.cfg.id.clone();
    crate::mine::get(&ctx.master, &id, &tgt, &tgt_type, &fun).await
}

/// The `mine` runners.
pub static RUNNERS: &[Runner] = &[runner!(
    "mine.get",
    get,
    &[("tgt", None), ("fun", None), ("tgt_type", Some("\"glob\""))],
    "Gathers the data from the specified minions' mine, pass in the target, function to look up and the target type."
)];
