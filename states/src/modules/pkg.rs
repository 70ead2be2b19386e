//! Salt's `pkg` state module (`salt/states/pkg.py`): `pkg.installed`, `pkg.latest`,
//! `pkg.removed`, `pkg.purged`, `pkg.held`, `pkg.unheld`, `pkg.uptodate` and `pkg.mod_watch`,
//! over the execution functions `pkg.*` (apt or dnf), with Salt's comments and
//! `{name: {old, new}}` changes.
//!
//! Supported arguments: `name`, `version` (an exact version, a glob, or conditions such as
//! `>=1.2,<2` compared in Debian's version order), `pkgs` (names or `{name: version}`,
//! `version: latest`), `sources` (`[{name: salt:// or absolute path}]`), `hold` (held or
//! released after installing, as Salt reports it), `refresh` (also Salt's
//! `<cachedir>/pkg_refresh` flag), `fromrepo`, `skip_verify`, `reinstall`, `ignore_epoch`,
//! `allow_updates`; `held`'s `replace` and `unheld`'s `all`. Not done: `update_holds`,
//! `pkg_verify`, `resolve_capabilities`, `skip_suggestions` (Salt's suggestion check needs
//! `pkg.check_db`, which apt lacks), reading a `sources` file's version (an installed
//! package counts as done), Windows and FreeBSD special cases, `pkg.downloaded`,
//! `pkg.group_installed`.

use std::cmp::Ordering;
use std::path::Path;

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param, compare_debian_versions, pack_sources};
use saltq_semantics::python::{self, fnmatch, truthy};

use super::service::{Backend, Exec};
use super::{Ret, StateCall, StateError, StateFunction, state_handler};

mod plan;

const INSTALLED_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("version", Lit::None),
    Param::opt("refresh", Lit::None),
    Param::opt("fromrepo", Lit::None),
    Param::opt("skip_verify", Lit::Bool(false)),
    Param::opt("skip_suggestions", Lit::Bool(false)),
    Param::opt("pkgs", Lit::None),
    Param::opt("sources", Lit::None),
    Param::opt("allow_updates", Lit::Bool(false)),
    Param::opt("pkg_verify", Lit::Bool(false)),
    Param::opt("normalize", Lit::Bool(true)),
    Param::opt("ignore_epoch", Lit::None),
    Param::opt("reinstall", Lit::Bool(false)),
    Param::opt("update_holds", Lit::Bool(false)),
];

const REMOVED_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("version", Lit::None),
    Param::opt("pkgs", Lit::None),
    Param::opt("normalize", Lit::Bool(true)),
    Param::opt("ignore_epoch", Lit::None),
];

const LATEST_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("refresh", Lit::None),
    Param::opt("fromrepo", Lit::None),
    Param::opt("skip_verify", Lit::Bool(false)),
    Param::opt("pkgs", Lit::None),
    Param::opt("watch_flags", Lit::Bool(true)),
];

const HOLD_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("version", Lit::None),
    Param::opt("pkgs", Lit::None),
    Param::opt("replace", Lit::Bool(false)),
];

const UNHOLD_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("version", Lit::None),
    Param::opt("pkgs", Lit::None),
    Param::opt("all", Lit::Bool(false)),
];

/// The `pkg` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "pkg.installed",
        params: INSTALLED_PARAMS,
        kwargs: true,
        handler: state_handler!(entry_installed),
    },
    StateFunction {
        name: "pkg.latest",
        params: LATEST_PARAMS,
        kwargs: true,
        handler: state_handler!(entry_latest),
    },
    StateFunction {
        name: "pkg.removed",
        params: REMOVED_PARAMS,
        kwargs: true,
        handler: state_handler!(entry_removed),
    },
    StateFunction {
        name: "pkg.purged",
        params: REMOVED_PARAMS,
        kwargs: true,
        handler: state_handler!(entry_purged),
    },
    StateFunction {
        name: "pkg.held",
        params: HOLD_PARAMS,
        kwargs: true,
        handler: state_handler!(entry_held),
    },
    StateFunction {
        name: "pkg.unheld",
        params: UNHOLD_PARAMS,
        kwargs: true,
        handler: state_handler!(entry_unheld),
    },
    StateFunction {
        name: "pkg.uptodate",
        params: &[
            Param::req("name"),
            Param::opt("refresh", Lit::Bool(false)),
            Param::opt("pkgs", Lit::None),
        ],
        kwargs: true,
        handler: state_handler!(entry_uptodate),
    },
    StateFunction {
        name: "pkg.mod_watch",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(entry_mod_watch),
    },
];

async fn entry_installed(call: StateCall) -> Result<Ret, StateError> {
    run_with(&Exec(call.ctx.clone()), "pkg.installed", &call).await
}

async fn entry_latest(call: StateCall) -> Result<Ret, StateError> {
    run_with(&Exec(call.ctx.clone()), "pkg.latest", &call).await
}

async fn entry_removed(call: StateCall) -> Result<Ret, StateError> {
    run_with(&Exec(call.ctx.clone()), "pkg.removed", &call).await
}

async fn entry_purged(call: StateCall) -> Result<Ret, StateError> {
    run_with(&Exec(call.ctx.clone()), "pkg.purged", &call).await
}

async fn entry_held(call: StateCall) -> Result<Ret, StateError> {
    run_with(&Exec(call.ctx.clone()), "pkg.held", &call).await
}

async fn entry_unheld(call: StateCall) -> Result<Ret, StateError> {
    run_with(&Exec(call.ctx.clone()), "pkg.unheld", &call).await
}

async fn entry_uptodate(call: StateCall) -> Result<Ret, StateError> {
    run_with(&Exec(call.ctx.clone()), "pkg.uptodate", &call).await
}

async fn entry_mod_watch(call: StateCall) -> Result<Ret, StateError> {
    run_with(&Exec(call.ctx.clone()), "pkg.mod_watch", &call).await
}

/// Runs the state function `fun` (`pkg.installed`, ...) against this backend.
pub async fn run_with(b: &dyn Backend, fun: &str, call: &StateCall) -> Result<Ret, StateError> {
    let p = Pkg { b, call };
    Ok(match fun {
        "pkg.installed" => p.installed().await,
        "pkg.latest" => p.latest().await,
        "pkg.removed" => p.uninstall("remove").await,
        "pkg.purged" => p.uninstall("purge").await,
        "pkg.held" => p.held().await,
        "pkg.unheld" => p.unheld().await,
        "pkg.uptodate" => p.uptodate().await,
        "pkg.mod_watch" => {
            let sfun = call.arg("sfun").map(python::str).unwrap_or_default();
            match sfun.as_str() {
                "installed" => p.installed().await,
                "latest" => p.latest().await,
                "removed" => p.uninstall("remove").await,
                "purged" => p.uninstall("purge").await,
                other => {
                    let mut ret = Ret::new(call.name.clone());
                    ret.result = Some(false);
                    ret.comment = format!("pkg.{other} does not work with the watch requisite");
                    ret
                }
            }
        }
        other => return Err(StateError(format!("no state function {other}"))),
    })
}

/// Installed packages: name to versions.
type Current = Map<String, Value>;

/// The versions of `name` in a `list_pkgs(versions_as_list=True)` answer.
fn versions(cur: &Current, name: &str) -> Vec<String> {
    match cur.get(name) {
        Some(Value::Array(v)) => v.iter().map(python::str).collect(),
        Some(Value::String(s)) => s.split(',').map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// Salt's `_repack_pkgs`: `pkgs` as `{name: version or None}`, in order.
fn repack(pkgs: &Value) -> Vec<(String, Option<String>)> {
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    let mut put = |name: String, ver: Option<String>| {
        if let Some(slot) = out.iter_mut().find(|(n, _)| *n == name) {
            slot.1 = ver;
        } else {
            out.push((name, ver));
        }
    };
    for item in pkgs.as_array().into_iter().flatten() {
        match item {
            Value::Object(m) => {
                for (k, v) in m {
                    let ver = (!v.is_null()).then(|| python::str(v));
                    put(k.clone(), ver);
                }
            }
            other => put(python::str(other), None),
        }
    }
    out
}

/// Salt's `_get_comparison_spec` for one condition: the operator (`==` by default) and the
/// version.
fn comparison_spec(cond: &str) -> (String, String) {
    let cond = cond.trim();
    let end = cond
        .find(|c: char| !matches!(c, '<' | '>' | '=' | '!'))
        .unwrap_or(cond.len());
    let (op, ver) = cond.split_at(end);
    let op = match op {
        "" | "=" => "==",
        other => other,
    };
    (op.to_owned(), ver.trim().to_owned())
}

fn strip_epoch(v: &str) -> &str {
    v.split_once(':').map_or(v, |(_, rest)| rest)
}

/// Salt's `_fulfills_version_spec` for one installed version.
fn fulfills_spec(installed: &str, op: &str, want: &str, ignore_epoch: Option<bool>) -> bool {
    if op == "==" && fnmatch(installed, want) {
        return true;
    }
    let ignore = ignore_epoch.unwrap_or(op == "==" && !want.contains(':'));
    let (a, b) = if ignore {
        (strip_epoch(installed), strip_epoch(want))
    } else {
        (installed, want)
    };
    let ord = compare_debian_versions(a, b);
    match op {
        "==" => ord == Ordering::Equal,
        "!=" => ord != Ordering::Equal,
        ">=" => ord != Ordering::Less,
        "<=" => ord != Ordering::Greater,
        ">" => ord == Ordering::Greater,
        "<" => ord == Ordering::Less,
        _ => false,
    }
}

/// Salt's `_fulfills_version_string`: some installed version meets every condition.
fn fulfills(
    installed: &[String],
    conditions: &str,
    ignore_epoch: Option<bool>,
    allow_updates: bool,
) -> bool {
    let conds: Vec<(String, String)> = conditions.split(',').map(comparison_spec).collect();
    installed.iter().any(|v| {
        conds.iter().all(|(op, want)| {
            let op = if allow_updates && conds.len() == 1 && op == "==" {
                ">="
            } else {
                op.as_str()
            };
            fulfills_spec(v, op, want, ignore_epoch)
        })
    })
}

/// Salt's `_get_desired_pkg`: `name=version`, or `name>=version` for a condition.
fn desired_pkg(name: &str, version: Option<&str>) -> String {
    match version {
        None | Some("") => name.to_owned(),
        Some(v) if v.starts_with(['<', '>', '=']) => format!("{name}{v}"),
        Some(v) => format!("{name}={v}"),
    }
}

/// Salt's `CommandExecutionError` from `pkg.install`/`remove`: its text without the changes
/// part (`strerror_without_changes`) and the changes it carried.
fn split_error(msg: &str) -> (String, Map<String, Value>) {
    let Some((head, rest)) = msg.split_once("\n\nchanges:\n    ") else {
        return (msg.to_owned(), Map::new());
    };
    let Some((changes, errors)) = rest.split_once("\nerrors:\n    - ") else {
        return (msg.to_owned(), Map::new());
    };
    let changes = serde_json::from_str::<Value>(changes)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let errors = errors.lines().collect::<Vec<_>>().join("\n      ");
    (format!("{head}\n\nerrors:\n    - {errors}"), changes)
}

/// What `pkg.hold`/`pkg.unhold` answered, split as Salt's `installed` splits it.
#[derive(Debug, Default)]
struct Holds {
    /// Entries with changes.
    modified: Vec<Value>,
    /// Entries without changes whose result is true.
    not_modified: Vec<Value>,
    /// Entries whose result is false or `None`.
    failed: Vec<Value>,
}

impl Holds {
    fn split(answer: &Value) -> Self {
        let mut h = Self::default();
        for entry in answer.as_object().into_iter().flat_map(|m| m.values()) {
            let changed = entry.get("changes").is_some_and(truthy);
            let ok = entry.get("result").is_some_and(truthy);
            if changed {
                h.modified.push(entry.clone());
            }
            if !changed && ok {
                h.not_modified.push(entry.clone());
            }
            if !ok {
                h.failed.push(entry.clone());
            }
        }
        h
    }
}

struct Pkg<'a> {
    b: &'a dyn Backend,
    call: &'a StateCall,
}

impl Pkg<'_> {
    fn name(&self) -> String {
        self.call.name.clone()
    }

    fn ret(&self, result: Option<bool>, comment: impl Into<String>) -> Ret {
        Ret {
            name: self.name(),
            result,
            comment: comment.into(),
            ..Ret::default()
        }
    }

    fn flag(&self, key: &str) -> bool {
        self.call.arg(key).is_some_and(truthy)
    }

    fn ignore_epoch(&self) -> Option<bool> {
        self.call.arg("ignore_epoch").map(truthy)
    }

    /// Salt's `salt.utils.pkg.check_refresh`: asked for, or flagged by
    /// `<cachedir>/pkg_refresh` unless `refresh: False`.
    fn refresh(&self) -> bool {
        match self.call.arg("refresh") {
            Some(v) if truthy(v) => true,
            Some(Value::Bool(false)) => false,
            _ => self
                .call
                .ctx
                .opt("cachedir")
                .and_then(Value::as_str)
                .is_some_and(|d| Path::new(d).join("pkg_refresh").is_file()),
        }
    }

    /// `hold` as the state got it (Salt acts when the key is given at all).
    fn hold_arg(&self) -> Option<bool> {
        self.call.args.get("hold").map(truthy)
    }

    /// Calls `pkg.hold` (or `pkg.unhold`) for `pkgs`, in test mode when the state is.
    async fn hold_call(&self, hold: bool, pkgs: Value) -> Result<Holds, String> {
        let fun = if hold { "pkg.hold" } else { "pkg.unhold" };
        let mut kw = Map::new();
        kw.insert("name".into(), json!(self.name()));
        kw.insert("pkgs".into(), pkgs);
        if self.call.test {
            kw.insert("test".into(), json!(true));
        }
        let answer = self.b.call(fun, vec![], kw).await?;
        Ok(Holds::split(&answer))
    }

    /// Salt's hold step when every package is installed already: each hold answer's
    /// comment appended after `.\n`, its result taken, its changes reported.
    async fn hold_installed(
        &self,
        ret: &mut Ret,
        hold: bool,
        desired: &[(String, Option<String>)],
    ) {
        let pkgs: Vec<Value> =
            if self.call.arg("sources").is_some() || self.call.arg("pkgs").is_some() {
                desired.iter().map(|(n, _)| json!(n)).collect()
            } else {
                match self.call.arg("version") {
                    Some(v) if truthy(v) => vec![json!({ self.name(): python::str(v) })],
                    _ => vec![json!(self.name())],
                }
            };
        let holds = match self.hold_call(hold, Value::Array(pkgs)).await {
            Ok(h) => h,
            Err(e) => {
                *ret = self.ret(Some(false), e);
                return;
            }
        };
        let result = |e: &Value| match e.get("result") {
            Some(Value::Bool(b)) => Some(*b),
            Some(Value::Null) | None => None,
            Some(other) => Some(truthy(other)),
        };
        for e in &holds.modified {
            ret.comment = format!("{}.\n{}", ret.comment, python::str(&e["comment"]));
            ret.result = result(e);
            ret.changes
                .insert(python::str(&e["name"]), e["changes"].clone());
        }
        for e in holds.not_modified.iter().chain(&holds.failed) {
            ret.comment = format!("{}.\n{}", ret.comment, python::str(&e["comment"]));
            ret.result = result(e);
        }
    }

    /// Salt's held packages: `{name: {}}` from dpkg's selections (apt) or dnf's versionlock
    /// list (`{name: {version}}`).
    async fn locks(&self) -> Result<Vec<(String, Option<String>)>, String> {
        let redhat = self
            .call
            .ctx
            .grains()
            .get("os_family")
            .and_then(Value::as_str)
            == Some("RedHat");
        if redhat && self.b.has("pkg.list_holds") {
            let mut kw = Map::new();
            kw.insert("full".into(), json!(true));
            let list = self.b.call("pkg.list_holds", vec![], kw).await?;
            let re = regex::Regex::new(r"^(.+)-(\d+):(.*)\.\*").map_err(|e| e.to_string())?;
            return Ok(list
                .as_array()
                .into_iter()
                .flatten()
                .map(|l| {
                    let l = python::str(l);
                    match re.captures(&l) {
                        Some(c) => {
                            let epoch = if &c[2] == "0" {
                                String::new()
                            } else {
                                format!("{}:", &c[2])
                            };
                            (c[1].to_owned(), Some(format!("{epoch}{}", &c[3])))
                        }
                        None => (l, None),
                    }
                })
                .collect());
        }
        if self.b.has("pkg.get_selections") {
            let mut kw = Map::new();
            kw.insert("state".into(), json!("hold"));
            let sel = self.b.call("pkg.get_selections", vec![], kw).await?;
            return Ok(sel
                .get("hold")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|n| (python::str(n), None))
                .collect());
        }
        Err("No any function to get the list of held packages available.\nCheck if the package manager supports package locking.".into())
    }

    /// `pkgs`, or `name` (with `version`) packed as a one-entry `pkgs`.
    fn hold_pkgs(&self, version_always: bool) -> Vec<(String, Option<String>)> {
        match self.call.arg("pkgs") {
            Some(p) => repack(p),
            None => {
                let v = self
                    .call
                    .arg("version")
                    .filter(|v| truthy(v))
                    .map(python::str);
                if v.is_some() || version_always {
                    vec![(self.name(), v)]
                } else {
                    vec![(self.name(), None)]
                }
            }
        }
    }

    /// Salt's `pkg.held`.
    async fn held(&self) -> Ret {
        let replace = self.flag("replace");
        if self
            .call
            .arg("pkgs")
            .is_some_and(|p| p.as_array().is_some_and(Vec::is_empty))
            && !replace
        {
            return self.ret(Some(true), "No packages to be held provided");
        }
        let pkgs = self.hold_pkgs(false);
        let locks = match self.locks().await {
            Ok(l) => l,
            Err(e) => return self.ret(Some(false), e),
        };
        if !self.b.has("pkg.hold") {
            return self.ret(
                Some(false),
                "`hold` function is not implemented for the package manager.",
            );
        }
        let mut ret = self.ret(Some(true), "");
        let mut comments = Vec::new();
        let is_locked = |n: &str| locks.iter().any(|(l, _)| l == n);
        for (name, ver) in &pkgs {
            if is_locked(name) {
                continue;
            }
            let shown_ver = ver
                .as_ref()
                .map(|v| format!(" (version = {v})"))
                .unwrap_or_default();
            if self.call.test {
                comments.push(format!(
                    "The following package would be held: {name}{shown_ver}"
                ));
                continue;
            }
            let pkg = match ver {
                Some(v) => json!({ name.clone(): v }),
                None => json!(name),
            };
            let mut kw = Map::new();
            kw.insert("name".into(), json!(self.name()));
            kw.insert("pkgs".into(), json!([pkg]));
            let answer = match self.b.call("pkg.hold", vec![], kw).await {
                Ok(a) => a,
                Err(e) => return self.ret(Some(false), e),
            };
            let ok = answer
                .get(name)
                .and_then(|e| e.get("result"))
                .is_some_and(truthy);
            if !ok {
                ret.result = Some(false);
            }
            comments.push(if ok {
                format!("Package {name} is now being held")
            } else {
                format!("Package {name} was not held")
            });
            if let Value::Object(m) = answer {
                ret.changes.extend(m);
            }
        }
        if replace {
            let held: Vec<&String> = pkgs.iter().map(|(n, _)| n).collect();
            for (lock, _) in &locks {
                if held.contains(&lock) {
                    continue;
                }
                if self.call.test {
                    comments.push(format!("The following package would be unheld: {lock}"));
                } else {
                    self.unhold_one(lock, &mut ret, &mut comments).await;
                }
            }
        }
        ret.comment = comments.join("\n");
        if ret.changes.is_empty() && ret.comment.is_empty() {
            ret.comment = "No changes made".into();
        }
        ret
    }

    async fn unhold_one(&self, pkg: &str, ret: &mut Ret, comments: &mut Vec<String>) {
        let mut kw = Map::new();
        kw.insert("name".into(), json!(self.name()));
        kw.insert("pkgs".into(), json!([pkg]));
        let answer = match self.b.call("pkg.unhold", vec![], kw).await {
            Ok(a) => a,
            Err(e) => {
                ret.result = Some(false);
                comments.push(e);
                return;
            }
        };
        let entry = answer.get(pkg);
        if !entry.and_then(|e| e.get("result")).is_some_and(truthy) {
            ret.result = Some(false);
        }
        if let Some(c) = entry.and_then(|e| e.get("comment")).filter(|c| truthy(c)) {
            comments.push(python::str(c));
        }
        if let Value::Object(m) = answer {
            ret.changes.extend(m);
        }
    }

    /// Salt's `pkg.unheld`.
    async fn unheld(&self) -> Ret {
        let all = self.flag("all");
        if self
            .call
            .arg("pkgs")
            .is_some_and(|p| p.as_array().is_some_and(Vec::is_empty))
            && !all
        {
            return self.ret(Some(true), "No packages to be unheld provided");
        }
        let wanted = self.hold_pkgs(true);
        let locks = match self.locks().await {
            Ok(l) => l,
            Err(e) => return self.ret(Some(false), e),
        };
        let mut ret = self.ret(Some(true), "");
        let mut comments = Vec::new();
        for (lock, _lock_ver) in &locks {
            // Salt compares a lock's version only for zypper's locks (`vr_lock`).
            let Some(want) = wanted.iter().find(|(n, _)| n == lock).map(|(_, v)| v) else {
                if all {
                    self.unheld_lock(lock, None, &mut ret, &mut comments).await;
                }
                continue;
            };
            self.unheld_lock(lock, want.as_deref(), &mut ret, &mut comments)
                .await;
        }
        ret.comment = comments.join("\n");
        if ret.changes.is_empty() && ret.comment.is_empty() {
            ret.comment = "No changes made".into();
        }
        ret
    }

    async fn unheld_lock(
        &self,
        lock: &str,
        wanted_version: Option<&str>,
        ret: &mut Ret,
        comments: &mut Vec<String>,
    ) {
        if self.call.test {
            // Salt prints the lock's version, which only zypper's locks have: `None` here.
            let shown = if wanted_version.is_some() {
                " (version = None)"
            } else {
                ""
            };
            comments.push(format!(
                "The following package would be unheld: {lock}{shown}"
            ));
        } else {
            self.unhold_one(lock, ret, comments).await;
        }
    }

    /// Salt's `pkg.uptodate`.
    async fn uptodate(&self) -> Ret {
        let mut ret = self.ret(Some(false), "Failed to update");
        if !self.b.has("pkg.list_upgrades") {
            ret.comment = "State pkg.uptodate is not available".into();
            return ret;
        }
        let refresh = match self.call.args.get("refresh") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                ret.comment = "refresh must be either True or False".into();
                return ret;
            }
        };
        let pkgs: Option<Vec<String>> = self
            .call
            .arg("pkgs")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(python::str).collect());
        let passed: Map<String, Value> = self
            .call
            .args
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "refresh" | "pkgs"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut kw = passed.clone();
        kw.insert("refresh".into(), json!(refresh));
        let packages = match self.b.call("pkg.list_upgrades", vec![], kw).await {
            Ok(Value::Object(m)) => m,
            Ok(_) => Map::new(),
            Err(e) => {
                ret.comment = e;
                return ret;
            }
        };
        let mut expected = Map::new();
        for (name, ver) in &packages {
            let old = match self
                .b
                .call("pkg.version", vec![json!(name)], Map::new())
                .await
            {
                Ok(v) => v,
                Err(e) => {
                    ret.comment = e;
                    return ret;
                }
            };
            expected.insert(name.clone(), json!({"new": ver, "old": old}));
        }
        let mut wanted: Vec<String> = packages.keys().cloned().collect();
        if let Some(list) = &pkgs {
            wanted.retain(|p| list.contains(p));
            expected.retain(|k, _| list.contains(k));
        }
        if wanted.is_empty() {
            ret.comment = "System is already up-to-date".into();
            ret.result = Some(true);
            return ret;
        }
        if self.call.test {
            ret.comment = "System update will be performed".into();
            ret.changes = expected;
            ret.result = None;
            return ret;
        }
        let mut kw = passed;
        kw.insert("refresh".into(), json!(refresh));
        kw.insert(
            "pkgs".into(),
            self.call.arg("pkgs").cloned().unwrap_or(Value::Null),
        );
        match self.b.call("pkg.upgrade", vec![], kw).await {
            Ok(v) => ret.changes = v.as_object().cloned().unwrap_or_default(),
            Err(e) => {
                let (text, carried) = split_error(&e);
                if text == e && carried.is_empty() {
                    ret.comment = format!("An error was encountered while updating packages: {e}");
                } else {
                    ret.comment = text;
                    ret.changes = carried;
                }
                return ret;
            }
        }
        let missing: Vec<&String> = if pkgs.is_some() {
            expected
                .keys()
                .filter(|k| !ret.changes.contains_key(*k))
                .collect()
        } else {
            Vec::new()
        };
        if missing.is_empty() {
            ret.comment = "Upgrade ran successfully".into();
            ret.result = Some(true);
        } else {
            let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
            ret.comment = format!(
                "The following package(s) failed to update: {}",
                names.join(", ")
            );
            ret.result = Some(false);
        }
        ret
    }

    async fn list_pkgs(&self, extra: &[(&str, Value)]) -> Result<Current, String> {
        let mut kw = Map::new();
        kw.insert("versions_as_list".into(), json!(true));
        for (k, v) in extra {
            kw.insert((*k).to_owned(), v.clone());
        }
        let v = self.b.call("pkg.list_pkgs", vec![], kw).await?;
        Ok(v.as_object().cloned().unwrap_or_default())
    }

    /// What `pkgs`/`name`+`version` ask for.
    fn desired(&self) -> Option<Vec<(String, Option<String>)>> {
        match self.call.arg("pkgs") {
            Some(pkgs) => Some(repack(pkgs)).filter(|d| !d.is_empty()),
            None => {
                let version = self.call.arg("version").map(python::str);
                Some(vec![(self.name(), version)])
            }
        }
    }

    async fn installed(&self) -> Ret {
        if self
            .call
            .arg("pkgs")
            .is_some_and(|p| p.as_array().is_some_and(Vec::is_empty))
        {
            return self.ret(Some(true), "No packages to install provided");
        }
        let sources = self.call.arg("sources").filter(|v| truthy(v)).cloned();
        if sources.is_some() && self.call.arg("pkgs").is_some_and(truthy) {
            return self.ret(
                Some(false),
                "Only one of \"pkgs\" and \"sources\" is permitted.",
            );
        }
        let mut refresh = self.refresh();
        let opts = plan::InstallOpts {
            reinstall: self.flag("reinstall"),
            by_sources: sources.is_some(),
            ignore_epoch: self.ignore_epoch(),
            allow_updates: self.flag("allow_updates"),
        };
        let cur = match self.list_pkgs(&[]).await {
            Ok(c) => c,
            Err(e) => return self.ret(Some(false), e),
        };
        let Some(mut desired) = self.desired_or_sources(sources.as_ref()) else {
            return self.ret(
                Some(false),
                format!(
                    "Invalidly formatted '{}' parameter. See minion log.",
                    if opts.by_sources { "sources" } else { "pkgs" }
                ),
            );
        };
        let purge_desired = self
            .list_pkgs(&[("purge_desired", json!(true))])
            .await
            .unwrap_or_default();
        let unpurge = desired.iter().any(|(n, _)| purge_desired.contains_key(n));
        let wants_latest = plan::wants_latest(&desired, opts.by_sources);
        if !wants_latest.is_empty() {
            let mut kw = Map::new();
            kw.insert("refresh".into(), json!(refresh));
            let args = wants_latest.iter().map(|n| json!(n)).collect();
            let resolved = match self.b.call("pkg.latest_version", args, kw).await {
                Ok(v) => v,
                Err(e) => return self.ret(Some(false), e),
            };
            refresh = false;
            plan::resolve_latest(&mut desired, &wants_latest, &resolved, &cur);
        }
        let plan = plan::plan_installed(&desired, &cur, opts);
        if plan.is_empty() && !unpurge {
            let mut ret = self.ret(
                Some(true),
                plan::all_installed_comment(&plan, opts.by_sources),
            );
            if let Some(hold) = self.hold_arg() {
                self.hold_installed(&mut ret, hold, &desired).await;
            }
            return ret;
        }
        if unpurge {
            return self.ret(Some(false), "lowpkg.unpurge not implemented");
        }
        if self.call.test {
            let installable = if plan.targets.is_empty() || opts.by_sources {
                Map::new()
            } else {
                self.installable_versions(&plan.targets).await
            };
            return self.outcome(plan::installed_test(&plan, opts.by_sources, installable));
        }
        self.install(&desired, &plan, opts, refresh).await
    }

    /// `sources` (packed as `{name: source}`) or `pkgs`/`name`; `None` when unreadable.
    fn desired_or_sources(&self, sources: Option<&Value>) -> Option<plan::Wanted> {
        match sources.map(pack_sources) {
            Some(Some(p)) => Some(
                p.iter()
                    .map(|(n, src)| (n.clone(), Some(src.clone())))
                    .collect(),
            ),
            Some(None) => None,
            None => self.desired(),
        }
    }

    /// A pure answer as this state's `Ret`.
    fn outcome(&self, out: plan::Outcome) -> Ret {
        let mut ret = self.ret(out.result, out.comment);
        ret.changes = out.changes;
        ret
    }

    /// `pkg.installed`'s apply: `pkg.install`, the hold, then the report over the packages
    /// installed now.
    async fn install(
        &self,
        desired: &plan::Wanted,
        plan: &plan::InstallPlan,
        opts: plan::InstallOpts,
        refresh: bool,
    ) -> Ret {
        let (pkgs, sources) = plan::install_args(plan, opts.by_sources);
        let mut kw = Map::new();
        kw.insert("name".into(), Value::Null);
        kw.insert("refresh".into(), json!(refresh));
        kw.insert(
            "fromrepo".into(),
            self.call.arg("fromrepo").cloned().unwrap_or(Value::Null),
        );
        kw.insert("skip_verify".into(), json!(self.flag("skip_verify")));
        kw.insert("pkgs".into(), pkgs);
        kw.insert("sources".into(), sources);
        kw.insert("saltenv".into(), json!(self.call.saltenv));
        kw.insert("reinstall".into(), json!(!plan.to_reinstall.is_empty()));
        if let Some(e) = self.call.arg("ignore_epoch") {
            kw.insert("ignore_epoch".into(), e.clone());
        }
        let pkg_ret = match self.b.call("pkg.install", vec![], kw).await {
            Ok(v) => v,
            Err(e) => {
                let (text, carried) = split_error(&e);
                if text == e && carried.is_empty() {
                    return self.ret(
                        Some(false),
                        format!("An error was encountered while installing package(s): {e}"),
                    );
                }
                let mut ret = self.ret(Some(false), text);
                ret.changes = carried;
                return ret;
            }
        };
        let mut comment: Vec<String> = Vec::new();
        let mut changes = Map::new();
        match pkg_ret {
            Value::Object(m) => changes.extend(m),
            Value::String(s) => comment.push(s),
            _ => {}
        }
        let mut holds = Holds::default();
        if let Some(hold) = self.hold_arg() {
            let names: Vec<Value> = desired.iter().map(|(n, _)| json!(n)).collect();
            match self.hold_call(hold, Value::Array(names)).await {
                Ok(h) => holds = h,
                Err(e) => {
                    comment.push(e);
                    let mut ret = self.ret(Some(false), comment.join("\n"));
                    ret.changes = changes;
                    return ret;
                }
            }
        }
        let new = self.list_pkgs(&[]).await.unwrap_or_default();
        self.outcome(plan::installed_report(
            desired, plan, opts, comment, changes, &holds, &new,
        ))
    }

    /// Salt's `_get_installable_versions` (test mode): the newest version for targets
    /// without a version, else `installed`.
    async fn installable_versions(
        &self,
        targets: &[(String, Option<String>)],
    ) -> Map<String, Value> {
        let latest: Vec<&String> = targets
            .iter()
            .filter(|(_, v)| v.as_deref().is_none_or(str::is_empty))
            .map(|(n, _)| n)
            .collect();
        let mut found: Map<String, Value> = Map::new();
        if !latest.is_empty() {
            let args = latest.iter().map(|n| json!(n)).collect();
            match self.b.call("pkg.latest_version", args, Map::new()).await {
                Ok(Value::String(s)) if latest.len() == 1 => {
                    found.insert(latest[0].clone(), json!(s));
                }
                Ok(Value::Object(m)) => found = m,
                _ => {}
            }
        }
        targets
            .iter()
            .map(|(n, _)| {
                let new = found
                    .get(n)
                    .filter(|v| truthy(v))
                    .cloned()
                    .unwrap_or_else(|| json!("installed"));
                (n.clone(), json!({"new": new, "old": ""}))
            })
            .collect()
    }

    async fn latest(&self) -> Ret {
        if self.call.args.get("sources").is_some_and(truthy) {
            return self.ret(Some(false), "The \"sources\" parameter is not supported.");
        }
        let refresh = self.refresh();
        let pkgs = self.call.arg("pkgs");
        let desired = match plan::latest_desired(pkgs, &self.name()) {
            Ok(d) => d,
            Err(out) => return self.outcome(out),
        };
        let args: Vec<Value> = desired.iter().map(|n| json!(n)).collect();
        let mut kw = Map::new();
        kw.insert(
            "fromrepo".into(),
            self.call.arg("fromrepo").cloned().unwrap_or(Value::Null),
        );
        kw.insert("refresh".into(), json!(refresh));
        let avail = match self.b.call("pkg.latest_version", args.clone(), kw).await {
            Ok(v) => v,
            Err(e) => {
                return self.ret(
                    Some(false),
                    format!("An error was encountered while checking the newest available version of package(s): {e}"),
                );
            }
        };
        let cur = match self.b.call("pkg.version", args, Map::new()).await {
            Ok(v) => v,
            Err(e) => return self.ret(Some(false), e),
        };
        let plan = match plan::plan_latest(
            &desired,
            plan::by_name(avail, &desired[0]),
            plan::by_name(cur, &desired[0]),
            pkgs.is_some(),
        ) {
            Ok(p) => p,
            Err(out) => return self.outcome(out),
        };
        if self.call.test {
            return self.outcome(plan::latest_test(&plan));
        }
        let mut kw = Map::new();
        kw.insert("name".into(), Value::Null);
        kw.insert("refresh".into(), json!(false));
        kw.insert(
            "fromrepo".into(),
            self.call.arg("fromrepo").cloned().unwrap_or(Value::Null),
        );
        kw.insert("skip_verify".into(), json!(self.flag("skip_verify")));
        kw.insert(
            "pkgs".into(),
            Value::Array(plan.targets.iter().map(|(n, _)| json!(n)).collect()),
        );
        let changes = match self.b.call("pkg.install", vec![], kw).await {
            Ok(Value::Object(m)) => m,
            Ok(_) => Map::new(),
            Err(e) => {
                return self.ret(
                    Some(false),
                    format!("An error was encountered while installing package(s): {e}"),
                );
            }
        };
        self.outcome(plan::latest_report(&plan, changes))
    }

    /// Salt's `_uninstall` for `remove` and `purge`.
    async fn uninstall(&self, action: &str) -> Ret {
        let ignore_epoch = self.ignore_epoch();
        let params: Vec<(String, Option<String>)> = match self.call.arg("pkgs") {
            Some(p) => repack(p),
            None => vec![(self.name(), self.call.arg("version").map(python::str))],
        };
        let cur = match self.list_pkgs(&[]).await {
            Ok(c) => c,
            Err(e) => return self.failed(action, e),
        };
        // Salt's `_find_remove_targets`.
        let mut targets: Vec<String> = Vec::new();
        let mut version_spec = false;
        if self.call.arg("pkgs").is_some() && params.is_empty() {
            if action == "remove" {
                return self.ret(
                    Some(false),
                    "Invalidly formatted pkgs parameter. See minion log.",
                );
            }
        } else {
            for (name, version) in &params {
                let cver = versions(&cur, name);
                if cver.is_empty() {
                    continue;
                }
                match version.as_deref().filter(|v| !v.is_empty()) {
                    None => targets.push(name.clone()),
                    Some(v) => {
                        version_spec = true;
                        if fulfills(&cver, v, ignore_epoch, false) {
                            targets.push(name.clone());
                        }
                    }
                }
            }
            if targets.is_empty() && action == "remove" {
                return self.ret(
                    Some(true),
                    format!(
                        "All specified packages{} are already absent",
                        if version_spec {
                            " (matching specified versions)"
                        } else {
                            ""
                        }
                    ),
                );
            }
        }
        if action == "purge" {
            let removed = match self.list_pkgs(&[("removed", json!(true))]).await {
                Ok(c) => c,
                Err(e) => return self.failed(action, e),
            };
            targets.extend(
                params
                    .iter()
                    .filter(|(n, _)| removed.contains_key(n))
                    .map(|(n, _)| n.clone()),
            );
        }
        targets.sort();
        if targets.is_empty() {
            return self.ret(
                Some(true),
                format!(
                    "None of the targeted packages are installed{}",
                    if action == "purge" {
                        " or partially installed"
                    } else {
                        ""
                    }
                ),
            );
        }
        if self.call.test {
            let mut ret = self.ret(
                None,
                format!(
                    "The following packages will be {action}d: {}.",
                    targets.join(", ")
                ),
            );
            for t in &targets {
                ret.changes
                    .insert(t.clone(), json!({"new": format!("{action}d"), "old": ""}));
            }
            return ret;
        }
        let mut kw = Map::new();
        kw.insert(
            "pkgs".into(),
            self.call.arg("pkgs").cloned().unwrap_or(Value::Null),
        );
        let changes = match self
            .b
            .call(&format!("pkg.{action}"), vec![json!(self.name())], kw)
            .await
        {
            Ok(v) => v.as_object().cloned().unwrap_or_default(),
            Err(e) => return self.failed(action, e),
        };
        let new = self.list_pkgs(&[]).await.unwrap_or_default();
        let mut failed: Vec<String> = params
            .iter()
            .filter(|(n, _)| new.contains_key(n))
            .map(|(n, _)| n.clone())
            .collect();
        if action == "purge" {
            let removed = self
                .list_pkgs(&[("removed", json!(true))])
                .await
                .unwrap_or_default();
            failed.extend(
                params
                    .iter()
                    .filter(|(n, _)| removed.contains_key(n))
                    .map(|(n, _)| n.clone()),
            );
        }
        failed.sort();
        if !failed.is_empty() {
            let mut ret = self.ret(
                Some(false),
                format!(
                    "The following packages failed to {action}: {}.",
                    failed.join(", ")
                ),
            );
            ret.changes = changes;
            return ret;
        }
        let mut not_installed: Vec<&String> = params
            .iter()
            .map(|(n, _)| n)
            .filter(|n| !targets.contains(n))
            .collect();
        not_installed.sort();
        let comment = if not_installed.is_empty() {
            format!("All targeted packages were {action}d.")
        } else {
            let names: Vec<&str> = not_installed.iter().map(|s| s.as_str()).collect();
            format!(
                "The following packages were not installed: {} The following packages were {action}d: {}.",
                names.join(", "),
                targets.join(", ")
            )
        };
        let mut ret = self.ret(Some(true), comment);
        ret.changes = changes;
        ret
    }

    /// A `CommandExecutionError` from removing, as `removed`/`purged` report it.
    fn failed(&self, action: &str, e: String) -> Ret {
        let (text, carried) = split_error(&e);
        let mut ret = if text != e || !carried.is_empty() {
            self.ret(Some(false), text)
        } else {
            let verb = if action == "purge" {
                "purging"
            } else {
                "removing"
            };
            self.ret(
                Some(false),
                format!("An error was encountered while {verb} package(s): {e}"),
            )
        };
        ret.changes = carried;
        ret
    }
}
