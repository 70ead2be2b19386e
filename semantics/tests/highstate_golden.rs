//! Renders every golden case of `tests/data/output/highstate/cases` (made by real
//! Salt 3007.8 with `tests/data/output/gen_highstate.py`, from state runs recorded
//! with `salt-call` and hand-made corners) under each recorded option set, and
//! compares byte for byte.

use std::fs;
use std::path::{Path, PathBuf};

use saltq_semantics::output::{HighstateOptions, OutputOptions, Outputter, render_with};
use serde_json::{Map, Value};

/// The directory holding one `<case>.json` per recorded or hand-made return.
fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/output/highstate/cases")
}

/// The `exclude`/`terse` keyword argument the salt CLI put in `opts["arg"]`
/// (the last dict marked `__kwarg__` wins), else the config key, else `[]`.
fn filter_list(opts: &Map<String, Value>, kwarg: &str, config_key: &str) -> Value {
    let cli_kwargs = opts
        .get("arg")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .rfind(|a| a.get("__kwarg__").is_some());
    cli_kwargs
        .and_then(|k| k.get(kwarg))
        .or_else(|| opts.get(config_key))
        .cloned()
        .unwrap_or_else(|| Value::Array(Vec::new()))
}

/// Salt's opts (only the keys set over the master's defaults) as saltq's options.
fn options(opts: &Map<String, Value>, case: &str) -> (OutputOptions, HighstateOptions) {
    let flag = |key: &str, default: bool| match opts.get(key) {
        None => default,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => HighstateOptions::parse_state_verbose(s),
        Some(other) => panic!("{case}: unexpected {key} {other}"),
    };
    for key in opts.keys() {
        assert!(
            [
                "color",
                "state_output",
                "state_verbose",
                "state_output_diff",
                "state_output_profile",
                "state_output_pct",
                "state_tabular",
                "state_compress_ids",
                "arg",
                "state_output_exclude",
                "state_output_terse",
            ]
            .contains(&key.as_str()),
            "{case}: option {key} is not understood by this test"
        );
    }
    let out = OutputOptions {
        color: flag("color", false),
        indent: None,
    };
    let defaults = HighstateOptions::default();
    let state = HighstateOptions {
        state_output: opts
            .get("state_output")
            .and_then(Value::as_str)
            .unwrap_or("full")
            .to_owned(),
        state_verbose: flag("state_verbose", defaults.state_verbose),
        state_output_diff: flag("state_output_diff", defaults.state_output_diff),
        state_output_profile: flag("state_output_profile", defaults.state_output_profile),
        state_output_pct: flag("state_output_pct", defaults.state_output_pct),
        state_tabular: flag("state_tabular", defaults.state_tabular),
        state_compress_ids: flag("state_compress_ids", defaults.state_compress_ids),
        filter_exclude: filter_list(opts, "exclude", "state_output_exclude"),
        filter_terse: filter_list(opts, "terse", "state_output_terse"),
    };
    (out, state)
}

#[test]
fn highstate_outputs_match_salt() {
    let mut paths: Vec<PathBuf> = fs::read_dir(cases_dir())
        .expect("highstate golden cases directory")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 40,
        "expected the highstate golden corpus, found {} cases",
        paths.len()
    );

    let mut passed = 0;
    let mut failures = Vec::new();
    let mut failed_cases = std::collections::BTreeMap::<String, usize>::new();
    for path in &paths {
        let case = path.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
        let text = fs::read_to_string(path).expect("readable golden file");
        let golden: Value = serde_json::from_str(&text).expect("golden file is JSON");
        let input = &golden["input"];
        let variants = golden["variants"].as_array().expect("variants");
        assert!(!variants.is_empty(), "{case}: no variants");
        for v in variants {
            let opts = v["opts"].as_object().expect("opts");
            let retcode = v["retcode"].as_i64().expect("retcode");
            let want = v["expected"].as_str().expect("expected output");
            let (out, state) = options(opts, case);
            let got = render_with(Outputter::Highstate, input, &out, &state, retcode);
            if got == want {
                passed += 1;
            } else {
                *failed_cases.entry(case.to_owned()).or_default() += 1;
                if failed_cases[case] > 1 {
                    continue;
                }
                failures.push(format!(
                    "{case} {}\n--- salt\n{want}\n--- saltq\n{got}",
                    Value::Object(opts.clone())
                ));
            }
        }
    }
    let differ: usize = failed_cases.values().sum();
    println!("{passed} highstate outputs match, {differ} differ");
    assert!(
        failures.is_empty(),
        "{differ} of {} highstate outputs differ ({failed_cases:?}); the first of each case:\n\n{}",
        passed + differ,
        failures.join("\n\n")
    );
}
