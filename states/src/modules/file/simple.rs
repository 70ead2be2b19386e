//! The small file states: `file.absent`, `file.exists`, `file.missing`, `file.touch`,
//! `file.symlink`, `file.copy`, `file.rename`.

use std::path::Path;

use saltq_exec::{Lit, Param};
use serde_json::Value;

use super::{
    Ret, StateCall, bool_arg, check_perms, check_user, dirname, error, group_name, makedirs,
    name_of, normalize_mode, os_error, py_str, str_arg,
};
use crate::modules::StateError;

/// Whether anything (even a dangling symlink) is at `p` (Python's `os.path.lexists`).
fn lexists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// Salt's `file.remove`: a file or link unlinked, a directory removed with its contents.
fn remove(p: &Path) -> std::io::Result<()> {
    if !is_link(p) && p.is_dir() {
        std::fs::remove_dir_all(p)
    } else {
        std::fs::remove_file(p)
    }
}

/// `file.absent`.
pub(super) async fn absent(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.absent"));
    }
    if !name.starts_with('/') {
        return Ok(error(
            ret,
            format!("Specified file {name} is not an absolute path"),
        ));
    }
    if name == "/" {
        return Ok(error(ret, "Refusing to make \"/\" absent"));
    }
    let p = Path::new(&name);
    let kind = if p.is_file() || is_link(p) {
        "File"
    } else if p.is_dir() {
        "Directory"
    } else {
        ret.comment = format!("File {name} is not present");
        return Ok(ret);
    };
    if call.test {
        ret.result = None;
        ret.changes.insert("removed".into(), name.clone().into());
        ret.comment = format!("{kind} {name} is set for removal");
        return Ok(ret);
    }
    match remove(p) {
        Ok(()) => {
            ret.comment = format!("Removed {} {name}", kind.to_lowercase());
            ret.changes.insert("removed".into(), name.clone().into());
            Ok(ret)
        }
        Err(_) if kind == "Directory" => {
            Ok(error(ret, format!("Failed to remove directory {name}")))
        }
        Err(e) => Ok(error(ret, os_error(&e, &name))),
    }
}

/// `file.exists`.
pub(super) async fn exists(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.exists"));
    }
    if !Path::new(&name).exists() {
        return Ok(error(ret, format!("Specified path {name} does not exist")));
    }
    ret.comment = format!("Path {name} exists");
    Ok(ret)
}

/// `file.missing`.
pub(super) async fn missing(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.missing"));
    }
    if Path::new(&name).exists() {
        return Ok(error(ret, format!("Specified path {name} exists")));
    }
    ret.comment = format!("Path {name} is missing");
    Ok(ret)
}

/// Seconds since the epoch from an argument (`atime`/`mtime`).
fn epoch(v: Option<&Value>) -> Option<i64> {
    v.and_then(|v| match v {
        Value::Number(n) => n.as_f64().map(|f| f as i64),
        Value::String(s) => s.trim().parse::<f64>().ok().map(|f| f as i64),
        _ => None,
    })
}

/// `file.touch`.
pub(super) async fn touch(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    ret.result = None;
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.touch"));
    }
    if !name.starts_with('/') {
        return Ok(error(
            ret,
            format!("Specified file {name} is not an absolute path"),
        ));
    }
    let p = Path::new(&name);
    let atime = epoch(call.arg("atime"));
    let mtime = epoch(call.arg("mtime"));
    if call.test {
        ret.changes.insert("new".into(), name.clone().into());
        if !p.exists() {
            ret.comment = format!("File {name} is set to be created");
        } else {
            use std::os::unix::fs::MetadataExt;
            let md = std::fs::symlink_metadata(p).ok();
            let differs = |want: Option<i64>, got: Option<i64>| want.is_some() && want != got;
            if differs(atime, md.as_ref().map(|m| m.atime()))
                || differs(mtime, md.as_ref().map(|m| m.mtime()))
            {
                ret.comment = format!("Times set to be updated on file {name}");
                ret.changes.clear();
                ret.changes.insert("touched".into(), name.clone().into());
            } else {
                ret.result = Some(true);
                ret.comment = format!("File {name} exists and has the correct times");
            }
        }
        return Ok(ret);
    }
    if bool_arg(&call, "makedirs", false)
        && let Err(e) = makedirs(&name, None, None, None)
    {
        return Ok(error(ret, os_error(&e, &dirname(&name))));
    }
    if !Path::new(&dirname(&name)).is_dir() {
        return Ok(error(
            ret,
            format!("Directory not present to touch file {name}"),
        ));
    }
    let extant = p.exists();
    let ok = touch_file(p, atime, mtime).is_ok();
    ret.result = Some(ok);
    if ok && !extant {
        ret.comment = format!("Created empty file {name}");
        ret.changes.insert("new".into(), name.clone().into());
    } else if ok {
        let what = if p.is_dir() { "directory" } else { "file" };
        ret.comment = format!("Updated times on {what} {name}");
        ret.changes.insert("touched".into(), name.clone().into());
    }
    Ok(ret)
}

/// Salt's `file.touch`: creates the file if missing and sets its times (now by default).
fn touch_file(p: &Path, atime: Option<i64>, mtime: Option<i64>) -> std::io::Result<()> {
    if !p.exists() {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)?;
    }
    let now = std::time::SystemTime::now();
    let at = |s: Option<i64>| {
        s.map_or(now, |s| {
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(s.max(0) as u64)
        })
    };
    let times = std::fs::FileTimes::new()
        .set_accessed(at(atime.or(mtime)))
        .set_modified(at(mtime.or(atime)));
    let f = std::fs::File::options()
        .write(true)
        .open(p)
        .or_else(|_| std::fs::File::open(p))?;
    f.set_times(times)
}

/// `file.symlink`'s parameters.
pub(super) const SYMLINK_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::req("target"),
    Param::opt("force", Lit::Bool(false)),
    Param::opt("backupname", Lit::None),
    Param::opt("makedirs", Lit::Bool(false)),
    Param::opt("user", Lit::None),
    Param::opt("group", Lit::None),
    Param::opt("mode", Lit::None),
    Param::opt("win_owner", Lit::None),
    Param::opt("win_perms", Lit::None),
    Param::opt("win_deny_perms", Lit::None),
    Param::opt("win_inheritance", Lit::None),
    Param::opt("atomic", Lit::Bool(false)),
    Param::opt("disallow_copy_and_unlink", Lit::Bool(false)),
    Param::opt("inherit_user_and_group", Lit::Bool(false)),
    Param::opt("follow_symlinks", Lit::Bool(true)),
];

/// The minion's user (`user` option, `root` by default) and its primary group.
fn default_owner(
    call: &StateCall,
    user: Option<String>,
    group: Option<String>,
) -> (String, String) {
    let user = user.unwrap_or_else(|| {
        call.ctx
            .opt("user")
            .map(py_str)
            .unwrap_or_else(|| "root".into())
    });
    let group = group.unwrap_or_else(|| {
        nix::unistd::User::from_name(&user)
            .ok()
            .flatten()
            .map_or_else(|| group_name(0), |u| group_name(u.gid.as_raw()))
    });
    (user, group)
}

fn link_owner(p: &Path) -> (String, String) {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(p).map_or_else(
        |_| (String::new(), String::new()),
        |m| (super::user_name(m.uid()), group_name(m.gid())),
    )
}

/// Salt's refusal of a `file.symlink` whose owner is unknown or whose name is relative: the
/// errors joined (with a closing `.` when there are several).
fn symlink_errors(
    name: &str,
    user: &str,
    group: &str,
    user_known: bool,
    group_known: bool,
) -> Option<String> {
    let mut errors = Vec::new();
    if !user_known {
        errors.push(format!("User {user} does not exist"));
    }
    if !group_known {
        errors.push(format!("Group {group} does not exist"));
    }
    if !name.starts_with('/') {
        errors.push(format!("Specified file {name} is not an absolute path"));
    }
    if errors.is_empty() {
        return None;
    }
    let mut msg = errors.join(". ");
    if errors.len() > 1 {
        msg.push('.');
    }
    Some(msg)
}

/// What is at a symlink's name, as read from the system.
#[derive(Debug, Clone, Default)]
struct LinkFacts {
    /// Something is there (following symlinks with `follow_symlinks`).
    exists: bool,
    /// The current link's target, when a symlink is there.
    link_target: Option<String>,
    /// The link's owner and group names.
    owner: (String, String),
}

/// The test-mode answer for a symlink: result, comment and changes.
type LinkCheck = (Option<bool>, String, Vec<(&'static str, String)>);

/// Salt's `_symlink_check`: what test mode reports for a symlink `name` to `target` owned by
/// `user:group`.
fn symlink_check(
    name: &str,
    target: &str,
    owner: (&str, &str),
    force: bool,
    f: &LinkFacts,
) -> LinkCheck {
    let (user, group) = owner;
    let Some(cur) = &f.link_target else {
        if !f.exists {
            return (
                None,
                format!("Symlink {name} to {target} is set for creation"),
                vec![("new", name.to_owned())],
            );
        }
        if force {
            return (
                None,
                format!(
                    "The file or directory {name} is set for removal to make way for a new \
                     symlink targeting {target}"
                ),
                vec![],
            );
        }
        return (
            Some(false),
            format!(
                "File or directory exists where the symlink {name} should be. Did you mean to \
                 use force?"
            ),
            vec![],
        );
    };
    if cur != target {
        return (
            None,
            format!("Link {name} target is set to be changed to {target}"),
            vec![("change", name.to_owned())],
        );
    }
    let (cu, cg) = &f.owner;
    if (cu.as_str(), cg.as_str()) != (user, group) {
        return (
            None,
            format!(
                "The symlink {name} is present, but the ownership of the symlink would be \
                 changed from {cu}:{cg} to {user}:{group}"
            ),
            vec![("ownership", format!("{cu}:{cg}"))],
        );
    }
    (Some(true), format!("The symlink {name} is present"), vec![])
}

/// Where `backupname` puts what stands at `name`: an absolute path as given, a bare file
/// name beside `name`, anything else refused.
fn symlink_backup_path(name: &str, backup: &str) -> Result<String, String> {
    if backup.starts_with('/') {
        Ok(backup.to_owned())
    } else if !backup.contains('/') {
        Ok(format!("{}/{backup}", dirname(&normpath(name))))
    } else {
        Err(format!(
            "Backupname must be an absolute path or a file name: {backup}"
        ))
    }
}

/// The user and group a symlink should have, from the arguments, the link itself
/// (`inherit_user_and_group`) and the defaults.
fn symlink_owner(call: &StateCall, p: &Path) -> (String, String) {
    let mut user = str_arg(call, "user");
    let mut group = str_arg(call, "group");
    if bool_arg(call, "inherit_user_and_group", false)
        && (user.is_none() || group.is_none())
        && is_link(p)
    {
        let (u, g) = link_owner(p);
        user.get_or_insert(u);
        group.get_or_insert(g);
    }
    default_owner(call, user, group)
}

/// Reads what is at the symlink's name for `symlink_check`.
fn look_at_link(p: &Path, follow: bool) -> LinkFacts {
    LinkFacts {
        exists: if follow { p.exists() } else { lexists(p) },
        link_target: is_link(p).then(|| {
            std::fs::read_link(p)
                .map(|t| t.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        owner: link_owner(p),
    }
}

/// `file.symlink`.
pub(super) async fn symlink(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.symlink"));
    }
    let target = str_arg(&call, "target").unwrap_or_default();
    let force = bool_arg(&call, "force", false);
    let follow = bool_arg(&call, "follow_symlinks", true);
    let p = Path::new(&name);
    let (user, group) = symlink_owner(&call, p);
    if let Some(msg) = symlink_errors(
        &name,
        &user,
        &group,
        super::user_to_uid(&Value::from(user.clone())).is_some(),
        super::group_to_gid(&Value::from(group.clone())).is_some(),
    ) {
        return Ok(error(ret, msg));
    }
    let facts = look_at_link(p, follow);
    let (tresult, mut tcomment, tchanges) =
        symlink_check(&name, &target, (&user, &group), force, &facts);
    if let Err(e) = symlink_parent(&call, &name, (&user, &group), &mut tcomment) {
        return Ok(error(ret, e));
    }
    if call.test {
        ret.result = tresult;
        ret.comment = tcomment;
        for (k, v) in tchanges {
            ret.changes.insert(k.into(), v.into());
        }
        return Ok(ret);
    }
    let owner = (user.as_str(), group.as_str());
    let ret = match make_way_for_link(&call, ret, p, &target, owner, facts.exists) {
        Ok(ret) => ret,
        Err(answer) => return Ok(*answer),
    };
    Ok(create_link(ret, p, &target, owner))
}

/// The symlink's missing parent directory: made with `makedirs` (or said to be, in test
/// mode), else noted in test mode or refused.
fn symlink_parent(
    call: &StateCall,
    name: &str,
    (user, group): (&str, &str),
    tcomment: &mut String,
) -> Result<(), String> {
    let parent = dirname(name);
    if Path::new(&parent).is_dir() {
        return Ok(());
    }
    if bool_arg(call, "makedirs", false) {
        if call.test {
            tcomment.push_str(&format!("\n{parent} will be created"));
            return Ok(());
        }
        let mode = call.arg("mode").and_then(normalize_mode);
        let (u, g) = (Value::from(user), Value::from(group));
        return makedirs(name, Some(&u), Some(&g), mode.as_deref())
            .map_err(|e| os_error(&e, &parent));
    }
    if call.test {
        tcomment.push_str(&format!("\nDirectory {parent} for symlink is not present"));
        return Ok(());
    }
    Err(format!("Directory {parent} for symlink is not present"))
}

/// Whether the link at `p` is owned by `user:group`.
fn owned_by(p: &Path, (user, group): (&str, &str)) -> bool {
    link_owner(p) == (user.to_owned(), group.to_owned())
}

/// Clears the way for the new link: a link to elsewhere is removed, a right one only gets
/// its owner fixed (the answer, as `Err`); anything else is backed up, removed when forced
/// or atomic, or refused.
fn make_way_for_link(
    call: &StateCall,
    mut ret: Ret,
    p: &Path,
    target: &str,
    owner: (&str, &str),
    exists: bool,
) -> Result<Ret, Box<Ret>> {
    let name = p.to_string_lossy().into_owned();
    let (user, group) = owner;
    if is_link(p) {
        let cur = std::fs::read_link(p)
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_default();
        if normpath(&cur) != normpath(target) {
            let _ = std::fs::remove_file(p);
            return Ok(ret);
        }
        if owned_by(p, owner) {
            ret.comment = format!("Symlink {name} is present and owned by {user}:{group}");
        } else if set_link_owner(p, user, group) && owned_by(p, owner) {
            ret.comment = format!("Set ownership of symlink {name} to {user}:{group}");
            ret.changes
                .insert("ownership".into(), format!("{user}:{group}").into());
        } else {
            ret.result = Some(false);
            ret.comment = format!("Failed to set ownership of symlink {name} to {user}:{group}");
        }
        return Err(Box::new(ret));
    }
    if !exists {
        return Ok(ret);
    }
    if let Some(backup) = str_arg(call, "backupname") {
        return backup_for_link(call, ret, p, target, &backup);
    }
    if !bool_arg(call, "force", false) && !bool_arg(call, "atomic", false) {
        let kind = if p.is_file() {
            "File"
        } else if p.is_dir() {
            "Directory"
        } else {
            "File system entry"
        };
        return Err(Box::new(error(
            ret,
            format!("{kind} exists where the symlink {name} should be"),
        )));
    }
    if let Err(e) = remove(p) {
        return Err(Box::new(error(
            ret,
            format!(
                "Unable to create new symlink {name} -> {target}: {}",
                os_error(&e, &name)
            ),
        )));
    }
    Ok(ret)
}

/// Moves what stands at the link's name to `backupname` (replacing an old backup only when
/// forced).
fn backup_for_link(
    call: &StateCall,
    ret: Ret,
    p: &Path,
    target: &str,
    backup: &str,
) -> Result<Ret, Box<Ret>> {
    let name = p.to_string_lossy().into_owned();
    let backup = match symlink_backup_path(&name, backup) {
        Ok(b) => b,
        Err(e) => return Err(Box::new(error(ret, e))),
    };
    if lexists(Path::new(&backup)) {
        if !bool_arg(call, "force", false) {
            return Err(Box::new(error(
                ret,
                format!(
                    "Symlink & backup dest exists and Force not set. {name} -> {target} - backup: \
                     {backup}"
                ),
            )));
        }
        let _ = remove(Path::new(&backup));
    }
    if let Err(e) = std::fs::rename(p, &backup) {
        return Err(Box::new(error(
            ret,
            format!(
                "Unable to rename {name} to backup {backup} -> : {}",
                os_error(&e, &name)
            ),
        )));
    }
    Ok(ret)
}

/// Creates the link and sets its owner.
fn create_link(mut ret: Ret, p: &Path, target: &str, owner: (&str, &str)) -> Ret {
    let name = p.to_string_lossy().into_owned();
    if let Err(e) = std::os::unix::fs::symlink(target, p) {
        return error(
            ret,
            format!(
                "Unable to create new symlink {name} -> {target}: {}",
                os_error(&e, &name)
            ),
        );
    }
    let (user, group) = owner;
    ret.comment = format!("Created new symlink {name} -> {target}");
    ret.changes.insert("new".into(), name.clone().into());
    if !(owned_by(p, owner) || set_link_owner(p, user, group) && owned_by(p, owner)) {
        ret.result = Some(false);
        ret.comment.push_str(&format!(
            ", but was unable to set ownership to {user}:{group}"
        ));
    }
    ret
}

fn set_link_owner(p: &Path, user: &str, group: &str) -> bool {
    let uid = super::user_to_uid(&Value::from(user));
    let gid = super::group_to_gid(&Value::from(group));
    std::os::unix::fs::lchown(p, uid, gid).is_ok()
}

/// Python's `os.path.normpath` for absolute and relative paths.
fn normpath(path: &str) -> String {
    let abs = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            ".." if abs => {}
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (abs, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// `file.copy`.
pub(super) async fn copy(call: StateCall) -> Result<Ret, StateError> {
    let mut name = name_of(&call);
    let source = super::expand_user(&str_arg(&call, "source").unwrap_or_default());
    let mut ret = Ret::new(name.clone());
    ret.comment = format!("Copied \"{source}\" to \"{name}\"");
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.copy"));
    }
    if !name.starts_with('/') {
        return Ok(error(
            ret,
            format!("Specified file {name} is not an absolute path"),
        ));
    }
    let sp = Path::new(&source);
    if !sp.exists() {
        return Ok(error(
            ret,
            format!("Source file \"{source}\" is not present"),
        ));
    }
    let preserve = bool_arg(&call, "preserve", false);
    let (user, group, mode) = if preserve {
        let m = super::stat_meta(sp, true);
        (
            m.as_ref().map(|m| m.user.clone()),
            m.as_ref().map(|m| m.group.clone()),
            m.map(|m| m.mode),
        )
    } else {
        let (u, g) = default_owner(&call, str_arg(&call, "user"), str_arg(&call, "group"));
        let u_check = check_user(
            Some(&Value::from(u.clone())),
            Some(&Value::from(g.clone())),
            call.test,
        );
        if !u_check.is_empty() {
            return Ok(error(ret, u_check));
        }
        let mode = call
            .arg("mode")
            .and_then(normalize_mode)
            .or_else(|| super::stat_meta(sp, true).map(|m| m.mode));
        (Some(u), Some(g), mode)
    };
    if Path::new(&name).is_dir() && bool_arg(&call, "subdir", false) {
        let base = source.rsplit('/').next().unwrap_or_default();
        name = format!("{}/{base}", name.trim_end_matches('/'));
    }
    let np = Path::new(&name).to_path_buf();
    let force = bool_arg(&call, "force", false);
    let mut changed = true;
    if lexists(sp) && lexists(&np) {
        if force && np.is_file() && std::fs::read(&np).ok() == std::fs::read(sp).ok() {
            ret.comment = format!(
                "{} - files are identical but force flag is set",
                ret.comment
            );
        }
        if !force {
            changed = false;
        } else if !call.test && remove(&np).is_err() {
            return Ok(error(
                ret,
                format!("Failed to delete \"{name}\" in preparation for forced move"),
            ));
        }
    }
    if call.test {
        if changed {
            ret.comment = format!("File \"{source}\" is set to be copied to \"{name}\"");
            ret.result = None;
        } else {
            ret.comment = format!("The target file \"{name}\" exists and will not be overwritten");
        }
        return Ok(ret);
    }
    if !changed {
        ret.comment = format!("The target file \"{name}\" exists and will not be overwritten");
        return Ok(ret);
    }
    let dname = dirname(&name);
    if !Path::new(&dname).is_dir() {
        if bool_arg(&call, "makedirs", false) {
            let dir_mode = call.arg("dir_mode").and_then(normalize_mode).or_else(|| {
                mode.as_ref().map(|m| {
                    let d: Vec<char> = m.chars().collect();
                    d[d.len().saturating_sub(3)..]
                        .iter()
                        .map(|c| match c.to_digit(8) {
                            Some(0) | None => *c,
                            Some(x) => char::from_digit(x | 1, 8).unwrap_or(*c),
                        })
                        .collect::<String>()
                })
            });
            let u = user.clone().map(Value::from);
            let g = group.clone().map(Value::from);
            if let Err(e) = makedirs(&name, u.as_ref(), g.as_ref(), dir_mode.as_deref()) {
                return Ok(error(ret, os_error(&e, &dname)));
            }
        } else {
            return Ok(error(
                ret,
                format!("The target directory {dname} is not present"),
            ));
        }
    }
    let copied = if sp.is_dir() {
        copy_tree(sp, &np)
    } else {
        std::fs::copy(sp, &np).map(|_| ())
    };
    if copied.is_err() {
        return Ok(error(
            ret,
            format!("Failed to copy \"{source}\" to \"{name}\""),
        ));
    }
    ret.changes.insert(name.clone(), source.clone().into());
    if !preserve {
        let mut check = ret.clone();
        let u = user.map(Value::from);
        let g = group.map(Value::from);
        check_perms(
            &np,
            &mut check,
            u.as_ref(),
            g.as_ref(),
            mode.as_deref(),
            true,
            false,
        );
        if check.result != Some(true) {
            ret.result = check.result;
            ret.comment = check.comment;
        } else {
            ret.changes = check.changes;
            ret.comment = check.comment;
        }
    }
    Ok(ret)
}

/// `shutil.copytree(src, dst, symlinks=True)`.
fn copy_tree(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir(dst)?;
    std::fs::set_permissions(dst, std::fs::metadata(src)?.permissions())?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let from = entry.path();
        let to = dst.join(entry.file_name());
        let ft = entry.file_type()?;
        if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&from)?, &to)?;
        } else if ft.is_dir() {
            copy_tree(&from, &to)?;
        } else {
            std::fs::copy(&from, &to)?;
        }
    }
    Ok(())
}

/// `file.rename`.
pub(super) async fn rename(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let source = super::expand_user(&str_arg(&call, "source").unwrap_or_default());
    let mut ret = Ret::new(name.clone());
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.rename"));
    }
    if !name.starts_with('/') {
        return Ok(error(
            ret,
            format!("Specified file {name} is not an absolute path"),
        ));
    }
    let (sp, np) = (Path::new(&source), Path::new(&name));
    if !lexists(sp) {
        ret.comment = format!("Source file \"{source}\" has already been moved out of place");
        return Ok(ret);
    }
    if lexists(np) {
        if !bool_arg(&call, "force", false) {
            ret.comment = format!("The target file \"{name}\" exists and will not be overwritten");
            return Ok(ret);
        } else if !call.test && remove(np).is_err() {
            return Ok(error(
                ret,
                format!("Failed to delete \"{name}\" in preparation for forced move"),
            ));
        }
    }
    if call.test {
        ret.comment = format!("File \"{source}\" is set to be moved to \"{name}\"");
        ret.result = None;
        return Ok(ret);
    }
    let dname = dirname(&name);
    if !Path::new(&dname).is_dir() {
        if bool_arg(&call, "makedirs", false) {
            if let Err(e) = makedirs(&name, None, None, None) {
                return Ok(error(ret, os_error(&e, &dname)));
            }
        } else {
            return Ok(error(
                ret,
                format!("The target directory {dname} is not present"),
            ));
        }
    }
    let moved = if is_link(sp) {
        std::fs::read_link(sp)
            .and_then(|t| std::os::unix::fs::symlink(t, np))
            .and_then(|()| std::fs::remove_file(sp))
    } else {
        std::fs::rename(sp, np).or_else(|_| {
            if sp.is_dir() {
                copy_tree(sp, np).and_then(|()| std::fs::remove_dir_all(sp))
            } else {
                std::fs::copy(sp, np).and_then(|_| std::fs::remove_file(sp))
            }
        })
    };
    if moved.is_err() {
        return Ok(error(
            ret,
            format!("Failed to move \"{source}\" to \"{name}\""),
        ));
    }
    ret.comment = format!("Moved \"{source}\" to \"{name}\"");
    ret.changes.insert(name.clone(), source.into());
    Ok(ret)
}

/// `file.hardlink`'s parameters.
pub(super) const HARDLINK_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::req("target"),
    Param::opt("force", Lit::Bool(false)),
    Param::opt("makedirs", Lit::Bool(false)),
    Param::opt("user", Lit::None),
    Param::opt("group", Lit::None),
    Param::opt("dir_mode", Lit::None),
];

/// Salt's `file.is_hardlink`: a regular file with more than one link.
fn is_hardlink(p: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() && m.nlink() > 1)
}

fn same_inode(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::symlink_metadata(a), std::fs::symlink_metadata(b)) {
        (Ok(x), Ok(y)) => x.ino() == y.ino() && x.dev() == y.dev(),
        _ => false,
    }
}

/// `file.hardlink`.
pub(super) async fn hardlink(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.hardlink"));
    }
    let target = str_arg(&call, "target").unwrap_or_default();
    let force = bool_arg(&call, "force", false);
    let (user, group) = default_owner(&call, str_arg(&call, "user"), str_arg(&call, "group"));
    let mut errors = Vec::new();
    if super::user_to_uid(&Value::from(user.clone())).is_none() {
        errors.push(format!("User {user} does not exist"));
    }
    if super::group_to_gid(&Value::from(group.clone())).is_none() {
        errors.push(format!("Group {group} does not exist"));
    }
    if !name.starts_with('/') {
        errors.push(format!("Specified file {name} is not an absolute path"));
    }
    if !target.starts_with('/') {
        errors.push(format!("Specified target {target} is not an absolute path"));
    }
    if !errors.is_empty() {
        let mut msg = errors.join(". ");
        if errors.len() > 1 {
            msg.push('.');
        }
        return Ok(error(ret, msg));
    }
    let (np, tp) = (Path::new(&name), Path::new(&target));
    if call.test {
        let (result, comment, change) = if !tp.exists() {
            (
                Some(false),
                format!("Target {target} for hard link does not exist"),
                None,
            )
        } else if tp.is_dir() {
            (
                Some(false),
                format!("Unable to hard link from directory {target}"),
                None,
            )
        } else if np.is_dir() {
            (
                Some(false),
                format!("Unable to hard link to directory {name}"),
                None,
            )
        } else if !np.exists() {
            (
                None,
                format!("Hard link {name} to {target} is set for creation"),
                Some("new"),
            )
        } else if is_hardlink(np) && same_inode(np, tp) {
            (
                Some(true),
                format!("The hard link {name} is presently targetting {target}"),
                None,
            )
        } else if is_hardlink(np) {
            (
                None,
                format!("Link {name} target is set to be changed to {target}"),
                Some("change"),
            )
        } else if force {
            (
                None,
                format!(
                    "The file or directory {name} is set for removal to make way for a new hard \
                     link targeting {target}"
                ),
                None,
            )
        } else {
            (
                Some(false),
                format!(
                    "File or directory exists where the hard link {name} should be. Did you mean \
                     to use force?"
                ),
                None,
            )
        };
        ret.result = result;
        ret.comment = comment;
        if let Some(k) = change {
            ret.changes.insert(k.into(), name.clone().into());
        }
        return Ok(ret);
    }
    for (direction, item) in [("to", &name), ("from", &target)] {
        if Path::new(item).is_dir() {
            return Ok(error(
                ret,
                format!("Unable to hard link {direction} directory {item}"),
            ));
        }
    }
    if !tp.exists() {
        return Ok(error(
            ret,
            format!("Target {target} for hard link does not exist"),
        ));
    }
    let parent = dirname(&name);
    if !Path::new(&parent).is_dir() {
        if bool_arg(&call, "makedirs", false) {
            let mode = call.arg("dir_mode").and_then(normalize_mode);
            let (u, g) = (Value::from(user.clone()), Value::from(group.clone()));
            if let Err(e) = makedirs(&name, Some(&u), Some(&g), mode.as_deref()) {
                return Ok(error(ret, os_error(&e, &parent)));
            }
        } else {
            return Ok(error(
                ret,
                format!("Directory {parent} for hard link is not present"),
            ));
        }
    }
    if np.is_file() && !is_hardlink(np) {
        if !force {
            return Ok(error(
                ret,
                format!("File exists where the hard link {name} should be"),
            ));
        }
        let _ = std::fs::remove_file(np);
        ret.changes.insert(
            "forced".into(),
            "File for hard link was forcibly replaced".into(),
        );
    }
    if is_hardlink(np) {
        if same_inode(np, tp) {
            ret.comment = format!("Target of hard link {name} is already pointing to {target}");
            return Ok(ret);
        }
        let _ = std::fs::remove_file(np);
        if let Err(e) = std::fs::hard_link(tp, np) {
            ret.result = Some(false);
            ret.comment = format!(
                "Unable to set target of hard link {name} -> {target}: {}",
                os_error(&e, &name)
            );
            return Ok(ret);
        }
        ret.comment = format!("Set target of hard link {name} -> {target}");
        ret.changes.insert("new".into(), name.clone().into());
    } else if !np.exists() {
        if let Err(e) = std::fs::hard_link(tp, np) {
            ret.result = Some(false);
            ret.comment = format!(
                "Unable to create new hard link {name} -> {target}: {}",
                os_error(&e, &name)
            );
            return Ok(ret);
        }
        ret.comment = format!("Created new hard link {name} -> {target}");
        ret.changes.insert("new".into(), name.clone().into());
    }
    Ok(ret)
}

/// `file.decode`'s parameters.
pub(super) const DECODE_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("encoded_data", Lit::None),
    Param::opt("contents_pillar", Lit::None),
    Param::opt("encoding_type", Lit::Str("base64")),
    Param::opt("checksum", Lit::Str("md5")),
];

/// `file.decode`: base64 data (inline or from the pillar) written to `name`.
pub(super) async fn decode(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    ret.result = Some(false);
    let encoded = call
        .arg("encoded_data")
        .filter(|v| saltq_semantics::python::truthy(v));
    let pillar_key = call
        .arg("contents_pillar")
        .filter(|v| saltq_semantics::python::truthy(v));
    let content = match (encoded, pillar_key) {
        (None, None) => {
            return Err(StateError(
                "Specify either the 'encoded_data' or 'contents_pillar' argument.".into(),
            ));
        }
        (Some(_), Some(_)) => {
            return Err(StateError(
                "Specify only one 'encoded_data' or 'contents_pillar' argument.".into(),
            ));
        }
        (Some(e), None) => py_str(e),
        (None, Some(k)) => {
            let pillar = call.ctx.pillar();
            let mut cur = Some(&pillar);
            for part in py_str(k).split(':') {
                cur = cur.and_then(|c| c.get(part));
            }
            match cur {
                Some(Value::Bool(false)) | None => {
                    return Err(StateError("Pillar data not found.".into()));
                }
                Some(v) => py_str(v),
            }
        }
    };
    let checksum = str_arg(&call, "checksum").unwrap_or_else(|| "md5".into());
    let data = saltq_semantics::python::b64decode(&content).unwrap_or_default();
    let insum = super::managed::hash_bytes(&data, &checksum).unwrap_or_default();
    let p = Path::new(&name);
    if p.is_file() {
        let outsum = std::fs::read(p)
            .ok()
            .and_then(|d| super::managed::hash_bytes(&d, &checksum))
            .unwrap_or_default();
        if insum == outsum {
            ret.comment = "File is in the correct state.".into();
            ret.result = Some(true);
            return Ok(ret);
        }
        ret.changes.insert("old".into(), outsum.into());
        ret.changes.insert("new".into(), insum.clone().into());
    }
    if call.test {
        ret.comment = "File is set to be updated.".into();
        ret.result = None;
        return Ok(ret);
    }
    ret.result = Some(std::fs::write(p, &data).is_ok());
    ret.comment = "File was updated.".into();
    if ret.changes.is_empty() {
        ret.changes.insert("old".into(), Value::Null);
        ret.changes.insert("new".into(), insum.into());
    }
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(target: &str, owner: (&str, &str)) -> LinkFacts {
        LinkFacts {
            exists: true,
            link_target: Some(target.into()),
            owner: (owner.0.into(), owner.1.into()),
        }
    }

    #[test]
    fn symlink_errors_are_joined() {
        assert_eq!(symlink_errors("/l", "u", "g", true, true), None);
        assert_eq!(
            symlink_errors("/l", "u", "g", false, true).as_deref(),
            Some("User u does not exist")
        );
        assert_eq!(
            symlink_errors("l", "u", "g", true, false).as_deref(),
            Some("Group g does not exist. Specified file l is not an absolute path.")
        );
    }

    #[test]
    fn check_new_and_blocked() {
        let nothing = LinkFacts::default();
        assert_eq!(
            symlink_check("/l", "/t", ("u", "g"), false, &nothing),
            (
                None,
                "Symlink /l to /t is set for creation".into(),
                vec![("new", "/l".into())]
            )
        );
        let file = LinkFacts {
            exists: true,
            ..LinkFacts::default()
        };
        assert_eq!(
            symlink_check("/l", "/t", ("u", "g"), false, &file).0,
            Some(false)
        );
        let forced = symlink_check("/l", "/t", ("u", "g"), true, &file);
        assert_eq!(forced.0, None);
        assert!(
            forced
                .1
                .starts_with("The file or directory /l is set for removal")
        );
        // A dangling link is still a link.
        let dangling = LinkFacts {
            exists: false,
            ..link("/gone", ("u", "g"))
        };
        assert_eq!(
            symlink_check("/l", "/t", ("u", "g"), false, &dangling).2,
            vec![("change", "/l".to_string())]
        );
    }

    #[test]
    fn check_existing_link() {
        assert_eq!(
            symlink_check("/l", "/t", ("u", "g"), false, &link("/t", ("u", "g"))),
            (Some(true), "The symlink /l is present".into(), vec![])
        );
        let (result, comment, changes) =
            symlink_check("/l", "/t", ("u", "g"), false, &link("/t", ("root", "root")));
        assert_eq!(result, None);
        assert_eq!(
            comment,
            "The symlink /l is present, but the ownership of the symlink would be changed \
             from root:root to u:g"
        );
        assert_eq!(changes, vec![("ownership", "root:root".to_string())]);
    }

    #[test]
    fn backup_paths() {
        assert_eq!(symlink_backup_path("/a/l", "/b/x").unwrap(), "/b/x");
        assert_eq!(symlink_backup_path("/a/./l", "x.bak").unwrap(), "/a/x.bak");
        assert_eq!(
            symlink_backup_path("/a/l", "d/x").unwrap_err(),
            "Backupname must be an absolute path or a file name: d/x"
        );
    }
}
