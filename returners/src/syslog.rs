//! The `syslog` returner: the return as JSON in one syslog message, with Salt's options
//! (`level`, `facility`, `tag`, `options`, named as Python's `syslog` module names them).
//!
//! saltq adds where to send it: `address` is a datagram socket path (default `/dev/log`, what
//! Python's `syslog.syslog` writes to) or `host:port` for UDP; `format` is `rfc3164` (the
//! default: glibc's local form on a socket, with the hostname over UDP) or `rfc5424`.

use std::path::PathBuf;

use serde_json::Value;
use tokio::net::{UdpSocket, UnixDatagram};

use crate::error::ReturnerError;
use crate::options::Resolved;
use saltq_semantics::python::salt_dumps;

const RETURNER: &str = "syslog";

/// Python's `syslog.LOG_*` priorities.
const LEVELS: &[(&str, u8)] = &[
    ("LOG_EMERG", 0),
    ("LOG_ALERT", 1),
    ("LOG_CRIT", 2),
    ("LOG_ERR", 3),
    ("LOG_WARNING", 4),
    ("LOG_NOTICE", 5),
    ("LOG_INFO", 6),
    ("LOG_DEBUG", 7),
];

/// Python's `syslog.LOG_*` facilities (Linux values).
const FACILITIES: &[(&str, u8)] = &[
    ("LOG_KERN", 0),
    ("LOG_USER", 1),
    ("LOG_MAIL", 2),
    ("LOG_DAEMON", 3),
    ("LOG_AUTH", 4),
    ("LOG_SYSLOG", 5),
    ("LOG_LPR", 6),
    ("LOG_NEWS", 7),
    ("LOG_UUCP", 8),
    ("LOG_CRON", 9),
    ("LOG_AUTHPRIV", 10),
    ("LOG_LOCAL0", 16),
    ("LOG_LOCAL1", 17),
    ("LOG_LOCAL2", 18),
    ("LOG_LOCAL3", 19),
    ("LOG_LOCAL4", 20),
    ("LOG_LOCAL5", 21),
    ("LOG_LOCAL6", 22),
    ("LOG_LOCAL7", 23),
];

/// Python's `syslog.openlog` options; only `LOG_PID` and `LOG_PERROR` change anything here.
const OPTIONS: &[&str] = &[
    "LOG_PID",
    "LOG_CONS",
    "LOG_NDELAY",
    "LOG_NOWAIT",
    "LOG_ODELAY",
    "LOG_PERROR",
];

/// Where a message goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Address {
    /// A datagram socket such as `/dev/log`.
    Unix(PathBuf),
    /// `host:port` over UDP.
    Udp(String),
}

/// The message framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// BSD syslog: `<PRI>Mmm dd hh:mm:ss [host ]tag[pid]: msg`.
    Rfc3164,
    /// `<PRI>1 timestamp host app procid - - msg`.
    Rfc5424,
}

/// What to send where.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Facility × 8 + level.
    priority: u8,
    tag: String,
    pid: bool,
    perror: bool,
    address: Address,
    format: Format,
}

impl Settings {
    /// Reads `level`, `facility`, `tag`, `options`, `address`, `format`.
    pub(crate) fn from_options(r: &Resolved) -> Result<Settings, ReturnerError> {
        let lookup = |key: &str, table: &[(&str, u8)], what: &str| -> Result<u8, ReturnerError> {
            let name = r.str(key)?.unwrap_or_default();
            table
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| *v)
                .ok_or_else(|| {
                    let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
                    r.invalid(
                        key,
                        format!(
                            "{name:?} is not a syslog {what} (one of {})",
                            names.join(", ")
                        ),
                    )
                })
        };
        let level = lookup("level", LEVELS, "level")?;
        let facility = lookup("facility", FACILITIES, "facility")?;
        let options = r.str_list("options")?;
        if let Some(bad) = options.iter().find(|o| !OPTIONS.contains(&o.as_str())) {
            return Err(r.invalid(
                "options",
                format!(
                    "{bad:?} is not a syslog option (one of {})",
                    OPTIONS.join(", ")
                ),
            ));
        }
        let tag = match r.str("tag")? {
            Some(tag) if tag.chars().count() > 32 => {
                return Err(r.invalid("tag", "is limited to 32 characters"));
            }
            Some(tag) if tag.is_empty() || tag.contains(char::is_whitespace) => {
                return Err(r.invalid("tag", "must be one word"));
            }
            Some(tag) => tag,
            None => program_name(),
        };
        let address = match r.str("address")?.unwrap_or_default() {
            a if a.starts_with('/') => Address::Unix(PathBuf::from(a)),
            a => match a.rsplit_once(':') {
                Some((host, port))
                    if !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) =>
                {
                    Address::Udp(a)
                }
                _ => {
                    return Err(r.invalid(
                        "address",
                        format!("{a:?} is neither a socket path nor host:port"),
                    ));
                }
            },
        };
        let format = match r.str("format")?.as_deref() {
            Some("rfc3164") | None => Format::Rfc3164,
            Some("rfc5424") => Format::Rfc5424,
            Some(other) => {
                return Err(r.invalid(
                    "format",
                    format!("{other:?} is neither rfc3164 nor rfc5424"),
                ));
            }
        };
        Ok(Settings {
            priority: facility * 8 + level,
            tag,
            pid: options.iter().any(|o| o == "LOG_PID"),
            perror: options.iter().any(|o| o == "LOG_PERROR"),
            address,
            format,
        })
    }

    fn target(&self) -> String {
        match &self.address {
            Address::Unix(p) => p.display().to_string(),
            Address::Udp(a) => format!("udp {a}"),
        }
    }
}

/// Python's default ident: the program's file name.
fn program_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|a| {
            PathBuf::from(a)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "saltq".into())
}

/// The message as sent, for `msg` at `now`.
fn frame(
    s: &Settings,
    msg: &str,
    now: chrono::DateTime<chrono::Local>,
    host: &str,
    pid: u32,
) -> String {
    let pri = s.priority;
    match s.format {
        Format::Rfc3164 => {
            let stamp = now.format("%b %e %H:%M:%S");
            let host = match s.address {
                // Local daemons add the hostname themselves (glibc's syslog(3) sends none).
                Address::Unix(_) => String::new(),
                Address::Udp(_) => format!("{host} "),
            };
            let pid = if s.pid {
                format!("[{pid}]")
            } else {
                String::new()
            };
            format!("<{pri}>{stamp} {host}{}{pid}: {msg}", s.tag)
        }
        Format::Rfc5424 => {
            let stamp = now
                .with_timezone(&chrono::Utc)
                .format("%Y-%m-%dT%H:%M:%S%.6fZ");
            let procid = if s.pid { pid.to_string() } else { "-".into() };
            format!("<{pri}>1 {stamp} {host} {} {procid} - - {msg}", s.tag)
        }
    }
}

/// `returner(ret)`: one message holding the return as JSON.
pub(crate) async fn returner(s: &Settings, load: &Value) -> Result<(), ReturnerError> {
    let host = gethostname::gethostname()
        .to_string_lossy()
        .replace(' ', "_");
    let message = frame(
        s,
        &salt_dumps(load),
        chrono::Local::now(),
        &host,
        std::process::id(),
    );
    if s.perror {
        eprintln!("{message}");
    }
    let fail = |cause: String| ReturnerError::Backend {
        returner: RETURNER,
        target: s.target(),
        action: format!("send a {}-byte message", message.len()),
        cause,
    };
    let sent = match &s.address {
        Address::Unix(path) => match UnixDatagram::unbound() {
            Ok(sock) => sock.send_to(message.as_bytes(), path).await,
            Err(e) => Err(e),
        },
        Address::Udp(addr) => send_udp(addr, message.as_bytes()).await,
    };
    sent.map(|_| ()).map_err(|e| fail(e.to_string()))
}

async fn send_udp(addr: &str, bytes: &[u8]) -> std::io::Result<usize> {
    let mut last = std::io::Error::new(
        std::io::ErrorKind::NotFound,
        "the name resolves to no address",
    );
    for target in tokio::net::lookup_host(addr).await? {
        let local = if target.is_ipv4() {
            "0.0.0.0:0"
        } else {
            "[::]:0"
        };
        let attempt = async {
            let sock = UdpSocket::bind(local).await?;
            sock.send_to(bytes, target).await
        };
        match attempt.await {
            Ok(n) => return Ok(n),
            Err(e) => last = e,
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn settings(format: Format, address: Address, pid: bool) -> Settings {
        Settings {
            priority: 8 + 6,
            tag: "salt-minion".into(),
            pid,
            perror: false,
            address,
            format,
        }
    }

    #[test]
    fn frames() {
        let now = chrono::Local
            .with_ymd_and_hms(2026, 1, 5, 9, 8, 7)
            .single()
            .unwrap_or_else(chrono::Local::now);
        let unix = settings(Format::Rfc3164, Address::Unix("/dev/log".into()), false);
        assert_eq!(
            frame(&unix, "{}", now, "h", 42),
            "<14>Jan  5 09:08:07 salt-minion: {}"
        );
        let udp = settings(Format::Rfc3164, Address::Udp("x:514".into()), true);
        assert_eq!(
            frame(&udp, "{}", now, "h", 42),
            "<14>Jan  5 09:08:07 h salt-minion[42]: {}"
        );
        let r5424 = settings(Format::Rfc5424, Address::Udp("x:514".into()), false);
        let text = frame(&r5424, "{}", now, "h", 42);
        assert!(
            text.starts_with("<14>1 2026-01-0") && text.ends_with("Z h salt-minion - - - {}"),
            "{text}"
        );
    }
}
