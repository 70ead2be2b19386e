//! MinionService's mine calls (Salt's `_mine`, `_mine_get`, `_mine_delete`, `_mine_flush`
//! requests): the minion's id comes from its certificate, never from the request.

use saltq_proto::v1 as pb;
use saltq_transport::value;
use serde_json::Value;
use tonic::Status;

use crate::state::Master;

/// A failed store as the one status the minion's `mine.*` reports.
fn unavailable(e: impl std::fmt::Display) -> Status {
    Status::unavailable(e.to_string())
}

/// Stores minion `id`'s mine data.
pub async fn store(
    master: &Master,
    id: &str,
    req: pb::MineStoreRequest,
) -> Result<pb::MineStoreResponse, Status> {
    let data = req
        .data
        .as_ref()
        .map(value::struct_to_map)
        .unwrap_or_default();
    master
        .cache
        .mine_store(id, data, req.clear)
        .await
        .map_err(unavailable)?;
    Ok(pb::MineStoreResponse {})
}

/// Gathers mine data for minion `id`.
pub async fn get(
    master: &Master,
    id: &str,
    req: pb::MineGetRequest,
) -> Result<pb::MineGetResponse, Status> {
    let fun = req.fun.as_ref().map_or(Value::Null, value::from_prost);
    if req.tgt.is_empty() {
        return Err(Status::invalid_argument("mine.get needs a target (tgt)"));
    }
    let data = crate::mine::get(master, id, &req.tgt, &req.tgt_type, &fun)
        .await
        .map_err(Status::invalid_argument)?;
    Ok(pb::MineGetResponse {
        data: Some(value::json_to_struct(&data)),
    })
}

/// Removes one function from minion `id`'s mine.
pub async fn delete(
    master: &Master,
    id: &str,
    req: pb::MineDeleteRequest,
) -> Result<pb::MineDeleteResponse, Status> {
    master
        .cache
        .mine_delete(id, &req.fun)
        .await
        .map_err(unavailable)?;
    Ok(pb::MineDeleteResponse {})
}

/// Removes minion `id`'s whole mine.
pub async fn flush(master: &Master, id: &str) -> Result<pb::MineFlushResponse, Status> {
    master.cache.mine_flush(id).await.map_err(unavailable)?;
    Ok(pb::MineFlushResponse {})
}
