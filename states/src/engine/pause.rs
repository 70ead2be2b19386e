//! `state.pause`, `state.resume` and `state.soft_kill`: a running state run reads
//! `<cachedir>/state_pause/<jid>` before each state, as Salt's does. The file holds
//! `{state_id or "__all__": {"kill": true} | {"duration": seconds} | {}}` (JSON here; Salt
//! writes msgpack, and only the minion itself reads it).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

/// What a run does before a state, given the pause file's data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Run the state.
    Run,
    /// Stop the run here (`soft_kill`): the states not yet run are left out of the result.
    Kill,
    /// Wait and read the file again; `Some(d)` is the pause's duration in seconds.
    Wait(Option<f64>),
}

/// The pause file of a job.
pub fn path(cachedir: &Path, jid: &str) -> PathBuf {
    cachedir.join("state_pause").join(jid)
}

/// Salt's `check_pause` for the state `id`: its own entry first, then `__all__`.
pub fn decide(data: &Value, id: &str) -> Action {
    let entry = data.get(id).or_else(|| data.get("__all__"));
    match entry {
        None => Action::Run,
        Some(e) if e.get("kill").is_some() => Action::Kill,
        Some(e) => Action::Wait(e.get("duration").and_then(Value::as_f64)),
    }
}

/// Reads the pause file; an absent or unreadable file is no pause.
pub fn read(path: &Path) -> Value {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| json!({}))
}

/// Blocks (on a blocking thread) until the state `id` may run: `true` to run it, `false`
/// when the run is to stop. Polls once a second, as Salt does.
pub fn wait_turn(path: &Path, id: &str) -> bool {
    let start = Instant::now();
    loop {
        match decide(&read(path), id) {
            Action::Run => return true,
            Action::Kill => return false,
            Action::Wait(Some(d)) if start.elapsed().as_secs_f64() > d => return true,
            Action::Wait(_) => std::thread::sleep(Duration::from_secs(1)),
        }
    }
}

/// Changes the pause file of `jid`: `f` edits its data; the file is written whole.
pub fn update(
    cachedir: &Path,
    jid: &str,
    f: impl FnOnce(&mut Map<String, Value>),
) -> std::io::Result<()> {
    let p = path(cachedir, jid);
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut data = match read(&p) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    f(&mut data);
    std::fs::write(
        &p,
        serde_json::to_vec(&Value::Object(data)).unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_follow_salts_check_pause() {
        assert_eq!(decide(&json!({}), "vim"), Action::Run);
        assert_eq!(decide(&json!({"__all__": {}}), "vim"), Action::Wait(None));
        assert_eq!(
            decide(&json!({"__all__": {"kill": true}}), "vim"),
            Action::Kill
        );
        assert_eq!(
            decide(
                &json!({"vim": {"duration": 20}, "__all__": {"kill": true}}),
                "vim"
            ),
            Action::Wait(Some(20.0))
        );
        assert_eq!(
            decide(&json!({"other": {"kill": true}}), "vim"),
            Action::Run
        );
    }

    #[test]
    fn soft_kill_written_then_read_stops_the_run() {
        let dir = tempfile::tempdir().unwrap();
        update(dir.path(), "123", |d| {
            d.insert("__all__".into(), json!({"kill": true}));
        })
        .unwrap();
        assert!(!wait_turn(&path(dir.path(), "123"), "any"));
        update(dir.path(), "123", Map::clear).unwrap();
        assert!(wait_turn(&path(dir.path(), "123"), "any"));
        assert!(wait_turn(&path(dir.path(), "absent"), "any"));
    }
}
