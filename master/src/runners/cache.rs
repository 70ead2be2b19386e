//! The `cache` runner: the grains and pillar the master keeps for each minion.

use serde_json::{Map, Value, json};

use super::jobs::runner;
use super::{Args, Runner, RunnerCtx, Spec};
use saltq_semantics::target::{MinionFacts, Target, TargetType};

fn matching(ctx: &RunnerCtx, a: &Args) -> Result<Vec<String>, String> {
    let tgt = a.str("tgt").unwrap_or_else(|| "*".into());
    let tgt_type: TargetType = a
        .str("tgt_type")
        .unwrap_or_else(|| "glob".into())
        .parse()
        .map_err(|e: saltq_semantics::target::TargetError| e.to_string())?;
    let target = Target::compile(&tgt, tgt_type, None, &ctx.master.cfg.nodegroups)
        .map_err(|e| e.to_string())?;
    Ok(ctx
        .master
        .keys
        .accepted()
        .into_iter()
        .filter(|id| {
            let (g, p) = ctx.master.facts.cached(id);
            target.matches(&MinionFacts {
                id,
                grains: g.as_ref(),
                pillar: p.as_ref(),
            })
        })
        .collect())
}

fn pick(ctx: &RunnerCtx, a: &Args, grains: bool) -> Result<Value, String> {
    let mut ret = Map::new();
    for id in matching(ctx, a)? {
        let (g, p) = ctx.master.facts.cached(&id);
        if let Some(v) = if grains { g } else { p } {
            ret.insert(id, v);
        }
    }
    Ok(Value::Object(ret))
}

async fn grains(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    pick(&ctx, &a, true)
}

async fn pillar(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    pick(&ctx, &a, false)
}

async fn mine(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let tgt = a.str("tgt").unwrap_or_else(|| "*".into());
    let tgt_type = a.str("tgt_type").unwrap_or_else(|| "glob".into());
    crate::mine::cached(&ctx.master, &tgt, &tgt_type).await
}

async fn clear(ctx: RunnerCtx, a: Args, grains: bool, pillar: bool) -> Result<Value, String> {
    for id in matching(&ctx, &a)? {
        ctx.master.facts.clear(&id, grains, pillar);
    }
    Ok(json!(true))
}

async fn clear_grains(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    clear(ctx, a, true, false).await
}

async fn clear_pillar(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    clear(ctx, a, false, true).await
}

async fn clear_all(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    clear(ctx, a, true, true).await
}

const TGT: &[(&str, Option<&str>)] = &[("tgt", Some("\"*\"")), ("tgt_type", Some("\"glob\""))];

/// The `cache` runners.
pub static RUNNERS: &[Runner] = &[
    runner!(
        "cache.grains",
        grains,
        TGT,
        "Return cached grains of the targeted minions."
    ),
    runner!(
        "cache.pillar",
        pillar,
        TGT,
        "Return cached pillars of the targeted minions."
    ),
    runner!(
        "cache.mine",
        mine,
        TGT,
        "Return cached mine data of the targeted minions."
    ),
    runner!(
        "cache.clear_grains",
        clear_grains,
        TGT,
        "Clear the cached grains of the targeted minions."
    ),
    runner!(
        "cache.clear_pillar",
        clear_pillar,
        TGT,
        "Clear the cached pillar of the targeted minions."
    ),
    runner!(
        "cache.clear_all",
        clear_all,
        TGT,
        "Clear the cached grains and pillar of the targeted minions."
    ),
];
