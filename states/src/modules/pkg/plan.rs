//! The pure decisions of `pkg.installed` and `pkg.latest`: what to install, reinstall or
//! upgrade, decided from the state's arguments and what the package manager answered, and
//! the result, comment and changes Salt gives; `pkg.rs` only asks and installs.

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, truthy};

use super::{Current, Holds, desired_pkg, fulfills, versions};

/// Packages as `(name, version or condition)`, in the order the state named them.
pub(super) type Wanted = Vec<(String, Option<String>)>;

/// A state's answer before it becomes a `Ret`: result, comment and changes.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Outcome {
    /// `True`, `False`, or `None` in test mode.
    pub result: Option<bool>,
    /// The comment Salt gives.
    pub comment: String,
    /// The changes Salt reports.
    pub changes: Map<String, Value>,
}

impl Outcome {
    fn new(result: Option<bool>, comment: impl Into<String>) -> Self {
        Self {
            result,
            comment: comment.into(),
            changes: Map::new(),
        }
    }
}

/// The knobs of `pkg.installed` that decide which packages need work.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct InstallOpts {
    /// `reinstall`: installed packages are installed again.
    pub reinstall: bool,
    /// The packages come from `sources` (files), not the repository.
    pub by_sources: bool,
    /// `ignore_epoch` as given.
    pub ignore_epoch: Option<bool>,
    /// `allow_updates`: `==` conditions accept newer versions.
    pub allow_updates: bool,
}

/// What `pkg.installed` must do (Salt's `_find_install_targets`).
#[derive(Debug, Default, PartialEq)]
pub(super) struct InstallPlan {
    /// Missing, or installed at a version that does not fulfil the wanted one.
    pub targets: Wanted,
    /// Installed, but `reinstall` asks for them again.
    pub to_reinstall: Wanted,
    /// Some installed package was checked against a version.
    pub version_spec: bool,
}

impl InstallPlan {
    /// Nothing to install nor reinstall.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty() && self.to_reinstall.is_empty()
    }

    fn is_target(&self, name: &str) -> bool {
        self.targets.iter().any(|(t, _)| t == name)
    }

    fn is_reinstall(&self, name: &str) -> bool {
        self.to_reinstall.iter().any(|(t, _)| t == name)
    }
}

/// The names whose version is `latest` (resolved before planning; never for `sources`).
pub(super) fn wants_latest(desired: &Wanted, by_sources: bool) -> Vec<String> {
    desired
        .iter()
        .filter(|(_, v)| !by_sources && v.as_deref() == Some("latest"))
        .map(|(n, _)| n.clone())
        .collect()
}

/// Puts `pkg.latest_version`'s answer in place of `latest`: the newest installed version
/// when the repository knows nothing newer.
pub(super) fn resolve_latest(
    desired: &mut Wanted,
    wants_latest: &[String],
    resolved: &Value,
    cur: &Current,
) {
    for name in wants_latest {
        let found = match resolved {
            Value::String(s) if wants_latest.len() == 1 => s.clone(),
            Value::Object(m) => m.get(name).map(python::str).unwrap_or_default(),
            _ => String::new(),
        };
        let version = if found.is_empty() {
            versions(cur, name).last().cloned()
        } else {
            Some(found)
        };
        if let Some(slot) = desired.iter_mut().find(|(n, _)| n == name) {
            slot.1 = version;
        }
    }
}

/// Which desired packages need installing or reinstalling, given the installed ones.
pub(super) fn plan_installed(desired: &Wanted, cur: &Current, opts: InstallOpts) -> InstallPlan {
    let mut plan = InstallPlan::default();
    for (name, version) in desired {
        let cver = versions(cur, name);
        if cver.is_empty() {
            plan.targets.push((name.clone(), version.clone()));
            continue;
        }
        if opts.reinstall {
            plan.to_reinstall.push((name.clone(), version.clone()));
            continue;
        }
        if opts.by_sources {
            // Salt reads the package file's version (`lowpkg.bin_pkg_info`) and
            // installs it when it differs; saltq takes an installed package as done.
            continue;
        }
        let Some(want) = version.as_deref().filter(|v| !v.is_empty()) else {
            continue;
        };
        plan.version_spec = true;
        if !fulfills(&cver, want, opts.ignore_epoch, opts.allow_updates) {
            plan.targets.push((name.clone(), version.clone()));
        }
    }
    plan
}

/// The comment when every package is installed already.
pub(super) fn all_installed_comment(plan: &InstallPlan, by_sources: bool) -> String {
    format!(
        "All specified packages are already installed{}",
        if plan.version_spec && !by_sources {
            " and are at the desired version"
        } else {
            ""
        }
    )
}

/// A package as Salt names it in comments: `name=version`, or the name for `sources`.
fn shown(name: &str, version: Option<&str>, by_sources: bool) -> String {
    if by_sources {
        name.to_owned()
    } else {
        desired_pkg(name, version)
    }
}

/// The test-mode answer; `installable` is Salt's `_get_installable_versions` for the
/// targets (asked only when not installing from `sources`).
pub(super) fn installed_test(
    plan: &InstallPlan,
    by_sources: bool,
    installable: Map<String, Value>,
) -> Outcome {
    let mut comment: Vec<String> = Vec::new();
    let mut changes = Map::new();
    if !plan.targets.is_empty() {
        if by_sources {
            for (n, _) in &plan.targets {
                changes.insert(n.clone(), json!({"new": "installed", "old": ""}));
            }
        } else {
            changes.extend(installable);
        }
        let summary = plan
            .targets
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        comment.push(format!(
            "The following packages would be installed/updated: {summary}"
        ));
    }
    if !plan.to_reinstall.is_empty() {
        let names: Vec<String> = plan
            .to_reinstall
            .iter()
            .map(|(n, v)| shown(n, v.as_deref(), by_sources))
            .collect();
        for n in &names {
            changes.insert(n.clone(), json!({"new": "installed", "old": ""}));
        }
        comment.push(format!(
            "The following packages would be reinstalled: {}",
            names.join(", ")
        ));
    }
    Outcome {
        result: None,
        comment: comment.join("\n"),
        changes,
    }
}

/// `pkg.install`'s `pkgs` and `sources` arguments: the targets, then the reinstalls.
pub(super) fn install_args(plan: &InstallPlan, by_sources: bool) -> (Value, Value) {
    let pkgs: Vec<Value> = plan
        .targets
        .iter()
        .chain(&plan.to_reinstall)
        .map(|(n, v)| json!({n.clone(): v}))
        .collect();
    if by_sources {
        (Value::Null, Value::Array(pkgs))
    } else {
        (Value::Array(pkgs), Value::Null)
    }
}

/// What happened to the desired packages once installed (Salt's `modified`,
/// `not_modified` and `failed`).
struct Sorted<'a> {
    modified: Vec<&'a (String, Option<String>)>,
    not_modified: Vec<&'a (String, Option<String>)>,
    failed: Vec<&'a (String, Option<String>)>,
}

/// Sorts the desired packages by whether they are installed now (`new`) and were targets.
/// With `sources` the changes decide (Salt's `modified = [x for x in changes if x in
/// targets]`); else the packages installed now.
fn sort_installed<'a>(
    desired: &'a Wanted,
    plan: &InstallPlan,
    changes: &Map<String, Value>,
    new: &Current,
    opts: InstallOpts,
) -> Sorted<'a> {
    let ok = |name: &str, version: Option<&str>| {
        if opts.by_sources {
            return changes.contains_key(name) || !plan.is_target(name);
        }
        let cver = versions(new, name);
        !cver.is_empty()
            && version
                .filter(|v| !v.is_empty())
                .is_none_or(|v| fulfills(&cver, v, opts.ignore_epoch, false))
    };
    let pick = |keep: &dyn Fn(bool, &str) -> bool| {
        desired
            .iter()
            .filter(|(n, v)| keep(ok(n, v.as_deref()), n))
            .collect::<Vec<_>>()
    };
    Sorted {
        modified: pick(&|ok, n| ok && plan.is_target(n)),
        not_modified: pick(&|ok, n| ok && !plan.is_target(n) && !plan.is_reinstall(n)),
        failed: pick(&|ok, n| !ok && plan.is_target(n)),
    }
}

/// `n targeted package(s) was/were`.
fn counted(n: usize) -> String {
    format!(
        "{n} targeted package{} {}",
        if n > 1 { "s" } else { "" },
        if n > 1 { "were" } else { "was" }
    )
}

/// Folds a `pkg.hold` answer's changes into the install's (`new`/`old` joined by lines).
fn merge_hold_changes(changes: &mut Map<String, Value>, hold: &Value) {
    let name = python::str(&hold["name"]);
    let text = |v: &Value| v.as_str().map_or_else(|| python::str(v), str::to_owned);
    let (hold_new, hold_old) = (text(&hold["changes"]["new"]), text(&hold["changes"]["old"]));
    match changes.get_mut(&name).and_then(Value::as_object_mut) {
        Some(entry) => {
            for (key, add) in [("new", &hold_new), ("old", &hold_old)] {
                let mut cur = entry.get(key).map(text).unwrap_or_default();
                if !cur.is_empty() {
                    cur.push('\n');
                }
                cur.push_str(add);
                entry.insert(key.into(), json!(cur));
            }
        }
        None => {
            changes.insert(name, json!({ "new": hold_new }));
        }
    }
}

/// The answer after `pkg.install` (and `pkg.hold`): `comment` holds what the install said,
/// `changes` its changes, `new` the packages installed now.
pub(super) fn installed_report(
    desired: &Wanted,
    plan: &InstallPlan,
    opts: InstallOpts,
    mut comment: Vec<String>,
    mut changes: Map<String, Value>,
    holds: &Holds,
    new: &Current,
) -> Outcome {
    let by_sources = opts.by_sources;
    let sorted = sort_installed(desired, plan, &changes, new, opts);
    let show = |list: &[&(String, Option<String>)]| {
        list.iter()
            .map(|(n, v)| shown(n, v.as_deref(), by_sources))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !sorted.modified.is_empty() {
        let summary = show(&sorted.modified);
        if summary.len() < 20 {
            comment.push(format!(
                "The following packages were installed/updated: {summary}"
            ));
        } else {
            comment.push(format!(
                "{} installed/updated.",
                counted(sorted.modified.len())
            ));
        }
    }
    for h in &holds.modified {
        comment.push(python::str(&h["comment"]));
        merge_hold_changes(&mut changes, h);
    }
    if !sorted.not_modified.is_empty() {
        let n = sorted.not_modified.len();
        if n <= 20 {
            comment.push(format!(
                "The following packages were already installed: {}",
                show(&sorted.not_modified)
            ));
        } else {
            comment.push(format!("{} already installed", counted(n)));
        }
    }
    for h in &holds.not_modified {
        comment.push(python::str(&h["comment"]));
    }
    let mut result = true;
    if !sorted.failed.is_empty() {
        comment.insert(
            0,
            format!(
                "The following packages failed to install/update: {}",
                show(&sorted.failed)
            ),
        );
        result = false;
    }
    for h in &holds.failed {
        comment.push(python::str(&h["comment"]));
        result = false;
    }
    for (n, v) in &plan.to_reinstall {
        let pkgstr = shown(n, v.as_deref(), by_sources);
        if changes.contains_key(n) {
            comment.push(format!("Package {pkgstr} was reinstalled."));
        } else {
            comment.push(format!(
                "Reinstall was not successful for package {pkgstr}."
            ));
            result = false;
        }
    }
    Outcome {
        result: Some(result),
        comment: comment.join("\n"),
        changes,
    }
}

/// `pkg.latest`'s packages from `pkgs` (names only) or the state's name; `Err` is the
/// state's answer when `pkgs` is empty or unreadable.
pub(super) fn latest_desired(pkgs: Option<&Value>, name: &str) -> Result<Vec<String>, Outcome> {
    match pkgs {
        Some(p) if truthy(p) => {
            let names: Vec<String> = super::repack(p).into_iter().map(|(n, _)| n).collect();
            if names.is_empty() {
                return Err(Outcome::new(
                    Some(false),
                    "Invalidly formatted \"pkgs\" parameter. See minion log.",
                ));
            }
            Ok(names)
        }
        Some(Value::Array(_)) => Err(Outcome::new(Some(true), "No packages to install provided")),
        _ => Ok(vec![name.to_owned()]),
    }
}

/// A `pkg.latest_version`/`pkg.version` answer as `{name: version}` (a single package's
/// answer is the bare version).
pub(super) fn by_name(v: Value, first: &str) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => {
            let mut m = Map::new();
            m.insert(first.to_owned(), other);
            m
        }
    }
}

/// What `pkg.latest` must upgrade.
#[derive(Debug, Default, PartialEq)]
pub(super) struct LatestPlan {
    /// `(name, newest available version)` for each package with a newer version.
    pub targets: Vec<(String, String)>,
    /// The targets' names, sorted.
    pub target_names: Vec<String>,
    /// Packages named in `pkgs` that are already at the newest version, sorted.
    pub up_to_date: Vec<String>,
    /// The installed versions (`pkg.version`'s answer).
    pub cur: Map<String, Value>,
}

/// A version from an answer, when there is one.
fn version_in(m: &Map<String, Value>, k: &str) -> Option<String> {
    m.get(k).filter(|v| truthy(v)).map(python::str)
}

/// Which packages have a newer version (`avail`, from `pkg.latest_version`) than the
/// installed one (`cur`); `Err` is the state's answer when there is nothing to do or a
/// package is unknown. `pkgs_given` says the packages came from `pkgs`.
pub(super) fn plan_latest(
    desired: &[String],
    avail: Map<String, Value>,
    cur: Map<String, Value>,
    pkgs_given: bool,
) -> Result<LatestPlan, Outcome> {
    let mut targets: Vec<(String, String)> = Vec::new();
    let mut problems = Vec::new();
    for pkg in desired {
        match version_in(&avail, pkg) {
            Some(v) => targets.push((pkg.clone(), v)),
            None if version_in(&cur, pkg).is_none() => {
                problems.push(format!("No information found for '{pkg}'."));
            }
            None => {}
        }
    }
    if !problems.is_empty() {
        return Err(Outcome::new(Some(false), problems.join(" ")));
    }
    if targets.is_empty() {
        return Err(Outcome::new(Some(true), all_up_to_date(desired)));
    }
    let is_target = |n: &str| targets.iter().any(|(t, _)| t == n);
    let mut up_to_date: Vec<String> = if pkgs_given {
        desired.iter().filter(|n| !is_target(n)).cloned().collect()
    } else {
        Vec::new()
    };
    up_to_date.sort();
    let mut target_names: Vec<String> = targets.iter().map(|(n, _)| n.clone()).collect();
    target_names.sort();
    Ok(LatestPlan {
        targets,
        target_names,
        up_to_date,
        cur,
    })
}

/// The comment when no package has a newer version.
fn all_up_to_date(desired: &[String]) -> String {
    if desired.len() > 10 {
        format!("All {} packages are up-to-date.", desired.len())
    } else if desired.len() > 1 {
        let mut sorted = desired.to_vec();
        sorted.sort();
        format!("All packages are up-to-date ({}).", sorted.join(", "))
    } else {
        format!("Package {} is already up-to-date", desired[0])
    }
}

/// `pkg.latest`'s test-mode answer: the upgrades it would make, with the versions from
/// the repository (Salt looks each `name=version` up in `pkg.list_repo_pkgs`).
pub(super) fn latest_test(plan: &LatestPlan) -> Outcome {
    let mut comments = vec![format!(
        "The following packages would be installed/upgraded: {}",
        plan.target_names.join(", ")
    )];
    let up_to_date = &plan.up_to_date;
    if !up_to_date.is_empty() {
        if up_to_date.len() <= 10 {
            let shown: Vec<String> = up_to_date
                .iter()
                .map(|x| format!("{x} ({})", version_in(&plan.cur, x).unwrap_or_default()))
                .collect();
            comments.push(format!(
                "The following packages are already up-to-date: {}",
                shown.join(", ")
            ));
        } else {
            comments.push(format!(
                "{} packages are already up-to-date",
                up_to_date.len()
            ));
        }
    }
    let mut out = Outcome::new(None, comments.join("\n"));
    for (n, v) in &plan.targets {
        let old = plan.cur.get(n).cloned().unwrap_or_else(|| json!(""));
        out.changes.insert(n.clone(), json!({"new": v, "old": old}));
    }
    out
}

/// `pkg.latest`'s answer after `pkg.install` reported `changes`.
pub(super) fn latest_report(plan: &LatestPlan, changes: Map<String, Value>) -> Outcome {
    if changes.is_empty() {
        return Outcome::new(Some(false), nothing_updated(plan));
    }
    let mut failed: Vec<String> =
        plan.targets
            .iter()
            .filter(|(n, v)| match changes.get(n.as_str()) {
                None => true,
                Some(c) if !truthy(c) => true,
                Some(c) => c.get("new").filter(|n| !n.is_null()).is_some_and(|new| {
                    !python::str(new).split(',').any(|x| x == v) && v != "latest"
                }),
            })
            .map(|(n, _)| n.clone())
            .collect();
    failed.sort();
    let successful: Vec<&str> = plan
        .target_names
        .iter()
        .filter(|n| !failed.contains(n))
        .map(String::as_str)
        .collect();
    let mut comments = Vec::new();
    if !failed.is_empty() {
        comments.push(format!(
            "The following packages failed to update: {}",
            failed.join(", ")
        ));
    }
    if !successful.is_empty() {
        comments.push(format!(
            "The following packages were successfully installed/upgraded: {}",
            successful.join(", ")
        ));
    }
    let up_to_date = &plan.up_to_date;
    if !up_to_date.is_empty() {
        if up_to_date.len() <= 10 {
            comments.push(format!(
                "The following packages were already up-to-date: {}",
                up_to_date.join(", ")
            ));
        } else {
            comments.push(format!(
                "{} packages were already up-to-date ",
                up_to_date.len()
            ));
        }
    }
    Outcome {
        result: Some(failed.is_empty()),
        comment: comments.join(" "),
        changes,
    }
}

/// The comment when `pkg.install` changed nothing.
fn nothing_updated(plan: &LatestPlan) -> String {
    let targets = &plan.targets;
    let mut comment = if targets.len() > 10 {
        format!(
            "{} targeted packages failed to update. See debug log for details.",
            targets.len()
        )
    } else if targets.len() > 1 {
        format!(
            "The following targeted packages failed to update. See debug log for details: ({}).",
            plan.target_names.join(", ")
        )
    } else {
        format!("Package {} failed to update.", targets[0].0)
    };
    let up_to_date = &plan.up_to_date;
    if !up_to_date.is_empty() {
        if up_to_date.len() <= 10 {
            comment.push_str(&format!(
                " The following packages were already up-to-date: {}",
                up_to_date.join(", ")
            ));
        } else {
            comment.push_str(&format!(
                "{} packages were already up-to-date",
                up_to_date.len()
            ));
        }
    }
    comment
}

#[cfg(test)]
mod tests;
