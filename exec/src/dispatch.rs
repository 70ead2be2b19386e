//! Running one function for a job and turning what happened into Salt's return, retcode and
//! success (`_thread_return` in `salt/minion.py`).

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use serde_json::{Map, Value};

use saltq_semantics::python::truthy;

use crate::args::{bind, split_args};
use crate::context::{CallContext, PubInfo};
use crate::error::ExecError;
use crate::extmods;
use crate::modules::sys::docs_matching;

use crate::registry::lookup;
use crate::spec::{Call, Function};

/// Salt's `EX_GENERIC`: the retcode of a failed function.
pub const EX_GENERIC: i32 = 1;

/// What a job's function produced, as the minion reports it to the master.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// The `return` field.
    pub ret: Value,
    /// The `retcode` field: the function's own, or 1 when it failed.
    pub retcode: i32,
    /// The `success` field: `retcode == 0`.
    pub success: bool,
    /// The `out` field (outputter hint): `nested` for errors and where the module says so.
    pub out: Option<&'static str>,
}

impl CallOutcome {
    fn failed(ret: Value) -> Self {
        Self {
            ret,
            retcode: EX_GENERIC,
            success: false,
            out: Some("nested"),
        }
    }
}

/// Runs `fun` with a job's arguments and publication data. A function that is not built in
/// is looked for among the external modules (`module_dirs`, synced modules).
///
/// The future owns everything the function started: dropping it (a tokio task abort when a
/// job is killed) kills the process groups of the commands it was running.
pub async fn call(
    ctx: &CallContext,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
    publ: &PubInfo,
) -> CallOutcome {
    let Some(f) = lookup(fun) else {
        return call_external(ctx, fun, args, kwargs).await;
    };
    let bound = match bind(f, args, kwargs, publ) {
        Ok(bound) => bound,
        Err(e) => return error_outcome(f, e),
    };
    let call = Call::new(ctx.clone(), f.name, bound);
    let retcode = call.retcode_cell();
    let result = CatchPanic((f.handler)(call)).await;
    match result {
        Ok(ret) => {
            let mut code = retcode.load(Ordering::Relaxed);
            if code == 0 && !dict_succeeded(&ret) {
                code = EX_GENERIC;
            }
            CallOutcome {
                ret,
                retcode: code,
                success: code == 0,
                out: f.outputter,
            }
        }
        Err(e) => error_outcome(f, e),
    }
}

/// What a direct call answers when it could not run the function.
#[derive(Debug, Clone, PartialEq)]
pub enum DirectError {
    /// No built-in or external function of this name (`fun not in __salt__`).
    Missing,
    /// The function raised: its error (a bad binding is `ExecError::InvalidArguments` with
    /// Python's `TypeError` text).
    Failed(ExecError),
}

/// Calls `fun` as Salt's own modules call each other through `__salt__[fun](*args,
/// **kwargs)`: Python's binding only (no `key=value` parsing, no `__pub_*` keys), and the
/// function's error rather than a job's return text. State modules use it.
pub async fn call_direct(
    ctx: &CallContext,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
) -> Result<Value, DirectError> {
    let Some(f) = lookup(fun) else {
        return call_external_direct(ctx, fun, args, kwargs).await;
    };
    let bound = crate::args::bind_python(f, args, kwargs).map_err(DirectError::Failed)?;
    let call = Call::new(ctx.clone(), f.name, bound);
    CatchPanic((f.handler)(call))
        .await
        .map_err(DirectError::Failed)
}

/// Whether `fun` can be called: built in, or a function of an external module
/// (`fun in __salt__`).
pub async fn available(ctx: &CallContext, fun: &str) -> bool {
    if lookup(fun).is_some() {
        return true;
    }
    let Some((module, function)) = fun.split_once('.') else {
        return false;
    };
    let Some(m) = extmods::find(&ctx.opts, module) else {
        return false;
    };
    extmods::list(&m, &ctx.opts, &ctx.processes)
        .await
        .is_ok_and(|names| names.iter().any(|n| n == function))
}

async fn call_external_direct(
    ctx: &CallContext,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
) -> Result<Value, DirectError> {
    let (module, function) = fun.split_once('.').ok_or(DirectError::Missing)?;
    let m = extmods::find(&ctx.opts, module).ok_or(DirectError::Missing)?;
    let names = extmods::list(&m, &ctx.opts, &ctx.processes)
        .await
        .map_err(DirectError::Failed)?;
    if !names.iter().any(|n| n == function) {
        return Err(DirectError::Missing);
    }
    extmods::call(&m, function, args, kwargs, ctx)
        .await
        .map(|(ret, _code)| ret)
        .map_err(DirectError::Failed)
}

/// Runs `fun` from an external module, or answers that it is not available.
async fn call_external(
    ctx: &CallContext,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
) -> CallOutcome {
    let Some((module, function)) = fun.split_once('.') else {
        return missing(fun);
    };
    let Some(m) = extmods::find(&ctx.opts, module) else {
        return missing(fun);
    };
    let failed = |e: ExecError| CallOutcome::failed(Value::String(format!("ERROR: {e}")));
    match extmods::list(&m, &ctx.opts, &ctx.processes).await {
        Ok(names) if names.iter().any(|n| n == function) => {}
        Ok(_) => return missing(fun),
        Err(e) => return failed(e),
    }
    let (positional, keywords) = match split_args(args, kwargs, |_| true) {
        Ok(split) => split,
        Err(e) => return failed(e),
    };
    match extmods::call(&m, function, positional, keywords, ctx).await {
        Ok((ret, mut code)) => {
            if code == 0 && !dict_succeeded(&ret) {
                code = EX_GENERIC;
            }
            CallOutcome {
                ret,
                retcode: code,
                success: code == 0,
                out: None,
            }
        }
        Err(e) => failed(e),
    }
}

/// Salt's rule for a zero retcode: a dict return whose `result` or `success` is falsy failed.
fn dict_succeeded(ret: &Value) -> bool {
    match ret {
        Value::Object(m) => ["result", "success"]
            .iter()
            .all(|k| m.get(*k).is_none_or(truthy)),
        _ => true,
    }
}

/// The answer for a function that does not exist: Salt's "not available" text, or, when the
/// name is the start of existing functions, their docs with that text added.
fn missing(fun: &str) -> CallOutcome {
    let text = format!("'{fun}' is not available.");
    let mut docs = docs_matching(&[format!("{fun}*")]);
    if docs.is_empty() {
        return CallOutcome::failed(Value::String(text));
    }
    docs.insert(fun.to_owned(), Value::String(text));
    CallOutcome::failed(Value::Object(docs))
}

/// The return text for each kind of failure, as `_thread_return` words it.
fn error_outcome(f: &Function, e: ExecError) -> CallOutcome {
    let text = match e {
        ExecError::Execution(msg) => format!("ERROR: {msg}"),
        ExecError::Invocation(msg) => format!("ERROR executing '{}': {msg}", f.name),
        ExecError::InvalidArguments(msg) => {
            format!(
                "Passed invalid arguments to {}: {msg}\n{}",
                f.name,
                f.raw_doc()
            )
        }
        ExecError::CommandNotFound(msg) => {
            format!("Command required for '{}' not found: {msg}", f.name)
        }
        e @ ExecError::Exception { .. } => format!("The minion function caused an exception: {e}"),
    };
    CallOutcome::failed(Value::String(text))
}

/// Turns a panic inside a function into Salt's "caused an exception" answer instead of
/// tearing down the minion's job task.
struct CatchPanic<F>(F);

impl<F> Future for CatchPanic<F>
where
    F: Future<Output = Result<Value, ExecError>> + Unpin,
{
    type Output = Result<Value, ExecError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(poll) => poll,
            Err(payload) => Poll::Ready(Err(ExecError::exception("panic", panic_text(&payload)))),
        }
    }
}

fn panic_text(payload: &Box<dyn Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{check, run, run_kw};
    use serde_json::json;

    #[test]
    fn dict_result_rule() {
        let cases = [
            (json!({"result": false}), false),
            (json!({"success": false}), false),
            (json!({"result": null}), false),
            (json!({"result": 0}), false),
            (json!({"result": true, "success": ""}), false),
            (json!({"result": true}), true),
            (json!({"other": false}), true),
            (json!({}), true),
            (json!(false), true),
            (json!([{"result": false}]), true),
        ];
        for (ret, want) in cases {
            assert_eq!(dict_succeeded(&ret), want, "{ret}");
        }
    }

    #[tokio::test]
    async fn unknown_functions() {
        let out = run("test.foo", json!([])).await;
        assert_eq!(
            out,
            CallOutcome::failed(json!("'test.foo' is not available."))
        );
        let out = run("nomod.foo", json!([])).await;
        assert_eq!(out.ret, json!("'nomod.foo' is not available."));
        // A prefix of existing functions answers with their docs, as Salt does for `test.ec`.
        let out = run("test.ec", json!([])).await;
        assert_eq!(out.retcode, 1);
        assert!(!out.success);
        let keys: Vec<&str> = out
            .ret
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(keys, ["test.echo", "test.ec"]);
        assert_eq!(out.ret["test.ec"], json!("'test.ec' is not available."));
        assert!(
            out.ret["test.echo"]
                .as_str()
                .is_some_and(|d| d.starts_with("\n    Return") && !d.contains("code-block"))
        );
    }

    #[tokio::test]
    async fn invalid_arguments_carry_the_doc() {
        let out = run("test.echo", json!(["hi", "there"])).await;
        assert_eq!(out.retcode, 1);
        assert_eq!(out.out, Some("nested"));
        let text = out.ret.as_str().unwrap_or_default();
        let (head, doc) = text.split_once('\n').unwrap_or_default();
        assert_eq!(
            head,
            "Passed invalid arguments to test.echo: echo() takes 1 positional argument but 2 were given"
        );
        assert!(doc.starts_with("\n    Return the text"), "{doc:?}");
        assert!(doc.contains("    .. code-block:: bash\n\n        salt '*' test.echo"));
        assert!(doc.ends_with("\n    "));

        check(
            "test.echo",
            json!(["hi"]),
            json!({"foo": "bar"}),
            json!("ERROR executing 'test.echo': The following keyword arguments are not valid: foo=bar"),
            1,
        )
        .await;
        let out = run_kw("test.echo", json!([]), json!({})).await;
        assert!(
            out.ret
                .as_str()
                .unwrap_or_default()
                .starts_with("Passed invalid arguments to test.echo: echo() missing 1 required positional argument: 'text'\n")
        );
    }

    #[test]
    fn every_error_kind_has_salts_text() {
        let f = lookup("test.echo").copied();
        let Some(f) = f else {
            panic!("test.echo is not registered");
        };
        let text = |e| error_outcome(&f, e).ret;
        assert_eq!(text(ExecError::execution("boom")), json!("ERROR: boom"));
        assert_eq!(
            text(ExecError::invocation("bad")),
            json!("ERROR executing 'test.echo': bad")
        );
        assert_eq!(
            text(ExecError::CommandNotFound("x".into())),
            json!("Command required for 'test.echo' not found: x")
        );
        assert_eq!(
            text(ExecError::exception("KeyError", "'k'")),
            json!("The minion function caused an exception: KeyError: 'k'")
        );
    }

    #[tokio::test]
    async fn a_panic_becomes_an_exception_return() {
        let fut: crate::spec::BoxFuture = Box::pin(async { panic!("kaboom") });
        let got = CatchPanic(fut).await;
        assert_eq!(got, Err(ExecError::exception("panic", "kaboom")));
    }
}
