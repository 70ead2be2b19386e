//! Salt's `log` module (`salt/modules/logmod.py`): writes a message to the minion's log at a
//! level, for debugging templates (`{% do salt['log.info'](var) %}`); every function answers
//! True.

use serde_json::Value;

use saltq_semantics::python;

use crate::error::ExecError;
use crate::spec::{Call, Function, Param};

const MESSAGE: &[Param] = &[Param::req("message")];

/// The `log` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("log.critical", handler!(critical))
        .params(MESSAGE)
        .doc("Log message at level CRITICAL.\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' log.critical 'a message'\n"),
    Function::new("log.debug", handler!(debug))
        .params(MESSAGE)
        .doc("Log message at level DEBUG.\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' log.debug 'a message'\n"),
    Function::new("log.error", handler!(error))
        .params(MESSAGE)
        .doc("Log message at level ERROR.\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' log.error 'a message'\n"),
    Function::new("log.exception", handler!(exception))
        .params(MESSAGE)
        .doc("Log message at level EXCEPTION (ERROR, with the exception being handled, of which\nsaltq has none).\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' log.exception 'a message'\n"),
    Function::new("log.info", handler!(info))
        .params(MESSAGE)
        .doc("Log message at level INFO.\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' log.info 'a message'\n"),
    Function::new("log.warning", handler!(warning))
        .params(MESSAGE)
        .doc("Log message at level WARNING.\n\nCLI Example:\n\n.. code-block:: bash\n\n    salt '*' log.warning 'a message'\n"),
];

/// The message as Python's logging formats `%s` of it.
fn message(call: &Call) -> String {
    python::str(call.arg("message"))
}

const TARGET: &str = "salt.loaded.int.module.logmod";

async fn critical(call: Call) -> Result<Value, ExecError> {
    tracing::error!(target: TARGET, "{}", message(&call));
    Ok(Value::Bool(true))
}

async fn debug(call: Call) -> Result<Value, ExecError> {
    tracing::debug!(target: TARGET, "{}", message(&call));
    Ok(Value::Bool(true))
}

async fn error(call: Call) -> Result<Value, ExecError> {
    tracing::error!(target: TARGET, "{}", message(&call));
    Ok(Value::Bool(true))
}

async fn exception(call: Call) -> Result<Value, ExecError> {
    tracing::error!(target: TARGET, "{}\nNoneType: None", message(&call));
    Ok(Value::Bool(true))
}

async fn info(call: Call) -> Result<Value, ExecError> {
    tracing::info!(target: TARGET, "{}", message(&call));
    Ok(Value::Bool(true))
}

async fn warning(call: Call) -> Result<Value, ExecError> {
    tracing::warn!(target: TARGET, "{}", message(&call));
    Ok(Value::Bool(true))
}
