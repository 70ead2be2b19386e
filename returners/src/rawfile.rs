//! The `rawfile_json` returner: one JSON object per line appended to `filename` (Salt's
//! default `/var/log/salt/events`), under an exclusive `flock` as Salt's `flopen` takes, so
//! several processes can share the file.

use std::io::Write;
use std::path::PathBuf;

use nix::fcntl::{Flock, FlockArg};
use serde_json::Value;

use crate::Event;
use crate::error::ReturnerError;
use crate::options::Resolved;
use saltq_semantics::python::salt_dumps;

const RETURNER: &str = "rawfile_json";

/// Where to write.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    filename: PathBuf,
}

impl Settings {
    /// Reads `filename`.
    pub(crate) fn from_options(r: &Resolved) -> Result<Settings, ReturnerError> {
        let filename = r
            .str("filename")?
            .filter(|f| !f.is_empty())
            .ok_or_else(|| r.invalid("filename", "must not be empty"))?;
        Ok(Settings {
            filename: PathBuf::from(filename),
        })
    }
}

/// `returner(ret)`: the return as one line.
pub(crate) async fn returner(s: &Settings, load: &Value) -> Result<(), ReturnerError> {
    let mut text = salt_dumps(load);
    text.push('\n');
    append(s, text, "append a return").await
}

/// `event_return(events)`: each event (`{"data": ..., "tag": ...}`) as one line, in one write.
pub(crate) async fn event_return(s: &Settings, events: &[Event]) -> Result<(), ReturnerError> {
    let mut text = String::new();
    for e in events {
        text.push_str(&salt_dumps(&e.to_value()));
        text.push('\n');
    }
    append(s, text, &format!("append {} events", events.len())).await
}

/// Appends `text` with one write under the file lock, off the async threads.
async fn append(s: &Settings, text: String, action: &str) -> Result<(), ReturnerError> {
    let path = s.filename.clone();
    let fail = |cause: String| ReturnerError::Backend {
        returner: RETURNER,
        target: s.filename.display().to_string(),
        action: action.to_owned(),
        cause,
    };
    let write = move || -> std::io::Result<()> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        let mut locked = Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, errno)| std::io::Error::from(errno))?;
        locked.write_all(text.as_bytes())?;
        locked.flush()
    };
    match tokio::task::spawn_blocking(write).await {
        Ok(result) => result.map_err(|e| fail(e.to_string())),
        Err(join) => Err(fail(format!("the writer thread failed: {join}"))),
    }
}
