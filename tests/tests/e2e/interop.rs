//! Interop with a client we did not write: `buf curl` (Go, connect-go) over HTTP/3 and HTTP/2,
//! using server reflection. Needs `SALTQ_TEST_BUF` (path to the buf binary; `.ci/run` installs
//! it from npm); skipped with a message otherwise.

use std::process::Command;

use saltq_tests::Master;

fn buf() -> Option<String> {
    match std::env::var("SALTQ_TEST_BUF") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            eprintln!(
                "skipped: SALTQ_TEST_BUF is not set (path to buf; .ci/run installs @bufbuild/buf)"
            );
            None
        }
    }
}

fn curl(
    buf: &str,
    master: &Master,
    http3: bool,
    with_cert: bool,
    args: &[&str],
) -> (i32, String, String) {
    let pki = master.pki_dir();
    let mut cmd = Command::new(buf);
    cmd.arg("curl")
        .arg("--protocol")
        .arg("grpc")
        .arg("--cacert")
        .arg(pki.join("ca.crt"));
    if http3 {
        cmd.arg("--http3");
    }
    if with_cert {
        cmd.arg("--cert")
            .arg(pki.join("admin.crt"))
            .arg("--key")
            .arg(pki.join("admin.key"));
    }
    let o = cmd.args(args).output().expect("run buf");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn buf_curl_lists_and_calls_over_http3_and_http2() {
    let Some(buf) = buf() else { return };
    let master = Master::start("auto_accept: true");
    let _m = master.minion("buf1", "");
    master.wait_for("buf1");
    let url = format!("https://127.0.0.1:{}", master.port);
    for http3 in [true, false] {
        let (code, out, err) = curl(&buf, &master, http3, true, &["--list-services", &url]);
        assert_eq!(code, 0, "http3={http3}: {err}");
        for svc in [
            "saltq.v1.JobService",
            "saltq.v1.MinionService",
            "grpc.health.v1.Health",
        ] {
            assert!(
                out.lines().any(|l| l == svc),
                "http3={http3}: {svc} missing from {out}"
            );
        }
        let (code, out, err) = curl(
            &buf,
            &master,
            http3,
            true,
            &["-d", "{}", &format!("{url}/saltq.v1.KeyService/ListKeys")],
        );
        assert_eq!(code, 0, "http3={http3}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("json");
        assert_eq!(
            v["keys"]["minions"],
            serde_json::json!(["buf1"]),
            "http3={http3}: {out}"
        );
        let (code, out, err) = curl(
            &buf,
            &master,
            http3,
            true,
            &[
                "-d",
                r#"{"tgt": "buf1", "fun": ["test.ping"]}"#,
                &format!("{url}/saltq.v1.JobService/Publish"),
            ],
        );
        assert_eq!(code, 0, "http3={http3}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("json");
        assert_eq!(v["jid"].as_str().map(str::len), Some(20), "{out}");
        assert_eq!(v["minions"], serde_json::json!(["buf1"]));
        // Health, as a load balancer or grpc-health-probe would ask.
        let (code, out, err) = curl(
            &buf,
            &master,
            http3,
            true,
            &["-d", "{}", &format!("{url}/grpc.health.v1.Health/Check")],
        );
        assert_eq!(code, 0, "http3={http3}: {err}");
        assert!(out.contains("SERVING"), "{out}");
    }
    // Without a client certificate the handshake is refused: nothing is listed or called.
    for http3 in [true, false] {
        let (code, out, err) = curl(&buf, &master, http3, false, &["--list-services", &url]);
        assert_ne!(code, 0, "http3={http3}: {out}");
        assert!(out.is_empty(), "http3={http3}: {out}");
        // buf reports the refused handshake as "unavailable", or, when its HTTP/2 client wrote
        // before reading the server's alert, as the broken connection.
        let refused = ["unavailable", "broken pipe", "connection reset"]
            .iter()
            .any(|w| err.contains(w));
        assert!(refused, "http3={http3}: {err}");
    }
}
