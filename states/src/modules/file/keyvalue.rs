//! `file.keyvalue`: `key<separator>value` lines set in a file (sshd_config, sysctl.conf
//! style), with Salt's own `- old`/`+ new` diff.

use saltq_exec::{Lit, Param};
use serde_json::Value;

use super::{Ret, StateCall, bool_arg, error, name_of, py_str, str_arg};
use crate::modules::StateError;

/// `file.keyvalue`'s parameters.
pub(super) const PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("key", Lit::None),
    Param::opt("value", Lit::None),
    Param::opt("key_values", Lit::None),
    Param::opt("separator", Lit::Str("=")),
    Param::opt("append_if_not_found", Lit::Bool(false)),
    Param::opt("prepend_if_not_found", Lit::Bool(false)),
    Param::opt("search_only", Lit::Bool(false)),
    Param::opt("show_changes", Lit::Bool(true)),
    Param::opt("ignore_if_missing", Lit::Bool(false)),
    Param::opt("count", Lit::Int(1)),
    Param::opt("uncomment", Lit::None),
    Param::opt("key_ignore_case", Lit::Bool(false)),
    Param::opt("value_ignore_case", Lit::Bool(false)),
    Param::opt("create_if_missing", Lit::Bool(false)),
];

/// Python's `str.lstrip(chars)`, whitespace when `chars` is `None`.
fn lstrip<'a>(s: &'a str, chars: Option<&str>) -> &'a str {
    match chars {
        Some(c) => s.trim_start_matches(|x: char| c.contains(x)),
        None => s.trim_start_matches(saltq_semantics::python::is_space),
    }
}

/// `file.keyvalue`.
pub(super) async fn keyvalue(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    ret.result = None;
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.keyvalue"));
    }
    let key_values: Vec<(String, Value)> = match (call.arg("key"), call.arg("value")) {
        (Some(k), Some(v)) => {
            if call.arg("key_values").is_some_and(Value::is_object) {
                return Ok(error(
                    ret,
                    "file.keyvalue can not combine key_values with key and value",
                ));
            }
            vec![(py_str(k), v.clone())]
        }
        _ => match call.arg("key_values") {
            Some(Value::Object(m)) if !m.is_empty() => {
                m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
            }
            other => {
                let msg = if other.is_none_or(|v| !saltq_semantics::python::truthy(v)) {
                    "is empty"
                } else {
                    "is not a dictionary"
                };
                return Ok(error(
                    ret,
                    format!("file.keyvalue key and value not supplied and key_values {msg}"),
                ));
            }
        },
    };
    let separator = str_arg(&call, "separator").unwrap_or_else(|| "=".into());
    let mut append = bool_arg(&call, "append_if_not_found", false);
    let prepend = bool_arg(&call, "prepend_if_not_found", false);
    let show_changes = bool_arg(&call, "show_changes", true);
    let key_ic = bool_arg(&call, "key_ignore_case", false);
    let value_ic = bool_arg(&call, "value_ignore_case", false);
    let uncomment = str_arg(&call, "uncomment");
    let count = call.arg("count").and_then(Value::as_i64).unwrap_or(1);
    let file_contents: Vec<String> = match std::fs::read(&name) {
        Ok(d) => super::diff::lines(&String::from_utf8_lossy(&d))
            .into_iter()
            .map(str::to_owned)
            .collect(),
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                && bool_arg(&call, "create_if_missing", false) =>
        {
            append = true;
            Vec::new()
        }
        Err(_) => {
            ret.comment = format!("unable to open {name}");
            ret.result = Some(bool_arg(&call, "ignore_if_missing", false));
            return Ok(ret);
        }
    };
    let line_of = |k: &str, sep: &str, v: &Value| format!("{k}{sep}{}\n", py_str(v));
    let mut diff: Vec<String> = Vec::new();
    let mut content: Vec<String> = Vec::new();
    let mut changes = 0;
    let mut diff_count: Vec<i64> = vec![count; key_values.len()];
    for orig in file_contents {
        let mut line = orig.clone();
        let stripped = lstrip(&orig, uncomment.as_deref());
        let did_uncomment = orig.len() > stripped.len();
        let test_line = if key_ic {
            stripped.to_lowercase()
        } else {
            stripped.to_owned()
        };
        for (i, (key, value)) in key_values.iter().enumerate() {
            let test_key = if key_ic {
                key.to_lowercase()
            } else {
                key.clone()
            };
            if !test_line.starts_with(&test_key) {
                continue;
            }
            let working = if did_uncomment {
                stripped
            } else {
                orig.as_str()
            };
            let Some((line_key, line_value)) = working.split_once(separator.as_str()) else {
                continue;
            };
            let keys_match = if key_ic {
                line_key.to_lowercase() == test_key
            } else {
                line_key == test_key
            };
            if !keys_match {
                continue;
            }
            let (mut lv, mut tv) = (
                line_value.trim().to_owned(),
                py_str(value).trim().to_owned(),
            );
            if value_ic {
                lv = lv.to_lowercase();
                tv = tv.to_lowercase();
            }
            let mut values_match = lv == tv;
            let mut needs_changing = false;
            if did_uncomment {
                if diff_count[i] > 0 {
                    needs_changing = true;
                } else if !values_match {
                    values_match = true;
                }
            } else if diff_count[i] == 0 {
                needs_changing = true;
            }
            if !values_match || needs_changing {
                diff.push(format!("- {line}"));
                line = String::new();
                if diff_count[i] != 0 {
                    line = line_of(line_key, &separator, value);
                    if value.is_string() {
                        diff.push(format!("+ {line}"));
                    } else {
                        diff.push(format!(
                            "+ {} (from {} type)\n",
                            line.trim_end(),
                            saltq_semantics::python::type_name(value)
                        ));
                    }
                }
                changes += 1;
            }
            if diff_count[i] > 0 {
                diff_count[i] -= 1;
            }
        }
        content.push(line);
    }
    if append {
        let mut tmp: Vec<String> = Vec::new();
        for (i, (key, value)) in key_values.iter().enumerate() {
            if diff_count[i] > 0 {
                let line = line_of(key, &separator, value);
                tmp.push(format!("+ {line}"));
                content.push(line);
                changes += 1;
            }
        }
        if !tmp.is_empty() {
            diff.push("- <EOF>\n".into());
            diff.extend(tmp);
            diff.push("+ <EOF>\n".into());
        }
    } else if prepend {
        let mut did = false;
        for (i, (key, value)) in key_values.iter().enumerate() {
            if diff_count[i] > 0 {
                let line = line_of(key, &separator, value);
                if !did {
                    diff.insert(0, "  <SOF>\n".into());
                    did = true;
                }
                diff.insert(1, format!("+ {line}"));
                content.insert(0, line);
                changes += 1;
            }
        }
    }
    if changes == 0 {
        ret.result = Some(true);
        return Ok(ret);
    }
    if call.test {
        ret.comment = format!("File {name} is set to be changed ({changes} lines)");
        if show_changes {
            ret.changes.insert("diff".into(), diff.concat().into());
            ret.comment.push_str("\nPredicted diff:\n\r\t\t");
            ret.comment.push_str(&diff.join("\r\t\t"));
        }
        return Ok(ret);
    }
    ret.comment = format!("Changed {changes} lines");
    if show_changes {
        ret.changes.insert("diff".into(), diff.concat().into());
    }
    if std::fs::write(&name, content.concat()).is_err() {
        ret.comment = format!("{name} not writable");
        ret.result = Some(false);
        return Ok(ret);
    }
    ret.result = Some(true);
    Ok(ret)
}
