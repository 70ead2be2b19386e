//! Salt's `json` outputter: Python's `json.dumps(data, ensure_ascii=False, indent=...)`.

use serde_json::Value;

use crate::python::number_repr;

/// The largest `--out-indent` honoured; larger values are treated as this one
/// (Python would try to build lines of that many spaces).
const MAX_INDENT: i64 = 1024;

/// Renders `data` as `json_out.output` does: four spaces by default, the given
/// indent when `--out-indent` is 0 or more, one line when it is negative.
pub(super) fn render(data: &Value, indent: Option<i64>) -> String {
    let indent = match indent {
        None => Some(4),
        Some(n) if n < 0 => None,
        Some(n) => Some(usize::try_from(n.min(MAX_INDENT)).unwrap_or(4)),
    };
    let mut out = String::new();
    write_value(&mut out, data, indent, 0);
    out
}

/// Appends `v` at nesting `level`; `indent` None means the one-line form.
fn write_value(out: &mut String, v: &Value, indent: Option<usize>, level: usize) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&number_repr(n)),
        Value::String(s) => write_str(out, s),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                separator(out, i, indent, level + 1);
                write_value(out, item, indent, level + 1);
            }
            close(out, indent, level);
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                separator(out, i, indent, level + 1);
                write_str(out, k);
                out.push_str(": ");
                write_value(out, item, indent, level + 1);
            }
            close(out, indent, level);
            out.push('}');
        }
    }
}

/// What goes before item `i` of a container whose items sit at `level`.
fn separator(out: &mut String, i: usize, indent: Option<usize>, level: usize) {
    match indent {
        None => {
            if i > 0 {
                out.push_str(", ");
            }
        }
        Some(width) => {
            if i > 0 {
                out.push(',');
            }
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', width * level));
        }
    }
}

/// What goes before the closing bracket of a container at `level`.
fn close(out: &mut String, indent: Option<usize>, level: usize) {
    if let Some(width) = indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', width * level));
    }
}

/// A JSON string as Python writes it with `ensure_ascii=False`: only `"`, `\`
/// and control characters are escaped (hex in lower case).
fn write_str(out: &mut String, s: &str) {
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
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}
