//! Small runners: `event.send`, `test.*`, `saltutil.sync_*`.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::jobs::runner;
use super::{Args, Runner, RunnerCtx, Spec};

async fn event_send(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let tag = a
        .str("tag")
        .filter(|t| !t.is_empty())
        .ok_or("tag must not be empty")?;
    let mut data = match a.get("data") {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        other => return Err(format!("data must be a dict, got {other}")),
    };
    data.extend(
        a.extra
            .iter()
            .filter(|(k, _)| !k.starts_with("__"))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    ctx.master.events.fire(tag, Value::Object(data));
    Ok(json!(true))
}

async fn sleep(_ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let s = a.secs("s_time")?.unwrap_or(Duration::from_secs(5));
    tokio::time::sleep(s).await;
    Ok(json!(true))
}

async fn arg(_ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let kwargs: Map<String, Value> = a
        .extra
        .into_iter()
        .filter(|(k, _)| !k.starts_with("__"))
        .collect();
    Ok(json!({"args": a.rest, "kwargs": kwargs}))
}

async fn echo(_ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    Ok(a.get("text").clone())
}

async fn stream(ctx: RunnerCtx, _a: Args) -> Result<Value, String> {
    ctx.fire("progress", json!({"message": "Runner is ready!"}));
    Ok(json!(true))
}

async fn sync(ctx: RunnerCtx, _a: Args) -> Result<Value, String> {
    let synced = super::external::sync(
        &ctx.master.cfg.file_roots,
        &ctx.master.cfg.extension_runners,
    )
    .map_err(|e| e.to_string())?;
    Ok(json!({"runners": synced.into_iter().map(|n| format!("runners.{n}")).collect::<Vec<_>>()}))
}

/// The small runners.
pub static RUNNERS: &[Runner] = &[
    runner!(
        "event.send",
        event_send,
        &[("tag", None), ("data", Some("null"))],
        "Send an event to the Salt Master's event bus."
    ),
    runner!(
        "test.sleep",
        sleep,
        &[("s_time", Some("5"))],
        "Sleep s_time seconds, then return True."
    ),
    Runner {
        spec: Spec {
            name: "test.arg",
            params: &[],
            varargs: true,
            kwargs: true,
            doc: "Return the arguments and keyword arguments it was given.",
        },
        run: |ctx, a| Box::pin(arg(ctx, a)),
    },
    runner!(
        "test.echo",
        echo,
        &[("text", None)],
        "Return the text it is given."
    ),
    runner!(
        "test.stream",
        stream,
        &[],
        "Fire a progress event, then return True."
    ),
    runner!(
        "saltutil.sync_all",
        sync,
        &[
            ("saltenv", Some("\"base\"")),
            ("extmod_whitelist", Some("null")),
            ("extmod_blacklist", Some("null"))
        ],
        "Sync master-side external runners from file_roots/_runners."
    ),
    runner!(
        "saltutil.sync_runners",
        sync,
        &[
            ("saltenv", Some("\"base\"")),
            ("extmod_whitelist", Some("null")),
            ("extmod_blacklist", Some("null"))
        ],
        "Sync master-side external runners from file_roots/_runners."
    ),
];
