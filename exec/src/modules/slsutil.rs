//! Salt's `slsutil` module (`salt/modules/slsutil.py`), the parts formulas call: merges
//! (`salt.utils.dictupdate`) and the `json`, `yaml` and `python` serializers
//! (`salt/serializers/`), as the `_mapdata` state of nearly every public formula uses them.

use serde_json::{Map, Value};

use saltq_semantics::python::{self, Dumps, truthy};

use crate::error::ExecError;
use crate::modules::pillar::merge_into;
use crate::spec::{Call, Function, Lit, Param};

/// The `slsutil` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("slsutil.deserialize", handler!(deserialize))
        .params(&[Param::req("serializer"), Param::req("stream_or_string")])
        .kwargs()
        .doc(DESERIALIZE_DOC),
    Function::new("slsutil.merge", handler!(merge))
        .params(&[
            Param::req("obj_a"),
            Param::req("obj_b"),
            Param::opt("strategy", Lit::Str("smart")),
            Param::opt("renderer", Lit::Str("yaml")),
            Param::opt("merge_lists", Lit::Bool(false)),
        ])
        .doc(MERGE_DOC),
    Function::new("slsutil.merge_all", handler!(merge_all))
        .params(&[
            Param::req("lst"),
            Param::opt("strategy", Lit::Str("smart")),
            Param::opt("renderer", Lit::Str("yaml")),
            Param::opt("merge_lists", Lit::Bool(false)),
        ])
        .doc(MERGE_ALL_DOC),
    Function::new("slsutil.serialize", handler!(serialize))
        .params(&[Param::req("serializer"), Param::req("obj")])
        .kwargs()
        .doc(SERIALIZE_DOC),
    Function::new("slsutil.update", handler!(update))
        .params(&[
            Param::req("dest"),
            Param::req("upd"),
            Param::opt("recursive_update", Lit::Bool(true)),
            Param::opt("merge_lists", Lit::Bool(false)),
        ])
        .doc(UPDATE_DOC),
];

/// The caller's keyword arguments without the `__pub_*` keys (Salt's `clean_kwargs`).
fn options(call: &Call) -> Map<String, Value> {
    call.kwargs()
        .iter()
        .filter(|(k, _)| !k.starts_with("__"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn non_dict() -> ExecError {
    ExecError::InvalidArguments("Cannot update using non-dict types in dictupdate.update()".into())
}

/// `salt.utils.dictupdate.update`.
fn dict_update(
    dest: &mut Value,
    upd: &Value,
    recursive: bool,
    merge_lists: bool,
) -> Result<(), ExecError> {
    let (Value::Object(d), Value::Object(u)) = (dest, upd) else {
        return Err(non_dict());
    };
    if recursive {
        merge_into(d, u, merge_lists);
    } else {
        for (k, v) in u {
            d.insert(k.clone(), v.clone());
        }
    }
    Ok(())
}

/// `salt.utils.dictupdate.merge(obj_a, obj_b, strategy, renderer, merge_lists)`.
pub(crate) fn dict_merge(
    a: &Value,
    b: &Value,
    strategy: &str,
    renderer: &str,
    merge_lists: bool,
) -> Result<Value, ExecError> {
    let strategy = match strategy {
        "smart"
            if renderer.rsplit('|').next() == Some("yamlex") || renderer.starts_with("yamlex_") =>
        {
            "aggregate"
        }
        "smart" => "recurse",
        other => other,
    };
    match strategy {
        "list" => {
            let (Value::Object(am), Value::Object(bm)) = (a, b) else {
                return Err(ExecError::exception(
                    "AttributeError",
                    format!("'{}' object has no attribute 'items'", python::type_name(a)),
                ));
            };
            let out = am
                .iter()
                .map(|(k, v)| {
                    let v = match bm.get(k) {
                        Some(bv) => Value::Array(vec![v.clone(), bv.clone()]),
                        None => v.clone(),
                    };
                    (k.clone(), v)
                })
                .collect();
            Ok(Value::Object(out))
        }
        "overwrite" => {
            let mut out = a.clone();
            if let (Value::Object(m), Value::Object(bm)) = (&mut out, b) {
                for (k, v) in bm {
                    if m.contains_key(k) {
                        m.insert(k.clone(), v.clone());
                    }
                }
            }
            dict_update(&mut out, b, true, merge_lists)?;
            Ok(out)
        }
        "aggregate" => Err(ExecError::execution(
            "the aggregate merging strategy (yamlex) is not available in saltq",
        )),
        "recurse" => {
            let mut out = a.clone();
            dict_update(&mut out, b, true, merge_lists)?;
            Ok(out)
        }
        // "none", and unknown strategies (which Salt logs and treats as recurse).
        other => {
            if other != "none" {
                tracing::warn!("Unknown merging strategy '{other}', fallback to recurse");
            }
            let mut out = a.clone();
            dict_update(&mut out, b, true, false)?;
            Ok(out)
        }
    }
}

const UPDATE_DOC: &str = "Merge ``upd`` recursively into ``dest``

If ``merge_lists=True``, will aggregate list object types instead of
replacing. This behavior is only activated when ``recursive_update=True``.

CLI Example:

.. code-block:: shell

    salt '*' slsutil.update '{foo: Foo}' '{bar: Bar}'
";

async fn update(call: Call) -> Result<Value, ExecError> {
    let mut dest = call.arg("dest").clone();
    dict_update(
        &mut dest,
        call.arg("upd"),
        truthy(call.arg("recursive_update")),
        truthy(call.arg("merge_lists")),
    )?;
    Ok(dest)
}

const MERGE_DOC: &str = "Merge a data structure into another by choosing a merge strategy

Strategies:

* aggregate
* list
* overwrite
* recurse
* smart

CLI Example:

.. code-block:: shell

    salt '*' slsutil.merge '{foo: Foo}' '{bar: Bar}'
";

async fn merge(call: Call) -> Result<Value, ExecError> {
    dict_merge(
        call.arg("obj_a"),
        call.arg("obj_b"),
        &python::str(call.arg("strategy")),
        &python::str(call.arg("renderer")),
        truthy(call.arg("merge_lists")),
    )
}

const MERGE_ALL_DOC: &str = "Merge a list of objects into each other in order

:type lst: Iterable
:param lst: List of objects to be merged.

:type strategy: String
:param strategy: Merge strategy. See utils.dictupdate.

:type renderer: String
:param renderer:
    Renderer type. Used to determine strategy when strategy is 'smart'.

:type merge_lists: Bool
:param merge_lists: Defines whether to merge embedded object lists.

CLI Example:

.. code-block:: shell

    salt '*' slsutil.merge_all '[{foo: Foo}, {foo: Bar}]'
";

async fn merge_all(call: Call) -> Result<Value, ExecError> {
    let strategy = python::str(call.arg("strategy"));
    let renderer = python::str(call.arg("renderer"));
    let merge_lists = truthy(call.arg("merge_lists"));
    let items: Vec<Value> = match call.arg("lst") {
        Value::Array(a) => a.clone(),
        Value::Object(m) => m.keys().map(|k| Value::from(k.as_str())).collect(),
        Value::String(s) => s.chars().map(|c| Value::from(c.to_string())).collect(),
        other => {
            return Err(ExecError::InvalidArguments(format!(
                "'{}' object is not iterable",
                python::type_name(other)
            )));
        }
    };
    let mut ret = Value::Object(Map::new());
    for obj in &items {
        ret = dict_merge(&ret, obj, &strategy, &renderer, merge_lists)?;
    }
    Ok(ret)
}

const SERIALIZE_DOC: &str = "Serialize a Python object using one of the available
serializers: ``json``, ``yaml`` and ``python`` in saltq. Keyword arguments go to the
serializer (``sort_keys``, ``indent``, ``default_flow_style``).

CLI Example:

.. code-block:: bash

    salt '*' slsutil.serialize json '{foo: Foo!}'

Jinja Example:

.. code-block:: jinja

    {% set json_string = salt['slsutil.serialize']('json',
        {'foo': 'Foo!'}) %}
";

fn bool_opt(opts: &Map<String, Value>, key: &str, default: bool) -> bool {
    opts.get(key).map_or(default, truthy)
}

async fn serialize(call: Call) -> Result<Value, ExecError> {
    let serializer = python::str(call.arg("serializer"));
    let obj = call.arg("obj");
    let opts = options(&call);
    let text = match serializer.as_str() {
        "json" => {
            let indent = match opts.get("indent") {
                None | Some(Value::Null) => None,
                Some(v) => Some(v.as_u64().ok_or_else(|| {
                    ExecError::execution(format!(
                        "slsutil.serialize json: indent must be a number, not {v}"
                    ))
                })? as usize),
            };
            let mut dumps = Dumps::salt();
            dumps.indent = indent;
            dumps.sort_keys = bool_opt(&opts, "sort_keys", false);
            python::dumps(obj, &dumps)
        }
        "yaml" => {
            let flow = match opts.get("default_flow_style") {
                None | Some(Value::Null) => None,
                Some(v) => Some(truthy(v)),
            };
            let text =
                saltq_semantics::output::yaml_dump(obj, flow, bool_opt(&opts, "sort_keys", true));
            match text.strip_suffix("\n...\n") {
                Some(t) => t.to_owned(),
                None => text.strip_suffix('\n').unwrap_or(&text).to_owned(),
            }
        }
        "python" => python::pformat(obj),
        other => return Err(not_found(other)),
    };
    Ok(Value::String(text))
}

fn not_found(serializer: &str) -> ExecError {
    match serializer {
        "configparser" | "keyvalue" | "msgpack" | "plist" | "toml" | "yamlex" => {
            ExecError::execution(format!(
                "Serializer '{serializer}' is not available in saltq (json, yaml and python are)"
            ))
        }
        _ => ExecError::execution(format!("Serializer '{serializer}' not found.")),
    }
}

const DESERIALIZE_DOC: &str = "Deserialize a Python object using one of the available
serializers: ``json`` and ``yaml`` in saltq.

CLI Example:

.. code-block:: bash

    salt '*' slsutil.deserialize 'json' '{\"foo\": \"Foo!\"}'

Jinja Example:

.. code-block:: jinja

    {% set python_object = salt['slsutil.deserialize']('json',
        '{\"foo\": \"Foo!\"}') %}
";

async fn deserialize(call: Call) -> Result<Value, ExecError> {
    let serializer = python::str(call.arg("serializer"));
    let text = match call.arg("stream_or_string") {
        Value::String(s) => s.clone(),
        other => python::str(other),
    };
    match serializer.as_str() {
        "json" => serde_json::from_str(&text).map_err(|e| {
            ExecError::exception(
                "DeserializationError",
                format!("Could not deserialize JSON: {e}"),
            )
        }),
        "yaml" => {
            let v: Value = serde_yaml_ng::from_str(&text).map_err(|e| {
                ExecError::exception(
                    "DeserializationError",
                    format!("Could not deserialize YAML: {e}"),
                )
            })?;
            Ok(v)
        }
        "python" => Err(ExecError::execution(
            "Serializer 'python' does not implement deserialize.",
        )),
        other => Err(not_found(other)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::dict_merge;

    #[test]
    fn merge_strategies_follow_dictupdate() {
        let a = json!({"a": {"x": 1, "l": [1]}, "b": 2});
        let b = json!({"a": {"y": 2, "l": [1, 2]}, "c": 3});
        assert_eq!(
            dict_merge(&a, &b, "smart", "yaml", false).unwrap(),
            json!({"a": {"x": 1, "y": 2, "l": [1, 2]}, "b": 2, "c": 3})
        );
        assert_eq!(
            dict_merge(&a, &b, "list", "yaml", false).unwrap(),
            json!({"a": [{"x": 1, "l": [1]}, {"y": 2, "l": [1, 2]}], "b": 2})
        );
        assert!(dict_merge(&json!([]), &b, "recurse", "yaml", false).is_err());
    }
}
