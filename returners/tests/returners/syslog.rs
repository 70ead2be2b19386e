//! syslog: the return as one RFC 3164 or 5424 message, over UDP and to a datagram socket
//! like `/dev/log`, read back by a listener in the test.

use std::time::Duration;

use saltq_returners::Returners;
use serde_json::json;
use tokio::net::{UdpSocket, UnixDatagram};

use crate::support::{assert_mentions, jid, load, opts};

async fn receive_udp(sock: &UdpSocket) -> String {
    let mut buf = vec![0u8; 65536];
    let (n, _) = tokio::time::timeout(Duration::from_secs(5), sock.recv_from(&mut buf))
        .await
        .expect("a message within 5 s")
        .expect("recv");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[tokio::test]
async fn syslog_sends_the_return_over_udp() {
    let sock = UdpSocket::bind("127.0.0.1:0").await.expect("bind");
    let addr = sock.local_addr().expect("addr");
    let o = json!({
        "syslog.address": addr.to_string(),
        "syslog.level": "LOG_ERR",
        "syslog.facility": "LOG_DAEMON",
        "syslog.tag": "saltq-test",
        "syslog.options": ["LOG_PID"],
    });
    let returners = Returners::from_opts(&o).expect("config");
    let jid = jid();
    let ret = load("m-udp", &jid);
    returners
        .returner("syslog", &ret, None, None)
        .await
        .expect("syslog returner");
    let msg = receive_udp(&sock).await;
    // LOG_DAEMON (3) * 8 + LOG_ERR (3).
    assert!(msg.starts_with("<27>"), "{msg}");
    let pid = format!(" saltq-test[{}]: ", std::process::id());
    let (head, body) = msg
        .split_once(&pid)
        .unwrap_or_else(|| panic!("no tag and pid in {msg}"));
    // `<PRI>Mmm dd hh:mm:ss host`.
    assert_eq!(head.split_whitespace().count(), 4, "{head}");
    assert_eq!(
        body,
        format!(
            r#"{{"id": "m-udp", "jid": "{jid}", "fun": "test.echo", "fun_args": ["héllo"], "return": {{"echo": "héllo", "n": [1, 2.5, true, null]}}, "retcode": 0, "success": true}}"#
        )
    );

    // ret_kwargs switch the framing and the level, as `--return_kwargs` would.
    let kwargs = opts(json!({"format": "rfc5424", "level": "LOG_DEBUG"}));
    returners
        .returner("syslog", &ret, None, Some(&kwargs))
        .await
        .expect("rfc5424");
    let msg = receive_udp(&sock).await;
    let words: Vec<&str> = msg.splitn(8, ' ').collect();
    assert_eq!(words[0], "<31>1", "{msg}");
    assert!(words[1].ends_with('Z'), "{msg}");
    assert_eq!(
        &words[3..7],
        ["saltq-test", &std::process::id().to_string(), "-", "-"]
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(words[7]).expect("JSON body"),
        ret
    );
}

#[tokio::test]
async fn syslog_writes_to_a_local_datagram_socket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log");
    let sock = UnixDatagram::bind(&path).expect("bind a socket like /dev/log");
    let o = json!({"syslog": {"address": path, "tag": "mysalt"}});
    let returners = Returners::from_opts(&o).expect("config");
    let ret = load("m-unix", &jid());
    returners
        .returner("syslog", &ret, None, None)
        .await
        .expect("syslog returner");
    let mut buf = vec![0u8; 65536];
    let n = tokio::time::timeout(Duration::from_secs(5), sock.recv(&mut buf))
        .await
        .expect("in time")
        .expect("recv");
    let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
    // glibc's local form: LOG_USER|LOG_INFO, a timestamp, no hostname, no pid.
    assert!(msg.starts_with("<14>"), "{msg}");
    let (head, body) = msg
        .split_once(" mysalt: ")
        .unwrap_or_else(|| panic!("no tag in {msg}"));
    assert_eq!(head.split_whitespace().count(), 3, "{head}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(body).expect("JSON body"),
        ret
    );

    drop(sock);
    let err = returners
        .returner("syslog", &ret, None, None)
        .await
        .expect_err("nobody listens");
    assert_mentions(
        &err,
        &[
            "syslog returner failed to send",
            &path.display().to_string(),
        ],
    );
}

#[tokio::test]
async fn syslog_options_are_checked() {
    let err =
        Returners::from_opts(&json!({"syslog.facility": "LOG_NOPE"})).expect_err("bad facility");
    assert_mentions(&err, &["syslog.facility", "LOG_NOPE", "LOG_LOCAL0"]);
    let err = Returners::from_opts(&json!({"syslog.options": ["LOG_PID", "LOG_LOUD"]}))
        .expect_err("bad option");
    assert_mentions(&err, &["syslog.options", "LOG_LOUD"]);
    let err = Returners::from_opts(&json!({"syslog.tag": "x".repeat(33)})).expect_err("long tag");
    assert_mentions(&err, &["syslog.tag", "32"]);
    let err = Returners::from_opts(&json!({"syslog.address": "nowhere"})).expect_err("bad address");
    assert_mentions(&err, &["syslog.address", "host:port"]);
    let returners = Returners::from_opts(&json!({})).expect("defaults");
    let kwargs = opts(json!({"level": "LOG_WARN"}));
    let err = returners
        .returner("syslog", &load("m", &jid()), None, Some(&kwargs))
        .await
        .expect_err("bad level");
    assert_mentions(&err, &["ret_kwargs.level", "LOG_WARN", "LOG_WARNING"]);
}
