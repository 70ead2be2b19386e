//! The `state` runner (`salt/runners/state.py`): `state.orchestrate` (aliases `state.orch`,
//! `state.sls`) runs an SLS of the master's `file_roots` on the master (`orchestrate.rs`),
//! `state.orchestrate_single` one state function there, `state.orchestrate_show_sls` shows
//! what an orchestration would run, and `state.event` waits for events on the master's bus.

use saltq_semantics::python::{fnmatch, truthy};
use serde_json::{Map, Value, json};

use super::{Args, Runner, RunnerCtx, Spec};
use crate::orchestrate;

const ORCHESTRATE_PARAMS: &[(&str, Option<&str>)] = &[
    ("mods", None),
    ("saltenv", Some("\"base\"")),
    ("test", Some("null")),
    ("exclude", Some("null")),
    ("pillar", Some("null")),
    ("pillarenv", Some("null")),
    ("pillar_enc", Some("null")),
    ("orchestration_jid", Some("null")),
];

const ORCHESTRATE_DOC: &str =
    "Execute a state run from the master, used as a powerful orchestration system.

CLI Examples:

    saltq run state.orchestrate webserver
    saltq run state.orchestrate webserver saltenv=dev test=True";

/// `pillar=` must be a dict when given (Salt's `SaltInvocationError`).
fn pillar_arg(a: &Args) -> Result<Option<Value>, String> {
    match a.get("pillar") {
        Value::Null => Ok(None),
        p @ Value::Object(_) => Ok(Some(p.clone())),
        _ => Err("Pillar data must be formatted as a dictionary".into()),
    }
}

/// The keyword arguments of the master's `state.*` call, for those given.
fn state_kwargs(a: &Args, keys: &[&str]) -> Map<String, Value> {
    keys.iter()
        .filter_map(|k| {
            let v = a.get(k);
            (!v.is_null()).then(|| ((*k).to_owned(), v.clone()))
        })
        .collect()
}

async fn orchestrate(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let pillar = pillar_arg(&a)?;
    let jid = a
        .str("orchestration_jid")
        .unwrap_or_else(|| ctx.jid.clone());
    let mut kwargs = state_kwargs(&a, &["test", "exclude", "saltenv", "pillarenv"]);
    if let Some(p) = pillar {
        kwargs.insert("pillar".into(), p);
    }
    kwargs.insert("orchestration_jid".into(), json!(jid));
    let running = orchestrate::run_state(
        &ctx.master,
        &ctx.user,
        &jid,
        "state.sls",
        vec![a.get("mods").clone()],
        kwargs,
    )
    .await?;
    Ok(orchestrate::runner_return(&ctx.master.cfg.id, running))
}

async fn orchestrate_single(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let pillar = pillar_arg(&a)?;
    let mut kwargs: Map<String, Value> = a
        .extra
        .iter()
        .filter(|(k, _)| !k.starts_with("__"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(p) = pillar {
        kwargs.insert("pillar".into(), p);
    }
    if truthy(a.get("test")) {
        kwargs.insert("test".into(), Value::Bool(true));
    }
    let running = orchestrate::run_state(
        &ctx.master,
        &ctx.user,
        &ctx.jid,
        "state.single",
        vec![a.get("fun").clone(), a.get("name").clone()],
        kwargs,
    )
    .await?;
    let mut ret = Map::new();
    ret.insert(ctx.master.cfg.id.clone(), running);
    let ret = Value::Object(ret);
    ctx.fire("progress", json!({"data": ret, "outputter": "highstate"}));
    Ok(ret)
}

async fn orchestrate_show_sls(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    let pillar = pillar_arg(&a)?;
    let mut kwargs = state_kwargs(&a, &["saltenv", "pillarenv"]);
    if let Some(p) = pillar {
        kwargs.insert("pillar".into(), p);
    }
    let shown = orchestrate::run_state(
        &ctx.master,
        &ctx.user,
        &ctx.jid,
        "state.show_sls",
        vec![a.get("mods").clone()],
        kwargs,
    )
    .await?;
    let mut ret = Map::new();
    ret.insert(ctx.master.cfg.id.clone(), shown);
    Ok(Value::Object(ret))
}

/// Salt's `expr_match`: a glob, else a regular expression matching the whole tag.
pub fn expr_match(tag: &str, expr: &str) -> bool {
    fnmatch(tag, expr)
        || regex::Regex::new(&format!(r"\A(?:{expr})\z")).is_ok_and(|re| re.is_match(tag))
}

async fn event(ctx: RunnerCtx, a: Args) -> Result<Value, String> {
    use futures_util::StreamExt;
    let tagmatch = a.str("tagmatch").unwrap_or_else(|| "*".into());
    let mut count = match a.get("count") {
        Value::Number(n) => n.as_i64().unwrap_or(-1),
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| format!("count must be an integer, got {s:?}"))?,
        _ => -1,
    };
    if a.str("node").is_some_and(|n| n != "master") {
        return Err("node must be 'master': the runner watches the master's event bus".into());
    }
    let mut bus = ctx.master.events.subscribe();
    while count != 0 {
        match bus.next().await {
            Some(Ok(e)) if expr_match(&e.tag, &tagmatch) => {
                tracing::info!(tag = %e.tag, jid = %ctx.jid, "state.event matched");
                if count > 0 {
                    count -= 1;
                }
            }
            Some(_) => {}
            None => break,
        }
    }
    Ok(Value::Null)
}

/// `state.orchestrate_show_sls` and its alias `state.orch_show_sls`.
const SHOW_SLS_PARAMS: &[(&str, Option<&str>)] = &[
    ("mods", None),
    ("saltenv", Some("\"base\"")),
    ("test", Some("null")),
    ("queue", Some("false")),
    ("pillar", Some("null")),
    ("pillarenv", Some("null")),
    ("pillar_enc", Some("null")),
];
const SHOW_SLS_DOC: &str =
    "Display the state data of an orchestration SLS as the master renders it.";

/// The `state` runners.
pub static RUNNERS: &[Runner] = &[
    Runner {
        spec: Spec {
            name: "state.orchestrate",
            params: ORCHESTRATE_PARAMS,
            varargs: false,
            kwargs: false,
            doc: ORCHESTRATE_DOC,
        },
        run: |ctx, a| Box::pin(orchestrate(ctx, a)),
    },
    Runner {
        spec: Spec {
            name: "state.orch",
            params: ORCHESTRATE_PARAMS,
            varargs: false,
            kwargs: false,
            doc: ORCHESTRATE_DOC,
        },
        run: |ctx, a| Box::pin(orchestrate(ctx, a)),
    },
    Runner {
        spec: Spec {
            name: "state.sls",
            params: ORCHESTRATE_PARAMS,
            varargs: false,
            kwargs: false,
            doc: ORCHESTRATE_DOC,
        },
        run: |ctx, a| Box::pin(orchestrate(ctx, a)),
    },
    Runner {
        spec: Spec {
            name: "state.orchestrate_single",
            params: &[
                ("fun", None),
                ("name", None),
                ("test", Some("null")),
                ("queue", Some("false")),
                ("pillar", Some("null")),
            ],
            varargs: false,
            kwargs: true,
            doc: "Execute a single state orchestration routine.\n\n    saltq run state.orchestrate_single fun=salt.wheel name=key.list_all",
        },
        run: |ctx, a| Box::pin(orchestrate_single(ctx, a)),
    },
    Runner {
        spec: Spec {
            name: "state.orchestrate_show_sls",
            params: SHOW_SLS_PARAMS,
            varargs: false,
            kwargs: false,
            doc: SHOW_SLS_DOC,
        },
        run: |ctx, a| Box::pin(orchestrate_show_sls(ctx, a)),
    },
    Runner {
        spec: Spec {
            name: "state.orch_show_sls",
            params: SHOW_SLS_PARAMS,
            varargs: false,
            kwargs: false,
            doc: SHOW_SLS_DOC,
        },
        run: |ctx, a| Box::pin(orchestrate_show_sls(ctx, a)),
    },
    Runner {
        spec: Spec {
            name: "state.event",
            params: &[
                ("tagmatch", Some("\"*\"")),
                ("count", Some("-1")),
                ("quiet", Some("false")),
                ("sock_dir", Some("null")),
                ("pretty", Some("false")),
                ("node", Some("\"master\"")),
            ],
            varargs: false,
            kwargs: false,
            doc: "Watch the master's event bus and block until count events whose tag matches tagmatch (a glob or a regular expression) were seen; count=-1 waits forever. `saltq run state.event` prints each matching event as `tag<TAB>json`.",
        },
        run: |ctx, a| Box::pin(event(ctx, a)),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_match_as_salts_expr_match() {
        assert!(expr_match("salt/job/1/ret/web1", "salt/job/*"));
        assert!(expr_match("salt/job/1/ret/web1", r"salt/job/\d+/ret/.*"));
        assert!(!expr_match("salt/job/1/ret/web1", r"salt/job/\d+"));
        assert!(!expr_match("salt/job/1", "salt/run/*"));
        // An invalid regular expression is only a glob.
        assert!(!expr_match("a(b", "a(b["));
    }
}
