//! salt-api's backend: each lowstate chunk runs through the master's own gRPC service code
//! (`JobApi`, `RunnerApi`) with the eauth user attached to the request as its
//! [`Caller`](crate::acl::Caller), so the job load's `user` is that user and the ACL is checked
//! in one place whichever door a request came through. Wheel calls go through the same
//! [`Acl::wheel`](crate::acl::Acl::wheel) check as the KeyService, then [`crate::wheel`].

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use saltq_netapi::backend::{Client, Low};
use saltq_netapi::{ApiError, Backend, Event, Identity};
use saltq_proto::v1::{
    self as pb, job_service_server::JobService, run_response::Kind,
    runner_service_server::RunnerService,
};
use saltq_semantics::batch::{Step, Walk};
use saltq_transport::value;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tonic::{Code, Request, Status};

use crate::acl::Caller;
use crate::service::jobs::JobApi;
use crate::service::runner::RunnerApi;
use crate::state::{Master, NO_MINIONS};

/// Events one `/events` reader may have waiting; past it, events are dropped for that reader.
const EVENT_QUEUE: usize = 1024;

/// The master as salt-api's backend.
pub struct NetapiBackend {
    master: Arc<Master>,
    /// Events dropped for slow `/events` readers.
    dropped: Arc<AtomicU64>,
}

impl NetapiBackend {
    /// Serves `master`.
    pub fn new(master: Arc<Master>) -> Self {
        NetapiBackend {
            master,
            dropped: Arc::default(),
        }
    }
}

fn caller(who: &Identity) -> Caller {
    Caller::Eauth {
        user: who.user.clone(),
        auth_type: who.auth_type.clone(),
        perms: who.perms.clone(),
    }
}

/// A request carrying `who`, as the in-process netapi makes them.
fn request<T>(who: &Identity, msg: T) -> Request<T> {
    let mut r = Request::new(msg);
    r.extensions_mut().insert(caller(who));
    r
}

/// The one place a service's status becomes salt-api's answer: refusals are 401 with Salt's
/// message, as rest_cherrypy answers them.
fn api_error(s: Status) -> ApiError {
    let message = s.message().to_owned();
    match s.code() {
        Code::PermissionDenied | Code::Unauthenticated => ApiError::unauthorized(message),
        Code::InvalidArgument | Code::NotFound | Code::OutOfRange => ApiError::bad_request(message),
        Code::Unavailable | Code::ResourceExhausted => ApiError::unavailable(message),
        _ => ApiError::internal(message),
    }
}

fn no_minions(s: &Status) -> bool {
    s.code() == Code::NotFound && s.message() == NO_MINIONS
}

fn publish_request(low: &Low) -> pb::PublishRequest {
    pb::PublishRequest {
        tgt: low.tgt.clone(),
        tgt_type: low.tgt_type.clone(),
        // A multi-function job: each function with its own argument list, every one checked
        // against the caller's ACL with its own arguments by `publish_for_client`.
        fun: if low.multi.is_empty() {
            vec![low.fun.clone()]
        } else {
            low.multi.clone()
        },
        arg: low.arg.iter().map(value::to_prost).collect(),
        kwarg: (!low.kwarg.is_empty()).then(|| value::map_to_struct(&low.kwarg)),
        ret: low.ret.clone(),
        ..Default::default()
    }
}

/// Salt's text for a minion that did not return to a synchronous `local` call.
fn did_not_return(jid: &str, why: &str) -> Value {
    json!(format!(
        "Minion did not return. [{why}]\nThe minions may not have all finished running and any \
         remaining minions will return upon completion. To look up the return data for this \
         job later, run the following command:\n\nsalt-run jobs.lookup_jid {jid}"
    ))
}

impl NetapiBackend {
    async fn local(&self, who: Identity, low: Low) -> Result<Value, ApiError> {
        let req = pb::RunRequest {
            publish: Some(publish_request(&low)),
            timeout: low.timeout.unwrap_or(0.0),
            gather_job_timeout: 0.0,
        };
        let api = JobApi::new(self.master.clone());
        let mut stream = match api.run(request(&who, req)).await {
            Ok(r) => r.into_inner(),
            Err(s) if no_minions(&s) && low.returned_only => {
                return Ok(json!(saltq_netapi::backend::NO_MINIONS_MATCHED));
            }
            Err(s) if no_minions(&s) => return Ok(json!({})),
            Err(s) => return Err(api_error(s)),
        };
        let mut out = Map::new();
        let mut jid = String::new();
        while let Some(item) = stream.next().await {
            match item.map_err(api_error)?.kind {
                Some(Kind::Published(p)) => {
                    jid = p.jid;
                    for id in p.missing.into_iter().filter(|_| !low.returned_only) {
                        out.insert(id, did_not_return(&jid, "No response"));
                    }
                }
                Some(Kind::MinionReturn(r)) => {
                    let ret = r
                        .r#return
                        .as_ref()
                        .map(value::from_prost)
                        .unwrap_or(Value::Null);
                    let v = if low.full_return {
                        json!({"jid": r.jid, "ret": ret, "retcode": r.retcode})
                    } else {
                        ret
                    };
                    out.insert(r.id, v);
                }
                Some(Kind::NoReturn(n)) => {
                    let why = match pb::NoReturnReason::try_from(n.reason) {
                        Ok(pb::NoReturnReason::NotConnected) => "Not connected",
                        _ => "No response",
                    };
                    if !low.returned_only {
                        out.insert(n.id, did_not_return(&jid, why));
                    }
                }
                Some(Kind::Finished(_)) => break,
                None => {}
            }
        }
        Ok(Value::Object(out))
    }

    /// Salt's `cmd_batch`: ping the target as the caller, then run the job over a sliding
    /// window of the minions that answered (`saltq_semantics::batch` decides), one job per
    /// sub-batch; the answer is `[{id: ret}, ...]` in the order the returns came.
    async fn local_batch(&self, who: Identity, low: Low) -> Result<Value, ApiError> {
        let b = low
            .batch
            .clone()
            .ok_or_else(|| ApiError::internal("a local_batch chunk without its batch settings"))?;
        let timeout = low.timeout.unwrap_or(0.0);
        let gather = b.gather_job_timeout.unwrap_or(0.0);
        let mut ping = publish_request(&low);
        ping.fun = vec!["test.ping".into()];
        ping.arg = vec![];
        ping.kwarg = None;
        ping.ret = String::new();
        let api = JobApi::new(self.master.clone());
        let req = pb::RunRequest {
            publish: Some(ping),
            timeout,
            gather_job_timeout: gather,
        };
        let mut stream = match api.run(request(&who, req)).await {
            Ok(r) => r.into_inner(),
            Err(s) if no_minions(&s) => return Ok(json!([])),
            Err(s) => return Err(api_error(s)),
        };
        let mut up = Vec::new();
        while let Some(item) = stream.next().await {
            match item.map_err(api_error)?.kind {
                Some(Kind::MinionReturn(r)) => up.push(r.id),
                Some(Kind::Finished(_)) => break,
                _ => {}
            }
        }
        up.sort();
        let window = b.size.window(up.len());
        let mut walk = Walk::new(up, window, Duration::from_secs_f64(b.wait), b.failhard);
        let begun = tokio::time::Instant::now();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut running = JoinSet::new();
        let mut out = Vec::new();
        loop {
            let started = walk.next(begun.elapsed());
            if !started.is_empty() {
                running.spawn(sub_batch(
                    self.master.clone(),
                    who.clone(),
                    low.clone(),
                    started,
                    gather,
                    tx.clone(),
                ));
            }
            if walk.done() {
                break;
            }
            let got = match walk.wake_at() {
                Some(at) => tokio::select! {
                    got = rx.recv() => got,
                    _ = tokio::time::sleep_until(begun + at) => continue,
                },
                None => rx.recv().await,
            };
            // Each sub-batch answers for every one of its minions, and `tx` is held here.
            let Some(got) = got else { break };
            let (id, ret, retcode) = got?;
            out.push(json!({ id.clone(): ret }));
            if walk.finished(&id, retcode > 0, begun.elapsed()) == Step::Stop {
                break;
            }
        }
        Ok(Value::Array(out))
    }

    async fn local_async(&self, who: Identity, low: Low) -> Result<Value, ApiError> {
        let api = JobApi::new(self.master.clone());
        match api.publish(request(&who, publish_request(&low))).await {
            Ok(r) => {
                let r = r.into_inner();
                Ok(json!({"jid": r.jid, "minions": r.minions}))
            }
            Err(s) if no_minions(&s) => Ok(json!({})),
            Err(s) => Err(api_error(s)),
        }
    }

    async fn runner(&self, who: Identity, low: Low, wait: bool) -> Result<Value, ApiError> {
        let api = RunnerApi::new(self.master.clone());
        let arg: Vec<prost_types::Value> = low.arg.iter().map(value::to_prost).collect();
        let kwarg = (!low.kwarg.is_empty()).then(|| value::map_to_struct(&low.kwarg));
        if wait {
            let r = api
                .run_runner(request(
                    &who,
                    pb::RunRunnerRequest {
                        fun: low.fun.clone(),
                        arg,
                        kwarg,
                    },
                ))
                .await
                .map_err(api_error)?
                .into_inner();
            let ret = r
                .r#return
                .as_ref()
                .map(value::from_prost)
                .unwrap_or(Value::Null);
            if !low.full_return {
                return Ok(ret);
            }
            // Salt's `cmd_sync(full_return=True)`: the runner's whole `ret` event.
            let mut fun_args = low.arg.clone();
            if !low.kwarg.is_empty() {
                fun_args.push(Value::Object(low.kwarg.clone()));
            }
            let tag = format!("salt/run/{}/ret", r.jid);
            Ok(
                json!({"data": {"fun": format!("runner.{}", low.fun), "fun_args": fun_args,
                               "jid": r.jid, "return": ret, "success": r.success,
                               "user": who.user, "_stamp": crate::events::stamp()},
                      "tag": tag}),
            )
        } else {
            let r = api
                .run_runner_async(request(
                    &who,
                    pb::RunRunnerAsyncRequest {
                        fun: low.fun,
                        arg,
                        kwarg,
                    },
                ))
                .await
                .map_err(api_error)?
                .into_inner();
            Ok(json!({"jid": r.jid, "tag": r.tag}))
        }
    }

    async fn wheel(&self, who: Identity, low: Low, wait: bool) -> Result<Value, ApiError> {
        if !low.fun.contains('.') {
            return Err(ApiError::unauthorized(
                "A command invocation error occurred: Check syntax.",
            ));
        }
        let call = crate::acl::CallArgs {
            arg: &low.arg,
            kwarg: (!low.kwarg.is_empty()).then_some(&low.kwarg),
        };
        self.master
            .cfg
            .acl
            .wheel(&caller(&who), &low.fun, call)
            .map_err(api_error)?;
        let jid = self
            .master
            .next_jid("")
            .await
            .map_err(api_error)?
            .to_string();
        let tag = format!("salt/wheel/{jid}");
        if !wait {
            let master = self.master.clone();
            let t = tag.clone();
            tokio::spawn(async move {
                crate::wheel::execute_as(&master, &who.user, &jid, &low.fun, low.arg, low.kwarg);
                drop(t);
            });
            return Ok(json!({"jid": tag.trim_start_matches("salt/wheel/"), "tag": tag}));
        }
        let mut data =
            crate::wheel::execute_as(&self.master, &who.user, &jid, &low.fun, low.arg, low.kwarg);
        if let Value::Object(m) = &mut data {
            m.remove("fun_args");
            m.insert("tag".into(), json!(tag));
            m.insert("_stamp".into(), json!(crate::events::stamp()));
        }
        Ok(json!({"data": data, "tag": tag}))
    }
}

/// One minion's answer in a batch: `(id, ret, retcode)`, or the refusal of the sub-batch.
type BatchReturn = Result<(String, Value, i32), ApiError>;

/// Runs one sub-batch of a `local_batch` chunk as one job on `ids`, as `who`, and sends an
/// answer for each of them: a minion that did not return answers `{}`, as in Salt's batch.
async fn sub_batch(
    master: Arc<Master>,
    who: Identity,
    low: Low,
    ids: Vec<String>,
    gather_job_timeout: f64,
    tx: mpsc::UnboundedSender<BatchReturn>,
) {
    let mut publish = publish_request(&low);
    publish.tgt = ids.join(",");
    publish.tgt_type = "list".into();
    let mut left: BTreeSet<String> = ids.into_iter().collect();
    let req = pb::RunRequest {
        publish: Some(publish),
        timeout: low.timeout.unwrap_or(0.0),
        gather_job_timeout,
    };
    let mut stream = match JobApi::new(master).run(request(&who, req)).await {
        Ok(r) => r.into_inner(),
        Err(s) => {
            let _ = tx.send(Err(api_error(s)));
            return;
        }
    };
    while let Some(item) = stream.next().await {
        match item {
            Err(s) => {
                let _ = tx.send(Err(api_error(s)));
                return;
            }
            Ok(m) => match m.kind {
                Some(Kind::MinionReturn(r)) if left.remove(&r.id) => {
                    let ret = r
                        .r#return
                        .as_ref()
                        .map(value::from_prost)
                        .unwrap_or(Value::Null);
                    let _ = tx.send(Ok((r.id, ret, r.retcode)));
                }
                Some(Kind::Finished(_)) => break,
                _ => {}
            },
        }
    }
    for id in left {
        let _ = tx.send(Ok((id, json!({}), 0)));
    }
}

/// Copies the bus into one `/events` reader's queue until the reader is gone. A full queue
/// (a slow reader) loses the event, counted in `dropped`: the bus and every other reader go on.
async fn forward(
    mut bus: crate::events::EventStream,
    tx: mpsc::Sender<Event>,
    dropped: Arc<AtomicU64>,
    events: crate::events::EventBus,
) {
    loop {
        tokio::select! {
            ev = bus.next() => match ev {
                Some(Ok(ev)) => {
                    let e = Event { tag: ev.tag.clone(), data: Value::Object(ev.data.clone()) };
                    match tx.try_send(e) {
                        Ok(()) => {}
                        Err(mpsc::error::TrySendError::Full(_)) => {
                            let n = dropped.fetch_add(1, Ordering::Relaxed) + 1;
                            if n.is_power_of_two() {
                                tracing::warn!("salt-api /events reader is slow: {n} events dropped for slow readers so far");
                            }
                        }
                        Err(mpsc::error::TrySendError::Closed(_)) => return,
                    }
                }
                Some(Err(crate::events::Missed(n))) => events.missed(n),
                None => return,
            },
            _ = tx.closed() => return,
        }
    }
}

impl Backend for NetapiBackend {
    fn run(&self, who: Identity, low: Low) -> BoxFuture<'static, Result<Value, ApiError>> {
        let this = NetapiBackend {
            master: self.master.clone(),
            dropped: self.dropped.clone(),
        };
        Box::pin(async move {
            match low.client {
                Client::Local => this.local(who, low).await,
                Client::LocalAsync => this.local_async(who, low).await,
                Client::LocalBatch => this.local_batch(who, low).await,
                Client::Runner => this.runner(who, low, true).await,
                Client::RunnerAsync => this.runner(who, low, false).await,
                Client::Wheel => this.wheel(who, low, true).await,
                Client::WheelAsync => this.wheel(who, low, false).await,
            }
        })
    }

    fn fire(&self, tag: String, data: Value) {
        self.master.events.fire(tag, data);
    }

    fn events(&self) -> mpsc::Receiver<Event> {
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        tokio::spawn(forward(
            self.master.events.subscribe(),
            tx,
            self.dropped.clone(),
            self.master.events.clone(),
        ));
        rx
    }

    fn may_run_runner(
        &self,
        who: &Identity,
        fun: &str,
        kwarg: &Map<String, Value>,
    ) -> Result<(), ApiError> {
        let call = crate::acl::CallArgs {
            arg: &[],
            kwarg: Some(kwarg),
        };
        self.master
            .cfg
            .acl
            .runner(&caller(who), fun, call)
            .map_err(api_error)
    }

    fn groups(&self, user: &str) -> Vec<String> {
        // `id -Gn` reads the system's group database (files, LDAP, ...) as the login does.
        match std::process::Command::new("id")
            .arg("-Gn")
            .arg("--")
            .arg(user)
            .output()
        {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
            _ => vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that never reads loses events once its queue is full; the bus is never
    /// waited on, and the forwarder ends when the reader goes.
    #[tokio::test]
    async fn a_slow_events_reader_loses_events_and_never_blocks() {
        let bus = crate::events::EventBus::new(8192, Arc::default());
        let (tx, mut rx) = mpsc::channel(4);
        let dropped = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn(forward(bus.subscribe(), tx, dropped.clone(), bus.clone()));
        for i in 0..10 {
            bus.fire(format!("t/{i}"), json!({"i": i}));
        }
        tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while dropped.load(Ordering::Relaxed) < 6 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("6 of 10 events dropped for a reader with room for 4");
        let first = rx.recv().await.unwrap();
        assert_eq!(first.tag, "t/0");
        assert_eq!(first.data["i"], 0);
        drop(rx);
        bus.fire("t/after", json!({}));
        tokio::time::timeout(std::time::Duration::from_secs(5), task)
            .await
            .expect("the forwarder ends when its reader is gone")
            .unwrap();
    }
}
