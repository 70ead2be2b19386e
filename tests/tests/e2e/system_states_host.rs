//! Host-level states through a real master and minion (issue #16, part 2): an SLS served by
//! the master's fileserver applies `host.*` to a hosts file of the test's own (`hosts.file`),
//! `grains.*` to the minion's grains file (and the master sees the new grains), a
//! `sysctl.present` with its config in the scratch directory, `saltutil.sync_modules`
//! syncing a module from `salt://_modules`, `archive.extracted` from a `salt://` tar.gz with
//! its `source_hash`, and `module.wait` run by a watch.

use std::os::unix::fs::PermissionsExt;

use saltq_tests::{Master, Scratch, eventually};
use serde_json::{Value, json};

const SLS: &str = r#"
hosts_web:
  host.present:
    - name: web.e2e
    - ip:
      - 10.9.0.1
    - comment: added by saltq
hosts_only:
  host.only:
    - name: 10.9.0.2
    - hostnames: [a.e2e, b.e2e]
hosts_gone:
  host.absent:
    - name: old.e2e
    - ip: 10.9.0.3
role_grain:
  grains.present:
    - name: e2e_role
    - value: builder
tags_grain:
  grains.list_present:
    - name: e2e_tags
    - value: [x, y]
sync_mods:
  saltutil.sync_modules: []
sysctl_lo:
  sysctl.present:
    - name: net.ipv4.conf.lo.arp_announce
    - value: {{ pillar['arp'] }}
    - config: {{ pillar['conf'] }}
app_archive:
  archive.extracted:
    - name: {{ pillar['out'] }}
    - source: salt://app.tar.gz
    - source_hash: sha256={{ pillar['sha'] }}
    - trim_output: 3
waits:
  module.wait:
    - name: test.echo
    - text: watched
    - watch:
      - host: hosts_web
"#;

/// The tar.gz the `archive` state tests use (`states/tests/data/archive/gen.py`).
fn archive() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../states/tests/data/archive/app.tar.gz")
}

/// Its sha256, with the system's `sha256sum`.
fn archive_sha256() -> String {
    let o = std::process::Command::new("sha256sum")
        .arg(archive())
        .output()
        .expect("sha256sum");
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn state(ret: &Value, id: &str) -> Value {
    ret.as_object()
        .into_iter()
        .flatten()
        .find(|(tag, _)| tag.split("_|-").nth(1) == Some(id))
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no state {id} in {ret}"))
}

#[test]
fn host_grains_sysctl_saltutil_states_through_a_minion() {
    let scratch = Scratch::new("sys-states");
    let hosts = scratch.0.join("hosts");
    std::fs::write(&hosts, "127.0.0.1 localhost\n10.9.0.3 old.e2e keep.e2e\n").unwrap();
    let master = Master::start_with(|dir| {
        let roots = dir.join("files");
        std::fs::create_dir_all(roots.join("_modules")).unwrap();
        std::fs::write(roots.join("sys.sls"), SLS).unwrap();
        std::fs::copy(archive(), roots.join("app.tar.gz")).unwrap();
        let module = roots.join("_modules/hello.sh");
        std::fs::write(
            &module,
            "#!/bin/sh\ncase \"$1\" in\n  --list) echo '[\"greet\"]' ;;\n  greet) echo '{\"return\": \"hi\"}' ;;\n  *) exit 3 ;;\nesac\n",
        )
        .unwrap();
        std::fs::set_permissions(&module, std::fs::Permissions::from_mode(0o755)).unwrap();
        format!(
            "auto_accept: true\nfile_roots:\n  base:\n    - {}\n",
            roots.display()
        )
    });
    let minion = master.minion("sys1", &format!("hosts.file: {}\n", hosts.display()));
    master.wait_for("sys1");

    // sysctl only where /proc/sys is writable and the key is at its default; else the
    // state runs in test mode, which reads only.
    let key = "/proc/sys/net/ipv4/conf/lo/arp_announce";
    let before = std::fs::read_to_string(key).ok();
    let writable = before.as_deref() == Some("0\n") && std::fs::write(key, "0").is_ok();
    let conf = scratch.0.join("sysctl.conf");
    let out = scratch.0.join("app-out");
    let pillar = format!(
        "pillar={{\"arp\": 0, \"conf\": \"{}\", \"out\": \"{}\", \"sha\": \"{}\"}}",
        conf.display(),
        out.display(),
        archive_sha256()
    );
    let mut args = vec![
        "sys1",
        "state.apply",
        "sys",
        pillar.as_str(),
        "--out",
        "json",
        "-t",
        "60",
    ];
    if !writable {
        eprintln!("sysctl: {key} is not writable here or not 0: state.apply runs with test=True");
        args.push("test=True");
    }
    let o = master.saltq(&args);
    let ret = o.json()["sys1"].clone();
    assert_eq!(o.code, 0, "{o:?}");

    if !writable {
        let s = state(&ret, "sysctl_lo");
        assert_eq!(s["result"], Value::Null, "{s}");
        return;
    }
    // The hosts file: the entries the states asked for; `hosts.add_host` rewrites every
    // entry in Salt's layout (address, two tabs, names).
    let text = std::fs::read_to_string(&hosts).unwrap();
    assert_eq!(
        text,
        "127.0.0.1\t\tlocalhost\n10.9.0.3\t\tkeep.e2e \n10.9.0.1\t\tweb.e2e\t\t# added by saltq\n10.9.0.2\t\ta.e2e b.e2e\n"
    );
    let web = state(&ret, "hosts_web");
    assert_eq!(
        web["changes"],
        json!({"added": {"10.9.0.1": ["web.e2e"]}, "comment_added": {"10.9.0.1": ["added by saltq"]}})
    );
    assert_eq!(
        web["comment"],
        json!("Added host web.e2e (10.9.0.1)\nSet comment for host 10.9.0.1 (added by saltq)")
    );
    assert_eq!(
        state(&ret, "hosts_gone")["changes"],
        json!({"host": "old.e2e"})
    );

    // Grains: written to the minion's grains file, and the master's view refreshed.
    let role = state(&ret, "role_grain");
    assert_eq!(role["comment"], json!("Set grain e2e_role to builder"));
    assert_eq!(role["changes"], json!({"e2e_role": "builder"}));
    let written = std::fs::read_to_string(minion.dir.0.join("etc/grains")).unwrap();
    assert!(written.contains("e2e_role: builder\n"), "{written}");
    let o = master.saltq(&[
        "sys1",
        "grains.item",
        "e2e_role",
        "e2e_tags",
        "--out",
        "json",
    ]);
    assert_eq!(
        o.json(),
        json!({"sys1": {"e2e_role": "builder", "e2e_tags": ["x", "y"]}}),
        "{o:?}"
    );
    eventually(
        "the master targets the new grain",
        std::time::Duration::from_secs(20),
        || {
            let o = master.saltq(&["-G", "e2e_role:builder", "test.ping", "--out", "json"]);
            (o.json() == json!({"sys1": true})).then_some(())
        },
    );

    // saltutil.sync_modules: the module synced is the change.
    let sync = state(&ret, "sync_mods");
    assert_eq!(
        sync["changes"],
        json!({"modules": ["modules.hello"]}),
        "{sync}"
    );
    assert_eq!(sync["comment"], json!("Updated modules."));

    // sysctl.present with its config in the scratch directory (the value is the one the
    // key already had, so the kernel is left as it was).
    let s = state(&ret, "sysctl_lo");
    assert_eq!(s["result"], json!(true), "{s}");
    assert!(
        std::fs::read_to_string(&conf)
            .unwrap()
            .contains("net.ipv4.conf.lo.arp_announce = 0\n")
    );

    // archive.extracted from salt://, its hash checked, the output trimmed as asked.
    let a = state(&ret, "app_archive");
    assert_eq!(a["result"], json!(true), "{a}");
    assert_eq!(
        a["changes"]["extracted_files"],
        json!(["app", "app/bin", "app/bin/run.sh"]),
        "{a}"
    );
    assert_eq!(
        a["comment"],
        json!(format!(
            "salt://app.tar.gz extracted to {}/, due to absence of one or more files/dirs. \
             Output was trimmed to 3 number of lines",
            out.display()
        ))
    );
    assert_eq!(
        std::fs::read_to_string(out.join("app/docs/guide.txt")).unwrap(),
        "guide\n"
    );

    // module.wait ran because the hosts state it watches changed.
    let w = state(&ret, "waits");
    assert_eq!(w["changes"], json!({"ret": "watched"}), "{w}");

    // A second run changes nothing.
    let o = master.saltq(&args);
    let again = o.json()["sys1"].clone();
    for id in [
        "hosts_web",
        "hosts_only",
        "hosts_gone",
        "role_grain",
        "tags_grain",
        "sync_mods",
    ] {
        assert_eq!(state(&again, id)["changes"], json!({}), "{id}: {again}");
    }
    assert_eq!(
        state(&again, "sysctl_lo")["comment"],
        json!("Sysctl value net.ipv4.conf.lo.arp_announce = 0 is already set")
    );
}
