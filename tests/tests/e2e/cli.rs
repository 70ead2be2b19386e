//! The saltq CLI as a Salt user types it: each outputter against stored expected output, salt's
//! messages and exit codes, --async then lookup, batch, key flows, salt-call, completions.

use std::path::PathBuf;
use std::process::Command;

use saltq_tests::{Master, bin};
use serde_json::json;

fn expected(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/e2e/expected")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn outputters_match_stored_output() {
    let master = Master::start("auto_accept: true");
    let _m = master.minion("out1", "");
    master.wait_for("out1");
    let arg = r#"{"name": "web", "ports": [80, 443], "tls": true, "ratio": 0.5, "none": null, "text": "two\nlines"}"#;
    for out in ["nested", "json", "yaml", "txt", "raw", "quiet"] {
        let o = master.saltq(&["-L", "out1", "test.echo", arg, "--out", out]);
        assert_eq!(o.code, 0, "{out}: {o:?}");
        assert_eq!(o.stdout, expected(&format!("echo.{out}")), "--out {out}");
    }
    let o = master.saltq(&[
        "-L",
        "out1",
        "test.echo",
        arg,
        "--out",
        "json",
        "--out-indent",
        "-1",
    ]);
    assert_eq!(o.stdout, expected("echo.json-indent-1"));
    // --out-file, then --out-file-append.
    let file = master.dir.0.join("out.txt");
    let f = file.to_str().unwrap();
    assert_eq!(
        master
            .saltq(&["-L", "out1", "test.echo", "one", "--out-file", f])
            .code,
        0
    );
    assert_eq!(
        master
            .saltq(&[
                "-L",
                "out1",
                "test.echo",
                "two",
                "--out-file",
                f,
                "--out-file-append"
            ])
            .code,
        0
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "out1:\n    one\nout1:\n    two\n"
    );
    // Colour only when asked (stdout is not a terminal here); NO_COLOR wins over nothing.
    let o = master.saltq(&["-L", "out1", "test.echo", "c", "--force-color"]);
    assert!(o.stdout.contains("\x1b["), "{o:?}");
    let o = master.saltq(&["-L", "out1", "test.echo", "c"]);
    assert!(!o.stdout.contains("\x1b["), "{o:?}");
    let o = master.saltq(&["--out", "pprint", "*", "test.ping"]);
    assert_eq!(o.code, 64, "{o:?}");
    assert!(o.stderr.contains("unknown outputter \"pprint\""), "{o:?}");
}

#[test]
fn verbose_show_jid_static_hide_timeout_and_async_lookup() {
    let master = Master::start("auto_accept: true");
    let _m = master.minion("v1", "");
    master.wait_for("v1");
    let o = master.saltq(&["-v", "v1", "test.ping"]);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert!(lines[0].starts_with("Executing job with jid "), "{o:?}");
    assert_eq!(lines[1], "-".repeat(lines[0].len()));
    assert_eq!(&lines[2..], ["", "v1:", "    True"]);
    let o = master.saltq(&["--show-jid", "v1", "test.ping"]);
    assert!(
        o.stdout.starts_with("jid: ") && o.stdout.ends_with("v1:\n    True\n"),
        "{o:?}"
    );
    // A listed minion with no key: reported, exit 1; hidden with --hide-timeout (still exit 1).
    let o = master.saltq(&[
        "-L",
        "v1,ghost",
        "test.ping",
        "-t",
        "1",
        "--gather-job-timeout",
        "1",
    ]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout
            .contains("ghost:\n    Minion did not return. [No response]\n"),
        "{o:?}"
    );
    assert!(o.stdout.contains("saltq run jobs.lookup_jid "), "{o:?}");
    assert_eq!(
        o.stderr,
        "ERROR: Minions returned with non-zero exit code\n"
    );
    let o = master.saltq(&[
        "-L",
        "v1,ghost",
        "test.ping",
        "-t",
        "1",
        "--gather-job-timeout",
        "1",
        "--hide-timeout",
    ]);
    assert_eq!((o.code, o.stdout.as_str()), (1, "v1:\n    True\n"), "{o:?}");
    // sys.doc prints each function's doc once, as salt's _print_docs.
    let o = master.saltq(&["*", "sys.doc", "test.ping"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(
        o.stdout.starts_with("test.ping:\n") && o.stdout.contains("Check that the minion is up"),
        "{o:?}"
    );
    assert!(!o.stdout.contains("v1:"), "not per minion: {o:?}");
    // --async, then look the job up.
    let o = master.saltq(&["v1", "test.echo", "later", "--async"]);
    assert!(
        o.stdout.starts_with("Executed command with job ID: "),
        "{o:?}"
    );
    let jid = o.stdout.trim().rsplit(' ').next().unwrap().to_owned();
    let got = saltq_tests::eventually(
        "async job returned",
        std::time::Duration::from_secs(10),
        || {
            let o = master.saltq(&["jobs", "lookup", &jid, "--out", "json"]);
            (o.json() == json!({"v1": "later"})).then_some(o)
        },
    );
    assert_eq!(got.code, 0);
    let o = master.saltq(&["jobs", "list", "--function", "test.echo", "--out", "json"]);
    assert_eq!(o.json()[&jid]["Function"], "test.echo", "{o:?}");
    assert_eq!(o.json()[&jid]["Arguments"], json!(["later"]));
    // cmd.run_all of a failing command: retcode 3 makes the plain command exit 1, while
    // --static exits 0 as Salt's does (SALT-SEMANTICS.md).
    let o = master.saltq(&[
        "v1",
        "cmd.run_all",
        "echo hi; echo err >&2; exit 3",
        "python_shell=True",
        "--out",
        "json",
        "--static",
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    let v = o.json();
    assert_eq!(
        (
            v["v1"]["retcode"].clone(),
            v["v1"]["stdout"].clone(),
            v["v1"]["stderr"].clone()
        ),
        (json!(3), json!("hi"), json!("err")),
        "{o:?}"
    );
}

#[test]
fn failing_command_exit_codes() {
    let master = Master::start("auto_accept: true");
    let _m = master.minion("f1", "");
    master.wait_for("f1");
    let o = master.saltq(&["f1", "cmd.run_all", "exit 3", "python_shell=True"]);
    assert_eq!(o.code, 1, "{o:?}");
    assert_eq!(
        o.stderr,
        "ERROR: Minions returned with non-zero exit code\n"
    );
    let o = master.saltq(&["f1", "cmd.run", "exit 4", "python_shell=True"]);
    assert_eq!(o.code, 1, "{o:?}");
    let o = master.saltq(&["f1", "test.false"]);
    assert_eq!(o.code, 1, "a False return counts as a failure: {o:?}");
}

#[test]
fn batch_with_a_percentage() {
    let master = Master::start("auto_accept: true");
    let ms: Vec<_> = ["b1", "b2", "b3", "b4"]
        .iter()
        .map(|id| master.minion(id, ""))
        .collect();
    for m in &ms {
        master.wait_for(&m.id);
    }
    let o = master.saltq(&["-b", "50%", "b*", "test.echo", "batched"]);
    assert_eq!(o.code, 0, "{o:?}");
    let runs = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("Executing run on ["))
        .count();
    assert!(
        runs >= 2,
        "a window of 2 over 4 minions runs in several steps: {o:?}"
    );
    for id in ["b1", "b2", "b3", "b4"] {
        assert!(
            o.stdout.contains(&format!("{id}:\n    batched\n")),
            "{id}: {o:?}"
        );
    }
    let o = master.saltq(&["-b", "0", "b*", "test.ping"]);
    assert_eq!(o.code, 64, "{o:?}");
    assert!(o.stderr.contains("invalid batch size"), "{o:?}");
    let o = master.saltq(&["-b", "1", "--failhard", "b*", "test.retcode", "5"]);
    assert_eq!(o.code, 5, "{o:?}");
    assert!(o.stderr.contains("--failhard"), "{o:?}");
}

#[test]
fn key_flows() {
    let master = Master::start("");
    let _a = master.minion("ka", "");
    let _b = master.minion("kb", "");
    saltq_tests::eventually(
        "two pending keys",
        std::time::Duration::from_secs(20),
        || {
            let o = master.saltq(&["key", "-l", "un", "--out", "json"]);
            (o.json()["minions_pre"] == json!(["ka", "kb"])).then_some(())
        },
    );
    let o = master.saltq(&["key", "-a", "nomatch", "-y"]);
    assert_eq!(
        o.stdout,
        "The key glob 'nomatch' does not match any unaccepted keys.\n"
    );
    let o = master.saltq(&["key", "-r", "kb", "-y"]);
    assert_eq!(
        o.stdout,
        "The following keys are going to be rejected:\nUnaccepted Keys:\nkb\nKey for minion kb rejected.\n"
    );
    let o = master.saltq(&["key", "-a", "kb", "-y", "--include-rejected"]);
    assert_eq!(
        o.stdout,
        "The following keys are going to be accepted:\nRejected Keys:\nkb\nKey for minion kb accepted.\n",
        "{o:?}"
    );
    // Without -y, accept defaults to yes on an empty answer (stdin closed).
    let o = master.saltq(&["key", "-A"]);
    assert!(
        o.stdout.contains("Proceed? [n/Y]") && o.stdout.contains("Key for minion ka accepted."),
        "{o:?}"
    );
    let o = master.saltq(&["key", "-F"]);
    assert!(
        o.stdout.starts_with("Accepted Keys:\nka:  ") && o.stdout.contains("\nkb:  "),
        "{o:?}"
    );
    let o = master.saltq(&["key", "-p", "ka"]);
    assert!(
        o.stdout.contains("ka:  -----BEGIN PUBLIC KEY-----"),
        "{o:?}"
    );
    // Delete defaults to no on an empty answer.
    let o = master.saltq(&["key", "-d", "ka"]);
    assert!(
        o.stdout.contains("Proceed? [N/y]") && !o.stdout.contains("Key for minion ka deleted"),
        "{o:?}"
    );
    let o = master.saltq(&["key", "-d", "ka", "-y"]);
    assert!(o.stdout.ends_with("Key for minion ka deleted.\n"), "{o:?}");
    let o = master.saltq(&["key", "-l", "bogus"]);
    assert_eq!(o.code, 64, "{o:?}");
}

#[test]
fn minion_named_like_a_subcommand_and_usage_errors() {
    let master = Master::start("auto_accept: true");
    let _m = master.minion("run", "");
    let o = saltq_tests::eventually(
        "minion 'run' answers",
        std::time::Duration::from_secs(20),
        || {
            let o = master.saltq(&["-L", "run", "test.ping"]);
            (o.code == 0).then_some(o)
        },
    );
    assert_eq!(o.stdout, "run:\n    True\n");
    let o = master.saltq(&[]);
    assert_eq!(o.code, 64, "{o:?}");
    let o = master.saltq(&["*"]);
    assert_eq!(o.code, 64, "{o:?}");
    assert!(o.stderr.contains("FUNCTION"), "{o:?}");
    let o = master.saltq(&["--bogus", "*", "test.ping"]);
    assert_eq!(o.code, 64, "{o:?}");
    let o = master.saltq(&["run", "jobs.nosuch"]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(
        o.stdout.contains("'jobs.nosuch' is not available."),
        "{o:?}"
    );
}

#[test]
fn salt_call_local_and_completions() {
    let o = Command::new(bin("saltq-minion"))
        .args([
            "-c",
            "/nonexistent",
            "--id",
            "callme",
            "call",
            "--local",
            "grains.item",
            "id",
            "--out",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v, json!({"local": {"id": "callme"}}));
    let o = Command::new(bin("saltq-minion"))
        .args([
            "-c",
            "/nonexistent",
            "call",
            "--local",
            "test.retcode",
            "7",
            "--retcode-passthrough",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(7), "{o:?}");
    let o = Command::new(bin("saltq-minion"))
        .args(["-c", "/nonexistent", "call", "--local", "test.foo"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "local:\n    'test.foo' is not available.\n"
    );
    for shell in ["bash", "zsh", "fish"] {
        let o = Command::new(bin("saltq"))
            .args(["completions", shell])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{shell}");
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            text.contains("saltq")
                && text.contains("gather-job-timeout")
                && text.contains("accept-all"),
            "{shell}"
        );
    }
    let o = Command::new(bin("saltq")).arg("manpage").output().unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(".TH saltq"),
        "man page"
    );
}
