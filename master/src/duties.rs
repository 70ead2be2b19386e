//! Duties that only one master may carry out at a time: the reactor (each event reacted to
//! once), the presence loop and the job cache pruner. They run behind one switch,
//! [`Leadership`]: a lone master always holds it ([`Alone`]); a cluster hands it to one replica
//! at a time, and the duties move with it.

use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::state::Master;

/// Whether this master holds the single-runner duties.
pub trait Leadership: Send + Sync {
    /// True while this master holds them.
    fn watch(&self) -> watch::Receiver<bool>;
}

/// A master on its own: it always holds the duties.
pub struct Alone(watch::Sender<bool>);

impl Default for Alone {
    fn default() -> Alone {
        Alone(watch::channel(true).0)
    }
}

impl Leadership for Alone {
    fn watch(&self) -> watch::Receiver<bool> {
        self.0.subscribe()
    }
}

/// Runs the master's duties while it holds them, until `shutdown`.
pub async fn run(
    master: Arc<Master>,
    leadership: Arc<dyn Leadership>,
    shutdown: watch::Receiver<bool>,
) {
    let stop = shutdown.clone();
    hold(leadership.as_ref(), shutdown, || {
        let mut tasks = vec![tokio::spawn(crate::run::prune_loop(
            master.clone(),
            stop.clone(),
        ))];
        if !master.cfg.reactor.is_empty() {
            tasks.push(tokio::spawn(crate::reactor::run(master.clone())));
        }
        if master.cfg.presence_events {
            tasks.push(tokio::spawn(crate::run::presence_loop(master.clone())));
        }
        if !master.cfg.schedule.is_empty() {
            tasks.push(tokio::spawn(crate::schedule::run(master.clone())));
        }
        tasks
    })
    .await;
}

/// Starts the duties each time leadership is gained and aborts them when it is lost or at
/// shutdown.
async fn hold(
    leadership: &dyn Leadership,
    mut shutdown: watch::Receiver<bool>,
    start: impl Fn() -> Vec<JoinHandle<()>>,
) {
    let mut held = leadership.watch();
    loop {
        tokio::select! {
            r = held.wait_for(|h| *h) => if r.is_err() { return },
            _ = shutdown.wait_for(|s| *s) => return,
        }
        tracing::debug!("holding the single-runner duties");
        let tasks = start();
        let lost = tokio::select! {
            r = held.wait_for(|h| !*h) => r.is_ok(),
            _ = shutdown.wait_for(|s| *s) => false,
        };
        for t in &tasks {
            t.abort();
        }
        if !lost {
            return;
        }
        tracing::info!("single-runner duties handed over");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Switch(watch::Sender<bool>);

    impl Leadership for Switch {
        fn watch(&self) -> watch::Receiver<bool> {
            self.0.subscribe()
        }
    }

    #[tokio::test]
    async fn duties_run_only_while_held() {
        let switch = Arc::new(Switch(watch::channel(false).0));
        let (stop, shutdown) = watch::channel(false);
        let started = Arc::new(AtomicUsize::new(0));
        let running = Arc::new(AtomicUsize::new(0));
        let (s, r, l) = (started.clone(), running.clone(), switch.clone());
        let holder = tokio::spawn(async move {
            hold(l.as_ref(), shutdown, move || {
                s.fetch_add(1, Ordering::SeqCst);
                let r = r.clone();
                vec![tokio::spawn(async move {
                    // Counts as running until aborted.
                    struct Running(Arc<AtomicUsize>);
                    impl Drop for Running {
                        fn drop(&mut self) {
                            self.0.fetch_sub(1, Ordering::SeqCst);
                        }
                    }
                    r.fetch_add(1, Ordering::SeqCst);
                    let _guard = Running(r);
                    std::future::pending::<()>().await;
                })]
            })
            .await;
        });
        let settle = || async {
            for _ in 0..50 {
                tokio::task::yield_now().await;
            }
        };
        settle().await;
        assert_eq!(started.load(Ordering::SeqCst), 0, "not started before held");
        switch.0.send_replace(true);
        settle().await;
        assert_eq!(running.load(Ordering::SeqCst), 1);
        switch.0.send_replace(false);
        settle().await;
        assert_eq!(running.load(Ordering::SeqCst), 0, "aborted when lost");
        switch.0.send_replace(true);
        settle().await;
        assert_eq!(started.load(Ordering::SeqCst), 2, "restarted when regained");
        stop.send_replace(true);
        holder.await.unwrap();
        assert_eq!(running.load(Ordering::SeqCst), 0, "aborted at shutdown");
    }
}
