//! Salt's argument rules on the minion (`load_args_and_kwargs` in `salt/minion.py`) followed by
//! Python's own binding of arguments to parameters, with both their error messages.
//!
//! A job's `arg` list holds positional values, `{"__kwarg__": true, ...}` dicts of packed
//! keyword arguments, and possibly `key=value` strings (parsed here as Salt's minion does).
//! Keywords a function cannot take are refused with Salt's `SaltInvocationError`; the rest is
//! bound the way CPython binds a call, which is where the `TypeError` texts come from.

use serde_json::{Map, Value};

use saltq_semantics::args::parse_kwarg;
use saltq_semantics::python;

use crate::context::PubInfo;
use crate::error::ExecError;

use crate::spec::{Bound, Function};

/// Binds a job's arguments to `f`'s parameters. `kwarg` is the job's separate keyword map
/// (treated as one more packed `__kwarg__` dict after `args`).
pub fn bind(
    f: &Function,
    args: Vec<Value>,
    kwarg: Map<String, Value>,
    publ: &PubInfo,
) -> Result<Bound, ExecError> {
    let accepts = |key: &str| f.kwargs || f.params.iter().any(|p| p.name == key);
    let (positional, mut keywords) = split_args(args, kwarg, accepts)?;
    if f.kwargs {
        for (key, val) in pub_data(f.name, publ) {
            keywords.insert(format!("__pub_{key}"), val);
        }
    }
    bind_python(f, positional, keywords)
}

/// Salt's `load_args_and_kwargs`: separates a job's positional arguments from its keyword
/// arguments (packed `__kwarg__` dicts, `key=value` strings, then `kwarg`), refusing
/// keywords that `accepts` rejects with Salt's `SaltInvocationError` text.
pub(crate) fn split_args(
    args: Vec<Value>,
    kwarg: Map<String, Value>,
    accepts: impl Fn(&str) -> bool,
) -> Result<(Vec<Value>, Map<String, Value>), ExecError> {
    let mut positional = Vec::new();
    let mut keywords: Map<String, Value> = Map::new();
    let mut invalid = Vec::new();
    let mut take = |key: String, val: Value, keywords: &mut Map<String, Value>| {
        if accepts(&key) {
            keywords.insert(key, val);
        } else {
            invalid.push(format!("{key}={}", python::str(&val)));
        }
    };

    let packed = (!kwarg.is_empty()).then(|| {
        let mut m = Map::new();
        m.insert("__kwarg__".into(), Value::Bool(true));
        m.extend(kwarg);
        Value::Object(m)
    });
    for arg in args.into_iter().chain(packed) {
        match arg {
            Value::Object(map) if map.get("__kwarg__") == Some(&Value::Bool(true)) => {
                for (key, val) in map {
                    if key != "__kwarg__" {
                        take(key, val, &mut keywords);
                    }
                }
            }
            Value::String(s) => match parse_kwarg(&s) {
                Some((key, val)) => take(key.to_owned(), python::yamlify(val), &mut keywords),
                None => positional.push(Value::String(s)),
            },
            other => positional.push(other),
        }
    }
    if !invalid.is_empty() {
        return Err(ExecError::invocation(format!(
            "The following keyword arguments are not valid: {}",
            invalid.join(", ")
        )));
    }
    Ok((positional, keywords))
}

/// The publication data in the order Salt's load carries it; each key becomes `__pub_<key>`.
fn pub_data(fun: &str, publ: &PubInfo) -> [(&'static str, Value); 7] {
    [
        ("fun", Value::from(fun)),
        ("arg", Value::Array(publ.arg.clone())),
        ("tgt", publ.tgt.clone()),
        ("jid", Value::from(publ.jid.clone())),
        ("ret", Value::from(publ.ret.clone())),
        ("tgt_type", Value::from(publ.tgt_type.clone())),
        ("user", Value::from(publ.user.clone())),
    ]
}

/// CPython's binding of `f(*positional, **keywords)`, with its `TypeError` messages (3.10+).
pub(crate) fn bind_python(
    f: &Function,
    positional: Vec<Value>,
    mut keywords: Map<String, Value>,
) -> Result<Bound, ExecError> {
    let name = f.python_name();
    let slots: Vec<_> = f.params.iter().filter(|p| !p.keyword_only).collect();
    let given = positional.len();
    let mut values: Vec<Option<Value>> = vec![None; f.params.len()];
    let mut varargs = Vec::new();
    let mut rest = positional.into_iter();
    for (slot, value) in slots.iter().zip(rest.by_ref()) {
        if let Some(i) = f.params.iter().position(|p| p.name == slot.name) {
            values[i] = Some(value);
        }
    }
    varargs.extend(rest);

    let mut extra = Map::new();
    for (key, value) in std::mem::take(&mut keywords) {
        match f.params.iter().position(|p| p.name == key) {
            Some(i) if values[i].is_some() => {
                return Err(ExecError::InvalidArguments(format!(
                    "{name}() got multiple values for argument '{key}'"
                )));
            }
            Some(i) => values[i] = Some(value),
            None if f.kwargs => {
                extra.insert(key, value);
            }
            None => {
                return Err(ExecError::InvalidArguments(format!(
                    "{name}() got an unexpected keyword argument '{key}'"
                )));
            }
        }
    }

    if !f.varargs && !varargs.is_empty() {
        return Err(ExecError::InvalidArguments(too_many(
            f, name, given, &values,
        )));
    }
    let missing = |kwonly: bool| -> Vec<&str> {
        f.params
            .iter()
            .zip(&values)
            .filter(|(p, v)| p.keyword_only == kwonly && p.default.is_none() && v.is_none())
            .map(|(p, _)| p.name)
            .collect()
    };
    for (kwonly, kind) in [(false, "positional"), (true, "keyword-only")] {
        let names = missing(kwonly);
        if !names.is_empty() {
            return Err(ExecError::InvalidArguments(format!(
                "{name}() missing {} required {kind} argument{}: {}",
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                name_list(&names)
            )));
        }
    }

    let params = f
        .params
        .iter()
        .zip(values)
        .map(|(p, v)| {
            let v = v.unwrap_or_else(|| p.default.map(|d| d.to_value()).unwrap_or(Value::Null));
            (p.name.to_owned(), v)
        })
        .collect();
    Ok(Bound {
        params,
        varargs,
        kwargs: extra,
    })
}

/// `takes N positional arguments but M were given`, as CPython words it.
fn too_many(f: &Function, name: &str, given: usize, values: &[Option<Value>]) -> String {
    let slots: Vec<_> = f.params.iter().filter(|p| !p.keyword_only).collect();
    let defaults = slots.iter().filter(|p| p.default.is_some()).count();
    let (sig, plural) = if defaults > 0 {
        (
            format!("from {} to {}", slots.len() - defaults, slots.len()),
            true,
        )
    } else {
        (slots.len().to_string(), slots.len() != 1)
    };
    let kwonly_given = f
        .params
        .iter()
        .zip(values)
        .filter(|(p, v)| p.keyword_only && v.is_some())
        .count();
    let kwonly = if kwonly_given > 0 {
        format!(
            " positional argument{} (and {kwonly_given} keyword-only argument{})",
            if given != 1 { "s" } else { "" },
            if kwonly_given != 1 { "s" } else { "" }
        )
    } else {
        String::new()
    };
    format!(
        "{name}() takes {sig} positional argument{} but {given}{kwonly} {} given",
        if plural { "s" } else { "" },
        if given == 1 && kwonly_given == 0 {
            "was"
        } else {
            "were"
        }
    )
}

/// `'a'`, `'a' and 'b'`, `'a', 'b', and 'c'`.
fn name_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [init @ .., last] => format!("{}, and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{BoxFuture, Call, Lit, Param};
    use serde_json::json;

    fn nop(_: Call) -> BoxFuture {
        Box::pin(async { Ok(Value::Null) })
    }

    const ECHO: Function = Function::new("test.echo", nop).params(&[Param::req("text")]);
    const PING: Function = Function::new("test.ping", nop);
    const RETCODE: Function =
        Function::new("test.retcode", nop).params(&[Param::opt("code", Lit::Int(42))]);
    const ARG: Function = Function::new("test.arg", nop).varargs().kwargs();
    const TRUE: Function = Function::new("test.true", nop).py_name("true_");
    const THREE: Function =
        Function::new("x.three", nop).params(&[Param::req("a"), Param::req("b"), Param::req("c")]);
    const ITEM: Function = Function::new("pillar.item", nop)
        .varargs()
        .params(&[Param::opt("default", Lit::None).kwonly()]);

    fn publ() -> PubInfo {
        PubInfo {
            jid: "20261121001530810867".into(),
            tgt: json!("labminion"),
            tgt_type: "glob".into(),
            ret: String::new(),
            user: "root".into(),
            arg: vec![json!(1), json!({"__kwarg__": true, "txt": "hello"})],
        }
    }

    fn kw(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn check(f: &Function, args: Value, kwarg: Value, want: Result<Value, &str>) {
        let args = args.as_array().cloned().unwrap_or_default();
        let got = bind(f, args, kw(kwarg), &publ());
        match (got, want) {
            (Ok(b), Ok(want)) => {
                let got = json!({"params": b.params, "varargs": b.varargs, "kwargs": b.kwargs});
                assert_eq!(got, want, "{}", f.name);
            }
            (Err(e), Err(want)) => assert_eq!(e.to_string(), want, "{}", f.name),
            (got, want) => panic!("{}: got {got:?}, want {want:?}", f.name),
        }
    }

    #[test]
    fn salt_argument_rules() {
        let ok = |p: Value| Ok(json!({"params": p, "varargs": [], "kwargs": {}}));
        // Each case observed on salt 3007.8 through LocalClient.cmd(arg=..., kwarg=...).
        check(&ECHO, json!(["hi"]), json!({}), ok(json!({"text": "hi"})));
        check(
            &ECHO,
            json!([]),
            json!({"text": "kw"}),
            ok(json!({"text": "kw"})),
        );
        check(
            &ECHO,
            json!(["text=viaString"]),
            json!({}),
            ok(json!({"text": "viaString"})),
        );
        check(
            &ECHO,
            json!([{"__kwarg__": true, "text": "packed"}]),
            json!({}),
            ok(json!({"text": "packed"})),
        );
        check(
            &ECHO,
            json!([{"text": "plain dict"}]),
            json!({}),
            ok(json!({"text": {"text": "plain dict"}})),
        );
        check(
            &ECHO,
            json!(["hi", "there"]),
            json!({}),
            Err("echo() takes 1 positional argument but 2 were given"),
        );
        check(
            &ECHO,
            json!([]),
            json!({}),
            Err("echo() missing 1 required positional argument: 'text'"),
        );
        check(
            &ECHO,
            json!(["hi"]),
            json!({"text": "kw"}),
            Err("echo() got multiple values for argument 'text'"),
        );
        check(
            &ECHO,
            json!(["hi"]),
            json!({"foo": "bar"}),
            Err("The following keyword arguments are not valid: foo=bar"),
        );
        check(
            &ECHO,
            json!(["hi", "foo=bar", "n=1"]),
            json!({}),
            Err("The following keyword arguments are not valid: foo=bar, n=1"),
        );
        check(
            &PING,
            json!([1]),
            json!({}),
            Err("ping() takes 0 positional arguments but 1 was given"),
        );
        check(
            &PING,
            json!([1, 2]),
            json!({}),
            Err("ping() takes 0 positional arguments but 2 were given"),
        );
        check(
            &RETCODE,
            json!([1, 2]),
            json!({}),
            Err("retcode() takes from 0 to 1 positional arguments but 2 were given"),
        );
        check(&RETCODE, json!([]), json!({}), ok(json!({"code": 42})));
        check(
            &TRUE,
            json!([1]),
            json!({}),
            Err("true_() takes 0 positional arguments but 1 was given"),
        );
        check(
            &THREE,
            json!([]),
            json!({}),
            Err("three() missing 3 required positional arguments: 'a', 'b', and 'c'"),
        );
        check(
            &THREE,
            json!([1]),
            json!({}),
            Err("three() missing 2 required positional arguments: 'b' and 'c'"),
        );
        check(
            &ITEM,
            json!(["a", "b"]),
            json!({"default": "d"}),
            Ok(json!({"params": {"default": "d"}, "varargs": ["a", "b"], "kwargs": {}})),
        );
    }

    #[test]
    fn kwargs_functions_receive_pub_data() {
        check(
            &ARG,
            json!([1, "two", 3.1, {"a": 1}]),
            json!({"txt": "hello"}),
            Ok(json!({
                "params": {},
                "varargs": [1, "two", 3.1, {"a": 1}],
                "kwargs": {
                    "txt": "hello",
                    "__pub_fun": "test.arg",
                    "__pub_arg": [1, {"__kwarg__": true, "txt": "hello"}],
                    "__pub_tgt": "labminion",
                    "__pub_jid": "20261121001530810867",
                    "__pub_ret": "",
                    "__pub_tgt_type": "glob",
                    "__pub_user": "root",
                },
            })),
        );
    }

    /// `key=value` strings in a job's `arg` list bound as Salt's minion binds them: the rule is
    /// `saltq_semantics::args::parse_kwarg`, for which `²` may start a name (Python's
    /// `[^\d\W]`: `²` is `\w` and not `\d`), so `²x=1` is a keyword and its value typed.
    #[test]
    fn kwarg_strings() {
        let args = vec![
            json!("²x=1"),
            json!("a.b-c=x=y"),
            json!("a==b"),
            json!("1a=b"),
        ];
        let (positional, keywords) = split_args(args, Map::new(), |_| true).unwrap();
        assert_eq!(positional, vec![json!("a==b"), json!("1a=b")]);
        assert_eq!(Value::Object(keywords), json!({"²x": 1, "a.b-c": "x=y"}));
    }
}
