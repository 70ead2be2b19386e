//! Running low chunks (`salt/state.py`'s `State.call_chunks`, `call_chunk`,
//! `check_requisite`, `call`, `call_listen`): requisites, global arguments, test mode,
//! `parallel`, `failhard`, `retry`, into Salt's result dict.
//!
//! API:
//! - [`run`]: ordered low chunks (from [`crate::compile::high_to_low`]) into the result map
//!   keyed by Salt's tag `<state>_|-<id>_|-<name>_|-<fun>`, each
//!   `{name, result, comment, changes, __sls__, __id__, __run_num__, start_time, duration}`
//!   plus what Salt adds where it adds it (`__state_ran__`, `skip_watch`, `warnings`).
//! - [`call_high`]: high data straight to results, or Salt's list of compile errors.
//! - [`single`]: `state.single`, one state function called directly.
//! - [`retcode`]: the job's retcode for an answer (0, 1 for compile errors, 2 for a failed
//!   state), as `state.sls` and `state.highstate` set it.
//! - [`RunOptions`]: test mode, `failhard`, `disabled_requisites`, `state_events` (with the
//!   jid and minion id for the event tags; `fire_event` on a state works regardless), and
//!   a [`RunControl`] the engine uses to pause or stop a run between chunks
//!   (`state.pause`, `state.soft_kill`). The `state_runs_disabled` grain (`state.disable`)
//!   is read from the context's grains.
//!
//! What a state function sees is a [`crate::modules::StateCall`] (slots,
//! `__slot__:salt:fun(args)`, already evaluated in its name and arguments); for `mod_watch` its arguments hold `sfun`
//! (the watched function) and `__reqs__` (`{requisite: [chunk...]}`, each chunk with
//! `__changed__`: whether that requisite's run had changes), as Salt's `__low__` would.
//!
//! A state function's result keys come in Salt's common order (`name`, `changes`, `result`,
//! `comment`, then its extra keys); one whose Salt dict literal differs names its order in
//! `extra["__key_order__"]` ([`KEY_ORDER`]), as `--out json` shows keys as Salt made them.
//!
//! The decisions (requisite status, ordering, messages) are plain code over maps; only
//! the state functions and the `onlyif`/`unless` commands touch the system.

mod checks;
pub mod requisite;
mod retcode;
mod runner;
mod slots;

pub use retcode::{EX_STATE_COMPILER_ERROR, EX_STATE_FAILURE, check_result, retcode};
pub use runner::{KEY_ORDER, RunControl, RunOptions, call_high, run, run_id, single, tag_of};
