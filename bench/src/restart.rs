//! The `restart` scenario (issue 15, defect 5): SIZE minions connected to a master, the master
//! SIGKILLed and started again on the same address with the same `pki_dir` (so the same
//! stateless-reset key), then timed from the moment the new master has written its listening
//! addresses until every minion holds a subscription again, and until a `test.ping` to all of
//! them has every return. Minion processes for SIZE ≤ 100, a swarm beyond. Also counted: how
//! many minion connection attempts the restarted master turned away as busy (its handshake
//! admission), from the minions' logs.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crate::fleet::{Master, RunOutcome, run_job, start_minion, start_swarm};
use crate::host;
use crate::procs::Proc;
use crate::report::{Figure, Target};
use crate::scenarios::Ctx;
use crate::stats::Summary;

/// Lines of the minions' logs saying the master turned a connection away as busy.
fn busy_lines(logs: &[std::path::PathBuf]) -> usize {
    logs.iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains("the master is busy"))
                .count()
        })
        .sum()
}

/// From `wait_connected`'s samples, how many were connected at the end of each whole second
/// (the last sample at or before it): how fast the restarted master took them back.
fn per_second(progress: &[(f64, u64)]) -> Vec<u64> {
    let end = progress.last().map_or(0.0, |(t, _)| *t).ceil() as usize;
    (1..=end)
        .map(|s| {
            progress
                .iter()
                .take_while(|(t, _)| *t <= s as f64)
                .last()
                .map_or(0, |(_, n)| *n)
        })
        .collect()
}

/// What the host had counted at one moment: UDP datagrams dropped, and CPU seconds the master
/// and the minion processes had used.
struct Mark {
    drops: u64,
    master_cpu: f64,
    minions_cpu: f64,
}

impl Mark {
    fn now(master: &Master, minions: &[Proc]) -> Mark {
        Mark {
            drops: host::udp_rcvbuf_errors(),
            master_cpu: host::cpu_seconds(master.proc.pid()),
            minions_cpu: minions.iter().map(|p| host::cpu_seconds(p.pid())).sum(),
        }
    }

    /// One line on a ping after restart `r`: how long, and what the host counted since `self`.
    fn ping_line(&self, r: usize, which: &str, o: &RunOutcome, now: &Mark) {
        eprintln!(
            "  restart {r}: {which} test.ping: {} returned in {:.2} s; {} UDP datagrams dropped; CPU master {:.2} s, minions {:.2} s",
            o.returned,
            o.elapsed.as_secs_f64(),
            now.drops - self.drops,
            now.master_cpu - self.master_cpu,
            now.minions_cpu - self.minions_cpu
        );
    }
}

impl Ctx {
    /// The `restart` scenario.
    pub(crate) async fn restart(&mut self, n: usize) -> anyhow::Result<()> {
        let runs = self.runs_or(5);
        let dir = self.fresh_dir(&format!("restart-{n}"))?;
        let root = dir.join("master");
        let mut master = Master::start(&self.bins, &root)?;
        let port = master.port;
        let started = Instant::now();
        let limit = Duration::from_secs(120 + n as u64 / 20);
        let (mut minions, logs): (Vec<Proc>, Vec<std::path::PathBuf>) = if n <= 100 {
            let procs = (0..n)
                .map(|i| {
                    let id = format!("bench-{i:03}");
                    start_minion(&self.bins, &dir.join("minions").join(&id), &id, port)
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let logs = (0..n)
                .map(|i| {
                    dir.join("minions")
                        .join(format!("bench-{i:03}"))
                        .join("minion.log")
                })
                .collect();
            (procs, logs)
        } else {
            let swarm = start_swarm(&self.bins, &dir.join("swarm"), n, port)?;
            (vec![swarm], vec![dir.join("swarm").join("swarm.log")])
        };
        {
            let mut watch: Vec<&mut Proc> = minions.iter_mut().collect();
            master.wait_connected(n as u64, started, limit, &mut watch)?;
        }
        let (mut back, mut answering, mut busy, mut down) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut curves = Vec::new();
        let mut admission = Vec::new();
        for r in 0..runs {
            let busy_before = busy_lines(&logs);
            let before = Mark::now(&master, &minions);
            let killed = Instant::now();
            master.proc.kill_now();
            // A crashed master restarted by its supervisor: same root, same port.
            master = Master::start_on(&self.bins, &root, port, "")
                .with_context(|| format!("restart {r}"))?;
            let listening = Instant::now();
            down.push(listening.duration_since(killed).as_secs_f64());
            {
                let mut watch: Vec<&mut Proc> = minions.iter_mut().collect();
                let took = master.wait_connected(n as u64, listening, limit, &mut watch)?;
                back.push(took.as_secs_f64());
            }
            // The new master's CPU is all since its start.
            let after = Mark::now(&master, &minions);
            eprintln!(
                "  restart {r}: CPU until all subscribed: master {:.2} s, minions {:.2} s",
                after.master_cpu,
                after.minions_cpu - before.minions_cpu
            );
            let curve = per_second(&master.progress);
            eprintln!("  restart {r}: subscribed by second: {curve:?}");
            curves.push(curve);
            // What the restarted master's handshake admission did until all were back.
            let m = master.metrics()?;
            let get = |name: &str| m.get(name).unwrap_or(f64::NAN);
            let (done, failed, refused) = (
                get("saltq_handshakes_total{outcome=\"completed\"}"),
                get("saltq_handshakes_total{outcome=\"failed\"}"),
                get("saltq_handshakes_total{outcome=\"refused_busy\"}"),
            );
            let outlasted = get("saltq_handshakes_total{outcome=\"outlasted_turn\"}");
            let hs = get("saltq_handshake_seconds_total");
            let resumed = get("saltq_handshakes_resumed_total");
            let waited = get("saltq_handshake_wait_seconds_total");
            let per = hs / (done + failed).max(1.0);
            eprintln!(
                "  restart {r}: handshakes completed {done} ({resumed} resumed), failed {failed}, outlasted their turn {outlasted}, refused busy {refused}; \
                 mean handshake {:.0} ms, mean queue wait {:.0} ms",
                per * 1e3,
                waited / (done + failed).max(1.0) * 1e3
            );
            admission.push(
                json!({"completed": done, "failed": failed, "refused_busy": refused, "outlasted_turn": outlasted,
                                  "handshake_seconds": hs, "wait_seconds": waited}),
            );
            let mut client = master.client().await?;
            let before = Mark::now(&master, &minions);
            let o = run_job(&mut client, "*", "test.ping", 30.0).await?;
            if o.returned as usize != n {
                bail!("after restart {r}: {} of {n} returned", o.returned);
            }
            answering.push(listening.elapsed().as_secs_f64());
            busy.push(busy_lines(&logs) - busy_before);
            before.ping_line(r, "first", &o, &Mark::now(&master, &minions));
            // The same ping again: how much of the first one was the restart's aftermath.
            let before = Mark::now(&master, &minions);
            let o = run_job(&mut client, "*", "test.ping", 30.0).await?;
            before.ping_line(r, "second", &o, &Mark::now(&master, &minions));
            eprintln!(
                "  restart {r}: down {:.2} s; all {n} subscribed after {:.2} s, all answered test.ping after {:.2} s, {} turned away as busy",
                down[r], back[r], answering[r], busy[r]
            );
        }
        let what = if n <= 100 {
            format!("{n} minion processes")
        } else {
            format!("a swarm of {n}")
        };
        let target = match n {
            12 => Target::at_most(2.0),
            10_000 => Target::at_most(15.0),
            _ => None,
        };
        self.figures.push(
            Figure::new(
                "restart",
                n,
                "restart_all_answering_s",
                format!("master SIGKILLed and restarted, {what}: all answering test.ping again"),
                "s",
                Summary::of(&answering).context("no runs")?,
                None,
                target,
            )
            .note(format!(
                "{runs} restarts, timed from the new master listening (it was down {:.2} s median, SIGKILL to listening); all subscribed again after {:.2} s median (max {:.2} s); connections turned away as busy per restart: {busy:?}",
                Summary::of(&down).map_or(0.0, |s| s.median),
                Summary::of(&back).map_or(0.0, |s| s.median),
                back.iter().copied().fold(0.0, f64::max)
            )),
        );
        self.details.insert(
            format!("restart-{n}"),
            json!({"down_s": down, "subscribed_s": back, "answering_s": answering, "busy": busy,
                   "subscribed_by_second": curves, "admission": admission}),
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::per_second;

    #[test]
    fn per_second_takes_the_last_sample_of_each_second() {
        let p = [(0.0, 0), (0.5, 10), (1.0, 40), (1.7, 90), (2.6, 100)];
        assert_eq!(per_second(&p), vec![40, 90, 100]);
        assert_eq!(per_second(&[]), Vec::<u64>::new());
    }
}
