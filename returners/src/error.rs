//! The returners' error type: which returner, which server or file, and what failed.
//!
//! Messages carry the underlying error's text, so `to_string()` alone says why (the job cache
//! does the same). They never carry a password: targets are `host:port/db as user`, webhook
//! URLs are shown without user info or query string.

use std::time::Duration;

/// Everything that can go wrong when configuring or calling a returner.
#[derive(Debug, thiserror::Error)]
pub enum ReturnerError {
    /// A returner name that saltq does not have.
    #[error("unknown returner `{name}` (known returners: {known})")]
    UnknownReturner {
        /// The name as given.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// A config key that looks like a returner option but is not one (a typo, most likely).
    #[error("unknown returner option `{key}` ({returner} takes: {expected})")]
    UnknownOption {
        /// The key as written in the config.
        key: String,
        /// The returner the key's prefix names.
        returner: &'static str,
        /// The option keys that returner takes.
        expected: String,
    },
    /// A returner option whose value cannot be used.
    #[error("invalid value for returner option `{key}`: {reason}")]
    InvalidOption {
        /// Where the value came from: a config key or `ret_kwargs.<name>`.
        key: String,
        /// What was expected.
        reason: String,
    },
    /// The returner has no such operation (Salt's redis returner has no `event_return`).
    #[error("returner `{returner}` does not support {operation}")]
    Unsupported {
        /// The returner.
        returner: &'static str,
        /// `event_return`, `save_load` or `create_schema`.
        operation: &'static str,
    },
    /// The return load lacks a field the returner needs.
    #[error("{returner} returner cannot store this return: {reason}")]
    BadLoad {
        /// The returner.
        returner: &'static str,
        /// The missing or malformed field.
        reason: String,
    },
    /// The server could not be reached or refused the login.
    #[error("{returner} returner could not connect to {target}: {cause}")]
    Connect {
        /// The returner.
        returner: &'static str,
        /// `host:port/db as user`, a socket path or a URL; never a password.
        target: String,
        /// The driver's message.
        cause: String,
    },
    /// A statement, command, write or request failed after connecting.
    #[error("{returner} returner failed to {action} on {target}: {cause}")]
    Backend {
        /// The returner.
        returner: &'static str,
        /// `host:port/db as user`, a path or a URL; never a password.
        target: String,
        /// What it was doing, e.g. `insert into salt_returns`.
        action: String,
        /// The driver's or the system's message.
        cause: String,
    },
    /// The server did not answer in time.
    #[error("{returner} returner timed out after {after:?} trying to {action} on {target}")]
    Timeout {
        /// The returner.
        returner: &'static str,
        /// `host:port/db as user` or a URL.
        target: String,
        /// What it was doing.
        action: String,
        /// The limit that passed.
        after: Duration,
    },
}

/// The text of an error and of every cause below it that its own text does not already include.
pub(crate) fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}
