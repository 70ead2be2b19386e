//! Tests of `cmd.*` against the returns salt 3007.8 gave for the same calls.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::default_shell;
use crate::process::tests::{alive, eventually};
use crate::testutil::{check, ctx, publ, run_in, run_kw};

fn pid_of(v: &Value) -> u32 {
    v["pid"]
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn returns_match_salt() {
    let sh = json!({"python_shell": true});
    check(
        "cmd.run",
        json!(["echo hi; echo err >&2; exit 3"]),
        sh.clone(),
        json!("hi\nerr"),
        3,
    )
    .await;
    // Without python_shell the words go to echo: no shell, no redirection, no exit.
    check(
        "cmd.run",
        json!(["echo hi; echo err >&2; exit 3"]),
        json!({}),
        json!("hi; echo err >&2; exit 3"),
        0,
    )
    .await;
    check(
        "cmd.run",
        json!(["printf \"a  b\\n\\n\""]),
        json!({}),
        json!("a  b"),
        0,
    )
    .await;
    check(
        "cmd.run",
        json!(["echo a\\ b \"c d\" e\\\"f 'g h'"]),
        json!({}),
        json!("a b c d e\"f g h"),
        0,
    )
    .await;
    check("cmd.retcode", json!(["exit 4"]), sh.clone(), json!(4), 4).await;
    check("cmd.retcode", json!(["true"]), json!({}), json!(0), 0).await;
    check(
        "cmd.run",
        json!(["true"]),
        json!({"bogus": 1}),
        json!(""),
        0,
    )
    .await;
    check(
        "cmd.run",
        json!(["cat"]),
        json!({"stdin": "one\\ntwo"}),
        json!("one\ntwo"),
        0,
    )
    .await;
    check(
        "cmd.run",
        json!(["echo $0"]),
        sh.clone(),
        json!(default_shell()),
        0,
    )
    .await;
    check(
        "cmd.run",
        json!(["exit 2"]),
        json!({"python_shell": true, "success_retcodes": [2]}),
        json!(""),
        0,
    )
    .await;
    check(
        "cmd.run",
        json!(["echo ok; exit 2"]),
        json!({"python_shell": true, "success_stdout": "ok"}),
        json!("ok"),
        0,
    )
    .await;

    let out = run_kw(
        "cmd.run_all",
        json!(["echo hi; echo err >&2; exit 3"]),
        sh.clone(),
    )
    .await;
    assert_eq!(out.retcode, 3);
    assert!(!out.success);
    let pid = pid_of(&out.ret);
    assert!(pid > 0);
    assert_eq!(
        out.ret,
        json!({"pid": pid, "retcode": 3, "stdout": "hi", "stderr": "err"})
    );
    let keys: Vec<&String> = out
        .ret
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["pid", "retcode", "stdout", "stderr"]);

    let out = run_kw("cmd.run_all", json!(["false"]), json!({})).await;
    assert_eq!((out.ret["retcode"].clone(), out.retcode), (json!(1), 1));
}

#[tokio::test]
async fn errors_match_salt() {
    check(
        "cmd.run",
        json!(["pwd"]),
        json!({"cwd": "/nonexist"}),
        json!("ERROR: Specified cwd '/nonexist' either not absolute or does not exist"),
        1,
    )
    .await;
    check(
        "cmd.run",
        json!(["pwd"]),
        json!({"cwd": "rel"}),
        json!("ERROR: Specified cwd 'rel' either not absolute or does not exist"),
        1,
    )
    .await;
    check(
        "cmd.run",
        json!(["echo hi"]),
        json!({"shell": "/bin/nonexist"}),
        json!("ERROR: The shell /bin/nonexist is not available"),
        1,
    )
    .await;
    check(
        "cmd.run",
        json!(["echo \"unclosed"]),
        json!({}),
        json!("The minion function caused an exception: ValueError: No closing quotation"),
        1,
    )
    .await;
    check(
        "cmd.run",
        json!(["true"]),
        json!({"success_retcodes": "x"}),
        json!("ERROR executing 'cmd.run': success_retcodes must be a list of integers"),
        1,
    )
    .await;
    check(
        "cmd.run",
        json!(["true"]),
        json!({"runas": "nosuchuser_x"}),
        json!("ERROR: User 'nosuchuser_x' is not available"),
        1,
    )
    .await;
    check(
        "cmd.run",
        json!(["true"]),
        json!({"umask": "077"}),
        json!("ERROR: saltq does not support the umask argument of cmd.run yet"),
        1,
    )
    .await;

    let out = run_kw("cmd.run", json!(["nosuchcmd_x arg"]), json!({})).await;
    let text = out.ret.as_str().unwrap_or_default();
    assert!(
        text.starts_with(
            "ERROR: Unable to run command '['nosuchcmd_x', 'arg']' with the context '{'cwd': '"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("', reason: [Errno 2] No such file or directory: 'nosuchcmd_x'"),
        "{text}"
    );
    assert_eq!(out.retcode, 1);

    let out = run_kw("cmd.run", json!([]), json!({})).await;
    let text = out.ret.as_str().unwrap_or_default();
    assert!(
        text.starts_with(
            "Passed invalid arguments to cmd.run: run() missing 1 required positional argument: 'cmd'\n\n    Run a command"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn cwd_env_and_locale() {
    let home = std::env::var("HOME")
        .ok()
        .filter(|h| std::fs::read_dir(h).is_ok())
        .unwrap_or_else(|| "/".into());
    let home = std::fs::canonicalize(&home)
        .map(|p| p.display().to_string())
        .unwrap_or(home);
    check("cmd.run", json!(["pwd"]), json!({}), json!(home), 0).await;
    check(
        "cmd.run",
        json!(["pwd"]),
        json!({"cwd": "/"}),
        json!("/"),
        0,
    )
    .await;
    check(
        "cmd.run",
        json!(["echo $FOO $LC_CTYPE $LANGUAGE $BAR"]),
        json!({"env": {"FOO": 1, "BAR": true}, "python_shell": true}),
        json!("1 C C True"),
        0,
    )
    .await;
    check(
        "cmd.run",
        json!(["echo $LC_CTYPE"]),
        json!({"env": {"LC_CTYPE": "en_US.UTF-8"}, "python_shell": true}),
        json!("en_US.UTF-8"),
        0,
    )
    .await;
    check(
        "cmd.run",
        json!(["echo ${LC_CTYPE:-unset}"]),
        json!({"reset_system_locale": false, "clean_env": true, "python_shell": true}),
        json!("unset"),
        0,
    )
    .await;
    check(
        "cmd.run",
        json!(["env"]),
        json!({"clean_env": true, "env": {"ONLY": "me"}, "reset_system_locale": false}),
        json!("ONLY=me"),
        0,
    )
    .await;
    check(
        "cmd.run",
        json!(["echo $PATH"]),
        json!({"clean_env": true, "prepend_path": "/opt/x", "python_shell": true, "env": {"PATH": "/bin"}}),
        json!("/opt/x:/bin"),
        0,
    )
    .await;
}

#[tokio::test]
async fn retcode_flags() {
    let out = run_kw(
        "cmd.run_all",
        json!(["exit 5"]),
        json!({"python_shell": true, "ignore_retcode": true}),
    )
    .await;
    assert_eq!((out.ret["retcode"].clone(), out.retcode), (json!(5), 0));
    check(
        "cmd.run",
        json!(["echo secret; exit 1"]),
        json!({"python_shell": true, "hide_output": true}),
        json!(""),
        1,
    )
    .await;
    check(
        "cmd.run",
        json!(["echo bad; exit 1"]),
        json!({"python_shell": true, "raise_err": true}),
        json!("ERROR: bad"),
        1,
    )
    .await;
    let out = run_kw(
        "cmd.run_all",
        json!(["echo a; echo b >&2"]),
        json!({"python_shell": true, "redirect_stderr": true, "rstrip": false}),
    )
    .await;
    assert_eq!(
        (out.ret["stdout"].clone(), out.ret["stderr"].clone()),
        (json!("a\nb\n"), json!(""))
    );
}

#[tokio::test]
async fn blacklist_and_whitelist() {
    let mut c = ctx();
    c.opts =
        Arc::new(json!({"cmd_blacklist_glob": ["rm *"], "cmd_whitelist_glob": ["echo *", "rm *"]}));
    let out = run_in(&c, "cmd.run", json!(["rm -rf /tmp/nothing"]), json!({})).await;
    assert_eq!(
        out.ret,
        json!("ERROR: The shell command \"rm -rf /tmp/nothing\" is not permitted")
    );
    let out = run_in(&c, "cmd.run", json!(["ls /"]), json!({})).await;
    assert_eq!(
        out.ret,
        json!("ERROR: The shell command \"ls /\" is not permitted")
    );
    let out = run_in(&c, "cmd.run", json!(["echo ok"]), json!({})).await;
    assert_eq!(out.ret, json!("ok"));
}

#[tokio::test]
async fn timeout_kills_the_command() {
    let start = Instant::now();
    // Salt's text; saltq makes the job's retcode 1 where Salt leaves it at 0.
    check(
        "cmd.run",
        json!(["sleep 5"]),
        json!({"timeout": 1}),
        json!("['sleep', '5'] : Timed out after 1 seconds"),
        1,
    )
    .await;
    check(
        "cmd.retcode",
        json!(["sleep 5"]),
        json!({"timeout": 1}),
        json!(1),
        1,
    )
    .await;
    check(
        "cmd.run",
        json!(["sleep 5; echo x"]),
        json!({"timeout": 1.5, "python_shell": true}),
        json!("sleep 5; echo x : Timed out after 1.5 seconds"),
        1,
    )
    .await;
    let out = run_kw("cmd.run_all", json!(["sleep 5"]), json!({"timeout": 1})).await;
    let pid = pid_of(&out.ret);
    assert_eq!(
        out.ret,
        json!({"stdout": "['sleep', '5'] : Timed out after 1 seconds", "stderr": "", "retcode": 1, "pid": pid})
    );
    assert!(!alive(pid), "the timed-out command {pid} is still running");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "the timeout did not cut the commands short"
    );
}

#[tokio::test]
async fn aborting_the_job_kills_its_process_group() {
    let dir = std::env::temp_dir().join(format!("saltq-exec-abort-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let pidfile = dir.join("grandchild");
    let script = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
    let job_ctx = ctx().for_job();
    let task = {
        let c = job_ctx.clone();
        tokio::spawn(async move {
            let args = json!([script]);
            let kwargs = json!({"python_shell": true});
            let p = publ(&args, &kwargs);
            crate::call(
                &c,
                "cmd.run",
                args.as_array().cloned().unwrap_or_default(),
                kwargs.as_object().cloned().unwrap_or_default(),
                &p,
            )
            .await
        })
    };
    let read_pid = || {
        std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
    };
    assert!(
        eventually(|| read_pid().is_some()).await,
        "the command did not start"
    );
    let grandchild = read_pid().unwrap_or(0);
    let groups = job_ctx.processes.pgids();
    assert_eq!(groups.len(), 1, "the job's command group is not listed");
    let leader = u32::try_from(groups[0]).unwrap_or(0);
    assert!(alive(leader) && alive(grandchild));

    task.abort();
    let _ = task.await;
    assert!(
        eventually(|| !alive(leader)).await,
        "the shell {leader} survived the abort"
    );
    assert!(
        eventually(|| !alive(grandchild)).await,
        "the grandchild {grandchild} survived the abort"
    );
    assert!(job_ctx.processes.pgids().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn signalling_the_job_reaches_its_command() {
    let job_ctx = ctx().for_job();
    let task = {
        let c = job_ctx.clone();
        tokio::spawn(async move { run_in(&c, "cmd.run_all", json!(["sleep 30"]), json!({})).await })
    };
    assert!(eventually(|| !job_ctx.processes.pgids().is_empty()).await);
    assert_eq!(job_ctx.processes.signal(15), 1);
    let out = tokio::time::timeout(Duration::from_secs(5), task).await;
    let Ok(Ok(out)) = out else {
        panic!("the command did not end on SIGTERM: {out:?}");
    };
    assert_eq!(out.ret["retcode"], json!(-15));
    assert_eq!(out.retcode, -15);
}

#[tokio::test]
async fn streams_shell_which_and_has_exec() {
    // Observed with salt-call --local on salt 3007.8.
    let both = "echo a; echo b >&2";
    let sh = json!({"python_shell": true});
    check("cmd.run_stdout", json!([both]), sh.clone(), json!("a"), 0).await;
    check("cmd.run_stderr", json!([both]), sh.clone(), json!("b"), 0).await;
    check(
        "cmd.run_stdout",
        json!(["exit 3"]),
        sh.clone(),
        json!(""),
        3,
    )
    .await;
    check(
        "cmd.shell",
        json!(["echo $0"]),
        json!({}),
        json!(default_shell()),
        0,
    )
    .await;
    check("cmd.shell", json!([both]), json!({}), json!("a\nb"), 0).await;
    check(
        "cmd.shell",
        json!(["echo hidden"]),
        json!({"hide_output": true}),
        json!(""),
        0,
    )
    .await;
    check(
        "cmd.which",
        json!(["/bin/sh"]),
        json!({}),
        json!("/bin/sh"),
        0,
    )
    .await;
    check(
        "cmd.which",
        json!(["nosuch_cmd_x"]),
        json!({}),
        json!(null),
        0,
    )
    .await;
    let out = run_kw("cmd.which", json!(["sh"]), json!({})).await;
    assert!(
        out.ret.as_str().is_some_and(|p| p.ends_with("/sh")),
        "{}",
        out.ret
    );
    check("cmd.has_exec", json!(["sh"]), json!({}), json!(true), 0).await;
    check(
        "cmd.has_exec",
        json!(["nosuch_cmd_x"]),
        json!({}),
        json!(false),
        0,
    )
    .await;
    check(
        "cmd.run",
        json!(["sleep 5"]),
        json!({"timeout": 1}),
        json!("['sleep', '5'] : Timed out after 1 seconds"),
        1,
    )
    .await;
}

#[tokio::test]
async fn script_runs_a_copy_with_args() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let script = tmp.path().join("s.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"args: $@ ($#)\"\necho err >&2\nexit 2\n",
    )
    .unwrap_or_else(|e| panic!("write: {e}"));
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap_or_else(|e| panic!("mkdir: {e}"));
    let cwd = json!(work.display().to_string());
    let path = script.display().to_string();
    // salt 3007.8: {"pid": N, "retcode": 2, "stdout": "args: a 'b c'", "stderr": "err"}
    // (a string of arguments is passed as one argument).
    let out = run_kw("cmd.script", json!([path, "a 'b c'"]), json!({"cwd": cwd})).await;
    assert_eq!(out.retcode, 2);
    assert_eq!(
        (&out.ret["retcode"], &out.ret["stdout"], &out.ret["stderr"]),
        (&json!(2), &json!("args: a 'b c' (1)"), &json!("err"))
    );
    assert!(pid_of(&out.ret) > 0);
    let keys: Vec<&String> = out
        .ret
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["pid", "retcode", "stdout", "stderr"]);
    let left = std::fs::read_dir(&work).map_or(1, |d| d.flatten().count());
    assert_eq!(left, 0, "the staged copy was not removed");

    let out = run_kw("cmd.script", json!([path]), json!({"args": ["-x", "b c"]})).await;
    assert_eq!(out.ret["stdout"], json!("args: -x b c (2)"));
    check(
        "cmd.script",
        json!([tmp.path().join("nosuch.sh").display().to_string()]),
        json!({}),
        json!({"pid": 0, "retcode": 1, "stdout": "", "stderr": "", "cache_error": true}),
        1,
    )
    .await;
}

#[tokio::test]
async fn runas_switches_user_when_root() {
    let is_root = nix::unistd::Uid::current().is_root();
    let out = run_kw(
        "cmd.run",
        json!(["id -un; id -g; echo $HOME $USER"]),
        json!({"runas": "nobody", "cwd": "/", "python_shell": true}),
    )
    .await;
    if !is_root {
        assert_eq!(
            out.ret,
            json!(format!(
                "ERROR: runas and group need the minion to run as root; it runs as {}",
                std::env::var("USER").unwrap_or_default()
            ))
        );
        println!("runas: the minion is not root here, so only the refusal is checked");
        return;
    }
    assert_eq!(out.ret, json!("nobody\n65534\n/nonexistent nobody"));
    // Without cwd the command starts in the user's home, as in Salt: nobody's does not exist.
    check(
        "cmd.run",
        json!(["pwd"]),
        json!({"runas": "nobody"}),
        json!("ERROR: Specified cwd '/nonexistent' either not absolute or does not exist"),
        1,
    )
    .await;
    check(
        "cmd.run",
        json!(["id -g"]),
        json!({"group": "nogroup"}),
        json!("65534"),
        0,
    )
    .await;
    let out = run_kw("cmd.run", json!(["id -un"]), json!({"runas": "root"})).await;
    assert_eq!(out.ret, json!("root"));
}
