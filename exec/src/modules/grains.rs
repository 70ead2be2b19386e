//! Salt's `grains` module: reads the minion's grains, and sets grains in the minion's grains
//! file (the `grains_file` option, YAML as Salt's `/etc/salt/grains`). A change is made in
//! memory at once and the minion is asked to recompute and re-send its grains.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use saltq_semantics::python::{self, is_true, truthy};

use crate::error::ExecError;
use crate::spec::{Call, Function, Lit, Param};
use saltq_semantics::target::traverse;

/// The `grains` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("grains.get", handler!(get))
        .params(&[
            Param::req("key"),
            Param::opt("default", Lit::Str("")),
            Param::opt("delimiter", Lit::Str(":")),
            Param::opt("ordered", Lit::Bool(true)),
        ])
        .doc(GET_DOC),
    Function::new("grains.fetch", handler!(get))
        .params(&[
            Param::req("key"),
            Param::opt("default", Lit::Str("")),
            Param::opt("delimiter", Lit::Str(":")),
            Param::opt("ordered", Lit::Bool(true)),
        ])
        .doc(FETCH_DOC),
    Function::new("grains.item", handler!(item))
        .varargs()
        .kwargs()
        .outputter("nested")
        .doc(ITEM_DOC),
    Function::new("grains.items", handler!(items))
        .params(&[Param::opt("sanitize", Lit::Bool(false))])
        .outputter("nested")
        .doc(ITEMS_DOC),
    Function::new("grains.ls", handler!(ls)).doc(LS_DOC),
    Function::new("grains.append", handler!(append))
        .params(&[
            Param::req("key"),
            Param::req("val"),
            Param::opt("convert", Lit::Bool(false)),
            Param::opt("delimiter", Lit::Str(":")),
        ])
        .doc(APPEND_DOC),
    Function::new("grains.delval", handler!(delval))
        .params(&[
            Param::req("key"),
            Param::opt("destructive", Lit::Bool(false)),
            Param::opt("force", Lit::Bool(false)),
        ])
        .doc(DELVAL_DOC),
    Function::new("grains.has_value", handler!(has_value))
        .params(&[Param::req("key")])
        .doc(HAS_VALUE_DOC),
    Function::new("grains.remove", handler!(remove))
        .params(&[
            Param::req("key"),
            Param::req("val"),
            Param::opt("delimiter", Lit::Str(":")),
        ])
        .doc(REMOVE_DOC),
    Function::new("grains.set", handler!(set))
        .params(&[
            Param::req("key"),
            Param::opt("val", Lit::Str("")),
            Param::opt("force", Lit::Bool(false)),
            Param::opt("destructive", Lit::Bool(false)),
            Param::opt("delimiter", Lit::Str(":")),
        ])
        .doc(SET_DOC),
    Function::new("grains.setval", handler!(setval))
        .params(&[
            Param::req("key"),
            Param::req("val"),
            Param::opt("destructive", Lit::Bool(false)),
            Param::opt("refresh_pillar", Lit::Bool(true)),
        ])
        .doc(SETVAL_DOC),
];

/// Grains whose values `sanitize=True` masks, and how (Salt's `_SANITIZERS`).
fn sanitize(key: &str, value: &Value) -> Option<Value> {
    let masked = match key {
        "serialnumber" => {
            let s = python::str(value);
            let keep = (s.chars().count() as f64 * 0.75).floor() as usize;
            let masked: String = s
                .chars()
                .enumerate()
                .map(|(i, c)| if i < keep { c } else { 'X' })
                .collect();
            return Some(Value::String(masked));
        }
        "domain" => "DOMAINNAME",
        "fqdn" | "id" => "MINION.DOMAINNAME",
        "host" | "localhost" | "nodename" => "MINION",
        _ => return None,
    };
    Some(Value::from(masked))
}

fn sanitize_all(map: &mut Map<String, Value>) {
    for (key, value) in map.iter_mut() {
        if let Some(masked) = sanitize(key, value) {
            *value = masked;
        }
    }
}

macro_rules! get_doc {
    () => {
        "Return the named grain, or ``default`` (an empty string unless given) when
the minion has no such grain.

The key may reach into nested dicts and lists with a ``:`` delimiter: with grains
``{'pkg': {'apache': 'httpd'}}`` the key ``pkg:apache`` gives ``httpd``.

:param delimiter:
    Another delimiter for keys that contain a colon.

    .. versionadded:: 2014.7.0

:param ordered:
    Accepted for compatibility; dicts keep their order either way.

CLI Example:

.. code-block:: bash

    salt '*' grains.get pkg:apache
    salt '*' grains.get abc::def|ghi delimiter='|'
"
    };
}

const GET_DOC: &str = get_doc!();
const FETCH_DOC: &str = concat!("\nThis function is an alias of ``get``.\n", get_doc!());

async fn get(call: Call) -> Result<Value, ExecError> {
    let key = python::str(call.arg("key"));
    let delimiter = python::str(call.arg("delimiter"));
    let grains = call.ctx.grains();
    Ok(traverse(&grains, &key, &delimiter)
        .cloned()
        .unwrap_or_else(|| call.arg("default").clone()))
}

const ITEM_DOC: &str = "Return one or more grains as a dict; a missing grain maps to ``default``
(an empty string unless given). Keys may reach into nested data with ``delimiter``
(``:`` by default). ``sanitize=True`` masks host names and serial numbers.

CLI Example:

.. code-block:: bash

    salt '*' grains.item os
    salt '*' grains.item os osrelease oscodename
    salt '*' grains.item host sanitize=True
";

async fn item(call: Call) -> Result<Value, ExecError> {
    let default = call
        .kwargs()
        .get("default")
        .cloned()
        .unwrap_or_else(|| Value::from(""));
    let delimiter = call
        .kwargs()
        .get("delimiter")
        .map(python::str)
        .unwrap_or_else(|| ":".to_owned());
    let grains = call.ctx.grains();
    let mut out = Map::new();
    for key in call.varargs().iter().map(python::str) {
        let value = traverse(&grains, &key, &delimiter)
            .cloned()
            .unwrap_or_else(|| default.clone());
        out.insert(key, value);
    }
    if call.kwargs().get("sanitize").is_some_and(is_true) {
        sanitize_all(&mut out);
    }
    Ok(Value::Object(out))
}

const ITEMS_DOC: &str = "Return all of the minion's grains. ``sanitize=True`` masks host names and
serial numbers.

CLI Example:

.. code-block:: bash

    salt '*' grains.items
    salt '*' grains.items sanitize=True
";

async fn items(call: Call) -> Result<Value, ExecError> {
    let mut grains = match call.ctx.grains() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    if is_true(call.arg("sanitize")) {
        sanitize_all(&mut grains);
    }
    Ok(Value::Object(grains))
}

const LS_DOC: &str = "Return the names of all grains, sorted

CLI Example:

.. code-block:: bash

    salt '*' grains.ls
";

async fn ls(call: Call) -> Result<Value, ExecError> {
    let mut keys: Vec<String> = call
        .ctx
        .grains()
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    Ok(keys.into_iter().map(Value::String).collect())
}

const HAS_VALUE_DOC: &str = "Return ``True`` if the grain exists (whatever its value, ``None``
included). Nested keys are separated by ``:``.

CLI Example:

.. code-block:: bash

    salt '*' grains.has_value pkg:apache
";

async fn has_value(call: Call) -> Result<Value, ExecError> {
    let key = python::str(call.arg("key"));
    Ok(Value::Bool(
        traverse(&call.ctx.grains(), &key, ":").is_some(),
    ))
}

/// The grains file: the `grains_file` option.
fn grains_file(call: &Call) -> Result<PathBuf, ExecError> {
    call.ctx
        .opt("grains_file")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| ExecError::execution("the minion has no grains_file to write grains to"))
}

/// Reads the grains file for an update: `{}` when absent or not a dict, Salt's message when
/// it is not YAML.
fn read_for_update(path: &Path) -> Result<Map<String, Value>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => return Err(format!("Unable to read existing grains file: {e}")),
    };
    match serde_yaml_ng::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Ok(Map::new()),
        Err(e) => Err(format!("Unable to read existing grains file: {e}")),
    }
}

/// A copy of `v` with every dict's keys sorted, as PyYAML's `safe_dump` writes them.
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

/// Writes the grains file as YAML through a temporary file renamed into place.
fn write_grains_file(path: &Path, grains: &Map<String, Value>) -> Result<(), ExecError> {
    let fail = |e: &dyn std::fmt::Display| {
        ExecError::execution(format!(
            "Unable to write to grains file at {}: {e}",
            path.display()
        ))
    };
    let text =
        serde_yaml_ng::to_string(&sorted(&Value::Object(grains.clone()))).map_err(|e| fail(&e))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            fail(&e)
        })
}

/// Salt's `grains.setvals`: sets (or with `destructive`, removes for a `None` value) each
/// grain in the grains file and in memory, then asks the minion to refresh its grains.
/// Returns the grains given, or Salt's message when the file cannot be read.
fn setvals(
    call: &Call,
    new: Map<String, Value>,
    destructive: bool,
    refresh_pillar: bool,
) -> Result<Value, ExecError> {
    let path = grains_file(call)?;
    let mut file = match read_for_update(&path) {
        Ok(file) => file,
        Err(msg) => return Ok(Value::String(msg)),
    };
    {
        let mut grains = call
            .ctx
            .grains
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (key, val) in &new {
            if val.is_null() && destructive {
                file.remove(key);
                if let Some(m) = grains.as_object_mut() {
                    m.remove(key);
                }
            } else {
                file.insert(key.clone(), val.clone());
                if let Some(m) = grains.as_object_mut() {
                    m.insert(key.clone(), val.clone());
                }
            }
        }
    }
    write_grains_file(&path, &file)?;
    call.ctx.jobs.refresh_grains();
    if refresh_pillar {
        call.ctx.jobs.refresh_pillar();
    }
    Ok(Value::Object(new))
}

const SETVAL_DOC: &str =
    "Set a grain in the minion's grains file (the ``grains_file`` option) and in
memory, then have the minion re-send its grains. Returns ``{key: val}``.

With ``destructive=True`` a ``None`` value removes the grain. ``refresh_pillar=False`` keeps
the pillar as it is. Grains set in the minion config override the grains file.

CLI Example:

.. code-block:: bash

    salt '*' grains.setval key val
    salt '*' grains.setval key \"{'sub-key': 'val', 'sub-key2': 'val2'}\"
";

async fn setval(call: Call) -> Result<Value, ExecError> {
    let mut new = Map::new();
    new.insert(python::str(call.arg("key")), call.arg("val").clone());
    setvals(
        &call,
        new,
        truthy(call.arg("destructive")),
        truthy(call.arg("refresh_pillar")),
    )
}

const APPEND_DOC: &str = "Append a value to a list grain in the grains file (creating the list when
the grain does not exist). A list value appends each of its items. Nested keys are
separated by ``delimiter``.

:param convert: Turn a grain that is not a list into a list holding it, then append.

CLI Example:

.. code-block:: bash

    salt '*' grains.append key val
    salt '*' grains.append roles webserver convert=True
";

async fn append(call: Call) -> Result<Value, ExecError> {
    let mut key = python::str(call.arg("key"));
    let delimiter = python::str(call.arg("delimiter"));
    let val = call.arg("val").clone();
    let grains = call.ctx.grains();
    let mut current = traverse(&grains, &key, &delimiter)
        .cloned()
        .unwrap_or_else(|| Value::Array(Vec::new()));
    if truthy(call.arg("convert")) && !current.is_array() {
        current = Value::Array(if current.is_null() {
            Vec::new()
        } else {
            vec![current]
        });
    }
    let Value::Array(mut list) = current else {
        return Ok(Value::String(format!("The key {key} is not a valid list")));
    };
    if list.contains(&val) {
        return Ok(Value::String(format!(
            "The val {} was already in the list {key}",
            python::str(&val)
        )));
    }
    match val {
        Value::Array(items) => list.extend(items),
        other => list.push(other),
    }
    let mut value = Value::Array(list);
    while let Some((parent, rest)) = key.rsplit_once(delimiter.as_str()) {
        let mut outer = match traverse(&grains, parent, &delimiter) {
            Some(Value::Object(m)) => Value::Object(m.clone()),
            Some(other) => other.clone(),
            None => Value::Object(Map::new()),
        };
        if let Some(m) = outer.as_object_mut() {
            m.insert(rest.to_owned(), value);
        }
        value = outer;
        key = parent.to_owned();
    }
    let mut new = Map::new();
    new.insert(key, value);
    setvals(&call, new, false, true)
}

const DELVAL_DOC: &str = "Set a grain to ``None`` in the grains file, or with ``destructive=True``
remove it. A dict or list grain is left alone unless ``force=True``. Returns
``{comment, changes, result}``.

CLI Example:

.. code-block:: bash

    salt '*' grains.delval key
    salt '*' grains.delval key destructive=True
";

async fn delval(call: Call) -> Result<Value, ExecError> {
    set_none(
        &call,
        &python::str(call.arg("key")),
        truthy(call.arg("force")),
        truthy(call.arg("destructive")),
    )
}

/// Salt's `grains.set(key, None, force, destructive)` for a top-level or nested key.
fn set_none(call: &Call, key: &str, force: bool, destructive: bool) -> Result<Value, ExecError> {
    set_value(call, key, Value::Null, force, destructive, ":")
}

/// Salt's `grains.set`: `{comment, changes, result}`. Conservative: a dict or list (existing
/// or given) is replaced only with `force`; nested keys are created on the way.
fn set_value(
    call: &Call,
    key: &str,
    val: Value,
    force: bool,
    destructive: bool,
    delimiter: &str,
) -> Result<Value, ExecError> {
    let answer = |comment: String, changes: Value, result: bool| serde_json::json!({"comment": comment, "changes": changes, "result": result});
    let complex = |v: &Value| v.is_object() || v.is_array();
    let grains = call.ctx.grains();
    let existing = traverse(&grains, key, delimiter);
    if let Some(e) = existing
        && *e == val
        && (!val.is_null() || !destructive)
    {
        return Ok(answer(
            "Grain is already set".into(),
            serde_json::json!({}),
            true,
        ));
    }
    if !existing.is_some_and(Value::is_null) && !force {
        if existing.is_some_and(complex) {
            return Ok(answer(
                format!(
                    "The key '{key}' exists but is a dict or a list. Use 'force=True' to overwrite."
                ),
                serde_json::json!({}),
                false,
            ));
        }
        if complex(&val) && existing.is_some() {
            return Ok(answer(
                format!(
                    "The key '{key}' exists and the given value is a dict or a list. Use \
                     'force=True' to overwrite."
                ),
                serde_json::json!({}),
                false,
            ));
        }
    }
    let mut key = key.to_owned();
    let mut value = val;
    while let Some((parent, rest)) = key.clone().rsplit_once(delimiter) {
        let mut outer = traverse(&grains, parent, delimiter)
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        match &mut outer {
            Value::Object(m) if value.is_null() && destructive => {
                m.remove(rest);
            }
            Value::Object(m) => {
                m.insert(rest.to_owned(), value);
            }
            Value::Array(items) => {
                let mut updated = false;
                for item in items.iter_mut() {
                    if python::str(item) == rest && item.is_string() {
                        *item = serde_json::json!({ rest: value.clone() });
                        updated = true;
                    } else if let Value::Object(m) = item
                        && m.contains_key(rest)
                    {
                        m.insert(rest.to_owned(), value.clone());
                        updated = true;
                    }
                }
                if !updated {
                    items.push(serde_json::json!({ rest: value }));
                }
            }
            other if force || (other.is_string() && python::str(other) == rest) => {
                let mut m = Map::new();
                m.insert(rest.to_owned(), value);
                *other = Value::Object(m);
            }
            other => {
                return Ok(answer(
                    format!(
                        "The key '{parent}' value is '{}', which is different from the provided \
                         key '{rest}'. Use 'force=True' to overwrite.",
                        python::str(other)
                    ),
                    serde_json::json!({}),
                    false,
                ));
            }
        }
        value = outer;
        key = parent.to_owned();
    }
    let mut new = Map::new();
    new.insert(key, value);
    match setvals(call, new, destructive, true)? {
        Value::String(msg) => Ok(answer(msg, serde_json::json!({}), false)),
        changes => Ok(answer(String::new(), changes, true)),
    }
}

const SET_DOC: &str = "Set a key to an arbitrary value. It is used like setval but works with
nested keys.

This function is conservative. It will only overwrite an entry if its value and the given
one are not a list or a dict. The ``force`` parameter is used to allow overwriting in all
cases. With ``destructive``, a key set to ``None`` is removed. Returns
``{comment, changes, result}``.

CLI Example:

.. code-block:: bash

    salt '*' grains.set 'apps:myApp:port' 2209
    salt '*' grains.set 'apps:myApp' '{port: 2209}'
";

async fn set(call: Call) -> Result<Value, ExecError> {
    set_value(
        &call,
        &python::str(call.arg("key")),
        call.arg("val").clone(),
        truthy(call.arg("force")),
        truthy(call.arg("destructive")),
        &python::str(call.arg("delimiter")),
    )
}

const REMOVE_DOC: &str = "Remove a value from a list in the grains config file. Nested keys are
separated by ``delimiter``.

CLI Example:

.. code-block:: bash

    salt '*' grains.remove key val
";

async fn remove(call: Call) -> Result<Value, ExecError> {
    let mut key = python::str(call.arg("key"));
    let delimiter = python::str(call.arg("delimiter"));
    let val = call.arg("val").clone();
    let grains = call.ctx.grains();
    let current = traverse(&grains, &key, &delimiter)
        .cloned()
        .unwrap_or_else(|| Value::Array(Vec::new()));
    let Value::Array(mut list) = current else {
        return Ok(Value::String(format!("The key {key} is not a valid list")));
    };
    let Some(pos) = list.iter().position(|v| *v == val) else {
        return Ok(Value::String(format!(
            "The val {} was not in the list {key}",
            python::str(&val)
        )));
    };
    list.remove(pos);
    let mut value = Value::Array(list);
    while let Some((parent, rest)) = key.clone().rsplit_once(delimiter.as_str()) {
        let mut outer = traverse(&grains, parent, &delimiter)
            .cloned()
            .unwrap_or(Value::Null);
        if let Value::Object(m) = &mut outer {
            m.insert(rest.to_owned(), value);
        }
        value = outer;
        key = parent.to_owned();
    }
    let mut new = Map::new();
    new.insert(key, value);
    setvals(&call, new, false, true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testutil::{check, run};

    #[tokio::test]
    async fn returns_match_salt() {
        // Cases observed on salt 3007.8 with grains roles: [web] set in the minion config.
        check(
            "grains.item",
            json!(["os", "id", "nosuch"]),
            json!({}),
            json!({"os": "Debian", "id": "labminion", "nosuch": ""}),
            0,
        )
        .await;
        check("grains.get", json!(["os"]), json!({}), json!("Debian"), 0).await;
        check("grains.get", json!(["nosuch"]), json!({}), json!(""), 0).await;
        check(
            "grains.get",
            json!(["nosuch", "dflt"]),
            json!({}),
            json!("dflt"),
            0,
        )
        .await;
        check("grains.get", json!(["roles:0"]), json!({}), json!("web"), 0).await;
        check("grains.get", json!(["roles"]), json!({}), json!(["web"]), 0).await;
        check(
            "grains.get",
            json!(["dns:nameservers"]),
            json!({}),
            json!(["10.255.255.53"]),
            0,
        )
        .await;
        check(
            "grains.get",
            json!(["dns,nameservers"]),
            json!({"delimiter": ","}),
            json!(["10.255.255.53"]),
            0,
        )
        .await;
        check(
            "grains.item",
            json!(["nosuch", "dns|nameservers"]),
            json!({"default": null, "delimiter": "|"}),
            json!({"nosuch": null, "dns|nameservers": ["10.255.255.53"]}),
            0,
        )
        .await;
    }

    #[tokio::test]
    async fn items_and_outputter() {
        let out = run("grains.items", json!([])).await;
        assert_eq!(out.ret["roles"], json!(["web"]));
        assert_eq!(out.out, Some("nested"));
        let out = run("grains.item", json!(["os"])).await;
        assert_eq!(out.out, Some("nested"));
        let out = run("grains.get", json!(["os"])).await;
        assert_eq!(out.out, None);
        let out = run("grains.items", json!([true])).await;
        assert_eq!(out.ret["fqdn"], json!("MINION.DOMAINNAME"));
        assert_eq!(out.ret["id"], json!("MINION.DOMAINNAME"));
        assert_eq!(out.ret["host"], json!("MINION"));
        assert_eq!(out.ret["domain"], json!("DOMAINNAME"));
        check(
            "grains.item",
            json!(["host", "os"]),
            json!({"sanitize": true}),
            json!({"host": "MINION", "os": "Debian"}),
            0,
        )
        .await;
        let out = run("grains.ls", json!([])).await;
        assert_eq!(
            out.ret,
            json!(["dns", "domain", "fqdn", "host", "id", "os", "roles"])
        );
    }

    /// A minion that counts the grain refreshes it is asked for.
    #[derive(Default)]
    struct Refreshes(std::sync::atomic::AtomicUsize);

    impl crate::context::JobControl for Refreshes {
        fn running(&self) -> Vec<serde_json::Value> {
            Vec::new()
        }
        fn signal_job(&self, _jid: &str, _signal: i32) -> serde_json::Value {
            json!("")
        }
        fn refresh_grains(&self) -> bool {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            true
        }
        fn refresh_pillar(&self) -> bool {
            true
        }
    }

    #[tokio::test]
    async fn setting_grains_matches_salt() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let file = tmp.path().join("conf/grains");
        let refreshes = std::sync::Arc::new(Refreshes::default());
        let mut c = crate::testutil::ctx();
        c.opts = std::sync::Arc::new(json!({"grains_file": file.display().to_string()}));
        c.jobs = refreshes.clone();
        // (function, args, kwargs, return) in the order they were run with salt-call on
        // salt 3007.8, each answer as Salt gave it.
        let cases = [
            (
                "grains.setval",
                json!(["foo", "bar"]),
                json!({}),
                json!({"foo": "bar"}),
            ),
            (
                "grains.setval",
                json!(["roles", ["a", "b"]]),
                json!({}),
                json!({"roles": ["a", "b"]}),
            ),
            (
                "grains.append",
                json!(["roles", "c"]),
                json!({}),
                json!({"roles": ["a", "b", "c"]}),
            ),
            (
                "grains.append",
                json!(["roles", "c"]),
                json!({}),
                json!("The val c was already in the list roles"),
            ),
            (
                "grains.append",
                json!(["foo", "x"]),
                json!({}),
                json!("The key foo is not a valid list"),
            ),
            (
                "grains.append",
                json!(["newlist", "x"]),
                json!({}),
                json!({"newlist": ["x"]}),
            ),
            ("grains.has_value", json!(["foo"]), json!({}), json!(true)),
            ("grains.has_value", json!(["nope"]), json!({}), json!(false)),
            (
                "grains.delval",
                json!(["foo"]),
                json!({}),
                json!({"comment": "", "changes": {"foo": null}, "result": true}),
            ),
            ("grains.has_value", json!(["foo"]), json!({}), json!(true)),
            (
                "grains.delval",
                json!(["roles"]),
                json!({"destructive": true}),
                json!({"comment": "The key 'roles' exists but is a dict or a list. Use 'force=True' to overwrite.", "changes": {}, "result": false}),
            ),
            (
                "grains.append",
                json!(["a:b:c", "x"]),
                json!({}),
                json!({"a": {"b": {"c": ["x"]}}}),
            ),
            (
                "grains.setval",
                json!(["num", 1]),
                json!({}),
                json!({"num": 1}),
            ),
            (
                "grains.append",
                json!(["num", 2]),
                json!({"convert": true}),
                json!({"num": [1, 2]}),
            ),
            (
                "grains.delval",
                json!(["newlist"]),
                json!({"destructive": true, "force": true}),
                json!({"comment": "", "changes": {"newlist": null}, "result": true}),
            ),
            (
                "grains.delval",
                json!(["foo"]),
                json!({"destructive": true}),
                json!({"comment": "", "changes": {"foo": null}, "result": true}),
            ),
        ];
        for (fun, args, kwargs, want) in cases {
            let out = crate::testutil::run_in(&c, fun, args.clone(), kwargs.clone()).await;
            assert_eq!(out.ret, want, "{fun} {args} {kwargs}");
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert_eq!(
            text,
            "a:\n  b:\n    c:\n    - x\nnum:\n- 1\n- 2\nroles:\n- a\n- b\n- c\n"
        );
        assert_eq!(crate::load_grains_file(&file)["num"], json!([1, 2]));
        // In memory at once, and the minion was asked to re-send its grains on each change.
        assert_eq!(c.grains()["roles"], json!(["a", "b", "c"]));
        assert!(c.grains().get("foo").is_none());
        assert_eq!(refreshes.0.load(std::sync::atomic::Ordering::Relaxed), 10);

        let out = crate::testutil::run_in(
            &crate::testutil::ctx(),
            "grains.setval",
            json!(["k", 1]),
            json!({}),
        )
        .await;
        assert_eq!(
            out.ret,
            json!("ERROR: the minion has no grains_file to write grains to")
        );
    }

    #[test]
    fn serial_numbers_keep_three_quarters() {
        assert_eq!(
            super::sanitize("serialnumber", &json!("ABCDEFGH")),
            Some(json!("ABCDEFXX"))
        );
    }
}
