//! Salt's `sys` module: lists and documents the functions of the one function table, and
//! those of the external modules (built-in functions win over external ones of the same name),
//! and the master's built-in runners ([`crate::runners`]).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use saltq_semantics::python::{self, fnmatch};

use crate::error::ExecError;
use crate::extmods;
use crate::pyish::strip_rst;
use crate::registry::{functions, lookup};
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
    Function::new("sys.list_runner_functions", handler!(list_runner_functions))
        .varargs()
        .kwargs()
        .doc(LIST_RUNNER_FUNCTIONS_DOC),
    Function::new("sys.runner_doc", handler!(runner_doc))
        .varargs()
        .doc(RUNNER_DOC_DOC),
];

/// The string form of each `*args` value (YAML may have made a number of a name).
fn names(call: &Call) -> Vec<String> {
    call.varargs().iter().map(python::str).collect()
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
    let selectors = names(&call);
    let mut docs = docs_matching(&selectors);
    for (m, fun) in external(&call).await {
        let name = format!("{}.{fun}", m.name);
        if doc_selected(&name, &selectors) {
            let text = extmods::doc(&m, &fun, &call.ctx.opts, &call.ctx.processes)
                .await
                .unwrap_or_else(|e| format!("ERROR: {e}"));
            docs.insert(name, Value::String(text));
        }
    }
    docs.sort_keys();
    Ok(Value::Object(docs))
}

/// The external functions not shadowed by a built-in one, with their module.
async fn external(call: &Call) -> Vec<(extmods::ExtModule, String)> {
    let ctx = &call.ctx;
    let mut out = Vec::new();
    for m in extmods::discover(&ctx.opts) {
        let Ok(funs) = extmods::list(&m, &ctx.opts, &ctx.processes).await else {
            continue;
        };
        for fun in funs {
            if lookup(&format!("{}.{fun}", m.name)).is_none() {
                out.push((m.clone(), fun));
            }
        }
    }
    out
}

/// `sys.doc`'s selection: no selector means everything; one with `*` is a glob; any other
/// names a module (`sys` and `sys.` both mean the `sys` module) or one function.
fn doc_selected(name: &str, selectors: &[String]) -> bool {
    selectors.is_empty()
        || selectors.iter().any(|sel| {
            if sel.contains('*') {
                fnmatch(name, sel)
            } else {
                let prefix = if sel.ends_with('.') {
                    sel.clone()
                } else {
                    format!("{sel}.")
                };
                name == sel || name.starts_with(&prefix)
            }
        })
}

/// `sys.doc`'s answer: each selected function's doc, reStructuredText directives stripped.
/// No selector means every function; a selector with `*` is a glob on function names; any
/// other selects a module (`sys` and `sys.` both mean the `sys` module) or one function.
pub(crate) fn docs_matching(selectors: &[String]) -> Map<String, Value> {
    functions()
        .filter(|f| doc_selected(f.name, selectors))
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
    let selected = |name: &str| {
        selectors.is_empty()
            || selectors.iter().any(|sel| {
                if sel.contains('*') || sel.contains('.') {
                    fnmatch(name, sel)
                } else {
                    name.starts_with(&format!("{sel}."))
                }
            })
    };
    let builtin = functions().map(|f| f.name.to_owned());
    let ext = external(&call)
        .await
        .into_iter()
        .map(|(m, fun)| format!("{}.{fun}", m.name));
    let names: BTreeSet<String> = builtin.chain(ext).filter(|n| selected(n)).collect();
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
    let ext = extmods::discover(&call.ctx.opts);
    let modules: BTreeSet<&str> = functions()
        .map(|f| (f.name, f.module()))
        .chain(ext.iter().map(|m| (m.name.as_str(), m.name.as_str())))
        .filter(|(name, module)| {
            selectors.is_empty()
                || selectors.iter().any(|sel| {
                    if sel.contains('*') {
                        fnmatch(name, sel)
                    } else {
                        module == sel
                    }
                })
        })
        .map(|(_, module)| module)
        .collect();
    Ok(modules.into_iter().collect())
}

const LIST_RUNNER_FUNCTIONS_DOC: &str = "List the functions of all runner modules, or of the runner
modules named. Names containing ``*`` or ``.`` are globs on function names.

CLI Example:

.. code-block:: bash

    salt '*' sys.list_runner_functions
    salt '*' sys.list_runner_functions jobs manage
    salt '*' sys.list_runner_functions 'jobs.*' 'manage.*'
";

/// Salt's `sys.list_runner_functions`: the runner names, sorted; a selector with `*` or `.` is
/// a glob, any other a runner module (`jobs` selects `jobs.*`, not `jobsx.*`). Keyword
/// arguments are taken and ignored, as Salt's are.
async fn list_runner_functions(call: Call) -> Result<Value, ExecError> {
    let selectors = names(&call);
    let names: BTreeSet<&str> = crate::runners::RUNNERS
        .iter()
        .map(|(name, _)| *name)
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

const RUNNER_DOC_DOC: &str = "Return the docs of all runners, or of the runner modules and
functions named. Names may be globs.

CLI Example:

.. code-block:: bash

    salt '*' sys.runner_doc
    salt '*' sys.runner_doc jobs
    salt '*' sys.runner_doc jobs.lookup_jid 'manage.*'
";

/// Salt's `sys.runner_doc`: each selected runner's doc, reStructuredText directives stripped,
/// selected as `sys.doc` selects functions.
async fn runner_doc(call: Call) -> Result<Value, ExecError> {
    let selectors = names(&call);
    let docs: Map<String, Value> = crate::runners::RUNNERS
        .iter()
        .filter(|(name, _)| doc_selected(name, &selectors))
        .map(|(name, doc)| ((*name).to_owned(), Value::String(strip_rst(doc))))
        .collect();
    Ok(Value::Object(docs))
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
    let module = python::str(call.arg("module"));
    let selected = |name: &str| {
        if module.contains('*') || module.contains('.') {
            fnmatch(name, &module)
        } else {
            name.starts_with(&format!("{module}."))
        }
    };
    let mut specs: Map<String, Value> = functions()
        .filter(|f| selected(f.name))
        .map(|f| (f.name.to_owned(), f.argspec()))
        .collect();
    // An external function takes whatever it is given.
    let any = serde_json::json!({"args": null, "defaults": null, "varargs": true, "kwargs": true});
    for (m, fun) in external(&call).await {
        let name = format!("{}.{fun}", m.name);
        if selected(&name) {
            specs.insert(name, any.clone());
        }
    }
    specs.sort_keys();
    Ok(Value::Object(specs))
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
        // Every listed function dispatches (is not "not available"). Each is called with an
        // empty argument list, which functions that act refuse (they need a name or a path),
        // except these, which act (or sleep) without arguments: for them the table lookup
        // that dispatch does is checked instead.
        const ACT_WITHOUT_ARGUMENTS: &[&str] = &[
            "pkg.list_upgrades",
            "pkg.refresh_db",
            "pkg.upgrade",
            "saltutil.sync_all",
            "saltutil.sync_modules",
            "test.rand_sleep",
        ];
        for name in &listed {
            if ACT_WITHOUT_ARGUMENTS.contains(&name.as_str()) {
                assert!(crate::registry::lookup(name).is_some(), "{name}");
                continue;
            }
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
            json!([
                "grains.append",
                "grains.delval",
                "grains.fetch",
                "grains.filter_by",
                "grains.get",
                "grains.has_value",
                "grains.item",
                "grains.items",
                "grains.ls",
                "grains.remove",
                "grains.set",
                "grains.setval"
            ]),
            0,
        )
        .await;
        check(
            "sys.list_functions",
            json!(["pillar", "saltutil.find*"]),
            json!({}),
            json!([
                "pillar.data",
                "pillar.ext",
                "pillar.fetch",
                "pillar.file_exists",
                "pillar.get",
                "pillar.item",
                "pillar.items",
                "pillar.keys",
                "pillar.ls",
                "pillar.obfuscate",
                "pillar.raw",
                "saltutil.find_job"
            ]),
            0,
        )
        .await;
        check(
            "sys.list_modules",
            json!(["t*"]),
            json!({}),
            json!(["test", "timezone"]),
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
            json!([
                "alternatives",
                "archive",
                "beacons",
                "cmd",
                "config",
                "cp",
                "cron",
                "defaults",
                "disk",
                "event",
                "file",
                "git",
                "grains",
                "group",
                "hosts",
                "kmod",
                "locale",
                "log",
                "match",
                "mine",
                "mount",
                "network",
                "pillar",
                "pkg",
                "saltutil",
                "schedule",
                "service",
                "shadow",
                "slsutil",
                "ssh",
                "state",
                "status",
                "sys",
                "sysctl",
                "test",
                "timezone",
                "user"
            ])
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
    async fn doc_of_test_ping_is_readable() {
        // What `saltq '*' sys.doc test.ping` prints under the minion's id.
        check(
            "sys.doc",
            json!(["test.ping"]),
            json!({}),
            json!({"test.ping": "\n    Check that the minion is up and answering jobs. This is not an ICMP ping.\n\n    Returns ``True``.\n\n    CLI Example:\n\n        salt '*' test.ping\n    "}),
            0,
        )
        .await;
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
                "sys.list_modules",
                "sys.list_renderers",
                "sys.list_runner_functions",
                "sys.list_state_functions",
                "sys.list_state_modules",
                "sys.runner_doc",
                "sys.state_doc"
            ]
        );
        let all = run("sys.doc", json!([])).await;
        assert_eq!(
            all.ret.as_object().map(|m| m.len()),
            Some(function_names().len())
        );
    }

    /// The master's runners, selected as Salt's `sys.list_runner_functions` and
    /// `sys.runner_doc` select them (shapes recorded from `salt-call --local` in
    /// tests/tests/e2e/data/alcali/salt-3007.8-initdb.txt: a sorted list of names; a mapping
    /// of name to doc).
    #[tokio::test]
    async fn runners_are_listed_and_documented_as_salt_does() {
        let all = run("sys.list_runner_functions", json!([])).await.ret;
        let names: Vec<&str> = crate::runners::RUNNERS.iter().map(|(n, _)| *n).collect();
        assert_eq!(all, json!(names));
        assert!(names.contains(&"jobs.lookup_jid") && names.contains(&"doc.wheel"));
        assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted and unique");
        let jobs = run("sys.list_runner_functions", json!(["jobs"])).await.ret;
        let jobs: Vec<String> = serde_json::from_value(jobs).unwrap();
        assert!(!jobs.is_empty() && jobs.iter().all(|n| n.starts_with("jobs.")));
        let glob = run("sys.list_runner_functions", json!(["jobs.l*", "doc.wheel"]))
            .await
            .ret;
        assert!(glob.as_array().unwrap().contains(&json!("jobs.lookup_jid")));
        assert!(glob.as_array().unwrap().contains(&json!("doc.wheel")));
        assert!(!glob.as_array().unwrap().contains(&json!("jobs.active")));
        // Garbage keyword arguments are taken, as Salt's **kwargs takes them.
        check(
            "sys.list_runner_functions",
            json!(["nosuchrunner"]),
            json!({"junk": 1}),
            json!([]),
            0,
        )
        .await;

        let docs = run("sys.runner_doc", json!([])).await.ret;
        assert_eq!(docs.as_object().unwrap().len(), names.len());
        let one = run("sys.runner_doc", json!(["jobs.lookup_jid"])).await.ret;
        let one = one.as_object().unwrap();
        assert_eq!(one.keys().collect::<Vec<_>>(), ["jobs.lookup_jid"]);
        assert!(one["jobs.lookup_jid"].as_str().unwrap().len() > 10);
        let module = run("sys.runner_doc", json!(["doc."])).await.ret;
        assert_eq!(
            module.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["doc.wheel"]
        );
    }
}
