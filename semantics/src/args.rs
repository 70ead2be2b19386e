//! The salt CLI's argument rules (`salt/utils/args.py`, `salt/utils/parsers.py`):
//! YAML typing of arguments, `k=v` keyword arguments, and the splitting of
//! `test.ping,test.echo ,hi` into functions and their argument groups.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use crate::jid::Jid;
use crate::python::yamlify;

/// Why the CLI's functions and arguments cannot be paired up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// Fewer argument groups than functions.
    #[error(
        "cannot execute compound command without defining all arguments: \
         {functions} functions in \"{fun}\" but {groups} argument groups"
    )]
    MissingArguments {
        /// The comma-separated functions.
        fun: String,
        /// How many functions.
        functions: usize,
        /// How many argument groups.
        groups: usize,
    },
    /// More argument groups than functions.
    #[error(
        "cannot execute compound command with more arguments than commands: \
         {functions} functions in \"{fun}\" but {groups} argument groups"
    )]
    TooManyArguments {
        /// The comma-separated functions.
        fun: String,
        /// How many functions.
        functions: usize,
        /// How many argument groups.
        groups: usize,
    },
    /// A function name left empty by a stray comma (`test.ping,`).
    #[error("empty function name at position {pos} in \"{fun}\"")]
    EmptyFunction {
        /// The comma-separated functions.
        fun: String,
        /// Position of the empty name, from 1.
        pos: usize,
    },
    /// The argument separator is the empty string.
    #[error("invalid argument separator: the separator must not be empty")]
    EmptySeparator,
}

/// Salt's `KWARG_REGEX` (`^([^\d\W][\w.-]*)=(?!=)(.*)$`), with Python's `$` (end, or before
/// a final newline) spelled out; the `(?!=)` after `=` is checked by the caller. Python's `\w`
/// is `str.isalnum()` or `_` (letters and numbers, not Rust's combining marks and connectors),
/// and its `\d` the decimal digits.
static KWARG: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\A([\p{L}\p{Nl}\p{No}_][\p{L}\p{N}_.-]*)=([^\n]*)\n?\z").ok());

/// Salt's `parse_kwarg`: `name=value` when `name` is an identifier (dots and
/// dashes allowed) and the value does not start with `=`.
pub fn parse_kwarg(arg: &str) -> Option<(&str, &str)> {
    let caps = KWARG.as_ref()?.captures(arg)?;
    let (name, value) = (caps.get(1)?.as_str(), caps.get(2)?.as_str());
    (!value.starts_with('=')).then_some((name, value))
}

/// Salt's `parse_input(args)`: `k=v` words become keyword arguments (value
/// YAML-typed), the others positional arguments (YAML-typed; an integer that
/// reads as a jid is kept as a string, as `condition_input` does).
pub fn parse_input(args: &[String]) -> (Vec<Value>, Map<String, Value>) {
    parse_input_with(args, &[])
}

/// [`parse_input`] with `--no-parse`: the values of these keyword arguments stay strings.
pub fn parse_input_with(args: &[String], no_parse: &[&str]) -> (Vec<Value>, Map<String, Value>) {
    let mut positional = Vec::new();
    let mut kwargs = Map::new();
    for arg in args {
        match parse_kwarg(arg) {
            Some((name, value)) => {
                let typed = if no_parse.contains(&name) {
                    Value::String(value.to_owned())
                } else {
                    yamlify(value)
                };
                kwargs.insert(name.to_owned(), typed);
            }
            None => positional.push(jid_as_string(yamlify(arg))),
        }
    }
    (positional, kwargs)
}

/// Salt's `condition_input`: the publish form of arguments, keyword arguments
/// appended as one dict marked `"__kwarg__": true`.
pub fn condition_input(args: Vec<Value>, kwargs: Map<String, Value>) -> Vec<Value> {
    let mut out: Vec<Value> = args.into_iter().map(jid_as_string).collect();
    if !kwargs.is_empty() {
        let mut packed = Map::new();
        packed.insert("__kwarg__".to_owned(), Value::Bool(true));
        packed.extend(kwargs);
        out.push(Value::Object(packed));
    }
    out
}

/// An integer whose digits form a jid becomes that string.
fn jid_as_string(value: Value) -> Value {
    match &value {
        Value::Number(n) if n.is_i64() || n.is_u64() => {
            let digits = n.to_string();
            if Jid::parse(&digits).is_ok() {
                Value::String(digits)
            } else {
                value
            }
        }
        _ => value,
    }
}

/// Splits the CLI's function word and arguments as `salt` does. Without a
/// comma in `fun` there is one function and one group. With commas, when
/// `separator` stands alone exactly between the groups (`a,b x , y`) it splits
/// there; otherwise it also splits inside words (`a,b x,y`, `test.ping,test.echo ,hi`),
/// and the group count must equal the function count. A trailing separator
/// gives a trailing empty group.
pub fn split_multi_function(
    fun: &str,
    args: &[String],
    separator: &str,
) -> Result<(Vec<String>, Vec<Vec<String>>), ArgsError> {
    if !fun.contains(',') {
        return Ok((vec![fun.to_owned()], vec![args.to_vec()]));
    }
    if separator.is_empty() {
        return Err(ArgsError::EmptySeparator);
    }
    let funs: Vec<String> = fun.split(',').map(str::to_owned).collect();
    if let Some(n) = funs.iter().position(String::is_empty) {
        return Err(ArgsError::EmptyFunction {
            fun: fun.to_owned(),
            pos: n + 1,
        });
    }
    let standalone = args.iter().filter(|a| *a == separator).count();
    let groups = if standalone == funs.len() - 1 {
        split_standalone(args, separator)
    } else {
        split_inside(args, separator)
    };
    let counts = (funs.len(), groups.len());
    if counts.0 > counts.1 {
        return Err(ArgsError::MissingArguments {
            fun: fun.to_owned(),
            functions: counts.0,
            groups: counts.1,
        });
    }
    if counts.0 < counts.1 {
        return Err(ArgsError::TooManyArguments {
            fun: fun.to_owned(),
            functions: counts.0,
            groups: counts.1,
        });
    }
    Ok((funs, groups))
}

/// New-style groups: split at arguments that are exactly the separator.
fn split_standalone(args: &[String], separator: &str) -> Vec<Vec<String>> {
    let mut groups = vec![Vec::new()];
    for arg in args {
        if arg == separator {
            groups.push(Vec::new());
        } else if let Some(group) = groups.last_mut() {
            group.push(arg.clone());
        }
    }
    groups
}

/// Old-style groups: the separator splits inside arguments too; empty pieces vanish.
fn split_inside(args: &[String], separator: &str) -> Vec<Vec<String>> {
    let mut groups = vec![Vec::new()];
    for arg in args {
        if !arg.contains(separator) {
            if let Some(group) = groups.last_mut() {
                group.push(arg.clone());
            }
            continue;
        }
        let pieces: Vec<&str> = arg.split(separator).collect();
        for (n, piece) in pieces.iter().enumerate() {
            if !piece.is_empty()
                && let Some(group) = groups.last_mut()
            {
                group.push((*piece).to_owned());
            }
            if n + 1 < pieces.len() {
                groups.push(Vec::new());
            }
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn kwarg_regex() {
        let cases = [
            ("a=1", Some(("a", "1"))),
            (
                "my_message=Hello world",
                Some(("my_message", "Hello world")),
            ),
            ("a.b-c=x", Some(("a.b-c", "x"))),
            ("a==b", None),
            ("1a=b", None),
            ("=b", None),
            ("a=", Some(("a", ""))),
            ("a=b=c", Some(("a", "b=c"))),
            ("a=x\ny", None),
            ("a=x\n", Some(("a", "x"))),
            ("é=1", Some(("é", "1"))),
        ];
        for (arg, want) in cases {
            assert_eq!(parse_kwarg(arg), want, "{arg:?}");
        }
    }

    #[test]
    fn parse_input_splits_kwargs() {
        let args = strings(&[
            "1",
            "name=web",
            "count=3",
            "yes",
            "20131219110700123489",
            "x==y",
        ]);
        let (pos, kw) = parse_input(&args);
        assert_eq!(
            pos,
            vec![
                json!(1),
                json!(true),
                json!("20131219110700123489"),
                json!("x==y")
            ]
        );
        assert_eq!(
            Value::Object(kw.clone()),
            json!({"name": "web", "count": 3})
        );
        let packed = condition_input(pos, kw);
        assert_eq!(
            packed.last(),
            Some(&json!({"__kwarg__": true, "name": "web", "count": 3}))
        );
        let (_, kw) = parse_input_with(&strings(&["count=3"]), &["count"]);
        assert_eq!(Value::Object(kw), json!({"count": "3"}));
    }

    #[test]
    fn condition_input_keeps_jids_as_strings() {
        let out = condition_input(
            vec![json!(10_000_000_000_000_000_000_u64), json!(5)],
            Map::new(),
        );
        assert_eq!(out, vec![json!("10000000000000000000"), json!(5)]);
    }

    #[test]
    fn multi_function_splitting() {
        type Case<'a> = (&'a str, &'a [&'a str], Vec<&'a str>, Vec<Vec<&'a str>>);
        let cases: Vec<Case<'_>> = vec![
            (
                "test.ping",
                &["a", "b"],
                vec!["test.ping"],
                vec![vec!["a", "b"]],
            ),
            (
                "test.ping,test.echo",
                &[",hi"],
                vec!["test.ping", "test.echo"],
                vec![vec![], vec!["hi"]],
            ),
            (
                "test.ping,test.echo",
                &[",", "hi"],
                vec!["test.ping", "test.echo"],
                vec![vec![], vec!["hi"]],
            ),
            (
                "test.echo,test.ping",
                &["hi", ","],
                vec!["test.echo", "test.ping"],
                vec![vec!["hi"], vec![]],
            ),
            (
                "test.echo,test.ping",
                &["hi,"],
                vec!["test.echo", "test.ping"],
                vec![vec!["hi"], vec![]],
            ),
            (
                "a,b,c",
                &["1", "2,3", ",4"],
                vec!["a", "b", "c"],
                vec![vec!["1", "2"], vec!["3"], vec!["4"]],
            ),
            (
                "a,b",
                &["x,y", "z"],
                vec!["a", "b"],
                vec![vec!["x"], vec!["y", "z"]],
            ),
        ];
        for (fun, args, funs, groups) in cases {
            let got = split_multi_function(fun, &strings(args), ",");
            let want_groups: Vec<Vec<String>> = groups.iter().map(|g| strings(g)).collect();
            assert_eq!(got, Ok((strings(&funs), want_groups)), "{fun} {args:?}");
        }
    }

    #[test]
    fn multi_function_errors() {
        let cases: Vec<(&str, &[&str], &str, &str)> = vec![
            (
                "a,b,c",
                &["x,y"],
                ",",
                "cannot execute compound command without defining all arguments: 3 functions in \"a,b,c\" but 2 argument groups",
            ),
            (
                "a,b",
                &["x,y,z"],
                ",",
                "cannot execute compound command with more arguments than commands: 2 functions in \"a,b\" but 3 argument groups",
            ),
            (
                "test.ping,",
                &[],
                ",",
                "empty function name at position 2 in \"test.ping,\"",
            ),
            (
                "a,b",
                &[],
                "",
                "invalid argument separator: the separator must not be empty",
            ),
        ];
        for (fun, args, sep, msg) in cases {
            let err = split_multi_function(fun, &strings(args), sep)
                .err()
                .map(|e| e.to_string());
            assert_eq!(err.as_deref(), Some(msg), "{fun} {args:?}");
        }
    }
}
