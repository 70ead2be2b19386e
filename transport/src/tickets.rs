//! TLS session tickets that outlive the master's process. A minion that reconnects with a
//! ticket resumes its TLS session: no certificate chain is verified and nothing is signed on
//! either side, which is most of a handshake's CPU. With rustls's default ticketer the key
//! is new in every process, so after a master restart a whole fleet would do full handshakes
//! at once; here the key comes from a secret kept with the master's keys
//! (`pki_dir/tls_ticket.key`, as the QUIC stateless-reset secret is), so a restarted master
//! reads the tickets its previous process issued.
//!
//! A resumed session carries the client certificate chain of the handshake that issued the
//! ticket, unverified since: [`crate::tls::Trust::issuer_of`] verifies it again (expiry,
//! issuer still trusted) whenever the verifier did not just do it.
//!
//! Tickets are sealed with ChaCha20-Poly1305 under a key derived from the secret, with a
//! random nonce each: `nonce (12 bytes) || ciphertext || tag (16 bytes)`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use sha2::{Digest, Sha256};

use crate::server::HandshakeStats;

/// How long a ticket is good for, in seconds: a minion away longer does a full handshake.
pub const LIFETIME_SECS: u32 = 12 * 3600;

/// What binds a ticket to this use: a ticket from another program with the same key would
/// not open.
const AAD: &[u8] = b"saltq tls session ticket v1";

/// The master's ticket sealer (rustls's [`rustls::server::ProducesTickets`]).
pub struct Tickets {
    key: LessSafeKey,
    /// Where tickets opened (resumptions the master accepted) are counted.
    stats: Arc<HandshakeStats>,
}

impl std::fmt::Debug for Tickets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tickets").finish_non_exhaustive()
    }
}

impl Tickets {
    /// Tickets sealed under a key derived from `secret`; each one opened counts in
    /// [`HandshakeStats::resumed`].
    pub fn new(secret: &[u8], stats: Arc<HandshakeStats>) -> Tickets {
        let mut h = Sha256::new();
        h.update(b"saltq tls session tickets\0");
        h.update(secret);
        let key = UnboundKey::new(&CHACHA20_POLY1305, &h.finalize())
            .expect("a 32-byte key fits ChaCha20-Poly1305");
        Tickets {
            key: LessSafeKey::new(key),
            stats,
        }
    }
}

impl rustls::server::ProducesTickets for Tickets {
    fn enabled(&self) -> bool {
        true
    }

    fn lifetime(&self) -> u32 {
        LIFETIME_SECS
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let nonce: [u8; NONCE_LEN] = rand::random();
        let mut sealed = plain.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(AAD),
                &mut sealed,
            )
            .ok()?;
        let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Some(out)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        if cipher.len() < NONCE_LEN + CHACHA20_POLY1305.tag_len() {
            return None;
        }
        let (nonce, sealed) = cipher.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut buf = sealed.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(AAD), &mut buf)
            .ok()?;
        let plain = plain.to_vec();
        self.stats.resumed.fetch_add(1, Ordering::Relaxed);
        Some(plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::server::ProducesTickets;

    #[test]
    fn a_ticket_opens_under_the_same_secret_only() {
        let stats = Arc::new(HandshakeStats::default());
        let opened = || stats.resumed.load(Ordering::Relaxed);
        let a = Tickets::new(b"secret one", stats.clone());
        let ticket = a.encrypt(b"session state").expect("sealed");
        assert_ne!(&ticket[NONCE_LEN..], b"session state".as_slice());
        // A restarted master: a new sealer from the same secret.
        let again = Tickets::new(b"secret one", stats.clone());
        assert_eq!(
            again.decrypt(&ticket).as_deref(),
            Some(&b"session state"[..])
        );
        assert_eq!(opened(), 1);
        let other = Tickets::new(b"secret two", stats.clone());
        assert_eq!(other.decrypt(&ticket), None);
        let mut tampered = ticket.clone();
        *tampered.last_mut().unwrap() ^= 1;
        assert_eq!(again.decrypt(&tampered), None);
        assert_eq!(again.decrypt(&ticket[..10]), None);
        assert_eq!(opened(), 1, "only good tickets count");
        // Two tickets of the same state differ (a fresh nonce each).
        assert_ne!(a.encrypt(b"x"), a.encrypt(b"x"));
    }
}
