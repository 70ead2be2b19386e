//! Property tests of the master's pillar (issues #15, #33): arbitrary `top.sls` and pillar
//! files, as text and as generated YAML, through [`compile`]. Never a panic; the pillar is
//! always a mapping, and what failed is in its `_errors` as strings (Salt's answer).
//!
//! CI runs a small number of cases; `PROPTEST_CASES=5000 cargo test -p saltq-master
//! pillar::prop_tests` runs more (README.md, "Fuzzing").

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::json;
use serde_yaml_ng::{Mapping, Value};

use super::{PillarConfig, compile};
use crate::config::prop_tests::yaml_value;

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

/// Regression (found by `any_top_and_pillar_files`): a pillar file holding a list or a
/// string replaced the whole pillar with it (GetPillar then sent an empty one). Salt refuses
/// it: "SLS 'x' does not render to a dictionary"; data that is false in Python adds nothing.
#[test]
fn regression_a_pillar_file_that_is_not_a_mapping_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::write(root.join("top.sls"), "base:\n  '*': [a, b]\n").unwrap();
    std::fs::write(root.join("a.sls"), "x: 1\n").unwrap();
    for (b, ok) in [
        ("[]", true),
        ("''", true),
        ("~", true),
        ("- x\n", false),
        ("text", false),
    ] {
        std::fs::write(root.join("b.sls"), b).unwrap();
        let r = compile(
            &PillarConfig::with_roots(&[root.to_path_buf()]),
            "m1",
            &json!({}),
        );
        if ok {
            assert_eq!(r.expect(b), json!({"x": 1}));
        } else {
            // Salt's answer: the other file kept, the error in `_errors`.
            assert_eq!(
                r.expect(b),
                json!({"x": 1, "_errors": ["SLS 'b' does not render to a dictionary"]})
            );
        }
    }
}

/// A target as a top file holds it, and a `match:` type now and then.
fn top_entry() -> impl Strategy<Value = (String, Vec<Value>)> {
    let tgt = prop_oneof![
        prop::sample::select(vec![
            "*",
            "web*",
            "m1",
            "os:Debian",
            "G@os:Debian and m*",
            "E@m[0-9]",
            "L@m1,m2",
            "",
            "not",
            "( m1",
            "S@10.0.0.0/8",
            "N@x",
            "R@x",
            "m1,m2",
        ])
        .prop_map(str::to_owned),
        any::<String>(),
    ];
    let name = prop_oneof![
        prop::sample::select(vec!["common", "users.web", "missing", "../escape", "a.b.c"])
            .prop_map(|s| Value::String(s.to_owned())),
        prop::sample::select(vec![
            "glob",
            "pcre",
            "grain",
            "list",
            "compound",
            "ipcidr",
            "pillar",
            "nodegroup",
            "bogus",
            "",
        ])
        .prop_map(|m| Value::Mapping(
            [(Value::from("match"), Value::from(m))]
                .into_iter()
                .collect()
        )),
        yaml_value(),
    ];
    (tgt, prop::collection::vec(name, 0..4))
}

fn top_file() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(top_entry(), 0..4).prop_map(|entries| {
            let base: Mapping = entries
                .into_iter()
                .map(|(t, names)| (Value::String(t), Value::Sequence(names)))
                .collect();
            let top: Mapping = [(Value::from("base"), Value::Mapping(base))].into_iter().collect();
            serde_yaml_ng::to_string(&top).unwrap_or_default()
        }),
        1 => yaml_value().prop_map(|v| serde_yaml_ng::to_string(&v).unwrap_or_default()),
        1 => any::<String>(),
        1 => "[a-z:\\[\\]{}, \n'\"&*!|>#-]{0,40}",
    ]
}

fn pillar_file() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => yaml_value().prop_map(|v| serde_yaml_ng::to_string(&v).unwrap_or_default()),
        1 => any::<String>(),
        1 => "[a-z:\\[\\]{}, \n'\"&*!|>#-]{0,40}",
    ]
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn any_top_and_pillar_files(top in top_file(), common in pillar_file(), web in pillar_file()) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("users")).unwrap();
        std::fs::write(root.join("top.sls"), &top).unwrap();
        std::fs::write(root.join("common.sls"), &common).unwrap();
        std::fs::write(root.join("users/web.sls"), &web).unwrap();
        let grains = json!({"os": "Debian", "ipv4": ["10.0.0.1"]});
        let p = compile(&PillarConfig::with_roots(&[root.to_path_buf()]), "m1", &grains)
            .expect("compile never fails as a whole");
        prop_assert!(p.is_object(), "the pillar is not a mapping: {}", p);
        if let Some(errors) = p.get("_errors") {
            let errors = errors.as_array().expect("_errors is a list");
            prop_assert!(errors.iter().all(serde_json::Value::is_string), "{}", p);
        }
    }
}

/// Regression (found by `any_top_and_pillar_files`): a missing pillar's name was printed
/// escaped (`"A\\ "`), so the name as written in the top file was not in the message.
#[test]
fn regression_a_missing_pillar_is_named_as_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("top.sls"), "base:\n  m1:\n    - 'A\\ '\n").unwrap();
    let p = compile(
        &PillarConfig::with_roots(&[dir.path().to_path_buf()]),
        "m1",
        &json!({}),
    )
    .unwrap();
    let e = p["_errors"][0].as_str().unwrap_or_default();
    assert!(e.contains("Specified SLS 'A\\ '"), "{e}");
}
