//! The master's certificates over time.
//!
//! At start, and again whenever they change on disk (cert-manager renews them in Kubernetes),
//! the master reads three parts, each on its own so a broken file in one leaves the others
//! alone:
//!
//! - the server certificate and key (`master_cert_file`/`master_key_file`, or `master.crt`/
//!   `master.key` in the certificate directory), served to every new handshake;
//! - the CAs it trusts for client certificates (`ca.crt`, `minion_ca_files`,
//!   `client_ca_files`);
//! - its own CA (`ca.crt` with `ca.key`), which issues minion certificates.
//!
//! Files are polled every [`POLL`] (read and hashed: a handful of small files) and a change is
//! taken once it has settled (`saltq_transport::reload`). A set that fails to load (not PEM,
//! a key that is not its certificate's) is logged with the file's name and the one in use is
//! kept. Connections already up, QUIC and HTTP/2 alike, keep the certificate they began with;
//! new handshakes get the new one.
//!
//! Also here: which minions the master issues certificates to, and for how long (pure).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use rustls::pki_types::CertificateDer;
use saltq_transport::Issuer;
use saltq_transport::pki::{self, Ca, CertKey, Validity};
use saltq_transport::reload::{self, FileRead, Step, Watch};
use saltq_transport::tls::{ServerCert, Trust};
use tokio::sync::watch;

use crate::config::MasterConfig;
use crate::run::PkiFiles;

/// How often the files are read for changes.
pub const POLL: Duration = Duration::from_secs(2);

/// The files the master's TLS material comes from.
#[derive(Debug, Clone)]
pub struct CertFiles {
    /// The server certificate chain.
    pub server_cert: PathBuf,
    /// Its key.
    pub server_key: PathBuf,
    /// Whether those two were configured (`master_cert_file`), for messages.
    pub server_configured: bool,
    /// The master's CA certificate.
    pub ca_cert: PathBuf,
    /// The master's CA key.
    pub ca_key: PathBuf,
    /// External CAs for minion certificates.
    pub minion_cas: Vec<PathBuf>,
    /// External CAs for client certificates.
    pub client_cas: Vec<PathBuf>,
}

/// One reloadable part of the material.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// The server certificate and key.
    Server,
    /// The trusted CAs.
    Trust,
    /// The master's own CA, for issuing.
    Authority,
}

const PARTS: [Part; 3] = [Part::Server, Part::Trust, Part::Authority];

impl CertFiles {
    /// The files `cfg` names.
    pub fn of(cfg: &MasterConfig) -> CertFiles {
        let dir = cfg.cert_dir();
        let (server_cert, server_key) = cfg.master_cert.clone().unwrap_or_else(|| {
            (
                dir.join(PkiFiles::MASTER_CERT),
                dir.join(PkiFiles::MASTER_KEY),
            )
        });
        CertFiles {
            server_cert,
            server_key,
            server_configured: cfg.master_cert.is_some(),
            ca_cert: dir.join(PkiFiles::CA_CERT),
            ca_key: dir.join(PkiFiles::CA_KEY),
            minion_cas: cfg.minion_ca_files.clone(),
            client_cas: cfg.client_ca_files.clone(),
        }
    }

    fn paths(&self, part: Part) -> Vec<PathBuf> {
        match part {
            Part::Server => vec![self.server_cert.clone(), self.server_key.clone()],
            Part::Trust => std::iter::once(self.ca_cert.clone())
                .chain(self.minion_cas.iter().cloned())
                .chain(self.client_cas.iter().cloned())
                .collect(),
            Part::Authority => vec![self.ca_cert.clone(), self.ca_key.clone()],
        }
    }

    /// The config key a part's files come from, for start-up errors.
    fn key(&self, part: Part) -> &'static str {
        match part {
            Part::Server if self.server_configured => "keys master_cert_file/master_key_file",
            Part::Server | Part::Authority => "pki_dir (or cluster_pki_dir)",
            Part::Trust => "keys minion_ca_files/client_ca_files",
        }
    }
}

/// Parses a PEM certificate list from a read, naming the file on error.
fn certs(read: &FileRead) -> Result<Vec<CertificateDer<'static>>, String> {
    pki::certs_from_pem(read.bytes()?, &read.path).map_err(|e| e.to_string())
}

/// The server pair from `[cert, key]` reads, checked to be servable.
fn server_from(reads: &[FileRead]) -> Result<CertKey, String> {
    let [cert, key] = reads else {
        return Err("internal: the server part reads two files".into());
    };
    let identity = CertKey {
        chain: certs(cert)?,
        key: pki::key_from_pem(key.bytes()?, &key.path).map_err(|e| e.to_string())?,
    };
    ServerCert::certified(&identity)
        .map_err(|e| format!("{} and {}: {e}", cert.path.display(), key.path.display()))?;
    Ok(identity)
}

/// Trust anchors from `[ca.crt, minion CAs.., client CAs..]` reads.
type Anchors = (
    Vec<CertificateDer<'static>>,
    Vec<CertificateDer<'static>>,
    Vec<CertificateDer<'static>>,
);

fn trust_from(reads: &[FileRead], minion_cas: usize) -> Result<Anchors, String> {
    let Some((ca, rest)) = reads.split_first() else {
        return Err("internal: the trust part reads ca.crt first".into());
    };
    let (minions, clients) = rest.split_at(minion_cas.min(rest.len()));
    let all = |reads: &[FileRead]| -> Result<Vec<_>, String> {
        let mut out = Vec::new();
        for r in reads {
            out.extend(certs(r)?);
        }
        Ok(out)
    };
    let anchors = (certs(ca)?, all(minions)?, all(clients)?);
    // Building the verifiers is the check that each certificate can be a trust anchor.
    Trust::new(&anchors.0, &anchors.1, &anchors.2).map_err(|e| {
        let files: Vec<String> = reads.iter().map(|r| r.path.display().to_string()).collect();
        format!("{}: {e}", files.join(", "))
    })?;
    Ok(anchors)
}

/// The master's CA from `[ca.crt, ca.key]` reads.
fn authority_from(reads: &[FileRead]) -> Result<Ca, String> {
    let [cert, key] = reads else {
        return Err("internal: the authority part reads two files".into());
    };
    let text = |r: &FileRead| -> Result<String, String> {
        String::from_utf8(r.bytes()?.to_vec())
            .map_err(|_| format!("{}: not a PEM text file", r.path.display()))
    };
    Ca::from_pem(&text(cert)?, &cert.path, &text(key)?, &key.path).map_err(|e| e.to_string())
}

/// The master's TLS material in use, shared by the listeners (server certificate, trust) and
/// the minion service (the CA that issues minion certificates).
pub struct Live {
    /// Served to each new handshake.
    pub server: ServerCert,
    /// Checked at each new handshake.
    pub trust: Trust,
    /// Issues minion certificates.
    authority: ArcSwap<Ca>,
}

impl Live {
    /// The CA issuing minion certificates now.
    pub fn authority(&self) -> Arc<Ca> {
        self.authority.load_full()
    }
}

/// What the poll loop remembers of each part.
pub struct Watches {
    files: CertFiles,
    parts: Vec<(Part, Watch)>,
}

/// Reads every part once, for the start: an error names the config key and the file.
pub fn load(files: &CertFiles) -> Result<(Live, Watches), String> {
    let mut parts = Vec::new();
    let mut read = |part: Part| {
        let reads = reload::read_all(&files.paths(part));
        parts.push((part, Watch::new(reload::digest(&reads))));
        reads
    };
    let named = |part: Part| {
        let key = files.key(part);
        move |e: String| format!("{key}: {e}")
    };
    let server = server_from(&read(Part::Server)).map_err(named(Part::Server))?;
    let (ca, minions, clients) =
        trust_from(&read(Part::Trust), files.minion_cas.len()).map_err(named(Part::Trust))?;
    let authority = authority_from(&read(Part::Authority)).map_err(named(Part::Authority))?;
    let live = Live {
        server: ServerCert::new(&server).map_err(|e| e.to_string())?,
        trust: Trust::new(&ca, &minions, &clients).map_err(|e| e.to_string())?,
        authority: ArcSwap::from_pointee(authority),
    };
    Ok((
        live,
        Watches {
            files: files.clone(),
            parts,
        },
    ))
}

/// Builds `part` from `reads` and puts it in use; says what is now in use.
fn apply(live: &Live, files: &CertFiles, part: Part, reads: &[FileRead]) -> Result<String, String> {
    match part {
        Part::Server => {
            let identity = server_from(reads)?;
            live.server.replace(&identity).map_err(|e| e.to_string())?;
            let leaf = &identity.chain[0];
            Ok(format!(
                "reloaded the master's certificate from {} (serial {}, valid until {}): new connections get it, connections already up keep theirs",
                files.server_cert.display(),
                pki::serial_hex(leaf).unwrap_or_default(),
                pki::validity(leaf)
                    .map(|v| pki::format_time(v.not_after))
                    .unwrap_or_default(),
            ))
        }
        Part::Trust => {
            let (ca, minions, clients) = trust_from(reads, files.minion_cas.len())?;
            live.trust
                .update(&ca, &minions, &clients)
                .map_err(|e| e.to_string())?;
            let names: Vec<String> = reads.iter().map(|r| r.path.display().to_string()).collect();
            Ok(format!(
                "reloaded the trusted CAs from {}: new connections are checked against them",
                names.join(", ")
            ))
        }
        Part::Authority => {
            let ca = authority_from(reads)?;
            live.authority.store(Arc::new(ca));
            Ok(format!(
                "reloaded the master's CA from {} and {}: minion certificates are issued by it from now on",
                files.ca_cert.display(),
                files.ca_key.display()
            ))
        }
    }
}

fn what(part: Part) -> &'static str {
    match part {
        Part::Server => "the master's certificate",
        Part::Trust => "the trusted CAs",
        Part::Authority => "the master's CA",
    }
}

/// Polls the files until `shutdown`, putting settled changes in use.
pub async fn watch(live: Arc<Live>, mut watches: Watches, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
        let files = watches.files.clone();
        let Ok(reads) = tokio::task::spawn_blocking(move || {
            PARTS.map(|part| (part, reload::read_all(&files.paths(part))))
        })
        .await
        else {
            continue;
        };
        for (part, reads) in reads {
            let Some((_, w)) = watches.parts.iter_mut().find(|(p, _)| *p == part) else {
                continue;
            };
            let d = reload::digest(&reads);
            match w.observe(d) {
                Step::Unchanged | Step::Settling | Step::KnownBad => {}
                Step::Apply => match apply(&live, &watches.files, part, &reads) {
                    Ok(done) => {
                        tracing::info!("{done}");
                        w.applied(d);
                    }
                    Err(e) => {
                        tracing::warn!("not reloading {}: {e}; keeping the one in use", what(part));
                        w.rejected(d);
                    }
                },
            }
        }
    }
}

/// Why the master will not issue a minion a certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoIssue {
    /// The minion's certificate is self-signed and `issue_minion_certs` is off.
    SelfSignedNotOffered,
    /// Another CA issued the minion's certificate: that CA renews it.
    ExternalCa,
    /// A client certificate (never reaches the minion service; kept for completeness).
    Client,
}

impl NoIssue {
    /// The refusal's text for minion `id`.
    pub fn message(&self, id: &str) -> String {
        match self {
            NoIssue::SelfSignedNotOffered => format!(
                "minion {id} has a self-signed certificate and this master does not issue minion certificates (issue_minion_certs is off)"
            ),
            NoIssue::ExternalCa => format!(
                "the certificate of minion {id} was issued by an external CA (minion_ca_files): renew it there"
            ),
            NoIssue::Client => format!("{id} holds a client certificate, not a minion's"),
        }
    }
}

/// Whether the master issues a certificate to an accepted minion whose current certificate
/// `issuer` vouched for: it renews its own, and issues a first one to a self-signed minion
/// when `issue_self_signed` (`issue_minion_certs`).
pub fn may_issue(issuer: Issuer, issue_self_signed: bool) -> Result<(), NoIssue> {
    match issuer {
        Issuer::MasterCa => Ok(()),
        Issuer::SelfSigned if issue_self_signed => Ok(()),
        Issuer::SelfSigned => Err(NoIssue::SelfSignedNotOffered),
        Issuer::ExternalCa => Err(NoIssue::ExternalCa),
        Issuer::ClientCa => Err(NoIssue::Client),
    }
}

/// Clock skew allowed for at most: a certificate is valid from a little before it is issued
/// (a tenth of its lifetime, at most this), so a peer whose clock runs behind accepts it.
const BACKDATE_MAX: i64 = 300;

/// The validity of a minion certificate issued at `now` (Unix seconds) for `lifetime`.
pub fn issued_validity(now: i64, lifetime: Duration) -> Validity {
    let secs = i64::try_from(lifetime.as_secs())
        .unwrap_or(i64::MAX / 4)
        .max(1);
    Validity {
        not_before: now - (secs / 10).min(BACKDATE_MAX),
        not_after: now.saturating_add(secs),
    }
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use saltq_transport::pki::{CertRole, IssueRequest};
    use std::path::Path;

    #[test]
    fn the_master_renews_its_own_and_issues_to_self_signed_minions_only_when_told() {
        assert_eq!(may_issue(Issuer::MasterCa, false), Ok(()));
        assert_eq!(may_issue(Issuer::MasterCa, true), Ok(()));
        assert_eq!(may_issue(Issuer::SelfSigned, true), Ok(()));
        assert_eq!(
            may_issue(Issuer::SelfSigned, false),
            Err(NoIssue::SelfSignedNotOffered)
        );
        assert_eq!(
            may_issue(Issuer::ExternalCa, true),
            Err(NoIssue::ExternalCa)
        );
        assert_eq!(may_issue(Issuer::ClientCa, true), Err(NoIssue::Client));
        let m = NoIssue::SelfSignedNotOffered.message("web1");
        assert!(
            m.contains("web1") && m.contains("issue_minion_certs"),
            "{m}"
        );
        assert!(
            NoIssue::ExternalCa
                .message("web1")
                .contains("minion_ca_files")
        );
    }

    #[test]
    fn issued_certificates_are_backdated_a_tenth_at_most_five_minutes() {
        let now = 1_700_000_000;
        let v = issued_validity(now, Duration::from_secs(30 * 86400));
        assert_eq!(v.not_before, now - 300);
        assert_eq!(v.not_after, now + 30 * 86400);
        let v = issued_validity(now, Duration::from_secs(40));
        assert_eq!((v.not_before, v.not_after), (now - 4, now + 40));
        let v = issued_validity(now, Duration::from_millis(500));
        assert_eq!(
            (v.not_before, v.not_after),
            (now, now + 1),
            "at least a second"
        );
    }

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("saltq-certs-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn files(d: &Path) -> CertFiles {
        CertFiles {
            server_cert: d.join("tls.crt"),
            server_key: d.join("tls.key"),
            server_configured: true,
            ca_cert: d.join("ca.crt"),
            ca_key: d.join("ca.key"),
            minion_cas: vec![d.join("minion-ca.pem")],
            client_cas: vec![],
        }
    }

    fn server_pair(ca: &Ca, d: &Path) {
        let (c, k) = ca
            .issue(&IssueRequest {
                common_name: "master".into(),
                role: CertRole::Server,
                dns_names: vec!["localhost".into()],
                ips: vec![],
                days: 1,
            })
            .unwrap();
        std::fs::write(d.join("tls.crt"), c).unwrap();
        std::fs::write(d.join("tls.key"), k).unwrap();
    }

    #[test]
    fn each_part_loads_and_a_broken_one_names_its_file_and_leaves_the_rest() {
        let d = tmp("parts");
        let ca = Ca::create("ca", &d.join("ca.crt"), &d.join("ca.key")).unwrap();
        Ca::create("ext", &d.join("minion-ca.pem"), &d.join("ext.key")).unwrap();
        server_pair(&ca, &d);
        let f = files(&d);
        let (live, _) = load(&f).expect("loads");
        let first = live.server.leaf();

        // A new pair is applied.
        server_pair(&ca, &d);
        let reads = reload::read_all(&f.paths(Part::Server));
        let done = apply(&live, &f, Part::Server, &reads).unwrap();
        assert!(
            done.contains("tls.crt") && done.contains("serial"),
            "{done}"
        );
        let second = live.server.leaf();
        assert_ne!(first, second);

        // A certificate whose key is another's: refused, naming both files; the old one stays.
        let key = std::fs::read(d.join("tls.key")).unwrap();
        server_pair(&ca, &d);
        std::fs::write(d.join("tls.key"), key).unwrap();
        let reads = reload::read_all(&f.paths(Part::Server));
        let e = apply(&live, &f, Part::Server, &reads).unwrap_err();
        assert!(
            e.contains("tls.crt") && e.contains("tls.key") && e.contains("do not match"),
            "{e}"
        );
        assert_eq!(live.server.leaf(), second);

        // Not PEM at all.
        std::fs::write(d.join("tls.crt"), "not a certificate").unwrap();
        let reads = reload::read_all(&f.paths(Part::Server));
        let e = apply(&live, &f, Part::Server, &reads).unwrap_err();
        assert!(e.contains("tls.crt") && e.contains("no certificate"), "{e}");
        assert_eq!(live.server.leaf(), second);

        // A broken CA bundle: refused, naming it; the server part is not concerned.
        std::fs::write(
            d.join("minion-ca.pem"),
            "-----BEGIN CERTIFICATE-----\nAAAA\n",
        )
        .unwrap();
        let reads = reload::read_all(&f.paths(Part::Trust));
        let e = apply(&live, &f, Part::Trust, &reads).unwrap_err();
        assert!(e.contains("minion-ca.pem"), "{e}");
        // A missing one too.
        std::fs::remove_file(d.join("minion-ca.pem")).unwrap();
        let reads = reload::read_all(&f.paths(Part::Trust));
        let e = apply(&live, &f, Part::Trust, &reads).unwrap_err();
        assert!(e.contains("minion-ca.pem"), "{e}");

        // The CA: a key that is not the certificate's is refused.
        std::fs::copy(d.join("ext.key"), d.join("ca.key")).unwrap();
        let reads = reload::read_all(&f.paths(Part::Authority));
        let e = apply(&live, &f, Part::Authority, &reads).unwrap_err();
        assert!(e.contains("ca.key"), "{e}");
        assert_eq!(live.authority().cert_pem(), ca.cert_pem());

        // At start, the same failure stops the master with the config key named.
        std::fs::write(d.join("tls.crt"), "").unwrap();
        let e = load(&f).err().expect("refused");
        assert!(
            e.contains("master_cert_file") && e.contains("tls.crt"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(d);
    }
}
