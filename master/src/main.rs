//! `saltq-master`: reads `DIR/master`, sets up logging, runs the master until SIGTERM or Ctrl-C.

mod acl;
mod certs;
mod cluster;
mod config;
mod delivery;
mod duties;
mod events;
mod ext_pillar;
mod facts;
mod follow;
mod jids;
mod job_cache_mirror;
mod keys;
mod load;
mod metrics;
mod mine;
mod minion_data;
mod netapi;
mod orchestrate;
mod pillar;
mod reactor;
mod returns;
mod run;
mod runners;
mod schedule;
mod service;
mod state;
mod syndic;
mod tags;
mod tracker;
mod wheel;

use std::path::PathBuf;

use clap::Parser;

/// jemalloc instead of glibc's malloc: the master allocates and frees small buffers for every
/// datagram, message and event, from many threads; with glibc `malloc`/`free` took 14-22 % of
/// its CPU in profiles, and jemalloc cut the CPU per job by 18 % (BENCHMARKS.md).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The saltq master: publishes jobs to minions over QUIC and stores their returns.
#[derive(Parser)]
#[command(name = "saltq-master", version)]
struct Args {
    /// Config directory; the master reads DIR/master.
    #[arg(short = 'c', long = "config-dir", default_value = config::DEFAULT_CONFIG_DIR, env = "SALTQ_CONFIG_DIR")]
    config_dir: PathBuf,
    /// Log level: quiet, critical, error, warning, info, debug, trace (overrides log_level).
    #[arg(short = 'l', long = "log-level")]
    log_level: Option<String>,
    /// Log as JSON lines.
    #[arg(long = "log-json")]
    log_json: bool,
    /// Print what saltq does with each key of the config (Salt's files as Salt reads them)
    /// and exit: 0 when the daemon would start with it, 64 when not.
    #[arg(long = "check-config")]
    check_config: bool,
}

fn main() {
    // salt-api's pam eauth checks each password in a child process of this binary.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == saltq_netapi::pam::HELPER_ARG)
    {
        std::process::exit(saltq_netapi::pam::helper_main());
    }
    let args = Args::parse();
    if args.check_config {
        std::process::exit(config::check(&args.config_dir));
    }
    let mut cfg = match config::MasterConfig::load(&args.config_dir) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("saltq-master: {e}");
            std::process::exit(e.exit_code());
        }
    };
    if let Some(level) = args.log_level {
        if let Err(e) = config::check_log_level(&level) {
            eprintln!("saltq-master: -l/--log-level: {e}");
            std::process::exit(saltq_transport::config::EX_USAGE);
        }
        cfg.log_level = level;
    }
    // Salt's `user`: the account is looked up, the master's directories and its log file are
    // given to it, then the process switches to it before the runtime starts and binds.
    let run_as = match cfg.user.as_deref().map(saltq_transport::config::run_as) {
        None | Some(Ok(None)) => None,
        Some(Ok(Some(r))) => Some(r),
        Some(Err((code, e))) => {
            eprintln!("saltq-master: user: {e}");
            std::process::exit(code);
        }
    };
    if let Some(r) = &run_as
        && let Err(e) = r.prepare_dirs(&[cfg.pki_dir.clone(), cfg.cachedir.clone()])
    {
        eprintln!("saltq-master: user: {e}");
        std::process::exit(saltq_transport::config::EX_NOPERM);
    }
    let owner = run_as.as_ref().map(saltq_transport::config::RunAs::owner);
    let logging = match saltq_transport::config::Logging::prepare(
        &cfg.log_level,
        args.log_json,
        &cfg.log,
        owner,
    ) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("saltq-master: {e}");
            std::process::exit(saltq_transport::config::EX_CANTCREAT);
        }
    };
    if let Some(r) = &run_as
        && let Err(e) = r.switch()
    {
        eprintln!("saltq-master: {e}");
        std::process::exit(saltq_transport::config::EX_NOPERM);
    }
    // Rate-limited per kind of message: no peer's repeated input can fill the disk.
    logging.rate_limited().install();
    cfg.salt.log();
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("saltq-master: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = rt.block_on(async {
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            saltq_transport::config::shutdown_signal().await;
            tracing::info!("shutting down");
            let _ = tx.send(true);
        });
        match run::run(cfg, rx).await {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("saltq-master: {:#}", e.error);
                e.code
            }
        }
    });
    std::process::exit(code);
}
