//! The minion's core grains, computed the way Salt's `salt/grains/core.py` names them on
//! Linux: from `uname`, `/etc/os-release`, `/proc`, `/sys`, `/etc/hosts` and the network
//! interfaces. The parsing is in pure functions over text, tested with data; only
//! [`compute_grains`] touches the system.

use std::net::IpAddr;
use std::path::Path;

use nix::unistd::{Gid, Group, Uid, User, getpid};
use serde_json::{Map, Value, json};

use os::{os_grains, osarch, parse_os_release};

mod hw;
pub(crate) mod net;
mod os;

/// The Salt release whose behaviour saltq implements (the `saltversion` grain).
pub const SALT_VERSION: &str = "3007.8";

/// The `pythonversion` grain: Salt 3007.8 on Debian 12's python3 3.11.2.
const PYTHON_VERSION: (u32, u32, u32, &str, u32) = (3, 11, 2, "final", 0);

/// Reads a grains file (YAML, as Salt's `/etc/salt/grains`): its top-level dict, or an empty
/// one when the file is absent, unreadable, not YAML or not a dict (Salt skips a bad file
/// with a warning).
pub fn load_grains_file(path: &Path) -> Map<String, Value> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_yaml_ng::from_str::<Value>(&text).ok())
        .and_then(|v| match v {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .unwrap_or_default()
}

/// The static grains in Salt's order: the grains file's (the minion's `grains_file`), then
/// the minion config's `grains` over them. Pass the result to [`compute_grains`].
pub fn static_grains(
    grains_file: Option<&Path>,
    config_grains: &Map<String, Value>,
) -> Map<String, Value> {
    let mut statics = grains_file.map(load_grains_file).unwrap_or_default();
    statics.extend(config_grains.iter().map(|(k, v)| (k.clone(), v.clone())));
    statics
}

/// Computes the grains of this machine for minion `id`. Static grains replace computed ones
/// of the same name. Salt's order, lowest first: computed core grains, the grains file,
/// the minion config's `grains`; [`static_grains`] merges the last two.
pub fn compute_grains(id: &str, static_grains: Option<&Map<String, Value>>) -> Value {
    let mut g = Map::new();
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();

    g.insert(
        "cwd".into(),
        json!(
            std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ),
    );
    let machine_id = [read("/etc/machine-id"), read("/var/lib/dbus/machine-id")]
        .into_iter()
        .map(|s| s.trim().to_owned())
        .find(|s| !s.is_empty());
    if let Some(mid) = machine_id {
        g.insert("machine_id".into(), json!(mid));
    }

    let hostname = gethostname::gethostname().to_string_lossy().into_owned();
    let fqdn = fqdn_from_hosts(&read("/etc/hosts"), &hostname).unwrap_or_else(|| hostname.clone());
    let (host, domain) = fqdn.split_once('.').unwrap_or((&fqdn, ""));
    g.insert("localhost".into(), json!(hostname));
    g.insert("fqdn".into(), json!(fqdn));
    g.insert("host".into(), json!(host));
    g.insert("domain".into(), json!(domain));
    g.insert("id".into(), json!(id));
    g.insert("server_id".into(), json!(hw::server_id(id)));
    let ifaces = net::interfaces();
    g.extend(net::address_grains(&ifaces));
    let (v4, v6) = net::read_routes();
    g.extend(net::gateway_grains(&v4, &v6));
    if let Some(dns) = net::read_dns() {
        g.insert("dns".into(), dns);
    }
    let addrs: Vec<IpAddr> = ifaces
        .iter()
        .flat_map(|i| {
            let v4 = i.inet.iter().map(|(a, _, _)| IpAddr::V4(*a));
            v4.chain(i.inet6.iter().map(|(a, _)| IpAddr::V6(*a)))
        })
        .collect();
    g.insert(
        "fqdns".into(),
        json!(net::fqdns_from_hosts(&read("/etc/hosts"), &addrs)),
    );
    g.extend(net::fqdn_ips(&fqdn));

    g.extend(hw::gpu_grains());
    g.extend(hw::disk_grains(Path::new("/sys/block")));
    g.extend(hw::misc_grains());
    g.insert("locale_info".into(), hw::locale_info());
    let cmdline = read("/proc/cmdline");
    if !cmdline.is_empty() {
        g.insert("kernelparams".into(), hw::kernelparams(&cmdline));
    }
    if let Some(systemd) = hw::systemd_grain() {
        g.insert("systemd".into(), systemd);
    }
    let uts = nix::sys::utsname::uname().ok();
    let uname = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
        uts.as_ref()
            .map(|u| f(u).to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let cpuarch = uname(|u| u.machine());
    g.insert("kernel".into(), json!(uname(|u| u.sysname())));
    g.insert("nodename".into(), json!(uname(|u| u.nodename())));
    g.insert("kernelrelease".into(), json!(uname(|u| u.release())));
    g.insert("kernelversion".into(), json!(uname(|u| u.version())));
    g.insert("cpuarch".into(), json!(&cpuarch));
    g.insert("init".into(), json!(init_system()));

    let os = os_grains(&parse_os_release(
        &[read("/etc/os-release"), read("/usr/lib/os-release")]
            .into_iter()
            .find(|s| !s.trim().is_empty())
            .unwrap_or_default(),
    ));
    let family = os
        .get("os_family")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    g.extend(os);

    let cpuinfo = read("/proc/cpuinfo");
    g.extend(cpu_grains(&cpuinfo));
    g.insert("osarch".into(), json!(osarch(&family, &cpuarch)));
    g.extend(mem_grains(&read("/proc/meminfo")));
    let (virt, subtype) = detect_virtual(&VirtSources {
        dockerenv: Path::new("/.dockerenv").exists(),
        containerenv: Path::new("/run/.containerenv").exists(),
        cgroup: read("/proc/1/cgroup"),
        environ: read("/proc/1/environ"),
        product_name: read("/sys/devices/virtual/dmi/id/product_name"),
        sys_vendor: read("/sys/devices/virtual/dmi/id/sys_vendor"),
        cpuinfo,
        xen: Path::new("/proc/xen").exists() || Path::new("/sys/bus/xen").exists(),
    });
    g.insert("virtual".into(), json!(virt));
    if let Some(sub) = subtype {
        g.insert("virtual_subtype".into(), json!(sub));
    }

    let path = std::env::var("PATH").unwrap_or_default();
    g.insert("path".into(), json!(path.trim()));
    g.insert(
        "systempath".into(),
        json!(path.trim().split(':').collect::<Vec<_>>()),
    );
    // The Salt version whose behaviour saltq implements, so formulas' version gates
    // (`grains.saltversioninfo >= [3006]`) take Salt 3007.8's branch; saltq's own version
    // is `saltqversion`.
    g.insert("saltversion".into(), json!(SALT_VERSION));
    let info: Vec<u64> = SALT_VERSION
        .split('.')
        .filter_map(|p| p.parse().ok())
        .collect();
    g.insert("saltversioninfo".into(), json!(info));
    g.insert("saltqversion".into(), json!(env!("CARGO_PKG_VERSION")));
    // `list(sys.version_info)` of the Python Salt 3007.8 runs on in the census (Debian 12's
    // python3): saltq has no Python, formulas read it for Python 2/3 branches.
    g.insert("pythonversion".into(), json!(PYTHON_VERSION));
    g.insert("shell".into(), json!(crate::modules::cmd::default_shell()));

    let uid = Uid::current();
    let gid = Gid::current();
    let user = User::from_uid(uid).ok().flatten().map(|u| u.name);
    let group = Group::from_gid(gid).ok().flatten().map(|g| g.name);
    g.insert("username".into(), json!(user));
    g.insert("groupname".into(), json!(group));
    g.insert("pid".into(), json!(getpid().as_raw()));
    g.insert("gid".into(), json!(gid.as_raw()));
    g.insert("uid".into(), json!(uid.as_raw()));

    if let Some(statics) = static_grains {
        for (k, v) in statics {
            g.insert(k.clone(), v.clone());
        }
    }
    Value::Object(g)
}

/// The canonical name `/etc/hosts` gives `hostname` (the first name on its line), which is
/// what the resolver's `getfqdn` answers on a host without DNS for itself.
pub(crate) fn fqdn_from_hosts(hosts: &str, hostname: &str) -> Option<String> {
    hosts
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let _addr = words.next()?;
            let names: Vec<&str> = words.collect();
            names.contains(&hostname).then(|| names[0].to_owned())
        })
        .next()
}

/// `num_cpus`, `cpu_model` and `cpu_flags` from `/proc/cpuinfo`.
pub(crate) fn cpu_grains(cpuinfo: &str) -> Map<String, Value> {
    let mut g = Map::new();
    let field = |line: &str| {
        line.split_once(':')
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
    };
    let fields: Vec<(String, String)> = cpuinfo.lines().filter_map(field).collect();
    let count = fields.iter().filter(|(k, _)| k == "processor").count();
    g.insert("num_cpus".into(), json!(count.max(1)));
    if let Some((_, model)) = fields
        .iter()
        .find(|(k, _)| k == "model name" || k == "cpu model")
    {
        g.insert("cpu_model".into(), json!(model));
    }
    if let Some((_, flags)) = fields.iter().find(|(k, _)| k == "flags" || k == "Features") {
        g.insert(
            "cpu_flags".into(),
            json!(flags.split_whitespace().collect::<Vec<_>>()),
        );
    }
    g
}

/// `mem_total` and `swap_total` in MiB from `/proc/meminfo`.
pub(crate) fn mem_grains(meminfo: &str) -> Map<String, Value> {
    let kib = |key: &str| {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let mut g = Map::new();
    g.insert("mem_total".into(), json!(kib("MemTotal") / 1024));
    g.insert("swap_total".into(), json!(kib("SwapTotal") / 1024));
    g
}

/// What `virtual` is guessed from.
#[derive(Debug, Default, Clone)]
pub(crate) struct VirtSources {
    pub dockerenv: bool,
    pub containerenv: bool,
    pub cgroup: String,
    pub environ: String,
    pub product_name: String,
    pub sys_vendor: String,
    pub cpuinfo: String,
    pub xen: bool,
}

/// `virtual` and `virtual_subtype`: the hypervisor from DMI and cpuinfo, then a container
/// from cgroups and marker files, as Salt checks them (containers last, so a container in a
/// VM says `container`). Without any sign: `physical`.
pub(crate) fn detect_virtual(s: &VirtSources) -> (String, Option<String>) {
    let mut virt = "physical".to_owned();
    let mut sub: Option<String> = None;
    let product = s.product_name.trim();
    let vendor = s.sys_vendor.trim();
    if s.xen {
        virt = "xen".into();
    }
    if s.cpuinfo.contains("QEMU Virtual CPU") || vendor == "QEMU" {
        virt = "kvm".into();
    }
    if product.contains("VirtualBox") || vendor.contains("innotek") {
        virt = "VirtualBox".into();
    } else if product.contains("RHEV Hypervisor") {
        (virt, sub) = ("kvm".into(), Some("rhev".into()));
    } else if product.contains("oVirt Node") {
        (virt, sub) = ("kvm".into(), Some("ovirt".into()));
    } else if product.contains("Google") {
        virt = "gce".into();
    } else if product.contains("BHYVE") {
        virt = "bhyve".into();
    } else if product.contains("VMware") || vendor.contains("VMware") {
        virt = "VMware".into();
    } else if vendor == "Microsoft Corporation" && product.contains("Virtual Machine") {
        virt = "VirtualPC".into();
    } else if vendor.contains("Amazon EC2") {
        (virt, sub) = ("Nitro".into(), Some("Amazon EC2".into()));
    } else if product.contains("KVM") || product.contains("Standard PC") {
        virt = "kvm".into();
    }
    let hypervisor_flag = s
        .cpuinfo
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    if virt == "physical" && hypervisor_flag {
        // Some hypervisor without DMI data (e.g. a microVM): KVM is the common case.
        virt = "kvm".into();
    }

    if s.cgroup.contains(":/lxc/") || s.environ.split('\0').any(|e| e == "container=lxc") {
        (virt, sub) = ("container".into(), Some("LXC".into()));
    } else if s.cgroup.contains(":/kubepods/") {
        sub = Some("kubernetes".into());
    } else if s.cgroup.contains(":/libpod_parent/") {
        sub = Some("libpod".into());
    } else if [":/system.slice/docker", ":/docker/", ":/docker-ce/"]
        .iter()
        .any(|m| s.cgroup.contains(m))
        || s.dockerenv
    {
        (virt, sub) = ("container".into(), Some("Docker".into()));
    } else if s.containerenv || s.environ.split('\0').any(|e| e == "container=podman") {
        (virt, sub) = ("container".into(), Some("Podman".into()));
    }
    (virt, sub)
}

/// Salt's `_linux_init_system`: `systemd` when it runs, else guessed from PID 1's command.
fn init_system() -> String {
    if Path::new("/run/systemd/system").exists() {
        return "systemd".into();
    }
    let cmdline = std::fs::read("/proc/1/cmdline").unwrap_or_default();
    let words: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    let Some(first) = words.first() else {
        return "unknown".into();
    };
    let resolved = which(first).unwrap_or_else(|| first.clone());
    if resolved.ends_with("bin/init") {
        let binary = std::fs::read(&resolved)
            .unwrap_or_default()
            .to_ascii_lowercase();
        for name in ["upstart", "sysvinit", "systemd"] {
            if binary.windows(name.len()).any(|w| w == name.as_bytes()) {
                return name.into();
            }
        }
        return "unknown".into();
    }
    let base = |w: &String| w.rsplit('/').next().unwrap_or(w).to_owned();
    let names: Vec<String> = words.iter().map(base).collect();
    for name in ["supervisord", "dumb-init", "tini"] {
        if names.iter().any(|n| n == name) {
            return name.into();
        }
    }
    if words == ["runit"] || words.iter().any(|w| w == "/sbin/my_init") {
        return "runit".into();
    }
    "unknown".into()
}

/// The path of `cmd` on `$PATH`, or `cmd` itself when it is a path.
fn which(cmd: &str) -> Option<String> {
    if cmd.contains('/') {
        return Some(cmd.to_owned());
    }
    std::env::var("PATH")
        .ok()?
        .split(':')
        .map(|dir| format!("{dir}/{cmd}"))
        .find(|p| Path::new(p).is_file())
}

#[cfg(test)]
mod tests;
