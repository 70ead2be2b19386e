//! Salt's PostgreSQL state modules (`salt/states/postgres_database.py`, `postgres_user.py`,
//! `postgres_schema.py`, `postgres_extension.py`, `postgres_privileges.py`) with the part of
//! the `postgres` execution module they use (`salt/modules/postgres.py`): every query runs
//! through `psql` as Salt's does (`--no-align --no-readline --no-psqlrc --no-password`,
//! reads as `COPY (...) TO STDOUT WITH CSV HEADER`), the connection from the state's
//! `db_user`/`db_host`/`db_port`/`db_password`/`maintenance_db`, else the minion options
//! (or pillar) `postgres.user`, `postgres.host`, `postgres.port`, `postgres.pass`,
//! `postgres.maintenance_db` (default `postgres`). `user` is the system user psql runs as;
//! without a host Salt runs it as `postgres` (the Unix socket's peer authentication).

use std::time::Duration;

use md5::{Digest, Md5};
use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param};
use saltq_semantics::python;

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

const DB_ARGS: [Param; 6] = [
    Param::opt("user", Lit::None),
    Param::opt("maintenance_db", Lit::None),
    Param::opt("db_password", Lit::None),
    Param::opt("db_host", Lit::None),
    Param::opt("db_port", Lit::None),
    Param::opt("db_user", Lit::None),
];

macro_rules! params {
    ($($p:expr),* $(,)?) => {
        &[$($p,)* DB_ARGS[0], DB_ARGS[1], DB_ARGS[2], DB_ARGS[3], DB_ARGS[4], DB_ARGS[5]]
    };
}

/// The PostgreSQL state modules' functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "postgres_database.present",
        params: params![
            Param::req("name"),
            Param::opt("tablespace", Lit::None),
            Param::opt("encoding", Lit::None),
            Param::opt("lc_collate", Lit::None),
            Param::opt("lc_ctype", Lit::None),
            Param::opt("owner", Lit::None),
            Param::opt("owner_recurse", Lit::Bool(false)),
            Param::opt("template", Lit::None),
        ],
        kwargs: false,
        handler: state_handler!(database_present),
    },
    StateFunction {
        name: "postgres_database.absent",
        params: params![Param::req("name")],
        kwargs: false,
        handler: state_handler!(database_absent),
    },
    StateFunction {
        name: "postgres_user.present",
        params: params![
            Param::req("name"),
            Param::opt("createdb", Lit::None),
            Param::opt("createroles", Lit::None),
            Param::opt("encrypted", Lit::None),
            Param::opt("superuser", Lit::None),
            Param::opt("replication", Lit::None),
            Param::opt("inherit", Lit::None),
            Param::opt("login", Lit::None),
            Param::opt("password", Lit::None),
            Param::opt("default_password", Lit::None),
            Param::opt("refresh_password", Lit::None),
            Param::opt("valid_until", Lit::None),
            Param::opt("groups", Lit::None),
        ],
        kwargs: false,
        handler: state_handler!(user_present),
    },
    StateFunction {
        name: "postgres_user.absent",
        params: params![Param::req("name")],
        kwargs: false,
        handler: state_handler!(user_absent),
    },
    StateFunction {
        name: "postgres_schema.present",
        params: params![
            Param::req("dbname"),
            Param::req("name"),
            Param::opt("owner", Lit::None),
        ],
        kwargs: false,
        handler: state_handler!(schema_present),
    },
    StateFunction {
        name: "postgres_schema.absent",
        params: params![Param::req("dbname"), Param::req("name")],
        kwargs: false,
        handler: state_handler!(schema_absent),
    },
    StateFunction {
        name: "postgres_extension.present",
        params: params![
            Param::req("name"),
            Param::opt("if_not_exists", Lit::None),
            Param::opt("schema", Lit::None),
            Param::opt("ext_version", Lit::None),
            Param::opt("from_version", Lit::None),
        ],
        kwargs: false,
        handler: state_handler!(extension_present),
    },
    StateFunction {
        name: "postgres_extension.absent",
        params: params![
            Param::req("name"),
            Param::opt("if_exists", Lit::None),
            Param::opt("restrict", Lit::None),
            Param::opt("cascade", Lit::None),
        ],
        kwargs: false,
        handler: state_handler!(extension_absent),
    },
    StateFunction {
        name: "postgres_privileges.present",
        params: params![
            Param::req("name"),
            Param::req("object_name"),
            Param::req("object_type"),
            Param::opt("privileges", Lit::None),
            Param::opt("grant_option", Lit::None),
            Param::opt("prepend", Lit::Str("public")),
        ],
        kwargs: false,
        handler: state_handler!(privileges_present),
    },
    StateFunction {
        name: "postgres_privileges.absent",
        params: params![
            Param::req("name"),
            Param::req("object_name"),
            Param::req("object_type"),
            Param::opt("privileges", Lit::None),
            Param::opt("prepend", Lit::Str("public")),
        ],
        kwargs: false,
        handler: state_handler!(privileges_absent),
    },
];

/// How psql reaches the server: Salt's `db_args` with the config defaults applied.
#[derive(Debug, Clone, Default)]
pub(crate) struct Conn {
    user: Option<String>,
    host: Option<String>,
    port: Option<String>,
    maintenance_db: Option<String>,
    password: Option<String>,
    runas: Option<String>,
    timeout: u64,
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

fn opt_str(v: Option<&Value>) -> Option<String> {
    v.filter(|v| !v.is_null()).map(python::str)
}

impl Conn {
    /// The connection a state's `db_*` arguments and `user` name, defaults from the config.
    fn from_call(call: &StateCall) -> Self {
        let a = |k: &str| opt_str(call.arg(k));
        let or_cfg = |v: Option<String>, key: &str| v.or_else(|| config_option(call, key));
        let host = or_cfg(a("db_host"), "postgres.host");
        let mut runas = a("user");
        if runas.is_none() && host.as_deref().is_none_or(|h| h.starts_with('/')) {
            runas = Some("postgres".to_owned());
        }
        let user = or_cfg(a("db_user"), "postgres.user").or_else(|| runas.clone());
        Conn {
            user,
            host,
            port: or_cfg(a("db_port"), "postgres.port"),
            maintenance_db: or_cfg(a("maintenance_db"), "postgres.maintenance_db"),
            password: or_cfg(a("db_password"), "postgres.pass"),
            runas,
            timeout: config_option(call, "postgres.timeout")
                .and_then(|t| t.parse().ok())
                .unwrap_or(0),
        }
    }

    /// The same connection to another database (`postgres_schema`'s `dbname`).
    fn on_db(&self, db: &str) -> Self {
        Conn {
            maintenance_db: Some(db.to_owned()),
            ..self.clone()
        }
    }

    /// Runs psql with `args` after the connection options: (exit code, stdout, stderr).
    async fn psql(&self, args: &[&str]) -> Result<(i32, String, String), StateError> {
        let mut argv: Vec<String> = Vec::new();
        let as_other = self.runas.as_deref().filter(|u| {
            nix::unistd::User::from_uid(nix::unistd::geteuid())
                .ok()
                .flatten()
                .is_none_or(|me| me.name != *u)
        });
        if let Some(u) = as_other {
            argv.extend(["runuser", "-u", u, "--"].map(String::from));
        }
        argv.extend(
            [
                "psql",
                "--no-align",
                "--no-readline",
                "--no-psqlrc",
                "--no-password",
            ]
            .map(String::from),
        );
        if let Some(u) = &self.user {
            argv.extend(["--username".into(), u.clone()]);
        }
        if let Some(h) = &self.host {
            argv.extend(["--host".into(), h.clone()]);
        }
        if let Some(p) = &self.port {
            argv.extend(["--port".into(), p.clone()]);
        }
        let db = self.maintenance_db.as_deref().unwrap_or("postgres");
        argv.extend(["--dbname".into(), db.to_owned()]);
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        if let Some(pw) = &self.password {
            cmd.env("PGPASSWORD", pw);
        }
        let run = cmd.output();
        let out = if self.timeout > 0 {
            tokio::time::timeout(Duration::from_secs(self.timeout), run)
                .await
                .map_err(|_| {
                    StateError(format!(
                        "psql timed out after {} seconds (postgres.timeout)",
                        self.timeout
                    ))
                })?
        } else {
            run.await
        };
        let out = out.map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StateError(format!("{}: command not found", argv[0])),
            _ => StateError(format!("failed to run {}: {e}", argv[0])),
        })?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            tracing::error!("Error connecting to Postgresql server: {}", stderr.trim());
        }
        Ok((
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr,
        ))
    }

    /// One statement; whether psql succeeded.
    async fn run(&self, sql: &str) -> Result<bool, StateError> {
        Ok(self.psql(&["-c", sql]).await?.0 == 0)
    }

    /// `postgres.psql_query`: the rows as maps of column to text (empty on an error).
    pub(crate) async fn query(&self, sql: &str) -> Result<Vec<Map<String, Value>>, StateError> {
        let copy = format!(
            "COPY ({}) TO STDOUT WITH CSV HEADER",
            sql.trim().trim_end_matches(';')
        );
        let (code, out, _) = self.psql(&["-v", "datestyle=ISO,MDY", "-c", &copy]).await?;
        if code != 0 {
            return Ok(Vec::new());
        }
        let mut rows = parse_csv(&out).into_iter().filter(|r| !r.is_empty());
        let Some(header) = rows.next() else {
            return Ok(Vec::new());
        };
        Ok(rows
            .map(|r| {
                header
                    .iter()
                    .cloned()
                    .zip(r.into_iter().map(Value::String))
                    .collect()
            })
            .collect())
    }

    /// `postgres.db_list`: database name to its row.
    async fn db_list(&self) -> Result<Map<String, Value>, StateError> {
        let rows = self
            .query(
                "SELECT datname as \"Name\", pga.rolname as \"Owner\", \
                 pg_encoding_to_char(encoding) as \"Encoding\", datcollate as \"Collate\", \
                 datctype as \"Ctype\", datacl as \"Access privileges\", spcname as \
                 \"Tablespace\" FROM pg_database pgd, pg_roles pga, pg_tablespace pgts \
                 WHERE pga.oid = pgd.datdba AND pgts.oid = pgd.dattablespace",
            )
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|mut r| {
                let name = python::str(&r.remove("Name")?);
                Some((name, Value::Object(r)))
            })
            .collect())
    }

    /// `postgres.role_get`: the role's attributes, `None` when it does not exist.
    async fn role_get(
        &self,
        name: &str,
        with_password: bool,
    ) -> Result<Option<Map<String, Value>>, StateError> {
        let pw = |s: &'static str| if with_password { s } else { "" };
        let sql = format!(
            "SELECT pg_roles.rolname as \"name\",pg_roles.rolsuper as \"superuser\", \
             pg_roles.rolinherit as \"inherits privileges\", pg_roles.rolcreaterole as \
             \"can create roles\", pg_roles.rolcreatedb as \"can create databases\", \
             pg_roles.rolcanlogin as \"can login\", pg_roles.rolreplication as \
             \"replication\", (SELECT array_agg(pg_roles2.rolname) FROM \
             pg_catalog.pg_auth_members JOIN pg_catalog.pg_roles pg_roles2 ON \
             (pg_auth_members.roleid = pg_roles2.oid) WHERE pg_auth_members.member = \
             pg_roles.oid) as \"groups\",pg_roles.rolvaliduntil::timestamp(0) as \
             \"expiry time\" {}FROM pg_roles {}{}",
            pw(", COALESCE(pg_shadow.passwd, pg_authid.rolpassword) as \"password\" "),
            pw("LEFT JOIN pg_authid ON pg_roles.oid = pg_authid.oid "),
            pw("LEFT JOIN pg_shadow ON pg_roles.oid = pg_shadow.usesysid"),
        );
        let rows = self.query(&sql).await?;
        let Some(row) = rows.into_iter().find(|r| r["name"] == name) else {
            return Ok(None);
        };
        let mut out = Map::new();
        for key in [
            "superuser",
            "inherits privileges",
            "can create roles",
            "can create databases",
            "can login",
            "replication",
        ] {
            out.insert(
                key.into(),
                match row[key].as_str() {
                    Some("t") => json!(true),
                    Some("f") => json!(false),
                    _ => Value::Null,
                },
            );
        }
        out.insert("expiry time".into(), row["expiry time"].clone());
        if let Some(p) = row.get("password") {
            out.insert("password".into(), p.clone());
        }
        let groups = row["groups"].as_str().unwrap_or_default();
        let groups = groups.trim_matches(|c| c == '{' || c == '}');
        let groups: Vec<Value> = parse_csv(groups)
            .into_iter()
            .next()
            .unwrap_or_default()
            .into_iter()
            .map(Value::String)
            .collect();
        out.insert("groups".into(), Value::Array(groups));
        Ok(Some(out))
    }

    /// `postgres.schema_list` on `db`: schema names.
    async fn schema_exists(&self, db: &str, name: &str) -> Result<bool, StateError> {
        let rows = self
            .on_db(db)
            .query(
                "SELECT pg_namespace.nspname as \"name\",pg_namespace.nspacl as \"acl\", \
                 pg_roles.rolname as \"owner\" FROM pg_namespace LEFT JOIN pg_roles ON \
                 pg_roles.oid = pg_namespace.nspowner ",
            )
            .await?;
        Ok(rows.iter().any(|r| r["name"] == name))
    }

    /// `postgres.installed_extensions`' row for `name`.
    async fn installed_extension(
        &self,
        name: &str,
    ) -> Result<Option<Map<String, Value>>, StateError> {
        let rows = self
            .query(
                "select a.*, b.nspname as schema_name from pg_extension a,  pg_namespace b \
                 where a.extnamespace = b.oid;",
            )
            .await?;
        Ok(rows.into_iter().find(|r| r["extname"] == name))
    }

    /// `postgres.create_metadata`: (installed, to upgrade, to move).
    async fn ext_metadata(
        &self,
        name: &str,
        version: Option<&str>,
        schema: Option<&str>,
    ) -> Result<(bool, bool, bool), StateError> {
        let Some(ext) = self.installed_extension(name).await? else {
            return Ok((false, false, false));
        };
        let upgrade = version.is_some_and(|want| {
            let have = ext
                .get("extversion")
                .and_then(Value::as_str)
                .unwrap_or(want);
            loose_lt(have, want)
        });
        let relocatable = ext.get("extrelocatable").and_then(Value::as_str) == Some("t");
        let moved = schema.is_some_and(|s| {
            relocatable && ext.get("schema_name").and_then(Value::as_str).unwrap_or(s) != s
        });
        Ok((true, upgrade, moved))
    }
}

/// Python's `LooseVersion(a) < LooseVersion(b)`: numbers compared as numbers, the rest as
/// text (a number against text compares as text, where Python would raise).
fn loose_lt(a: &str, b: &str) -> bool {
    fn parts(s: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut cur = String::new();
        for c in s.chars() {
            let boundary = cur
                .chars()
                .last()
                .is_some_and(|l| l.is_ascii_digit() != c.is_ascii_digit());
            if c == '.' || boundary {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                if c == '.' {
                    continue;
                }
            }
            cur.push(c);
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out
    }
    let (pa, pb) = (parts(a), parts(b));
    for (x, y) in pa.iter().zip(&pb) {
        let ord = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(i), Ok(j)) => i.cmp(&j),
            _ => x.cmp(y),
        };
        if ord != std::cmp::Ordering::Equal {
            return ord == std::cmp::Ordering::Less;
        }
    }
    pa.len() < pb.len()
}

/// Rows of a CSV text as Python's `csv.reader` with `,` and `"` reads them.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut in_field = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' if field.is_empty() => {
                quoted = true;
                in_field = true;
            }
            ',' => {
                row.push(std::mem::take(&mut field));
                in_field = true;
            }
            '\r' => {}
            '\n' => {
                if in_field || !field.is_empty() {
                    row.push(std::mem::take(&mut field));
                }
                rows.push(std::mem::take(&mut row));
                in_field = false;
            }
            c => {
                field.push(c);
                in_field = true;
            }
        }
    }
    if in_field || !field.is_empty() {
        row.push(field);
    }
    if !row.is_empty() {
        rows.push(row);
    }
    rows
}

/// Salt's `_quote_ddl_value`: the value in `quote`s, refusing a value holding the quote.
fn quote_ddl(value: &str, quote: char) -> Result<String, StateError> {
    if value.contains(quote) {
        return Err(StateError(format!(
            "Unsupported character {quote} in value: {value}"
        )));
    }
    Ok(format!("{quote}{value}{quote}"))
}

fn arg_str(call: &StateCall, key: &str) -> Option<String> {
    opt_str(call.arg(key))
}

async fn database_present(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    ret.comment = format!("Database {name} is already present");
    let conn = Conn::from_call(&call);
    let tablespace = arg_str(&call, "tablespace");
    let encoding = arg_str(&call, "encoding");
    let lc_collate = arg_str(&call, "lc_collate");
    let lc_ctype = arg_str(&call, "lc_ctype");
    let owner = arg_str(&call, "owner");
    let dbs = conn.db_list().await?;
    let params = dbs.get(&name);
    let field = |k: &str| params.and_then(|p| p.get(k)).and_then(Value::as_str);
    let same = |k: &str, want: &Option<String>| want.as_deref().is_none_or(|w| field(k) == Some(w));
    let enc_same = encoding
        .as_deref()
        .is_none_or(|e| field("Encoding").is_some_and(|f| f.to_lowercase() == e.to_lowercase()));
    if params.is_some()
        && same("Tablespace", &tablespace)
        && enc_same
        && same("Collate", &lc_collate)
        && same("Ctype", &lc_ctype)
        && same("Owner", &owner)
    {
        return Ok(ret);
    }
    if params.is_some() && (!enc_same || !same("Collate", &lc_collate) || !same("Ctype", &lc_ctype))
    {
        ret.comment =
            format!("Database {name} has wrong parameters which couldn't be changed on fly.");
        ret.result = Some(false);
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        ret.comment = if params.is_none() {
            format!("Database {name} is set to be created")
        } else {
            format!("Database {name} exists, but parameters need to be changed")
        };
        return Ok(ret);
    }
    if params.is_none() {
        let mut sql = format!("CREATE DATABASE \"{name}\"");
        let mut with = Vec::new();
        let template = arg_str(&call, "template");
        for (key, value) in [
            (
                "TABLESPACE",
                tablespace.map(|v| quote_ddl(&v, '"')).transpose()?,
            ),
            ("OWNER", owner.map(|v| quote_ddl(&v, '"')).transpose()?),
            ("TEMPLATE", template),
            (
                "ENCODING",
                encoding.map(|v| quote_ddl(&v, '\'')).transpose()?,
            ),
            (
                "LC_COLLATE",
                lc_collate.map(|v| quote_ddl(&v, '\'')).transpose()?,
            ),
            (
                "LC_CTYPE",
                lc_ctype.map(|v| quote_ddl(&v, '\'')).transpose()?,
            ),
        ] {
            if let Some(v) = value {
                with.extend([key.to_owned(), "=".to_owned(), v]);
            }
        }
        if !with.is_empty() {
            with.insert(0, " WITH".to_owned());
            sql.push_str(&with.join(" "));
        }
        if conn.run(&sql).await? {
            ret.comment = format!("The database {name} has been created");
            ret.changes.insert(name.clone(), json!("Present"));
        } else {
            ret.comment = format!("Failed to create database {name}");
            ret.result = Some(false);
        }
        return Ok(ret);
    }
    let recurse = call.arg("owner_recurse").is_some_and(python::truthy);
    let mut ok = true;
    if let Some(o) = &owner {
        if recurse {
            ok &= owner_to(&conn, &name, o).await?;
        } else {
            ok &= conn
                .run(&format!("ALTER DATABASE \"{name}\" OWNER TO \"{o}\""))
                .await?;
        }
    }
    if let Some(t) = &tablespace
        && !(owner.is_some() && recurse)
    {
        ok = conn
            .run(&format!("ALTER DATABASE \"{name}\" SET TABLESPACE \"{t}\""))
            .await?;
    }
    if ok {
        ret.comment = format!("Parameters for database {name} have been changed");
        ret.changes
            .insert(name.clone(), json!("Parameters changed"));
    } else {
        ret.comment = format!("Failed to change parameters for database {name}");
        ret.result = Some(false);
    }
    Ok(ret)
}

/// `postgres.owner_to`: the database and every table, sequence and function in it owned by
/// `owner`.
async fn owner_to(conn: &Conn, db: &str, owner: &str) -> Result<bool, StateError> {
    let mut sql = vec![format!("ALTER DATABASE \"{db}\" OWNER TO \"{owner}\";")];
    let inner = conn.on_db(db);
    for (q, kind) in [
        (
            "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = 'public'",
            "TABLE",
        ),
        (
            "SELECT relname FROM pg_catalog.pg_class WHERE relkind = 'S'",
            "SEQUENCE",
        ),
    ] {
        for row in inner.query(q).await? {
            if let Some(n) = row.values().next() {
                sql.push(format!(
                    "ALTER {kind} \"{}\" OWNER TO \"{owner}\";",
                    python::str(n)
                ));
            }
        }
    }
    let mut ok = conn.run(&sql[0]).await?;
    if sql.len() > 1 {
        ok &= inner.run(&sql[1..].join(" ")).await?;
    }
    Ok(ok)
}

async fn database_absent(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    let conn = Conn::from_call(&call);
    if conn.db_list().await?.contains_key(&name) {
        if call.test {
            ret.result = None;
            ret.comment = format!("Database {name} is set to be removed");
            return Ok(ret);
        }
        for sql in [
            format!("REVOKE CONNECT ON DATABASE \"{name}\" FROM public;"),
            format!(
                "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \
                 '{name}' AND pid <> pg_backend_pid();"
            ),
            format!("DROP DATABASE \"{name}\";"),
        ] {
            let (code, out, err) = conn.psql(&["-c", &sql]).await?;
            if code != 0 {
                return Err(StateError(format!(
                    "Failed: ret={{'pid': 0, 'retcode': {code}, 'stdout': {}, 'stderr': {}}}",
                    python::repr(&json!(out.trim_end())),
                    python::repr(&json!(err.trim_end()))
                )));
            }
        }
        ret.comment = format!("Database {name} has been removed");
        ret.changes.insert(name.clone(), json!("Absent"));
        return Ok(ret);
    }
    ret.comment = format!("Database {name} is not present, so it cannot be removed");
    Ok(ret)
}

/// Salt's `_md5_password`.
fn md5_password(role: &str, password: &str) -> String {
    let digest = Md5::digest(format!("{password}{role}").as_bytes());
    format!(
        "md5{}",
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    )
}

/// The password method: `encrypted` as Salt takes it (`True` is md5, default md5).
#[derive(Clone, Copy, PartialEq)]
enum Method {
    Md5,
    Scram,
    Plain,
}

fn method(v: Option<&Value>) -> Result<Method, StateError> {
    match v {
        None | Some(Value::Bool(true)) => Ok(Method::Md5),
        Some(Value::Bool(false)) => Ok(Method::Plain),
        Some(Value::String(s)) if s == "md5" => Ok(Method::Md5),
        Some(Value::String(s)) if s == "scram-sha-256" => Ok(Method::Scram),
        Some(other) => Err(StateError(format!(
            "Unknown password algorithm: {}",
            python::str(other)
        ))),
    }
}

/// Salt's `_maybe_encrypt_password` (scram-sha-256 is left to the server: the password is
/// sent as given and PostgreSQL hashes it with its `password_encryption`).
fn encrypt_password(role: &str, password: &str, m: Method) -> String {
    match m {
        Method::Md5 if !password.starts_with("md5") => md5_password(role, password),
        _ => password.to_owned(),
    }
}

/// Salt's `_verify_password` for md5 and plain text; a scram verifier is checked by
/// logging in with the password (what the verifier proves).
async fn verify_password(
    conn: &Conn,
    role: &str,
    password: &str,
    verifier: &str,
    m: Method,
) -> Result<bool, StateError> {
    Ok(match m {
        Method::Md5 => verifier == encrypt_password(role, password, m),
        Method::Plain => verifier == password,
        Method::Scram if password.starts_with("SCRAM-SHA-256") => verifier == password,
        Method::Scram => {
            if !verifier.starts_with("SCRAM-SHA-256$") {
                return Ok(false);
            }
            let probe = Conn {
                user: Some(role.to_owned()),
                password: Some(password.to_owned()),
                runas: None,
                host: conn.host.clone().or_else(|| Some("127.0.0.1".into())),
                ..conn.clone()
            };
            probe.psql(&["-c", "SELECT 1"]).await?.0 == 0
        }
    })
}

/// Salt's `_role_cmd_args`: the flags after `CREATE ROLE "x" WITH` / `ALTER ROLE "x" WITH`.
#[allow(clippy::too_many_arguments)]
fn role_cmd_args(
    name: &str,
    mut sub: String,
    m: Method,
    flags: &[(&str, Option<bool>)],
    password: Option<&str>,
    valid_until: Option<&str>,
    groups: &[String],
    skip_superuser: bool,
) -> String {
    for (flag, test) in flags {
        if *flag == "SUPERUSER" && skip_superuser {
            continue;
        }
        match test {
            Some(true) => sub = format!("{sub} {flag}"),
            Some(false) => sub = format!("{sub} NO{flag}"),
            None => {}
        }
    }
    if let Some(pw) = password.filter(|p| !p.is_empty()) {
        sub = format!(
            "{sub} {}ENCRYPTED",
            if m == Method::Plain { "UN" } else { "" }
        );
        let pw = encrypt_password(name, &pw.replace('\'', "''"), m);
        sub = format!("{sub} PASSWORD '{pw}'");
    }
    if let Some(v) = valid_until {
        sub = if v.is_empty() {
            format!("{sub} NOVALID UNTIL")
        } else {
            format!("{sub} VALID UNTIL '{}'", v.replace('\'', "''"))
        };
    }
    if sub.ends_with("WITH") {
        sub = sub.replacen(" WITH", "", 1);
    }
    for g in groups {
        sub = format!("{sub}; GRANT \"{g}\" TO \"{name}\"");
    }
    sub
}

/// `groups` as Salt takes it: a comma-separated string or a list.
fn group_list(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => s.split(',').map(str::to_owned).collect(),
        Some(Value::Array(a)) => a.iter().map(python::str).collect(),
        _ => Vec::new(),
    }
}

fn opt_bool(call: &StateCall, key: &str) -> Option<bool> {
    call.arg(key).map(python::truthy)
}

async fn user_present(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    ret.comment = format!("User {name} is already present");
    let conn = Conn::from_call(&call);
    let m = method(call.arg("encrypted"))?;
    let refresh = call.arg("refresh_password").is_some_and(python::truthy);
    let attr = conn.role_get(&name, !refresh).await?;
    let mode = if attr.is_some() { "update" } else { "create" };
    let mut password = arg_str(&call, "password");
    if attr.is_none() && password.is_none() {
        password = arg_str(&call, "default_password");
    }
    if let (Some(pw), Some(a)) = (&password, &attr)
        && !refresh
    {
        let verifier = a
            .get("password")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if verify_password(&conn, &name, pw, verifier, m).await? {
            password = None;
        }
    }
    let createdb = opt_bool(&call, "createdb");
    let createroles = opt_bool(&call, "createroles");
    let superuser = opt_bool(&call, "superuser");
    let replication = opt_bool(&call, "replication");
    let inherit = opt_bool(&call, "inherit");
    let login = opt_bool(&call, "login");
    let valid_until = arg_str(&call, "valid_until");
    let groups = call.arg("groups").map(|g| group_list(Some(g)));
    let mut update = Map::new();
    if let Some(a) = &attr {
        for (key, want, have) in [
            ("createdb", createdb, "can create databases"),
            ("inherit", inherit, "inherits privileges"),
            ("login", login, "can login"),
            ("createroles", createroles, "can create roles"),
            ("replication", replication, "replication"),
            ("superuser", superuser, "superuser"),
        ] {
            if let Some(w) = want
                && a.get(have) != Some(&json!(w))
            {
                update.insert(key.into(), json!(w));
            }
        }
        if password.is_some() {
            update.insert("password".into(), json!(true));
        }
        if let Some(v) = &valid_until {
            let rows = conn
                .query(&format!(
                    "SELECT '{}'::timestamp(0) as dt;",
                    v.replace('\'', "''")
                ))
                .await?;
            let dt = rows
                .first()
                .and_then(|r| r.get("dt"))
                .cloned()
                .unwrap_or(Value::Null);
            let have = a.get("expiry time").cloned().unwrap_or(Value::Null);
            let have = if have == json!("") { Value::Null } else { have };
            if dt != have {
                update.insert("valid_until".into(), json!(v));
            }
        }
        if let Some(g) = &groups {
            let have: Vec<String> = a
                .get("groups")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(python::str)
                .collect();
            let missing: Vec<Value> = g
                .iter()
                .filter(|x| !have.contains(x))
                .map(|x| json!(x))
                .collect();
            if !missing.is_empty() {
                update.insert("groups".into(), Value::Array(missing));
            }
        }
    }
    if attr.is_some() && update.is_empty() {
        return Ok(ret);
    }
    if call.test {
        if !update.is_empty() {
            ret.changes.insert(name.clone(), Value::Object(update));
        }
        ret.result = None;
        ret.comment = format!("User {name} is set to be {mode}d");
        return Ok(ret);
    }
    let is_create = attr.is_none();
    // A user (not a role): inherits and logs in unless told otherwise.
    let flags = [
        ("INHERIT", inherit.or(Some(true))),
        ("CREATEDB", createdb),
        ("CREATEROLE", createroles),
        ("SUPERUSER", superuser),
        ("REPLICATION", replication),
        (
            "LOGIN",
            if is_create {
                login.or(Some(true))
            } else {
                login
            },
        ),
    ];
    let flags: Vec<(&str, Option<bool>)> = if is_create {
        flags.to_vec()
    } else {
        // Salt's update passes the `role` type: no inherit/login defaults.
        let mut f = flags.to_vec();
        f[0].1 = inherit;
        f
    };
    let skip_superuser = attr.as_ref().is_some_and(|a| {
        superuser.unwrap_or(false) == a.get("superuser").is_some_and(python::truthy)
    });
    let verb = if is_create { "CREATE" } else { "ALTER" };
    let sql = role_cmd_args(
        &name,
        format!("{verb} ROLE \"{name}\" WITH"),
        m,
        &flags,
        password.as_deref(),
        valid_until.as_deref(),
        groups.as_deref().unwrap_or_default(),
        skip_superuser,
    );
    if conn.run(&sql).await? {
        ret.comment = format!("The user {name} has been {mode}d");
        let change = if update.is_empty() {
            json!("Present")
        } else {
            Value::Object(update)
        };
        ret.changes.insert(name.clone(), change);
    } else {
        ret.comment = format!("Failed to {mode} user {name}");
        ret.result = Some(false);
    }
    Ok(ret)
}

async fn user_absent(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    let conn = Conn::from_call(&call);
    if conn.role_get(&name, false).await?.is_none() {
        ret.comment = format!("User {name} is not present, so it cannot be removed");
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        ret.comment = format!("User {name} is set to be removed");
        return Ok(ret);
    }
    conn.run(&format!("DROP ROLE \"{name}\"")).await?;
    if conn.role_get(&name, false).await?.is_none() {
        ret.comment = format!("User {name} has been removed");
        ret.changes.insert(name.clone(), json!("Absent"));
    } else {
        ret.result = Some(false);
        ret.comment = format!("User {name} failed to be removed");
    }
    Ok(ret)
}

async fn schema_present(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let dbname = arg_str(&call, "dbname").unwrap_or_default();
    let mut ret = Ret::new(&name);
    ret.extra.insert("dbname".into(), json!(dbname));
    let conn = Conn::from_call(&call);
    if conn.schema_exists(&dbname, &name).await? {
        ret.comment = format!("Schema {name} already exists in database {dbname}");
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        ret.comment = format!("Schema {name} is set to be created in database {dbname}.");
        return Ok(ret);
    }
    let mut sql = format!("CREATE SCHEMA \"{name}\"");
    if let Some(o) = arg_str(&call, "owner") {
        sql = format!("{sql} AUTHORIZATION \"{o}\"");
    }
    if conn.on_db(&dbname).run(&sql).await? {
        ret.comment = format!("Schema {name} has been created in database {dbname}");
        ret.changes.insert(name.clone(), json!("Present"));
    } else {
        ret.comment = format!("Failed to create schema {name} in database {dbname}");
        ret.result = Some(false);
    }
    Ok(ret)
}

async fn schema_absent(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let dbname = arg_str(&call, "dbname").unwrap_or_default();
    let mut ret = Ret::new(&name);
    ret.extra.insert("dbname".into(), json!(dbname));
    let conn = Conn::from_call(&call);
    if !conn.schema_exists(&dbname, &name).await? {
        ret.comment =
            format!("Schema {name} is not present in database {dbname}, so it cannot be removed");
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        ret.comment = format!("Schema {name} is set to be removed from database {dbname}");
        return Ok(ret);
    }
    conn.on_db(&dbname)
        .run(&format!("DROP SCHEMA \"{name}\""))
        .await?;
    if conn.schema_exists(&dbname, &name).await? {
        ret.result = Some(false);
        ret.comment = format!("Schema {name} failed to be removed");
    } else {
        ret.comment = format!("Schema {name} has been removed from database {dbname}");
        ret.changes.insert(name.clone(), json!("Absent"));
    }
    Ok(ret)
}

async fn extension_present(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    ret.comment = format!("Extension {name} is already present");
    let conn = Conn::from_call(&call);
    let schema = arg_str(&call, "schema");
    let version = arg_str(&call, "ext_version");
    let from = arg_str(&call, "from_version");
    let (installed, upgrade, moved) = conn
        .ext_metadata(&name, version.as_deref(), schema.as_deref())
        .await?;
    if installed && !upgrade && !moved {
        return Ok(ret);
    }
    let mode = if installed { "upgrade" } else { "install" };
    if call.test {
        ret.result = None;
        ret.comment = format!("Extension {name} is set to be {mode}ed").replace("eed", "ed");
        return Ok(ret);
    }
    // postgres.create_extension
    let available = conn
        .query("select * from pg_available_extensions();")
        .await?
        .iter()
        .any(|r| {
            r.get("name").and_then(Value::as_str).map(str::to_lowercase)
                == Some(name.to_lowercase())
        });
    if available {
        let sql = if !installed {
            let if_not_exists = call.arg("if_not_exists").is_none_or(python::truthy);
            let mut args = vec!["CREATE EXTENSION".to_owned()];
            if if_not_exists {
                args.push("IF NOT EXISTS".into());
            }
            args.push(format!("\"{name}\""));
            let mut with = Vec::new();
            if let Some(s) = &schema {
                with.push(format!("SCHEMA \"{s}\""));
            }
            if let Some(v) = &version {
                with.push(format!("VERSION {v}"));
            }
            if let Some(f) = &from {
                with.push(format!("FROM {f}"));
            }
            if !with.is_empty() {
                args.push("WITH".into());
                args.extend(with);
            }
            args.push(";".into());
            args.join(" ")
        } else {
            let mut args = Vec::new();
            if let (Some(s), true) = (&schema, moved) {
                args.push(format!("ALTER EXTENSION \"{name}\" SET SCHEMA \"{s}\";"));
            }
            if let (Some(v), true) = (&version, upgrade) {
                args.push(format!("ALTER EXTENSION \"{name}\" UPDATE TO {v};"));
            }
            args.join(" ")
        };
        if !sql.is_empty() {
            conn.run(&sql).await?;
        }
    }
    let (installed, upgrade, moved) = conn
        .ext_metadata(&name, version.as_deref(), schema.as_deref())
        .await?;
    if installed && !upgrade && !moved {
        let suffix = if mode.ends_with('e') { "d" } else { "ed" };
        ret.comment = format!("The extension {name} has been {mode}{suffix}");
        let mut cap = mode.to_owned();
        cap[..1].make_ascii_uppercase();
        ret.changes
            .insert(name.clone(), json!(format!("{cap}{suffix}")));
    } else {
        ret.comment = format!("Failed to {mode} extension {name}");
        ret.result = Some(false);
    }
    Ok(ret)
}

async fn extension_absent(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    let conn = Conn::from_call(&call);
    if conn.installed_extension(&name).await?.is_none() {
        ret.comment = format!("Extension {name} is not present, so it cannot be removed");
        return Ok(ret);
    }
    if call.test {
        ret.result = None;
        ret.comment = format!("Extension {name} is set to be removed");
        return Ok(ret);
    }
    let mut args = vec!["DROP EXTENSION".to_owned()];
    if call.arg("if_exists").is_some_and(python::truthy) {
        args.push("IF EXISTS".into());
    }
    args.push(name.clone());
    if call.arg("cascade").is_none_or(python::truthy) {
        args.push("CASCADE".into());
    }
    if call.arg("restrict").is_some_and(python::truthy) {
        args.push("RESTRICT".into());
    }
    args.push(";".into());
    conn.run(&args.join(" ")).await?;
    if conn.installed_extension(&name).await?.is_none() {
        ret.comment = format!("Extension {name} has been removed");
        ret.changes.insert(name.clone(), json!("Absent"));
    } else {
        ret.result = Some(false);
        ret.comment = format!("Extension {name} failed to be removed");
    }
    Ok(ret)
}

/// Salt's `_PRIVILEGES_MAP`: an ACL letter and the privilege it stands for.
const PRIVILEGE_LETTERS: &[(char, &str)] = &[
    ('a', "INSERT"),
    ('C', "CREATE"),
    ('D', "TRUNCATE"),
    ('c', "CONNECT"),
    ('t', "TRIGGER"),
    ('r', "SELECT"),
    ('U', "USAGE"),
    ('T', "TEMPORARY"),
    ('w', "UPDATE"),
    ('X', "EXECUTE"),
    ('x', "REFERENCES"),
    ('d', "DELETE"),
    ('m', "MAINTAIN"),
    ('*', "GRANT"),
];

fn privilege_of(letter: char) -> &'static str {
    PRIVILEGE_LETTERS
        .iter()
        .find(|(l, _)| *l == letter)
        .map_or("?", |(_, p)| p)
}

/// Salt's `_PRIVILEGE_TYPE_MAP`: the ACL letters each object type has.
fn type_letters(object_type: &str) -> Option<&'static str> {
    Some(match object_type {
        "table" => "arwdDxtm",
        "tablespace" => "C",
        "language" => "U",
        "sequence" => "rwU",
        "schema" => "UC",
        "database" => "CTc",
        "function" => "X",
        _ => return None,
    })
}

/// The privileges argument as Salt's state joins it and `_mod_priv_opts` splits it.
fn privilege_args(call: &StateCall) -> (Option<String>, Vec<String>) {
    let joined = match call.arg("privileges") {
        Some(Value::Array(a)) if !a.is_empty() => {
            Some(a.iter().map(python::str).collect::<Vec<_>>().join(","))
        }
        Some(Value::String(s)) if !s.is_empty() => {
            Some(s.chars().map(String::from).collect::<Vec<_>>().join(","))
        }
        _ => None,
    };
    let split = regex::Regex::new(r"\s?,\s?").expect("the privileges separator compiles");
    let privs = split
        .split(&joined.clone().unwrap_or_default().to_uppercase())
        .map(str::to_owned)
        .collect();
    (joined, privs)
}

/// Salt's `_validate_privileges`.
fn validate_privileges(
    object_type: &str,
    privs: &[String],
    privileges: Option<&str>,
) -> Result<(), StateError> {
    if object_type == "group" {
        if privileges.is_some() {
            return Err(StateError(
                "The privileges option should not be set for object_type group".into(),
            ));
        }
        return Ok(());
    }
    let letters = type_letters(object_type)
        .ok_or_else(|| StateError(format!("Invalid object_type: {object_type} provided")))?;
    let mut allowed: Vec<&str> = letters.chars().map(privilege_of).collect();
    allowed.push("ALL");
    if !privs.iter().all(|p| allowed.contains(&p.as_str())) {
        return Err(StateError(format!(
            "Invalid privilege(s): {} provided for object {object_type}",
            privileges.unwrap_or("")
        )));
    }
    Ok(())
}

impl Conn {
    /// Salt's `_get_object_owner`.
    async fn object_owner(
        &self,
        name: &str,
        object_type: &str,
        prepend: &str,
    ) -> Result<Option<String>, StateError> {
        let sql = match object_type {
            "table" => format!(
                "SELECT tableowner AS name FROM pg_tables WHERE schemaname = '{prepend}' AND \
                 tablename = '{name}'"
            ),
            "sequence" => format!(
                "SELECT rolname AS name FROM pg_catalog.pg_class c JOIN pg_roles r ON \
                 c.relowner = r.oid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                 WHERE relkind='S' AND nspname='{prepend}' AND relname = '{name}'"
            ),
            "schema" => format!(
                "SELECT rolname AS name FROM pg_namespace n JOIN pg_roles r ON n.nspowner = \
                 r.oid WHERE nspname = '{name}'"
            ),
            "function" => format!(
                "SELECT rolname AS name FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace \
                 n ON n.oid = p.pronamespace JOIN pg_catalog.pg_roles r ON p.proowner = r.oid \
                 WHERE nspname = '{prepend}' AND p.oid::regprocedure::text = '{name}' ORDER BY \
                 proname, proargtypes"
            ),
            "tablespace" => format!(
                "SELECT rolname AS name FROM pg_tablespace t JOIN pg_roles r ON t.spcowner = \
                 r.oid WHERE spcname = '{name}'"
            ),
            "language" => format!(
                "SELECT rolname AS name FROM pg_language l JOIN pg_roles r ON l.lanowner = \
                 r.oid WHERE lanname = '{name}'"
            ),
            _ => format!(
                "SELECT rolname AS name FROM pg_database d JOIN pg_roles r ON d.datdba = r.oid \
                 WHERE datname = '{name}'"
            ),
        };
        Ok(self
            .query(&sql)
            .await?
            .first()
            .and_then(|r| r.get("name"))
            .map(python::str))
    }

    /// Salt's `privileges_list`: role to its privileges (privilege to grant option), or for
    /// a group, member to admin option.
    async fn privileges_list(
        &self,
        name: &str,
        object_type: &str,
        prepend: &str,
    ) -> Result<Map<String, Value>, StateError> {
        let acl = |col: &str, from: &str, cond: String, order: &str| {
            format!("SELECT {col} AS name FROM {from} WHERE {cond} ORDER BY {order}")
        };
        let sql = match object_type {
            "table" | "sequence" => acl(
                "relacl",
                "pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace",
                format!(
                    "nspname = '{prepend}' AND relname = '{name}' AND relkind {}",
                    if object_type == "table" {
                        "in ('r', 'v')"
                    } else {
                        "= 'S'"
                    }
                ),
                "relname",
            ),
            "schema" => acl(
                "nspacl",
                "pg_catalog.pg_namespace",
                format!("nspname = '{name}'"),
                "nspname",
            ),
            "function" => acl(
                "proacl",
                "pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace",
                format!("nspname = '{prepend}' AND p.oid::regprocedure::text = '{name}'"),
                "proname, proargtypes",
            ),
            "tablespace" => acl(
                "spcacl",
                "pg_catalog.pg_tablespace",
                format!("spcname = '{name}'"),
                "spcname",
            ),
            "language" => acl(
                "lanacl",
                "pg_catalog.pg_language",
                format!("lanname = '{name}'"),
                "lanname",
            ),
            "database" => acl(
                "datacl",
                "pg_catalog.pg_database",
                format!("datname = '{name}'"),
                "datname",
            ),
            _ => format!(
                "SELECT rolname, admin_option FROM pg_catalog.pg_auth_members m JOIN \
                 pg_catalog.pg_roles r ON m.member=r.oid WHERE m.roleid IN (SELECT oid FROM \
                 pg_catalog.pg_roles WHERE rolname='{name}') ORDER BY rolname"
            ),
        };
        let mut ret = Map::new();
        for row in self.query(&sql).await? {
            if object_type == "group" {
                ret.insert(
                    python::str(&row["rolname"]),
                    json!(row["admin_option"] == "t"),
                );
                continue;
            }
            let text = python::str(&row["name"]);
            let text = text.trim_matches(|c| c == '{' || c == '}');
            if text.is_empty() {
                continue;
            }
            for part in text.split(',') {
                let perms_part = part.split('/').next().unwrap_or_default();
                let (role, perms) = perms_part.split_once('=').unwrap_or((perms_part, ""));
                let role = if role.is_empty() { "public" } else { role };
                let mut privs = Map::new();
                let mut previous: Option<&str> = None;
                for letter in perms.chars() {
                    if letter == '*'
                        && let Some(p) = previous
                    {
                        privs.insert(p.into(), json!(true));
                    } else {
                        let p = privilege_of(letter);
                        privs.insert(p.into(), json!(false));
                        previous = Some(p);
                    }
                }
                ret.insert(role.to_owned(), Value::Object(privs));
            }
        }
        Ok(ret)
    }

    /// Salt's `has_privileges`.
    #[allow(clippy::too_many_arguments)]
    async fn has_privileges(
        &self,
        name: &str,
        object_name: &str,
        object_type: &str,
        privileges: Option<&str>,
        privs: &[String],
        grant_option: bool,
        prepend: &str,
    ) -> Result<bool, StateError> {
        validate_privileges(object_type, privs, privileges)?;
        if object_type != "group"
            && self
                .object_owner(object_name, object_type, prepend)
                .await?
                .as_deref()
                == Some(name)
        {
            return Ok(true);
        }
        let list = self
            .privileges_list(object_name, object_type, prepend)
            .await?;
        let Some(have) = list.get(name) else {
            return Ok(false);
        };
        if object_type == "group" {
            return Ok(!grant_option || python::truthy(have));
        }
        let letters = type_letters(object_type).unwrap_or_default();
        let all: Vec<&str> = letters.chars().map(privilege_of).collect();
        let have = have.as_object().cloned().unwrap_or_default();
        if grant_option {
            let want: Map<String, Value> =
                all.iter().map(|p| ((*p).to_owned(), json!(true))).collect();
            return Ok(want == have);
        }
        if privs.iter().any(|p| p == "ALL") {
            let mut a: Vec<&str> = all.clone();
            let mut b: Vec<&str> = have.keys().map(String::as_str).collect();
            a.sort_unstable();
            b.sort_unstable();
            return Ok(a == b);
        }
        Ok(privs.iter().all(|p| have.contains_key(p)))
    }
}

async fn privileges_present(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    ret.comment = "The requested privilege(s) are already set".into();
    let conn = Conn::from_call(&call);
    let object_name = arg_str(&call, "object_name").unwrap_or_default();
    let object_type = arg_str(&call, "object_type")
        .unwrap_or_default()
        .to_lowercase();
    let prepend = arg_str(&call, "prepend").unwrap_or_else(|| "public".into());
    let grant_option = call.arg("grant_option").is_some_and(python::truthy);
    let (privileges, privs) = privilege_args(&call);
    let p = privileges.as_deref();
    if conn
        .has_privileges(
            &name,
            &object_name,
            &object_type,
            p,
            &privs,
            grant_option,
            &prepend,
        )
        .await?
    {
        return Ok(ret);
    }
    let shown = if object_type == "group" {
        object_name.clone()
    } else {
        privileges.clone().unwrap_or_else(|| "None".into())
    };
    if call.test {
        ret.result = None;
        ret.comment = format!("The privilege(s): {shown} are set to be granted to {name}");
        return Ok(ret);
    }
    // postgres.privileges_grant (it checks again without the grant option).
    let granted = if conn
        .has_privileges(
            &name,
            &object_name,
            &object_type,
            p,
            &privs,
            false,
            &prepend,
        )
        .await?
    {
        false
    } else {
        let grants = privs.join(",");
        let on = match object_type.as_str() {
            "table" | "sequence" => format!("{prepend}.\"{object_name}\""),
            "function" => object_name.clone(),
            _ => format!("\"{object_name}\""),
        };
        let all_in_schema = matches!(object_type.as_str(), "table" | "sequence")
            && object_name.to_uppercase() == "ALL";
        let upper = object_type.to_uppercase();
        let mut sql = if object_type == "group" {
            format!("GRANT {object_name} TO \"{name}\"")
        } else if all_in_schema {
            format!("GRANT {grants} ON ALL {upper}S IN SCHEMA {prepend} TO \"{name}\"")
        } else {
            format!("GRANT {grants} ON {upper} {on} TO \"{name}\"")
        };
        if grant_option {
            sql.push_str(if object_type == "group" {
                " WITH ADMIN OPTION"
            } else {
                " WITH GRANT OPTION"
            });
        }
        conn.run(&sql).await?
    };
    if granted {
        ret.comment = format!("The privilege(s): {shown} have been granted to {name}");
        ret.changes.insert(name.clone(), json!("Present"));
    } else {
        ret.comment = format!("Failed to grant privilege(s): {shown} to {name}");
        ret.result = Some(false);
    }
    Ok(ret)
}

async fn privileges_absent(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    ret.comment = "The requested privilege(s) are not set so cannot be revoked".into();
    let conn = Conn::from_call(&call);
    let object_name = arg_str(&call, "object_name").unwrap_or_default();
    let object_type = arg_str(&call, "object_type")
        .unwrap_or_default()
        .to_lowercase();
    let prepend = arg_str(&call, "prepend").unwrap_or_else(|| "public".into());
    let (privileges, privs) = privilege_args(&call);
    let p = privileges.as_deref();
    if !conn
        .has_privileges(
            &name,
            &object_name,
            &object_type,
            p,
            &privs,
            false,
            &prepend,
        )
        .await?
    {
        return Ok(ret);
    }
    let shown = if object_type == "group" {
        object_name.clone()
    } else {
        privileges.clone().unwrap_or_else(|| "None".into())
    };
    if call.test {
        ret.result = None;
        ret.comment = format!("The privilege(s): {shown} are set to be revoked from {name}");
        return Ok(ret);
    }
    let on = match object_type.as_str() {
        "table" | "sequence" => format!("{prepend}.{object_name}"),
        _ => object_name.clone(),
    };
    let sql = if object_type == "group" {
        format!("REVOKE {object_name} FROM {name}")
    } else {
        format!(
            "REVOKE {} ON {} {on} FROM {name}",
            privs.join(","),
            object_type.to_uppercase()
        )
    };
    if conn.run(&sql).await? {
        ret.comment = format!("The privilege(s): {shown} have been revoked from {name}");
        ret.changes.insert(name.clone(), json!("Absent"));
    } else {
        ret.comment = format!("Failed to revoke privilege(s): {shown} from {name}");
        ret.result = Some(false);
    }
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::{md5_password, parse_csv};

    #[test]
    fn csv_reads_quotes_and_empty_fields() {
        assert_eq!(
            parse_csv("a,b,c\n\"x,y\",,\"q\"\"z\"\n"),
            vec![vec!["a", "b", "c"], vec!["x,y", "", "q\"z"]]
        );
        assert_eq!(parse_csv("a,b\n\n"), vec![vec!["a", "b"], vec![]]);
    }

    #[test]
    fn md5_is_postgres_md5() {
        // PostgreSQL's md5 verifier: md5(password || role), hex, after "md5".
        assert_eq!(
            md5_password("u", "p"),
            "md5534b9a3588bdd87bf7c3b9d650e43e46"
        );
    }

    #[test]
    fn loose_versions_compare_by_parts() {
        assert!(super::loose_lt("1.5", "1.10"));
        assert!(!super::loose_lt("1.10", "1.5"));
        assert!(!super::loose_lt("1.6", "1.6"));
    }
}
