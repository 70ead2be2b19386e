//! Salt's fileserver (`salt/fileserver/roots.py`, `salt/fileclient.py`): the master serves
//! `file_roots` per saltenv without letting a path escape its roots; the minion keeps what it
//! fetched in its cachedir by hash.
//!
//! No I/O beyond the local disk: the master's gRPC service and the minion's client are thin
//! drivers around [`Roots`], [`cache`] and [`path`].

pub mod cache;
pub mod hash;
pub mod path;
pub mod roots;

pub use cache::{CacheWriter, LocalFiles, cache_path, cached_hash};
pub use hash::{DEFAULT_HASH_TYPE, Hasher, hash_file};
pub use roots::{Found, Ignore, Listing, Roots};

/// How many bytes of a file travel in one message (and are read at once).
pub const CHUNK_SIZE: usize = 512 * 1024;

/// Why a fileserver request failed.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// The path may not be used at all.
    #[error("salt:// path {path:?} is refused: {why}")]
    BadPath {
        /// The path as asked for.
        path: String,
        /// Why.
        why: &'static str,
    },
    /// The saltenv name cannot be a directory of the cache.
    #[error("saltenv {0:?} is not a valid environment name")]
    BadSaltenv(String),
    /// The path resolves, through a symlink, outside the root that holds it.
    #[error(
        "salt:// path {path:?} is refused: it resolves outside the file roots of saltenv {saltenv}"
    )]
    Escape {
        /// The path as asked for.
        path: String,
        /// The saltenv.
        saltenv: String,
    },
    /// `hash_type` names no digest we know.
    #[error("unsupported hash_type {0:?}: expected md5, sha1, sha224, sha256, sha384 or sha512")]
    HashType(String),
    /// What arrived is not what the master announced.
    #[error("{path}: the file received has hash {got}, the master announced {expected}")]
    HashMismatch {
        /// The cache path.
        path: String,
        /// The announced digest.
        expected: String,
        /// The digest of what arrived.
        got: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

impl FsError {
    /// An I/O error on `path`.
    pub fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        FsError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    /// Whether the request itself was at fault (a refused path or saltenv), as opposed to
    /// the disk.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            FsError::BadPath { .. }
                | FsError::BadSaltenv(_)
                | FsError::Escape { .. }
                | FsError::HashType(_)
        )
    }
}
