//! Fuzzing salt-api (issue #31) on a real master and minion: arbitrary lowstate (nested, wrong
//! types, huge numbers, lists where names go, unknown clients) as JSON, YAML, form bodies and
//! raw bytes, with arbitrary `Content-Type`, `Accept`, `X-Auth-Token` and cookies, sent to
//! `/`, `/run`, `/login`, `/token`, `/minions`, `/jobs` and `/hook`. Every request is answered
//! within [`ANSWER_WITHIN`], never with a dropped connection or a 5xx other than Salt's JSON
//! failure, the master logs no panic, and a legit `test.ping` through salt-api works after.
//! The fuzzing user may run only harmless functions (`test.ping`, `test.echo`, `test.arg`,
//! `test.kwarg`, the `jobs` runners). CI runs [`cases`]; `PROPTEST_CASES=2000` runs more.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use saltq_tests::Master;
use serde_json::{Map, Value, json};

use crate::saltapi_hardening::{Client, request, send};

/// Cases in all: a few hundred in CI, `PROPTEST_CASES` for a longer run.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// The longest any request here may take to be answered in full.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

const PATHS: &[&str] = &[
    "/",
    "/run",
    "/login",
    "/token",
    "/minions",
    "/jobs",
    "/hook",
    "/hook/a/b",
];

const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/json; charset=utf-8",
    "APPLICATION/JSON",
    "application/x-yaml",
    "text/yaml",
    "application/x-www-form-urlencoded",
    "application/x-www-form-urlencoded; charset=latin-1",
    "multipart/form-data; boundary=x",
    "text/plain",
    "",
    ";;;",
    "application/json;",
];

const ACCEPTS: &[&str] = &[
    "application/json",
    "application/x-yaml",
    "application/x-yaml, application/json",
    "text/html",
    "*/*",
    "",
];

const KEYS: &[&str] = &[
    "client",
    "fun",
    "tgt",
    "tgt_type",
    "arg",
    "kwarg",
    "timeout",
    "full_return",
    "ret",
    "batch",
    "batch_wait",
    "token",
    "eauth",
    "username",
    "password",
    "match",
    "jid",
    "mid",
];

/// Any JSON: nested, wrong types, huge and odd numbers, odd strings.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        Just(json!(u64::MAX)),
        Just(json!(1e308)),
        Just(json!(-1e-308)),
        Just(json!(0.5)),
        "[a-z_.*@,% ]{0,16}".prop_map(Value::String),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn one_of(items: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
    prop::sample::select(items).prop_map(str::to_owned)
}

/// A value for `fun`: the harmless functions, others the ACL refuses, lists of them, or
/// anything.
fn fun() -> impl Strategy<Value = Value> {
    let name = one_of(&[
        "test.ping",
        "test.echo",
        "test.arg",
        "test.kwarg",
        "jobs.list_jobs",
        "jobs.lookup_jid",
        "cmd.run",
        "key.list_all",
        "nosuch",
        "",
        "test.ping,test.echo",
    ]);
    prop_oneof![
        4 => name.clone().prop_map(Value::String),
        2 => prop::collection::vec(name.prop_map(Value::String), 0..4).prop_map(Value::Array),
        1 => any_json(),
    ]
}

/// A lowstate chunk: some of salt-api's keys, each plausible or anything, and extra keys.
fn chunk() -> impl Strategy<Value = Value> {
    let client = prop_oneof![
        4 => one_of(&[
            "local", "local_async", "local_batch", "local_subset", "runner", "runner_async",
            "wheel", "wheel_async", "ssh", "nosuch",
        ])
        .prop_map(Value::String),
        1 => any_json(),
    ];
    let tgt = prop_oneof![
        3 => one_of(&["m1", "*", "m*", "nobody", "m1,m2", "G@os:Linux", ""]).prop_map(Value::String),
        1 => any_json(),
    ];
    let arg = prop_oneof![
        2 => prop::collection::vec(any_json(), 0..4).prop_map(Value::Array),
        1 => prop::collection::vec(prop::collection::vec(any_json(), 0..3).prop_map(Value::Array), 0..4)
            .prop_map(Value::Array),
        1 => any_json(),
    ];
    let timeout = prop_oneof![
        3 => (0u32..3).prop_map(|n| json!(n)),
        1 => any_json(),
    ];
    (
        prop::option::of(client),
        prop::option::of(fun()),
        prop::option::of(tgt),
        prop::option::of(arg),
        prop::option::of(any_json()),
        prop::option::of(timeout),
        prop::collection::btree_map(one_of(KEYS), any_json(), 0..3),
    )
        .prop_map(|(client, fun, tgt, arg, kwarg, timeout, extra)| {
            let mut m: Map<String, Value> = extra.into_iter().collect();
            for (k, v) in [
                ("client", client),
                ("fun", fun),
                ("tgt", tgt),
                ("arg", arg),
                ("kwarg", kwarg),
                ("timeout", timeout),
            ] {
                if let Some(v) = v {
                    m.insert(k.to_owned(), v);
                }
            }
            // A chunk may ask for long waits only where nothing can keep it waiting.
            if m.get("timeout")
                .and_then(Value::as_f64)
                .is_some_and(|t| t > 5.0)
            {
                m.insert("timeout".into(), json!(2));
            }
            Value::Object(m)
        })
}

fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A request body: lowstate as JSON (a chunk, a list, anything), a form, or raw bytes.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let form = prop::collection::vec(
        (
            prop_oneof![3 => one_of(KEYS), 1 => any::<String>()],
            prop_oneof![
                2 => one_of(&["m1", "test.ping", "local", "[1, 2]", "{a: 1}", "x=1", "file"]),
                1 => any::<String>(),
            ],
        ),
        0..8,
    )
    .prop_map(|pairs| {
        pairs
            .iter()
            .map(|(k, v)| format!("{}={}", percent(k), percent(v)))
            .collect::<Vec<_>>()
            .join("&")
            .into_bytes()
    });
    prop_oneof![
        3 => chunk().prop_map(|c| c.to_string().into_bytes()),
        3 => prop::collection::vec(chunk(), 0..3).prop_map(|c| Value::Array(c).to_string().into_bytes()),
        1 => any_json().prop_map(|v| v.to_string().into_bytes()),
        2 => form,
        1 => prop::collection::vec(any::<u8>(), 0..256),
        1 => Just(b"{\"timeout\": 1e400, \"arg\": [18446744073709551616]}".to_vec()),
    ]
}

/// One request of the fuzz: where, how and what.
#[derive(Debug, Clone)]
struct Case {
    method: &'static str,
    path: String,
    content_type: Option<String>,
    accept: Option<String>,
    /// `None`: no `X-Auth-Token`; `Some(None)`: the fuzzing user's real token.
    token: Option<Option<String>>,
    cookie: Option<Option<String>>,
    body: Vec<u8>,
}

fn header_text() -> impl Strategy<Value = String> {
    "[ -~]{0,48}"
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop_oneof![4 => Just("POST"), 1 => Just("GET")],
        prop::sample::select(PATHS),
        prop::option::of(prop_oneof![4 => one_of(CONTENT_TYPES), 1 => header_text()]),
        prop::option::of(one_of(ACCEPTS)),
        prop::option::of(prop::option::of(
            prop_oneof![header_text(), "[0-9a-f]{40}",],
        )),
        prop::option::of(prop::option::of(header_text())),
        body(),
    )
        .prop_map(
            |(method, path, content_type, accept, token, cookie, body)| Case {
                method,
                path: path.to_owned(),
                content_type,
                accept,
                token,
                cookie,
                body,
            },
        )
}

fn raw(case: &Case, token: &str) -> Vec<u8> {
    let mut headers: Vec<(String, String)> = Vec::new();
    if let Some(a) = &case.accept {
        headers.push(("Accept".into(), a.clone()));
    }
    match &case.token {
        Some(Some(t)) => headers.push(("X-Auth-Token".into(), t.clone())),
        Some(None) => headers.push(("X-Auth-Token".into(), token.to_owned())),
        None => {}
    }
    match &case.cookie {
        Some(Some(c)) => headers.push(("Cookie".into(), c.clone())),
        Some(None) => headers.push(("Cookie".into(), format!("session_id={token}"))),
        None => {}
    }
    let h: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let body = case
        .content_type
        .as_deref()
        .map(|ct| (ct, case.body.as_slice()));
    match body {
        Some(b) => request(case.method, &case.path, &h, Some(b)),
        None => {
            // No Content-Type: the body is sent bare, with its length.
            let mut r = request(case.method, &case.path, &h, Some(("x/x", &[])));
            let head = String::from_utf8_lossy(&r).replace(
                "Content-Type: x/x\r\nContent-Length: 0\r\n",
                &format!("Content-Length: {}\r\n", case.body.len()),
            );
            r = head.into_bytes();
            r.extend_from_slice(&case.body);
            r
        }
    }
}

fn panics(master: &Master) -> String {
    let log = std::fs::read_to_string(master.log()).unwrap_or_default();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("panicked")).collect();
    lines.join("\n")
}

#[test]
fn fuzz_saltapi_requests() {
    let master = Master::start_with(|d| {
        std::fs::write(d.join("users.txt"), "fz:fuzz\n").expect("users file");
        format!(
            "auto_accept: true\ntimeout: 1\ngather_job_timeout: 1\n\
             external_auth:\n  file:\n    ^filename: {}\n    fz: ['test.ping', 'test.echo', 'test.arg', 'test.kwarg', '@jobs']\n\
             netapi_enable_clients: [local, local_async, runner, runner_async, wheel]\n\
             rest_cherrypy: {{port: 0, host: 127.0.0.1, disable_ssl: true}}\n",
            d.join("users.txt").display()
        )
    });
    let _m = master.minion("m1", "");
    master.wait_for("m1");
    let api = Client::new(&master);
    let token = api.login("fz", "fuzz");
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        max_shrink_iters: 64,
        ..Config::default()
    });
    let statuses: std::cell::RefCell<BTreeMap<u16, u32>> = Default::default();
    let result = runner.run(&case(), |c| {
        let answer = send(api.addr, None, &raw(&c, &token), ANSWER_WITHIN)
            .map_err(|e| TestCaseError::fail(format!("no answer: {e}")))?;
        *statuses.borrow_mut().entry(answer.status).or_default() += 1;
        let salts_failure = answer.status == 500
            && serde_json::from_str::<Value>(&answer.body)
                .is_ok_and(|v| v["status"] == 500 && v.get("return").is_some());
        if answer.status >= 500 && !salts_failure && answer.status != 503 {
            return Err(TestCaseError::fail(format!(
                "{} {}: {}",
                answer.status, c.path, answer.body
            )));
        }
        let p = panics(&master);
        if !p.is_empty() {
            return Err(TestCaseError::fail(format!("the master panicked:\n{p}")));
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("salt-api fuzz: {e}");
    }
    eprintln!("salt-api fuzz: answers by status: {:?}", statuses.borrow());
    // Still serving: a legit ping through salt-api.
    let r = api.run(
        &token,
        json!({"client": "local", "tgt": "m1", "fun": "test.ping"}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body, r#"{"return": [{"m1": true}]}"#);
    assert_eq!(panics(&master), "");
}
