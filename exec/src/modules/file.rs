//! Salt's `file` module, the everyday part: existence checks, reading and writing, copying
//! and removing, ownership and modes, hashes, `find`, `replace`/`search` and symlinks, with
//! Salt's return values and error texts. `find`, `replace`/`search`, the metadata functions
//! (`meta.rs`) and the symlink ones (`links.rs`) live in their own files.

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::unistd::{Gid, Group, Uid, User};
use serde_json::{Value, json};

use saltq_semantics::python::{self, truthy};

use crate::error::ExecError;

use crate::spec::{Call, Function, Lit, Param};

mod find;
mod links;
mod meta;
mod replace;

/// The `file` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("file.append", handler!(append))
        .params(&[Param::req("path")])
        .varargs()
        .kwargs()
        .doc(APPEND_DOC),
    Function::new("file.check_hash", handler!(meta::check_hash))
        .params(&[Param::req("path"), Param::req("file_hash")])
        .doc(meta::CHECK_HASH_DOC),
    Function::new("file.chown", handler!(meta::chown))
        .params(&[Param::req("path"), Param::req("user"), Param::req("group")])
        .doc(meta::CHOWN_DOC),
    Function::new("file.contains", handler!(contains))
        .params(&[Param::req("path"), Param::req("text")])
        .doc(CONTAINS_DOC),
    Function::new("file.copy", handler!(copy))
        .params(&[
            Param::req("src"),
            Param::req("dst"),
            Param::opt("recurse", Lit::Bool(false)),
            Param::opt("remove_existing", Lit::Bool(false)),
        ])
        .doc(COPY_DOC),
    Function::new("file.directory_exists", handler!(directory_exists))
        .params(&[Param::req("path")])
        .doc(DIRECTORY_EXISTS_DOC),
    Function::new("file.file_exists", handler!(file_exists))
        .params(&[Param::req("path")])
        .doc(FILE_EXISTS_DOC),
    Function::new("file.find", handler!(find::find))
        .params(&[Param::req("path")])
        .varargs()
        .kwargs()
        .doc(find::DOC),
    Function::new("file.gid_to_group", handler!(gid_to_group))
        .params(&[Param::req("gid")])
        .doc(GID_TO_GROUP_DOC),
    Function::new("file.group_to_gid", handler!(group_to_gid))
        .params(&[Param::req("group")])
        .doc(GROUP_TO_GID_DOC),
    Function::new("file.uid_to_user", handler!(uid_to_user))
        .params(&[Param::req("uid")])
        .doc(UID_TO_USER_DOC),
    Function::new("file.user_to_uid", handler!(user_to_uid))
        .params(&[Param::req("user")])
        .doc(USER_TO_UID_DOC),
    Function::new("file.get_group", handler!(meta::get_group))
        .params(&[
            Param::req("path"),
            Param::opt("follow_symlinks", Lit::Bool(true)),
        ])
        .doc(meta::GET_GROUP_DOC),
    Function::new("file.get_hash", handler!(meta::get_hash))
        .params(&[
            Param::req("path"),
            Param::opt("form", Lit::Str("sha256")),
            Param::opt("chunk_size", Lit::Int(65536)),
        ])
        .doc(meta::GET_HASH_DOC),
    Function::new("file.get_mode", handler!(meta::get_mode))
        .params(&[
            Param::req("path"),
            Param::opt("follow_symlinks", Lit::Bool(true)),
        ])
        .doc(meta::GET_MODE_DOC),
    Function::new("file.get_user", handler!(meta::get_user))
        .params(&[
            Param::req("path"),
            Param::opt("follow_symlinks", Lit::Bool(true)),
        ])
        .doc(meta::GET_USER_DOC),
    Function::new("file.is_link", handler!(links::is_link))
        .params(&[Param::req("path")])
        .doc(links::IS_LINK_DOC),
    Function::new("file.makedirs", handler!(makedirs))
        .params(&[
            Param::req("path"),
            Param::opt("user", Lit::None),
            Param::opt("group", Lit::None),
            Param::opt("mode", Lit::None),
        ])
        .py_name("makedirs_")
        .doc(MAKEDIRS_DOC),
    Function::new("file.mkdir", handler!(mkdir))
        .params(&[
            Param::req("dir_path"),
            Param::opt("user", Lit::None),
            Param::opt("group", Lit::None),
            Param::opt("mode", Lit::None),
        ])
        .doc(MKDIR_DOC),
    Function::new("file.prepend", handler!(prepend))
        .params(&[Param::req("path")])
        .varargs()
        .kwargs()
        .doc(PREPEND_DOC),
    Function::new("file.read", handler!(read))
        .params(&[Param::req("path"), Param::opt("binary", Lit::Bool(false))])
        .doc(READ_DOC),
    Function::new("file.readdir", handler!(readdir))
        .params(&[Param::req("path")])
        .doc(READDIR_DOC),
    Function::new("file.readlink", handler!(links::readlink))
        .params(&[
            Param::req("path"),
            Param::opt("canonicalize", Lit::Bool(false)),
        ])
        .doc(links::READLINK_DOC),
    Function::new("file.remove", handler!(remove))
        .params(&[Param::req("path")])
        .kwargs()
        .doc(REMOVE_DOC),
    Function::new("file.rename", handler!(rename))
        .params(&[Param::req("src"), Param::req("dst")])
        .doc(RENAME_DOC),
    Function::new("file.replace", handler!(replace::replace))
        .params(replace::PARAMS)
        .doc(replace::DOC),
    Function::new("file.search", handler!(replace::search))
        .params(&[
            Param::req("path"),
            Param::req("pattern"),
            Param::opt("flags", Lit::Int(8)),
            Param::opt("bufsize", Lit::Int(1)),
            Param::opt("ignore_if_missing", Lit::Bool(false)),
            Param::opt("multiline", Lit::Bool(false)),
        ])
        .doc(replace::SEARCH_DOC),
    Function::new("file.set_mode", handler!(meta::set_mode))
        .params(&[Param::req("path"), Param::req("mode")])
        .doc(meta::SET_MODE_DOC),
    Function::new("file.stats", handler!(meta::stats))
        .params(&[
            Param::req("path"),
            Param::opt("hash_type", Lit::None),
            Param::opt("follow_symlinks", Lit::Bool(true)),
        ])
        .doc(meta::STATS_DOC),
    Function::new("file.symlink", handler!(links::symlink))
        .params(&[
            Param::req("src"),
            Param::req("path"),
            Param::opt("force", Lit::Bool(false)),
            Param::opt("atomic", Lit::Bool(false)),
            Param::opt("follow_symlinks", Lit::Bool(true)),
        ])
        .doc(links::SYMLINK_DOC),
    Function::new("file.touch", handler!(touch))
        .params(&[
            Param::req("name"),
            Param::opt("atime", Lit::None),
            Param::opt("mtime", Lit::None),
        ])
        .doc(TOUCH_DOC),
    Function::new("file.write", handler!(write))
        .params(&[Param::req("path")])
        .varargs()
        .kwargs()
        .doc(WRITE_DOC),
];

/// Python's `os.path.expanduser`: `~` and `~user` at the start.
pub(crate) fn expand_user(path: &str) -> PathBuf {
    let Some(rest) = path.strip_prefix('~') else {
        return PathBuf::from(path);
    };
    let (name, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let home = if name.is_empty() {
        std::env::var("HOME").ok()
    } else {
        User::from_name(name)
            .ok()
            .flatten()
            .map(|u| u.dir.display().to_string())
    };
    match home {
        Some(home) if tail.is_empty() => PathBuf::from(home),
        Some(home) => Path::new(&home).join(tail),
        None => PathBuf::from(path),
    }
}

/// A path argument, `~` expanded.
pub(super) fn path_arg(call: &Call, name: &str) -> PathBuf {
    expand_user(&python::str(call.arg(name)))
}

/// An `OSError` as Python reports it: `FileNotFoundError: [Errno 2] No such file or
/// directory: '/x'`.
pub(crate) fn os_error(e: &io::Error, path: &Path) -> ExecError {
    let kind = match e.kind() {
        io::ErrorKind::NotFound => "FileNotFoundError",
        io::ErrorKind::PermissionDenied => "PermissionError",
        io::ErrorKind::AlreadyExists => "FileExistsError",
        io::ErrorKind::IsADirectory => "IsADirectoryError",
        io::ErrorKind::NotADirectory => "NotADirectoryError",
        _ => "OSError",
    };
    ExecError::exception(
        kind,
        format!(
            "[Errno {}] {}: {}",
            e.raw_os_error().unwrap_or(0),
            strerror(e),
            python::str_repr(&path.display().to_string())
        ),
    )
}

/// The C library's text for an error, without Rust's ` (os error N)` suffix.
pub(crate) fn strerror(e: &io::Error) -> String {
    let text = e.to_string();
    match e.raw_os_error() {
        Some(code) => text
            .strip_suffix(&format!(" (os error {code})"))
            .unwrap_or(&text)
            .to_owned(),
        None => text,
    }
}

/// Salt's `normalize_mode`: a string, quotes and leading zeros stripped, zero-padded to 4.
pub(crate) fn normalize_mode(mode: &str) -> String {
    let mode = mode.replace("0o", "0");
    let mode = mode
        .trim_matches('"')
        .trim_matches('\'')
        .trim_start_matches('0');
    format!("{mode:0>4}")
}

/// Salt's `uid_to_user`: the user's name, or the uid when it has none.
pub(crate) fn uid_name(uid: u32) -> Value {
    User::from_uid(Uid::from_raw(uid))
        .ok()
        .flatten()
        .map_or_else(|| json!(uid), |u| json!(u.name))
}

/// Salt's `gid_to_group`: the group's name, or the gid when it has none.
pub(crate) fn gid_name(gid: u32) -> Value {
    Group::from_gid(Gid::from_raw(gid))
        .ok()
        .flatten()
        .map_or_else(|| json!(gid), |g| json!(g.name))
}

/// A user given by name or number, as `user_to_uid`; `None` when there is no such user.
pub(super) fn user_id(user: &Value) -> Option<u32> {
    let text = python::str(user);
    User::from_name(&text)
        .ok()
        .flatten()
        .map(|u| u.uid.as_raw())
        .or_else(|| text.parse().ok().filter(|_| !text.is_empty()))
}

/// A group given by name or number, as `group_to_gid`.
pub(super) fn group_id(group: &Value) -> Option<u32> {
    let text = python::str(group);
    Group::from_name(&text)
        .ok()
        .flatten()
        .map(|g| g.gid.as_raw())
        .or_else(|| text.parse().ok().filter(|_| !text.is_empty()))
}

const GROUP_TO_GID_DOC: &str = "Return the gid of a group name (an integer is returned as it
is), or ``''`` when there is no such group

CLI Example:

.. code-block:: bash

    salt '*' file.group_to_gid root
";

/// Salt's `group_to_gid`: an integer as it is, a name's gid, or `""`.
pub(crate) fn group_to_gid_value(group: &Value) -> Value {
    match group {
        Value::Null => json!(""),
        Value::Number(_) => group.clone(),
        other => Group::from_name(&python::str(other))
            .ok()
            .flatten()
            .map_or_else(|| json!(""), |g| json!(g.gid.as_raw())),
    }
}

async fn group_to_gid(call: Call) -> Result<Value, ExecError> {
    Ok(group_to_gid_value(call.arg("group")))
}

const GID_TO_GROUP_DOC: &str = "Return the name of a gid (a name is looked up first), the gid
itself when it has no name, or ``''`` for an unknown name

CLI Example:

.. code-block:: bash

    salt '*' file.gid_to_group 0
";

/// Salt's `gid_to_group`.
pub(crate) fn gid_to_group_value(gid: &Value) -> Value {
    let as_int = match gid {
        Value::Number(n) => n.as_i64(),
        Value::Bool(b) => Some(i64::from(*b)),
        other => python::str(other).trim().parse::<i64>().ok(),
    };
    let gid = match as_int {
        Some(n) => json!(n),
        None => group_to_gid_value(gid),
    };
    match gid.as_i64().and_then(|n| u32::try_from(n).ok()) {
        Some(n) => gid_name(n),
        None => gid,
    }
}

async fn gid_to_group(call: Call) -> Result<Value, ExecError> {
    Ok(gid_to_group_value(call.arg("gid")))
}

const USER_TO_UID_DOC: &str = "Return the uid of a user name (an integer is returned as it is),
or ``''`` when there is no such user

CLI Example:

.. code-block:: bash

    salt '*' file.user_to_uid root
";

async fn user_to_uid(call: Call) -> Result<Value, ExecError> {
    Ok(match call.arg("user") {
        Value::Number(_) => call.arg("user").clone(),
        Value::Null => json!(Uid::effective().as_raw()),
        other => User::from_name(&python::str(other))
            .ok()
            .flatten()
            .map_or_else(|| json!(""), |u| json!(u.uid.as_raw())),
    })
}

const UID_TO_USER_DOC: &str = "Return the name of a uid, or the uid itself when it has no name

CLI Example:

.. code-block:: bash

    salt '*' file.uid_to_user 0
";

async fn uid_to_user(call: Call) -> Result<Value, ExecError> {
    let uid = call.arg("uid");
    let n = match uid {
        Value::Number(n) => n.as_u64(),
        other => python::str(other).trim().parse::<u64>().ok(),
    };
    Ok(match n.and_then(|n| u32::try_from(n).ok()) {
        Some(n) => uid_name(n),
        None => uid.clone(),
    })
}

const FILE_EXISTS_DOC: &str = "Return ``True`` if the path is a file (or a symlink to one)

CLI Example:

.. code-block:: bash

    salt '*' file.file_exists /etc/passwd
";

async fn file_exists(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(path_arg(&call, "path").is_file()))
}

const DIRECTORY_EXISTS_DOC: &str =
    "Return ``True`` if the path is a directory (or a symlink to one)

CLI Example:

.. code-block:: bash

    salt '*' file.directory_exists /etc
";

async fn directory_exists(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(path_arg(&call, "path").is_dir()))
}

const READ_DOC: &str = "Return the contents of a file. Bytes that are not UTF-8 are replaced (also
with ``binary=True``: returns travel as text).

CLI Example:

.. code-block:: bash

    salt '*' file.read /path/to/file
";

async fn read(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "path");
    let bytes = fs::read(&path).map_err(|e| os_error(&e, &path))?;
    Ok(Value::String(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The lines of `write`, `append` and `prepend`: `*args`, or the `args` keyword (a list, or
/// one value).
fn lines_arg(call: &Call) -> Vec<String> {
    match call.kwargs().get("args") {
        Some(Value::Array(items)) => items.iter().map(python::str).collect(),
        Some(one) => vec![python::str(one)],
        None => call.varargs().iter().map(python::str).collect(),
    }
}

const WRITE_DOC: &str = "Write the given lines to a file, replacing its contents. Each argument
is one line.

CLI Example:

.. code-block:: bash

    salt '*' file.write /etc/motd \\
            \"With all thine offerings thou shalt offer salt.\"
    salt '*' file.write /etc/motd args='cheese=spam'
";

async fn write(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "path");
    let lines = lines_arg(&call);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(&path, text).map_err(|e| os_error(&e, &path))?;
    Ok(Value::String(format!(
        "Wrote {} lines to \"{}\"",
        lines.len(),
        path.display()
    )))
}

const APPEND_DOC: &str = "Append lines to the end of an existing file, first ending its last line
when it lacks a newline. Each argument is one line.

CLI Example:

.. code-block:: bash

    salt '*' file.append /etc/motd \\
            \"With all thine offerings thou shalt offer salt.\" \\
            \"Salt is what makes things taste bad when it isn't in them.\"
";

async fn append(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "path");
    let lines = lines_arg(&call);
    let mut text = fs::read(&path).map_err(|e| os_error(&e, &path))?;
    if text.last().is_some_and(|b| *b != b'\n') {
        text.push(b'\n');
    }
    for line in &lines {
        text.extend_from_slice(line.as_bytes());
        text.push(b'\n');
    }
    fs::write(&path, text).map_err(|e| os_error(&e, &path))?;
    Ok(Value::String(format!(
        "Wrote {} lines to \"{}\"",
        lines.len(),
        path.display()
    )))
}

const PREPEND_DOC: &str = "Insert lines at the start of a file (creating it when missing). Each
argument is one line.

CLI Example:

.. code-block:: bash

    salt '*' file.prepend /etc/motd \\
            \"With all thine offerings thou shalt offer salt.\"
";

async fn prepend(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "path");
    let lines = lines_arg(&call);
    let old = fs::read(&path).unwrap_or_default();
    let mut text: Vec<u8> = lines
        .iter()
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect();
    text.extend(old);
    fs::write(&path, text).map_err(|e| os_error(&e, &path))?;
    Ok(Value::String(format!(
        "Prepended {} lines to \"{}\"",
        lines.len(),
        path.display()
    )))
}

const TOUCH_DOC: &str = "Create a file if it does not exist, and set its access and modification
times: ``atime`` and ``mtime`` in seconds since the epoch, now by default.

CLI Example:

.. code-block:: bash

    salt '*' file.touch /var/log/emptyfile
";

async fn touch(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "name");
    let time = |name: &str| -> Result<SystemTime, ExecError> {
        match call.opt_arg(name).filter(|v| truthy(v)) {
            None => Ok(SystemTime::now()),
            Some(v) => v
                .as_f64()
                .or_else(|| python::str(v).parse().ok())
                .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                .map(|s| UNIX_EPOCH + Duration::from_secs_f64(s))
                .ok_or_else(|| ExecError::invocation("atime and mtime must be integers")),
        }
    };
    let times = fs::FileTimes::new()
        .set_accessed(time("atime")?)
        .set_modified(time("mtime")?);
    let file = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .map_err(|e| ExecError::execution(strerror(&e)))?;
    file.set_times(times)
        .map_err(|e| ExecError::execution(strerror(&e)))?;
    Ok(Value::Bool(path.exists()))
}

/// Sets owner and mode on a path Salt's `check_perms` would: `None` leaves them alone.
fn apply_perms(
    path: &Path,
    user: Option<&Value>,
    group: Option<&Value>,
    mode: Option<&str>,
) -> Result<(), ExecError> {
    let uid = match user {
        Some(u) => Some(user_id(u).ok_or_else(|| {
            ExecError::execution(format!("User {} is not available", python::str(u)))
        })?),
        None => None,
    };
    let gid = match group {
        Some(g) => Some(group_id(g).ok_or_else(|| {
            ExecError::execution(format!("Group {} is not available", python::str(g)))
        })?),
        None => None,
    };
    if uid.is_some() || gid.is_some() {
        std::os::unix::fs::chown(path, uid, gid).map_err(|e| os_error(&e, path))?;
    }
    if let Some(mode) = mode {
        let bits = u32::from_str_radix(&normalize_mode(mode), 8)
            .map_err(|_| ExecError::execution(format!("Invalid mode {mode}")))?;
        fs::set_permissions(path, fs::Permissions::from_mode(bits))
            .map_err(|e| os_error(&e, path))?;
    }
    Ok(())
}

/// Salt's `makedirs_perms`: creates the missing directories down to `dir`, each with the
/// owner and mode given.
fn make_dirs(
    dir: &Path,
    user: Option<&Value>,
    group: Option<&Value>,
    mode: Option<&str>,
) -> Result<(), ExecError> {
    let missing: Vec<&Path> = dir.ancestors().take_while(|p| !p.is_dir()).collect();
    for d in missing.into_iter().rev() {
        if d.as_os_str().is_empty() {
            continue;
        }
        fs::create_dir(d).map_err(|e| os_error(&e, d))?;
        apply_perms(d, user, group, mode.or(Some("0755")))?;
    }
    Ok(())
}

/// `user`, `group` and `mode` as the directory functions take them.
fn owner_args(call: &Call) -> (Option<&Value>, Option<&Value>, Option<String>) {
    (
        call.opt_arg("user"),
        call.opt_arg("group"),
        call.opt_arg("mode").map(python::str),
    )
}

const MKDIR_DOC: &str = "Create a directory and its missing parents, with the owner and mode given
(``0755`` by default). Returns ``True``.

CLI Example:

.. code-block:: bash

    salt '*' file.mkdir /opt/jetty/context
    salt '*' file.mkdir /opt/jetty/context user=jetty group=jetty mode=0750
";

async fn mkdir(call: Call) -> Result<Value, ExecError> {
    let dir = path_arg(&call, "dir_path");
    let (user, group, mode) = owner_args(&call);
    if !dir.is_dir() {
        make_dirs(&dir, user, group, mode.as_deref())?;
    }
    Ok(Value::Bool(true))
}

const MAKEDIRS_DOC: &str = "Create the directory that will hold ``path``: a path ending in ``/``
is that directory itself, otherwise its parent is. Returns ``None`` when created, or a message
saying it already exists.

CLI Example:

.. code-block:: bash

    salt '*' file.makedirs /opt/code/
";

async fn makedirs(call: Call) -> Result<Value, ExecError> {
    let path = python::str(call.arg("path"));
    let expanded = expand_user(&path).display().to_string();
    // os.path.dirname keeps everything before the last slash.
    let dirname = expanded.rsplit_once('/').map_or("", |(d, _)| d);
    let dirname = if dirname.is_empty() && expanded.starts_with('/') {
        "/"
    } else {
        dirname
    };
    let dir = PathBuf::from(dirname);
    if dir.is_dir() {
        return Ok(Value::String(format!(
            "Directory '{}' already exists",
            dir.display()
        )));
    }
    if dir.exists() {
        return Ok(Value::String(format!(
            "The path '{}' already exists and is not a directory",
            dir.display()
        )));
    }
    if !dir.is_absolute() {
        return Err(ExecError::invocation(format!(
            "Recursive creation for path '{}' would result in an infinite loop. Please use an absolute path.",
            dir.display()
        )));
    }
    let (user, group, mode) = owner_args(&call);
    make_dirs(&dir, user, group, mode.as_deref())?;
    Ok(Value::Null)
}

const REMOVE_DOC: &str = "Remove a file, a symlink, or a directory with everything in it. Returns
``False`` when there was nothing to remove.

CLI Example:

.. code-block:: bash

    salt '*' file.remove /tmp/foo
";

async fn remove(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "path");
    if !path.is_absolute() {
        return Err(ExecError::invocation(format!(
            "File path must be absolute: {}",
            path.display()
        )));
    }
    let fail = |e: io::Error| {
        ExecError::execution(format!(
            "Could not remove '{}': {}",
            path.display(),
            strerror(&e)
        ))
    };
    let Ok(meta) = fs::symlink_metadata(&path) else {
        return Ok(Value::Bool(false));
    };
    if meta.is_dir() {
        fs::remove_dir_all(&path).map_err(fail)?;
    } else {
        fs::remove_file(&path).map_err(fail)?;
    }
    Ok(Value::Bool(true))
}

const RENAME_DOC: &str = "Rename (move) a file or directory

CLI Example:

.. code-block:: bash

    salt '*' file.rename /path/to/src /path/to/dst
";

async fn rename(call: Call) -> Result<Value, ExecError> {
    let (src, dst) = (path_arg(&call, "src"), path_arg(&call, "dst"));
    if !src.is_absolute() {
        return Err(ExecError::invocation("File path must be absolute."));
    }
    fs::rename(&src, &dst).map_err(|_| {
        ExecError::execution(format!(
            "Could not rename '{}' to '{}'",
            src.display(),
            dst.display()
        ))
    })?;
    Ok(Value::Bool(true))
}

/// Copies a directory tree (files, symlinks and directories).
fn copy_tree(src: &Path, dst: &Path) -> io::Result<()> {
    fs::create_dir_all(dst)?;
    for entry in fs::read_dir(src)? {
        let entry = entry?;
        let (from, to) = (entry.path(), dst.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&from, &to)?;
        } else if kind.is_symlink() {
            let _ = fs::remove_file(&to);
            std::os::unix::fs::symlink(fs::read_link(&from)?, &to)?;
        } else {
            fs::copy(&from, &to)?;
        }
    }
    Ok(())
}

const COPY_DOC: &str = "Copy a file or, with ``recurse=True``, a directory; the copy gets the
source's owner, group and mode. ``remove_existing=True`` empties the destination directory
first.

CLI Example:

.. code-block:: bash

    salt '*' file.copy /path/to/src /path/to/dst
    salt '*' file.copy /path/to/src_dir /path/to/dst_dir recurse=True
";

async fn copy(call: Call) -> Result<Value, ExecError> {
    let (src, dst) = (path_arg(&call, "src"), path_arg(&call, "dst"));
    if !src.is_absolute() {
        return Err(ExecError::invocation("File path must be absolute."));
    }
    let meta = fs::metadata(&src).map_err(|_| {
        ExecError::execution(format!("No such file or directory '{}'", src.display()))
    })?;
    let failed = |_| {
        ExecError::execution(format!(
            "Could not copy '{}' to '{}'",
            src.display(),
            dst.display()
        ))
    };
    if dst.is_dir() || meta.is_dir() {
        if !truthy(call.arg("recurse")) {
            return Err(ExecError::invocation(
                "Cannot copy overwriting a directory without recurse flag set to true!",
            ));
        }
        if truthy(call.arg("remove_existing")) && dst.exists() {
            fs::remove_dir_all(&dst).map_err(failed)?;
        }
        copy_tree(&src, &dst).map_err(failed)?;
    } else {
        fs::copy(&src, &dst).map_err(failed)?;
    }
    let mode = format!("{:o}", meta.permissions().mode() & 0o7777);
    apply_perms(
        &dst,
        Some(&json!(meta.uid().to_string())),
        Some(&json!(meta.gid().to_string())),
        Some(&mode),
    )?;
    Ok(Value::Bool(true))
}

const READDIR_DOC: &str = "Return the entries of a directory, ``.`` and ``..`` first

CLI Example:

.. code-block:: bash

    salt '*' file.readdir /path/to/dir/
";

async fn readdir(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "path");
    if !path.is_absolute() {
        return Err(ExecError::invocation("Dir path must be absolute."));
    }
    if !path.is_dir() {
        return Err(ExecError::invocation(
            "A valid directory was not specified.",
        ));
    }
    let entries = fs::read_dir(&path).map_err(|e| os_error(&e, &path))?;
    let mut out = vec![json!("."), json!("..")];
    out.extend(
        entries
            .flatten()
            .map(|e| json!(e.file_name().to_string_lossy())),
    );
    Ok(Value::Array(out))
}

const CONTAINS_DOC: &str = "Return ``True`` if the file contains the text (stripped of surrounding
whitespace)

CLI Example:

.. code-block:: bash

    salt '*' file.contains /etc/crontab 'mymaintenance.sh'
";

async fn contains(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "path");
    let text = python::str(call.arg("text"));
    let needle = text.trim().as_bytes();
    let Ok(data) = fs::read(&path) else {
        return Ok(Value::Bool(false));
    };
    Ok(Value::Bool(
        needle.is_empty() || data.windows(needle.len()).any(|w| w == needle),
    ))
}

#[cfg(test)]
mod tests;
