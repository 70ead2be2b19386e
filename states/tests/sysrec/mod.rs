//! Replays a sequence recorded by `data/sysrec.py` (a `gen.py` of the host-level state
//! modules): the setup files written into a fresh temporary directory, the steps run in
//! order through the real state functions and execution modules with the recorded minion
//! options, each return compared with Salt's, then the files Salt left compared too.
//! `@DIR@` stands for the directory, as in the recording.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use saltq_exec::CallContext;
use saltq_states::modules::{StateCall, lookup};
use serde_json::{Map, Value, json};

#[path = "../support/mod.rs"]
mod support;

pub use support::{as_salt, chunk_args};

/// One recording: `data/<dir>/cases.json`.
pub fn load(dir: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(dir)
        .join("cases.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// `old` replaced by `new` in every string (and key) of a value.
pub fn subst(v: &Value, old: &str, new: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace(old, new)),
        Value::Array(items) => Value::Array(items.iter().map(|i| subst(i, old, new)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.replace(old, new), subst(v, old, new)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A scratch directory with the recording's setup files written in it.
pub fn scratch(rec: &Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().display().to_string();
    for (rel, text) in rec["setup"].as_object().into_iter().flatten() {
        let path = dir.path().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("setup dir");
        }
        let text = text.as_str().unwrap_or_default().replace("@DIR@", &root);
        std::fs::write(&path, text).expect("setup file");
    }
    dir
}

/// A local context with the recording's options (and `extra`), `@DIR@` resolved, grains
/// `{id, os}` plus `grains`.
pub fn ctx_for(rec: &Value, dir: &Path, grains: Map<String, Value>, extra: Value) -> CallContext {
    let root = dir.display().to_string();
    let mut opts = json!({"id": "labminion"});
    for (k, v) in subst(&rec["opts"], "@DIR@", &root)
        .as_object()
        .into_iter()
        .flatten()
        .chain(extra.as_object().into_iter().flatten())
    {
        opts[k] = v.clone();
    }
    let mut g = json!({"id": "labminion", "os": "Debian", "os_family": "Debian"});
    for (k, v) in grains {
        g[k] = v;
    }
    CallContext::local(g, opts)
}

/// Runs one step's state function in `ctx`.
pub async fn run_step(ctx: &CallContext, step: &Value, root: &str) -> Value {
    let fun = step["fun"].as_str().unwrap_or_default();
    let id = step["id"].as_str().unwrap_or_default();
    let (name, args) = chunk_args(&subst(&step["args"], "@DIR@", root));
    let name = if name.is_empty() { id.to_owned() } else { name };
    let f = lookup(fun).unwrap_or_else(|| panic!("{fun} is not registered"));
    let call = StateCall {
        ctx: ctx.clone(),
        name: name.clone(),
        args,
        test: step["test"].as_bool().unwrap_or(false),
        saltenv: "base".into(),
        sls: "step".into(),
        id: id.into(),
        accumulators: Default::default(),
    };
    let ret = match (f.handler)(call).await {
        Ok(ret) => ret,
        // As the runner answers a state that failed with an error: the chunk's name.
        Err(e) => saltq_states::modules::Ret {
            name,
            result: Some(false),
            comment: e.0,
            ..Default::default()
        },
    };
    subst(&as_salt(&ret), root, "@DIR@")
}

/// Replays every step in `ctx` on `dir`; the failures, one text each. Steps whose id is in
/// `skip` are run but not compared (their reason is given where the list is written).
pub async fn replay(rec: &Value, ctx: &CallContext, dir: &Path, skip: &[&str]) -> Vec<String> {
    let root = dir.display().to_string();
    let mut failures = Vec::new();
    for step in rec["steps"].as_array().into_iter().flatten() {
        let got = run_step(ctx, step, &root).await;
        let id = step["id"].as_str().unwrap_or_default();
        if skip.contains(&id) {
            continue;
        }
        let mut want = step["ret"].clone();
        // Salt adds `warnings` only when there are some, as saltq does.
        if want.get("warnings").is_none()
            && let Some(m) = want.as_object_mut()
        {
            m.remove("warnings");
        }
        if got != want && !same_exception(&want, &got) {
            failures.push(format!(
                "{id} (test={}):\n  salt:  {want}\n  saltq: {got}",
                step["test"]
            ));
        }
    }
    for (rel, want) in rec["files"].as_object().into_iter().flatten() {
        let got = std::fs::read_to_string(dir.join(rel))
            .unwrap_or_else(|e| format!("<unreadable: {e}>"))
            .replace(&root, "@DIR@");
        if Some(got.as_str()) != want.as_str() {
            failures.push(format!(
                "file {rel}:\n  salt:\n{}\n  saltq:\n{got}",
                want.as_str().unwrap_or_default()
            ));
        }
    }
    failures
}

/// The message of the exception a Salt state raised, from the traceback Salt puts in its
/// comment (`An exception occurred in this state: Traceback ...`): what follows the last
/// `salt.exceptions.<Class>: ` (or `<Class>: `) line, to the end (a message may span lines).
pub fn salt_exception(comment: &str) -> Option<String> {
    let tb = comment.strip_prefix("An exception occurred in this state: Traceback")?;
    let lines: Vec<&str> = tb.lines().collect();
    let is_class = |l: &&str| {
        l.split_once(": ").is_some_and(|(class, _)| {
            (class.ends_with("Error") || class.ends_with("Exception"))
                && class
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        })
    };
    let at = lines.iter().rposition(is_class)?;
    let first = lines[at].split_once(": ").map_or("", |(_, m)| m);
    let mut msg = vec![first];
    msg.extend(&lines[at + 1..]);
    Some(msg.join("\n").trim_end().to_owned())
}

/// Salt failed with a traceback and saltq failed with the same error's message as its
/// comment (saltq has no traceback to give), the rest of the return equal.
fn same_exception(want: &Value, got: &Value) -> bool {
    let Some(msg) = want["comment"].as_str().and_then(salt_exception) else {
        return false;
    };
    let mut want = want.clone();
    want["comment"] = json!(msg);
    *got == want
}

/// The number of steps of a recording.
pub fn steps(rec: &Value) -> usize {
    rec["steps"].as_array().map_or(0, Vec::len)
}
