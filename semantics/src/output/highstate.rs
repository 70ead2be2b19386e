//! Salt's `highstate` outputter (`salt/output/highstate.py`): each minion's state
//! run as a block per state, sorted by `__run_num__`, then a summary; the terse,
//! mixed, changes and filter modes, `state_verbose`, and Salt's colours.
//!
//! Where Salt's outputter raises `KeyError`, `AttributeError` or `TypeError`
//! (a state without `changes`, a `duration` of `null`, a top-level list...),
//! `salt.output.try_printout` prints the data with `nested` instead: here every
//! such place returns [`Fallback`] and the caller renders `nested`. Salt's
//! outputter edits the data as it goes (`duration` gets its ` ms`, a missing
//! `start_time` becomes `""`, a non-string comment a string, an orchestration's
//! `retcode` is deleted), and `nested` then prints the edited data: the edits
//! are recorded here and applied to a copy for the fallback.

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::python::{float_repr, is_space, pformat, rstrip, splitlines, str as py_str, truthy};

/// The opts that change what `highstate` prints, with the master's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct HighstateOptions {
    /// `state_output` (`--state-output`): `full`, `terse`, `mixed`, `changes`,
    /// `filter`, each optionally with `_id`; matched case-insensitively by
    /// prefix as Salt does, anything else prints in full.
    pub state_output: String,
    /// `state_verbose` (`--state-verbose`): false hides states that succeeded
    /// without changes.
    pub state_verbose: bool,
    /// `state_output_diff` (`--output-diff`): hides states that succeeded
    /// without changes, whatever `state_verbose` says.
    pub state_output_diff: bool,
    /// `state_output_profile`: the `Started`/`Duration` lines, the times in
    /// terse lines and the `Total run time` line.
    pub state_output_profile: bool,
    /// `state_output_pct`: `Success %` and `Failure %` in the summary.
    pub state_output_pct: bool,
    /// `state_tabular: True`: terse lines in aligned columns. (A custom format
    /// string, which Salt also accepts, is not supported.)
    pub state_tabular: bool,
    /// `state_compress_ids`: states of one ID with the same result are shown as
    /// one, named `ID (count)`.
    pub state_compress_ids: bool,
    /// For `filter`: results (as `str(result)`: `True`, `False`, `None`) whose
    /// states are left out. Salt takes the `exclude=` keyword argument of the
    /// CLI, else `state_output_exclude`; a string is split on commas, a list or
    /// dict is searched as Python's `in` does, anything else makes Salt fall
    /// back to `nested` when it is consulted.
    pub filter_exclude: Value,
    /// For `filter`: results whose states print as one terse line (`terse=`,
    /// else `state_output_terse`), read as [`HighstateOptions::filter_exclude`].
    pub filter_terse: Value,
}

impl Default for HighstateOptions {
    /// The master's defaults (`salt/config/__init__.py`).
    fn default() -> Self {
        HighstateOptions {
            state_output: "full".to_owned(),
            state_verbose: true,
            state_output_diff: false,
            state_output_profile: true,
            state_output_pct: false,
            state_tabular: false,
            state_compress_ids: false,
            filter_exclude: Value::Array(Vec::new()),
            filter_terse: Value::Array(Vec::new()),
        }
    }
}

impl HighstateOptions {
    /// Reads a `--state-verbose` value as Salt's CLI does: `True`/`true` and
    /// `False`/`false` are booleans, any other text stays a string, which is
    /// true unless empty.
    pub fn parse_state_verbose(value: &str) -> bool {
        match value {
            "True" | "true" => true,
            "False" | "false" => false,
            other => !other.is_empty(),
        }
    }
}

/// Salt's outputter raised and `try_printout` falls back to `nested`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fallback;

type Out<T> = Result<T, Fallback>;

/// One edit Salt's outputter makes to its input: the keys leading to a value,
/// and its new value (None: deleted).
type Edit = (Vec<String>, Option<Value>);

/// `path` followed by `key`.
fn join(path: &[String], key: &str) -> Vec<String> {
    let mut p = path.to_vec();
    p.push(key.to_owned());
    p
}

/// Applies `edits` (paths relative to `root`) to `root`, as Salt's in-place
/// changes would have left it. Paths through non-dicts are ignored.
fn apply_edits(root: &mut Value, edits: &[Edit]) {
    for (path, edit) in edits {
        let Some((last, parents)) = path.split_last() else {
            continue;
        };
        let Some(map) = dict_at(root, parents) else {
            continue;
        };
        match edit {
            Some(v) => {
                map.insert(last.clone(), v.clone());
            }
            None => {
                map.shift_remove(last);
            }
        }
    }
}

/// The dict reached from `root` through `keys`, if there is one.
fn dict_at<'a>(root: &'a mut Value, keys: &[String]) -> Option<&'a mut Map<String, Value>> {
    let mut at = root;
    for key in keys {
        at = at.get_mut(key.as_str())?;
    }
    at.as_object_mut()
}

/// The escape sequences of `salt.utils.color.get_colors` that `highstate` uses.
struct Palette {
    /// Successes without changes, the host line by default, `Succeeded`.
    green: &'static str,
    /// States with changes, the summary's frame, a string return's host line.
    cyan: &'static str,
    /// Failed states and `Failed` when there are failures.
    red: &'static str,
    /// Compile errors and warnings.
    light_red: &'static str,
    /// Results of None (test mode) and `unchanged=`.
    light_yellow: &'static str,
    /// The reset after each coloured piece.
    endc: &'static str,
}

/// Colours on: `TextFormat` prefixes every code with a reset (`0;`).
const COLORS: Palette = Palette {
    green: "\x1b[0;32m",
    cyan: "\x1b[0;36m",
    red: "\x1b[0;31m",
    light_red: "\x1b[0;1;31m",
    light_yellow: "\x1b[0;1;33m",
    endc: "\x1b[0;0m",
};

/// Colours off: every sequence is empty.
const NO_COLORS: Palette = Palette {
    green: "",
    cyan: "",
    red: "",
    light_red: "",
    light_yellow: "",
    endc: "",
};

/// The names of states whose changes are a nested state run (orchestration).
const ORCHESTRATION_NAMES: [&str; 3] = ["state.orch", "state.orchestrate", "state.sls"];

/// Renders `data` as `highstate.output` does (before Salt right-strips it), or,
/// where Salt's outputter raises, the data as Salt's outputter left it, for
/// `nested` to print.
pub(super) fn render(data: &Value, color: bool, opts: &HighstateOptions) -> Result<String, Value> {
    let hs = Highstate {
        opts,
        c: if color { &COLORS } else { &NO_COLORS },
        color,
        mode: opts.state_output.to_lowercase(),
        edits: RefCell::new(Vec::new()),
    };
    match hs.output(data, &[], 1) {
        Ok(Printed::Text(text)) => Ok(text),
        Ok(Printed::Int) | Err(Fallback) => {
            let mut edited = data.clone();
            apply_edits(&mut edited, &hs.edits.borrow());
            Err(edited)
        }
    }
}

/// What `highstate.output` returns: text, or an int (which Salt then fails to strip).
enum Printed {
    /// Text to print.
    Text(String),
    /// An int or bool passed through, which `try_printout` cannot strip.
    Int,
}

/// One rendering: the options, the colours and the lowercased `state_output`.
struct Highstate<'a> {
    opts: &'a HighstateOptions,
    c: &'static Palette,
    color: bool,
    mode: String,
    /// Salt's in-place edits of the input so far, paths from the top.
    edits: RefCell<Vec<Edit>>,
}

/// Where a host's data sits in the input, for recording Salt's edits.
struct HostCtx<'a> {
    /// The keys leading from the top of the input to the host's data.
    path: &'a [String],
    /// For `state_compress_ids`: (host, compressed tag) -> the tag of the
    /// state whose dict Salt reuses for it.
    origins: &'a HashMap<(String, String), String>,
}

/// A key of Salt's `rcounts`: results hash as Python's dict keys do (`1 == True`).
#[derive(Debug, Clone, PartialEq)]
enum CountKey {
    /// `True` (and `1`): counted as succeeded.
    True,
    /// `False` (and `0`): counted as failed.
    False,
    /// `None`: succeeded, and `unchanged=` in the summary.
    None,
    /// The count of states shown with warnings (not a result).
    Warnings,
    /// Any other result: only in the total.
    Other(String),
}

/// The result counts of one host, in first-seen order.
#[derive(Default)]
struct Counts(Vec<(CountKey, u64)>);

impl Counts {
    fn add(&mut self, key: CountKey, n: u64) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, count)) => *count += n,
            None => self.0.push((key, n)),
        }
    }

    fn get(&self, key: &CountKey) -> u64 {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map_or(0, |(_, count)| *count)
    }

    fn sum(&self) -> u64 {
        self.0.iter().map(|(_, count)| count).sum()
    }
}

/// The `rcounts` key of a state's result, or [`Fallback`] for a list or dict
/// (unhashable in Python).
fn count_key(result: &Value) -> Out<CountKey> {
    Ok(match result {
        Value::Null => CountKey::None,
        Value::Bool(true) => CountKey::True,
        Value::Bool(false) => CountKey::False,
        Value::Number(n) if n.as_f64() == Some(1.0) => CountKey::True,
        Value::Number(n) if n.as_f64() == Some(0.0) => CountKey::False,
        // 2 and 2.0 are one key in Python.
        Value::Number(n) => CountKey::Other(format!("{:?}", n.as_f64())),
        Value::String(s) => CountKey::Other(format!("'{s}")),
        Value::Array(_) | Value::Object(_) => return Err(Fallback),
    })
}

impl Highstate<'_> {
    /// Records one of Salt's in-place edits.
    fn edit(&self, path: Vec<String>, value: Option<Value>) {
        self.edits.borrow_mut().push((path, value));
    }

    /// `highstate.output(data, indent_level=...)`; `path` leads from the top
    /// of the input to `data`.
    fn output(&self, data: &Value, path: &[String], indent_level: usize) -> Out<Printed> {
        let mut data = data;
        let mut path = path.to_vec();
        if let Some(inner) = data.as_object().and_then(|m| m.get("return")) {
            data = inner;
            path.push("return".to_owned());
        }
        if let Some(inner) = data.as_object().and_then(|m| m.get("data")) {
            data = inner;
            path.push("data".to_owned());
        }
        // The envelope of a jobs.lookup_jid return.
        if let Some(map) = data.as_object()
            && map.len() == 1
            && let Some((key, Value::Object(only))) = map.iter().next()
            && only.contains_key("jid")
            && only.contains_key("fun")
        {
            match only.get("return") {
                None => {}
                Some(Value::Object(ret)) => {
                    if let Some(inner) = ret.get("data") {
                        data = inner;
                        path.extend([key.clone(), "return".to_owned(), "data".to_owned()]);
                    }
                }
                Some(_) => return Err(Fallback),
            }
        }
        let map = match data {
            Value::Bool(_) => return Ok(Printed::Int),
            Value::Number(n) if !n.is_f64() => return Ok(Printed::Int),
            Value::String(s) => return Ok(Printed::Text(s.clone())),
            Value::Null => return Ok(Printed::Text("None".to_owned())),
            Value::Object(map) => map,
            _ => return Err(Fallback),
        };
        let masters = map.keys().filter(|k| k.ends_with("_master")).count();
        let drop_retcode = map.contains_key("retcode") && masters == 1;
        if drop_retcode {
            self.edit(join(&path, "retcode"), None);
        }
        let hosts: Vec<(&String, &Value)> = map
            .iter()
            .filter(|(k, _)| !(drop_retcode && k.as_str() == "retcode"))
            .collect();
        let mut owned: Option<Vec<(String, Value)>> = None;
        let mut origins = HashMap::new();
        if self.opts.state_compress_ids {
            let (compressed, edits) = compress_ids(&hosts);
            for (p, v) in &edits {
                let mut full = path.clone();
                full.extend(p.iter().cloned());
                self.edit(full, v.clone());
            }
            match compressed {
                Some((compressed, renamed)) => {
                    owned = Some(compressed);
                    origins = renamed;
                }
                None if !edits.is_empty() => {
                    // Salt keeps the data, with the merges made before it gave up.
                    let mut all_value = Value::Object(
                        hosts
                            .iter()
                            .map(|(k, v)| ((*k).clone(), (*v).clone()))
                            .collect(),
                    );
                    apply_edits(&mut all_value, &edits);
                    if let Value::Object(m) = all_value {
                        owned = Some(m.into_iter().collect());
                    }
                }
                None => {}
            }
        }
        let hosts: Vec<(&String, &Value)> = match &owned {
            Some(o) => o.iter().map(|(k, v)| (k, v)).collect(),
            None => hosts,
        };
        let mut out = Vec::with_capacity(hosts.len());
        for (host, hostdata) in hosts {
            let host_path = join(&path, host);
            let ctx = HostCtx {
                path: &host_path,
                origins: &origins,
            };
            out.push(self.format_host(host, hostdata, &ctx, indent_level)?.0);
        }
        Ok(Printed::Text(out.join("\n")))
    }

    /// `_format_host`: one minion's block, and whether anything changed.
    fn format_host(
        &self,
        host: &str,
        data: &Value,
        ctx: &HostCtx<'_>,
        indent_level: usize,
    ) -> Out<(String, bool)> {
        let c = self.c;
        let mut hcolor = c.green;
        let mut hstrs: Vec<String> = Vec::new();
        let mut nchanges: u64 = 0;
        match data {
            Value::Bool(_) | Value::Number(_) if !data.as_number().is_some_and(|n| n.is_f64()) => {
                nchanges = 1;
                hstrs.push(format!("{}    {}{}", c.green, py_str(data), c.endc));
                hcolor = c.cyan;
            }
            Value::String(s) => {
                nchanges = 1;
                for line in splitlines(s, false) {
                    hstrs.push(format!("{}    {}{}", c.green, line, c.endc));
                }
                hcolor = c.cyan;
            }
            Value::Array(errors) => {
                hcolor = c.light_red;
                hstrs.push(format!("    {hcolor}Data failed to compile:{}", c.endc));
                for err in errors {
                    let err = match err {
                        Value::String(s) => s.replace('\x1b', "?"),
                        other => py_str(other),
                    };
                    hstrs.push(format!("{hcolor}----------\n    {err}{}", c.endc));
                }
            }
            Value::Object(map) => {
                let (color, changed) =
                    self.format_states(host, map, ctx, indent_level, &mut hstrs)?;
                hcolor = color;
                nchanges = changed;
            }
            _ => {}
        }
        let host = host.replace('\x1b', "?");
        hstrs.insert(0, format!("{hcolor}{host}:{}", c.endc));
        Ok((hstrs.join("\n"), nchanges > 0))
    }

    /// The dict case of `_format_host`: the states and the summary. Returns the
    /// colour of the host line and the number of changes.
    fn format_states(
        &self,
        host: &str,
        data: &Map<String, Value>,
        ctx: &HostCtx<'_>,
        indent_level: usize,
        hstrs: &mut Vec<String>,
    ) -> Out<(&'static str, u64)> {
        let c = self.c;
        let mut hcolor = c.green;
        let mut nchanges: u64 = 0;
        let mut rcounts = Counts::default();
        let mut rdurations: Vec<f64> = Vec::new();
        let mut pdurations: Vec<f64> = Vec::new();

        let mut states: Vec<(&String, &Map<String, Value>)> = Vec::new();
        for (tname, info) in data {
            let Value::Object(info) = info else { continue };
            if tname != "changes" && !info.is_empty() && !info.contains_key("__run_num__") {
                hstrs.insert(0, pformat(&Value::Object(info.clone())));
                hstrs.insert(
                    0,
                    "The State execution failed to record the order in which all states \
                     were executed. The state return missing data is:"
                        .to_owned(),
                );
            }
            if info.contains_key("result") {
                states.push((tname, info));
            }
        }
        sort_by_run_num(&mut states)?;

        for (tname, ret) in states {
            let origin = ctx
                .origins
                .get(&(host.to_owned(), tname.clone()))
                .unwrap_or(tname);
            let state_path = join(ctx.path, origin);
            let result = &ret["result"];
            let key = count_key(result)?;
            let mut compressed_count = 1;
            if self.opts.state_compress_ids && tname.contains("_|-state_compressed_") {
                compressed_count = compressed_count_of(tname);
            }
            rcounts.add(key, compressed_count);
            let duration = duration_of(ret)?;
            if ret.contains_key("__parallel__") {
                pdurations.extend(duration);
            } else {
                rdurations.extend(duration);
            }

            let mut tcolor = c.green;
            let changes = ret.get("changes");
            let orchestration = ret
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| ORCHESTRATION_NAMES.contains(&n));
            let (schanged, ctext) = if orchestration {
                let changes = changes.ok_or(Fallback)?;
                let changes_path = join(&state_path, "changes");
                let Printed::Text(nested) =
                    self.output(changes, &changes_path, indent_level + 1)?
                else {
                    return Err(Fallback);
                };
                let pad = " ".repeat(14 * indent_level);
                let mut ctext = String::new();
                for (i, line) in format!("\n{nested}").split('\n').enumerate() {
                    if i > 0 {
                        ctext.push('\n');
                    }
                    ctext.push_str(&pad);
                    ctext.push_str(line);
                }
                nchanges += 1;
                (true, ctext)
            } else {
                let changes = changes.ok_or(Fallback)?;
                let (schanged, ctext) =
                    self.format_changes(changes, &join(&state_path, "changes"))?;
                if schanged && compressed_count > 1 {
                    let n = match changes.get("compressed changes") {
                        None => 0,
                        Some(Value::Object(m)) => m.len(),
                        Some(Value::Array(a)) => a.len(),
                        Some(Value::String(s)) => s.chars().count(),
                        Some(_) => return Err(Fallback),
                    };
                    nchanges += if n == 0 { 1 } else { n as u64 };
                } else if schanged {
                    nchanges += 1;
                }
                (schanged, ctext)
            };

            if self.opts.state_output_diff && truthy(result) && !schanged {
                continue;
            }
            if !self.opts.state_verbose && truthy(result) && !schanged {
                continue;
            }
            if schanged {
                tcolor = c.cyan;
            }
            if *result == Value::Bool(false) {
                hcolor = c.red;
                tcolor = c.red;
            }
            if result.is_null() {
                hcolor = c.light_yellow;
                tcolor = c.light_yellow;
            }

            let mode = self.mode.as_str();
            let mut comps: Vec<&str> = tname.split("_|-").collect();
            if mode.ends_with("_id") {
                let id = *comps.get(1).ok_or(Fallback)?;
                *comps.get_mut(2).ok_or(Fallback)? = id;
            }
            if mode.starts_with("filter") {
                let rstr = py_str(result);
                if contains(&self.opts.filter_terse, &rstr)? {
                    hstrs.push(self.format_terse(tcolor, &comps, ret)?);
                    continue;
                }
                if contains(&self.opts.filter_exclude, &rstr)? {
                    continue;
                }
            } else if mode.starts_with("terse")
                || (mode.starts_with("mixed") && *result != Value::Bool(false))
                || (mode.starts_with("changes") && truthy(result) && !schanged)
            {
                hstrs.push(self.format_terse(tcolor, &comps, ret)?);
                continue;
            }

            self.format_full(tcolor, &comps, ret, &ctext, &state_path, hstrs)?;
            if let Some(warnings) = ret.get("warnings") {
                rcounts.add(CountKey::Warnings, 1);
                let text = join_lines(warnings)?;
                let filled = wrap_fill(&text, 80, 14);
                hstrs.push(format!(
                    "   {} Warnings: {}{}",
                    c.light_red,
                    filled.trim_start_matches(is_space),
                    c.endc
                ));
            }
        }

        self.summary(host, &rcounts, nchanges, &rdurations, &pdurations, hstrs);
        Ok((hcolor, nchanges))
    }

    /// The full block of one state (without its warnings).
    fn format_full(
        &self,
        tcolor: &str,
        comps: &[&str],
        ret: &Map<String, Value>,
        ctext: &str,
        path: &[String],
        hstrs: &mut Vec<String>,
    ) -> Out<()> {
        let endc = self.c.endc;
        let part = |i: usize| comps.get(i).copied().ok_or(Fallback);
        let (fun_mod, id, name, fun) = (part(0)?, part(1)?, part(2)?, part(3)?);

        let comment = match ret.get("comment").ok_or(Fallback)? {
            Value::String(s) => s.clone(),
            other => {
                let text = py_str(other);
                self.edit(join(path, "comment"), Some(Value::String(text.clone())));
                text
            }
        };
        let mut comment = comment
            .trim_matches(is_space)
            .replace('\n', &format!("\n{}", " ".repeat(14)));
        match ret.get("data") {
            None => {}
            Some(Value::Array(items)) => {
                for item in items {
                    comment = format!("{comment} {}", py_str(item));
                }
            }
            Some(Value::Object(map)) => {
                for (k, v) in map {
                    comment = format!("{comment}\n\t\t{k}: {}", py_str(v));
                }
            }
            Some(other) => comment = format!("{comment} {}", py_str(other)),
        }

        if !ret.contains_key("start_time") {
            self.edit(join(path, "start_time"), Some(Value::from("")));
        }
        match ret.get("duration") {
            None => self.edit(join(path, "duration"), Some(Value::from(""))),
            Some(Value::String(s)) if s.is_empty() => {}
            Some(d) => self.edit(
                join(path, "duration"),
                Some(Value::String(format!("{} ms", py_str(d)))),
            ),
        }
        hstrs.push(format!("{tcolor}----------{endc}"));
        hstrs.push(format!("    {tcolor}      ID: {id}{endc}"));
        hstrs.push(format!("    {tcolor}Function: {fun_mod}.{fun}{endc}"));
        if id != name {
            hstrs.push(format!("    {tcolor}    Name: {name}{endc}"));
        }
        hstrs.push(format!(
            "    {tcolor}  Result: {}{endc}",
            py_str(ret.get("result").unwrap_or(&Value::Null))
        ));
        hstrs.push(format!("    {tcolor} Comment: {comment}{endc}"));
        if self.opts.state_output_profile
            && let Some(start) = ret.get("start_time")
        {
            let duration = match ret.get("duration") {
                None => String::new(),
                Some(Value::String(s)) if s.is_empty() => String::new(),
                Some(d) => format!("{} ms", py_str(d)),
            };
            hstrs.push(format!("    {tcolor} Started: {}{endc}", py_str(start)));
            hstrs.push(format!("    {tcolor}Duration: {duration}{endc}"));
        }
        hstrs.push(format!("{tcolor}     Changes:   {ctext}{endc}"));
        Ok(())
    }

    /// `_format_changes`: whether the state changed something, and the text
    /// after `Changes:`.
    fn format_changes(&self, changes: &Value, path: &[String]) -> Out<(bool, String)> {
        if !truthy(changes) {
            return Ok((false, String::new()));
        }
        let Value::Object(map) = changes else {
            return Ok((true, format!("Invalid Changes data: {}", py_str(changes))));
        };
        let ret = map.get("ret").filter(|r| !r.is_null());
        if let Some(ret) = ret
            && map.get("out").and_then(Value::as_str) == Some("highstate")
        {
            let Value::Object(hosts) = ret else {
                return Err(Fallback);
            };
            let mut ctext = String::new();
            let mut changed = false;
            let ret_path = join(path, "ret");
            let no_origins = HashMap::new();
            for (host, hostdata) in hosts {
                let host_path = join(&ret_path, host);
                let ctx = HostCtx {
                    path: &host_path,
                    origins: &no_origins,
                };
                let (s, c) = self.format_host(host, hostdata, &ctx, 1)?;
                ctext.push('\n');
                let lines: Vec<String> = splitlines(&s, false)
                    .into_iter()
                    .map(|l| format!("{}{l}", " ".repeat(14)))
                    .collect();
                ctext.push_str(&lines.join("\n"));
                changed = changed || c;
            }
            return Ok((changed, ctext));
        }
        let nested = super::nested::render_at(changes, self.color, 0, 14);
        Ok((true, format!("\n{}", rstrip(&nested))))
    }

    /// `_format_terse`: one line for a state.
    fn format_terse(&self, tcolor: &str, comps: &[&str], ret: &Map<String, Value>) -> Out<String> {
        let c = self.c;
        let result = ret.get("result").unwrap_or(&Value::Null);
        let mut label = "Clean";
        if ret.get("changes").is_some_and(truthy) {
            label = "Changed";
        }
        if *result == Value::Bool(false) {
            label = "Failed";
        } else if result.is_null() {
            label = "Differs";
        }
        let name = comps.get(2).copied().ok_or(Fallback)?;
        let fun_mod = comps[0];
        let fun = comps.last().copied().unwrap_or_default();
        let warnings = match ret.get("warnings") {
            Some(w) => Some(join_lines(w)?),
            None => None,
        };
        let profile = if self.opts.state_output_profile && ret.contains_key("start_time") {
            let start = py_str(&ret["start_time"]);
            let duration = py_str(ret.get("duration").ok_or(Fallback)?);
            Some((start, duration))
        } else {
            None
        };
        let mut msg = String::new();
        if self.opts.state_tabular {
            if let Some(w) = warnings {
                msg.push_str(&format!("{}Warnings:\n{w}{}\n", c.light_red, c.endc));
            }
            msg.push_str(tcolor);
            if let Some((start, duration)) = profile {
                msg.push_str(&format!("{start} [{duration:>7} ms] "));
            }
            msg.push_str(&format!(
                "{fun_mod:>10}.{fun:<10} {label:7}   Name: {name}{}",
                c.endc
            ));
        } else {
            if let Some(w) = warnings {
                msg.push_str(&format!("{}Warnings:\n{w}{}", c.light_red, c.endc));
            }
            msg.push_str(&format!(
                " {tcolor} Name: {name} - Function: {fun_mod}.{fun} - Result: {label}"
            ));
            if let Some((start, duration)) = profile {
                msg.push_str(&format!(" - Started: {start} - Duration: {duration} ms"));
            }
            msg.push_str(c.endc);
        }
        Ok(msg)
    }

    /// The summary lines after the states.
    fn summary(
        &self,
        host: &str,
        rcounts: &Counts,
        nchanges: u64,
        rdurations: &[f64],
        pdurations: &[f64],
        hstrs: &mut Vec<String>,
    ) {
        let c = self.c;
        let count_max_len = rcounts
            .0
            .iter()
            .map(|(_, n)| n.to_string().len())
            .max()
            .unwrap_or(0);
        // "Succeeded" is the longest label.
        let line_max_len = "Succeeded".len() + count_max_len + 2;
        let counts = |label: &str, count: &str| {
            let width = line_max_len.saturating_sub(label.chars().count() + 2);
            format!("{label}: {count:>width$}")
        };
        hstrs.push(format!(
            "{}\nSummary for {host}\n{}{}",
            c.cyan,
            "-".repeat(line_max_len),
            c.endc
        ));

        let not_run = rcounts.get(&CountKey::None);
        let mut changestats = Vec::new();
        if not_run > 0 {
            changestats.push(format!("{}unchanged={not_run}{}", c.light_yellow, c.endc));
        }
        if nchanges > 0 {
            changestats.push(format!("{}changed={nchanges}{}", c.green, c.endc));
        }
        let changestats = if changestats.is_empty() {
            String::new()
        } else {
            format!(" ({})", changestats.join(", "))
        };
        let succeeded = rcounts.get(&CountKey::True) + not_run;
        hstrs.push(format!(
            "{}{}{}{changestats}",
            c.green,
            counts("Succeeded", &succeeded.to_string()),
            c.endc
        ));
        let failed = rcounts.get(&CountKey::False);
        let fcolor = if failed > 0 { c.red } else { c.cyan };
        hstrs.push(format!(
            "{fcolor}{}{}",
            counts("Failed", &failed.to_string()),
            c.endc
        ));

        let warnings = rcounts.get(&CountKey::Warnings);
        let total = rcounts.sum() - warnings;
        if self.opts.state_output_pct && total > 0 {
            let success = round2(succeeded as f64 / total as f64 * 100.0);
            hstrs.push(format!(
                "{}{}{}",
                c.green,
                counts("Success %", &float_repr(success)),
                c.endc
            ));
            let failure = round2(failed as f64 / total as f64 * 100.0);
            hstrs.push(format!(
                "{fcolor}{}{}",
                counts("Failure %", &float_repr(failure)),
                c.endc
            ));
        }
        if warnings > 0 {
            hstrs.push(format!(
                "{}{}{}",
                c.light_red,
                counts("Warnings", &warnings.to_string()),
                c.endc
            ));
        }
        let width = line_max_len.saturating_sub(7);
        hstrs.push(format!(
            "{}{}\nTotal states run: {total:>width$}{}",
            c.cyan,
            "-".repeat(line_max_len),
            c.endc
        ));
        if self.opts.state_output_profile {
            let mut sum = rdurations.iter().fold(0.0, |acc, d| acc + d);
            if let Some(max) = pdurations.iter().copied().reduce(py_max) {
                sum += max;
            }
            let mut unit = "ms";
            if sum > 999.0 {
                sum /= 1000.0;
                unit = "s";
            }
            let width = line_max_len.saturating_sub(5);
            hstrs.push(format!(
                "{}Total run time: {:>width$} {unit}{}",
                c.cyan,
                fixed3(sum),
                c.endc
            ));
        }
    }
}

/// Python's `max(a, b)` of floats: the first unless the second is greater.
fn py_max(a: f64, b: f64) -> f64 {
    if b > a { b } else { a }
}

/// Python's `f"{x:.3f}"`.
fn fixed3(x: f64) -> String {
    if x.is_nan() {
        "nan".to_owned()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_owned()
    } else {
        format!("{x:.3}")
    }
}

/// Python's `round(x, 2)` (correctly rounded through the decimal text).
fn round2(x: f64) -> f64 {
    format!("{x:.2}").parse().unwrap_or(x)
}

/// Python's `round(x, 3)`.
fn round3(x: f64) -> f64 {
    format!("{x:.3}").parse().unwrap_or(x)
}

/// `"\n".join(warnings)`: a list of strings, or the characters of a string.
fn join_lines(v: &Value) -> Out<String> {
    match v {
        Value::Array(items) => {
            let mut parts = Vec::with_capacity(items.len());
            for item in items {
                parts.push(item.as_str().ok_or(Fallback)?);
            }
            Ok(parts.join("\n"))
        }
        Value::String(s) => Ok(s.chars().map(String::from).collect::<Vec<_>>().join("\n")),
        _ => Err(Fallback),
    }
}

/// Python's `needle in haystack` for the filter lists: a string is split on
/// commas first; a list holds `needle` as an element, a dict as a key.
fn contains(haystack: &Value, needle: &str) -> Out<bool> {
    match haystack {
        Value::String(s) => Ok(s.split(',').any(|p| p == needle)),
        Value::Array(items) => Ok(items.iter().any(|i| i.as_str() == Some(needle))),
        Value::Object(map) => Ok(map.contains_key(needle)),
        _ => Err(Fallback),
    }
}

/// The count in `ID (count)` of a compressed state's tag.
fn compressed_count_of(tname: &str) -> u64 {
    let parts: Vec<&str> = tname.split("_|-").collect();
    let [_, id, _, _] = parts.as_slice() else {
        return 1;
    };
    let Some(inner) = id.strip_suffix(')') else {
        return 1;
    };
    let digits: String = inner
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if digits.is_empty() || !inner[..inner.len() - digits.len()].ends_with('(') {
        return 1;
    }
    digits.parse().unwrap_or(1)
}

/// `float(ret.get("duration", 0))`, with `"<n> ms"` read too: None when Salt
/// only logs that it cannot read it, [`Fallback`] where `float()` raises TypeError.
fn duration_of(ret: &Map<String, Value>) -> Out<Option<f64>> {
    match ret.get("duration") {
        None => Ok(Some(0.0)),
        Some(Value::Bool(b)) => Ok(Some(f64::from(u8::from(*b)))),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(Value::String(s)) => Ok(crate::python::float_of(s).or_else(|| {
            let head = s.split(" ms").next().unwrap_or_default();
            crate::python::float_of(head)
        })),
        Some(_) => Err(Fallback),
    }
}

/// Python's `sorted(states, key=lambda k: states[k].get("__run_num__", 0))`:
/// stable; numbers compare with numbers and strings with strings, any other
/// mix raises TypeError in Python.
fn sort_by_run_num(states: &mut [(&String, &Map<String, Value>)]) -> Out<()> {
    if states.len() < 2 {
        return Ok(());
    }
    let zero = Value::from(0);
    let keys: Vec<&Value> = states
        .iter()
        .map(|(_, info)| info.get("__run_num__").unwrap_or(&zero))
        .collect();
    let numeric = keys.iter().all(|k| k.is_number() || k.is_boolean());
    let textual = keys.iter().all(|k| k.is_string());
    if numeric {
        let num = |v: &Value| match v {
            Value::Bool(b) => f64::from(u8::from(*b)),
            other => other.as_f64().unwrap_or(0.0),
        };
        states.sort_by(|a, b| {
            let ka = num(a.1.get("__run_num__").unwrap_or(&zero));
            let kb = num(b.1.get("__run_num__").unwrap_or(&zero));
            ka.partial_cmp(&kb).unwrap_or(std::cmp::Ordering::Equal)
        });
        Ok(())
    } else if textual {
        states.sort_by(|a, b| {
            let ka = a.1.get("__run_num__").and_then(Value::as_str);
            let kb = b.1.get("__run_num__").and_then(Value::as_str);
            ka.cmp(&kb)
        });
        Ok(())
    } else {
        Err(Fallback)
    }
}

/// The compressed hosts, and for each compressed entry (host, tag) the tag of
/// the state whose dict Salt reuses for it.
type Compressed = (Vec<(String, Value)>, HashMap<(String, String), String>);

/// `_compress_ids`: merges the states of one ID, function, SLS and result into
/// one entry named `ID (count)`. None where Salt gives up and keeps the data;
/// either way, the edits its merges made to the input (paths from the hosts):
/// Salt merges into the first state's own dict.
fn compress_ids(hosts: &[(&String, &Value)]) -> (Option<Compressed>, Vec<Edit>) {
    let mut out: Vec<(String, Map<String, Value>)> = Vec::with_capacity(hosts.len());
    let mut origins = HashMap::new();
    let done = compress_into(hosts, &mut out, &mut origins);
    let mut edits = Vec::new();
    for (host, states) in &out {
        for (key, info) in states {
            let Some(origin) = origins.get(&(host.clone(), key.clone())) else {
                continue;
            };
            for field in ["__run_num__", "duration", "start_time", "changes"] {
                if let Some(v) = info.get(field) {
                    let path = vec![host.clone(), origin.clone(), field.to_owned()];
                    edits.push((path, Some(v.clone())));
                }
            }
        }
    }
    let compressed = done.map(|()| {
        let hosts = out
            .into_iter()
            .map(|(h, states)| (h, Value::Object(states)))
            .collect();
        (hosts, origins)
    });
    (compressed, edits)
}

/// The group of a state for `_compress_ids`: function module, ID, SLS, result.
fn compress_group(tname: &str, info: &Value) -> Option<String> {
    let info = info.as_object()?;
    let fun_mod = tname.split("_|-").next().unwrap_or_default();
    Some(format!(
        "{fun_mod}_{}_{}_{}",
        py_str(info.get("__id__")?),
        py_str(info.get("__sls__")?),
        py_str(info.get("result")?)
    ))
}

/// The body of [`compress_ids`]: fills `out` host by host, and `origins` with
/// (host, compressed tag) -> the tag of the first state merged into it; None
/// where Salt gives up (`out` then holds what was merged so far).
fn compress_into(
    hosts: &[(&String, &Value)],
    out: &mut Vec<(String, Map<String, Value>)>,
    origins: &mut HashMap<(String, String), String>,
) -> Option<()> {
    for &(host, hostdata) in hosts {
        let states = hostdata.as_object()?;
        let mut counts: HashMap<String, usize> = HashMap::new();
        for (tname, info) in states {
            *counts.entry(compress_group(tname, info)?).or_default() += 1;
        }
        out.push((host.clone(), Map::new()));
        let compressed = &mut out.last_mut()?.1;
        for (tname, info) in states {
            let group = compress_group(tname, info)?;
            let count = counts.get(&group).copied().unwrap_or(1);
            if count == 1 {
                compressed.insert(tname.clone(), info.clone());
                continue;
            }
            let obj = info.as_object()?;
            let id = py_str(obj.get("__id__")?);
            let mut comps: Vec<String> = tname.split("_|-").map(str::to_owned).collect();
            if comps.len() < 3 {
                return None;
            }
            comps[2] = format!(
                "state_compressed_{}_{id}_{}",
                py_str(obj.get("__sls__")?),
                py_str(obj.get("result")?)
            );
            comps[1] = format!("{id} ({count})");
            let key = comps.join("_|-");
            match compressed.get_mut(&key) {
                Some(stored) => merge_compressed(stored.as_object_mut()?, obj)?,
                None => {
                    compressed.insert(key.clone(), info.clone());
                    origins.insert((host.clone(), key), tname.clone());
                }
            }
        }
    }
    Some(())
}

/// Folds one more state into a compressed entry, in Salt's order: the lowest
/// run number, the summed duration, the earliest start, and the changes keyed
/// by name. None where Salt raises (what was set before stays set).
fn merge_compressed(stored: &mut Map<String, Value>, info: &Map<String, Value>) -> Option<()> {
    let run_a = info.get("__run_num__")?;
    let run_b = stored.get("__run_num__")?;
    if run_a.as_f64()? < run_b.as_f64()? {
        stored.insert("__run_num__".into(), run_a.clone());
    }
    let da = info.get("duration")?;
    let db = stored.get("duration")?;
    let sum = match (da.as_i64(), db.as_i64()) {
        (Some(a), Some(b)) => Value::from(a.checked_add(b)?),
        _ => {
            serde_json::Number::from_f64(round3(da.as_f64()? + db.as_f64()?)).map(Value::Number)?
        }
    };
    stored.insert("duration".into(), sum);
    let sa = info.get("start_time")?.as_str()?;
    let sb = stored.get("start_time")?.as_str()?;
    if sa < sb {
        stored.insert("start_time".into(), Value::from(sa));
    }
    let Some(ic) = info.get("changes").filter(|v| truthy(v)) else {
        return Some(());
    };
    let name = py_str(info.get("name")?);
    if stored.get("changes").is_some_and(truthy) {
        let stored_name = py_str(stored.get("name")?);
        let sc = stored.get_mut("changes")?.as_object_mut()?;
        if !sc.get("compressed changes").is_some_and(truthy) {
            let first = std::mem::take(sc);
            let mut inner = Map::new();
            inner.insert(stored_name, Value::Object(first));
            sc.insert("compressed changes".into(), Value::Object(inner));
        }
        sc.get_mut("compressed changes")?
            .as_object_mut()?
            .insert(name, ic.clone());
    } else {
        let mut inner = Map::new();
        inner.insert(name, ic.clone());
        let mut m = Map::new();
        m.insert("compressed changes".into(), Value::Object(inner));
        stored.insert("changes".into(), Value::Object(m));
    }
    Some(())
}

/// `textwrap.TextWrapper(width, initial_indent=" " * indent,
/// subsequent_indent=" " * indent).fill(text)` with Python's other defaults:
/// tabs expanded, whitespace made spaces, words split after hyphens, long
/// words broken.
fn wrap_fill(text: &str, width: usize, indent: usize) -> String {
    let text = expand_tabs(text).replace(['\n', '\x0b', '\x0c', '\r'], " ");
    let mut chunks: Vec<Vec<char>> = split_chunks(&text)
        .into_iter()
        .map(|c| c.chars().collect())
        .collect();
    chunks.reverse();
    let pad = " ".repeat(indent);
    let room = width.saturating_sub(indent);
    let is_blank = |c: &[char]| c.iter().all(|ch| is_space(*ch));
    let mut lines: Vec<String> = Vec::new();
    while !chunks.is_empty() {
        let mut cur: Vec<Vec<char>> = Vec::new();
        let mut cur_len = 0;
        if !lines.is_empty() && chunks.last().is_some_and(|c| is_blank(c)) {
            chunks.pop();
        }
        while let Some(last) = chunks.last() {
            if cur_len + last.len() <= room {
                cur_len += last.len();
                cur.extend(chunks.pop());
            } else {
                break;
            }
        }
        if chunks.last().is_some_and(|c| c.len() > room) {
            let space_left = if room < 1 { 1 } else { room - cur_len };
            if let Some(chunk) = chunks.last_mut() {
                let mut end = space_left;
                if chunk.len() > space_left
                    && let Some(h) = chunk[..space_left].iter().rposition(|c| *c == '-')
                    && h > 0
                    && chunk[..h].iter().any(|c| *c != '-')
                {
                    end = h + 1;
                }
                let rest = chunk.split_off(end);
                cur.push(std::mem::replace(chunk, rest));
            }
        }
        if cur.last().is_some_and(|c| is_blank(c)) {
            cur.pop();
        }
        if !cur.is_empty() {
            let line: String = cur.into_iter().flatten().collect();
            lines.push(format!("{pad}{line}"));
        }
    }
    lines.join("\n")
}

/// Python's `str.expandtabs()` (tab stops every 8 columns, reset by line breaks).
fn expand_tabs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut col = 0;
    for ch in text.chars() {
        match ch {
            '\t' => {
                let n = 8 - col % 8;
                out.extend(std::iter::repeat_n(' ', n));
                col += n;
            }
            '\n' | '\r' => {
                out.push(ch);
                col = 0;
            }
            _ => {
                out.push(ch);
                col += 1;
            }
        }
    }
    out
}

/// TextWrapper's `wordsep_re` split: runs of spaces, words, and the pieces of
/// hyphenated words (`well-` `known`); empty pieces dropped.
fn split_chunks(text: &str) -> Vec<String> {
    use std::sync::OnceLock;
    static WORDSEP: OnceLock<fancy_regex::Regex> = OnceLock::new();
    let re = WORDSEP.get_or_init(|| {
        let wp = r#"[\w!"'&.,?]"#;
        let lt = r"[^\d\W]";
        let ws = r"[\t\n\x0b\x0c\r ]";
        let nws = r"[^\t\n\x0b\x0c\r ]";
        let pattern = format!(
            r"({ws}+|(?<={wp})-{{2,}}(?=\w)|{nws}+?(?:-(?:(?<={lt}{{2}}-)|(?<={lt}-{lt}-))(?={lt}-?{lt})|(?={ws}|\z)|(?<={wp})(?=-{{2,}}\w)))"
        );
        fancy_regex::Regex::new(&pattern).unwrap_or_else(|e| panic!("textwrap pattern: {e}"))
    });
    let mut out = Vec::new();
    let mut last = 0;
    let mut pos = 0;
    while pos <= text.len() {
        let Ok(Some(m)) = re.find_from_pos(text, pos) else {
            break;
        };
        if m.start() > last {
            out.push(text[last..m.start()].to_owned());
        }
        if m.end() > m.start() {
            out.push(m.as_str().to_owned());
            last = m.end();
            pos = m.end();
        } else {
            last = m.start();
            pos = m.end() + text[m.end()..].chars().next().map_or(1, char::len_utf8);
        }
    }
    if last < text.len() {
        out.push(text[last..].to_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_verbose_reads_like_salt() {
        assert!(HighstateOptions::parse_state_verbose("True"));
        assert!(!HighstateOptions::parse_state_verbose("false"));
        assert!(!HighstateOptions::parse_state_verbose("False"));
        assert!(HighstateOptions::parse_state_verbose("no"));
        assert!(!HighstateOptions::parse_state_verbose(""));
    }

    #[test]
    fn compressed_counts() {
        assert_eq!(
            compressed_count_of("cmd_|-mix (4)_|-state_compressed_x_|-run"),
            4
        );
        assert_eq!(compressed_count_of("cmd_|-mix_|-x_|-run"), 1);
        assert_eq!(compressed_count_of("cmd_|-mix ()_|-x_|-run"), 1);
    }

    #[test]
    fn durations_read_like_python_float() {
        assert_eq!(crate::python::float_of(" 1.5 "), Some(1.5));
        assert_eq!(crate::python::float_of("abc"), None);
        assert_eq!(crate::python::float_of("3.5 ms"), None);
        assert_eq!(crate::python::float_of("1e3"), Some(1000.0));
        assert_eq!(crate::python::float_of("1_000.5"), Some(1000.5));
        assert_eq!(crate::python::float_of("1__0"), None);
        assert_eq!(crate::python::float_of("_1"), None);
        assert_eq!(crate::python::float_of("Infinity"), Some(f64::INFINITY));
        assert_eq!(crate::python::float_of(""), None);
    }

    /// Odd shapes Salt would crash or fall back on must never panic here.
    #[test]
    fn odd_shapes_do_not_panic() {
        use serde_json::json;
        let odd = [
            json!({"h": {"no-separators": {"result": true, "changes": {}, "comment": "c"}}}),
            json!({"h": {"a_|-b": {"result": [1], "changes": {}, "__run_num__": 0}}}),
            json!({"h": {"a_|-b_|-c": {"result": null, "changes": 5, "comment": {},
                                        "__run_num__": "x", "warnings": "abc"}}}),
            json!({"h": {"a_|-b_|-c_|-d": {"result": false, "changes": {"ret": 1, "out": "highstate"},
                                            "comment": "", "__run_num__": 1e300,
                                            "duration": "1_0 ms", "start_time": 5}}}),
            json!({"h": {"t_|-i_|-n_|-f": {"result": true, "changes": {}, "comment": "",
                                           "__run_num__": 0, "name": "state.sls",
                                           "warnings": ["-".repeat(200), "a-".repeat(100)]}}}),
            json!({"h": {"x_|-i (2)_|-state_compressed_x_|-f": {"result": true, "changes": {"a": 1},
                    "comment": "", "__run_num__": 0, "__id__": "i", "__sls__": 1,
                    "duration": u64::MAX}}}),
            json!({"return": {"data": {"m": {"jid": 1, "fun": 2, "return": 3}}}}),
            json!({"a_master": {}, "retcode": 2}),
            json!({"h": 1.5, "g": null, "f": [[], {}], "e": "", "d": -7}),
        ];
        for data in &odd {
            for mode in ["full", "terse", "mixed_id", "changes", "filter", ""] {
                for flags in 0..8u8 {
                    let opts = HighstateOptions {
                        state_output: mode.to_owned(),
                        state_verbose: flags & 1 == 0,
                        state_tabular: flags & 2 != 0,
                        state_compress_ids: flags & 4 != 0,
                        state_output_pct: true,
                        filter_exclude: json!("True,"),
                        filter_terse: json!(null),
                        ..HighstateOptions::default()
                    };
                    let _ = render(data, flags & 1 != 0, &opts);
                }
            }
        }
    }

    #[test]
    fn textwrap_chunks() {
        assert_eq!(
            split_chunks("well-known  words"),
            vec!["well-", "known", "  ", "words"]
        );
    }
}
