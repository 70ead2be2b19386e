//! Python's text rules that Salt's outputters lean on: `repr()`, `str.splitlines()`,
//! `str.isspace()`/`rstrip()` and `pprint.pformat()`, applied to JSON values.

use serde_json::{Map, Number, Value};

use super::printable::NON_PRINTABLE;

/// Python's `repr()` of the value Python's `json.loads` would give for `v`.
///
/// `null`/`true`/`false` become `None`/`True`/`False`, strings are quoted and
/// escaped as Python does (single quotes unless the text holds `'` and no `"`),
/// floats print as Python prints them (`1.0`, `1e+20`, `-0.0`), arrays become
/// lists (`[1, 2]`) and objects dicts in their own key order (`{'a': 1}`).
pub fn python_repr(v: &Value) -> String {
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

/// Python's `str()` of a value: the text itself for a string, `repr()` otherwise.
pub(super) fn python_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => python_repr(other),
    }
}

/// `repr()` of a JSON number: an int as its digits, a float as Python's `float.__repr__`.
pub(super) fn number_repr(n: &Number) -> String {
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
pub(super) fn float_repr(f: f64) -> String {
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
pub(super) fn str_repr(s: &str) -> String {
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

/// Python's `str.isspace()` for one character (the `\s` of Python's `re`).
pub(super) fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\u{1c}'..='\u{1f}'
            | ' '
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// Python's `str.rstrip()` with no argument.
pub(super) fn rstrip(s: &str) -> &str {
    s.trim_end_matches(is_space)
}

/// Whether `c` ends a line for Python's `str.splitlines()`.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{0b}'
            | '\u{0c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// Python's `str.splitlines(keepends)`: `\r\n` counts as one break, and a
/// break at the very end does not start an empty last line.
pub(super) fn splitlines(s: &str, keepends: bool) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut iter = s.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        if !is_line_break(c) {
            continue;
        }
        let mut end = i + c.len_utf8();
        if c == '\r'
            && let Some(&(j, '\n')) = iter.peek()
        {
            end = j + 1;
            iter.next();
        }
        lines.push(if keepends {
            &s[start..end]
        } else {
            &s[start..i]
        });
        start = end;
    }
    if start < s.len() {
        lines.push(&s[start..]);
    }
    lines
}

/// Number of characters (code points), which is Python's `len(str)`.
fn py_len(s: &str) -> usize {
    s.chars().count()
}

/// `pprint.pformat(v)` with its defaults (width 80, indent 1, dicts sorted).
pub(super) fn pformat(v: &Value) -> String {
    let mut out = String::new();
    Pretty { width: 80 }.format(&mut out, v, 0, 0, 0);
    out
}

/// The state of one `pprint.PrettyPrinter` (only the width varies from Python's defaults).
struct Pretty {
    /// Columns the output tries to fit in.
    width: usize,
}

impl Pretty {
    /// `PrettyPrinter._format`: the one-line repr if it fits, else the wrapped form.
    fn format(&self, out: &mut String, v: &Value, indent: usize, allowance: usize, level: usize) {
        let rep = sorted_repr(v);
        let max_width = self.width.saturating_sub(indent + allowance);
        if py_len(&rep) > max_width {
            match v {
                Value::Object(map) => return self.dict(out, map, indent, allowance, level + 1),
                Value::Array(items) => return self.list(out, items, indent, allowance, level + 1),
                Value::String(s) => return self.string(out, s, indent, allowance, level + 1),
                _ => {}
            }
        }
        out.push_str(&rep);
    }

    /// `PrettyPrinter._pprint_dict` and `_format_dict_items`.
    fn dict(
        &self,
        out: &mut String,
        map: &Map<String, Value>,
        indent: usize,
        allowance: usize,
        level: usize,
    ) {
        out.push('{');
        let mut items: Vec<(&String, &Value)> = map.iter().collect();
        items.sort_by(|a, b| a.0.cmp(b.0));
        let indent = indent + 1;
        let allowance = allowance + 1;
        let last_index = items.len().saturating_sub(1);
        for (i, (key, ent)) in items.into_iter().enumerate() {
            let last = i == last_index;
            let rep = str_repr(key);
            out.push_str(&rep);
            out.push_str(": ");
            let child_allowance = if last { allowance } else { 1 };
            self.format(out, ent, indent + py_len(&rep) + 2, child_allowance, level);
            if !last {
                out.push_str(",\n");
                push_spaces(out, indent);
            }
        }
        out.push('}');
    }

    /// `PrettyPrinter._pprint_list` and `_format_items` (not compact).
    fn list(
        &self,
        out: &mut String,
        items: &[Value],
        indent: usize,
        allowance: usize,
        level: usize,
    ) {
        out.push('[');
        let indent = indent + 1;
        let allowance = allowance + 1;
        for (i, ent) in items.iter().enumerate() {
            let last = i + 1 == items.len();
            if i > 0 {
                out.push_str(",\n");
                push_spaces(out, indent);
            }
            self.format(out, ent, indent, if last { allowance } else { 1 }, level);
        }
        out.push(']');
    }

    /// `PrettyPrinter._pprint_str`: a long string split at whitespace into
    /// adjacent literals, in parentheses at the top level.
    fn string(&self, out: &mut String, s: &str, indent: usize, allowance: usize, level: usize) {
        if s.is_empty() {
            out.push_str(&str_repr(s));
            return;
        }
        let (indent, allowance) = if level == 1 {
            (indent + 1, allowance + 1)
        } else {
            (indent, allowance)
        };
        let width = i64::try_from(self.width).unwrap_or(i64::MAX);
        let indent_i = i64::try_from(indent).unwrap_or(i64::MAX);
        let allowance_i = i64::try_from(allowance).unwrap_or(i64::MAX);
        let max_width = width - indent_i;
        let mut max_width1 = max_width;
        let lines = splitlines(s, true);
        let mut chunks: Vec<String> = Vec::new();
        let mut rep = String::new();
        for (i, line) in lines.iter().enumerate() {
            let last_line = i + 1 == lines.len();
            rep = str_repr(line);
            if last_line {
                max_width1 -= allowance_i;
            }
            if len_i64(&rep) <= max_width1 {
                chunks.push(rep.clone());
                continue;
            }
            let parts = space_parts(line);
            let mut max_width2 = max_width;
            let mut current = String::new();
            for (j, part) in parts.iter().enumerate() {
                let candidate = format!("{current}{part}");
                if j + 1 == parts.len() && last_line {
                    max_width2 -= allowance_i;
                }
                if len_i64(&str_repr(&candidate)) > max_width2 {
                    if !current.is_empty() {
                        chunks.push(str_repr(&current));
                    }
                    current = (*part).to_owned();
                } else {
                    current = candidate;
                }
            }
            if !current.is_empty() {
                chunks.push(str_repr(&current));
            }
        }
        if chunks.len() == 1 {
            out.push_str(&rep);
            return;
        }
        if level == 1 {
            out.push('(');
        }
        for (i, chunk) in chunks.iter().enumerate() {
            if i > 0 {
                out.push('\n');
                push_spaces(out, indent);
            }
            out.push_str(chunk);
        }
        if level == 1 {
            out.push(')');
        }
    }
}

/// Python's `len(str)` as a signed number, for width arithmetic that may go negative.
fn len_i64(s: &str) -> i64 {
    i64::try_from(py_len(s)).unwrap_or(i64::MAX)
}

/// `re.findall(r'\S*\s*', line)` without the final empty match: runs of
/// non-space followed by runs of space.
fn space_parts(line: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    for (i, c) in line.char_indices() {
        let space = is_space(c);
        if in_space && !space {
            parts.push(&line[start..i]);
            start = i;
        }
        in_space = space;
    }
    if start < line.len() {
        parts.push(&line[start..]);
    }
    parts
}

/// `repr()` as pprint computes it: like [`python_repr`] but with dict keys sorted.
fn sorted_repr(v: &Value) -> String {
    match v {
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(sorted_repr).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let mut items: Vec<(&String, &Value)> = map.iter().collect();
            items.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> = items
                .into_iter()
                .map(|(k, v)| format!("{}: {}", str_repr(k), sorted_repr(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        other => python_repr(other),
    }
}

/// Appends `n` spaces.
fn push_spaces(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
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
        assert_eq!(python_repr(&v), expected, "repr({v})");
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

    #[test]
    fn splitlines_like_python() {
        assert_eq!(splitlines("", false), Vec::<&str>::new());
        assert_eq!(splitlines("\n", false), vec![""]);
        assert_eq!(splitlines("a\r\nb\rc\n", false), vec!["a", "b", "c"]);
        assert_eq!(
            splitlines("a\u{2028}b\u{1c}", true),
            vec!["a\u{2028}", "b\u{1c}"]
        );
        assert_eq!(splitlines("a\n\nb", false), vec!["a", "", "b"]);
    }

    #[test]
    fn rstrip_like_python() {
        assert_eq!(rstrip("a \t\n\u{85}\u{3000}\u{1f}"), "a");
        assert_eq!(rstrip("a\u{200b}"), "a\u{200b}");
    }
}
