//! The state compiler (`salt/state.py`'s `BaseHighState` and `State.compile_high_data`):
//! the top file, SLS includes, `extend`, `exclude`, high data into low chunks, ordering.
//! Pure: SLS files come from an [`SlsSource`]; no I/O of its own.
//!
//! The path, as Salt takes it:
//! 1. [`top::get_top`] renders each saltenv's top file and merges them
//!    (`top_file_merging_strategy`); [`top::top_matches`] keeps the sections whose target
//!    matches the minion: `{saltenv: [sls, ...]}` (`state.show_top`'s shape).
//! 2. [`HighBuilder::render_highstate`] renders those SLS (and what they include) into one
//!    high data map, keyed by ID, each body `{state: [args..., fun], __sls__, __env__}`, with
//!    `__extend__` and `__exclude__` gathered (`state.show_sls` / `state.show_highstate`).
//! 3. [`high_to_low`] reconciles `extend`, verifies the high data, applies the `_in`
//!    requisites, `use` and `exclude`, and compiles the low chunks in Salt's order
//!    (`state.show_lowstate` / `state.show_low_sls`). Errors are Salt's texts.
//!
//! [`calls`] composes these steps as each `state.*` function does (`show_top`, `show_sls`,
//! `show_low_sls`, `show_highstate`, `show_lowstate`, the plans of `state.sls` and
//! `state.highstate`); [`crate::run`] then runs the chunks ([`crate::run::call_high`]).

pub mod calls;
pub mod high;
pub mod low;
pub mod top;

pub use calls::{
    CompileOptions, Highstate, add_exclude, highstate, show_highstate, show_low_sls, show_lowstate,
    show_sls, show_top, sls_high, split_mods,
};
pub use high::HighBuilder;
pub use low::{
    apply_exclude, compile_high_data, compile_low_chunks, high_to_low, order_chunks,
    reconcile_extend, requisite_in, verify_high,
};
pub use top::{
    Matches, Minion, NO_MATCHES, Top, TopOptions, get_top, merge_tops, no_states, top_matches,
    verify_tops,
};

use serde_json::Value;

/// Where the compiler gets SLS files and top files: the engine implements it over the
/// fileserver and the renderer; tests implement it in memory.
pub trait SlsSource {
    /// The SLS `sls` (`web.nginx`) of `saltenv` rendered into data; `Ok(None)` when there is
    /// no such file. A render failure is `Err` with Salt's whole text
    /// (`Rendering SLS 'base:web' failed: ...`).
    fn render_sls(&self, saltenv: &str, sls: &str) -> Result<Option<Value>, String>;

    /// The saltenv's top file (the `state_top` option, `top.sls` by default) rendered into
    /// data; `Ok(None)` when the saltenv has none.
    fn render_top(&self, saltenv: &str) -> Result<Option<Value>, String>;

    /// The saltenvs the fileserver knows (`file_roots`' keys), `base` first.
    fn envs(&self) -> Vec<String>;

    /// Every SLS name available in `saltenv` (Salt's `list_states`: `web/init.sls` is `web`).
    fn list_states(&self, saltenv: &str) -> Vec<String>;

    /// Whether `sls` is a package's `init.sls` (`web` from `web/init.sls`): relative
    /// includes (`.foo`) resolve from inside it.
    fn is_package(&self, saltenv: &str, sls: &str) -> bool;
}

/// Salt's `list_states`: the SLS names among a saltenv's files (`web/init.sls` is `web`,
/// `web/nginx.sls` is `web.nginx`), sorted, for [`SlsSource::list_states`].
pub fn sls_names(files: &[String]) -> Vec<String> {
    let mut states: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let dotted = path.replace('/', ".");
            if path.ends_with("/init.sls") {
                Some(dotted[..dotted.len() - 9].to_owned())
            } else {
                path.ends_with(".sls")
                    .then(|| dotted[..dotted.len() - 4].to_owned())
            }
        })
        .collect();
    states.sort();
    states.dedup();
    states
}

/// Salt's `get_state`: the files an SLS name may be, in the order they are tried
/// (`web/nginx.sls`, then `web/nginx/init.sls`); the second one found makes it a package
/// ([`SlsSource::is_package`]).
pub fn sls_paths(sls: &str) -> [String; 2] {
    let base = sls.replace('.', "/");
    [format!("{base}.sls"), format!("{base}/init.sls")]
}

#[cfg(test)]
mod tests {
    use super::{sls_names, sls_paths};

    #[test]
    fn sls_names_as_list_states() {
        let files: Vec<String> = [
            "top.sls",
            "web/init.sls",
            "web/nginx.sls",
            "web/files/x.conf",
            "a/b/c.sls",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(sls_names(&files), ["a.b.c", "top", "web", "web.nginx"]);
        assert_eq!(
            sls_paths("web.nginx"),
            ["web/nginx.sls", "web/nginx/init.sls"]
        );
    }
}
