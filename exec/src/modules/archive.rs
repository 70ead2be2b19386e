//! Salt's `archive` module, the part `archive.extracted` needs: `archive.list` (tar and zip,
//! read natively as Salt reads them with Python's `tarfile` and `zipfile`), `archive.unzip`
//! and `archive.is_encrypted`. tar archives may be plain, gzip or bzip2 compressed (read in
//! process), or xz compressed (through the `xz` command, as Salt falls back to it).
//!
//! The listing and the extraction are plain functions over paths ([`list`], [`verbose`],
//! [`extract_tar`], [`extract_zip`]), shared with the `archive` state module.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, truthy};

use crate::error::ExecError;
use crate::spec::{Call, Function, Lit, Param};

/// The `archive` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("archive.is_encrypted", handler!(is_encrypted))
        .params(&[
            Param::req("name"),
            Param::opt("clean", Lit::Bool(false)),
            Param::opt("saltenv", Lit::Str("base")),
            Param::opt("source_hash", Lit::None),
            Param::opt("use_etag", Lit::Bool(false)),
        ])
        .doc(IS_ENCRYPTED_DOC),
    Function::new("archive.list", handler!(list_fn))
        .params(&[
            Param::req("name"),
            Param::opt("archive_format", Lit::None),
            Param::opt("options", Lit::None),
            Param::opt("strip_components", Lit::None),
            Param::opt("clean", Lit::Bool(false)),
            Param::opt("verbose", Lit::Bool(false)),
            Param::opt("saltenv", Lit::Str("base")),
            Param::opt("source_hash", Lit::None),
            Param::opt("use_etag", Lit::Bool(false)),
        ])
        .py_name("list_")
        .doc(LIST_DOC),
    Function::new("archive.unzip", handler!(unzip))
        .params(&[
            Param::req("zip_file"),
            Param::req("dest"),
            Param::opt("excludes", Lit::None),
            Param::opt("options", Lit::None),
            Param::opt("template", Lit::None),
            Param::opt("runas", Lit::None),
            Param::opt("trim_output", Lit::Bool(false)),
            Param::opt("password", Lit::None),
            Param::opt("extract_perms", Lit::Bool(true)),
        ])
        .doc(UNZIP_DOC),
];

/// Salt's `guess_archive_type`: `tar`, `zip` or `rar` from the file name's ending.
pub fn guess_archive_type(name: &str) -> Option<&'static str> {
    let name = name.to_lowercase();
    for ending in [
        "tar", "tar.gz", "tgz", "tar.bz2", "tbz2", "tbz", "tar.xz", "txz", "tar.lzma", "tlz",
    ] {
        if name.ends_with(&format!(".{ending}")) {
            return Some("tar");
        }
    }
    for ending in ["zip", "rar"] {
        if name.ends_with(&format!(".{ending}")) {
            return Some(ending);
        }
    }
    None
}

/// An archive's members as Salt's `archive.list` sorts them out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    /// Directories, each ending in `/`.
    pub dirs: Vec<String>,
    /// Regular files (and anything not a directory or symlink).
    pub files: Vec<String>,
    /// Symbolic links.
    pub links: Vec<String>,
}

/// The bytes of a tar archive, decompressed: gzip and bzip2 in process, xz with `xz`.
fn tar_bytes(path: &Path) -> Result<Vec<u8>, String> {
    let raw = std::fs::read(path).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    if raw.starts_with(&[0x1f, 0x8b]) {
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(|e| e.to_string())?;
    } else if raw.starts_with(b"BZh") {
        bzip2::read::MultiBzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(|e| e.to_string())?;
    } else if raw.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        let o = std::process::Command::new("xz")
            .args(["--decompress", "--stdout"])
            .arg(path)
            .output()
            .map_err(|e| e.to_string())?;
        if !o.status.success() {
            return Err(String::from_utf8_lossy(&o.stderr).trim_end().to_owned());
        }
        out = o.stdout;
    } else {
        out = raw;
    }
    Ok(out)
}

/// A tar member's name as Python's `tarfile` gives it: a directory's trailing `/` removed.
fn tar_name(entry: &tar::Entry<'_, &[u8]>) -> Result<String, String> {
    let path = entry.path().map_err(|e| e.to_string())?;
    let name = path.to_string_lossy().into_owned();
    Ok(if entry.header().entry_type().is_dir() {
        name.trim_end_matches('/').to_owned()
    } else {
        name
    })
}

/// The members of a tar archive, in archive order: `(name, kind)`.
fn tar_members(data: &[u8]) -> Result<Vec<(String, tar::EntryType)>, String> {
    let mut archive = tar::Archive::new(data);
    let mut out = Vec::new();
    for entry in archive.entries().map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        out.push((tar_name(&entry)?, entry.header().entry_type()));
    }
    if out.is_empty() && !data.iter().all(|b| *b == 0) {
        return Err("not a tar archive".into());
    }
    Ok(out)
}

/// Salt's `_list_tar`.
pub fn list_tar(path: &Path) -> Result<Listing, String> {
    let data = tar_bytes(path)?;
    let mut l = Listing::default();
    for (name, kind) in tar_members(&data)? {
        if kind.is_symlink() {
            l.links.push(name);
        } else if kind.is_dir() {
            l.dirs.push(format!("{name}/"));
        } else {
            l.files.push(name);
        }
    }
    Ok(l)
}

/// The Unix mode in a zip member's external attributes (0 when none was stored).
fn zip_mode(f: &zip::read::ZipFile<'_, std::fs::File>) -> u32 {
    f.unix_mode().unwrap_or(0)
}

/// Salt's `_list_zip`: members by their Unix mode, and every parent directory of a file.
pub fn list_zip(path: &Path) -> Result<Listing, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut z = zip::ZipArchive::new(file).map_err(|_| "not a ZIP file".to_owned())?;
    let mut dirs: Vec<String> = Vec::new();
    let mut l = Listing::default();
    for i in 0..z.len() {
        let f = z.by_index_raw(i).map_err(|e| e.to_string())?;
        let name = f.name().map_err(|e| e.to_string())?.into_owned();
        let mode = zip_mode(&f) & 0o170000;
        if mode == 0o120000 {
            l.links.push(name);
        } else if mode == 0o040000 || (mode == 0 && name.ends_with('/')) {
            if !dirs.contains(&name) {
                dirs.push(name);
            }
        } else {
            l.files.push(name);
        }
    }
    for path in l.files.clone() {
        if let Some(i) = path.rfind('/') {
            let dir = path[..=i].to_owned();
            if !dirs.contains(&dir) {
                dirs.push(dir.clone());
            }
            l.files.retain(|f| *f != dir);
        }
    }
    l.dirs = dirs;
    Ok(l)
}

/// Lists an archive of the given format (`tar` or `zip`); the error is Salt's text.
pub fn list(path: &Path, name: &str, format: &str) -> Result<Listing, String> {
    match format {
        "tar" => list_tar(path).map_err(|_| {
            format!(
                "Unable to list contents of {name}. If this is an XZ-compressed tar archive, \
                 install XZ Utils to enable listing its contents. If it is compressed using \
                 something other than XZ, it may be necessary to specify CLI options to \
                 decompress the archive. See the documentation for details."
            )
        }),
        "zip" => list_zip(path).map_err(|_| format!("{name} is not a ZIP file")),
        other => Err(format!("Unsupported archive format '{other}'")),
    }
}

/// Salt's `verbose=True` answer: `dirs`, `files`, `links` sorted, and the top-level ones.
pub fn verbose(l: &Listing) -> Map<String, Value> {
    let sorted = |v: &[String]| {
        let mut v = v.to_vec();
        v.sort();
        v
    };
    let dirs = sorted(&l.dirs);
    let files = sorted(&l.files);
    let links = sorted(&l.links);
    let mut top_dirs: Vec<String> = dirs
        .iter()
        .filter(|d| d.matches('/').count() == 1)
        .cloned()
        .collect();
    let prefix = common_prefix(&dirs);
    if let Some((first, _)) = prefix.split_once('/') {
        let p = format!("{first}/");
        if !top_dirs.contains(&p) {
            top_dirs.push(p);
        }
    }
    let top_files: Vec<String> = files.iter().filter(|f| !f.contains('/')).cloned().collect();
    let top_links: Vec<String> = links.iter().filter(|f| !f.contains('/')).cloned().collect();
    let mut m = Map::new();
    m.insert("dirs".into(), json!(dirs));
    m.insert("files".into(), json!(files));
    m.insert("links".into(), json!(links));
    m.insert("top_level_dirs".into(), json!(top_dirs));
    m.insert("top_level_files".into(), json!(top_files));
    m.insert("top_level_links".into(), json!(top_links));
    m
}

/// Python's `os.path.commonprefix`: the longest common leading text.
fn common_prefix(items: &[String]) -> String {
    let Some(first) = items.first() else {
        return String::new();
    };
    let mut end = first.len();
    for item in &items[1..] {
        end = first
            .char_indices()
            .zip(item.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8())
            .min(end);
    }
    first[..end].to_owned()
}

/// Extracts a tar archive into `dest` as Python's `tarfile.extractall` does; the member
/// names (`tar.getnames()`).
pub fn extract_tar(path: &Path, dest: &Path) -> Result<Vec<String>, String> {
    let data = tar_bytes(path)?;
    let names: Vec<String> = tar_members(&data)?.into_iter().map(|(n, _)| n).collect();
    let mut archive = tar::Archive::new(&data[..]);
    archive.set_preserve_permissions(true);
    archive.set_overwrite(true);
    archive.unpack(dest).map_err(|e| e.to_string())?;
    Ok(names)
}

/// Extracts a zip archive into `dest` as Salt's `archive.unzip` does (symlinks made as
/// links, modes applied with `extract_perms`); the member names.
pub fn extract_zip(path: &Path, dest: &Path, extract_perms: bool) -> Result<Vec<String>, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut z = zip::ZipArchive::new(file).map_err(|e| e.to_string())?;
    let mut names = Vec::new();
    for i in 0..z.len() {
        let mut f = z.by_index(i).map_err(|e| e.to_string())?;
        let name = f.name().map_err(|e| e.to_string())?.into_owned();
        let Some(rel) = f.enclosed_name() else {
            return Err(format!("unsafe path in zip archive: {name}"));
        };
        let out: PathBuf = dest.join(rel);
        let mode = zip_mode(&f);
        if mode & 0o170000 == 0o120000 {
            let mut target = String::new();
            f.read_to_string(&mut target).map_err(|e| e.to_string())?;
            if let Some(parent) = out.parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            std::os::unix::fs::symlink(&target, &out).map_err(|e| e.to_string())?;
            names.push(name);
            continue;
        }
        if name.ends_with('/') {
            std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
        } else {
            if let Some(parent) = out.parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            let mut w = std::fs::File::create(&out).map_err(|e| e.to_string())?;
            std::io::copy(&mut f, &mut w).map_err(|e| e.to_string())?;
        }
        if extract_perms {
            let perm = if mode & 0o7777 == 0 {
                let umask = nix::sys::stat::umask(nix::sys::stat::Mode::empty());
                nix::sys::stat::umask(umask);
                let base = if name.ends_with('/') { 0o777 } else { 0o666 };
                base & !umask.bits()
            } else {
                mode & 0o7777
            };
            std::fs::set_permissions(&out, std::fs::Permissions::from_mode(perm))
                .map_err(|e| e.to_string())?;
        }
        names.push(name);
    }
    Ok(names)
}

/// Salt's `_trim_files`: at most `trim` names (100 for `True`) and a note of the cut.
pub fn trim_files(mut files: Vec<String>, trim: &Value) -> Vec<String> {
    let count = match trim {
        Value::Bool(_) => 100,
        other => python::str(other).parse::<usize>().unwrap_or(100),
    };
    if *trim != Value::Bool(false) && files.len() > count {
        files.truncate(count);
        files.push(format!("List trimmed after {count} files."));
    }
    files
}

/// The local path of an archive named by `archive.list` and friends: a local path, or a
/// `salt://` file cached from the master.
async fn cached(call: &Call, name: &str) -> Result<PathBuf, ExecError> {
    let saltenv = python::str(call.arg("saltenv"));
    match crate::modules::cp::cache_one(call, name, &saltenv).await? {
        Value::String(p) => Ok(PathBuf::from(p)),
        _ => Err(ExecError::execution(format!("Failed to cache {name}"))),
    }
}

const LIST_DOC: &str = "List the files and directories in a tar or zip archive (a local path or
a ``salt://`` URL). ``verbose=True`` returns ``dirs``, ``files``, ``links`` and the
``top_level_*`` entries; ``strip_components`` removes leading path components.

CLI Example:

.. code-block:: bash

    salt '*' archive.list /path/to/myfile.tar.gz
    salt '*' archive.list salt://foo.tar.gz verbose=True
";

async fn list_fn(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let path = cached(&call, &name).await?;
    let format = match call.opt_arg("archive_format") {
        Some(f) => python::str(f),
        None => guess_archive_type(&name)
            .ok_or_else(|| {
                ExecError::execution(
                    "Unable to guess archive format, please pass an 'archive_format' argument.",
                )
            })?
            .to_owned(),
    };
    let mut l = list(&path, &name, &format).map_err(|e| {
        ExecError::execution(format!(
            "{e} Additional info follows:\n\narchive location:\n    {}",
            path.display()
        ))
    })?;
    if let Some(strip) = call.opt_arg("strip_components") {
        let n = python::str(strip).parse::<usize>().unwrap_or(0);
        if n == 0 {
            return Err(ExecError::execution(
                "'strip_components' must be a positive integer",
            ));
        }
        for item in [&mut l.dirs, &mut l.files, &mut l.links] {
            *item = item
                .iter()
                .filter_map(|p| p.splitn(n + 1, '/').nth(n).map(str::to_owned))
                .filter(|p| !p.is_empty())
                .collect();
            item.sort();
        }
    }
    if truthy(call.arg("verbose")) {
        return Ok(Value::Object(verbose(&l)));
    }
    let mut all: Vec<String> = l.dirs.into_iter().chain(l.files).chain(l.links).collect();
    all.sort();
    Ok(json!(all))
}

const IS_ENCRYPTED_DOC: &str = "Return ``True`` if a zip archive is password-protected

CLI Example:

.. code-block:: bash

    salt '*' archive.is_encrypted /path/to/myfile.zip
";

async fn is_encrypted(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let path = cached(&call, &name).await?;
    let file = std::fs::File::open(&path).map_err(|e| ExecError::execution(e.to_string()))?;
    let mut z = zip::ZipArchive::new(file)
        .map_err(|_| ExecError::execution(format!("{name} is not a ZIP file")))?;
    for i in 0..z.len() {
        let f = z
            .by_index_raw(i)
            .map_err(|e| ExecError::execution(e.to_string()))?;
        if f.encrypted() {
            return Ok(json!(true));
        }
    }
    Ok(json!(false))
}

const UNZIP_DOC: &str = "Extract a zip archive into ``dest``; returns the names extracted
(``trim_output`` cuts the list, ``True`` at 100). Password-protected archives are not
supported by saltq.

CLI Example:

.. code-block:: bash

    salt '*' archive.unzip /tmp/zipfile.zip /home/strongbad/
";

async fn unzip(call: Call) -> Result<Value, ExecError> {
    if call.opt_arg("password").is_some_and(truthy) {
        return Err(ExecError::execution(
            "password-protected zip archives are not supported by saltq",
        ));
    }
    let zip_file = PathBuf::from(python::str(call.arg("zip_file")));
    let dest = PathBuf::from(python::str(call.arg("dest")));
    let perms = truthy(call.arg("extract_perms"));
    let excludes: Vec<String> = match call.opt_arg("excludes") {
        Some(Value::Array(a)) => a.iter().map(python::str).collect(),
        Some(v) => python::str(v)
            .split(',')
            .map(|s| s.trim().to_owned())
            .collect(),
        None => Vec::new(),
    };
    let names = tokio::task::spawn_blocking(move || extract_zip(&zip_file, &dest, perms))
        .await
        .map_err(|e| ExecError::execution(e.to_string()))?
        .map_err(|e| {
            ExecError::execution(format!("Exception encountered unpacking zipfile: {e}"))
        })?;
    let names: Vec<String> = names
        .into_iter()
        .filter(|n| !excludes.contains(n))
        .collect();
    Ok(json!(trim_files(names, call.arg("trim_output"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guesses_like_salt() {
        assert_eq!(guess_archive_type("/x/a.TAR.GZ"), Some("tar"));
        assert_eq!(guess_archive_type("a.tbz2"), Some("tar"));
        assert_eq!(guess_archive_type("a.zip"), Some("zip"));
        assert_eq!(guess_archive_type("a.gz"), None);
    }

    #[test]
    fn top_levels_like_salt() {
        let l = Listing {
            dirs: vec!["app/bin/".into(), "app/".into()],
            files: vec!["app/bin/run".into(), "top.txt".into()],
            links: vec!["app/link".into()],
        };
        assert_eq!(
            Value::Object(verbose(&l)),
            json!({"dirs": ["app/", "app/bin/"], "files": ["app/bin/run", "top.txt"],
                   "links": ["app/link"], "top_level_dirs": ["app/"],
                   "top_level_files": ["top.txt"], "top_level_links": []})
        );
        // Only nested directories listed: the common prefix's first part is the top.
        let l = Listing {
            dirs: vec!["a/b/".into(), "a/c/".into()],
            ..Listing::default()
        };
        assert_eq!(verbose(&l)["top_level_dirs"], json!(["a/"]));
    }

    #[test]
    fn trims_like_salt() {
        let files: Vec<String> = (0..5).map(|i| i.to_string()).collect();
        assert_eq!(trim_files(files.clone(), &json!(false)).len(), 5);
        assert_eq!(
            trim_files(files, &json!(2)),
            vec![
                "0".to_owned(),
                "1".into(),
                "List trimmed after 2 files.".into()
            ]
        );
    }
}
