//! Salt's `test` module: functions that check the minion answers and that the argument and
//! return paths behave.

use std::time::Duration;

use serde_json::{Value, json};

use crate::error::ExecError;
use crate::pyish::{py_int, py_str};
use crate::spec::{Call, Function, Lit, Param};

/// The `test` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("test.arg", handler!(arg))
        .varargs()
        .kwargs()
        .doc(ARG_DOC),
    Function::new("test.echo", handler!(echo))
        .params(&[Param::req("text")])
        .doc(ECHO_DOC),
    Function::new("test.exception", handler!(exception))
        .params(&[Param::opt("message", Lit::Str("Test Exception"))])
        .doc(EXCEPTION_DOC),
    Function::new("test.false", handler!(false_))
        .py_name("false_")
        .doc(FALSE_DOC),
    Function::new("test.kwarg", handler!(kwarg))
        .kwargs()
        .doc(KWARG_DOC),
    Function::new("test.ping", handler!(ping)).doc(PING_DOC),
    Function::new("test.retcode", handler!(retcode))
        .params(&[Param::opt("code", Lit::Int(42))])
        .doc(RETCODE_DOC),
    Function::new("test.sleep", handler!(sleep))
        .params(&[Param::req("length")])
        .doc(SLEEP_DOC),
    Function::new("test.true", handler!(true_))
        .py_name("true_")
        .doc(TRUE_DOC),
    Function::new("test.version", handler!(version)).doc(VERSION_DOC),
];

const PING_DOC: &str = "Check that the minion is up and answering jobs. This is not an ICMP ping.

Returns ``True``.

CLI Example:

.. code-block:: bash

    salt '*' test.ping
";

async fn ping(_call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(true))
}

const ECHO_DOC: &str = "Return the text it is given, to check the connection

CLI Example:

.. code-block:: bash

    salt '*' test.echo 'foo bar baz quo qux'
";

async fn echo(call: Call) -> Result<Value, ExecError> {
    Ok(call.arg("text").clone())
}

const SLEEP_DOC: &str = "Sleep for the given number of seconds, then return ``True``. Used to
test long-running jobs.

CLI Example:

.. code-block:: bash

    salt '*' test.sleep 20
";

async fn sleep(call: Call) -> Result<Value, ExecError> {
    let secs = py_int(call.arg("length"))?;
    let secs = u64::try_from(secs)
        .map_err(|_| ExecError::exception("ValueError", "sleep length must be non-negative"))?;
    tokio::time::sleep(Duration::from_secs(secs)).await;
    Ok(Value::Bool(true))
}

const VERSION_DOC: &str = "Return the version of saltq running on the minion

CLI Example:

.. code-block:: bash

    salt '*' test.version
";

async fn version(_call: Call) -> Result<Value, ExecError> {
    Ok(Value::from(env!("CARGO_PKG_VERSION")))
}

const ARG_DOC: &str = "Return the positional and keyword arguments it was called with, to test
the publication data and argument passing from the CLI. The keyword arguments include the
``__pub_*`` publication data.

:return: ``{\"args\": args, \"kwargs\": kwargs}``
:rtype: dict

CLI Example:

.. code-block:: bash

    salt '*' test.arg 1 \"two\" 3.1 txt=\"hello\" wow='{a: 1, b: \"hello\"}'
";

async fn arg(call: Call) -> Result<Value, ExecError> {
    Ok(json!({"args": call.varargs(), "kwargs": call.kwargs()}))
}

const KWARG_DOC: &str = "Return the keyword arguments it was called with, including the
``__pub_*`` publication data the minion adds, to test keyword argument passing.

CLI Example:

.. code-block:: bash

    salt '*' test.kwarg num=1 txt=\"two\" env='{a: 1, b: \"hello\"}'
";

async fn kwarg(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Object(call.kwargs().clone()))
}

const RETCODE_DOC: &str = "Set the job's return code to ``code`` and return ``True``, to test that
return codes reach the master

CLI Example:

.. code-block:: bash

    salt '*' test.retcode 42
";

async fn retcode(call: Call) -> Result<Value, ExecError> {
    let code = py_int(call.arg("code"))?;
    let code = i32::try_from(code).map_err(|_| {
        ExecError::exception("OverflowError", format!("retcode {code} is out of range"))
    })?;
    call.set_retcode(code);
    Ok(Value::Bool(true))
}

const EXCEPTION_DOC: &str = "Raise an exception with the given message, to test how the minion
reports failures

CLI Example:

.. code-block:: bash

    salt '*' test.exception 'Oh noes!'
";

async fn exception(call: Call) -> Result<Value, ExecError> {
    Err(ExecError::exception(
        "Exception",
        py_str(call.arg("message")),
    ))
}

const TRUE_DOC: &str = "Always return ``True``

CLI Example:

.. code-block:: bash

    salt '*' test.true
";

async fn true_(_call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(true))
}

const FALSE_DOC: &str = "Always return ``False``

CLI Example:

.. code-block:: bash

    salt '*' test.false
";

async fn false_(_call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(false))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testutil::{check, run, run_kw};

    #[tokio::test]
    async fn returns_match_salt() {
        // (function, args, kwargs, return, retcode) as salt 3007.8 answered them.
        check("test.ping", json!([]), json!({}), json!(true), 0).await;
        check("test.echo", json!(["hi"]), json!({}), json!("hi"), 0).await;
        check(
            "test.echo",
            json!([]),
            json!({"text": "kw"}),
            json!("kw"),
            0,
        )
        .await;
        check("test.true", json!([]), json!({}), json!(true), 0).await;
        check("test.false", json!([]), json!({}), json!(false), 0).await;
        check("test.retcode", json!([]), json!({}), json!(true), 42).await;
        check("test.retcode", json!([0]), json!({}), json!(true), 0).await;
        check("test.sleep", json!([0]), json!({}), json!(true), 0).await;
        check(
            "test.version",
            json!([]),
            json!({}),
            json!(env!("CARGO_PKG_VERSION")),
            0,
        )
        .await;
        check(
            "test.exception",
            json!([]),
            json!({}),
            json!("The minion function caused an exception: Exception: Test Exception"),
            1,
        )
        .await;
        check(
            "test.exception",
            json!(["boom"]),
            json!({}),
            json!("The minion function caused an exception: Exception: boom"),
            1,
        )
        .await;
        check(
            "test.sleep",
            json!(["x"]),
            json!({}),
            json!(
                "The minion function caused an exception: ValueError: invalid literal for int() with base 10: 'x'"
            ),
            1,
        )
        .await;
    }

    #[tokio::test]
    async fn arg_and_kwarg_return_pub_data() {
        let out = run_kw(
            "test.arg",
            json!([1, "two", 3.1, {"a": 1}]),
            json!({"txt": "hello"}),
        )
        .await;
        assert_eq!(
            out.ret,
            json!({
                "args": [1, "two", 3.1, {"a": 1}],
                "kwargs": {
                    "txt": "hello",
                    "__pub_fun": "test.arg",
                    "__pub_arg": [1, "two", 3.1, {"a": 1}, {"__kwarg__": true, "txt": "hello"}],
                    "__pub_tgt": "labminion",
                    "__pub_jid": "20261121001530810867",
                    "__pub_ret": "",
                    "__pub_tgt_type": "glob",
                    "__pub_user": "root",
                },
            })
        );
        let out = run_kw("test.kwarg", json!([]), json!({"num": 1})).await;
        let keys: Vec<&str> = out
            .ret
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(
            keys,
            [
                "num",
                "__pub_fun",
                "__pub_arg",
                "__pub_tgt",
                "__pub_jid",
                "__pub_ret",
                "__pub_tgt_type",
                "__pub_user"
            ]
        );
        assert_eq!(out.ret["num"], json!(1));
    }

    #[tokio::test(start_paused = true)]
    async fn sleep_really_sleeps() {
        let start = tokio::time::Instant::now();
        let out = run("test.sleep", json!([3])).await;
        assert_eq!(out.ret, json!(true));
        assert!(start.elapsed() >= std::time::Duration::from_secs(3));
    }
}
