//! Starting the master: PKI on first start, job cache, listeners, then serve until told to stop.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use futures_util::StreamExt;
use saltq_proto::v1::{
    event_service_server::EventServiceServer, job_service_server::JobServiceServer,
    key_service_server::KeyServiceServer, minion_service_server::MinionServiceServer,
    runner_service_server::RunnerServiceServer,
};
use saltq_transport::pki::{self, Ca, CertRole, IssueRequest};
use saltq_transport::{ListenConfig, Listeners};
use tokio::sync::watch;

use crate::config::MasterConfig;
use crate::keys::{KeyPolicy, KeyStore};
use crate::service::{self, Authorize};
use crate::state::Master;

/// A start-up failure with the exit code Salt would use.
#[derive(Debug)]
pub struct StartError {
    /// Salt exit code.
    pub code: i32,
    /// What went wrong.
    pub error: anyhow::Error,
}

fn fail(code: i32) -> impl FnOnce(anyhow::Error) -> StartError {
    move |error| StartError { code, error }
}

fn io_code(e: &anyhow::Error) -> i32 {
    let denied = e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::PermissionDenied)
    });
    if denied {
        saltq_transport::config::EX_NOPERM
    } else {
        saltq_transport::config::EX_CANTCREAT
    }
}

/// The master's files under `pki_dir`.
pub struct PkiFiles;

impl PkiFiles {
    /// CA certificate.
    pub const CA_CERT: &str = "ca.crt";
    /// CA key.
    pub const CA_KEY: &str = "ca.key";
    /// Server certificate (leaf then CA).
    pub const MASTER_CERT: &str = "master.crt";
    /// Server key.
    pub const MASTER_KEY: &str = "master.key";
    /// Admin client certificate for the CLI on this host.
    pub const ADMIN_CERT: &str = "admin.crt";
    /// Admin client key.
    pub const ADMIN_KEY: &str = "admin.key";
}

/// Creates the CA, the server certificate and the admin client certificate if missing, in
/// `pki_dir`, or in `cluster_pki_dir` for a replica: there the first replica creates them
/// while it holds a lock on the folder, and the others wait and read them.
pub fn ensure_pki(cfg: &MasterConfig) -> anyhow::Result<Ca> {
    std::fs::create_dir_all(&cfg.pki_dir)
        .with_context(|| format!("cannot create pki_dir {}", cfg.pki_dir.display()))?;
    let dir = cfg.cert_dir();
    let key = if cfg.cluster.is_some() {
        "cluster_pki_dir"
    } else {
        "pki_dir"
    };
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create {key} {}", dir.display()))?;
    // Held until this function returns: replicas starting together create one CA.
    let _lock = match &cfg.cluster {
        Some(_) => {
            let path = dir.join(".lock");
            let f = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            f.lock()
                .with_context(|| format!("cannot lock {}", path.display()))?;
            Some(f)
        }
        None => None,
    };
    let (ca_cert, ca_key) = (dir.join(PkiFiles::CA_CERT), dir.join(PkiFiles::CA_KEY));
    let ca = if ca_cert.exists() {
        Ca::load(&ca_cert, &ca_key)?
    } else {
        tracing::info!("creating the master's CA in {}", dir.display());
        Ca::create(&format!("saltq CA {}", cfg.id), &ca_cert, &ca_key)?
    };
    let issue = |cert: &Path, key: &Path, req: IssueRequest| -> anyhow::Result<()> {
        if cert.exists() {
            return Ok(());
        }
        let (c, k) = ca.issue(&req)?;
        pki::write_private(key, &k)?;
        pki::write_public(cert, &c)?;
        Ok(())
    };
    let mut dns = vec!["localhost".to_owned(), hostname()];
    let mut ips: Vec<IpAddr> = vec![
        [127, 0, 0, 1].into(),
        IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]),
    ];
    for san in &cfg.cert_sans {
        match san.parse::<IpAddr>() {
            Ok(ip) => ips.push(ip),
            Err(_) => dns.push(san.clone()),
        }
    }
    for addr in [cfg.quic, cfg.h2].into_iter().flatten() {
        if !addr.ip().is_unspecified() && !ips.contains(&addr.ip()) {
            ips.push(addr.ip());
        }
    }
    dns.dedup();
    issue(
        &dir.join(PkiFiles::MASTER_CERT),
        &dir.join(PkiFiles::MASTER_KEY),
        IssueRequest {
            common_name: cfg.id.clone(),
            role: CertRole::Server,
            dns_names: dns,
            ips,
            days: 3650,
        },
    )?;
    issue(
        &dir.join(PkiFiles::ADMIN_CERT),
        &dir.join(PkiFiles::ADMIN_KEY),
        IssueRequest {
            common_name: "admin".into(),
            role: CertRole::Client,
            dns_names: vec![],
            ips: vec![],
            days: 3650,
        },
    )?;
    Ok(ca)
}

/// The QUIC stateless-reset secret in `pki_dir/quic_reset.key`, created on first start. The
/// same secret after a restart (even a crash) lets the master reset the connections of its
/// previous process at their next packet, so minions reconnect at once rather than after
/// their idle timeout.
fn reset_key(pki_dir: &Path) -> anyhow::Result<Vec<u8>> {
    kept_secret(&pki_dir.join("quic_reset.key"))
}

/// The TLS session-ticket secret in `pki_dir/tls_ticket.key`, created on first start. The
/// same secret after a restart lets the minions that reconnect resume their TLS sessions
/// (no certificate verified or signed: a fleet's reconnect costs a fraction of the CPU).
fn ticket_key(pki_dir: &Path) -> anyhow::Result<Vec<u8>> {
    kept_secret(&pki_dir.join("tls_ticket.key"))
}

/// A secret of the master's kept in `path` (mode 0600), made on first use.
fn kept_secret(path: &Path) -> anyhow::Result<Vec<u8>> {
    let path = path.to_path_buf();
    match std::fs::read(&path) {
        Ok(key) if key.len() >= 32 => return Ok(key),
        Ok(_) => tracing::warn!("{} is too short, making a new one", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
    let key: [u8; 64] = rand::random();
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    // Stored as hex text through the private-file writer (mode 0600, synced), read back as
    // those bytes: the text is the secret.
    pki::write_private(&path, &hex).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(hex.into_bytes())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// Runs the master until `shutdown` turns true: open the stores, bind the listeners, start
/// the master (and join its cluster), start its services, serve, then shut down. Each step
/// fails with the exit code Salt would use.
pub async fn run(cfg: MasterConfig, shutdown: watch::Receiver<bool>) -> Result<(), StartError> {
    // A socket per minion: the distribution's default soft limit (often 1024) would stop a
    // fleet long before the hard limit does.
    saltq_transport::rlimit::raise_nofile_limit_logged();
    let stores = Stores::open(&cfg).await?;
    let mut bound = Bound::bind(&cfg, &stores.live).await?;
    let live = stores.live.clone();
    let cert_watches = stores.cert_watches;
    let (master, cluster, leadership) =
        start_master(cfg, stores.keys, stores.cache, stores.last_jid, &live).await?;
    let routes = routes(&master, &live).await?;
    announce(&master, &bound)?;
    let services = start_services(
        &master,
        &leadership,
        cluster.clone(),
        (live, cert_watches),
        (bound.http.take(), &bound.listeners),
        &shutdown,
    )?;
    for api in [bound.netapi, bound.netapi_tornado].into_iter().flatten() {
        (api.start)(master.clone(), shutdown.clone());
    }
    bound
        .listeners
        .serve(Authorize::new(routes), shutdown)
        .await;
    shut_down(services, cluster.as_deref(), &master).await;
    Ok(())
}

/// An I/O failure at start: EX_NOPERM when permission was denied, EX_CANTCREAT otherwise.
fn io_failure(error: anyhow::Error) -> StartError {
    StartError {
        code: io_code(&error),
        error,
    }
}

/// What the master keeps on disk and reads at start.
struct Stores {
    /// The TLS material in use (reloaded when its files change).
    live: Arc<crate::certs::Live>,
    /// What the reload loop watches.
    cert_watches: crate::certs::Watches,
    /// Minion keys.
    keys: KeyStore,
    /// The job cache.
    cache: saltq_jobcache::JobCache,
    /// The newest jid stored, so new jids come after it.
    last_jid: Option<saltq_semantics::jid::Jid>,
}

impl Stores {
    /// Creates the PKI if missing, loads the certificates, opens the key store and the job
    /// cache, in that order.
    async fn open(cfg: &MasterConfig) -> Result<Stores, StartError> {
        ensure_pki(cfg).map_err(io_failure)?;
        let cert_files = crate::certs::CertFiles::of(cfg);
        let (live, cert_watches) = crate::certs::load(&cert_files)
            .map_err(|e| anyhow::anyhow!("{}: {e}", cfg.file.display()))
            .map_err(fail(saltq_transport::config::EX_USAGE))?;
        let keys = KeyStore::open(
            &cfg.pki_dir,
            KeyPolicy {
                auto_accept: cfg.auto_accept,
                open_mode: cfg.open_mode,
                autosign_file: cfg.autosign_file.clone(),
                accept_ca_signed: cfg.accept_ca_signed_minions,
            },
        )
        .map_err(anyhow::Error::from)
        .map_err(io_failure)?;
        let cache = saltq_jobcache::JobCache::open(&cfg.job_cache)
            .await
            .map_err(|e| io_failure(anyhow::Error::from(e).context("cannot open the job cache")))?;
        let last_jid = cache
            .last_jid()
            .await
            .ok()
            .flatten()
            .and_then(|j| saltq_semantics::jid::Jid::parse(&j).ok());
        Ok(Stores {
            live: Arc::new(live),
            cert_watches,
            keys,
            cache,
            last_jid,
        })
    }
}

/// The sockets the master listens on, bound before anything is served.
struct Bound {
    /// gRPC over QUIC and HTTP/2.
    listeners: Listeners,
    /// The HTTP probes and metrics, unless off.
    http: Option<tokio::net::TcpListener>,
    /// salt-api, when configured.
    netapi: Option<SaltApi>,
    /// salt-api's Tornado flavour, when configured.
    netapi_tornado: Option<SaltApi>,
}

/// salt-api, bound and checked; it serves from [`SaltApi::start`].
struct SaltApi {
    /// Where it listens.
    addr: Option<std::net::SocketAddr>,
    /// Starts serving with the master as its backend.
    start: Box<dyn FnOnce(Arc<Master>, watch::Receiver<bool>) + Send>,
}

impl Bound {
    /// Binds the gRPC listeners (with the kept QUIC reset and TLS ticket secrets), the HTTP
    /// port, then salt-api; an error names the config keys.
    async fn bind(cfg: &MasterConfig, live: &crate::certs::Live) -> Result<Bound, StartError> {
        let usage = saltq_transport::config::EX_USAGE;
        let listen = ListenConfig {
            quic: cfg.quic,
            h2: cfg.h2,
            reset_key: Some(reset_key(&cfg.pki_dir).map_err(io_failure)?),
            ticket_key: Some(ticket_key(&cfg.pki_dir).map_err(io_failure)?),
        };
        let listeners = Listeners::bind(&listen, &live.server, live.trust.clone(), cfg.limits.clone())
            .await
            .map_err(|e| {
                let denied = matches!(&e, saltq_transport::server::BindError::Bind { source, .. } if source.kind() == std::io::ErrorKind::PermissionDenied);
                let code = if denied { saltq_transport::config::EX_NOPERM } else { usage };
                StartError {
                    code,
                    error: anyhow::Error::from(e).context(format!("{}: keys interface/port", cfg.file.display())),
                }
            })?;
        let http = match master_http_addr(cfg) {
            Some(addr) => Some(tokio::net::TcpListener::bind(addr).await.map_err(|e| {
                StartError {
                    code: usage,
                    error: anyhow::anyhow!(
                        "{}: keys http_interface/http_port: cannot listen on tcp {addr}: {e}",
                        cfg.file.display()
                    ),
                }
            })?),
            None => None,
        };
        let netapi = match &cfg.netapi {
            Some(n) => Some(bind_netapi(cfg, n, live).await?),
            None => None,
        };
        let netapi_tornado = match &cfg.netapi_tornado {
            Some(n) => Some(bind_netapi(cfg, n, live).await?),
            None => None,
        };
        Ok(Bound {
            listeners,
            http,
            netapi,
            netapi_tornado,
        })
    }
}

/// salt-api: its certificate and port are checked here, before the master serves anything.
async fn bind_netapi(
    cfg: &MasterConfig,
    n: &saltq_netapi::Config,
    live: &crate::certs::Live,
) -> Result<SaltApi, StartError> {
    let usage = saltq_transport::config::EX_USAGE;
    let key = n.flavour.key();
    let tls = match &n.tls {
        // The master's own certificate, as loaded and reloaded for its listeners.
        saltq_netapi::config::Tls::Master { .. } => Some(
            saltq_netapi::server::tls_acceptor_resolving(Arc::new(live.server.clone())),
        )
        .transpose(),
        other => saltq_netapi::server::tls_acceptor(other),
    }
    .map_err(|e| StartError {
        code: usage,
        error: anyhow::anyhow!("{}: key {key}: {e}", cfg.file.display()),
    })?;
    let l = tokio::net::TcpListener::bind(n.addr)
        .await
        .map_err(|e| StartError {
            code: if e.kind() == std::io::ErrorKind::PermissionDenied {
                saltq_transport::config::EX_NOPERM
            } else {
                usage
            },
            error: anyhow::anyhow!(
                "{}: key {key}: cannot listen on tcp {}: {e}",
                cfg.file.display(),
                n.addr
            ),
        })?;
    let ncfg = n.clone();
    Ok(SaltApi {
        addr: l.local_addr().ok(),
        start: Box::new(move |master, shutdown| {
            tracing::info!(addr = %l.local_addr().map(|a| a.to_string()).unwrap_or_default(), tls = tls.is_some(), "salt-api ({key}) listening");
            let backend = Arc::new(crate::netapi::NetapiBackend::new(master));
            tokio::spawn(saltq_netapi::serve(ncfg, backend, l, tls, shutdown));
        }),
    })
}

/// Starts the cluster (for a replica), builds the master on its seams (or on this process's
/// own bus, leadership and delivery) and joins the cluster.
async fn start_master(
    cfg: MasterConfig,
    keys: KeyStore,
    cache: saltq_jobcache::JobCache,
    last_jid: Option<saltq_semantics::jid::Jid>,
    live: &Arc<crate::certs::Live>,
) -> Result<
    (
        Arc<Master>,
        Option<Arc<crate::cluster::Cluster>>,
        Arc<dyn crate::duties::Leadership>,
    ),
    StartError,
> {
    let cluster = match &cfg.cluster {
        Some(c) => Some(start_cluster(&cfg, c).await?),
        None => None,
    };
    let bus: Arc<dyn crate::events::Bus> = match &cluster {
        Some(c) => c.event_bus(),
        None => Arc::new(crate::events::LocalBus::new(8192)),
    };
    let leadership: Arc<dyn crate::duties::Leadership> = match &cluster {
        Some(c) => c.leadership(),
        None => Arc::new(crate::duties::Alone::default()),
    };
    let delivery: Arc<dyn crate::delivery::Delivery> = match &cluster {
        Some(c) => c.delivery(),
        None => Arc::new(crate::delivery::Subscriptions::default()),
    };
    let mut master = Master::new(cfg, keys, cache, last_jid, bus, delivery);
    master.certs = Some(live.clone());
    let master = Arc::new(master);
    // A replica: the cluster fills the seams of facts and returns, and keeps keys and facts
    // in line with the other replicas.
    if let Some(c) = &cluster {
        master.facts.share_with(c.clone());
        master.share_returns_with(c.clone());
        let seams = crate::cluster::Seams {
            keys: master.keys.clone(),
            facts: master.facts.clone(),
            returns: master.followers.clone(),
            metrics: master.metrics.clone(),
        };
        c.join(seams).await.map_err(|e| StartError {
            code: saltq_transport::config::EX_UNAVAILABLE,
            error: anyhow::Error::from(e).context("cannot join the cluster"),
        })?;
    }
    Ok((master, cluster, leadership))
}

/// Connects this replica to NATS and the shared store; an error names the key of the part
/// that failed.
async fn start_cluster(
    cfg: &MasterConfig,
    c: &crate::config::ClusterConfig,
) -> Result<Arc<crate::cluster::Cluster>, StartError> {
    crate::cluster::Cluster::start(cfg, c)
        .await
        .map(Arc::new)
        .map_err(|e| {
            let key = match e {
                crate::cluster::ClusterError::Nats(_) => "cluster_nats",
                crate::cluster::ClusterError::Store(_) => "job_cache_postgres",
            };
            StartError {
                code: saltq_transport::config::EX_UNAVAILABLE,
                error: anyhow::Error::from(e).context(format!("{}: key {key}", cfg.file.display())),
            }
        })
}

/// The gRPC services (each with the message size cap), health and reflection.
async fn routes(
    master: &Arc<Master>,
    live: &Arc<crate::certs::Live>,
) -> Result<tonic::service::Routes, StartError> {
    let max = master.cfg.limits.max_message_size;
    let (health, health_svc) = tonic_health::server::health_reporter();
    health
        .set_serving::<JobServiceServer<service::jobs::JobApi>>()
        .await;
    health
        .set_serving::<MinionServiceServer<service::minion::MinionApi>>()
        .await;
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(saltq_proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection()
        .build_v1()
        .map_err(anyhow::Error::from)
        .map_err(fail(saltq_transport::config::EX_USAGE))?;
    let reflection_v1alpha = reflection()
        .build_v1alpha()
        .map_err(anyhow::Error::from)
        .map_err(fail(saltq_transport::config::EX_USAGE))?;
    Ok(tonic::service::Routes::new(
        MinionServiceServer::new(service::minion::MinionApi::new(
            master.clone(),
            live.clone(),
        ))
        .max_decoding_message_size(max)
        .max_encoding_message_size(max),
    )
    .add_service(
        JobServiceServer::new(service::jobs::JobApi::new(master.clone()))
            .max_decoding_message_size(max)
            .max_encoding_message_size(max),
    )
    .add_service(
        EventServiceServer::new(service::events::EventApi::new(master.clone()))
            .max_decoding_message_size(max)
            .max_encoding_message_size(max),
    )
    .add_service(
        KeyServiceServer::new(service::keys::KeyApi::new(master.clone()))
            .max_decoding_message_size(max)
            .max_encoding_message_size(max),
    )
    .add_service(
        RunnerServiceServer::new(service::runner::RunnerApi::new(master.clone()))
            .max_decoding_message_size(max)
            .max_encoding_message_size(max),
    )
    .add_service(
        saltq_proto::v1::syndic_service_server::SyndicServiceServer::new(
            crate::syndic::service::SyndicApi::new(
                master.clone(),
                service::minion::MinionApi::new(master.clone(), live.clone()),
            ),
        )
        .max_decoding_message_size(max)
        .max_encoding_message_size(max),
    )
    .add_service(health_svc)
    .add_service(reflection_v1)
    .add_service(reflection_v1alpha))
}

/// Logs where the master listens and writes it to `cachedir/listen.json` (for tools and
/// tests that bound port 0).
fn announce(master: &Master, bound: &Bound) -> Result<(), StartError> {
    let quic_addr = bound.listeners.quic_addr();
    let h2_addr = bound.listeners.h2_addr();
    let http_addr = bound.http.as_ref().and_then(|l| l.local_addr().ok());
    let netapi_addr = bound.netapi.as_ref().and_then(|n| n.addr);
    let tornado_addr = bound.netapi_tornado.as_ref().and_then(|n| n.addr);
    let fmt =
        |a: Option<std::net::SocketAddr>| a.map(|a| a.to_string()).unwrap_or_else(|| "off".into());
    tracing::info!(quic = %fmt(quic_addr), h2 = %fmt(h2_addr), id = %master.cfg.id, "master listening");
    let listen = serde_json::json!({
        "quic": quic_addr.map(|a| a.to_string()),
        "h2": h2_addr.map(|a| a.to_string()),
        "http": http_addr.map(|a| a.to_string()),
        "rest_cherrypy": netapi_addr.map(|a| a.to_string()),
        "rest_tornado": tornado_addr.map(|a| a.to_string()),
    });
    let listen_file = master.cfg.cachedir.join("listen.json");
    std::fs::create_dir_all(&master.cfg.cachedir)
        .and_then(|()| std::fs::write(&listen_file, listen.to_string()))
        .with_context(|| format!("cannot write {}", listen_file.display()))
        .map_err(io_failure)
}

/// The background work started beside the gRPC listeners, kept for the shutdown.
struct Services {
    /// The single-runner duties (pruning, presence...).
    duties: tokio::task::JoinHandle<()>,
    /// The event-return queue and its task, drained at shutdown.
    event_return: Option<(
        saltq_returners::EventReturnQueue,
        tokio::task::JoinHandle<()>,
    )>,
}

/// Starts the event returners, the job cache mirror, the duties, the revoked-key closer, the
/// certificate reload and the HTTP probes, in that order.
fn start_services(
    master: &Arc<Master>,
    leadership: &Arc<dyn crate::duties::Leadership>,
    cluster: Option<Arc<crate::cluster::Cluster>>,
    (live, cert_watches): (Arc<crate::certs::Live>, crate::certs::Watches),
    (http, listeners): (Option<tokio::net::TcpListener>, &Listeners),
    shutdown: &watch::Receiver<bool>,
) -> Result<Services, StartError> {
    let event_return = start_event_returners(master, leadership)?;
    if let Some(name) = &master.cfg.master_job_cache {
        let returners = returners(master)?;
        tokio::spawn(crate::job_cache_mirror::run(
            master.clone(),
            returners,
            name.clone(),
            leadership.watch(),
        ));
    }
    let duties = tokio::spawn(crate::duties::run(
        master.clone(),
        leadership.clone(),
        shutdown.clone(),
    ));
    if !master.cfg.syndic.masters.is_empty() {
        tokio::spawn(crate::syndic::link::run(
            master.clone(),
            leadership.clone(),
            shutdown.clone(),
        ));
    }
    tokio::spawn(close_revoked(master.clone()));
    tokio::spawn(crate::mine::forget_deleted(master.clone()));
    tokio::spawn(crate::certs::watch(live, cert_watches, shutdown.clone()));
    if let Some(l) = http {
        let m = master.clone();
        let handshakes = listeners.handshakes();
        tokio::spawn(saltq_transport::http::serve(
            l,
            move |req: saltq_transport::http::Request| {
                let (m, handshakes, c) = (m.clone(), handshakes.clone(), cluster.clone());
                async move { probe(&m, &handshakes, c.as_deref(), &req).await }
            },
            shutdown.clone(),
        ));
    }
    Ok(Services {
        duties,
        event_return,
    })
}

/// The returners named by the config's `returner.*` options; an error names the file.
fn returners(master: &Master) -> Result<saltq_returners::Returners, StartError> {
    saltq_returners::Returners::from_opts(&master.cfg.returner_opts).map_err(|e| StartError {
        code: saltq_transport::config::EX_USAGE,
        error: anyhow::anyhow!("{}: {e}", master.cfg.file.display()),
    })
}

/// Starts the event-return queue and the task feeding it from the bus, if `event_return` is
/// set.
fn start_event_returners(
    master: &Arc<Master>,
    leadership: &Arc<dyn crate::duties::Leadership>,
) -> Result<
    Option<(
        saltq_returners::EventReturnQueue,
        tokio::task::JoinHandle<()>,
    )>,
    StartError,
> {
    let Some(cfg) = &master.cfg.event_return else {
        return Ok(None);
    };
    let returners = returners(master)?;
    let (queue, handle) =
        saltq_returners::EventReturnQueue::new(returners, cfg.clone()).map_err(|e| StartError {
            code: saltq_transport::config::EX_USAGE,
            error: anyhow::anyhow!("{}: key event_return: {e}", master.cfg.file.display()),
        })?;
    tokio::spawn(feed_event_returners(
        master.clone(),
        queue.clone(),
        leadership.watch(),
    ));
    Ok(Some((queue, handle)))
}

/// After the listeners stopped: ends the duties, leaves the cluster, drains the event
/// returners and writes the facts out.
async fn shut_down(
    services: Services,
    cluster: Option<&crate::cluster::Cluster>,
    master: &Arc<Master>,
) {
    services.duties.abort();
    if let Some(c) = cluster {
        c.stop().await;
    }
    if let Some((queue, handle)) = services.event_return {
        queue.close();
        let _ = handle.await;
        let s = queue.stats();
        if s.dropped > 0 {
            tracing::warn!(dropped = s.dropped, "event returners lost events");
        }
    }
    let m = master.clone();
    let _ = tokio::task::spawn_blocking(move || m.facts.flush()).await;
}

/// Ends the subscription of a minion whose key stops being accepted (deleted, rejected), at
/// once: its stream ends, it reconnects, and the key store decides again (a deleted key comes
/// back as pending, a rejected one is refused).
async fn close_revoked(master: Arc<Master>) {
    use tokio::sync::broadcast::error::RecvError;
    let mut changes = master.keys.changes();
    loop {
        match changes.recv().await {
            Ok(c) if c.state == crate::keys::KeyState::Accepted && !c.added => {
                if master.delivery.close(&c.id) {
                    tracing::info!(minion = %c.id, "key no longer accepted, subscription closed");
                }
            }
            Ok(_) => {}
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(
                    "{n} key changes missed; closing subscriptions without an accepted key"
                );
                let accepted: std::collections::HashSet<String> =
                    master.keys.accepted().into_iter().collect();
                for id in master.delivery.connected() {
                    if !accepted.contains(&id) {
                        master.delivery.close(&id);
                    }
                }
            }
            Err(RecvError::Closed) => return,
        }
    }
}

/// Removes jobs older than `keep_jobs_seconds`, hourly.
pub(crate) async fn prune_loop(master: Arc<Master>, mut shutdown: watch::Receiver<bool>) {
    let every = std::time::Duration::from_secs(3600).min(master.cfg.keep_jobs);
    loop {
        let cutoff = chrono::Utc::now()
            - chrono::Duration::from_std(master.cfg.keep_jobs).unwrap_or(chrono::Duration::days(1));
        match master.cache.prune(cutoff).await {
            Ok(n) if n > 0 => tracing::info!("pruned {n} jobs older than keep_jobs_seconds"),
            Ok(_) => {}
            Err(e) => tracing::warn!("job cache pruning failed: {e}"),
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}

/// Salt's `salt/presence/present` every `loop_interval` (60 s) when `presence_events` is on.
pub(crate) async fn presence_loop(master: Arc<Master>) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
    loop {
        tick.tick().await;
        master.events.fire(
            "salt/presence/present",
            serde_json::json!({"present": master.connected()}),
        );
    }
}

fn master_http_addr(cfg: &MasterConfig) -> Option<std::net::SocketAddr> {
    cfg.http
}

/// Answers the HTTP probes and the metrics scrape.
async fn probe(
    master: &Master,
    handshakes: &saltq_transport::server::HandshakeStats,
    cluster: Option<&crate::cluster::Cluster>,
    req: &saltq_transport::http::Request,
) -> saltq_transport::http::Reply {
    match req.path.as_str() {
        "/healthz" => (200, "text/plain", "ok\n".into()),
        "/readyz" => match master.cache.check_writable().await {
            Err(e) => (503, "text/plain", format!("job cache not writable: {e}\n")),
            Ok(()) if cluster.is_some_and(|c| !c.is_connected()) => (
                503,
                "text/plain",
                "not connected to NATS (cluster_nats)\n".into(),
            ),
            Ok(()) => (200, "text/plain", "ready\n".into()),
        },
        "/metrics"
            if master
                .cfg
                .metrics_token
                .as_deref()
                .is_some_and(|t| !req.bearer_is(t)) =>
        {
            (
                401,
                "text/plain",
                "unauthorized: /metrics needs Authorization: Bearer <metrics_token_file>\n".into(),
            )
        }
        "/metrics" => {
            let keys = master.keys.counts();
            let gauges = crate::metrics::Gauges {
                connected: master.connected_count(),
                keys: keys.iter().map(|(s, n)| (s.name(), *n)).collect(),
                cluster: cluster.map(|c| c.gauges()),
                cache_transactions: master.cache.stats().transactions,
                handshakes: crate::metrics::Handshakes::read(handshakes),
            };
            let mut text = master.metrics.render(&gauges);
            crate::metrics::render_log_suppressed(
                &mut text,
                saltq_transport::lograte::suppressed_total(),
            );
            (200, "text/plain; version=0.0.4", text)
        }
        _ => (
            404,
            "text/plain",
            "not found: try /healthz, /readyz or /metrics\n".into(),
        ),
    }
}

/// Copies every bus event into the event-return queue; never slows the bus (the queue's push
/// does not wait, and a lagging copy is counted).
///
/// In a cluster every replica's bus carries every event, so only the replica holding the
/// single-runner duties (`held`) returns them: each event once.
async fn feed_event_returners(
    master: Arc<Master>,
    queue: saltq_returners::EventReturnQueue,
    held: watch::Receiver<bool>,
) {
    let mut bus = master.events.subscribe();
    loop {
        match bus.next().await {
            Some(Ok(e)) => {
                if *held.borrow() && queue.accepts(&e.tag) {
                    queue.push(saltq_returners::Event {
                        tag: e.tag.clone(),
                        data: e.data.clone(),
                    });
                }
            }
            Some(Err(crate::events::Missed(n))) => {
                tracing::warn!("event returners fell behind the bus, {n} events not returned");
                master.events.missed(n);
            }
            None => return,
        }
    }
}
