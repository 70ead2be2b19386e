//! The `pillar-fleet` scenario (issue 33, "At fleet scale"): SIZE swarm minions connecting and
//! reconnecting to a master whose pillar tree is 50 SLS files with includes, written once with
//! Jinja (grains, `opts`, loops, filters, a conditional) and once as the plain YAML that Jinja
//! renders to, beside a master with no pillar at all. The master compiles a minion's pillar
//! before it accepts the minion's subscription (the welcome carries it), so "every minion has
//! its pillar" is the master's connected gauge reaching SIZE; the bench then checks it through
//! the master: `I@` targets on the compiled pillar answer from exactly the minions they should,
//! and `pillar.items` of two minions is the same data under both trees.
//!
//! For each tree: the swarm's first connection (keys accepted, certificates issued, every
//! pillar compiled), then the master SIGKILLed and restarted on the same address `--runs`
//! times (its per-minion cache is gone: every pillar compiled again), then the swarm frozen
//! (SIGSTOP) until the master has dropped every connection and thawed: the same minions
//! resubscribe to the same master, whose cache is warm (nothing to recompile). Each
//! phase: wall time until all subscribed, the master's CPU seconds over it, its peak RSS.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use saltq_proto::v1::run_response::Kind;
use saltq_proto::v1::{PublishRequest, RunRequest};
use serde_json::{Value, json};

use crate::fleet::{Master, start_swarm};
use crate::host;
use crate::procs::timed_output;
use crate::report::Figure;
use crate::scenarios::Ctx;
use crate::stats::Summary;

/// Parts (included SLS), roles (the top file's SLS, each including up to four parts) and the
/// one SLS only minions whose id ends in 0 get: 39 + 10 + 1 = 50 SLS files, and `top.sls`.
const PARTS: usize = 39;
const ROLES: usize = 10;
const PARTS_PER_ROLE: usize = 4;
/// The users each part lists, with a uid, a home and a shell.
const USERS: [&str; 5] = ["alice", "bob", "carol", "dave", "erin"];
/// The ports each part lists.
const PORTS: usize = 10;

/// A pillar tree the master is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tree {
    /// An empty `pillar_roots`: the reconnect with no pillar to compile.
    None,
    /// The rendered data as plain YAML files with no shebang (Salt's default `jinja|yaml`
    /// renderer still reads them).
    Yaml,
    /// The same YAML files with `#!yaml`, so no Jinja pass at all.
    YamlShebang,
    /// The Jinja files.
    Jinja,
}

impl Tree {
    fn name(self) -> &'static str {
        match self {
            Tree::None => "none",
            Tree::Yaml => "yaml",
            Tree::YamlShebang => "yaml-shebang",
            Tree::Jinja => "jinja",
        }
    }

    fn parse(s: &str) -> anyhow::Result<Tree> {
        Ok(match s.trim() {
            "none" => Tree::None,
            "yaml" => Tree::Yaml,
            "yaml-shebang" => Tree::YamlShebang,
            "jinja" => Tree::Jinja,
            other => bail!(
                "SALTQ_BENCH_PILLAR_TREES: unknown tree {other:?} (none, yaml, yaml-shebang, jinja)"
            ),
        })
    }

    fn what(self) -> &'static str {
        match self {
            Tree::None => "no pillar",
            Tree::Yaml => "50 plain YAML SLS",
            Tree::YamlShebang => "50 `#!yaml` SLS",
            Tree::Jinja => "50 Jinja SLS",
        }
    }

    /// The figures' machine names: cold, restart, restart CPU, restart peak RSS, warm.
    fn metrics(self) -> [&'static str; 5] {
        match self {
            Tree::None => [
                "none_cold_s",
                "none_restart_s",
                "none_restart_cpu_s",
                "none_restart_hwm_mib",
                "none_warm_s",
            ],
            Tree::Yaml => [
                "yaml_cold_s",
                "yaml_restart_s",
                "yaml_restart_cpu_s",
                "yaml_restart_hwm_mib",
                "yaml_warm_s",
            ],
            Tree::YamlShebang => [
                "yaml_shebang_cold_s",
                "yaml_shebang_restart_s",
                "yaml_shebang_restart_cpu_s",
                "yaml_shebang_restart_hwm_mib",
                "yaml_shebang_warm_s",
            ],
            Tree::Jinja => [
                "jinja_cold_s",
                "jinja_restart_s",
                "jinja_restart_cpu_s",
                "jinja_restart_hwm_mib",
                "jinja_warm_s",
            ],
        }
    }
}

/// The trees to run, from `SALTQ_BENCH_PILLAR_TREES` (comma-separated), default
/// `none,yaml,jinja`.
fn trees() -> anyhow::Result<Vec<Tree>> {
    let spec =
        std::env::var("SALTQ_BENCH_PILLAR_TREES").unwrap_or_else(|_| "none,yaml,jinja".to_owned());
    spec.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(Tree::parse)
        .collect()
}

/// The parts role `k` includes.
fn role_parts(k: usize) -> std::ops::Range<usize> {
    (k * PARTS_PER_ROLE).min(PARTS)..((k + 1) * PARTS_PER_ROLE).min(PARTS)
}

/// The files of `tree`, by path under the pillar root (empty for [`Tree::None`]).
fn tree_files(tree: Tree) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    if tree == Tree::None {
        return files;
    }
    let shebang = if tree == Tree::YamlShebang {
        "#!yaml\n"
    } else {
        ""
    };
    let jinja = tree == Tree::Jinja;
    let mut top = String::from("base:\n  '*':\n");
    for k in 0..ROLES {
        let _ = writeln!(top, "    - fleet.role{k}");
    }
    top.push_str("  '*0':\n    - fleet.tens\n");
    files.insert("top.sls".to_owned(), top);
    for k in 0..ROLES {
        let parts = role_parts(k);
        let text = if jinja {
            format!(
                "{{% set parts = range({}, {}) | list %}}\ninclude:\n{{% for p in parts %}}\n  - fleet.part{{{{ p }}}}\n{{% endfor %}}\n\n\
                 role{k}:\n  enabled: '{{{{ 'yes' if parts | length > 0 else 'no' }}}}'\n  weight: {{{{ {k} * 10 }}}}\n  parts: {{{{ parts | length }}}}\n",
                parts.start, parts.end
            )
        } else {
            let mut t = format!("{shebang}include:\n");
            for p in parts.clone() {
                let _ = writeln!(t, "  - fleet.part{p}");
            }
            let enabled = if parts.is_empty() { "no" } else { "yes" };
            let _ = write!(
                t,
                "\nrole{k}:\n  enabled: '{enabled}'\n  weight: {}\n  parts: {}\n",
                k * 10,
                parts.len()
            );
            t
        };
        files.insert(format!("fleet/role{k}.sls"), text);
    }
    for p in 0..PARTS {
        let text = if jinja {
            format!(
                "{{% set base = {p} * 100 %}}\n{{% set users = {USERS:?} %}}\npart{p}:\n  index: {{{{ base // 100 }}}}\n  \
                 linux: {{{{ grains.get('kernel') == 'Linux' }}}}\n  name: {{{{ ('part-' ~ {p}) | upper }}}}\n  ports:\n\
                 {{% for i in range({PORTS}) %}}\n    - {{{{ base + i }}}}\n{{% endfor %}}\n  users:\n\
                 {{% for u in users %}}\n    {{{{ u }}}}:\n      uid: {{{{ base + loop.index }}}}\n      home: /home/{{{{ u }}}}\n      \
                 shell: {{{{ '/bin/bash' if loop.index is odd else '/bin/zsh' }}}}\n{{% endfor %}}\n"
            )
        } else {
            let base = p * 100;
            let mut t = format!(
                "{shebang}part{p}:\n  index: {p}\n  linux: true\n  name: PART-{p}\n  ports:\n"
            );
            for i in 0..PORTS {
                let _ = writeln!(t, "    - {}", base + i);
            }
            t.push_str("  users:\n");
            for (i, u) in USERS.iter().enumerate() {
                let shell = if (i + 1) % 2 == 1 {
                    "/bin/bash"
                } else {
                    "/bin/zsh"
                };
                let _ = write!(
                    t,
                    "    {u}:\n      uid: {}\n      home: /home/{u}\n      shell: {shell}\n",
                    base + i + 1
                );
            }
            t
        };
        files.insert(format!("fleet/part{p}.sls"), text);
    }
    let tens = if jinja {
        "shard: {{ 'zero' if opts['id'][-1:] == '0' else 'other' }}\n".to_owned()
    } else {
        format!("{shebang}shard: zero\n")
    };
    files.insert("fleet/tens.sls".to_owned(), tens);
    files
}

/// Writes `tree` under `root`.
fn write_tree(root: &Path, tree: Tree) -> anyhow::Result<()> {
    std::fs::create_dir_all(root.join("fleet"))
        .with_context(|| format!("cannot create {}", root.display()))?;
    for (path, text) in tree_files(tree) {
        let p = root.join(path);
        std::fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(())
}

/// How many of the swarm's ids (`swarm-00000`...) end in 0.
fn tens(n: usize) -> usize {
    n.div_ceil(10)
}

/// Publishes `fun` to a compound target and counts the returns (`Finished`'s figures).
async fn count_compound(master: &Master, tgt: &str) -> anyhow::Result<(u32, u32)> {
    let mut client = master.client().await?;
    let req = RunRequest {
        publish: Some(PublishRequest {
            tgt: tgt.into(),
            tgt_type: "compound".into(),
            fun: vec!["test.ping".into()],
            ..Default::default()
        }),
        timeout: 30.0,
        gather_job_timeout: 30.0,
    };
    let mut stream = client
        .run(req)
        .await
        .with_context(|| format!("Run {tgt} test.ping failed"))?
        .into_inner();
    while let Some(msg) = stream
        .message()
        .await
        .with_context(|| format!("the Run stream of {tgt} failed"))?
    {
        if let Some(Kind::Finished(f)) = msg.kind {
            return Ok((f.returned, f.not_returned));
        }
    }
    bail!("the Run stream of {tgt} ended without Finished")
}

/// Checks through the master that every minion has its pillar: `I@` on a key every minion's
/// pillar has and on one only ids ending in 0 have. Skipped for [`Tree::None`].
async fn check_targets(master: &Master, tree: Tree, n: usize) -> anyhow::Result<()> {
    if tree == Tree::None {
        return Ok(());
    }
    for (tgt, want) in [
        ("I@role0:enabled:yes", n),
        ("I@part38:users:erin:shell:/bin/bash", n),
        ("I@shard:zero", tens(n)),
    ] {
        let (returned, missing) = count_compound(master, tgt).await?;
        if returned as usize != want || missing != 0 {
            bail!(
                "{} tree: {tgt} answered from {returned} minions ({missing} did not return), \
                 {want} expected",
                tree.name()
            );
        }
    }
    Ok(())
}

/// `pillar.items` of one minion through the CLI.
fn pillar_items(master: &Master, ctx: &Ctx, id: &str) -> anyhow::Result<Value> {
    let mut cmd = master.cli(&ctx.bins)?;
    cmd.args([id, "pillar.items", "--out", "json"]);
    let (_, status, out) = timed_output(&mut cmd, Duration::from_secs(120))?;
    if !status.success() {
        bail!("saltq {id} pillar.items failed ({status}): {out}");
    }
    let v: Value = serde_json::from_str(&out)
        .with_context(|| format!("saltq {id} pillar.items did not print JSON: {out}"))?;
    let p = v
        .get(id)
        .cloned()
        .with_context(|| format!("saltq {id} pillar.items has no answer from {id}: {out}"))?;
    if p.get("_errors").is_some() {
        bail!("{id}'s pillar has errors: {}", p["_errors"]);
    }
    Ok(p)
}

/// One phase: seconds until all subscribed, master CPU seconds over it, master peak RSS (MiB).
#[derive(Debug, Clone, Copy)]
struct Phase {
    secs: f64,
    cpu_s: f64,
    hwm_mib: f64,
}

impl Phase {
    fn json(self) -> Value {
        json!({"secs": self.secs, "master_cpu_s": self.cpu_s, "master_hwm_mib": self.hwm_mib})
    }
}

/// What one tree measured.
struct TreeRun {
    cold: Phase,
    restarts: Vec<Phase>,
    warm: Phase,
    load: Value,
}

impl Ctx {
    /// The `pillar-fleet` scenario.
    pub(crate) async fn pillar_fleet(&mut self, n: usize) -> anyhow::Result<()> {
        let runs = self.runs_or(2);
        let trees = trees()?;
        let dir = self.fresh_dir(&format!("pillar-fleet-{n}"))?;
        let limit = Duration::from_secs(120 + n as u64 / 20);
        let mut seen: Vec<(Tree, Value)> = Vec::new();
        let mut results = Vec::new();
        for &tree in &trees {
            let tdir = dir.join(tree.name());
            let proot = tdir.join("pillar");
            write_tree(&proot, tree)?;
            let extra = format!("pillar_roots:\n  base:\n    - {}\n", proot.display());
            let root = tdir.join("master");
            let mut master = Master::start_with(&self.bins, &root, &extra)?;
            let port = master.port;
            let load_before = host::load();

            // The first connection: keys, certificates, every pillar compiled.
            let cpu0 = host::cpu_seconds(master.proc.pid());
            let started = Instant::now();
            let mut swarm = start_swarm(&self.bins, &tdir.join("swarm"), n, port)?;
            let took = master.wait_connected(n as u64, started, limit, &mut [&mut swarm])?;
            let cold = Phase {
                secs: took.as_secs_f64(),
                cpu_s: host::cpu_seconds(master.proc.pid()) - cpu0,
                hwm_mib: master.proc.hwm_kib()? as f64 / 1024.0,
            };
            eprintln!("  {}: first connection {cold:?}", tree.name());
            check_targets(&master, tree, n).await?;
            let items = pillar_items(&master, self, "swarm-00000")?;
            let items1 = pillar_items(&master, self, "swarm-00001")?;
            seen.push((tree, json!([items, items1])));

            // The master restarted: its cache is gone, every pillar compiled again.
            let mut restarts = Vec::new();
            for r in 0..runs {
                master.proc.kill_now();
                master = Master::start_on(&self.bins, &root, port, &extra)
                    .with_context(|| format!("{} tree: restart {r}", tree.name()))?;
                let listening = Instant::now();
                let took = master.wait_connected(n as u64, listening, limit, &mut [&mut swarm])?;
                let phase = Phase {
                    secs: took.as_secs_f64(),
                    // The new master's CPU is all since its start.
                    cpu_s: host::cpu_seconds(master.proc.pid()),
                    hwm_mib: master.proc.hwm_kib()? as f64 / 1024.0,
                };
                eprintln!("  {}: restart {r} {phase:?}", tree.name());
                restarts.push(phase);
                check_targets(&master, tree, n).await?;
            }

            // A partition healed: the swarm frozen (SIGSTOP) past the master's 10 s idle
            // timeout, so the master drops every connection, then thawed: the same minion
            // processes (the same grains, `pid` included) subscribe again to the same master,
            // whose cache is warm.
            let pid = Pid::from_raw(swarm.pid() as i32);
            kill(pid, Signal::SIGSTOP).context("cannot stop the swarm (SIGSTOP)")?;
            let frozen = Instant::now();
            let dropped = loop {
                let c = master.connected();
                if matches!(c, Ok(0)) {
                    break Ok(());
                }
                if frozen.elapsed() > Duration::from_secs(120) {
                    break Err(anyhow::anyhow!(
                        "{} tree: the master still counts {c:?} minions 120 s after the swarm froze",
                        tree.name()
                    ));
                }
                std::thread::sleep(Duration::from_millis(250));
            };
            kill(pid, Signal::SIGCONT).context("cannot resume the swarm (SIGCONT)")?;
            dropped?;
            let cpu0 = host::cpu_seconds(master.proc.pid());
            let started = Instant::now();
            let took = master.wait_connected(n as u64, started, limit, &mut [&mut swarm])?;
            let warm = Phase {
                secs: took.as_secs_f64(),
                cpu_s: host::cpu_seconds(master.proc.pid()) - cpu0,
                hwm_mib: master.proc.hwm_kib()? as f64 / 1024.0,
            };
            eprintln!(
                "  {}: swarm thawed after {:.1} s frozen, cache warm {warm:?}",
                tree.name(),
                frozen.elapsed().as_secs_f64() - warm.secs
            );
            check_targets(&master, tree, n).await?;
            swarm.stop();
            master.proc.stop();
            results.push((
                tree,
                TreeRun {
                    cold,
                    restarts,
                    warm,
                    load: json!({"before": load_before, "after": host::load()}),
                },
            ));
        }

        // The trees give every minion the same data.
        let rendered: Vec<&(Tree, Value)> = seen.iter().filter(|(t, _)| *t != Tree::None).collect();
        if let Some((first, data)) = rendered.first() {
            for (t, d) in &rendered[1..] {
                if d != data {
                    bail!(
                        "pillar.items differs between the {} and {} trees:\n{data}\n{d}",
                        first.name(),
                        t.name()
                    );
                }
            }
        }
        for (tree, data) in &seen {
            if *tree == Tree::None && data != &json!([{}, {}]) {
                bail!("with no pillar tree, pillar.items is not empty: {data}");
            }
        }

        let mut details = serde_json::Map::new();
        for (tree, r) in &results {
            let [cold_m, restart_m, cpu_m, hwm_m, warm_m] = tree.metrics();
            let what = tree.what();
            let secs: Vec<f64> = r.restarts.iter().map(|p| p.secs).collect();
            let cpu: Vec<f64> = r.restarts.iter().map(|p| p.cpu_s).collect();
            let hwm: Vec<f64> = r.restarts.iter().map(|p| p.hwm_mib).collect();
            let fig = |metric, label: String, unit, v: Summary| {
                Figure::new("pillar-fleet", n, metric, label, unit, v, None, None)
            };
            self.figures.push(
                fig(
                    cold_m,
                    format!("{what}, swarm of {n} connecting first: all subscribed with pillar"),
                    "s",
                    Summary::single(r.cold.secs),
                )
                .note(format!(
                    "master CPU {:.1} s, peak RSS {:.0} MiB (keys accepted, certificates issued)",
                    r.cold.cpu_s, r.cold.hwm_mib
                )),
            );
            if let Some(s) = Summary::of(&secs) {
                self.figures.push(
                    fig(
                        restart_m,
                        format!(
                            "{what}, master restarted, swarm of {n}: all reconnected with pillar"
                        ),
                        "s",
                        s,
                    )
                    .note(format!(
                        "{runs} restarts, timed from the new master listening; its cache empty"
                    )),
                );
            }
            if let Some(s) = Summary::of(&cpu) {
                self.figures.push(fig(
                    cpu_m,
                    format!("{what}, master restarted: master CPU until all had pillar"),
                    "CPU s",
                    s,
                ));
            }
            if let Some(s) = Summary::of(&hwm) {
                self.figures.push(fig(
                    hwm_m,
                    format!("{what}, master restarted: master peak RSS"),
                    "MiB",
                    s,
                ));
            }
            self.figures.push(
                fig(
                    warm_m,
                    format!("{what}, swarm of {n} frozen past the idle timeout and thawed: all resubscribed (cache warm)"),
                    "s",
                    Summary::single(r.warm.secs),
                )
                .note(format!("master CPU {:.1} s", r.warm.cpu_s)),
            );
            details.insert(
                tree.name().to_owned(),
                json!({
                    "cold": r.cold.json(),
                    "restarts": r.restarts.iter().map(|p| p.json()).collect::<Vec<_>>(),
                    "warm": r.warm.json(),
                    "load": r.load,
                }),
            );
        }
        self.details
            .insert(format!("pillar-fleet-{n}"), Value::Object(details));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trees_have_fifty_sls_and_the_same_shape() {
        for tree in [Tree::Yaml, Tree::YamlShebang, Tree::Jinja] {
            let files = tree_files(tree);
            let sls = files.keys().filter(|k| *k != "top.sls").count();
            assert_eq!(sls, 50, "{tree:?}");
            assert_eq!(files["top.sls"], tree_files(Tree::Yaml)["top.sls"]);
        }
        assert!(tree_files(Tree::None).is_empty());
        let yaml = tree_files(Tree::Yaml);
        assert!(yaml["fleet/role0.sls"].contains("  - fleet.part3\n"));
        assert!(!yaml["fleet/role0.sls"].contains("fleet.part4\n"));
        assert!(yaml["fleet/part7.sls"].contains("    bob:\n      uid: 702\n"));
        assert!(tree_files(Tree::Jinja)["fleet/part7.sls"].contains("{% set base = 7 * 100 %}"));
        assert!(tree_files(Tree::YamlShebang)["fleet/part7.sls"].starts_with("#!yaml\n"));
        // Every part is included by exactly one role.
        let mut included: Vec<usize> = (0..ROLES).flat_map(role_parts).collect();
        included.sort_unstable();
        assert_eq!(included, (0..PARTS).collect::<Vec<_>>());
        assert_eq!(tens(10_000), 1000);
        assert_eq!(tens(21), 3);
        assert!(Tree::parse("xml").is_err());
    }
}
