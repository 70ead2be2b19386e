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

mod plan;

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

/// A finished state: its answer, or an error of the state system.
enum Stop {
    /// The state ends with this answer.
    Ret(Box<Ret>),
    /// The state could not run.
    Err(StateError),
}

impl From<StateError> for Stop {
    fn from(e: StateError) -> Self {
        Self::Err(e)
    }
}

/// Ends the state as failed with `comment`, keeping the changes made so far.
fn stop(ret: &Ret, comment: impl Into<String>) -> Stop {
    let mut ret = ret.clone();
    ret.result = Some(false);
    ret.comment = comment.into();
    Stop::Ret(Box::new(ret))
}

async fn extracted(call: StateCall) -> Result<Ret, StateError> {
    let mut ret = Ret::new(&call.name);
    ret.result = Some(false);
    match extract_steps(&call, &mut ret).await {
        Ok(()) => Ok(ret),
        Err(Stop::Ret(done)) => Ok(*done),
        Err(Stop::Err(e)) => Err(e),
    }
}

/// `archive.extracted`'s arguments once checked, and what was found on the way.
struct Archive<'a> {
    call: &'a StateCall,
    /// The destination with one trailing `/`.
    name: String,
    if_missing: Option<String>,
    enforce_on: Option<String>,
    user: Option<String>,
    group: Option<String>,
    uid: Option<u32>,
    gid: Option<u32>,
    /// The `source` argument (the first of a list).
    source: String,
    source_is_local: bool,
    /// The source as Salt names it in comments (a local one resolved).
    source_match: String,
    format: String,
    options: Option<String>,
    trim_output: Value,
    sum: Option<super::file::managed::Sum>,
    /// Where the archive is read from: the local path or the minion's cache.
    cached: PathBuf,
}

async fn extract_steps(call: &StateCall, ret: &mut Ret) -> Result<(), Stop> {
    let Some(mut a) = Archive::read(call, ret)? else {
        return Ok(());
    };
    if !a.fetch(ret).await? {
        return Ok(());
    }
    let contents = a.list(ret).await?;
    let top_dirs = strings(&contents, "top_level_dirs");
    let top_files = strings(&contents, "top_level_files");
    let top_links = strings(&contents, "top_level_links");
    if let Some(e) = plan::toplevel_error(
        call.arg("enforce_toplevel").is_none_or(truthy),
        top_dirs.len(),
        top_files.len(),
        &a.format,
        &a.name,
    ) {
        return Err(stop(ret, e));
    }
    let clean = flag(call, "clean");
    if clean && flag(call, "clean_parent") {
        return Err(stop(
            ret,
            "Only one of 'clean' and 'clean_parent' can be set to True",
        ));
    }
    let mut done = plan::Done {
        extraction_needed: flag(call, "overwrite"),
        ..plan::Done::default()
    };
    a.check_destination(ret, &contents, clean, &mut done)?;
    if done.extraction_needed {
        a.verify_local_sum(ret)?;
        if call.test {
            ret.result = None;
            ret.comment =
                plan::would_extract(&a.source_match, &a.name, clean, done.contents_missing);
            return Ok(());
        }
        let clean_paths: Vec<&String> = if clean {
            top_dirs.iter().chain(&top_files).collect()
        } else {
            Vec::new()
        };
        a.extract(ret, &clean_paths, &mut done).await?;
    }
    if a.uid.is_some() || a.gid.is_some() {
        let others: Vec<String> = top_files.iter().chain(&top_links).cloned().collect();
        a.enforce_ownership(ret, &top_dirs, &others, &mut done);
    }
    done.ownership_updated = ret.changes.contains_key("updated ownership");
    let (result, comment, changes) = plan::report(
        &done,
        &a.source_match,
        &a.name,
        &a.trim_output,
        a.if_missing.is_some(),
        call.test,
    );
    for (k, v) in changes {
        ret.changes.insert(k.into(), v);
    }
    ret.result = result;
    ret.comment = comment;
    Ok(())
}

impl<'a> Archive<'a> {
    /// Checks the arguments as Salt does, in its order; `None` when `if_missing` exists.
    fn read(call: &'a StateCall, ret: &mut Ret) -> Result<Option<Self>, Stop> {
        if flag(call, "skip_files_list_verify") && flag(call, "skip_verify") {
            return Err(stop(
                ret,
                "Only one of \"skip_files_list_verify\" and \"skip_verify\" can be set to True",
            ));
        }
        let if_missing = arg_str(call, "if_missing");
        let enforce_on = arg_str(call, "enforce_ownership_on");
        plan::check_paths(
            &call.name,
            &|p| Path::new(p).is_file(),
            if_missing.as_deref(),
            enforce_on.as_deref(),
        )
        .map_err(|e| stop(ret, e))?;
        if let Some(p) = &if_missing
            && Path::new(p).exists()
        {
            ret.result = Some(true);
            ret.comment = format!("Path {p} exists");
            return Ok(None);
        }
        let (user, group) = (arg_str(call, "user"), arg_str(call, "group"));
        let (uid, gid) = owner_ids(user.as_deref(), group.as_deref()).map_err(|e| stop(ret, e))?;
        if call.arg("signature").is_some() || call.arg("source_hash_sig").is_some() {
            return Err(stop(
                ret,
                "Cannot verify signatures because the gpg module was not loaded",
            ));
        }
        let source = match call.arg("source") {
            Some(Value::Array(items)) => items.first().map(python::str).unwrap_or_default(),
            Some(v) => python::str(v),
            None => String::new(),
        };
        if let Some(msg) = remote_source_error(&source) {
            return Err(stop(ret, msg));
        }
        let source_is_local = !source.starts_with("salt://");
        let mut source_match = source.clone();
        if source_is_local {
            let p = source.strip_prefix("file://").unwrap_or(&source);
            source_match =
                std::fs::canonicalize(p).map_or_else(|_| p.to_owned(), |c| c.display().to_string());
            if !Path::new(&source_match).is_file() {
                return Err(stop(
                    ret,
                    format!("Source file '{source_match}' does not exist"),
                ));
            }
        }
        let base = source.split('?').next().unwrap_or(&source);
        let format = plan::archive_format(
            arg_str(call, "archive_format").as_deref(),
            ar::guess_archive_type(base),
        )
        .map_err(|e| stop(ret, e))?;
        let options = arg_str(call, "options").filter(|o| !o.is_empty());
        plan::check_format(
            &format,
            options.is_some(),
            call.arg("use_cmd_unzip").is_some_and(truthy),
            flag(call, "password"),
        )
        .map_err(|e| stop(ret, e))?;
        let trim_output = plan::trim_output(call.arg("trim_output")).map_err(|e| stop(ret, e))?;
        Ok(Some(Self {
            call,
            name: format!("{}/", call.name.trim_end_matches('/')),
            if_missing,
            enforce_on,
            user,
            group,
            uid,
            gid,
            cached: PathBuf::from(&source_match),
            source,
            source_is_local,
            source_match,
            format,
            options,
            trim_output,
            sum: None,
        }))
    }

    /// The destination without its trailing `/`.
    fn trimmed(&self) -> &str {
        self.name.trim_end_matches('/')
    }

    /// Reads `source_hash`, caches a `salt://` source and checks its sum; `false` when the
    /// state ends here (test mode with a remote source).
    async fn fetch(&mut self, ret: &mut Ret) -> Result<bool, Stop> {
        let call = self.call;
        if let Some(h) = arg_str(call, "source_hash").filter(|h| !h.is_empty()) {
            self.sum = Some(
                source_sum(call, &self.source_match, &h)
                    .await
                    .map_err(|e| stop(ret, e))?,
            );
        }
        if !self.source_is_local {
            if call.test {
                ret.result = None;
                ret.comment = format!(
                    "Archive {} would be cached (if necessary) and checked to discover \
                     if extraction is needed",
                    self.source_match
                );
                return Ok(false);
            }
            let source = &self.source;
            self.cached = match cache_salt(call, source).await {
                Ok(Some(p)) => p,
                Ok(None) => {
                    return Err(stop(
                        ret,
                        format!(
                            "Source file {source} not found in saltenv '{}'",
                            call.saltenv
                        ),
                    ));
                }
                Err(e) => return Err(stop(ret, format!("Failed to cache {source}: {e}"))),
            };
            if let Some(s) = &self.sum
                && !flag(call, "skip_verify")
            {
                let data = std::fs::read(&self.cached).map_err(|e| StateError(e.to_string()))?;
                let real = hash_bytes(&data, &s.hash_type).unwrap_or_default();
                if real != s.hsum {
                    return Err(stop(
                        ret,
                        format!(
                            "File sum set for file {source} of {} does not match real sum of {real}",
                            s.hsum
                        ),
                    ));
                }
            }
        }
        Ok(true)
    }

    /// The archive's contents (`archive.list` with `verbose=True`), after refusing an
    /// encrypted zip.
    async fn list(&self, ret: &mut Ret) -> Result<Map<String, Value>, Stop> {
        if self.format == "zip" {
            let path = self.cached.clone();
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
                return Err(stop(
                    ret,
                    format!(
                        "Archive {} is password-protected, but no password was specified. \
                         Please set the 'password' argument.",
                        self.source_match
                    ),
                ));
            }
        }
        let strip_n = self
            .options
            .as_deref()
            .filter(|_| self.format == "tar")
            .and_then(strip_components);
        let listed = {
            let path = self.cached.clone();
            let shown = self.source_match.clone();
            let fmt = self.format.clone();
            tokio::task::spawn_blocking(move || ar::list(&path, &shown, &fmt))
                .await
                .map_err(|e| StateError(e.to_string()))?
        };
        match listed {
            Ok(l) => Ok(ar::verbose(&strip_n.map_or(l.clone(), |n| strip(l, n)))),
            // Salt's `CommandExecutionError` carries where the archive was.
            Err(msg) => Err(stop(
                ret,
                plan::list_failure(
                    &msg,
                    &self.cached.display().to_string(),
                    &self.format,
                    self.if_missing.is_some(),
                    self.enforce_on.is_some(),
                    self.user.is_some() || self.group.is_some(),
                ),
            )),
        }
    }

    /// Compares the archive's paths with the destination; removes paths of the wrong type
    /// when `force` asks.
    fn check_destination(
        &self,
        ret: &mut Ret,
        contents: &Map<String, Value>,
        clean: bool,
        done: &mut plan::Done,
    ) -> Result<(), Stop> {
        let wanted: Vec<(String, char)> = [("dirs", 'd'), ("files", 'f'), ("links", 'l')]
            .into_iter()
            .flat_map(|(key, kind)| strings(contents, key).into_iter().map(move |p| (p, kind)))
            .collect();
        let presence =
            plan::presence(&wanted, &|p| found(&join(&self.name, p))).map_err(|e| stop(ret, e))?;
        done.extraction_needed |= presence.missing;
        done.contents_missing = presence.missing;
        let force = flag(self.call, "force");
        match plan::plan_incorrect(
            &presence.incorrect,
            &self.name,
            self.call.test,
            clean,
            force,
        ) {
            plan::Incorrect::Proceed => {}
            plan::Incorrect::WouldClean(comment) => {
                ret.result = None;
                ret.comment = comment;
                return Err(Stop::Ret(Box::new(ret.clone())));
            }
            plan::Incorrect::Refuse(comment) => return Err(stop(ret, comment)),
            plan::Incorrect::Remove => {
                for path in &presence.incorrect {
                    let full = join(&self.name, path);
                    if let Err(e) = rm_rf(Path::new(full.trim_end_matches('/'))) {
                        return Err(stop(
                            ret,
                            format!(
                                "One or more paths existed by were the incorrect type (i.e. file \
                                 instead of directory or vice-versa), but could not be removed. \
                                 The following errors were observed:\n\n- {e}"
                            ),
                        ));
                    }
                    push(&mut ret.changes, "removed", json!(full));
                    done.extraction_needed = true;
                }
            }
        }
        Ok(())
    }

    /// A local archive's sum is checked only once extraction is needed.
    fn verify_local_sum(&self, ret: &Ret) -> Result<(), Stop> {
        if let Some(s) = &self.sum
            && self.source_is_local
            && !flag(self.call, "skip_verify")
        {
            let data = std::fs::read(&self.cached).map_err(|e| StateError(e.to_string()))?;
            if hash_bytes(&data, &s.hash_type).as_deref() != Some(s.hsum.as_str()) {
                return Err(stop(
                    ret,
                    format!(
                        "{} does not match the desired source_hash {}",
                        self.source_match, s.hsum
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Cleans as asked, creates the destination and extracts into it.
    async fn extract(
        &self,
        ret: &mut Ret,
        clean_paths: &[&String],
        done: &mut plan::Done,
    ) -> Result<(), Stop> {
        let (name, trimmed) = (&self.name, self.trimmed());
        if flag(self.call, "clean_parent") {
            if let Err(e) = rm_rf(Path::new(trimmed)) {
                return Err(stop(
                    ret,
                    format!(
                        "Unable to remove the directory {name}. The following errors were \
                         observed:\n\n- {e}"
                    ),
                ));
            }
            ret.changes.insert(
                "removed".into(),
                json!(format!(
                    "Directory {name} was removed prior to the extraction"
                )),
            );
        }
        for path in clean_paths {
            let full = join(name, path);
            if let Err(e) = rm_rf(Path::new(full.trim_end_matches('/'))) {
                return Err(stop(
                    ret,
                    format!(
                        "One or more paths could not be cleaned. The following errors were \
                         observed:\n\n- {e}"
                    ),
                ));
            }
            push(&mut ret.changes, "removed", json!(full));
        }
        if !Path::new(trimmed).is_dir() {
            std::fs::create_dir_all(trimmed)
                .map_err(|e| StateError(format!("failed to create {trimmed}: {e}")))?;
            if self.uid.is_some() {
                let _ = std::os::unix::fs::lchown(trimmed, self.uid, None);
            }
            done.created_destdir = true;
        }
        match self.unpack(ret).await? {
            Ok(f) => done.files = f,
            Err(e) => {
                if done.created_destdir {
                    let _ = std::fs::remove_dir(trimmed);
                }
                return Err(stop(ret, e));
            }
        }
        Ok(())
    }

    /// Unpacks the archive: zip natively, tar natively or with the `tar` command when
    /// `options` are given. The files extracted, or the failure's comment.
    async fn unpack(&self, ret: &mut Ret) -> Result<Result<Vec<String>, String>, Stop> {
        let (path, dest) = (self.cached.clone(), PathBuf::from(self.trimmed()));
        let trim = self.trim_output.clone();
        if self.format == "zip" {
            let perms = self.call.arg("extract_perms").is_none_or(truthy);
            return Ok(tokio::task::spawn_blocking(move || {
                ar::extract_zip(&path, &dest, perms).map(|f| ar::trim_files(f, &trim))
            })
            .await
            .map_err(|e| StateError(e.to_string()))?
            .map_err(|e| format!("Exception encountered unpacking zipfile: {e}")));
        }
        if let Some(opts) = &self.options {
            return match tar_command(self.call, &self.cached, self.trimmed(), opts, &trim).await {
                Ok(Ok(f)) => Ok(Ok(f)),
                Ok(Err(results)) => {
                    ret.result = Some(false);
                    ret.changes = results;
                    Err(Stop::Ret(Box::new(ret.clone())))
                }
                Err(e) => Ok(Err(e)),
            };
        }
        Ok(tokio::task::spawn_blocking(move || {
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
        }))
    }

    /// Enforces `user`/`group` on the directories (recursively) and other paths that
    /// [`plan::ownership_targets`] names.
    fn enforce_ownership(
        &self,
        ret: &mut Ret,
        top_dirs: &[String],
        top_others: &[String],
        done: &mut plan::Done,
    ) {
        let on_is_dir = self
            .enforce_on
            .as_deref()
            .is_some_and(|p| Path::new(p).is_dir());
        let (dirs, plain) = plan::ownership_targets(
            self.enforce_on.as_deref(),
            on_is_dir,
            &self.name,
            top_dirs,
            top_others,
        );
        let (uid, gid, test) = (self.uid, self.gid, self.call.test);
        for dir in dirs {
            let p = Path::new(dir.trim_end_matches('/'));
            if !p.is_dir() {
                if !test {
                    done.enforce_missing.push(dir);
                }
            } else if test {
                // Salt asks `file.directory` in test mode, whose `None` result it then
                // counts as a failure: the directory is listed as one it could not change.
                if owner_differs(p, uid, gid) {
                    ret.changes.insert("updated ownership".into(), json!(true));
                    done.enforce_failed.push(dir);
                }
            } else {
                match chown_tree(p, uid, gid, true) {
                    Ok(true) => {
                        ret.changes.insert("updated ownership".into(), json!(true));
                    }
                    Ok(false) => {}
                    Err(_) => done.enforce_failed.push(dir),
                }
            }
        }
        for file in plain {
            let p = Path::new(&file);
            match std::fs::symlink_metadata(p) {
                Err(e) => {
                    if !test {
                        if e.kind() == std::io::ErrorKind::NotFound {
                            done.enforce_missing.push(file.clone());
                        }
                        done.enforce_failed.push(file);
                    }
                }
                Ok(m) => {
                    if uid.is_some_and(|u| u != m.uid()) || gid.is_some_and(|g| g != m.gid()) {
                        if test || std::os::unix::fs::lchown(p, uid, gid).is_ok() {
                            ret.changes.insert("updated ownership".into(), json!(true));
                        } else {
                            done.enforce_failed.push(file);
                        }
                    }
                }
            }
        }
    }
}

/// The uid and gid of `user` and `group`; `Err` names the one that does not exist.
fn owner_ids(
    user: Option<&str>,
    group: Option<&str>,
) -> Result<(Option<u32>, Option<u32>), String> {
    let uid = match user {
        Some(u) => match nix::unistd::User::from_name(u).ok().flatten() {
            Some(u) => Some(u.uid.as_raw()),
            None => return Err(format!("User {u} does not exist")),
        },
        None => None,
    };
    let gid = match group {
        Some(g) => match nix::unistd::Group::from_name(g).ok().flatten() {
            Some(g) => Some(g.gid.as_raw()),
            None => return Err(format!("Group {g} does not exist")),
        },
        None => None,
    };
    Ok((uid, gid))
}

/// What the destination holds at `full` (not following a final symlink).
fn found(full: &str) -> plan::Found {
    match std::fs::symlink_metadata(full.trim_end_matches('/')) {
        Ok(m) if m.is_dir() => plan::Found::Dir,
        Ok(m) if m.file_type().is_symlink() => plan::Found::Link,
        Ok(_) => plan::Found::File,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => plan::Found::Missing,
        Err(e) if e.raw_os_error() == Some(nix::libc::ENOTDIR) => plan::Found::NotDir,
        Err(e) => plan::Found::Error(e.to_string()),
    }
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
