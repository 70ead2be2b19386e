//! The scenarios of issue 7. Each starts its own processes from the release binaries, measures,
//! stops them, and adds its figures (with Salt's from the same run where Salt can run that size).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crate::fleet::{Bins, Master, run_job, start_minion, start_swarm};
use crate::host;
use crate::procs::{Proc, status_kib, timed_output};
use crate::report::{Figure, Target};
use crate::salt::SaltPeer;
use crate::stats::{Summary, percentile};

/// A scenario, run alone as `saltq-bench SCENARIO [SIZE]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// `saltq '*' test.ping` with SIZE minion processes (whole command), beside `salt`.
    Cli,
    /// The Run RPC round trip with SIZE minion processes, p50 and p99.
    Rpc,
    /// One idle minion process's resident memory.
    MinionRss,
    /// A swarm of SIZE virtual minions: connect from cold, publish to all returned, master RSS.
    Swarm,
    /// Returns stored per second: the job cache alone, and through the master from a swarm.
    Returns,
    /// Publishing to a swarm of SIZE: how long the master takes to publish (glob and grain
    /// targets), and how long a call needing the connected set waits meanwhile.
    Publish,
    /// One replica against three of a cluster (PostgreSQL and NATS on this machine), a swarm
    /// of SIZE spread over them: all returned, publish rate, NATS messages per job.
    Cluster,
    /// `state.apply` of a 50-state tree through the CLI, one minion, beside Salt.
    States,
    /// salt-api `POST /` `test.ping`, one minion: latency and requests per second, beside
    /// Salt's salt-api.
    Saltapi,
    /// The master SIGKILLed and restarted with SIZE minions: how long until all answer again.
    Restart,
    /// One master, a swarm of SIZE, `--jobs` jobs (default 100,000): memory and descriptor
    /// slopes, and the job cache shrinking back after `keep_jobs_seconds`.
    Soak,
    /// salt-api under a flood of idle and slowloris connections (`--flood`, default 5,000),
    /// beside Salt's salt-api, then saltq's HTTP/2 port under it while a swarm of SIZE answers
    /// over QUIC.
    Flood,
    /// A swarm of SIZE idle, then with the mine every 60 s and a splayed 60 s `test.ping`
    /// schedule: master CPU and memory in steady state, and how the fires spread.
    MineSchedule,
    /// A top master and 2 syndics with a swarm of SIZE each, `'*' test.ping`, beside one
    /// master with a swarm of 2 × SIZE.
    Syndic,
    /// A swarm of SIZE connecting and reconnecting to a master whose pillar is 50 Jinja SLS
    /// with includes, beside the same data as plain YAML and no pillar (issue 33).
    PillarFleet,
}

impl Scenario {
    /// The name on the command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Cli => "cli",
            Scenario::Rpc => "rpc",
            Scenario::MinionRss => "minion-rss",
            Scenario::Swarm => "swarm",
            Scenario::Returns => "returns",
            Scenario::Publish => "publish",
            Scenario::Cluster => "cluster",
            Scenario::States => "states",
            Scenario::Saltapi => "saltapi",
            Scenario::Restart => "restart",
            Scenario::Soak => "soak",
            Scenario::Flood => "flood",
            Scenario::MineSchedule => "mine-schedule",
            Scenario::Syndic => "syndic",
            Scenario::PillarFleet => "pillar-fleet",
        }
    }

    /// The size when none is given.
    pub fn default_size(self) -> usize {
        match self {
            Scenario::Cli
            | Scenario::Rpc
            | Scenario::MinionRss
            | Scenario::States
            | Scenario::Saltapi => 1,
            Scenario::Swarm | Scenario::Returns => 1000,
            Scenario::Publish => 10_000,
            Scenario::Cluster => 1000,
            Scenario::Restart => 12,
            Scenario::Soak => 100,
            Scenario::Flood => 100,
            Scenario::MineSchedule => 10_000,
            Scenario::Syndic => 5000,
            Scenario::PillarFleet => 10_000,
        }
    }
}

/// Everything the full run does, in order.
pub const ALL: &[(Scenario, usize)] = &[
    (Scenario::Cli, 1),
    (Scenario::Rpc, 1),
    (Scenario::MinionRss, 1),
    (Scenario::Cli, 21),
    (Scenario::Cli, 101),
    (Scenario::Swarm, 1000),
    (Scenario::Swarm, 10_000),
    (Scenario::Returns, 1000),
    (Scenario::Publish, 10_000),
    (Scenario::States, 1),
    (Scenario::Saltapi, 1),
    (Scenario::Restart, 12),
    (Scenario::Restart, 10_000),
    (Scenario::Soak, 100),
    (Scenario::Flood, 100),
    (Scenario::MineSchedule, 10_000),
    (Scenario::Syndic, 5000),
    (Scenario::PillarFleet, 10_000),
];

/// What every scenario shares.
pub struct Ctx {
    /// The release binaries.
    pub bins: Bins,
    /// Scratch space; each scenario gets a fresh folder under it.
    pub work: PathBuf,
    /// Repetitions, overriding each scenario's default.
    pub runs: Option<usize>,
    /// Jobs the soak publishes (default 100,000).
    pub jobs: Option<usize>,
    /// Connections the flood opens (default 5,000).
    pub flood_connections: Option<usize>,
    /// How long the flood lasts, seconds (default 30).
    pub flood_secs: Option<u64>,
    /// Salt, measured beside saltq.
    pub salt: SaltPeer,
    /// The figures so far.
    pub figures: Vec<Figure>,
    /// Raw per-run data, by scenario and size, for the JSON.
    pub details: serde_json::Map<String, serde_json::Value>,
    /// The current scenario's scratch folder: removed when it succeeds, kept (with the
    /// processes' logs) when it fails.
    pub scratch: Option<PathBuf>,
}

impl Ctx {
    pub(crate) fn runs_or(&self, default: usize) -> usize {
        self.runs(default)
    }

    fn runs(&self, default: usize) -> usize {
        self.runs.unwrap_or(default).max(1)
    }

    pub(crate) fn fresh_dir(&mut self, name: &str) -> anyhow::Result<PathBuf> {
        let d = self.work.join(name);
        if d.exists() {
            std::fs::remove_dir_all(&d).with_context(|| format!("cannot clear {}", d.display()))?;
        }
        std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
        self.scratch = Some(d.clone());
        Ok(d)
    }

    /// Runs one scenario.
    pub async fn run(&mut self, s: Scenario, size: usize) -> anyhow::Result<()> {
        if size == 0 {
            bail!("the size must be at least 1");
        }
        eprintln!("# {} {size}", s.name());
        let before = host::load();
        let result = match s {
            Scenario::Cli => self.cli(size).await,
            Scenario::Rpc => self.rpc(size).await,
            Scenario::MinionRss => self.minion_rss().await,
            Scenario::Swarm => self.swarm(size).await,
            Scenario::Returns => self.returns(size).await,
            Scenario::Publish => self.publish(size).await,
            Scenario::Cluster => self.cluster(size).await,
            Scenario::States => self.states().await,
            Scenario::Saltapi => self.saltapi().await,
            Scenario::Restart => self.restart(size).await,
            Scenario::Soak => self.soak(size).await,
            Scenario::Flood => self.flood(size).await,
            Scenario::MineSchedule => self.mine_schedule(size).await,
            Scenario::Syndic => self.syndic(size).await,
            Scenario::PillarFleet => self.pillar_fleet(size).await,
        };
        match (&result, self.scratch.take()) {
            (Ok(()), Some(d)) if std::env::var_os("SALTQ_BENCH_KEEP").is_none() => {
                let _ = std::fs::remove_dir_all(&d);
            }
            (Ok(()), Some(d)) => eprintln!("  files kept in {} (SALTQ_BENCH_KEEP)", d.display()),
            (Err(_), Some(d)) => eprintln!("  logs and files kept in {}", d.display()),
            _ => {}
        }
        // The machine is shared: how busy it was is part of the result.
        self.details.insert(
            format!("load-{}-{size}", s.name()),
            json!({ "before": before, "after": host::load() }),
        );
        result
    }

    /// A master and `n` minion processes, all subscribed.
    fn fleet(&self, dir: &Path, n: usize) -> anyhow::Result<(Master, Vec<Proc>)> {
        let mut master = Master::start(&self.bins, &dir.join("master"))?;
        let started = Instant::now();
        let mut minions = (0..n)
            .map(|i| {
                let id = format!("bench-{i:03}");
                start_minion(&self.bins, &dir.join("minions").join(&id), &id, master.port)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut watch: Vec<&mut Proc> = minions.iter_mut().collect();
        let took =
            master.wait_connected(n as u64, started, Duration::from_secs(120), &mut watch)?;
        eprintln!(
            "  {n} minion processes subscribed in {:.2} s",
            took.as_secs_f64()
        );
        Ok((master, minions))
    }

    async fn cli(&mut self, n: usize) -> anyhow::Result<()> {
        let runs = self.runs(10);
        let dir = self.fresh_dir(&format!("cli-{n}"))?;
        let (walls, rpc, master_rss, minion_rss) = {
            let (master, minions) = self.fleet(&dir, n)?;
            let ping = |m: &Master| -> anyhow::Result<f64> {
                let mut cmd = m.cli(&self.bins)?;
                cmd.args(["*", "test.ping"]);
                let (took, status, out) = timed_output(&mut cmd, Duration::from_secs(60))?;
                let trues = out.lines().filter(|l| l.trim() == "True").count();
                if !status.success() || trues != n {
                    bail!("saltq '*' test.ping: {status}, {trues} of {n} answered:\n{out}");
                }
                Ok(took.as_secs_f64() * 1e3)
            };
            for _ in 0..2 {
                ping(&master)?; // warm-up: page cache, first job
            }
            let walls = (0..runs)
                .map(|_| ping(&master))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let mut client = master.client().await?;
            let mut rpc = Vec::new();
            for i in 0..105 {
                let r = run_job(&mut client, "*", "test.ping", 10.0).await?;
                if r.returned as usize != n {
                    bail!("Run: {} of {n} returned", r.returned);
                }
                if i >= 5 {
                    rpc.push(r.elapsed.as_secs_f64() * 1e3);
                }
            }
            let master_rss = master.proc.rss_kib()? as f64 / 1024.0;
            let minion_rss = minions[0].rss_kib()? as f64 / 1024.0;
            (walls, rpc, master_rss, minion_rss)
        };
        let salt = self.salt.figures(n).cloned();
        let plural = if n == 1 { "" } else { "es" };
        let target = match n {
            1 => Target::at_most(25.0),
            101 => Target::at_most(100.0),
            _ => None,
        };
        self.figures.push(Figure::new(
            "cli",
            n,
            "cli_wall_ms",
            format!("`saltq '*' test.ping`, {n} minion process{plural}, whole command"),
            "ms",
            Summary::of(&walls).context("no runs")?,
            salt.as_ref().map(|s| s.cli_wall_ms),
            target,
        ));
        let mut sorted = rpc.clone();
        sorted.sort_by(f64::total_cmp);
        self.figures.push(
            Figure::new(
                "cli",
                n,
                "api_roundtrip_p50_ms",
                format!("API round trip, {n} minion process{plural}, p50 (Run RPC; Salt: LocalClient.cmd)"),
                "ms",
                Summary::single(percentile(&sorted, 50.0)),
                salt.as_ref().map(|s| Summary::single(s.roundtrip_p50_ms)),
                None,
            )
            .note(format!(
                "{} calls on one connection after 5 warm-up; saltq p90 {:.2} ms, Salt p90 {}",
                sorted.len(),
                percentile(&sorted, 90.0),
                salt.as_ref().map_or("—".into(), |s| format!("{:.1} ms", s.roundtrip_p90_ms))
            )),
        );
        self.figures.push(Figure::new(
            "cli",
            n,
            "master_rss_mib",
            format!("master resident memory, {n} minion process{plural} (after the runs)"),
            "MiB",
            Summary::single(master_rss),
            salt.as_ref().map(|s| Summary::single(s.master_rss_mib)),
            None,
        ));
        self.details.insert(
            format!("cli-{n}"),
            json!({ "cli_wall_ms": walls, "rpc_ms": rpc, "master_rss_mib": master_rss,
                    "one_minion_rss_mib": minion_rss, "salt": salt.map(|s| s.raw) }),
        );
        Ok(())
    }

    async fn rpc(&mut self, n: usize) -> anyhow::Result<()> {
        const CALLS: usize = 1000;
        let runs = self.runs(5);
        let dir = self.fresh_dir(&format!("rpc-{n}"))?;
        let (mut p50s, mut p99s, mut all) = (Vec::new(), Vec::new(), Vec::new());
        {
            let (master, _minions) = self.fleet(&dir, n)?;
            let mut client = master.client().await?;
            for _ in 0..100 {
                run_job(&mut client, "*", "test.ping", 10.0).await?; // warm-up
            }
            for _ in 0..runs {
                let mut v = Vec::with_capacity(CALLS);
                for _ in 0..CALLS {
                    let r = run_job(&mut client, "*", "test.ping", 10.0).await?;
                    if r.returned as usize != n {
                        bail!("Run: {} of {n} returned", r.returned);
                    }
                    v.push(r.elapsed.as_secs_f64() * 1e3);
                }
                v.sort_by(f64::total_cmp);
                p50s.push(percentile(&v, 50.0));
                p99s.push(percentile(&v, 99.0));
                all.push(v);
            }
        }
        let salt = self.salt.figures(n).cloned();
        let plural = if n == 1 { "" } else { "s" };
        let note = format!(
            "{runs} runs of {CALLS} sequential calls on one QUIC connection after 100 warm-up calls; \
             median, min and max of the per-run percentile"
        );
        self.figures.push(
            Figure::new(
                "rpc",
                n,
                "rpc_p50_ms",
                format!("API round trip (Run RPC, test.ping, {n} minion{plural}), p50"),
                "ms",
                Summary::of(&p50s).context("no runs")?,
                salt.as_ref().map(|s| Summary::single(s.roundtrip_p50_ms)),
                if n == 1 { Target::at_most(1.0) } else { None },
            )
            .note(note.clone()),
        );
        self.figures.push(
            Figure::new(
                "rpc",
                n,
                "rpc_p99_ms",
                format!("API round trip (Run RPC, test.ping, {n} minion{plural}), p99"),
                "ms",
                Summary::of(&p99s).context("no runs")?,
                None,
                if n == 1 { Target::at_most(5.0) } else { None },
            )
            .note(format!(
                "{note}; Salt's peer reports p90 only: {}",
                salt.as_ref()
                    .map_or("—".into(), |s| format!("{:.1} ms", s.roundtrip_p90_ms))
            )),
        );
        let hist: Vec<serde_json::Value> = all
            .iter()
            .map(|v| {
                json!({ "p50": percentile(v, 50.0), "p90": percentile(v, 90.0),
                        "p99": percentile(v, 99.0), "max": percentile(v, 100.0) })
            })
            .collect();
        self.details
            .insert(format!("rpc-{n}"), json!({ "runs": hist }));
        Ok(())
    }

    async fn minion_rss(&mut self) -> anyhow::Result<()> {
        let runs = self.runs(3);
        let dir = self.fresh_dir("minion-rss")?;
        let (mut rss, mut anon, mut file) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..runs {
            let (master, minions) = self.fleet(&dir.join(format!("run-{r}")), 1)?;
            let mut client = master.client().await?;
            for _ in 0..10 {
                run_job(&mut client, "*", "test.ping", 10.0).await?;
            }
            tokio::time::sleep(Duration::from_secs(5)).await;
            rss.push(minions[0].rss_kib()? as f64 / 1024.0);
            // Private heap and stacks versus pages of the executable and libraries.
            anon.push(status_kib(minions[0].pid(), "RssAnon:")? as f64 / 1024.0);
            file.push(status_kib(minions[0].pid(), "RssFile:")? as f64 / 1024.0);
        }
        let median = |v: &[f64]| Summary::of(v).map_or(0.0, |s| s.median);
        let salt = self.salt.figures(1).cloned();
        self.figures.push(
            Figure::new(
                "minion-rss",
                1,
                "minion_rss_mib",
                "one minion process, idle, resident memory",
                "MiB",
                Summary::of(&rss).context("no runs")?,
                salt.as_ref().map(|s| Summary::single(s.one_minion_rss_mib)),
                Target::at_most(10.0),
            )
            .note(format!(
                "VmRSS of saltq-minion, subscribed, 5 s after 10 test.ping jobs; of which \
                 anonymous (heap, stacks) {:.1} MiB, file-backed (the executable's pages) {:.1} MiB",
                median(&anon),
                median(&file)
            )),
        );
        self.details.insert(
            "minion-rss".into(),
            json!({ "rss_mib": rss, "rss_anon_mib": anon, "rss_file_mib": file }),
        );
        Ok(())
    }

    async fn swarm(&mut self, n: usize) -> anyhow::Result<()> {
        let runs = self.runs(3);
        let jobs = if n >= 5000 { 10 } else { 20 };
        let dir = self.fresh_dir(&format!("swarm-{n}"))?;
        let connect_limit = Duration::from_secs(120 + n as u64 / 20);
        let (mut drops_connect, mut drops_jobs) = (Vec::new(), Vec::new());
        let (mut connect, mut p50s, mut rss, mut rss_connected, mut swarm_rss) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut per_run = Vec::new();
        for r in 0..runs {
            // Fresh processes every run; the first run also creates and accepts every key.
            let mut master = Master::start(&self.bins, &dir.join("master"))?;
            let drops_before = host::udp_rcvbuf_errors();
            let started = Instant::now();
            let mut swarm = start_swarm(&self.bins, &dir.join("swarm"), n, master.port)?;
            let took =
                master.wait_connected(n as u64, started, connect_limit, &mut [&mut swarm])?;
            let connect_drops = host::udp_rcvbuf_errors() - drops_before;
            let connect_cpu = (
                host::cpu_seconds(master.proc.pid()),
                host::cpu_seconds(swarm.pid()),
            );
            let connected_rss = master.proc.rss_kib()? as f64 / 1024.0;
            let mut client = master.client().await?;
            let warm = run_job(&mut client, "*", "test.ping", 30.0).await?;
            if warm.returned as usize != n {
                bail!("swarm warm-up job: {} of {n} returned", warm.returned);
            }
            let mut lat = Vec::new();
            let drops_before = host::udp_rcvbuf_errors();
            let cpu_before = (
                host::cpu_seconds(master.proc.pid()),
                host::cpu_seconds(swarm.pid()),
            );
            for _ in 0..jobs {
                let o = run_job(&mut client, "*", "test.ping", 30.0).await?;
                if o.returned as usize != n {
                    bail!(
                        "swarm job: {} of {n} returned ({} did not)",
                        o.returned,
                        o.not_returned
                    );
                }
                lat.push(o.elapsed.as_secs_f64() * 1e3);
            }
            let job_drops = host::udp_rcvbuf_errors() - drops_before;
            let job_cpu_ms = |now: f64, before: f64| (now - before) * 1e3 / jobs as f64;
            let per_job_cpu_ms = (
                job_cpu_ms(host::cpu_seconds(master.proc.pid()), cpu_before.0),
                job_cpu_ms(host::cpu_seconds(swarm.pid()), cpu_before.1),
            );
            let after_rss = master.proc.rss_kib()? as f64 / 1024.0;
            let hwm = master.proc.hwm_kib()? as f64 / 1024.0;
            let s_rss = swarm.rss_kib()? as f64 / 1024.0;
            drop(client);
            swarm.stop();
            master.proc.stop();
            let mut sorted = lat.clone();
            sorted.sort_by(f64::total_cmp);
            let p50 = percentile(&sorted, 50.0);
            eprintln!(
                "  run {r}: connected in {:.2} s ({connect_drops} UDP datagrams dropped), \
                 publish → all returned p50 {p50:.1} ms ({job_drops} dropped), master {after_rss:.0} MiB",
                took.as_secs_f64()
            );
            per_run.push(json!({
                "keys_created": r == 0, "connect_s": took.as_secs_f64(),
                "connect_udp_rcvbuf_drops": connect_drops,
                "connect_cpu_s": { "master": connect_cpu.0, "swarm": connect_cpu.1 },
                "returned_ms": lat, "jobs_udp_rcvbuf_drops": job_drops,
                "cpu_ms_per_job": { "master": per_job_cpu_ms.0, "swarm": per_job_cpu_ms.1 },
                "master_rss_connected_mib": connected_rss, "master_rss_after_jobs_mib": after_rss,
                "master_hwm_mib": hwm, "swarm_rss_mib": s_rss,
            }));
            connect.push(took.as_secs_f64());
            drops_connect.push(connect_drops as f64);
            drops_jobs.push(job_drops as f64 / jobs as f64);
            p50s.push(p50);
            rss.push(after_rss);
            rss_connected.push(connected_rss);
            swarm_rss.push(s_rss);
        }
        let big = n >= 10_000;
        self.figures.push(
            Figure::new(
                "swarm",
                n,
                "swarm_returned_p50_ms",
                format!("swarm of {n}: publish to all returned, p50"),
                "ms",
                Summary::of(&p50s).context("no runs")?,
                None,
                match n {
                    1000 => Target::at_most(200.0),
                    10_000 => Target::at_most(1500.0),
                    _ => None,
                },
            )
            .note(format!(
                "`JobService.Run` '*' test.ping until Finished, {jobs} jobs per run after one warm-up, \
                 {runs} runs with fresh processes; median, min, max of the per-run p50; \
                 UDP datagrams dropped for a full receive buffer (host-wide), per job: {:.0}",
                Summary::of(&drops_jobs).map_or(0.0, |s| s.median)
            )),
        );
        self.figures.push(
            Figure::new(
                "swarm",
                n,
                "swarm_connect_first_s",
                format!("swarm of {n}: all connected and subscribed, first start (keys created and auto-accepted)"),
                "s",
                Summary::single(connect[0]),
                None,
                if big { Target::at_most(15.0) } else { None },
            )
            .note(format!(
                "fresh master and swarm processes, no keys anywhere; from spawning the swarm to the \
                 master's connected gauge reaching N; {:.0} UDP datagrams dropped meanwhile",
                drops_connect[0]
            )),
        );
        if connect.len() > 1 {
            self.figures.push(
                Figure::new(
                    "swarm",
                    n,
                    "swarm_connect_s",
                    format!(
                        "swarm of {n}: all connected and subscribed, fresh processes, keys on disk"
                    ),
                    "s",
                    Summary::of(&connect[1..]).context("no runs")?,
                    None,
                    if big { Target::at_most(15.0) } else { None },
                )
                .note(format!(
                    "master and swarm restarted; keys already accepted (as after a master \
                     restart); UDP datagrams dropped meanwhile: median {:.0}",
                    Summary::of(&drops_connect[1..]).map_or(0.0, |s| s.median)
                )),
            );
        }
        self.figures.push(
            Figure::new(
                "swarm",
                n,
                "master_rss_mib",
                format!("master resident memory, {n} minions connected"),
                "MiB",
                Summary::of(&rss).context("no runs")?,
                None,
                if big { Target::at_most(1024.0) } else { None },
            )
            .note(format!(
                "VmRSS after the jobs; just after connecting: {:.0} MiB (median)",
                Summary::of(&rss_connected).map_or(0.0, |s| s.median)
            )),
        );
        self.figures.push(Figure::new(
            "swarm",
            n,
            "swarm_rss_mib",
            format!("the swarm process, {n} virtual minions, resident memory"),
            "MiB",
            Summary::of(&swarm_rss).context("no runs")?,
            None,
            None,
        ));
        self.details
            .insert(format!("swarm-{n}"), json!({ "runs": per_run }));
        Ok(())
    }

    async fn publish(&mut self, n: usize) -> anyhow::Result<()> {
        let jobs = self.runs(20);
        let dir = self.fresh_dir(&format!("publish-{n}"))?;
        let mut master = Master::start(&self.bins, &dir.join("master"))?;
        let started = Instant::now();
        let mut swarm = start_swarm(&self.bins, &dir.join("swarm"), n, master.port)?;
        let limit = Duration::from_secs(120 + n as u64 / 20);
        master.wait_connected(n as u64, started, limit, &mut [&mut swarm])?;
        let mut client = master.client().await?;
        let mut runner = master.runner_client().await?;
        let warm = run_job(&mut client, "*", "test.ping", 30.0).await?;
        if warm.returned as usize != n {
            bail!("publish warm-up job: {} of {n} returned", warm.returned);
        }
        // Every swarm minion's id starts with swarm-: a grain target that matches them all, so
        // the master must read every minion's cached grains to resolve it.
        const GRAIN: &str = "id:swarm-*";
        let glob = publish_latencies(&mut client, "*", "glob", n, jobs).await?;
        let grain = publish_latencies(&mut client, GRAIN, "grain", n, jobs).await?;
        let done = std::cell::Cell::new(false);
        let publishing = async {
            let r = publish_latencies(&mut client, GRAIN, "grain", n, jobs).await;
            done.set(true);
            r
        };
        let (during, probe) = tokio::join!(publishing, probe_present(&mut runner, &done));
        during?;
        let mut probe = probe?;
        swarm.stop();
        master.proc.stop();
        probe.sort_by(f64::total_cmp);
        let p50 = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            percentile(&v, 50.0)
        };
        eprintln!(
            "  publish p50: glob {:.1} ms, grain {:.1} ms; manage.present during grain publishes: \
             p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} calls)",
            p50(&glob),
            p50(&grain),
            percentile(&probe, 50.0),
            percentile(&probe, 99.0),
            percentile(&probe, 100.0),
            probe.len()
        );
        let note = format!(
            "`JobService.Run` test.ping to all {n} swarm minions, {jobs} jobs one after another, \
             each to Finished; time from the request to the `Published` message (the master \
             resolved the target, stored the job and handed it to every subscription); median, \
             min, max over the jobs"
        );
        self.figures.push(
            Figure::new(
                "publish",
                n,
                "publish_glob_ms",
                format!("publish to {n} minions, glob '*'"),
                "ms",
                Summary::of(&glob).context("no jobs")?,
                None,
                None,
            )
            .note(note.clone()),
        );
        self.figures.push(
            Figure::new(
                "publish",
                n,
                "publish_grain_ms",
                format!(
                    "publish to {n} minions, grain target {GRAIN} (every minion's grains read)"
                ),
                "ms",
                Summary::of(&grain).context("no jobs")?,
                None,
                None,
            )
            .note(note),
        );
        self.figures.push(
            Figure::new(
                "publish",
                n,
                "present_during_publish_ms",
                format!("manage.present while grain-targeted jobs to {n} minions are published"),
                "ms",
                Summary::of(&probe).context("no probe calls")?,
                None,
                None,
            )
            .note(format!(
                "`RunnerService.RunRunner` manage.present every 5 ms during {jobs} more grain-targeted \
                 jobs; it reads the connected set, which subscriptions write: a publish holding that \
                 lock while it resolves shows here; {} calls, p99 {:.1} ms",
                probe.len(),
                percentile(&probe, 99.0)
            )),
        );
        self.details.insert(
            format!("publish-{n}"),
            json!({ "glob_ms": glob, "grain_ms": grain, "present_ms": probe }),
        );
        Ok(())
    }

    async fn returns(&mut self, n: usize) -> anyhow::Result<()> {
        const CACHE_RETURNS: usize = 100_000;
        const WRITERS: usize = 256;
        const IN_FLIGHT: usize = 4;
        const WINDOW: Duration = Duration::from_secs(15);
        let runs = self.runs(3);
        let dir = self.fresh_dir(&format!("returns-{n}"))?;

        // The job cache alone.
        let example = self.bins.dir.join("examples/bench_returns");
        if !example.is_file() {
            bail!(
                "{} is missing: build with `cargo build --release -p saltq-jobcache --example bench_returns`",
                example.display()
            );
        }
        let mut cache_rates = Vec::new();
        for _ in 0..runs {
            let mut cmd = Command::new(&example);
            cmd.args([CACHE_RETURNS.to_string(), WRITERS.to_string()])
                .env("TMPDIR", &dir);
            let (_, status, out) = timed_output(&mut cmd, Duration::from_secs(600))?;
            if !status.success() {
                bail!("bench_returns failed ({status}):\n{out}");
            }
            cache_rates.push(parse_rate(&out).with_context(|| format!("no rate in: {out}"))?);
        }

        // Through the master: a swarm, IN_FLIGHT concurrent Run loops for WINDOW.
        let (mut e2e, mut e2e_runs, mut e2e_drops) = (Vec::new(), Vec::new(), Vec::new());
        {
            let mut master = Master::start(&self.bins, &dir.join("master"))?;
            let started = Instant::now();
            let mut swarm = start_swarm(&self.bins, &dir.join("swarm"), n, master.port)?;
            master.wait_connected(
                n as u64,
                started,
                Duration::from_secs(300),
                &mut [&mut swarm],
            )?;
            let client = master.client().await?;
            let mut c = client.clone();
            run_job(&mut c, "*", "test.ping", 30.0).await?; // warm-up
            for _ in 0..runs {
                let stored = |m: &Master| -> anyhow::Result<f64> {
                    m.metrics()?
                        .get("saltq_returns_stored_total")
                        .context("no saltq_returns_stored_total in /metrics")
                };
                let before = stored(&master)?;
                let drops_before = host::udp_rcvbuf_errors();
                let cpu_before = (
                    host::cpu_seconds(master.proc.pid()),
                    host::cpu_seconds(swarm.pid()),
                );
                let t0 = Instant::now();
                let mut loops = tokio::task::JoinSet::new();
                for _ in 0..IN_FLIGHT {
                    let mut c = client.clone();
                    loops.spawn(async move {
                        let mut jobs = 0usize;
                        while t0.elapsed() < WINDOW {
                            let o = run_job(&mut c, "*", "test.ping", 30.0).await?;
                            if o.returned as usize != n {
                                bail!("{} of {n} returned", o.returned);
                            }
                            jobs += 1;
                        }
                        Ok(jobs)
                    });
                }
                let mut jobs = 0;
                while let Some(r) = loops.join_next().await {
                    jobs += r.context("a job loop panicked")??;
                }
                let secs = t0.elapsed().as_secs_f64();
                let delta = stored(&master)? - before;
                if (delta as usize) < jobs * n {
                    bail!("{jobs} jobs of {n} finished but only {delta} returns were stored");
                }
                let drops = host::udp_rcvbuf_errors() - drops_before;
                let cpu = (
                    host::cpu_seconds(master.proc.pid()) - cpu_before.0,
                    host::cpu_seconds(swarm.pid()) - cpu_before.1,
                );
                eprintln!(
                    "  {jobs} jobs, {delta} returns stored in {secs:.1} s = {:.0}/s \
                     ({drops} UDP datagrams dropped; CPU s: master {:.1}, swarm {:.1})",
                    delta / secs,
                    cpu.0,
                    cpu.1
                );
                e2e_runs.push(json!({ "jobs": jobs, "returns": delta, "seconds": secs,
                    "udp_rcvbuf_drops": drops, "cpu_s": { "master": cpu.0, "swarm": cpu.1 } }));
                e2e.push(delta / secs);
                e2e_drops.push(drops as f64);
            }
        }
        self.figures.push(
            Figure::new(
                "returns",
                n,
                "jobcache_returns_per_s",
                "returns stored per second, embedded job cache alone (SQLite)",
                "returns/s",
                Summary::of(&cache_rates).context("no runs")?,
                None,
                Target::at_least(10_000.0),
            )
            .note(format!(
                "`bench_returns {CACHE_RETURNS} {WRITERS}` (saltq-jobcache example), {runs} runs"
            )),
        );
        self.figures.push(
            Figure::new(
                "returns",
                n,
                "e2e_returns_per_s",
                format!("returns stored per second through the master, swarm of {n}"),
                "returns/s",
                Summary::of(&e2e).context("no runs")?,
                None,
                Target::at_least(10_000.0),
            )
            .note(format!(
                "{IN_FLIGHT} concurrent `Run` '*' test.ping loops for {} s per run; \
                 saltq_returns_stored_total delta ÷ time; UDP datagrams dropped per run: median {:.0}",
                WINDOW.as_secs(),
                Summary::of(&e2e_drops).map_or(0.0, |s| s.median)
            )),
        );
        self.details.insert(
            format!("returns-{n}"),
            json!({ "jobcache_returns_per_s": cache_rates, "e2e_returns_per_s": e2e,
                    "e2e_runs": e2e_runs }),
        );
        Ok(())
    }
}

/// Runs `jobs` test.ping jobs on `tgt` one after another; for each, the time from the request
/// to the `Published` message, in ms. Each job must return from all `n` minions.
async fn publish_latencies(
    client: &mut saltq_proto::v1::job_service_client::JobServiceClient<saltq_transport::Channel>,
    tgt: &str,
    tgt_type: &str,
    n: usize,
    jobs: usize,
) -> anyhow::Result<Vec<f64>> {
    use saltq_proto::v1::{PublishRequest, RunRequest, run_response::Kind};
    let mut out = Vec::with_capacity(jobs);
    for _ in 0..jobs {
        let req = RunRequest {
            publish: Some(PublishRequest {
                tgt: tgt.into(),
                tgt_type: tgt_type.into(),
                fun: vec!["test.ping".into()],
                ..Default::default()
            }),
            timeout: 30.0,
            gather_job_timeout: 30.0,
        };
        let started = Instant::now();
        let mut stream = client.run(req).await?.into_inner();
        let mut published = None;
        let mut finished = None;
        while let Some(msg) = stream.message().await? {
            match msg.kind {
                Some(Kind::Published(_)) => published = Some(started.elapsed()),
                Some(Kind::Finished(f)) => finished = Some(f),
                _ => {}
            }
        }
        let (Some(p), Some(f)) = (published, finished) else {
            bail!("the Run stream of {tgt} ended without Published and Finished");
        };
        if f.returned as usize != n {
            bail!("publish job on {tgt}: {} of {n} returned", f.returned);
        }
        out.push(p.as_secs_f64() * 1e3);
    }
    Ok(out)
}

/// Calls the manage.present runner every 5 ms until `done`; each call's latency in ms.
async fn probe_present(
    runner: &mut saltq_proto::v1::runner_service_client::RunnerServiceClient<
        saltq_transport::Channel,
    >,
    done: &std::cell::Cell<bool>,
) -> anyhow::Result<Vec<f64>> {
    let mut out = Vec::new();
    while !done.get() {
        let started = Instant::now();
        runner
            .run_runner(saltq_proto::v1::RunRunnerRequest {
                fun: "manage.present".into(),
                ..Default::default()
            })
            .await?;
        out.push(started.elapsed().as_secs_f64() * 1e3);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(out)
}

/// The rate in bench_returns' `sqlite: ... = X returns/s; ...` line.
fn parse_rate(out: &str) -> Option<f64> {
    let line = out.lines().find(|l| l.starts_with("sqlite:"))?;
    let (_, rest) = line.split_once(" = ")?;
    rest.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bench_returns() {
        let out = "sqlite: 100000 returns from 256 writers in 2.50 s = 40000 returns/s; \
                   120 transactions (avg 833 returns each); latency p50 5.00 ms, p99 9.00 ms\n";
        assert_eq!(parse_rate(out), Some(40000.0));
        assert_eq!(parse_rate("nothing"), None);
    }
}
