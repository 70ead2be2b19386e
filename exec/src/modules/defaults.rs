//! Salt's `defaults` module (`salt/modules/defaults.py`): deep merges and copies for
//! formulas, and `defaults.get` over a formula's `defaults.yaml`/`defaults.json`. Called from
//! SLS Jinja, `defaults.merge` and `defaults.update` also change the dict passed in (the
//! renderer writes the result back into it, as Python's shared dicts would have it).

use serde_json::{Map, Value};

use saltq_semantics::python::{self, truthy};
use saltq_semantics::target::traverse;

use crate::error::ExecError;
use crate::modules::pillar::merge_into;
use crate::spec::{Call, Function, Lit, Param};

/// The `defaults` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("defaults.deepcopy", handler!(deepcopy))
        .params(&[Param::req("source")])
        .doc(DEEPCOPY_DOC),
    Function::new("defaults.get", handler!(get))
        .params(&[Param::req("key"), Param::opt("default", Lit::Str(""))])
        .doc(GET_DOC),
    Function::new("defaults.merge", handler!(merge))
        .params(&[
            Param::req("dest"),
            Param::req("src"),
            Param::opt("merge_lists", Lit::Bool(false)),
            Param::opt("in_place", Lit::Bool(true)),
            Param::opt("convert_none", Lit::Bool(true)),
        ])
        .doc(MERGE_DOC),
    Function::new("defaults.update", handler!(update))
        .params(&[
            Param::req("dest"),
            Param::req("defaults"),
            Param::opt("merge_lists", Lit::Bool(true)),
            Param::opt("in_place", Lit::Bool(true)),
            Param::opt("convert_none", Lit::Bool(true)),
        ])
        .doc(UPDATE_DOC),
];

/// Salt's `dictupdate.update(dest, upd, merge_lists=...)` on two values, with its error for
/// anything that is not a dict.
pub(crate) fn dict_update(
    dest: &mut Value,
    upd: &Value,
    merge_lists: bool,
) -> Result<(), ExecError> {
    match (dest, upd) {
        (Value::Object(d), Value::Object(u)) => {
            merge_into(d, u, merge_lists);
            Ok(())
        }
        _ => Err(ExecError::InvalidArguments(
            "Cannot update using non-dict types in dictupdate.update()".into(),
        )),
    }
}

const DEEPCOPY_DOC: &str = "Return a deep copy of ``source``: changing the copy leaves the
original as it was (Python binds names to objects, it does not copy them).

It is more typical to use this in a templating language in formulas,
instead of directly on the command-line.

CLI Example:

.. code-block:: bash

    salt '*' defaults.deepcopy '{a: [1, 2]}'
";

async fn deepcopy(call: Call) -> Result<Value, ExecError> {
    Ok(call.arg("source").clone())
}

const MERGE_DOC: &str = "Merge ``src`` into ``dest`` deeply (nested dicts merged, other values
replaced) and return the result.

merge_lists : False
    If True, lists are merged too: the items of ``src``'s list that ``dest``'s lacks are
    appended.

in_place : True
    If True, ``dest`` itself is changed (from a template, the dict passed in); if not, a
    copy is merged and returned.

convert_none : True
    If True, a ``src`` or ``dest`` of None counts as an empty dict (an in-place merge into
    None is a TypeError).

CLI Example:

.. code-block:: bash

    salt '*' defaults.merge '{a: b}' '{d: e}'

It is more typical to use this in a templating language in formulas,
instead of directly on the command-line.
";

async fn merge(call: Call) -> Result<Value, ExecError> {
    let convert_none = truthy(call.arg("convert_none"));
    let in_place = truthy(call.arg("in_place"));
    let mut src = call.arg("src").clone();
    if src.is_null() && convert_none {
        src = Value::Object(Map::new());
    }
    let mut dest = call.arg("dest").clone();
    if dest.is_null() && convert_none {
        if in_place {
            return Err(ExecError::InvalidArguments(
                "Can't perform in-place merge into NoneType".into(),
            ));
        }
        dest = Value::Object(Map::new());
    }
    dict_update(&mut dest, &src, truthy(call.arg("merge_lists")))?;
    Ok(dest)
}

const UPDATE_DOC: &str = "Give every node of ``dest`` (a dict of dicts) the ``defaults``: each
node becomes a deep copy of ``defaults`` with the node's own values merged over it.

.. code-block:: jinja

    {% do salt['defaults.update'](group01.nodes, group01.defaults) %}

merge_lists : True
    If True, lists are merged too instead of replaced.

in_place : True
    If True, ``dest`` itself is changed (from a template, the dict passed in); if not, a
    copy is changed and returned.

convert_none : True
    If True, ``defaults`` (and, when not in place, ``dest``) of None count as empty dicts.

CLI Example:

.. code-block:: bash

    salt '*' defaults.update '{host01: {index: foo}}' '{enabled: True}'
";

async fn update(call: Call) -> Result<Value, ExecError> {
    let convert_none = truthy(call.arg("convert_none"));
    let merge_lists = truthy(call.arg("merge_lists"));
    let mut nodes = call.arg("dest").clone();
    if truthy(call.arg("in_place")) {
        if nodes.is_null() {
            return Err(ExecError::InvalidArguments(
                "Can't perform in-place update into NoneType".into(),
            ));
        }
    } else if nodes.is_null() && convert_none {
        nodes = Value::Object(Map::new());
    }
    let mut defaults = call.arg("defaults").clone();
    if defaults.is_null() && convert_none {
        defaults = Value::Object(Map::new());
    }
    let Value::Object(map) = &mut nodes else {
        return Err(ExecError::exception(
            "AttributeError",
            format!(
                "'{}' object has no attribute 'items'",
                python::type_name(&nodes)
            ),
        ));
    };
    for node in map.values_mut() {
        let mut merged = defaults.clone();
        let mut own = std::mem::take(node);
        if own.is_null() && convert_none {
            own = Value::Object(Map::new());
        }
        dict_update(&mut merged, &own, merge_lists)?;
        *node = merged;
    }
    Ok(nodes)
}

const GET_DOC: &str = "Read a default value from a formula's ``defaults.yaml`` or
``defaults.json``, much as ``pillar.get`` reads the pillar. The first part of the key is
the formula: ``core:users:root`` loads ``salt://core/defaults.yaml`` (else
``salt://core/defaults.json``) and looks up ``users:root`` in it; a key without a colon
returns the whole file. A missing key gives ``default``.

CLI Example:

.. code-block:: bash

    salt '*' defaults.get core:users:root
";

async fn get(call: Call) -> Result<Value, ExecError> {
    let key = python::str(call.arg("key"));
    let (namespace, rest) = match key.split_once(':') {
        Some((ns, rest)) => (ns.to_owned(), Some(rest.to_owned())),
        None => (key.clone(), None),
    };
    let defaults = load(&call, &namespace).await?;
    Ok(match rest.filter(|r| !r.is_empty()) {
        Some(path) => traverse(&defaults, &path, ":")
            .cloned()
            .unwrap_or_else(|| call.arg("default").clone()),
        None => defaults,
    })
}

/// The first of `salt://<formula>/defaults.yaml` and `.json` the fileserver has, loaded
/// (`{}` for an empty file); None when neither exists.
async fn load(call: &Call, formula: &str) -> Result<Value, ExecError> {
    let Some(files) = call.ctx.files.clone() else {
        return Ok(Value::Null);
    };
    let saltenv = call
        .ctx
        .opt("saltenv")
        .and_then(Value::as_str)
        .unwrap_or("base")
        .to_owned();
    for ext in ["yaml", "json"] {
        let path = format!("{formula}/defaults.{ext}");
        let Ok(Some(local)) = files.cache_file(&saltenv, &path).await else {
            continue;
        };
        let text = std::fs::read_to_string(&local).map_err(|e| {
            ExecError::execution(format!(
                "cannot read {} (salt://{path}): {e}",
                local.display()
            ))
        })?;
        let data: Value = if ext == "yaml" {
            serde_yaml_ng::from_str(&text).map_err(|e| {
                ExecError::execution(format!("salt://{path} is not valid YAML: {e}"))
            })?
        } else {
            serde_json::from_str(&text).map_err(|e| {
                ExecError::execution(format!("salt://{path} is not valid JSON: {e}"))
            })?
        };
        return Ok(if truthy(&data) {
            data
        } else {
            Value::Object(Map::new())
        });
    }
    Ok(Value::Null)
}
