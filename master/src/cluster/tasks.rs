//! The tasks of one replica, owned in one place: every task the cluster starts is spawned
//! here, and [`Tasks::stop`] tells them all to end and waits for them (a task that does not end
//! within the grace period is aborted), as mini-redis's server owns its connections.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

/// A replica's running tasks and the signal that ends them.
pub struct Tasks {
    set: Mutex<JoinSet<()>>,
    stop: watch::Sender<bool>,
}

impl Default for Tasks {
    fn default() -> Self {
        Tasks {
            set: Mutex::new(JoinSet::new()),
            stop: watch::channel(false).0,
        }
    }
}

impl Tasks {
    /// Turns true when the replica stops.
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// Waits until `stop` turns true (or its sender is gone).
    pub async fn stopped(stop: &mut watch::Receiver<bool>) {
        let _ = stop.wait_for(|s| *s).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, JoinSet<()>> {
        self.set.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `task` until it ends or the replica stops, whichever comes first.
    pub fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let mut stop = self.stopping();
        self.lock().spawn(async move {
            tokio::select! {
                () = task => {}
                () = Tasks::stopped(&mut stop) => {}
            }
        });
    }

    /// Runs `task`, which watches [`Tasks::stopping`] itself (to finish what it holds first).
    pub fn spawn_watching(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.lock().spawn(task);
    }

    /// How many tasks are running.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Tells every task to end and waits up to `grace` for them; the rest are aborted.
    pub async fn stop(&self, grace: Duration) {
        self.stop.send_replace(true);
        let mut set = std::mem::take(&mut *self.lock());
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            match tokio::time::timeout_at(deadline, set.join_next()).await {
                Ok(Some(_)) => {}
                Ok(None) => return,
                Err(_) => {
                    tracing::warn!(
                        tasks = set.len(),
                        "cluster tasks still running after {grace:?}; aborting them"
                    );
                    set.shutdown().await;
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stop_ends_every_task_and_waits_for_them() {
        let tasks = Tasks::default();
        // A task that would run forever, and one that finishes its work when told to stop.
        tasks.spawn(std::future::pending());
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        let mut stop = tasks.stopping();
        tasks.spawn_watching(async move {
            let _ = stop.wait_for(|s| *s).await;
            let _ = done_tx.send(());
        });
        assert_eq!(tasks.len(), 2);
        tasks.stop(Duration::from_secs(5)).await;
        assert_eq!(tasks.len(), 0);
        done_rx
            .await
            .expect("the watching task finished before stop returned");
    }
}
