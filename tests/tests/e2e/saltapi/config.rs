//! salt-api config keys the other tests leave at their defaults: `webhook_url` moves the
//! webhook (its events keep Salt's `salt/netapi/hook/...` tags), `stats_disable_auth` opens
//! `/stats`, `collect_stats` shows in it.

use std::io::Write;
use std::time::Duration;

use saltq_tests::Master;
use serde_json::json;

use super::{Api, USERS, read_events};

#[test]
fn webhook_url_and_stats_keys() {
    let master = Master::start_with(|d| {
        std::fs::write(d.join("users.txt"), USERS).unwrap();
        format!(
            "external_auth: {{file: {{^filename: {}, alice: ['.*']}}}}\n\
             netapi_enable_clients: [local]\n\
             rest_cherrypy: {{port: 0, host: 127.0.0.1, webhook_url: /incoming/, \
             stats_disable_auth: true, collect_stats: true}}\n",
            d.join("users.txt").display()
        )
    });
    let api = Api::new(&master, true);
    let stats = api.get("/stats", None);
    assert_eq!(stats.status, 200, "{stats:?}");
    assert_eq!(
        stats.json()["saltq salt-api"]["Enabled"],
        json!(true),
        "{stats:?}"
    );
    let alice = api.login("alice", "secret");
    let mut sse = api.connect();
    write!(sse, "GET /events?token={alice} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    read_events(
        sse.as_mut(),
        &["retry: 400\n".to_owned()],
        Duration::from_secs(10),
    );
    let r = api.json("POST", "/hook/build", Some(&alice), &json!({"a": 1}));
    assert_eq!(r.status, 404, "the default webhook path is gone: {r:?}");
    let r = api.json(
        "POST",
        "/incoming/build/done",
        Some(&alice),
        &json!({"a": 1}),
    );
    assert_eq!(r.json(), json!({"success": true}), "{r:?}");
    let r = api.json("POST", "/incoming/build/done", None, &json!({"a": 1}));
    assert_eq!(r.status, 401, "webhooks still need a token: {r:?}");
    let want = ["tag: salt/netapi/hook/build/done\ndata: ".to_owned()];
    let text = read_events(sse.as_mut(), &want, Duration::from_secs(20));
    assert!(text.contains(&want[0]), "{text}");
    assert!(text.contains("\"post\": {\"a\": 1}"), "{text}");
}
