//! Salt 3007.8 measured beside saltq in the same run, through `shared/bench/salt-peer N RUNS`,
//! which starts a real Salt master and N minion processes and prints one JSON line.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use serde::Serialize;

use crate::procs::{Proc, tail};
use crate::stats::Summary;

/// The longest a salt-peer run may take (101 minions, with a first-time install).
const PEER_LIMIT: Duration = Duration::from_secs(1800);

/// What salt-peer measured for one fleet size.
#[derive(Debug, Clone, Serialize)]
pub struct SaltFigures {
    /// `salt '*' test.ping`, whole command, ms.
    pub cli_wall_ms: Summary,
    /// `LocalClient.cmd('*', 'test.ping')`, p50 ms.
    pub roundtrip_p50_ms: f64,
    /// The same, p90 ms.
    pub roundtrip_p90_ms: f64,
    /// The master, all its processes, MiB.
    pub master_rss_mib: f64,
    /// One minion, MiB.
    pub one_minion_rss_mib: f64,
    /// salt-peer's JSON as printed.
    pub raw: serde_json::Value,
}

/// Runs salt-peer once per fleet size and remembers the answer (or why there is none).
pub struct SaltPeer {
    /// The script; `None` when Salt is not to be measured.
    script: Option<PathBuf>,
    /// Runs per measurement.
    runs: usize,
    /// Where its stderr goes.
    work: PathBuf,
    /// Results by fleet size.
    cache: BTreeMap<usize, Result<SaltFigures, String>>,
}

impl SaltPeer {
    /// A peer that runs `script` (or nothing when `None`) with `runs` repetitions.
    pub fn new(script: Option<PathBuf>, runs: usize, work: &Path) -> SaltPeer {
        SaltPeer {
            script,
            runs,
            work: work.to_path_buf(),
            cache: BTreeMap::new(),
        }
    }

    /// Salt's figures for `n` minion processes, measuring them on first request.
    pub fn figures(&mut self, n: usize) -> Option<&SaltFigures> {
        let script = self.script.clone()?;
        if !self.cache.contains_key(&n) {
            eprintln!(
                "# salt-peer {n} {}: Salt 3007.8 with {n} minion processes",
                self.runs
            );
            let got = self.measure(&script, n).map_err(|e| format!("{e:#}"));
            if let Err(e) = &got {
                eprintln!("# salt-peer {n} failed: {e}");
            }
            self.cache.insert(n, got);
            crate::host::settle();
        }
        self.cache.get(&n)?.as_ref().ok()
    }

    /// Whether Salt is measured in this run.
    pub fn enabled(&self) -> bool {
        self.script.is_some()
    }

    /// Every result and failure, for the JSON report.
    pub fn report(&self) -> serde_json::Value {
        self.cache
            .iter()
            .map(|(n, r)| {
                let v = match r {
                    Ok(f) => serde_json::to_value(f).unwrap_or_default(),
                    Err(e) => serde_json::json!({ "error": e }),
                };
                (n.to_string(), v)
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    fn measure(&self, script: &Path, n: usize) -> anyhow::Result<SaltFigures> {
        std::fs::create_dir_all(&self.work)?;
        let log = self.work.join(format!("salt-peer-{n}.log"));
        let out_path = self.work.join(format!("salt-peer-{n}.out"));
        let out = std::fs::File::create(&out_path)?;
        let port = free_port_pair()?;
        let mut proc = Proc::spawn_group(
            Command::new("bash")
                .arg(script)
                .arg(n.to_string())
                .arg(self.runs.to_string())
                .env("SALT_PEER_PORT", port.to_string()),
            &format!("salt-peer {n}"),
            &log,
            Stdio::from(out),
        )?;
        let status = proc.wait_for(PEER_LIMIT)?;
        // Stops it (and its process group) if it overran; a no-op once it has exited.
        proc.stop();
        match status {
            Some(s) if s.success() => {}
            Some(s) => bail!("salt-peer {n} failed ({s}):\n{}", tail(&log, 15)),
            None => bail!("salt-peer {n} ran longer than {PEER_LIMIT:?}"),
        }
        let text = std::fs::read_to_string(&out_path)?;
        let line = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .context("salt-peer printed nothing")?;
        let raw: serde_json::Value = serde_json::from_str(line)
            .with_context(|| format!("salt-peer's last line is not JSON: {line}"))?;
        parse(raw)
    }
}

/// Reads salt-peer's JSON.
fn parse(raw: serde_json::Value) -> anyhow::Result<SaltFigures> {
    let num = |path: &[&str]| -> anyhow::Result<f64> {
        let mut v = &raw;
        for k in path {
            v = &v[*k];
        }
        v.as_f64()
            .with_context(|| format!("salt-peer's JSON has no number at {}", path.join(".")))
    };
    let wall = ["cli_test_ping_wall_ms"];
    Ok(SaltFigures {
        cli_wall_ms: Summary {
            median: num(&[wall[0], "median"])?,
            min: Some(num(&[wall[0], "min"])?),
            max: Some(num(&[wall[0], "max"])?),
            runs: raw["runs"].as_u64().unwrap_or(0) as usize,
        },
        roundtrip_p50_ms: num(&["roundtrip_test_ping_ms", "p50"])?,
        roundtrip_p90_ms: num(&["roundtrip_test_ping_ms", "p90"])?,
        master_rss_mib: num(&["master_rss_mib"])?,
        one_minion_rss_mib: num(&["one_minion_rss_mib"])?,
        raw,
    })
}

/// A TCP port P on 127.0.0.1 with P+1 free too (Salt's publish and return ports).
pub(crate) fn free_port_pair() -> anyhow::Result<u16> {
    for _ in 0..50 {
        let a = TcpListener::bind("127.0.0.1:0")?;
        let p = a.local_addr()?.port();
        if p < u16::MAX && TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return Ok(p);
        }
    }
    bail!("found no two adjacent free ports on 127.0.0.1 in 50 tries")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_salt_peer_json() {
        let raw = serde_json::json!({
            "system": "salt 3007.8 (zeromq)", "minions": 1, "runs": 5,
            "cli_test_ping_wall_ms": {"median": 440.0, "min": 430.1, "max": 470.2},
            "roundtrip_test_ping_ms": {"p50": 74.0, "p90": 84.0},
            "master_rss_mib": 730.0, "one_minion_rss_mib": 80.5
        });
        let f = parse(raw).unwrap();
        assert_eq!(f.cli_wall_ms.median, 440.0);
        assert_eq!(f.cli_wall_ms.runs, 5);
        assert_eq!(f.roundtrip_p90_ms, 84.0);
        assert_eq!(f.one_minion_rss_mib, 80.5);
    }
}
