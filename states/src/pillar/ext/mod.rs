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

pub mod cmd_json;
pub mod cmd_yaml;
pub mod file_tree;
pub mod stack;

use std::sync::Arc;

/// Builds one source from its `ext_pillar` entry's value (what follows `- name:`) and the
/// configuration (`__opts__`, for sources that read connection keys such as `postgres:`),
/// checking its form at start-up; the error says what is wrong with it.
pub type Build = fn(&Value, &Value) -> Result<Arc<dyn ExtPillar>, String>;

/// The built-in sources, by the name Salt gives them in `ext_pillar`. Adding a source is one
/// file and one line here (or in the master's own table for sources that need its
/// connections).
pub const SOURCES: &[(&str, Build)] = &[
    ("cmd_json", cmd_json::build),
    ("cmd_yaml", cmd_yaml::build),
    ("file_tree", file_tree::build),
    ("stack", stack::build),
];

/// Builds the configured sources from `ext_pillar` in Salt's list form (`- name: args`), in
/// order, looking names up in [`SOURCES`] and then in `extra` (the master's sources). An
/// unknown name, or an entry that is not a one-key mapping, is an error naming it; `null`
/// or an absent key is no source.
pub fn from_config(
    ext_pillar: &Value,
    opts: &Value,
    extra: &[(&str, Build)],
) -> Result<Vec<Arc<dyn ExtPillar>>, String> {
    let entries = match ext_pillar {
        Value::Null => return Ok(Vec::new()),
        Value::Array(entries) => entries,
        other => {
            return Err(format!(
                "ext_pillar: expected a list of `- name: arguments` entries, got {other}"
            ));
        }
    };
    let mut out = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let Value::Object(m) = entry else {
            return Err(format!(
                "ext_pillar: entry {} is malformed: expected `- name: arguments`, got {entry}",
                i + 1
            ));
        };
        for (name, args) in m {
            let build = SOURCES
                .iter()
                .chain(extra.iter())
                .find(|(n, _)| n == name)
                .map(|(_, b)| *b)
                .ok_or_else(|| {
                    let mut known: Vec<&str> = SOURCES
                        .iter()
                        .chain(extra.iter())
                        .map(|(n, _)| *n)
                        .collect();
                    known.sort_unstable();
                    format!(
                        "ext_pillar: unknown source '{name}' (available: {})",
                        known.join(", ")
                    )
                })?;
            out.push(build(args, opts).map_err(|e| format!("ext_pillar: {name}: {e}"))?);
        }
    }
    Ok(out)
}

/// Salt's default `on_demand_ext_pillar`: the sources a `pillar.ext` call may name.
pub const DEFAULT_ON_DEMAND: &[&str] = &["libvirt", "virtkey"];

/// `on_demand_ext_pillar` as configured in `opts`, else Salt's default; an error when it is
/// not a list of names.
pub fn on_demand_list(opts: &Value) -> Result<Vec<String>, String> {
    match opts.get("on_demand_ext_pillar") {
        None | Some(Value::Null) => Ok(DEFAULT_ON_DEMAND.iter().map(|s| s.to_string()).collect()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| MALFORMED_ON_DEMAND.to_owned()),
        Some(_) => Err(MALFORMED_ON_DEMAND.to_owned()),
    }
}

const MALFORMED_ON_DEMAND: &str = "The 'on_demand_ext_pillar' configuration option is \
     malformed, it should be a list of ext_pillar module names";

/// The sources a `pillar.ext` call names (`{name: arguments}`), built (with `extra`, the
/// master's own sources) when every name is in `on_demand`; else the refusal in Salt's words
/// (`Pillar.__valid_on_demand_ext_pillar`, which Salt only logs before compiling without
/// them; saltq answers it to the caller).
pub fn on_demand(
    ext: &Value,
    on_demand: &[String],
    opts: &Value,
    extra: &[(&str, Build)],
) -> Result<Vec<Arc<dyn ExtPillar>>, String> {
    let Value::Object(m) = ext else {
        return Err(format!(
            "On-demand pillar {} is not formatted as a dictionary",
            saltq_semantics::python::repr(ext)
        ));
    };
    let mut invalid: Vec<&str> = m
        .keys()
        .map(String::as_str)
        .filter(|name| !on_demand.iter().any(|o| o == name))
        .collect();
    if !invalid.is_empty() {
        invalid.sort_unstable();
        return Err(format!(
            "The following ext_pillar modules are not allowed for on-demand pillar data: {}. \
             Valid on-demand ext_pillar modules are: {}. The valid modules can be adjusted by \
             setting the 'on_demand_ext_pillar' config option.",
            invalid.join(", "),
            on_demand.join(", ")
        ));
    }
    from_config(&Value::Array(vec![ext.clone()]), opts, extra)
}

/// Salt's call forms of an entry's arguments (`_external_pillar_data`): a mapping is keyword
/// arguments, a list positional arguments, anything else one positional argument.
pub fn call_args(args: &Value) -> (Vec<Value>, Map<String, Value>) {
    match args {
        Value::Object(m) => (Vec::new(), m.clone()),
        Value::Array(a) => (a.clone(), Map::new()),
        other => (vec![other.clone()], Map::new()),
    }
}

/// Runs `fut` to completion from synchronous code, on a runtime of its own on a scoped
/// thread, so a source may use async clients whether the compiler runs on a blocking thread
/// or not.
pub fn block_on<F: std::future::Future + Send>(fut: F) -> Result<F::Output, String>
where
    F::Output: Send,
{
    std::thread::scope(|s| {
        s.spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map(|rt| rt.block_on(fut))
                .map_err(|e| format!("cannot start a runtime: {e}"))
        })
        .join()
        .map_err(|_| "the source panicked".to_string())?
    })
}

/// Runs an execution function (`cmd.run`, ...) as a source's `__salt__[...]` call, with the
/// minion's grains and the options, and answers its return.
pub fn salt_call(
    cx: &ExtContext<'_>,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
) -> Result<Value, String> {
    let ctx = saltq_exec::CallContext::local(cx.grains.clone(), cx.opts.clone());
    block_on(async move { saltq_exec::call_direct(&ctx, fun, args, kwargs).await })?.map_err(|e| {
        match e {
            saltq_exec::DirectError::Missing => format!("'{fun}' is not available"),
            saltq_exec::DirectError::Failed(e) => format!("{fun} failed: {e}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn from_config_builds_in_order_and_names_an_unknown_source() {
        let cfg = json!([{"cmd_json": "echo {}"}, {"cmd_yaml": "echo a: 1"}]);
        let built = from_config(&cfg, &Value::Null, &[]).unwrap();
        let names: Vec<&str> = built.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["cmd_json", "cmd_yaml"]);
        let err = from_config(&json!([{"hiera": "/etc/hiera.yaml"}]), &Value::Null, &[])
            .err()
            .unwrap();
        assert!(err.contains("unknown source 'hiera'"), "{err}");
        assert!(
            err.contains("cmd_json, cmd_yaml, file_tree, stack"),
            "{err}"
        );
        let err = from_config(&json!(["cmd_json"]), &Value::Null, &[])
            .err()
            .unwrap();
        assert!(err.contains("entry 1 is malformed"), "{err}");
        let err = from_config(&json!({"cmd_json": "x"}), &Value::Null, &[])
            .err()
            .unwrap();
        assert!(err.contains("expected a list"), "{err}");
        assert!(
            from_config(&Value::Null, &Value::Null, &[])
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn extra_sources_are_found_after_the_built_in_ones() {
        fn build(_: &Value, _: &Value) -> Result<Arc<dyn ExtPillar>, String> {
            Err("no connection".into())
        }
        let err = from_config(
            &json!([{"postgres": ["SELECT 1"]}]),
            &Value::Null,
            &[("postgres", build)],
        )
        .err()
        .unwrap();
        assert_eq!(err, "ext_pillar: postgres: no connection");
    }

    #[test]
    fn call_args_follow_salts_forms() {
        assert_eq!(call_args(&json!({"a": 1})).1["a"], 1);
        assert_eq!(call_args(&json!(["x", "y"])).0.len(), 2);
        assert_eq!(call_args(&json!("cmd")).0, vec![json!("cmd")]);
    }
}
