//! Salt's `alternatives` module, the parts formulas read from Jinja: the current target of
//! an alternatives link (`/etc/alternatives/<name>`) and its master link
//! (`update-alternatives --query` on Debian, the alternatives database elsewhere).

use serde_json::Value;

use saltq_semantics::python;

use crate::error::ExecError;
use crate::modules::run_cmd;
use crate::spec::{Call, Function, Param};

/// The `alternatives` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("alternatives.show_current", handler!(show_current))
        .params(&[Param::req("name")])
        .doc(SHOW_CURRENT_DOC),
    Function::new("alternatives.show_link", handler!(show_link))
        .params(&[Param::req("name")])
        .doc(SHOW_LINK_DOC),
];

const SHOW_CURRENT_DOC: &str = "Display the current highest-priority alternative for a given
alternatives link (where ``/etc/alternatives/<name>`` points); False when there is none.

CLI Example:

.. code-block:: bash

    salt '*' alternatives.show_current editor
";

async fn show_current(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    match std::fs::read_link(format!("/etc/alternatives/{name}")) {
        Ok(target) => Ok(Value::String(target.to_string_lossy().into_owned())),
        Err(_) => {
            tracing::error!("alternative: {name} does not exist");
            Ok(Value::Bool(false))
        }
    }
}

const SHOW_LINK_DOC: &str = "Display master link for the alternative; False when there is none.

CLI Example:

.. code-block:: bash

    salt '*' alternatives.show_link editor
";

async fn show_link(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let family = call.ctx.grains()["os_family"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    let database = match family.as_str() {
        "RedHat" => Some("/var/lib/alternatives"),
        "Suse" => Some("/var/lib/rpm/alternatives"),
        _ => None,
    };
    if let Some(dir) = database {
        // The database file's second line is the master link.
        let text = std::fs::read_to_string(format!("{dir}/{name}")).unwrap_or_default();
        return Ok(text
            .lines()
            .nth(1)
            .map_or(Value::Bool(false), |l| Value::String(l.to_owned())));
    }
    let out = run_cmd(&call, &["update-alternatives", "--query", &name]).await?;
    if out.code > 0 && !out.stderr.is_empty() {
        return Ok(Value::Bool(false));
    }
    let first_block = out.stdout.split("\n\n").next().unwrap_or_default();
    Ok(first_block
        .lines()
        .find_map(|l| l.strip_prefix("Link:"))
        .map_or(Value::Bool(false), |l| Value::String(l.trim().to_owned())))
}
