//! Accumulators belong to a state run: two runs in one process (as a swarm of minions or
//! concurrent orchestrations have), each with its own `file.accumulated` and templates, do
//! not see or wipe each other's accumulators even when one ends while the other is between
//! its `file.accumulated` and its `file.managed`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use saltq_exec::{CallContext, EventSink};
use saltq_states::run::{RunControl, RunOptions, run};
use serde_json::{Map, Value, json};

/// A low chunk of the `file` state in SLS `acc`.
fn chunk(id: &str, fun: &str, order: i64, args: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("state".into(), json!("file"));
    m.insert("__id__".into(), json!(id));
    m.insert("__sls__".into(), json!("acc"));
    m.insert("__env__".into(), json!("base"));
    m.insert("order".into(), json!(order));
    if let Value::Object(args) = args {
        m.extend(args);
    }
    m.insert("fun".into(), json!(fun));
    m
}

/// One run's chunks: `<tag>-acc` charges `text` into the accumulator `<tag>` of
/// `target`, then `<tag>-file` renders `template` (which lists that accumulator) there.
fn chunks(tag: &str, target: &str, template: &str, text: &str) -> Vec<Map<String, Value>> {
    let file_id = format!("{tag}-file");
    vec![
        chunk(
            &format!("{tag}-acc"),
            "accumulated",
            1,
            json!({"name": tag, "filename": target, "text": text,
                   "require_in": [{"file": file_id}]}),
        ),
        chunk(
            &file_id,
            "managed",
            2,
            json!({"name": target, "source": template, "template": "jinja"}),
        ),
    ]
}

/// Pauses its run's control once the run has reported its first state (the accumulator),
/// so the run stops between its `file.accumulated` and its `file.managed`.
struct PauseAfterFirst {
    control: RunControl,
    seen: Mutex<Vec<String>>,
}

impl EventSink for PauseAfterFirst {
    fn send(&self, tag: &str, _data: Value) {
        let mut seen = self.seen.lock().unwrap();
        if seen.is_empty() {
            self.control.pause();
        }
        seen.push(tag.to_owned());
    }
}

fn template(dir: &std::path::Path, tag: &str) -> String {
    let path = dir.join(format!("{tag}.j2"));
    std::fs::write(
        &path,
        format!("{{% for line in accumulator['{tag}'] %}}{{{{ line }}}}\n{{% endfor %}}"),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

fn result_of<'a>(ret: &'a Map<String, Value>, id: &str) -> &'a Value {
    ret.iter()
        .find(|(tag, _)| tag.starts_with(&format!("file_|-{id}_|-")))
        .map(|(_, r)| r)
        .unwrap_or_else(|| panic!("no result for {id} in {ret:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_ending_leaves_another_runs_accumulators() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = CallContext::local(json!({"id": "local"}), json!({"user": "root"}));

    let a_target = dir.path().join("a.conf").to_string_lossy().into_owned();
    let a_chunks = chunks("a", &a_target, &template(dir.path(), "a"), "line from a");
    let control = RunControl::default();
    let sink = Arc::new(PauseAfterFirst {
        control: control.clone(),
        seen: Mutex::new(Vec::new()),
    });
    let a_opts = RunOptions {
        saltenv: "base".into(),
        control: control.clone(),
        state_events: true,
        jid: "20261207000000000001".into(),
        minion_id: "local".into(),
        ..RunOptions::default()
    };
    let a_ctx = ctx.clone().with_events(sink.clone());
    let a = tokio::spawn(async move { run(a_chunks, &a_ctx, &a_opts).await });

    // Run a is paused once its accumulator is charged (bounded wait: 10 s at most).
    for _ in 0..200 {
        if !sink.seen.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        sink.seen.lock().unwrap().len(),
        1,
        "run a did not stop after its accumulator"
    );

    // Run b, in full, in the meantime.
    let b_target = dir.path().join("b.conf").to_string_lossy().into_owned();
    let b_chunks = chunks("b", &b_target, &template(dir.path(), "b"), "line from b");
    let b_opts = RunOptions {
        saltenv: "base".into(),
        ..RunOptions::default()
    };
    let b = run(b_chunks, &ctx, &b_opts).await;
    assert_eq!(result_of(&b, "b-file")["result"], json!(true), "{b:?}");
    assert_eq!(
        std::fs::read_to_string(&b_target).unwrap(),
        "line from b\n",
        "run b sees only its own accumulator"
    );

    control.resume();
    let a = tokio::time::timeout(Duration::from_secs(30), a)
        .await
        .expect("run a ends once resumed")
        .expect("no panic");
    assert_eq!(result_of(&a, "a-file")["result"], json!(true), "{a:?}");
    assert_eq!(
        std::fs::read_to_string(&a_target).unwrap(),
        "line from a\n",
        "run a still has its accumulator after run b ended"
    );
}
