//! The state runs themselves: settle the run's options, compile on a blocking thread, run the
//! chunks, set the retcode (`sls`, `highstate`, `single`, `show_*` in Salt's
//! `salt/modules/state.py`).

use std::sync::Arc;

use saltq_exec::{Call, CallContext, ExecError};
use serde_json::{Map, Value, json};
use tokio::runtime::Handle;

use crate::compile::calls::{self, CompileOptions, Highstate, split_mods};
use crate::compile::top::{Minion, TopOptions};
use crate::compile::{SlsSource, high_to_low};
use crate::render::RenderContext;
use crate::run::{
    EX_STATE_COMPILER_ERROR, EX_STATE_FAILURE, RunControl, RunOptions, retcode, run, run_id,
};
use saltq_semantics::Nodegroups;

use super::options;
use super::source::TreeSource;
use super::{cachedir, errors, own_jid, pause, request, user_kwargs};

/// What one state run works with, settled before compiling.
struct Setup {
    ctx: CallContext,
    kwargs: Map<String, Value>,
    test: bool,
    saltenv: String,
    source: Arc<TreeSource>,
}

impl SlsSource for TreeSource {
    fn render_sls(&self, saltenv: &str, sls: &str) -> Result<Option<Value>, String> {
        self.render(saltenv, sls)
    }

    fn render_top(&self, saltenv: &str) -> Result<Option<Value>, String> {
        let top = self
            .base
            .opts
            .get("state_top")
            .and_then(Value::as_str)
            .unwrap_or("salt://top.sls");
        let path = top.strip_prefix("salt://").unwrap_or(top);
        self.render_file(saltenv, "top", path)
    }

    fn envs(&self) -> Vec<String> {
        TreeSource::envs(self)
    }

    fn list_states(&self, saltenv: &str) -> Vec<String> {
        TreeSource::list_states(self, saltenv)
    }

    fn is_package(&self, saltenv: &str, sls: &str) -> bool {
        TreeSource::is_package(self, saltenv, sls)
    }
}

/// Every `state.*` function that compiles or runs states.
pub(super) async fn state_run(call: Call) -> Result<Value, ExecError> {
    if let Some(conflict) = super::check_queue(&call).await {
        return Ok(errors(&call, conflict, EX_STATE_COMPILER_ERROR));
    }
    let pillar = match super::run_pillar(&call).await? {
        Ok(p) => p,
        Err(refused) => return Ok(refused),
    };
    let mut kwargs = user_kwargs(&call);
    if call.fun == "state.test" {
        kwargs.insert("test".into(), Value::Bool(true));
    }
    let test_arg = call
        .bound
        .params
        .get("test")
        .filter(|v| !v.is_null())
        .or_else(|| kwargs.get("test"))
        .cloned()
        .unwrap_or(Value::Null);
    let opts = (*call.ctx.opts).clone();
    let grains = call.ctx.grains();
    let test = options::test_value(&test_arg, &kwargs, &grains, &pillar, &opts);
    let saltenv = kwargs
        .get("saltenv")
        .filter(|v| !v.is_null())
        .or_else(|| opts.get("saltenv").filter(|v| !v.is_null()))
        .map_or_else(
            || "base".to_owned(),
            |v| v.as_str().map_or_else(|| v.to_string(), str::to_owned),
        );
    let base = RenderContext {
        ctx: call.ctx.clone(),
        grains,
        pillar: pillar.clone(),
        opts,
        saltenv: saltenv.clone(),
        sls: String::new(),
        source: String::new(),
        extra: Map::new(),
    };
    // The run's states see the overridden pillar too (`pillar.get` in a state's arguments
    // or a template).
    let ctx = {
        let mut ctx = call.ctx.for_job();
        ctx.pillar = Arc::new(std::sync::RwLock::new(pillar));
        ctx
    };
    let setup = Setup {
        ctx,
        kwargs,
        test,
        saltenv,
        source: Arc::new(TreeSource::new(base, Handle::current())),
    };
    match call.fun {
        "state.apply" | "state.test" => {
            // `state.test` takes `*args`: it has no `mods` parameter.
            let mods = call
                .bound
                .params
                .get("mods")
                .filter(|v| !v.is_null())
                .cloned()
                .or_else(|| call.varargs().first().cloned());
            match mods {
                Some(m) if !split_mods(&m).iter().all(String::is_empty) => {
                    sls(&call, &setup, &split_mods(&m), Mode::Run).await
                }
                _ => highstate(&call, &setup, Want::Run, None).await,
            }
        }
        "state.highstate" => highstate(&call, &setup, Want::Run, None).await,
        "state.top" => {
            let topfn = call.arg("topfn").as_str().unwrap_or("top.sls").to_owned();
            highstate(&call, &setup, Want::Run, Some(topfn)).await
        }
        "state.show_top" => highstate(&call, &setup, Want::TopData, None).await,
        "state.show_highstate" => highstate(&call, &setup, Want::High, None).await,
        "state.show_lowstate" => highstate(&call, &setup, Want::Low, None).await,
        "state.show_states" => highstate(&call, &setup, Want::States, None).await,
        "state.sls" => sls(&call, &setup, &split_mods(call.arg("mods")), Mode::Run).await,
        "state.sls_id" => {
            let id = call.arg("id_").clone();
            sls(&call, &setup, &split_mods(call.arg("mods")), Mode::Id(id)).await
        }
        "state.show_sls" => sls(&call, &setup, &split_mods(call.arg("mods")), Mode::ShowHigh).await,
        "state.show_low_sls" => {
            sls(&call, &setup, &split_mods(call.arg("mods")), Mode::ShowLow).await
        }
        "state.sls_exists" => sls(&call, &setup, &split_mods(call.arg("mods")), Mode::Exists).await,
        "state.id_exists" => {
            let ids = split_mods(call.arg("ids"));
            sls(
                &call,
                &setup,
                &split_mods(call.arg("mods")),
                Mode::IdsExist(ids),
            )
            .await
        }
        "state.single" => single(&call, &setup).await,
        "state.request" => request_run(&call, &setup).await,
        "state.run_request" => run_request(&call, &setup).await,
        _ => Err(ExecError::execution(format!(
            "'{}' is declared in exec's state table but the engine has no case for it",
            call.fun
        ))),
    }
}

/// What an SLS compile is for.
enum Mode {
    /// Run the states.
    Run,
    /// Run one ID (`state.sls_id`).
    Id(Value),
    /// Show the high data (`state.show_sls`).
    ShowHigh,
    /// Show the low chunks (`state.show_low_sls`).
    ShowLow,
    /// Whether the SLS render (`state.sls_exists`).
    Exists,
    /// Whether these IDs are in them (`state.id_exists`).
    IdsExist(Vec<String>),
}

/// The compiler's options from the minion's options.
fn compile_options(ctx: &CallContext) -> CompileOptions {
    CompileOptions {
        state_auto_order: ctx
            .opt("state_auto_order")
            .is_none_or(|v| v != &Value::Bool(false)),
        disabled_requisites: disabled(ctx),
    }
}

/// Runs `f` over the run's tree source on a blocking thread (rendering fetches files and may
/// call execution functions).
async fn compile<T: Send + 'static>(
    source: Arc<TreeSource>,
    f: impl FnOnce(&TreeSource) -> T + Send + 'static,
) -> Result<T, ExecError> {
    tokio::task::spawn_blocking(move || f(source.as_ref()))
        .await
        .map_err(|e| ExecError::execution(format!("the state compiler failed: {e}")))
}

/// `exclude=` as given (a parameter or a keyword).
fn exclude_arg(call: &Call, setup: &Setup) -> Value {
    call.bound
        .params
        .get("exclude")
        .filter(|v| !v.is_null())
        .or_else(|| setup.kwargs.get("exclude"))
        .cloned()
        .unwrap_or(Value::Null)
}

async fn sls(call: &Call, setup: &Setup, mods: &[String], mode: Mode) -> Result<Value, ExecError> {
    let copts = compile_options(&setup.ctx);
    let saltenv = setup.saltenv.clone();
    let mods_v = mods.to_vec();
    let source = Arc::clone(&setup.source);
    match mode {
        Mode::ShowHigh => {
            let r = compile(source, move |s| {
                calls::show_sls(s, &copts, &saltenv, &mods_v)
            })
            .await?;
            Ok(match r {
                Ok(high) => Value::Object(high),
                Err(errs) => errors(call, errs, EX_STATE_COMPILER_ERROR),
            })
        }
        Mode::ShowLow => {
            let r = compile(source, move |s| {
                calls::show_low_sls(s, &copts, &saltenv, &mods_v)
            })
            .await?;
            Ok(match r {
                Ok(chunks) => json!(chunks),
                Err(errs) => errors(call, errs, EX_STATE_COMPILER_ERROR),
            })
        }
        Mode::Exists | Mode::IdsExist(_) => {
            let r = compile(source, move |s| {
                calls::sls_high(s, &copts, &saltenv, &mods_v, &Value::Null)
            })
            .await?;
            let high = r.unwrap_or_default();
            Ok(Value::Bool(match mode {
                Mode::IdsExist(ids) => ids.iter().all(|id| high.contains_key(id)),
                _ => !high.is_empty(),
            }))
        }
        Mode::Run | Mode::Id(_) => {
            let exclude = exclude_arg(call, setup);
            let r = compile(source, move |s| {
                calls::sls_high(s, &copts, &saltenv, &mods_v, &exclude)
            })
            .await?;
            let high = match r {
                Ok(high) => high,
                Err(errs) => return Ok(errors(call, errs, EX_STATE_COMPILER_ERROR)),
            };
            let chunks = match high_to_low(high.clone(), &disabled(&setup.ctx)) {
                Ok(c) => c,
                Err(errs) => return Ok(errors(call, errs, EX_STATE_COMPILER_ERROR)),
            };
            let id = match &mode {
                Mode::Id(id) => Some(id.as_str().map_or_else(|| id.to_string(), str::to_owned)),
                _ => None,
            };
            let ret = run_chunks(call, setup, chunks, id.as_deref()).await;
            if let Some(id) = id
                && ret.as_object().is_some_and(Map::is_empty)
            {
                return Err(ExecError::invocation(format!(
                    "No matches for ID '{id}' found in SLS '{}' within saltenv '{}'",
                    mods.join(","),
                    setup.saltenv
                )));
            }
            finish(call, ret, Some(&high))
        }
    }
}

/// The runner's options for this call.
fn run_options(call: &Call, setup: &Setup) -> RunOptions {
    let state_events = setup
        .kwargs
        .get("state_events")
        .or_else(|| setup.ctx.opt("state_events"))
        .is_some_and(|v| v == &Value::Bool(true));
    RunOptions {
        state_events,
        jid: own_jid(call),
        minion_id: setup
            .ctx
            .opt("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        test: setup.test,
        failhard: setup
            .ctx
            .opt("failhard")
            .is_some_and(|v| v == &Value::Bool(true)),
        disabled_requisites: disabled(&setup.ctx),
        saltenv: setup.saltenv.clone(),
        control: RunControl::default(),
    }
}

/// `disabled_requisites` from the options.
fn disabled(ctx: &CallContext) -> Vec<String> {
    ctx.opt("disabled_requisites")
        .map(split_mods)
        .unwrap_or_default()
}

/// Runs the chunks with the run's options (only those of state ID `id` and what they
/// require, for `state.sls_id`); `state.pause`/`soft_kill` reach the run through the job's
/// pause file, read before each state and removed afterwards.
async fn run_chunks(
    call: &Call,
    setup: &Setup,
    chunks: Vec<Map<String, Value>>,
    id: Option<&str>,
) -> Value {
    let jid = own_jid(call);
    let mut opts = run_options(call, setup);
    let pause_file = (!jid.is_empty()).then(|| pause::path(&cachedir(&setup.ctx), &jid));
    if let Some(path) = &pause_file {
        opts.control = RunControl::default().with_pause_file(path.clone());
    }
    let ret = match id {
        Some(id) => run_id(chunks, id, &setup.ctx, &opts).await,
        None => run(chunks, &setup.ctx, &opts).await,
    };
    if let Some(path) = pause_file {
        let _ = std::fs::remove_file(path);
    }
    Value::Object(ret)
}

/// Sets Salt's retcode for a finished run and returns it.
fn finish(call: &Call, ret: Value, high: Option<&Map<String, Value>>) -> Result<Value, ExecError> {
    let code = retcode(&ret, high);
    if code != 0 {
        call.set_retcode(code);
    }
    Ok(ret)
}

/// `state.single fun name **kwargs`: one state function called directly, no requisites.
async fn single(call: &Call, setup: &Setup) -> Result<Value, ExecError> {
    let fun = call.arg("fun").as_str().unwrap_or("").to_owned();
    let name = call.arg("name").clone();
    let mut kwargs = Map::new();
    for (k, v) in &setup.kwargs {
        if !matches!(
            k.as_str(),
            "test" | "queue" | "pillar" | "saltenv" | "pillarenv"
        ) {
            kwargs.insert(k.clone(), v.clone());
        }
    }
    let opts = run_options(call, setup);
    match crate::run::single(&fun, &name, kwargs, &setup.ctx, &opts).await {
        Ok(ret) => finish(call, Value::Object(ret), None),
        Err(answer) => {
            call.set_retcode(EX_STATE_COMPILER_ERROR);
            Ok(answer)
        }
    }
}

/// `state.request`: a test run of `mods` kept for `state.run_request`.
async fn request_run(call: &Call, setup: &Setup) -> Result<Value, ExecError> {
    let mods = call.opt_arg("mods").cloned().unwrap_or(Value::Null);
    let mut test_setup = Setup {
        ctx: setup.ctx.clone(),
        kwargs: setup.kwargs.clone(),
        test: true,
        saltenv: setup.saltenv.clone(),
        source: Arc::clone(&setup.source),
    };
    test_setup.kwargs.insert("test".into(), Value::Bool(true));
    let ret = if mods.is_null() {
        highstate(call, &test_setup, Want::Run, None).await?
    } else {
        sls(call, &test_setup, &split_mods(&mods), Mode::Run).await?
    };
    let dir = cachedir(&setup.ctx);
    let mut req = request::read(&dir);
    let name = setup
        .kwargs
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_owned();
    req.insert(
        name,
        json!({"test_run": ret, "mods": mods, "kwargs": Value::Object(test_setup.kwargs)}),
    );
    request::write(&dir, &req)
        .map_err(|e| ExecError::execution(format!("Unable to write state request file: {e}")))?;
    Ok(ret)
}

/// `state.run_request`: applies the recorded request (not in test mode), then forgets it.
async fn run_request(call: &Call, setup: &Setup) -> Result<Value, ExecError> {
    let dir = cachedir(&setup.ctx);
    let name = call.arg("name").as_str().unwrap_or("default").to_owned();
    let mut req = request::read(&dir);
    let Some(entry) = req.get(&name).cloned() else {
        return Ok(json!({}));
    };
    let (Some(mods), Some(Value::Object(saved))) = (entry.get("mods"), entry.get("kwargs")) else {
        return Ok(json!({}));
    };
    let mut kwargs = saved.clone();
    kwargs.extend(setup.kwargs.clone());
    kwargs.remove("test");
    let run_setup = Setup {
        ctx: setup.ctx.clone(),
        test: false,
        saltenv: setup.saltenv.clone(),
        source: Arc::clone(&setup.source),
        kwargs,
    };
    let ret = if mods.is_null() {
        highstate(call, &run_setup, Want::Run, None).await?
    } else {
        sls(call, &run_setup, &split_mods(mods), Mode::Run).await?
    };
    req.remove(&name);
    request::write(&dir, &req)
        .map_err(|e| ExecError::execution(format!("Unable to write state request file: {e}")))?;
    Ok(ret)
}

/// What a highstate compile is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// Run the states (`state.highstate`, `state.apply`, `state.top`).
    Run,
    /// The matches (`state.show_top`).
    TopData,
    /// The high data (`state.show_highstate`).
    High,
    /// The low chunks (`state.show_lowstate`).
    Low,
    /// The SLS names (`state.show_states`).
    States,
}

/// The top file's options from the minion's options and the call's `saltenv`.
fn top_options(ctx: &CallContext, kwargs: &Map<String, Value>) -> TopOptions {
    let s = |k: &str| {
        kwargs
            .get(k)
            .or_else(|| ctx.opt(k))
            .filter(|v| !v.is_null())
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
    };
    let mut opts = TopOptions {
        saltenv: s("saltenv"),
        ..TopOptions::default()
    };
    if let Some(m) = s("top_file_merging_strategy") {
        opts.top_file_merging_strategy = m;
    }
    if let Some(d) = s("default_top") {
        opts.default_top = d;
    }
    opts.state_top_saltenv = s("state_top_saltenv");
    if let Some(Value::Array(order)) = ctx.opt("env_order") {
        opts.env_order = order
            .iter()
            .filter_map(|e| e.as_str().map(str::to_owned))
            .collect();
    }
    opts
}

/// The highstate family: the top file's matches for this minion, then as `what` asks.
/// `topfn` replaces `state_top` (`state.top`).
async fn highstate(
    call: &Call,
    setup: &Setup,
    what: Want,
    topfn: Option<String>,
) -> Result<Value, ExecError> {
    let source = match topfn {
        Some(t) => {
            let mut base = setup.source.base.clone();
            if let Value::Object(o) = &mut base.opts {
                let t = if t.starts_with("salt://") {
                    t
                } else {
                    format!("salt://{t}")
                };
                o.insert("state_top".into(), Value::String(t));
            }
            Arc::new(TreeSource::new(base, Handle::current()))
        }
        None => Arc::clone(&setup.source),
    };
    let topts = top_options(&setup.ctx, &setup.kwargs);
    let copts = compile_options(&setup.ctx);
    let grains = setup.source.base.grains.clone();
    let pillar = setup.source.base.pillar.clone();
    let id = setup
        .ctx
        .opt("id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let nodegroups: Nodegroups = setup
        .ctx
        .opt("nodegroups")
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    let exclude = exclude_arg(call, setup);
    let answer = compile(source, move |s| {
        let minion = Minion {
            id: &id,
            grains: &grains,
            pillar: &pillar,
            nodegroups: &nodegroups,
        };
        match what {
            Want::TopData => Planned::Shown(
                calls::show_top(s, &minion, &topts)
                    .map(|m| Value::Object(m.into_iter().map(|(e, l)| (e, json!(l))).collect())),
            ),
            Want::States => Planned::Shown(calls::show_top(s, &minion, &topts).map(|m| {
                let mut states: Vec<String> = m.into_iter().flat_map(|(_, l)| l).collect();
                states.dedup();
                json!(states)
            })),
            Want::High => {
                Planned::Shown(calls::show_highstate(s, &copts, &minion, &topts).map(Value::Object))
            }
            Want::Low => {
                Planned::Shown(calls::show_lowstate(s, &copts, &minion, &topts).map(|c| json!(c)))
            }
            Want::Run => Planned::Run(calls::highstate(s, &copts, &minion, &topts, &exclude)),
        }
    })
    .await?;
    let high = match answer {
        Planned::Shown(Ok(v)) => return Ok(v),
        Planned::Shown(Err(errs)) => return Ok(errors(call, errs, EX_STATE_COMPILER_ERROR)),
        Planned::Run(Highstate::Errors(errs)) => {
            return Ok(errors(call, errs, EX_STATE_COMPILER_ERROR));
        }
        Planned::Run(Highstate::Nothing(ret)) => {
            call.set_retcode(EX_STATE_FAILURE);
            return Ok(Value::Object(ret));
        }
        Planned::Run(Highstate::High(high)) => high,
    };
    let chunks = match high_to_low(high.clone(), &disabled(&setup.ctx)) {
        Ok(c) => c,
        Err(errs) => return Ok(errors(call, errs, EX_STATE_COMPILER_ERROR)),
    };
    let ret = run_chunks(call, setup, chunks, None).await;
    finish(call, ret, Some(&high))
}

/// What a highstate compile answered.
enum Planned {
    /// A `show_*` answer, or its errors.
    Shown(Result<Value, Vec<String>>),
    /// The plan of a run.
    Run(Highstate),
}
