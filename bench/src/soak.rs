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
        let width = n.to_string().len().max(5);
        let next = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let lost = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let mut callers = Vec::new();
        for _ in 0..CALLERS {
            let mut client = master.client().await?;
            let (next, done, lost) = (next.clone(), done.clone(), lost.clone());
            callers.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
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
                        lost.fetch_add(
                            (expect - o.returned.min(expect)) as usize,
                            Ordering::Relaxed,
                        );
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        let every = (total / 50).max(1);
        let mut samples = Vec::new();
        let mut mark = 0;
        loop {
            let d = done.load(Ordering::Relaxed);
            if d >= mark {
                samples.push(Sample {
                    jobs: d,
                    secs: started.elapsed().as_secs_f64(),
                    rss_kib: status_kib(pid, "VmRSS:")?,
                    fds: open_fds(pid)?,
                    cache_bytes: cache_bytes(&root),
                });
                mark = d + every;
            }
            if callers.iter().all(|c| c.is_finished()) {
                break;
            }
            master.proc.check_alive()?;
            swarm.check_alive()?;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for c in callers {
            c.await.context("a caller panicked")??;
        }
        let elapsed = started.elapsed().as_secs_f64();
        let end = Sample {
            jobs: total,
            secs: elapsed,
            rss_kib: status_kib(pid, "VmRSS:")?,
            fds: open_fds(pid)?,
            cache_bytes: cache_bytes(&root),
        };
        samples.push(end);
        let lost = lost.load(Ordering::Relaxed);
        if lost > 0 {
            bail!("{lost} expected returns missing after the soak");
        }
        // The second half: the warm-up (caches, buffers, the allocator's arenas) is over.
        let half: Vec<&Sample> = samples.iter().filter(|s| s.jobs >= total / 2).collect();
        let xs: Vec<f64> = half.iter().map(|s| s.jobs as f64 / 10_000.0).collect();
        let rss_slope = slope(
            &xs,
            &half.iter().map(|s| s.rss_kib as f64).collect::<Vec<_>>(),
        )
        .context("too few samples for a slope")?;
        let fd_slope = slope(&xs, &half.iter().map(|s| s.fds as f64).collect::<Vec<_>>())
            .context("too few samples for a slope")?;
        let peak_cache = samples.iter().map(|s| s.cache_bytes).max().unwrap_or(0);
        // Pruning runs every KEEP_JOBS_S; every soak job is older than that after one more
        // period and a margin.
        let idle_started = Instant::now();
        let deadline = idle_started + Duration::from_secs(3 * KEEP_JOBS_S + 30);
        let mut shrunk = None;
        while Instant::now() < deadline {
            tokio::time::sleep(Duration::from_secs(2)).await;
            master.proc.check_alive()?;
            let bytes = cache_bytes(&root);
            if bytes < end.cache_bytes / 4 {
                shrunk = Some((bytes, idle_started.elapsed().as_secs_f64()));
                break;
            }
        }
        let after_rss = status_kib(pid, "VmRSS:")?;
        let first = samples.first().copied().context("no samples")?;
        eprintln!(
            "  {total} jobs in {elapsed:.1} s ({:.0}/s): RSS {} -> {} KiB (slope over the second half {rss_slope:+.1} KiB per 10,000 jobs), fds {} -> {} ({fd_slope:+.2} per 10,000 jobs), job cache peak {peak_cache} bytes, {} at the end, {} after pruning",
            total as f64 / elapsed,
            first.rss_kib,
            end.rss_kib,
            first.fds,
            end.fds,
            end.cache_bytes,
            shrunk.map_or("not shrunk".to_owned(), |(b, t)| format!(
                "{b} bytes {t:.0} s later"
            )),
        );
        let note = format!(
            "{total} jobs to a swarm of {n} ({CALLERS} callers, 1 in 100 to all), {:.0} jobs/s; RSS {} -> {} KiB, {} KiB after the idle wait; fds {} -> {}; keep_jobs_seconds {KEEP_JOBS_S}",
            total as f64 / elapsed,
            first.rss_kib,
            end.rss_kib,
            after_rss,
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
        if let Some((bytes, t)) = shrunk {
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
                "samples": samples.iter().map(|s| json!({
                    "jobs": s.jobs, "secs": s.secs, "rss_kib": s.rss_kib, "fds": s.fds,
                    "cache_bytes": s.cache_bytes,
                })).collect::<Vec<_>>(),
                "rss_slope_kib_per_10k": rss_slope,
                "fd_slope_per_10k": fd_slope,
                "cache_after_prune": shrunk.map(|(b, t)| json!({"bytes": b, "after_s": t})),
            }),
        );
        if shrunk.is_none() {
            bail!(
                "the job cache did not shrink within {} s of the soak's end ({} bytes)",
                3 * KEEP_JOBS_S + 30,
                cache_bytes(&root)
            );
        }
        Ok(())
    }
}
