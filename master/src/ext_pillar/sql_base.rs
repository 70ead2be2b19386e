//! Salt's `sql_base` (`salt/pillar/sql_base.py`), without the database: the query forms of
//! an entry ([`extract_queries`]) and how a query's rows become nested pillar data
//! ([`Shaper::process`]): the first columns are keys, down to `depth`, the last ones values;
//! `as_list` collects repeated keys into lists, `with_lists` turns the levels it names
//! (1-based) into lists, `ignore_null` skips NULL values, `as_json` merges a one-column JSON
//! result. `%s` in a query is the minion id, as a bound parameter.

use saltq_states::pillar::ext::call_args;
use serde_json::{Map, Value};

/// One query of an entry, with Salt's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The key the result goes under (a mapping entry's name), or the pillar's top.
    pub root: Option<String>,
    /// The SQL, `%s` standing for the minion id.
    pub query: String,
    /// How many columns are keys (0: all but the last).
    pub depth: usize,
    /// Repeated keys collect their values in a list.
    pub as_list: bool,
    /// One column holding JSON, merged into the result.
    pub as_json: bool,
    /// The 1-based levels that become lists.
    pub with_lists: Vec<usize>,
    /// NULL values are left out.
    pub ignore_null: bool,
}

fn query_of(root: Option<String>, v: &Value) -> Result<Option<Query>, String> {
    let mut q = Query {
        root,
        query: String::new(),
        depth: 0,
        as_list: false,
        as_json: false,
        with_lists: Vec::new(),
        ignore_null: false,
    };
    let flag = |m: &Map<String, Value>, k: &str| {
        saltq_semantics::python::truthy(m.get(k).unwrap_or(&Value::Null))
    };
    match v {
        Value::String(s) if !s.is_empty() => q.query = s.clone(),
        Value::Array(a) if a.first().is_some_and(saltq_semantics::python::truthy) => {
            q.query = a[0]
                .as_str()
                .ok_or_else(|| format!("query {} is not a string", a[0]))?
                .to_owned();
            if let Some(d) = a.get(1) {
                q.depth = d
                    .as_u64()
                    .ok_or_else(|| format!("depth {d} is not a whole number"))?
                    as usize;
            }
        }
        Value::Object(m)
            if m.get("query")
                .is_some_and(|s| s.as_str().is_some_and(|s| !s.is_empty())) =>
        {
            q.query = m["query"].as_str().unwrap_or_default().to_owned();
            if let Some(d) = m.get("depth").filter(|d| !d.is_null()) {
                q.depth = d
                    .as_u64()
                    .ok_or_else(|| format!("depth {d} is not a whole number"))?
                    as usize;
            }
            q.as_list = flag(m, "as_list");
            q.as_json = flag(m, "as_json");
            q.ignore_null = flag(m, "ignore_null");
            q.with_lists = match m.get("with_lists") {
                None | Some(Value::Null) | Some(Value::Bool(false)) => Vec::new(),
                Some(Value::String(s)) => s
                    .split(',')
                    .map(|i| {
                        i.trim()
                            .parse::<usize>()
                            .map_err(|_| format!("with_lists: '{i}' is not a level number"))
                    })
                    .collect::<Result<_, _>>()?,
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|i| {
                        i.as_u64()
                            .map(|i| i as usize)
                            .ok_or_else(|| format!("with_lists: {i} is not a level number"))
                    })
                    .collect::<Result<_, _>>()?,
                Some(other) => {
                    return Err(format!(
                        "with_lists: expected \"1,3\" or a list of levels, got {other}"
                    ));
                }
            };
        }
        _ => return Ok(None),
    }
    Ok(Some(q))
}

/// Salt's `extract_queries`: positional queries first (a string, or `[query, depth]`), then
/// the named ones sorted by name (a string, a list, or a mapping with `query`, `depth`,
/// `as_list`, `as_json`, `with_lists`, `ignore_null`). Empty ones are dropped, as Salt's.
pub fn extract_queries(args: &Value) -> Result<Vec<Query>, String> {
    let (positional, named) = call_args(args);
    let mut out = Vec::new();
    for v in &positional {
        out.extend(query_of(None, v)?);
    }
    let mut keys: Vec<&String> = named.keys().collect();
    keys.sort();
    for k in keys {
        out.extend(query_of(Some(k.clone()), &named[k])?);
    }
    if out.is_empty() {
        return Err(
            "no query configured (a list of queries, or a mapping of name to query)".into(),
        );
    }
    Ok(out)
}

/// A query with `%s` bound as parameter `marker(1)`: `$1` for PostgreSQL, `?` for MySQL.
/// `%%` is a literal `%`. Answers the SQL and whether the minion id is bound.
pub fn bind_minion(query: &str, marker: &str) -> (String, usize) {
    let mut out = String::with_capacity(query.len());
    let mut n = 0;
    let mut chars = query.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '%' {
            match chars.peek() {
                Some('s') => {
                    chars.next();
                    out.push_str(marker);
                    n += 1;
                    continue;
                }
                Some('%') => {
                    chars.next();
                    out.push('%');
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    (out, n)
}

/// A database value as a mapping key (`str()` of it; JSON's words for booleans and null).
fn key_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        other => saltq_semantics::python::str(other),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Key(String),
    Idx(usize),
}

fn node<'a>(root: &'a mut Value, path: &[Seg]) -> &'a mut Value {
    let mut cur = root;
    for s in path {
        cur = match (s, cur) {
            (Seg::Key(k), Value::Object(m)) => m
                .entry(k.clone())
                .or_insert_with(|| Value::Object(Map::new())),
            (Seg::Idx(i), Value::Array(a)) => &mut a[*i],
            (_, other) => other,
        };
    }
    if !cur.is_object() {
        *cur = Value::Object(Map::new());
    }
    cur
}

fn map(v: &mut Value) -> &mut Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("node() answers a mapping"),
    }
}

/// A query that failed, named as written in the entry.
pub fn query_error(q: &Query, e: impl std::fmt::Display) -> String {
    format!("query {:?}: {e}", q.query)
}

/// Builds the result of an entry's queries, in order (Salt's `SqlBaseExtPillar` state).
#[derive(Debug, Default)]
pub struct Shaper {
    /// The data so far.
    pub result: Value,
}

impl Shaper {
    /// An empty result.
    pub fn new() -> Self {
        Shaper {
            result: Value::Object(Map::new()),
        }
    }

    /// The pillar the queries built: a mapping, empty when none made one.
    pub fn into_pillar(self) -> Map<String, Value> {
        match self.result {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    /// Adds one query's rows (`fields` its column names).
    pub fn process(&mut self, q: &Query, fields: &[String], rows: &[Vec<Value>]) {
        let focus: Vec<Seg> = match &q.root {
            Some(r) => {
                map(&mut self.result).insert(r.clone(), Value::Object(Map::new()));
                vec![Seg::Key(r.clone())]
            }
            None => Vec::new(),
        };
        let n = fields.len();
        if n == 0 {
            return;
        }
        let depth = if q.depth == 0 || q.depth >= n {
            n - 1
        } else {
            q.depth
        };
        let wl = |i: usize| q.with_lists.contains(&i);
        // Python's negative index: with one column, `ret[-1]` is that column.
        let at = |row: &[Value], i: isize| -> Value {
            let i = if i < 0 {
                (n as isize + i) as usize
            } else {
                i as usize
            };
            row.get(i).cloned().unwrap_or(Value::Null)
        };
        let mut listify: Vec<(Vec<Seg>, Vec<String>)> = Vec::new();
        let note =
            |listify: &mut Vec<(Vec<Seg>, Vec<String>)>, path: &[Seg], k: String| match listify
                .iter_mut()
                .find(|(p, _)| p == path)
            {
                Some((_, ks)) => {
                    if !ks.contains(&k) {
                        ks.push(k)
                    }
                }
                None => listify.push((path.to_vec(), vec![k])),
            };
        for row in rows {
            let mut path = focus.clone();
            if q.as_json && n == 1 {
                let data = match &row[0] {
                    Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
                    other => other.clone(),
                };
                if let Value::Object(upd) = data {
                    saltq_exec::dict_update(map(node(&mut self.result, &path)), &upd, q.as_list);
                }
                continue;
            }
            for (i, cell) in row.iter().enumerate().take(depth.saturating_sub(1)) {
                let k = key_of(cell);
                if wl(i + 1) {
                    note(&mut listify, &path, k.clone());
                }
                let crd = map(node(&mut self.result, &path));
                match crd.get_mut(&k) {
                    None => {
                        crd.insert(k.clone(), Value::Object(Map::new()));
                        path.push(Seg::Key(k));
                    }
                    Some(Value::Array(a)) => {
                        a.push(Value::Object(Map::new()));
                        let idx = a.len() - 1;
                        path.push(Seg::Key(k));
                        path.push(Seg::Idx(idx));
                    }
                    Some(Value::Object(_)) => path.push(Seg::Key(k)),
                    Some(other) => {
                        if q.as_list {
                            *other = Value::Array(vec![other.take(), Value::Object(Map::new())]);
                            path.push(Seg::Key(k));
                            path.push(Seg::Idx(1));
                        } else {
                            *other = Value::Object(Map::new());
                            path.push(Seg::Key(k));
                        }
                    }
                }
            }
            let crd = map(node(&mut self.result, &path));
            if depth == n - 1 {
                let nk = n as isize - 2;
                let k = key_of(&at(row, nk));
                let last = at(row, n as isize - 1);
                if (q.as_list && crd.contains_key(&k)) || wl((nk + 1) as usize) {
                    let slot = crd.entry(k).or_insert_with(|| Value::Array(Vec::new()));
                    if !slot.is_array() {
                        *slot = Value::Array(vec![slot.take()]);
                    }
                    if let Value::Array(a) = slot {
                        a.push(last);
                    }
                } else if !q.ignore_null || !last.is_null() {
                    crd.insert(k, last);
                }
            } else {
                let k = key_of(&row[depth - 1]);
                if !crd.get(&k).is_some_and(Value::is_object) {
                    crd.insert(k.clone(), Value::Object(Map::new()));
                }
                if wl(depth) {
                    note(&mut listify, &path, k.clone());
                }
                path.push(Seg::Key(k));
                for (i, field) in fields.iter().enumerate().skip(depth) {
                    if wl(i + 1) {
                        note(&mut listify, &path, field.clone());
                    }
                    let crd = map(node(&mut self.result, &path));
                    let v = row[i].clone();
                    if q.as_list && crd.contains_key(field) {
                        match crd.get_mut(field) {
                            Some(Value::Array(a)) => a.push(v),
                            Some(other) => *other = Value::Array(vec![other.take(), v]),
                            None => {}
                        }
                    } else if !q.ignore_null || !v.is_null() {
                        crd.insert(field.clone(), v);
                    }
                }
            }
        }
        for (path, keys) in listify.into_iter().rev() {
            let d = map(node(&mut self.result, &path));
            for k in keys {
                match d.get_mut(&k) {
                    Some(Value::Object(m)) => {
                        let vals: Vec<Value> =
                            std::mem::take(m).into_iter().map(|(_, v)| v).collect();
                        d.insert(k, Value::Array(vals));
                    }
                    Some(v @ Value::Array(_)) => *v = Value::Array(vec![v.take()]),
                    _ => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shape(q: Value, fields: &[&str], rows: Value) -> Value {
        let qs = extract_queries(&json!([q])).unwrap();
        let mut s = Shaper::new();
        let fields: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
        let rows: Vec<Vec<Value>> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_array().unwrap().clone())
            .collect();
        s.process(&qs[0], &fields, &rows);
        s.result
    }

    #[test]
    fn query_forms_as_salts_extract_queries() {
        let qs = extract_queries(&json!({
            "zeta": "SELECT 1",
            "alpha": {"query": "SELECT 2", "depth": 2, "as_list": true, "with_lists": "1,3", "ignore_null": true},
            "empty": "",
        }))
        .unwrap();
        assert_eq!(qs.len(), 2);
        assert_eq!(qs[0].root.as_deref(), Some("alpha"));
        assert_eq!(
            (qs[0].depth, qs[0].as_list, qs[0].ignore_null),
            (2, true, true)
        );
        assert_eq!(qs[0].with_lists, vec![1, 3]);
        assert_eq!(qs[1].root.as_deref(), Some("zeta"));
        let qs = extract_queries(&json!(["SELECT a", ["SELECT b", 3]])).unwrap();
        assert_eq!((qs[0].root.clone(), qs[1].depth), (None, 3));
        assert!(
            extract_queries(&json!([]))
                .unwrap_err()
                .contains("no query")
        );
        assert!(
            extract_queries(&json!({"x": {"query": "q", "with_lists": "a"}}))
                .unwrap_err()
                .contains("with_lists")
        );
    }

    #[test]
    fn bind_minion_uses_the_drivers_marker() {
        assert_eq!(
            bind_minion("SELECT k, v FROM p WHERE id = %s AND x LIKE 'a%%'", "$1"),
            ("SELECT k, v FROM p WHERE id = $1 AND x LIKE 'a%'".into(), 1)
        );
        assert_eq!(bind_minion("SELECT 1", "?"), ("SELECT 1".into(), 0));
    }

    /// Every case recorded from Salt 3007.8's `sql_base` (how: the fixture's `_recorded`).
    #[test]
    fn shapes_match_salt_3007() {
        let doc: Value = serde_json::from_str(include_str!("sql_base_salt3007.json")).unwrap();
        for case in doc["cases"].as_array().unwrap() {
            let fields: Vec<&str> = case[1]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap())
                .collect();
            assert_eq!(
                shape(case[0].clone(), &fields, case[2].clone()),
                case[3],
                "case {case}"
            );
        }
    }
}
