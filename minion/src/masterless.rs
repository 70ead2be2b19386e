//! Masterless pillar (`file_client: local`, or `call --local`): the minion compiles its own
//! pillar as `salt-call --local` does, from its `pillar_roots` through the shared pillar
//! compiler (`saltq_states::pillar`), with its `pillar:` option as the base the SLS pillar
//! merges over and its `ext_pillar` sources (the built-in ones; the database sources live
//! on the master). `salt://` imports inside pillar SLS resolve against `pillar_roots`,
//! `salt['cp.*']` against `file_roots`.

use std::sync::Arc;

use saltq_exec::CallContext;
use saltq_states::pillar::{Compiler, PillarOptions, Request, ext};
use serde_json::{Map, Value};

use crate::config::MinionConfig;

/// The minion's pillar, compiled locally; a configuration the compiler refuses is an
/// `_errors` entry, as Salt reports a pillar that failed to compile.
pub fn compile_pillar(cfg: &MinionConfig, grains: &Value) -> Map<String, Value> {
    compile_pillar_env(cfg, grains, None, None)
}

/// [`compile_pillar`] for a state run's `saltenv` and `pillarenv` (`state.apply
/// saltenv=dev pillarenv=dev`): `pillarenv` compiles that environment only, else with
/// `pillarenv_from_saltenv` the saltenv's. Neither named, the minion's own `saltenv` and
/// `pillarenv` options stand in, as salt-call --local compiles its pillar with them.
pub fn compile_pillar_env(
    cfg: &MinionConfig,
    grains: &Value,
    saltenv: Option<String>,
    pillarenv: Option<String>,
) -> Map<String, Value> {
    let failed = |e: String| {
        let mut m = Map::new();
        m.insert("_errors".into(), Value::Array(vec![Value::String(e)]));
        m
    };
    let options = match PillarOptions::from_opts(&cfg.opts) {
        Ok(o) => o,
        Err(e) => return failed(e),
    };
    let sources = match ext::from_config(
        cfg.opts.get("ext_pillar").unwrap_or(&Value::Null),
        &cfg.opts,
        &[],
    ) {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    // As salt-call --local: the SLS's own `salt://` imports read `pillar_roots` (Salt's
    // pillar file client), `salt['cp.*']` the minion's `file_roots`.
    let pillar_roots = cfg
        .opts
        .get("pillar_roots")
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    let imports = saltq_fileserver::LocalFiles {
        roots: saltq_fileserver::Roots::new(pillar_roots),
        cachedir: cfg.cachedir.join("pillar_files"),
        hash_type: cfg.hash_type.clone(),
    };
    let ctx = CallContext::local(grains.clone(), cfg.opts.clone())
        .with_files(Arc::new(crate::files::local_files(cfg)))
        .with_template_files(Arc::new(imports));
    let compiler = Compiler {
        options,
        opts: cfg.opts.clone(),
        ctx,
        ext: sources,
    };
    let saltenv = saltenv.or_else(|| {
        cfg.opts
            .get("saltenv")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    });
    let compiled = compiler.compile(&Request {
        minion_id: cfg.id.clone(),
        grains: grains.clone(),
        saltenv,
        pillarenv,
        ..Default::default()
    });
    // As salt-call --local: the `pillar` option is the base, in its order, the compiled
    // pillar merged over it (recorded: tests/tests/e2e/data/pillar_ext/).
    let mut pillar = match cfg.opts.get("pillar") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    saltq_exec::dict_update(&mut pillar, &compiled, false);
    pillar
}
