//! Raising the open-file soft limit to the hard limit at start, so a daemon holding a socket per
//! minion is not stopped at a distribution's default soft limit (often 1024) while the hard
//! limit would allow far more.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// What raising the open-file limit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NofileChange {
    /// The soft limit was raised from `from` to `to` (the hard limit, or `nr_open` below it).
    Raised {
        /// The soft limit before.
        from: u64,
        /// The soft limit now.
        to: u64,
    },
    /// The soft limit already was as high as it may go.
    Unchanged {
        /// The soft limit.
        soft: u64,
    },
}

/// The soft limit to ask for, given the current `soft` and `hard` limits and the kernel's
/// ceiling for one process (`nr_open`, Linux's `fs.nr_open`; `None` where unknown): the hard
/// limit, but no more than `nr_open` since Linux refuses an unlimited or larger soft limit.
/// `None` when there is nothing to raise.
pub fn nofile_target(soft: u64, hard: u64, nr_open: Option<u64>) -> Option<u64> {
    let target = match nr_open {
        Some(n) => hard.min(n),
        None => hard,
    };
    (target > soft).then_some(target)
}

/// Linux's per-process ceiling on open files (`/proc/sys/fs/nr_open`), where readable.
fn nr_open() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// Raises this process's open-file soft limit to its hard limit.
pub fn raise_nofile_limit() -> Result<NofileChange, nix::Error> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    match nofile_target(soft, hard, nr_open()) {
        Some(to) => {
            setrlimit(Resource::RLIMIT_NOFILE, to, hard)?;
            Ok(NofileChange::Raised { from: soft, to })
        }
        None => Ok(NofileChange::Unchanged { soft }),
    }
}

/// Raises the open-file soft limit and logs the outcome (a warning naming the limits when it
/// cannot be raised): called once at a daemon's start.
pub fn raise_nofile_limit_logged() {
    match raise_nofile_limit() {
        Ok(NofileChange::Raised { from, to }) => {
            tracing::info!("raised the open file limit (RLIMIT_NOFILE) from {from} to {to}")
        }
        Ok(NofileChange::Unchanged { soft }) => {
            tracing::info!("open file limit (RLIMIT_NOFILE) is {soft}, the hard limit")
        }
        Err(e) => tracing::warn!("cannot raise the open file limit (RLIMIT_NOFILE): {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_the_hard_limit_within_nr_open() {
        let inf = nix::sys::resource::RLIM_INFINITY;
        for (soft, hard, nr_open, want) in [
            (1024, 4096, Some(1 << 20), Some(4096)),
            (256, 4096, None, Some(4096)),
            (4096, 4096, Some(1 << 20), None),
            (1024, inf, Some(1 << 20), Some(1 << 20)),
            (1 << 20, inf, Some(1 << 20), None),
            (8192, 4096, None, None),
        ] {
            assert_eq!(
                nofile_target(soft, hard, nr_open),
                want,
                "soft {soft} hard {hard} nr_open {nr_open:?}"
            );
        }
    }

    /// The real call, in this test process: afterwards the soft limit is the hard one (or
    /// nr_open below it).
    #[test]
    fn raising_leaves_the_soft_limit_at_its_target() {
        raise_nofile_limit().unwrap();
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        assert_eq!(nofile_target(soft, hard, nr_open()), None);
    }
}
