//! How an execution function fails, one variant per class of Python exception that Salt's
//! minion (`salt/minion.py`, `_thread_return`) turns into a different return string.

use thiserror::Error;

/// A failed execution function. The variant decides the text of the job's return.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ExecError {
    /// Salt's `CommandExecutionError`: returned as `ERROR: <msg>`.
    #[error("{0}")]
    Execution(String),
    /// Salt's `SaltInvocationError` (bad keyword arguments, bad values): returned as
    /// `ERROR executing '<fun>': <msg>`.
    #[error("{0}")]
    Invocation(String),
    /// Python's `TypeError` from calling the function with the wrong arguments: returned as
    /// `Passed invalid arguments to <fun>: <msg>` followed by the function's doc.
    #[error("{0}")]
    InvalidArguments(String),
    /// Salt's `CommandNotFoundError`: returned as `Command required for '<fun>' not found: <msg>`.
    #[error("{0}")]
    CommandNotFound(String),
    /// Any other exception: returned as `The minion function caused an exception: <kind>: <msg>`.
    #[error("{kind}: {msg}")]
    Exception {
        /// The Python exception class Salt would have raised (`ValueError`, `KeyError`, ...).
        kind: String,
        /// The exception's message.
        msg: String,
    },
}

impl ExecError {
    /// A Salt `CommandExecutionError`.
    pub fn execution(msg: impl Into<String>) -> Self {
        Self::Execution(msg.into())
    }

    /// A Salt `SaltInvocationError`.
    pub fn invocation(msg: impl Into<String>) -> Self {
        Self::Invocation(msg.into())
    }

    /// An unexpected exception of the named Python class.
    pub fn exception(kind: impl Into<String>, msg: impl Into<String>) -> Self {
        Self::Exception {
            kind: kind.into(),
            msg: msg.into(),
        }
    }
}
