//! High data into low chunks (`State.reconcile_extend`, `verify_high`, `requisite_in`,
//! `apply_exclude`, `compile_high_data`, `order_chunks`), with Salt's error texts.

use saltq_semantics::python::{fnmatch, str as py_str};
use serde_json::{Map, Value, json};

use crate::run::requisite::Direction::{In, Own};
use crate::run::requisite::Requisite::{
    self, Onchanges, Onfail, OnfailStop, Prereq, Require, Use, Watch,
};

/// The first key of a one-key argument dict.
fn first_key(v: &Value) -> Option<&str> {
    v.as_object()
        .and_then(|m| m.keys().next())
        .map(String::as_str)
}

/// The body's state declarations: its keys not starting with `__`.
fn state_keys(body: &Value) -> Vec<String> {
    body.as_object()
        .map(|m| m.keys().filter(|k| !k.starts_with("__")).cloned().collect())
        .unwrap_or_default()
}

/// The SLS of an ID's body as text.
fn sls_of(body: &Value) -> String {
    body.get("__sls__").map(py_str).unwrap_or_default()
}

/// `find_name`: the `(id, state)` pairs a requisite target (an ID, a `name`, or an SLS when
/// `state` is `sls`) designates.
pub fn find_name(
    name: &Value,
    state: &str,
    high: &Map<String, Value>,
    strict: bool,
) -> Vec<(String, String)> {
    let name_s = name.as_str();
    let mut ext = Vec::new();
    let in_high = name_s.and_then(|n| high.get(n));
    let check2 = !strict || in_high.and_then(|b| b.get(state)).is_some();
    if let (Some(n), Some(_), true) = (name_s, in_high, check2) {
        ext.push((n.to_owned(), state.to_owned()));
    } else if state == "sls" {
        for (nid, item) in high {
            if item.get("__sls__") == Some(name)
                && let Some(first) = item.as_object().and_then(|m| m.keys().next())
            {
                ext.push((nid.clone(), first.clone()));
            }
        }
    } else {
        for (nid, item) in high {
            if let Some(Value::Array(args)) = item.get(state) {
                for arg in args {
                    if let Value::Object(m) = arg
                        && m.len() == 1
                        && m.values().next() == Some(name)
                    {
                        ext.push((nid.clone(), state.to_owned()));
                    }
                }
            }
        }
    }
    ext
}

/// `find_sls_ids`: every `(id, state)` of an SLS.
fn find_sls_ids(sls: &Value, high: &Map<String, Value>) -> Vec<(String, String)> {
    let mut ret = Vec::new();
    for (nid, item) in high {
        let Value::Object(m) = item else { continue };
        if m.get("__sls__") == Some(sls) {
            for st in m.keys().filter(|k| !k.starts_with("__")) {
                ret.push((nid.clone(), st.clone()));
            }
        }
    }
    ret
}

/// `state_args`: the argument names given to `id`'s `state`.
fn state_args(id: &str, state: &str, high: &Map<String, Value>) -> Vec<String> {
    high.get(id)
        .and_then(|b| b.get(state))
        .and_then(Value::as_array)
        .map(|args| {
            args.iter()
                .filter_map(|a| a.as_object().filter(|m| m.len() == 1))
                .filter_map(|m| m.keys().next().cloned())
                .collect()
        })
        .unwrap_or_default()
}

/// `reconcile_extend`: merges `__extend__` into the IDs it names (found by ID, or by `name`).
pub fn reconcile_extend(high: &mut Map<String, Value>, strict: bool) -> Vec<String> {
    let mut errors = Vec::new();
    let Some(Value::Array(ext)) = high.shift_remove("__extend__") else {
        return errors;
    };
    let sls_excludes: Vec<Value> = high
        .get("__exclude__")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|e| match e {
                    Value::String(_) => Some(e.clone()),
                    Value::Object(m) => m.get("sls").filter(|v| !v.is_null()).cloned(),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    for ext_chunk in ext {
        let Value::Object(ext_chunk) = ext_chunk else {
            continue;
        };
        for (name, body) in ext_chunk {
            let Some(state_type) = state_keys(&body).into_iter().next() else {
                continue;
            };
            let mut name = name;
            let present = high.get(&name).and_then(|b| b.get(&state_type)).is_some();
            if !present {
                let ids = find_name(&json!(name), &state_type, high, strict);
                if ids.len() != 1 {
                    let env = body.get("__env__").map(py_str).unwrap_or("base".into());
                    let sls = body.get("__sls__").map(py_str).unwrap_or("base".into());
                    errors.push(format!(
                        "Cannot extend ID '{name}' in '{env}:{sls}'. It is not part of the high \
                         state.\nThis is likely due to a missing include statement or an \
                         incorrectly typed ID.\nEnsure that a state with an ID of '{name}' is \
                         available\nin environment '{env}' and to SLS '{sls}'"
                    ));
                    continue;
                }
                name = ids[0].0.clone();
            }
            if body
                .get("__sls__")
                .is_some_and(|s| sls_excludes.contains(s))
            {
                continue;
            }
            let Some(Value::Object(target)) = high.get_mut(&name) else {
                continue;
            };
            let Value::Object(body) = body else { continue };
            for (state, run) in body {
                if state.starts_with("__") {
                    continue;
                }
                let Some(existing) = target.get_mut(&state) else {
                    target.insert(state, run);
                    continue;
                };
                let (Value::Array(list), Value::Array(run)) = (existing, run) else {
                    continue;
                };
                for arg in run {
                    let mut update = false;
                    for slot in list.iter_mut() {
                        match (&arg, &*slot) {
                            (Value::String(_), Value::String(_)) => {
                                *slot = arg.clone();
                                update = true;
                                continue;
                            }
                            (Value::Object(_), Value::Object(_)) => {}
                            _ => continue,
                        }
                        let argfirst = first_key(&arg).unwrap_or_default().to_owned();
                        let valfirst = first_key(slot).unwrap_or_default().to_owned();
                        if argfirst == valfirst {
                            // `extend` adds to a requisite's list rather than replacing it.
                            if Requisite::is_state_keyword(&argfirst) {
                                let add = arg.get(&argfirst).cloned();
                                if let (Some(Value::Array(dest)), Some(add)) =
                                    (slot.get_mut(&argfirst), add)
                                {
                                    match add {
                                        Value::Array(items) => dest.extend(items),
                                        other => dest.push(other),
                                    }
                                }
                            } else {
                                *slot = arg.clone();
                            }
                            update = true;
                        }
                        if argfirst == "name" && first_key(slot) == Some("names") {
                            *slot = arg.clone();
                        }
                    }
                    if !update {
                        list.push(arg);
                    }
                }
            }
        }
    }
    errors
}

/// One ID's requisites as `verify_high` tracks them: (id, state, [(target, kind)]).
type ReqEntry = (String, String, Vec<(String, String)>);

/// `verify_high`: the structure of the high data, with Salt's messages.
pub fn verify_high(high: &Map<String, Value>) -> Vec<String> {
    let mut errors = Vec::new();
    // reqs[name] = (state, [(req_val, req_key)])
    let mut reqs: Vec<ReqEntry> = Vec::new();
    for (name, body) in high {
        if name.starts_with("__") {
            continue;
        }
        let Value::Object(bmap) = body else {
            errors.push(format!(
                "The type {name} in {} is not formatted as a dictionary",
                py_str(body)
            ));
            continue;
        };
        let sls = sls_of(body);
        for (state, run) in bmap {
            if state.starts_with("__") {
                continue;
            }
            if run.is_null() {
                errors.push(format!(
                    "ID '{name}' in SLS '{sls}' contains a short declaration ({state}) with a \
                     trailing colon. When not passing any arguments to a state, the colon must \
                     be omitted."
                ));
                continue;
            }
            let Value::Array(args) = run else {
                errors.push(format!(
                    "State '{name}' in SLS '{sls}' is not formed as a list"
                ));
                continue;
            };
            let mut fun = usize::from(state.contains('.'));
            for arg in args {
                match arg {
                    Value::String(s) => {
                        fun += 1;
                        if s.trim().contains(' ') {
                            errors.push(format!(
                                "The function \"{s}\" in state \"{name}\" in SLS \"{sls}\" has \
                                 whitespace, a function with whitespace is not supported, \
                                 perhaps this is an argument that is missing a \":\""
                            ));
                        }
                    }
                    Value::Object(m) => {
                        let Some(argfirst) = m.keys().next() else {
                            continue;
                        };
                        let val = &m[argfirst];
                        if argfirst == "names" && !val.is_array() {
                            errors.push(format!(
                                "The 'names' argument in state '{name}' in SLS '{sls}' needs \
                                 to be formed as a list"
                            ));
                        }
                        // Salt's verify_high checks these four requisites' lists only.
                        if matches!(
                            Requisite::parse(argfirst),
                            Some((Require | Watch | Prereq | Onchanges, Own))
                        ) {
                            if let Value::Array(list) = val {
                                reqs.retain(|(n, _, _)| n != name);
                                reqs.push((name.clone(), state.clone(), Vec::new()));
                                for req in list {
                                    let req = match req {
                                        Value::String(_) => json!({"id": req}),
                                        other => other.clone(),
                                    };
                                    let Value::Object(rm) = &req else {
                                        errors.push(format!(
                                            "Requisite declaration {} in SLS {sls} is not formed \
                                             as a single key dictionary",
                                            saltq_semantics::python::repr(&req)
                                        ));
                                        continue;
                                    };
                                    let Some((req_key, req_val)) = rm.iter().next() else {
                                        continue;
                                    };
                                    if let Some(dot) = req_key.find('.') {
                                        errors.push(format!(
                                            "Invalid requisite type '{req_key}' in state \
                                             '{name}', in SLS '{sls}'. Requisite types must not \
                                             contain dots, did you mean '{}'?",
                                            &req_key[..dot]
                                        ));
                                    }
                                    if req_val.is_array() || req_val.is_object() {
                                        errors.push(format!(
                                            "Illegal requisite \"{}\", please check your \
                                             syntax.\n",
                                            py_str(req_val)
                                        ));
                                        continue;
                                    }
                                    let rv = py_str(req_val);
                                    if let Some(entry) = reqs.iter_mut().find(|(n, _, _)| n == name)
                                    {
                                        entry.2.retain(|(v, _)| *v != rv);
                                        entry.2.push((rv.clone(), req_key.clone()));
                                    }
                                    let mine = reqs.iter().find(|(n, _, _)| n == name).and_then(
                                        |(_, _, l)| {
                                            l.iter().find(|(v, _)| *v == rv).map(|(_, k)| k.clone())
                                        },
                                    );
                                    if let Some((_, their_state, theirs)) =
                                        reqs.iter().find(|(n, _, _)| *n == rv)
                                    {
                                        let back = theirs.iter().find(|(v, _)| v == name);
                                        if back.is_some_and(|(_, k)| k == state)
                                            && mine.as_deref() == Some(their_state.as_str())
                                        {
                                            errors.push(format!(
                                                "A recursive requisite was found, SLS \"{sls}\" \
                                                 ID \"{name}\" ID \"{rv}\""
                                            ));
                                        }
                                    }
                                }
                            } else {
                                errors.push(format!(
                                    "The {argfirst} statement in state '{name}' in SLS '{sls}' \
                                     needs to be formed as a list"
                                ));
                            }
                            if m.len() != 1 {
                                errors.push(format!(
                                    "Multiple dictionaries defined in argument of state \
                                     '{name}' in SLS '{sls}'"
                                ));
                            }
                        }
                    }
                    _ => {}
                }
            }
            if fun == 0 {
                if matches!(Requisite::parse(state), Some((Require | Watch, Own))) {
                    continue;
                }
                errors.push(format!(
                    "No function declared in state '{name}' in SLS '{sls}'"
                ));
            } else if fun > 1 {
                let mut funs: Vec<String> = state
                    .split_once('.')
                    .map(|(_, f)| vec![f.to_owned()])
                    .unwrap_or_default();
                funs.extend(args.iter().filter_map(|a| a.as_str().map(str::to_owned)));
                errors.push(format!(
                    "Too many functions declared in state '{name}' in SLS '{sls}'. Please \
                     choose one of the following: {}",
                    funs.join(", ")
                ));
            }
        }
    }
    errors
}

/// Adds `{rkey: [{state: id}]}` to `extend[name][_state]`, or appends to that requisite.
fn extend_req(
    extend: &mut Map<String, Value>,
    name: &str,
    target_state: &str,
    rkey: &str,
    state: &str,
    id: &str,
    body: &Value,
) {
    let entry = extend
        .entry(name.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(entry) = entry else { return };
    entry
        .entry(target_state.to_owned())
        .or_insert_with(|| json!([]));
    entry.insert(
        "__env__".into(),
        body.get("__env__").cloned().unwrap_or(Value::Null),
    );
    entry.insert(
        "__sls__".into(),
        body.get("__sls__").cloned().unwrap_or(Value::Null),
    );
    let Some(Value::Array(list)) = entry.get_mut(target_state) else {
        return;
    };
    let mut found = false;
    for item in list.iter_mut() {
        if first_key(item) == Some(rkey) {
            if let Some(Value::Array(reqs)) = item.get_mut(rkey) {
                reqs.push(json!({state: id}));
            }
            found = true;
        }
    }
    if !found {
        list.push(json!({rkey: [{state: id}]}));
    }
}

/// Appends `arg` to `extend[id][state]`.
fn extend_arg(extend: &mut Map<String, Value>, id: &str, state: &str, arg: Value) {
    let entry = extend
        .entry(id.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(entry) = entry
        && let Value::Array(list) = entry.entry(state.to_owned()).or_insert_with(|| json!([]))
    {
        list.push(arg);
    }
}

/// `requisite_in`: the `_in` requisites, `use` and `prereq` turned into extensions of the
/// states they name, then reconciled (strictly).
pub fn requisite_in(high: &mut Map<String, Value>, disabled: &[String]) -> Vec<String> {
    // Salt's `req_in_all`: `req_in` and these requisites are not copied by `use`.
    let req_in_all = |k: &str| {
        Requisite::is_req_in(k)
            || matches!(
                Requisite::parse(k),
                Some((Require | Watch | Onfail | OnfailStop | Onchanges, Own))
            )
    };
    let ignored = |k: &str, own: &[String]| req_in_all(k) || own.iter().any(|o| o == k);
    let mut extend: Map<String, Value> = Map::new();
    let mut errors = Vec::new();
    let snapshot = high.clone();
    for (id, body) in &snapshot {
        let Value::Object(bmap) = body else { continue };
        for (state, run) in bmap {
            if state.starts_with("__") {
                continue;
            }
            let Value::Array(run) = run else { continue };
            for arg in run {
                let Value::Object(am) = arg else { continue };
                let Some(key) = am.keys().next() else {
                    continue;
                };
                if !Requisite::is_req_in(key) || disabled.iter().any(|d| d == key) {
                    continue;
                }
                let rkey = key.split('_').next().unwrap_or(key);
                let items = &am[key];
                if let Value::Object(items) = items {
                    for (st, name) in items {
                        let mut st = st.clone();
                        let name_s = py_str(name);
                        if let Some(dot) = st.find('.') {
                            errors.push(format!(
                                "Invalid requisite in {rkey}: {st} for {name_s}, in SLS '{}'. \
                                 Requisites must not contain dots, did you mean '{}'?",
                                sls_of(body),
                                &st[..dot]
                            ));
                            st.truncate(dot);
                        }
                        extend_req(&mut extend, &name_s, &st, rkey, state, id, body);
                    }
                }
                let Value::Array(items) = items else { continue };
                let mut hinges: Vec<(Value, String)> = Vec::new();
                for ind in items {
                    let ind = match ind {
                        Value::Object(_) => ind.clone(),
                        other => {
                            let other_s = other.as_str().unwrap_or_default();
                            if let Some(target) = snapshot.get(other_s) {
                                match state_keys(target).into_iter().next() {
                                    Some(st) => json!({st: other_s}),
                                    None => continue,
                                }
                            } else {
                                let mut found = None;
                                for (nid, nbody) in &snapshot {
                                    for st8 in state_keys(nbody) {
                                        if let Some(Value::Array(list)) = nbody.get(&st8) {
                                            for j in list {
                                                if found.is_none() && j.get("name") == Some(other) {
                                                    found = Some(json!({st8.clone(): nid}));
                                                }
                                            }
                                        }
                                    }
                                }
                                match found {
                                    Some(f) => f,
                                    None => continue,
                                }
                            }
                        }
                    };
                    let Some((pstate, pname)) = ind
                        .as_object()
                        .and_then(|m| m.iter().next())
                        .map(|(k, v)| (k.clone(), v.clone()))
                    else {
                        continue;
                    };
                    if pstate == "sls" {
                        hinges = find_sls_ids(&pname, &snapshot)
                            .into_iter()
                            .map(|(n, s)| (json!(n), s))
                            .collect();
                    } else {
                        hinges.push((pname.clone(), pstate.clone()));
                    }
                    if let Some(dot) = pstate.find('.') {
                        errors.push(format!(
                            "Invalid requisite in {rkey}: {pstate} for {}, in SLS '{}'. \
                             Requisites must not contain dots, did you mean '{}'?",
                            py_str(&pname),
                            sls_of(body),
                            &pstate[..dot]
                        ));
                    }
                    for (name, hstate) in hinges.clone() {
                        let hstate = hstate.split('.').next().unwrap_or(&hstate).to_owned();
                        if Requisite::parse(key) == Some((Prereq, In)) {
                            extend_arg(
                                &mut extend,
                                id,
                                state,
                                json!({"prerequired": [{hstate.clone(): name.clone()}]}),
                            );
                        }
                        if Requisite::parse(key) == Some((Prereq, Own)) {
                            for (ext_id, req_state) in find_name(&name, &hstate, &snapshot, true) {
                                extend_arg(
                                    &mut extend,
                                    &ext_id,
                                    &req_state,
                                    json!({"prerequired": [{state.clone(): id}]}),
                                );
                            }
                            continue;
                        }
                        if Requisite::parse(key) == Some((Use, In)) {
                            for (ext_id, req_state) in find_name(&name, &hstate, &snapshot, true) {
                                let ext_args = state_args(&ext_id, &hstate, &snapshot);
                                extend
                                    .entry(ext_id.clone())
                                    .or_insert_with(|| Value::Object(Map::new()));
                                if let Some(Value::Object(e)) = extend.get_mut(&ext_id) {
                                    e.entry(req_state.clone()).or_insert_with(|| json!([]));
                                }
                                for a in run {
                                    let Some(k) = a
                                        .as_object()
                                        .filter(|m| m.len() == 1)
                                        .and_then(|m| m.keys().next())
                                    else {
                                        continue;
                                    };
                                    if ignored(k, &ext_args) || k == "name" || k == "names" {
                                        continue;
                                    }
                                    extend_arg(&mut extend, &ext_id, &req_state, a.clone());
                                }
                            }
                            continue;
                        }
                        if Requisite::parse(key) == Some((Use, Own)) {
                            for (ext_id, req_state) in find_name(&name, &hstate, &snapshot, true) {
                                let loc_args = state_args(id, state, &snapshot);
                                extend
                                    .entry(id.clone())
                                    .or_insert_with(|| Value::Object(Map::new()));
                                if let Some(Value::Object(e)) = extend.get_mut(id) {
                                    e.entry(state.clone()).or_insert_with(|| json!([]));
                                }
                                let source = snapshot
                                    .get(&ext_id)
                                    .and_then(|b| b.get(&req_state))
                                    .and_then(Value::as_array)
                                    .cloned()
                                    .unwrap_or_default();
                                for a in source {
                                    let Some(k) = a
                                        .as_object()
                                        .filter(|m| m.len() == 1)
                                        .and_then(|m| m.keys().next())
                                        .cloned()
                                    else {
                                        continue;
                                    };
                                    if ignored(&k, &loc_args) || k == "name" || k == "names" {
                                        continue;
                                    }
                                    extend_arg(&mut extend, id, state, a);
                                }
                            }
                            continue;
                        }
                        let name_s = py_str(&name);
                        extend_req(&mut extend, &name_s, &hstate, rkey, state, id, body);
                    }
                }
            }
        }
    }
    let list: Vec<Value> = extend
        .into_iter()
        .map(|(k, v)| {
            let mut m = Map::new();
            m.insert(k, v);
            Value::Object(m)
        })
        .collect();
    high.insert("__extend__".into(), Value::Array(list));
    errors.extend(reconcile_extend(high, true));
    errors
}

/// `apply_exclude`: removes the IDs `__exclude__` names (`sls:` globs, `id:`).
pub fn apply_exclude(high: &mut Map<String, Value>) {
    let Some(Value::Array(exclude)) = high.shift_remove("__exclude__") else {
        return;
    };
    let mut ex_sls = Vec::new();
    let mut ex_id = Vec::new();
    for exc in exclude {
        match exc {
            Value::String(s) => ex_sls.push(s),
            Value::Object(m) if m.len() == 1 => {
                if let Some(s) = m.get("sls") {
                    ex_sls.push(py_str(s));
                } else if let Some(i) = m.get("id") {
                    ex_id.push(py_str(i));
                }
            }
            _ => {}
        }
    }
    if !ex_sls.is_empty() {
        for (name, body) in high.iter() {
            if name.starts_with("__") {
                continue;
            }
            let sls = sls_of(body);
            if !sls.is_empty() && ex_sls.iter().any(|p| fnmatch(&sls, p)) {
                ex_id.push(name.clone());
            }
        }
    }
    for id in ex_id {
        high.shift_remove(&id);
    }
}

/// `compile_high_data`: one chunk per ID, state declaration and name, then ordered.
pub fn compile_high_data(high: &Map<String, Value>) -> Vec<Map<String, Value>> {
    let mut chunks = Vec::new();
    for (name, body) in high {
        if name.starts_with("__") {
            continue;
        }
        let Value::Object(bmap) = body else { continue };
        for (state, run) in bmap {
            if state.starts_with("__") {
                continue;
            }
            let mut funcs: Vec<String> = Vec::new();
            let mut names: Vec<Value> = Vec::new();
            let mut chunk = Map::new();
            chunk.insert("state".into(), json!(state));
            chunk.insert("name".into(), json!(name));
            for key in ["__sls__", "__env__", "__sls_included_from__"] {
                if let Some(v) = bmap.get(key) {
                    chunk.insert(key.into(), v.clone());
                }
            }
            chunk.insert("__id__".into(), json!(name));
            for arg in run.as_array().into_iter().flatten() {
                match arg {
                    Value::String(f) if !funcs.contains(f) => {
                        funcs.push(f.clone());
                    }
                    Value::Object(m) => {
                        for (key, val) in m {
                            if key == "names" {
                                for n in val.as_array().into_iter().flatten() {
                                    if !names.contains(n) {
                                        names.push(n.clone());
                                    }
                                }
                            } else if key == "state" {
                                continue;
                            } else if key == "name" && !val.is_string() {
                                chunk.insert(key.clone(), json!(name));
                            } else {
                                chunk.insert(key.clone(), val.clone());
                            }
                        }
                    }
                    _ => {}
                }
            }
            if names.is_empty() {
                for fun in &funcs {
                    let mut live = chunk.clone();
                    live.insert("fun".into(), json!(fun));
                    chunks.push(live);
                }
            } else {
                for (i, entry) in names.iter().enumerate() {
                    let mut live = chunk.clone();
                    match entry {
                        Value::Object(m) => {
                            if let Some((low_name, updates)) = m.iter().next() {
                                live.insert("name".into(), json!(low_name));
                                for u in updates.as_array().into_iter().flatten() {
                                    if let Value::Object(u) = u {
                                        for (k, v) in u {
                                            live.insert(k.clone(), v.clone());
                                        }
                                    }
                                }
                            }
                        }
                        other => {
                            live.insert("name".into(), other.clone());
                        }
                    }
                    live.insert("name_order".into(), json!(i + 1));
                    for fun in &funcs {
                        let mut l = live.clone();
                        l.insert("fun".into(), json!(fun));
                        chunks.push(l);
                    }
                }
            }
        }
    }
    order_chunks(chunks)
}

/// A number as Python keeps it: an int stays an int.
fn num(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// `order_chunks`: `order` (numbers, `first`, `last`, negative from the end), `names`
/// positions, then state, name and function as text.
pub fn order_chunks(mut chunks: Vec<Map<String, Value>>) -> Vec<Map<String, Value>> {
    let mut cap: i64 = 1;
    for chunk in &chunks {
        if let Some(Value::Number(n)) = chunk.get("order")
            && let Some(o) = n.as_i64()
            && o > cap - 1
            && o > 0
        {
            cap = o + 100;
        }
    }
    let cap_f = cap as f64;
    for chunk in &mut chunks {
        let mut order: f64 = match chunk.get("order") {
            None => {
                chunk.insert("order".into(), json!(cap));
                continue;
            }
            Some(Value::Number(n)) => n.as_f64().unwrap_or(cap_f),
            Some(Value::String(s)) if s == "last" => cap_f + 1_000_000.0,
            Some(Value::String(s)) if s == "first" => 0.0,
            Some(_) => cap_f,
        };
        let mut is_float = chunk.get("order").is_some_and(|v| v.is_f64());
        if let Some(no) = chunk.shift_remove("name_order") {
            order += no.as_f64().unwrap_or(0.0) / 10000.0;
            is_float = true;
        }
        if order < 0.0 {
            order += cap_f + 1_000_000.0;
        }
        chunk.insert(
            "order".into(),
            if is_float { json!(order) } else { num(order) },
        );
    }
    chunks.sort_by(|a, b| {
        let oa = a.get("order").and_then(Value::as_f64).unwrap_or(0.0);
        let ob = b.get("order").and_then(Value::as_f64).unwrap_or(0.0);
        let key = |c: &Map<String, Value>| {
            format!(
                "{}{}{}",
                c.get("state").map(py_str).unwrap_or_default(),
                c.get("name").map(py_str).unwrap_or_default(),
                c.get("fun").map(py_str).unwrap_or_default()
            )
        };
        oa.total_cmp(&ob).then_with(|| key(a).cmp(&key(b)))
    });
    chunks
}

/// High data into ordered low chunks, as `State.call_high` does before running: `extend`,
/// verification, `_in` requisites and `use`, `exclude`, compilation. `disabled` is the
/// `disabled_requisites` option.
pub fn high_to_low(
    mut high: Map<String, Value>,
    disabled: &[String],
) -> Result<Vec<Map<String, Value>>, Vec<String>> {
    let mut errors = reconcile_extend(&mut high, false);
    errors.extend(verify_high(&high));
    if !errors.is_empty() {
        return Err(errors);
    }
    let errors = requisite_in(&mut high, disabled);
    apply_exclude(&mut high);
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(compile_high_data(&high))
}

/// `compile_low_chunks` (`state.show_lowstate`): like [`high_to_low`] but every error of
/// `extend`, verification and the `_in` requisites is gathered before answering.
pub fn compile_low_chunks(
    mut high: Map<String, Value>,
    disabled: &[String],
) -> Result<Vec<Map<String, Value>>, Vec<String>> {
    let mut errors = reconcile_extend(&mut high, false);
    errors.extend(verify_high(&high));
    errors.extend(requisite_in(&mut high, disabled));
    apply_exclude(&mut high);
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(compile_high_data(&high))
}
