//! Renders every golden case of `tests/data/output/cases` (made by real Salt
//! 3007.8 with `tests/data/output/gen.py`) and compares byte for byte.

use std::fs;
use std::path::{Path, PathBuf};

use saltq_semantics::output::{OutputOptions, Outputter, render_with_retcode};
use serde_json::Value;

/// The directory holding one `<case>.json` per corpus entry.
fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/output/cases")
}

/// Splits a variant name such as `nested.color.retcode1` or `json.indent-1`
/// into the outputter, the options and the retcode.
fn parse_variant(variant: &str) -> (Outputter, OutputOptions, i64) {
    let mut parts = variant.split('.');
    let out: Outputter = parts
        .next()
        .and_then(|name| name.parse().ok())
        .unwrap_or_else(|| panic!("variant {variant:?} names no outputter"));
    let mut opts = OutputOptions::default();
    let mut retcode = 0;
    for part in parts {
        if part == "color" {
            opts.color = true;
        } else if let Some(n) = part.strip_prefix("retcode") {
            retcode = n
                .parse()
                .unwrap_or_else(|_| panic!("bad retcode in {variant:?}"));
        } else if let Some(n) = part.strip_prefix("indent") {
            opts.indent = Some(
                n.parse()
                    .unwrap_or_else(|_| panic!("bad indent in {variant:?}")),
            );
        } else {
            panic!("unknown part {part:?} in variant {variant:?}");
        }
    }
    (out, opts, retcode)
}

#[test]
fn golden_outputs_match_salt() {
    let mut paths: Vec<PathBuf> = fs::read_dir(cases_dir())
        .expect("golden cases directory")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 50,
        "expected the golden corpus, found {} cases",
        paths.len()
    );

    let mut passed = 0;
    let mut failures = Vec::new();
    for path in &paths {
        let case = path.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
        let text = fs::read_to_string(path).expect("readable golden file");
        let golden: Value = serde_json::from_str(&text).expect("golden file is JSON");
        let input = &golden["input"];
        let expected = golden["expected"].as_object().expect("expected outputs");
        assert!(!expected.is_empty(), "{case}: no expected outputs");
        for (variant, want) in expected {
            let want = want.as_str().expect("expected output is a string");
            let (out, opts, retcode) = parse_variant(variant);
            let got = render_with_retcode(out, input, &opts, retcode);
            if got == want {
                passed += 1;
            } else {
                failures.push(format!(
                    "{case} [{variant}]\n--- salt\n{want:?}\n--- saltq\n{got:?}"
                ));
            }
        }
    }
    println!("{passed} golden outputs match, {} differ", failures.len());
    assert!(
        failures.is_empty(),
        "{} of {} golden outputs differ:\n\n{}",
        failures.len(),
        passed + failures.len(),
        failures.join("\n\n")
    );
}
