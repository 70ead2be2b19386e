//! Salt's MySQL/MariaDB state modules (`salt/states/mysql_database.py`, `mysql_user.py`,
//! `mysql_grants.py`, `mysql_query.py`) with the part of the `mysql` execution module they use
//! (`salt/modules/mysql.py`). Statements run through the `mysql` client (`--batch --raw`,
//! over TCP unless a socket is named), the connection from the state's `connection_host`,
//! `connection_port`, `connection_user`, `connection_pass`, `connection_unix_socket`
//! arguments, else the minion options (or pillar) `mysql.host`, `mysql.port`, `mysql.user`,
//! `mysql.pass`, `mysql.unix_socket`, as Salt's `_connect`. A server error is Salt's
//! `MySQL Error <code>: <message>`.

use std::time::Instant;

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param};
use saltq_semantics::python;

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

/// The MySQL state modules' functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "mysql_database.present",
        params: &[
            Param::req("name"),
            Param::opt("character_set", Lit::None),
            Param::opt("collate", Lit::None),
        ],
        kwargs: true,
        handler: state_handler!(database_present),
    },
    StateFunction {
        name: "mysql_database.absent",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(database_absent),
    },
    StateFunction {
        name: "mysql_user.present",
        params: &[
            Param::req("name"),
            Param::opt("host", Lit::Str("localhost")),
            Param::opt("password", Lit::None),
            Param::opt("password_hash", Lit::None),
            Param::opt("allow_passwordless", Lit::Bool(false)),
            Param::opt("unix_socket", Lit::Bool(false)),
            Param::opt("password_column", Lit::None),
            Param::opt("auth_plugin", Lit::Str("mysql_native_password")),
        ],
        kwargs: true,
        handler: state_handler!(user_present),
    },
    StateFunction {
        name: "mysql_user.absent",
        params: &[
            Param::req("name"),
            Param::opt("host", Lit::Str("localhost")),
        ],
        kwargs: true,
        handler: state_handler!(user_absent),
    },
    StateFunction {
        name: "mysql_grants.present",
        params: &[
            Param::req("name"),
            Param::opt("grant", Lit::None),
            Param::opt("database", Lit::None),
            Param::opt("user", Lit::None),
            Param::opt("host", Lit::Str("localhost")),
            Param::opt("grant_option", Lit::Bool(false)),
            Param::opt("escape", Lit::Bool(true)),
            Param::opt("revoke_first", Lit::Bool(false)),
            Param::opt("ssl_option", Lit::Bool(false)),
        ],
        kwargs: true,
        handler: state_handler!(grants_present),
    },
    StateFunction {
        name: "mysql_grants.absent",
        params: &[
            Param::req("name"),
            Param::opt("grant", Lit::None),
            Param::opt("database", Lit::None),
            Param::opt("user", Lit::None),
            Param::opt("host", Lit::Str("localhost")),
            Param::opt("grant_option", Lit::Bool(false)),
            Param::opt("escape", Lit::Bool(true)),
        ],
        kwargs: true,
        handler: state_handler!(grants_absent),
    },
    StateFunction {
        name: "mysql_query.run",
        params: &[
            Param::req("name"),
            Param::req("database"),
            Param::req("query"),
            Param::opt("output", Lit::None),
            Param::opt("grain", Lit::None),
            Param::opt("key", Lit::None),
            Param::opt("overwrite", Lit::Bool(true)),
            Param::opt("check_db_exists", Lit::Bool(true)),
            Param::opt("client_flags", Lit::None),
        ],
        kwargs: true,
        handler: state_handler!(query_run),
    },
];

/// A failed statement or connection, in Salt's words (`MySQL Error 1049: Unknown database`).
#[derive(Debug, Clone)]
struct MyError(String);

type My<T> = Result<T, MyError>;

/// The rows of a statement: column names and values (`None` for SQL NULL).
#[derive(Debug, Default)]
struct Rows {
    columns: Vec<String>,
    rows: Vec<Vec<Option<String>>>,
}

/// How the client reaches the server.
#[derive(Debug, Clone, Default)]
struct Conn {
    host: Option<String>,
    port: Option<String>,
    user: Option<String>,
    pass: Option<String>,
    socket: Option<String>,
    db: Option<String>,
}

/// `config.option(key)`: the minion option, else the pillar's flat key.
fn config_option(call: &StateCall, key: &str) -> Option<String> {
    let v = call
        .ctx
        .opt(key)
        .cloned()
        .or_else(|| call.ctx.pillar().get(key).cloned())?;
    (!v.is_null()).then(|| python::str(&v))
}

/// Python's `repr` of a string.
fn repr(s: &str) -> String {
    python::repr(&json!(s))
}

/// A string literal for SQL, as the driver quotes an argument.
fn lit(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\0' => out.push_str("\\0"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Salt's `quote_identifier`: backquoted; for a database-level grant `_` and `%` escaped.
fn quote_identifier(id: &str, for_grants: bool) -> String {
    let q = id.replace('`', "``");
    if for_grants {
        format!("`{}`", q.replace('_', "\\_").replace('%', "%%"))
    } else {
        format!("`{}`", q.replace('%', "%%"))
    }
}

impl Conn {
    fn from_call(call: &StateCall) -> Self {
        let pick = |arg: &str, opt: &str| {
            call.arg(arg)
                .map(python::str)
                .or_else(|| config_option(call, opt))
                .filter(|v| !v.is_empty())
        };
        Conn {
            host: pick("connection_host", "mysql.host"),
            port: pick("connection_port", "mysql.port"),
            user: pick("connection_user", "mysql.user"),
            pass: pick("connection_pass", "mysql.pass"),
            socket: pick("connection_unix_socket", "mysql.unix_socket"),
            db: pick("connection_db", "mysql.db"),
        }
    }

    /// Runs `sql` (one or more statements) with the client: its rows (the last result
    /// set's, with every result set's lines when `all`), or the server's error.
    async fn exec(&self, db: Option<&str>, sql: &str) -> Result<My<String>, StateError> {
        let mut argv: Vec<String> = vec![
            "mysql".into(),
            "--no-defaults".into(),
            "--batch".into(),
            "--raw".into(),
        ];
        match &self.socket {
            Some(s) => argv.extend(["--protocol=SOCKET".into(), format!("--socket={s}")]),
            None => argv.push("--protocol=TCP".into()),
        }
        argv.push(format!(
            "--host={}",
            self.host.as_deref().unwrap_or("localhost")
        ));
        if let Some(p) = &self.port {
            argv.push(format!("--port={p}"));
        }
        if let Some(u) = &self.user {
            argv.push(format!("--user={u}"));
        }
        if let Some(d) = db.or(self.db.as_deref()) {
            argv.push(format!("--database={d}"));
        }
        argv.push(format!("--execute={sql}"));
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .env_remove("MYSQL_PWD")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        if let Some(pw) = &self.pass {
            cmd.env("MYSQL_PWD", pw);
        }
        let out = cmd.output().await.map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StateError("mysql: command not found".into()),
            _ => StateError(format!("failed to run mysql: {e}")),
        })?;
        if out.status.success() {
            return Ok(Ok(String::from_utf8_lossy(&out.stdout).into_owned()));
        }
        let err = String::from_utf8_lossy(&out.stderr);
        Ok(Err(MyError(salt_error(err.trim()))))
    }

    /// One statement's result set.
    async fn rows(&self, db: Option<&str>, sql: &str) -> Result<My<Rows>, StateError> {
        Ok(self.exec(db, sql).await?.map(|text| parse_rows(&text)))
    }

    async fn version(&self) -> Result<My<String>, StateError> {
        Ok(self
            .rows(None, "SELECT VERSION()")
            .await?
            .map(|r| first(&r).unwrap_or_default()))
    }

    /// `mysql.db_get`: (character set, collation), `None` when absent.
    async fn db_get(&self, name: &str) -> Result<My<Option<(String, String)>>, StateError> {
        let sql = format!(
            "SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM \
             INFORMATION_SCHEMA.SCHEMATA WHERE SCHEMA_NAME={};",
            lit(name)
        );
        Ok(self.rows(None, &sql).await?.map(|r| {
            r.rows.first().map(|row| {
                let f = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
                (f(0), f(1))
            })
        }))
    }

    /// `mysql.db_exists` (`SHOW DATABASES LIKE`, one row).
    async fn db_exists(&self, name: &str) -> Result<My<bool>, StateError> {
        let sql = format!("SHOW DATABASES LIKE {};", lit(name));
        Ok(self.rows(None, &sql).await?.map(|r| r.rows.len() == 1))
    }

    /// `mysql.user_exists` on MariaDB (its `mysql.user` has the `Password` column).
    async fn user_exists(
        &self,
        user: &str,
        host: &str,
        check: Check<'_>,
    ) -> Result<My<bool>, StateError> {
        let mut sql = format!(
            "SELECT User,Host FROM mysql.user WHERE User = {} AND Host = {}",
            lit(user),
            lit(host)
        );
        let column = self.password_column().await?;
        match check {
            Check::Any => {}
            Check::Passwordless { unix_socket: true } => sql.push_str(" AND plugin='unix_socket'"),
            Check::Passwordless { unix_socket: false } => {
                sql.push_str(&format!(" AND {column} = ''"));
            }
            Check::Password(p) => sql.push_str(&format!(" AND {column} = PASSWORD({})", lit(p))),
            Check::Hash(h) => sql.push_str(&format!(" AND {column} = {}", lit(h))),
        }
        Ok(self.rows(None, &sql).await?.map(|r| r.rows.len() == 1))
    }

    /// Salt's `__password_column`: `Password` where `mysql.user` has it, else
    /// `authentication_string`.
    async fn password_column(&self) -> Result<&'static str, StateError> {
        let sql = "SELECT column_name from information_schema.COLUMNS WHERE \
                   table_schema='mysql' and table_name='user' and column_name='Password'";
        Ok(match self.rows(None, sql).await? {
            Ok(r) if r.rows.is_empty() => "authentication_string",
            _ => "Password",
        })
    }

    /// `mysql.user_grants`: the `SHOW GRANTS` lines without their `IDENTIFIED BY` part.
    async fn user_grants(&self, user: &str, host: &str) -> Result<My<Vec<String>>, StateError> {
        if !matches!(self.user_exists(user, host, Check::Any).await?, Ok(true)) {
            return Ok(Ok(Vec::new()));
        }
        let sql = format!("SHOW GRANTS FOR {}@{}", lit(user), lit(host));
        Ok(self.rows(None, &sql).await?.map(|r| {
            r.rows
                .into_iter()
                .filter_map(|row| row.into_iter().next().flatten())
                .map(|g| {
                    let mut tmp = g.split(" IDENTIFIED BY").next().unwrap_or("").to_owned();
                    if g.contains("WITH GRANT OPTION") && !tmp.contains("WITH GRANT OPTION") {
                        tmp.push_str(" WITH GRANT OPTION");
                    }
                    tmp
                })
                .collect()
        }))
    }
}

/// What `user_exists` checks beside the account.
#[derive(Clone, Copy)]
enum Check<'a> {
    Any,
    Passwordless { unix_socket: bool },
    Password(&'a str),
    Hash(&'a str),
}

/// The first value of the first row.
fn first(r: &Rows) -> Option<String> {
    r.rows.first()?.first()?.clone()
}

/// `mysql --batch --raw` output: a header line, then tab-separated rows (`NULL` for NULL).
fn parse_rows(text: &str) -> Rows {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return Rows::default();
    };
    Rows {
        columns: header.split('\t').map(str::to_owned).collect(),
        rows: lines
            .map(|l| {
                l.split('\t')
                    .map(|v| (v != "NULL").then(|| v.to_owned()))
                    .collect()
            })
            .collect(),
    }
}

/// The client's `ERROR 1049 (42000) at line 1: Unknown database 'x'` as Salt's
/// `MySQL Error 1049: Unknown database 'x'`.
fn salt_error(stderr: &str) -> String {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("ERROR "))
        .unwrap_or(stderr);
    let Some(rest) = line.strip_prefix("ERROR ") else {
        return format!("MySQL Error: {line}");
    };
    let (code, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let msg = rest.split_once(": ").map_or(rest, |(_, m)| m);
    format!("MySQL Error {code}: {msg}")
}

fn arg_str(call: &StateCall, key: &str) -> Option<String> {
    call.arg(key).map(python::str)
}

fn arg_is_true(call: &StateCall, key: &str) -> bool {
    call.arg(key).is_some_and(python::is_true)
}

async fn database_present(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    ret.comment = format!("Database {name} is already present");
    let conn = Conn::from_call(&call);
    let charset = arg_str(&call, "character_set").filter(|s| !s.is_empty());
    let collate = arg_str(&call, "collate").filter(|s| !s.is_empty());
    let existing = match conn.db_get(&name).await? {
        Ok(e) => e,
        Err(e) => {
            ret.comment = e.0;
            ret.result = Some(false);
            return Ok(ret);
        }
    };
    if let Some((have_cs, have_co)) = existing {
        let mut alter = false;
        if let Some(cs) = &charset
            && *cs != have_cs
        {
            alter = true;
            ret.comment = format!("Database character set {cs} != {have_cs} needs to be updated");
            if call.test {
                ret.result = None;
            }
        }
        if let Some(co) = &collate
            && *co != have_co
        {
            alter = true;
            ret.comment.push_str(&format!(
                "\nDatabase collate {co} != {have_co} needs to be updated"
            ));
            if call.test {
                ret.result = None;
                return Ok(ret);
            }
        }
        if alter {
            if call.test {
                ret.comment
                    .push_str(&format!("\nDatabase {name} is going to be updated"));
            } else {
                let sql = format!(
                    "ALTER DATABASE `{name}` CHARACTER SET {} COLLATE {};",
                    charset.as_deref().unwrap_or(&have_cs),
                    collate.as_deref().unwrap_or(&have_co)
                );
                // Salt logs a failure here; the comparison below tells what changed.
                let _ = conn.exec(None, &sql).await?;
            }
        }
        if let Ok(Some((now_cs, now_co))) = conn.db_get(&name).await? {
            if now_co != have_co {
                ret.changes
                    .insert("collate".into(), json!({"before": have_co, "now": now_co}));
            }
            if now_cs != have_cs {
                ret.changes.insert(
                    "character_set".into(),
                    json!({"before": have_cs, "now": now_cs}),
                );
            }
        }
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        ret.comment = format!("Database {name} is not present and needs to be created");
        return Ok(ret);
    }
    let mut sql = format!(
        "CREATE DATABASE IF NOT EXISTS {}",
        quote_identifier(&name, false).replace("%%", "%")
    );
    if let Some(cs) = &charset {
        sql.push_str(&format!(" CHARACTER SET {}", lit(cs)));
    }
    if let Some(co) = &collate {
        sql.push_str(&format!(" COLLATE {}", lit(co)));
    }
    sql.push(';');
    match conn.exec(None, &sql).await? {
        Ok(_) => {
            ret.comment = format!("The database {name} has been created");
            ret.changes.insert(name.clone(), json!("Present"));
        }
        Err(e) => {
            ret.comment = format!("Failed to create database {name} ({})", e.0);
            ret.result = Some(false);
        }
    }
    Ok(ret)
}

async fn database_absent(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    let conn = Conn::from_call(&call);
    match conn.db_exists(&name).await? {
        Err(e) => {
            ret.comment = e.0;
            ret.result = Some(false);
            return Ok(ret);
        }
        Ok(true) => {
            if call.test {
                ret.result = None;
                ret.comment = format!("Database {name} is present and needs to be removed");
                return Ok(ret);
            }
            if name == "mysql" || name == "information_scheme" {
                ret.comment = format!("Database {name} is not present, so it cannot be removed");
                return Ok(ret);
            }
            let sql = format!(
                "DROP DATABASE {};",
                quote_identifier(&name, false).replace("%%", "%")
            );
            if let Err(e) = conn.exec(None, &sql).await? {
                ret.comment = format!("Unable to remove database {name} ({})", e.0);
                ret.result = Some(false);
                return Ok(ret);
            }
            if matches!(conn.db_exists(&name).await?, Ok(false)) {
                ret.comment = format!("Database {name} has been removed");
                ret.changes.insert(name.clone(), json!("Absent"));
                return Ok(ret);
            }
        }
        Ok(false) => {}
    }
    ret.comment = format!("Database {name} is not present, so it cannot be removed");
    Ok(ret)
}

/// A `MySQL Error` answer as the failed state Salt's `_get_mysql_error` makes of it.
fn failed(mut ret: Ret, e: MyError) -> Ret {
    ret.comment = e.0;
    ret.result = Some(false);
    ret
}

async fn user_present(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let host = arg_str(&call, "host").unwrap_or_else(|| "localhost".into());
    let password = call
        .arg("password")
        .map(python::str)
        .filter(|s| !s.is_empty());
    let hash = call
        .arg("password_hash")
        .map(python::str)
        .filter(|s| !s.is_empty());
    let allow_pwless = arg_is_true(&call, "allow_passwordless");
    let unix_socket = arg_is_true(&call, "unix_socket");
    let auth_plugin =
        arg_str(&call, "auth_plugin").unwrap_or_else(|| "mysql_native_password".into());
    let mut ret = Ret::new(&name);
    ret.comment = format!("User {name}@{host} is already present");
    let conn = Conn::from_call(&call);
    let passwordless = password.is_none() && hash.is_none();
    if passwordless {
        if !allow_pwless && !unix_socket {
            ret.comment = "Either password or password_hash must be specified, unless \
                           allow_passwordless is True"
                .into();
            ret.result = Some(false);
            return Ok(ret);
        }
        match conn
            .user_exists(&name, &host, Check::Passwordless { unix_socket })
            .await?
        {
            Ok(true) => {
                if allow_pwless {
                    ret.comment.push_str(" with passwordless login");
                }
                return Ok(ret);
            }
            Ok(false) => {}
            Err(e) => return Ok(failed(ret, e)),
        }
    } else {
        let check = match &password {
            Some(p) => Check::Password(p),
            None => Check::Hash(hash.as_deref().unwrap_or_default()),
        };
        match conn.user_exists(&name, &host, check).await? {
            Ok(true) => {
                if auth_plugin == "mysql_native_password" {
                    ret.comment.push_str(" with the desired password");
                    if hash.is_some() && password.is_none() {
                        ret.comment.push_str(" hash");
                    }
                } else {
                    ret.comment.push_str(". Unable to verify password.");
                }
                return Ok(ret);
            }
            Ok(false) => {}
            Err(e) => return Ok(failed(ret, e)),
        }
    }
    let exists = match conn.user_exists(&name, &host, Check::Any).await? {
        Ok(b) => b,
        Err(e) => return Ok(failed(ret, e)),
    };
    if exists {
        if call.test {
            ret.comment = format!("Password for user {name}@{host} is set to be ");
            ret.result = None;
            if passwordless {
                ret.comment.push_str("cleared");
                if !allow_pwless {
                    ret.comment.push_str(", but allow_passwordless != True");
                    ret.result = Some(false);
                }
            } else {
                ret.comment.push_str("changed");
            }
            return Ok(ret);
        }
        let changed = user_chpass(&conn, &name, &host, &password, &hash, allow_pwless).await?;
        let verb = if passwordless { "cleared" } else { "changed" };
        match changed {
            Ok(()) => {
                ret.comment = format!("Password for user {name}@{host} has been {verb}");
                ret.changes.insert(name.clone(), json!("Updated"));
            }
            Err(e) => {
                let verb = if passwordless { "clear" } else { "change" };
                ret.comment = format!("Failed to {verb} password for user {name}@{host}");
                if !e.0.is_empty() {
                    ret.comment.push_str(&format!(" ({})", e.0));
                }
                if passwordless && !allow_pwless {
                    ret.comment.push_str(
                        ". Note: allow_passwordless must be True to permit passwordless login.",
                    );
                }
                ret.result = Some(false);
            }
        }
        return Ok(ret);
    }
    if call.test {
        ret.comment = format!("User {name}@{host} is set to be added");
        ret.result = None;
        if allow_pwless {
            ret.comment.push_str(" with passwordless login");
        }
        if unix_socket {
            ret.comment.push_str(" using unix_socket");
        }
        return Ok(ret);
    }
    // mysql.user_create (MariaDB's form).
    let mut sql = format!("CREATE USER {}@{}", lit(&name), lit(&host));
    let mut ok = true;
    if unix_socket {
        if host == "localhost" {
            sql.push_str(" IDENTIFIED VIA unix_socket");
        } else {
            ok = false;
        }
    } else if !allow_pwless {
        match (&password, &hash) {
            (Some(p), _) => sql.push_str(&format!(" IDENTIFIED BY {}", lit(p))),
            (None, Some(h)) => sql.push_str(&format!(" IDENTIFIED BY PASSWORD {}", lit(h))),
            (None, None) => ok = false,
        }
    }
    let mut err = None;
    if ok {
        match conn.exec(None, &sql).await? {
            Ok(_) => {
                let check = match (&password, &hash) {
                    (Some(p), _) => Check::Password(p),
                    (None, Some(h)) => Check::Hash(h),
                    (None, None) => Check::Any,
                };
                ok = matches!(conn.user_exists(&name, &host, check).await?, Ok(true));
            }
            Err(e) => {
                ok = false;
                err = Some(e);
            }
        }
    }
    if ok {
        ret.comment = format!("The user {name}@{host} has been added");
        if allow_pwless {
            ret.comment.push_str(" with passwordless login");
        }
        if unix_socket {
            ret.comment.push_str(" using unix_socket");
        }
        ret.changes.insert(name.clone(), json!("Present"));
    } else {
        ret.comment = format!("Failed to create user {name}@{host}");
        if let Some(e) = err {
            ret.comment.push_str(&format!(" ({})", e.0));
        }
        ret.result = Some(false);
    }
    Ok(ret)
}

/// `mysql.user_chpass` on MariaDB 10.4+: `ALTER USER ... IDENTIFIED VIA <plugin> USING ...`.
async fn user_chpass(
    conn: &Conn,
    user: &str,
    host: &str,
    password: &Option<String>,
    hash: &Option<String>,
    allow_pwless: bool,
) -> Result<My<()>, StateError> {
    let pw_sql = match (password, hash) {
        (Some(p), _) => format!("PASSWORD({})", lit(p)),
        (None, Some(h)) => lit(h),
        (None, None) if allow_pwless => "''".to_owned(),
        (None, None) => return Ok(Err(MyError(String::new()))),
    };
    let plugin = match conn
        .rows(
            None,
            &format!(
                "SELECT plugin FROM mysql.user WHERE User={} and Host={}",
                lit(user),
                lit(host)
            ),
        )
        .await?
    {
        Ok(r) => first(&r)
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "mysql_native_password".into()),
        Err(_) => "mysql_native_password".into(),
    };
    let sql = format!(
        "ALTER USER {}@{} IDENTIFIED VIA {} USING {pw_sql}; FLUSH PRIVILEGES;",
        lit(user),
        lit(host),
        lit(&plugin)
    );
    Ok(conn.exec(None, &sql).await?.map(|_| ()))
}

async fn user_absent(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let host = arg_str(&call, "host").unwrap_or_else(|| "localhost".into());
    let mut ret = Ret::new(&name);
    let conn = Conn::from_call(&call);
    match conn.user_exists(&name, &host, Check::Any).await? {
        Err(e) => return Ok(failed(ret, e)),
        Ok(true) => {
            if call.test {
                ret.result = None;
                ret.comment = format!("User {name}@{host} is set to be removed");
                return Ok(ret);
            }
            let sql = format!("DROP USER {}@{}", lit(&name), lit(&host));
            if let Err(e) = conn.exec(None, &sql).await? {
                return Ok(failed(ret, e));
            }
            if matches!(conn.user_exists(&name, &host, Check::Any).await?, Ok(false)) {
                ret.comment = format!("User {name}@{host} has been removed");
                ret.changes.insert(name.clone(), json!("Absent"));
                return Ok(ret);
            }
        }
        Ok(false) => {}
    }
    ret.comment = format!("User {name}@{host} is not present, so it cannot be removed");
    Ok(ret)
}

/// The privileges Salt accepts in a grant (`__grants__`).
const GRANTS: &[&str] = &[
    "ALL PRIVILEGES",
    "ALTER",
    "ALTER ROUTINE",
    "BACKUP_ADMIN",
    "BINLOG_ADMIN",
    "CONNECTION_ADMIN",
    "CREATE",
    "CREATE ROLE",
    "CREATE ROUTINE",
    "CREATE TABLESPACE",
    "CREATE TEMPORARY TABLES",
    "CREATE USER",
    "CREATE VIEW",
    "DELETE",
    "DELETE HISTORY",
    "DROP",
    "DROP ROLE",
    "ENCRYPTION_KEY_ADMIN",
    "EVENT",
    "EXECUTE",
    "FILE",
    "GRANT OPTION",
    "GROUP_REPLICATION_ADMIN",
    "INDEX",
    "INSERT",
    "LOCK TABLES",
    "PERSIST_RO_VARIABLES_ADMIN",
    "PROCESS",
    "REFERENCES",
    "RELOAD",
    "REPLICATION CLIENT",
    "REPLICATION SLAVE",
    "REPLICATION_SLAVE_ADMIN",
    "RESOURCE_GROUP_ADMIN",
    "RESOURCE_GROUP_USER",
    "ROLE_ADMIN",
    "SELECT",
    "SET_USER_ID",
    "SHOW DATABASES",
    "SHOW VIEW",
    "SHUTDOWN",
    "SLAVE MONITOR",
    "SUPER",
    "SYSTEM_VARIABLES_ADMIN",
    "TRIGGER",
    "UPDATE",
    "USAGE",
    "XA_RECOVER_ADMIN",
];

/// Splits a privilege list at the commas outside parentheses (column lists).
fn split_privs(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_owned());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_owned());
    }
    out
}

/// A grant as Salt's `_grant_to_tokens` sees it: privileges, database, user, host, each
/// compared without quotes and backslashes.
#[derive(Debug, PartialEq)]
struct Tokens {
    grant: Vec<String>,
    database: String,
    user: String,
    host: String,
}

fn strip_quotes(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '"' | '\\' | '`' | '\''))
        .collect()
}

/// `GRANT <privs> ON <db>.<table> TO <user>@<host> [...]`, as `SHOW GRANTS` prints it.
fn tokenize(line: &str) -> Option<Tokens> {
    let rest = line.strip_prefix("GRANT ")?;
    let (privs, rest) = rest.split_once(" ON ")?;
    let (db, rest) = rest.split_once(" TO ")?;
    let account = rest.split(' ').next().unwrap_or_default();
    let (user, host) = account.rsplit_once('@').unwrap_or((account, ""));
    let mut grant: Vec<String> = split_privs(privs)
        .iter()
        .map(|p| alias(&p.to_uppercase()))
        .collect();
    if rest.contains("WITH GRANT OPTION") {
        grant.push("GRANT OPTION".into());
    }
    Some(Tokens {
        grant,
        database: strip_quotes(db),
        user: strip_quotes(user),
        host: strip_quotes(host),
    })
}

/// Salt's `_resolve_grant_aliases` for MariaDB: `ALL` is `ALL PRIVILEGES`.
fn alias(p: &str) -> String {
    match p {
        "ALL" => "ALL PRIVILEGES".into(),
        other => other.to_owned(),
    }
}

/// Salt's `__grant_generate`: the GRANT statement for the state's arguments, or the
/// privilege it refuses.
fn grant_generate(
    grant: &str,
    database: &str,
    user: &str,
    host: &str,
    grant_option: bool,
    escape: bool,
) -> Result<String, String> {
    let mut grant = split_privs(grant).join(", ").to_uppercase();
    if grant.trim() == "ALL" {
        grant = "ALL PRIVILEGES".into();
    }
    for p in split_privs(&grant) {
        let bare = p.split('(').next().unwrap_or_default().trim().to_owned();
        if !GRANTS.contains(&bare.as_str()) {
            return Err(format!("Invalid grant : '{p}'"));
        }
    }
    let (mut dbc, mut table) = match database.rsplit_once('.') {
        Some((d, t)) => (d.to_owned(), t.to_owned()),
        None => (String::new(), database.to_owned()),
    };
    if escape {
        if dbc != "*" {
            dbc = quote_identifier(&dbc, table == "*").replace("%%", "%");
        }
        if table != "*" {
            table = quote_identifier(&table, false).replace("%%", "%");
        }
    }
    let mut sql = format!(
        "GRANT {grant} ON {dbc}.{table} TO {}@{}",
        lit(user),
        lit(host)
    );
    if grant_option {
        sql.push_str(" WITH GRANT OPTION");
    }
    Ok(sql)
}

struct GrantArgs {
    grant: String,
    database: String,
    user: String,
    host: String,
    grant_option: bool,
    escape: bool,
}

impl GrantArgs {
    fn from_call(call: &StateCall) -> Self {
        GrantArgs {
            grant: arg_str(call, "grant").unwrap_or_else(|| "None".into()),
            database: arg_str(call, "database").unwrap_or_else(|| "None".into()),
            user: arg_str(call, "user").unwrap_or_else(|| "None".into()),
            host: arg_str(call, "host").unwrap_or_else(|| "localhost".into()),
            grant_option: arg_is_true(call, "grant_option"),
            escape: call.arg("escape").is_none_or(python::is_true),
        }
    }

    fn statement(&self) -> Result<String, String> {
        grant_generate(
            &self.grant,
            &self.database,
            &self.user,
            &self.host,
            self.grant_option,
            self.escape,
        )
    }
}

/// `mysql.grant_exists`: the user's grants on the database hold every privilege asked.
async fn grant_exists(conn: &Conn, g: &GrantArgs) -> Result<My<bool>, StateError> {
    if let Err(e) = conn.version().await? {
        return Ok(Err(MyError(format!(
            "MySQL Error: Unable to fetch current server version. Last error was: \"{}\"",
            e.0
        ))));
    }
    let grant = if g.grant.to_uppercase().contains("ALL") {
        "ALL PRIVILEGES".to_owned()
    } else {
        g.grant.clone()
    };
    let Ok(target) = grant_generate(
        &grant,
        &g.database,
        &g.user,
        &g.host,
        g.grant_option,
        g.escape,
    ) else {
        return Ok(Ok(false));
    };
    let Some(target) = tokenize(&target) else {
        return Ok(Ok(false));
    };
    let lines = match conn.user_grants(&g.user, &g.host).await? {
        Ok(l) => l,
        Err(e) => return Ok(Err(e)),
    };
    let mut by_db: Vec<Tokens> = Vec::new();
    for t in lines.iter().filter_map(|l| tokenize(l)) {
        match by_db.iter_mut().find(|d| d.database == t.database) {
            Some(d) => d.grant.extend(t.grant),
            None => by_db.push(t),
        }
    }
    Ok(Ok(by_db.iter().any(|have| {
        have.user == target.user
            && have.database == target.database
            && have.host == target.host
            && target.grant.iter().all(|p| have.grant.contains(p))
    })))
}

async fn grants_present(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let g = GrantArgs::from_call(&call);
    let (grant, database, user, host) = (&g.grant, &g.database, &g.user, &g.host);
    let mut ret = Ret::new(&name);
    ret.comment = format!("Grant {grant} on {database} to {user}@{host} is already present");
    let conn = Conn::from_call(&call);
    match grant_exists(&conn, &g).await? {
        Ok(true) => return Ok(ret),
        Ok(false) => {}
        Err(e) => return Ok(failed(ret, e)),
    }
    if arg_is_true(&call, "revoke_first") && !call.test {
        let (db, table) = database.rsplit_once('.').unwrap_or(("", database));
        let my_db = strip_quotes(&quote_identifier(db, table == "*"));
        for line in conn.user_grants(user, host).await?.unwrap_or_default() {
            if let Some(t) = tokenize(&line)
                && t.database.split('.').next() == Some(my_db.as_str())
            {
                let revoke = GrantArgs {
                    grant: t.grant.join(","),
                    ..GrantArgs::from_call(&call)
                };
                let _ = grant_revoke(&conn, &revoke).await?;
            }
        }
    }
    if call.test {
        ret.result = None;
        ret.comment = format!("MySQL grant {name} is set to be created");
        return Ok(ret);
    }
    let mut err = None;
    let added = match g.statement() {
        Ok(sql) => match conn.exec(None, &sql).await? {
            Ok(_) => matches!(grant_exists(&conn, &g).await?, Ok(true)),
            Err(e) => {
                err = Some(e);
                false
            }
        },
        Err(_) => false,
    };
    if added {
        ret.comment = format!("Grant {grant} on {database} to {user}@{host} has been added");
        ret.changes.insert(name.clone(), json!("Present"));
    } else {
        ret.comment =
            format!("Failed to execute: \"GRANT {grant} ON {database} TO {user}@{host}\"");
        if let Some(e) = err {
            ret.comment.push_str(&format!(" ({})", e.0));
        }
        ret.result = Some(false);
    }
    Ok(ret)
}

/// `mysql.grant_revoke`: whether the grant is gone after the REVOKE.
async fn grant_revoke(conn: &Conn, g: &GrantArgs) -> Result<My<bool>, StateError> {
    let mut grant = split_privs(&g.grant).join(", ").to_uppercase();
    if grant.trim() == "ALL" {
        grant = "ALL PRIVILEGES".into();
    }
    if g.grant_option {
        grant.push_str(", GRANT OPTION");
    }
    let (db, table) = g.database.rsplit_once('.').unwrap_or(("", &g.database));
    let s_db = if db == "*" {
        db.to_owned()
    } else {
        quote_identifier(db, table == "*").replace("%%", "%")
    };
    let table = if table == "*" {
        table.to_owned()
    } else {
        quote_identifier(table, false).replace("%%", "%")
    };
    let sql = format!(
        "REVOKE {grant} ON {s_db}.{table} FROM {}@{};",
        lit(&g.user),
        lit(&g.host)
    );
    if let Err(e) = conn.exec(None, &sql).await? {
        return Ok(Err(e));
    }
    Ok(grant_exists(conn, g).await?.map(|exists| !exists))
}

async fn grants_absent(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let g = GrantArgs::from_call(&call);
    let (grant, database, user, host) = (&g.grant, &g.database, &g.user, &g.host);
    let mut ret = Ret::new(&name);
    let conn = Conn::from_call(&call);
    match grant_exists(&conn, &g).await? {
        Err(e) => {
            ret.comment = format!(
                "Unable to determine if grant {grant} on {database} for {user}@{host} exists ({})",
                e.0
            );
            ret.result = Some(false);
            return Ok(ret);
        }
        Ok(true) => {
            if call.test {
                ret.result = None;
                ret.comment = format!("MySQL grant {name} is set to be revoked");
                return Ok(ret);
            }
            match grant_revoke(&conn, &g).await? {
                Ok(true) => {
                    ret.comment =
                        format!("Grant {grant} on {database} for {user}@{host} has been revoked");
                    ret.changes.insert(name.clone(), json!("Absent"));
                    return Ok(ret);
                }
                Ok(false) => {}
                Err(e) => {
                    ret.comment = format!(
                        "Unable to revoke grant {grant} on {database} for {user}@{host} ({})",
                        e.0
                    );
                    ret.result = Some(false);
                    return Ok(ret);
                }
            }
        }
        Ok(false) => {}
    }
    ret.comment = format!(
        "Grant {grant} on {database} to {user}@{host} is not present, so it cannot be revoked"
    );
    Ok(ret)
}

/// Salt's `mysql.query` answer, printed as Python prints the dict (`str(query_result)`).
fn query_repr(elapsed: f64, rows: Option<&Rows>, affected: i64) -> String {
    let human = if elapsed < 0.2 {
        format!("{}ms", python_round(elapsed * 1000.0, 1))
    } else {
        format!("{}s", python_round(elapsed, 2))
    };
    let raw = python_round(elapsed, 5);
    let mut out = format!(
        "{{'query time': {{'human': {}, 'raw': {}}}, ",
        repr(&human),
        repr(&raw)
    );
    match rows {
        Some(r) => {
            let cols: Vec<String> = r.columns.iter().map(|c| repr(c)).collect();
            let cols = if cols.len() == 1 {
                format!("({},)", cols[0])
            } else {
                format!("({})", cols.join(", "))
            };
            let results: Vec<String> = r
                .rows
                .iter()
                .map(|row| {
                    let items: Vec<String> = r
                        .columns
                        .iter()
                        .zip(row)
                        .map(|(c, v)| {
                            format!(
                                "{}: {}",
                                repr(c),
                                v.as_deref().map_or_else(|| "None".to_owned(), repr)
                            )
                        })
                        .collect();
                    format!("{{{}}}", items.join(", "))
                })
                .collect();
            out.push_str(&format!(
                "'rows returned': {}, 'columns': {cols}, 'results': [{}]}}",
                r.rows.len(),
                results.join(", ")
            ));
        }
        None => out.push_str(&format!("'rows affected': {affected}}}")),
    }
    out
}

/// `str(round(x, n))` for a float.
fn python_round(x: f64, n: i32) -> String {
    let p = 10f64.powi(n);
    let v = (x * p).round() / p;
    let s = format!("{v}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

async fn query_run(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let database = arg_str(&call, "database").unwrap_or_default();
    let query = arg_str(&call, "query").unwrap_or_default();
    let mut ret = Ret::new(&name);
    ret.comment = format!("Database {database} is already present");
    if let Some(f) = call.arg("client_flags")
        && !f.is_array()
    {
        ret.comment = "Error: client_flags must be a list.".into();
        ret.result = Some(false);
        return Ok(ret);
    }
    let conn = Conn::from_call(&call);
    let output = arg_str(&call, "output");
    let grain = arg_str(&call, "grain");
    let key = arg_str(&call, "key");
    let overwrite = call.arg("overwrite").is_none_or(python::is_true);
    if call.arg("check_db_exists").is_none_or(python::is_true) {
        match conn.db_exists(&database).await? {
            Ok(true) => {}
            Ok(false) => {
                ret.result = None;
                ret.comment = format!("Database {name} is not present");
                return Ok(ret);
            }
            Err(e) => return Ok(failed(ret, e)),
        }
    }
    let grains_value = |g: &str| call.ctx.grains().get(g).cloned();
    match (output.as_deref(), &grain, &key) {
        (Some("grain"), Some(g), None) => {
            if !overwrite && grains_value(g).is_some() {
                ret.comment = format!("No execution needed. Grain {g} already set");
                return Ok(ret);
            } else if call.test {
                ret.result = None;
                ret.comment = format!("Query would execute, storing result in grain: {g}");
                return Ok(ret);
            }
        }
        (Some("grain"), Some(g), Some(k)) => {
            let have = grains_value(g).unwrap_or_else(|| json!({}));
            if !overwrite && have.get(k).is_some() {
                ret.comment = format!("No execution needed. Grain {g}:{k} already set");
                return Ok(ret);
            } else if call.test {
                ret.result = None;
                ret.comment = format!("Query would execute, storing result in grain: {g}:{k}");
                return Ok(ret);
            }
        }
        (Some("grain"), None, _) => {
            ret.result = Some(false);
            ret.comment = "Error: output type 'grain' needs the grain parameter\n".into();
            return Ok(ret);
        }
        (Some(file), _, _) => {
            if !overwrite && std::path::Path::new(file).is_file() {
                ret.comment = format!("No execution needed. File {file} already set");
                return Ok(ret);
            } else if call.test {
                ret.result = None;
                ret.comment = format!("Query would execute, storing result in file: {file}");
                return Ok(ret);
            }
        }
        (None, _, _) => {
            if call.test {
                ret.result = None;
                ret.comment = "Query would execute, not storing result".into();
                return Ok(ret);
            }
        }
    }
    let select = ["SELECT", "SHOW", "DESC"]
        .iter()
        .any(|k| query.trim().to_uppercase().starts_with(k));
    let start = Instant::now();
    let sql = if select {
        query.clone()
    } else {
        format!(
            "{}; SELECT ROW_COUNT() AS saltq_row_count",
            query.trim().trim_end_matches(';')
        )
    };
    let text = conn.exec(Some(&database), &sql).await?;
    let elapsed = start.elapsed().as_secs_f64();
    let text = match text {
        Ok(t) => t,
        Err(e) => return Err(StateError(format!("OperationalError: {}", e.0))),
    };
    let (rows, affected) = if select {
        (Some(parse_rows(&text)), 0)
    } else {
        let lines: Vec<&str> = text.lines().collect();
        let n = lines.last().and_then(|l| l.parse().ok()).unwrap_or(0);
        (None, n)
    };
    let result = query_repr(elapsed, rows.as_ref(), affected);
    ret.comment = result.clone();
    match (output.as_deref(), &grain, &key) {
        (Some("grain"), Some(g), k) => {
            let value = query_value(elapsed, rows.as_ref(), affected);
            let value = match k {
                None => value,
                Some(k) => {
                    let mut have = grains_value(g)
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    have[k.as_str()] = value;
                    have
                }
            };
            super::exec(&call, "grains.setval", vec![json!(g), value], Map::new()).await?;
            let target = k.as_ref().map_or(g.clone(), |k| format!("{g}:{k}"));
            ret.changes.insert(
                "query".into(),
                json!(format!("Executed. Output into grain: {target}")),
            );
        }
        (Some(file), _, _) => {
            let mut text = String::new();
            match &rows {
                Some(r) => {
                    for row in &r.rows {
                        for (c, v) in r.columns.iter().zip(row) {
                            text.push_str(&format!("{c}:{}\n", v.as_deref().unwrap_or("None")));
                        }
                    }
                }
                None => text.push_str(&format!(
                    "query time:{}\nrows affected:{affected}\n",
                    python_round(elapsed, 5)
                )),
            }
            std::fs::write(file, text).map_err(|e| StateError(format!("writing {file}: {e}")))?;
            ret.changes.insert(
                "query".into(),
                json!(format!("Executed. Output into {file}")),
            );
        }
        _ => {
            ret.changes.insert("query".into(), json!("Executed"));
        }
    }
    Ok(ret)
}

/// The `mysql.query` answer as data (for a grain).
fn query_value(elapsed: f64, rows: Option<&Rows>, affected: i64) -> Value {
    let mut out = json!({"query time": {
        "human": if elapsed < 0.2 {
            format!("{}ms", python_round(elapsed * 1000.0, 1))
        } else {
            format!("{}s", python_round(elapsed, 2))
        },
        "raw": python_round(elapsed, 5),
    }});
    match rows {
        Some(r) => {
            out["rows returned"] = json!(r.rows.len());
            out["columns"] = json!(r.columns);
            out["results"] = Value::Array(
                r.rows
                    .iter()
                    .map(|row| {
                        Value::Object(
                            r.columns
                                .iter()
                                .cloned()
                                .zip(row.iter().map(|v| json!(v)))
                                .collect(),
                        )
                    })
                    .collect(),
            );
        }
        None => out["rows affected"] = json!(affected),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_errors_read_as_salts() {
        assert_eq!(
            salt_error("ERROR 1049 (42000) at line 1: Unknown database 'x'"),
            "MySQL Error 1049: Unknown database 'x'"
        );
        assert_eq!(
            salt_error("ERROR 2002 (HY000): Can't connect to server on '127.0.0.1' (115)"),
            "MySQL Error 2002: Can't connect to server on '127.0.0.1' (115)"
        );
    }

    #[test]
    fn grants_tokenize_as_salts() {
        let t = tokenize("GRANT SELECT, INSERT ON `a\\_b`.* TO `u`@`localhost`").unwrap();
        assert_eq!(t.grant, ["SELECT", "INSERT"]);
        assert_eq!(t.database, "a_b.*");
        assert_eq!((t.user.as_str(), t.host.as_str()), ("u", "localhost"));
        assert_eq!(
            grant_generate("select,insert", "a_b.*", "u", "localhost", false, true).unwrap(),
            "GRANT SELECT, INSERT ON `a\\_b`.* TO 'u'@'localhost'"
        );
        assert_eq!(
            grant_generate("selekt", "a.*", "u", "h", false, true).unwrap_err(),
            "Invalid grant : 'SELEKT'"
        );
    }

    #[test]
    fn query_answer_prints_as_python() {
        let rows = Rows {
            columns: vec!["a".into()],
            rows: vec![vec![Some("1".into())], vec![None]],
        };
        assert_eq!(
            query_repr(0.00046, Some(&rows), 0),
            "{'query time': {'human': '0.5ms', 'raw': '0.00046'}, 'rows returned': 2, \
             'columns': ('a',), 'results': [{'a': '1'}, {'a': None}]}"
        );
    }
}
