//! A lower master's link up to its top master (`syndic_master`), as Salt's syndic: one
//! subscription over the same mutual-TLS QUIC (or h2) dial as a minion's
//! (`saltq_transport::client`), with a minion key of its own (`pki_dir/syndic.key`, its
//! certificate naming this master's id) that the top master accepts as a key like any other.
//! Each job from above is republished here under the same jid, target unresolved, so this
//! master resolves it; the minions it was published to go up (`SyndicExpect`), and their
//! returns go up once stored here (`SyndicReturn`). In a cluster only the replica holding the
//! duties holds the link (`run` follows [`crate::duties::Leadership`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use saltq_proto::v1::{self as pb, syndic_service_client::SyndicServiceClient};
use saltq_transport::client::{Channel, ConnectOptions};
use saltq_transport::pki::{self, CertKey};
use saltq_transport::tls::ServerTrust;
use saltq_transport::value;
use tokio::sync::watch;

use crate::follow::Follower;
use crate::state::Master;

/// The syndic's key and certificate, in the master's `pki_dir`.
pub const KEY_FILE: &str = "syndic.key";
/// The syndic's self-signed certificate, naming the master's id.
pub const CERT_FILE: &str = "syndic.crt";
/// The top master's CA, pinned at the first contact (one file per top master,
/// `syndic_master_ca-<host>-<port>.crt`, for `syndic_failover` between independent tops).
fn pinned_ca_file(host: &str, port: u16) -> String {
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("syndic_master_ca-{host}-{port}.crt")
}

/// The longest pause between two attempts to reach the top master.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Returns sent up in one call, at most.
const RETURN_BATCH: usize = 500;
/// Events sent up in one call, at most.
const EVENT_BATCH: usize = 500;
/// How often the bus's events go up (Salt's `syndic_event_forward_timeout`, 0.5 s).
const EVENT_FORWARD_INTERVAL: Duration = Duration::from_millis(500);

type Client = SyndicServiceClient<Channel>;

/// Holds the link while this master holds the duties, until `shutdown`.
pub async fn run(
    master: Arc<Master>,
    leadership: Arc<dyn crate::duties::Leadership>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut lead = leadership.watch();
    loop {
        if *shutdown.borrow() {
            return;
        }
        if *lead.borrow_and_update() {
            tokio::select! {
                () = hold(master.clone()) => {}
                _ = lead.changed() => continue,
                _ = shutdown.changed() => return,
            }
        }
        tokio::select! {
            r = lead.changed() => if r.is_err() { return },
            _ = shutdown.changed() => return,
        }
    }
}

/// Holds the link up (reconnecting in `syndic_failover` order) and forwards events, for ever.
async fn hold(master: Arc<Master>) {
    let identity = match identity(&master) {
        Ok(i) => i,
        Err(e) => {
            tracing::error!("syndic link not started: {e:#}");
            return std::future::pending().await;
        }
    };
    if master.cfg.syndic.forward_all_events && master.cfg.syndic.masters.len() > 1 {
        // As Salt 3007.8's syndic, which declares the key and reads it nowhere.
        tracing::info!(
            "syndic_forward_all_events has no effect (as in Salt): events go to the top master linked"
        );
    }
    let up: Arc<watch::Sender<Option<Client>>> = Arc::new(watch::channel(None).0);
    tokio::select! {
        () = reconnect(&master, &identity, &up) => {}
        () = forward_events(master.clone(), up.subscribe()) => {}
    }
}

/// Connects and reconnects to the top masters, in `syndic_failover` order, for ever.
async fn reconnect(
    master: &Arc<Master>,
    identity: &CertKey,
    up: &Arc<watch::Sender<Option<Client>>>,
) {
    // Each top master's trust: its pinned CA, or trust on first use.
    let mut trusts: std::collections::HashMap<String, Arc<Mutex<ServerTrust>>> =
        std::collections::HashMap::new();
    let mut backoff = Duration::from_millis(250);
    let seed = std::process::id() as u64;
    loop {
        for top in master.cfg.syndic.try_order(seed) {
            let started = std::time::Instant::now();
            let (host, port) = match super::host_port(&top, master.cfg.syndic.port) {
                Ok(hp) => hp,
                Err(e) => {
                    tracing::error!("syndic_master {e}");
                    continue;
                }
            };
            let trust = trusts
                .entry(top.clone())
                .or_insert_with(|| Arc::new(Mutex::new(server_trust(master, &host, port))))
                .clone();
            match session(master, &host, port, identity, &trust, up).await {
                Ok(()) => tracing::warn!(top = %top, "syndic link to the top master closed"),
                Err(e) => tracing::warn!(top = %top, "syndic link failed: {e:#}"),
            }
            up.send_replace(None);
            if started.elapsed() > Duration::from_secs(10) {
                backoff = Duration::from_millis(250);
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

/// Forwards this master's bus events up as Salt's syndic does every
/// `syndic_event_forward_timeout` (0.5 s): those [`super::forwards_up`] lets through, in
/// batches, best effort (an event raised while no top master is linked is not kept).
async fn forward_events(master: Arc<Master>, up: watch::Receiver<Option<Client>>) {
    use futures_util::StreamExt;
    let mut events = master.events.subscribe();
    let mut batch: Vec<pb::SyndicEvent> = Vec::new();
    let mut tick = tokio::time::interval(EVENT_FORWARD_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let flush = tokio::select! {
            e = events.next() => match e {
                Some(Ok(ev)) => {
                    if super::forwards_up(&ev.tag, &ev.data) {
                        batch.push(pb::SyndicEvent {
                            tag: ev.tag.clone(),
                            data: Some(value::map_to_struct(&ev.data)),
                        });
                    }
                    batch.len() >= EVENT_BATCH
                }
                Some(Err(crate::events::Missed(n))) => {
                    master.events.missed(n);
                    tracing::warn!("the syndic's event forwarder missed {n} events");
                    false
                }
                None => return std::future::pending().await,
            },
            _ = tick.tick() => true,
        };
        if !flush || batch.is_empty() {
            continue;
        }
        let events = std::mem::take(&mut batch);
        let client = up.borrow().clone();
        let Some(mut c) = client else {
            tracing::debug!(
                n = events.len(),
                "no top master linked: events not forwarded"
            );
            continue;
        };
        let n = events.len();
        let sent = tokio::time::timeout(
            Duration::from_secs(5),
            c.syndic_events(pb::SyndicEventsRequest { events }),
        )
        .await;
        match sent {
            Ok(Ok(_)) => {}
            Ok(Err(s)) => {
                tracing::warn!(n, "events not forwarded to the top master: {}", s.message())
            }
            Err(_) => tracing::warn!(n, "events not forwarded to the top master: timed out"),
        }
    }
}

/// This master's syndic identity: made on first use, for the same key afterwards.
fn identity(master: &Master) -> anyhow::Result<CertKey> {
    let dir = &master.cfg.pki_dir;
    let (key_path, cert_path) = (dir.join(KEY_FILE), dir.join(CERT_FILE));
    if !key_path.exists() || !cert_path.exists() {
        let key = std::fs::read_to_string(&key_path).ok();
        let (cert, new_key) = pki::self_signed_minion(&master.cfg.id, key.as_deref())
            .context("cannot make the syndic's certificate")?;
        if key.is_none() {
            pki::write_private(&key_path, &new_key)?;
        }
        pki::write_public(&cert_path, &cert)?;
        tracing::info!(id = %master.cfg.id, "created the syndic key in {}", key_path.display());
    }
    CertKey::load(&cert_path, &key_path)
        .with_context(|| format!("cannot load the syndic key {}", key_path.display()))
}

/// The pinned CA of top master `host`:`port`, else trust on first use (with
/// `syndic_finger` when set).
fn server_trust(master: &Master, host: &str, port: u16) -> ServerTrust {
    let pinned = master.cfg.pki_dir.join(pinned_ca_file(host, port));
    match pki::load_certs(&pinned) {
        Ok(cas) if !cas.is_empty() => ServerTrust::Ca(cas),
        _ => ServerTrust::FirstUse {
            master_finger: master.cfg.syndic.finger.clone(),
            pinned: Arc::new(Mutex::new(None)),
        },
    }
}

/// Pins the CA top master `host`:`port` presented at the first successful contact.
fn pin(master: &Master, host: &str, port: u16, trust: &Mutex<ServerTrust>) -> anyhow::Result<()> {
    let mut t = trust.lock().unwrap_or_else(|e| e.into_inner());
    let ServerTrust::FirstUse { pinned, .. } = &*t else {
        return Ok(());
    };
    let Some(ca) = pinned.lock().ok().and_then(|p| p.clone()) else {
        return Ok(());
    };
    let path = master.cfg.pki_dir.join(pinned_ca_file(host, port));
    pki::write_public(&path, &pki::cert_to_pem(&ca))?;
    tracing::info!("pinned the top master's CA in {}", path.display());
    *t = ServerTrust::Ca(vec![ca]);
    Ok(())
}

/// One connection to top master `top`:`port`: subscribes, then republishes each job it is
/// sent.
async fn session(
    master: &Arc<Master>,
    top: &str,
    port: u16,
    identity: &CertKey,
    trust: &Mutex<ServerTrust>,
    up: &Arc<watch::Sender<Option<Client>>>,
) -> anyhow::Result<()> {
    let opts = ConnectOptions {
        ipv6: None,
        host: top.to_owned(),
        port,
        transport: saltq_transport::client::TransportKind::Quic,
        identity: identity.clone(),
        trust: trust.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        limits: master.cfg.limits.clone(),
        connect_timeout: saltq_transport::client::CONNECT_TIMEOUT,
        reuse: None,
    };
    let ch = saltq_transport::client::connect(&opts).await?;
    let max = master.cfg.limits.max_message_size;
    let mut client = SyndicServiceClient::new(ch.clone())
        .max_decoding_message_size(max)
        .max_encoding_message_size(max);
    let req = pb::SyndicSubscribeRequest {
        version: env!("CARGO_PKG_VERSION").into(),
    };
    let mut stream = client
        .syndic_subscribe(req)
        .await
        .map_err(|s| ch.failure(&s))?
        .into_inner();
    pin(master, top, port, trust)?;
    up.send_replace(Some(client));
    while let Some(msg) = stream.message().await.map_err(|s| ch.failure(&s))? {
        match msg.kind {
            Some(pb::syndic_subscribe_response::Kind::MasterId(id)) => {
                tracing::info!(top = %id, "syndic subscribed to the top master");
            }
            Some(pb::syndic_subscribe_response::Kind::Job(job)) => {
                tokio::spawn(republish(master.clone(), job, up.subscribe()));
            }
            None => {}
        }
    }
    Ok(())
}

/// The publish request of a load from above: same jid, target as given.
pub fn publish_request(load: pb::JobLoad) -> pb::PublishRequest {
    pb::PublishRequest {
        tgt: load.tgt,
        tgt_type: load.tgt_type,
        fun: load.fun,
        arg: load.arg,
        kwarg: load.kwarg,
        ret: load.ret,
        jid: load.jid,
        metadata: load.metadata,
        delimiter: load.delimiter,
        ret_config: load.ret_config,
        ret_kwargs: load.ret_kwargs,
    }
}

/// How long this master waits for its minions before asking them `saltutil.find_job`: the
/// top's timeout (Salt's `to`), bounded, 5 s when unset. Following the job as the salt
/// command does keeps its returns going up for as long as a minion still runs it.
pub fn follow_timeout(top_timeout: f64) -> Duration {
    if top_timeout.is_finite() && top_timeout > 0.0 {
        Duration::from_secs_f64(top_timeout.min(86400.0))
    } else {
        Duration::from_secs(5)
    }
}

/// Republishes a job from above to this master's minions and forwards what it learns up.
async fn republish(master: Arc<Master>, job: pb::SyndicJob, up: watch::Receiver<Option<Client>>) {
    let Some(load) = job.load else {
        return;
    };
    let (jid, user) = (load.jid.clone(), load.user.clone());
    let timeout = follow_timeout(job.timeout);
    let published = match master.validate(publish_request(load)) {
        Ok((mut spec, target)) => {
            // A syndic of a syndic hands the top's timeout further down.
            spec.timeout = Some(timeout);
            master.publish(spec, &target, &user).await
        }
        Err(e) => Err(e),
    };
    let expect = |minions: Vec<String>, missing: Vec<String>| pb::SyndicExpectRequest {
        jid: jid.clone(),
        minions,
        missing,
    };
    let published = match published {
        Ok(p) => p,
        Err(e) => {
            if e.code() != tonic::Code::NotFound {
                tracing::warn!(%jid, "job from the top master not republished: {}", e.message());
            }
            send_up(&up, Up::Expect(expect(vec![], vec![])), &jid).await;
            return;
        }
    };
    let req = expect(
        published.resp.minions.clone(),
        published.resp.missing.clone(),
    );
    send_up(&up, Up::Expect(req), &jid).await;
    let gather = master.cfg.gather_job_timeout;
    let mut follower = Follower::new(master.clone(), published, &user, timeout, gather);
    while let Some(first) = follower.next().await {
        let mut batch = vec![first];
        while batch.len() < RETURN_BATCH {
            match tokio::time::timeout(Duration::from_millis(20), follower.next()).await {
                Ok(Some(r)) => batch.push(r),
                _ => break,
            }
        }
        let returns = batch.iter().map(|r| minion_return(r)).collect();
        send_up(&up, Up::Returns(pb::SyndicReturnRequest { returns }), &jid).await;
    }
}

/// A stored return as it goes up.
fn minion_return(r: &pb::JobReturn) -> pb::SyndicMinionReturn {
    pb::SyndicMinionReturn {
        minion_id: r.id.clone(),
        r#return: Some(pb::ReturnRequest {
            jid: r.jid.clone(),
            fun: r.fun.clone(),
            fun_args: r.fun_args.clone(),
            r#return: r.r#return.clone(),
            retcode: r.retcode,
            success: r.success,
            out: r.out.clone(),
            metadata: r.metadata.clone(),
        }),
    }
}

/// What goes up.
enum Up {
    Expect(pb::SyndicExpectRequest),
    Returns(pb::SyndicReturnRequest),
}

/// Sends `msg` to the top master over the current link, retrying across reconnects for a
/// while (Salt's syndic keeps undelivered returns as `delayed` and sends them later).
async fn send_up(up: &watch::Receiver<Option<Client>>, msg: Up, jid: &str) {
    let mut up = up.clone();
    for attempt in 0..60 {
        let client = up.borrow_and_update().clone();
        let Some(mut c) = client else {
            let _ = tokio::time::timeout(Duration::from_secs(1), up.changed()).await;
            continue;
        };
        let sent = match &msg {
            Up::Expect(r) => c.syndic_expect(r.clone()).await.map(|_| ()),
            Up::Returns(r) => c.syndic_return(r.clone()).await.map(|_| ()),
        };
        match sent {
            Ok(()) => return,
            Err(s) if s.code() == tonic::Code::PermissionDenied => {
                tracing::warn!(%jid, "the top master refused what the syndic sent: {}", s.message());
                return;
            }
            Err(s) => {
                tracing::debug!(%jid, attempt, "sending up failed: {}", s.message());
                let _ = tokio::time::timeout(Duration::from_secs(1), up.changed()).await;
            }
        }
    }
    tracing::warn!(%jid, "gave up sending to the top master after 60 attempts");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_republished_request_keeps_jid_and_target() {
        let load = pb::JobLoad {
            jid: "20260101000000000001".into(),
            tgt: "G@os:Debian and web*".into(),
            tgt_type: "compound".into(),
            fun: vec!["test.ping".into()],
            user: "root".into(),
            ..Default::default()
        };
        let r = publish_request(load);
        assert_eq!(r.jid, "20260101000000000001");
        assert_eq!(
            (r.tgt.as_str(), r.tgt_type.as_str()),
            ("G@os:Debian and web*", "compound")
        );
        assert_eq!(r.fun, vec!["test.ping"]);
    }

    #[test]
    fn follow_timeout_is_bounded_and_has_a_default() {
        assert_eq!(follow_timeout(7.0), Duration::from_secs(7));
        assert_eq!(follow_timeout(0.0), Duration::from_secs(5));
        assert_eq!(follow_timeout(f64::NAN), Duration::from_secs(5));
        assert_eq!(follow_timeout(1e12), Duration::from_secs(86400));
    }
}
