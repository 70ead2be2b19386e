//! Trees written by others: every SLS of Salt's own integration-test trees that uses only the
//! `test`, `cmd` and `file` states (`../shared/third-party/salt-tests/integration-files-base`,
//! see the NOTICE beside it; tests/data/corpus/README.md says which SLS) run through saltq's
//! state system in-process, as a minion runs it, and compared with what Salt 3007.8 answered
//! (tests/data/corpus/recorded.json, made by gen.py beside it).
//!
//! For each SLS: `state.sls NAME`, `state.sls NAME test=True`, `state.show_sls NAME` and
//! `state.show_low_sls NAME`, each in a fresh cachedir and output folder, with the recorded
//! pillar override. A state run is compared per state tag on `result`, `comment`, `changes`,
//! `__run_num__`, `__sls__`, `__id__` and `name`; a list of errors and the two `show_*` answers
//! are compared whole; the retcode always. Every mismatch is collected and the test fails once,
//! listing them all. Calls where Salt itself crashed (recorded as `salt_crashed`) are listed and
//! not run.

mod common;

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use saltq_exec::{CallContext, FileClient, FileFuture, FileHash, PubInfo};
use serde_json::{Map, Value, json};

/// The fields of one state's result the comparison looks at.
const COMPARED: [&str; 7] = [
    "result",
    "comment",
    "changes",
    "__run_num__",
    "__sls__",
    "__id__",
    "name",
];

/// One call made for each SLS.
struct Kind {
    /// Its name in recorded.json (gen.py's `CALLS`).
    name: &'static str,
    /// The function called with the SLS name.
    fun: &'static str,
    /// Whether the call passes `test=True`.
    test: bool,
}

/// The calls made for each SLS, as gen.py makes them.
const CALLS: [Kind; 4] = [
    Kind {
        name: "sls",
        fun: "state.sls",
        test: false,
    },
    Kind {
        name: "sls_test",
        fun: "state.sls",
        test: true,
    },
    Kind {
        name: "show_sls",
        fun: "state.show_sls",
        test: false,
    },
    Kind {
        name: "show_low_sls",
        fun: "state.show_low_sls",
        test: false,
    },
];

/// Where Salt's recorded answers for the corpus live (the project's own recording).
fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpus")
}

/// Salt's integration-test tree itself: a third-party input, in ../shared.
fn corpus_tree() -> PathBuf {
    common::third_party("salt-tests/integration-files-base")
}

/// The fileserver over one directory, serving it as every saltenv: what `salt-call --local`
/// with `file_roots: {base: [tree]}` sees. Files are cached under `<cachedir>/files/<saltenv>`,
/// as Salt's file client caches them.
struct TreeFiles {
    /// The tree's root.
    root: PathBuf,
    /// The minion's cachedir.
    cachedir: PathBuf,
}

impl TreeFiles {
    /// The file at `rel` in the tree, `None` for a path that would leave it.
    fn local(&self, rel: &str) -> Option<PathBuf> {
        let rel = Path::new(rel.trim_start_matches('/'));
        rel.components()
            .all(|c| matches!(c, Component::Normal(_)))
            .then(|| self.root.join(rel))
    }

    /// Every file (or directory, with `dirs`) under the tree, relative and `/`-separated,
    /// starting with `prefix`, sorted.
    fn walk(&self, prefix: &str, dirs: bool) -> Vec<String> {
        let mut found = Vec::new();
        let mut todo = vec![self.root.clone()];
        while let Some(dir) = todo.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let path = e.path();
                let rel = path
                    .strip_prefix(&self.root)
                    .map(|r| r.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_default();
                let is_dir = path.is_dir();
                if is_dir {
                    todo.push(path);
                }
                if is_dir == dirs && rel.starts_with(prefix) {
                    found.push(rel);
                }
            }
        }
        found.sort();
        found
    }
}

impl FileClient for TreeFiles {
    fn list_files(&self, _saltenv: &str, prefix: &str) -> FileFuture<Vec<String>> {
        let files = self.walk(prefix, false);
        Box::pin(async move { Ok(files) })
    }

    fn list_dirs(&self, _saltenv: &str, prefix: &str) -> FileFuture<Vec<String>> {
        let dirs = self.walk(prefix, true);
        Box::pin(async move { Ok(dirs) })
    }

    fn hash(&self, _saltenv: &str, path: &str) -> FileFuture<Option<FileHash>> {
        let local = self.local(path).filter(|p| p.is_file());
        Box::pin(async move {
            let Some(local) = local else {
                return Ok(None);
            };
            // The digest as the minion's own `file.get_hash` computes it.
            let ctx = CallContext::local(json!({}), json!({}));
            let out = saltq_exec::call(
                &ctx,
                "file.get_hash",
                vec![json!(local.to_string_lossy()), json!("sha256")],
                Map::new(),
                &PubInfo::default(),
            )
            .await;
            match out.ret {
                Value::String(hsum) if out.retcode == 0 => Ok(Some(FileHash {
                    hsum,
                    hash_type: "sha256".into(),
                })),
                other => Err(format!("cannot hash {}: {other}", local.display())),
            }
        })
    }

    fn cache_file(&self, saltenv: &str, path: &str) -> FileFuture<Option<PathBuf>> {
        let local = self.local(path).filter(|p| p.is_file());
        let dest = self
            .cachedir
            .join("files")
            .join(saltenv)
            .join(path.trim_start_matches('/'));
        Box::pin(async move {
            let Some(local) = local else {
                return Ok(None);
            };
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            std::fs::copy(&local, &dest).map_err(|e| {
                format!("cannot copy {} to {}: {e}", local.display(), dest.display())
            })?;
            Ok(Some(dest))
        })
    }
}

/// The same normalisation as gen.py: `start_time` and `duration` dropped, pids as `{pid}`, the
/// run's own paths as placeholders (`subs` in order, longest first).
fn normalize(v: &Value, subs: &[(String, &str)]) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "start_time" && *k != "duration")
                .map(|(k, x)| {
                    let x = if k == "pid" {
                        json!("{pid}")
                    } else {
                        normalize(x, subs)
                    };
                    (replace(k, subs), x)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|x| normalize(x, subs)).collect()),
        Value::String(s) => Value::String(replace(s, subs)),
        other => other.clone(),
    }
}

fn replace(s: &str, subs: &[(String, &str)]) -> String {
    subs.iter().fold(s.to_owned(), |acc, (real, placeholder)| {
        acc.replace(real.as_str(), placeholder)
    })
}

/// The recorded pillar with `{out}` made this run's output folder.
fn pillar_for(recorded: &Value, out: &str) -> Value {
    match recorded {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), pillar_for(v, out)))
                .collect(),
        ),
        Value::String(s) => Value::String(s.replace("{out}", out)),
        other => other.clone(),
    }
}

/// One call of one SLS as a minion makes it; the normalised return and the retcode.
async fn run(
    tree: &Path,
    minion_id: &str,
    pillar: &Value,
    fun: &str,
    name: &str,
    test: bool,
) -> (Value, i32) {
    let tmp = tempfile::Builder::new()
        .prefix("saltq-corpus-")
        .tempdir()
        .unwrap_or_else(|e| panic!("cannot make a temporary folder: {e}"));
    let root = tmp
        .path()
        .canonicalize()
        .unwrap_or_else(|e| panic!("cannot resolve {}: {e}", tmp.path().display()));
    let out = root.join("out");
    let cachedir = root.join("cache");
    for d in [&out, &cachedir] {
        std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("cannot create {}: {e}", d.display()));
    }
    let (root_s, out_s, tree_s) = (
        root.to_string_lossy().into_owned(),
        out.to_string_lossy().into_owned(),
        tree.to_string_lossy().into_owned(),
    );
    let opts = json!({
        "id": minion_id,
        "cachedir": cachedir.to_string_lossy(),
        "file_client": "local",
        "file_roots": {"base": [tree_s]},
    });
    let grains = saltq_exec::compute_grains(minion_id, None);
    let ctx = CallContext::local(grains, opts)
        .with_states(Arc::new(saltq_states::Engine::new()))
        .with_files(Arc::new(TreeFiles {
            root: tree.to_owned(),
            cachedir,
        }));
    let mut kwargs = Map::new();
    kwargs.insert("pillar".into(), pillar_for(pillar, &out_s));
    if test {
        kwargs.insert("test".into(), Value::Bool(true));
    }
    let outcome = saltq_exec::call(&ctx, fun, vec![json!(name)], kwargs, &PubInfo::default()).await;
    let subs = [(out_s, "{out}"), (root_s, "{root}"), (tree_s, "{tree}")];
    (normalize(&outcome.ret, &subs), outcome.retcode)
}

/// The differences between Salt's answer and ours for one call, each naming the SLS, the call
/// and the state tag.
fn compare(sls: &str, kind: &str, want: &Value, got: &Value) -> Vec<String> {
    let whole = |w: &Value, g: &Value| {
        vec![format!(
            "{sls} [{kind}]: Salt answered\n{}\nsaltq answered\n{}",
            pretty(w),
            pretty(g)
        )]
    };
    let (Some(want_states), true) = (want.as_object(), kind == "sls" || kind == "sls_test") else {
        return if want == got {
            vec![]
        } else {
            whole(want, got)
        };
    };
    let Some(got_states) = got.as_object() else {
        return whole(want, got);
    };
    let mut diffs = Vec::new();
    let tags: BTreeSet<&String> = want_states.keys().chain(got_states.keys()).collect();
    for tag in tags {
        match (want_states.get(tag), got_states.get(tag)) {
            (Some(_), None) => diffs.push(format!("{sls} [{kind}] {tag}: missing from saltq")),
            (None, Some(g)) => diffs.push(format!(
                "{sls} [{kind}] {tag}: not in Salt's answer, saltq has {}",
                pretty(g)
            )),
            (Some(w), Some(g)) => {
                for field in COMPARED {
                    let (wf, gf) = (w.get(field), g.get(field));
                    if wf != gf {
                        diffs.push(format!(
                            "{sls} [{kind}] {tag}: {field}: Salt {} / saltq {}",
                            show(wf),
                            show(gf)
                        ));
                    }
                }
            }
            (None, None) => {}
        }
    }
    diffs
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "(absent)".to_owned(), Value::to_string)
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// Salt's and saltq's `cmd.run` both take `$SHELL`: the recording names the shell Salt had.
/// Run under another `$SHELL` (CI has none), the test runs itself again with the recorded
/// one, so that both sides ran the same shell.
#[test]
fn salt_integration_trees_give_salts_answers() {
    let path = corpus_dir().join("recorded.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let recorded: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    let Some(shell) = recorded["shell"].as_str() else {
        panic!("{}: no `shell` recorded", path.display());
    };
    if std::env::var("SHELL").ok().as_deref() != Some(shell) {
        let me = std::env::current_exe().unwrap_or_else(|e| panic!("no test binary: {e}"));
        let status = std::process::Command::new(me)
            .args([
                "salt_integration_trees_give_salts_answers",
                "--exact",
                "--nocapture",
            ])
            .env("SHELL", shell)
            .status()
            .unwrap_or_else(|e| panic!("cannot run the test again under SHELL={shell}: {e}"));
        assert!(status.success(), "under SHELL={shell}: {status}");
        return;
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("cannot start a runtime: {e}"))
        .block_on(compare_recorded(&path, &recorded));
}

async fn compare_recorded(path: &Path, recorded: &Value) {
    let tree = corpus_tree()
        .canonicalize()
        .unwrap_or_else(|e| panic!("cannot resolve the corpus tree: {e}"));
    let minion_id = recorded["minion_id"].as_str().unwrap_or("corpus");
    let pillar = &recorded["pillar"];
    let Some(all) = recorded["sls"].as_object() else {
        panic!("{}: no `sls` map", path.display());
    };
    assert!(!all.is_empty(), "{}: no SLS recorded", path.display());

    let mut mismatches = Vec::new();
    let mut calls = 0;
    let mut skipped = Vec::new();
    for (sls, cases) in all {
        for Kind {
            name: kind,
            fun,
            test,
        } in CALLS
        {
            let Some(case) = cases.get(kind) else {
                mismatches.push(format!("{sls} [{kind}]: not recorded"));
                continue;
            };
            if let Some(crash) = case.get("salt_crashed") {
                // Salt raised instead of answering: nothing to compare with, and the same
                // input may recurse without end in saltq too, so it is not run.
                skipped.push(format!(
                    "{sls} [{kind}]: Salt crashed: {}",
                    show(Some(crash))
                ));
                continue;
            }
            let (got, retcode) = run(&tree, minion_id, pillar, fun, sls, test).await;
            calls += 1;
            mismatches.extend(compare(sls, kind, &case["ret"], &got));
            let want_rc = case["retcode"].as_i64();
            if want_rc != Some(i64::from(retcode)) {
                mismatches.push(format!(
                    "{sls} [{kind}]: retcode: Salt {} / saltq {retcode}",
                    show(case.get("retcode"))
                ));
            }
        }
    }
    if !skipped.is_empty() {
        eprintln!("not compared:\n{}", skipped.join("\n"));
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches over {calls} calls of {} SLS:\n\n{}",
        mismatches.len(),
        all.len(),
        mismatches.join("\n\n")
    );
}

/// The comparison itself must be able to fail: a changed comment, a missing tag and a
/// different error list are each reported, naming the SLS and the tag.
#[test]
fn the_comparison_reports_each_difference() {
    let salt = json!({
        "test_|-a_|-a_|-nop": {"result": true, "comment": "Success!", "changes": {},
                              "__run_num__": 0, "__sls__": "x", "__id__": "a", "name": "a"},
        "test_|-b_|-b_|-nop": {"result": true, "comment": "Success!", "changes": {},
                              "__run_num__": 1, "__sls__": "x", "__id__": "b", "name": "b"},
    });
    assert!(compare("x", "sls", &salt, &salt).is_empty());
    let mut ours = salt.clone();
    ours["test_|-a_|-a_|-nop"]["comment"] = json!("Failure!");
    ours.as_object_mut().map(|m| m.remove("test_|-b_|-b_|-nop"));
    let diffs = compare("x", "sls", &salt, &ours);
    assert_eq!(diffs.len(), 2, "{diffs:#?}");
    assert!(diffs[0].starts_with("x [sls] test_|-a_|-a_|-nop: comment:"));
    assert!(diffs[1].contains("test_|-b_|-b_|-nop: missing from saltq"));
    assert_eq!(
        compare("x", "sls", &json!(["error one"]), &json!(["error two"])).len(),
        1
    );
    assert_eq!(
        compare("x", "show_low_sls", &json!([{"a": 1}]), &json!([{"a": 2}])).len(),
        1
    );
}

/// gen.py and the test normalise alike: times dropped, pids and paths as placeholders.
#[test]
fn normalisation_matches_gen_py() {
    let v = json!({
        "/r/out/f": {"start_time": "1", "duration": 2.0, "changes": {"pid": 7},
                     "comment": "in /r/out and /r/cache and /t/x"},
    });
    let subs = [
        ("/r/out".to_owned(), "{out}"),
        ("/r".to_owned(), "{root}"),
        ("/t".to_owned(), "{tree}"),
    ];
    assert_eq!(
        normalize(&v, &subs),
        json!({"{out}/f": {"changes": {"pid": "{pid}"},
                           "comment": "in {out} and {root}/cache and {tree}/x"}})
    );
}

/// The tree client serves the corpus: listing, hashing (sha256, as Salt's default
/// `hash_type`), caching, and no path out of the tree.
#[tokio::test]
async fn the_tree_client_serves_the_corpus() {
    let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let files = TreeFiles {
        root: corpus_tree(),
        cachedir: cache.path().to_owned(),
    };
    let listed = files.list_files("base", "requisites/").await;
    let listed = listed.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        listed.contains(&"requisites/require.sls".to_owned()),
        "{listed:?}"
    );
    assert!(listed.iter().all(|p| p.starts_with("requisites/")));
    let dirs = files
        .list_dirs("base", "")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(dirs.contains(&"requisites".to_owned()), "{dirs:?}");
    let hash = files
        .hash("base", "gndn.sls")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let hash = hash.unwrap_or_else(|| panic!("gndn.sls has no hash"));
    assert_eq!(hash.hash_type, "sha256");
    assert_eq!(hash.hsum.len(), 64);
    assert_eq!(files.hash("base", "no-such.sls").await, Ok(None));
    assert_eq!(files.hash("base", "../corpus.rs").await, Ok(None));
    let cached = files.cache_file("base", "testfile").await;
    let cached = cached
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("testfile not cached"));
    assert_eq!(cached, cache.path().join("files/base/testfile"));
    assert!(std::fs::read_to_string(cached).is_ok_and(|t| t.starts_with("Scene 24")));
}

/// A checkout without ../shared beside it fails with the path it looked for.
#[test]
fn a_missing_third_party_tree_is_named() {
    let err = common::third_party_under(
        Path::new("/nonexistent-checkout/main"),
        "salt-tests/integration-files-base",
    )
    .expect_err("no such folder");
    assert!(
        err.contains("/nonexistent-checkout/shared/third-party/salt-tests/integration-files-base"),
        "{err}"
    );
}
