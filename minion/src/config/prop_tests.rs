//! Property tests of the minion's config file (issue #15): arbitrary YAML text, and maps of
//! known keys (every key of [`RawConfig`], and returner keys) with values of any type, through
//! [`MinionConfig::load`]. Never a panic; an error names the file and one of the keys written.
//!
//! CI runs a small number of cases; `PROPTEST_CASES=20000 cargo test -p saltq-minion
//! config::prop_tests` runs more (README.md, "Fuzzing").

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_yaml_ng::{Mapping, Number, Value};

use super::{MinionConfig, RawConfig};

/// `default` cases, or `PROPTEST_CASES` when set (for longer runs).
fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    }
}

/// Every key `RawConfig` knows, as serde lists them when it refuses an unknown one.
fn keys() -> Vec<String> {
    let err = serde_yaml_ng::from_str::<RawConfig>("zz_not_a_key: 1")
        .expect_err("an unknown key is refused")
        .to_string();
    let list = err
        .split("expected one of")
        .nth(1)
        .expect("serde lists the keys");
    let keys: Vec<String> = list
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    assert!(keys.len() > 25, "{err}");
    keys
}

/// Any YAML value: scalars of every type (huge, negative, not-a-number), lists and maps.
pub(crate) fn yaml_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        any::<u64>().prop_map(|n| Value::Number(n.into())),
        any::<f64>().prop_map(|f| Value::Number(Number::from(f))),
        prop::sample::select(vec![
            0.0,
            -1.0,
            1e-300,
            1e300,
            -1e300,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1.8e19,
        ])
        .prop_map(|f| Value::Number(Number::from(f))),
        any::<String>().prop_map(Value::String),
        prop::sample::select(vec![
            "",
            "0",
            "-1",
            "quic",
            "h2",
            "::1",
            "127.0.0.1",
            "[::1]:4506",
            "m:0",
            "/abs",
            "rel/path",
            "warning",
            "str",
            "failover",
            "func",
            "md5",
            "(",
            "*",
            "a b",
            "mysql",
            "mysql,redis",
        ])
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Sequence),
            prop::collection::vec((inner.clone(), inner), 0..4)
                .prop_map(|kv| Value::Mapping(kv.into_iter().collect::<Mapping>())),
        ]
    })
}

/// A key of the config file: a known one, a returner option, or anything.
fn key(known: Vec<String>) -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(known),
        1 => prop::sample::select(vec![
            "mysql.host", "mysql.port", "returner.pgjsonb.host", "redis.db", "rawfile_json.filename",
            "webhook.url", "syslog.level", "alt.mysql.host", "mysql.hots",
        ])
        .prop_map(str::to_owned),
        1 => "[a-z_.]{1,12}",
    ]
}

/// Writes `text` as `DIR/minion` and loads it.
fn load_text(text: &str) -> (Result<MinionConfig, String>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("minion");
    std::fs::write(&file, text).expect("write config");
    let r = MinionConfig::load(dir.path(), None).map_err(|e| e.to_string());
    (r, file.display().to_string())
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn known_keys_with_values_of_any_type(
        entries in prop::collection::vec((key(keys()), yaml_value()), 1..4),
    ) {
        let map: Mapping = entries
            .iter()
            .map(|(k, v)| (Value::String(k.clone()), v.clone()))
            .collect();
        // Some generated maps (a map as a key) have no YAML text: nothing to load then.
        let Ok(text) = serde_yaml_ng::to_string(&Value::Mapping(map)) else {
            return Ok(());
        };
        let (r, file) = load_text(&text);
        if let Err(msg) = r {
            prop_assert!(msg.contains(&file), "{} does not name the file:\n{}", msg, text);
            let named = entries.iter().any(|(k, _)| msg.contains(k.as_str()));
            prop_assert!(named, "{} names none of the keys written:\n{}", msg, text);
        }
    }

    #[test]
    fn arbitrary_text(text in prop_oneof![any::<String>(), "[a-z_:\\[\\]{}, \n'\"&*!|>#-]{0,40}"]) {
        let (r, file) = load_text(&text);
        if let Err(msg) = r {
            prop_assert!(msg.contains(&file), "{}", msg);
        }
    }
}

/// Regression (found by `known_keys_with_values_of_any_type`): a finite number of seconds
/// too large for a `Duration` panicked the minion at start instead of naming the key.
#[test]
fn regression_huge_seconds_name_the_key() {
    for key in ["idle_timeout", "keep_alive", "acceptance_wait_time"] {
        // YAML 1.1 floats, as Salt's loader reads them (`1e300` is a string there).
        for v in ["1.0e+300", "1.8e+19"] {
            let (r, _) = load_text(&format!("id: m1\n{key}: {v}\n"));
            let msg = r.expect_err(key);
            assert!(
                msg.contains(&format!("key \"{key}\"")) && msg.contains("seconds"),
                "{msg}"
            );
        }
    }
}
