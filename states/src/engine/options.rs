//! The small decisions every `state.*` function makes before compiling: test mode and the
//! pillar override. (The SLS list is `compile::calls::split_mods`, the retcode of a finished
//! run `run::retcode`.)

use saltq_semantics::python::is_true;
use serde_json::{Map, Value};

/// Salt's `EX_PILLAR_FAILURE`: the pillar carries render errors.
pub const EX_PILLAR_FAILURE: i32 = 5;

/// Salt's `_get_test_value`: `test=False` forces a real run; otherwise a true `test` keyword
/// (any case), `test: True` in the grains or pillar, or the `test` option turns test mode on.
/// `test=True` (or any value but `None` and `False`) is test mode.
pub fn test_value(
    test: &Value,
    kwargs: &Map<String, Value>,
    grains: &Value,
    pillar: &Value,
    opts: &Value,
) -> bool {
    match test {
        Value::Bool(false) => false,
        Value::Null => {
            let keyword = kwargs
                .iter()
                .any(|(k, v)| k.to_lowercase() == "test" && is_true(v));
            // config.get("test", omit_opts=True): the grains first, then the pillar.
            let configured = grains
                .get("test")
                .or_else(|| pillar.get("test"))
                .is_some_and(|v| v == &Value::Bool(true));
            keyword || configured || opts.get("test").is_some_and(is_true)
        }
        _ => true,
    }
}

/// The pillar a run sees: the minion's, with `pillar=` merged over it (maps recursively, the
/// override winning; lists replaced, or concatenated when `pillar_merge_lists` is set).
/// Salt refuses an override that is not a dict with its message.
pub fn merge_pillar(pillar: Value, over: &Value, merge_lists: bool) -> Result<Value, String> {
    match over {
        Value::Null => Ok(pillar),
        Value::Object(over) => {
            let mut base = match pillar {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            saltq_exec::dict_update(&mut base, over, merge_lists);
            Ok(Value::Object(base))
        }
        _ => Err(
            "Pillar data must be formatted as a dictionary, unless pillar_enc is specified.".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kw(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn test_mode_as_salt_decides_it() {
        let none = json!({});
        assert!(!test_value(
            &Value::Null,
            &kw(json!({})),
            &none,
            &none,
            &none
        ));
        assert!(test_value(
            &json!(true),
            &kw(json!({})),
            &none,
            &none,
            &none
        ));
        assert!(!test_value(
            &json!(false),
            &kw(json!({})),
            &none,
            &none,
            &json!({"test": true})
        ));
        assert!(test_value(
            &Value::Null,
            &kw(json!({"TEST": "True"})),
            &none,
            &none,
            &none
        ));
        assert!(test_value(
            &Value::Null,
            &kw(json!({})),
            &json!({"test": true}),
            &none,
            &none
        ));
        assert!(test_value(
            &Value::Null,
            &kw(json!({})),
            &none,
            &json!({"test": true}),
            &none
        ));
        assert!(!test_value(
            &Value::Null,
            &kw(json!({})),
            &none,
            &json!({"test": "yes"}),
            &none
        ));
        assert!(test_value(
            &Value::Null,
            &kw(json!({})),
            &none,
            &none,
            &json!({"test": true})
        ));
    }

    #[test]
    fn pillar_override_merges_deep_and_refuses_non_dicts() {
        let p = json!({"a": {"b": 1, "c": [1]}, "d": 2});
        let merged = merge_pillar(p.clone(), &json!({"a": {"b": 9, "c": [2]}}), false).unwrap();
        assert_eq!(merged, json!({"a": {"b": 9, "c": [2]}, "d": 2}));
        let merged = merge_pillar(p.clone(), &json!({"a": {"c": [2]}}), true).unwrap();
        assert_eq!(merged["a"]["c"], json!([1, 2]));
        assert_eq!(
            merge_pillar(p, &json!("x"), false).unwrap_err(),
            "Pillar data must be formatted as a dictionary, unless pillar_enc is specified."
        );
    }
}
