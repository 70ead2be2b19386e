//! salt-api's websockets on the master's event bus: rest_tornado's `/all_events/<token>` and
//! `/formatted_events/<token>` (Salt's `saltnado_websockets`), and rest_cherrypy's
//! `/ws/<token>` (its `WebsocketEndpoint`, `?format_events` for the formatted feed).
//!
//! As in Salt, a client opens the socket with a valid token, sends `websocket client ready`,
//! and is then sent every event. What each feed sends is decided by pure code ([`Feed`],
//! [`SaltInfo`]); the task around it only moves frames, and bounds the socket: frames and
//! messages of at most [`MAX_MESSAGE`] bytes, at most [`FLOOD_LIMIT`] messages a second from
//! the client, a ping every [`PING_EVERY`] and a close after [`IDLE_LIMIT`] without a word
//! (pongs count), a send that waits longer than [`SEND_TIMEOUT`] on a client that does not read
//! ends the socket with a log line (its unsent frames are bounded by [`MAX_WRITE_BUFFER`]), and
//! events a slow reader cannot take are dropped by the backend's bounded channel, so a reader
//! never holds the master's bus. The socket holds its connection's slot in the listener's gate
//! while it lives.
//!
//! Every event stream (these sockets and both flavours' `/events`) re-checks its token at each
//! event and every [`TOKEN_RECHECK`], and ends once it was logged out or expired: Salt's
//! rest_cherrypy `/events` checks before each event; Salt's websockets and saltnado's
//! `/events` never re-check, which saltq does not copy (a revoked token must not keep a feed).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use futures_util::{SinkExt, StreamExt};
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use saltq_semantics::python::salt_dumps;
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use crate::backend::{Backend, Client, Identity, Low};

/// The message that starts the events, as Salt's handlers wait for it.
pub const READY: &str = "websocket client ready";
/// The largest frame or message a client may send.
pub const MAX_MESSAGE: usize = 64 * 1024;
/// Messages a second a client may send before the socket is closed (policy violation).
pub const FLOOD_LIMIT: u32 = 50;
/// How often the server pings.
pub const PING_EVERY: Duration = Duration::from_secs(20);
/// How long a client may stay silent (no message, no pong) before the socket is closed.
pub const IDLE_LIMIT: Duration = Duration::from_secs(60);
/// How long one message may wait for a client that does not read.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(15);
/// The most a socket buffers for a client that does not read, beyond the kernel's buffers.
pub const MAX_WRITE_BUFFER: usize = 1024 * 1024;
/// How often a stream re-checks its token between events.
pub const TOKEN_RECHECK: Duration = Duration::from_secs(1);

/// Whether a stream's token still lives (not logged out, not expired).
pub type Alive = Arc<dyn Fn() -> bool + Send + Sync>;

/// Server-Sent Events of `rx`, each written by `frame`, ending once `alive` says the token
/// died: checked at each event and every [`TOKEN_RECHECK`] while the bus is quiet.
pub fn sse_while_alive(
    rx: tokio::sync::mpsc::Receiver<crate::backend::Event>,
    alive: Alive,
    frame: fn(&crate::backend::Event) -> String,
) -> impl futures_util::Stream<Item = Result<bytes::Bytes, std::convert::Infallible>> + Send {
    let tick = tokio::time::interval_at(Instant::now() + TOKEN_RECHECK, TOKEN_RECHECK);
    futures_util::stream::unfold(
        (rx, alive, tick),
        move |(mut rx, alive, mut tick)| async move {
            loop {
                tokio::select! {
                    ev = rx.recv() => {
                        let ev = ev?;
                        if !alive() {
                            tracing::info!("salt-api event stream ended: its token was logged out or expired");
                            return None;
                        }
                        let b = bytes::Bytes::from(frame(&ev));
                        return Some((Ok::<_, std::convert::Infallible>(b), (rx, alive, tick)));
                    }
                    _ = tick.tick() => {
                        if !alive() {
                            tracing::info!("salt-api event stream ended: its token was logged out or expired");
                            return None;
                        }
                    }
                }
            }
        },
    )
}

/// What a socket sends for each event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feed {
    /// rest_tornado's `/all_events`: each event as JSON `{"data": ..., "tag": ...}`.
    AllEvents,
    /// rest_cherrypy's `/ws`: each event as `data: <json>\n\n`.
    CherrypyData,
    /// `/formatted_events` and `/ws?format_events`: Salt's `SaltInfo` summaries of jobs and
    /// minions.
    Formatted,
}

/// What a feed asks of the socket.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// Send this text message.
    Send(String),
    /// Ask these minions (`*`, or a list) for their grains with `local_async`, as the caller
    /// (Salt's formatted feed does it on connect and when minions appear).
    Grains(Vec<String>),
}

/// One event as `/all_events` and rest_cherrypy's `/ws` write it.
pub fn event_json(tag: &str, data: &Value) -> String {
    salt_dumps(&json!({"data": data, "tag": tag}))
}

/// Salt's `event_processor.SaltInfo`: the jobs and minions seen so far, published whole
/// (`{"jobs": ...}` or `{"minions": ...}`, each followed by a blank line) when an event changes
/// them.
#[derive(Debug, Default)]
pub struct SaltInfo {
    jobs: Map<String, Value>,
    minions: BTreeMap<String, Map<String, Value>>,
}

fn strs(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

impl SaltInfo {
    fn publish(key: &str, v: Value) -> Out {
        let mut m = Map::new();
        m.insert(key.to_owned(), v);
        Out::Send(salt_dumps(&Value::Object(m)) + "\n\n")
    }

    fn publish_minions(&self) -> Out {
        let all: Map<String, Value> = self
            .minions
            .iter()
            .map(|(id, info)| {
                let mut m = info.clone();
                m.insert("id".into(), json!(id));
                (id.clone(), Value::Object(m))
            })
            .collect();
        Self::publish("minions", Value::Object(all))
    }

    /// What to do for one event.
    pub fn process(&mut self, tag: &str, data: &Value) -> Vec<Out> {
        let parts: Vec<&str> = tag.split('/').collect();
        match (parts.get(1).copied(), parts.get(3).copied()) {
            (Some("job"), Some("new")) => {
                let minions: Map<String, Value> = strs(data.get("minions"))
                    .into_iter()
                    .map(|m| (m, json!({"success": false})))
                    .collect();
                let jid = data.get("jid").and_then(Value::as_str).unwrap_or_default();
                self.jobs.insert(
                    jid.to_owned(),
                    json!({"jid": jid, "start_time": data.get("_stamp"), "minions": minions,
                           "fun": data.get("fun"), "tgt": data.get("tgt"),
                           "tgt_type": data.get("tgt_type"), "state": "running"}),
                );
                vec![Self::publish("jobs", Value::Object(self.jobs.clone()))]
            }
            (Some("job"), Some("ret")) if parts.len() == 5 => {
                let (jid, mid) = (parts[2], parts[4]);
                let job = self.jobs.entry(jid).or_insert_with(|| json!({}));
                let minions = job
                    .as_object_mut()
                    .map(|j| j.entry("minions").or_insert_with(|| json!({})));
                if let Some(Value::Object(minions)) = minions {
                    let m = minions.entry(mid).or_insert_with(|| json!({}));
                    for k in ["return", "retcode", "success"] {
                        m[k] = data.get(k).cloned().unwrap_or(Value::Null);
                    }
                    let complete = minions
                        .values()
                        .all(|m| saltq_semantics::python::truthy(&m["success"]));
                    if complete {
                        job["state"] = json!("complete");
                    }
                }
                let mut out = vec![Self::publish("jobs", Value::Object(self.jobs.clone()))];
                if data.get("fun").and_then(Value::as_str) == Some("grains.items") {
                    let grains = data.get("return").cloned().unwrap_or(Value::Null);
                    self.minions
                        .entry(mid.to_owned())
                        .or_default()
                        .insert("grains".into(), grains);
                    out.push(self.publish_minions());
                }
                out
            }
            (Some("key"), _) => {
                let id = data.get("id").and_then(Value::as_str).unwrap_or_default();
                match data.get("act").and_then(Value::as_str) {
                    Some("delete") => {
                        self.minions.remove(id);
                    }
                    Some("accept") => {
                        self.minions.entry(id.to_owned()).or_default();
                    }
                    _ => {}
                }
                vec![self.publish_minions()]
            }
            (Some("presence"), _) => self.presence(data),
            _ => vec![],
        }
    }

    /// `salt/presence/present` and `salt/presence/change`: minions gone are dropped, new ones
    /// added and asked for their grains.
    fn presence(&mut self, data: &Value) -> Vec<Out> {
        let lost = strs(data.get("lost"));
        let present = strs(data.get("present"));
        let mut changed = false;
        let dropped: Vec<String> = if lost.is_empty() {
            self.minions
                .keys()
                .filter(|m| !present.contains(m))
                .cloned()
                .collect()
        } else {
            lost
        };
        for m in dropped {
            changed = true;
            self.minions.remove(&m);
        }
        let mut new = strs(data.get("new"));
        if new.is_empty() {
            new = present
                .into_iter()
                .filter(|m| !self.minions.contains_key(m))
                .collect();
        }
        new.sort();
        new.dedup();
        let mut out = vec![];
        if !new.is_empty() {
            changed = true;
            for m in &new {
                self.minions.insert(m.clone(), Map::new());
            }
            out.push(Out::Grains(new));
        }
        if changed {
            out.push(self.publish_minions());
        }
        out
    }
}

/// Counts a client's messages per second (pure: fed the time).
#[derive(Debug, Default)]
pub struct Flood {
    window: Option<Instant>,
    count: u32,
}

impl Flood {
    /// Whether one more message at `now` is within [`FLOOD_LIMIT`].
    pub fn admit(&mut self, now: Instant) -> bool {
        match self.window {
            Some(w) if now.duration_since(w) < Duration::from_secs(1) => self.count += 1,
            _ => {
                self.window = Some(now);
                self.count = 1;
            }
        }
        self.count <= FLOOD_LIMIT
    }
}

/// The `101 Switching Protocols` answer to a websocket handshake, or why it is not one (400,
/// as Tornado answers `Can "Upgrade" only to "WebSocket".`).
pub fn handshake(headers: &HeaderMap) -> Result<Response<Body>, String> {
    let has = |name: header::HeaderName, word: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str()
                .unwrap_or_default()
                .split(',')
                .any(|p| p.trim().eq_ignore_ascii_case(word))
        })
    };
    if !has(header::UPGRADE, "websocket") {
        return Err("Can \"Upgrade\" only to \"WebSocket\".".into());
    }
    if !has(header::CONNECTION, "upgrade") {
        return Err("\"Connection\" must be \"Upgrade\".".into());
    }
    if headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .map(HeaderValue::as_bytes)
        != Some(b"13")
    {
        return Err("Sec-WebSocket-Version must be 13".into());
    }
    let key = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .ok_or("Missing/Invalid WebSocket headers")?;
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(
        header::SEC_WEBSOCKET_ACCEPT,
        HeaderValue::from_str(&accept).map_err(|e| e.to_string())?,
    );
    Ok(r)
}

/// Who the socket serves and where its events come from.
pub struct Session {
    /// What it sends.
    pub feed: Feed,
    /// Answer `server received message` to every message (rest_cherrypy's socket does).
    pub acknowledge: bool,
    /// The token's user (the formatted feed's grains jobs run as them).
    pub who: Identity,
    /// The master.
    pub backend: Arc<dyn Backend>,
    /// Whether the socket's token still lives: the socket closes once it does not.
    pub alive: Alive,
    /// Turns true when the master stops.
    pub stop: watch::Receiver<bool>,
}

/// Upgrades `req` (already checked by [`handshake`]) and runs the socket in its own task.
pub fn start(mut req: http::Request<Body>, session: Session) -> Result<Response<Body>, String> {
    let resp = handshake(req.headers())?;
    let busy = req
        .extensions()
        .get::<saltq_transport::http1::InService>()
        .map(|s| s.enter());
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let _busy = busy;
        let io = match on_upgrade.await {
            Ok(io) => hyper_util::rt::TokioIo::new(io),
            Err(e) => {
                tracing::debug!("salt-api websocket upgrade failed: {e}");
                return;
            }
        };
        let ws = WebSocketStream::from_raw_socket(io, Role::Server, Some(config())).await;
        run(ws, session).await;
    });
    Ok(resp)
}

/// The sockets' limits: what a client may send, what is buffered for one that does not read.
fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE))
        .max_write_buffer_size(MAX_WRITE_BUFFER)
}

async fn send<S>(tx: &mut S, text: String, within: Duration) -> bool
where
    S: futures_util::Sink<Message> + Unpin,
{
    matches!(
        tokio::time::timeout(within, tx.send(Message::text(text))).await,
        Ok(Ok(()))
    )
}

/// The socket's loop: the client's messages, the bus's events, pings, and the master's stop.
async fn run<T>(ws: WebSocketStream<T>, s: Session)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    run_with(ws, s, SEND_TIMEOUT).await
}

/// [`run`], a message waiting at most `send_timeout` for the client to read.
async fn run_with<T>(ws: WebSocketStream<T>, mut s: Session, send_timeout: Duration)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut tx, mut rx) = ws.split();
    let mut events: Option<tokio::sync::mpsc::Receiver<crate::backend::Event>> = None;
    let mut info = SaltInfo::default();
    let mut flood = Flood::default();
    let mut heard = Instant::now();
    let mut ping = tokio::time::interval_at(Instant::now() + PING_EVERY, PING_EVERY);
    let mut recheck = tokio::time::interval_at(Instant::now() + TOKEN_RECHECK, TOKEN_RECHECK);
    loop {
        let outs = tokio::select! {
            m = rx.next() => {
                let m = match m {
                    Some(Ok(m)) => m,
                    _ => break,
                };
                heard = Instant::now();
                if !flood.admit(heard) {
                    tracing::debug!("salt-api websocket closed: more than {FLOOD_LIMIT} messages a second");
                    let _ = tx.send(Message::Close(Some(tokio_tungstenite::tungstenite::protocol::CloseFrame {
                        code: tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode::Policy,
                        reason: "too many messages".into(),
                    }))).await;
                    break;
                }
                match m {
                    Message::Text(t) => {
                        let mut outs = vec![];
                        if s.acknowledge {
                            outs.push(Out::Send("server received message".into()));
                        }
                        if t.as_str() == READY && events.is_none() {
                            events = Some(s.backend.events());
                            if s.feed == Feed::Formatted {
                                outs.push(Out::Grains(vec!["*".into()]));
                            }
                        }
                        outs
                    }
                    Message::Close(_) => break,
                    _ => vec![],
                }
            }
            ev = async { match events.as_mut() { Some(r) => r.recv().await, None => std::future::pending().await } } => {
                let Some(ev) = ev else { break };
                if !(s.alive)() {
                    token_died(&mut tx).await;
                    break;
                }
                match s.feed {
                    Feed::AllEvents => vec![Out::Send(event_json(&ev.tag, &ev.data))],
                    Feed::CherrypyData => vec![Out::Send(format!("data: {}\n\n", event_json(&ev.tag, &ev.data)))],
                    Feed::Formatted => info.process(&ev.tag, &ev.data),
                }
            }
            _ = ping.tick() => {
                if heard.elapsed() > IDLE_LIMIT {
                    tracing::debug!("salt-api websocket closed: silent for {} s", IDLE_LIMIT.as_secs());
                    break;
                }
                if tokio::time::timeout(SEND_TIMEOUT, tx.send(Message::Ping(Default::default()))).await.map_or(true, |r| r.is_err()) {
                    break;
                }
                vec![]
            }
            _ = recheck.tick() => {
                if !(s.alive)() {
                    token_died(&mut tx).await;
                    break;
                }
                vec![]
            }
            _ = crate::server::stopped(&mut s.stop) => {
                let _ = tx.send(Message::Close(None)).await;
                break;
            }
        };
        for o in outs {
            match o {
                Out::Send(text) => {
                    if !send(&mut tx, text, send_timeout).await {
                        let waiting = events.as_ref().map_or(0, |r| r.len());
                        tracing::warn!(
                            user = %s.who.user,
                            "salt-api websocket dropped: its client read nothing for {:?} ({waiting} events waiting, {} MiB of frames buffered at most)",
                            send_timeout,
                            MAX_WRITE_BUFFER >> 20
                        );
                        return;
                    }
                }
                Out::Grains(tgt) => grains(&s, tgt),
            }
        }
    }
}

/// Closes a socket whose token was logged out or expired (policy violation, as a socket
/// refused for its token).
async fn token_died<S>(tx: &mut S)
where
    S: futures_util::Sink<Message> + Unpin,
{
    tracing::info!("salt-api websocket closed: its token was logged out or expired");
    let close = Message::Close(Some(tokio_tungstenite::tungstenite::protocol::CloseFrame {
        code: tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode::Policy,
        reason: "token expired".into(),
    }));
    let _ = tokio::time::timeout(SEND_TIMEOUT, tx.send(close)).await;
}

/// Asks `tgt` for their grains as the socket's user, the answers arriving as events.
fn grains(s: &Session, tgt: Vec<String>) {
    let list = !(tgt.len() == 1 && tgt[0] == "*");
    let low = Low {
        client: Client::LocalAsync,
        fun: "grains.items".into(),
        multi: vec![],
        tgt: tgt.join(","),
        tgt_type: if list { "list" } else { "glob" }.into(),
        arg: vec![],
        kwarg: Map::new(),
        full_return: false,
        timeout: None,
        ret: String::new(),
        batch: None,
        returned_only: false,
    };
    let fut = s.backend.run(s.who.clone(), low);
    tokio::spawn(async move {
        if let Err(e) = fut.await {
            tracing::debug!("salt-api websocket grains.items: {e}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handshake_answers_with_the_accept_key() {
        let mut h = HeaderMap::new();
        assert!(handshake(&h).unwrap_err().contains("Upgrade"));
        h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, Upgrade"),
        );
        h.insert(
            header::SEC_WEBSOCKET_VERSION,
            HeaderValue::from_static("13"),
        );
        assert!(handshake(&h).is_err());
        // RFC 6455's example.
        h.insert(
            header::SEC_WEBSOCKET_KEY,
            HeaderValue::from_static("dGhlIHNhbXBsZSBub25jZQ=="),
        );
        let r = handshake(&h).unwrap();
        assert_eq!(r.status(), 101);
        assert_eq!(
            r.headers()[header::SEC_WEBSOCKET_ACCEPT],
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn a_flood_is_counted_per_second() {
        let mut f = Flood::default();
        let t = Instant::now();
        for _ in 0..FLOOD_LIMIT {
            assert!(f.admit(t));
        }
        assert!(!f.admit(t + Duration::from_millis(999)));
        assert!(f.admit(t + Duration::from_secs(1)));
    }

    fn sent(outs: &[Out]) -> Vec<Value> {
        outs.iter()
            .filter_map(|o| match o {
                Out::Send(s) => {
                    assert!(s.ends_with("\n\n"), "{s:?}");
                    Some(serde_json::from_str(s).unwrap())
                }
                Out::Grains(_) => None,
            })
            .collect()
    }

    /// Salt's `SaltInfo` on a job's life: new, a return, the minion's grains, a key deleted.
    #[test]
    fn formatted_events_follow_jobs_and_minions() {
        let mut i = SaltInfo::default();
        let new = json!({"jid": "1", "_stamp": "2026-01-01T00:00:00.000000", "minions": ["m1", "m2"],
                         "fun": "test.ping", "tgt": "*", "tgt_type": "glob", "user": "alice"});
        let out = sent(&i.process("salt/job/1/new", &new));
        assert_eq!(
            out,
            [
                json!({"jobs": {"1": {"jid": "1", "start_time": "2026-01-01T00:00:00.000000",
                "minions": {"m1": {"success": false}, "m2": {"success": false}},
                "fun": "test.ping", "tgt": "*", "tgt_type": "glob", "state": "running"}}})
            ]
        );
        let ret =
            json!({"id": "m1", "return": true, "retcode": 0, "success": true, "fun": "test.ping"});
        let out = sent(&i.process("salt/job/1/ret/m1", &ret));
        assert_eq!(
            out[0]["jobs"]["1"]["minions"]["m1"],
            json!({"return": true, "retcode": 0, "success": true})
        );
        assert_eq!(out[0]["jobs"]["1"]["state"], "running");
        i.process("salt/job/1/ret/m2", &ret);
        let out = sent(&i.process("salt/job/1/ret/m2", &ret));
        assert_eq!(out[0]["jobs"]["1"]["state"], "complete");
        let g = json!({"id": "m1", "return": {"os": "Debian"}, "retcode": 0, "success": true, "fun": "grains.items"});
        let out = sent(&i.process("salt/job/2/ret/m1", &g));
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[1],
            json!({"minions": {"m1": {"grains": {"os": "Debian"}, "id": "m1"}}})
        );
        let out = sent(&i.process(
            "salt/key",
            &json!({"act": "delete", "id": "m1", "result": true}),
        ));
        assert_eq!(out, [json!({"minions": {}})]);
        assert!(i.process("salt/auth", &json!({})).is_empty());
        assert!(i.process("x", &json!({})).is_empty());
    }

    #[test]
    fn presence_asks_new_minions_for_grains() {
        let mut i = SaltInfo::default();
        let out = i.process("salt/presence/present", &json!({"present": ["b", "a"]}));
        assert_eq!(out[0], Out::Grains(vec!["a".into(), "b".into()]));
        assert_eq!(
            sent(&out),
            [json!({"minions": {"a": {"id": "a"}, "b": {"id": "b"}}})]
        );
        assert!(
            i.process("salt/presence/present", &json!({"present": ["a", "b"]}))
                .is_empty()
        );
        let out = i.process("salt/presence/change", &json!({"new": [], "lost": ["a"]}));
        assert_eq!(sent(&out), [json!({"minions": {"b": {"id": "b"}}})]);
    }

    /// A backend whose bus is the test's channel.
    struct Bus(std::sync::Mutex<Option<tokio::sync::mpsc::Receiver<crate::backend::Event>>>);

    impl Backend for Bus {
        fn run(
            &self,
            _: Identity,
            _: Low,
        ) -> futures_util::future::BoxFuture<'static, Result<Value, crate::backend::ApiError>>
        {
            Box::pin(async { Ok(Value::Null) })
        }
        fn fire(&self, _: String, _: Value) {}
        fn events(&self) -> tokio::sync::mpsc::Receiver<crate::backend::Event> {
            self.0.lock().unwrap().take().expect("one reader")
        }
        fn groups(&self, _: &str) -> Vec<String> {
            vec![]
        }
        fn may_run_runner(
            &self,
            _: &Identity,
            _: &str,
            _: &Map<String, Value>,
        ) -> Result<(), crate::backend::ApiError> {
            Ok(())
        }
    }

    /// A socket pair over an in-memory pipe of 64 KiB, the server's session on a bus of 64
    /// events (dropped when full, as the master's backend does) and a token `alive` says of.
    async fn pair(
        alive: Arc<std::sync::atomic::AtomicBool>,
    ) -> (
        WebSocketStream<tokio::io::DuplexStream>,
        WebSocketStream<tokio::io::DuplexStream>,
        tokio::sync::mpsc::Sender<crate::backend::Event>,
        Session,
        watch::Sender<bool>,
    ) {
        let (a, b) = tokio::io::duplex(64 * 1024);
        let server = WebSocketStream::from_raw_socket(a, Role::Server, Some(config())).await;
        let client = WebSocketStream::from_raw_socket(b, Role::Client, None).await;
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let (stop_tx, stop) = watch::channel(false);
        let session = Session {
            feed: Feed::AllEvents,
            acknowledge: false,
            who: Identity {
                user: "alice".into(),
                eauth: "file".into(),
                auth_type: "token".into(),
                perms: vec![],
            },
            backend: Arc::new(Bus(std::sync::Mutex::new(Some(rx)))),
            alive: Arc::new(move || alive.load(std::sync::atomic::Ordering::Relaxed)),
            stop,
        };
        (server, client, tx, session, stop_tx)
    }

    /// A client that says it is ready and then never reads: the bus is never blocked (its
    /// events are dropped once the socket's queue is full), the socket buffers a bounded
    /// amount, and it is dropped once a message waited `send_timeout`.
    #[tokio::test]
    async fn a_reader_that_never_reads_is_dropped() {
        let alive = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let (server, mut client, bus, session, _stop) = pair(alive).await;
        let task = tokio::spawn(run_with(server, session, Duration::from_millis(300)));
        client.send(Message::text(READY)).await.unwrap();
        let data = json!({"blob": "x".repeat(16 * 1024)});
        let (mut sent, mut dropped) = (0u32, 0u32);
        // Bounded: the socket must end long before 100,000 events.
        for _ in 0..100_000 {
            if task.is_finished() {
                break;
            }
            let ev = crate::backend::Event {
                tag: "e2e/flood".into(),
                data: data.clone(),
            };
            match bus.try_send(ev) {
                Ok(()) => sent += 1,
                Err(_) => dropped += 1,
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("the socket ends")
            .unwrap();
        assert!(dropped > 0, "the bus dropped events for the stuck reader");
        // What went into the pipe is bounded by the pipe and the write buffer.
        assert!(
            (sent as usize) * 16 * 1024 < 64 * 1024 + MAX_WRITE_BUFFER + 64 * 16 * 1024 * 2,
            "sent {sent}"
        );
        // The channel is closed once the socket is gone: the backend stops forwarding.
        assert!(bus.is_closed());
        drop(client);
    }

    /// A token logged out while its socket is open: the socket closes (policy violation).
    #[tokio::test]
    async fn a_socket_ends_when_its_token_dies() {
        let alive = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let (server, mut client, bus, session, _stop) = pair(alive.clone()).await;
        let task = tokio::spawn(run_with(server, session, SEND_TIMEOUT));
        client.send(Message::text(READY)).await.unwrap();
        bus.send(crate::backend::Event {
            tag: "a".into(),
            data: json!({}),
        })
        .await
        .unwrap();
        let m = client.next().await.unwrap().unwrap();
        assert!(m.to_text().unwrap().contains("\"tag\": \"a\""), "{m:?}");
        alive.store(false, std::sync::atomic::Ordering::Relaxed);
        let m = tokio::time::timeout(TOKEN_RECHECK * 5, client.next())
            .await
            .expect("closed within a few re-checks")
            .unwrap()
            .unwrap();
        let Message::Close(Some(f)) = m else {
            panic!("not a close frame: {m:?}");
        };
        assert_eq!(
            f.code,
            tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode::Policy
        );
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the socket ends")
            .unwrap();
    }

    /// The SSE body ends at the first event or re-check after its token died.
    #[tokio::test]
    async fn an_event_stream_ends_when_its_token_dies() {
        let alive = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let a = alive.clone();
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let mut s = Box::pin(sse_while_alive(
            rx,
            Arc::new(move || a.load(std::sync::atomic::Ordering::Relaxed)),
            |ev| ev.tag.clone(),
        ));
        tx.send(crate::backend::Event {
            tag: "one".into(),
            data: json!({}),
        })
        .await
        .unwrap();
        assert_eq!(&s.next().await.unwrap().unwrap()[..], b"one");
        alive.store(false, std::sync::atomic::Ordering::Relaxed);
        let end = tokio::time::timeout(TOKEN_RECHECK * 5, s.next())
            .await
            .expect("ends without another event");
        assert!(end.is_none());
    }

    #[test]
    fn events_are_written_as_salt_writes_them() {
        assert_eq!(
            event_json("salt/job/1/new", &json!({"jid": "1"})),
            r#"{"data": {"jid": "1"}, "tag": "salt/job/1/new"}"#
        );
    }
}
