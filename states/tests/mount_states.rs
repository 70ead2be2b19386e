//! `mount.*` states replayed against Salt 3007.8 (`data/mount/cases.json`, recorded by
//! `data/mount/gen.py`): real tmpfs and bind mounts under a temporary directory, the fstab a
//! file of that directory (`config`), the mount cache in it too (`cachedir`). A guard
//! unmounts whatever is mounted under the directory, whatever happens. Where this host does
//! not let the test mount a tmpfs (not root, no `mount`), only the steps before the first
//! mount are replayed (argument checks and `test=True` answers), and the test says so.

mod sysrec;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// Unmounts everything mounted at or under a directory, deepest first.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let root = self.0.display().to_string();
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let mut points: Vec<String> = mounts
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1))
            .map(|p| p.replace("\\040", " "))
            .filter(|p| *p == root || p.starts_with(&format!("{root}/")))
            .collect();
        points.sort_by_key(|p| std::cmp::Reverse(p.len()));
        for point in points {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&point)
                .status();
        }
    }
}

/// Whether a tmpfs can be mounted here (tried on a directory of `dir`, unmounted again).
fn can_mount(dir: &Path) -> Result<(), String> {
    let probe = dir.join("probe");
    std::fs::create_dir(&probe).map_err(|e| e.to_string())?;
    let out = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "saltqprobe"])
        .arg(&probe)
        .output()
        .map_err(|e| format!("no mount command: {e}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir(&probe);
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    let _ = std::process::Command::new("umount").arg(&probe).status();
    let _ = std::fs::remove_dir(&probe);
    Ok(())
}

/// The steps before the first one that mounts (`mounted`).
fn before_mounting(rec: &Value) -> Value {
    let mut rec = rec.clone();
    if let Some(Value::Array(steps)) = rec.get_mut("steps") {
        let first = steps
            .iter()
            .position(|s| s["id"] == "mounted")
            .unwrap_or(steps.len());
        steps.truncate(first);
    }
    rec["files"] = json!({});
    rec
}

#[tokio::test]
async fn mount_states_match_salt() {
    let rec = sysrec::load("mount");
    let dir = sysrec::scratch(&rec);
    std::fs::create_dir(dir.path().join("mnt")).expect("mnt");
    std::fs::create_dir(dir.path().join("cache")).expect("cache");
    let _unmount = Unmount(dir.path().to_path_buf());
    let extra = json!({"cachedir": dir.path().join("cache")});
    let ctx = sysrec::ctx_for(&rec, dir.path(), Map::new(), extra);
    let rec = match can_mount(dir.path()) {
        Ok(()) => rec,
        Err(why) => {
            eprintln!(
                "skipped the steps that mount: this host does not let the test mount a tmpfs \
                 ({why}); replaying those before"
            );
            before_mounting(&rec)
        }
    };
    let failures = sysrec::replay(&rec, &ctx, dir.path(), &[]).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    if sysrec::steps(&rec) > 10 {
        assert!(sysrec::steps(&rec) >= 48);
        // Every mount of the sequence was undone by its own steps; the cache says so too.
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        assert!(!mounts.contains(&dir.path().display().to_string()));
        let cache = std::fs::read_to_string(dir.path().join("cache/mounts")).expect("mount cache");
        assert_eq!(cache, "mounts: {}\n");
    }
}

/// `mount.active`, `mount.is_mounted` and `mount.fstab` on this host's own tables: `/proc`
/// is mounted (Salt's `mount.is_mounted /proc` answered `true` here), and a fstab that does
/// not exist is empty.
#[tokio::test]
async fn mount_exec_reads_this_host() {
    let ctx = saltq_exec::CallContext::local(json!({"kernel": "Linux"}), json!({"id": "m"}));
    let call = |fun: &'static str, args: Vec<Value>| {
        let ctx = ctx.clone();
        async move {
            saltq_exec::call_direct(&ctx, fun, args, Map::new())
                .await
                .unwrap_or_else(|e| panic!("{fun}: {e:?}"))
        }
    };
    let active = call("mount.active", vec![]).await;
    assert_eq!(active["/proc"]["fstype"], json!("proc"));
    let extended = call("mount.active", vec![json!(true)]).await;
    assert!(extended["/proc"]["mountid"].is_string());
    assert_eq!(
        call("mount.is_mounted", vec![json!("/proc")]).await,
        json!(true)
    );
    assert_eq!(
        call("mount.is_mounted", vec![json!("/nonexistent/x")]).await,
        json!(false)
    );
    assert_eq!(
        call("mount.fstab", vec![json!("/nonexistent/fstab")]).await,
        json!({})
    );
    assert_eq!(
        call("mount.umount", vec![json!("/nonexistent/x")]).await,
        json!("/nonexistent/x does not have anything mounted")
    );
}

/// A watched `mount.mounted` remounts with the state's options (Salt's `mount.mod_watch`):
/// a real tmpfs grows from 1m to 2m; any other watched function is not supported.
#[tokio::test]
async fn mod_watch_remounts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let _unmount = Unmount(dir.path().to_path_buf());
    if let Err(why) = can_mount(dir.path()) {
        eprintln!("skipped: this host does not let the test mount a tmpfs ({why})");
        return;
    }
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).expect("mnt");
    let status = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "saltqwatch"])
        .arg(&mnt)
        .status()
        .expect("mount");
    assert!(status.success());
    let ctx = saltq_exec::CallContext::local(
        json!({"os": "Debian", "kernel": "Linux"}),
        json!({"id": "m", "cachedir": dir.path()}),
    );
    let watch = |sfun: &str| saltq_states::modules::StateCall {
        ctx: ctx.clone(),
        name: mnt.display().to_string(),
        args: serde_json::from_value(json!({
            "sfun": sfun, "device": "saltqwatch", "fstype": "tmpfs", "opts": "size=2m"
        }))
        .expect("args"),
        test: false,
        saltenv: "base".into(),
        sls: "watch".into(),
        id: "watched".into(),
        accumulators: Default::default(),
    };
    let f = saltq_states::modules::lookup("mount.mod_watch").expect("registered");
    let ret = (f.handler)(watch("mounted")).await.expect("mod_watch");
    assert_eq!(ret.result, Some(true));
    assert_eq!(ret.comment, format!("{} remounted", mnt.display()));
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let line = mounts
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(&mnt.display().to_string()))
        .expect("still mounted");
    assert!(line.contains("size=2048k"), "{line}");
    let ret = (f.handler)(watch("unmounted")).await.expect("mod_watch");
    assert_eq!(ret.comment, "Watch not supported in unmounted at this time");
}
