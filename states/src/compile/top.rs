//! The top file (`BaseHighState.get_tops`, `merge_tops`, `verify_tops`, `top_matches` and
//! the `confirm_top` matcher): which SLS of which saltenv this minion gets.

use saltq_semantics::python::{fnmatch, str as py_str};
use saltq_semantics::target::{MinionFacts, Nodegroups, Target, TargetType};
use serde_json::{Map, Value};

use super::SlsSource;

/// `{saltenv: [sls, ...]}` in the top file's order (`state.show_top`'s answer).
pub type Matches = Vec<(String, Vec<String>)>;

/// The merged top data: `{saltenv: {target: [sls or {match: ...}, ...]}}`, in order.
pub type Top = Vec<(String, Map<String, Value>)>;

/// Salt's comment when the top file gives this minion nothing.
pub const NO_MATCHES: &str =
    "No Top file or master_tops data matches found. Please see master log for details.";

/// The minion options the top file reads (Salt's names).
#[derive(Debug, Clone)]
pub struct TopOptions {
    /// `saltenv`: only this saltenv's top file and sections (unset: all).
    pub saltenv: Option<String>,
    /// `top_file_merging_strategy`: `merge` (default), `same` or `merge_all`.
    pub top_file_merging_strategy: String,
    /// `default_top`: the saltenv whose top file `same` falls back to (`base`).
    pub default_top: String,
    /// `env_order`: the order saltenvs' top files are read in.
    pub env_order: Vec<String>,
    /// `state_top_saltenv`: read only this saltenv's top file.
    pub state_top_saltenv: Option<String>,
}

impl Default for TopOptions {
    fn default() -> Self {
        Self {
            saltenv: None,
            top_file_merging_strategy: "merge".into(),
            default_top: "base".into(),
            env_order: Vec::new(),
            state_top_saltenv: None,
        }
    }
}

/// What the top file's targets are checked against: the minion itself.
#[derive(Debug, Clone, Copy)]
pub struct Minion<'a> {
    /// The minion id.
    pub id: &'a str,
    /// Its grains.
    pub grains: &'a Value,
    /// Its pillar.
    pub pillar: &'a Value,
    /// The `nodegroups` option.
    pub nodegroups: &'a Nodegroups,
}

/// `_get_envs`: the saltenvs whose top files are read, in order.
fn get_envs(source: &dyn SlsSource, opts: &TopOptions) -> Vec<String> {
    let client_envs = source.envs();
    let mut envs = vec!["base".to_owned()];
    for e in &client_envs {
        if !envs.contains(e) {
            envs.push(e.clone());
        }
    }
    let mut env_order: Vec<String> = Vec::new();
    for e in &opts.env_order {
        if !env_order.contains(e) {
            env_order.push(e.clone());
        }
    }
    if !env_order.is_empty() && !client_envs.is_empty() {
        env_order
            .into_iter()
            .filter(|e| client_envs.contains(e))
            .collect()
    } else if !env_order.is_empty() {
        env_order
    } else {
        envs
    }
}

/// `get_tops`: every saltenv's top file, plus the files they `include`.
fn get_tops(
    source: &dyn SlsSource,
    opts: &TopOptions,
) -> Result<Vec<(String, Vec<Value>)>, String> {
    let mut tops: Vec<(String, Vec<Value>)> = Vec::new();
    let push = |tops: &mut Vec<(String, Vec<Value>)>, env: &str, v: Value| match tops
        .iter_mut()
        .find(|(e, _)| e == env)
    {
        Some((_, list)) => list.push(v),
        None => tops.push((env.to_owned(), vec![v])),
    };
    if opts.top_file_merging_strategy == "same"
        && opts.saltenv.is_none()
        && opts.default_top.is_empty()
    {
        return Err(
            "top_file_merging_strategy set to 'same', but no default_top \
                    configuration option was set"
                .into(),
        );
    }
    let envs = match (&opts.saltenv, &opts.state_top_saltenv) {
        (Some(env), _) => vec![env.clone()],
        (None, Some(env)) => vec![env.clone()],
        (None, None) => get_envs(source, opts),
    };
    for env in envs {
        let top = source.render_top(&env)?;
        push(
            &mut tops,
            &env,
            top.filter(|t| !t.is_null())
                .unwrap_or_else(|| Value::Object(Map::new())),
        );
    }
    // Top files may include other SLS as more top data.
    let mut include: Vec<(String, Vec<String>)> = Vec::new();
    for (env, ctops) in tops.iter_mut() {
        for ctop in ctops.iter_mut() {
            if let Some(Value::Array(inc)) =
                ctop.as_object_mut().and_then(|m| m.shift_remove("include"))
            {
                include.push((env.clone(), inc.iter().map(py_str).collect()));
            }
        }
    }
    let mut done: Vec<(String, String)> = Vec::new();
    for (env, states) in include {
        let avail = source.list_states(&env);
        for sls_match in states {
            for sls in avail.iter().filter(|s| fnmatch(s, &sls_match)) {
                if done.contains(&(env.clone(), sls.clone())) {
                    continue;
                }
                if let Some(data) = source.render_sls(&env, sls)? {
                    push(&mut tops, &env, data);
                }
                done.push((env.clone(), sls.clone()));
            }
        }
    }
    Ok(tops)
}

const NO_TARGETS: &str = "Unable to render top file. No targets found.";

/// Sets `top[saltenv][tgt]`.
fn set(top: &mut Top, env: &str, tgt: &str, v: Value) {
    match top.iter_mut().find(|(e, _)| e == env) {
        Some((_, m)) => {
            m.insert(tgt.to_owned(), v);
        }
        None => {
            let mut m = Map::new();
            m.insert(tgt.to_owned(), v);
            top.push((env.to_owned(), m));
        }
    }
}

/// The sections of one top file: `(saltenv, targets)`.
fn sections(ctop: &Value) -> Vec<(String, Value)> {
    ctop.as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn copy_targets(top: &mut Top, env: &str, targets: &Value) -> Result<(), String> {
    let Value::Object(targets) = targets else {
        return Err(NO_TARGETS.into());
    };
    if !top.iter().any(|(e, _)| e == env) {
        top.push((env.to_owned(), Map::new()));
    }
    for (tgt, v) in targets {
        set(top, env, tgt, v.clone());
    }
    Ok(())
}

/// `merge_tops` by `top_file_merging_strategy` (an unknown one is `merge`, as in Salt).
pub fn merge_tops(tops: Vec<(String, Vec<Value>)>, opts: &TopOptions) -> Result<Top, String> {
    let mut top: Top = Vec::new();
    match opts.top_file_merging_strategy.as_str() {
        "same" => {
            for (cenv, ctops) in &tops {
                let empty =
                    |l: &Vec<Value>| l.iter().all(|x| x.as_object().is_some_and(Map::is_empty));
                if empty(ctops) {
                    let fallback = tops
                        .iter()
                        .find(|(e, _)| *e == opts.default_top)
                        .map(|(_, l)| l.clone())
                        .unwrap_or_default();
                    if empty(&fallback) {
                        continue;
                    }
                    for ctop in &fallback {
                        for (saltenv, targets) in sections(ctop) {
                            if saltenv != *cenv {
                                continue;
                            }
                            copy_targets(&mut top, &saltenv, &targets)?;
                            break;
                        }
                    }
                    continue;
                }
                for ctop in ctops {
                    for (saltenv, targets) in sections(ctop) {
                        if saltenv == "include" || saltenv != *cenv {
                            continue;
                        }
                        copy_targets(&mut top, &saltenv, &targets)?;
                    }
                }
            }
        }
        "merge_all" => {
            for (_, ctops) in &tops {
                for ctop in ctops {
                    for (saltenv, targets) in sections(ctop) {
                        if saltenv == "include" {
                            continue;
                        }
                        let Value::Object(targets) = targets else {
                            return Err(NO_TARGETS.into());
                        };
                        for (tgt, data) in targets {
                            let existing = top
                                .iter()
                                .find(|(e, _)| *e == saltenv)
                                .and_then(|(_, m)| m.get(&tgt))
                                .cloned();
                            let Some(existing) = existing else {
                                set(&mut top, &saltenv, &tgt, data);
                                continue;
                            };
                            let read = |v: &Value| {
                                let mut mt = None;
                                let mut states = Vec::new();
                                for item in v.as_array().into_iter().flatten() {
                                    if item.is_object() {
                                        mt = Some(item.clone());
                                    }
                                    if item.is_string() {
                                        states.push(item.clone());
                                    }
                                }
                                (mt, states)
                            };
                            let (t1, s1) = read(&existing);
                            let (t2, s2) = read(&data);
                            let mut merged = Vec::new();
                            if let Some(t) = t2.or(t1) {
                                merged.push(t);
                            }
                            merged.extend(s1);
                            for s in s2 {
                                if !merged.contains(&s) {
                                    merged.push(s);
                                }
                            }
                            set(&mut top, &saltenv, &tgt, Value::Array(merged));
                        }
                    }
                }
            }
        }
        _ => {
            let base = tops
                .iter()
                .find(|(e, _)| e == "base")
                .map(|(_, l)| l.clone())
                .unwrap_or_default();
            for ctop in &base {
                for (saltenv, targets) in sections(ctop) {
                    if saltenv == "include" {
                        continue;
                    }
                    copy_targets(&mut top, &saltenv, &targets)?;
                }
            }
            for (cenv, ctops) in tops.iter().filter(|(e, _)| e != "base") {
                for ctop in ctops {
                    for (saltenv, targets) in sections(ctop) {
                        if saltenv == "include" || saltenv != *cenv {
                            continue;
                        }
                        if top.iter().any(|(e, _)| *e == saltenv) {
                            continue;
                        }
                        copy_targets(&mut top, &saltenv, &targets)?;
                    }
                }
            }
        }
    }
    Ok(top)
}

/// `get_top`: the top files read and merged. A top file that fails to render counts as no
/// top file (Salt logs it); a merge failure is Salt's error text.
pub fn get_top(source: &dyn SlsSource, opts: &TopOptions) -> Result<Top, String> {
    match get_tops(source, opts) {
        Ok(tops) => merge_tops(tops, opts),
        Err(_) => Ok(Vec::new()),
    }
}

/// `verify_tops`: the top data's structure, with Salt's messages.
pub fn verify_tops(top: &Top) -> Vec<String> {
    let mut errors = Vec::new();
    for (saltenv, matches) in top {
        if saltenv == "include" {
            continue;
        }
        if saltenv.is_empty() {
            errors.push("Empty saltenv statement in top file".into());
        }
        for slsmods in matches.values() {
            let Value::Array(slsmods) = slsmods else {
                errors.push("Malformed topfile (state declarations not formed as a list)".into());
                continue;
            };
            for slsmod in slsmods {
                match slsmod {
                    Value::Object(m) => {
                        for val in m.values() {
                            if !saltq_semantics::python::truthy(val) {
                                errors.push(format!(
                                    "Improperly formatted top file matcher in saltenv {}: {} file",
                                    saltq_semantics::python::repr(slsmod),
                                    py_str(val)
                                ));
                            }
                        }
                    }
                    Value::String(s) if s.is_empty() => {
                        errors.push(format!("Environment {saltenv} contains an empty sls index"));
                    }
                    _ => {}
                }
            }
        }
    }
    errors
}

/// `confirm_top`: whether a top file target matches the minion, by the section's
/// `- match:` (compound by default).
pub fn confirm_top(tgt: &str, data: &[Value], minion: &Minion<'_>) -> bool {
    let mut matcher = "compound".to_owned();
    for item in data {
        if let Some(m) = item.get("match") {
            matcher = py_str(m);
        }
    }
    let Ok(tgt_type) = matcher.parse::<TargetType>() else {
        return false;
    };
    let Ok(target) = Target::compile(tgt, tgt_type, None, minion.nodegroups) else {
        return false;
    };
    target.matches(&MinionFacts {
        id: minion.id,
        grains: Some(minion.grains),
        pillar: Some(minion.pillar),
    })
}

/// `top_matches`: the SLS of each saltenv whose target matches the minion, as
/// `state.show_top` answers. `envs` are the saltenvs the fileserver knows (an
/// `- env: sls` item naming another one is dropped).
pub fn top_matches(top: &Top, minion: &Minion<'_>, opts: &TopOptions, envs: &[String]) -> Matches {
    let mut matches: Matches = Vec::new();
    fn add(matches: &mut Matches, env: &str, sls: Option<String>) {
        let slot = match matches.iter().position(|(e, _)| e == env) {
            Some(i) => &mut matches[i].1,
            None => {
                matches.push((env.to_owned(), Vec::new()));
                &mut matches.last_mut().expect("just pushed").1
            }
        };
        if let Some(sls) = sls {
            slot.push(sls);
        }
    }
    fn filter(
        matches: &mut Matches,
        saltenv: &str,
        tgt: &str,
        data: &Value,
        minion: &Minion<'_>,
        envs: &[String],
    ) {
        let data: Vec<Value> = match data {
            Value::Array(l) => l.clone(),
            other => vec![other.clone()],
        };
        if !confirm_top(tgt, &data, minion) {
            return;
        }
        add(matches, saltenv, None);
        for item in &data {
            if let Some(Value::Object(sub)) = item.get("subfilter") {
                for (m, d) in sub {
                    filter(matches, saltenv, m, d, minion, envs);
                }
            }
            match item {
                Value::String(s) => add(matches, saltenv, Some(s.clone())),
                Value::Object(m) => {
                    let Some((env_key, inc_sls)) = m.iter().next_back() else {
                        continue;
                    };
                    if env_key == "subfilter" || !envs.contains(env_key) {
                        continue;
                    }
                    add(matches, env_key, Some(py_str(inc_sls)));
                }
                _ => {}
            }
        }
    }
    for (saltenv, body) in top {
        if opts.saltenv.as_ref().is_some_and(|e| e != saltenv) {
            continue;
        }
        for (tgt, data) in body {
            filter(&mut matches, saltenv, tgt, data, minion, envs);
        }
    }
    matches
}

/// Salt's answer to a highstate that has nothing to run (`call_highstate`'s
/// `no_|-states_|-states_|-None`), with this comment.
pub fn no_states(comment: &str) -> Map<String, Value> {
    let mut ret = Map::new();
    ret.insert("result".into(), Value::Bool(false));
    ret.insert("comment".into(), Value::String(comment.to_owned()));
    ret.insert("name".into(), Value::String("No States".into()));
    ret.insert("changes".into(), Value::Object(Map::new()));
    ret.insert("__run_num__".into(), Value::from(0));
    let mut out = Map::new();
    out.insert("no_|-states_|-states_|-None".into(), Value::Object(ret));
    out
}
