//! When the minion asks its master for a certificate: pure decisions over the certificate it
//! holds and the time, tested without a clock or a master; `daemon.rs` sleeps and calls
//! `RenewCertificate` as they say.
//!
//! Only when the master offers certificates (`Welcome.issues_certificates`). A self-signed
//! certificate is exchanged at once; one the master's CA issued is renewed at two thirds of its
//! lifetime, leaving a third for failed attempts, retried at a tenth of the time left.

use std::time::Duration;

use saltq_transport::pki::Validity;

/// The certificate the minion presents, as far as renewal cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// Made by the minion itself (issuer = subject), not by a CA.
    pub self_signed: bool,
    /// Its validity period.
    pub validity: Validity,
}

/// The second at which a certificate valid over `v` should be renewed: two thirds into it (its
/// end, for a certificate whose end comes before its start).
pub fn renew_at(v: Validity) -> i64 {
    let span = v.not_after - v.not_before;
    if span <= 0 {
        return v.not_after;
    }
    v.not_before + span * 2 / 3
}

/// How long to wait, from `now` (Unix seconds), before asking the master for a certificate.
pub fn next_request(held: Held, now: i64) -> Duration {
    if held.self_signed {
        return Duration::ZERO;
    }
    secs(renew_at(held.validity) - now)
}

/// Retries never come sooner than this, whatever is left.
const RETRY_MIN: i64 = 1;
/// Nor later than this.
const RETRY_MAX: i64 = 300;

/// How long to wait after a failed request before asking again: a tenth of the time the held
/// certificate has left, from one second to five minutes (five minutes once it has expired,
/// or for a self-signed one, which does not run out).
pub fn retry_after(held: Held, now: i64) -> Duration {
    if held.self_signed {
        return secs(RETRY_MAX);
    }
    let left = held.validity.not_after - now;
    if left <= 0 {
        return secs(RETRY_MAX);
    }
    secs((left / 10).clamp(RETRY_MIN, RETRY_MAX))
}

fn secs(s: i64) -> Duration {
    Duration::from_secs(u64::try_from(s).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issued(not_before: i64, not_after: i64) -> Held {
        Held {
            self_signed: false,
            validity: Validity {
                not_before,
                not_after,
            },
        }
    }

    #[test]
    fn issued_certificates_are_renewed_two_thirds_into_their_life() {
        let day = 86400;
        let t0 = 1_700_000_000;
        // Thirty days, backdated five minutes as the master issues them.
        let h = issued(t0 - 300, t0 + 30 * day);
        let at = renew_at(h.validity);
        assert_eq!(at, t0 - 300 + (30 * day + 300) * 2 / 3);
        assert_eq!(next_request(h, t0), Duration::from_secs((at - t0) as u64));
        // Just before, at, and after the point.
        assert_eq!(next_request(h, at - 1), Duration::from_secs(1));
        assert_eq!(next_request(h, at), Duration::ZERO);
        assert_eq!(next_request(h, at + 10), Duration::ZERO);
        // Expired already: at once (the connection may still be up).
        assert_eq!(next_request(h, t0 + 31 * day), Duration::ZERO);
    }

    #[test]
    fn short_lived_certificates_leave_a_third_for_retries() {
        // 40 s backdated 4 s, as the master issues minion_cert_days of 40 s.
        let t0 = 1_000;
        let h = issued(t0 - 4, t0 + 40);
        assert_eq!(renew_at(h.validity), t0 - 4 + 29);
        assert_eq!(next_request(h, t0), Duration::from_secs(25));
        // Failed at the renewal point: 15 s left, retried every 1.5 s rounded down to 1 s.
        assert_eq!(retry_after(h, t0 + 25), Duration::from_secs(1));
    }

    #[test]
    fn a_self_signed_certificate_is_exchanged_at_once() {
        let h = Held {
            self_signed: true,
            validity: Validity {
                not_before: 0,
                not_after: i64::MAX / 2,
            },
        };
        assert_eq!(next_request(h, 1_000), Duration::ZERO);
        assert_eq!(retry_after(h, 1_000), Duration::from_secs(300));
    }

    #[test]
    fn retries_take_a_tenth_of_what_is_left_within_bounds() {
        let h = issued(0, 100_000);
        assert_eq!(retry_after(h, 0), Duration::from_secs(300), "capped");
        assert_eq!(retry_after(h, 99_000), Duration::from_secs(100));
        assert_eq!(
            retry_after(h, 99_995),
            Duration::from_secs(1),
            "at least 1 s"
        );
        assert_eq!(retry_after(h, 100_000), Duration::from_secs(300), "expired");
        assert_eq!(retry_after(h, 200_000), Duration::from_secs(300));
        // A certificate whose validity is backwards is renewed at once.
        assert_eq!(next_request(issued(100, 50), 60), Duration::ZERO);
    }
}
