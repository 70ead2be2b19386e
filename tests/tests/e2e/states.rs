//! The state system end to end: a sandboxed state tree served by a real master's fileserver,
//! applied by a real minion through the CLI, compared with what Salt 3007.8 answered for the
//! same tree (`data/states/recorded.json`, made by `data/states/gen.py`), and the text and
//! exit status of the CLI compared with Salt's `salt` on a real master and minion
//! (`data/states/cli_recorded.json`, made by `data/states/gen_cli.py`).

use std::path::{Path, PathBuf};

use saltq_tests::{Master, Minion, Scratch};
use serde_json::{Map, Value, json};

fn tree() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/data/states/tree")
}

fn recorded(case: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/data/states/recorded.json");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    all[case].clone()
}

/// A master serving the tree and the minion web1 (grain role: web), as Salt's recording ran.
fn web1() -> (Master, Minion) {
    let master = Master::start(&format!(
        "auto_accept: true\nfile_roots:\n  base:\n    - {}\n",
        tree().display()
    ));
    let minion = master.minion("web1", "grains:\n  role: web\n");
    master.wait_for("web1");
    (master, minion)
}

/// As the recording normalises Salt's answer: timings dropped, `out` as `{out}`, pids as
/// `{pid}`.
fn normalize(v: &Value, out: &str) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "start_time" && *k != "duration")
                .map(|(k, x)| {
                    let x = if k == "pid" {
                        json!("{pid}")
                    } else {
                        normalize(x, out)
                    };
                    (k.replace(out, "{out}"), x)
                })
                .collect::<Map<_, _>>(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|x| normalize(x, out)).collect()),
        Value::String(s) => Value::String(s.replace(out, "{out}")),
        other => other.clone(),
    }
}

/// `saltq web1 ARGS pillar={"out": OUT} --out json`: web1's return, normalised, and the exit
/// status.
fn apply(master: &Master, out: &Path, args: &[&str]) -> (Value, i32) {
    let pillar = format!("pillar={{\"out\": \"{}\"}}", out.display());
    let mut a = vec!["web1"];
    a.extend_from_slice(args);
    a.extend([pillar.as_str(), "--out", "json", "-t", "60"]);
    let o = master.saltq(&a);
    let ret = o.json()["web1"].clone();
    (normalize(&ret, &out.display().to_string()), o.code)
}

/// Every file under `out` with its contents and mode, as the recording lists them.
fn files(out: &Path) -> Value {
    fn walk(dir: &Path, base: &Path, found: &mut Map<String, Value>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, base, found);
            } else {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
                let rel = p.strip_prefix(base).unwrap().display().to_string();
                found.insert(
                    rel,
                    json!({"contents": std::fs::read_to_string(&p).unwrap(), "mode": format!("0o{mode:o}")}),
                );
            }
        }
    }
    let mut found = Map::new();
    walk(out, out, &mut found);
    Value::Object(found)
}

/// Compares two runs state by state, naming the first tag that differs.
fn assert_same_run(got: &Value, want: &Value, what: &str) {
    let (Some(g), Some(w)) = (got.as_object(), want.as_object()) else {
        assert_eq!(got, want, "{what}");
        return;
    };
    let gk: Vec<_> = g.keys().collect();
    let wk: Vec<_> = w.keys().collect();
    assert_eq!(gk, wk, "{what}: the states differ");
    for (tag, want) in w {
        assert_eq!(&g[tag], want, "{what}: {tag}");
    }
}

#[test]
fn a_state_tree_applies_as_salt_applies_it() {
    let (master, _minion) = web1();
    let scratch = Scratch::new("states-out");
    let out = scratch.0.join("out");
    std::fs::create_dir_all(&out).unwrap();

    let first = recorded("first");
    let (ret, code) = apply(&master, &out, &["state.apply"]);
    assert_same_run(&ret, &first["ret"], "first highstate");
    assert_eq!(code, 0);
    assert_eq!(
        files(&out),
        first["files"],
        "files after the first highstate"
    );

    let (ret, code) = apply(&master, &out, &["state.apply"]);
    assert_same_run(&ret, &recorded("second")["ret"], "second highstate");
    assert_eq!(code, 0);

    std::fs::write(out.join("fail-please"), "").unwrap();
    let (ret, code) = apply(&master, &out, &["state.apply", "common,web"]);
    assert_same_run(
        &ret,
        &recorded("onfail")["ret"],
        "a failing state and its onfail",
    );
    assert_ne!(code, 0, "a failed state fails the command");
    std::fs::remove_file(out.join("fail-please")).unwrap();

    let (ret, code) = apply(&master, &out, &["state.apply", "web.extra"]);
    assert_eq!(
        ret,
        recorded("extend_error")["ret"],
        "extend of an ID not included"
    );
    assert_ne!(code, 0);
}

#[test]
fn test_mode_changes_nothing() {
    let (master, _minion) = web1();
    let scratch = Scratch::new("states-test");
    let out = scratch.0.join("fresh");
    std::fs::create_dir_all(&out).unwrap();
    let want = recorded("test");
    let (ret, code) = apply(&master, &out, &["state.apply", "test=True"]);
    assert_same_run(&ret, &want["ret"], "highstate in test mode");
    assert_eq!(code, 0);
    assert_eq!(files(&out), want["files"], "test mode wrote nothing");
}

#[test]
fn show_top_and_show_sls_as_salt() {
    let (master, _minion) = web1();
    let scratch = Scratch::new("states-show");
    let (ret, _) = apply(&master, &scratch.0, &["state.show_top"]);
    assert_eq!(ret, recorded("show_top")["ret"]);
    let (ret, _) = apply(&master, &scratch.0, &["state.show_sls", "web"]);
    assert_eq!(ret, recorded("show_sls")["ret"]);
}

#[test]
fn a_highstate_reads_the_top_file_of_every_saltenv_the_master_serves() {
    let scratch = Scratch::new("states-envs");
    let dev = scratch.0.join("dev");
    std::fs::create_dir_all(&dev).unwrap();
    std::fs::write(dev.join("top.sls"), "dev:\n  'web1':\n    - devonly\n").unwrap();
    std::fs::write(
        dev.join("devonly.sls"),
        "dev-check:\n  test.succeed_without_changes: []\n",
    )
    .unwrap();
    let master = Master::start(&format!(
        "auto_accept: true\nfile_roots:\n  base:\n    - {}\n  dev:\n    - {}\n",
        tree().display(),
        dev.display()
    ));
    let _minion = master.minion("web1", "grains:\n  role: web\n");
    master.wait_for("web1");
    let (ret, code) = apply(&master, &scratch.0, &["state.show_top"]);
    assert_eq!(code, 0);
    assert_eq!(ret, json!({"base": ["common", "web"], "dev": ["devonly"]}));
    let (ret, code) = apply(&master, &scratch.0, &["state.apply", "test=True"]);
    assert_eq!(code, 0, "{ret}");
    let dev_state = &ret["test_|-dev-check_|-dev-check_|-succeed_without_changes"];
    assert_eq!(dev_state["result"], json!(true), "{ret}");
    assert_eq!(dev_state["__sls__"], json!("devonly"));
}

#[test]
fn a_second_state_run_is_refused_unless_it_queues() {
    let scratch = Scratch::new("states-queue");
    let tree = scratch.0.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(
        tree.join("slow.sls"),
        "slow:\n  cmd.run:\n    - name: sleep 4\n",
    )
    .unwrap();
    std::fs::write(
        tree.join("quick.sls"),
        "quick:\n  test.succeed_without_changes: []\n",
    )
    .unwrap();
    let master = Master::start(&format!(
        "auto_accept: true\nfile_roots:\n  base:\n    - {}\n",
        tree.display()
    ));
    let _minion = master.minion("web1", "");
    master.wait_for("web1");
    let o = master.saltq(&["web1", "state.sls", "slow", "--async"]);
    assert_eq!(o.code, 0, "{o:?}");
    let jid = o.stdout.trim().rsplit(' ').next().unwrap().to_owned();
    // The slow run shows in state.running, in Salt's words.
    let running = saltq_tests::eventually(
        "the slow run to start",
        std::time::Duration::from_secs(10),
        || {
            let o = master.saltq(&["web1", "state.running", "--out", "json"]);
            let v = o.json()["web1"].clone();
            v.as_array().filter(|a| !a.is_empty()).cloned()
        },
    );
    let message = running[0].as_str().unwrap();
    assert!(
        message.starts_with("The function \"state.sls\" is running as PID ")
            && message.ends_with(&format!("with jid {jid}")),
        "{message}"
    );
    let o = master.saltq(&["web1", "state.sls", "quick", "--out", "json"]);
    assert_eq!(
        o.json()["web1"],
        json!([message]),
        "refused with state.running's message"
    );
    assert_ne!(o.code, 0);
    let o = master.saltq(&[
        "web1",
        "state.sls",
        "quick",
        "queue=True",
        "--out",
        "json",
        "-t",
        "30",
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    let ret = &o.json()["web1"]["test_|-quick_|-quick_|-succeed_without_changes"];
    assert_eq!(
        ret["result"],
        json!(true),
        "queued behind the slow run, then ran: {o:?}"
    );
}

/// What Salt's `salt` CLI printed for a case of `data/states/gen_cli.py`: the text and the
/// exit status.
fn recorded_cli(case: &str) -> (String, i32) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/data/states/cli_recorded.json");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let c = &all[case];
    assert!(c.is_object(), "no recording for {case}");
    (
        c["text"].as_str().unwrap().to_owned(),
        i32::try_from(c["exit"].as_i64().unwrap()).unwrap(),
    )
}

/// The highstate text with what differs from run to run replaced: times of day
/// (`Started: 10:20:35.627776`), durations (`Duration: 4.961 ms`, `Total run time: 1.2 s`)
/// and the value under a `pid:` key.
fn normalize_highstate_text(text: &str) -> String {
    /// `rest` with a leading number (digits, `:` and `.`) and its unit (` ms`, ` s`) cut, and
    /// whether a number was there (a run over a second prints seconds).
    fn cut_number(rest: &str) -> (&str, bool) {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ':'))
            .unwrap_or(rest.len());
        let after = &rest[end..];
        let after = after
            .strip_prefix(" ms")
            .or_else(|| after.strip_prefix(" s"))
            .unwrap_or(after);
        (after, end > 0)
    }
    let mut lines = Vec::new();
    let mut after_pid = false;
    for line in text.lines() {
        if after_pid {
            after_pid = false;
            let t = line.trim_start();
            if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
                lines.push(format!("{}<pid>", &line[..line.len() - t.len()]));
                continue;
            }
        }
        after_pid = line.trim() == "pid:";
        let mut out = String::new();
        let mut rest = line;
        'scan: loop {
            for lead in ["Started: ", "Duration: ", "Total run time: "] {
                if let Some(at) = rest.find(lead) {
                    let (num_rest, had) = cut_number(rest[at + lead.len()..].trim_start());
                    if had {
                        out.push_str(&rest[..at]);
                        out.push_str(lead);
                        out.push_str("<t>");
                        rest = num_rest;
                        continue 'scan;
                    }
                }
            }
            out.push_str(rest);
            break;
        }
        lines.push(out);
    }
    lines.join("\n")
}

#[test]
fn the_highstate_text_and_exit_status_are_salts() {
    let (master, _minion) = web1();
    let scratch = Scratch::new("states-cli");
    let first = scratch.0.join("out-first");
    let fresh = scratch.0.join("out-test");
    std::fs::create_dir_all(&first).unwrap();
    std::fs::create_dir_all(&fresh).unwrap();
    // As gen_cli.py runs them: the same out folder for all but `test`, `fail-please` there
    // for `onfail` only.
    for (case, args, out, fail) in [
        ("first", &["state.apply"][..], &first, false),
        ("second", &["state.apply"][..], &first, false),
        ("onfail", &["state.apply", "common,web"][..], &first, true),
        ("test", &["state.apply", "test=True"][..], &fresh, false),
        (
            "extend_error",
            &["state.apply", "web.extra"][..],
            &first,
            false,
        ),
        (
            "terse",
            &["state.apply", "--state-output=terse"][..],
            &first,
            false,
        ),
    ] {
        let flag = out.join("fail-please");
        if fail {
            std::fs::write(&flag, "").unwrap();
        }
        let pillar = format!("pillar={{\"out\": \"{}\"}}", out.display());
        let mut a = vec!["web1"];
        a.extend_from_slice(args);
        a.extend([pillar.as_str(), "-t", "60"]);
        let o = master.saltq(&a);
        if fail {
            std::fs::remove_file(&flag).unwrap();
        }
        let (want_text, want_code) = recorded_cli(case);
        let got = o.stdout.replace(&out.display().to_string(), "{out}");
        assert_eq!(
            normalize_highstate_text(&got),
            normalize_highstate_text(&want_text),
            "{case}: saltq printed\n{}",
            o.stdout
        );
        assert_eq!(o.code, want_code, "{case}: exit status, {o:?}");
    }
}

#[test]
fn the_text_normalisation_keeps_what_it_must() {
    let t = "     Started: 10:20:35.627776\n    Duration: 4.961 ms\n              pid:\n                  18124\n  Name: x - Result: Clean - Started: 10:20:43.658280 - Duration: 5.813 ms\nTotal run time:  980.427 ms\nTotal run time:   1.2 s\n     Comment: Duration: none";
    assert_eq!(
        normalize_highstate_text(t),
        "     Started: <t>\n    Duration: <t>\n              pid:\n                  <pid>\n  Name: x - Result: Clean - Started: <t> - Duration: <t>\nTotal run time: <t>\nTotal run time: <t>\n     Comment: Duration: none"
    );
}

/// The states of a run by tag, with what Salt's recording kept comparable: result, comment,
/// `__run_num__` (timings and the command's pid left out), `tmp` as `{TMP}`.
fn run_outline(ret: &Value, tmp: &str) -> Value {
    let Some(m) = ret.as_object() else {
        return ret.clone();
    };
    Value::Object(
        m.iter()
            .map(|(tag, s)| {
                (
                    tag.replace(tmp, "{TMP}"),
                    json!({
                        "result": s["result"],
                        "comment": s["comment"].as_str().map(|c| c.replace(tmp, "{TMP}")),
                        "__run_num__": s["__run_num__"],
                    }),
                )
            })
            .collect(),
    )
}

#[test]
fn soft_kill_of_one_state_stops_a_running_job_as_salt_does() {
    // The tree and Salt's answer are those of the state_funcs case `soft_kill_running_state`
    // (states/tests/data/state_funcs): salt-call ran `state.sls k`, and while its first state
    // ran, `state.soft_kill <its jid> third`.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../states/tests/data/state_funcs");
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("cases.json")).unwrap()).unwrap();
    let case = cases
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "soft_kill_running_state")
        .unwrap();
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("recorded.json")).unwrap())
            .unwrap();
    let want = &recorded["soft_kill_running_state"];
    let scratch = Scratch::new("states-softkill");
    let tree = scratch.0.join("tree");
    let tmp = scratch.0.join("tmp");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let tmp_s = tmp.display().to_string();
    let sls = case["files"]["base/k.sls"].as_str().unwrap();
    std::fs::write(tree.join("k.sls"), sls.replace("{TMP}", &tmp_s)).unwrap();
    let master = Master::start(&format!(
        "auto_accept: true\nfile_roots:\n  base:\n    - {}\n",
        tree.display()
    ));
    let _minion = master.minion("web1", "");
    master.wait_for("web1");

    let o = master.saltq(&["web1", "state.sls", "k", "--async"]);
    assert_eq!(o.code, 0, "{o:?}");
    let jid = o.stdout.trim().rsplit(' ').next().unwrap().to_owned();
    saltq_tests::eventually(
        "the first state to start",
        std::time::Duration::from_secs(20),
        || tmp.join("started").exists().then_some(()),
    );
    let o = master.saltq(&["web1", "state.soft_kill", &jid, "third", "--out", "json"]);
    assert_eq!(o.json(), json!({"web1": want[0]["return"]}), "{o:?}");
    let got = saltq_tests::eventually(
        "the killed job's return",
        std::time::Duration::from_secs(30),
        || {
            let o = master.saltq(&["jobs", "lookup", &jid, "--out", "json"]);
            let ret = o.json()["web1"].clone();
            ret.is_object().then_some(ret)
        },
    );
    assert_eq!(
        run_outline(&got, &tmp_s),
        run_outline(&want[1]["return"], "{TMP}"),
        "first and second ran, third was not started: {got}"
    );
}
