//! Master-side pillar: a thin adapter over the compiler in `saltq_states::pillar` (Salt's
//! `Pillar.compile_pillar`: rendered, included, merged, `_errors` in Salt's words). It adds
//! what is the master's: the pillar options read from its config, `salt://` imports from
//! `pillar_roots` (as Salt's pillar file client), `salt[...]` run on the master with `cp.*`
//! reading `file_roots` (as the master's own `cp`), the gpg keys beside the config file, and
//! a cache per minion so a fleet reconnecting recompiles only when the tree or the grains
//! changed.
//!
//! Compilation reads and renders files: callers run it on the blocking pool.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use saltq_states::pillar::{Compiler, PillarOptions, Request, ext::ExtPillar};
use serde_json::{Map, Value, json};

/// Why the master's pillar settings are refused at start.
#[derive(Debug, thiserror::Error)]
pub enum PillarError {
    /// A pillar option has a bad value: the key and what was expected.
    #[error("{0}")]
    Option(String),
}

/// The master's pillar settings and its per-minion cache. Cloning shares the cache.
#[derive(Clone)]
pub struct PillarConfig {
    /// The checked options.
    options: Arc<PillarOptions>,
    /// `opts` as pillar Jinja sees it (Salt's master opts, the keys pillar reads).
    opts: Arc<Value>,
    /// Where `salt://` imports of pillar files are cached.
    cachedir: PathBuf,
    /// `file_roots`, which `salt['cp.*']` in pillar Jinja read.
    file_roots: saltq_fileserver::Roots,
    /// Where those `cp.*` files are cached.
    cp_cachedir: PathBuf,
    /// The configured `ext_pillar` sources, in order.
    ext: Arc<Vec<Arc<dyn ExtPillar>>>,
    /// Last pillar per minion: tree stamp, grains hash, data.
    cache: Arc<Mutex<HashMap<String, Cached>>>,
}

impl std::fmt::Debug for PillarConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PillarConfig")
            .field("options", &self.options)
            .field("ext", &self.ext.len())
            .finish_non_exhaustive()
    }
}

struct Cached {
    stamp: u64,
    grains: u64,
    pillar: Arc<Value>,
}

/// The pillar keys of the master's config, as written (Salt's names).
#[derive(Debug, Clone, Default)]
pub struct RawPillar<'a> {
    /// `pillar_roots`.
    pub roots: Option<&'a BTreeMap<String, Vec<PathBuf>>>,
    /// Every other pillar key by its Salt name (`pillar_merge_lists`, `renderer`, ...).
    pub keys: Vec<(&'static str, Value)>,
    /// `nodegroups`.
    pub nodegroups: Value,
    /// `file_roots` (what `salt['cp.*']` read).
    pub file_roots: Option<&'a BTreeMap<String, Vec<PathBuf>>>,
}

impl PillarConfig {
    /// Checks the pillar keys.
    pub fn new(
        raw: RawPillar<'_>,
        id: &str,
        cachedir: &Path,
        ext: Vec<Arc<dyn ExtPillar>>,
    ) -> Result<Self, PillarError> {
        let mut opts = Map::new();
        let roots: BTreeMap<String, Vec<PathBuf>> = raw.roots.cloned().unwrap_or_else(|| {
            BTreeMap::from([("base".to_owned(), vec![PathBuf::from("/srv/pillar")])])
        });
        opts.insert("id".into(), json!(id));
        opts.insert("pillar_roots".into(), json!(roots));
        opts.insert("nodegroups".into(), raw.nodegroups);
        opts.insert("__role".into(), json!("master"));
        opts.insert("file_client".into(), json!("local"));
        let file_roots = raw.file_roots.cloned().unwrap_or_default();
        opts.insert("file_roots".into(), json!(file_roots));
        for (k, v) in raw.keys {
            if !v.is_null() {
                opts.insert(k.to_owned(), v);
            }
        }
        let opts = Value::Object(opts);
        let options = PillarOptions::from_opts(&opts).map_err(PillarError::Option)?;
        Ok(Self {
            options: Arc::new(options),
            opts: Arc::new(opts),
            cachedir: cachedir.join("pillar_files"),
            file_roots: saltq_fileserver::Roots::new(file_roots),
            cp_cachedir: cachedir.join("pillar_cp_files"),
            ext: Arc::new(ext),
            cache: Arc::default(),
        })
    }

    /// The pillar keys of the master's config, checked at start; an error is the key and
    /// what is wrong with it. `gpg_keydir` is the key directory as configured or by Salt's
    /// default (`gpgkeys` beside the config file).
    pub fn from_raw(
        raw: &crate::config::RawConfig,
        id: &str,
        cachedir: &Path,
        gpg_keydir: &Path,
    ) -> Result<Self, (String, String)> {
        let keys = vec![
            (
                "pillar_source_merging_strategy",
                json!(raw.pillar_source_merging_strategy),
            ),
            ("pillar_merge_lists", json!(raw.pillar_merge_lists)),
            (
                "pillar_includes_override_sls",
                json!(raw.pillar_includes_override_sls),
            ),
            (
                "pillar_safe_render_error",
                json!(raw.pillar_safe_render_error),
            ),
            (
                "top_file_merging_strategy",
                json!(raw.top_file_merging_strategy),
            ),
            ("pillarenv", json!(raw.pillarenv)),
            ("pillarenv_from_saltenv", json!(raw.pillarenv_from_saltenv)),
            ("renderer", json!(raw.renderer)),
            ("ext_pillar_first", json!(raw.ext_pillar_first)),
            // The gpg renderer's keys (#33): Salt's default is beside the config file.
            ("gpg_keydir", json!(gpg_keydir)),
        ];
        let pillar_raw = RawPillar {
            roots: raw.pillar_roots.as_ref(),
            keys,
            nodegroups: json!(raw.nodegroups),
            file_roots: raw.file_roots.as_ref(),
        };
        Self::new(pillar_raw, id, cachedir, Vec::new()).map_err(|PillarError::Option(m)| {
            match m.split_once(": ") {
                Some((k, rest)) => (k.to_owned(), rest.to_owned()),
                None => ("pillar".to_owned(), m),
            }
        })
    }

    /// The same settings with these `ext_pillar` sources (in `ext_pillar` order).
    #[allow(dead_code)] // the seam the master's ext_pillar sources plug into (#33)
    pub fn with_ext(mut self, ext: Vec<Arc<dyn ExtPillar>>) -> Self {
        self.ext = Arc::new(ext);
        self
    }

    /// A config over `roots` (`base`) with Salt's defaults, for tests.
    #[cfg(test)]
    pub fn with_roots(roots: &[PathBuf]) -> Self {
        let roots = BTreeMap::from([("base".to_owned(), roots.to_vec())]);
        let raw = RawPillar {
            roots: Some(&roots),
            ..Default::default()
        };
        Self::new(raw, "master", &std::env::temp_dir(), Vec::new())
            .unwrap_or_else(|e| unreachable!("the defaults are valid: {e}"))
    }

    /// The pillar of minion `id` with `grains`: from the cache when neither the tree nor the
    /// grains changed (and no external source is configured), else compiled afresh. Render
    /// errors are in its `_errors`, as Salt's.
    pub fn compile(&self, id: &str, grains: &Value) -> Arc<Value> {
        let cacheable = self.ext.is_empty();
        let stamp = tree_stamp(&self.options.tree.envs);
        let ghash = hash_value(grains);
        if cacheable {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(c) = cache.get(id)
                && c.stamp == stamp
                && c.grains == ghash
            {
                return c.pillar.clone();
            }
        }
        let pillar = Arc::new(Value::Object(self.compile_fresh(id, grains)));
        if cacheable {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache.insert(
                id.to_owned(),
                Cached {
                    stamp,
                    grains: ghash,
                    pillar: pillar.clone(),
                },
            );
        }
        pillar
    }

    /// The pillar of minion `id` for a request that names a `saltenv` or a `pillarenv` (a
    /// state run's `saltenv=`/`pillarenv=`, as Salt's `_pillar` load carries them): compiled
    /// afresh, `pillarenv` first, else the saltenv with `pillarenv_from_saltenv`, else the
    /// configured `pillarenv`. Neither named: [`PillarConfig::compile`], from the cache.
    pub fn compile_env(
        &self,
        id: &str,
        grains: &Value,
        saltenv: Option<String>,
        pillarenv: Option<String>,
    ) -> Arc<Value> {
        if saltenv.is_none() && pillarenv.is_none() {
            return self.compile(id, grains);
        }
        Arc::new(Value::Object(self.compiler(id, grains).compile(&Request {
            saltenv,
            pillarenv,
            ..request(id, grains)
        })))
    }

    /// The merged pillar top as `pillar.show_top` shows it, rendered for minion `id` with
    /// `grains` in `saltenv`; the render errors instead when a top failed.
    pub fn show_top(
        &self,
        id: &str,
        grains: &Value,
        saltenv: Option<String>,
    ) -> Result<Map<String, Value>, Vec<String>> {
        self.compiler(id, grains).show_top(&Request {
            saltenv,
            ..request(id, grains)
        })
    }

    /// The pillar of minion `id` compiled now for `pillarenv` (`pillar.show_pillar`), never
    /// from the cache.
    pub fn compile_for(&self, id: &str, grains: &Value, pillarenv: Option<String>) -> Value {
        Value::Object(self.compiler(id, grains).compile(&Request {
            pillarenv,
            ..request(id, grains)
        }))
    }

    /// The pillar of minion `id` compiled now with `extra` sources after the configured ones
    /// and `pillar_override` merged last (`pillar.ext`), never from the cache.
    pub fn compile_ext(
        &self,
        id: &str,
        grains: &Value,
        extra: Vec<Arc<dyn ExtPillar>>,
        pillar_override: Map<String, Value>,
    ) -> Value {
        let mut compiler = self.compiler(id, grains);
        compiler.ext.extend(extra);
        Value::Object(compiler.compile(&Request {
            pillar_override,
            ..request(id, grains)
        }))
    }

    fn compile_fresh(&self, id: &str, grains: &Value) -> Map<String, Value> {
        self.compiler(id, grains).compile(&request(id, grains))
    }

    /// The compiler for minion `id`: `opts` with its id and grains, `salt://` imports from the
    /// pillar roots, `cp.*` from the file roots.
    fn compiler(&self, id: &str, grains: &Value) -> Compiler {
        let mut opts = (*self.opts).clone();
        if let Value::Object(m) = &mut opts {
            m.insert("id".into(), json!(id));
            m.insert("grains".into(), grains.clone());
        }
        let envs: BTreeMap<String, Vec<PathBuf>> = self.options.tree.envs.iter().cloned().collect();
        let imports = saltq_fileserver::LocalFiles {
            roots: saltq_fileserver::Roots::new(envs),
            cachedir: self.cachedir.clone(),
            hash_type: "sha256".into(),
        };
        let cp = saltq_fileserver::LocalFiles {
            roots: self.file_roots.clone(),
            cachedir: self.cp_cachedir.clone(),
            hash_type: "sha256".into(),
        };
        let ctx = saltq_exec::CallContext::local(grains.clone(), opts.clone())
            .with_files(Arc::new(cp))
            .with_template_files(Arc::new(imports));
        Compiler {
            options: (*self.options).clone(),
            opts,
            ctx,
            ext: self.ext.to_vec(),
        }
    }
}

/// A pillar request for minion `id` with `grains`, nothing else named.
fn request(id: &str, grains: &Value) -> Request {
    Request {
        minion_id: id.to_owned(),
        grains: grains.clone(),
        ..Default::default()
    }
}

/// The pillar of minion `id` with `grains` (an adapter for callers that hold only roots).
pub fn compile(cfg: &PillarConfig, id: &str, grains: &Value) -> Result<Value, PillarError> {
    Ok(Arc::unwrap_or_clone(cfg.compile(id, grains)))
}

/// A fingerprint of the pillar tree: every file's path, size and modification time.
fn tree_stamp(envs: &[(String, Vec<PathBuf>)]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (env, roots) in envs {
        env.hash(&mut h);
        for root in roots {
            stamp_dir(root, 0, &mut h);
        }
    }
    h.finish()
}

fn stamp_dir(dir: &Path, depth: usize, h: &mut impl Hasher) {
    if depth > 32 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        path.hash(h);
        if path.is_dir() {
            stamp_dir(&path, depth + 1, h);
        } else if let Ok(meta) = std::fs::metadata(&path) {
            meta.len().hash(h);
            meta.modified().ok().hash(h);
        }
    }
}

fn hash_value(v: &Value) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.to_string().hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod prop_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_file_selects_renders_and_merges() {
        let d = tempfile::tempdir().unwrap();
        let d = d.path();
        std::fs::create_dir_all(d.join("users")).unwrap();
        std::fs::write(
            d.join("top.sls"),
            "base:\n  '*':\n    - common\n  'web*':\n    - users.web\n  'os:Debian':\n    - match: grain\n    - debian\n",
        )
        .unwrap();
        std::fs::write(d.join("common.sls"), "role: base\nusers: {root: 0}\n").unwrap();
        std::fs::write(d.join("users/web.sls"), "role: web\nusers: {www: 33}\n").unwrap();
        std::fs::write(d.join("debian.sls"), "pkg: {{ grains.os | lower }}\n").unwrap();
        let cfg = PillarConfig::with_roots(&[d.to_path_buf()]);
        let p = compile(&cfg, "web1", &json!({"os": "Debian"})).unwrap();
        assert_eq!(
            p,
            json!({"role": "web", "users": {"root": 0, "www": 33}, "pkg": "debian"})
        );
        let p = compile(&cfg, "db1", &json!({"os": "RedHat"})).unwrap();
        assert_eq!(p, json!({"role": "base", "users": {"root": 0}}));
        std::fs::write(d.join("top.sls"), "base:\n  '*':\n    - nope\n").unwrap();
        let p = compile(&cfg, "db1", &json!({})).unwrap();
        assert_eq!(
            p["_errors"][0],
            "Specified SLS 'nope' in environment 'base' is not available on the salt master"
        );
    }

    /// As Salt's master-side pillar: `salt['cp.get_file_str']` reads `file_roots` while the
    /// SLS's own `import_yaml` reads `pillar_roots`; `opts.gpg_keydir` is the key directory
    /// the config resolved (Salt's default: `gpgkeys` beside the config file).
    #[test]
    fn cp_reads_file_roots_imports_read_pillar_roots() {
        let p = tempfile::tempdir().unwrap();
        let f = tempfile::tempdir().unwrap();
        std::fs::write(p.path().join("top.sls"), "base:\n  '*': [a]\n").unwrap();
        std::fs::write(
            p.path().join("a.sls"),
            "{% import_yaml 'data.yaml' as d %}\nimported: {{ d.where }}\n\
             {% set c = salt['cp.get_file_str']('salt://data.yaml') | load_yaml %}\n\
             cp: {{ c.where }}\n\
             keys: {{ opts.gpg_keydir }}\n",
        )
        .unwrap();
        std::fs::write(p.path().join("data.yaml"), "where: pillar_roots\n").unwrap();
        std::fs::write(f.path().join("data.yaml"), "where: file_roots\n").unwrap();
        let pillar_roots = BTreeMap::from([("base".to_owned(), vec![p.path().to_path_buf()])]);
        let file_roots = BTreeMap::from([("base".to_owned(), vec![f.path().to_path_buf()])]);
        let cache = tempfile::tempdir().unwrap();
        let raw = RawPillar {
            roots: Some(&pillar_roots),
            file_roots: Some(&file_roots),
            keys: vec![("gpg_keydir", json!("/etc/saltq/gpgkeys"))],
            ..Default::default()
        };
        let cfg = PillarConfig::new(raw, "master", cache.path(), Vec::new()).unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let _inside = rt.enter();
        let got = cfg.compile("m1", &json!({}));
        assert_eq!(
            *got,
            json!({"imported": "pillar_roots", "cp": "file_roots", "keys": "/etc/saltq/gpgkeys"}),
        );
    }

    #[test]
    fn the_cache_follows_tree_and_grains() {
        let d = tempfile::tempdir().unwrap();
        let d = d.path();
        std::fs::write(d.join("top.sls"), "base:\n  '*': [a]\n").unwrap();
        std::fs::write(d.join("a.sls"), "v: {{ grains.n }}\n").unwrap();
        let cfg = PillarConfig::with_roots(&[d.to_path_buf()]);
        let first = cfg.compile("m", &json!({"n": 1}));
        assert!(Arc::ptr_eq(&first, &cfg.compile("m", &json!({"n": 1}))));
        assert_eq!(cfg.compile("m", &json!({"n": 2}))["v"], 2);
        std::fs::write(d.join("a.sls"), "v: changed {{ grains.n }}\n").unwrap();
        assert_eq!(cfg.compile("m", &json!({"n": 2}))["v"], "changed 2");
    }
}
