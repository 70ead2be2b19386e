//! `pkg.*` states replayed against Salt 3007.8's answers on this kind of machine (Debian,
//! apt), recorded by `data/pkg/gen.py`:
//! - `cases.json`: nothing gets installed or removed (packages already there, packages
//!   that do not exist, test mode); runs where apt and dpkg are present and we are root;
//! - `installs.json`: a sequence that installs and removes `hello` and `sl` from the Debian
//!   mirror; runs only with `SALTQ_TEST_PKG=1` (root and network);
//! - `part2.json` (by `data/pkg/gen_part2.py`): `pkg.held`, `pkg.unheld`, `pkg.uptodate`,
//!   `pkg.installed` with `hold` and with `sources` (a `.deb` fetched with `apt-get
//!   download`), `pkg.purged` of an installed package; `hello` really installed, held and
//!   purged; also only with `SALTQ_TEST_PKG=1`.

#[path = "support/mod.rs"]
mod common;

use std::process::Command;

/// apt takes one lock and fails rather than wait for it: tests that run apt hold this file
/// lock meanwhile (nextest runs each test in its own process; the e2e tests take it too).
fn apt_lock() -> std::fs::File {
    let f = std::fs::File::create("/tmp/saltq-apt-tests.lock")
        .unwrap_or_else(|e| panic!("/tmp/saltq-apt-tests.lock: {e}"));
    f.lock()
        .unwrap_or_else(|e| panic!("locking /tmp/saltq-apt-tests.lock: {e}"));
    f
}

fn apt_here() -> bool {
    let has = |t: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    has("apt-get") && has("dpkg-query") && root
}

#[tokio::test]
async fn pkg_states_without_changes_match_salt() {
    if !apt_here() {
        eprintln!("skipped: needs apt-get, dpkg-query and root");
        return;
    }
    let _apt = apt_lock();
    // Salt's apt-get call for a pinned version adds `--force-yes`, and apt's warning about it
    // is in Salt's comment; saltq's `pkg.install` does not pass it.
    let except = [("installed_version_other", false)];
    let n = common::check_cases_except("pkg", &common::ctx(), &except).await;
    assert!(n >= 17, "only {n} cases");
}

#[tokio::test]
async fn pkg_install_sequence_matches_salt() {
    if std::env::var_os("SALTQ_TEST_PKG").is_none() {
        eprintln!(
            "skipped: set SALTQ_TEST_PKG=1 to install and remove hello and sl (root, network)"
        );
        return;
    }
    let _apt = apt_lock();
    let n = common::check_cases("pkg/installs", &common::ctx()).await;
    assert!(n >= 15, "only {n} cases");
}

/// Leaves `hello` unheld and purged whatever the test did.
struct HelloGone;

impl Drop for HelloGone {
    fn drop(&mut self) {
        let sh = |cmd: &str| {
            let _ = Command::new("sh").args(["-c", cmd]).output();
        };
        sh("echo 'hello install' | dpkg --set-selections");
        sh("DEBIAN_FRONTEND=noninteractive apt-get -q -y purge hello");
        let _ = std::fs::remove_dir_all("/tmp/saltq-pkg-sources");
    }
}

#[tokio::test]
async fn pkg_hold_sources_uptodate_match_salt() {
    if std::env::var_os("SALTQ_TEST_PKG").is_none() {
        eprintln!("skipped: set SALTQ_TEST_PKG=1 to install, hold and purge hello (root, network)");
        return;
    }
    let _apt = apt_lock();
    let _gone = HelloGone;
    // The `.deb` the `sources` steps install, where gen_part2.py put it.
    std::fs::create_dir_all("/tmp/saltq-pkg-sources").unwrap_or_else(|e| panic!("{e}"));
    let fetched = Command::new("apt-get")
        .args(["-q", "download", "hello"])
        .current_dir("/tmp/saltq-pkg-sources")
        .output()
        .unwrap_or_else(|e| panic!("apt-get download: {e}"));
    assert!(fetched.status.success(), "{fetched:?}");
    let n = common::check_cases("pkg/part2", &common::ctx()).await;
    assert_eq!(n, 24);
}
