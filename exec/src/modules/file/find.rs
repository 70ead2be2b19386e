//! `file.find`, Salt's `salt/utils/find.py`: criteria on name, type, owner, size, age and
//! contents, `maxdepth`/`mindepth`, and the `print` and `delete` actions. The path may be a
//! glob. Results are sorted, as Salt sorts them.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use regex::{Regex, RegexBuilder};
use serde_json::{Value, json};

use saltq_semantics::python::{self, fnmatch, truthy};

use super::meta::hash_file;
use super::{expand_user, gid_name, uid_name};
use crate::error::ExecError;

use crate::spec::Call;

pub(super) const DOC: &str = "Approximate the Unix ``find(1)`` command and return a sorted list of
paths that meet the criteria. The path may be a glob.

Criteria (all must match):

- ``name``, ``iname``: a file name glob (case-insensitive for ``iname``)
- ``regex``, ``iregex``: a regular expression on the file name
- ``type``: file types, any of ``b c d p f l s`` (``type=fd``)
- ``user``, ``group``: owner names or ids, comma separated
- ``size``: ``[+-]N[bkmgt]``: at least (``+``), at most (``-``) or about ``N``
- ``mtime``: ``[+-]N[wdhms]``: modified more (``+``) or less (``-``) than ``N`` ago
- ``grep``: a regular expression found in the file's contents
- ``maxdepth``, ``mindepth``: how deep below ``path`` to look

Actions:

- ``print``: what to return per match, any of ``path name size type user group md5 mode
  mtime``, comma separated (``path`` by default); one field gives a list of values, more a
  list of lists
- ``delete``: remove the matches of these types (``delete=f``; ``a`` for all)

CLI Examples:

.. code-block:: bash

    salt '*' file.find / type=f name=\\*.bak size=+10m
    salt '*' file.find /var mtime=+30d size=+10m print=path,size,mtime
    salt '*' file.find /var/log name=\\*.[0-9] mtime=+30d size=+10m delete
";

/// One criterion.
enum Criterion {
    Name(Regex),
    Type(String),
    Owner(Vec<u32>),
    Group(Vec<u32>),
    Size(u64, u64),
    Mtime(f64, bool),
    Grep(Regex),
}

/// A parsed `find` request.
struct Finder {
    criteria: Vec<Criterion>,
    print: Vec<String>,
    delete: Option<String>,
    mindepth: usize,
    maxdepth: Option<usize>,
}

/// Salt's glob-to-regex for `name`: `.` literal, `?` an optional character, `*` anything,
/// anchored at both ends.
fn name_regex(glob: &str, ignore_case: bool) -> Result<Regex, String> {
    let pattern = glob
        .replace('.', "\\.")
        .replace('?', ".?")
        .replace('*', ".*");
    RegexBuilder::new(&format!("^(?:{pattern})$"))
        .case_insensitive(ignore_case)
        .build()
        .map_err(|_| format!("invalid regular expression: \"{glob}\""))
}

fn regex(pattern: &str, ignore_case: bool, anchored: bool) -> Result<Regex, String> {
    let full = if anchored {
        format!("^(?:{pattern})")
    } else {
        pattern.to_owned()
    };
    RegexBuilder::new(&full)
        .case_insensitive(ignore_case)
        .build()
        .map_err(|_| format!("invalid regular expression: \"{pattern}\""))
}

/// `[+-]N[bkmgt]` as `(min, max)` bytes.
fn parse_size(value: &str) -> Result<(u64, u64), String> {
    let scalar = value.trim();
    let (style, scalar) = match scalar.chars().next() {
        Some(c @ ('+' | '-')) => (c, &scalar[1..]),
        _ => ('=', scalar),
    };
    let mult: u64 = match scalar.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('b') => 1,
        Some('k') => 1 << 10,
        Some('m') => 1 << 20,
        Some('g') => 1 << 30,
        Some('t') => 1 << 40,
        _ => 0,
    };
    let (digits, mult) = if mult == 0 {
        (scalar, 1)
    } else {
        (scalar[..scalar.len() - 1].trim(), mult)
    };
    let num = digits
        .parse::<u64>()
        .map(|n| n * mult)
        .or_else(|_| digits.parse::<f64>().map(|f| (f * mult as f64) as u64))
        .map_err(|_| format!("invalid size: \"{value}\""))?;
    Ok(match style {
        '-' => (0, num),
        '+' => (num, u64::MAX),
        _ => (num, num + mult - 1),
    })
}

/// `[+-]N[wdhms]...` as `(cutoff time, newer-than)`, truncated to the smallest unit given.
fn parse_mtime(value: &str) -> Result<(f64, bool), String> {
    let bad = || format!("invalid time interval: '{value}'");
    let text = value.trim();
    let (newer, mut rest) = match text.chars().next() {
        Some('-') => (true, &text[1..]),
        Some('+') => (false, &text[1..]),
        _ => (false, text),
    };
    let units = [
        ('w', 604_800.0),
        ('d', 86_400.0),
        ('h', 3_600.0),
        ('m', 60.0),
        ('s', 1.0),
    ];
    let (mut secs, mut resolution, mut next_unit) = (0.0, None, 0);
    while !rest.trim().is_empty() {
        let r = rest.trim_start();
        let end = r
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let num: f64 = r[..end].parse().map_err(|_| bad())?;
        let unit = r[end..].trim_start();
        let c = unit.chars().next().ok_or_else(bad)?.to_ascii_lowercase();
        let pos = units[next_unit..]
            .iter()
            .position(|(u, _)| *u == c)
            .ok_or_else(bad)?
            + next_unit;
        secs += num * units[pos].1;
        // Units come largest first: the last one is the resolution.
        resolution = Some(units[pos].1);
        next_unit = pos + 1;
        rest = &unit[1..];
    }
    let resolution = resolution.unwrap_or(1.0);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    Ok((now - (secs / resolution).trunc() * resolution, newer))
}

/// Names or ids, comma or space separated, as ids.
fn ids(value: &str, lookup: fn(&str) -> Option<u32>, what: &str) -> Result<Vec<u32>, String> {
    value
        .replace(',', " ")
        .split_whitespace()
        .map(|n| {
            n.parse()
                .ok()
                .or_else(|| lookup(n))
                .ok_or_else(|| format!("no such {what} \"{n}\""))
        })
        .collect()
}

/// The type letters `find` knows, checked.
fn types(value: &str) -> Result<String, String> {
    let letters: String = value
        .chars()
        .filter(|c| !c.is_whitespace() && *c != ',')
        .collect();
    match letters.chars().find(|c| !"bcdpfls".contains(*c)) {
        Some(bad) => Err(format!("invalid file type \"{bad}\"")),
        None => Ok(letters),
    }
}

fn type_letter(meta: &fs::Metadata) -> char {
    let t = meta.file_type();
    match () {
        _ if t.is_symlink() => 'l',
        _ if t.is_dir() => 'd',
        _ if t.is_block_device() => 'b',
        _ if t.is_char_device() => 'c',
        _ if t.is_fifo() => 'p',
        _ if t.is_socket() => 's',
        _ => 'f',
    }
}

impl Finder {
    /// Parses the options as Salt's `Finder` does, with its error texts.
    fn new(options: &[(String, Value)]) -> Result<Self, String> {
        let mut f = Finder {
            criteria: Vec::new(),
            print: Vec::new(),
            delete: None,
            mindepth: 0,
            maxdepth: None,
        };
        for (key, value) in options {
            let depth = || {
                value
                    .as_u64()
                    .or_else(|| python::str(value).parse().ok())
                    .map(|d| d as usize)
                    .ok_or_else(|| format!("invalid {key}: \"{}\"", python::str(value)))
            };
            match key.as_str() {
                "mindepth" => f.mindepth = depth()?,
                "maxdepth" => f.maxdepth = Some(depth()?),
                _ if key.starts_with('_') => {}
                _ if !truthy(value) => return Err(format!("missing value for \"{key}\" option")),
                _ => f.option(key, &python::str(value))?,
            }
        }
        if f.print.is_empty() && f.delete.is_none() {
            f.print.push("path".into());
        }
        Ok(f)
    }

    fn option(&mut self, key: &str, value: &str) -> Result<(), String> {
        let user = |n: &str| {
            nix::unistd::User::from_name(n)
                .ok()
                .flatten()
                .map(|u| u.uid.as_raw())
        };
        let group = |n: &str| {
            nix::unistd::Group::from_name(n)
                .ok()
                .flatten()
                .map(|g| g.gid.as_raw())
        };
        let criterion = match key {
            "name" => Criterion::Name(name_regex(value, false)?),
            "iname" => Criterion::Name(name_regex(value, true)?),
            "regex" => Criterion::Name(regex(value, false, true)?),
            "iregex" => Criterion::Name(regex(value, true, true)?),
            "type" => Criterion::Type(types(value)?),
            "owner" | "user" => Criterion::Owner(ids(value, user, "user")?),
            "group" => Criterion::Group(ids(value, group, "group")?),
            "size" => {
                let (min, max) = parse_size(value)?;
                Criterion::Size(min, max)
            }
            "mtime" => {
                let (cutoff, newer) = parse_mtime(value)?;
                Criterion::Mtime(cutoff, newer)
            }
            "grep" => Criterion::Grep(regex(value, false, false)?),
            "print" => {
                self.print = value
                    .replace(',', " ")
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect();
                if self.print.is_empty() {
                    self.print.push("path".into());
                }
                return Ok(());
            }
            "delete" => {
                self.delete = Some(if value.contains('a') {
                    "bcdpfls".into()
                } else {
                    types(value)?
                });
                return Ok(());
            }
            other => return Err(format!("invalid option \"{other}\"")),
        };
        self.criteria.push(criterion);
        Ok(())
    }

    fn matches(&self, path: &Path, name: &str, meta: &fs::Metadata) -> bool {
        self.criteria.iter().all(|c| match c {
            Criterion::Name(re) => re.is_match(name),
            Criterion::Type(t) => t.contains(type_letter(meta)),
            Criterion::Owner(ids) => ids.contains(&meta.uid()),
            Criterion::Group(ids) => ids.contains(&meta.gid()),
            Criterion::Size(min, max) => (*min..=*max).contains(&meta.size()),
            Criterion::Mtime(cutoff, newer) => {
                let mtime = meta.mtime() as f64;
                if *newer {
                    mtime >= *cutoff
                } else {
                    mtime <= *cutoff
                }
            }
            Criterion::Grep(re) => {
                meta.is_file()
                    && fs::read(path).is_ok_and(|d| re.is_match(&String::from_utf8_lossy(&d)))
            }
        })
    }

    /// What the actions give for one match (`None` when `delete` fails).
    fn act(&self, path: &Path, meta: &fs::Metadata) -> Option<Value> {
        if let Some(types) = &self.delete {
            if !types.contains(type_letter(meta)) {
                return None;
            }
            let removed = if meta.is_dir() {
                fs::remove_dir_all(path)
            } else {
                fs::remove_file(path)
            };
            return removed.ok().map(|()| json!(path.display().to_string()));
        }
        let fields: Vec<Value> = self.print.iter().map(|f| field(f, path, meta)).collect();
        Some(match <[Value; 1]>::try_from(fields) {
            Ok([one]) => one,
            Err(fields) => Value::Array(fields),
        })
    }

    /// Every match under `root` (and `root` itself when `mindepth` is 0).
    fn find(&self, root: &Path, out: &mut Vec<Value>) {
        let stat = |p: &Path| fs::metadata(p).or_else(|_| fs::symlink_metadata(p)).ok();
        if self.mindepth < 1
            && let Some(meta) = stat(root)
        {
            let name = root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if self.matches(root, &name, &meta) {
                out.extend(self.act(root, &meta));
            }
        }
        self.walk(root, 1, out);
    }

    fn walk(&self, dir: &Path, depth: usize, out: &mut Vec<Value>) {
        if self.maxdepth.is_some_and(|max| depth > max) {
            return;
        }
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        let mut subdirs = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(meta) = fs::metadata(&path)
                .or_else(|_| fs::symlink_metadata(&path))
                .ok()
            else {
                continue;
            };
            let is_real_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let name = entry.file_name().to_string_lossy().into_owned();
            if depth >= self.mindepth && self.matches(&path, &name, &meta) {
                out.extend(self.act(&path, &meta));
            }
            if is_real_dir && path.exists() {
                subdirs.push(path);
            }
        }
        for sub in subdirs {
            self.walk(&sub, depth + 1, out);
        }
    }
}

/// One `print` field of a match.
fn field(name: &str, path: &Path, meta: &fs::Metadata) -> Value {
    match name {
        "path" => json!(path.display().to_string()),
        "name" => json!(path.file_name().map(|n| n.to_string_lossy().into_owned())),
        "size" => json!(meta.size()),
        "type" => json!(type_letter(meta).to_string()),
        "mode" => json!(meta.mode() & 0o777),
        "mtime" => json!(meta.mtime()),
        "user" => uid_name(meta.uid()),
        "group" => gid_name(meta.gid()),
        "md5" if meta.is_file() => json!(hash_file(path, "md5").unwrap_or_default()),
        _ => json!(""),
    }
}

/// The paths a glob gives (the path itself when it has no glob characters).
fn glob(pattern: &Path) -> Vec<PathBuf> {
    let mut found = vec![PathBuf::from("/")];
    let text = pattern.display().to_string();
    if !text.contains(['*', '?', '[']) {
        return if pattern.exists() || fs::symlink_metadata(pattern).is_ok() {
            vec![pattern.to_path_buf()]
        } else {
            Vec::new()
        };
    }
    if !pattern.is_absolute() {
        found = vec![PathBuf::new()];
    }
    for part in text.split('/').filter(|p| !p.is_empty()) {
        found = found
            .into_iter()
            .flat_map(|base| {
                if !part.contains(['*', '?', '[']) {
                    return vec![base.join(part)];
                }
                let dir = if base.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    base.clone()
                };
                let mut names: Vec<String> = fs::read_dir(dir)
                    .map(|d| {
                        d.flatten()
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                names
                    .retain(|n| fnmatch(n, part) && (!n.starts_with('.') || part.starts_with('.')));
                names.sort();
                names.into_iter().map(|n| base.join(n)).collect()
            })
            .filter(|p| fs::symlink_metadata(p).is_ok())
            .collect();
    }
    found
}

pub(super) async fn find(call: Call) -> Result<Value, ExecError> {
    let path = expand_user(&python::str(call.arg("path")));
    let mut options: Vec<(String, Value)> = call
        .kwargs()
        .iter()
        .filter(|(k, _)| !k.starts_with("__"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let words: Vec<String> = call.varargs().iter().map(python::str).collect();
    if words.iter().any(|w| w == "delete") {
        options.push(("delete".into(), json!("f")));
    } else if words.iter().any(|w| w == "print") {
        options.push(("print".into(), json!("path")));
    }
    let finder = match Finder::new(&options) {
        Ok(finder) => finder,
        Err(e) => return Ok(Value::String(format!("error: {e}"))),
    };
    let mut out = Vec::new();
    for root in glob(&path) {
        finder.find(&root, &mut out);
    }
    out.sort_by_key(|v| v.to_string());
    Ok(Value::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_intervals() {
        assert_eq!(parse_size("+10m"), Ok((10 << 20, u64::MAX)));
        assert_eq!(parse_size("-1k"), Ok((0, 1024)));
        assert_eq!(parse_size("12"), Ok((12, 12)));
        assert_eq!(parse_size("2k"), Ok((2048, 3071)));
        assert_eq!(parse_size("x"), Err("invalid size: \"x\"".into()));
        let (cutoff, newer) = parse_mtime("-1d12h").unwrap_or((0.0, false));
        assert!(newer);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        assert!((now - cutoff - 129_600.0).abs() < 5.0, "{}", now - cutoff);
        assert_eq!(parse_mtime("3x"), Err("invalid time interval: '3x'".into()));
        assert_eq!(
            parse_mtime("1d2w"),
            Err("invalid time interval: '1d2w'".into())
        );
    }

    #[test]
    fn name_globs_are_salts() {
        // Salt turns `?` into "an optional character".
        let re = name_regex("a?.txt", false).unwrap_or_else(|e| panic!("{e}"));
        assert!(re.is_match("a.txt") && re.is_match("ab.txt") && !re.is_match("abc.txt"));
        let re = name_regex("*.TXT", true).unwrap_or_else(|e| panic!("{e}"));
        assert!(re.is_match("x.txt"));
    }
}
