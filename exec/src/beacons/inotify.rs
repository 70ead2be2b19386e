//! Salt's `inotify` beacon, on the kernel's inotify (through `nix`): an event per change
//! under the configured `files`, tagged with the watched path, `{path, change}` as pyinotify
//! names them (`IN_CREATE`, `IN_MODIFY|IN_ISDIR`, ...), `exclude` applied.

use std::collections::BTreeMap;
use std::path::Path;

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify as Kernel};
use serde_json::{Map, Value, json};

use super::{Beacon, PollFuture, as_list, list_to_dict, remove_hidden};
use crate::context::CallContext;

/// pyinotify's names of the mask bits, as Salt's config and events spell them.
const MASKS: &[(&str, u32)] = &[
    ("access", 0x1),
    ("modify", 0x2),
    ("attrib", 0x4),
    ("close_write", 0x8),
    ("close_nowrite", 0x10),
    ("open", 0x20),
    ("moved_from", 0x40),
    ("moved_to", 0x80),
    ("create", 0x100),
    ("delete", 0x200),
    ("delete_self", 0x400),
    ("move_self", 0x800),
    ("unmount", 0x2000),
    ("q_overflow", 0x4000),
    ("ignored", 0x8000),
    ("onlydir", 0x0100_0000),
    ("excl_unlink", 0x0400_0000),
    ("oneshot", 0x8000_0000),
];
const IN_ISDIR: u32 = 0x4000_0000;
/// Salt's default: `IN_CREATE | IN_DELETE | IN_MODIFY`.
const DEFAULT_MASK: u32 = 0x100 | 0x200 | 0x2;

/// One event as the kernel gave it: the watched path, the full path, the mask.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Raw {
    pub path: String,
    pub pathname: String,
    pub mask: u32,
}

/// pyinotify's `maskname`: the bit's name, `|IN_ISDIR` added for a directory.
pub(crate) fn maskname(mask: u32) -> String {
    let bits = mask & !IN_ISDIR;
    let name = MASKS
        .iter()
        .find(|(_, b)| *b == bits)
        .map(|(n, _)| format!("IN_{}", n.to_uppercase()))
        .unwrap_or_else(|| format!("{bits:#x}"));
    if mask & IN_ISDIR != 0 {
        format!("{name}|IN_ISDIR")
    } else {
        name
    }
}

fn dirname(p: &str) -> String {
    match p.rfind('/') {
        Some(0) => "/".into(),
        Some(i) => p[..i].into(),
        None => String::new(),
    }
}

/// Whether `exclude` (Salt's list: prefixes, globs, `{regex: {regex: true}}`) leaves out
/// `pathname`.
fn excluded(exclude: &Value, pathname: &str) -> bool {
    let Some(list) = exclude.as_array() else {
        return false;
    };
    list.iter().any(|e| match e {
        Value::Object(m) => m.iter().next().is_some_and(|(pat, opts)| {
            opts.get("regex")
                .is_some_and(saltq_semantics::python::truthy)
                && regex::Regex::new(pat).is_ok_and(|r| r.is_match(pathname))
        }),
        Value::String(s) if s.contains('*') => saltq_semantics::python::fnmatch(pathname, s),
        Value::String(s) => pathname.starts_with(s.as_str()),
        _ => false,
    })
}

/// The events for what the kernel reported, as Salt's beacon builds them.
pub(crate) fn decide(files: &Map<String, Value>, raw: &[Raw]) -> Vec<Value> {
    let mut out = Vec::new();
    for ev in raw {
        let mut path = ev.path.clone();
        while path != "/" && !path.is_empty() && !files.contains_key(&path) {
            path = dirname(&path);
        }
        let exclude = files.get(&path).and_then(|f| f.get("exclude"));
        if exclude.is_some_and(|x| excluded(x, &ev.pathname)) {
            continue;
        }
        out.push(json!({"tag": ev.path, "path": ev.pathname, "change": maskname(ev.mask)}));
    }
    out
}

/// The mask a path's config asks for.
fn mask_of(conf: &Value) -> u32 {
    match conf.get("mask") {
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|n| MASKS.iter().find(|(m, _)| *m == n).map(|(_, b)| *b))
            .fold(0, |a, b| a | b),
        Some(Value::Number(n)) => n.as_u64().unwrap_or(0) as u32,
        _ => DEFAULT_MASK,
    }
}

/// One watch: the path watched and how it was asked for.
struct Watch {
    path: String,
    mask: u32,
    auto_add: bool,
}

/// The beacon, with its inotify instance and watches (Salt's notifier in `__context__`).
#[derive(Default)]
pub(crate) struct Inotify {
    kernel: Option<Kernel>,
    watches: BTreeMap<i32, Watch>,
}

impl Inotify {
    fn add(&mut self, path: &str, mask: u32, auto_add: bool) {
        let Some(k) = &self.kernel else { return };
        let flags = AddWatchFlags::from_bits_retain(mask);
        if let Ok(wd) = k.add_watch(path, flags) {
            let path = path.to_owned();
            self.watches.insert(
                wd.as_raw(),
                Watch {
                    path,
                    mask,
                    auto_add,
                },
            );
        }
    }

    fn add_tree(&mut self, root: &str, mask: u32, recurse: bool, auto_add: bool) {
        self.add(root, mask, auto_add);
        if !recurse {
            return;
        }
        let mut dirs = vec![root.to_owned()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    let p = e.path().display().to_string();
                    self.add(&p, mask, auto_add);
                    dirs.push(p);
                }
            }
        }
    }

    /// Reads what the kernel queued since the last poll.
    fn read(&mut self) -> Vec<Raw> {
        let Some(k) = &self.kernel else {
            return Vec::new();
        };
        let mut raw = Vec::new();
        while let Ok(events) = k.read_events() {
            if events.is_empty() {
                break;
            }
            for e in events {
                let wd = e.wd.as_raw();
                let mask = e.mask.bits();
                if mask & AddWatchFlags::IN_IGNORED.bits() != 0 {
                    self.watches.remove(&wd);
                    continue;
                }
                let Some(w) = self.watches.get(&wd) else {
                    continue;
                };
                let pathname = match &e.name {
                    Some(n) => format!("{}/{}", w.path.trim_end_matches('/'), n.to_string_lossy()),
                    None => w.path.clone(),
                };
                raw.push(Raw {
                    path: w.path.clone(),
                    pathname,
                    mask,
                });
            }
        }
        // pyinotify's auto_add: new directories under an auto_add watch are watched too.
        for r in &raw {
            if r.mask & (IN_ISDIR | 0x100) == IN_ISDIR | 0x100 {
                let parent = self
                    .watches
                    .values()
                    .find(|w| w.path == r.path && w.auto_add);
                if let Some(mask) = parent.map(|w| w.mask) {
                    self.add_tree(&r.pathname.clone(), mask, true, true);
                }
            }
        }
        raw
    }

    /// Watches every configured path that exists and is not yet watched (as Salt, after
    /// reading: a path created later is watched from the next poll).
    fn update(&mut self, files: &Map<String, Value>) {
        for (path, conf) in files {
            let mask = mask_of(conf);
            let recurse = conf.get("recurse") == Some(&Value::Bool(true));
            let auto_add = conf.get("auto_add") == Some(&Value::Bool(true));
            let existing = self.watches.values().find(|w| &w.path == path);
            match existing {
                Some(w) if w.mask == mask && w.auto_add == auto_add => {}
                Some(_) => self.add_tree(path, mask, recurse, auto_add),
                None if Path::new(path).exists() => self.add_tree(path, mask, recurse, auto_add),
                None => {}
            }
        }
    }
}

impl Beacon for Inotify {
    fn validate(&self, config: &Value) -> Result<(), String> {
        validate(config)
    }

    fn poll<'a>(&'a mut self, config: &'a [Value], _ctx: &'a CallContext) -> PollFuture<'a> {
        Box::pin(async move {
            let c = list_to_dict(&remove_hidden(config));
            let files = c
                .get("files")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if self.kernel.is_none() {
                let k = Kernel::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
                    .map_err(|e| format!("cannot start inotify: {e}"))?;
                self.kernel = Some(k);
            }
            let raw = self.read();
            let out = decide(&files, &raw);
            self.update(&files);
            Ok(out)
        })
    }

    fn close(&mut self) {
        self.kernel = None;
        self.watches.clear();
    }
}

const VALID_MASKS: &[&str] = &[
    "access",
    "attrib",
    "close_nowrite",
    "close_write",
    "create",
    "delete",
    "delete_self",
    "excl_unlink",
    "ignored",
    "modify",
    "moved_from",
    "moved_to",
    "move_self",
    "oneshot",
    "onlydir",
    "open",
    "unmount",
];

/// Salt's `inotify.validate`.
fn validate(config: &Value) -> Result<(), String> {
    let c = list_to_dict(as_list(config, "inotify")?);
    let files = match c.get("files") {
        None => return Err("Configuration for inotify beacon must include files.".into()),
        Some(Value::Object(f)) => f.clone(),
        Some(_) => {
            return Err("Configuration for inotify beacon invalid, files must be a dict.".into());
        }
    };
    for conf in files.values() {
        let Value::Object(conf) = conf else {
            return Err("Configuration for inotify beacon must be a list of dictionaries.".into());
        };
        if !["mask", "recurse", "auto_add"]
            .iter()
            .any(|k| conf.contains_key(*k))
        {
            return Err(
                "Configuration for inotify beacon must contain mask, recurse or \
                        auto_add items."
                    .into(),
            );
        }
        for flag in ["auto_add", "recurse"] {
            if conf.get(flag).is_some_and(|v| !v.is_boolean()) {
                return Err(format!(
                    "Configuration for inotify beacon {flag} must be boolean."
                ));
            }
        }
        if let Some(mask) = conf.get("mask") {
            let Value::Array(names) = mask else {
                return Err("Configuration for inotify beacon mask must be list.".into());
            };
            for m in names {
                let name = saltq_semantics::python::str(m);
                if !VALID_MASKS.contains(&name.as_str()) {
                    return Err(format!(
                        "Configuration for inotify beacon invalid mask option {name}."
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(path: &str, pathname: &str, mask: u32) -> Raw {
        Raw {
            path: path.into(),
            pathname: pathname.into(),
            mask,
        }
    }

    #[test]
    fn events_name_the_watch_and_the_change() {
        let files = json!({"/srv/www": {"mask": ["create"], "recurse": true,
                            "exclude": ["/srv/www/tmp", "*.swp", {"^/srv/www/cache": {"regex": true}}]}});
        let files = files.as_object().cloned().unwrap_or_default();
        let got = decide(
            &files,
            &[
                raw("/srv/www", "/srv/www/index.html", 0x100),
                raw("/srv/www/sub", "/srv/www/sub/d", 0x100 | IN_ISDIR),
                raw("/srv/www", "/srv/www/tmp/x", 0x2),
                raw("/srv/www", "/srv/www/a.swp", 0x2),
                raw("/srv/www/cache", "/srv/www/cache/1", 0x200),
            ],
        );
        assert_eq!(
            got,
            vec![
                json!({"tag": "/srv/www", "path": "/srv/www/index.html", "change": "IN_CREATE"}),
                json!({"tag": "/srv/www/sub", "path": "/srv/www/sub/d", "change": "IN_CREATE|IN_ISDIR"}),
            ]
        );
        assert_eq!(maskname(0x8), "IN_CLOSE_WRITE");
        assert_eq!(mask_of(&json!({"mask": ["create", "modify"]})), 0x102);
        assert_eq!(mask_of(&json!({"recurse": true})), DEFAULT_MASK);
    }

    #[test]
    fn validation_as_salt() {
        let e = |v: Value| validate(&v).unwrap_err();
        assert_eq!(
            e(json!({})),
            "Configuration for inotify beacon must be a list."
        );
        assert_eq!(
            e(json!([{"files": {"/etc": {}}}])),
            "Configuration for inotify beacon must contain mask, recurse or auto_add items."
        );
        assert_eq!(
            e(json!([{"files": {"/etc": {"mask": ["bogus"]}}}])),
            "Configuration for inotify beacon invalid mask option bogus."
        );
        assert!(validate(&json!([{"files": {"/etc": {"mask": ["modify"]}}}])).is_ok());
    }

    #[tokio::test]
    async fn the_kernel_reports_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display().to_string();
        let config = vec![json!({"files": {d.clone(): {"mask": ["create", "close_write"]}}})];
        let ctx = crate::testutil::ctx();
        let mut b = Inotify::default();
        assert!(
            b.poll(&config, &ctx).await.unwrap().is_empty(),
            "first poll only watches"
        );
        std::fs::write(dir.path().join("f"), "x").unwrap();
        let got = b.poll(&config, &ctx).await.unwrap();
        let f = format!("{d}/f");
        assert_eq!(
            got,
            vec![
                json!({"tag": d, "path": f, "change": "IN_CREATE"}),
                json!({"tag": d, "path": f, "change": "IN_CLOSE_WRITE"}),
            ]
        );
    }
}
