//! Reconnect delays: jittered exponential backoff from `recon_default` up to `recon_max`.
//! Pure: the caller supplies the randomness, so tests see exact values.

use std::time::Duration;

/// Backoff state across failed attempts.
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    randomize: bool,
    attempt: u32,
}

impl Backoff {
    /// Starts at `base`, doubling per failure up to `max`.
    pub fn new(base: Duration, max: Duration, randomize: bool) -> Backoff {
        Backoff {
            base,
            max: max.max(base),
            randomize,
            attempt: 0,
        }
    }

    /// The delay before the next attempt; `unit` in [0, 1) picks the jitter.
    pub fn next_delay(&mut self, unit: f64) -> Duration {
        let exp = self.base.saturating_mul(1u32 << self.attempt.min(16));
        let capped = exp.min(self.max);
        self.attempt = self.attempt.saturating_add(1);
        if self.randomize {
            // Full jitter over the upper half keeps minions from reconnecting in lockstep.
            capped.mul_f64(0.5 + 0.5 * unit.clamp(0.0, 1.0))
        } else {
            capped
        }
    }

    /// Forgets past failures after a success.
    pub fn reset(&mut self) {
        self.attempt = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_caps_and_resets() {
        let mut b = Backoff::new(
            Duration::from_millis(100),
            Duration::from_millis(1000),
            false,
        );
        let got: Vec<u128> = (0..6).map(|_| b.next_delay(0.3).as_millis()).collect();
        assert_eq!(got, vec![100, 200, 400, 800, 1000, 1000]);
        b.reset();
        assert_eq!(b.next_delay(0.0).as_millis(), 100);
    }

    #[test]
    fn jitter_stays_within_half_to_full() {
        let mut b = Backoff::new(
            Duration::from_millis(1000),
            Duration::from_millis(1000),
            true,
        );
        assert_eq!(b.next_delay(0.0).as_millis(), 500);
        assert_eq!(b.next_delay(0.999_999).as_millis(), 999);
    }
}
