//! Salt's `service` beacon: an event per configured service with whether it runs, every
//! poll, or (with `onchangeonly`) when that changes, after `delay` seconds if set.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{Beacon, PollFuture, as_list, list_to_dict, number};
use crate::context::{CallContext, PubInfo};

/// The beacon, with each service's last status (Salt's `LAST_STATUS`).
#[derive(Default)]
pub(crate) struct Service {
    last: BTreeMap<String, Last>,
}

/// A service's status at the last change, and when a delayed event was armed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Last {
    status: Value,
    armed: Option<f64>,
}

/// The event for one service, given whether it runs now, whether its `uncleanshutdown` file
/// exists (when configured), and the time `now` in seconds.
pub(crate) fn decide(
    service: &str,
    conf: &Map<String, Value>,
    last: &mut BTreeMap<String, Last>,
    running: bool,
    unclean: Option<bool>,
    now: f64,
) -> Vec<Value> {
    let mut status = Map::new();
    status.insert("running".into(), Value::Bool(running));
    if let Some(u) = unclean.filter(|_| !running) {
        status.insert("uncleanshutdown".into(), Value::Bool(u));
    }
    let status = Value::Object(status);
    let event = || json!({service: status, "service_name": service, "tag": service});
    let flag = |k: &str, default: bool| conf.get(k).and_then(Value::as_bool).unwrap_or(default);
    let delay = conf.get("delay").and_then(number).unwrap_or(0.0);
    if conf.get("onchangeonly") != Some(&Value::Bool(true)) {
        return vec![event()];
    }
    let mut out = Vec::new();
    if !last.contains_key(service) {
        last.insert(
            service.to_owned(),
            Last {
                status: status.clone(),
                armed: None,
            },
        );
        if !flag("emitatstartup", true) {
            return out;
        }
        if delay > 0.0 {
            if let Some(l) = last.get_mut(service) {
                l.armed = Some(now);
            }
        } else {
            out.push(event());
        }
    }
    let Some(l) = last.get_mut(service) else {
        return out;
    };
    if l.status["running"] != status["running"] {
        *l = Last {
            status: status.clone(),
            armed: None,
        };
        if delay > 0.0 {
            l.armed = Some(now);
        } else {
            out.push(event());
        }
    }
    if let Some(t) = l.armed
        && (now - t).round() > delay
    {
        l.armed = None;
        out.push(event());
    }
    out
}

impl Beacon for Service {
    fn validate(&self, config: &Value) -> Result<(), String> {
        let c = list_to_dict(as_list(config, "service")?);
        match c.get("services") {
            None => Err("Configuration for service beacon requires services.".into()),
            Some(Value::Object(s)) => {
                if s.values().any(|v| !v.is_object()) {
                    return Err(
                        "Configuration for service beacon must be a list of dictionaries.".into(),
                    );
                }
                Ok(())
            }
            Some(_) => {
                Err("Services configuration item for service beacon must be a dictionary.".into())
            }
        }
    }

    fn poll<'a>(&'a mut self, config: &'a [Value], ctx: &'a CallContext) -> PollFuture<'a> {
        Box::pin(async move {
            let c = list_to_dict(config);
            let services = c
                .get("services")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let mut out = Vec::new();
            for (name, conf) in services {
                let conf = conf.as_object().cloned().unwrap_or_default();
                let st = crate::call(
                    ctx,
                    "service.status",
                    vec![json!(name)],
                    Map::new(),
                    &PubInfo::default(),
                )
                .await;
                let running = st.ret == Value::Bool(true);
                let unclean = conf
                    .get("uncleanshutdown")
                    .map(|f| std::path::Path::new(&saltq_semantics::python::str(f)).exists());
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs_f64())
                    .unwrap_or_default();
                out.extend(decide(&name, &conf, &mut self.last, running, unclean, now));
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn every_poll_or_on_change() {
        let mut last = BTreeMap::new();
        let every = conf(json!({}));
        assert_eq!(
            decide("nginx", &every, &mut last, false, Some(true), 0.0),
            vec![json!({"nginx": {"running": false, "uncleanshutdown": true},
                        "service_name": "nginx", "tag": "nginx"})]
        );
        let change = conf(json!({"onchangeonly": true}));
        assert_eq!(
            decide("sshd", &change, &mut last, true, None, 0.0).len(),
            1,
            "startup"
        );
        assert!(decide("sshd", &change, &mut last, true, None, 1.0).is_empty());
        assert_eq!(
            decide("sshd", &change, &mut last, false, None, 2.0).len(),
            1
        );
    }

    #[test]
    fn delay_holds_the_event_back() {
        let mut last = BTreeMap::new();
        let c = conf(json!({"onchangeonly": true, "emitatstartup": false, "delay": 10}));
        assert!(decide("db", &c, &mut last, true, None, 0.0).is_empty());
        assert!(
            decide("db", &c, &mut last, false, None, 100.0).is_empty(),
            "armed"
        );
        assert!(decide("db", &c, &mut last, false, None, 105.0).is_empty());
        assert_eq!(
            decide("db", &c, &mut last, false, None, 111.0),
            vec![json!({"db": {"running": false}, "service_name": "db", "tag": "db"})]
        );
        assert!(decide("db", &c, &mut last, false, None, 130.0).is_empty());
    }
}
