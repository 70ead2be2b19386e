//! The fileserver over local `file_roots` (Salt's `file_client: local`): what
//! `saltq-minion call --local` and the master's own state runs (orchestration) read
//! `salt://` from. Disk work runs on the blocking pool.

use std::path::PathBuf;

use saltq_fileserver::{FsError, LocalFiles};

use crate::context::{FileClient, FileFuture, FileHash};

/// Runs `f` over a copy of the roots on the blocking pool.
fn blocking<T: Send + 'static>(
    lf: &LocalFiles,
    f: impl FnOnce(&LocalFiles) -> Result<T, FsError> + Send + 'static,
) -> FileFuture<T> {
    let lf = lf.clone();
    Box::pin(async move {
        tokio::task::spawn_blocking(move || f(&lf))
            .await
            .map_err(|e| format!("file task failed: {e}"))?
            .map_err(|e| e.to_string())
    })
}

impl FileClient for LocalFiles {
    fn envs(&self) -> FileFuture<Vec<String>> {
        blocking(self, |lf| Ok(lf.roots.saltenvs()))
    }

    fn list_files(&self, saltenv: &str, prefix: &str) -> FileFuture<Vec<String>> {
        let (s, p) = (saltenv.to_owned(), prefix.to_owned());
        blocking(self, move |lf| Ok(lf.roots.list(&s, &p).files))
    }

    fn list_dirs(&self, saltenv: &str, prefix: &str) -> FileFuture<Vec<String>> {
        let (s, p) = (saltenv.to_owned(), prefix.to_owned());
        blocking(self, move |lf| Ok(lf.roots.list(&s, &p).dirs))
    }

    fn list_empty_dirs(&self, saltenv: &str, prefix: &str) -> FileFuture<Vec<String>> {
        let (s, p) = (saltenv.to_owned(), prefix.to_owned());
        blocking(self, move |lf| Ok(lf.roots.list(&s, &p).empty_dirs))
    }

    fn hash(&self, saltenv: &str, path: &str) -> FileFuture<Option<FileHash>> {
        let (s, p) = (saltenv.to_owned(), path.to_owned());
        blocking(self, move |lf| {
            Ok(lf.roots.hash(&s, &p, &lf.hash_type)?.map(|hsum| FileHash {
                hsum,
                hash_type: lf.hash_type.clone(),
            }))
        })
    }

    fn cache_file(&self, saltenv: &str, path: &str) -> FileFuture<Option<PathBuf>> {
        let (s, p) = (saltenv.to_owned(), path.to_owned());
        blocking(self, move |lf| lf.cache_file(&s, &p))
    }
}
