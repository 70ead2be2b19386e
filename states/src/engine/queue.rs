//! One state run at a time (`_check_queue`, `running`, `_prior_running_states` in Salt's
//! `salt/modules/state.py`): a second run is refused with Salt's messages unless it queues.

use saltq_semantics::jid::Jid;
use saltq_semantics::python::fnmatch;
use serde_json::Value;

/// The state runs in `running` other than the job `own_jid`, as Salt's `saltutil.is_running
/// ("state.*")` lists them (the current job never lists itself).
pub fn state_runs(running: &[Value], own_jid: &str) -> Vec<Value> {
    running
        .iter()
        .filter(|job| {
            let fun = job.get("fun").and_then(Value::as_str).unwrap_or("");
            fnmatch(fun, "state.*") && job.get("jid").and_then(Value::as_str) != Some(own_jid)
        })
        .cloned()
        .collect()
}

/// Salt's `state.running` messages, one per state run in progress.
pub fn conflict_messages(runs: &[Value]) -> Vec<String> {
    runs.iter()
        .map(|job| {
            let jid = job.get("jid").and_then(Value::as_str).unwrap_or("");
            let started = Jid::parse(jid)
                .map(|j| j.to_time_string())
                .unwrap_or_default();
            let pid = match job.get("pid") {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            };
            format!(
                "The function \"{}\" is running as PID {} and was started at {} with jid {}",
                job.get("fun").and_then(Value::as_str).unwrap_or(""),
                pid,
                started,
                jid
            )
        })
        .collect()
}

/// The state runs started before `own_jid` (those a queued run waits for): Salt compares
/// jids as integers, so a run that started later does not hold an earlier one back.
pub fn prior_runs(runs: &[Value], own_jid: &str) -> Vec<Value> {
    let Ok(own) = own_jid.parse::<u128>() else {
        return runs.to_vec();
    };
    runs.iter()
        .filter(|job| {
            job.get("jid")
                .and_then(Value::as_str)
                .and_then(|j| j.parse::<u128>().ok())
                .is_some_and(|j| j < own)
        })
        .cloned()
        .collect()
}

/// What `queue=` asks for (`state_queue` when not given).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    /// Refuse when another state run is in progress (the default).
    Refuse,
    /// Wait until every earlier state run has finished.
    Wait,
    /// Wait when fewer than this many earlier runs are in progress, else refuse.
    UpTo(u64),
}

impl Queue {
    /// Salt's reading of `queue`: `True` waits, an integer (not a bool) caps the queue,
    /// anything else refuses.
    pub fn from_value(v: Option<&Value>) -> Self {
        match v {
            Some(Value::Bool(true)) => Queue::Wait,
            Some(Value::Number(n)) => match n.as_u64() {
                Some(0) | None => Queue::Refuse,
                Some(k) => Queue::UpTo(k),
            },
            _ => Queue::Refuse,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn runs() -> Vec<Value> {
        vec![
            json!({"fun": "state.apply", "jid": "20261125230000123456", "pid": 4242}),
            json!({"fun": "test.sleep", "jid": "20261125230000123457", "pid": 4242}),
            json!({"fun": "state.sls", "jid": "20261125230100000000", "pid": 4242}),
        ]
    }

    #[test]
    fn lists_other_state_runs_in_salts_words() {
        let others = state_runs(&runs(), "20261125230100000000");
        assert_eq!(others.len(), 1);
        assert_eq!(
            conflict_messages(&others),
            vec![
                "The function \"state.apply\" is running as PID 4242 and was started at \
                 2026, Nov 25 23:00:00.123456 with jid 20261125230000123456"
                    .to_owned()
            ]
        );
    }

    #[test]
    fn a_queued_run_waits_only_for_earlier_ones() {
        let others = state_runs(&runs(), "20261125230000123456");
        assert_eq!(others.len(), 1, "the later state.sls is another run");
        assert!(prior_runs(&others, "20261125230000123456").is_empty());
        let others = state_runs(&runs(), "20261125230100000000");
        assert_eq!(prior_runs(&others, "20261125230100000000").len(), 1);
    }

    #[test]
    fn queue_values_as_salt_reads_them() {
        assert_eq!(Queue::from_value(None), Queue::Refuse);
        assert_eq!(Queue::from_value(Some(&json!(true))), Queue::Wait);
        assert_eq!(Queue::from_value(Some(&json!(false))), Queue::Refuse);
        assert_eq!(Queue::from_value(Some(&json!(3))), Queue::UpTo(3));
        assert_eq!(Queue::from_value(Some(&json!("yes"))), Queue::Refuse);
    }
}
