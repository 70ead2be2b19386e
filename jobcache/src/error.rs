//! The job cache's error type: what failed, where (path or database), and why.

use std::sync::Arc;

/// The database's own error, shared so that one failed batch can answer every caller in it.
pub type Cause = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong in the job cache.
///
/// `location` is the SQLite path or a password-free PostgreSQL address with its schema.
/// The database's own message is part of the text, so `to_string()` alone says why.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CacheError {
    /// The configuration cannot be used (a connection string that does not parse, a bad schema name).
    #[error("invalid job cache config for {location}: {reason}")]
    Config {
        /// The backend the config was for.
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The database could not be opened or reached, or its tables could not be created.
    #[error("cannot open job cache at {location}: {cause}")]
    Open {
        /// The path or database.
        location: String,
        /// The database's error.
        cause: Cause,
    },
    /// A job with this jid is already stored; a jid must never be reused.
    #[error("job {jid} is already in the job cache at {location}")]
    DuplicateJid {
        /// The jid that was reused.
        jid: String,
        /// The path or database.
        location: String,
    },
    /// A return names a job the cache does not hold (never saved, or already pruned).
    #[error("return from minion {id} names job {jid}, which is not in the job cache at {location}")]
    UnknownJid {
        /// The jid the return named.
        jid: String,
        /// The minion that sent it.
        id: String,
        /// The path or database.
        location: String,
    },
    /// A write was not committed (disk full, read-only file, database down); nothing of it was stored.
    #[error("cannot write {what} to job cache at {location}: {cause}")]
    Write {
        /// What was being written, naming its jid and minion id.
        what: String,
        /// The path or database.
        location: String,
        /// The database's error.
        cause: Cause,
    },
    /// A read failed.
    #[error("cannot read {what} from job cache at {location}: {cause}")]
    Read {
        /// What was being read.
        what: String,
        /// The path or database.
        location: String,
        /// The database's error.
        cause: Cause,
    },
    /// A stored row could not be decoded (a column that is not the JSON or time it should be).
    #[error("corrupt {what} in job cache at {location}: {reason}")]
    Corrupt {
        /// What was being read.
        what: String,
        /// The path or database.
        location: String,
        /// What was wrong with the row.
        reason: String,
    },
    /// The writer has stopped, so nothing more can be stored through this handle.
    #[error("job cache writer for {location} has stopped")]
    WriterStopped {
        /// The path or database.
        location: String,
    },
}

/// Why a read failed, before it is given its context.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The database call failed.
    Db(Cause),
    /// A row did not decode.
    Corrupt(String),
}

impl ReadError {
    /// The error for a failed read of `what` from `location`.
    pub(crate) fn into_cache_error(self, what: impl Into<String>, location: &str) -> CacheError {
        let what = what.into();
        let location = location.to_owned();
        match self {
            ReadError::Db(cause) => CacheError::Read {
                what,
                location,
                cause,
            },
            ReadError::Corrupt(reason) => CacheError::Corrupt {
                what,
                location,
                reason,
            },
        }
    }
}

impl From<rusqlite::Error> for ReadError {
    fn from(e: rusqlite::Error) -> Self {
        ReadError::Db(Arc::new(e))
    }
}

impl From<tokio_postgres::Error> for ReadError {
    fn from(e: tokio_postgres::Error) -> Self {
        ReadError::Db(Arc::new(e))
    }
}

impl From<tokio::task::JoinError> for ReadError {
    fn from(e: tokio::task::JoinError) -> Self {
        ReadError::Db(Arc::new(e))
    }
}
