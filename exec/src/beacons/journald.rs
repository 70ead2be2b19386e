//! Salt's `journald` beacon (`journald.py`): an event per new journal entry whose fields
//! equal every field a configured service lists (`services: {sshd: {SYSLOG_IDENTIFIER: sshd,
//! PRIORITY: 6}}`), tagged with the service's name.
//!
//! Salt reads the journal with python-systemd's `Reader`, from the end as the beacon first
//! runs; here `journalctl -o json -f -n 0` streams the same entries. The entry is shaped as
//! that `Reader` gives it (its `DEFAULT_CONVERTERS`: numbers for `PRIORITY`, `_PID` and the
//! like, `UUID(...)`, `datetime` and `timedelta` values) and then as Salt's
//! `simple_types_filter` leaves it (those three as their Python `repr`), so configs compare and
//! events read as in Salt. Without `journalctl` the beacon is refused at validation, as Salt's
//! is not loaded without the systemd library.

use std::process::Stdio;

use serde_json::{Map, Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

use super::{Beacon, PollFuture, as_list, list_to_dict};
use crate::context::CallContext;

/// The beacon, with the `journalctl` it reads from once started (Salt's
/// `__context__["systemd.journald"]`).
#[derive(Default)]
pub(crate) struct Journald {
    reader: Option<Reader>,
}

/// A running `journalctl -f`, its lines forwarded by a task.
struct Reader {
    child: tokio::process::Child,
    lines: mpsc::UnboundedReceiver<String>,
}

/// Fields python-systemd converts with `int`.
const INT_FIELDS: &[&str] = &[
    "PRIORITY",
    "LEADER",
    "SESSION_ID",
    "USERSPACE_USEC",
    "INITRD_USEC",
    "KERNEL_USEC",
    "_UID",
    "_GID",
    "_PID",
    "SYSLOG_FACILITY",
    "SYSLOG_PID",
    "_AUDIT_SESSION",
    "_AUDIT_LOGINUID",
    "_SYSTEMD_SESSION",
    "_SYSTEMD_OWNER_UID",
    "CODE_LINE",
    "ERRNO",
    "EXIT_STATUS",
    "COREDUMP_PID",
    "COREDUMP_UID",
    "COREDUMP_GID",
    "COREDUMP_SESSION",
    "COREDUMP_SIGNAL",
];

/// Fields python-systemd converts to `uuid.UUID`.
const UUID_FIELDS: &[&str] = &["MESSAGE_ID", "_MACHINE_ID", "_BOOT_ID"];

/// Fields python-systemd converts to a local `datetime` from microseconds.
const TIME_FIELDS: &[&str] = &[
    "_SOURCE_REALTIME_TIMESTAMP",
    "__REALTIME_TIMESTAMP",
    "COREDUMP_TIMESTAMP",
];

/// Python's `repr(uuid.UUID(hex))`; `None` when `hex` is not 32 hex digits.
fn uuid_repr(hex: &str) -> Option<String> {
    let h = hex.replace('-', "").to_ascii_lowercase();
    if h.len() != 32 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(format!(
        "UUID('{}-{}-{}-{}-{}')",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    ))
}

/// Python's `repr(datetime.datetime.fromtimestamp(us / 1e6))`, in the minion's time zone.
fn datetime_repr(us: i64) -> Option<String> {
    use chrono::{Datelike, TimeZone, Timelike};
    let t = chrono::Local.timestamp_micros(us).single()?;
    let mut s = format!(
        "datetime.datetime({}, {}, {}, {}, {}",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute()
    );
    let micro = t.nanosecond() / 1000;
    if micro != 0 {
        s.push_str(&format!(", {}, {micro}", t.second()));
    } else if t.second() != 0 {
        s.push_str(&format!(", {}", t.second()));
    }
    s.push(')');
    Some(s)
}

/// Python's `repr(datetime.timedelta(microseconds=us))` (3.7+: the non-zero fields named).
fn timedelta_repr(us: i64) -> String {
    let (days, rest) = (us.div_euclid(86_400_000_000), us.rem_euclid(86_400_000_000));
    let (seconds, micros) = (rest / 1_000_000, rest % 1_000_000);
    let parts: Vec<String> = [
        ("days", days),
        ("seconds", seconds),
        ("microseconds", micros),
    ]
    .into_iter()
    .filter(|(_, v)| *v != 0)
    .map(|(k, v)| format!("{k}={v}"))
    .collect();
    if parts.is_empty() {
        "datetime.timedelta(0)".into()
    } else {
        format!("datetime.timedelta({})", parts.join(", "))
    }
}

/// One field's value as python-systemd converts it and `simple_types_filter` leaves it; a
/// value the converter refuses stays as it was (python-systemd keeps the bytes).
fn convert(key: &str, raw: &str) -> Value {
    let converted = if INT_FIELDS.contains(&key) {
        raw.trim().parse::<i64>().ok().map(Value::from)
    } else if UUID_FIELDS.contains(&key) {
        uuid_repr(raw).map(Value::String)
    } else if TIME_FIELDS.contains(&key) {
        raw.parse().ok().and_then(datetime_repr).map(Value::String)
    } else if key == "_SOURCE_MONOTONIC_TIMESTAMP" {
        raw.parse().ok().map(|us| Value::String(timedelta_repr(us)))
    } else {
        None
    };
    converted.unwrap_or_else(|| Value::String(raw.to_owned()))
}

/// A `journalctl -o json` line as Salt's beacon sees the entry: fields converted, the
/// monotonic time paired with the boot id (python-systemd's `Monotonic`), journalctl's own
/// sequence numbers (which the `Reader` does not give) left out. `None` for a line that is
/// not an entry.
pub(crate) fn entry(line: &str) -> Option<Map<String, Value>> {
    let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(line) else {
        return None;
    };
    let mut out = Map::new();
    for (key, v) in &fields {
        if key.starts_with("__SEQNUM") {
            continue;
        }
        let value = match v {
            Value::String(s) => convert(key, s),
            // A field given several times: each value converted.
            Value::Array(items) if items.iter().all(Value::is_string) => Value::Array(
                items
                    .iter()
                    .map(|s| convert(key, s.as_str().unwrap_or_default()))
                    .collect(),
            ),
            // Binary data (journalctl's array of bytes) or a value too large to show.
            other => other.clone(),
        };
        out.insert(key.clone(), value);
    }
    if let Some(mono) = fields.get("__MONOTONIC_TIMESTAMP").and_then(Value::as_str) {
        let boot = fields
            .get("_BOOT_ID")
            .and_then(Value::as_str)
            .and_then(uuid_repr);
        if let (Ok(us), Some(boot)) = (mono.parse::<i64>(), boot) {
            out.insert(
                "__MONOTONIC_TIMESTAMP".into(),
                json!(format!(
                    "journal.Monotonic(timestamp={}, bootid={boot})",
                    timedelta_repr(us)
                )),
            );
        }
    }
    Some(out)
}

/// The events for the entries read since the last poll: per entry, per service whose every
/// listed field the entry holds with an equal value, the entry tagged with the service.
pub(crate) fn decide(config: &[Value], entries: &[Map<String, Value>]) -> Vec<Value> {
    let c = list_to_dict(config);
    let services = c
        .get("services")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for cur in entries {
        for (name, want) in &services {
            let want = want.as_object().cloned().unwrap_or_default();
            if want.iter().all(|(k, v)| cur.get(k) == Some(v)) {
                let mut sub = cur.clone();
                sub.insert("tag".into(), json!(name));
                out.push(Value::Object(sub));
            }
        }
    }
    out
}

fn journalctl() -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("journalctl"))
            .find(|f| f.is_file())
    })
}

/// Starts `journalctl -o json -f -n 0`: the entries written from now on.
fn start() -> Result<Reader, String> {
    let exe = journalctl().ok_or("journalctl is not available")?;
    let mut child = tokio::process::Command::new(exe)
        .args(["-o", "json", "-f", "-n", "0", "--no-pager"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start journalctl: {e}"))?;
    let stdout = child.stdout.take().ok_or("journalctl has no stdout")?;
    let (tx, lines) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut r = tokio::io::BufReader::new(stdout).lines();
        while let Ok(Some(line)) = r.next_line().await {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Ok(Reader { child, lines })
}

impl Beacon for Journald {
    fn validate(&self, config: &Value) -> Result<(), String> {
        let c = list_to_dict(as_list(config, "journald")?);
        if let Some(services) = c.get("services").and_then(Value::as_object)
            && services.values().any(|s| !s.is_object())
        {
            return Err(
                "Services configuration for journald beacon must be a list of \
                        dictionaries."
                    .into(),
            );
        }
        if journalctl().is_none() {
            return Err("journalctl is missing.".into());
        }
        Ok(())
    }

    fn poll<'a>(&'a mut self, config: &'a [Value], _ctx: &'a CallContext) -> PollFuture<'a> {
        Box::pin(async move {
            if self.reader.is_none() {
                self.reader = Some(start()?);
            }
            let Some(reader) = self.reader.as_mut() else {
                return Ok(Vec::new());
            };
            let mut entries = Vec::new();
            loop {
                match reader.lines.try_recv() {
                    Ok(line) => entries.extend(entry(&line)),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        // journalctl ended: started again on the next poll.
                        self.reader = None;
                        break;
                    }
                }
            }
            Ok(decide(config, &entries))
        })
    }

    fn close(&mut self) {
        if let Some(mut r) = self.reader.take() {
            let _ = r.child.start_kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `journalctl -o json` line of an sshd entry (systemd 252's fields).
    const SSHD: &str = r#"{"__CURSOR":"s=1;i=2","__REALTIME_TIMESTAMP":"1765141200123456","__MONOTONIC_TIMESTAMP":"90061000001","__SEQNUM":"2","__SEQNUM_ID":"ab","_BOOT_ID":"0123456789abcdef0123456789ABCDEF","PRIORITY":"6","SYSLOG_IDENTIFIER":"sshd","_PID":"812","MESSAGE":"Accepted publickey for root","_CMDLINE":["a","b"],"BIN":[1,2]}"#;

    #[test]
    fn entries_read_as_python_systemd_and_simple_types_filter_leave_them() {
        let e = entry(SSHD).unwrap();
        assert_eq!(e["PRIORITY"], json!(6));
        assert_eq!(e["_PID"], json!(812));
        assert_eq!(e["SYSLOG_IDENTIFIER"], json!("sshd"));
        assert_eq!(
            e["_BOOT_ID"],
            json!("UUID('01234567-89ab-cdef-0123-456789abcdef')")
        );
        assert_eq!(
            e["__MONOTONIC_TIMESTAMP"],
            json!(
                "journal.Monotonic(timestamp=datetime.timedelta(days=1, seconds=3661, \
                 microseconds=1), bootid=UUID('01234567-89ab-cdef-0123-456789abcdef'))"
            )
        );
        assert!(
            e["__REALTIME_TIMESTAMP"]
                .as_str()
                .unwrap()
                .starts_with("datetime.datetime(2025, 12, ")
        );
        assert_eq!(e["_CMDLINE"], json!(["a", "b"]));
        assert_eq!(e["BIN"], json!([1, 2]));
        assert!(!e.contains_key("__SEQNUM") && !e.contains_key("__SEQNUM_ID"));
        assert!(entry("not json").is_none());
    }

    #[test]
    fn python_reprs() {
        assert_eq!(timedelta_repr(0), "datetime.timedelta(0)");
        assert_eq!(
            timedelta_repr(1_500_000),
            "datetime.timedelta(seconds=1, microseconds=500000)"
        );
        assert_eq!(timedelta_repr(86_400_000_000), "datetime.timedelta(days=1)");
        assert_eq!(uuid_repr("xyz"), None);
        assert_eq!(convert("PRIORITY", "x"), json!("x"), "int() refused: kept");
    }

    #[test]
    fn services_match_when_every_listed_field_is_equal() {
        let e = entry(SSHD).unwrap();
        let config = [json!({"services": {
            "sshd": {"SYSLOG_IDENTIFIER": "sshd", "PRIORITY": 6},
            "as_text": {"PRIORITY": "6"},
            "cron": {"SYSLOG_IDENTIFIER": "cron"},
            "all": {},
        }})];
        let out = decide(&config, std::slice::from_ref(&e));
        let tags: Vec<&str> = out.iter().map(|v| v["tag"].as_str().unwrap()).collect();
        // The YAML number 6 equals the converted PRIORITY; the string "6" does not (Salt's
        // `==`); an empty service matches every entry.
        assert_eq!(tags, ["sshd", "all"]);
        assert_eq!(out[0]["MESSAGE"], json!("Accepted publickey for root"));
    }

    #[test]
    fn a_service_that_is_not_a_dict_is_refused() {
        let b = Journald::default();
        let err = b
            .validate(&json!([{"services": {"sshd": ["SYSLOG_IDENTIFIER"]}}]))
            .unwrap_err();
        assert!(err.contains("must be a list of dictionaries"), "{err}");
        assert!(b.validate(&json!({"services": {}})).is_err());
    }
}
