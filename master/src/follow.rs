//! Following a published job: the async driver around [`Tracker`]. It moves returns from the
//! job's fan-out to the caller, publishes `saltutil.find_job` when the tracker asks, and sleeps
//! until the tracker's next deadline; every decision is the tracker's. Used by `Run` (and so the
//! CLI's batches, which are Runs), the runners that gather from minions, and nothing else.

use std::sync::Arc;
use std::time::Duration;

use saltq_proto::v1 as pb;
use saltq_transport::value;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use crate::returns::Following;
use crate::state::{Master, Published};
use crate::tracker::{Outcome, Step, Tracker};

/// A job being followed; dropping it stops following (no job to forget by hand).
pub struct Follower {
    master: Arc<Master>,
    tracker: Tracker,
    job: Following,
    /// Who published the job; find_job is published as the same user.
    user: String,
    /// The find_job round under way, if any.
    find_job: Option<Following>,
    /// On a top master: what the syndics say about the job, and how much of it was applied.
    syndics: Option<(tokio::sync::watch::Receiver<crate::syndic::Notes>, usize)>,
}

fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

impl Follower {
    /// Follows `published` as the salt command does: find_job after `timeout`, its answers
    /// awaited for `gather`.
    pub fn new(
        master: Arc<Master>,
        published: Published,
        user: &str,
        timeout: Duration,
        gather: Duration,
    ) -> Follower {
        let mut tracker = Tracker::new(
            published.resp.minions,
            published.resp.missing,
            timeout,
            gather,
            now(),
        );
        tracker.unreachable(published.unreachable);
        let syndics = &master.cfg.syndic;
        if syndics.order_masters {
            tracker = tracker.with_syndics(syndics.wait, now());
        }
        let notes = master.syndics.watch(&published.resp.jid);
        let mut f = Follower::with(master, tracker, published.following, user);
        f.syndics = notes.map(|w| (w, 0));
        f
    }

    /// Hands the tracker what the syndics said since last time.
    fn apply_syndic_notes(&mut self) {
        let Some((w, applied)) = &mut self.syndics else {
            return;
        };
        let notes = w.borrow_and_update();
        for (syndic, minions) in notes.expected.iter().skip(*applied) {
            self.tracker.on_syndic_expect(syndic, minions);
        }
        *applied = notes.expected.len();
    }

    /// Follows `published` until every expected minion returned or `timeout` passed.
    pub fn plain(master: Arc<Master>, published: Published, timeout: Duration) -> Follower {
        let mut tracker = Tracker::plain(published.resp.minions, timeout, now());
        tracker.unreachable(published.unreachable);
        Follower::with(master, tracker, published.following, "")
    }

    fn with(master: Arc<Master>, tracker: Tracker, job: Following, user: &str) -> Follower {
        Follower {
            master,
            tracker,
            job,
            user: user.to_owned(),
            find_job: None,
            syndics: None,
        }
    }

    /// The next return of an expected minion, or `None` once the job is over.
    pub async fn next(&mut self) -> Option<Arc<pb::JobReturn>> {
        loop {
            self.apply_syndic_notes();
            let delivery = &self.master.delivery;
            match self.tracker.poll(now(), |id| delivery.is_connected(id)) {
                Step::Done => return None,
                Step::FindJob(ask) => {
                    self.ask(ask).await;
                    continue;
                }
                Step::Wait => {}
            }
            if !self.tracker.is_asking() {
                self.find_job = None;
            }
            let deadline = self
                .tracker
                .deadline()
                .map(tokio::time::Instant::from_std)
                .expect("a job that is not done has a deadline");
            tokio::select! {
                r = self.job.rx.recv() => match r {
                    Ok(ret) => {
                        if self.tracker.on_return(&ret.id) {
                            return Some(ret);
                        }
                    }
                    Err(RecvError::Lagged(n)) => {
                        tracing::warn!(jid = %self.job.jid, "job follower lagged by {n} returns");
                    }
                    // The fan-out outlives this guard; a closed channel means the master is
                    // going away.
                    Err(RecvError::Closed) => return None,
                },
                Some(ret) = next_reply(&mut self.find_job) => {
                    let running = ret
                        .r#return
                        .as_ref()
                        .map(value::from_prost)
                        .is_some_and(|v| v.as_object().is_some_and(|m| !m.is_empty()));
                    self.tracker.on_find_job_reply(&ret.id, running);
                }
                () = syndic_notes(&mut self.syndics) => {}
                _ = tokio::time::sleep_until(deadline) => {}
            }
        }
    }

    /// Publishes `saltutil.find_job` to `ask` and tells the tracker who was sent it.
    async fn ask(&mut self, ask: Vec<String>) {
        let req = pb::PublishRequest {
            tgt: ask.join(","),
            tgt_type: "list".into(),
            fun: vec!["saltutil.find_job".into()],
            arg: vec![value::to_prost(&Value::String(self.job.jid.clone()))],
            ..Default::default()
        };
        let published = match self.master.validate(req) {
            Ok((spec, target)) => self.master.publish(spec, &target, &self.user).await,
            Err(e) => Err(e),
        };
        match published {
            Ok(p) => {
                self.tracker.unreachable(p.unreachable);
                self.tracker.asked(p.sent);
                self.find_job = Some(p.following);
            }
            Err(e) => {
                tracing::warn!(jid = %self.job.jid, "find_job could not be published: {}", e.message());
                self.tracker.asked(Vec::new());
            }
        }
    }

    /// Ends following (early, if the caller went away): who did not return and why.
    pub fn finish(self) -> Outcome {
        let delivery = &self.master.delivery;
        self.tracker.finish(|id| delivery.is_connected(id))
    }
}

/// Returns when the syndics said more about the job; never when there are none.
async fn syndic_notes(
    notes: &mut Option<(tokio::sync::watch::Receiver<crate::syndic::Notes>, usize)>,
) {
    let Some((w, _)) = notes else {
        return std::future::pending().await;
    };
    if w.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The next find_job answer, or never when no round is under way.
async fn next_reply(round: &mut Option<Following>) -> Option<Arc<pb::JobReturn>> {
    let Some(f) = round else {
        return std::future::pending().await;
    };
    loop {
        match f.rx.recv().await {
            Ok(r) => return Some(r),
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return std::future::pending().await,
        }
    }
}
