//! Test helpers: the gate on each server's environment variable, a database of its own per
//! test (dropped afterwards), unique names, a cuttable TCP proxy and `eventually!`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinHandle;

/// libpq connection string of a PostgreSQL server whose user may create databases.
pub const POSTGRES_ENV: &str = "SALTQ_TEST_POSTGRES";
/// `mysql://user[:pass]@host:port/db` of a MySQL or MariaDB server whose user may create databases.
pub const MYSQL_ENV: &str = "SALTQ_TEST_MYSQL";
/// `redis://host:port/` of a Redis server.
pub const REDIS_ENV: &str = "SALTQ_TEST_REDIS";

/// The variable's value, or None after saying the test is skipped and why.
pub fn gate(var: &str, test: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Some(v),
        _ => {
            eprintln!(
                "skipped {test}: {var} is not set (scripts/test and .ci/run set it when the server answers)"
            );
            None
        }
    }
}

/// A name no other test or run uses: `prefix_<pid>_<n>_<nanos>`.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!(
        "{prefix}_{}_{}_{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A 20-digit jid no other test or run uses (the clock in nanoseconds, plus a counter).
pub fn jid() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let n = u128::from(N.fetch_add(1, Ordering::Relaxed));
    format!("{:020}", (nanos + n * 1000) % 100_000_000_000_000_000_000)
}

/// A return load as a minion sends it.
pub fn load(id: &str, jid: &str) -> Value {
    json!({
        "id": id,
        "jid": jid,
        "fun": "test.echo",
        "fun_args": ["héllo"],
        "return": {"echo": "héllo", "n": [1, 2.5, true, null]},
        "retcode": 0,
        "success": true,
    })
}

/// A config map from `json!` object syntax.
pub fn opts(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// A TCP port nothing listens on (bound and released).
pub async fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a probe port");
    l.local_addr().expect("probe port").port()
}

/// Waits (up to `$secs` seconds) until `$cond` holds, or panics with `$what`.
#[macro_export]
macro_rules! eventually {
    ($secs:expr, $what:expr, $cond:expr) => {{
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs_f64($secs);
        loop {
            if $cond {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                panic!("timed out waiting for {}", $what);
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }};
}

/// Runs `f` on a fresh runtime in another thread: cleanup from `Drop`, even inside a test's runtime.
fn cleanup<F: std::future::Future<Output = ()> + Send + 'static>(f: F) {
    let run = std::thread::spawn(move || {
        if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            rt.block_on(f);
        }
    });
    let _ = run.join();
}

/// A PostgreSQL database made for one test, dropped with it.
pub struct PgDb {
    /// Server as in the environment variable.
    admin: tokio_postgres::Config,
    /// Database name.
    pub name: String,
    /// Host (or socket directory) for the returner options.
    pub host: String,
    /// Port.
    pub port: u16,
    /// User.
    pub user: String,
    /// Password, if the variable has one.
    pub password: Option<String>,
}

impl PgDb {
    /// Creates a database on the server named by `conn` (a libpq string).
    pub async fn create(conn: &str) -> PgDb {
        let admin: tokio_postgres::Config =
            conn.parse().expect("SALTQ_TEST_POSTGRES is a libpq string");
        let host = match admin.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
            Some(tokio_postgres::config::Host::Unix(p)) => p.display().to_string(),
            None => "localhost".into(),
        };
        let port = admin.get_ports().first().copied().unwrap_or(5432);
        let user = admin.get_user().unwrap_or("postgres").to_owned();
        let password = admin
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        let name = unique("saltq_ret");
        let (client, connection) = admin
            .connect(tokio_postgres::NoTls)
            .await
            .expect("connect to PostgreSQL");
        tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("create a test database");
        PgDb {
            admin,
            name,
            host,
            port,
            user,
            password,
        }
    }

    /// The pgjsonb options (`returner.pgjsonb.*`) pointing at this database.
    pub fn pgjsonb_opts(&self) -> Map<String, Value> {
        self.opts("returner.pgjsonb", "pass")
    }

    /// `<prefix>.host`, `.port`, `.user`, `.<password_key>`, `.db` for this database.
    pub fn opts(&self, prefix: &str, password_key: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(format!("{prefix}.host"), json!(self.host));
        m.insert(format!("{prefix}.port"), json!(self.port));
        m.insert(format!("{prefix}.user"), json!(self.user));
        m.insert(format!("{prefix}.db"), json!(self.name));
        if let Some(p) = &self.password {
            m.insert(format!("{prefix}.{password_key}"), json!(p));
        }
        m
    }

    /// A client connected to this database.
    pub async fn client(&self) -> tokio_postgres::Client {
        let mut config = self.admin.clone();
        config.dbname(&self.name);
        let (client, connection) = config
            .connect(tokio_postgres::NoTls)
            .await
            .expect("connect to the test database");
        tokio::spawn(connection);
        client
    }

    /// The server's TCP address (for the proxy), if it is reached over TCP.
    pub async fn tcp_addr(&self) -> Option<SocketAddr> {
        if self.host.starts_with('/') {
            return None;
        }
        tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .ok()?
            .next()
    }
}

impl Drop for PgDb {
    fn drop(&mut self) {
        let (admin, name) = (self.admin.clone(), self.name.clone());
        cleanup(async move {
            if let Ok((client, connection)) = admin.connect(tokio_postgres::NoTls).await {
                tokio::spawn(connection);
                let _ = client
                    .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .await;
            }
        });
    }
}

/// A MySQL/MariaDB database made for one test, dropped with it.
pub struct MyDb {
    admin: mysql_async::Opts,
    /// Database name.
    pub name: String,
}

impl MyDb {
    /// Creates a database on the server named by `url`.
    pub async fn create(url: &str) -> MyDb {
        let admin = mysql_async::Opts::from_url(url).expect("SALTQ_TEST_MYSQL is a mysql:// URL");
        let name = unique("saltq_ret");
        let mut conn = mysql_async::Conn::new(admin.clone())
            .await
            .expect("connect to MySQL");
        use mysql_async::prelude::Queryable;
        conn.query_drop(format!("CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
            .await
            .expect("create a test database");
        let _ = conn.disconnect().await;
        MyDb { admin, name }
    }

    /// `mysql.host`, `.port`, `.user`, `.pass`, `.db` for this database, behind `profile.` if given.
    pub fn opts(&self, profile: Option<&str>) -> Map<String, Value> {
        let p = profile.map(|p| format!("{p}.")).unwrap_or_default();
        let mut m = Map::new();
        m.insert(format!("{p}mysql.host"), json!(self.admin.ip_or_hostname()));
        m.insert(format!("{p}mysql.port"), json!(self.admin.tcp_port()));
        m.insert(
            format!("{p}mysql.user"),
            json!(self.admin.user().unwrap_or("root")),
        );
        m.insert(
            format!("{p}mysql.pass"),
            json!(self.admin.pass().unwrap_or("")),
        );
        m.insert(format!("{p}mysql.db"), json!(self.name));
        m
    }

    /// A connection to this database.
    pub async fn conn(&self) -> mysql_async::Conn {
        let opts = mysql_async::OptsBuilder::from_opts(self.admin.clone())
            .db_name(Some(self.name.clone()));
        mysql_async::Conn::new(opts)
            .await
            .expect("connect to the test database")
    }
}

impl Drop for MyDb {
    fn drop(&mut self) {
        let (admin, name) = (self.admin.clone(), self.name.clone());
        cleanup(async move {
            use mysql_async::prelude::Queryable;
            if let Ok(mut conn) = mysql_async::Conn::new(admin).await {
                let _ = conn
                    .query_drop(format!("DROP DATABASE IF EXISTS `{name}`"))
                    .await;
                let _ = conn.disconnect().await;
            }
        });
    }
}

/// Host and port of a `redis://host:port/` URL.
pub fn redis_host_port(url: &str) -> (String, u16) {
    let rest = url.trim().trim_start_matches("redis://");
    let rest = rest.split('/').next().unwrap_or(rest);
    let rest = rest.rsplit('@').next().unwrap_or(rest);
    match rest.rsplit_once(':') {
        Some((h, p)) => (h.to_owned(), p.parse().unwrap_or(6379)),
        None => (rest.to_owned(), 6379),
    }
}

/// A TCP proxy in front of a server that a test can cut (existing connections dropped, new
/// ones refused) and restore on the same port, to play an outage without touching the server.
pub struct Proxy {
    /// The port clients dial.
    pub port: u16,
    upstream: SocketAddr,
    accept: Mutex<Option<JoinHandle<()>>>,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Proxy {
    /// Listens on 127.0.0.1 and forwards every connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = bind(0).await;
        let port = listener.local_addr().expect("proxy address").port();
        let proxy = Proxy {
            port,
            upstream,
            accept: Mutex::new(None),
            conns: Arc::new(Mutex::new(Vec::new())),
        };
        proxy.serve(listener);
        proxy
    }

    fn serve(&self, listener: TcpListener) {
        let (upstream, conns) = (self.upstream, self.conns.clone());
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let conn = tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                conns.lock().expect("proxy connections").push(conn);
            }
        });
        *self.accept.lock().expect("proxy listener") = Some(task);
    }

    /// Drops every connection and stops listening, so new connections are refused.
    pub async fn cut(&self) {
        let accept = self.accept.lock().expect("proxy listener").take();
        if let Some(task) = accept {
            task.abort();
            let _ = task.await;
        }
        let conns: Vec<JoinHandle<()>> =
            std::mem::take(&mut *self.conns.lock().expect("proxy connections"));
        for conn in conns {
            conn.abort();
            let _ = conn.await;
        }
    }

    /// Listens again on the same port.
    pub async fn restore(&self) {
        let listener = bind(self.port).await;
        self.serve(listener);
    }
}

async fn bind(port: u16) -> TcpListener {
    let socket = TcpSocket::new_v4().expect("proxy socket");
    socket.set_reuseaddr(true).expect("SO_REUSEADDR");
    socket
        .bind(SocketAddr::from(([127, 0, 0, 1], port)))
        .expect("bind the proxy port");
    socket.listen(64).expect("listen on the proxy port")
}

/// Fails the test unless `err` mentions every one of `parts`.
pub fn assert_mentions(err: &impl std::fmt::Display, parts: &[&str]) {
    let text = err.to_string();
    for part in parts {
        assert!(
            text.contains(part),
            "error {text:?} does not mention {part:?}"
        );
    }
}

/// A short pause for tests that pace events.
pub async fn pause(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
