//! Benchmark: stores N returns (default 100,000) from W concurrent writers (default 256) and
//! prints returns per second, transactions and per-call latency. SQLite in a temporary folder;
//! PostgreSQL too when `SALTQ_BENCH_POSTGRES` holds a connection string (a throwaway schema).
//!
//! `cargo run --release -p saltq-jobcache --example bench_returns -- [N] [WRITERS]`

use std::error::Error;
use std::time::{Duration, Instant};

use chrono::Utc;
use saltq_jobcache::{CacheConfig, JobCache, JobRecord, ReturnRecord, StoreOutcome};
use serde_json::json;

/// Minions per job: returns are spread over N / this many jobs.
const MINIONS_PER_JOB: usize = 1_000;

/// What one run measured.
struct Run {
    elapsed: Duration,
    transactions: u64,
    latencies: Vec<Duration>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error + Send + Sync>> {
    let mut args = std::env::args().skip(1);
    let parse = |arg: Option<String>, default: usize, what: &str| -> Result<usize, String> {
        arg.map_or(Ok(default), |a| {
            a.parse()
                .map_err(|_| format!("{what} must be a positive integer, not {a:?}"))
        })
    };
    let (returns, writers) = match (
        parse(args.next(), 100_000, "N"),
        parse(args.next(), 256, "WRITERS"),
    ) {
        (Ok(n), Ok(w)) if n > 0 && w > 0 => (n, w),
        (Err(e), _) | (_, Err(e)) => usage(&e),
        _ => usage("N and WRITERS must be positive"),
    };

    let dir = tempfile::tempdir()?;
    let sqlite = CacheConfig::Sqlite {
        path: dir.path().join("cache.db"),
    };
    report(
        "sqlite",
        returns,
        writers,
        &run(&sqlite, returns, writers).await?,
    );

    if let Ok(url) = std::env::var("SALTQ_BENCH_POSTGRES") {
        let schema = format!("saltq_bench_{}", std::process::id());
        let postgres = CacheConfig::Postgres {
            url: url.clone(),
            schema: Some(schema.clone()),
        };
        let result = run(&postgres, returns, writers).await;
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
            .await?;
        report("postgres", returns, writers, &result?);
    }
    Ok(())
}

/// Prints how to call this and exits with 64 (bad usage).
fn usage(problem: &str) -> ! {
    eprintln!("bench_returns: {problem}\nusage: bench_returns [N] [WRITERS]");
    std::process::exit(64);
}

/// Saves the jobs, then has `writers` tasks store `returns` returns between them.
async fn run(
    cfg: &CacheConfig,
    returns: usize,
    writers: usize,
) -> Result<Run, Box<dyn Error + Send + Sync>> {
    let cache = JobCache::open(cfg).await?;
    let start_time = Utc::now();
    let jids: Vec<String> = (0..returns.div_ceil(MINIONS_PER_JOB))
        .map(|n| format!("{}{n:06}", start_time.format("%Y%m%d%H%M%S")))
        .collect();
    for jid in &jids {
        let job = JobRecord {
            jid: jid.clone(),
            load: json!({"fun": "cmd.run", "arg": ["uptime"], "tgt": "*", "tgt_type": "glob", "user": "root"}),
            minions: (0..MINIONS_PER_JOB)
                .map(|m| format!("minion-{m:04}"))
                .collect(),
            start_time,
        };
        cache.save_job(&job).await?;
    }

    let before = cache.stats().transactions;
    let started = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let cache = cache.clone();
            let jids = jids.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                for n in (w..returns).step_by(writers) {
                    let ret = ReturnRecord {
                        jid: jids[n / MINIONS_PER_JOB].clone(),
                        id: format!("minion-{:04}", n % MINIONS_PER_JOB),
                        fun: json!("cmd.run"),
                        fun_args: json!(["uptime"]),
                        ret: json!(
                            " 12:00:00 up 42 days,  3:14,  0 users,  load average: 0.01, 0.05, 0.00"
                        ),
                        retcode: 0,
                        success: true,
                        out: None,
                        metadata: None,
                        stored_at: Utc::now(),
                    };
                    let call = Instant::now();
                    let outcome = cache.store_return(ret).await?;
                    latencies.push(call.elapsed());
                    if outcome != StoreOutcome::Stored {
                        return Err(format!("return {n} was not stored: {outcome:?}").into());
                    }
                }
                Ok::<_, Box<dyn Error + Send + Sync>>(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(returns);
    for task in tasks {
        latencies.extend(task.await??);
    }
    let elapsed = started.elapsed();
    let transactions = cache.stats().transactions - before;
    cache.close().await;
    latencies.sort();
    Ok(Run {
        elapsed,
        transactions,
        latencies,
    })
}

/// Prints one run's figures.
fn report(backend: &str, returns: usize, writers: usize, run: &Run) {
    let percentile = |p: usize| {
        run.latencies
            .get((run.latencies.len() * p / 100).min(run.latencies.len().saturating_sub(1)))
    };
    let ms = |d: Option<&Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1e3);
    println!(
        "{backend}: {returns} returns from {writers} writers in {:.2} s = {:.0} returns/s; \
         {} transactions (avg {:.0} returns each); latency p50 {:.2} ms, p99 {:.2} ms",
        run.elapsed.as_secs_f64(),
        returns as f64 / run.elapsed.as_secs_f64(),
        run.transactions,
        returns as f64 / run.transactions.max(1) as f64,
        ms(percentile(50)),
        ms(percentile(99)),
    );
}
