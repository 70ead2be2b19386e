//! `saltq-minion swarm --count N`: N virtual minions in one process, for load-testing a master
//! (as Salt's minionswarm). Each has its own key, certificate, QUIC connection and subscription,
//! and answers jobs through the real execution path; they share one UDP socket and one set of
//! computed grains.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::config::{MasterAddr, MinionConfig};
use crate::daemon::{self, Shared};

/// The swarm's flags.
#[derive(Debug, Clone, clap::Args)]
pub struct SwarmArgs {
    /// How many minions.
    #[arg(long)]
    pub count: usize,
    /// Minion ids are PREFIX followed by a zero-padded number.
    #[arg(long, default_value = "swarm-")]
    pub prefix: String,
    /// The first number.
    #[arg(long, default_value_t = 0)]
    pub start: usize,
    /// Master host, in place of the config's master or list of masters.
    #[arg(long)]
    pub master: Option<String>,
    /// Master port, overriding the config's (for every listed master).
    #[arg(long)]
    pub master_port: Option<u16>,
    /// Minions started per second (0: all at once).
    #[arg(long, default_value_t = 0)]
    pub ramp: usize,
}

fn raise_fd_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

/// Runs the swarm until `shutdown` turns true.
pub async fn run(
    base: MinionConfig,
    a: SwarmArgs,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    if a.count == 0 {
        anyhow::bail!("--count must be at least 1");
    }
    raise_fd_limit();
    let endpoint = saltq_transport::shared_endpoint(false)?;
    let shared = Shared {
        endpoint: Some(endpoint),
        grains: Some(base.compute_grains()),
        reaper: daemon::start_reaper(),
    };
    let width = (a.start + a.count).to_string().len().max(5);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in a.start..a.start + a.count {
        let mut cfg = base.clone();
        cfg.id = format!("{}{i:0width$}", a.prefix);
        cfg.pki_dir = base.pki_dir.join("swarm").join(&cfg.id);
        cfg.health = None;
        if let Some(m) = &a.master {
            // One master, in place of the config's list.
            cfg.masters = vec![MasterAddr {
                host: m.clone(),
                port: a.master_port.unwrap_or(base.master_port),
            }];
        } else if let Some(p) = a.master_port {
            for m in &mut cfg.masters {
                m.port = p;
            }
        }
        if let serde_json::Value::Object(o) = &mut cfg.opts {
            o.insert("id".into(), serde_json::Value::String(cfg.id.clone()));
        }
        let (shared, stop) = (shared.clone(), shutdown.clone());
        tasks.spawn(async move {
            let id = cfg.id.clone();
            if let Err(e) = daemon::run_with(cfg, stop, shared).await {
                tracing::error!(minion = %id, "{e:#}");
            }
        });
        if a.ramp > 0 && (i - a.start + 1).is_multiple_of(a.ramp) {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    let allocator = if cfg!(feature = "jemalloc") {
        "jemalloc"
    } else {
        "the system's malloc"
    };
    tracing::info!(count = a.count, elapsed = ?started.elapsed(), allocator, "swarm started");
    while tasks.join_next().await.is_some() {}
    Ok(())
}
