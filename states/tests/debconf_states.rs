//! `debconf.set`/`debconf.set_file` replayed against Salt 3007.8 (`data/debconf/cases.json`,
//! recorded by `data/debconf/gen.py`) on a debconf database in a temporary directory:
//! `DEBCONF_SYSTEMRC` names the directory's `debconf.conf`, so debconf-set-selections and
//! debconf-get-selections (run by the states) read and write there, never the host's. The
//! variable is given to a child run of this test binary (`replay_in_child`), so no test
//! changes its own process's environment.

mod sysrec;

use serde_json::{Map, json};

const CHILD: &str = "SALTQ_DEBCONF_REPLAY_DIR";

#[test]
fn debconf_states_match_salt() {
    assert!(
        std::process::Command::new("debconf-get-selections")
            .arg("--help")
            .output()
            .is_ok(),
        "debconf-get-selections is missing: install debconf-utils"
    );
    let rec = sysrec::load("debconf");
    let dir = sysrec::scratch(&rec);
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "replay_in_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("DEBCONF_SYSTEMRC", dir.path().join("debconf.conf"))
        .env(CHILD, dir.path())
        .output()
        .expect("running the replay");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("replayed 16 steps"), "{text}");
    // The answers landed in the scratch database, nowhere else.
    let db = std::fs::read_to_string(dir.path().join("config.dat")).expect("config.dat");
    for q in ["saltq-rec/q1", "saltq-rec/fromfile", "saltq-rec/templated"] {
        assert!(
            db.contains(&format!("Name: {q}\n")),
            "{q} missing from\n{db}"
        );
    }
}

/// The replay itself, run by [`debconf_states_match_salt`] in a child process whose
/// environment names the scratch database; on its own (no scratch directory given) it has
/// nothing to replay on and returns.
#[tokio::test]
async fn replay_in_child() {
    let Some(dir) = std::env::var_os(CHILD) else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let rec = sysrec::load("debconf");
    let ctx = sysrec::ctx_for(&rec, &dir, Map::new(), json!({}));
    let failures = sysrec::replay(&rec, &ctx, &dir, &[]).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!("replayed {} steps", sysrec::steps(&rec));
}
