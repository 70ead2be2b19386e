//! salt-api's `local_batch` client and `POST /keys` (`key.gen_accept`) on a real master with
//! real minions, compared with Salt 3007.8's answers to the same requests
//! (`data/saltapi/batchkeys.json`, recorded by `gen.py batchkeys`): batch returns one entry
//! per minion, and the key tarball is all a new minion needs to be accepted at its first
//! connection, extracted with tar as Salt's kickstart example does. The same recording holds
//! the cases of the audit of issue 17: a runner's `full_return`, refusals without a token.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use saltq_tests::{Launch, Master, eventually};
use serde_json::{Value, json};

use super::{Api, Resp, USERS, same_shape, shape};

/// Two autosigned minions `m1` and `m2` (so keys made by `POST /keys` are the only others
/// accepted), local_batch enabled.
fn config(dir: &Path) -> String {
    std::fs::write(dir.join("users.txt"), USERS).expect("users file");
    // root_dir prefixes autosign_file, as in Salt.
    std::fs::create_dir_all(dir.join("root/etc")).expect("root dir");
    std::fs::write(dir.join("root/etc/autosign"), "m1\nm2\n").expect("autosign file");
    format!(
        "auto_accept: false\nautosign_file: /etc/autosign\n\
         external_auth:\n  file:\n    ^filename: {}\n    alice: ['.*', '@runner', '@wheel', '@jobs']\n    bob: ['test.ping']\n\
         netapi_enable_clients: [local, local_async, local_batch, runner, runner_async, wheel, wheel_async]\n\
         rest_cherrypy: {{port: 0, host: 127.0.0.1}}\n",
        dir.join("users.txt").display()
    )
}

fn recording() -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/data/saltapi/batchkeys.json");
    serde_json::from_str(&std::fs::read_to_string(&p).expect("batchkeys.json"))
        .expect("batchkeys.json is JSON")
}

/// Sends a recorded request as its user (`alice`, or `bob`) with saltq's token.
fn send(api: &Api, case: &Value, tokens: (&str, &str)) -> Resp {
    let req = &case["request"];
    let ct = req["content_type"].as_str().unwrap();
    let mut headers = vec![];
    if req["token"] == json!(true) {
        let t = if req["user"] == "bob" {
            tokens.1
        } else {
            tokens.0
        };
        headers.push(("X-Auth-Token", t));
    }
    let body = match &req["body"] {
        Value::Null => None,
        Value::String(s) if ct != "application/json" => Some(s.clone()),
        b => Some(b.to_string()),
    };
    api.request(
        req["method"].as_str().unwrap(),
        req["path"].as_str().unwrap(),
        &headers,
        body.as_ref().map(|b| (ct, b.as_bytes())),
    )
}

/// A batch answer's entries, sorted: Salt and saltq return minions in different orders.
fn entries(v: &Value) -> Vec<String> {
    let mut e: Vec<String> = v["return"]
        .as_array()
        .unwrap_or_else(|| panic!("no return list in {v}"))
        .iter()
        .map(Value::to_string)
        .collect();
    e.sort();
    e
}

/// The members of a tarball: `(name, text)`, read by tar itself.
fn untar(bytes: &[u8], into: &Path) -> Vec<(String, String)> {
    std::fs::create_dir_all(into).unwrap();
    let file = into.join("keys.tar");
    std::fs::write(&file, bytes).unwrap();
    let o = std::process::Command::new("tar")
        .arg("-tf")
        .arg(&file)
        .output()
        .expect("run tar");
    assert!(o.status.success(), "tar -tf: {o:?}");
    let names: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    let o = std::process::Command::new("tar")
        .arg("-C")
        .arg(into)
        .arg("-xf")
        .arg(&file)
        .output()
        .expect("run tar");
    assert!(o.status.success(), "tar -xf: {o:?}");
    std::fs::remove_file(&file).unwrap();
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(into.join(&n)).unwrap();
            (n, text)
        })
        .collect()
}

/// `local_batch` as Salt's: every recorded batch request answered with the same entries
/// (in any order), failhard stopping after the first failure, the caller's rights checked
/// for each sub-batch, and a bad batch size refused with Salt's message.
#[test]
fn local_batch_answers_as_salts() {
    let master = Master::start_with(config);
    let _m1 = master.minion("m1", "");
    let _m2 = master.minion("m2", "");
    master.wait_for("m1");
    master.wait_for("m2");
    let api = Api::new(&master, true);
    let alice = api.login("alice", "secret");
    let bob = api.login("bob", "pingonly");
    let cases = recording();
    let mut compared = 0;
    for (name, case) in cases.as_object().unwrap() {
        if !(name.starts_with("batch") || name.starts_with("bob_batch")) {
            continue;
        }
        compared += 1;
        let want = &case["response"];
        let started = Instant::now();
        let r = send(&api, case, (&alice, &bob));
        match name.as_str() {
            // Salt's salt-api pings first and then fails with a bare 500; saltq refuses the
            // chunk before anything runs, with the message Salt's CLI prints.
            "batch_bad" => {
                assert_eq!(want["status"], 500, "{want}");
                assert_eq!(
                    (r.status, r.message()),
                    (
                        400,
                        "Invalid batch data sent: lots\nData must be in the form of %10, 10% or 3"
                            .to_owned()
                    ),
                    "{r:?}"
                );
            }
            // Salt starts minions in its own order; with failhard one return, then the stop.
            "batch_failhard" => {
                let (s, o) = (&want["body"]["return"], &r.json()["return"]);
                assert_eq!(s.as_array().unwrap().len(), 1, "{s}");
                assert_eq!(o.as_array().map(Vec::len), Some(1), "{name}: {r:?}");
                let value = |v: &Value| v[0].as_object().unwrap().values().next().cloned();
                assert_eq!(value(o), value(s), "{name}: {r:?}");
            }
            _ => {
                assert_eq!(
                    r.status as u64,
                    want["status"].as_u64().unwrap(),
                    "{name}: {r:?}"
                );
                if want["status"] == 200 {
                    assert_eq!(entries(&r.json()), entries(&want["body"]), "{name}: {r:?}");
                } else {
                    let salt = Resp {
                        status: 0,
                        headers: vec![],
                        body: want["body"].as_str().unwrap().to_owned(),
                    };
                    assert_eq!(r.message(), salt.message(), "{name}: {r:?}");
                }
            }
        }
        if name == "batch_wait" {
            // One at a time, the second only once the first's slot was held a second.
            assert!(started.elapsed() >= Duration::from_secs(1), "{name}");
        }
    }
    assert_eq!(compared, 13, "every recorded batch case was replayed");
    // Each sub-batch is a job of its own, on its minions only.
    let r = api.json(
        "POST",
        "/",
        Some(&alice),
        &json!([{"client": "local_batch", "tgt": "m*", "fun": "test.echo", "arg": ["one"],
                 "batch": "1"}]),
    );
    assert_eq!(
        entries(&r.json()),
        [r#"{"m1":"one"}"#, r#"{"m2":"one"}"#],
        "{r:?}"
    );
    let jobs = api.get("/jobs", Some(&alice)).json();
    let echo: Vec<&Value> = jobs["return"][0]
        .as_object()
        .unwrap()
        .values()
        .filter(|j| j["Function"] == "test.echo" && j["Arguments"] == json!(["one"]))
        .collect();
    assert_eq!(echo.len(), 2, "one job per sub-batch: {jobs}");
    for j in echo {
        assert_eq!(j["User"], "alice", "{j}");
        assert_eq!(j["Target-type"], "list", "{j}");
    }
    // local_batch is refused where netapi_enable_clients does not list it.
    let plain = Master::start_with(|d| config(d).replace("local_batch, ", ""));
    let other = Api::new(&plain, true);
    let t = other.login("alice", "secret");
    let r = other.json(
        "POST",
        "/",
        Some(&t),
        &json!([{"client": "local_batch", "tgt": "*", "fun": "test.ping"}]),
    );
    assert_eq!(
        (r.status, r.message()),
        (
            400,
            "Client disabled: 'local_batch'. Add to 'netapi_enable_clients' master config option to enable."
                .to_owned()
        )
    );
}

/// `POST /keys`: a tarball named as Salt names it, holding what a saltq minion reads from its
/// pki_dir; a minion started on those files is accepted at once (no pending step: the
/// master accepts nothing else here) and runs jobs. `key.gen_accept` through the wheel client
/// answers Salt's shape; refusals are 401 with Salt's messages.
#[test]
fn post_keys_makes_a_minion_that_is_accepted_at_once() {
    let master = Master::start_with(config);
    let api = Api::new(&master, true);
    let alice = api.login("alice", "secret");
    let bob = api.login("bob", "pingonly");
    let cases = recording();

    let r = send(&api, &cases["keys_post_form"], (&alice, &bob));
    let want = &cases["keys_post_form"]["response"];
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/x-tar"));
    assert_eq!(
        r.header("content-disposition"),
        want["content_disposition"].as_str(),
        "{r:?}"
    );
    assert_eq!(
        r.header("content-disposition"),
        Some(r#"attachment; filename="saltkeys-k1.tar""#)
    );
    let scratch = master.dir.0.join("k1-keys");
    let files = untar(r.bytes(), &scratch);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["minion.key", "minion.crt", "master_ca.crt"]);
    let key = files[0].1.clone();
    assert!(key.contains("PRIVATE KEY"), "{key}");
    assert!(files[1].1.contains("BEGIN CERTIFICATE"), "{}", files[1].1);
    assert_eq!(
        files[2].1,
        std::fs::read_to_string(master.pki_dir().join("ca.crt")).unwrap(),
        "the CA to pin is the master's"
    );
    let mode = std::fs::metadata(scratch.join("minion.key")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );
    let wheel = |fun: &str, extra: Value| -> Value {
        let mut low = json!({"client": "wheel", "fun": fun});
        for (k, v) in extra.as_object().unwrap() {
            low[k] = v.clone();
        }
        let r = api.json("POST", "/", Some(&alice), &json!([low]));
        assert_eq!(r.status, 200, "{fun}: {r:?}");
        r.json()["return"][0]["data"].clone()
    };
    assert_eq!(
        wheel("key.list", json!({"match": "accepted"}))["return"],
        json!({"minions": ["k1"]})
    );

    // A new minion whose pki_dir is the tarball, extracted by its start script.
    let tar = scratch.join("k1.tar");
    std::fs::write(&tar, r.bytes()).unwrap();
    let script = format!(
        "p=\"$2/../root/etc/saltq/pki/minion\"; mkdir -p \"$p\" && tar -C \"$p\" -xf {} && exec \"$0\" \"$@\"",
        tar.display()
    );
    let k1 = master.minion_launched(
        "k1",
        "",
        Launch {
            prefix: vec!["sh".into(), "-c".into(), script],
            env: vec![],
        },
    );
    let ping = eventually("k1 answers test.ping", Duration::from_secs(30), || {
        let r = api.json(
            "POST",
            "/",
            Some(&alice),
            &json!([{"client": "local", "tgt": "k1", "fun": "test.ping", "timeout": 2}]),
        );
        (r.status == 200 && r.json()["return"][0]["k1"] == json!(true)).then_some(r)
    });
    assert_eq!(ping.json(), json!({"return": [{"k1": true}]}));
    assert_eq!(
        std::fs::read_to_string(k1.pki_dir().join("minion.key")).unwrap(),
        key,
        "the minion kept the key it was given"
    );
    let all = wheel("key.list_all", json!({}));
    assert_eq!(all["return"]["minions"], json!(["k1"]), "{all}");
    assert_eq!(
        all["return"]["minions_pre"],
        json!([]),
        "never pending: {all}"
    );
    assert_eq!(all["return"]["minions_denied"], json!([]), "{all}");

    // Again for k1: Salt's empty files, nothing changed.
    let r = send(&api, &cases["keys_post_again"], (&alice, &bob));
    assert_eq!(r.status, 200, "{r:?}");
    let salt_sizes: Vec<u64> = cases["keys_post_again"]["response"]["body"]["tar"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["size"].as_u64().unwrap())
        .collect();
    assert_eq!(salt_sizes, [0, 0]);
    let again = untar(r.bytes(), &master.dir.0.join("k1-again"));
    assert!(again.iter().all(|(_, t)| t.is_empty()), "{again:?}");
    assert_eq!(
        std::fs::read_to_string(k1.pki_dir().join("minion.key")).unwrap(),
        key
    );

    // JSON bodies too; and key.gen_accept through the wheel client, Salt's shape.
    let r = send(&api, &cases["keys_post_json"], (&alice, &bob));
    assert_eq!(
        r.header("content-disposition"),
        Some(r#"attachment; filename="saltkeys-k2.tar""#)
    );
    for name in ["wheel_gen_accept", "wheel_gen_accept_again"] {
        let case = &cases[name];
        let r = send(&api, case, (&alice, &bob));
        let (s, o) = (shape(&case["response"]["body"], 5), shape(&r.json(), 5));
        assert!(
            same_shape(&s, &o),
            "{name}: not Salt's shape\n salt: {s}\nsaltq: {o}"
        );
        if name == "wheel_gen_accept_again" {
            assert_eq!(r.json()["return"][0]["data"]["return"], json!({}), "{r:?}");
        }
    }
    let listed = send(&api, &cases["keys_after"], (&alice, &bob)).json();
    assert_eq!(
        listed["return"]["minions"],
        json!(["k1", "k2", "k7"]),
        "{listed}"
    );

    // Refusals: Salt's salt-api answers each with a bare 500; saltq with 401 and Salt's
    // message, as its other endpoints do.
    for (name, message) in [
        ("keys_post_wrong_password", "Authentication error occurred."),
        (
            "keys_post_header_token",
            "No authentication credentials given",
        ),
        (
            "keys_post_bob",
            "Authentication failure of type \"eauth\" occurred for user bob.",
        ),
    ] {
        assert_eq!(cases[name]["response"]["status"], 500, "{name}");
        let r = send(&api, &cases[name], (&alice, &bob));
        assert_eq!((r.status, r.message()), (401, message.to_owned()), "{name}");
    }
    let r = send(&api, &cases["keys_post_no_mid"], (&alice, &bob));
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.message().contains("mid"), "{r:?}");
    // A token in the body stands for the credentials.
    let r = api.json("POST", "/keys", None, &json!({"mid": "k4", "token": alice}));
    assert_eq!(r.status, 200, "{r:?}");
    let listed = wheel("key.list", json!({"match": "accepted"}));
    assert_eq!(
        listed["return"]["minions"],
        json!(["k1", "k2", "k4", "k7"]),
        "{listed}"
    );
}

/// pepper's `--batch` (its `local_batch` client) against saltq, as in the pepper test of the
/// parent module: from `SALTQ_TEST_PEPPER`, required under CI.
#[test]
fn pepper_batches_through_local_batch() {
    let Some(pepper) = super::pepper() else {
        return;
    };
    let master = Master::start_with(config);
    let _m1 = master.minion("m1", "");
    let _m2 = master.minion("m2", "");
    master.wait_for("m1");
    master.wait_for("m2");
    let home = master.dir.0.join("pepper-home");
    std::fs::create_dir_all(&home).unwrap();
    let o = std::process::Command::new(&pepper)
        .env("HOME", &home)
        .env("SSL_CERT_FILE", master.pki_dir().join("ca.crt"))
        .env_remove("PEPPERRC")
        .args([
            "--saltapi-url",
            &format!("https://{}", super::api_addr(&master)),
            "--eauth",
            "file",
            "--username",
            "alice",
            "--password",
            "secret",
            "--non-interactive",
            "--batch",
            "1",
            "m*",
            "test.echo",
            "batched",
        ])
        .output()
        .expect("run pepper");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{o:?}");
    let v: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("pepper's output is not JSON ({e}): {out}"));
    assert_eq!(
        entries(&v),
        [r#"{"m1":"batched"}"#, r#"{"m2":"batched"}"#],
        "{out}"
    );
}

/// Cases the audit of issue 17 recorded beside these: a runner's `full_return` (Salt's whole
/// `ret` event, `{data, tag}`), and every endpoint's refusal without a token.
#[test]
fn runner_full_return_and_refusals_without_a_token_are_salts() {
    let master = Master::start_with(config);
    let _m1 = master.minion("m1", "");
    master.wait_for("m1");
    let api = Api::new(&master, true);
    let alice = api.login("alice", "secret");
    let cases = recording();
    for name in ["runner_full_return", "runner_full_return_arg"] {
        let case = &cases[name];
        let r = send(&api, case, (&alice, ""));
        let want = &case["response"]["body"];
        let (s, o) = (shape(want, 8), shape(&r.json(), 8));
        assert!(
            same_shape(&s, &o),
            "{name}: not Salt's shape\n salt: {s}\nsaltq: {o}\n body: {}",
            r.body
        );
        let data = &r.json()["return"][0]["data"];
        assert_eq!(data["user"], "alice", "{r:?}");
        assert_eq!(
            r.json()["return"][0]["tag"],
            json!(format!("salt/run/{}/ret", data["jid"].as_str().unwrap()))
        );
        if name == "runner_full_return_arg" {
            let salt = &want["return"][0]["data"];
            for k in ["fun", "fun_args", "return", "success"] {
                assert_eq!(data[k], salt[k], "{name}: {k}: {r:?}");
            }
        }
    }
    let mut compared = 0;
    for (name, case) in cases.as_object().unwrap() {
        if !name.starts_with("no_token") {
            continue;
        }
        compared += 1;
        let r = send(&api, case, (&alice, ""));
        let want = &case["response"];
        let salt = Resp {
            status: 0,
            headers: vec![],
            body: want["body"].as_str().unwrap().to_owned(),
        };
        assert_eq!(
            (r.status as u64, r.message()),
            (want["status"].as_u64().unwrap(), salt.message()),
            "{name}: {r:?}"
        );
    }
    assert_eq!(compared, 9, "every recorded refusal was replayed");
}
