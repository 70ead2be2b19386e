//! `file.serialize`: a dataset written as JSON or YAML the way Salt's serializers write it,
//! then managed like `file.managed`'s `contents`.

use std::path::Path;

use saltq_exec::{Lit, Param};
use saltq_semantics::output::{OutputOptions, Outputter, render};
use saltq_semantics::python::{Dumps, dumps};
use serde_json::{Map, Value};

use super::managed::{FileSpec, Managed, check_changes, manage_file};
use super::{Ret, StateCall, bool_arg, error, name_of, normalize_mode, py_str, str_arg};
use crate::modules::StateError;

const fn opt(name: &'static str) -> Param {
    Param::opt(name, Lit::None)
}

/// `file.serialize`'s parameters.
pub(super) const PARAMS: &[Param] = &[
    Param::req("name"),
    opt("dataset"),
    opt("dataset_pillar"),
    opt("user"),
    opt("group"),
    opt("mode"),
    Param::opt("backup", Lit::Str("")),
    Param::opt("makedirs", Lit::Bool(false)),
    Param::opt("show_changes", Lit::Bool(true)),
    Param::opt("create", Lit::Bool(true)),
    Param::opt("merge_if_exists", Lit::Bool(false)),
    opt("encoding"),
    Param::opt("encoding_errors", Lit::Str("strict")),
    opt("serializer"),
    opt("serializer_opts"),
    opt("deserializer_opts"),
    opt("check_cmd"),
    Param::opt("tmp_dir", Lit::Str("")),
    Param::opt("tmp_ext", Lit::Str("")),
];

/// Salt's `merge_recurse(existing, new)`: dicts merged key by key (exec's `dict_update`),
/// anything else replaced.
fn merge_recurse(dest: &Value, upd: &Value) -> Value {
    match (dest, upd) {
        (Value::Object(d), Value::Object(u)) => {
            let mut out = d.clone();
            saltq_exec::dict_update(&mut out, u, false);
            Value::Object(out)
        }
        _ => upd.clone(),
    }
}

/// Salt's `recursive_diff(old, new).diffs`: for each differing key `{"new": .., "old": ..}`,
/// nested for dicts; a new key's old value is `<_null_>`, keys only in `old` are left out.
fn recursive_diff(old: &Map<String, Value>, new: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, nv) in new {
        match old.get(k) {
            Some(Value::Object(o)) if nv.is_object() => {
                let d = recursive_diff(o, nv.as_object().expect("object"));
                if !d.is_empty() {
                    out.insert(k.clone(), Value::Object(d));
                }
            }
            Some(ov) if ov == nv => {}
            Some(ov) => {
                out.insert(k.clone(), serde_json::json!({"new": nv, "old": ov}));
            }
            None => {
                out.insert(k.clone(), serde_json::json!({"new": nv, "old": "<_null_>"}));
            }
        }
    }
    out
}

/// `file.serialize`.
pub(super) async fn serialize(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.serialize"));
    }
    if !bool_arg(&call, "create", true) && !Path::new(&name).is_file() {
        ret.comment = format!("File {name} is not present and is not set for creation");
        return Ok(ret);
    }
    let serializer = call.arg("serializer").map(py_str);
    let formatter = call.arg("formatter").map(py_str);
    if serializer.as_ref().is_some_and(|s| !s.is_empty())
        && formatter.as_ref().is_some_and(|s| !s.is_empty())
    {
        return Ok(error(
            ret,
            "Only one of serializer and formatter are allowed",
        ));
    }
    let serializer = serializer
        .filter(|s| !s.is_empty())
        .or(formatter.filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "yaml".into())
        .to_lowercase();
    let dataset = call
        .arg("dataset")
        .filter(|d| saltq_semantics::python::truthy(d))
        .cloned();
    let dataset_pillar = str_arg(&call, "dataset_pillar").filter(|s| !s.is_empty());
    if dataset.is_some() && dataset_pillar.is_some() {
        return Ok(error(
            ret,
            "Only one of 'dataset' and 'dataset_pillar' is permitted",
        ));
    }
    let mut dataset = match dataset_pillar {
        Some(key) => {
            let pillar = call.ctx.pillar();
            let mut cur = Some(&pillar);
            for part in key.split(':') {
                cur = cur.and_then(|c| c.get(part));
            }
            cur.cloned().unwrap_or(Value::String(String::new()))
        }
        None => match call.arg("dataset") {
            Some(d) => d.clone(),
            None => {
                return Ok(error(
                    ret,
                    "Neither 'dataset' nor 'dataset_pillar' was defined",
                ));
            }
        },
    };
    if serializer != "json" && serializer != "yaml" {
        return Ok(error(
            ret,
            format!(
                "The {serializer} serializer could not be found. It either does not exist or \
                 its prerequisites are not installed."
            ),
        ));
    }
    let mut existing = None;
    if bool_arg(&call, "merge_if_exists", false) && Path::new(&name).is_file() {
        let text = std::fs::read_to_string(&name).unwrap_or_default();
        let parsed = if serializer == "json" {
            serde_json::from_str::<Value>(&text).map_err(|e| e.to_string())
        } else {
            serde_yaml_ng::from_str::<Value>(&text).map_err(|e| e.to_string())
        };
        match parsed {
            Ok(old) => {
                let merged = merge_recurse(&old, &dataset);
                if old == merged {
                    ret.comment = format!("The file {name} is in the correct state");
                    return Ok(ret);
                }
                existing = Some(old);
                dataset = merged;
            }
            Err(e) => {
                ret.result = Some(false);
                ret.comment = format!("Failed to deserialize existing data: {e}");
                return Ok(ret);
            }
        }
    }
    let mut contents = if serializer == "json" {
        // Salt's defaults for the json serializer: `indent=2, separators=(",", ": "),
        // sort_keys=True`, through `salt.utils.json.dumps` (`ensure_ascii=False`).
        let opts = Dumps::salt().indent(2).separators(",", ": ").sort_keys();
        dumps(&dataset, &opts)
    } else {
        render(
            Outputter::Yaml,
            &dataset,
            &OutputOptions {
                color: false,
                indent: None,
            },
        )
    };
    if serializer == "json" {
        contents.push('\n');
    }
    let spec = FileSpec {
        user: call.arg("user").cloned(),
        group: call.arg("group").cloned(),
        mode: call.arg("mode").and_then(normalize_mode),
        follow: false,
        show_changes: bool_arg(&call, "show_changes", true),
        makedirs: bool_arg(&call, "makedirs", false),
        dir_mode: None,
        backup: str_arg(&call, "backup"),
    };
    let path = Path::new(&name).to_path_buf();
    let mut m = Managed::default();
    if call.test {
        match check_changes(&call, &path, &mut m, Some(&contents), &spec).await {
            Ok(ch) if !ch.is_empty() => {
                ret.changes = ch;
                ret.result = None;
                ret.comment = format!("Dataset will be serialized and stored into {name}");
                if !spec.show_changes {
                    ret.changes
                        .insert("diff".into(), "<show_changes=False>".into());
                }
            }
            Ok(_) => ret.comment = format!("The file {name} is in the correct state"),
            Err(e) => return Ok(error(ret, e)),
        }
    } else {
        ret = manage_file(&call, ret, &path, "", &mut m, Some(&contents), &spec).await;
    }
    if let (Some(Value::Object(old)), Value::Object(new)) = (&existing, &dataset) {
        ret.changes
            .insert("diff".into(), Value::Object(recursive_diff(old, new)));
    }
    Ok(ret)
}
