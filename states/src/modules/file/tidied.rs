//! `file.tidied`: files (and with `rmdirs` empty directories) under a directory removed by
//! age, size and name patterns.

use std::path::Path;

use saltq_exec::{Lit, Param};
use serde_json::Value;

use super::{Ret, StateCall, bool_arg, error, name_of, py_str, str_arg};
use crate::modules::StateError;

/// `file.tidied`'s parameters.
pub(super) const PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("age", Lit::Int(0)),
    Param::opt("matches", Lit::None),
    Param::opt("rmdirs", Lit::Bool(false)),
    Param::opt("size", Lit::Int(0)),
    Param::opt("exclude", Lit::None),
    Param::opt("full_path_match", Lit::Bool(false)),
    Param::opt("followlinks", Lit::Bool(false)),
    Param::opt("time_comparison", Lit::Str("atime")),
    Param::opt("age_size_logical_operator", Lit::Str("OR")),
    Param::opt("age_size_only", Lit::None),
    Param::opt("rmlinks", Lit::Bool(true)),
];

/// Salt's `human_to_bytes(size, handle_metric=True)`: `2G`, `30MB`, `64KiB`; 0 when unreadable.
fn human_to_bytes(v: &Value) -> u64 {
    if let Some(n) = v.as_u64() {
        return n;
    }
    let s = py_str(v);
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = (&s[..split], s[split..].trim().to_lowercase());
    let Ok(value) = num.parse::<f64>() else {
        return 0;
    };
    let unit = if unit.is_empty() {
        "b".to_owned()
    } else {
        unit
    };
    let units = "bkmgtpezy";
    let Some(p) = unit.chars().next().and_then(|c| units.find(c)) else {
        return 0;
    };
    let metric = unit.len() == 2 && unit.ends_with('b') && p > 0;
    let binary = unit.len() == 1 || (unit.len() == 3 && unit.ends_with("ib") && p > 0);
    if !(metric || binary) {
        return 0;
    }
    let factor = if metric {
        10f64.powi(3 * p as i32)
    } else {
        2f64.powi(10 * p as i32)
    };
    (value * factor) as u64
}

/// `os.walk(top, topdown=False)`: (root, dirs, files), children before their parent.
fn walk_bottom_up(top: &Path, follow: bool, out: &mut Vec<(String, Vec<String>, Vec<String>)>) {
    let Ok(rd) = std::fs::read_dir(top) else {
        return;
    };
    let (mut dirs, mut files) = (Vec::new(), Vec::new());
    for e in rd.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if e.path().is_dir() {
            dirs.push(n);
        } else {
            files.push(n);
        }
    }
    dirs.sort();
    files.sort();
    for d in &dirs {
        let p = top.join(d);
        if follow || !p.is_symlink() {
            walk_bottom_up(&p, follow, out);
        }
    }
    out.push((top.to_string_lossy().into_owned(), dirs, files));
}

fn regexes(v: Option<&Value>) -> Result<Vec<fancy_regex::Regex>, String> {
    let pats: Vec<String> = match v {
        None => Vec::new(),
        Some(Value::Array(a)) => a.iter().map(py_str).collect(),
        Some(other) => vec![py_str(other)],
    };
    pats.iter()
        .map(|p| fancy_regex::Regex::new(&format!("^(?:{p})")).map_err(|e| e.to_string()))
        .collect()
}

/// `file.tidied`.
pub(super) async fn tidied(call: StateCall) -> Result<Ret, StateError> {
    use std::os::unix::fs::MetadataExt;
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    let op = str_arg(&call, "age_size_logical_operator")
        .map(|s| s.to_uppercase())
        .filter(|s| s == "AND" || s == "OR")
        .unwrap_or_else(|| "OR".into());
    let only = str_arg(&call, "age_size_only")
        .map(|s| s.to_lowercase())
        .filter(|s| s == "age" || s == "size");
    if !name.starts_with('/') {
        return Ok(error(
            ret,
            format!("Specified file {name} is not an absolute path"),
        ));
    }
    if !Path::new(&name).is_dir() {
        return Ok(error(
            ret,
            format!("{name} does not exist or is not a directory."),
        ));
    }
    let time_cmp = str_arg(&call, "time_comparison")
        .map(|s| s.to_lowercase())
        .filter(|s| ["atime", "ctime", "mtime"].contains(&s.as_str()))
        .unwrap_or_else(|| "atime".into());
    let size = call.arg("size").map_or(0, human_to_bytes);
    let age = call.arg("age").and_then(Value::as_i64).unwrap_or(0);
    let matches = match call.arg("matches") {
        None => regexes(Some(&Value::from(".*"))),
        m => regexes(m),
    };
    let excludes = regexes(call.arg("exclude"));
    let (matches, excludes) = match (matches, excludes) {
        (Ok(m), Ok(e)) => (m, e),
        (Err(e), _) | (_, Err(e)) => return Ok(error(ret, e)),
    };
    let rmdirs = bool_arg(&call, "rmdirs", false);
    let rmlinks = bool_arg(&call, "rmlinks", true);
    let full = bool_arg(&call, "full_path_match", false);
    let today = chrono::Local::now().date_naive();
    let mut walked = Vec::new();
    walk_bottom_up(
        Path::new(&name),
        bool_arg(&call, "followlinks", false),
        &mut walked,
    );
    let mut todelete: Vec<String> = Vec::new();
    for (root, dirs, files) in &walked {
        for elem in files.iter().chain(dirs.iter()) {
            let path = format!("{root}/{elem}");
            let p = Path::new(&path);
            let is_link = p.is_symlink();
            let Ok(st) = (if is_link {
                std::fs::symlink_metadata(p)
            } else {
                std::fs::metadata(p)
            }) else {
                continue;
            };
            let mut deleteme = true;
            let mut mysize = 0;
            if is_link {
                deleteme = rmlinks;
            } else if st.is_dir() {
                deleteme = rmdirs;
            } else {
                mysize = st.size();
            }
            let ts = match time_cmp.as_str() {
                "ctime" => st.ctime(),
                "mtime" => st.mtime(),
                _ => st.atime(),
            };
            let day = chrono::DateTime::from_timestamp(ts, 0)
                .map(|d| d.with_timezone(&chrono::Local).date_naive())
                .unwrap_or(today);
            let myage = (today - day).num_days().abs();
            let filename = if full { path.as_str() } else { elem.as_str() };
            let cmp = match (only.as_deref(), op.as_str()) {
                (Some("age"), _) => myage >= age,
                (Some(_), _) => mysize >= size,
                (None, "AND") => mysize >= size && myage >= age,
                _ => mysize >= size || myage >= age,
            };
            let is_match = matches
                .iter()
                .any(|m| m.is_match(filename).unwrap_or(false))
                && !excludes
                    .iter()
                    .any(|x| x.is_match(filename).unwrap_or(false));
            if cmp && is_match && deleteme {
                todelete.push(path);
            }
        }
    }
    if todelete.is_empty() {
        ret.comment = format!("Nothing to remove from directory {name}");
        return Ok(ret);
    }
    let list = Value::Array(todelete.iter().cloned().map(Value::from).collect());
    if call.test {
        ret.result = None;
        ret.comment = format!("{name} is set for tidy");
        ret.changes.insert("removed".into(), list);
        return Ok(ret);
    }
    let mut removed = Vec::new();
    for path in &todelete {
        let p = Path::new(path);
        let r = if p.is_dir() && !p.is_symlink() {
            std::fs::remove_dir_all(p)
        } else {
            std::fs::remove_file(p)
        };
        if let Err(e) = r {
            ret.changes.insert(
                "removed".into(),
                Value::Array(removed.into_iter().map(Value::from).collect()),
            );
            return Ok(error(ret, super::os_error(&e, path)));
        }
        removed.push(path.clone());
    }
    ret.changes.insert("removed".into(), list);
    ret.comment = format!(
        "Removed {} files or directories from directory {name}",
        todelete.len()
    );
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_salt_reads_them() {
        assert_eq!(human_to_bytes(&Value::from("2K")), 2048);
        assert_eq!(human_to_bytes(&Value::from("2KiB")), 2048);
        assert_eq!(human_to_bytes(&Value::from("2kb")), 2000);
        assert_eq!(human_to_bytes(&Value::from("1.5M")), 1_572_864);
        assert_eq!(human_to_bytes(&Value::from("oops")), 0);
        assert_eq!(human_to_bytes(&Value::from(10)), 10);
    }
}
