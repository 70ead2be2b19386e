//! The processes a benchmark starts. Each is held by a [`Proc`] guard that stops it by its pid
//! when dropped (SIGTERM, then SIGKILL after a bound), so nothing outlives a run, failed or not.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// How long a process gets to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Every live process (pid, whether it leads its own group), for [`stop_all`] on a signal.
static LIVE: Mutex<Vec<(u32, bool)>> = Mutex::new(Vec::new());

fn forget(pid: u32) {
    if let Ok(mut live) = LIVE.lock() {
        live.retain(|(p, _)| *p != pid);
    }
}

/// Stops every process still alive (SIGTERM, a grace period, SIGKILL): what the harness does
/// when it is itself interrupted, whatever its main thread is doing.
pub fn stop_all() {
    let live: Vec<(u32, bool)> = LIVE.lock().map(|l| l.clone()).unwrap_or_default();
    let send = |sig| {
        for &(pid, group) in &live {
            let pid = Pid::from_raw(pid as i32);
            let _ = if group {
                killpg(pid, sig)
            } else {
                kill(pid, sig)
            };
        }
    };
    send(Signal::SIGTERM);
    let deadline = Instant::now() + STOP_GRACE * 3;
    while Instant::now() < deadline {
        let running = live.iter().any(|&(pid, _)| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| {
                    !s.rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim_start()
                        .starts_with('Z')
                })
                .unwrap_or(false)
        });
        if !running {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    send(Signal::SIGKILL);
}

/// A started process, stopped by pid when the guard drops.
pub struct Proc {
    /// The child; `None` once it has been reaped.
    child: Option<Child>,
    /// What it is, for messages.
    name: String,
    /// Where its stderr goes, quoted when it dies early.
    log: PathBuf,
    /// Whether it leads its own process group (then the group is signalled, so its children
    /// stop with it).
    group: bool,
}

impl Proc {
    /// Starts `cmd` with stdout discarded and stderr to `log`.
    pub fn spawn(cmd: &mut Command, name: &str, log: &Path) -> anyhow::Result<Proc> {
        Self::spawn_with(cmd, name, log, Stdio::null(), false)
    }

    /// Starts `cmd` in its own process group, stdout to `stdout`, stderr to `log`.
    pub fn spawn_group(
        cmd: &mut Command,
        name: &str,
        log: &Path,
        stdout: Stdio,
    ) -> anyhow::Result<Proc> {
        Self::spawn_with(cmd, name, log, stdout, true)
    }

    fn spawn_with(
        cmd: &mut Command,
        name: &str,
        log: &Path,
        stdout: Stdio,
        group: bool,
    ) -> anyhow::Result<Proc> {
        let err = File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
        cmd.stdin(Stdio::null()).stdout(stdout).stderr(err);
        if group {
            std::os::unix::process::CommandExt::process_group(cmd, 0);
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {name} ({:?})", cmd.get_program()))?;
        if let Ok(mut live) = LIVE.lock() {
            live.push((child.id(), group));
        }
        Ok(Proc {
            child: Some(child),
            name: name.to_owned(),
            log: log.to_path_buf(),
            group,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Fails, quoting the end of its log, if the process has exited.
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        if let Some(child) = &mut self.child
            && let Some(status) = child.try_wait()?
        {
            forget(child.id());
            self.child = None;
            bail!(
                "{} exited early ({status}); the end of {}:\n{}",
                self.name,
                self.log.display(),
                tail(&self.log, 20)
            );
        }
        Ok(())
    }

    /// Waits up to `limit` for the process to exit by itself; its exit status if it did.
    pub fn wait_for(
        &mut self,
        limit: Duration,
    ) -> anyhow::Result<Option<std::process::ExitStatus>> {
        let deadline = Instant::now() + limit;
        while let Some(child) = &mut self.child {
            if let Some(status) = child.try_wait()? {
                forget(child.id());
                self.child = None;
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(None)
    }

    /// Resident memory now (`VmRSS`), in KiB.
    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        status_kib(self.pid(), "VmRSS:")
    }

    /// Peak resident memory (`VmHWM`), in KiB.
    pub fn hwm_kib(&self) -> anyhow::Result<u64> {
        status_kib(self.pid(), "VmHWM:")
    }

    /// Kills the process at once (SIGKILL), as a crash would, and reaps it. Idempotent.
    pub fn kill_now(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = child.id();
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        let _ = child.wait();
        forget(pid);
    }

    /// Stops the process: SIGTERM, up to [`STOP_GRACE`] to exit, then SIGKILL. Idempotent.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = child.id();
        if !matches!(child.try_wait(), Ok(Some(_))) {
            let signal = |sig| {
                let p = Pid::from_raw(pid as i32);
                let _ = if self.group {
                    killpg(p, sig)
                } else {
                    kill(p, sig)
                };
            };
            signal(Signal::SIGTERM);
            // A process group (salt-peer) tears down its own daemons first: give it longer.
            let grace = if self.group {
                STOP_GRACE * 3
            } else {
                STOP_GRACE
            };
            let deadline = Instant::now() + grace;
            let mut exited = false;
            while !exited && Instant::now() < deadline {
                exited = matches!(child.try_wait(), Ok(Some(_)));
                if !exited {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            if !exited {
                signal(Signal::SIGKILL);
                let _ = child.wait();
            }
        }
        forget(pid);
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One `kB` line of `/proc/PID/status`.
pub fn status_kib(pid: u32, key: &str) -> anyhow::Result<u64> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no {key} in {path}"))
}

/// The last `n` lines of a file, for error messages.
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs `cmd` to completion with a time bound, returning its wall time, exit status and stdout.
/// The child is killed if it overruns.
pub fn timed_output(
    cmd: &mut Command,
    limit: Duration,
) -> anyhow::Result<(Duration, std::process::ExitStatus, String)> {
    use std::io::Read;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
    let mut out = String::new();
    let mut stdout = child.stdout.take().context("no stdout pipe")?;
    // A reader thread, so a child that overruns can be killed while its pipe is open.
    let reader = std::thread::spawn(move || {
        let _ = stdout.read_to_string(&mut out);
        out
    });
    // A watchdog kills the child if it overruns; the wait itself blocks, for a precise time.
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let pid = Pid::from_raw(child.id() as i32);
    let watchdog = std::thread::spawn(move || {
        let overran = finished.recv_timeout(limit).is_err();
        if overran {
            let _ = kill(pid, Signal::SIGKILL);
        }
        overran
    });
    let status = child.wait()?;
    let elapsed = started.elapsed();
    let _ = done.send(());
    if watchdog.join().unwrap_or(false) {
        bail!("{:?} ran longer than {limit:?}", cmd.get_program());
    }
    let out = reader.join().unwrap_or_default();
    Ok((elapsed, status, out))
}
