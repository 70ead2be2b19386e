//! Salt's `rest` eauth (`salt/auth/rest.py`): the username and password are POSTed as a form
//! (`username=...&password=...`) to the backend's `^url`. An answer with status 200
//! authenticates; its body, read as Salt's `http.query(decode=True)` reads it (JSON unless the
//! `Content-Type` says YAML; `null` is an empty list), is a list of permission entries that
//! Salt's `rest.acl` adds to the user's own entry of the config (see [`merge_acl`]). Any other
//! status, an unreachable server, a body that is not JSON or YAML, or a `^url` that is not an
//! `http://`/`https://` URL refuses the login, with a log line saying which.
//!
//! Salt's own behaviour for each kind of answer (200 with `[]`, a list, a mapping, HTML; 401;
//! 201) was recorded by running its `rest.py` against a loopback server:
//! `netapi/testdata/salt_rest_eauth.py` and its output `salt_rest_eauth.out`.
//!
//! The request is plain HTTP/1.1 with `Connection: close`, over TLS (the system's CA
//! certificates, as Salt verifies with its CA bundle) for `https://`. Redirects are not
//! followed.

use std::time::Duration;

use saltq_semantics::python::truthy;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// How long connecting may take (Salt's `http_connect_timeout`, 20 s).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the whole exchange may take, a login waiting on it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest answer read.
const MAX_ANSWER: usize = 1 << 20;

/// A `rest` backend's options.
#[derive(Debug, Clone)]
pub struct RestAuth {
    /// `^url`, as written.
    pub url: String,
}

/// Why a REST call did not authenticate (logged, never shown to the client).
#[derive(Debug, thiserror::Error)]
pub enum RestError {
    /// `^url` is not usable.
    #[error("^url {0:?} is not an http:// or https:// URL: {1}")]
    BadUrl(String, String),
    /// No connection, a TLS failure, a timeout, or a broken answer.
    #[error("cannot POST to ^url {0}: {1}")]
    Unreachable(String, String),
    /// An answer other than 200.
    #[error("^url {0} answered status {1}, not 200")]
    Status(String, u16),
    /// A 200 whose body Salt cannot decode.
    #[error("^url {0} answered 200 with a body Salt's rest eauth cannot read ({1})")]
    Body(String, String),
}

/// An HTTP answer: status, headers (names lower-cased), body.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

impl RestAuth {
    /// Salt's `rest.fetch`: the decoded body of a 200 answer (`null` becomes `[]`), or why the
    /// user is not authenticated.
    pub async fn fetch(&self, user: &str, password: &str) -> Result<Value, RestError> {
        let url = url::Url::parse(&self.url)
            .map_err(|e| RestError::BadUrl(self.url.clone(), e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(RestError::BadUrl(
                self.url.clone(),
                format!("the scheme is {:?}", url.scheme()),
            ));
        }
        let host = url
            .host_str()
            .ok_or_else(|| RestError::BadUrl(self.url.clone(), "no host".into()))?
            .to_owned();
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("username", user)
            .append_pair("password", password)
            .finish();
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, post(&url, &host, &body))
            .await
            .unwrap_or_else(|_| Err(format!("no answer in {} s", REQUEST_TIMEOUT.as_secs())))
            .map_err(|e| RestError::Unreachable(self.url.clone(), e))?;
        if answer.status != 200 {
            return Err(RestError::Status(self.url.clone(), answer.status));
        }
        decode(&answer).map_err(|e| RestError::Body(self.url.clone(), e))
    }
}

/// Salt's `decode_type: auto`: the `Content-Type` (JSON when there is none) picks the decoder;
/// a type that is neither JSON nor YAML (nor XML, which saltq does not read) leaves Salt's
/// `rest.fetch` without a decoded body, which fails the login.
fn decode(a: &Answer) -> Result<Value, String> {
    let ctype = a.header("content-type").unwrap_or("application/json");
    let text = std::str::from_utf8(&a.body).map_err(|_| "the body is not UTF-8".to_owned())?;
    let v: Value = if ctype.contains("xml") {
        return Err(format!(
            "Content-Type {ctype}: XML answers are not read by saltq"
        ));
    } else if ctype.contains("json") {
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?
    } else if ctype.contains("yaml") {
        serde_yaml_ng::from_str(text).map_err(|e| format!("not YAML: {e}"))?
    } else {
        return Err(format!("Content-Type {ctype}, neither JSON nor YAML"));
    };
    Ok(if v.is_null() { Value::Array(vec![]) } else { v })
}

async fn post(url: &url::Url, host: &str, body: &str) -> Result<Answer, String> {
    let port = url.port_or_known_default().unwrap_or(80);
    let tcp = tokio::time::timeout(
        CONNECT_TIMEOUT,
        tokio::net::TcpStream::connect((host.trim_matches(['[', ']']), port)),
    )
    .await
    .map_err(|_| format!("no connection in {} s", CONNECT_TIMEOUT.as_secs()))?
    .map_err(|e| e.to_string())?;
    let mut stream: Box<dyn Stream> = if url.scheme() == "https" {
        Box::new(tls(tcp, host).await?)
    } else {
        Box::new(tcp)
    };
    let mut target = url.path().to_owned();
    if let Some(q) = url.query() {
        target.push('?');
        target.push_str(q);
    }
    let host_header = match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_owned(),
    };
    let request = format!(
        "POST {target} HTTP/1.1\r\nHost: {host_header}\r\nUser-Agent: saltq/{} eauth rest\r\n\
         Accept: application/json\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    (&mut stream)
        .take(MAX_ANSWER as u64 + 1)
        .read_to_end(&mut raw)
        .await
        .map_err(|e| e.to_string())?;
    if raw.len() > MAX_ANSWER {
        return Err(format!("the answer is larger than {MAX_ANSWER} bytes"));
    }
    parse_answer(&raw)
}

async fn tls(
    tcp: tokio::net::TcpStream,
    host: &str,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err("no CA certificates found on this system to verify the server".into());
    }
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.trim_matches(['[', ']']).to_owned())
        .map_err(|e| format!("{host:?} is not a server name: {e}"))?;
    tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS: {e}"))
}

/// Reads a whole HTTP/1.1 answer: status line, headers, and a body sized by
/// `Content-Length`, chunked, or running to the end of the connection.
fn parse_answer(raw: &[u8]) -> Result<Answer, String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the answer ends before its headers do")?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| "the headers are not text")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| status_line.starts_with("HTTP/"))
        .ok_or_else(|| format!("not an HTTP status line: {status_line:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut a = Answer {
        status,
        headers,
        body: vec![],
    };
    let rest = &raw[end + 4..];
    a.body = if a
        .header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"))
    {
        dechunk(rest)?
    } else if let Some(n) = a.header("content-length") {
        let n: usize = n.parse().map_err(|_| format!("bad Content-Length {n:?}"))?;
        rest.get(..n)
            .ok_or("the body is shorter than its Content-Length")?
            .to_vec()
    } else {
        rest.to_vec()
    };
    Ok(a)
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let eol = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("a chunk size line is cut off")?;
        let size_text = std::str::from_utf8(&rest[..eol]).map_err(|_| "bad chunk size")?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        let chunk = rest.get(..size).ok_or("a chunk is cut off")?;
        out.extend_from_slice(chunk);
        rest = rest.get(size + 2..).ok_or("a chunk is cut off")?;
    }
}

/// Salt's `rest.acl`: the user's own entry of the config (its exact name only), followed by
/// the list the REST call answered when that answer is truthy. `None` (Salt's "no ACL from
/// the eauth module") when the result is empty, so the config's `*` and other entries apply
/// as for any backend, and when the answer is truthy but not a list (Salt's `list + dict`
/// raises, which its loader turns into `None`). A list holding an entry that is no
/// permission is not used either (saltq's choice, logged: Salt would keep it and fail later,
/// when matching against it).
pub fn merge_acl(own: Option<&Vec<Value>>, answer: &Value) -> Option<Vec<Value>> {
    let mut merged = own.cloned().unwrap_or_default();
    if truthy(answer) {
        let Value::Array(extra) = answer else {
            tracing::warn!(
                "eauth rest: the answer {answer} is not a list of permissions: the config's entries apply"
            );
            return None;
        };
        for e in extra {
            if let Err(m) = crate::eauth::check_entry(e) {
                tracing::warn!(
                    "eauth rest: the answer's entry {e} is not a permission ({m}): the config's entries apply"
                );
                return None;
            }
        }
        merged.extend(extra.iter().cloned());
    }
    (!merged.is_empty()).then_some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::{Arc, Mutex};
    use tokio::net::TcpListener;

    /// A one-purpose HTTP server on loopback: answers every request with `reply`, and keeps
    /// each request it read (head and body).
    async fn server(reply: &'static str) -> (String, Arc<Mutex<Vec<String>>>) {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                // Read the head, then as much body as Content-Length says.
                loop {
                    let n = s.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).into_owned();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let len = head
                            .lines()
                            .find_map(|l| l.strip_prefix("Content-Length: "))
                            .and_then(|n| n.parse::<usize>().ok())
                            .unwrap_or(0);
                        if body.len() >= len {
                            break;
                        }
                    }
                }
                kept.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf).into_owned());
                let _ = s.write_all(reply.as_bytes()).await;
                let _ = s.shutdown().await;
            }
        });
        (format!("http://{addr}/api/token/verify/"), seen)
    }

    fn rest(url: &str) -> RestAuth {
        RestAuth { url: url.into() }
    }

    #[tokio::test]
    async fn posts_the_form_and_reads_a_json_list() {
        let (url, seen) = server(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n[\"test.*\", \"@wheel\"]",
        )
        .await;
        // The Content-Length above cuts the body: a broken answer is not JSON.
        let e = rest(&url).fetch("alice", "p&w=1").await.unwrap_err();
        assert!(matches!(e, RestError::Body(..)), "{e}");
        let req = seen.lock().unwrap()[0].clone();
        assert!(
            req.starts_with("POST /api/token/verify/ HTTP/1.1\r\n"),
            "{req}"
        );
        assert!(
            req.contains("Content-Type: application/x-www-form-urlencoded\r\n"),
            "{req}"
        );
        assert!(
            req.ends_with("\r\n\r\nusername=alice&password=p%26w%3D1"),
            "{req}"
        );

        let (url, _) = server(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n[\"test.*\", \"@wheel\"]",
        )
        .await;
        assert_eq!(
            rest(&url).fetch("alice", "pw").await.unwrap(),
            json!(["test.*", "@wheel"])
        );
    }

    #[tokio::test]
    async fn alcalis_answer_and_other_bodies() {
        // Alcali's verify view: 200 with `[]` (Django REST framework's JSON).
        let (url, _) = server(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]",
        )
        .await;
        assert_eq!(rest(&url).fetch("u", "t").await.unwrap(), json!([]));
        // No Content-Type is JSON; null is an empty list; chunked bodies are joined.
        let (url, _) = server(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nnu\r\n2\r\nll\r\n0\r\n\r\n",
        )
        .await;
        assert_eq!(rest(&url).fetch("u", "t").await.unwrap(), json!([]));
        // YAML by its Content-Type; a body running to the end of the connection.
        let (url, _) =
            server("HTTP/1.1 200 OK\r\nContent-Type: application/x-yaml\r\n\r\n- test.ping\n")
                .await;
        assert_eq!(
            rest(&url).fetch("u", "t").await.unwrap(),
            json!(["test.ping"])
        );
        // HTML is not decoded by Salt's rest eauth: the login fails.
        let (url, _) =
            server("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nok")
                .await;
        let e = rest(&url).fetch("u", "t").await.unwrap_err().to_string();
        assert!(e.contains("text/html"), "{e}");
    }

    #[tokio::test]
    async fn refusals_name_what_went_wrong() {
        let (url, _) = server(
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: text/html\r\nContent-Length: 12\r\n\r\nUnauthorized",
        )
        .await;
        let e = rest(&url).fetch("u", "bad").await.unwrap_err();
        assert!(matches!(e, RestError::Status(_, 401)), "{e}");
        // 2xx other than 200 is not Salt's success either.
        let (url, _) = server("HTTP/1.1 204 No Content\r\n\r\n").await;
        let e = rest(&url).fetch("u", "t").await.unwrap_err();
        assert!(matches!(e, RestError::Status(_, 204)), "{e}");

        // Nobody listening: a port just bound and released.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let e = rest(&format!("http://127.0.0.1:{port}/verify"))
            .fetch("u", "t")
            .await
            .unwrap_err();
        assert!(matches!(e, RestError::Unreachable(..)), "{e}");
        assert!(e.to_string().contains(&port.to_string()), "{e}");

        for bad in ["ftp://example.com/x", "not a url", "http://[::1/x"] {
            let e = rest(bad).fetch("u", "t").await.unwrap_err();
            assert!(matches!(e, RestError::BadUrl(..)), "{bad}: {e}");
            assert!(e.to_string().contains("^url"), "{e}");
        }
    }

    #[test]
    fn acl_merges_as_salts_rest_acl() {
        let own = vec![json!(".*"), json!("@runner")];
        // Alcali's `[]`: the user's own entry alone.
        assert_eq!(merge_acl(Some(&own), &json!([])), Some(own.clone()));
        // A list is appended to the user's entry.
        assert_eq!(
            merge_acl(Some(&own), &json!(["@wheel"])),
            Some(vec![json!(".*"), json!("@runner"), json!("@wheel")])
        );
        assert_eq!(
            merge_acl(None, &json!([{"web*": ["test.*"]}])),
            Some(vec![json!({"web*": ["test.*"]})])
        );
        // Nothing from either: the config's other entries decide (None).
        assert_eq!(merge_acl(None, &json!([])), None);
        assert_eq!(merge_acl(None, &json!({})), None);
        assert_eq!(merge_acl(None, &json!(false)), None);
        // A falsy non-list adds nothing; a truthy one breaks Salt's merge: None.
        assert_eq!(merge_acl(Some(&own), &json!(0)), Some(own.clone()));
        assert_eq!(merge_acl(Some(&own), &json!({"a": 1})), None);
        assert_eq!(merge_acl(Some(&own), &json!("test.*")), None);
        // An answered entry that is no permission: not used (logged).
        assert_eq!(merge_acl(Some(&own), &json!(["("])), None);
    }
}
