//! `grains.*` states replayed against Salt 3007.8 (`data/grains/cases.json`, recorded by
//! `data/grains/gen.py`): a sequence of exists/present/list_present/list_absent/append/
//! absent on a grains file of the test's own (`grains_file`), each return compared with
//! Salt's and the grains file Salt left compared as YAML data.

mod sysrec;

use serde_json::{Map, Value, json};

#[tokio::test]
async fn grains_states_match_salt() {
    let rec = sysrec::load("grains");
    let dir = sysrec::scratch(&rec);
    let file = dir.path().join("conf/grains");
    let initial: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&file).expect("grains file"))
            .expect("grains YAML");
    let grains: Map<String, Value> = initial.as_object().cloned().unwrap_or_default();
    let ctx = sysrec::ctx_for(
        &rec,
        dir.path(),
        grains,
        json!({"grains_file": file.display().to_string()}),
    );
    // The grains file's text is compared as data below: Salt's PyYAML and saltq's YAML
    // writer lay the same data out differently (quoting, indentation).
    let mut rec_steps = rec.clone();
    rec_steps["files"] = json!({});
    let failures = sysrec::replay(&rec_steps, &ctx, dir.path(), &[]).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let salt: Value = serde_yaml_ng::from_str(rec["files"]["conf/grains"].as_str().unwrap_or(""))
        .expect("Salt's grains file");
    let ours: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&file).expect("grains"))
        .expect("saltq's grains file");
    assert_eq!(ours, salt, "the grains file after the sequence");
    // What the states wrote is also what the minion holds in memory.
    for (k, v) in salt.as_object().into_iter().flatten() {
        assert_eq!(ctx.grains().get(k), Some(v), "grain {k} in memory");
    }
    assert!(sysrec::steps(&rec) >= 40);
}
