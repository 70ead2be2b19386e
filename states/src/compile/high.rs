//! SLS files into high data (`BaseHighState.render_state`, `render_highstate` and their
//! helpers): includes (also relative and per-saltenv), `extend`, `exclude`, the
//! `state.fun` shorthand, `state_auto_order`, conflicting IDs.

use std::collections::{BTreeMap, HashSet};

use saltq_semantics::python::fnmatch;
use serde_json::{Map, Value, json};

use super::SlsSource;
use super::top::Matches;

/// Salt's `fnmatch.filter`: the names matching `pat`, in their order.
fn filter<'a>(names: &'a [String], pat: &str) -> Vec<&'a String> {
    names.iter().filter(|n| fnmatch(n, pat)).collect()
}

/// Python's truthiness for rendered data (an empty SLS renders to nothing).
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
    }
}

/// Builds one high data map from SLS files, as one `BaseHighState` does: the automatic
/// order counter (`state_auto_order`) runs across every file it renders.
pub struct HighBuilder<'a> {
    source: &'a dyn SlsSource,
    /// `self.avail`: the SLS names of each saltenv.
    avail: BTreeMap<String, Vec<String>>,
    /// The next automatic order (`self.iorder`, from 10000).
    iorder: i64,
    /// The `state_auto_order` option (default true).
    pub state_auto_order: bool,
}

impl<'a> HighBuilder<'a> {
    /// A builder over `source`, with the SLS lists of every saltenv it knows.
    pub fn new(source: &'a dyn SlsSource) -> Self {
        let avail = source
            .envs()
            .into_iter()
            .map(|env| {
                let states = source.list_states(&env);
                (env, states)
            })
            .collect();
        Self {
            source,
            avail,
            iorder: 10000,
            state_auto_order: true,
        }
    }

    /// Renders every SLS of `matches` (`{saltenv: [sls or glob]}`) into one high data map,
    /// with Salt's errors (`render_highstate`). This is what `state.show_sls` prints.
    pub fn render_highstate(&mut self, matches: &Matches) -> (Map<String, Value>, Vec<String>) {
        let mut high = Map::new();
        let mut all_errors = Vec::new();
        let mut mods: HashSet<String> = HashSet::new();
        for (saltenv, states) in matches {
            for sls_match in states {
                let mut statefiles: Vec<String> = Vec::new();
                if let Some(avail) = self.avail.get(saltenv) {
                    statefiles = filter(avail, sls_match).into_iter().cloned().collect();
                } else if let Some(avail) = self.avail.get("__env__") {
                    statefiles = filter(avail, sls_match).into_iter().cloned().collect();
                } else {
                    all_errors.push(format!(
                        "No matching salt environment for environment '{saltenv}' found"
                    ));
                }
                if statefiles.is_empty() {
                    statefiles = vec![sls_match.clone()];
                }
                for sls in statefiles {
                    if mods.contains(&format!("{saltenv}:{sls}")) {
                        continue;
                    }
                    let (state, mut errors) = self.render_state(&sls, saltenv, &mut mods, matches);
                    if !state.is_empty() {
                        merge_included_states(&mut high, state, &mut errors);
                    }
                    let this_sls = format!("SLS {sls_match} in saltenv");
                    for error in &mut errors {
                        if error.contains("is not available") && error.contains(&this_sls) {
                            *error = format!(
                                "No matching sls found for '{sls_match}' in env '{saltenv}'"
                            );
                        }
                    }
                    all_errors.extend(errors);
                }
            }
        }
        clean_duplicate_extends(&mut high);
        (high, all_errors)
    }

    /// Renders one SLS and, recursively, what it includes (`render_state`).
    pub fn render_state(
        &mut self,
        sls: &str,
        saltenv: &str,
        mods: &mut HashSet<String>,
        matches: &Matches,
    ) -> (Map<String, Value>, Vec<String>) {
        let mut errors = Vec::new();
        let rendered = match self.source.render_sls(saltenv, sls) {
            Ok(None) => {
                errors.push(format!(
                    "Specified SLS {sls} in saltenv {saltenv} is not available on the salt \
                     master or through a configured fileserver"
                ));
                return (Map::new(), errors);
            }
            Ok(Some(data)) => Some(data),
            Err(e) => {
                errors.push(e);
                None
            }
        };
        mods.insert(format!("{saltenv}:{sls}"));
        let Some(data) = rendered.filter(|d| !is_empty(d)) else {
            return (Map::new(), errors);
        };
        let Value::Object(mut state) = data else {
            errors.push(format!("SLS {sls} does not render to a dictionary"));
            // Salt goes on to merge it, and Python's `dict.update` refuses a list or a string.
            if data.is_array() || data.is_string() {
                errors.push(format!(
                    "Error when rendering state with contents: {}",
                    saltq_semantics::python::str(&data)
                ));
            }
            return (Map::new(), errors);
        };
        let mut include = Vec::new();
        if let Some(inc) = state.get("include") {
            match inc {
                Value::Array(items) => {
                    include = items.clone();
                    state.shift_remove("include");
                }
                _ => errors.push(format!(
                    "Include Declaration in SLS {sls} is not formed as a list"
                )),
            }
        }
        handle_extend(&mut state, sls, saltenv, &mut errors);
        handle_exclude(&mut state, sls, &mut errors);
        handle_state_decls(&mut state, sls, saltenv, &mut errors);

        for inc in include {
            let (env_key, mut inc_sls) = match inc {
                Value::Object(m) => match m.into_iter().next_back() {
                    Some((k, Value::String(v))) => (k, v),
                    Some((k, v)) => (k, saltq_semantics::python::str(&v)),
                    None => continue,
                },
                Value::String(s) => (saltenv.to_owned(), s),
                other => (saltenv.to_owned(), saltq_semantics::python::str(&other)),
            };
            if !self.avail.contains_key(&env_key) && !self.avail.contains_key("__env__") {
                errors.push(format!(
                    "Nonexistent saltenv '{env_key}' found in include of '{inc_sls}' within \
                     SLS '{saltenv}:{sls}'"
                ));
                continue;
            }
            if inc_sls.starts_with('.') {
                let levels = inc_sls.chars().take_while(|c| *c == '.').count();
                let rest = inc_sls[levels..].to_owned();
                let mut p_comps: Vec<String> = sls.split('.').map(str::to_owned).collect();
                if self.source.is_package(saltenv, sls) {
                    p_comps.push("init".into());
                }
                if levels > p_comps.len() {
                    errors.push(format!(
                        "Attempted relative include of '{inc_sls}' within SLS \
                         '{saltenv}:{sls}' goes beyond top level package "
                    ));
                    continue;
                }
                let mut parts = p_comps[..p_comps.len() - levels].to_vec();
                parts.push(rest);
                inc_sls = parts.join(".");
            }
            let resolved_envs: Vec<String> = if env_key != "_xenv" {
                let in_env = self
                    .avail
                    .get(&env_key)
                    .is_some_and(|a| !filter(a, &inc_sls).is_empty());
                if matches.iter().any(|(e, _)| *e == env_key) || in_env {
                    vec![env_key.clone()]
                } else {
                    Vec::new()
                }
            } else {
                matches
                    .iter()
                    .filter(|(e, _)| {
                        self.avail
                            .get(e)
                            .is_some_and(|a| !filter(a, &inc_sls).is_empty())
                    })
                    .map(|(e, _)| e.clone())
                    .collect()
            };
            if resolved_envs.len() == 1 || resolved_envs.iter().any(|e| e == saltenv) {
                let mut sls_targets: Vec<String> = self
                    .avail
                    .get(saltenv)
                    .map(|a| filter(a, &inc_sls).into_iter().cloned().collect())
                    .unwrap_or_default();
                if sls_targets.is_empty() {
                    sls_targets.push(inc_sls.clone());
                }
                for target in sls_targets {
                    let r_env = if resolved_envs.len() == 1 {
                        resolved_envs[0].clone()
                    } else {
                        saltenv.to_owned()
                    };
                    if mods.contains(&format!("{r_env}:{target}")) {
                        continue;
                    }
                    let (mut nstate, err) = self.render_state(&target, &r_env, mods, matches);
                    if !nstate.is_empty() {
                        for (item, body) in nstate.iter_mut() {
                            if item.starts_with("__") {
                                continue;
                            }
                            if let Value::Object(body) = body {
                                let from = body
                                    .entry("__sls_included_from__")
                                    .or_insert_with(|| json!([]));
                                if let Value::Array(from) = from {
                                    from.push(Value::String(sls.to_owned()));
                                }
                            }
                        }
                        merge_included_states(&mut state, nstate, &mut errors);
                    }
                    errors.extend(err);
                }
            } else {
                let msg = if resolved_envs.is_empty() {
                    let envs = if env_key == "_xenv" {
                        matches
                            .iter()
                            .map(|(e, _)| e.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    } else {
                        env_key.clone()
                    };
                    format!(
                        "Unknown include: Specified SLS {env_key}: {inc_sls} is not available \
                         on the salt master in saltenv(s): {envs} "
                    )
                } else {
                    format!(
                        "Ambiguous include: Specified SLS {env_key}: {inc_sls} is available on \
                         the salt master in multiple available saltenvs: {}",
                        resolved_envs.join(", ")
                    )
                };
                errors.push(msg);
            }
        }
        self.handle_iorder(&mut state);
        (state, errors)
    }

    /// `state_auto_order`: each state declaration without an `order` gets the next number.
    fn handle_iorder(&mut self, state: &mut Map<String, Value>) {
        if !self.state_auto_order {
            return;
        }
        for (_, body) in state.iter_mut() {
            let Value::Object(body) = body else { continue };
            for (s_dec, args) in body.iter_mut() {
                if s_dec.starts_with('_') {
                    continue;
                }
                let Value::Array(args) = args else { continue };
                let found = args.iter().any(|a| {
                    a.as_object()
                        .and_then(|m| m.keys().next())
                        .is_some_and(|k| k == "order")
                });
                if !found {
                    args.push(json!({"order": self.iorder}));
                    self.iorder += 1;
                }
            }
        }
    }
}

/// `merge_included_states`: `extend` and `exclude` gathered, IDs merged, a conflicting ID an
/// error.
fn merge_included_states(
    high: &mut Map<String, Value>,
    mut state: Map<String, Value>,
    errors: &mut Vec<String>,
) {
    for key in ["__extend__", "__exclude__"] {
        if let Some(Value::Array(items)) = state.shift_remove(key)
            && let Value::Array(dest) = high.entry(key).or_insert_with(|| json!([]))
        {
            dest.extend(items);
        }
    }
    for (id, body) in &state {
        if let Some(existing) = high.get(id)
            && existing != body
        {
            let field = |v: &Value, k: &str| {
                v.get(k)
                    .map(saltq_semantics::python::str)
                    .unwrap_or_default()
            };
            errors.push(format!(
                "Detected conflicting IDs, SLS IDs need to be globally unique.\n    The \
                     conflicting ID is '{id}' and is found in SLS '{}:{}' and SLS '{}:{}'",
                field(existing, "__env__"),
                field(existing, "__sls__"),
                field(body, "__env__"),
                field(body, "__sls__"),
            ));
        }
    }
    for (id, body) in state {
        high.insert(id, body);
    }
}

/// `clean_duplicate_extends`: each `{id: body}` of `__extend__` once.
fn clean_duplicate_extends(high: &mut Map<String, Value>) {
    let Some(Value::Array(exts)) = high.get_mut("__extend__") else {
        return;
    };
    let mut seen: Vec<(String, Value)> = Vec::new();
    for ext in exts.iter() {
        if let Value::Object(m) = ext {
            for (k, v) in m {
                let item = (k.clone(), v.clone());
                if !seen.contains(&item) {
                    seen.push(item);
                }
            }
        }
    }
    *exts = seen
        .into_iter()
        .map(|(k, v)| {
            let mut m = Map::new();
            m.insert(k, v);
            Value::Object(m)
        })
        .collect();
}

/// Splits `file.managed` into `file` with `managed` appended to its arguments; the key moves
/// to the end of the body, as Salt's pop-and-set does.
fn split_state_keys(body: &mut Map<String, Value>) -> Result<(), ()> {
    let mut skeys = HashSet::new();
    let keys: Vec<String> = body.keys().cloned().collect();
    let mut duplicate = false;
    for key in keys {
        if key.starts_with('_') || !body.get(&key).is_some_and(Value::is_array) {
            continue;
        }
        if let Some((module, fun)) = key.split_once('.') {
            if skeys.contains(module) {
                duplicate = true;
                continue;
            }
            let fun = fun.split('.').next().unwrap_or(fun).to_owned();
            let module = module.to_owned();
            let Some(Value::Array(mut args)) = body.shift_remove(&key) else {
                continue;
            };
            args.push(Value::String(fun));
            body.shift_remove(&module);
            body.insert(module.clone(), Value::Array(args));
            skeys.insert(module);
            continue;
        }
        skeys.insert(key);
    }
    if duplicate { Err(()) } else { Ok(()) }
}

/// `_handle_state_decls`: the shorthand forms, `__sls__` and `__env__` on every ID.
fn handle_state_decls(
    state: &mut Map<String, Value>,
    sls: &str,
    saltenv: &str,
    errors: &mut Vec<String>,
) {
    for (name, body) in state.iter_mut() {
        match body {
            Value::Object(m) => {
                if split_state_keys(m).is_err() {
                    errors.push(format!(
                        "ID '{name}' in SLS '{sls}' contains multiple state declarations of \
                         the same type"
                    ));
                }
                if !m.contains_key("__sls__") {
                    m.insert("__sls__".into(), json!(sls));
                }
                if !m.contains_key("__env__") {
                    m.insert("__env__".into(), json!(saltenv));
                }
            }
            _ if name == "__extend__" || name == "__exclude__" => {}
            Value::String(s) if s.contains('.') => {
                let mut comps = s.split('.');
                let module = comps.next().unwrap_or_default().to_owned();
                let fun = comps.next().unwrap_or_default().to_owned();
                let mut m = Map::new();
                m.insert("__sls__".into(), json!(sls));
                m.insert("__env__".into(), json!(saltenv));
                m.insert(module, json!([fun]));
                *body = Value::Object(m);
            }
            _ => errors.push(format!("ID {name} in SLS {sls} is not a dictionary")),
        }
    }
}

/// `_handle_extend`: the SLS's `extend` into `__extend__`.
fn handle_extend(
    state: &mut Map<String, Value>,
    sls: &str,
    saltenv: &str,
    errors: &mut Vec<String>,
) {
    let Some(ext) = state.shift_remove("extend") else {
        return;
    };
    let Value::Object(mut ext) = ext else {
        errors.push(format!(
            "Extension value in SLS '{sls}' is not a dictionary"
        ));
        return;
    };
    for (name, body) in ext.iter_mut() {
        let Value::Object(body) = body else {
            errors.push(format!(
                "Extension name '{name}' in SLS '{sls}' is not a dictionary"
            ));
            continue;
        };
        if !body.contains_key("__sls__") {
            body.insert("__sls__".into(), json!(sls));
        }
        if !body.contains_key("__env__") {
            body.insert("__env__".into(), json!(saltenv));
        }
        let keys: Vec<String> = body.keys().cloned().collect();
        for key in keys {
            if key.starts_with('_') || !body.get(&key).is_some_and(Value::is_array) {
                continue;
            }
            if let Some((module, fun)) = key.split_once('.') {
                let fun = fun.split('.').next().unwrap_or(fun).to_owned();
                let module = module.to_owned();
                if let Some(Value::Array(mut args)) = body.shift_remove(&key) {
                    args.push(Value::String(fun));
                    body.insert(module, Value::Array(args));
                }
            }
        }
    }
    if let Value::Array(list) = state.entry("__extend__").or_insert_with(|| json!([])) {
        list.push(Value::Object(ext));
    }
}

/// `_handle_exclude`: the SLS's `exclude` into `__exclude__`.
fn handle_exclude(state: &mut Map<String, Value>, sls: &str, errors: &mut Vec<String>) {
    let Some(exc) = state.shift_remove("exclude") else {
        return;
    };
    let items = match exc {
        Value::Array(items) => items,
        other => {
            errors.push(format!(
                "Exclude Declaration in SLS {sls} is not formed as a list"
            ));
            match other {
                Value::Object(m) => m.keys().map(|k| json!(k)).collect(),
                Value::String(s) => s.chars().map(|c| json!(c.to_string())).collect(),
                _ => Vec::new(),
            }
        }
    };
    if let Value::Array(list) = state.entry("__exclude__").or_insert_with(|| json!([])) {
        list.extend(items);
    }
}
