//! Salt's `network_info` beacon: an event per configured interface whose counters equal (or,
//! with `type: greater`, exceed) the configured values.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{Beacon, PollFuture, as_list, list_to_dict, number};
use crate::context::CallContext;

/// psutil's counters, in Salt's order.
const ATTRS: [&str; 8] = [
    "bytes_sent",
    "bytes_recv",
    "packets_sent",
    "packets_recv",
    "errin",
    "errout",
    "dropin",
    "dropout",
];

/// The beacon; it keeps no state.
pub(crate) struct NetworkInfo;

/// One interface's counters by name (`bytes_sent`, ...).
pub(crate) type Counters = BTreeMap<String, u64>;

/// The events for these counters, per interface as configured.
pub(crate) fn decide(config: &[Value], stats: &BTreeMap<String, Counters>) -> Vec<Value> {
    let c = list_to_dict(config);
    let ifaces = c
        .get("interfaces")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for (iface, want) in ifaces {
        let Some(have) = stats.get(&iface) else {
            continue;
        };
        let want = want.as_object().cloned().unwrap_or_default();
        let greater = want.get("type").and_then(Value::as_str) == Some("greater");
        let hit = ATTRS.iter().any(|a| {
            let (Some(v), Some(h)) = (want.get(*a).and_then(number), have.get(*a)) else {
                return false;
            };
            let v = v.trunc();
            if greater {
                *h as f64 > v
            } else {
                *h as f64 == v
            }
        });
        if hit {
            let info: Map<String, Value> = ATTRS
                .iter()
                .filter_map(|a| have.get(*a).map(|v| ((*a).to_owned(), json!(v))))
                .collect();
            out.push(json!({"interface": iface, "network_info": info}));
        }
    }
    out
}

/// psutil's `net_io_counters(pernic=True)` from `/proc/net/dev`.
pub(crate) fn parse(dev: &str) -> BTreeMap<String, Counters> {
    let mut out = BTreeMap::new();
    for line in dev.lines().skip(2) {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let f: Vec<u64> = rest
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        if f.len() < 12 {
            continue;
        }
        let pairs = [
            ("bytes_recv", f[0]),
            ("packets_recv", f[1]),
            ("errin", f[2]),
            ("dropin", f[3]),
            ("bytes_sent", f[8]),
            ("packets_sent", f[9]),
            ("errout", f[10]),
            ("dropout", f[11]),
        ];
        out.insert(
            name.trim().to_owned(),
            pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
        );
    }
    out
}

impl Beacon for NetworkInfo {
    fn validate(&self, config: &Value) -> Result<(), String> {
        let c = list_to_dict(as_list(config, "network_info")?);
        let ifaces = c
            .get("interfaces")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (_, item) in ifaces {
            let Value::Object(m) = item else {
                return Err(
                    "Configuration for network_info beacon must be a list of dictionaries.".into(),
                );
            };
            if !m.keys().any(|k| k == "type" || ATTRS.contains(&k.as_str())) {
                return Err("Invalid configuration item in Beacon configuration.".into());
            }
        }
        Ok(())
    }

    fn poll<'a>(&'a mut self, config: &'a [Value], _ctx: &'a CallContext) -> PollFuture<'a> {
        Box::pin(async move {
            let dev = std::fs::read_to_string("/proc/net/dev")
                .map_err(|e| format!("/proc/net/dev: {e}"))?;
            Ok(decide(config, &parse(&dev)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEV: &str = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth0:  500000    4000    1    2    0     0          0         0   300000    2000    3    4    0     0       0          0
";

    #[test]
    fn equal_and_greater() {
        let stats = parse(DEV);
        assert_eq!(stats["eth0"]["dropout"], 4);
        let c = [
            json!({"interfaces": {"eth0": {"type": "greater", "bytes_recv": 100000}, "lo": {"errin": 1}}}),
        ];
        assert_eq!(
            decide(&c, &stats),
            vec![json!({"interface": "eth0", "network_info": {
                "bytes_sent": 300000, "bytes_recv": 500000, "packets_sent": 2000,
                "packets_recv": 4000, "errin": 1, "errout": 3, "dropin": 2, "dropout": 4}})]
        );
        let c = [json!({"interfaces": {"lo": {"packets_sent": 10}}})];
        assert_eq!(decide(&c, &stats).len(), 1);
        assert!(
            NetworkInfo
                .validate(&json!([{"interfaces": {"lo": {"x": 1}}}]))
                .is_err()
        );
    }
}
