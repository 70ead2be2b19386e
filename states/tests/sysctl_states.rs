//! `sysctl.present` replayed against Salt 3007.8 (`data/sysctl/cases.json`, recorded by
//! `data/sysctl/gen.py`) on this host's kernel: `net.ipv4.conf.lo.arp_announce` goes to 1
//! and back to 0, `net.ipv4.ping_group_range` is written its own value; the config file is
//! the test's. A guard puts both keys back whatever happens. Skipped where /proc/sys is
//! read-only or `sysctl` is missing.

mod sysrec;

use serde_json::{Map, json};

const KEY: &str = "net.ipv4.conf.lo.arp_announce";
const RANGE: &str = "net.ipv4.ping_group_range";

fn proc_path(key: &str) -> String {
    format!("/proc/sys/{}", key.replace('.', "/"))
}

/// Puts the kernel parameters back as they were.
struct Restore(Vec<(String, String)>);

impl Drop for Restore {
    fn drop(&mut self) {
        for (key, value) in &self.0 {
            let _ = std::fs::write(proc_path(key), value);
        }
    }
}

fn writable(key: &str) -> Option<String> {
    let value = std::fs::read_to_string(proc_path(key)).ok()?;
    std::fs::write(proc_path(key), &value).ok()?;
    Some(value)
}

#[tokio::test]
async fn sysctl_present_matches_salt() {
    let has_sysctl = std::process::Command::new("sysctl")
        .arg("-n")
        .arg("kernel.ostype")
        .output()
        .is_ok_and(|o| o.status.success());
    let (Some(key), Some(range)) = (writable(KEY), writable(RANGE)) else {
        eprintln!("skipped: /proc/sys is not writable here ({KEY}, {RANGE})");
        return;
    };
    if !has_sysctl {
        eprintln!("skipped: no sysctl command");
        return;
    }
    if key.trim() != "0" || range.split_whitespace().collect::<Vec<_>>() != ["1", "0"] {
        eprintln!("skipped: {KEY} is {key:?} and {RANGE} is {range:?}, not what Salt saw (0, 1 0)");
        return;
    }
    let _restore = Restore(vec![(KEY.into(), key), (RANGE.into(), range)]);
    let rec = sysrec::load("sysctl");
    let dir = sysrec::scratch(&rec);
    std::fs::create_dir(dir.path().join("dir.conf")).expect("dir.conf");
    let ctx = sysrec::ctx_for(&rec, dir.path(), Map::new(), json!({}));
    let failures = sysrec::replay(&rec, &ctx, dir.path(), &[]).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(
        std::fs::read_to_string(proc_path(KEY)).ok().as_deref(),
        Some("0\n"),
        "the sequence ends with {KEY} back at 0"
    );
    assert!(sysrec::steps(&rec) >= 13);
}
