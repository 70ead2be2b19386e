//! External modules end to end through [`crate::call`]: one in Python and one in shell,
//! written by the tests into a temporary `module_dirs` entry, plus the failure cases (invalid
//! JSON, a non-zero exit, a hang past the timeout) and `saltutil.sync_*` with a stand-in for
//! the master's file service.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::context::{CallContext, FetchFuture, ModuleSource, SyncedFile};
use crate::process::tests::{alive, eventually};
use crate::registry::function_names;
use crate::testutil::{ctx, run_in};

const PYMOD: &str = r#"#!/usr/bin/env python3
"""A Python external module, as a user would write one."""
import json, sys

DOCS = {
    "hello": "Say hello to NAME.\n\nCLI Example:\n\n    salt '*' pymod.hello world",
    "add": "Add the numbers given, plus extra=N.",
    "falsy": "Return a dict whose result is False.",
}
if sys.argv[1] == "--list":
    print(json.dumps(sorted(DOCS)))
elif sys.argv[1] == "--doc":
    print(DOCS[sys.argv[2]])
else:
    req = json.load(sys.stdin)
    fun = sys.argv[1]
    if fun == "hello":
        print(json.dumps({"return": "hello " + req["args"][0], "retcode": 0}))
    elif fun == "add":
        print(json.dumps(sum(req["args"]) + req["kwargs"].get("extra", 0)))
    elif fun == "falsy":
        print(json.dumps({"return": {"result": False, "comment": "nope"}}))
"#;

const SHMOD: &str = r#"#!/bin/sh
# A shell external module; it also shadows test.ping, which must stay built in.
case "$1" in
  --list) echo '["echo", "bad_json", "exit_nonzero", "hang", "ping", "retcode", "custom"]' ;;
  --doc) echo "Doc of $2." ;;
  echo) cat ;;
  bad_json) echo 'not json {' ;;
  exit_nonzero) echo 'something broke' >&2; exit 3 ;;
  hang) echo $$ > "$(dirname "$0")/hang.pid"; exec sleep 30 ;;
  ping) echo '"external ping"' ;;
  retcode) echo '{"return": "partial", "retcode": 5}' ;;
  custom) echo '{"return": "custom"}' ;;
esac
"#;

fn write(dir: &Path, name: &str, text: &str, mode: u32) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
}

/// A context whose `module_dirs` holds the two test modules (`pymod.py` executable,
/// `test.sh` not, so it runs with `/bin/sh`).
fn ext_ctx(dir: &Path, timeout: f64) -> CallContext {
    write(dir, "pymod.py", PYMOD, 0o755);
    write(dir, "test.sh", SHMOD, 0o644);
    write(
        dir,
        "README.md",
        "not a module: not executable, unknown extension",
        0o644,
    );
    let mut c = ctx();
    c.opts = Arc::new(json!({
        "id": "labminion",
        "module_dirs": [dir.display().to_string()],
        "cachedir": dir.join("cache").display().to_string(),
        "ext_module_timeout": timeout,
    }));
    c
}

async fn call(c: &CallContext, fun: &str, args: Value, kwargs: Value) -> (Value, i32) {
    let out = run_in(c, fun, args, kwargs).await;
    assert_eq!(out.success, out.retcode == 0, "{fun}");
    (out.ret, out.retcode)
}

#[test]
fn module_names() {
    let cases = [
        ("mymod", Some("mymod")),
        ("mymod.py", Some("mymod")),
        ("my_mod.sh", Some("my_mod")),
        ("a.b.py", None),
        ("9lives", None),
        ("my-mod", None),
        (".hidden", None),
    ];
    for (file, want) in cases {
        assert_eq!(super::module_name(file).as_deref(), want, "{file}");
    }
}

#[tokio::test]
async fn python_and_shell_modules_dispatch() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let c = ext_ctx(tmp.path(), 10.0);
    let found: Vec<String> = super::discover(&c.opts)
        .into_iter()
        .map(|m| m.name)
        .collect();
    assert_eq!(found, ["pymod", "test"]);

    let got = call(&c, "pymod.hello", json!(["world"]), json!({})).await;
    assert_eq!(got, (json!("hello world"), 0));
    // Keyword arguments arrive as Salt passes them: packed, or as `k=v` strings.
    let got = call(&c, "pymod.add", json!([1, 2, "extra=4"]), json!({})).await;
    assert_eq!(got, (json!(7), 0));
    let got = call(&c, "pymod.add", json!([1]), json!({"extra": 10})).await;
    assert_eq!(got, (json!(11), 0));
    // Salt's rule for dict returns applies: result False fails the job.
    let got = call(&c, "pymod.falsy", json!([]), json!({})).await;
    assert_eq!(got, (json!({"result": false, "comment": "nope"}), 1));

    let got = call(&c, "test.echo", json!(["a"]), json!({})).await;
    assert_eq!(
        got,
        (json!("a"), 0),
        "test.echo is built in and must not go to the external test module"
    );
    let got = call(&c, "test.ping", json!([]), json!({})).await;
    assert_eq!(got, (json!(true), 0), "built-ins win");
    let got = call(&c, "test.custom", json!([]), json!({})).await;
    assert_eq!(got, (json!("custom"), 0));
    let got = call(&c, "test.retcode", json!([]), json!({})).await;
    assert_eq!(got, (json!(true), 42), "built-in test.retcode");
    let got = call(&c, "test.nosuch", json!([]), json!({})).await;
    assert_eq!(got, (json!("'test.nosuch' is not available."), 1));
    let got = call(&c, "nomod.x", json!([]), json!({})).await;
    assert_eq!(got, (json!("'nomod.x' is not available."), 1));
}

#[tokio::test]
async fn the_request_is_json_on_stdin() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let dir = tmp.path();
    write(dir, "shmod", SHMOD, 0o755);
    let mut c = ext_ctx(dir, 10.0);
    c.opts = Arc::new(json!({"module_dirs": dir.display().to_string()}));
    let got = call(&c, "shmod.echo", json!(["a", {"b": 1}]), json!({"k": "v"})).await;
    assert_eq!(
        got,
        (json!({"args": ["a", {"b": 1}], "kwargs": {"k": "v"}}), 0)
    );
    let got = call(&c, "shmod.retcode", json!([]), json!({})).await;
    assert_eq!(got, (json!("partial"), 5));
    let got = call(&c, "shmod.ping", json!([]), json!({})).await;
    assert_eq!(got, (json!("external ping"), 0));
}

#[tokio::test]
async fn failures_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let c = ext_ctx(tmp.path(), 1.0);
    let (ret, code) = call(&c, "test.bad_json", json!([]), json!({})).await;
    assert_eq!(code, 1);
    let text = ret.as_str().unwrap_or_default();
    assert!(
        text.starts_with("ERROR: external module test printed invalid JSON for bad_json: ")
            && text.ends_with("\"not json {\""),
        "{text}"
    );

    let got = call(&c, "test.exit_nonzero", json!([]), json!({})).await;
    assert_eq!(
        got,
        (
            json!(
                "ERROR: external module test exited with code 3 running exit_nonzero: something broke"
            ),
            1
        )
    );

    let start = Instant::now();
    let got = call(&c, "test.hang", json!([]), json!({})).await;
    assert_eq!(
        got,
        (
            json!(
                "ERROR: external module test timed out after 1 seconds running hang (its process group was killed)"
            ),
            1
        )
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "the hang was not cut short"
    );
    let pid: u32 = std::fs::read_to_string(tmp.path().join("hang.pid"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    assert!(pid > 0, "the hanging module did not start");
    assert!(
        eventually(|| !alive(pid)).await,
        "the hanging module {pid} survived"
    );

    // A module whose --list is broken answers every call with the error.
    write(tmp.path(), "broken", "#!/bin/sh\necho nope\n", 0o755);
    let got = call(&c, "broken.x", json!([]), json!({})).await;
    assert_eq!(
        got,
        (
            json!(
                "ERROR: external module broken printed invalid JSON for --list (expected a list of function names): expected ident at line 1 column 2: \"nope\""
            ),
            1
        )
    );
}

#[tokio::test]
async fn sys_lists_and_documents_them() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let c = ext_ctx(tmp.path(), 10.0);
    let (ret, _) = call(&c, "sys.list_functions", json!(["pymod"]), json!({})).await;
    assert_eq!(ret, json!(["pymod.add", "pymod.falsy", "pymod.hello"]));
    let (ret, _) = call(&c, "sys.list_functions", json!([]), json!({})).await;
    let listed: Vec<String> = serde_json::from_value(ret).unwrap_or_default();
    let mut want: Vec<String> = function_names().iter().map(|s| (*s).to_owned()).collect();
    want.extend(
        [
            "pymod.add",
            "pymod.falsy",
            "pymod.hello",
            "test.bad_json",
            "test.custom",
            "test.exit_nonzero",
            "test.hang",
        ]
        .map(String::from),
    );
    want.sort();
    assert_eq!(
        listed, want,
        "built-in test.echo/ping/retcode are listed once"
    );

    let (ret, _) = call(&c, "sys.list_modules", json!(["p*"]), json!({})).await;
    assert_eq!(ret, json!(["pillar", "pkg", "pymod"]));
    let (ret, _) = call(
        &c,
        "sys.doc",
        json!(["pymod.hello", "test.custom"]),
        json!({}),
    )
    .await;
    assert_eq!(
        ret,
        json!({
            "pymod.hello": "Say hello to NAME.\n\nCLI Example:\n\n    salt '*' pymod.hello world",
            "test.custom": "Doc of custom.",
        })
    );
    let (ret, _) = call(&c, "sys.argspec", json!(["pymod.add"]), json!({})).await;
    assert_eq!(
        ret,
        json!({"pymod.add": {"args": null, "defaults": null, "varargs": true, "kwargs": true}})
    );
}

/// A stand-in for the master's file service (`file_roots/_modules`). The real one is an RPC
/// from the minion to the master, tested end to end in `tests/`; here only what
/// `saltutil.sync_*` does with the files it gets is under test.
struct FakeMaster(Vec<SyncedFile>);

impl ModuleSource for FakeMaster {
    fn fetch(&self, kind: &str) -> FetchFuture {
        let files = match kind {
            "modules" => Ok(self.0.clone()),
            // sync_all syncs `_states` too; this master has none.
            "states" => Ok(Vec::new()),
            _ => Err(format!("no _{kind} here")),
        };
        Box::pin(async move { files })
    }
}

#[tokio::test]
async fn sync_installs_and_dispatches() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let cache = tmp.path().join("cache");
    let opts = json!({"id": "labminion", "cachedir": cache.display().to_string()});
    let synced = SyncedFile {
        name: "synced.sh".into(),
        contents:
            b"#!/bin/sh\n[ \"$1\" = --list ] && echo '[\"hi\"]' || echo '\"hi from the master\"'\n"
                .to_vec(),
        executable: true,
    };
    let mut c = ctx().with_modules(Arc::new(FakeMaster(vec![synced])));
    c.opts = Arc::new(opts.clone());

    let (ret, code) = call(&c, "saltutil.sync_all", json!([]), json!({})).await;
    assert_eq!(code, 0);
    // Salt 3007.8's sync_all on a minion (file_client remote): every kind, in this order.
    let kinds: Vec<&String> = ret
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(
        kinds,
        [
            "clouds",
            "beacons",
            "modules",
            "states",
            "sdb",
            "grains",
            "renderers",
            "returners",
            "output",
            "utils",
            "log_handlers",
            "executors",
            "proxymodules",
            "engines",
            "thorium",
            "serializers",
            "matchers"
        ]
    );
    assert_eq!(ret["modules"], json!(["modules.synced"]));
    assert_eq!(ret["states"], json!([]));
    assert!(cache.join("extmods/modules/synced.sh").is_file());
    let got = call(&c, "synced.hi", json!([]), json!({})).await;
    assert_eq!(got, (json!("hi from the master"), 0));

    // Nothing changed: nothing listed. Then the master drops the module: it is removed.
    let got = call(&c, "saltutil.sync_modules", json!([]), json!({})).await;
    assert_eq!(got, (json!([]), 0));
    let mut c = c.with_modules(Arc::new(FakeMaster(Vec::new())));
    c.opts = Arc::new(opts);
    let got = call(&c, "saltutil.sync_modules", json!([]), json!({})).await;
    assert_eq!(got, (json!([]), 0));
    assert!(!cache.join("extmods/modules/synced.sh").exists());
    let got = call(&c, "synced.hi", json!([]), json!({})).await;
    assert_eq!(got, (json!("'synced.hi' is not available."), 1));
    let got = call(&c, "saltutil.refresh_modules", json!([]), json!({})).await;
    assert_eq!(got, (json!(true), 0));
}

#[tokio::test]
async fn sync_without_a_master_fails_clearly() {
    let got = call(&ctx(), "saltutil.sync_modules", json!([]), json!({})).await;
    assert_eq!(
        got,
        (
            json!("ERROR: the minion has no cachedir to sync modules into"),
            1
        )
    );
    let mut c = ctx();
    c.opts = Arc::new(json!({"cachedir": "/nonexistent-saltq-cache"}));
    let got = call(&c, "saltutil.sync_all", json!([]), json!({})).await;
    assert_eq!(
        got,
        (
            json!("ERROR: this minion has no master to sync modules from"),
            1
        )
    );
}
