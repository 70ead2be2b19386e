//! The `flood` scenario (#31): salt-api under a connection flood, saltq's (served by
//! saltq-master) beside Salt 3007.8's (`bench/salt/saltapi-peer`, rest_cherrypy on plain HTTP)
//! in the same run, then saltq's HTTP/2 gRPC port under the same flood while a swarm answers
//! `test.ping` over QUIC. Half the flood's connections send nothing, half trickle a request's
//! headers a byte every 0.5 s (slowloris), from 127.0.0.2 to 127.0.0.21, for a bounded time.
//! Meanwhile one legitimate request a second (salt-api: `POST /login` once, then `POST /` with
//! `test.ping`, each on a new connection; HTTP/2 phase: `Run` over QUIC) says whether a real
//! client is still served, and `/proc` says what the flood costs the server (descriptors, RSS)
//! and its log. How each flood connection ended (408, 503, reset, closed, still open) is counted.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use saltq_proto::v1::job_service_client::JobServiceClient;
use saltq_transport::Channel;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::fleet::{Master, run_job, start_minion, start_swarm};
use crate::procs::tail;
use crate::report::Figure;
use crate::scenarios::Ctx;
use crate::stats::{Summary, percentile};

/// The flood comes from 127.0.0.2 to 127.0.0.(1 + SOURCES).
const SOURCES: u8 = 20;
/// Connection attempts under way at once while the flood opens.
const OPENING: usize = 256;
/// How long a flood connection may wait to be accepted before it counts as not accepted.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Time between two bytes of a slowloris connection.
const TRICKLE: Duration = Duration::from_millis(500);
/// How long one legitimate request may take before it counts as failed.
const LEGIT_TIMEOUT: Duration = Duration::from_secs(10);

/// What a slowloris connection to salt-api trickles: a request whose headers never end (its
/// last byte repeats).
const HTTP_SLOW: &[u8] = b"POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a";
/// What a slowloris connection to the HTTP/2 (TLS) port trickles: a TLS record header
/// announcing a 512-byte ClientHello, then its body a byte at a time (never complete).
const TLS_SLOW: &[u8] = &[
    0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x5a,
];

/// How a flood connection ended, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
enum Fate {
    /// The connection attempt was refused.
    Refused,
    /// Not accepted within [`CONNECT_TIMEOUT`] (the listen backlog full).
    NotAccepted,
    /// Answered `408 Request Timeout`, then closed.
    Answered408,
    /// Answered `503 Service Unavailable`, then closed.
    Answered503,
    /// Answered something else (another status, a TLS alert), then closed.
    AnsweredOther,
    /// Closed by the server without a word (FIN).
    Closed,
    /// Reset by the server.
    Reset,
    /// Still open when the flood ended.
    Open,
}

impl Fate {
    fn label(self) -> &'static str {
        match self {
            Fate::Refused => "refused at connect",
            Fate::NotAccepted => "not accepted within 3 s",
            Fate::Answered408 => "408",
            Fate::Answered503 => "503",
            Fate::AnsweredOther => "other answer",
            Fate::Closed => "closed silently",
            Fate::Reset => "reset",
            Fate::Open => "still open at the end",
        }
    }

    /// Whether the server ended an accepted connection.
    fn closed_by_server(self) -> bool {
        matches!(
            self,
            Fate::Answered408
                | Fate::Answered503
                | Fate::AnsweredOther
                | Fate::Closed
                | Fate::Reset
        )
    }
}

/// How an accepted connection's reading stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The server closed it (read returned 0).
    Eof,
    /// Reading failed (a reset).
    Reset,
    /// The flood ended first.
    Open,
}

/// What an accepted connection's end means, from the first bytes it received and how it ended.
fn classify(received: &[u8], end: End) -> Fate {
    if end == End::Open {
        return Fate::Open;
    }
    let status = |code: &[u8]| {
        received.len() >= 12
            && (received.starts_with(b"HTTP/1.1 ") || received.starts_with(b"HTTP/1.0 "))
            && &received[9..12] == code
    };
    if status(b"408") {
        Fate::Answered408
    } else if status(b"503") {
        Fate::Answered503
    } else if !received.is_empty() {
        Fate::AnsweredOther
    } else if end == End::Eof {
        Fate::Closed
    } else {
        Fate::Reset
    }
}

/// How the `i`-th flood connection is spread: its source address and whether it is slowloris.
fn flood_slot(i: usize) -> (IpAddr, bool) {
    let source = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + (i % SOURCES as usize) as u8));
    (source, (i / SOURCES as usize) % 2 == 1)
}

/// One flood connection from `source` to `to` until `until`: idle, or trickling `slow`. Its
/// fate and when it ended (seconds since `started`; `None` if it did not end by itself).
async fn hold(
    source: IpAddr,
    to: SocketAddr,
    slow: Option<&'static [u8]>,
    opening: Arc<tokio::sync::Semaphore>,
    started: Instant,
    until: tokio::time::Instant,
) -> (Fate, Option<f64>) {
    let stream = {
        let _permit = opening.acquire().await;
        let Ok(sock) = tokio::net::TcpSocket::new_v4() else {
            return (Fate::Refused, None);
        };
        if sock.bind(SocketAddr::new(source, 0)).is_err() {
            return (Fate::Refused, None);
        }
        match tokio::time::timeout(CONNECT_TIMEOUT, sock.connect(to)).await {
            Err(_) => return (Fate::NotAccepted, None),
            Ok(Err(_)) => return (Fate::Refused, Some(started.elapsed().as_secs_f64())),
            Ok(Ok(s)) => s,
        }
    };
    let (mut rd, mut wr) = stream.into_split();
    let mut received = Vec::new();
    let mut buf = [0u8; 256];
    let mut sent = 0usize;
    let mut writing = slow.is_some();
    let mut tick = tokio::time::interval(TRICKLE);
    let end = loop {
        tokio::select! {
            _ = tokio::time::sleep_until(until) => break End::Open,
            r = rd.read(&mut buf) => match r {
                Ok(0) => break End::Eof,
                Ok(n) => {
                    if received.len() < 64 {
                        received.extend_from_slice(&buf[..n]);
                    }
                }
                Err(_) => break End::Reset,
            },
            _ = tick.tick(), if writing => {
                let bytes = slow.unwrap_or(b" ");
                let b = bytes[sent.min(bytes.len() - 1)];
                sent += 1;
                // A refused write means the server has closed: the read says how.
                writing = wr.write_all(&[b]).await.is_ok();
            }
        }
    };
    let at = (end != End::Open).then(|| started.elapsed().as_secs_f64());
    (classify(&received, end), at)
}

/// A legitimate client, asking once a second during the flood.
#[derive(Clone)]
enum Legit {
    /// salt-api: `POST /login` until a token is had, then `POST /` `test.ping` on `minion`,
    /// each request on a new connection (a new client, not one kept from before the flood).
    Api {
        base: String,
        minion: String,
        token: Arc<Mutex<Option<String>>>,
    },
    /// `Run` `test.ping` on `tgt` over QUIC, `expect` minions returning.
    Quic {
        client: Box<JobServiceClient<Channel>>,
        tgt: String,
        expect: u32,
    },
}

impl Legit {
    /// One request; what it was.
    async fn once(&self) -> anyhow::Result<&'static str> {
        match self {
            Legit::Api {
                base,
                minion,
                token,
            } => {
                let have = token.lock().ok().and_then(|t| t.clone());
                match have {
                    None => {
                        let v = post(
                            base,
                            "/login",
                            None,
                            json!({"username": "bench", "password": "bench", "eauth": "file"}),
                        )
                        .await?;
                        let t = v["return"][0]["token"]
                            .as_str()
                            .with_context(|| format!("no token in the login answer: {v}"))?;
                        if let Ok(mut slot) = token.lock() {
                            *slot = Some(t.to_owned());
                        }
                        Ok("login")
                    }
                    Some(t) => {
                        let v = post(
                            base,
                            "/",
                            Some(&t),
                            json!([{"client": "local", "tgt": minion, "fun": "test.ping"}]),
                        )
                        .await?;
                        if v["return"][0][minion.as_str()] != json!(true) {
                            bail!("test.ping through POST / did not return {minion}: true: {v}");
                        }
                        Ok("test.ping")
                    }
                }
            }
            Legit::Quic {
                client,
                tgt,
                expect,
            } => {
                let r = run_job(&mut (**client).clone(), tgt, "test.ping", 8.0).await?;
                if r.returned != *expect {
                    bail!("Run {tgt} test.ping: {} of {expect} returned", r.returned);
                }
                Ok("Run test.ping")
            }
        }
    }
}

/// `POST base+path` with a JSON body on a new connection; the JSON answer.
async fn post(base: &str, path: &str, token: Option<&str>, body: Value) -> anyhow::Result<Value> {
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(LEGIT_TIMEOUT));
    let client: Client<HttpConnector, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build(connector);
    let mut req = hyper::Request::post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .header("connection", "close");
    if let Some(t) = token {
        req = req.header("x-auth-token", t);
    }
    let resp = client
        .request(req.body(Full::new(Bytes::from(body.to_string())))?)
        .await
        .with_context(|| format!("POST {base}{path}"))?;
    let status = resp.status();
    let bytes = resp.into_body().collect().await?.to_bytes();
    if !status.is_success() {
        bail!(
            "POST {path}: HTTP {status}: {}",
            String::from_utf8_lossy(&bytes)
        );
    }
    serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "POST {path} answered no JSON: {}",
            String::from_utf8_lossy(&bytes)
        )
    })
}

/// One legitimate request's outcome.
#[derive(Debug, Clone, serde::Serialize)]
struct Probe {
    /// When it was sent, seconds since the flood started.
    at_s: f64,
    /// What it was.
    what: &'static str,
    /// Its wall time when answered, ms.
    took_ms: Option<f64>,
    /// Why it failed.
    error: Option<String>,
}

/// One sample of the server under the flood.
#[derive(Debug, Clone, Copy, serde::Serialize)]
struct Sample {
    /// Seconds since the flood started (negative: before).
    at_s: f64,
    /// Open descriptors, summed over the server's processes.
    fds: usize,
    /// Resident memory summed over the server's processes, KiB.
    rss_kib: u64,
    /// The server's logs, bytes.
    log_bytes: u64,
}

/// The server measured: how to find its processes and logs.
struct Server {
    /// Its processes now (Salt's salt-api is a tree).
    pids: Box<dyn Fn() -> Vec<u32>>,
    /// Its log files.
    logs: Vec<PathBuf>,
}

impl Server {
    fn sample(&self, started: Instant, before: bool) -> Sample {
        let pids = (self.pids)();
        let secs = started.elapsed().as_secs_f64();
        Sample {
            at_s: if before { -secs } else { secs },
            fds: pids.iter().map(|&p| open_fds(p)).sum(),
            rss_kib: pids
                .iter()
                .filter_map(|&p| crate::procs::status_kib(p, "VmRSS:").ok())
                .sum(),
            log_bytes: self
                .logs
                .iter()
                .filter_map(|l| std::fs::metadata(l).ok())
                .map(|m| m.len())
                .sum(),
        }
    }

    fn alive(&self) -> bool {
        !(self.pids)().is_empty()
    }
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// What one flood phase measured.
#[derive(Debug, Clone, serde::Serialize)]
struct Phase {
    /// Each flood connection's fate and when it ended.
    fates: Vec<(Fate, Option<f64>)>,
    /// The legitimate requests.
    probes: Vec<Probe>,
    /// The server, a sample a second (the first before the flood, the last after it).
    samples: Vec<Sample>,
    /// Whether the server was still running after the flood.
    alive: bool,
}

impl Phase {
    fn failed(&self) -> usize {
        self.probes.iter().filter(|p| p.error.is_some()).count()
    }

    fn latencies(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.probes.iter().filter_map(|p| p.took_ms).collect();
        v.sort_by(f64::total_cmp);
        v
    }

    fn peak_fds(&self) -> usize {
        self.samples.iter().map(|s| s.fds).max().unwrap_or(0)
    }

    fn peak_rss_mib(&self) -> f64 {
        self.samples.iter().map(|s| s.rss_kib).max().unwrap_or(0) as f64 / 1024.0
    }

    fn log_growth_kib(&self) -> f64 {
        let first = self.samples.first().map_or(0, |s| s.log_bytes);
        let last = self.samples.last().map_or(0, |s| s.log_bytes);
        last.saturating_sub(first) as f64 / 1024.0
    }

    fn held_at_end(&self) -> usize {
        self.fates.iter().filter(|(f, _)| *f == Fate::Open).count()
    }

    /// The fates counted, and when the server's closes came.
    fn fates_note(&self) -> String {
        let mut counts = std::collections::BTreeMap::new();
        for (f, _) in &self.fates {
            *counts.entry(*f).or_insert(0usize) += 1;
        }
        let list = counts
            .iter()
            .map(|(f, n)| format!("{} {n}", f.label()))
            .collect::<Vec<_>>()
            .join(", ");
        let mut closes: Vec<f64> = self
            .fates
            .iter()
            .filter(|(f, _)| f.closed_by_server())
            .filter_map(|(_, t)| *t)
            .collect();
        closes.sort_by(f64::total_cmp);
        let when = if closes.is_empty() {
            "the server closed none".to_owned()
        } else {
            format!(
                "the server's closes at {:.1} s (first), {:.1} s (median), {:.1} s (last)",
                closes[0],
                percentile(&closes, 50.0),
                closes[closes.len() - 1]
            )
        };
        format!("{list}; {when}")
    }

    fn probes_note(&self) -> String {
        let lat = self.latencies();
        let errors: Vec<String> = self
            .probes
            .iter()
            .filter_map(|p| {
                p.error
                    .as_ref()
                    .map(|e| format!("{} at {:.0} s: {e}", p.what, p.at_s))
            })
            .take(3)
            .collect();
        format!(
            "{} of {} legitimate requests answered; p50 {}, max {}{}",
            lat.len(),
            self.probes.len(),
            lat.first().map_or("—".into(), |_| format!(
                "{:.1} ms",
                percentile(&lat, 50.0)
            )),
            lat.last().map_or("—".into(), |m| format!("{m:.1} ms")),
            if errors.is_empty() {
                String::new()
            } else {
                format!("; first failures: {}", errors.join(" | "))
            }
        )
    }
}

/// Floods `to` with `n` connections for `secs` seconds while `legit` asks once a second and
/// `server` is sampled once a second.
async fn run_phase(
    to: SocketAddr,
    n: usize,
    secs: u64,
    slow: &'static [u8],
    legit: Legit,
    server: &Server,
) -> anyhow::Result<Phase> {
    let pre = Instant::now();
    let mut samples = vec![server.sample(pre, true)];
    let started = Instant::now();
    let until = tokio::time::Instant::now() + Duration::from_secs(secs);
    let opening = Arc::new(tokio::sync::Semaphore::new(OPENING));
    let conns: Vec<_> = (0..n)
        .map(|i| {
            let (source, is_slow) = flood_slot(i);
            tokio::spawn(hold(
                source,
                to,
                is_slow.then_some(slow),
                opening.clone(),
                started,
                until,
            ))
        })
        .collect();
    let mut probes = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        if tokio::time::Instant::now() >= until {
            break;
        }
        samples.push(server.sample(started, false));
        let legit = legit.clone();
        probes.push(tokio::spawn(async move {
            let at_s = started.elapsed().as_secs_f64();
            let t = Instant::now();
            match tokio::time::timeout(LEGIT_TIMEOUT, legit.once()).await {
                Ok(Ok(what)) => Probe {
                    at_s,
                    what,
                    took_ms: Some(t.elapsed().as_secs_f64() * 1e3),
                    error: None,
                },
                Ok(Err(e)) => Probe {
                    at_s,
                    what: "request",
                    took_ms: None,
                    error: Some(format!("{e:#}")),
                },
                Err(_) => Probe {
                    at_s,
                    what: "request",
                    took_ms: None,
                    error: Some(format!("no answer within {LEGIT_TIMEOUT:?}")),
                },
            }
        }));
    }
    let mut fates = Vec::with_capacity(n);
    for c in conns {
        fates.push(c.await.context("a flood connection panicked")?);
    }
    let mut done = Vec::with_capacity(probes.len());
    for p in probes {
        done.push(p.await.context("a legitimate request panicked")?);
    }
    // What the flood left behind, once the server has seen the connections go.
    tokio::time::sleep(Duration::from_secs(2)).await;
    samples.push(server.sample(started, false));
    Ok(Phase {
        fates,
        probes: done,
        samples,
        alive: server.alive(),
    })
}

/// Every process descended from `root` (itself included), from `/proc`.
fn tree(root: u32) -> Vec<u32> {
    let mut parent = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let ppid = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().nth(1))
                .and_then(|s| s.parse::<u32>().ok());
            if let Some(pp) = ppid {
                parent.push((pid, pp));
            }
        }
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(parent.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    out.retain(|p| std::path::Path::new(&format!("/proc/{p}")).exists());
    out
}

/// The command line of `pid`, arguments split (on spaces too: Salt's setproctitle rewrites it
/// as one string).
fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|b| *b == 0 || *b == b' ')
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// The salt-api process the peer script started (a child of the script), and its config dir.
fn find_salt_api(peer: u32) -> Option<(u32, PathBuf)> {
    tree(peer).into_iter().skip(1).find_map(|p| {
        let args = cmdline(p);
        if !args.iter().any(|a| a.ends_with("salt-api")) {
            return None;
        }
        let c = args.iter().position(|a| a == "-c")?;
        Some((p, PathBuf::from(args.get(c + 1)?)))
    })
}

/// The address saltq's salt-api listens on, from the master's listen.json.
fn api_addr(root: &Path) -> anyhow::Result<SocketAddr> {
    let listen = root.join("var/cache/saltq/master/listen.json");
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(&listen)
            .with_context(|| format!("cannot read {}", listen.display()))?,
    )?;
    v["rest_cherrypy"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("no rest_cherrypy address in {}", listen.display()))
}

/// Which figures a phase gives: salt-api (beside Salt's) or saltq's HTTP/2 port.
#[derive(Clone, Copy)]
enum Which {
    Api,
    H2,
}

impl Ctx {
    /// The `flood` scenario: `n` swarm minions answer over QUIC during the HTTP/2 phase.
    pub(crate) async fn flood(&mut self, n: usize) -> anyhow::Result<()> {
        let conns = self.flood_connections.unwrap_or(5000);
        let secs = self.flood_secs.unwrap_or(30);
        if conns == 0 || secs == 0 {
            bail!("--flood and --flood-secs must be at least 1");
        }
        // The flood's sockets are this process's descriptors.
        let nofile = saltq_transport::rlimit::raise_nofile_limit()
            .map_err(|e| anyhow::anyhow!("cannot raise the open file limit: {e}"))?;
        eprintln!("  open file limit: {nofile:?}; {conns} connections for {secs} s");
        let dir = self.fresh_dir(&format!("flood-{n}"))?;
        let users = dir.join("users.txt");
        std::fs::write(&users, "bench:bench\n")?;
        let root = dir.join("master");
        let (ours_api, ours_h2) = {
            let mut master = Master::start_with(
                &self.bins,
                &root,
                &format!(
                    "external_auth:\n  file:\n    ^filename: {}\n    bench: ['.*']\n\
                     netapi_enable_clients: [local]\n\
                     rest_cherrypy: {{port: 0, host: 127.0.0.1, disable_ssl: true}}\n",
                    users.display()
                ),
            )?;
            let mut minion =
                start_minion(&self.bins, &dir.join("minion"), "bench-000", master.port)?;
            let mut swarm = start_swarm(&self.bins, &dir.join("swarm"), n, master.port)?;
            master.wait_connected(
                n as u64 + 1,
                Instant::now(),
                Duration::from_secs(120),
                &mut [&mut minion, &mut swarm],
            )?;
            let pid = master.proc.pid();
            let server = Server {
                pids: Box::new(move || {
                    if Path::new(&format!("/proc/{pid}")).exists() {
                        vec![pid]
                    } else {
                        vec![]
                    }
                }),
                logs: vec![root.join("master.log")],
            };
            let api = api_addr(&root)?;
            eprintln!("  saltq salt-api on {api}: flooding");
            let legit = Legit::Api {
                base: format!("http://{api}"),
                minion: "bench-000".into(),
                token: Arc::default(),
            };
            let on_api = run_phase(api, conns, secs, HTTP_SLOW, legit, &server).await?;
            master.proc.check_alive()?;
            // The first flood gone before the second starts.
            tokio::time::sleep(Duration::from_secs(3)).await;
            let h2 = SocketAddr::from(([127, 0, 0, 1], master.port));
            eprintln!("  saltq HTTP/2 port {h2}: flooding, {n} swarm minions on QUIC");
            let legit = Legit::Quic {
                client: Box::new(master.client().await?),
                tgt: "swarm-*".into(),
                expect: n as u32,
            };
            let on_h2 = run_phase(h2, conns, secs, TLS_SLOW, legit, &server).await?;
            master.proc.check_alive()?;
            swarm.check_alive()?;
            (on_api, on_h2)
        };
        let salt = if self.salt.enabled() {
            match self.salt_flood(&dir, conns, secs).await {
                Ok(p) => Some(Ok(p)),
                Err(e) => {
                    eprintln!("  Salt's salt-api: {e:#}");
                    Some(Err(format!("{e:#}")))
                }
            }
        } else {
            None
        };
        let salt_phase = salt.as_ref().and_then(|r| r.as_ref().ok());
        self.flood_figures(Which::Api, n, conns, secs, &ours_api, salt_phase);
        if let Some(Err(e)) = &salt
            && let Some(f) = self.figures.last_mut()
        {
            let note = f.note.take().unwrap_or_default();
            f.note = Some(format!("{note}; Salt's salt-api not measured: {e}"));
        }
        self.flood_figures(Which::H2, n, conns, secs, &ours_h2, None);
        self.details.insert(
            format!("flood-{n}"),
            json!({
                "connections": conns, "seconds": secs, "sources": SOURCES,
                "saltq_api": ours_api, "saltq_h2": ours_h2,
                "salt_api": match &salt {
                    Some(Ok(p)) => json!(p),
                    Some(Err(e)) => json!({"error": e}),
                    None => Value::Null,
                },
            }),
        );
        Ok(())
    }

    /// Salt's salt-api under the same flood.
    async fn salt_flood(&mut self, dir: &Path, conns: usize, secs: u64) -> anyhow::Result<Phase> {
        let (mut proc, ready) = crate::saltapi::start_saltapi_peer(dir).await?;
        let log = dir.join("saltapi-peer.log");
        let base = ready["api"]
            .as_str()
            .context("saltapi-peer named no api")?
            .to_owned();
        let minion = ready["minion"].as_str().unwrap_or("saltminion").to_owned();
        let (api_pid, conf) =
            find_salt_api(proc.pid()).context("no salt-api process under saltapi-peer")?;
        let api_root = conf
            .parent()
            .and_then(Path::parent)
            .context("salt-api's -c has no root above it")?
            .to_path_buf();
        let api_log = api_root.join("var/log/salt/api");
        let server = Server {
            pids: Box::new(move || {
                if Path::new(&format!("/proc/{api_pid}")).exists() {
                    tree(api_pid)
                } else {
                    vec![]
                }
            }),
            logs: vec![api_log.clone(), log.clone()],
        };
        let to: SocketAddr = base
            .trim_start_matches("http://")
            .parse()
            .with_context(|| format!("saltapi-peer's api {base} is no address"))?;
        eprintln!(
            "  Salt's salt-api on {to} (pid {api_pid}, {} processes): flooding",
            tree(api_pid).len()
        );
        let legit = Legit::Api {
            base,
            minion,
            token: Arc::default(),
        };
        let phase = run_phase(to, conns, secs, HTTP_SLOW, legit, &server).await?;
        if !phase.alive {
            eprintln!(
                "  Salt's salt-api died under the flood; the end of its log:\n{}\n{}",
                tail(&api_log, 20),
                tail(&log, 20)
            );
        }
        let _ = std::fs::copy(&api_log, dir.join("salt-api.log"));
        proc.stop();
        Ok(phase)
    }

    /// The figures of one phase, beside Salt's where it has one.
    fn flood_figures(
        &mut self,
        which: Which,
        n: usize,
        conns: usize,
        secs: u64,
        ours: &Phase,
        salt: Option<&Phase>,
    ) {
        let (what, legit) = match which {
            Which::Api => (
                "salt-api",
                "`POST /login` once, then `POST /` `test.ping`, a new connection each",
            ),
            Which::H2 => (
                "saltq's HTTP/2 port",
                "`Run` `test.ping` over QUIC to the swarm",
            ),
        };
        let m = |api: &'static str, h2: &'static str| match which {
            Which::Api => api,
            Which::H2 => h2,
        };
        let flood = format!(
            "{conns} connections ({} idle, {} slowloris) from {SOURCES} addresses for {secs} s",
            conns.div_ceil(2),
            conns / 2
        );
        let lat = |p: &Phase| Summary::of(&p.latencies()).unwrap_or(Summary::single(f64::NAN));
        let dead = |p: &Phase| {
            if p.alive {
                ""
            } else {
                " (DIED during the flood)"
            }
        };
        let salt_note = |f: &dyn Fn(&Phase) -> String| {
            salt.map_or(String::new(), |s| format!(" — Salt: {}{}", f(s), dead(s)))
        };
        self.figures.push(
            Figure::new(
                "flood",
                n,
                m("flood_api_legit_failed", "flood_h2_legit_failed"),
                format!("{what} under a flood of {conns} connections: legitimate requests failed (one a second: {legit})"),
                "requests",
                Summary::single(ours.failed() as f64),
                salt.map(|s| Summary::single(s.failed() as f64)),
                None,
            )
            .note(format!(
                "{flood}; saltq: {}{}{}",
                ours.probes_note(),
                dead(ours),
                salt_note(&|s: &Phase| s.probes_note())
            )),
        );
        self.figures.push(
            Figure::new(
                "flood",
                n,
                m("flood_api_legit_ms", "flood_h2_legit_ms"),
                format!("{what} under the flood: answered legitimate requests' latency (median, min–max)"),
                "ms",
                lat(ours),
                salt.map(lat),
                None,
            )
            .note(format!("time from sending to the whole answer; failed ones (past {LEGIT_TIMEOUT:?}) not counted")),
        );
        self.figures.push(
            Figure::new(
                "flood",
                n,
                m("flood_api_peak_fds", "flood_h2_peak_fds"),
                format!("{what} under the flood: the server's peak open descriptors"),
                "fds",
                Summary::single(ours.peak_fds() as f64),
                salt.map(|s| Summary::single(s.peak_fds() as f64)),
                None,
            )
            .note(format!(
                "/proc/PID/fd once a second (Salt: summed over the salt-api process tree); before the flood: saltq {}{}",
                ours.samples.first().map_or(0, |s| s.fds),
                salt_note(&|s: &Phase| s.samples.first().map_or(0, |x| x.fds).to_string())
            )),
        );
        self.figures.push(
            Figure::new(
                "flood",
                n,
                m("flood_api_peak_rss_mib", "flood_h2_peak_rss_mib"),
                format!("{what} under the flood: the server's peak resident memory"),
                "MiB",
                Summary::single(ours.peak_rss_mib()),
                salt.map(|s| Summary::single(s.peak_rss_mib())),
                None,
            )
            .note(format!(
                "VmRSS once a second (saltq: the whole master; Salt: the salt-api process tree); before: saltq {:.1} MiB{}",
                ours.samples.first().map_or(0, |s| s.rss_kib) as f64 / 1024.0,
                salt_note(&|s: &Phase| format!(
                    "{:.1} MiB",
                    s.samples.first().map_or(0, |x| x.rss_kib) as f64 / 1024.0
                ))
            )),
        );
        self.figures.push(
            Figure::new(
                "flood",
                n,
                m("flood_api_log_kib", "flood_h2_log_kib"),
                format!("{what} under the flood: the server's log growth"),
                "KiB",
                Summary::single(ours.log_growth_kib()),
                salt.map(|s| Summary::single(s.log_growth_kib())),
                None,
            )
            .note(
                "saltq: master.log (stderr, log_level warning); Salt: salt-api's log file (warning) and its stderr",
            ),
        );
        self.figures.push(
            Figure::new(
                "flood",
                n,
                m("flood_api_held_at_end", "flood_h2_held_at_end"),
                format!("{what} under the flood: flood connections still open when it ended"),
                "connections",
                Summary::single(ours.held_at_end() as f64),
                salt.map(|s| Summary::single(s.held_at_end() as f64)),
                None,
            )
            .note(format!(
                "saltq: {}{}",
                ours.fates_note(),
                salt_note(&|s: &Phase| s.fates_note())
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_connection_is_classified_by_what_it_received_and_how_it_ended() {
        let check = |got: &[u8], end, want| assert_eq!(classify(got, end), want, "{got:?} {end:?}");
        check(
            b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n",
            End::Eof,
            Fate::Answered408,
        );
        check(
            b"HTTP/1.1 408 Request Timeout\r\n",
            End::Reset,
            Fate::Answered408,
        );
        check(
            b"HTTP/1.1 503 Service Unavailable\r\n\r\ntoo many",
            End::Eof,
            Fate::Answered503,
        );
        check(
            b"HTTP/1.1 400 Bad Request\r\n",
            End::Eof,
            Fate::AnsweredOther,
        );
        check(
            &[0x15, 0x03, 0x03, 0x00, 0x02],
            End::Eof,
            Fate::AnsweredOther,
        );
        check(b"HTTP/1.1 40", End::Eof, Fate::AnsweredOther);
        check(b"", End::Eof, Fate::Closed);
        check(b"", End::Reset, Fate::Reset);
        check(b"", End::Open, Fate::Open);
        check(b"HTTP/1.1 408 ", End::Open, Fate::Open);
        assert!(Fate::Reset.closed_by_server() && !Fate::Open.closed_by_server());
        assert!(!Fate::NotAccepted.closed_by_server());
    }

    #[test]
    fn the_flood_is_spread_over_every_source_and_half_of_it_is_slow() {
        let slots: Vec<_> = (0..200).map(flood_slot).collect();
        let sources: std::collections::BTreeSet<_> = slots.iter().map(|s| s.0).collect();
        assert_eq!(sources.len(), SOURCES as usize);
        assert!(sources.contains(&IpAddr::from([127, 0, 0, 2])));
        assert!(sources.contains(&IpAddr::from([127, 0, 0, 1 + SOURCES])));
        assert_eq!(slots.iter().filter(|s| s.1).count(), 100);
        for src in sources {
            let slow = slots.iter().filter(|s| s.0 == src && s.1).count();
            assert_eq!(slow, 5, "{src}: each address sends both kinds");
        }
    }
}
