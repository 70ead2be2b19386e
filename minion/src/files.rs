//! The minion's `salt://` client (Salt's `fileclient`): [`MasterFiles`] asks the master over
//! the minion's connection and keeps what it fetched in `<cachedir>/files/<saltenv>/<path>`,
//! fetching a file only when the master's hash differs from the cached copy's; [`local_files`]
//! serves `saltq-minion call --local` from the minion's own `file_roots`.

use std::path::PathBuf;
use std::sync::Arc;

use saltq_exec::{FileClient, FileFuture, FileHash};
use saltq_fileserver::{CacheWriter, FsError, cache_path, cached_hash};
use saltq_proto::v1::{self as pb, minion_service_client::MinionServiceClient};
use saltq_transport::Channel;
use tokio::sync::watch;
use tonic::{Code, Status};

use crate::config::MinionConfig;

/// Files from the master, cached by hash.
pub struct MasterFiles {
    /// The connection to the master, when there is one.
    pub chan: watch::Receiver<Option<Channel>>,
    /// The minion's config (cachedir, message limits).
    pub cfg: Arc<MinionConfig>,
}

type Client = MinionServiceClient<Channel>;

impl MasterFiles {
    fn client(&self) -> Result<(Client, Channel), String> {
        let ch = self
            .chan
            .borrow()
            .clone()
            .ok_or("not connected to the master")?;
        let c = MinionServiceClient::new(ch.clone())
            .max_decoding_message_size(self.cfg.limits.max_message_size)
            .max_encoding_message_size(self.cfg.limits.max_message_size);
        Ok((c, ch))
    }

    fn list(&self, saltenv: &str, prefix: &str, kind: pb::FileListKind) -> FileFuture<Vec<String>> {
        let conn = self.client();
        let req = pb::ListFilesRequest {
            saltenv: saltenv.to_owned(),
            prefix: prefix.to_owned(),
            kind: kind as i32,
        };
        Box::pin(async move {
            let (mut c, ch) = conn?;
            let resp = c.list_files(req).await.map_err(|s| failure(&ch, &s))?;
            Ok(resp.into_inner().paths)
        })
    }
}

/// A refusal from the master (a path outside the roots) as the master worded it; anything
/// else as the connection's failure.
fn failure(ch: &Channel, s: &Status) -> String {
    match s.code() {
        Code::InvalidArgument | Code::NotFound => s.message().to_owned(),
        _ => ch.failure(s).to_string(),
    }
}

async fn master_hash(
    c: &mut Client,
    ch: &Channel,
    saltenv: &str,
    path: &str,
) -> Result<Option<FileHash>, String> {
    let resp = c
        .hash_file(pb::HashFileRequest {
            saltenv: saltenv.to_owned(),
            path: path.to_owned(),
        })
        .await
        .map_err(|s| failure(ch, &s))?
        .into_inner();
    Ok(resp.found.then_some(FileHash {
        hsum: resp.hsum,
        hash_type: resp.hash_type,
    }))
}

impl FileClient for MasterFiles {
    fn list_files(&self, saltenv: &str, prefix: &str) -> FileFuture<Vec<String>> {
        self.list(saltenv, prefix, pb::FileListKind::Files)
    }

    fn list_dirs(&self, saltenv: &str, prefix: &str) -> FileFuture<Vec<String>> {
        self.list(saltenv, prefix, pb::FileListKind::Dirs)
    }

    fn list_empty_dirs(&self, saltenv: &str, prefix: &str) -> FileFuture<Vec<String>> {
        self.list(saltenv, prefix, pb::FileListKind::EmptyDirs)
    }

    fn envs(&self) -> FileFuture<Vec<String>> {
        let conn = self.client();
        Box::pin(async move {
            let (mut c, ch) = conn?;
            let resp = c
                .list_envs(pb::ListEnvsRequest {})
                .await
                .map_err(|s| failure(&ch, &s))?;
            Ok(resp.into_inner().saltenvs)
        })
    }

    fn hash(&self, saltenv: &str, path: &str) -> FileFuture<Option<FileHash>> {
        let conn = self.client();
        let (saltenv, path) = (saltenv.to_owned(), path.to_owned());
        Box::pin(async move {
            let (mut c, ch) = conn?;
            master_hash(&mut c, &ch, &saltenv, &path).await
        })
    }

    fn cache_file(&self, saltenv: &str, path: &str) -> FileFuture<Option<PathBuf>> {
        let conn = self.client();
        let cachedir = self.cfg.cachedir.clone();
        let (saltenv, path) = (saltenv.to_owned(), path.to_owned());
        Box::pin(async move {
            let (mut c, ch) = conn?;
            let dest = cache_path(&cachedir, &saltenv, &path).map_err(|e| e.to_string())?;
            let Some(want) = master_hash(&mut c, &ch, &saltenv, &path).await? else {
                return Ok(None);
            };
            let current = {
                let (dest, hash_type) = (dest.clone(), want.hash_type.clone());
                blocking(move || Ok(cached_hash(&dest, &hash_type))).await?
            };
            if current.as_deref() == Some(want.hsum.as_str()) {
                tracing::debug!(%saltenv, %path, "cached copy is current");
                return Ok(Some(dest));
            }
            let mut stream = c
                .get_file(pb::GetFileRequest {
                    saltenv: saltenv.clone(),
                    path: path.clone(),
                })
                .await
                .map_err(|s| failure(&ch, &s))?
                .into_inner();
            let mut writer = {
                let (dest, hash_type) = (dest.clone(), want.hash_type.clone());
                blocking(move || CacheWriter::create(&dest, &hash_type)).await?
            };
            let mut trailer = None;
            while let Some(msg) = stream.message().await.map_err(|s| failure(&ch, &s))? {
                if !msg.data.is_empty() {
                    // Each chunk is written off the async workers; the next one waits on the
                    // stream meanwhile, so at most one chunk sits in this minion's memory.
                    writer = blocking(move || writer.write(&msg.data).map(|()| writer)).await?;
                }
                if !msg.hsum.is_empty() {
                    trailer = Some(msg.hsum);
                }
            }
            let hsum = trailer.ok_or_else(|| {
                format!("the master's stream of salt://{path} ended before its hash")
            })?;
            let size = writer.written();
            let dest = blocking(move || writer.finish(&hsum)).await?;
            tracing::info!(%saltenv, %path, size, "fetched file from the master");
            Ok(Some(dest))
        })
    }
}

/// Runs disk work on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, FsError> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("file cache task failed: {e}"))?
        .map_err(|e| e.to_string())
}

/// The minion's own `file_roots` (`call --local`, Salt's `file_client: local`); its
/// [`FileClient`](saltq_exec::FileClient) is exec's, shared with the master's state runs.
pub fn local_files(cfg: &MinionConfig) -> saltq_fileserver::LocalFiles {
    saltq_fileserver::LocalFiles {
        roots: cfg.file_roots.clone(),
        cachedir: cfg.cachedir.clone(),
        hash_type: cfg.hash_type.clone(),
    }
}
