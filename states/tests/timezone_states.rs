//! `timezone.system` replayed against Salt 3007.8 (`data/timezone/*/cases.json`, recorded by
//! `data/timezone/gen.py`) in the way this host is:
//!
//! - `timedatectl` installed but systemd not running (this machine and CI's): Salt's module
//!   asks `timedatectl` for the hardware clock and fails; the recording `timedatectl/` is
//!   replayed (nothing changes on the host: every step fails before setting anything).
//! - no `timedatectl`: the zone lives in `/etc/timezone` and `/etc/localtime`; the recording
//!   `files/` changes the zone from `Etc/UTC` to `Etc/GMT` (the same offset) and back. It
//!   changes system files, so it runs only with `SALTQ_TEST_TIMEZONE=1`, as root, on a host
//!   whose zone is `Etc/UTC`; a guard puts both files back whatever happens.
//! - a running systemd: skipped (the recordings do not cover `timedatectl set-timezone`).

mod sysrec;

use serde_json::{Map, json};

const LOCALTIME: &str = "/etc/localtime";
const UTC: &str = "/usr/share/zoneinfo/Etc/UTC";

/// Puts `/etc/localtime` and `/etc/timezone` back as they were.
struct Restore(String);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(LOCALTIME);
        let _ = std::os::unix::fs::symlink(UTC, LOCALTIME);
        let _ = std::fs::write("/etc/timezone", &self.0);
    }
}

fn timedatectl_installed() -> bool {
    ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"]
        .iter()
        .any(|d| std::path::Path::new(d).join("timedatectl").exists())
}

#[tokio::test]
async fn timezone_system_matches_salt() {
    if timedatectl_installed() {
        let works = std::process::Command::new("timedatectl")
            .output()
            .is_ok_and(|o| o.status.success());
        if works {
            eprintln!("skipped: systemd runs here; the recordings cover hosts without it");
            return;
        }
        let rec = sysrec::load("timezone/timedatectl");
        let dir = sysrec::scratch(&rec);
        let ctx = sysrec::ctx_for(&rec, dir.path(), Map::new(), json!({}));
        let before = std::fs::read_link(LOCALTIME).ok();
        let failures = sysrec::replay(&rec, &ctx, dir.path(), &[]).await;
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert_eq!(
            std::fs::read_link(LOCALTIME).ok(),
            before,
            "nothing changed"
        );
        assert_eq!(sysrec::steps(&rec), 4);
        return;
    }
    if std::env::var_os("SALTQ_TEST_TIMEZONE").is_none() {
        eprintln!(
            "skipped: without timedatectl the zone is changed in /etc (set SALTQ_TEST_TIMEZONE=1 \
             to let this test change it and put it back)"
        );
        return;
    }
    let timezone = std::fs::read_to_string("/etc/timezone").unwrap_or_default();
    let link = std::fs::read_link(LOCALTIME).ok();
    if timezone != "Etc/UTC\n" || link.as_deref() != Some(std::path::Path::new(UTC)) {
        eprintln!("skipped: the zone here is not Etc/UTC ({timezone:?}, {link:?}), as Salt's was");
        return;
    }
    let _restore = Restore(timezone);
    let rec = sysrec::load("timezone/files");
    let dir = sysrec::scratch(&rec);
    let ctx = sysrec::ctx_for(&rec, dir.path(), Map::new(), json!({}));
    let failures = sysrec::replay(&rec, &ctx, dir.path(), &[]).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The sequence ends where it began, written by the state itself.
    assert_eq!(
        std::fs::read_to_string("/etc/timezone").ok().as_deref(),
        Some("Etc/UTC\n")
    );
    assert_eq!(
        std::fs::read_link(LOCALTIME).ok().as_deref(),
        Some(std::path::Path::new(UTC))
    );
    assert_eq!(sysrec::steps(&rec), 11);
}

/// `timezone.zone_compare` on this host's files, as Salt answered it here: `Etc/UTC` and
/// `UTC` (a link to it) are the zone, `Etc/GMT` is not, an unknown zone is an error naming it.
#[tokio::test]
async fn zone_compare_reads_localtime() {
    if std::fs::read_link(LOCALTIME).ok().as_deref() != Some(std::path::Path::new(UTC)) {
        eprintln!("skipped: /etc/localtime is not Etc/UTC here");
        return;
    }
    let ctx = saltq_exec::CallContext::local(json!({"os_family": "Debian"}), json!({"id": "m"}));
    let compare = |zone: &'static str| {
        let ctx = ctx.clone();
        async move {
            saltq_exec::call_direct(&ctx, "timezone.zone_compare", vec![json!(zone)], Map::new())
                .await
        }
    };
    assert_eq!(compare("Etc/UTC").await.ok(), Some(json!(true)));
    assert_eq!(compare("UTC").await.ok(), Some(json!(true)));
    assert_eq!(compare("Etc/GMT").await.ok(), Some(json!(false)));
    let err = format!(
        "{:?}",
        compare("Nowhere/Saltq").await.expect_err("unknown zone")
    );
    assert!(
        err.contains("Can't find a local timezone \\\"Nowhere/Saltq\\\""),
        "{err}"
    );
}
