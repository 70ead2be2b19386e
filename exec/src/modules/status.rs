//! Salt's `status` module on Linux: uptime, load, memory, CPU, disk and network counters
//! from `/proc`, processes from `ps`, logged-in users from `w`. The `/proc` parsers are pure
//! and tested with data.

use serde_json::{Map, Value, json};

use saltq_semantics::python;

use crate::error::ExecError;
use crate::modules::run_cmd;
use crate::pyish::utc_isoformat;
use crate::spec::{Call, Function, Lit, Param};

/// The `status` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("status.cpuinfo", handler!(cpuinfo)).doc(CPUINFO_DOC),
    Function::new("status.cpustats", handler!(cpustats)).doc(CPUSTATS_DOC),
    Function::new("status.diskstats", handler!(diskstats)).doc(DISKSTATS_DOC),
    Function::new("status.diskusage", handler!(diskusage))
        .varargs()
        .doc(DISKUSAGE_DOC),
    Function::new("status.loadavg", handler!(loadavg)).doc(LOADAVG_DOC),
    Function::new("status.meminfo", handler!(meminfo)).doc(MEMINFO_DOC),
    Function::new("status.netstats", handler!(netstats)).doc(NETSTATS_DOC),
    Function::new("status.pid", handler!(pid))
        .params(&[Param::req("sig")])
        .doc(PID_DOC),
    Function::new("status.procs", handler!(procs)).doc(PROCS_DOC),
    Function::new("status.uptime", handler!(uptime)).doc(UPTIME_DOC),
    Function::new("status.time", handler!(time))
        .params(&[Param::opt("format", Lit::Str("%A, %d. %B %Y %I:%M%p"))])
        .doc(TIME_DOC),
    Function::new("status.version", handler!(version)).doc(VERSION_DOC),
    Function::new("status.w", handler!(w)).doc(W_DOC),
];

/// The `ps` command Salt's `ps` grain names on Linux.
const PS: &[&str] = &["ps", "-efHww"];

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Salt's `_number`: an integer for digits, else a float, else the text.
pub(crate) fn number(text: &str) -> Value {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()) {
        return text
            .parse::<u64>()
            .map_or_else(|_| json!(text), |n| json!(n));
    }
    text.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map_or_else(|| json!(text), |f| json!(f))
}

const TIME_DOC: &str = "Return the current time on the minion,
formatted based on the format parameter.

Default date format: Monday, 27. July 2015 07:55AM

CLI Example:

.. code-block:: bash

    salt '*' status.time

    salt '*' status.time '%s'
";

/// Salt's `status.time`: local time now through Python's `strftime` directives.
async fn time(call: Call) -> Result<Value, ExecError> {
    use std::fmt::Write;
    let format = python::str(call.arg("format"));
    let mut out = String::new();
    write!(out, "{}", chrono::Local::now().format(&format))
        .map_err(|_| ExecError::invocation(format!("invalid time format {format:?}")))?;
    Ok(Value::String(out))
}

const UPTIME_DOC: &str = "Return how long the system has been up: ``seconds``, ``since_iso``,
``since_t``, ``days``, ``time`` (``H:M``) and ``users``

CLI Example:

.. code-block:: bash

    salt '*' status.uptime
";

/// `status.uptime`'s dict from the uptime in seconds, the time now and `who -s`'s output.
pub(crate) fn uptime_dict(seconds: u64, now: f64, who: Option<&str>) -> Value {
    let boot = now - seconds as f64;
    let up = now - boot;
    let whole = up as u64;
    let mut m = Map::new();
    m.insert("seconds".into(), json!(seconds));
    m.insert("since_iso".into(), json!(utc_isoformat(boot)));
    m.insert("since_t".into(), json!(boot as i64));
    m.insert("days".into(), json!(whole / 86_400));
    let day_secs = whole % 86_400;
    m.insert(
        "time".into(),
        json!(format!("{}:{}", day_secs / 3600, day_secs % 3600 / 60)),
    );
    if let Some(who) = who {
        // Salt counts the lines of cmd.run's (stripped) output: no users still gives 1.
        m.insert("users".into(), json!(who.trim_end().split('\n').count()));
    }
    Value::Object(m)
}

async fn uptime(call: Call) -> Result<Value, ExecError> {
    let text = std::fs::read_to_string("/proc/uptime")
        .map_err(|_| ExecError::execution("File /proc/uptime was not found."))?;
    let seconds = text
        .split_whitespace()
        .next()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(0.0) as u64;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let who = match crate::modules::cmd::which_path("who") {
        Some(_) => Some(run_cmd(&call, &["who", "-s"]).await?.stdout),
        None => None,
    };
    Ok(uptime_dict(seconds, now, who.as_deref()))
}

const LOADAVG_DOC: &str = "Return the load averages: ``1-min``, ``5-min`` and ``15-min``

CLI Example:

.. code-block:: bash

    salt '*' status.loadavg
";

async fn loadavg(_call: Call) -> Result<Value, ExecError> {
    let info = nix::sys::sysinfo::sysinfo()
        .map_err(|e| ExecError::execution(format!("status.loadavg is not available: {e}")))?;
    let (one, five, fifteen) = info.load_average();
    Ok(json!({"1-min": one, "5-min": five, "15-min": fifteen}))
}

const MEMINFO_DOC: &str = "Return ``/proc/meminfo`` as ``{name: {value, unit}}``

CLI Example:

.. code-block:: bash

    salt '*' status.meminfo
";

/// `/proc/meminfo` as Salt's dict.
pub(crate) fn parse_meminfo(text: &str) -> Value {
    let mut out = Map::new();
    for line in text.lines() {
        let comps: Vec<&str> = line.split_whitespace().collect();
        let [name, value, rest @ ..] = comps.as_slice() else {
            continue;
        };
        let mut entry = Map::new();
        entry.insert("value".into(), json!(value));
        if let Some(unit) = rest.first() {
            entry.insert("unit".into(), json!(unit));
        }
        out.insert(name.replace(':', ""), Value::Object(entry));
    }
    Value::Object(out)
}

async fn meminfo(_call: Call) -> Result<Value, ExecError> {
    Ok(parse_meminfo(&read("/proc/meminfo")))
}

const CPUINFO_DOC: &str =
    "Return ``/proc/cpuinfo`` as a dict (the last processor's values; ``flags``
as a list)

CLI Example:

.. code-block:: bash

    salt '*' status.cpuinfo
";

/// `/proc/cpuinfo` as Salt's dict: later processors overwrite earlier ones.
pub(crate) fn parse_cpuinfo(text: &str) -> Value {
    let mut out = Map::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let (key, value) = line.split_once(':').unwrap_or((line, ""));
        let key = key.trim().to_owned();
        let value = if key == "flags" {
            json!(value.split_whitespace().collect::<Vec<_>>())
        } else {
            json!(value.trim())
        };
        out.insert(key, value);
    }
    Value::Object(out)
}

async fn cpuinfo(_call: Call) -> Result<Value, ExecError> {
    Ok(parse_cpuinfo(&read("/proc/cpuinfo")))
}

const CPUSTATS_DOC: &str = "Return the CPU counters of ``/proc/stat``

CLI Example:

.. code-block:: bash

    salt '*' status.cpustats
";

/// `/proc/stat` as Salt's dict.
pub(crate) fn parse_stat(text: &str) -> Value {
    let mut out = Map::new();
    for line in text.lines() {
        let c: Vec<&str> = line.split_whitespace().collect();
        let Some((name, rest)) = c.split_first() else {
            continue;
        };
        let n = |i: usize| number(rest.get(i).copied().unwrap_or(""));
        let value = match *name {
            "cpu" => json!({
                "idle": n(3), "iowait": n(4), "irq": n(5), "nice": n(1),
                "softirq": n(6), "steal": n(7), "system": n(2), "user": n(0),
            }),
            "intr" => {
                json!({"total": n(0), "irqs": rest[1..].iter().map(|x| number(x)).collect::<Vec<_>>()})
            }
            "softirq" => {
                json!({"total": n(0), "softirqs": rest[1..].iter().map(|x| number(x)).collect::<Vec<_>>()})
            }
            _ => n(0),
        };
        out.insert((*name).to_owned(), value);
    }
    Value::Object(out)
}

async fn cpustats(_call: Call) -> Result<Value, ExecError> {
    Ok(parse_stat(&read("/proc/stat")))
}

const DISKSTATS_DOC: &str = "Return the counters of ``/proc/diskstats`` per device

CLI Example:

.. code-block:: bash

    salt '*' status.diskstats
";

/// `/proc/diskstats` as Salt's dict.
pub(crate) fn parse_diskstats(text: &str) -> Value {
    const FIELDS: [&str; 14] = [
        "major",
        "minor",
        "device",
        "reads_issued",
        "reads_merged",
        "sectors_read",
        "ms_spent_reading",
        "writes_completed",
        "writes_merged",
        "sectors_written",
        "ms_spent_writing",
        "io_in_progress",
        "ms_spent_in_io",
        "weighted_ms_spent_in_io",
    ];
    let mut out = Map::new();
    for line in text.lines() {
        let c: Vec<&str> = line.split_whitespace().collect();
        if c.len() < FIELDS.len() {
            continue;
        }
        let entry: Map<String, Value> = FIELDS
            .iter()
            .zip(&c)
            .map(|(k, v)| ((*k).to_owned(), number(v)))
            .collect();
        out.insert(c[2].to_owned(), Value::Object(entry));
    }
    Value::Object(out)
}

async fn diskstats(_call: Call) -> Result<Value, ExecError> {
    Ok(parse_diskstats(&read("/proc/diskstats")))
}

const NETSTATS_DOC: &str = "Return the counters of ``/proc/net/netstat``, per protocol

CLI Example:

.. code-block:: bash

    salt '*' status.netstats
";

/// `/proc/net/netstat` (pairs of header and value lines) as Salt's dict.
pub(crate) fn parse_netstat(text: &str) -> Value {
    let mut out = Map::new();
    let mut headers: Vec<&str> = vec![""];
    for line in text.lines() {
        let c: Vec<&str> = line.split_whitespace().collect();
        let Some(first) = c.first() else { continue };
        if *first == headers[0] {
            // Salt stops one short of the last header (its range(len(headers) - 1)).
            let row: Map<String, Value> = (1..headers.len() - 1)
                .filter_map(|i| Some((headers[i].to_owned(), number(c.get(i)?))))
                .collect();
            out.insert(headers[0].replace(':', ""), Value::Object(row));
        } else {
            headers = c;
        }
    }
    Value::Object(out)
}

async fn netstats(_call: Call) -> Result<Value, ExecError> {
    Ok(parse_netstat(&read("/proc/net/netstat")))
}

const DISKUSAGE_DOC: &str = "Return the available and total bytes of the mounted filesystems: all
of them, those mounted at the paths given, or those of the filesystem types given (globs)

CLI Example:

.. code-block:: bash

    salt '*' status.diskusage         # all filesystems
    salt '*' status.diskusage / /tmp  # by mount point
    salt '*' status.diskusage ext?    # by filesystem type
";

async fn diskusage(call: Call) -> Result<Value, ExecError> {
    let args: Vec<String> = call.varargs().iter().map(python::str).collect();
    let mut selected: Vec<String> = args
        .iter()
        .filter(|a| a.starts_with('/'))
        .cloned()
        .collect();
    let mut fstypes: Vec<String> = args
        .iter()
        .filter(|a| !a.starts_with('/'))
        .cloned()
        .collect();
    if args.is_empty() {
        fstypes.push("*".into());
    }
    if !fstypes.is_empty() {
        for line in read("/proc/mounts").lines() {
            let c: Vec<&str> = line.split_whitespace().collect();
            if let [_, mnt, fstype, ..] = c.as_slice()
                && fstypes
                    .iter()
                    .any(|t| saltq_semantics::python::fnmatch(fstype, t))
                && !selected.iter().any(|s| s == mnt)
            {
                selected.push((*mnt).to_owned());
            }
        }
    }
    let mut out = Map::new();
    for path in selected {
        let st = nix::sys::statvfs::statvfs(path.as_str()).map_err(|e| {
            ExecError::exception(
                "FileNotFoundError",
                format!("[Errno {}] {}: '{path}'", e as i32, e.desc()),
            )
        })?;
        let bsize = st.block_size();
        out.insert(
            path,
            json!({"available": st.blocks_available() * bsize, "total": st.blocks() * bsize}),
        );
    }
    Ok(Value::Object(out))
}

const PROCS_DOC: &str = "Return the running processes: ``{pid: {user, cmd}}``

CLI Example:

.. code-block:: bash

    salt '*' status.procs
";

/// `ps -efHww` output as Salt's dict.
pub(crate) fn parse_procs(text: &str) -> Value {
    let mut lines = text.lines();
    let guide: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    let find = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| guide.iter().position(|g| g == n))
            .unwrap_or(0)
    };
    let (uind, pind, cind) = (
        find(&["USER", "UID"]),
        find(&["PID"]),
        find(&["COMMAND", "CMD"]),
    );
    let mut out = Map::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let c: Vec<&str> = line.split_whitespace().collect();
        let (Some(pid), Some(user)) = (c.get(pind), c.get(uind)) else {
            continue;
        };
        let cmd = c.get(cind..).map(|w| w.join(" ")).unwrap_or_default();
        out.insert((*pid).to_owned(), json!({"user": user, "cmd": cmd}));
    }
    Value::Object(out)
}

async fn procs(call: Call) -> Result<Value, ExecError> {
    Ok(parse_procs(&run_cmd(&call, PS).await?.stdout))
}

const PID_DOC: &str = "Return the pids of the processes whose ``ps`` line matches a regular
expression, one per line, or an empty string

CLI Example:

.. code-block:: bash

    salt '*' status.pid <sig>
";

async fn pid(call: Call) -> Result<Value, ExecError> {
    let sig = python::str(call.arg("sig"));
    Ok(json!(pids(&call, &sig).await?.join("\n")))
}

/// The pids of the processes whose `ps` line matches the regular expression `sig` (this
/// minion's own left out): `status.pid`, and `service.status` with `sig`.
pub(crate) async fn pids(call: &Call, sig: &str) -> Result<Vec<String>, ExecError> {
    let re = regex::Regex::new(sig).map_err(|e| ExecError::exception("re.error", e.to_string()))?;
    let me = std::process::id().to_string();
    let out = run_cmd(call, PS).await?.stdout;
    Ok(out
        .lines()
        .filter(|l| !l.contains(&me) && re.is_match(l))
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(str::to_owned)
        .collect())
}

const VERSION_DOC: &str = "Return the kernel's version string (``/proc/version``)

CLI Example:

.. code-block:: bash

    salt '*' status.version
";

async fn version(_call: Call) -> Result<Value, ExecError> {
    Ok(json!(read("/proc/version").trim()))
}

const W_DOC: &str = "Return who is logged in and what they are doing (``w``): a list of
``{idle, jcpu, login, pcpu, tty, user, what}``

CLI Example:

.. code-block:: bash

    salt '*' status.w
";

/// `w -fh` output as Salt's list.
pub(crate) fn parse_w(text: &str) -> Value {
    text.lines()
        .filter(|l| !l.is_empty())
        .filter_map(|row| {
            let c: Vec<&str> = row.split_whitespace().collect();
            (c.len() >= 6).then(|| {
                json!({"idle": c[3], "jcpu": c[4], "login": c[2], "pcpu": c[5], "tty": c[1],
                       "user": c[0], "what": c[6..].join(" ")})
            })
        })
        .collect()
}

async fn w(call: Call) -> Result<Value, ExecError> {
    Ok(parse_w(&run_cmd(&call, &["w", "-fh"]).await?.stdout))
}

#[cfg(test)]
mod tests;
