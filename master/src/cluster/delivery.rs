//! Delivery across replicas: the [`Delivery`] seam for a cluster. Each replica holds the
//! subscriptions of the minions connected to it and tells the others over NATS (attach,
//! detach, a snapshot when a replica says hello, a heartbeat); [`Routes`] keeps the resulting
//! table. A job for some minions goes to this replica's own subscriptions and, as one NATS
//! request per other replica, to the replicas holding the rest, each of which answers which
//! minions it handed the job to. So every matched minion gets the job once, through whichever
//! replica holds its subscription, and the publisher knows who was sent it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::counts::Counts;
use super::nats::{Nats, NatsError};
use super::outbox::Outbox;
use super::routes::Routes;
use super::tasks::Tasks;
use crate::delivery::{Delivered, Delivery, SubscriptionTx, Subscriptions};
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::{BoxFuture, join_all};
use prost::Message;
use saltq_proto::cluster::v1 as cpb;
use saltq_proto::v1 as pb;

/// How often a replica says it is alive; three silent periods and it is taken for dead.
const HEARTBEAT: Duration = Duration::from_secs(2);
/// How long a replica asked to deliver may take to answer.
const DELIVER_TIMEOUT: Duration = Duration::from_secs(3);
/// Route changes waiting for NATS at most; past that they are dropped (and counted), and the
/// next snapshot repairs what the others missed.
const QUEUE: usize = 65_536;

/// The cluster's delivery for one replica.
pub struct ClusterDelivery {
    local: Subscriptions,
    routes: Arc<Mutex<Routes>>,
    nats: Nats,
    /// Route changes of this replica, sent in order by a task.
    updates: Outbox<cpb::RoutesUpdate>,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl ClusterDelivery {
    /// Starts listening for the other replicas' routes and delivery requests, and says hello;
    /// route changes dropped for a full queue are counted in `dropped` as `routes`.
    pub async fn start(
        nats: Nats,
        dropped: Arc<Counts>,
        tasks: &Tasks,
    ) -> Result<Arc<ClusterDelivery>, NatsError> {
        let me = nats.replica().to_owned();
        let routes = Arc::new(Mutex::new(Routes::new(&me, HEARTBEAT * 3)));
        let routes_subject = nats.subject("routes");
        let mut inbound_routes = nats.subscribe_others(routes_subject.clone()).await?;
        let mut requests = nats
            .subscribe(nats.subject(&format!("deliver.{me}")))
            .await?;
        // This replica's route changes, in order.
        let updates = Outbox::start(
            "routes",
            QUEUE,
            nats.clone(),
            move |u: cpb::RoutesUpdate| {
                Some((routes_subject.clone(), Bytes::from(u.encode_to_vec())))
            },
            dropped,
            tasks,
        );
        let this = Arc::new(ClusterDelivery {
            local: Subscriptions::default(),
            routes: routes.clone(),
            nats: nats.clone(),
            updates,
        });

        // The other replicas' routes.
        let d = this.clone();
        tasks.spawn(async move {
            while let Some(m) = inbound_routes.next().await {
                let Ok(u) = cpb::RoutesUpdate::decode(m.payload) else {
                    tracing::warn!(replica = %m.replica, "undecodable routes update");
                    continue;
                };
                d.apply(u);
            }
        });

        // Delivery requests from the other replicas.
        let d = this.clone();
        tasks.spawn(async move {
            while let Some(m) = requests.next().await {
                let Some(reply) = m.reply else { continue };
                let sent = match cpb::DeliverRequest::decode(m.payload) {
                    Ok(req) => match req.message {
                        Some(msg) => d.local.deliver_here(&req.ids, &Arc::new(msg)),
                        None => Vec::new(),
                    },
                    Err(e) => {
                        tracing::warn!(replica = %m.replica, "undecodable delivery request: {e}");
                        Vec::new()
                    }
                };
                let answer = cpb::DeliverReply { sent }.encode_to_vec();
                if let Err(e) = d.nats.publish(reply, Bytes::from(answer)).await {
                    tracing::warn!("delivery answer not sent: {e}");
                }
            }
        });

        // Heartbeats, expiry of silent replicas, a snapshot now and then. The goodbye is
        // [`ClusterDelivery::goodbye`], at stop.
        let d = this.clone();
        tasks.spawn(async move {
            let mut tick = tokio::time::interval(HEARTBEAT);
            let mut beats = 0u32;
            loop {
                tick.tick().await;
                beats += 1;
                // Every 30 s a full snapshot repairs whatever a lost message left wrong.
                if beats.is_multiple_of(15) {
                    d.send_snapshot();
                } else {
                    d.send(cpb::RoutesOp::Heartbeat, Vec::new());
                }
                let gone = d.lock().expire(Instant::now());
                for r in gone {
                    tracing::warn!(replica = %r, "replica silent, its minions are taken as disconnected");
                }
            }
        });

        // Back from a NATS outage: the others may have expired this replica's routes, and
        // this one theirs.
        let d = this.clone();
        let mut reconnects = nats.reconnects();
        tasks.spawn(async move {
            while reconnects.changed().await.is_ok() {
                d.send_snapshot();
                d.send(cpb::RoutesOp::Hello, Vec::new());
            }
        });

        this.send(cpb::RoutesOp::Hello, Vec::new());
        Ok(this)
    }

    /// Tells the other replicas this one is leaving, so they drop its routes at once (queued
    /// before the replica's tasks stop, which publish what is queued).
    pub fn goodbye(&self) {
        self.send(cpb::RoutesOp::Goodbye, Vec::new());
    }

    /// Subscriptions held here, and the replicas heard from recently (this one included).
    pub fn counts(&self) -> (usize, usize) {
        let routes = self.lock();
        (routes.mine().len(), routes.replicas() + 1)
    }

    /// `id` is no longer subscribed here: drop its route and tell the others.
    fn gone(&self, id: &str) {
        let me = self.me().to_owned();
        self.lock().detach(&me, id, Instant::now());
        self.send(
            cpb::RoutesOp::Detach,
            vec![cpb::Route {
                id: id.to_owned(),
                since_ms: 0,
            }],
        );
    }

    fn me(&self) -> &str {
        self.nats.replica()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn send(&self, op: cpb::RoutesOp, routes: Vec<cpb::Route>) {
        self.updates.send(cpb::RoutesUpdate {
            replica: self.me().to_owned(),
            op: op as i32,
            routes,
        });
    }

    fn send_snapshot(&self) {
        let routes = self
            .lock()
            .mine()
            .into_iter()
            .map(|(id, since_ms)| cpb::Route { id, since_ms })
            .collect();
        self.send(cpb::RoutesOp::Snapshot, routes);
    }

    /// Applies another replica's update.
    fn apply(&self, u: cpb::RoutesUpdate) {
        let now = Instant::now();
        let op = cpb::RoutesOp::try_from(u.op).unwrap_or(cpb::RoutesOp::Unspecified);
        if op == cpb::RoutesOp::Hello {
            // A newcomer: tell it everything held here.
            self.lock().heartbeat(&u.replica, now);
            self.send_snapshot();
            return;
        }
        let mut routes = self.lock();
        match op {
            cpb::RoutesOp::Attach => {
                for r in &u.routes {
                    routes.attach(&u.replica, &r.id, r.since_ms, now);
                }
            }
            cpb::RoutesOp::Detach => {
                for r in &u.routes {
                    routes.detach(&u.replica, &r.id, now);
                }
            }
            cpb::RoutesOp::Snapshot => {
                let all: Vec<(String, i64)> =
                    u.routes.into_iter().map(|r| (r.id, r.since_ms)).collect();
                routes.snapshot(&u.replica, &all, now);
            }
            cpb::RoutesOp::Heartbeat => routes.heartbeat(&u.replica, now),
            cpb::RoutesOp::Goodbye => routes.drop_replica(&u.replica),
            cpb::RoutesOp::Hello | cpb::RoutesOp::Unspecified => {}
        }
    }

    /// Asks `replica` to hand `msg` to `ids`; answers to whom it did, or `Err(ids)` when the
    /// replica did not answer.
    async fn deliver_there(
        &self,
        replica: &str,
        ids: Vec<String>,
        msg: &pb::SubscribeResponse,
    ) -> Result<Vec<String>, Vec<String>> {
        let req = cpb::DeliverRequest {
            ids,
            message: Some(msg.clone()),
        };
        let subject = self.nats.subject(&format!("deliver.{replica}"));
        match self
            .nats
            .request(subject, Bytes::from(req.encode_to_vec()), DELIVER_TIMEOUT)
            .await
            .and_then(|b| cpb::DeliverReply::decode(b).map_err(|e| e.to_string()))
        {
            Ok(reply) => Ok(reply.sent),
            Err(e) => {
                tracing::warn!(%replica, minions = req.ids.len(), "job not handed to the replica holding these minions: {e}");
                Err(req.ids)
            }
        }
    }
}

impl Delivery for ClusterDelivery {
    fn attach(&self, id: &str, tx: SubscriptionTx) -> u64 {
        let conn = self.local.attach(id, tx);
        let since_ms = now_ms();
        let me = self.me().to_owned();
        self.lock().attach(&me, id, since_ms, Instant::now());
        self.send(
            cpb::RoutesOp::Attach,
            vec![cpb::Route {
                id: id.to_owned(),
                since_ms,
            }],
        );
        conn
    }

    fn detach(&self, id: &str, conn_id: u64) {
        self.local.detach(id, conn_id);
        if !self.local.is_connected(id) {
            self.gone(id);
        }
    }

    fn close(&self, id: &str) -> bool {
        let closed = self.local.close(id);
        if closed {
            self.gone(id);
        }
        closed
    }

    fn deliver<'a>(
        &'a self,
        ids: &'a [String],
        msg: Arc<pb::SubscribeResponse>,
    ) -> BoxFuture<'a, Delivered> {
        Box::pin(async move {
            let split = self.lock().split(ids);
            let mut sent = self.local.deliver_here(&split.mine, &msg);
            let there = join_all(split.others.into_iter().map(|(replica, ids)| {
                let msg = msg.clone();
                async move { self.deliver_there(&replica, ids, &msg).await }
            }))
            .await;
            let mut unreachable = Vec::new();
            for r in there {
                match r {
                    Ok(s) => sent.extend(s),
                    Err(u) => unreachable.extend(u),
                }
            }
            // In the order asked for, as the local delivery answers.
            let order: std::collections::HashMap<&str, usize> = ids
                .iter()
                .enumerate()
                .map(|(i, id)| (id.as_str(), i))
                .collect();
            let key = |id: &String| order.get(id.as_str()).copied().unwrap_or(usize::MAX);
            sent.sort_by_key(key);
            unreachable.sort_by_key(key);
            Delivered { sent, unreachable }
        })
    }

    fn is_connected(&self, id: &str) -> bool {
        self.lock().holder(id).is_some()
    }

    fn connected(&self) -> Vec<String> {
        self.lock().connected()
    }

    fn connected_count(&self) -> usize {
        self.lock().connected_count()
    }
}
