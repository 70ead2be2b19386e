//! Salt's `subdict_match` and `traverse_dict_and_list` (`salt/utils/data.py`):
//! how `G@`, `P@`, `I@`, `J@` and pillar-exact words look into grains and pillar.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use super::pyregex::PyRegex;
use crate::python::{self, fnmatch};

/// The delimiter Salt hard-codes in the nested lookups of `_dict_match`.
const DEFAULT_DELIMITER: &str = ":";

/// The most key/value parts an expression may have; longer ones match nothing
/// (and are refused when compiling a target), bounding the work per minion.
pub const MAX_PARTS: usize = 64;

/// How a value is compared with the pattern (both lowercased first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchMode {
    /// `fnmatch` (grain, pillar).
    Glob,
    /// `re.match` (grain_pcre, pillar_pcre).
    Regex,
    /// `==` (pillar_exact).
    Exact,
}

/// Salt's `subdict_match`: does `data` hold, under some key path of `expr`, a
/// value matching the rest of `expr`? Deeper key paths are tried first. An
/// expression of more than [`MAX_PARTS`] parts matches nothing.
pub fn subdict_match(data: &Value, expr: &str, delimiter: &str, mode: MatchMode) -> bool {
    Matcher {
        mode,
        regexes: None,
    }
    .subdict(data, expr, delimiter)
}

/// Salt's `traverse_dict_and_list`: the value at the `delimiter`-separated
/// `key` path, with list indexes (negative ones count from the end), keys of
/// dicts inside lists, and YAML-typed keys (`'a'` finds `a`).
pub fn traverse<'a>(data: &'a Value, key: &str, delimiter: &str) -> Option<&'a Value> {
    let mut ptr = data;
    for each in key.split(delimiter) {
        ptr = match ptr {
            Value::Array(items) => list_step(items, each)?,
            Value::Object(map) => dict_step(map, each)?,
            _ => return None,
        };
    }
    Some(ptr)
}

/// One step into a list: an index, else the first embedded dict holding `each`.
fn list_step<'a>(items: &'a [Value], each: &str) -> Option<&'a Value> {
    match py_int(each) {
        Some(idx) => {
            let len = i128::try_from(items.len()).ok()?;
            let idx = if idx < 0 { idx + len } else { idx };
            items.get(usize::try_from(idx).ok()?)
        }
        None => items.iter().find_map(|item| item.as_object()?.get(each)),
    }
}

/// One step into a dict; a missing key is retried as YAML would type it.
fn dict_step<'a>(map: &'a Map<String, Value>, each: &str) -> Option<&'a Value> {
    if let Some(v) = map.get(each) {
        return Some(v);
    }
    match python::yamlify(each) {
        Value::String(loaded) if loaded != each => map.get(&loaded),
        _ => None,
    }
}

/// Python's `int(s)` for ASCII digits: blanks around, a sign, single `_`
/// between digits. Values too large saturate (they index nothing anyway).
fn py_int(s: &str) -> Option<i128> {
    let t = s.trim();
    let (negative, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let ok = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.chars().all(|c| c.is_ascii_digit() || c == '_');
    if !ok {
        return None;
    }
    let n = digits
        .chars()
        .filter_map(|c| c.to_digit(10))
        .fold(0i128, |acc, d| {
            acc.saturating_mul(10).saturating_add(i128::from(d))
        });
    Some(if negative { -n } else { n })
}

/// Compares values with patterns in one mode, with regexes compiled ahead.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Matcher<'r> {
    /// How values are compared.
    pub(crate) mode: MatchMode,
    /// Precompiled regexes by lowercased pattern (`None`: Python would fail).
    pub(crate) regexes: Option<&'r HashMap<String, Option<PyRegex>>>,
}

impl Matcher<'_> {
    /// `subdict_match(data, expr, delimiter)`.
    pub(crate) fn subdict(&self, data: &Value, expr: &str, delimiter: &str) -> bool {
        let splits: Vec<&str> = expr.split(delimiter).collect();
        if splits.len() > MAX_PARTS {
            return false;
        }
        for idx in (1..splits.len()).rev() {
            let key = splits[..idx].join(delimiter);
            let (matchstr, found) = if key == "*" {
                (expr.to_owned(), Some(data))
            } else {
                (
                    splits[idx..].join(delimiter),
                    traverse(data, &key, delimiter),
                )
            };
            let Some(found) = found else { continue };
            if self.found_matches(found, &matchstr) {
                return true;
            }
        }
        false
    }

    /// Whether the value found under a key path matches `matchstr`.
    fn found_matches(&self, found: &Value, matchstr: &str) -> bool {
        match found {
            Value::Object(map) if map.is_empty() => false,
            Value::Object(_) => self.dict_match(found, matchstr),
            Value::Array(members) => members.iter().any(|member| {
                (member.is_object() && self.dict_match(member, matchstr))
                    || self.value(member, matchstr)
            }),
            scalar => self.value(scalar, matchstr),
        }
    }

    /// Salt's `_dict_match`: a key named by the pattern, `*`, a nested match,
    /// or with a `*:` prefix any value below. `dict` is a JSON object.
    fn dict_match(&self, dict: &Value, pattern: &str) -> bool {
        let Some(map) = dict.as_object() else {
            return false;
        };
        let (wildcard, pattern) = match pattern.strip_prefix("*:") {
            Some(rest) => (true, rest),
            None => (false, pattern),
        };
        if pattern == "*" || map.contains_key(pattern) {
            return true;
        }
        if self.subdict(dict, pattern, DEFAULT_DELIMITER) {
            return true;
        }
        wildcard
            && map.values().any(|v| match v {
                Value::Object(_) => self.dict_match(v, pattern),
                Value::Array(items) => items.iter().any(|item| self.value(item, pattern)),
                scalar => self.value(scalar, pattern),
            })
    }

    /// Salt's `_match`: `str(value).lower()` against `pattern.lower()`.
    fn value(&self, value: &Value, pattern: &str) -> bool {
        let target = python::str(value).to_lowercase();
        let pattern = pattern.to_lowercase();
        match self.mode {
            MatchMode::Exact => target == pattern,
            MatchMode::Glob => fnmatch(&target, &pattern),
            MatchMode::Regex => match self.regexes.and_then(|r| r.get(&pattern)) {
                Some(Some(re)) => re.is_match(&target),
                Some(None) => false,
                None => PyRegex::new(&pattern).is_ok_and(|re| re.is_match(&target)),
            },
        }
    }
}

/// Every pattern `subdict(expr, delimiter)` may hand to `value`, lowercased,
/// so regexes can be compiled once. The first set is the top-level values
/// (one per key path), the second everything including nested lookups.
pub(crate) fn candidate_patterns(expr: &str, delimiter: &str) -> (Vec<String>, BTreeSet<String>) {
    let mut all = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let top = collect(expr, delimiter, &mut all, &mut seen);
    (top, all.into_iter().map(|p| p.to_lowercase()).collect())
}

/// Adds the patterns of `subdict(expr, delimiter)` to `all`; returns the top-level ones.
fn collect(
    expr: &str,
    delimiter: &str,
    all: &mut BTreeSet<String>,
    seen: &mut BTreeSet<(String, String)>,
) -> Vec<String> {
    if !seen.insert((expr.to_owned(), delimiter.to_owned())) {
        return Vec::new();
    }
    let splits: Vec<&str> = expr.split(delimiter).collect();
    if splits.len() > MAX_PARTS {
        return Vec::new();
    }
    let mut top = Vec::new();
    for idx in 1..splits.len() {
        let matchstr = if splits[..idx].join(delimiter) == "*" {
            expr.to_owned()
        } else {
            splits[idx..].join(delimiter)
        };
        let (wildcard, pattern) = match matchstr.strip_prefix("*:") {
            Some(rest) => (true, rest.to_owned()),
            None => (false, matchstr.clone()),
        };
        if wildcard {
            all.insert(pattern.clone());
        }
        collect(&pattern, DEFAULT_DELIMITER, all, seen);
        all.insert(matchstr.clone());
        top.push(matchstr.to_lowercase());
    }
    top
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn traverse_salt_cases() {
        let data = json!({"foo": ["bar", "baz", {"lorem": {"ipsum": [{"dolor": "sit"}]}}]});
        assert_eq!(traverse(&data, "foo:1", ":"), Some(&json!("baz")));
        assert_eq!(
            traverse(&data, "foo:-1:lorem:ipsum:0:dolor", ":"),
            Some(&json!("sit"))
        );
        assert_eq!(
            traverse(&data, "foo:lorem:ipsum:dolor", ":"),
            Some(&json!("sit"))
        );
        assert_eq!(traverse(&data, "foo:bar", ":"), None);
        assert_eq!(traverse(&data, "foo:7", ":"), None);
        let quoted = json!({"a b": 1});
        assert_eq!(traverse(&quoted, "'a b'", ":"), Some(&json!(1)));
    }

    #[test]
    fn py_int_rules() {
        let cases = [
            ("1", Some(1)),
            (" -2 ", Some(-2)),
            ("+3", Some(3)),
            ("1_0", Some(10)),
            ("1__0", None),
            ("_1", None),
            ("a", None),
            ("", None),
        ];
        for (s, want) in cases {
            assert_eq!(py_int(s), want, "{s:?}");
        }
    }

    #[test]
    fn candidates_cover_nested_lookups() {
        let (top, all) = candidate_patterns("a:B:c", ":");
        assert_eq!(top, vec!["b:c", "c"]);
        assert!(all.contains("b:c") && all.contains("c"));
        let (top, all) = candidate_patterns("*:x", ":");
        assert_eq!(top, vec!["*:x"]);
        assert!(all.contains("x"));
    }

    /// The minion's old `traverse` cases, and (last) where it disagreed with Salt 3007.8's
    /// `traverse_dict_and_list`: it did not retry a missing key as YAML reads it, nor read
    /// `1_0` as the index 10.
    #[test]
    fn traverse_minion_cases() {
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
        assert_eq!(t("roles: 1 ", ":"), Some(json!({"db": "pg"})));
        assert_eq!(t("'pkg':apache", ":"), Some(json!("httpd")));
        let list = json!({"l": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]});
        assert_eq!(traverse(&list, "l:1_0", ":"), Some(&json!(10)));
    }
}
