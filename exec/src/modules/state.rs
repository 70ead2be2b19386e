//! Salt's `state` execution module. The functions are declared here, with Salt's signatures,
//! so that binding, `sys.doc` and `sys.argspec` treat them as any other; each delegates to the
//! state system the minion attached to the context (`saltq-states`).

use serde_json::Value;

use crate::error::ExecError;
use crate::spec::{Call, Function, Lit, Param};

const TEST: Param = Param::opt("test", Lit::None);
const QUEUE: Param = Param::opt("queue", Lit::None);
const EVENTS: Param = Param::opt("state_events", Lit::None);

/// Declares a `state.*` function that delegates to the state system.
const fn state(name: &'static str, doc: &'static str) -> Function {
    Function::new(name, handler!(delegate)).kwargs().doc(doc)
}

/// The `state` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    state("state.apply", "Apply states: the highstate, or the named SLS modules.\n\nCLI Example:\n\n    salt '*' state.apply\n    salt '*' state.apply stuff,pkgs test=True\n")
        .params(&[Param::opt("mods", Lit::None)])
        .py_name("apply_")
        .outputter("highstate"),
    state("state.highstate", "Apply the highstate: every SLS the top file assigns to this minion.\n\nCLI Example:\n\n    salt '*' state.highstate\n")
        .params(&[TEST, QUEUE, EVENTS])
        .outputter("highstate"),
    state("state.sls", "Apply the named SLS modules.\n\nCLI Example:\n\n    salt '*' state.sls core,edit.vim saltenv=base\n")
        .params(&[
            Param::req("mods"),
            TEST,
            Param::opt("exclude", Lit::None),
            QUEUE,
            Param::opt("sync_mods", Lit::None),
            EVENTS,
        ])
        .outputter("highstate"),
    state("state.sls_id", "Apply one state ID from the named SLS modules.\n\nCLI Example:\n\n    salt '*' state.sls_id my_state my_module\n")
        .params(&[Param::req("id_"), Param::req("mods"), TEST, QUEUE, EVENTS])
        .outputter("highstate"),
    state("state.single", "Apply one state function with the given arguments.\n\nCLI Example:\n\n    salt '*' state.single pkg.installed name=vim\n")
        .params(&[Param::req("fun"), Param::req("name"), TEST, QUEUE])
        .outputter("highstate"),
    state("state.top", "Apply the states a given top file assigns.\n\nCLI Example:\n\n    salt '*' state.top reverse_top.sls\n")
        .params(&[Param::req("topfn"), TEST, QUEUE])
        .outputter("highstate"),
    state("state.test", "Apply states in test mode: `state.apply` with `test=True`.\n\nCLI Example:\n\n    salt '*' state.test\n")
        .varargs()
        .outputter("highstate"),
    state("state.show_sls", "Show the high data of the named SLS modules.\n\nCLI Example:\n\n    salt '*' state.show_sls core,edit.vim\n")
        .params(&[Param::req("mods"), TEST, QUEUE]),
    state("state.show_low_sls", "Show the low data of the named SLS modules.\n\nCLI Example:\n\n    salt '*' state.show_low_sls foo\n")
        .params(&[Param::req("mods"), TEST, QUEUE]),
    state("state.show_highstate", "Show the highstate's high data.\n\nCLI Example:\n\n    salt '*' state.show_highstate\n")
        .params(&[QUEUE]),
    state("state.show_lowstate", "Show the highstate's low data.\n\nCLI Example:\n\n    salt '*' state.show_lowstate\n")
        .params(&[QUEUE]),
    state("state.show_top", "Show the top data that applies to this minion.\n\nCLI Example:\n\n    salt '*' state.show_top\n")
        .params(&[QUEUE]),
    state("state.show_states", "List the SLS modules the highstate would apply.\n\nCLI Example:\n\n    salt '*' state.show_states\n")
        .params(&[QUEUE]),
    state("state.sls_exists", "Whether the named SLS modules exist and render.\n\nCLI Example:\n\n    salt '*' state.sls_exists core,edit.vim\n")
        .params(&[Param::req("mods"), TEST, QUEUE]),
    state("state.id_exists", "Whether the named state IDs exist in the named SLS modules.\n\nCLI Example:\n\n    salt '*' state.id_exists create_myfile,update_template filestate\n")
        .params(&[Param::req("ids"), Param::req("mods"), TEST, QUEUE]),
    state("state.running", "The state runs in progress on this minion, as Salt's messages.\n\nCLI Example:\n\n    salt '*' state.running\n")
        .params(&[Param::opt("concurrent", Lit::Bool(false))]),
    state("state.request", "Record a state run to apply later with `state.run_request`.\n\nCLI Example:\n\n    salt '*' state.request\n")
        .params(&[Param::opt("mods", Lit::None)]),
    state("state.check_request", "Show the state runs recorded with `state.request`.\n\nCLI Example:\n\n    salt '*' state.check_request\n")
        .params(&[Param::opt("name", Lit::None)]),
    state("state.clear_request", "Forget a state run recorded with `state.request`.\n\nCLI Example:\n\n    salt '*' state.clear_request\n")
        .params(&[Param::opt("name", Lit::None)]),
    state("state.run_request", "Apply a state run recorded with `state.request`.\n\nCLI Example:\n\n    salt '*' state.run_request\n")
        .params(&[Param::opt("name", Lit::Str("default"))])
        .outputter("highstate"),
    state("state.pause", "Pause a running state run before its next state.\n\nCLI Example:\n\n    salt '*' state.pause 20171130110407769519\n")
        .params(&[Param::req("jid"), Param::opt("state_id", Lit::None), Param::opt("duration", Lit::None)]),
    state("state.resume", "Resume a paused state run.\n\nCLI Example:\n\n    salt '*' state.resume 20171130110407769519\n")
        .params(&[Param::req("jid"), Param::opt("state_id", Lit::None)]),
    state("state.soft_kill", "Stop a running state run before its next state.\n\nCLI Example:\n\n    salt '*' state.soft_kill 20171130110407769519\n")
        .params(&[Param::req("jid"), Param::opt("state_id", Lit::None)]),
    state("state.clear_cache", "Clear the cached state data of this minion.\n\nCLI Example:\n\n    salt '*' state.clear_cache\n"),
];

async fn delegate(call: Call) -> Result<Value, ExecError> {
    match call.ctx.states.clone() {
        Some(states) => states.call(call).await,
        None => Err(ExecError::execution(format!(
            "'{}' is not available: this process runs no state system",
            call.fun
        ))),
    }
}
