//! Salt's `event` module: `event.send` and `event.fire_master` put an event on the master's
//! bus through the minion's [`EventSink`](crate::EventSink).

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, truthy};

use crate::error::ExecError;

use crate::spec::{Call, Function, Lit, Param};

/// The `event` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("event.fire_master", handler!(fire_master))
        .params(&[
            Param::req("data"),
            Param::req("tag"),
            Param::opt("preload", Lit::None),
        ])
        .doc(FIRE_MASTER_DOC),
    Function::new("event.send", handler!(send))
        .params(&[
            Param::req("tag"),
            Param::opt("data", Lit::None),
            Param::opt("preload", Lit::None),
            Param::opt("with_env", Lit::Bool(false)),
            Param::opt("with_grains", Lit::Bool(false)),
            Param::opt("with_pillar", Lit::Bool(false)),
            Param::opt("with_env_opts", Lit::Bool(false)),
        ])
        .kwargs()
        .doc(SEND_DOC),
];

/// Sends the event; `False` when the minion has no way to reach the master.
fn fire(call: &Call, tag: &str, data: Value) -> Value {
    match &call.ctx.events {
        Some(sink) => {
            sink.send(tag, data);
            Value::Bool(true)
        }
        None => Value::Bool(false),
    }
}

const FIRE_MASTER_DOC: &str = "Fire an event on the master's event bus with this data and tag;
``True`` once handed to the minion's connection

CLI Example:

.. code-block:: bash

    salt '*' event.fire_master '{\"data\":\"my event data\"}' 'tag'
";

async fn fire_master(call: Call) -> Result<Value, ExecError> {
    Ok(fire(
        &call,
        &python::str(call.arg("tag")),
        call.arg("data").clone(),
    ))
}

/// Salt's `_dict_subset`: the entries of `all` whose keys are listed.
fn subset(keys: &Value, all: &Value) -> Value {
    let wanted: Vec<String> = keys
        .as_array()
        .map(|k| k.iter().map(python::str).collect())
        .unwrap_or_default();
    Value::Object(
        all.as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| wanted.contains(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default(),
    )
}

/// `with_env`, `with_grains`, `with_pillar`: everything (`True`) or the keys listed.
fn include(flag: &Value, all: Value) -> Option<Value> {
    match flag {
        Value::Array(_) => Some(subset(flag, &all)),
        other if truthy(other) => Some(all),
        _ => None,
    }
}

const SEND_DOC: &str = "Send an event to the master's event bus. The data is ``data`` plus the
keyword arguments, with the minion's environment (``with_env``), grains (``with_grains``)
or pillar (``with_pillar``) added when asked: ``True`` for all of it, a list for some keys.

CLI Example:

.. code-block:: bash

    salt '*' event.send 'myco/mytag' foo=Foo bar=Bar
    salt '*' event.send 'myco/mytag' '{foo: Foo, bar: Bar}' with_grains='[os, id]'
";

async fn send(call: Call) -> Result<Value, ExecError> {
    let mut data = Map::new();
    let env: Map<String, Value> = std::env::vars().map(|(k, v)| (k, json!(v))).collect();
    if let Some(v) = include(call.arg("with_env"), Value::Object(env)) {
        data.insert("environ".into(), v);
    }
    if let Some(v) = include(call.arg("with_grains"), call.ctx.grains()) {
        data.insert("grains".into(), v);
    }
    if let Some(v) = include(call.arg("with_pillar"), call.ctx.pillar()) {
        data.insert("pillar".into(), v);
    }
    if truthy(call.arg("with_env_opts")) {
        data.insert(
            "saltenv".into(),
            call.ctx.opt("saltenv").cloned().unwrap_or(json!("base")),
        );
        data.insert(
            "pillarenv".into(),
            call.ctx.opt("pillarenv").cloned().unwrap_or(Value::Null),
        );
    }
    data.extend(call.kwargs().iter().map(|(k, v)| (k.clone(), v.clone())));
    if let Value::Object(given) = call.arg("data") {
        data.extend(given.clone());
    }
    Ok(fire(
        &call,
        &python::str(call.arg("tag")),
        Value::Object(data),
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::{Value, json};

    use crate::context::EventSink;
    use crate::testutil::{ctx, run_in};

    /// Records the events it is given, in place of the minion's connection.
    #[derive(Default)]
    struct Sink(Mutex<Vec<(String, Value)>>);

    impl EventSink for Sink {
        fn send(&self, tag: &str, data: Value) {
            if let Ok(mut events) = self.0.lock() {
                events.push((tag.to_owned(), data));
            }
        }
    }

    #[tokio::test]
    async fn events_reach_the_sink() {
        let sink = Arc::new(Sink::default());
        let c = ctx().with_events(sink.clone());
        let out = run_in(
            &c,
            "event.fire_master",
            json!([{"data": "my event data"}, "tag"]),
            json!({}),
        )
        .await;
        assert_eq!(out.ret, json!(true));
        let out = run_in(
            &c,
            "event.send",
            json!(["myco/mytag"]),
            json!({"foo": "Foo", "with_grains": ["os", "id"]}),
        )
        .await;
        assert_eq!(out.ret, json!(true));
        let out = run_in(
            &c,
            "event.send",
            json!(["myco/other", {"a": 1}]),
            json!({"with_pillar": true, "with_env_opts": true}),
        )
        .await;
        assert_eq!(out.ret, json!(true));
        let events = sink.0.lock().map(|e| e.clone()).unwrap_or_default();
        assert_eq!(
            events[0],
            ("tag".to_owned(), json!({"data": "my event data"}))
        );
        let (tag, data) = &events[1];
        assert_eq!(tag, "myco/mytag");
        assert_eq!(data["grains"], json!({"id": "labminion", "os": "Debian"}));
        assert_eq!(data["foo"], json!("Foo"));
        assert!(
            data.get("__pub_jid").is_some(),
            "Salt passes the __pub_ keys on too"
        );
        let (_, data) = &events[2];
        assert_eq!(data["a"], json!(1));
        assert_eq!(data["saltenv"], json!("base"));
        assert_eq!(data["pillar"]["list"], json!([1, 2]));
        // Without a connection to the master, Salt's fire_master answers False.
        let out = run_in(&ctx(), "event.fire_master", json!([{}, "tag"]), json!({})).await;
        assert_eq!(out.ret, json!(false));
    }
}
