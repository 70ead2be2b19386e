//! Salt's Jinja on minijinja: the context `salt/utils/templates.py` gives (`salt`, `grains`,
//! `pillar`, `opts`, `saltenv`, `sls` and the paths derived from the file), `salt://`
//! imports through the minion's file client (relative ones too), strict undefined, Python's
//! way of printing values, and Salt's error texts.

use std::sync::{Arc, Mutex, PoisonError};

use minijinja::value::{Object, ObjectRepr, Value as JValue, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, UndefinedBehavior};
use serde_json::{Map, Value};

use super::values::{mutify, py_str, to_jinja, to_json};
use super::{RenderContext, RenderError, filters, prepass};

/// Why a render failed, when our own code (not minijinja) knows better than its error.
#[derive(Debug, Clone)]
enum Raised {
    /// `raise('msg')` or a failed import: "Jinja error: msg".
    Error(String),
    /// An execution function that failed: "Problem running salt function in Jinja
    /// template: msg".
    Function(String),
    /// An undefined name, already worded: "'x' is undefined".
    Undefined(String),
}

#[derive(Debug, Default)]
struct Session {
    raised: Mutex<Option<Raised>>,
}

impl Session {
    fn raise(&self, raised: Raised) -> Error {
        let msg = match &raised {
            Raised::Error(m) | Raised::Function(m) | Raised::Undefined(m) => m.clone(),
        };
        *self.raised.lock().unwrap_or_else(PoisonError::into_inner) = Some(raised);
        Error::new(ErrorKind::InvalidOperation, msg)
    }

    fn take(&self) -> Option<Raised> {
        self.raised
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// The Salt context variables a file gets from its SLS name and path
/// (`generate_sls_context`): `tplpath` is the local path, the others relative to the roots.
pub fn sls_context(local_path: &str, source: &str, sls: &str) -> Map<String, Value> {
    let mut out = Map::new();
    let mut slspath = sls.replace('.', "/");
    if !source.is_empty() {
        let template = if sls.is_empty() {
            source.rsplit('/').next().unwrap_or(source).to_string()
        } else {
            source.to_string()
        };
        slspath = template
            .rsplit_once('/')
            .map(|(dir, _)| dir.to_string())
            .unwrap_or_default();
        out.insert("tplpath".into(), Value::String(local_path.to_string()));
        out.insert("tplfile".into(), Value::String(template));
        out.insert(
            "tpldir".into(),
            Value::String(if slspath.is_empty() {
                ".".into()
            } else {
                slspath.clone()
            }),
        );
        out.insert("tpldot".into(), Value::String(slspath.replace('/', ".")));
    }
    if !sls.is_empty() {
        out.insert("slspath".into(), Value::String(slspath.clone()));
        out.insert(
            "slsdotpath".into(),
            Value::String(slspath.replace('/', ".")),
        );
        out.insert(
            "slscolonpath".into(),
            Value::String(slspath.replace('/', ":")),
        );
        out.insert("sls_path".into(), Value::String(slspath.replace('/', "_")));
    }
    out
}

/// Joins a relative import (`./x`, `../x`) to the importing template's directory; other names
/// are from the saltenv's roots.
pub fn join_path(name: &str, parent: &str) -> String {
    if !(name.starts_with("./") || name.starts_with("../")) {
        return name.trim_start_matches('/').to_string();
    }
    let mut parts: Vec<&str> = parent.split('/').collect();
    parts.pop();
    for seg in name.split('/') {
        match seg {
            "." | "" => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.retain(|p| !p.is_empty());
    parts.join("/")
}

/// Runs a future to completion from the render's thread, on a scoped helper thread outside
/// the runtime's context: `Handle::block_on` panics on a runtime worker, and a thread
/// cannot tell a worker from a `spawn_blocking` thread, so a misplaced render (on a
/// multi-thread runtime's worker) blocks that worker instead of aborting the process.
fn drive<F>(handle: &tokio::runtime::Handle, fut: F) -> F::Output
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    std::thread::scope(|scope| {
        scope
            .spawn(|| handle.block_on(fut))
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Fetches `salt://name` in the saltenv: its text, `None` when there is no such file.
fn fetch(rc: &RenderContext, name: &str) -> Result<Option<String>, String> {
    let Some(files) = rc
        .ctx
        .template_files
        .clone()
        .or_else(|| rc.ctx.files.clone())
    else {
        return Err(format!(
            "cannot fetch salt://{name}: this render has no fileserver client"
        ));
    };
    let handle = tokio::runtime::Handle::try_current()
        .map_err(|_| format!("cannot fetch salt://{name}: no async runtime to fetch it with"))?;
    let saltenv = rc.saltenv.clone();
    let path = name.to_string();
    let local = drive(
        &handle,
        async move { files.cache_file(&saltenv, &path).await },
    )?;
    match local {
        None => Ok(None),
        Some(p) => std::fs::read_to_string(&p)
            .map(Some)
            .map_err(|e| format!("cannot read {} (salt://{name}): {e}", p.display())),
    }
}

/// `salt`: `salt['mod.fun'](...)` and `salt.mod.fun(...)`.
#[derive(Debug)]
struct SaltFuncs {
    rc: Arc<RenderContext>,
    session: Arc<Session>,
}

#[derive(Debug)]
struct SaltModule {
    name: String,
    rc: Arc<RenderContext>,
    session: Arc<Session>,
}

#[derive(Debug)]
struct SaltFunc {
    name: String,
    rc: Arc<RenderContext>,
    session: Arc<Session>,
}

impl Object for SaltFuncs {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &JValue) -> Option<JValue> {
        let name = key.as_str()?;
        if name.contains('.') {
            Some(JValue::from_object(SaltFunc {
                name: name.to_string(),
                rc: self.rc.clone(),
                session: self.session.clone(),
            }))
        } else {
            Some(JValue::from_object(SaltModule {
                name: name.to_string(),
                rc: self.rc.clone(),
                session: self.session.clone(),
            }))
        }
    }
}

impl Object for SaltModule {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &JValue) -> Option<JValue> {
        Some(JValue::from_object(SaltFunc {
            name: format!("{}.{}", self.name, key.as_str()?),
            rc: self.rc.clone(),
            session: self.session.clone(),
        }))
    }

    fn call_method(
        self: &Arc<Self>,
        state: &State<'_, '_>,
        method: &str,
        args: &[JValue],
    ) -> Result<JValue, Error> {
        let f = Arc::new(SaltFunc {
            name: format!("{}.{method}", self.name),
            rc: self.rc.clone(),
            session: self.session.clone(),
        });
        f.call(state, args)
    }
}

impl Object for SaltFunc {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn call(self: &Arc<Self>, _state: &State<'_, '_>, args: &[JValue]) -> Result<JValue, Error> {
        let mut positional = Vec::new();
        let mut kwargs = Map::new();
        for arg in args {
            if arg.is_kwargs() {
                for key in arg.try_iter()? {
                    let value = arg.get_item(&key)?;
                    kwargs.insert(key.to_string(), to_json(&value));
                }
            } else {
                positional.push(to_json(arg));
            }
        }
        // Salt's in-place functions change the dict they are given: their answer is written
        // back into it (`defaults.merge` deeply, `defaults.update` node by node).
        let in_place = match self.name.as_str() {
            "defaults.merge" | "defaults.update" => {
                let flag = kwargs
                    .get("in_place")
                    .or_else(|| positional.get(3))
                    .is_none_or(saltq_semantics::python::truthy);
                let dest = args
                    .iter()
                    .find(|a| !a.is_kwargs())
                    .cloned()
                    .or_else(|| args.iter().find_map(|a| a.get_attr("dest").ok()));
                dest.filter(|_| flag)
                    .map(|d| (d, self.name == "defaults.merge"))
            }
            _ => None,
        };
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            self.session.raise(Raised::Function(format!(
                "{}: no async runtime to call it with",
                self.name
            )))
        })?;
        let ctx = self.rc.ctx.clone();
        let fun = self.name.clone();
        let outcome = drive(&handle, async move {
            saltq_exec::call(
                &ctx,
                &fun,
                positional,
                kwargs,
                &saltq_exec::PubInfo::default(),
            )
            .await
        });
        if !outcome.success
            && let Value::String(text) = &outcome.ret
        {
            if text.ends_with("is not available.") && saltq_exec::lookup(&self.name).is_none() {
                return Err(self.session.raise(Raised::Undefined(format!(
                    "'salt.utils.templates.AliasedLoader object' has no attribute '{}'",
                    self.name
                ))));
            }
            if let Some(msg) = text.strip_prefix("ERROR: ") {
                return Err(self.session.raise(Raised::Function(msg.to_string())));
            }
            if let Some(rest) = text.strip_prefix("Passed invalid arguments to ") {
                // Called from Jinja the function raises a TypeError itself: its message,
                // without the dispatcher's prefix and the function's docstring.
                let msg = rest.split_once(": ").map_or(rest, |(_, m)| m);
                let msg = msg.split("\n\n").next().unwrap_or(msg);
                return Err(self.session.raise(Raised::Error(msg.to_string())));
            }
        }
        if outcome.success
            && let Some((dest, deep)) = in_place
        {
            super::values::write_back(&dest, &outcome.ret, deep);
            return Ok(dest);
        }
        Ok(to_jinja(&outcome.ret))
    }
}

/// Python methods minijinja lacks: those of minijinja-contrib's pycompat, plus the string
/// methods formulas call that it does not have (`rsplit`, `partition`, `rpartition`, `zfill`,
/// `ljust`, `rjust`, `center`, `index`, `rindex`, `swapcase`, `casefold`).
fn python_methods(
    state: &State,
    value: &JValue,
    method: &str,
    args: &[JValue],
) -> Result<JValue, Error> {
    if let Some(s) = value.as_str() {
        let arg_str = |i: usize| args.get(i).and_then(|a| a.as_str().map(str::to_string));
        let width = || {
            args.first()
                .and_then(|a| usize::try_from(a.clone()).ok())
                .unwrap_or(0)
        };
        let fill = || arg_str(1).and_then(|f| f.chars().next()).unwrap_or(' ');
        let len = s.chars().count();
        match method {
            "partition" | "rpartition" => {
                let sep = arg_str(0).ok_or_else(|| {
                    Error::new(
                        ErrorKind::InvalidOperation,
                        format!("{method}() takes exactly one argument"),
                    )
                })?;
                let found = if method == "partition" {
                    s.find(&sep)
                } else {
                    s.rfind(&sep)
                };
                let parts = match found {
                    Some(i) => [&s[..i], sep.as_str(), &s[i + sep.len()..]],
                    None if method == "partition" => [s, "", ""],
                    None => ["", "", s],
                };
                return Ok(JValue::from(
                    parts.iter().map(|p| JValue::from(*p)).collect::<Vec<_>>(),
                ));
            }
            "rsplit" => {
                let sep = arg_str(0);
                let max = args
                    .get(1)
                    .and_then(|a| i64::try_from(a.clone()).ok())
                    .unwrap_or(-1);
                let mut parts: Vec<String> = match (&sep, max) {
                    (Some(sep), m) if m >= 0 => s
                        .rsplitn(usize::try_from(m).unwrap_or(0) + 1, sep.as_str())
                        .map(str::to_string)
                        .collect(),
                    (Some(sep), _) => s.rsplit(sep.as_str()).map(str::to_string).collect(),
                    (None, _) => s.split_whitespace().rev().map(str::to_string).collect(),
                };
                parts.reverse();
                return Ok(JValue::from(
                    parts.into_iter().map(JValue::from).collect::<Vec<_>>(),
                ));
            }
            "zfill" => {
                let w = width();
                if len >= w {
                    return Ok(JValue::from(s));
                }
                let (sign, digits) = match s.strip_prefix(['-', '+']) {
                    Some(rest) => (&s[..1], rest),
                    None => ("", s),
                };
                return Ok(JValue::from(format!(
                    "{sign}{}{digits}",
                    "0".repeat(w - len)
                )));
            }
            "ljust" | "rjust" | "center" => {
                let w = width();
                if len >= w {
                    return Ok(JValue::from(s));
                }
                let pad = w - len;
                let f = fill().to_string();
                let (left, right) = match method {
                    "ljust" => (0, pad),
                    "rjust" => (pad, 0),
                    _ => {
                        let left = pad / 2 + (pad & w & 1);
                        (left, pad - left)
                    }
                };
                return Ok(JValue::from(format!(
                    "{}{s}{}",
                    f.repeat(left),
                    f.repeat(right)
                )));
            }
            "index" | "rindex" => {
                let sub = arg_str(0).unwrap_or_default();
                let found = if method == "index" {
                    s.find(&sub)
                } else {
                    s.rfind(&sub)
                };
                return found
                    .map(|i| JValue::from(s[..i].chars().count()))
                    .ok_or_else(|| {
                        Error::new(
                            ErrorKind::InvalidOperation,
                            "ValueError: substring not found",
                        )
                    });
            }
            "swapcase" => {
                return Ok(JValue::from(
                    s.chars()
                        .map(|c| {
                            if c.is_uppercase() {
                                c.to_lowercase().collect::<String>()
                            } else {
                                c.to_uppercase().collect::<String>()
                            }
                        })
                        .collect::<String>(),
                ));
            }
            "casefold" => return Ok(JValue::from(s.to_lowercase())),
            _ => {}
        }
    }
    // A literal dict's `items()`: its pairs are tuples, as Python prints them.
    if value.kind() == ValueKind::Map && method == "items" && args.is_empty() {
        let pairs =
            minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)?;
        return super::values::Tuple::pairs_of(&pairs);
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

/// Renders Jinja `text` (the file `rc.source`) with Salt's context.
pub fn render(text: &str, rc: &RenderContext) -> Result<String, RenderError> {
    render_shared(text, rc, None)
}

/// [`render`] with `pillar` bound to `shared` (a pillar compilation's one mutable
/// `__pillar__`, with its fuel bound) instead of a copy of `rc.pillar`.
pub(super) fn render_shared(
    text: &str,
    rc: &RenderContext,
    shared: Option<&super::SharedPillar>,
) -> Result<String, RenderError> {
    // `salt[...]` calls see the render's grains and pillar (a run's `pillar=` override
    // included), as Salt's loader gives its functions the same `__pillar__`.
    let mut rc = rc.clone();
    rc.ctx.pillar = Arc::new(std::sync::RwLock::new(rc.pillar.clone()));
    rc.ctx.grains = Arc::new(std::sync::RwLock::new(rc.grains.clone()));
    let rc = Arc::new(rc);
    let session = Arc::new(Session::default());
    let mut env = Environment::new();
    // Salt's environment options: `allow_undefined`, `jinja_env` (templates) or
    // `jinja_sls_env` (SLS files), and the older `jinja_trim_blocks`/`jinja_lstrip_blocks`.
    let opt_true = |v: Option<&Value>| v.is_some_and(|v| v.as_bool().unwrap_or(false));
    env.set_undefined_behavior(if opt_true(rc.opts.get("allow_undefined")) {
        UndefinedBehavior::Lenient
    } else {
        UndefinedBehavior::Strict
    });
    let env_opts = rc
        .opts
        .get(if rc.sls.is_empty() {
            "jinja_env"
        } else {
            "jinja_sls_env"
        })
        .and_then(Value::as_object);
    let env_opt = |key: &str, legacy: &str| {
        opt_true(rc.opts.get(legacy)) || opt_true(env_opts.and_then(|m| m.get(key)))
    };
    env.set_trim_blocks(env_opt("trim_blocks", "jinja_trim_blocks"));
    env.set_lstrip_blocks(env_opt("lstrip_blocks", "jinja_lstrip_blocks"));
    env.set_keep_trailing_newline(false);
    env.set_unknown_method_callback(python_methods);
    env.set_formatter(|out, _state, value| out.write_str(&py_str(value)).map_err(Error::from));
    env.set_path_join_callback(|name, parent| join_path(name, parent).into());
    {
        let rc = rc.clone();
        env.set_loader(move |name| {
            fetch(&rc, name)
                .map(|t| t.map(|t| prepass::rewrite(&t)))
                .map_err(|e| Error::new(ErrorKind::InvalidOperation, e))
        });
    }
    minijinja_contrib::add_to_environment(&mut env);
    filters::register(&mut env);
    env.add_function("__mut", |v: JValue| mutify(v));
    {
        let rc = rc.clone();
        let session = session.clone();
        env.add_function(
            "__salt_import",
            move |state: &State, kind: String, name: String| -> Result<JValue, Error> {
                let path = join_path(&name, state.name());
                match fetch(&rc, &path) {
                    Ok(Some(_)) => {
                        let text = state.env().get_template(&path)?.render(())?;
                        filters::parse_data(&kind, &text)
                    }
                    Ok(None) => Err(session.raise(Raised::Error(path))),
                    Err(e) => Err(session.raise(Raised::Error(e))),
                }
            },
        );
    }
    env.add_function("__salt_load", |kind: String, text: String| {
        filters::parse_data(&kind, &text)
    });
    {
        let session = session.clone();
        env.add_function("raise", move |msg: String| -> Result<JValue, Error> {
            Err(session.raise(Raised::Error(msg)))
        });
    }
    // Salt's `odict` (an OrderedDict): from a mapping, a list of pairs and/or keywords.
    env.add_function(
        "odict",
        |args: minijinja::value::Rest<JValue>| -> Result<JValue, Error> {
            let mut out = Vec::new();
            for a in args.iter() {
                if a.kind() == ValueKind::Seq || a.kind() == ValueKind::Iterable {
                    for pair in a.try_iter()? {
                        let mut kv = pair.try_iter().map_err(|_| {
                            Error::new(
                                ErrorKind::InvalidOperation,
                                format!("cannot convert dictionary update sequence element {pair} to a sequence"),
                            )
                        })?;
                        match (kv.next(), kv.next(), kv.next()) {
                            (Some(k), Some(v), None) => out.push((k, v)),
                            _ => {
                                return Err(Error::new(
                                    ErrorKind::InvalidOperation,
                                    format!("dictionary update sequence element {pair} is not a pair"),
                                ));
                            }
                        }
                    }
                } else if let Ok(items) = a.try_iter() {
                    for k in items {
                        let v = a.get_item(&k).unwrap_or_default();
                        out.push((k, v));
                    }
                }
            }
            Ok(super::values::MutMap::from_pairs(
                out.into_iter().map(|(k, v)| (k, mutify(v))),
            ))
        },
    );

    // The context: every variable is also a global, as Salt's `jinja_env.globals.update`
    // makes it, so that imported templates see them without `with context`.
    let mut ctx = Map::new();
    ctx.insert("grains".into(), rc.grains.clone());
    ctx.insert("pillar".into(), rc.pillar.clone());
    ctx.insert("opts".into(), rc.opts.clone());
    ctx.insert("saltenv".into(), Value::String(rc.saltenv.clone()));
    ctx.insert("sls".into(), Value::String(rc.sls.clone()));
    let local = local_path(&rc);
    for (k, v) in sls_context(&local, &rc.source, &rc.sls) {
        ctx.insert(k, v);
    }
    if rc.sls.is_empty() {
        ctx.remove("sls");
    }
    for (k, v) in &rc.extra {
        ctx.insert(k.clone(), v.clone());
    }
    for (k, v) in &ctx {
        env.add_global(k.clone(), to_jinja(v));
    }
    if let Some(shared) = shared {
        env.add_global("pillar", shared.value.clone());
        env.set_fuel(Some(shared.fuel));
    }
    env.add_global(
        "salt",
        JValue::from_object(SaltFuncs {
            rc: rc.clone(),
            session: session.clone(),
        }),
    );

    let name = if rc.source.is_empty() {
        "<template>".to_string()
    } else {
        rc.source.clone()
    };
    let rewritten = prepass::rewrite(text);
    let result = env
        .template_from_named_str(&name, &rewritten)
        .and_then(|t| t.render(()));
    let mut out = result.map_err(|e| error_text(&env, &e, text, &name, session.take(), &ctx))?;
    // Jinja drops the file's final newline; Salt puts it back.
    if text.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// The local path of the file being rendered (`tplpath`): where the file client cached it,
/// else the relative path.
fn local_path(rc: &RenderContext) -> String {
    if let Some(Value::String(p)) = rc.extra.get("tplpath") {
        return p.clone();
    }
    rc.source.clone()
}

/// Salt's context excerpt (`salt.utils.stringutils.get_context`): five lines either side,
/// `[...]` where cut, the marker on the line.
pub fn context_excerpt(text: &str, line: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if line > lines.len() {
        return text.to_string();
    }
    let start = line.saturating_sub(6);
    let end = (line + 5).min(lines.len());
    let mut at = line - start - 1;
    let mut buf: Vec<String> = Vec::new();
    if start > 0 {
        buf.push("[...]".into());
        at += 1;
    }
    buf.extend(lines[start..end].iter().map(|s| s.to_string()));
    if end < lines.len() {
        buf.push("[...]".into());
    }
    buf[at].push_str("    <======================");
    format!("---\n{}\n---", buf.join("\n"))
}

fn error_text(
    env: &Environment<'_>,
    outer: &Error,
    text: &str,
    name: &str,
    raised: Option<Raised>,
    ctx: &Map<String, Value>,
) -> RenderError {
    // An error in an imported file comes wrapped ("error in ..."): the innermost one says
    // what went wrong; the line is where the main file imported it.
    let mut err = outer;
    while let Some(inner) = std::error::Error::source(err).and_then(|e| e.downcast_ref::<Error>()) {
        err = inner;
    }
    let line = match outer.name() {
        Some(n) if n != name => None,
        _ => outer.line(),
    };
    let in_main = err.name().is_none_or(|n| n == name);
    // Undefined names are looked for on the failing line of the file that failed.
    let inner_source;
    let (text_for_names, names_line) = if in_main {
        (text, line)
    } else {
        inner_source = err
            .name()
            .and_then(|n| env.get_template(n).ok())
            .map(|t| t.source().to_string())
            .unwrap_or_default();
        (inner_source.as_str(), err.line())
    };
    let mut cause: Option<&dyn std::error::Error> = Some(outer);
    while let Some(cur) = cause {
        tracing::debug!(target: "saltq_states::render", "render error: {cur}");
        cause = cur.source();
    }
    let head = match (raised, err.kind()) {
        (Some(Raised::Undefined(m)), _) => format!("Jinja variable {m}"),
        (Some(Raised::Function(m)), _) => {
            format!("Problem running salt function in Jinja template: {m}")
        }
        (Some(Raised::Error(m)), _) => format!("Jinja error: {m}"),
        (None, ErrorKind::UndefinedError) => {
            format!(
                "Jinja variable {}",
                undefined_name(text_for_names, names_line, ctx)
            )
        }
        (None, ErrorKind::InvalidOperation)
            if err.detail().is_some_and(|d| {
                d.contains("unsupported types undefined") || d.ends_with("and undefined")
            }) =>
        {
            // Jinja fails on the undefined operand itself.
            format!(
                "Jinja variable {}",
                undefined_name(text_for_names, names_line, ctx)
            )
        }
        (None, ErrorKind::UnknownMethod)
            if err
                .detail()
                .is_some_and(|d| d.starts_with("undefined has no method named ")) =>
        {
            let method = err
                .detail()
                .unwrap_or_default()
                .trim_start_matches("undefined has no method named ");
            format!(
                "Jinja variable {}",
                undefined_before_method(text, line, method)
            )
        }
        (None, ErrorKind::TemplateNotFound) => {
            let detail = err.detail().unwrap_or_default();
            let missing = detail
                .split('"')
                .nth(1)
                .map(str::to_string)
                .unwrap_or_else(|| detail.to_string());
            format!("Jinja error: {missing}")
        }
        (None, ErrorKind::UnknownFilter | ErrorKind::UnknownTest) => {
            let what = if err.kind() == ErrorKind::UnknownFilter {
                "filter"
            } else {
                "test"
            };
            let source = err
                .name()
                .and_then(|n| env.get_template(n).ok())
                .map(|t| t.source().to_string())
                .unwrap_or_default();
            let ident = err
                .range()
                .and_then(|r| source.get(r))
                .map(|s| {
                    s.trim_start_matches(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .next()
                        .unwrap_or_default()
                        .to_string()
                })
                .unwrap_or_default();
            format!("Jinja syntax error: No {what} named '{ident}'.")
        }
        (None, ErrorKind::SyntaxError) => {
            format!("Jinja syntax error: {}", syntax_detail(err, text))
        }
        (None, _) => format!("Jinja error: {}", err.detail().unwrap_or(&err.to_string())),
    };
    // Salt puts the Python traceback after a generic error's first line; saltq has none,
    // the line break stays.
    let sep = if head.starts_with("Jinja error: ") {
        "\n"
    } else {
        ""
    };
    match line {
        Some(n) if n > 0 => RenderError {
            message: format!("{head}{sep}; line {n}\n\n{}", context_excerpt(text, n)),
            line: Some(n),
        },
        _ => RenderError {
            message: head,
            line: None,
        },
    }
}

/// Jinja's words for a template that ends inside a block: which tags it looked for.
fn unexpected_end(source: &str) -> String {
    let mut stack: Vec<&str> = Vec::new();
    for part in source.split("{%").skip(1) {
        let body = part.split("%}").next().unwrap_or_default();
        let body = body.trim_matches(|c: char| c == '-' || c == '+' || c.is_whitespace());
        let word = body.split_whitespace().next().unwrap_or_default();
        match word {
            "if" | "for" | "macro" | "call" | "filter" | "block" | "with" | "raw" => {
                stack.push(word)
            }
            "set" if !body.contains('=') => stack.push("set"),
            w if w.starts_with("end") => {
                stack.pop();
            }
            _ => {}
        }
    }
    let Some(open) = stack.last() else {
        return "Unexpected end of template.".into();
    };
    let looking = match *open {
        "if" => "'elif' or 'else' or 'endif'".to_string(),
        "for" => "'endfor' or 'else'".to_string(),
        other => format!("'end{other}'"),
    };
    format!(
        "Unexpected end of template. Jinja was looking for the following tags: {looking}. \
         The innermost block that needs to be closed is '{open}'."
    )
}

fn syntax_detail(err: &Error, source: &str) -> String {
    let detail = err.detail().unwrap_or_default().to_string();
    match err.kind() {
        ErrorKind::UnknownFilter => format!(
            "No filter named '{}'.",
            detail.rsplit(' ').next().unwrap_or(&detail)
        ),
        ErrorKind::UnknownTest => format!(
            "No test named '{}'.",
            detail.rsplit(' ').next().unwrap_or(&detail)
        ),
        _ => {
            if let Some(tag) = detail.strip_prefix("unknown statement ") {
                format!("Encountered unknown tag '{tag}'.")
            } else if detail == "unexpected end of block" {
                "Expected an expression, got 'end of statement block'".to_string()
            } else if detail.contains("unexpected end of input") {
                unexpected_end(source)
            } else {
                detail
            }
        }
    }
}

const KEYWORDS: &[&str] = &[
    "if",
    "else",
    "elif",
    "endif",
    "for",
    "in",
    "endfor",
    "set",
    "endset",
    "not",
    "and",
    "or",
    "is",
    "do",
    "true",
    "false",
    "none",
    "True",
    "False",
    "None",
    "macro",
    "endmacro",
    "call",
    "endcall",
    "import",
    "from",
    "as",
    "with",
    "context",
    "without",
    "include",
    "ignore",
    "block",
    "endblock",
    "extends",
    "filter",
    "endfilter",
    "raw",
    "endraw",
    "loop",
    "recursive",
    "break",
    "continue",
];

/// Names the undefined thing on the error's line as Jinja does: `'x' is undefined` for a
/// name the context lacks, `'dict object' has no attribute 'y'` for a missing key.
fn undefined_name(text: &str, line: Option<usize>, ctx: &Map<String, Value>) -> String {
    let src = line
        .and_then(|n| text.lines().nth(n.saturating_sub(1)))
        .unwrap_or_default();
    let assigned = assigned_names(text);
    let mut fallback = None;
    for chain in expression_chains(src) {
        let root = &chain[0];
        if root == "salt" {
            continue;
        }
        if assigned.contains(root) && chain.len() > 1 && fallback.is_none() {
            // A name the template set: its value is not known here; a missing key of a
            // map is the likely cause.
            fallback = Some(format!(
                "'dict object' has no attribute '{}'",
                chain[chain.len() - 1]
            ));
        }
        if KEYWORDS.contains(&root.as_str()) || assigned.contains(root) || root == "salt" {
            continue;
        }
        let Some(mut value) = ctx.get(root) else {
            return format!("'{root}' is undefined");
        };
        for attr in &chain[1..] {
            let next = match value {
                Value::Object(m) => m.get(attr),
                Value::Array(a) => attr.parse::<usize>().ok().and_then(|i| a.get(i)),
                _ => None,
            };
            match next {
                Some(v) => value = v,
                None => {
                    let kind = match value {
                        Value::Object(_) => "dict object",
                        Value::Array(_) => "list object",
                        Value::String(_) => "str object",
                        Value::Number(n) if n.is_f64() => "float object",
                        Value::Number(_) => "int object",
                        Value::Bool(_) => "bool object",
                        Value::Null => "None",
                    };
                    return format!("'{kind}' has no attribute '{attr}'");
                }
            }
        }
    }
    fallback.unwrap_or_else(|| "'undefined' is undefined".to_string())
}

/// Names what a method was called on when that was undefined (`d.missing.items()`).
fn undefined_before_method(text: &str, line: Option<usize>, method: &str) -> String {
    let src = line
        .and_then(|n| text.lines().nth(n.saturating_sub(1)))
        .unwrap_or_default();
    let pattern = format!(
        r#"(\.)?\s*([A-Za-z_]\w*)\s*\.\s*{}\s*\(|\[\s*['"]([^'"]*)['"]\s*\]\s*\.\s*{}\s*\("#,
        regex::escape(method),
        regex::escape(method)
    );
    if let Ok(re) = regex::Regex::new(&pattern)
        && let Some(c) = re.captures(src)
    {
        if let Some(key) = c.get(3) {
            return format!("'dict object' has no attribute '{}'", key.as_str());
        }
        if let Some(name) = c.get(2) {
            return if c.get(1).is_some() {
                format!("'dict object' has no attribute '{}'", name.as_str())
            } else {
                format!("'{}' is undefined", name.as_str())
            };
        }
    }
    "'undefined' is undefined".to_string()
}

/// Names a template assigns (`set` targets, `for` variables, macro names and arguments,
/// imported names): their values are not known to the error path.
fn assigned_names(text: &str) -> Vec<String> {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut out = Vec::new();
    for part in text.split("{%").skip(1) {
        let body = part.split("%}").next().unwrap_or_default();
        let body = body.trim_matches(|c: char| c == '-' || c == '+' || c.is_whitespace());
        let (word, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        match word {
            "set" => out.extend(words(rest.split('=').next().unwrap_or_default())),
            "for" => out.extend(words(rest.split(" in ").next().unwrap_or_default())),
            "macro" => out.extend(words(rest)),
            "from" => {
                let imported = rest.split(" import ").nth(1).unwrap_or_default();
                let imported = imported
                    .trim_end_matches("with context")
                    .trim_end_matches("without context");
                out.extend(words(imported));
            }
            "import" | "import_yaml" | "import_json" | "import_text" | "load_yaml"
            | "load_json" | "load_text" => {
                if let Some((_, name)) = rest.rsplit_once(" as ") {
                    out.extend(words(name).into_iter().take(1));
                } else if let Some(name) = rest.strip_prefix("as ") {
                    out.extend(words(name).into_iter().take(1));
                }
            }
            _ => {}
        }
    }
    out
}

/// The `a.b['c']` chains in the Jinja parts of a line, in order; names after `|`, `is` or
/// `.` calls and keyword arguments are not chains.
fn expression_chains(line: &str) -> Vec<Vec<String>> {
    let mut exprs = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find(['{']) {
        let after = &rest[i..];
        let close = if after.starts_with("{{") {
            "}}"
        } else if after.starts_with("{%") {
            "%}"
        } else {
            rest = &rest[i + 1..];
            continue;
        };
        let end = after.find(close).unwrap_or(after.len());
        exprs.push(&after[2..end]);
        rest = &after[end..];
    }
    let mut chains = Vec::new();
    for expr in exprs {
        let chars: Vec<char> = expr.chars().collect();
        let mut i = 0;
        let mut prev_sig: Option<char> = None;
        let mut prev_word = String::new();
        while i < chars.len() {
            let c = chars[i];
            if c == '\'' || c == '"' {
                let q = c;
                i += 1;
                while i < chars.len() && chars[i] != q {
                    i += 1;
                }
                i += 1;
                prev_sig = Some('s');
                continue;
            }
            if c.is_alphabetic() || c == '_' {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let skip = matches!(prev_sig, Some('|') | Some('.'))
                    || prev_word == "is"
                    || chars[i..].iter().find(|c| !c.is_whitespace()) == Some(&'=')
                        && chars[i..].iter().filter(|c| !c.is_whitespace()).nth(1) != Some(&'=');
                let mut chain = vec![word.clone()];
                // Follow .attr and ['key'] parts.
                loop {
                    if i < chars.len() && chars[i] == '.' {
                        let s = i + 1;
                        let mut j = s;
                        while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                            j += 1;
                        }
                        if j == s {
                            break;
                        }
                        if j < chars.len() && chars[j] == '(' {
                            i = j;
                            break;
                        }
                        chain.push(chars[s..j].iter().collect());
                        i = j;
                    } else if i + 1 < chars.len()
                        && chars[i] == '['
                        && (chars[i + 1] == '\'' || chars[i + 1] == '"')
                    {
                        let q = chars[i + 1];
                        let s = i + 2;
                        let Some(len) = chars[s..].iter().position(|c| *c == q) else {
                            break;
                        };
                        if chars.get(s + len + 1) != Some(&']') {
                            break;
                        }
                        chain.push(chars[s..s + len].iter().collect());
                        i = s + len + 2;
                    } else {
                        break;
                    }
                }
                if !skip {
                    chains.push(chain);
                }
                prev_word = word;
                prev_sig = Some('w');
                continue;
            }
            if !c.is_whitespace() {
                prev_sig = Some(c);
                prev_word.clear();
            }
            i += 1;
        }
    }
    chains
}
