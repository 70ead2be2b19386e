//! Salt's `log` beacon (`log_beacon.py`): the lines added to `file` since the last poll,
//! an event per line a tag's `regex` matches at its start (Python's `re.match`).

use std::io::{Read, Seek, SeekFrom};

use regex::Regex;
use serde_json::{Value, json};

use super::{Beacon, PollFuture, as_list, list_to_dict};
use crate::context::CallContext;

/// The beacon, with how far it has read the file (Salt's `__context__["log.loc"]`).
#[derive(Default)]
pub(crate) struct LogBeacon {
    loc: u64,
}

fn skel(tag: &str) -> serde_json::Map<String, Value> {
    let v = json!({"tag": tag, "match": "no", "raw": "", "error": ""});
    v.as_object().cloned().unwrap_or_default()
}

/// The events for the text added since the last poll.
pub(crate) fn decide(config: &[Value], text: &str) -> Vec<Value> {
    let c = list_to_dict(config);
    let tags = c
        .get("tags")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut regexes = Vec::new();
    for (tag, t) in &tags {
        let Some(re) = t
            .get("regex")
            .filter(|r| saltq_semantics::python::truthy(r))
        else {
            continue;
        };
        let re = saltq_semantics::python::str(re);
        match Regex::new(&format!("^(?:{re})")) {
            Ok(r) => regexes.push((tag.clone(), r)),
            Err(_) => {
                let mut e = skel(tag);
                e.insert("error".into(), json!("bad regex"));
                out.push(Value::Object(e));
            }
        }
    }
    for line in saltq_semantics::python::splitlines(text, false) {
        for (tag, re) in &regexes {
            if re.is_match(line) {
                let mut e = skel(tag);
                e.insert("raw".into(), json!(line));
                e.insert("match".into(), json!("yes"));
                out.push(Value::Object(e));
            }
        }
    }
    out
}

/// The text after `loc` and the file's end; `None` text on the first read (Salt only notes
/// where the file ends then).
fn read(path: &str, loc: u64) -> Result<(Option<String>, u64), String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let end = f
        .seek(SeekFrom::End(0))
        .map_err(|e| format!("{path}: {e}"))?;
    if loc == 0 {
        return Ok((None, end));
    }
    f.seek(SeekFrom::Start(loc))
        .map_err(|e| format!("{path}: {e}"))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)
        .map_err(|e| format!("{path}: {e}"))?;
    Ok((Some(String::from_utf8_lossy(&bytes).into_owned()), end))
}

impl Beacon for LogBeacon {
    fn validate(&self, config: &Value) -> Result<(), String> {
        let c = list_to_dict(as_list(config, "log")?);
        if !c.contains_key("file") {
            return Err("Configuration for log beacon must contain file option.".into());
        }
        Ok(())
    }

    fn poll<'a>(&'a mut self, config: &'a [Value], _ctx: &'a CallContext) -> PollFuture<'a> {
        Box::pin(async move {
            let c = list_to_dict(config);
            let Some(file) = c.get("file") else {
                let mut e = skel("global");
                e.insert("error".into(), json!("file not defined in config"));
                return Ok(vec![Value::Object(e)]);
            };
            let (text, end) = read(&saltq_semantics::python::str(file), self.loc)?;
            self.loc = end;
            Ok(text.map(|t| decide(config, &t)).unwrap_or_default())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_lines_make_events() {
        let c = [
            json!({"file": "/var/log/auth.log"}),
            json!({"tags": {"sshd": {"regex": ".*sshd.*"}, "bad": {"regex": "("}, "none": {}}}),
        ];
        let out = decide(&c, "x sshd[1]: ok\nkernel: y\n");
        assert_eq!(
            out,
            vec![
                json!({"tag": "bad", "match": "no", "raw": "", "error": "bad regex"}),
                json!({"tag": "sshd", "match": "yes", "raw": "x sshd[1]: ok", "error": ""}),
            ]
        );
        let c = [
            json!({"file": "f"}),
            json!({"tags": {"k": {"regex": "kernel"}}}),
        ];
        assert_eq!(
            decide(&c, "a kernel\nkernel: y").len(),
            1,
            "re.match anchors at the start"
        );
    }
}
