//! The operating-system grains (`os`, `os_family`, `osrelease`, `osfinger`, ...) from
//! os-release data, with Salt's name and family maps (`salt/grains/core.py`).

use saltq_semantics::python;
use serde_json::{Map, Value, json};

/// `KEY=value` lines of an os-release file, quotes removed.
pub(crate) fn parse_os_release(text: &str) -> Map<String, Value> {
    text.lines()
        .filter_map(|l| l.trim().split_once('='))
        .filter(|(k, _)| !k.starts_with('#'))
        .map(|(k, v)| {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
                .unwrap_or(v);
            (k.to_owned(), json!(v.replace("\\\"", "\"")))
        })
        .collect()
}

/// Salt's traditional short `os` names for the first ten characters of a lowercased name.
const OS_NAME_MAP: &[(&str, &str)] = &[
    ("redhatente", "RedHat"),
    ("gentoobase", "Gentoo"),
    ("archarm", "Arch ARM"),
    ("arch", "Arch"),
    ("debian", "Debian"),
    ("raspbian", "Raspbian"),
    ("fedoraremi", "Fedora"),
    ("chapeau", "Chapeau"),
    ("korora", "Korora"),
    ("amazonami", "Amazon"),
    ("alt", "ALT"),
    ("enterprise", "OEL"),
    ("oracleserv", "OEL"),
    ("cloudserve", "CloudLinux"),
    ("cloudlinux", "CloudLinux"),
    ("almalinux", "AlmaLinux"),
    ("pidora", "Fedora"),
    ("scientific", "ScientificLinux"),
    ("synology", "Synology"),
    ("nilrt", "NILinuxRT"),
    ("poky", "Poky"),
    ("manjaro", "Manjaro"),
    ("manjarolin", "Manjaro"),
    ("univention", "Univention"),
    ("antergos", "Antergos"),
    ("sles", "SUSE"),
    ("void", "Void"),
    ("slesexpand", "RES"),
    ("linuxmint", "Mint"),
    ("neon", "KDE neon"),
    ("pop", "Pop"),
    ("rocky", "Rocky"),
    ("alibabaclo", "Alinux"),
    ("mendel", "Mendel"),
];

/// Salt's `os` → `os_family` map; an `os` not listed is its own family.
const OS_FAMILY_MAP: &[(&str, &str)] = &[
    ("Ubuntu", "Debian"),
    ("Fedora", "RedHat"),
    ("Chapeau", "RedHat"),
    ("Korora", "RedHat"),
    ("FedBerry", "RedHat"),
    ("CentOS", "RedHat"),
    ("CentOS Stream", "RedHat"),
    ("GoOSe", "RedHat"),
    ("Scientific", "RedHat"),
    ("Amazon", "RedHat"),
    ("CloudLinux", "RedHat"),
    ("AlmaLinux", "RedHat"),
    ("OVS", "RedHat"),
    ("OEL", "RedHat"),
    ("XCP", "RedHat"),
    ("XCP-ng", "RedHat"),
    ("XenServer", "RedHat"),
    ("RES", "RedHat"),
    ("Sangoma", "RedHat"),
    ("VMware Photon OS", "RedHat"),
    ("Mandrake", "Mandriva"),
    ("Mint", "Debian"),
    ("VMwareESX", "VMware"),
    ("Bluewhite64", "Bluewhite"),
    ("Slamd64", "Slackware"),
    ("SLES", "Suse"),
    ("SUSE Enterprise Server", "Suse"),
    ("SLED", "Suse"),
    ("openSUSE", "Suse"),
    ("SUSE", "Suse"),
    ("openSUSE Leap", "Suse"),
    ("openSUSE Tumbleweed", "Suse"),
    ("SLES_SAP", "Suse"),
    ("Arch ARM", "Arch"),
    ("Manjaro", "Arch"),
    ("Manjaro ARM", "Arch"),
    ("Antergos", "Arch"),
    ("EndeavourOS", "Arch"),
    ("ALT", "RedHat"),
    ("Trisquel", "Debian"),
    ("GCEL", "Debian"),
    ("Linaro", "Debian"),
    ("elementary OS", "Debian"),
    ("elementary", "Debian"),
    ("Univention", "Debian"),
    ("ScientificLinux", "RedHat"),
    ("Raspbian", "Debian"),
    ("Devuan", "Debian"),
    ("antiX", "Debian"),
    ("Kali", "Debian"),
    ("Parrot OS", "Debian"),
    ("neon", "Debian"),
    ("Cumulus", "Debian"),
    ("Deepin", "Debian"),
    ("NILinuxRT", "NILinuxRT"),
    ("KDE neon", "Debian"),
    ("Void", "Void"),
    ("IDMS", "Debian"),
    ("Funtoo", "Gentoo"),
    ("TurnKey", "Debian"),
    ("Pop", "Debian"),
    ("Rocky", "RedHat"),
    ("AstraLinuxCE", "Debian"),
    ("AstraLinuxSE", "Debian"),
    ("Alinux", "RedHat"),
    ("Mendel", "Debian"),
    ("OSMC", "Debian"),
];

/// Distributions whose grains Salt takes from os-release alone (its family from `ID_LIKE`).
const OS_RELEASE_ONLY: &[&str] = &[
    "almalinux",
    "astra",
    "debian",
    "linuxmint",
    "mendel",
    "pop",
    "rocky",
    "ubuntu",
];

/// Removes every ` linux` / `/GNU/Linux`-style suffix word, as Salt's `_REPLACE_LINUX_RE`
/// (`\W(?:gnu/)?linux`, case-insensitive) does.
pub(super) fn strip_linux(name: &str) -> String {
    let mut s = name.to_owned();
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(rel) = s.to_ascii_lowercase()[from..].find("linux") {
        let at = from + rel;
        let lower = s.to_ascii_lowercase();
        let gnu = at >= 4 && &lower[at - 4..at] == "gnu/";
        let body_start = if gnu { at - 4 } else { at };
        match s[..body_start].chars().next_back() {
            Some(c) if !is_word(c) => {
                let start = body_start - c.len_utf8();
                s.replace_range(start..at + 5, "");
                from = start;
            }
            _ => from = at + 5,
        }
    }
    s
}

/// Salt's `_derive_os_grain` from os-release `NAME` and `ID`.
pub(super) fn derive_os(fullname: &str, os_id: &str) -> String {
    match (os_id, fullname) {
        ("astra", "Astra Linux (Orel)") => return "AstraLinuxCE".into(),
        ("astra", "Astra Linux (Smolensk)") => return "AstraLinuxSE".into(),
        ("pop", "Pop!_OS") => return "Pop".into(),
        _ => {}
    }
    let distro = strip_linux(fullname).trim().to_owned();
    let short: String = distro
        .replace(' ', "")
        .to_lowercase()
        .chars()
        .take(10)
        .collect();
    OS_NAME_MAP
        .iter()
        .find(|(k, _)| *k == short)
        .map_or(distro, |(_, v)| (*v).to_owned())
}

/// `os`, `os_family`, `oscodename`, `osfullname`, `osrelease`, `osrelease_info`,
/// `osmajorrelease` and `osfinger` from os-release data.
pub(crate) fn os_grains(rel: &Map<String, Value>) -> Map<String, Value> {
    let get = |k: &str| {
        rel.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_owned()
    };
    let (id, name) = (get("ID"), get("NAME"));
    let mut g = Map::new();
    if name.is_empty() {
        return g;
    }
    let os = derive_os(&name, &id);
    let family = if OS_RELEASE_ONLY.contains(&id.as_str()) {
        let like = get("ID_LIKE");
        let ids: Vec<&str> = std::iter::once(id.as_str())
            .chain(like.split_whitespace())
            .collect();
        let family_id = if like.is_empty() {
            id.as_str()
        } else if ids.contains(&"debian") || ids.contains(&"ubuntu") {
            "debian"
        } else {
            ids.last().copied().unwrap_or(id.as_str())
        };
        if family_id == "fedora" {
            "RedHat".to_owned()
        } else {
            capitalize(family_id)
        }
    } else {
        OS_FAMILY_MAP
            .iter()
            .find(|(k, _)| *k == os)
            .map_or_else(|| os.clone(), |(_, v)| (*v).to_owned())
    };
    let legacy = !OS_RELEASE_ONLY.contains(&id.as_str());
    // The code name: VERSION_CODENAME, else the parenthesised part of VERSION or
    // PRETTY_NAME (`9.3 (Blue Onyx)`), else, on Salt's legacy path, PRETTY_NAME itself.
    let parenthesised = |text: String| {
        let (_, rest) = text.split_once('(')?;
        let (inner, _) = rest.split_once(')')?;
        Some(inner.trim().to_owned()).filter(|s| !s.is_empty())
    };
    let codename = Some(get("VERSION_CODENAME"))
        .filter(|s| !s.is_empty())
        .or_else(|| parenthesised(get("VERSION")))
        .or_else(|| parenthesised(get("PRETTY_NAME")))
        .or_else(|| legacy.then(|| get("PRETTY_NAME")))
        .unwrap_or_default();
    let mut fullname = name.clone();
    let mut release = get("VERSION_ID");
    let (mut os, mut family) = (os, family);
    // SUSE: Salt's legacy path reads the vendor from CPE_NAME (`cpe:/o:opensuse:leap:15.5`).
    let cpe = get("CPE_NAME");
    let cpe: Vec<&str> = cpe.split(':').collect();
    if legacy && matches!(cpe.get(2), Some(&"suse") | Some(&"opensuse")) {
        os = "SUSE".into();
        family = "Suse".into();
        if name == "openSUSE Leap" {
            fullname = "Leap".into();
        } else if get("VERSION") == "Tumbleweed" {
            fullname = "Tumbleweed".into();
        }
        if cpe.get(2) == Some(&"opensuse")
            && let Some(v) = cpe.get(4).filter(|v| !v.is_empty())
        {
            release = (*v).to_owned();
        }
    }
    g.insert("os".into(), json!(os));
    g.insert("os_family".into(), json!(family));
    if !codename.is_empty() {
        g.insert("oscodename".into(), json!(codename));
    }
    g.insert("osfullname".into(), json!(fullname));
    if family == "Debian" {
        // Salt fills the lsb_distrib_* grains from os-release where lsb_release is absent.
        g.insert("lsb_distrib_id".into(), json!(name));
        let version_id = get("VERSION_ID");
        if !version_id.is_empty() {
            g.insert("lsb_distrib_release".into(), json!(version_id));
        }
        let version_codename = get("VERSION_CODENAME");
        if !version_codename.is_empty() {
            g.insert("lsb_distrib_codename".into(), json!(version_codename));
        }
    }
    if !release.is_empty() {
        g.insert("osrelease".into(), json!(release));
        let info: Vec<Value> = release
            .split('.')
            .map(|p| match p.parse::<u64>() {
                Ok(n) if p.chars().all(|c| c.is_ascii_digit()) => json!(n),
                _ => json!(p),
            })
            .collect();
        if let Some(major) = info.first().and_then(Value::as_u64) {
            g.insert("osmajorrelease".into(), json!(major));
        }
        let finger_name = if ["Debian", "FreeBSD", "OpenBSD", "NetBSD", "Mac", "Raspbian"]
            .contains(&os.as_str())
        {
            os.clone()
        } else {
            fullname.clone()
        };
        let finger_version = if os == "Ubuntu" || os == "Pop" {
            release.clone()
        } else {
            info.first().map(python::str).unwrap_or_default()
        };
        g.insert("osrelease_info".into(), Value::Array(info));
        g.insert(
            "osfinger".into(),
            json!(format!("{finger_name}-{finger_version}")),
        );
    }
    g
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first
            .to_uppercase()
            .chain(chars.flat_map(char::to_lowercase))
            .collect(),
        None => String::new(),
    }
}

/// The package architecture: Debian's names on the Debian family (Salt asks dpkg), the CPU
/// architecture elsewhere.
pub(crate) fn osarch(family: &str, cpuarch: &str) -> String {
    if family != "Debian" {
        return cpuarch.to_owned();
    }
    match cpuarch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "i386" | "i486" | "i586" | "i686" => "i386",
        "armv7l" | "armv6l" => "armhf",
        "ppc64le" => "ppc64el",
        other => other,
    }
    .to_owned()
}
