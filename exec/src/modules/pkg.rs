//! Salt's `pkg` module for apt/dpkg (`aptpkg`) and dnf/rpm (`yumpkg`): the package manager is
//! chosen by the tools present. Changes are reported as Salt does, `{name: {old, new}}`,
//! computed from the installed packages before and after.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, is_true, truthy};

use crate::error::ExecError;

use crate::spec::{Call, Function, Lit, Param};

mod apt;
mod dnf;

/// The `pkg` module's functions (aptpkg's signatures).
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("pkg.install", handler!(install))
        .params(&[
            Param::opt("name", Lit::None),
            Param::opt("refresh", Lit::Bool(false)),
            Param::opt("fromrepo", Lit::None),
            Param::opt("skip_verify", Lit::Bool(false)),
            Param::opt("debconf", Lit::None),
            Param::opt("pkgs", Lit::None),
            Param::opt("sources", Lit::None),
            Param::opt("reinstall", Lit::Bool(false)),
            Param::opt("downloadonly", Lit::Bool(false)),
            Param::opt("ignore_epoch", Lit::Bool(false)),
        ])
        .kwargs()
        .doc(INSTALL_DOC),
    Function::new("pkg.latest_version", handler!(latest_version))
        .varargs()
        .kwargs()
        .doc(LATEST_VERSION_DOC),
    Function::new("pkg.list_pkgs", handler!(list_pkgs))
        .params(&[
            Param::opt("versions_as_list", Lit::Bool(false)),
            Param::opt("removed", Lit::Bool(false)),
            Param::opt("purge_desired", Lit::Bool(false)),
        ])
        .kwargs()
        .doc(LIST_PKGS_DOC),
    Function::new("pkg.list_upgrades", handler!(list_upgrades))
        .params(&[
            Param::opt("refresh", Lit::Bool(true)),
            Param::opt("dist_upgrade", Lit::Bool(true)),
        ])
        .kwargs()
        .doc(LIST_UPGRADES_DOC),
    Function::new("pkg.purge", handler!(purge))
        .params(&[Param::opt("name", Lit::None), Param::opt("pkgs", Lit::None)])
        .kwargs()
        .doc(PURGE_DOC),
    Function::new("pkg.refresh_db", handler!(refresh_db))
        .params(&[
            Param::opt("cache_valid_time", Lit::Int(0)),
            Param::opt("failhard", Lit::Bool(false)),
        ])
        .kwargs()
        .doc(REFRESH_DB_DOC),
    Function::new("pkg.remove", handler!(remove))
        .params(&[Param::opt("name", Lit::None), Param::opt("pkgs", Lit::None)])
        .kwargs()
        .doc(REMOVE_DOC),
    Function::new("pkg.upgrade", handler!(upgrade))
        .params(&[
            Param::opt("refresh", Lit::Bool(true)),
            Param::opt("dist_upgrade", Lit::Bool(false)),
        ])
        .kwargs()
        .doc(UPGRADE_DOC),
    Function::new("pkg.version", handler!(version))
        .varargs()
        .kwargs()
        .doc(VERSION_DOC),
];

/// Installed packages: name to versions.
pub(crate) type Installed = BTreeMap<String, Vec<String>>;

/// The package manager of this minion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// apt-get, apt-cache and dpkg-query.
    Apt,
    /// dnf (or yum) and rpm.
    Dnf,
}

fn backend() -> Result<Backend, ExecError> {
    let has = |t: &str| crate::modules::cmd::which_path(t).is_some();
    if has("dpkg-query") && has("apt-get") {
        Ok(Backend::Apt)
    } else if has("rpm") && (has("dnf") || has("yum")) {
        Ok(Backend::Dnf)
    } else {
        Err(ExecError::execution(
            "no supported package manager (apt/dpkg or dnf/rpm) on this minion",
        ))
    }
}

async fn installed(call: &Call, backend: Backend) -> Result<Installed, ExecError> {
    match backend {
        Backend::Apt => Ok(apt::list(call).await?.installed),
        Backend::Dnf => dnf::list(call).await,
    }
}

/// Salt's `compare_dicts` of two package lists: `{name: {old, new}}` for every package whose
/// versions differ, `""` for absent.
pub(crate) fn changes(old: &Installed, new: &Installed) -> Value {
    let mut out = Map::new();
    let names: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for name in names {
        let (o, n) = (old.get(name), new.get(name));
        if o != n {
            let text = |v: Option<&Vec<String>>| v.map(|v| v.join(",")).unwrap_or_default();
            out.insert(name.clone(), json!({"old": text(o), "new": text(n)}));
        }
    }
    Value::Object(out)
}

/// Salt's `pkg_resource.parse_targets` for `name`/`pkgs`/`version`: `(name, version)` pairs.
pub(crate) fn targets(call: &Call) -> Vec<(String, Option<String>)> {
    let version = call
        .kwargs()
        .get("version")
        .filter(|v| truthy(v))
        .map(python::str);
    match call.opt_arg("pkgs") {
        Some(Value::Array(items)) => items
            .iter()
            .flat_map(|item| match item {
                Value::Object(m) => m
                    .iter()
                    .map(|(k, v)| (k.clone(), Some(v).filter(|v| truthy(v)).map(python::str)))
                    .collect::<Vec<_>>(),
                other => vec![(python::str(other), None)],
            })
            .collect(),
        Some(other) => python::str(other)
            .split(',')
            .map(|n| (n.trim().to_owned(), None))
            .collect(),
        None => call
            .opt_arg("name")
            .map(python::str)
            .into_iter()
            .flat_map(|n| {
                let names: Vec<String> = n.split(',').map(|s| s.trim().to_owned()).collect();
                let single = names.len() == 1;
                names
                    .into_iter()
                    .map(|name| (name, version.clone().filter(|_| single)))
                    .collect::<Vec<_>>()
            })
            .collect(),
    }
}

/// The `*names` of `version` and `latest_version`.
fn names(call: &Call) -> Vec<String> {
    call.varargs().iter().map(python::str).collect()
}

/// One name gives its value; several a dict, as Salt's `version`.
fn one_or_dict(names: &[String], values: Map<String, Value>) -> Value {
    match names {
        [one] => values.get(one).cloned().unwrap_or_else(|| json!("")),
        _ => Value::Object(values),
    }
}

const LIST_PKGS_DOC: &str = "List the installed packages as ``{name: version}`` (several
versions joined by commas, or a list with ``versions_as_list=True``). With apt,
``removed=True`` lists removed packages whose configuration remains, and
``purge_desired=True`` those marked for purge.

CLI Example:

.. code-block:: bash

    salt '*' pkg.list_pkgs
    salt '*' pkg.list_pkgs versions_as_list=True
";

async fn list_pkgs(call: Call) -> Result<Value, ExecError> {
    let as_list = is_true(call.arg("versions_as_list"));
    let pkgs = match backend()? {
        Backend::Apt => {
            let lists = apt::list(&call).await?;
            if is_true(call.arg("removed")) {
                lists.removed
            } else {
                let mut out = lists.purge_desired;
                if !is_true(call.arg("purge_desired")) {
                    out.extend(lists.installed);
                }
                out
            }
        }
        Backend::Dnf => dnf::list(&call).await?,
    };
    Ok(Value::Object(
        pkgs.into_iter()
            .map(|(name, versions)| {
                let v = if as_list {
                    json!(versions)
                } else {
                    json!(versions.join(","))
                };
                (name, v)
            })
            .collect(),
    ))
}

const VERSION_DOC: &str = "Return the installed version of a package, ``\"\"`` when it is not
installed; several names give a dict

CLI Example:

.. code-block:: bash

    salt '*' pkg.version <package name>
    salt '*' pkg.version <package1> <package2> <package3> ...
";

async fn version(call: Call) -> Result<Value, ExecError> {
    let names = names(&call);
    if names.is_empty() {
        return Err(ExecError::invocation(
            "You must specify at least one package name",
        ));
    }
    let pkgs = installed(&call, backend()?).await?;
    let values = names
        .iter()
        .map(|n| {
            (
                n.clone(),
                json!(pkgs.get(n).map(|v| v.join(",")).unwrap_or_default()),
            )
        })
        .collect();
    Ok(one_or_dict(&names, values))
}

const LATEST_VERSION_DOC: &str = "Return the newest version available for a package, or ``\"\"``
when the installed one is the newest (or none is available). Several names give a dict.
The package lists are refreshed first unless ``refresh=False``.

CLI Example:

.. code-block:: bash

    salt '*' pkg.latest_version <package name>
    salt '*' pkg.latest_version <package name> refresh=False
";

async fn latest_version(call: Call) -> Result<Value, ExecError> {
    let names = names(&call);
    if names.is_empty() {
        return Ok(json!(""));
    }
    let wants_refresh = call.kwargs().get("refresh").is_none_or(is_true);
    let backend = backend()?;
    if wants_refresh {
        refresh(&call, backend).await?;
    }
    let pkgs = installed(&call, backend).await?;
    let values = match backend {
        Backend::Apt => apt::latest(&call, &names, &pkgs).await?,
        Backend::Dnf => dnf::latest(&call, &names, &pkgs).await?,
    };
    Ok(one_or_dict(&names, values))
}

async fn refresh(call: &Call, backend: Backend) -> Result<Value, ExecError> {
    match backend {
        Backend::Apt => apt::refresh(call, false).await,
        Backend::Dnf => dnf::refresh(call).await,
    }
}

const REFRESH_DB_DOC: &str = "Update the package lists. With apt, returns ``{source: result}``:
``True`` fetched, ``None`` unchanged, ``False`` failed (``failhard=True`` makes a failure an
error; ``cache_valid_time`` skips the update when the lists are that many seconds fresh).
With dnf, ``True`` or ``False``.

CLI Example:

.. code-block:: bash

    salt '*' pkg.refresh_db
";

async fn refresh_db(call: Call) -> Result<Value, ExecError> {
    match backend()? {
        Backend::Apt => {
            let valid = call.arg("cache_valid_time").as_f64().unwrap_or(0.0);
            if valid > 0.0 && apt::lists_fresh(valid) {
                return Ok(json!({}));
            }
            apt::refresh(&call, is_true(call.arg("failhard"))).await
        }
        Backend::Dnf => dnf::refresh(&call).await,
    }
}

const LIST_UPGRADES_DOC: &str = "List the available upgrades as ``{name: version}``, refreshing
the package lists first unless ``refresh=False``. With apt, ``dist_upgrade=False`` lists
only what ``apt-get upgrade`` would do.

CLI Example:

.. code-block:: bash

    salt '*' pkg.list_upgrades
";

async fn list_upgrades(call: Call) -> Result<Value, ExecError> {
    let backend = backend()?;
    if is_true(call.arg("refresh")) {
        refresh(&call, backend).await?;
    }
    match backend {
        Backend::Apt => apt::upgradable(&call, is_true(call.arg("dist_upgrade"))).await,
        Backend::Dnf => dnf::upgradable(&call).await,
    }
}

/// Runs a change and reports it as `{name: {old, new}}`; a failed command is an error that
/// carries the changes made anyway, as Salt's.
async fn with_changes(
    call: &Call,
    backend: Backend,
    what: &str,
    output: crate::process::Output,
    before: Installed,
) -> Result<Value, ExecError> {
    let after = installed(call, backend).await?;
    let changes = changes(&before, &after);
    if output.code != 0 {
        let error = if output.stderr.trim().is_empty() {
            output.stdout
        } else {
            output.stderr
        };
        return Err(ExecError::execution(format!(
            "Problem encountered {what} package(s). Additional info follows:\n\nchanges:\n    {}\nerrors:\n    - {}",
            changes,
            error.trim()
        )));
    }
    Ok(changes)
}

const INSTALL_DOC: &str = "Install packages: ``name`` (with ``version=``), or ``pkgs``, a list of
names or ``{name: version}``. Returns ``{name: {old, new}}`` for what changed.

refresh: False
    Update the package lists first.

fromrepo
    Install from this release (apt) or repository (dnf).

CLI Example:

.. code-block:: bash

    salt '*' pkg.install <package name>
    salt '*' pkg.install <package name> version=1.2.3
    salt '*' pkg.install pkgs='[\"foo\", {\"bar\": \"1.2.3-4\"}]'
";

async fn install(call: Call) -> Result<Value, ExecError> {
    let targets = targets(&call);
    if targets.is_empty() {
        return Ok(json!({}));
    }
    let backend = backend()?;
    if is_true(call.arg("refresh")) {
        refresh(&call, backend).await?;
    }
    let before = installed(&call, backend).await?;
    let out = match backend {
        Backend::Apt => apt::install(&call, &targets).await?,
        Backend::Dnf => dnf::install(&call, &targets).await?,
    };
    with_changes(&call, backend, "installing", out, before).await
}

/// `remove` and `purge`.
async fn uninstall(call: &Call, purge: bool) -> Result<Value, ExecError> {
    let backend = backend()?;
    let before = installed(call, backend).await?;
    let targets: Vec<String> = targets(call)
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| before.contains_key(n) || (purge && backend == Backend::Apt))
        .collect();
    if targets.is_empty() {
        return Ok(json!({}));
    }
    let out = match backend {
        Backend::Apt => apt::remove(call, &targets, purge).await?,
        Backend::Dnf => dnf::remove(call, &targets).await?,
    };
    with_changes(call, backend, "removing", out, before).await
}

const REMOVE_DOC: &str = "Remove packages (``name``, comma-separated names, or ``pkgs``), keeping
their configuration files. Returns ``{name: {old, new}}``.

CLI Example:

.. code-block:: bash

    salt '*' pkg.remove <package name>
    salt '*' pkg.remove pkgs='[\"foo\", \"bar\"]'
";

async fn remove(call: Call) -> Result<Value, ExecError> {
    uninstall(&call, false).await
}

const PURGE_DOC: &str = "Remove packages with their configuration files. Returns ``{name: {old,
new}}``.

CLI Example:

.. code-block:: bash

    salt '*' pkg.purge <package name>
";

async fn purge(call: Call) -> Result<Value, ExecError> {
    uninstall(&call, true).await
}

const UPGRADE_DOC: &str = "Upgrade every package (``apt-get upgrade``, ``dist-upgrade`` with
``dist_upgrade=True``, or ``dnf upgrade``), refreshing the lists first unless
``refresh=False``. Returns ``{name: {old, new}}``.

CLI Example:

.. code-block:: bash

    salt '*' pkg.upgrade
";

async fn upgrade(call: Call) -> Result<Value, ExecError> {
    let backend = backend()?;
    if is_true(call.arg("refresh")) {
        refresh(&call, backend).await?;
    }
    let before = installed(&call, backend).await?;
    let out = match backend {
        Backend::Apt => apt::upgrade(&call, is_true(call.arg("dist_upgrade"))).await?,
        Backend::Dnf => dnf::upgrade(&call).await?,
    };
    with_changes(&call, backend, "upgrading", out, before).await
}

#[cfg(test)]
mod tests;
