//! A key that stops being accepted ends the minion's subscription at once: a deleted key comes
//! back as pending (the minion asks again), a rejected one is refused, and neither stays up.

use std::time::Duration;

use saltq_tests::{Master, eventually};

fn present(master: &Master) -> serde_json::Value {
    let o = master.saltq(&["run", "manage.present", "--out", "json"]);
    assert_eq!(o.code, 0, "{o:?}");
    o.json()
}

#[test]
fn deleted_key_closes_the_subscription_and_the_minion_comes_back_pending() {
    let master = Master::start("");
    let _m = master.minion("rv1", "");
    master.accept_and_wait("rv1");
    assert_eq!(present(&master), serde_json::json!(["rv1"]));
    assert_eq!(master.saltq(&["key", "-d", "rv1", "-y"]).code, 0);
    eventually("rv1 back as pending", Duration::from_secs(15), || {
        let o = master.saltq(&["key", "-l", "pre", "--out", "json"]);
        o.stdout.contains("\"rv1\"").then_some(())
    });
    assert_eq!(present(&master), serde_json::json!([]));
    // Accepted again, it is back without a restart.
    assert_eq!(master.saltq(&["key", "-a", "rv1", "-y"]).code, 0);
    master.wait_for("rv1");
}

#[test]
fn rejected_key_closes_the_subscription_and_is_refused() {
    let master = Master::start("");
    let m = master.minion("rv2", "");
    master.accept_and_wait("rv2");
    let o = master.saltq(&["key", "-r", "rv2", "--include-accepted", "-y"]);
    assert_eq!(o.code, 0, "{o:?}");
    eventually("rv2 refused as rejected", Duration::from_secs(15), || {
        let log = std::fs::read_to_string(m.log()).unwrap_or_default();
        log.contains("was rejected by the master").then_some(())
    });
    assert_eq!(present(&master), serde_json::json!([]));
    let o = master.saltq(&["-L", "rv2", "test.ping", "-t", "2", "--out", "json"]);
    assert_ne!(o.code, 0, "a rejected minion must not answer: {o:?}");
}
