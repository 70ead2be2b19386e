//! Test helpers for saltq's end-to-end tests: start real `saltq-master` and `saltq-minion`
//! processes on 127.0.0.1 with ephemeral ports, run the real `saltq` CLI against them, and
//! clean up. Nothing here is used by product code.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

mod third_party;
pub use third_party::{third_party, third_party_under};

/// Polls `cond` every 50 ms until it holds or `timeout` passes; panics with `what` on timeout.
pub fn eventually<T>(what: &str, timeout: Duration, mut cond: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = cond() {
            return v;
        }
        if start.elapsed() > timeout {
            panic!("timed out after {timeout:?} waiting for: {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Why a test that changes system users cannot run here, if it cannot: it must run as root
/// and find each of `tools` on the PATH.
pub fn not_root_or_missing(tools: &[&str]) -> Option<String> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if !root {
        return Some("the tests do not run as root".into());
    }
    for tool in tools {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!("{tool} is not installed"));
        }
    }
    None
}

/// Reads the lines a `saltq events` watcher prints until `done` holds for the lines read so
/// far or `timeout` passes, then kills it and returns them. Events reach each subscriber on
/// its own stream, so a watcher may print an event after the CLI that caused it has exited.
pub fn watched_until(
    mut watcher: Child,
    timeout: Duration,
    mut done: impl FnMut(&[String]) -> bool,
) -> Vec<String> {
    use std::io::BufRead;
    let stdout = watcher
        .stdout
        .take()
        .expect("the watcher's stdout is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + timeout;
    let mut lines = Vec::new();
    while !done(&lines) {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            break;
        };
        match rx.recv_timeout(left) {
            Ok(line) => lines.push(line),
            Err(_) => break,
        }
    }
    let _ = watcher.kill();
    let _ = watcher.wait();
    lines
}

/// Runs `binary -c DIR` with `DIR/file` holding `config` (plus a `root_dir` in DIR) and waits
/// up to 20 s for it to exit, as it must when the config is refused: its exit code and stderr.
pub fn refused_start(binary: &str, file: &str, config: &str) -> (i32, String) {
    use std::io::Read;
    let dir = Scratch::new(&format!("refused-{binary}"));
    std::fs::write(
        dir.0.join(file),
        format!("root_dir: {}\n{config}", dir.0.join("root").display()),
    )
    .expect("write config");
    let mut child = Command::new(bin(binary))
        .arg("-c")
        .arg(&dir.0)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let status = eventually(&format!("{binary} exits"), Duration::from_secs(20), || {
        child.try_wait().ok().flatten()
    });
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    (status.code().unwrap_or(-1), err)
}

/// Where the workspace's binaries are (`target/debug` or `target/release` beside this test).
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test> -> target/<profile>/<name>
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let p = dir.join(name);
    assert!(
        p.exists(),
        "{} not found: build the binaries first (cargo build --workspace --bins)",
        p.display()
    );
    p
}

/// The tests' short liveness settings (a dead peer noticed within seconds), unless `extra`
/// sets its own.
fn liveness(extra: &str) -> &'static str {
    if extra.contains("idle_timeout") {
        ""
    } else {
        "idle_timeout: 3\nkeep_alive: 1\n"
    }
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A scratch directory removed on drop (kept when the test panics, for its logs).
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A new empty directory under the system temp dir.
    pub fn new(tag: &str) -> Scratch {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("saltq-e2e-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create scratch dir");
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept test files in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn stop(child: &mut Child) {
    // SIGTERM first (graceful shutdown), then kill.
    let pid = child.id() as i32;
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status();
    for _ in 0..60 {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// A running master.
pub struct Master {
    /// Its files: config dir `etc`, root `root`, log `master.log`.
    pub dir: Scratch,
    child: Option<Child>,
    /// The port both listeners share.
    pub port: u16,
    /// The HTTP probe and metrics address.
    pub http: Option<String>,
    extra: String,
}

impl Master {
    /// Starts a master with extra YAML config lines.
    pub fn start(extra: &str) -> Master {
        Master::start_with(|_| extra.to_owned())
    }

    /// Starts a master after `setup` wrote files into its directory; `setup` returns the extra
    /// YAML config lines.
    pub fn start_with(setup: impl FnOnce(&Path) -> String) -> Master {
        let dir = Scratch::new("master");
        let extra = setup(&dir.0);
        let mut m = Master {
            dir,
            child: None,
            port: 0,
            http: None,
            extra,
        };
        m.launch(0);
        m
    }

    /// The master's config directory (`-c`).
    pub fn config_dir(&self) -> PathBuf {
        self.dir.0.join("etc")
    }

    /// The config directory the CLI uses (the same root, with the bound port written in).
    pub fn cli_dir(&self) -> PathBuf {
        self.dir.0.join("cli")
    }

    /// The master's pki_dir.
    pub fn pki_dir(&self) -> PathBuf {
        self.dir.0.join("root/etc/saltq/pki/master")
    }

    /// The master's log.
    pub fn log(&self) -> PathBuf {
        self.dir.0.join("master.log")
    }

    fn write_config(&self, dir: &Path, port: u16) {
        std::fs::create_dir_all(dir).expect("config dir");
        // Loopback unless the test names its own address (e.g. a veth it created).
        let interface = if self.extra.lines().any(|l| l.starts_with("interface:")) {
            ""
        } else {
            "interface: 127.0.0.1\n"
        };
        let cfg = format!(
            "root_dir: {}\n{interface}port: {port}\nhttp_interface: 127.0.0.1\nhttp_port: 0\nlog_level: debug\n{}{}\n",
            self.dir.0.join("root").display(),
            liveness(&self.extra),
            self.extra
        );
        // Written aside and renamed, so a CLI started meanwhile (e.g. while the master is
        // relaunched) reads the old file or the new one, never a half-written one.
        let tmp = dir.join(".master.tmp");
        std::fs::write(&tmp, cfg).expect("write master config");
        std::fs::rename(&tmp, dir.join("master")).expect("rename master config");
    }

    fn launch(&mut self, port: u16) {
        self.write_config(&self.config_dir(), port);
        let listen = self.dir.0.join("root/var/cache/saltq/master/listen.json");
        let _ = std::fs::remove_file(&listen);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log())
            .expect("log");
        let child = Command::new(bin("saltq-master"))
            .arg("-c")
            .arg(self.config_dir())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn saltq-master");
        self.child = Some(child);
        let log_path = self.log();
        let v: serde_json::Value = eventually(
            &format!("master listening (log: {})", log_path.display()),
            Duration::from_secs(20),
            || {
                if let Some(c) = self.child.as_mut()
                    && let Ok(Some(status)) = c.try_wait()
                {
                    panic!("saltq-master exited with {status}:\n{}", tail(&log_path));
                }
                std::fs::read_to_string(&listen)
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok())
            },
        );
        let addr = v["quic"].as_str().or(v["h2"].as_str()).expect("an address");
        self.port = addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port");
        self.http = v["http"].as_str().map(str::to_owned);
        self.write_config(&self.cli_dir(), self.port);
    }

    /// The master process's id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stops the master (SIGTERM).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            stop(&mut c);
        }
    }

    /// Kills the master at once (SIGKILL), as a crash: no goodbye to its minions.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the master again on the same port after [`Master::kill`] (or [`Master::stop`]).
    pub fn relaunch(&mut self) {
        let port = self.port;
        self.launch(port);
    }

    /// Stops and starts the master again on the same port.
    pub fn restart(&mut self) {
        self.stop();
        let port = self.port;
        self.launch(port);
    }

    /// Runs `saltq ARGS` against this master with `-c`.
    pub fn saltq(&self, args: &[&str]) -> Out {
        let mut cmd = Command::new(bin("saltq"));
        cmd.arg("-c").arg(self.cli_dir()).args(args);
        Out::run(cmd)
    }

    /// Runs `saltq` with explicit connection flags (no `-c`).
    pub fn saltq_with(&self, flags: &[&str], args: &[&str]) -> Out {
        let mut cmd = Command::new(bin("saltq"));
        cmd.arg("-c")
            .arg(self.dir.0.join("nonexistent"))
            .args(flags)
            .args(args);
        Out::run(cmd)
    }

    /// Starts `saltq events --tag TAG --count COUNT` and returns once the master holds its
    /// subscription (the CLI logs "subscribed to the event bus" when the stream is open), so
    /// every event fired after this returns reaches it. Its stdout is piped.
    pub fn watch_events(&self, tag: &str, count: usize) -> Child {
        self.watch(tag, Some(count))
    }

    /// As [`Master::watch_events`], with no count: the watcher runs until killed.
    pub fn watch_all_events(&self, tag: &str) -> Child {
        self.watch(tag, None)
    }

    fn watch(&self, tag: &str, count: Option<usize>) -> Child {
        let mut cmd = Command::new(bin("saltq"));
        cmd.arg("-c")
            .arg(self.cli_dir())
            .args(["events", "--log-level", "info", "--tag", tag]);
        if let Some(n) = count {
            cmd.arg("--count").arg(n.to_string());
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("saltq events");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        // Reads stderr to its end, so the CLI never blocks on a full pipe.
        std::thread::spawn(move || {
            use std::io::BufRead;
            let mut tx = Some(tx);
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains("subscribed to the event bus")
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(20))
            .expect("saltq events subscribed within 20 s");
        child
    }

    /// Starts a minion named `id` with extra YAML config lines.
    pub fn minion(&self, id: &str, extra: &str) -> Minion {
        Minion::start(self, id, extra)
    }

    /// As [`Master::minion`], with the process started as `launch` says.
    pub fn minion_launched(&self, id: &str, extra: &str, launch: Launch) -> Minion {
        Minion::start_launched(
            &format!("master: 127.0.0.1\nmaster_port: {}", self.port),
            id,
            extra,
            launch,
        )
    }

    /// Accepts a pending key and waits until the minion answers test.ping.
    pub fn accept_and_wait(&self, id: &str) {
        eventually(&format!("{id} pending"), Duration::from_secs(20), || {
            let o = self.saltq(&["key", "-l", "pre", "--out", "json"]);
            o.stdout.contains(&format!("\"{id}\"")).then_some(())
        });
        let o = self.saltq(&["key", "-a", id, "-y"]);
        assert_eq!(o.code, 0, "{o:?}");
        self.wait_for(id);
    }

    /// Waits until `id` answers test.ping.
    pub fn wait_for(&self, id: &str) {
        eventually(
            &format!("{id} answers test.ping"),
            Duration::from_secs(30),
            || {
                let o = self.saltq(&[
                    "-L",
                    id,
                    "test.ping",
                    "--out",
                    "json",
                    "-t",
                    "2",
                    "--static",
                ]);
                (o.code == 0 && o.stdout.contains("true")).then_some(())
            },
        );
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            eprintln!("--- master log ---\n{}", tail(&self.log()));
        }
    }
}

/// How a minion's process is started beyond its config file.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// A command the minion runs under, e.g. `["ip", "netns", "exec", "NS"]` (it must exec
    /// the minion, so that the child's pid is the minion's).
    pub prefix: Vec<String>,
    /// Environment variables added to the minion's (its jobs' commands inherit them).
    pub env: Vec<(String, String)>,
}

/// A running minion.
pub struct Minion {
    /// Its files.
    pub dir: Scratch,
    child: Option<Child>,
    /// Its id.
    pub id: String,
    launch: Launch,
}

impl Minion {
    fn start(master: &Master, id: &str, extra: &str) -> Minion {
        Minion::start_at(
            &format!("master: 127.0.0.1\nmaster_port: {}", master.port),
            id,
            extra,
        )
    }

    /// Starts a minion named `id` whose config names its masters with `masters` (YAML lines,
    /// e.g. a `master:` list and `master_type: failover`), and extra YAML config lines.
    pub fn start_at(masters: &str, id: &str, extra: &str) -> Minion {
        Minion::start_launched(masters, id, extra, Launch::default())
    }

    /// As [`Minion::start_at`], with the process started as `launch` says.
    pub fn start_launched(masters: &str, id: &str, extra: &str, launch: Launch) -> Minion {
        let dir = Scratch::new(&format!("minion-{id}"));
        std::fs::create_dir_all(dir.0.join("etc")).expect("minion etc");
        let cfg = format!(
            "root_dir: {}\nid: {id}\n{masters}\nacceptance_wait_time: 0.3\nrecon_default: 100\nrecon_max: 1000\nlog_level: debug\n{}{extra}\n",
            dir.0.join("root").display(),
            liveness(extra),
        );
        std::fs::write(dir.0.join("etc/minion"), cfg).expect("minion config");
        let mut m = Minion {
            dir,
            child: None,
            id: id.to_owned(),
            launch,
        };
        m.launch();
        m
    }

    fn launch(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log())
            .expect("log");
        let minion = bin("saltq-minion");
        let mut cmd = match self.launch.prefix.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(&minion);
                c
            }
            None => Command::new(&minion),
        };
        cmd.envs(self.launch.env.iter().map(|(k, v)| (k, v)));
        self.child = Some(
            cmd.arg("-c")
                .arg(self.dir.0.join("etc"))
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("spawn saltq-minion"),
        );
    }

    /// The minion process's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The minion's log.
    pub fn log(&self) -> PathBuf {
        self.dir.0.join("minion.log")
    }

    /// The minion's pki_dir.
    pub fn pki_dir(&self) -> PathBuf {
        self.dir.0.join("root/etc/saltq/pki/minion")
    }

    /// Stops the minion (SIGTERM).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            stop(&mut c);
        }
    }

    /// Kills the minion at once (SIGKILL), as a crash.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the minion again with the same files.
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }
}

impl Drop for Minion {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            eprintln!("--- minion {} log ---\n{}", self.id, tail(&self.log()));
        }
    }
}

/// What a CLI run printed, and its exit code.
#[derive(Debug)]
pub struct Out {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Out {
    fn run(mut cmd: Command) -> Out {
        let o: Output = cmd.stdin(Stdio::null()).output().expect("run saltq");
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    /// Standard output as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }
}

/// A free TCP port on 127.0.0.1 (free when asked; a server started right after takes it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A PostgreSQL server of the test's own (initdb into a scratch folder, run as the `postgres`
/// user, on 127.0.0.1 and a free port), so stopping it disturbs no other test. Stopped
/// (immediately) when dropped.
pub struct PrivatePostgres {
    bin: PathBuf,
    data: PathBuf,
    /// The port it listens on.
    pub port: u16,
    _dir: Scratch,
}

impl PrivatePostgres {
    /// Creates and starts the server; `None` where that cannot be done here (no PostgreSQL
    /// binaries under /usr/lib/postgresql, or no `postgres` user to run them as).
    pub fn start() -> Option<PrivatePostgres> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .flatten()
            .map(|e| e.path().join("bin"))
            .find(|b| b.join("initdb").exists())?;
        let dir = Scratch::new("pg");
        let data = dir.0.join("data");
        // The postgres user must reach the folder.
        let _ = Command::new("chmod").arg("755").arg(&dir.0).status();
        let _ = Command::new("chown").arg("postgres").arg(&dir.0).status();
        let initdb = bin.join("initdb");
        let pg = PrivatePostgres {
            bin,
            data,
            port: free_port(),
            _dir: dir,
        };
        let data = pg.data.display().to_string();
        if !pg.as_postgres(&[
            &initdb.display().to_string(),
            "-D",
            &data,
            "--auth=trust",
            "-U",
            "postgres",
        ]) {
            return None;
        }
        pg.up().then_some(pg)
    }

    fn as_postgres(&self, args: &[&str]) -> bool {
        Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    fn ctl(&self, tail: &[&str]) -> bool {
        let ctl = self.bin.join("pg_ctl").display().to_string();
        let data = self.data.display().to_string();
        let log = self.data.join("log").display().to_string();
        let mut args = vec![ctl.as_str(), "-D", &data, "-w", "-l", &log];
        args.extend(tail);
        self.as_postgres(&args)
    }

    /// Starts the server (again) and waits until it accepts connections.
    pub fn up(&self) -> bool {
        let opts = format!("-p {} -k {} -h 127.0.0.1", self.port, self.data.display());
        self.ctl(&["-o", &opts, "start"])
    }

    /// Stops the server with `pg_ctl`'s shutdown mode `mode`: `fast` (sessions closed) or
    /// `immediate` (processes killed, as a crash; recovery runs at the next start).
    pub fn down(&self, mode: &str) -> bool {
        self.ctl(&["-m", mode, "stop"])
    }

    /// A libpq connection string for its `postgres` database.
    pub fn url(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        self.down("immediate");
    }
}
