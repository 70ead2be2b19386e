//! Salt's logging keys, as Salt 3007.8's `salt/_logging/impl.py` applies them: `log_file` (a
//! path, or syslog at `file:///dev/log[/LOG_FACILITY]`, `udp://host[:port][/LOG_FACILITY]`,
//! `tcp://...`), `log_level_logfile`, `log_fmt_console`/`log_fmt_logfile` (Python logging's
//! `%(field)s` records with Salt's extra fields), `log_datefmt`/`log_datefmt_logfile` and
//! `log_granular_levels`.
//!
//! The decisions are pure: [`LogFormat`] compiles and renders a format string for a
//! [`Record`], [`LevelPlan`] says whether an output writes a record of a target and level,
//! [`LogTarget::parse`] reads `log_file`, [`syslog_frame`] frames a syslog datagram.
//! [`SaltFormatLayer`] is the thin `tracing` layer that writes through them.

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime};

use tracing::field::{Field as TField, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// Salt's console format (`DFLT_LOG_FMT_CONSOLE`).
pub const DEFAULT_FMT_CONSOLE: &str = "[%(levelname)-8s] %(message)s";
/// Salt's log file format (`DFLT_LOG_FMT_LOGFILE`).
pub const DEFAULT_FMT_LOGFILE: &str =
    "%(asctime)s,%(msecs)03d [%(name)-17s:%(lineno)-4d][%(levelname)-8s][%(process)d] %(message)s";
/// Salt's console date format (`DFLT_LOG_DATEFMT`).
pub const DEFAULT_DATEFMT: &str = "%H:%M:%S";
/// Salt's log file date format (`DFLT_LOG_DATEFMT_LOGFILE`).
pub const DEFAULT_DATEFMT_LOGFILE: &str = "%Y-%m-%d %H:%M:%S";
/// Python's `SYSLOG_UDP_PORT`, the port of a `udp://`/`tcp://` log_file without one.
pub const SYSLOG_PORT: u16 = 514;
/// Salt widens `%(name)-17s` to the longest logger name, up to this.
const MAX_NAME_WIDTH: usize = 80;

/// Python logging's level number of a Salt level name (`salt/_logging/impl.py` `LOG_LEVELS`),
/// case-insensitive; `None` for a name Salt does not know.
pub fn level_number(name: &str) -> Option<u32> {
    Some(match name.to_ascii_lowercase().as_str() {
        "all" => 0,
        "garbage" => 1,
        "trace" => 5,
        "debug" => 10,
        "profile" => 15,
        "info" => 20,
        "warning" => 30,
        "error" => 40,
        "critical" => 50,
        "quiet" => 1000,
        _ => return None,
    })
}

/// A Salt level name checked, with the error naming the allowed ones.
pub fn check_level(name: &str) -> Result<u32, String> {
    level_number(name).ok_or_else(|| {
        format!(
            "unknown log level {name:?}: expected one of all, garbage, trace, debug, profile, \
             info, warning, error, critical, quiet"
        )
    })
}

/// Python's level number and name of a `tracing` level (`WARN` is Python's `WARNING`).
pub fn python_level(level: &tracing::Level) -> (u32, &'static str) {
    match *level {
        tracing::Level::ERROR => (40, "ERROR"),
        tracing::Level::WARN => (30, "WARNING"),
        tracing::Level::INFO => (20, "INFO"),
        tracing::Level::DEBUG => (10, "DEBUG"),
        _ => (5, "TRACE"),
    }
}

/// The logger name Salt would show for a `tracing` target: `saltq_master::run` is
/// `saltq_master.run`, as a Python module path.
pub fn logger_name(target: &str) -> String {
    target.replace("::", ".")
}

/// Which records one output (the console, the log file) writes: its own level, and the
/// `log_granular_levels` that set the level of a logger and the loggers under it.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelPlan {
    /// The output's level number (`log_level` or `log_level_logfile`).
    pub handler: u32,
    /// `log_granular_levels`: logger name (dotted) and level number.
    pub granular: Vec<(String, u32)>,
}

impl LevelPlan {
    /// Whether a record of `target` at level number `level` is written: Python checks the
    /// logger's effective level (the nearest configured ancestor, the root's being the lowest
    /// of all outputs, so no limit) and then the handler's.
    pub fn enabled(&self, target: &str, level: u32) -> bool {
        if level < self.handler {
            return false;
        }
        let name = logger_name(target);
        let nearest = self
            .granular
            .iter()
            .filter(|(logger, _)| {
                name == *logger
                    || (name.starts_with(logger.as_str())
                        && name.as_bytes().get(logger.len()) == Some(&b'.'))
            })
            .max_by_key(|(logger, _)| logger.len());
        nearest.is_none_or(|(_, l)| level >= *l)
    }
}

/// A record's fields Python logging and Salt offer to a format string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldName {
    Name,
    Levelno,
    Levelname,
    Pathname,
    Filename,
    Module,
    Lineno,
    FuncName,
    Created,
    Asctime,
    Msecs,
    RelativeCreated,
    Thread,
    ThreadName,
    Process,
    ProcessName,
    Message,
    BracketName,
    BracketLevel,
    BracketProcess,
    ColorName,
    ColorLevel,
    ColorProcess,
    ColorMsg,
    Jid,
}

const FIELD_NAMES: &[(&str, FieldName)] = &[
    ("name", FieldName::Name),
    ("levelno", FieldName::Levelno),
    ("levelname", FieldName::Levelname),
    ("pathname", FieldName::Pathname),
    ("filename", FieldName::Filename),
    ("module", FieldName::Module),
    ("lineno", FieldName::Lineno),
    ("funcName", FieldName::FuncName),
    ("created", FieldName::Created),
    ("asctime", FieldName::Asctime),
    ("msecs", FieldName::Msecs),
    ("relativeCreated", FieldName::RelativeCreated),
    ("thread", FieldName::Thread),
    ("threadName", FieldName::ThreadName),
    ("process", FieldName::Process),
    ("processName", FieldName::ProcessName),
    ("message", FieldName::Message),
    ("bracketname", FieldName::BracketName),
    ("bracketlevel", FieldName::BracketLevel),
    ("bracketprocess", FieldName::BracketProcess),
    ("colorname", FieldName::ColorName),
    ("colorlevel", FieldName::ColorLevel),
    ("colorprocess", FieldName::ColorProcess),
    ("colormsg", FieldName::ColorMsg),
    ("jid", FieldName::Jid),
];

/// One `%(field)...` conversion.
#[derive(Debug, Clone, PartialEq)]
struct Spec {
    field: FieldName,
    left: bool,
    zero: bool,
    plus: bool,
    width: usize,
    precision: Option<usize>,
    conv: char,
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Field(Spec),
}

/// A log format string (`log_fmt_console`, `log_fmt_logfile`) compiled: Python's
/// `%(field)[flags][width][.precision]conv` with `s`, `r`, `d`/`i`, `f`, `x` and `%%`.
#[derive(Debug, Clone, PartialEq)]
pub struct LogFormat {
    pieces: Vec<Piece>,
    uses_time: bool,
}

/// A value of a record field, as Python holds it.
enum Val<'a> {
    Str(std::borrow::Cow<'a, str>),
    Int(i64),
    Float(f64),
}

/// One log record, as Python's `LogRecord` describes it.
#[derive(Debug, Clone)]
pub struct Record<'a> {
    /// When it was made.
    pub created: SystemTime,
    /// Seconds since logging was set up (`relativeCreated` is in milliseconds).
    pub relative: f64,
    /// The `tracing` target (shown as a dotted logger name).
    pub target: &'a str,
    /// The `tracing` level.
    pub level: tracing::Level,
    /// The source file, when known.
    pub file: Option<&'a str>,
    /// The line, when known.
    pub line: Option<u32>,
    /// The message with its fields.
    pub message: &'a str,
    /// The process id.
    pub pid: u32,
    /// The thread's name.
    pub thread_name: &'a str,
    /// The thread's number.
    pub thread_id: u64,
}

impl LogFormat {
    /// Compiles `fmt`; a field Python's record lacks, or a bad conversion, is an error naming it.
    pub fn parse(fmt: &str) -> Result<LogFormat, String> {
        let chars: Vec<char> = fmt.chars().collect();
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] != '%' {
                text.push(chars[i]);
                i += 1;
                continue;
            }
            i += 1;
            if chars.get(i) == Some(&'%') {
                text.push('%');
                i += 1;
                continue;
            }
            if chars.get(i) != Some(&'(') {
                return Err(format!(
                    "{fmt:?}: a log format takes named fields such as %(message)s, not a bare % at \
                     position {i}"
                ));
            }
            let end = chars[i..]
                .iter()
                .position(|c| *c == ')')
                .map(|p| p + i)
                .ok_or_else(|| {
                    format!("{fmt:?}: incomplete format key (no closing parenthesis)")
                })?;
            let key: String = chars[i + 1..end].iter().collect();
            let field = FIELD_NAMES
                .iter()
                .find(|(n, _)| *n == key)
                .map(|(_, f)| *f)
                .ok_or_else(|| {
                    let known: Vec<&str> = FIELD_NAMES.iter().map(|(n, _)| *n).collect();
                    format!(
                        "{fmt:?}: unknown log record field %({key})s; known fields: {}",
                        known.join(", ")
                    )
                })?;
            i = end + 1;
            let (mut left, mut zero, mut plus) = (false, false, false);
            while let Some(c) = chars.get(i).filter(|c| "-+ 0#".contains(**c)) {
                match c {
                    '-' => left = true,
                    '0' => zero = true,
                    '+' => plus = true,
                    _ => {}
                }
                i += 1;
            }
            let mut width = 0usize;
            while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
                width = width.saturating_mul(10).saturating_add(d as usize);
                i += 1;
            }
            let mut precision = None;
            if chars.get(i) == Some(&'.') {
                i += 1;
                let mut p = 0usize;
                while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
                    p = p.saturating_mul(10).saturating_add(d as usize);
                    i += 1;
                }
                precision = Some(p);
            }
            let conv = *chars
                .get(i)
                .ok_or_else(|| format!("{fmt:?}: incomplete format after %({key})"))?;
            if !"srdifFxXeEgG".contains(conv) {
                return Err(format!(
                    "{fmt:?}: unsupported format character {conv:?} after %({key})"
                ));
            }
            i += 1;
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            pieces.push(Piece::Field(Spec {
                field,
                left,
                zero,
                plus,
                width,
                precision,
                conv,
            }));
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        let uses_time = pieces
            .iter()
            .any(|p| matches!(p, Piece::Field(s) if s.field == FieldName::Asctime));
        Ok(LogFormat { pieces, uses_time })
    }

    /// Renders `r`; `asctime` with `datefmt` (strftime, local time), `%(name)-N s` widened to
    /// `name_width` when that is more (Salt widens it to the longest logger name, up to 80),
    /// the colour fields with ANSI colours when `color`.
    pub fn render(&self, r: &Record<'_>, datefmt: &str, name_width: usize, color: bool) -> String {
        let mut out = String::new();
        let asctime = if self.uses_time {
            let local: chrono::DateTime<chrono::Local> = r.created.into();
            let mut s = String::new();
            // The date format was checked at start ([`check_datefmt`]); a failure leaves it empty.
            let _ = write!(s, "{}", local.format(datefmt));
            s
        } else {
            String::new()
        };
        let (levelno, levelname) = python_level(&r.level);
        let name = logger_name(r.target);
        let created = r
            .created
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let (lc, mc, reset) = if color {
            level_colors(levelname)
        } else {
            ("", "", "")
        };
        for piece in &self.pieces {
            let spec = match piece {
                Piece::Text(t) => {
                    out.push_str(t);
                    continue;
                }
                Piece::Field(spec) => spec,
            };
            let pathname = r.file.unwrap_or("");
            let filename = Path::new(pathname)
                .file_name()
                .and_then(|f| f.to_str())
                .unwrap_or("");
            let value = match spec.field {
                FieldName::Name => Val::Str(name.as_str().into()),
                FieldName::Levelno => Val::Int(i64::from(levelno)),
                FieldName::Levelname => Val::Str(levelname.into()),
                FieldName::Pathname => Val::Str(pathname.into()),
                FieldName::Filename => Val::Str(filename.into()),
                FieldName::Module => Val::Str(
                    Path::new(filename)
                        .file_stem()
                        .and_then(|f| f.to_str())
                        .unwrap_or("")
                        .into(),
                ),
                FieldName::Lineno => Val::Int(i64::from(r.line.unwrap_or(0))),
                FieldName::FuncName => Val::Str("".into()),
                FieldName::Created => Val::Float(created.as_secs_f64()),
                FieldName::Asctime => Val::Str(asctime.as_str().into()),
                FieldName::Msecs => Val::Float(f64::from(created.subsec_micros()) / 1000.0),
                FieldName::RelativeCreated => Val::Float(r.relative * 1000.0),
                FieldName::Thread => Val::Int(i64::try_from(r.thread_id).unwrap_or(i64::MAX)),
                FieldName::ThreadName => Val::Str(r.thread_name.into()),
                FieldName::Process => Val::Int(i64::from(r.pid)),
                FieldName::ProcessName => Val::Str("MainProcess".into()),
                FieldName::Message => Val::Str(r.message.into()),
                FieldName::BracketName => Val::Str(format!("[{name:<17}]").into()),
                FieldName::BracketLevel => Val::Str(format!("[{levelname:<8}]").into()),
                FieldName::BracketProcess => Val::Str(format!("[{:>5}]", r.pid).into()),
                FieldName::ColorName => {
                    let (c, e) = if color {
                        ("\x1b[1;32m", reset)
                    } else {
                        ("", "")
                    };
                    Val::Str(format!("{c}[{name:<17}]{e}").into())
                }
                FieldName::ColorLevel => Val::Str(format!("{lc}[{levelname:<8}]{reset}").into()),
                FieldName::ColorProcess => {
                    let (c, e) = if color {
                        ("\x1b[1;34m", reset)
                    } else {
                        ("", "")
                    };
                    Val::Str(format!("{c}[{:>5}]{e}", r.pid).into())
                }
                FieldName::ColorMsg => Val::Str(format!("{mc}{}{reset}", r.message).into()),
                FieldName::Jid => Val::Str("".into()),
            };
            let width = if spec.field == FieldName::Name && spec.left {
                spec.width.max(name_width.min(MAX_NAME_WIDTH))
            } else {
                spec.width
            };
            push_converted(&mut out, spec, width, &value);
        }
        out
    }
}

/// Salt's `LOG_COLORS` for a level: the level's, the message's, and the reset code.
fn level_colors(levelname: &str) -> (&'static str, &'static str, &'static str) {
    let (l, m) = match levelname {
        "CRITICAL" => ("\x1b[1;31m", "\x1b[1;31m"),
        "ERROR" => ("\x1b[1;31m", "\x1b[31m"),
        "WARNING" => ("\x1b[1;33m", "\x1b[33m"),
        "INFO" => ("\x1b[1;32m", "\x1b[32m"),
        "DEBUG" => ("\x1b[1;36m", "\x1b[36m"),
        "TRACE" => ("\x1b[1;35m", "\x1b[35m"),
        _ => ("\x1b[0m", "\x1b[0m"),
    };
    (l, m, "\x1b[0m")
}

/// Python's `%` conversion of one value with its flags, width and precision.
fn push_converted(out: &mut String, spec: &Spec, width: usize, value: &Val<'_>) {
    let number = |v: &Val<'_>| -> Option<f64> {
        match v {
            Val::Int(i) => Some(*i as f64),
            Val::Float(f) => Some(*f),
            Val::Str(_) => None,
        }
    };
    let body: String = match spec.conv {
        's' | 'r' => {
            let s = match value {
                Val::Str(s) if spec.conv == 'r' => format!("'{s}'"),
                Val::Str(s) => s.to_string(),
                Val::Int(i) => i.to_string(),
                Val::Float(f) => python_float_str(*f),
            };
            match spec.precision {
                Some(p) => s.chars().take(p).collect(),
                None => s,
            }
        }
        'd' | 'i' => match number(value) {
            Some(n) => format!("{}", n.trunc() as i64),
            // Python raises here; the text is shown rather than nothing.
            None => str_of(value),
        },
        'x' | 'X' => match number(value) {
            Some(n) if spec.conv == 'x' => format!("{:x}", n.trunc() as i64),
            Some(n) => format!("{:X}", n.trunc() as i64),
            None => str_of(value),
        },
        'f' | 'F' | 'e' | 'E' | 'g' | 'G' => match number(value) {
            Some(n) if matches!(spec.conv, 'e' | 'E') => {
                let s = format!("{:.*e}", spec.precision.unwrap_or(6), n);
                let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
                let e: i32 = e.parse().unwrap_or(0);
                let s = format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
                if spec.conv == 'E' {
                    s.to_uppercase()
                } else {
                    s
                }
            }
            Some(n) => format!("{:.*}", spec.precision.unwrap_or(6), n),
            None => str_of(value),
        },
        _ => str_of(value),
    };
    let body = if spec.plus && "difFeEgG".contains(spec.conv) && !body.starts_with('-') {
        format!("+{body}")
    } else {
        body
    };
    let len = body.chars().count();
    if len >= width {
        out.push_str(&body);
        return;
    }
    let pad = width - len;
    if spec.left {
        out.push_str(&body);
        out.extend(std::iter::repeat_n(' ', pad));
    } else if spec.zero && spec.conv != 's' && spec.conv != 'r' {
        let (sign, digits) = match body.strip_prefix(['-', '+']) {
            Some(rest) => (&body[..1], rest),
            None => ("", body.as_str()),
        };
        out.push_str(sign);
        out.extend(std::iter::repeat_n('0', pad));
        out.push_str(digits);
    } else {
        out.extend(std::iter::repeat_n(' ', pad));
        out.push_str(&body);
    }
}

fn str_of(v: &Val<'_>) -> String {
    match v {
        Val::Str(s) => s.to_string(),
        Val::Int(i) => i.to_string(),
        Val::Float(f) => python_float_str(*f),
    }
}

/// `str(float)` for the values a record holds (finite, not huge): the shortest round trip,
/// with `.0` for a whole number.
fn python_float_str(f: f64) -> String {
    let s = format!("{f}");
    if s.contains(['.', 'e', 'i', 'N']) {
        s
    } else {
        format!("{s}.0")
    }
}

/// Checks a strftime date format (`log_datefmt`, `log_datefmt_logfile`).
pub fn check_datefmt(fmt: &str) -> Result<(), String> {
    use chrono::format::{Item, StrftimeItems};
    match StrftimeItems::new(fmt).find(|i| matches!(i, Item::Error)) {
        Some(_) => Err(format!("{fmt:?}: not a valid strftime date format")),
        None => Ok(()),
    }
}

/// Where a syslog `log_file` sends to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyslogAddr {
    /// `udp://host[:port]`.
    Udp(String, u16),
    /// `tcp://host[:port]`.
    Tcp(String, u16),
    /// `file:///dev/log`: a local socket (datagram, else stream, as Python's handler tries).
    Unix(PathBuf),
}

/// `log_file` parsed as Salt's `setup_logfile_handler` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTarget {
    /// A plain path: a file appended to and reopened when rotated away (`WatchedFileHandler`).
    File(PathBuf),
    /// Syslog, with its facility number (`LOG_USER`, 1, unless the URL's path names one).
    Syslog {
        /// Where the datagrams go.
        addr: SyslogAddr,
        /// The facility number.
        facility: u8,
    },
}

/// Python `SysLogHandler`'s facility names (`LOG_USER`, ...) and numbers.
fn facility_number(name: &str) -> Option<u8> {
    Some(match name {
        "LOG_KERN" => 0,
        "LOG_USER" => 1,
        "LOG_MAIL" => 2,
        "LOG_DAEMON" => 3,
        "LOG_AUTH" => 4,
        "LOG_SYSLOG" => 5,
        "LOG_LPR" => 6,
        "LOG_NEWS" => 7,
        "LOG_UUCP" => 8,
        "LOG_CRON" => 9,
        "LOG_AUTHPRIV" => 10,
        "LOG_FTP" => 11,
        "LOG_NTP" => 12,
        "LOG_SECURITY" => 13,
        "LOG_CONSOLE" => 14,
        "LOG_SOLCRON" => 15,
        "LOG_LOCAL0" => 16,
        "LOG_LOCAL1" => 17,
        "LOG_LOCAL2" => 18,
        "LOG_LOCAL3" => 19,
        "LOG_LOCAL4" => 20,
        "LOG_LOCAL5" => 21,
        "LOG_LOCAL6" => 22,
        "LOG_LOCAL7" => 23,
        _ => return None,
    })
}

/// `pathlib.Path(p).stem.upper()`: the last component without its last suffix.
fn stem_upper(path: &str) -> String {
    let last = path.rsplit('/').find(|s| !s.is_empty()).unwrap_or("");
    let stem = match last.rfind('.') {
        Some(0) | None => last,
        Some(dot) => &last[..dot],
    };
    stem.to_uppercase()
}

impl LogTarget {
    /// Reads `log_file`: `tcp://host[:port][/LOG_FACILITY]`, `udp://...` and
    /// `file:///socket[/LOG_FACILITY]` are syslog, anything else is a file path.
    pub fn parse(value: &str) -> Result<LogTarget, String> {
        let scheme = value
            .split_once("://")
            .map(|(s, _)| s.to_ascii_lowercase())
            .filter(|s| matches!(s.as_str(), "tcp" | "udp" | "file"));
        let Some(scheme) = scheme else {
            if value.is_empty() {
                return Err("an empty log_file: give a path, or leave the key out".into());
            }
            return Ok(LogTarget::File(PathBuf::from(value)));
        };
        let rest = &value[scheme.len() + 3..];
        let (netloc, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if scheme == "file" {
            if path.is_empty() {
                return Err(format!("{value:?}: a file:// log_file needs a socket path"));
            }
            let name = stem_upper(path);
            let (socket, facility) = if name.starts_with("LOG_") {
                let parent = Path::new(path).parent().unwrap_or(Path::new("/"));
                (parent.to_path_buf(), name)
            } else {
                (PathBuf::from(path), "LOG_USER".to_owned())
            };
            let facility = facility_number(&facility).ok_or_else(|| {
                format!("{value:?}: the syslog facility '{facility}' is not known")
            })?;
            return Ok(LogTarget::Syslog {
                addr: SyslogAddr::Unix(socket),
                facility,
            });
        }
        let facility = if path.is_empty() || path == "/" {
            1
        } else {
            let name = stem_upper(path);
            if !name.starts_with("LOG_") {
                return Err(format!(
                    "{value:?}: the syslog facility '{name}' is not known"
                ));
            }
            facility_number(&name)
                .ok_or_else(|| format!("{value:?}: the syslog facility '{name}' is not known"))?
        };
        let (host, port) = split_netloc(netloc)
            .ok_or_else(|| format!("{value:?}: expected {scheme}://host[:port][/LOG_FACILITY]"))?;
        let addr = if scheme == "udp" {
            SyslogAddr::Udp(host, port)
        } else {
            SyslogAddr::Tcp(host, port)
        };
        Ok(LogTarget::Syslog { addr, facility })
    }
}

/// `host[:port]` or `[v6][:port]` of a URL, the port defaulting to syslog's.
fn split_netloc(netloc: &str) -> Option<(String, u16)> {
    let netloc = netloc.rsplit('@').next().unwrap_or(netloc);
    let (host, port) = if let Some(rest) = netloc.strip_prefix('[') {
        let (h, tail) = rest.split_once(']')?;
        (h, tail.strip_prefix(':'))
    } else {
        match netloc.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (netloc, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        Some(p) => p.parse().ok()?,
        None => SYSLOG_PORT,
    };
    Some((host.to_owned(), port))
}

/// Python `SysLogHandler`'s priority for a level name: unknown names are `warning`.
fn syslog_severity(levelname: &str) -> u8 {
    match levelname {
        "DEBUG" => 7,
        "INFO" => 6,
        "ERROR" => 3,
        "CRITICAL" => 2,
        _ => 4,
    }
}

/// A syslog message as Python's `SysLogHandler` sends it: `<PRI>`, the formatted record, and a
/// NUL (`append_nul`).
pub fn syslog_frame(facility: u8, levelname: &str, formatted: &str) -> Vec<u8> {
    let pri = (u32::from(facility) << 3) | u32::from(syslog_severity(levelname));
    let mut out = format!("<{pri}>{formatted}").into_bytes();
    out.push(0);
    out
}

/// An open log destination.
enum Sink {
    Stderr,
    File {
        path: PathBuf,
        file: std::fs::File,
        /// Device and inode of the file open, to notice it was rotated away.
        id: (u64, u64),
    },
    Udp(UdpSocket, SocketAddr),
    Tcp(Option<TcpStream>, Vec<SocketAddr>),
    UnixDgram(UnixDatagram),
    UnixStream(Option<UnixStream>, PathBuf),
}

/// Opens (creating it and its directory, mode 0640 under Salt's umask 027) the log file.
fn open_file(
    path: &Path,
    owner: Option<(u32, u32)>,
) -> std::io::Result<(std::fs::File, (u64, u64))> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.exists()
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o750)
            .create(dir)?;
        if let Some((uid, gid)) = owner {
            let _ = std::os::unix::fs::chown(dir, Some(uid), Some(gid));
        }
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o640)
        .open(path)?;
    if let Some((uid, gid)) = owner {
        // Salt's verify_log_files: the file belongs to the user the daemon becomes.
        std::os::unix::fs::chown(path, Some(uid), Some(gid))?;
    }
    let m = file.metadata()?;
    Ok((file, (m.dev(), m.ino())))
}

use std::os::unix::fs::DirBuilderExt;

impl Sink {
    fn open(target: &LogTarget, owner: Option<(u32, u32)>) -> Result<Sink, String> {
        match target {
            LogTarget::File(path) => {
                let (file, id) = open_file(path, owner)
                    .map_err(|e| format!("cannot open log file {}: {e}", path.display()))?;
                Ok(Sink::File {
                    path: path.clone(),
                    file,
                    id,
                })
            }
            LogTarget::Syslog { addr, .. } => match addr {
                SyslogAddr::Udp(host, port) => {
                    let to = (host.as_str(), *port)
                        .to_socket_addrs()
                        .ok()
                        .and_then(|mut a| a.next())
                        .ok_or_else(|| format!("cannot resolve syslog host {host}:{port}"))?;
                    let bind: SocketAddr = if to.is_ipv6() {
                        "[::]:0".parse().map_err(|e| format!("{e}"))?
                    } else {
                        "0.0.0.0:0".parse().map_err(|e| format!("{e}"))?
                    };
                    let sock = UdpSocket::bind(bind)
                        .map_err(|e| format!("cannot open a UDP socket for syslog: {e}"))?;
                    Ok(Sink::Udp(sock, to))
                }
                SyslogAddr::Tcp(host, port) => {
                    let addrs: Vec<SocketAddr> = (host.as_str(), *port)
                        .to_socket_addrs()
                        .map_err(|e| format!("cannot resolve syslog host {host}:{port}: {e}"))?
                        .collect();
                    let stream = TcpStream::connect(&addrs[..]).map_err(|e| {
                        format!("failed to set up the syslog logging handler: {host}:{port}: {e}")
                    })?;
                    Ok(Sink::Tcp(Some(stream), addrs))
                }
                SyslogAddr::Unix(path) => {
                    let dgram = UnixDatagram::unbound().and_then(|s| s.connect(path).map(|()| s));
                    match dgram {
                        Ok(s) => Ok(Sink::UnixDgram(s)),
                        Err(_) => {
                            let s = UnixStream::connect(path).map_err(|e| {
                                format!(
                                    "failed to set up the syslog logging handler: {}: {e}",
                                    path.display()
                                )
                            })?;
                            Ok(Sink::UnixStream(Some(s), path.clone()))
                        }
                    }
                }
            },
        }
    }

    /// Writes one formatted record (a line to a file, a datagram to syslog); errors are
    /// dropped, as Python's handlers report them without stopping the program.
    fn write(&mut self, facility: u8, levelname: &str, text: &str) {
        match self {
            Sink::Stderr => {
                let _ = writeln!(std::io::stderr().lock(), "{text}");
            }
            Sink::File { path, file, id } => {
                // WatchedFileHandler: reopen when the path no longer is the file open.
                let current = std::fs::metadata(&*path).ok().map(|m| (m.dev(), m.ino()));
                if current != Some(*id)
                    && let Ok((f, new_id)) = open_file(path, None)
                {
                    *file = f;
                    *id = new_id;
                }
                let mut line = String::with_capacity(text.len() + 1);
                line.push_str(text);
                line.push('\n');
                let _ = file.write_all(line.as_bytes());
            }
            Sink::Udp(sock, to) => {
                let _ = sock.send_to(&syslog_frame(facility, levelname, text), *to);
            }
            Sink::Tcp(stream, addrs) => {
                let frame = syslog_frame(facility, levelname, text);
                if stream.is_none() {
                    *stream = TcpStream::connect(&addrs[..]).ok();
                }
                if let Some(s) = stream
                    && s.write_all(&frame).is_err()
                {
                    *stream = None;
                }
            }
            Sink::UnixDgram(s) => {
                let _ = s.send(&syslog_frame(facility, levelname, text));
            }
            Sink::UnixStream(stream, path) => {
                let frame = syslog_frame(facility, levelname, text);
                if stream.is_none() {
                    *stream = UnixStream::connect(&*path).ok();
                }
                if let Some(s) = stream
                    && s.write_all(&frame).is_err()
                {
                    *stream = None;
                }
            }
        }
    }
}

/// The logging keys of a master or minion config, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct LogOptions {
    /// `log_file`: where the second output goes (none: saltq logs only to stderr, see README).
    pub file: Option<LogTarget>,
    /// `log_level_logfile` (default: `log_level`).
    pub level_logfile: Option<String>,
    /// `log_fmt_console`: set, the console is written in this Salt format instead of
    /// saltq's own.
    pub fmt_console: Option<String>,
    /// `log_fmt_logfile` (default Salt's).
    pub fmt_logfile: String,
    /// `log_datefmt` (default Salt's `%H:%M:%S`); set, the console uses Salt's format.
    pub datefmt: Option<String>,
    /// `log_datefmt_logfile` (default Salt's).
    pub datefmt_logfile: String,
    /// `log_granular_levels`: logger name and Salt level name.
    pub granular: Vec<(String, String)>,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            file: None,
            level_logfile: None,
            fmt_console: None,
            fmt_logfile: DEFAULT_FMT_LOGFILE.to_owned(),
            datefmt: None,
            datefmt_logfile: DEFAULT_DATEFMT_LOGFILE.to_owned(),
            granular: Vec::new(),
        }
    }
}

/// The logging keys as written in a config file (every one optional).
#[derive(Debug, Clone, Default)]
pub struct RawLogKeys {
    /// `log_file`.
    pub log_file: Option<String>,
    /// `log_level_logfile`.
    pub log_level_logfile: Option<String>,
    /// `log_fmt_console`.
    pub log_fmt_console: Option<String>,
    /// `log_fmt_logfile`.
    pub log_fmt_logfile: Option<String>,
    /// `log_datefmt`.
    pub log_datefmt: Option<String>,
    /// `log_datefmt_logfile`.
    pub log_datefmt_logfile: Option<String>,
    /// `log_granular_levels`.
    pub log_granular_levels: Option<std::collections::BTreeMap<String, String>>,
}

impl LogOptions {
    /// Checks the keys; the error names the key and what was wrong. `root_dir` prefixes a
    /// log file path, as Salt's does.
    pub fn from_raw(
        raw: RawLogKeys,
        root_dir: &Path,
    ) -> Result<LogOptions, (&'static str, String)> {
        let file = match raw.log_file.as_deref() {
            None => None,
            Some(v) => match LogTarget::parse(v).map_err(|e| ("log_file", e))? {
                LogTarget::File(p) => Some(LogTarget::File(crate::config::rooted(root_dir, &p))),
                other => Some(other),
            },
        };
        if let Some(l) = &raw.log_level_logfile {
            check_level(l).map_err(|e| ("log_level_logfile", e))?;
        }
        if let Some(f) = &raw.log_fmt_console {
            LogFormat::parse(f).map_err(|e| ("log_fmt_console", e))?;
        }
        let fmt_logfile = raw
            .log_fmt_logfile
            .filter(|f| !f.is_empty())
            .unwrap_or_else(|| DEFAULT_FMT_LOGFILE.to_owned());
        LogFormat::parse(&fmt_logfile).map_err(|e| ("log_fmt_logfile", e))?;
        if let Some(d) = &raw.log_datefmt {
            check_datefmt(d).map_err(|e| ("log_datefmt", e))?;
        }
        let datefmt_logfile = raw
            .log_datefmt_logfile
            .filter(|f| !f.is_empty())
            .unwrap_or_else(|| DEFAULT_DATEFMT_LOGFILE.to_owned());
        check_datefmt(&datefmt_logfile).map_err(|e| ("log_datefmt_logfile", e))?;
        let mut granular = Vec::new();
        for (logger, level) in raw.log_granular_levels.unwrap_or_default() {
            check_level(&level).map_err(|e| ("log_granular_levels", format!("{logger}: {e}")))?;
            granular.push((logger, level));
        }
        Ok(LogOptions {
            file,
            level_logfile: raw.log_level_logfile,
            fmt_console: raw.log_fmt_console.filter(|f| !f.is_empty()),
            fmt_logfile,
            datefmt: raw.log_datefmt,
            datefmt_logfile,
            granular,
        })
    }

    /// The [`LevelPlan`] of the console at `level` (a Salt level name).
    pub fn console_plan(&self, level: &str) -> LevelPlan {
        LevelPlan {
            handler: level_number(level).unwrap_or(30),
            granular: self.granular_numbers(),
        }
    }

    /// The [`LevelPlan`] of the log file: `log_level_logfile`, else the console's `level`.
    pub fn file_plan(&self, level: &str) -> LevelPlan {
        let l = self.level_logfile.as_deref().unwrap_or(level);
        LevelPlan {
            handler: level_number(l).unwrap_or(30),
            granular: self.granular_numbers(),
        }
    }

    fn granular_numbers(&self) -> Vec<(String, u32)> {
        self.granular
            .iter()
            .map(|(n, l)| (n.clone(), level_number(l).unwrap_or(40)))
            .collect()
    }
}

/// The `message` of an event, then its other fields as `key=value`, as tracing's own format.
#[derive(Default)]
struct MessageText {
    message: String,
    fields: String,
}

impl Visit for MessageText {
    fn record_str(&mut self, field: &TField, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }

    fn record_debug(&mut self, field: &TField, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}

/// A `tracing` layer writing every event in a Salt format to a file, syslog or stderr.
pub struct SaltFormatLayer {
    format: LogFormat,
    datefmt: String,
    facility: u8,
    color: bool,
    sink: Mutex<Sink>,
    started: Instant,
    /// The longest logger name written so far (Salt widens `%(name)-17s` to it).
    name_width: AtomicUsize,
}

impl SaltFormatLayer {
    /// A layer writing to `target` (the file created, owned by `owner` when given).
    pub fn open(
        target: &LogTarget,
        format: &str,
        datefmt: &str,
        owner: Option<(u32, u32)>,
    ) -> Result<SaltFormatLayer, String> {
        let facility = match target {
            LogTarget::Syslog { facility, .. } => *facility,
            LogTarget::File(_) => 1,
        };
        Ok(SaltFormatLayer {
            format: LogFormat::parse(format)?,
            datefmt: datefmt.to_owned(),
            facility,
            color: false,
            sink: Mutex::new(Sink::open(target, owner)?),
            started: Instant::now(),
            name_width: AtomicUsize::new(0),
        })
    }

    /// A layer writing to stderr (the console in a Salt format), coloured when `color`.
    pub fn stderr(format: &str, datefmt: &str, color: bool) -> Result<SaltFormatLayer, String> {
        Ok(SaltFormatLayer {
            format: LogFormat::parse(format)?,
            datefmt: datefmt.to_owned(),
            facility: 1,
            color,
            sink: Mutex::new(Sink::Stderr),
            started: Instant::now(),
            name_width: AtomicUsize::new(0),
        })
    }
}

impl<S: Subscriber> Layer<S> for SaltFormatLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        let mut text = MessageText::default();
        event.record(&mut text);
        let message = if text.fields.is_empty() {
            text.message
        } else {
            format!("{}{}", text.message, text.fields)
        };
        let name_len = meta.target().len() - meta.target().matches("::").count();
        let width = self
            .name_width
            .fetch_max(name_len, Ordering::Relaxed)
            .max(name_len);
        let thread = std::thread::current();
        let record = Record {
            created: SystemTime::now(),
            relative: self.started.elapsed().as_secs_f64(),
            target: meta.target(),
            level: *meta.level(),
            file: meta.file(),
            line: meta.line(),
            message: &message,
            pid: std::process::id(),
            thread_name: thread.name().unwrap_or("MainThread"),
            thread_id: 0,
        };
        let formatted = self
            .format
            .render(&record, &self.datefmt, width, self.color);
        let (_, levelname) = python_level(meta.level());
        if let Ok(mut sink) = self.sink.lock() {
            sink.write(self.facility, levelname, &formatted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record<'a>(message: &'a str, level: tracing::Level) -> Record<'a> {
        Record {
            // 2026-01-02 03:04:05.678 UTC
            created: SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_767_323_045_678),
            relative: 1.5,
            target: "saltq_master::run",
            level,
            file: Some("master/src/run.rs"),
            line: Some(42),
            message,
            pid: 4242,
            thread_name: "main",
            thread_id: 7,
        }
    }

    /// Each case checked against Python: `logging.Formatter(fmt).format(record)` for a
    /// record with the same fields (name `saltq_master.run`, lineno 42, process 4242).
    #[test]
    fn formats_render_as_python_logging() {
        let r = record("hello", tracing::Level::WARN);
        let cases = [
            (DEFAULT_FMT_CONSOLE, "[WARNING ] hello"),
            (
                "%(levelname)s:%(name)s:%(message)s",
                "WARNING:saltq_master.run:hello",
            ),
            ("[%(name)-17s:%(lineno)-4d]", "[saltq_master.run :42  ]"),
            ("%(bracketlevel)s%(bracketprocess)s", "[WARNING ][ 4242]"),
            ("%(bracketname)s", "[saltq_master.run ]"),
            ("%(levelno)d %(levelno)03d %(levelno)+d", "30 030 +30"),
            ("%(msecs)03d %(msecs).1f", "678 678.0"),
            (
                "%(module)s %(filename)s %(pathname)s",
                "run run.rs master/src/run.rs",
            ),
            (
                "%(message).3s|%(message)8s|%(message)r",
                "hel|   hello|'hello'",
            ),
            ("100%% %(process)d", "100% 4242"),
            ("%(relativeCreated)d %(created).0f", "1500 1767323046"),
        ];
        for (fmt, want) in cases {
            let f = LogFormat::parse(fmt).unwrap();
            assert_eq!(f.render(&r, DEFAULT_DATEFMT, 0, false), want, "{fmt}");
        }
    }

    #[test]
    fn the_default_logfile_format_is_salts() {
        let r = record("Starting up", tracing::Level::INFO);
        let f = LogFormat::parse(DEFAULT_FMT_LOGFILE).unwrap();
        let line = f.render(&r, DEFAULT_DATEFMT_LOGFILE, 0, false);
        let local: chrono::DateTime<chrono::Local> = r.created.into();
        let want = format!(
            "{},678 [saltq_master.run :42  ][INFO    ][4242] Starting up",
            local.format("%Y-%m-%d %H:%M:%S")
        );
        assert_eq!(line, want);
        // Salt widens the name to the longest logger name seen, up to 80.
        let wide = f.render(&r, DEFAULT_DATEFMT_LOGFILE, 20, false);
        assert!(wide.contains("[saltq_master.run    :42  ]"), "{wide}");
        let capped = f.render(&r, DEFAULT_DATEFMT_LOGFILE, 500, false);
        assert!(capped.contains(&format!("[saltq_master.run{}:42", " ".repeat(64))));
    }

    #[test]
    fn colour_fields_colour_only_when_asked() {
        let r = record("boom", tracing::Level::ERROR);
        let f = LogFormat::parse("%(colorlevel)s %(colormsg)s").unwrap();
        assert_eq!(f.render(&r, "", 0, false), "[ERROR   ] boom");
        assert_eq!(
            f.render(&r, "", 0, true),
            "\x1b[1;31m[ERROR   ]\x1b[0m \x1b[31mboom\x1b[0m"
        );
    }

    #[test]
    fn bad_formats_name_the_problem() {
        let e = LogFormat::parse("%(nme)s %(message)s").unwrap_err();
        assert!(e.contains("unknown log record field %(nme)s"), "{e}");
        let e = LogFormat::parse("%s").unwrap_err();
        assert!(e.contains("named fields"), "{e}");
        let e = LogFormat::parse("%(message)").unwrap_err();
        assert!(e.contains("incomplete format"), "{e}");
        let e = LogFormat::parse("%(message)k").unwrap_err();
        assert!(e.contains("unsupported format character 'k'"), "{e}");
        let e = LogFormat::parse("%(message").unwrap_err();
        assert!(e.contains("closing parenthesis"), "{e}");
        assert!(check_datefmt("%Y-%m-%d %H:%M:%S").is_ok());
        assert!(check_datefmt("%Q").is_err());
    }

    #[test]
    fn log_file_forms_parse_as_salt_reads_them() {
        use LogTarget::*;
        use SyslogAddr::*;
        let cases = [
            ("/var/log/salt/master", File("/var/log/salt/master".into())),
            ("master.log", File("master.log".into())),
            (
                "udp://localhost",
                Syslog {
                    addr: Udp("localhost".into(), 514),
                    facility: 1,
                },
            ),
            (
                "udp://localhost:5145/LOG_KERN",
                Syslog {
                    addr: Udp("localhost".into(), 5145),
                    facility: 0,
                },
            ),
            (
                "tcp://localhost/LOG_DAEMON",
                Syslog {
                    addr: Tcp("localhost".into(), 514),
                    facility: 3,
                },
            ),
            (
                "tcp://[::1]:601/log_local3",
                Syslog {
                    addr: Tcp("::1".into(), 601),
                    facility: 19,
                },
            ),
            (
                "file:///dev/log",
                Syslog {
                    addr: Unix("/dev/log".into()),
                    facility: 1,
                },
            ),
            (
                "file:///dev/log/LOG_SYSLOG",
                Syslog {
                    addr: Unix("/dev/log".into()),
                    facility: 5,
                },
            ),
        ];
        for (text, want) in cases {
            assert_eq!(LogTarget::parse(text), Ok(want), "{text}");
        }
        for (bad, says) in [
            ("udp://localhost/daemon", "facility 'DAEMON' is not known"),
            (
                "udp://localhost/LOG_NOPE",
                "facility 'LOG_NOPE' is not known",
            ),
            (
                "file:///dev/log/LOG_NOPE",
                "facility 'LOG_NOPE' is not known",
            ),
            ("udp://:514", "expected udp://host"),
            ("tcp://host:port", "expected tcp://host"),
            ("file://", "needs a socket path"),
            ("", "empty log_file"),
        ] {
            let e = LogTarget::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn syslog_frames_carry_python_priorities() {
        // LOG_USER (1) << 3 | warning (4) = 12; Python appends a NUL.
        assert_eq!(syslog_frame(1, "WARNING", "x"), b"<12>x\0");
        assert_eq!(syslog_frame(3, "DEBUG", "y"), b"<31>y\0");
        assert_eq!(syslog_frame(1, "ERROR", ""), b"<11>\0");
        // Levels Python's map lacks (TRACE) are sent as warning.
        assert_eq!(syslog_frame(16, "TRACE", "t"), b"<132>t\0");
    }

    #[test]
    fn granular_levels_set_a_logger_and_those_under_it() {
        let plan = LevelPlan {
            handler: 10,
            granular: vec![
                ("saltq_master".into(), 30),
                ("saltq_master.run".into(), 10),
                ("quinn".into(), 40),
            ],
        };
        let cases = [
            ("saltq_master::run", 10, true),
            ("saltq_master::run::inner", 10, true),
            ("saltq_master::keys", 10, false),
            ("saltq_master::keys", 30, true),
            ("saltq_master_extra", 10, true),
            ("quinn::endpoint", 30, false),
            ("quinn::endpoint", 40, true),
            ("saltq_minion", 5, false),
            ("saltq_minion", 10, true),
        ];
        for (target, level, want) in cases {
            assert_eq!(plan.enabled(target, level), want, "{target} {level}");
        }
    }

    #[test]
    fn options_are_checked_with_the_key_named() {
        let raw = RawLogKeys {
            log_file: Some("/var/log/saltq/master".into()),
            log_level_logfile: Some("debug".into()),
            ..RawLogKeys::default()
        };
        let o = LogOptions::from_raw(raw, Path::new("/srv/root")).unwrap();
        assert_eq!(
            o.file,
            Some(LogTarget::File("/srv/root/var/log/saltq/master".into()))
        );
        assert_eq!(o.file_plan("warning").handler, 10);
        assert_eq!(o.console_plan("warning").handler, 30);
        assert_eq!(o.fmt_logfile, DEFAULT_FMT_LOGFILE);
        for (raw, key) in [
            (
                RawLogKeys {
                    log_level_logfile: Some("loud".into()),
                    ..RawLogKeys::default()
                },
                "log_level_logfile",
            ),
            (
                RawLogKeys {
                    log_fmt_logfile: Some("%(when)s".into()),
                    ..RawLogKeys::default()
                },
                "log_fmt_logfile",
            ),
            (
                RawLogKeys {
                    log_datefmt: Some("%Q".into()),
                    ..RawLogKeys::default()
                },
                "log_datefmt",
            ),
            (
                RawLogKeys {
                    log_granular_levels: Some([("salt".into(), "chatty".into())].into()),
                    ..RawLogKeys::default()
                },
                "log_granular_levels",
            ),
            (
                RawLogKeys {
                    log_file: Some("udp://h/LOG_X".into()),
                    ..RawLogKeys::default()
                },
                "log_file",
            ),
        ] {
            assert_eq!(
                LogOptions::from_raw(raw, Path::new("/")).unwrap_err().0,
                key
            );
        }
    }

    #[test]
    fn a_log_file_is_appended_and_reopened_after_rotation() {
        let dir = std::env::temp_dir().join(format!("saltq-saltlog-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("sub/master");
        let target = LogTarget::File(path.clone());
        let mut sink = Sink::open(&target, None).unwrap();
        sink.write(1, "INFO", "one");
        std::fs::rename(&path, dir.join("sub/master.1")).unwrap();
        sink.write(1, "INFO", "two");
        assert_eq!(
            std::fs::read_to_string(dir.join("sub/master.1")).unwrap(),
            "one\n"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        let mode = std::fs::metadata(&path).unwrap().mode() & 0o777;
        assert_eq!(mode & 0o007, 0, "{mode:o}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn syslog_over_udp_reaches_a_listener() {
        let listener = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let target = LogTarget::parse(&format!("udp://127.0.0.1:{port}/LOG_DAEMON")).unwrap();
        let mut sink = Sink::open(&target, None).unwrap();
        sink.write(3, "ERROR", "[ERROR   ] it broke");
        let mut buf = [0u8; 256];
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"<27>[ERROR   ] it broke\0");
    }
}
