//! The `mine-schedule` scenario (issue 28): one master and a swarm of SIZE virtual minions,
//! first idle (no mine, no schedule), then the same keys with Salt's mine every minute
//! (`mine_interval: 1`, one mine function) and a `test.ping` schedule every 60 s with a 30 s
//! `splay`. In each phase, once settled, it reads the master's CPU time and resident memory
//! over a two-minute window; then it reads the scheduled returns back from the job cache (each
//! gets its jid, the time of arrival, from the master) to see how the fires spread: per
//! second, per round, and between one minion's successive fires.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crate::fleet::{Bins, Master, minion_config};
use crate::host;
use crate::procs::{Proc, timed_output};
use crate::report::Figure;
use crate::scenarios::Ctx;
use crate::stats::{Summary, percentile};

/// How long each phase is measured, once settled.
const WINDOW: Duration = Duration::from_secs(120);
/// The schedule's period (seconds) and splay (seconds), and the mine's period (minutes).
const PERIOD_S: u64 = 60;
const SPLAY_S: u64 = 30;
const MINE_INTERVAL_MIN: u64 = 1;

/// The loaded phase's minion config: the mine and the schedule of the issue.
fn loaded_config() -> String {
    format!(
        "mine_interval: {MINE_INTERVAL_MIN}\nmine_functions:\n  test.ping: []\n\
         schedule:\n  pinger:\n    function: test.ping\n    seconds: {PERIOD_S}\n    splay: {SPLAY_S}\n"
    )
}

/// Starts the swarm with `extra` config lines (its keys under `root`, kept between phases).
fn spawn_swarm(bins: &Bins, root: &Path, n: usize, port: u16, extra: &str) -> anyhow::Result<Proc> {
    let etc = minion_config(root, "swarm-base", port)?;
    let file = etc.join("minion");
    let mut text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    text.push_str(extra);
    std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))?;
    Proc::spawn(
        Command::new(bins.minion()?)
            .arg("-c")
            .arg(&etc)
            .args(["swarm", "--count", &n.to_string()])
            .args(["--master", "127.0.0.1", "--master-port", &port.to_string()]),
        &format!("saltq-minion swarm of {n}"),
        &root.join("swarm.log"),
    )
}

/// The master over one window: CPU (percent of one core) and resident memory samples (MiB).
struct Steady {
    cpu_pct: f64,
    rss_mib: Vec<f64>,
}

/// Samples the master every 5 s for [`WINDOW`], both processes kept alive.
async fn steady(master: &mut Master, swarm: &mut Proc) -> anyhow::Result<Steady> {
    let pid = master.proc.pid();
    let (cpu0, t0) = (host::cpu_seconds(pid), Instant::now());
    let mut rss_mib = Vec::new();
    while t0.elapsed() < WINDOW {
        master.proc.check_alive()?;
        swarm.check_alive()?;
        rss_mib.push(master.proc.rss_kib()? as f64 / 1024.0);
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    let cpu_pct = (host::cpu_seconds(pid) - cpu0) / t0.elapsed().as_secs_f64() * 100.0;
    Ok(Steady { cpu_pct, rss_mib })
}

/// Waits until the master counts no connected minion (the idle swarm gone).
fn wait_disconnected(master: &Master, limit: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while master.connected()? > 0 {
        if Instant::now() > deadline {
            bail!("the idle swarm still connected after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Ok(())
}

/// When each minion's scheduled `test.ping` returns arrived (Unix seconds), from the job
/// cache's `jobs.list_jobs`.
fn fires(master: &Master, bins: &Bins) -> anyhow::Result<BTreeMap<String, Vec<f64>>> {
    let mut cmd = master.cli(bins)?;
    cmd.args([
        "run",
        "jobs.list_jobs",
        "search_function=test.ping",
        "--out",
        "json",
    ]);
    let (_, status, out) = timed_output(&mut cmd, Duration::from_secs(300))?;
    if !status.success() {
        bail!("saltq run jobs.list_jobs failed ({status})");
    }
    let jobs: serde_json::Value =
        serde_json::from_str(&out).context("jobs.list_jobs did not print JSON")?;
    let mut by_minion: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (jid, job) in jobs.as_object().context("jobs.list_jobs is not a dict")? {
        let at = saltq_semantics::Jid::parse(jid)
            .ok()
            .and_then(|j| j.timestamp())
            .with_context(|| format!("{jid} is not a jid"))?;
        let id = job["Target"].as_str().unwrap_or_default().to_owned();
        by_minion
            .entry(id)
            .or_default()
            .push(at.timestamp_micros() as f64 / 1e6);
    }
    for times in by_minion.values_mut() {
        times.sort_by(f64::total_cmp);
    }
    Ok(by_minion)
}

/// How the fires spread.
#[derive(Debug)]
struct Spread {
    /// Scheduled returns in the measured span, and the span (seconds).
    returns: usize,
    span_s: f64,
    /// Returns in the busiest second, and the mean per second over the span.
    peak_per_s: usize,
    mean_per_s: f64,
    /// The second round of fires (each minion's second fire): p5 to p95 width, seconds.
    round_p5_p95_s: Option<f64>,
    /// Seconds between a minion's successive fires: min, median, max.
    gaps_s: Option<(f64, f64, f64)>,
}

/// The fires' spread, from each minion's arrival times.
fn spread(by_minion: &BTreeMap<String, Vec<f64>>) -> Spread {
    let all: Vec<f64> = by_minion.values().flatten().copied().collect();
    let first = all.iter().copied().fold(f64::INFINITY, f64::min);
    let last = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut per_second: BTreeMap<i64, usize> = BTreeMap::new();
    for t in &all {
        *per_second.entry(t.floor() as i64).or_default() += 1;
    }
    let span_s = (last - first).max(1.0);
    let mut round: Vec<f64> = by_minion
        .values()
        .filter_map(|t| t.get(1).copied())
        .collect();
    round.sort_by(f64::total_cmp);
    let mut gaps: Vec<f64> = by_minion
        .values()
        .flat_map(|t| t.windows(2).map(|w| w[1] - w[0]))
        .collect();
    gaps.sort_by(f64::total_cmp);
    Spread {
        returns: all.len(),
        span_s,
        peak_per_s: per_second.values().copied().max().unwrap_or(0),
        mean_per_s: all.len() as f64 / span_s,
        round_p5_p95_s: (!round.is_empty())
            .then(|| percentile(&round, 95.0) - percentile(&round, 5.0)),
        gaps_s: (!gaps.is_empty())
            .then(|| (gaps[0], percentile(&gaps, 50.0), gaps[gaps.len() - 1])),
    }
}

impl Ctx {
    /// The `mine-schedule` scenario.
    pub(crate) async fn mine_schedule(&mut self, n: usize) -> anyhow::Result<()> {
        let dir = self.fresh_dir(&format!("mine-schedule-{n}"))?;
        let mut master = Master::start(&self.bins, &dir.join("master"))?;
        let swarm_root = dir.join("swarm");
        let limit = Duration::from_secs(120 + n as u64 / 20);

        // Idle: connected, nothing scheduled, the mine off.
        let started = Instant::now();
        let mut swarm = spawn_swarm(
            &self.bins,
            &swarm_root,
            n,
            master.port,
            "mine_enabled: false\n",
        )?;
        master.wait_connected(n as u64, started, limit, &mut [&mut swarm])?;
        tokio::time::sleep(Duration::from_secs(15)).await;
        let idle = steady(&mut master, &mut swarm).await?;
        swarm.stop();
        wait_disconnected(&master, Duration::from_secs(60))?;

        // Loaded: the same minions with the mine every minute and the splayed schedule.
        let started = Instant::now();
        let mut swarm = spawn_swarm(&self.bins, &swarm_root, n, master.port, &loaded_config())?;
        master.wait_connected(n as u64, started, limit, &mut [&mut swarm])?;
        // Past the start-up mine burst and the first round of fires, into the steady state.
        tokio::time::sleep(Duration::from_secs(PERIOD_S + SPLAY_S / 2)).await;
        let loaded = steady(&mut master, &mut swarm).await?;
        let mined = {
            let mut cmd = master.cli(&self.bins)?;
            cmd.args(["run", "mine.get", "*", "test.ping", "--out", "json"]);
            let (_, status, out) = timed_output(&mut cmd, Duration::from_secs(120))?;
            if !status.success() {
                bail!("saltq run mine.get failed ({status})");
            }
            let v: serde_json::Value =
                serde_json::from_str(&out).context("mine.get did not print JSON")?;
            v.as_object().map_or(0, |m| m.len())
        };
        swarm.stop();
        eprintln!(
            "  idle: master {:.1}% CPU, RSS {:?} MiB; loaded: {:.1}% CPU, RSS {:?} MiB; mine of {mined}",
            idle.cpu_pct, idle.rss_mib, loaded.cpu_pct, loaded.rss_mib
        );
        let by_minion = fires(&master, &self.bins)?;
        let s = spread(&by_minion);
        let fired = by_minion.len();
        eprintln!(
            "  idle: master {:.1}% CPU; loaded: {:.1}% CPU; {} returns from {fired} minions, \
             peak {}/s (mean {:.0}/s), mine of {mined}",
            idle.cpu_pct, loaded.cpu_pct, s.returns, s.peak_per_s, s.mean_per_s
        );
        if mined != n {
            bail!("the mine holds {mined} of {n} minions");
        }
        if fired != n {
            bail!("scheduled test.ping returned from {fired} of {n} minions");
        }

        let one = |v: f64| Summary::single(v);
        let rss = |s: &Steady| Summary::of(&s.rss_mib).unwrap_or(one(0.0));
        let fig = |metric, label: String, unit, v: Summary| {
            Figure::new("mine-schedule", n, metric, label, unit, v, None, None)
        };
        self.figures.push(
            fig(
                "idle_master_cpu_pct",
                format!("swarm of {n} idle: master CPU, steady state"),
                "% of a core",
                one(idle.cpu_pct),
            )
            .note("master CPU time over 120 s divided by 120 s"),
        );
        self.figures.push(fig(
            "mine_schedule_master_cpu_pct",
            format!(
                "swarm of {n}, mine every 60 s and test.ping every 60 s (splay 30): master CPU"
            ),
            "% of a core",
            one(loaded.cpu_pct),
        ));
        self.figures.push(
            fig(
                "idle_master_rss_mib",
                format!("swarm of {n} idle: master resident memory"),
                "MiB",
                rss(&idle),
            )
            .note("median (min–max) of samples every 5 s over 120 s"),
        );
        self.figures.push(fig(
            "mine_schedule_master_rss_mib",
            format!("swarm of {n}, mine and schedule: master resident memory"),
            "MiB",
            rss(&loaded),
        ));
        self.figures.push(
            fig(
                "schedule_peak_returns_per_s",
                format!("swarm of {n}, splay 30: scheduled returns in the busiest second"),
                "returns",
                one(s.peak_per_s as f64),
            )
            .note(format!("mean {:.0}/s over {:.0} s", s.mean_per_s, s.span_s)),
        );
        if let Some(w) = s.round_p5_p95_s {
            self.figures.push(fig(
                "schedule_round_spread_s",
                format!("swarm of {n}, splay 30: one round of fires, p5 to p95"),
                "s",
                one(w),
            ));
        }
        if let Some((lo, mid, hi)) = s.gaps_s {
            self.figures.push(fig(
                "schedule_fire_gap_s",
                format!("swarm of {n}, splay 30: between a minion's successive fires"),
                "s",
                Summary {
                    median: mid,
                    min: Some(lo),
                    max: Some(hi),
                    runs: 0,
                },
            ));
        }
        self.details.insert(
            format!("mine-schedule-{n}"),
            json!({
                "idle": {"cpu_pct": idle.cpu_pct, "rss_mib": idle.rss_mib},
                "loaded": {"cpu_pct": loaded.cpu_pct, "rss_mib": loaded.rss_mib},
                "returns": s.returns, "span_s": s.span_s, "peak_per_s": s.peak_per_s,
                "mean_per_s": s.mean_per_s, "round_p5_p95_s": s.round_p5_p95_s,
                "gaps_s": s.gaps_s, "minions_fired": fired, "mine_minions": mined,
            }),
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_counts_rounds_seconds_and_gaps() {
        let mut m = BTreeMap::new();
        m.insert("a".to_owned(), vec![100.1, 170.2, 230.0]);
        m.insert("b".to_owned(), vec![100.5, 150.0, 220.5]);
        let s = spread(&m);
        assert_eq!(s.returns, 6);
        // Two fires in second 100, one in each other.
        assert_eq!(s.peak_per_s, 2);
        let (lo, _, hi) = s.gaps_s.unwrap();
        assert!(
            (lo - 49.5).abs() < 1e-9 && (hi - 70.5).abs() < 1e-9,
            "{lo} {hi}"
        );
        assert!(s.round_p5_p95_s.unwrap() > 0.0);
    }
}
