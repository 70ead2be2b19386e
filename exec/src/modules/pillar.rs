//! Salt's `pillar` module: reads the minion's in-memory pillar.
//!
//! Salt's `pillar.items` asks the master for a freshly compiled pillar, and `pillarenv` /
//! `saltenv` select another environment; saltq answers from the pillar the minion holds
//! (refreshed with `saltutil.refresh_pillar`) and accepts those arguments without effect.

use serde_json::{Map, Value};

use saltq_semantics::python::{self, truthy};

use crate::error::ExecError;
use crate::spec::{Call, Function, Lit, Param};
use saltq_semantics::target::traverse;

/// The `pillar` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("pillar.get", handler!(get))
        .params(&[
            Param::req("key"),
            Param::opt("default", Lit::NotSet),
            Param::opt("merge", Lit::Bool(false)),
            Param::opt("merge_nested_lists", Lit::None),
            Param::opt("delimiter", Lit::Str(":")),
            Param::opt("pillarenv", Lit::None),
            Param::opt("saltenv", Lit::None),
        ])
        .doc(GET_DOC),
    Function::new("pillar.item", handler!(item))
        .varargs()
        .params(&[
            Param::opt("default", Lit::None).kwonly(),
            Param::opt("delimiter", Lit::None).kwonly(),
            Param::opt("pillarenv", Lit::None).kwonly(),
            Param::opt("saltenv", Lit::None).kwonly(),
        ])
        .doc(ITEM_DOC),
    Function::new("pillar.keys", handler!(keys))
        .params(&[Param::req("key"), Param::opt("delimiter", Lit::Str(":"))])
        .doc(KEYS_DOC),
    Function::new("pillar.raw", handler!(raw))
        .params(&[Param::opt("key", Lit::None)])
        .doc(RAW_DOC),
    Function::new("pillar.items", handler!(items))
        .varargs()
        .params(&[
            Param::opt("pillar", Lit::None).kwonly(),
            Param::opt("pillar_enc", Lit::None).kwonly(),
            Param::opt("pillarenv", Lit::None).kwonly(),
            Param::opt("saltenv", Lit::None).kwonly(),
        ])
        .doc(ITEMS_DOC),
    Function::new("pillar.data", handler!(items))
        .varargs()
        .params(&[
            Param::opt("pillar", Lit::None).kwonly(),
            Param::opt("pillar_enc", Lit::None).kwonly(),
            Param::opt("pillarenv", Lit::None).kwonly(),
            Param::opt("saltenv", Lit::None).kwonly(),
        ])
        .doc(DATA_DOC),
    Function::new("pillar.ls", handler!(ls))
        .varargs()
        .params(&[
            Param::opt("pillar", Lit::None).kwonly(),
            Param::opt("pillar_enc", Lit::None).kwonly(),
            Param::opt("pillarenv", Lit::None).kwonly(),
            Param::opt("saltenv", Lit::None).kwonly(),
        ])
        .doc(LS_DOC),
    Function::new("pillar.obfuscate", handler!(obfuscate))
        .varargs()
        .params(&[
            Param::opt("pillar", Lit::None).kwonly(),
            Param::opt("pillar_enc", Lit::None).kwonly(),
            Param::opt("pillarenv", Lit::None).kwonly(),
            Param::opt("saltenv", Lit::None).kwonly(),
        ])
        .doc(OBFUSCATE_DOC),
    Function::new("pillar.fetch", handler!(get))
        .params(&[
            Param::req("key"),
            Param::opt("default", Lit::NotSet),
            Param::opt("merge", Lit::Bool(false)),
            Param::opt("merge_nested_lists", Lit::None),
            Param::opt("delimiter", Lit::Str(":")),
            Param::opt("pillarenv", Lit::None),
            Param::opt("saltenv", Lit::None),
        ])
        .doc(FETCH_DOC),
    Function::new("pillar.ext", handler!(ext))
        .params(&[Param::req("external"), Param::opt("pillar", Lit::None)])
        .doc(EXT_DOC),
    Function::new("pillar.file_exists", handler!(file_exists))
        .params(&[Param::req("path"), Param::opt("saltenv", Lit::None)])
        .doc(FILE_EXISTS_DOC),
];

const LS_DOC: &str = "Return the top-level keys of the pillar (``pillar.items`` keys), in order.

CLI Example:

.. code-block:: bash

    salt '*' pillar.ls
";

async fn ls(call: Call) -> Result<Value, ExecError> {
    Ok(match items(call).await? {
        Value::Object(m) => m.keys().cloned().map(Value::String).collect(),
        _ => Value::Array(Vec::new()),
    })
}

const OBFUSCATE_DOC: &str = "Return the pillar with every value replaced by its type
(``<str>``, ``<int>``, ...), keeping its structure: safe to show without its secrets.

CLI Example:

.. code-block:: bash

    salt '*' pillar.obfuscate
";

async fn obfuscate(call: Call) -> Result<Value, ExecError> {
    fn inner(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), inner(v))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(inner).collect()),
            other => Value::String(format!("<{}>", python::type_name(other))),
        }
    }
    Ok(inner(&items(call).await?))
}

const EXT_DOC: &str = "Generate the pillar and apply an explicit external pillar.

external
    A single ext_pillar to add to the ext_pillar configuration, as one section of the
    ``ext_pillar`` configuration: a mapping of the source's name to its arguments (a string
    is read as YAML). The master compiles the pillar with it after its configured sources;
    only the sources listed in the master's ``on_demand_ext_pillar`` (default ``libvirt``,
    ``virtkey``) may be named.

pillar : None
    If specified, allows for a dictionary of pillar data to be made available to pillar and
    ext_pillar rendering. These pillar variables will also override any variables of the
    same name in pillar or ext_pillar.

CLI Examples:

.. code-block:: bash

    salt '*' pillar.ext '{libvirt: _}'
    salt '*' pillar.ext '{cmd_yaml: cat /etc/extra.yaml}' pillar='{role: web}'
";

/// Salt's `pillar.ext`: the master (or, masterless, the minion's own tree) compiles the
/// pillar now with `external` added to `ext_pillar`; the refusal when `on_demand_ext_pillar`
/// does not allow a source is an error in Salt's words (Salt only logs it on the master and
/// answers the plain pillar).
async fn ext(call: Call) -> Result<Value, ExecError> {
    let external = match call.arg("external") {
        Value::String(text) => serde_yaml_ng::from_str::<Value>(text)
            .map_err(|e| ExecError::invocation(format!("external is not valid YAML: {e}")))?,
        other => other.clone(),
    };
    let pillar_override = match call.arg("pillar") {
        Value::Null => Map::new(),
        Value::Object(m) => m.clone(),
        _ => {
            return Err(ExecError::invocation(
                "Pillar data must be formatted as a dictionary",
            ));
        }
    };
    let Some(client) = call.ctx.pillar_client.clone() else {
        return Err(ExecError::execution(
            "pillar.ext needs the master's pillar compiler (or a masterless minion's pillar \
             tree), which this call cannot reach",
        ));
    };
    client
        .compile_ext(external, pillar_override)
        .await
        .map_err(ExecError::execution)
}

const FILE_EXISTS_DOC: &str = "Whether ``path`` (relative) exists under one of the
``pillar_roots`` of this minion's configuration (of ``saltenv`` only, when given): meant for
masterless minions and the master.

CLI Example:

.. code-block:: bash

    salt '*' pillar.file_exists foo/bar.sls
";

async fn file_exists(call: Call) -> Result<Value, ExecError> {
    let path = python::str(call.arg("path"));
    let roots = match call.ctx.opt("pillar_roots") {
        Some(Value::Object(m)) if !m.is_empty() => m.clone(),
        _ => {
            return Err(ExecError::execution(
                "No pillar_roots found. Are you running this on the master?",
            ));
        }
    };
    let envs: Vec<(&String, &Value)> = match call.opt_arg("saltenv").filter(|v| truthy(v)) {
        Some(env) => match roots.get_key_value(&python::str(env)) {
            Some(kv) => vec![kv],
            None => return Ok(Value::Bool(false)),
        },
        None => roots.iter().collect(),
    };
    for (_, dirs) in envs {
        for dir in dirs.as_array().into_iter().flatten() {
            let full = std::path::Path::new(&python::str(dir)).join(&path);
            if full.is_file() {
                return Ok(Value::Bool(true));
            }
        }
    }
    Ok(Value::Bool(false))
}

macro_rules! get_doc {
    () => {
        "Return the named value from the minion's in-memory pillar, or ``default``
when the key is not there (an empty string unless given, or an error when the minion sets
``pillar_raise_on_missing``).

With ``merge=True`` and a dict or list default, the pillar value is merged into the default.

The key may reach into nested dicts and lists with a ``:`` delimiter: with pillar
``{'pkg': {'apache': 'httpd'}}`` the key ``pkg:apache`` gives ``httpd``.

CLI Example:

.. code-block:: bash

    salt '*' pillar.get pkg:apache
    salt '*' pillar.get abc::def|ghi delimiter='|'
"
    };
}

const GET_DOC: &str = get_doc!();

/// Salt's `alias_function` doc: a line naming the original, then its doc.
const FETCH_DOC: &str = concat!("\nThis function is an alias of ``get``.\n", get_doc!());

async fn get(call: Call) -> Result<Value, ExecError> {
    let key = python::str(call.arg("key"));
    let delimiter = python::str(call.arg("delimiter"));
    let pillar = call.ctx.pillar();
    let found = traverse(&pillar, &key, &delimiter).cloned();
    let default = call.arg("default");
    let not_set = *default == Lit::NotSet.to_value();
    if truthy(call.arg("merge")) {
        let merge_lists = match call.arg("merge_nested_lists") {
            Value::Null => call.ctx.opt("pillar_merge_lists").is_some_and(truthy),
            v => truthy(v),
        };
        match (default, &found) {
            (Value::Object(d), Some(Value::Object(f))) => {
                let mut merged = d.clone();
                merge_into(&mut merged, f, merge_lists);
                return Ok(Value::Object(merged));
            }
            (Value::Object(d), None) => return Ok(Value::Object(d.clone())),
            (Value::Array(d), Some(Value::Array(f))) => {
                let mut merged = d.clone();
                merged.extend(f.iter().filter(|x| !d.contains(x)).cloned());
                return Ok(Value::Array(merged));
            }
            (Value::Array(d), None) => return Ok(Value::Array(d.clone())),
            // Salt logs that it cannot merge and falls through to a plain lookup.
            _ => {}
        }
    }
    match found {
        Some(v) => Ok(v),
        None if not_set && call.ctx.opt("pillar_raise_on_missing").is_some_and(truthy) => {
            Err(ExecError::exception(
                "KeyError",
                python::str_repr(&format!("Pillar key not found: {key}")),
            ))
        }
        None if not_set => Ok(Value::from("")),
        None => Ok(default.clone()),
    }
}

/// Salt's `dictupdate.update(dest, upd, merge_lists)`: nested dicts merge, other values are
/// replaced, lists are concatenated when `merge_lists`.
pub fn merge_into(dest: &mut Map<String, Value>, upd: &Map<String, Value>, merge_lists: bool) {
    for (key, new) in upd {
        match (dest.get_mut(key), new) {
            (Some(Value::Object(d)), Value::Object(n)) => merge_into(d, n, merge_lists),
            (Some(Value::Array(d)), Value::Array(n)) if merge_lists => {
                let extra: Vec<Value> = n.iter().filter(|x| !d.contains(x)).cloned().collect();
                d.extend(extra);
            }
            _ => {
                dest.insert(key.clone(), new.clone());
            }
        }
    }
}

const ITEM_DOC: &str = "Return one or more values from the minion's in-memory pillar as a dict; a
missing key maps to ``default`` (an empty string unless given). Keys may reach into nested
data with ``delimiter`` (``:`` by default).

CLI Examples:

.. code-block:: bash

    salt '*' pillar.item foo
    salt '*' pillar.item foo:bar
    salt '*' pillar.item foo bar baz
";

async fn item(call: Call) -> Result<Value, ExecError> {
    let default = call
        .opt_arg("default")
        .cloned()
        .unwrap_or_else(|| Value::from(""));
    let delimiter = call
        .opt_arg("delimiter")
        .map_or_else(|| ":".to_owned(), python::str);
    Ok(select(&call, &default, &delimiter))
}

fn select(call: &Call, default: &Value, delimiter: &str) -> Value {
    let pillar = call.ctx.pillar();
    let mut out = Map::new();
    for key in call.varargs().iter().map(python::str) {
        let value = traverse(&pillar, &key, delimiter)
            .cloned()
            .unwrap_or_else(|| default.clone());
        out.insert(key, value);
    }
    Value::Object(out)
}

macro_rules! items_doc {
    () => {
        "Return the minion's pillar. Given key names, return only those, as
``pillar.item`` does. A ``pillar`` dict given on the command line is merged over the result.

CLI Example:

.. code-block:: bash

    salt '*' pillar.items
"
    };
}

const ITEMS_DOC: &str = items_doc!();

/// Salt's `alias_function` doc: a line naming the original, then its doc.
const DATA_DOC: &str = concat!("\nThis function is an alias of ``items``.\n", items_doc!());

async fn items(call: Call) -> Result<Value, ExecError> {
    if !call.varargs().is_empty() {
        return Ok(select(&call, &Value::from(""), ":"));
    }
    let mut pillar = match call.ctx.pillar() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    match call.arg("pillar") {
        Value::Null => {}
        Value::Object(over) => merge_into(&mut pillar, over, false),
        _ => {
            return Err(ExecError::invocation(
                "Pillar data must be formatted as a dictionary",
            ));
        }
    }
    Ok(Value::Object(pillar))
}

const KEYS_DOC: &str = "Return the keys of the pillar dict at ``key`` (nested keys separated by
``delimiter``); an error when the key is missing or not a dict.

CLI Example:

.. code-block:: bash

    salt '*' pillar.keys web:sites
";

async fn keys(call: Call) -> Result<Value, ExecError> {
    let key = python::str(call.arg("key"));
    let pillar = call.ctx.pillar();
    match traverse(&pillar, &key, &python::str(call.arg("delimiter"))) {
        None => Err(ExecError::exception(
            "KeyError",
            python::str_repr(&format!("Pillar key not found: {key}")),
        )),
        Some(Value::Object(m)) => Ok(m.keys().cloned().map(Value::String).collect()),
        Some(_) => Err(ExecError::exception(
            "ValueError",
            format!("Pillar value in key {key} is not a dict"),
        )),
    }
}

const RAW_DOC: &str = "Return the minion's in-memory pillar, or one top-level key of it (``{}``
when absent), without asking the master

CLI Example:

.. code-block:: bash

    salt '*' pillar.raw
    salt '*' pillar.raw key='roles'
";

async fn raw(call: Call) -> Result<Value, ExecError> {
    let pillar = call.ctx.pillar();
    Ok(match call.opt_arg("key").filter(|k| truthy(k)) {
        Some(key) => pillar
            .get(python::str(key))
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
        None => pillar,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use crate::testutil::{check, ctx, run_in};

    #[tokio::test]
    async fn returns_match_salt() {
        check("pillar.get", json!(["app:port"]), json!({}), json!(8080), 0).await;
        check(
            "pillar.get",
            json!(["app:hosts:1"]),
            json!({}),
            json!("b"),
            0,
        )
        .await;
        check("pillar.get", json!(["foo", "d"]), json!({}), json!("d"), 0).await;
        check("pillar.get", json!(["foo"]), json!({}), json!(""), 0).await;
        check(
            "pillar.item",
            json!(["foo"]),
            json!({}),
            json!({"foo": ""}),
            0,
        )
        .await;
        check(
            "pillar.item",
            json!(["foo"]),
            json!({"default": "d"}),
            json!({"foo": "d"}),
            0,
        )
        .await;
        check(
            "pillar.item",
            json!(["app|port", "list"]),
            json!({"delimiter": "|"}),
            json!({"app|port": 8080, "list": [1, 2]}),
            0,
        )
        .await;
        check("pillar.items", json!(["x"]), json!({}), json!({"x": ""}), 0).await;
        check(
            "pillar.items",
            json!([]),
            json!({}),
            json!({"app": {"port": 8080, "hosts": ["a", "b"]}, "list": [1, 2]}),
            0,
        )
        .await;
        check(
            "pillar.items",
            json!([]),
            json!({"pillar": {"list": [3], "new": 1}}),
            json!({"app": {"port": 8080, "hosts": ["a", "b"]}, "list": [3], "new": 1}),
            0,
        )
        .await;
    }

    #[tokio::test]
    async fn keys_and_raw() {
        check(
            "pillar.keys",
            json!(["app"]),
            json!({}),
            json!(["port", "hosts"]),
            0,
        )
        .await;
        check(
            "pillar.keys",
            json!(["nosuch"]),
            json!({}),
            json!(
                "The minion function caused an exception: KeyError: 'Pillar key not found: nosuch'"
            ),
            1,
        )
        .await;
        check(
            "pillar.keys",
            json!(["list"]),
            json!({}),
            json!("The minion function caused an exception: ValueError: Pillar value in key list is not a dict"),
            1,
        )
        .await;
        check("pillar.raw", json!(["list"]), json!({}), json!([1, 2]), 0).await;
        check("pillar.raw", json!(["nosuch"]), json!({}), json!({}), 0).await;
        check(
            "pillar.raw",
            json!([]),
            json!({}),
            json!({"app": {"port": 8080, "hosts": ["a", "b"]}, "list": [1, 2]}),
            0,
        )
        .await;
    }

    #[tokio::test]
    async fn ls_obfuscate_fetch_and_file_exists() {
        check("pillar.ls", json!([]), json!({}), json!(["app", "list"]), 0).await;
        // Recorded from Salt 3007.8: `salt-call --local pillar.obfuscate`.
        check(
            "pillar.obfuscate",
            json!([]),
            json!({}),
            json!({"app": {"port": "<int>", "hosts": ["<str>", "<str>"]}, "list": ["<int>", "<int>"]}),
            0,
        )
        .await;
        check(
            "pillar.fetch",
            json!(["app:port"]),
            json!({}),
            json!(8080),
            0,
        )
        .await;
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("top.sls"), "").unwrap();
        let mut c = ctx();
        c.opts = Arc::new(json!({"pillar_roots": {"base": [d.path()]}}));
        let out = run_in(&c, "pillar.file_exists", json!(["top.sls"]), json!({})).await;
        assert_eq!(out.ret, json!(true));
        let out = run_in(&c, "pillar.file_exists", json!(["nope.sls"]), json!({})).await;
        assert_eq!(out.ret, json!(false));
        let out = run_in(
            &c,
            "pillar.file_exists",
            json!(["top.sls"]),
            json!({"saltenv": "dev"}),
        )
        .await;
        assert_eq!(out.ret, json!(false));
        let out = run_in(&ctx(), "pillar.file_exists", json!(["top.sls"]), json!({})).await;
        assert_eq!(
            out.ret,
            json!("ERROR: No pillar_roots found. Are you running this on the master?")
        );
    }

    #[tokio::test]
    async fn merge_defaults() {
        check(
            "pillar.get",
            json!(["app"]),
            json!({"default": {"port": 1, "user": "www"}, "merge": true}),
            json!({"port": 8080, "user": "www", "hosts": ["a", "b"]}),
            0,
        )
        .await;
        check(
            "pillar.get",
            json!(["list"]),
            json!({"default": [0, 1], "merge": true}),
            json!([0, 1, 2]),
            0,
        )
        .await;
        check(
            "pillar.get",
            json!(["nosuch"]),
            json!({"default": {"a": 1}, "merge": true}),
            json!({"a": 1}),
            0,
        )
        .await;
    }

    #[tokio::test]
    async fn raise_on_missing() {
        let mut c = ctx();
        c.opts = Arc::new(json!({"pillar_raise_on_missing": true}));
        let out = run_in(&c, "pillar.get", json!(["foo"]), json!({})).await;
        assert_eq!(
            out.ret,
            json!("The minion function caused an exception: KeyError: 'Pillar key not found: foo'")
        );
        assert_eq!(out.retcode, 1);
        let out = run_in(&c, "pillar.get", json!(["foo", "d"]), json!({})).await;
        assert_eq!(out.ret, json!("d"));
    }
}
