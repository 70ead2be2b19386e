//! PPAs replayed against Salt 3007.8's answers (`data/pkgrepo_ppa/cases.json`, recorded by
//! `data/pkgrepo_ppa/gen.py`) on Debian grains (Salt cannot parse `ppa:` there) and on
//! Ubuntu grains (the PPA's `ppa.launchpad.net` line). Reads the host's apt sources; writes
//! nothing (each configuring step fails before writing, as Salt's did).
//!
//! `u02_ppa` is not run: on Ubuntu grains saltq, like Salt, runs `apt-add-repository -y
//! ppa:saltq/test` where it is installed, which goes to Launchpad over the network (tests
//! stay on loopback); Salt's recorded answer is its failure without a network.

#[path = "support/mod.rs"]
mod common;

use saltq_exec::CallContext;
use serde_json::{Map, Value, json};

/// The steps that are not run, with the reason above.
const NOT_RUN: &[&str] = &["u02_ppa"];

#[tokio::test]
async fn pkgrepo_ppa_matches_salt() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pkgrepo_ppa/cases.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rec: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    let mut checked = 0;
    for phase in rec["phases"].as_array().into_iter().flatten() {
        let mut grains = match &phase["grains"] {
            Value::Null => json!({"os": "Debian", "os_family": "Debian", "oscodename": "bookworm"}),
            g => g.clone(),
        };
        grains["id"] = json!("labminion");
        let ctx = CallContext::local(grains, json!({"id": "labminion"}));
        for step in phase["steps"].as_array().into_iter().flatten() {
            let id = step["id"].as_str().unwrap_or_default();
            if NOT_RUN.contains(&id) {
                continue;
            }
            let fun = step["fun"].as_str().unwrap_or_default();
            let test = step["test"].as_bool().unwrap_or(false);
            let got = if step["kind"] == "exec" {
                let kwargs: Map<String, Value> = step["args"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|kv| (kv[0].as_str().unwrap_or_default().to_owned(), kv[1].clone()))
                    .collect();
                common::exec_as_salt_call(&ctx, fun, kwargs).await
            } else {
                // gen.py's state id: the name given, else `saltq-ppa`.
                common::as_salt(
                    &common::run_state(&ctx, fun, "saltq-ppa", &step["args"], test).await,
                )
            };
            checked += 1;
            if got != step["ret"] {
                failures.push(format!(
                    "{id} (test={test}):\n  salt:  {}\n  saltq: {got}",
                    step["ret"]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(checked, 9);
}
