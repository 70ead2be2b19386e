//! Replaying a recorded sequence of `data/users/<module>.json` (written by
//! `data/users/gen.py` with Salt 3007.8 on this kind of host) for real: the setup commands
//! create throwaway users and groups, each step runs its state function through the table
//! and is compared with Salt's answer, and the cleanup commands run whatever happens.
//! The four modules' sequences take one lock file in turn: they all edit the account files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use saltq_exec::{CallContext, FileClient, FileFuture, FileHash};
use saltq_states::modules::{Ret, StateCall, lookup};
use serde_json::{Map, Value, json};

/// `salt://` over `data/users/srv/<saltenv>`, as `salt-call --local` served it.
struct Srv(PathBuf);

impl FileClient for Srv {
    fn list_files(&self, _saltenv: &str, _prefix: &str) -> FileFuture<Vec<String>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn envs(&self) -> FileFuture<Vec<String>> {
        Box::pin(async { Ok(vec!["base".to_owned()]) })
    }
    fn list_dirs(&self, _saltenv: &str, _prefix: &str) -> FileFuture<Vec<String>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn hash(&self, saltenv: &str, path: &str) -> FileFuture<Option<FileHash>> {
        let p = self.0.join(saltenv).join(path);
        Box::pin(async move {
            Ok(std::fs::read(&p).ok().map(|d| FileHash {
                hsum: saltq_fileserver_hash(&d),
                hash_type: "sha256".into(),
            }))
        })
    }
    fn cache_file(&self, saltenv: &str, path: &str) -> FileFuture<Option<PathBuf>> {
        let p = self.0.join(saltenv).join(path);
        Box::pin(async move { Ok(p.is_file().then_some(p)) })
    }
}

fn saltq_fileserver_hash(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Why a sequence cannot run here, if it cannot: not root, or a tool missing.
pub fn missing(tools: &[&str]) -> Option<String> {
    if !nix::unistd::Uid::effective().is_root() {
        return Some("the tests do not run as root".into());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for tool in tools {
        if !std::env::split_paths(&path).any(|d| d.join(tool).is_file()) {
            return Some(format!("{tool} is not installed"));
        }
    }
    None
}

/// Runs the cleanup commands when dropped.
struct Cleanup(Vec<Vec<String>>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &self.0 {
            let _ = Command::new(&c[0]).args(&c[1..]).output();
        }
    }
}

fn commands(v: &Value) -> Vec<Vec<String>> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            c.as_array()
                .into_iter()
                .flatten()
                .map(|s| s.as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .collect()
}

/// Days since the epoch, as the shadow file's `lstchg` counts them.
fn today() -> i64 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    i64::try_from(secs / 86_400).unwrap_or(0)
}

/// As `gen.py` normalises Salt's answer: today's `lstchg` and temp paths as placeholders.
fn normalise(v: &Value) -> Value {
    static TMP: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let tmp = TMP
        .get_or_init(|| regex::Regex::new(r"/tmp/(__salt\.tmp\.|tmp)[\w-]+").expect("valid regex"));
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    if k == "lstchg" && x == &json!(today()) {
                        (k.clone(), json!("{today}"))
                    } else {
                        (k.clone(), normalise(x))
                    }
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalise).collect()),
        Value::String(s) => Value::String(tmp.replace_all(s, "{tmp}").into_owned()),
        other => other.clone(),
    }
}

fn as_salt(ret: &Ret) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(ret.name));
    m.insert("result".into(), json!(ret.result));
    m.insert("comment".into(), json!(ret.comment));
    m.insert("changes".into(), Value::Object(ret.changes.clone()));
    normalise(&Value::Object(m))
}

/// Replays `data/users/<module>.json`; the steps listed in `except` (with the reason at the
/// call) run but are not compared. Returns how many steps were compared.
pub async fn replay(module: &str, except: &[&str]) -> usize {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/users");
    let text = std::fs::read_to_string(data.join(format!("{module}.json")))
        .unwrap_or_else(|e| panic!("reading {module}.json: {e}"));
    let rec: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{module}.json: {e}"));
    // One sequence at a time on this host: they all edit /etc/passwd, /etc/group...
    let lock = std::fs::File::create(std::env::temp_dir().join("saltq-accounts-tests.lock"))
        .expect("lock file");
    let _lock = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .unwrap_or_else(|(_, e)| panic!("flock: {e}"));
    let cleanup = Cleanup(commands(&rec["cleanup"]));
    drop(Cleanup(cleanup.0.clone()));
    for c in commands(&rec["setup"]) {
        let out = Command::new(&c[0]).args(&c[1..]).output();
        assert!(
            out.as_ref().is_ok_and(|o| o.status.success()),
            "setup {c:?}: {out:?}"
        );
    }
    let cache = tempfile::tempdir().expect("tempdir");
    let ctx = CallContext::local(
        json!({"id": "labminion", "os": "Debian", "os_family": "Debian", "kernel": "Linux"}),
        json!({"id": "labminion", "cachedir": cache.path(), "hash_type": "sha256"}),
    )
    .with_files(Arc::new(Srv(data.join("srv"))));
    let mut failures = Vec::new();
    let mut compared = 0;
    for step in rec["steps"].as_array().expect("steps") {
        let id = step["id"].as_str().unwrap_or_default();
        let fun = step["fun"].as_str().unwrap_or_default();
        let test = step["test"].as_bool().unwrap_or(false);
        let mut name = String::new();
        let mut args = Map::new();
        for item in step["args"].as_array().into_iter().flatten() {
            for (k, v) in item.as_object().into_iter().flatten() {
                if k == "name" {
                    name = saltq_semantics::python::str(v);
                } else {
                    args.insert(k.clone(), v.clone());
                }
            }
        }
        let f = lookup(fun).unwrap_or_else(|| panic!("{fun} is not registered"));
        let call = StateCall {
            ctx: ctx.clone(),
            name,
            args,
            test,
            saltenv: "base".into(),
            sls: "step".into(),
            id: id.into(),
            accumulators: Default::default(),
        };
        let ret = match (f.handler)(call).await {
            Ok(r) => r,
            Err(e) => Ret {
                result: Some(false),
                comment: e.0,
                ..Ret::default()
            },
        };
        if except.contains(&id) {
            continue;
        }
        compared += 1;
        let got = as_salt(&ret);
        if got != step["ret"] {
            failures.push(format!(
                "{module}/{id} (test={test}):\n  salt:  {}\n  saltq: {got}",
                step["ret"]
            ));
        }
    }
    drop(cleanup);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    compared
}
