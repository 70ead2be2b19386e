//! Salt's `kmod` state module (`salt/states/kmod.py`): `kmod.present` loads kernel modules
//! (and with `persist` keeps them in the modules file), `kmod.absent` removes them, through
//! `kmod.mod_list`, `kmod.available`, `kmod.load` and `kmod.remove`.
//!
//! Salt goes through Python sets, so with several modules its lists come in hash order; here
//! they follow the order of `mods`. On a host without `lsmod` the first `kmod.mod_list`
//! fails, as in Salt, and the state fails with that error.

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param};
use saltq_semantics::python;

use super::{Ret, StateCall, StateError, StateFunction, exec, state_handler};

const PRESENT_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("persist", Lit::Bool(false)),
    Param::opt("mods", Lit::None),
];

const ABSENT_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("persist", Lit::Bool(false)),
    Param::opt("comment", Lit::Bool(true)),
    Param::opt("mods", Lit::None),
];

/// The `kmod` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "kmod.present",
        params: PRESENT_PARAMS,
        kwargs: false,
        handler: state_handler!(present),
    },
    StateFunction {
        name: "kmod.absent",
        params: ABSENT_PARAMS,
        kwargs: false,
        handler: state_handler!(absent),
    },
];

/// Salt's `_append_comment`.
fn append(ret: &mut Ret, comment: &str) {
    if ret.comment.is_empty() {
        ret.comment = comment.to_owned();
    } else {
        ret.comment = format!("{}\n{comment}", ret.comment.trim_end());
    }
}

/// `mods` when a list, else `[name]`; duplicates dropped (Salt's sets).
fn wanted(call: &StateCall) -> Vec<String> {
    let mut mods: Vec<String> = match call.arg("mods") {
        Some(Value::Array(items)) => items.iter().map(python::str).collect(),
        _ => vec![call.name.clone()],
    };
    let mut seen = std::collections::HashSet::new();
    mods.retain(|m| seen.insert(m.clone()));
    mods
}

async fn names(call: &StateCall, only_persist: bool) -> Result<Vec<String>, StateError> {
    let args = if only_persist {
        vec![json!(true)]
    } else {
        vec![]
    };
    Ok(match exec(call, "kmod.mod_list", args, Map::new()).await? {
        Value::Array(items) => items.iter().map(python::str).collect(),
        _ => Vec::new(),
    })
}

/// `one` or `many` with the names joined, as Salt words its comments.
fn phrase(list: &[String], one: &str, many: &str) -> String {
    if list.len() == 1 {
        one.replace("{}", &list[0])
    } else {
        many.replace("{}", &list.join(", "))
    }
}

async fn present(call: StateCall) -> Result<Ret, StateError> {
    let mods = wanted(&call);
    let persist = python::truthy(&call.param(PRESENT_PARAMS, "persist"));
    let mut ret = Ret::new(&call.name);
    let mut loaded = names(&call, false).await?;
    if persist {
        let persisted = names(&call, true).await?;
        loaded.retain(|m| persisted.contains(m));
    }
    let already: Vec<String> = mods
        .iter()
        .filter(|m| loaded.contains(m))
        .cloned()
        .collect();
    if !already.is_empty() {
        append(
            &mut ret,
            &phrase(
                &already,
                "Kernel module {} is already present",
                "Kernel modules {} are already present",
            ),
        );
    }
    if already.len() == mods.len() {
        return Ok(ret);
    }
    let not_loaded: Vec<String> = mods
        .iter()
        .filter(|m| !already.contains(m))
        .cloned()
        .collect();
    if call.test {
        ret.result = None;
        if !ret.comment.is_empty() {
            ret.comment.push('\n');
        }
        append(
            &mut ret,
            &phrase(
                &not_loaded,
                "Kernel module {} is set to be loaded",
                "Kernel modules {} are set to be loaded",
            ),
        );
        return Ok(ret);
    }
    let available: Vec<String> = match exec(&call, "kmod.available", vec![], Map::new()).await? {
        Value::Array(items) => items.iter().map(python::str).collect(),
        _ => Vec::new(),
    };
    let unavailable: Vec<String> = not_loaded
        .iter()
        .filter(|m| !available.contains(m))
        .cloned()
        .collect();
    if !unavailable.is_empty() {
        append(
            &mut ret,
            &phrase(
                &unavailable,
                "Kernel module {} is unavailable",
                "Kernel modules {} are unavailable",
            ),
        );
        ret.result = Some(false);
    }
    let mut yes = Vec::new();
    let mut no = Vec::new();
    let mut failed = Vec::new();
    let mut by_dependency: Vec<String> = Vec::new();
    for m in not_loaded.iter().filter(|m| !unavailable.contains(m)) {
        if by_dependency.contains(m) {
            yes.push(m.clone());
            continue;
        }
        match exec(
            &call,
            "kmod.load",
            vec![json!(m), json!(persist)],
            Map::new(),
        )
        .await?
        {
            Value::Array(done) if !done.is_empty() => {
                for module in done.iter().map(python::str) {
                    ret.changes.insert(module.clone(), json!("loaded"));
                    if module != *m {
                        by_dependency.push(module);
                    }
                }
                yes.push(m.clone());
            }
            Value::Array(_) => {
                ret.result = Some(false);
                no.push(m.clone());
            }
            other => {
                ret.result = Some(false);
                failed.push((m.clone(), python::str(&other)));
            }
        }
    }
    if !yes.is_empty() {
        append(
            &mut ret,
            &phrase(&yes, "Loaded kernel module {}", "Loaded kernel modules {}"),
        );
    }
    if !no.is_empty() {
        append(
            &mut ret,
            &phrase(
                &no,
                "Failed to load kernel module {}",
                "Failed to load kernel modules {}",
            ),
        );
    }
    for (m, msg) in failed {
        append(
            &mut ret,
            &format!("Failed to load kernel module {m}: {msg}"),
        );
    }
    Ok(ret)
}

async fn absent(call: StateCall) -> Result<Ret, StateError> {
    let mods = wanted(&call);
    let persist = python::truthy(&call.param(ABSENT_PARAMS, "persist"));
    let comment = call.param(ABSENT_PARAMS, "comment");
    let mut ret = Ret::new(&call.name);
    let mut loaded = names(&call, false).await?;
    if persist {
        for m in names(&call, true).await? {
            if !loaded.contains(&m) {
                loaded.push(m);
            }
        }
    }
    let to_unload: Vec<String> = mods
        .iter()
        .filter(|m| loaded.contains(m))
        .cloned()
        .collect();
    if to_unload.is_empty() {
        ret.comment = phrase(
            &mods,
            "Kernel module {} is already removed",
            "Kernel modules {} are already removed",
        );
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        append(
            &mut ret,
            &phrase(
                &to_unload,
                "Kernel module {} is set to be removed",
                "Kernel modules {} are set to be removed",
            ),
        );
        return Ok(ret);
    }
    let mut yes = Vec::new();
    let mut no = Vec::new();
    let mut failed = Vec::new();
    for m in &to_unload {
        match exec(
            &call,
            "kmod.remove",
            vec![json!(m), json!(persist), comment.clone()],
            Map::new(),
        )
        .await?
        {
            Value::Array(done) if !done.is_empty() => {
                for module in done.iter().map(python::str) {
                    ret.changes.insert(module, json!("removed"));
                }
                yes.push(m.clone());
            }
            Value::Array(_) => {
                ret.result = Some(false);
                no.push(m.clone());
            }
            other => {
                ret.result = Some(false);
                failed.push((m.clone(), python::str(&other)));
            }
        }
    }
    if !yes.is_empty() {
        append(
            &mut ret,
            &phrase(
                &yes,
                "Removed kernel module {}",
                "Removed kernel modules {}",
            ),
        );
    }
    if !no.is_empty() {
        append(
            &mut ret,
            &phrase(
                &no,
                "Failed to remove kernel module {}",
                "Failed to remove kernel modules {}",
            ),
        );
    }
    for (m, msg) in failed {
        append(
            &mut ret,
            &format!("Failed to remove kernel module {m}: {msg}"),
        );
    }
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_like_salt() {
        let mut ret = Ret::new("x");
        append(&mut ret, "a");
        append(&mut ret, "b");
        assert_eq!(ret.comment, "a\nb");
        ret.comment.push('\n');
        append(&mut ret, "c");
        assert_eq!(ret.comment, "a\nb\nc");
        let two = ["a".to_owned(), "b".to_owned()];
        assert_eq!(phrase(&two[..1], "one {}", "many {}"), "one a");
        assert_eq!(phrase(&two, "one {}", "many {}"), "many a, b");
    }
}
