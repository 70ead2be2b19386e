//! Hardware and environment grains: GPUs (`lspci -vmm`, else PCI classes in `/sys`), disks
//! and SSDs (`/sys/block`), kernel parameters, locale and time zone, `server_id`, `uuid`,
//! `efi`, `systemd`. Parsing is pure and tested with data.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::hashing::hex_digest;
use crate::pyish::shlex_split;

/// GPU vendors Salt recognises in `lspci` output, lowercase.
const KNOWN_VENDORS: &[&str] = &[
    "nvidia",
    "amd",
    "ati",
    "intel",
    "cirrus logic",
    "vmware",
    "matrox",
    "aspeed",
];

/// The PCI device classes that are GPUs, as `lspci` names them.
const GPU_CLASSES: &[&str] = &[
    "3d controller",
    "display controller",
    "processing accelerators",
    "vga compatible controller",
];

/// `gpus` from `lspci -vmm` output: `{vendor, model}` per display device, as Salt's
/// `_linux_gpu_data`.
pub(crate) fn gpus_from_lspci(out: &str) -> Vec<Value> {
    let mut gpus = Vec::new();
    for record in out.split("\n\n") {
        let fields: Map<String, Value> = record
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_owned(), json!(v.trim())))
            .collect();
        let field = |k: &str| fields.get(k).and_then(Value::as_str).unwrap_or("");
        if !GPU_CLASSES.contains(&field("Class").to_lowercase().as_str()) {
            continue;
        }
        let vendor_lower = field("Vendor").to_lowercase();
        let words: Vec<&str> = vendor_lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .collect();
        let vendor = KNOWN_VENDORS
            .iter()
            .find(|v| words.contains(v))
            .unwrap_or(&"unknown");
        gpus.push(json!({"vendor": vendor, "model": field("Device")}));
    }
    gpus
}

/// `gpus` from `/sys/bus/pci/devices/*/{class,vendor,device}` where `lspci` is absent:
/// display-class devices (class `0x03xxxx`), the vendor by PCI id, the model as
/// `vendor:device` ids.
pub(crate) fn gpus_from_sysfs(devices: &[(String, String, String)]) -> Vec<Value> {
    devices
        .iter()
        .filter(|(class, _, _)| class.trim().starts_with("0x03"))
        .map(|(_, vendor, device)| {
            let (vendor, device) = (vendor.trim(), device.trim());
            let name = match vendor {
                "0x10de" => "nvidia",
                "0x1002" | "0x1022" => "amd",
                "0x8086" => "intel",
                "0x1013" => "cirrus logic",
                "0x15ad" => "vmware",
                "0x102b" => "matrox",
                "0x1a03" => "aspeed",
                _ => "unknown",
            };
            json!({"vendor": name, "model": format!("{}:{}", vendor.trim_start_matches("0x"), device.trim_start_matches("0x"))})
        })
        .collect()
}

/// `num_gpus` and `gpus` of this machine.
pub(crate) fn gpu_grains() -> Map<String, Value> {
    let gpus = match crate::modules::cmd::which_path("lspci") {
        Some(lspci) => std::process::Command::new(lspci)
            .arg("-vmm")
            .output()
            .map(|o| gpus_from_lspci(&String::from_utf8_lossy(&o.stdout)))
            .unwrap_or_default(),
        None => {
            let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
            let devices: Vec<(String, String, String)> = std::fs::read_dir("/sys/bus/pci/devices")
                .map(|d| {
                    d.flatten()
                        .map(|e| {
                            let p = e.path();
                            (
                                read(&p.join("class")),
                                read(&p.join("vendor")),
                                read(&p.join("device")),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            gpus_from_sysfs(&devices)
        }
    };
    let mut g = Map::new();
    g.insert("num_gpus".into(), json!(gpus.len()));
    g.insert("gpus".into(), Value::Array(gpus));
    g
}

/// `disks` and `ssds` from `/sys/block`: non-virtual devices by their `rotational` flag.
pub(crate) fn disk_grains(root: &Path) -> Map<String, Value> {
    let mut disks = Vec::new();
    let mut ssds = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(root)
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let virtual_dev = std::fs::read_link(entry.path())
            .is_ok_and(|t| t.to_string_lossy().starts_with("../devices/virtual/"));
        if virtual_dev {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        match std::fs::read_to_string(entry.path().join("queue/rotational")) {
            Ok(flag) if flag.starts_with('0') => ssds.push(name),
            Ok(flag) if flag.starts_with('1') => disks.push(name),
            _ => {}
        }
    }
    let mut g = Map::new();
    g.insert("disks".into(), json!(disks));
    g.insert("ssds".into(), json!(ssds));
    g
}

/// `kernelparams` from `/proc/cmdline`: `[name, value or None]` per word.
pub(crate) fn kernelparams(cmdline: &str) -> Value {
    let words = shlex_split(cmdline).unwrap_or_default();
    Value::Array(
        words
            .iter()
            .map(|w| {
                let parts: Vec<&str> = w.split('=').collect();
                match parts.as_slice() {
                    [k, v] => json!([k, v.trim_matches('"')]),
                    _ => json!([parts[0], null]),
                }
            })
            .collect(),
    )
}

/// Python's `locale.getlocale()` from a locale name (`en_US.UTF-8`): language and
/// encoding, `None` for the `C` locale; `C.UTF-8` reads as `en_US`, as Python's alias table
/// has it.
pub(crate) fn parse_locale(name: &str) -> (Value, Value) {
    let name = name.split('@').next().unwrap_or("");
    let (lang, enc) = name.split_once('.').unwrap_or((name, ""));
    let enc = match enc.to_ascii_lowercase().replace('-', "").as_str() {
        "" => None,
        "utf8" => Some("UTF-8".to_owned()),
        "iso88591" => Some("ISO8859-1".to_owned()),
        "iso885915" => Some("ISO8859-15".to_owned()),
        _ => Some(enc.to_owned()),
    };
    match (lang, enc) {
        ("C" | "POSIX" | "", None) => (Value::Null, Value::Null),
        ("C" | "POSIX", Some(enc)) => (json!("en_US"), json!(enc)),
        (lang, enc) => (json!(lang), json!(enc)),
    }
}

/// The abbreviation `time.tzname[0]` gives for a TZif file: the last standard-time (not DST)
/// type's designation.
pub(crate) fn tzif_abbreviation(data: &[u8]) -> Option<String> {
    if data.get(..4)? != b"TZif" {
        return None;
    }
    let count = |i: usize| -> Option<usize> {
        let b = data.get(20 + 4 * i..24 + 4 * i)?;
        Some(u32::from_be_bytes(b.try_into().ok()?) as usize)
    };
    let (timecnt, typecnt, charcnt) = (count(3)?, count(4)?, count(5)?);
    let types_at = 44 + timecnt * 5;
    let chars_at = types_at + typecnt * 6;
    let chars = data.get(chars_at..chars_at + charcnt)?;
    (0..typecnt)
        .rev()
        .filter_map(|i| data.get(types_at + i * 6..types_at + i * 6 + 6))
        .find(|t| t[4] == 0)
        .and_then(|t| {
            let rest = chars.get(usize::from(t[5])..)?;
            let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
            Some(String::from_utf8_lossy(&rest[..end]).into_owned())
        })
}

/// `locale_info`: `{defaultlanguage, defaultencoding, detectedencoding, timezone}`.
pub(crate) fn locale_info() -> Value {
    let name = ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
        .unwrap_or_default();
    let (lang, enc) = parse_locale(&name);
    let timezone = match std::env::var("TZ") {
        Ok(tz) if !tz.is_empty() && !tz.contains('/') => tz.trim_start_matches(':').to_owned(),
        Ok(tz) if !tz.is_empty() => {
            let path = Path::new("/usr/share/zoneinfo").join(tz.trim_start_matches(':'));
            std::fs::read(path)
                .ok()
                .and_then(|d| tzif_abbreviation(&d))
                .unwrap_or_else(|| "unknown".into())
        }
        _ => std::fs::read("/etc/localtime")
            .ok()
            .and_then(|d| tzif_abbreviation(&d))
            .unwrap_or_else(|| "UTC".into()),
    };
    json!({"defaultlanguage": lang, "defaultencoding": enc, "detectedencoding": "utf-8", "timezone": timezone})
}

/// Salt's `server_id`: the minion id's SHA-256, as an integer, modulo 2^31.
pub(crate) fn server_id(id: &str) -> u64 {
    let hex = hex_digest("sha256", id.as_bytes()).unwrap_or_default();
    // The value modulo 2^31 depends only on the digest's last 31 bits.
    let tail = &hex[hex.len().saturating_sub(8)..];
    u64::from_str_radix(tail, 16).unwrap_or(0) % (1 << 31)
}

/// `systemd`: `{version, features}` from `systemctl --version`, when systemctl exists.
pub(crate) fn systemd_grain() -> Option<Value> {
    let systemctl = crate::modules::cmd::which_path("systemctl")?;
    let out = std::process::Command::new(systemctl)
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let version = lines.next()?.split_whitespace().nth(1)?.to_owned();
    Some(json!({"version": version, "features": lines.next().unwrap_or("").trim()}))
}

/// The small grains with one source each: `uuid`, `efi`, `efi-secure-boot`,
/// `transactional`, `ps`.
pub(crate) fn misc_grains() -> Map<String, Value> {
    let mut g = Map::new();
    if let Ok(uuid) = std::fs::read_to_string("/sys/class/dmi/id/product_uuid") {
        g.insert("uuid".into(), json!(uuid.trim().to_lowercase()));
    }
    let efi = ["/sys/firmware/efi/efivars", "/sys/firmware/efi/vars"]
        .iter()
        .find(|p| Path::new(p).exists());
    let secure = efi.is_some_and(|dir| {
        std::fs::read_dir(dir).is_ok_and(|d| {
            d.flatten().any(|e| {
                e.file_name().to_string_lossy().starts_with("SecureBoot-")
                    && std::fs::read(e.path()).is_ok_and(|b| b.last() == Some(&1))
            })
        })
    });
    g.insert("efi".into(), json!(efi.is_some()));
    g.insert("efi-secure-boot".into(), json!(secure));
    g.insert(
        "transactional".into(),
        json!(crate::modules::cmd::which_path("transactional-update").is_some()),
    );
    g.insert("ps".into(), json!("ps -efHww"));
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lspci_and_sysfs_gpus() {
        let out = "Slot:\t00:02.0\nClass:\tVGA compatible controller\nVendor:\tIntel Corporation\nDevice:\tHD Graphics 620\n\n\
                   Slot:\t01:00.0\nClass:\t3D controller\nVendor:\tNVIDIA Corporation\nDevice:\tGP108M [GeForce MX150]\n\n\
                   Slot:\t00:1f.3\nClass:\tAudio device\nVendor:\tIntel Corporation\nDevice:\tSunrise Point-LP HD Audio\n";
        assert_eq!(
            gpus_from_lspci(out),
            [
                json!({"vendor": "intel", "model": "HD Graphics 620"}),
                json!({"vendor": "nvidia", "model": "GP108M [GeForce MX150]"})
            ]
        );
        let devices = [
            (
                "0x030000\n".to_owned(),
                "0x1234\n".to_owned(),
                "0x1111\n".to_owned(),
            ),
            (
                "0x020000".to_owned(),
                "0x1af4".to_owned(),
                "0x1041".to_owned(),
            ),
            (
                "0x030200".to_owned(),
                "0x10de".to_owned(),
                "0x1d10".to_owned(),
            ),
        ];
        assert_eq!(
            gpus_from_sysfs(&devices),
            [
                json!({"vendor": "unknown", "model": "1234:1111"}),
                json!({"vendor": "nvidia", "model": "10de:1d10"})
            ]
        );
    }

    #[test]
    fn kernel_params_like_salt() {
        // The start of this machine's /proc/cmdline, and what salt 3007.8 made of it.
        let cmdline = "mitigations=auto,no_guest_host,no_guest_guest console=ttyS0 quiet a=b=c x=\"y z\" -- --addr 0.0.0.0:2024\n";
        assert_eq!(
            kernelparams(cmdline),
            json!([
                ["mitigations", "auto,no_guest_host,no_guest_guest"],
                ["console", "ttyS0"],
                ["quiet", null],
                ["a", null],
                ["x", "y z"],
                ["--", null],
                ["--addr", null],
                ["0.0.0.0:2024", null]
            ])
        );
    }

    #[test]
    fn locales_like_python() {
        let cases = [
            ("C.UTF-8", json!("en_US"), json!("UTF-8")),
            ("en_US.UTF-8", json!("en_US"), json!("UTF-8")),
            ("de_DE.utf8@euro", json!("de_DE"), json!("UTF-8")),
            ("C", json!(null), json!(null)),
            ("", json!(null), json!(null)),
            ("fr_FR", json!("fr_FR"), json!(null)),
        ];
        for (name, lang, enc) in cases {
            assert_eq!(parse_locale(name), (lang, enc), "{name}");
        }
    }

    #[test]
    fn tzif_names() {
        let utc = std::fs::read("/usr/share/zoneinfo/Etc/UTC").ok();
        if let Some(data) = utc {
            assert_eq!(tzif_abbreviation(&data).as_deref(), Some("UTC"));
        }
        if let Ok(data) = std::fs::read("/usr/share/zoneinfo/Europe/Berlin") {
            assert_eq!(tzif_abbreviation(&data).as_deref(), Some("CET"));
        }
        assert_eq!(tzif_abbreviation(b"nope"), None);
    }

    #[test]
    fn server_id_like_salt() {
        // abs(int(sha256(b"oracle").hexdigest(), 16) % 2**31) with salt 3007.8's formula.
        assert_eq!(server_id("oracle"), 1_382_249_759);
    }
}
