//! Execution functions templates call that the execution-module table does not have yet,
//! run here when `saltq_exec::lookup` does not know them: `grains.filter_by`
//! (`salt/modules/grains.py` over `salt.utils.data.filter_by`), `slsutil.merge`
//! (`salt.utils.dictupdate.merge`) and `log.*`.

use saltq_semantics::python::{fnmatch, truthy};
use serde_json::{Map, Value};

/// Runs `fun` locally if it is one of ours and the table lacks it.
pub fn call(
    fun: &str,
    grains: &Value,
    args: &[Value],
    kwargs: &Map<String, Value>,
) -> Option<Result<Value, String>> {
    if saltq_exec::lookup(fun).is_some() {
        return None;
    }
    match fun {
        "grains.filter_by" => Some(filter_by(grains, args, kwargs)),
        "slsutil.merge" => Some(sls_merge(args, kwargs)),
        // salt/modules/log.py: the message goes to the minion's log, the return is None.
        "log.debug" | "log.info" | "log.warning" | "log.error" | "log.critical"
        | "log.exception" => {
            tracing::debug!(target: "saltq_states::render", "{fun}: {args:?}");
            Some(Ok(Value::Null))
        }
        _ => None,
    }
}

fn arg<'a>(
    args: &'a [Value],
    kwargs: &'a Map<String, Value>,
    i: usize,
    name: &str,
) -> Option<&'a Value> {
    kwargs.get(name).or_else(|| args.get(i))
}

/// `salt.utils.dictupdate.update`: maps merged recursively (exec's `dict_update`), other
/// values replaced.
pub fn merge(dest: &mut Value, upd: &Value) {
    match (dest, upd) {
        (Value::Object(d), Value::Object(u)) => saltq_exec::dict_update(d, u, false),
        (dest, upd) => *dest = upd.clone(),
    }
}

fn traverse<'a>(data: &'a Value, key: &str) -> Option<&'a Value> {
    let mut cur = data;
    for part in key.split(':') {
        cur = match cur {
            Value::Object(m) => m.get(part)?,
            Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        other => other.to_string(),
    }
}

fn filter_by(grains: &Value, args: &[Value], kwargs: &Map<String, Value>) -> Result<Value, String> {
    let Some(Value::Object(lookup)) = arg(args, kwargs, 0, "lookup_dict") else {
        return Err("filter_by() missing the lookup_dict argument (a dictionary)".into());
    };
    let grain = arg(args, kwargs, 1, "grain")
        .and_then(Value::as_str)
        .unwrap_or("os_family");
    let merge_with = arg(args, kwargs, 2, "merge")
        .cloned()
        .unwrap_or(Value::Null);
    let default = arg(args, kwargs, 3, "default")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let base = arg(args, kwargs, 4, "base").and_then(Value::as_str);
    let val = traverse(grains, grain)
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    let vals = match val {
        Value::Array(a) => a,
        other => vec![other],
    };
    let mut ret: Option<Value> = None;
    'outer: for each in &vals {
        let each = text_of(each);
        for (key, value) in lookup {
            if fnmatch(&each, key) {
                ret = Some(value.clone());
                break 'outer;
            }
        }
    }
    if ret.as_ref().is_none_or(Value::is_null) {
        ret = lookup.get(default).cloned();
    }
    if let Some(base) = base
        && let Some(base_values) = lookup.get(base)
    {
        match ret.take() {
            None | Some(Value::Null) => ret = Some(base_values.clone()),
            Some(r) => {
                if base_values.is_object() {
                    if !r.is_object() {
                        return Err(
                            "filter_by default and look-up values must both be dictionaries."
                                .into(),
                        );
                    }
                    let mut merged = base_values.clone();
                    merge(&mut merged, &r);
                    ret = Some(merged);
                } else {
                    ret = Some(r);
                }
            }
        }
    }
    if truthy(&merge_with) {
        if !merge_with.is_object() {
            return Err("filter_by merge argument must be a dictionary.".into());
        }
        match ret.as_mut() {
            None | Some(Value::Null) => ret = Some(merge_with),
            Some(r) => merge(r, &merge_with),
        }
    }
    Ok(ret.unwrap_or(Value::Null))
}

/// `salt.utils.dictupdate.update` with `merge_lists`: maps merged recursively, lists
/// replaced or (with `merge_lists`) extended by the items they lack.
pub fn update(dest: &mut Value, upd: &Value, merge_lists: bool) {
    let (Value::Object(d), Value::Object(u)) = (dest, upd) else {
        return;
    };
    for (k, v) in u {
        match (d.get_mut(k), v) {
            (Some(existing @ Value::Object(_)), Value::Object(_)) => {
                update(existing, v, merge_lists)
            }
            (Some(Value::Array(existing)), Value::Array(new)) if merge_lists => {
                for item in new {
                    if !existing.contains(item) {
                        existing.push(item.clone());
                    }
                }
            }
            _ => {
                d.insert(k.clone(), v.clone());
            }
        }
    }
}

fn sls_merge(args: &[Value], kwargs: &Map<String, Value>) -> Result<Value, String> {
    let a = arg(args, kwargs, 0, "obj_a")
        .cloned()
        .unwrap_or(Value::Null);
    let b = arg(args, kwargs, 1, "obj_b")
        .cloned()
        .unwrap_or(Value::Null);
    let strategy = arg(args, kwargs, 2, "strategy")
        .and_then(Value::as_str)
        .unwrap_or("smart");
    let renderer = arg(args, kwargs, 3, "renderer")
        .and_then(Value::as_str)
        .unwrap_or("yaml");
    let merge_lists = arg(args, kwargs, 4, "merge_lists").is_some_and(truthy);
    let (Value::Object(_), Value::Object(bm)) = (&a, &b) else {
        return Err("Cannot update using non-dict types in dictupdate.update()".into());
    };
    let strategy = match strategy {
        "smart"
            if renderer.rsplit('|').next() == Some("yamlex") || renderer.starts_with("yamlex_") =>
        {
            "aggregate"
        }
        "smart" => "recurse",
        other => other,
    };
    match strategy {
        "recurse" | "none" => {
            let mut out = a.clone();
            update(&mut out, &b, merge_lists && strategy == "recurse");
            Ok(out)
        }
        "overwrite" => {
            let mut out = a.clone();
            if let Value::Object(m) = &mut out {
                for (k, v) in bm {
                    if m.contains_key(k) {
                        m.insert(k.clone(), v.clone());
                    }
                }
            }
            update(&mut out, &b, merge_lists);
            Ok(out)
        }
        "list" => {
            let Value::Object(am) = &a else {
                unreachable!()
            };
            let mut out = Map::new();
            for (k, v) in am {
                out.insert(
                    k.clone(),
                    match bm.get(k) {
                        Some(bv) => Value::Array(vec![v.clone(), bv.clone()]),
                        None => v.clone(),
                    },
                );
            }
            Ok(Value::Object(out))
        }
        other => Err(format!("Unknown merging strategy '{other}'")),
    }
}
