//! External state modules: `saltutil.sync_states` (and `sync_all`) fetch `_states` from the
//! master into `<cachedir>/extmods/states`, and a chunk whose module is not built in runs
//! there with the JSON protocol (`saltq_states::modules::external`).

#[path = "support/mod.rs"]
mod common;

use std::sync::Arc;

use saltq_exec::{CallContext, FetchFuture, ModuleSource, PubInfo, SyncedFile};
use saltq_states::modules::StateCall;
use saltq_states::modules::external;
use serde_json::{Value, json};

/// The master's `file_roots/_states`: one module, `mystate.py` (not executable: run with
/// python3 by its extension).
struct FakeMaster;

impl ModuleSource for FakeMaster {
    fn fetch(&self, kind: &str) -> FetchFuture {
        let files = match kind {
            "states" => {
                let contents = include_bytes!("data/external/mystate.py").to_vec();
                Ok(vec![SyncedFile {
                    name: "mystate.py".into(),
                    contents,
                    executable: false,
                }])
            }
            "modules" => Ok(Vec::new()),
            other => Err(format!("no _{other} here")),
        };
        Box::pin(async move { files })
    }
}

fn minion(cache: &std::path::Path) -> CallContext {
    let opts = json!({"id": "labminion", "cachedir": cache.display().to_string()});
    CallContext::local(json!({"id": "labminion"}), opts).with_modules(Arc::new(FakeMaster))
}

fn state(ctx: &CallContext, name: &str, args: Value, test: bool) -> StateCall {
    StateCall {
        ctx: ctx.clone(),
        name: name.into(),
        args: args.as_object().cloned().unwrap_or_default(),
        test,
        saltenv: "base".into(),
        sls: "app".into(),
        id: "my-id".into(),
        accumulators: Default::default(),
    }
}

#[tokio::test]
async fn synced_state_modules_run() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let ctx = minion(tmp.path());

    // Nothing synced yet: no such external state.
    assert!(!external::exists(&ctx, "mystate"));
    let none = external::run(state(&ctx, "web", json!({}), false), "mystate", "present").await;
    assert!(none.is_none());

    let out = saltq_exec::call(
        &ctx,
        "saltutil.sync_states",
        vec![],
        Default::default(),
        &PubInfo::default(),
    )
    .await;
    assert_eq!(out.ret, json!(["states.mystate"]), "{:?}", out);
    assert!(tmp.path().join("extmods/states/mystate.py").is_file());
    assert!(external::exists(&ctx, "mystate"));
    // A second sync changes nothing.
    let out = saltq_exec::call(
        &ctx,
        "saltutil.sync_states",
        vec![],
        Default::default(),
        &PubInfo::default(),
    )
    .await;
    assert_eq!(out.ret, json!([]));

    let ret = external::run(
        state(&ctx, "web", json!({"value": 80}), false),
        "mystate",
        "present",
    )
    .await
    .expect("mystate.present exists")
    .expect("mystate.present runs");
    assert_eq!(ret.name, "web");
    assert_eq!(ret.result, Some(true));
    assert_eq!(ret.comment, "web set");
    assert_eq!(
        Value::Object(ret.changes),
        json!({"web": {"old": null, "new": 80}})
    );
    assert_eq!(Value::Object(ret.extra), json!({"warnings": ["custom"]}));

    let ret = external::run(
        state(&ctx, "web", json!({"value": 80}), true),
        "mystate",
        "present",
    )
    .await
    .expect("mystate.present exists")
    .expect("mystate.present runs");
    assert_eq!(ret.result, None);
    assert_eq!(ret.comment, "web would be set\nto 80");

    let ret = external::run(state(&ctx, "ok", json!({}), false), "mystate", "present")
        .await
        .expect("mystate.present exists")
        .expect("mystate.present runs");
    assert_eq!(
        (ret.result, ret.comment.as_str()),
        (Some(true), "ok is already present")
    );

    // A function the module does not list, and one that answers nonsense.
    assert!(
        external::run(state(&ctx, "web", json!({}), false), "mystate", "absent")
            .await
            .is_none()
    );
    let err = external::run(state(&ctx, "web", json!({}), false), "mystate", "broken")
        .await
        .expect("mystate.broken exists")
        .expect_err("a list is not a state return");
    assert_eq!(
        err.0,
        "external state mystate.broken returned ['not', 'a', 'dict']: expected a dict with result, comment and changes"
    );
}

#[tokio::test]
async fn sync_all_includes_states() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let ctx = minion(tmp.path());
    let out = saltq_exec::call(
        &ctx,
        "saltutil.sync_all",
        vec![],
        Default::default(),
        &PubInfo::default(),
    )
    .await;
    assert_eq!(out.retcode, 0, "{:?}", out);
    assert_eq!(out.ret["states"], json!(["states.mystate"]));
    assert_eq!(out.ret["modules"], json!([]));
    assert!(external::exists(&ctx, "mystate"));
}

#[test]
fn returns_are_checked() {
    let ok = external::parse(
        "n",
        "m.f",
        json!({"return": {"result": false, "comment": "no"}}),
    );
    let ret = ok.expect("a wrapped return is accepted");
    assert_eq!(
        (ret.name.as_str(), ret.result, ret.comment.as_str()),
        ("n", Some(false), "no")
    );
    let err =
        external::parse("n", "m.f", json!({"result": "yes"})).expect_err("result must be a bool");
    assert_eq!(
        err.0,
        "external state m.f returned result 'yes': expected a dict with result, comment and changes"
    );
    let err = external::parse("n", "m.f", json!({"comment": "x"})).expect_err("result is required");
    assert_eq!(
        err.0,
        "external state m.f returned no result: expected a dict with result, comment and changes"
    );
}
