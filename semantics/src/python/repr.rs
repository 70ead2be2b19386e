//! Python's `repr()` and `str()` of the values Python's `json.loads` would give for
//! JSON: the one place saltq spells `None`, `True`, `'quoted'` strings and floats as
//! Python does (used by the outputters, targeting, and the minion's execution modules).

use serde_json::{Number, Value};

use super::printable::NON_PRINTABLE;

/// Python's `repr()` of the value Python's `json.loads` would give for `v`.
///
/// `null`/`true`/`false` become `None`/`True`/`False`, strings are quoted and
/// escaped as Python does (single quotes unless the text holds `'` and no `"`),
/// floats print as Python prints them (`1.0`, `1e+20`, `-0.0`), arrays become
/// lists (`[1, 2]`) and objects dicts in their own key order (`{'a': 1}`).
pub fn repr(v: &Value) -> String {
    let mut out = String::new();
    write_repr(&mut out, v);
    out
}

/// Appends `repr(v)` to `out`.
fn write_repr(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => out.push_str(&number_repr(n)),
        Value::String(s) => out.push_str(&str_repr(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&str_repr(k));
                out.push_str(": ");
                write_repr(out, item);
            }
            out.push('}');
        }
    }
}

/// Python's `repr()` of data as Salt's SLS renderer gives it to a state: every mapping is an
/// `OrderedDict` (`OrderedDict([('b', 2)])`), lists and scalars as [`repr`]. State comments
/// that format a value from an SLS (`grains.present`'s "Set grain x to ...") show this.
pub fn repr_sls(v: &Value) -> String {
    match v {
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(repr_sls).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) if map.is_empty() => "OrderedDict()".to_owned(),
        Value::Object(map) => format!(
            "OrderedDict([{}])",
            map.iter()
                .map(|(k, item)| format!("({}, {})", str_repr(k), repr_sls(item)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => repr(other),
    }
}

/// Python's `str()` of SLS data: the text itself for a string, [`repr_sls`] otherwise.
pub fn str_sls(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => repr_sls(other),
    }
}

/// Python's `str()` of a value: the text itself for a string, `repr()` otherwise.
pub fn str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => repr(other),
    }
}

/// `repr()` of a JSON number: an int as its digits, a float as Python's `float.__repr__`.
pub fn number_repr(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        float_repr(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// Python's `repr(float)`: the shortest digits that round-trip, in fixed notation
/// when the decimal exponent is in `-4..16`, else as `d.ddde+XX`.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    // Rust's `{:e}` gives the shortest digit count that round-trips, as Python's
    // repr does; when two such strings are equally close (the value is a tie),
    // Rust may pick either, so print that many digits exactly rounded, with
    // ties to even, which is the one Python picks.
    let shortest = format!("{f:e}");
    let ndigits = shortest
        .split('e')
        .next()
        .unwrap_or("")
        .chars()
        .filter(char::is_ascii_digit)
        .count();
    let sci = format!("{:.*e}", ndigits.saturating_sub(1), f);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let ndigits = i64::try_from(digits.len()).unwrap_or(i64::MAX);
    // Position of the decimal point relative to the start of `digits`.
    let decpt = exp + 1;
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if !(-4 < decpt && decpt <= 16) {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.unsigned_abs()));
    } else if decpt <= 0 {
        out.push_str("0.");
        for _ in 0..-decpt {
            out.push('0');
        }
        out.push_str(&digits);
    } else if decpt >= ndigits {
        out.push_str(&digits);
        for _ in 0..decpt - ndigits {
            out.push('0');
        }
        out.push_str(".0");
    } else {
        let (int, frac) = digits.split_at(usize::try_from(decpt).unwrap_or(0));
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    }
    out
}

/// PyYAML's `SafeRepresenter.represent_float`: lower-case repr, with `.0` before an
/// exponent that has no dot (`1e+20` becomes `1.0e+20`).
pub fn yaml_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.to_owned();
    }
    let repr = float_repr(f).to_lowercase();
    if !repr.contains('.') && repr.contains('e') {
        repr.replacen('e', ".0e", 1)
    } else {
        repr
    }
}

/// Python's `str.isprintable()` for one character.
fn is_printable(c: char) -> bool {
    let cp = u32::from(c);
    if cp < 0x80 {
        return (0x20..0x7f).contains(&cp);
    }
    NON_PRINTABLE
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_err()
}

/// Python's `repr(str)`.
pub fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c => {
                let cp = u32::from(c);
                if cp <= 0xff {
                    out.push_str(&format!("\\x{cp:02x}"));
                } else if cp <= 0xffff {
                    out.push_str(&format!("\\u{cp:04x}"));
                } else {
                    out.push_str(&format!("\\U{cp:08x}"));
                }
            }
        }
    }
    out.push(quote);
    out
}
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check_float(f: f64, expected: &str) {
        assert_eq!(float_repr(f), expected, "repr({f:?})");
    }

    #[test]
    fn floats_print_as_python() {
        check_float(1.0, "1.0");
        check_float(-0.0, "-0.0");
        check_float(0.5, "0.5");
        check_float(1e20, "1e+20");
        check_float(1.5e20, "1.5e+20");
        check_float(1e16, "1e+16");
        check_float(1e15, "1000000000000000.0");
        check_float(9999999999999998.0, "9999999999999998.0");
        check_float(0.0001, "0.0001");
        check_float(0.00001, "1e-05");
        check_float(2.5e-7, "2.5e-07");
        check_float(5e-324, "5e-324");
        check_float(1.7976931348623157e308, "1.7976931348623157e+308");
        check_float(0.1, "0.1");
        check_float(123.456, "123.456");
        // The doubles 764370012837217.25 and 1580618871439262.25 are ties between
        // two shortest strings: Python takes the even digit, Rust's `{}` the odd.
        check_float(764_370_012_837_217.3, "764370012837217.2");
        check_float(1_580_618_871_439_262.3, "1580618871439262.2");
        check_float(f64::INFINITY, "inf");
        check_float(f64::NEG_INFINITY, "-inf");
        check_float(f64::NAN, "nan");
    }

    fn check(v: Value, expected: &str) {
        assert_eq!(repr(&v), expected, "repr({v})");
    }

    #[test]
    fn scalars() {
        check(json!(null), "None");
        check(json!(true), "True");
        check(json!(false), "False");
        check(json!(-3), "-3");
        check(json!(18446744073709551615u64), "18446744073709551615");
        check(json!(2.0), "2.0");
    }

    #[test]
    fn string_quotes() {
        check(json!("abc"), "'abc'");
        check(json!(""), "''");
        check(json!("it's"), "\"it's\"");
        check(json!("say \"hi\""), "'say \"hi\"'");
        check(json!("both ' and \""), "'both \\' and \"'");
    }

    #[test]
    fn string_escapes() {
        check(json!("back\\slash"), "'back\\\\slash'");
        check(json!("a\nb\tc\rd"), "'a\\nb\\tc\\rd'");
        check(json!("\u{0}\u{7}\u{1b}\u{7f}"), "'\\x00\\x07\\x1b\\x7f'");
        check(json!("\u{85}\u{a0}\u{ad}"), "'\\x85\\xa0\\xad'");
        check(json!("\u{2028}\u{feff}\u{200b}"), "'\\u2028\\ufeff\\u200b'");
        check(json!("\u{e0001}"), "'\\U000e0001'");
    }

    #[test]
    fn string_unicode_kept() {
        check(json!("héllo ✓ 日本語 😀"), "'héllo ✓ 日本語 😀'");
        check(json!("\u{3000}"), "'\\u3000'");
    }

    #[test]
    fn containers() {
        check(json!([]), "[]");
        check(json!({}), "{}");
        check(json!([1, "a", null, [true]]), "[1, 'a', None, [True]]");
        check(
            json!({"b": 1, "a": {"c": [1.5]}}),
            "{'b': 1, 'a': {'c': [1.5]}}",
        );
    }

    /// Targeting's old `py_str` cases.
    #[test]
    fn str_matches_python() {
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
            assert_eq!(str(&value), want, "{value}");
        }
    }

    /// The minion's old `py_repr` cases.
    #[test]
    fn repr_matches_python() {
        let cases = [
            (json!(null), "None"),
            (json!(true), "True"),
            (json!(3), "3"),
            (json!(1.0), "1.0"),
            (json!(1.5), "1.5"),
            (json!(1e16), "1e+16"),
            (json!(0.00001), "1e-05"),
            (json!("it's"), "\"it's\""),
            (json!("a\nb"), "'a\\nb'"),
            (json!(["sleep", "5"]), "['sleep', '5']"),
            (
                json!({"a": 1, "b": [true, null]}),
                "{'a': 1, 'b': [True, None]}",
            ),
        ];
        for (v, want) in cases {
            assert_eq!(repr(&v), want, "repr of {v}");
        }
        assert_eq!(str(&json!("x")), "x");
    }
}
