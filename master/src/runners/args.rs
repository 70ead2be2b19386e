//! Binding a runner's positional and keyword arguments to its parameters, with Salt's rules.

use std::time::Duration;

use serde_json::{Map, Value};

/// The most seconds a runner's argument may ask to wait (about 31 years).
pub const MAX_SECS: f64 = 1e9;

/// A runner's signature and doc.
pub struct Spec {
    /// `module.function`.
    pub name: &'static str,
    /// Parameters in order, each with an optional default (JSON text).
    pub params: &'static [(&'static str, Option<&'static str>)],
    /// Takes `*args` (extra positional arguments, under `args`).
    pub varargs: bool,
    /// Takes `**kwargs` (extra keyword arguments, under `kwargs`).
    pub kwargs: bool,
    /// The doc shown in argument errors.
    pub doc: &'static str,
}

/// Bound arguments.
#[derive(Debug, Default)]
pub struct Args {
    /// Named parameters.
    pub named: Map<String, Value>,
    /// Extra positional arguments.
    pub rest: Vec<Value>,
    /// Extra keyword arguments.
    pub extra: Map<String, Value>,
}

impl Args {
    /// A parameter's value (its default when not given).
    pub fn get(&self, name: &str) -> &Value {
        self.named.get(name).unwrap_or(&Value::Null)
    }

    /// A parameter as a string (numbers and booleans as their text; null as None).
    pub fn str(&self, name: &str) -> Option<String> {
        match self.get(name) {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }

    /// A parameter as a bool (Python truthiness).
    pub fn flag(&self, name: &str) -> bool {
        match self.get(name) {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_f64().unwrap_or(0.0) != 0.0,
            Value::String(s) => {
                !s.is_empty() && !matches!(s.to_ascii_lowercase().as_str(), "false" | "0" | "no")
            }
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
        }
    }

    /// A parameter as seconds (a number, or a string of one): `None` when not given or null;
    /// an error naming the parameter when it is not a number from 0 to [`MAX_SECS`] (a
    /// larger wait would not fit the clock).
    pub fn secs(&self, name: &str) -> Result<Option<Duration>, String> {
        let v = self.get(name);
        let n = match v {
            Value::Null => return Ok(None),
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        match n {
            Some(n) if (0.0..=MAX_SECS).contains(&n) => Ok(Some(Duration::from_secs_f64(n))),
            _ => Err(format!(
                "{name} must be a number of seconds from 0 to {MAX_SECS}, got {v}"
            )),
        }
    }
}

impl Spec {
    /// Binds `args` and `kwargs`; the error reads like Python's.
    pub fn bind(&self, args: Vec<Value>, mut kwargs: Map<String, Value>) -> Result<Args, String> {
        // Salt's CLI packs keyword arguments into the list as a {"__kwarg__": true} dict.
        let mut positional = Vec::new();
        for a in args {
            match a {
                Value::Object(mut m) if m.get("__kwarg__") == Some(&Value::Bool(true)) => {
                    m.remove("__kwarg__");
                    kwargs.extend(m);
                }
                other => positional.push(other),
            }
        }
        let short = self.name.rsplit('.').next().unwrap_or(self.name);
        let mut out = Args::default();
        let mut pos = positional.into_iter();
        for (name, _) in self.params {
            if let Some(v) = pos.next() {
                if kwargs.contains_key(*name) {
                    return Err(format!(
                        "{short}() got multiple values for argument '{name}'"
                    ));
                }
                out.named.insert((*name).into(), v);
            }
        }
        out.rest = pos.collect();
        if !out.rest.is_empty() && !self.varargs {
            return Err(format!(
                "{short}() takes {} positional arguments but {} were given",
                self.params.len(),
                self.params.len() + out.rest.len()
            ));
        }
        for (k, v) in kwargs {
            if self.params.iter().any(|(n, _)| *n == k) {
                out.named.insert(k, v);
            } else if self.kwargs || k.starts_with("__pub_") {
                out.extra.insert(k, v);
            } else {
                return Err(format!(
                    "{short}() got an unexpected keyword argument '{k}'"
                ));
            }
        }
        for (name, default) in self.params {
            if !out.named.contains_key(*name) {
                match default {
                    Some(d) => {
                        out.named.insert(
                            (*name).into(),
                            serde_json::from_str(d).unwrap_or(Value::Null),
                        );
                    }
                    None => {
                        return Err(format!(
                            "{short}() missing 1 required positional argument: '{name}'"
                        ));
                    }
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SPEC: Spec = Spec {
        name: "jobs.lookup_jid",
        params: &[("jid", None), ("missing", Some("false"))],
        varargs: false,
        kwargs: false,
        doc: "",
    };

    /// Regression (found by tests/tests/e2e/fuzz_grpc.rs): `manage.status timeout=-1` and
    /// `test.sleep 1e300` panicked the runner's task converting the seconds; now every bad
    /// value is an error naming the parameter.
    #[test]
    fn seconds_are_checked_and_named() {
        const SLEEP: Spec = Spec {
            name: "test.sleep",
            params: &[("s_time", Some("5"))],
            varargs: false,
            kwargs: false,
            doc: "",
        };
        let secs = |v: Value| SLEEP.bind(vec![v], Map::new()).unwrap().secs("s_time");
        assert_eq!(secs(json!(0.5)), Ok(Some(Duration::from_millis(500))));
        assert_eq!(secs(json!(" 2 ")), Ok(Some(Duration::from_secs(2))));
        assert_eq!(secs(json!(0)), Ok(Some(Duration::ZERO)));
        assert_eq!(secs(Value::Null), Ok(None));
        assert_eq!(
            SLEEP.bind(vec![], Map::new()).unwrap().secs("s_time"),
            Ok(Some(Duration::from_secs(5)))
        );
        for bad in [
            json!(-1),
            json!(1e300),
            json!("nan"),
            json!("inf"),
            json!("x"),
            json!([1]),
        ] {
            let err = secs(bad.clone()).expect_err("refused");
            assert!(
                err.starts_with("s_time must be a number of seconds from 0 to 1000000000, got"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn binds_like_python() {
        let a = SPEC
            .bind(
                vec![json!("1"), json!({"__kwarg__": true, "missing": true})],
                Map::new(),
            )
            .unwrap();
        assert_eq!(a.get("jid"), &json!("1"));
        assert!(a.flag("missing"));
        let a = SPEC.bind(vec![json!("1")], Map::new()).unwrap();
        assert!(!a.flag("missing"));
        assert_eq!(
            SPEC.bind(vec![], Map::new()).unwrap_err(),
            "lookup_jid() missing 1 required positional argument: 'jid'"
        );
        let mut k = Map::new();
        k.insert("nope".into(), json!(1));
        assert_eq!(
            SPEC.bind(vec![json!("1")], k).unwrap_err(),
            "lookup_jid() got an unexpected keyword argument 'nope'"
        );
        assert!(
            SPEC.bind(vec![json!(1), json!(2), json!(3)], Map::new())
                .unwrap_err()
                .contains("takes 2 positional")
        );
    }
}
