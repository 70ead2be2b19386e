//! The fileserver (`salt://`) through a real master and minion over QUIC: listings per
//! saltenv, a multi-MiB file streamed in chunks and checked, a second fetch served from the
//! minion's cache, a changed file fetched again, escapes refused by name, `cmd.script`.

use std::path::Path;

use saltq_tests::{Master, eventually};
use serde_json::json;

/// How many times the master's log says it served `path` (one line per GetFile).
fn served(master: &Master, path: &str) -> usize {
    let raw = std::fs::read_to_string(master.log()).unwrap_or_default();
    // The log may be coloured: drop the escape sequences (ESC ... m).
    let mut log = String::with_capacity(raw.len());
    let mut in_escape = false;
    for c in raw.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (false, c) => log.push(c),
            (true, 'm') => in_escape = false,
            (true, _) => {}
        }
    }
    log.lines()
        .filter(|l| l.contains("serving file") && l.contains(&format!("path={path} ")))
        .count()
}

/// Bytes that do not compress and are not periodic, so a chunking bug shows.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn write(path: &Path, contents: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
}

#[test]
fn files_are_listed_streamed_cached_and_escapes_refused() {
    // 3 MiB and change: six full 512 KiB chunks and a short one.
    let big = noise(3 * 1024 * 1024 + 12345, 7);
    let big_clone = big.clone();
    let master = Master::start_with(move |dir| {
        let base = dir.join("files");
        write(&base.join("hello.txt"), b"hello world\n");
        write(&base.join("web/init.sls"), b"x: {}\n");
        write(&base.join("big.bin"), &big_clone);
        write(
            &base.join("script.sh"),
            b"#!/bin/sh\necho \"script ran $1 in $(basename \"$PWD\")\"\n",
        );
        write(&dir.join("secret/key"), b"top secret\n");
        std::os::unix::fs::symlink(dir.join("secret/key"), base.join("leak")).unwrap();
        write(&dir.join("devfiles/hello.txt"), b"hello dev\n");
        format!(
            "auto_accept: true\nfile_roots:\n  base:\n    - {}\n  dev:\n    - {}\n",
            base.display(),
            dir.join("devfiles").display()
        )
    });
    let minion = master.minion("fs1", "");
    master.wait_for("fs1");
    let cache = minion.dir.0.join("root/var/cache/saltq/minion/files");

    let o = master.saltq(&["fs1", "cp.list_master", "--out", "json"]);
    assert_eq!(
        o.json(),
        json!({"fs1": ["big.bin", "hello.txt", "script.sh", "web/init.sls"]}),
        "the symlink out of the root is not listed: {o:?}"
    );
    let o = master.saltq(&["fs1", "cp.list_master", "saltenv=dev", "--out", "json"]);
    assert_eq!(o.json(), json!({"fs1": ["hello.txt"]}), "{o:?}");
    let o = master.saltq(&["fs1", "cp.list_master_dirs", "--out", "json"]);
    assert_eq!(o.json(), json!({"fs1": ["web"]}), "{o:?}");
    let o = master.saltq(&["fs1", "cp.list_states", "--out", "json"]);
    assert_eq!(o.json(), json!({"fs1": ["web"]}), "{o:?}");

    // The big file, chunked, lands whole; its hash on the master is the copy's.
    let dest = minion.dir.0.join("dest");
    std::fs::create_dir_all(&dest).unwrap();
    let target = dest.join("big.bin").display().to_string();
    let o = master.saltq(&[
        "fs1",
        "cp.get_file",
        "salt://big.bin",
        &target,
        "--out",
        "json",
    ]);
    assert_eq!(o.json(), json!({"fs1": target}), "{o:?}");
    assert!(std::fs::read(&target).unwrap() == big, "the copy differs");
    assert!(std::fs::read(cache.join("base/big.bin")).unwrap() == big);
    let remote = master.saltq(&["fs1", "cp.hash_file", "salt://big.bin", "--out", "json"]);
    let local = master.saltq(&["fs1", "cp.hash_file", &target, "--out", "json"]);
    assert_eq!(
        remote.json()["fs1"]["hash_type"],
        json!("sha256"),
        "{remote:?}"
    );
    assert_eq!(remote.json(), local.json());
    assert_eq!(served(&master, "big.bin"), 1);

    // Fetched again: the hash matches the cached copy, nothing is streamed.
    let again = dest.join("again.bin").display().to_string();
    let o = master.saltq(&[
        "fs1",
        "cp.get_file",
        "salt://big.bin",
        &again,
        "--out",
        "json",
    ]);
    assert_eq!(o.json(), json!({"fs1": again}), "{o:?}");
    assert!(std::fs::read(&again).unwrap() == big);
    let o = master.saltq(&["fs1", "cp.cache_file", "salt://big.bin", "--out", "json"]);
    assert_eq!(
        o.json(),
        json!({"fs1": cache.join("base/big.bin").display().to_string()}),
        "{o:?}"
    );
    assert_eq!(
        served(&master, "big.bin"),
        1,
        "served from the minion's cache"
    );

    // Changed on the master: fetched again.
    let changed = noise(1024 * 1024 + 1, 11);
    std::fs::write(master.dir.0.join("files/big.bin"), &changed).unwrap();
    let o = master.saltq(&["fs1", "cp.cache_file", "salt://big.bin", "--out", "json"]);
    assert_eq!(o.code, 0, "{o:?}");
    eventually(
        "the changed file is served",
        std::time::Duration::from_secs(5),
        || (served(&master, "big.bin") == 2).then_some(()),
    );
    assert!(std::fs::read(cache.join("base/big.bin")).unwrap() == changed);

    // Escapes are refused by name, through the master.
    for (path, why) in [
        ("salt://../secret/key", "climbs out with '..'"),
        ("salt:///etc/passwd", "is absolute"),
        (
            "salt://leak",
            "resolves outside the file roots of saltenv base",
        ),
    ] {
        let o = master.saltq(&["fs1", "cp.get_file", path, &target, "--out", "json"]);
        let text = o.json()["fs1"].as_str().unwrap_or_default().to_owned();
        assert!(
            text.starts_with("ERROR: salt:// path") && text.contains(why),
            "{path}: {o:?}"
        );
    }
    assert!(!cache.join("base/leak").exists());

    // A missing file is Salt's "".
    let o = master.saltq(&[
        "fs1",
        "cp.get_file",
        "salt://nope",
        &target,
        "--out",
        "json",
    ]);
    assert_eq!(o.json(), json!({"fs1": ""}), "{o:?}");

    // cmd.script from the fileserver.
    let o = master.saltq(&[
        "fs1",
        "cmd.script",
        "salt://script.sh",
        "args=[hi]",
        &format!("cwd={}", dest.display()),
        "--out",
        "json",
    ]);
    let ret = &o.json()["fs1"];
    assert_eq!(ret["retcode"], json!(0), "{o:?}");
    assert_eq!(ret["stdout"], json!("script ran hi in dest"), "{o:?}");
    let o = master.saltq(&["fs1", "cmd.script", "salt://nope.sh", "--out", "json"]);
    assert_eq!(o.json()["fs1"]["cache_error"], json!(true), "{o:?}");
}

/// `saltq-minion call --local` serves `salt://` from the minion's own `file_roots` (Salt's
/// `file_client: local`), caching into its cachedir the same way.
#[test]
fn call_local_uses_the_minions_own_file_roots() {
    let dir = saltq_tests::Scratch::new("fs-local");
    let srv = dir.0.join("srv");
    write(&srv.join("top.sls"), b"base: {}\n");
    write(&srv.join("app/init.sls"), b"a: {}\n");
    write(&dir.0.join("dev/only.txt"), b"dev\n");
    std::fs::create_dir_all(dir.0.join("etc")).unwrap();
    std::fs::write(
        dir.0.join("etc/minion"),
        format!(
            "id: loc1\nroot_dir: {root}/root\nfile_roots:\n  base:\n    - {srv}\n  dev:\n    - {root}/dev\n",
            root = dir.0.display(),
            srv = srv.display()
        ),
    )
    .unwrap();
    let call_code = |args: &[&str], code: i32| {
        let o = std::process::Command::new(saltq_tests::bin("saltq-minion"))
            .arg("-c")
            .arg(dir.0.join("etc"))
            .args(["call", "--local"])
            .args(args)
            .args(["--out", "json"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(code), "{args:?}: {o:?}");
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["local"].clone()
    };
    let call = |args: &[&str]| call_code(args, 0);
    assert_eq!(
        call(&["cp.list_master"]),
        json!(["app/init.sls", "top.sls"])
    );
    assert_eq!(call(&["cp.list_states"]), json!(["app", "top"]));
    assert_eq!(
        call(&["cp.list_master", "saltenv=dev"]),
        json!(["only.txt"])
    );
    let cached = dir.0.join("root/var/cache/saltq/minion/files/dev/only.txt");
    assert_eq!(
        call(&["cp.cache_file", "salt://only.txt?saltenv=dev"]),
        json!(cached.display().to_string())
    );
    assert_eq!(std::fs::read_to_string(&cached).unwrap(), "dev\n");
    let refused = call_code(&["cp.cache_file", "salt://../etc/minion"], 1);
    assert!(
        refused
            .as_str()
            .is_some_and(|t| t.contains("climbs out with '..'")),
        "{refused}"
    );
}
