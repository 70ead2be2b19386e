//! Python's `type(v).__name__` for the values `json.loads` gives, as Salt's messages print it.

use serde_json::Value;

/// `type(v).__name__`: `NoneType`, `bool`, `int`, `float`, `str`, `list` or `dict`.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_as_python() {
        for (v, want) in [
            (json!(null), "NoneType"),
            (json!(true), "bool"),
            (json!(1), "int"),
            (json!(u64::MAX), "int"),
            (json!(1.0), "float"),
            (json!("x"), "str"),
            (json!([]), "list"),
            (json!({}), "dict"),
        ] {
            assert_eq!(type_name(&v), want, "{v}");
        }
    }
}
