//! Python's `pprint.pformat()` with its defaults, as Salt's `txt` outputter uses it.

use serde_json::{Map, Value};

use super::repr::{repr, str_repr};
use super::text::{is_space, splitlines};

/// Number of characters (code points), which is Python's `len(str)`.
fn py_len(s: &str) -> usize {
    s.chars().count()
}

/// `pprint.pformat(v)` with its defaults (width 80, indent 1, dicts sorted).
pub fn pformat(v: &Value) -> String {
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

/// `repr()` as pprint computes it: like [`repr`] but with dict keys sorted.
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
        other => repr(other),
    }
}

/// Appends `n` spaces.
fn push_spaces(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}
