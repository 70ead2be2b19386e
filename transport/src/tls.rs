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
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{
    ClientConfig, DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig,
    SignatureScheme,
};

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

/// The crypto provider saltq uses everywhere (ring).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
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

/// Which CAs the master trusts for client certificates.
#[derive(Clone)]
pub struct Trust {
    master_ca: Arc<dyn ClientCertVerifier>,
    external: Option<Arc<dyn ClientCertVerifier>>,
    clients: Option<Arc<dyn ClientCertVerifier>>,
    /// Who vouched for certificates the handshake verifier just accepted, by the certificate's
    /// SHA-256, so [`Trust::issuer_of`] does not verify the same chain a second time.
    vouched: Arc<Mutex<HashMap<[u8; 32], Issuer>>>,
}

/// Entries kept in [`Trust::vouched`] at most: each normally lives from the verifier's check to
/// the identification right after it; handshakes that fail in between leave theirs behind.
const VOUCHED_MAX: usize = 4096;

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trust")
            .field("external", &self.external.is_some())
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
        let optional = |cas: &[CertificateDer<'static>]| -> Result<_, TlsError> {
            if cas.is_empty() {
                Ok(None)
            } else {
                Ok(Some(client_verifier(cas)?))
            }
        };
        Ok(Trust {
            master_ca: client_verifier(master_ca)?,
            external: optional(external_minion_cas)?,
            clients: optional(external_client_cas)?,
            vouched: Arc::default(),
        })
    }

    /// Who vouches for `leaf`, or `None` when nobody we trust does.
    fn vouch(&self, leaf: &CertificateDer<'_>, rest: &[CertificateDer<'_>]) -> Option<Issuer> {
        let now = UnixTime::now();
        if self.master_ca.verify_client_cert(leaf, rest, now).is_ok() {
            return Some(Issuer::MasterCa);
        }
        let by = |v: &Option<Arc<dyn ClientCertVerifier>>| {
            v.as_ref()
                .is_some_and(|v| v.verify_client_cert(leaf, rest, now).is_ok())
        };
        match (by(&self.external), by(&self.clients)) {
            // One CA for both (common with cert-manager): the OU says which.
            (true, true) => {
                let ou = pki::subject(leaf).ok().and_then(|s| s.org_unit);
                return Some(if ou.as_deref() == Some(pki::CLIENT_OU) {
                    Issuer::ClientCa
                } else {
                    Issuer::ExternalCa
                });
            }
            (true, false) => return Some(Issuer::ExternalCa),
            (false, true) => return Some(Issuer::ClientCa),
            (false, false) => {}
        }
        if verify_self_signed(leaf, now) {
            return Some(Issuer::SelfSigned);
        }
        None
    }

    /// [`Trust::vouch`] for the handshake, remembering the answer for [`Trust::issuer_of`].
    fn vouch_in_handshake(
        &self,
        leaf: &CertificateDer<'_>,
        rest: &[CertificateDer<'_>],
    ) -> Option<Issuer> {
        let issuer = self.vouch(leaf, rest)?;
        let mut v = self.vouched.lock().unwrap_or_else(|e| e.into_inner());
        if v.len() >= VOUCHED_MAX {
            v.clear();
        }
        v.insert(cert_digest(leaf, rest), issuer);
        Some(issuer)
    }

    /// Who vouched for an already verified certificate.
    pub fn issuer_of(&self, leaf: &CertificateDer<'_>, rest: &[CertificateDer<'_>]) -> Issuer {
        let known = self
            .vouched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&cert_digest(leaf, rest));
        known
            .or_else(|| self.vouch(leaf, rest))
            .unwrap_or(Issuer::SelfSigned)
    }
}

/// SHA-256 over the presented chain, the key of [`Trust::vouched`].
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
        match self.trust.vouch_in_handshake(end_entity, intermediates) {
            Some(_) => Ok(ClientCertVerified::assertion()),
            None => Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer,
            )),
        }
    }

    provider_signatures!();
}

/// The master's server-side TLS configuration for one ALPN protocol.
pub fn server_config(
    identity: &CertKey,
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
        .with_single_cert(identity.chain.clone(), identity.key.clone_key())
        .map_err(|source| TlsError::Rustls {
            context: "the master's certificate and key do not match or are unusable".into(),
            source,
        })?;
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
        let bad = |msg: &str| rustls::Error::General(msg.to_owned());
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
