//! Salt's `memusage` beacon: an event when the memory in use reached `percent`.

use serde_json::{Value, json};

use super::{Beacon, PollFuture, as_list, list_to_dict, percent};
use crate::context::CallContext;

/// The beacon; it keeps no state.
pub(crate) struct MemUsage;

/// The event for this reading (psutil's `virtual_memory().percent`), if any.
pub(crate) fn decide(config: &[Value], used_percent: f64) -> Vec<Value> {
    let c = list_to_dict(config);
    match c.get("percent").and_then(percent) {
        Some(limit) if used_percent >= limit => vec![json!({"memusage": used_percent})],
        _ => Vec::new(),
    }
}

/// psutil's `virtual_memory().percent` from `/proc/meminfo`: (total - available) / total.
pub(crate) fn used_percent(meminfo: &str) -> Option<f64> {
    let field = |name: &str| -> Option<f64> {
        meminfo
            .lines()
            .find(|l| l.starts_with(name))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let total = field("MemTotal:")?;
    let avail = field("MemAvailable:")?;
    (total > 0.0).then(|| ((total - avail) / total * 1000.0).round() / 10.0)
}

impl Beacon for MemUsage {
    fn validate(&self, config: &Value) -> Result<(), String> {
        let list = as_list(config, "memusage")?;
        if !list_to_dict(list).contains_key("percent") {
            return Err("Configuration for memusage beacon requires percent.".into());
        }
        Ok(())
    }

    fn poll<'a>(&'a mut self, config: &'a [Value], _ctx: &'a CallContext) -> PollFuture<'a> {
        Box::pin(async move {
            let text = std::fs::read_to_string("/proc/meminfo")
                .map_err(|e| format!("/proc/meminfo: {e}"))?;
            let used = used_percent(&text).ok_or("/proc/meminfo: no MemTotal or MemAvailable")?;
            Ok(decide(config, used))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_at_or_above_the_threshold() {
        let c = [json!({"percent": "63%"})];
        assert_eq!(decide(&c, 63.0), vec![json!({"memusage": 63.0})]);
        assert!(decide(&c, 62.9).is_empty());
        let info = "MemTotal:       1000 kB\nMemFree:  100 kB\nMemAvailable:    250 kB\n";
        assert_eq!(used_percent(info), Some(75.0));
        assert!(MemUsage.validate(&json!([{"x": 1}])).is_err());
    }
}
