//! `git.latest` and `git.cloned` replayed against Salt 3007.8 (`data/git/cases.json`,
//! recorded by `data/git/gen.py`) on a local bare repository reached by `file://` URLs, then
//! the `git.*` execution functions Salt was asked about afterwards (`data/git/exec.json`).
//! `data/git/repo.sh` builds the repository with fixed names and dates, so the SHA1s are
//! the recording's. Skips, saying so, where there is no `git`.

mod sysrec;

use std::path::Path;

use saltq_exec::{DirectError, ExecError};
use saltq_semantics::args::parse_input;
use serde_json::{Map, Value, json};

fn have_git() -> bool {
    std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `repo.sh <args>` (the copy the setup wrote into the scratch directory).
fn repo_sh(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("sh")
        .arg(dir.join("repo.sh"))
        .args(args)
        .status()
        .expect("running repo.sh");
    assert!(status.success(), "repo.sh {args:?} failed");
}

/// Salt's `--out json` shows the `new_tags` set as its repr (`"{'v2.0'}"`); over the wire
/// Salt sends a set as a list, which is what saltq answers. The repr is read back as a list.
fn sets_as_lists(mut ret: Value) -> Value {
    if let Some(Value::String(repr)) = ret.pointer("/changes/new_tags").cloned() {
        let mut tags: Vec<String> = repr
            .trim_matches(|c| c == '{' || c == '}')
            .split(", ")
            .map(|t| t.trim_matches('\'').to_owned())
            .collect();
        tags.sort();
        ret["changes"]["new_tags"] = json!(tags);
    }
    ret
}

/// Salt's `git.latest` with `bare=True` in test mode passes a message where a list of
/// comments goes, so the message comes out one character at a time, `. `-joined, with the
/// directory in it spelled that way too: the recording's directory (`sysrec.py`'s default
/// for `data/git`) stands in for ours there.
fn charwise_dir(ret: Value, root: &str) -> Value {
    let spell = |s: &str| s.chars().map(String::from).collect::<Vec<_>>().join(". ");
    sysrec::subst(&ret, &spell(root), &spell("/tmp/saltq-rec-git"))
}

/// The scratch directory as the recording had it before its first step.
fn prepare(dir: &Path) {
    let root = dir.display().to_string();
    repo_sh(dir, &["init", &root]);
    for sub in ["plain", "plain2", "emptydir"] {
        std::fs::create_dir_all(dir.join(sub)).expect("scratch dir");
    }
    for rel in ["plain/keep.txt", "plain2/keep.txt", "afile", "id_key"] {
        std::fs::write(dir.join(rel), "not a repository\n").expect("scratch file");
    }
}

#[tokio::test]
async fn git_states_and_functions_match_salt() {
    if !have_git() {
        eprintln!("skipped: no git on this machine (the git states need the system's git)");
        return;
    }
    let rec = sysrec::load("git");
    let dir = sysrec::scratch(&rec);
    let root = dir.path().display().to_string();
    prepare(dir.path());
    let ctx = sysrec::ctx_for(&rec, dir.path(), Map::new(), json!({}));
    let mut failures = Vec::new();
    for step in rec["steps"].as_array().into_iter().flatten() {
        let id = step["id"].as_str().unwrap_or_default();
        let got = charwise_dir(sysrec::run_step(&ctx, step, &root).await, &root);
        if step["fun"] == "cmd.run" {
            // Changes the remote or a checkout; its return holds a pid, so only success counts.
            assert_eq!(got["result"], json!(true), "{id}: {got}");
            continue;
        }
        let want = sets_as_lists(step["ret"].clone());
        if got != want {
            failures.push(format!(
                "{id} (test={}):\n  salt:  {want}\n  saltq: {got}",
                step["test"]
            ));
        }
    }
    assert!(sysrec::steps(&rec) >= 100);

    // Salt's git.status case saw an untracked and a modified file.
    std::fs::write(dir.path().join("clone/untracked.txt"), "new\n").expect("untracked file");
    let readme = dir.path().join("clone/README");
    let mut text = std::fs::read_to_string(&readme).expect("README");
    text.push_str("edit\n");
    std::fs::write(&readme, text).expect("README");

    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/git/exec.json");
    let cases: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("exec.json"))
        .expect("exec.json is JSON");
    for case in cases.as_array().into_iter().flatten() {
        let argv: Vec<String> = case["args"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| a.as_str().unwrap_or_default().replace("@DIR@", &root))
            .collect();
        let (args, kwargs) = parse_input(&argv[1..]);
        let got = saltq_exec::call_direct(&ctx, &argv[0], args, kwargs).await;
        let got = match got {
            Ok(v) => json!({"ret": v}),
            Err(DirectError::Failed(ExecError::Invocation(msg))) => json!({"invalid": msg}),
            Err(DirectError::Failed(e)) => json!({"error": e.to_string()}),
            Err(DirectError::Missing) => json!({"error": "missing"}),
        };
        let mut got = sysrec::subst(&got, &root, "@DIR@");
        if argv[0] == "git.list_branches" {
            // Git before 2.4x spells the remote's symbolic HEAD `origin/HEAD` in
            // `%(refname:short)`, later ones `origin` (Salt's recording used 2.47).
            got = sysrec::subst(&got, "origin/HEAD", "origin");
        }
        let mut want = case.clone();
        want.as_object_mut().map(|m| m.remove("args"));
        if argv[0] == "git.version" {
            // The version of whichever git is first on this machine's PATH.
            let out = std::process::Command::new("git")
                .arg("--version")
                .output()
                .expect("git --version");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            want = json!({"ret": text.split_whitespace().nth(2).unwrap_or_default()});
        }
        if got != want {
            failures.push(format!("{argv:?}:\n  salt:  {want}\n  saltq: {got}"));
        }
    }
    assert!(cases.as_array().map_or(0, Vec::len) >= 40);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `user` runs git as that user: a clone made as `nobody` belongs to `nobody`, and
/// `git.status` there answers as Salt's does. Needs root (the minion's case).
#[tokio::test]
async fn user_runs_git_as_that_user() {
    use std::os::unix::fs::MetadataExt;
    if !have_git() {
        eprintln!("skipped: no git on this machine");
        return;
    }
    if !nix::unistd::Uid::current().is_root() {
        eprintln!("skipped: running git as another user needs root");
        return;
    }
    let Some(nobody) = nix::unistd::User::from_name("nobody").ok().flatten() else {
        eprintln!("skipped: no user nobody");
        return;
    };
    let dir = sysrec::scratch(&sysrec::load("git"));
    let root = dir.path().display().to_string();
    prepare(dir.path());
    // Everything belongs to nobody, who must also pass through the private temp directory.
    let chown = std::process::Command::new("chown")
        .args(["-R", &format!("{}:{}", nobody.uid, nobody.gid), &root])
        .status()
        .expect("chown");
    assert!(chown.success());
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let ctx = saltq_exec::CallContext::local(json!({"id": "m"}), json!({"id": "m"}));
    let as_user = |user: &str| Map::from_iter([("user".to_owned(), json!(user))]);
    let target = format!("{root}/mine");
    let url = format!("file://{root}/remote.git");
    let cloned = saltq_exec::call_direct(
        &ctx,
        "git.clone",
        vec![json!(target), json!(url)],
        as_user("nobody"),
    )
    .await;
    assert_eq!(cloned, Ok(json!(true)));
    let owner = std::fs::metadata(format!("{target}/README"))
        .expect("README")
        .uid();
    assert_eq!(owner, nobody.uid.as_raw());
    std::fs::write(format!("{target}/new"), "x").expect("file");
    let status =
        saltq_exec::call_direct(&ctx, "git.status", vec![json!(target)], as_user("nobody")).await;
    assert_eq!(status, Ok(json!({"untracked": ["new"]})));
    // As in Salt, a command without a cwd starts in the user's home, and nobody's does not
    // exist.
    let init = saltq_exec::call_direct(
        &ctx,
        "git.init",
        vec![json!(format!("{root}/fresh"))],
        as_user("nobody"),
    )
    .await;
    let home = nobody.dir.display().to_string();
    if !nobody.dir.is_dir() {
        assert!(
            matches!(&init, Err(DirectError::Failed(ExecError::Execution(m)))
                if *m == format!("Specified cwd '{home}' either not absolute or does not exist")),
            "{init:?}"
        );
    }
    let missing = saltq_exec::call_direct(
        &ctx,
        "git.status",
        vec![json!(target)],
        as_user("no-such-user-here"),
    )
    .await;
    assert!(
        matches!(&missing, Err(DirectError::Failed(ExecError::Execution(m))) if m == "User 'no-such-user-here' is not available"),
        "{missing:?}"
    );
}
