//! The compile steps of the `state.*` functions, composed as `salt/modules/state.py` does,
//! so the engine only adds arguments, locking and the run: each answers Salt's data or
//! Salt's list of errors (the caller sets retcode 1 for an error list).

use serde_json::{Map, Value};

use super::low::{compile_high_data, compile_low_chunks, verify_high};
use super::top::{Minion, NO_MATCHES, TopOptions, get_top, no_states, top_matches, verify_tops};
use super::{HighBuilder, Matches, SlsSource};

/// The minion options the compiler reads (Salt's names).
#[derive(Debug, Clone)]
pub struct CompileOptions {
    /// `state_auto_order` (default true): states without `order` run in file order.
    pub state_auto_order: bool,
    /// `disabled_requisites`: requisites to ignore.
    pub disabled_requisites: Vec<String>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        Self {
            state_auto_order: true,
            disabled_requisites: Vec::new(),
        }
    }
}

fn builder<'a>(source: &'a dyn SlsSource, copts: &CompileOptions) -> HighBuilder<'a> {
    let mut b = HighBuilder::new(source);
    b.state_auto_order = copts.state_auto_order;
    b
}

/// What a highstate is to run, or why it runs nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum Highstate {
    /// The high data to run.
    High(Map<String, Value>),
    /// Errors: Salt answers the list itself (retcode 1).
    Errors(Vec<String>),
    /// Nothing for this minion: Salt answers this result (`no_|-states_|-states_|-None`,
    /// retcode 2).
    Nothing(Map<String, Value>),
}

/// `mods` as Salt's `split_input` reads them: a list, or a comma-separated string.
pub fn split_mods(mods: &Value) -> Vec<String> {
    match mods {
        Value::Array(items) => items.iter().map(saltq_semantics::python::str).collect(),
        Value::Null => Vec::new(),
        other => saltq_semantics::python::str(other)
            .split(',')
            .map(|s| s.trim().to_owned())
            .collect(),
    }
}

/// `exclude=` as Salt reads it: a comma-separated string or a list (of SLS names or of
/// `{sls: ...}` / `{id: ...}`), appended to the high data's `__exclude__`.
pub fn add_exclude(high: &mut Map<String, Value>, exclude: &Value) {
    let items: Vec<Value> = match exclude {
        Value::Null => return,
        Value::Array(items) => items.clone(),
        Value::String(s) if s.is_empty() => return,
        Value::String(s) => s.split(',').map(|x| Value::String(x.to_owned())).collect(),
        other => vec![other.clone()],
    };
    match high.get_mut("__exclude__") {
        Some(Value::Array(list)) => list.extend(items),
        _ => {
            high.insert("__exclude__".into(), Value::Array(items));
        }
    }
}

/// The top file for this minion, as `state.show_top` answers (or its errors).
pub fn show_top(
    source: &dyn SlsSource,
    minion: &Minion<'_>,
    opts: &TopOptions,
) -> Result<Matches, Vec<String>> {
    let top = get_top(source, opts).map_err(|e| vec![e])?;
    let errors = verify_tops(&top);
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(top_matches(&top, minion, opts, &source.envs()))
}

/// `state.sls`'s high data for `mods` of `saltenv` (before its run), with `exclude=`.
pub fn sls_high(
    source: &dyn SlsSource,
    copts: &CompileOptions,
    saltenv: &str,
    mods: &[String],
    exclude: &Value,
) -> Result<Map<String, Value>, Vec<String>> {
    let matches: Matches = vec![(saltenv.to_owned(), mods.to_vec())];
    let (mut high, errors) = builder(source, copts).render_highstate(&matches);
    if !errors.is_empty() {
        return Err(errors);
    }
    add_exclude(&mut high, exclude);
    Ok(high)
}

/// `state.show_sls`: the high data of `mods`, verified.
pub fn show_sls(
    source: &dyn SlsSource,
    copts: &CompileOptions,
    saltenv: &str,
    mods: &[String],
) -> Result<Map<String, Value>, Vec<String>> {
    let matches: Matches = vec![(saltenv.to_owned(), mods.to_vec())];
    let (high, mut errors) = builder(source, copts).render_highstate(&matches);
    errors.extend(verify_high(&high));
    if errors.is_empty() {
        Ok(high)
    } else {
        Err(errors)
    }
}

/// `state.show_low_sls`: the low chunks of `mods` (no `extend` or `_in` processing, as in
/// Salt).
pub fn show_low_sls(
    source: &dyn SlsSource,
    copts: &CompileOptions,
    saltenv: &str,
    mods: &[String],
) -> Result<Vec<Map<String, Value>>, Vec<String>> {
    show_sls(source, copts, saltenv, mods).map(|high| compile_high_data(&high))
}

/// `state.highstate`'s plan (`call_highstate` up to the run), with `exclude=`.
pub fn highstate(
    source: &dyn SlsSource,
    copts: &CompileOptions,
    minion: &Minion<'_>,
    opts: &TopOptions,
    exclude: &Value,
) -> Highstate {
    let top = match get_top(source, opts) {
        Ok(top) => top,
        Err(e) => {
            let mut ret = no_states("Unable to render top file: ");
            if let Some(Value::Object(r)) = ret.get_mut("no_|-states_|-states_|-None") {
                r.insert(
                    "comment".into(),
                    Value::String(format!("Unable to render top file: {e}")),
                );
            }
            return Highstate::Nothing(ret);
        }
    };
    let mut errors = verify_tops(&top);
    let matches = top_matches(&top, minion, opts, &source.envs());
    if matches.is_empty() {
        return Highstate::Nothing(no_states(NO_MATCHES));
    }
    let (mut high, render_errors) = builder(source, copts).render_highstate(&matches);
    add_exclude(&mut high, exclude);
    errors.extend(render_errors);
    if !errors.is_empty() {
        return Highstate::Errors(errors);
    }
    if high.is_empty() {
        return Highstate::Nothing(no_states("No states found for this minion"));
    }
    Highstate::High(high)
}

/// `state.show_highstate`: the high data of the minion's top file, or the errors.
pub fn show_highstate(
    source: &dyn SlsSource,
    copts: &CompileOptions,
    minion: &Minion<'_>,
    opts: &TopOptions,
) -> Result<Map<String, Value>, Vec<String>> {
    let top = get_top(source, opts).map_err(|e| vec![e])?;
    let mut errors = verify_tops(&top);
    let matches = top_matches(&top, minion, opts, &source.envs());
    let (high, render_errors) = builder(source, copts).render_highstate(&matches);
    errors.extend(render_errors);
    if errors.is_empty() {
        Ok(high)
    } else {
        Err(errors)
    }
}

/// `state.show_lowstate`: the minion's low chunks, or the errors.
pub fn show_lowstate(
    source: &dyn SlsSource,
    copts: &CompileOptions,
    minion: &Minion<'_>,
    opts: &TopOptions,
) -> Result<Vec<Map<String, Value>>, Vec<String>> {
    let top = get_top(source, opts).map_err(|e| vec![e])?;
    let matches = top_matches(&top, minion, opts, &source.envs());
    let (high, errors) = builder(source, copts).render_highstate(&matches);
    if !errors.is_empty() {
        return Err(errors);
    }
    compile_low_chunks(high, &copts.disabled_requisites)
}
