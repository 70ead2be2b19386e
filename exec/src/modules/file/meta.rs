//! `file.*` functions about a file's metadata: `stats`, modes, owners and digests.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, truthy};

use super::{gid_name, group_id, normalize_mode, os_error, path_arg, uid_name, user_id};
use crate::error::ExecError;
use crate::hashing::Hasher;

use crate::spec::Call;

/// The letter-free file type Salt's `stats` reports.
fn file_type(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "dir"
    } else if t.is_char_device() {
        "char"
    } else if t.is_block_device() {
        "block"
    } else if t.is_symlink() {
        "link"
    } else if t.is_fifo() {
        "pipe"
    } else if t.is_socket() {
        "socket"
    } else {
        "file"
    }
}

/// Metadata, following symlinks or not, or Salt's `Path not found` error.
pub(super) fn metadata(path: &Path, follow: bool) -> Result<fs::Metadata, ExecError> {
    let got = if follow {
        fs::metadata(path).or_else(|_| fs::symlink_metadata(path))
    } else {
        fs::symlink_metadata(path)
    };
    got.map_err(|_| ExecError::execution(format!("Path not found: {}", path.display())))
}

fn seconds(secs: i64, nanos: i64) -> Value {
    json!(secs as f64 + nanos as f64 / 1e9)
}

/// The digest of a file, read in chunks.
pub(super) fn hash_file(path: &Path, form: &str) -> Result<String, ExecError> {
    use std::io::Read;
    let mut hasher = Hasher::new(form)?;
    let mut file = fs::File::open(path).map_err(|e| os_error(&e, path))?;
    let mut buf = vec![0u8; 65536];
    loop {
        let n = file.read(&mut buf).map_err(|e| os_error(&e, path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.hex())
}

pub(super) const STATS_DOC: &str =
    "Return a dict of a file's inode, owner, times, size, mode, type and
target (its real path); with ``hash_type``, also its digest as ``sum``.

CLI Example:

.. code-block:: bash

    salt '*' file.stats /etc/passwd
";

pub(super) async fn stats(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "path");
    let follow = truthy(call.arg("follow_symlinks"));
    let meta = metadata(&path, follow)?;
    let mut m = Map::new();
    m.insert("inode".into(), json!(meta.ino()));
    m.insert("uid".into(), json!(meta.uid()));
    m.insert("gid".into(), json!(meta.gid()));
    m.insert("group".into(), gid_name(meta.gid()));
    m.insert("user".into(), uid_name(meta.uid()));
    m.insert("atime".into(), seconds(meta.atime(), meta.atime_nsec()));
    m.insert("mtime".into(), seconds(meta.mtime(), meta.mtime_nsec()));
    m.insert("ctime".into(), seconds(meta.ctime(), meta.ctime_nsec()));
    m.insert("size".into(), json!(meta.size()));
    m.insert(
        "mode".into(),
        json!(normalize_mode(&format!("{:o}", meta.mode() & 0o7777))),
    );
    if let Some(form) = call.opt_arg("hash_type").filter(|v| truthy(v)) {
        m.insert("sum".into(), json!(hash_file(&path, &python::str(form))?));
    }
    m.insert("type".into(), json!(file_type(&meta)));
    let target = if follow {
        fs::canonicalize(&path).unwrap_or_else(|_| path.clone())
    } else {
        std::path::absolute(&path).unwrap_or_else(|_| path.clone())
    };
    m.insert("target".into(), json!(target.display().to_string()));
    Ok(Value::Object(m))
}

pub(super) const GET_MODE_DOC: &str = "Return a file's mode as an octal string, e.g. ``0644``

CLI Example:

.. code-block:: bash

    salt '*' file.get_mode /etc/passwd
";

pub(super) async fn get_mode(call: Call) -> Result<Value, ExecError> {
    let meta = metadata(
        &path_arg(&call, "path"),
        truthy(call.arg("follow_symlinks")),
    )?;
    Ok(json!(normalize_mode(&format!(
        "{:o}",
        meta.mode() & 0o7777
    ))))
}

pub(super) const SET_MODE_DOC: &str =
    "Set a file's mode (octal, e.g. ``0644``); returns the new mode

CLI Example:

.. code-block:: bash

    salt '*' file.set_mode /etc/passwd 0644
";

pub(super) async fn set_mode(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "path");
    let raw = python::str(call.arg("mode"));
    let mode = raw.trim_start_matches(['0', 'O', 'o']);
    let mode = if mode.is_empty() { "0" } else { mode };
    if !path.exists() {
        return Err(ExecError::execution(format!(
            "{}: File not found",
            path.display()
        )));
    }
    let Ok(bits) = u32::from_str_radix(mode, 8) else {
        return Ok(Value::String(format!("Invalid Mode {mode}")));
    };
    fs::set_permissions(&path, fs::Permissions::from_mode(bits))
        .map_err(|e| os_error(&e, &path))?;
    let meta = metadata(&path, true)?;
    Ok(json!(normalize_mode(&format!(
        "{:o}",
        meta.mode() & 0o7777
    ))))
}

pub(super) const GET_USER_DOC: &str = "Return the name of the user owning a file

CLI Example:

.. code-block:: bash

    salt '*' file.get_user /etc/passwd
";

pub(super) async fn get_user(call: Call) -> Result<Value, ExecError> {
    let meta = metadata(
        &path_arg(&call, "path"),
        truthy(call.arg("follow_symlinks")),
    )?;
    Ok(uid_name(meta.uid()))
}

pub(super) const GET_GROUP_DOC: &str = "Return the name of the group owning a file

CLI Example:

.. code-block:: bash

    salt '*' file.get_group /etc/passwd
";

pub(super) async fn get_group(call: Call) -> Result<Value, ExecError> {
    let meta = metadata(
        &path_arg(&call, "path"),
        truthy(call.arg("follow_symlinks")),
    )?;
    Ok(gid_name(meta.gid()))
}

pub(super) const CHOWN_DOC: &str =
    "Change a file's owner and group (names or ids). Returns ``None``, or the
problems found, one per line.

CLI Example:

.. code-block:: bash

    salt '*' file.chown /etc/passwd root root
";

pub(super) async fn chown(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "path");
    let mut err = String::new();
    let mut resolve = |v: &Value, lookup: fn(&Value) -> Option<u32>, what: &str| {
        if !truthy(v) {
            return None;
        }
        let id = lookup(v);
        if id.is_none() {
            err.push_str(&format!("{what} does not exist\n"));
        }
        id
    };
    let uid = resolve(call.arg("user"), user_id, "User");
    let gid = resolve(call.arg("group"), group_id, "Group");
    if fs::symlink_metadata(&path).is_err() {
        err.push_str("File not found");
    } else if !path.exists() && err.is_empty() {
        std::os::unix::fs::lchown(&path, uid, gid).map_err(|e| os_error(&e, &path))?;
        return Ok(Value::Null);
    }
    if !err.is_empty() {
        return Ok(Value::String(err));
    }
    std::os::unix::fs::chown(&path, uid, gid).map_err(|e| os_error(&e, &path))?;
    Ok(Value::Null)
}

pub(super) const GET_HASH_DOC: &str =
    "Return a file's digest: ``form`` is ``md5``, ``sha1``, ``sha224``,
``sha256`` (the default), ``sha384`` or ``sha512``

CLI Example:

.. code-block:: bash

    salt '*' file.get_hash /etc/shadow
    salt '*' file.get_hash /etc/shadow md5
";

pub(super) async fn get_hash(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "path");
    Ok(json!(hash_file(&path, &python::str(call.arg("form")))?))
}

pub(super) const CHECK_HASH_DOC: &str = "Return ``True`` if a file's digest is the one given, as
``type:value``, ``type=value``, or a bare value whose length says its type.

CLI Example:

.. code-block:: bash

    salt '*' file.check_hash /etc/fstab e138491e9d5b97023cea823fe17bac22
    salt '*' file.check_hash /etc/fstab md5=e138491e9d5b97023cea823fe17bac22
";

pub(super) async fn check_hash(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "path");
    let Value::String(given) = call.arg("file_hash") else {
        return Err(ExecError::invocation("hash must be a string"));
    };
    let (form, value) = match given.split_once([':', '=']) {
        Some((form, value)) => (form.to_owned(), value),
        None => {
            const BY_LEN: [(usize, &str); 6] = [
                (32, "md5"),
                (40, "sha1"),
                (56, "sha224"),
                (64, "sha256"),
                (96, "sha384"),
                (128, "sha512"),
            ];
            let form = BY_LEN.iter().find(|(n, _)| *n == given.len()).ok_or_else(|| {
                ExecError::invocation(format!(
                    "Hash {given} (length: {}) could not be matched to a supported hash type. The supported hash types and lengths are: {}",
                    given.len(),
                    BY_LEN.map(|(n, f)| format!("{f} ({n})")).join(", ")
                ))
            })?;
            (form.1.to_owned(), given.as_str())
        }
    };
    Ok(Value::Bool(hash_file(&path, &form)? == value))
}
