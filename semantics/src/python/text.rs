//! Python's `str` methods that Salt's text handling leans on: `isspace()`,
//! `rstrip()` and `splitlines()`.

/// Python's `str.isspace()` for one character (the `\s` of Python's `re`).
pub fn is_space(c: char) -> bool {
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
pub fn rstrip(s: &str) -> &str {
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
pub fn splitlines(s: &str, keepends: bool) -> Vec<&str> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
