//! The pure decisions of `mount.mounted`: the arguments' checks, which device a bind mount
//! or a spelled device stands for, whether the mounted device differs, what to do with an
//! unmounted target, and the comments on the fstab's answer; `mount.rs` does the calls.

use std::path::Path;

use serde_json::{Map, Value};

use saltq_semantics::python::{self, truthy};

use super::{field, re_match, strings};

/// The comment when `name`, `device` or `fstype` is missing.
pub(super) fn missing_arg(name: &str, device: &Value, fstype: &Value) -> Option<&'static str> {
    if name.is_empty() {
        Some("Must provide name to mount.mounted")
    } else if !truthy(device) {
        Some("Must provide device to mount.mounted")
    } else if !truthy(fstype) {
        Some("Must provide fstype to mount.mounted")
    } else {
        None
    }
}

/// The mount point as Salt keeps it: trailing slashes gone, except for `/`.
pub(super) fn mount_point(name: &str) -> String {
    if name == "/" {
        name.to_owned()
    } else {
        name.trim_end_matches('/').to_owned()
    }
}

/// For a `bind` mount onto the active mount point `comp`: the device it really shows and
/// the active mount whose options it takes (and whose `opts` gain `bind`). Salt walks up
/// from `device` to the mount that holds it when the point's device is a path; `None` when
/// this is not such a bind mount.
pub(super) fn bind_source(
    device: &str,
    opts: &[String],
    comp: &str,
    active: &Map<String, Value>,
) -> Option<(String, Option<String>)> {
    if !opts.iter().any(|o| o == "bind") || !active.contains_key(comp) {
        return None;
    }
    let mut dev = device.replace(' ', "\\040");
    if !python::str(field(active, comp, "device")).starts_with('/') {
        let holder = active.contains_key(&dev).then_some(dev);
        return Some((python::str(field(active, comp, "device")), holder));
    }
    loop {
        if active.contains_key(&dev) {
            let found = python::str(field(active, &dev, "device"));
            return Some((found, Some(dev)));
        }
        if dev == "/" || dev.is_empty() {
            // Salt loops forever here; nothing above is mounted.
            return Some((device.to_owned(), None));
        }
        let plain = dev.replace("\\040", " ");
        dev = Path::new(&plain)
            .parent()
            .map_or_else(|| "/".to_owned(), |d| d.display().to_string());
    }
}

/// `UUID=...` as the lower-case uuid `mount` shows.
pub(super) fn uuid_device(device: &str) -> Option<String> {
    device.to_uppercase().starts_with("UUID=").then(|| {
        device
            .split('=')
            .nth(1)
            .unwrap_or_default()
            .trim_matches('"')
            .to_lowercase()
    })
}

/// The label of a `LABEL=...` device.
pub(super) fn label_of(device: &str) -> Option<&str> {
    device
        .to_uppercase()
        .starts_with("LABEL=")
        .then(|| device.split('=').nth(1).unwrap_or_default())
}

/// `/dev/<vg>/<lv>`'s device-mapper path, which `mount` shows when it exists.
pub(super) fn mapper_path(device: &str) -> Option<String> {
    let re = regex::Regex::new(r"^/dev/([^/]+)/([^/]+)$").ok()?;
    let caps = re.captures(device)?;
    Some(format!(
        "/dev/mapper/{}-{}",
        caps[1].replace('-', "--"),
        caps[2].replace('-', "--")
    ))
}

/// The device of `<type>#<device>` (FUSE's spelling).
pub(super) fn fuse_device(device: &str) -> Option<String> {
    let re = regex::Regex::new(r"^\w+#(.+)").ok()?;
    re.captures(device).map(|caps| caps[1].to_owned())
}

/// The other names of the active mount at `comp` (`alt_device`, its uuid and label),
/// appended to `known` when new.
pub(super) fn add_aliases(known: &mut Vec<String>, active: &Map<String, Value>, comp: &str) {
    for key in ["alt_device", "device_uuid", "device_label"] {
        let v = field(active, comp, key);
        if truthy(v) && !known.contains(&python::str(v)) {
            known.push(python::str(v));
        }
    }
}

/// Cached options the state no longer asks for (`None` when nothing was cached).
pub(super) fn dropped_opts(cache: &Value, opts: &[String]) -> Option<Vec<String>> {
    let cached = cache.get("opts")?;
    Some(
        strings(cached)
            .into_iter()
            .filter(|o| !opts.contains(o))
            .collect(),
    )
}

/// What to do when the mounted device may not be the wanted one.
#[derive(Debug, PartialEq)]
pub(super) enum Devices {
    /// The wanted device is mounted.
    Same,
    /// It differs, but a `device_name_regex` matched this mounted name.
    Ignored(String),
    /// It differs: unmount (so the mount below mounts the wanted device).
    Differ,
}

/// Compares the wanted device with the mounted one's names (`known`); the last regex of
/// `device_name_regex` matching a name wins, as in Salt.
pub(super) fn compare_devices(known: &[String], real_device: &str, regexes: &[String]) -> Devices {
    if known.iter().any(|d| d == real_device) {
        return Devices::Same;
    }
    let mut ignored = None;
    for regex in regexes {
        if let Some(d) = known.iter().find(|d| re_match(regex, d)) {
            ignored = Some(d.clone());
        }
    }
    ignored.map_or(Devices::Differ, Devices::Ignored)
}

/// The `umount` change naming why the mount point is unmounted.
pub(super) fn unmount_reason(device: &str, real_device: &str, known: &[String]) -> String {
    let mut why = format!("Forced unmount because devices don't match. Wanted: {device}");
    if real_device != device {
        why.push_str(&format!(" ({real_device})"));
    }
    why.push_str(&format!(", current: {}", known.join(", ")));
    why
}

/// What to do with a mount point that is not mounted.
#[derive(Debug, PartialEq)]
pub(super) enum Inactive {
    /// The state ends with this result and comment.
    Stop(Option<bool>, String),
    /// Mount it.
    Mount,
    /// Create the directory, then comment.
    Mkdir(String),
    /// Only comment; `test` also makes the result `None`.
    Note { test: bool, comment: String },
}

/// Salt's branch for an unmounted target: `exists` says the mount point is there.
pub(super) fn plan_inactive(
    name: &str,
    exists: bool,
    mount: bool,
    mkmnt: bool,
    test: bool,
) -> Inactive {
    if mount {
        if test {
            let comment = if exists {
                format!("{name} would be mounted")
            } else if mkmnt {
                format!("{name} would be created and mounted")
            } else {
                format!("{name} does not exist and would not be created")
            };
            return Inactive::Stop(None, comment);
        }
        if !exists && !mkmnt {
            return Inactive::Stop(Some(false), "Mount directory is not present".into());
        }
        return Inactive::Mount;
    }
    if exists {
        let comment = if test {
            format!("{name} would not be mounted")
        } else {
            format!("{name} not mounted")
        };
        return Inactive::Note {
            test: false,
            comment,
        };
    }
    match (test, mkmnt) {
        (true, true) => Inactive::Note {
            test: true,
            comment: format!("{name} would be created, but not mounted"),
        },
        (true, false) => Inactive::Note {
            test: true,
            comment: format!("{name} does not exist and would neither be created nor mounted"),
        },
        (false, true) => Inactive::Mkdir(format!("{name} was created, not mounted")),
        (false, false) => Inactive::Note {
            test: false,
            comment: format!("{name} not present and not mounted"),
        },
    }
}

/// The test-mode answer to `mount.set_fstab`'s `out` (anything but `present`): the result
/// and the text appended to the comment.
pub(super) fn fstab_test(out: &str, name: &str, mount: bool) -> (Option<bool>, String) {
    let text = match out {
        "new" if mount => format!(
            "{name} is mounted, but needs to be written to the fstab in order to be made persistent."
        ),
        "new" => {
            format!("{name} needs to be written to the fstab in order to be made persistent.")
        }
        "change" if mount => format!("{name} is mounted, but its fstab entry must be updated."),
        "change" => format!("The {name} fstab entry must be updated."),
        other => {
            return (
                Some(false),
                format!(
                    "Unable to detect fstab status for mount point {name} due to unexpected \
                     output '{other}' from call to mount.set_fstab. This is most likely a bug."
                ),
            );
        }
    };
    (None, text)
}

/// What `mount.set_fstab` answered, as Salt reports it: the `persist` change, the comment's
/// tail, and whether the state fails.
pub(super) fn fstab_done(out: &str) -> (Option<&'static str>, &'static str, bool) {
    match out {
        "present" => (None, ". Entry already exists in the fstab.", false),
        "new" => (Some("new"), ". Added new entry to the fstab.", false),
        "change" => (Some("update"), ". Updated the entry in the fstab.", false),
        "bad config" => (None, ". However, the fstab was not found.", true),
        _ => (None, "", false),
    }
}

#[cfg(test)]
mod tests;
