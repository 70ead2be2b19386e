//! The renderer pipeline (`salt/renderers/`, `salt/utils/templates.py`): an SLS file or a
//! template through `jinja|yaml` (or its shebang's pipeline) with Salt's Jinja context, Salt's
//! Jinja tags and filters, and YAML 1.1 scalars.
//!
//! API (used by the engine and the state modules):
//! - [`RenderContext`]: what a render sees (call context, grains, pillar, opts, saltenv, sls,
//!   the file's path, extra variables).
//! - `render_sls(text, &RenderContext) -> Result<serde_json::Value, RenderError>`: the file's
//!   data (ordered maps), by its shebang or the `renderer` option (default `jinja|yaml`).
//! - `render_template(text, engine, &RenderContext) -> Result<String, RenderError>`: a
//!   template for `file.managed`/`cp.get_template` (`engine` is `jinja`).
//! - `load_yaml(text) -> Result<Value, RenderError>`: YAML 1.1 as Salt's loader reads it.
//!
//! Rendering may call execution functions (`salt['cmd.run'](...)`) and fetch `salt://` files
//! (imports): it should run on a blocking thread (`tokio::task::spawn_blocking`); it drives
//! those futures with the runtime's handle on a scoped helper thread, so it never panics on
//! a runtime worker, but it does block the thread it runs on.
//!
//! How Salt's Jinja is had on minijinja (the parts, and why):
//! - `prepass`: minijinja has no custom tags, so Salt's (`import_yaml`/`import_json`/
//!   `import_text`, `load_yaml`/`load_json`/`load_text` ... `endload`) are rewritten into
//!   function calls, `{% do EXPR %}` into an assignment (Jinja's `do` takes any expression),
//!   Python's `'fmt' % args` into a filter, and `{% set x = EXPR %}` into
//!   `set x = __mut(EXPR)`; no newline is added or removed, so lines stay Salt's.
//! - `values`: minijinja values are immutable; maps and lists handed to templates are
//!   `values::MutMap`/`values::MutList` objects (shared, as Python's are) with dict and
//!   list methods (`update`, `setdefault`, `pop`, `append`, `extend`, ...), and `{{ x }}`
//!   prints as Python's `str()` (`None`, `True`, `{'a': 1}`).
//! - `jinja`: the environment (strict undefined, `salt`, `grains`, `pillar`, `opts`, the
//!   `tpl*`/`sls*` variables as globals so imports see them, a loader over the file client
//!   with relative names), and Salt's error texts ("Jinja variable 'x' is undefined; line
//!   N" with its context excerpt).
//! - `filters`: Salt's filters and tests, and Jinja builtins minijinja lacks.
//! - `salt[...]` calls go to the execution-module table (`saltq_exec::call`); Salt's
//!   in-place functions (`defaults.merge`, `defaults.update`) have their answer written back
//!   into the dict passed in (`values::write_back`), as Python's shared dicts would have it.
//! - `yaml`: YAML 1.1 on yaml-rust2's events (scalar styles kept), as Salt's loader.

mod filters;
pub mod gpg;
mod jinja;
mod prepass;
mod values;
mod yaml;

use saltq_exec::CallContext;
use serde_json::{Map, Value};

pub use jinja::{context_excerpt, join_path, sls_context};
pub use yaml::load_yaml;

/// What a render sees: Salt's Jinja context comes from here.
#[derive(Debug, Clone)]
pub struct RenderContext {
    /// The minion's call context: `salt[...]` calls go through it, `salt://` imports through
    /// its [`FileClient`](saltq_exec::FileClient).
    pub ctx: CallContext,
    /// The grains (`grains`).
    pub grains: Value,
    /// The pillar (`pillar`), with a run's `pillar=` override merged in.
    pub pillar: Value,
    /// The minion's options (`opts`).
    pub opts: Value,
    /// The saltenv (`saltenv`), where `salt://` imports resolve.
    pub saltenv: String,
    /// The SLS being rendered (`web.nginx`), empty for a template outside a state tree.
    pub sls: String,
    /// The file's path relative to the saltenv's roots (`web/nginx.sls`), from which
    /// `tpldir`, `tplpath`, `tplfile` and relative imports derive; empty for a string.
    pub source: String,
    /// Extra variables (a template's `context` and `defaults`).
    pub extra: Map<String, Value>,
}

/// A render that failed: the file, the line when known, and the problem.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct RenderError {
    /// The message as Salt words it, without the "Rendering SLS ... failed: " prefix the
    /// compiler adds.
    pub message: String,
    /// The line of the problem in the file, 1-based, when known.
    pub line: Option<usize>,
}

/// One step of a render pipeline (`#!jinja|yaml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renderer {
    /// Jinja: text to text.
    Jinja,
    /// YAML 1.1: text to data.
    Yaml,
    /// JSON: text to data.
    Json,
    /// GPG: PGP-armored values in the data decrypted with `gpg_keydir` ([`gpg`]).
    Gpg,
}

/// The pipeline for `text`: its shebang (`#!jinja|yaml`, Salt's old names such as
/// `#!yaml_jinja` too), else the `renderer` option (default `jinja|yaml`). Renderers saltq
/// does not run (`py`, `pyobjects`, `mako`, ...) are refused by name.
pub fn pipeline(text: &str, opts: &Value) -> Result<Vec<Renderer>, RenderError> {
    let first = text.lines().next().unwrap_or_default();
    let spec = if first.starts_with("#!") && !first.starts_with("#!/") {
        first[2..].trim().to_string()
    } else {
        opts.get("renderer")
            .and_then(Value::as_str)
            .unwrap_or("jinja|yaml")
            .to_string()
    };
    let spec = match spec.as_str() {
        "yaml_jinja" => "jinja|yaml".to_string(),
        "json_jinja" => "jinja|json".to_string(),
        "yaml_odict" => "yaml".to_string(),
        _ => spec,
    };
    let mut out = Vec::new();
    for part in spec.split('|') {
        let name = part.split_whitespace().next().unwrap_or_default();
        out.push(match name {
            "jinja" => Renderer::Jinja,
            "yaml" | "yamlex" => Renderer::Yaml,
            "json" => Renderer::Json,
            "gpg" => Renderer::Gpg,
            other => {
                return Err(RenderError {
                    message: format!(
                        "The renderer \"{other}\" is not available in saltq (pipeline \"{spec}\"): \
                         only jinja, yaml, json and gpg are supported"
                    ),
                    line: Some(1),
                });
            }
        });
    }
    Ok(out)
}

/// One mutable pillar shared by the renders of one pillar compilation (Salt's
/// `__pillar__`): what one file's Jinja changes (`{% do pillar.update(...) %}`), the files
/// rendered after it see. `fuel` bounds each render's Jinja work (a loop that never ends
/// is an error, not a hung master).
#[derive(Debug, Clone)]
pub struct SharedPillar {
    value: minijinja::Value,
    fuel: u64,
}

impl SharedPillar {
    /// A shared pillar holding `pillar`, each render given `fuel` Jinja instructions.
    pub fn new(pillar: &Value, fuel: u64) -> Self {
        Self {
            value: values::to_jinja(pillar),
            fuel,
        }
    }

    /// The pillar as it is now.
    pub fn to_json(&self) -> Value {
        values::to_json(&self.value)
    }
}

/// [`render_sls`] with Jinja's `pillar` bound to `shared`.
pub fn render_sls_shared(
    text: &str,
    rc: &RenderContext,
    shared: &SharedPillar,
) -> Result<Value, RenderError> {
    render_sls_with(text, rc, Some(shared))
}

/// Renders an SLS file into its data, by its shebang or the `renderer` option. An empty
/// file, or one that renders to nothing, is `{}` as in Salt.
pub fn render_sls(text: &str, rc: &RenderContext) -> Result<Value, RenderError> {
    render_sls_with(text, rc, None)
}

fn render_sls_with(
    text: &str,
    rc: &RenderContext,
    shared: Option<&SharedPillar>,
) -> Result<Value, RenderError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let steps = pipeline(text, &rc.opts)?;
    let mut current = text.to_string();
    let mut data: Option<Value> = None;
    for step in steps {
        if step == Renderer::Gpg {
            let d = data
                .take()
                .unwrap_or_else(|| Value::String(current.clone()));
            data = Some(gpg::render(d, &rc.sls, &rc.opts)?);
            continue;
        }
        if let Some(d) = data.take() {
            // Data fed to a text renderer: Salt passes its string form.
            current = match d {
                Value::String(s) => s,
                other => other.to_string(),
            };
        }
        match step {
            Renderer::Jinja => current = jinja::render_shared(&current, rc, shared)?,
            Renderer::Yaml => data = Some(load_yaml(&current)?),
            Renderer::Json => {
                let body = if current.starts_with("#!") {
                    current.split_once('\n').map_or("", |(_, rest)| rest)
                } else {
                    current.as_str()
                };
                data = Some(serde_json::from_str(body).map_err(|e| RenderError {
                    message: e.to_string(),
                    line: Some(e.line()),
                })?);
            }
            // Decrypts data in place, before the text conversion above.
            Renderer::Gpg => {}
        }
    }
    Ok(match data {
        None => {
            if current.trim().is_empty() {
                Value::Object(Map::new())
            } else {
                Value::String(current)
            }
        }
        Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::Bool(false)) => Value::Object(Map::new()),
        Some(Value::String(s)) if s.is_empty() => Value::Object(Map::new()),
        Some(d) => d,
    })
}

/// Renders a template (`engine` is `jinja`) into text.
pub fn render_template(
    text: &str,
    engine: &str,
    rc: &RenderContext,
) -> Result<String, RenderError> {
    match engine {
        "jinja" => jinja::render(text, rc),
        other => Err(RenderError {
            message: format!(
                "The template engine \"{other}\" is not available in saltq: only jinja is supported"
            ),
            line: None,
        }),
    }
}
