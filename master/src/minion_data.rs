//! Writes each minion's cached grains and pillar (`cachedir/minions/ID/data.json`) on a thread
//! of its own. A subscription, a grains update or a pillar refresh hands the new data over and
//! goes on: a fleet reconnecting at once would otherwise hold the async workers on thousands of
//! small file writes. Writes of one minion queued while the thread is busy are coalesced: only
//! the latest is written.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};

/// The handle the master keeps; dropping it, or [`MinionDataWriter::flush`], writes what is queued.
pub struct MinionDataWriter {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct Queue {
    pending: HashMap<String, String>,
    /// Writes taken off `pending` and not finished yet.
    writing: usize,
    closed: bool,
}

struct Shared {
    dir: PathBuf,
    queue: Mutex<Queue>,
    /// Signalled when work arrives or the writer is closed (for the thread), and when the
    /// queue runs empty (for `flush`).
    changed: Condvar,
}

impl MinionDataWriter {
    /// Starts the writer for `dir` (`cachedir/minions`).
    pub fn start(dir: PathBuf) -> MinionDataWriter {
        let shared = Arc::new(Shared {
            dir,
            queue: Mutex::default(),
            changed: Condvar::new(),
        });
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("minion-data".into())
            .spawn(move || worker.run())
            .expect("spawn the minion data writer thread");
        MinionDataWriter {
            shared,
            thread: Some(thread),
        }
    }

    /// Queues `data` (the JSON text `{"grains": ..., "pillar": ...}`) to be written for minion `id`.
    pub fn write(&self, id: &str, data: String) {
        let mut q = self.shared.lock();
        q.pending.insert(id.to_owned(), data);
        self.shared.changed.notify_all();
    }

    /// Waits until everything queued so far is on disk.
    pub fn flush(&self) {
        let mut q = self.shared.lock();
        while !q.pending.is_empty() || q.writing > 0 {
            q = self
                .shared
                .changed
                .wait(q)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for MinionDataWriter {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.changed.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn run(&self) {
        let mut q = self.lock();
        loop {
            if q.pending.is_empty() {
                if q.closed {
                    return;
                }
                q = self.changed.wait(q).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            let batch = std::mem::take(&mut q.pending);
            q.writing = batch.len();
            drop(q);
            for (id, data) in batch {
                self.write_one(&id, &data);
            }
            q = self.lock();
            q.writing = 0;
            self.changed.notify_all();
        }
    }

    fn write_one(&self, id: &str, data: &str) {
        let dir = self.dir.join(id);
        let res = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join("data.json"), data));
        if let Err(e) = res {
            tracing::warn!(
                minion = id,
                "cannot cache minion data in {}: {e}",
                dir.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn writes_the_latest_data_and_flush_waits_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let w = MinionDataWriter::start(dir.path().to_path_buf());
        for i in 0..50 {
            w.write("m1", json!({"grains": {"n": i}, "pillar": {}}).to_string());
            w.write(
                &format!("m{i}"),
                json!({"grains": {"id": i}, "pillar": {}}).to_string(),
            );
        }
        w.flush();
        let read = |id: &str| -> Value {
            serde_json::from_str(
                &std::fs::read_to_string(dir.path().join(id).join("data.json")).unwrap(),
            )
            .unwrap()
        };
        assert_eq!(read("m1")["grains"], json!({"n": 49}));
        assert_eq!(read("m49")["grains"], json!({"id": 49}));
        w.write(
            "late",
            json!({"grains": {}, "pillar": {"x": 1}}).to_string(),
        );
        drop(w);
        assert_eq!(read("late")["pillar"], json!({"x": 1}));
    }
}
