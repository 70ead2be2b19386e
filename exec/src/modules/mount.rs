//! Salt's `mount` module on Linux (`salt/modules/mount.py`): the active mounts from
//! `/proc/self/mounts` or `/proc/self/mountinfo`, fstab entries read and edited as Salt's
//! `_fstab_entry` does (pure functions over the file's text), `mount`/`umount` run as Salt
//! builds their command lines, and the minion's mount cache (`<cachedir>/mounts`, YAML).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, is_true, truthy};

use crate::error::ExecError;
use crate::modules::run_cmd;
use crate::pyish::shlex_split;
use crate::spec::{Call, Function, Lit, Param};

/// The `mount` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("mount.active", handler!(active))
        .params(&[Param::opt("extended", Lit::Bool(false))])
        .doc(ACTIVE_DOC),
    Function::new("mount.fstab", handler!(fstab))
        .params(&[Param::opt("config", Lit::Str("/etc/fstab"))])
        .doc(FSTAB_DOC),
    Function::new("mount.rm_fstab", handler!(rm_fstab))
        .params(&[
            Param::req("name"),
            Param::req("device"),
            Param::opt("config", Lit::Str("/etc/fstab")),
        ])
        .doc(RM_FSTAB_DOC),
    Function::new("mount.set_fstab", handler!(set_fstab))
        .params(&[
            Param::req("name"),
            Param::req("device"),
            Param::req("fstype"),
            Param::opt("opts", Lit::Str("defaults")),
            Param::opt("dump", Lit::Int(0)),
            Param::opt("pass_num", Lit::Int(0)),
            Param::opt("config", Lit::Str("/etc/fstab")),
            Param::opt("test", Lit::Bool(false)),
            Param::opt("match_on", Lit::Str("auto")),
            Param::opt("not_change", Lit::Bool(false)),
        ])
        .kwargs()
        .doc(SET_FSTAB_DOC),
    Function::new("mount.mount", handler!(mount))
        .params(&[
            Param::req("name"),
            Param::opt("device", Lit::Bool(false)),
            Param::opt("mkmnt", Lit::Bool(false)),
            Param::opt("fstype", Lit::Str("")),
            Param::opt("opts", Lit::Str("defaults")),
            Param::opt("user", Lit::None),
            Param::opt("util", Lit::Str("mount")),
        ])
        .doc(MOUNT_DOC),
    Function::new("mount.remount", handler!(remount))
        .params(&[
            Param::req("name"),
            Param::req("device"),
            Param::opt("mkmnt", Lit::Bool(false)),
            Param::opt("fstype", Lit::Str("")),
            Param::opt("opts", Lit::Str("defaults")),
            Param::opt("user", Lit::None),
        ])
        .doc(REMOUNT_DOC),
    Function::new("mount.umount", handler!(umount))
        .params(&[
            Param::req("name"),
            Param::opt("device", Lit::None),
            Param::opt("user", Lit::None),
            Param::opt("util", Lit::Str("mount")),
            Param::opt("lazy", Lit::Bool(false)),
        ])
        .doc(UMOUNT_DOC),
    Function::new("mount.is_mounted", handler!(is_mounted))
        .params(&[Param::req("name")])
        .doc(IS_MOUNTED_DOC),
    Function::new("mount.read_mount_cache", handler!(read_mount_cache))
        .params(&[Param::req("name")])
        .doc(READ_CACHE_DOC),
    Function::new("mount.write_mount_cache", handler!(write_mount_cache))
        .params(&[
            Param::req("real_name"),
            Param::req("device"),
            Param::req("mkmnt"),
            Param::req("fstype"),
            Param::req("mount_opts"),
        ])
        .doc(WRITE_CACHE_DOC),
    Function::new("mount.delete_mount_cache", handler!(delete_mount_cache))
        .params(&[Param::req("real_name")])
        .doc(DELETE_CACHE_DOC),
];

/// `mount -l` output as `{mount point: device}` (Salt's `_list_mounts`).
pub(crate) fn parse_mount_list(out: &str) -> Map<String, Value> {
    let mut ret = Map::new();
    for line in out.split('\n') {
        let comps: Vec<&str> = line.split_whitespace().collect();
        if comps.len() >= 3 {
            ret.insert(comps[2].to_owned(), json!(comps[0]));
        }
    }
    ret
}

/// Salt's `_resolve_user_group_names`: `uid=`/`gid=` given by name as numbers, `\040` as
/// `\ `.
fn resolve_ids(opts: Vec<String>) -> Vec<String> {
    opts.into_iter()
        .map(|opt| {
            let mut opt = opt;
            let mut parts = opt.split('=');
            let key = parts.next().unwrap_or_default().to_owned();
            if key == "uid" || key == "gid" {
                let given = parts.next().unwrap_or_default().to_owned();
                let id = if !given.is_empty() && given.bytes().all(|b| b.is_ascii_digit()) {
                    given
                } else if key == "uid" {
                    nix::unistd::User::from_name(&given)
                        .ok()
                        .flatten()
                        .map_or(given, |u| u.uid.to_string())
                } else {
                    nix::unistd::Group::from_name(&given)
                        .ok()
                        .flatten()
                        .map_or(given, |g| g.gid.to_string())
                };
                opt = format!("{key}={id}");
            }
            opt.replace("\\040", "\\ ")
        })
        .collect()
}

fn split_opts(s: &str) -> Vec<String> {
    s.split(',').map(str::to_owned).collect()
}

/// `/proc/self/mounts` as Salt's `_active_mounts` reports it.
pub(crate) fn parse_mounts(text: &str, list: &Map<String, Value>) -> Map<String, Value> {
    let mut ret = Map::new();
    for line in text.lines() {
        let comps: Vec<&str> = line.split_whitespace().collect();
        if comps.len() < 4 {
            continue;
        }
        ret.insert(
            comps[1].to_owned(),
            json!({
                "device": comps[0],
                "alt_device": list.get(comps[1]).cloned().unwrap_or(Value::Null),
                "fstype": comps[2],
                "opts": resolve_ids(split_opts(comps[3])),
            }),
        );
    }
    ret
}

/// `/proc/self/mountinfo` as Salt's `_active_mountinfo` reports it; `blkid` is
/// `disk.blkid`'s answer (`{device: {UUID, LABEL, ...}}`).
pub(crate) fn parse_mountinfo(
    text: &str,
    list: &Map<String, Value>,
    blkid: &Map<String, Value>,
) -> Map<String, Value> {
    let mut ret = Map::new();
    for line in text.lines() {
        let comps: Vec<&str> = line.split_whitespace().collect();
        let Some(sep) = comps.iter().position(|c| *c == "-") else {
            continue;
        };
        if comps.len() < sep + 4 || sep < 6 {
            continue;
        }
        let (major, minor) = comps[2].split_once(':').unwrap_or((comps[2], ""));
        let device_name = comps[sep + 2];
        let info = blkid.get(device_name);
        let uuid = info
            .and_then(|i| i.get("UUID"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_lowercase);
        let label = info.and_then(|i| i.get("LABEL")).cloned();
        ret.insert(
            comps[4].to_owned(),
            json!({
                "mountid": comps[0],
                "parentid": comps[1],
                "major": major,
                "minor": minor,
                "root": comps[3],
                "opts": resolve_ids(split_opts(comps[5])),
                "fstype": comps[sep + 1],
                "device": device_name.replace("\\040", "\\ "),
                "alt_device": list.get(comps[4]).cloned().unwrap_or(Value::Null),
                "superopts": resolve_ids(split_opts(comps[sep + 3])),
                "device_uuid": uuid,
                "device_label": label.unwrap_or(Value::Null),
            }),
        );
    }
    ret
}

/// `blkid`'s output as Salt's `disk.blkid` parses it: `{device: {KEY: value}}`.
pub(crate) fn parse_blkid(out: &str) -> Map<String, Value> {
    let mut ret = Map::new();
    for line in out.lines().filter(|l| !l.is_empty()) {
        let Some(first) = line.split_whitespace().next() else {
            continue;
        };
        let device = &first[..first.len().saturating_sub(1)];
        let rest = line.split_once(' ').map_or("", |(_, r)| r);
        // Python's `re.split('"*"', rest)`: split at every run of quotes.
        let mut parts = Vec::new();
        let mut cur = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '"' {
                while chars.peek() == Some(&'"') {
                    chars.next();
                }
                parts.push(std::mem::take(&mut cur));
            } else {
                cur.push(c);
            }
        }
        parts.push(cur);
        let mut info = Map::new();
        for pair in parts.chunks_exact(2) {
            let key = pair[0].trim_matches('=').trim_matches(' ');
            info.insert(key.to_owned(), json!(pair[1].trim_matches('"')));
        }
        ret.insert(device.to_owned(), Value::Object(info));
    }
    ret
}

const ACTIVE_DOC: &str = "List the active mounts.

With ``extended``, the details of ``/proc/self/mountinfo`` (ids, root, superblock options,
the device's UUID and label from ``blkid``).

CLI Example:

.. code-block:: bash

    salt '*' mount.active
";

async fn active(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Object(
        active_mounts(&call, truthy(call.arg("extended"))).await?,
    ))
}

/// Salt's `active` on Linux.
pub(crate) async fn active_mounts(
    call: &Call,
    extended: bool,
) -> Result<Map<String, Value>, ExecError> {
    let list = parse_mount_list(&run_cmd(call, &["mount", "-l"]).await?.stdout);
    if extended && let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") {
        let blkid = match run_cmd(call, &["blkid"]).await {
            Ok(out) if out.code == 0 => parse_blkid(&out.stdout),
            _ => Map::new(),
        };
        return Ok(parse_mountinfo(&text, &list, &blkid));
    }
    let text = std::fs::read_to_string("/proc/self/mounts")
        .map_err(|_| ExecError::execution("File not readable /proc/self/mounts"))?;
    Ok(parse_mounts(&text, &list))
}

/// The six fields of an fstab line, Salt's `_fstab_entry.dict_from_line`: `None` for a
/// comment or a line of fewer than 4 or more than 6 fields; missing fields are `"0"`.
pub(crate) fn fstab_fields(line: &str) -> Option<[String; 6]> {
    if line.starts_with('#') {
        return None;
    }
    let comps: Vec<&str> = line.split_whitespace().collect();
    if !(4..=6).contains(&comps.len()) {
        return None;
    }
    let get = |i: usize| {
        comps
            .get(i)
            .map_or_else(|| "0".to_owned(), |s| (*s).to_owned())
    };
    Some([get(0), get(1), get(2), get(3), get(4), get(5)])
}

/// The keys of an fstab entry, in field order.
pub(crate) const FSTAB_KEYS: [&str; 6] = ["device", "name", "fstype", "opts", "dump", "pass_num"];

/// Salt's `_fstab_entry` used as criteria: the given keys' values as strings.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry(pub Vec<(&'static str, String)>);

impl Entry {
    /// Whether an fstab line matches (`None`: not an entry line); `opts` compare as sorted
    /// sets of comma-separated words.
    pub(crate) fn matches(&self, line: &str) -> Option<bool> {
        let fields = fstab_fields(line)?;
        Some(self.0.iter().all(|(key, value)| {
            let i = FSTAB_KEYS.iter().position(|k| k == key).unwrap_or(0);
            if *key == "opts" {
                let mut have: Vec<&str> = fields[i].split(',').collect();
                let mut want: Vec<&str> = value.split(',').collect();
                have.sort_unstable();
                want.sort_unstable();
                have == want
            } else {
                fields[i] == *value
            }
        }))
    }

    /// Only these keys (Salt's `pick`); the first unknown key is the error.
    pub(crate) fn pick(&self, keys: &[String]) -> Result<Entry, String> {
        keys.iter()
            .map(|k| {
                self.0
                    .iter()
                    .find(|(key, _)| key == k)
                    .cloned()
                    .ok_or_else(|| k.clone())
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Entry)
    }

    /// The line Salt writes: `{device}\t\t{name}\t{fstype}\t{opts}\t{dump} {pass_num}\n`.
    pub(crate) fn line(&self) -> String {
        let get = |k: &str| {
            self.0
                .iter()
                .find(|(key, _)| *key == k)
                .map_or("", |(_, v)| v.as_str())
        };
        format!(
            "{}\t\t{}\t{}\t{}\t{} {}\n",
            get("device"),
            get("name"),
            get("fstype"),
            get("opts"),
            get("dump"),
            get("pass_num")
        )
    }
}

/// What `set_fstab` found: `present`, `change` or `new`, and the file's new text.
pub(crate) fn set_fstab_edit(
    text: &str,
    entry: &Entry,
    criteria: &Entry,
    not_change: bool,
) -> (&'static str, String) {
    let mut ret = None;
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        match criteria.matches(line) {
            Some(true) => {
                ret = Some("present");
                if entry.matches(line) == Some(true) || not_change {
                    out.push_str(line);
                } else {
                    ret = Some("change");
                    out.push_str(&entry.line());
                }
            }
            _ => out.push_str(line),
        }
    }
    match ret {
        Some(r) => (r, out),
        None => {
            out.push_str(&entry.line());
            ("new", out)
        }
    }
}

/// The file's text without the lines matching `criteria`, if any matched.
pub(crate) fn rm_fstab_edit(text: &str, criteria: &Entry) -> Option<String> {
    let mut modified = false;
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        if criteria.matches(line) == Some(true) {
            modified = true;
        } else {
            out.push_str(line);
        }
    }
    modified.then_some(out)
}

/// The fstab's entries as Salt's `fstab` lists them.
pub(crate) fn parse_fstab(text: &str) -> Map<String, Value> {
    let mut ret = Map::new();
    for line in text.split_inclusive('\n') {
        let Some([device, name, fstype, opts, dump, pass]) = fstab_fields(line) else {
            continue;
        };
        let mut name = name;
        while ret.contains_key(&name) {
            name.push('_');
        }
        ret.insert(
            name,
            json!({
                "device": device,
                "fstype": fstype,
                "opts": opts.split(',').collect::<Vec<_>>(),
                "dump": dump,
                "pass": pass,
            }),
        );
    }
    ret
}

const FSTAB_DOC: &str = "List the contents of the fstab

CLI Example:

.. code-block:: bash

    salt '*' mount.fstab
";

async fn fstab(call: Call) -> Result<Value, ExecError> {
    let config = python::str(call.arg("config"));
    if !Path::new(&config).is_file() {
        return Ok(json!({}));
    }
    let text = std::fs::read_to_string(&config)
        .map_err(|e| ExecError::execution(format!("Couldn't read from {config}: {e}")))?;
    Ok(Value::Object(parse_fstab(&text)))
}

/// A value as Salt's `_fstab_entry` stores it: `str(value)`, `None` left out.
fn field(key: &'static str, v: &Value) -> Option<(&'static str, String)> {
    (!v.is_null()).then(|| (key, python::str(v)))
}

const RM_FSTAB_DOC: &str = "Remove the mount point from the fstab

CLI Example:

.. code-block:: bash

    salt '*' mount.rm_fstab /mnt/foo /dev/sdg
";

async fn rm_fstab(call: Call) -> Result<Value, ExecError> {
    let config = python::str(call.arg("config"));
    let criteria = Entry(
        [
            field("name", call.arg("name")),
            field("device", call.arg("device")),
        ]
        .into_iter()
        .flatten()
        .collect(),
    );
    let text = std::fs::read_to_string(&config)
        .map_err(|e| ExecError::execution(format!("Couldn't read from {config}: {e}")))?;
    if let Some(new) = rm_fstab_edit(&text, &criteria) {
        std::fs::write(&config, new)
            .map_err(|e| ExecError::execution(format!("Couldn't write to {config}: {e}")))?;
    }
    Ok(json!(true))
}

/// The file systems for which `match_on: auto` matches on the mount point, not the device.
const SPECIAL_FSES: &[&str] = &[
    "none",
    "tmpfs",
    "sysfs",
    "proc",
    "fusectl",
    "debugfs",
    "securityfs",
    "devtmpfs",
    "cgroup",
    "nfs",
    "nfs4",
    "glusterfs",
    "btrfs",
];

/// A list of options as one comma-separated string, as Salt joins them.
fn opts_string(v: &Value) -> String {
    match v {
        Value::Array(items) => items.iter().map(python::str).collect::<Vec<_>>().join(","),
        other => python::str(other),
    }
}

const SET_FSTAB_DOC: &str = "Verify that this mount is represented in the fstab, change the mount
to match the data passed, or add the mount if it is not present.

If the entry is found via `match_on` and `not_change` is True, the
current line will be preserved.

Returns ``present``, ``change`` or ``new``.

CLI Example:

.. code-block:: bash

    salt '*' mount.set_fstab /mnt/foo /dev/sdz1 ext4
";

async fn set_fstab(call: Call) -> Result<Value, ExecError> {
    let fstype = python::str(call.arg("fstype"));
    let entry = Entry(
        [
            field("name", call.arg("name")),
            Some((
                "device",
                python::str(call.arg("device")).replace("\\ ", "\\040"),
            )),
            field("fstype", call.arg("fstype")),
            Some((
                "opts",
                opts_string(call.arg("opts")).replace("\\ ", "\\040"),
            )),
            field("dump", call.arg("dump")),
            field("pass_num", call.arg("pass_num")),
        ]
        .into_iter()
        .flatten()
        .collect(),
    );
    let match_on: Vec<String> = match call.arg("match_on") {
        Value::Array(items) => items.iter().map(python::str).collect(),
        Value::String(s) if s == "auto" => {
            if SPECIAL_FSES.contains(&fstype.as_str()) {
                vec!["name".into()]
            } else {
                vec!["device".into()]
            }
        }
        Value::String(s) => vec![s.clone()],
        _ => {
            return Err(ExecError::execution(
                "match_on must be a string or list of strings",
            ));
        }
    };
    let criteria = entry
        .pick(&match_on)
        .map_err(|key| ExecError::execution(format!("Unrecognized keys in match_on: \"{key}\"")))?;
    let config = python::str(call.arg("config"));
    if !Path::new(&config).is_file() {
        return Err(ExecError::execution(format!(
            "Bad config file \"{config}\""
        )));
    }
    let text = std::fs::read_to_string(&config)
        .map_err(|e| ExecError::execution(format!("Couldn't read from {config}: {e}")))?;
    let (ret, new) = set_fstab_edit(&text, &entry, &criteria, truthy(call.arg("not_change")));
    let test = is_true(call.arg("test"))
        || call
            .kwargs()
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("test") && is_true(v));
    if ret != "present" && !test {
        std::fs::write(&config, new)
            .map_err(|_| ExecError::execution(format!("File not writable {config}")))?;
    }
    Ok(json!(ret))
}

/// A command's return code, stdout and stderr (trailing whitespace stripped, as
/// `cmd.run_all` gives them), run as `user` when one is given.
async fn run_all(
    call: &Call,
    argv: &[String],
    user: Option<&Value>,
) -> Result<(i64, String, String), ExecError> {
    if let Some(user) = user.filter(|u| truthy(u)) {
        let mut kwargs = Map::new();
        kwargs.insert("runas".into(), user.clone());
        kwargs.insert("python_shell".into(), json!(false));
        let out = crate::call_direct(&call.ctx, "cmd.run_all", vec![json!(argv)], kwargs)
            .await
            .map_err(|e| ExecError::execution(format!("{e:?}")))?;
        return Ok((
            out["retcode"].as_i64().unwrap_or(1),
            python::str(&out["stdout"]),
            python::str(&out["stderr"]),
        ));
    }
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = run_cmd(call, &args).await?;
    Ok((
        i64::from(out.code),
        out.stdout.trim_end().to_owned(),
        out.stderr.trim_end().to_owned(),
    ))
}

/// `opts` as a list: a string split at commas, a list as it is.
fn opts_list(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().map(python::str).collect(),
        Value::Null => Vec::new(),
        other => split_opts(&python::str(other)),
    }
}

/// The arguments Salt puts before the device: `-o <opts>` and ` -t <fstype>`.
fn mount_args(opts: &[String], fstype: &str) -> String {
    let mut args = format!("-o {}", opts.join(","));
    if !fstype.is_empty() {
        args.push_str(&format!(" -t {fstype}"));
    }
    args
}

/// Runs a command line Salt builds as a string and splits with `shlex` (`python_shell=False`).
async fn run_line(call: &Call, line: &str, user: Option<&Value>) -> Result<Value, ExecError> {
    let argv = shlex_split(line)?;
    let (code, _, stderr) = run_all(call, &argv, user).await?;
    Ok(if code != 0 {
        json!(stderr)
    } else {
        json!(true)
    })
}

const MOUNT_DOC: &str = "Mount a device

Returns ``True``, or ``mount``'s error output.

CLI Example:

.. code-block:: bash

    salt '*' mount.mount /mnt/foo /dev/sdz1 True
";

async fn mount(call: Call) -> Result<Value, ExecError> {
    let util = python::str(call.arg("util"));
    if util != "mount" {
        return Ok(json!(false));
    }
    do_mount(
        &call,
        &python::str(call.arg("name")),
        call.arg("device"),
        truthy(call.arg("mkmnt")),
        &python::str(call.arg("fstype")),
        &opts_list(call.arg("opts")),
        call.opt_arg("user"),
    )
    .await
}

/// Salt's `mount` on Linux.
async fn do_mount(
    call: &Call,
    name: &str,
    device: &Value,
    mkmnt: bool,
    fstype: &str,
    opts: &[String],
    user: Option<&Value>,
) -> Result<Value, ExecError> {
    if mkmnt && !Path::new(name).exists() {
        let mut kwargs = Map::new();
        kwargs.insert("user".into(), user.cloned().unwrap_or(Value::Null));
        crate::call_direct(&call.ctx, "file.mkdir", vec![json!(name)], kwargs)
            .await
            .map_err(|e| ExecError::execution(format!("could not create {name}: {e:?}")))?;
    }
    let line = if truthy(device) {
        format!(
            "mount {} '{}' '{name}' ",
            mount_args(opts, fstype),
            python::str(device)
        )
    } else {
        format!("mount '{name}' ")
    };
    run_line(call, &line, user).await
}

const REMOUNT_DOC: &str = "Attempt to remount a device, if the device is not already mounted, mount
is called

CLI Example:

.. code-block:: bash

    salt '*' mount.remount /mnt/foo /dev/sdz1 True
";

async fn remount(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let fstype = python::str(call.arg("fstype"));
    let mut opts = opts_list(call.arg("opts"));
    let user = call.opt_arg("user");
    if active_mounts(&call, false).await?.contains_key(&name) {
        if !opts.iter().any(|o| o == "remount") {
            opts.push("remount".into());
        }
        let line = format!(
            "mount {} '{}' '{name}' ",
            mount_args(&opts, &fstype),
            python::str(call.arg("device"))
        );
        return run_line(&call, &line, user).await;
    }
    do_mount(
        &call,
        &name,
        call.arg("device"),
        truthy(call.arg("mkmnt")),
        &fstype,
        &opts,
        user,
    )
    .await
}

const UMOUNT_DOC: &str = "Attempt to unmount a device by specifying the directory it is mounted on

Returns ``True``, ``umount``'s error output, or a message when nothing is mounted there.

CLI Example:

.. code-block:: bash

    salt '*' mount.umount /mnt/foo
    salt '*' mount.umount /mnt/foo /dev/xvdc1
";

async fn umount(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    if python::str(call.arg("util")) == "guestfs" {
        return Ok(Value::Null);
    }
    if !active_mounts(&call, false).await?.contains_key(&name) {
        return Ok(json!(format!("{name} does not have anything mounted")));
    }
    let mut line = "umount".to_owned();
    if truthy(call.arg("lazy")) {
        line.push_str(" -l");
    }
    match call.opt_arg("device").filter(|d| truthy(d)) {
        Some(device) => line.push_str(&format!(" '{}'", python::str(device))),
        None => line.push_str(&format!(" '{name}'")),
    }
    run_line(&call, &line, call.opt_arg("user")).await
}

const IS_MOUNTED_DOC: &str = "Provide information if the path is mounted

CLI Example:

.. code-block:: bash

    salt '*' mount.is_mounted /mnt/share
";

async fn is_mounted(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    Ok(json!(
        active_mounts(&call, false).await?.contains_key(&name)
    ))
}

/// The mount cache file: `<cachedir>/mounts`.
fn cache_path(call: &Call) -> PathBuf {
    call.ctx
        .opt("cachedir")
        .map_or_else(
            || PathBuf::from("/var/cache/saltq/minion"),
            |v| PathBuf::from(python::str(v)),
        )
        .join("mounts")
}

/// The cache's contents; an unreadable or empty file is an empty cache, as in Salt.
fn read_cache(call: &Call) -> Map<String, Value> {
    std::fs::read_to_string(cache_path(call))
        .ok()
        .and_then(|t| serde_yaml_ng::from_str::<Value>(&t).ok())
        .and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default()
}

/// A copy with every dict's keys sorted, as PyYAML's `safe_dump` writes them.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn write_cache(call: &Call, cache: &Map<String, Value>) -> Result<(), ExecError> {
    let fail = || ExecError::execution("Unable to write mount cache.");
    let text =
        serde_yaml_ng::to_string(&sorted(&Value::Object(cache.clone()))).map_err(|_| fail())?;
    std::fs::write(cache_path(call), text).map_err(|_| fail())
}

const READ_CACHE_DOC: &str = "Provide information if the path is mounted: what the mount cache
holds for ``name`` (``device``, ``fstype``, ``mkmnt``, ``opts``), ``{}`` when nothing

CLI Example:

.. code-block:: bash

    salt '*' mount.read_mount_cache /mnt/share
";

async fn read_mount_cache(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    Ok(read_cache(&call)
        .get("mounts")
        .and_then(|m| m.get(&name))
        .cloned()
        .unwrap_or_else(|| json!({})))
}

const WRITE_CACHE_DOC: &str = "Record a mount in the minion's mount cache

:param real_name:     The real name of the mount point where the device is mounted.
:param device:        The device that is being mounted.
:param mkmnt:         Whether or not the mount point should be created.
:param fstype:        The file system that is used.
:param mount_opts:    Additional options used when mounting the device.
:return:              Boolean if message was sent successfully.

CLI Example:

.. code-block:: bash

    salt '*' mount.write_mount_cache /mnt/share /dev/sda1 False ext4 defaults,nosuid
";

async fn write_mount_cache(call: Call) -> Result<Value, ExecError> {
    let mut cache = read_cache(&call);
    let mounts = cache.entry("mounts").or_insert_with(|| json!({}));
    if !mounts.is_object() {
        *mounts = json!({});
    }
    mounts[python::str(call.arg("real_name"))] = json!({
        "device": call.arg("device"),
        "fstype": call.arg("fstype"),
        "mkmnt": call.arg("mkmnt"),
        "opts": call.arg("mount_opts"),
    });
    write_cache(&call, &cache)?;
    Ok(json!(true))
}

const DELETE_CACHE_DOC: &str = "Remove a mount from the minion's mount cache

CLI Example:

.. code-block:: bash

    salt '*' mount.delete_mount_cache /mnt/share
";

async fn delete_mount_cache(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("real_name"));
    let mut cache = read_cache(&call);
    if let Some(Value::Object(mounts)) = cache.get_mut("mounts")
        && mounts.shift_remove(&name).is_some()
    {
        write_cache(&call, &cache)?;
    }
    Ok(json!(true))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fstab_lines_like_salt() {
        assert_eq!(fstab_fields("# c 1 2 3"), None);
        assert_eq!(
            fstab_fields("  # c 1 2 3").map(|f| f[0].clone()),
            Some("#".into())
        );
        assert_eq!(fstab_fields("a b c"), None);
        assert_eq!(
            fstab_fields("a b c d\n"),
            Some(["a", "b", "c", "d", "0", "0"].map(String::from))
        );
        let text = "# x\nproc /proc proc defaults 0 0\n\n/dev/a /mnt ext4 noatime,rw 0 2\n";
        assert_eq!(
            Value::Object(parse_fstab(text)),
            json!({
                "/proc": {"device": "proc", "fstype": "proc", "opts": ["defaults"], "dump": "0", "pass": "0"},
                "/mnt": {"device": "/dev/a", "fstype": "ext4", "opts": ["noatime", "rw"], "dump": "0", "pass": "2"},
            })
        );
    }

    #[test]
    fn set_and_rm_fstab_edit_like_salt() {
        let entry = Entry(vec![
            ("name", "/mnt".into()),
            ("device", "/dev/a".into()),
            ("fstype", "ext4".into()),
            ("opts", "rw,noatime".into()),
            ("dump", "0".into()),
            ("pass_num", "2".into()),
        ]);
        let by_device = entry.pick(&["device".into()]).expect("known key");
        let text = "# x\n/dev/a /mnt ext4 noatime,rw 0 2\n";
        assert_eq!(
            set_fstab_edit(text, &entry, &by_device, false),
            ("present", text.to_owned())
        );
        let other = "/dev/a /old ext4 rw 0 0\n";
        assert_eq!(
            set_fstab_edit(other, &entry, &by_device, false),
            ("change", "/dev/a\t\t/mnt\text4\trw,noatime\t0 2\n".into())
        );
        assert_eq!(
            set_fstab_edit(other, &entry, &by_device, true),
            ("present", other.to_owned())
        );
        assert_eq!(
            set_fstab_edit("# x", &entry, &by_device, false),
            ("new", "# x/dev/a\t\t/mnt\text4\trw,noatime\t0 2\n".into())
        );
        assert_eq!(entry.pick(&["nosuch".into()]), Err("nosuch".into()));
        let crit = Entry(vec![("name", "/mnt".into()), ("device", "/dev/a".into())]);
        assert_eq!(rm_fstab_edit(text, &crit), Some("# x\n".into()));
        assert_eq!(rm_fstab_edit("# x\n", &crit), None);
    }

    #[test]
    fn proc_files_like_salt() {
        let list =
            parse_mount_list("none on /tmp/x type tmpfs (rw)\ntmpfs on /a b type tmpfs (rw)\n");
        assert_eq!(
            Value::Object(list.clone()),
            json!({"/tmp/x": "none", "/a": "tmpfs"})
        );
        let mounts = parse_mounts("none /tmp/x tmpfs rw,relatime,size=1024k 0 0\n", &list);
        assert_eq!(
            mounts["/tmp/x"],
            json!({"device": "none", "alt_device": "none", "fstype": "tmpfs", "opts": ["rw", "relatime", "size=1024k"]})
        );
        let blkid = parse_blkid("/dev/vda: UUID=\"ABC-1\" BLOCK_SIZE=\"4096\" TYPE=\"ext4\"\n");
        assert_eq!(
            Value::Object(blkid.clone()),
            json!({"/dev/vda": {"UUID": "ABC-1", "BLOCK_SIZE": "4096", "TYPE": "ext4"}})
        );
        let info = parse_mountinfo(
            "42 27 0:39 / /tmp/x rw,relatime shared:1 - tmpfs none rw,size=1024k,uid=root\n\
             1 0 254:0 / / rw - ext4 /dev/vda rw\n",
            &list,
            &blkid,
        );
        assert_eq!(
            info["/tmp/x"],
            json!({"mountid": "42", "parentid": "27", "major": "0", "minor": "39", "root": "/",
                "opts": ["rw", "relatime"], "fstype": "tmpfs", "device": "none",
                "alt_device": "none", "superopts": ["rw", "size=1024k", "uid=0"],
                "device_uuid": null, "device_label": null})
        );
        assert_eq!(info["/"]["device_uuid"], json!("abc-1"));
    }
}
