//! Conversions between JSON values (what saltq works with) and `google.protobuf.Value`
//! (what the wire carries, so grpcurl shows arguments and returns as plain JSON).
//!
//! protobuf numbers are doubles: an integral double within i64 range comes back as an integer,
//! so `1` round-trips as `1`, and `1.0` also comes back as `1`.

use prost_types::value::Kind;
use prost_types::{ListValue, Struct, Value};
use serde_json::{Map, Number, Value as Json};

/// JSON to protobuf `Value`.
pub fn to_prost(v: &Json) -> Value {
    let kind = match v {
        Json::Null => Kind::NullValue(0),
        Json::Bool(b) => Kind::BoolValue(*b),
        Json::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        Json::String(s) => Kind::StringValue(s.clone()),
        Json::Array(a) => Kind::ListValue(ListValue {
            values: a.iter().map(to_prost).collect(),
        }),
        Json::Object(m) => Kind::StructValue(map_to_struct(m)),
    };
    Value { kind: Some(kind) }
}

/// protobuf `Value` to JSON.
pub fn from_prost(v: &Value) -> Json {
    match &v.kind {
        None | Some(Kind::NullValue(_)) => Json::Null,
        Some(Kind::BoolValue(b)) => Json::Bool(*b),
        Some(Kind::NumberValue(n)) => number(*n),
        Some(Kind::StringValue(s)) => Json::String(s.clone()),
        Some(Kind::ListValue(l)) => Json::Array(l.values.iter().map(from_prost).collect()),
        Some(Kind::StructValue(s)) => Json::Object(struct_to_map(s)),
    }
}

/// prost's recursion limit: a request with messages nested more than this deep below it (a
/// field of the request is level 1) does not decode, and the master answers INVALID_ARGUMENT.
pub const MAX_NESTING: usize = 100;

/// How many protobuf messages deep `v` goes: the `Value` itself, then per list its `ListValue`
/// and the element `Value`s, per object its `Struct`, the map entry and the field `Value`s.
/// Without recursion: it is asked of values that may be too deep for it.
pub fn nesting(v: &Value) -> usize {
    let mut deepest = 0;
    let mut todo = vec![(v, 1)];
    while let Some((v, depth)) = todo.pop() {
        deepest = deepest.max(depth);
        match &v.kind {
            Some(Kind::ListValue(l)) => {
                deepest = deepest.max(depth + 1);
                todo.extend(l.values.iter().map(|x| (x, depth + 2)));
            }
            Some(Kind::StructValue(s)) => {
                deepest = deepest.max(depth + 1);
                todo.extend(s.fields.values().map(|x| (x, depth + 3)));
            }
            _ => {}
        }
    }
    deepest
}

fn number(n: f64) -> Json {
    if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        Json::Number(Number::from(n as i64))
    } else {
        Number::from_f64(n).map_or(Json::Null, Json::Number)
    }
}

/// JSON object to protobuf `Struct`.
pub fn map_to_struct(m: &Map<String, Json>) -> Struct {
    Struct {
        fields: m.iter().map(|(k, v)| (k.clone(), to_prost(v))).collect(),
    }
}

/// protobuf `Struct` to JSON object.
pub fn struct_to_map(s: &Struct) -> Map<String, Json> {
    // BTreeMap order: protobuf maps carry no order, so keys come back sorted.
    s.fields
        .iter()
        .map(|(k, v)| (k.clone(), from_prost(v)))
        .collect()
}

/// An optional `Struct` to a JSON object (empty when absent).
pub fn opt_struct(s: Option<&Struct>) -> Map<String, Json> {
    s.map(struct_to_map).unwrap_or_default()
}

/// JSON to `Struct`: objects map directly, anything else is an empty struct.
pub fn json_to_struct(v: &Json) -> Struct {
    match v {
        Json::Object(m) => map_to_struct(m),
        _ => Struct::default(),
    }
}

/// A JSON object as the bytes of an ordered field (`Welcome.pillar_json`,
/// `GetPillarResponse.pillar_json`): UTF-8 JSON whose keys keep their order, which a `Struct`
/// loses (its keys come back sorted). Anything but an object is sent as `{}`.
pub fn to_ordered_json(v: &Json) -> Vec<u8> {
    match v {
        Json::Object(_) => serde_json::to_vec(v).unwrap_or_else(|_| b"{}".to_vec()),
        _ => b"{}".to_vec(),
    }
}

/// The object carried by an ordered field when it is set, else by the `Struct` beside it (a
/// peer that does not send the ordered field); the error says what is wrong with the bytes.
pub fn from_ordered_json(json: &[u8], s: Option<&Struct>) -> Result<Map<String, Json>, String> {
    if json.is_empty() {
        return Ok(opt_struct(s));
    }
    match serde_json::from_slice::<Json>(json) {
        Ok(Json::Object(m)) => Ok(m),
        Ok(other) => Err(format!(
            "the ordered JSON field holds a {} where an object was expected",
            match other {
                Json::Array(_) => "list",
                Json::String(_) => "string",
                Json::Number(_) => "number",
                Json::Bool(_) => "boolean",
                _ => "null",
            }
        )),
        Err(e) => Err(format!("the ordered JSON field is not valid JSON: {e}")),
    }
}

/// A list of JSON values to `ListValue`.
pub fn to_list(v: &[Json]) -> ListValue {
    ListValue {
        values: v.iter().map(to_prost).collect(),
    }
}

/// `ListValue` to a JSON array.
pub fn from_list(l: Option<&ListValue>) -> Vec<Json> {
    l.map(|l| l.values.iter().map(from_prost).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `levels` lists (or objects) around a string.
    fn deep(levels: usize, object: bool) -> Json {
        let mut v = Json::String("bottom".into());
        for _ in 0..levels {
            v = if object {
                serde_json::json!({ "k": v })
            } else {
                serde_json::json!([v])
            };
        }
        v
    }

    #[test]
    fn nesting_counts_what_prost_counts() {
        use prost::Message;
        use saltq_proto::v1::ReturnRequest;
        for object in [false, true] {
            for levels in 0..60 {
                let v = to_prost(&deep(levels, object));
                let req = ReturnRequest {
                    r#return: Some(v.clone()),
                    ..Default::default()
                };
                let decodes = ReturnRequest::decode(req.encode_to_vec().as_slice()).is_ok();
                // The request itself does not count, the return value is the first level.
                let fits = nesting(&v) <= MAX_NESTING;
                assert_eq!(decodes, fits, "{levels} levels (objects: {object})");
            }
        }
        assert_eq!(nesting(&to_prost(&Json::Null)), 1);
        assert_eq!(nesting(&to_prost(&serde_json::json!([]))), 2);
        assert_eq!(nesting(&to_prost(&serde_json::json!([1]))), 3);
        assert_eq!(nesting(&to_prost(&serde_json::json!({"a": 1}))), 4);
    }
    use serde_json::json;

    #[test]
    fn the_ordered_field_keeps_key_order_and_falls_back_to_the_struct() {
        let v: Json =
            serde_json::from_str(r#"{"zeta": 1, "alpha": {"z": [2], "a": null}, "mid": "x"}"#)
                .unwrap();
        let bytes = to_ordered_json(&v);
        let back = from_ordered_json(&bytes, None).unwrap();
        assert_eq!(back.keys().collect::<Vec<_>>(), ["zeta", "alpha", "mid"]);
        assert_eq!(
            back["alpha"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["z", "a"]
        );
        assert_eq!(Json::Object(back), v);
        // An older peer sends only the Struct: its (sorted) keys are taken.
        let s = json_to_struct(&v);
        let old = from_ordered_json(b"", Some(&s)).unwrap();
        assert_eq!(old.keys().collect::<Vec<_>>(), ["alpha", "mid", "zeta"]);
        assert_eq!(from_ordered_json(b"", None).unwrap(), Map::new());
        assert_eq!(to_ordered_json(&json!([1])), b"{}");
        let e = from_ordered_json(b"[1]", None).unwrap_err();
        assert_eq!(
            e,
            "the ordered JSON field holds a list where an object was expected"
        );
        let e = from_ordered_json(b"{nope", None).unwrap_err();
        assert!(
            e.starts_with("the ordered JSON field is not valid JSON: "),
            "{e}"
        );
    }

    #[test]
    fn round_trip_keeps_json_shapes() {
        for v in [
            json!(null),
            json!(true),
            json!(3),
            json!(-7),
            json!(1.5),
            json!("hi"),
            json!([1, "a", [null]]),
            json!({"a": {"b": [1, 2, {"c": false}]}}),
        ] {
            assert_eq!(from_prost(&to_prost(&v)), v, "{v}");
        }
    }
}
