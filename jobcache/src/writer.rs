//! The write queue shared by both backends: requests, their outcomes inside a batch, and the
//! replies sent once the batch's transaction has committed (or failed).

use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use tokio::sync::oneshot;

use crate::error::Cause;
use crate::{CacheError, CacheStats, JobRecord, ReturnRecord, StoreOutcome};

/// How many queued writes one transaction takes at most.
pub(crate) const MAX_BATCH: usize = 512;

/// How many writes may wait for the writer before callers wait to enqueue (back-pressure).
pub(crate) const QUEUE_DEPTH: usize = 8192;

/// Where a caller waits for its write to be committed.
pub(crate) type Reply<T> = oneshot::Sender<Result<T, CacheError>>;

/// One queued write and the caller waiting for it.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "nearly every request is a return, so boxing it would add an allocation and save no space"
)]
pub(crate) enum Request {
    /// Store a new job's load and expected minions.
    SaveJob(JobRecord, Reply<()>),
    /// Store one minion's return, unless that minion already returned for that job.
    StoreReturn(ReturnRecord, Reply<StoreOutcome>),
    /// Raise the persisted last jid to this one if it is larger.
    RecordJid(String, Reply<()>),
    /// Delete jobs started before this time, with their returns.
    Prune(DateTime<Utc>, Reply<usize>),
    /// Write the health row, proving the cache takes writes.
    CheckWritable(Reply<()>),
    /// Add minions to a stored job's expected ones (a syndic's, at a top master).
    AddMinions(String, Vec<String>, Reply<bool>),
}

/// What applying one request inside the batch's transaction came to (not a database failure:
/// those fail the whole batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Applied {
    /// The row was written.
    Done,
    /// The key was already there, so nothing was written (a reused jid, a repeated return).
    Duplicate,
    /// The return's job is not in the cache.
    MissingJob,
    /// This many jobs were pruned.
    Pruned(usize),
}

impl Request {
    /// What this request writes, for error messages: names the jid and minion id.
    pub(crate) fn describe(&self) -> String {
        match self {
            Request::SaveJob(job, _) => format!("job {}", job.jid),
            Request::StoreReturn(ret, _) => {
                format!("return of job {} from minion {}", ret.jid, ret.id)
            }
            Request::RecordJid(jid, _) => format!("last jid {jid}"),
            Request::Prune(before, _) => {
                format!("prune of jobs started before {}", before.to_rfc3339())
            }
            Request::CheckWritable(_) => "the writability probe".to_owned(),
            Request::AddMinions(jid, _, _) => format!("minions of job {jid}"),
        }
    }

    /// Answers the caller with what its write came to, once the batch has committed.
    fn answer(self, applied: Applied, location: &str, stats: &Stats) {
        // The writers produce exactly one of these per request kind; any other pairing cannot
        // happen and is answered as the write's plain success.
        match self {
            Request::SaveJob(job, reply) => {
                let result = match applied {
                    Applied::Duplicate => Err(CacheError::DuplicateJid {
                        jid: job.jid,
                        location: location.to_owned(),
                    }),
                    _ => Ok(()),
                };
                let _ = reply.send(result);
            }
            Request::StoreReturn(ret, reply) => {
                let result = match applied {
                    Applied::Duplicate => {
                        stats.duplicate_returns.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(jid = %ret.jid, id = %ret.id, "dropped a second return from the same minion (possible replay)");
                        Ok(StoreOutcome::Duplicate)
                    }
                    Applied::MissingJob => Err(CacheError::UnknownJid {
                        jid: ret.jid,
                        id: ret.id,
                        location: location.to_owned(),
                    }),
                    _ => {
                        stats.returns_stored.fetch_add(1, Ordering::Relaxed);
                        Ok(StoreOutcome::Stored)
                    }
                };
                let _ = reply.send(result);
            }
            Request::RecordJid(_, reply) | Request::CheckWritable(reply) => {
                let _ = reply.send(Ok(()));
            }
            Request::Prune(_, reply) => {
                let n = match applied {
                    Applied::Pruned(n) => n,
                    _ => 0,
                };
                let _ = reply.send(Ok(n));
            }
            Request::AddMinions(_, _, reply) => {
                let _ = reply.send(Ok(applied != Applied::MissingJob));
            }
        }
    }

    /// Answers the caller that its write failed with the whole batch.
    fn fail(self, cause: &Cause, location: &str) {
        let error = CacheError::Write {
            what: self.describe(),
            location: location.to_owned(),
            cause: cause.clone(),
        };
        match self {
            Request::SaveJob(_, reply)
            | Request::RecordJid(_, reply)
            | Request::CheckWritable(reply) => {
                let _ = reply.send(Err(error));
            }
            Request::StoreReturn(_, reply) => {
                let _ = reply.send(Err(error));
            }
            Request::Prune(_, reply) => {
                let _ = reply.send(Err(error));
            }
            Request::AddMinions(_, _, reply) => {
                let _ = reply.send(Err(error));
            }
        }
    }
}

/// Answers every request of a batch: each with its own outcome if the transaction committed,
/// all with the database's error if it did not.
pub(crate) fn answer_batch(
    batch: impl IntoIterator<Item = Request>,
    result: Result<Vec<Applied>, Cause>,
    location: &str,
    stats: &Stats,
) {
    match result {
        Ok(applied) => {
            stats.transactions.fetch_add(1, Ordering::Relaxed);
            for (request, applied) in batch.into_iter().zip(applied) {
                request.answer(applied, location, stats);
            }
        }
        Err(cause) => {
            stats.failed_transactions.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(%location, error = %cause, "job cache write failed");
            for request in batch {
                request.fail(&cause, location);
            }
        }
    }
}

/// Counters shared by a cache's handles and its writer.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// Write transactions committed.
    transactions: AtomicU64,
    /// Write transactions rolled back because the database failed.
    failed_transactions: AtomicU64,
    /// Returns stored.
    returns_stored: AtomicU64,
    /// Returns dropped as repeats.
    duplicate_returns: AtomicU64,
}

impl Stats {
    /// A snapshot of the counters.
    pub(crate) fn snapshot(&self) -> CacheStats {
        CacheStats {
            transactions: self.transactions.load(Ordering::Relaxed),
            failed_transactions: self.failed_transactions.load(Ordering::Relaxed),
            returns_stored: self.returns_stored.load(Ordering::Relaxed),
            duplicate_returns: self.duplicate_returns.load(Ordering::Relaxed),
        }
    }
}
