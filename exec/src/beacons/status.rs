//! Salt's `status` beacon: one event, tagged with the UTC time, carrying the `status.*`
//! functions configured (all of `loadavg`, `cpustats`, `meminfo`, `vmstats`, `time` when the
//! config is empty), or the items asked of each.

use serde_json::{Map, Value, json};

use super::{Beacon, PollFuture, as_list, remove_hidden};
use crate::context::{CallContext, PubInfo};

/// The beacon; it keeps no state.
pub(crate) struct Status;

/// Salt's default: every item of these functions.
fn default_config() -> Vec<Value> {
    vec![
        json!({"loadavg": ["all"], "cpustats": ["all"], "meminfo": ["all"],
                "vmstats": ["all"], "time": ["all"]}),
    ]
}

/// The `(function, items)` to call, in the config's order.
pub(crate) fn wanted(config: &[Value]) -> Vec<(String, Vec<Value>)> {
    let mut config = remove_hidden(config);
    if config.is_empty() {
        config = default_config();
    }
    let mut out = Vec::new();
    for entry in &config {
        for (func, items) in entry.as_object().into_iter().flatten() {
            let items = match items {
                Value::Array(a) => a.clone(),
                other => vec![other.clone()],
            };
            out.push((func.clone(), items));
        }
    }
    out
}

/// One function's part of the event: all of `data`, or the items asked (Salt's message
/// naming a missing one).
pub(crate) fn pick(data: &Value, items: &[Value]) -> Value {
    let mut ret = Value::Object(Map::new());
    for item in items {
        if item == "all" {
            ret = data.clone();
            continue;
        }
        let found = match (data, item) {
            (Value::Object(m), _) => m.get(&saltq_semantics::python::str(item)).cloned(),
            (Value::Array(a), _) => saltq_semantics::python::str(item)
                .parse::<usize>()
                .ok()
                .and_then(|i| a.get(i).cloned()),
            _ => None,
        };
        match (found, &mut ret) {
            (Some(v), Value::Object(m)) => {
                m.insert(saltq_semantics::python::str(item), v);
            }
            (Some(_), _) => {}
            (None, _) => {
                ret = json!(format!(
                    "Status beacon is incorrectly configured: {}",
                    saltq_semantics::python::repr(item)
                ));
            }
        }
    }
    ret
}

/// Python's `datetime.utcnow().isoformat()` for a Unix time in microseconds.
pub(crate) fn isoformat(micros: i64) -> String {
    crate::pyish::utc_isoformat_micros(micros)
}

impl Beacon for Status {
    fn validate(&self, config: &Value) -> Result<(), String> {
        as_list(config, "status").map(|_| ())
    }

    fn poll<'a>(&'a mut self, config: &'a [Value], ctx: &'a CallContext) -> PollFuture<'a> {
        Box::pin(async move {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_micros() as i64)
                .unwrap_or_default();
            let mut ret = Map::new();
            for (func, items) in wanted(config) {
                ret.insert(func.clone(), json!({}));
                let fun = format!("status.{func}");
                let out = crate::call(ctx, &fun, vec![], Map::new(), &PubInfo::default()).await;
                if out.retcode != 0 {
                    continue;
                }
                ret.insert(func, pick(&out.ret, &items));
            }
            Ok(vec![json!({"tag": isoformat(now), "data": ret})])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_and_defaults() {
        assert_eq!(wanted(&[]).len(), 5);
        assert_eq!(
            wanted(&[
                json!({"loadavg": ["1-min"]}),
                json!({"_beacon_name": "status"})
            ]),
            vec![("loadavg".to_owned(), vec![json!("1-min")])]
        );
        let data = json!({"1-min": 0.1, "5-min": 0.2});
        assert_eq!(pick(&data, &[json!("1-min")]), json!({"1-min": 0.1}));
        assert_eq!(pick(&data, &[json!("all")]), data);
        assert_eq!(
            pick(&data, &[json!("x")]),
            json!("Status beacon is incorrectly configured: 'x'")
        );
        assert_eq!(
            isoformat(1_796_658_481_123_456),
            "2026-12-07T15:48:01.123456"
        );
        assert_eq!(isoformat(0), "1970-01-01T00:00:00");
    }
}
