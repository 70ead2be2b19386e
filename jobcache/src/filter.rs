//! `jobs.list_jobs` filtering without I/O: Salt's fnmatch globs (`saltq_semantics::python::Glob`)
//! on a job's functions and target.

use saltq_semantics::python::Glob;
use serde_json::Value;

use crate::JobFilter;

/// Splits a search term on commas, as Salt's `split_input` does: `"test.*,cmd.run"` is two globs.
/// A glob Python's `fnmatch` would refuse matches nothing, so it is left out.
fn split_input(term: &str) -> Vec<Glob> {
    term.split(',')
        .filter_map(|p| Glob::new(p.trim()).ok())
        .collect()
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
                .any(|value| globs.iter().any(|g| g.is_match(value))),
        };
        any(&self.targets, "tgt", "unknown-target")
            && any(&self.functions, "fun", "unknown-function")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
