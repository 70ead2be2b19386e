//! Salt's `file` state module (`salt/states/file.py`, with the helpers it calls from
//! `salt/modules/file.py`): the same function names, parameters, results, comments and
//! changes. Each submodule holds a family of states:
//! - `managed`: `file.managed` and what it shares with `file.recurse` (sources, hashes,
//!   templates, writing a file and its permissions);
//! - `dirs`: `file.directory`, `file.recurse`;
//! - `simple`: `file.absent`, `file.exists`, `file.missing`, `file.touch`,
//!   `file.symlink`, `file.hardlink`, `file.copy`, `file.rename`, `file.decode`;
//! - `edit`: `file.replace`, `file.line`, `file.blockreplace`, `file.comment`,
//!   `file.uncomment`, `file.append`, `file.prepend`;
//! - `serialize`: `file.serialize`;
//! - `keyvalue`: `file.keyvalue`;
//! - `tidied`: `file.tidied`;
//! - `accumulated`: `file.accumulated` and the run's store it fills ([`Accumulators`]);
//! - [`diff`]: the unified diff Salt puts in `changes['diff']`.
//!
//!
//! Paths must be absolute, as in Salt; `~` is expanded first.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use saltq_exec::{Lit, Param};
use serde_json::Value;

use super::{Ret, StateCall, StateFunction, state_handler};

pub use accumulated::Accumulators;
/// `file.managed`, for states that manage a file of their own (`cron.file`).
pub(crate) use managed::managed;

mod accumulated;
pub mod diff;
mod dirs;
mod edit;
mod keyvalue;
pub(crate) mod managed;
mod serialize;
mod simple;
mod tidied;

const fn opt(name: &'static str) -> Param {
    Param::opt(name, Lit::None)
}
const fn flag(name: &'static str, default: bool) -> Param {
    Param::opt(name, Lit::Bool(default))
}

/// The `file` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "file.managed",
        params: managed::PARAMS,
        kwargs: true,
        handler: state_handler!(managed::managed),
    },
    StateFunction {
        name: "file.directory",
        params: dirs::DIRECTORY_PARAMS,
        kwargs: true,
        handler: state_handler!(dirs::directory),
    },
    StateFunction {
        name: "file.recurse",
        params: dirs::RECURSE_PARAMS,
        kwargs: true,
        handler: state_handler!(dirs::recurse),
    },
    StateFunction {
        name: "file.accumulated",
        params: accumulated::PARAMS,
        kwargs: true,
        handler: state_handler!(accumulated::accumulated),
    },
    StateFunction {
        name: "file.absent",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(simple::absent),
    },
    StateFunction {
        name: "file.exists",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(simple::exists),
    },
    StateFunction {
        name: "file.missing",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(simple::missing),
    },
    StateFunction {
        name: "file.tidied",
        params: tidied::PARAMS,
        kwargs: true,
        handler: state_handler!(tidied::tidied),
    },
    StateFunction {
        name: "file.touch",
        params: &[
            Param::req("name"),
            opt("atime"),
            opt("mtime"),
            flag("makedirs", false),
        ],
        kwargs: false,
        handler: state_handler!(simple::touch),
    },
    StateFunction {
        name: "file.symlink",
        params: simple::SYMLINK_PARAMS,
        kwargs: true,
        handler: state_handler!(simple::symlink),
    },
    StateFunction {
        name: "file.hardlink",
        params: simple::HARDLINK_PARAMS,
        kwargs: true,
        handler: state_handler!(simple::hardlink),
    },
    StateFunction {
        name: "file.decode",
        params: simple::DECODE_PARAMS,
        kwargs: false,
        handler: state_handler!(simple::decode),
    },
    StateFunction {
        name: "file.copy",
        params: &[
            Param::req("name"),
            Param::req("source"),
            flag("force", false),
            flag("makedirs", false),
            flag("preserve", false),
            opt("user"),
            opt("group"),
            opt("mode"),
            flag("subdir", false),
        ],
        kwargs: true,
        handler: state_handler!(simple::copy),
    },
    StateFunction {
        name: "file.rename",
        params: &[
            Param::req("name"),
            Param::req("source"),
            flag("force", false),
            flag("makedirs", false),
        ],
        kwargs: true,
        handler: state_handler!(simple::rename),
    },
    StateFunction {
        name: "file.append",
        params: edit::APPEND_PARAMS,
        kwargs: true,
        handler: state_handler!(edit::append),
    },
    StateFunction {
        name: "file.prepend",
        params: edit::APPEND_PARAMS,
        kwargs: true,
        handler: state_handler!(edit::prepend),
    },
    StateFunction {
        name: "file.replace",
        params: edit::REPLACE_PARAMS,
        kwargs: false,
        handler: state_handler!(edit::replace),
    },
    StateFunction {
        name: "file.line",
        params: edit::LINE_PARAMS,
        kwargs: false,
        handler: state_handler!(edit::line),
    },
    StateFunction {
        name: "file.blockreplace",
        params: edit::BLOCKREPLACE_PARAMS,
        kwargs: false,
        handler: state_handler!(edit::blockreplace),
    },
    StateFunction {
        name: "file.comment",
        params: &[
            Param::req("name"),
            Param::req("regex"),
            Param::opt("char", Lit::Str("#")),
            Param::opt("backup", Lit::Str(".bak")),
            flag("ignore_missing", false),
        ],
        kwargs: false,
        handler: state_handler!(edit::comment),
    },
    StateFunction {
        name: "file.uncomment",
        params: &[
            Param::req("name"),
            Param::req("regex"),
            Param::opt("char", Lit::Str("#")),
            Param::opt("backup", Lit::Str(".bak")),
        ],
        kwargs: false,
        handler: state_handler!(edit::uncomment),
    },
    StateFunction {
        name: "file.keyvalue",
        params: keyvalue::PARAMS,
        kwargs: false,
        handler: state_handler!(keyvalue::keyvalue),
    },
    StateFunction {
        name: "file.serialize",
        params: serialize::PARAMS,
        kwargs: true,
        handler: state_handler!(serialize::serialize),
    },
];

/// Salt's `_error`: the state fails with `msg` as its comment.
fn error(mut ret: Ret, msg: impl Into<String>) -> Ret {
    ret.result = Some(false);
    ret.comment = msg.into();
    ret
}

/// Python's `os.path.expanduser` for `~` and `~/...` (the forms state trees use).
fn expand_user(name: &str) -> String {
    if (name == "~" || name.starts_with("~/"))
        && let Ok(home) = std::env::var("HOME")
    {
        return format!("{home}{}", &name[1..]);
    }
    name.to_owned()
}

/// The state's `name`, `~` expanded.
fn name_of(call: &StateCall) -> String {
    expand_user(&call.name)
}

/// A string argument as Salt would see it (`str()` of a number).
fn str_arg(call: &StateCall, key: &str) -> Option<String> {
    call.arg(key).map(py_str)
}

/// Python's `str()` of a value (strings as they are).
fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => saltq_semantics::python::str(other),
    }
}

/// A boolean argument by Python truth, `default` when absent.
fn bool_arg(call: &StateCall, key: &str, default: bool) -> bool {
    call.arg(key)
        .map(saltq_semantics::python::truthy)
        .unwrap_or(default)
}

/// Salt's `salt.utils.files.normalize_mode`: `644`, `"0644"`, `"0o644"` all give `"0644"`.
fn normalize_mode(v: &Value) -> Option<String> {
    if v.is_null() {
        return None;
    }
    let s = py_str(v).replace("0o", "0");
    let s = s
        .trim_matches('"')
        .trim_matches('\'')
        .trim_start_matches('0');
    Some(format!("{s:0>4}"))
}

/// A file's owner, group and mode as `file.stats` reports them.
#[derive(Debug, Clone)]
struct Meta {
    user: String,
    group: String,
    uid: u32,
    gid: u32,
    /// `"0644"`.
    mode: String,
}

/// Salt's `file.stats`: a dangling symlink is described by the link itself even when
/// following links.
fn stat_meta(path: &Path, follow: bool) -> Option<Meta> {
    let md = if follow {
        std::fs::metadata(path).or_else(|_| std::fs::symlink_metadata(path))
    } else {
        std::fs::symlink_metadata(path)
    }
    .ok()?;
    Some(Meta {
        user: user_name(md.uid()),
        group: group_name(md.gid()),
        uid: md.uid(),
        gid: md.gid(),
        mode: format!("{:04o}", md.mode() & 0o7777),
    })
}

fn user_name(uid: u32) -> String {
    nix::unistd::User::from_uid(uid.into())
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string())
}

fn group_name(gid: u32) -> String {
    nix::unistd::Group::from_gid(gid.into())
        .ok()
        .flatten()
        .map(|g| g.name)
        .unwrap_or_else(|| gid.to_string())
}

/// `file.user_to_uid`: a name or a number; `None` when there is no such user.
fn user_to_uid(user: &Value) -> Option<u32> {
    match user {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Value::String(s) => match nix::unistd::User::from_name(s).ok().flatten() {
            Some(u) => Some(u.uid.as_raw()),
            None => s.parse().ok(),
        },
        _ => None,
    }
}

/// `file.group_to_gid`: a name or a number; `None` when there is no such group.
fn group_to_gid(group: &Value) -> Option<u32> {
    match group {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Value::String(s) => match nix::unistd::Group::from_name(s).ok().flatten() {
            Some(g) => Some(g.gid.as_raw()),
            None => s.parse().ok(),
        },
        _ => None,
    }
}

/// Salt's `_check_user`: the users and groups that do not exist, as one message (empty in
/// test mode, where Salt only logs it).
fn check_user(user: Option<&Value>, group: Option<&Value>, test: bool) -> String {
    let mut err = String::new();
    if let Some(u) = user.filter(|u| saltq_semantics::python::truthy(u))
        && user_to_uid(u).is_none()
    {
        err.push_str(&format!("User {} is not available ", py_str(u)));
    }
    if let Some(g) = group.filter(|g| saltq_semantics::python::truthy(g))
        && group_to_gid(g).is_none()
    {
        err.push_str(&format!("Group {} is not available", py_str(g)));
    }
    if test { String::new() } else { err }
}

/// Whether `want` (a name or an id) names the owner in `name`/`id`.
fn same_owner(want: &Value, name: &str, id: u32) -> bool {
    match want {
        Value::String(s) => s == name,
        Value::Number(n) => n.as_u64() == Some(u64::from(id)),
        _ => false,
    }
}

fn set_mode(path: &Path, mode: &str) -> std::io::Result<()> {
    let bits = u32::from_str_radix(mode, 8).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("bad mode {mode}"))
    })?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(bits))
}

/// What [`check_perms`] found before changing anything (Salt's `perms`).
#[derive(Debug, Clone, Default)]
struct Perms {
    lmode: String,
}

/// Salt's `file.check_perms`: sets owner, group and mode where they differ (not in test
/// mode), records `user`/`group`/`mode` in the changes, and joins its comments with `; `
/// after the comment already in `ret`. In test mode a change makes the result `None`.
fn check_perms(
    path: &Path,
    ret: &mut Ret,
    user: Option<&Value>,
    group: Option<&Value>,
    mode: Option<&str>,
    follow: bool,
    test: bool,
) -> Perms {
    let user = user.filter(|u| saltq_semantics::python::truthy(u));
    let group = group.filter(|g| saltq_semantics::python::truthy(g));
    let orig = std::mem::take(&mut ret.comment);
    let mut comments: Vec<String> = Vec::new();
    let Some(cur) = stat_meta(path, follow) else {
        ret.result = Some(false);
        ret.comment = format!("{} does not exist", path.display());
        return Perms::default();
    };
    let perms = Perms {
        lmode: cur.mode.clone(),
    };
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let cuser = user.is_some_and(|u| !same_owner(u, &cur.user, cur.uid));
    let cgroup = group.is_some_and(|g| !same_owner(g, &cur.group, cur.gid));
    if (cuser || cgroup) && !test {
        let uid = user.and_then(user_to_uid).unwrap_or(cur.uid);
        let gid = group.and_then(group_to_gid).unwrap_or(cur.gid);
        let res = if is_link && !follow {
            std::os::unix::fs::lchown(path, Some(uid), Some(gid))
        } else {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))
        };
        match res {
            Ok(()) if !is_link => {
                let _ = set_mode(path, &cur.mode);
            }
            Ok(()) => {}
            Err(_) => ret.result = Some(false),
        }
    }
    let mut cmode = false;
    if let Some(mode) = mode
        && !test
        && (!is_link || follow)
        && mode != cur.mode
    {
        cmode = true;
        let _ = set_mode(path, mode);
    }
    let post = stat_meta(path, follow).unwrap_or(cur);
    if let Some(u) = user {
        if !same_owner(u, &post.user, post.uid) {
            if test {
                ret.changes.insert("user".into(), u.clone());
            } else {
                ret.result = Some(false);
                comments.push(format!("Failed to change user to {}", py_str(u)));
            }
        } else if cuser {
            ret.changes.insert("user".into(), u.clone());
        }
    }
    if let Some(g) = group {
        if !same_owner(g, &post.group, post.gid) {
            if test {
                ret.changes.insert("group".into(), g.clone());
            } else {
                ret.result = Some(false);
                comments.push(format!("Failed to change group to {}", py_str(g)));
            }
        } else if cgroup {
            ret.changes.insert("group".into(), g.clone());
        }
    }
    if let Some(mode) = mode
        && (!is_link || follow)
    {
        if mode != post.mode {
            if test {
                ret.changes.insert("mode".into(), mode.into());
            } else {
                ret.result = Some(false);
                comments.push(format!("Failed to change mode to {mode}"));
            }
        } else if cmode {
            ret.changes.insert("mode".into(), mode.into());
        }
    }
    if !orig.is_empty() {
        comments.insert(0, orig);
    }
    ret.comment = comments.join("; ");
    if test && !ret.changes.is_empty() {
        ret.result = None;
    }
    perms
}

/// Python's `os.path.dirname`.
fn dirname(path: &str) -> String {
    let i = path.rfind('/').map_or(0, |i| i + 1);
    let head = &path[..i];
    if head.chars().any(|c| c != '/') {
        head.trim_end_matches('/').to_owned()
    } else {
        head.to_owned()
    }
}

/// The process umask, read without changing it for long (Salt's `get_umask`).
fn umask() -> u32 {
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
    nix::sys::stat::umask(old);
    old.bits()
}

/// Creates the missing parents of `path` (Salt's `file.makedirs`), each with `mode` and
/// owner when given.
fn makedirs(
    path: &str,
    user: Option<&Value>,
    group: Option<&Value>,
    mode: Option<&str>,
) -> std::io::Result<()> {
    let parent = dirname(path);
    let mut missing = Vec::new();
    let mut cur = parent.clone();
    while !cur.is_empty() && !Path::new(&cur).is_dir() {
        missing.push(cur.clone());
        let up = dirname(&cur);
        if up == cur {
            break;
        }
        cur = up;
    }
    for dir in missing.iter().rev() {
        std::fs::create_dir(dir)?;
        if let Some(mode) = mode {
            set_mode(Path::new(dir), mode)?;
        }
        let uid = user.and_then(user_to_uid);
        let gid = group.and_then(group_to_gid);
        if uid.is_some() || gid.is_some() {
            std::os::unix::fs::chown(dir, uid, gid)?;
        }
    }
    Ok(())
}

/// Python's `OSError.__str__`: `[Errno 2] No such file or directory: '/x'`.
fn os_error(e: &std::io::Error, path: &str) -> String {
    match e.raw_os_error() {
        Some(code) => format!(
            "[Errno {code}] {}: {}",
            strerror(e),
            saltq_semantics::python::str_repr(path)
        ),
        None => e.to_string(),
    }
}

/// The C library's message for an error, as Python's `strerror`.
fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}
