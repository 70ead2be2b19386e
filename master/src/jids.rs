//! Jid allocation: the seam between "this job needs a jid" and who may hand one out. A master
//! alone with its SQLite cache is the only one issuing jids, so its own generator decides
//! ([`LocalJids`]); masters that share a PostgreSQL cache take them from it ([`SharedJids`]),
//! where one row orders every master, so jids stay unique and strictly increasing across all
//! of them and across restarts. The decision itself (the time, or a microsecond past the last)
//! is [`JidGenerator`]'s, tested in `saltq-semantics`.

use std::sync::Mutex;

use futures_util::future::BoxFuture;
use saltq_jobcache::JobCache;
use saltq_semantics::jid::{Jid, JidGenerator};
use tonic::Status;

/// Where new jids come from.
pub trait JidSource: Send + Sync {
    /// A new jid, later than every jid this source (and any source sharing its store) issued.
    fn next(&self) -> BoxFuture<'_, Result<Jid, Status>>;
}

/// Jids from this process's clock: the master is the only one issuing them. The job cache
/// records each saved job's jid, so a restart goes on after the last.
pub struct LocalJids {
    generator: Mutex<JidGenerator>,
}

impl LocalJids {
    /// A source that issues only jids after `last` (read from the job cache at start).
    pub fn new(last: Option<&Jid>) -> LocalJids {
        LocalJids {
            generator: Mutex::new(JidGenerator::new(last)),
        }
    }

    fn take(&self) -> Jid {
        let mut g = self.generator.lock().unwrap_or_else(|e| e.into_inner());
        g.next(chrono::Utc::now())
    }
}

impl JidSource for LocalJids {
    fn next(&self) -> BoxFuture<'_, Result<Jid, Status>> {
        let jid = self.take();
        Box::pin(async move { Ok(jid) })
    }
}

/// Jids from a job cache that other masters share: this master proposes one from its own
/// clock, the cache answers with it or a microsecond past the last jid any master took.
pub struct SharedJids {
    cache: JobCache,
    local: LocalJids,
}

impl SharedJids {
    /// A source on `cache`, proposing jids after `last`.
    pub fn new(cache: JobCache, last: Option<&Jid>) -> SharedJids {
        SharedJids {
            cache,
            local: LocalJids::new(last),
        }
    }
}

impl JidSource for SharedJids {
    fn next(&self) -> BoxFuture<'_, Result<Jid, Status>> {
        let candidate = self.local.take();
        Box::pin(async move {
            let taken = self
                .cache
                .allocate_jid(candidate.as_str())
                .await
                .map_err(|e| {
                    saltq_transport::part_unavailable(
                        "job-cache",
                        format!("no jid could be taken, no job was published: {e}"),
                    )
                })?;
            Jid::parse(&taken)
                .map_err(|e| Status::internal(format!("the job cache handed out a bad jid: {e}")))
        })
    }
}

/// The source for a master on `cache`: shared when other masters may use the same cache.
pub fn source_for(cache: &JobCache, last: Option<&Jid>) -> Box<dyn JidSource> {
    if cache.is_shared() {
        Box::new(SharedJids::new(cache.clone(), last))
    } else {
        Box::new(LocalJids::new(last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn local_jids_increase_after_the_last_issued() {
        let far = Jid::parse("29990101000000000000").expect("jid");
        let jids = LocalJids::new(Some(&far));
        let a = jids.next().await.expect("jid");
        let b = jids.next().await.expect("jid");
        assert_eq!(a.as_str(), "29990101000000000001");
        assert_eq!(b.as_str(), "29990101000000000002");
    }
}
