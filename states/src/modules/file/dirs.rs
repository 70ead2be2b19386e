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

/// `file.directory`.
pub(super) async fn directory(call: StateCall) -> Result<Ret, StateError> {
    let mut name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.directory"));
    }
    if name.ends_with('/') && name != "/" {
        name.pop();
    }
    let max_depth = call
        .arg("max_depth")
        .and_then(Value::as_u64)
        .map(|d| d as usize);
    let clean = bool_arg(&call, "clean", false);
    if max_depth.is_some() && clean {
        return Ok(error(ret, "Cannot specify both max_depth and clean"));
    }
    let mut dir_mode = call.arg("dir_mode").cloned();
    if dir_mode
        .as_ref()
        .is_none_or(|d| !saltq_semantics::python::truthy(d))
        && let Some(m) = call.arg("mode")
    {
        dir_mode = Some(m.clone());
    }
    let mut file_mode = call.arg("file_mode").cloned();
    if file_mode
        .as_ref()
        .is_none_or(|d| !saltq_semantics::python::truthy(d))
    {
        file_mode = dir_mode.clone();
    }
    let a = DirArgs {
        user: call.arg("user").cloned(),
        group: call.arg("group").cloned(),
        dir_mode: dir_mode.as_ref().and_then(normalize_mode),
        file_mode: file_mode.as_ref().and_then(normalize_mode),
        follow: bool_arg(&call, "follow_symlinks", false),
        clean,
        exclude_pat: str_arg(&call, "exclude_pat"),
        max_depth,
        children_only: bool_arg(&call, "children_only", false),
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
    let is_link = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
    let force = bool_arg(&call, "force", false);
    if p.is_file() || (!bool_arg(&call, "allow_symlink", true) && is_link) || (force && is_link) {
        if let Some(backup) = str_arg(&call, "backupname") {
            if std::fs::symlink_metadata(&backup).is_ok() {
                if !force {
                    return Ok(error(
                        ret,
                        format!("File exists where the backup target {backup} should go"),
                    ));
                }
                if call.test {
                    ret.changes.insert(
                        "forced".into(),
                        format!("Existing file at backup path {backup} would be removed").into(),
                    );
                } else {
                    let _ = std::fs::remove_file(&backup);
                }
            }
            if call.test {
                ret.changes.insert(
                    "backup".into(),
                    format!("{name} would be renamed to {backup}").into(),
                );
                ret.changes
                    .insert(name.clone(), json!({"directory": "new"}));
                ret.comment =
                    format!("{name} would be backed up and replaced with a new directory");
                ret.result = None;
                return Ok(ret);
            }
            let _ = std::fs::rename(&p, &backup);
        } else if force {
            let (what, rm): (&str, std::io::Result<()>) = if p.is_file() {
                (
                    "File",
                    if call.test {
                        Ok(())
                    } else {
                        std::fs::remove_file(&p)
                    },
                )
            } else if is_link {
                (
                    "Symlink",
                    if call.test {
                        Ok(())
                    } else {
                        std::fs::remove_file(&p)
                    },
                )
            } else {
                (
                    "Directory",
                    if call.test {
                        Ok(())
                    } else {
                        std::fs::remove_dir_all(&p)
                    },
                )
            };
            let _ = rm;
            let verb = if call.test { "would be" } else { "was" };
            ret.changes.insert(
                "forced".into(),
                format!("{what} {verb} forcibly replaced").into(),
            );
        } else if p.is_file() {
            return Ok(error(
                ret,
                format!("Specified location {name} exists and is a file"),
            ));
        } else if is_link {
            return Ok(error(
                ret,
                format!("Specified location {name} exists and is a symlink"),
            ));
        }
    }
    let recurse_arg = recurse_set(call.arg("recurse"));
    let recurse = recurse_arg.clone().unwrap_or_default();
    let (tresult, tcomment, tchanges) = match recurse_arg {
        Ok(_) => check_directory(&name, &a, &recurse),
        Err(e) => (Some(false), e, Map::new()),
    };
    ret.changes.extend(tchanges);
    if call.test || ret.changes.is_empty() {
        ret.result = tresult;
        ret.comment = tcomment;
        return Ok(ret);
    }
    if !p.is_dir() {
        let parent = dirname(&name);
        if !Path::new(&parent).is_dir() {
            if bool_arg(&call, "makedirs", false) {
                if let Err(e) = makedirs(
                    &name,
                    a.user.as_ref(),
                    a.group.as_ref(),
                    a.dir_mode.as_deref(),
                ) {
                    return Ok(error(ret, super::os_error(&e, &parent)));
                }
            } else {
                return Ok(error(ret, format!("No directory to create {name} in")));
            }
        }
        if std::fs::create_dir(&p).is_ok() {
            let mut scratch = Ret::new(name.clone());
            if let Some(m) = &a.dir_mode {
                let _ = super::set_mode(&p, m);
            }
            check_perms(
                &p,
                &mut scratch,
                a.user.as_ref(),
                a.group.as_ref(),
                None,
                true,
                false,
            );
        }
        if !p.is_dir() {
            return Ok(error(ret, format!("Failed to create directory {name}")));
        }
        ret.changes
            .insert(name.clone(), json!({"directory": "new"}));
        return Ok(ret);
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
    let walk_l = if !recurse.is_empty() || clean {
        walk(&name, max_depth)
    } else {
        Vec::new()
    };
    if let Err(e) = recurse_set(call.arg("recurse")) {
        ret.result = Some(false);
        ret.comment = e;
    }
    if !recurse.is_empty() {
        let mut user = None;
        let mut group = None;
        if recurse.contains("user") {
            match &a.user {
                Some(u) if saltq_semantics::python::truthy(u) || u.is_number() => {
                    if super::user_to_uid(u).is_none() {
                        ret.result = Some(false);
                        ret.comment = format!(
                            "Failed to enforce ownership for user {} (user does not exist)",
                            py_str(u)
                        );
                    }
                    user = Some(u.clone());
                }
                _ => {
                    ret.result = Some(false);
                    ret.comment = "user not specified, but configured as a target for recursive ownership management".into();
                }
            }
        }
        if recurse.contains("group") {
            match &a.group {
                Some(g) if saltq_semantics::python::truthy(g) || g.is_number() => {
                    if super::group_to_gid(g).is_none() {
                        ret.result = Some(false);
                        ret.comment =
                            format!("Failed to enforce group ownership for group {}", py_str(g));
                    }
                    group = Some(g.clone());
                }
                _ => {
                    ret.result = Some(false);
                    ret.comment = "group not specified, but configured as a target for recursive ownership management".into();
                }
            }
        }
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
        for (root, dirs, files) in &walk_l {
            if !recurse.contains("ignore_files") {
                for f in files {
                    let full = PathBuf::from(format!("{root}/{f}"));
                    check_perms(
                        &full,
                        &mut ret,
                        user.as_ref(),
                        group.as_ref(),
                        fmode.as_deref(),
                        a.follow,
                        false,
                    );
                }
            }
            if !recurse.contains("ignore_dirs") {
                for d in dirs {
                    let full = PathBuf::from(format!("{root}/{d}"));
                    check_perms(
                        &full,
                        &mut ret,
                        user.as_ref(),
                        group.as_ref(),
                        dmode.as_deref(),
                        a.follow,
                        false,
                    );
                }
            }
        }
    }
    if clean {
        let removed = clean_candidates(&name, &walk_l, a.exclude_pat.as_deref());
        let mut gone: Vec<String> = Vec::new();
        for path in removed {
            let pp = Path::new(&path);
            // os.walk does not enter a directory removed before it got there.
            if gone.iter().any(|g| path.starts_with(&format!("{g}/"))) {
                continue;
            }
            let r = if pp.is_dir()
                && !std::fs::symlink_metadata(pp).is_ok_and(|m| m.file_type().is_symlink())
            {
                std::fs::remove_dir_all(pp)
            } else {
                std::fs::remove_file(pp)
            };
            let _ = r;
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
    if ret.comment.is_empty() {
        if a.children_only {
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
    Ok(ret)
}

/// `file.recurse`: every file under a `salt://` directory managed under `name`.
pub(super) async fn recurse(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    if call.args.contains_key("mode") {
        return Ok(error(
            ret,
            "'mode' is not allowed in 'file.recurse'. Please use 'file_mode' and 'dir_mode'.",
        ));
    }
    let dir_mode = call.arg("dir_mode").and_then(normalize_mode);
    let file_mode_arg = call.arg("file_mode").cloned();
    let keep_mode = matches!(&file_mode_arg, Some(Value::String(s)) if s.to_lowercase() == "keep");
    let file_mode = if keep_mode {
        None
    } else {
        file_mode_arg.as_ref().and_then(normalize_mode)
    };
    let user = call.arg("user").cloned();
    let group = call.arg("group").cloned();
    let u_check = check_user(user.as_ref(), group.as_ref(), call.test);
    if !u_check.is_empty() {
        return Ok(error(ret, u_check));
    }
    if !name.starts_with('/') {
        return Ok(error(
            ret,
            format!("Specified file {name} is not an absolute path"),
        ));
    }
    let sources: Vec<String> = match call.arg("source") {
        Some(Value::Array(a)) => a.iter().map(py_str).collect(),
        Some(v) => vec![py_str(v)],
        None => Vec::new(),
    }
    .into_iter()
    .map(|s| s.trim_end_matches('/').to_owned())
    .collect();
    for s in &sources {
        if !s.starts_with("salt://") {
            return Ok(error(
                ret,
                format!("Invalid source '{s}' (must be a salt:// URI)"),
            ));
        }
    }
    let Some(files) = call.ctx.files.clone() else {
        return Ok(error(
            ret,
            "Recurse failed: none of the specified sources were found",
        ));
    };
    // Salt's source_list over directories: the first that exists.
    let mut source = None;
    for s in &sources {
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
        return Ok(error(
            ret,
            "Recurse failed: none of the specified sources were found",
        ));
    };
    let master_dirs = files
        .list_dirs(&senv, &format!("{srcpath}/"))
        .await
        .unwrap_or_default();
    let all_dirs = files.list_dirs(&senv, &srcpath).await.unwrap_or_default();
    if !master_dirs.contains(&srcpath) && !all_dirs.contains(&srcpath) {
        ret.result = Some(false);
        ret.comment = format!(
            "The directory '{srcpath}' does not exist on the salt fileserver in saltenv '{senv}'"
        );
        return Ok(ret);
    }
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
                user.as_ref(),
                group.as_ref(),
                dir_mode.as_deref(),
            );
        }
    }
    let include_pat = str_arg(&call, "include_pat");
    let exclude_pat = str_arg(&call, "exclude_pat");
    let prefix = format!("{srcpath}/");
    let mut managed_files: Vec<(String, String)> = Vec::new();
    let mut managed_dirs: BTreeSet<String> = BTreeSet::new();
    let mut keep: BTreeSet<String> = BTreeSet::new();
    for f in files.list_files(&senv, &prefix).await.unwrap_or_default() {
        let Some(rel) = f.strip_prefix(&prefix) else {
            continue;
        };
        if rel.trim().is_empty()
            || !include_exclude(rel, include_pat.as_deref(), exclude_pat.as_deref())
        {
            continue;
        }
        let dest = format!("{name}/{rel}");
        managed_dirs.insert(dirname(&dest));
        keep.insert(dest.clone());
        let src = if senv == call.saltenv {
            format!("salt://{f}")
        } else {
            format!("salt://{f}?saltenv={senv}")
        };
        managed_files.push((dest, src));
    }
    if bool_arg(&call, "include_empty", false) {
        for d in files.list_dirs(&senv, &prefix).await.unwrap_or_default() {
            if let Some(rel) = d.strip_prefix(&prefix)
                && include_exclude(rel, include_pat.as_deref(), exclude_pat.as_deref())
            {
                let dest = format!("{name}/{rel}");
                managed_dirs.insert(dest.clone());
                keep.insert(dest);
            }
        }
    }
    let clean = bool_arg(&call, "clean", false);
    let replace = bool_arg(&call, "replace", true);
    let mut comments: Vec<(String, Vec<String>)> = Vec::new();
    let merge = |ret: &mut Ret, path: &str, sub: Ret, comments: &mut Vec<(String, Vec<String>)>| {
        if sub.result == Some(false) || ret.result == Some(true) {
            ret.result = sub.result;
        }
        if sub.result != Some(true) && !sub.comment.is_empty() {
            match comments.iter_mut().find(|(p, _)| p == path) {
                Some((_, v)) => v.push(sub.comment.clone()),
                None => comments.push((path.to_owned(), vec![sub.comment.clone()])),
            }
        }
        if !sub.changes.is_empty() {
            ret.changes
                .insert(path.to_owned(), Value::Object(sub.changes));
        }
    };
    for d in &managed_dirs {
        let mut args = Map::new();
        args.insert("user".into(), user.clone().unwrap_or(Value::Null));
        args.insert("group".into(), group.clone().unwrap_or(Value::Null));
        args.insert(
            "dir_mode".into(),
            dir_mode.clone().map_or(Value::Null, Value::from),
        );
        args.insert("makedirs".into(), true.into());
        let sub = StateCall {
            name: d.clone(),
            args,
            ..call.clone()
        };
        let r = directory(sub).await?;
        merge(&mut ret, d, r, &mut comments);
    }
    for (dest, src) in &managed_files {
        if clean && Path::new(dest).is_dir() && replace {
            let mut r = Ret::new(name.clone());
            if call.test {
                r.comment = format!("Replacing directory {dest} with a file");
                r.result = None;
                merge(&mut ret, dest, r, &mut comments);
                continue;
            }
            let _ = std::fs::remove_dir_all(dest);
            r.changes
                .insert("diff".into(), "Replaced directory with a new file".into());
            merge(&mut ret, dest, r, &mut comments);
        }
        let mut args = Map::new();
        for (k, v) in &call.args {
            if ![
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
            ]
            .contains(&k.as_str())
            {
                args.insert(k.clone(), v.clone());
            }
        }
        args.insert("source".into(), src.clone().into());
        args.insert(
            "mode".into(),
            if keep_mode {
                "keep".into()
            } else {
                file_mode.clone().map_or(Value::Null, Value::from)
            },
        );
        args.insert("makedirs".into(), true.into());
        args.insert("replace".into(), replace.into());
        let sub = StateCall {
            name: dest.clone(),
            args,
            ..call.clone()
        };
        let r = super::managed::managed(sub).await?;
        merge(&mut ret, dest, r, &mut comments);
    }
    if clean {
        let walk_l = walk(&name, None);
        let mut removed = Vec::new();
        for (root, dirs, fls) in &walk_l {
            for f in fls.iter().chain(dirs.iter()) {
                let path = format!("{root}/{f}");
                if keep.contains(&path) || keep.iter().any(|k| k.starts_with(&format!("{path}/"))) {
                    continue;
                }
                let rel = path.strip_prefix(&format!("{name}/")).unwrap_or(&path);
                if !include_exclude(rel, None, exclude_pat.as_deref()) {
                    continue;
                }
                removed.push(path);
            }
        }
        if !removed.is_empty() {
            if call.test {
                if ret.result == Some(true) {
                    ret.result = None;
                }
                match comments.iter_mut().find(|(p, _)| p == "removed") {
                    Some((_, v)) => v.extend(removed),
                    None => comments.push(("removed".into(), removed)),
                }
            } else {
                // os.walk does not enter a directory removed before it got there.
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
                let removed = gone;
                ret.changes.insert(
                    "removed".into(),
                    Value::Array(removed.into_iter().map(Value::from).collect()),
                );
            }
        }
    }
    ret.comment = comments
        .iter()
        .map(|(k, v)| format!("\n#### {k} ####\n{}", v.join("\n")))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned();
    if ret.comment.is_empty() {
        ret.comment = format!("Recursively updated {name}");
    }
    if ret.changes.is_empty() && ret.result == Some(true) {
        ret.comment = format!("The directory {name} is in the correct state");
    }
    Ok(ret)
}
