//! The `cluster` scenario: one replica against three on this machine, with the same
//! PostgreSQL job cache and NATS (`SALTQ_BENCH_POSTGRES`, `SALTQ_BENCH_NATS`; by default the
//! servers on 127.0.0.1). A swarm of SIZE minions is spread evenly over the replicas. Measured:
//! `'*' test.ping` through replica 0 until every minion returned, the rate of publishes to one
//! minion, and what each job costs the cluster: NATS messages published by all replicas and
//! job cache transactions, from their `/metrics` before and after. Last, the reconnect of the
//! whole swarm (every swarm stopped, then started again with the same keys and grains): the
//! NATS messages and PostgreSQL statements it cost all replicas, by kind.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crate::fleet::{Bins, Master, run_job, start_swarm_named};
use crate::procs::Proc;
use crate::report::Figure;
use crate::scenarios::Ctx;
use crate::stats::Summary;

/// Jobs to all minions per configuration.
const JOBS: usize = 20;
/// Publishes to one minion for the rate.
const SINGLES: usize = 300;

/// One configuration's figures.
struct Measured {
    all_ms: Vec<f64>,
    singles_per_s: f64,
    nats_per_job: f64,
    tx_per_job: f64,
    /// What the reconnect of the whole swarm cost, summed over the replicas.
    reconnect: Reconnect,
}

/// NATS messages and PostgreSQL statements by kind, over every replica.
#[derive(Debug, Default, Clone, PartialEq)]
struct Reconnect {
    nats: Vec<(&'static str, f64)>,
    pg: Vec<(&'static str, f64)>,
}

/// The kinds the master counts (`master/src/cluster/nats.rs` and `store.rs`).
const NATS_KINDS: &[&str] = &[
    "events", "routes", "facts", "returns", "keys", "deliver", "reply", "other",
];
const PG_KINDS: &[&str] = &["facts", "keys", "read", "schema", "other"];

impl Reconnect {
    /// The counters of every replica now.
    fn read(replicas: &[Master]) -> anyhow::Result<Reconnect> {
        let by = |name: &str, kinds: &[&'static str]| -> anyhow::Result<Vec<(&'static str, f64)>> {
            kinds
                .iter()
                .map(|k| Ok((*k, total(replicas, &format!("{name}{{kind=\"{k}\"}}"))?)))
                .collect()
        };
        Ok(Reconnect {
            nats: by("saltq_cluster_nats_published_total", NATS_KINDS)?,
            pg: by("saltq_cluster_pg_statements_total", PG_KINDS)?,
        })
    }

    /// `self - before`, kind by kind.
    fn since(&self, before: &Reconnect) -> Reconnect {
        let sub = |a: &[(&'static str, f64)], b: &[(&'static str, f64)]| {
            a.iter()
                .zip(b)
                .map(|((k, x), (_, y))| (*k, x - y))
                .collect()
        };
        Reconnect {
            nats: sub(&self.nats, &before.nats),
            pg: sub(&self.pg, &before.pg),
        }
    }

    fn describe(v: &[(&'static str, f64)]) -> String {
        let total: f64 = v.iter().map(|(_, n)| n).sum();
        let parts: Vec<String> = v
            .iter()
            .filter(|(_, n)| *n != 0.0)
            .map(|(k, n)| format!("{k} {n:.0}"))
            .collect();
        format!("{total:.0} ({})", parts.join(", "))
    }
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

/// Sums a counter over every replica's `/metrics`.
fn total(replicas: &[Master], name: &str) -> anyhow::Result<f64> {
    let mut sum = 0.0;
    for r in replicas {
        sum += r.metrics()?.get(name).unwrap_or(0.0);
    }
    Ok(sum)
}

impl Ctx {
    /// One replica, then three, each with a swarm of `n` spread over the replicas.
    pub async fn cluster(&mut self, n: usize) -> anyhow::Result<()> {
        let dir = self.fresh_dir(&format!("cluster-{n}"))?;
        let pg = env_or(
            "SALTQ_BENCH_POSTGRES",
            "host=127.0.0.1 user=postgres dbname=test",
        );
        let nats = env_or("SALTQ_BENCH_NATS", "nats://127.0.0.1:4222");
        // SALTQ_BENCH_CLUSTER_REPLICAS=3 measures only the cluster of three.
        let configs: Vec<usize> = match std::env::var("SALTQ_BENCH_CLUSTER_REPLICAS") {
            Ok(v) if !v.is_empty() => v
                .split(',')
                .map(|r| {
                    r.trim().parse().with_context(|| {
                        format!("SALTQ_BENCH_CLUSTER_REPLICAS: {r:?} is not a number of replicas")
                    })
                })
                .collect::<anyhow::Result<_>>()?,
            _ => vec![1, 3],
        };
        let mut results = Vec::new();
        for replicas in configs {
            let m = measure(
                &self.bins,
                &dir.join(format!("r{replicas}")),
                n,
                replicas,
                &pg,
                &nats,
            )
            .await
            .with_context(|| format!("cluster of {replicas}"))?;
            eprintln!(
                "  {replicas} replica(s): '*' test.ping p50 {:.1} ms; {:.0} publishes/s to one \
                 minion; per job to all: {:.1} NATS messages, {:.2} job cache transactions",
                crate::stats::percentile(&sorted(&m.all_ms), 50.0),
                m.singles_per_s,
                m.nats_per_job,
                m.tx_per_job
            );
            eprintln!(
                "  {replicas} replica(s): reconnect of all {n}: NATS messages {}; PostgreSQL \
                 statements {}",
                Reconnect::describe(&m.reconnect.nats),
                Reconnect::describe(&m.reconnect.pg),
            );
            results.push((replicas, m));
        }
        for (replicas, m) in &results {
            let note = format!(
                "{replicas} replica(s) of one cluster on this machine (PostgreSQL job cache, \
                 NATS), a swarm of {n} spread evenly over them; `Run '*' test.ping` through \
                 replica 0, {JOBS} jobs one after another, each until all {n} returned; \
                 {:.1} NATS messages and {:.2} job cache transactions per job (all replicas, \
                 from /metrics), plus one jid allocation (a PostgreSQL statement) per job; \
                 {SINGLES} publishes to one minion one after another: {:.0}/s",
                m.nats_per_job, m.tx_per_job, m.singles_per_s
            );
            self.figures.push(
                Figure::new(
                    "cluster",
                    n,
                    if *replicas == 1 {
                        "all_returned_1_replica_ms"
                    } else {
                        "all_returned_3_replicas_ms"
                    },
                    format!(
                        "'*' test.ping to {n} minions over {replicas} replica(s), all returned"
                    ),
                    "ms",
                    Summary::of(&m.all_ms).context("no jobs")?,
                    None,
                    None,
                )
                .note(note),
            );
        }
        self.details.insert(
            format!("cluster-{n}"),
            json!(
                results
                    .iter()
                    .map(|(r, m)| json!({
                        "replicas": r, "all_ms": m.all_ms, "singles_per_s": m.singles_per_s,
                        "nats_per_job": m.nats_per_job, "tx_per_job": m.tx_per_job,
                        "reconnect": {
                            "nats": m.reconnect.nats.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                            "pg": m.reconnect.pg.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                        },
                    }))
                    .collect::<Vec<_>>()
            ),
        );
        Ok(())
    }
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

async fn measure(
    bins: &Bins,
    dir: &Path,
    n: usize,
    replicas: usize,
    pg: &str,
    nats: &str,
) -> anyhow::Result<Measured> {
    let schema = format!("saltq_bench_{}_{replicas}", std::process::id());
    let cluster_id = format!("bench-{}-{replicas}", std::process::id());
    let pki = dir.join("cluster-pki");
    let extra = format!(
        "job_cache: postgres\njob_cache_postgres: '{pg}'\njob_cache_postgres_schema: {schema}\n\
         cluster_id: {cluster_id}\ncluster_nats: '{nats}'\ncluster_pki_dir: {}\n",
        pki.display()
    );
    let mut masters = Vec::new();
    for i in 0..replicas {
        let mut m = Master::start_with(
            bins,
            &dir.join(format!("master{i}")),
            &format!("id: replica{i}\n{extra}"),
        )?;
        m.cert_dir = pki.clone();
        masters.push(m);
    }
    let started = Instant::now();
    let mut swarms: Vec<Proc> = Vec::new();
    for (i, m) in masters.iter().enumerate() {
        let count = n / replicas + usize::from(i < n % replicas);
        swarms.push(start_swarm_named(
            bins,
            &dir.join(format!("swarm{i}")),
            count,
            m.port,
            &format!("s{i}-"),
        )?);
    }
    let limit = Duration::from_secs(120 + n as u64 / 20);
    {
        let (first, _) = masters.split_at_mut(1);
        let mut watch: Vec<&mut Proc> = swarms.iter_mut().collect();
        first[0].wait_connected(n as u64, started, limit, &mut watch)?;
    }
    // Keys accepted on the other replicas reach replica 0 through PostgreSQL and NATS.
    let deadline = Instant::now() + limit;
    loop {
        let accepted = masters[0]
            .metrics()?
            .get("saltq_minions{state=\"accepted\"}")
            .unwrap_or(0.0);
        if accepted as usize >= n {
            break;
        }
        if Instant::now() >= deadline {
            bail!("replica 0 knows {accepted} of {n} accepted keys");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let mut client = masters[0].client().await?;
    let warm = run_job(&mut client, "*", "test.ping", 30.0).await?;
    if warm.returned as usize != n {
        bail!("warm-up job: {} of {n} returned", warm.returned);
    }
    let nats_before = total(&masters, "saltq_cluster_nats_messages_sent_total")?;
    let tx_before = total(&masters, "saltq_job_cache_transactions_total")?;
    let mut all_ms = Vec::with_capacity(JOBS);
    for _ in 0..JOBS {
        let o = run_job(&mut client, "*", "test.ping", 30.0).await?;
        if o.returned as usize != n {
            bail!("{} of {n} returned", o.returned);
        }
        all_ms.push(o.elapsed.as_secs_f64() * 1e3);
    }
    // Let the last returns' notices and events leave before reading the counters.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let nats_per_job =
        (total(&masters, "saltq_cluster_nats_messages_sent_total")? - nats_before) / JOBS as f64;
    let tx_per_job =
        (total(&masters, "saltq_job_cache_transactions_total")? - tx_before) / JOBS as f64;
    // A minion on the last replica: the publish crosses replicas when there are several.
    // The swarm pads numbers to the width of its count, at least 5 digits.
    let width = (n / replicas).to_string().len().max(5);
    let one = format!("s{}-{:0width$}", replicas - 1, 0);
    let t = Instant::now();
    for _ in 0..SINGLES {
        let o = run_job(&mut client, &one, "test.ping", 30.0).await?;
        if o.returned != 1 {
            bail!("{one} did not return");
        }
    }
    let singles_per_s = SINGLES as f64 / t.elapsed().as_secs_f64();
    let reconnect = reconnect(bins, dir, &mut masters, &mut swarms, n, limit)?;
    for s in &mut swarms {
        s.stop();
    }
    for m in &mut masters {
        m.proc.stop();
    }
    let _ = std::process::Command::new("psql")
        .arg(pg)
        .arg("-c")
        .arg(format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .output();
    Ok(Measured {
        all_ms,
        singles_per_s,
        nats_per_job,
        tx_per_job,
        reconnect,
    })
}

/// Stops every swarm, waits until no minion is connected anywhere, starts them again (same
/// keys, same grains) and counts what the replicas sent until every minion is back and the
/// counters stand still.
fn reconnect(
    bins: &Bins,
    dir: &Path,
    masters: &mut [Master],
    swarms: &mut [Proc],
    n: usize,
    limit: Duration,
) -> anyhow::Result<Reconnect> {
    let replicas = masters.len();
    for s in swarms.iter_mut() {
        s.stop();
    }
    let deadline = Instant::now() + limit;
    while masters[0].connected()? > 0 {
        if Instant::now() >= deadline {
            bail!("minions still connected {limit:?} after their swarms stopped");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let quiet = |masters: &[Master]| -> anyhow::Result<Reconnect> {
        // Settled when two reads 1 s apart agree on facts and keys (heartbeats never stop).
        let mut last = Reconnect::read(masters)?;
        for _ in 0..120 {
            std::thread::sleep(Duration::from_secs(1));
            let now = Reconnect::read(masters)?;
            let settled = |r: &Reconnect| {
                (
                    r.nats
                        .iter()
                        .filter(|(k, _)| *k != "routes")
                        .map(|(_, v)| *v)
                        .sum::<f64>(),
                    r.pg.iter().map(|(_, v)| *v).sum::<f64>(),
                )
            };
            if settled(&now) == settled(&last) {
                return Ok(now);
            }
            last = now;
        }
        bail!("the cluster's counters did not settle within 120 s")
    };
    let before = quiet(masters)?;
    let started = Instant::now();
    for (i, (m, s)) in masters.iter().zip(swarms.iter_mut()).enumerate() {
        let count = n / replicas + usize::from(i < n % replicas);
        *s = start_swarm_named(
            bins,
            &dir.join(format!("swarm{i}")),
            count,
            m.port,
            &format!("s{i}-"),
        )?;
    }
    {
        let (first, _) = masters.split_at_mut(1);
        let mut watch: Vec<&mut Proc> = swarms.iter_mut().collect();
        first[0].wait_connected(n as u64, started, limit, &mut watch)?;
    }
    Ok(quiet(masters)?.since(&before))
}
