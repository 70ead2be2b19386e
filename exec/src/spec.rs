//! The shape of one execution function: its name, Python-style signature, doc and
//! implementation, and the [`Call`] handed to the implementation.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use serde_json::{Map, Value};

use crate::context::CallContext;
use crate::error::ExecError;

/// The future an implementation returns.
pub type BoxFuture = Pin<Box<dyn Future<Output = Result<Value, ExecError>> + Send + 'static>>;

/// An implementation: takes the bound call, returns the function's return value.
pub type Handler = fn(Call) -> BoxFuture;

/// A default value that can sit in a `const` table; shown by `sys.argspec` as Salt shows
/// the Python default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lit {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A string.
    Str(&'static str),
    /// Salt's `NOT_SET` sentinel (`pillar.get`'s default), shown as `<Constant.NOT_SET>`.
    NotSet,
}

impl Lit {
    /// The value a function sees when the argument is not passed.
    pub fn to_value(self) -> Value {
        match self {
            Lit::None => Value::Null,
            Lit::Bool(b) => Value::Bool(b),
            Lit::Int(i) => Value::from(i),
            Lit::Str(s) => Value::from(s),
            Lit::NotSet => Value::from("<Constant.NOT_SET>"),
        }
    }
}

/// One named parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Param {
    /// The parameter's name, as a keyword argument.
    pub name: &'static str,
    /// Its default, `None` when required.
    pub default: Option<Lit>,
    /// Keyword-only (declared after `*args` in Python): never bound from a position.
    pub keyword_only: bool,
}

impl Param {
    /// A required positional-or-keyword parameter.
    pub const fn req(name: &'static str) -> Self {
        Self {
            name,
            default: None,
            keyword_only: false,
        }
    }

    /// A positional-or-keyword parameter with a default.
    pub const fn opt(name: &'static str, default: Lit) -> Self {
        Self {
            name,
            default: Some(default),
            keyword_only: false,
        }
    }

    /// The same parameter, keyword-only.
    pub const fn kwonly(self) -> Self {
        Self {
            keyword_only: true,
            ..self
        }
    }
}

/// One execution function as registered in the table that dispatch and `sys.*` share.
#[derive(Clone, Copy)]
pub struct Function {
    /// `module.function`, e.g. `test.ping`.
    pub name: &'static str,
    /// Named parameters in declaration order.
    pub params: &'static [Param],
    /// Takes `*args`.
    pub varargs: bool,
    /// Takes `**kwargs` (and so also receives the `__pub_*` keys).
    pub kwargs: bool,
    /// The doc, dedented; [`Function::raw_doc`] gives it in Python's `__doc__` layout.
    pub doc: &'static str,
    /// The outputter Salt's module declares for this function (`__outputter__`), if any.
    pub outputter: Option<&'static str>,
    /// The Python function's name where it differs from the public one (`true_`).
    pub py_name: Option<&'static str>,
    /// The implementation.
    pub handler: Handler,
}

impl Function {
    /// A function with no parameters and no doc.
    pub const fn new(name: &'static str, handler: Handler) -> Self {
        Self {
            name,
            params: &[],
            varargs: false,
            kwargs: false,
            doc: "",
            outputter: None,
            py_name: None,
            handler,
        }
    }

    /// The same function with these named parameters.
    pub const fn params(self, params: &'static [Param]) -> Self {
        Self { params, ..self }
    }

    /// The same function taking `*args`.
    pub const fn varargs(self) -> Self {
        Self {
            varargs: true,
            ..self
        }
    }

    /// The same function taking `**kwargs`.
    pub const fn kwargs(self) -> Self {
        Self {
            kwargs: true,
            ..self
        }
    }

    /// The same function with this doc (dedented, without the leading newline).
    pub const fn doc(self, doc: &'static str) -> Self {
        Self { doc, ..self }
    }

    /// The same function with this outputter hint.
    pub const fn outputter(self, out: &'static str) -> Self {
        Self {
            outputter: Some(out),
            ..self
        }
    }

    /// The same function, named `py_name` in Python's error messages.
    pub const fn py_name(self, py_name: &'static str) -> Self {
        Self {
            py_name: Some(py_name),
            ..self
        }
    }

    /// The module part of the name (`test` for `test.ping`).
    pub fn module(&self) -> &'static str {
        self.name.split_once('.').map_or(self.name, |(m, _)| m)
    }

    /// The name Python's `TypeError` messages use (`echo` for `test.echo`).
    pub fn python_name(&self) -> &'static str {
        self.py_name
            .unwrap_or_else(|| self.name.rsplit_once('.').map_or(self.name, |(_, f)| f))
    }

    /// The doc as Python's `__doc__` holds it: a leading newline, every line indented by four
    /// spaces, and a trailing indented empty line (what Salt appends to argument errors).
    pub fn raw_doc(&self) -> String {
        let mut out = String::from("\n");
        for line in self.doc.trim_end().lines() {
            if !line.is_empty() {
                out.push_str("    ");
                out.push_str(line);
            }
            out.push('\n');
        }
        out.push_str("    ");
        out
    }

    /// `sys.argspec`'s entry: `{args, defaults, varargs, kwargs}`, `null` where Salt has None.
    pub fn argspec(&self) -> Value {
        let args: Vec<Value> = self.params.iter().map(|p| Value::from(p.name)).collect();
        let defaults: Vec<Value> = self
            .params
            .iter()
            .filter_map(|p| p.default.map(Lit::to_value))
            .collect();
        let mut m = Map::new();
        let or_null = |v: Vec<Value>| {
            if v.is_empty() {
                Value::Null
            } else {
                Value::Array(v)
            }
        };
        m.insert("args".into(), or_null(args));
        m.insert("defaults".into(), or_null(defaults));
        m.insert("varargs".into(), self.varargs.then_some(true).into());
        m.insert("kwargs".into(), self.kwargs.then_some(true).into());
        Value::Object(m)
    }
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Function")
            .field("name", &self.name)
            .field("params", &self.params)
            .field("varargs", &self.varargs)
            .field("kwargs", &self.kwargs)
            .finish_non_exhaustive()
    }
}

/// The arguments after binding them to a function's parameters, as Python would.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bound {
    /// Every named parameter with its value (passed or default), in declaration order.
    pub params: Map<String, Value>,
    /// Positional arguments beyond the named parameters (`*args`).
    pub varargs: Vec<Value>,
    /// Keyword arguments that match no parameter (`**kwargs`), `__pub_*` included.
    pub kwargs: Map<String, Value>,
}

/// One invocation as the implementation sees it: the context, the bound arguments, and
/// Salt's `__context__["retcode"]`.
#[derive(Debug, Clone)]
pub struct Call {
    /// The minion's state.
    pub ctx: CallContext,
    /// The function being called.
    pub fun: &'static str,
    /// The bound arguments.
    pub bound: Bound,
    retcode: Arc<AtomicI32>,
}

static NULL: Value = Value::Null;

impl Call {
    pub(crate) fn new(ctx: CallContext, fun: &'static str, bound: Bound) -> Self {
        Self {
            ctx,
            fun,
            bound,
            retcode: Arc::new(AtomicI32::new(0)),
        }
    }

    /// The value of a named parameter (passed or default); `null` for an undeclared name.
    pub fn arg(&self, name: &str) -> &Value {
        debug_assert!(
            self.bound.params.contains_key(name),
            "{} has no parameter {name}",
            self.fun
        );
        self.bound.params.get(name).unwrap_or(&NULL)
    }

    /// The value of a named parameter unless it is `None`.
    pub fn opt_arg(&self, name: &str) -> Option<&Value> {
        Some(self.arg(name)).filter(|v| !v.is_null())
    }

    /// `*args`.
    pub fn varargs(&self) -> &[Value] {
        &self.bound.varargs
    }

    /// `**kwargs`, `__pub_*` included.
    pub fn kwargs(&self) -> &Map<String, Value> {
        &self.bound.kwargs
    }

    /// Sets the job's retcode, as Salt's functions do with `__context__["retcode"]`.
    pub fn set_retcode(&self, code: i32) {
        self.retcode.store(code, Ordering::Relaxed);
    }

    pub(crate) fn retcode_cell(&self) -> Arc<AtomicI32> {
        Arc::clone(&self.retcode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nop(_: Call) -> BoxFuture {
        Box::pin(async { Ok(Value::Null) })
    }

    #[test]
    fn raw_doc_has_python_layout() {
        let f =
            Function::new("test.echo", nop).doc("Return text\n\nCLI Example:\n\n    salt '*' x\n");
        assert_eq!(
            f.raw_doc(),
            "\n    Return text\n\n    CLI Example:\n\n        salt '*' x\n    "
        );
    }

    #[test]
    fn argspec_matches_salt_shape() {
        const P: &[Param] = &[Param::req("key"), Param::opt("default", Lit::Str(""))];
        let f = Function::new("grains.get", nop).params(P);
        assert_eq!(
            f.argspec(),
            json!({"args": ["key", "default"], "defaults": [""], "varargs": null, "kwargs": null})
        );
        let f = Function::new("test.arg", nop).varargs().kwargs();
        assert_eq!(
            f.argspec(),
            json!({"args": null, "defaults": null, "varargs": true, "kwargs": true})
        );
        assert_eq!(f.python_name(), "arg");
        assert_eq!(f.module(), "test");
    }
}
