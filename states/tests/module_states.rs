//! `module.*` and `event.*` states replayed against what Salt 3007.8 answered for the same
//! chunks (`data/module_run/cases.json`, `data/event/cases.json`, recorded by their
//! `gen.py`).

#[path = "support/mod.rs"]
mod common;

use common::{check_cases, ctx};

#[tokio::test]
async fn module_run_matches_salt() {
    let n = check_cases("module_run", &ctx()).await;
    assert!(n >= 50, "only {n} cases");
}

#[tokio::test]
async fn event_states_match_salt() {
    // Salt's `salt-call --local` has no master: `event.send` answers False, as saltq's
    // execution function does without an event sink.
    let n = check_cases("event", &ctx()).await;
    assert!(n >= 10, "only {n} cases");
}

#[tokio::test]
async fn event_send_fires_through_the_sink() {
    use std::sync::{Arc, Mutex};

    use saltq_exec::EventSink;
    use saltq_states::modules::{StateCall, lookup};
    use serde_json::{Value, json};

    #[derive(Default)]
    struct Sink(Mutex<Vec<(String, Value)>>);
    impl EventSink for Sink {
        fn send(&self, tag: &str, data: Value) {
            if let Ok(mut l) = self.0.lock() {
                l.push((tag.to_owned(), data));
            }
        }
    }
    let sink = Arc::new(Sink::default());
    let f = lookup("event.send").expect("event.send is registered");
    let call = StateCall {
        ctx: ctx().with_events(sink.clone()),
        name: "my/tag".into(),
        args: json!({"data": {"a": 1}})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        test: false,
        saltenv: "base".into(),
        sls: "t".into(),
        id: "ev".into(),
        accumulators: Default::default(),
    };
    let ret = (f.handler)(call).await.expect("event.send runs");
    assert_eq!(ret.result, Some(true));
    assert_eq!(ret.comment, "Event fired");
    let sent = sink.0.lock().map(|l| l.clone()).unwrap_or_default();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, "my/tag");
    assert_eq!(sent[0].1.get("a"), Some(&json!(1)));
}
