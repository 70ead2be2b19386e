//! The `manage` runner: which minions are up, down, present, and which versions they run.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::follow::Follower;
use saltq_proto::v1 as pb;
use saltq_transport::value;
use serde_json::{Map, Value, json};

use super::jobs::runner;
use super::{Args, Runner, RunnerCtx, Spec};

/// Publishes `fun` to a target as the runner's user and gathers returns until every expected
/// minion answered or `timeout` passed. Returns (expected, replies).
pub async fn gather(
    ctx: &RunnerCtx,
    tgt: &str,
    tgt_type: &str,
    fun: &str,
    args: Vec<Value>,
    timeout: Duration,
) -> Result<(Vec<String>, BTreeMap<String, Value>), String> {
    let req = pb::PublishRequest {
        tgt: tgt.into(),
        tgt_type: tgt_type.into(),
        fun: vec![fun.into()],
        arg: args.iter().map(value::to_prost).collect(),
        ..Default::default()
    };
    let (spec, target) = ctx
        .master
        .validate(req)
        .map_err(|s| s.message().to_owned())?;
    let published = match ctx.master.publish(spec, &target, &ctx.user).await {
        Ok(p) => p,
        Err(s) if s.code() == tonic::Code::NotFound => return Ok((vec![], BTreeMap::new())),
        Err(s) => return Err(s.message().to_owned()),
    };
    let expected = published.resp.minions.clone();
    let mut job = Follower::plain(ctx.master.clone(), published, timeout);
    let mut replies = BTreeMap::new();
    while let Some(ret) = job.next().await {
        let v = ret.r#return.as_ref().map(value::from_prost);
        replies.insert(ret.id.clone(), v.unwrap_or(Value::Null));
    }
    Ok((expected, replies))
}

/// Replies only.
pub async fn collect(
    ctx: &RunnerCtx,
    tgt: &str,
    tgt_type: &str,
    fun: &str,
    args: Vec<Value>,
    timeout: Duration,
) -> Result<BTreeMap<String, Value>, String> {
    Ok(gather(ctx, tgt, tgt_type, fun, args, timeout).await?.1)
}

async fn ping(ctx: &RunnerCtx, a: &Args) -> Result<(Vec<String>, Vec<String>), String> {
    let tgt = a.str("tgt").unwrap_or_else(|| "*".into());
    let tgt_type = a.str("tgt_type").unwrap_or_else(|| "glob".into());
    let timeout = a.secs("timeout")?.unwrap_or(ctx.master.cfg.timeout);
    let (expected, replies) = gather(ctx, &tgt, &tgt_type, "test.ping", vec![], timeout).await?;
    let up: Vec<String> = replies.keys().cloned().collect();
    let mut down: Vec<String> = expected
        .into_iter()
        .filter(|id| !replies.contains_key(id))
        .collect();
    down.sort();
    Ok((up, down))
}

async fn status(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let (up, down) = ping(&ctx, &a).await?;
    Ok(json!({"up": up, "down": down}))
}

async fn up(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    Ok(json!(ping(&ctx, &a).await?.0))
}

async fn down(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let (_, down) = ping(&ctx, &a).await?;
    if a.flag("removekeys") {
        for id in &down {
            ctx.master.keys.delete(id).map_err(|e| e.to_string())?;
            ctx.master.events.fire(
                "salt/key",
                json!({"act": "delete", "id": id, "result": true}),
            );
        }
    }
    Ok(json!(down))
}

/// Connected minions, optionally only those in `subset`, with their first IPv4 when asked.
fn connected(ctx: &RunnerCtx, a: &Args, want: bool) -> Value {
    let connected = ctx.master.connected();
    let ids: Vec<String> = if want {
        connected
    } else {
        ctx.master
            .keys
            .accepted()
            .into_iter()
            .filter(|id| !connected.contains(id))
            .collect()
    };
    let subset: Option<Vec<String>> = a.get("subset").as_array().map(|s| {
        s.iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    });
    let ids: Vec<String> = ids
        .into_iter()
        .filter(|id| subset.as_ref().is_none_or(|s| s.contains(id)))
        .collect();
    if a.flag("show_ip") {
        let m: Map<String, Value> = ids
            .iter()
            .map(|id| {
                let ip = ctx
                    .master
                    .facts
                    .grains(id)
                    .and_then(|g| {
                        g.get("ipv4").and_then(|v| {
                            v.as_array()
                                .and_then(|a| a.iter().find(|i| i != &"127.0.0.1").cloned())
                        })
                    })
                    .unwrap_or(Value::Null);
                (id.clone(), ip)
            })
            .collect();
        return Value::Object(m);
    }
    json!(ids)
}

async fn present(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    Ok(connected(&ctx, &a, true))
}

async fn not_present(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    Ok(connected(&ctx, &a, false))
}

async fn versions(ctx: RunnerCtx, _a: Args) -> Result<Value, String> {
    let replies = collect(
        &ctx,
        "*",
        "glob",
        "test.version",
        vec![],
        ctx.master.cfg.timeout,
    )
    .await?;
    let master = env!("CARGO_PKG_VERSION");
    let mut groups: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
    for (id, v) in replies {
        let ver = v.as_str().unwrap_or_default().to_owned();
        let key = match compare(&ver, master) {
            std::cmp::Ordering::Less => "Minion requires update",
            std::cmp::Ordering::Equal => "Up to date",
            std::cmp::Ordering::Greater => "Minion newer than master",
        };
        groups
            .entry(key)
            .or_default()
            .insert(id, Value::String(ver));
    }
    let mut ret: Map<String, Value> = groups
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::Object(v)))
        .collect();
    ret.insert("Master".into(), json!(master));
    Ok(Value::Object(ret))
}

fn compare(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |s: &str| {
        s.split('.')
            .map(|p| p.parse::<u64>().unwrap_or(0))
            .collect::<Vec<_>>()
    };
    parts(a).cmp(&parts(b))
}

const PING: &[(&str, Option<&str>)] = &[
    ("tgt", Some("\"*\"")),
    ("tgt_type", Some("\"glob\"")),
    ("timeout", Some("null")),
    ("gather_job_timeout", Some("null")),
];
const STATUS: &[(&str, Option<&str>)] = &[
    ("output", Some("true")),
    ("tgt", Some("\"*\"")),
    ("tgt_type", Some("\"glob\"")),
    ("timeout", Some("null")),
    ("gather_job_timeout", Some("null")),
];
const DOWN: &[(&str, Option<&str>)] = &[
    ("removekeys", Some("false")),
    ("tgt", Some("\"*\"")),
    ("tgt_type", Some("\"glob\"")),
    ("timeout", Some("null")),
    ("gather_job_timeout", Some("null")),
];
const SUBSET: &[(&str, Option<&str>)] = &[("subset", Some("null")), ("show_ip", Some("false"))];
const STATE: &[(&str, Option<&str>)] = &[
    ("subset", Some("null")),
    ("show_ip", Some("false")),
    ("state", Some("null")),
];

/// The `manage` runners.
pub static RUNNERS: &[Runner] = &[
    runner!(
        "manage.status",
        status,
        STATUS,
        "Print the status of all known salt minions: {up: [...], down: [...]}."
    ),
    runner!(
        "manage.up",
        up,
        PING,
        "Print a list of all of the minions that are up."
    ),
    runner!(
        "manage.down",
        down,
        DOWN,
        "Print a list of all the down or unresponsive salt minions; removekeys=True deletes their keys."
    ),
    runner!(
        "manage.present",
        present,
        SUBSET,
        "Print a list of all minions that are up according to presence detection (no commands sent)."
    ),
    runner!(
        "manage.not_present",
        not_present,
        SUBSET,
        "Print a list of all minions that are NOT up according to presence detection."
    ),
    runner!(
        "manage.joined",
        present,
        SUBSET,
        "Print a list of all minions that are up according to presence detection."
    ),
    runner!(
        "manage.alived",
        present,
        SUBSET,
        "Print a list of all minions that are up according to presence detection."
    ),
    runner!(
        "manage.allowed",
        present,
        SUBSET,
        "Print a list of all minions that are up according to presence detection."
    ),
    runner!(
        "manage.list_state",
        present,
        STATE,
        "Print a list of all minions that are up according to presence detection."
    ),
    runner!(
        "manage.list_not_state",
        not_present,
        STATE,
        "Print a list of all minions that are NOT up according to presence detection."
    ),
    runner!(
        "manage.versions",
        versions,
        &[],
        "Check the version of active minions against the master's."
    ),
];
