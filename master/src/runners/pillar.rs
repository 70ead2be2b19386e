//! The `pillar` runners: `pillar.show_top` and `pillar.show_pillar`, as Salt's
//! `salt/runners/pillar.py`: the master compiles for a minion from the grains it has cached
//! (`{"fqdn": <minion>}` when it has none, as Salt's `get_minion_data` leaves it).

use serde_json::{Value, json};

use super::jobs::runner;
use super::{Args, Runner, RunnerCtx, Spec};

/// The id and grains a runner compiles for: the cached grains of `minion`, else Salt's
/// stand-in.
fn minion_data(ctx: &RunnerCtx, minion: &str) -> Value {
    ctx.master
        .facts
        .grains(minion)
        .unwrap_or_else(|| json!({ "fqdn": minion }))
}

async fn show_top(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let minion = a.str("minion").unwrap_or_else(|| ctx.master.cfg.id.clone());
    let saltenv = a.str("saltenv");
    let grains = minion_data(&ctx, &minion);
    let master = ctx.master.clone();
    let top =
        tokio::task::spawn_blocking(move || master.cfg.pillar.show_top(&minion, &grains, saltenv))
            .await
            .map_err(|e| format!("pillar.show_top failed: {e}"))?;
    Ok(match top {
        Ok(top) => Value::Object(top),
        // Salt returns the list of errors in place of the top.
        Err(errors) => json!(errors),
    })
}

async fn show_pillar(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let minion = a.str("minion").unwrap_or_else(|| "*".into());
    let pillarenv = a.str("pillarenv");
    let grains = minion_data(&ctx, &minion);
    let master = ctx.master.clone();
    tokio::task::spawn_blocking(move || master.cfg.pillar.compile_for(&minion, &grains, pillarenv))
        .await
        .map_err(|e| format!("pillar.show_pillar failed: {e}"))
}

/// The `pillar` runners.
pub static RUNNERS: &[Runner] = &[
    runner!(
        "pillar.show_top",
        show_top,
        &[("minion", Some("null")), ("saltenv", Some("\"base\""))],
        "Returns the compiled top data for pillar for a specific minion. If no minion is specified, we use the first minion we find."
    ),
    runner!(
        "pillar.show_pillar",
        show_pillar,
        &[("minion", Some("\"*\"")), ("pillarenv", Some("null"))],
        "Returns the compiled pillar either of a specific minion or just the global available pillars. This function assumes that no minion has the id ``*``."
    ),
];
