//! Writing the files `saltutil.sync_*` fetched from the master into the minion's module
//! cache (`<cachedir>/extmods/<kind>/`), as Salt's `salt/utils/extmods.py` does: new and
//! changed files are written (each atomically: a temporary file renamed into place), files
//! the master no longer has are removed, and the answer lists `<kind>.<name>` for each file
//! written.

use std::collections::BTreeSet;
use std::fs::{DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::context::SyncedFile;

/// What a sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Installed {
    /// `<kind>.<name>` for each file written (new or changed), in the master's order.
    pub changed: Vec<String>,
    /// Whether anything changed on disk (written or removed): the modules need a refresh.
    pub touched: bool,
}

/// A file name that is safe to write in the cache directory: one plain, visible name.
pub(crate) fn safe_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\0']) && name.len() <= 255
}

/// The module name a file gives in the answer: one extension stripped (`mymod.py` ->
/// `mymod`).
fn stem(name: &str) -> &str {
    name.rsplit_once('.').map_or(name, |(stem, _)| stem)
}

fn mode(file: &SyncedFile) -> u32 {
    if file.executable { 0o700 } else { 0o600 }
}

/// Installs `files` in `dir`, keeping only those whose module name `keep` accepts, and
/// removes every other file there. Refuses the whole set (writing nothing) when a name is not
/// a plain file name.
pub(crate) fn install(
    dir: &Path,
    kind: &str,
    files: &[SyncedFile],
    keep: impl Fn(&str) -> bool,
) -> io::Result<Installed> {
    if let Some(bad) = files.iter().find(|f| !safe_name(&f.name)) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing the file name {:?} from the master", bad.name),
        ));
    }
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mut out = Installed::default();
    let mut remote = BTreeSet::new();
    for file in files.iter().filter(|f| keep(stem(&f.name))) {
        remote.insert(file.name.as_str());
        let dest = dir.join(&file.name);
        let same = std::fs::read(&dest).is_ok_and(|old| old == file.contents)
            && std::fs::symlink_metadata(&dest)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o777 == mode(file));
        if same {
            continue;
        }
        write_atomically(dir, file)?;
        out.changed.push(format!("{kind}.{}", stem(&file.name)));
        out.touched = true;
    }
    for entry in std::fs::read_dir(dir)?.flatten() {
        let name = entry.file_name();
        let stale = name.to_str().is_none_or(|n| !remote.contains(n));
        if stale && !entry.file_type()?.is_dir() {
            std::fs::remove_file(entry.path())?;
            out.touched = true;
        }
    }
    Ok(out)
}

/// Writes one file through a temporary name in the same directory, then renames it into
/// place, so that a module is never seen half-written.
fn write_atomically(dir: &Path, file: &SyncedFile) -> io::Result<()> {
    let tmp = dir.join(format!(".{}.tmp-{}", file.name, std::process::id()));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode(file))
            .open(&tmp)?;
        f.write_all(&file.contents)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode(file)))?;
        f.sync_all()?;
        std::fs::rename(&tmp, dir.join(&file.name))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, contents: &str, executable: bool) -> SyncedFile {
        SyncedFile {
            name: name.into(),
            contents: contents.as_bytes().to_vec(),
            executable,
        }
    }

    #[test]
    fn writes_updates_and_removes() -> io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let dir = tmp.path().join("extmods/modules");
        let all = |_: &str| true;
        let first = [file("a.py", "1", true), file("b", "2", false)];
        let got = install(&dir, "modules", &first, all)?;
        assert_eq!(got.changed, ["modules.a", "modules.b"]);
        assert!(got.touched);
        let meta = std::fs::metadata(dir.join("a.py"))?;
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        let meta = std::fs::metadata(dir.join("b"))?;
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);

        // Unchanged files are not listed; nothing is touched.
        let got = install(&dir, "modules", &first, all)?;
        assert_eq!(got, Installed::default());

        // A changed file is listed, a file gone from the master removed (touched, unlisted).
        let second = [file("a.py", "1 changed", true)];
        let got = install(&dir, "modules", &second, all)?;
        assert_eq!(got.changed, ["modules.a"]);
        assert!(got.touched);
        assert!(!dir.join("b").exists());
        assert_eq!(std::fs::read_to_string(dir.join("a.py"))?, "1 changed");

        // A blacklisted module is not written, and removed when present.
        let got = install(&dir, "modules", &second, |m| m != "a")?;
        assert!(got.changed.is_empty() && got.touched);
        assert!(!dir.join("a.py").exists());
        Ok(())
    }

    #[test]
    fn unsafe_names_are_refused() -> io::Result<()> {
        let tmp = tempfile::tempdir()?;
        for name in ["../x", "a/b", ".hidden", "", "/etc/passwd"] {
            let got = install(tmp.path(), "modules", &[file(name, "x", true)], |_| true);
            assert!(got.is_err(), "{name:?} was accepted");
        }
        assert_eq!(std::fs::read_dir(tmp.path())?.count(), 0);
        Ok(())
    }
}
