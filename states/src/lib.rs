//! Salt's state system on the minion: `state.apply` and friends.
//!
//! The path of a state run, each step its own module:
//! - [`render`]: an SLS file's text through the renderer pipeline (`jinja|yaml` by default,
//!   Salt's Jinja context and tags, YAML 1.1 scalars) into data;
//! - [`compile`]: the top file, `include`/`extend`/`exclude`, high data into low chunks in
//!   Salt's order; pure, fed by an [`compile::SlsSource`];
//! - [`run`]: the low chunks executed with Salt's requisites and global arguments into Salt's
//!   result dict;
//! - [`modules`]: the state modules (`file`, `cmd`, `pkg`, `service`, `test`, ...), one file
//!   each plus a line in their table;
//! - [`engine`]: the `state.*` execution functions over all of it (the minion attaches an
//!   [`Engine`] to its call context).

pub mod compile;
pub mod engine;
pub mod modules;
pub mod pillar;
pub mod render;
pub mod run;
pub mod saltconf;

pub use engine::Engine;
