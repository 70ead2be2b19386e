//! rawfile_json: one JSON object per line, appended; events as `{"data": ..., "tag": ...}`.

use saltq_returners::{Event, Returners};
use serde_json::{Map, json};

use crate::support::{assert_mentions, jid, load, opts};

#[tokio::test]
async fn rawfile_json_appends_one_object_per_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("events");
    let other = dir.path().join("other");
    let returners = Returners::from_opts(&json!({"rawfile_json.filename": path})).expect("config");
    let (j1, j2) = (jid(), jid());
    returners
        .returner("rawfile_json", &load("m1", &j1), None, None)
        .await
        .expect("first");
    returners
        .returner("rawfile_json", &load("m2", &j2), None, None)
        .await
        .expect("second");
    let mut data = Map::new();
    data.insert("id".into(), json!("m1"));
    let events = [Event {
        tag: "salt/minion/m1/start".into(),
        data,
    }];
    returners
        .event_return("rawfile_json", &events)
        .await
        .expect("events");
    let kwargs = opts(json!({"filename": other}));
    returners
        .returner("rawfile_json", &load("m3", &jid()), None, Some(&kwargs))
        .await
        .expect("ret_kwargs");

    let text = std::fs::read_to_string(&path).expect("read the file");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with(r#"{"id": "m1", "jid": ""#),
        "{}",
        lines[0]
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(lines[1]).expect("JSON"),
        load("m2", &j2)
    );
    assert_eq!(
        lines[2],
        r#"{"data": {"id": "m1"}, "tag": "salt/minion/m1/start"}"#
    );
    assert!(text.ends_with('\n'));
    let other_text = std::fs::read_to_string(&other).expect("read the other file");
    assert_eq!(other_text.lines().count(), 1);

    let bad = dir.path().join("missing-dir").join("events");
    let kwargs = opts(json!({"filename": bad}));
    let err = returners
        .returner("rawfile_json", &load("m", &jid()), None, Some(&kwargs))
        .await
        .expect_err("no dir");
    assert_mentions(
        &err,
        &[
            "rawfile_json returner failed to append a return",
            "missing-dir",
        ],
    );
}

#[tokio::test]
async fn unknown_returners_and_options_are_named() {
    let returners = Returners::from_opts(&json!({})).expect("empty config");
    let err = returners
        .returner("mongo", &load("m", &jid()), None, None)
        .await
        .expect_err("unknown");
    assert_mentions(
        &err,
        &[
            "`mongo`",
            "postgres, pgjsonb, mysql, redis, rawfile_json, syslog, webhook",
        ],
    );
    let err = Returners::from_opts(&json!({"rawfile_json.filname": "/tmp/x"})).expect_err("typo");
    assert_mentions(&err, &["`rawfile_json.filname`", "rawfile_json.filename"]);
    assert!(saltq_returners::is_returner_option(
        "alternative.returner.pgjsonb.host"
    ));
    assert!(!saltq_returners::is_returner_option("rawfile_json.filname"));
    assert!(!saltq_returners::is_returner_option("master"));
}
