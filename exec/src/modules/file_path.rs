//! The path helpers of Salt's `file` module that formulas call from Jinja
//! (`file.dirname`, `file.basename`, `file.join`: `os.path` on the minion) and
//! `file.contains_regex`; the rest of `file` lives in `file.rs`.

use serde_json::Value;

use saltq_semantics::python::{self, posixpath, re_match};

use crate::error::ExecError;
use crate::spec::{Call, Function, Lit, Param};

/// These `file` functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("file.basename", handler!(basename))
        .params(&[Param::req("path")])
        .doc(BASENAME_DOC),
    Function::new("file.contains_regex", handler!(contains_regex))
        .params(&[
            Param::req("path"),
            Param::req("regex"),
            Param::opt("lchar", Lit::Str("")),
        ])
        .doc(CONTAINS_REGEX_DOC),
    Function::new("file.dirname", handler!(dirname))
        .params(&[Param::req("path")])
        .doc(DIRNAME_DOC),
    Function::new("file.join", handler!(join))
        .varargs()
        .doc(JOIN_DOC),
];

/// A path argument: a string (Python's `os.path` refuses anything else).
fn path_arg(fun: &str, value: &Value) -> Result<String, ExecError> {
    match value {
        Value::String(s) => Ok(s.clone()),
        other => Err(ExecError::InvalidArguments(format!(
            "{fun}: expected str, bytes or os.PathLike object, not {}",
            python::type_name(other)
        ))),
    }
}

const BASENAME_DOC: &str = "Returns the final component of a pathname

This can be useful at the CLI but is frequently useful when scripting.

.. code-block:: jinja

    {%- set filename = salt['file.basename'](source_file) %}

CLI Example:

.. code-block:: bash

    salt '*' file.basename 'test/test.config'
";

async fn basename(call: Call) -> Result<Value, ExecError> {
    let p = path_arg("basename", call.arg("path"))?;
    Ok(Value::String(posixpath::basename(&p)))
}

const DIRNAME_DOC: &str = "Returns the directory component of a pathname

This can be useful at the CLI but is frequently useful when scripting.

.. code-block:: jinja

    {%- from salt['file.dirname'](tpldir) + '/vars.jinja' import parent_vars %}

CLI Example:

.. code-block:: bash

    salt '*' file.dirname 'test/path/filename.config'
";

async fn dirname(call: Call) -> Result<Value, ExecError> {
    let p = path_arg("dirname", call.arg("path"))?;
    Ok(Value::String(posixpath::dirname(&p)))
}

const JOIN_DOC: &str = "Return a normalized file system path for the underlying OS

This can be useful at the CLI but is frequently useful when scripting
combining path variables:

.. code-block:: jinja

    {% set www_root = '/var' %}
    {% set app_dir = 'myapp' %}

    myapp_config:
      file:
        - managed
        - name: {{ salt['file.join'](www_root, app_dir, 'config.yaml') }}

CLI Example:

.. code-block:: bash

    salt '*' file.join '/' 'usr' 'local' 'bin'
";

async fn join(call: Call) -> Result<Value, ExecError> {
    if call.varargs().is_empty() {
        return Err(ExecError::InvalidArguments(
            "join() missing 1 required positional argument: 'a'".into(),
        ));
    }
    let parts = call
        .varargs()
        .iter()
        .map(|v| path_arg("join() argument", v))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Value::String(posixpath::join(&parts)))
}

const CONTAINS_REGEX_DOC: &str = "Return True if the given regular expression matches on any line
in the text of a given file (deprecated in Salt: use ``file.search`` instead).

If the lchar argument (leading char) is specified, it
will strip `lchar` from the left side of each line before trying to match

CLI Example:

.. code-block:: bash

    salt '*' file.contains_regex /etc/crontab
";

async fn contains_regex(call: Call) -> Result<Value, ExecError> {
    let path = path_arg("contains_regex", call.arg("path"))?;
    let path = match (path.strip_prefix("~/"), std::env::var("HOME")) {
        (Some(rest), Ok(home)) => format!("{home}/{rest}"),
        _ => path,
    };
    let regex = python::str(call.arg("regex"));
    let lchar = python::str(call.arg("lchar"));
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(Value::Bool(false));
    };
    let text = String::from_utf8_lossy(&bytes);
    // re.search: a match anywhere, which is re.match after any prefix.
    let search = format!("(?s:.*?)(?:{regex})");
    for line in text.split_inclusive('\n') {
        let line = if lchar.is_empty() {
            line
        } else {
            line.trim_start_matches(|c| lchar.contains(c))
        };
        // Python's `$` also matches before the line's final newline; the regex engine's
        // only at the end, so the line is tried without it too.
        let bare = line.strip_suffix('\n').unwrap_or(line);
        for text in [line, bare] {
            if re_match(&search, text).map_err(|e| {
                ExecError::exception("re.error", format!("bad regex {regex:?}: {e}"))
            })? {
                return Ok(Value::Bool(true));
            }
        }
    }
    Ok(Value::Bool(false))
}
