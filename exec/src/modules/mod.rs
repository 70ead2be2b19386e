//! The execution modules, one file per Salt module. Each file exports `FUNCTIONS`, its part
//! of the function table; adding a module means adding its file and one line to [`MODULES`].

use crate::spec::Function;

/// Turns `async fn f(call: Call) -> Result<Value, ExecError>` into a table [`Handler`].
///
/// [`Handler`]: crate::spec::Handler
macro_rules! handler {
    ($f:path) => {
        |call: $crate::spec::Call| -> $crate::spec::BoxFuture { Box::pin($f(call)) }
    };
}

/// Runs a helper command for a module function, in the job's process groups: its output,
/// or Salt's "command not found" error naming the program.
pub(crate) async fn run_cmd(
    call: &crate::spec::Call,
    argv: &[&str],
) -> Result<crate::process::Output, crate::error::ExecError> {
    run_cmd_stdin(call, argv, None).await
}

/// [`run_cmd`] with bytes on the command's stdin.
pub(crate) async fn run_cmd_stdin(
    call: &crate::spec::Call,
    argv: &[&str],
    stdin: Option<&[u8]>,
) -> Result<crate::process::Output, crate::error::ExecError> {
    run_cmd_env(call, argv, stdin, &[]).await
}

/// [`run_cmd`] with stdin and extra environment variables.
pub(crate) async fn run_cmd_env(
    call: &crate::spec::Call,
    argv: &[&str],
    stdin: Option<&[u8]>,
    env: &[(&str, &str)],
) -> Result<crate::process::Output, crate::error::ExecError> {
    crate::process::output(argv, stdin, env, &call.ctx.processes)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => crate::error::ExecError::CommandNotFound(
                argv.first().copied().unwrap_or("").to_owned(),
            ),
            _ => {
                crate::error::ExecError::execution(format!("failed to run {}: {e}", argv.join(" ")))
            }
        })
}

pub(crate) mod alternatives;
pub(crate) mod archive;
pub(crate) mod beacons;
pub(crate) mod cmd;
pub(crate) mod config;
pub(crate) mod cp;
pub(crate) mod cron;
pub(crate) mod defaults;
pub(crate) mod disk;
pub(crate) mod event;
pub(crate) mod file;
pub(crate) mod file_path;
#[cfg(test)]
mod formula_funcs_tests;
pub(crate) mod git;
pub(crate) mod grains;
pub(crate) mod grains_filter;
pub(crate) mod group;
pub(crate) mod hosts;
pub(crate) mod kmod;
pub(crate) mod locale;
pub(crate) mod log;
pub(crate) mod matcher;
pub(crate) mod mine;
pub(crate) mod mount;
pub(crate) mod network;
pub(crate) mod network_iface;
pub(crate) mod pillar;
pub(crate) mod pkg;
pub(crate) mod saltutil;
pub(crate) mod schedule;
pub(crate) mod service;
pub(crate) mod shadow;
pub(crate) mod slsutil;
pub(crate) mod ssh;
pub(crate) mod state;
pub(crate) mod status;
pub(crate) mod sys;
pub(crate) mod sys_states;
pub(crate) mod sysctl;
pub(crate) mod test;
pub(crate) mod timezone;
pub(crate) mod user;

/// Every module's functions.
pub(crate) const MODULES: &[&[Function]] = &[
    alternatives::FUNCTIONS,
    archive::FUNCTIONS,
    beacons::FUNCTIONS,
    cmd::FUNCTIONS,
    config::FUNCTIONS,
    cp::FUNCTIONS,
    cron::FUNCTIONS,
    defaults::FUNCTIONS,
    disk::FUNCTIONS,
    event::FUNCTIONS,
    file::FUNCTIONS,
    file_path::FUNCTIONS,
    git::FUNCTIONS,
    grains::FUNCTIONS,
    grains_filter::FUNCTIONS,
    group::FUNCTIONS,
    hosts::FUNCTIONS,
    kmod::FUNCTIONS,
    locale::FUNCTIONS,
    log::FUNCTIONS,
    matcher::FUNCTIONS,
    mine::FUNCTIONS,
    mount::FUNCTIONS,
    network::FUNCTIONS,
    network_iface::FUNCTIONS,
    pillar::FUNCTIONS,
    pkg::FUNCTIONS,
    saltutil::FUNCTIONS,
    schedule::FUNCTIONS,
    service::FUNCTIONS,
    shadow::FUNCTIONS,
    slsutil::FUNCTIONS,
    ssh::FUNCTIONS,
    state::FUNCTIONS,
    status::FUNCTIONS,
    sys::FUNCTIONS,
    sys_states::FUNCTIONS,
    sysctl::FUNCTIONS,
    test::FUNCTIONS,
    timezone::FUNCTIONS,
    user::FUNCTIONS,
];
