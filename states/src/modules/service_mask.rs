//! Salt's `service.masked` and `service.unmasked` states (`salt/states/service.py`) with the
//! systemd execution side they call (`salt/modules/systemd_service.py`: `masked` reads the
//! `/etc/systemd/system/<unit>` link (`/run/...` for `runtime`) and calls it masked when it
//! points at `/dev/null`; `mask`/`unmask` run `systemctl [un]mask [--runtime] <unit>`).
//! Without systemctl the states answer Salt's "not available" failure.

use serde_json::json;

use saltq_exec::{Lit, Param};
use saltq_semantics::python;

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

/// The functions of this file (the rest of the `service` state module is in `service.rs`).
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "service.masked",
        params: &[Param::req("name"), Param::opt("runtime", Lit::Bool(false))],
        kwargs: false,
        handler: state_handler!(masked),
    },
    StateFunction {
        name: "service.unmasked",
        params: &[Param::req("name"), Param::opt("runtime", Lit::Bool(false))],
        kwargs: false,
        handler: state_handler!(unmasked),
    },
];

/// Salt's `_canonical_unit_name`: a name without a unit suffix is a `.service`.
fn unit_name(name: &str) -> String {
    const SUFFIXES: &[&str] = &[
        ".service",
        ".socket",
        ".device",
        ".mount",
        ".automount",
        ".swap",
        ".target",
        ".path",
        ".timer",
        ".slice",
        ".scope",
    ];
    if SUFFIXES.iter().any(|s| name.ends_with(s)) {
        name.to_owned()
    } else {
        format!("{name}.service")
    }
}

/// `service.masked`: the unit's link in `/etc` (or `/run`) points at `/dev/null`.
fn is_masked(name: &str, runtime: bool) -> bool {
    let dir = if runtime { "/run" } else { "/etc" };
    std::fs::read_link(format!("{dir}/systemd/system/{}", unit_name(name)))
        .is_ok_and(|target| target.as_os_str() == "/dev/null")
}

/// Whether systemctl exists here (Salt loads the systemd service module only then).
fn has_systemctl() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join("systemctl").is_file()))
}

/// `service.mask`/`service.unmask`: `systemctl <verb> [--runtime] <unit>`, or Salt's error.
async fn systemctl(verb: &str, name: &str, runtime: bool) -> Result<(), String> {
    let unit = unit_name(name);
    let mut args = vec![verb];
    if runtime {
        args.push("--runtime");
    }
    args.push(&unit);
    let out = tokio::process::Command::new("systemctl")
        .args(&args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| format!("failed to run systemctl: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("Failed to {verb} service '{name}'"))
    }
}

fn not_available(mut ret: Ret) -> Ret {
    ret.comment = "Service masking not available on this minion".into();
    ret.result = Some(false);
    ret
}

async fn masked(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    if !has_systemctl() {
        return Ok(not_available(ret));
    }
    let runtime = call.arg("runtime").is_some_and(python::truthy);
    let kind = if runtime { "runtime masked" } else { "masked" };
    let expected = json!({kind: {"old": false, "new": true}});
    if is_masked(&name, runtime) {
        ret.comment = format!("Service {name} is already {kind}");
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        ret.changes = expected.as_object().cloned().unwrap_or_default();
        ret.comment = format!("Service {name} would be {kind}");
        return Ok(ret);
    }
    if let Err(e) = systemctl("mask", &name, runtime).await {
        ret.result = Some(false);
        ret.comment = e;
        return Ok(ret);
    }
    if is_masked(&name, runtime) {
        ret.changes = expected.as_object().cloned().unwrap_or_default();
        ret.comment = format!("Service {name} was {kind}");
    } else {
        ret.comment = format!("Failed to mask service {name}");
    }
    Ok(ret)
}

async fn unmasked(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    if !has_systemctl() {
        return Ok(not_available(ret));
    }
    let runtime = call.arg("runtime").is_some_and(python::truthy);
    let kind = if runtime { "runtime masked" } else { "masked" };
    let action = if runtime {
        "runtime unmasked"
    } else {
        "unmasked"
    };
    let expected = json!({kind: {"old": true, "new": false}});
    if !is_masked(&name, runtime) {
        ret.comment = format!("Service {name} was already {action}");
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        ret.changes = expected.as_object().cloned().unwrap_or_default();
        ret.comment = format!("Service {name} would be {action}");
        return Ok(ret);
    }
    if let Err(e) = systemctl("unmask", &name, runtime).await {
        ret.result = Some(false);
        ret.comment = e;
        return Ok(ret);
    }
    if is_masked(&name, runtime) {
        ret.comment = format!("Failed to unmask service {name}");
    } else {
        ret.changes = expected.as_object().cloned().unwrap_or_default();
        ret.comment = format!("Service {name} was {action}");
    }
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::unit_name;

    #[test]
    fn bare_names_are_services() {
        assert_eq!(unit_name("nginx"), "nginx.service");
        assert_eq!(unit_name("docker.socket"), "docker.socket");
    }
}
