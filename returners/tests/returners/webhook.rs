//! webhook: the return POSTed as JSON to a small HTTP server in the test, which records what
//! it received; error answers, timeouts and a refused connection.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use saltq_returners::{Event, Returners};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::support::{assert_mentions, closed_port, jid, load, opts};

/// What the server saw of one request.
#[derive(Debug)]
struct Seen {
    method: String,
    path: String,
    content_type: String,
    authorization: String,
    body: String,
}

/// Serves on 127.0.0.1:0: `/fail` answers 500, `/slow` never in time, anything else 200.
async fn hook_server() -> (SocketAddr, mpsc::UnboundedReceiver<Seen>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let tx = tx.clone();
                    async move {
                        let header = |name: &str| {
                            req.headers()
                                .get(name)
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or_default()
                                .to_owned()
                        };
                        let (method, path) =
                            (req.method().to_string(), req.uri().path().to_owned());
                        let (content_type, authorization) =
                            (header("content-type"), header("authorization"));
                        let body = req
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let body = String::from_utf8_lossy(&body).into_owned();
                        let _ = tx.send(Seen {
                            method,
                            path: path.clone(),
                            content_type,
                            authorization,
                            body,
                        });
                        let status = match path.as_str() {
                            "/fail" => 500,
                            "/slow" => {
                                tokio::time::sleep(Duration::from_secs(30)).await;
                                200
                            }
                            _ => 200,
                        };
                        let mut resp = Response::new(Full::new(Bytes::from_static(b"boom")));
                        *resp.status_mut() =
                            hyper::StatusCode::from_u16(status).unwrap_or_default();
                        Ok::<_, Infallible>(resp)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, rx)
}

#[tokio::test]
async fn webhook_posts_the_return_as_json() {
    let (addr, mut seen) = hook_server().await;
    let o = json!({
        "webhook.url": format!("http://{addr}/hook?token=abc"),
        "webhook.headers": {"Authorization": "Bearer t0ken"},
    });
    let returners = Returners::from_opts(&o).expect("config");
    let ret = load("m-web", &jid());
    returners
        .returner("webhook", &ret, None, None)
        .await
        .expect("webhook returner");
    let got = seen.recv().await.expect("a request");
    assert_eq!((got.method.as_str(), got.path.as_str()), ("POST", "/hook"));
    assert_eq!(got.content_type, "application/json");
    assert_eq!(got.authorization, "Bearer t0ken");
    assert_eq!(
        serde_json::from_str::<Value>(&got.body).expect("JSON body"),
        ret
    );

    // Events go as one JSON array of Salt's {data, tag}.
    let mut data = Map::new();
    data.insert("id".into(), json!("m-web"));
    let events = [
        Event {
            tag: "a".into(),
            data: data.clone(),
        },
        Event {
            tag: "b".into(),
            data,
        },
    ];
    returners
        .event_return("webhook", &events)
        .await
        .expect("event_return");
    let got = seen.recv().await.expect("a request");
    assert_eq!(
        serde_json::from_str::<Value>(&got.body).expect("JSON body"),
        json!([{"data": {"id": "m-web"}, "tag": "a"}, {"data": {"id": "m-web"}, "tag": "b"}])
    );

    // A profile sends elsewhere; an error answer is an error naming the URL (not its query).
    let fail = opts(json!({"url": format!("http://{addr}/fail?token=secret")}));
    let err = returners
        .returner("webhook", &ret, None, Some(&fail))
        .await
        .expect_err("500");
    assert_mentions(
        &err,
        &[
            "webhook returner",
            &format!("http://{addr}/fail"),
            "500",
            "boom",
        ],
    );
    assert!(
        !err.to_string().contains("secret"),
        "the query leaked: {err}"
    );
}

#[tokio::test]
async fn webhook_times_out_and_names_refusals() {
    let (addr, _seen) = hook_server().await;
    let o = json!({"webhook": {"url": format!("http://{addr}/slow"), "timeout": 0.3}});
    let returners = Returners::from_opts(&o).expect("config");
    let started = std::time::Instant::now();
    let err = returners
        .returner("webhook", &load("m", &jid()), None, None)
        .await
        .expect_err("too slow");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_mentions(&err, &["webhook returner timed out", "300ms"]);

    let port = closed_port().await;
    let kwargs = opts(json!({"url": format!("http://127.0.0.1:{port}/")}));
    let err = returners
        .returner("webhook", &load("m", &jid()), None, Some(&kwargs))
        .await
        .expect_err("refused");
    assert_mentions(
        &err,
        &[
            "webhook returner could not connect",
            &format!("127.0.0.1:{port}"),
        ],
    );

    let none = Returners::from_opts(&json!({})).expect("config");
    let err = none
        .returner("webhook", &load("m", &jid()), None, None)
        .await
        .expect_err("no url");
    assert_mentions(&err, &["webhook.url", "not set"]);
}
