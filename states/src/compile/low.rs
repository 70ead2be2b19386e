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

/// Salt's `req_in_all` plus the state's own arguments: what `use` does not copy.
fn not_copied_by_use(k: &str, own: &[String]) -> bool {
    Requisite::is_req_in(k)
        || matches!(
            Requisite::parse(k),
            Some((Require | Watch | Onfail | OnfailStop | Onchanges, Own))
        )
        || own.iter().any(|o| o == k)
}

/// The one-key arguments `use` copies from `args` to a state whose own arguments are `own`.
fn copied_by_use(args: &[Value], own: &[String]) -> Vec<Value> {
    args.iter()
        .filter(|a| {
            a.as_object()
                .filter(|m| m.len() == 1)
                .and_then(|m| m.keys().next())
                .is_some_and(|k| !not_copied_by_use(k, own) && k != "name" && k != "names")
        })
        .cloned()
        .collect()
}

/// Salt's error for a requisite state with a dot (`file.managed` where `file` is meant).
fn dotted_requisite(rkey: &str, st: &str, name: &str, body: &Value) -> Option<String> {
    let dot = st.find('.')?;
    Some(format!(
        "Invalid requisite in {rkey}: {st} for {name}, in SLS '{}'. Requisites must not \
         contain dots, did you mean '{}'?",
        sls_of(body),
        &st[..dot]
    ))
}

/// A list item of an `_in` requisite as `{state: id}`: a dict as given, else the ID's first
/// state, else the first state whose `name` it is; `None` when nothing matches.
fn resolve_target(ind: &Value, high: &Map<String, Value>) -> Option<Value> {
    if ind.is_object() {
        return Some(ind.clone());
    }
    let id = ind.as_str().unwrap_or_default();
    if let Some(target) = high.get(id) {
        return state_keys(target)
            .into_iter()
            .next()
            .map(|st| json!({st: id}));
    }
    for (nid, nbody) in high {
        for st in state_keys(nbody) {
            if let Some(Value::Array(list)) = nbody.get(&st)
                && list.iter().any(|j| j.get("name") == Some(ind))
            {
                return Some(json!({st: nid}));
            }
        }
    }
    None
}

/// Makes `extend[id][state]` exist (empty) without adding to it.
fn ensure_extend(extend: &mut Map<String, Value>, id: &str, state: &str) {
    let entry = extend
        .entry(id.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(e) = entry {
        e.entry(state.to_owned()).or_insert_with(|| json!([]));
    }
}

/// One `_in`, `use` or `prereq` argument of a state: where it stands and its key.
struct ReqArg<'a> {
    id: &'a str,
    state: &'a str,
    body: &'a Value,
    /// The state's arguments (what `use_in` copies).
    run: &'a [Value],
    /// The requisite as written (`require_in`, `use`, ...).
    key: &'a str,
    /// The requisite it adds to its targets (`require` for `require_in`).
    rkey: &'a str,
}

/// `requisite_in` at work: the high data as it was, the extensions built so far, the
/// errors found.
struct ReqIn<'a> {
    high: &'a Map<String, Value>,
    extend: Map<String, Value>,
    errors: Vec<String>,
}

impl ReqIn<'_> {
    /// The dict form (`require_in: {file: /etc/x}`): each target gets the requisite.
    fn named_targets(&mut self, a: &ReqArg<'_>, items: &Map<String, Value>) {
        for (st, name) in items {
            let name_s = py_str(name);
            let mut st = st.clone();
            if let Some(e) = dotted_requisite(a.rkey, &st, &name_s, a.body) {
                self.errors.push(e);
                st.truncate(st.find('.').unwrap_or(st.len()));
            }
            extend_req(
                &mut self.extend,
                &name_s,
                &st,
                a.rkey,
                a.state,
                a.id,
                a.body,
            );
        }
    }

    /// The list form. As in Salt, the targets found so far are kept from item to item
    /// (an `sls` item starts them over), so each item applies them all again.
    fn listed_targets(&mut self, a: &ReqArg<'_>, items: &[Value]) {
        let mut hinges: Vec<(Value, String)> = Vec::new();
        for ind in items {
            let Some(ind) = resolve_target(ind, self.high) else {
                continue;
            };
            let Some((pstate, pname)) = ind.as_object().and_then(|m| m.iter().next()) else {
                continue;
            };
            if pstate == "sls" {
                hinges = find_sls_ids(pname, self.high)
                    .into_iter()
                    .map(|(n, s)| (json!(n), s))
                    .collect();
            } else {
                hinges.push((pname.clone(), pstate.clone()));
            }
            if let Some(e) = dotted_requisite(a.rkey, pstate, &py_str(pname), a.body) {
                self.errors.push(e);
            }
            for (name, hstate) in hinges.clone() {
                let hstate = hstate.split('.').next().unwrap_or(&hstate);
                self.hinge(a, &name, hstate);
            }
        }
    }

    /// One target (`name`, a state `hstate`) of the requisite `a`.
    fn hinge(&mut self, a: &ReqArg<'_>, name: &Value, hstate: &str) {
        let req = Requisite::parse(a.key);
        if req == Some((Prereq, In)) {
            let arg = json!({"prerequired": [{hstate: name.clone()}]});
            extend_arg(&mut self.extend, a.id, a.state, arg);
        }
        match req {
            Some((Prereq, Own)) => {
                for (ext_id, req_state) in find_name(name, hstate, self.high, true) {
                    let arg = json!({"prerequired": [{a.state: a.id}]});
                    extend_arg(&mut self.extend, &ext_id, &req_state, arg);
                }
            }
            Some((Use, In)) => self.use_in(a, name, hstate),
            Some((Use, Own)) => self.use_own(a, name, hstate),
            _ => extend_req(
                &mut self.extend,
                &py_str(name),
                hstate,
                a.rkey,
                a.state,
                a.id,
                a.body,
            ),
        }
    }

    /// `use_in`: the target takes this state's arguments it does not set itself.
    fn use_in(&mut self, a: &ReqArg<'_>, name: &Value, hstate: &str) {
        for (ext_id, req_state) in find_name(name, hstate, self.high, true) {
            let ext_args = state_args(&ext_id, hstate, self.high);
            ensure_extend(&mut self.extend, &ext_id, &req_state);
            for arg in copied_by_use(a.run, &ext_args) {
                extend_arg(&mut self.extend, &ext_id, &req_state, arg);
            }
        }
    }

    /// `use`: this state takes the target's arguments it does not set itself.
    fn use_own(&mut self, a: &ReqArg<'_>, name: &Value, hstate: &str) {
        for (ext_id, req_state) in find_name(name, hstate, self.high, true) {
            let loc_args = state_args(a.id, a.state, self.high);
            ensure_extend(&mut self.extend, a.id, a.state);
            let source = self
                .high
                .get(&ext_id)
                .and_then(|b| b.get(&req_state))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for arg in copied_by_use(&source, &loc_args) {
                extend_arg(&mut self.extend, a.id, a.state, arg);
            }
        }
    }
}

/// `requisite_in`: the `_in` requisites, `use` and `prereq` turned into extensions of the
/// states they name, then reconciled (strictly).
pub fn requisite_in(high: &mut Map<String, Value>, disabled: &[String]) -> Vec<String> {
    let snapshot = high.clone();
    let mut r = ReqIn {
        high: &snapshot,
        extend: Map::new(),
        errors: Vec::new(),
    };
    for (id, body) in &snapshot {
        let Value::Object(bmap) = body else { continue };
        for (state, run) in bmap {
            let Value::Array(run) = run else { continue };
            if state.starts_with("__") {
                continue;
            }
            for arg in run {
                let Some((key, items)) = arg.as_object().and_then(|m| m.iter().next()) else {
                    continue;
                };
                if !Requisite::is_req_in(key) || disabled.iter().any(|d| d == key) {
                    continue;
                }
                let a = ReqArg {
                    id,
                    state,
                    body,
                    run,
                    key,
                    rkey: key.split('_').next().unwrap_or(key),
                };
                match items {
                    Value::Object(items) => r.named_targets(&a, items),
                    Value::Array(items) => r.listed_targets(&a, items),
                    _ => {}
                }
            }
        }
    }
    let ReqIn {
        extend, mut errors, ..
    } = r;
    let list: Vec<Value> = extend
        .into_iter()
        .map(|(k, v)| Value::Object(Map::from_iter([(k, v)])))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn high(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn targets_resolve_by_id_then_name() {
        let h = high(json!({
            "web": {"pkg": [{"name": "nginx"}], "__sls__": "a"},
            "conf": {"file": [{"name": "/etc/x"}], "__sls__": "a"},
        }));
        assert_eq!(
            resolve_target(&json!("web"), &h),
            Some(json!({"pkg": "web"}))
        );
        assert_eq!(
            resolve_target(&json!("/etc/x"), &h),
            Some(json!({"file": "conf"}))
        );
        assert_eq!(
            resolve_target(&json!({"cmd": "x"}), &h),
            Some(json!({"cmd": "x"}))
        );
        assert_eq!(resolve_target(&json!("nothing"), &h), None);
    }

    #[test]
    fn use_copies_what_the_target_lacks() {
        let args = [
            json!({"name": "x"}),
            json!({"user": "root"}),
            json!({"mode": 644}),
            json!({"require": [{"pkg": "web"}]}),
            json!({"watch_in": [{"svc": "s"}]}),
            json!({"a": 1, "b": 2}),
        ];
        assert_eq!(
            copied_by_use(&args, &["mode".to_string()]),
            [json!({"user": "root"})]
        );
    }

    #[test]
    fn dotted_requisites_are_named() {
        let body = json!({"__sls__": "web"});
        assert_eq!(dotted_requisite("require", "pkg", "nginx", &body), None);
        assert_eq!(
            dotted_requisite("watch", "file.managed", "/etc/x", &body).as_deref(),
            Some(
                "Invalid requisite in watch: file.managed for /etc/x, in SLS 'web'. Requisites \
                 must not contain dots, did you mean 'file'?"
            )
        );
    }

    #[test]
    fn require_in_extends_its_target() {
        let mut h = high(json!({
            "web": {"pkg": ["installed", {"require_in": [{"service": "svc"}]}], "__sls__": "a", "__env__": "base"},
            "svc": {"service": ["running"], "__sls__": "a", "__env__": "base"},
        }));
        assert!(requisite_in(&mut h, &[]).is_empty());
        assert_eq!(h["svc"]["service"][1], json!({"require": [{"pkg": "web"}]}));
        // A disabled requisite adds nothing.
        let mut h2 = high(json!({
            "web": {"pkg": ["installed", {"require_in": [{"service": "svc"}]}], "__sls__": "a"},
            "svc": {"service": ["running"], "__sls__": "a"},
        }));
        requisite_in(&mut h2, &["require_in".to_string()]);
        assert_eq!(h2["svc"]["service"], json!(["running"]));
    }

    #[test]
    fn use_takes_the_targets_arguments() {
        let mut h = high(json!({
            "base": {"file": ["managed", {"user": "www"}, {"mode": 600}, {"name": "/a"}], "__sls__": "a"},
            "other": {"file": ["managed", {"mode": 644}, {"use": [{"file": "base"}]}], "__sls__": "a"},
        }));
        assert!(requisite_in(&mut h, &[]).is_empty());
        let args = h["other"]["file"].as_array().cloned().unwrap_or_default();
        assert!(args.contains(&json!({"user": "www"})));
        assert!(!args.contains(&json!({"mode": 600})));
        assert!(!args.contains(&json!({"name": "/a"})));
    }
}
