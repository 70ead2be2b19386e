//! Python's `re.match` on top of fancy-regex: anchored at the start only, with
//! the few syntax differences that matter for targets smoothed over.

use fancy_regex::Regex;

/// A regex that behaves like a compiled Python pattern used with `re.match`.
#[derive(Debug, Clone)]
pub struct PyRegex {
    /// The translated pattern wrapped in `\A(?:...)`.
    regex: Regex,
}

impl PyRegex {
    /// Compiles a Python regex; the error is the regex engine's message.
    pub fn new(pattern: &str) -> Result<PyRegex, String> {
        let translated = translate(pattern);
        match Regex::new(&format!("\\A(?:{translated})")) {
            Ok(regex) => Ok(PyRegex { regex }),
            // Report positions in the pattern as given, not in the wrapper.
            Err(wrapped) => Err(Regex::new(&translated).err().unwrap_or(wrapped).to_string()),
        }
    }

    /// `re.match(pattern, text)`: a match starting at the beginning of `text`.
    /// A match aborted by the backtracking limit counts as no match.
    pub fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text).unwrap_or(false)
    }
}

/// Rewrites Python-only syntax: `\Z` becomes `\z`, `{,n}` becomes `{0,n}`, a
/// brace that is not a quantifier is a literal, and inside a set `[`, `&`
/// and `~` are literals (Rust would read nested sets and set operations).
fn translate(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i = copy_escape(&chars, i, &mut out),
            '[' => i = copy_set(&chars, i, &mut out),
            '{' => i = copy_brace(&chars, i, &mut out),
            '}' => {
                out.push_str("\\}");
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Copies the escape at `i` (`\Z` as `\z`) and returns the index after it.
fn copy_escape(chars: &[char], i: usize, out: &mut String) -> usize {
    match chars.get(i + 1) {
        Some('Z') => out.push_str("\\z"),
        Some(c) => {
            out.push('\\');
            out.push(*c);
        }
        None => out.push('\\'),
    }
    i + 2
}

/// Copies the set opening at `i` and returns the index after its `]`.
fn copy_set(chars: &[char], mut i: usize, out: &mut String) -> usize {
    out.push('[');
    i += 1;
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    // A `]` first in the set is a literal in Python.
    if chars.get(i) == Some(&']') {
        out.push_str("\\]");
        i += 1;
    }
    while i < chars.len() {
        match chars[i] {
            ']' => {
                out.push(']');
                return i + 1;
            }
            '\\' => {
                i = copy_escape(chars, i, out);
                continue;
            }
            c @ ('[' | '&' | '~') => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
        i += 1;
    }
    i
}

/// Copies a `{` at `i` as a quantifier when Python reads one, else as a literal.
fn copy_brace(chars: &[char], i: usize, out: &mut String) -> usize {
    let digits = |from: usize| {
        let n = chars[from..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        (chars[from..from + n].iter().collect::<String>(), from + n)
    };
    let (lo, mut j) = digits(i + 1);
    let hi = if chars.get(j) == Some(&',') {
        let (hi, next) = digits(j + 1);
        j = next;
        Some(hi)
    } else {
        None
    };
    let closes = chars.get(j) == Some(&'}');
    if !closes || (j == i + 1) {
        out.push_str("\\{");
        return i + 1;
    }
    let lo = if lo.is_empty() { "0".to_owned() } else { lo };
    match hi {
        Some(hi) => out.push_str(&format!("{{{lo},{hi}}}")),
        None => out.push_str(&format!("{{{lo}}}")),
    }
    j + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, text: &str) -> bool {
        PyRegex::new(pattern).is_ok_and(|r| r.is_match(text))
    }

    #[test]
    fn re_match_semantics() {
        let cases: &[(&str, &str, bool)] = &[
            (r"web\d+", "web01.example.com", true),
            (r"web\d+", "xweb01", false),
            ("web", "web", true),
            ("a|b", "bx", true),
            (r"web\d+\Z", "web01", true),
            (r"web\d+\Z", "web01x", false),
            ("a{,2}b", "aab", true),
            ("a{2}", "aa", true),
            ("a{", "a{", true),
            ("a{}", "a{}", true),
            ("a{x}", "a{x}", true),
            ("[[]", "[", true),
            ("[]a]", "]", true),
            ("[a&&b]", "&", true),
            ("(?=web)w", "web", true),
            (r"(\w)\1", "aa", true),
            ("(?i)WEB", "web", true),
        ];
        for (pattern, text, want) in cases {
            assert_eq!(m(pattern, text), *want, "re.match({pattern:?}, {text:?})");
        }
    }

    #[test]
    fn bad_patterns_are_errors() {
        for pattern in ["web(", "*a", "[a", "(?P<x>a"] {
            assert!(PyRegex::new(pattern).is_err(), "{pattern}");
        }
    }
}
