//! `archive.extracted` replayed against Salt 3007.8 (`data/archive/cases.json`, recorded by
//! `data/archive/gen.py` on the archives kept beside it): tar.gz, tar.bz2 and zip sources,
//! `source_hash` (right and wrong), `if_missing`, `enforce_toplevel`, `trim_output`,
//! `overwrite`, `clean`, ownership, test mode and the error comments, extracted into a
//! scratch directory; then what was extracted is checked on disk. Also: an `http(s)://`
//! source is refused naming it, by `archive.extracted` and `file.managed` alike.

mod sysrec;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use serde_json::{Map, json};

fn data(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/archive")
        .join(name)
}

fn root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[tokio::test]
async fn archive_extracted_matches_salt() {
    let rec = sysrec::load("archive");
    let dir = sysrec::scratch(&rec);
    for a in [
        "app.tar.gz",
        "app.tar.bz2",
        "app.zip",
        "flat.tar.gz",
        "bad.tar.gz",
    ] {
        std::fs::copy(data(a), dir.path().join(a)).expect("copy archive");
    }
    std::fs::copy(data("app.tar.gz"), dir.path().join("archive.bin")).expect("copy");
    std::fs::create_dir_all(dir.path().join("out11/a.txt")).expect("out11");
    let ctx = sysrec::ctx_for(&rec, dir.path(), Map::new(), json!({}));
    // Changing owners needs root; elsewhere those steps run but are not compared.
    let skip: &[&str] = if root() {
        &[]
    } else {
        eprintln!("not root: the ownership steps are not compared");
        &["owner_test", "owner", "owner_again"]
    };
    let failures = sysrec::replay(&rec, &ctx, dir.path(), skip).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(sysrec::steps(&rec) >= 30);

    // On disk: the tree, the modes and the link as the archive has them.
    let out = dir.path().join("out2/app");
    assert_eq!(
        std::fs::read_to_string(out.join("README")).unwrap(),
        "the app\n"
    );
    let mode = std::fs::metadata(out.join("bin/run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(
        std::fs::read_link(out.join("link")).unwrap(),
        Path::new("README")
    );
    let zip = dir.path().join("out6/app");
    assert_eq!(
        std::fs::read_to_string(zip.join("docs/guide.txt")).unwrap(),
        "guide\n"
    );
    assert!(
        !dir.path().join("out3").exists(),
        "a wrong source_hash extracts nothing"
    );
    assert!(!dir.path().join("out4").exists(), "if_missing held");
    if root() {
        let nobody = nix::unistd::User::from_name("nobody").unwrap().unwrap();
        let m = std::fs::metadata(dir.path().join("out1/app/docs/guide.txt")).unwrap();
        assert_eq!(
            m.uid(),
            nobody.uid.as_raw(),
            "ownership enforced recursively"
        );
    }
}

#[tokio::test]
async fn remote_sources_are_refused_naming_them() {
    let ctx = saltq_exec::CallContext::local(json!({}), json!({"id": "m"}));
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("x").display().to_string();
    for (fun, args) in [
        (
            "archive.extracted",
            json!([{"name": target}, {"source": "https://example.com/app.tar.gz"}]),
        ),
        (
            "file.managed",
            json!([{"name": target}, {"source": "http://example.com/app.conf"}, {"skip_verify": true}]),
        ),
    ] {
        let step = json!({"id": "s", "fun": fun, "args": args, "test": false});
        let got = sysrec::run_step(&ctx, &step, "/nonexistent").await;
        let comment = got["comment"].as_str().unwrap_or_default();
        assert_eq!(got["result"], json!(false), "{fun}: {got}");
        assert!(
            comment.starts_with("http(s) sources are not supported by saltq")
                && comment.contains("example.com"),
            "{fun}: {comment}"
        );
    }
    assert!(!Path::new(&target).exists());
}
