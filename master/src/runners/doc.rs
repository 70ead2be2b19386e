//! Salt's `doc` runner: `doc.wheel`, the docs of the wheel functions (what Alcali's "initialize
//! database" stores for its wheel function list). The docs are kept here, beside the wheel
//! functions' names in [`crate::wheel::FUNCTIONS`]; `doc.wheel` lists exactly those. Salt's
//! answer (`{function: doc}`) is recorded in tests/tests/e2e/data/alcali/salt-3007.8-initdb.txt.

use serde_json::{Map, Value};

use super::jobs::runner;
use super::{Args, Runner, RunnerCtx, Spec};

/// Each wheel function's doc (more than [`crate::wheel::FUNCTIONS`] may name: a function
/// gets its doc here before it is served).
const WHEEL_DOCS: &[(&str, &str)] = &[
    (
        "config.values",
        "Return the master's configuration values a salt-api or wheel caller may read.\n\n\
         CLI Example:\n\n    salt-run wheel.config.values",
    ),
    (
        "key.accept",
        "Accept the pending (or, with include_rejected / include_denied, rejected or denied) \
         keys of the minions matching match, a glob or a list.\n\n\
         CLI Example:\n\n    salt-run wheel.key.accept 'minion*'",
    ),
    (
        "key.delete",
        "Delete the keys of the minions matching match, a glob or a list.\n\n\
         CLI Example:\n\n    salt-run wheel.key.delete 'minion*'",
    ),
    (
        "key.finger",
        "Return the fingerprints of the keys of the minions matching match, by key status; \
         hash_type picks the digest.\n\n\
         CLI Example:\n\n    salt-run wheel.key.finger 'minion*'",
    ),
    (
        "key.gen_accept",
        "Generate a key pair for the minion id_, accept its public key, and return both \
         keys.\n\n\
         CLI Example:\n\n    salt-run wheel.key.gen_accept id_=minion1",
    ),
    (
        "key.list",
        "Return the minion ids of the keys in the status match_type (pre, un, unaccepted, \
         acc, accepted, rej, rejected, den, denied or all).\n\n\
         CLI Example:\n\n    salt-run wheel.key.list accepted",
    ),
    (
        "key.list_all",
        "Return the minion ids of all keys, by status: minions, minions_pre, \
         minions_rejected, minions_denied and local.\n\n\
         CLI Example:\n\n    salt-run wheel.key.list_all",
    ),
    (
        "key.name_match",
        "Return the keys of the minions matching match, a glob or a list, by status.\n\n\
         CLI Example:\n\n    salt-run wheel.key.name_match 'minion*'",
    ),
    (
        "key.reject",
        "Reject the pending (or, with include_accepted / include_denied, accepted or denied) \
         keys of the minions matching match, a glob or a list.\n\n\
         CLI Example:\n\n    salt-run wheel.key.reject 'minion*'",
    ),
];

/// The `doc` runners.
pub static RUNNERS: &[Runner] = &[runner!(
    "doc.wheel",
    wheel,
    &[],
    "Return the inline documentation of every wheel function."
)];

/// Salt's `doc.wheel`: `{function: doc}` for every wheel function, `null` for one without a
/// doc (as Salt gives a function without a docstring).
async fn wheel(_ctx: RunnerCtx, _args: Args) -> Result<Value, String> {
    Ok(Value::Object(wheel_docs()))
}

fn wheel_docs() -> Map<String, Value> {
    crate::wheel::FUNCTIONS
        .iter()
        .map(|name| {
            let doc = WHEEL_DOCS
                .iter()
                .find(|(n, _)| n == name)
                .map_or(Value::Null, |(_, d)| Value::String((*d).to_owned()));
            ((*name).to_owned(), doc)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wheel_function_has_a_doc() {
        let docs = wheel_docs();
        assert_eq!(docs.len(), crate::wheel::FUNCTIONS.len());
        for (name, doc) in &docs {
            assert!(
                doc.is_string(),
                "wheel function {name} has no doc in WHEEL_DOCS"
            );
        }
        for w in WHEEL_DOCS.windows(2) {
            assert!(
                w[0].0 < w[1].0,
                "WHEEL_DOCS is sorted: {} {}",
                w[0].0,
                w[1].0
            );
        }
    }
}
