//! The `saltapi` scenario: salt-api's `POST /` with `test.ping` on one minion process, saltq's
//! salt-api (served by saltq-master) beside Salt 3007.8's salt-api (rest_cherrypy,
//! `bench/salt/saltapi-peer`) in the same run, measured by the same HTTP client: latency of
//! one request at a time, and requests per second with several clients at once. Both on plain
//! HTTP (`disable_ssl`) with eauth `file`, one token per run, keep-alive connections.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use crate::fleet::{Master, start_minion};
use crate::procs::{Proc, tail};
use crate::report::Figure;
use crate::scenarios::Ctx;
use crate::stats::{Summary, percentile};

/// Clients sending at once in the throughput run.
const CLIENTS: usize = 8;

/// What one API measured.
#[derive(Debug, Clone)]
struct ApiFigures {
    /// Per-request latency of sequential requests, ms.
    latencies_ms: Vec<f64>,
    /// Requests per second with [`CLIENTS`] clients, one figure per round.
    rps: Vec<f64>,
}

/// A salt-api client: a token and a keep-alive connection pool.
struct Api {
    base: String,
    client: Client<HttpConnector, Full<Bytes>>,
    token: String,
}

impl Api {
    /// Logs in as `user`/`password` with eauth `file`.
    async fn login(base: &str, user: &str, password: &str) -> anyhow::Result<Api> {
        let client = Client::builder(TokioExecutor::new()).build_http();
        let mut api = Api {
            base: base.trim_end_matches('/').to_owned(),
            client,
            token: String::new(),
        };
        let v = api
            .post(
                "/login",
                json!({"username": user, "password": password, "eauth": "file"}),
            )
            .await?;
        api.token = v["return"][0]["token"]
            .as_str()
            .with_context(|| format!("no token in the login answer: {v}"))?
            .to_owned();
        Ok(api)
    }

    async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        let req = hyper::Request::post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header("x-auth-token", &self.token)
            .body(Full::new(Bytes::from(body.to_string())))?;
        let resp = self
            .client
            .request(req)
            .await
            .with_context(|| format!("POST {}{path}", self.base))?;
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

    /// One `test.ping` through `POST /`, checked to be `{minion: true}`; its wall time in ms.
    async fn ping(&self, minion: &str) -> anyhow::Result<f64> {
        let start = Instant::now();
        let v = self
            .post(
                "/",
                json!([{"client": "local", "tgt": "*", "fun": "test.ping"}]),
            )
            .await?;
        let took = start.elapsed().as_secs_f64() * 1e3;
        if v["return"][0][minion] != json!(true) {
            bail!("test.ping through POST / did not return {minion}: true: {v}");
        }
        Ok(took)
    }
}

/// Measures one salt-api: a warm-up, `sequential` requests one at a time, then `rounds`
/// rounds of `per_client` requests from each of [`CLIENTS`] clients at once.
async fn measure(
    base: &str,
    user: &str,
    password: &str,
    minion: &str,
    sequential: usize,
    rounds: usize,
    per_client: usize,
) -> anyhow::Result<ApiFigures> {
    let api = std::sync::Arc::new(Api::login(base, user, password).await?);
    for _ in 0..3 {
        api.ping(minion).await?;
    }
    let mut latencies_ms = Vec::with_capacity(sequential);
    for _ in 0..sequential {
        latencies_ms.push(api.ping(minion).await?);
    }
    let mut rps = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..CLIENTS {
            let api = api.clone();
            let minion = minion.to_owned();
            tasks.spawn(async move {
                for _ in 0..per_client {
                    api.ping(&minion).await?;
                }
                anyhow::Ok(())
            });
        }
        while let Some(done) = tasks.join_next().await {
            done??;
        }
        rps.push((CLIENTS * per_client) as f64 / start.elapsed().as_secs_f64());
    }
    Ok(ApiFigures { latencies_ms, rps })
}

impl Ctx {
    /// The `saltapi` scenario (the size is ignored: one minion).
    pub(crate) async fn saltapi(&mut self) -> anyhow::Result<()> {
        let sequential = self.runs_or(200);
        let rounds = 5;
        let per_client = 25;
        let dir = self.fresh_dir("saltapi")?;
        let users = dir.join("users.txt");
        std::fs::write(&users, "bench:bench\n")?;
        let ours = {
            let mut master = Master::start_with(
                &self.bins,
                &dir.join("master"),
                &format!(
                    "external_auth:\n  file:\n    ^filename: {}\n    bench: ['.*']\n\
                     netapi_enable_clients: [local]\n\
                     rest_cherrypy: {{port: 0, host: 127.0.0.1, disable_ssl: true}}\n",
                    users.display()
                ),
            )?;
            let mut minion =
                start_minion(&self.bins, &dir.join("minion"), "bench-000", master.port)?;
            master.wait_connected(
                1,
                Instant::now(),
                Duration::from_secs(60),
                &mut [&mut minion],
            )?;
            let base = format!("http://{}", api_addr(&dir.join("master"))?);
            measure(
                &base,
                "bench",
                "bench",
                "bench-000",
                sequential,
                rounds,
                per_client,
            )
            .await?
        };
        let salt = self
            .salt_api(&dir, sequential.min(100), rounds, per_client)
            .await?;
        let ms = |f: &ApiFigures| {
            let mut v = f.latencies_ms.clone();
            v.sort_by(f64::total_cmp);
            v
        };
        let sorted = ms(&ours);
        let p90 = |v: &[f64]| percentile(v, 90.0);
        let salt_sorted = salt.as_ref().map(ms);
        self.figures.push(
            Figure::new(
                "saltapi",
                1,
                "saltapi_test_ping_ms",
                "salt-api `POST /` `test.ping`, one minion, one request at a time (p50 of the requests)",
                "ms",
                Summary::of(&sorted).context("no requests")?,
                salt_sorted.as_deref().and_then(Summary::of),
                None,
            )
            .note(format!(
                "p90: saltq {:.1} ms, Salt {}; {} requests (Salt {}) after 3 warm-up, plain HTTP, keep-alive",
                p90(&sorted),
                salt_sorted
                    .as_deref()
                    .map_or("—".into(), |v| format!("{:.1} ms", p90(v))),
                sorted.len(),
                salt_sorted.as_ref().map_or(0, Vec::len),
            )),
        );
        self.figures.push(
            Figure::new(
                "saltapi",
                1,
                "saltapi_test_ping_rps",
                format!("salt-api `POST /` `test.ping`, one minion, {CLIENTS} clients at once"),
                "requests/s",
                Summary::of(&ours.rps).context("no rounds")?,
                salt.as_ref().and_then(|s| Summary::of(&s.rps)),
                None,
            )
            .note(format!(
                "{rounds} rounds of {per_client} requests per client; every answer checked"
            )),
        );
        self.details.insert(
            "saltapi-1".into(),
            json!({"saltq": {"latencies_ms": ours.latencies_ms, "rps": ours.rps},
                   "salt": salt.map(|s| json!({"latencies_ms": s.latencies_ms, "rps": s.rps}))}),
        );
        Ok(())
    }

    /// Salt's salt-api measured with the same client, or `None` when Salt is not measured.
    async fn salt_api(
        &mut self,
        dir: &Path,
        sequential: usize,
        rounds: usize,
        per_client: usize,
    ) -> anyhow::Result<Option<ApiFigures>> {
        if !self.salt.enabled() {
            return Ok(None);
        }
        let (mut proc, ready) = start_saltapi_peer(dir).await?;
        let base = ready["api"].as_str().context("saltapi-peer named no api")?;
        let minion = ready["minion"].as_str().unwrap_or("saltminion");
        let figures = measure(
            base, "bench", "bench", minion, sequential, rounds, per_client,
        )
        .await;
        proc.stop();
        figures.map(Some)
    }
}

/// The address saltq's salt-api listens on, from the master's listen.json.
fn api_addr(root: &Path) -> anyhow::Result<String> {
    let listen = root.join("var/cache/saltq/master/listen.json");
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(&listen)
            .with_context(|| format!("cannot read {}", listen.display()))?,
    )?;
    Ok(v["rest_cherrypy"]
        .as_str()
        .with_context(|| format!("no rest_cherrypy address in {}", listen.display()))?
        .to_owned())
}

/// Starts Salt's salt-api beside a salt-master (`bench/salt/saltapi-peer`) and waits for the
/// JSON line that says where it listens.
pub(crate) async fn start_saltapi_peer(dir: &Path) -> anyhow::Result<(Proc, Value)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("salt/saltapi-peer");
    let log = dir.join("saltapi-peer.log");
    let out_path = dir.join("saltapi-peer.out");
    let api_port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut proc = Proc::spawn_group(
        Command::new("bash")
            .arg(&script)
            .env("SALT_PEER_PORT", crate::salt::free_port_pair()?.to_string())
            .env("SALT_PEER_API_PORT", api_port.to_string()),
        "saltapi-peer",
        &log,
        Stdio::from(std::fs::File::create(&out_path)?),
    )?;
    // Installing Salt on first use takes minutes; starting it about 20 s.
    let deadline = Instant::now() + Duration::from_secs(1800);
    let ready: Value = loop {
        proc.check_alive()
            .with_context(|| format!("saltapi-peer:\n{}", tail(&log, 15)))?;
        let text = std::fs::read_to_string(&out_path).unwrap_or_default();
        if let Some(v) = text
            .lines()
            .find_map(|l| serde_json::from_str::<Value>(l).ok())
        {
            break v;
        }
        if Instant::now() >= deadline {
            bail!(
                "saltapi-peer was not ready within 30 min:\n{}",
                tail(&log, 15)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    Ok((proc, ready))
}
