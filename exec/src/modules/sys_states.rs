//! The parts of Salt's `sys` module that describe the state system and the renderers:
//! `sys.list_state_functions`, `sys.list_state_modules` and `sys.state_doc` ask the state
//! system the minion attached (`saltq-states` answers from its state function table), and
//! `sys.list_renderers` names the renderers saltq's pipeline runs. The rest of `sys` lives
//! in `sys.rs`.

use serde_json::Value;

use saltq_semantics::python::{self, fnmatch};

use crate::error::ExecError;
use crate::spec::{Call, Function};

/// These `sys` functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("sys.list_renderers", handler!(list_renderers))
        .varargs()
        .doc(LIST_RENDERERS_DOC),
    Function::new("sys.list_state_functions", handler!(delegate))
        .varargs()
        .kwargs()
        .doc(LIST_STATE_FUNCTIONS_DOC),
    Function::new("sys.list_state_modules", handler!(delegate))
        .varargs()
        .doc(LIST_STATE_MODULES_DOC),
    Function::new("sys.state_doc", handler!(delegate))
        .varargs()
        .doc(STATE_DOC_DOC),
];

/// The renderers saltq runs (`saltq_states::render::pipeline` accepts these names).
const RENDERERS: &[&str] = &["gpg", "jinja", "json", "yaml", "yamlex"];

/// Asks the state system, as the `state.*` functions do.
async fn delegate(call: Call) -> Result<Value, ExecError> {
    match call.ctx.states.clone() {
        Some(states) => states.call(call).await,
        None => Err(ExecError::execution(format!(
            "'{}' is not available: this process runs no state system",
            call.fun
        ))),
    }
}

const LIST_RENDERERS_DOC: &str = "List the renderers loaded on the minion (those saltq runs:
gpg, jinja, json, yaml, yamlex). Names may be globs.

.. versionadded:: 2015.5.0

CLI Example:

.. code-block:: bash

    salt '*' sys.list_renderers
    salt '*' sys.list_renderers 'yaml*'
";

async fn list_renderers(call: Call) -> Result<Value, ExecError> {
    let globs: Vec<String> = call.varargs().iter().map(python::str).collect();
    Ok(Value::from(
        RENDERERS
            .iter()
            .filter(|r| globs.is_empty() || globs.iter().any(|g| fnmatch(r, g)))
            .map(|r| Value::from(*r))
            .collect::<Vec<_>>(),
    ))
}

const LIST_STATE_FUNCTIONS_DOC: &str = "List the functions for all state modules. Optionally,
specify a state module or modules from which to list (globs allowed).

.. versionadded:: 2014.7.0

CLI Example:

.. code-block:: bash

    salt '*' sys.list_state_functions
    salt '*' sys.list_state_functions file
    salt '*' sys.list_state_functions pkg user
    salt '*' sys.list_state_functions 'file.*'
    salt '*' sys.list_state_functions 'file.s*'
";

const LIST_STATE_MODULES_DOC: &str = "List the modules loaded on the minion. Optionally,
specify a state module or modules (globs allowed).

.. versionadded:: 2014.7.0

CLI Example:

.. code-block:: bash

    salt '*' sys.list_state_modules
    salt '*' sys.list_state_modules 'mysql_*' 'redis_*'
";

const STATE_DOC_DOC: &str = "Return the docstrings for all states, or for the state modules and
functions named (globs allowed). saltq's state functions carry their signature as their doc.

.. versionadded:: 2014.7.0

CLI Example:

.. code-block:: bash

    salt '*' sys.state_doc
    salt '*' sys.state_doc service
    salt '*' sys.state_doc service.running
    salt '*' sys.state_doc 'service.*' 'iptables.*'
";
