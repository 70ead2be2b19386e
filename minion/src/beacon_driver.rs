//! The beacons' loop (Salt's `handle_beacons` periodic callback): every `loop_interval`
//! seconds, poll the beacons due and send their events to the master's bus. What runs and
//! what each beacon fires is decided in `saltq_exec::beacons`; this only keeps time, asks
//! whether a state run is in progress and whether the master is connected, and sends.

use std::sync::Arc;
use std::time::Duration;

use saltq_exec::CallContext;
use saltq_exec::beacons::{Manager, Runner};
use saltq_transport::Channel;
use serde_json::Value;
use tokio::sync::watch;

use crate::config::MinionConfig;

/// Salt's minion `loop_interval` default.
const LOOP_INTERVAL: f64 = 1.0;

/// Loads the minion's beacons (config, then `minion.d/beacons.conf`), starts their loop and
/// answers the context with the beacons attached for `beacons.*`. A bad saved file is logged
/// and the config's beacons are used.
pub fn start(
    cfg: &Arc<MinionConfig>,
    ctx: CallContext,
    chan: watch::Receiver<Option<Channel>>,
) -> CallContext {
    let dir = cfg.file.parent().unwrap_or(std::path::Path::new("."));
    let manager = match Manager::load(&cfg.opts, dir) {
        Ok(m) => m,
        Err(e) => {
            tracing::error!("{}: beacons: {e}", cfg.file.display());
            let from_config = cfg.opts.get("beacons").and_then(Value::as_object).cloned();
            let save_to = saltq_exec::beacons::saved_file(dir);
            Manager::new(from_config.unwrap_or_default(), save_to)
        }
    };
    let ctx = ctx.with_beacons(Arc::new(manager));
    let loop_interval = cfg
        .opts
        .get("loop_interval")
        .and_then(Value::as_f64)
        .filter(|s| *s > 0.0)
        .unwrap_or(LOOP_INTERVAL);
    let before_connect = cfg.opts.get("beacons_before_connect") == Some(&Value::Bool(true));
    tokio::spawn(run(ctx.clone(), chan, loop_interval, before_connect));
    ctx
}

/// Whether a `state.*` job runs now (Salt's `re.match("state.*", job["fun"])`).
fn state_running(ctx: &CallContext) -> bool {
    ctx.jobs.running().iter().any(|j| {
        j.get("fun")
            .and_then(Value::as_str)
            .is_some_and(|f| f.starts_with("state"))
    })
}

/// The loop, until the minion's connection watch closes (the minion stopped).
async fn run(
    ctx: CallContext,
    mut chan: watch::Receiver<Option<Channel>>,
    loop_interval: f64,
    before_connect: bool,
) {
    let Some(manager) = ctx.beacons.clone() else {
        return;
    };
    let mut runner = Runner::default();
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(loop_interval));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            changed = chan.changed() => {
                if changed.is_err() {
                    return;
                }
                continue;
            }
        }
        let connected = chan.borrow().is_some();
        if !connected && !before_connect {
            continue;
        }
        let pillar = ctx.pillar();
        let config = manager.effective(&pillar);
        if config.is_empty() {
            continue;
        }
        let tick = runner
            .tick(&config, &ctx, loop_interval, state_running(&ctx))
            .await;
        for line in &tick.logs {
            tracing::warn!("{line}");
        }
        for name in &tick.run_once {
            manager.set_enabled(name, false, &pillar);
        }
        if let Some(sink) = &ctx.events {
            for (tag, data) in tick.events {
                tracing::debug!(%tag, "beacon event");
                sink.send(&tag, data);
            }
        }
    }
}
