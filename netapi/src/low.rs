//! Request bodies to lowstate, as rest_cherrypy reads them: JSON, YAML or form-urlencoded, a
//! mapping being a one-chunk list; then each chunk to a [`Low`] the backend runs.

use serde_json::{Map, Value};

use saltq_semantics::batch::BatchSize;

use crate::backend::{ApiError, Batch, Client, Low};

/// The keys of a chunk that are not keyword arguments of a runner or wheel function.
const RESERVED: &[&str] = &[
    "client",
    "fun",
    "arg",
    "kwarg",
    "token",
    "eauth",
    "username",
    "password",
    "timeout",
    "full_return",
    "tgt",
    "tgt_type",
    "ret",
    "batch",
    "batch_wait",
    "failhard",
    "gather_job_timeout",
    "raw",
];

/// The body's data by its content type; an empty body is `None`.
pub fn parse_body(content_type: &str, body: &[u8]) -> Result<Option<Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let ct = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match ct.as_str() {
        "application/json" => serde_json::from_slice(body)
            .map(Some)
            .map_err(|_| ApiError::bad_request("Invalid JSON document")),
        "application/x-yaml" | "text/yaml" => {
            let v: serde_yaml_ng::Value = serde_yaml_ng::from_slice(body)
                .map_err(|_| ApiError::bad_request("Invalid YAML document"))?;
            serde_json::to_value(v)
                .map(Some)
                .map_err(|_| ApiError::bad_request("Invalid YAML document"))
        }
        "application/x-www-form-urlencoded" | "" => Ok(Some(parse_form(body))),
        other => Err(ApiError {
            status: 415,
            message: format!("Unsupported Media Type: {other}"),
        }),
    }
}

/// A form: repeated keys become lists; `arg` and `kwarg` values are read as YAML scalars, as
/// on Salt's command line.
pub fn parse_form(body: &[u8]) -> Value {
    let mut m: Map<String, Value> = Map::new();
    for (k, v) in form_urlencoded::parse(body) {
        let v = Value::String(v.into_owned());
        match m.get_mut(k.as_ref()) {
            Some(Value::Array(a)) => a.push(v),
            Some(old) => *old = Value::Array(vec![old.take(), v]),
            None => {
                m.insert(k.into_owned(), v);
            }
        }
    }
    if let Some(arg) = m.get_mut("arg") {
        let items = match arg.take() {
            Value::Array(a) => a,
            one => vec![one],
        };
        *arg = Value::Array(items.into_iter().map(yamlify_arg).collect());
    }
    if let Some(kw) = m.get_mut("kwarg") {
        *kw = yamlify_arg(kw.take());
    }
    Value::Object(m)
}

/// Salt's `yamlify_arg` of a string (YAML 1.1, as on Salt's command line: `on` is true,
/// `1:30` is 90), through `saltq_semantics::python::yamlify`; anything else as it is.
fn yamlify_arg(v: Value) -> Value {
    match &v {
        Value::String(s) => saltq_semantics::python::yamlify(s),
        _ => v,
    }
}

/// rest_cherrypy's `lowdata_fmt`: a mapping is one chunk (its `arg` made a list), a list is
/// the chunks; anything else is refused.
pub fn lowstate(data: Option<Value>) -> Result<Vec<Map<String, Value>>, ApiError> {
    let not_list = || ApiError::bad_request("Lowstates must be a list");
    match data {
        Some(Value::Object(mut m)) => {
            if let Some(a) = m.get_mut("arg")
                && !a.is_array()
            {
                *a = Value::Array(vec![a.take()]);
            }
            Ok(vec![m])
        }
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|c| match c {
                Value::Object(m) => Ok(m),
                _ => Err(not_list()),
            })
            .collect(),
        _ => Err(not_list()),
    }
}

fn string(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => Some(
            a.iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| x.to_string())
                })
                .collect::<Vec<_>>()
                .join(","),
        ),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Checks a chunk's client the way Salt's `NetapiClient.run` does (unknown, then disabled),
/// then reads it into a [`Low`].
pub fn to_low(chunk: &Map<String, Value>, enabled: &[String]) -> Result<Low, ApiError> {
    let name = chunk
        .get("client")
        .and_then(Value::as_str)
        .unwrap_or("None");
    if !crate::config::CLIENTS.contains(&name) {
        return Err(ApiError::bad_request(format!(
            "Invalid client specified: '{name}'"
        )));
    }
    if !enabled.iter().any(|c| c == name) {
        return Err(ApiError::bad_request(format!(
            "Client disabled: '{name}'. Add to 'netapi_enable_clients' master config option to enable."
        )));
    }
    let client = match name {
        "local" => Client::Local,
        "local_async" => Client::LocalAsync,
        "local_batch" => Client::LocalBatch,
        "runner" => Client::Runner,
        "runner_async" => Client::RunnerAsync,
        "wheel" => Client::Wheel,
        "wheel_async" => Client::WheelAsync,
        other => {
            return Err(ApiError::bad_request(format!(
                "client '{other}' is not served by saltq's salt-api yet"
            )));
        }
    };
    let local = matches!(
        client,
        Client::Local | Client::LocalAsync | Client::LocalBatch
    );
    let funs = functions(chunk, name, local)?;
    let tgt = string(chunk.get("tgt")).unwrap_or_default();
    if local && tgt.is_empty() {
        return Err(ApiError::bad_request(format!(
            "Missing 'tgt' in the {name} lowstate"
        )));
    }
    let mut arg = match chunk.get("arg") {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(a)) => a.clone(),
        Some(Value::String(s)) if s.is_empty() => vec![],
        Some(one) => vec![one.clone()],
    };
    let mut kwarg = match chunk.get("kwarg") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "kwarg must be a mapping, not {other}"
            )));
        }
    };
    let (fun, multi) = match funs {
        Functions::One(f) => (f, vec![]),
        Functions::ListOfOne(f) => {
            // `["f"]` with `[[args]]`: one function, its arguments the inner list.
            if let [Value::Array(inner)] = arg.as_slice() {
                arg = inner.clone();
            }
            (f, vec![])
        }
        Functions::Many(funs) => {
            arg = per_function_args(arg, &funs, &kwarg)?;
            (funs.join(","), funs)
        }
    };
    if !local {
        for (k, v) in chunk {
            if !RESERVED.contains(&k.as_str()) {
                kwarg.insert(k.clone(), v.clone());
            }
        }
    }
    let timeout = seconds(chunk, "timeout")?;
    let batch = match client {
        Client::LocalBatch => Some(batch(chunk)?),
        _ => None,
    };
    Ok(Low {
        client,
        fun,
        multi,
        tgt,
        tgt_type: string(chunk.get("tgt_type")).unwrap_or_else(|| "glob".into()),
        arg,
        kwarg,
        full_return: chunk
            .get("full_return")
            .is_some_and(|v| matches!(v, Value::Bool(true)) || v.as_str() == Some("true")),
        timeout,
        ret: string(chunk.get("ret")).unwrap_or_default(),
        batch,
        returned_only: false,
    })
}

/// A chunk's `fun`: one name, or a list (a multi-function job of the local clients).
enum Functions {
    /// `"test.ping"`.
    One(String),
    /// `["test.ping"]`: one function, sent as a list.
    ListOfOne(String),
    /// `["test.ping", "cmd.run"]`: each function with its own argument list.
    Many(Vec<String>),
}

/// Reads `fun`: a non-empty name, or for the local clients a list of non-empty names.
fn functions(chunk: &Map<String, Value>, client: &str, local: bool) -> Result<Functions, ApiError> {
    let missing = || ApiError::bad_request(format!("Missing 'fun' in the {client} lowstate"));
    match chunk.get("fun") {
        Some(Value::Array(items)) => {
            if !local {
                return Err(ApiError::bad_request(format!(
                    "fun must be one function name for the {client} client, not a list"
                )));
            }
            let mut funs = Vec::with_capacity(items.len());
            for (i, f) in items.iter().enumerate() {
                match f.as_str() {
                    Some(s) if !s.trim().is_empty() => funs.push(s.to_owned()),
                    _ => {
                        return Err(ApiError::bad_request(format!(
                            "fun[{i}] must be a function name, not {f}"
                        )));
                    }
                }
            }
            match funs.len() {
                0 => Err(missing()),
                1 => Ok(Functions::ListOfOne(funs.swap_remove(0))),
                _ => Ok(Functions::Many(funs)),
            }
        }
        v => string(v)
            .filter(|f| !f.is_empty())
            .map(Functions::One)
            .ok_or_else(missing),
    }
}

/// A multi-function job's arguments, as Salt's `LocalClient.cmd` takes them: one list per
/// function (none given: each function without arguments). A keyword argument goes in its
/// function's list as a mapping with `"__kwarg__": true`; a chunk-wide `kwarg` would be
/// nobody's (Salt's minion drops it), so it is refused.
fn per_function_args(
    arg: Vec<Value>,
    funs: &[String],
    kwarg: &Map<String, Value>,
) -> Result<Vec<Value>, ApiError> {
    if !kwarg.is_empty() {
        return Err(ApiError::bad_request(
            "kwarg cannot go with a list of functions: put each function's keyword arguments in \
             its own argument list, as a mapping with \"__kwarg__\": true",
        ));
    }
    if arg.is_empty() {
        return Ok(vec![Value::Array(vec![]); funs.len()]);
    }
    if arg.len() != funs.len() || !arg.iter().all(Value::is_array) {
        return Err(ApiError::bad_request(format!(
            "arg must be one list of arguments per function for a list of {} functions ({}), \
             e.g. [[], [\"id\"]]; got {}",
            funs.len(),
            funs.join(", "),
            Value::Array(arg)
        )));
    }
    Ok(arg)
}

/// A number of seconds under `key`, as a number or a numeric string.
fn seconds(chunk: &Map<String, Value>, key: &str) -> Result<Option<f64>, ApiError> {
    let bad = |v: &dyn std::fmt::Display| {
        ApiError::bad_request(format!("{key} {v} is not a number of seconds"))
    };
    let n = match chunk.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_f64().ok_or_else(|| bad(n))?,
        Some(Value::String(s)) => s.trim().parse().map_err(|_| bad(&format!("{s:?}")))?,
        Some(other) => return Err(bad(other)),
    };
    if !(n.is_finite() && n >= 0.0) {
        return Err(bad(&n));
    }
    Ok(Some(n))
}

/// `local_batch`'s keys, as Salt's `cmd_batch` reads them: `batch` (default `10%`),
/// `batch_wait` (whole seconds: Salt takes `int()` of it), `failhard`, `gather_job_timeout`.
fn batch(chunk: &Map<String, Value>) -> Result<Batch, ApiError> {
    let spec = match chunk.get("batch") {
        None | Some(Value::Null) => "10%".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(other) => other.to_string(),
    };
    let size = BatchSize::parse(&spec).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let truthy = |k: &str| {
        chunk
            .get(k)
            .is_some_and(|v| matches!(v, Value::Bool(true)) || v.as_str() == Some("true"))
    };
    if truthy("raw") {
        return Err(ApiError::bad_request(
            "raw is not served by saltq's local_batch: it answers each minion's return",
        ));
    }
    Ok(Batch {
        size,
        wait: seconds(chunk, "batch_wait")?.unwrap_or(0.0).trunc(),
        failhard: truthy("failhard"),
        gather_job_timeout: seconds(chunk, "gather_job_timeout")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bodies_by_content_type() {
        let j = parse_body("application/json", br#"[{"client":"local"}]"#).unwrap();
        assert_eq!(j, Some(json!([{"client": "local"}])));
        let y = parse_body("application/x-yaml", b"- client: local\n  arg: [1]\n").unwrap();
        assert_eq!(y, Some(json!([{"client": "local", "arg": [1]}])));
        let f = parse_body(
            "application/x-www-form-urlencoded; charset=utf-8",
            b"client=local&tgt=*&fun=test.kwarg&arg=one%3D1&arg=2&kwarg={a: 1}",
        )
        .unwrap();
        assert_eq!(
            f,
            Some(json!({"client": "local", "tgt": "*", "fun": "test.kwarg",
                        "arg": ["one=1", 2], "kwarg": {"a": 1}}))
        );
        assert_eq!(
            parse_body("application/json", b"{x").unwrap_err().message,
            "Invalid JSON document"
        );
        assert_eq!(parse_body("text/plain", b"x").unwrap_err().status, 415);
        assert_eq!(parse_body("application/json", b"  ").unwrap(), None);
    }

    /// A form's `arg` and `kwarg` typed as Salt 3007.8's rest_cherrypy types them
    /// (`salt.utils.args.yamlify_arg`, YAML 1.1): `on` is True, `1:30` is 90, `1e16` stays
    /// a string, `off` is False.
    #[test]
    fn form_args_are_typed_as_salt_does() {
        let f = parse_form(b"arg=on&arg=1:30&arg=1e16&arg=%C2%B2x%3D1&kwarg=off");
        assert_eq!(f["arg"], json!([true, 90, "1e16", "²x=1"]));
        assert_eq!(f["kwarg"], json!(false));
    }

    #[test]
    fn lowstate_shapes() {
        let one = lowstate(Some(json!({"client": "local", "arg": "x"}))).unwrap();
        assert_eq!(one[0]["arg"], json!(["x"]));
        assert_eq!(
            lowstate(Some(json!([{"a": 1}, {"b": 2}]))).unwrap().len(),
            2
        );
        assert_eq!(
            lowstate(Some(json!("x"))).unwrap_err().message,
            "Lowstates must be a list"
        );
        assert!(lowstate(None).is_err());
    }

    #[test]
    fn clients_are_checked_as_salt_does() {
        let enabled = vec!["local".to_owned(), "runner".to_owned()];
        let chunk = |v: Value| v.as_object().unwrap().clone();
        let e = to_low(&chunk(json!({"client": "nosuch"})), &enabled).unwrap_err();
        assert_eq!(e.message, "Invalid client specified: 'nosuch'");
        let e = to_low(&chunk(json!({"client": "local_batch"})), &enabled).unwrap_err();
        assert_eq!(
            e.message,
            "Client disabled: 'local_batch'. Add to 'netapi_enable_clients' master config option to enable."
        );
        let l = to_low(
            &chunk(
                json!({"client": "local", "tgt": ["a", "b"], "tgt_type": "list",
                          "fun": "test.echo", "arg": "hi", "full_return": true}),
            ),
            &enabled,
        )
        .unwrap();
        assert_eq!(
            (l.client, l.tgt.as_str(), l.arg.clone(), l.full_return),
            (Client::Local, "a,b", vec![json!("hi")], true)
        );
        let r = to_low(
            &chunk(
                json!({"client": "runner", "fun": "jobs.lookup_jid", "jid": "1",
                          "token": "ab", "kwarg": {"x": 1}}),
            ),
            &enabled,
        )
        .unwrap();
        assert_eq!(r.kwarg, chunk(json!({"x": 1, "jid": "1"})));
        assert!(to_low(&chunk(json!({"client": "local", "fun": "x"})), &enabled).is_err());
    }

    #[test]
    fn a_list_of_functions_is_a_multi_function_job() {
        let enabled = vec!["local".to_owned(), "runner".to_owned()];
        let chunk = |v: Value| v.as_object().unwrap().clone();
        let l = to_low(
            &chunk(json!({"client": "local", "tgt": "*",
                          "fun": ["test.ping", "cmd.run"], "arg": [[], ["id"]]})),
            &enabled,
        )
        .unwrap();
        assert_eq!(l.multi, ["test.ping", "cmd.run"]);
        assert_eq!(l.arg, vec![json!([]), json!(["id"])]);
        // Without arguments, each function has none.
        let l = to_low(
            &chunk(json!({"client": "local", "tgt": "*", "fun": ["test.ping", "test.true"]})),
            &enabled,
        )
        .unwrap();
        assert_eq!(l.arg, vec![json!([]), json!([])]);
        // A list of one is that function, its arguments the one list.
        let l = to_low(
            &chunk(json!({"client": "local", "tgt": "*", "fun": ["test.echo"], "arg": [["hi"]]})),
            &enabled,
        )
        .unwrap();
        assert_eq!(
            (l.fun.as_str(), l.multi.len(), l.arg.clone()),
            ("test.echo", 0, vec![json!("hi")])
        );
        let refused = |v: Value| to_low(&chunk(v), &enabled).unwrap_err();
        let e = refused(json!({"client": "local", "tgt": "*",
                               "fun": ["test.ping", "cmd.run"], "arg": [["id"]]}));
        assert!(
            e.message.contains("one list of arguments per function"),
            "{e}"
        );
        let e = refused(json!({"client": "local", "tgt": "*",
                               "fun": ["test.ping", "cmd.run"], "arg": ["x", "y"]}));
        assert!(
            e.message.contains("one list of arguments per function"),
            "{e}"
        );
        let e = refused(json!({"client": "local", "tgt": "*", "fun": ["test.ping", 3]}));
        assert_eq!(e.message, "fun[1] must be a function name, not 3");
        let e = refused(
            json!({"client": "local", "tgt": "*", "fun": ["test.ping", "test.echo"],
                               "arg": [[], ["hi"]], "kwarg": {"a": 1}}),
        );
        assert!(
            e.message
                .contains("kwarg cannot go with a list of functions"),
            "{e}"
        );
        let e = refused(json!({"client": "runner", "fun": ["jobs.list_jobs", "manage.up"]}));
        assert_eq!(
            e.message,
            "fun must be one function name for the runner client, not a list"
        );
        assert!(
            refused(json!({"client": "local", "tgt": "*", "fun": []}))
                .message
                .contains("Missing 'fun'")
        );
    }

    #[test]
    fn local_batch_reads_salts_keys() {
        let enabled = vec!["local_batch".to_owned()];
        let chunk = |v: Value| v.as_object().unwrap().clone();
        let l = to_low(
            &chunk(json!({"client": "local_batch", "tgt": "*", "fun": "test.ping"})),
            &enabled,
        )
        .unwrap();
        assert_eq!(l.client, Client::LocalBatch);
        let b = l.batch.unwrap();
        assert_eq!(
            (b.size, b.wait, b.failhard),
            (BatchSize::Percent(10.0), 0.0, false)
        );
        let l = to_low(
            &chunk(
                json!({"client": "local_batch", "tgt": "*", "fun": "test.ping",
                          "batch": 2, "batch_wait": "1.7", "failhard": true}),
            ),
            &enabled,
        )
        .unwrap();
        let b = l.batch.unwrap();
        assert_eq!(
            (b.size, b.wait, b.failhard),
            (BatchSize::Count(2), 1.0, true)
        );
        assert!(
            l.kwarg.is_empty(),
            "batch keys are not the function's: {:?}",
            l.kwarg
        );
        let e = to_low(
            &chunk(
                json!({"client": "local_batch", "tgt": "*", "fun": "test.ping",
                          "batch": "lots"}),
            ),
            &enabled,
        )
        .unwrap_err();
        assert_eq!(
            (e.status, e.message.as_str()),
            (
                400,
                "Invalid batch data sent: lots\nData must be in the form of %10, 10% or 3"
            )
        );
        let e = to_low(
            &chunk(
                json!({"client": "local_batch", "tgt": "*", "fun": "test.ping",
                          "batch_wait": -1}),
            ),
            &enabled,
        )
        .unwrap_err();
        assert!(e.message.contains("batch_wait -1"), "{e}");
    }
}
