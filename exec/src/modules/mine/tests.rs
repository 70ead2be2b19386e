//! Masterless `mine.*` against what `salt-call --local` 3007.8 answered for the same config:
//! `data/record.py` ran `salt-call --local` with `data/minion.conf` (2026-12-07) and wrote
//! `data/masterless.json`; the shapes shared with the master are tested below it.

use serde_json::{Value, json};

use super::*;
use crate::testutil::run_in;

fn ctx(dir: &std::path::Path) -> crate::CallContext {
    crate::CallContext::local(
        json!({"id": "rec", "os": "Debian"}),
        json!({
            "id": "rec",
            "cachedir": dir,
            "mine_functions": {
                "test.ping": [],
                "echo_alias": [{"mine_function": "test.echo"}, "hello"],
                "acl_entry": [{"mine_function": "test.arg"}, 1, {"k": "v"},
                              {"allow_tgt": "web*"}, {"allow_tgt_type": "glob"}],
                "grains.item": ["id"],
                "missing.fun": [],
            },
        }),
    )
}

#[tokio::test]
async fn masterless_calls_answer_as_salt_call_local() {
    let recorded: Value =
        serde_json::from_str(include_str!("data/masterless.json")).expect("recording is JSON");
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path());
    for case in recorded.as_array().unwrap() {
        let (fun, args, kwargs) = (&case["fun"], &case["args"], &case["kwargs"]);
        let out = run_in(&ctx, fun.as_str().unwrap(), args.clone(), kwargs.clone()).await;
        if let Some(err) = case.get("error") {
            // salt-call words a TypeError "Passed invalid arguments: <msg>." where a minion's
            // return says "Passed invalid arguments to <fun>: <msg>": compare the message.
            let err = err.as_str().unwrap();
            let msg = err
                .strip_prefix("Passed invalid arguments: ")
                .map_or(err, |m| m.trim_end_matches('.'));
            let text = out.ret.as_str().unwrap_or_default().to_owned();
            assert!(text.contains(msg), "{case}: {text}");
            assert_eq!(out.retcode, 1, "{case}");
        } else {
            assert_eq!(out.ret, case["ret"], "{case}");
        }
    }
}

#[test]
fn definitions_read_as_salt_reads_them() {
    let d = parse_definition(&json!([{"mine_function": "network.ip_addrs"}, "eth0",
                                     {"cidr": "10.0.0.0/8"}, {"allow_tgt": "G@role:lb",
                                     "allow_tgt_type": "compound"}]));
    assert_eq!(d.function.as_deref(), Some("network.ip_addrs"));
    assert_eq!(d.args, vec![json!("eth0")]);
    assert_eq!(Value::Object(d.kwargs), json!({"cidr": "10.0.0.0/8"}));
    assert_eq!(
        Value::Object(d.acl.clone()),
        json!({"allow_tgt": "G@role:lb", "allow_tgt_type": "compound"})
    );
    assert_eq!(
        wrap_acl(json!(["10.0.0.1"]), &d.acl),
        json!({"__data__": ["10.0.0.1"], "__saltmine_acl__": 1,
               "allow_tgt": "G@role:lb", "allow_tgt_type": "compound"})
    );
    // A dict is keyword arguments; a falsey allow_tgt is dropped.
    let d = parse_definition(&json!({"mine_function": "test.arg", "a": 1, "allow_tgt": ""}));
    assert_eq!(d.function.as_deref(), Some("test.arg"));
    assert_eq!(Value::Object(d.kwargs), json!({"a": 1}));
    assert!(d.acl.is_empty());
    // Anything else is no arguments at all.
    assert_eq!(parse_definition(&json!(null)), Definition::default());
}

#[test]
fn requested_functions_key_by_function_when_several() {
    assert_eq!(
        requested_functions(&json!("a")),
        Some((vec!["a".to_owned()], false))
    );
    assert_eq!(
        requested_functions(&json!("a,b,a")),
        Some((vec!["a".to_owned(), "b".to_owned()], true))
    );
    assert_eq!(
        requested_functions(&json!(["a"])),
        Some((vec!["a".to_owned()], true))
    );
    assert_eq!(requested_functions(&json!(3)), None);
    assert_eq!(
        entry_data(&json!({"__saltmine_acl__": 1, "__data__": 5})),
        &json!(5)
    );
    assert_eq!(entry_data(&json!({"x": 1})), &json!({"x": 1}));
}
