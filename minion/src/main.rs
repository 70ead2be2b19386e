//! `saltq-minion`: reads `DIR/minion`, sets up logging, and runs the minion until SIGTERM or
//! Ctrl-C.

mod backoff;
mod beacon_driver;
mod call;
mod config;
mod daemon;
mod files;
mod identity;
mod jobs;
mod link;
mod masterless;
mod mine;
mod multi;
mod pillar_ext;
mod reaper;
mod renewal;
mod schedule;
mod subscribe;
mod swarm;

use std::path::PathBuf;

use clap::Parser;

/// jemalloc with the `jemalloc` feature (for `saltq-minion swarm`, see Cargo.toml); else the
/// system's malloc.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The saltq minion: subscribes to its master over QUIC and runs the jobs it is sent.
#[derive(Parser)]
#[command(name = "saltq-minion", version)]
struct Args {
    /// Config directory; the minion reads DIR/minion.
    #[arg(short = 'c', long = "config-dir", default_value = config::DEFAULT_CONFIG_DIR, env = "SALTQ_CONFIG_DIR")]
    config_dir: PathBuf,
    /// Log level: quiet, critical, error, warning, info, debug, trace (overrides log_level).
    #[arg(short = 'l', long = "log-level")]
    log_level: Option<String>,
    /// Log as JSON lines.
    #[arg(long = "log-json")]
    log_json: bool,
    /// Print what saltq does with each key of the config (Salt's files as Salt reads them)
    /// and exit: 0 when the minion would start with it, 64 when not.
    #[arg(long = "check-config")]
    check_config: bool,
    /// Minion id, overriding `id` in the config (e.g. the Kubernetes node name).
    #[arg(long = "id", env = "SALTQ_MINION_ID", global = true)]
    id: Option<String>,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Clone, clap::Subcommand)]
enum Cmd {
    /// Run one function on this host, as salt-call.
    Call(call::CallArgs),
    /// Run N virtual minions in this process, to load-test a master.
    Swarm(swarm::SwarmArgs),
    /// Internal: the reaper the minion starts beside itself (see reaper.rs).
    #[command(name = reaper::SUBCOMMAND, hide = true)]
    Reap,
}

fn main() {
    let args = Args::parse();
    if args.check_config {
        std::process::exit(config::check(&args.config_dir, args.id.clone()));
    }
    if let Some(Cmd::Reap) = args.cmd {
        // Needs no config: it only reads its pipe from the minion.
        std::process::exit(reaper::serve());
    }
    let mut cfg = match config::MinionConfig::load(&args.config_dir, args.id.clone()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("saltq-minion: {e}");
            std::process::exit(e.exit_code());
        }
    };
    if let Some(level) = args.log_level {
        cfg.log_level = level;
    }
    if let Some(Cmd::Call(call_args)) = args.cmd.clone() {
        // salt-call logs only problems unless asked for more.
        init_logging(&cfg, args.log_json);
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("saltq-minion: cannot start the runtime: {e}");
                std::process::exit(1);
            }
        };
        std::process::exit(rt.block_on(call::run(cfg, call_args)));
    }
    init_logging(&cfg, args.log_json);
    cfg.salt.log();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("saltq-minion: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = rt.block_on(async {
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            saltq_transport::config::shutdown_signal().await;
            let _ = tx.send(true);
        });
        let res = match args.cmd {
            Some(Cmd::Swarm(a)) => {
                // N virtual minions hold a socket each; one minion holds a few and leaves the
                // limit its jobs' programs inherit alone.
                saltq_transport::rlimit::raise_nofile_limit_logged();
                swarm::run(cfg, a, rx).await
            }
            _ => daemon::run(cfg, rx).await,
        };
        match res {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("saltq-minion: {e:#}");
                saltq_transport::config::EX_CANTCREAT
            }
        }
    });
    std::process::exit(code);
}

/// The console and Salt's logging keys (`log_file`, ...); a log file that cannot be opened
/// stops the minion, naming it.
fn init_logging(cfg: &config::MinionConfig, json: bool) {
    match saltq_transport::config::Logging::prepare(&cfg.log_level, json, &cfg.log, None) {
        Ok(logging) => logging.install(),
        Err(e) => {
            eprintln!("saltq-minion: {e}");
            std::process::exit(saltq_transport::config::EX_CANTCREAT);
        }
    }
}
