//! `sys.list_state_functions`, `sys.list_state_modules` and `sys.state_doc` over the state
//! function table ([`crate::modules::MODULES`]), with Salt's selection rules
//! (`salt/modules/sysmod.py`): a bare name selects a module (`sys` not `sysctl`), a name with
//! `*` (or, for functions, a `.`) is a glob over `module.function`.

use std::collections::BTreeSet;

use saltq_exec::{Call, ExecError};
use saltq_semantics::python::{self, fnmatch};
use serde_json::{Map, Value};

use crate::modules::MODULES;

/// Every state function's name, sorted.
fn names() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = MODULES
        .iter()
        .flat_map(|m| m.iter())
        .map(|f| f.name)
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

fn module_of(fun: &str) -> &str {
    fun.split_once('.').map_or(fun, |(m, _)| m)
}

/// `sys.list_state_functions`.
pub fn list_functions(selectors: &[String]) -> Vec<String> {
    let all = names();
    if selectors.is_empty() {
        return all.into_iter().map(str::to_owned).collect();
    }
    let mut out = BTreeSet::new();
    for sel in selectors {
        for f in &all {
            let hit = if sel.contains('*') || sel.contains('.') {
                fnmatch(f, sel)
            } else {
                f.starts_with(&format!("{sel}."))
            };
            if hit {
                out.insert((*f).to_owned());
            }
        }
    }
    out.into_iter().collect()
}

/// `sys.list_state_modules`.
pub fn list_modules(selectors: &[String]) -> Vec<String> {
    let all = names();
    let mut out = BTreeSet::new();
    for f in &all {
        let module = module_of(f);
        let hit = selectors.is_empty()
            || selectors.iter().any(|sel| {
                if sel.contains('*') {
                    fnmatch(f, sel)
                } else {
                    module == sel
                }
            });
        if hit {
            out.insert(module.to_owned());
        }
    }
    out.into_iter().collect()
}

/// A state function's doc: its signature (saltq's state functions carry no prose).
fn function_doc(name: &str) -> String {
    let f = crate::modules::lookup(name);
    let params: Vec<String> = f
        .map(|f| {
            f.params
                .iter()
                .map(|p| match p.default {
                    Some(d) => format!("{}={}", p.name, python::repr(&d.to_value())),
                    None => p.name.to_owned(),
                })
                .chain(f.kwargs.then(|| "**kwargs".to_owned()))
                .collect()
        })
        .unwrap_or_default();
    format!("{name}({})", params.join(", "))
}

/// `sys.state_doc`.
pub fn state_doc(selectors: &[String]) -> Map<String, Value> {
    let all = names();
    let mut docs = Map::new();
    let mut add = |f: &str| {
        let module = module_of(f).to_owned();
        docs.entry(module.clone()).or_insert_with(|| {
            Value::String(format!(
                "The {module} state module, as saltq implements it."
            ))
        });
        docs.insert(f.to_owned(), Value::String(function_doc(f)));
    };
    for f in &all {
        let hit = selectors.is_empty()
            || selectors.iter().any(|sel| {
                if sel.contains('*') {
                    fnmatch(f, sel)
                } else if sel.is_empty() {
                    true
                } else {
                    let prefix = if sel.ends_with('.') {
                        sel.clone()
                    } else {
                        format!("{sel}.")
                    };
                    *f == sel || f.starts_with(&prefix)
                }
            });
        if hit {
            add(f);
        }
    }
    docs.sort_keys();
    docs
}

/// Answers one of the three functions for the execution-function table.
pub fn call(call: &Call) -> Result<Value, ExecError> {
    let selectors: Vec<String> = call.varargs().iter().map(python::str).collect();
    Ok(match call.fun {
        "sys.list_state_functions" => Value::from(list_functions(&selectors)),
        "sys.list_state_modules" => Value::from(list_modules(&selectors)),
        "sys.state_doc" => Value::Object(state_doc(&selectors)),
        other => {
            return Err(ExecError::execution(format!(
                "'{other}' is not a state system function"
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Salt 3007.8's answers (`salt-call --local sys.list_state_functions ...` on Debian 12,
    /// recorded by sys_states_record.sh) restricted to what saltq has: every saltq state
    /// function is one of Salt's, and the selections pick the same ones.
    #[test]
    fn selections_match_salt() {
        let rec: Value = serde_json::from_str(include_str!("sys_states_salt3007.json")).unwrap();
        let salt_all: BTreeSet<String> = rec["all"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        let ours = list_functions(&[]);
        assert!(ours.len() > 50, "{} state functions", ours.len());
        // Of the modules Salt loaded here (mysql_* needs a Python driver the recording's
        // venv lacks), every saltq function is one of Salt's.
        let salt_modules: BTreeSet<&str> = salt_all.iter().map(|f| module_of(f)).collect();
        let unknown: Vec<&String> = ours
            .iter()
            .filter(|f| salt_modules.contains(module_of(f)) && !salt_all.contains(*f))
            .collect();
        assert!(
            unknown.is_empty(),
            "not state functions in Salt 3007.8: {unknown:?}"
        );
        for case in rec["cases"].as_array().unwrap() {
            let sel: Vec<String> = case["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect();
            let mut got: Vec<String> = match case["fun"].as_str().unwrap() {
                "sys.list_state_functions" => list_functions(&sel),
                _ => list_modules(&sel),
            };
            got.retain(|n| salt_modules.contains(module_of(n)));
            let ours_set: BTreeSet<&str> = match case["fun"].as_str().unwrap() {
                "sys.list_state_functions" => ours.iter().map(String::as_str).collect(),
                _ => ours.iter().map(|f| module_of(f)).collect(),
            };
            let want: Vec<String> = case["ret"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .filter(|n| ours_set.contains(n.as_str()))
                .collect();
            assert_eq!(got, want, "{} {sel:?}", case["fun"]);
        }
        let doc = state_doc(&["test.succeed_without_changes".to_owned()]);
        assert_eq!(
            doc.keys().collect::<Vec<_>>(),
            ["test", "test.succeed_without_changes"]
        );
        assert!(
            doc["test.succeed_without_changes"]
                .as_str()
                .unwrap()
                .starts_with("test.succeed_without_changes(name"),
            "{doc:?}"
        );
    }
}
