//! Replays Salt 3007.8's renders of the Jinja cases of issue #35 (data/jinja35, recorded by
//! record.py there over ../render/gen.py): Jinja value semantics (`callable`, `iterable`,
//! `sequence`, `odict`, `|int`, `d['get']`, pairs printed as tuples), the execution
//! functions formulas call from templates (`defaults.merge` changing the dict passed in,
//! `slsutil.serialize`, `match.*`, `grains.filter_by` with integer keys) and the version
//! grains. Each case renders as a template with the recording's grains, pillar and options;
//! the version grains are saltq's own (`compute_grains`), so the gates see what a saltq
//! minion reports.

use std::path::Path;
use std::sync::Arc;

use saltq_exec::CallContext;
use saltq_states::render::{RenderContext, render_template};
use serde_json::{Value, json};

fn recordings() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/jinja35/recordings.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn render_case(case: &Value, grains: &Value, pillar: &Value) -> Result<String, String> {
    let main = case["main"].as_str().unwrap();
    let text = case["files"][main].as_str().unwrap();
    let opts = json!({"id": "minion1", "renderer": "jinja|yaml", "file_client": "local"});
    let ctx = CallContext::local(grains.clone(), opts.clone());
    *ctx.pillar.write().unwrap() = pillar.clone();
    let rc = RenderContext {
        ctx,
        grains: grains.clone(),
        pillar: pillar.clone(),
        opts,
        saltenv: "base".into(),
        sls: String::new(),
        source: main.into(),
        extra: Default::default(),
    };
    render_template(text, "jinja", &rc).map_err(|e| e.message)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jinja_cases_render_as_salt() {
    let rec = recordings();
    let mut grains = rec["grains"].clone();
    // The version grains as a saltq minion computes them.
    let own = saltq_exec::compute_grains("minion1", None);
    for key in ["saltversion", "saltversioninfo", "pythonversion"] {
        grains[key] = own[key].clone();
    }
    let pillar = rec["pillar"].clone();
    let cases = rec["cases"].as_array().unwrap().clone();
    assert!(cases.len() >= 25, "{} cases", cases.len());
    let failures = tokio::task::spawn_blocking(move || {
        let mut failures = Vec::new();
        for case in &cases {
            let name = case["name"].as_str().unwrap();
            let got = render_case(case, &grains, &pillar);
            let want = case
                .get("text")
                .map(|t| Ok(t.as_str().unwrap().to_owned()))
                .unwrap_or_else(|| Err(case["error"].as_str().unwrap_or_default().to_owned()));
            if got != want {
                failures.push(format!("{name}:\n  salt: {want:?}\n  ours: {got:?}"));
            }
        }
        failures
    })
    .await
    .unwrap();
    assert!(
        failures.is_empty(),
        "{} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Called from Jinja, `defaults.merge` changes the dict it was given (Salt's is the same
/// object), also when that dict sits inside another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defaults_merge_changes_the_dict_passed_in() {
    let out = tokio::task::spawn_blocking(|| {
        let tpl = Arc::new(
            "{% set d = {'a': {'x': 1}} %}{% do salt['defaults.merge'](d.a, {'y': 2}) %}{{ d | tojson }}",
        );
        let case = json!({"main": "t", "files": {"t": *tpl}});
        render_case(&case, &json!({"id": "minion1"}), &json!({}))
    })
    .await
    .unwrap();
    assert_eq!(out.unwrap(), r#"{"a": {"x": 1, "y": 2}}"#);
}
