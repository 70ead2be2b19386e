//! The master's own `ext_pillar` sources, those that need its database connections:
//! `postgres` and `mysql` (Salt's `sql_base` query forms, [`sql_base`]). They join the
//! built-in sources of `saltq_states::pillar::ext` through [`sources`].

pub mod mysql;
pub mod postgres;
pub mod sql_base;

use std::sync::Arc;

use saltq_states::pillar::ext::{Build, ExtPillar, from_config};
use serde_json::Value;

/// The master's sources, by their `ext_pillar` name.
pub const MASTER_SOURCES: &[(&str, Build)] =
    &[("postgres", postgres::build), ("mysql", mysql::build)];

/// The sources `ext_pillar` configures (Salt's list form), built-in and the master's, in
/// order; `opts` is the master's configuration (`postgres:`, `mysql:` connection keys).
pub fn sources(ext_pillar: &Value, opts: &Value) -> Result<Vec<Arc<dyn ExtPillar>>, String> {
    from_config(ext_pillar, opts, MASTER_SOURCES)
}

/// The master's external pillar settings, checked at start-up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtPillarConfig {
    /// `ext_pillar` as written (Salt's list form), every entry known and well formed.
    pub entries: Value,
    /// `on_demand_ext_pillar` (Salt's default `[libvirt, virtkey]`): the sources a
    /// `pillar.ext` call may name.
    pub on_demand: Vec<String>,
    /// What the sources read of the configuration: `postgres:`, `mysql:`, `gpg_keydir`.
    pub opts: Value,
}

impl ExtPillarConfig {
    /// Checks `ext_pillar` (building every source once, without connecting) and gathers
    /// the keys the sources read; the error is `(key, message)`.
    pub fn from_raw(
        ext_pillar: Option<&Value>,
        on_demand: Option<&[String]>,
        postgres: Option<&Value>,
        mysql: Option<&Value>,
        gpg_keydir: Option<&std::path::Path>,
    ) -> Result<Self, (&'static str, String)> {
        let mut opts = serde_json::Map::new();
        for (k, v) in [("postgres", postgres), ("mysql", mysql)] {
            if let Some(v) = v {
                opts.insert(k.into(), v.clone());
            }
        }
        if let Some(d) = gpg_keydir {
            opts.insert("gpg_keydir".into(), Value::String(d.display().to_string()));
        }
        let opts = Value::Object(opts);
        let entries = ext_pillar.cloned().unwrap_or(Value::Null);
        sources(&entries, &opts).map_err(|e| ("ext_pillar", e))?;
        Ok(ExtPillarConfig {
            entries,
            on_demand: on_demand.map(<[String]>::to_vec).unwrap_or_else(|| {
                saltq_states::pillar::ext::DEFAULT_ON_DEMAND
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            }),
            opts,
        })
    }

    /// The configured sources, built for a compilation.
    pub fn sources(&self) -> Result<Vec<Arc<dyn ExtPillar>>, String> {
        sources(&self.entries, &self.opts)
    }

    /// The sources a `pillar.ext` call asks for (`{name: arguments}`), built when every name
    /// is in `on_demand_ext_pillar`; else the refusal in Salt's words.
    pub fn on_demand(&self, ext: &Value) -> Result<Vec<Arc<dyn ExtPillar>>, String> {
        saltq_states::pillar::ext::on_demand(ext, &self.on_demand, &self.opts, MASTER_SOURCES)
    }
}

/// Serves a minion's `pillar.ext` (`GetExtPillar`): its pillar compiled now, on the blocking
/// pool, with the on-demand sources after the configured ones and `pillar_override` merged
/// last; never cached, as Salt compiles it afresh. A refused source is INVALID_ARGUMENT with
/// Salt's message.
pub async fn serve(
    master: &Arc<crate::state::Master>,
    id: &str,
    req: saltq_proto::v1::GetExtPillarRequest,
) -> Result<saltq_proto::v1::GetExtPillarResponse, tonic::Status> {
    use saltq_transport::value;
    let ext = req
        .ext
        .as_ref()
        .map(value::from_prost)
        .unwrap_or(Value::Null);
    let extra = master.cfg.ext_pillar.on_demand(&ext).map_err(|e| {
        tracing::error!(minion = %id, "{e}");
        tonic::Status::invalid_argument(e)
    })?;
    let pillar_override = value::opt_struct(req.pillar_override.as_ref());
    let grains = master
        .facts
        .grains(id)
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    let cfg = master.cfg.pillar.clone();
    let minion = id.to_owned();
    let pillar = tokio::task::spawn_blocking(move || {
        cfg.compile_ext(&minion, &grains, extra, pillar_override)
    })
    .await
    .map_err(|e| tonic::Status::internal(format!("pillar for {id} failed to compile: {e}")))?;
    // In Salt's key order (the files' order), as the ordered GetPillar answers.
    Ok(saltq_proto::v1::GetExtPillarResponse {
        pillar_json: serde_json::to_vec(&pillar)
            .map_err(|e| tonic::Status::internal(format!("pillar for {id}: {e}")))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_names_a_bad_source_and_keeps_the_connection_keys() {
        let (k, e) =
            ExtPillarConfig::from_raw(Some(&json!([{"hiera": "x"}])), None, None, None, None)
                .unwrap_err();
        assert_eq!(k, "ext_pillar");
        assert!(
            e.contains("unknown source 'hiera'") && e.contains("mysql, postgres"),
            "{e}"
        );
        let pg = json!({"host": "127.0.0.1", "db": "test"});
        let c = ExtPillarConfig::from_raw(
            Some(&json!([{"postgres": ["SELECT k, v FROM t WHERE id = %s"]}, {"cmd_json": "echo {}"}])),
            None,
            Some(&pg),
            None,
            Some(std::path::Path::new("/etc/saltq/gpgkeys")),
        )
        .unwrap();
        assert_eq!(c.on_demand, ["libvirt", "virtkey"]);
        assert_eq!(c.opts["postgres"], pg);
        assert_eq!(c.opts["gpg_keydir"], "/etc/saltq/gpgkeys");
        let names: Vec<String> = c
            .sources()
            .unwrap()
            .iter()
            .map(|s| s.name().to_owned())
            .collect();
        assert_eq!(names, ["postgres", "cmd_json"]);
        let (_, e) = ExtPillarConfig::from_raw(
            Some(&json!([{"postgres": {"q": {"query": ""}}}])),
            None,
            None,
            None,
            None,
        )
        .unwrap_err();
        assert!(e.contains("no query configured"), "{e}");
    }
}
