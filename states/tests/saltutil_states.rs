//! `saltutil.sync_*` states: Salt 3007.8's test-mode answer, a sync with nothing to sync
//! (`No updates to sync`), and a kind saltq's minion does not sync failing with the
//! execution function's text. The answers with changes are driven through a real master
//! in `tests/tests/e2e/system_states_host.rs`.

#[path = "support/mod.rs"]
mod common;

use serde_json::json;

#[tokio::test]
async fn saltutil_states() {
    let ctx = common::ctx();
    // salt-call --local state.single saltutil.sync_modules name=x test=True (Salt 3007.8):
    // {"result": null, "comment": "saltutil.sync_modules would have been run", "changes": {}}
    let ret = common::run_state(&ctx, "saltutil.sync_modules", "x", &json!([]), true).await;
    assert_eq!(
        common::as_salt(&ret),
        json!({"name": "x", "result": null, "comment": "saltutil.sync_modules would have been run", "changes": {}})
    );
    let ret = common::run_state(&ctx, "saltutil.sync_all", "x", &json!([]), true).await;
    assert_eq!(ret.comment, "saltutil.sync_all would have been run");
    assert_eq!(ret.result, None);
    // No master to sync from: the execution function's error, as Salt's
    // "Failed to run sync_<kind>: <error>".
    let ret = common::run_state(&ctx, "saltutil.sync_modules", "x", &json!([]), false).await;
    assert_eq!(ret.result, Some(false));
    assert!(
        ret.comment.starts_with("Failed to run sync_modules: "),
        "{}",
        ret.comment
    );
    let ret = common::run_state(&ctx, "saltutil.sync_grains", "x", &json!([]), false).await;
    assert_eq!(
        common::as_salt(&ret),
        json!({"name": "x", "result": false, "comment": "Failed to run sync_grains: 'saltutil.sync_grains' is not available.", "changes": {}})
    );
}
