//! One pillar SLS with its `include:` (Salt's `Pillar.render_pstate`), and the external
//! sources (Salt's `Pillar.ext_pillar`).

use saltq_semantics::python::{self, truthy};
use serde_json::{Map, Value};

use super::{MAX_INCLUDE_DEPTH, Mods, Run, ext};

impl Run<'_> {
    /// Renders `sls` of `env` and the SLS it includes; `mods` remembers what was rendered.
    /// Returns its data (`None` when it failed or is missing) and the errors, in Salt's
    /// words.
    pub(super) fn render_pstate(
        &mut self,
        sls: &str,
        env: &str,
        mods: &mut Mods,
        defaults: &Map<String, Value>,
        depth: usize,
    ) -> (Option<Value>, Vec<String>) {
        let o = &self.c.options;
        let mut errors = Vec::new();
        let Some(found) = o.tree.find(sls, env) else {
            if self.top.ignored(env, sls) {
                return (None, errors);
            }
            if o.tree.roots(env).is_some_and(|r| !r.is_empty()) {
                errors.push(format!(
                    "Specified SLS '{sls}' in environment '{env}' is not available on the salt master"
                ));
                // Salt goes on with no file, which renders to an empty dict.
                let empty = Value::Object(Map::new());
                mods.set(sls, Some(empty.clone()));
                return (Some(empty), errors);
            }
            tracing::debug!(
                "Specified SLS '{sls}' in environment '{env}' was not found (environment not in pillar_roots)"
            );
            return (None, errors);
        };
        let rendered = if depth > MAX_INCLUDE_DEPTH {
            Err(format!(
                "include chain deeper than {MAX_INCLUDE_DEPTH} files at {}",
                found.path.display()
            ))
        } else {
            self.render_file(&found, env, sls, defaults)
        };
        let mut state = match rendered {
            Ok(v) => Some(v),
            Err(e) => {
                let msg = format!("Rendering SLS '{sls}' failed, render error:\n{e}");
                tracing::error!(minion = %self.req.minion_id, "{msg}");
                errors.push(if o.safe_render_error {
                    format!("Rendering SLS '{sls}' failed. Please see master log for details.")
                } else {
                    msg
                });
                None
            }
        };
        // Only a list is taken out: Salt leaves a malformed `include` in the data.
        let include = match &mut state {
            Some(Value::Object(m)) => match m.get("include") {
                Some(Value::Array(_)) => m.shift_remove("include"),
                other => other.cloned(),
            },
            _ => None,
        };
        mods.set(sls, state.clone());
        let Some(st) = state.as_ref().filter(|s| truthy(s)) else {
            return (state, errors);
        };
        if !st.is_object() {
            errors.push(format!("SLS '{sls}' does not render to a dictionary"));
            return (state, errors);
        }
        let Some(include) = include else {
            return (state, errors);
        };
        let Value::Array(include) = include else {
            errors.push(format!(
                "Include Declaration in SLS '{sls}' is not formed as a list"
            ));
            return (state, errors);
        };
        let Some(Value::Object(mut own)) = state else {
            return (None, errors);
        };
        let override_sls = o.includes_override_sls;
        let mut include_states: Vec<Map<String, Value>> = Vec::new();
        // As Salt's loop: `defaults` carries over to the next plain include, and so do the
        // last nested render's errors when an include was already rendered.
        let mut defaults = defaults.clone();
        let mut err: Vec<String> = Vec::new();
        for item in include {
            let (sub_sls, key) = match item {
                Value::Object(m) => match m.into_iter().next() {
                    Some((name, v)) => {
                        if let Some(Value::Object(d)) = v.get("defaults") {
                            defaults = d.clone();
                        } else {
                            defaults = Map::new();
                        }
                        let key = v.get("key").filter(|k| !k.is_null()).map(python::str);
                        (name, key)
                    }
                    None => continue,
                },
                other => (python::str(&other), None),
            };
            let matched = self.include_matches(&sub_sls, sls, &found.source, env, &mut errors);
            for m_sub in matched {
                let nstate = match mods.get(&m_sub) {
                    Some(v) => v.clone(),
                    None => {
                        let (n, e) = self.render_pstate(&m_sub, env, mods, &defaults, depth + 1);
                        err = e;
                        n
                    }
                };
                if let Some(Value::Object(mut n)) = nstate.filter(truthy) {
                    if let Some(key) = &key {
                        for fragment in key.split(':').rev() {
                            let mut wrap = Map::new();
                            wrap.insert(fragment.to_owned(), Value::Object(n));
                            n = wrap;
                        }
                    }
                    if override_sls {
                        own = self.merge(own, n);
                    } else {
                        include_states.push(n);
                    }
                }
                errors.extend(err.iter().cloned());
            }
        }
        if override_sls {
            return (Some(Value::Object(own)), errors);
        }
        include_states.push(own);
        let mut merged: Option<Map<String, Value>> = None;
        for s in include_states {
            merged = Some(match merged {
                None => s,
                Some(m) => self.merge(m, s),
            });
        }
        (merged.map(Value::Object), errors)
    }

    /// The SLS an `include:` entry names: globs against the environment's SLS, and a
    /// leading `.` relative to the including SLS (Salt matches the name without its dots
    /// first, then the relative one).
    fn include_matches(
        &mut self,
        sub_sls: &str,
        sls: &str,
        source: &str,
        env: &str,
        errors: &mut Vec<String>,
    ) -> Vec<String> {
        let Some(avail) = self.avail(env) else {
            errors.push(format!(
                "No matching pillar environment for environment '{env}' found"
            ));
            return vec![sub_sls.to_owned()];
        };
        let plain = sub_sls.trim_start_matches('.').replace('/', ".");
        let mut matched: Vec<String> = avail
            .iter()
            .filter(|s| python::fnmatch(s, &plain))
            .cloned()
            .collect();
        let mut name = sub_sls.to_owned();
        if let Some(rest) = sub_sls.strip_prefix('.') {
            let mut parts: Vec<&str> = sls.split('.').collect();
            if !source.ends_with("/init.sls") {
                parts.pop();
            }
            parts.push(rest);
            name = parts.join(".");
        }
        matched.extend(avail.iter().filter(|s| python::fnmatch(s, &name)).cloned());
        if matched.is_empty() {
            matched.push(name);
        }
        matched
    }

    /// Salt's `ext_pillar`: the `pillar=` override, then each source in order, merged over
    /// `pillar`; a failing source is an error naming it.
    pub(super) fn ext_pillar(
        &self,
        mut pillar: Map<String, Value>,
    ) -> (Map<String, Value>, Vec<String>) {
        let mut errors = Vec::new();
        if self.c.ext.is_empty() {
            return (pillar, errors);
        }
        if !self.req.pillar_override.is_empty() {
            pillar = self.merge(pillar, self.req.pillar_override.clone());
        }
        let pillarenv = self
            .req
            .pillarenv
            .as_deref()
            .or(self.c.options.pillarenv.as_deref());
        for source in &self.c.ext {
            let cx = ext::ExtContext {
                minion_id: &self.req.minion_id,
                grains: &self.req.grains,
                pillar: &pillar,
                pillarenv,
                opts: &self.c.opts,
            };
            match source.compile(&cx) {
                Ok(data) if !data.is_empty() => pillar = self.merge(pillar, data),
                Ok(_) => {}
                Err(e) => {
                    tracing::error!(minion = %self.req.minion_id, source = source.name(), "ext_pillar failed: {e}");
                    errors.push(format!("Failed to load ext_pillar {}: {e}", source.name()));
                }
            }
        }
        (pillar, errors)
    }
}
