//! The minion's way to the master's Salt Mine ([`saltq_exec::MineClient`] over
//! `MinionService`'s mine calls). The `mine.update` Salt's minion runs at start is the
//! `__mine_interval` schedule entry's `run_on_start` (so `mine_return_job` applies to it);
//! it waits for the master's first welcome, as Salt's minion only starts its schedule once
//! connected, and is the only send at start.

use std::sync::Arc;

use saltq_exec::{MasterFuture, MineClient};
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
    /// Turns true when the master has first welcomed the minion (pillar in place).
    pub welcomed: watch::Receiver<bool>,
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

    fn ready(&self) -> MasterFuture<()> {
        let mut welcomed = self.welcomed.clone();
        Box::pin(async move {
            welcomed
                .wait_for(|w| *w)
                .await
                .map(drop)
                .map_err(|_| "the minion is stopping".to_owned())
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
