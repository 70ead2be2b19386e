//! salt-api's authentication hardening (issue #31) on a real master and minion over plain
//! HTTP: a list of functions is a multi-function job checked function by function, expired
//! tokens are swept while the master runs and a user's live tokens are bounded, `POST /token`
//! needs the runner permission Salt's `auth.mk_token` needs, and failed logins count per user
//! and source, the source read from `X-Forwarded-For` only for trusted proxies.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use saltq_tests::{Master, Minion, eventually};
use serde_json::{Value, json};

use crate::saltapi::{api_addr, dechunk};

const USERS: &str = "alice:secret\nbob:pingonly\ntess:testonly\n";

fn config(dir: &Path, extra: &str) -> String {
    std::fs::write(dir.join("users.txt"), USERS).expect("users file");
    format!(
        "auto_accept: true\n\
         external_auth:\n  file:\n    ^filename: {}\n    alice: ['.*', '@runner', '@wheel', '@jobs']\n    bob: ['test.ping']\n    tess: ['test.*']\n\
         netapi_enable_clients: [local, local_async, runner, wheel]\n{extra}",
        dir.join("users.txt").display()
    )
}

fn start(extra: &str, rest: &str) -> (Master, Minion) {
    let (extra, rest) = (extra.to_owned(), rest.to_owned());
    let master = Master::start_with(move |d| {
        config(
            d,
            &format!(
                "{extra}rest_cherrypy: {{port: 0, host: 127.0.0.1, disable_ssl: true{rest}}}\n"
            ),
        )
    });
    let m = master.minion("m1", "");
    master.wait_for("m1");
    (master, m)
}

/// An HTTP answer: status and body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
}

/// One HTTP/1.1 request with `Connection: close`, as bytes.
pub(crate) fn request(
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<(&str, &[u8])>,
) -> Vec<u8> {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: saltq\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    let mut out = match body {
        Some((ct, b)) => {
            req.push_str(&format!(
                "Content-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
                b.len()
            ));
            let mut v = req.into_bytes();
            v.extend_from_slice(b);
            v
        }
        None => {
            req.push_str("Content-Length: 0\r\n\r\n");
            req.into_bytes()
        }
    };
    out.shrink_to_fit();
    out
}

/// Sends `raw` to `addr` from the loopback address `from` (any when `None`) and reads the
/// answer to its end, all within `limit`: a server that does not answer in time is an error.
pub(crate) fn send(
    addr: SocketAddr,
    from: Option<IpAddr>,
    raw: &[u8],
    limit: Duration,
) -> io::Result<Answer> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let exchange = async {
            let sock = tokio::net::TcpSocket::new_v4()?;
            if let Some(ip) = from {
                sock.bind(SocketAddr::new(ip, 0))?;
            }
            let mut s = sock.connect(addr).await?;
            s.write_all(raw).await?;
            let mut buf = Vec::new();
            s.read_to_end(&mut buf).await?;
            Ok::<_, io::Error>(buf)
        };
        let buf = tokio::time::timeout(limit, exchange)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no answer in time"))??;
        let text = String::from_utf8_lossy(&buf).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io::Error::other(format!("no HTTP status in {text:?}")))?;
        let chunked = head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked");
        Ok(Answer {
            status,
            body: if chunked {
                dechunk(body)
            } else {
                body.to_owned()
            },
        })
    })
}

/// A plain-HTTP salt-api client of one master.
pub(crate) struct Client {
    pub(crate) addr: SocketAddr,
}

impl Client {
    pub(crate) fn new(master: &Master) -> Client {
        Client {
            addr: api_addr(master).parse().expect("salt-api address"),
        }
    }

    fn post(
        &self,
        from: Option<IpAddr>,
        path: &str,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> Answer {
        let b = body.to_string();
        let raw = request(
            "POST",
            path,
            headers,
            Some(("application/json", b.as_bytes())),
        );
        send(self.addr, from, &raw, Duration::from_secs(60)).expect("salt-api answers")
    }

    fn login_from(&self, from: Option<IpAddr>, xff: Option<&str>, user: &str, pw: &str) -> Answer {
        let h: Vec<(&str, &str)> = xff.map(|x| ("X-Forwarded-For", x)).into_iter().collect();
        self.post(
            from,
            "/login",
            &h,
            &json!({"username": user, "password": pw, "eauth": "file"}),
        )
    }

    pub(crate) fn login(&self, user: &str, pw: &str) -> String {
        let r = self.login_from(None, None, user, pw);
        assert_eq!(r.status, 200, "{r:?}");
        r.json()["return"][0]["token"]
            .as_str()
            .expect("token")
            .to_owned()
    }

    pub(crate) fn run(&self, token: &str, low: Value) -> Answer {
        self.post(None, "/", &[("X-Auth-Token", token)], &json!([low]))
    }
}

/// A list of functions runs each function with its own arguments, answered per minion as a
/// mapping by function (Salt's multi-function job), and every function is checked against
/// the caller's permissions: `test.*` does not let `cmd.run` through.
#[test]
fn a_list_of_functions_is_a_multi_function_job_checked_function_by_function() {
    let (master, _m) = start("", "");
    let api = Client::new(&master);
    let alice = api.login("alice", "secret");
    let r = api.run(
        &alice,
        json!({"client": "local", "tgt": "m1", "fun": ["test.ping", "cmd.run"],
               "arg": [[], ["echo hi"]]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.json()["return"][0]["m1"],
        json!({"test.ping": true, "cmd.run": "hi"}),
        "{r:?}"
    );
    let tess = api.login("tess", "testonly");
    let r = api.run(
        &tess,
        json!({"client": "local", "tgt": "m1", "fun": ["test.ping", "test.echo"],
               "arg": [[], ["hello"]]}),
    );
    assert_eq!(
        r.json()["return"][0]["m1"],
        json!({"test.ping": true, "test.echo": "hello"}),
        "{r:?}"
    );
    let r = api.run(
        &tess,
        json!({"client": "local", "tgt": "m1", "fun": ["test.ping", "cmd.run"],
               "arg": [[], ["id"]]}),
    );
    assert_eq!(r.status, 401, "test.* does not allow cmd.run: {r:?}");
    assert!(r.body.contains("Authorization error occurred."), "{r:?}");
    let r = api.run(
        &alice,
        json!({"client": "local", "tgt": "m1", "fun": ["test.ping", "cmd.run"],
               "arg": [["id"]]}),
    );
    assert_eq!(r.status, 400, "{r:?}");
    assert!(
        r.body.contains("one list of arguments per function"),
        "{r:?}"
    );
}

fn token_files(master: &Master) -> Vec<PathBuf> {
    let dir = master.dir.0.join("root/var/cache/saltq/master/tokens");
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// Many logins with a short `token_expire`: a user never holds more than
/// `max_tokens_per_user` token files, and the expired ones disappear while the master runs.
#[test]
fn expired_tokens_are_swept_and_a_user_holds_a_bounded_number() {
    let (master, _m) = start("token_expire: 3\nmax_tokens_per_user: 5\n", "");
    let api = Client::new(&master);
    let mut tokens = vec![];
    for _ in 0..12 {
        tokens.push(api.login("alice", "secret"));
        let n = token_files(&master).len();
        assert!(
            n <= 5,
            "alice holds {n} token files, more than max_tokens_per_user"
        );
    }
    let newest = tokens.last().unwrap();
    let r = api.run(
        newest,
        json!({"client": "local", "tgt": "m1", "fun": "test.ping"}),
    );
    assert_eq!(r.status, 200, "the newest token works: {r:?}");
    eventually(
        "the expired tokens to be swept without a restart",
        Duration::from_secs(60),
        || token_files(&master).is_empty().then_some(()),
    );
}

/// `POST /token` makes a token only for users who may run `auth.mk_token` (Salt runs it
/// through the runner client with the credentials); others get Salt's 401.
#[test]
fn post_token_needs_the_runner_permission() {
    let (master, _m) = start("", "");
    let api = Client::new(&master);
    let r = api.post(
        None,
        "/token",
        &[],
        &json!({"username": "bob", "password": "pingonly", "eauth": "file"}),
    );
    assert_eq!(r.status, 401, "{r:?}");
    assert!(
        r.body
            .contains("Authentication failure of type \"eauth\" occurred for user bob."),
        "{r:?}"
    );
    assert!(token_files(&master).is_empty(), "no token is left for bob");
    let r = api.post(
        None,
        "/token",
        &[],
        &json!({"username": "alice", "password": "secret", "eauth": "file"}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()[0]["name"], "alice", "{r:?}");
}

/// Five failures of one user lock that user from that source only: another user at the same
/// address still logs in. `X-Forwarded-For` names the source only when the peer is a trusted
/// proxy (127.0.0.2 here); from any other peer it is ignored.
#[test]
fn failed_logins_count_per_user_and_source() {
    let (master, _m) = start("", ", trusted_proxies: [127.0.0.2/32]");
    let api = Client::new(&master);
    let direct: IpAddr = [127, 0, 0, 1].into();
    let proxy: IpAddr = [127, 0, 0, 2].into();
    for _ in 0..5 {
        let r = api.login_from(Some(direct), Some("198.51.100.1"), "alice", "guess");
        assert_eq!(r.status, 401, "{r:?}");
    }
    // From an untrusted peer the header is ignored: alice is locked out whatever it says.
    let r = api.login_from(Some(direct), Some("198.51.100.2"), "alice", "secret");
    assert_eq!(r.status, 429, "{r:?}");
    assert!(r.body.contains("from 127.0.0.1 for alice"), "{r:?}");
    // bob at the same address is not.
    let r = api.login_from(Some(direct), None, "bob", "pingonly");
    assert_eq!(r.status, 200, "alice's failures lock bob out: {r:?}");
    // Through the trusted proxy, the clients it names are told apart.
    for _ in 0..5 {
        let r = api.login_from(Some(proxy), Some("198.51.100.1"), "tess", "guess");
        assert_eq!(r.status, 401, "{r:?}");
    }
    let r = api.login_from(Some(proxy), Some("198.51.100.1"), "tess", "testonly");
    assert_eq!(r.status, 429, "{r:?}");
    assert!(r.body.contains("from 198.51.100.1 for tess"), "{r:?}");
    let r = api.login_from(Some(proxy), Some("198.51.100.2"), "tess", "testonly");
    assert_eq!(r.status, 200, "another client behind the proxy: {r:?}");
    let r = api.login_from(Some(proxy), None, "tess", "testonly");
    assert_eq!(r.status, 200, "the proxy's own address: {r:?}");
}
