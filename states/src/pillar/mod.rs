//! Pillar as Salt compiles it (issue #33): the top file, the SLS files through the same
//! renderer pipeline as states, `include:`, merging, and the external pillar sources in
//! [`ext`]. Shared by the master (per minion) and the masterless minion (`file_client: local`).
//!
//! The flow is Salt 3007.8's `salt/pillar/__init__.py` (`Pillar.compile_pillar`):
//! - [`top`]: every environment's `top.sls` rendered and merged, then matched.
//! - `render_pillar`: per environment, each matched SLS (globs expanded against the
//!   environment's SLS list) rendered, its `include:` (with `defaults:` and `key:`) merged
//!   under it, and the result merged into the pillar with [`merge`].
//! - `ext_pillar` sources, after the SLS pillar or before it (`ext_pillar_first`).
//! - Errors never stop the other files: each goes into `_errors` in Salt's words.
//!
//! Jinja's `pillar` in every file of one compilation is one shared mutable map (Salt's
//! `__pillar__`, the `pillar` option, or the external pillar with `ext_pillar_first`):
//! what one file's Jinja changes, the files rendered after it see.

pub mod ext;
pub mod merge;
pub mod top;
pub mod tree;

use std::path::PathBuf;
use std::sync::Arc;

use saltq_exec::CallContext;
use saltq_semantics::python;
use saltq_semantics::target::{MinionFacts, Nodegroups};
use serde_json::{Map, Value};

use crate::render::{RenderContext, SharedPillar, render_sls_shared};
pub use merge::Strategy;
pub use tree::Tree;

/// Largest pillar file read by default (saltq's bound; Salt has none).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// Jinja instructions one pillar file may run by default (saltq's bound: a loop that never
/// ends is an error naming the file).
pub const DEFAULT_JINJA_FUEL: u64 = 50_000_000;
/// Deepest `include:` chain followed.
const MAX_INCLUDE_DEPTH: usize = 64;

/// The options pillar compilation reads, by Salt's names, checked once.
#[derive(Debug, Clone, PartialEq)]
pub struct PillarOptions {
    /// `pillar_roots`.
    pub tree: Tree,
    /// `pillar_source_merging_strategy` (default `smart`).
    pub strategy: Strategy,
    /// `renderer` (default `jinja|yaml`): files without a shebang, and `smart` merging.
    pub renderer: String,
    /// `pillar_merge_lists`.
    pub merge_lists: bool,
    /// `pillar_includes_override_sls`.
    pub includes_override_sls: bool,
    /// `pillar_safe_render_error` (default true): `_errors` say only "see master log".
    pub safe_render_error: bool,
    /// `pillarenv`: compile only this environment.
    pub pillarenv: Option<String>,
    /// `pillarenv_from_saltenv`: the request's saltenv is the pillarenv.
    pub pillarenv_from_saltenv: bool,
    /// `ext_pillar_first`.
    pub ext_pillar_first: bool,
    /// `nodegroups`, for `match: nodegroup` and `N@`.
    pub nodegroups: Nodegroups,
    /// `pillar_max_file_bytes` (saltq's).
    pub max_file_bytes: u64,
    /// `pillar_jinja_fuel` (saltq's).
    pub jinja_fuel: u64,
}

impl Default for PillarOptions {
    fn default() -> Self {
        Self {
            tree: Tree::default(),
            strategy: Strategy::Smart,
            renderer: "jinja|yaml".into(),
            merge_lists: false,
            includes_override_sls: false,
            safe_render_error: true,
            pillarenv: None,
            pillarenv_from_saltenv: false,
            ext_pillar_first: false,
            nodegroups: Nodegroups::new(),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            jinja_fuel: DEFAULT_JINJA_FUEL,
        }
    }
}

impl PillarOptions {
    /// Reads the options from a configuration (`__opts__`); an error names the key and what
    /// was expected.
    pub fn from_opts(opts: &Value) -> Result<Self, String> {
        let mut o = PillarOptions::default();
        let get = |k: &str| opts.get(k).filter(|v| !v.is_null());
        let boolean = |k: &str, default: bool| match get(k) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(format!("{k}: expected true or false, got {other}")),
        };
        let string = |k: &str| match get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("{k}: expected a string, got {other}")),
        };
        let number = |k: &str, default: u64| match get(k) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{k}: expected a positive integer, got {v}")),
        };
        if let Some(roots) = get("pillar_roots") {
            let Value::Object(m) = roots else {
                return Err(format!(
                    "pillar_roots: expected a map of environment to directories, got {roots}"
                ));
            };
            for (env, dirs) in m {
                let dirs = match dirs {
                    Value::Array(a) => a
                        .iter()
                        .map(|d| d.as_str().map(PathBuf::from))
                        .collect::<Option<Vec<_>>>(),
                    Value::String(s) => Some(vec![PathBuf::from(s)]),
                    _ => None,
                }
                .ok_or_else(|| format!("pillar_roots: {env}: expected a list of directories"))?;
                o.tree.envs.push((env.clone(), dirs));
            }
        }
        if let Some(s) = string("pillar_source_merging_strategy")? {
            o.strategy = Strategy::parse(&s).map_err(|s| {
                format!(
                    "pillar_source_merging_strategy: unknown strategy {s:?} (expected smart, \
                     recurse, aggregate, overwrite, list or none)"
                )
            })?;
        }
        if let Some(r) = string("renderer")? {
            o.renderer = r;
        }
        o.merge_lists = boolean("pillar_merge_lists", false)?;
        o.includes_override_sls = boolean("pillar_includes_override_sls", false)?;
        o.safe_render_error = boolean("pillar_safe_render_error", true)?;
        o.pillarenv = string("pillarenv")?;
        o.pillarenv_from_saltenv = boolean("pillarenv_from_saltenv", false)?;
        o.ext_pillar_first = boolean("ext_pillar_first", false)?;
        if let Some(s) = string("top_file_merging_strategy")?
            && !["merge", "same", "merge_all"].contains(&s.as_str())
        {
            return Err(format!(
                "top_file_merging_strategy: unknown strategy {s:?} (expected merge, same or \
                 merge_all)"
            ));
        }
        if let Some(ng) = get("nodegroups") {
            o.nodegroups =
                serde_json::from_value(ng.clone()).map_err(|e| format!("nodegroups: {e}"))?;
        }
        o.max_file_bytes = number("pillar_max_file_bytes", DEFAULT_MAX_FILE_BYTES)?;
        o.jinja_fuel = number("pillar_jinja_fuel", DEFAULT_JINJA_FUEL)?;
        Ok(o)
    }
}

/// How an `_errors` entry of a failed refresh starts: Salt's words in its minion log
/// (`Pillar data could not be refreshed. One or more masters may be down!`).
pub const REFRESH_FAILED: &str = "Pillar data could not be refreshed";

/// The pillar a minion keeps when a refresh failed (`why`): the one it had, so its states
/// and targeting go on as Salt's minion does, but never silently: its `_errors` says the
/// refresh failed and why (an earlier such entry is replaced, not repeated), so
/// `pillar.items` shows it and a state run refuses to run on it, as on any pillar error,
/// until a refresh succeeds. Anything but a mapping is kept as an empty one.
pub fn kept_after_failed_refresh(pillar: Value, why: &str) -> Value {
    let mut m = match pillar {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let entry = format!(
        "{REFRESH_FAILED}: {why}; this is the pillar from before the refresh. One or more \
         masters may be down!"
    );
    let mut errors: Vec<Value> = match m.shift_remove("_errors") {
        Some(Value::Array(a)) => a,
        Some(other) => vec![other],
        None => Vec::new(),
    };
    errors.retain(|e| !e.as_str().is_some_and(|e| e.starts_with(REFRESH_FAILED)));
    errors.push(Value::String(entry));
    m.insert("_errors".into(), Value::Array(errors));
    Value::Object(m)
}

/// One minion's compilation request.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The minion id.
    pub minion_id: String,
    /// Its grains.
    pub grains: Value,
    /// The saltenv asked for (`pillarenv_from_saltenv`, and `none` merging).
    pub saltenv: Option<String>,
    /// The pillarenv asked for; else the option's.
    pub pillarenv: Option<String>,
    /// `pillar=` given on the command line: merged last, as Salt's `pillar_override`.
    pub pillar_override: Map<String, Value>,
}

/// What a compilation needs besides the request: the options, the configuration handed to
/// Jinja as `opts`, the call context `salt[...]` and `salt://` imports run in, and the
/// external pillar sources in `ext_pillar` order.
pub struct Compiler {
    /// The options.
    pub options: PillarOptions,
    /// `opts` in Jinja (and its `pillar` key seeds Jinja's `pillar`).
    pub opts: Value,
    /// Where `salt[...]` runs and `salt://` imports come from (the pillar roots).
    pub ctx: CallContext,
    /// The configured external sources.
    pub ext: Vec<Arc<dyn ext::ExtPillar>>,
}

/// The state of one compilation.
struct Run<'a> {
    c: &'a Compiler,
    req: &'a Request,
    shared: SharedPillar,
    top: top::Top,
    avail: Vec<(String, Option<Vec<String>>)>,
}

impl Compiler {
    /// The merged top file as Salt's `pillar.show_top` runner shows it (`get_top`):
    /// environment → target → its `match:` entry (if any) then its SLS names, every target
    /// whether it matches the minion or not; the errors instead when rendering a top failed.
    pub fn show_top(&self, req: &Request) -> Result<Map<String, Value>, Vec<String>> {
        let seed = Value::Object(Map::new());
        let mut run = Run {
            c: self,
            req,
            shared: SharedPillar::new(&seed, self.options.jinja_fuel),
            top: top::Top::default(),
            avail: Vec::new(),
        };
        let errors = run.read_top(req.pillarenv.as_deref());
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut out = Map::new();
        for (env, targets) in &run.top.envs {
            let mut env_map = Map::new();
            for t in targets {
                let mut list: Vec<Value> = Vec::new();
                if let Some(m) = &t.matcher {
                    list.push(serde_json::json!({ "match": m }));
                }
                list.extend(t.sls.iter().cloned().map(Value::String));
                env_map.insert(t.tgt.clone(), Value::Array(list));
            }
            out.insert(env.clone(), Value::Object(env_map));
        }
        Ok(out)
    }

    /// The pillar of one minion, with `_errors` when anything failed (Salt's
    /// `compile_pillar`).
    pub fn compile(&self, req: &Request) -> Map<String, Value> {
        let o = &self.options;
        let pillarenv = req.pillarenv.clone().or_else(|| {
            if o.pillarenv_from_saltenv {
                req.saltenv.clone()
            } else {
                o.pillarenv.clone()
            }
        });
        let seed = match self.opts.get("pillar") {
            Some(Value::Object(m)) => Value::Object(m.clone()),
            _ => Value::Object(Map::new()),
        };
        let mut run = Run {
            c: self,
            req,
            shared: SharedPillar::new(&seed, o.jinja_fuel),
            top: top::Top::default(),
            avail: Vec::new(),
        };
        let top_errors = run.read_top(pillarenv.as_deref());
        let facts_pillar = seed.clone();
        let facts = MinionFacts {
            id: &req.minion_id,
            grains: Some(&req.grains),
            pillar: Some(&facts_pillar),
        };
        let matches = top::top_matches(&run.top, pillarenv.as_deref(), &facts, &o.nodegroups);
        let (mut pillar, mut errors) = if o.ext_pillar_first {
            let (ext, mut errors) = run.ext_pillar(req.pillar_override.clone());
            run.shared = SharedPillar::new(&Value::Object(ext.clone()), o.jinja_fuel);
            let rendered = run.render_pillar(&matches, &mut errors);
            (run.merge(ext, rendered), errors)
        } else {
            let mut errors = Vec::new();
            let rendered = run.render_pillar(&matches, &mut errors);
            let (p, ext_errors) = run.ext_pillar(rendered);
            errors.extend(ext_errors);
            (p, errors)
        };
        errors.extend(top_errors);
        if !errors.is_empty() {
            for e in &errors {
                tracing::error!(minion = %req.minion_id, "Pillar render error: {e}");
            }
            pillar.insert(
                "_errors".into(),
                Value::Array(errors.into_iter().map(Value::String).collect()),
            );
        }
        if !req.pillar_override.is_empty() {
            pillar = run.merge(pillar, req.pillar_override.clone());
        }
        pillar
    }
}

impl Run<'_> {
    fn merge(&self, a: Map<String, Value>, b: Map<String, Value>) -> Map<String, Value> {
        let o = &self.c.options;
        merge::merge(a, b, o.strategy, &o.renderer, o.merge_lists)
    }

    fn avail(&mut self, env: &str) -> Option<Vec<String>> {
        if let Some((_, a)) = self.avail.iter().find(|(e, _)| e == env) {
            return a.clone();
        }
        let a = self.c.options.tree.avail(env);
        self.avail.push((env.to_owned(), a.clone()));
        a
    }

    /// Renders one file of the tree into data.
    fn render_file(
        &self,
        found: &tree::Found,
        env: &str,
        sls: &str,
        defaults: &Map<String, Value>,
    ) -> Result<Value, String> {
        let o = &self.c.options;
        let text = tree::read_bounded(&found.path, o.max_file_bytes)?;
        let mut opts = self.c.opts.clone();
        if let Value::Object(m) = &mut opts {
            m.entry("renderer")
                .or_insert_with(|| o.renderer.clone().into());
        }
        let rc = RenderContext {
            ctx: self.c.ctx.clone(),
            grains: self.req.grains.clone(),
            pillar: Value::Object(Map::new()),
            opts,
            saltenv: env.to_owned(),
            sls: sls.to_owned(),
            source: found.source.clone(),
            extra: defaults.clone(),
        };
        render_sls_shared(&text, &rc, &self.shared).map_err(|e| match e.line {
            Some(line) if !e.message.contains(&found.source) => {
                format!("{} (in {}, line {line})", e.message, found.path.display())
            }
            _ => format!("{} (in {})", e.message, found.path.display()),
        })
    }

    /// Salt's `get_tops`: each environment's top file (only `pillarenv`'s when set; only
    /// the saltenv's with `none` merging), and the top files they include.
    /// Renders and merges the top files into `self.top`; the errors met on the way.
    fn read_top(&mut self, pillarenv: Option<&str>) -> Vec<String> {
        let (tops, mut errors) = self.get_tops(pillarenv);
        match top::merge_tops(&tops) {
            Ok(t) => self.top = t,
            Err(e) => errors.push(e),
        }
        errors
    }

    fn get_tops(&mut self, pillarenv: Option<&str>) -> (Vec<Value>, Vec<String>) {
        let o = &self.c.options;
        let mut envs = Vec::new();
        match pillarenv {
            Some(p) if o.tree.roots(p).is_some() => envs.push(p.to_owned()),
            Some(_) => {}
            None => {
                envs = o.tree.env_names();
                if o.strategy == Strategy::None {
                    let only = self.req.saltenv.clone().unwrap_or_else(|| "base".into());
                    envs.retain(|e| *e == only);
                }
            }
        }
        let mut tops = Vec::new();
        let mut errors = Vec::new();
        let empty = Map::new();
        for env in &envs {
            let Some(found) = o.tree.file("top.sls", env) else {
                continue;
            };
            match self.render_file(&found, env, "", &empty) {
                Ok(top) => {
                    let includes = match &top {
                        Value::Object(m) => m.get("include").cloned(),
                        _ => None,
                    };
                    tops.push(top);
                    for sls in includes
                        .iter()
                        .flat_map(|v| v.as_array().into_iter().flatten())
                    {
                        let sls = python::str(sls);
                        let rendered = o
                            .tree
                            .find(&sls, env)
                            .ok_or_else(|| format!("no SLS '{sls}' in environment '{env}'"))
                            .and_then(|f| self.render_file(&f, env, "", &empty));
                        match rendered {
                            Ok(t) => tops.push(t),
                            Err(e) => errors.push(format!(
                                "Rendering Top file {sls} failed, render error:\n{e}"
                            )),
                        }
                    }
                }
                Err(e) => {
                    // Salt stops at the first top file that fails.
                    errors.push(format!(
                        "Rendering Primary Top file failed, render error:\n{e}"
                    ));
                    break;
                }
            }
        }
        (tops, errors)
    }

    /// Salt's `render_pillar`: the matched SLS of each environment rendered and merged.
    fn render_pillar(
        &mut self,
        matches: &[(String, Vec<String>)],
        errors: &mut Vec<String>,
    ) -> Map<String, Value> {
        let mut pillar = self.req.pillar_override.clone();
        for (env, names) in matches {
            let mut files = Vec::new();
            let avail = self.avail(env);
            for name in names {
                let found: Vec<String> = match &avail {
                    Some(a) => a
                        .iter()
                        .filter(|s| python::fnmatch(s, name))
                        .cloned()
                        .collect(),
                    None => {
                        errors.push(format!(
                            "No matching pillar environment for environment '{env}' found"
                        ));
                        Vec::new()
                    }
                };
                if found.is_empty() {
                    files.push(name.clone());
                } else {
                    files.extend(found);
                }
            }
            let mut mods = Mods::default();
            for sls in files {
                let (state, errs) = self.render_pstate(&sls, env, &mut mods, &Map::new(), 0);
                errors.extend(errs);
                if let Some(Value::Object(state)) = state {
                    pillar = self.merge(pillar, state);
                }
            }
        }
        pillar
    }
}

/// What one environment's SLS rendered to so far (Salt's `mods`): an include of an SLS
/// already rendered reuses its data, which is also how include cycles end.
#[derive(Default)]
struct Mods(Vec<(String, Option<Value>)>);

impl Mods {
    fn get(&self, sls: &str) -> Option<&Option<Value>> {
        self.0.iter().find(|(s, _)| s == sls).map(|(_, v)| v)
    }

    fn set(&mut self, sls: &str, v: Option<Value>) {
        match self.0.iter_mut().find(|(s, _)| s == sls) {
            Some(slot) => slot.1 = v,
            None => self.0.push((sls.to_owned(), v)),
        }
    }
}

mod pstate;

#[cfg(test)]
mod tests;
