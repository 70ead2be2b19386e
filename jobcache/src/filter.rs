//! `jobs.list_jobs` filtering without I/O: Salt's fnmatch globs on a job's functions and target.

use serde_json::Value;

use crate::JobFilter;

/// A compiled `fnmatch` glob.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Glob(Vec<Token>);

/// One element of a glob.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// `*`: any run of characters, including none.
    Star,
    /// `?`: exactly one character.
    One,
    /// `[...]` or `[!...]`: one character in (or, when negated, not in) the ranges.
    Set {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    /// Any other character, matched as itself.
    Lit(char),
}

impl Glob {
    /// Compiles `pattern` as Python's `fnmatch.translate` reads it: a `[` without a closing `]`
    /// is a literal, a `]` first in a set is a member, and there is no escape character.
    fn new(pattern: &str) -> Glob {
        let chars: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::with_capacity(chars.len());
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '*' => {
                    if tokens.last() != Some(&Token::Star) {
                        tokens.push(Token::Star);
                    }
                    i += 1;
                }
                '?' => {
                    tokens.push(Token::One);
                    i += 1;
                }
                '[' => match parse_set(&chars, i + 1) {
                    Some((token, next)) => {
                        tokens.push(token);
                        i = next;
                    }
                    None => {
                        tokens.push(Token::Lit('['));
                        i += 1;
                    }
                },
                c => {
                    tokens.push(Token::Lit(c));
                    i += 1;
                }
            }
        }
        Glob(tokens)
    }

    /// Whether the whole of `name` matches (case-sensitive, as `fnmatch` is on POSIX).
    fn matches(&self, name: &str) -> bool {
        let name: Vec<char> = name.chars().collect();
        let tokens = &self.0;
        let (mut t, mut n) = (0, 0);
        // Where to resume after the last `*`: the token after it, and the name position it has eaten up to.
        let mut backtrack: Option<(usize, usize)> = None;
        while n < name.len() {
            match tokens.get(t) {
                Some(Token::Star) => {
                    backtrack = Some((t + 1, n));
                    t += 1;
                    continue;
                }
                Some(token) if token.matches_one(name[n]) => {
                    t += 1;
                    n += 1;
                    continue;
                }
                _ => {}
            }
            match backtrack {
                Some((after_star, eaten)) => {
                    t = after_star;
                    n = eaten + 1;
                    backtrack = Some((after_star, eaten + 1));
                }
                None => return false,
            }
        }
        tokens[t..].iter().all(|token| *token == Token::Star)
    }
}

impl Token {
    /// Whether this single-character token matches `c`.
    fn matches_one(&self, c: char) -> bool {
        match self {
            Token::Star => false,
            Token::One => true,
            Token::Lit(l) => *l == c,
            Token::Set { negated, ranges } => {
                ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
            }
        }
    }
}

/// Parses a set whose body starts at `start` (just after `[`); returns it and the index after `]`,
/// or `None` when there is no closing `]`.
fn parse_set(chars: &[char], start: usize) -> Option<(Token, usize)> {
    let mut i = start;
    let negated = chars.get(i) == Some(&'!');
    if negated {
        i += 1;
    }
    let body_start = i;
    // A `]` first in the set is a member, not the end.
    if chars.get(i) == Some(&']') {
        i += 1;
    }
    while chars.get(i)? != &']' {
        i += 1;
    }
    let body = &chars[body_start..i];
    let mut ranges = Vec::new();
    let mut j = 0;
    while j < body.len() {
        if j + 2 < body.len() && body[j + 1] == '-' {
            // A reversed range such as `z-a` matches nothing, as in Python.
            if body[j] <= body[j + 2] {
                ranges.push((body[j], body[j + 2]));
            }
            j += 3;
        } else {
            ranges.push((body[j], body[j]));
            j += 1;
        }
    }
    Some((Token::Set { negated, ranges }, i + 1))
}

/// Splits a search term on commas, as Salt's `split_input` does: `"test.*,cmd.run"` is two globs.
fn split_input(term: &str) -> Vec<Glob> {
    term.split(',').map(|p| Glob::new(p.trim())).collect()
}

/// The strings a load field holds: one string, or each string of a list (a multi-function job's
/// `fun`, a list target's `tgt`); `default` when the field is missing, as `jobs.list_jobs` does.
fn field_values<'a>(load: &'a Value, key: &str, default: &'a str) -> Vec<&'a str> {
    match load.get(key) {
        None | Some(Value::Null) => vec![default],
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        Some(_) => Vec::new(),
    }
}

/// The glob part of a [`JobFilter`], compiled once per `list_jobs` call.
#[derive(Debug, Clone)]
pub(crate) struct LoadMatcher {
    /// Globs of which one must match one of the job's functions, if any were given.
    functions: Option<Vec<Glob>>,
    /// Globs of which one must match the job's target (or one of a list target), if any were given.
    targets: Option<Vec<Glob>>,
}

impl LoadMatcher {
    /// Compiles the function and target globs of `filter`.
    pub(crate) fn new(filter: &JobFilter) -> LoadMatcher {
        LoadMatcher {
            functions: filter.function.as_deref().map(split_input),
            targets: filter.target.as_deref().map(split_input),
        }
    }

    /// Whether no glob was given, so every job in the time range matches.
    pub(crate) fn is_empty(&self) -> bool {
        self.functions.is_none() && self.targets.is_none()
    }

    /// Whether a job with this publish load passes the globs.
    pub(crate) fn matches(&self, load: &Value) -> bool {
        let any = |globs: &Option<Vec<Glob>>, key: &str, default: &str| match globs {
            None => true,
            Some(globs) => field_values(load, key, default)
                .iter()
                .any(|value| globs.iter().any(|g| g.matches(value))),
        };
        any(&self.targets, "tgt", "unknown-target")
            && any(&self.functions, "fun", "unknown-function")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(pattern: &str, name: &str, expected: bool) {
        assert_eq!(
            Glob::new(pattern).matches(name),
            expected,
            "fnmatch({name:?}, {pattern:?})"
        );
    }

    #[test]
    fn fnmatch_like_python() {
        let cases = [
            ("*", "", true),
            ("*", "anything", true),
            ("test.*", "test.ping", true),
            ("test.*", "cmd.run", false),
            ("test.p?ng", "test.ping", true),
            ("test.p?ng", "test.pinng", false),
            ("*.run", "cmd.run", true),
            ("*.run", "cmd.run_all", false),
            ("*run*", "cmd.run_all", true),
            ("web[0-9]", "web5", true),
            ("web[0-9]", "webx", false),
            ("web[!0-9]", "webx", true),
            ("web[!0-9]", "web5", false),
            ("web[]x]", "web]", true),
            ("web[", "web[", true),
            ("web[z-a]", "webm", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("a**c", "abc", true),
            ("Test.*", "test.ping", false),
            ("", "", true),
            ("", "x", false),
            ("minion-*", "minion-é", true),
        ];
        for (pattern, name, expected) in cases {
            check(pattern, name, expected);
        }
    }

    fn matcher(function: Option<&str>, target: Option<&str>) -> LoadMatcher {
        LoadMatcher::new(&JobFilter {
            function: function.map(str::to_owned),
            target: target.map(str::to_owned),
            ..JobFilter::default()
        })
    }

    #[test]
    fn load_matching() {
        let single = json!({"fun": "test.ping", "tgt": "web*"});
        let multi = json!({"fun": ["test.ping", "cmd.run"], "tgt": ["web1", "db1"]});
        let cases = [
            (matcher(None, None), &single, true),
            (matcher(Some("test.*"), None), &single, true),
            (matcher(Some("cmd.*"), None), &single, false),
            (matcher(Some("cmd.*"), None), &multi, true),
            (matcher(Some("state.*, cmd.run"), None), &multi, true),
            (matcher(None, Some("web*")), &single, true),
            (matcher(None, Some("db*")), &multi, true),
            (matcher(None, Some("db*")), &single, false),
            (matcher(Some("test.ping"), Some("db*")), &single, false),
            (matcher(Some("test.ping"), Some("db*")), &multi, true),
        ];
        for (i, (m, load, expected)) in cases.into_iter().enumerate() {
            assert_eq!(m.matches(load), expected, "case {i}: {m:?} on {load}");
        }
        assert!(matcher(Some("unknown-*"), None).matches(&json!({})));
    }
}
