//! Salt's `test` module: functions that check the minion answers and that the argument and
//! return paths behave.

use std::time::Duration;

use serde_json::{Value, json};

use saltq_semantics::python;

use crate::error::ExecError;
use crate::hashing::hex_digest;
use crate::pyish::py_int;
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
    Function::new("test.fib", handler!(fib))
        .params(&[Param::req("num")])
        .doc(FIB_DOC),
    Function::new("test.false", handler!(false_))
        .py_name("false_")
        .doc(FALSE_DOC),
    Function::new("test.kwarg", handler!(kwarg))
        .kwargs()
        .doc(KWARG_DOC),
    Function::new("test.outputter", handler!(outputter))
        .params(&[Param::req("data")])
        .doc(OUTPUTTER_DOC),
    Function::new("test.ping", handler!(ping)).doc(PING_DOC),
    Function::new("test.rand_sleep", handler!(rand_sleep))
        .params(&[Param::opt("max", Lit::Int(60))])
        .doc(RAND_SLEEP_DOC),
    Function::new("test.random_hash", handler!(random_hash))
        .params(&[
            Param::opt("size", Lit::Int(9_999_999_999)),
            Param::opt("hash_type", Lit::None),
        ])
        .doc(RANDOM_HASH_DOC),
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
    Function::new("test.versions_report", handler!(versions_report)).doc(VERSIONS_REPORT_DOC),
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

const RAND_SLEEP_DOC: &str =
    "Sleep for a random number of seconds between 0 and ``max``, then return
``True``. Used to test long-running jobs and minions returning at differing intervals.

CLI Example:

.. code-block:: bash

    salt '*' test.rand_sleep 60
";

async fn rand_sleep(call: Call) -> Result<Value, ExecError> {
    let max = py_int(call.arg("max"))?;
    if max < 0 {
        return Err(ExecError::exception(
            "ValueError",
            format!("empty range in randrange(0, {})", max + 1),
        ));
    }
    let secs = rand::random_range(0..=max.unsigned_abs());
    tokio::time::sleep(Duration::from_secs(secs)).await;
    Ok(Value::Bool(true))
}

const VERSIONS_REPORT_DOC: &str =
    "Return the versions of saltq and of the system it runs on, as text

CLI Example:

.. code-block:: bash

    salt '*' test.versions_report
";

async fn versions_report(_call: Call) -> Result<Value, ExecError> {
    let os_release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let uts = nix::sys::utsname::uname().ok();
    let uname = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
        uts.as_ref()
            .map(|u| f(u).to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let sections = [
        (
            "Salt Version",
            vec![("Salt", env!("CARGO_PKG_VERSION").to_owned())],
        ),
        (
            "System Versions",
            system_versions(
                &os_release,
                &uname(|u| u.machine()),
                &uname(|u| u.release()),
            ),
        ),
    ];
    Ok(Value::String(format_versions(&sections)))
}

/// Salt's "System Versions" from os-release and uname: `dist`, `locale`, `machine`,
/// `release`, `system`, `version`.
fn system_versions(os_release: &str, machine: &str, release: &str) -> Vec<(&'static str, String)> {
    let field = |key: &str| {
        os_release
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(|v| v.trim().trim_matches('"').to_owned())
            .unwrap_or_default()
    };
    let debian = std::fs::read_to_string("/etc/debian_version").unwrap_or_default();
    let version_id = field("VERSION_ID");
    let version = Some(debian.trim())
        .filter(|d| !version_id.is_empty() && d.starts_with(&version_id))
        .map_or(version_id, str::to_owned);
    let codename = field("VERSION_CODENAME");
    let join = |first: String| {
        [first, version.clone(), codename.clone()]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    };
    vec![
        ("dist", join(field("ID"))),
        ("locale", "utf-8".to_owned()),
        ("machine", machine.to_owned()),
        ("release", release.to_owned()),
        ("system", "Linux".to_owned()),
        ("version", join(field("NAME"))),
    ]
}

/// Salt's `versions_report` layout: each section's name, its entries right-aligned on the
/// colon (width of `Not Installed` plus one at least), and a line holding one space.
fn format_versions(sections: &[(&str, Vec<(&str, String)>)]) -> String {
    let pad = sections
        .iter()
        .flat_map(|(_, entries)| entries.iter().map(|(k, _)| k.len()))
        .chain(std::iter::once("Not Installed".len()))
        .max()
        .unwrap_or(0)
        + 1;
    let mut lines = Vec::new();
    for (name, entries) in sections {
        lines.push(format!("{name}:"));
        for (key, value) in entries {
            lines.push(format!("{key:>pad$}: {value}"));
        }
        lines.push(" ".to_owned());
    }
    lines.join("\n")
}

const FIB_DOC: &str = "Return the ``num``-th Fibonacci number and the time it took to compute, in
seconds. Used for performance tests.

CLI Example:

.. code-block:: bash

    salt '*' test.fib 3
";

async fn fib(call: Call) -> Result<Value, ExecError> {
    let num = py_int(call.arg("num"))?;
    if num < 0 {
        return Err(ExecError::exception(
            "ValueError",
            "Negative number is not allowed!",
        ));
    }
    let start = std::time::Instant::now();
    let (mut prev, mut curr) = (0f64, 1f64);
    let (mut prev_int, mut curr_int) = (0u64, 1u64);
    let mut exact = true;
    for _ in 1..num {
        (prev, curr) = (curr, prev + curr);
        match prev_int.checked_add(curr_int) {
            Some(next) if exact => (prev_int, curr_int) = (curr_int, next),
            _ => exact = false,
        }
    }
    let value = match num {
        0 => json!(0),
        _ if exact => json!(curr_int),
        // Beyond u64 the number travels as a float, as every number does on the wire.
        _ => json!(curr),
    };
    Ok(json!([value, start.elapsed().as_secs_f64()]))
}

const OUTPUTTER_DOC: &str = "Return the data it is given, to test the outputters

CLI Example:

.. code-block:: bash

    salt '*' test.outputter foobar
";

async fn outputter(call: Call) -> Result<Value, ExecError> {
    Ok(call.arg("data").clone())
}

const RANDOM_HASH_DOC: &str = "Return the hash of a random number between 1 and ``size``. Without a
``hash_type``, the minion's ``hash_type`` option is used (``sha256`` by default).

CLI Example:

.. code-block:: bash

    salt '*' test.random_hash
    salt '*' test.random_hash hash_type=sha512
";

async fn random_hash(call: Call) -> Result<Value, ExecError> {
    let size = py_int(call.arg("size"))?;
    if size < 1 {
        return Err(ExecError::exception(
            "ValueError",
            format!("empty range in randrange(1, {})", size + 1),
        ));
    }
    let form = call
        .opt_arg("hash_type")
        .filter(|v| saltq_semantics::python::truthy(v))
        .or_else(|| call.ctx.opt("hash_type"))
        .map_or_else(|| "sha256".to_owned(), python::str);
    let number = rand::random_range(1..=size);
    Ok(Value::String(hex_digest(
        &form,
        number.to_string().as_bytes(),
    )?))
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
        python::str(call.arg("message")),
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

    #[tokio::test]
    async fn more_returns_match_salt() {
        check("test.outputter", json!(["foo"]), json!({}), json!("foo"), 0).await;
        check(
            "test.outputter",
            json!([{"a": [1]}]),
            json!({}),
            json!({"a": [1]}),
            0,
        )
        .await;
        check("test.rand_sleep", json!([0]), json!({}), json!(true), 0).await;
        // (55, 1.9e-06) from salt 3007.8: the number, then the seconds it took.
        let out = run("test.fib", json!([10])).await;
        assert_eq!(out.ret[0], json!(55));
        assert!(out.ret[1].is_f64(), "{}", out.ret);
        assert_eq!(run("test.fib", json!([0])).await.ret[0], json!(0));
        assert_eq!(run("test.fib", json!([1])).await.ret[0], json!(1));
        assert_eq!(
            run("test.fib", json!([93])).await.ret[0],
            json!(12200160415121876738u64)
        );
        assert!(run("test.fib", json!([100])).await.ret[0].is_f64());
        check(
            "test.fib",
            json!([-1]),
            json!({}),
            json!("The minion function caused an exception: ValueError: Negative number is not allowed!"),
            1,
        )
        .await;
        for (kwargs, len) in [
            (json!({}), 64),
            (json!({"hash_type": "md5"}), 32),
            (json!({"hash_type": "sha512"}), 128),
        ] {
            let out = run_kw("test.random_hash", json!([]), kwargs).await;
            let hash = out.ret.as_str().unwrap_or_default();
            assert_eq!(hash.len(), len, "{hash}");
            assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));
        }
        // size=1 means the number 1: sha256("1").
        check(
            "test.random_hash",
            json!([1]),
            json!({}),
            json!("6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"),
            0,
        )
        .await;
    }

    #[tokio::test]
    async fn versions_report_has_salts_layout() {
        let out = run("test.versions_report", json!([])).await;
        let text = out.ret.as_str().unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Salt Version:");
        assert_eq!(
            lines[1],
            format!("          Salt: {}", env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(lines[2], " ");
        assert_eq!(lines[3], "System Versions:");
        assert!(lines[4].starts_with("          dist: "), "{text}");
        assert_eq!(
            lines[6],
            format!("       machine: {}", std::env::consts::ARCH)
        );
        assert_eq!(lines[8], "        system: Linux");
        assert!(text.ends_with("\n "), "{text:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn sleep_really_sleeps() {
        let start = tokio::time::Instant::now();
        let out = run("test.sleep", json!([3])).await;
        assert_eq!(out.ret, json!(true));
        assert!(start.elapsed() >= std::time::Duration::from_secs(3));
    }
}
