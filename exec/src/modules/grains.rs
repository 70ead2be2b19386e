//! Salt's `grains` module: reads the minion's grains.

use serde_json::{Map, Value};

use crate::error::ExecError;
use crate::pyish::{is_true, py_str, traverse};
use crate::spec::{Call, Function, Lit, Param};

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
];

/// Grains whose values `sanitize=True` masks, and how (Salt's `_SANITIZERS`).
fn sanitize(key: &str, value: &Value) -> Option<Value> {
    let masked = match key {
        "serialnumber" => {
            let s = py_str(value);
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

const GET_DOC: &str = "Return the named grain, or ``default`` (an empty string unless given) when
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
";

async fn get(call: Call) -> Result<Value, ExecError> {
    let key = py_str(call.arg("key"));
    let delimiter = py_str(call.arg("delimiter"));
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
        .map(py_str)
        .unwrap_or_else(|| ":".to_owned());
    let grains = call.ctx.grains();
    let mut out = Map::new();
    for key in call.varargs().iter().map(py_str) {
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

    #[test]
    fn serial_numbers_keep_three_quarters() {
        assert_eq!(
            super::sanitize("serialnumber", &json!("ABCDEFGH")),
            Some(json!("ABCDEFXX"))
        );
    }
}
