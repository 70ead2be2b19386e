//! Salt's `pkg` module for apt/dpkg (`aptpkg`) and dnf/rpm (`yumpkg`): the package manager is
//! chosen by the grains as Salt's `__virtual__` functions choose (`os_family` Debian: apt;
//! RedHat, or one of yumpkg's other OS names: dnf), by the tools present when the grains
//! name neither. Changes are reported as Salt does, `{name: {old, new}}`, computed from the
//! installed packages before and after. The repository functions (`list_repos`,
//! `get_repo`, `mod_repo`, `del_repo`) edit apt's sources (`aptrepo`) or dnf's `.repo` files
//! (`yumrepo`).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, is_true, truthy};

use crate::error::ExecError;

use crate::spec::{Call, Function, Lit, Param};

mod apt;
pub use apt::compare_versions;
mod aptkey;
pub mod aptrepo;
mod dnf;
pub mod yumrepo;

/// The `pkg` module's functions (aptpkg's signatures).
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("pkg.add_repo_key", handler!(add_repo_key))
        .params(&[
            Param::opt("path", Lit::None),
            Param::opt("text", Lit::None),
            Param::opt("keyserver", Lit::None),
            Param::opt("keyid", Lit::None),
            Param::opt("saltenv", Lit::Str("base")),
            Param::opt("aptkey", Lit::Bool(true)),
            Param::opt("keydir", Lit::None),
            Param::opt("keyfile", Lit::None),
        ])
        .doc(ADD_REPO_KEY_DOC),
    Function::new("pkg.del_repo", handler!(del_repo))
        .params(&[Param::req("repo")])
        .kwargs()
        .doc(DEL_REPO_DOC),
    Function::new("pkg.del_repo_key", handler!(del_repo_key))
        .params(&[
            Param::opt("name", Lit::None),
            Param::opt("aptkey", Lit::Bool(true)),
            Param::opt("keydir", Lit::None),
        ])
        .kwargs()
        .doc(DEL_REPO_KEY_DOC),
    Function::new("pkg.get_repo", handler!(get_repo))
        .params(&[Param::req("repo")])
        .kwargs()
        .doc(GET_REPO_DOC),
    Function::new("pkg.get_repo_keys", handler!(get_repo_keys))
        .params(&[
            Param::opt("aptkey", Lit::Bool(true)),
            Param::opt("keydir", Lit::None),
        ])
        .doc(GET_REPO_KEYS_DOC),
    Function::new("pkg.get_selections", handler!(get_selections))
        .params(&[
            Param::opt("pattern", Lit::None),
            Param::opt("state", Lit::None),
        ])
        .doc(GET_SELECTIONS_DOC),
    Function::new("pkg.hold", handler!(hold))
        .params(&[
            Param::opt("name", Lit::None),
            Param::opt("pkgs", Lit::None),
            Param::opt("sources", Lit::None),
        ])
        .kwargs()
        .doc(HOLD_DOC),
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
    Function::new("pkg.list_holds", handler!(list_holds))
        .params(&[
            Param::opt("pattern", Lit::Str(dnf::HOLD_PATTERN)),
            Param::opt("full", Lit::Bool(true)),
        ])
        .doc(LIST_HOLDS_DOC),
    Function::new("pkg.list_pkgs", handler!(list_pkgs))
        .params(&[
            Param::opt("versions_as_list", Lit::Bool(false)),
            Param::opt("removed", Lit::Bool(false)),
            Param::opt("purge_desired", Lit::Bool(false)),
        ])
        .kwargs()
        .doc(LIST_PKGS_DOC),
    Function::new("pkg.list_repos", handler!(list_repos))
        .kwargs()
        .doc(LIST_REPOS_DOC),
    Function::new("pkg.list_upgrades", handler!(list_upgrades))
        .params(&[
            Param::opt("refresh", Lit::Bool(true)),
            Param::opt("dist_upgrade", Lit::Bool(true)),
        ])
        .kwargs()
        .doc(LIST_UPGRADES_DOC),
    Function::new("pkg.mod_repo", handler!(mod_repo))
        .params(&[
            Param::req("repo"),
            Param::opt("saltenv", Lit::Str("base")),
            Param::opt("aptkey", Lit::Bool(true)),
        ])
        .kwargs()
        .doc(MOD_REPO_DOC),
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
    Function::new("pkg.set_selections", handler!(set_selections))
        .params(&[
            Param::opt("path", Lit::None),
            Param::opt("selection", Lit::None),
            Param::opt("clear", Lit::Bool(false)),
            Param::opt("saltenv", Lit::Str("base")),
        ])
        .doc(SET_SELECTIONS_DOC),
    Function::new("pkg.unhold", handler!(unhold))
        .params(&[
            Param::opt("name", Lit::None),
            Param::opt("pkgs", Lit::None),
            Param::opt("sources", Lit::None),
        ])
        .kwargs()
        .doc(UNHOLD_DOC),
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

/// The package manager by the tools present (`dpkg-query` and `apt-get`, else `rpm` and
/// `dnf`/`yum`).
fn tools_backend() -> Result<Backend, ExecError> {
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

/// The OS names yumpkg's `__virtual__` takes besides `os_family: RedHat` (lowercased).
const YUM_OS: &[&str] = &[
    "amazon",
    "xcp",
    "xenserver",
    "virtuozzolinux",
    "virtuozzo",
    "issabel pbx",
    "openeuler",
];

/// The package manager the grains name, as Salt's `aptpkg`/`yumpkg` `__virtual__` decide
/// (`os_family` Debian, or RedHat / one of [`YUM_OS`]); without `os_family`, the OS names
/// Salt counts as Debian. `None` when the grains name neither.
pub(crate) fn grains_backend(grains: &Value) -> Option<Backend> {
    let family = grains.get("os_family").and_then(Value::as_str);
    let os = grains.get("os").and_then(Value::as_str).unwrap_or_default();
    if family == Some("Debian") {
        return Some(Backend::Apt);
    }
    if family.is_some_and(|f| f.eq_ignore_ascii_case("redhat"))
        || YUM_OS.contains(&os.to_lowercase().as_str())
    {
        return Some(Backend::Dnf);
    }
    match (family, os) {
        (None, "Debian" | "Ubuntu" | "Mint" | "Raspbian" | "Devuan") => Some(Backend::Apt),
        _ => None,
    }
}

/// The package manager for installing and listing packages: the grains' choice, whose
/// tools must be present, else the tools present.
fn backend(call: &Call) -> Result<Backend, ExecError> {
    let has = |t: &str| crate::modules::cmd::which_path(t).is_some();
    match grains_backend(&call.ctx.grains()) {
        Some(Backend::Apt) if has("dpkg-query") && has("apt-get") => Ok(Backend::Apt),
        Some(Backend::Apt) => Err(ExecError::execution(
            "the grains say os_family Debian but apt-get or dpkg-query is missing",
        )),
        Some(Backend::Dnf) if has("rpm") && (has("dnf") || has("yum")) => Ok(Backend::Dnf),
        Some(Backend::Dnf) => Err(ExecError::execution(
            "the grains say a yum-based OS but DNF nor YUM (or rpm) was found",
        )),
        None => tools_backend(),
    }
}

/// The repository format for the repository functions: the grains' choice (they edit
/// files, so the package tools need not be present), else the tools present.
fn repo_backend(call: &Call) -> Result<Backend, ExecError> {
    grains_backend(&call.ctx.grains()).map_or_else(tools_backend, Ok)
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
    let pkgs = match backend(&call)? {
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
    let pkgs = installed(&call, backend(&call)?).await?;
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
    let backend = backend(&call)?;
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
    match backend(&call)? {
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
    let backend = backend(&call)?;
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
    let files = source_files(&call).await?;
    let targets = if files.is_empty() {
        targets(&call)
    } else {
        Vec::new()
    };
    if targets.is_empty() && files.is_empty() {
        return Ok(json!({}));
    }
    let backend = backend(&call)?;
    if is_true(call.arg("refresh")) {
        refresh(&call, backend).await?;
    }
    let before = installed(&call, backend).await?;
    let out = match backend {
        Backend::Apt => apt::install(&call, &targets, &files).await?,
        Backend::Dnf => dnf::install(&call, &targets, &files).await?,
    };
    with_changes(&call, backend, "installing", out, before).await
}

/// Salt's `pkg_resource.parse_targets` for `sources` (`[{name: source}, ...]`): each
/// package file's local path, `salt://` sources cached from the master first. `pkgs` and
/// `sources` together, a malformed list, or a relative path are refused.
async fn source_files(call: &Call) -> Result<Vec<String>, ExecError> {
    let Some(sources) = call.opt_arg("sources") else {
        return Ok(Vec::new());
    };
    if call.opt_arg("pkgs").is_some_and(truthy) {
        return Err(ExecError::invocation(
            "Only one of pkgs or sources can be specified.",
        ));
    }
    let packed = pack_sources(sources).ok_or_else(|| {
        ExecError::invocation(format!(
            "Invalid 'sources': a list of one-entry dicts ({{name: source}}) was expected, got {}",
            python::repr(sources)
        ))
    })?;
    let saltenv = call
        .kwargs()
        .get("saltenv")
        .map_or_else(|| "base".to_owned(), python::str);
    let mut files = Vec::new();
    for (name, src) in packed {
        if src.contains("://") {
            match crate::modules::cp::cache_one(call, &src, &saltenv).await? {
                Value::String(p) => files.push(p),
                _ => {
                    return Err(ExecError::execution(format!(
                        "Unable to cache {src} for package {name}: file not found"
                    )));
                }
            }
        } else if std::path::Path::new(&src).is_absolute() {
            // Salt reads each file's metadata first (`lowpkg.bin_pkg_info`), which fails so.
            if !std::path::Path::new(&src).exists() {
                return Err(ExecError::execution(format!(
                    "{src} does not exist on minion"
                )));
            }
            files.push(src);
        } else {
            return Err(ExecError::invocation(format!(
                "Path {src} for package {name} is either not absolute or an invalid protocol"
            )));
        }
    }
    Ok(files)
}

/// Salt's `pkg_resource.pack_sources`: `[{name: source}, ...]` as `(name, source)` pairs,
/// `None` when an entry is not a one-key dict.
pub fn pack_sources(sources: &Value) -> Option<Vec<(String, String)>> {
    let list = match sources {
        Value::Array(a) => a.clone(),
        Value::String(s) => serde_yaml_ng::from_str::<Value>(s)
            .ok()?
            .as_array()?
            .clone(),
        _ => return None,
    };
    list.iter()
        .map(|item| {
            let m = item.as_object().filter(|m| m.len() == 1)?;
            let (k, v) = m.iter().next()?;
            Some((k.clone(), python::str(v)))
        })
        .collect()
}

/// `remove` and `purge`. apt's purge answers `{"removed": ..., "installed": ...}`: the
/// changes to the packages whose configuration remained, and to the installed ones.
async fn uninstall(call: &Call, purge: bool) -> Result<Value, ExecError> {
    let backend = backend(call)?;
    let apt_purge = purge && backend == Backend::Apt;
    let (before, removed_before) = match backend {
        Backend::Apt => {
            let lists = apt::list(call).await?;
            (lists.installed, lists.removed)
        }
        Backend::Dnf => (dnf::list(call).await?, Installed::new()),
    };
    let targets: Vec<String> = targets(call)
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| before.contains_key(n) || (apt_purge && removed_before.contains_key(n)))
        .collect();
    if targets.is_empty() {
        return Ok(json!({}));
    }
    let out = match backend {
        Backend::Apt => apt::remove(call, &targets, purge).await?,
        Backend::Dnf => dnf::remove(call, &targets).await?,
    };
    if !apt_purge {
        return with_changes(call, backend, "removing", out, before).await;
    }
    let after = apt::list(call).await?;
    let ret = json!({
        "removed": changes(&removed_before, &after.removed),
        "installed": changes(&before, &after.installed),
    });
    if out.code != 0 && !out.stderr.trim().is_empty() {
        return Err(ExecError::execution(format!(
            "Problem encountered removing package(s). Additional info follows:\n\nchanges:\n    {}\nerrors:\n    - {}",
            ret,
            out.stderr.trim()
        )));
    }
    Ok(ret)
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
    let backend = backend(&call)?;
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

/// `pkg.hold`/`pkg.unhold`'s targets: `pkgs` (names or `{name: version}`), the names of
/// `sources`, or `name`.
fn hold_targets(call: &Call) -> Result<Vec<String>, ExecError> {
    let (name, pkgs, sources) = (
        call.opt_arg("name").filter(|v| truthy(v)),
        call.opt_arg("pkgs").filter(|v| truthy(v)),
        call.opt_arg("sources").filter(|v| truthy(v)),
    );
    if name.is_none() && pkgs.is_none() && sources.is_none() {
        return Err(ExecError::invocation(
            "One of name, pkgs, or sources must be specified.",
        ));
    }
    if pkgs.is_some() && sources.is_some() {
        return Err(ExecError::invocation(
            "Only one of pkgs or sources can be specified.",
        ));
    }
    let first_key = |v: &Value| match v {
        Value::Object(m) => m.keys().next().cloned().unwrap_or_default(),
        other => python::str(other),
    };
    Ok(match (pkgs, sources, name) {
        (Some(Value::Array(p)), _, _) | (None, Some(Value::Array(p)), _) => {
            p.iter().map(first_key).collect()
        }
        (Some(other), _, _) | (None, Some(other), _) => vec![python::str(other)],
        (None, None, Some(n)) => vec![python::str(n)],
        (None, None, None) => Vec::new(),
    })
}

/// Test mode for `hold`/`unhold` called from the command line: `test=True` or the minion's
/// `test` option.
fn test_mode(call: &Call) -> bool {
    call.kwargs().get("test").is_some_and(is_true) || call.ctx.opt("test").is_some_and(is_true)
}

const HOLD_DOC: &str = "Hold packages so that they are not upgraded: ``name``, ``pkgs`` (a
list) or the names of ``sources``. With apt the dpkg selection becomes ``hold``; with dnf a
versionlock is added (the versionlock plugin must be installed). Returns ``{name: {name,
changes, result, comment}}`` for each package.

CLI Example:

.. code-block:: bash

    salt '*' pkg.hold <package name>
    salt '*' pkg.hold pkgs='[\"foo\", \"bar\"]'
";

async fn hold(call: Call) -> Result<Value, ExecError> {
    hold_or_unhold(call, true).await
}

const UNHOLD_DOC: &str = "Release held packages (``name``, ``pkgs`` or the names of
``sources``): with apt the dpkg selection becomes ``install`` again; with dnf the versionlock
is deleted. Returns ``{name: {name, changes, result, comment}}`` for each package.

CLI Example:

.. code-block:: bash

    salt '*' pkg.unhold <package name>
    salt '*' pkg.unhold pkgs='[\"foo\", \"bar\"]'
";

async fn unhold(call: Call) -> Result<Value, ExecError> {
    hold_or_unhold(call, false).await
}

async fn hold_or_unhold(call: Call, on: bool) -> Result<Value, ExecError> {
    let backend = backend(&call)?;
    let targets = hold_targets(&call)?;
    let test = test_mode(&call);
    Ok(Value::Object(match backend {
        Backend::Apt => apt::hold(&call, &targets, on, test).await?,
        Backend::Dnf => dnf::hold(&call, &targets, on, test).await?,
    }))
}

const LIST_HOLDS_DOC: &str = "List the packages held by dnf's versionlock plugin: the full lock
(``name-[epoch:]version-release.arch.*``), or only the names with ``full=False``. ``pattern``
is the regular expression a package name must match. With apt, held packages are listed by
``pkg.get_selections state=hold``.

CLI Example:

.. code-block:: bash

    salt '*' pkg.list_holds
    salt '*' pkg.list_holds full=False
";

async fn list_holds(call: Call) -> Result<Value, ExecError> {
    match backend(&call)? {
        Backend::Dnf => {
            let pattern = python::str(call.arg("pattern"));
            Ok(json!(
                dnf::list_holds(&call, &pattern, is_true(call.arg("full"))).await?
            ))
        }
        Backend::Apt => Err(ExecError::execution(
            "pkg.list_holds reads dnf's versionlock list; this minion uses apt: use pkg.get_selections state=hold",
        )),
    }
}

const GET_SELECTIONS_DOC: &str = "The dpkg selection state of packages (``dpkg
--get-selections``) as ``{state: [package, ...]}``; ``pattern`` is a glob on the package
names, ``state`` keeps only that state. apt only.

CLI Example:

.. code-block:: bash

    salt '*' pkg.get_selections
    salt '*' pkg.get_selections 'python-*'
    salt '*' pkg.get_selections state=hold
";

async fn get_selections(call: Call) -> Result<Value, ExecError> {
    require_apt(&call, "pkg.get_selections")?;
    let pattern = call.opt_arg("pattern").map(python::str);
    let sel = apt::get_selections(&call, pattern.as_deref()).await?;
    Ok(match call.opt_arg("state").map(python::str) {
        Some(state) => {
            let list = sel.get(&state).cloned().unwrap_or_else(|| json!([]));
            json!({ state: list })
        }
        None => Value::Object(sel),
    })
}

const SET_SELECTIONS_DOC: &str = "Set the dpkg selection state of packages: ``selection`` is
``{state: [package, ...]}`` (a dict or its YAML text), the state one of ``install``,
``hold``, ``deinstall``, ``purge``; or ``path``, a file of ``dpkg --get-selections`` lines
(``salt://`` or local). ``clear=True`` first sets every package to ``deinstall``. Returns
``{package: {old, new}}`` for the packages changed. apt only.

CLI Example:

.. code-block:: bash

    salt '*' pkg.set_selections selection='{\"hold\": [\"openssh-server\"]}'
    salt '*' pkg.set_selections salt://path/to/file
";

async fn set_selections(call: Call) -> Result<Value, ExecError> {
    require_apt(&call, "pkg.set_selections")?;
    let path = call.opt_arg("path").filter(|v| truthy(v));
    let selection = call.opt_arg("selection").filter(|v| truthy(v));
    let selection = match (path, selection) {
        (None, None) => return Ok(json!({})),
        (Some(_), Some(_)) => {
            return Err(ExecError::invocation(
                "The 'selection' and 'path' arguments to pkg.set_selections are mutually exclusive, and cannot be specified together",
            ));
        }
        (None, Some(Value::String(text))) => match serde_yaml_ng::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(other) => {
                return Err(ExecError::invocation(format!(
                    "Improperly-formatted selection: expected a mapping, got {}",
                    python::repr(&other)
                )));
            }
            Err(e) => {
                return Err(ExecError::invocation(format!(
                    "Improperly-formatted selection: {e}"
                )));
            }
        },
        (None, Some(Value::Object(m))) => m.clone(),
        (None, Some(other)) => {
            return Err(ExecError::invocation(format!(
                "Improperly-formatted selection: expected a mapping, got {}",
                python::repr(other)
            )));
        }
        (Some(p), None) => {
            let saltenv = python::str(call.arg("saltenv"));
            let local =
                match crate::modules::cp::cache_one(&call, &python::str(p), &saltenv).await? {
                    Value::String(l) => l,
                    _ => {
                        return Err(ExecError::execution(format!(
                            "Unable to cache {}: file not found",
                            python::str(p)
                        )));
                    }
                };
            let text = std::fs::read_to_string(&local)
                .map_err(|e| ExecError::execution(format!("reading {local}: {e}")))?;
            apt::parse_selections(&text)
        }
    };
    let test = test_mode(&call);
    if is_true(call.arg("clear")) && !test {
        let out = crate::modules::run_cmd(&call, &["dpkg", "--clear-selections"]).await?;
        if out.code != 0 {
            return Err(ExecError::execution(format!(
                "Running dpkg --clear-selections failed: {}",
                out.stderr.trim()
            )));
        }
    }
    Ok(Value::Object(
        apt::set_selections(&call, &selection, test).await?,
    ))
}

const LIST_REPOS_DOC: &str = "List the repositories. With apt, those of
``/etc/apt/sources.list`` and ``/etc/apt/sources.list.d/*.list`` by URI: each entry's
``file``, ``type``, ``uri``, ``dist``, ``comps``, ``architectures``, ``signedby``,
``disabled`` and ``line`` (deb822 ``.sources`` files are not read, nor are they by Salt).
With dnf/yum, those of the ``.repo`` files in ``basedir`` (comma-separated; default: the
``reposdir`` of the yum/dnf config) by id: each one's options and ``file``.
``strict_config=False`` lets a file repeat a section or option.

CLI Example:

.. code-block:: bash

    salt '*' pkg.list_repos
    salt '*' pkg.list_repos basedir=/path/to/dir,/path/to/another/dir
";

fn apt_root() -> &'static std::path::Path {
    std::path::Path::new("/")
}

/// The yum/dnf `basedir` and `strict_config` of a repository call.
fn yum_dirs(call: &Call) -> Result<(Vec<String>, bool), ExecError> {
    let kw = call.kwargs();
    let dirs = yumrepo::normalize_basedir(kw.get("basedir"), apt_root())?;
    Ok((dirs, kw.get("strict_config").is_none_or(truthy)))
}

/// Salt's `copr:` repositories need dnf's copr plugin and the network: not done.
fn refuse_copr(repo: &str) -> Result<(), ExecError> {
    if repo.starts_with("copr:") {
        return Err(ExecError::invocation(format!(
            "{repo}: COPR repositories are not supported by saltq"
        )));
    }
    Ok(())
}

async fn list_repos(call: Call) -> Result<Value, ExecError> {
    match repo_backend(&call)? {
        Backend::Apt => Ok(Value::Object(aptrepo::list_repos(&aptrepo::load(
            apt_root(),
        )))),
        Backend::Dnf => {
            let (dirs, strict) = yum_dirs(&call)?;
            Ok(Value::Object(yumrepo::list_repos(&dirs, strict)?))
        }
    }
}

const GET_REPO_DOC: &str = "One repository; ``{}`` when none matches. With apt, the entry
matching a complete definition (``deb [opts] URI SUITE [COMPONENTS]``): same type, URI and
suite, sharing a component. With dnf/yum, the options of the repository of that id in the
``.repo`` files of ``basedir`` (default: the ``reposdir`` of the yum/dnf config).

CLI Example:

.. code-block:: bash

    salt '*' pkg.get_repo \"deb http://deb.debian.org/debian bookworm main\"
    salt '*' pkg.get_repo myrepo basedir=/path/to/dir
";

async fn get_repo(call: Call) -> Result<Value, ExecError> {
    let repo = python::str(call.arg("repo"));
    match repo_backend(&call)? {
        Backend::Apt => {
            let auth = call.kwargs().get("ppa_auth").filter(|v| truthy(v));
            let repo = ppa_line(&call, &repo, auth.map(python::str), false)?.unwrap_or(repo);
            Ok(aptrepo::get_repo(&aptrepo::load(apt_root()), &repo))
        }
        Backend::Dnf => {
            refuse_copr(&repo)?;
            let (dirs, strict) = yum_dirs(&call)?;
            yumrepo::get_repo(&dirs, &repo, strict)
        }
    }
}

const MOD_REPO_DOC: &str = "Add or change a repository.

With apt: a repository given by its complete line (``deb [arch=... signed-by=...] URI
SUITE [COMPONENTS]``), written to ``file`` (default ``/etc/apt/sources.list``). Also:
``comps`` and ``architectures`` (comma-separated), ``disabled``/``enabled``, ``comments``,
``refresh`` (default ``True``: ``apt-get update`` after). A signing key comes from
``key_url`` (``salt://`` or a local path) or ``key_text``: with ``aptkey=False`` (or no
``apt-key``) it is written, dearmored, to the line's ``signed-by`` path; else ``apt-key
add`` imports it. ``keyid`` (one or a list) with ``keyserver``: each key not already there
is fetched, with apt-key, or with gpg into the ``signed-by`` keyring. ``ppa:owner/name``
on Ubuntu is added by ``apt-add-repository`` (network); without it saltq does not look the
PPA's key up on Launchpad and says so.

With dnf/yum: the options of the repository of id ``repo`` in its ``.repo`` file:
``name``, ``baseurl``/``mirrorlist``/``metalink``, ``enabled``, ``gpgcheck``, ``gpgkey``,
``comments`` or any other (a blank value deletes the option; ``baseurl`` and
``mirrorlist`` replace each other). A repository no file has is created in ``<first
existing basedir>/<repo>.repo`` and needs ``name`` and ``baseurl`` or ``mirrorlist``.
``basedir``: comma-separated directories (default: the ``reposdir`` of the yum/dnf
config). Returns ``{file: {id: options}}`` for the file written.

CLI Example:

.. code-block:: bash

    salt '*' pkg.mod_repo 'deb [signed-by=/etc/apt/keyrings/x.gpg] https://repo.example/debian bookworm main' file=/etc/apt/sources.list.d/x.list key_url=salt://keys/x.asc aptkey=False
    salt '*' pkg.mod_repo myrepo name='My repo' baseurl=https://repo.example/el9/ gpgcheck=1
";

async fn mod_repo(call: Call) -> Result<Value, ExecError> {
    if repo_backend(&call)? == Backend::Dnf {
        return yum_mod_repo(&call);
    }
    let repo = python::str(call.arg("repo"));
    if repo.starts_with("ppa:") {
        return ppa_mod_repo(&call, &repo).await;
    }
    let kw = call.kwargs();
    let aptkey =
        is_true(call.arg("aptkey")) && crate::modules::cmd::which_path("apt-key").is_some();
    let entry = aptrepo::SourceEntry::parse(&repo, "");
    if entry.invalid {
        return Err(ExecError::invocation(format!(
            "Name {repo} is not valid. This must be the complete repo entry as seen in the sources file"
        )));
    }
    if !aptkey && entry.signedby.is_empty() {
        return Err(ExecError::invocation(
            "missing 'signedby' option when apt-key is missing",
        ));
    }
    if kw.contains_key("keyid") {
        let keyid = kw.get("keyid").filter(|v| truthy(v));
        let keyserver = kw.get("keyserver").filter(|v| truthy(v));
        let (Some(keyid), Some(keyserver)) = (keyid, keyserver) else {
            return Err(ExecError::exception(
                "NameError",
                "both keyserver and keyid options required.",
            ));
        };
        let keyserver = python::str(keyserver);
        let ids: Vec<String> = match keyid {
            Value::Array(a) => a.iter().map(key_id).collect(),
            one => vec![key_id(one)],
        };
        for id in ids {
            fetch_key(&call, &id, &keyserver, aptkey, &entry.signedby).await?;
        }
    } else if let Some(url) = kw.get("key_url") {
        let url = python::str(url);
        let saltenv = python::str(call.arg("saltenv"));
        let local = match crate::modules::cp::cache_one(&call, &url, &saltenv).await? {
            Value::String(p) => p,
            _ => {
                return Err(ExecError::execution(format!(
                    "Error: file not found: {url}"
                )));
            }
        };
        add_key(&call, &local, None, aptkey, &entry.signedby, &url).await?;
    } else if let Some(text) = kw.get("key_text") {
        let text = python::str(text);
        add_key(&call, "-", Some(&text), aptkey, &entry.signedby, &text).await?;
    }
    let split = |k: &str| {
        kw.get(k).map(|v| {
            python::str(v)
                .split(',')
                .map(|s| s.trim().to_owned())
                .collect::<Vec<_>>()
        })
    };
    let disabled = kw
        .get("disabled")
        .map(is_true)
        .or_else(|| kw.get("enabled").map(|v| !is_true(v)));
    let comments = kw.get("comments").map(|c| match c {
        Value::Array(a) => a
            .iter()
            .map(python::str)
            .collect::<Vec<_>>()
            .join(" ")
            .trim()
            .to_owned(),
        other => python::str(other).trim().to_owned(),
    });
    let change = aptrepo::RepoChange {
        comps: split("comps"),
        architectures: split("architectures"),
        disabled,
        file: kw.get("file").map(python::str),
        comments,
    };
    let mut list = aptrepo::load(apt_root());
    let ret =
        aptrepo::mod_repo(&mut list, apt_root(), &repo, &change).map_err(ExecError::invocation)?;
    aptrepo::save(&list)
        .map_err(|e| ExecError::execution(format!("writing the apt sources for {repo}: {e}")))?;
    if kw.get("refresh").is_none_or(is_true) {
        apt::refresh(&call, false).await?;
    }
    Ok(ret)
}

/// `mod_repo` with dnf/yum: every keyword argument but `basedir`, `saltenv` and Salt's
/// `__pub` ones is an option of the repository.
fn yum_mod_repo(call: &Call) -> Result<Value, ExecError> {
    let repo = python::str(call.arg("repo"));
    refuse_copr(&repo)?;
    let opts: Map<String, Value> = call
        .kwargs()
        .iter()
        .filter(|(k, _)| !k.starts_with("__") && !matches!(k.as_str(), "basedir" | "saltenv"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let (dirs, strict) = yum_dirs(call)?;
    yumrepo::mod_repo(&dirs, &repo, &opts, strict)
}

/// Salt's `LP_SRC_FORMAT`: a PPA's apt line.
fn lp_line(owner: &str, name: &str, dist: &str) -> String {
    format!("deb http://ppa.launchpad.net/{owner}/{name}/ubuntu {dist} main")
}

/// Whether the grains name an OS where Salt expands `ppa:` definitions.
fn ppa_os(call: &Call) -> bool {
    let os = call.ctx.grains().get("os").map(python::str);
    matches!(os.as_deref(), Some("Ubuntu" | "Mint" | "neon"))
}

/// A `ppa:owner/name` definition as the apt line Salt's `get_repo`/`del_repo` look for on
/// Ubuntu (`del` keeps Salt's `del_repo` order of a private PPA's parts); `None` for any other
/// definition or OS.
fn ppa_line(
    call: &Call,
    repo: &str,
    auth: Option<String>,
    del: bool,
) -> Result<Option<String>, ExecError> {
    let Some(ppa) = repo.strip_prefix("ppa:").filter(|_| ppa_os(call)) else {
        return Ok(None);
    };
    let dist = call
        .ctx
        .grains()
        .get("oscodename")
        .map(python::str)
        .unwrap_or_default();
    let parts: Vec<&str> = ppa.split('/').collect();
    let [owner, name] = parts.as_slice() else {
        return Err(ExecError::exception(
            "ValueError",
            format!(
                "not enough values to unpack (expected 2, got {}): {repo} is not ppa:<owner>/<name>",
                parts.len()
            ),
        ));
    };
    Ok(Some(match auth {
        Some(a) if del => {
            format!("deb https://{a}@private-ppa.launchpad.net/{dist}/{owner}/ubuntu {name} main")
        }
        Some(a) => {
            format!("deb https://{a}@private-ppa.launchpad.net/{owner}/{name}/ubuntu {dist} main")
        }
        None => lp_line(owner, name, &dist),
    }))
}

/// `mod_repo` of a `ppa:` definition. On Ubuntu with `apt-add-repository` (and no
/// `ppa_auth`), that tool adds it, as Salt has it; without the tool, Salt asks Launchpad
/// for the PPA's signing key, which saltq does not do: the error says so and what to give
/// instead. Elsewhere Salt cannot parse the definition.
async fn ppa_mod_repo(call: &Call, repo: &str) -> Result<Value, ExecError> {
    if !ppa_os(call) {
        return Err(ExecError::execution(format!(
            "cannot parse \"ppa:\" style repo definitions: {repo}"
        )));
    }
    let kw = call.kwargs();
    if crate::modules::cmd::which_path("apt-add-repository").is_some()
        && !kw.contains_key("ppa_auth")
    {
        let auth = None;
        let line = ppa_line(call, repo, auth, false)?.unwrap_or_default();
        let found = aptrepo::get_repo(&aptrepo::load(apt_root()), &line);
        if found.as_object().is_some_and(|m| !m.is_empty()) {
            return Ok(json!({ repo: found }));
        }
        let out = crate::modules::run_cmd(call, &["apt-add-repository", "-y", repo]).await?;
        if out.code != 0 {
            return Err(ExecError::execution(format!(
                "Unable to add PPA '{}'. '{}' exited with status {}: '{}' ",
                &repo[4..],
                python::repr(&json!(["apt-add-repository", "-y", repo])),
                out.code,
                out.stderr
            )));
        }
        if kw
            .get("refresh_db")
            .or_else(|| kw.get("refresh"))
            .is_none_or(is_true)
        {
            apt::refresh(call, false).await?;
        }
        return Ok(
            json!({ repo: {"retcode": out.code, "stdout": out.stdout, "stderr": out.stderr} }),
        );
    }
    let Some((owner, name)) = repo[4..].split_once('/') else {
        return Err(ExecError::execution(format!(
            "Unable to get PPA info from argument. Expected format \"<PPA_OWNER>/<PPA_NAME>\" (e.g. saltstack/salt) not found.  Received '{}' instead.",
            &repo[4..]
        )));
    };
    let dist = call
        .ctx
        .grains()
        .get("oscodename")
        .map(python::str)
        .unwrap_or_default();
    Err(ExecError::execution(format!(
        "Unable to add PPA '{owner}/{name}': its signing key is looked up on Launchpad (https://launchpad.net/api/1.0/~{owner}/+archive/{name}), which needs the network, and saltq does not do that lookup (nor is apt-add-repository here); give the line '{}' with keyid and keyserver, or key_url, instead",
        lp_line(owner, name, &dist)
    )))
}

/// A key id as Salt passes it to gpg: YAML may have made a number of it, which Salt writes
/// in hex.
fn key_id(v: &Value) -> String {
    match v.as_i64() {
        Some(n) if n < 0 => format!("-{:#x}", n.unsigned_abs()),
        Some(n) => format!("{n:#x}"),
        None => python::str(v),
    }
}

/// `mod_repo`'s `keyid`/`keyserver`: the key fetched unless already there, with apt-key, or
/// without it into the line's `signed-by` keyring.
async fn fetch_key(
    call: &Call,
    id: &str,
    keyserver: &str,
    aptkey: bool,
    signedby: &str,
) -> Result<(), ExecError> {
    if aptkey {
        let exported = crate::modules::run_cmd(call, &["apt-key", "export", id]).await?;
        if exported.stdout.starts_with("-----BEGIN PGP") {
            return Ok(());
        }
        let out = crate::modules::run_cmd(
            call,
            &[
                "apt-key",
                "adv",
                "--batch",
                "--keyserver",
                keyserver,
                "--logger-fd",
                "1",
                "--recv-keys",
                id,
            ],
        )
        .await?;
        if out.code != 0 {
            return Err(ExecError::execution(format!(
                "Error: key retrieval failed: {}",
                out.stdout
            )));
        }
        return Ok(());
    }
    let keydir = std::path::Path::new(signedby)
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let known = aptkey::get_repo_keys(call, false, &keydir)
        .await?
        .ok_or_else(|| {
            ExecError::exception("AttributeError", "'bool' object has no attribute 'get'")
        })?;
    if known.contains_key(id) {
        return Ok(());
    }
    let added = aptkey::add_repo_key(
        call,
        aptkey::AddKey {
            keyserver: Some(keyserver.to_owned()),
            keyid: Some(id.to_owned()),
            aptkey: false,
            keydir,
            keyfile: Some(signedby.to_owned()),
            ..aptkey::AddKey::default()
        },
    )
    .await?;
    if !added {
        return Err(ExecError::execution(format!(
            "Error: Could not add key: {id}"
        )));
    }
    Ok(())
}

/// Adds a signing key: dearmored (`gpg --dearmor`) or copied to the `signed-by` path
/// without apt-key, else `apt-key add`.
async fn add_key(
    call: &Call,
    path: &str,
    text: Option<&str>,
    aptkey: bool,
    signedby: &str,
    what: &str,
) -> Result<(), ExecError> {
    if aptkey {
        let out =
            crate::modules::run_cmd_stdin(call, &["apt-key", "add", path], text.map(str::as_bytes))
                .await?;
        if !out.stdout.trim_start().to_uppercase().starts_with("OK") {
            return Err(ExecError::execution(match text {
                Some(t) => format!("Error: failed to add key:\n{t}"),
                None => format!("Error: failed to add key from {what}"),
            }));
        }
        return Ok(());
    }
    let dest = std::path::Path::new(signedby);
    let keydir_ok = dest.parent().is_some_and(std::path::Path::is_dir);
    let source = match text {
        Some(t) => t.as_bytes().to_vec(),
        None => std::fs::read(path)
            .map_err(|e| ExecError::execution(format!("Error: Could not add key: {path}: {e}")))?,
    };
    if !keydir_ok {
        return Err(ExecError::execution(format!(
            "Error: Could not add key: {what}: the directory of {signedby} does not exist"
        )));
    }
    let armored = String::from_utf8_lossy(&source)
        .trim_start_matches('-')
        .starts_with("BEGIN PGP");
    if armored {
        let out = crate::modules::run_cmd_stdin(
            call,
            &["gpg", "--batch", "--yes", "--output", signedby, "--dearmor"],
            Some(&source),
        )
        .await?;
        if out.code != 0 {
            return Err(ExecError::execution(format!(
                "Error: Could not add key: {what}: gpg --dearmor failed: {}",
                out.stderr.trim()
            )));
        }
    } else {
        std::fs::write(dest, &source).map_err(|e| {
            ExecError::execution(format!("Error: Could not add key: {signedby}: {e}"))
        })?;
    }
    Ok(())
}

const DEL_REPO_DOC: &str = "Remove a repository. With apt, one given by its complete line (its
components only, when others remain); a file of ``sources.list.d`` left empty is deleted and
the package lists are refreshed after. With dnf/yum, the repository of that id: its section
of its ``.repo`` file, or the file when it held only that one (``basedir`` as for
``pkg.list_repos``). Returns what was done.

CLI Example:

.. code-block:: bash

    salt '*' pkg.del_repo \"deb http://deb.example/debian bookworm main\"
    salt '*' pkg.del_repo myrepo basedir=/path/to/dir
";

async fn del_repo(call: Call) -> Result<Value, ExecError> {
    if repo_backend(&call)? == Backend::Dnf {
        let repo = python::str(call.arg("repo"));
        refuse_copr(&repo)?;
        let (dirs, strict) = yum_dirs(&call)?;
        return Ok(json!(yumrepo::del_repo(&dirs, &repo, strict)?));
    }
    let repo = python::str(call.arg("repo"));
    let auth = call.kwargs().get("ppa_auth").map(python::str);
    let repo = ppa_line(&call, &repo, auth, true)?.unwrap_or(repo);
    let mut list = aptrepo::load(apt_root());
    let touched = aptrepo::del_repo(&mut list, &repo).map_err(ExecError::execution)?;
    aptrepo::save(&list)
        .map_err(|e| ExecError::execution(format!("writing the apt sources for {repo}: {e}")))?;
    let mut msg = String::new();
    for (file, left) in touched {
        if left == 0 && file.contains("sources.list.d/") && std::path::Path::new(&file).is_file() {
            let _ = std::fs::remove_file(&file);
            msg.push_str(&format!(
                "File {file} containing repo '{repo}' has been removed."
            ));
        } else {
            msg.push_str(&format!("Repo '{repo}' has been removed from {file}.\n"));
        }
    }
    apt::refresh(&call, false).await?;
    Ok(json!(msg))
}

const ADD_REPO_KEY_DOC: &str = "Add an apt repository signing key: from ``path`` (``salt://``
or local), ``text``, or ``keyid`` fetched from ``keyserver``. With apt-key (``aptkey=True``
and apt-key present) the key goes to apt-key's keyring; else into ``keydir`` (default
``/etc/apt/keyrings``): a file is copied there (dearmored when ASCII-armored), a keyserver
key is fetched with gpg into the keyring ``keyfile`` (required then). A ``keyid`` already
known is not fetched again. Returns whether the key was added. apt only.

CLI Example:

.. code-block:: bash

    salt '*' pkg.add_repo_key 'salt://apt/sources/test.key'
    salt '*' pkg.add_repo_key keyserver='keyserver.example' keyid='0000AAAA' aptkey=False keyfile=example.gpg
";

/// The key directory argument, `/etc/apt/keyrings` when not given.
fn keydir_arg(call: &Call) -> std::path::PathBuf {
    call.opt_arg("keydir")
        .filter(|v| truthy(v))
        .map_or_else(|| aptkey::KEYRINGS.into(), |v| python::str(v).into())
}

async fn add_repo_key(call: Call) -> Result<Value, ExecError> {
    require_apt_repos(&call, "pkg.add_repo_key")?;
    let text = |k: &str| call.opt_arg(k).filter(|v| truthy(v)).map(python::str);
    let added = aptkey::add_repo_key(
        &call,
        aptkey::AddKey {
            path: text("path"),
            text: text("text"),
            keyserver: text("keyserver"),
            keyid: call.opt_arg("keyid").filter(|v| truthy(v)).map(key_id),
            saltenv: python::str(call.arg("saltenv")),
            aptkey: is_true(call.arg("aptkey")),
            keydir: keydir_arg(&call),
            keyfile: text("keyfile"),
        },
    )
    .await?;
    Ok(json!(added))
}

const GET_REPO_KEYS_DOC: &str = "List the apt repository keys as ``{keyid: {keyid, fingerprint,
uid, algorithm, bits, capability, date_creation, date_expiration, validity, subkey}}``:
apt-key's, or (``aptkey=False`` or no apt-key) those of the key files in ``keydir``
(default ``/etc/apt/keyrings``; ``False`` when it is not a directory). apt only.

CLI Example:

.. code-block:: bash

    salt '*' pkg.get_repo_keys
    salt '*' pkg.get_repo_keys aptkey=False
";

async fn get_repo_keys(call: Call) -> Result<Value, ExecError> {
    require_apt_repos(&call, "pkg.get_repo_keys")?;
    let keys =
        aptkey::get_repo_keys(&call, is_true(call.arg("aptkey")), &keydir_arg(&call)).await?;
    Ok(keys.map_or(json!(false), Value::Object))
}

const DEL_REPO_KEY_DOC: &str = "Remove an apt repository key by ``keyid``: with apt-key, ``apt-key
del``; else (``aptkey=False`` or no apt-key) the key file of ``keydir`` (default
``/etc/apt/keyrings``) holding that key (an 8 or 16 character id) is deleted. Returns the
key id, or ``False`` when no key file holds it. ``keyid_ppa=True`` (the key of the PPA
``name``, looked up on Launchpad) is not done by saltq. apt only.

CLI Example:

.. code-block:: bash

    salt '*' pkg.del_repo_key keyid=0123ABCD
    salt '*' pkg.del_repo_key keyid=0123456789ABCDEF aptkey=False
";

async fn del_repo_key(call: Call) -> Result<Value, ExecError> {
    require_apt_repos(&call, "pkg.del_repo_key")?;
    let name = call.opt_arg("name").map(python::str);
    aptkey::del_repo_key(
        &call,
        name.as_deref(),
        is_true(call.arg("aptkey")),
        &keydir_arg(&call),
    )
    .await
}

/// The apt-only repository key functions (yumpkg has none).
fn require_apt_repos(call: &Call, fun: &str) -> Result<(), ExecError> {
    match repo_backend(call)? {
        Backend::Apt => Ok(()),
        Backend::Dnf => Err(ExecError::execution(format!(
            "{fun} manages apt's repository keys; this minion uses dnf (give a repository's keys with gpgkey)"
        ))),
    }
}

fn require_apt(call: &Call, fun: &str) -> Result<(), ExecError> {
    match backend(call)? {
        Backend::Apt => Ok(()),
        Backend::Dnf => Err(ExecError::execution(format!(
            "{fun} works on dpkg's selections; this minion uses dnf"
        ))),
    }
}

#[cfg(test)]
mod tests;
