//! Salt's `json` outputter: Python's `json.dumps(data, ensure_ascii=False, indent=...)`.

use serde_json::Value;

use crate::python::{Dumps, dumps};

/// The largest `--out-indent` honoured; larger values are treated as this one
/// (Python would try to build lines of that many spaces).
const MAX_INDENT: i64 = 1024;

/// Renders `data` as `json_out.output` does: four spaces by default, the given
/// indent when `--out-indent` is 0 or more, one line when it is negative.
pub(super) fn render(data: &Value, indent: Option<i64>) -> String {
    let opts = match indent {
        None => Dumps::salt().indent(4),
        Some(n) if n < 0 => Dumps::salt(),
        Some(n) => Dumps::salt().indent(usize::try_from(n.min(MAX_INDENT)).unwrap_or(4)),
    };
    dumps(data, &opts)
}
