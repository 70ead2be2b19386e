//! Salt's `config` module: looks a key up in the minion's config, then its grains, then its
//! pillar (and the pillar's `master` dict), then Salt's module defaults.

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, fnmatch, truthy};

use crate::error::ExecError;
use crate::modules::pillar::merge_into;
use crate::spec::{Call, Function, Lit, Param};
use saltq_semantics::target::traverse;

/// The `config` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("config.get", handler!(get))
        .params(&[
            Param::req("key"),
            Param::opt("default", Lit::Str("")),
            Param::opt("delimiter", Lit::Str(":")),
            Param::opt("merge", Lit::None),
            Param::opt("omit_opts", Lit::Bool(false)),
            Param::opt("omit_pillar", Lit::Bool(false)),
            Param::opt("omit_master", Lit::Bool(false)),
            Param::opt("omit_grains", Lit::Bool(false)),
        ])
        .doc(GET_DOC),
    Function::new("config.option", handler!(option))
        .params(&[
            Param::req("value"),
            Param::opt("default", Lit::None),
            Param::opt("omit_opts", Lit::Bool(false)),
            Param::opt("omit_grains", Lit::Bool(false)),
            Param::opt("omit_pillar", Lit::Bool(false)),
            Param::opt("omit_master", Lit::Bool(false)),
            Param::opt("omit_all", Lit::Bool(false)),
            Param::opt("wildcard", Lit::Bool(false)),
        ])
        .doc(OPTION_DOC),
];

/// Salt's module defaults (`DEFAULTS` in `salt/modules/config.py`) that concern saltq's
/// modules.
fn defaults() -> Value {
    json!({
        "test.foo": "unconfigured",
        "hosts.file": "/etc/hosts",
        "aliases.file": "/etc/aliases",
    })
}

/// The four sources in Salt's order, each with the argument that leaves it out.
fn sources(call: &Call) -> [(&'static str, Value); 4] {
    let pillar = call.ctx.pillar();
    let master = pillar.get("master").cloned().unwrap_or_else(|| json!({}));
    [
        ("omit_opts", (*call.ctx.opts).clone()),
        ("omit_grains", call.ctx.grains()),
        ("omit_pillar", pillar),
        ("omit_master", master),
    ]
}

const GET_DOC: &str = "Return a configuration value, looked up in the minion config, then the
grains, then the pillar, then the pillar's ``master`` dict, then Salt's module defaults;
``default`` when none has it. Nested keys are separated by ``delimiter`` (``:``).

:param merge: ``recurse`` or ``overwrite``: merge the dicts found in every source
    (the config winning over the grains, over the pillar, ...) instead of taking the first.

:param omit_opts: Skip the minion config. ``omit_grains``, ``omit_pillar`` and
    ``omit_master`` skip the other sources.

CLI Example:

.. code-block:: bash

    salt '*' config.get pkg:apache
    salt '*' config.get lxc.container_profile:centos merge=recurse
";

async fn get(call: Call) -> Result<Value, ExecError> {
    let key = python::str(call.arg("key"));
    let delimiter = python::str(call.arg("delimiter"));
    if call.opt_arg("merge").is_some() {
        // Lowest first: defaults, pillar's master dict, pillar, grains, opts.
        let mut data = defaults().as_object().cloned().unwrap_or_default();
        for (_, source) in sources(&call).into_iter().rev() {
            if let Value::Object(m) = source {
                merge_into(&mut data, &m, false);
            }
        }
        let data = Value::Object(data);
        return Ok(traverse(&data, &key, &delimiter)
            .cloned()
            .unwrap_or_else(|| call.arg("default").clone()));
    }
    let consulted = sources(&call)
        .into_iter()
        .filter(|(omit, _)| !truthy(call.arg(omit)))
        .map(|(_, data)| data)
        .chain(std::iter::once(defaults()));
    for data in consulted {
        if let Some(found) = traverse(&data, &key, &delimiter) {
            return Ok(found.clone());
        }
    }
    Ok(call.arg("default").clone())
}

const OPTION_DOC: &str = "Return the value of a top-level option: from the minion config, then the
grains, then the pillar, then the pillar's ``master`` dict, then Salt's module defaults.
Without a match, ``default`` (an empty string, or ``{}`` with ``wildcard``).

:param wildcard: Treat ``value`` as a glob and return a dict of every matching option, the
    config winning over the grains, over the pillar.

:param omit_all: Skip every source but the defaults. ``omit_opts``, ``omit_grains``,
    ``omit_pillar`` and ``omit_master`` skip one.

CLI Example:

.. code-block:: bash

    salt '*' config.option redis.host
    salt '*' config.option 'mine_*' wildcard=True
";

async fn option(call: Call) -> Result<Value, ExecError> {
    let value = python::str(call.arg("value"));
    let omit_all = truthy(call.arg("omit_all"));
    let wildcard = truthy(call.arg("wildcard"));
    let default = match call.arg("default") {
        Value::Null if wildcard => json!({}),
        Value::Null => json!(""),
        other => other.clone(),
    };
    let consulted: Vec<Value> = sources(&call)
        .into_iter()
        .filter(|(omit, _)| !omit_all && !truthy(call.arg(omit)))
        .map(|(_, data)| data)
        .collect();
    if !wildcard {
        let found = consulted
            .iter()
            .chain(std::iter::once(&defaults()))
            .find_map(|data| data.get(&value).cloned());
        return Ok(found.unwrap_or(default));
    }
    let mut out = Map::new();
    for data in consulted.iter().rev() {
        for (k, v) in data.as_object().into_iter().flatten() {
            if fnmatch(k, &value) {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    for (k, v) in defaults().as_object().into_iter().flatten() {
        if fnmatch(k, &value) && !out.contains_key(k) {
            out.insert(k.clone(), v.clone());
        }
    }
    Ok(if out.is_empty() {
        default
    } else {
        Value::Object(out)
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use crate::testutil::{ctx, run_in};

    #[tokio::test]
    async fn lookups_follow_salts_order() {
        let mut c = ctx();
        c.opts = Arc::new(
            json!({"id": "labminion", "os": "FromOpts", "mine_interval": 60,
                                 "nested": {"a": {"b": 1}}}),
        );
        *c.pillar.write().unwrap_or_else(|e| e.into_inner()) = json!({
            "app": {"port": 8080}, "os": "FromPillar", "roles": ["pillar"],
            "nested": {"a": {"c": 2}}, "master": {"only_master": true}, "mine_pillar": 1,
        });
        // (function, args, kwargs, return) as salt 3007.8 answers with the same data.
        let cases = [
            ("config.get", json!(["os"]), json!({}), json!("FromOpts")),
            (
                "config.get",
                json!(["os"]),
                json!({"omit_opts": true}),
                json!("Debian"),
            ),
            (
                "config.get",
                json!(["os"]),
                json!({"omit_opts": true, "omit_grains": true}),
                json!("FromPillar"),
            ),
            ("config.get", json!(["roles"]), json!({}), json!(["web"])),
            ("config.get", json!(["app:port"]), json!({}), json!(8080)),
            (
                "config.get",
                json!(["app|port"]),
                json!({"delimiter": "|"}),
                json!(8080),
            ),
            ("config.get", json!(["only_master"]), json!({}), json!(true)),
            (
                "config.get",
                json!(["test.foo"]),
                json!({}),
                json!("unconfigured"),
            ),
            ("config.get", json!(["nosuch"]), json!({}), json!("")),
            (
                "config.get",
                json!(["nosuch", "dflt"]),
                json!({}),
                json!("dflt"),
            ),
            (
                "config.get",
                json!(["nested"]),
                json!({}),
                json!({"a": {"b": 1}}),
            ),
            (
                "config.get",
                json!(["nested"]),
                json!({"merge": "recurse"}),
                json!({"a": {"c": 2, "b": 1}}),
            ),
            ("config.option", json!(["os"]), json!({}), json!("FromOpts")),
            (
                "config.option",
                json!(["app"]),
                json!({}),
                json!({"port": 8080}),
            ),
            ("config.option", json!(["app:port"]), json!({}), json!("")),
            (
                "config.option",
                json!(["os"]),
                json!({"omit_all": true}),
                json!(""),
            ),
            (
                "config.option",
                json!(["test.foo"]),
                json!({"omit_all": true}),
                json!("unconfigured"),
            ),
            (
                "config.option",
                json!(["mine_*"]),
                json!({"wildcard": true}),
                json!({"mine_pillar": 1, "mine_interval": 60}),
            ),
            (
                "config.option",
                json!(["zz*"]),
                json!({"wildcard": true}),
                json!({}),
            ),
        ];
        for (fun, args, kwargs, want) in cases {
            let out = run_in(&c, fun, args.clone(), kwargs.clone()).await;
            assert_eq!(out.ret, want, "{fun} {args} {kwargs}");
            assert_eq!(out.retcode, 0);
        }
    }
}
