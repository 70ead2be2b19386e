//! Small reimplementations of the Python behaviour Salt's return values depend on:
//! truthiness, `str()`/`repr()`, `int()`, `fnmatch`, `shlex.split`, Salt's `strip_rst` and
//! `traverse_dict_and_list`.

use serde_json::Value;

use crate::error::ExecError;

/// Python truthiness of a JSON value (`None`, `False`, `0`, `""`, `[]` and `{}` are false).
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Salt's `salt.utils.data.is_true`: booleans as they are, numbers above zero, the string
/// `"true"` in any case or a numeric string above zero.
pub fn is_true(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f > 0.0),
        Value::String(s) => {
            s.eq_ignore_ascii_case("true") || s.trim().parse::<f64>().is_ok_and(|f| f > 0.0)
        }
        _ => false,
    }
}

/// Python's `str()` of a value: strings as they are, everything else as `repr()`.
pub fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// Python's `repr()` of a value as Salt would have it after loading JSON or YAML.
pub fn py_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (None, Some(u), _) => u.to_string(),
            (None, None, Some(f)) => py_float(f),
            _ => n.to_string(),
        },
        Value::String(s) => py_repr_str(s),
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(py_repr).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(o) => {
            let items: Vec<String> = o
                .iter()
                .map(|(k, v)| format!("{}: {}", py_repr_str(k), py_repr(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

/// Python's `repr()` of a string: single quotes unless the text holds one and no double quote.
pub fn py_repr_str(s: &str) -> String {
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
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `repr()` of a float: shortest round-trip digits, `.0` on whole numbers, exponent
/// form below 1e-4 and from 1e16 on.
pub fn py_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if f != 0.0 && !(-4..16).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let plain = format!("{f}");
    if plain.contains('.') {
        plain
    } else {
        format!("{plain}.0")
    }
}

/// Python's `int()` of a value, with Python's error messages.
pub fn py_int(v: &Value) -> Result<i64, ExecError> {
    match v {
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i)
            } else if let Some(f) = n.as_f64().filter(|f| f.is_finite()) {
                // Truncation towards zero is what int() does with a float.
                Ok(f.trunc() as i64)
            } else {
                Err(ExecError::exception(
                    "OverflowError",
                    "cannot convert float infinity to integer",
                ))
            }
        }
        Value::String(s) => {
            let t = s.trim().replace('_', "");
            t.parse::<i64>().map_err(|_| {
                ExecError::exception(
                    "ValueError",
                    format!("invalid literal for int() with base 10: {}", py_repr_str(s)),
                )
            })
        }
        other => Err(ExecError::exception(
            "TypeError",
            format!(
                "int() argument must be a string, a bytes-like object or a real number, not '{}'",
                py_type(other)
            ),
        )),
    }
}

/// The Python type name of a value, for error messages.
pub fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// Python's `fnmatch.fnmatch` on POSIX: `*`, `?`, `[seq]`, `[!seq]`, case-sensitive, `*` also
/// matches `.` and `/`.
pub fn fnmatch(name: &str, pattern: &str) -> bool {
    let name: Vec<char> = name.chars().collect();
    let pat: Vec<char> = pattern.chars().collect();
    glob_at(&name, &pat)
}

fn glob_at(name: &[char], pat: &[char]) -> bool {
    let (mut n, mut p) = (0usize, 0usize);
    // Where to resume after the last `*`: (pattern index after it, name index it matched up to).
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        let step = match pat.get(p) {
            Some('*') => {
                star = Some((p + 1, n));
                p += 1;
                continue;
            }
            Some('?') => Some(1),
            Some('[') => match class_at(pat, p, name[n]) {
                Some((true, len)) => Some(len),
                Some((false, _)) => None,
                // No closing bracket: `[` is a literal.
                None => (name[n] == '[').then_some(1),
            },
            Some(c) => (*c == name[n]).then_some(1),
            None => None,
        };
        match step {
            Some(len) => {
                p += len;
                n += 1;
            }
            None => match star {
                Some((sp, sn)) => {
                    p = sp;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pat[p..].iter().all(|c| *c == '*')
}

/// Matches `c` against the bracket class starting at `pat[start] == '['`; returns whether it
/// matched and the class's length, or `None` when the class is not closed.
fn class_at(pat: &[char], start: usize, c: char) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negate = pat.get(i) == Some(&'!');
    if negate {
        i += 1;
    }
    let first = i;
    let mut matched = false;
    loop {
        let cur = *pat.get(i)?;
        if cur == ']' && i > first {
            break;
        }
        if pat.get(i + 1) == Some(&'-') && pat.get(i + 2).is_some_and(|e| *e != ']') {
            let end = pat[i + 2];
            if cur <= c && c <= end {
                matched = true;
            }
            i += 3;
        } else {
            if cur == c {
                matched = true;
            }
            i += 1;
        }
    }
    Some((matched != negate, i + 1 - start))
}

/// Python's `shlex.split(s)` (POSIX mode, no comments), with its error messages.
pub fn shlex_split(s: &str) -> Result<Vec<String>, ExecError> {
    #[derive(PartialEq)]
    enum State {
        Between,
        Word,
        Single,
        Double,
    }
    let mut out = Vec::new();
    let mut token = String::new();
    let mut state = State::Between;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match state {
            State::Between | State::Word => match c {
                ' ' | '\t' | '\r' | '\n' => {
                    if state == State::Word {
                        out.push(std::mem::take(&mut token));
                        state = State::Between;
                    }
                }
                '\'' => state = State::Single,
                '"' => state = State::Double,
                '\\' => {
                    let next = chars.next().ok_or_else(|| {
                        ExecError::exception("ValueError", "No escaped character")
                    })?;
                    token.push(next);
                    state = State::Word;
                }
                c => {
                    token.push(c);
                    state = State::Word;
                }
            },
            State::Single => match c {
                '\'' => state = State::Word,
                c => token.push(c),
            },
            State::Double => match c {
                '"' => state = State::Word,
                '\\' => {
                    let next = chars.next().ok_or_else(|| {
                        ExecError::exception("ValueError", "No escaped character")
                    })?;
                    if next != '"' && next != '\\' {
                        token.push('\\');
                    }
                    token.push(next);
                }
                c => token.push(c),
            },
        }
    }
    match state {
        State::Single | State::Double => {
            Err(ExecError::exception("ValueError", "No closing quotation"))
        }
        State::Word => {
            out.push(token);
            Ok(out)
        }
        State::Between => Ok(out),
    }
}

/// Salt's `salt.utils.doc.strip_rst`: drops `.. code-block:: x` lines and renames the note,
/// warning and version directives.
pub fn strip_rst(doc: &str) -> String {
    let mut out = String::with_capacity(doc.len());
    let mut rest = doc;
    const DIRECTIVE: &str = ".. code-block:: ";
    while let Some(pos) = rest.find(DIRECTIVE) {
        let after = &rest[pos + DIRECTIVE.len()..];
        let lang_len = after
            .find(|c: char| c.is_whitespace())
            .unwrap_or(after.len());
        let tail = &after[lang_len..];
        let newlines = tail.chars().take(2).take_while(|c| *c == '\n').count();
        if lang_len == 0 || newlines == 0 {
            // Not a match of ` *.. code-block:: \S+\n{1,2}`: keep it and move on.
            out.push_str(&rest[..pos + DIRECTIVE.len()]);
            rest = after;
            continue;
        }
        let before = &rest[..pos];
        out.push_str(before.trim_end_matches(' '));
        rest = &tail[newlines..];
    }
    out.push_str(rest);
    out.replace(".. note::", "Note:")
        .replace(".. warning::", "Warning:")
        .replace(".. versionadded::", "New in version")
        .replace(".. versionchanged::", "Changed in version")
}

/// Python's `datetime.utcfromtimestamp(secs).isoformat()`: `2026-11-21T00:06:32.223181`,
/// the fraction left out when it is zero.
pub fn utc_isoformat(secs: f64) -> String {
    let micros_total = (secs * 1e6).round() as i64;
    let (days, rem) = (
        micros_total.div_euclid(86_400_000_000),
        micros_total.rem_euclid(86_400_000_000),
    );
    let (y, m, d) = civil_from_days(days);
    let (h, rem) = (rem / 3_600_000_000, rem % 3_600_000_000);
    let (min, rem) = (rem / 60_000_000, rem % 60_000_000);
    let (sec, micros) = (rem / 1_000_000, rem % 1_000_000);
    let base = format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{sec:02}");
    if micros == 0 {
        base
    } else {
        format!("{base}.{micros:06}")
    }
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Salt's `traverse_dict_and_list`: walks `key` split on `delimiter` through dicts and lists
/// (numeric parts index lists, other parts look into the dicts a list holds).
pub fn traverse<'a>(data: &'a Value, key: &str, delimiter: &str) -> Option<&'a Value> {
    let mut ptr = data;
    for part in key.split(delimiter) {
        ptr = match ptr {
            Value::Array(list) => match part.trim().parse::<i64>() {
                Ok(idx) => {
                    let len = list.len() as i64;
                    let idx = if idx < 0 { idx + len } else { idx };
                    if (0..len).contains(&idx) {
                        &list[idx as usize]
                    } else {
                        return None;
                    }
                }
                Err(_) => list
                    .iter()
                    .filter_map(Value::as_object)
                    .find_map(|d| d.get(part))?,
            },
            Value::Object(map) => map.get(part)?,
            // Salt raises a TypeError when indexing into a scalar; the default is more useful.
            _ => return None,
        };
    }
    Some(ptr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
            assert_eq!(py_repr(&v), want, "repr of {v}");
        }
        assert_eq!(py_str(&json!("x")), "x");
    }

    #[test]
    fn isoformat_matches_python() {
        assert_eq!(utc_isoformat(0.0), "1970-01-01T00:00:00");
        assert_eq!(
            utc_isoformat(1_795_219_592.223_181),
            "2026-11-21T00:06:32.223181"
        );
        assert_eq!(utc_isoformat(951_782_400.5), "2000-02-29T00:00:00.500000");
    }

    #[test]
    fn int_matches_python() {
        assert_eq!(py_int(&json!("  42 ")).ok(), Some(42));
        assert_eq!(py_int(&json!(2.9)).ok(), Some(2));
        assert_eq!(py_int(&json!(true)).ok(), Some(1));
        let err = py_int(&json!("x")).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("ValueError: invalid literal for int() with base 10: 'x'")
        );
        let err = py_int(&json!(null)).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "TypeError: int() argument must be a string, a bytes-like object or a real number, not 'NoneType'"
            )
        );
    }

    #[test]
    fn truthiness() {
        for v in [
            json!(null),
            json!(false),
            json!(0),
            json!(""),
            json!([]),
            json!({}),
        ] {
            assert!(!truthy(&v), "{v}");
        }
        for v in [
            json!(true),
            json!(1),
            json!("x"),
            json!([0]),
            json!({"a": 0}),
        ] {
            assert!(truthy(&v), "{v}");
        }
    }

    #[test]
    fn fnmatch_cases() {
        let cases = [
            ("test.echo", "test.*", true),
            ("test.echo", "test.e*", true),
            ("test.echo", "t?st.echo", true),
            ("test.echo", "test", false),
            ("web/01", "web*", true),
            ("web1", "web[0-9]", true),
            ("weba", "web[!0-9]", true),
            ("web1", "web[!0-9]", false),
            ("web[", "web[", true),
            ("a]", "[]]]", false),
            ("]]", "[]]]", true),
            ("abcabd", "*abd", true),
            ("", "*", true),
            ("x", "", false),
        ];
        for (name, pat, want) in cases {
            assert_eq!(fnmatch(name, pat), want, "fnmatch({name:?}, {pat:?})");
        }
    }

    #[test]
    fn shlex_matches_python() {
        let ok = |s: &str| shlex_split(s).unwrap_or_default();
        assert_eq!(
            ok("echo a\\ b \"c d\" e\\\"f 'g h'"),
            ["echo", "a b", "c d", "e\"f", "g h"]
        );
        assert_eq!(ok("a '' b"), ["a", "", "b"]);
        assert_eq!(ok("a\"b c\"d"), ["ab cd"]);
        assert_eq!(ok("\"a\\$b\\\\\""), ["a\\$b\\"]);
        assert_eq!(ok("  "), Vec::<String>::new());
        let err = shlex_split("echo \"unclosed").err().map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some("ValueError: No closing quotation"));
    }

    #[test]
    fn strip_rst_matches_salt() {
        let raw = "\n    Return text\n\n    CLI Example:\n\n    .. code-block:: bash\n\n        salt '*' test.echo 'x'\n    ";
        assert_eq!(
            strip_rst(raw),
            "\n    Return text\n\n    CLI Example:\n\n        salt '*' test.echo 'x'\n    "
        );
        assert_eq!(strip_rst(".. versionadded:: 1"), "New in version 1");
    }

    #[test]
    fn traverse_cases() {
        let data =
            json!({"roles": ["web", {"db": "pg"}], "pkg": {"apache": "httpd"}, "os": "Debian"});
        let t = |k: &str, d: &str| traverse(&data, k, d).cloned();
        assert_eq!(t("pkg:apache", ":"), Some(json!("httpd")));
        assert_eq!(t("pkg|apache", "|"), Some(json!("httpd")));
        assert_eq!(t("roles:0", ":"), Some(json!("web")));
        assert_eq!(t("roles:-1", ":"), Some(json!({"db": "pg"})));
        assert_eq!(t("roles:db", ":"), Some(json!("pg")));
        assert_eq!(t("roles:5", ":"), None);
        assert_eq!(t("os:x", ":"), None);
        assert_eq!(t("nosuch", ":"), None);
    }
}
