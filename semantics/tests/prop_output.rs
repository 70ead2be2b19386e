//! Property tests of the outputters (issue #15): every outputter on arbitrary JSON values and
//! on arbitrary state-run-shaped data, with and without colour, any indent and any
//! `highstate` options. Nothing panics; the output is empty or ends in one newline after
//! non-blank text; `json` reads back as the data; the output of every outputter is bounded
//! by the data's size and depth; data nested as deep as the wire allows prints.
//!
//! CI runs a small number of cases; `PROPTEST_CASES=20000 cargo test -p saltq-semantics
//! --test prop_output` runs more (README.md, "Fuzzing").

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use saltq_semantics::output::{HighstateOptions, OutputOptions, Outputter, render_with};
use serde_json::{Map, Number, Value, json};

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

/// Strings as returns hold them: anything, with newlines, tabs, control and wide characters.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => any::<String>(),
        2 => "[a-z \n\t:'\"\\\\-]{0,12}",
        1 => prop::sample::select(vec!["", " ", "\n", "True", "None", "yes", "~", "- a", "{}", "1.0", "\u{85}", "\u{2028}", "é\u{301}", "\u{1F600}"])
            .prop_map(str::to_owned),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        prop::sample::select(vec![0.0, -0.0, 1e16, 1e-7, 0.1, 1.5e300])
            .prop_map(|f| Value::Number(Number::from_f64(f).unwrap())),
    ]
}

/// Any JSON value, nested a few levels.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A state run's return as `state.apply` gives it, with fields of any type now and then.
fn state_run() -> impl Strategy<Value = Value> {
    let field =
        |good: BoxedStrategy<Value>| prop_oneof![8 => good, 1 => value(), 1 => Just(Value::Null)];
    let state = (
        field(prop_oneof![Just(json!(true)), Just(json!(false)), Just(Value::Null)].boxed()),
        field(prop_oneof![Just(json!({})), value()].boxed()),
        field(text().prop_map(Value::String).boxed()),
        field(any::<u16>().prop_map(|n| json!(n)).boxed()),
        field(any::<f32>().prop_map(|f| json!(f64::from(f).abs())).boxed()),
        field(Just(json!("10:00:00.000000")).boxed()),
        any::<bool>(),
    )
        .prop_map(
            |(result, changes, comment, run_num, duration, start, partial)| {
                let mut m = Map::new();
                m.insert("result".into(), result);
                m.insert("comment".into(), comment);
                m.insert("__run_num__".into(), run_num);
                m.insert("duration".into(), duration);
                m.insert("start_time".into(), start);
                m.insert("name".into(), json!("n"));
                if !partial {
                    m.insert("changes".into(), changes);
                    m.insert("__id__".into(), json!("id"));
                    m.insert("__sls__".into(), json!("sls"));
                }
                Value::Object(m)
            },
        );
    let key = prop_oneof![
        4 => ("[a-z]{1,4}", "[a-z]{1,4}", "[a-z/]{1,6}", "[a-z]{1,6}")
            .prop_map(|(m, i, n, f)| format!("{m}_|-{i}_|-{n}_|-{f}")),
        1 => text(),
    ];
    let run = prop_oneof![
        6 => prop::collection::vec((key, state), 0..5)
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        1 => value(),
        1 => prop::collection::vec(text().prop_map(Value::String), 0..3).prop_map(Value::Array),
    ];
    prop::collection::vec(("[a-z0-9]{1,6}", run), 1..3)
        .prop_map(|kv| Value::Object(kv.into_iter().collect()))
}

fn highstate_options() -> impl Strategy<Value = HighstateOptions> {
    (
        prop_oneof![
            prop::sample::select(vec![
                "full",
                "terse",
                "mixed",
                "changes",
                "filter",
                "full_id",
                "terse_id",
                "mixed_id",
                "changes_id",
                "filter_id",
                "TERSE",
                "",
            ])
            .prop_map(str::to_owned),
            text(),
        ],
        any::<[bool; 6]>(),
        prop_oneof![Just(json!("True,None")), Just(json!(["False"])), value()],
        prop_oneof![Just(json!("True")), Just(json!({})), value()],
    )
        .prop_map(
            |(state_output, b, filter_exclude, filter_terse)| HighstateOptions {
                state_output,
                state_verbose: b[0],
                state_output_diff: b[1],
                state_output_profile: b[2],
                state_output_pct: b[3],
                state_tabular: b[4],
                state_compress_ids: b[5],
                filter_exclude,
                filter_terse,
            },
        )
}

fn indent() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![
        Just(None),
        (-3i64..12).prop_map(Some),
        any::<i64>().prop_map(Some)
    ]
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Renders `data` with every outputter and checks what holds of any output.
fn check_all(
    data: &Value,
    opts: &OutputOptions,
    state: &HighstateOptions,
    retcode: i64,
) -> Result<(), TestCaseError> {
    // Each character may print as `\U0001f600` (ten bytes) in `repr`, each level adds an
    // indent per line, and colour adds escapes per line: a generous linear bound in the
    // data's size times its depth (and `--out-indent`, at most 1024 per level), which an
    // exponential or quadratic blow-up would pass.
    let size = serde_json::to_string(data).unwrap().len() + 1;
    let indent = opts.indent.map_or(4, |i| i.clamp(0, 1024)) as usize;
    let bound = (64 + indent) * size * (depth(data) + 2) + 4096;
    for out in Outputter::ALL {
        let text = render_with(out, data, opts, state, retcode);
        prop_assert!(
            text.len() <= bound,
            "{} printed {} bytes for {} bytes of data",
            out,
            text.len(),
            size
        );
        if out == Outputter::Quiet {
            prop_assert_eq!(&text, "");
        }
        if !text.is_empty() {
            prop_assert!(text.ends_with('\n'), "{}: {:?}", out, text);
            let body = &text[..text.len() - 1];
            prop_assert!(!body.trim().is_empty(), "{}: blank output {:?}", out, text);
        }
        if out == Outputter::Json && opts.indent.is_none_or(|i| (0..=1024).contains(&i)) {
            let back: Value = serde_json::from_str(&text).map_err(|e| {
                TestCaseError::fail(format!("json output does not parse ({e}): {text}"))
            })?;
            prop_assert_eq!(&back, data);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn every_outputter_on_any_value(data in value(), color in any::<bool>(), indent in indent(), retcode in any::<i64>()) {
        let opts = OutputOptions { color, indent };
        check_all(&data, &opts, &HighstateOptions::default(), retcode)?;
        // The salt CLI hands each minion's return under its id.
        check_all(&json!({"minion1": data}), &opts, &HighstateOptions::default(), retcode)?;
    }

    #[test]
    fn every_outputter_on_state_runs(data in state_run(), color in any::<bool>(), indent in indent(), state in highstate_options()) {
        check_all(&data, &OutputOptions { color, indent }, &state, 0)?;
    }
}

/// Data nested as deep as the wire carries it (prost refuses more than 100 levels; the job
/// cache's JSON reader 128) prints with every outputter.
#[test]
fn deepest_data_prints() {
    let mut list = json!("leaf");
    let mut dict = json!("leaf");
    for _ in 0..128 {
        list = json!([list, 1]);
        dict = json!({"k": dict, "n": null});
    }
    let state = HighstateOptions::default();
    for data in [json!({"m": list}), json!({"m": dict})] {
        for color in [false, true] {
            for out in Outputter::ALL {
                let text = render_with(
                    out,
                    &data,
                    &OutputOptions {
                        color,
                        indent: None,
                    },
                    &state,
                    0,
                );
                assert!(out == Outputter::Quiet || text.contains("leaf"), "{out}");
            }
        }
    }
}
