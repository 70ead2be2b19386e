//! Python's `json.dumps`: the one JSON writer for text Salt writes with it (the `json`
//! outputter, Jinja's `tojson`, `file.serialize`, salt-api's bodies, the returners).

use serde_json::Value;

use super::repr::float_repr;

/// The keyword arguments of `json.dumps` that Salt's callers use.
///
/// `Dumps::default()` is Python's own default (`ensure_ascii=True`, one line, `", "` and
/// `": "`); Salt's `salt.utils.json.dumps` is [`Dumps::salt`] (`ensure_ascii=False`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dumps {
    /// `indent=`: `None` writes one line; `Some(n)` one item a line, `n` spaces a level.
    pub indent: Option<usize>,
    /// `sort_keys=`: dict keys in code-point order instead of their own order.
    pub sort_keys: bool,
    /// `ensure_ascii=`: every character beyond `~` written as `\uXXXX` (UTF-16 units).
    pub ensure_ascii: bool,
    /// `separators=(item, key)`; `None` is Python's default, `(", ", ": ")` on one line
    /// and `(",", ": ")` with an indent.
    pub separators: Option<(&'static str, &'static str)>,
}

impl Default for Dumps {
    fn default() -> Self {
        Dumps {
            indent: None,
            sort_keys: false,
            ensure_ascii: true,
            separators: None,
        }
    }
}

impl Dumps {
    /// `salt.utils.json.dumps`: Python's defaults but `ensure_ascii=False`.
    pub fn salt() -> Self {
        Dumps {
            ensure_ascii: false,
            ..Dumps::default()
        }
    }

    /// The same options with `indent=n`.
    pub fn indent(self, n: usize) -> Self {
        Dumps {
            indent: Some(n),
            ..self
        }
    }

    /// The same options with `sort_keys=True`.
    pub fn sort_keys(self) -> Self {
        Dumps {
            sort_keys: true,
            ..self
        }
    }

    /// The same options with `ensure_ascii` set.
    pub fn ensure_ascii(self, on: bool) -> Self {
        Dumps {
            ensure_ascii: on,
            ..self
        }
    }

    /// The same options with `separators=(item, key)`.
    pub fn separators(self, item: &'static str, key: &'static str) -> Self {
        Dumps {
            separators: Some((item, key)),
            ..self
        }
    }
}

/// `json.dumps(v, ...)` with the given options. Floats are spelled as Python's
/// `float.__repr__` (`1e-05`, `1e+16`, `1.0`); ints as their digits.
pub fn dumps(v: &Value, opts: &Dumps) -> String {
    let (item, key) = opts.separators.unwrap_or(match opts.indent {
        None => (", ", ": "),
        Some(_) => (",", ": "),
    });
    let mut w = Writer {
        out: String::new(),
        opts,
        item,
        key,
    };
    w.value(v, 0);
    w.out
}

/// `salt.utils.json.dumps(v)`: one line, `", "` and `": "`, non-ASCII kept (what salt-api
/// sends and the returners store).
pub fn salt_dumps(v: &Value) -> String {
    dumps(v, &Dumps::salt())
}

/// One `dumps` call in progress.
struct Writer<'a> {
    /// The text so far.
    out: String,
    /// The caller's options.
    opts: &'a Dumps,
    /// The item separator in force.
    item: &'static str,
    /// The key separator in force.
    key: &'static str,
}

impl Writer<'_> {
    /// Appends `v`, a value nested `level` containers deep.
    fn value(&mut self, v: &Value, level: usize) {
        match v {
            Value::Null => self.out.push_str("null"),
            Value::Bool(true) => self.out.push_str("true"),
            Value::Bool(false) => self.out.push_str("false"),
            Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => self.out.push_str(&i.to_string()),
                (None, Some(u), _) => self.out.push_str(&u.to_string()),
                (None, None, Some(f)) => self.out.push_str(&float_json(f)),
                (None, None, None) => self.out.push_str(&n.to_string()),
            },
            Value::String(s) => self.string(s),
            Value::Array(items) if items.is_empty() => self.out.push_str("[]"),
            Value::Object(map) if map.is_empty() => self.out.push_str("{}"),
            Value::Array(items) => {
                self.out.push('[');
                for (i, x) in items.iter().enumerate() {
                    self.before_item(i, level + 1);
                    self.value(x, level + 1);
                }
                self.close(level);
                self.out.push(']');
            }
            Value::Object(map) => {
                self.out.push('{');
                let mut pairs: Vec<(&String, &Value)> = map.iter().collect();
                if self.opts.sort_keys {
                    pairs.sort_by(|a, b| a.0.cmp(b.0));
                }
                for (i, (k, x)) in pairs.into_iter().enumerate() {
                    self.before_item(i, level + 1);
                    self.string(k);
                    self.out.push_str(self.key);
                    self.value(x, level + 1);
                }
                self.close(level);
                self.out.push('}');
            }
        }
    }

    /// What goes before item `i` of a container whose items sit at `level`.
    fn before_item(&mut self, i: usize, level: usize) {
        if i > 0 {
            self.out.push_str(self.item);
        }
        if let Some(width) = self.opts.indent {
            self.out.push('\n');
            self.out.extend(std::iter::repeat_n(' ', width * level));
        }
    }

    /// What goes before the closing bracket of a container at `level`.
    fn close(&mut self, level: usize) {
        if let Some(width) = self.opts.indent {
            self.out.push('\n');
            self.out.extend(std::iter::repeat_n(' ', width * level));
        }
    }

    /// A JSON string as Python writes it: `"`, `\` and control characters escaped (hex in
    /// lower case), and with `ensure_ascii` everything past `~` as UTF-16 `\uXXXX` units.
    fn string(&mut self, s: &str) {
        let out = &mut self.out;
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{08}' => out.push_str("\\b"),
                '\u{0c}' => out.push_str("\\f"),
                c if u32::from(c) < 0x20 || (self.opts.ensure_ascii && u32::from(c) > 0x7e) => {
                    let mut buf = [0u16; 2];
                    for unit in c.encode_utf16(&mut buf) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
}

/// A float as `json.dumps` writes it: `float.__repr__`, with `NaN`/`Infinity` as Python's
/// `allow_nan=True` spells them.
fn float_json(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_owned()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
    } else {
        float_repr(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each expected text is what Python 3.11's `json.dumps` printed for the same value.
    #[test]
    fn dumps_matches_python() {
        let v = json!({"b": [1e-05, 1e16, 1.0, 0.1, -0.0, 12345678901234567890u64], "a": "é\u{7f}\u{1}\"\\"});
        assert_eq!(
            dumps(&v, &Dumps::default()),
            r#"{"b": [1e-05, 1e+16, 1.0, 0.1, -0.0, 12345678901234567890], "a": "\u00e9\u007f\u0001\"\\"}"#
        );
        assert_eq!(
            dumps(&v, &Dumps::salt().sort_keys()),
            "{\"a\": \"é\u{7f}\\u0001\\\"\\\\\", \"b\": [1e-05, 1e+16, 1.0, 0.1, -0.0, 12345678901234567890]}"
        );
        // json.dumps({"k": [1, {}], "e": []}, indent=2)
        assert_eq!(
            dumps(&json!({"k": [1, {}], "e": []}), &Dumps::default().indent(2)),
            "{\n  \"k\": [\n    1,\n    {}\n  ],\n  \"e\": []\n}"
        );
        // json.dumps("😀") and separators=(",", ":")
        assert_eq!(dumps(&json!("😀"), &Dumps::default()), r#""\ud83d\ude00""#);
        assert_eq!(
            dumps(
                &json!([1, {"a": 2}]),
                &Dumps::default().separators(",", ":")
            ),
            r#"[1,{"a":2}]"#
        );
    }
}
