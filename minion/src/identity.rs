//! The minion's own key and certificate, and how it trusts its master.

use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use saltq_transport::pki::{self, CertKey};
use saltq_transport::tls::ServerTrust;

use crate::config::MinionConfig;
use crate::renewal::Held;

/// File names under the minion's `pki_dir`.
pub const KEY_FILE: &str = "minion.key";
/// The certificate naming the minion id: self-signed, or issued by the master's CA (or another
/// CA) for the minion's key.
pub const CERT_FILE: &str = "minion.crt";
/// The master's CA, pinned on first contact (the first master's, with several: `multi.rs`
/// names the others' files).
pub const PINNED_CA_FILE: &str = "master_ca.crt";

/// Loads the minion's key (creating it on first start) and a certificate naming its id.
pub fn ensure_identity(cfg: &MinionConfig) -> anyhow::Result<CertKey> {
    let key_path = cfg.pki_dir.join(KEY_FILE);
    let cert_path = cfg.pki_dir.join(CERT_FILE);
    let existing_key = match std::fs::read_to_string(&key_path) {
        Ok(k) => Some(k),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", key_path.display())),
    };
    let cert_ok = existing_key.is_some()
        && pki::load_certs(&cert_path)
            .ok()
            .and_then(|c| c.first().and_then(|c| pki::subject(c).ok()))
            .is_some_and(|s| s.common_name.as_deref() == Some(cfg.id.as_str()));
    if !cert_ok {
        // A new id (or a first start) gets a certificate for the same key, so an accepted key stays accepted.
        let (cert, key) = pki::self_signed_minion(&cfg.id, existing_key.as_deref())?;
        if existing_key.is_none() {
            tracing::info!("created the minion key in {}", key_path.display());
            pki::write_private(&key_path, &key)?;
        }
        pki::write_public(&cert_path, &cert)?;
    }
    Ok(CertKey::load(&cert_path, &key_path)?)
}

/// What renewal needs to know of the certificate the minion presents.
pub fn held(ident: &CertKey) -> anyhow::Result<Held> {
    let leaf = ident
        .chain
        .first()
        .context("the minion certificate holds no certificate")?;
    Ok(Held {
        self_signed: pki::subject(leaf)?.self_issued,
        validity: pki::validity(leaf)?,
    })
}

/// Takes a certificate the master issued: checks it names this minion and carries its key,
/// writes it over `minion.crt` (beside it, then renamed: a crash leaves the old one or the new
/// one, never half) and returns the identity for the next connection.
pub fn install_certificate(cfg: &MinionConfig, chain_pem: &str) -> anyhow::Result<CertKey> {
    let cert_path = cfg.pki_dir.join(CERT_FILE);
    let key_path = cfg.pki_dir.join(KEY_FILE);
    let chain = pki::certs_from_pem(chain_pem.as_bytes(), Path::new("the issued certificate"))?;
    let cn = pki::subject(&chain[0])?.common_name;
    if cn.as_deref() != Some(cfg.id.as_str()) {
        anyhow::bail!(
            "the master issued a certificate for {:?}, not for this minion ({})",
            cn.unwrap_or_default(),
            cfg.id
        );
    }
    let issued = CertKey {
        chain,
        key: pki::load_key(&key_path)?,
    };
    saltq_transport::tls::check_client_pair(&issued).with_context(|| {
        format!(
            "the master issued a certificate for another key than {}",
            key_path.display()
        )
    })?;
    pki::write_public(&cert_path, chain_pem)?;
    Ok(issued)
}

/// How to trust the master: the configured CA file, else a pinned CA, else trust on first use.
pub fn server_trust(cfg: &MinionConfig) -> anyhow::Result<ServerTrust> {
    if let Some(ca) = &cfg.ca_file {
        let certs =
            pki::load_certs(ca).with_context(|| format!("{}: key ca_file", cfg.file.display()))?;
        return Ok(ServerTrust::Ca(certs));
    }
    let pinned = cfg.pki_dir.join(&cfg.pinned_ca_name);
    if pinned.exists() {
        return Ok(ServerTrust::Ca(pki::load_certs(&pinned)?));
    }
    Ok(ServerTrust::FirstUse {
        master_finger: cfg.master_finger.clone(),
        pinned: Arc::new(Mutex::new(None)),
    })
}

/// After a first successful connection, writes the CA the master presented and trusts only it.
pub fn pin_if_first_use(cfg: &MinionConfig, trust: &mut ServerTrust) -> anyhow::Result<()> {
    let ServerTrust::FirstUse { pinned, .. } = trust else {
        return Ok(());
    };
    let ca = pinned.lock().ok().and_then(|p| p.clone());
    if let Some(ca) = ca {
        let pem = pem_cert(ca.as_ref());
        let path = cfg.pki_dir.join(&cfg.pinned_ca_name);
        pki::write_public(&path, &pem)?;
        tracing::info!(
            fingerprint = %pki::fingerprint_cert(&ca)?,
            "pinned the master's CA in {}", path.display()
        );
        *trust = ServerTrust::Ca(vec![ca]);
    }
    Ok(())
}

fn pem_cert(der: &[u8]) -> String {
    let pem = pki::spki_to_pem(der);
    pem.replace("PUBLIC KEY", "CERTIFICATE")
}
