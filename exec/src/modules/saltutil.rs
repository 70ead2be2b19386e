//! Salt's `saltutil` module, the part that acts on the minion's own jobs and data: job and
//! refresh functions delegate to the minion's [`JobControl`](crate::JobControl); the sync
//! functions fetch external modules through its [`ModuleSource`](crate::ModuleSource).

use nix::sys::signal::Signal;
use serde_json::Value;

use saltq_semantics::python::{self, fnmatch, truthy};

use crate::error::ExecError;
use crate::extmods;
use crate::pyish::py_int;
use crate::spec::{Call, Function, Lit, Param};

/// The `saltutil` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("saltutil.find_job", handler!(find_job))
        .params(&[Param::req("jid")])
        .doc(FIND_JOB_DOC),
    Function::new("saltutil.is_running", handler!(is_running))
        .params(&[Param::req("fun")])
        .doc(IS_RUNNING_DOC),
    Function::new("saltutil.kill_job", handler!(kill_job))
        .params(&[Param::req("jid")])
        .doc(KILL_JOB_DOC),
    Function::new("saltutil.refresh_grains", handler!(refresh_grains))
        .kwargs()
        .doc(REFRESH_GRAINS_DOC),
    Function::new("saltutil.refresh_modules", handler!(refresh_modules))
        .kwargs()
        .doc(REFRESH_MODULES_DOC),
    Function::new("saltutil.refresh_pillar", handler!(refresh_pillar))
        .params(&[
            Param::opt("wait", Lit::Bool(false)),
            Param::opt("timeout", Lit::Int(30)),
            Param::opt("clean_cache", Lit::Bool(true)),
        ])
        .doc(REFRESH_PILLAR_DOC),
    Function::new("saltutil.running", handler!(running)).doc(RUNNING_DOC),
    Function::new("saltutil.signal_job", handler!(signal_job))
        .params(&[Param::req("jid"), Param::req("sig")])
        .doc(SIGNAL_JOB_DOC),
    Function::new("saltutil.sync_all", handler!(sync_all))
        .params(&[
            Param::opt("saltenv", Lit::None),
            Param::opt("refresh", Lit::Bool(true)),
            Param::opt("extmod_whitelist", Lit::None),
            Param::opt("extmod_blacklist", Lit::None),
            Param::opt("clean_pillar_cache", Lit::Bool(false)),
        ])
        .doc(SYNC_ALL_DOC),
    Function::new("saltutil.sync_modules", handler!(sync_modules))
        .params(&[
            Param::opt("saltenv", Lit::None),
            Param::opt("refresh", Lit::Bool(true)),
            Param::opt("extmod_whitelist", Lit::None),
            Param::opt("extmod_blacklist", Lit::None),
        ])
        .doc(SYNC_MODULES_DOC),
    Function::new("saltutil.sync_states", handler!(sync_states))
        .params(&[
            Param::opt("saltenv", Lit::None),
            Param::opt("refresh", Lit::Bool(true)),
            Param::opt("extmod_whitelist", Lit::None),
            Param::opt("extmod_blacklist", Lit::None),
        ])
        .doc(SYNC_STATES_DOC),
    Function::new("saltutil.term_job", handler!(term_job))
        .params(&[Param::req("jid")])
        .doc(TERM_JOB_DOC),
];

/// A jid as a string: the CLI's YAML typing may have made a number of it.
fn jid(call: &Call) -> String {
    python::str(call.arg("jid"))
}

const RUNNING_DOC: &str = "Return the data of every job running on the minion

CLI Example:

.. code-block:: bash

    salt '*' saltutil.running
";

async fn running(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Array(call.ctx.jobs.running()))
}

const IS_RUNNING_DOC: &str = "Return the data of the running jobs whose function matches ``fun``, a
glob

CLI Example:

.. code-block:: bash

    salt '*' saltutil.is_running state.highstate
";

async fn is_running(call: Call) -> Result<Value, ExecError> {
    let pattern = python::str(call.arg("fun"));
    Ok(call
        .ctx
        .jobs
        .running()
        .into_iter()
        .filter(|job| {
            fnmatch(
                job.get("fun").and_then(Value::as_str).unwrap_or(""),
                &pattern,
            )
        })
        .collect())
}

const FIND_JOB_DOC: &str = "Return the data of the running job with this id, or an empty dict when
no such job is running (it finished, or never ran here)

CLI Example:

.. code-block:: bash

    salt '*' saltutil.find_job <job id>
";

async fn find_job(call: Call) -> Result<Value, ExecError> {
    Ok(call.ctx.jobs.find_job(&jid(&call)))
}

const SIGNAL_JOB_DOC: &str = "Send a signal to the named job and the commands it runs

CLI Example:

.. code-block:: bash

    salt '*' saltutil.signal_job <job id> 15
";

async fn signal_job(call: Call) -> Result<Value, ExecError> {
    let sig = py_int(call.arg("sig"))?;
    let sig = i32::try_from(sig)
        .ok()
        .filter(|s| Signal::try_from(*s).is_ok())
        .ok_or_else(|| {
            ExecError::exception("ValueError", format!("{sig} is not a valid Signals"))
        })?;
    Ok(call.ctx.jobs.signal_job(&jid(&call), sig))
}

const TERM_JOB_DOC: &str = "Send a termination signal (SIGTERM 15) to the named job

CLI Example:

.. code-block:: bash

    salt '*' saltutil.term_job <job id>
";

async fn term_job(call: Call) -> Result<Value, ExecError> {
    Ok(call
        .ctx
        .jobs
        .signal_job(&jid(&call), Signal::SIGTERM as i32))
}

const KILL_JOB_DOC: &str = "Send a kill signal (SIGKILL 9) to the named job

CLI Example:

.. code-block:: bash

    salt '*' saltutil.kill_job <job id>
";

async fn kill_job(call: Call) -> Result<Value, ExecError> {
    Ok(call.ctx.jobs.kill_job(&jid(&call)))
}

const REFRESH_GRAINS_DOC: &str = "Recompute the minion's grains, then refresh its pillar (which may
depend on them) unless ``refresh_pillar=False``.

refresh_pillar : True
    Set to ``False`` to keep the pillar as it is.

clean_pillar_cache : False
    Accepted for compatibility.

CLI Examples:

.. code-block:: bash

    salt '*' saltutil.refresh_grains
";

async fn refresh_grains(call: Call) -> Result<Value, ExecError> {
    let mut refresh_pillar = true;
    let mut invalid = Vec::new();
    for (key, value) in call.kwargs() {
        match key.as_str() {
            k if k.starts_with("__") => {}
            "refresh_pillar" => refresh_pillar = truthy(value),
            "clean_pillar_cache" => {}
            other => invalid.push(format!("{other}={}", python::str(value))),
        }
    }
    if !invalid.is_empty() {
        return Err(ExecError::invocation(format!(
            "The following keyword arguments are not valid: {}",
            invalid.join(", ")
        )));
    }
    // Salt answers True once the refreshes are under way, whatever becomes of them.
    call.ctx.jobs.refresh_grains();
    if refresh_pillar {
        call.ctx.jobs.refresh_pillar();
    }
    Ok(Value::Bool(true))
}

const REFRESH_PILLAR_DOC: &str = "Ask the master for a fresh pillar. The refresh happens in the
background; the function returns ``True`` at once.

wait : False
    Wait until the minion has the refreshed pillar (or the refresh failed) before returning,
    at most ``timeout`` seconds; past that a warning is logged. The answer is ``True`` either
    way, as Salt's.

timeout : 30
    How long to wait, in seconds, with ``wait=True``.

CLI Example:

.. code-block:: bash

    salt '*' saltutil.refresh_pillar
    salt '*' saltutil.refresh_pillar wait=True timeout=60
";

async fn refresh_pillar(call: Call) -> Result<Value, ExecError> {
    if !truthy(call.arg("wait")) {
        return Ok(Value::Bool(call.ctx.jobs.refresh_pillar()));
    }
    let timeout = match call.arg("timeout") {
        Value::Null => 30.0,
        v => v
            .as_f64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .filter(|t: &f64| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| {
                ExecError::invocation(format!(
                    "timeout must be a number of seconds, got {}",
                    python::repr(v)
                ))
            })?,
    };
    // Salt listens for `pillar_refresh_complete` before it asks, then waits up to `timeout`;
    // either way the answer is whether the refresh was asked for.
    let mut done = call.ctx.jobs.pillar_refreshes();
    if let Some(rx) = &mut done {
        rx.mark_unchanged();
    }
    let asked = call.ctx.jobs.refresh_pillar();
    if let Some(mut rx) = done {
        let wait = std::time::Duration::from_secs_f64(timeout);
        if !matches!(tokio::time::timeout(wait, rx.changed()).await, Ok(Ok(()))) {
            tracing::warn!("Pillar refresh did not complete within timeout {timeout}");
        }
    }
    Ok(Value::Bool(asked))
}

const REFRESH_MODULES_DOC: &str = "Reload the minion's modules: the external modules are looked up
again (their function lists re-read) on their next use. Returns ``True``.

CLI Example:

.. code-block:: bash

    salt '*' saltutil.refresh_modules
";

async fn refresh_modules(_call: Call) -> Result<Value, ExecError> {
    extmods::clear_cache();
    Ok(Value::Bool(true))
}

/// The kinds `sync_all` reports on a minion, in Salt's order; saltq syncs `modules` and
/// `states`.
const SYNC_KINDS: &[&str] = &[
    "clouds",
    "beacons",
    "modules",
    "states",
    "sdb",
    "grains",
    "renderers",
    "returners",
    "output",
    "utils",
    "log_handlers",
    "executors",
    "proxymodules",
    "engines",
    "thorium",
    "serializers",
    "matchers",
];

/// The module names a white- or blacklist (``{modules: [name, ...]}``) gives for `kind`,
/// from the argument or else the minion option of the same name.
fn extmod_list(call: &Call, key: &str, kind: &str) -> Option<Vec<String>> {
    let list = call.opt_arg(key).or_else(|| call.ctx.opt(key))?;
    match list.get(kind) {
        Some(Value::Array(items)) => Some(items.iter().map(python::str).collect()),
        Some(Value::String(s)) => Some(s.split(',').map(|s| s.trim().to_owned()).collect()),
        _ => None,
    }
}

/// Fetches `_<kind>` from the master and installs it in the module cache: the names of the
/// modules written (`modules.NAME`).
async fn sync_kind(call: &Call, kind: &str) -> Result<Vec<String>, ExecError> {
    let dir = extmods::synced_dir_for(&call.ctx.opts, kind)
        .ok_or_else(|| ExecError::execution("the minion has no cachedir to sync modules into"))?;
    let source =
        call.ctx.modules.clone().ok_or_else(|| {
            ExecError::execution("this minion has no master to sync modules from")
        })?;
    let files = source.fetch(kind).await.map_err(|e| {
        ExecError::execution(format!("failed to fetch _{kind} from the master: {e}"))
    })?;
    let white = extmod_list(call, "extmod_whitelist", kind);
    let black = extmod_list(call, "extmod_blacklist", kind).unwrap_or_default();
    let keep = move |name: &str| {
        white.as_ref().is_none_or(|w| w.iter().any(|n| n == name))
            && !black.iter().any(|n| n == name)
    };
    let dir_for_blocking = dir.clone();
    let kind_owned = kind.to_owned();
    let installed = tokio::task::spawn_blocking(move || {
        crate::sync::install(&dir_for_blocking, &kind_owned, &files, keep)
    })
    .await
    .map_err(|e| ExecError::execution(format!("module sync task failed: {e}")))?
    .map_err(|e| {
        ExecError::execution(format!("failed to sync {kind} into {}: {e}", dir.display()))
    })?;
    if installed.touched {
        extmods::clear_cache();
    }
    Ok(installed.changed)
}

const SYNC_MODULES_DOC: &str = "Sync the execution modules from the master's ``salt://_modules``
into the minion's module cache (``<cachedir>/extmods/modules``). Modules the master no longer
has are removed. Returns the modules written, as ``modules.NAME``.

saltenv
    Accepted for compatibility: the master serves its ``_modules``.

refresh : True
    Reload the modules afterwards.

extmod_whitelist : None
    Only these modules, e.g. ``{modules: [mymod]}``.

extmod_blacklist : None
    Not these modules, e.g. ``{modules: [mymod]}``.

CLI Example:

.. code-block:: bash

    salt '*' saltutil.sync_modules
    salt '*' saltutil.sync_modules extmod_whitelist='{modules: [mymod]}'
";

async fn sync_modules(call: Call) -> Result<Value, ExecError> {
    let changed = sync_kind(&call, "modules").await?;
    if truthy(call.arg("refresh")) {
        extmods::clear_cache();
    }
    Ok(changed.into_iter().map(Value::String).collect())
}

const SYNC_STATES_DOC: &str = "Sync the state modules from the master's ``salt://_states`` into
the minion's module cache (``<cachedir>/extmods/states``). Modules the master no longer has
are removed. Returns the modules written, as ``states.NAME``.

saltenv
    Accepted for compatibility: the master serves its ``_states``.

refresh : True
    Reload the modules afterwards.

extmod_whitelist : None
    Only these modules, e.g. ``{states: [mystate]}``.

extmod_blacklist : None
    Not these modules, e.g. ``{states: [mystate]}``.

CLI Example:

.. code-block:: bash

    salt '*' saltutil.sync_states
";

async fn sync_states(call: Call) -> Result<Value, ExecError> {
    let changed = sync_kind(&call, "states").await?;
    if truthy(call.arg("refresh")) {
        extmods::clear_cache();
    }
    Ok(changed.into_iter().map(Value::String).collect())
}

const SYNC_ALL_DOC: &str = "Sync everything from the master's file server that the minion uses:
in saltq, the execution modules of ``salt://_modules`` and the state modules of
``salt://_states``. Returns a dict of every kind Salt
syncs, each with the modules written. With ``refresh`` (the default) the modules are
reloaded and the pillar refreshed.

CLI Example:

.. code-block:: bash

    salt '*' saltutil.sync_all
    salt '*' saltutil.sync_all extmod_whitelist='{modules: [mymod]}'
";

async fn sync_all(call: Call) -> Result<Value, ExecError> {
    let mut out = serde_json::Map::new();
    for kind in SYNC_KINDS {
        let names = if matches!(*kind, "modules" | "states") {
            sync_kind(&call, kind).await?
        } else {
            Vec::new()
        };
        out.insert(
            (*kind).to_owned(),
            names.into_iter().map(Value::String).collect(),
        );
    }
    if truthy(call.arg("refresh")) {
        extmods::clear_cache();
        call.ctx.jobs.refresh_pillar();
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::{Value, json};

    use crate::context::JobControl;
    use crate::testutil::{ctx, run_in};

    /// A minion with one running job that records what it was asked to do.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl Recorder {
        fn log(&self) -> Vec<String> {
            self.0.lock().map(|l| l.clone()).unwrap_or_default()
        }
    }

    fn job() -> Value {
        // The shape salt 3007.8's saltutil.running gives.
        json!({"pid": 21009, "fun": "cmd.run", "arg": ["sleep 30"], "tgt": "labminion",
               "jid": "20261121001620925940", "ret": "", "tgt_type": "glob", "user": "root"})
    }

    impl JobControl for Recorder {
        fn running(&self) -> Vec<Value> {
            vec![job()]
        }
        fn signal_job(&self, jid: &str, signal: i32) -> Value {
            if let Ok(mut l) = self.0.lock() {
                l.push(format!("signal {jid} {signal}"));
            }
            json!(format!("Signal {signal} sent to job {jid} at pid 21009"))
        }
        fn refresh_grains(&self) -> bool {
            if let Ok(mut l) = self.0.lock() {
                l.push("grains".into());
            }
            true
        }
        fn refresh_pillar(&self) -> bool {
            if let Ok(mut l) = self.0.lock() {
                l.push("pillar".into());
            }
            true
        }
    }

    #[tokio::test]
    async fn delegates_to_the_minion() {
        let rec = Arc::new(Recorder::default());
        let mut c = ctx();
        c.jobs = rec.clone();
        let run = |fun: &'static str, args: Value| {
            let c = c.clone();
            async move { run_in(&c, fun, args, json!({})).await }
        };
        assert_eq!(run("saltutil.running", json!([])).await.ret, json!([job()]));
        assert_eq!(
            run("saltutil.is_running", json!(["cmd.*"])).await.ret,
            json!([job()])
        );
        assert_eq!(
            run("saltutil.is_running", json!(["test.*"])).await.ret,
            json!([])
        );
        assert_eq!(
            run("saltutil.find_job", json!(["20261121001620925940"]))
                .await
                .ret,
            job()
        );
        assert_eq!(run("saltutil.find_job", json!(["1"])).await.ret, json!({}));
        assert_eq!(
            run("saltutil.kill_job", json!(["20261121001620925940"]))
                .await
                .ret,
            json!("Signal 9 sent to job 20261121001620925940 at pid 21009")
        );
        assert_eq!(
            run("saltutil.signal_job", json!(["20261121001620925940", 15]))
                .await
                .ret,
            json!("Signal 15 sent to job 20261121001620925940 at pid 21009")
        );
        assert_eq!(
            run("saltutil.term_job", json!(["20261121001620925940"]))
                .await
                .ret,
            json!("Signal 15 sent to job 20261121001620925940 at pid 21009")
        );
        let bad = run("saltutil.signal_job", json!(["1", 99])).await;
        assert_eq!(
            bad.ret,
            json!("The minion function caused an exception: ValueError: 99 is not a valid Signals")
        );
        assert_eq!(
            run("saltutil.refresh_grains", json!([])).await.ret,
            json!(true)
        );
        assert_eq!(
            run("saltutil.refresh_pillar", json!([])).await.ret,
            json!(true)
        );
        assert_eq!(
            rec.log(),
            [
                "signal 20261121001620925940 9",
                "signal 20261121001620925940 15",
                "signal 20261121001620925940 15",
                "grains",
                "pillar",
                "pillar"
            ]
        );
        let out = run_in(
            &c,
            "saltutil.refresh_grains",
            json!([]),
            json!({"bogus": 1}),
        )
        .await;
        assert_eq!(
            out.ret,
            json!(
                "ERROR executing 'saltutil.refresh_grains': The following keyword arguments are not valid: bogus=1"
            )
        );
    }

    #[tokio::test]
    async fn without_a_minion_nothing_runs() {
        let c = ctx();
        let out = run_in(&c, "saltutil.running", json!([]), json!({})).await;
        assert_eq!(out.ret, json!([]));
        let out = run_in(&c, "saltutil.kill_job", json!(["1"]), json!({})).await;
        assert_eq!(out.ret, json!(""));
        // As salt-call --local 3007.8 answers: no daemon refreshes the pillar, even waiting.
        let out = run_in(&c, "saltutil.refresh_pillar", json!([]), json!({})).await;
        assert_eq!(out.ret, json!(false));
        let wait = json!({"wait": true, "timeout": 1});
        let out = run_in(&c, "saltutil.refresh_pillar", json!([]), wait).await;
        assert_eq!(out.ret, json!(false));
        let bad = json!({"wait": true, "timeout": "soon"});
        let out = run_in(&c, "saltutil.refresh_pillar", json!([]), bad).await;
        assert_eq!(
            out.ret,
            json!(
                "ERROR executing 'saltutil.refresh_pillar': timeout must be a number of seconds, got 'soon'"
            ),
            "{out:?}"
        );
        let out = run_in(&c, "saltutil.refresh_grains", json!([]), json!({})).await;
        assert_eq!(out.ret, json!(true));
    }
}
