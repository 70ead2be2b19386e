//! Alcali (PyPI `alcali`, a web UI for Salt written by others) against a real saltq master
//! and minion: Alcali reads Salt's job cache tables in MariaDB (the database of Alcali's own
//! docker-compose and CI, and the first its docs name), which saltq fills
//! (`master_job_cache: mysql`, `event_return: mysql`), and calls saltq's salt-api with pepper.
//! Headless Chromium logs in through Alcali's login page, runs `test.ping` from its run page and
//! sees the result, then finds the job on Alcali's jobs page; the database is checked to hold
//! the job's load (with the eauth user), its return and its events as Salt writes them. Then it
//! refreshes Alcali's key list (its keys page) and its schedules page (the minion's `schedule`
//! job listed, from `schedule.list`), and clicks Settings → "Parse modules from"
//! (Alcali's "initialize database": `sys.list_functions`, `sys.doc`,
//! `sys.list_runner_functions` and `sys.runner_doc` on the minion, the `doc.wheel` runner),
//! and the functions land in Alcali's `salt_functions` table.
//!
//! Alcali is set up as its docs say: a database of its own (created here and dropped after),
//! `alcali migrate`, `alcali createsuperuser`, its user's token from `alcali manage_token`,
//! and gunicorn with the settings of Alcali's own gunicorn config. Alcali logs in to salt-api
//! as its user with that token as the password, with `SALT_AUTH=rest`: the master's
//! `external_auth: rest: ^url` is Alcali's own `/api/token/verify/`, which answers 200 and `[]`
//! for a user's token, and the user's permissions are the config's entry for them, as in
//! Alcali's docs.
//!
//! Needs `SALTQ_TEST_ALCALI` (a venv with `alcali` and `mysqlclient`), `SALTQ_TEST_CHROMIUM`
//! (the browser) and `SALTQ_TEST_MYSQL` (`mysql://user[:password]@host[:port]/db` of a server
//! where that user may create databases); `.ci/run` provides them. Without them the test is
//! skipped with a message, and fails under CI (`SALTQ_CI=1`). Screenshots are kept in
//! `target/test-artifacts/alcali/`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use saltq_tests::{Master, eventually, free_port};
use serde_json::Value;

/// Alcali's user in the test (not `admin`, the name of the CLI's certificate, whose jobs are
/// in the same tables).
const USER: &str = "alcali-user";
/// Its password on Alcali's login page.
const PASSWORD: &str = "alcali-e2e-pw";
/// The minion Alcali runs test.ping on.
const MINION: &str = "alcali-m1";
/// A job of the minion's schedule, which Alcali's schedules page lists (twice a day, so it does
/// not run during the test).
const SCHEDULE: &str = "alcali_highstate";

/// The tools the test needs, or why it cannot run.
struct Tools {
    venv: PathBuf,
    chromium: PathBuf,
    db: Db,
}

/// Where the MariaDB/MySQL server is, from `SALTQ_TEST_MYSQL`.
struct Db {
    host: String,
    port: u16,
    user: String,
    pass: String,
}

impl Db {
    /// Reads `mysql://user[:password]@host[:port][/db]`.
    fn parse(url: &str) -> Result<Db, String> {
        let rest = url
            .strip_prefix("mysql://")
            .ok_or_else(|| format!("SALTQ_TEST_MYSQL {url:?} does not start with mysql://"))?;
        let rest = rest.split('/').next().unwrap_or_default();
        let (cred, addr) = rest
            .rsplit_once('@')
            .ok_or_else(|| format!("SALTQ_TEST_MYSQL {url:?} has no user@"))?;
        let (user, pass) = cred.split_once(':').unwrap_or((cred, ""));
        let (host, port) = match addr.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse()
                    .map_err(|_| format!("SALTQ_TEST_MYSQL {url:?}: bad port {p:?}"))?,
            ),
            None => (addr, 3306),
        };
        Ok(Db {
            host: host.to_owned(),
            port,
            user: user.to_owned(),
            pass: pass.to_owned(),
        })
    }
}

fn tools() -> Result<Tools, String> {
    let var = |name: &str, what: &str| match std::env::var(name) {
        Ok(v) if !v.is_empty() => Ok(v),
        _ => Err(format!("{name} is not set ({what})")),
    };
    let venv = PathBuf::from(var(
        "SALTQ_TEST_ALCALI",
        "a venv with alcali and mysqlclient",
    )?);
    if !venv.join("bin/alcali").exists() {
        return Err(format!("{} has no bin/alcali", venv.display()));
    }
    let chromium = PathBuf::from(var("SALTQ_TEST_CHROMIUM", "the chromium binary")?);
    let db = Db::parse(&var("SALTQ_TEST_MYSQL", "mysql://user@host:port/db")?)?;
    Ok(Tools { venv, chromium, db })
}

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/data/alcali")
}

/// `target/test-artifacts/alcali`, beside the binaries under test.
fn artifacts() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test> -> target
    let target = exe.ancestors().nth(3).expect("target dir");
    target.join("test-artifacts/alcali")
}

/// Alcali's settings, all from the environment as its docs describe (`DB_BACKEND` set means
/// no `.env` file is read).
fn alcali_env(t: &Tools, db_name: &str, salt_url: &str) -> Vec<(String, String)> {
    [
        ("DB_BACKEND", "mysql"),
        ("DB_NAME", db_name),
        ("DB_USER", &t.db.user),
        ("DB_PASS", &t.db.pass),
        ("DB_HOST", &t.db.host),
        ("DB_PORT", &t.db.port.to_string()),
        ("SECRET_KEY", &format!("saltq-e2e-{}", std::process::id())),
        ("ALLOWED_HOSTS", "127.0.0.1"),
        ("SALT_URL", salt_url),
        ("SALT_AUTH", "rest"),
        ("MASTER_MINION_ID", ""),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// Runs a program of Alcali's venv with Alcali's environment; its stdout, or a panic with
/// everything it printed.
fn run(t: &Tools, env: &[(String, String)], program: &str, args: &[&str]) -> String {
    let out = Command::new(t.venv.join("bin").join(program))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{program} {args:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The test's database: created at start, dropped at the end whatever happens.
struct Database<'a> {
    tools: &'a Tools,
    env: Vec<(String, String)>,
}

impl<'a> Database<'a> {
    fn create(tools: &'a Tools, env: Vec<(String, String)>) -> Database<'a> {
        let db = Database { tools, env };
        db.script(&["create"]);
        db
    }

    fn script(&self, args: &[&str]) -> String {
        let script = data().join("db.py");
        let mut all = vec![script.to_str().expect("utf-8 path")];
        all.extend_from_slice(args);
        run(self.tools, &self.env, "python", &all)
    }
}

impl Drop for Database<'_> {
    fn drop(&mut self) {
        let script = data().join("db.py");
        let _ = Command::new(self.tools.venv.join("bin/python"))
            .arg(script)
            .arg("drop")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .status();
    }
}

/// A child process stopped when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The status of `GET /` on a plain HTTP server, if it answers.
fn http_status(addr: &str) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 64];
    let n = s.read(&mut head).ok()?;
    std::str::from_utf8(&head[..n])
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

#[test]
fn alcali_logs_in_runs_test_ping_and_lists_the_job() {
    let t = match tools() {
        Ok(t) => t,
        Err(why) => {
            assert!(
                std::env::var("SALTQ_CI").is_err(),
                "{why}: under CI .ci/run must provide Alcali, Chromium and MariaDB"
            );
            eprintln!("skipped: {why}");
            return;
        }
    };
    let db_name = format!("saltq_alcali_{}", std::process::id());

    // Alcali's database and user, as its docs say; the user's token is its salt-api password.
    let setup_env = alcali_env(&t, &db_name, "");
    let db = Database::create(&t, setup_env.clone());
    run(&t, &setup_env, "alcali", &["migrate", "--noinput"]);
    let mut with_password = setup_env.clone();
    with_password.push(("DJANGO_SUPERUSER_PASSWORD".into(), PASSWORD.into()));
    run(
        &t,
        &with_password,
        "alcali",
        &[
            "createsuperuser",
            "--noinput",
            "--username",
            USER,
            "--email",
            "admin@example.com",
        ],
    );
    let out = run(&t, &setup_env, "alcali", &["manage_token", USER]);
    let token = out
        .lines()
        .find_map(|l| l.strip_prefix(&format!("user {USER}'s token: ")))
        .unwrap_or_else(|| panic!("no token in `alcali manage_token {USER}`: {out}"))
        .trim()
        .to_owned();

    // saltq: salt-api with the `rest` eauth asking Alcali (on the port it is started on below),
    // with the entry of Alcali's docs for its user; Salt's job cache tables in Alcali's database.
    let addr = format!("127.0.0.1:{}", free_port());
    let master = Master::start_with(|_dir| {
        format!(
            "auto_accept: true\n\
             external_auth:\n  rest:\n    ^url: http://{addr}/api/token/verify/\n    {USER}: ['.*', '@runner', '@wheel']\n\
             netapi_enable_clients: [local, local_async, runner, runner_async, wheel, wheel_async]\n\
             rest_cherrypy: {{port: 0, host: 127.0.0.1}}\n\
             master_job_cache: mysql\n\
             event_return: mysql\n\
             mysql.host: {}\nmysql.port: {}\nmysql.user: {}\nmysql.pass: '{}'\nmysql.db: {db_name}\n",
            t.db.host, t.db.port, t.db.user, t.db.pass,
        )
    });
    let _minion = master.minion(
        MINION,
        &format!(
            "schedule:\n  {SCHEDULE}:\n    function: state.apply\n    hours: 12\n    splay: 600\n"
        ),
    );
    master.wait_for(MINION);
    let listen: Value = serde_json::from_str(
        &std::fs::read_to_string(master.dir.0.join("root/var/cache/saltq/master/listen.json"))
            .expect("listen.json"),
    )
    .expect("listen.json is JSON");
    let api = listen["rest_cherrypy"].as_str().expect("salt-api address");

    // Alcali under gunicorn, with the worker settings of Alcali's own gunicorn config (threads,
    // so its event stream does not hold a worker others wait for).
    let env = alcali_env(&t, &db_name, &format!("https://{api}"));
    let location = run(&t, &env, "alcali", &["location"]);
    let location = location
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_owned();
    let log_path = master.dir.0.join("alcali.log");
    let log = std::fs::File::create(&log_path).expect("alcali log");
    let _alcali = Running(
        Command::new(t.venv.join("bin/gunicorn"))
            .args(["config.wsgi:application", "-b", &addr])
            .args(["-w", "3", "--threads", "4", "--timeout", "90"])
            .args(["--chdir", &location])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start gunicorn"),
    );
    eventually(
        &format!("Alcali answers on {addr} (log: {})", log_path.display()),
        Duration::from_secs(60),
        || (http_status(&addr) == Some(200)).then_some(()),
    );

    // The rest eauth, straight: Alcali vouches for its user's token and for nothing else.
    let raw = crate::saltapi::Api::new(&master, true);
    let login = |password: &str| {
        raw.json(
            "POST",
            "/login",
            None,
            &serde_json::json!({"username": USER, "password": password, "eauth": "rest"}),
        )
    };
    let ok = login(&token);
    assert_eq!(ok.status, 200, "{ok:?}");
    assert_eq!(
        ok.json()["return"][0]["perms"],
        serde_json::json!([".*", "@runner", "@wheel"]),
        "{ok:?}"
    );
    let refused = login("not-the-token");
    assert_eq!(refused.status, 401, "{refused:?}");

    // The browser: login page, run page, jobs page.
    let shots = artifacts();
    let out = Command::new(t.venv.join("bin/python"))
        .arg(data().join("browse.py"))
        .arg(&t.chromium)
        .arg(format!("http://{addr}"))
        .args([USER, PASSWORD, MINION])
        .arg(&shots)
        .arg(SCHEDULE)
        .output()
        .expect("run browse.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the walk through Alcali failed ({}):\n{}\n--- alcali log ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        tail(&log_path)
    );
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("browse.py printed no JSON ({e}): {stdout}"));
    println!("browse.py: {}", seen["steps"]);
    for shot in seen["screenshots"].as_array().expect("screenshots") {
        println!("screenshot: {}", shot.as_str().unwrap_or_default());
    }
    // The schedules page: the minion's job, with its function and timing, from
    // `schedule.list` through salt-api.
    let schedules = seen["schedules"].as_array().expect("schedules rows");
    assert_eq!(schedules.len(), 1, "one row for {SCHEDULE}: {schedules:?}");
    let row = schedules[0].as_str().unwrap_or_default();
    for cell in [MINION, SCHEDULE, "state.apply", "12", "600"] {
        assert!(
            row.split_whitespace().any(|w| w == cell),
            "{cell} in the schedules row {row:?}"
        );
    }
    let initdb = seen["initdb"].as_str().expect("initialize database text");
    assert_eq!(
        initdb,
        format!("refreshed modules using {MINION}"),
        "Alcali's answer to Parse modules"
    );
    let ran = seen["run"].as_str().expect("run text");
    assert!(
        ran.contains(&format!("{MINION}:")) && ran.contains("True"),
        "the run page's result: {ran:?}"
    );

    // The jobs page lists that one job of Alcali's user, with the eauth user saltq recorded.
    let jobs = seen["jobs"].as_array().expect("jobs rows");
    assert_eq!(jobs.len(), 1, "one test.ping job of {USER}: {jobs:?}");
    let row_text = jobs[0].as_str().unwrap_or_default();
    let jid = row_text
        .split_whitespace()
        .find(|w| w.len() == 20 && w.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no jid in the jobs row {row_text:?}"))
        .to_owned();

    // Salt's tables, as saltq filled them (events arrive through their own queue).
    let row: Value = eventually(
        &format!("job {jid}'s load, return and events in the database"),
        Duration::from_secs(20),
        || {
            let row: Value =
                serde_json::from_str(&db.script(&["job", &jid])).expect("db.py prints JSON");
            let events = row["events"].as_array().map_or(0, Vec::len);
            (events >= 2).then_some(row)
        },
    );
    // What "initialize database" stored: the minion's functions, the runners and the wheel
    // functions, each with its doc.
    let functions: Value =
        serde_json::from_str(&db.script(&["functions"])).expect("db.py prints JSON");
    for (kind, name) in [
        ("local", "test.ping"),
        ("local", "sys.runner_doc"),
        ("runner", "jobs.lookup_jid"),
        ("runner", "doc.wheel"),
        ("wheel", "key.list_all"),
    ] {
        let doc = functions[kind][name].as_str().unwrap_or_default();
        assert!(
            !doc.trim().is_empty(),
            "{kind} function {name} with its doc in salt_functions: {}",
            functions[kind]
        );
    }
    let load = &row["load"];
    assert_eq!(load["fun"], "test.ping", "jids.load of {jid}: {row}");
    assert_eq!(load["tgt"], MINION, "jids.load of {jid}: {row}");
    assert_eq!(load["user"], USER, "jids.load of {jid}: {row}");
    let returns = row["returns"].as_array().expect("returns");
    assert_eq!(returns.len(), 1, "salt_returns of {jid}: {row}");
    assert_eq!(returns[0]["id"], MINION, "{row}");
    assert_eq!(returns[0]["fun"], "test.ping", "{row}");
    assert_eq!(returns[0]["full_ret"]["return"], true, "{row}");
    let events: Vec<&str> = row["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for tag in [
        format!("salt/job/{jid}/new"),
        format!("salt/job/{jid}/ret/{MINION}"),
    ] {
        assert!(
            events.contains(&tag.as_str()),
            "{tag} in salt_events: {events:?}"
        );
    }
}
