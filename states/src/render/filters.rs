//! Salt's Jinja filters and tests (`salt/utils/jinja.py`, `salt/utils/data.py`,
//! `salt/utils/hashutils.py`, `salt/utils/yamlencoding.py` and the serializer extension), the
//! ones state trees use; minijinja's builtins cover Jinja's own (`join`, `default`, `map`,
//! `dictsort`, `min`, `max`, `sort`, ...).

use minijinja::value::{Kwargs, Rest, Value as JValue, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State};
use serde_json::Value;

use saltq_semantics::python::{self, Dumps, dumps};

use super::values::{MutList, Tuple, to_jinja, to_json};
use super::yaml::load_yaml;

fn err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.into())
}

/// Parses imported or loaded data (`import_yaml`, `load_json`, ...) into a Jinja value.
pub fn parse_data(kind: &str, text: &str) -> Result<JValue, Error> {
    match kind {
        "yaml" => load_yaml(text)
            .map(|v| to_jinja(&v))
            .map_err(|e| err(format!("Encountered error loading yaml: {}", e.message))),
        "json" => serde_json::from_str::<Value>(text)
            .map(|v| to_jinja(&v))
            .map_err(|e| err(format!("Encountered error loading json: {e}"))),
        _ => Ok(JValue::from(text)),
    }
}

/// Whether a string can be written as a plain YAML scalar and read back as the same string.
fn yaml_plain_ok(s: &str, flow: bool) -> bool {
    if s.is_empty() || s.trim() != s || s.contains('\n') {
        return false;
    }
    if !matches!(load_yaml(s), Ok(Value::String(ref back)) if back == s) {
        return false;
    }
    let first = s.chars().next().unwrap_or(' ');
    if "-?:,[]{}#&*!|>'\"%@`".contains(first) {
        return false;
    }
    if s.contains(": ") || s.contains(" #") || s.ends_with(':') {
        return false;
    }
    !(flow && s.contains([',', '[', ']', '{', '}']))
}

fn yaml_single(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn yaml_double(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn yaml_scalar(value: &Value, flow: bool) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => if *b { "true" } else { "false" }.into(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => python::yaml_float(f),
            _ => n.to_string(),
        },
        Value::String(s) => {
            if yaml_plain_ok(s, flow) {
                s.clone()
            } else if s.contains(['\n', '\r', '\t']) || s.chars().any(|c| (c as u32) < 0x20) {
                // PyYAML folds these into a multi-line single-quoted scalar; a double-quoted
                // one with escapes reads back the same.
                yaml_double(s)
            } else {
                yaml_single(s)
            }
        }
        _ => String::new(),
    }
}

/// YAML in flow style, as `yaml.safe_dump(value, default_flow_style=True)` writes it.
fn yaml_flow(value: &Value) -> String {
    match value {
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(yaml_flow).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            format!(
                "{{{}}}",
                keys.iter()
                    .map(|k| format!(
                        "{}: {}",
                        yaml_scalar(&Value::String((*k).clone()), true),
                        yaml_flow(&map[k.as_str()])
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        scalar => yaml_scalar(scalar, true),
    }
}

/// YAML in block style (`default_flow_style=False`).
fn yaml_block(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) if !map.is_empty() => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for k in keys {
                let v = &map[k.as_str()];
                out.push_str(&format!(
                    "{pad}{}:",
                    yaml_scalar(&Value::String(k.clone()), false)
                ));
                match v {
                    Value::Object(m) if !m.is_empty() => {
                        out.push('\n');
                        yaml_block(v, indent + 2, out);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push('\n');
                        yaml_block(v, indent, out);
                    }
                    _ => out.push_str(&format!(" {}\n", yaml_flow(v))),
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                out.push_str(&format!("{pad}-"));
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        let mut inner = String::new();
                        yaml_block(item, indent + 2, &mut inner);
                        out.push(' ');
                        out.push_str(inner.trim_start());
                    }
                    Value::Array(a) if !a.is_empty() => {
                        let mut inner = String::new();
                        yaml_block(item, indent + 2, &mut inner);
                        out.push(' ');
                        out.push_str(inner.trim_start());
                    }
                    _ => out.push_str(&format!(" {}\n", yaml_flow(item))),
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", yaml_flow(other))),
    }
}

fn to_bool(v: &JValue) -> bool {
    match v.kind() {
        ValueKind::None | ValueKind::Undefined => false,
        ValueKind::Bool => v.is_true(),
        ValueKind::String => matches!(
            v.as_str().unwrap_or_default().to_lowercase().as_str(),
            "yes" | "1" | "true"
        ),
        ValueKind::Number => match i64::try_from(v.clone()) {
            Ok(i) => i > 0,
            Err(_) => false,
        },
        ValueKind::Seq | ValueKind::Map => v.len().unwrap_or(0) > 0,
        _ => false,
    }
}

fn items(v: &JValue) -> Result<Vec<JValue>, Error> {
    Ok(v.try_iter()?.collect())
}

fn unique_items(list: Vec<JValue>) -> Vec<JValue> {
    let mut out: Vec<JValue> = Vec::new();
    for item in list {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn flag(kwargs: &Kwargs, name: &str) -> Result<bool, Error> {
    Ok(kwargs.get::<Option<bool>>(name)?.unwrap_or(false))
}

fn build_regex(rgx: &str, ignorecase: bool, multiline: bool) -> Result<regex::Regex, Error> {
    let mut prefix = String::new();
    if ignorecase {
        prefix.push_str("(?i)");
    }
    if multiline {
        prefix.push_str("(?m)");
    }
    regex::Regex::new(&format!("{prefix}{rgx}")).map_err(|e| err(format!("bad regex {rgx:?}: {e}")))
}

fn groups(caps: Option<regex::Captures<'_>>) -> JValue {
    match caps {
        None => JValue::from(()),
        Some(c) => JValue::from(
            c.iter()
                .skip(1)
                .map(|m| m.map_or(JValue::from(()), |m| JValue::from(m.as_str())))
                .collect::<Vec<_>>(),
        ),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn flatten_into(value: &JValue, levels: Option<i64>, out: &mut Vec<JValue>) {
    for item in value.try_iter().into_iter().flatten() {
        if item.kind() == ValueKind::Seq && levels.is_none_or(|l| l > 0) {
            flatten_into(&item, levels.map(|l| l - 1), out);
        } else if !item.is_none() {
            out.push(item);
        }
    }
}

fn shell_quote(s: &str) -> String {
    if s.is_empty() {
        return "''".into();
    }
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\"'\"'"))
}

fn number(v: &JValue) -> JValue {
    match v.as_str() {
        Some(s) => {
            if let Ok(i) = s.trim().parse::<i64>() {
                JValue::from(i)
            } else if let Ok(f) = s.trim().parse::<f64>() {
                JValue::from(f)
            } else {
                v.clone()
            }
        }
        None => v.clone(),
    }
}

fn is_ip(s: &str, v4: bool, v6: bool) -> bool {
    match s.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => v4,
        Ok(std::net::IpAddr::V6(_)) => v6,
        Err(_) => false,
    }
}

/// Python's `fmt % args` (printf-style): `%s`, `%r`, `%d`/`%i`, `%f`/`%e`/`%g` with
/// precision, `%x`/`%o`, `%%`, widths with `-` and `0`, and `%(name)s` against a mapping.
/// `spread` is for a tuple operand, whose items are the arguments; any other value is one
/// argument (a mapping also serves `%(name)s`).
pub fn py_percent(fmt: &str, args: &JValue, spread: bool) -> Result<String, Error> {
    let by_name = args.kind() == ValueKind::Map;
    let mut positional: Vec<JValue> = if spread {
        args.try_iter()?.collect()
    } else {
        vec![args.clone()]
    };
    positional.reverse();
    let mut out = String::new();
    let chars: Vec<char> = fmt.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        i += 1;
        let mut value = None;
        if chars.get(i) == Some(&'(') {
            let end = chars[i..]
                .iter()
                .position(|c| *c == ')')
                .map(|p| p + i)
                .ok_or_else(|| err("ValueError: incomplete format key"))?;
            let key: String = chars[i + 1..end].iter().collect();
            value = Some(args.get_item(&JValue::from(key.as_str()))?);
            i = end + 1;
        }
        let mut flags = String::new();
        while let Some(c) = chars.get(i).filter(|c| "-+ 0#".contains(**c)) {
            flags.push(*c);
            i += 1;
        }
        let mut width = String::new();
        while let Some(c) = chars.get(i).filter(|c| c.is_ascii_digit()) {
            width.push(*c);
            i += 1;
        }
        let mut precision: Option<usize> = None;
        if chars.get(i) == Some(&'.') {
            i += 1;
            let mut p = String::new();
            while let Some(c) = chars.get(i).filter(|c| c.is_ascii_digit()) {
                p.push(*c);
                i += 1;
            }
            precision = Some(p.parse().unwrap_or(0));
        }
        let conv = *chars
            .get(i)
            .ok_or_else(|| err("ValueError: incomplete format"))?;
        i += 1;
        if conv == '%' {
            out.push('%');
            continue;
        }
        let v = match value {
            Some(v) => v,
            None => positional
                .pop()
                .ok_or_else(|| err("TypeError: not enough arguments for format string"))?,
        };
        let num = || {
            f64::try_from(v.clone()).map_err(|_| {
                err(format!(
                    "TypeError: %{conv} format: a real number is required, not {}",
                    v.kind()
                ))
            })
        };
        let body = match conv {
            's' => super::values::py_str(&v),
            'r' | 'a' => super::values::jinja_repr(&v),
            'd' | 'i' | 'u' => format!("{}", num()?.trunc() as i64),
            'f' | 'F' => format!("{:.*}", precision.unwrap_or(6), num()?),
            'e' | 'E' => python::format_e(num()?, precision.unwrap_or(6), conv == 'E'),
            'g' | 'G' => python::format_g(
                num()?,
                precision.unwrap_or(6),
                conv == 'G',
                flags.contains('#'),
            ),
            'x' => format!("{:x}", num()? as i64),
            'X' => format!("{:X}", num()? as i64),
            'o' => format!("{:o}", num()? as i64),
            'c' => super::values::py_str(&v),
            other => {
                return Err(err(format!(
                    "ValueError: unsupported format character '{other}'"
                )));
            }
        };
        let body = if flags.contains('+') && "dif".contains(conv) && !body.starts_with('-') {
            format!("+{body}")
        } else {
            body
        };
        let w: usize = width.parse().unwrap_or(0);
        let len = body.chars().count();
        if len < w {
            let pad = w - len;
            if flags.contains('-') {
                out.push_str(&body);
                out.push_str(&" ".repeat(pad));
            } else if flags.contains('0') && "diufFeExXo".contains(conv) {
                let (sign, digits) = match body.strip_prefix(['-', '+']) {
                    Some(rest) => (&body[..1], rest),
                    None => ("", body.as_str()),
                };
                out.push_str(sign);
                out.push_str(&"0".repeat(pad));
                out.push_str(digits);
            } else {
                out.push_str(&" ".repeat(pad));
                out.push_str(&body);
            }
        } else {
            out.push_str(&body);
        }
    }
    if !positional.is_empty() && (!by_name || spread) {
        return Err(err(
            "TypeError: not all arguments converted during string formatting",
        ));
    }
    Ok(out)
}

/// Python's `int(text, base)`: an optional sign, then digits of `base` (with the `0x`, `0o`,
/// `0b` prefix for base 16, 8, 2, or any prefix for base 0); None when it is not one.
fn py_int(text: &str, base: u32) -> Option<i64> {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let lower = digits.to_ascii_lowercase();
    let prefixed = |p: &str| lower.strip_prefix(p).map(str::to_owned);
    let (base, body) = match base {
        0 => match (prefixed("0x"), prefixed("0o"), prefixed("0b")) {
            (Some(b), _, _) => (16, b),
            (_, Some(b), _) => (8, b),
            (_, _, Some(b)) => (2, b),
            _ if lower.len() > 1 && lower.starts_with('0') => return None,
            _ => (10, lower.clone()),
        },
        16 => (16, prefixed("0x").unwrap_or_else(|| lower.clone())),
        8 => (8, prefixed("0o").unwrap_or_else(|| lower.clone())),
        2 => (2, prefixed("0b").unwrap_or_else(|| lower.clone())),
        b @ 2..=36 => (b, lower.clone()),
        _ => return None,
    };
    if body.is_empty() {
        return None;
    }
    let n = i64::from_str_radix(&body, base).ok()?;
    Some(if neg { -n } else { n })
}

/// Adds Salt's filters and tests to `env`, family by family.
pub fn register(env: &mut Environment<'static>) {
    register_data(env);
    register_regex(env);
    register_yaml_quoting(env);
    register_serializers(env);
    register_checks_and_hashes(env);
    register_sets(env);
    register_truncate_dictsort(env);
    register_indent(env);
    register_dates_and_text(env);
}

/// Python's `%` formatting and the data helpers (`to_bool`, `unique`, `sequence`, `traverse`).
fn register_data(env: &mut Environment<'static>) {
    env.add_filter("__pyformat", |fmt: String, args: JValue| {
        py_percent(&fmt, &args, false)
    });
    env.add_filter("__pyformat_tuple", |fmt: String, args: JValue| {
        py_percent(&fmt, &args, true)
    });
    env.add_filter("to_bool", |v: JValue| to_bool(&v));
    env.add_filter("unique", |v: JValue| -> Result<JValue, Error> {
        Ok(MutList::from_items(unique_items(items(&v)?)))
    });
    env.add_filter("sequence", |v: JValue| match v.kind() {
        ValueKind::Seq => v,
        _ => MutList::from_items(vec![v]),
    });
    env.add_filter(
        "traverse",
        |data: JValue, key: String, rest: Rest<JValue>| -> Result<JValue, Error> {
            let default = rest.first().cloned().unwrap_or(JValue::from(()));
            let delimiter = rest
                .get(1)
                .and_then(|d| d.as_str().map(str::to_string))
                .unwrap_or_else(|| ":".into());
            let mut cur = data;
            for part in key.split(delimiter.as_str()) {
                let next = match cur.kind() {
                    ValueKind::Map => cur.get_item(&JValue::from(part)).ok(),
                    ValueKind::Seq => match part.parse::<i64>() {
                        Ok(i) => cur.get_item(&JValue::from(i)).ok(),
                        Err(_) => None,
                    },
                    _ => None,
                };
                match next {
                    Some(n) if !n.is_undefined() => cur = n,
                    _ => return Ok(default),
                }
            }
            Ok(cur)
        },
    );
}

/// The groups of `pattern`'s first match in `txt` (Salt's `regex_match` anchors the pattern,
/// `regex_search` does not), with the `ignorecase` and `multiline` flags.
fn regex_groups(txt: &str, pattern: &str, kwargs: &Kwargs) -> Result<JValue, Error> {
    let re = build_regex(
        pattern,
        flag(kwargs, "ignorecase")?,
        flag(kwargs, "multiline")?,
    )?;
    kwargs.assert_all_used()?;
    Ok(groups(re.captures(txt)))
}

/// The regex filters and the `match`, `equalto` and `list` tests.
fn register_regex(env: &mut Environment<'static>) {
    env.add_filter(
        "regex_match",
        |txt: String, rgx: String, kwargs: Kwargs| -> Result<JValue, Error> {
            regex_groups(&txt, &format!("^(?:{rgx})"), &kwargs)
        },
    );
    env.add_filter(
        "regex_search",
        |txt: String, rgx: String, kwargs: Kwargs| -> Result<JValue, Error> {
            regex_groups(&txt, &rgx, &kwargs)
        },
    );
    env.add_filter(
        "regex_replace",
        |txt: String, rgx: String, val: String, kwargs: Kwargs| -> Result<String, Error> {
            let re = build_regex(
                &rgx,
                flag(&kwargs, "ignorecase")?,
                flag(&kwargs, "multiline")?,
            )?;
            kwargs.assert_all_used()?;
            // Python's \1 and \g<name> become ${1} and ${name}.
            let backref =
                regex::Regex::new(r"\\(\d+)|\\g<(\w+)>").map_err(|e| err(e.to_string()))?;
            let val = val.replace('$', "$$");
            let val = backref.replace_all(&val, |c: &regex::Captures<'_>| {
                format!(
                    "${{{}}}",
                    c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str())
                )
            });
            Ok(re.replace_all(&txt, val.as_ref()).into_owned())
        },
    );
    env.add_test("match", |txt: String, rgx: String| {
        regex::Regex::new(&format!("^(?:{rgx})")).is_ok_and(|re| re.is_match(&txt))
    });
    env.add_test("equalto", |a: JValue, b: JValue| a == b);
    env.add_test("list", |v: JValue| v.kind() == ValueKind::Seq);
    // Jinja's `callable`: macros and `salt[...]` functions (plain objects) are.
    env.add_test("callable", |v: JValue| {
        (v.kind() == ValueKind::Plain && v.as_object().is_some())
            || (v.kind() == ValueKind::Map && format!("{v:?}").starts_with("<macro "))
    });
    // Jinja's `iterable` (Python's `iter()` works): None is not.
    env.add_test("iterable", |v: JValue| {
        !v.is_none() && !v.is_undefined() && v.try_iter().is_ok()
    });
    // Jinja's `sequence` (`len()` and `[]` work): dicts and strings are, as in Python.
    env.add_test("sequence", |v: JValue| {
        matches!(
            v.kind(),
            ValueKind::Seq | ValueKind::Map | ValueKind::String | ValueKind::Bytes
        ) && !format!("{v:?}").starts_with("<macro ")
    });
    // Jinja's `int(default=0, base=10)`: a string in `base` (a float's text truncated), a
    // number truncated, anything else the default.
    env.add_filter(
        "int",
        |v: JValue, default: Option<JValue>, base: Option<u32>| -> JValue {
            let default = default.unwrap_or(JValue::from(0));
            let base = base.unwrap_or(10);
            match v.kind() {
                ValueKind::Number | ValueKind::Bool => {
                    if let Ok(i) = i64::try_from(v.clone()) {
                        return JValue::from(i);
                    }
                    match f64::try_from(v) {
                        Ok(f) if f.is_finite() => JValue::from(f.trunc() as i64),
                        _ => default,
                    }
                }
                ValueKind::String => {
                    let text = v.as_str().unwrap_or_default().trim().replace('_', "");
                    py_int(&text, base)
                        .map(JValue::from)
                        .or_else(|| {
                            (base == 10)
                                .then(|| text.parse::<f64>().ok())
                                .flatten()
                                .filter(|f| f.is_finite())
                                .map(|f| JValue::from(f.trunc() as i64))
                        })
                        .unwrap_or(default)
                }
                _ => default,
            }
        },
    );
    // Jinja's `float(default=0.0)`.
    env.add_filter("float", |v: JValue, default: Option<JValue>| -> JValue {
        let default = default.unwrap_or(JValue::from(0.0));
        match v.kind() {
            ValueKind::Number | ValueKind::Bool => f64::try_from(v).map_or(default, JValue::from),
            ValueKind::String => v
                .as_str()
                .unwrap_or_default()
                .trim()
                .replace('_', "")
                .parse::<f64>()
                .map_or(default, JValue::from),
            _ => default,
        }
    });
    // Pairs as Python's tuples: `zip` (minijinja's, its items made tuples).
    env.add_filter(
        "zip",
        |state: &State, v: JValue, others: Rest<JValue>| -> Result<JValue, Error> {
            Tuple::pairs_of(&minijinja::filters::zip(state, v, others)?)
        },
    );
    // Jinja's `random`: one item of a sequence (a character of a string), at random.
    env.add_filter("random", |v: JValue| -> Result<JValue, Error> {
        use std::hash::{BuildHasher, Hasher};
        let n = v
            .len()
            .ok_or_else(|| err(format!("random() needs a sequence, got {}", v.kind())))?;
        if n == 0 {
            return Ok(JValue::UNDEFINED);
        }
        let pick = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish() as usize
            % n;
        v.get_item_by_index(pick)
    });
}

/// The YAML quoting filters (`yaml_squote`, `yaml_dquote`, `yaml_encode`).
fn register_yaml_quoting(env: &mut Environment<'static>) {
    env.add_filter("yaml_squote", |v: JValue| yaml_single(&py_text(&v)));
    env.add_filter("yaml_dquote", |v: JValue| yaml_double(&py_text(&v)));
    env.add_filter("yaml_encode", |v: JValue| -> Result<String, Error> {
        match to_json(&v) {
            Value::String(s) => Ok(if yaml_plain_ok(&s, false) {
                s
            } else {
                yaml_double(&s)
            }),
            scalar @ (Value::Null | Value::Bool(_) | Value::Number(_)) => {
                Ok(yaml_scalar(&scalar, false))
            }
            _ => Err(err(
                "yaml_encode() only works with YAML scalar data".to_string()
            )),
        }
    });
}

/// The serializer filters (`tojson`, `json`, `yaml`, `python`, `load_*`).
fn register_serializers(env: &mut Environment<'static>) {
    env.add_filter(
        "tojson",
        |v: JValue, kwargs: Kwargs| -> Result<JValue, Error> {
            // Salt's `tojson(val, indent=None, **options)`: `json.dumps` with
            // `ensure_ascii=True` unless told otherwise.
            let mut opts = Dumps::default();
            if let Some(n) = kwargs.get::<Option<usize>>("indent")? {
                opts = opts.indent(n);
            }
            if kwargs.get::<Option<bool>>("sort_keys")? == Some(true) {
                opts = opts.sort_keys();
            }
            if let Some(on) = kwargs.get::<Option<bool>>("ensure_ascii")? {
                opts = opts.ensure_ascii(on);
            }
            let text = dumps(&to_json(&v), &opts)
                .replace('<', "\\u003c")
                .replace('>', "\\u003e")
                .replace('&', "\\u0026")
                .replace('\'', "\\u0027");
            Ok(JValue::from_safe_string(text))
        },
    );
    env.add_filter(
        "json",
        |v: JValue, rest: Rest<JValue>, kwargs: Kwargs| -> Result<JValue, Error> {
            let sort = match kwargs.get::<Option<JValue>>("sort_keys")? {
                Some(flag) => flag.is_true(),
                None => rest.first().is_none_or(JValue::is_true),
            };
            let indent = match kwargs.get::<Option<JValue>>("indent")? {
                Some(i) => Some(i),
                None => rest.get(1).cloned(),
            }
            .and_then(|i| usize::try_from(i).ok());
            kwargs.assert_all_used()?;
            let data = to_json(&v);
            let mut opts = Dumps::default();
            if sort {
                opts = opts.sort_keys();
            }
            if let Some(n) = indent {
                opts = opts.indent(n);
            }
            let text = dumps(&data, &opts);
            Ok(JValue::from_safe_string(text))
        },
    );
    env.add_filter(
        "yaml",
        |v: JValue, rest: Rest<JValue>, kwargs: Kwargs| -> Result<JValue, Error> {
            let flow = match kwargs.get::<Option<JValue>>("flow_style")? {
                Some(flag) => flag.is_true(),
                None => rest.first().is_none_or(JValue::is_true),
            };
            kwargs.assert_all_used()?;
            let data = to_json(&v);
            let text = if flow || !matches!(data, Value::Object(_) | Value::Array(_)) {
                yaml_flow(&data)
            } else {
                let mut out = String::new();
                yaml_block(&data, 0, &mut out);
                out.trim_end().to_string()
            };
            Ok(JValue::from_safe_string(text))
        },
    );
    // pprint.pformat: keys sorted; its wrapping of values past 80 columns is not done.
    env.add_filter("python", |v: JValue| super::values::jinja_pformat(&v));
    env.add_filter("load_yaml", |v: JValue| parse_data("yaml", &py_text(&v)));
    env.add_filter("load_json", |v: JValue| parse_data("json", &py_text(&v)));
    env.add_filter("load_text", |v: JValue| py_text(&v));
}

/// `avg`, the type and IP checks, the hashes, base64, `path_join` and `quote`.
fn register_checks_and_hashes(env: &mut Environment<'static>) {
    env.add_filter("avg", |v: JValue| -> Result<f64, Error> {
        let list = items(&v)?;
        if list.is_empty() {
            return Ok(0.0);
        }
        let mut sum = 0.0;
        for item in &list {
            sum += f64::try_from(item.clone())?;
        }
        Ok(sum / list.len() as f64)
    });
    env.add_filter("is_list", |v: JValue| v.kind() == ValueKind::Seq);
    env.add_filter("is_ip", |v: String| is_ip(&v, true, true));
    env.add_filter("is_ipv4", |v: String| is_ip(&v, true, false));
    env.add_filter("is_ipv6", |v: String| is_ip(&v, false, true));
    env.add_filter("md5", |v: JValue| {
        use md5::Digest;
        hex(&md5::Md5::digest(py_text(&v).as_bytes()))
    });
    env.add_filter("sha1", |v: JValue| {
        use sha1::Digest;
        hex(&sha1::Sha1::digest(py_text(&v).as_bytes()))
    });
    env.add_filter("sha256", |v: JValue| {
        use sha2::Digest;
        hex(&sha2::Sha256::digest(py_text(&v).as_bytes()))
    });
    env.add_filter("sha512", |v: JValue| {
        use sha2::Digest;
        hex(&sha2::Sha512::digest(py_text(&v).as_bytes()))
    });
    env.add_filter("base64_encode", |v: JValue| {
        python::b64encode(py_text(&v).as_bytes())
    });
    env.add_filter("base64_decode", |v: JValue| -> Result<String, Error> {
        let bytes = python::b64decode(&py_text(&v)).map_err(|e| err(e.to_string()))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    });
    env.add_filter("path_join", |first: String, rest: Rest<String>| {
        let mut out = first;
        for part in rest.iter() {
            if part.starts_with('/') {
                out = part.clone();
            } else if out.is_empty() || out.ends_with('/') {
                out.push_str(part);
            } else {
                out.push('/');
                out.push_str(part);
            }
        }
        out
    });
    env.add_filter("quote", |v: JValue| shell_quote(&py_text(&v)));
}

/// `flatten`, the set filters and the number conversions.
fn register_sets(env: &mut Environment<'static>) {
    env.add_filter(
        "flatten",
        |v: JValue, kwargs: Kwargs| -> Result<JValue, Error> {
            let levels: Option<i64> = kwargs.get("levels")?;
            kwargs.assert_all_used()?;
            let mut out = Vec::new();
            flatten_into(&v, levels, &mut out);
            Ok(MutList::from_items(out))
        },
    );
    env.add_filter("union", |a: JValue, b: JValue| -> Result<JValue, Error> {
        let mut all = items(&a)?;
        all.extend(items(&b)?);
        Ok(MutList::from_items(unique_items(all)))
    });
    env.add_filter(
        "intersect",
        |a: JValue, b: JValue| -> Result<JValue, Error> {
            let other = items(&b)?;
            Ok(MutList::from_items(unique_items(
                items(&a)?
                    .into_iter()
                    .filter(|x| other.contains(x))
                    .collect(),
            )))
        },
    );
    env.add_filter(
        "difference",
        |a: JValue, b: JValue| -> Result<JValue, Error> {
            let other = items(&b)?;
            Ok(MutList::from_items(unique_items(
                items(&a)?
                    .into_iter()
                    .filter(|x| !other.contains(x))
                    .collect(),
            )))
        },
    );
    env.add_filter(
        "symmetric_difference",
        |a: JValue, b: JValue| -> Result<JValue, Error> {
            let left = items(&a)?;
            let right = items(&b)?;
            let mut out: Vec<JValue> = left
                .iter()
                .filter(|x| !right.contains(x))
                .cloned()
                .collect();
            out.extend(right.iter().filter(|x| !left.contains(x)).cloned());
            Ok(MutList::from_items(unique_items(out)))
        },
    );
    env.add_filter("to_num", |v: JValue| number(&v));
    env.add_filter("str_to_num", |v: JValue| number(&v));
}

/// Jinja's `truncate` and `dictsort` as Salt's Jinja has them.
fn register_truncate_dictsort(env: &mut Environment<'static>) {
    // Jinja's truncate (positional killwords/end as well as keywords, leeway 5).
    env.add_filter(
        "truncate",
        |v: JValue, rest: Rest<JValue>, kwargs: Kwargs| -> Result<String, Error> {
            let s = py_text(&v);
            let pick = |i: usize, name: &str| -> Result<Option<JValue>, Error> {
                Ok(kwargs
                    .get::<Option<JValue>>(name)?
                    .or_else(|| rest.get(i).cloned()))
            };
            let length = pick(0, "length")?
                .and_then(|l| usize::try_from(l).ok())
                .unwrap_or(255);
            let killwords = pick(1, "killwords")?.is_some_and(|k| k.is_true());
            let end = pick(2, "end")?.map_or_else(|| "...".to_string(), |e| py_text(&e));
            let leeway = pick(3, "leeway")?
                .and_then(|l| usize::try_from(l).ok())
                .unwrap_or(5);
            kwargs.assert_all_used()?;
            let chars: Vec<char> = s.chars().collect();
            if chars.len() <= length + leeway {
                return Ok(s);
            }
            let cut: String = chars[..length.saturating_sub(end.chars().count())]
                .iter()
                .collect();
            if killwords {
                return Ok(cut + &end);
            }
            let kept = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
            Ok(format!("{kept}{end}"))
        },
    );
    // Jinja's dictsort(case_sensitive=False, by='key', reverse=False), positional or keyword.
    env.add_filter(
        "dictsort",
        |v: JValue, rest: Rest<JValue>, kwargs: Kwargs| -> Result<JValue, Error> {
            let pick = |i: usize, name: &str| -> Result<Option<JValue>, Error> {
                Ok(kwargs
                    .get::<Option<JValue>>(name)?
                    .or_else(|| rest.get(i).cloned()))
            };
            let case_sensitive = pick(0, "case_sensitive")?.is_some_and(|c| c.is_true());
            let by_value = pick(1, "by")?.is_some_and(|b| b.as_str() == Some("value"));
            let reverse = pick(2, "reverse")?.is_some_and(|r| r.is_true());
            kwargs.assert_all_used()?;
            let mut pairs = Vec::new();
            for k in v.try_iter()? {
                let val = v.get_item(&k)?;
                pairs.push((k, val));
            }
            let fold = |x: &JValue| -> JValue {
                match x.as_str() {
                    Some(s) if !case_sensitive => JValue::from(s.to_lowercase()),
                    _ => x.clone(),
                }
            };
            pairs.sort_by(|a, b| {
                let (x, y) = if by_value { (&a.1, &b.1) } else { (&a.0, &b.0) };
                fold(x).cmp(&fold(y))
            });
            if reverse {
                pairs.reverse();
            }
            Ok(JValue::from(
                pairs
                    .into_iter()
                    .map(|(k, v)| Tuple::from_items(vec![k, v]))
                    .collect::<Vec<_>>(),
            ))
        },
    );
}

/// Jinja's `indent` as Salt's Jinja has it.
fn register_indent(env: &mut Environment<'static>) {
    // Jinja's indent(width=4, first=False, blank=False), keeping its trailing-newline quirk.
    env.add_filter(
        "indent",
        |v: JValue, rest: Rest<JValue>, kwargs: Kwargs| -> Result<String, Error> {
            let pick = |i: usize, name: &str| -> Result<Option<JValue>, Error> {
                Ok(kwargs
                    .get::<Option<JValue>>(name)?
                    .or_else(|| rest.get(i).cloned()))
            };
            let indention = match pick(0, "width")? {
                Some(w) if w.as_str().is_some() => w.as_str().unwrap_or_default().to_string(),
                Some(w) => " ".repeat(usize::try_from(w).unwrap_or(4)),
                None => "    ".to_string(),
            };
            let first = pick(1, "first")?.is_some_and(|f| f.is_true());
            let blank = pick(2, "blank")?.is_some_and(|b| b.is_true());
            kwargs.assert_all_used()?;
            let text = format!("{}\n", py_text(&v));
            let lines: Vec<&str> = text.lines().collect();
            let mut rv = if blank {
                lines.join(&format!("\n{indention}"))
            } else {
                let mut it = lines.iter();
                let mut rv = it.next().map(|l| l.to_string()).unwrap_or_default();
                let more: Vec<String> = it
                    .map(|l| {
                        if l.is_empty() {
                            String::new()
                        } else {
                            format!("{indention}{l}")
                        }
                    })
                    .collect();
                if !more.is_empty() {
                    rv.push('\n');
                    rv.push_str(&more.join("\n"));
                }
                rv
            };
            if first {
                rv = format!("{indention}{rv}");
            }
            Ok(rv)
        },
    );
}

/// `strftime`/`date_format`, `center`, `is_empty` and `contains_whitespace`.
fn register_dates_and_text(env: &mut Environment<'static>) {
    // salt.utils.dateutils.strftime without timelib: a timestamp (number or digits), or
    // now when none; formatted in local time.
    let strftime = |date: Option<JValue>, format: Option<String>| -> Result<String, Error> {
        use chrono::TimeZone;
        let format = format.unwrap_or_else(|| "%Y-%m-%d".to_string());
        let when = match date.filter(|d| !d.is_none() && !d.is_undefined()) {
            None => chrono::Local::now(),
            Some(d) => {
                let secs = match d.as_str() {
                    Some(s) => s.trim().parse::<f64>().map_err(|_| {
                        err(format!(
                            "RuntimeError: Unable to parse {s}. Consider installing timelib"
                        ))
                    })?,
                    None => f64::try_from(d.clone())?,
                };
                let whole = secs.floor();
                let nanos = ((secs - whole) * 1e9).round() as u32;
                chrono::Local
                    .timestamp_opt(whole as i64, nanos)
                    .single()
                    .ok_or_else(|| err(format!("Unable to parse {secs}")))?
            }
        };
        Ok(when.format(&format).to_string())
    };
    env.add_filter("strftime", strftime);
    env.add_filter("date_format", strftime);
    env.add_filter("center", |v: JValue, width: Option<usize>| {
        let s = py_text(&v);
        let w = width.unwrap_or(80);
        let len = s.chars().count();
        if len >= w {
            return s;
        }
        let pad = w - len;
        let left = pad / 2 + (pad & w & 1);
        format!("{}{s}{}", " ".repeat(left), " ".repeat(pad - left))
    });
    env.add_filter("is_empty", |v: JValue| v.len().is_some_and(|l| l == 0));
    env.add_filter("contains_whitespace", |v: String| {
        v.chars().any(char::is_whitespace)
    });
}

/// A value as Python's `str()` gives it.
fn py_text(v: &JValue) -> String {
    super::values::py_str(v)
}
