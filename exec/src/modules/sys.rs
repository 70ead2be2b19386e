//! Salt's `sys` module: lists and documents the functions of the one function table.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::error::ExecError;
use crate::pyish::{fnmatch, py_str, strip_rst};
use crate::registry::functions;
use crate::spec::{Call, Function, Lit, Param};

/// The `sys` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("sys.argspec", handler!(argspec))
        .params(&[Param::opt("module", Lit::Str(""))])
        .doc(ARGSPEC_DOC),
    Function::new("sys.doc", handler!(doc))
        .varargs()
        .doc(DOC_DOC),
    Function::new("sys.list_functions", handler!(list_functions))
        .varargs()
        .kwargs()
        .doc(LIST_FUNCTIONS_DOC),
    Function::new("sys.list_modules", handler!(list_modules))
        .varargs()
        .doc(LIST_MODULES_DOC),
];

/// The string form of each `*args` value (YAML may have made a number of a name).
fn names(call: &Call) -> Vec<String> {
    call.varargs().iter().map(py_str).collect()
}

const DOC_DOC: &str = "Return the docs of all functions, or of the modules and functions named.
Names may be globs.

CLI Example:

.. code-block:: bash

    salt '*' sys.doc
    salt '*' sys.doc sys
    salt '*' sys.doc sys.doc
    salt '*' sys.doc 'sys.list_*' test.ping
";

async fn doc(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Object(docs_matching(&names(&call))))
}

/// `sys.doc`'s answer: each selected function's doc, reStructuredText directives stripped.
/// No selector means every function; a selector with `*` is a glob on function names; any
/// other selects a module (`sys` and `sys.` both mean the `sys` module) or one function.
pub(crate) fn docs_matching(selectors: &[String]) -> Map<String, Value> {
    let selected = |f: &Function| {
        selectors.is_empty()
            || selectors.iter().any(|sel| {
                if sel.contains('*') {
                    fnmatch(f.name, sel)
                } else {
                    let prefix = if sel.ends_with('.') {
                        sel.clone()
                    } else {
                        format!("{sel}.")
                    };
                    f.name == sel || f.name.starts_with(&prefix)
                }
            })
    };
    functions()
        .filter(|f| selected(f))
        .map(|f| (f.name.to_owned(), Value::String(strip_rst(&f.raw_doc()))))
        .collect()
}

const LIST_FUNCTIONS_DOC: &str = "List the functions of all modules, or of the modules named.
Names containing ``*`` or ``.`` are globs on function names.

CLI Example:

.. code-block:: bash

    salt '*' sys.list_functions
    salt '*' sys.list_functions sys
    salt '*' sys.list_functions 'sys.list_*'
";

async fn list_functions(call: Call) -> Result<Value, ExecError> {
    let selectors = names(&call);
    let names: BTreeSet<&str> = functions()
        .map(|f| f.name)
        .filter(|name| {
            selectors.is_empty()
                || selectors.iter().any(|sel| {
                    if sel.contains('*') || sel.contains('.') {
                        fnmatch(name, sel)
                    } else {
                        name.starts_with(&format!("{sel}."))
                    }
                })
        })
        .collect();
    Ok(names.into_iter().collect())
}

const LIST_MODULES_DOC: &str = "List the modules loaded on the minion. Names may be globs.

CLI Example:

.. code-block:: bash

    salt '*' sys.list_modules
    salt '*' sys.list_modules 's*'
";

async fn list_modules(call: Call) -> Result<Value, ExecError> {
    let selectors = names(&call);
    let modules: BTreeSet<&str> = functions()
        .filter(|f| {
            selectors.is_empty()
                || selectors.iter().any(|sel| {
                    if sel.contains('*') {
                        fnmatch(f.name, sel)
                    } else {
                        f.module() == sel
                    }
                })
        })
        .map(Function::module)
        .collect();
    Ok(modules.into_iter().collect())
}

const ARGSPEC_DOC: &str = "Return the argument specification of the functions of a module, or of
the functions matching a glob. Without an argument nothing matches.

CLI Example:

.. code-block:: bash

    salt '*' sys.argspec test.echo
    salt '*' sys.argspec sys
    salt '*' sys.argspec 'cmd.run*'
";

async fn argspec(call: Call) -> Result<Value, ExecError> {
    let module = py_str(call.arg("module"));
    let selected = |f: &Function| {
        if module.contains('*') || module.contains('.') {
            fnmatch(f.name, &module)
        } else {
            f.name.starts_with(&format!("{module}."))
        }
    };
    Ok(Value::Object(
        functions()
            .filter(|f| selected(f))
            .map(|f| (f.name.to_owned(), f.argspec()))
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::registry::function_names;
    use crate::testutil::{check, run};

    #[tokio::test]
    async fn list_functions_is_the_dispatch_table() {
        let out = run("sys.list_functions", json!([])).await;
        let listed: Vec<String> = serde_json::from_value(out.ret).unwrap_or_default();
        assert_eq!(listed, function_names());
        // Every listed function dispatches (is not "not available"). Without arguments
        // nothing here has an effect: functions that act need an argument.
        for name in &listed {
            let out = run(name, json!([])).await;
            assert!(
                !out.ret
                    .as_str()
                    .is_some_and(|s| s.ends_with("is not available.")),
                "{name} is listed but does not dispatch"
            );
        }
    }

    #[tokio::test]
    async fn selections_match_salt() {
        check(
            "sys.list_functions",
            json!(["test.e*"]),
            json!({}),
            json!(["test.echo", "test.exception"]),
            0,
        )
        .await;
        check(
            "sys.list_functions",
            json!(["grains"]),
            json!({}),
            json!(["grains.get", "grains.item", "grains.items", "grains.ls"]),
            0,
        )
        .await;
        check(
            "sys.list_functions",
            json!(["pillar", "saltutil.find*"]),
            json!({}),
            json!([
                "pillar.get",
                "pillar.item",
                "pillar.items",
                "saltutil.find_job"
            ]),
            0,
        )
        .await;
        check(
            "sys.list_modules",
            json!(["t*"]),
            json!({}),
            json!(["test"]),
            0,
        )
        .await;
        check(
            "sys.list_modules",
            json!(["grain"]),
            json!({}),
            json!([]),
            0,
        )
        .await;
        let out = run("sys.list_modules", json!([])).await;
        assert_eq!(
            out.ret,
            json!(["cmd", "grains", "pillar", "saltutil", "sys", "test"])
        );
    }

    #[tokio::test]
    async fn argspec_matches_salt() {
        check(
            "sys.argspec",
            json!(["test.echo"]),
            json!({}),
            json!({"test.echo": {"args": ["text"], "defaults": null, "varargs": null, "kwargs": null}}),
            0,
        )
        .await;
        check("sys.argspec", json!([]), json!({}), json!({}), 0).await;
        // Salt's signatures, observed with `salt '*' sys.argspec 'cmd.r*'` on 3007.8.
        let out = run("sys.argspec", json!(["cmd.run_all"])).await;
        assert_eq!(
            out.ret["cmd.run_all"],
            json!({
                "args": ["cmd", "cwd", "stdin", "runas", "group", "shell", "python_shell", "env",
                         "clean_env", "template", "rstrip", "umask", "output_encoding",
                         "output_loglevel", "log_callback", "hide_output", "timeout",
                         "reset_system_locale", "ignore_retcode", "saltenv", "use_vt",
                         "redirect_stderr", "password", "encoded_cmd", "prepend_path",
                         "success_retcodes", "success_stdout", "success_stderr"],
                "defaults": [null, null, null, null, null, null, null, false, null, true, null,
                             null, "debug", null, false, null, true, false, null, false, false,
                             null, false, null, null, null, null],
                "varargs": null,
                "kwargs": true
            })
        );
        let out = run("sys.argspec", json!(["test"])).await;
        assert_eq!(
            out.ret["test.retcode"],
            json!({"args": ["code"], "defaults": [42], "varargs": null, "kwargs": null})
        );
        assert_eq!(
            out.ret["test.arg"],
            json!({"args": null, "defaults": null, "varargs": true, "kwargs": true})
        );
        let out = run("sys.argspec", json!(["pillar.*"])).await;
        assert_eq!(
            out.ret["pillar.get"],
            json!({"args": ["key", "default", "merge", "merge_nested_lists", "delimiter", "pillarenv", "saltenv"],
                   "defaults": ["<Constant.NOT_SET>", false, null, ":", null, null],
                   "varargs": null, "kwargs": null})
        );
        assert_eq!(
            out.ret["pillar.item"],
            json!({"args": ["default", "delimiter", "pillarenv", "saltenv"],
                   "defaults": [null, null, null, null], "varargs": true, "kwargs": null})
        );
    }

    #[tokio::test]
    async fn doc_strips_rst() {
        let out = run("sys.doc", json!(["test.echo"])).await;
        let Some(Value::String(doc)) = out.ret.get("test.echo") else {
            panic!("no doc for test.echo: {}", out.ret);
        };
        assert_eq!(
            doc,
            "\n    Return the text it is given, to check the connection\n\n    CLI Example:\n\n        salt '*' test.echo 'foo bar baz quo qux'\n    "
        );
        let out = run("sys.doc", json!(["sys"])).await;
        let keys: Vec<&String> = out
            .ret
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(
            keys,
            [
                "sys.argspec",
                "sys.doc",
                "sys.list_functions",
                "sys.list_modules"
            ]
        );
        let all = run("sys.doc", json!([])).await;
        assert_eq!(
            all.ret.as_object().map(|m| m.len()),
            Some(function_names().len())
        );
    }
}
