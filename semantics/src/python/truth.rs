//! Python's truthiness and Salt's `salt.utils.data.is_true`, for JSON values.

use serde_json::Value;

use super::text::is_space;

/// Python's `bool(v)` of the value `json.loads` would give: `None`, `False`, `0`,
/// `0.0`, `""`, `[]` and `{}` are false, everything else true.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Salt's `salt.utils.data.is_true`: tries `int(v)`, then `float(v)`, and if one
/// worked the answer is whether the number is above zero (so `0.5` is false, being
/// `int(0.5) == 0`, while the string `"0.5"` is true, `int()` failing and `float()`
/// not); a string no number reads is true only when it is `"true"` in any case (no
/// blanks allowed); anything else is Python's `bool(v)` (`[0]` is true).
pub fn is_true(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_i64().map_or_else(
            || {
                n.as_u64()
                    .map_or_else(|| n.as_f64().is_some_and(|f| f.trunc() > 0.0), |u| u > 0)
            },
            |i| i > 0,
        ),
        Value::String(s) => match float_of(s) {
            Some(f) => f > 0.0,
            None => s.to_lowercase() == "true",
        },
        other => truthy(other),
    }
}

/// Python's `float(s)` of a string (which reads every string `int(s)` reads):
/// blanks around it, `_` between digits, `inf`/`infinity`/`nan` in any case;
/// `None` where Python raises `ValueError`. Digits other than ASCII are not read.
pub fn float_of(s: &str) -> Option<f64> {
    let t = s.trim_matches(is_space);
    if t.contains('_') {
        let chars: Vec<char> = t.chars().collect();
        let between_digits = |i: usize| {
            i > 0
                && chars[i - 1].is_ascii_digit()
                && chars.get(i + 1).is_some_and(char::is_ascii_digit)
        };
        if (0..chars.len()).any(|i| chars[i] == '_' && !between_digits(i)) {
            return None;
        }
        return t.replace('_', "").parse().ok();
    }
    t.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn truthiness() {
        for v in [
            json!(null),
            json!(false),
            json!(0),
            json!(0.0),
            json!(-0.0),
            json!(""),
            json!([]),
            json!({}),
        ] {
            assert!(!truthy(&v), "{v}");
        }
        for v in [
            json!(true),
            json!(1),
            json!(0.5),
            json!("x"),
            json!("0"),
            json!([0]),
            json!({"a": 0}),
        ] {
            assert!(truthy(&v), "{v}");
        }
    }

    /// Each answer observed from `salt.utils.data.is_true` of Salt 3007.8.
    #[test]
    fn is_true_matches_salt() {
        let cases = [
            (json!(0.5), false),
            (json!(0.99), false),
            (json!(1.0), true),
            (json!(1.5), true),
            (json!(-0.0), false),
            (json!(1), true),
            (json!(2), true),
            (json!(0), false),
            (json!(-1), false),
            (json!(18_446_744_073_709_551_615_u64), true),
            (json!(true), true),
            (json!(false), false),
            (json!(null), false),
            (json!(""), false),
            (json!([0]), true),
            (json!([1]), true),
            (json!([]), false),
            (json!({}), false),
            (json!({"a": 1}), true),
            (json!("0.5"), true),
            (json!("-0.5"), false),
            (json!("0.0"), false),
            (json!("-1"), false),
            (json!("1_0"), true),
            (json!("1_000"), true),
            (json!("_1"), false),
            (json!("1__0"), false),
            (json!("1_0.5"), true),
            (json!("1_0e1_0"), true),
            (json!(" 2 "), true),
            (json!("\t3\n"), true),
            (json!("1 0"), false),
            (json!("inf"), true),
            (json!("Infinity"), true),
            (json!("-inf"), false),
            (json!("nan"), false),
            (json!("+.5"), true),
            (json!("1."), true),
            (json!("."), false),
            (json!("1e3"), true),
            (json!("1e-400"), false),
            (json!("0x1"), false),
            (json!("0x10"), false),
            (json!("True"), true),
            (json!("TRUE"), true),
            (json!("TrUe"), true),
            (json!(" true"), false),
            (json!("true "), false),
            (json!("  true "), false),
            (json!("yes"), false),
        ];
        for (v, want) in cases {
            assert_eq!(is_true(&v), want, "is_true({v})");
        }
    }
}
