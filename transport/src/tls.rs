//! rustls configuration for both ends, shared by the QUIC and the TCP listeners.
//!
//! The master requires a client certificate on every connection. It accepts exactly three kinds:
//! one issued by its own CA, one issued by an external CA it was told to trust for minions, and a
//! self-signed certificate (a minion's own key, which then goes through key acceptance). A
//! certificate issued by any other CA fails the handshake, as does no certificate at all.
//!
//! A minion trusts the master through a CA file, or pins the CA the master presents on first
//! contact (trust on first use), checked against `master_finger` when that is set.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{
    ClientConfig, DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig,
    SignatureScheme,
};

use arc_swap::ArcSwap;
use sha2::{Digest, Sha256};

use crate::identity::Issuer;
use crate::pki::{self, CertKey};

/// ALPN protocol id for HTTP/3.
pub const ALPN_H3: &[u8] = b"h3";
/// ALPN protocol id for HTTP/2.
pub const ALPN_H2: &[u8] = b"h2";

/// Errors building TLS configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// rustls refused the configuration, e.g. a key that does not match its certificate.
    #[error("{context}: {source}")]
    Rustls {
        context: String,
        #[source]
        source: rustls::Error,
    },
    /// A trust anchor could not be added.
    #[error("cannot use CA certificate: {0}")]
    Anchor(String),
}

/// The crypto provider saltq uses everywhere (ring), preferring TLS 1.3's AES-128-GCM with
/// SHA-256 over ring's first choice, AES-256-GCM with SHA-384. Both are TLS 1.3's and equally
/// trusted, but every handshake runs a dozen HKDF steps with the suite's hash, and SHA-256 runs
/// on the CPU's SHA instructions where SHA-384 has none: SHA-512's block function was 3–4 % of
/// both the master's and the swarm's CPU while 10,000 minions reconnected (BENCHMARKS.md). The
/// packets themselves are cheaper to seal with AES-128 too. The other suites stay, after it.
pub fn provider() -> Arc<CryptoProvider> {
    let mut p = rustls::crypto::ring::default_provider();
    p.cipher_suites
        .sort_by_key(|s| s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
    Arc::new(p)
}

fn algorithms() -> WebPkiSupportedAlgorithms {
    rustls::crypto::ring::default_provider().signature_verification_algorithms
}

fn roots(certs: &[CertificateDer<'static>]) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    for c in certs {
        store
            .add(c.clone())
            .map_err(|e| TlsError::Anchor(e.to_string()))?;
    }
    Ok(store)
}

fn client_verifier(
    roots_: &[CertificateDer<'static>],
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots(roots_)?), provider())
        .build()
        .map_err(|e| TlsError::Anchor(e.to_string()))
}

/// Which CAs the master trusts for client certificates. Clones share one set of anchors, which
/// [`Trust::update`] replaces at once for every listener: handshakes that start afterwards
/// are verified against the new CAs, connections already up are left alone.
#[derive(Clone)]
pub struct Trust {
    anchors: Arc<ArcSwap<Anchors>>,
    /// Chains already verified, by their SHA-256: who vouched for them, until when, under
    /// which generation of CAs. A reconnecting peer presents the same chain again (a resumed
    /// TLS session carries the chain of its first handshake), and verifying it again would
    /// give the same answer until the certificate expires or the CAs change: both are checked
    /// on every use. This saves an ECDSA verification per reconnect, which was 3–4 % of the
    /// master's CPU while 10,000 minions reconnected (BENCHMARKS.md). A refusal is never kept.
    verdicts: Arc<Mutex<HashMap<[u8; 32], Verdict>>>,
}

/// A chain's verification, kept in [`Trust::verdicts`].
#[derive(Debug, Clone, Copy)]
struct Verdict {
    issuer: Issuer,
    /// The certificate's last valid second (Unix time).
    not_after: i64,
    /// [`Anchors::generation`] it was verified under.
    generation: u64,
}

/// Numbers each generation of [`Anchors`], process-wide.
static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One generation of trusted CAs.
struct Anchors {
    /// The master's own CA.
    master_ca: Arc<dyn ClientCertVerifier>,
    /// External CAs for minions (`minion_ca_files`).
    external: Option<Arc<dyn ClientCertVerifier>>,
    /// External CAs for clients (`client_ca_files`).
    clients: Option<Arc<dyn ClientCertVerifier>>,
    /// Which generation: a verdict reached under another one is not used.
    generation: u64,
}

impl Anchors {
    fn new(
        master_ca: &[CertificateDer<'static>],
        external_minion_cas: &[CertificateDer<'static>],
        external_client_cas: &[CertificateDer<'static>],
    ) -> Result<Anchors, TlsError> {
        let optional = |cas: &[CertificateDer<'static>]| -> Result<_, TlsError> {
            if cas.is_empty() {
                Ok(None)
            } else {
                Ok(Some(client_verifier(cas)?))
            }
        };
        Ok(Anchors {
            master_ca: client_verifier(master_ca)?,
            external: optional(external_minion_cas)?,
            clients: optional(external_client_cas)?,
            generation: GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        })
    }
}

/// Why a client certificate was not vouched for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Nobody we trust issued it.
    UnknownIssuer,
    /// A CA we trust issued it, but its validity ended at `not_after` (Unix seconds).
    Expired {
        /// Who issued it.
        issuer: Issuer,
        /// When it stopped being valid.
        not_after: i64,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::UnknownIssuer => f.write_str("no trusted CA issued the certificate"),
            Refusal::Expired { issuer, not_after } => write!(
                f,
                "the certificate issued by {} expired at {}",
                issuer.describe(),
                pki::format_time(*not_after)
            ),
        }
    }
}

impl Refusal {
    fn rustls(&self) -> rustls::Error {
        match self {
            Refusal::UnknownIssuer => {
                rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)
            }
            Refusal::Expired { .. } => {
                rustls::Error::InvalidCertificate(rustls::CertificateError::Expired)
            }
        }
    }
}

/// Entries kept in [`Trust::verdicts`] at most (about 60 bytes each), enough for a fleet of
/// 100,000; when full it starts over, and the next reconnects verify their chains again.
const VERDICTS_MAX: usize = 1 << 17;

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trust")
            .field("external", &self.anchors.load().external.is_some())
            .finish()
    }
}

impl Trust {
    /// Trust the master's CA, and optionally external CAs for minion and client certificates.
    pub fn new(
        master_ca: &[CertificateDer<'static>],
        external_minion_cas: &[CertificateDer<'static>],
        external_client_cas: &[CertificateDer<'static>],
    ) -> Result<Trust, TlsError> {
        Ok(Trust {
            anchors: Arc::new(ArcSwap::from_pointee(Anchors::new(
                master_ca,
                external_minion_cas,
                external_client_cas,
            )?)),
            verdicts: Arc::default(),
        })
    }

    /// Replaces the trusted CAs for every clone of this `Trust`; on an error nothing changes.
    pub fn update(
        &self,
        master_ca: &[CertificateDer<'static>],
        external_minion_cas: &[CertificateDer<'static>],
        external_client_cas: &[CertificateDer<'static>],
    ) -> Result<(), TlsError> {
        let anchors = Anchors::new(master_ca, external_minion_cas, external_client_cas)?;
        self.anchors.store(Arc::new(anchors));
        Ok(())
    }

    /// Who vouches for `leaf`, or why nobody we trust does: a verdict kept from an earlier
    /// verification of the same chain under the same CAs while the certificate is still valid,
    /// else a verification now.
    fn vouch(
        &self,
        leaf: &CertificateDer<'_>,
        rest: &[CertificateDer<'_>],
    ) -> Result<Issuer, Refusal> {
        let anchors = self.anchors.load();
        let now = UnixTime::now();
        let digest = cert_digest(leaf, rest);
        let kept = self
            .verdicts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&digest)
            .copied();
        if let Some(v) = kept
            && v.generation == anchors.generation
            && (now.as_secs() as i64) < v.not_after
        {
            return Ok(v.issuer);
        }
        let issuer = Self::verify(&anchors, leaf, rest, now)?;
        if let Ok(validity) = pki::validity(leaf) {
            let mut verdicts = self.verdicts.lock().unwrap_or_else(|e| e.into_inner());
            if verdicts.len() >= VERDICTS_MAX {
                verdicts.clear();
            }
            verdicts.insert(
                digest,
                Verdict {
                    issuer,
                    not_after: validity.not_after,
                    generation: anchors.generation,
                },
            );
        }
        Ok(issuer)
    }

    /// Verifies `leaf` and its chain against `anchors` as of `now`.
    fn verify(
        anchors: &Anchors,
        leaf: &CertificateDer<'_>,
        rest: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<Issuer, Refusal> {
        // A CA we trust that issued the certificate, but too long ago: said so, not "unknown".
        // The time is checked before the chain, so an expired certificate is checked again as
        // of its last valid second to learn whether this CA issued it.
        let mut expired: Option<(Issuer, i64)> = None;
        let mut by = |v: Option<&Arc<dyn ClientCertVerifier>>, issuer: Issuer| {
            let Some(v) = v else { return false };
            match v.verify_client_cert(leaf, rest, now) {
                Ok(_) => true,
                Err(rustls::Error::InvalidCertificate(
                    rustls::CertificateError::Expired
                    | rustls::CertificateError::ExpiredContext { .. },
                )) => {
                    if expired.is_none()
                        && let Ok(validity) = pki::validity(leaf)
                        && let Ok(last) = u64::try_from(validity.not_after)
                        && v.verify_client_cert(
                            leaf,
                            rest,
                            UnixTime::since_unix_epoch(std::time::Duration::from_secs(last)),
                        )
                        .is_ok()
                    {
                        expired = Some((issuer, validity.not_after));
                    }
                    false
                }
                Err(_) => false,
            }
        };
        if by(Some(&anchors.master_ca), Issuer::MasterCa) {
            return Ok(Issuer::MasterCa);
        }
        match (
            by(anchors.external.as_ref(), Issuer::ExternalCa),
            by(anchors.clients.as_ref(), Issuer::ClientCa),
        ) {
            // One CA for both (common with cert-manager): the OU says which.
            (true, true) => {
                let ou = pki::subject(leaf).ok().and_then(|s| s.org_unit);
                return Ok(if ou.as_deref() == Some(pki::CLIENT_OU) {
                    Issuer::ClientCa
                } else {
                    Issuer::ExternalCa
                });
            }
            (true, false) => return Ok(Issuer::ExternalCa),
            (false, true) => return Ok(Issuer::ClientCa),
            (false, false) => {}
        }
        if verify_self_signed(leaf, now) {
            return Ok(Issuer::SelfSigned);
        }
        // A minion's own certificate past its end: said so too, checked as of its last second.
        if expired.is_none()
            && let Ok(validity) = pki::validity(leaf)
            && validity.not_after < now.as_secs() as i64
            && let Ok(last) = u64::try_from(validity.not_after)
            && verify_self_signed(
                leaf,
                UnixTime::since_unix_epoch(std::time::Duration::from_secs(last)),
            )
        {
            expired = Some((Issuer::SelfSigned, validity.not_after));
        }
        match expired {
            Some((issuer, not_after)) => Err(Refusal::Expired { issuer, not_after }),
            None => Err(Refusal::UnknownIssuer),
        }
    }

    /// Who vouches for a peer's certificate once connected: the verdict the handshake's
    /// verifier reached, or, when there is none (a resumed TLS session carries the chain of an
    /// earlier handshake, perhaps of the master's previous process, and is not verified again
    /// by rustls), a verification now: a certificate that expired or whose CA is no longer
    /// trusted is refused as in a full handshake.
    pub fn issuer_of(
        &self,
        leaf: &CertificateDer<'_>,
        rest: &[CertificateDer<'_>],
    ) -> Result<Issuer, Refusal> {
        self.vouch(leaf, rest)
    }
}

/// SHA-256 over the presented chain, the key of [`Trust::verdicts`].
fn cert_digest(leaf: &CertificateDer<'_>, rest: &[CertificateDer<'_>]) -> [u8; 32] {
    let mut h = Sha256::new();
    for c in std::iter::once(leaf).chain(rest) {
        h.update((c.len() as u64).to_be_bytes());
        h.update(c.as_ref());
    }
    h.finalize().into()
}

/// A self-signed end-entity certificate whose signature checks out against its own key.
fn verify_self_signed(leaf: &CertificateDer<'_>, now: UnixTime) -> bool {
    let Ok(subject) = pki::subject(leaf) else {
        return false;
    };
    if !subject.self_issued || subject.common_name.is_none() {
        return false;
    }
    let owned = CertificateDer::from(leaf.as_ref().to_vec());
    match client_verifier(std::slice::from_ref(&owned)) {
        Ok(v) => v.verify_client_cert(leaf, &[], now).is_ok(),
        Err(_) => false,
    }
}

/// The handshake-signature checks both of our verifiers delegate to the ring provider.
macro_rules! provider_signatures {
    () => {
        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls12_signature(message, cert, dss, &algorithms())
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls13_signature(message, cert, dss, &algorithms())
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            algorithms().supported_schemes()
        }
    };
}

#[derive(Debug)]
struct MasterClientVerifier {
    trust: Trust,
}

impl ClientCertVerifier for MasterClientVerifier {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        match self.trust.vouch(end_entity, intermediates) {
            Ok(_) => Ok(ClientCertVerified::assertion()),
            Err(refusal) => {
                if let Refusal::Expired { issuer, not_after } = &refusal {
                    // The one refusal an operator must act on (the holder did not renew in
                    // time): said once per attempt, with who and since when.
                    let who = pki::subject(end_entity)
                        .ok()
                        .and_then(|s| s.common_name)
                        .unwrap_or_else(|| "a peer without a common name".into());
                    let serial = pki::serial_hex(end_entity).unwrap_or_default();
                    tracing::warn!(
                        "refusing the certificate of {who} (serial {serial}): issued by {}, it expired at {}; it must be renewed before it expires or replaced",
                        issuer.describe(),
                        pki::format_time(*not_after)
                    );
                }
                Err(refusal.rustls())
            }
        }
    }

    provider_signatures!();
}

/// `identity` as rustls uses it, once its key loads and is the leaf certificate's key;
/// `what` names the pair in errors.
fn certified(identity: &CertKey, what: &str) -> Result<CertifiedKey, TlsError> {
    if identity.chain.is_empty() {
        return Err(TlsError::Rustls {
            context: format!("{what}: no certificate"),
            source: rustls::Error::NoCertificatesPresented,
        });
    }
    CertifiedKey::from_der(
        identity.chain.clone(),
        identity.key.clone_key(),
        &provider(),
    )
    .map_err(|source| TlsError::Rustls {
        context: format!("{what} do not match or are unusable"),
        source,
    })
}

/// Checks that a client's certificate carries the public key of its private key (a minion
/// taking a certificate the master issued it).
pub fn check_client_pair(identity: &CertKey) -> Result<(), TlsError> {
    certified(identity, "the certificate and key").map(drop)
}

/// The master's server certificate, swappable while serving: every handshake (QUIC and TCP
/// alike) takes the current one; connections already up keep the one they began with.
#[derive(Clone)]
pub struct ServerCert {
    current: Arc<ArcSwap<CertifiedKey>>,
}

impl std::fmt::Debug for ServerCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerCert").finish_non_exhaustive()
    }
}

impl ServerCert {
    /// Serves `identity` until [`ServerCert::replace`]d.
    pub fn new(identity: &CertKey) -> Result<ServerCert, TlsError> {
        Ok(ServerCert {
            current: Arc::new(ArcSwap::from_pointee(Self::certified(identity)?)),
        })
    }

    /// Checks that `identity` can be served: its key loads and is the leaf certificate's key.
    pub fn certified(identity: &CertKey) -> Result<CertifiedKey, TlsError> {
        certified(identity, "the master's certificate and key")
    }

    /// Serves `identity` from the next handshake on; on an error the current one stays.
    pub fn replace(&self, identity: &CertKey) -> Result<(), TlsError> {
        self.current.store(Arc::new(Self::certified(identity)?));
        Ok(())
    }

    /// The leaf certificate served now.
    pub fn leaf(&self) -> CertificateDer<'static> {
        self.current.load().cert[0].clone()
    }

    /// The whole chain served now, leaf first: its last certificate is the CA a minion pins.
    pub fn chain(&self) -> Vec<CertificateDer<'static>> {
        self.current.load().cert.clone()
    }
}

impl ResolvesServerCert for ServerCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load_full())
    }
}

/// The master's server-side TLS configuration for one ALPN protocol.
pub fn server_config(
    identity: &ServerCert,
    trust: &Trust,
    alpn: &[u8],
) -> Result<ServerConfig, TlsError> {
    let verifier = Arc::new(MasterClientVerifier {
        trust: trust.clone(),
    });
    let mut cfg = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|source| TlsError::Rustls {
            context: "protocol versions".into(),
            source,
        })?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(Arc::new(identity.clone()));
    // The master's preference, not the client's: also an older minion or another client that
    // lists AES-256 first gets the cheaper suite (see `provider`).
    cfg.ignore_client_order = true;
    cfg.alpn_protocols = vec![alpn.to_vec()];
    Ok(cfg)
}

/// How a client decides to trust the master's certificate.
#[derive(Clone)]
pub enum ServerTrust {
    /// Verify against these CA certificates.
    Ca(Vec<CertificateDer<'static>>),
    /// Trust on first use: accept the CA the master presents (optionally only if its
    /// fingerprint equals `master_finger`) and remember it in `pinned`.
    FirstUse {
        /// Expected fingerprint of the master's CA public key, when configured.
        master_finger: Option<String>,
        /// Filled with the CA certificate the master presented.
        pinned: Arc<Mutex<Option<CertificateDer<'static>>>>,
    },
}

/// A client-side TLS configuration (minion or CLI) for one ALPN protocol.
pub fn client_config(
    identity: &CertKey,
    trust: &ServerTrust,
    alpn: &[u8],
) -> Result<ClientConfig, TlsError> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|source| TlsError::Rustls {
            context: "protocol versions".into(),
            source,
        })?;
    let builder = match trust {
        ServerTrust::Ca(cas) => builder.with_root_certificates(roots(cas)?),
        ServerTrust::FirstUse {
            master_finger,
            pinned,
        } => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(FirstUseVerifier {
                master_finger: master_finger.clone(),
                pinned: pinned.clone(),
            })),
    };
    let mut cfg = builder
        .with_client_auth_cert(identity.chain.clone(), identity.key.clone_key())
        .map_err(|source| TlsError::Rustls {
            context: "the client certificate and key do not match or are unusable".into(),
            source,
        })?;
    cfg.alpn_protocols = vec![alpn.to_vec()];
    Ok(cfg)
}

/// Why the first-use verifier refused the master's certificate; shown as the bare sentence,
/// since rustls prints a certificate error's `Debug`.
struct FirstUseRefusal(String);

impl std::fmt::Debug for FirstUseRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for FirstUseRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FirstUseRefusal {}

/// Trust on first use: the master's chain must end in a CA that signed its leaf for the name we
/// dialled; that CA is then pinned by the caller.
#[derive(Debug)]
struct FirstUseVerifier {
    master_finger: Option<String>,
    pinned: Arc<Mutex<Option<CertificateDer<'static>>>>,
}

impl ServerCertVerifier for FirstUseVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // A certificate error (not `General`), so rustls sends a certificate alert and the
        // client classifies it by type (`client::classify`).
        let bad = |msg: &str| {
            rustls::Error::InvalidCertificate(rustls::CertificateError::Other(rustls::OtherError(
                Arc::new(FirstUseRefusal(msg.to_owned())),
            )))
        };
        let ca = intermediates
            .last()
            .ok_or_else(|| bad("the master sent no CA certificate to pin"))?;
        let ca = CertificateDer::from(ca.as_ref().to_vec());
        if let Some(expected) = &self.master_finger {
            let got = pki::fingerprint_cert(&ca).map_err(|e| bad(&e.to_string()))?;
            if !got.eq_ignore_ascii_case(expected.trim()) {
                return Err(bad(&format!(
                    "the master's CA fingerprint {got} does not match master_finger {expected}"
                )));
            }
        }
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots(std::slice::from_ref(&ca)).map_err(|e| bad(&e.to_string()))?),
            provider(),
        )
        .build()
        .map_err(|e| bad(&e.to_string()))?;
        let rest = &intermediates[..intermediates.len() - 1];
        verifier.verify_server_cert(end_entity, rest, server_name, ocsp, now)?;
        if let Ok(mut pinned) = self.pinned.lock() {
            *pinned = Some(ca);
        }
        Ok(ServerCertVerified::assertion())
    }

    provider_signatures!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::{Ca, CertRole, CertifyRequest, IssueRequest, Validity};
    use std::path::{Path, PathBuf};

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("saltq-tls-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn pair(ca: &Ca, cn: &str, role: CertRole) -> CertKey {
        let (c, k) = ca
            .issue(&IssueRequest {
                common_name: cn.into(),
                role,
                dns_names: vec!["localhost".into()],
                ips: vec![],
                days: 1,
            })
            .unwrap();
        CertKey {
            chain: pki::certs_from_pem(c.as_bytes(), Path::new("c")).unwrap(),
            key: pki::key_from_pem(k.as_bytes(), Path::new("k")).unwrap(),
        }
    }

    fn ca_der(ca: &Ca) -> Vec<CertificateDer<'static>> {
        pki::certs_from_pem(ca.cert_pem().as_bytes(), Path::new("ca")).unwrap()
    }

    #[test]
    fn server_cert_swaps_and_keeps_the_old_one_on_a_mismatched_key() {
        let d = tmp("swap");
        let ca = Ca::create("ca", &d.join("ca.crt"), &d.join("ca.key")).unwrap();
        let a = pair(&ca, "master", CertRole::Server);
        let b = pair(&ca, "master", CertRole::Server);
        let served = ServerCert::new(&a).unwrap();
        let clone = served.clone();
        assert_eq!(served.leaf(), a.chain[0]);
        served.replace(&b).unwrap();
        assert_eq!(clone.leaf(), b.chain[0], "every clone serves the new one");
        let mismatched = CertKey {
            chain: a.chain.clone(),
            key: b.key.clone_key(),
        };
        let e = served.replace(&mismatched).unwrap_err().to_string();
        assert!(e.contains("do not match"), "{e}");
        assert_eq!(clone.leaf(), b.chain[0], "the old one stays");
        let empty = CertKey {
            chain: vec![],
            key: b.key.clone_key(),
        };
        assert!(served.replace(&empty).is_err());
        assert_eq!(clone.leaf(), b.chain[0]);
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn trust_update_reaches_every_clone() {
        let d = tmp("trust");
        let ours = Ca::create("ours", &d.join("a.crt"), &d.join("a.key")).unwrap();
        let theirs = Ca::create("theirs", &d.join("b.crt"), &d.join("b.key")).unwrap();
        let alice = pair(&theirs, "alice", CertRole::Client);
        let trust = Trust::new(&ca_der(&ours), &[], &[]).unwrap();
        let listener = trust.clone();
        assert_eq!(
            listener.vouch(&alice.chain[0], &alice.chain[1..]),
            Err(Refusal::UnknownIssuer)
        );
        trust.update(&ca_der(&ours), &[], &ca_der(&theirs)).unwrap();
        assert_eq!(
            listener.vouch(&alice.chain[0], &alice.chain[1..]),
            Ok(Issuer::ClientCa)
        );
        trust.update(&ca_der(&ours), &[], &[]).unwrap();
        assert_eq!(
            listener.vouch(&alice.chain[0], &alice.chain[1..]),
            Err(Refusal::UnknownIssuer),
            "a CA taken out of the bundle is no longer trusted"
        );
        let _ = std::fs::remove_dir_all(d);
    }

    /// A certificate `ca` issues for a minion `id` (its own new key), valid from `not_before`
    /// to `not_after` (Unix seconds).
    fn minion_cert(
        ca: &Ca,
        id: &str,
        not_before: i64,
        not_after: i64,
    ) -> Vec<CertificateDer<'static>> {
        let (own, _) = pki::self_signed_minion(id, None).unwrap();
        let own = pki::certs_from_pem(own.as_bytes(), Path::new("own")).unwrap();
        let spki = pki::spki_from_pem(&pki::subject(&own[0]).unwrap().public_key_pem).unwrap();
        let pem = ca
            .certify(&CertifyRequest {
                common_name: id.into(),
                role: CertRole::Minion,
                public_key_der: spki,
                validity: Validity {
                    not_before,
                    not_after,
                },
            })
            .unwrap();
        pki::certs_from_pem(pem.as_bytes(), Path::new("issued")).unwrap()
    }

    #[test]
    fn an_expired_certificate_from_a_trusted_ca_says_so() {
        let d = tmp("expired");
        let ca = Ca::create("ours", &d.join("a.crt"), &d.join("a.key")).unwrap();
        let now = UnixTime::now().as_secs() as i64;
        let certify = |not_before, not_after| minion_cert(&ca, "web1", not_before, not_after);
        let trust = Trust::new(&ca_der(&ca), &[], &[]).unwrap();
        let fresh = certify(now - 10, now + 60);
        assert_eq!(trust.vouch(&fresh[0], &fresh[1..]), Ok(Issuer::MasterCa));
        let stale = certify(now - 120, now - 60);
        assert_eq!(
            trust.vouch(&stale[0], &stale[1..]),
            Err(Refusal::Expired {
                issuer: Issuer::MasterCa,
                not_after: now - 60
            })
        );
        // The same expired certificate from a CA nobody trusts is just unknown.
        let other = Trust::new(
            &ca_der(&Ca::create("x", &d.join("x.crt"), &d.join("x.key")).unwrap()),
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(
            other.vouch(&stale[0], &stale[1..]),
            Err(Refusal::UnknownIssuer)
        );
        // A resumed session brings a chain no verifier looked at in this process: it is
        // verified then, and refused as in a full handshake once expired or no longer trusted.
        assert_eq!(
            trust.issuer_of(&fresh[0], &fresh[1..]),
            Ok(Issuer::MasterCa)
        );
        assert!(matches!(
            trust.issuer_of(&stale[0], &stale[1..]),
            Err(Refusal::Expired { .. })
        ));
        assert_eq!(
            other.issuer_of(&fresh[0], &fresh[1..]),
            Err(Refusal::UnknownIssuer)
        );
        // The handshake's verifier refuses it with TLS's own reason.
        let v = MasterClientVerifier { trust };
        let e = v
            .verify_client_cert(&stale[0], &stale[1..], UnixTime::now())
            .expect_err("refused");
        assert_eq!(
            e,
            rustls::Error::InvalidCertificate(rustls::CertificateError::Expired)
        );
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn a_kept_verdict_ends_when_the_certificate_expires() {
        let d = tmp("kept");
        let ca = Ca::create("ours", &d.join("a.crt"), &d.join("a.key")).unwrap();
        let now = UnixTime::now().as_secs() as i64;
        let short = minion_cert(&ca, "web2", now - 10, now + 1);
        let trust = Trust::new(&ca_der(&ca), &[], &[]).unwrap();
        assert_eq!(trust.vouch(&short[0], &short[1..]), Ok(Issuer::MasterCa));
        assert_eq!(
            trust.verdicts.lock().unwrap().len(),
            1,
            "the verdict is kept"
        );
        assert_eq!(
            trust.issuer_of(&short[0], &short[1..]),
            Ok(Issuer::MasterCa)
        );
        // Past its last second the kept verdict is not used: the chain is verified again.
        while UnixTime::now().as_secs() as i64 <= now + 1 {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert_eq!(
            trust.issuer_of(&short[0], &short[1..]),
            Err(Refusal::Expired {
                issuer: Issuer::MasterCa,
                not_after: now + 1
            })
        );
        let _ = std::fs::remove_dir_all(d);
    }

    /// Runs a TLS handshake between `client` and `server` in memory.
    fn handshake(
        client: ClientConfig,
        server: ServerConfig,
    ) -> (rustls::ClientConnection, rustls::ServerConnection) {
        let name = ServerName::try_from("localhost").unwrap();
        let mut c = rustls::ClientConnection::new(Arc::new(client), name).unwrap();
        let mut s = rustls::ServerConnection::new(Arc::new(server)).unwrap();
        /// Moves what `from` has to send into `to`.
        fn pass<F, T>(
            from: &mut rustls::ConnectionCommon<F>,
            to: &mut rustls::ConnectionCommon<T>,
        ) {
            let mut wire = Vec::new();
            from.write_tls(&mut wire).unwrap();
            let mut rd = &wire[..];
            while !rd.is_empty() {
                to.read_tls(&mut rd).unwrap();
                to.process_new_packets().unwrap();
            }
        }
        for _ in 0..10 {
            pass(&mut c, &mut s);
            pass(&mut s, &mut c);
            if !c.is_handshaking() && !s.is_handshaking() {
                break;
            }
        }
        assert!(!c.is_handshaking() && !s.is_handshaking(), "handshake done");
        (c, s)
    }

    #[test]
    fn handshakes_use_aes_128_gcm_with_sha_256_whatever_the_client_lists_first() {
        let d = tmp("suite");
        let ca = Ca::create("ours", &d.join("a.crt"), &d.join("a.key")).unwrap();
        let server = ServerCert::new(&pair(&ca, "master", CertRole::Server)).unwrap();
        let trust = Trust::new(&ca_der(&ca), &[], &[]).unwrap();
        let minion = pair(&ca, "web1", CertRole::Minion);
        let ours = client_config(&minion, &ServerTrust::Ca(ca_der(&ca)), ALPN_H3);
        let (c, s) = handshake(
            ours.unwrap(),
            server_config(&server, &trust, ALPN_H3).unwrap(),
        );
        let want = rustls::CipherSuite::TLS13_AES_128_GCM_SHA256;
        assert_eq!(c.negotiated_cipher_suite().unwrap().suite(), want);
        assert_eq!(s.negotiated_cipher_suite().unwrap().suite(), want);
        // A client with ring's own order (AES-256 first), as an older minion or another
        // client: the master's preference decides.
        let theirs = rustls::crypto::ring::default_provider();
        assert_eq!(
            theirs.cipher_suites[0].suite(),
            rustls::CipherSuite::TLS13_AES_256_GCM_SHA384
        );
        let mut other = ClientConfig::builder_with_provider(Arc::new(theirs))
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(roots(&ca_der(&ca)).unwrap())
            .with_client_auth_cert(minion.chain.clone(), minion.key.clone_key())
            .unwrap();
        other.alpn_protocols = vec![ALPN_H3.to_vec()];
        let (c, _) = handshake(other, server_config(&server, &trust, ALPN_H3).unwrap());
        assert_eq!(c.negotiated_cipher_suite().unwrap().suite(), want);
        let _ = std::fs::remove_dir_all(d);
    }
}
