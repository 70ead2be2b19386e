//! The `soak` scenario (issue 15): one master, SIZE minions (a swarm), many jobs (`--jobs`,
//! default 100,000) published as fast as 32 callers can, each to one minion in turn and one in
//! a hundred to all. Every 2 % of the jobs it samples the master's resident memory, its open
//! file descriptors and the job cache on disk; the slope of memory and descriptors over the
//! second half of the run (after the warm-up) says whether anything grows per job. With a
//! short `keep_jobs_seconds`, it then waits for the job cache to be pruned and reports what
//! the file shrank back to.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crate::fleet::{Master, run_job, start_swarm};
use crate::procs::status_kib;
use crate::report::Figure;
use crate::scenarios::Ctx;
use crate::stats::{Summary, slope};

/// Jobs in flight at once.
const CALLERS: usize = 32;
/// How long jobs stay in the job cache during the soak (`keep_jobs_seconds`); the master
/// prunes every this many seconds too.
const KEEP_JOBS_S: u64 = 60;

/// One sample of the master.
#[derive(Debug, Clone, Copy)]
struct Sample {
    jobs: usize,
    secs: f64,
    rss_kib: u64,
    fds: usize,
    cache_bytes: u64,
}

/// Open file descriptors of `pid`.
fn open_fds(pid: u32) -> anyhow::Result<usize> {
    let dir = format!("/proc/{pid}/fd");
    Ok(std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {dir}"))?
        .count())
}

/// The SQLite job cache with its write-ahead log, in bytes.
fn cache_bytes(root: &Path) -> u64 {
    let dir = root.join("var/cache/saltq/master");
    ["jobs.sqlite", "jobs.sqlite-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

/// What the callers count while the soak runs.
#[derive(Debug, Default)]
struct Progress {
    next: AtomicUsize,
    done: AtomicUsize,
    lost: AtomicUsize,
}

/// What the soak measured, for the report.
struct Outcome {
    total: usize,
    elapsed: f64,
    samples: Vec<Sample>,
    end: Sample,
    rss_slope: f64,
    fd_slope: f64,
    peak_cache: u64,
    /// The job cache's size once pruned, and how long after the soak that was.
    shrunk: Option<(u64, f64)>,
    after_rss: u64,
}

impl Ctx {
    /// The `soak` scenario.
    pub(crate) async fn soak(&mut self, n: usize) -> anyhow::Result<()> {
        let total = self.jobs.unwrap_or(100_000);
        let dir = self.fresh_dir(&format!("soak-{n}"))?;
        let root = dir.join("master");
        let mut master = Master::start_with(
            &self.bins,
            &root,
            &format!("keep_jobs_seconds: {KEEP_JOBS_S}\n"),
        )?;
        let pid = master.proc.pid();
        let mut swarm = start_swarm(&self.bins, &dir.join("swarm"), n, master.port)?;
        master.wait_connected(
            n as u64,
            Instant::now(),
            Duration::from_secs(120),
            &mut [&mut swarm],
        )?;
        let progress = Arc::new(Progress::default());
        let started = Instant::now();
        let callers = spawn_callers(&master, n, total, &progress).await?;
        let mut samples = Vec::new();
        let every = (total / 50).max(1);
        let mut mark = 0;
        while !callers.iter().all(|c| c.is_finished()) {
            let d = progress.done.load(Ordering::Relaxed);
            if d >= mark {
                samples.push(sample(pid, &root, d, started)?);
                mark = d + every;
            }
            master.proc.check_alive()?;
            swarm.check_alive()?;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for c in callers {
            c.await.context("a caller panicked")??;
        }
        let end = sample(pid, &root, total, started)?;
        samples.push(end);
        let lost = progress.lost.load(Ordering::Relaxed);
        if lost > 0 {
            bail!("{lost} expected returns missing after the soak");
        }
        let (rss_slope, fd_slope) = second_half_slopes(&samples, total)?;
        let shrunk = wait_pruned(&mut master, &root, end.cache_bytes).await?;
        let outcome = Outcome {
            total,
            elapsed: end.secs,
            peak_cache: samples.iter().map(|s| s.cache_bytes).max().unwrap_or(0),
            samples,
            end,
            rss_slope,
            fd_slope,
            shrunk,
            after_rss: status_kib(pid, "VmRSS:")?,
        };
        self.report_soak(n, &outcome)?;
        if shrunk.is_none() {
            bail!(
                "the job cache did not shrink within {} s of the soak's end ({} bytes)",
                3 * KEEP_JOBS_S + 30,
                cache_bytes(&root)
            );
        }
        Ok(())
    }

    /// Prints the soak's line and adds its figures and details to the report.
    fn report_soak(&mut self, n: usize, o: &Outcome) -> anyhow::Result<()> {
        let first = o.samples.first().copied().context("no samples")?;
        let (total, elapsed, end) = (o.total, o.elapsed, o.end);
        let (rss_slope, fd_slope) = (o.rss_slope, o.fd_slope);
        eprintln!(
            "  {total} jobs in {elapsed:.1} s ({:.0}/s): RSS {} -> {} KiB (slope over the second half {rss_slope:+.1} KiB per 10,000 jobs), fds {} -> {} ({fd_slope:+.2} per 10,000 jobs), job cache peak {} bytes, {} at the end, {} after pruning",
            total as f64 / elapsed,
            first.rss_kib,
            end.rss_kib,
            first.fds,
            end.fds,
            o.peak_cache,
            end.cache_bytes,
            o.shrunk.map_or("not shrunk".to_owned(), |(b, t)| format!(
                "{b} bytes {t:.0} s later"
            )),
        );
        let note = format!(
            "{total} jobs to a swarm of {n} ({CALLERS} callers, 1 in 100 to all), {:.0} jobs/s; RSS {} -> {} KiB, {} KiB after the idle wait; fds {} -> {}; keep_jobs_seconds {KEEP_JOBS_S}",
            total as f64 / elapsed,
            first.rss_kib,
            end.rss_kib,
            o.after_rss,
            first.fds,
            end.fds
        );
        for (name, what, unit, v) in [
            (
                "soak_rss_slope_kib_per_10k_jobs",
                "master resident memory, slope over the second half of the soak",
                "KiB per 10,000 jobs",
                rss_slope,
            ),
            (
                "soak_fd_slope_per_10k_jobs",
                "master open file descriptors, slope over the second half of the soak",
                "fds per 10,000 jobs",
                fd_slope,
            ),
            (
                "soak_job_cache_end_mib",
                "job cache on disk at the end of the soak",
                "MiB",
                end.cache_bytes as f64 / 1_048_576.0,
            ),
        ] {
            self.figures.push(
                Figure::new(
                    "soak",
                    n,
                    name,
                    what.to_owned(),
                    unit,
                    Summary::single(v),
                    None,
                    None,
                )
                .note(note.clone()),
            );
        }
        if let Some((bytes, t)) = o.shrunk {
            self.figures.push(Figure::new(
                "soak",
                n,
                "soak_job_cache_pruned_mib",
                format!("job cache on disk once the soak's jobs were pruned ({t:.0} s after)"),
                "MiB",
                Summary::single(bytes as f64 / 1_048_576.0),
                None,
                None,
            ));
        }
        self.details.insert(
            format!("soak-{n}"),
            json!({
                "jobs": total,
                "seconds": elapsed,
                "samples": o.samples.iter().map(|s| json!({
                    "jobs": s.jobs, "secs": s.secs, "rss_kib": s.rss_kib, "fds": s.fds,
                    "cache_bytes": s.cache_bytes,
                })).collect::<Vec<_>>(),
                "rss_slope_kib_per_10k": rss_slope,
                "fd_slope_per_10k": fd_slope,
                "cache_after_prune": o.shrunk.map(|(b, t)| json!({"bytes": b, "after_s": t})),
            }),
        );
        Ok(())
    }
}

/// Starts the callers: each takes the next job number until `total`, sends it to one minion
/// in turn (one in a hundred to all) and counts returns that did not come.
async fn spawn_callers(
    master: &Master,
    n: usize,
    total: usize,
    progress: &Arc<Progress>,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<anyhow::Result<()>>>> {
    let width = n.to_string().len().max(5);
    let mut callers = Vec::new();
    for _ in 0..CALLERS {
        let mut client = master.client().await?;
        let progress = progress.clone();
        callers.push(tokio::spawn(async move {
            loop {
                let i = progress.next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return anyhow::Ok(());
                }
                let (tgt, expect) = if i % 100 == 99 {
                    ("*".to_owned(), n as u32)
                } else {
                    (format!("swarm-{:0width$}", i % n), 1)
                };
                let o = run_job(&mut client, &tgt, "test.ping", 30.0).await?;
                if o.returned != expect {
                    progress.lost.fetch_add(
                        (expect - o.returned.min(expect)) as usize,
                        Ordering::Relaxed,
                    );
                }
                progress.done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    Ok(callers)
}

/// The master's memory, descriptors and job cache after `jobs` jobs.
fn sample(pid: u32, root: &Path, jobs: usize, started: Instant) -> anyhow::Result<Sample> {
    Ok(Sample {
        jobs,
        secs: started.elapsed().as_secs_f64(),
        rss_kib: status_kib(pid, "VmRSS:")?,
        fds: open_fds(pid)?,
        cache_bytes: cache_bytes(root),
    })
}

/// Memory and descriptor slopes per 10,000 jobs over the second half, once the warm-up
/// (caches, buffers, the allocator's arenas) is over.
fn second_half_slopes(samples: &[Sample], total: usize) -> anyhow::Result<(f64, f64)> {
    let half: Vec<&Sample> = samples.iter().filter(|s| s.jobs >= total / 2).collect();
    let xs: Vec<f64> = half.iter().map(|s| s.jobs as f64 / 10_000.0).collect();
    let of = |f: fn(&Sample) -> f64| half.iter().map(|s| f(s)).collect::<Vec<_>>();
    let rss = slope(&xs, &of(|s| s.rss_kib as f64)).context("too few samples for a slope")?;
    let fds = slope(&xs, &of(|s| s.fds as f64)).context("too few samples for a slope")?;
    Ok((rss, fds))
}

/// Waits for the job cache to shrink below a quarter of `end_bytes`: pruning runs every
/// KEEP_JOBS_S, and every soak job is older than that after one more period and a margin.
async fn wait_pruned(
    master: &mut Master,
    root: &Path,
    end_bytes: u64,
) -> anyhow::Result<Option<(u64, f64)>> {
    let idle_started = Instant::now();
    let deadline = idle_started + Duration::from_secs(3 * KEEP_JOBS_S + 30);
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(2)).await;
        master.proc.check_alive()?;
        let bytes = cache_bytes(root);
        if bytes < end_bytes / 4 {
            return Ok(Some((bytes, idle_started.elapsed().as_secs_f64())));
        }
    }
    Ok(None)
}
