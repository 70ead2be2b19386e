//! The retcode of a state run (`salt/modules/state.py`'s `_set_retcode` with
//! `salt/utils/state.py`'s `check_result`): 0 when every state succeeded, 1 for a list of
//! compile errors, 2 when a state failed (unless an `onfail` handler with
//! `onfail_stop: False` took care of it and succeeded).

use super::requisite::Requisite;
use serde_json::{Map, Value};

/// Salt's `EX_STATE_COMPILER_ERROR`.
pub const EX_STATE_COMPILER_ERROR: i32 = 1;
/// Salt's `EX_STATE_FAILURE`.
pub const EX_STATE_FAILURE: i32 = 2;

/// The retcode Salt gives a `state.*` answer; `high` is the high data that ran (for
/// `onfail_stop`).
pub fn retcode(ret: &Value, high: Option<&Map<String, Value>>) -> i32 {
    match ret {
        Value::Array(_) => EX_STATE_COMPILER_ERROR,
        _ if !check(ret, false, high) => EX_STATE_FAILURE,
        _ => 0,
    }
}

/// Salt's `check_result` without high data, as the `salt.state` state reads a minion's
/// answer and the orchestrate runner its own run: false for anything but a non-empty dict
/// of states none of which failed.
pub fn check_result(running: &Value, recurse: bool) -> bool {
    check(running, recurse, None)
}

/// `check_result`.
fn check(running: &Value, recurse: bool, high: Option<&Map<String, Value>>) -> bool {
    let Value::Object(running) = running else {
        return false;
    };
    if running.is_empty() {
        return false;
    }
    let mut ret = true;
    for (state_id, state_result) in running {
        let expected_list = state_id == "__extend__";
        let type_ok = if expected_list {
            state_result.is_array()
        } else {
            state_result.is_object()
        };
        if !recurse && !type_ok {
            ret = false;
        }
        if ret && let Value::Object(r) = state_result {
            match r.get("result") {
                Some(Value::Bool(false)) => ret = false,
                None => ret = check(state_result, true, high),
                _ => {}
            }
        }
        if !ret {
            ret = check_onfail(state_id, state_result, running, high) == Some(true);
        }
        if !ret {
            break;
        }
    }
    ret
}

/// `(state, id)` of a result tag, or the id alone.
fn split_tag(tag: &str) -> (Option<&str>, &str) {
    let parts: Vec<&str> = tag.split("_|-").collect();
    if parts.len() == 4 {
        (Some(parts[0]), parts[1])
    } else {
        (None, tag)
    }
}

/// `check_onfail_requisites`: the result of the `onfail_stop: False` handlers of a failed
/// state, `None` when it has none.
fn check_onfail(
    state_id: &str,
    state_result: &Value,
    running: &Map<String, Value>,
    high: Option<&Map<String, Value>>,
) -> Option<bool> {
    let high = high?;
    if state_id.is_empty() || !saltq_semantics::python::truthy(state_result) {
        return None;
    }
    let (st_state, st_id) = split_tag(state_id);
    let mut handlers: Vec<(String, String)> = Vec::new();
    for (fstate, fchunks) in high {
        if fstate == st_id {
            continue;
        }
        let Value::Object(fchunks) = fchunks else {
            continue;
        };
        for (module, fchunk) in fchunks {
            if module.starts_with("__") {
                continue;
            }
            let Value::Array(fchunk) = fchunk else {
                continue;
            };
            let mut handled = false;
            for fdata in fchunk.iter().filter(|d| d.is_object()) {
                handled = fdata.get(Requisite::OnfailStop.name()) == Some(&Value::Bool(false));
                if handled {
                    break;
                }
            }
            if !handled {
                continue;
            }
            for fdata in fchunk {
                let Some(Value::Array(reqs)) = fdata.get(Requisite::Onfail.name()) else {
                    continue;
                };
                for req in reqs {
                    let Value::Object(req) = req else { continue };
                    for (fmod, fid) in req {
                        if fid.as_str() == Some(st_id) && st_state.is_none_or(|s| s == fmod) {
                            handlers.push((fstate.clone(), module.clone()));
                        }
                    }
                }
            }
        }
    }
    if handlers.is_empty() {
        return None;
    }
    let mut nret = None;
    for (fstate, module) in &handlers {
        for (rid, rstate) in running {
            let (state, id) = match split_tag(rid) {
                (Some(s), id) => (s.to_owned(), id.to_owned()),
                (None, _) => (
                    module.clone(),
                    rstate
                        .get("__id__")
                        .and_then(Value::as_str)
                        .unwrap_or(rid)
                        .to_owned(),
                ),
            };
            if *module == state
                && *fstate == id
                && let Some(Value::Bool(b)) = rstate.get("result")
            {
                nret = Some(*b);
                if !b {
                    break;
                }
            }
        }
        if nret.is_none() {
            nret = Some(false);
        }
    }
    nret
}
