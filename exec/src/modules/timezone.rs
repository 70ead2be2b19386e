//! Salt's `timezone` module on Linux (`salt/modules/timezone.py`). As in Salt, `timedatectl`
//! is used whenever it is on the PATH (so on a host where it is installed but systemd does
//! not run, reading the zone or the hardware clock fails with its error); without it the
//! zone comes from the OS family's files (`/etc/timezone` on Debian and Gentoo,
//! `/etc/sysconfig/clock` on Red Hat and SUSE, the `/etc/localtime` link elsewhere) and
//! `set_zone` links `/etc/localtime` and writes those files.

use std::path::Path;

use serde_json::{Value, json};

use saltq_semantics::python;

use crate::error::ExecError;
use crate::modules::cmd::which_path;
use crate::modules::run_cmd;
use crate::spec::{Call, Function, Param};

/// The `timezone` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("timezone.get_zone", handler!(get_zone)).doc(GET_ZONE_DOC),
    Function::new("timezone.get_zonecode", handler!(get_zonecode)).doc(GET_ZONECODE_DOC),
    Function::new("timezone.get_offset", handler!(get_offset)).doc(GET_OFFSET_DOC),
    Function::new("timezone.set_zone", handler!(set_zone))
        .params(&[Param::req("timezone")])
        .doc(SET_ZONE_DOC),
    Function::new("timezone.zone_compare", handler!(zone_compare))
        .params(&[Param::req("timezone")])
        .doc(ZONE_COMPARE_DOC),
    Function::new("timezone.get_hwclock", handler!(get_hwclock)).doc(GET_HWCLOCK_DOC),
    Function::new("timezone.set_hwclock", handler!(set_hwclock))
        .params(&[Param::req("clock")])
        .doc(SET_HWCLOCK_DOC),
];

const LOCALTIME: &str = "/etc/localtime";
const ZONEINFO: &str = "/usr/share/zoneinfo/";

fn os_family(call: &Call) -> String {
    python::str(&call.ctx.grains()["os_family"])
}

fn family_in(family: &str, names: &[&str]) -> bool {
    names.iter().any(|n| family.contains(n))
}

/// `timedatectl`'s output, or Salt's error with its stderr.
async fn timedatectl(call: &Call) -> Result<String, ExecError> {
    let out = run_cmd(call, &["timedatectl"]).await?;
    if out.code != 0 {
        return Err(ExecError::execution(format!(
            "timedatectl failed: {}",
            out.stderr.trim_end()
        )));
    }
    Ok(out.stdout.trim_end().to_owned())
}

fn parse_failure(out: &str) -> ExecError {
    ExecError::execution(format!(
        "Failed to parse timedatectl output: {out}\nPlease file an issue with SaltStack"
    ))
}

/// The zone named in `timedatectl`'s output (`Time zone: Etc/UTC (UTC, +0000)`).
pub(crate) fn zone_from_timedatectl(out: &str) -> Option<String> {
    out.lines().map(str::trim).find_map(|line| {
        let rest = line
            .strip_prefix("Time zone:")
            .or_else(|| line.strip_prefix("Timezone:"))?;
        if !rest.starts_with(char::is_whitespace) {
            return None;
        }
        rest.split_whitespace().next().map(str::to_owned)
    })
}

/// `UTC` or `localtime` from `timedatectl`'s `RTC in local TZ:` line.
pub(crate) fn hwclock_from_timedatectl(out: &str) -> Option<&'static str> {
    out.lines()
        .map(str::trim)
        .find(|l| l.to_lowercase().contains("rtc in local tz"))
        .map(|l| {
            let value = l.rsplit(':').next().unwrap_or_default();
            if value.trim().eq_ignore_ascii_case("yes") {
                "localtime"
            } else {
                "UTC"
            }
        })
}

/// The zone a `ZONE=`/`TIMEZONE=` line of `/etc/sysconfig/clock` names (`UTC` when empty).
pub(crate) fn zone_from_sysconfig(text: &str) -> Option<String> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .find(|l| l.contains("ZONE") && l.contains('='))
        .map(|l| {
            let v = l.rsplit('=').next().unwrap_or_default();
            let v = v.trim_matches(|c| c == '\'' || c == '"');
            if v.is_empty() { "UTC".into() } else { v.into() }
        })
}

/// The zone `/etc/localtime` is: the name of the file it links to, or of the zoneinfo file
/// with the same contents.
fn zone_from_localtime() -> Result<String, ExecError> {
    match std::fs::read_link(LOCALTIME) {
        Ok(target) => {
            let joined = Path::new("/etc").join(target);
            let norm = normpath(&joined.display().to_string());
            if let Some(name) = norm.strip_prefix(ZONEINFO) {
                return Ok(name.to_owned());
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ExecError::execution(format!("{LOCALTIME} does not exist")));
        }
        Err(_) => {
            let want = std::fs::read(LOCALTIME)
                .map_err(|_| ExecError::execution("Unable to determine timezone"))?;
            if let Some(found) = find_same(Path::new(ZONEINFO), &want) {
                return Ok(found);
            }
        }
    }
    Err(ExecError::execution("Unable to determine timezone"))
}

/// The first zoneinfo file (by walk order, names starting lowercase skipped as Salt does)
/// whose contents are `want`.
fn find_same(dir: &Path, want: &[u8]) -> Option<String> {
    let mut entries: Vec<_> = std::fs::read_dir(dir).ok()?.flatten().collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    let (dirs, files): (Vec<_>, Vec<_>) = entries
        .into_iter()
        .partition(|e| e.file_type().is_ok_and(|t| t.is_dir()));
    for f in files {
        let path = f.path();
        let name = path.display().to_string();
        let olson = name.strip_prefix(ZONEINFO).unwrap_or(&name).to_owned();
        if olson.starts_with(|c: char| c.is_ascii_lowercase()) {
            continue;
        }
        if std::fs::read(&path).is_ok_and(|b| b == want) {
            return Some(olson);
        }
    }
    dirs.iter().find_map(|d| find_same(&d.path(), want))
}

/// Python's `os.path.normpath` for an absolute path.
fn normpath(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

const GET_ZONE_DOC: &str = "Get current timezone (i.e. America/Denver)

CLI Example:

.. code-block:: bash

    salt '*' timezone.get_zone
";

async fn get_zone(call: Call) -> Result<Value, ExecError> {
    Ok(json!(zone(&call).await?))
}

/// Salt's `get_zone`.
async fn zone(call: &Call) -> Result<String, ExecError> {
    if which_path("timedatectl").is_some() {
        let out = timedatectl(call).await?;
        return zone_from_timedatectl(&out).ok_or_else(|| parse_failure(&out));
    }
    let family = os_family(call);
    if python::str(&call.ctx.grains()["os"]).to_lowercase() == "centos" {
        return zone_from_localtime();
    }
    if family_in(&family, &["RedHat", "Suse"]) {
        let path = "/etc/sysconfig/clock";
        let text = std::fs::read_to_string(path).unwrap_or_default();
        return zone_from_sysconfig(&text)
            .ok_or_else(|| ExecError::execution(format!("Unable to get timezone from {path}")));
    }
    if family_in(&family, &["Debian", "Gentoo"]) {
        return std::fs::read_to_string("/etc/timezone")
            .map(|t| t.trim().to_owned())
            .map_err(|e| {
                ExecError::execution(format!(
                    "Problem reading timezone file /etc/timezone: {}",
                    strerror(&e)
                ))
            });
    }
    if ["FreeBSD", "OpenBSD", "NetBSD", "NILinuxRT", "Slackware"].contains(&family.as_str()) {
        return zone_from_localtime();
    }
    Err(ExecError::execution("Unable to get timezone"))
}

/// Python's `OSError.strerror`: the message without Rust's ` (os error N)`.
fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    text.split(" (os error").next().unwrap_or(&text).to_owned()
}

const GET_ZONECODE_DOC: &str = "Get current timezone (i.e. PST, MDT, etc)

CLI Example:

.. code-block:: bash

    salt '*' timezone.get_zonecode
";

async fn get_zonecode(call: Call) -> Result<Value, ExecError> {
    let out = run_cmd(&call, &["date", "+%Z"]).await?;
    Ok(json!(format!("{}{}", out.stdout, out.stderr).trim_end()))
}

const GET_OFFSET_DOC: &str = "Get current numeric timezone offset from UTC (i.e. -0700)

CLI Example:

.. code-block:: bash

    salt '*' timezone.get_offset
";

async fn get_offset(call: Call) -> Result<Value, ExecError> {
    let out = run_cmd(&call, &["date", "+%z"]).await?;
    Ok(json!(format!("{}{}", out.stdout, out.stderr).trim_end()))
}

const SET_ZONE_DOC: &str = "Unlinks, then symlinks /etc/localtime to the set timezone.

The timezone is crucial to several system processes, each of which SHOULD
be restarted (for instance, whatever you system uses as its cron and
syslog daemons). This will not be automagically done and must be done
manually!

CLI Example:

.. code-block:: bash

    salt '*' timezone.set_zone 'America/Denver'
";

async fn set_zone(call: Call) -> Result<Value, ExecError> {
    let timezone = python::str(call.arg("timezone"));
    if which_path("timedatectl").is_some() {
        // Salt runs it through cmd.run and ignores how it ends.
        let _ = run_cmd(&call, &["timedatectl", "set-timezone", &timezone]).await;
    }
    let zonepath = format!("{ZONEINFO}{timezone}");
    if !Path::new(&zonepath).exists() {
        return Ok(json!(format!("Zone does not exist: {zonepath}")));
    }
    link_localtime(&zonepath)?;
    let family = os_family(&call);
    if family.contains("RedHat") {
        sed(
            "/etc/sysconfig/clock",
            "^ZONE=.*",
            &format!("ZONE=\"{timezone}\""),
        )?;
    } else if family.contains("Suse") {
        sed(
            "/etc/sysconfig/clock",
            "^TIMEZONE=.*",
            &format!("TIMEZONE=\"{timezone}\""),
        )?;
    } else if family_in(&family, &["Debian", "Gentoo"]) {
        std::fs::write("/etc/timezone", format!("{}\n", timezone.trim())).map_err(|e| {
            ExecError::execution(format!("could not write /etc/timezone: {}", strerror(&e)))
        })?;
    }
    Ok(json!(true))
}

/// `/etc/localtime` replaced by a link to `zonepath`.
fn link_localtime(zonepath: &str) -> Result<(), ExecError> {
    if std::fs::symlink_metadata(LOCALTIME).is_ok() {
        std::fs::remove_file(LOCALTIME).map_err(|e| {
            ExecError::execution(format!("could not remove {LOCALTIME}: {}", strerror(&e)))
        })?;
    }
    std::os::unix::fs::symlink(zonepath, LOCALTIME)
        .map_err(|e| ExecError::execution(format!("could not link {LOCALTIME}: {}", strerror(&e))))
}

/// Salt's `file.sed` as these functions use it: every line matching `pattern` replaced; a
/// missing file left alone.
fn sed(path: &str, pattern: &str, repl: &str) -> Result<(), ExecError> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(());
    };
    let re = regex::Regex::new(pattern).map_err(|e| ExecError::execution(e.to_string()))?;
    let new: String = text
        .split_inclusive('\n')
        .map(|line| {
            let body = line.trim_end_matches('\n');
            let end = &line[body.len()..];
            format!("{}{end}", re.replace(body, regex::NoExpand(repl)))
        })
        .collect();
    if new != text {
        std::fs::write(path, new).map_err(|e| {
            ExecError::execution(format!("could not write {path}: {}", strerror(&e)))
        })?;
    }
    Ok(())
}

const ZONE_COMPARE_DOC: &str = "Compares the given timezone name with the system timezone name.
Checks the hash sum between the given timezone, and the one set in
/etc/localtime. Returns True if names and hash sums match, and False if not.
Mostly useful for running state checks.

CLI Example:

.. code-block:: bash

    salt '*' timezone.zone_compare 'America/Denver'
";

async fn zone_compare(call: Call) -> Result<Value, ExecError> {
    let timezone = python::str(call.arg("timezone"));
    let zonepath = format!("{ZONEINFO}{timezone}");
    // `filecmp.cmp`: both files are looked at, /etc/localtime first.
    let mine = std::fs::read(LOCALTIME).map_err(|e| {
        ExecError::execution(format!(
            "Failed to read {LOCALTIME} to determine current timezone: {}",
            strerror(&e)
        ))
    })?;
    let theirs = std::fs::read(&zonepath).map_err(|_| {
        ExecError::invocation(format!("Can't find a local timezone \"{timezone}\""))
    })?;
    Ok(json!(mine == theirs))
}

const GET_HWCLOCK_DOC: &str = "Get current hardware clock setting (UTC or localtime)

CLI Example:

.. code-block:: bash

    salt '*' timezone.get_hwclock
";

async fn get_hwclock(call: Call) -> Result<Value, ExecError> {
    hwclock(&call).await
}

/// The last line of `/etc/adjtime` (`UTC` or `LOCAL`); `None` without a real-time clock.
async fn adjtime(call: &Call) -> Result<Value, ExecError> {
    if Path::new("/etc/adjtime").exists() {
        let out = run_cmd(call, &["tail", "-n", "1", "/etc/adjtime"]).await?;
        return Ok(json!(format!("{}{}", out.stdout, out.stderr).trim_end()));
    }
    if Path::new("/dev/rtc").exists() {
        return Err(ExecError::execution(
            "Unable to get hwclock timezone from /etc/adjtime",
        ));
    }
    Ok(Value::Null)
}

/// `UTC` or `localtime` from the `UTC=` line of Debian's `/etc/default/rcS`.
pub(crate) fn hwclock_from_rcs(text: &str) -> Option<&'static str> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .find(|l| l.contains("UTC="))
        .map(|l| {
            if l.rsplit('=').next().unwrap_or_default().to_lowercase() == "yes" {
                "UTC"
            } else {
                "localtime"
            }
        })
}

/// Salt's `get_hwclock` on Linux.
async fn hwclock(call: &Call) -> Result<Value, ExecError> {
    if which_path("timedatectl").is_some() {
        let out = timedatectl(call).await?;
        return hwclock_from_timedatectl(&out)
            .map(|c| json!(c))
            .ok_or_else(|| parse_failure(&out));
    }
    let family = os_family(call);
    if family_in(&family, &["Debian"])
        && let Ok(text) = std::fs::read_to_string("/etc/default/rcS")
        && let Some(clock) = hwclock_from_rcs(&text)
    {
        return Ok(json!(clock));
    }
    adjtime(call).await
}

const SET_HWCLOCK_DOC: &str = "Sets the hardware clock to be either UTC or localtime

CLI Example:

.. code-block:: bash

    salt '*' timezone.set_hwclock UTC
";

async fn set_hwclock(call: Call) -> Result<Value, ExecError> {
    let clock = python::str(call.arg("clock"));
    if which_path("timedatectl").is_some() {
        let local = if clock == "localtime" {
            "true"
        } else {
            "false"
        };
        let out = run_cmd(&call, &["timedatectl", "set-local-rtc", local]).await?;
        return Ok(json!(out.code == 0));
    }
    let timezone = zone(&call).await?;
    let zonepath = format!("{ZONEINFO}{timezone}");
    if !Path::new(&zonepath).exists() {
        return Err(ExecError::execution(format!(
            "Zone '{zonepath}' does not exist"
        )));
    }
    link_localtime(&zonepath)?;
    let family = os_family(&call);
    if family.contains("RedHat") {
        sed(
            "/etc/sysconfig/clock",
            "^ZONE=.*",
            &format!("ZONE=\"{timezone}\""),
        )?;
    } else if family.contains("Suse") {
        sed(
            "/etc/sysconfig/clock",
            "^TIMEZONE=.*",
            &format!("TIMEZONE=\"{timezone}\""),
        )?;
    } else if family.contains("Debian") {
        match clock.as_str() {
            "UTC" => sed("/etc/default/rcS", "^UTC=.*", "UTC=yes")?,
            "localtime" => sed("/etc/default/rcS", "^UTC=.*", "UTC=no")?,
            _ => {}
        }
    }
    Ok(json!(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timedatectl_output_like_salt() {
        let out = "               Local time: Thu 2026-11-26 06:30:00 UTC\n\
                   Universal time: Thu 2026-11-26 06:30:00 UTC\n\
                         RTC time: n/a\n\
                        Time zone: Etc/UTC (UTC, +0000)\n\
                  RTC in local TZ: no\n";
        assert_eq!(zone_from_timedatectl(out).as_deref(), Some("Etc/UTC"));
        assert_eq!(hwclock_from_timedatectl(out), Some("UTC"));
        assert_eq!(
            hwclock_from_timedatectl("RTC in local TZ: yes"),
            Some("localtime")
        );
        assert_eq!(
            zone_from_timedatectl("Timezone: America/Denver (MST)").as_deref(),
            Some("America/Denver")
        );
        assert_eq!(zone_from_timedatectl("nothing"), None);
    }

    #[test]
    fn config_files_like_salt() {
        assert_eq!(
            zone_from_sysconfig("# ZONE=x\nZONE=\"America/Denver\"\n").as_deref(),
            Some("America/Denver")
        );
        assert_eq!(zone_from_sysconfig("ZONE=").as_deref(), Some("UTC"));
        assert_eq!(hwclock_from_rcs("# UTC=no\nUTC=yes\n"), Some("UTC"));
        assert_eq!(hwclock_from_rcs("UTC=no"), Some("localtime"));
        assert_eq!(hwclock_from_rcs("TMPTIME=0"), None);
        assert_eq!(
            normpath("/etc/../usr/share/zoneinfo/./Etc/UTC"),
            "/usr/share/zoneinfo/Etc/UTC"
        );
    }
}
