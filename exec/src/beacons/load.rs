//! Salt's `load` beacon: an event with the load averages when one is outside its
//! `[low, high]` range, or (with `onchangeonly`) when one has just crossed a bound.

use serde_json::{Map, Value, json};

use super::{Beacon, PollFuture, as_list, list_to_dict, number};
use crate::context::CallContext;

const KEYS: [&str; 3] = ["1m", "5m", "15m"];

/// The beacon, with the averages of its last poll (Salt's `LAST_STATUS`).
#[derive(Default)]
pub(crate) struct Load {
    last: Option<[f64; 3]>,
}

fn bound(averages: &Map<String, Value>, key: &str, i: usize) -> Option<f64> {
    averages.get(key)?.as_array()?.get(i).and_then(number)
}

/// Salt's decision for the averages `now`, `last` being the previous poll's (updated here).
pub(crate) fn decide(config: &[Value], last: &mut Option<[f64; 3]>, now: [f64; 3]) -> Vec<Value> {
    let c = list_to_dict(config);
    let emit_at_startup = c
        .get("emitatstartup")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let on_change_only = c
        .get("onchangeonly")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let averages = c
        .get("averages")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if on_change_only && last.is_none() {
        *last = Some(now);
        if !emit_at_startup {
            return Vec::new();
        }
    }
    let prev = last.unwrap_or(now);
    let mut send = false;
    for (i, key) in KEYS.iter().enumerate() {
        if !averages.contains_key(*key) {
            continue;
        }
        let (Some(low), Some(high)) = (bound(&averages, key, 0), bound(&averages, key, 1)) else {
            continue;
        };
        let crossed = if on_change_only {
            (now[i] > high && prev[i] < high) || (now[i] < low && prev[i] > low)
        } else {
            now[i] < low || now[i] > high
        };
        if crossed {
            send = true;
            break;
        }
    }
    if on_change_only {
        *last = Some(now);
    }
    if send {
        vec![json!({"1m": now[0], "5m": now[1], "15m": now[2]})]
    } else {
        Vec::new()
    }
}

fn read() -> Result<[f64; 3], String> {
    let text =
        std::fs::read_to_string("/proc/loadavg").map_err(|e| format!("/proc/loadavg: {e}"))?;
    let mut it = text.split_whitespace().map(str::parse::<f64>);
    match (it.next(), it.next(), it.next()) {
        (Some(Ok(a)), Some(Ok(b)), Some(Ok(c))) => Ok([a, b, c]),
        _ => Err(format!("/proc/loadavg: cannot read {text:?}")),
    }
}

impl Beacon for Load {
    fn validate(&self, config: &Value) -> Result<(), String> {
        let c = list_to_dict(as_list(config, "load")?);
        for flag in ["emitatstartup", "onchangeonly"] {
            if c.get(flag).is_some_and(|v| !v.is_boolean()) {
                return Err(format!(
                    "Configuration for load beacon option {flag} must be a boolean."
                ));
            }
        }
        let Some(averages) = c.get("averages") else {
            return Err("Averages configuration is required for load beacon.".into());
        };
        let averages = averages.as_object().cloned().unwrap_or_default();
        if !KEYS.iter().any(|k| averages.contains_key(*k)) {
            return Err(
                "Averages configuration for load beacon must contain 1m, 5m or 15m items.".into(),
            );
        }
        for key in KEYS {
            match averages.get(key) {
                Some(Value::Array(pair)) if pair.len() == 2 => {}
                Some(Value::Array(_)) => {
                    return Err(
                        "Configuration for load beacon: 1m, 5m and 15m items must be a \
                                list of two items."
                            .into(),
                    );
                }
                _ => {
                    return Err(
                        "Averages configuration for load beacon: 1m, 5m and 15m items \
                                must be a list of two items."
                            .into(),
                    );
                }
            }
        }
        Ok(())
    }

    fn poll<'a>(&'a mut self, config: &'a [Value], _ctx: &'a CallContext) -> PollFuture<'a> {
        Box::pin(async move {
            let now = read()?;
            Ok(decide(config, &mut self.last, now))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(extra: Value) -> Vec<Value> {
        vec![
            json!({"averages": {"1m": [0.0, 2.0], "5m": [0.0, 1.5], "15m": [0.1, 1.0]}}),
            extra,
        ]
    }

    #[test]
    fn out_of_range_fires_every_poll() {
        let c = cfg(json!({}));
        let mut last = None;
        assert_eq!(
            decide(&c, &mut last, [2.5, 0.5, 0.5]),
            vec![json!({"1m": 2.5, "5m": 0.5, "15m": 0.5})]
        );
        assert!(decide(&c, &mut last, [1.0, 1.0, 0.5]).is_empty());
        assert_eq!(
            decide(&c, &mut last, [1.0, 1.0, 0.05]).len(),
            1,
            "below 15m low"
        );
        assert!(Load::default().validate(&Value::Array(c)).is_ok());
    }

    #[test]
    fn onchangeonly_fires_on_crossing_a_bound() {
        let c = cfg(json!({"onchangeonly": true, "emitatstartup": false}));
        let mut last = None;
        assert!(
            decide(&c, &mut last, [3.0, 0.5, 0.5]).is_empty(),
            "no startup event"
        );
        assert!(
            decide(&c, &mut last, [3.5, 0.5, 0.5]).is_empty(),
            "still above"
        );
        assert!(
            decide(&c, &mut last, [1.0, 0.5, 0.5]).is_empty(),
            "back in range"
        );
        assert_eq!(
            decide(&c, &mut last, [2.1, 0.5, 0.5]).len(),
            1,
            "crossed up"
        );
        let e = Load::default()
            .validate(&json!([{"averages": {"1m": [0, 1]}}]))
            .unwrap_err();
        assert_eq!(
            e,
            "Averages configuration for load beacon: 1m, 5m and 15m items must be a list of two items."
        );
    }
}
