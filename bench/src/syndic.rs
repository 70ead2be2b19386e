//! The `syndic` scenario (issue 30): a top master (`order_masters`) with two syndics (lower
//! masters with `syndic_master`), each holding a swarm of SIZE virtual minions, against one
//! master holding a swarm of 2 × SIZE, on the same machine in the same run. For each, `'*'
//! test.ping` through `JobService.Run`: from the request to the last minion's return reaching
//! the caller, and to `Finished` (which a top master holds for at least `syndic_wait`).

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use saltq_proto::v1::job_service_client::JobServiceClient;
use saltq_proto::v1::run_response::Kind;
use saltq_proto::v1::{PublishRequest, RunRequest};
use saltq_transport::Channel;
use serde_json::json;

use crate::fleet::{Master, start_swarm_named};
use crate::host;
use crate::report::Figure;
use crate::scenarios::Ctx;
use crate::stats::{Summary, percentile};

/// The top master's `syndic_wait` in the bench: Salt's default is 5 s, a floor under every
/// job's `Finished`; 1 s keeps the runs short, and the figure of interest (all returned) does
/// not depend on it.
const SYNDIC_WAIT_S: u64 = 1;

/// One `'*' test.ping`: until the last of `n` returns, and until `Finished`.
struct Timed {
    all_returned: Option<Duration>,
    finished: Duration,
    returned: usize,
}

/// Runs `'*' test.ping` and times the `n`th return and the end.
async fn ping_all(client: &mut JobServiceClient<Channel>, n: usize) -> anyhow::Result<Timed> {
    let req = RunRequest {
        publish: Some(PublishRequest {
            tgt: "*".into(),
            fun: vec!["test.ping".into()],
            ..Default::default()
        }),
        timeout: 30.0,
        gather_job_timeout: 30.0,
    };
    let started = Instant::now();
    let mut stream = client
        .run(req)
        .await
        .context("Run '*' test.ping")?
        .into_inner();
    let (mut returned, mut all_returned) = (0, None);
    while let Some(msg) = stream.message().await.context("the Run stream failed")? {
        match msg.kind {
            Some(Kind::MinionReturn(_)) => {
                returned += 1;
                if returned == n {
                    all_returned = Some(started.elapsed());
                }
            }
            Some(Kind::Finished(_)) => {
                return Ok(Timed {
                    all_returned,
                    finished: started.elapsed(),
                    returned,
                });
            }
            _ => {}
        }
    }
    bail!("the Run stream ended without Finished")
}

/// Waits until each master counts `n` subscribed minions: a minion whose connection dropped
/// under load (its QUIC idle timeout) is reconnecting, and a job published meanwhile misses it
/// as Salt's would; the bench times the job path, so it publishes to a whole fleet. How many
/// were missing before the job, summed over the masters.
fn all_subscribed(masters: &mut [&mut Master], n: usize, limit: Duration) -> anyhow::Result<u64> {
    let mut missing = 0;
    for m in masters.iter_mut() {
        let got = m.connected()?;
        if got < n as u64 {
            missing += n as u64 - got;
            m.wait_connected(n as u64, Instant::now(), limit, &mut [])?;
        }
    }
    Ok(missing)
}

/// Median of `v` in milliseconds.
fn p50_ms(v: &[Duration]) -> f64 {
    let mut ms: Vec<f64> = v.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    percentile(&ms, 50.0)
}

impl Ctx {
    /// Two syndics × `n` swarm minions under a top master, beside one master with 2 × `n`.
    pub async fn syndic(&mut self, n: usize) -> anyhow::Result<()> {
        let jobs = self.runs_or(10);
        let total = 2 * n;
        let dir = self.fresh_dir(&format!("syndic-{n}"))?;
        let connect_limit = Duration::from_secs(120 + n as u64 / 20);

        // The hierarchy.
        let top = Master::start_with(
            &self.bins,
            &dir.join("top"),
            &format!("id: top\norder_masters: true\nsyndic_wait: {SYNDIC_WAIT_S}\n"),
        )?;
        let mut lower = Vec::new();
        let mut swarms = Vec::new();
        for k in 1..=2 {
            let m = Master::start_with(
                &self.bins,
                &dir.join(format!("syn{k}")),
                &format!(
                    "id: syn{k}\nsyndic_master: 127.0.0.1\nsyndic_master_port: {}\n",
                    top.port
                ),
            )?;
            let s = start_swarm_named(
                &self.bins,
                &dir.join(format!("swarm{k}")),
                n,
                m.port,
                &format!("s{k}-"),
            )?;
            lower.push(m);
            swarms.push(s);
        }
        let started = Instant::now();
        for (m, s) in lower.iter_mut().zip(swarms.iter_mut()) {
            m.wait_connected(n as u64, started, connect_limit, &mut [s])?;
        }
        let mut client = top.client().await?;
        // The syndics' links come up on their own: a warm-up until every minion answers.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let t = ping_all(&mut client, total).await?;
            if t.returned == total {
                break;
            }
            if Instant::now() >= deadline {
                bail!(
                    "through the syndics only {} of {total} returned",
                    t.returned
                );
            }
        }
        let (mut via_returned, mut via_finished) = (Vec::new(), Vec::new());
        let cpu_before: Vec<f64> = std::iter::once(&top)
            .chain(lower.iter())
            .map(|m| host::cpu_seconds(m.proc.pid()))
            .collect();
        // A job that misses a return anyway is counted, not timed, and the run goes on.
        let (mut via_incomplete, mut via_waited) = (Vec::new(), 0);
        for _ in 0..jobs {
            via_waited += all_subscribed(
                &mut lower.iter_mut().collect::<Vec<_>>(),
                n,
                Duration::from_secs(60),
            )?;
            let t = ping_all(&mut client, total).await?;
            match t.all_returned {
                Some(all) => {
                    via_returned.push(all);
                    via_finished.push(t.finished);
                }
                None => via_incomplete.push(t.returned),
            }
        }
        if via_returned.is_empty() {
            bail!("through the syndics no job had every return: {via_incomplete:?} of {total}");
        }
        let cpu_ms: Vec<f64> = std::iter::once(&top)
            .chain(lower.iter())
            .zip(&cpu_before)
            .map(|(m, b)| (host::cpu_seconds(m.proc.pid()) - b) * 1e3 / jobs as f64)
            .collect();
        eprintln!(
            "  2 syndics × {n}: all returned p50 {:.0} ms (of {} jobs; incomplete: {via_incomplete:?}), \
             Finished p50 {:.0} ms; CPU per job (ms): top {:.0}, syndics {:.0} and {:.0}; \
             minions resubscribing before a job: {via_waited}",
            p50_ms(&via_returned),
            via_returned.len(),
            p50_ms(&via_finished),
            cpu_ms[0],
            cpu_ms[1],
            cpu_ms[2]
        );
        drop(client);
        for mut s in swarms {
            s.stop();
        }
        for mut m in lower {
            m.proc.stop();
        }
        let mut top = top;
        top.proc.stop();

        // One master with every minion, the same way.
        let mut one = Master::start(&self.bins, &dir.join("one"))?;
        let mut swarm =
            start_swarm_named(&self.bins, &dir.join("swarm-one"), total, one.port, "o-")?;
        one.wait_connected(
            total as u64,
            Instant::now(),
            connect_limit * 2,
            &mut [&mut swarm],
        )?;
        let mut client = one.client().await?;
        let warm = ping_all(&mut client, total).await?;
        if warm.returned != total {
            bail!("one master: {} of {total} returned", warm.returned);
        }
        let (mut direct, mut one_incomplete, mut one_waited) = (Vec::new(), Vec::new(), 0);
        for _ in 0..jobs {
            one_waited += all_subscribed(&mut [&mut one], total, Duration::from_secs(60))?;
            let t = ping_all(&mut client, total).await?;
            match t.all_returned {
                Some(all) => direct.push(all),
                None => one_incomplete.push(t.returned),
            }
        }
        if direct.is_empty() {
            bail!("one master: no job had every return: {one_incomplete:?} of {total}");
        }
        eprintln!(
            "  one master × {total}: all returned p50 {:.0} ms (of {} jobs; incomplete: \
             {one_incomplete:?}); minions resubscribing before a job: {one_waited}",
            p50_ms(&direct),
            direct.len()
        );
        drop(client);
        swarm.stop();
        one.proc.stop();

        let (via, fin, one_ms) = (
            p50_ms(&via_returned),
            p50_ms(&via_finished),
            p50_ms(&direct),
        );
        eprintln!(
            "  2 syndics × {n}: all returned p50 {via:.0} ms, Finished {fin:.0} ms; \
             one master × {total}: {one_ms:.0} ms"
        );
        let ms = |v: &[Duration]| -> Vec<f64> { v.iter().map(|d| d.as_secs_f64() * 1e3).collect() };
        self.figures.push(
            Figure::new(
                "syndic",
                n,
                "syndic_returned_ms",
                format!("'*' test.ping, top master → 2 syndics × {n}: all {total} returned"),
                "ms",
                Summary::of(&ms(&via_returned)).context("no jobs")?,
                None,
                None,
            )
            .note(format!(
                "`JobService.Run` at the top until its {total}th return, {} of {jobs} jobs after a \
                 warm-up had every return (the others: {via_incomplete:?}); CPU per job (ms): \
                 top {:.0}, syndics {:.0} and {:.0}",
                via_returned.len(),
                cpu_ms[0],
                cpu_ms[1],
                cpu_ms[2]
            )),
        );
        self.figures.push(
            Figure::new(
                "syndic",
                n,
                "syndic_finished_ms",
                format!("'*' test.ping, top master → 2 syndics × {n}: Finished (syndic_wait {SYNDIC_WAIT_S} s)"),
                "ms",
                Summary::of(&ms(&via_finished)).context("no jobs")?,
                None,
                None,
            )
            .note("a top master ends a job no sooner than syndic_wait after the publish, as Salt's"),
        );
        self.figures.push(
            Figure::new(
                "syndic",
                n,
                "one_master_returned_ms",
                format!("'*' test.ping, one master × {total}: all returned (same run)"),
                "ms",
                Summary::of(&ms(&direct)).context("no jobs")?,
                None,
                None,
            )
            .note(format!(
                "{} of {jobs} jobs had every return (the others: {one_incomplete:?} returned); \
                 machine load after: {:?}",
                direct.len(),
                host::load()
            )),
        );
        self.details.insert(
            format!("syndic-{n}"),
            json!({
                "via_syndics_returned_ms": ms(&via_returned),
                "via_syndics_finished_ms": ms(&via_finished),
                "one_master_returned_ms": ms(&direct),
                "cpu_ms_per_job": { "top": cpu_ms[0], "syn1": cpu_ms[1], "syn2": cpu_ms[2] },
                "incomplete_jobs_returned": { "via_syndics": via_incomplete, "one_master": one_incomplete },
                "minions_resubscribing_before_a_job": { "via_syndics": via_waited, "one_master": one_waited },
            }),
        );
        Ok(())
    }
}
