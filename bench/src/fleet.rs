//! Real saltq processes on loopback: a master on ephemeral ports, minion processes, a swarm, the
//! CLI; reading the master's `/metrics` and dialling its API as a client would.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use saltq_proto::v1::job_service_client::JobServiceClient;
use saltq_proto::v1::run_response::Kind;
use saltq_proto::v1::{PublishRequest, RunRequest};
use saltq_transport::pki::{CertKey, load_certs};
use saltq_transport::tls::ServerTrust;
use saltq_transport::{Channel, ConnectOptions, Limits, TransportKind};

use crate::procs::Proc;

/// Where the built binaries are.
#[derive(Debug, Clone)]
pub struct Bins {
    /// `target/release`.
    pub dir: PathBuf,
    /// `target/minion`: saltq-minion as shipped, built with the `minion` profile.
    pub minion_dir: PathBuf,
    /// A saltq-master to measure instead of `dir`'s (`--master-bin`).
    pub master: Option<PathBuf>,
}

impl Bins {
    /// `saltq-master` or `saltq`, checked to exist.
    pub fn path(&self, name: &str) -> anyhow::Result<PathBuf> {
        existing(self.dir.join(name), "cargo build --release --bins")
    }

    /// The saltq-master under test, checked to exist.
    pub fn master(&self) -> anyhow::Result<PathBuf> {
        match &self.master {
            Some(p) => existing(p.clone(), "--master-bin names a saltq-master binary"),
            None => self.path("saltq-master"),
        }
    }

    /// `saltq-minion` as shipped, checked to exist.
    pub fn minion(&self) -> anyhow::Result<PathBuf> {
        existing(
            self.minion_dir.join("saltq-minion"),
            "cargo build --profile minion -p saltq-minion",
        )
    }
}

fn existing(p: PathBuf, build: &str) -> anyhow::Result<PathBuf> {
    if !p.is_file() {
        bail!("{} is missing: build with `{build}`", p.display());
    }
    Ok(p)
}

/// A running master and how to reach it.
pub struct Master {
    /// The process.
    pub proc: Proc,
    /// The QUIC (and HTTP/2) port.
    pub port: u16,
    /// The plain-HTTP address serving `/metrics`.
    pub http: SocketAddr,
    /// A config dir for the CLI: `master` with `root_dir` and the real port.
    pub cli_dir: PathBuf,
    /// Where the CA and the admin certificate are: `pki_dir`, or a cluster's `cluster_pki_dir`.
    pub cert_dir: PathBuf,
    /// The last [`Master::wait_connected`]'s progress: (seconds since its `since`, minions
    /// connected), a sample at least every 250 ms.
    pub progress: Vec<(f64, u64)>,
}

impl Master {
    /// Starts a master with `root_dir` = `root` (kept across starts if it exists) on ephemeral
    /// ports and waits until it has written its addresses.
    pub fn start(bins: &Bins, root: &Path) -> anyhow::Result<Master> {
        Master::start_with(bins, root, "")
    }

    /// As [`Master::start`], with extra config lines.
    pub fn start_with(bins: &Bins, root: &Path, extra: &str) -> anyhow::Result<Master> {
        Master::start_on(bins, root, 0, extra)
    }

    /// As [`Master::start_with`], on this port (0: an ephemeral one): a master restarted on
    /// the address its minions know.
    pub fn start_on(bins: &Bins, root: &Path, port: u16, extra: &str) -> anyhow::Result<Master> {
        let etc = root.join("etc");
        std::fs::create_dir_all(&etc)
            .with_context(|| format!("cannot create {}", etc.display()))?;
        std::fs::write(
            etc.join("master"),
            format!(
                "root_dir: {}\ninterface: 127.0.0.1\nport: {port}\nhttp_interface: 127.0.0.1\n\
                 http_port: 0\nauto_accept: true\nlog_level: warning\n{extra}{}",
                root.display(),
                master_extra()
            ),
        )?;
        let listen = root.join("var/cache/saltq/master/listen.json");
        let _ = std::fs::remove_file(&listen);
        let mut proc = Proc::spawn(
            Command::new(bins.master()?).arg("-c").arg(&etc),
            "saltq-master",
            &root.join("master.log"),
        )?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let addrs: serde_json::Value = loop {
            proc.check_alive()?;
            if let Ok(text) = std::fs::read_to_string(&listen)
                && let Ok(v) = serde_json::from_str(&text)
            {
                break v;
            }
            if Instant::now() >= deadline {
                bail!("the master did not write {} within 60 s", listen.display());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let addr = |k: &str| -> anyhow::Result<SocketAddr> {
            addrs[k]
                .as_str()
                .and_then(|s| s.parse().ok())
                .with_context(|| format!("no {k:?} address in {}", listen.display()))
        };
        let port = addr("quic")?.port();
        let http = addr("http")?;
        let cli_dir = root.join("cli");
        std::fs::create_dir_all(&cli_dir)?;
        std::fs::write(
            cli_dir.join("master"),
            format!(
                "root_dir: {}\ninterface: 127.0.0.1\nport: {port}\n",
                root.display()
            ),
        )?;
        Ok(Master {
            proc,
            port,
            http,
            cli_dir,
            cert_dir: root.join("etc/saltq/pki/master"),
            progress: Vec::new(),
        })
    }

    /// The Prometheus text of `/metrics`.
    pub fn metrics(&self) -> anyhow::Result<Metrics> {
        let mut s = TcpStream::connect_timeout(&self.http, Duration::from_secs(5))
            .with_context(|| format!("cannot reach the master's /metrics on {}", self.http))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            s,
            "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.http
        )?;
        let mut body = String::new();
        s.read_to_string(&mut body)
            .with_context(|| format!("cannot read /metrics from {}", self.http))?;
        let Some((head, text)) = body.split_once("\r\n\r\n") else {
            bail!("malformed HTTP answer from {}", self.http);
        };
        if !head.starts_with("HTTP/1.1 200") {
            bail!(
                "/metrics on {} answered {}",
                self.http,
                head.lines().next().unwrap_or("")
            );
        }
        Ok(Metrics(text.to_owned()))
    }

    /// Minions with a live subscription, from `/metrics`.
    pub fn connected(&self) -> anyhow::Result<u64> {
        self.metrics()?
            .get("saltq_minions{state=\"connected\"}")
            .map(|v| v as u64)
            .context("no connected-minions gauge in /metrics")
    }

    /// Polls `/metrics` until `n` minions are connected; how long that took from `since`.
    /// Each process in `watch` must stay alive meanwhile.
    pub fn wait_connected(
        &mut self,
        n: u64,
        since: Instant,
        limit: Duration,
        watch: &mut [&mut Proc],
    ) -> anyhow::Result<Duration> {
        let deadline = since + limit;
        self.progress.clear();
        loop {
            self.proc.check_alive()?;
            for p in watch.iter_mut() {
                p.check_alive()?;
            }
            let got = self.connected()?;
            let at = since.elapsed().as_secs_f64();
            if self.progress.last().is_none_or(|(t, _)| at - t >= 0.25) || got >= n {
                self.progress.push((at, got));
            }
            if got >= n {
                return Ok(since.elapsed());
            }
            if Instant::now() >= deadline {
                bail!("only {got} of {n} minions connected within {limit:?}");
            }
            // Every 50 ms: each scrape counts every key and connection on the master, work a
            // real Prometheus scrape (every 15 s or so) hardly adds, so the bench keeps its own
            // share small; the times it reports are late by up to 50 ms.
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The `saltq` command, configured for this master.
    pub fn cli(&self, bins: &Bins) -> anyhow::Result<Command> {
        let mut c = Command::new(bins.path("saltq")?);
        c.arg("-c").arg(&self.cli_dir);
        Ok(c)
    }

    /// Dials the master's API with the admin certificate, over QUIC.
    pub async fn client(&self) -> anyhow::Result<JobServiceClient<Channel>> {
        Ok(JobServiceClient::new(self.channel().await?)
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20))
    }

    /// A runner client on a connection of its own.
    pub async fn runner_client(
        &self,
    ) -> anyhow::Result<saltq_proto::v1::runner_service_client::RunnerServiceClient<Channel>> {
        Ok(saltq_proto::v1::runner_service_client::RunnerServiceClient::new(self.channel().await?))
    }

    /// A new connection to the master's API with the admin certificate, over QUIC.
    async fn channel(&self) -> anyhow::Result<Channel> {
        let pki = &self.cert_dir;
        let opts = ConnectOptions {
            ipv6: None,
            host: "127.0.0.1".into(),
            port: self.port,
            transport: TransportKind::Quic,
            identity: CertKey::load(&pki.join("admin.crt"), &pki.join("admin.key"))?,
            trust: ServerTrust::Ca(load_certs(&pki.join("ca.crt"))?),
            limits: Limits::default(),
            connect_timeout: Duration::from_secs(10),
            reuse: None,
        };
        Ok(saltq_transport::connect(&opts).await?)
    }
}

/// A `/metrics` scrape.
pub struct Metrics(pub String);

impl Metrics {
    /// The value of the sample named exactly `name` (with its labels).
    pub fn get(&self, name: &str) -> Option<f64> {
        self.0.lines().find_map(|l| {
            let rest = l.strip_prefix(name)?;
            rest.strip_prefix(' ')?.trim().parse().ok()
        })
    }
}

/// Writes a minion config for `id` under `root` and returns its config dir.
pub fn minion_config(root: &Path, id: &str, port: u16) -> anyhow::Result<PathBuf> {
    let etc = root.join("etc");
    std::fs::create_dir_all(&etc).with_context(|| format!("cannot create {}", etc.display()))?;
    std::fs::write(
        etc.join("minion"),
        format!(
            "root_dir: {}\nid: {id}\nmaster: 127.0.0.1\nmaster_port: {port}\n\
             acceptance_wait_time: 0.5\nrecon_default: 100\nrecon_max: 2000\nlog_level: warning\n{}",
            root.display(),
            minion_extra()
        ),
    )?;
    Ok(etc)
}

/// Starts one minion process with its own `root_dir`.
pub fn start_minion(bins: &Bins, root: &Path, id: &str, port: u16) -> anyhow::Result<Proc> {
    let etc = minion_config(root, id, port)?;
    Proc::spawn(
        Command::new(bins.minion()?).arg("-c").arg(&etc),
        &format!("saltq-minion {id}"),
        &root.join("minion.log"),
    )
}

/// Starts a swarm of `count` virtual minions (`swarm-00000`...) whose keys live under `root`.
pub fn start_swarm(bins: &Bins, root: &Path, count: usize, port: u16) -> anyhow::Result<Proc> {
    start_swarm_named(bins, root, count, port, "swarm-")
}

/// As [`start_swarm`], with minion ids `PREFIX` and a number.
pub fn start_swarm_named(
    bins: &Bins,
    root: &Path,
    count: usize,
    port: u16,
    prefix: &str,
) -> anyhow::Result<Proc> {
    let etc = minion_config(root, "swarm-base", port)?;
    Proc::spawn(
        Command::new(bins.minion()?)
            .arg("-c")
            .arg(&etc)
            .args(["swarm", "--count", &count.to_string(), "--prefix", prefix])
            .args(["--master", "127.0.0.1", "--master-port", &port.to_string()]),
        &format!("saltq-minion swarm of {count}"),
        &root.join("swarm.log"),
    )
}

/// What one `Run` call saw.
pub struct RunOutcome {
    /// From sending the request to the `Finished` message.
    pub elapsed: Duration,
    /// Minions that returned.
    pub returned: u32,
    /// Minions that were expected and did not.
    pub not_returned: u32,
}

/// Runs `fun` on `tgt` through `JobService.Run` and streams until the job finishes.
pub async fn run_job(
    client: &mut JobServiceClient<Channel>,
    tgt: &str,
    fun: &str,
    timeout: f64,
) -> anyhow::Result<RunOutcome> {
    let req = RunRequest {
        publish: Some(PublishRequest {
            tgt: tgt.into(),
            fun: vec![fun.into()],
            ..Default::default()
        }),
        timeout,
        gather_job_timeout: timeout,
    };
    let started = Instant::now();
    let mut stream = client
        .run(req)
        .await
        .with_context(|| format!("Run {tgt} {fun} failed"))?
        .into_inner();
    while let Some(msg) = stream
        .message()
        .await
        .with_context(|| format!("the Run stream of {tgt} {fun} failed"))?
    {
        if let Some(Kind::Finished(f)) = msg.kind {
            return Ok(RunOutcome {
                elapsed: started.elapsed(),
                returned: f.returned,
                not_returned: f.not_returned,
            });
        }
    }
    bail!("the Run stream of {tgt} {fun} ended without Finished")
}

/// Master settings added for an experiment (`SALTQ_BENCH_MASTER_EXTRA="max_handshakes: 1024"`,
/// YAML lines), after the bench's own; none by default.
fn master_extra() -> String {
    std::env::var("SALTQ_BENCH_MASTER_EXTRA")
        .map(|extra| format!("\n{}\n", extra.replace("\\n", "\n")))
        .unwrap_or_default()
}

/// Minion settings added for an experiment (`SALTQ_BENCH_MINION_EXTRA="keep_alive: 3"`, YAML
/// lines), after the bench's own; none by default.
fn minion_extra() -> String {
    std::env::var("SALTQ_BENCH_MINION_EXTRA")
        .map(|extra| format!("{}\n", extra.replace("\\n", "\n")))
        .unwrap_or_default()
}
