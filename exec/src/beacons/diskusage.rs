//! Salt's `diskusage` beacon: an event per mount point (a regex, anchored as Salt's
//! `re.match` with `$` added) whose use reached the configured percentage.

use regex::Regex;
use serde_json::{Value, json};

use super::{Beacon, PollFuture, as_list, percent, remove_hidden};
use crate::context::CallContext;

/// The beacon; it keeps no state.
pub(crate) struct DiskUsage;

/// One mount point and its use, in percent (psutil's `disk_usage().percent`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Usage {
    pub mount: String,
    pub percent: f64,
}

/// The events for these readings: `{diskusage, mount}` per configured mount that matches and
/// is at or above its threshold, in the config's order.
pub(crate) fn decide(config: &[Value], usage: &[Usage]) -> Vec<Value> {
    let mut out = Vec::new();
    for item in remove_hidden(config) {
        let Some((pattern, threshold)) = item.as_object().and_then(|m| m.iter().next()) else {
            continue;
        };
        let anchored = if pattern.ends_with('$') {
            format!("^(?:{pattern})")
        } else {
            format!("^(?:{pattern})$")
        };
        let (Ok(re), Some(limit)) = (Regex::new(&anchored), percent(threshold)) else {
            continue;
        };
        for u in usage.iter().filter(|u| re.is_match(&u.mount)) {
            if u.percent >= limit {
                out.push(json!({"diskusage": u.percent, "mount": u.mount}));
            }
        }
    }
    out
}

/// psutil's percentage: used over what a user may use, rounded to one decimal.
pub(crate) fn percent_used(total: u64, free: u64, avail: u64) -> f64 {
    let used = total.saturating_sub(free);
    let user_total = used + avail;
    if user_total == 0 {
        return 0.0;
    }
    (used as f64 / user_total as f64 * 1000.0).round() / 10.0
}

/// Every mount point of `/proc/self/mounts` with its use (psutil's `disk_partitions(all=True)`).
fn read() -> Vec<Usage> {
    let text = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(|m| m.replace("\\040", " "))
        .filter_map(|mount| {
            let st = nix::sys::statvfs::statvfs(mount.as_str()).ok()?;
            let frsize = st.fragment_size() as u64;
            let percent = percent_used(
                st.blocks() as u64 * frsize,
                st.blocks_free() as u64 * frsize,
                st.blocks_available() as u64 * frsize,
            );
            Some(Usage { mount, percent })
        })
        .collect()
}

impl Beacon for DiskUsage {
    fn validate(&self, config: &Value) -> Result<(), String> {
        as_list(config, "diskusage").map(|_| ())
    }

    fn poll<'a>(&'a mut self, config: &'a [Value], _ctx: &'a CallContext) -> PollFuture<'a> {
        Box::pin(async move {
            let usage = tokio::task::spawn_blocking(read)
                .await
                .map_err(|e| e.to_string())?;
            Ok(decide(config, &usage))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(mount: &str, percent: f64) -> Usage {
        Usage {
            mount: mount.into(),
            percent,
        }
    }

    #[test]
    fn thresholds_and_anchored_patterns() {
        let usage = [u("/", 63.0), u("/home", 91.5), u("/media/usb", 10.0)];
        let config = [
            json!({"/": "63%"}),
            json!({"/home": 95}),
            json!({"/media/.*": "5%"}),
            json!({"_beacon_name": "diskusage"}),
        ];
        assert_eq!(
            decide(&config, &usage),
            vec![
                json!({"diskusage": 63.0, "mount": "/"}),
                json!({"diskusage": 10.0, "mount": "/media/usb"}),
            ],
            "`/` does not match /home: Salt appends `$`"
        );
        assert_eq!(percent_used(100, 40, 30), 66.7);
        assert_eq!(percent_used(0, 0, 0), 0.0);
    }
}
