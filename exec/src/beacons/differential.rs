//! Each beacon's event data against what Salt 3007.8's beacon returned for the same config
//! and reading (`salt3007_events.json`, recorded as its `_recorded` key says): the same keys
//! in the same order and the same JSON types; equal values where the reading is the same.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{diskusage, load, log_beacon, memusage, network_info, ps, service, status};

fn recorded(name: &str) -> Value {
    let all: Value = serde_json::from_str(include_str!("salt3007_events.json")).unwrap();
    all[name].clone()
}

/// The value's shape: keys in order and JSON types, recursively.
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(shape).collect()),
        Value::Number(_) => json!("number"),
        Value::String(_) => json!("string"),
        Value::Bool(_) => json!("bool"),
        Value::Null => json!("null"),
    }
}

#[test]
fn thresholds_make_salts_data() {
    let got = diskusage::decide(
        &[json!({"/": "0%"})],
        &[diskusage::Usage {
            mount: "/".into(),
            percent: 36.7,
        }],
    );
    assert_eq!(Value::Array(got), recorded("diskusage"));
    let r = recorded("load");
    let now = [
        r[0]["1m"].as_f64().unwrap(),
        r[0]["5m"].as_f64().unwrap(),
        r[0]["15m"].as_f64().unwrap(),
    ];
    let cfg = [json!({"averages": {"1m": [1000, 2000], "5m": [1000, 2000], "15m": [1000, 2000]}})];
    assert_eq!(Value::Array(load::decide(&cfg, &mut None, now)), r);
    assert_eq!(
        Value::Array(memusage::decide(&[json!({"percent": "0%"})], 8.8)),
        recorded("memusage")
    );
}

#[test]
fn watchers_make_salts_data() {
    let cfg =
        [json!({"processes": {"python3.11": "running", "nosuchproc": "stopped", "other": "x"}})];
    assert_eq!(
        Value::Array(ps::decide(&cfg, &["systemd".into()])),
        recorded("ps")
    );
    let lo = recorded("network_info")[0]["network_info"].clone();
    let counters: network_info::Counters = lo
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect();
    let stats = BTreeMap::from([("lo".to_owned(), counters)]);
    let cfg = [json!({"interfaces": {"lo": {"type": "greater", "bytes_recv": 0}}})];
    assert_eq!(
        Value::Array(network_info::decide(&cfg, &stats)),
        recorded("network_info")
    );
    let got = service::decide(
        "nosuchservice",
        &Map::new(),
        &mut BTreeMap::new(),
        false,
        None,
        0.0,
    );
    assert_eq!(Value::Array(got), recorded("service"));
    let cfg = [
        json!({"file": "f"}),
        json!({"tags": {"sshd": {"regex": ".*sshd.*"}}}),
    ];
    assert_eq!(
        Value::Array(log_beacon::decide(&cfg, "x sshd[1]: ok\nkernel y\n")),
        recorded("log")
    );
    let st = json!([{"tag": status::isoformat(1_796_668_988_132_058),
                     "data": {"loadavg": status::pick(&json!({"1-min": 3.8, "5-min": 3.6}), &[json!("1-min")])}}]);
    assert_eq!(shape(&st), shape(&recorded("status")));
}
