//! Where the compiler's SLS files come from in a real run: the fileserver (`salt://`) through
//! the minion's [`FileClient`](saltq_exec::FileClient), rendered by [`crate::render`].
//! Runs on a blocking thread: fetching drives the client's futures with the runtime handle.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::runtime::Handle;

use crate::compile::{sls_names, sls_paths};
use crate::render::{RenderContext, render_sls};

/// The files of a state tree as one run sees them: these grains, this pillar.
#[derive(Debug, Clone)]
pub struct TreeSource {
    /// The render context every file starts from (saltenv, sls and source are set per file).
    pub base: RenderContext,
    /// The runtime the fileserver client's futures run on.
    pub handle: Handle,
    /// Each saltenv's file list, fetched once per run.
    listings: Arc<Mutex<HashMap<String, Vec<String>>>>,
}

impl TreeSource {
    /// A source rendering with `base` (saltenv, sls and source are set per file).
    pub fn new(base: RenderContext, handle: Handle) -> Self {
        Self {
            base,
            handle,
            listings: Arc::default(),
        }
    }

    /// Every file of `saltenv`, fetched once.
    pub fn list(&self, saltenv: &str) -> Vec<String> {
        let mut cache = self.listings.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(l) = cache.get(saltenv) {
            return l.clone();
        }
        let files = match self.base.ctx.files.clone() {
            Some(f) => self
                .handle
                .block_on(f.list_files(saltenv, ""))
                .unwrap_or_default(),
            None => Vec::new(),
        };
        cache.insert(saltenv.to_owned(), files.clone());
        files
    }

    /// The SLS names of `saltenv` (Salt's `list_states`), sorted and without repeats.
    pub fn list_states(&self, saltenv: &str) -> Vec<String> {
        sls_names(&self.list(saltenv))
    }

    /// Whether `sls` resolves to a package's `init.sls` (no `a/b.sls` beside `a/b/init.sls`).
    pub fn is_package(&self, saltenv: &str, sls: &str) -> bool {
        let [file, init] = sls_paths(sls);
        let files = self.list(saltenv);
        !files.contains(&file) && files.contains(&init)
    }

    /// Fetches `path` of `saltenv` and reads it; `Ok(None)` when the tree has no such file.
    pub fn read(&self, saltenv: &str, path: &str) -> Result<Option<String>, String> {
        let Some(files) = self.base.ctx.files.clone() else {
            return Err("no fileserver is available to this process".into());
        };
        let Some(local) = self.handle.block_on(files.cache_file(saltenv, path))? else {
            return Ok(None);
        };
        std::fs::read_to_string(&local)
            .map(Some)
            .map_err(|e| format!("cannot read {}: {e}", local.display()))
    }

    /// Renders the file at `path` as the SLS `sls`; the error is Salt's
    /// "Rendering SLS 'env:sls' failed: ..." text.
    pub fn render_file(
        &self,
        saltenv: &str,
        sls: &str,
        path: &str,
    ) -> Result<Option<Value>, String> {
        let Some(text) = self.read(saltenv, path)? else {
            return Ok(None);
        };
        let rc = RenderContext {
            saltenv: saltenv.to_owned(),
            sls: sls.to_owned(),
            source: path.to_owned(),
            ..self.base.clone()
        };
        render_sls(&text, &rc)
            .map(Some)
            .map_err(|e| format!("Rendering SLS '{saltenv}:{sls}' failed: {e}"))
    }

    /// Renders the SLS `sls` of `saltenv`, trying its two paths.
    pub fn render(&self, saltenv: &str, sls: &str) -> Result<Option<Value>, String> {
        for path in sls_paths(sls) {
            if let Some(data) = self.render_file(saltenv, sls, &path)? {
                return Ok(Some(data));
            }
        }
        Ok(None)
    }

    /// The saltenvs of the fileserver.
    pub fn envs(&self) -> Vec<String> {
        match self.base.ctx.files.clone() {
            Some(files) => self
                .handle
                .block_on(files.envs())
                .unwrap_or_else(|_| vec!["base".to_owned()]),
            None => vec!["base".to_owned()],
        }
    }
}
