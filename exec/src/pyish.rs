//! The Python behaviour only the minion's execution modules need: `int()` with its errors,
//! `shlex.split`, `datetime.isoformat` and Salt's `strip_rst`.
//! `repr()`, `str()`, truthiness, `is_true`, `fnmatch` and `yamlify_arg` live in
//! `saltq_semantics::python`, `traverse_dict_and_list` in `saltq_semantics::target`.

use saltq_semantics::python;
use serde_json::Value;

use crate::error::ExecError;

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
                    format!(
                        "invalid literal for int() with base 10: {}",
                        python::str_repr(s)
                    ),
                )
            })
        }
        other => Err(ExecError::exception(
            "TypeError",
            format!(
                "int() argument must be a string, a bytes-like object or a real number, not '{}'",
                saltq_semantics::python::type_name(other)
            ),
        )),
    }
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
    utc_isoformat_micros((secs * 1e6).round() as i64)
}

/// [`utc_isoformat`] of a Unix time in whole microseconds.
pub fn utc_isoformat_micros(micros_total: i64) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
