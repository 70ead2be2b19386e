//! How the CLI reaches the master: from `-c DIR` (reading `DIR/master` as the salt CLI does on a
//! master host, and using the admin certificate in its `pki_dir`), or from `--master` with
//! `--ca`, `--cert` and `--key` (or `SALTQ_*` variables) for a remote master.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use saltq_transport::config::rooted;
use saltq_transport::pki::{self, CertKey};
use saltq_transport::tls::ServerTrust;
use saltq_transport::{ConnectOptions, Limits, TransportKind};
use serde::Deserialize;

/// The few master config keys the CLI needs; other keys are the master's business.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct MasterFile {
    root_dir: Option<PathBuf>,
    interface: Option<IpAddr>,
    port: Option<u16>,
    quic_port: Option<u16>,
    h2_port: Option<u16>,
    pki_dir: Option<PathBuf>,
    /// A cluster replica keeps the CA and the admin certificate here instead of `pki_dir`.
    cluster_pki_dir: Option<PathBuf>,
    max_message_size: Option<usize>,
}

impl MasterFile {
    /// Where the CA and the admin certificate are: `cluster_pki_dir` or `pki_dir`.
    /// As in Salt, `root_dir` prefixes `pki_dir` but not `cluster_pki_dir`.
    fn cert_dir(&self) -> PathBuf {
        if let Some(dir) = &self.cluster_pki_dir {
            return dir.clone();
        }
        let root = self.root_dir.clone().unwrap_or_else(|| "/".into());
        let dir = self
            .pki_dir
            .clone()
            .unwrap_or_else(|| "/etc/saltq/pki/master".into());
        rooted(&root, &dir)
    }
}

/// Connection flags shared by every subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct ConnectArgs {
    /// Config directory of the master on this host; the CLI reads DIR/master.
    #[arg(
        short = 'c',
        long = "config-dir",
        env = "SALTQ_CONFIG_DIR",
        default_value = "/etc/saltq",
        global = true
    )]
    pub config_dir: PathBuf,
    /// A remote master, HOST[:PORT], instead of the one configured in DIR/master.
    #[arg(long, env = "SALTQ_MASTER", global = true)]
    pub master: Option<String>,
    /// CA certificate that vouches for the master.
    #[arg(long, env = "SALTQ_CA", global = true)]
    pub ca: Option<PathBuf>,
    /// Client certificate (PEM).
    #[arg(long, env = "SALTQ_CERT", global = true)]
    pub cert: Option<PathBuf>,
    /// Client key (PEM).
    #[arg(long, env = "SALTQ_KEY", global = true)]
    pub key: Option<PathBuf>,
    /// quic (default) or h2 (HTTP/2 over TCP, e.g. through kubectl port-forward).
    #[arg(long, env = "SALTQ_TRANSPORT", default_value = "quic", global = true)]
    pub transport: TransportKind,
}

fn split_host_port(s: &str, default_port: u16) -> anyhow::Result<(String, u16)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, tail) = rest.split_once(']').context("unclosed [ in --master")?;
        let port = match tail.strip_prefix(':') {
            Some(p) => p
                .parse()
                .with_context(|| format!("invalid port {p:?} in --master"))?,
            None => default_port,
        };
        return Ok((host.to_owned(), port));
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => Ok((
            h.to_owned(),
            p.parse()
                .with_context(|| format!("invalid port {p:?} in --master {s}"))?,
        )),
        _ => Ok((s.to_owned(), default_port)),
    }
}

/// The keys the CLI needs from the master's config, merged as the master merges its files
/// (`master.d/*.conf`, `include`).
fn read_master_file(dir: &Path) -> anyhow::Result<MasterFile> {
    let opts = crate::config::master_opts(dir)?;
    serde_json::from_value(serde_json::Value::Object(opts))
        .with_context(|| format!("invalid master config in {}", dir.display()))
}

impl ConnectArgs {
    /// Resolves the flags into dialling options.
    pub fn options(&self) -> anyhow::Result<ConnectOptions> {
        let file = read_master_file(&self.config_dir)?;
        let pki_dir = file.cert_dir();
        let port = file.port.unwrap_or(4506);
        let port = match self.transport {
            TransportKind::Quic => file.quic_port.unwrap_or(port),
            TransportKind::H2 => file.h2_port.unwrap_or(port),
        };
        let (host, port) = match &self.master {
            Some(m) => split_host_port(m, 4506)?,
            None => {
                let host = match file.interface {
                    None => "127.0.0.1".to_owned(),
                    Some(ip) if ip.is_unspecified() && ip.is_ipv6() => "::1".to_owned(),
                    Some(ip) if ip.is_unspecified() => "127.0.0.1".to_owned(),
                    Some(ip) => ip.to_string(),
                };
                (host, port)
            }
        };
        let cert = self
            .cert
            .clone()
            .unwrap_or_else(|| pki_dir.join("admin.crt"));
        let key = self
            .key
            .clone()
            .unwrap_or_else(|| pki_dir.join("admin.key"));
        let ca = self.ca.clone().unwrap_or_else(|| pki_dir.join("ca.crt"));
        if !cert.exists() {
            bail!(
                "no client certificate at {}: run saltq on the master host, or pass --cert/--key (saltq pki issue NAME makes one)",
                cert.display()
            );
        }
        let identity = CertKey::load(&cert, &key).context("cannot load the client certificate")?;
        let cas = pki::load_certs(&ca).context("cannot load the CA certificate (--ca)")?;
        Ok(ConnectOptions {
            ipv6: None,
            host,
            port,
            transport: self.transport,
            identity,
            trust: ServerTrust::Ca(cas),
            limits: Limits {
                max_message_size: file.max_message_size.unwrap_or(16 * 1024 * 1024),
                ..Limits::default()
            },
            // The minions' own: the CLI may wait in the master's handshake queue as they do.
            connect_timeout: saltq_transport::client::CONNECT_TIMEOUT,
            reuse: None,
        })
    }

    /// Where the master configured in `DIR/master` keeps its CA: `pki_dir`, or
    /// `cluster_pki_dir` for a cluster replica.
    pub fn pki_dir(&self) -> anyhow::Result<PathBuf> {
        Ok(read_master_file(&self.config_dir)?.cert_dir())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_forms() {
        assert_eq!(split_host_port("m1", 4506).unwrap(), ("m1".into(), 4506));
        assert_eq!(split_host_port("m1:99", 4506).unwrap(), ("m1".into(), 99));
        assert_eq!(
            split_host_port("[::1]:99", 4506).unwrap(),
            ("::1".into(), 99)
        );
        assert_eq!(split_host_port("::1", 4506).unwrap(), ("::1".into(), 4506));
        assert!(split_host_port("m1:x", 4506).is_err());
    }
}

#[cfg(test)]
mod master_d_tests {
    use super::*;
    use crate::output::MasterOutputKeys;

    /// The CLI reads `master.d/*.conf` and `include` as the master does: a later file's key
    /// wins (`master.d` over the main file, `include` last), for the dialing keys and the
    /// output keys alike; a broken `master.d` file is skipped as the master skips it.
    #[test]
    fn master_d_and_include_reach_the_cli_as_the_master() {
        let dir = std::env::temp_dir().join(format!("saltq-cli-master-d-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("master.d")).unwrap();
        std::fs::create_dir_all(dir.join("extra")).unwrap();
        std::fs::write(
            dir.join("master"),
            "port: 4000\npki_dir: /main/pki\nstate_output: full\ninclude: extra/*.conf\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("master.d/10-net.conf"),
            "port: 4100\nstate_output: terse\ncli_summary: true\n",
        )
        .unwrap();
        std::fs::write(dir.join("master.d/20-broken.conf"), "a: [\n").unwrap();
        std::fs::write(dir.join("extra/pki.conf"), "pki_dir: /included/pki\n").unwrap();
        let file = read_master_file(&dir).unwrap();
        assert_eq!(file.port, Some(4100));
        assert_eq!(file.cert_dir(), PathBuf::from("/included/pki"));
        let keys = MasterOutputKeys::read(&dir);
        assert_eq!(keys.state_output.as_deref(), Some("terse"));
        assert!(keys.summary(false));
        // A broken main file is an error naming it (the master would not start either).
        std::fs::write(dir.join("master"), "port: [\n").unwrap();
        let e = read_master_file(&dir).unwrap_err().to_string();
        assert!(e.contains(&dir.join("master").display().to_string()), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
