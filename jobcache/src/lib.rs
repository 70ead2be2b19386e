//! The master's job cache: every job's publish load and every minion's return, kept for
//! `keep_jobs_seconds`, in embedded SQLite (the default) or a PostgreSQL database that several
//! masters share.
//!
//! Writes go through one queue per handle. A writer takes everything queued (up to 512) into
//! one transaction and answers each caller once it has committed, so a burst of returns costs a
//! few transactions and a caller that is told `Stored` may acknowledge the return. Reads run
//! beside the writer and never block the async runtime.
//!
//! SQLite runs in WAL mode with `synchronous=NORMAL`: a committed write survives the master
//! crashing, but the last transactions before a power loss may be lost.

mod error;
mod filter;
mod mine;
mod postgres;
mod sqlite;
mod writer;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot, watch};

pub use crate::error::{CacheError, Cause};
pub use crate::mine::MineData;
use crate::writer::{Request, Stats};

/// A job as the master published it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    /// The job id (20 digits, `%Y%m%d%H%M%S%f`); unique in the cache.
    pub jid: String,
    /// Salt's publish load: `tgt`, `tgt_type`, `fun`, `arg`, `kwarg`, `user`, `ret`, `metadata`...
    pub load: serde_json::Value,
    /// The minions expected to return, so `jobs.list_job` can tell who has not.
    pub minions: Vec<String>,
    /// When the job was published; stored to the microsecond, used by time filters and pruning.
    pub start_time: DateTime<Utc>,
}

/// One minion's return for one job.
#[derive(Debug, Clone, PartialEq)]
pub struct ReturnRecord {
    /// The job this answers.
    pub jid: String,
    /// The minion that returned.
    pub id: String,
    /// The function run: a string, or a list for a multi-function job.
    pub fun: serde_json::Value,
    /// The arguments it was run with.
    pub fun_args: serde_json::Value,
    /// What it returned (Salt's `return`).
    pub ret: serde_json::Value,
    /// Its exit code (1 when the function failed).
    pub retcode: i32,
    /// Whether it succeeded.
    pub success: bool,
    /// The outputter the minion suggests, if any.
    pub out: Option<String>,
    /// The job's metadata echoed back, if any.
    pub metadata: Option<serde_json::Value>,
    /// When the master received it; stored to the microsecond.
    pub stored_at: DateTime<Utc>,
}

/// What became of a return handed to [`JobCache::store_return`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOutcome {
    /// It is committed; the master may acknowledge it.
    Stored,
    /// That minion had already returned for that job: this one was dropped (a possible replay).
    Duplicate,
}

/// The filters of `jobs.list_jobs`; an empty filter lists every job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobFilter {
    /// Comma-separated globs on the function (any function of a multi-function job), as `search_function`.
    pub function: Option<String>,
    /// Comma-separated globs on the target (any entry of a list target), as `search_target`.
    pub target: Option<String>,
    /// Only jobs started at or after this time.
    pub start_time: Option<DateTime<Utc>>,
    /// Only jobs started at or before this time.
    pub end_time: Option<DateTime<Utc>>,
    /// At most this many jobs (the newest).
    pub limit: Option<usize>,
}

/// A job listed by [`JobCache::list_jobs`].
#[derive(Debug, Clone, PartialEq)]
pub struct JobSummary {
    /// The job as published.
    pub job: JobRecord,
    /// How many minions have returned so far.
    pub returned: usize,
}

/// Where the job cache lives.
#[derive(Clone, PartialEq, Eq)]
pub enum CacheConfig {
    /// An SQLite file on this master, created (with its folder) if missing.
    Sqlite {
        /// The database file.
        path: PathBuf,
    },
    /// A PostgreSQL database, which several masters may share.
    Postgres {
        /// A libpq connection string (`host=127.0.0.1 user=postgres dbname=salt`) or a `postgres://` URL.
        url: String,
        /// The schema holding the tables, created if missing; `None` uses the connection's `search_path`.
        schema: Option<String>,
    },
}

impl fmt::Debug for CacheConfig {
    // Hand-written so that a password in the connection string never reaches a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheConfig::Sqlite { path } => f.debug_struct("Sqlite").field("path", path).finish(),
            CacheConfig::Postgres { url, schema } => f
                .debug_struct("Postgres")
                .field("url", &postgres::describe_url(url))
                .field("schema", schema)
                .finish(),
        }
    }
}

/// Counters for metrics and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Write transactions committed by this handle's writer (one per batch).
    pub transactions: u64,
    /// Write transactions that failed and were rolled back (every caller in them got an error).
    pub failed_transactions: u64,
    /// Returns stored.
    pub returns_stored: u64,
    /// Returns dropped because that minion had already returned for that job.
    pub duplicate_returns: u64,
}

/// A handle on the job cache: cheap to clone, shareable across tasks.
///
/// The writer stops when the last clone is dropped, after finishing what was queued.
#[derive(Clone)]
pub struct JobCache {
    inner: Arc<Inner>,
}

/// What the clones of a [`JobCache`] share.
struct Inner {
    /// The writer's queue.
    writer: mpsc::Sender<Request>,
    /// The read side of the backend.
    reader: Reader,
    /// Counters, shared with the writer.
    stats: Arc<Stats>,
    /// The path or password-free database address, for messages.
    location: String,
    /// Closed when the writer has stopped and released the database.
    stopped: watch::Receiver<()>,
}

/// The read side of a backend.
enum Reader {
    /// Pooled SQLite connections used on the blocking pool.
    Sqlite(sqlite::Reader),
    /// A PostgreSQL connection, reconnected when lost.
    Postgres(postgres::Reader),
}

impl fmt::Debug for JobCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobCache")
            .field("location", &self.inner.location)
            .finish_non_exhaustive()
    }
}

impl JobCache {
    /// Opens the cache, creating its tables if missing, and starts its writer.
    ///
    /// Must be called inside a tokio runtime.
    pub async fn open(cfg: &CacheConfig) -> Result<JobCache, CacheError> {
        let stats = Arc::new(Stats::default());
        let (stopping, stopped) = watch::channel(());
        let (writer, reader, location) = match cfg {
            CacheConfig::Sqlite { path } => {
                let (writer, reader) = sqlite::open(path.clone(), stats.clone(), stopping).await?;
                (writer, Reader::Sqlite(reader), path.display().to_string())
            }
            CacheConfig::Postgres { url, schema } => {
                let (writer, reader, location) =
                    postgres::open(url, schema.as_deref(), stats.clone(), stopping).await?;
                (writer, Reader::Postgres(reader), location)
            }
        };
        tracing::debug!(%location, "job cache open");
        Ok(JobCache {
            inner: Arc::new(Inner {
                writer,
                reader,
                stats,
                location,
                stopped,
            }),
        })
    }

    /// Drops this handle; once every clone is gone, waits until the writer has committed what
    /// was queued and released the database (for a clean shutdown or a restart in tests).
    pub async fn close(self) {
        let mut stopped = self.inner.stopped.clone();
        drop(self);
        // `changed` fails once the writer has dropped its end; nothing is ever sent.
        while stopped.changed().await.is_ok() {}
    }

    /// The path or password-free database address of this cache, for messages.
    pub fn location(&self) -> &str {
        &self.inner.location
    }

    /// A snapshot of this handle's counters.
    pub fn stats(&self) -> CacheStats {
        self.inner.stats.snapshot()
    }

    /// Stores a new job. A jid already stored is refused with [`CacheError::DuplicateJid`].
    ///
    /// The job's jid also raises the persisted last jid (as [`JobCache::record_jid`] does).
    pub async fn save_job(&self, job: &JobRecord) -> Result<(), CacheError> {
        self.submit(|reply| Request::SaveJob(job.clone(), reply))
            .await
    }

    /// Stores a return and resolves once it is committed.
    ///
    /// A second return from the same minion for the same job is dropped ([`StoreOutcome::Duplicate`]);
    /// a return for a job the cache does not hold is refused with [`CacheError::UnknownJid`].
    pub async fn store_return(&self, ret: ReturnRecord) -> Result<StoreOutcome, CacheError> {
        self.submit(|reply| Request::StoreReturn(ret, reply)).await
    }

    /// Adds `minions` to the expected minions of stored job `jid` (once each, the whole list
    /// then sorted as Salt's `get_load` answers `Minions`), as a top master records what a syndic expects (Salt's
    /// `save_minions(jid, minions, syndic_id)`, which `get_load` merges into `Minions`).
    /// False when the cache holds no such job.
    pub async fn add_minions(&self, jid: &str, minions: &[String]) -> Result<bool, CacheError> {
        let (jid, minions) = (jid.to_owned(), minions.to_vec());
        self.submit(|reply| Request::AddMinions(jid, minions, reply))
            .await
    }

    /// The job with this jid, if stored.
    pub async fn get_job(&self, jid: &str) -> Result<Option<JobRecord>, CacheError> {
        let result = match &self.inner.reader {
            Reader::Sqlite(r) => r.get_job(jid).await,
            Reader::Postgres(r) => r.get_job(jid).await,
        };
        result.map_err(|e| e.into_cache_error(format!("job {jid}"), &self.inner.location))
    }

    /// The returns stored for a job, in the order they were stored.
    pub async fn get_returns(&self, jid: &str) -> Result<Vec<ReturnRecord>, CacheError> {
        let result = match &self.inner.reader {
            Reader::Sqlite(r) => r.get_returns(jid).await,
            Reader::Postgres(r) => r.get_returns(jid).await,
        };
        result
            .map_err(|e| e.into_cache_error(format!("returns of job {jid}"), &self.inner.location))
    }

    /// The jobs passing `filter`, newest first, each with how many minions have returned.
    pub async fn list_jobs(&self, filter: &JobFilter) -> Result<Vec<JobSummary>, CacheError> {
        let result = match &self.inner.reader {
            Reader::Sqlite(r) => r.list_jobs(filter).await,
            Reader::Postgres(r) => r.list_jobs(filter).await,
        };
        result.map_err(|e| e.into_cache_error("the job list", &self.inner.location))
    }

    /// The largest jid ever recorded or saved here. It survives restarts and pruning, so the
    /// jid generator never issues one again.
    pub async fn last_jid(&self) -> Result<Option<String>, CacheError> {
        let result = match &self.inner.reader {
            Reader::Sqlite(r) => r.last_jid().await,
            Reader::Postgres(r) => r.last_jid().await,
        };
        result.map_err(|e| e.into_cache_error("the last jid", &self.inner.location))
    }

    /// Whether other masters may share this cache (PostgreSQL): they must then take their
    /// jids from it ([`JobCache::allocate_jid`]) rather than from a clock of their own.
    pub fn is_shared(&self) -> bool {
        matches!(self.inner.reader, Reader::Postgres(_))
    }

    /// Takes the next jid from the cache: `candidate` (a jid made from the current time), or a
    /// microsecond past the last jid any master took when `candidate` is not newer. Strictly
    /// increasing across every master sharing the cache and across restarts.
    ///
    /// The SQLite cache belongs to one master, whose own generator is authoritative: there it
    /// records the candidate as the last jid and returns it unchanged.
    pub async fn allocate_jid(&self, candidate: &str) -> Result<String, CacheError> {
        match &self.inner.reader {
            Reader::Postgres(r) => r
                .allocate_jid(candidate)
                .await
                .map_err(|e| e.into_cache_error("a new jid", &self.inner.location)),
            Reader::Sqlite(_) => {
                self.record_jid(candidate).await?;
                Ok(candidate.to_owned())
            }
        }
    }

    /// Persists `jid` as the last issued one, unless a larger one is already recorded.
    pub async fn record_jid(&self, jid: &str) -> Result<(), CacheError> {
        let jid = jid.to_owned();
        self.submit(|reply| Request::RecordJid(jid, reply)).await
    }

    /// Deletes the jobs started before `older_than`, with their returns (`keep_jobs_seconds`);
    /// returns how many jobs went. The last jid is kept.
    pub async fn prune(&self, older_than: DateTime<Utc>) -> Result<usize, CacheError> {
        self.submit(|reply| Request::Prune(older_than, reply)).await
    }

    /// Commits a small write, for readiness probes: an error means new jobs must be refused.
    pub async fn check_writable(&self) -> Result<(), CacheError> {
        self.submit(Request::CheckWritable).await
    }

    /// Queues a write and waits until its batch has committed or failed.
    async fn submit<T>(
        &self,
        make: impl FnOnce(writer::Reply<T>) -> Request,
    ) -> Result<T, CacheError> {
        let (reply, answer) = oneshot::channel();
        let stopped = || CacheError::WriterStopped {
            location: self.inner.location.clone(),
        };
        self.inner
            .writer
            .send(make(reply))
            .await
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// A time as microseconds since the epoch, the resolution both backends store.
fn to_micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

/// The time `micros` microseconds after the epoch, if representable.
fn from_micros(micros: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_micros(micros)
}
