//! salt-api (rest_cherrypy) on a real saltq master with a real minion: every endpoint over TLS
//! with a raw HTTP client, the answers compared with Salt 3007.8's own salt-api for the same
//! requests (`data/saltapi/cases.json`, recorded by `data/saltapi/gen.py`), tokens surviving a
//! restart, failed-login limits, Server-Sent Events, and pepper (a client we did not write).
//!
//! pepper comes from `SALTQ_TEST_PEPPER` (the `pepper` script of a venv with PyPI's
//! `salt-pepper`; `.ci/run` makes one). Without it the pepper test is skipped with a message,
//! and fails under CI (`SALTQ_CI=1`), which must run it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use saltq_tests::{Master, Minion, eventually};

mod batchkeys;
mod config;
mod python_args;
mod tls;
use serde_json::{Value, json};

/// The users of the tests, as Salt's recording had them.
const USERS: &str = "alice:secret\nbob:pingonly\n";

fn config(dir: &Path, rest: &str) -> String {
    std::fs::write(dir.join("users.txt"), USERS).expect("users file");
    format!(
        "auto_accept: true\n\
         external_auth:\n  file:\n    ^filename: {}\n    alice: ['.*', '@runner', '@wheel', '@jobs']\n    bob: ['test.ping']\n\
         netapi_enable_clients: [local, local_async, runner, runner_async, wheel, wheel_async]\n\
         rest_cherrypy: {{{rest}}}\n",
        dir.join("users.txt").display()
    )
}

/// The address salt-api listens on, from the master's listen.json.
pub(crate) fn api_addr(master: &Master) -> String {
    let listen = master.dir.0.join("root/var/cache/saltq/master/listen.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(listen).expect("listen.json"))
        .expect("listen.json is JSON");
    v["rest_cherrypy"]
        .as_str()
        .expect("rest_cherrypy address in listen.json")
        .to_owned()
}

/// An HTTP answer.
#[derive(Debug)]
pub(crate) struct Resp {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body's bytes (a tarball's are ASCII, so the text holds them unchanged).
    fn bytes(&self) -> &[u8] {
        self.body.as_bytes()
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }

    /// The message of an error page (CherryPy's `<p>`).
    pub(crate) fn message(&self) -> String {
        let start = self.body.find("<p>").map(|i| i + 3).unwrap_or(0);
        let end = self.body[start..]
            .find("</p>")
            .map(|i| start + i)
            .unwrap_or(start);
        self.body[start..end].to_owned()
    }
}

/// A salt-api client: TLS trusting the master's CA, or plain HTTP.
pub(crate) struct Api {
    addr: String,
    tls: Option<Arc<rustls::ClientConfig>>,
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

impl Api {
    pub(crate) fn new(master: &Master, tls: bool) -> Api {
        let tls = tls.then(|| {
            let mut roots = rustls::RootCertStore::empty();
            let pem = std::fs::read(master.pki_dir().join("ca.crt")).expect("ca.crt");
            for c in rustls_pemfile::certs(&mut pem.as_slice()) {
                roots.add(c.expect("CA certificate")).expect("add CA");
            }
            Arc::new(
                rustls::ClientConfig::builder_with_provider(Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .with_safe_default_protocol_versions()
                .expect("TLS versions")
                .with_root_certificates(roots)
                .with_no_client_auth(),
            )
        });
        Api {
            addr: api_addr(master),
            tls,
        }
    }

    fn connect(&self) -> Box<dyn Stream> {
        let tcp = TcpStream::connect(&self.addr).expect("connect to salt-api");
        tcp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        match &self.tls {
            Some(cfg) => {
                let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
                let conn = rustls::ClientConnection::new(cfg.clone(), name).expect("TLS client");
                Box::new(rustls::StreamOwned::new(conn, tcp))
            }
            None => Box::new(tcp),
        }
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<(&str, &[u8])>,
    ) -> Resp {
        let mut s = self.connect();
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAccept: application/json\r\n",
            self.addr
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some((ct, b)) = body {
            req.push_str(&format!(
                "Content-Type: {ct}\r\nContent-Length: {}\r\n",
                b.len()
            ));
        } else if method == "POST" {
            req.push_str("Content-Length: 0\r\n");
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).unwrap();
        if let Some((_, b)) = body {
            s.write_all(b).unwrap();
        }
        let mut raw = Vec::new();
        // A TLS peer closing without close_notify is an error to rustls; the bytes are in.
        let _ = s.read_to_end(&mut raw);
        parse(&raw)
    }

    pub(crate) fn json(&self, method: &str, path: &str, token: Option<&str>, body: &Value) -> Resp {
        let mut h = vec![];
        if let Some(t) = token {
            h.push(("X-Auth-Token", t));
        }
        let b = body.to_string();
        self.request(method, path, &h, Some(("application/json", b.as_bytes())))
    }

    pub(crate) fn get(&self, path: &str, token: Option<&str>) -> Resp {
        let h: Vec<(&str, &str)> = token.map(|t| ("X-Auth-Token", t)).into_iter().collect();
        self.request("GET", path, &h, None)
    }

    fn login(&self, user: &str, password: &str) -> String {
        let r = self.json(
            "POST",
            "/login",
            None,
            &json!({"username": user, "password": password, "eauth": "file"}),
        );
        assert_eq!(r.status, 200, "{r:?}");
        r.json()["return"][0]["token"]
            .as_str()
            .expect("token")
            .to_owned()
    }
}

fn parse(raw: &[u8]) -> Resp {
    let text = String::from_utf8_lossy(raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {text:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Resp {
        status,
        headers,
        body,
    }
}

/// A chunked HTTP/1.1 body put back together.
pub(crate) fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// The structure of a value with what varies by run taken out: jids, tokens, times and
/// fingerprints become placeholders, keys that are jids collapse into one, and an empty list
/// stands for any list.
fn shape(v: &Value, depth: usize) -> Value {
    let jid = |s: &str| s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit());
    match v {
        _ if depth == 0 => json!(kind(v)),
        Value::Object(m) => {
            let mut out = serde_json::Map::new();
            for (k, x) in m {
                let key = if jid(k) {
                    "<jid>".to_owned()
                } else {
                    k.clone()
                };
                out.insert(key, shape(x, depth - 1));
            }
            Value::Object(out)
        }
        Value::Array(a) if a.is_empty() => json!("<list>"),
        Value::Array(a) => json!(["<list>", shape(&a[0], depth - 1)]),
        Value::String(s) if jid(s) => json!("<jid>"),
        Value::String(s) if s.contains(jid_in(s).as_str()) && !jid_in(s).is_empty() => {
            json!(s.replace(&jid_in(s), "<jid>"))
        }
        other => json!(kind(other)),
    }
}

/// The first 20-digit run in `s`, or "".
fn jid_in(s: &str) -> String {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let j = (i..b.len())
                .find(|&j| !b[j].is_ascii_digit())
                .unwrap_or(b.len());
            if j - i == 20 {
                return s[i..j].to_owned();
            }
            i = j;
        } else {
            i += 1;
        }
    }
    String::new()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// Whether `ours` has Salt's shape: every key Salt has (lists compared by their first element
/// when both have one).
fn same_shape(salt: &Value, ours: &Value) -> bool {
    match (salt, ours) {
        (Value::Object(a), Value::Object(b)) => a
            .iter()
            .all(|(k, v)| b.get(k).is_some_and(|w| same_shape(v, w))),
        (Value::Array(a), Value::Array(b)) => {
            a.len() < 2 || b.len() < 2 || same_shape(&a[1], &b[1])
        }
        (Value::String(a), _) if a == "<list>" => {
            matches!(ours, Value::String(s) if s == "<list>") || ours.is_array()
        }
        (_, Value::String(b)) if b == "<list>" => salt.is_array(),
        (a, b) => a == b,
    }
}

/// Salt's answers recorded in `data/saltapi/<file>`.
pub(crate) fn recorded(file: &str) -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/e2e/data/saltapi")
        .join(file);
    serde_json::from_str(&std::fs::read_to_string(&p).expect(file)).expect(file)
}

fn recording() -> Value {
    recorded("cases.json")
}

/// Replays a recorded request (its token replaced by `token`) and checks the answer against
/// Salt's: status, content type, and the body's shape (or the error page's message).
pub(crate) fn replay(api: &Api, name: &str, case: &Value, token: &str, depth: usize) -> Resp {
    let req = &case["request"];
    let method = req["method"].as_str().unwrap();
    let path = req["path"].as_str().unwrap();
    let ct = req["content_type"].as_str().unwrap();
    let mut headers: Vec<(&str, &str)> = vec![];
    if req["token"].as_bool() == Some(true) {
        headers.push(("X-Auth-Token", token));
    }
    let body = match &req["body"] {
        Value::Null => None,
        Value::String(s) if ct != "application/json" => Some(s.clone()),
        b => Some(b.to_string()),
    };
    let r = api.request(
        method,
        path,
        &headers,
        body.as_ref().map(|b| (ct, b.as_bytes())),
    );
    let want = &case["response"];
    assert_eq!(
        r.status as u64,
        want["status"].as_u64().unwrap(),
        "{name}: {r:?}"
    );
    let want_ct = want["content_type"].as_str().unwrap();
    let ct_of = |c: &str| c.split(';').next().unwrap_or_default().to_owned();
    assert_eq!(
        ct_of(r.header("content-type").unwrap_or_default()),
        ct_of(want_ct),
        "{name}: {r:?}"
    );
    match &want["body"] {
        Value::String(html) => {
            let salt_msg = Resp {
                status: 0,
                headers: vec![],
                body: html.clone(),
            }
            .message();
            assert_eq!(r.message(), salt_msg, "{name}: {r:?}");
        }
        body => {
            let (s, o) = (shape(body, depth), shape(&r.json(), depth));
            assert!(
                same_shape(&s, &o),
                "{name}: saltq's answer has not Salt's shape\n salt: {s}\nsaltq: {o}\n body: {}",
                r.body
            );
        }
    }
    r
}

/// Reads an event stream until every one of `want` has appeared, or `timeout`.
fn read_events(stream: &mut dyn Stream, want: &[String], timeout: Duration) -> String {
    let deadline = Instant::now() + timeout;
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("reading /events: {e}"),
        }
        let text = String::from_utf8_lossy(&seen);
        if want.iter().all(|w| text.contains(w.as_str())) {
            break;
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

fn start() -> (Master, Minion) {
    let master = Master::start_with(|d| config(d, "port: 0, host: 127.0.0.1"));
    let m = master.minion("m1", "");
    master.wait_for("m1");
    (master, m)
}

/// Every recorded request replayed against saltq, answered with Salt's status, content type
/// and shape; then what the recording cannot show: job ownership, SSE framing and hooks,
/// logout, tokens across a restart.
#[test]
fn salt_api_answers_as_salts() {
    let (mut master, _m) = start();
    let api = Api::new(&master, true);
    let cases = recording();
    let alice = api.login("alice", "secret");
    let bob = api.login("bob", "pingonly");
    // Cases whose body varies beyond shape are compared less deeply: grains differ between
    // Salt's and saltq's minions, `/stats` is each server's own counters.
    let skip = ["events", "stats", "logout", "after_logout", "job", "jobs"];
    for (name, case) in cases.as_object().unwrap() {
        if skip.contains(&name.as_str()) {
            continue;
        }
        let token = match name.as_str() {
            // The token Salt's recording sent: not one of Salt's.
            "root_bad_token" => "0123abcd",
            n if n.starts_with("bob_") => &bob,
            _ => &alice,
        };
        let depth = if name.starts_with("minion") { 3 } else { 8 };
        replay(&api, name, case, token, depth);
    }
    // Exact answers where Salt's are exact.
    let r = api.json(
        "POST",
        "/",
        Some(&alice),
        &json!([{"client": "local", "tgt": "*", "fun": "test.ping"}]),
    );
    assert_eq!(r.json(), json!({"return": [{"m1": true}]}));
    let r = api.json(
        "POST",
        "/",
        Some(&alice),
        &json!([{"client": "runner", "fun": "manage.status"}]),
    );
    assert_eq!(r.json(), json!({"return": [{"down": [], "up": ["m1"]}]}));
    let r = api.json(
        "POST",
        "/login",
        None,
        &json!({"username": "alice", "password": "secret", "eauth": "file"}),
    );
    let ret = &r.json()["return"][0];
    assert_eq!(ret["perms"], json!([".*", "@jobs", "@runner", "@wheel"]));
    assert_eq!(ret["user"], "alice");
    assert!(
        r.header("set-cookie")
            .is_some_and(|c| c.starts_with("session_id=")),
        "{r:?}"
    );
    // A wrong password and an unknown user look the same.
    let wrong = api.json(
        "POST",
        "/login",
        None,
        &json!({"username": "alice", "password": "x", "eauth": "file"}),
    );
    let unknown = api.json(
        "POST",
        "/login",
        None,
        &json!({"username": "nobody", "password": "x", "eauth": "file"}),
    );
    assert_eq!(
        (wrong.status, wrong.body.clone()),
        (unknown.status, unknown.body.clone())
    );
    // The session cookie works as the header does.
    let r = api.request(
        "POST",
        "/",
        &[("Cookie", &format!("session_id={alice}"))],
        Some((
            "application/json",
            br#"[{"client":"local","tgt":"m1","fun":"test.ping"}]"#,
        )),
    );
    assert_eq!(r.json(), json!({"return": [{"m1": true}]}));

    // A job published through salt-api is the eauth user's, in its load, its events and the
    // job cache.
    let r = api.json(
        "POST",
        "/",
        Some(&bob),
        &json!([{"client": "local_async", "tgt": "m1", "fun": "test.ping"}]),
    );
    assert_eq!(r.json()["return"][0]["minions"], json!(["m1"]), "{r:?}");
    let r = api.json(
        "POST",
        "/",
        Some(&alice),
        &json!([{"client": "local_async", "tgt": "m1", "fun": "test.ping"}]),
    );
    let jid = r.json()["return"][0]["jid"].as_str().unwrap().to_owned();
    let job = eventually(
        "the job's return in /jobs/<jid>",
        Duration::from_secs(20),
        || {
            let r = api.get(&format!("/jobs/{jid}"), Some(&alice));
            let v = r.json();
            (v["return"][0]["m1"] == json!(true)).then_some(v)
        },
    );
    assert_eq!(job["info"][0]["User"], "alice", "{job}");
    let mut case = cases["job"].clone();
    case["request"]["path"] = json!(format!("/jobs/{jid}"));
    replay(&api, "job", &case, &alice, 3);
    let jobs = api.get("/jobs", Some(&alice)).json();
    assert_eq!(jobs["return"][0][&jid]["User"], "alice", "{jobs}");
    replay(&api, "jobs", &cases["jobs"], &alice, 2);

    // Events: rest_cherrypy's framing, a job's new and ret events, a webhook's event.
    let mut sse = api.connect();
    write!(sse, "GET /events?token={alice} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let head = read_events(
        sse.as_mut(),
        &["retry: 400\n".to_owned()],
        Duration::from_secs(10),
    );
    assert!(head.contains("text/event-stream"), "{head}");
    let r = api.json(
        "POST",
        "/",
        Some(&alice),
        &json!([{"client": "local_async", "tgt": "m1", "fun": "test.ping"}]),
    );
    let jid2 = r.json()["return"][0]["jid"].as_str().unwrap().to_owned();
    let hook = api.json("POST", "/hook/my/tag", Some(&alice), &json!({"foo": "bar"}));
    assert_eq!(hook.json(), json!({"success": true}));
    let want = vec![
        format!("tag: salt/job/{jid2}/new\ndata: {{\"data\": {{"),
        format!("tag: salt/job/{jid2}/ret/m1\ndata: "),
        "tag: salt/netapi/hook/my/tag\ndata: ".to_owned(),
    ];
    let text = read_events(sse.as_mut(), &want, Duration::from_secs(20));
    for w in &want {
        assert!(
            text.contains(w.as_str()),
            "no {w:?} in the event stream:\n{text}"
        );
    }
    assert!(text.contains("\"post\": {\"foo\": \"bar\"}"), "{text}");
    assert!(
        text.contains(&format!("\"tag\": \"salt/job/{jid2}/ret/m1\"}}\n\n")),
        "{text}"
    );
    // A reader that stops reading does not hold up the master: jobs go on, and another reader
    // still gets every event.
    let mut stalled = api.connect();
    write!(
        stalled,
        "GET /events HTTP/1.1\r\nHost: x\r\nX-Auth-Token: {alice}\r\n\r\n"
    )
    .unwrap();
    let started = Instant::now();
    let mut last = String::new();
    for _ in 0..20 {
        let r = api.json(
            "POST",
            "/",
            Some(&alice),
            &json!([{"client": "local_async", "tgt": "m1", "fun": "test.ping"}]),
        );
        last = r.json()["return"][0]["jid"].as_str().unwrap().to_owned();
    }
    let text = read_events(
        sse.as_mut(),
        &[format!("tag: salt/job/{last}/ret/m1\n")],
        Duration::from_secs(30),
    );
    assert!(text.contains(&format!("salt/job/{last}/ret/m1")), "{text}");
    assert!(started.elapsed() < Duration::from_secs(30));
    drop(stalled);
    drop(sse);
    // Salt's recording shows the same framing.
    let salt_events = cases["events"]["text_head"].as_str().unwrap();
    assert!(
        salt_events.starts_with("retry: 400\ntag: "),
        "{salt_events}"
    );

    // /token answers Salt's token data, which /run and ?salt_token= take.
    let r = api.json(
        "POST",
        "/token",
        None,
        &json!([{"username": "alice", "password": "secret", "eauth": "file"}]),
    );
    let t = r.json()[0].clone();
    assert_eq!(
        (t["name"].clone(), t["eauth"].clone()),
        (json!("alice"), json!("file")),
        "{r:?}"
    );
    let tok = t["token"].as_str().unwrap();
    let r = api.json(
        "POST",
        "/run",
        None,
        &json!([{"client": "local", "tgt": "m1", "fun": "test.ping", "token": tok}]),
    );
    assert_eq!(r.json(), json!({"return": [{"m1": true}]}), "{r:?}");
    let r = api.json("POST", "/token", None, &json!([{"username": "alice"}]));
    assert_eq!(
        (r.status, r.message()),
        (
            400,
            "Require &quot;username&quot;, &quot;password&quot;, and &quot;eauth&quot; params"
                .replace("&quot;", "\"")
        )
    );

    // /stats needs a token and answers counters.
    assert_eq!(api.get("/stats", None).status, 401);
    assert!(api.get("/stats", Some(&alice)).json().is_object());

    // Tokens survive a restart of the master; a logout revokes one.
    master.restart();
    let api = Api::new(&master, true);
    master.wait_for("m1");
    let r = api.json(
        "POST",
        "/",
        Some(&bob),
        &json!([{"client": "local", "tgt": "m1", "fun": "test.ping"}]),
    );
    assert_eq!(
        r.json(),
        json!({"return": [{"m1": true}]}),
        "bob's token after a restart: {r:?}"
    );
    let r = replay(&api, "logout", &cases["logout"], &bob, 8);
    assert_eq!(r.json(), json!({"return": "Your token has been cleared"}));
    replay(&api, "after_logout", &cases["after_logout"], &bob, 8);
}

/// The wheel client manages keys as salt-key does: a pending key accepted through salt-api
/// lets its minion in; rejected and deleted, it is gone.
#[test]
fn wheel_manages_keys() {
    let master = Master::start_with(|d| {
        config(d, "port: 0, host: 127.0.0.1").replace("auto_accept: true", "auto_accept: false")
    });
    let api = Api::new(&master, true);
    let alice = api.login("alice", "secret");
    let wheel = |fun: &str, extra: Value| {
        let mut low = json!({"client": "wheel", "fun": fun});
        for (k, v) in extra.as_object().unwrap() {
            low[k] = v.clone();
        }
        let r = api.json("POST", "/", Some(&alice), &json!([low]));
        assert_eq!(r.status, 200, "{fun}: {r:?}");
        r.json()["return"][0]["data"].clone()
    };
    let _m = master.minion("k1", "");
    eventually("k1 pending", Duration::from_secs(20), || {
        (wheel("key.list", json!({"match": "pre"}))["return"] == json!({"minions_pre": ["k1"]}))
            .then_some(())
    });
    let d = wheel("key.accept", json!({"match": "k1"}));
    assert_eq!(d["return"], json!({"minions": ["k1"]}), "{d}");
    assert_eq!(d["success"], json!(true));
    assert_eq!(d["user"], "alice");
    master.wait_for("k1");
    let fp = wheel("key.finger", json!({"match": "k1"}));
    assert!(
        fp["return"]["minions"]["k1"]
            .as_str()
            .is_some_and(|f| f.contains(':')),
        "{fp}"
    );
    let d = wheel(
        "key.reject",
        json!({"match": "k1", "include_accepted": true}),
    );
    assert_eq!(d["return"], json!({"minions_rejected": ["k1"]}), "{d}");
    wheel("key.delete", json!({"match": "k1"}));
    let all = wheel("key.list_all", json!({}));
    assert!(!all["return"].to_string().contains("k1"), "{all}");
    let v = wheel("config.values", json!({}));
    assert_eq!(v["return"]["token_expire"], json!(43200.0), "{v}");
    // bob has no @wheel.
    let bob = api.login("bob", "pingonly");
    let r = api.json(
        "POST",
        "/",
        Some(&bob),
        &json!([{"client": "wheel", "fun": "key.list_all"}]),
    );
    assert_eq!(
        (r.status, r.message()),
        (
            401,
            "Authentication failure of type \"token\" occurred for user bob.".to_owned()
        )
    );
}

/// Plain HTTP with `disable_ssl`, routes under `root_prefix`, webhooks without a token with
/// `webhook_disable_auth`; five failed logins from one address within a minute stop further
/// attempts from it, even with the right password, and each failure is logged.
#[test]
fn failed_logins_are_limited_and_logged() {
    let master = Master::start_with(|d| {
        config(
            d,
            "port: 0, host: 127.0.0.1, disable_ssl: true, root_prefix: /api, webhook_disable_auth: true",
        )
    });
    let api = Api::new(&master, false);
    let r = api.get("/api", None);
    assert_eq!(r.json()["return"], "Welcome", "{r:?}");
    assert_eq!(api.get("/login", None).status, 404);
    let r = api.json("POST", "/api/hook/open", None, &json!({"a": 1}));
    assert_eq!(r.json(), json!({"success": true}), "{r:?}");
    let r = api.json(
        "POST",
        "/api/login",
        None,
        &json!({"username": "bob", "password": "pingonly", "eauth": "file"}),
    );
    let bob = r.json()["return"][0]["token"].as_str().unwrap().to_owned();
    assert_eq!(api.get("/api/keys", Some(&bob)).status, 401);
    for _ in 0..5 {
        let r = api.json(
            "POST",
            "/api/login",
            None,
            &json!({"username": "alice", "password": "guess", "eauth": "file"}),
        );
        assert_eq!(r.status, 401);
    }
    let r = api.json(
        "POST",
        "/api/login",
        None,
        &json!({"username": "alice", "password": "secret", "eauth": "file"}),
    );
    assert_eq!(r.status, 429, "{r:?}");
    assert!(
        r.message()
            .contains("Too many failed logins from 127.0.0.1"),
        "{r:?}"
    );
    let log = std::fs::read_to_string(master.log()).unwrap();
    assert!(log.contains("salt-api login failed"), "{log}");
}

/// A bad salt-api setting stops the master at start, naming the key.
#[test]
fn bad_salt_api_config_is_refused_at_start() {
    for (config, part) in [
        ("rest_cherrypy: {host: 127.0.0.1}", "port is required"),
        ("rest_cherrypy: {port: 0, thread_pool: 4}", "thread_pool"),
        (
            "rest_cherrypy: {port: 0}\nnetapi_enable_clients: [lokal]",
            "lokal",
        ),
        (
            "rest_cherrypy: {port: 0}\nexternal_auth: {file: {alice: ['.*']}}",
            "^filename",
        ),
        (
            "rest_cherrypy: {port: 0, ssl_crt: /nonexistent.crt, ssl_key: /nonexistent.key}",
            "/nonexistent.crt",
        ),
    ] {
        let (code, err) = saltq_tests::refused_start("saltq-master", "master", config);
        assert_ne!(code, 0, "{config}: {err}");
        assert!(err.contains(part), "{config}: {err}");
    }
}

/// pepper, from `SALTQ_TEST_PEPPER` (required under CI; otherwise `None`, the test skipped
/// with a message).
pub(crate) fn pepper() -> Option<String> {
    match std::env::var("SALTQ_TEST_PEPPER") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            assert!(
                std::env::var("SALTQ_CI").is_err(),
                "SALTQ_TEST_PEPPER is not set under CI: .ci/run must make the pepper venv"
            );
            eprintln!(
                "skipped: SALTQ_TEST_PEPPER is not set (path to pepper; .ci/run makes a venv with salt-pepper)"
            );
            None
        }
    }
}

/// pepper, a salt-api client we did not write, against saltq over TLS.
#[test]
fn pepper_works_against_saltq() {
    let Some(pepper) = pepper() else {
        return;
    };
    let (master, _m) = start();
    let url = format!("https://{}", api_addr(&master));
    let home = master.dir.0.join("pepper-home");
    std::fs::create_dir_all(&home).unwrap();
    let run = |user: &str, password: &str, args: &[&str]| {
        let o = Command::new(&pepper)
            .env("HOME", &home)
            .env("SSL_CERT_FILE", master.pki_dir().join("ca.crt"))
            .env_remove("PEPPERRC")
            .args([
                "--saltapi-url",
                &url,
                "--eauth",
                "file",
                "--username",
                user,
                "--password",
                password,
                "--non-interactive",
            ])
            .args(args)
            .output()
            .expect("run pepper");
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let json_of = |out: &str| -> Value {
        serde_json::from_str(out)
            .unwrap_or_else(|e| panic!("pepper's output is not JSON ({e}): {out}"))
    };
    let (code, out, err) = run("alice", "secret", &["*", "test.ping"]);
    assert_eq!(code, 0, "{out}{err}");
    // pepper asks `local` for full_return.
    assert_eq!(
        json_of(&out)["return"][0]["m1"]["ret"],
        json!(true),
        "{out}"
    );
    let (code, out, err) = run("alice", "secret", &["-L", "m1", "test.echo", "hi"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        json_of(&out)["return"][0]["m1"]["ret"],
        json!("hi"),
        "{out}"
    );
    let (code, out, err) = run(
        "alice",
        "secret",
        &["--client", "local_async", "*", "test.ping"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        json_of(&out)["return"][0]["minions"],
        json!(["m1"]),
        "{out}"
    );
    // pepper asks runners for full_return too: Salt answers the runner's ret event.
    let (code, out, err) = run("alice", "secret", &["--client", "runner", "manage.status"]);
    assert_eq!(code, 0, "{out}{err}");
    let ret = &json_of(&out)["return"][0];
    assert_eq!(
        ret["data"]["return"],
        json!({"down": [], "up": ["m1"]}),
        "{out}"
    );
    assert!(
        ret["tag"]
            .as_str()
            .is_some_and(|t| t.starts_with("salt/run/") && t.ends_with("/ret")),
        "{out}"
    );
    let (code, out, err) = run("alice", "secret", &["--client", "wheel", "key.list_all"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        json_of(&out)["return"][0]["data"]["return"]["minions"],
        json!(["m1"]),
        "{out}"
    );
    // -r: a token from /token, commands through /run.
    let (code, out, err) = run("alice", "secret", &["-r", "*", "test.ping"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        json_of(&out)["return"][0]["m1"]["ret"],
        json!(true),
        "{out}"
    );
    // bob may ping, not run commands; a wrong password gets nothing.
    let (code, out, err) = run("bob", "pingonly", &["*", "test.ping"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run("bob", "pingonly", &["*", "cmd.run", "id"]);
    assert_ne!(code, 0, "bob ran cmd.run: {out}{err}");
    assert!(
        format!("{out}{err}").contains("Authentication denied"),
        "{out}{err}"
    );
    let (code, out, err) = run("alice", "wrong", &["*", "test.ping"]);
    assert_ne!(code, 0, "a wrong password: {out}{err}");
    assert!(
        format!("{out}{err}").contains("Authentication denied"),
        "{out}{err}"
    );
}
