//! The reaper: a small process the minion starts beside itself (its own binary, run as the
//! hidden `saltq-minion reap`), told over a pipe of every process group a job's command
//! leads. When the pipe closes (the minion exited, crashed or was SIGKILLed) it kills the
//! groups still listed, so no job's command outlives its minion. A minion that stops cleanly
//! has killed its jobs already; the list is then empty.
//!
//! Why a process: a SIGKILLed minion runs no code, and `PR_SET_PDEATHSIG` reaches only the
//! direct child (a shell's own children would survive) and fires when the spawning *thread*
//! exits. The pipe's write end is close-on-exec, so only the minion holds it.
//!
//! The protocol is one line per change, `+PGID` (listed) or `-PGID` (done with); the
//! bookkeeping is the pure [`Groups`].

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, PoisonError};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The name of the hidden subcommand that runs the reaper.
pub const SUBCOMMAND: &str = "reap";

/// The groups the reaper would kill now.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Groups(BTreeSet<i32>);

impl Groups {
    /// Applies one line of the protocol; the error names what was wrong with it.
    pub fn apply(&mut self, line: &str) -> Result<(), String> {
        let line = line.trim();
        let (add, rest) = match (line.strip_prefix('+'), line.strip_prefix('-')) {
            (Some(rest), _) => (true, rest),
            (_, Some(rest)) => (false, rest),
            _ => return Err(format!("expected +PGID or -PGID, got {line:?}")),
        };
        let pgid = rest
            .parse::<i32>()
            .ok()
            .filter(|p| *p > 1)
            .ok_or_else(|| format!("not a process group id in {line:?}"))?;
        if add {
            self.0.insert(pgid);
        } else {
            self.0.remove(&pgid);
        }
        Ok(())
    }

    /// The groups still listed.
    pub fn pgids(&self) -> Vec<i32> {
        self.0.iter().copied().collect()
    }
}

/// Runs the reaper: reads the protocol from stdin until it closes, then kills the groups
/// still listed. Returns the exit code.
pub fn serve() -> i32 {
    let mut groups = Groups::default();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if let Err(e) = groups.apply(&line) {
            eprintln!("saltq-minion reaper: ignored a line: {e}");
        }
    }
    let left = groups.pgids();
    if !left.is_empty() {
        for pgid in &left {
            // ESRCH (the group ended meanwhile) is harmless.
            let _ = killpg(Pid::from_raw(*pgid), Signal::SIGKILL);
        }
        eprintln!(
            "saltq-minion reaper: the minion is gone; killed the process groups of its jobs' \
             commands: {left:?}"
        );
    }
    0
}

/// The minion's end of the reaper: reports process groups to it.
pub struct Reaper {
    /// The reaper process and the write end of its stdin; `None` once writing failed.
    inner: Mutex<Option<(Child, ChildStdin)>>,
}

impl Reaper {
    /// Starts the reaper from this very executable (`/proc/self/exe`, so that a binary
    /// replaced on disk meanwhile still starts the same code). It leads its own process
    /// group, so a signal for the minion's group (a terminal's Ctrl-C) does not end it
    /// before the minion. It shows in `ps` under the minion's own name.
    pub fn start() -> std::io::Result<Reaper> {
        let name = std::env::args_os()
            .next()
            .unwrap_or_else(|| "saltq-minion".into());
        let mut child = Command::new("/proc/self/exe")
            .arg0(name)
            .arg(SUBCOMMAND)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("the reaper has no stdin"))?;
        Ok(Reaper {
            inner: Mutex::new(Some((child, stdin))),
        })
    }

    fn send(&self, line: &str) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Some((child, stdin)) = inner.as_mut() else {
            return;
        };
        // A few bytes to a pipe its reader drains at once: this does not block.
        if let Err(e) = stdin.write_all(line.as_bytes()) {
            let status = child.try_wait().ok().flatten();
            tracing::warn!(
                error = %e,
                reaper = child.id(),
                ?status,
                "the reaper process is gone: jobs' commands now outlive a minion that is \
                 killed (SIGKILL) or crashes"
            );
            *inner = None;
        }
    }
}

impl saltq_exec::GroupWatch for Reaper {
    fn started(&self, pgid: i32) {
        self.send(&format!("+{pgid}\n"));
    }

    fn ended(&self, pgid: i32) {
        self.send(&format!("-{pgid}\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_follow_the_protocol() {
        let mut g = Groups::default();
        for line in ["+10", "+20\n", "-10", "+30", "-99"] {
            g.apply(line).unwrap();
        }
        assert_eq!(g.pgids(), [20, 30]);
        for (line, err) in [
            ("", "expected +PGID or -PGID, got \"\""),
            ("é5", "expected +PGID or -PGID, got \"é5\""),
            ("+", "not a process group id in \"+\""),
            ("+x", "not a process group id in \"+x\""),
            ("+1", "not a process group id in \"+1\""),
            ("+-5", "not a process group id in \"+-5\""),
            ("*5", "expected +PGID or -PGID, got \"*5\""),
        ] {
            assert_eq!(g.apply(line), Err(err.to_owned()), "{line:?}");
        }
        assert_eq!(g.pgids(), [20, 30]);
    }
}
