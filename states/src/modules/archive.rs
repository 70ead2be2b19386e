//! Salt's `archive` state module (`salt/states/archive.py`): `archive.extracted` extracts a
//! tar or zip archive (a local path or `salt://`) into a directory unless its files are
//! there already, with Salt's checks (`source_hash`, `if_missing`, `enforce_toplevel`,
//! `clean`, `force`, `overwrite`), ownership (`user`/`group`), `trim_output`, test mode and
//! Salt's comments and changes. Archives are listed and extracted by `saltq_exec::archive`
//! (tar plain, gzip, bzip2 or xz; zip); `options` hands a tar archive to the `tar` command
//! as Salt does.
//!
//! Not done (each answered with a clear comment): `http(s)://` and other remote sources,
//! password-protected zips, `use_cmd_unzip`/zip `options` (no `archive.cmd_unzip`), rar,
//! signatures; `source_hash_update`, `skip_files_list_verify` and `keep_source` are
//! accepted and ignored (a `salt://` source stays in the minion's cache).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use saltq_exec::archive::{self as ar, Listing};
use saltq_exec::{Lit, Param};
use saltq_semantics::python::{self, truthy};

use super::file::managed::{cache_salt, hash_bytes, remote_source_error, source_sum};
use super::{Ret, StateCall, StateError, StateFunction, state_handler};

const fn opt(name: &'static str) -> Param {
    Param::opt(name, Lit::None)
}

const fn no(name: &'static str) -> Param {
    Param::opt(name, Lit::Bool(false))
}

/// The `archive` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[StateFunction {
    name: "archive.extracted",
    params: &[
        Param::req("name"),
        Param::req("source"),
        opt("source_hash"),
        opt("source_hash_name"),
        no("source_hash_update"),
        no("skip_files_list_verify"),
        no("skip_verify"),
        opt("password"),
        opt("options"),
        opt("list_options"),
        no("force"),
        no("overwrite"),
        no("clean"),
        no("clean_parent"),
        opt("user"),
        opt("group"),
        opt("if_missing"),
        no("trim_output"),
        opt("use_cmd_unzip"),
        Param::opt("extract_perms", Lit::Bool(true)),
        Param::opt("enforce_toplevel", Lit::Bool(true)),
        opt("enforce_ownership_on"),
        opt("archive_format"),
        no("use_etag"),
        opt("signature"),
        opt("source_hash_sig"),
        opt("signed_by_any"),
        opt("signed_by_all"),
        opt("keyring"),
        opt("gnupghome"),
    ],
    kwargs: true,
    handler: state_handler!(extracted),
}];

fn arg_str(call: &StateCall, key: &str) -> Option<String> {
    call.arg(key).map(python::str)
}

fn flag(call: &StateCall, key: &str) -> bool {
    call.arg(key).is_some_and(truthy)
}

fn fail(mut ret: Ret, comment: impl Into<String>) -> Result<Ret, StateError> {
    ret.result = Some(false);
    ret.comment = comment.into();
    Ok(ret)
}

/// Salt's `_add_explanation` (no `source_hash_update` here).
fn explain(comment: &mut String, contents_missing: bool) {
    if contents_missing {
        comment.push_str(", due to absence of one or more files/dirs");
    }
}

/// Python's `os.path.join(name, path)` where `name` ends with `/`.
fn join(name: &str, path: &str) -> String {
    format!("{name}{path}")
}

/// Removes a file, link or directory tree (Salt's `rm_rf`).
fn rm_rf(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Changes the owner of `path` (and everything under it with `recurse`) where it differs;
/// whether anything changed.
fn chown_tree(
    path: &Path,
    uid: Option<u32>,
    gid: Option<u32>,
    recurse: bool,
) -> std::io::Result<bool> {
    let m = std::fs::symlink_metadata(path)?;
    let mut changed = false;
    if uid.is_some_and(|u| u != m.uid()) || gid.is_some_and(|g| g != m.gid()) {
        std::os::unix::fs::lchown(path, uid, gid)?;
        changed = true;
    }
    if recurse && m.is_dir() {
        for e in std::fs::read_dir(path)? {
            changed |= chown_tree(&e?.path(), uid, gid, true)?;
        }
    }
    Ok(changed)
}

/// Whether `path` or anything under it is not owned as asked.
fn owner_differs(path: &Path, uid: Option<u32>, gid: Option<u32>) -> bool {
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if uid.is_some_and(|u| u != m.uid()) || gid.is_some_and(|g| g != m.gid()) {
        return true;
    }
    m.is_dir()
        && std::fs::read_dir(path)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| owner_differs(&e.path(), uid, gid))
}

/// Salt's `--strip-components` parse of tar `options`.
fn strip_components(options: &str) -> Option<usize> {
    let re = regex::Regex::new(r#"--strip(?:-components)?(?:\s+|=)["']?(\d+)["']?"#).ok()?;
    re.captures(options)?.get(1)?.as_str().parse().ok()
}

/// `strip_components` applied to a listing, as `archive.list` does.
fn strip(mut l: Listing, n: usize) -> Listing {
    for item in [&mut l.dirs, &mut l.files, &mut l.links] {
        *item = item
            .iter()
            .filter_map(|p| p.splitn(n + 1, '/').nth(n).map(str::to_owned))
            .filter(|p| !p.is_empty())
            .collect();
        item.sort();
    }
    l
}

fn strings(m: &Map<String, Value>, key: &str) -> Vec<String> {
    m.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().map(python::str).collect())
        .unwrap_or_default()
}

async fn extracted(call: StateCall) -> Result<Ret, StateError> {
    let mut ret = Ret::new(&call.name);
    ret.result = Some(false);
    if flag(&call, "skip_files_list_verify") && flag(&call, "skip_verify") {
        return fail(
            ret,
            "Only one of \"skip_files_list_verify\" and \"skip_verify\" can be set to True",
        );
    }
    let raw_name = call.name.clone();
    if !raw_name.starts_with('/') {
        return fail(ret, format!("{raw_name} is not an absolute path"));
    }
    let trimmed = raw_name.trim_end_matches('/');
    if Path::new(trimmed).is_file() {
        return fail(ret, format!("{trimmed} exists and is not a directory"));
    }
    let name = format!("{trimmed}/");
    let if_missing = arg_str(&call, "if_missing");
    if if_missing.as_ref().is_some_and(|p| !p.starts_with('/')) {
        return fail(ret, "Value for 'if_missing' is not an absolute path");
    }
    let enforce_on = arg_str(&call, "enforce_ownership_on");
    if let Some(p) = &enforce_on {
        if !p.starts_with('/') {
            return fail(
                ret,
                "Value for 'enforce_ownership_on' is not an absolute path",
            );
        }
        if !Path::new(p).starts_with(trimmed) {
            return fail(
                ret,
                format!("Value for 'enforce_ownership_on' must be within {name}"),
            );
        }
    }
    if let Some(p) = &if_missing
        && Path::new(p).exists()
    {
        ret.result = Some(true);
        ret.comment = format!("Path {p} exists");
        return Ok(ret);
    }
    let user = arg_str(&call, "user");
    let group = arg_str(&call, "group");
    let uid = match &user {
        Some(u) => match nix::unistd::User::from_name(u).ok().flatten() {
            Some(u) => Some(u.uid.as_raw()),
            None => return fail(ret, format!("User {u} does not exist")),
        },
        None => None,
    };
    let gid = match &group {
        Some(g) => match nix::unistd::Group::from_name(g).ok().flatten() {
            Some(g) => Some(g.gid.as_raw()),
            None => return fail(ret, format!("Group {g} does not exist")),
        },
        None => None,
    };
    if call.arg("signature").is_some() || call.arg("source_hash_sig").is_some() {
        return fail(
            ret,
            "Cannot verify signatures because the gpg module was not loaded",
        );
    }
    let source = match call.arg("source") {
        Some(Value::Array(items)) => items.first().map(python::str).unwrap_or_default(),
        Some(v) => python::str(v),
        None => String::new(),
    };
    if let Some(msg) = remote_source_error(&source) {
        return fail(ret, msg);
    }
    let source_is_local = !source.starts_with("salt://");
    let mut source_match = source.clone();
    if source_is_local {
        let p = source.strip_prefix("file://").unwrap_or(&source);
        source_match =
            std::fs::canonicalize(p).map_or_else(|_| p.to_owned(), |c| c.display().to_string());
        if !Path::new(&source_match).is_file() {
            return fail(ret, format!("Source file '{source_match}' does not exist"));
        }
    }
    let base = source.split('?').next().unwrap_or(&source).to_owned();
    let format = match arg_str(&call, "archive_format") {
        Some(f) => f.to_lowercase(),
        None => match ar::guess_archive_type(&base) {
            Some(f) => f.to_owned(),
            None => {
                return fail(
                    ret,
                    "Could not guess archive_format from the value of the 'source' argument. \
                     Please set this archive_format to one of the following: tar, rar, zip",
                );
            }
        },
    };
    if !["tar", "rar", "zip"].contains(&format.as_str()) {
        return fail(
            ret,
            format!(
                "Invalid archive_format '{format}'. Either set it to a supported value (tar, \
                 rar, zip) or remove this argument and the archive format will be guessed \
                 based on file extension."
            ),
        );
    }
    let options = arg_str(&call, "options").filter(|o| !o.is_empty());
    let strip_n = options
        .as_deref()
        .filter(|_| format == "tar")
        .and_then(strip_components);
    if format == "zip" {
        if options.is_some() || call.arg("use_cmd_unzip").is_some_and(truthy) {
            return fail(
                ret,
                "archive.cmd_unzip function not available, unzip might not be installed on minion",
            );
        }
        if flag(&call, "password") {
            return fail(
                ret,
                "password-protected zip archives are not supported by saltq",
            );
        }
    } else if flag(&call, "password") {
        return fail(
            ret,
            "The 'password' argument is only supported for zip archives",
        );
    }
    if format == "rar" {
        return fail(
            ret,
            "archive.unrar function not available, rar/unrar might not be installed on minion",
        );
    }
    let trim_output: Value = match call.arg("trim_output") {
        Some(Value::Bool(true)) => json!(100),
        Some(Value::Bool(false)) | None => json!(false),
        Some(v) if !truthy(v) => v.clone(),
        Some(v) => match python::str(v).parse::<i64>() {
            Ok(n) => json!(n),
            Err(_) => {
                return fail(
                    ret,
                    "Invalid value for trim_output, must be True/False or an integer",
                );
            }
        },
    };
    let source_hash = arg_str(&call, "source_hash").filter(|h| !h.is_empty());
    let skip_verify = flag(&call, "skip_verify");
    let sum = match &source_hash {
        Some(h) => match source_sum(&call, &source_match, h).await {
            Ok(s) => Some(s),
            Err(e) => return fail(ret, e),
        },
        None => None,
    };
    let cached: PathBuf = if source_is_local {
        PathBuf::from(&source_match)
    } else {
        if call.test {
            ret.result = None;
            ret.comment = format!(
                "Archive {source_match} would be cached (if necessary) and checked to discover \
                 if extraction is needed"
            );
            return Ok(ret);
        }
        match cache_salt(&call, &source).await {
            Ok(Some(p)) => p,
            Ok(None) => {
                return fail(
                    ret,
                    format!(
                        "Source file {source} not found in saltenv '{}'",
                        call.saltenv
                    ),
                );
            }
            Err(e) => return fail(ret, format!("Failed to cache {source}: {e}")),
        }
    };
    if !source_is_local
        && let Some(s) = &sum
        && !skip_verify
    {
        let data = std::fs::read(&cached).map_err(|e| StateError(e.to_string()))?;
        let real = hash_bytes(&data, &s.hash_type).unwrap_or_default();
        if real != s.hsum {
            return fail(
                ret,
                format!(
                    "File sum set for file {source} of {} does not match real sum of {real}",
                    s.hsum
                ),
            );
        }
    }
    if format == "zip" {
        let path = cached.clone();
        let encrypted = tokio::task::spawn_blocking(move || {
            let f = std::fs::File::open(path).ok()?;
            let mut z = zip::ZipArchive::new(f).ok()?;
            Some((0..z.len()).any(|i| z.by_index_raw(i).is_ok_and(|e| e.encrypted())))
        })
        .await
        .ok()
        .flatten()
        .unwrap_or(false);
        if encrypted {
            return fail(
                ret,
                format!(
                    "Archive {source_match} is password-protected, but no password was specified. \
                     Please set the 'password' argument."
                ),
            );
        }
    }
    // The archive's contents (`archive.list` with `verbose=True`).
    let listed = {
        let path = cached.clone();
        let shown = source_match.clone();
        let fmt = format.clone();
        tokio::task::spawn_blocking(move || ar::list(&path, &shown, &fmt))
            .await
            .map_err(|e| StateError(e.to_string()))?
    };
    let contents = match listed {
        Ok(l) => ar::verbose(&strip_n.map_or(l.clone(), |n| strip(l, n))),
        Err(msg) => {
            // Salt's `CommandExecutionError` carries where the archive was.
            let msg = format!(
                "{msg} Additional info follows:\n\narchive location:\n    {}",
                cached.display()
            );
            let mut errors = Vec::new();
            if if_missing.is_none() {
                errors.push("'if_missing' must be set".to_owned());
            }
            if enforce_on.is_none() && (user.is_some() || group.is_some()) {
                errors.push(
                    "Ownership cannot be managed without setting 'enforce_ownership_on'."
                        .to_owned(),
                );
            }
            let mut msg = msg;
            if !errors.is_empty() {
                msg.push_str("\n\n");
                if format == "tar" {
                    msg.push_str(
                        "If the source archive is a tar archive compressed using a compression \
                         type not natively supported by the tar command, then setting the \
                         'list_options' argument may allow the contents to be listed. \
                         Otherwise, if Salt is unable to determine the files/directories in the \
                         archive, the following workaround(s) would need to be used for this \
                         state to proceed",
                    );
                } else {
                    msg.push_str(
                        "The following workarounds must be used for this state to proceed",
                    );
                }
                msg.push_str(&format!(
                    " (assuming the source file is a valid {format} archive):\n"
                ));
                for e in errors {
                    msg.push_str(&format!("\n- {e}"));
                }
            }
            return fail(ret, msg);
        }
    };
    let top_dirs = strings(&contents, "top_level_dirs");
    let top_files = strings(&contents, "top_level_files");
    let top_links = strings(&contents, "top_level_links");
    if call.arg("enforce_toplevel").is_none_or(truthy)
        && (top_dirs.len() > 1 || !top_files.is_empty())
    {
        return fail(
            ret,
            format!(
                "Archive does not have a single top-level directory. To allow this archive to \
                 be extracted, set 'enforce_toplevel' to False. To avoid a '{format}-bomb' it \
                 may also be advisable to set a top-level directory by adding it to the 'name' \
                 value (for example, setting 'name' to {name}some_dir instead of {name})."
            ),
        );
    }
    let clean = flag(&call, "clean");
    if clean && flag(&call, "clean_parent") {
        return fail(
            ret,
            "Only one of 'clean' and 'clean_parent' can be set to True",
        );
    }
    let mut extraction_needed = flag(&call, "overwrite");
    let mut contents_missing = false;
    let mut incorrect = Vec::new();
    for (key, want) in [("dirs", 'd'), ("files", 'f'), ("links", 'l')] {
        for path in strings(&contents, key) {
            let full = join(&name, &path);
            match std::fs::symlink_metadata(full.trim_end_matches('/')) {
                Ok(m) => {
                    let ok = match want {
                        'd' => m.is_dir(),
                        'l' => m.file_type().is_symlink(),
                        _ => !m.is_dir() && !m.file_type().is_symlink(),
                    };
                    if !ok {
                        incorrect.push(path);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    extraction_needed = true;
                    contents_missing = true;
                }
                Err(e) if e.raw_os_error() == Some(nix::libc::ENOTDIR) => {}
                Err(e) => return fail(ret, e.to_string()),
            }
        }
    }
    if !incorrect.is_empty() {
        let list: String = incorrect.iter().map(|x| format!("\n- {x}")).collect();
        let mut comment = format!(
            "The below paths (relative to {name}) exist, but are the incorrect type (file \
             instead of directory, symlink instead of file, etc.)."
        );
        if call.test && clean {
            ret.result = None;
            ret.comment = format!(
                "{comment} Since the 'clean' option is enabled, the destination paths would be \
                 cleared and the archive would be extracted.\n\n{}",
                list.trim_start_matches('\n')
            );
            return Ok(ret);
        }
        if !clean {
            if !flag(&call, "force") {
                comment.push_str(&format!(
                    " To proceed with extraction, set 'force' to True. Note that this will \
                     remove these paths before extracting.\n{list}"
                ));
                return fail(ret, comment);
            }
            for path in &incorrect {
                let full = join(&name, path);
                if let Err(e) = rm_rf(Path::new(full.trim_end_matches('/'))) {
                    return fail(
                        ret,
                        format!(
                            "One or more paths existed by were the incorrect type (i.e. file \
                             instead of directory or vice-versa), but could not be removed. The \
                             following errors were observed:\n\n- {e}"
                        ),
                    );
                }
                push(&mut ret.changes, "removed", json!(full));
                extraction_needed = true;
            }
        }
    }
    let mut created_destdir = false;
    let mut files: Vec<String> = Vec::new();
    if extraction_needed {
        if source_is_local
            && let Some(s) = &sum
            && !skip_verify
        {
            let data = std::fs::read(&cached).map_err(|e| StateError(e.to_string()))?;
            if hash_bytes(&data, &s.hash_type).as_deref() != Some(s.hsum.as_str()) {
                return fail(
                    ret,
                    format!(
                        "{source_match} does not match the desired source_hash {}",
                        s.hsum
                    ),
                );
            }
        }
        if call.test {
            ret.result = None;
            ret.comment = format!("Archive {source_match} would be extracted to {name}");
            if clean {
                ret.comment.push_str(", after cleaning destination path(s)");
            }
            explain(&mut ret.comment, contents_missing);
            return Ok(ret);
        }
        if flag(&call, "clean_parent") {
            if let Err(e) = rm_rf(Path::new(trimmed)) {
                return fail(
                    ret,
                    format!(
                        "Unable to remove the directory {name}. The following errors were \
                         observed:\n\n- {e}"
                    ),
                );
            }
            ret.changes.insert(
                "removed".into(),
                json!(format!(
                    "Directory {name} was removed prior to the extraction"
                )),
            );
        }
        if clean {
            for path in top_dirs.iter().chain(&top_files) {
                let full = join(&name, path);
                if let Err(e) = rm_rf(Path::new(full.trim_end_matches('/'))) {
                    return fail(
                        ret,
                        format!(
                            "One or more paths could not be cleaned. The following errors were \
                             observed:\n\n- {e}"
                        ),
                    );
                }
                push(&mut ret.changes, "removed", json!(full));
            }
        }
        if !Path::new(trimmed).is_dir() {
            std::fs::create_dir_all(trimmed)
                .map_err(|e| StateError(format!("failed to create {trimmed}: {e}")))?;
            if uid.is_some() {
                let _ = std::os::unix::fs::lchown(trimmed, uid, None);
            }
            created_destdir = true;
        }
        let (path, dest) = (cached.clone(), PathBuf::from(trimmed));
        let perms = call.arg("extract_perms").is_none_or(truthy);
        let extracted: Result<Vec<String>, String> = if format == "zip" {
            let trim = trim_output.clone();
            tokio::task::spawn_blocking(move || {
                ar::extract_zip(&path, &dest, perms).map(|f| ar::trim_files(f, &trim))
            })
            .await
            .map_err(|e| StateError(e.to_string()))?
            .map_err(|e| format!("Exception encountered unpacking zipfile: {e}"))
        } else if let Some(opts) = &options {
            match tar_command(&call, &cached, trimmed, opts, &trim_output).await {
                Ok(Ok(f)) => Ok(f),
                Ok(Err(results)) => {
                    ret.result = Some(false);
                    ret.changes = results;
                    return Ok(ret);
                }
                Err(e) => Err(e),
            }
        } else {
            let trim = trim_output.clone();
            tokio::task::spawn_blocking(move || {
                ar::extract_tar(&path, &dest).map(|mut f| {
                    if let Some(n) = trim.as_u64() {
                        f.truncate(n as usize);
                    }
                    f
                })
            })
            .await
            .map_err(|e| StateError(e.to_string()))?
            .map_err(|_| {
                "Failed to read from tar archive using Python's native tar file support. If \
                 archive is compressed using something other than gzip or bzip2, the 'options' \
                 argument may be required to pass the correct options to the tar command in \
                 order to extract the archive."
                    .to_owned()
            })
        };
        match extracted {
            Ok(f) => files = f,
            Err(e) => {
                if created_destdir {
                    let _ = std::fs::remove_dir(trimmed);
                }
                return fail(ret, e);
            }
        }
    }
    let mut enforce_missing = Vec::new();
    let mut enforce_failed = Vec::new();
    if uid.is_some() || gid.is_some() {
        let (dirs, plain): (Vec<String>, Vec<String>) = match &enforce_on {
            Some(p) if Path::new(p).is_dir() => (vec![p.clone()], Vec::new()),
            Some(p) => (Vec::new(), vec![p.clone()]),
            None => (
                top_dirs.iter().map(|d| join(&name, d)).collect(),
                top_files
                    .iter()
                    .chain(&top_links)
                    .map(|f| join(&name, f))
                    .collect(),
            ),
        };
        for dir in dirs {
            let p = Path::new(dir.trim_end_matches('/'));
            if !p.is_dir() {
                if !call.test {
                    enforce_missing.push(dir);
                }
            } else if call.test {
                // Salt asks `file.directory` in test mode, whose `None` result it then
                // counts as a failure: the directory is listed as one it could not change.
                if owner_differs(p, uid, gid) {
                    ret.changes.insert("updated ownership".into(), json!(true));
                    enforce_failed.push(dir);
                }
            } else {
                match chown_tree(p, uid, gid, true) {
                    Ok(true) => {
                        ret.changes.insert("updated ownership".into(), json!(true));
                    }
                    Ok(false) => {}
                    Err(_) => enforce_failed.push(dir),
                }
            }
        }
        for file in plain {
            let p = Path::new(&file);
            match std::fs::symlink_metadata(p) {
                Err(e) => {
                    if !call.test {
                        if e.kind() == std::io::ErrorKind::NotFound {
                            enforce_missing.push(file.clone());
                        }
                        enforce_failed.push(file);
                    }
                }
                Ok(m) => {
                    if uid.is_some_and(|u| u != m.uid()) || gid.is_some_and(|g| g != m.gid()) {
                        if call.test || std::os::unix::fs::lchown(p, uid, gid).is_ok() {
                            ret.changes.insert("updated ownership".into(), json!(true));
                        } else {
                            enforce_failed.push(file);
                        }
                    }
                }
            }
        }
    }
    if extraction_needed {
        if files.is_empty() {
            ret.result = Some(false);
            ret.comment = format!("No files were extracted from {source_match}");
        } else {
            if created_destdir {
                ret.changes
                    .insert("directories_created".into(), json!([name.clone()]));
            }
            ret.changes.insert("extracted_files".into(), json!(files));
            ret.comment = format!("{source_match} extracted to {name}");
            explain(&mut ret.comment, contents_missing);
            // Salt appends this whether or not the output was trimmed.
            ret.comment.push_str(&format!(
                ". Output was trimmed to {} number of lines",
                python::str(&trim_output)
            ));
            ret.result = Some(true);
        }
    } else {
        ret.result = Some(true);
        ret.comment = "All files in archive are already present".into();
        if call.test && ret.changes.contains_key("updated ownership") {
            ret.result = None;
            ret.comment
                .push_str(". Ownership would be updated on one or more files/directories.");
        }
    }
    if !enforce_missing.is_empty() {
        if if_missing.is_none() {
            ret.result = Some(false);
        }
        ret.comment.push_str(
            "\n\nWhile trying to enforce user/group ownership, the following paths were \
             missing:\n",
        );
        for item in &enforce_missing {
            ret.comment.push_str(&format!("\n- {item}"));
        }
    }
    if !enforce_failed.is_empty() {
        ret.result = Some(false);
        ret.comment.push_str(
            "\n\nWhile trying to enforce user/group ownership, Salt was unable to change \
             ownership on the following paths:\n",
        );
        for item in &enforce_failed {
            ret.comment.push_str(&format!("\n- {item}"));
        }
    }
    Ok(ret)
}

fn push(changes: &mut Map<String, Value>, key: &str, v: Value) {
    if let Value::Array(list) = changes
        .entry(key)
        .or_insert_with(|| Value::Array(Vec::new()))
    {
        list.push(v);
    }
}

/// Salt's tar-with-`options` path: `tar xv<short options> <long options> -f <archive>` in the
/// destination; the names tar printed, or `cmd.run_all`'s result (the state's changes) when
/// tar failed.
async fn tar_command(
    call: &StateCall,
    cached: &Path,
    dest: &str,
    options: &str,
    trim: &Value,
) -> Result<Result<Vec<String>, Map<String, Value>>, String> {
    let opts: Vec<String> = options
        .split_whitespace()
        .filter(|o| !["v", "-v", "--verbose"].contains(o))
        .map(str::to_owned)
        .collect();
    let mut short = "xv".to_owned();
    let mut long = Vec::new();
    for (i, o) in opts.iter().enumerate() {
        if o.starts_with('-') || i > 0 {
            long.push(o.clone());
        } else {
            short.push_str(&o.replace(['x', 'f'], ""));
        }
    }
    let mut argv = vec!["tar".to_owned(), short];
    argv.extend(long);
    argv.push("-f".into());
    argv.push(cached.display().to_string());
    let mut kwargs = Map::new();
    kwargs.insert("cwd".into(), json!(dest));
    kwargs.insert("python_shell".into(), json!(false));
    let out = super::exec(call, "cmd.run_all", vec![json!(argv)], kwargs)
        .await
        .map_err(|e| e.0)?;
    let Value::Object(results) = out else {
        return Err("tar gave no result".into());
    };
    if results.get("retcode").and_then(Value::as_i64) != Some(0) {
        return Ok(Err(results));
    }
    let mut files: Vec<String> = results
        .get("stdout")
        .map(python::str)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    if let Some(n) = trim.as_u64() {
        files.truncate(n as usize);
    }
    if files.is_empty() {
        files.push("no tar output so far".into());
    }
    Ok(Ok(files))
}
