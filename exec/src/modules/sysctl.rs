//! Salt's `sysctl` module on Linux (`linux_sysctl`): kernel parameters read and set with the
//! `sysctl` command.

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, truthy};

use crate::error::ExecError;
use crate::modules::run_cmd;

use crate::spec::{Call, Function, Lit, Param};

/// The `sysctl` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("sysctl.assign", handler!(assign))
        .params(&[Param::req("name"), Param::req("value")])
        .doc(ASSIGN_DOC),
    Function::new("sysctl.get", handler!(get))
        .params(&[Param::req("name")])
        .doc(GET_DOC),
    Function::new("sysctl.default_config", handler!(default_config)).doc(DEFAULT_CONFIG_DOC),
    Function::new("sysctl.persist", handler!(persist))
        .params(&[
            Param::req("name"),
            Param::req("value"),
            Param::opt("config", Lit::None),
        ])
        .doc(PERSIST_DOC),
    Function::new("sysctl.show", handler!(show))
        .params(&[Param::opt("config_file", Lit::Bool(false))])
        .doc(SHOW_DOC),
];

/// `sysctl -a` output (`name = value` lines) as a dict.
pub(crate) fn parse_all(out: &str) -> Map<String, Value> {
    out.lines()
        .filter_map(|l| l.split_once(" = "))
        .map(|(k, v)| (k.to_owned(), json!(v)))
        .collect()
}

/// A sysctl file (`name = value` lines, `#` comments) as a dict.
pub(crate) fn parse_conf(text: &str) -> Map<String, Value> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim_end().to_owned(), json!(v.trim_start())))
        .collect()
}

const DEFAULT_CONFIG_DOC: &str =
    "Return the sysctl configuration file the minion persists values in:
``/etc/sysctl.d/99-salt.conf`` where systemd runs (it ignores ``/etc/sysctl.conf``),
``/etc/sysctl.conf`` elsewhere

CLI Example:

.. code-block:: bash

    salt '*' sysctl.default_config
";

/// Salt's `default_config`: systemd (207 or later, every systemd still in use) reads only
/// `/etc/sysctl.d`.
fn default_config_path() -> &'static str {
    if std::path::Path::new("/run/systemd/system").is_dir() {
        "/etc/sysctl.d/99-salt.conf"
    } else {
        "/etc/sysctl.conf"
    }
}

async fn default_config(_call: Call) -> Result<Value, ExecError> {
    Ok(json!(default_config_path()))
}

/// Salt's `_sanitize_sysctl_value`: runs of whitespace as one tab, as the kernel shows them.
pub(crate) fn sanitize_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut in_space = false;
    for c in value.chars() {
        if c.is_whitespace() {
            if !in_space {
                out.push('\t');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    out
}

/// What `persist` does to the config file's lines for `name = value`.
#[derive(Debug, PartialEq)]
pub(crate) enum PersistEdit {
    /// The file already has this value: only the running value may need setting.
    AlreadyInFile,
    /// The file's new text (the line edited, or appended).
    Write(String),
}

/// Salt's edit of the sysctl config in `persist`: the line of `name` (not a comment) set to
/// `name = value`, or appended; unchanged when the file has the value already.
pub(crate) fn persist_edit(text: &str, name: &str, value: &str) -> PersistEdit {
    let mut out = String::new();
    let mut edited = false;
    for line in text.split_inclusive('\n') {
        let Some((key, val)) = line.split_once('=') else {
            out.push_str(line);
            continue;
        };
        let key = key.trim();
        if key.starts_with('#') || key != name {
            out.push_str(line);
            continue;
        }
        if sanitize_value(val.trim()) == sanitize_value(value) {
            return PersistEdit::AlreadyInFile;
        }
        out.push_str(&format!("{name} = {value}\n"));
        edited = true;
    }
    if !edited {
        out.push_str(&format!("{name} = {value}\n"));
    }
    PersistEdit::Write(out)
}

const PERSIST_DOC: &str = "Assign and persist a simple sysctl parameter for this minion. If
``config`` is not specified, a sensible default will be chosen using
:mod:`sysctl.default_config <salt.modules.linux_sysctl.default_config>`.

Returns ``Updated`` when the file or the running value changed, ``Already set`` otherwise.

CLI Example:

.. code-block:: bash

    salt '*' sysctl.persist net.ipv4.ip_forward 1
";

async fn persist(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let value = python::str(call.arg("value"));
    let config = call
        .opt_arg("config")
        .map_or_else(|| default_config_path().to_owned(), python::str);
    let path = std::path::Path::new(&config);
    if !path.is_file() {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.exists()
        {
            std::fs::create_dir_all(dir).map_err(|e| {
                ExecError::execution(format!("Could not create {}: {e}", dir.display()))
            })?;
        }
        std::fs::write(path, "#\n# Kernel sysctl configuration\n#\n")
            .map_err(|_| ExecError::execution(format!("Could not write to file: {config}")))?;
    }
    let text = std::fs::read_to_string(path)
        .map_err(|_| ExecError::execution(format!("Could not read from file: {config}")))?;
    match persist_edit(&text, &name, &value) {
        PersistEdit::AlreadyInFile => {
            let current = get_value(&call, &name).await?;
            if sanitize_value(&current) != sanitize_value(&value) {
                assign_value(&call, &name, &value).await?;
                Ok(json!("Updated"))
            } else {
                Ok(json!("Already set"))
            }
        }
        PersistEdit::Write(new) => {
            std::fs::write(path, new)
                .map_err(|_| ExecError::execution(format!("Could not write to file: {config}")))?;
            assign_value(&call, &name, &value).await?;
            Ok(json!("Updated"))
        }
    }
}

const SHOW_DOC: &str = "Return every kernel parameter and its value (``sysctl -a``), or those set
in ``config_file``

CLI Example:

.. code-block:: bash

    salt '*' sysctl.show
    salt '*' sysctl.show config_file=/etc/sysctl.conf
";

async fn show(call: Call) -> Result<Value, ExecError> {
    if let Some(file) = call.opt_arg("config_file").filter(|v| truthy(v)) {
        let path = python::str(file);
        return Ok(match std::fs::read_to_string(&path) {
            Ok(text) => Value::Object(parse_conf(&text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!([]),
            Err(_) => Value::Null,
        });
    }
    Ok(Value::Object(parse_all(
        &run_cmd(&call, &["sysctl", "-a"]).await?.stdout,
    )))
}

const GET_DOC: &str = "Return one kernel parameter's value (``sysctl -n``)

CLI Example:

.. code-block:: bash

    salt '*' sysctl.get net.ipv4.ip_forward
";

async fn get(call: Call) -> Result<Value, ExecError> {
    let out = run_cmd(&call, &["sysctl", "-n", &python::str(call.arg("name"))]).await?;
    call.set_retcode(out.code);
    // cmd.run's output: stdout and stderr together, trailing whitespace stripped.
    Ok(json!(format!("{}{}", out.stdout, out.stderr).trim_end()))
}

/// `sysctl.get` as another function calls it (no retcode of its own).
async fn get_value(call: &Call, name: &str) -> Result<String, ExecError> {
    let out = run_cmd(call, &["sysctl", "-n", name]).await?;
    Ok(format!("{}{}", out.stdout, out.stderr)
        .trim_end()
        .to_owned())
}

const ASSIGN_DOC: &str = "Set a kernel parameter now (``sysctl -w``); returns ``{name: value}`` as
``sysctl`` reports it

CLI Example:

.. code-block:: bash

    salt '*' sysctl.assign net.ipv4.ip_forward 1
";

async fn assign(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let value = python::str(call.arg("value"));
    assign_value(&call, &name, &value).await
}

/// Salt's `assign`: `sysctl -w name=value`, checked against what `sysctl` echoes.
async fn assign_value(call: &Call, name: &str, value: &str) -> Result<Value, ExecError> {
    let proc_path: String = name
        .chars()
        .map(|c| match c {
            '.' => '/',
            '/' => '.',
            c => c,
        })
        .collect();
    if !std::path::Path::new("/proc/sys").join(&proc_path).exists() {
        return Err(ExecError::execution(format!(
            "sysctl {name} does not exist"
        )));
    }
    let out = run_cmd(call, &["sysctl", "-w", &format!("{name}={value}")]).await?;
    let line = out.stdout.trim_end();
    let expected = format!("{name} = {value}");
    let normalized: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if normalized != expected.split_whitespace().collect::<Vec<_>>().join(" ")
        || out.stderr.contains("Invalid argument")
    {
        let error = if out.code != 0 && !out.stderr.is_empty() {
            out.stderr.trim_end()
        } else {
            line
        };
        return Err(ExecError::execution(format!("sysctl -w failed: {error}")));
    }
    let (k, v) = line.split_once(" = ").unwrap_or((line, ""));
    let mut ret = Map::new();
    ret.insert(k.to_owned(), json!(v));
    Ok(Value::Object(ret))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testutil::{check, run};

    #[test]
    fn parsers_like_salt() {
        assert_eq!(
            Value::Object(parse_all(
                "abi.vsyscall32 = 1\nkernel.domainname = (none)\nnoise\nnet.x = a = b\n"
            )),
            json!({"abi.vsyscall32": "1", "kernel.domainname": "(none)", "net.x": "a = b"})
        );
        assert_eq!(
            Value::Object(parse_conf(
                "# comment\nnet.ipv4.ip_forward = 1\n  vm.swappiness=10\n"
            )),
            json!({"net.ipv4.ip_forward": "1", "vm.swappiness": "10"})
        );
    }

    #[test]
    fn persist_edits_like_salt() {
        assert_eq!(sanitize_value(" 4096  87380\t1 "), "\t4096\t87380\t1\t");
        let text = "#\n# net.x = 1\nnet.x = 4096 1\nvm.y=2\n";
        assert_eq!(
            persist_edit(text, "net.x", "4096\t1"),
            PersistEdit::AlreadyInFile
        );
        assert_eq!(
            persist_edit(text, "net.x", "5"),
            PersistEdit::Write("#\n# net.x = 1\nnet.x = 5\nvm.y=2\n".into())
        );
        assert_eq!(
            persist_edit(text, "kernel.z", "1"),
            PersistEdit::Write(format!("{text}kernel.z = 1\n"))
        );
    }

    #[tokio::test]
    async fn on_this_host() {
        if crate::modules::cmd::which_path("sysctl").is_none() {
            println!("sysctl: no sysctl command here; checking the error only");
            check(
                "sysctl.get",
                json!(["kernel.ostype"]),
                json!({}),
                json!("Command required for 'sysctl.get' not found: sysctl"),
                1,
            )
            .await;
            return;
        }
        check(
            "sysctl.get",
            json!(["kernel.ostype"]),
            json!({}),
            json!("Linux"),
            0,
        )
        .await;
        let out = run("sysctl.get", json!(["nosuch.key"])).await;
        assert_eq!(
            out.ret,
            json!("sysctl: cannot stat /proc/sys/nosuch/key: No such file or directory")
        );
        let all = run("sysctl.show", json!([])).await.ret;
        assert_eq!(all["kernel.ostype"], json!("Linux"));
        check(
            "sysctl.show",
            json!(["/nonexistent/sysctl.conf"]),
            json!({}),
            json!([]),
            0,
        )
        .await;
        check(
            "sysctl.assign",
            json!(["nosuch.key", 1]),
            json!({}),
            json!("ERROR: sysctl nosuch.key does not exist"),
            1,
        )
        .await;
        // Assigning a parameter its own value changes nothing; a read-only /proc/sys (a
        // container) refuses, which is the error path.
        let current = run("sysctl.get", json!(["vm.swappiness"])).await.ret;
        let out = run("sysctl.assign", json!(["vm.swappiness", current.clone()])).await;
        if out.retcode == 0 {
            assert_eq!(out.ret, json!({"vm.swappiness": current}));
        } else {
            println!("sysctl.assign: /proc/sys is read-only here: {}", out.ret);
            assert!(
                out.ret
                    .as_str()
                    .is_some_and(|s| s.starts_with("ERROR: sysctl -w failed: "))
            );
        }
    }
}
