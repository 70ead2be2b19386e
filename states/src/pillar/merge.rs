//! Salt's `salt.utils.dictupdate` merge family, the one implementation pillar uses for
//! `pillar_source_merging_strategy`: `recurse` (`update`), `aggregate` (yamlex's level-1
//! aggregation), `overwrite`, `list`, `none` and `smart` (recurse, or aggregate when the
//! `renderer` ends in `yamlex`). Maps keep their key order: a key already in the
//! destination keeps its place, new keys go last (Python's dicts).

use serde_json::{Map, Value};

/// `pillar_source_merging_strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// `smart`: `aggregate` when the renderer is yamlex, else `recurse` (Salt's default).
    Smart,
    /// `recurse`: nested maps merged, everything else replaced.
    Recurse,
    /// `aggregate`: yamlex's aggregation at the top level.
    Aggregate,
    /// `overwrite`: top-level keys replaced outright.
    Overwrite,
    /// `list`: a key in both becomes `[a, b]`, keys only in the second are dropped.
    List,
    /// `none`: only one environment is read; merging is `recurse`.
    None,
}

impl Strategy {
    /// Reads the option's value; an unknown name falls back to `recurse` as Salt's does
    /// (it logs a warning), so this returns `Err` with the name for the caller to log.
    pub fn parse(name: &str) -> Result<Strategy, String> {
        Ok(match name {
            "smart" => Strategy::Smart,
            "recurse" => Strategy::Recurse,
            "aggregate" => Strategy::Aggregate,
            "overwrite" => Strategy::Overwrite,
            "list" => Strategy::List,
            "none" => Strategy::None,
            other => return Err(other.to_owned()),
        })
    }
}

/// `dictupdate.merge(a, b, strategy, renderer, merge_lists)`: `b` merged over `a`.
pub fn merge(
    a: Map<String, Value>,
    b: Map<String, Value>,
    strategy: Strategy,
    renderer: &str,
    merge_lists: bool,
) -> Map<String, Value> {
    let strategy = match strategy {
        Strategy::Smart => {
            let last = renderer.rsplit('|').next().unwrap_or_default();
            if last == "yamlex" || renderer.starts_with("yamlex_") {
                Strategy::Aggregate
            } else {
                Strategy::Recurse
            }
        }
        s => s,
    };
    match strategy {
        Strategy::List => merge_list(a, b),
        Strategy::Aggregate => aggregate_top(a, b),
        Strategy::Overwrite => merge_overwrite(a, b, merge_lists),
        Strategy::None => update(a, b, false),
        _ => update(a, b, merge_lists),
    }
}

/// `dictupdate.update(dest, upd, merge_lists=...)`: maps merged recursively; with
/// `merge_lists`, a list gets the new list's items it lacks appended. The one
/// implementation is exec's (`saltq_exec::dict_update`, also behind `pillar.get merge=True`).
pub fn update(
    mut dest: Map<String, Value>,
    upd: Map<String, Value>,
    merge_lists: bool,
) -> Map<String, Value> {
    saltq_exec::dict_update(&mut dest, &upd, merge_lists);
    dest
}

fn merge_list(a: Map<String, Value>, mut b: Map<String, Value>) -> Map<String, Value> {
    a.into_iter()
        .map(|(k, v)| match b.remove(&k) {
            Some(other) => (k, Value::Array(vec![v, other])),
            None => (k, v),
        })
        .collect()
}

fn merge_overwrite(
    mut a: Map<String, Value>,
    b: Map<String, Value>,
    merge_lists: bool,
) -> Map<String, Value> {
    for (k, v) in &b {
        if let Some(slot) = a.get_mut(k) {
            *slot = v.clone();
        }
    }
    update(a, b, merge_lists)
}

/// yamlex's `merge_recursive(a, b, level=1)` on data without `!aggregate` tags: at the top
/// both maps aggregate (`a`'s keys first); below, a map takes `b`'s keys only, each
/// aggregated with `a`'s value, and anything else is `b`'s value.
fn aggregate_top(mut a: Map<String, Value>, b: Map<String, Value>) -> Map<String, Value> {
    for (k, v) in b {
        let merged = match a.get(&k) {
            Some(old) => aggregate_plain(old, v),
            None => v,
        };
        a.insert(k, merged);
    }
    a
}

fn aggregate_plain(a: &Value, b: Value) -> Value {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => Value::Object(
            b.into_iter()
                .map(|(k, v)| {
                    let v = match a.get(&k) {
                        Some(old) => aggregate_plain(old, v),
                        None => v,
                    };
                    (k, v)
                })
                .collect(),
        ),
        (_, b) => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("a map literal"),
        }
    }

    fn check(strategy: &str, merge_lists: bool, a: Value, b: Value, want: Value) {
        let s = Strategy::parse(strategy).expect("a known strategy");
        let got = merge(m(a), m(b), s, "jinja|yaml", merge_lists);
        assert_eq!(Value::Object(got.clone()), want, "{strategy}");
        // Key order is part of the answer (Salt's ordered dicts).
        let got_keys: Vec<_> = got.keys().collect();
        let want_keys: Vec<_> = want.as_object().map(|w| w.keys().collect()).unwrap();
        assert_eq!(got_keys, want_keys, "{strategy}: key order");
    }

    // Expected values recorded from Salt 3007.8: `python -c 'import salt.utils.dictupdate as d;
    // print(json.dumps(d.merge(a, b, strategy, "yaml", merge_lists)))'` in a venv with salt.
    #[test]
    fn strategies_as_salt_merges() {
        let a = json!({"x": {"p": 1, "q": [1, 2]}, "y": 1, "z": [1]});
        let b = json!({"x": {"q": [2, 3], "r": 2}, "w": 0, "z": [2]});
        check(
            "recurse",
            false,
            a.clone(),
            b.clone(),
            json!({"x": {"p": 1, "q": [2, 3], "r": 2}, "y": 1, "z": [2], "w": 0}),
        );
        check(
            "smart",
            true,
            a.clone(),
            b.clone(),
            json!({"x": {"p": 1, "q": [1, 2, 3], "r": 2}, "y": 1, "z": [1, 2], "w": 0}),
        );
        check(
            "overwrite",
            false,
            a.clone(),
            b.clone(),
            json!({"x": {"q": [2, 3], "r": 2}, "y": 1, "z": [2], "w": 0}),
        );
        check(
            "aggregate",
            false,
            a.clone(),
            b.clone(),
            json!({"x": {"q": [2, 3], "r": 2}, "y": 1, "z": [2], "w": 0}),
        );
        check(
            "list",
            false,
            a.clone(),
            b.clone(),
            json!({"x": [{"p": 1, "q": [1, 2]}, {"q": [2, 3], "r": 2}], "y": 1, "z": [[1], [2]]}),
        );
        check(
            "none",
            true,
            a,
            b,
            json!({"x": {"p": 1, "q": [2, 3], "r": 2}, "y": 1, "z": [2], "w": 0}),
        );
    }

    #[test]
    fn aggregate_keeps_b_keys_below_the_top() {
        check(
            "aggregate",
            false,
            json!({"k": {"a": {"deep": 1, "only_a": 2}, "gone": 1}}),
            json!({"k": {"a": {"deep": 3}}}),
            json!({"k": {"a": {"deep": 3}}}),
        );
    }

    #[test]
    fn smart_is_aggregate_for_yamlex() {
        let got = merge(
            m(json!({"k": {"a": 1}})),
            m(json!({"k": {"b": 2}})),
            Strategy::Smart,
            "jinja|yamlex",
            false,
        );
        assert_eq!(Value::Object(got), json!({"k": {"b": 2}}));
    }

    #[test]
    fn merge_lists_skips_items_already_there() {
        let got = update(m(json!({"l": [1, 2, 2]})), m(json!({"l": [2, 3, 3]})), true);
        assert_eq!(Value::Object(got), json!({"l": [1, 2, 2, 3, 3]}));
    }

    #[test]
    fn unknown_strategy_is_named() {
        assert_eq!(Strategy::parse("deep"), Err("deep".to_owned()));
    }
}
