//! Who is on the other end of a connection, decided once from its TLS client certificate.
//!
//! A peer's identity never comes from a payload: the master derives it from the certificate the
//! peer proved it holds during the handshake, and every request on that connection carries it.

use rustls::pki_types::CertificateDer;

use crate::pki::{self, CLIENT_OU};
use crate::tls::Trust;

/// How the peer's certificate was vouched for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issuer {
    /// Issued by the master's own CA.
    MasterCa,
    /// Issued by a CA the master was configured to trust for minions (e.g. cert-manager).
    ExternalCa,
    /// Issued by a CA the master was configured to trust for clients (e.g. cert-manager).
    ClientCa,
    /// Self-signed: a minion's own key, subject to key acceptance.
    SelfSigned,
}

impl Issuer {
    /// Who issued the certificate, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Issuer::MasterCa => "the master's CA",
            Issuer::ExternalCa => "an external CA for minions (minion_ca_files)",
            Issuer::ClientCa => "an external CA for clients (client_ca_files)",
            Issuer::SelfSigned => "itself (self-signed)",
        }
    }
}

/// The authenticated peer of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peer {
    /// A person or tool with a client certificate from the master's CA.
    Client {
        /// The certificate's common name, used as Salt's `user`.
        name: String,
    },
    /// A minion.
    Minion {
        /// The minion id: the certificate's common name.
        id: String,
        /// SHA-256 fingerprint of the minion's public key.
        fingerprint: String,
        /// The minion's public key in PEM, as stored in Salt's key directories.
        public_key_pem: String,
        /// Who vouched for the certificate.
        issuer: Issuer,
    },
}

impl Peer {
    /// A short description for logs and errors.
    pub fn describe(&self) -> String {
        match self {
            Peer::Client { name } => format!("client {name}"),
            Peer::Minion { id, .. } => format!("minion {id}"),
        }
    }
}

/// Which transport a request arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// gRPC over HTTP/3 on QUIC.
    Quic,
    /// gRPC over HTTP/2 with TLS on TCP.
    H2,
}

/// Attached to every request the master serves (as a request extension).
#[derive(Debug, Clone)]
pub struct PeerInfo {
    /// The authenticated peer.
    pub peer: Peer,
    /// The peer's socket address.
    pub remote_addr: std::net::SocketAddr,
    /// The transport the request arrived on.
    pub transport: Transport,
}

/// Errors deciding a peer's identity.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// The handshake completed without a client certificate (never expected: client auth is mandatory).
    #[error("no client certificate")]
    NoCertificate,
    /// The certificate has no common name to take an identity from.
    #[error("client certificate has no subject common name")]
    NoCommonName,
    /// The certificate could not be parsed.
    #[error(transparent)]
    Pki(#[from] pki::PkiError),
    /// A resumed session's certificate no longer passes (see [`Trust::issuer_of`]).
    #[error("the certificate of the resumed session is refused: {0}")]
    Refused(crate::tls::Refusal),
}

/// Decides who the peer is from the chain it presented, already verified by [`crate::tls`].
pub fn identify(
    chain: Option<&[CertificateDer<'static>]>,
    trust: &Trust,
) -> Result<Peer, IdentityError> {
    let leaf = chain
        .and_then(|c| c.first())
        .ok_or(IdentityError::NoCertificate)?;
    let subject = pki::subject(leaf)?;
    let name = subject.common_name.ok_or(IdentityError::NoCommonName)?;
    let issuer = trust
        .issuer_of(leaf, chain.map(|c| &c[1..]).unwrap_or_default())
        .map_err(IdentityError::Refused)?;
    let client = match issuer {
        Issuer::MasterCa => subject.org_unit.as_deref() == Some(CLIENT_OU),
        Issuer::ClientCa => true,
        Issuer::ExternalCa | Issuer::SelfSigned => false,
    };
    if client {
        return Ok(Peer::Client { name });
    }
    Ok(Peer::Minion {
        id: name,
        fingerprint: subject.fingerprint,
        public_key_pem: subject.public_key_pem,
        issuer,
    })
}
