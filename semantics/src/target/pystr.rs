//! Python's `str()` of JSON-shaped data, which Salt compares targets against
//! (`str(True)` is `"True"`, `str(3.0)` is `"3.0"`, a list is its `repr`).

use serde_json::{Number, Value};

/// Python's `str(value)` for the value `json.loads` would give.
pub fn py_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => {
            let mut out = String::new();
            write_repr(&mut out, other);
            out
        }
    }
}

/// Appends Python's `repr(value)` to `out`.
fn write_repr(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => out.push_str(&number_str(n)),
        Value::String(s) => write_str_repr(out, s),
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                write_repr(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (n, (key, item)) in map.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                write_str_repr(out, key);
                out.push_str(": ");
                write_repr(out, item);
            }
            out.push('}');
        }
    }
}

/// Python's `str()` of a number: digits for an int, `float.__repr__` for a float.
pub fn number_str(n: &Number) -> String {
    match (n.as_i64(), n.as_u64(), n.as_f64()) {
        (Some(i), _, _) => i.to_string(),
        (_, Some(u), _) => u.to_string(),
        (_, _, Some(f)) => float_str(f),
        _ => n.to_string(),
    }
}

/// Python's `repr(float)`: shortest round-trip digits, fixed notation for
/// decimal exponents in `-4..16`, else `d.ddde+XX`.
pub fn float_str(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if !(-4..16).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.unsigned_abs());
    }
    let point = usize::try_from(exp + 1).unwrap_or(0);
    let body = if exp < 0 {
        let zeros = "0".repeat(usize::try_from(-exp - 1).unwrap_or(0));
        format!("0.{zeros}{digits}")
    } else if point >= digits.len() {
        format!("{digits}{}.0", "0".repeat(point - digits.len()))
    } else {
        format!("{}.{}", &digits[..point], &digits[point..])
    };
    format!("{sign}{body}")
}

/// Appends Python's `repr(s)`: single quotes unless `s` holds `'` and no `"`.
fn write_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c => {
                let cp = u32::from(c);
                let escaped = match cp {
                    0..=0xff => format!("\\x{cp:02x}"),
                    0x100..=0xffff => format!("\\u{cp:04x}"),
                    _ => format!("\\U{cp:08x}"),
                };
                out.push_str(&escaped);
            }
        }
    }
    out.push(quote);
}

/// An approximation of Python's `str.isprintable()`: controls, separators other
/// than the space, common format characters and private use are not printable.
fn is_printable(c: char) -> bool {
    let cp = u32::from(c);
    !(c.is_control()
        || matches!(
            cp,
            0xa0 | 0xad
                | 0x1680
                | 0x2000..=0x200f
                | 0x2028..=0x202f
                | 0x205f..=0x2064
                | 0x3000
                | 0xfeff
                | 0xe000..=0xf8ff
                | 0xf0000..
        ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_python_str() {
        let cases = [
            (json!(true), "True"),
            (json!(null), "None"),
            (json!(3), "3"),
            (json!(3.0), "3.0"),
            (json!(-0.0), "-0.0"),
            (json!(0.0001), "0.0001"),
            (json!(0.00001), "1e-05"),
            (json!(1e16), "1e+16"),
            (json!(1.5e16), "1.5e+16"),
            (json!(123_456_789_012_345.6), "123456789012345.6"),
            (json!(1e15), "1000000000000000.0"),
            (json!("plain"), "plain"),
            (json!(["a", 1, null]), "['a', 1, None]"),
            (json!({"k": "it's"}), "{'k': \"it's\"}"),
            (json!(["a\nb", "\u{1}"]), "['a\\nb', '\\x01']"),
        ];
        for (value, want) in cases {
            assert_eq!(py_str(&value), want, "{value}");
        }
    }
}
