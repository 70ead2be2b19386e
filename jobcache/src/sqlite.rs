//! SQLite backend: one writer thread committing queued writes in batches, and pooled read
//! connections used on tokio's blocking pool. WAL mode lets reads run while the writer commits.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{
    Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior, params,
};
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::error::{Cause, ReadError};
use crate::filter::LoadMatcher;
use crate::writer::{Applied, MAX_BATCH, QUEUE_DEPTH, Request, Stats, answer_batch};
use crate::{CacheError, JobFilter, JobRecord, JobSummary, ReturnRecord, from_micros, to_micros};

/// The tables; times are microseconds since the epoch, JSON is stored as text.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jobs (
    jid        TEXT PRIMARY KEY,
    load       TEXT NOT NULL,
    minions    TEXT NOT NULL,
    start_time INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_start_time ON jobs (start_time);
CREATE TABLE IF NOT EXISTS returns (
    seq       INTEGER PRIMARY KEY,
    jid       TEXT NOT NULL,
    id        TEXT NOT NULL,
    fun       TEXT NOT NULL,
    fun_args  TEXT NOT NULL,
    ret       TEXT NOT NULL,
    retcode   INTEGER NOT NULL,
    success   INTEGER NOT NULL,
    out       TEXT,
    metadata  TEXT,
    stored_at INTEGER NOT NULL,
    UNIQUE (jid, id)
);
CREATE TABLE IF NOT EXISTS last_jid (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    jid TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS health (
    one        INTEGER PRIMARY KEY CHECK (one = 1),
    checked_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS mine (
    minion_id TEXT PRIMARY KEY,
    data      TEXT NOT NULL
);
";

/// Any error, on the way to becoming a [`Cause`].
type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// How long a connection waits for another one's lock before failing with `SQLITE_BUSY`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How many idle read connections are kept.
const MAX_IDLE_READERS: usize = 8;

/// Opens the database at `path` (creating it and its folder if missing), starts the writer thread,
/// and returns its queue and the read side.
pub(crate) async fn open(
    path: PathBuf,
    stats: Arc<Stats>,
    stopping: watch::Sender<()>,
) -> Result<(mpsc::Sender<Request>, Reader), CacheError> {
    let location = path.display().to_string();
    let open_error = |cause: Cause| CacheError::Open {
        location: location.clone(),
        cause,
    };
    let writer_path = path.clone();
    let conn = tokio::task::spawn_blocking(move || open_writer(&writer_path))
        .await
        .map_err(|e| open_error(Arc::new(e)))?
        .map_err(|e| open_error(Cause::from(e)))?;

    let (tx, rx) = mpsc::channel(QUEUE_DEPTH);
    let thread_location = location.clone();
    std::thread::Builder::new()
        .name("saltq-jobcache-sqlite".to_owned())
        .spawn(move || {
            writer_loop(conn, rx, &thread_location, &stats);
            drop(stopping);
        })
        .map_err(|e| open_error(Arc::new(e)))?;
    let reader = Reader {
        path,
        idle: Arc::new(Mutex::new(Vec::new())),
    };
    Ok((tx, reader))
}

/// Opens the writer's connection: WAL, `synchronous=NORMAL`, tables created.
fn open_writer(path: &Path) -> Result<Connection, BoxError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Two processes opening a new file at once (two masters starting together) can find it
    // locked while the other switches it to WAL, a step SQLite does not always send through
    // the busy handler: retry the set-up for as long as the busy timeout would have waited.
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    let mode = loop {
        match set_up(&conn) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            other => break other?,
        }
    };
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(path = %path.display(), %mode, "job cache is not in WAL mode; reads will wait for writes");
    }
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

/// WAL, `synchronous=NORMAL`, the tables; the journal mode SQLite settled on. A new file
/// gets `auto_vacuum=INCREMENTAL` (it only takes before the first table), so that pruning
/// old jobs can give their pages back to the file system ([`reclaim`]).
fn set_up(conn: &Connection) -> rusqlite::Result<String> {
    let fresh: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
    if fresh == 0 {
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    }
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.execute_batch(SCHEMA)?;
    Ok(mode)
}

/// The writer thread: takes everything queued (up to [`MAX_BATCH`]) into one transaction,
/// commits, answers each caller; stops when every handle is gone and the queue is empty.
fn writer_loop(
    mut conn: Connection,
    mut rx: mpsc::Receiver<Request>,
    location: &str,
    stats: &Stats,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.blocking_recv_many(&mut batch, MAX_BATCH) > 0 {
        let pruning = batch.iter().any(|r| matches!(r, Request::Prune(..)));
        let result = write_batch(&mut conn, &batch);
        if pruning && result.is_ok() {
            reclaim(&conn, location);
        }
        answer_batch(batch.drain(..), result, location, stats);
    }
    if let Err((_, e)) = conn.close() {
        tracing::warn!(%location, error = %e, "job cache did not close cleanly");
    }
    tracing::debug!(%location, "job cache writer stopped");
}

/// After a prune: returns the freed pages to the file system and truncates the write-ahead
/// log, so the job cache shrinks back once `keep_jobs_seconds` has passed (a file made before
/// `auto_vacuum` was set keeps its size and reuses the pages instead). Failing is harmless:
/// the pages stay free for the next writes, and the log is checkpointed as usual.
fn reclaim(conn: &Connection, location: &str) {
    // Each pragma does its work as it is stepped: step both to the end.
    let run = |sql: &str| -> rusqlite::Result<()> {
        let mut stmt = conn.prepare(sql)?;
        let mut rows = stmt.query([])?;
        while rows.next()?.is_some() {}
        Ok(())
    };
    let result =
        run("PRAGMA incremental_vacuum").and_then(|()| run("PRAGMA wal_checkpoint(TRUNCATE)"));
    if let Err(e) = result {
        tracing::debug!(%location, error = %e, "job cache: pruned pages not given back yet");
    }
}

/// Applies a batch in one transaction; any database error rolls all of it back.
fn write_batch(conn: &mut Connection, batch: &[Request]) -> Result<Vec<Applied>, Cause> {
    try_write_batch(conn, batch).map_err(|e| Arc::new(e) as Cause)
}

/// [`write_batch`] with the database's own error.
fn try_write_batch(conn: &mut Connection, batch: &[Request]) -> rusqlite::Result<Vec<Applied>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let applied = batch
        .iter()
        .map(|request| apply(&tx, request))
        .collect::<Result<Vec<_>, _>>()?;
    tx.commit()?;
    Ok(applied)
}

/// Applies one write inside the batch's transaction.
fn apply(tx: &Transaction<'_>, request: &Request) -> rusqlite::Result<Applied> {
    match request {
        Request::SaveJob(job, _) => {
            let minions = Value::from(job.minions.as_slice()).to_string();
            let inserted = tx
                .prepare_cached(
                    "INSERT INTO jobs (jid, load, minions, start_time) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (jid) DO NOTHING",
                )?
                .execute(params![
                    job.jid,
                    job.load.to_string(),
                    minions,
                    to_micros(job.start_time)
                ])?;
            if inserted == 0 {
                return Ok(Applied::Duplicate);
            }
            raise_last_jid(tx, &job.jid)?;
            Ok(Applied::Done)
        }
        Request::StoreReturn(ret, _) => {
            if !tx
                .prepare_cached("SELECT 1 FROM jobs WHERE jid = ?1")?
                .exists([&ret.jid])?
            {
                return Ok(Applied::MissingJob);
            }
            let inserted = tx
                .prepare_cached(
                    "INSERT INTO returns (jid, id, fun, fun_args, ret, retcode, success, out, metadata, stored_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                     ON CONFLICT (jid, id) DO NOTHING",
                )?
                .execute(params![
                    ret.jid,
                    ret.id,
                    ret.fun.to_string(),
                    ret.fun_args.to_string(),
                    ret.ret.to_string(),
                    ret.retcode,
                    ret.success,
                    ret.out,
                    ret.metadata.as_ref().map(Value::to_string),
                    to_micros(ret.stored_at),
                ])?;
            Ok(if inserted == 0 {
                Applied::Duplicate
            } else {
                Applied::Done
            })
        }
        Request::RecordJid(jid, _) => {
            raise_last_jid(tx, jid)?;
            Ok(Applied::Done)
        }
        Request::Prune(before, _) => {
            let before = to_micros(*before);
            tx.prepare_cached(
                "DELETE FROM returns WHERE jid IN (SELECT jid FROM jobs WHERE start_time < ?1)",
            )?
            .execute([before])?;
            let pruned = tx
                .prepare_cached("DELETE FROM jobs WHERE start_time < ?1")?
                .execute([before])?;
            Ok(Applied::Pruned(pruned))
        }
        Request::AddMinions(jid, add, _) => {
            let have: Option<String> = tx
                .prepare_cached("SELECT minions FROM jobs WHERE jid = ?1")?
                .query_row([jid], |r| r.get(0))
                .optional()?;
            let Some(have) = have else {
                return Ok(Applied::MissingJob);
            };
            let mut minions: Vec<String> = serde_json::from_str(&have).unwrap_or_default();
            if add.iter().all(|m| minions.contains(m)) {
                return Ok(Applied::Done);
            }
            minions.extend(add.iter().cloned());
            minions.sort();
            minions.dedup();
            tx.prepare_cached("UPDATE jobs SET minions = ?2 WHERE jid = ?1")?
                .execute(params![jid, Value::from(minions.as_slice()).to_string()])?;
            Ok(Applied::Done)
        }
        Request::CheckWritable(_) => {
            tx.prepare_cached(
                "INSERT INTO health (one, checked_at) VALUES (1, ?1)
                 ON CONFLICT (one) DO UPDATE SET checked_at = excluded.checked_at",
            )?
            .execute([to_micros(Utc::now())])?;
            Ok(Applied::Done)
        }
    }
}

/// Raises the persisted last jid to `jid` if that is larger (jids compare as strings).
fn raise_last_jid(tx: &Transaction<'_>, jid: &str) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO last_jid (one, jid) VALUES (1, ?1)
         ON CONFLICT (one) DO UPDATE SET jid = max(jid, excluded.jid)",
    )?
    .execute([jid])?;
    Ok(())
}

/// The read side: connections opened on demand, kept idle for reuse, used on the blocking pool.
pub(crate) struct Reader {
    /// The database file.
    path: PathBuf,
    /// Idle connections; a read takes one (or opens one) and puts it back.
    idle: Arc<Mutex<Vec<Connection>>>,
}

impl Reader {
    /// The database file (the mine opens its own write connections on it).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` with a read connection on the blocking pool.
    pub(crate) async fn with_conn<T, F>(&self, f: F) -> Result<T, ReadError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, ReadError> + Send + 'static,
    {
        let path = self.path.clone();
        let idle = self.idle.clone();
        tokio::task::spawn_blocking(move || {
            let pooled = idle.lock().ok().and_then(|mut idle| idle.pop());
            let conn = match pooled {
                Some(conn) => conn,
                None => open_reader(&path)?,
            };
            let result = f(&conn);
            if let Ok(mut idle) = idle.lock()
                && idle.len() < MAX_IDLE_READERS
            {
                idle.push(conn);
            }
            result
        })
        .await?
    }

    /// The job with this jid, if stored.
    pub(crate) async fn get_job(&self, jid: &str) -> Result<Option<JobRecord>, ReadError> {
        let jid = jid.to_owned();
        self.with_conn(move |conn| {
            let row = conn
                .prepare_cached("SELECT jid, load, minions, start_time FROM jobs WHERE jid = ?1")?
                .query_row([&jid], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
                })
                .optional()?;
            row.map(decode_job).transpose()
        })
        .await
    }

    /// The returns of a job in stored order.
    pub(crate) async fn get_returns(&self, jid: &str) -> Result<Vec<ReturnRecord>, ReadError> {
        let jid = jid.to_owned();
        self.with_conn(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT jid, id, fun, fun_args, ret, retcode, success, out, metadata, stored_at
                 FROM returns WHERE jid = ?1 ORDER BY seq",
            )?;
            let mut rows = stmt.query([&jid])?;
            let mut returns = Vec::new();
            while let Some(row) = rows.next()? {
                let stored_at: i64 = row.get(9)?;
                let metadata: Option<String> = row.get(8)?;
                returns.push(ReturnRecord {
                    jid: row.get(0)?,
                    id: row.get(1)?,
                    fun: decode_json(&row.get::<_, String>(2)?, "fun")?,
                    fun_args: decode_json(&row.get::<_, String>(3)?, "fun_args")?,
                    ret: decode_json(&row.get::<_, String>(4)?, "ret")?,
                    retcode: row.get(5)?,
                    success: row.get(6)?,
                    out: row.get(7)?,
                    metadata: metadata.map(|m| decode_json(&m, "metadata")).transpose()?,
                    stored_at: decode_time(stored_at, "stored_at")?,
                });
            }
            Ok(returns)
        })
        .await
    }

    /// The jobs passing `filter`, newest first, with their return counts.
    pub(crate) async fn list_jobs(&self, filter: &JobFilter) -> Result<Vec<JobSummary>, ReadError> {
        let matcher = LoadMatcher::new(filter);
        let start = filter.start_time.map_or(i64::MIN, to_micros);
        let end = filter.end_time.map_or(i64::MAX, to_micros);
        let limit = filter.limit.unwrap_or(usize::MAX);
        // Without globs the database applies the limit; with them, rows are read until enough match.
        let sql_limit = match (matcher.is_empty(), filter.limit) {
            (true, Some(n)) => i64::try_from(n).unwrap_or(i64::MAX),
            _ => -1,
        };
        self.with_conn(move |conn| {
            let mut jobs = Vec::new();
            if limit == 0 {
                return Ok(Vec::new());
            }
            let mut stmt = conn.prepare_cached(
                "SELECT jid, load, minions, start_time FROM jobs
                 WHERE start_time >= ?1 AND start_time <= ?2
                 ORDER BY start_time DESC, jid DESC LIMIT ?3",
            )?;
            let mut rows = stmt.query(params![start, end, sql_limit])?;
            while let Some(row) = rows.next()? {
                let job = decode_job((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))?;
                if matcher.matches(&job.load) {
                    jobs.push(job);
                    if jobs.len() >= limit {
                        break;
                    }
                }
            }
            let mut count = conn.prepare_cached("SELECT count(*) FROM returns WHERE jid = ?1")?;
            jobs.into_iter()
                .map(|job| {
                    let returned: i64 = count.query_row([&job.jid], |row| row.get(0))?;
                    Ok(JobSummary {
                        job,
                        returned: usize::try_from(returned).unwrap_or(0),
                    })
                })
                .collect()
        })
        .await
    }

    /// The persisted last jid.
    pub(crate) async fn last_jid(&self) -> Result<Option<String>, ReadError> {
        self.with_conn(|conn| {
            Ok(conn
                .prepare_cached("SELECT jid FROM last_jid WHERE one = 1")?
                .query_row([], |row| row.get(0))
                .optional()?)
        })
        .await
    }
}

/// Opens a read connection on an existing database.
fn open_reader(path: &Path) -> Result<Connection, ReadError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(conn)
}

/// A job from its columns.
fn decode_job(
    (jid, load, minions, start_time): (String, String, String, i64),
) -> Result<JobRecord, ReadError> {
    let minions = match decode_json(&minions, "minions")? {
        Value::Array(items) => items
            .into_iter()
            .map(|m| match m {
                Value::String(s) => Ok(s),
                other => Err(ReadError::Corrupt(format!(
                    "minions of job {jid}: {other} is not a minion id"
                ))),
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(ReadError::Corrupt(format!(
                "minions of job {jid}: {other} is not a list"
            )));
        }
    };
    Ok(JobRecord {
        load: decode_json(&load, "load")?,
        minions,
        start_time: decode_time(start_time, "start_time")?,
        jid,
    })
}

/// A JSON column's value.
fn decode_json(text: &str, column: &str) -> Result<Value, ReadError> {
    serde_json::from_str(text)
        .map_err(|e| ReadError::Corrupt(format!("column {column} is not JSON: {e}")))
}

/// A time column's value.
fn decode_time(micros: i64, column: &str) -> Result<DateTime<Utc>, ReadError> {
    from_micros(micros)
        .ok_or_else(|| ReadError::Corrupt(format!("column {column} is out of range: {micros}")))
}
