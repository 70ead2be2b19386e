//! Salt's `mount` state module (`salt/states/mount.py`) on Linux: `mount.mounted` (mount,
//! remount when options changed, unmount when the device differs, persist in the fstab named
//! by `config`, the minion's mount cache), `mount.unmounted`, and `mount.fstab_present` /
//! `mount.fstab_absent` (the fstab entry alone), through the `mount.*` execution functions.
//!
//! Which options force a remount is decided by [`remount_triggers`], a pure function over the
//! active mount's data that keeps Salt's quirks (a `size=` in the active superblock options
//! stands in for every wanted option, so a tmpfs never remounts for its options alone).
//! Where Salt would put a failed remount's error text in `result`, the state fails and the
//! text goes to the comment.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param};
use saltq_semantics::python::{self, truthy};

use super::{Ret, StateCall, StateError, StateFunction, exec, state_handler};

mod plan;

const MOUNTED_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::req("device"),
    Param::req("fstype"),
    Param::opt("mkmnt", Lit::Bool(false)),
    Param::opt("opts", Lit::Str("defaults")),
    Param::opt("dump", Lit::Int(0)),
    Param::opt("pass_num", Lit::Int(0)),
    Param::opt("config", Lit::Str("/etc/fstab")),
    Param::opt("persist", Lit::Bool(true)),
    Param::opt("mount", Lit::Bool(true)),
    Param::opt("user", Lit::None),
    Param::opt("match_on", Lit::Str("auto")),
    Param::opt("device_name_regex", Lit::None),
    Param::opt("extra_mount_invisible_options", Lit::None),
    Param::opt("extra_mount_invisible_keys", Lit::None),
    Param::opt("extra_mount_ignore_fs_keys", Lit::None),
    Param::opt("extra_mount_translate_options", Lit::None),
    Param::opt("hidden_opts", Lit::None),
    Param::opt("bind_mount_copy_active_opts", Lit::Bool(true)),
];

const UNMOUNTED_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("device", Lit::None),
    Param::opt("config", Lit::Str("/etc/fstab")),
    Param::opt("persist", Lit::Bool(false)),
    Param::opt("user", Lit::None),
];

const FSTAB_PRESENT_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::req("fs_file"),
    Param::req("fs_vfstype"),
    Param::opt("fs_mntops", Lit::Str("defaults")),
    Param::opt("fs_freq", Lit::Int(0)),
    Param::opt("fs_passno", Lit::Int(0)),
    Param::opt("mount_by", Lit::None),
    Param::opt("config", Lit::Str("/etc/fstab")),
    Param::opt("mount", Lit::Bool(true)),
    Param::opt("match_on", Lit::Str("auto")),
    Param::opt("not_change", Lit::Bool(false)),
    Param::opt("fs_mount", Lit::Bool(true)),
];

const FSTAB_ABSENT_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::req("fs_file"),
    Param::opt("mount_by", Lit::None),
    Param::opt("config", Lit::Str("/etc/fstab")),
];

/// The `mount` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "mount.mounted",
        params: MOUNTED_PARAMS,
        kwargs: true,
        handler: state_handler!(mounted),
    },
    StateFunction {
        name: "mount.unmounted",
        params: UNMOUNTED_PARAMS,
        kwargs: true,
        handler: state_handler!(unmounted),
    },
    StateFunction {
        name: "mount.mod_watch",
        params: &[Param::req("name"), Param::opt("user", Lit::None)],
        kwargs: true,
        handler: state_handler!(mod_watch),
    },
    StateFunction {
        name: "mount.fstab_present",
        params: FSTAB_PRESENT_PARAMS,
        kwargs: false,
        handler: state_handler!(fstab_present),
    },
    StateFunction {
        name: "mount.fstab_absent",
        params: FSTAB_ABSENT_PARAMS,
        kwargs: false,
        handler: state_handler!(fstab_absent),
    },
];

/// Keyword arguments for an execution call.
fn kw<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Python's `os.path.realpath` (not strict): symlinks resolved as far as the path exists.
pub(crate) fn realpath(path: &str) -> String {
    let p = Path::new(path);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    let mut out = PathBuf::from("/");
    let mut parts = abs.components().peekable();
    while let Some(c) = parts.next() {
        match c {
            std::path::Component::RootDir | std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(s) => {
                out.push(s);
                if let Ok(real) = out.canonicalize() {
                    out = real;
                } else {
                    for rest in parts.by_ref() {
                        match rest {
                            std::path::Component::ParentDir => {
                                out.pop();
                            }
                            std::path::Component::Normal(s) => out.push(s),
                            _ => {}
                        }
                    }
                }
            }
            std::path::Component::Prefix(_) => {}
        }
    }
    out.display().to_string()
}

/// A list argument: a string split at commas, a list as strings, nothing as empty.
fn str_list(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(items)) => items.iter().map(python::str).collect(),
        Some(Value::String(s)) => s.split(',').map(str::to_owned).collect(),
        Some(Value::Null) | None => Vec::new(),
        Some(other) => vec![python::str(other)],
    }
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().map(python::str).collect(),
        _ => Vec::new(),
    }
}

/// `size=<n>k|m|g` at the start of an option, in KiB (Salt's `_size_convert`).
fn size_kib(opt: &str) -> Option<u64> {
    let rest = opt.strip_prefix("size=")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let unit = rest[digits.len()..].chars().next()?;
    let n: u64 = digits.parse().ok()?;
    match unit {
        'k' => Some(n),
        'm' => Some(n * 1024),
        'g' => Some(n * 1024 * 1024),
        _ => None,
    }
}

/// The extra knobs of `mount.mounted` for comparing options.
#[derive(Debug, Default)]
pub(crate) struct OptionRules {
    /// Options `mount` does not show once mounted.
    pub invisible: Vec<String>,
    /// `key=value` options compared by key alone.
    pub invisible_keys: Vec<String>,
    /// Per file system, option keys that never force a remount.
    pub ignore_fs_keys: Map<String, Value>,
    /// Options that show under another name once mounted.
    pub translate: Map<String, Value>,
}

impl OptionRules {
    /// Salt's lists, extended with the state's `extra_*` and `hidden_opts` arguments.
    fn new(call: &StateCall) -> Self {
        let mut invisible: Vec<String> = [
            "_netdev",
            "actimeo",
            "bg",
            "comment",
            "defaults",
            "delay_connect",
            "direct-io-mode",
            "intr",
            "loop",
            "nointr",
            "nobootwait",
            "nofail",
            "password",
            "reconnect",
            "retry",
            "soft",
            "auto",
            "users",
            "bind",
            "nonempty",
            "transform_symlinks",
            "port",
            "backup-volfile-servers",
        ]
        .map(String::from)
        .to_vec();
        invisible.extend(str_list(call.arg("extra_mount_invisible_options")));
        invisible.extend(str_list(call.arg("hidden_opts")));
        let mut invisible_keys: Vec<String> = [
            "actimeo",
            "comment",
            "credentials",
            "direct-io-mode",
            "password",
            "port",
            "retry",
            "secretfile",
        ]
        .map(String::from)
        .to_vec();
        invisible_keys.extend(str_list(call.arg("extra_mount_invisible_keys")));
        let mut ignore_fs_keys = Map::new();
        ignore_fs_keys.insert("ramfs".into(), json!(["size"]));
        if let Some(Value::Object(m)) = call.arg("extra_mount_ignore_fs_keys") {
            ignore_fs_keys.extend(m.clone());
        }
        let mut translate = Map::new();
        translate.insert("tcp".into(), json!("proto=tcp"));
        translate.insert("udp".into(), json!("proto=udp"));
        if let Some(Value::Object(m)) = call.arg("extra_mount_translate_options") {
            translate.extend(m.clone());
        }
        Self {
            invisible,
            invisible_keys,
            ignore_fs_keys,
            translate,
        }
    }
}

/// Which wanted options force a remount of an active mount (Salt's loop in `mounted`), and
/// the last option as the loop left it (Salt names it in a later comment). `superopts` is
/// the active mount's list, rewritten as Salt rewrites it (sizes in KiB, moved to the end);
/// `ids` resolves `uid=`/`gid=` names.
pub(crate) fn remount_triggers(
    opts: &[String],
    fstype: &str,
    active_opts: &[String],
    superopts: &mut Vec<String>,
    rules: &OptionRules,
    ids: &dyn Fn(&str, &str) -> Option<String>,
) -> (Vec<String>, Option<String>) {
    let ignore: Vec<String> = rules
        .ignore_fs_keys
        .get(fstype)
        .map(strings)
        .unwrap_or_default();
    let mut triggers = Vec::new();
    let mut last = None;
    for opt in opts {
        let mut opt = match rules.translate.get(opt.as_str()) {
            Some(t) => python::str(t),
            None => opt.clone(),
        };
        let key = opt.split('=').next().unwrap_or_default().to_owned();
        if rules.invisible_keys.contains(&key) {
            opt = key;
        }
        if let Some(kib) = size_kib(&opt) {
            opt = format!("size={kib}k");
        }
        if fstype == "cifs" && opt.split('=').next() == Some("user") {
            opt = format!("username={}", opt.split('=').nth(1).unwrap_or_default());
        }
        let key = opt.split('=').next().unwrap_or_default().to_owned();
        if ignore.contains(&key) {
            opt = key;
        }
        let parts: Vec<&str> = opt.split('=').collect();
        if (parts[0] == "uid" || parts[0] == "gid") && parts.len() > 1 {
            let given = parts[1];
            let id = if !given.is_empty() && given.bytes().all(|b| b.is_ascii_digit()) {
                given.to_owned()
            } else {
                ids(parts[0], given).unwrap_or_else(|| given.to_owned())
            };
            opt = format!("{}={id}", parts[0]);
        }
        // Python's `for x in list` over a list it removes from and appends to.
        let mut i = 0;
        while i < superopts.len() {
            if let Some(kib) = size_kib(&superopts[i]) {
                let seen = superopts[i].clone();
                opt = format!("size={kib}k");
                if let Some(at) = superopts.iter().position(|s| *s == seen) {
                    superopts.remove(at);
                }
                superopts.push(format!("size={kib}k"));
            }
            i += 1;
        }
        if !active_opts.contains(&opt)
            && !superopts.contains(&opt)
            && !rules.invisible.contains(&opt)
            && !ignore.contains(&opt)
            && !rules.invisible_keys.contains(&opt)
        {
            triggers.push(opt.clone());
        }
        last = Some(opt);
    }
    (triggers, last)
}

/// The `uid`/`gid` number of a user or group name.
fn id_of(kind: &str, name: &str) -> Option<String> {
    if kind == "uid" {
        nix::unistd::User::from_name(name)
            .ok()
            .flatten()
            .map(|u| u.uid.to_string())
    } else {
        nix::unistd::Group::from_name(name)
            .ok()
            .flatten()
            .map(|g| g.gid.to_string())
    }
}

/// `re.match(pattern, text)`: the pattern anchored at the start.
fn re_match(pattern: &str, text: &str) -> bool {
    regex::Regex::new(&format!("^(?:{pattern})")).is_ok_and(|re| re.is_match(text))
}

async fn active(call: &StateCall) -> Result<Map<String, Value>, StateError> {
    match exec(
        call,
        "mount.active",
        vec![],
        kw([("extended", json!(true))]),
    )
    .await?
    {
        Value::Object(m) => Ok(m),
        _ => Ok(Map::new()),
    }
}

fn field<'a>(active: &'a Map<String, Value>, point: &str, key: &str) -> &'a Value {
    active
        .get(point)
        .and_then(|m| m.get(key))
        .unwrap_or(&Value::Null)
}

/// A mount or remount's answer as a result: `true`, or the failure text.
fn outcome(v: &Value) -> Result<bool, String> {
    match v {
        Value::String(s) => Err(s.clone()),
        other => Ok(truthy(other)),
    }
}

/// `mount.mounted`'s arguments as the apply steps use them.
struct Mounted<'a> {
    call: &'a StateCall,
    /// The mount point, trailing slashes gone.
    name: String,
    device: String,
    fstype: String,
    mkmnt: Value,
    mount: bool,
    user: Value,
    /// The options, with an active bind mount's merged in.
    opts: Vec<String>,
    /// The mount point with symlinks resolved.
    real_name: String,
    /// `real_name` as `mount.active` spells it (spaces as `\040`).
    comp: String,
}

async fn mounted(call: StateCall) -> Result<Ret, StateError> {
    let p = |k: &str| call.param(MOUNTED_PARAMS, k);
    let mut ret = Ret::new(&call.name);
    if let Some(comment) = plan::missing_arg(&call.name, &p("device"), &p("fstype")) {
        ret.result = Some(false);
        ret.comment = comment.into();
        return Ok(ret);
    }
    let name = plan::mount_point(&call.name);
    let real_name = realpath(&name);
    let mut m = Mounted {
        call: &call,
        device: python::str(&p("device")),
        fstype: python::str(&p("fstype")),
        mkmnt: p("mkmnt"),
        mount: truthy(&p("mount")),
        user: p("user"),
        opts: str_list(Some(&p("opts"))),
        comp: real_name.replace(' ', "\\040"),
        real_name,
        name,
    };
    let mut active = active(&call).await?;
    let mut known: Vec<String> = Vec::new();
    let real_device = match m.real_device(&mut active, &mut known).await? {
        Ok(d) => d,
        Err(comment) => {
            ret.comment = comment;
            ret.result = Some(false);
            return Ok(ret);
        }
    };
    let mut update_mount_cache = false;
    if active.contains_key(&m.comp)
        && m.mount
        && m.check_active(
            &mut ret,
            &mut active,
            known,
            &real_device,
            &mut update_mount_cache,
        )
        .await?
    {
        return Ok(ret);
    }
    if !active.contains_key(&m.comp) && m.mount_inactive(&mut ret, &mut update_mount_cache).await? {
        return Ok(ret);
    }
    if !truthy(&p("persist")) {
        return Ok(ret);
    }
    m.persist(ret, update_mount_cache).await
}

impl Mounted<'_> {
    /// The device as `mount` will show it (Salt's `real_device`); `known` gets a label's
    /// `blkid` output as Salt collects it. `Err` is the comment of a failed label lookup.
    async fn real_device(
        &mut self,
        active: &mut Map<String, Value>,
        known: &mut Vec<String>,
    ) -> Result<Result<String, String>, StateError> {
        let device = self.device.clone();
        let mut real = if device.starts_with('/') {
            match plan::bind_source(&device, &self.opts, &self.comp, active) {
                Some((real, holder)) => {
                    if let Some(dev) = holder {
                        self.take_bind_opts(active, &dev);
                    }
                    real
                }
                None => realpath(&device),
            }
        } else if let Some(uuid) = plan::uuid_device(&device) {
            uuid
        } else if let Some(label) = plan::label_of(&device) {
            let res = exec(
                self.call,
                "cmd.run_all",
                vec![json!(format!("blkid -t LABEL={label}"))],
                Map::new(),
            )
            .await?;
            if res["retcode"].as_i64().unwrap_or(0) > 0 {
                return Ok(Err(format!("Unable to find device with label {label}.")));
            }
            // Salt walks the output string character by character here.
            known.extend(python::str(&res["stdout"]).chars().map(String::from));
            known.first().cloned().unwrap_or_default()
        } else {
            device.clone()
        };
        if let Some(mapper) = plan::mapper_path(&device)
            && Path::new(&mapper).exists()
        {
            real = mapper;
        }
        if let Some(dev) = plan::fuse_device(&device) {
            real = dev;
        }
        Ok(Ok(real))
    }

    /// A bind mount takes the options of the mount holding its source (unless
    /// `bind_mount_copy_active_opts` is false), and the point's options gain `bind`.
    fn take_bind_opts(&mut self, active: &mut Map<String, Value>, dev: &str) {
        if truthy(
            &self
                .call
                .param(MOUNTED_PARAMS, "bind_mount_copy_active_opts"),
        ) {
            let mut all = self.opts.clone();
            all.extend(strings(field(active, dev, "opts")));
            all.extend(strings(field(active, dev, "superopts")));
            all.sort();
            all.dedup();
            self.opts = all;
        }
        if let Some(Value::Array(o)) = active.get_mut(&self.comp).and_then(|m| m.get_mut("opts")) {
            o.push(json!("bind"));
        }
    }

    /// The target is mounted: remount for changed options, unmount a different device.
    /// `true` when the state ends here, with `ret` as its answer.
    async fn check_active(
        &self,
        ret: &mut Ret,
        active: &mut Map<String, Value>,
        mut known: Vec<String>,
        real_device: &str,
        update_mount_cache: &mut bool,
    ) -> Result<bool, StateError> {
        if let Some(Value::Object(m)) = active.get_mut(&self.comp) {
            m.entry("superopts").or_insert_with(|| json!([]));
        }
        known.push(python::str(field(active, &self.comp, "device")));
        known.push(realpath(&known[0]));
        plan::add_aliases(&mut known, active, &self.comp);
        if !self.opts.is_empty()
            && self
                .remount_if_changed(ret, active, update_mount_cache)
                .await?
        {
            return Ok(true);
        }
        let regexes = str_list(self.call.arg("device_name_regex").filter(|v| v.is_array()));
        match plan::compare_devices(&known, real_device, &regexes) {
            plan::Devices::Same => ret.comment = "Target was already mounted".into(),
            plan::Devices::Ignored(d) => {
                ret.result = Some(true);
                ret.comment = format!(
                    "An umount will not be forced because device matched device_name_regex: {d}"
                );
            }
            plan::Devices::Differ if self.call.test => {
                ret.result = None;
                ret.comment = format!(
                    "An umount would have been forced because devices do not match.  Watched: {}",
                    self.device
                );
            }
            plan::Devices::Differ => {
                let why = plan::unmount_reason(&self.device, real_device, &known);
                ret.changes.insert("umount".into(), json!(why));
                exec(
                    self.call,
                    "mount.umount",
                    vec![json!(self.real_name)],
                    kw([("user", self.user.clone())]),
                )
                .await?;
                *active = self::active(self.call).await?;
                if active.contains_key(&self.comp) {
                    ret.comment = "Unable to unmount".into();
                    ret.result = Some(false);
                    return Ok(true);
                }
                *update_mount_cache = true;
            }
        }
        Ok(false)
    }

    /// Remounts when a wanted option is not active, or a cached one is no longer wanted.
    /// `true` when the state ends here.
    async fn remount_if_changed(
        &self,
        ret: &mut Ret,
        active: &mut Map<String, Value>,
        update_mount_cache: &mut bool,
    ) -> Result<bool, StateError> {
        let rules = OptionRules::new(self.call);
        let active_opts = strings(field(active, &self.comp, "opts"));
        let mut superopts = strings(field(active, &self.comp, "superopts"));
        let (triggers, last) = remount_triggers(
            &self.opts,
            &self.fstype,
            &active_opts,
            &mut superopts,
            &rules,
            &id_of,
        );
        if let Some(Value::Object(m)) = active.get_mut(&self.comp) {
            m.insert("superopts".into(), json!(superopts));
        }
        if !triggers.is_empty() {
            let mut sorted = triggers.clone();
            sorted.sort();
            let changed = sorted.join(",");
            if self.call.test {
                ret.result = None;
                ret.comment =
                    format!("Remount would be forced because options ({changed}) changed");
                return Ok(true);
            }
            if self.remount(ret, &changed).await? {
                return Ok(true);
            }
            *update_mount_cache = true;
        }
        let cache = exec(
            self.call,
            "mount.read_mount_cache",
            vec![json!(self.real_name)],
            Map::new(),
        )
        .await?;
        match plan::dropped_opts(&cache, &self.opts) {
            None => *update_mount_cache = true,
            Some(missing) if missing.is_empty() => {}
            Some(missing) => {
                if self.call.test {
                    ret.result = None;
                    ret.comment = format!(
                        "Remount would be forced because options ({})changed",
                        missing.join(",")
                    );
                    return Ok(true);
                }
                if self.remount(ret, &last.unwrap_or_default()).await? {
                    return Ok(true);
                }
                *update_mount_cache = true;
            }
        }
        Ok(false)
    }

    /// [`force_remount`] with this state's arguments; `true` when the state ends there.
    async fn remount(&self, ret: &mut Ret, changed: &str) -> Result<bool, StateError> {
        let done = force_remount(
            self.call,
            ret,
            &self.real_name,
            &self.device,
            &self.fstype,
            &self.opts,
            changed,
        )
        .await?;
        if let Some(done) = done {
            *ret = done;
            return Ok(true);
        }
        Ok(false)
    }

    /// The target is not mounted: mount it, create it, or say why not. `true` when the
    /// state ends here.
    async fn mount_inactive(
        &self,
        ret: &mut Ret,
        update_mount_cache: &mut bool,
    ) -> Result<bool, StateError> {
        let exists = Path::new(&self.name).exists();
        let name = &self.name;
        match plan::plan_inactive(
            name,
            exists,
            self.mount,
            truthy(&self.mkmnt),
            self.call.test,
        ) {
            plan::Inactive::Stop(result, comment) => {
                ret.result = result;
                ret.comment = comment;
                return Ok(true);
            }
            plan::Inactive::Note { test, comment } => {
                if test {
                    ret.result = None;
                }
                ret.comment = comment;
            }
            plan::Inactive::Mkdir(comment) => {
                exec(
                    self.call,
                    "file.mkdir",
                    vec![json!(name)],
                    kw([("user", self.user.clone())]),
                )
                .await?;
                ret.comment = comment;
            }
            plan::Inactive::Mount => {
                let out = exec(
                    self.call,
                    "mount.mount",
                    vec![
                        json!(name),
                        json!(self.device),
                        self.mkmnt.clone(),
                        json!(self.fstype),
                        json!(self.opts),
                    ],
                    kw([("user", self.user.clone())]),
                )
                .await?;
                let active = self::active(self.call).await?;
                *update_mount_cache = true;
                if let Value::String(err) = out {
                    ret.comment = err;
                    ret.result = Some(false);
                    return Ok(true);
                } else if active.contains_key(&self.comp) {
                    ret.comment = "Target was successfully mounted".into();
                    ret.changes.insert("mount".into(), json!(true));
                }
            }
        }
        Ok(false)
    }

    /// Writes the fstab entry (`mount.set_fstab`) and the mount cache.
    async fn persist(&self, mut ret: Ret, update_mount_cache: bool) -> Result<Ret, StateError> {
        let p = |k: &str| self.call.param(MOUNTED_PARAMS, k);
        let test = self.call.test;
        let config = python::str(&p("config"));
        let mut set_kwargs = kw([("match_on", p("match_on"))]);
        if test {
            set_kwargs.insert("test".into(), json!(true));
        }
        let out = python::str(
            &exec(
                self.call,
                "mount.set_fstab",
                vec![
                    json!(self.name),
                    json!(self.device),
                    json!(self.fstype),
                    json!(self.opts),
                    p("dump"),
                    p("pass_num"),
                    json!(config),
                ],
                set_kwargs,
            )
            .await?,
        );
        if test && out != "present" {
            let (result, text) = plan::fstab_test(&out, &self.name, self.mount);
            ret.result = result;
            ret.comment = format!("{}. {text}", ret.comment);
            return Ok(ret);
        }
        if update_mount_cache {
            exec(
                self.call,
                "mount.write_mount_cache",
                vec![json!(self.real_name), json!(self.device)],
                kw([
                    ("mkmnt", self.mkmnt.clone()),
                    ("fstype", json!(self.fstype)),
                    ("mount_opts", json!(self.opts)),
                ]),
            )
            .await?;
        }
        let (change, tail, fails) = plan::fstab_done(&out);
        if let Some(change) = change {
            ret.changes.insert("persist".into(), json!(change));
        }
        ret.comment.push_str(tail);
        if fails {
            ret.result = Some(false);
        }
        Ok(ret)
    }
}

/// Salt's forced remount of a mounted file system whose options changed: umount and mount
/// again for nfs, cvfs and FUSE (lazily when a plain umount fails), `mount.remount`
/// otherwise. `Some(ret)` when the state ends there.
async fn force_remount(
    call: &StateCall,
    ret: &mut Ret,
    real_name: &str,
    device: &str,
    fstype: &str,
    opts: &[String],
    changed: &str,
) -> Result<Option<Ret>, StateError> {
    let mkmnt = call.param(MOUNTED_PARAMS, "mkmnt");
    let mount_kwargs = || {
        kw([
            ("mkmnt", mkmnt.clone()),
            ("fstype", json!(fstype)),
            ("opts", json!(opts)),
        ])
    };
    let result = if fstype == "nfs" || fstype == "cvfs" || fstype.starts_with("fuse") {
        ret.changes.insert(
            "umount".into(),
            json!(format!(
                "Forced unmount and mount because options ({changed}) changed"
            )),
        );
        let first = exec(call, "mount.umount", vec![json!(real_name)], Map::new()).await?;
        let unmounted = if first == json!(true) {
            true
        } else {
            ret.changes.insert(
                "umount".into(),
                json!(format!(
                    "Forced a lazy unmount and mount because the previous unmount failed and \
                     because the options ({changed}) changed"
                )),
            );
            let lazy = exec(
                call,
                "mount.umount",
                vec![json!(real_name)],
                kw([("lazy", json!(true))]),
            )
            .await?;
            if lazy != json!(true) {
                ret.result = Some(false);
                ret.comment = format!("Unable to unmount {real_name}: {}.", python::str(&lazy));
                return Ok(Some(ret.clone()));
            }
            true
        };
        debug_assert!(unmounted);
        exec(
            call,
            "mount.mount",
            vec![json!(real_name), json!(device)],
            mount_kwargs(),
        )
        .await?
    } else {
        ret.changes.insert(
            "umount".into(),
            json!(format!(
                "Forced remount because options ({changed}) changed"
            )),
        );
        exec(
            call,
            "mount.remount",
            vec![json!(real_name), json!(device)],
            mount_kwargs(),
        )
        .await?
    };
    match outcome(&result) {
        Ok(ok) => ret.result = Some(ok),
        Err(text) => {
            ret.result = Some(false);
            ret.comment = text;
        }
    }
    Ok(None)
}

async fn unmounted(call: StateCall) -> Result<Ret, StateError> {
    let p = |k: &str| call.param(UNMOUNTED_PARAMS, k);
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    if name.is_empty() {
        ret.result = Some(false);
        ret.comment = "Must provide name to mount.unmounted".into();
        return Ok(ret);
    }
    let device = p("device");
    let user = p("user");
    let active = active(&call).await?;
    let comp = name.replace(' ', "\\040");
    let mut update_mount_cache = false;
    if active.contains_key(&comp) {
        if call.test {
            ret.result = None;
            ret.comment = format!("Mount point {name} is mounted but should not be");
            return Ok(ret);
        }
        let mut args = vec![json!(name)];
        if truthy(&device) {
            args.push(device.clone());
        }
        let out = exec(&call, "mount.umount", args, kw([("user", user)])).await?;
        update_mount_cache = true;
        match out {
            Value::String(err) => {
                ret.comment = err;
                ret.result = Some(false);
            }
            Value::Bool(true) => {
                ret.comment = "Target was successfully unmounted".into();
                ret.changes.insert("umount".into(), json!(true));
            }
            _ => {
                ret.comment = "Execute set to False, Target was not unmounted".into();
                ret.result = Some(true);
            }
        }
    } else {
        ret.comment = "Target was already unmounted".into();
    }
    if update_mount_cache {
        exec(
            &call,
            "mount.delete_mount_cache",
            vec![json!(name)],
            Map::new(),
        )
        .await?;
    }
    if !truthy(&p("persist")) {
        return Ok(ret);
    }
    let config = python::str(&p("config"));
    let fstab = exec(&call, "mount.fstab", vec![json!(config)], Map::new()).await?;
    let Some(entry) = fstab.get(&name) else {
        ret.comment.push_str(". fstab entry not found");
        return Ok(ret);
    };
    if truthy(&device) && entry["device"] != device {
        ret.comment.push_str(&format!(
            ". fstab entry for device {} not found",
            python::str(&device)
        ));
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        ret.comment = format!(
            "Mount point {name} is unmounted but needs to be purged from {config} to be made persistent"
        );
        return Ok(ret);
    }
    let out = exec(
        &call,
        "mount.rm_fstab",
        vec![json!(name), device, json!(config)],
        Map::new(),
    )
    .await?;
    if out != json!(true) {
        ret.result = Some(false);
        ret.comment.push_str(". Failed to persist purge");
    } else {
        ret.comment.push_str(". Removed target from fstab");
        ret.changes.insert("persist".into(), json!("purged"));
    }
    Ok(ret)
}

/// A watched `mount.mounted` remounts (`mount.remount` with the state's device, fstype and
/// opts). As in Salt, any answer but `False` counts as remounted, `remount`'s error text too.
async fn mod_watch(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    let sfun = call.args.get("sfun").map(python::str).unwrap_or_default();
    if sfun != "mounted" {
        ret.comment = format!("Watch not supported in {sfun} at this time");
        return Ok(ret);
    }
    let arg = |k: &str| call.args.get(k).cloned().unwrap_or(Value::Null);
    let out = exec(
        &call,
        "mount.remount",
        vec![
            json!(name),
            arg("device"),
            json!(false),
            arg("fstype"),
            arg("opts"),
        ],
        kw([("user", call.param(&[Param::opt("user", Lit::None)], "user"))]),
    )
    .await?;
    if truthy(&out) {
        ret.comment = format!("{name} remounted");
    } else {
        ret.result = Some(false);
        ret.comment = format!("{name} failed to remount: {}", python::str(&out));
    }
    Ok(ret)
}

/// Salt's `_convert_to`: the device spelled as `mount_by` asks (`device`, `uuid`,
/// `label`...), looked up with `disk.blkid`; `None` when it cannot be.
async fn convert_to(
    call: &StateCall,
    maybe: &str,
    convert_to: &Value,
) -> Result<Option<String>, StateError> {
    let to = python::str(convert_to);
    if !truthy(convert_to)
        || (to == "device" && maybe.starts_with('/'))
        || maybe.starts_with(&format!("{}=", to.to_uppercase()))
    {
        return Ok(Some(maybe.to_owned()));
    }
    let blkid = if maybe.starts_with('/') {
        exec(call, "disk.blkid", vec![json!(maybe)], Map::new()).await?
    } else {
        exec(call, "disk.blkid", vec![], kw([("token", json!(maybe))])).await?
    };
    let Some(found) = blkid.as_object().filter(|m| m.len() == 1) else {
        return Ok(None);
    };
    let (dev, info) = found.iter().next().expect("one entry");
    if to == "device" {
        return Ok(Some(dev.clone()));
    }
    let key = to.to_uppercase();
    Ok(info.get(&key).map(|v| format!("{key}={}", python::str(v))))
}

/// The comment lines of the `fstab_*` states, joined as Salt's state decorator joins a list.
fn joined(lines: &[String]) -> String {
    lines.join("\n")
}

async fn fstab_present(call: StateCall) -> Result<Ret, StateError> {
    let p = |k: &str| call.param(FSTAB_PRESENT_PARAMS, k);
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    ret.result = Some(false);
    let mut comment = Vec::new();
    let config = python::str(&p("config"));
    let mut fs_file = python::str(&p("fs_file"));
    if fs_file != "/" {
        fs_file = fs_file.trim_end_matches('/').to_owned();
    }
    let Some(fs_spec) = convert_to(&call, &name, &p("mount_by")).await? else {
        comment.push(format!(
            "Device {name} cannot be converted to {}",
            python::str(&p("mount_by"))
        ));
        ret.comment = joined(&comment);
        return Ok(ret);
    };
    let mut kwargs = kw([
        ("name", json!(fs_file)),
        ("device", json!(fs_spec)),
        ("fstype", p("fs_vfstype")),
        ("opts", p("fs_mntops")),
        ("dump", p("fs_freq")),
        ("pass_num", p("fs_passno")),
        ("config", json!(config)),
        ("match_on", p("match_on")),
        ("not_change", p("not_change")),
    ]);
    if call.test {
        kwargs.insert("test".into(), json!(true));
    }
    let out = python::str(&exec(&call, "mount.set_fstab", vec![], kwargs).await?);
    if call.test {
        ret.result = None;
        match out.as_str() {
            "present" => comment.push(format!("{fs_file} entry is already in {config}.")),
            "new" => {
                comment.push(format!("{fs_file} entry will be written in {config}."));
                if truthy(&p("mount")) {
                    comment.push(format!("Will mount {name} on {fs_file}"));
                }
            }
            "change" => comment.push(format!("{fs_file} entry will be updated in {config}.")),
            other => {
                ret.result = Some(false);
                comment.push(format!(
                    "{fs_file} entry cannot be created in {config}: {other}."
                ));
            }
        }
        ret.comment = joined(&comment);
        return Ok(ret);
    }
    ret.result = Some(true);
    match out.as_str() {
        "present" => comment.push(format!("{fs_file} entry was already in {config}.")),
        "new" => {
            ret.changes.insert("persist".into(), json!(out));
            comment.push(format!("{fs_file} entry added in {config}."));
            if truthy(&p("mount")) {
                let mounted = exec(&call, "mount.mount", vec![json!(fs_file)], Map::new()).await?;
                if let Value::String(err) = mounted {
                    ret.result = Some(false);
                    let detail = err.split_once(':').map_or("", |(_, d)| d);
                    comment.push(format!("Error while mounting {detail}"));
                } else {
                    comment.push(format!("Mounted {name} on {fs_file}"));
                }
            }
        }
        "change" => {
            ret.changes.insert("persist".into(), json!(out));
            comment.push(format!("{fs_file} entry updated in {config}."));
        }
        other => {
            ret.result = Some(false);
            comment.push(format!(
                "{fs_file} entry cannot be changed in {config}: {other}."
            ));
        }
    }
    ret.comment = joined(&comment);
    Ok(ret)
}

async fn fstab_absent(call: StateCall) -> Result<Ret, StateError> {
    let p = |k: &str| call.param(FSTAB_ABSENT_PARAMS, k);
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    let config = python::str(&p("config"));
    let mut fs_file = python::str(&p("fs_file"));
    if fs_file != "/" {
        fs_file = fs_file.trim_end_matches('/').to_owned();
    }
    let fs_spec = convert_to(&call, &name, &p("mount_by")).await?;
    let fstab = exec(&call, "mount.fstab", vec![json!(config)], Map::new()).await?;
    let listed = fstab.get(&fs_file).is_some();
    if call.test {
        ret.result = None;
        ret.comment = if listed {
            format!("{fs_file} entry will be removed from {config}.")
        } else {
            format!("{fs_file} entry is already missing in {config}.")
        };
        return Ok(ret);
    }
    if !listed {
        ret.comment = format!("{fs_file} entry is already missing in {config}.");
        return Ok(ret);
    }
    let out = exec(
        &call,
        "mount.rm_fstab",
        vec![],
        kw([
            ("name", json!(fs_file)),
            ("device", json!(fs_spec)),
            ("config", json!(config)),
        ]),
    )
    .await?;
    if out != json!(true) {
        ret.result = Some(false);
        ret.comment = format!("{fs_file} entry failed when removing from {config}.");
    } else {
        ret.changes.insert("persist".into(), json!("removed"));
        ret.comment = format!("{fs_file} entry removed from {config}.");
    }
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    fn rules() -> OptionRules {
        OptionRules {
            invisible: s(&["defaults", "bind"]),
            invisible_keys: s(&["password"]),
            ignore_fs_keys: Map::from_iter([("ramfs".to_owned(), json!(["size"]))]),
            translate: Map::from_iter([("tcp".to_owned(), json!("proto=tcp"))]),
        }
    }

    #[test]
    fn remount_triggers_like_salt() {
        let no_ids = |_: &str, _: &str| None;
        // A new option not shown by the active mount forces a remount.
        let mut sup = s(&["rw"]);
        let (t, last) = remount_triggers(
            &s(&["noexec", "defaults", "password=x"]),
            "ext4",
            &s(&["rw", "relatime"]),
            &mut sup,
            &rules(),
            &no_ids,
        );
        assert_eq!(t, s(&["noexec"]));
        assert_eq!(last.as_deref(), Some("password"));
        // A size in the superblock options stands in for every option (Salt's loop).
        let mut sup = s(&["rw", "size=1024k", "mode=750"]);
        let (t, last) = remount_triggers(
            &s(&["size=2m", "noexec"]),
            "tmpfs",
            &s(&["rw"]),
            &mut sup,
            &rules(),
            &no_ids,
        );
        assert!(t.is_empty());
        assert_eq!(last.as_deref(), Some("size=1024k"));
        assert_eq!(sup, s(&["rw", "mode=750", "size=1024k"]));
        // Names in uid= are compared as numbers; translated and ignored keys.
        let ids = |k: &str, n: &str| (k == "uid" && n == "root").then(|| "0".to_owned());
        let mut sup = s(&["rw", "uid=0"]);
        let (t, _) = remount_triggers(
            &s(&["uid=root", "tcp", "size=5m"]),
            "ramfs",
            &s(&["proto=tcp"]),
            &mut sup,
            &rules(),
            &ids,
        );
        assert!(t.is_empty(), "{t:?}");
    }

    #[test]
    fn sizes_and_paths() {
        assert_eq!(size_kib("size=2m"), Some(2048));
        assert_eq!(size_kib("size=1g"), Some(1024 * 1024));
        assert_eq!(size_kib("size=50%"), None);
        assert_eq!(realpath("/nonexistent/a/../b"), "/nonexistent/b");
        assert_eq!(realpath("/tmp/./"), realpath("/tmp"));
        assert!(re_match("/dev/s", "/dev/sda"));
        assert!(!re_match("sda", "/dev/sda"));
    }
}
