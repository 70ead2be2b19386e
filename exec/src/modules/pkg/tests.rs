//! `pkg.*` on this host. Read-only functions always run (against `dpkg-query`/`rpm`
//! directly); installing and removing a package, and refreshing the package lists, change
//! the machine and need the network, so they run only when `SALTQ_TEST_PKG` names a small
//! package that is not installed (CI sets `SALTQ_TEST_PKG=hello` on a throwaway VM).
//! `pkg.upgrade` would upgrade the whole host and never runs here.

use serde_json::{Value, json};

use super::*;
use crate::testutil::{check, run, run_kw};

fn installed_of(pairs: &[(&str, &str)]) -> Installed {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), vec![(*v).to_owned()]))
        .collect()
}

#[test]
fn changes_like_salt() {
    let old = installed_of(&[("bash", "5.1"), ("gone", "1.0"), ("same", "2")]);
    let new = installed_of(&[("bash", "5.2"), ("fresh", "0.1"), ("same", "2")]);
    assert_eq!(
        changes(&old, &new),
        json!({
            "bash": {"old": "5.1", "new": "5.2"},
            "fresh": {"old": "", "new": "0.1"},
            "gone": {"old": "1.0", "new": ""},
        })
    );
    assert_eq!(changes(&old, &old), json!({}));
}

/// The version the package database itself reports, for comparison.
fn dpkg_version(name: &str) -> String {
    std::process::Command::new("dpkg-query")
        .args(["-W", "-f", "${Version}", name])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn read_only_functions_on_this_host() {
    let Ok(backend) = tools_backend() else {
        println!("pkg: no apt/dpkg or dnf/rpm here; checking the error only");
        check(
            "pkg.list_pkgs",
            json!([]),
            json!({}),
            json!("ERROR: no supported package manager (apt/dpkg or dnf/rpm) on this minion"),
            1,
        )
        .await;
        return;
    };
    let pkgs = run("pkg.list_pkgs", json!([])).await.ret;
    let probe = if backend == Backend::Apt {
        "dpkg"
    } else {
        "rpm"
    };
    let have = pkgs[probe].as_str().unwrap_or_default().to_owned();
    assert!(!have.is_empty(), "{probe} is not listed");
    if backend == Backend::Apt {
        assert_eq!(have, dpkg_version(probe));
    }
    let as_list = run_kw(
        "pkg.list_pkgs",
        json!([]),
        json!({"versions_as_list": true}),
    )
    .await
    .ret;
    assert_eq!(as_list[probe], json!([have.clone()]));
    check(
        "pkg.version",
        json!([probe]),
        json!({}),
        json!(have.clone()),
        0,
    )
    .await;
    check(
        "pkg.version",
        json!([probe, "nosuchpkg-saltq"]),
        json!({}),
        json!({probe: have, "nosuchpkg-saltq": ""}),
        0,
    )
    .await;
    let latest = run_kw(
        "pkg.latest_version",
        json!([probe]),
        json!({"refresh": false}),
    )
    .await;
    assert!(latest.ret.is_string(), "{}", latest.ret);
    let latest = run_kw(
        "pkg.latest_version",
        json!([probe, "nosuchpkg-saltq"]),
        json!({"refresh": false}),
    )
    .await;
    assert_eq!(latest.ret["nosuchpkg-saltq"], json!(""));
    let upgrades = run_kw("pkg.list_upgrades", json!([]), json!({"refresh": false})).await;
    assert!(upgrades.ret.is_object(), "{}", upgrades.ret);
    // Nothing to remove: no change, nothing run.
    check(
        "pkg.remove",
        json!(["nosuchpkg-saltq"]),
        json!({}),
        json!({}),
        0,
    )
    .await;
    check("pkg.install", json!([]), json!({}), json!({}), 0).await;
    println!(
        "pkg.upgrade: not run, it would upgrade this whole machine (its parsing is tested with data)"
    );
}

#[tokio::test]
async fn install_and_remove_when_allowed() {
    let Ok(name) = std::env::var("SALTQ_TEST_PKG") else {
        println!(
            "pkg.install/remove/purge/refresh_db: skipped, set SALTQ_TEST_PKG=<small package not installed> to run them"
        );
        return;
    };
    let Ok(backend) = tools_backend() else {
        println!("pkg: no package manager here, install test skipped");
        return;
    };
    // apt fails rather than wait for its lock: take turns with the states' apt tests
    // (states/tests/pkg_states.rs), which install the same small package.
    let lock = std::fs::File::create("/tmp/saltq-apt-tests.lock").expect("apt test lock");
    lock.lock().expect("locking /tmp/saltq-apt-tests.lock");
    let refreshed = run("pkg.refresh_db", json!([])).await;
    assert_eq!(refreshed.retcode, 0, "{}", refreshed.ret);
    if backend == Backend::Apt {
        assert!(refreshed.ret.is_object());
    }
    check("pkg.version", json!([name]), json!({}), json!(""), 0).await;
    let out = run("pkg.install", json!([name])).await;
    assert_eq!(out.retcode, 0, "{}", out.ret);
    let new = out.ret[&name]["new"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(out.ret[&name], json!({"old": "", "new": new}));
    assert!(!new.is_empty());
    check(
        "pkg.version",
        json!([name]),
        json!({}),
        json!(new.clone()),
        0,
    )
    .await;
    // Installing again changes nothing.
    check("pkg.install", json!([name]), json!({}), json!({}), 0).await;
    let out = run("pkg.remove", json!([name])).await;
    assert_eq!(out.ret, json!({name.clone(): {"old": new, "new": ""}}));
    let out = run("pkg.install", json!([])).await;
    assert_eq!(out.ret, json!({}));
    let out = run_kw("pkg.install", json!([]), json!({"pkgs": [name]})).await;
    assert_eq!(out.retcode, 0, "{}", out.ret);
    // Salt's apt purge answers {removed: ..., installed: ...}: the package is under one of them.
    let out = run("pkg.purge", json!([name])).await;
    assert!(
        out.ret["installed"].get(&name).is_some() || out.ret["removed"].get(&name).is_some(),
        "{}",
        out.ret
    );
    let failed = run("pkg.install", json!(["nosuchpkg-saltq"])).await;
    assert_eq!(failed.retcode, 1);
    assert!(
        failed
            .ret
            .as_str()
            .is_some_and(|s| s.starts_with("ERROR: Problem encountered installing package(s)")),
        "{}",
        failed.ret
    );
    let _: Value = failed.ret;
}

#[test]
fn backend_follows_the_grains_as_salts_virtual() {
    for (grains, want) in [
        (
            json!({"os_family": "Debian", "os": "Ubuntu"}),
            Some(Backend::Apt),
        ),
        (json!({"os": "Debian"}), Some(Backend::Apt)),
        (
            json!({"os_family": "RedHat", "os": "Fedora"}),
            Some(Backend::Dnf),
        ),
        (
            json!({"os_family": "redhat", "os": "Rocky"}),
            Some(Backend::Dnf),
        ),
        (
            json!({"os_family": "Amazon", "os": "Amazon"}),
            Some(Backend::Dnf),
        ),
        (json!({"os_family": "Suse", "os": "SUSE"}), None),
        (json!({"os_family": "Arch", "os": "Debian"}), None),
        (json!({}), None),
    ] {
        assert_eq!(grains_backend(&grains), want, "{grains}");
    }
}
