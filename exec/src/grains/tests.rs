//! Grain derivations checked as data against what Salt computes from the same files.

use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::os::{derive_os, strip_linux};
use super::*;

fn os_for(os_release: &str) -> Value {
    Value::Object(os_grains(&parse_os_release(os_release)))
}

#[test]
fn os_grains_match_salt() {
    let cases = [
        // Observed with `salt-call --local grains.items` on this Debian 12 machine.
        (
            "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nVERSION=\"12 (bookworm)\"\nVERSION_CODENAME=bookworm\nID=debian\n",
            json!({"os": "Debian", "os_family": "Debian", "oscodename": "bookworm",
                   "osfullname": "Debian GNU/Linux", "lsb_distrib_id": "Debian GNU/Linux",
                   "lsb_distrib_release": "12", "lsb_distrib_codename": "bookworm",
                   "osrelease": "12", "osmajorrelease": 12,
                   "osrelease_info": [12], "osfinger": "Debian-12"}),
        ),
        (
            "NAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\nID=ubuntu\nID_LIKE=debian\nVERSION_CODENAME=jammy\nPRETTY_NAME=\"Ubuntu 22.04.3 LTS\"\n",
            json!({"os": "Ubuntu", "os_family": "Debian", "oscodename": "jammy",
                   "osfullname": "Ubuntu", "lsb_distrib_id": "Ubuntu",
                   "lsb_distrib_release": "22.04", "lsb_distrib_codename": "jammy",
                   "osrelease": "22.04", "osmajorrelease": 22,
                   "osrelease_info": [22, 4], "osfinger": "Ubuntu-22.04"}),
        ),
        (
            "NAME=\"Rocky Linux\"\nVERSION=\"9.3 (Blue Onyx)\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.3\"\nPRETTY_NAME=\"Rocky Linux 9.3 (Blue Onyx)\"\n",
            json!({"os": "Rocky", "os_family": "RedHat", "oscodename": "Blue Onyx",
                   "osfullname": "Rocky Linux",
                   "osrelease": "9.3", "osmajorrelease": 9, "osrelease_info": [9, 3],
                   "osfinger": "Rocky Linux-9"}),
        ),
        (
            "NAME=\"AlmaLinux\"\nVERSION_ID=\"9.4\"\nID=\"almalinux\"\nID_LIKE=\"rhel centos fedora\"\nPRETTY_NAME=\"AlmaLinux 9.4 (Seafoam Ocelot)\"\n",
            json!({"os": "AlmaLinux", "os_family": "RedHat", "oscodename": "Seafoam Ocelot",
                   "osfullname": "AlmaLinux",
                   "osrelease": "9.4", "osmajorrelease": 9, "osrelease_info": [9, 4],
                   "osfinger": "AlmaLinux-9"}),
        ),
        (
            "NAME=\"Fedora Linux\"\nVERSION=\"39 (Server Edition)\"\nVERSION_ID=39\nID=fedora\nVERSION_CODENAME=\"\"\nPRETTY_NAME=\"Fedora Linux 39 (Server Edition)\"\n",
            json!({"os": "Fedora", "os_family": "RedHat",
                   "oscodename": "Server Edition",
                   "osfullname": "Fedora Linux", "osrelease": "39", "osmajorrelease": 39,
                   "osrelease_info": [39], "osfinger": "Fedora Linux-39"}),
        ),
        (
            "NAME=\"Red Hat Enterprise Linux\"\nVERSION_ID=\"9.2\"\nID=\"rhel\"\nID_LIKE=\"fedora\"\nPRETTY_NAME=\"Red Hat Enterprise Linux 9.2 (Plow)\"\n",
            json!({"os": "RedHat", "os_family": "RedHat",
                   "oscodename": "Plow",
                   "osfullname": "Red Hat Enterprise Linux", "osrelease": "9.2",
                   "osmajorrelease": 9, "osrelease_info": [9, 2],
                   "osfinger": "Red Hat Enterprise Linux-9"}),
        ),
        (
            "NAME=\"openSUSE Leap\"\nVERSION=\"15.5\"\nID=\"opensuse-leap\"\nID_LIKE=\"suse opensuse\"\nVERSION_ID=\"15.5\"\nPRETTY_NAME=\"openSUSE Leap 15.5\"\nCPE_NAME=\"cpe:/o:opensuse:leap:15.5\"\n",
            json!({"os": "SUSE", "os_family": "Suse", "oscodename": "openSUSE Leap 15.5",
                   "osfullname": "Leap", "osrelease": "15.5", "osmajorrelease": 15,
                   "osrelease_info": [15, 5], "osfinger": "Leap-15"}),
        ),
        (
            "NAME=\"Arch Linux\"\nPRETTY_NAME=\"Arch Linux\"\nID=arch\nBUILD_ID=rolling\n",
            json!({"os": "Arch", "os_family": "Arch", "oscodename": "Arch Linux",
                   "osfullname": "Arch Linux"}),
        ),
        (
            "NAME=\"Alpine Linux\"\nID=alpine\nVERSION_ID=3.19.1\nPRETTY_NAME=\"Alpine Linux v3.19\"\n",
            json!({"os": "Alpine", "os_family": "Alpine", "oscodename": "Alpine Linux v3.19",
                   "osfullname": "Alpine Linux", "osrelease": "3.19.1", "osmajorrelease": 3,
                   "osrelease_info": [3, 19, 1], "osfinger": "Alpine Linux-3"}),
        ),
        ("", json!({})),
    ];
    for (text, want) in cases {
        assert_eq!(os_for(text), want, "{text}");
    }
}

#[test]
fn linux_words_are_stripped_like_salt() {
    assert_eq!(strip_linux("Debian GNU/Linux"), "Debian");
    assert_eq!(strip_linux("Rocky Linux"), "Rocky");
    assert_eq!(strip_linux("AlmaLinux"), "AlmaLinux");
    assert_eq!(strip_linux("Fedora Linux"), "Fedora");
    assert_eq!(derive_os("Pop!_OS", "pop"), "Pop");
    assert_eq!(derive_os("Linux Mint", "linuxmint"), "Mint");
    assert_eq!(derive_os("CentOS Stream", "centos"), "CentOS Stream");
}

#[test]
fn proc_files() {
    let meminfo = "MemTotal:       24681572 kB\nMemFree:  1 kB\nSwapTotal:             0 kB\n";
    assert_eq!(
        Value::Object(mem_grains(meminfo)),
        json!({"mem_total": 24103, "swap_total": 0})
    );
    let cpuinfo = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu vme hypervisor\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu vme hypervisor\n";
    assert_eq!(
        Value::Object(cpu_grains(cpuinfo)),
        json!({"num_cpus": 2, "cpu_model": "Intel(R) Xeon(R) Processor",
               "cpu_flags": ["fpu", "vme", "hypervisor"]})
    );
    assert_eq!(osarch("Debian", "x86_64"), "amd64");
    assert_eq!(osarch("Debian", "aarch64"), "arm64");
    assert_eq!(osarch("RedHat", "x86_64"), "x86_64");
}

#[test]
fn fqdn_comes_from_the_hosts_line() {
    let hosts = "127.0.0.1\tlocalhost\n# 10.0.0.1 vm.bad vm\n127.0.1.1 vm.example.com vm\n::1 localhost ip6-localhost\n";
    assert_eq!(
        fqdn_from_hosts(hosts, "vm").as_deref(),
        Some("vm.example.com")
    );
    assert_eq!(fqdn_from_hosts(hosts, "other"), None);
    assert_eq!(
        fqdn_from_hosts("192.0.2.2 vm\n", "vm").as_deref(),
        Some("vm")
    );
}

#[test]
fn virtual_guesses() {
    let flags = "flags\t: fpu hypervisor\n".to_owned();
    let cases = [
        (VirtSources::default(), ("physical", None)),
        (
            VirtSources {
                cpuinfo: flags.clone(),
                ..VirtSources::default()
            },
            ("kvm", None),
        ),
        // This machine: a microVM running a Docker container (Salt says container/Docker).
        (
            VirtSources {
                cpuinfo: flags.clone(),
                dockerenv: true,
                cgroup: "0::/\n".into(),
                ..VirtSources::default()
            },
            ("container", Some("Docker")),
        ),
        (
            VirtSources {
                product_name: "VirtualBox\n".into(),
                ..VirtSources::default()
            },
            ("VirtualBox", None),
        ),
        (
            VirtSources {
                product_name: "Standard PC (Q35 + ICH9, 2009)\n".into(),
                sys_vendor: "QEMU\n".into(),
                ..VirtSources::default()
            },
            ("kvm", None),
        ),
        (
            VirtSources {
                cgroup: "12:cpu:/lxc/web01\n".into(),
                ..VirtSources::default()
            },
            ("container", Some("LXC")),
        ),
        (
            VirtSources {
                environ: "PATH=/bin\0container=podman\0".into(),
                ..VirtSources::default()
            },
            ("container", Some("Podman")),
        ),
        (
            VirtSources {
                cgroup: "1:name=systemd:/docker/abc\n".into(),
                ..VirtSources::default()
            },
            ("container", Some("Docker")),
        ),
    ];
    for (sources, (virt, sub)) in cases {
        let got = detect_virtual(&sources);
        assert_eq!(
            (got.0.as_str(), got.1.as_deref()),
            (virt, sub),
            "{sources:?}"
        );
    }
}

#[test]
fn this_machine() {
    let statics = json!({"roles": ["web"], "os": "Overridden"});
    let g = compute_grains("minion-1", statics.as_object());
    for key in [
        "id",
        "os",
        "os_family",
        "osrelease",
        "kernel",
        "host",
        "fqdn",
        "cpuarch",
        "num_cpus",
        "mem_total",
        "ipv4",
        "ipv6",
        "kernelrelease",
        "nodename",
        "localhost",
        "virtual",
        "init",
        "shell",
        "path",
        "saltversion",
        "num_gpus",
        "ip4_interfaces",
        "machine_id",
    ] {
        if key == "machine_id" && !Path::new("/etc/machine-id").exists() {
            continue;
        }
        assert!(g.get(key).is_some(), "grain {key} is missing");
    }
    assert_eq!(g["id"], json!("minion-1"));
    assert_eq!(g["roles"], json!(["web"]));
    assert_eq!(g["os"], json!("Overridden"));
    assert_eq!(g["kernel"], json!("Linux"));
    assert_eq!(g["num_gpus"], json!(0));
    // Salt's version for formulas' version gates, saltq's own beside it (#35).
    assert_eq!(g["saltversion"], json!("3007.8"));
    assert_eq!(g["saltversioninfo"], json!([3007, 8]));
    assert_eq!(g["saltqversion"], json!(env!("CARGO_PKG_VERSION")));
    assert_eq!(g["pythonversion"], json!([3, 11, 2, "final", 0]));
    let ipv4: Vec<&str> = g["ipv4"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(ipv4.contains(&"127.0.0.1"), "{ipv4:?}");
    let mut sorted = ipv4.clone();
    sorted.sort_by_key(|a| a.parse::<Ipv4Addr>().ok());
    assert_eq!(ipv4, sorted);
    assert!(g["mem_total"].as_u64().unwrap_or(0) > 0);
    assert!(g["num_cpus"].as_u64().unwrap_or(0) > 0);
    let hostname = gethostname::gethostname().to_string_lossy().into_owned();
    assert_eq!(g["localhost"], json!(hostname));
}

/// The grains salt 3007.8 computed on this kind of machine (`salt-call --local grains.items`
/// on Debian 12), minus the Python-only ones (`pythonexecutable`, `pythonpath`,
/// `pythonversion`, `saltpath`, `zmqversion`), the ZFS ones and `master` (a config value
/// the minion adds).
const SALT_GRAIN_NAMES: &[&str] = &[
    "cpu_flags",
    "cpu_model",
    "cpuarch",
    "cwd",
    "disks",
    "dns",
    "domain",
    "efi",
    "efi-secure-boot",
    "fqdn",
    "fqdn_ip4",
    "fqdn_ip6",
    "fqdns",
    "gid",
    "gpus",
    "groupname",
    "host",
    "hwaddr_interfaces",
    "id",
    "init",
    "ip4_gw",
    "ip4_interfaces",
    "ip6_gw",
    "ip6_interfaces",
    "ip_gw",
    "ip_interfaces",
    "ipv4",
    "ipv6",
    "kernel",
    "kernelparams",
    "kernelrelease",
    "kernelversion",
    "locale_info",
    "localhost",
    "lsb_distrib_codename",
    "lsb_distrib_id",
    "lsb_distrib_release",
    "machine_id",
    "mem_total",
    "nodename",
    "num_cpus",
    "num_gpus",
    "os",
    "os_family",
    "osarch",
    "oscodename",
    "osfinger",
    "osfullname",
    "osmajorrelease",
    "osrelease",
    "osrelease_info",
    "path",
    "pid",
    "ps",
    "saltversion",
    "saltversioninfo",
    "server_id",
    "shell",
    "ssds",
    "swap_total",
    "systempath",
    "transactional",
    "uid",
    "username",
    "virtual",
];

#[test]
fn the_host_has_every_grain_salt_has() {
    let g = compute_grains("oracle", None);
    let missing: Vec<&&str> = SALT_GRAIN_NAMES
        .iter()
        .filter(|k| g.get(**k).is_none())
        .filter(|k| **k != "machine_id" || Path::new("/etc/machine-id").exists())
        .filter(|k| !(k.starts_with("lsb_") && g["os_family"] != json!("Debian")))
        .collect();
    assert!(missing.is_empty(), "missing grains: {missing:?}");
    // Shapes as Salt's, where this machine is known.
    assert_eq!(g["server_id"], json!(1_382_249_759));
    for key in ["ip4_gw", "ip6_gw"] {
        assert!(
            g[key].is_string() || g[key].is_boolean(),
            "{key}: {}",
            g[key]
        );
    }
    assert!(g["ip_gw"].is_boolean());
    let dns_keys: Vec<&String> = g["dns"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(
        dns_keys,
        [
            "nameservers",
            "ip4_nameservers",
            "ip6_nameservers",
            "sortlist",
            "domain",
            "search",
            "options"
        ]
    );
    let locale_keys: Vec<&String> = g["locale_info"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(
        locale_keys,
        [
            "defaultlanguage",
            "defaultencoding",
            "detectedencoding",
            "timezone"
        ]
    );
    assert_eq!(
        g["num_gpus"],
        json!(g["gpus"].as_array().map_or(0, Vec::len))
    );
    assert!(g["kernelparams"].as_array().is_some_and(|p| {
        p.iter()
            .all(|kv| kv.as_array().is_some_and(|kv| kv.len() == 2))
    }));
}

#[test]
fn static_grains_order() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let file = tmp.path().join("grains");
    std::fs::write(&file, "roles: [db]\nos: FromFile\nfile_only: 1\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let config = json!({"roles": ["web"]});
    let statics = static_grains(Some(&file), config.as_object().unwrap_or(&Map::new()));
    let g = compute_grains("labminion", Some(&statics));
    // Computed < grains file < minion config.
    assert_eq!(g["roles"], json!(["web"]));
    assert_eq!(g["os"], json!("FromFile"));
    assert_eq!(g["file_only"], json!(1));
    assert_eq!(g["id"], json!("labminion"));
    std::fs::write(&file, "- not a dict\n").unwrap_or_else(|e| panic!("{e}"));
    assert!(load_grains_file(&file).is_empty());
    assert!(load_grains_file(&tmp.path().join("absent")).is_empty());
}
