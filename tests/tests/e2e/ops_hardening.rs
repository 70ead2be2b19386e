//! Operational hardening of a real master (issue #31): the open-file limit raised at start, the
//! log rate-limited per kind of message under a flood of refused handshakes, the health port on
//! `interface`, and `/metrics` behind a bearer token.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, pem::PemObject};
use saltq_tests::{Master, Scratch, bin, eventually};

use crate::ops::get_as as get;
use saltq_transport::pki::{self, Ca, CertRole, CertifyRequest, Validity};

/// A master started by this file with its own config (the shared harness always sets
/// `http_interface` and the debug level, which these tests must not).
struct Started {
    dir: Scratch,
    child: Child,
    listen: serde_json::Value,
}

impl Started {
    /// Starts `saltq-master` on 127.0.0.1 with `extra` config lines at level info, through
    /// `wrapper` (a command and its arguments that run the master, e.g. `prlimit`) if given.
    fn launch(extra: &str, wrapper: &[&str]) -> Started {
        let dir = Scratch::new("opshard");
        let etc = dir.0.join("etc");
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(
            etc.join("master"),
            format!(
                "root_dir: {}\ninterface: 127.0.0.1\nport: 0\nhttp_port: 0\nlog_level: info\n{extra}\n",
                dir.0.join("root").display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.0.join("master.log")).unwrap();
        let master = bin("saltq-master");
        let mut cmd = match wrapper.split_first() {
            Some((prog, args)) => {
                let mut c = Command::new(prog);
                c.args(args).arg(&master);
                c
            }
            None => Command::new(&master),
        };
        let mut child = cmd
            .arg("-c")
            .arg(&etc)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn saltq-master");
        let listen_file = dir.0.join("root/var/cache/saltq/master/listen.json");
        let log_path = dir.0.join("master.log");
        let listen = eventually("master listening", Duration::from_secs(20), || {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "saltq-master exited with {status}:\n{}",
                    std::fs::read_to_string(&log_path).unwrap_or_default()
                );
            }
            std::fs::read_to_string(&listen_file)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
        });
        Started { dir, child, listen }
    }

    fn addr(&self, which: &str) -> String {
        self.listen[which]
            .as_str()
            .unwrap_or_else(|| panic!("no {which} address in {}", self.listen))
            .to_owned()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.0.join("master.log")).unwrap_or_default()
    }

    fn pki_dir(&self) -> std::path::PathBuf {
        self.dir.0.join("root/etc/saltq/pki/master")
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_open_file_soft_limit_is_raised_to_the_hard_limit() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        eprintln!("skipped: prlimit (util-linux) is not installed");
        return;
    }
    let m = Started::launch("", &["prlimit", "--nofile=256:4096"]);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", m.child.id())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("Max open files in /proc/PID/limits");
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words[3..5], ["4096", "4096"], "{line}");
    let log = m.log();
    assert!(
        log.contains("raised the open file limit (RLIMIT_NOFILE) from 256 to 4096"),
        "{log}"
    );
}

#[test]
fn the_health_port_listens_on_interface_unless_told_otherwise() {
    let m = Started::launch("", &[]);
    let http = m.addr("http");
    let port = http.rsplit(':').next().unwrap();
    assert_eq!(http, format!("127.0.0.1:{port}"), "bound address");
    assert_eq!(get(&http, "/healthz", None), (200, "ok\n".into()));
    // Another loopback address of this host reaches nothing on that port.
    let other: std::net::SocketAddr = format!("127.0.0.2:{port}").parse().unwrap();
    let e = std::net::TcpStream::connect_timeout(&other, Duration::from_secs(5))
        .expect_err("the health port must not listen on 127.0.0.2");
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
    drop(m);

    // `http_interface` still wins.
    let m = Started::launch("http_interface: 127.0.0.3", &[]);
    assert!(m.addr("http").starts_with("127.0.0.3:"), "{}", m.listen);
}

#[test]
fn metrics_need_the_bearer_token_and_probes_stay_open() {
    let master = Master::start_with(|dir: &Path| {
        // Under the master's root_dir, where a path in its config points.
        std::fs::create_dir_all(dir.join("root")).unwrap();
        let token = dir.join("root/metrics.token");
        std::fs::write(&token, "s3cret-token\n").unwrap();
        format!("metrics_token_file: {}", token.display())
    });
    let http = master.http.clone().expect("http address");
    assert_eq!(get(&http, "/healthz", None), (200, "ok\n".into()));
    assert_eq!(get(&http, "/readyz", None).0, 200);
    assert_eq!(get(&http, "/metrics", None).0, 401);
    assert_eq!(get(&http, "/metrics", Some("Bearer wrong")).0, 401);
    assert_eq!(get(&http, "/metrics", Some("Bearer s3cret-token-")).0, 401);
    assert_eq!(get(&http, "/metrics", Some("Basic s3cret-token")).0, 401);
    let (code, text) = get(&http, "/metrics", Some("Bearer s3cret-token"));
    assert_eq!(code, 200, "{text}");
    assert!(text.contains("saltq_log_suppressed_total "), "{text}");

    // A token file that cannot be read is refused at start, naming the key and the file.
    let (code, err) = saltq_tests::refused_start(
        "saltq-master",
        "master",
        "port: 0\nhttp_port: 0\nmetrics_token_file: /no/such.token\n",
    );
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("metrics_token_file") && err.contains("such.token"),
        "{err}"
    );
}

/// A client certificate from the master's own CA that expired an hour ago, and its key: the
/// master refuses it at every handshake with a warning naming it.
fn expired_client(pki_dir: &Path) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    let (own, key_pem) = pki::self_signed_minion("flood", None).unwrap();
    let own = CertificateDer::pem_slice_iter(own.as_bytes())
        .next()
        .unwrap()
        .unwrap();
    let spki = pki::spki_from_pem(&pki::subject(&own).unwrap().public_key_pem).unwrap();
    let ca = Ca::load(&pki_dir.join("ca.crt"), &pki_dir.join("ca.key")).unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let pem = ca
        .certify(&CertifyRequest {
            common_name: "flood".into(),
            role: CertRole::Client,
            public_key_der: spki,
            validity: Validity {
                not_before: now - 7200,
                not_after: now - 3600,
            },
        })
        .unwrap();
    let chain = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    (
        chain,
        PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap(),
    )
}

/// 10,000 handshakes with an expired certificate against the master's TCP port: each one is a
/// warning, yet the log keeps to the rate limit and sums up the rest.
#[test]
fn a_flood_of_refused_handshakes_leaves_a_small_log() {
    const ATTEMPTS: usize = 10_000;
    const CONCURRENCY: usize = 16;
    let m = Started::launch("", &[]);
    let h2: std::net::SocketAddr = m.addr("h2").parse().unwrap();
    let (chain, key) = expired_client(&m.pki_dir());
    let mut roots = rustls::RootCertStore::empty();
    for c in pki::load_certs(&m.pki_dir().join("ca.crt")).unwrap() {
        roots.add(c).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_client_auth_cert(chain, key)
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));

    let started = Instant::now();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let refused = rt.block_on(async move {
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..CONCURRENCY {
            let (next, connector) = (next.clone(), connector.clone());
            tasks.spawn(async move {
                let mut refused = 0usize;
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < ATTEMPTS {
                    let attempt = async {
                        use tokio::io::AsyncReadExt;
                        let tcp = tokio::net::TcpStream::connect(h2).await.ok()?;
                        let name = ServerName::IpAddress(h2.ip().into());
                        let mut tls = connector.connect(name, tcp).await.ok()?;
                        // TLS 1.3: the server judges our certificate after our Finished; its
                        // alert (or the close) arrives on the first read.
                        let mut byte = [0u8; 1];
                        Some(matches!(tls.read(&mut byte).await, Err(_) | Ok(0)))
                    };
                    if let Ok(Some(true)) =
                        tokio::time::timeout(Duration::from_secs(10), attempt).await
                    {
                        refused += 1;
                    }
                }
                refused
            });
        }
        let mut total = 0;
        while let Some(n) = tasks.join_next().await {
            total += n.unwrap();
        }
        total
    });
    let elapsed = started.elapsed().as_secs_f64();
    assert!(
        refused > ATTEMPTS / 2,
        "only {refused} of {ATTEMPTS} handshakes were refused"
    );

    // The master sums up what it dropped within a second; wait for it (bounded) before
    // counting, so the log has settled.
    let summary_of = |log: &str| {
        log.lines()
            .find(|l| {
                l.contains("suppressed")
                    && l.contains(
                        "messages like saltq_transport::tls: refusing the certificate of flood",
                    )
            })
            .map(str::to_owned)
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    while summary_of(&m.log()).is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    let log = m.log();
    let warnings = log
        .lines()
        .filter(|l| l.contains("refusing the certificate of flood") && !l.contains("suppressed"))
        .count();
    // The limit: a burst of 100, then 10 a second, over the time the flood took (and a
    // second for the last tick).
    let bound = 100 + (10.0 * (elapsed + 2.0)) as usize;
    eprintln!(
        "{refused} refused handshakes in {elapsed:.1} s: {warnings} warnings written (bound {bound}), log {} bytes",
        log.len()
    );
    assert!(
        warnings <= bound,
        "{warnings} refusal warnings written for {refused} refused handshakes in {elapsed:.1} s, more than {bound}"
    );
    assert!(warnings < refused, "{warnings} of {refused}");
    let summary = summary_of(&log).expect("a summary of the suppressed refusals");
    eprintln!("{summary}");
    // Besides, at most one summary a second, and the start-up lines.
    assert!(
        log.lines().count() < bound + (elapsed + 2.0) as usize + 50,
        "{} lines in the log",
        log.lines().count()
    );

    let (code, metrics) = get(&m.addr("http"), "/metrics", None);
    assert_eq!(code, 200);
    let suppressed: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("saltq_log_suppressed_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no saltq_log_suppressed_total in:\n{metrics}"));
    assert!(
        suppressed >= (refused - warnings) as u64,
        "{suppressed} suppressed, {refused} refused, {warnings} written"
    );
}
