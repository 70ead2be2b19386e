//! Salt's `txt` (`id: line` per line of output) and `raw` (Python `str()`) outputters.

use serde_json::Value;

use crate::python::{self, pformat, splitlines};

/// Renders `data` as `txt.output` does: for a dict, `key: line` for each line
/// of a string value and `key: str(value)` for anything else; a string as
/// itself; any other value through `pprint.pformat`.
pub(super) fn txt(data: &Value) -> String {
    let mut out = String::new();
    match data {
        Value::Object(map) => {
            for (key, value) in map {
                match value {
                    Value::String(s) => {
                        for line in splitlines(s, false) {
                            out.push_str(key);
                            out.push_str(": ");
                            out.push_str(line);
                            out.push('\n');
                        }
                    }
                    other => {
                        out.push_str(key);
                        out.push_str(": ");
                        out.push_str(&python::repr(other));
                        out.push('\n');
                    }
                }
            }
        }
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        other => {
            out.push_str(&pformat(other));
            out.push('\n');
        }
    }
    out
}

/// Renders `data` as `raw.output` does: `str(data)`.
pub(super) fn raw(data: &Value) -> String {
    python::str(data)
}
