//! Salt's `locale` module (`salt/modules/localemod.py`) on Linux. Where systemd runs, the
//! system locale is `localectl`'s (Salt without python-dbus does the same); without it, the
//! OS family's file: `/etc/default/locale` on Debian (`update-locale`, then the `LANG=` line
//! replaced or appended), `/etc/sysconfig/i18n` on Red Hat, `/etc/sysconfig/language` on
//! SUSE. Locales are listed with `locale -a` and compared normalized as
//! `salt.utils.locales` does; `gen_locale` enables one in `/etc/locale.gen` and runs
//! `locale-gen` (or `localedef`).

use std::path::Path;

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, truthy};

use crate::error::ExecError;
use crate::modules::cmd::which_path;
use crate::modules::run_cmd;
use crate::pyish::shlex_split;
use crate::spec::{Call, Function, Param};

/// The `locale` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("locale.list_avail", handler!(list_avail)).doc(LIST_AVAIL_DOC),
    Function::new("locale.get_locale", handler!(get_locale)).doc(GET_LOCALE_DOC),
    Function::new("locale.set_locale", handler!(set_locale))
        .params(&[Param::req("locale")])
        .doc(SET_LOCALE_DOC),
    Function::new("locale.avail", handler!(avail))
        .params(&[Param::req("locale")])
        .doc(AVAIL_DOC),
    Function::new("locale.gen_locale", handler!(gen_locale))
        .params(&[Param::req("locale")])
        .kwargs()
        .doc(GEN_LOCALE_DOC),
];

/// The parts of a locale name (`language_TERRITORY.codeset@modifier charmap`), as
/// `salt.utils.locales.split_locale` splits them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LocaleParts {
    /// `en`.
    pub language: String,
    /// `US`.
    pub territory: String,
    /// `UTF-8`.
    pub codeset: String,
    /// `euro`.
    pub modifier: String,
    /// The charmap after a space (`UTF-8` in `en_US.UTF-8 UTF-8`).
    pub charmap: String,
}

fn split_once_or_empty(s: &str, c: char) -> (&str, &str) {
    s.split_once(c).unwrap_or((s, ""))
}

/// Salt's `split_locale`.
pub(crate) fn split_locale(loc: &str) -> LocaleParts {
    let (work, charmap) = split_once_or_empty(loc, ' ');
    let (work, modifier) = split_once_or_empty(work, '@');
    let (work, codeset) = split_once_or_empty(work, '.');
    let (language, territory) = split_once_or_empty(work, '_');
    LocaleParts {
        language: language.into(),
        territory: territory.into(),
        codeset: codeset.into(),
        modifier: modifier.into(),
        charmap: charmap.into(),
    }
}

/// Salt's `join_locale`.
pub(crate) fn join_locale(p: &LocaleParts) -> String {
    let mut loc = p.language.clone();
    for (sep, part) in [
        ('_', &p.territory),
        ('.', &p.codeset),
        ('@', &p.modifier),
        (' ', &p.charmap),
    ] {
        if !part.is_empty() {
            loc.push(sep);
            loc.push_str(part);
        }
    }
    loc
}

/// Salt's `normalize_locale`: territory upper case, codeset lower case without dashes, no
/// charmap (`en_us.UTF-8` and `en_US.utf8` are both `en_US.utf8`).
pub(crate) fn normalize_locale(loc: &str) -> String {
    let mut p = split_locale(loc);
    p.territory = p.territory.to_uppercase();
    p.codeset = p.codeset.to_lowercase().replace('-', "");
    p.charmap.clear();
    join_locale(&p)
}

/// Salt's `salt.utils.systemd.booted`: systemd is the running init.
fn systemd_booted() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

fn grain(call: &Call, key: &str) -> String {
    python::str(&call.ctx.grains()[key])
}

/// `cmd.run`'s output: stdout and stderr together, trailing whitespace stripped.
async fn cmd_run(call: &Call, argv: &[&str]) -> Result<String, ExecError> {
    let out = run_cmd(call, argv).await?;
    Ok(format!("{}{}", out.stdout, out.stderr)
        .trim_end()
        .to_owned())
}

const LIST_AVAIL_DOC: &str = "Lists available (compiled) locales

CLI Example:

.. code-block:: bash

    salt '*' locale.list_avail
";

async fn list_avail(call: Call) -> Result<Value, ExecError> {
    Ok(json!(available(&call).await?))
}

async fn available(call: &Call) -> Result<Vec<String>, ExecError> {
    Ok(cmd_run(call, &["locale", "-a"])
        .await?
        .split('\n')
        .map(str::to_owned)
        .collect())
}

/// `localectl status` as Salt's `_localectl_status` parses it: `{key: {VAR: value}}` or
/// `{key: {data: value}}`.
pub(crate) fn parse_localectl(out: &str) -> Map<String, Value> {
    let mut ret = Map::new();
    let mut key: Option<String> = None;
    for line in out.lines() {
        let data = if let Some((k, d)) = line.split_once(": ") {
            key = Some(k.trim().to_lowercase().replace(' ', "_"));
            d.to_owned()
        } else {
            line.trim().to_owned()
        };
        let Some(k) = key.clone().filter(|_| !data.is_empty()) else {
            continue;
        };
        if data.contains('=') {
            let set: Vec<&str> = data.split('=').collect();
            if set.len() == 2 {
                let entry = ret.entry(k).or_insert_with(|| json!({}));
                if !entry.is_object() {
                    *entry = json!({});
                }
                entry[set[0]] = json!(set[1]);
            }
        } else {
            let value = if data == "n/a" {
                Value::Null
            } else {
                json!(data)
            };
            ret.insert(k, json!({ "data": value }));
        }
    }
    ret
}

async fn localectl_status(call: &Call) -> Result<Map<String, Value>, ExecError> {
    if which_path("localectl").is_none() {
        return Err(ExecError::execution("Unable to find \"localectl\""));
    }
    let probe = run_cmd(call, &["localectl"]).await?;
    if probe
        .stderr
        .contains("Failed to connect to bus: No such file or directory")
    {
        return Err(ExecError::execution(
            "Command \"localectl\" is in a degraded state.",
        ));
    }
    let out = cmd_run(call, &["localectl", "status"]).await?;
    let ret = parse_localectl(out.trim());
    if ret.is_empty() {
        return Err(ExecError::execution(
            "Unable to parse result of \"localectl\"",
        ));
    }
    Ok(ret)
}

/// Whether the `localectl` path applies (systemd, except SUSE 12 where Salt avoids it).
fn use_localectl(call: &Call) -> bool {
    systemd_booted()
        && !(grain(call, "os_family") == "Suse" && grain(call, "osmajorrelease") == "12")
}

/// What Salt's `cmd.run('grep "^KEY=" FILE').split("=")[1].replace('"', "")` gives: the
/// text after the first `=` of the matching lines (joined as grep prints them) up to the
/// next `=`, or `""`.
pub(crate) fn value_after(text: &str, prefix: &str) -> String {
    let matched: Vec<&str> = text.lines().filter(|l| l.starts_with(prefix)).collect();
    let joined = matched.join("\n");
    joined
        .split('=')
        .nth(1)
        .map(|v| v.replace('"', ""))
        .unwrap_or_default()
}

const GET_LOCALE_DOC: &str = "Get the current system locale

CLI Example:

.. code-block:: bash

    salt '*' locale.get_locale
";

async fn get_locale(call: Call) -> Result<Value, ExecError> {
    if use_localectl(&call) {
        let status = localectl_status(&call).await?;
        return Ok(status
            .get("system_locale")
            .and_then(|m| m.get("LANG"))
            .cloned()
            .unwrap_or_else(|| json!("")));
    }
    let family = grain(&call, "os_family");
    let (path, prefix) = if family.contains("Suse") {
        ("/etc/sysconfig/language", "RC_LANG")
    } else if family.contains("RedHat") {
        ("/etc/sysconfig/i18n", "LANG=")
    } else if family.contains("Debian") {
        ("/etc/default/locale", "LANG=")
    } else if family.contains("Gentoo") {
        return Ok(json!(
            cmd_run(&call, &["eselect", "--brief", "locale", "show"])
                .await?
                .trim()
        ));
    } else if family.contains("Solaris") {
        ("/etc/default/init", "LANG=")
    } else {
        return Err(ExecError::execution(format!(
            "Error: \"{}\" is unsupported!",
            grain(&call, "oscodename")
        )));
    };
    let text = std::fs::read_to_string(path).unwrap_or_default();
    Ok(json!(value_after(&text, prefix)))
}

const SET_LOCALE_DOC: &str = "Sets the current system locale

CLI Example:

.. code-block:: bash

    salt '*' locale.set_locale 'en_US.UTF-8'
";

/// `file.replace(path, pattern, repl, append_if_not_found=True)`, as Salt's module calls it.
async fn replace_line(call: &Call, path: &str, pattern: &str, repl: &str) -> Result<(), ExecError> {
    let mut kwargs = Map::new();
    kwargs.insert("append_if_not_found".into(), json!(true));
    crate::call_direct(
        &call.ctx,
        "file.replace",
        vec![json!(path), json!(pattern), json!(repl)],
        kwargs,
    )
    .await
    .map(|_| ())
    .map_err(|e| ExecError::execution(format!("could not edit {path}: {e:?}")))
}

async fn set_locale(call: Call) -> Result<Value, ExecError> {
    let locale = python::str(call.arg("locale"));
    if use_localectl(&call) {
        let status = localectl_status(&call).await?;
        let mut params: Map<String, Value> = status
            .get("system_locale")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        params.insert("LANG".into(), json!(locale));
        let args: Vec<String> = params
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| format!("{k}=\"{}\"", python::str(v)))
            .collect();
        let argv = shlex_split(&format!("localectl set-locale {}", args.join(" ")))?;
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        return Ok(json!(run_cmd(&call, &argv).await?.code == 0));
    }
    let family = grain(&call, "os_family");
    if family.contains("Suse") || family.contains("RedHat") {
        let (path, pattern, line) = if family.contains("Suse") {
            (
                "/etc/sysconfig/language",
                "^RC_LANG=.*",
                format!("RC_LANG=\"{locale}\""),
            )
        } else {
            (
                "/etc/sysconfig/i18n",
                "^LANG=.*",
                format!("LANG=\"{locale}\""),
            )
        };
        if !Path::new(path).exists() {
            std::fs::write(path, "")
                .map_err(|e| ExecError::execution(format!("could not create {path}: {e}")))?;
        }
        replace_line(&call, path, pattern, &line).await?;
    } else if family.contains("Debian") {
        let Some(update_locale) = which_path("update-locale") else {
            return Err(ExecError::execution(
                "Cannot set locale: \"update-locale\" was not found.",
            ));
        };
        // Salt runs it through cmd.run and goes on however it ends.
        let _ = run_cmd(&call, &[&update_locale]).await?;
        replace_line(
            &call,
            "/etc/default/locale",
            "^LANG=.*",
            &format!("LANG=\"{locale}\""),
        )
        .await?;
    } else if family.contains("Gentoo") {
        let out = run_cmd(&call, &["eselect", "--brief", "locale", "set", &locale]).await?;
        return Ok(json!(out.code == 0));
    } else if family.contains("Solaris") {
        if !available(&call).await?.contains(&locale) {
            return Ok(json!(false));
        }
        replace_line(
            &call,
            "/etc/default/init",
            "^LANG=.*",
            &format!("LANG=\"{locale}\""),
        )
        .await?;
    } else {
        return Err(ExecError::execution("Error: Unsupported platform!"));
    }
    Ok(json!(true))
}

const AVAIL_DOC: &str = "Check if a locale is available.

CLI Example:

.. code-block:: bash

    salt '*' locale.avail 'en_US.UTF-8'
";

async fn avail(call: Call) -> Result<Value, ExecError> {
    let want = normalize_locale(&python::str(call.arg("locale")));
    let have = available(&call).await?;
    Ok(json!(
        have.iter().any(|l| normalize_locale(l.trim()) == want)
    ))
}

const GEN_LOCALE_DOC: &str = "Generate a locale. Options:

locale
    Any locale listed in /usr/share/i18n/locales or
    /usr/share/i18n/SUPPORTED for Debian and Gentoo based distributions,
    which require the charmap to be specified as part of the locale
    when generating it.

verbose
    Show extra warnings about errors that are normally ignored.

CLI Example:

.. code-block:: bash

    salt '*' locale.gen_locale en_US.UTF-8
    salt '*' locale.gen_locale 'en_IE.UTF-8 UTF-8'    # Debian/Gentoo only
";

async fn gen_locale(call: Call) -> Result<Value, ExecError> {
    let mut locale = python::str(call.arg("locale"));
    let os = grain(&call, "os");
    let family = grain(&call, "os_family");
    let (debian, ubuntu) = (os == "Debian", os == "Ubuntu");
    let (gentoo, suse) = (family == "Gentoo", family == "Suse");
    if family == "Solaris" {
        return Ok(json!(available(&call).await?.contains(&locale)));
    }
    let mut info = split_locale(&locale);
    let search_str = format!("{}_{}", info.language, info.territory);
    if info.charmap.is_empty() && !ubuntu {
        info.charmap = info.codeset.clone();
        locale = join_locale(&info);
    }
    let valid = if debian || gentoo {
        let mut kwargs = Map::new();
        kwargs.insert("flags".into(), json!(8));
        crate::call_direct(
            &call.ctx,
            "file.search",
            vec![
                json!("/usr/share/i18n/SUPPORTED"),
                json!(format!("^{locale}$")),
            ],
            kwargs,
        )
        .await
        .map(|v| truthy(&v))
        .map_err(|e| ExecError::execution(format!("{e:?}")))?
    } else {
        let dir = if suse {
            "/usr/share/locale"
        } else {
            "/usr/share/i18n/locales"
        };
        std::fs::read_dir(dir)
            .map_err(|_| ExecError::execution(format!("Locale \"{locale}\" is not available.")))?
            .flatten()
            .any(|e| e.file_name().to_string_lossy() == search_str)
    };
    if !valid {
        return Ok(json!(false));
    }
    if Path::new("/etc/locale.gen").exists() {
        replace_line(
            &call,
            "/etc/locale.gen",
            &format!(r"^\s*#\s*{locale}\s*$"),
            &format!("{locale}\n"),
        )
        .await?;
    } else if ubuntu {
        let path = format!("/var/lib/locales/supported.d/{}", info.language);
        if !Path::new(&path).exists() {
            std::fs::write(&path, "")
                .map_err(|e| ExecError::execution(format!("could not create {path}: {e}")))?;
        }
        replace_line(&call, &path, &locale, &locale).await?;
    }
    let verbose = call.kwargs().get("verbose").is_some_and(truthy);
    let argv: Vec<String> = if which_path("locale-gen").is_some() {
        let mut argv = vec!["locale-gen".to_owned()];
        if gentoo {
            argv.push("--generate".into());
        }
        argv.push(if ubuntu {
            normalize_locale(&locale)
        } else {
            locale.clone()
        });
        argv
    } else if which_path("localedef").is_some() {
        vec![
            "localedef".into(),
            "--force".into(),
            "-i".into(),
            search_str.clone(),
            "-f".into(),
            info.codeset.clone(),
            format!("{search_str}.{}", info.codeset),
            if verbose { "--verbose" } else { "--quiet" }.into(),
        ]
    } else {
        return Err(ExecError::execution(
            "Command \"locale-gen\" or \"localedef\" was not found on this system.",
        ));
    };
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = run_cmd(&call, &args).await?;
    if verbose {
        return Ok(json!({
            "pid": Value::Null,
            "retcode": out.code,
            "stdout": out.stdout.trim_end(),
            "stderr": out.stderr.trim_end(),
        }));
    }
    Ok(json!(out.code == 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locale_names_like_salt() {
        let p = split_locale("en_US.UTF-8@euro UTF-8");
        assert_eq!(
            (
                p.language.as_str(),
                p.territory.as_str(),
                p.codeset.as_str(),
                p.modifier.as_str(),
                p.charmap.as_str()
            ),
            ("en", "US", "UTF-8", "euro", "UTF-8")
        );
        assert_eq!(join_locale(&p), "en_US.UTF-8@euro UTF-8");
        assert_eq!(normalize_locale("en_us.UTF-8 UTF-8"), "en_US.utf8");
        assert_eq!(normalize_locale("C.UTF-8"), "C.utf8");
        assert_eq!(normalize_locale("POSIX"), "POSIX");
    }

    #[test]
    fn config_values_like_salt() {
        assert_eq!(
            value_after("# x\nLANG=\"en_US.UTF-8\"\n", "LANG="),
            "en_US.UTF-8"
        );
        assert_eq!(
            value_after("#  File generated by update-locale\n", "LANG="),
            ""
        );
        assert_eq!(value_after("LANG=a\nLANG=b", "LANG="), "a\nLANG");
        let status = "   System Locale: LANG=en_US.UTF-8\n                  LC_TIME=C\n       VC Keymap: n/a\n";
        assert_eq!(
            Value::Object(parse_localectl(status.trim())),
            json!({"system_locale": {"LANG": "en_US.UTF-8", "LC_TIME": "C"}, "vc_keymap": {"data": null}})
        );
    }
}
