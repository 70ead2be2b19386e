//! Salt's `service` module for systemd (`salt/modules/systemd_service.py`): `systemctl` for
//! state changes and queries, the unit directories for the list of services, and System V
//! init scripts where no unit exists. On a Debian machine where systemd does not run, Salt's
//! loader gives `service` the functions of `debian_service` instead, and so does this module
//! ([`Manager::SysV`], `sysv` below): `service NAME ACTION`, `update-rc.d`, and the
//! `/etc/rc?.d` links. Elsewhere without systemd every function fails with `systemd is not
//! available on this minion`.

use std::path::Path;

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, fnmatch, truthy};

use crate::error::ExecError;
use crate::modules::run_cmd;
use crate::process::Output;

use crate::spec::{Call, Function, Lit, Param};

const NO_BLOCK_FALSE: Param = Param::opt("no_block", Lit::Bool(false));
const UNMASK: Param = Param::opt("unmask", Lit::Bool(false));
const UNMASK_RUNTIME: Param = Param::opt("unmask_runtime", Lit::Bool(false));
const ROOT: Param = Param::opt("root", Lit::None);

/// The `service` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("service.available", handler!(available))
        .params(&[Param::req("name")])
        .doc(AVAILABLE_DOC),
    Function::new("service.disable", handler!(disable))
        .params(&[Param::req("name"), NO_BLOCK_FALSE, ROOT])
        .kwargs()
        .doc(DISABLE_DOC),
    Function::new("service.disabled", handler!(disabled))
        .params(&[Param::req("name"), ROOT])
        .doc(DISABLED_DOC),
    Function::new("service.enable", handler!(enable))
        .params(&[
            Param::req("name"),
            NO_BLOCK_FALSE,
            UNMASK,
            UNMASK_RUNTIME,
            ROOT,
        ])
        .kwargs()
        .doc(ENABLE_DOC),
    Function::new("service.enabled", handler!(enabled))
        .params(&[Param::req("name"), ROOT])
        .kwargs()
        .doc(ENABLED_DOC),
    Function::new("service.get_all", handler!(get_all))
        .params(&[ROOT])
        .doc(GET_ALL_DOC),
    Function::new("service.get_running", handler!(get_running)).doc(GET_RUNNING_DOC),
    Function::new("service.reload", handler!(reload))
        .params(&[Param::req("name"), NO_BLOCK_FALSE, UNMASK, UNMASK_RUNTIME])
        .py_name("reload_")
        .doc(RELOAD_DOC),
    Function::new("service.restart", handler!(restart))
        .params(&[
            Param::req("name"),
            Param::opt("no_block", Lit::None),
            UNMASK,
            UNMASK_RUNTIME,
        ])
        .doc(RESTART_DOC),
    Function::new("service.start", handler!(start))
        .params(&[Param::req("name"), NO_BLOCK_FALSE, UNMASK, UNMASK_RUNTIME])
        .doc(START_DOC),
    Function::new("service.status", handler!(status))
        .params(&[Param::req("name"), Param::opt("sig", Lit::None)])
        .doc(STATUS_DOC),
    Function::new("service.stop", handler!(stop))
        .params(&[Param::req("name"), Param::opt("no_block", Lit::None)])
        .doc(STOP_DOC),
];

/// Unit types Salt lists as services.
const UNIT_TYPES: &[&str] = &[
    "service",
    "socket",
    "device",
    "mount",
    "automount",
    "swap",
    "target",
    "path",
    "timer",
];

/// Where unit files live, in Salt's order.
const UNIT_DIRS: [&str; 3] = [
    "/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/etc/systemd/system",
];

const INIT_D: &str = "/etc/init.d";

/// The service manager this minion's `service` functions drive, as Salt's loader picks
/// the module: `systemd_service` where systemd runs, `debian_service` on Debian without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Manager {
    /// systemd runs (`/run/systemd/system` exists).
    Systemd,
    /// A Debian-family system without a running systemd: System V init scripts.
    SysV,
}

/// The OS names for which Salt loads `debian_service`.
const DEBIAN_OSES: &[&str] = &["Debian", "Raspbian", "Devuan", "NILinuxRT"];

/// Salt's choice of `service` module for this machine: `booted` says whether systemd runs,
/// `os` is the `os` grain (or `None` when unknown, then `/etc/debian_version` decides).
pub(crate) fn pick_manager(
    booted: bool,
    os: Option<&str>,
    debian_version: bool,
) -> Option<Manager> {
    if booted {
        Some(Manager::Systemd)
    } else if os.map_or(debian_version, |os| DEBIAN_OSES.contains(&os)) {
        Some(Manager::SysV)
    } else {
        None
    }
}

/// This minion's service manager, or Salt's error where none is supported.
fn manager(call: &Call) -> Result<Manager, ExecError> {
    let os = call
        .ctx
        .grains()
        .get("os")
        .and_then(Value::as_str)
        .map(str::to_owned);
    pick_manager(
        Path::new("/run/systemd/system").is_dir(),
        os.as_deref(),
        Path::new("/etc/debian_version").is_file(),
    )
    .ok_or_else(|| ExecError::execution("systemd is not available on this minion"))
}

/// Fails unless systemd runs on this machine (Salt's `salt.utils.systemd.booted`).
fn require_systemd() -> Result<(), ExecError> {
    if Path::new("/run/systemd/system").is_dir() {
        Ok(())
    } else {
        Err(ExecError::execution(
            "systemd is not available on this minion",
        ))
    }
}

/// `name.service` unless the name already ends in a unit type.
pub(crate) fn canonical_unit(name: &str) -> String {
    if UNIT_TYPES.iter().any(|t| name.ends_with(t)) {
        name.to_owned()
    } else {
        format!("{name}.service")
    }
}

/// The unit name a file name gives: `sshd.service` is `sshd`, other types keep theirs.
fn unit_name(file: &str) -> Option<String> {
    let (name, kind) = file.rsplit_once('.')?;
    UNIT_TYPES.contains(&kind).then(|| {
        if kind == "service" {
            name.to_owned()
        } else {
            file.to_owned()
        }
    })
}

/// Every unit in these directories, then the executable init scripts that have no unit.
pub(crate) fn list_services(unit_dirs: &[&Path], init_d: &Path) -> Vec<String> {
    let names = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut all: Vec<String> = unit_dirs
        .iter()
        .filter(|d| !std::fs::symlink_metadata(d).is_ok_and(|m| m.file_type().is_symlink()))
        .flat_map(|d| names(d))
        .filter_map(|f| unit_name(&f))
        .collect();
    let systemd = all.clone();
    all.extend(sysv_services(init_d, &systemd));
    all.sort();
    all.dedup();
    all
}

/// Executable scripts in `init.d` that no systemd unit replaces.
fn sysv_services(init_d: &Path, systemd: &[String]) -> Vec<String> {
    std::fs::read_dir(init_d)
        .map(|d| {
            d.flatten()
                .filter(|e| nix::unistd::access(&e.path(), nix::unistd::AccessFlags::X_OK).is_ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !systemd.contains(n))
                .collect()
        })
        .unwrap_or_default()
}

/// Salt's `_strip_scope`: stderr without `systemd-run --scope`'s lines.
fn strip_scope(msg: &str) -> String {
    msg.lines()
        .filter(|l| !l.ends_with(".scope"))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// Runs `systemctl [--no-block] ACTION UNIT`, through `systemd-run --scope` for state
/// changes (so that restarting the minion's own unit does not kill the command), as Salt.
async fn systemctl(
    call: &Call,
    action: &str,
    name: &str,
    scope: bool,
    no_block: bool,
) -> Result<Output, ExecError> {
    require_systemd()?;
    let unit = canonical_unit(name);
    let mut argv: Vec<&str> = Vec::new();
    let use_scope = scope
        && crate::modules::cmd::which_path("systemd-run").is_some()
        && call.ctx.opt("systemd.scope").is_none_or(truthy);
    if use_scope {
        argv.extend(["systemd-run", "--scope"]);
    }
    argv.push("systemctl");
    if no_block {
        argv.push("--no-block");
    }
    argv.extend([action, unit.as_str()]);
    if action == "status" {
        argv.extend(["-n", "0"]);
    }
    run_cmd(call, &argv).await
}

/// Unmasks the unit first when asked to (`unmask`, `unmask_runtime`).
async fn unmask(call: &Call, name: &str) -> Result<(), ExecError> {
    for (flag, runtime) in [("unmask", false), ("unmask_runtime", true)] {
        if truthy(call.arg(flag)) {
            let unit = canonical_unit(name);
            let mut argv = vec!["systemctl", "unmask"];
            if runtime {
                argv.push("--runtime");
            }
            argv.push(&unit);
            let out = run_cmd(call, &argv).await?;
            if out.code != 0 {
                return Err(ExecError::execution(format!(
                    "Failed to unmask service '{name}': {}",
                    out.stderr.trim()
                )));
            }
        }
    }
    Ok(())
}

fn name(call: &Call) -> String {
    python::str(call.arg("name"))
}

const AVAILABLE_DOC: &str = "Return ``True`` if the named service is known to systemd

CLI Example:

.. code-block:: bash

    salt '*' service.available sshd
";

async fn available(call: Call) -> Result<Value, ExecError> {
    if manager(&call)? == Manager::SysV {
        return Ok(json!(sysv::all(&call).await?.contains(&name(&call))));
    }
    let out = systemctl(&call, "status", &name(&call), false, false).await?;
    Ok(Value::Bool((0..4).contains(&out.code)))
}

const STATUS_DOC: &str = "Return ``True`` if the service is running (``systemctl is-active``). A
glob name returns ``{service: bool}`` for every matching service.

CLI Example:

.. code-block:: bash

    salt '*' service.status sshd
    salt '*' service.status 'systemd-*'
";

async fn status(call: Call) -> Result<Value, ExecError> {
    if manager(&call)? == Manager::SysV {
        return sysv::status(&call, &name(&call)).await;
    }
    require_systemd()?;
    let name = name(&call);
    let globbing = name.contains(['*', '?']) || (name.contains('[') && name.contains(']'));
    let services: Vec<String> = if globbing {
        let all = list_services(&UNIT_DIRS.map(Path::new), Path::new(INIT_D));
        all.into_iter().filter(|s| fnmatch(s, &name)).collect()
    } else {
        vec![name.clone()]
    };
    let mut out = Map::new();
    for service in services {
        let ran = systemctl(&call, "is-active", &service, false, false).await?;
        out.insert(service, Value::Bool(ran.code == 0));
    }
    if globbing {
        Ok(Value::Object(out))
    } else {
        Ok(out.remove(&name).unwrap_or(Value::Bool(false)))
    }
}

/// `start`, `restart` and `reload`: `True`, or the command's error.
async fn change(call: &Call, action: &str, no_block: bool) -> Result<Value, ExecError> {
    let name = name(call);
    require_systemd()?;
    unmask(call, &name).await?;
    let out = systemctl(call, action, &name, true, no_block).await?;
    if out.code != 0 {
        return Err(ExecError::execution(strip_scope(&out.stderr)));
    }
    Ok(Value::Bool(true))
}

const START_DOC: &str = "Start the named service. ``no_block=True`` does not wait for it;
``unmask=True`` (or ``unmask_runtime=True``) unmasks it first.

CLI Example:

.. code-block:: bash

    salt '*' service.start <service name>
";

async fn start(call: Call) -> Result<Value, ExecError> {
    if manager(&call)? == Manager::SysV {
        return sysv::action(&call, &name(&call), "start").await;
    }
    change(&call, "start", truthy(call.arg("no_block"))).await
}

const RESTART_DOC: &str = "Restart the named service

CLI Example:

.. code-block:: bash

    salt '*' service.restart <service name>
";

async fn restart(call: Call) -> Result<Value, ExecError> {
    if manager(&call)? == Manager::SysV {
        return sysv::action(&call, &name(&call), "restart").await;
    }
    change(&call, "restart", truthy(call.arg("no_block"))).await
}

const RELOAD_DOC: &str = "Reload the named service's configuration

CLI Example:

.. code-block:: bash

    salt '*' service.reload <service name>
";

async fn reload(call: Call) -> Result<Value, ExecError> {
    if manager(&call)? == Manager::SysV {
        return sysv::action(&call, &name(&call), "reload").await;
    }
    change(&call, "reload", truthy(call.arg("no_block"))).await
}

const STOP_DOC: &str = "Stop the named service; ``True`` when it stopped

CLI Example:

.. code-block:: bash

    salt '*' service.stop <service name>
";

async fn stop(call: Call) -> Result<Value, ExecError> {
    if manager(&call)? == Manager::SysV {
        return sysv::action(&call, &name(&call), "stop").await;
    }
    let out = systemctl(
        &call,
        "stop",
        &name(&call),
        true,
        truthy(call.arg("no_block")),
    )
    .await?;
    Ok(Value::Bool(out.code == 0))
}

/// The System V tool that enables init scripts (`update-rc.d` or `chkconfig`), if any.
fn sysv_tool() -> Option<String> {
    ["update-rc.d", "chkconfig"]
        .iter()
        .find_map(|t| crate::modules::cmd::which_path(t))
}

/// The init script's name when the service is one without a systemd unit.
fn sysv_only(name: &str) -> bool {
    let systemd = list_services(&UNIT_DIRS.map(Path::new), Path::new("/nonexistent"));
    sysv_services(Path::new(INIT_D), &systemd)
        .iter()
        .any(|s| s == name)
}

async fn sysv_switch(call: &Call, name: &str, on: bool) -> Result<Value, ExecError> {
    let Some(tool) = sysv_tool() else {
        return Ok(Value::Bool(false));
    };
    let argv: Vec<&str> = match (tool.ends_with("update-rc.d"), on) {
        (true, true) => vec![&tool, "-f", name, "defaults", "99"],
        (true, false) => vec![&tool, "-f", name, "remove"],
        (false, true) => vec![&tool, name, "on"],
        (false, false) => vec![&tool, name, "off"],
    };
    Ok(Value::Bool(run_cmd(call, &argv).await?.code == 0))
}

const ENABLE_DOC: &str = "Enable the named service to start at boot

CLI Example:

.. code-block:: bash

    salt '*' service.enable <service name>
";

async fn enable(call: Call) -> Result<Value, ExecError> {
    if manager(&call)? == Manager::SysV {
        return sysv::switch(&call, &name(&call), true).await;
    }
    require_systemd()?;
    let name = name(&call);
    unmask(&call, &name).await?;
    if sysv_only(&name) {
        return sysv_switch(&call, &name, true).await;
    }
    let out = systemctl(&call, "enable", &name, true, truthy(call.arg("no_block"))).await?;
    if out.code != 0 {
        return Err(ExecError::execution(strip_scope(&out.stderr)));
    }
    Ok(Value::Bool(true))
}

const DISABLE_DOC: &str = "Disable the named service from starting at boot

CLI Example:

.. code-block:: bash

    salt '*' service.disable <service name>
";

async fn disable(call: Call) -> Result<Value, ExecError> {
    if manager(&call)? == Manager::SysV {
        return sysv::switch(&call, &name(&call), false).await;
    }
    require_systemd()?;
    let name = name(&call);
    if sysv_only(&name) {
        return sysv_switch(&call, &name, false).await;
    }
    let out = systemctl(&call, "disable", &name, true, truthy(call.arg("no_block"))).await?;
    Ok(Value::Bool(out.code == 0))
}

/// Whether a unit starts at boot: `is-enabled` succeeds (an alias counts through its unit),
/// a template instance is linked under `/etc/systemd/system`, or an init script has start
/// links in `/etc/rc?.d`.
async fn is_enabled(call: &Call, name: &str) -> Result<bool, ExecError> {
    let out = systemctl(call, "is-enabled", name, false, false).await?;
    let state = out.stdout.trim();
    if out.code == 0 && state != "alias" {
        return Ok(true);
    }
    if state == "alias" {
        let id = run_cmd(
            call,
            &["systemctl", "show", &canonical_unit(name), "-P", "Id"],
        )
        .await?;
        let real = systemctl(call, "is-enabled", id.stdout.trim(), false, false).await?;
        return Ok(real.code == 0);
    }
    if name.contains('@') {
        return Ok(walk_links(
            Path::new("/etc/systemd/system"),
            &canonical_unit(name),
        ));
    }
    if sysv_only(name) {
        return Ok(sysv_enabled(Path::new("/etc"), name));
    }
    Ok(false)
}

/// A symlink named `unit` anywhere under `dir`.
fn walk_links(dir: &Path, unit: &str) -> bool {
    std::fs::read_dir(dir).is_ok_and(|d| {
        d.flatten().any(|e| {
            let is_link = e.file_type().is_ok_and(|t| t.is_symlink());
            (is_link && e.file_name().to_string_lossy() == unit)
                || (e.file_type().is_ok_and(|t| t.is_dir()) && walk_links(&e.path(), unit))
        })
    })
}

/// An init script is enabled when a runlevel directory starts it (`S??name`).
pub(crate) fn sysv_enabled(etc: &Path, name: &str) -> bool {
    ["rcS.d", "rc2.d", "rc3.d", "rc4.d", "rc5.d"]
        .iter()
        .any(|rc| {
            std::fs::read_dir(etc.join(rc)).is_ok_and(|d| {
                d.flatten().any(|e| {
                    let f = e.file_name().to_string_lossy().into_owned();
                    f.starts_with('S') && f.len() > 3 && f[3..] == *name
                })
            })
        })
}

const ENABLED_DOC: &str = "Return ``True`` if the named service starts at boot

CLI Example:

.. code-block:: bash

    salt '*' service.enabled <service name>
";

async fn enabled(call: Call) -> Result<Value, ExecError> {
    if manager(&call)? == Manager::SysV {
        return Ok(json!(sysv::enabled(&call).await?.contains(&name(&call))));
    }
    Ok(Value::Bool(is_enabled(&call, &name(&call)).await?))
}

const DISABLED_DOC: &str = "Return ``True`` if the named service does not start at boot

CLI Example:

.. code-block:: bash

    salt '*' service.disabled <service name>
";

async fn disabled(call: Call) -> Result<Value, ExecError> {
    if manager(&call)? == Manager::SysV {
        let on = sysv::enabled(&call).await?;
        let name = name(&call);
        return Ok(json!(
            sysv::all(&call).await?.contains(&name) && !on.contains(&name)
        ));
    }
    Ok(Value::Bool(!is_enabled(&call, &name(&call)).await?))
}

const GET_ALL_DOC: &str = "Return every available service (systemd units and System V init
scripts), sorted

CLI Example:

.. code-block:: bash

    salt '*' service.get_all
";

async fn get_all(call: Call) -> Result<Value, ExecError> {
    if manager(&call)? == Manager::SysV {
        return Ok(json!(sysv::all(&call).await?));
    }
    require_systemd()?;
    let root = call.opt_arg("root").map(python::str);
    let prefixed = |p: &str| match &root {
        Some(r) => Path::new(r).join(p.trim_start_matches('/')),
        None => Path::new(p).to_path_buf(),
    };
    let dirs: Vec<_> = UNIT_DIRS.iter().map(|d| prefixed(d)).collect();
    let dir_refs: Vec<&Path> = dirs.iter().map(|d| d.as_path()).collect();
    Ok(json!(list_services(&dir_refs, &prefixed(INIT_D))))
}

/// The running units from `systemctl --full --no-legend --no-pager` output.
pub(crate) fn parse_running(out: &str) -> Vec<String> {
    let mut ret: Vec<String> = out
        .lines()
        .filter_map(|line| {
            let c: Vec<&str> = line.split_whitespace().collect();
            // A failed unit's line starts with a bullet.
            let c = if c.first().is_some_and(|w| !w.contains('.')) {
                &c[1..]
            } else {
                &c[..]
            };
            (c.len() > 3 && c[3] == "running").then(|| unit_name(c[0]))?
        })
        .collect();
    ret.sort();
    ret.dedup();
    ret
}

const GET_RUNNING_DOC: &str = "Return the running services, sorted

CLI Example:

.. code-block:: bash

    salt '*' service.get_running
";

async fn get_running(call: Call) -> Result<Value, ExecError> {
    require_systemd()?;
    let out = run_cmd(&call, &["systemctl", "--full", "--no-legend", "--no-pager"]).await?;
    Ok(json!(parse_running(&out.stdout)))
}

/// Salt's `debian_service`: System V init scripts driven by `service`, enabled by
/// `update-rc.d`, read from `/etc/init.d` and the runlevel's `/etc/rc?.d` links.
mod sysv {
    use std::path::Path;

    use serde_json::{Value, json};

    use saltq_semantics::python::fnmatch;

    use crate::error::ExecError;
    use crate::modules::run_cmd;
    use crate::spec::Call;

    /// The runlevel `runlevel` reports; `2` (Debian's default) when it says `unknown`, as in
    /// a container without init, or gives nothing usable.
    pub(crate) fn runlevel_of(out: &str) -> String {
        if out.contains("unknown") {
            return "2".into();
        }
        out.split_whitespace()
            .nth(1)
            .filter(|r| r.len() == 1)
            .unwrap_or("2")
            .to_owned()
    }

    /// The service a start link names: what follows the last run of digits (`S01ssh` is
    /// `ssh`), as Salt's `re.split(r"\d+", link)[-1]`.
    pub(crate) fn link_service(link: &str) -> String {
        link.rsplit(|c: char| c.is_ascii_digit())
            .next()
            .unwrap_or(link)
            .to_owned()
    }

    /// The services started in `runlevel` or `S`: `S??name` links in `etc/rcS.d` and
    /// `etc/rc<runlevel>.d`, sorted.
    pub(crate) fn enabled_in(etc: &Path, runlevel: &str) -> Vec<String> {
        let mut out: Vec<String> = ["S", runlevel]
            .iter()
            .flat_map(|rl| {
                std::fs::read_dir(etc.join(format!("rc{rl}.d")))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|f| f.starts_with('S'))
                    .map(|f| link_service(&f))
                    .collect::<Vec<_>>()
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Every script in `etc/init.d` but `README`, with the enabled services, sorted.
    pub(crate) fn all_in(etc: &Path, enabled: &[String]) -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(etc.join("init.d"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|f| f != "README")
            .chain(enabled.iter().cloned())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    async fn runlevel(call: &Call) -> String {
        match run_cmd(call, &["runlevel"]).await {
            Ok(out) => runlevel_of(&format!("{}{}", out.stdout, out.stderr)),
            Err(_) => "2".into(),
        }
    }

    /// Salt's `get_enabled`.
    pub(super) async fn enabled(call: &Call) -> Result<Vec<String>, ExecError> {
        Ok(enabled_in(Path::new("/etc"), &runlevel(call).await))
    }

    /// Salt's `get_all`.
    pub(super) async fn all(call: &Call) -> Result<Vec<String>, ExecError> {
        Ok(all_in(Path::new("/etc"), &enabled(call).await?))
    }

    /// `service NAME ACTION`: `True` when it exits 0.
    pub(super) async fn action(call: &Call, name: &str, action: &str) -> Result<Value, ExecError> {
        Ok(json!(
            run_cmd(call, &["service", name, action]).await?.code == 0
        ))
    }

    /// Salt's `status`: by `sig` (a process matching it), else `service NAME status`;
    /// a glob name gives `{service: bool}`.
    pub(super) async fn status(call: &Call, name: &str) -> Result<Value, ExecError> {
        if let Some(sig) = call
            .opt_arg("sig")
            .filter(|s| saltq_semantics::python::truthy(s))
        {
            let sig = saltq_semantics::python::str(sig);
            return Ok(json!(
                !crate::modules::status::pids(call, &sig).await?.is_empty()
            ));
        }
        let globbing = name.contains(['*', '?']) || (name.contains('[') && name.contains(']'));
        if !globbing {
            return action(call, name, "status").await;
        }
        let mut out = serde_json::Map::new();
        for service in all(call).await?.into_iter().filter(|s| fnmatch(s, name)) {
            let running = action(call, &service, "status").await?;
            out.insert(service, running);
        }
        Ok(Value::Object(out))
    }

    /// Salt's `enable` (`insserv NAME && update-rc.d NAME enable`) and `disable`
    /// (`update-rc.d NAME disable`): `True` when every command exits 0; a missing command
    /// (no `insserv` on a machine that never had System V init) is `False`, as the shell's
    /// 127 is in Salt.
    pub(super) async fn switch(call: &Call, name: &str, on: bool) -> Result<Value, ExecError> {
        let steps: Vec<Vec<&str>> = if on {
            vec![vec!["insserv", name], vec!["update-rc.d", name, "enable"]]
        } else {
            vec![vec!["update-rc.d", name, "disable"]]
        };
        for argv in steps {
            match run_cmd(call, &argv).await {
                Ok(out) if out.code == 0 => {}
                Ok(_) | Err(ExecError::CommandNotFound(_)) => return Ok(json!(false)),
                Err(e) => return Err(e),
            }
        }
        Ok(json!(true))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use serde_json::json;

    use super::*;
    use crate::testutil::{check, run};

    #[test]
    fn unit_names_like_salt() {
        assert_eq!(canonical_unit("sshd"), "sshd.service");
        assert_eq!(canonical_unit("sshd.socket"), "sshd.socket");
        assert_eq!(canonical_unit("tmp.mount"), "tmp.mount");
        assert_eq!(unit_name("cron.service").as_deref(), Some("cron"));
        assert_eq!(unit_name("sshd.socket").as_deref(), Some("sshd.socket"));
        assert_eq!(unit_name("foo.conf"), None);
        assert_eq!(
            strip_scope("Running scope as unit: run-r1.scope\nJob failed.\n"),
            "Job failed."
        );
    }

    #[test]
    fn running_units_from_systemctl() {
        let out = "cron.service       loaded active running Regular background program processing daemon\n\
                   ssh.socket         loaded active listening OpenBSD Secure Shell server socket\n\
                   ● bad.service       loaded failed failed  Bad\n\
                   dbus.service       loaded active running D-Bus System Message Bus\n\
                   session-1.scope    loaded active running Session 1\n";
        assert_eq!(parse_running(out), ["cron", "dbus"]);
    }

    #[test]
    fn services_from_unit_dirs_and_init_scripts() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let (lib, etc, init) = (
            tmp.path().join("lib"),
            tmp.path().join("etc"),
            tmp.path().join("init.d"),
        );
        for d in [&lib, &etc, &init] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
        }
        for f in ["ssh.service", "ssh.socket", "README", "getty@.service"] {
            std::fs::write(lib.join(f), "").unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(etc.join("local.timer"), "").unwrap_or_else(|e| panic!("{e}"));
        for (f, mode) in [("ssh", 0o755), ("legacy", 0o755), ("notexec", 0o644)] {
            std::fs::write(init.join(f), "#!/bin/sh\n").unwrap_or_else(|e| panic!("{e}"));
            std::fs::set_permissions(init.join(f), std::fs::Permissions::from_mode(mode))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(
            list_services(&[lib.as_path(), etc.as_path()], &init),
            ["getty@", "legacy", "local.timer", "ssh", "ssh.socket"]
        );
        let rc = tmp.path().join("rc2.d");
        std::fs::create_dir_all(&rc).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("../init.d/legacy", rc.join("S01legacy"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(sysv_enabled(tmp.path(), "legacy"));
        assert!(!sysv_enabled(tmp.path(), "ssh"));
    }

    #[test]
    fn sysv_like_debian_service() {
        assert_eq!(
            pick_manager(true, Some("Debian"), true),
            Some(Manager::Systemd)
        );
        assert_eq!(
            pick_manager(false, Some("Debian"), true),
            Some(Manager::SysV)
        );
        assert_eq!(
            pick_manager(false, Some("Devuan"), false),
            Some(Manager::SysV)
        );
        assert_eq!(pick_manager(false, Some("Rocky"), false), None);
        assert_eq!(pick_manager(false, None, true), Some(Manager::SysV));
        assert_eq!(sysv::runlevel_of("unknown\n"), "2");
        assert_eq!(sysv::runlevel_of("N 5\n"), "5");
        assert_eq!(sysv::runlevel_of(""), "2");
        assert_eq!(sysv::link_service("S01ssh"), "ssh");
        assert_eq!(sysv::link_service("S02saltq-rec-svc"), "saltq-rec-svc");
        // Salt's `re.split(r"\d+", ...)[-1]` keeps only what follows the last digits.
        assert_eq!(sysv::link_service("S01ipv6tables"), "tables");

        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        for d in ["init.d", "rc2.d", "rc3.d", "rcS.d"] {
            std::fs::create_dir_all(tmp.path().join(d)).unwrap_or_else(|e| panic!("{e}"));
        }
        for f in ["init.d/ssh", "init.d/cron", "init.d/README", "init.d/off"] {
            std::fs::write(tmp.path().join(f), "").unwrap_or_else(|e| panic!("{e}"));
        }
        for f in [
            "rc2.d/S01ssh",
            "rc2.d/K01off",
            "rc3.d/S01cron",
            "rcS.d/S01procps",
        ] {
            std::fs::write(tmp.path().join(f), "").unwrap_or_else(|e| panic!("{e}"));
        }
        let on = sysv::enabled_in(tmp.path(), "2");
        assert_eq!(on, ["procps", "ssh"]);
        assert_eq!(
            sysv::all_in(tmp.path(), &on),
            ["cron", "off", "procps", "ssh"]
        );
    }

    #[tokio::test]
    async fn on_this_host() {
        if !Path::new("/run/systemd/system").is_dir() && !Path::new("/etc/debian_version").is_file()
        {
            println!(
                "service: neither systemd nor Debian's System V init here; checking the error of every function"
            );
            for fun in [
                "service.available",
                "service.status",
                "service.start",
                "service.stop",
                "service.restart",
                "service.reload",
                "service.enable",
                "service.disable",
                "service.enabled",
                "service.disabled",
            ] {
                check(
                    fun,
                    json!(["cron"]),
                    json!({}),
                    json!("ERROR: systemd is not available on this minion"),
                    1,
                )
                .await;
            }
            for fun in ["service.get_all", "service.get_running"] {
                check(
                    fun,
                    json!([]),
                    json!({}),
                    json!("ERROR: systemd is not available on this minion"),
                    1,
                )
                .await;
            }
            return;
        }
        if !Path::new("/run/systemd/system").is_dir() {
            println!("service: System V init (Debian without systemd): see sysv_on_this_host");
            return;
        }
        // Read-only functions on a machine running systemd.
        let all = run("service.get_all", json!([])).await.ret;
        let names: Vec<String> = serde_json::from_value(all).unwrap_or_default();
        assert!(!names.is_empty());
        let running = run("service.get_running", json!([])).await.ret;
        assert!(running.is_array());
        let first = &names[0];
        assert!(
            run("service.available", json!([first]))
                .await
                .ret
                .is_boolean()
        );
        assert!(run("service.status", json!([first])).await.ret.is_boolean());
        assert!(
            run("service.enabled", json!([first]))
                .await
                .ret
                .is_boolean()
        );
        check(
            "service.available",
            json!(["no-such-unit-saltq"]),
            json!({}),
            json!(false),
            0,
        )
        .await;
    }
}
