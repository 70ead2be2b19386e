//! PostgreSQL backend, for several masters sharing one cache: tables created under an advisory
//! lock, one multi-row statement per batch of returns, repeats settled by the primary key, and
//! connections re-established after the database comes back.

use std::collections::{HashMap, HashSet};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio::sync::{Mutex, mpsc, watch};
use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, NoTls, Row, Statement, Transaction};

use crate::error::{Cause, ReadError};
use crate::filter::LoadMatcher;
use crate::writer::{Applied, MAX_BATCH, QUEUE_DEPTH, Request, Stats, answer_batch};
use crate::{CacheError, JobFilter, JobRecord, JobSummary, ReturnRecord};

/// Serialises table creation between masters opening the same database at once ("saltqjc1").
const SCHEMA_LOCK_KEY: i64 = 0x7361_6c74_716a_6331;

/// How long a connection attempt may take when the connection string does not say.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How many times a batch is tried when the database aborts it for a reason a retry cures
/// (a deadlock with another master, a job pruned by another master meanwhile).
const BATCH_ATTEMPTS: usize = 3;

/// A password-free description of a connection string, for messages and `Debug`.
pub(crate) fn describe_url(url: &str) -> String {
    match Config::from_str(url) {
        Ok(config) => describe(&config),
        Err(_) => "postgres (unparsable connection string)".to_owned(),
    }
}

/// `postgres://user@host:port/dbname`, without the password.
fn describe(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        #[cfg(unix)]
        Some(Host::Unix(dir)) => dir.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or_default();
    let dbname = config.get_dbname().unwrap_or(user);
    format!("postgres://{user}@{host}:{port}/{dbname}")
}

/// `schema` as a quoted SQL identifier, or why it cannot be one.
fn quote_schema(schema: &str) -> Result<String, String> {
    if schema.is_empty() || schema.len() > 63 || schema.contains('\0') {
        return Err(format!(
            "schema name {schema:?} must be 1 to 63 bytes without NUL"
        ));
    }
    Ok(format!("\"{}\"", schema.replace('"', "\"\"")))
}

/// The SQL, with table names qualified by the configured schema.
struct Sql {
    /// Creates the schema and tables if missing.
    create: String,
    /// Stores a job unless its jid is taken.
    save_job: String,
    /// Merges minions into a job's expected ones (a syndic's), sorted as Salt's `get_load`.
    add_minions: String,
    /// Raises the last jid.
    raise_last_jid: String,
    /// Stores a batch of returns given as arrays, skipping unknown jobs and repeats; returns what it stored.
    insert_returns: String,
    /// Which of the given jids are stored jobs.
    existing_jobs: String,
    /// Deletes old jobs (their returns go by cascade).
    prune: String,
    /// Writes the health row.
    health: String,
    /// Reads one job.
    get_job: String,
    /// Reads a job's returns in stored order.
    get_returns: String,
    /// Lists jobs in a time range, newest first.
    list_jobs: String,
    /// Counts the returns of the given jobs.
    count_returns: String,
    /// Reads the last jid.
    last_jid: String,
    /// Takes the next jid for every master sharing this cache: the candidate, or a microsecond
    /// past the last one when that is not older; one statement, so the row lock orders masters.
    allocate_jid: String,
    /// The mine's table, schema-qualified (see `mine.rs`).
    pub(crate) mine: String,
}

impl Sql {
    /// The statements for tables in `schema` (quoted), or in the `search_path` when `None`.
    fn new(schema: Option<&str>) -> Sql {
        let prefix = schema.map(|s| format!("{s}.")).unwrap_or_default();
        let create_schema = schema
            .map(|s| format!("CREATE SCHEMA IF NOT EXISTS {s};"))
            .unwrap_or_default();
        let jobs = format!("{prefix}saltq_jobs");
        let returns = format!("{prefix}saltq_returns");
        let last_jid = format!("{prefix}saltq_last_jid");
        let health = format!("{prefix}saltq_health");
        let mine = format!("{prefix}saltq_mine");
        Sql {
            create: format!(
                "SELECT pg_advisory_xact_lock({SCHEMA_LOCK_KEY});
                 {create_schema}
                 CREATE TABLE IF NOT EXISTS {jobs} (
                     jid        text COLLATE \"C\" PRIMARY KEY,
                     load       json NOT NULL,
                     minions    text[] NOT NULL,
                     start_time timestamptz NOT NULL
                 );
                 CREATE INDEX IF NOT EXISTS saltq_jobs_by_start_time ON {jobs} (start_time);
                 CREATE TABLE IF NOT EXISTS {returns} (
                     seq       bigint GENERATED ALWAYS AS IDENTITY,
                     jid       text COLLATE \"C\" NOT NULL REFERENCES {jobs} (jid) ON DELETE CASCADE,
                     id        text NOT NULL,
                     fun       json NOT NULL,
                     fun_args  json NOT NULL,
                     ret       json NOT NULL,
                     retcode   integer NOT NULL,
                     success   boolean NOT NULL,
                     out       text,
                     metadata  json,
                     stored_at timestamptz NOT NULL,
                     PRIMARY KEY (jid, id)
                 );
                 CREATE TABLE IF NOT EXISTS {last_jid} (
                     one boolean PRIMARY KEY DEFAULT true CHECK (one),
                     jid text COLLATE \"C\" NOT NULL
                 );
                 CREATE TABLE IF NOT EXISTS {health} (
                     one        boolean PRIMARY KEY DEFAULT true CHECK (one),
                     checked_at timestamptz NOT NULL
                 );
                 CREATE TABLE IF NOT EXISTS {mine} (
                     minion_id text COLLATE \"C\" PRIMARY KEY,
                     data      jsonb NOT NULL
                 );"
            ),
            save_job: format!(
                "INSERT INTO {jobs} (jid, load, minions, start_time) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (jid) DO NOTHING"
            ),
            add_minions: format!(
                "UPDATE {jobs} SET minions = ARRAY(
                     SELECT DISTINCT m COLLATE \"C\" FROM unnest(minions || $2::text[]) AS m ORDER BY 1)
                 WHERE jid = $1"
            ),
            raise_last_jid: format!(
                "INSERT INTO {last_jid} AS l (one, jid) VALUES (true, $1)
                 ON CONFLICT (one) DO UPDATE SET jid = GREATEST(l.jid, EXCLUDED.jid)"
            ),
            insert_returns: format!(
                "INSERT INTO {returns} (jid, id, fun, fun_args, ret, retcode, success, out, metadata, stored_at)
                 SELECT r.jid, r.id, r.fun, r.fun_args, r.ret, r.retcode, r.success, r.out, r.metadata, r.stored_at
                 FROM unnest($1::text[], $2::text[], $3::json[], $4::json[], $5::json[], $6::int4[], $7::bool[],
                             $8::text[], $9::json[], $10::timestamptz[])
                      WITH ORDINALITY AS r(jid, id, fun, fun_args, ret, retcode, success, out, metadata, stored_at, ord)
                 WHERE EXISTS (SELECT 1 FROM {jobs} j WHERE j.jid = r.jid)
                 ORDER BY r.ord
                 ON CONFLICT (jid, id) DO NOTHING
                 RETURNING jid, id"
            ),
            existing_jobs: format!("SELECT jid FROM {jobs} WHERE jid = ANY($1::text[])"),
            prune: format!("DELETE FROM {jobs} WHERE start_time < $1"),
            health: format!(
                "INSERT INTO {health} AS h (one, checked_at) VALUES (true, now())
                 ON CONFLICT (one) DO UPDATE SET checked_at = EXCLUDED.checked_at"
            ),
            get_job: format!("SELECT jid, load, minions, start_time FROM {jobs} WHERE jid = $1"),
            get_returns: format!(
                "SELECT jid, id, fun, fun_args, ret, retcode, success, out, metadata, stored_at
                 FROM {returns} WHERE jid = $1 ORDER BY seq"
            ),
            list_jobs: format!(
                "SELECT jid, load, minions, start_time FROM {jobs}
                 WHERE start_time >= COALESCE($1::timestamptz, '-infinity')
                   AND start_time <= COALESCE($2::timestamptz, 'infinity')
                 ORDER BY start_time DESC, jid DESC
                 LIMIT $3::bigint"
            ),
            count_returns: format!(
                "SELECT jid, count(*) FROM {returns} WHERE jid = ANY($1::text[]) GROUP BY jid"
            ),
            last_jid: format!("SELECT jid FROM {last_jid} WHERE one"),
            // make_timestamp gives a timestamp without time zone, so no session setting can
            // shift the digits on their way through; a caller's jid may carry a `_suffix`,
            // hence left(…, 20).
            allocate_jid: format!(
                "INSERT INTO {last_jid} AS l (one, jid) VALUES (true, $1)
                 ON CONFLICT (one) DO UPDATE SET jid = GREATEST(EXCLUDED.jid, to_char(
                     make_timestamp(substr(l.jid, 1, 4)::int, substr(l.jid, 5, 2)::int,
                                    substr(l.jid, 7, 2)::int, substr(l.jid, 9, 2)::int,
                                    substr(l.jid, 11, 2)::int,
                                    (substr(l.jid, 13, 2) || '.' || substr(l.jid, 15, 6))::float8)
                     + interval '1 microsecond', 'YYYYMMDDHH24MISSUS'))
                 RETURNING jid"
            ),
            mine,
        }
    }
}

/// The database, as every connection of one cache reaches it.
struct Target {
    /// The parsed connection string.
    config: Config,
    /// The password-free address and schema, for messages.
    location: String,
    /// The statements for the configured schema.
    sql: Sql,
}

impl Target {
    /// Opens a connection and drives it on a task of its own.
    async fn connect(&self) -> Result<Client, tokio_postgres::Error> {
        let (client, connection) = self.config.connect(NoTls).await?;
        let location = self.location.clone();
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(%location, error = %e, "job cache database connection lost");
            }
        });
        Ok(client)
    }
}

/// Connects to the database, creates the schema and tables if missing, starts the writer task,
/// and returns its queue, the read side and the location for messages.
pub(crate) async fn open(
    url: &str,
    schema: Option<&str>,
    stats: Arc<Stats>,
    stopping: watch::Sender<()>,
) -> Result<(mpsc::Sender<Request>, Reader, String), CacheError> {
    let mut config = Config::from_str(url).map_err(|e| CacheError::Config {
        location: "postgres".to_owned(),
        reason: e.to_string(),
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("saltq-master");
    }
    let location = match schema {
        Some(schema) => format!("{} (schema {schema})", describe(&config)),
        None => describe(&config),
    };
    let quoted = schema
        .map(quote_schema)
        .transpose()
        .map_err(|reason| CacheError::Config {
            location: location.clone(),
            reason,
        })?;
    let target = Arc::new(Target {
        config,
        location: location.clone(),
        sql: Sql::new(quoted.as_deref()),
    });

    let open_error = |e: tokio_postgres::Error| CacheError::Open {
        location: location.clone(),
        cause: Arc::new(e),
    };
    let mut client = target.connect().await.map_err(open_error)?;
    let tx = client.transaction().await.map_err(open_error)?;
    tx.batch_execute(&target.sql.create)
        .await
        .map_err(open_error)?;
    tx.commit().await.map_err(open_error)?;
    let statements = WriteStatements::prepare(&client, &target.sql)
        .await
        .map_err(open_error)?;

    let (queue, rx) = mpsc::channel(QUEUE_DEPTH);
    let writer = Writer {
        target: target.clone(),
        conn: Some(WriteConn { client, statements }),
        stats,
    };
    tokio::spawn(async move {
        writer.run(rx).await;
        drop(stopping);
    });
    Ok((
        queue,
        Reader {
            target,
            conn: Mutex::new(None),
        },
        location,
    ))
}

/// The writer's prepared statements.
struct WriteStatements {
    save_job: Statement,
    add_minions: Statement,
    raise_last_jid: Statement,
    insert_returns: Statement,
    existing_jobs: Statement,
    prune: Statement,
    health: Statement,
}

impl WriteStatements {
    /// Prepares them on `client`.
    async fn prepare(client: &Client, sql: &Sql) -> Result<WriteStatements, tokio_postgres::Error> {
        Ok(WriteStatements {
            save_job: client.prepare(&sql.save_job).await?,
            add_minions: client.prepare(&sql.add_minions).await?,
            raise_last_jid: client.prepare(&sql.raise_last_jid).await?,
            insert_returns: client.prepare(&sql.insert_returns).await?,
            existing_jobs: client.prepare(&sql.existing_jobs).await?,
            prune: client.prepare(&sql.prune).await?,
            health: client.prepare(&sql.health).await?,
        })
    }
}

/// The writer's connection with its statements.
struct WriteConn {
    client: Client,
    statements: WriteStatements,
}

/// The writer task: one transaction per batch of queued writes.
struct Writer {
    /// The database.
    target: Arc<Target>,
    /// The connection, `None` after it was lost (re-established by the next batch).
    conn: Option<WriteConn>,
    /// Counters shared with the handles.
    stats: Arc<Stats>,
}

impl Writer {
    /// Takes everything queued (up to [`MAX_BATCH`]) into one transaction, answers each caller;
    /// stops when every handle is gone and the queue is empty.
    async fn run(mut self, mut rx: mpsc::Receiver<Request>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
            let result = self.write_batch(&batch).await;
            answer_batch(batch.drain(..), result, &self.target.location, &self.stats);
        }
        tracing::debug!(location = %self.target.location, "job cache writer stopped");
    }

    /// Commits a batch, reconnecting first if the connection was lost, and trying again when
    /// the database aborted it for a reason a retry cures.
    async fn write_batch(&mut self, batch: &[Request]) -> Result<Vec<Applied>, Cause> {
        let mut attempt = 1;
        loop {
            let mut conn = match self.conn.take() {
                Some(conn) if !conn.client.is_closed() => conn,
                _ => {
                    let as_cause = |e: tokio_postgres::Error| Arc::new(e) as Cause;
                    let client = self.target.connect().await.map_err(as_cause)?;
                    let statements = WriteStatements::prepare(&client, &self.target.sql)
                        .await
                        .map_err(as_cause)?;
                    WriteConn { client, statements }
                }
            };
            let result = apply_batch(&mut conn, batch).await;
            if !conn.client.is_closed() {
                self.conn = Some(conn);
            }
            match result {
                Err(e) if attempt < BATCH_ATTEMPTS && is_transient(&e) => {
                    tracing::debug!(location = %self.target.location, error = %e, attempt, "job cache batch aborted, retrying");
                    attempt += 1;
                }
                other => return other.map_err(|e| Arc::new(e) as Cause),
            }
        }
    }
}

/// Whether the database aborted a transaction for a reason that trying again cures: a deadlock
/// or serialisation failure with another master, or a job that another master pruned between
/// the check and the insert of its return (the retry then reports the job unknown).
fn is_transient(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|code| {
        *code == SqlState::T_R_DEADLOCK_DETECTED
            || *code == SqlState::T_R_SERIALIZATION_FAILURE
            || *code == SqlState::FOREIGN_KEY_VIOLATION
    })
}

/// Applies a batch in one transaction: runs of returns as one statement each, other writes one
/// by one, and the last jid raised once at the end (so it is the last lock taken).
async fn apply_batch(
    conn: &mut WriteConn,
    batch: &[Request],
) -> Result<Vec<Applied>, tokio_postgres::Error> {
    let WriteConn {
        client,
        statements: st,
    } = conn;
    let tx = client.transaction().await?;
    let mut applied = Vec::with_capacity(batch.len());
    let mut max_jid: Option<&str> = None;
    let mut i = 0;
    while i < batch.len() {
        let run: Vec<&ReturnRecord> = batch[i..]
            .iter()
            .map_while(|request| match request {
                Request::StoreReturn(ret, _) => Some(ret),
                _ => None,
            })
            .collect();
        if !run.is_empty() {
            applied.extend(store_returns(&tx, st, &run).await?);
            i += run.len();
            continue;
        }
        let outcome = match &batch[i] {
            Request::SaveJob(job, _) => {
                let inserted = tx
                    .execute(
                        &st.save_job,
                        &[&job.jid, &job.load, &job.minions, &job.start_time],
                    )
                    .await?;
                if inserted == 0 {
                    Applied::Duplicate
                } else {
                    max_jid = max_jid.max(Some(job.jid.as_str()));
                    Applied::Done
                }
            }
            Request::RecordJid(jid, _) => {
                max_jid = max_jid.max(Some(jid.as_str()));
                Applied::Done
            }
            Request::Prune(before, _) => {
                let pruned = tx.execute(&st.prune, &[before]).await?;
                Applied::Pruned(usize::try_from(pruned).unwrap_or(usize::MAX))
            }
            Request::CheckWritable(_) => {
                tx.execute(&st.health, &[]).await?;
                Applied::Done
            }
            Request::AddMinions(jid, add, _) => {
                if tx.execute(&st.add_minions, &[jid, add]).await? == 0 {
                    Applied::MissingJob
                } else {
                    Applied::Done
                }
            }
            // Handled as a run above.
            Request::StoreReturn(..) => Applied::Done,
        };
        applied.push(outcome);
        i += 1;
    }
    if let Some(jid) = max_jid {
        tx.execute(&st.raise_last_jid, &[&jid]).await?;
    }
    tx.commit().await?;
    Ok(applied)
}

/// Stores a run of returns with one statement; says for each whether it was stored, repeated
/// or for an unknown job.
async fn store_returns(
    tx: &Transaction<'_>,
    st: &WriteStatements,
    returns: &[&ReturnRecord],
) -> Result<Vec<Applied>, tokio_postgres::Error> {
    // Only the first of several returns with the same (jid, id) in this run goes to the
    // database; the others share its fate.
    let mut first: HashMap<(&str, &str), usize> = HashMap::with_capacity(returns.len());
    let mut unique: Vec<&ReturnRecord> = Vec::with_capacity(returns.len());
    let mut slots = Vec::with_capacity(returns.len());
    for ret in returns {
        let slot = *first
            .entry((ret.jid.as_str(), ret.id.as_str()))
            .or_insert_with(|| {
                unique.push(ret);
                unique.len() - 1
            });
        slots.push(slot);
    }

    let jids: Vec<&str> = unique.iter().map(|r| r.jid.as_str()).collect();
    let ids: Vec<&str> = unique.iter().map(|r| r.id.as_str()).collect();
    let funs: Vec<&Value> = unique.iter().map(|r| &r.fun).collect();
    let fun_args: Vec<&Value> = unique.iter().map(|r| &r.fun_args).collect();
    let rets: Vec<&Value> = unique.iter().map(|r| &r.ret).collect();
    let retcodes: Vec<i32> = unique.iter().map(|r| r.retcode).collect();
    let successes: Vec<bool> = unique.iter().map(|r| r.success).collect();
    let outs: Vec<Option<&str>> = unique.iter().map(|r| r.out.as_deref()).collect();
    let metadata: Vec<Option<&Value>> = unique.iter().map(|r| r.metadata.as_ref()).collect();
    let stored_at: Vec<DateTime<Utc>> = unique.iter().map(|r| r.stored_at).collect();
    let rows = tx
        .query(
            &st.insert_returns,
            &[
                &jids, &ids, &funs, &fun_args, &rets, &retcodes, &successes, &outs, &metadata,
                &stored_at,
            ],
        )
        .await?;

    let mut outcome = vec![None; unique.len()];
    for row in &rows {
        let jid: &str = row.try_get(0)?;
        let id: &str = row.try_get(1)?;
        if let Some(&slot) = first.get(&(jid, id)) {
            outcome[slot] = Some(Applied::Done);
        }
    }
    let unsettled: Vec<&str> = (0..unique.len())
        .filter(|&k| outcome[k].is_none())
        .map(|k| jids[k])
        .collect();
    let known: HashSet<String> = if unsettled.is_empty() {
        HashSet::new()
    } else {
        tx.query(&st.existing_jobs, &[&unsettled])
            .await?
            .iter()
            .map(|row| row.try_get::<_, String>(0))
            .collect::<Result<_, _>>()?
    };
    let outcome: Vec<Applied> = outcome
        .into_iter()
        .zip(&unique)
        .map(|(settled, ret)| match settled {
            Some(applied) => applied,
            None if known.contains(&ret.jid) => Applied::Duplicate,
            None => Applied::MissingJob,
        })
        .collect();

    let mut seen = vec![false; unique.len()];
    Ok(slots
        .into_iter()
        .map(|slot| {
            let repeated = std::mem::replace(&mut seen[slot], true);
            match (repeated, outcome[slot]) {
                (false, applied) => applied,
                (true, Applied::MissingJob) => Applied::MissingJob,
                (true, _) => Applied::Duplicate,
            }
        })
        .collect())
}

/// The reader's prepared statements.
struct ReadStatements {
    get_job: Statement,
    get_returns: Statement,
    list_jobs: Statement,
    count_returns: Statement,
    last_jid: Statement,
    allocate_jid: Statement,
}

/// A read connection with its statements.
pub(crate) struct ReadConn {
    pub(crate) client: Client,
    statements: ReadStatements,
}

/// The read side: one connection (queries on it are pipelined), re-established when lost.
pub(crate) struct Reader {
    /// The database.
    target: Arc<Target>,
    /// The connection, opened on first use.
    conn: Mutex<Option<Arc<ReadConn>>>,
}

impl Reader {
    /// The mine's schema-qualified table name.
    pub(crate) fn mine_table(&self) -> &str {
        &self.target.sql.mine
    }

    /// The read connection, (re)connecting if there is none or it was lost.
    pub(crate) async fn conn(&self) -> Result<Arc<ReadConn>, ReadError> {
        let mut slot = self.conn.lock().await;
        if let Some(conn) = slot.as_ref()
            && !conn.client.is_closed()
        {
            return Ok(conn.clone());
        }
        *slot = None;
        let client = self.target.connect().await?;
        let sql = &self.target.sql;
        let statements = ReadStatements {
            get_job: client.prepare(&sql.get_job).await?,
            get_returns: client.prepare(&sql.get_returns).await?,
            list_jobs: client.prepare(&sql.list_jobs).await?,
            count_returns: client.prepare(&sql.count_returns).await?,
            last_jid: client.prepare(&sql.last_jid).await?,
            allocate_jid: client.prepare(&sql.allocate_jid).await?,
        };
        let conn = Arc::new(ReadConn { client, statements });
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// The job with this jid, if stored.
    pub(crate) async fn get_job(&self, jid: &str) -> Result<Option<JobRecord>, ReadError> {
        let conn = self.conn().await?;
        let row = conn
            .client
            .query_opt(&conn.statements.get_job, &[&jid])
            .await?;
        row.as_ref().map(decode_job).transpose()
    }

    /// The returns of a job in stored order.
    pub(crate) async fn get_returns(&self, jid: &str) -> Result<Vec<ReturnRecord>, ReadError> {
        let conn = self.conn().await?;
        let rows = conn
            .client
            .query(&conn.statements.get_returns, &[&jid])
            .await?;
        rows.iter()
            .map(|row| {
                Ok(ReturnRecord {
                    jid: row.try_get(0)?,
                    id: row.try_get(1)?,
                    fun: row.try_get(2)?,
                    fun_args: row.try_get(3)?,
                    ret: row.try_get(4)?,
                    retcode: row.try_get(5)?,
                    success: row.try_get(6)?,
                    out: row.try_get(7)?,
                    metadata: row.try_get(8)?,
                    stored_at: row.try_get(9)?,
                })
            })
            .collect()
    }

    /// The jobs passing `filter`, newest first, with their return counts.
    pub(crate) async fn list_jobs(&self, filter: &JobFilter) -> Result<Vec<JobSummary>, ReadError> {
        let limit = filter.limit.unwrap_or(usize::MAX);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let matcher = LoadMatcher::new(filter);
        // Without globs the database applies the limit; with them, every job in the time range is read.
        let sql_limit: Option<i64> = match (matcher.is_empty(), filter.limit) {
            (true, Some(n)) => Some(i64::try_from(n).unwrap_or(i64::MAX)),
            _ => None,
        };
        let conn = self.conn().await?;
        let rows = conn
            .client
            .query(
                &conn.statements.list_jobs,
                &[&filter.start_time, &filter.end_time, &sql_limit],
            )
            .await?;
        let mut jobs = Vec::new();
        for row in &rows {
            let job = decode_job(row)?;
            if matcher.matches(&job.load) {
                jobs.push(job);
                if jobs.len() >= limit {
                    break;
                }
            }
        }
        let jids: Vec<&str> = jobs.iter().map(|j| j.jid.as_str()).collect();
        let counts: HashMap<String, i64> = conn
            .client
            .query(&conn.statements.count_returns, &[&jids])
            .await?
            .iter()
            .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
            .collect::<Result<_, tokio_postgres::Error>>()?;
        Ok(jobs
            .into_iter()
            .map(|job| {
                let returned = counts
                    .get(&job.jid)
                    .map_or(0, |&n| usize::try_from(n).unwrap_or(0));
                JobSummary { job, returned }
            })
            .collect())
    }

    /// The persisted last jid.
    pub(crate) async fn last_jid(&self) -> Result<Option<String>, ReadError> {
        let conn = self.conn().await?;
        let row = conn
            .client
            .query_opt(&conn.statements.last_jid, &[])
            .await?;
        Ok(row.map(|row| row.try_get(0)).transpose()?)
    }

    /// Takes the next jid: `candidate`, or a microsecond past the last one taken by any
    /// master. A single statement on this connection, not a batch of the writer: the caller
    /// waits for the answer and nothing else belongs in its transaction.
    pub(crate) async fn allocate_jid(&self, candidate: &str) -> Result<String, ReadError> {
        let conn = self.conn().await?;
        let row = conn
            .client
            .query_one(&conn.statements.allocate_jid, &[&candidate])
            .await?;
        Ok(row.try_get(0)?)
    }
}

/// A job from its row.
fn decode_job(row: &Row) -> Result<JobRecord, ReadError> {
    Ok(JobRecord {
        jid: row.try_get(0)?,
        load: row.try_get(1)?,
        minions: row.try_get(2)?,
        start_time: row.try_get(3)?,
    })
}
