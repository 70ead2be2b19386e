//! The minion's way to the master's Salt Mine ([`saltq_exec::MineClient`] over
//! `MinionService`'s mine calls), and the `mine.update` Salt's minion runs once at start
//! (its `__mine_interval` schedule entry has `run_on_start`).

use std::sync::Arc;

use saltq_exec::{CallContext, MasterFuture, MineClient};
use saltq_proto::v1::{self as pb, minion_service_client::MinionServiceClient};
use saltq_transport::Channel;
use saltq_transport::value;
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::config::MinionConfig;

/// The mine over the minion's connection to its master.
pub struct MasterMine {
    /// The connection to the master, when there is one.
    pub chan: watch::Receiver<Option<Channel>>,
    /// The minion's config (message limits).
    pub cfg: Arc<MinionConfig>,
}

type Client = MinionServiceClient<Channel>;

impl MasterMine {
    fn client(&self) -> Result<Client, String> {
        let ch = self
            .chan
            .borrow()
            .clone()
            .ok_or("not connected to the master")?;
        Ok(MinionServiceClient::new(ch)
            .max_decoding_message_size(self.cfg.limits.max_message_size)
            .max_encoding_message_size(self.cfg.limits.max_message_size))
    }
}

impl MineClient for MasterMine {
    fn store(&self, data: Map<String, Value>, clear: bool) -> MasterFuture<()> {
        let client = self.client();
        Box::pin(async move {
            let req = pb::MineStoreRequest {
                data: Some(value::map_to_struct(&data)),
                clear,
            };
            client?
                .mine_store(req)
                .await
                .map_err(|s| s.message().to_owned())?;
            Ok(())
        })
    }

    fn get(&self, tgt: &str, tgt_type: &str, fun: Value) -> MasterFuture<Value> {
        let client = self.client();
        let req = pb::MineGetRequest {
            tgt: tgt.to_owned(),
            tgt_type: tgt_type.to_owned(),
            fun: Some(value::to_prost(&fun)),
        };
        Box::pin(async move {
            let resp = client?
                .mine_get(req)
                .await
                .map_err(|s| s.message().to_owned())?;
            Ok(Value::Object(value::opt_struct(
                resp.into_inner().data.as_ref(),
            )))
        })
    }

    fn delete(&self, fun: &str) -> MasterFuture<()> {
        let client = self.client();
        let req = pb::MineDeleteRequest {
            fun: fun.to_owned(),
        };
        Box::pin(async move {
            client?
                .mine_delete(req)
                .await
                .map_err(|s| s.message().to_owned())?;
            Ok(())
        })
    }

    fn flush(&self) -> MasterFuture<()> {
        let client = self.client();
        Box::pin(async move {
            client?
                .mine_flush(pb::MineFlushRequest {})
                .await
                .map_err(|s| s.message().to_owned())?;
            Ok(())
        })
    }
}

/// Whether the minion sends its mine (`mine_enabled`, default true).
pub fn enabled(ctx: &CallContext) -> bool {
    ctx.opt("mine_enabled")
        .is_none_or(saltq_semantics::python::truthy)
}

/// Runs `mine.update` once in the background (at the first connection after start, with
/// the pillar the master just sent, so `mine_functions` from pillar count too).
pub fn update_at_start(ctx: &CallContext) {
    if !enabled(ctx) {
        return;
    }
    let ctx = ctx.for_job();
    tokio::spawn(async move {
        match saltq_exec::call_direct(&ctx, "mine.update", Vec::new(), Map::new()).await {
            Ok(v) => tracing::debug!(ret = %v, "mine updated at start"),
            Err(e) => tracing::warn!(error = ?e, "mine.update at start failed"),
        }
    });
}
