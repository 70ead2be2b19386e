//! KeyService: salt-key over gRPC, firing `salt/key` for every change.

use std::sync::Arc;

use saltq_proto::v1::{self as pb, key_service_server::KeyService};
use serde_json::json;
use tonic::{Request, Response, Status};

use crate::keys::{KeyError, KeyState};
use crate::state::Master;

/// The service.
pub struct KeyApi {
    master: Arc<Master>,
}

impl KeyApi {
    /// Serves `master`.
    pub fn new(master: Arc<Master>) -> Self {
        KeyApi { master }
    }

    fn announce(&self, act: &str, changed: &[(KeyState, String)]) {
        for (_, id) in changed {
            self.master
                .events
                .fire("salt/key", json!({"act": act, "id": id, "result": true}));
        }
    }
}

fn groups(ids: impl IntoIterator<Item = (KeyState, String)>) -> pb::KeyGroups {
    let mut g = pb::KeyGroups::default();
    for (state, id) in ids {
        match state {
            KeyState::Accepted => g.minions.push(id),
            KeyState::Pending => g.minions_pre.push(id),
            KeyState::Rejected => g.minions_rejected.push(id),
            KeyState::Denied => g.minions_denied.push(id),
        }
    }
    g
}

fn glob(m: &str) -> Result<&str, Status> {
    if m.is_empty() {
        Err(Status::invalid_argument(
            "no key match given: name a minion id or a glob, e.g. '*'",
        ))
    } else {
        Ok(m)
    }
}

fn internal(e: KeyError) -> Status {
    Status::internal(e.to_string())
}

fn from_pb(s: i32) -> Option<KeyState> {
    match pb::KeyState::try_from(s).ok()? {
        pb::KeyState::Accepted => Some(KeyState::Accepted),
        pb::KeyState::Pending => Some(KeyState::Pending),
        pb::KeyState::Rejected => Some(KeyState::Rejected),
        pb::KeyState::Denied => Some(KeyState::Denied),
        pb::KeyState::Unspecified => None,
    }
}

impl KeyApi {
    /// Whether the caller's certificate may call the wheel function `fun` (`@wheel`).
    fn allow<T>(&self, req: &Request<T>, fun: &str) -> Result<(), Status> {
        self.master
            .cfg
            .acl
            .wheel(&super::caller(req)?, fun, crate::acl::CallArgs::default())
    }
}

#[tonic::async_trait]
impl KeyService for KeyApi {
    async fn list_keys(
        &self,
        req: Request<pb::ListKeysRequest>,
    ) -> Result<Response<pb::ListKeysResponse>, Status> {
        self.allow(&req, "key.list_all")?;
        let wanted: Vec<KeyState> = req
            .into_inner()
            .states
            .into_iter()
            .filter_map(from_pb)
            .collect();
        let all = self.master.keys.list();
        let ids = all
            .into_iter()
            .filter(|(s, _)| wanted.is_empty() || wanted.contains(s))
            .flat_map(|(s, ids)| ids.into_iter().map(move |id| (s, id)));
        Ok(Response::new(pb::ListKeysResponse {
            keys: Some(groups(ids)),
        }))
    }

    async fn accept_keys(
        &self,
        req: Request<pb::AcceptKeysRequest>,
    ) -> Result<Response<pb::AcceptKeysResponse>, Status> {
        self.allow(&req, "key.accept")?;
        let r = req.into_inner();
        let mut from = vec![KeyState::Pending];
        if r.include_rejected {
            from.push(KeyState::Rejected);
        }
        if r.include_denied {
            from.push(KeyState::Denied);
        }
        let moved = self
            .master
            .keys
            .transition(glob(&r.r#match)?, &from, KeyState::Accepted)
            .map_err(internal)?;
        self.announce("accept", &moved);
        Ok(Response::new(pb::AcceptKeysResponse {
            changed: Some(groups(moved)),
        }))
    }

    async fn reject_keys(
        &self,
        req: Request<pb::RejectKeysRequest>,
    ) -> Result<Response<pb::RejectKeysResponse>, Status> {
        self.allow(&req, "key.reject")?;
        let r = req.into_inner();
        let mut from = vec![KeyState::Pending];
        if r.include_accepted {
            from.push(KeyState::Accepted);
        }
        if r.include_denied {
            from.push(KeyState::Denied);
        }
        let moved = self
            .master
            .keys
            .transition(glob(&r.r#match)?, &from, KeyState::Rejected)
            .map_err(internal)?;
        self.announce("reject", &moved);
        Ok(Response::new(pb::RejectKeysResponse {
            changed: Some(groups(moved)),
        }))
    }

    async fn delete_keys(
        &self,
        req: Request<pb::DeleteKeysRequest>,
    ) -> Result<Response<pb::DeleteKeysResponse>, Status> {
        self.allow(&req, "key.delete")?;
        let r = req.into_inner();
        let gone = self
            .master
            .keys
            .delete(glob(&r.r#match)?)
            .map_err(internal)?;
        self.announce("delete", &gone);
        Ok(Response::new(pb::DeleteKeysResponse {
            changed: Some(groups(gone)),
        }))
    }

    async fn finger_keys(
        &self,
        req: Request<pb::FingerKeysRequest>,
    ) -> Result<Response<pb::FingerKeysResponse>, Status> {
        self.allow(&req, "key.finger")?;
        let r = req.into_inner();
        let mut fp = self.master.keys.fingerprints(glob(&r.r#match)?);
        let mut take = |s| {
            fp.remove(&s)
                .unwrap_or_default()
                .into_iter()
                .collect::<std::collections::HashMap<_, _>>()
        };
        Ok(Response::new(pb::FingerKeysResponse {
            minions: take(KeyState::Accepted),
            minions_pre: take(KeyState::Pending),
            minions_rejected: take(KeyState::Rejected),
            minions_denied: take(KeyState::Denied),
        }))
    }

    async fn print_keys(
        &self,
        req: Request<pb::PrintKeysRequest>,
    ) -> Result<Response<pb::PrintKeysResponse>, Status> {
        self.allow(&req, "key.print")?;
        let r = req.into_inner();
        let mut keys = self.master.keys.public_keys(glob(&r.r#match)?);
        let mut take = |s| {
            keys.remove(&s)
                .unwrap_or_default()
                .into_iter()
                .collect::<std::collections::HashMap<_, _>>()
        };
        Ok(Response::new(pb::PrintKeysResponse {
            minions: take(KeyState::Accepted),
            minions_pre: take(KeyState::Pending),
            minions_rejected: take(KeyState::Rejected),
            minions_denied: take(KeyState::Denied),
        }))
    }
}
