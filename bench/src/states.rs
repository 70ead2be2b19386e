//! The `states` scenario: `state.apply` of a 50-state tree through the CLI, one minion
//! process, saltq beside Salt 3007.8 (`bench/salt/states-peer`) in the same run. The tree is
//! the same for both but for the folder it writes to: Jinja loops over `file.directory`,
//! `file.managed` with requisites, `cmd.run` with `creates` and `onchanges`, and `test`
//! states. The first apply changes things; the timed applies that follow find everything in
//! place (a steady-state highstate, as a fleet runs it on a schedule).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::fleet::{Master, start_minion};
use crate::procs::{Proc, tail, timed_output};
use crate::report::Figure;
use crate::scenarios::Ctx;
use crate::stats::Summary;

/// The states in the tree.
pub const STATES: usize = 50;

/// The tree's one SLS, writing under `out`.
pub fn tree_sls(out: &Path) -> String {
    let out = out.display();
    format!(
        r#"{{% set out = "{out}" %}}
bench-root:
  file.directory:
    - name: {{{{ out }}}}
{{% for i in range(10) %}}
dir-{{{{ i }}}}:
  file.directory:
    - name: {{{{ out }}}}/d{{{{ i }}}}
    - require:
      - file: bench-root
{{% for j in range(2) %}}
conf-{{{{ i }}}}-{{{{ j }}}}:
  file.managed:
    - name: {{{{ out }}}}/d{{{{ i }}}}/f{{{{ j }}}}.conf
    - contents: "setting {{{{ i }}}}.{{{{ j }}}} = on"
    - mode: "0644"
    - require:
      - file: dir-{{{{ i }}}}
{{% endfor %}}
{{% endfor %}}
{{% for i in range(5) %}}
marker-{{{{ i }}}}:
  cmd.run:
    - name: touch {{{{ out }}}}/marker-{{{{ i }}}}
    - creates: {{{{ out }}}}/marker-{{{{ i }}}}
    - require:
      - file: bench-root
{{% endfor %}}
{{% for i in range(4) %}}
reload-{{{{ i }}}}:
  cmd.run:
    - name: echo reload {{{{ i }}}}
    - onchanges:
      - file: conf-{{{{ i }}}}-0
{{% endfor %}}
{{% for i in range(10) %}}
check-{{{{ i }}}}:
  test.succeed_without_changes:
    - require:
      - file: conf-{{{{ i }}}}-1
{{% endfor %}}
"#
    )
}

/// Writes the tree for a system into `root/tree`, its states writing to `root/out`.
fn write_tree(root: &Path) -> anyhow::Result<PathBuf> {
    let tree = root.join("tree");
    std::fs::create_dir_all(tree.join("bench"))?;
    std::fs::write(tree.join("bench/init.sls"), tree_sls(&root.join("out")))?;
    Ok(tree)
}

/// Counts states and failures in one minion's return of `--out json`.
fn count(ret: &Value) -> (usize, usize) {
    let Some(states) = ret.as_object() else {
        return (0, 0);
    };
    let failed = states
        .values()
        .filter(|r| r.get("result") == Some(&Value::Bool(false)))
        .count();
    (states.len(), failed)
}

impl Ctx {
    /// The `states` scenario (the size is ignored: one minion).
    pub(crate) async fn states(&mut self) -> anyhow::Result<()> {
        let runs = self.runs_or(10);
        let dir = self.fresh_dir("states")?;
        let tree = write_tree(&dir.join("saltq"))?;
        let (first, walls) = {
            let mut master = Master::start_with(
                &self.bins,
                &dir.join("master"),
                &format!("file_roots:\n  base:\n    - {}\n", tree.display()),
            )?;
            let mut minion =
                start_minion(&self.bins, &dir.join("minion"), "bench-000", master.port)?;
            master.wait_connected(
                1,
                std::time::Instant::now(),
                Duration::from_secs(60),
                &mut [&mut minion],
            )?;
            let apply = || -> anyhow::Result<f64> {
                let mut cmd = master.cli(&self.bins)?;
                cmd.args(["*", "state.apply", "bench", "--out", "json", "-t", "120"]);
                let (took, status, out) = timed_output(&mut cmd, Duration::from_secs(180))?;
                let v: Value = serde_json::from_str(&out).with_context(|| {
                    format!("saltq state.apply printed no JSON ({status}):\n{out}")
                })?;
                let (states, failed) = count(&v["bench-000"]);
                if states != STATES || failed != 0 {
                    bail!(
                        "saltq state.apply bench: {states} states, {failed} failed ({status}):\n{out}"
                    );
                }
                Ok(took.as_secs_f64() * 1e3)
            };
            let first = apply()?;
            let walls = (0..runs)
                .map(|_| apply())
                .collect::<anyhow::Result<Vec<_>>>()?;
            (first, walls)
        };
        let salt = self.salt_states(&dir, runs)?;
        let salt_walls = salt.as_ref().map(|s| s.1.clone());
        self.figures.push(
            Figure::new(
                "states",
                1,
                "state_apply_wall_ms",
                format!("`state.apply` of a {STATES}-state tree, one minion, nothing to change, whole command"),
                "ms",
                Summary::of(&walls).context("no runs")?,
                salt_walls.as_deref().and_then(Summary::of),
                None,
            )
            .note(format!(
                "first apply (making every change): saltq {first:.0} ms, Salt {}",
                salt.as_ref().map_or("—".into(), |s| format!("{:.0} ms", s.0))
            )),
        );
        self.details.insert(
            "states-1".into(),
            json!({"saltq": {"first_ms": first, "walls_ms": walls},
                   "salt": salt.map(|s| json!({"first_ms": s.0, "walls_ms": s.1}))}),
        );
        Ok(())
    }

    /// Salt's first apply and timed applies of the same tree, or `None` when Salt is not
    /// measured in this run.
    fn salt_states(&mut self, dir: &Path, runs: usize) -> anyhow::Result<Option<(f64, Vec<f64>)>> {
        if !self.salt.enabled() {
            return Ok(None);
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("salt/states-peer");
        let tree = write_tree(&dir.join("salt"))?;
        let log = dir.join("states-peer.log");
        let out_path = dir.join("states-peer.out");
        let mut proc = Proc::spawn_group(
            Command::new("bash")
                .arg(&script)
                .arg(&tree)
                .arg("bench")
                .arg(runs.to_string())
                .env("SALT_PEER_PORT", crate::salt::free_port_pair()?.to_string()),
            "states-peer",
            &log,
            Stdio::from(std::fs::File::create(&out_path)?),
        )?;
        let status = proc.wait_for(Duration::from_secs(1800))?;
        proc.stop();
        if !status.is_some_and(|s| s.success()) {
            bail!("states-peer failed ({status:?}):\n{}", tail(&log, 15));
        }
        let text = std::fs::read_to_string(&out_path)?;
        let v: Value = serde_json::from_str(text.lines().last().unwrap_or(""))
            .with_context(|| format!("states-peer printed no JSON:\n{text}"))?;
        if v["states"] != json!(STATES) || v["failed"] != json!(0) {
            bail!("Salt's state.apply did not run the tree cleanly: {v}");
        }
        let walls = v["walls_ms"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        Ok(Some((v["first_ms"].as_f64().unwrap_or(0.0), walls)))
    }
}
