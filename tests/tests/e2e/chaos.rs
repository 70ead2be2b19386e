//! Chaos, end to end (issue #15): processes killed and a network cut while jobs run.
//!
//! - The master SIGKILLed and started again, several times, while jobs run on 24 minions:
//!   every job a minion ran (each leaves a mark on disk) has its return stored, exactly once
//!   per minion, and no minion ran a job twice.
//! - A minion SIGKILLed mid-job takes its job's commands with it and is reported as not
//!   returned, without the CLI hanging.
//! - PostgreSQL (the job cache) stopped as a crash and started again while jobs run: no
//!   return is lost.
//! - A minion in a network namespace of the test's own cut off past the idle timeout comes
//!   back, with the return of the job it ran meanwhile.
//! - Over a link losing 15 % of the datagrams each way, 50 ms late, every job returns.
//!
//! Every loop is bounded; namespaces, links and processes are removed on drop.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use saltq_tests::{Launch, Master, Minion, PrivatePostgres, Scratch, bin, eventually};
use serde_json::{Value, json};

/// The jobs of one chaos run and the marks they leave: job `k` runs
/// `echo TAG-k >> MARKS/$SALTQ_CHAOS_ID; sleep S; echo TAG-k` (each minion is started with
/// its id in `SALTQ_CHAOS_ID`), so the marks tell which minion ran which job, and the return
/// to expect is `TAG-k`.
struct Marks {
    dir: Scratch,
    tag: &'static str,
}

impl Marks {
    fn new(tag: &'static str) -> Marks {
        Marks {
            dir: Scratch::new(&format!("marks-{tag}")),
            tag,
        }
    }

    /// How to start minion `id` so that its jobs know its id.
    fn launch(&self, id: &str) -> Launch {
        Launch {
            env: vec![("SALTQ_CHAOS_ID".into(), id.into())],
            ..Launch::default()
        }
    }

    /// The command of job `k`, which takes `sleep` seconds after leaving its mark.
    fn command(&self, k: usize, sleep: &str) -> String {
        format!(
            "echo {tag}-{k} >> {dir}/$SALTQ_CHAOS_ID; sleep {sleep}; echo {tag}-{k}",
            tag = self.tag,
            dir = self.dir.0.display()
        )
    }

    /// The job number a string (a command, a return) names, if any.
    fn job_of(&self, text: &str) -> Option<usize> {
        let rest = &text[text.find(&format!("{}-", self.tag))? + self.tag.len() + 1..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    }

    /// Which minions ran each job; panics if a minion ran a job twice.
    fn read(&self) -> BTreeMap<usize, BTreeSet<String>> {
        let mut ran: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
        for entry in std::fs::read_dir(&self.dir.0).expect("marks dir").flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            for line in text.lines() {
                let k = self
                    .job_of(line)
                    .unwrap_or_else(|| panic!("a mark of {id} names no job: {line:?}"));
                assert!(
                    ran.entry(k).or_default().insert(id.clone()),
                    "{id} ran job {k} twice: {text}"
                );
            }
        }
        ran
    }
}

/// The jobs of `fun` in the master's job cache: job number (per `marks`) to jids.
fn jobs_in_cache(master: &Master, marks: &Marks, fun: &str) -> BTreeMap<usize, Vec<String>> {
    let o = master.saltq(&["jobs", "list", "--function", fun, "--out", "json"]);
    assert_eq!(o.code, 0, "{o:?}");
    let mut jobs: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (jid, job) in o.json().as_object().expect("jobs by jid") {
        let args = job["Arguments"].to_string();
        if let Some(k) = marks.job_of(&args) {
            jobs.entry(k).or_default().push(jid.clone());
        }
    }
    jobs
}

/// Checks the outcome of a chaos run, once publishing has stopped: every job a minion ran
/// (per the marks) is stored once in the job cache, as is each job whose publish was
/// acknowledged (`acked`: job number, jid), and its stored returns are exactly those of the
/// minions that ran it, each the job's own output. Waits up to `wait` for returns still
/// being re-sent. Returns each jid that ran and who ran it.
fn check_no_return_lost(
    master: &Master,
    marks: &Marks,
    acked: &[(usize, String)],
    wait: Duration,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut done: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let start = std::time::Instant::now();
    loop {
        // Read again each round: the last jobs may still be leaving their marks.
        let ran = marks.read();
        let cached = jobs_in_cache(master, marks, "cmd.run");
        for (k, jid) in acked {
            assert_eq!(
                cached.get(k),
                Some(&vec![jid.clone()]),
                "job {k}, acknowledged as {jid}, is not in the cache exactly once"
            );
        }
        let mut short = Vec::new();
        for (k, ids) in &ran {
            let jids = cached.get(k).cloned().unwrap_or_default();
            assert_eq!(
                jids.len(),
                1,
                "job {k}, which {ids:?} ran, is in the cache as {jids:?}"
            );
            let jid = &jids[0];
            if done.get(jid) == Some(ids) {
                continue;
            }
            let o = master.saltq(&["jobs", "lookup", jid, "--out", "json"]);
            let got = if o.code == 0 { o.json() } else { Value::Null };
            let want: serde_json::Map<String, Value> = ids
                .iter()
                .map(|id| (id.clone(), json!(format!("{}-{k}", marks.tag))))
                .collect();
            if got == Value::Object(want) {
                done.insert(jid.clone(), ids.clone());
            } else {
                short.push(format!("job {k} ({jid}) ran on {ids:?}; stored: {got}"));
            }
        }
        if short.is_empty() {
            return done;
        }
        assert!(
            start.elapsed() < wait,
            "returns not stored after {wait:?}, {} jobs short: {short:#?}",
            short.len()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Whether `pid` runs a process whose command line contains `needle` (a zombie counts as
/// gone; the needle guards against the pid having been reused).
fn running(pid: u32, needle: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    !stat.is_empty()
        && !stat.contains(") Z ")
        && String::from_utf8_lossy(&cmdline)
            .replace('\0', " ")
            .contains(needle)
}

/// Kills a process left behind by a failed test, so that it does not outlive the run.
struct KillOnDrop(Vec<u32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for pid in &self.0 {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
    }
}

/// A minion SIGKILLed while `cmd.run` runs a shell with a `sleep` under it: both die with
/// the minion, the CLI returns within its timeout, and the minion is reported as Salt
/// reports a minion whose connection is gone.
#[test]
fn a_minion_killed_mid_job_takes_its_commands_with_it() {
    let master = Master::start("auto_accept: true");
    let mut minion = master.minion("ck1", "");
    master.wait_for("ck1");
    let pids = master.dir.0.join("ck1.pids");
    // The shell writes its own pid and its child's, once both run; 41 s tells this sleep
    // apart from any other.
    let cmd = format!(
        "sleep 41 & echo $$ $! > {0}.tmp; mv {0}.tmp {0}; wait",
        pids.display()
    );
    let started = std::time::Instant::now();
    let (out, shell, sleep) = std::thread::scope(|s| {
        let cli = s.spawn(|| {
            master.saltq(&[
                "-L",
                "ck1",
                "cmd.run",
                &cmd,
                "python_shell=True",
                "-t",
                "8",
                "--gather-job-timeout",
                "2",
            ])
        });
        let (shell, sleep) = eventually("the job's pids", Duration::from_secs(15), || {
            let text = std::fs::read_to_string(&pids).ok()?;
            let mut it = text.split_whitespace().map(|p| p.parse::<u32>().ok());
            Some((it.next()??, it.next()??))
        });
        let _guard = KillOnDrop(vec![shell, sleep]);
        assert!(running(sleep, "sleep 41"), "the sleep {sleep} runs");
        minion.kill();
        // The kernel reparents and reaps them; a moment is enough, 10 s is generous.
        let gone = std::panic::catch_unwind(|| {
            eventually(
                "the job's shell and sleep die with the minion",
                Duration::from_secs(10),
                || (!running(shell, "sh") && !running(sleep, "sleep 41")).then_some(()),
            )
        });
        let out = cli.join().expect("cli thread");
        if let Err(e) = gone {
            std::panic::resume_unwind(e);
        }
        (out, shell, sleep)
    });
    // Bounded by -t 8 plus one find_job round, not by the 41 s sleep.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the CLI returned after {:?}",
        started.elapsed()
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stdout, "ck1:\n    Minion did not return. [Not connected]\n",
        "{out:?} (shell {shell}, sleep {sleep})"
    );
}

/// Publishes `saltq ARGS --async` with the CLI config in `cli`: the jid, or what failed.
fn publish_async(cli: &Path, args: &[&str]) -> Result<String, String> {
    let o = Command::new(bin("saltq"))
        .arg("-c")
        .arg(cli)
        .args(args)
        .arg("--async")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let out = String::from_utf8_lossy(&o.stdout);
    match out.trim().rsplit(' ').next() {
        Some(jid) if o.status.success() && jid.len() == 20 => Ok(jid.to_owned()),
        _ => Err(format!(
            "{}: {out}{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        )),
    }
}

/// `line` without terminal colour sequences (the log may be coloured).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // ESC [ parameters, ended by a letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// How many returns (jid, minion) of `jids` the master stored in a later life than the one
/// that published the job, per its log (each start logs "master listening"): returns that
/// were in flight while it was down and were re-sent.
fn returns_across_restarts(log: &Path, jids: &BTreeSet<&String>) -> usize {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut life = 0;
    let mut published = BTreeMap::new();
    let mut crossed = 0;
    for line in text.lines() {
        let line = strip_ansi(line);
        if line.contains("master listening") {
            life += 1;
        }
        let Some(tag) = line.split("event tag=salt/job/").nth(1) else {
            continue;
        };
        let mut parts = tag.split('/');
        let (Some(jid), Some(kind)) = (parts.next(), parts.next()) else {
            continue;
        };
        if !jids.contains(&jid.to_owned()) {
            continue;
        }
        match kind {
            "new" => {
                published.insert(jid.to_owned(), life);
            }
            "ret" if published.get(jid).is_some_and(|p| *p < life) => crossed += 1,
            _ => {}
        }
    }
    crossed
}

/// The master SIGKILLed and started again 3 times while jobs run on 24 minion processes:
/// every job a minion ran has its return stored exactly once per minion that ran it (the
/// minions re-send what the dead master never acknowledged), every acknowledged publish is
/// in the cache once, and no minion ran a job twice.
#[test]
fn master_killed_repeatedly_loses_no_return() {
    const MINIONS: usize = 24;
    const KILLS: usize = 3;
    let marks = Marks::new("mk");
    let mut master = Master::start("auto_accept: true");
    let minions: Vec<_> = (0..MINIONS)
        .map(|i| {
            let id = format!("km{i:02}");
            master.minion_launched(&id, "", marks.launch(&id))
        })
        .collect();
    eventually("all 24 minions answer", Duration::from_secs(90), || {
        let o = master.saltq(&["km*", "test.ping", "--out", "json", "--static", "-t", "3"]);
        (o.code == 0 && o.json().as_object().map(|m| m.len()) == Some(MINIONS)).then_some(())
    });

    let cli = master.cli_dir();
    let acked = Mutex::new(Vec::new());
    let publishes = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let publisher = s.spawn(|| {
            let mut failed = 0;
            // Bounded: the killer stops it long before.
            for k in 0..300 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let cmd = marks.command(k, "1");
                match publish_async(&cli, &["km*", "cmd.run", &cmd, "python_shell=True"]) {
                    Ok(jid) => {
                        acked.lock().unwrap().push((k, jid));
                        publishes.fetch_add(1, Ordering::SeqCst);
                    }
                    // While the master is down.
                    Err(_) => failed += 1,
                }
                std::thread::sleep(Duration::from_millis(150));
            }
            failed
        });
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for _ in 0..KILLS {
                // Kill right after a publish is acknowledged: its minions are running it,
                // and their returns come while the master is down.
                let seen = publishes.load(Ordering::SeqCst);
                eventually(
                    "a job published since the last start",
                    Duration::from_secs(30),
                    || (publishes.load(Ordering::SeqCst) > seen + 1).then_some(()),
                );
                master.kill();
                std::thread::sleep(Duration::from_millis(500));
                master.relaunch();
            }
            let seen = publishes.load(Ordering::SeqCst);
            eventually(
                "jobs published after the last start",
                Duration::from_secs(30),
                || (publishes.load(Ordering::SeqCst) > seen + 1).then_some(()),
            );
        }));
        stop.store(true, Ordering::Relaxed);
        let failed = publisher.join().expect("publisher");
        if let Err(e) = result {
            std::panic::resume_unwind(e);
        }
        eprintln!(
            "{} publishes acknowledged, {failed} failed while the master was down",
            acked.lock().unwrap().len()
        );
    });
    // Jobs take a second after their mark: let the last ones leave theirs.
    std::thread::sleep(Duration::from_secs(2));
    let acked = acked.into_inner().unwrap();
    let ran = check_no_return_lost(&master, &marks, &acked, Duration::from_secs(60));
    let returns: usize = ran.values().map(BTreeSet::len).sum();
    let crossed = returns_across_restarts(&master.log(), &ran.keys().collect());
    eprintln!(
        "{} jobs ran, {returns} returns stored, {crossed} of them re-sent across a restart",
        ran.len()
    );
    // Not vacuous: every minion ran jobs, and returns did cross the kills.
    let took_part: BTreeSet<&String> = ran.values().flatten().collect();
    assert_eq!(took_part.len(), MINIONS, "{ran:?}");
    assert!(crossed > 0, "no return was in flight during a kill");
    drop(minions);
}

/// PostgreSQL, the master's job cache, stopped as a crash (`pg_ctl -m immediate`) twice
/// while jobs run on 3 minions, and started again: publishing meanwhile fails naming the job
/// cache, the returns of the jobs that end meanwhile are not acknowledged (the minions keep
/// them), and every one is stored once the database is back. A private PostgreSQL server,
/// so the shared one is not disturbed.
#[test]
fn a_job_cache_crash_loses_no_return() {
    const MINIONS: usize = 3;
    let Some(pg) = PrivatePostgres::start() else {
        eprintln!(
            "skipped: cannot run a private PostgreSQL (needs /usr/lib/postgresql/*/bin and a \
             postgres user)"
        );
        return;
    };
    let marks = Marks::new("pg");
    let master = Master::start(&format!(
        "auto_accept: true\njob_cache: postgres\njob_cache_postgres: '{}'\n",
        pg.url()
    ));
    let minions: Vec<_> = (0..MINIONS)
        .map(|i| {
            let id = format!("pgm{i}");
            master.minion_launched(&id, "", marks.launch(&id))
        })
        .collect();
    eventually("the minions answer", Duration::from_secs(60), || {
        let o = master.saltq(&["pgm*", "test.ping", "--out", "json", "--static", "-t", "3"]);
        (o.code == 0 && o.json().as_object().map(|m| m.len()) == Some(MINIONS)).then_some(())
    });
    let cli = master.cli_dir();
    let mut acked = Vec::new();
    let mut k = 0;
    for _ in 0..2 {
        // Two jobs still running when the database goes away.
        for _ in 0..2 {
            let cmd = marks.command(k, "2");
            let jid = publish_async(&cli, &["pgm*", "cmd.run", &cmd, "python_shell=True"])
                .unwrap_or_else(|e| panic!("publish job {k}: {e}"));
            acked.push((k, jid));
            k += 1;
        }
        assert!(pg.down("immediate"), "pg_ctl stop -m immediate");
        // No job is published whose load cannot be stored.
        let cmd = marks.command(k, "0");
        let o = master.saltq(&["pgm*", "cmd.run", &cmd, "python_shell=True", "--async"]);
        assert_eq!(o.code, 69, "{o:?}");
        assert!(
            o.stderr.contains("job cache is unavailable")
                && o.stderr.contains("no job was published"),
            "{o:?}"
        );
        k += 1;
        // The running jobs end meanwhile; their returns wait on the minions.
        std::thread::sleep(Duration::from_secs(3));
        assert!(pg.up(), "pg_ctl start");
    }
    let ran = check_no_return_lost(&master, &marks, &acked, Duration::from_secs(60));
    assert_eq!(
        ran.len(),
        acked.len(),
        "every acknowledged job ran: {ran:?}"
    );
    assert!(ran.values().all(|ids| ids.len() == MINIONS), "{ran:?}");
    // Not vacuous: the master did refuse returns while the database was down.
    let refused = minions
        .iter()
        .filter(|m| {
            std::fs::read_to_string(m.log())
                .unwrap_or_default()
                .contains("return not acknowledged")
        })
        .count();
    assert!(
        refused > 0,
        "no return was refused while the database was down"
    );
    // And publishing works again.
    let o = master.saltq(&["pgm*", "test.ping", "--out", "json", "--static", "-t", "5"]);
    assert_eq!(
        o.json().as_object().map(|m| m.len()),
        Some(MINIONS),
        "{o:?}"
    );
}

/// Runs `ip ARGS`; the error is its stderr.
fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

static NETNS_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A network namespace of the test's own, joined to the host by a veth pair with private
/// addresses picked per run (10.A.B.1/30 on the host's end, .2 in the namespace). The
/// namespace and the pair are removed on drop, also when the test fails.
struct NetNs {
    name: String,
    host_if: String,
    ns_if: String,
    host_ip: String,
}

impl NetNs {
    /// Creates the namespace and the link, or says why it cannot here (`None`).
    fn create() -> Option<NetNs> {
        let n = NETNS_COUNTER.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let tag = format!("{}{n}", pid % 100_000);
        let net = NetNs {
            name: format!("saltq-chaos-{pid}-{n}"),
            host_if: format!("sqc{tag}h"),
            ns_if: format!("sqc{tag}m"),
            host_ip: String::new(),
        };
        if let Err(e) = ip(&["netns", "add", &net.name]) {
            eprintln!("skipped: cannot create a network namespace here ({e})");
            return None;
        }
        // From here on, dropping `net` removes what was made.
        let mut net = net;
        let taken = Command::new("ip")
            .args(["-o", "-4", "addr", "show"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let a = 16 + pid % 200;
        let prefix = (0..64u32)
            .map(|i| format!("10.{a}.{}.", (pid / 200 + n as u32 * 7 + i * 13) % 256))
            .find(|p| !taken.contains(&format!("inet {p}")))?;
        net.host_ip = format!("{prefix}1");
        let (host_cidr, ns_cidr) = (format!("{prefix}1/30"), format!("{prefix}2/30"));
        let setup = [
            vec![
                "link",
                "add",
                &net.host_if,
                "type",
                "veth",
                "peer",
                "name",
                &net.ns_if,
            ],
            vec!["link", "set", &net.ns_if, "netns", &net.name],
            vec!["addr", "add", &host_cidr, "dev", &net.host_if],
            vec!["link", "set", &net.host_if, "up"],
            vec!["-n", &net.name, "addr", "add", &ns_cidr, "dev", &net.ns_if],
            vec!["-n", &net.name, "link", "set", &net.ns_if, "up"],
            vec!["-n", &net.name, "link", "set", "lo", "up"],
        ];
        for args in &setup {
            if let Err(e) = ip(args) {
                eprintln!("skipped: cannot set up the test's veth pair ({e})");
                return None;
            }
        }
        Some(net)
    }

    /// How to start a process inside the namespace.
    fn launch(&self) -> Launch {
        Launch {
            prefix: ["ip", "netns", "exec", &self.name]
                .map(str::to_owned)
                .to_vec(),
            ..Launch::default()
        }
    }

    /// Takes the host's end of the link down (a partition) or up again.
    fn set_link(&self, up: bool) {
        let state = if up { "up" } else { "down" };
        ip(&["link", "set", &self.host_if, state]).expect("set the veth link");
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        // Deleting the namespace deletes its end of the pair, and with it the host's end.
        let _ = ip(&["netns", "del", &self.name]);
        let _ = ip(&["link", "del", &self.host_if]);
    }
}

/// A minion in a network namespace of its own, cut off from the master (the link down) for
/// longer than the QUIC idle timeout while a job runs: the master reports it `Not
/// connected` meanwhile; once the link is back it reconnects, answers again, and the return
/// of the job it ran while cut off is stored.
#[test]
fn a_partitioned_minion_comes_back_with_its_return() {
    let Some(net) = NetNs::create() else { return };
    let master = Master::start(&format!("auto_accept: true\ninterface: {}\n", net.host_ip));
    let minion = Minion::start_launched(
        &format!("master: {}\nmaster_port: {}", net.host_ip, master.port),
        "pn1",
        "",
        net.launch(),
    );
    master.wait_for("pn1");
    let jid = publish_async(
        &master.cli_dir(),
        &[
            "pn1",
            "cmd.run",
            "sleep 2; echo across",
            "python_shell=True",
        ],
    )
    .expect("publish");
    net.set_link(false);
    // The idle timeout here is 3 s: the master drops the silent minion.
    eventually(
        "the master reports pn1 not connected",
        Duration::from_secs(20),
        || {
            let o = master.saltq(&["pn1", "test.ping", "-t", "1"]);
            (o.stdout == "pn1:\n    Minion did not return. [Not connected]\n").then_some(())
        },
    );
    // And the minion has given up the old connection too.
    std::thread::sleep(Duration::from_secs(2));
    net.set_link(true);
    master.wait_for("pn1");
    eventually(
        "the return of the job run while cut off",
        Duration::from_secs(30),
        || {
            let o = master.saltq(&["jobs", "lookup", &jid, "--out", "json"]);
            (o.code == 0 && o.json() == json!({"pn1": "across"})).then_some(())
        },
    );
    // It went through the veth, and came back by a new connection.
    let log = std::fs::read_to_string(minion.log()).expect("minion log");
    let log: String = log.lines().map(strip_ansi).collect::<Vec<_>>().join("\n");
    let dialled = format!("connected to master {}:{}", net.host_ip, master.port);
    assert!(log.matches(&dialled).count() >= 2, "{log}");
    assert!(log.contains("lost the master"), "{log}");
}

/// A small xorshift generator: the relay's coin for dropping a datagram.
struct Coin(u64);

impl Coin {
    fn new(salt: u64) -> Coin {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        Coin((nanos ^ salt.rotate_left(32) ^ u64::from(std::process::id())) | 1)
    }

    /// True with probability `p`.
    fn flip(&mut self, p: f64) -> bool {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// A lossy, slow link on loopback: a UDP relay between one client (a minion) and a server
/// (the master) that drops a share of the datagrams each way and holds the others for a
/// fixed delay. Used where the kernel has no `sch_netem` for `tc`. Its threads stop on drop.
struct LossyLink {
    /// Where the client sends to.
    port: u16,
    /// Datagrams dropped, per direction (to the server, to the client).
    dropped: std::sync::Arc<[AtomicUsize; 2]>,
    stop: std::sync::Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl LossyLink {
    fn start(server: std::net::SocketAddr, loss: f64, delay: Duration) -> LossyLink {
        use std::net::{SocketAddr, UdpSocket};
        use std::sync::{Arc, mpsc};
        let front = Arc::new(UdpSocket::bind("127.0.0.1:0").expect("bind relay"));
        let back = Arc::new(UdpSocket::bind("127.0.0.1:0").expect("bind relay"));
        back.connect(server).expect("relay to the server");
        for s in [&front, &back] {
            s.set_read_timeout(Some(Duration::from_millis(100)))
                .expect("read timeout");
        }
        let port = front.local_addr().expect("relay address").port();
        let client: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
        let dropped: Arc<[AtomicUsize; 2]> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for dir in 0..2 {
            let (tx, rx) = mpsc::channel::<(std::time::Instant, Vec<u8>)>();
            let (from, to) = if dir == 0 {
                (front.clone(), back.clone())
            } else {
                (back.clone(), front.clone())
            };
            let (client_in, client_out) = (client.clone(), client.clone());
            let (dropped, stop) = (dropped.clone(), stop.clone());
            // Receives, drops some, and queues the rest with their due time; its sender
            // goes with it, which ends the forwarding thread.
            threads.push(std::thread::spawn(move || {
                let mut coin = Coin::new(dir as u64 + 1);
                let mut buf = vec![0u8; 65_536];
                while !stop.load(Ordering::Relaxed) {
                    let Ok((n, src)) = from.recv_from(&mut buf) else {
                        continue;
                    };
                    if dir == 0 {
                        *client_in.lock().unwrap() = Some(src);
                    }
                    if coin.flip(loss) {
                        dropped[dir].fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let due = std::time::Instant::now() + delay;
                    if tx.send((due, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }));
            // Forwards each datagram at its due time (one delay for all keeps their order).
            threads.push(std::thread::spawn(move || {
                for (due, data) in rx {
                    std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
                    if dir == 0 {
                        let _ = to.send(&data);
                    } else if let Some(c) = *client_out.lock().unwrap() {
                        let _ = to.send_to(&data, c);
                    }
                }
            }));
        }
        LossyLink {
            port,
            dropped,
            stop,
            threads,
        }
    }

    /// Datagrams dropped so far, both ways.
    fn dropped(&self) -> [usize; 2] {
        [0, 1].map(|d| self.dropped[d].load(Ordering::Relaxed))
    }
}

impl Drop for LossyLink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Whether `tc` can put netem (loss and delay) on `dev` in namespace `ns` (`None` for the
/// host); the kernel may lack `sch_netem`.
fn netem(ns: Option<&str>, dev: &str, loss: u32, delay_ms: u32) -> Result<(), String> {
    let mut args: Vec<String> = Vec::new();
    if let Some(ns) = ns {
        args.extend(["-n".into(), ns.into()]);
    }
    args.extend(["qdisc", "add", "dev", dev, "root", "netem", "delay"].map(str::to_owned));
    args.extend([format!("{delay_ms}ms"), "loss".into(), format!("{loss}%")]);
    let o = Command::new("tc")
        .args(&args)
        .output()
        .map_err(|e| format!("tc: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).trim().to_owned())
    }
}

/// Jobs over a link that loses 15 % of the datagrams each way and delays the rest by 50 ms:
/// every job returns, a 300 KB return included. With `tc netem` on a veth pair into a
/// namespace of the test's own where the kernel has netem; otherwise (this kernel has no
/// `sch_netem`, nor `tc` actions to drop with) through a lossy UDP relay on loopback.
#[test]
fn every_job_returns_over_a_lossy_slow_link() {
    const LOSS: u32 = 15;
    const DELAY_MS: u32 = 50;
    const MINIONS: usize = 2;
    // The namespace and its netem, where the kernel allows.
    let net = NetNs::create().and_then(|net| {
        let both = netem(Some(&net.name), &net.ns_if, LOSS, DELAY_MS)
            .and_then(|()| netem(None, &net.host_if, LOSS, DELAY_MS));
        match both {
            Ok(()) => Some(net),
            Err(e) => {
                eprintln!("no netem here ({e}): the loss and delay come from a UDP relay");
                None
            }
        }
    });
    let interface = net.as_ref().map_or("127.0.0.1", |n| n.host_ip.as_str());
    let master = Master::start(&format!("auto_accept: true\ninterface: {interface}\n"));
    let server: std::net::SocketAddr = format!("{interface}:{}", master.port)
        .parse()
        .expect("master address");
    let mut links = Vec::new();
    let minions: Vec<Minion> = (0..MINIONS)
        .map(|i| {
            let id = format!("ln{i}");
            match &net {
                Some(net) => Minion::start_launched(
                    &format!("master: {}\nmaster_port: {}", net.host_ip, master.port),
                    &id,
                    "",
                    net.launch(),
                ),
                None => {
                    let link = LossyLink::start(
                        server,
                        f64::from(LOSS) / 100.0,
                        Duration::from_millis(DELAY_MS.into()),
                    );
                    let m = Minion::start_at(
                        &format!("master: 127.0.0.1\nmaster_port: {}", link.port),
                        &id,
                        "",
                    );
                    links.push(link);
                    m
                }
            }
        })
        .collect();
    eventually("the minions answer", Duration::from_secs(60), || {
        let o = master.saltq(&["ln*", "test.ping", "--out", "json", "--static", "-t", "5"]);
        (o.code == 0 && o.json().as_object().map(|m| m.len()) == Some(MINIONS)).then_some(())
    });
    for k in 0..6 {
        let word = format!("lossy-{k}");
        let o = master.saltq(&[
            "ln*",
            "test.echo",
            &word,
            "--out",
            "json",
            "--static",
            "-t",
            "30",
        ]);
        assert_eq!(
            o.json(),
            json!({"ln0": word, "ln1": word}),
            "job {k}: {o:?}"
        );
    }
    let o = master.saltq(&[
        "ln*",
        "cmd.run",
        "head -c 300000 /dev/zero | tr '\\0' a",
        "python_shell=True",
        "--out",
        "json",
        "--static",
        "-t",
        "60",
    ]);
    let v = o.json();
    for m in &minions {
        assert_eq!(
            v[&m.id].as_str().map(str::len),
            Some(300_000),
            "{}'s big return",
            m.id
        );
    }
    if !links.is_empty() {
        let dropped: Vec<[usize; 2]> = links.iter().map(LossyLink::dropped).collect();
        eprintln!("datagrams dropped (to the master, to the minion): {dropped:?}");
        // Not vacuous: the link did lose datagrams both ways.
        assert!(dropped.iter().all(|d| d[0] > 0 && d[1] > 0), "{dropped:?}");
    }
}
