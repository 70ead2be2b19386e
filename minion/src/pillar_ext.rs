//! `pillar.ext`'s way to a pillar compiler ([`saltq_exec::PillarClient`]): the master's over
//! the minion's connection (`GetExtPillar`), or, masterless, the minion's own pillar tree
//! with the same `on_demand_ext_pillar` check the master makes.

use std::sync::Arc;

use saltq_exec::{MasterFuture, PillarClient};
use saltq_proto::v1::{self as pb, minion_service_client::MinionServiceClient};
use saltq_states::pillar::{PillarOptions, ext, merge};
use saltq_transport::Channel;
use saltq_transport::value;
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::config::MinionConfig;

/// The master's pillar compiler over the minion's connection.
pub struct MasterPillar {
    /// The connection to the master, when there is one.
    pub chan: watch::Receiver<Option<Channel>>,
    /// The minion's config (message limits).
    pub cfg: Arc<MinionConfig>,
}

impl MasterPillar {
    /// A client on the current connection within the minion's message limits; an error
    /// when there is no connection.
    fn client(&self) -> Result<MinionServiceClient<Channel>, String> {
        let ch = self.chan.borrow().clone();
        let ch = ch.ok_or_else(|| "not connected to the master".to_owned())?;
        let limit = self.cfg.limits.max_message_size;
        Ok(MinionServiceClient::new(ch)
            .max_decoding_message_size(limit)
            .max_encoding_message_size(limit))
    }
}

impl PillarClient for MasterPillar {
    fn compile_ext(&self, ext: Value, pillar_override: Map<String, Value>) -> MasterFuture<Value> {
        let client = self.client();
        Box::pin(async move {
            let mut client = client?;
            let req = pb::GetExtPillarRequest {
                ext: Some(value::to_prost(&ext)),
                pillar_override: Some(value::map_to_struct(&pillar_override)),
            };
            let resp = client
                .get_ext_pillar(req)
                .await
                .map_err(|s| s.message().to_owned())?;
            serde_json::from_slice(&resp.into_inner().pillar_json)
                .map_err(|e| format!("the master's pillar is not JSON: {e}"))
        })
    }

    fn compile_env(
        &self,
        saltenv: Option<String>,
        pillarenv: Option<String>,
    ) -> MasterFuture<Value> {
        let client = self.client();
        Box::pin(async move {
            let mut client = client?;
            let req = pb::GetPillarRequest {
                ordered: true,
                saltenv: saltenv.unwrap_or_default(),
                pillarenv: pillarenv.unwrap_or_default(),
            };
            let resp = client
                .get_pillar(req)
                .await
                .map_err(|s| s.message().to_owned())?
                .into_inner();
            value::from_ordered_json(&resp.pillar_json, resp.pillar.as_ref()).map(Value::Object)
        })
    }
}

/// A masterless minion's own pillar tree (`file_client: local`), as `salt-call --local
/// pillar.ext` compiles it.
pub struct LocalPillar {
    /// The minion's config: `pillar_roots`, `ext_pillar`, `on_demand_ext_pillar`.
    pub cfg: Arc<MinionConfig>,
    /// The minion's grains.
    pub grains: Value,
}

impl PillarClient for LocalPillar {
    fn compile_ext(&self, ext: Value, pillar_override: Map<String, Value>) -> MasterFuture<Value> {
        let cfg = self.cfg.clone();
        let grains = self.grains.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || compile_local(&cfg, &grains, ext, pillar_override))
                .await
                .map_err(|e| format!("pillar compilation failed: {e}"))?
        })
    }

    fn compile_env(
        &self,
        saltenv: Option<String>,
        pillarenv: Option<String>,
    ) -> MasterFuture<Value> {
        let cfg = self.cfg.clone();
        let grains = self.grains.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                Value::Object(crate::masterless::compile_pillar_env(
                    &cfg, &grains, saltenv, pillarenv,
                ))
            })
            .await
            .map_err(|e| format!("pillar compilation failed: {e}"))
        })
    }
}

/// The masterless pillar with `ext` appended to `ext_pillar` (after the check) and
/// `pillar_override` merged last, as Salt's `Pillar.compile_pillar` does.
fn compile_local(
    cfg: &MinionConfig,
    grains: &Value,
    ext: Value,
    pillar_override: Map<String, Value>,
) -> Result<Value, String> {
    let allowed = ext::on_demand_list(&cfg.opts)?;
    ext::on_demand(&ext, &allowed, &cfg.opts, &[])?;
    let mut cfg = cfg.clone();
    if let Value::Object(o) = &mut cfg.opts {
        let entries = o
            .entry("ext_pillar")
            .or_insert_with(|| Value::Array(Vec::new()));
        if !entries.is_array() {
            *entries = Value::Array(Vec::new());
        }
        if let Value::Array(a) = entries {
            a.push(ext);
        }
    }
    let pillar = crate::masterless::compile_pillar(&cfg, grains);
    if pillar_override.is_empty() {
        return Ok(Value::Object(pillar));
    }
    let o = PillarOptions::from_opts(&cfg.opts)?;
    Ok(Value::Object(merge::merge(
        pillar,
        pillar_override,
        o.strategy,
        &o.renderer,
        o.merge_lists,
    )))
}
