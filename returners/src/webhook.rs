//! The `webhook` returner (saltq's own; Salt has none): an HTTP POST of the return as JSON to
//! `url`, with extra `headers` (e.g. `Authorization`), failing after `timeout` seconds
//! (default 10). Event batches are POSTed as one JSON array of `{"data": ..., "tag": ...}`.
//! Any 2xx answer is success; redirects are not followed. Plain `http://` only for now.

use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderName, HeaderValue, USER_AGENT};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::CONNECT_TIMEOUT;
use crate::error::{ReturnerError, chain};
use crate::options::Resolved;

const RETURNER: &str = "webhook";
/// How much of an error answer's body goes into the error message.
const BODY_EXCERPT: usize = 200;

/// The shared HTTP client; it keeps connections per host.
pub(crate) struct Client {
    http: HyperClient<HttpConnector, Full<Bytes>>,
}

impl Client {
    /// A client with a connect timeout and HTTP/1.1.
    pub(crate) fn new() -> Client {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
        Client {
            http: HyperClient::builder(TokioExecutor::new()).build(connector),
        }
    }
}

/// Where to POST and how.
#[derive(Clone)]
pub(crate) struct Settings {
    url: Option<Uri>,
    /// Values are never shown (they often hold tokens).
    headers: Vec<(HeaderName, HeaderValue)>,
    timeout: Duration,
}

impl Settings {
    /// Reads `url`, `headers`, `timeout`.
    pub(crate) fn from_options(r: &Resolved) -> Result<Settings, ReturnerError> {
        let url = match r.str("url")? {
            None => None,
            Some(text) => Some(parse_url(&text).map_err(|reason| r.invalid("url", reason))?),
        };
        let mut headers = Vec::new();
        for (name, value) in r.str_map("headers")? {
            let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                r.invalid("headers", format!("{name:?} is not a valid header name"))
            })?;
            let mut v = HeaderValue::from_str(&value).map_err(|_| {
                r.invalid(
                    "headers",
                    format!("the value of {name} is not a valid header value"),
                )
            })?;
            v.set_sensitive(true);
            headers.push((n, v));
        }
        Ok(Settings {
            url,
            headers,
            timeout: r.seconds("timeout")?.unwrap_or(Duration::from_secs(10)),
        })
    }
}

/// An `http://host[:port]/path[?query]` URL, without user info (credentials go in `headers`).
fn parse_url(text: &str) -> Result<Uri, String> {
    let uri: Uri = text.parse().map_err(|e| format!("{e}"))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => {
            return Err(
                "https is not supported by saltq's webhook returner yet; use http:// \
                        (e.g. to a local TLS-terminating proxy)"
                    .into(),
            );
        }
        _ => return Err("expected an http:// URL".into()),
    }
    let authority = uri.authority().ok_or("the URL has no host")?;
    if authority.as_str().contains('@') {
        return Err("credentials in the URL are not supported; put them in webhook.headers".into());
    }
    Ok(uri)
}

/// The URL for messages: scheme, host, port and path, never the query (it may hold a token).
fn shown(uri: &Uri) -> String {
    let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
    format!("http://{authority}{}", uri.path())
}

/// POSTs `body` (JSON text) to the configured URL.
pub(crate) async fn post(client: &Client, s: &Settings, body: &str) -> Result<(), ReturnerError> {
    let uri = s.url.clone().ok_or_else(|| ReturnerError::InvalidOption {
        key: "webhook.url".into(),
        reason: "is not set (the webhook returner needs a URL)".into(),
    })?;
    let target = shown(&uri);
    let mut req = Request::builder()
        .method(Method::POST)
        .uri(uri)
        .header(CONTENT_TYPE, "application/json")
        .header(
            USER_AGENT,
            concat!("saltq-returners/", env!("CARGO_PKG_VERSION")),
        );
    for (name, value) in &s.headers {
        req = req.header(name, value);
    }
    let req = req
        .body(Full::new(Bytes::from(body.to_owned())))
        .map_err(|e| ReturnerError::Backend {
            returner: RETURNER,
            target: target.clone(),
            action: "build the request".into(),
            cause: e.to_string(),
        })?;
    let exchange = async {
        let resp = client.http.request(req).await.map_err(|e| {
            if e.is_connect() {
                ReturnerError::Connect {
                    returner: RETURNER,
                    target: target.clone(),
                    cause: chain(&e),
                }
            } else {
                ReturnerError::Backend {
                    returner: RETURNER,
                    target: target.clone(),
                    action: "POST the return".into(),
                    cause: chain(&e),
                }
            }
        })?;
        let status = resp.status();
        // Read the answer in full so the connection can be reused.
        let answer = resp
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        if status.is_success() {
            return Ok(());
        }
        let excerpt: String = String::from_utf8_lossy(&answer)
            .chars()
            .take(BODY_EXCERPT)
            .collect();
        Err(ReturnerError::Backend {
            returner: RETURNER,
            target: target.clone(),
            action: "POST the return".into(),
            cause: format!("the server answered {status}: {}", excerpt.trim()),
        })
    };
    match tokio::time::timeout(s.timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(ReturnerError::Timeout {
            returner: RETURNER,
            target,
            action: "POST the return".into(),
            after: s.timeout,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert!(parse_url("http://127.0.0.1:8080/hook?token=x").is_ok());
        assert!(
            parse_url("https://example.com/")
                .unwrap_err()
                .contains("https")
        );
        assert!(
            parse_url("http://u:p@example.com/")
                .unwrap_err()
                .contains("credentials")
        );
        assert!(parse_url("example.com").is_err());
        let uri = parse_url("http://h:1/p?token=secret").unwrap_or_default();
        assert_eq!(shown(&uri), "http://h:1/p");
    }
}
