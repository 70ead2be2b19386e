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
    certs_from_pem(&data, path)
}

/// Every certificate in PEM `data` read from `path` (named in errors); none is an error.
pub fn certs_from_pem(data: &[u8], path: &Path) -> Result<Vec<CertificateDer<'static>>, PkiError> {
    let certs = CertificateDer::pem_slice_iter(data)
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
    key_from_pem(&data, path)
}

/// The first private key in PEM `data` read from `path` (named in errors).
pub fn key_from_pem(data: &[u8], path: &Path) -> Result<PrivateKeyDer<'static>, PkiError> {
    PrivateKeyDer::from_pem_slice(data).map_err(|e| PkiError::Pem {
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
    pem_block("PUBLIC KEY", spki_der)
}

/// Wraps a DER certificate in a PEM `CERTIFICATE` block.
pub fn cert_to_pem(cert: &CertificateDer<'_>) -> String {
    pem_block("CERTIFICATE", cert.as_ref())
}

fn pem_block(label: &str, der: &[u8]) -> String {
    let b64 = base64_encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
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

fn base64_engine() -> base64::engine::GeneralPurpose {
    // Lenient as the reader always was: padding optional, text after `=` ignored.
    base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    )
}

fn base64_encode(data: &[u8]) -> String {
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, data)
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let data = s.split('=').next().unwrap_or_default();
    base64::Engine::decode(&base64_engine(), data).ok()
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
        Ca::from_pem(&cert_pem, cert, &key_pem, key)
    }

    /// The CA from the PEM texts of its certificate and key, read from `cert` and `key` (named
    /// in errors). The key must be the certificate's.
    pub fn from_pem(
        cert_pem: &str,
        cert: &Path,
        key_pem: &str,
        key: &Path,
    ) -> Result<Ca, PkiError> {
        let key_pair = KeyPair::from_pem(key_pem).map_err(|e| PkiError::Pem {
            path: key.to_path_buf(),
            what: format!("invalid CA key: {e}"),
        })?;
        let spki = rcgen::PublicKeyData::subject_public_key_info(&key_pair);
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key_pair).map_err(|e| PkiError::Pem {
            path: cert.to_path_buf(),
            what: format!("invalid CA certificate: {e}"),
        })?;
        let first = certs_from_pem(cert_pem.as_bytes(), cert)?;
        let (_, parsed) =
            x509_parser::parse_x509_certificate(first[0].as_ref()).map_err(|e| PkiError::Pem {
                path: cert.to_path_buf(),
                what: format!("invalid CA certificate: {e}"),
            })?;
        if parsed.tbs_certificate.subject_pki.raw != spki.as_slice() {
            return Err(PkiError::Pem {
                path: key.to_path_buf(),
                what: format!(
                    "this key is not the key of the CA certificate {}",
                    cert.display()
                ),
            });
        }
        Ok(Ca {
            cert_pem: cert_pem.to_owned(),
            issuer,
        })
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
        params.serial_number = Some(random_serial());
        let cert = params.signed_by(&key_pair, &self.issuer).map_err(err)?;
        Ok((
            format!("{}{}", cert.pem(), self.cert_pem),
            key_pair.serialize_pem(),
        ))
    }

    /// Certifies a public key the holder already has (a minion renewing its certificate over
    /// a connection that proved it holds the private key): returns the certificate in PEM
    /// with the CA appended, valid from `not_before` to `not_after`.
    pub fn certify(&self, req: &CertifyRequest) -> Result<String, PkiError> {
        let err = |source| PkiError::Issue {
            name: req.common_name.clone(),
            source,
        };
        let public_key = rcgen::SubjectPublicKeyInfo::from_der(&req.public_key_der).map_err(err)?;
        let mut params = CertificateParams::default();
        params.distinguished_name = dn(&req.common_name, Some(req.role.ou()));
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = match req.role {
            CertRole::Server => vec![ExtendedKeyUsagePurpose::ServerAuth],
            CertRole::Client | CertRole::Minion => vec![ExtendedKeyUsagePurpose::ClientAuth],
        };
        let at = |t: i64| {
            OffsetDateTime::from_unix_timestamp(t).map_err(|e| PkiError::Parse(e.to_string()))
        };
        params.not_before = at(req.validity.not_before)?;
        params.not_after = at(req.validity.not_after)?;
        params.serial_number = Some(random_serial());
        let cert = params.signed_by(&public_key, &self.issuer).map_err(err)?;
        Ok(format!("{}{}", cert.pem(), self.cert_pem))
    }
}

/// A serial number of 16 random bytes (positive). rcgen's default derives it from the public
/// key, which would give every renewal of the same key the same serial.
fn random_serial() -> rcgen::SerialNumber {
    let mut bytes: [u8; 16] = rand::random();
    bytes[0] &= 0x7f;
    bytes[0] |= 0x01;
    rcgen::SerialNumber::from_slice(&bytes)
}

/// What to put into a certificate for a public key its holder already has.
#[derive(Debug, Clone)]
pub struct CertifyRequest {
    /// Subject common name: the minion id.
    pub common_name: String,
    /// What the certificate is for.
    pub role: CertRole,
    /// The holder's public key, DER SubjectPublicKeyInfo.
    pub public_key_der: Vec<u8>,
    /// When the certificate is valid.
    pub validity: Validity,
}

/// A certificate's validity period, in seconds since the Unix epoch (both ends inclusive, as
/// X.509 has it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    /// The first second the certificate is valid.
    pub not_before: i64,
    /// The last second the certificate is valid.
    pub not_after: i64,
}

impl Validity {
    /// Whether the certificate is no longer valid at `now` (Unix seconds).
    pub fn expired_at(&self, now: i64) -> bool {
        now > self.not_after
    }
}

/// A certificate's validity period.
pub fn validity(cert: &CertificateDer<'_>) -> Result<Validity, PkiError> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|e| PkiError::Parse(e.to_string()))?;
    let v = &parsed.tbs_certificate.validity;
    Ok(Validity {
        not_before: v.not_before.timestamp(),
        not_after: v.not_after.timestamp(),
    })
}

/// A certificate's serial number in lowercase hex, colon-separated (as `openssl x509 -serial`
/// groups it, lowercased).
pub fn serial_hex(cert: &CertificateDer<'_>) -> Result<String, PkiError> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|e| PkiError::Parse(e.to_string()))?;
    Ok(parsed
        .tbs_certificate
        .raw_serial()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":"))
}

/// Formats Unix seconds as an RFC 3339 UTC time for messages.
pub fn format_time(unix: i64) -> String {
    match OffsetDateTime::from_unix_timestamp(unix) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        Err(_) => format!("{unix} (Unix time)"),
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

    #[test]
    fn certify_signs_the_holders_key_with_the_given_validity_and_a_fresh_serial() {
        let dir = std::env::temp_dir().join(format!("saltq-pki-certify-{}", std::process::id()));
        let ca = Ca::create("test-ca", &dir.join("ca.crt"), &dir.join("ca.key")).unwrap();
        let (self_signed, key_pem) = self_signed_minion("web1", None).unwrap();
        let own = certs_from_pem(self_signed.as_bytes(), Path::new("minion.crt")).unwrap();
        let own = subject(&own[0]).unwrap();
        let spki = spki_from_pem(&own.public_key_pem).unwrap();
        let req = CertifyRequest {
            common_name: "web1".into(),
            role: CertRole::Minion,
            public_key_der: spki.clone(),
            validity: Validity {
                not_before: 1_700_000_000,
                not_after: 1_700_000_060,
            },
        };
        let first = ca.certify(&req).unwrap();
        let second = ca.certify(&req).unwrap();
        let chain = certs_from_pem(first.as_bytes(), Path::new("issued")).unwrap();
        assert_eq!(chain.len(), 2, "the CA follows the leaf");
        let s = subject(&chain[0]).unwrap();
        assert_eq!(s.common_name.as_deref(), Some("web1"));
        assert_eq!(s.org_unit.as_deref(), Some(MINION_OU));
        assert!(!s.self_issued);
        assert_eq!(s.fingerprint, own.fingerprint, "the holder's own key");
        assert_eq!(validity(&chain[0]).unwrap(), req.validity);
        assert!(validity(&chain[0]).unwrap().expired_at(1_700_000_061));
        assert!(!validity(&chain[0]).unwrap().expired_at(1_700_000_060));
        let again = certs_from_pem(second.as_bytes(), Path::new("issued")).unwrap();
        assert_ne!(
            serial_hex(&chain[0]).unwrap(),
            serial_hex(&again[0]).unwrap()
        );
        // The key the minion holds is the one certified: rustls accepts the pair.
        let key = key_from_pem(key_pem.as_bytes(), Path::new("minion.key")).unwrap();
        rustls::sign::CertifiedKey::from_der(chain, key, &crate::tls::provider()).unwrap();
        assert_eq!(format_time(1_700_000_060), "2023-11-14T22:14:20Z");
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn a_ca_key_that_is_not_the_certificates_key_is_refused() {
        let dir = std::env::temp_dir().join(format!("saltq-pki-mismatch-{}", std::process::id()));
        Ca::create("one", &dir.join("one.crt"), &dir.join("one.key")).unwrap();
        Ca::create("two", &dir.join("two.crt"), &dir.join("two.key")).unwrap();
        let err = Ca::load(&dir.join("one.crt"), &dir.join("two.key"))
            .err()
            .expect("mismatch refused")
            .to_string();
        assert!(err.contains("two.key") && err.contains("one.crt"), "{err}");
        let err = Ca::from_pem("garbage", &dir.join("one.crt"), "", &dir.join("one.key"))
            .err()
            .expect("garbage refused")
            .to_string();
        assert!(err.contains("one.key"), "{err}");
        let _ = fs::remove_dir_all(dir);
    }
}
