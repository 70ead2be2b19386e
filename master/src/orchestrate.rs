//! Orchestration: state runs on the master, as Salt's orchestrate runner does them with its
//! "master minion". The run is the states crate's own `state.sls` (the same compiler,
//! requisites and state modules as on a minion), in a call context built here: the master's
//! id, grains and pillar, `salt://` from the master's own `file_roots`, and a
//! [`MasterClient`] through which the `salt.*` states publish jobs on the master's job path
//! (recorded as the caller's, followed with `find_job` as `JobService.Run` follows them) and
//! run runners and wheel functions. The states crate knows nothing of the master: it only
//! sees the trait.

use std::sync::Arc;
use std::time::Duration;

use saltq_exec::{CallContext, EventSink, MasterClient, MasterFuture, MasterJob, PubInfo};
use saltq_proto::v1 as pb;
use saltq_transport::value;
use serde_json::{Map, Value, json};

use crate::follow::Follower;
use crate::state::Master;

/// The master's side of one orchestration: who runs it and under which jid.
pub struct OrchClient {
    master: Arc<Master>,
    /// The caller: the jobs, runners and wheel calls of the run are recorded as theirs.
    user: String,
    /// The orchestration's jid (the runner's own), Salt's `__orchestration_jid__`.
    jid: String,
}

/// Events fired by states on the master (`event.send`) go straight to the master's bus.
struct MasterEvents(Arc<Master>);

impl EventSink for MasterEvents {
    fn send(&self, tag: &str, data: Value) {
        self.0.events.fire(tag.to_owned(), data);
    }
}

/// The publish request of a master-side job.
fn publish_request(job: &MasterJob) -> pb::PublishRequest {
    let tgt = match &job.tgt {
        Value::Array(ids) => ids
            .iter()
            .map(saltq_semantics::python::str)
            .collect::<Vec<_>>()
            .join(","),
        Value::String(s) => s.clone(),
        other => saltq_semantics::python::str(other),
    };
    pb::PublishRequest {
        tgt,
        tgt_type: job.tgt_type.clone(),
        fun: vec![job.fun.clone()],
        arg: job.arg.iter().map(value::to_prost).collect(),
        kwarg: (!job.kwarg.is_empty()).then(|| value::map_to_struct(&job.kwarg)),
        ret: job.ret.clone(),
        ..Default::default()
    }
}

/// Publishes `job` as `user` and gathers the returns as Salt's `saltutil.cmd` shapes them.
pub async fn cmd(
    master: Arc<Master>,
    user: &str,
    job: MasterJob,
) -> Result<Map<String, Value>, String> {
    let (spec, target) = master
        .validate(publish_request(&job))
        .map_err(|s| s.message().to_owned())?;
    let published = match master.publish(spec, &target, user).await {
        Ok(p) => p,
        Err(s) if s.code() == tonic::Code::NotFound => return Ok(Map::new()),
        Err(s) => return Err(s.message().to_owned()),
    };
    let missing = published.resp.missing.clone();
    let timeout = job
        .timeout
        .filter(|t| t.is_finite() && *t > 0.0)
        .map_or(master.cfg.timeout, Duration::from_secs_f64);
    let gather = master.cfg.gather_job_timeout;
    let mut follower = Follower::new(master.clone(), published, user, timeout, gather);
    let mut out = Map::new();
    while let Some(r) = follower.next().await {
        let ret = r
            .r#return
            .as_ref()
            .map(value::from_prost)
            .unwrap_or(Value::Null);
        let mut m = Map::new();
        m.insert("ret".into(), ret);
        if !r.out.is_empty() {
            m.insert("out".into(), json!(r.out));
        }
        m.insert("retcode".into(), json!(r.retcode));
        m.insert("jid".into(), json!(r.jid));
        out.insert(r.id.clone(), Value::Object(m));
    }
    for (id, _) in follower.finish().silent {
        if job.expect_minions || missing.contains(&id) {
            out.insert(id, json!({"failed": true}));
        }
    }
    Ok(out)
}

impl MasterClient for OrchClient {
    fn cmd(&self, job: MasterJob) -> MasterFuture<Map<String, Value>> {
        let (master, user) = (self.master.clone(), self.user.clone());
        Box::pin(async move { cmd(master, &user, job).await })
    }

    fn runner(
        &self,
        fun: &str,
        args: Vec<Value>,
        kwargs: Map<String, Value>,
    ) -> MasterFuture<Value> {
        let (master, user, fun) = (self.master.clone(), self.user.clone(), fun.to_owned());
        Box::pin(async move {
            let jid = master
                .next_jid("")
                .await
                .map_err(|s| s.message().to_owned())?
                .to_string();
            let mut fun_args = args.clone();
            if !kwargs.is_empty() {
                fun_args.push(Value::Object(kwargs.clone()));
            }
            let out = crate::runners::execute(
                master,
                user.clone(),
                jid.clone(),
                fun.clone(),
                args,
                kwargs,
            )
            .await;
            Ok(
                json!({"fun": format!("runner.{fun}"), "fun_args": fun_args, "jid": jid,
                      "return": out.ret, "success": out.success, "user": user}),
            )
        })
    }

    fn wheel(
        &self,
        fun: &str,
        args: Vec<Value>,
        kwargs: Map<String, Value>,
    ) -> MasterFuture<Value> {
        let (master, user, fun) = (self.master.clone(), self.user.clone(), fun.to_owned());
        Box::pin(async move { crate::wheel::execute(&master, &user, &fun, args, kwargs).await })
    }

    fn fire(&self, tag: &str, data: Value) {
        self.master.events.fire(tag.to_owned(), data);
    }

    fn subscribe(&self) -> tokio::sync::mpsc::Receiver<(String, Value)> {
        use futures_util::StreamExt;
        let (tx, rx) = tokio::sync::mpsc::channel(256);
        let mut bus = self.master.events.subscribe();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    e = bus.next() => match e {
                        Some(Ok(e)) => {
                            if tx.send((e.tag.clone(), Value::Object(e.data.clone()))).await.is_err() {
                                return;
                            }
                        }
                        Some(Err(_)) => continue,
                        None => return,
                    },
                    () = tx.closed() => return,
                }
            }
        });
        rx
    }

    fn orchestration_jid(&self) -> String {
        self.jid.clone()
    }
}

/// The call context of a state run on the master: its id, grains and pillar (Salt's master
/// minion), `salt://` from its `file_roots`, the state engine, and the master client.
pub async fn context(master: &Arc<Master>, user: &str, jid: &str) -> Result<CallContext, String> {
    let id = master.cfg.id.clone();
    let grains = {
        let id = id.clone();
        tokio::task::spawn_blocking(move || saltq_exec::compute_grains(&id, None))
            .await
            .map_err(|e| format!("computing the master's grains failed: {e}"))?
    };
    let pillar = {
        let (roots, id, grains) = (master.cfg.pillar.clone(), id.clone(), grains.clone());
        tokio::task::spawn_blocking(move || crate::pillar::compile(&roots, &id, &grains))
            .await
            .map_err(|e| format!("pillar compilation failed: {e}"))?
    };
    let pillar = match pillar {
        Ok(p) => p,
        // Salt's state run refuses with these messages (pillar `_errors`).
        Err(e) => json!({"_errors": [e.to_string()]}),
    };
    let cachedir = master.cfg.cachedir.join("master_minion");
    let opts = json!({
        "id": id,
        "cachedir": cachedir,
        "file_client": "local",
        "hash_type": master.cfg.hash_type,
        "nodegroups": master.cfg.nodegroups,
        "__role": "master",
    });
    let files = saltq_fileserver::LocalFiles {
        roots: master.cfg.fileserver.clone(),
        cachedir,
        hash_type: master.cfg.hash_type.clone(),
    };
    let client = OrchClient {
        master: master.clone(),
        user: user.to_owned(),
        jid: jid.to_owned(),
    };
    let ctx = CallContext::local(grains, opts)
        .with_files(Arc::new(files))
        .with_states(Arc::new(saltq_states::Engine::new()))
        .with_events(Arc::new(MasterEvents(master.clone())))
        .with_master(Arc::new(client))
        .with_mine(Arc::new(crate::mine::MasterMine {
            master: master.clone(),
            id: id.clone(),
        }));
    *ctx.pillar.write().unwrap_or_else(|e| e.into_inner()) = pillar;
    Ok(ctx)
}

/// Runs the state function `fun` (`state.sls`, `state.single`, ...) on the master as the
/// orchestration `jid` of `user`; the state run's answer (its result dict, or a list of
/// errors).
pub async fn run_state(
    master: &Arc<Master>,
    user: &str,
    jid: &str,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
) -> Result<Value, String> {
    let ctx = context(master, user, jid).await?;
    let publ = PubInfo {
        jid: jid.to_owned(),
        tgt: json!(master.cfg.id),
        tgt_type: "glob".into(),
        user: user.to_owned(),
        arg: args.clone(),
        ..Default::default()
    };
    Ok(saltq_exec::call(&ctx, fun, args, kwargs, &publ).await.ret)
}

/// The orchestrate runner's answer for a run's result: Salt's
/// `{"data": {<master id>: result}, "outputter": "highstate", "retcode": 0|1}`.
pub fn runner_return(master_id: &str, running: Value) -> Value {
    let mut data = Map::new();
    data.insert(master_id.to_owned(), running);
    let data = Value::Object(data);
    let retcode = if saltq_states::run::check_result(&data, false) {
        0
    } else {
        1
    };
    json!({"data": data, "outputter": "highstate", "retcode": retcode})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_return_sets_salts_retcode() {
        let ok = json!({"t_|-a_|-a_|-s": {"result": true, "changes": {}}});
        assert_eq!(runner_return("m_master", ok)["retcode"], json!(0));
        let bad = json!({"t_|-a_|-a_|-s": {"result": false, "changes": {}}});
        let r = runner_return("m_master", bad.clone());
        assert_eq!(r["retcode"], json!(1));
        assert_eq!(r["data"]["m_master"], bad);
        assert_eq!(r["outputter"], json!("highstate"));
        // Compile errors (a list) and an empty run are failures too.
        assert_eq!(runner_return("m", json!(["error"]))["retcode"], json!(1));
        assert_eq!(runner_return("m", json!({}))["retcode"], json!(1));
    }

    #[test]
    fn list_targets_publish_as_comma_separated_ids() {
        let job = MasterJob {
            tgt: json!(["db1", "web1"]),
            tgt_type: "list".into(),
            fun: "test.echo".into(),
            arg: vec![json!("hi")],
            kwarg: Map::new(),
            ret: String::new(),
            timeout: None,
            expect_minions: false,
        };
        let req = publish_request(&job);
        assert_eq!(req.tgt, "db1,web1");
        assert!(req.kwarg.is_none());
        assert_eq!(req.fun, vec!["test.echo".to_owned()]);
    }
}
