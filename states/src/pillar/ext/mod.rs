//! External pillar (Salt's `ext_pillar`): each source is one file here plus an entry in the
//! table, and plugs into the compiler through [`ExtPillar`]. Sources that need the master's
//! own connections (PostgreSQL, MySQL, git) implement the same trait in the master crate.

use serde_json::{Map, Value};

/// What an external pillar source sees when it compiles for one minion.
pub struct ExtContext<'a> {
    /// The minion the pillar is compiled for.
    pub minion_id: &'a str,
    /// Its grains.
    pub grains: &'a Value,
    /// The pillar compiled so far (the SLS pillar, or what earlier sources gave when
    /// `ext_pillar_first` is set), as Salt passes it to `ext_pillar(minion_id, pillar, ...)`.
    pub pillar: &'a Map<String, Value>,
    /// The pillar environment being compiled (`pillarenv`), when one is set.
    pub pillarenv: Option<&'a str>,
    /// The configuration (`__opts__`).
    pub opts: &'a Value,
}

/// One configured `ext_pillar` entry (`- cmd_json: ...`, `- postgres: ...`).
pub trait ExtPillar: Send + Sync {
    /// The source's name as written in `ext_pillar` (`cmd_json`, `postgres`, ...), used in
    /// `_errors` and log messages.
    fn name(&self) -> &str;
    /// The data this source adds for the minion. An error is a message naming what failed;
    /// the compiler turns it into an `_errors` entry naming the source.
    fn compile(&self, cx: &ExtContext<'_>) -> Result<Map<String, Value>, String>;
}
