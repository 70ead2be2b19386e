//! `file.directory` and `file.recurse`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use saltq_exec::{Lit, Param};
use serde_json::{Map, Value, json};

use super::{
    Ret, StateCall, bool_arg, check_perms, check_user, dirname, error, makedirs, name_of,
    normalize_mode, py_str, same_owner, stat_meta, str_arg,
};
use crate::modules::StateError;

const fn opt(name: &'static str) -> Param {
    Param::opt(name, Lit::None)
}

/// `file.directory`'s parameters.
pub(super) const DIRECTORY_PARAMS: &[Param] = &[
    Param::req("name"),
    opt("user"),
    opt("group"),
    opt("recurse"),
    opt("max_depth"),
    opt("dir_mode"),
    opt("file_mode"),
    Param::opt("makedirs", Lit::Bool(false)),
    Param::opt("clean", Lit::Bool(false)),
    opt("require"),
    opt("exclude_pat"),
    Param::opt("follow_symlinks", Lit::Bool(false)),
    Param::opt("force", Lit::Bool(false)),
    opt("backupname"),
    Param::opt("allow_symlink", Lit::Bool(true)),
    Param::opt("children_only", Lit::Bool(false)),
];

/// `file.recurse`'s parameters.
pub(super) const RECURSE_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::req("source"),
    Param::opt("keep_source", Lit::Bool(true)),
    Param::opt("clean", Lit::Bool(false)),
    opt("require"),
    opt("user"),
    opt("group"),
    opt("dir_mode"),
    opt("file_mode"),
    opt("sym_mode"),
    opt("template"),
    opt("context"),
    Param::opt("replace", Lit::Bool(true)),
    opt("defaults"),
    Param::opt("include_empty", Lit::Bool(false)),
    Param::opt("backup", Lit::Str("")),
    opt("include_pat"),
    opt("exclude_pat"),
    opt("maxdepth"),
    Param::opt("keep_symlinks", Lit::Bool(false)),
    Param::opt("force_symlinks", Lit::Bool(false)),
];

const RECURSE_TYPES: &[&str] = &[
    "user",
    "group",
    "mode",
    "ignore_files",
    "ignore_dirs",
    "silent",
];

/// Salt's `_get_recurse_set`.
fn recurse_set(v: Option<&Value>) -> Result<BTreeSet<String>, String> {
    let Some(v) = v.filter(|v| saltq_semantics::python::truthy(v)) else {
        return Ok(BTreeSet::new());
    };
    let Value::Array(items) = v else {
        return Err("\"recurse\" must be formed as a list of strings".into());
    };
    let set: BTreeSet<String> = items.iter().map(py_str).collect();
    if !set.iter().all(|s| RECURSE_TYPES.contains(&s.as_str())) {
        return Err(format!(
            "Types for \"recurse\" limited to {}.",
            RECURSE_TYPES
                .iter()
                .map(|t| format!("\"{t}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if set.contains("ignore_files") && set.contains("ignore_dirs") {
        return Err(
            "Must not specify \"recurse\" options \"ignore_files\" and \"ignore_dirs\" at the same time."
                .into(),
        );
    }
    Ok(set)
}

/// `os.walk(top)` top-down as (root, dirs, files), entries sorted by name, not following
/// symlinked directories.
fn walk(top: &str, max_depth: Option<usize>) -> Vec<(String, Vec<String>, Vec<String>)> {
    let mut out = Vec::new();
    let mut stack = vec![(top.to_owned(), 0usize)];
    while let Some((root, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&root) else {
            continue;
        };
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            let p = e.path();
            if p.is_dir() {
                dirs.push(n);
            } else {
                files.push(n);
            }
        }
        dirs.sort();
        files.sort();
        if max_depth.is_some_and(|m| depth >= m) {
            continue;
        }
        for d in dirs.iter().rev() {
            let p = format!("{root}/{d}");
            if !std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
                stack.push((p, depth + 1));
            }
        }
        out.push((root, dirs, files));
    }
    // os.walk is depth-first preorder; the stack gives that order.
    out
}

/// Salt's `check_include_exclude(path, None, exclude_pat)` / with an include pattern:
/// `E@` for a regex, else a glob.
fn include_exclude(path: &str, include: Option<&str>, exclude: Option<&str>) -> bool {
    let matches = |pat: &str| -> bool {
        match pat.strip_prefix("E@") {
            Some(re) => {
                regex::Regex::new(re).is_ok_and(|r| r.find(path).is_some_and(|m| m.start() == 0))
            }
            None => saltq_semantics::python::fnmatch(path, pat),
        }
    };
    let mut ret = true;
    if let Some(inc) = include {
        ret = matches(inc);
    }
    if let Some(exc) = exclude
        && ret
    {
        ret = !matches(exc);
    }
    ret
}

/// Salt's `_check_dir_meta`.
fn check_dir_meta(
    path: &str,
    user: Option<&Value>,
    group: Option<&Value>,
    mode: Option<&str>,
    follow: bool,
) -> Map<String, Value> {
    let mut ch = Map::new();
    let Some(st) = stat_meta(Path::new(path), follow) else {
        ch.insert("directory".into(), "new".into());
        return ch;
    };
    if let Some(u) = user
        && !same_owner(u, &st.user, st.uid)
    {
        ch.insert("user".into(), u.clone());
    }
    if let Some(g) = group
        && !same_owner(g, &st.group, st.gid)
    {
        ch.insert("group".into(), g.clone());
    }
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if let Some(m) = mode
        && m != st.mode
        && (follow || !is_link)
    {
        ch.insert("mode".into(), m.into());
    }
    ch
}

/// The arguments of `file.directory` once parsed.
struct DirArgs {
    user: Option<Value>,
    group: Option<Value>,
    dir_mode: Option<String>,
    file_mode: Option<String>,
    follow: bool,
    clean: bool,
    exclude_pat: Option<String>,
    max_depth: Option<usize>,
    children_only: bool,
}

/// The files `clean` removes: everything under `name` not excluded by `exclude_pat`.
fn clean_candidates(
    name: &str,
    walk_l: &[(String, Vec<String>, Vec<String>)],
    exclude: Option<&str>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (root, dirs, files) in walk_l {
        for f in files.iter().chain(dirs.iter()) {
            let path = format!("{root}/{f}");
            let rel = path.strip_prefix(&format!("{name}/")).unwrap_or(&path);
            if include_exclude(rel, None, exclude) {
                out.push(path);
            }
        }
    }
    out
}

/// Salt's `_check_directory`: what test mode reports.
fn check_directory(
    name: &str,
    a: &DirArgs,
    recurse: &BTreeSet<String>,
) -> (Option<bool>, String, Map<String, Value>) {
    let mut changes = Map::new();
    let walk_l = if !recurse.is_empty() || a.clean {
        walk(name, a.max_depth)
    } else {
        Vec::new()
    };
    if !recurse.is_empty() {
        let user = a.user.as_ref().filter(|_| recurse.contains("user"));
        let group = a.group.as_ref().filter(|_| recurse.contains("group"));
        let (dmode, fmode) = if recurse.contains("mode") {
            (a.dir_mode.as_deref(), a.file_mode.as_deref())
        } else {
            (None, None)
        };
        for (root, dirs, files) in &walk_l {
            if !recurse.contains("ignore_files") {
                for f in files {
                    let path = format!("{root}/{f}");
                    let mut fch = Map::new();
                    if let Some(st) = stat_meta(Path::new(&path), a.follow) {
                        if let Some(u) = user
                            && !same_owner(u, &st.user, st.uid)
                        {
                            fch.insert("user".into(), u.clone());
                        }
                        if let Some(g) = group
                            && !same_owner(g, &st.group, st.gid)
                        {
                            fch.insert("group".into(), g.clone());
                        }
                        if let Some(m) = fmode
                            && m != st.mode
                        {
                            fch.insert("mode".into(), m.into());
                        }
                    }
                    if !fch.is_empty() {
                        changes.insert(path, Value::Object(fch));
                    }
                }
            }
            if !recurse.contains("ignore_dirs") {
                for d in dirs {
                    let path = format!("{root}/{d}");
                    let fch = check_dir_meta(&path, user, group, dmode, a.follow);
                    if !fch.is_empty() {
                        changes.insert(path, Value::Object(fch));
                    }
                }
            }
        }
    }
    if !a.children_only {
        let fch = check_dir_meta(
            name,
            a.user.as_ref(),
            a.group.as_ref(),
            a.dir_mode.as_deref(),
            a.follow,
        );
        if !fch.is_empty() {
            changes.insert(name.into(), Value::Object(fch));
        }
    }
    if a.clean {
        for path in clean_candidates(name, &walk_l, a.exclude_pat.as_deref()) {
            changes.insert(path, json!({"removed": "Removed due to clean"}));
        }
    }
    if !Path::new(name).is_dir() {
        changes.insert(name.into(), json!({"directory": "new"}));
    }
    if changes.is_empty() {
        return (
            Some(true),
            format!("The directory {name} is in the correct state"),
            changes,
        );
    }
    let mut comment = String::from("The following files will be changed:\n");
    for (path, ch) in &changes {
        if let Value::Object(m) = ch {
            for (k, v) in m {
                comment.push_str(&format!("{path}: {k} - {}\n", py_str(v)));
            }
        }
    }
    (None, comment, changes)
}

/// An argument, if given and not `None` (`StateCall::arg` on the bare arguments).
fn arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    args.get(key).filter(|v| !v.is_null())
}

/// A boolean argument by Python truth, `default` when absent.
fn flag(args: &Map<String, Value>, key: &str, default: bool) -> bool {
    arg(args, key)
        .map(saltq_semantics::python::truthy)
        .unwrap_or(default)
}

/// `file.directory`'s first checks and its arguments once parsed: the name without its
/// trailing `/`, or the comment Salt fails with (no name, `max_depth` with `clean`).
fn directory_args(name: &str, args: &Map<String, Value>) -> Result<(String, DirArgs), String> {
    let mut name = name.to_owned();
    if name.is_empty() {
        return Err("Must provide name to file.directory".into());
    }
    if name.ends_with('/') && name != "/" {
        name.pop();
    }
    let max_depth = arg(args, "max_depth")
        .and_then(Value::as_u64)
        .map(|d| d as usize);
    let clean = flag(args, "clean", false);
    if max_depth.is_some() && clean {
        return Err("Cannot specify both max_depth and clean".into());
    }
    let mut dir_mode = arg(args, "dir_mode").cloned();
    if dir_mode
        .as_ref()
        .is_none_or(|d| !saltq_semantics::python::truthy(d))
        && let Some(m) = arg(args, "mode")
    {
        dir_mode = Some(m.clone());
    }
    let mut file_mode = arg(args, "file_mode").cloned();
    if file_mode
        .as_ref()
        .is_none_or(|d| !saltq_semantics::python::truthy(d))
    {
        file_mode = dir_mode.clone();
    }
    let a = DirArgs {
        user: arg(args, "user").cloned(),
        group: arg(args, "group").cloned(),
        dir_mode: dir_mode.as_ref().and_then(normalize_mode),
        file_mode: file_mode.as_ref().and_then(normalize_mode),
        follow: flag(args, "follow_symlinks", false),
        clean,
        exclude_pat: arg(args, "exclude_pat").map(py_str),
        max_depth,
        children_only: flag(args, "children_only", false),
    };
    Ok((name, a))
}

/// What stands at `file.directory`'s name, as read from the system.
#[derive(Debug, Clone, Copy, Default)]
struct Obstacle {
    /// A file (or a symlink to one) is there.
    is_file: bool,
    /// A symlink is there.
    is_link: bool,
    /// Something is already at `backupname`.
    backup_exists: bool,
}

/// How `file.directory` may clear what stands at its name (its arguments).
#[derive(Debug, Clone, Default)]
struct ClearOpts {
    force: bool,
    allow_symlink: bool,
    backupname: Option<String>,
    test: bool,
}

/// One step of clearing the way for a directory, in Salt's order.
#[derive(Debug, Clone, PartialEq)]
enum Clear {
    /// Fail with this comment.
    Fail(String),
    /// Record this change.
    Change(String, Value),
    /// Remove this file or symlink.
    RemoveFile(String),
    /// Remove this directory tree.
    RemoveTree(String),
    /// Move the name to this backup path.
    Rename(String),
    /// Answer now: `result: None` with this comment (test mode).
    Answer(String),
}

/// Salt's handling of a file or symlink where `file.directory` wants a directory: back it
/// up, remove it when forced, or fail.
fn plan_clear(name: &str, o: Obstacle, opts: &ClearOpts) -> Vec<Clear> {
    let mut steps = Vec::new();
    if !(o.is_file || (!opts.allow_symlink && o.is_link) || (opts.force && o.is_link)) {
        return steps;
    }
    if let Some(backup) = &opts.backupname {
        if o.backup_exists {
            if !opts.force {
                steps.push(Clear::Fail(format!(
                    "File exists where the backup target {backup} should go"
                )));
                return steps;
            }
            steps.push(if opts.test {
                Clear::Change(
                    "forced".into(),
                    format!("Existing file at backup path {backup} would be removed").into(),
                )
            } else {
                Clear::RemoveFile(backup.clone())
            });
        }
        if opts.test {
            steps.push(Clear::Change(
                "backup".into(),
                format!("{name} would be renamed to {backup}").into(),
            ));
            steps.push(Clear::Change(name.into(), json!({"directory": "new"})));
            steps.push(Clear::Answer(format!(
                "{name} would be backed up and replaced with a new directory"
            )));
            return steps;
        }
        steps.push(Clear::Rename(backup.clone()));
    } else if opts.force {
        let what = if o.is_file {
            "File"
        } else if o.is_link {
            "Symlink"
        } else {
            "Directory"
        };
        if !opts.test {
            steps.push(if what == "Directory" {
                Clear::RemoveTree(name.into())
            } else {
                Clear::RemoveFile(name.into())
            });
        }
        let verb = if opts.test { "would be" } else { "was" };
        steps.push(Clear::Change(
            "forced".into(),
            format!("{what} {verb} forcibly replaced").into(),
        ));
    } else if o.is_file {
        steps.push(Clear::Fail(format!(
            "Specified location {name} exists and is a file"
        )));
    } else if o.is_link {
        steps.push(Clear::Fail(format!(
            "Specified location {name} exists and is a symlink"
        )));
    }
    steps
}

/// Does `plan_clear`'s steps; `Err` carries the answer to give at once.
fn apply_clear(name: &str, steps: Vec<Clear>, mut ret: Ret) -> Result<Ret, Box<Ret>> {
    for step in steps {
        match step {
            Clear::Fail(msg) => return Err(Box::new(error(ret, msg))),
            Clear::Change(k, v) => {
                ret.changes.insert(k, v);
            }
            Clear::RemoveFile(p) => {
                let _ = std::fs::remove_file(p);
            }
            Clear::RemoveTree(p) => {
                let _ = std::fs::remove_dir_all(p);
            }
            Clear::Rename(backup) => {
                let _ = std::fs::rename(name, backup);
            }
            Clear::Answer(comment) => {
                ret.comment = comment;
                ret.result = None;
                return Err(Box::new(ret));
            }
        }
    }
    Ok(ret)
}

/// Reads what stands at `name` (and at the backup path) for `plan_clear`.
fn look_at_obstacle(p: &Path, backupname: Option<&str>) -> Obstacle {
    Obstacle {
        is_file: p.is_file(),
        is_link: std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()),
        backup_exists: backupname.is_some_and(|b| std::fs::symlink_metadata(b).is_ok()),
    }
}

/// `file.directory`.
pub(super) async fn directory(call: StateCall) -> Result<Ret, StateError> {
    let ret = Ret::new(name_of(&call));
    let (name, a) = match directory_args(&name_of(&call), &call.args) {
        Ok(parsed) => parsed,
        Err(e) => return Ok(error(ret, e)),
    };
    let u_check = check_user(a.user.as_ref(), a.group.as_ref(), call.test);
    if !u_check.is_empty() {
        return Ok(error(ret, u_check));
    }
    if !name.starts_with('/') {
        return Ok(error(
            ret,
            format!("Specified file {name} is not an absolute path"),
        ));
    }
    let p = PathBuf::from(&name);
    let opts = ClearOpts {
        force: bool_arg(&call, "force", false),
        allow_symlink: bool_arg(&call, "allow_symlink", true),
        backupname: str_arg(&call, "backupname"),
        test: call.test,
    };
    let steps = plan_clear(
        &name,
        look_at_obstacle(&p, opts.backupname.as_deref()),
        &opts,
    );
    let mut ret = match apply_clear(&name, steps, ret) {
        Ok(ret) => ret,
        Err(answer) => return Ok(*answer),
    };
    let recurse_arg = recurse_set(call.arg("recurse"));
    let recurse = recurse_arg.clone().unwrap_or_default();
    let (tresult, tcomment, tchanges) = match &recurse_arg {
        Ok(_) => check_directory(&name, &a, &recurse),
        Err(e) => (Some(false), e.clone(), Map::new()),
    };
    ret.changes.extend(tchanges);
    if call.test || ret.changes.is_empty() {
        ret.result = tresult;
        ret.comment = tcomment;
        return Ok(ret);
    }
    if !p.is_dir() {
        return Ok(create_directory(&call, &name, &a, ret));
    }
    if !a.children_only {
        check_perms(
            &p,
            &mut ret,
            a.user.as_ref(),
            a.group.as_ref(),
            a.dir_mode.as_deref(),
            a.follow,
            false,
        );
    }
    let walk_l = if !recurse.is_empty() || a.clean {
        walk(&name, a.max_depth)
    } else {
        Vec::new()
    };
    if let Err(e) = recurse_arg {
        ret.result = Some(false);
        ret.comment = e;
    }
    if !recurse.is_empty() {
        enforce_recursively(&a, &recurse, &walk_l, &mut ret);
    }
    if a.clean {
        clean_directory(&name, &a, &walk_l, &mut ret);
    }
    finish_directory_comment(&name, a.children_only, &mut ret);
    Ok(ret)
}

/// Creates the missing directory `name` (its parents too with `makedirs`) with its owner
/// and mode.
fn create_directory(call: &StateCall, name: &str, a: &DirArgs, ret: Ret) -> Ret {
    let p = Path::new(name);
    let parent = dirname(name);
    if !Path::new(&parent).is_dir() {
        if !bool_arg(call, "makedirs", false) {
            return error(ret, format!("No directory to create {name} in"));
        }
        if let Err(e) = makedirs(
            name,
            a.user.as_ref(),
            a.group.as_ref(),
            a.dir_mode.as_deref(),
        ) {
            return error(ret, super::os_error(&e, &parent));
        }
    }
    if std::fs::create_dir(p).is_ok() {
        let mut scratch = Ret::new(name);
        if let Some(m) = &a.dir_mode {
            let _ = super::set_mode(p, m);
        }
        check_perms(
            p,
            &mut scratch,
            a.user.as_ref(),
            a.group.as_ref(),
            None,
            true,
            false,
        );
    }
    if !p.is_dir() {
        return error(ret, format!("Failed to create directory {name}"));
    }
    let mut ret = ret;
    ret.changes.insert(name.into(), json!({"directory": "new"}));
    ret
}

/// Salt's check of the owner `recurse` enforces: the owner to set, and the failure
/// comment when it is missing or unknown (`known` says whether the system has it).
fn recurse_owner(
    kind: &str,
    owner: Option<&Value>,
    known: impl Fn(&Value) -> bool,
) -> (Option<Value>, Option<String>) {
    match owner {
        Some(o) if saltq_semantics::python::truthy(o) || o.is_number() => {
            let failure = (!known(o)).then(|| match kind {
                "user" => format!(
                    "Failed to enforce ownership for user {} (user does not exist)",
                    py_str(o)
                ),
                _ => format!("Failed to enforce group ownership for group {}", py_str(o)),
            });
            (Some(o.clone()), failure)
        }
        _ => (
            None,
            Some(format!(
                "{kind} not specified, but configured as a target for recursive ownership management"
            )),
        ),
    }
}

/// `recurse`: the owner and mode set on everything under the directory.
fn enforce_recursively(
    a: &DirArgs,
    recurse: &BTreeSet<String>,
    walk_l: &[(String, Vec<String>, Vec<String>)],
    ret: &mut Ret,
) {
    let mut owner = |kind: &str, v: Option<&Value>, known: fn(&Value) -> bool| {
        if !recurse.contains(kind) {
            return None;
        }
        let (owner, failure) = recurse_owner(kind, v, known);
        if let Some(comment) = failure {
            ret.result = Some(false);
            ret.comment = comment;
        }
        owner
    };
    let user = owner("user", a.user.as_ref(), |u| super::user_to_uid(u).is_some());
    let group = owner("group", a.group.as_ref(), |g| {
        super::group_to_gid(g).is_some()
    });
    let (dmode, fmode) = if recurse.contains("mode") {
        (a.dir_mode.clone(), a.file_mode.clone())
    } else {
        (None, None)
    };
    if recurse.contains("silent") {
        ret.changes = Map::new();
        ret.changes
            .insert("recursion".into(), "Changes silenced".into());
    }
    let mut perms = |path: String, mode: Option<&str>| {
        let full = PathBuf::from(path);
        check_perms(
            &full,
            ret,
            user.as_ref(),
            group.as_ref(),
            mode,
            a.follow,
            false,
        );
    };
    for (root, dirs, files) in walk_l {
        if !recurse.contains("ignore_files") {
            for f in files {
                perms(format!("{root}/{f}"), fmode.as_deref());
            }
        }
        if !recurse.contains("ignore_dirs") {
            for d in dirs {
                perms(format!("{root}/{d}"), dmode.as_deref());
            }
        }
    }
}

/// `clean`: removes what `clean_candidates` names, skipping what went with a removed
/// directory, as `os.walk` does.
fn clean_directory(
    name: &str,
    a: &DirArgs,
    walk_l: &[(String, Vec<String>, Vec<String>)],
    ret: &mut Ret,
) {
    let removed = clean_candidates(name, walk_l, a.exclude_pat.as_deref());
    let mut gone: Vec<String> = Vec::new();
    for path in removed {
        let pp = Path::new(&path);
        // os.walk does not enter a directory removed before it got there.
        if gone.iter().any(|g| path.starts_with(&format!("{g}/"))) {
            continue;
        }
        let _ = if pp.is_dir()
            && !std::fs::symlink_metadata(pp).is_ok_and(|m| m.file_type().is_symlink())
        {
            std::fs::remove_dir_all(pp)
        } else {
            std::fs::remove_file(pp)
        };
        gone.push(path);
    }
    if !gone.is_empty() {
        ret.changes.insert(
            "removed".into(),
            Value::Array(gone.into_iter().map(Value::from).collect()),
        );
        ret.comment = format!("Files cleaned from directory {name}");
    }
}

/// Salt's closing comment for `file.directory` once changes were made (or not).
fn finish_directory_comment(name: &str, children_only: bool, ret: &mut Ret) {
    if ret.comment.is_empty() {
        if children_only {
            ret.comment = format!("Directory {name}/* updated");
        } else if !ret.changes.is_empty() {
            ret.comment = format!("Directory {name} updated");
        }
    }
    if ret.changes.is_empty() && ret.result == Some(true) {
        let orig = std::mem::take(&mut ret.comment);
        ret.comment = format!("Directory {name} is in the correct state");
        if !orig.is_empty() {
            ret.comment = format!("{}\n{orig}", ret.comment);
        }
    }
}

/// `file.recurse`'s arguments once parsed.
struct RecurseArgs {
    dir_mode: Option<String>,
    /// `file_mode: keep`: each file keeps its source's mode.
    keep_mode: bool,
    file_mode: Option<String>,
    user: Option<Value>,
    group: Option<Value>,
    /// The `salt://` sources, trailing `/` dropped.
    sources: Vec<String>,
}

/// `file.recurse`'s arguments, or Salt's comment when `mode` is given.
fn recurse_args(args: &Map<String, Value>) -> Result<RecurseArgs, String> {
    if args.contains_key("mode") {
        return Err(
            "'mode' is not allowed in 'file.recurse'. Please use 'file_mode' and 'dir_mode'."
                .into(),
        );
    }
    let file_mode_arg = arg(args, "file_mode").cloned();
    let keep_mode = matches!(&file_mode_arg, Some(Value::String(s)) if s.to_lowercase() == "keep");
    let file_mode = if keep_mode {
        None
    } else {
        file_mode_arg.as_ref().and_then(normalize_mode)
    };
    let sources = match arg(args, "source") {
        Some(Value::Array(a)) => a.iter().map(py_str).collect(),
        Some(v) => vec![py_str(v)],
        None => Vec::new(),
    }
    .into_iter()
    .map(|s| s.trim_end_matches('/').to_owned())
    .collect();
    Ok(RecurseArgs {
        dir_mode: arg(args, "dir_mode").and_then(normalize_mode),
        keep_mode,
        file_mode,
        user: arg(args, "user").cloned(),
        group: arg(args, "group").cloned(),
        sources,
    })
}

/// Salt's checks of `file.recurse`'s name and sources once the owner is known good.
fn check_recurse_target(name: &str, sources: &[String]) -> Result<(), String> {
    if !name.starts_with('/') {
        return Err(format!("Specified file {name} is not an absolute path"));
    }
    match sources.iter().find(|s| !s.starts_with("salt://")) {
        Some(s) => Err(format!("Invalid source '{s}' (must be a salt:// URI)")),
        None => Ok(()),
    }
}

/// What `file.recurse` manages under its name, decided from the fileserver's listings.
#[derive(Debug, Default, PartialEq)]
struct RecurseTargets {
    /// (destination, `salt://` source) of each file, in the fileserver's order.
    files: Vec<(String, String)>,
    /// The directories made for them (and the empty ones with `include_empty`).
    dirs: BTreeSet<String>,
    /// Every path `clean` keeps.
    keep: BTreeSet<String>,
}

/// Where the fileserver's files under `srcpath` (and, with `include_empty`, its
/// directories) land under `name`, filtered by `include_pat`/`exclude_pat`.
#[allow(clippy::too_many_arguments)]
fn plan_targets(
    name: &str,
    srcpath: &str,
    listed_files: &[String],
    listed_dirs: Option<&[String]>,
    include: Option<&str>,
    exclude: Option<&str>,
    senv: &str,
    saltenv: &str,
) -> RecurseTargets {
    let prefix = format!("{srcpath}/");
    let mut t = RecurseTargets::default();
    for f in listed_files {
        let Some(rel) = f.strip_prefix(&prefix) else {
            continue;
        };
        if rel.trim().is_empty() || !include_exclude(rel, include, exclude) {
            continue;
        }
        let dest = format!("{name}/{rel}");
        t.dirs.insert(dirname(&dest));
        t.keep.insert(dest.clone());
        let src = if senv == saltenv {
            format!("salt://{f}")
        } else {
            format!("salt://{f}?saltenv={senv}")
        };
        t.files.push((dest, src));
    }
    for d in listed_dirs.unwrap_or_default() {
        if let Some(rel) = d.strip_prefix(&prefix)
            && include_exclude(rel, include, exclude)
        {
            let dest = format!("{name}/{rel}");
            t.dirs.insert(dest.clone());
            t.keep.insert(dest);
        }
    }
    t
}

/// The arguments `file.recurse` hands `file.managed` for one file.
fn managed_args(
    args: &Map<String, Value>,
    src: &str,
    a: &RecurseArgs,
    replace: bool,
) -> Map<String, Value> {
    const NOT_PASSED: &[&str] = &[
        "mode",
        "makedirs",
        "name",
        "source",
        "clean",
        "dir_mode",
        "file_mode",
        "include_pat",
        "exclude_pat",
        "include_empty",
        "maxdepth",
        "keep_symlinks",
        "force_symlinks",
        "sym_mode",
        "require",
    ];
    let mut out = Map::new();
    for (k, v) in args {
        if !NOT_PASSED.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        }
    }
    out.insert("source".into(), src.into());
    out.insert(
        "mode".into(),
        if a.keep_mode {
            "keep".into()
        } else {
            a.file_mode.clone().map_or(Value::Null, Value::from)
        },
    );
    out.insert("makedirs".into(), true.into());
    out.insert("replace".into(), replace.into());
    out
}

/// The arguments `file.recurse` hands `file.directory` for one directory.
fn directory_call_args(a: &RecurseArgs) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("user".into(), a.user.clone().unwrap_or(Value::Null));
    args.insert("group".into(), a.group.clone().unwrap_or(Value::Null));
    args.insert(
        "dir_mode".into(),
        a.dir_mode.clone().map_or(Value::Null, Value::from),
    );
    args.insert("makedirs".into(), true.into());
    args
}

/// `file.recurse`'s answer built from the answers of the states it runs.
struct Merged {
    ret: Ret,
    /// Comments by path, in the order first seen.
    comments: Vec<(String, Vec<String>)>,
}

impl Merged {
    /// Salt's `merge_ret`: one sub-state's answer folded in under `path`.
    fn merge(&mut self, path: &str, sub: Ret) {
        if sub.result == Some(false) || self.ret.result == Some(true) {
            self.ret.result = sub.result;
        }
        if sub.result != Some(true) && !sub.comment.is_empty() {
            self.comment(path, vec![sub.comment]);
        }
        if !sub.changes.is_empty() {
            self.ret
                .changes
                .insert(path.to_owned(), Value::Object(sub.changes));
        }
    }

    /// Adds comment lines under `path`.
    fn comment(&mut self, path: &str, lines: Vec<String>) {
        match self.comments.iter_mut().find(|(p, _)| p == path) {
            Some((_, v)) => v.extend(lines),
            None => self.comments.push((path.to_owned(), lines)),
        }
    }

    /// Salt's closing comment: the comments by path, or the summary.
    fn finish(mut self, name: &str) -> Ret {
        self.ret.comment = self
            .comments
            .iter()
            .map(|(k, v)| format!("\n#### {k} ####\n{}", v.join("\n")))
            .collect::<Vec<_>>()
            .join("\n")
            .trim()
            .to_owned();
        if self.ret.comment.is_empty() {
            self.ret.comment = format!("Recursively updated {name}");
        }
        if self.ret.changes.is_empty() && self.ret.result == Some(true) {
            self.ret.comment = format!("The directory {name} is in the correct state");
        }
        self.ret
    }
}

/// What `clean` removes under `name`: what is walked and neither kept, above something
/// kept, nor excluded.
fn recurse_clean_plan(
    name: &str,
    walk_l: &[(String, Vec<String>, Vec<String>)],
    keep: &BTreeSet<String>,
    exclude: Option<&str>,
) -> Vec<String> {
    let mut removed = Vec::new();
    for (root, dirs, fls) in walk_l {
        for f in fls.iter().chain(dirs.iter()) {
            let path = format!("{root}/{f}");
            if keep.contains(&path) || keep.iter().any(|k| k.starts_with(&format!("{path}/"))) {
                continue;
            }
            let rel = path.strip_prefix(&format!("{name}/")).unwrap_or(&path);
            if include_exclude(rel, None, exclude) {
                removed.push(path);
            }
        }
    }
    removed
}

/// `file.recurse`: every file under a `salt://` directory managed under `name`.
pub(super) async fn recurse(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let ret = Ret::new(name.clone());
    let a = match recurse_args(&call.args) {
        Ok(a) => a,
        Err(e) => return Ok(error(ret, e)),
    };
    let u_check = check_user(a.user.as_ref(), a.group.as_ref(), call.test);
    if !u_check.is_empty() {
        return Ok(error(ret, u_check));
    }
    if let Err(e) = check_recurse_target(&name, &a.sources) {
        return Ok(error(ret, e));
    }
    let (srcpath, senv) = match find_recurse_source(&call, &a.sources).await {
        Ok(found) => found,
        Err(e) => return Ok(error(ret, e)),
    };
    let np = Path::new(&name);
    if !np.is_dir() {
        if np.exists() {
            return Ok(error(
                ret,
                format!("The path {name} exists and is not a directory"),
            ));
        }
        if !call.test {
            let _ = makedirs(
                &format!("{name}/x"),
                a.user.as_ref(),
                a.group.as_ref(),
                a.dir_mode.as_deref(),
            );
        }
    }
    let exclude_pat = str_arg(&call, "exclude_pat");
    let targets = list_targets(&call, &name, &srcpath, &senv, exclude_pat.as_deref()).await;
    let clean = bool_arg(&call, "clean", false);
    let replace = bool_arg(&call, "replace", true);
    let mut m = Merged {
        ret,
        comments: Vec::new(),
    };
    for d in &targets.dirs {
        let sub = StateCall {
            name: d.clone(),
            args: directory_call_args(&a),
            ..call.clone()
        };
        let r = directory(sub).await?;
        m.merge(d, r);
    }
    for (dest, src) in &targets.files {
        if clean && Path::new(dest).is_dir() && replace {
            let mut r = Ret::new(name.clone());
            if call.test {
                r.comment = format!("Replacing directory {dest} with a file");
                r.result = None;
                m.merge(dest, r);
                continue;
            }
            let _ = std::fs::remove_dir_all(dest);
            r.changes
                .insert("diff".into(), "Replaced directory with a new file".into());
            m.merge(dest, r);
        }
        let sub = StateCall {
            name: dest.clone(),
            args: managed_args(&call.args, src, &a, replace),
            ..call.clone()
        };
        let r = super::managed::managed(sub).await?;
        m.merge(dest, r);
    }
    if clean {
        let removed = recurse_clean_plan(
            &name,
            &walk(&name, None),
            &targets.keep,
            exclude_pat.as_deref(),
        );
        clean_recursed(call.test, removed, &mut m);
    }
    Ok(m.finish(&name))
}

/// Salt's `source_list` over directories: the first source the fileserver has, as
/// (path, saltenv), checked to be a directory there.
async fn find_recurse_source(
    call: &StateCall,
    sources: &[String],
) -> Result<(String, String), String> {
    const NOT_FOUND: &str = "Recurse failed: none of the specified sources were found";
    let Some(files) = call.ctx.files.clone() else {
        return Err(NOT_FOUND.into());
    };
    let mut source = None;
    for s in sources {
        let (path, env) = super::managed::parse_salt_url(s);
        let env = env.unwrap_or_else(|| call.saltenv.clone());
        let dirs = files.list_dirs(&env, &path).await.unwrap_or_default();
        let fls = files.list_files(&env, &path).await.unwrap_or_default();
        if dirs.contains(&path) || fls.contains(&path) {
            source = Some((path, env));
            break;
        }
    }
    let Some((srcpath, senv)) = source else {
        return Err(NOT_FOUND.into());
    };
    let master_dirs = files
        .list_dirs(&senv, &format!("{srcpath}/"))
        .await
        .unwrap_or_default();
    let all_dirs = files.list_dirs(&senv, &srcpath).await.unwrap_or_default();
    if !master_dirs.contains(&srcpath) && !all_dirs.contains(&srcpath) {
        return Err(format!(
            "The directory '{srcpath}' does not exist on the salt fileserver in saltenv '{senv}'"
        ));
    }
    Ok((srcpath, senv))
}

/// Lists the source directory on the fileserver and plans where its files go.
async fn list_targets(
    call: &StateCall,
    name: &str,
    srcpath: &str,
    senv: &str,
    exclude_pat: Option<&str>,
) -> RecurseTargets {
    let Some(files) = call.ctx.files.clone() else {
        return RecurseTargets::default();
    };
    let prefix = format!("{srcpath}/");
    let listed_files = files.list_files(senv, &prefix).await.unwrap_or_default();
    let listed_dirs = if bool_arg(call, "include_empty", false) {
        Some(files.list_dirs(senv, &prefix).await.unwrap_or_default())
    } else {
        None
    };
    plan_targets(
        name,
        srcpath,
        &listed_files,
        listed_dirs.as_deref(),
        str_arg(call, "include_pat").as_deref(),
        exclude_pat,
        senv,
        &call.saltenv,
    )
}

/// `clean`: in test mode the paths are named; otherwise removed, skipping what went with a
/// removed directory, as `os.walk` does.
fn clean_recursed(test: bool, removed: Vec<String>, m: &mut Merged) {
    if removed.is_empty() {
        return;
    }
    if test {
        if m.ret.result == Some(true) {
            m.ret.result = None;
        }
        m.comment("removed", removed);
        return;
    }
    let mut gone: Vec<String> = Vec::new();
    for path in removed {
        if gone.iter().any(|g| path.starts_with(&format!("{g}/"))) {
            continue;
        }
        let pp = Path::new(&path);
        if pp.is_dir() && !pp.is_symlink() {
            let _ = std::fs::remove_dir_all(pp);
        } else {
            let _ = std::fs::remove_file(pp);
        }
        gone.push(path);
    }
    m.ret.changes.insert(
        "removed".into(),
        Value::Array(gone.into_iter().map(Value::from).collect()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn directory_args_checks_and_defaults() {
        assert_eq!(
            directory_args("", &Map::new()).err().as_deref(),
            Some("Must provide name to file.directory")
        );
        assert_eq!(
            directory_args("/d", &args(json!({"max_depth": 1, "clean": true})))
                .err()
                .as_deref(),
            Some("Cannot specify both max_depth and clean")
        );
        let (name, a) = directory_args("/d/", &args(json!({"mode": 750}))).unwrap();
        assert_eq!(name, "/d");
        assert_eq!(a.dir_mode.as_deref(), Some("0750"));
        assert_eq!(a.file_mode.as_deref(), Some("0750"));
        let (name, a) = directory_args(
            "/",
            &args(
                json!({"dir_mode": "0700", "file_mode": "644", "mode": "0777",
                         "children_only": true, "max_depth": 2}),
            ),
        )
        .unwrap();
        assert_eq!(name, "/");
        assert_eq!(a.dir_mode.as_deref(), Some("0700"));
        assert_eq!(a.file_mode.as_deref(), Some("0644"));
        assert!(a.children_only && !a.clean);
        assert_eq!(a.max_depth, Some(2));
    }

    fn opts(force: bool, allow_symlink: bool, backup: Option<&str>, test: bool) -> ClearOpts {
        ClearOpts {
            force,
            allow_symlink,
            backupname: backup.map(str::to_owned),
            test,
        }
    }

    const FILE: Obstacle = Obstacle {
        is_file: true,
        is_link: false,
        backup_exists: false,
    };
    const LINK: Obstacle = Obstacle {
        is_file: false,
        is_link: true,
        backup_exists: false,
    };

    #[test]
    fn clear_nothing_in_the_way() {
        assert!(plan_clear("/d", Obstacle::default(), &opts(true, false, None, false)).is_empty());
        // A symlink is allowed unless forced or forbidden.
        assert!(plan_clear("/d", LINK, &opts(false, true, None, false)).is_empty());
    }

    #[test]
    fn clear_fails_without_force() {
        assert_eq!(
            plan_clear("/d", FILE, &opts(false, true, None, false)),
            vec![Clear::Fail(
                "Specified location /d exists and is a file".into()
            )]
        );
        assert_eq!(
            plan_clear("/d", LINK, &opts(false, false, None, false)),
            vec![Clear::Fail(
                "Specified location /d exists and is a symlink".into()
            )]
        );
        let taken = Obstacle {
            backup_exists: true,
            ..FILE
        };
        assert_eq!(
            plan_clear("/d", taken, &opts(false, true, Some("/b"), false)),
            vec![Clear::Fail(
                "File exists where the backup target /b should go".into()
            )]
        );
    }

    #[test]
    fn clear_forced_removes_or_says_it_would() {
        assert_eq!(
            plan_clear("/d", LINK, &opts(true, true, None, false)),
            vec![
                Clear::RemoveFile("/d".into()),
                Clear::Change("forced".into(), "Symlink was forcibly replaced".into()),
            ]
        );
        assert_eq!(
            plan_clear("/d", FILE, &opts(true, true, None, true)),
            vec![Clear::Change(
                "forced".into(),
                "File would be forcibly replaced".into()
            )]
        );
    }

    #[test]
    fn clear_with_backup() {
        let taken = Obstacle {
            backup_exists: true,
            ..FILE
        };
        assert_eq!(
            plan_clear("/d", taken, &opts(true, true, Some("/b"), false)),
            vec![Clear::RemoveFile("/b".into()), Clear::Rename("/b".into())]
        );
        assert_eq!(
            plan_clear("/d", taken, &opts(true, true, Some("/b"), true)),
            vec![
                Clear::Change(
                    "forced".into(),
                    "Existing file at backup path /b would be removed".into()
                ),
                Clear::Change("backup".into(), "/d would be renamed to /b".into()),
                Clear::Change("/d".into(), json!({"directory": "new"})),
                Clear::Answer("/d would be backed up and replaced with a new directory".into()),
            ]
        );
    }

    #[test]
    fn recurse_owner_needs_a_known_owner() {
        let yes = |_: &Value| true;
        let no = |_: &Value| false;
        assert_eq!(
            recurse_owner("user", Some(&json!("web")), yes),
            (Some(json!("web")), None)
        );
        assert_eq!(
            recurse_owner("user", Some(&json!("ghost")), no),
            (
                Some(json!("ghost")),
                Some("Failed to enforce ownership for user ghost (user does not exist)".into())
            )
        );
        assert_eq!(
            recurse_owner("group", Some(&json!(0)), no).1.as_deref(),
            Some("Failed to enforce group ownership for group 0")
        );
        assert_eq!(
            recurse_owner("group", Some(&json!("")), yes),
            (
                None,
                Some("group not specified, but configured as a target for recursive ownership management".into())
            )
        );
    }

    #[test]
    fn directory_closing_comment() {
        let mut ret = Ret::new("/d");
        finish_directory_comment("/d", false, &mut ret);
        assert_eq!(ret.comment, "Directory /d is in the correct state");
        let mut ret = Ret::new("/d");
        finish_directory_comment("/d", true, &mut ret);
        assert_eq!(
            ret.comment,
            "Directory /d is in the correct state\nDirectory /d/* updated"
        );
        let mut ret = Ret::new("/d");
        ret.changes.insert("/d".into(), json!({"mode": "0700"}));
        finish_directory_comment("/d", false, &mut ret);
        assert_eq!(ret.comment, "Directory /d updated");
        let mut ret = Ret::new("/d");
        ret.result = Some(false);
        ret.comment = "boom".into();
        finish_directory_comment("/d", false, &mut ret);
        assert_eq!(ret.comment, "boom");
    }

    #[test]
    fn recurse_args_and_target_checks() {
        assert!(recurse_args(&args(json!({"mode": "0644"}))).is_err());
        let a = recurse_args(&args(json!({"source": ["salt://a/", "salt://b"],
                                          "file_mode": "Keep", "dir_mode": 755})))
        .unwrap();
        assert!(a.keep_mode && a.file_mode.is_none());
        assert_eq!(a.dir_mode.as_deref(), Some("0755"));
        assert_eq!(a.sources, ["salt://a", "salt://b"]);
        assert_eq!(
            check_recurse_target("rel", &a.sources).unwrap_err(),
            "Specified file rel is not an absolute path"
        );
        assert_eq!(
            check_recurse_target("/t", &["salt://a".into(), "/etc".into()]).unwrap_err(),
            "Invalid source '/etc' (must be a salt:// URI)"
        );
        assert!(check_recurse_target("/t", &a.sources).is_ok());
    }

    #[test]
    fn targets_from_the_listing() {
        let files: Vec<String> = ["web/a.conf", "web/sub/b.txt", "web/skip.bak", "other/x"]
            .map(String::from)
            .into();
        let dirs: Vec<String> = ["web/empty", "web/sub"].map(String::from).into();
        let t = plan_targets(
            "/t",
            "web",
            &files,
            None,
            None,
            Some("*.bak"),
            "base",
            "base",
        );
        assert_eq!(
            t.files,
            [
                ("/t/a.conf".to_string(), "salt://web/a.conf".to_string()),
                (
                    "/t/sub/b.txt".to_string(),
                    "salt://web/sub/b.txt".to_string()
                ),
            ]
        );
        assert_eq!(
            t.dirs,
            BTreeSet::from(["/t".to_string(), "/t/sub".to_string()])
        );
        let t = plan_targets(
            "/t",
            "web",
            &files,
            Some(&dirs),
            Some("sub*"),
            None,
            "dev",
            "base",
        );
        assert_eq!(
            t.files,
            [(
                "/t/sub/b.txt".to_string(),
                "salt://web/sub/b.txt?saltenv=dev".to_string()
            )]
        );
        assert_eq!(
            t.keep,
            BTreeSet::from(["/t/sub".to_string(), "/t/sub/b.txt".to_string()])
        );
    }

    #[test]
    fn recurse_clean_keeps_managed_and_excluded() {
        let walk_l = vec![
            (
                "/t".to_string(),
                vec!["keepdir".to_string(), "old".to_string()],
                vec!["a".to_string(), "x.log".to_string(), "stale".to_string()],
            ),
            ("/t/keepdir".to_string(), vec![], vec!["f".to_string()]),
            ("/t/old".to_string(), vec![], vec!["g".to_string()]),
        ];
        let keep = BTreeSet::from(["/t/a".to_string(), "/t/keepdir/f".to_string()]);
        assert_eq!(
            recurse_clean_plan("/t", &walk_l, &keep, Some("*.log")),
            ["/t/stale", "/t/old", "/t/old/g"]
        );
    }

    #[test]
    fn merge_folds_sub_answers() {
        let mut m = Merged {
            ret: Ret::new("/t"),
            comments: Vec::new(),
        };
        let mut ok = Ret::new("/t/a");
        ok.comment = "fine".into();
        m.merge("/t/a", ok);
        let mut pending = Ret::new("/t/b");
        pending.result = None;
        pending.comment = "would change".into();
        pending.changes.insert("diff".into(), "New file".into());
        m.merge("/t/b", pending);
        m.comment("removed", vec!["/t/c".into()]);
        let ret = m.finish("/t");
        assert_eq!(ret.result, None);
        assert_eq!(
            ret.comment,
            "#### /t/b ####\nwould change\n\n#### removed ####\n/t/c"
        );
        assert_eq!(ret.changes["/t/b"], json!({"diff": "New file"}));
        let m = Merged {
            ret: Ret::new("/t"),
            comments: Vec::new(),
        };
        assert_eq!(
            m.finish("/t").comment,
            "The directory /t is in the correct state"
        );
    }
}
