//! Salt's `kmod` module (`salt/modules/kmod.py`): kernel modules listed with `lsmod`, found
//! under `/lib/modules/<release>`, loaded with `modprobe`, removed with `rmmod`, and kept
//! across boots in `/etc/modules-load.d/salt_managed.conf` (with systemd) or `/etc/modules`.
//! As in Salt, a host without `lsmod` (a container without the `kmod` package) fails every
//! function that lists loaded modules with "Command 'lsmod' cannot be found". The edits of
//! the persistence file are pure functions over its text.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};

use saltq_semantics::python::{self, truthy};

use crate::error::ExecError;
use crate::modules::cmd::which_path;
use crate::modules::run_cmd;
use crate::spec::{Call, Function, Lit, Param};

/// The `kmod` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("kmod.available", handler!(available)).doc(AVAILABLE_DOC),
    Function::new("kmod.check_available", handler!(check_available))
        .params(&[Param::req("mod")])
        .doc(CHECK_AVAILABLE_DOC),
    Function::new("kmod.lsmod", handler!(lsmod)).doc(LSMOD_DOC),
    Function::new("kmod.mod_list", handler!(mod_list))
        .params(&[Param::opt("only_persist", Lit::Bool(false))])
        .doc(MOD_LIST_DOC),
    Function::new("kmod.is_loaded", handler!(is_loaded))
        .params(&[Param::req("mod")])
        .doc(IS_LOADED_DOC),
    Function::new("kmod.load", handler!(load))
        .params(&[Param::req("mod"), Param::opt("persist", Lit::Bool(false))])
        .doc(LOAD_DOC),
    Function::new("kmod.remove", handler!(remove))
        .params(&[
            Param::req("mod"),
            Param::opt("persist", Lit::Bool(false)),
            Param::opt("comment", Lit::Bool(true)),
        ])
        .doc(REMOVE_DOC),
];

/// `lsmod`'s output as Salt parses it: lines of more than two fields, the header skipped.
pub(crate) fn parse_lsmod(out: &str) -> Vec<Value> {
    out.lines()
        .filter_map(|line| {
            let comps: Vec<&str> = line.split_whitespace().collect();
            if comps.len() <= 2 || comps[0] == "Module" {
                return None;
            }
            let deps: Vec<&str> = comps
                .get(3)
                .map_or_else(Vec::new, |d| d.split(',').collect());
            Some(json!({
                "size": comps[1],
                "module": comps[0],
                "depcount": comps[2],
                "deps": deps,
            }))
        })
        .collect()
}

/// The module names of `/lib/modules/<release>`: `modules.builtin`'s entries and every
/// `*.ko*` file below (dashes as underscores), sorted.
pub(crate) fn modules_in(dir: &Path) -> Vec<String> {
    let mut ret = Vec::new();
    if let Ok(text) = std::fs::read_to_string(dir.join("modules.builtin")) {
        for line in text.split_inclusive('\n') {
            let base = line.rsplit('/').next().unwrap_or(line);
            // Python's `basename(line)[:-4]`: the line's newline counts among the four.
            let keep = base.chars().count().saturating_sub(4);
            ret.push(base.chars().take(keep).collect());
        }
    }
    walk(dir, &mut ret);
    ret.sort();
    ret
}

fn walk(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            walk(&path, out);
        } else {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(at) = name.find(".ko") {
                out.push(name[..at].replace('-', "_"));
            }
        }
    }
}

fn kernel_release() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn available_modules(call: &Call) -> Vec<String> {
    let mut ret = modules_in(&Path::new("/lib/modules").join(kernel_release()));
    if python::str(&call.ctx.grains()["os_family"]).contains("Arch") {
        let release = kernel_release();
        let short: String = release.chars().take(3).collect();
        let extra = format!("/lib/modules/extramodules-{short}-ARCH");
        let mut more = Vec::new();
        walk(Path::new(&extra), &mut more);
        ret.extend(more);
        ret.sort();
    }
    ret
}

const AVAILABLE_DOC: &str = "Return a list of all available kernel modules

CLI Example:

.. code-block:: bash

    salt '*' kmod.available
";

async fn available(call: Call) -> Result<Value, ExecError> {
    Ok(json!(available_modules(&call)))
}

const CHECK_AVAILABLE_DOC: &str = "Check to see if the specified kernel module is available

CLI Example:

.. code-block:: bash

    salt '*' kmod.check_available kvm
";

async fn check_available(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("mod"));
    Ok(json!(available_modules(&call).contains(&name)))
}

/// Salt's `_which`: the command's path, or its error.
fn which(cmd: &str) -> Result<String, ExecError> {
    which_path(cmd).ok_or_else(|| ExecError::execution(format!("Command '{cmd}' cannot be found")))
}

const LSMOD_DOC: &str = "Return a dict containing information about currently loaded modules

CLI Example:

.. code-block:: bash

    salt '*' kmod.lsmod
";

async fn lsmod(call: Call) -> Result<Value, ExecError> {
    Ok(json!(loaded(&call).await?))
}

async fn loaded(call: &Call) -> Result<Vec<Value>, ExecError> {
    let path = which("lsmod")?;
    let out = run_cmd(call, &[&path]).await?;
    Ok(parse_lsmod(
        format!("{}{}", out.stdout, out.stderr).trim_end(),
    ))
}

/// The persistence file: systemd's `modules-load.d` where the `systemd` grain is set.
fn modules_conf(call: &Call) -> &'static str {
    if call.ctx.grains().get("systemd").is_some() {
        "/etc/modules-load.d/salt_managed.conf"
    } else {
        "/etc/modules"
    }
}

/// The modules a persistence file lists (the first word of each line not commented out).
pub(crate) fn persisted(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

async fn names(call: &Call, only_persist: bool) -> Result<Vec<String>, ExecError> {
    let mods: BTreeSet<String> = if only_persist {
        std::fs::read_to_string(modules_conf(call))
            .map(|t| persisted(&t))
            .unwrap_or_default()
    } else {
        loaded(call)
            .await?
            .iter()
            .map(|m| python::str(&m["module"]))
            .collect()
    };
    Ok(mods.into_iter().collect())
}

const MOD_LIST_DOC: &str = "Return a list of the loaded module names

only_persist
    Only return the list of loaded persistent modules

CLI Example:

.. code-block:: bash

    salt '*' kmod.mod_list
";

async fn mod_list(call: Call) -> Result<Value, ExecError> {
    Ok(json!(names(&call, truthy(call.arg("only_persist"))).await?))
}

const IS_LOADED_DOC: &str = "Check to see if the specified kernel module is loaded

CLI Example:

.. code-block:: bash

    salt '*' kmod.is_loaded kvm
";

async fn is_loaded(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("mod"));
    Ok(json!(names(&call, false).await?.contains(&name)))
}

/// The persistence file with `module` enabled: a commented-out line of it uncommented, or
/// the module appended.
pub(crate) fn enable_in(text: &str, module: &str) -> String {
    let commented = |l: &str| {
        l.strip_prefix('#')
            .map(|r| r.trim_matches([' ', '\t']) == module)
            .unwrap_or(false)
    };
    if text.lines().any(commented) {
        return text
            .split_inclusive('\n')
            .map(|l| {
                let body = l.trim_end_matches('\n');
                if commented(body) {
                    format!(
                        "{}{}",
                        body.trim_start_matches('#').trim_start(),
                        &l[body.len()..]
                    )
                } else {
                    l.to_owned()
                }
            })
            .collect();
    }
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(module);
    out.push('\n');
    out
}

/// The persistence file with `module`'s line commented out (`comment`) or its name removed.
pub(crate) fn disable_in(text: &str, module: &str, comment: bool) -> String {
    text.split_inclusive('\n')
        .map(|l| {
            let lead = l.len() - l.trim_start_matches([' ', '\t']).len();
            let rest = &l[lead..];
            let Some(after) = rest.strip_prefix(module) else {
                return l.to_owned();
            };
            if comment {
                format!("#{l}")
            } else {
                // Salt's `file.sed` of `^[\t ]*<mod>[\t ]?` to nothing.
                after.strip_prefix([' ', '\t']).unwrap_or(after).to_owned()
            }
        })
        .collect()
}

async fn set_persistent(call: &Call, module: &str) -> Result<BTreeSet<String>, ExecError> {
    let conf = modules_conf(call);
    let Some(name) = module.split_whitespace().next() else {
        return Ok(BTreeSet::new());
    };
    if names(call, true).await?.iter().any(|m| m == name)
        || !available_modules(call).iter().any(|m| m == name)
    {
        return Ok(BTreeSet::new());
    }
    let text = std::fs::read_to_string(conf).unwrap_or_default();
    std::fs::write(conf, enable_in(&text, module))
        .map_err(|e| ExecError::execution(format!("could not write {conf}: {e}")))?;
    Ok(BTreeSet::from([name.to_owned()]))
}

async fn remove_persistent(
    call: &Call,
    module: &str,
    comment: bool,
) -> Result<BTreeSet<String>, ExecError> {
    let conf = modules_conf(call);
    let Some(name) = module.split_whitespace().next() else {
        return Ok(BTreeSet::new());
    };
    if !names(call, true).await?.iter().any(|m| m == name) {
        return Ok(BTreeSet::new());
    }
    let text = std::fs::read_to_string(conf).unwrap_or_default();
    std::fs::write(conf, disable_in(&text, module, comment))
        .map_err(|e| ExecError::execution(format!("could not write {conf}: {e}")))?;
    Ok(BTreeSet::from([name.to_owned()]))
}

/// Module names in `after` not in `before` (or the reverse), as a set.
fn difference(a: &[Value], b: &[Value]) -> BTreeSet<String> {
    let names =
        |v: &[Value]| -> BTreeSet<String> { v.iter().map(|m| python::str(&m["module"])).collect() };
    names(a).difference(&names(b)).cloned().collect()
}

const LOAD_DOC: &str = "Load the specified kernel module

mod
    Name of module to add

persist
    Write module to /etc/modules to make it load on system reboot

CLI Example:

.. code-block:: bash

    salt '*' kmod.load kvm
";

async fn load(call: Call) -> Result<Value, ExecError> {
    let module = python::str(call.arg("mod"));
    let pre = loaded(&call).await?;
    let modprobe = which("modprobe")?;
    let mut argv = vec![modprobe];
    argv.extend(crate::pyish::shlex_split(&module)?);
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = run_cmd(&call, &args).await?;
    if out.code != 0 {
        return Ok(json!(format!(
            "Error loading module {module}: {}",
            out.stderr.trim_end()
        )));
    }
    let post = loaded(&call).await?;
    let mut mods = difference(&post, &pre);
    if truthy(call.arg("persist")) {
        mods.extend(set_persistent(&call, &module).await?);
    }
    Ok(json!(mods))
}

const REMOVE_DOC: &str = "Remove the specified kernel module

mod
    Name of module to remove

persist
    Also remove module from /etc/modules

comment
    If persist is set don't remove line from /etc/modules but only
    comment it

CLI Example:

.. code-block:: bash

    salt '*' kmod.remove kvm
";

async fn remove(call: Call) -> Result<Value, ExecError> {
    let module = python::str(call.arg("mod"));
    let pre = loaded(&call).await?;
    let rmmod = which("rmmod")?;
    let mut argv = vec![rmmod];
    argv.extend(crate::pyish::shlex_split(&module)?);
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = run_cmd(&call, &args).await?;
    if out.code != 0 {
        return Ok(json!(format!(
            "Error removing module {module}: {}",
            out.stderr.trim_end()
        )));
    }
    let post = loaded(&call).await?;
    let mut mods = difference(&pre, &post);
    if truthy(call.arg("persist")) {
        mods.extend(remove_persistent(&call, &module, truthy(call.arg("comment"))).await?);
    }
    Ok(json!(mods))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsmod_output_like_salt() {
        let out = "Module                  Size  Used by\nveth                   40960  0\n\
                   bridge                311296  1 br_netfilter\nstp 16384 1 bridge,llc\nx 1\n";
        assert_eq!(
            json!(parse_lsmod(out)),
            json!([
                {"size": "40960", "module": "veth", "depcount": "0", "deps": []},
                {"size": "311296", "module": "bridge", "depcount": "1", "deps": ["br_netfilter"]},
                {"size": "16384", "module": "stp", "depcount": "1", "deps": ["bridge", "llc"]},
            ])
        );
    }

    #[test]
    fn module_tree_like_salt() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("modules.builtin"),
            "kernel/fs/ext4/ext4.ko\nkernel/lib/crc32c.ko\n",
        )
        .expect("builtin");
        let net = dir.path().join("kernel/drivers/net");
        std::fs::create_dir_all(&net).expect("tree");
        std::fs::write(net.join("dummy.ko.xz"), "").expect("ko");
        std::fs::write(net.join("mlx5-core.ko"), "").expect("ko");
        assert_eq!(
            modules_in(dir.path()),
            ["crc32c", "dummy", "ext4", "mlx5_core"]
        );
        assert!(modules_in(Path::new("/nonexistent/modules")).is_empty());
    }

    #[test]
    fn persistence_edits_like_salt() {
        let text = "# /etc/modules\n#  dummy\nloop\n";
        assert_eq!(persisted(text), BTreeSet::from(["loop".to_owned()]));
        assert_eq!(enable_in(text, "dummy"), "# /etc/modules\ndummy\nloop\n");
        assert_eq!(enable_in("loop", "veth"), "loop\nveth\n");
        assert_eq!(
            disable_in(text, "loop", true),
            "# /etc/modules\n#  dummy\n#loop\n"
        );
        assert_eq!(disable_in("loop max=8\n", "loop", false), "max=8\n");
    }
}
