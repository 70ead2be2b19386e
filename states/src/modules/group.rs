//! Salt's `group` state module (`salt/states/group.py`): `group.present` (gid, `members`,
//! `addusers`, `delusers`, `system`, `non_unique`) and `group.absent`, through the execution
//! functions `group.*`, with Salt's comments and changes. What must change is decided by
//! [`plan`], a pure function of the group as `group.info` gives it.

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param};
use saltq_semantics::python::{self, truthy};

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

const PRESENT: &[Param] = &[
    Param::req("name"),
    Param::opt("gid", Lit::None),
    Param::opt("system", Lit::Bool(false)),
    Param::opt("addusers", Lit::None),
    Param::opt("delusers", Lit::None),
    Param::opt("members", Lit::None),
    Param::opt("non_unique", Lit::Bool(false)),
    Param::opt("local", Lit::Bool(false)),
];

const ABSENT: &[Param] = &[Param::req("name"), Param::opt("local", Lit::Bool(false))];

/// The `group` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "group.present",
        params: PRESENT,
        kwargs: false,
        handler: state_handler!(present),
    },
    StateFunction {
        name: "group.absent",
        params: ABSENT,
        kwargs: false,
        handler: state_handler!(absent),
    },
];

/// What the state asks of the group's membership.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Wanted {
    /// `gid`, as given.
    pub gid: Value,
    /// `addusers`, `None` when not given.
    pub addusers: Option<Vec<String>>,
    /// `delusers`, `None` when not given.
    pub delusers: Option<Vec<String>>,
    /// `members`, `None` when not given.
    pub members: Option<Vec<String>>,
}

/// One change Salt's `_changes` finds: its key, its value, and how the comment shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// `gid`, `members`, `addusers`, `delusers` (or `result`/`comment` for a bad gid).
    pub key: String,
    /// The value the change is made with.
    pub value: Value,
    /// Python's `str` of the value in the comment (a `set` for `members: []`).
    pub shown: String,
}

/// Salt's `_changes` over the group's current info: the changes needed, in Salt's order.
pub fn plan(info: &Value, want: &Wanted) -> Vec<Change> {
    let current: Vec<String> = info["members"]
        .as_array()
        .map(|m| m.iter().map(python::str).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    let push = |out: &mut Vec<Change>, key: &str, value: Value| {
        out.push(Change {
            key: key.into(),
            shown: python::str(&value),
            value,
        });
    };
    if truthy(&want.gid) {
        match python_int(&want.gid) {
            Some(gid) => {
                if info["gid"] != json!(gid) {
                    push(&mut out, "gid", json!(gid));
                }
            }
            None => {
                push(&mut out, "result", json!(false));
                push(&mut out, "comment", json!("Invalid gid"));
                return out;
            }
        }
    }
    let differs = |wanted: &[String]| {
        let a: std::collections::BTreeSet<&String> = current.iter().collect();
        let b: std::collections::BTreeSet<&String> = wanted.iter().collect();
        a != b
    };
    match &want.members {
        Some(m) if m.is_empty() && differs(m) => {
            // A Python set: its repr is `{'a', 'b'}` (Salt's order is the hash order).
            let mut set = current.clone();
            set.sort();
            set.dedup();
            let shown = format!(
                "{{{}}}",
                set.iter()
                    .map(|u| python::repr(&json!(u)))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            out.push(Change {
                key: "delusers".into(),
                value: json!(set),
                shown,
            });
        }
        Some(m) if !m.is_empty() && differs(m) => push(&mut out, "members", json!(m)),
        _ => {}
    }
    if let Some(add) = want.addusers.as_ref().filter(|a| !a.is_empty()) {
        let to_add: Vec<&String> = add.iter().filter(|u| !current.contains(u)).collect();
        if !to_add.is_empty() {
            push(&mut out, "addusers", json!(to_add));
        }
    }
    if let Some(del) = want.delusers.as_ref().filter(|d| !d.is_empty()) {
        let to_del: Vec<&String> = del.iter().filter(|u| current.contains(u)).collect();
        if !to_del.is_empty() {
            push(&mut out, "delusers", json!(to_del));
        }
    }
    out
}

/// Python's `int(v)` for a gid: an integer, or a string of one.
fn python_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f.trunc() as i64)),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A list argument (`addusers`, ...): `None` when not given.
fn names(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::Null => None,
        Value::Array(items) => Some(items.iter().map(python::str).collect()),
        other => Some(vec![python::str(other)]),
    }
}

/// `{"root": "/"}` with `local`, as Salt's `_get_root_args`.
fn root_args(local: bool) -> Map<String, Value> {
    let mut m = Map::new();
    if local {
        m.insert("root".into(), json!("/"));
    }
    m
}

fn changes_map(changes: &[Change]) -> Value {
    Value::Object(
        changes
            .iter()
            .map(|c| (c.key.clone(), c.value.clone()))
            .collect(),
    )
}

async fn current(call: &StateCall, name: &str, local: bool) -> Result<Value, StateError> {
    call.salt("group.info", vec![json!(name)], root_args(local))
        .await
}

fn exists(info: &Value) -> bool {
    info.as_object().is_some_and(|m| !m.is_empty())
}

async fn present(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let p = |k: &str| call.param(PRESENT, k);
    let local = truthy(&p("local"));
    let non_unique = p("non_unique");
    let want = Wanted {
        gid: p("gid"),
        addusers: names(&p("addusers")),
        delusers: names(&p("delusers")),
        members: names(&p("members")),
    };
    let mut ret = Ret::new(&name);
    ret.comment = format!("Group {name} is present and up to date");
    if want.members.is_some() && (want.addusers.is_some() || want.delusers.is_some()) {
        ret.result = None;
        ret.comment = "Error: Conflicting options \"members\" with \"addusers\" and/or \"delusers\" can not be used together. ".into();
        return Ok(ret);
    }
    if let (Some(add), Some(del)) = (&want.addusers, &want.delusers)
        && !add.is_empty()
        && !del.is_empty()
        && add.iter().any(|u| del.contains(u))
    {
        ret.result = None;
        ret.comment = "Error. Same user(s) can not be added and deleted simultaneously".into();
        return Ok(ret);
    }
    let info = current(&call, &name, local).await?;
    if exists(&info) {
        let changes = plan(&info, &want);
        if changes.is_empty() {
            return Ok(ret);
        }
        ret.comment = "The following group attributes are set to be changed:\n".into();
        for c in &changes {
            ret.comment.push_str(&format!("{}: {}\n", c.key, c.shown));
        }
        if call.test {
            ret.result = None;
            return Ok(ret);
        }
        for c in &changes {
            match c.key.as_str() {
                "gid" => {
                    let mut kw = Map::new();
                    kw.insert("non_unique".into(), non_unique.clone());
                    call.salt("group.chgid", vec![json!(name), want.gid.clone()], kw)
                        .await?;
                }
                "addusers" | "delusers" => {
                    let fun = if c.key == "addusers" {
                        "group.adduser"
                    } else {
                        "group.deluser"
                    };
                    for user in c.value.as_array().into_iter().flatten() {
                        call.salt(fun, vec![json!(name), user.clone()], Map::new())
                            .await?;
                    }
                }
                "members" => {
                    let list = want.members.clone().unwrap_or_default().join(",");
                    call.salt("group.members", vec![json!(name), json!(list)], Map::new())
                        .await?;
                }
                _ => {}
            }
        }
        let after = plan(&current(&call, &name, local).await?, &want);
        if after.is_empty() {
            ret.changes
                .insert("Final".into(), json!("All changes applied successfully"));
        } else {
            ret.result = Some(false);
            ret.comment.push_str("Some changes could not be applied");
            ret.changes.insert("Failed".into(), changes_map(&after));
        }
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        ret.comment = format!("Group {name} set to be added");
        return Ok(ret);
    }
    if !want.gid.is_null() && !truthy(&non_unique) {
        let all = call.salt("group.getent", vec![], Map::new()).await?;
        if let Some(taken) = all
            .as_array()
            .into_iter()
            .flatten()
            .find(|g| g["gid"] == want.gid)
        {
            ret.result = Some(false);
            ret.comment = format!(
                "Group {name} is not present but gid {} is already taken by group {}",
                python::str(&want.gid),
                python::str(&taken["name"])
            );
            return Ok(ret);
        }
    }
    let mut kw = Map::new();
    kw.insert("gid".into(), want.gid.clone());
    kw.insert("system".into(), p("system"));
    kw.insert("non_unique".into(), non_unique.clone());
    kw.insert("local".into(), json!(local));
    if !truthy(&call.salt("group.add", vec![json!(name)], kw).await?) {
        ret.result = Some(false);
        ret.comment = format!("Failed to create new group {name}");
        return Ok(ret);
    }
    let mut members = want
        .members
        .as_ref()
        .filter(|m| !m.is_empty())
        .map(|m| m.join(","));
    if let Some(add) = want.addusers.as_ref().filter(|a| !a.is_empty()) {
        members = Some(add.join(","));
    }
    if let Some(list) = members.filter(|l| !l.is_empty()) {
        call.salt("group.members", vec![json!(name), json!(list)], Map::new())
            .await?;
    }
    ret.comment = format!("New group {name} created");
    let info = current(&call, &name, local).await?;
    if let Value::Object(m) = &info {
        ret.changes = m.clone();
    }
    let after = plan(&info, &want);
    if !after.is_empty() {
        ret.result = Some(false);
        ret.comment =
            format!("Group {name} has been created but, some changes could not be applied");
        ret.changes = Map::new();
        ret.changes.insert("Failed".into(), changes_map(&after));
    }
    Ok(ret)
}

async fn absent(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let local = truthy(&call.param(ABSENT, "local"));
    let mut ret = Ret::new(&name);
    if !exists(&current(&call, &name, local).await?) {
        ret.comment = "Group not present".into();
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        ret.comment = format!("Group {name} is set for removal");
        return Ok(ret);
    }
    let mut kw = Map::new();
    kw.insert("local".into(), json!(local));
    if truthy(&call.salt("group.delete", vec![json!(name)], kw).await?) {
        ret.changes.insert(name.clone(), json!(""));
        ret.comment = format!("Removed group {name}");
    } else {
        ret.result = Some(false);
        ret.comment = format!("Failed to remove group {name}");
    }
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want(members: Option<&[&str]>, add: Option<&[&str]>, del: Option<&[&str]>) -> Wanted {
        let v = |l: Option<&[&str]>| l.map(|l| l.iter().map(|s| (*s).to_owned()).collect());
        Wanted {
            gid: Value::Null,
            addusers: v(add),
            delusers: v(del),
            members: v(members),
        }
    }

    #[test]
    fn changes_as_salts_changes() {
        let info = json!({"name": "g", "gid": 5000, "members": ["a", "b"]});
        let keys = |c: Vec<Change>| -> Vec<(String, String)> {
            c.into_iter().map(|c| (c.key, c.shown)).collect()
        };
        assert!(plan(&info, &want(Some(&["b", "a"]), None, None)).is_empty());
        assert_eq!(
            keys(plan(&info, &want(Some(&["a"]), None, None))),
            [("members".to_owned(), "['a']".to_owned())]
        );
        assert_eq!(
            keys(plan(&info, &want(Some(&[]), None, None))),
            [("delusers".to_owned(), "{'a', 'b'}".to_owned())]
        );
        assert_eq!(
            keys(plan(
                &info,
                &want(None, Some(&["a", "c"]), Some(&["b", "z"]))
            )),
            [
                ("addusers".to_owned(), "['c']".to_owned()),
                ("delusers".to_owned(), "['b']".to_owned())
            ]
        );
        let mut w = want(None, None, None);
        w.gid = json!("5001");
        assert_eq!(
            keys(plan(&info, &w)),
            [("gid".to_owned(), "5001".to_owned())]
        );
        w.gid = json!("abc");
        assert_eq!(
            keys(plan(&info, &w)),
            [
                ("result".to_owned(), "False".to_owned()),
                ("comment".to_owned(), "Invalid gid".to_owned())
            ]
        );
    }
}
