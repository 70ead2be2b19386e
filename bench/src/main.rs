//! `saltq-bench [SCENARIO [SIZE]]`: runs issue 7's benchmark scenarios against the release
//! binaries on loopback, beside Salt 3007.8, prints a Markdown table and writes JSON.
//! `scripts/bench` builds everything first and calls this.

mod cluster;
mod fleet;
mod flood;
mod host;
mod mine_schedule;
mod pillar_fleet;
mod procs;
mod report;
mod restart;
mod salt;
mod saltapi;
mod scenarios;
mod soak;
mod states;
mod stats;
mod syndic;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use serde_json::json;

use crate::fleet::Bins;
use crate::salt::SaltPeer;
use crate::scenarios::{ALL, Ctx, Scenario};

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "saltq-bench",
    about = "saltq's benchmarks beside Salt 3007.8: every scenario, or one with its size"
)]
struct Args {
    /// Run only this scenario (all when omitted).
    #[arg(value_enum)]
    scenario: Option<Scenario>,
    /// The scenario's size in minions (default: cli/rpc/minion-rss 1, swarm/returns 1000).
    size: Option<usize>,
    /// Repetitions per scenario, overriding each scenario's default.
    #[arg(long)]
    runs: Option<usize>,
    /// Jobs the soak scenario publishes (default 100,000).
    #[arg(long)]
    jobs: Option<usize>,
    /// Connections the flood scenario opens, half idle and half slowloris (default 5,000).
    #[arg(long)]
    flood: Option<usize>,
    /// How long the flood scenario's flood lasts, in seconds (default 30).
    #[arg(long)]
    flood_secs: Option<u64>,
    /// Salt's side: the salt-peer script.
    #[arg(
        long,
        env = "SALTQ_BENCH_SALT_PEER",
        default_value = "../shared/bench/salt-peer"
    )]
    salt_peer: PathBuf,
    /// Repetitions salt-peer makes of each measurement.
    #[arg(long, default_value_t = 10)]
    salt_runs: usize,
    /// Measure saltq only.
    #[arg(long)]
    no_salt: bool,
    /// Where the release binaries are.
    #[arg(long, default_value = "target/release")]
    bin_dir: PathBuf,
    /// Measure this saltq-master instead of the one in the binaries' folder: an older build,
    /// to show a change's effect beside the current one in the same run conditions.
    #[arg(long)]
    master_bin: Option<PathBuf>,
    /// Where saltq-minion is (built with `--profile minion`, as shipped).
    #[arg(long, default_value = "target/minion")]
    minion_bin_dir: PathBuf,
    /// Where results and scratch files go.
    #[arg(long, default_value = "target/bench")]
    out_dir: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    // Interrupted: stop every process started, from a thread of its own, whatever the run is
    // doing, then exit.
    std::thread::spawn(|| {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut int), Ok(mut term)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) else {
                return;
            };
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            eprintln!("saltq-bench: interrupted; stopping every process it started");
            procs::stop_all();
            std::process::exit(130);
        });
    });
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("saltq-bench: cannot start the runtime: {e}");
            return ExitCode::from(70);
        }
    };
    match rt.block_on(run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("saltq-bench: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Runs the scenarios; `Ok(false)` when one of them failed (the others still ran).
async fn run(args: Args) -> anyhow::Result<bool> {
    let plan: Vec<(Scenario, usize)> = match args.scenario {
        Some(s) => vec![(s, args.size.unwrap_or(s.default_size()))],
        None => ALL.to_vec(),
    };
    let out_dir = std::path::absolute(&args.out_dir)?;
    let work = out_dir.join("work");
    std::fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
    let salt_script = if args.no_salt {
        None
    } else if args.salt_peer.is_file() {
        Some(std::path::absolute(&args.salt_peer)?)
    } else {
        eprintln!(
            "saltq-bench: no salt-peer at {} (set SALTQ_BENCH_SALT_PEER); measuring saltq only",
            args.salt_peer.display()
        );
        None
    };
    let mut ctx = Ctx {
        bins: Bins {
            dir: std::path::absolute(&args.bin_dir)?,
            minion_dir: std::path::absolute(&args.minion_bin_dir)?,
            master: args
                .master_bin
                .as_deref()
                .map(std::path::absolute)
                .transpose()?,
        },
        salt: SaltPeer::new(salt_script, args.salt_runs, &work),
        work,
        runs: args.runs,
        jobs: args.jobs,
        flood_connections: args.flood,
        flood_secs: args.flood_secs,
        figures: Vec::new(),
        details: serde_json::Map::new(),
        scratch: None,
    };
    let results = match args.scenario {
        Some(s) => out_dir.join(format!("{}-{}.json", s.name(), plan[0].1)),
        None => out_dir.join("results.json"),
    };
    let machine = machine();
    let started = unix_now();
    let mut failures = Vec::new();
    for &(s, size) in &plan {
        if let Err(e) = ctx.run(s, size).await {
            eprintln!("saltq-bench: {} {size} failed: {e:#}", s.name());
            failures.push(json!({ "scenario": s.name(), "size": size, "error": format!("{e:#}") }));
        }
        // Written after every scenario, so a later failure keeps what was measured.
        let doc = json!({
            "started": started, "machine": machine, "figures": ctx.figures,
            "failures": failures, "salt": ctx.salt.report(), "details": ctx.details,
        });
        std::fs::write(&results, serde_json::to_string_pretty(&doc)?)
            .with_context(|| format!("cannot write {}", results.display()))?;
    }
    println!("{}", report::table(&ctx.figures));
    for f in &ctx.figures {
        if let Some(n) = &f.note {
            println!("- {}: {n}", f.label);
        }
    }
    for f in &failures {
        println!("FAILED: {} {}: {}", f["scenario"], f["size"], f["error"]);
    }
    println!("\nresults: {}", results.display());
    Ok(failures.is_empty())
}

/// Seconds since the Unix epoch, for the report.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What the figures were measured on.
fn machine() -> serde_json::Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_gib = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map(|kib| (kib / 1024.0 / 1024.0 * 10.0).round() / 10.0);
    let cmd = |c: &str, a: &[&str]| {
        std::process::Command::new(c)
            .args(a)
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    json!({
        "cpu": cpu, "cores": cores, "memory_gib": mem_gib,
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "load_at_start": host::load(),
        "rustc": cmd("rustc", &["-V"]),
        "commit": cmd("git", &["rev-parse", "--short", "HEAD"]),
        "dirty": cmd("git", &["status", "--porcelain"]).map(|s| !s.is_empty()),
    })
}
