//! The HTTP side: rest_cherrypy's routes on axum, served over TLS (or plain HTTP with
//! `disable_ssl`) by hyper, one task per connection, all ending when the master stops.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Extension, Path, RawQuery, State};
use axum::routing::{get, post};
use bytes::Bytes;
use futures_util::StreamExt;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use saltq_semantics::python::salt_dumps;
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use crate::backend::{ApiError, Backend, Client, Identity, Low};
use crate::config::{CLIENTS, Config, Tls};
use crate::eauth::sorted_permissions;
use crate::limit::{Blocked, LoginLimiter, client_ip};
use crate::low::{lowstate, parse_body, to_low};
use crate::tokens::{Token, TokenStore};

/// The address a request came from (set on every request by the connection task).
#[derive(Debug, Clone, Copy)]
pub struct Remote(pub SocketAddr);

/// Counters for `/stats`.
#[derive(Debug, Default)]
struct Stats {
    requests: AtomicU64,
    logins: AtomicU64,
    login_failures: AtomicU64,
    lowstate_chunks: AtomicU64,
    event_streams: AtomicU64,
    hooks: AtomicU64,
}

/// Everything the handlers share.
pub(crate) struct Api {
    pub(crate) cfg: Config,
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) tokens: TokenStore,
    limiter: LoginLimiter,
    stats: Stats,
    started: f64,
    /// Turns true when the master stops (websockets end then).
    stop: watch::Receiver<bool>,
}

pub(crate) type Shared = Arc<Api>;
pub(crate) type Reply = Response<Body>;

pub(crate) fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

fn wants_yaml(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    accept.contains("application/x-yaml") && !accept.contains("application/json")
}

/// An answer in the format the client accepts (JSON unless it asks for YAML only).
fn data(status: StatusCode, v: &Value, headers: &HeaderMap) -> Reply {
    let (ct, body) = if wants_yaml(headers) {
        (
            "application/x-yaml",
            serde_yaml_ng::to_string(v).unwrap_or_default(),
        )
    } else {
        ("application/json", salt_dumps(v))
    };
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    r
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// An error page as CherryPy's (which salt-api answers every refusal with): the status in the
/// title and heading, Salt's message in the paragraph.
pub fn error_page(status: u16, message: &str) -> Reply {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let title = format!(
        "{} {}",
        code.as_u16(),
        code.canonical_reason().unwrap_or_default()
    );
    let body = format!(
        "<!DOCTYPE html PUBLIC\n\"-//W3C//DTD XHTML 1.0 Transitional//EN\"\n\
         \"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd\">\n<html>\n<head>\n    \
         <meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\"></meta>\n    \
         <title>{title}</title>\n</head>\n    <body>\n        <h2>{title}</h2>\n        \
         <p>{}</p>\n    </body>\n</html>\n",
        html_escape(message)
    );
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html;charset=utf-8"),
    );
    r
}

/// A handler's answer: its data with `status`, or its refusal.
fn answer(
    result: Result<Value, ApiError>,
    status: StatusCode,
    headers: &HeaderMap,
    debug: bool,
) -> Reply {
    match result {
        Ok(v) => data(status, &v, headers),
        Err(e) => refuse(e, debug),
    }
}

/// A refusal as CherryPy's error page; a failure (500) as salt-api's JSON for an unexpected
/// error, its details only with `debug` (Salt shows the traceback then) and always in the log.
fn refuse(e: ApiError, debug: bool) -> Reply {
    if e.status != 500 {
        return error_page(e.status, &e.message);
    }
    tracing::warn!("salt-api request failed: {}", e.message);
    let message = if debug {
        e.message.as_str()
    } else {
        "An unexpected error occurred"
    };
    data(
        StatusCode::INTERNAL_SERVER_ERROR,
        &json!({"status": 500, "return": message}),
        &HeaderMap::new(),
    )
}

pub(crate) const NO_PERMISSION: &str = "No permission -- see authorization schemes";

/// The token a request carries: `X-Auth-Token`, else the `session_id` cookie.
pub(crate) fn request_token(headers: &HeaderMap) -> Option<String> {
    if let Some(t) = headers.get("x-auth-token").and_then(|v| v.to_str().ok())
        && !t.is_empty()
    {
        return Some(t.trim().to_owned());
    }
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|c| c.split(';'))
        .find_map(|kv| {
            let (k, v) = kv.trim().split_once('=')?;
            (k == "session_id").then(|| v.to_owned())
        })
}

impl Api {
    /// The address a request's failed logins count against: the peer, or the client a
    /// trusted proxy names in `X-Forwarded-For`.
    pub(crate) fn source(&self, peer: SocketAddr, headers: &HeaderMap) -> std::net::IpAddr {
        let xff: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        client_ip(peer.ip().to_canonical(), &xff, &self.cfg.trusted_proxies)
    }

    pub(crate) fn identity(&self, t: &Token, auth_type: &str) -> Identity {
        let ea = &self.cfg.external_auth;
        let groups = if ea.has_groups(&t.eauth) {
            self.backend.groups(&t.name)
        } else {
            vec![]
        };
        Identity {
            user: t.name.clone(),
            eauth: t.eauth.clone(),
            auth_type: auth_type.to_owned(),
            perms: ea.perms(&t.eauth, &t.name, &groups),
        }
    }

    /// Whether `token` still lives, asked again each time: an event stream ends once not.
    pub(crate) fn token_alive(&self, token: &str) -> crate::ws::Alive {
        let (tokens, t) = (self.tokens.clone(), token.to_owned());
        Arc::new(move || tokens.get(&t, now()).is_some())
    }

    /// The session's identity, or 401.
    pub(crate) fn session(&self, headers: &HeaderMap) -> Result<Identity, ApiError> {
        let t = request_token(headers)
            .and_then(|t| self.tokens.get(&t, now()))
            .ok_or_else(|| ApiError::unauthorized(NO_PERMISSION))?;
        Ok(self.identity(&t, "token"))
    }

    /// Checks a password (rate limited per address); the token data on success, with the
    /// permissions the eauth backend gave itself (`rest`'s, see
    /// [`crate::eauth::ExternalAuth::authenticate_acl`]) for a request that carries its
    /// credentials. A token, as in Salt (`keep_acl_in_token: false`), has the config's.
    pub(crate) async fn login(
        &self,
        ip: std::net::IpAddr,
        creds: &Map<String, Value>,
    ) -> Result<(Token, Option<Vec<Value>>), ApiError> {
        let s = |k: &str| creds.get(k).and_then(Value::as_str).unwrap_or_default();
        let (user, password, eauth) = (s("username"), s("password"), s("eauth"));
        if let Some(blocked) = self.limiter.blocked(ip, user, Instant::now()) {
            let (wait, whom) = match blocked {
                Blocked::User(w) => (w, format!(" for {user}")),
                Blocked::Source(w) => (w, String::new()),
            };
            tracing::warn!(%ip, user, "salt-api login refused: too many failed logins{whom} from this address");
            return Err(ApiError {
                status: 429,
                message: format!(
                    "Too many failed logins from {ip}{whom}: try again in {} seconds",
                    wait.as_secs().max(1)
                ),
            });
        }
        // Salt's auth functions take a username and a password: without either, no login.
        let verdict = if user.is_empty() || !creds.contains_key("password") {
            None
        } else {
            self.cfg
                .external_auth
                .authenticate_acl(eauth, user, password)
                .await
        };
        let Some(acl) = verdict else {
            self.limiter.failed(ip, user, Instant::now());
            self.stats.login_failures.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(%ip, user, eauth, "salt-api login failed");
            return Err(ApiError::unauthorized(
                "Could not authenticate using provided credentials",
            ));
        };
        self.limiter.succeeded(ip, user);
        self.stats.logins.fetch_add(1, Ordering::Relaxed);
        let t = self
            .tokens
            .create(user, eauth, now(), self.cfg.token_expire.as_secs_f64())
            .map_err(|e| {
                tracing::error!("{e}");
                ApiError::internal("could not store the token: see the master's log")
            })?;
        Ok((t, acl))
    }

    /// Who a chunk that carries its own credentials is (`/run`, `POST /keys`): a `token`, or
    /// `username`/`password`/`eauth` checked now (rate limited per address).
    pub(crate) async fn chunk_identity(
        &self,
        ip: std::net::IpAddr,
        c: &Map<String, Value>,
    ) -> Result<Identity, ApiError> {
        if let Some(t) = c.get("token").and_then(Value::as_str) {
            let t = self
                .tokens
                .get(t, now())
                .ok_or_else(|| ApiError::unauthorized("Authentication error occurred."))?;
            Ok(self.identity(&t, "token"))
        } else if c.contains_key("eauth") {
            let (t, acl) = self.login(ip, c).await.map_err(|e| {
                if e.status == 401 {
                    ApiError::unauthorized("Authentication error occurred.")
                } else {
                    e
                }
            })?;
            // A token made for one request's credentials is for that request only.
            self.tokens.remove(&t.token);
            let mut who = self.identity(&t, "eauth");
            // The permissions an eauth backend answered itself (`rest`) hold for this request.
            if let Some(acl) = acl {
                who.perms = acl;
            }
            Ok(who)
        } else {
            Err(ApiError::unauthorized(
                "No authentication credentials given",
            ))
        }
    }

    async fn run_chunk(
        &self,
        who: Identity,
        chunk: &Map<String, Value>,
    ) -> Result<Value, ApiError> {
        let low = to_low(chunk, &self.cfg.enable_clients)?;
        self.stats.lowstate_chunks.fetch_add(1, Ordering::Relaxed);
        self.backend.run(who, low).await
    }

    /// Runs `low` and adds its answer to `out`: one entry, or one per minion for
    /// `local_batch` (Salt's `exec_lowstate` yields each item of a client's iterator).
    async fn run_into(
        &self,
        who: Identity,
        low: Low,
        out: &mut Vec<Value>,
    ) -> Result<(), ApiError> {
        let batch = low.client == Client::LocalBatch;
        self.stats.lowstate_chunks.fetch_add(1, Ordering::Relaxed);
        match self.backend.run(who, low).await? {
            Value::Array(items) if batch => out.extend(items),
            v => out.push(v),
        }
        Ok(())
    }

    /// Runs `low` for `who`, counted in `/stats`.
    pub(crate) async fn run_counted(&self, who: Identity, low: Low) -> Result<Value, ApiError> {
        self.stats.lowstate_chunks.fetch_add(1, Ordering::Relaxed);
        self.backend.run(who, low).await
    }

    async fn run_one(&self, who: Identity, low: Low) -> Result<Value, ApiError> {
        let name = match low.client {
            Client::Local => "local",
            Client::LocalAsync => "local_async",
            Client::LocalBatch => "local_batch",
            Client::Runner => "runner",
            Client::RunnerAsync => "runner_async",
            Client::Wheel => "wheel",
            Client::WheelAsync => "wheel_async",
        };
        if !self.cfg.enable_clients.iter().any(|c| c == name) {
            return Err(ApiError::bad_request(format!(
                "Client disabled: '{name}'. Add to 'netapi_enable_clients' master config option to enable."
            )));
        }
        self.stats.lowstate_chunks.fetch_add(1, Ordering::Relaxed);
        self.backend.run(who, low).await
    }
}

fn body_data(headers: &HeaderMap, body: &Bytes) -> Result<Option<Value>, ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    parse_body(ct, body)
}

async fn index(headers: HeaderMap) -> Reply {
    data(
        StatusCode::OK,
        &json!({"clients": CLIENTS, "return": "Welcome"}),
        &headers,
    )
}

async fn post_root(State(api): State<Shared>, headers: HeaderMap, body: Bytes) -> Reply {
    let result = async {
        let who = api.session(&headers)?;
        let chunks = lowstate(body_data(&headers, &body)?)?;
        let mut out = Vec::new();
        for c in &chunks {
            let low = to_low(c, &api.cfg.enable_clients)?;
            api.run_into(who.clone(), low, &mut out).await?;
        }
        Ok::<_, ApiError>(json!({ "return": out }))
    }
    .await;
    answer(result, StatusCode::OK, &headers, api.cfg.debug)
}

async fn post_run(
    State(api): State<Shared>,
    Extension(Remote(peer)): Extension<Remote>,
    headers: HeaderMap,
    body: Bytes,
) -> Reply {
    let result = async {
        let chunks = lowstate(body_data(&headers, &body)?)?;
        let mut out = Vec::new();
        for c in &chunks {
            let low = to_low(c, &api.cfg.enable_clients)?;
            let who = api.chunk_identity(api.source(peer, &headers), c).await?;
            api.run_into(who, low, &mut out).await?;
        }
        Ok::<_, ApiError>(json!({ "return": out }))
    }
    .await;
    answer(result, StatusCode::OK, &headers, api.cfg.debug)
}

async fn post_login(
    State(api): State<Shared>,
    Extension(Remote(peer)): Extension<Remote>,
    headers: HeaderMap,
    body: Bytes,
) -> Reply {
    let result = async {
        let creds = match body_data(&headers, &body)? {
            Some(Value::Array(mut a)) if !a.is_empty() => a.swap_remove(0),
            Some(v) => v,
            None => Value::Object(Map::new()),
        };
        let creds = creds.as_object().cloned().unwrap_or_default();
        let (t, _) = api.login(api.source(peer, &headers), &creds).await?;
        let who = api.identity(&t, "token");
        let perms = sorted_permissions(&who.perms);
        Ok::<_, ApiError>((t, perms))
    }
    .await;
    match result {
        Ok((t, perms)) => {
            let perms = if perms.is_empty() {
                json!({})
            } else {
                Value::Array(perms)
            };
            let v = json!({"return": [{
                "token": t.token, "expire": t.expire, "start": t.start,
                "user": t.name, "eauth": t.eauth, "perms": perms,
            }]});
            let mut r = data(StatusCode::OK, &v, &headers);
            if let Ok(h) = HeaderValue::from_str(&t.token) {
                r.headers_mut().insert("x-auth-token", h);
            }
            let cookie = format!(
                "session_id={}; expires={}; Path=/",
                t.token,
                http_date(t.expire)
            );
            if let Ok(h) = HeaderValue::from_str(&cookie) {
                r.headers_mut().insert(header::SET_COOKIE, h);
            }
            r
        }
        Err(e) => refuse(e, api.cfg.debug),
    }
}

fn http_date(unix: f64) -> String {
    chrono::DateTime::from_timestamp(unix as i64, 0)
        .unwrap_or_default()
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

/// `POST /token`: an eauth token for each chunk's credentials (Salt runs `auth.mk_token`
/// through the runner client, which must be enabled), for `/run` chunks and `salt_token`.
async fn post_token(
    State(api): State<Shared>,
    Extension(Remote(peer)): Extension<Remote>,
    headers: HeaderMap,
    body: Bytes,
) -> Reply {
    let result = async {
        let chunks = lowstate(body_data(&headers, &body)?)?;
        let mut out = Vec::new();
        for c in &chunks {
            if !["username", "password", "eauth"]
                .iter()
                .all(|k| c.contains_key(*k))
            {
                return Err(ApiError::bad_request(
                    "Require \"username\", \"password\", and \"eauth\" params",
                ));
            }
            if !api.cfg.enable_clients.iter().any(|n| n == "runner") {
                return Err(ApiError::bad_request(
                    "Client disabled: 'runner'. Add to 'netapi_enable_clients' master config option to enable.",
                ));
            }
            let (t, acl) = api.login(api.source(peer, &headers), c).await.map_err(|e| {
                if e.status == 401 {
                    ApiError::unauthorized("Authentication error occurred.")
                } else {
                    e
                }
            })?;
            // Salt runs `auth.mk_token` through the runner client with these credentials, so
            // a user whose eauth entries do not allow that runner gets no token (401).
            let mut who = api.identity(&t, "eauth");
            if let Some(acl) = acl {
                who.perms = acl;
            }
            let kwarg: Map<String, Value> = ["username", "password", "eauth"]
                .iter()
                .filter_map(|k| c.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                .collect();
            if let Err(e) = api.backend.may_run_runner(&who, "auth.mk_token", &kwarg) {
                api.tokens.remove(&t.token);
                return Err(e);
            }
            out.push(json!({"token": t.token, "start": t.start, "expire": t.expire,
                            "name": t.name, "eauth": t.eauth}));
        }
        Ok::<_, ApiError>(Value::Array(out))
    }
    .await;
    answer(result, StatusCode::OK, &headers, api.cfg.debug)
}

async fn post_logout(State(api): State<Shared>, headers: HeaderMap) -> Reply {
    if api.session(&headers).is_err() {
        return refuse(ApiError::unauthorized(NO_PERMISSION), api.cfg.debug);
    }
    if let Some(t) = request_token(&headers) {
        api.tokens.remove(&t);
    }
    let mut r = data(
        StatusCode::OK,
        &json!({"return": "Your token has been cleared"}),
        &headers,
    );
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("session_id=; expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/"),
    );
    r
}

fn low(client: Client, fun: &str, tgt: &str, kwarg: Map<String, Value>) -> Low {
    Low {
        client,
        fun: fun.into(),
        multi: vec![],
        tgt: tgt.into(),
        tgt_type: "glob".into(),
        arg: vec![],
        kwarg,
        full_return: false,
        timeout: None,
        ret: String::new(),
        batch: None,
        returned_only: false,
    }
}

async fn get_minions(
    State(api): State<Shared>,
    mid: Option<Path<String>>,
    headers: HeaderMap,
) -> Reply {
    let result = async {
        let who = api.session(&headers)?;
        let tgt = mid.map(|Path(m)| m).unwrap_or_else(|| "*".into());
        let ret = api
            .run_one(who, low(Client::Local, "grains.items", &tgt, Map::new()))
            .await?;
        Ok::<_, ApiError>(json!({ "return": [ret] }))
    }
    .await;
    answer(result, StatusCode::OK, &headers, api.cfg.debug)
}

async fn post_minions(State(api): State<Shared>, headers: HeaderMap, body: Bytes) -> Reply {
    let result = async {
        let who = api.session(&headers)?;
        let chunks = lowstate(body_data(&headers, &body)?)?;
        let mut out = Vec::new();
        let mut links = Vec::new();
        for mut c in chunks {
            c.insert("client".into(), json!("local_async"));
            let ret = api.run_chunk(who.clone(), &c).await?;
            if let Some(jid) = ret.get("jid").and_then(Value::as_str) {
                links.push(json!({"href": format!("/jobs/{jid}")}));
            }
            out.push(ret);
        }
        Ok::<_, ApiError>(json!({"return": out, "_links": {"jobs": links}}))
    }
    .await;
    answer(result, StatusCode::ACCEPTED, &headers, api.cfg.debug)
}

async fn get_jobs(
    State(api): State<Shared>,
    jid: Option<Path<String>>,
    headers: HeaderMap,
) -> Reply {
    let result = async {
        let who = api.session(&headers)?;
        match jid {
            None => {
                let ret = api
                    .run_one(who, low(Client::Runner, "jobs.list_jobs", "", Map::new()))
                    .await?;
                Ok::<_, ApiError>(json!({ "return": [ret] }))
            }
            Some(Path(jid)) => {
                let mut kw = Map::new();
                kw.insert("jid".into(), json!(jid));
                let info = api
                    .run_one(who, low(Client::Runner, "jobs.list_job", "", kw))
                    .await?;
                let mut by_minion = Map::new();
                if let Some(Value::Object(result)) = info.get("Result") {
                    for (id, r) in result {
                        by_minion
                            .insert(id.clone(), r.get("return").cloned().unwrap_or(Value::Null));
                    }
                }
                Ok(json!({"info": [info], "return": [by_minion]}))
            }
        }
    }
    .await;
    answer(result, StatusCode::OK, &headers, api.cfg.debug)
}

async fn get_keys(
    State(api): State<Shared>,
    mid: Option<Path<String>>,
    headers: HeaderMap,
) -> Reply {
    let result = async {
        // rest_cherrypy's Keys has no session check of its own: the wheel call finds no
        // credentials, and Salt answers with that.
        let who = api
            .session(&headers)
            .map_err(|_| ApiError::unauthorized("No authentication credentials given"))?;
        let l = match mid {
            None => low(Client::Wheel, "key.list_all", "", Map::new()),
            Some(Path(m)) => {
                let mut kw = Map::new();
                kw.insert("match".into(), json!(m));
                low(Client::Wheel, "key.finger", "", kw)
            }
        };
        let ret = api.run_one(who, l).await?;
        let inner = ret
            .get("data")
            .and_then(|d| d.get("return"))
            .cloned()
            .unwrap_or(Value::Null);
        Ok::<_, ApiError>(json!({ "return": inner }))
    }
    .await;
    answer(result, StatusCode::OK, &headers, api.cfg.debug)
}

/// `POST /keys` (rest_cherrypy's `Keys.POST`): `key.gen_accept` through the wheel client
/// for `mid`, with the credentials in the body as Salt requires, answered as a tarball of
/// the files a saltq minion reads from its `pki_dir`.
async fn post_keys(
    State(api): State<Shared>,
    Extension(Remote(peer)): Extension<Remote>,
    headers: HeaderMap,
    body: Bytes,
) -> Reply {
    let result = async {
        let mut chunks = lowstate(body_data(&headers, &body)?)?;
        if chunks.is_empty() {
            return Err(ApiError::bad_request("Lowstates must be a list"));
        }
        let mut c = chunks.swap_remove(0);
        c.insert("client".into(), json!("wheel"));
        c.insert("fun".into(), json!("key.gen_accept"));
        if let Some(mid) = c.remove("mid") {
            c.insert("id_".into(), mid);
        }
        let mid = match c.get("id_") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(a)) if a.len() == 1 && a[0].is_string() => {
                let s = a[0].as_str().unwrap_or_default().to_owned();
                c.insert("id_".into(), json!(s));
                s
            }
            _ => {
                return Err(ApiError::bad_request(
                    "Missing 'mid': the minion id to make keys for",
                ));
            }
        };
        let low = to_low(&c, &api.cfg.enable_clients)?;
        let who = api.chunk_identity(api.source(peer, &headers), &c).await?;
        let mut out = Vec::new();
        api.run_into(who, low, &mut out).await?;
        let data = out
            .pop()
            .and_then(|v| v.get("data").cloned())
            .unwrap_or_default();
        let ret = data.get("return").cloned().unwrap_or_default();
        if data.get("success") == Some(&Value::Bool(false)) {
            return Err(ApiError::bad_request(
                ret.as_str().unwrap_or("key.gen_accept failed").to_owned(),
            ));
        }
        let tar = keys_tarball(&ret).map_err(|e| {
            ApiError::internal(format!("cannot write the key tarball for {mid}: {e}"))
        })?;
        Ok::<_, ApiError>((mid, tar))
    }
    .await;
    match result {
        Ok((mid, tar)) => {
            let mut r = Response::new(Body::from(tar));
            let h = r.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-tar"),
            );
            let disposition = format!("attachment; filename=\"saltkeys-{mid}.tar\"");
            if let Ok(v) = HeaderValue::from_str(&disposition) {
                h.insert(header::CONTENT_DISPOSITION, v);
            }
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            r
        }
        Err(e) => refuse(e, api.cfg.debug),
    }
}

/// The files of `key.gen_accept`'s return, as a saltq minion names them in its `pki_dir`:
/// `minion.key` (the private key, mode 0600), `minion.crt` (the certificate the master's CA
/// issued), and `master_ca.crt` (the CA to pin) when the master has one to give. An empty
/// return (the id already had an accepted key) gives empty files, as Salt's does.
pub fn keys_tarball(ret: &Value) -> std::io::Result<Vec<u8>> {
    let field = |k: &str| ret.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut files = vec![
        ("minion.key", field("priv"), 0o600),
        ("minion.crt", field("cert"), 0o644),
    ];
    if !field("master_ca").is_empty() {
        files.push(("master_ca.crt", field("master_ca"), 0o644));
    }
    let mtime = now() as u64;
    let mut b = tar::Builder::new(Vec::new());
    for (name, text, mode) in files {
        let mut h = tar::Header::new_ustar();
        h.set_size(text.len() as u64);
        h.set_mode(mode);
        h.set_mtime(mtime);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, name, text.as_bytes())?;
    }
    b.into_inner()
}

/// The tag `/hook/<path>` fires: `salt/netapi/hook` and the path's segments, as Salt's
/// `Webhook.POST` joins them, with empty and `.` segments dropped. A `..` segment or a control
/// character is refused, so the tag never reads as one outside `salt/netapi/hook/` (the master's
/// tag rules, `master/src/tags.rs`, read tags the same way).
pub(crate) fn hook_tag(path: Option<&str>) -> Result<String, ApiError> {
    let mut tag = String::from("salt/netapi/hook");
    let path = path.unwrap_or_default();
    for seg in path.split('/') {
        if seg.chars().any(char::is_control) {
            return Err(ApiError::bad_request(format!(
                "webhook path {path:?} holds a control character"
            )));
        }
        match seg.trim() {
            "" | "." => {}
            ".." => {
                return Err(ApiError::bad_request(format!(
                    "webhook path {path:?} has a \"..\" segment"
                )));
            }
            _ => {
                tag.push('/');
                tag.push_str(seg);
            }
        }
    }
    Ok(tag)
}

async fn post_hook(
    State(api): State<Shared>,
    tag: Option<Path<String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Reply {
    let result = async {
        if !api.cfg.webhook_disable_auth {
            api.session(&headers)?;
        }
        let full = hook_tag(tag.as_ref().map(|Path(t)| t.as_str()))?;
        let post = body_data(&headers, &body)?.unwrap_or_else(|| json!({}));
        let raw = String::from_utf8_lossy(&body).into_owned();
        let hdrs: BTreeMap<String, String> = headers
            .iter()
            .filter(|(k, _)| *k != "x-auth-token" && *k != header::COOKIE)
            .map(|(k, v)| {
                (
                    title_case(k.as_str()),
                    v.to_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        api.stats.hooks.fetch_add(1, Ordering::Relaxed);
        api.backend
            .fire(full, json!({"body": raw, "post": post, "headers": hdrs}));
        Ok::<_, ApiError>(json!({"success": true}))
    }
    .await;
    answer(result, StatusCode::OK, &headers, api.cfg.debug)
}

/// `content-type` as CherryPy shows header names: `Content-Type`.
pub(crate) fn title_case(name: &str) -> String {
    name.split('-')
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// One event as rest_cherrypy frames it on `/events`.
pub fn sse_frame(tag: &str, data: &Value) -> String {
    format!(
        "tag: {tag}\ndata: {}\n\n",
        salt_dumps(&json!({"data": data, "tag": tag}))
    )
}

async fn get_events(
    State(api): State<Shared>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Reply {
    let from_query = query.as_deref().and_then(|q| {
        form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "token" || k == "salt_token")
            .map(|(_, v)| v.into_owned())
    });
    let token = from_query.or_else(|| request_token(&headers));
    let Some(token) = token.filter(|t| api.tokens.get(t, now()).is_some()) else {
        return refuse(ApiError::unauthorized(NO_PERMISSION), api.cfg.debug);
    };
    api.stats.event_streams.fetch_add(1, Ordering::Relaxed);
    let rx = api.backend.events();
    let head =
        futures_util::stream::once(async { Ok::<_, Infallible>(Bytes::from("retry: 400\n")) });
    // Salt re-checks the token before each event: a logged-out or expired one ends the stream.
    let events = crate::ws::sse_while_alive(rx, api.token_alive(&token), |ev| {
        sse_frame(&ev.tag, &ev.data)
    });
    let mut r = Response::new(Body::from_stream(head.chain(events)));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream;charset=utf-8"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// The websocket's session for `token`, or `None` when it is not a live token.
pub(crate) fn ws_session(
    api: &Shared,
    token: Option<&str>,
    feed: crate::ws::Feed,
    acknowledge: bool,
) -> Option<crate::ws::Session> {
    let t = api.tokens.get(token?, now())?;
    api.stats.event_streams.fetch_add(1, Ordering::Relaxed);
    Some(crate::ws::Session {
        alive: api.token_alive(token?),
        feed,
        acknowledge,
        who: api.identity(&t, "token"),
        backend: api.backend.clone(),
        stop: api.stop.clone(),
    })
}

/// rest_cherrypy's `GET /ws/<token>` (`WebsocketEndpoint`): the token in the path, else the
/// session's; `?format_events` for the formatted feed.
async fn get_ws(
    State(api): State<Shared>,
    token: Option<Path<String>>,
    RawQuery(query): RawQuery,
    req: http::Request<Body>,
) -> Reply {
    let token = token
        .map(|Path(t)| t)
        .or_else(|| request_token(req.headers()));
    let formatted = query
        .as_deref()
        .is_some_and(|q| form_urlencoded::parse(q.as_bytes()).any(|(k, _)| k == "format_events"));
    let feed = if formatted {
        crate::ws::Feed::Formatted
    } else {
        crate::ws::Feed::CherrypyData
    };
    let Some(session) = ws_session(&api, token.as_deref(), feed, true) else {
        return error_page(
            401,
            "This server could not verify that you are authorized to access the document you requested.",
        );
    };
    crate::ws::start(req, session).unwrap_or_else(|why| error_page(400, &why))
}

async fn get_stats(State(api): State<Shared>, headers: HeaderMap) -> Reply {
    if !api.cfg.stats_disable_auth
        && let Err(e) = api.session(&headers)
    {
        return refuse(e, api.cfg.debug);
    }
    let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let s = &api.stats;
    data(
        StatusCode::OK,
        &json!({"saltq salt-api": {
            "Enabled": api.cfg.collect_stats,
            "Start Time": api.started,
            "Uptime": now() - api.started,
            "Requests": n(&s.requests),
            "Logins": n(&s.logins),
            "Login Failures": n(&s.login_failures),
            "Lowstate Chunks": n(&s.lowstate_chunks),
            "Event Streams": n(&s.event_streams),
            "Hooks": n(&s.hooks),
        }}),
        &headers,
    )
}

async fn not_found(uri: http::Uri) -> Reply {
    error_page(404, &format!("The path '{}' was not found.", uri.path()))
}

/// Applies `max_tokens_per_user` to the token store and sweeps expired tokens every
/// [`prune_every`](crate::tokens::prune_every) (`token_expire`, at most a minute) for as long
/// as the server runs: the sweeper holds the API weakly and ends at its first tick after the
/// server and its connections are gone. Tokens are files in this master's `cachedir`, so each
/// replica of a cluster sweeps its own, once.
fn start_token_upkeep(api: &Shared) {
    api.tokens.set_max_per_user(api.cfg.max_tokens_per_user);
    let weak = Arc::downgrade(api);
    tokio::spawn(crate::tokens::prune_periodically(
        api.tokens.clone(),
        crate::tokens::prune_every(api.cfg.token_expire),
        move || weak.strong_count() > 0,
    ));
}

/// The routes, under `root_prefix`: rest_cherrypy's, or rest_tornado's.
fn router(api: Shared) -> Router {
    start_token_upkeep(&api);
    if api.cfg.flavour == crate::config::Flavour::Tornado {
        return crate::tornado::router(api);
    }
    let hook = api.cfg.webhook_url.clone();
    let counted = api.clone();
    let routes = Router::new()
        .route("/", get(index).post(post_root))
        .route("/login", post(post_login))
        .route("/logout", post(post_logout))
        .route("/run", post(post_run))
        .route("/token", post(post_token))
        .route("/minions", get(get_minions).post(post_minions))
        .route("/minions/{mid}", get(get_minions))
        .route("/jobs", get(get_jobs))
        .route("/jobs/{jid}", get(get_jobs))
        .route("/keys", get(get_keys).post(post_keys))
        .route("/keys/{mid}", get(get_keys))
        .route(&hook, post(post_hook))
        .route(&format!("{hook}/{{*tag}}"), post(post_hook))
        .route("/events", get(get_events))
        .route("/stats", get(get_stats))
        .route("/ws", get(get_ws))
        .route("/ws/{token}", get(get_ws))
        .fallback(not_found)
        .with_state(api.clone());
    let app = if api.cfg.root_prefix.is_empty() {
        routes
    } else {
        Router::new()
            .nest(&api.cfg.root_prefix, routes)
            .fallback(not_found)
    };
    app.layer(axum::middleware::from_fn(
        move |req: http::Request<Body>, next: axum::middleware::Next| {
            counted.stats.requests.fetch_add(1, Ordering::Relaxed);
            next.run(req)
        },
    ))
}

/// The TLS acceptor for `tls`, or `None` for plain HTTP; a certificate or key that does not
/// load is an error naming the file.
pub fn tls_acceptor(tls: &Tls) -> Result<Option<TlsAcceptor>, String> {
    let (Tls::Files { cert, key } | Tls::Master { cert, key }) = tls else {
        return Ok(None);
    };
    let read = |p: &std::path::Path| {
        std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
    };
    let certs = rustls_pemfile::certs(&mut read(cert)?.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{} is not a PEM certificate chain: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("{} holds no certificate", cert.display()));
    }
    let key_der = rustls_pemfile::private_key(&mut read(key)?.as_slice())
        .map_err(|e| format!("{} is not a PEM private key: {e}", key.display()))?
        .ok_or_else(|| format!("{} holds no private key", key.display()))?;
    let mut cfg = tls_builder()?
        .with_single_cert(certs, key_der)
        .map_err(|e| format!("{} and {}: {e}", cert.display(), key.display()))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(TlsAcceptor::from(Arc::new(cfg))))
}

/// A TLS acceptor serving whatever certificate `resolver` holds at each handshake: the
/// master's own, which it reloads when the files change (`Tls::Master`).
pub fn tls_acceptor_resolving(
    resolver: Arc<dyn rustls::server::ResolvesServerCert>,
) -> Result<TlsAcceptor, String> {
    let mut cfg = tls_builder()?.with_cert_resolver(resolver);
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(cfg)))
}

fn tls_builder()
-> Result<rustls::ConfigBuilder<rustls::ServerConfig, rustls::server::WantsServerCert>, String> {
    Ok(rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_no_client_auth())
}

/// Resolves once `rx` turns true (or its sender is gone).
pub(crate) async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

/// How long a client has to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves salt-api on `listener` until `shutdown` turns true; open connections (event
/// streams included) end then too.
pub async fn serve(
    cfg: Config,
    backend: Arc<dyn Backend>,
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    mut shutdown: watch::Receiver<bool>,
) {
    // A connection holds a descriptor from its accept: the caps stay within the process's.
    let fds = saltq_transport::guard::nofile_limit().unwrap_or(u64::MAX);
    let gate = saltq_transport::guard::Gate::new("salt_api", cfg.connections.within_fds(fds));
    cfg.external_auth.warn_if_unsafe();
    let tokens = TokenStore::new(cfg.token_dir.clone());
    let pruned = tokens.prune(now());
    if pruned > 0 {
        tracing::info!("removed {pruned} expired salt-api tokens");
    }
    let api = Arc::new(Api {
        cfg,
        backend,
        tokens,
        limiter: LoginLimiter::default(),
        stats: Stats::default(),
        started: now(),
        stop: shutdown.clone(),
    });
    let socket_timeout = api.cfg.socket_timeout;
    let app = router(api);
    let mut backoff = saltq_transport::guard::Backoff::default();
    loop {
        let (sock, peer) = tokio::select! {
            v = saltq_transport::guard::accept(&listener, &gate, &mut backoff) => v,
            _ = stopped(&mut shutdown) => break,
        };
        // Past the caps: a plain-HTTP client reads why; a TLS one is closed before its
        // handshake, which would cost more than the answer is worth.
        let slot = match gate.admit(peer.ip()) {
            Ok(slot) => slot,
            Err(why) => {
                tracing::debug!(%peer, "refusing salt-api connection: {why}");
                if tls.is_none() {
                    saltq_transport::http1::refuse_plain(sock, &why);
                }
                continue;
            }
        };
        let gate = gate.clone();
        let app = app.clone();
        let tls = tls.clone();
        let mut stop = shutdown.clone();
        tokio::spawn(async move {
            // Held while the connection lives, its TLS handshake included.
            let _slot = slot;
            let svc = hyper::service::service_fn(
                move |mut req: http::Request<
                    saltq_transport::http1::TimedBody<hyper::body::Incoming>,
                >| {
                    req.extensions_mut().insert(Remote(peer));
                    app.clone().oneshot(req)
                },
            );
            let conn = async {
                match tls {
                    Some(acceptor) => {
                        let stream =
                            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(sock))
                                .await
                            {
                                Ok(Ok(s)) => s,
                                Ok(Err(e)) => {
                                    tracing::debug!(%peer, "salt-api TLS handshake failed: {e}");
                                    return;
                                }
                                Err(_) => return,
                            };
                        saltq_transport::http1::serve_connection(
                            stream,
                            svc,
                            socket_timeout,
                            Some(gate),
                        )
                        .await;
                    }
                    None => {
                        saltq_transport::http1::serve_connection(
                            sock,
                            svc,
                            socket_timeout,
                            Some(gate),
                        )
                        .await;
                    }
                }
            };
            tokio::select! {
                _ = conn => {}
                _ = stopped(&mut stop) => {}
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_written_as_python_writes_it() {
        assert_eq!(
            salt_dumps(&json!({"data": {"a": [1, 2], "b": null}, "tag": "t"})),
            r#"{"data": {"a": [1, 2], "b": null}, "tag": "t"}"#
        );
        assert_eq!(
            sse_frame("salt/job/1/new", &json!({"jid": "1"})),
            "tag: salt/job/1/new\ndata: {\"data\": {\"jid\": \"1\"}, \"tag\": \"salt/job/1/new\"}\n\n"
        );
    }

    /// `/hook/<path>` fires under `salt/netapi/hook/` whatever the path spells.
    #[test]
    fn hook_tags_stay_under_the_hook() {
        for (path, tag) in [
            (None, "salt/netapi/hook"),
            (Some(""), "salt/netapi/hook"),
            (
                Some("mycompany/build/success"),
                "salt/netapi/hook/mycompany/build/success",
            ),
            (Some("/a//b/./c/"), "salt/netapi/hook/a/b/c"),
            (Some("..."), "salt/netapi/hook/..."),
        ] {
            assert_eq!(hook_tag(path).as_deref(), Ok(tag), "{path:?}");
        }
        for (path, why) in [
            ("../../auth", "has a \"..\" segment"),
            ("a/ .. /minion/db1/start", "has a \"..\" segment"),
            ("x\ntag: salt/auth", "holds a control character"),
        ] {
            let e = hook_tag(Some(path)).unwrap_err();
            assert_eq!(e.status, 400, "{path:?}");
            assert_eq!(e.message, format!("webhook path {path:?} {why}"));
        }
    }

    #[test]
    fn tokens_come_from_the_header_or_the_cookie() {
        let mut h = HeaderMap::new();
        assert_eq!(request_token(&h), None);
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=b; session_id=abc"),
        );
        assert_eq!(request_token(&h).as_deref(), Some("abc"));
        h.insert("x-auth-token", HeaderValue::from_static("def"));
        assert_eq!(request_token(&h).as_deref(), Some("def"));
        assert_eq!(title_case("x-auth-token"), "X-Auth-Token");
    }

    #[test]
    fn answers_are_yaml_only_when_json_is_not_accepted() {
        let mut h = HeaderMap::new();
        let v = json!({"return": [{"m1": true}]});
        let r = data(StatusCode::OK, &v, &h);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/x-yaml"),
        );
        let r = data(StatusCode::OK, &v, &h);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/x-yaml");
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/x-yaml, application/json"),
        );
        let r = data(StatusCode::OK, &v, &h);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
    }

    #[test]
    fn the_key_tarball_holds_the_minions_files() {
        let ret = json!({"pub": "P", "priv": "KEY", "cert": "CERT", "master_ca": "CA"});
        let tar = keys_tarball(&ret).unwrap();
        let mut a = tar::Archive::new(tar.as_slice());
        let mut got = vec![];
        for e in a.entries().unwrap() {
            let mut e = e.unwrap();
            let mut text = String::new();
            std::io::Read::read_to_string(&mut e, &mut text).unwrap();
            let mode = e.header().mode().unwrap();
            got.push((e.path().unwrap().display().to_string(), text, mode));
        }
        assert_eq!(
            got,
            [
                ("minion.key".to_owned(), "KEY".to_owned(), 0o600),
                ("minion.crt".to_owned(), "CERT".to_owned(), 0o644),
                ("master_ca.crt".to_owned(), "CA".to_owned(), 0o644),
            ]
        );
        let empty = keys_tarball(&json!({})).unwrap();
        let names: Vec<String> = tar::Archive::new(empty.as_slice())
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["minion.key", "minion.crt"]);
    }

    #[test]
    fn error_pages_carry_the_status_and_message() {
        let r = error_page(401, "Could not authenticate <using> provided credentials");
        assert_eq!(r.status(), 401);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "text/html;charset=utf-8");
    }

    async fn body_of(r: Reply) -> String {
        let b = http_body_util::BodyExt::collect(r.into_body())
            .await
            .unwrap();
        String::from_utf8(b.to_bytes().to_vec()).unwrap()
    }

    #[tokio::test]
    async fn failures_are_salts_json_with_details_only_in_debug() {
        let r = refuse(ApiError::internal("the job cache is gone"), false);
        assert_eq!(r.status(), 500);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(
            body_of(r).await,
            r#"{"status": 500, "return": "An unexpected error occurred"}"#
        );
        let r = refuse(ApiError::internal("the job cache is gone"), true);
        assert_eq!(
            body_of(r).await,
            r#"{"status": 500, "return": "the job cache is gone"}"#
        );
        let r = refuse(ApiError::unauthorized(NO_PERMISSION), false);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "text/html;charset=utf-8");
    }
}
