//! salt-api's eauth beyond the `file` backend, on a real master and minion, answered as Salt
//! 3007.8's salt-api answered the same requests (`data/saltapi/eauth_cases.json`, recorded by
//! `data/saltapi/gen.py eauth`): argument-restricted `external_auth` entries, the `auto`
//! backend, and `pam` against a system user and group the test creates (root only: skipped
//! with a message otherwise), through the raw API and, when `SALTQ_TEST_PEPPER` is set,
//! pepper's `-a pam`; and the `rest` backend against a password checker on loopback (Salt's
//! answers for `rest.py` are in `netapi/testdata/salt_rest_eauth.out`).

use std::path::Path;
use std::process::{Command, Stdio};

use saltq_tests::{Master, Minion, eventually};
use serde_json::{Value, json};

use crate::saltapi::{Api, api_addr, recorded, replay};

/// carol's entries, as in the recording: cmd.run only for `echo ...` in /tmp, test.echo only
/// for arguments that start with "hel".
const CAROL: &str =
    "[{'*': [{cmd.run: {args: ['echo .*'], kwargs: {cwd: /tmp}}}, {test.echo: {args: [hel]}}]}]";

fn config(dir: &Path, pam: &str) -> String {
    std::fs::write(dir.join("users.txt"), "carol:argsonly\n").expect("users file");
    format!(
        "auto_accept: true\n\
         external_auth:\n  file:\n    ^filename: {}\n    carol: {CAROL}\n  auto:\n    dave: ['test.*']\n{pam}\
         netapi_enable_clients: [local, runner]\n\
         rest_cherrypy: {{port: 0, host: 127.0.0.1}}\n",
        dir.join("users.txt").display()
    )
}

fn start(pam: &str) -> (Master, Minion) {
    let pam = pam.to_owned();
    let master = Master::start_with(move |d| config(d, &pam));
    let m = master.minion("m1", "");
    master.wait_for("m1");
    (master, m)
}

fn login(api: &Api, user: &str, password: &str, eauth: &str) -> String {
    let r = api.json(
        "POST",
        "/login",
        None,
        &json!({"username": user, "password": password, "eauth": eauth}),
    );
    assert_eq!(r.status, 200, "{user} via {eauth}: {r:?}");
    r.json()["return"][0]["token"]
        .as_str()
        .expect("token")
        .to_owned()
}

/// Argument-restricted entries and `auto`: every recorded case replayed, with Salt's status,
/// shape and refusal message; the allowed calls' answers exactly.
#[test]
fn argument_restricted_entries_and_auto_answer_as_salts() {
    let (master, _m) = start("");
    let api = Api::new(&master, true);
    let cases = recorded("eauth_cases.json");
    let carol = login(&api, "carol", "argsonly", "file");
    let dave = login(&api, "dave", "any password", "auto");
    let erin = login(&api, "erin", "x", "auto");
    let mut replayed = 0;
    for (name, case) in cases.as_object().unwrap() {
        let token = match name.as_str() {
            n if n.starts_with("carol_") => &carol,
            "auto_ping" => &dave,
            "auto_unlisted_ping" => &erin,
            n if n.starts_with("auto_") => "",
            _ => continue,
        };
        replay(&api, name, case, token, 8);
        replayed += 1;
    }
    assert_eq!(replayed, 15, "carol_* and auto_* cases in eauth_cases.json");
    let run = |low: Value| api.json("POST", "/", Some(&carol), &json!([low]));
    let r = run(json!({"client": "local", "tgt": "m1", "fun": "cmd.run",
                       "arg": ["echo hi"], "kwarg": {"cwd": "/tmp"}}));
    assert_eq!(r.json(), json!({"return": [{"m1": "hi"}]}));
    // The kwargs reached the minion: the command ran in /tmp, through a shell (a kwarg the
    // entry does not name, which Salt does not check).
    let r = run(json!({"client": "local", "tgt": "m1", "fun": "cmd.run",
                       "arg": ["echo $PWD"], "kwarg": {"cwd": "/tmp", "python_shell": true}}));
    assert_eq!(r.json(), json!({"return": [{"m1": "/tmp"}]}));
    let r = run(json!({"client": "local", "tgt": "m1", "fun": "test.echo", "arg": ["hello"]}));
    assert_eq!(r.json(), json!({"return": [{"m1": "hello"}]}));
    let r = run(json!({"client": "local", "tgt": "m1", "fun": "cmd.run",
                       "arg": ["rm -rf /tmp/x"], "kwarg": {"cwd": "/tmp"}}));
    assert_eq!(
        (r.status, r.message()),
        (401, "Authorization error occurred.".into())
    );
    let log = std::fs::read_to_string(master.log()).unwrap_or_default();
    assert!(
        log.contains("the auto backend accepts any password"),
        "the master warns that auto is for tests"
    );
}

/// A throwaway system user with a password, in a throwaway group; removed when dropped.
struct PamUser {
    user: String,
    group: String,
}

impl PamUser {
    const PASSWORD: &str = "Pw-eauth-4711";

    fn create() -> PamUser {
        let id = std::process::id();
        let u = PamUser {
            user: format!("sqpam{id}"),
            group: format!("sqpam{id}g"),
        };
        let ok = |c: &mut Command| c.status().is_ok_and(|s| s.success());
        assert!(
            ok(Command::new("groupadd").arg(&u.group)),
            "groupadd {}",
            u.group
        );
        assert!(
            ok(Command::new("useradd").args(["-M", "-G", &u.group, &u.user])),
            "useradd {}",
            u.user
        );
        let mut c = Command::new("chpasswd")
            .stdin(Stdio::piped())
            .spawn()
            .expect("chpasswd");
        use std::io::Write;
        writeln!(c.stdin.take().unwrap(), "{}:{}", u.user, Self::PASSWORD).unwrap();
        assert!(c.wait().unwrap().success(), "chpasswd {}", u.user);
        u
    }
}

impl Drop for PamUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.user).status();
        let _ = Command::new("groupdel").arg(&self.group).status();
    }
}

/// Why the pam test cannot run here, if it cannot.
fn pam_missing() -> Option<String> {
    saltq_tests::not_root_or_missing(&["useradd", "userdel", "groupadd", "groupdel", "chpasswd"])
}

/// `pam` against a user this test creates: the right password logs in (with the group%
/// entry's permissions from the user's system group), a wrong one is refused as Salt refuses
/// it, with PAM's reason in the master's log.
#[test]
fn pam_logs_in_a_system_user() {
    if let Some(why) = pam_missing() {
        eprintln!("skipped: {why}");
        return;
    }
    let u = PamUser::create();
    let (master, _m) = start(&format!(
        "  pam:\n    {}: ['test.*']\n    '{}%': ['@runner']\n",
        u.user, u.group
    ));
    let api = Api::new(&master, true);
    let cases = recorded("eauth_cases.json");
    let ours = |name: &str, password: &str| {
        let mut c = cases[name].clone();
        c["request"]["body"]["username"] = json!(u.user);
        c["request"]["body"]["password"] = json!(password);
        c
    };
    let r = replay(
        &api,
        "pam_login",
        &ours("pam_login", PamUser::PASSWORD),
        "",
        8,
    );
    let ret = &r.json()["return"][0];
    assert_eq!(ret["perms"], json!(["@runner", "test.*"]), "{r:?}");
    assert_eq!(
        (&ret["user"], &ret["eauth"]),
        (&json!(u.user), &json!("pam"))
    );
    let token = ret["token"].as_str().unwrap().to_owned();
    replay(&api, "pam_ping", &cases["pam_ping"], &token, 8);
    replay(
        &api,
        "pam_group_runner",
        &cases["pam_group_runner"],
        &token,
        8,
    );
    let r = api.json(
        "POST",
        "/",
        Some(&token),
        &json!([{"client": "local", "tgt": "m1", "fun": "test.ping"}]),
    );
    assert_eq!(r.json(), json!({"return": [{"m1": true}]}));
    // test.* does not cover cmd.run.
    let r = api.json(
        "POST",
        "/",
        Some(&token),
        &json!([{"client": "local", "tgt": "m1", "fun": "cmd.run", "arg": ["id"]}]),
    );
    assert_eq!(r.status, 401, "{r:?}");
    let wrong = replay(
        &api,
        "pam_wrong_password",
        &ours("pam_wrong_password", "wrong"),
        "",
        8,
    );
    let unknown = api.json(
        "POST",
        "/login",
        None,
        &json!({"username": format!("{}x", u.user), "password": "x", "eauth": "pam"}),
    );
    assert_eq!((unknown.status, unknown.body), (wrong.status, wrong.body));
    let why = format!(
        "eauth pam: {} not authenticated: pam_authenticate: Authentication failure",
        u.user
    );
    eventually(
        "PAM's reason in the master's log",
        std::time::Duration::from_secs(10),
        || {
            std::fs::read_to_string(master.log())
                .unwrap_or_default()
                .contains(&why)
                .then_some(())
        },
    );

    let Some(pepper) = std::env::var("SALTQ_TEST_PEPPER")
        .ok()
        .filter(|p| !p.is_empty())
    else {
        eprintln!("pepper -a pam skipped: SALTQ_TEST_PEPPER is not set");
        return;
    };
    let home = master.dir.0.join("pepper-home");
    std::fs::create_dir_all(&home).unwrap();
    let pepper = |password: &str| {
        Command::new(&pepper)
            .env("HOME", &home)
            .env("SSL_CERT_FILE", master.pki_dir().join("ca.crt"))
            .env_remove("PEPPERRC")
            .args([
                "--saltapi-url",
                &format!("https://{}", api_addr(&master)),
                "-a",
                "pam",
                "--username",
                &u.user,
                "--password",
                password,
                "--non-interactive",
                "*",
                "test.ping",
            ])
            .output()
            .expect("run pepper")
    };
    let o = pepper(PamUser::PASSWORD);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_str(&out).expect("pepper prints JSON");
    assert_eq!(v["return"][0]["m1"]["ret"], json!(true), "{out}");
    let o = pepper("wrong");
    assert!(!o.status.success(), "pepper -a pam with a wrong password");
}

/// A password checker on loopback for the `rest` backend: password `pw` gets 200 and
/// `["test.*"]` (permissions Salt's `rest.acl` adds), anything else 401; it stops answering
/// (the port closes) once `stop` is set and one more connection arrives.
fn rest_checker(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> String {
    use std::io::{Read, Write};
    use std::sync::atomic::Ordering;
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        for s in l.incoming() {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            let Ok(mut s) = s else { continue };
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !String::from_utf8_lossy(&got).contains("password=") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let text = String::from_utf8_lossy(&got);
            let reply = if text.ends_with("&password=pw") {
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n[\"test.*\"]"
            } else {
                "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n"
            };
            let _ = s.write_all(reply.as_bytes());
        }
    });
    addr
}

/// The `rest` backend (Salt's `salt/auth/rest.py`): a form POSTed to `^url`, 200 lets in and
/// the answered list adds permissions for a `/run` call that carries the credentials; a token
/// has the config's (none here, as Salt with `keep_acl_in_token: false`); a wrong password, and
/// a `^url` that no longer answers, are 401 with a log line naming why.
#[test]
fn rest_backend_asks_its_url() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    let checker = rest_checker(stop.clone());
    let master = Master::start_with(|_| {
        format!(
            "auto_accept: true\n\
             external_auth:\n  rest:\n    ^url: http://{checker}/verify\n\
             netapi_enable_clients: [local, runner]\n\
             rest_cherrypy: {{port: 0, host: 127.0.0.1}}\n"
        )
    });
    let _m = master.minion("m1", "");
    master.wait_for("m1");
    let api = Api::new(&master, true);
    let run = |password: &str, fun: &str| {
        api.json(
            "POST",
            "/run",
            None,
            &json!([{"client": "local", "tgt": "m1", "fun": fun,
                     "username": "frank", "password": password, "eauth": "rest"}]),
        )
    };
    let r = run("pw", "test.ping");
    assert_eq!(r.json(), json!({"return": [{"m1": true}]}), "{r:?}");
    let r = run("pw", "cmd.run");
    assert_eq!(r.status, 401, "cmd.run is not in [\"test.*\"]: {r:?}");
    let r = run("wrong", "test.ping");
    assert_eq!(r.status, 401, "{r:?}");

    // A token: logged in, with the config's permissions (none).
    let token = login(&api, "frank", "pw", "rest");
    let r = api.json(
        "POST",
        "/",
        Some(&token),
        &json!([{"client": "local", "tgt": "m1", "fun": "test.ping"}]),
    );
    assert_eq!(r.status, 401, "{r:?}");

    // The checker gone: refused, and the log says where the master could not reach.
    stop.store(true, Ordering::SeqCst);
    let _ = std::net::TcpStream::connect(&checker);
    let r = api.json(
        "POST",
        "/login",
        None,
        &json!({"username": "frank", "password": "pw", "eauth": "rest"}),
    );
    assert_eq!(r.status, 401, "{r:?}");
    eventually(
        "the master's log naming the unreachable ^url",
        std::time::Duration::from_secs(10),
        || {
            let log = std::fs::read_to_string(master.log()).unwrap_or_default();
            log.lines()
                .any(|l| {
                    l.contains("eauth rest: cannot POST to ^url")
                        && l.contains(&format!("http://{checker}/verify"))
                })
                .then_some(())
        },
    );
    let log = std::fs::read_to_string(master.log()).unwrap_or_default();
    assert!(
        log.contains("answered status 401, not 200"),
        "the wrong password's refusal is logged"
    );
}
