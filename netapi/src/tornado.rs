//! rest_tornado ("saltnado"), Salt's other salt-api server: its URLs and answers as Salt
//! 3007.8's `salt/netapi/rest_tornado/saltnado.py` gives them, on the same tokens, eauth and
//! backend as rest_cherrypy ([`crate::server`]).
//!
//! Where Tornado differs from CherryPy (recorded from Salt's own salt-api, see
//! `tests/tests/e2e/data/saltapi_tornado/`): a request without a valid session is redirected
//! (`302` to `/login`) rather than refused; refusals are Tornado's short error page
//! (`<html><title>401: Unauthorized</title>...`); a chunk that fails authentication or
//! authorization ends the request with `"Failed to authenticate"` in its `return` (status 200);
//! other failures of a chunk are `"Unexpected exception while handling request: ..."`; its
//! clients are `local`, `local_async`, `runner` and `runner_async` only (any other is
//! `400 Invalid Client`); `local` answers only the minions that returned; `/hook`'s event
//! carries `post`, `get` and `headers`; there is no `/logout`, `/token`, `/keys` or `/stats`.

use std::collections::BTreeMap;
use std::convert::Infallible;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::routing::{MethodRouter, get, post};
use bytes::Bytes;
use futures_util::StreamExt;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use saltq_semantics::python::{fnmatch, salt_dumps};
use serde_json::{Map, Value, json};

use crate::backend::{ApiError, Client, Identity};
use crate::eauth::sorted_permissions;
use crate::low::{parse_body, to_low};
use crate::server::{Reply, Shared, hook_tag, request_token};
use crate::ws::Feed;

/// The clients rest_tornado serves (its `saltclients`), in Salt's order.
pub const CLIENTS: &[&str] = &["local", "local_async", "runner", "runner_async"];

/// A chunk whose credentials or permissions failed.
pub const FAILED_AUTH: &str = "Failed to authenticate";

/// The output formats Tornado negotiates, in its order.
const OUT: &[&str] = &["application/json", "application/x-yaml"];

/// The answer format for `accept` (Tornado's `find_acceptable_content_type`: the first media
/// range, in the header's order, that one of [`OUT`] matches as a glob), or `None` (406).
pub fn negotiate(accept: Option<&str>) -> Option<&'static str> {
    let accept = accept.unwrap_or("*/*");
    accept.split(',').find_map(|range| {
        let range = range.split(';').next().unwrap_or_default().trim();
        OUT.iter().copied().find(|ct| fnmatch(ct, range))
    })
}

/// Tornado's error page for `status` (its `write_error` without a traceback).
pub fn error_page(status: u16) -> Reply {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let reason = code.canonical_reason().unwrap_or("Unknown");
    let body =
        format!("<html><title>{status}: {reason}</title><body>{status}: {reason}</body></html>");
    text(code, body)
}

/// A text answer as Tornado's `write(str)` sends it (`text/html; charset=UTF-8`).
fn text(status: StatusCode, body: String) -> Reply {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=UTF-8"),
    );
    r
}

/// `self.redirect('/login')`: what every handler answers a request without a session.
fn to_login() -> Reply {
    let mut r = text(StatusCode::FOUND, String::new());
    r.headers_mut()
        .insert(header::LOCATION, HeaderValue::from_static("/login"));
    r
}

/// `self.serialize(v)`: JSON or YAML as the request accepts.
fn serialize(status: StatusCode, v: &Value, headers: &HeaderMap) -> Reply {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let ct = negotiate(accept).unwrap_or("application/json");
    let body = if ct == "application/x-yaml" {
        serde_yaml_ng::to_string(v).unwrap_or_default()
    } else {
        salt_dumps(v)
    };
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    r
}

/// The request's payload by its content type (Tornado's `deserialize`): none for an empty
/// body; an unknown or missing content type is 406, a body that does not parse 400.
pub fn payload(headers: &HeaderMap, body: &[u8]) -> Result<Option<Value>, u16> {
    if body.is_empty() {
        return Ok(None);
    }
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .ok_or(406u16)?;
    let main = ct.split(';').next().unwrap_or_default().trim();
    match main.to_ascii_lowercase().as_str() {
        "text/plain" => serde_json::from_slice(body).map(Some).map_err(|_| 400),
        "application/json"
        | "application/x-yaml"
        | "text/yaml"
        | "application/x-www-form-urlencoded" => parse_body(main, body).map_err(|_| 400),
        _ => Err(406),
    }
}

/// Tornado's `_get_lowstate`: a mapping is one chunk (its `arg` made a list), a list the
/// chunks (its items that are not mappings dropped: Salt fails on them).
fn lowstate(data: Option<Value>) -> Vec<Map<String, Value>> {
    match data {
        Some(Value::Object(mut m)) => {
            if let Some(a) = m.get_mut("arg")
                && !a.is_array()
            {
                *a = Value::Array(vec![a.take()]);
            }
            vec![m]
        }
        Some(Value::Array(items)) => items
            .into_iter()
            .filter_map(|c| match c {
                Value::Object(m) => Some(m),
                _ => None,
            })
            .collect(),
        _ => vec![],
    }
}

/// How a request's chunks ended: the answers, or a whole-request answer (`400 Invalid
/// Client`).
enum Disbatch {
    Done(Vec<Value>),
    Refused(Reply),
}

/// Whether a chunk's failure is one Salt answers with [`FAILED_AUTH`].
fn is_auth_failure(e: &ApiError) -> bool {
    e.status == 401 || e.status == 403
}

impl crate::server::Api {
    /// Who a chunk is: its `token` (the request's unless it names one), else its
    /// `username`/`password`/`eauth`.
    async fn tornado_identity(
        &self,
        ip: std::net::IpAddr,
        chunk: &Map<String, Value>,
    ) -> Result<Identity, ApiError> {
        self.chunk_identity(ip, chunk).await
    }

    /// Tornado's `disbatch`: each chunk in turn, as `token` (the request's session, when any).
    async fn tornado_disbatch(
        &self,
        ip: std::net::IpAddr,
        token: Option<String>,
        chunks: Vec<Map<String, Value>>,
    ) -> Disbatch {
        let mut ret = vec![];
        for mut c in chunks {
            let client = c
                .get("client")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if !CLIENTS.contains(&client.as_str()) {
                return Disbatch::Refused(text(
                    StatusCode::BAD_REQUEST,
                    "400 Invalid Client: Client not found in salt clients".into(),
                ));
            }
            if let Some(t) = &token
                && !c.contains_key("token")
            {
                c.insert("token".into(), json!(t));
            }
            let has_creds = ["username", "password", "eauth"]
                .iter()
                .all(|k| c.contains_key(*k));
            if !c.contains_key("token") && !has_creds {
                ret.push(json!(FAILED_AUTH));
                break;
            }
            match self.tornado_chunk(ip, &c).await {
                Ok(v) => ret.push(v),
                // Salt's runner client raises its refusal as an error the handler does not
                // take for an authentication failure (recorded: `bob_runner`).
                Err(e) if is_auth_failure(&e) && client.starts_with("runner") => {
                    let (kind, user) = match c.get("username").and_then(Value::as_str) {
                        Some(u) if !c.contains_key("token") => ("eauth", u.to_owned()),
                        _ => {
                            let user = c
                                .get("token")
                                .and_then(Value::as_str)
                                .and_then(|t| self.tokens.get(t, crate::server::now()))
                                .map(|t| t.name)
                                .unwrap_or_else(|| "UNKNOWN".into());
                            ("token", user)
                        }
                    };
                    ret.push(json!(format!(
                        "Unexpected exception while handling request: Authentication failure of type \"{kind}\" occurred for user {user}."
                    )));
                }
                Err(e) if is_auth_failure(&e) => {
                    ret.push(json!(FAILED_AUTH));
                    break;
                }
                Err(e) => {
                    tracing::warn!("salt-api (rest_tornado) chunk failed: {}", e.message);
                    ret.push(json!(format!(
                        "Unexpected exception while handling request: {}",
                        e.message
                    )));
                }
            }
        }
        Disbatch::Done(ret)
    }

    async fn tornado_chunk(
        &self,
        ip: std::net::IpAddr,
        c: &Map<String, Value>,
    ) -> Result<Value, ApiError> {
        let who = self.tornado_identity(ip, c).await?;
        let mut low = to_low(c, &self.cfg.enable_clients)?;
        low.returned_only = true;
        // Tornado's `local` hands `run_job` no `full_return`: the bare returns, always.
        if matches!(low.client, Client::Local | Client::LocalAsync) {
            low.full_return = false;
        }
        self.run_counted(who, low).await
    }
}

/// The request's `{"return": [...]}` answer, or its refusal.
async fn disbatch(
    api: &Shared,
    peer: std::net::SocketAddr,
    headers: &HeaderMap,
    chunks: Vec<Map<String, Value>>,
) -> Reply {
    let ip = api.source(peer, headers);
    match api
        .tornado_disbatch(ip, request_token(headers), chunks)
        .await
    {
        Disbatch::Done(ret) => serialize(StatusCode::OK, &json!({ "return": ret }), headers),
        Disbatch::Refused(r) => r,
    }
}

fn peer(ext: &http::Extensions) -> std::net::SocketAddr {
    ext.get::<crate::server::Remote>()
        .map(|r| r.0)
        .unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
}

async fn index(headers: HeaderMap) -> Reply {
    serialize(
        StatusCode::OK,
        &json!({"clients": CLIENTS, "return": "Welcome"}),
        &headers,
    )
}

async fn post_root(State(api): State<Shared>, req: http::Request<Body>) -> Reply {
    let (parts, body) = req.into_parts();
    if api.session(&parts.headers).is_err() {
        return to_login();
    }
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    match payload(&parts.headers, &body) {
        Ok(data) => {
            disbatch(
                &api,
                peer(&parts.extensions),
                &parts.headers,
                lowstate(data),
            )
            .await
        }
        Err(code) => error_page(code),
    }
}

async fn post_run(State(api): State<Shared>, req: http::Request<Body>) -> Reply {
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    match payload(&parts.headers, &body) {
        Ok(data) => {
            disbatch(
                &api,
                peer(&parts.extensions),
                &parts.headers,
                lowstate(data),
            )
            .await
        }
        Err(code) => error_page(code),
    }
}

async fn get_login(headers: HeaderMap) -> Reply {
    let mut r = serialize(
        StatusCode::UNAUTHORIZED,
        &json!({"status": "401 Unauthorized", "return": "Please log in"}),
        &headers,
    );
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Session"),
    );
    r
}

async fn post_login(State(api): State<Shared>, req: http::Request<Body>) -> Reply {
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let creds = match payload(&parts.headers, &body) {
        Ok(Some(Value::Object(m))) => m,
        Ok(_) => return error_page(400),
        Err(code) => return error_page(code),
    };
    if !["username", "password", "eauth"]
        .iter()
        .all(|k| creds.contains_key(*k))
    {
        return error_page(400);
    }
    let ip = api.source(peer(&parts.extensions), &parts.headers);
    let t = match api.login(ip, &creds).await {
        Ok((t, _)) => t,
        Err(e) if e.status == 429 => return error_page(429),
        Err(_) => return error_page(401),
    };
    let who = api.identity(&t, "token");
    let v = json!({"return": [{
        "token": t.token, "expire": t.expire, "start": t.start,
        "user": t.name, "eauth": t.eauth, "perms": sorted_permissions(&who.perms),
    }]});
    let mut r = serialize(StatusCode::OK, &v, &parts.headers);
    if let Ok(h) = HeaderValue::from_str(&format!("session_id={}; Path=/", t.token)) {
        r.headers_mut().insert(header::SET_COOKIE, h);
    }
    r
}

fn chunk(client: &str, fun: &str, extra: &[(&str, &str)]) -> Map<String, Value> {
    let mut c = Map::new();
    c.insert("client".into(), json!(client));
    c.insert("fun".into(), json!(fun));
    for (k, v) in extra {
        c.insert((*k).into(), json!(v));
    }
    c
}

async fn get_minions(
    State(api): State<Shared>,
    mid: Option<Path<String>>,
    req: http::Request<Body>,
) -> Reply {
    if api.session(req.headers()).is_err() {
        return to_login();
    }
    let tgt = mid.map(|Path(m)| m).filter(|m| !m.is_empty());
    let c = chunk(
        "local",
        "grains.items",
        &[("tgt", tgt.as_deref().unwrap_or("*"))],
    );
    disbatch(&api, peer(req.extensions()), req.headers(), vec![c]).await
}

async fn post_minions(State(api): State<Shared>, req: http::Request<Body>) -> Reply {
    let (parts, body) = req.into_parts();
    if api.session(&parts.headers).is_err() {
        return to_login();
    }
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let mut chunks = match payload(&parts.headers, &body) {
        Ok(None) => return error_page(400),
        Ok(data) => lowstate(data),
        Err(code) => return error_page(code),
    };
    for c in &mut chunks {
        match c.get("client").and_then(Value::as_str) {
            None => {
                c.insert("client".into(), json!("local_async"));
            }
            Some("local_async") => {}
            Some(_) => {
                return text(
                    StatusCode::BAD_REQUEST,
                    "We don't serve your kind here".into(),
                );
            }
        }
    }
    disbatch(&api, peer(&parts.extensions), &parts.headers, chunks).await
}

async fn get_jobs(
    State(api): State<Shared>,
    jid: Option<Path<String>>,
    req: http::Request<Body>,
) -> Reply {
    if api.session(req.headers()).is_err() {
        return to_login();
    }
    let c = match jid.map(|Path(j)| j).filter(|j| !j.is_empty()) {
        Some(j) => chunk("runner", "jobs.list_job", &[("jid", &j)]),
        None => chunk("runner", "jobs.list_jobs", &[]),
    };
    disbatch(&api, peer(req.extensions()), req.headers(), vec![c]).await
}

/// `GET /events`: Server-Sent Events as saltnado writes them (`retry: 400`, then `tag:` and
/// `data:` lines for each event).
async fn get_events(State(api): State<Shared>, headers: HeaderMap) -> Reply {
    let token = request_token(&headers);
    let (Some(token), Ok(_)) = (token, api.session(&headers)) else {
        return to_login();
    };
    let rx = api.backend.events();
    let head =
        futures_util::stream::once(async { Ok::<_, Infallible>(Bytes::from("retry: 400\n")) });
    // saltnado never re-checks the token; saltq ends the stream once it is logged out or
    // expired, as rest_cherrypy's does.
    let events = crate::ws::sse_while_alive(rx, api.token_alive(&token), |ev| {
        format!(
            "tag: {}\ndata: {}\n\n",
            ev.tag,
            crate::ws::event_json(&ev.tag, &ev.data)
        )
    });
    let mut r = Response::new(Body::from_stream(head.chain(events)));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

async fn post_hook(
    State(api): State<Shared>,
    suffix: Option<Path<String>>,
    RawQuery(query): RawQuery,
    req: http::Request<Body>,
) -> Reply {
    let (parts, body) = req.into_parts();
    if !api.cfg.webhook_disable_auth && api.session(&parts.headers).is_err() {
        return to_login();
    }
    let tag = match hook_tag(suffix.as_ref().map(|Path(t)| t.as_str())) {
        Ok(t) => t,
        Err(_) => return error_page(400),
    };
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let post = match payload(&parts.headers, &body) {
        Ok(v) => v.unwrap_or(Value::Null),
        Err(code) => return error_page(code),
    };
    let mut get: Map<String, Value> = Map::new();
    for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        let v = json!(v);
        match get.get_mut(k.as_ref()) {
            Some(Value::Array(a)) => a.push(v),
            Some(old) => *old = json!([old.take(), v]),
            None => {
                get.insert(k.into_owned(), v);
            }
        }
    }
    let hdrs: BTreeMap<String, String> = parts
        .headers
        .iter()
        .filter(|(k, _)| *k != "x-auth-token" && *k != header::COOKIE)
        .map(|(k, v)| {
            (
                crate::server::title_case(k.as_str()),
                v.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    api.backend
        .fire(tag, json!({"post": post, "get": get, "headers": hdrs}));
    serialize(StatusCode::OK, &json!({"success": true}), &parts.headers)
}

/// `/all_events/<token>` and `/formatted_events/<token>`: a token that is not a live one is
/// Tornado's 401 page; one not shaped as a token is not a route (404), as in Salt.
async fn websocket(api: Shared, token: String, feed: Feed, req: http::Request<Body>) -> Reply {
    if !crate::tokens::well_formed(&token) {
        return error_page(404);
    }
    match crate::server::ws_session(&api, Some(&token), feed, false) {
        Some(s) => {
            crate::ws::start(req, s).unwrap_or_else(|why| text(StatusCode::BAD_REQUEST, why))
        }
        None => error_page(401),
    }
}

async fn all_events(
    State(api): State<Shared>,
    Path(token): Path<String>,
    req: http::Request<Body>,
) -> Reply {
    websocket(api, token, Feed::AllEvents, req).await
}

async fn formatted_events(
    State(api): State<Shared>,
    Path(token): Path<String>,
    req: http::Request<Body>,
) -> Reply {
    websocket(api, token, Feed::Formatted, req).await
}

/// `OPTIONS` on any route: Tornado's CORS preflight answer.
async fn options(headers: HeaderMap) -> Reply {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    let h = r.headers_mut();
    if let Some(v) = headers.get(header::ACCESS_CONTROL_REQUEST_HEADERS) {
        h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, v.clone());
    }
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("X-Auth-Token"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("OPTIONS, GET, POST"),
    );
    r
}

async fn not_found() -> Reply {
    error_page(404)
}

async fn not_allowed() -> Reply {
    error_page(405)
}

fn route(m: MethodRouter<Shared>) -> MethodRouter<Shared> {
    m.options(options).fallback(not_allowed)
}

/// rest_tornado's routes (Salt's `get_application`), with the websockets when `websockets`
/// is set, `Access-Control-Allow-Origin` for `cors_origin`, and 406 for an `Accept` that
/// allows neither JSON nor YAML.
pub(crate) fn router(api: Shared) -> Router {
    let mut routes = Router::new()
        .route("/", route(get(index).post(post_root)))
        .route("/login", route(get(get_login).post(post_login)))
        .route("/minions", route(get(get_minions).post(post_minions)))
        .route("/minions/{mid}", route(get(get_minions)))
        .route("/jobs", route(get(get_jobs)))
        .route("/jobs/{jid}", route(get(get_jobs)))
        .route("/run", route(post(post_run)))
        .route("/events", route(get(get_events)))
        .route("/hook", route(post(post_hook)))
        .route("/hook/{*tag}", route(post(post_hook)));
    if api.cfg.websockets {
        routes = routes
            .route("/all_events/{token}", get(all_events))
            .route("/formatted_events/{token}", get(formatted_events));
    }
    let cors = api.cfg.cors_origin.clone();
    routes
        .fallback(not_found)
        .with_state(api)
        .layer(axum::middleware::from_fn(
            move |req: http::Request<Body>, next: axum::middleware::Next| {
                let cors = cors.clone();
                async move {
                    let accept = req
                        .headers()
                        .get(header::ACCEPT)
                        .and_then(|v| v.to_str().ok());
                    let upgrade = req.headers().contains_key(header::UPGRADE);
                    let origin = req
                        .headers()
                        .get(header::ORIGIN)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    let mut r = if negotiate(accept).is_none() && !upgrade {
                        error_page(406)
                    } else {
                        next.run(req).await
                    };
                    let allow: Option<String> =
                        cors.as_ref().and_then(|c| c.allow(origin.as_deref()));
                    if let Some(allow) = allow
                        && let Ok(v) = HeaderValue::from_str(&allow)
                    {
                        r.headers_mut()
                            .insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
                    }
                    r
                }
            },
        ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_negotiated_as_tornado_does() {
        for (accept, want) in [
            (None, Some("application/json")),
            (Some("*/*"), Some("application/json")),
            (Some("application/x-yaml"), Some("application/x-yaml")),
            (
                Some("application/x-yaml, application/json"),
                Some("application/x-yaml"),
            ),
            (
                Some("text/html, application/*;q=0.9"),
                Some("application/json"),
            ),
            (Some("text/html"), None),
        ] {
            assert_eq!(negotiate(accept), want, "{accept:?}");
        }
    }

    #[test]
    fn payloads_by_content_type() {
        let mut h = HeaderMap::new();
        assert_eq!(payload(&h, b""), Ok(None));
        assert_eq!(payload(&h, b"{}"), Err(406));
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert_eq!(payload(&h, br#"{"a": 1}"#), Ok(Some(json!({"a": 1}))));
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json; charset=utf-8"),
        );
        assert_eq!(payload(&h, b"{"), Err(400));
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/xml"),
        );
        assert_eq!(payload(&h, b"<a/>"), Err(406));
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        assert_eq!(
            payload(&h, b"client=local&tgt=*&fun=test.ping")
                .unwrap()
                .unwrap()["fun"],
            "test.ping"
        );
    }

    #[test]
    fn lowstate_wraps_a_single_arg() {
        let l = lowstate(Some(json!({"client": "local", "arg": "x"})));
        assert_eq!(l[0]["arg"], json!(["x"]));
        assert_eq!(lowstate(Some(json!([{"a": 1}, 2]))).len(), 1);
        assert!(lowstate(None).is_empty());
    }

    async fn body_of(r: Reply) -> String {
        let b = http_body_util::BodyExt::collect(r.into_body())
            .await
            .unwrap();
        String::from_utf8(b.to_bytes().to_vec()).unwrap()
    }

    #[tokio::test]
    async fn error_pages_and_redirects_are_tornados() {
        let r = error_page(401);
        assert_eq!(r.status(), 401);
        assert_eq!(
            r.headers()[header::CONTENT_TYPE],
            "text/html; charset=UTF-8"
        );
        assert_eq!(
            body_of(r).await,
            "<html><title>401: Unauthorized</title><body>401: Unauthorized</body></html>"
        );
        let r = to_login();
        assert_eq!(r.status(), 302);
        assert_eq!(r.headers()[header::LOCATION], "/login");
    }
}
