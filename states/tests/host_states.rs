//! `host.*` states replayed against Salt 3007.8 (`data/host/cases.json`, recorded by
//! `data/host/gen.py`): a sequence of present/absent/only on a hosts file of the test's own
//! (`hosts.file`), each return and the file left at the end compared with Salt's.

mod sysrec;

use serde_json::{Map, json};

#[tokio::test]
async fn host_states_match_salt() {
    let rec = sysrec::load("host");
    let dir = sysrec::scratch(&rec);
    let ctx = sysrec::ctx_for(&rec, dir.path(), Map::new(), json!({}));
    let failures = sysrec::replay(&rec, &ctx, dir.path(), &[]).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(sysrec::steps(&rec) >= 19);
}

/// Without `hosts.file` the module edits `/etc/hosts`: only read here, never written.
#[tokio::test]
async fn default_hosts_file_is_etc_hosts() {
    let ctx = saltq_exec::CallContext::local(json!({}), json!({"id": "m"}));
    let listed = saltq_exec::call_direct(&ctx, "hosts.list_hosts", vec![], Map::new())
        .await
        .expect("hosts.list_hosts");
    let text = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    assert_eq!(
        listed.as_object().map(|m| m.is_empty()),
        Some(text.trim().is_empty())
    );
}
