//! Certificates and keys: the master's CA, its server and client certificates, minion keys,
//! and the fingerprints that `saltq key -f` prints.
//!
//! Everything is PEM on disk, ECDSA P-256. The master's `pki_dir` holds `ca.crt`/`ca.key`,
//! `master.crt`/`master.key`, `admin.crt`/`admin.key`, and Salt's key directories
//! (`minions`, `minions_pre`, `minions_rejected`, `minions_denied`) of minion public keys.
//! A minion's `pki_dir` holds `minion.key`, its self-signed `minion.crt`, and the master's CA
//! once pinned (`master_ca.crt`).

use std::fs;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use sha2::{Digest, Sha256};
use time::{Duration, OffsetDateTime};

/// Organizational unit that marks a certificate issued by the master's CA to a person or a tool.
pub const CLIENT_OU: &str = "saltq-client";
/// Organizational unit that marks a certificate issued by the master's CA to a minion.
pub const MINION_OU: &str = "saltq-minion";

/// Errors from reading, writing or issuing certificates and keys.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A PEM file held no usable certificate or key.
    #[error("{path}: {what}")]
    Pem { path: PathBuf, what: String },
    /// rcgen refused to build a certificate.
    #[error("cannot issue certificate for {name}: {source}")]
    Issue {
        name: String,
        #[source]
        source: rcgen::Error,
    },
    /// A certificate's contents could not be parsed.
    #[error("cannot parse certificate: {0}")]
    Parse(String),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> PkiError + '_ {
    move |source| PkiError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A certificate chain and its private key, as loaded from PEM files.
#[derive(Debug)]
pub struct CertKey {
    /// The leaf first, then any intermediates.
    pub chain: Vec<CertificateDer<'static>>,
    /// The leaf's private key.
    pub key: PrivateKeyDer<'static>,
}

impl Clone for CertKey {
    fn clone(&self) -> Self {
        CertKey {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

impl CertKey {
    /// Loads a certificate chain and key from two PEM files.
    pub fn load(cert: &Path, key: &Path) -> Result<CertKey, PkiError> {
        Ok(CertKey {
            chain: load_certs(cert)?,
            key: load_key(key)?,
        })
    }
}

/// Reads every certificate in a PEM file; an empty file is an error.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, PkiError> {
    let data = fs::read(path).map_err(io_err(path))?;
    let certs = CertificateDer::pem_slice_iter(&data)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PkiError::Pem {
            path: path.to_path_buf(),
            what: format!("invalid PEM certificate: {e}"),
        })?;
    if certs.is_empty() {
        return Err(PkiError::Pem {
            path: path.to_path_buf(),
            what: "no certificate found".into(),
        });
    }
    Ok(certs)
}

/// Reads the first private key in a PEM file.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, PkiError> {
    let data = fs::read(path).map_err(io_err(path))?;
    PrivateKeyDer::from_pem_slice(&data).map_err(|e| PkiError::Pem {
        path: path.to_path_buf(),
        what: format!("no usable private key: {e}"),
    })
}

/// Writes a file readable by its owner only (keys), creating parent directories.
pub fn write_private(path: &Path, contents: &str) -> Result<(), PkiError> {
    write_file(path, contents, 0o600)
}

/// Writes a world-readable file (certificates, public keys), creating parent directories.
pub fn write_public(path: &Path, contents: &str) -> Result<(), PkiError> {
    write_file(path, contents, 0o644)
}

/// Like [`write_public`], but leaves the data to be synced later (see [`sync_file`]), so many
/// writers can wait for the disk at once instead of one after another.
pub fn write_public_unsynced(path: &Path, contents: &str) -> Result<(), PkiError> {
    write_file_with(path, contents, 0o644, false)
}

/// Makes a file written by [`write_public_unsynced`], and its directory entry, durable. A file
/// removed meanwhile is not an error.
pub fn sync_file(path: &Path) -> Result<(), PkiError> {
    let sync = |p: &Path| match fs::File::open(p).and_then(|f| f.sync_all()) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        r => r.map_err(io_err(p)),
    };
    sync(path)?;
    match path.parent() {
        Some(dir) => sync(dir),
        None => Ok(()),
    }
}

fn write_file(path: &Path, contents: &str, mode: u32) -> Result<(), PkiError> {
    write_file_with(path, contents, mode, true)
}

fn write_file_with(path: &Path, contents: &str, mode: u32, sync: bool) -> Result<(), PkiError> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    // Write beside the target and rename, so a crash never leaves half a key behind.
    let tmp = path.with_extension("tmp");
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(io_err(&tmp))?;
    f.write_all(contents.as_bytes()).map_err(io_err(&tmp))?;
    if sync {
        f.sync_all().map_err(io_err(&tmp))?;
    }
    fs::rename(&tmp, path).map_err(io_err(path))
}

/// The fingerprint `saltq key -f` prints: SHA-256 of the DER public key, as colon-separated hex.
pub fn fingerprint_spki(spki_der: &[u8]) -> String {
    let digest = Sha256::digest(spki_der);
    digest
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The fingerprint of a certificate's public key.
pub fn fingerprint_cert(cert: &CertificateDer<'_>) -> Result<String, PkiError> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|e| PkiError::Parse(e.to_string()))?;
    Ok(fingerprint_spki(parsed.tbs_certificate.subject_pki.raw))
}

/// The public key of a certificate, as a PEM `PUBLIC KEY` block (what Salt keeps per minion).
pub fn public_key_pem(cert: &CertificateDer<'_>) -> Result<String, PkiError> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|e| PkiError::Parse(e.to_string()))?;
    Ok(spki_to_pem(parsed.tbs_certificate.subject_pki.raw))
}

/// Wraps DER SubjectPublicKeyInfo in a PEM `PUBLIC KEY` block.
pub fn spki_to_pem(spki_der: &[u8]) -> String {
    let b64 = base64_encode(spki_der);
    let mut out = String::from("-----BEGIN PUBLIC KEY-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str("-----END PUBLIC KEY-----\n");
    out
}

/// Reads the DER SubjectPublicKeyInfo back out of a PEM `PUBLIC KEY` block.
pub fn spki_from_pem(pem: &str) -> Option<Vec<u8>> {
    let body: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .concat();
    base64_decode(body.trim())
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let mut buf = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        if c == b'=' {
            break;
        }
        let v = B64.iter().position(|&x| x == c)? as u32;
        buf = (buf << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
        }
    }
    Some(out)
}

/// The master's certificate authority: signs the master's server certificate, client
/// certificates, and (optionally) minion certificates.
pub struct Ca {
    cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    /// Loads the CA from `ca.crt` and `ca.key`.
    pub fn load(cert: &Path, key: &Path) -> Result<Ca, PkiError> {
        let cert_pem = fs::read_to_string(cert).map_err(io_err(cert))?;
        let key_pem = fs::read_to_string(key).map_err(io_err(key))?;
        let key_pair = KeyPair::from_pem(&key_pem).map_err(|e| PkiError::Pem {
            path: key.to_path_buf(),
            what: format!("invalid CA key: {e}"),
        })?;
        let issuer = Issuer::from_ca_cert_pem(&cert_pem, key_pair).map_err(|e| PkiError::Pem {
            path: cert.to_path_buf(),
            what: format!("invalid CA certificate: {e}"),
        })?;
        Ok(Ca { cert_pem, issuer })
    }

    /// Creates a new CA named `name` and writes it to `cert` and `key`.
    pub fn create(name: &str, cert: &Path, key: &Path) -> Result<Ca, PkiError> {
        let key_pair = KeyPair::generate().map_err(|source| PkiError::Issue {
            name: name.into(),
            source,
        })?;
        let mut params = CertificateParams::default();
        params.distinguished_name = dn(name, Some("saltq-ca"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        set_validity(&mut params, 3650 * 2);
        let ca_cert = params
            .self_signed(&key_pair)
            .map_err(|source| PkiError::Issue {
                name: name.into(),
                source,
            })?;
        write_private(key, &key_pair.serialize_pem())?;
        write_public(cert, &ca_cert.pem())?;
        Ok(Ca {
            cert_pem: ca_cert.pem(),
            issuer: Issuer::new(params, key_pair),
        })
    }

    /// The CA certificate in PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// Issues a certificate and returns `(cert_pem, key_pem)` with the CA appended to the chain.
    pub fn issue(&self, req: &IssueRequest) -> Result<(String, String), PkiError> {
        let err = |source| PkiError::Issue {
            name: req.common_name.clone(),
            source,
        };
        let key_pair = KeyPair::generate().map_err(err)?;
        // rcgen turns names that parse as IP addresses into IP SANs, the rest into DNS SANs.
        let sans: Vec<String> = req
            .dns_names
            .iter()
            .cloned()
            .chain(req.ips.iter().map(IpAddr::to_string))
            .collect();
        let mut params = CertificateParams::new(sans).map_err(err)?;
        params.distinguished_name = dn(&req.common_name, Some(req.role.ou()));
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = match req.role {
            CertRole::Server => vec![ExtendedKeyUsagePurpose::ServerAuth],
            CertRole::Client | CertRole::Minion => vec![ExtendedKeyUsagePurpose::ClientAuth],
        };
        set_validity(&mut params, req.days);
        let cert = params.signed_by(&key_pair, &self.issuer).map_err(err)?;
        Ok((
            format!("{}{}", cert.pem(), self.cert_pem),
            key_pair.serialize_pem(),
        ))
    }
}

/// What a certificate issued by the CA is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertRole {
    /// The master's own server certificate.
    Server,
    /// A person or tool calling the job, event, runner and key services.
    Client,
    /// A minion, accepted without the pending step when the master allows it.
    Minion,
}

impl CertRole {
    fn ou(self) -> &'static str {
        match self {
            CertRole::Server => "saltq-master",
            CertRole::Client => CLIENT_OU,
            CertRole::Minion => MINION_OU,
        }
    }
}

/// What to put into a certificate issued by the CA.
#[derive(Debug, Clone)]
pub struct IssueRequest {
    /// Subject common name: the client's name, the minion id or the master id.
    pub common_name: String,
    /// What the certificate is for.
    pub role: CertRole,
    /// DNS subject alternative names (server certificates).
    pub dns_names: Vec<String>,
    /// IP subject alternative names (server certificates).
    pub ips: Vec<IpAddr>,
    /// Validity in days.
    pub days: i64,
}

fn dn(cn: &str, ou: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    if let Some(ou) = ou {
        dn.push(DnType::OrganizationalUnitName, ou);
    }
    dn
}

fn set_validity(params: &mut CertificateParams, days: i64) {
    let now = OffsetDateTime::now_utc();
    params.not_before = now - Duration::days(1);
    params.not_after = now + Duration::days(days);
}

/// A minion's own key and self-signed certificate naming its id: what Salt's minion.pem is.
/// Returns `(cert_pem, key_pem)`.
pub fn self_signed_minion(id: &str, key_pem: Option<&str>) -> Result<(String, String), PkiError> {
    let err = |source| PkiError::Issue {
        name: id.into(),
        source,
    };
    let key_pair = match key_pem {
        Some(pem) => KeyPair::from_pem(pem).map_err(err)?,
        None => KeyPair::generate().map_err(err)?,
    };
    let mut params = CertificateParams::default();
    params.distinguished_name = dn(id, None);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    set_validity(&mut params, 3650 * 3);
    let cert = params.self_signed(&key_pair).map_err(err)?;
    Ok((cert.pem(), key_pair.serialize_pem()))
}

/// Subject fields of a certificate that identify its holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// Common name.
    pub common_name: Option<String>,
    /// Organizational unit.
    pub org_unit: Option<String>,
    /// Whether issuer and subject are the same name.
    pub self_issued: bool,
    /// SHA-256 fingerprint of the public key.
    pub fingerprint: String,
    /// The public key in PEM.
    pub public_key_pem: String,
}

/// Reads the identifying subject fields from a DER certificate.
pub fn subject(cert: &CertificateDer<'_>) -> Result<Subject, PkiError> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|e| PkiError::Parse(e.to_string()))?;
    let tbs = &parsed.tbs_certificate;
    let first = |it: &mut dyn Iterator<Item = &x509_parser::x509::AttributeTypeAndValue<'_>>| {
        it.next().and_then(|a| a.as_str().ok()).map(str::to_owned)
    };
    Ok(Subject {
        common_name: first(&mut tbs.subject.iter_common_name()),
        org_unit: first(&mut tbs.subject.iter_organizational_unit()),
        self_issued: tbs.subject.as_raw() == tbs.issuer.as_raw(),
        fingerprint: fingerprint_spki(tbs.subject_pki.raw),
        public_key_pem: spki_to_pem(tbs.subject_pki.raw),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trip() {
        for len in 0..70 {
            let data: Vec<u8> = (0..len).map(|i| (i * 37 % 256) as u8).collect();
            assert_eq!(base64_decode(&base64_encode(&data)).unwrap(), data);
        }
        assert_eq!(base64_encode(b"hello"), "aGVsbG8=");
    }

    #[test]
    fn issued_certificates_carry_role_and_name() {
        let dir = std::env::temp_dir().join(format!("saltq-pki-{}", std::process::id()));
        let ca = Ca::create("test-ca", &dir.join("ca.crt"), &dir.join("ca.key")).unwrap();
        let (cert, _key) = ca
            .issue(&IssueRequest {
                common_name: "alice".into(),
                role: CertRole::Client,
                dns_names: vec![],
                ips: vec![],
                days: 1,
            })
            .unwrap();
        let der = CertificateDer::pem_slice_iter(cert.as_bytes())
            .next()
            .unwrap()
            .unwrap();
        let s = subject(&der).unwrap();
        assert_eq!(s.common_name.as_deref(), Some("alice"));
        assert_eq!(s.org_unit.as_deref(), Some(CLIENT_OU));
        assert!(!s.self_issued);
        // Reloading the CA from disk signs as the same issuer.
        let again = Ca::load(&dir.join("ca.crt"), &dir.join("ca.key")).unwrap();
        assert_eq!(again.cert_pem(), ca.cert_pem());
        let (mcert, _) = self_signed_minion("web1", None).unwrap();
        let der = CertificateDer::pem_slice_iter(mcert.as_bytes())
            .next()
            .unwrap()
            .unwrap();
        let s = subject(&der).unwrap();
        assert_eq!(s.common_name.as_deref(), Some("web1"));
        assert!(s.self_issued);
        assert_eq!(
            spki_from_pem(&s.public_key_pem).map(|k| fingerprint_spki(&k)),
            Some(s.fingerprint)
        );
        let _ = fs::remove_dir_all(dir);
    }
}
