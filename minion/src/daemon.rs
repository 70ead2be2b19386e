//! The minion's main loop: dial the master, hold the subscription, run each job in its own task,
//! and hand results to the outbox, which re-sends them until the master acknowledges them.
//!
//! A thin driver: when to dial, which master, when to back off or wait for key acceptance is
//! decided by the pure state machine in `link.rs` (`Disconnected` → `Connecting` →
//! `Subscribed`); this loop only carries out its actions and selects over one closed
//! `enum Event`. Every way out (whatever the link state) goes through one exit that kills
//! running jobs and closes the connection. The outbox lives beside the loop, not in a
//! connection: unacknowledged returns go to whichever master the minion reaches next.
//!
//! With several masters at once (Salt's multi-master, `multi.rs`) [`run_with`] starts one
//! `Driver` per master, each with its own link, trust, pillar and outbox, over one job table.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use saltq_exec::{CallContext, EventSink, PubInfo};
use saltq_proto::v1::{
    self as pb, minion_service_client::MinionServiceClient, subscribe_response::Kind,
};
use saltq_semantics::target::{MinionFacts, Nodegroups, Target, TargetType};
use saltq_transport::client::FailureKind;
use saltq_transport::{
    Channel, ConnectError, ConnectOptions, KEY_STATE_HEADER, connect_via, value,
};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, watch};
use tonic::{Code, Status, Streaming};

use crate::backoff::Backoff;
use crate::config::{MasterAddr, MasterType, MinionConfig};
use crate::identity;
use crate::jobs::{Jobs, Refresh};
use crate::link::{Action, Input, KeyState, Link};
use crate::multi;
use crate::reaper::Reaper;
use crate::renewal::{self, Held};

type Client = MinionServiceClient<Channel>;

fn client(ch: Channel, cfg: &MinionConfig) -> Client {
    MinionServiceClient::new(ch)
        .max_decoding_message_size(cfg.limits.max_message_size)
        .max_encoding_message_size(cfg.limits.max_message_size)
}

/// Sends minion events (`event.send`, `event.fire_master`) to the masters' buses: to every
/// master connected now, as Salt's minion instances each forward a `fire_master` from the
/// minion's bus to their own master (a master not connected misses it).
struct MasterEvents {
    /// Each instance's subscribed connection (one without several masters).
    chans: Vec<watch::Receiver<Option<Channel>>>,
    cfg: Arc<MinionConfig>,
}

impl EventSink for MasterEvents {
    fn send(&self, tag: &str, data: Value) {
        let connected: Vec<Channel> = self
            .chans
            .iter()
            .filter_map(|c| c.borrow().clone())
            .collect();
        if connected.is_empty() {
            tracing::warn!(%tag, "not connected to the master, event dropped");
            return;
        }
        let req = pb::SendEventRequest {
            tag: tag.to_owned(),
            data: Some(value::json_to_struct(&data)),
        };
        for ch in connected {
            let mut c = client(ch, &self.cfg);
            let req = req.clone();
            tokio::spawn(async move {
                if let Err(e) = c.send_event(req).await {
                    tracing::warn!("event not delivered: {}", e.message());
                }
            });
        }
    }
}

/// What several minions in one process may share (a swarm); a lone minion shares nothing.
#[derive(Clone, Default)]
pub struct Shared {
    /// One UDP socket for every QUIC connection.
    pub endpoint: Option<saltq_transport::QuicEndpoint>,
    /// Grains computed once; each minion's id is set on its copy.
    pub grains: Option<Value>,
    /// The reaper that kills the jobs' commands if this process dies without doing it.
    pub reaper: Option<Arc<Reaper>>,
}

/// Fetches `file_roots/_<kind>` from the master for `saltutil.sync_*`.
struct MasterFiles {
    chan: watch::Receiver<Option<Channel>>,
    cfg: Arc<MinionConfig>,
}

impl saltq_exec::ModuleSource for MasterFiles {
    fn fetch(&self, kind: &str) -> saltq_exec::FetchFuture {
        let ch = self.chan.borrow().clone();
        let cfg = self.cfg.clone();
        let kind = kind.to_owned();
        Box::pin(async move {
            let ch = ch.ok_or("not connected to the master")?;
            let mut c = client(ch.clone(), &cfg);
            let resp = c
                .sync_files(pb::SyncFilesRequest { kind })
                .await
                .map_err(|s| ch.failure(&s).to_string())?;
            Ok(resp
                .into_inner()
                .files
                .into_iter()
                .map(|f| saltq_exec::SyncedFile {
                    name: f.name,
                    contents: f.contents,
                    executable: f.executable,
                })
                .collect())
        })
    }
}

/// Runs the minion until `shutdown` turns true.
pub async fn run(cfg: MinionConfig, shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
    let shared = Shared {
        reaper: start_reaper(),
        ..Shared::default()
    };
    run_with(cfg, shutdown, shared).await
}

/// Starts this process's reaper, or says what a failure means and goes on without one.
pub fn start_reaper() -> Option<Arc<Reaper>> {
    match Reaper::start() {
        Ok(r) => Some(Arc::new(r)),
        Err(e) => {
            tracing::warn!(
                error = %e,
                "cannot start the reaper process: jobs' commands will outlive this minion if \
                 it is killed (SIGKILL) or crashes"
            );
            None
        }
    }
}

/// Runs the minion with resources shared with other minions in this process: set up its
/// identity, then one minion instance per master linked at once (one, unless several masters
/// with `master_type: str`), serve the health port, and drive the links until shutdown.
pub async fn run_with(
    cfg: MinionConfig,
    shutdown: watch::Receiver<bool>,
    mut shared: Shared,
) -> anyhow::Result<()> {
    let cfg = Arc::new(cfg);
    // The key is made once, before any instance dials: they all present it.
    let ident = load_identity(&cfg).await?;
    let held = identity::held(&ident)?;
    if expired_at_start(held, unix_now()) {
        tracing::warn!(
            "the minion certificate {} expired at {}: the master will refuse it",
            cfg.pki_dir.join(identity::CERT_FILE).display(),
            saltq_transport::pki::format_time(held.validity.not_after)
        );
    }
    let plan = multi::plan(
        &cfg.masters,
        cfg.master_type,
        cfg.master_finger.as_deref(),
        &cfg.master_finger_each,
    );
    if plan.len() > 1 && shared.grains.is_none() {
        // The grains are the host's: computed once for every instance.
        shared.grains = Some(cfg.compute_grains());
        tracing::info!(
            "linking to {} masters at once: {}",
            plan.len(),
            plan.iter().map(multi::label).collect::<Vec<_>>().join(", ")
        );
    }
    let wiring = Wiring::new(plan.len());
    // One minion's jobs, whichever master sent them, keyed by (master, jid).
    let table = Arc::new(crate::jobs::Table::default());
    let mut drivers = Vec::with_capacity(plan.len());
    for (inst, refresh_rx) in plan.iter().zip(wiring.refresh_rx) {
        let icfg = Arc::new(instance_config(&cfg, inst));
        let for_trust = icfg.clone();
        let trust =
            tokio::task::spawn_blocking(move || identity::server_trust(&for_trust)).await??;
        let calls = Calls::start(&icfg, &shared, &table, &wiring.links, inst.index);
        let renews = plan.len() == 1;
        let driver = Driver::new(icfg, &shared, ident.clone(), trust, held, calls, renews);
        drivers.push((multi::label(inst), driver, refresh_rx));
    }
    if let Some(addr) = cfg.health {
        let subscribed = wiring.links.iter().map(|l| l.chan_tx.subscribe()).collect();
        serve_health(&cfg, addr, subscribed, &shutdown).await?;
    }
    if drivers.len() == 1 {
        let (_, driver, refresh_rx) = drivers.remove(0);
        return driver.run(shutdown, refresh_rx).await;
    }
    let mut set = tokio::task::JoinSet::new();
    for (label, driver, refresh_rx) in drivers {
        let span = tracing::info_span!("master", at = %label);
        set.spawn(tracing::Instrument::instrument(
            driver.run(shutdown.clone(), refresh_rx),
            span,
        ));
    }
    let mut first_err = None;
    while let Some(done) = set.join_next().await {
        if let Err(e) = done.map_err(anyhow::Error::from).and_then(|r| r) {
            first_err.get_or_insert(e);
        }
    }
    first_err.map_or(Ok(()), Err)
}

/// The config one instance runs with: the process's, linked to the instance's masters and
/// trusting as the instance says.
fn instance_config(cfg: &MinionConfig, inst: &multi::Instance) -> MinionConfig {
    let mut c = cfg.clone();
    c.masters = inst.masters.clone();
    c.master_finger = inst.master_finger.clone();
    c.master_finger_each = vec![];
    c.pinned_ca_name = inst.pinned_ca_name.clone();
    c
}

/// Each instance's connection and refresh channels, made before any instance: an instance's
/// events and refresh requests go to every instance.
struct Wiring {
    links: Vec<Ends>,
    refresh_rx: Vec<mpsc::UnboundedReceiver<Refresh>>,
}

/// One instance's ends of the channels others reach it by.
struct Ends {
    /// Its subscribed connection (`None` when not subscribed).
    chan_tx: watch::Sender<Option<Channel>>,
    /// Where refresh requests for it go.
    refresh_tx: mpsc::UnboundedSender<Refresh>,
}

impl Wiring {
    fn new(n: usize) -> Wiring {
        let mut links = Vec::with_capacity(n);
        let mut refresh_rx = Vec::with_capacity(n);
        for _ in 0..n {
            let (refresh_tx, rx) = mpsc::unbounded_channel();
            let (chan_tx, _) = watch::channel::<Option<Channel>>(None);
            links.push(Ends {
                chan_tx,
                refresh_tx,
            });
            refresh_rx.push(rx);
        }
        Wiring { links, refresh_rx }
    }
}

/// The minion's key and certificate (created if missing). Creating a key writes and syncs
/// files: off the async workers, which a swarm shares between thousands of minions.
async fn load_identity(cfg: &Arc<MinionConfig>) -> anyhow::Result<saltq_transport::pki::CertKey> {
    let cfg = cfg.clone();
    tokio::task::spawn_blocking(move || identity::ensure_identity(&cfg)).await?
}

/// Whether the certificate held at start is a CA-issued one already expired at `now` (a
/// self-signed one is the key-acceptance path: the master takes it whatever its dates).
fn expired_at_start(held: Held, now: i64) -> bool {
    !held.self_signed && held.validity.expired_at(now)
}

/// Whether a failed dial is the master refusing our expired CA-issued certificate, which
/// the minion explains (no renewal came in time).
fn refused_as_expired(kind: &FailureKind, held: Held, now: i64) -> bool {
    *kind == FailureKind::CertificateRejected && expired_at_start(held, now)
}

/// When to ask for a certificate after a `Welcome`: never when the master issues none.
fn renewal_on_welcome(issues_certificates: bool, held: Held, now: i64) -> Option<Duration> {
    issues_certificates.then(|| renewal::next_request(held, now))
}

/// The masters in the order the link tries them: shuffled once at start with
/// `random_master` (so a fleet spreads over replicas), logged with failover.
fn masters_in_order(cfg: &MinionConfig) -> Vec<MasterAddr> {
    let mut masters = cfg.masters.clone();
    if cfg.random_master {
        rand::seq::SliceRandom::shuffle(masters.as_mut_slice(), &mut rand::rng());
    }
    if cfg.master_type == MasterType::Failover {
        let list: Vec<String> = masters.iter().map(ToString::to_string).collect();
        tracing::info!("master_type failover: masters in order {}", list.join(", "));
    }
    masters
}

/// The health port's answer to `path`, `up` when subscribed to a master (to one at least,
/// with several at once).
fn health_reply(path: &str, up: bool) -> (u16, &'static str, String) {
    match (path, up) {
        ("/healthz", true) => (200, "text/plain", "subscribed\n".to_owned()),
        ("/healthz", false) => (
            503,
            "text/plain",
            "not subscribed to the master\n".to_owned(),
        ),
        _ => (404, "text/plain", "not found: try /healthz\n".to_owned()),
    }
}

/// Serves `/healthz` on `health_port`: 200 while subscribed, 503 otherwise.
async fn serve_health(
    cfg: &MinionConfig,
    addr: std::net::SocketAddr,
    subscribed: Vec<watch::Receiver<Option<Channel>>>,
    shutdown: &watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        anyhow::anyhow!(
            "{}: key health_port: cannot listen on tcp {addr}: {e}",
            cfg.file.display()
        )
    })?;
    tokio::spawn(saltq_transport::http::serve(
        listener,
        move |req: saltq_transport::http::Request| {
            let up = subscribed.iter().any(|s| s.borrow().is_some());
            async move { health_reply(&req.path, up) }
        },
        shutdown.clone(),
    ));
    Ok(())
}

/// What jobs run with: the grains, the pillar, the running jobs, the connection they talk
/// to the master on, and the outbox their returns go to.
struct Calls {
    /// The pillar the master sends at each `Welcome`.
    pillar: Arc<RwLock<Value>>,
    /// Running jobs (for `saltutil.*` and `find_job`).
    jobs: Arc<Jobs>,
    /// The subscribed connection, for the outbox and the execution modules; `None` when
    /// not subscribed.
    chan_tx: watch::Sender<Option<Channel>>,
    /// The execution context every job starts from.
    ctx: CallContext,
    /// The outbox.
    ret_tx: mpsc::UnboundedSender<Outgoing>,
    /// Told when the master first welcomes the minion: the schedule's start-up `mine.update`
    /// waits for it (`mine.rs`).
    welcomed: watch::Sender<bool>,
}

impl Calls {
    /// Computes the grains (or takes the swarm's), builds the job context of the instance at
    /// `index` of `all` (its jobs keyed by `index` in the shared table) and starts its outbox.
    fn start(
        cfg: &Arc<MinionConfig>,
        shared: &Shared,
        table: &Arc<crate::jobs::Table>,
        all: &[Ends],
        index: usize,
    ) -> Calls {
        let initial = match &shared.grains {
            Some(g) => {
                let mut g = g.clone();
                if let Value::Object(m) = &mut g {
                    m.insert("id".into(), Value::String(cfg.id.clone()));
                }
                g
            }
            None => cfg.compute_grains(),
        };
        let grains = Arc::new(RwLock::new(initial));
        let pillar = Arc::new(RwLock::new(Value::Object(Map::new())));
        let jobs = Arc::new(Jobs::view(
            table.clone(),
            index,
            all.iter().map(|e| e.refresh_tx.clone()).collect(),
        ));
        let chan_tx = all[index].chan_tx.clone();
        let chan_rx = chan_tx.subscribe();
        let (welcomed, _) = watch::channel(false);
        let ctx = CallContext::new(
            grains,
            pillar.clone(),
            Arc::new(cfg.opts.clone()),
            jobs.clone(),
        )
        .with_modules(Arc::new(MasterFiles {
            chan: chan_rx.clone(),
            cfg: cfg.clone(),
        }))
        .with_events(Arc::new(MasterEvents {
            chans: all.iter().map(|e| e.chan_tx.subscribe()).collect(),
            cfg: cfg.clone(),
        }))
        .with_files(Arc::new(crate::files::MasterFiles {
            chan: chan_rx.clone(),
            cfg: cfg.clone(),
        }))
        .with_states(Arc::new(saltq_states::Engine::new()))
        .with_mine(Arc::new(crate::mine::MasterMine {
            chan: chan_rx.clone(),
            cfg: cfg.clone(),
            welcomed: welcomed.subscribe(),
        }))
        .with_pillar_client(Arc::new(crate::pillar_ext::MasterPillar {
            chan: chan_rx.clone(),
            cfg: cfg.clone(),
        }));
        let ctx = match &shared.reaper {
            Some(r) => ctx.with_process_watch(r.clone()),
            None => ctx,
        };
        // Only the first master's instance runs the beacons (Salt's `beacons_leader`): their
        // events reach every connected master through the shared event sink.
        let ctx = if index == 0 {
            crate::beacon_driver::start(cfg, ctx, chan_rx.clone())
        } else {
            ctx
        };
        let (ret_tx, ret_rx) = mpsc::unbounded_channel();
        let ctx = crate::schedule::start(cfg, ctx, &jobs, &ret_tx, welcomed.subscribe());
        tokio::spawn(outbox(ret_rx, chan_rx, cfg.clone(), jobs.clone()));
        Calls {
            pillar,
            jobs,
            chan_tx,
            ctx,
            ret_tx,
            welcomed,
        }
    }

    /// Starts a job from the master (or the startup states).
    fn start_job(&self, cfg: &Arc<MinionConfig>, load: pb::JobLoad) {
        start_job(cfg, &self.ctx, &self.jobs, load, &self.ret_tx);
    }
}

/// The certificate this minion presents and the trust it dials with.
struct Cert {
    /// Key and certificate chain (replaced by a renewal, used from the next dial).
    ident: saltq_transport::pki::CertKey,
    /// The master's CA, pinned on first use.
    trust: saltq_transport::tls::ServerTrust,
    /// What renewal needs to know of `ident`.
    held: Held,
}

/// The minion's main loop and what its handlers change: one method per [`Event`].
struct Driver {
    cfg: Arc<MinionConfig>,
    /// The shared UDP socket of a swarm, if any.
    endpoint: Option<saltq_transport::QuicEndpoint>,
    /// The masters, in the order the link tries them.
    masters: Vec<MasterAddr>,
    /// The pure state machine deciding what to do next.
    link: Link,
    /// The I/O under way for the link's state.
    phase: Phase,
    /// TLS session tickets kept from one dial to the next.
    reuse: Arc<saltq_transport::client::TlsReuse>,
    /// Certificate renewal under way.
    renewal: Renewal,
    /// Whether a master's certificates are taken: not with several masters at once, whose CAs
    /// would each replace the certificate the others accept.
    renews: bool,
    /// Our certificate and the master's trust.
    cert: Cert,
    /// The subscription request, with grains encoded once.
    requests: crate::subscribe::Requests,
    /// The startup states, until the first `Welcome` takes them.
    startup: Option<crate::config::StartupRun>,
    /// Jobs and what they run with.
    calls: Calls,
}

impl Driver {
    /// An instance's driver, its link not started: linked to `cfg.masters` (one, or the
    /// failover list), presenting `ident` and trusting its master as `trust` says.
    fn new(
        cfg: Arc<MinionConfig>,
        shared: &Shared,
        ident: saltq_transport::pki::CertKey,
        trust: saltq_transport::tls::ServerTrust,
        held: Held,
        calls: Calls,
        renews: bool,
    ) -> Driver {
        let masters = masters_in_order(&cfg);
        Driver {
            link: Link::new(
                Backoff::new(cfg.recon_default, cfg.recon_max, cfg.recon_randomize),
                cfg.acceptance_wait_time,
            )
            .with_masters(masters.len())
            .with_retry_dns(cfg.retry_dns)
            .with_busy_wait(cfg.random_reauth_delay),
            masters,
            // The startup states run once, at the first connection (taken then).
            startup: cfg.startup.clone(),
            phase: Phase::Idle,
            reuse: Arc::new(saltq_transport::client::TlsReuse::default()),
            renewal: Renewal::Idle,
            renews,
            cert: Cert { ident, trust, held },
            requests: crate::subscribe::Requests::default(),
            calls,
            endpoint: shared.endpoint.clone(),
            cfg,
        }
    }

    /// The loop: carry out what the link decided, wait for the next event, handle it; then
    /// the one way out.
    async fn run(
        mut self,
        mut shutdown: watch::Receiver<bool>,
        mut refresh_rx: mpsc::UnboundedReceiver<Refresh>,
    ) -> anyhow::Result<()> {
        let mut decided = Some(self.link.start());
        loop {
            if let Some(action) = decided.take() {
                tracing::trace!(state = ?self.link.state(), ?action, "link");
                if matches!(action, Action::Stop) {
                    break;
                }
                self.carry_out(action);
            }
            let event = self.next_event(&mut shutdown, &mut refresh_rx).await;
            decided = self.handle(event).await;
        }
        self.stop().await;
        Ok(())
    }

    /// Waits for what happens next: shutdown first, then the I/O under way; refreshes and
    /// renewals wait for a subscription (they talk to the master).
    async fn next_event(
        &mut self,
        shutdown: &mut watch::Receiver<bool>,
        refresh_rx: &mut mpsc::UnboundedReceiver<Refresh>,
    ) -> Event {
        let serving = matches!(self.phase, Phase::Serving(_));
        tokio::select! {
            biased;
            _ = shutdown.wait_for(|s| *s) => Event::Shutdown,
            e = self.phase.next() => e,
            Some(r) = refresh_rx.recv(), if serving => Event::Refresh(r),
            e = self.renewal.next(), if serving => e,
        }
    }

    /// Carries out what the link decided (all but `Stop`, which ends the loop).
    fn carry_out(&mut self, action: Action) {
        match action {
            Action::Dial => self.dial(),
            Action::DialAfter(delay) => {
                tracing::debug!(?delay, "dialing the master after");
                self.phase = Phase::Waiting(Box::pin(tokio::time::sleep(delay)));
            }
            Action::Subscribe => {
                if let Phase::Connected(ch) = std::mem::replace(&mut self.phase, Phase::Idle) {
                    let request = self.requests.request(&self.calls.ctx.grains);
                    let (c, max) = (ch.clone(), self.cfg.limits.max_message_size);
                    let answer = Box::pin(crate::subscribe::subscribe(c, max, request));
                    self.phase = Phase::Subscribing(ch, answer);
                }
            }
            Action::Serve => {
                if let Phase::Serving(sub) = &self.phase {
                    tracing::info!(
                        "connected to master {} over {} (subscribed)",
                        self.masters[self.link.master()],
                        self.cfg.transport.as_str()
                    );
                    let _ = self.calls.chan_tx.send(Some(sub.ch.clone()));
                }
            }
            Action::Stop => {}
        }
    }

    /// Dials the master the link picked.
    fn dial(&mut self) {
        let master = &self.masters[self.link.master()];
        tracing::debug!(%master, "dialing the master");
        let opts = connect_options(
            &self.cfg,
            master,
            &self.cert.ident,
            &self.cert.trust,
            &self.reuse,
        );
        let endpoint = self.endpoint.clone();
        self.phase = Phase::Dialing(Box::pin(async move {
            connect_via(&opts, endpoint.as_ref()).await
        }));
    }

    /// Hands `event` to its handler; returns what the link decided, if it was asked.
    async fn handle(&mut self, event: Event) -> Option<Action> {
        let unit = rand::random::<f64>();
        match event {
            Event::Shutdown => Some(self.link.on(Input::Shutdown, unit)),
            Event::Waited => Some(self.link.waited()),
            Event::Dialed(Ok(ch)) => Some(self.handle_connected(ch, unit)),
            Event::Dialed(Err(e)) => Some(self.handle_dial_failed(e, unit)),
            Event::Answered(Ok(stream)) => Some(self.handle_subscribed(stream, unit)),
            Event::Answered(Err(status)) => Some(self.handle_refused(status, unit)),
            Event::Message(Some(msg)) => {
                self.handle_message(*msg);
                None
            }
            Event::Message(None) => Some(self.handle_lost(unit)),
            Event::Refresh(r) => {
                self.handle_refresh(r).await;
                None
            }
            Event::RenewDue => {
                self.handle_renew_due();
                None
            }
            Event::Renewed(answer) => {
                self.handle_renewed(answer).await;
                None
            }
        }
    }

    /// A dial succeeded: pin the master's CA on first use, then ask the link.
    fn handle_connected(&mut self, ch: Channel, unit: f64) -> Action {
        if let Err(e) = identity::pin_if_first_use(&self.cfg, &mut self.cert.trust) {
            tracing::error!("cannot pin the master's CA: {e:#}");
        }
        self.phase = Phase::Connected(ch);
        self.link.on(Input::Connected, unit)
    }

    /// A dial failed: say why (and what to do about an expired certificate), move on.
    fn handle_dial_failed(&mut self, e: ConnectError, unit: f64) -> Action {
        tracing::warn!("{e}");
        let held = self.cert.held;
        if refused_as_expired(&e.kind, held, unix_now()) {
            let path = self.cfg.pki_dir.join(identity::CERT_FILE);
            tracing::error!(
                "the master refused our certificate {}: it expired at {} and was not renewed in time; install a new certificate there, or remove it to connect with a self-signed one (subject to key acceptance)",
                path.display(),
                saltq_transport::pki::format_time(held.validity.not_after)
            );
        }
        let from = self.link.master();
        let action = self.link.on(Input::ConnectFailed(e.kind), unit);
        self.moving_on(from, action, "unreachable");
        action
    }

    /// The master took the subscription: serve its stream.
    fn handle_subscribed(&mut self, stream: Streaming<pb::SubscribeResponse>, unit: f64) -> Action {
        if let Phase::Subscribing(ch, _) = std::mem::replace(&mut self.phase, Phase::Idle) {
            let client = client(ch.clone(), &self.cfg);
            self.phase = Phase::Serving(Box::new(Subscription { ch, client, stream }));
        }
        self.link.on(Input::Subscribed, unit)
    }

    /// The master refused the subscription: wait for key acceptance, or move on.
    fn handle_refused(&mut self, status: Status, unit: f64) -> Action {
        let from = self.link.master();
        let input = refusal(&status);
        let key = matches!(input, Input::KeyRefused(_));
        if key {
            tracing::warn!(
                "{}; retrying in {:?}",
                status.message(),
                self.cfg.acceptance_wait_time
            );
        } else {
            tracing::warn!(
                "cannot subscribe at {}: {} ({})",
                self.masters[from],
                status.message(),
                self.phase
                    .channel()
                    .map_or_else(
                        || saltq_transport::client::classify(&status),
                        |ch| ch.classify_status(&status)
                    )
                    .describe()
            );
        }
        let action = self.link.on(input, unit);
        if !key {
            self.moving_on(from, action, "refused the subscription");
        }
        action
    }

    /// A message on the subscription: a `Welcome` (pillar, renewal, startup states) or a job.
    fn handle_message(&mut self, msg: pb::SubscribeResponse) {
        match msg.kind {
            Some(Kind::Welcome(w)) => {
                let pillar = value::from_ordered_json(&w.pillar_json, w.pillar.as_ref());
                take_pillar(&self.calls.pillar, pillar.map(Value::Object));
                if let Some(groups) = &w.nodegroups {
                    self.calls.ctx.opts = with_master_nodegroups(&self.calls.ctx.opts, groups);
                }
                if w.issues_certificates && !self.renews {
                    tracing::warn!(
                        "the master issues certificates, not taken with several masters at \
                         once: each master's would replace the one the others accept"
                    );
                }
                let issues = w.issues_certificates && self.renews;
                self.renewal = match renewal_on_welcome(issues, self.cert.held, unix_now()) {
                    Some(wait) => Renewal::after(wait),
                    None => Renewal::Idle,
                };
                // Salt's `_state_run`: once, at the first connection after start, with the
                // pillar the master just sent.
                if let Some(run) = self.startup.take() {
                    tracing::info!(fun = run.fun, "running the startup states");
                    self.calls
                        .start_job(&self.cfg, startup_load(&self.cfg, run));
                }
                self.calls.welcomed.send_replace(true);
            }
            Some(Kind::Job(load)) => self.calls.start_job(&self.cfg, load),
            // `control` is deprecated: no master sends it.
            _ => {}
        }
    }

    /// The subscription ended: jobs' returns wait for the next master.
    fn handle_lost(&mut self, unit: f64) -> Action {
        let _ = self.calls.chan_tx.send(None);
        let from = self.link.master();
        tracing::warn!("lost the master at {}", self.masters[from]);
        let action = self.link.on(Input::StreamEnded, unit);
        self.moving_on(from, action, "lost");
        action
    }

    /// An execution function asked for fresh grains or pillar.
    async fn handle_refresh(&mut self, r: Refresh) {
        if let Phase::Serving(sub) = &mut self.phase {
            refresh(&self.cfg, &mut sub.client, &self.calls.ctx, r).await;
        } else if matches!(r, Refresh::Pillar) {
            take_pillar(
                &self.calls.pillar,
                Err("the minion is not connected to a master".into()),
            );
        }
        if matches!(r, Refresh::Pillar) {
            self.calls.jobs.pillar_refreshed();
        }
    }

    /// Time to ask the master for a certificate, on the subscription's connection.
    fn handle_renew_due(&mut self) {
        if let Phase::Serving(sub) = &self.phase {
            let mut c = sub.client.clone();
            self.renewal = Renewal::Asking(Box::pin(async move {
                c.renew_certificate(pb::RenewCertificateRequest {})
                    .await
                    .map(tonic::Response::into_inner)
            }));
        }
    }

    /// The master answered the certificate request: install the new one (used from the next
    /// connection) or try again later.
    async fn handle_renewed(&mut self, answer: Result<pb::RenewCertificateResponse, Status>) {
        let resp = match answer {
            Err(s) if s.code() == Code::FailedPrecondition => {
                // The master will not issue us one and said why; its next Welcome says again.
                tracing::warn!("the master issues us no certificate: {}", s.message());
                self.renewal = Renewal::Idle;
                return;
            }
            Err(s) => Err(s.message().to_owned()),
            Ok(resp) => Ok(resp),
        };
        let installed = match resp {
            Ok(resp) => install(&self.cfg, resp).await,
            Err(e) => Err(e),
        };
        match installed {
            Ok((new_held, new)) => {
                tracing::info!(
                    "renewed the minion certificate {} (serial {}), valid until {}: used from the next connection",
                    self.cfg.pki_dir.join(identity::CERT_FILE).display(),
                    saltq_transport::pki::serial_hex(&new.chain[0]).unwrap_or_default(),
                    saltq_transport::pki::format_time(new_held.validity.not_after)
                );
                self.cert.ident = new;
                self.cert.held = new_held;
                self.renewal = Renewal::after(renewal::next_request(new_held, unix_now()));
            }
            Err(e) => {
                let held = self.cert.held;
                let wait = renewal::retry_after(held, unix_now());
                tracing::warn!(
                    "certificate renewal failed: {e}; retrying in {wait:?} (the certificate is valid until {})",
                    saltq_transport::pki::format_time(held.validity.not_after)
                );
                self.renewal = Renewal::after(wait);
            }
        }
    }

    /// Says where the link goes after the master at `from` failed.
    fn moving_on(&self, from: usize, action: Action, what: &str) {
        moving_on(&self.masters, &self.masters[from], &self.link, action, what);
    }

    /// The one way out: whatever the state (subscribed, connecting, backing off, waiting for
    /// the key to be accepted), running jobs end with the minion.
    async fn stop(self) {
        let killed = self.calls.jobs.kill_all();
        if killed > 0 {
            tracing::warn!("stopping: ended {killed} running jobs");
        }
        let _ = self.calls.chan_tx.send(None);
        if let Some(ch) = self.phase.channel() {
            ch.close().await;
        }
    }
}

/// Writes a certificate the master issued (off the async workers) and reads it back.
async fn install(
    cfg: &Arc<MinionConfig>,
    resp: pb::RenewCertificateResponse,
) -> Result<(Held, saltq_transport::pki::CertKey), String> {
    let for_disk = cfg.clone();
    tokio::task::spawn_blocking(move || {
        identity::install_certificate(&for_disk, &resp.certificate_chain_pem)
    })
    .await
    .map_err(anyhow::Error::from)
    .and_then(|r| r)
    .and_then(|new| Ok((identity::held(&new)?, new)))
    .map_err(|e| format!("{e:#}"))
}

/// What the main loop reacts to.
enum Event {
    /// The wait before the next dial is over.
    Waited,
    /// A dial finished.
    Dialed(Result<Channel, ConnectError>),
    /// The master answered the subscription request.
    Answered(Result<Streaming<pb::SubscribeResponse>, Status>),
    /// A message on the subscription, or its end.
    Message(Option<Box<pb::SubscribeResponse>>),
    /// An execution function asked for a refresh.
    Refresh(Refresh),
    /// Time to ask the master for a certificate.
    RenewDue,
    /// The master answered the certificate request.
    Renewed(Result<pb::RenewCertificateResponse, Status>),
    /// SIGTERM, Ctrl-C, or the swarm stopping.
    Shutdown,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The I/O under way for the link's state: what the main loop waits on besides shutdown.
enum Phase {
    /// Nothing under way.
    Idle,
    /// Disconnected: sleeping before the next dial.
    Waiting(Pin<Box<tokio::time::Sleep>>),
    /// Connecting: the dial.
    Dialing(BoxFuture<Result<Channel, ConnectError>>),
    /// Connecting: the connection is up, the subscription not yet asked for.
    Connected(Channel),
    /// Connecting: the subscription request, on this connection.
    Subscribing(
        Channel,
        BoxFuture<Result<tonic::Response<Streaming<pb::SubscribeResponse>>, Status>>,
    ),
    /// Subscribed (boxed: the stream is large, and this is the long-lived phase).
    Serving(Box<Subscription>),
}

/// A held subscription.
struct Subscription {
    /// The connection it is on.
    ch: Channel,
    /// For refreshes, on the same connection.
    client: Client,
    /// Jobs from the master.
    stream: Streaming<pb::SubscribeResponse>,
}

impl Phase {
    /// The next event from the I/O under way; never, when there is none.
    async fn next(&mut self) -> Event {
        match self {
            Phase::Idle | Phase::Connected(_) => std::future::pending().await,
            Phase::Waiting(sleep) => {
                sleep.as_mut().await;
                Event::Waited
            }
            Phase::Dialing(dial) => Event::Dialed(dial.as_mut().await),
            Phase::Subscribing(_, answer) => {
                Event::Answered(answer.as_mut().await.map(tonic::Response::into_inner))
            }
            Phase::Serving(sub) => Event::Message(
                sub.stream
                    .message()
                    .await
                    .map(|o| o.map(Box::new))
                    .unwrap_or_else(|s| {
                        tracing::warn!("subscription ended: {}", s.message());
                        None
                    }),
            ),
        }
    }

    /// The connection held, if any.
    fn channel(&self) -> Option<&Channel> {
        match self {
            Phase::Connected(ch) | Phase::Subscribing(ch, _) => Some(ch),
            Phase::Serving(sub) => Some(&sub.ch),
            Phase::Idle | Phase::Waiting(_) | Phase::Dialing(_) => None,
        }
    }
}

/// Getting a certificate from the master, as `renewal.rs` schedules it.
enum Renewal {
    /// The master offers none (or has not said yet).
    Idle,
    /// Asking when this sleep ends.
    Due(Pin<Box<tokio::time::Sleep>>),
    /// The request, on the subscription's connection.
    Asking(BoxFuture<Result<pb::RenewCertificateResponse, Status>>),
}

impl Renewal {
    fn after(wait: Duration) -> Renewal {
        Renewal::Due(Box::pin(tokio::time::sleep(wait)))
    }

    /// The next event of the renewal under way; never, when there is none.
    async fn next(&mut self) -> Event {
        match self {
            Renewal::Idle => std::future::pending().await,
            Renewal::Due(sleep) => {
                sleep.as_mut().await;
                *self = Renewal::Idle;
                Event::RenewDue
            }
            Renewal::Asking(answer) => {
                let answer = answer.as_mut().await;
                *self = Renewal::Idle;
                Event::Renewed(answer)
            }
        }
    }
}

/// Seconds since the Unix epoch.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

/// Classifies a refused subscription for the link: the master names our key's state in
/// `KEY_STATE_HEADER` when the key is what stands in the way.
fn refusal(status: &Status) -> Input {
    let state = status
        .metadata()
        .get(KEY_STATE_HEADER)
        .and_then(|v| v.to_str().ok());
    match state {
        Some(s) if status.code() == Code::PermissionDenied => Input::KeyRefused(KeyState::parse(s)),
        _ => Input::SubscribeFailed,
    }
}

/// Says where the link goes after `from` failed (`what`: unreachable, lost, ...): the next
/// master at once, or, after a whole round failed, the backoff.
fn moving_on(masters: &[MasterAddr], from: &MasterAddr, link: &Link, action: Action, what: &str) {
    let to = &masters[link.master()];
    match action {
        Action::Dial => tracing::warn!("master {from} {what}, trying {to}"),
        Action::DialAfter(delay) if masters.len() > 1 => tracing::warn!(
            "master {from} {what}; no master of {} reachable, trying {to} in {delay:?}",
            masters.len()
        ),
        Action::DialAfter(delay) => tracing::info!("reconnecting to {to} in {delay:?}"),
        _ => {}
    }
}

/// How to dial `master`; `sessions` keeps the TLS session tickets from one dial to the next
/// (a reconnect, even to a restarted master, resumes its session).
fn connect_options(
    cfg: &MinionConfig,
    master: &MasterAddr,
    ident: &saltq_transport::pki::CertKey,
    trust: &saltq_transport::tls::ServerTrust,
    reuse: &Arc<saltq_transport::client::TlsReuse>,
) -> ConnectOptions {
    ConnectOptions {
        ipv6: cfg.ipv6,
        host: master.host.clone(),
        port: master.port,
        transport: cfg.transport,
        identity: ident.clone(),
        trust: trust.clone(),
        limits: cfg.limits.clone(),
        connect_timeout: saltq_transport::client::CONNECT_TIMEOUT,
        reuse: Some(reuse.clone()),
    }
}

async fn refresh(cfg: &MinionConfig, c: &mut Client, ctx: &CallContext, r: Refresh) {
    match r {
        Refresh::Grains => {
            // Computing grains runs commands (lspci, systemctl): keep it off the async threads.
            let for_grains = cfg.clone();
            let g = match tokio::task::spawn_blocking(move || for_grains.compute_grains()).await {
                Ok(g) => g,
                Err(e) => {
                    tracing::warn!("computing grains failed: {e}");
                    return;
                }
            };
            *ctx.grains.write().unwrap_or_else(|e| e.into_inner()) = g.clone();
            let req = pb::UpdateGrainsRequest {
                grains: Some(value::json_to_struct(&g)),
            };
            if let Err(s) = c.update_grains(req).await {
                tracing::warn!("grains not sent to the master: {}", s.message());
            }
        }
        Refresh::Pillar => {
            let req = pb::GetPillarRequest {
                ordered: true,
                ..Default::default()
            };
            let pillar = match c.get_pillar(req).await {
                Ok(p) => {
                    let p = p.into_inner();
                    value::from_ordered_json(&p.pillar_json, p.pillar.as_ref()).map(Value::Object)
                }
                Err(s) => Err(format!(
                    "the master answered {:?}: {}",
                    s.code(),
                    s.message()
                )),
            };
            take_pillar(&ctx.pillar, pillar);
        }
    }
}

/// Takes a pillar from the master, or keeps the one the minion has when it could not get
/// one: then the log and the pillar's `_errors` say so (Salt's minion only logs it).
fn take_pillar(held: &RwLock<Value>, fetched: Result<Value, String>) {
    let mut held = held.write().unwrap_or_else(|e| e.into_inner());
    *held = match fetched {
        Ok(p) => p,
        Err(why) => {
            tracing::error!(
                "{}: {why}; keeping the pillar from before, with the failure in its _errors",
                saltq_states::pillar::REFRESH_FAILED
            );
            saltq_states::pillar::kept_after_failed_refresh(std::mem::take(&mut *held), &why)
        }
    };
}

/// The minion's options with the master's nodegroups, as Salt's state runs take them from
/// the master's `master_opts` (for `match: nodegroup` in top files and `N@` in compounds).
fn with_master_nodegroups(opts: &Arc<Value>, groups: &prost_types::Struct) -> Arc<Value> {
    let groups = Value::Object(value::struct_to_map(groups));
    if opts.get("nodegroups") == Some(&groups) {
        return opts.clone();
    }
    let mut o = (**opts).clone();
    if let Value::Object(m) = &mut o {
        m.insert("nodegroups".into(), groups);
    }
    Arc::new(o)
}

/// The minion's own check of a job's target: its answer is the one that counts.
fn targets_me(cfg: &MinionConfig, ctx: &CallContext, load: &pb::JobLoad) -> bool {
    let Ok(tgt_type) = load.tgt_type.parse::<TargetType>() else {
        return false;
    };
    if tgt_type == TargetType::Nodegroup {
        // Nodegroups live in the master's config; the master expanded and checked them.
        return true;
    }
    let delimiter = (!load.delimiter.is_empty()).then_some(load.delimiter.as_str());
    let Ok(target) = Target::compile(&load.tgt, tgt_type, delimiter, &Nodegroups::new()) else {
        return false;
    };
    let grains = ctx.grains();
    let pillar = ctx.pillar();
    target.matches(&MinionFacts {
        id: &cfg.id,
        grains: Some(&grains),
        pillar: Some(&pillar),
    })
}

/// The job of `startup_states`, as Salt's minion makes it: the jid `"req"` (the master
/// gives the return a jid of its own), targeting this minion.
fn startup_load(cfg: &MinionConfig, run: crate::config::StartupRun) -> pb::JobLoad {
    pb::JobLoad {
        jid: "req".into(),
        tgt: cfg.id.clone(),
        tgt_type: "glob".into(),
        fun: vec![run.fun.into()],
        arg: run.arg.iter().map(value::to_prost).collect(),
        ..Default::default()
    }
}

fn start_job(
    cfg: &Arc<MinionConfig>,
    ctx: &CallContext,
    jobs: &Arc<Jobs>,
    load: pb::JobLoad,
    ret_tx: &mpsc::UnboundedSender<Outgoing>,
) {
    tracing::debug!(jid = %load.jid, fun = ?load.fun, "job received");
    if !jobs.first_sighting(&load.jid) {
        tracing::debug!(jid = %load.jid, "job seen before, ignored");
        return;
    }
    if !targets_me(cfg, ctx, &load) {
        tracing::debug!(jid = %load.jid, "job does not target this minion");
        return;
    }
    let args: Vec<Value> = load.arg.iter().map(value::from_prost).collect();
    let kwargs = value::opt_struct(load.kwarg.as_ref());
    let fun_json = if load.fun.len() == 1 {
        json!(load.fun[0])
    } else {
        json!(load.fun)
    };
    let job_ctx = ctx.for_job();
    let info = json!({
        "pid": std::process::id(), "fun": fun_json, "arg": args, "tgt": load.tgt,
        "jid": load.jid, "ret": load.ret, "tgt_type": load.tgt_type, "user": load.user,
    });
    jobs.start(&load.jid, info, job_ctx.processes.clone());
    let jid = load.jid.clone();
    let task_jobs = jobs.clone();
    let ret_tx = ret_tx.clone();
    let max = cfg.limits.max_message_size;
    let task_id = cfg.id.clone();
    let handle = tokio::spawn(async move {
        let publ = PubInfo {
            jid: load.jid.clone(),
            tgt: Value::String(load.tgt.clone()),
            tgt_type: load.tgt_type.clone(),
            ret: load.ret.clone(),
            user: load.user.clone(),
            arg: args.clone(),
        };
        let mut fun_args = args.clone();
        if !kwargs.is_empty() {
            fun_args.push(Value::Object(kwargs.clone()));
        }
        // `out` is the outputter the function asks for (Salt's `__outputter__`); the master
        // stores it and the CLI renders with it unless told otherwise.
        let (ret, retcode, success, out) = if load.fun.len() == 1 {
            let o = saltq_exec::call(&job_ctx, &load.fun[0], args, kwargs, &publ).await;
            (o.ret, o.retcode, o.success, o.out)
        } else {
            // A multi-function job runs its functions in order; the return is keyed by function.
            let mut rets = Map::new();
            let (mut retcode, mut success) = (0, true);
            for (i, fun) in load.fun.iter().enumerate() {
                let a = match args.get(i) {
                    Some(Value::Array(a)) => a.clone(),
                    Some(other) => vec![other.clone()],
                    None => vec![],
                };
                let o = saltq_exec::call(&job_ctx, fun, a, Map::new(), &publ).await;
                if retcode == 0 {
                    retcode = o.retcode;
                }
                success &= o.success;
                rets.insert(fun.clone(), o.ret);
            }
            // Keyed by function, the whole is nested whatever each function asked for.
            (Value::Object(rets), retcode, success, None)
        };
        // Still named by find_job until the master acknowledges the return (the outbox says
        // so), and marked before the return is queued: no find_job answer can overtake it.
        task_jobs.returned(&load.jid);
        let mut req = pb::ReturnRequest {
            jid: load.jid.clone(),
            fun: load.fun.clone(),
            fun_args: Some(value::to_list(&fun_args)),
            r#return: Some(value::to_prost(&ret)),
            retcode,
            success,
            out: out.unwrap_or_default().to_owned(),
            metadata: load.metadata.clone(),
        };
        truncate_if_oversized(&mut req, max);
        replace_if_too_deep(&mut req);
        let _ = ret_tx.send(Outgoing {
            req,
            id: task_id,
            ret: load.ret.clone(),
            ret_config: load.ret_config.clone(),
            ret_kwargs: load.ret_kwargs.clone(),
        });
    });
    jobs.attach(&jid, handle.abort_handle());
}

/// A return larger than the message cap would kill the stream: replace it with a clear marker.
fn truncate_if_oversized(req: &mut pb::ReturnRequest, max: usize) {
    let len = prost::Message::encoded_len(req);
    let budget = max.saturating_sub(64 * 1024);
    if len > budget {
        tracing::warn!(jid = %req.jid, len, max, "return too large, truncated");
        req.r#return = Some(value::to_prost(&json!(format!(
            "[saltq: return truncated: {len} bytes exceeds the message size limit of {max} bytes]"
        ))));
        req.retcode = if req.retcode == 0 { 1 } else { req.retcode };
        req.success = false;
    }
}

/// A return nested deeper than the master can decode would be refused and lost: replace it
/// with a marker saying so, as an oversized one is.
fn replace_if_too_deep(req: &mut pb::ReturnRequest) {
    // The request itself does not count: its return value is the first level.
    let depth = req.r#return.as_ref().map_or(0, value::nesting);
    if depth > value::MAX_NESTING {
        tracing::warn!(jid = %req.jid, depth, "return nested too deeply, replaced");
        req.r#return = Some(value::to_prost(&json!(format!(
            "[saltq: return not sent: nested {depth} protobuf messages deep, more than the {} the master decodes]",
            value::MAX_NESTING
        ))));
        req.retcode = if req.retcode == 0 { 1 } else { req.retcode };
        req.success = false;
    }
}

/// A return on its way to the master, and what to do after.
pub(crate) struct Outgoing {
    pub(crate) req: pb::ReturnRequest,
    pub(crate) id: String,
    pub(crate) ret: String,
    pub(crate) ret_config: String,
    pub(crate) ret_kwargs: Option<prost_types::Struct>,
}

/// Runs the job's returners (and the minion's own `return` list) once the master has the
/// return. A failing returner is logged; it never changes the job's result.
fn run_returners(cfg: &Arc<MinionConfig>, out: Outgoing) {
    let mut names = match saltq_returners::parse_return_list(&out.ret) {
        Ok(n) => n,
        Err(e) => {
            tracing::error!(jid = %out.req.jid, "bad returner list {:?}: {e}", out.ret);
            vec![]
        }
    };
    for n in &cfg.returners {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    let Some(set) = cfg.returner_set.clone() else {
        return;
    };
    if names.is_empty() {
        return;
    }
    let r = &out.req;
    let load = json!({
        "id": out.id, "jid": r.jid, "fun": if r.fun.len() == 1 { json!(r.fun[0]) } else { json!(r.fun) },
        "fun_args": value::from_list(r.fun_args.as_ref()),
        "return": r.r#return.as_ref().map(value::from_prost).unwrap_or(Value::Null),
        "retcode": r.retcode, "success": r.success,
    });
    let kwargs = out.ret_kwargs.as_ref().map(value::struct_to_map);
    let ret_config = (!out.ret_config.is_empty()).then_some(out.ret_config);
    tokio::spawn(async move {
        for name in names {
            if let Err(e) = set
                .returner(&name, &load, ret_config.as_deref(), kwargs.as_ref())
                .await
            {
                tracing::error!(returner = %name, jid = %load["jid"], "returner failed: {e}");
            }
        }
    });
}

/// The first delay before re-sending an unacknowledged return.
const RESEND_FIRST: Duration = Duration::from_millis(500);
/// The longest delay between re-sends.
const RESEND_MAX: Duration = Duration::from_secs(10);
/// How long the master has to acknowledge a return.
const RETURN_TIMEOUT: Duration = Duration::from_secs(30);

/// How one attempt to deliver a return went.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Attempt {
    /// Stored (or a duplicate of a stored one): done.
    Acked,
    /// The master will never take it (unknown job, not ours, malformed, too large): give up.
    Refused(String),
    /// Not acknowledged (connection lost, master busy, timed out): send again.
    Unacked(String),
    /// The minion is stopping: no connection will come.
    Closed,
}

impl Attempt {
    /// Classifies the answer to a `Return` call; `None` when the call timed out.
    fn of(answer: Option<Result<(), Status>>) -> Attempt {
        match answer {
            Some(Ok(())) => Attempt::Acked,
            Some(Err(s))
                if matches!(
                    s.code(),
                    Code::NotFound
                        | Code::PermissionDenied
                        | Code::InvalidArgument
                        | Code::ResourceExhausted
                ) =>
            {
                Attempt::Refused(s.message().to_owned())
            }
            Some(Err(s)) => Attempt::Unacked(s.message().to_owned()),
            None => Attempt::Unacked(format!("not acknowledged in {}s", RETURN_TIMEOUT.as_secs())),
        }
    }
}

/// Makes attempts until one is final, sleeping a jittered, growing delay after each
/// unacknowledged one (so a fleet that lost its master does not re-send in lockstep).
/// The backoff is shared across returns and reset by an acknowledgement.
async fn deliver<F, Fut>(
    jid: &str,
    backoff: &mut Backoff,
    mut unit: impl FnMut() -> f64,
    mut attempt: F,
) -> Attempt
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Attempt>,
{
    loop {
        match attempt().await {
            Attempt::Unacked(why) => {
                let delay = backoff.next_delay(unit());
                tracing::warn!(%jid, "return not acknowledged, resending in {delay:?}: {why}");
                tokio::time::sleep(delay).await;
            }
            Attempt::Acked => {
                backoff.reset();
                return Attempt::Acked;
            }
            done => return done,
        }
    }
}

/// Sends returns in order, re-sending each until the master acknowledges it, across reconnects;
/// tells `jobs` when a return is done with, so find_job stops naming its job.
async fn outbox(
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    chan: watch::Receiver<Option<Channel>>,
    cfg: Arc<MinionConfig>,
    jobs: Arc<Jobs>,
) {
    let mut backoff = Backoff::new(RESEND_FIRST, RESEND_MAX, true);
    while let Some(out) = rx.recv().await {
        let req = &out.req;
        let attempt = || {
            let mut chan = chan.clone();
            let cfg = cfg.clone();
            let req = req.clone();
            async move {
                // While disconnected, wait for the next subscription rather than back off.
                let ch = match chan.wait_for(|c| c.is_some()).await {
                    Ok(c) => c.clone(),
                    Err(_) => return Attempt::Closed,
                };
                let Some(ch) = ch else {
                    return Attempt::Closed;
                };
                let mut c = client(ch, &cfg);
                let answer = tokio::time::timeout(RETURN_TIMEOUT, c.r#return(req)).await;
                Attempt::of(answer.ok().map(|r| r.map(drop)))
            }
        };
        tracing::debug!(jid = %req.jid, "sending the return");
        match deliver(&req.jid, &mut backoff, rand::random::<f64>, attempt).await {
            Attempt::Acked => {
                tracing::debug!(jid = %out.req.jid, "return acknowledged");
                jobs.acknowledged(&out.req.jid);
                run_returners(&cfg, out);
            }
            Attempt::Refused(why) => {
                jobs.acknowledged(&out.req.jid);
                tracing::error!(jid = %out.req.jid, "master refused the return: {why}");
            }
            Attempt::Closed => return,
            Attempt::Unacked(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn a_return_too_deep_for_the_master_is_replaced_with_a_marker() {
        let mut v = json!("bottom");
        for _ in 0..60 {
            v = json!([v]);
        }
        let mut req = pb::ReturnRequest {
            jid: "20260101000000000000".into(),
            r#return: Some(value::to_prost(&v)),
            success: true,
            ..Default::default()
        };
        replace_if_too_deep(&mut req);
        assert_eq!(
            req.r#return.as_ref().map(value::from_prost),
            Some(json!(
                "[saltq: return not sent: nested 121 protobuf messages deep, more than the 100 the master decodes]"
            ))
        );
        assert_eq!((req.retcode, req.success), (1, false));
        // One that fits is left alone.
        let fits = value::to_prost(&json!([[["bottom"]]]));
        let mut req = pb::ReturnRequest {
            r#return: Some(fits.clone()),
            success: true,
            ..Default::default()
        };
        replace_if_too_deep(&mut req);
        assert_eq!((req.r#return, req.success), (Some(fits), true));
    }

    #[test]
    fn return_answers_are_classified() {
        assert_eq!(Attempt::of(Some(Ok(()))), Attempt::Acked);
        for code in [
            Code::NotFound,
            Code::PermissionDenied,
            Code::InvalidArgument,
            Code::ResourceExhausted,
        ] {
            assert!(
                matches!(Attempt::of(Some(Err(Status::new(code, "no")))), Attempt::Refused(m) if m == "no"),
                "{code:?}"
            );
        }
        for code in [
            Code::Unavailable,
            Code::Internal,
            Code::Cancelled,
            Code::Unknown,
        ] {
            assert!(
                matches!(
                    Attempt::of(Some(Err(Status::new(code, "later")))),
                    Attempt::Unacked(_)
                ),
                "{code:?}"
            );
        }
        assert!(matches!(Attempt::of(None), Attempt::Unacked(m) if m.contains("30s")));
    }

    /// Plays `script` as the answers to successive attempts, recording (virtual) times.
    async fn play(
        backoff: &mut Backoff,
        units: &[f64],
        script: Vec<Attempt>,
    ) -> (Attempt, Vec<u64>) {
        let script = Mutex::new(VecDeque::from(script));
        let start = tokio::time::Instant::now();
        let times = Mutex::new(Vec::new());
        let mut units = units.iter().copied().cycle();
        let done = deliver(
            "20260101000000000000",
            backoff,
            || units.next().unwrap_or(0.0),
            || {
                times
                    .lock()
                    .unwrap()
                    .push((tokio::time::Instant::now() - start).as_millis() as u64);
                let next = script
                    .lock()
                    .unwrap()
                    .pop_front()
                    .expect("an attempt too many");
                async move { next }
            },
        )
        .await;
        (done, times.into_inner().unwrap())
    }

    fn unacked() -> Attempt {
        Attempt::Unacked("unavailable".into())
    }

    #[tokio::test(start_paused = true)]
    async fn resends_back_off_with_jitter_and_reset_on_success() {
        let mut b = Backoff::new(RESEND_FIRST, RESEND_MAX, true);
        // Unit 0 gives the low end of each jittered delay: 250, 500, 1000, 2000 ms.
        let (done, t) = play(
            &mut b,
            &[0.0],
            vec![unacked(), unacked(), unacked(), unacked(), Attempt::Acked],
        )
        .await;
        assert_eq!(done, Attempt::Acked);
        assert_eq!(t, vec![0, 250, 750, 1750, 3750]);
        // The acknowledgement reset the backoff: the next return starts over.
        let (done, t) = play(&mut b, &[0.0], vec![unacked(), Attempt::Acked]).await;
        assert_eq!(done, Attempt::Acked);
        assert_eq!(t, vec![0, 250]);
    }

    #[tokio::test(start_paused = true)]
    async fn resends_are_capped_and_spread_across_a_fleet() {
        let mut b = Backoff::new(RESEND_FIRST, RESEND_MAX, true);
        let script = std::iter::repeat_with(unacked)
            .take(8)
            .chain([Attempt::Acked])
            .collect();
        let (_, t) = play(&mut b, &[0.999_999], script).await;
        let gaps: Vec<u64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        // The top of each jittered delay (tokio's timer rounds up to the millisecond), capped.
        assert_eq!(
            gaps,
            vec![500, 1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]
        );
        // Two minions drawing different units do not re-send at the same moments.
        let mut a = Backoff::new(RESEND_FIRST, RESEND_MAX, true);
        let mut b = Backoff::new(RESEND_FIRST, RESEND_MAX, true);
        let (_, ta) = play(&mut a, &[0.1], vec![unacked(), unacked(), Attempt::Acked]).await;
        let (_, tb) = play(&mut b, &[0.7], vec![unacked(), unacked(), Attempt::Acked]).await;
        assert_ne!(ta, tb);
    }

    #[tokio::test(start_paused = true)]
    async fn refusal_and_closing_end_the_resending() {
        let mut b = Backoff::new(RESEND_FIRST, RESEND_MAX, false);
        let (done, t) = play(
            &mut b,
            &[0.0],
            vec![unacked(), Attempt::Refused("not yours".into())],
        )
        .await;
        assert_eq!(done, Attempt::Refused("not yours".into()));
        assert_eq!(t, vec![0, 500]);
        let (done, t) = play(&mut b, &[0.0], vec![Attempt::Closed]).await;
        assert_eq!(done, Attempt::Closed);
        assert_eq!(t, vec![0]);
    }

    fn held(self_signed: bool, not_after: i64) -> Held {
        Held {
            self_signed,
            validity: saltq_transport::pki::Validity {
                not_before: 0,
                not_after,
            },
        }
    }

    #[test]
    fn only_an_expired_ca_issued_certificate_is_reported_expired() {
        // (self-signed, not_after, now) -> expired at start
        for (self_signed, not_after, now, expected) in [
            (false, 100, 101, true),
            (false, 100, 100, false),
            (false, 100, 50, false),
            (true, 100, 101, false),
            (true, 100, 50, false),
        ] {
            let h = held(self_signed, not_after);
            assert_eq!(expired_at_start(h, now), expected, "{h:?} at {now}");
            assert_eq!(
                refused_as_expired(&FailureKind::CertificateRejected, h, now),
                expected,
                "{h:?} at {now}"
            );
            // Any other failure is not about our certificate.
            for kind in [
                FailureKind::Refused,
                FailureKind::TimedOut,
                FailureKind::ServerNotTrusted,
                FailureKind::Busy,
            ] {
                assert!(!refused_as_expired(&kind, h, now), "{kind:?}");
            }
        }
    }

    #[test]
    fn a_welcome_schedules_a_renewal_only_when_the_master_issues_certificates() {
        let ca_issued = held(false, 3000);
        assert_eq!(renewal_on_welcome(false, ca_issued, 0), None);
        assert_eq!(renewal_on_welcome(false, held(true, 3000), 0), None);
        // A self-signed certificate is swapped for an issued one at once.
        assert_eq!(
            renewal_on_welcome(true, held(true, 3000), 0),
            Some(Duration::ZERO)
        );
        // An issued one two thirds into its life, as renewal.rs decides.
        assert_eq!(
            renewal_on_welcome(true, ca_issued, 1000),
            Some(renewal::next_request(ca_issued, 1000))
        );
        assert_eq!(
            renewal_on_welcome(true, ca_issued, 1000),
            Some(Duration::from_secs(1000))
        );
    }

    #[test]
    fn the_health_port_says_whether_the_minion_is_subscribed() {
        let check = |path: &str, up: bool, code: u16, body: &str| {
            assert_eq!(
                health_reply(path, up),
                (code, "text/plain", body.to_owned()),
                "{path} {up}"
            );
        };
        check("/healthz", true, 200, "subscribed\n");
        check("/healthz", false, 503, "not subscribed to the master\n");
        check("/readyz", true, 404, "not found: try /healthz\n");
        check("/", false, 404, "not found: try /healthz\n");
    }

    #[test]
    fn a_refused_subscription_names_the_key_state() {
        let refused = |code: Code, state: Option<&str>| {
            let mut s = Status::new(code, "refused");
            if let Some(v) = state {
                s.metadata_mut()
                    .insert(KEY_STATE_HEADER, v.parse().unwrap());
            }
            refusal(&s)
        };
        assert_eq!(
            refused(Code::PermissionDenied, Some("pending")),
            Input::KeyRefused(KeyState::Pending)
        );
        assert_eq!(
            refused(Code::PermissionDenied, Some("rejected")),
            Input::KeyRefused(KeyState::Rejected)
        );
        assert_eq!(
            refused(Code::PermissionDenied, Some("denied")),
            Input::KeyRefused(KeyState::Denied)
        );
        assert_eq!(
            refused(Code::PermissionDenied, None),
            Input::SubscribeFailed
        );
        assert_eq!(
            refused(Code::Unavailable, Some("pending")),
            Input::SubscribeFailed
        );
    }
}
