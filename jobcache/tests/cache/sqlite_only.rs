//! What only the SQLite backend can show: a file that cannot be written, a folder created on open.

use std::process::Command;

use saltq_jobcache::{CacheConfig, CacheError, JobCache};
use serde_json::json;

use crate::support::{Fixture, ping_job, ret, skipped, t0};

/// Makes a file read-only for this process; undone on drop.
struct ReadOnly {
    path: std::path::PathBuf,
    /// Whether `chattr +i` was needed (the process may write read-only files, e.g. as root).
    immutable: bool,
}

impl ReadOnly {
    /// Makes `path` unwritable, or says why it cannot.
    fn new(path: &std::path::Path) -> Result<ReadOnly, String> {
        let mut perms = std::fs::metadata(path)
            .map_err(|e| e.to_string())?
            .permissions();
        perms.set_readonly(true);
        std::fs::set_permissions(path, perms).map_err(|e| e.to_string())?;
        let mut guard = ReadOnly {
            path: path.to_owned(),
            immutable: false,
        };
        if std::fs::OpenOptions::new().write(true).open(path).is_ok() {
            // Permissions do not bind this process; the immutable attribute binds even root.
            let status = Command::new("chattr").arg("+i").arg(path).status();
            if !matches!(status, Ok(s) if s.success()) {
                return Err(
                    "this process may write read-only files and `chattr +i` failed".to_owned(),
                );
            }
            guard.immutable = true;
            if std::fs::OpenOptions::new().write(true).open(path).is_ok() {
                return Err("the file stays writable even when immutable".to_owned());
            }
        }
        Ok(guard)
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        if self.immutable {
            let _ = Command::new("chattr").arg("-i").arg(&self.path).status();
        }
        if let Ok(meta) = std::fs::metadata(&self.path) {
            let mut perms = meta.permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            let _ = std::fs::set_permissions(&self.path, perms);
        }
    }
}

/// A cache file that cannot be written still opens and serves reads, but every write (and the
/// readiness probe) fails with an error naming the file and what was being written.
#[tokio::test]
async fn read_only_file_fails_writes() {
    let fx = Fixture::sqlite();
    let path = fx.sqlite_path().expect("sqlite").to_owned();
    let cache = fx.open().await;
    let j = ping_job(t0(), &["m1"]);
    cache.save_job(&j).await.expect("save");
    cache.close().await;

    let _read_only = match ReadOnly::new(&path) {
        Ok(guard) => guard,
        Err(why) => return skipped("sqlite_only::read_only_file_fails_writes", &why),
    };
    let cache = match JobCache::open(&fx.cfg).await {
        Ok(cache) => cache,
        Err(e) => panic!("a read-only cache still opens for reading: {e}"),
    };
    assert_eq!(
        cache.get_job(&j.jid).await.expect("reads still work"),
        Some(j.clone())
    );

    let err = cache
        .store_return(ret(&j.jid, "m1", json!(true)))
        .await
        .expect_err("write refused");
    assert!(matches!(err, CacheError::Write { .. }), "{err:?}");
    let text = err.to_string();
    let path_text = path.display().to_string();
    assert!(
        text.contains(&path_text) && text.contains(&j.jid) && text.contains("m1"),
        "{text}"
    );
    assert!(text.contains("readonly"), "{text}");

    let err = cache
        .save_job(&ping_job(t0() + chrono::Duration::seconds(1), &[]))
        .await
        .expect_err("refused");
    assert!(matches!(err, CacheError::Write { .. }), "{err:?}");
    let err = cache.check_writable().await.expect_err("not writable");
    assert!(matches!(err, CacheError::Write { .. }), "{err:?}");
    assert!(cache.stats().failed_transactions >= 3);
    cache.close().await;
}

/// A path whose folder cannot be created fails to open, naming the path.
#[tokio::test]
async fn unopenable_path_names_it() {
    let fx = Fixture::sqlite();
    let blocker = fx
        .sqlite_path()
        .expect("sqlite")
        .with_file_name("not-a-folder");
    std::fs::write(&blocker, b"a file").expect("write");
    let path = blocker.join("cache.db");
    let err = JobCache::open(&CacheConfig::Sqlite { path: path.clone() })
        .await
        .expect_err("cannot open");
    assert!(matches!(err, CacheError::Open { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("cannot open job cache at {}: ", path.display())),
        "{text}"
    );
}

/// The folder of the cache file is created when missing.
#[tokio::test]
async fn creates_missing_folder() {
    let fx = Fixture::sqlite();
    let path = fx
        .sqlite_path()
        .expect("sqlite")
        .with_file_name("a")
        .join("b")
        .join("cache.db");
    let cache = JobCache::open(&CacheConfig::Sqlite { path: path.clone() })
        .await
        .expect("open");
    cache.check_writable().await.expect("writable");
    assert!(path.exists());
}

/// The file and its write-ahead log together, in bytes.
fn on_disk(path: &std::path::Path) -> u64 {
    let wal = path.with_extension("db-wal");
    [path.to_owned(), wal]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// Pruning every job gives the pages back: the file (with its log) shrinks back to near its
/// empty size instead of keeping the high-water mark of the busiest hour (`keep_jobs_seconds`).
#[tokio::test]
async fn pruning_shrinks_the_file_back() {
    let fx = Fixture::sqlite();
    let path = fx.sqlite_path().expect("a file").to_owned();
    let cache = fx.open().await;
    let empty = on_disk(&path);
    let big = "x".repeat(2000);
    for i in 0..400 {
        let j = ping_job(t0() + chrono::Duration::seconds(i), &["m1", "m2"]);
        cache.save_job(&j).await.expect("save");
        for id in ["m1", "m2"] {
            cache
                .store_return(ret(&j.jid, id, json!(big)))
                .await
                .expect("store");
        }
    }
    let full = on_disk(&path);
    assert!(full > empty + 1_000_000, "{empty} -> {full} bytes");
    let pruned = cache
        .prune(t0() + chrono::Duration::days(1))
        .await
        .expect("prune");
    assert_eq!(pruned, 400);
    let after = on_disk(&path);
    assert!(
        after < empty + 200_000,
        "empty {empty}, full {full}, after pruning {after} bytes"
    );
}
