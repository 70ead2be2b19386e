//! Binding a runner's positional and keyword arguments to its parameters, with Salt's rules.

use serde_json::{Map, Value};

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

    /// A parameter as seconds.
    pub fn secs(&self, name: &str) -> Option<f64> {
        match self.get(name) {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
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
