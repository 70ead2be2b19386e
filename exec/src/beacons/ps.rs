//! Salt's `ps` beacon: an event per configured process found `running` or `stopped` as
//! configured (any other word: an event `false` when the process is not running).

use serde_json::{Map, Value};

use super::{Beacon, PollFuture, as_list, list_to_dict};
use crate::context::CallContext;

/// The beacon; it keeps no state.
pub(crate) struct Ps;

/// The events for the process names running now.
pub(crate) fn decide(config: &[Value], running: &[String]) -> Vec<Value> {
    let c = list_to_dict(config);
    let procs = c
        .get("processes")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for (name, want) in procs {
        let up = running.contains(&name);
        let v = match want.as_str() {
            Some("running") if up => Value::String("Running".into()),
            Some("stopped") if !up => Value::String("Stopped".into()),
            Some("running" | "stopped") => continue,
            _ if !up => Value::Bool(false),
            _ => continue,
        };
        let mut m = Map::new();
        m.insert(name, v);
        out.push(Value::Object(m));
    }
    out
}

/// psutil's `Process.name()` for each process: `comm`, or the executable's name from the
/// command line when `comm` was cut at 15 characters.
fn read() -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return names;
    };
    for entry in dir.flatten() {
        let p = entry.path();
        let Ok(comm) = std::fs::read_to_string(p.join("comm")) else {
            continue;
        };
        let mut name = comm.trim_end_matches('\n').to_owned();
        if name.len() >= 15
            && let Ok(cmd) = std::fs::read(p.join("cmdline"))
            && let Some(first) = cmd.split(|b| *b == 0).next()
        {
            let exe = String::from_utf8_lossy(first);
            let base = exe.rsplit('/').next().unwrap_or_default();
            if base.starts_with(&name) {
                name = base.to_owned();
            }
        }
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

impl Beacon for Ps {
    fn validate(&self, config: &Value) -> Result<(), String> {
        let c = list_to_dict(as_list(config, "ps")?);
        match c.get("processes") {
            None => Err("Configuration for ps beacon requires processes.".into()),
            Some(Value::Object(_)) => Ok(()),
            Some(_) => Err("Processes for ps beacon must be a dictionary.".into()),
        }
    }

    fn poll<'a>(&'a mut self, config: &'a [Value], _ctx: &'a CallContext) -> PollFuture<'a> {
        Box::pin(async move {
            let running = tokio::task::spawn_blocking(read)
                .await
                .map_err(|e| e.to_string())?;
            Ok(decide(config, &running))
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn running_stopped_and_other_words() {
        let c = [
            json!({"processes": {"sshd": "running", "apache2": "stopped", "nginx": "up", "cron": "stopped"}}),
        ];
        let running = vec!["sshd".to_owned(), "cron".to_owned()];
        assert_eq!(
            decide(&c, &running),
            vec![
                json!({"sshd": "Running"}),
                json!({"apache2": "Stopped"}),
                json!({"nginx": false})
            ]
        );
        assert_eq!(
            Ps.validate(&json!([{"processes": []}])).unwrap_err(),
            "Processes for ps beacon must be a dictionary."
        );
    }
}
