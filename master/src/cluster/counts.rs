//! Counters by kind for `/metrics`: what a replica sent to NATS, asked of PostgreSQL, and
//! dropped from its queues, each split by a fixed set of kinds known when the replica starts.

use std::sync::atomic::{AtomicU64, Ordering};

/// One counter per kind; a kind not in the set counts as the last one.
#[derive(Debug)]
pub struct Counts {
    kinds: &'static [&'static str],
    n: Vec<AtomicU64>,
}

impl Counts {
    /// Zeroed counters for `kinds` (at least one).
    pub fn new(kinds: &'static [&'static str]) -> Counts {
        assert!(!kinds.is_empty(), "a counter needs at least one kind");
        Counts {
            kinds,
            n: kinds.iter().map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Adds `by` to `kind`.
    pub fn add(&self, kind: &str, by: u64) {
        let i = self
            .kinds
            .iter()
            .position(|k| *k == kind)
            .unwrap_or(self.kinds.len() - 1);
        self.n[i].fetch_add(by, Ordering::Relaxed);
    }

    /// The count of `kind`.
    #[cfg(test)]
    pub fn get(&self, kind: &str) -> u64 {
        self.kinds
            .iter()
            .position(|k| *k == kind)
            .map_or(0, |i| self.n[i].load(Ordering::Relaxed))
    }

    /// Every kind with its count, in the order given.
    pub fn read(&self) -> Vec<(&'static str, u64)> {
        self.kinds
            .iter()
            .zip(&self.n)
            .map(|(k, n)| (*k, n.load(Ordering::Relaxed)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_kind_and_unknown_kinds_as_the_last() {
        let c = Counts::new(&["facts", "other"]);
        c.add("facts", 2);
        c.add("whatever", 1);
        assert_eq!(c.read(), vec![("facts", 2), ("other", 1)]);
        assert_eq!(c.get("facts"), 2);
    }
}
