//! `file.*` functions about symbolic links: `symlink`, `is_link`, `readlink`.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use saltq_semantics::python::{self, truthy};

use super::{path_arg, strerror};
use crate::error::ExecError;

use crate::spec::Call;

pub(super) const IS_LINK_DOC: &str = "Return ``True`` if the path is a symbolic link

CLI Example:

.. code-block:: bash

    salt '*' file.is_link /path/to/link
";

pub(super) async fn is_link(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "path");
    Ok(Value::Bool(
        fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()),
    ))
}

pub(super) const READLINK_DOC: &str =
    "Return the path a symbolic link points to; with ``canonicalize=True``,
the real path with every link resolved

CLI Example:

.. code-block:: bash

    salt '*' file.readlink /path/to/link
";

pub(super) async fn readlink(call: Call) -> Result<Value, ExecError> {
    let path = path_arg(&call, "path");
    if !path.is_absolute() {
        return Err(ExecError::invocation(format!(
            "Path to link must be absolute: {}",
            path.display()
        )));
    }
    if !fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(ExecError::invocation(format!(
            "A valid link was not specified: {}",
            path.display()
        )));
    }
    let target = if truthy(call.arg("canonicalize")) {
        fs::canonicalize(&path).or_else(|_| fs::read_link(&path))
    } else {
        fs::read_link(&path)
    };
    let target = target.map_err(|e| ExecError::execution(strerror(&e)))?;
    Ok(json!(target.display().to_string()))
}

pub(super) const SYMLINK_DOC: &str =
    "Create a symbolic link at ``path`` pointing to ``src``. An existing link
to the same place is fine; anything else at ``path`` is an error unless ``force=True``
(replace it) or ``atomic=True`` (replace it through a rename).

CLI Example:

.. code-block:: bash

    salt '*' file.symlink /path/to/file /path/to/link
";

pub(super) async fn symlink(call: Call) -> Result<Value, ExecError> {
    let src = python::str(call.arg("src"));
    let path = path_arg(&call, "path");
    let (force, atomic) = (truthy(call.arg("force")), truthy(call.arg("atomic")));
    if !path.is_absolute() {
        return Err(ExecError::invocation(format!(
            "Link path must be absolute: {}",
            path.display()
        )));
    }
    let could_not = || ExecError::execution(format!("Could not create '{}'", path.display()));
    let is_link = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link {
        if fs::read_link(&path).is_ok_and(|t| t == Path::new(&src)) {
            return Ok(Value::Bool(true));
        }
        if !force && !atomic {
            return Err(ExecError::execution(format!(
                "Found existing symlink: {}",
                path.display()
            )));
        }
    }
    let exists = if truthy(call.arg("follow_symlinks")) {
        path.exists()
    } else {
        fs::symlink_metadata(&path).is_ok()
    };
    if exists && !force && !atomic {
        return Err(ExecError::execution(format!(
            "Existing path is not a symlink: {}",
            path.display()
        )));
    }
    if atomic {
        let tmp = path.with_file_name(format!(".saltq-link-{}", rand::random::<u64>()));
        std::os::unix::fs::symlink(&src, &tmp).map_err(|_| could_not())?;
        return fs::rename(&tmp, &path)
            .map(|()| Value::Bool(true))
            .map_err(|_| {
                let _ = fs::remove_file(&tmp);
                could_not()
            });
    }
    if (is_link || exists) && force {
        fs::remove_file(&path).map_err(|_| could_not())?;
    }
    std::os::unix::fs::symlink(&src, &path).map_err(|_| could_not())?;
    Ok(Value::Bool(true))
}
