//! What the compile and requisite tests share: an in-memory state tree, the replay of one
//! recorded case, and the comparison with what Salt answered.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use saltq_exec::CallContext;
use saltq_states::compile::{HighBuilder, Matches, SlsSource};
use saltq_states::run::{RunOptions, call_high, single};
use serde_json::{Map, Value, json};

/// One recorded case: the files of its state tree and the call.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct Case {
    pub name: String,
    pub files: BTreeMap<String, String>,
    pub call: Call,
}

/// The call a case makes (`state.sls requisite`, `state.single ...`).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct Call {
    pub fun: String,
    #[serde(default)]
    pub args: Vec<Value>,
    #[serde(default)]
    pub kwargs: Map<String, Value>,
}

/// The project's own test data: `tests/data/<kind>` (recordings of Salt and the scripts that
/// make them).
pub fn data_dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(kind)
}

/// A third-party input (`rel` under `../shared/third-party`, beside the checkout: the public
/// formulas and Salt's own test trees, which the project does not hold). Panics naming the
/// path when it is missing: CI always has it.
pub fn third_party(rel: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the states crate sits in the workspace");
    third_party_under(root, rel).unwrap_or_else(|e| panic!("{e}"))
}

/// `rel` under `<workspace root>/../shared/third-party`, or why it cannot be had.
pub fn third_party_under(root: &Path, rel: &str) -> Result<PathBuf, String> {
    let shared = root.parent().unwrap_or(root).join("shared/third-party");
    let path = shared.join(rel);
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "third-party test input {} is missing: the tests read it from ../shared/third-party \
             beside the checkout ({})",
            path.display(),
            root.display()
        ))
    }
}

/// The SLS inputs of Salt's requisite tests (third-party) and Salt's recorded answers to them
/// (the project's own `data/requisites/recorded.json`).
pub fn load_requisite_cases() -> (Vec<Case>, Map<String, Value>) {
    let path = third_party("salt-tests/requisites-cases.json");
    let cases: Vec<Case> = serde_json::from_str(
        &std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display())),
    )
    .unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    let path = data_dir("requisites").join("recorded.json");
    let recorded: Map<String, Value> = serde_json::from_str(
        &std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display())),
    )
    .unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    (cases, recorded)
}

/// A state tree in memory: `name.sls` or `name/init.sls` files per saltenv, YAML only.
pub struct MemTree {
    pub envs: BTreeMap<String, BTreeMap<String, String>>,
}

impl MemTree {
    /// A tree from files keyed `<saltenv>/<path>`; `pillar/...` files are left out.
    pub fn from_prefixed(files: &BTreeMap<String, String>, envs: &[String]) -> Self {
        let mut tree: BTreeMap<String, BTreeMap<String, String>> =
            envs.iter().map(|e| (e.clone(), BTreeMap::new())).collect();
        for (k, v) in files {
            let (env, path) = k.split_once('/').expect("files are keyed <saltenv>/<path>");
            if env == "pillar" {
                continue;
            }
            tree.entry(env.to_owned())
                .or_default()
                .insert(path.to_owned(), v.clone());
        }
        Self { envs: tree }
    }

    /// A tree of one saltenv, `base`.
    pub fn base(files: &BTreeMap<String, String>) -> Self {
        let mut envs = BTreeMap::new();
        envs.insert("base".to_owned(), files.clone());
        Self { envs }
    }

    fn file(&self, saltenv: &str, sls: &str) -> Option<&String> {
        let env = self.envs.get(saltenv)?;
        let path = sls.replace('.', "/");
        env.get(&format!("{path}.sls"))
            .or_else(|| env.get(&format!("{path}/init.sls")))
    }
}

/// YAML into JSON values, keeping the key order.
pub fn yaml(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_yaml_ng::from_str::<Value>(text).map_err(|e| e.to_string())
}

impl SlsSource for MemTree {
    fn render_sls(&self, saltenv: &str, sls: &str) -> Result<Option<Value>, String> {
        match self.file(saltenv, sls) {
            None => Ok(None),
            // A template goes through the renderer (`jinja|yaml`), plain YAML is read here.
            Some(text) if text.contains("{%") || text.contains("{{") => {
                let rc = saltq_states::render::RenderContext {
                    ctx: ctx(),
                    grains: ctx().grains(),
                    pillar: json!({}),
                    opts: json!({"id": "minion"}),
                    saltenv: saltenv.to_owned(),
                    sls: sls.to_owned(),
                    source: format!("{}.sls", sls.replace('.', "/")),
                    extra: Map::new(),
                };
                saltq_states::render::render_sls(text, &rc)
                    .map(Some)
                    .map_err(|e| format!("Rendering SLS '{saltenv}:{sls}' failed: {e}"))
            }
            Some(text) => yaml(text)
                .map(Some)
                .map_err(|e| format!("Rendering SLS '{saltenv}:{sls}' failed: {e}")),
        }
    }

    fn render_top(&self, saltenv: &str) -> Result<Option<Value>, String> {
        match self.envs.get(saltenv).and_then(|e| e.get("top.sls")) {
            None => Ok(None),
            Some(text) => yaml(text).map(Some),
        }
    }

    fn envs(&self) -> Vec<String> {
        let mut out = vec!["base".to_owned()];
        out.extend(self.envs.keys().filter(|e| *e != "base").cloned());
        out
    }

    fn list_states(&self, saltenv: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .envs
            .get(saltenv)
            .map(|files| {
                files
                    .keys()
                    .filter_map(|f| f.strip_suffix(".sls"))
                    .map(|f| f.strip_suffix("/init").unwrap_or(f).replace('/', "."))
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }

    fn is_package(&self, saltenv: &str, sls: &str) -> bool {
        let path = sls.replace('.', "/");
        self.envs.get(saltenv).is_some_and(|e| {
            !e.contains_key(&format!("{path}.sls")) && e.contains_key(&format!("{path}/init.sls"))
        })
    }
}

/// A context like `salt-call --local`'s, commands run with `/bin/bash` as Salt's `shell` grain says.
pub fn ctx() -> CallContext {
    CallContext::local(
        json!({"id": "minion", "shell": "/bin/bash", "kernel": "Linux", "os": "Debian"}),
        json!({"id": "minion"}),
    )
}

/// Replays one case: what our code answers, in the shape Salt's `--out json` gives
/// (`local`'s value).
pub async fn run_case(case: &Case) -> Value {
    let tmp = tempfile::tempdir().expect("tempdir");
    let tmp_s = tmp.path().to_string_lossy().to_string();
    let files: BTreeMap<String, String> = case
        .files
        .iter()
        .map(|(k, v)| (k.clone(), v.replace("{TMP}", &tmp_s)))
        .collect();
    let tree = MemTree::base(&files);
    let ctx = ctx();
    let test = case
        .call
        .kwargs
        .get("test")
        .is_some_and(|t| t == &json!(true));
    let opts = RunOptions {
        test,
        saltenv: "base".into(),
        ..RunOptions::default()
    };
    let out = match case.call.fun.as_str() {
        "state.sls" => {
            let mods: Vec<String> = case.call.args[0]
                .as_str()
                .unwrap_or_default()
                .split(',')
                .map(str::to_owned)
                .collect();
            let matches: Matches = vec![("base".to_owned(), mods)];
            let mut builder = HighBuilder::new(&tree);
            let (high, errors) = builder.render_highstate(&matches);
            if !errors.is_empty() {
                return json!(errors);
            }
            match call_high(high, &ctx, &opts).await {
                Ok(ret) => Value::Object(ret),
                Err(errors) => json!(errors),
            }
        }
        "state.single" => {
            let mut kw = case.call.kwargs.clone();
            let fun = kw
                .shift_remove("fun")
                .map(|f| saltq_semantics::python::str(&f))
                .unwrap_or_default();
            let name = kw.shift_remove("name").unwrap_or(Value::Null);
            kw.shift_remove("test");
            match single(&fun, &name, kw, &ctx, &opts).await {
                Ok(r) => Value::Object(r),
                Err(e) => e,
            }
        }
        other => panic!("{}: unknown call {other}", case.name),
    };
    let text = serde_json::to_string(&out).expect("json");
    serde_json::from_str(&text.replace(&tmp_s, "{TMP}")).expect("json")
}

/// The keys compared per state: everything but timings and a command's pid.
fn comparable(v: &Value) -> Value {
    let Value::Object(m) = v else {
        return v.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        if k == "start_time" || k == "duration" {
            continue;
        }
        if k == "changes" {
            let mut c = v.clone();
            if let Value::Object(c) = &mut c {
                c.shift_remove("pid");
            }
            out.insert(k.clone(), c);
            continue;
        }
        out.insert(k.clone(), v.clone());
    }
    Value::Object(out)
}

/// Compares what Salt answered with what we answered; the error lists the differences.
pub fn compare(expected: &Value, got: &Value) -> Result<(), String> {
    match (expected, got) {
        (Value::Object(e), Value::Object(g)) => {
            let mut diffs = Vec::new();
            for (tag, ev) in e {
                match g.get(tag) {
                    None => diffs.push(format!("  missing {tag}")),
                    Some(gv) => {
                        let (ec, gc) = (comparable(ev), comparable(gv));
                        if ec != gc {
                            diffs.push(format!("  {tag}:\n    salt: {ec}\n    ours: {gc}"));
                        } else {
                            // `--out json` keeps Salt's key order: so must we.
                            let keys = |v: &Value| -> Vec<String> {
                                v.as_object()
                                    .map(|m| m.keys().cloned().collect())
                                    .unwrap_or_default()
                            };
                            // Only for the modules tested here: another module's key order is
                            // its own business (and its own tests').
                            let ours = ["test_|-", "cmd_|-", "Listen_Error_|-", "no_|-"]
                                .iter()
                                .any(|p| tag.starts_with(p));
                            if ours && keys(&ec) != keys(&gc) {
                                diffs.push(format!(
                                    "  {tag} key order:\n    salt: {:?}\n    ours: {:?}",
                                    keys(&ec),
                                    keys(&gc)
                                ));
                            }
                        }
                    }
                }
            }
            for tag in g.keys() {
                if !e.contains_key(tag) {
                    diffs.push(format!("  extra {tag}: {}", comparable(&g[tag])));
                }
            }
            let order = |m: &Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
            if diffs.is_empty() && order(e) != order(g) {
                diffs.push(format!(
                    "  result order:\n    salt: {:?}\n    ours: {:?}",
                    order(e),
                    order(g)
                ));
            }
            if diffs.is_empty() {
                Ok(())
            } else {
                Err(diffs.join("\n"))
            }
        }
        _ if expected == got => Ok(()),
        _ => Err(format!("  salt: {expected}\n  ours: {got}")),
    }
}

/// The fileserver over a directory holding one subdirectory per saltenv, as
/// `salt-call --local` serves `file_roots`.
pub struct DirFiles {
    pub root: PathBuf,
}

impl DirFiles {
    /// Writes the `<saltenv>/<path>` files under `root`.
    pub fn write(root: &Path, files: &BTreeMap<String, String>) -> Self {
        for (k, v) in files {
            let dest = root.join(k);
            std::fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
            std::fs::write(&dest, v).expect("write");
        }
        Self {
            root: root.to_owned(),
        }
    }
}

impl saltq_exec::FileClient for DirFiles {
    fn list_files(&self, saltenv: &str, prefix: &str) -> saltq_exec::FileFuture<Vec<String>> {
        fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                let r = if rel.is_empty() {
                    name
                } else {
                    format!("{rel}/{name}")
                };
                if e.path().is_dir() {
                    walk(&e.path(), &r, out);
                } else {
                    out.push(r);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root.join(saltenv), "", &mut out);
        out.retain(|f| f.starts_with(prefix));
        out.sort();
        Box::pin(async move { Ok(out) })
    }

    fn envs(&self) -> saltq_exec::FileFuture<Vec<String>> {
        let mut envs: Vec<String> = std::fs::read_dir(&self.root)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().is_dir())
                    .map(|e| e.file_name().to_string_lossy().to_string())
                    .filter(|e| e != "pillar")
                    .collect()
            })
            .unwrap_or_default();
        envs.sort();
        Box::pin(async move { Ok(envs) })
    }

    fn list_dirs(&self, _saltenv: &str, _prefix: &str) -> saltq_exec::FileFuture<Vec<String>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn hash(
        &self,
        _saltenv: &str,
        _path: &str,
    ) -> saltq_exec::FileFuture<Option<saltq_exec::FileHash>> {
        Box::pin(async { Ok(None) })
    }

    fn cache_file(&self, saltenv: &str, path: &str) -> saltq_exec::FileFuture<Option<PathBuf>> {
        let p = self.root.join(saltenv).join(path);
        Box::pin(async move { Ok(p.is_file().then_some(p)) })
    }
}
