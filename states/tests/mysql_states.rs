//! `mysql_database`, `mysql_user`, `mysql_grants` and `mysql_query` replayed against Salt
//! 3007.8 (`data/mysql/cases.json`, recorded by `data/mysql/gen.py`) on the real MariaDB at
//! 127.0.0.1:3306 (root, no password): the same sequence of states, each return compared
//! with Salt's (`mysql_query`'s run time taken out of its comment). The recording's
//! `saltq_rec_` names are replaced by a prefix of this run's own, and what the run created
//! is dropped at the end.

mod sysrec;

use serde_json::{Map, Value, json};

fn prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("sq{}_{nanos}_", std::process::id())
}

fn mysql(sql: &str) {
    let _ = std::process::Command::new("mysql")
        .args(["-h", "127.0.0.1", "-uroot", "-e", sql])
        .output();
}

struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let p = &self.0;
        mysql(&format!("DROP DATABASE IF EXISTS `{p}db`"));
        mysql(&format!("DROP USER IF EXISTS '{p}user'@'localhost'"));
        mysql(&format!("DROP USER IF EXISTS '{p}user'@'%'"));
    }
}

/// The keys Salt's recording keeps, the query's run time blanked.
fn comparable(v: &Value) -> Value {
    let time =
        regex::Regex::new(r"'query time': \{'human': '[^']*', 'raw': '[^']*'\}").expect("regex");
    let mut out = Map::new();
    for k in ["name", "result", "comment", "changes"] {
        out.insert(k.into(), v[k].clone());
    }
    if let Some(c) = v["comment"].as_str() {
        out.insert(
            "comment".into(),
            json!(time.replace_all(c, "'query time': T")),
        );
    }
    Value::Object(out)
}

#[tokio::test]
async fn mysql_states_match_salt() {
    let p = prefix();
    let _cleanup = Cleanup(p.clone());
    let rec = sysrec::subst(&sysrec::load("mysql"), "saltq_rec_", &p);
    let dir = tempfile::tempdir().expect("temp dir");
    let ctx = sysrec::ctx_for(&rec, dir.path(), Map::new(), json!({}));
    let root = dir.path().display().to_string();
    let mut failures = Vec::new();
    for step in rec["steps"].as_array().into_iter().flatten() {
        let got = comparable(&sysrec::run_step(&ctx, step, &root).await);
        let want = comparable(&step["ret"]);
        if got != want {
            failures.push(format!(
                "{} (test={}):\n  salt:  {want}\n  saltq: {got}",
                step["id"], step["test"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(sysrec::steps(&rec) >= 38);
}

/// A server that refuses the connection fails the state with the client's error in Salt's
/// `MySQL Error <code>: ...` form.
#[tokio::test]
async fn unreachable_server_fails_naming_the_error() {
    let ctx = saltq_exec::CallContext::local(
        json!({"id": "m"}),
        json!({"id": "m", "mysql.host": "127.0.0.1", "mysql.port": 1, "mysql.user": "root"}),
    );
    let ret = sysrec::run_step(
        &ctx,
        &json!({"id": "d", "fun": "mysql_database.present", "args": [{"name": "saltq_never"}]}),
        "/nonexistent",
    )
    .await;
    assert_eq!(ret["result"], json!(false), "{ret}");
    assert!(
        ret["comment"]
            .as_str()
            .unwrap_or_default()
            .starts_with("MySQL Error 2002: "),
        "{ret}"
    );
}
