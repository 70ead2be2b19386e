//! Public formulas (ntp, nginx, template, openssh; read from ../shared/third-party/formulas,
//! each with its licence)
//! through saltq's engine as a minion runs it — `state.show_sls` and `state.show_low_sls`
//! over the formula as `salt://` — compared with Salt 3007.8's answers for the same grains and
//! pillars (data/formulas/show.json, made by data/formulas/gen_show.py).

mod common;

use std::sync::Arc;

use saltq_exec::{CallContext, PubInfo};
use saltq_states::Engine;
use serde_json::{Map, Value, json};

use common::{DirFiles, data_dir, third_party};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn formulas_compile_as_salt_compiles_them() {
    let dir = data_dir("formulas");
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("show.json")).unwrap()).unwrap();
    let grains = recorded["grains"].clone();
    let cases = recorded["cases"].as_array().unwrap();
    let mut mismatches = Vec::new();
    for case in cases {
        let formula = case["formula"].as_str().unwrap();
        let root = tempfile::tempdir().unwrap();
        let formula_dir = third_party(&format!("formulas/{formula}"));
        std::os::unix::fs::symlink(formula_dir, root.path().join("base")).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let opts = json!({
            "id": "minion1",
            "__cli": "salt-minion",
            "cachedir": cache.path(),
        });
        let ctx = CallContext::local(grains.clone(), opts)
            .with_files(Arc::new(DirFiles {
                root: root.path().to_path_buf(),
            }))
            .with_states(Arc::new(Engine::new()));
        let sls = case["sls"].as_str().unwrap();
        for fun in ["show_sls", "show_low_sls"] {
            let mut kwargs = Map::new();
            kwargs.insert("pillar".into(), case["pillar"].clone());
            let out = saltq_exec::call(
                &ctx,
                &format!("state.{fun}"),
                vec![json!(sls)],
                kwargs,
                &PubInfo::default(),
            )
            .await;
            if out.ret != case[fun] {
                mismatches.push(format!(
                    "{formula} {sls} (pillar {}) state.{fun}:\n  Salt:  {}\n  saltq: {}",
                    case["pillar_name"], case[fun], out.ret
                ));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} answers differ from Salt's:\n{}",
        mismatches.len(),
        cases.len() * 2,
        mismatches.join("\n")
    );
}
