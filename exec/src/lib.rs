//! The minion's execution modules and its core grains, with Salt's function names, argument
//! rules, return shapes and error texts. Built in: `archive`, `cmd`, `config`, `cp`, `cron`,
//! `disk`, `event`, `file`, `grains`, `group`, `hosts`, `network`, `pillar`, `pkg`,
//! `saltutil`, `service`, `shadow`, `ssh`, `status`, `sys`, `sysctl`, `test`, `user`; external
//! modules (executables in `module_dirs` or synced from the master) add more without
//! recompiling.
//!
//! The minion calls [`call`] once per job function. Functions live in one table
//! ([`function_names`], [`lookup`]) that `sys.*` reads too; a name the table lacks is looked
//! up among the external modules. A job is killed by dropping (or aborting the task of) the
//! `call` future: commands it started die with their process group.
//!
//! Minion options read here (Salt's names): `id`, `grains_file` (where `grains.setval` and
//! friends write), `module_dirs` and `cachedir` (external modules; synced ones go to
//! `<cachedir>/extmods/modules`), `ext_module_timeout` (seconds, default 60), `hash_type`,
//! `cmd_safe`, `cmd_blacklist_glob`, `cmd_whitelist_glob`, `pillar_raise_on_missing`,
//! `pillar_merge_lists`, `extmod_whitelist`, `extmod_blacklist`, `systemd.scope`, `saltenv`,
//! `pillarenv`.

mod args;
pub mod beacons;
mod context;
mod difflib;
mod dispatch;
mod error;
mod extmods;
mod grains;
mod hashing;
mod local_files;
mod modules;
mod process;
mod pyish;
mod registry;
pub mod runners;
mod spec;
mod sync;

/// Tar and zip archives as Salt's `archive` module lists and extracts them, for the
/// `archive.extracted` state.
pub mod archive {
    pub use crate::modules::archive::{
        Listing, extract_tar, extract_zip, guess_archive_type, list, trim_files, verbose,
    };
}
/// URL credentials as Salt's `git` module adds and hides them, for the `git` states.
pub mod git {
    pub use crate::modules::git::{add_http_basic_auth, redact_http_basic_auth};
}
pub use context::{
    CallContext, EventSink, FetchFuture, FileClient, FileFuture, FileHash, GroupWatch, JobControl,
    MasterClient, MasterFuture, MasterJob, MineClient, ModuleSource, NoJobs, PillarClient,
    ProcessGroups, PubInfo, ScheduleControl, StateSystem, SyncedFile,
};
/// The mine's data shapes (Salt's `salt.utils.mine`), shared with the master.
pub mod mine {
    pub use crate::modules::mine::{
        ACL_DATA, ACL_ID, Definition, entry_data, parse_definition, put_answer,
        requested_functions, wrap_acl,
    };
}
pub use difflib::{unified_diff, unified_diff_lines};
pub use dispatch::{CallOutcome, DirectError, EX_GENERIC, available, call, call_direct};
pub use error::ExecError;
pub use extmods::{StateOutput, call_state, state_dirs, state_module_exists};
pub use grains::{compute_grains, load_grains_file, static_grains};
/// Salt's `_cron_matched` and `_needs_change`, which the `cron` states use in test mode.
pub use modules::cron::{matched as cron_matched, needs_change as cron_needs_change};
pub use modules::pillar::merge_into as dict_update;
/// Salt's `aptpkg._expand_repo_def` and apt's source lines, for the `pkgrepo` states.
pub use modules::pkg::aptrepo::{
    SourceEntry as AptSourceEntry, expand_repo_def as apt_expand_repo_def,
};
/// Debian's version order (`dpkg --compare-versions`), for the `pkg` states.
pub use modules::pkg::compare_versions as compare_debian_versions;
/// Salt's `pkg_resource.pack_sources`, for `pkg.installed` with `sources`.
pub use modules::pkg::pack_sources;
/// Salt's `salt.utils.pkg.rpm.combine_comments`, for the `pkgrepo` states.
pub use modules::pkg::yumrepo::combine_comments as rpm_combine_comments;
/// `authorized_keys` parsing and the error text of a key file without keys, shared with the
/// `ssh_auth` states.
pub use modules::ssh::{no_keys_error, parse_auth_keys};
pub use registry::{function_names, functions, lookup};
pub use spec::{Bound, BoxFuture, Call, Function, Handler, Lit, Param};

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers for the unit tests: a context with known grains and pillar, and shorthands
    //! around [`call`].

    use std::sync::Arc;
    use std::sync::RwLock;

    use serde_json::{Value, json};

    use super::*;

    /// Grains and pillar the module tests look into.
    pub fn ctx() -> CallContext {
        CallContext::new(
            Arc::new(RwLock::new(json!({
                "id": "labminion",
                "os": "Debian",
                "roles": ["web"],
                "dns": {"nameservers": ["10.255.255.53"]},
                "fqdn": "vm.example.com",
                "host": "vm",
                "domain": "example.com",
            }))),
            Arc::new(RwLock::new(json!({
                "app": {"port": 8080, "hosts": ["a", "b"]},
                "list": [1, 2],
            }))),
            Arc::new(json!({"id": "labminion"})),
            Arc::new(NoJobs),
        )
    }

    /// The publication the tests pretend the job came from, `arg` packed as Salt packs it.
    pub fn publ(args: &Value, kwargs: &Value) -> PubInfo {
        let mut arg = args.as_array().cloned().unwrap_or_default();
        if let Some(kw) = kwargs.as_object().filter(|m| !m.is_empty()) {
            let mut packed = serde_json::Map::new();
            packed.insert("__kwarg__".into(), Value::Bool(true));
            packed.extend(kw.clone());
            arg.push(Value::Object(packed));
        }
        PubInfo {
            jid: "20261121001530810867".into(),
            tgt: json!("labminion"),
            tgt_type: "glob".into(),
            ret: String::new(),
            user: "root".into(),
            arg,
        }
    }

    /// Calls `fun` with positional and keyword arguments in the test context.
    pub async fn run_kw(fun: &str, args: Value, kwargs: Value) -> CallOutcome {
        run_in(&ctx(), fun, args, kwargs).await
    }

    /// Calls `fun` with positional and keyword arguments in the given context.
    pub async fn run_in(ctx: &CallContext, fun: &str, args: Value, kwargs: Value) -> CallOutcome {
        let publ = publ(&args, &kwargs);
        let args = args.as_array().cloned().unwrap_or_default();
        let kwargs = kwargs.as_object().cloned().unwrap_or_default();
        call(ctx, fun, args, kwargs, &publ).await
    }

    /// Calls `fun` with positional arguments only.
    pub async fn run(fun: &str, args: Value) -> CallOutcome {
        run_kw(fun, args, json!({})).await
    }

    /// Asserts a call's return and retcode, and that success follows the retcode.
    pub async fn check(fun: &str, args: Value, kwargs: Value, ret: Value, retcode: i32) {
        let out = run_kw(fun, args.clone(), kwargs.clone()).await;
        assert_eq!(out.ret, ret, "{fun} {args} {kwargs}");
        assert_eq!(out.retcode, retcode, "{fun} {args} {kwargs}: retcode");
        assert_eq!(out.success, retcode == 0, "{fun} {args} {kwargs}: success");
    }
}
