//! `cp.*` replayed against Salt 3007.8's recorded returns (`data/cases.json`, made by
//! `data/gen.py` with `salt-call --local`, `file_client: local`) over a local file client on
//! the same tree, in the same order, sharing one cachedir as the recording did.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use saltq_semantics::args::parse_input;
use serde_json::{Map, Value, json};

use crate::{CallContext, FileClient, FileFuture, FileHash, PubInfo, StateSystem};

/// The minion's `--local` file client, as `minion/src/files.rs` builds it over the same
/// fileserver crate (the exec crate cannot depend on the minion's).
struct Local(saltq_fileserver::LocalFiles);

impl Local {
    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&saltq_fileserver::LocalFiles) -> Result<T, saltq_fileserver::FsError>
        + Send
        + 'static,
    ) -> FileFuture<T> {
        let lf = self.0.clone();
        Box::pin(async move { f(&lf).map_err(|e| e.to_string()) })
    }
}

impl FileClient for Local {
    fn list_files(&self, saltenv: &str, prefix: &str) -> FileFuture<Vec<String>> {
        let (s, p) = (saltenv.to_owned(), prefix.to_owned());
        self.run(move |lf| Ok(lf.roots.list(&s, &p).files))
    }
    fn list_dirs(&self, saltenv: &str, prefix: &str) -> FileFuture<Vec<String>> {
        let (s, p) = (saltenv.to_owned(), prefix.to_owned());
        self.run(move |lf| Ok(lf.roots.list(&s, &p).dirs))
    }
    fn list_empty_dirs(&self, saltenv: &str, prefix: &str) -> FileFuture<Vec<String>> {
        let (s, p) = (saltenv.to_owned(), prefix.to_owned());
        self.run(move |lf| Ok(lf.roots.list(&s, &p).empty_dirs))
    }
    fn hash(&self, saltenv: &str, path: &str) -> FileFuture<Option<FileHash>> {
        let (s, p) = (saltenv.to_owned(), path.to_owned());
        self.run(move |lf| {
            Ok(lf.roots.hash(&s, &p, &lf.hash_type)?.map(|hsum| FileHash {
                hsum,
                hash_type: lf.hash_type.clone(),
            }))
        })
    }
    fn cache_file(&self, saltenv: &str, path: &str) -> FileFuture<Option<PathBuf>> {
        let (s, p) = (saltenv.to_owned(), path.to_owned());
        self.run(move |lf| lf.cache_file(&s, &p))
    }
}

fn build_tree(root: &Path, tree: &Map<String, Value>) {
    for (name, files) in tree {
        for (rel, contents) in files.as_object().expect("files") {
            let p = root.join(name).join(rel);
            match contents.as_str() {
                None => std::fs::create_dir_all(&p).unwrap(),
                Some(text) => {
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::write(&p, text).unwrap();
                }
            }
        }
    }
    std::fs::create_dir_all(root.join("out")).unwrap();
}

fn context(root: &Path) -> CallContext {
    let roots = saltq_fileserver::Roots::new(
        [
            ("base".to_owned(), vec![root.join("srv"), root.join("srv2")]),
            ("dev".to_owned(), vec![root.join("dev")]),
        ]
        .into(),
    );
    let client = Local(saltq_fileserver::LocalFiles {
        roots,
        cachedir: root.join("cache"),
        hash_type: "sha256".into(),
    });
    CallContext::local(
        json!({"id": "rec"}),
        json!({"id": "rec", "cachedir": root.join("cache")}),
    )
    .with_files(Arc::new(client))
}

/// Only what Salt's and our caches share: Salt's cachedir also holds its own bookkeeping
/// (`file_lists`, `roots/hash`, `proc`), which `cp.list_minion` lists when `localfiles`
/// does not exist.
fn cached_files_only(v: &Value, root: &str) -> Value {
    let prefix = format!("{root}/cache/files/");
    json!(
        v.as_array()
            .expect("a list")
            .iter()
            .filter(|p| p.as_str().is_some_and(|p| p.starts_with(&prefix)))
            .collect::<Vec<_>>()
    )
}

#[tokio::test]
async fn cp_functions_return_what_salt_returned() {
    let data: Value =
        serde_json::from_str(include_str!("data/cases.json")).expect("cases.json is JSON");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    build_tree(dir.path(), data["tree"].as_object().unwrap());
    let ctx = context(dir.path());
    let cases = data["cases"].as_array().unwrap();
    assert!(cases.len() > 40, "the recording holds every case");
    for case in cases {
        let argv: Vec<String> = case["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().replace("{ROOT}", &root))
            .collect();
        let (args, kwargs) = parse_input(&argv[1..]);
        let out = crate::call(&ctx, &argv[0], args, kwargs, &PubInfo::default()).await;
        let expected: Value = serde_json::from_str(
            &serde_json::to_string(&case["ret"])
                .unwrap()
                .replace("{ROOT}", &root),
        )
        .unwrap();
        let first = argv.get(1).map_or("", String::as_str);
        if first.contains("..") || first.starts_with("salt:///") {
            // Ours, not Salt's: Salt answers "" as for a missing file; the fileserver refuses
            // the path by name.
            assert_eq!(expected, json!(""), "{argv:?}");
            let text = out.ret.as_str().unwrap_or_default();
            assert!(
                text.starts_with("ERROR: salt:// path") && text.contains("is refused"),
                "{argv:?}: {}",
                out.ret
            );
            continue;
        }
        let mut got = out.ret.clone();
        if got["pid"].as_i64().is_some_and(|p| p > 0) {
            got["pid"] = json!("{PID}");
        }
        let (got, want) = if argv[0] == "cp.list_minion" {
            (
                cached_files_only(&got, &root),
                cached_files_only(&expected, &root),
            )
        } else {
            (got, expected)
        };
        assert_eq!(got, want, "{argv:?}");
        // Ours, not Salt's (cmd.rs says so too): a script that cannot be cached fails the
        // job, where Salt leaves its retcode at 0.
        let retcode = if got["cache_error"] == json!(true) {
            1
        } else {
            case["retcode"].as_i64().unwrap() as i32
        };
        assert_eq!(out.retcode, retcode, "{argv:?}");
    }
    // What get_file wrote is the file, byte for byte.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/a/b/c.txt")).unwrap(),
        "hello world\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/dev.txt")).unwrap(),
        "hello dev\n"
    );
}

#[tokio::test]
async fn without_a_fileserver_cp_fails_naming_the_function() {
    let ctx = CallContext::local(json!({}), json!({}));
    let out = crate::call(
        &ctx,
        "cp.list_master",
        vec![],
        Map::new(),
        &PubInfo::default(),
    )
    .await;
    assert_eq!(
        out.ret,
        json!(
            "ERROR: cp.list_master needs the master's fileserver (salt://), which this minion has no connection to"
        )
    );
    assert_ne!(out.retcode, 0);
}

/// A renderer that is plainly ours (the real one lives in saltq-states): upper-cases the
/// text and appends the saltenv and the extra variables it was given.
struct Upper;

impl StateSystem for Upper {
    fn call(&self, _call: crate::Call) -> crate::BoxFuture {
        Box::pin(async { Ok(Value::Null) })
    }
    fn render_template(
        &self,
        _ctx: &CallContext,
        text: &str,
        engine: &str,
        saltenv: &str,
        extra: Map<String, Value>,
    ) -> Result<String, String> {
        if engine != "jinja" {
            return Err(format!("no engine {engine}"));
        }
        Ok(format!(
            "{}|{saltenv}|{}",
            text.to_uppercase(),
            Value::Object(extra)
        ))
    }
}

#[tokio::test]
async fn get_template_renders_through_the_state_system() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("srv")).unwrap();
    std::fs::create_dir_all(dir.path().join("dev")).unwrap();
    std::fs::create_dir_all(dir.path().join("srv2")).unwrap();
    std::fs::write(dir.path().join("srv/t.txt"), "hi\n").unwrap();
    let ctx = context(dir.path()).with_states(Arc::new(Upper));
    let dest = dir.path().join("out.txt").display().to_string();
    let run = |args: Vec<&str>| {
        let ctx = ctx.clone();
        let args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        async move {
            let (a, k) = parse_input(&args);
            crate::call(&ctx, "cp.get_template", a, k, &PubInfo::default()).await
        }
    };
    let out = run(vec!["salt://t.txt", &dest, "name=x"]).await;
    assert_eq!(out.ret, json!(dest));
    assert_eq!(
        std::fs::read_to_string(&dest).unwrap(),
        "HI\n|base|{\"name\":\"x\",\"saltenv\":\"base\"}"
    );
    let out = run(vec!["salt://nope.txt", &dest]).await;
    assert_eq!(out.ret, json!(""));
    let out = run(vec!["salt://t.txt", &dest, "template=mako"]).await;
    assert_eq!(out.ret, json!(""), "a failed render gives '' as in Salt");
    let nodir = dir.path().join("no/such/out.txt").display().to_string();
    assert_eq!(run(vec!["salt://t.txt", &nodir]).await.ret, json!(""));
    let out = run(vec!["salt://t.txt", &nodir, "makedirs=True"]).await;
    assert_eq!(out.ret, json!(nodir));
}

#[test]
fn sls_names_follow_salts_rules() {
    let files: Vec<String> = [
        "top.sls",
        "web/init.sls",
        "web/conf.sls",
        "a/b/c.sls",
        "x.txt",
        "web.sls",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(
        super::sls_names(&files),
        ["a.b.c", "top", "web", "web.conf"]
    );
}
