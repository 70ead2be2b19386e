//! `mount.*` states through a real master and minion (issue #16): an SLS served by the
//! master's fileserver mounts a tmpfs under the test's scratch directory, persisted in a
//! fstab of that directory (`config`); a second run changes nothing; `mount.unmounted` with
//! `persist` takes both away again. Skipped where the test cannot mount a tmpfs (not root,
//! no `mount`). A guard unmounts whatever is left under the directory.

use saltq_tests::{Master, Scratch};
use serde_json::{Value, json};

const SLS: &str = r#"
scratch_tmpfs:
  mount.mounted:
    - name: {{ pillar['dir'] }}/mnt
    - device: saltqe2e
    - fstype: tmpfs
    - opts: size=1m,mode=750
    - mkmnt: True
    - config: {{ pillar['dir'] }}/fstab
"#;

/// Unmounts everything mounted under a directory, deepest first.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let root = self.0.display().to_string();
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let mut points: Vec<&str> = mounts
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1))
            .filter(|p| p.starts_with(&format!("{root}/")))
            .collect();
        points.sort_by_key(|p| std::cmp::Reverse(p.len()));
        for point in points {
            let _ = std::process::Command::new("umount")
                .args(["-l", point])
                .status();
        }
    }
}

fn mounted_at(point: &std::path::Path) -> Option<String> {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(&point.display().to_string()))
        .map(str::to_owned)
}

fn only_state(ret: &Value) -> Value {
    ret.as_object()
        .and_then(|m| m.values().next())
        .cloned()
        .unwrap_or_else(|| panic!("no state in {ret}"))
}

#[test]
fn mount_states_through_a_minion() {
    let scratch = Scratch::new("mount-states");
    let _unmount = Unmount(scratch.0.clone());
    let probe = scratch.0.join("probe");
    std::fs::create_dir(&probe).unwrap();
    let can = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "saltqprobe"])
        .arg(&probe)
        .output()
        .is_ok_and(|o| o.status.success());
    if !can {
        eprintln!("skipped: this host does not let the test mount a tmpfs");
        return;
    }
    let _ = std::process::Command::new("umount").arg(&probe).status();
    let fstab = scratch.0.join("fstab");
    std::fs::write(&fstab, "# the test's fstab\n").unwrap();
    let master = Master::start_with(|dir| {
        let roots = dir.join("files");
        std::fs::create_dir_all(&roots).unwrap();
        std::fs::write(roots.join("mnt.sls"), SLS).unwrap();
        format!(
            "auto_accept: true\nfile_roots:\n  base:\n    - {}\n",
            roots.display()
        )
    });
    let _minion = master.minion("mnt1", "");
    master.wait_for("mnt1");
    let dir = scratch.0.display().to_string();
    let pillar = format!("pillar={{\"dir\": \"{dir}\"}}");
    let args = [
        "mnt1",
        "state.apply",
        "mnt",
        pillar.as_str(),
        "--out",
        "json",
        "-t",
        "60",
    ];
    let mnt = scratch.0.join("mnt");

    let o = master.saltq(&args);
    assert_eq!(o.code, 0, "{o:?}");
    let s = only_state(&o.json()["mnt1"]);
    assert_eq!(s["result"], json!(true), "{s}");
    assert_eq!(
        s["changes"],
        json!({"mount": true, "persist": "new"}),
        "{s}"
    );
    assert_eq!(
        s["comment"],
        json!("Target was successfully mounted. Added new entry to the fstab.")
    );
    let line = mounted_at(&mnt).expect("mounted");
    assert!(
        line.contains("size=1024k") && line.contains("mode=750"),
        "{line}"
    );
    assert_eq!(
        std::fs::read_to_string(&fstab).unwrap(),
        format!("# the test's fstab\nsaltqe2e\t\t{dir}/mnt\ttmpfs\tsize=1m,mode=750\t0 0\n")
    );

    let o = master.saltq(&args);
    let s = only_state(&o.json()["mnt1"]);
    assert_eq!(s["changes"], json!({}), "{s}");
    assert_eq!(
        s["comment"],
        json!("Target was already mounted. Entry already exists in the fstab.")
    );

    let name = format!("name={dir}/mnt");
    let config = format!("config={}", fstab.display());
    let o = master.saltq(&[
        "mnt1",
        "state.single",
        "mount.unmounted",
        &name,
        "persist=True",
        &config,
        "--out",
        "json",
    ]);
    let s = only_state(&o.json()["mnt1"]);
    assert_eq!(
        s["changes"],
        json!({"umount": true, "persist": "purged"}),
        "{s}"
    );
    assert_eq!(mounted_at(&mnt), None);
    assert_eq!(
        std::fs::read_to_string(&fstab).unwrap(),
        "# the test's fstab\n"
    );
}
