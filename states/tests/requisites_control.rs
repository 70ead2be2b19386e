//! What the engine drives during a run and what leaves it: `state.pause`/`state.resume`,
//! `state.soft_kill`, and the progress events of `state_events` and `fire_event` (tags as
//! `salt/state.py`'s `event` builds them; `salt-call --local` fires none, so these
//! expectations come from Salt's source, not from a recording).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use saltq_exec::{CallContext, EventSink};
use saltq_states::run::{RunControl, RunOptions, run, tag_of};
use serde_json::{Map, Value, json};

fn chunk(id: &str, fun: &str, extra: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("state".into(), json!("test"));
    m.insert("name".into(), json!(id));
    m.insert("__sls__".into(), json!("ctl"));
    m.insert("__env__".into(), json!("base"));
    m.insert("__id__".into(), json!(id));
    if let Value::Object(extra) = extra {
        m.extend(extra);
    }
    m.insert("fun".into(), json!(fun));
    m
}

fn ctx() -> CallContext {
    CallContext::local(
        json!({"id": "minion", "shell": "/bin/sh"}),
        json!({"id": "minion"}),
    )
}

#[derive(Default)]
struct Events(Mutex<Vec<(String, Value)>>);

impl EventSink for Events {
    fn send(&self, tag: &str, data: Value) {
        self.0.lock().unwrap().push((tag.to_owned(), data));
    }
}

#[tokio::test]
async fn soft_kill_stops_before_the_next_chunk() {
    let control = RunControl::default();
    control.soft_kill();
    let opts = RunOptions {
        control,
        ..RunOptions::default()
    };
    let ret = run(vec![chunk("a", "nop", json!({}))], &ctx(), &opts).await;
    assert!(ret.is_empty(), "{ret:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_holds_the_run_until_resumed() {
    let control = RunControl::default();
    control.pause();
    let opts = RunOptions {
        control: control.clone(),
        ..RunOptions::default()
    };
    let task = tokio::spawn(async move {
        run(
            vec![chunk("a", "nop", json!({})), chunk("b", "nop", json!({}))],
            &ctx(),
            &opts,
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!task.is_finished(), "a paused run went on");
    control.resume();
    let ret = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the run ends once resumed")
        .expect("no panic");
    assert_eq!(ret.len(), 2);
}

/// On a paused clock: a paused run stays paused however long, and `resume` wakes it at
/// once, with no timer firing in between (the run waits on the control itself rather than
/// looking again every so often).
#[tokio::test(start_paused = true)]
async fn resume_wakes_a_paused_run_without_a_timer() {
    let control = RunControl::default();
    control.pause();
    let opts = RunOptions {
        control: control.clone(),
        ..RunOptions::default()
    };
    let task =
        tokio::spawn(async move { run(vec![chunk("a", "nop", json!({}))], &ctx(), &opts).await });
    // An odd span, so that no periodic timer of the run's happens to end with it.
    tokio::time::sleep(Duration::from_millis(60_050)).await;
    assert!(!task.is_finished(), "a paused run went on");
    let resumed_at = tokio::time::Instant::now();
    control.resume();
    let ret = task.await.expect("no panic");
    assert_eq!(ret.len(), 1);
    assert_eq!(
        tokio::time::Instant::now(),
        resumed_at,
        "the run needed a timer to notice the resume"
    );
}

#[tokio::test]
async fn state_events_and_fire_event_tags() {
    let events = Arc::new(Events::default());
    let ctx = ctx().with_events(events.clone());
    let opts = RunOptions {
        state_events: true,
        jid: "20261125231000000000".into(),
        minion_id: "minion".into(),
        ..RunOptions::default()
    };
    let chunks = vec![
        chunk("a", "succeed_with_changes", json!({"order": 1})),
        chunk("b", "nop", json!({"order": 2, "fire_event": "custom/tag"})),
    ];
    let ret = run(chunks.clone(), &ctx, &opts).await;
    assert_eq!(ret.len(), 2);
    let got = events.0.lock().unwrap().clone();
    let tags: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        tags,
        [
            "salt/job/20261125231000000000/prog/minion/0",
            "salt/state_result/20261125231000000000/minion/custom/tag",
        ]
    );
    assert_eq!(got[0].1["len"], json!(2));
    assert_eq!(got[0].1["ret"]["__run_num__"], json!(0));
    assert_eq!(
        got[1].1["ret"]["comment"],
        ret[&tag_of(&chunks[1])]["comment"]
    );
    assert!(got[1].1.get("len").is_none());
}

#[tokio::test]
async fn no_events_without_state_events_or_fire_event() {
    let events = Arc::new(Events::default());
    let ctx = ctx().with_events(events.clone());
    let ret = run(
        vec![chunk("a", "nop", json!({}))],
        &ctx,
        &RunOptions::default(),
    )
    .await;
    assert_eq!(ret.len(), 1);
    assert!(events.0.lock().unwrap().is_empty());
}

#[tokio::test]
async fn start_time_and_duration_in_salts_formats() {
    let ret = run(
        vec![chunk("a", "nop", json!({}))],
        &ctx(),
        &RunOptions::default(),
    )
    .await;
    let r = &ret["test_|-a_|-a_|-nop"];
    let t = r["start_time"].as_str().expect("start_time is text");
    let (hms, frac) = t.split_once('.').unwrap_or((t, "000001"));
    let parts: Vec<&str> = hms.split(':').collect();
    assert_eq!(parts.len(), 3, "{t}");
    assert!(
        parts
            .iter()
            .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_digit())),
        "{t}"
    );
    assert!(
        frac.len() == 6 && frac.chars().all(|c| c.is_ascii_digit()),
        "{t}"
    );
    assert!(r["duration"].is_f64(), "{}", r["duration"]);
}
