//! The pre-pass that turns Salt's own Jinja tags into ones minijinja runs, keeping every
//! line where it was (no newline is added or removed):
//!
//! - `{% import_yaml EXPR as NAME %}` (and `import_json`, `import_text`) becomes
//!   `{% set NAME = __salt_import("yaml", EXPR) %}`;
//! - `{% load_yaml as NAME %}...{% endload %}` (and `load_json`, `load_text`) becomes
//!   `{% set NAME %}...{% endset %}{% set NAME = __salt_load("yaml", NAME) %}`;
//! - `{% set NAME = EXPR %}` becomes `{% set NAME = __mut(EXPR) %}`, so that maps and lists
//!   a template builds can be mutated (`{% do d.update(...) %}`);
//! - `{% do EXPR %}` becomes `{% set __saltq_do = EXPR %}`: Jinja's `do` takes any
//!   expression (`{% do d.pop('x') if c %}`), minijinja's only a call.

/// Rewrites `text`; the result has the same lines.
pub fn rewrite(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text;
    let mut loads: Vec<(String, String)> = Vec::new();
    while let Some(start) = rest.find(['{']) {
        let after = &rest[start..];
        if after.starts_with("{#") {
            let end = after.find("#}").map_or(after.len(), |e| e + 2);
            out.push_str(&rest[..start + end]);
            rest = &rest[start + end..];
            continue;
        }
        if after.starts_with("{{") {
            out.push_str(&rest[..start]);
            let Some(end) = block_end(after, b'}') else {
                out.push_str(after);
                rest = "";
                break;
            };
            out.push_str("{{");
            out.push_str(&percent_format(&after[2..end - 2]));
            out.push_str("}}");
            rest = &after[end..];
            continue;
        }
        if !after.starts_with("{%") {
            out.push_str(&rest[..start + 1]);
            rest = &rest[start + 1..];
            continue;
        }
        out.push_str(&rest[..start]);
        let Some(end) = tag_end(after) else {
            out.push_str(after);
            rest = "";
            break;
        };
        let tag = &after[..end];
        // {% raw %} ... {% endraw %} is copied as it is.
        let inner_full = &tag[2..tag.len() - 2];
        let (lmod, inner, rmod) = split_mods(inner_full);
        let trimmed = inner.trim();
        if trimmed == "raw" {
            let body = &after[end..];
            let stop = find_endraw(body).unwrap_or(body.len());
            out.push_str(tag);
            out.push_str(&body[..stop]);
            rest = &body[stop..];
            continue;
        }
        out.push_str(&rewrite_tag(tag, lmod, inner, rmod, &mut loads));
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

fn find_endraw(body: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = body[from..].find("{%") {
        let at = from + i;
        let end = tag_end(&body[at..])?;
        let (_, inner, _) = split_mods(&body[at + 2..at + end - 2]);
        if inner.trim() == "endraw" {
            return Some(at);
        }
        from = at + end;
    }
    None
}

/// Where the tag starting at `s[0..2] == "{%"` ends (after `%}`), skipping quoted strings.
fn tag_end(s: &str) -> Option<usize> {
    block_end(s, b'%')
}

/// Where the block starting at `s[0..2]` ends (after `<close>}`), skipping quoted strings.
fn block_end(s: &str, close: u8) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = 2;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) => {
                if b == b'\\' {
                    i += 1;
                } else if b == q {
                    quote = None;
                }
            }
            None => {
                if b == b'\'' || b == b'"' {
                    quote = Some(b);
                } else if b == close && bytes.get(i + 1) == Some(&b'}') {
                    return Some(i + 2);
                }
            }
        }
        i += 1;
    }
    None
}

fn split_mods(inner: &str) -> (&str, &str, &str) {
    let (lmod, inner) = match inner.as_bytes().first() {
        Some(b'-') | Some(b'+') => inner.split_at(1),
        _ => ("", inner),
    };
    let (inner, rmod) = match inner.as_bytes().last() {
        Some(b'-') | Some(b'+') => inner.split_at(inner.len() - 1),
        _ => (inner, ""),
    };
    (lmod, inner, rmod)
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

fn rewrite_tag(
    tag: &str,
    lmod: &str,
    inner: &str,
    rmod: &str,
    loads: &mut Vec<(String, String)>,
) -> String {
    let inner = &percent_format(inner);
    let lead_ws = &inner[..inner.len() - inner.trim_start().len()];
    let body = inner.trim();
    let (word, args) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let args = args.trim();
    match word {
        "import_yaml" | "import_json" | "import_text" => {
            let kind = &word["import_".len()..];
            let args = args
                .strip_suffix("with context")
                .or_else(|| args.strip_suffix("without context"))
                .unwrap_or(args)
                .trim();
            if let Some((expr, name)) = args.rsplit_once(" as ")
                && is_ident(name.trim())
            {
                return format!(
                    "{{%{lmod}{lead_ws}set {} = __salt_import(\"{kind}\", {}) {rmod}%}}",
                    name.trim(),
                    expr.trim()
                );
            }
            tag.to_string()
        }
        "load_yaml" | "load_json" | "load_text" => {
            let kind = &word["load_".len()..];
            if let Some(name) = args.strip_prefix("as ").map(str::trim)
                && is_ident(name)
            {
                loads.push((kind.to_string(), name.to_string()));
                return format!("{{%{lmod}{lead_ws}set {name} {rmod}%}}");
            }
            tag.to_string()
        }
        "endload" => match loads.pop() {
            Some((kind, name)) => format!(
                "{{%{lmod} endset %}}{{% set {name} = __salt_load(\"{kind}\", {name}) {rmod}%}}"
            ),
            None => tag.to_string(),
        },
        "do" if !args.is_empty() => {
            // Jinja's `do` takes any expression (`do d.pop('x') if c`); minijinja's only a
            // call: evaluate it into a throwaway variable instead.
            format!("{{%{lmod}{lead_ws}set __saltq_do = {args} {rmod}%}}")
        }
        "set" => {
            // Only `set target = expr` with a single target.
            if let Some((target, expr)) = split_assign(args)
                && !target.contains(',')
            {
                return format!(
                    "{{%{lmod}{lead_ws}set {} = __mut({}) {rmod}%}}",
                    target.trim(),
                    expr.trim()
                );
            }
            tag.to_string()
        }
        _ => tag.to_string(),
    }
}

/// Python's `'fmt' % args` on a string literal, which minijinja lacks, becomes
/// `'fmt' | __pyformat(args)`: `%` binds as tightly as a filter's operand here because the
/// operand taken is a primary (a name with its attributes, subscripts and calls, a literal,
/// or a parenthesized group).
pub fn percent_format(expr: &str) -> String {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = String::with_capacity(expr.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c != '\'' && c != '"' {
            out.push(c);
            i += 1;
            continue;
        }
        let end = string_end(&chars, i);
        out.extend(&chars[i..end]);
        i = end;
        // A `%` after the literal (not `%}`), then its operand.
        let mut j = i;
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        if j >= chars.len() || chars[j] != '%' || chars.get(j + 1) == Some(&'}') {
            continue;
        }
        let mut k = j + 1;
        while k < chars.len() && chars[k].is_whitespace() {
            k += 1;
        }
        let Some(op_end) = primary_end(&chars, k) else {
            continue;
        };
        let operand: String = chars[k..op_end].iter().collect();
        // Python spreads only a tuple over the format; a parenthesized group with a comma
        // at its top level is one.
        let filter = if is_tuple(&chars[k..op_end]) {
            "__pyformat_tuple"
        } else {
            "__pyformat"
        };
        out.push_str(&format!(" | {filter}({})", percent_format(&operand)));
        i = op_end;
    }
    out
}

fn is_tuple(op: &[char]) -> bool {
    if op.first() != Some(&'(') || group_end(op, 0) != Some(op.len()) {
        return false;
    }
    let mut depth = 0;
    let mut i = 1;
    while i + 1 < op.len() {
        match op[i] {
            '\'' | '"' => {
                i = string_end(op, i);
                continue;
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

fn string_end(chars: &[char], start: usize) -> usize {
    let q = chars[start];
    let mut i = start + 1;
    while i < chars.len() {
        if chars[i] == '\\' {
            i += 2;
            continue;
        }
        if chars[i] == q {
            return i + 1;
        }
        i += 1;
    }
    chars.len()
}

fn group_end(chars: &[char], start: usize) -> Option<usize> {
    let (open, close) = (
        chars[start],
        match chars[start] {
            '(' => ')',
            '[' => ']',
            _ => '}',
        },
    );
    let mut depth = 0;
    let mut i = start;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' || c == '"' {
            i = string_end(chars, i);
            continue;
        }
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i + 1);
            }
        }
        i += 1;
    }
    None
}

fn primary_end(chars: &[char], start: usize) -> Option<usize> {
    let c = *chars.get(start)?;
    let mut i = if c == '(' || c == '[' || c == '{' {
        group_end(chars, start)?
    } else if c == '\'' || c == '"' {
        string_end(chars, start)
    } else if c.is_ascii_digit() {
        let mut i = start;
        while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
            i += 1;
        }
        i
    } else if c.is_alphabetic() || c == '_' {
        let mut i = start;
        while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
            i += 1;
        }
        i
    } else {
        return None;
    };
    // Trailers: .name, [...], (...).
    loop {
        match chars.get(i) {
            Some('.')
                if chars
                    .get(i + 1)
                    .is_some_and(|c| c.is_alphabetic() || *c == '_') =>
            {
                i += 1;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
            Some('[') | Some('(') => i = group_end(chars, i)?,
            _ => return Some(i),
        }
    }
}

/// Splits `target = expr` at the first `=` that is not part of `==`, `!=`, `<=`, `>=`.
fn split_assign(args: &str) -> Option<(&str, &str)> {
    let bytes = args.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'\'' | b'"' | b'(' | b'[' | b'{' => return None,
            b'=' => {
                if bytes.get(i + 1) == Some(&b'=') {
                    return None;
                }
                let (t, e) = (&args[..i], &args[i + 1..]);
                return (!t.trim().is_empty() && !e.trim().is_empty()).then_some((t, e));
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    #[test]
    fn keeps_lines_and_rewrites_salt_tags() {
        let src = "{% import_yaml tpldir ~ '/d.yaml' as d %}\n{%- load_yaml as y %}\na: 1\n{%- endload -%}\n{% set x = {} %}{% set n.a = 1 %}{% raw %}{% set z = 1 %}{% endraw %}\n";
        let out = rewrite(src);
        assert_eq!(out.lines().count(), src.lines().count());
        assert!(
            out.contains("{% set d = __salt_import(\"yaml\", tpldir ~ '/d.yaml') %}"),
            "{out}"
        );
        assert!(
            out.contains("{%- endset %}{% set y = __salt_load(\"yaml\", y) -%}"),
            "{out}"
        );
        assert!(out.contains("{% set x = __mut({}) %}"), "{out}");
        assert!(
            out.contains("{% raw %}{% set z = 1 %}{% endraw %}"),
            "{out}"
        );
    }

    #[test]
    fn percent_on_a_string_literal_becomes_a_filter() {
        assert_eq!(
            rewrite("{{ '%s-%d' % ('a', 3) ~ 'x' }} {% set y = \"%s\" % grains.id %}"),
            "{{ '%s-%d' | __pyformat_tuple(('a', 3)) ~ 'x' }} {% set y = __mut(\"%s\" | __pyformat(grains.id)) %}"
        );
    }
}
