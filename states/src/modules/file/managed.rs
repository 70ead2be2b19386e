//! `file.managed` (Salt's `states/file.py:managed` with `modules/file.py`'s
//! `source_list`, `get_managed`, `check_managed_changes`, `check_file_meta` and
//! `manage_file`), and the pieces `file.recurse` and `file.serialize` reuse: resolving a
//! source, hashing, rendering a template, writing a file and its permissions.

use std::path::{Path, PathBuf};

use saltq_exec::{Lit, Param};
use serde_json::{Map, Value};

use super::diff::{lines, unified_diff};
use super::{
    Ret, StateCall, bool_arg, check_perms, check_user, dirname, error, makedirs, name_of,
    normalize_mode, os_error, py_str, stat_meta, str_arg, umask,
};
use crate::modules::StateError;
use crate::render::{RenderContext, render_template};

const fn opt(name: &'static str) -> Param {
    Param::opt(name, Lit::None)
}

/// `file.managed`'s parameters, in Salt's order (the ones saltq reads).
pub(super) const PARAMS: &[Param] = &[
    Param::req("name"),
    opt("source"),
    Param::opt("source_hash", Lit::Str("")),
    opt("source_hash_name"),
    Param::opt("keep_source", Lit::Bool(true)),
    opt("user"),
    opt("group"),
    opt("mode"),
    opt("attrs"),
    opt("template"),
    Param::opt("makedirs", Lit::Bool(false)),
    opt("dir_mode"),
    opt("context"),
    Param::opt("replace", Lit::Bool(true)),
    opt("defaults"),
    Param::opt("backup", Lit::Str("")),
    Param::opt("show_changes", Lit::Bool(true)),
    Param::opt("create", Lit::Bool(true)),
    opt("contents"),
    Param::opt("tmp_dir", Lit::Str("")),
    Param::opt("tmp_ext", Lit::Str("")),
    opt("contents_pillar"),
    opt("contents_grains"),
    Param::opt("contents_newline", Lit::Bool(true)),
    Param::opt("contents_delimiter", Lit::Str(":")),
    opt("encoding"),
    Param::opt("encoding_errors", Lit::Str("strict")),
    Param::opt("allow_empty", Lit::Bool(true)),
    Param::opt("follow_symlinks", Lit::Bool(true)),
    opt("check_cmd"),
    Param::opt("skip_verify", Lit::Bool(false)),
    opt("selinux"),
    opt("win_owner"),
    opt("win_perms"),
    opt("win_deny_perms"),
    Param::opt("win_inheritance", Lit::Bool(true)),
    Param::opt("win_perms_reset", Lit::Bool(false)),
    Param::opt("verify_ssl", Lit::Bool(true)),
    Param::opt("use_etag", Lit::Bool(false)),
    opt("signature"),
    opt("source_hash_sig"),
    opt("signed_by_any"),
    opt("signed_by_all"),
    opt("keyring"),
    opt("gnupghome"),
];

/// A hash as Salt's `source_sum`: the digest's name and its lowercase hex.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sum {
    pub hash_type: String,
    pub hsum: String,
}

/// The hex digest of `data` by Salt's hash names; `None` for an unknown name.
pub(crate) fn hash_bytes(data: &[u8], form: &str) -> Option<String> {
    use sha2::Digest;
    let bytes: Vec<u8> = match form {
        "md5" => md5::Md5::digest(data).to_vec(),
        "sha1" => sha1::Sha1::digest(data).to_vec(),
        "sha224" => sha2::Sha224::digest(data).to_vec(),
        "sha256" => sha2::Sha256::digest(data).to_vec(),
        "sha384" => sha2::Sha384::digest(data).to_vec(),
        "sha512" => sha2::Sha512::digest(data).to_vec(),
        _ => return None,
    };
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Salt's `HASHES`: each digest's name and hex length, in Salt's order.
const HASHES: &[(&str, usize)] = &[
    ("sha512", 128),
    ("sha384", 96),
    ("sha256", 64),
    ("sha224", 56),
    ("sha1", 40),
    ("md5", 32),
];

fn hash_type_for_len(len: usize) -> Option<&'static str> {
    HASHES.iter().find(|(_, l)| *l == len).map(|(n, _)| *n)
}

fn invalid_hash_format(source_hash: &str) -> String {
    let mut by_len: Vec<(usize, &str)> = HASHES.iter().map(|(n, l)| (*l, *n)).collect();
    by_len.sort_unstable();
    format!(
        "Source hash {source_hash} format is invalid. The supported formats are: 1) a hash, \
         2) an expression in the format <hash_type>=<hash>, or 3) either a path to a local \
         file containing hashes, or a URI of a remote hash file. Supported protocols for \
         remote hash files are: salt, file, http, https, ftp, swift, s3. The hash may also \
         not be of a valid length, the following are supported hash types and lengths: {}.",
        by_len
            .iter()
            .map(|(l, n)| format!("{n} ({l})"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Salt's `get_source_sum` for a hash given inline (`sha256=...` or bare hex), or a hash file
/// (a local path or `salt://`): the first hash of a known length in it, preferring the line
/// that names the source's file.
pub(crate) async fn source_sum(
    call: &StateCall,
    source: &str,
    source_hash: &str,
) -> Result<Sum, String> {
    let hash_file = if source_hash.starts_with('/') {
        Some(PathBuf::from(source_hash))
    } else if source_hash.starts_with("salt://") {
        match cache_salt(call, source_hash).await? {
            Some(p) => Some(p),
            None => return Err(format!("Source hash file {source_hash} not found")),
        }
    } else if source_hash.contains("://") {
        return Err(invalid_hash_format(source_hash));
    } else {
        None
    };
    if let Some(path) = hash_file {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let base = source.rsplit('/').next().unwrap_or(source);
        let mut first = None;
        for line in text.lines() {
            for word in line.split(|c: char| c.is_whitespace() || c == '=' || c == '(') {
                let w = word.trim();
                if w.chars().all(|c| c.is_ascii_hexdigit())
                    && let Some(t) = hash_type_for_len(w.len())
                {
                    let sum = Sum {
                        hash_type: t.into(),
                        hsum: w.to_lowercase(),
                    };
                    if !base.is_empty() && line.contains(base) {
                        return Ok(sum);
                    }
                    first.get_or_insert(sum);
                }
            }
        }
        return first.ok_or_else(|| invalid_hash_format(source_hash));
    }
    let (hash_type, hsum) = match source_hash.split_once('=') {
        Some((t, h)) => (t.trim().to_owned(), h.trim().to_owned()),
        None => {
            if source_hash.is_empty() || !source_hash.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(invalid_hash_format(source_hash));
            }
            match hash_type_for_len(source_hash.len()) {
                Some(t) => (t.to_owned(), source_hash.to_owned()),
                None => return Err(invalid_hash_format(source_hash)),
            }
        }
    };
    let Some(&(_, want_len)) = HASHES.iter().find(|(n, _)| *n == hash_type) else {
        return Err(format!(
            "Invalid hash type '{hash_type}'. Supported hash types are: {}. Either remove the \
             hash type and simply use '{hsum}' as the source_hash, or change the hash type to \
             a supported type.",
            HASHES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    match hash_type_for_len(hsum.len()) {
        None => Err(invalid_hash_format(source_hash)),
        Some(other) if hsum.len() != want_len => Err(format!(
            "Invalid length ({}) for hash type '{hash_type}'. Either remove the hash type and \
             simply use '{hsum}' as the source_hash, or change the hash type to '{other}'",
            hsum.len()
        )),
        Some(_) => Ok(Sum {
            hash_type,
            hsum: hsum.to_lowercase(),
        }),
    }
}

/// `salt://path?saltenv=env` into the path and the saltenv (`None` when not given).
pub(crate) fn parse_salt_url(url: &str) -> (String, Option<String>) {
    let rest = url.strip_prefix("salt://").unwrap_or(url);
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    let env = query.and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix("saltenv=").map(str::to_owned))
    });
    (path.trim_start_matches('/').to_owned(), env)
}

/// The error for a source saltq cannot fetch: `http(s)://`, `ftp://` and the other remote
/// schemes Salt downloads from. The minion has no network access of its own in saltq's
/// design (files come from the master), so these are refused naming the source.
pub(crate) fn remote_source_error(source: &str) -> Option<String> {
    let (scheme, _) = source.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme == "salt" || scheme == "file" {
        return None;
    }
    let kind = if scheme == "http" || scheme == "https" {
        "http(s)".to_owned()
    } else {
        scheme
    };
    Some(format!(
        "{kind} sources are not supported by saltq (the minion fetches files only from the \
         master's salt:// fileserver and local paths, not from the network): {source}"
    ))
}

/// Fetches a `salt://` file into the cache: its local path, `None` when there is no such
/// file (or no fileserver).
pub(crate) async fn cache_salt(call: &StateCall, url: &str) -> Result<Option<PathBuf>, String> {
    let (path, env) = parse_salt_url(url);
    let env = env.unwrap_or_else(|| call.saltenv.clone());
    match &call.ctx.files {
        Some(files) => files.cache_file(&env, &path).await,
        None => Ok(None),
    }
}

/// Salt's `file.source_list`: the first source of a list that exists (a `salt://` file or
/// directory, a local path), with its hash; a single source as it is.
async fn source_list(
    call: &StateCall,
    source: &Value,
    source_hash: &str,
) -> Result<(String, String), String> {
    let Value::Array(items) = source else {
        return Ok((py_str(source), source_hash.to_owned()));
    };
    let mut remote = None;
    for item in items {
        let (src, hash) = match item {
            Value::Object(m) if m.len() == 1 => {
                let (k, v) = m.iter().next().expect("one key");
                let h = if saltq_semantics::python::truthy(v) {
                    py_str(v)
                } else {
                    source_hash.to_owned()
                };
                (k.clone(), h)
            }
            Value::Object(_) => continue,
            other => (py_str(other), source_hash.to_owned()),
        };
        if src.starts_with("salt://") {
            let (path, env) = parse_salt_url(&src);
            let env = env.unwrap_or_else(|| call.saltenv.clone());
            if let Some(files) = &call.ctx.files {
                let hit = files.hash(&env, &path).await?.is_some()
                    || files.list_dirs(&env, &path).await?.contains(&path);
                if hit {
                    return Ok((src, hash));
                }
            }
        } else if let Some(p) = src.strip_prefix("file://") {
            if Path::new(p).exists() {
                return Ok((src, hash));
            }
        } else if src.starts_with('/') && Path::new(&src).exists() {
            return Ok((src, hash));
        } else if remote.is_none() {
            remote = remote_source_error(&src);
        }
    }
    // A list whose only candidates saltq cannot fetch says why, naming the first of them.
    Err(remote.unwrap_or_else(|| "none of the specified sources were found".into()))
}

/// What `get_managed` found: the source's bytes (rendered when a template) and its hash;
/// for a `salt://` source without a template only the master's hash (the file is fetched
/// when needed).
#[derive(Debug, Default)]
pub(super) struct Managed {
    pub data: Option<Vec<u8>>,
    pub sum: Option<Sum>,
    /// A `salt://` source not fetched yet.
    pub remote: Option<String>,
    /// A hash to verify the source against (a local source with `source_hash`).
    pub verify: bool,
}

/// The template's variables: Salt passes the state's other keyword arguments (those
/// `file.managed` does not declare, such as a formula's `config:` written beside
/// `context:`), the state's file arguments, `defaults` and then `context` over them.
pub(super) fn template_extra(call: &StateCall, name: &str, source: &str) -> Map<String, Value> {
    let mut extra: Map<String, Value> = call
        .args
        .iter()
        .filter(|(k, _)| !PARAMS.iter().any(|p| p.name == k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    extra.insert("name".into(), name.into());
    extra.insert("source".into(), source.into());
    for key in ["user", "group", "mode", "attrs"] {
        extra.insert(key.into(), call.arg(key).cloned().unwrap_or(Value::Null));
    }
    for key in ["defaults", "context"] {
        if let Some(Value::Object(m)) = call.arg(key) {
            extra.extend(m.clone());
        }
    }
    if let Some(acc) = super::accumulated::context_for(&call.accumulators, name) {
        extra.insert("accumulator".into(), acc);
    }
    extra
}

/// Renders `text` with `engine` (`jinja`) on a blocking thread.
pub(super) async fn render(
    call: &StateCall,
    text: String,
    engine: &str,
    source_rel: String,
    extra: Map<String, Value>,
) -> Result<String, String> {
    let rc = RenderContext {
        ctx: call.ctx.clone(),
        grains: call.ctx.grains(),
        pillar: call.ctx.pillar(),
        opts: (*call.ctx.opts).clone(),
        saltenv: call.saltenv.clone(),
        sls: call.sls.clone(),
        source: source_rel,
        extra,
    };
    let engine = engine.to_owned();
    tokio::task::spawn_blocking(move || render_template(&text, &engine, &rc))
        .await
        .map_err(|e| format!("the template render stopped: {e}"))?
        .map_err(|e| e.message)
}

/// Salt's `get_managed`: the source's hash, fetched and rendered when a template; the error
/// is the comment Salt fails with.
pub(super) async fn get_managed(
    call: &StateCall,
    name: &str,
    source: &str,
    source_hash: &str,
    template: Option<&str>,
    skip_verify: bool,
) -> Result<Managed, String> {
    let mut m = Managed::default();
    if source.is_empty() {
        return Ok(m);
    }
    if let Some(msg) = remote_source_error(source) {
        return Err(msg);
    }
    if source.starts_with("salt://") {
        let (path, env) = parse_salt_url(source);
        let env = env.unwrap_or_else(|| call.saltenv.clone());
        let hash = match &call.ctx.files {
            Some(files) => files.hash(&env, &path).await?,
            None => None,
        };
        let Some(hash) = hash else {
            return Err(format!(
                "Source file {source} not found in saltenv '{}'",
                call.saltenv
            ));
        };
        m.sum = Some(Sum {
            hash_type: hash.hash_type,
            hsum: hash.hsum.to_lowercase(),
        });
        m.remote = Some(source.to_owned());
    } else if source.starts_with('/') || source.starts_with("file://") {
        let path = source.strip_prefix("file://").unwrap_or(source);
        if !Path::new(path).exists() {
            return Err(format!("Local file source {path} does not exist"));
        }
        let data = std::fs::read(path).map_err(|e| os_error(&e, path))?;
        if source_hash.is_empty() || skip_verify {
            m.sum = Some(Sum {
                hash_type: "sha256".into(),
                hsum: hash_bytes(&data, "sha256").unwrap_or_default(),
            });
        } else {
            m.sum = Some(source_sum(call, source, source_hash).await?);
            m.verify = true;
        }
        m.data = Some(data);
    } else if !skip_verify && source_hash.is_empty() {
        return Err(format!(
            "Unable to verify upstream hash of source file {source}, please set source_hash \
             or set skip_verify to True"
        ));
    } else {
        return Err(format!(
            "Failed to cache {source}: saltq fetches only salt:// and local sources"
        ));
    }
    if let Some(engine) = template {
        if engine != "jinja" {
            return Err(format!(
                "Specified template format {engine} is not supported"
            ));
        }
        let data = fetch(call, &mut m).await?;
        let text = String::from_utf8_lossy(&data).into_owned();
        let rel = if source.starts_with("salt://") {
            parse_salt_url(source).0
        } else {
            String::new()
        };
        let out = render(call, text, engine, rel, template_extra(call, name, source)).await?;
        m.sum = Some(Sum {
            hash_type: "sha256".into(),
            hsum: hash_bytes(out.as_bytes(), "sha256").unwrap_or_default(),
        });
        m.data = Some(out.into_bytes());
        m.verify = false;
    }
    Ok(m)
}

/// The source's bytes, fetching a `salt://` source first.
pub(super) async fn fetch(call: &StateCall, m: &mut Managed) -> Result<Vec<u8>, String> {
    if let Some(d) = &m.data {
        return Ok(d.clone());
    }
    let Some(url) = m.remote.clone() else {
        return Ok(Vec::new());
    };
    let Some(path) = cache_salt(call, &url).await? else {
        return Err(format!("Source file '{url}' not found"));
    };
    let data = std::fs::read(&path).map_err(|e| os_error(&e, &path.to_string_lossy()))?;
    m.data = Some(data.clone());
    Ok(data)
}

/// Salt's `salt.utils.files.is_binary` on the first 2 KiB: a NUL byte, or text that is not
/// UTF-8 with more than 30% odd bytes.
fn is_binary(data: &[u8]) -> bool {
    let head = &data[..data.len().min(2048)];
    if head.contains(&0) {
        return true;
    }
    if std::str::from_utf8(head).is_ok() {
        return false;
    }
    let odd = head
        .iter()
        .filter(|b| !(32..127).contains(*b) && !b"\n\r\t\x08\x0c".contains(b))
        .count();
    !head.is_empty() && odd * 100 / head.len() > 30
}

/// Salt's `file.get_diff(old, new, show_filenames=False)`: empty when equal, a note when
/// either side is binary, else the unified diff.
pub(super) fn get_diff(old: &[u8], new: &[u8], show_changes: bool) -> String {
    if old == new {
        return String::new();
    }
    if !show_changes {
        return "<show_changes=False>".into();
    }
    match (is_binary(old), is_binary(new)) {
        (true, true) => return "Replace binary file".into(),
        (true, false) => return "Replace binary file with text file".into(),
        (false, true) => return "Replace text file with binary file".into(),
        _ => {}
    }
    let a = String::from_utf8_lossy(old);
    let b = String::from_utf8_lossy(new);
    unified_diff(&lines(&a), &lines(&b))
}

/// Writes `data` over `dest` as Salt's `copyfile` does: through a temp file in the same
/// directory, keeping an existing file's owner and mode (a new file gets 0600).
pub(super) fn copy_into(data: &[u8], dest: &Path) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let old = std::fs::metadata(dest).ok();
    let dir = dest.parent().unwrap_or(Path::new("/"));
    let base = dest.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(
        ".{}.saltq-{}",
        base.unwrap_or_default(),
        std::process::id()
    ));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(data)?;
    drop(f);
    if let Some(md) = &old {
        let _ = std::os::unix::fs::chown(&tmp, Some(md.uid()), Some(md.gid()));
        std::fs::set_permissions(&tmp, md.permissions())?;
    }
    std::fs::rename(&tmp, dest).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Salt's `contents` argument into the text it writes: each line of each part ended with
/// `\n` (and the last one stripped when `contents_newline` is false).
fn contents_text(v: &Value, newline: bool) -> String {
    let parts: Vec<String> = match v {
        Value::Array(items) => items.iter().map(py_str).collect(),
        other => vec![py_str(other)],
    };
    let mut out = String::new();
    for part in &parts {
        for line in saltq_semantics::python::splitlines(part, false) {
            out.push_str(line.trim_end_matches('\n').trim_end_matches('\r'));
            out.push('\n');
        }
    }
    if !newline {
        let t = out.trim_end_matches('\n').trim_end_matches('\r').len();
        out.truncate(t);
    }
    out
}

/// `pillar.get`/`grains.get` with a delimiter.
fn traverse<'a>(root: &'a Value, key: &str, delim: &str) -> Option<&'a Value> {
    let mut cur = root;
    for part in key.split(delim) {
        cur = match cur {
            Value::Object(m) => m.get(part)?,
            Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// `file.managed`'s arguments as read before anything else.
#[derive(Debug, Default)]
struct ManagedArgs {
    /// `mode: keep`: the file takes its source's mode.
    keep_mode: bool,
    mode: Option<String>,
    source: Option<Value>,
    /// Whether `source` is given and truthy.
    source_given: bool,
    /// `replace`, false when there is nothing to write.
    replace: bool,
    /// `file_mode` was given: Salt warns that it is ignored.
    warn_file_mode: bool,
}

/// The warning Salt gives for `file_mode` in `file.managed`.
const FILE_MODE_WARNING: &str = "The 'file_mode' argument will be ignored.  Please use 'mode' \
                                 instead to set file permissions.";

/// `file.managed`'s first checks (a name, at most one way to give the content) and its
/// arguments, or the comment Salt fails with.
fn managed_args(name: &str, args: &Map<String, Value>) -> Result<ManagedArgs, String> {
    let arg = |k: &str| args.get(k).filter(|v| !v.is_null());
    if name.is_empty() {
        return Err("Destination file name is required".into());
    }
    let mode_arg = arg("mode");
    let keep_mode = matches!(mode_arg, Some(Value::String(s)) if s.to_lowercase() == "keep");
    let source = arg("source").cloned();
    let source_given = source.as_ref().is_some_and(saltq_semantics::python::truthy);
    let count = ["contents", "contents_pillar", "contents_grains"]
        .iter()
        .filter(|k| arg(k).is_some())
        .count();
    if source_given && count > 0 {
        return Err(
            "'source' cannot be used in combination with 'contents', 'contents_pillar', or \
             'contents_grains'"
                .into(),
        );
    } else if keep_mode && count > 0 {
        return Err(
            "Mode preservation cannot be used in combination with 'contents', \
             'contents_pillar', or 'contents_grains'"
                .into(),
        );
    } else if count > 1 {
        return Err(
            "Only one of 'contents', 'contents_pillar', and 'contents_grains' is permitted".into(),
        );
    }
    let replace = arg("replace").is_none_or(saltq_semantics::python::truthy);
    Ok(ManagedArgs {
        keep_mode,
        mode: if keep_mode {
            None
        } else {
            mode_arg.and_then(normalize_mode)
        },
        source,
        source_given,
        replace: replace && (source_given || count > 0),
        warn_file_mode: args.contains_key("file_mode"),
    })
}

/// `contents_pillar`/`contents_grains`: the value at each key of `root` (joined by lines for
/// a list of keys), or Salt's comment naming the missing key.
fn lookup_contents(keys: &Value, root: &Value, delim: &str, what: &str) -> Result<Value, String> {
    let names: Vec<String> = match keys {
        Value::Array(a) => a.iter().map(py_str).collect(),
        other => vec![py_str(other)],
    };
    let mut found = Vec::new();
    for k in &names {
        match traverse(root, k, delim) {
            Some(v) => found.push(v.clone()),
            None => return Err(format!("{what} {k} does not exist")),
        }
    }
    Ok(if keys.is_array() {
        Value::String(found.iter().map(py_str).collect::<Vec<_>>().join("\n"))
    } else {
        found.remove(0)
    })
}

/// The content given inline, from pillar or from grains, before it is rendered.
fn given_contents(call: &StateCall) -> Result<Option<Value>, String> {
    let delim = str_arg(call, "contents_delimiter").unwrap_or_else(|| ":".into());
    if let Some(p) = call.arg("contents_pillar") {
        lookup_contents(p, &call.ctx.pillar(), &delim, "Pillar").map(Some)
    } else if let Some(g) = call.arg("contents_grains") {
        lookup_contents(g, &call.ctx.grains(), &delim, "Grain").map(Some)
    } else {
        Ok(call.arg("contents").cloned())
    }
}

/// Salt's refusal of empty content when `allow_empty` is false, naming where it came from.
fn empty_contents_error(args: &Map<String, Value>, value: &Value) -> Option<String> {
    let arg = |k: &str| args.get(k).filter(|v| !v.is_null());
    let allow_empty = arg("allow_empty").is_none_or(saltq_semantics::python::truthy);
    if allow_empty || saltq_semantics::python::truthy(value) {
        return None;
    }
    let id = if let Some(p) = arg("contents_pillar") {
        format!("contents_pillar {}", py_str(p))
    } else if let Some(g) = arg("contents_grains") {
        format!("contents_grains {}", py_str(g))
    } else {
        "'contents'".into()
    };
    Some(format!(
        "{id} value would result in empty contents. Set allow_empty to True to allow the \
         managed file to be empty."
    ))
}

/// The text to write from the given content: its lines, rendered by `template` (only
/// `jinja` is supported for inline content).
async fn contents_to_write(
    call: &StateCall,
    v: &Value,
    template: Option<&str>,
) -> Result<String, String> {
    if let Some(e) = empty_contents_error(&call.args, v) {
        return Err(e);
    }
    let text = contents_text(v, bool_arg(call, "contents_newline", true));
    let Some(engine) = template else {
        return Ok(text);
    };
    if engine != "jinja" {
        return Err(format!(
            "Specified template format {engine} is not supported"
        ));
    }
    let mut extra = Map::new();
    for key in ["defaults", "context"] {
        if let Some(Value::Object(m)) = call.arg(key) {
            extra.extend(m.clone());
        }
    }
    render(call, text, engine, String::new(), extra).await
}

/// Salt's checks of the target once the owner is known good: an absolute path, not a
/// directory, `context` and `defaults` as dicts.
fn check_managed_target(name: &str, is_dir: bool, args: &Map<String, Value>) -> Result<(), String> {
    let arg = |k: &str| args.get(k).filter(|v| !v.is_null());
    if !name.starts_with('/') {
        return Err(format!("Specified file {name} is not an absolute path"));
    }
    if is_dir {
        return Err(format!("Specified target {name} is a directory"));
    }
    if arg("context").is_some_and(|c| !c.is_object()) {
        return Err("Context must be formed as a dict".into());
    }
    if arg("defaults").is_some_and(|d| saltq_semantics::python::truthy(d) && !d.is_object()) {
        return Err("Defaults must be formed as a dict".into());
    }
    Ok(())
}

/// The comment for an existing file left as it is (`replace: False`): what test mode says
/// of its mode, or that it already has its permissions.
fn kept_file_comment(
    name: &str,
    test: bool,
    mode: Option<&str>,
    lmode: &str,
    ret: &Ret,
) -> Option<String> {
    if test {
        return Some(match mode {
            Some(m) if m != lmode => format!(
                "File {name} will be updated with permissions {m} from its current state of \
                 {lmode}"
            ),
            _ => format!("File {name} not updated"),
        });
    }
    (ret.changes.is_empty() && ret.result == Some(true))
        .then(|| format!("File {name} exists with proper permissions. No changes made."))
}

/// Salt's test-mode answer from what `check_changes` found.
fn test_mode_answer(name: &str, changes: Map<String, Value>, show_changes: bool, ret: &mut Ret) {
    if changes.is_empty() {
        ret.comment = format!("The file {name} is in the correct state");
        return;
    }
    ret.changes = changes;
    ret.result = None;
    ret.comment = format!(
        "The file {name} is set to be changed\nNote: No changes made, actual changes may\nbe \
         different due to other states."
    );
    if ret.changes.contains_key("diff") && !show_changes {
        ret.changes
            .insert("diff".into(), "<show_changes=False>".into());
    }
}

/// `replace: False` on an existing file: only its owner and mode are managed.
fn keep_existing(path: &Path, spec: &FileSpec, test: bool, ret: &mut Ret) {
    let perms = check_perms(
        path,
        ret,
        spec.user.as_ref(),
        spec.group.as_ref(),
        spec.mode.as_deref(),
        spec.follow,
        test,
    );
    let name = path.to_string_lossy();
    if let Some(c) = kept_file_comment(&name, test, spec.mode.as_deref(), &perms.lmode, ret) {
        ret.comment = c;
    }
}

/// The source to copy from (the first of `source` that exists) and what the fileserver
/// says of it (`get_managed`, skipped when the content is given inline).
async fn locate_source(
    call: &StateCall,
    a: &ManagedArgs,
    template: Option<&str>,
    from_source: bool,
) -> Result<(String, Managed), String> {
    let source_hash = str_arg(call, "source_hash").unwrap_or_default();
    let (source, source_hash) = match &a.source {
        Some(s) if a.source_given => source_list(call, s, &source_hash)
            .await
            .map_err(|e| format!("Unable to manage file: {e}"))?,
        _ => (String::new(), source_hash),
    };
    if !from_source {
        return Ok((source, Managed::default()));
    }
    let skip_verify = bool_arg(call, "skip_verify", false);
    let name = name_of(call);
    let m = get_managed(call, &name, &source, &source_hash, template, skip_verify).await?;
    Ok((source, m))
}

/// `file.managed`.
pub(crate) async fn managed(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    let a = match managed_args(&name, &call.args) {
        Ok(a) => a,
        Err(e) => return Ok(error(ret, e)),
    };
    if a.warn_file_mode {
        ret.extra.insert(
            "warnings".into(),
            Value::Array(vec![FILE_MODE_WARNING.into()]),
        );
    }
    let use_contents = match given_contents(&call) {
        Ok(v) => v,
        Err(e) => return Ok(error(ret, e)),
    };
    let template = str_arg(&call, "template").filter(|t| !t.is_empty());
    let contents = match &use_contents {
        Some(v) => match contents_to_write(&call, v, template.as_deref()).await {
            Ok(text) => Some(text),
            Err(e) => return Ok(error(ret, e)),
        },
        None => None,
    };
    let user = call.arg("user").cloned();
    let group = call.arg("group").cloned();
    if !bool_arg(&call, "create", true) && !Path::new(&name).is_file() {
        ret.comment = format!("File {name} is not present and is not set for creation");
        return Ok(ret);
    }
    let u_check = check_user(user.as_ref(), group.as_ref(), call.test);
    if !u_check.is_empty() {
        return Ok(error(ret, u_check));
    }
    if let Err(e) = check_managed_target(&name, Path::new(&name).is_dir(), &call.args) {
        return Ok(error(ret, e));
    }
    let path = PathBuf::from(&name);
    let mut spec = FileSpec {
        user,
        group,
        mode: a.mode.clone(),
        follow: bool_arg(&call, "follow_symlinks", true),
        show_changes: bool_arg(&call, "show_changes", true),
        makedirs: bool_arg(&call, "makedirs", false),
        dir_mode: call.arg("dir_mode").and_then(normalize_mode),
        backup: str_arg(&call, "backup"),
    };
    if !a.replace && path.exists() {
        keep_existing(&path, &spec, call.test, &mut ret);
        return Ok(ret);
    }
    let (source, mut m) =
        match locate_source(&call, &a, template.as_deref(), contents.is_none()).await {
            Ok(found) => found,
            Err(e) => return Ok(error(ret, e)),
        };
    if a.keep_mode && !source.is_empty() {
        spec.mode = keep_mode_of(&call, &source).await;
    }
    if call.test {
        match check_changes(&call, &path, &mut m, contents.as_deref(), &spec).await {
            Err(comment) => return Ok(error(ret, comment)),
            Ok(changes) => test_mode_answer(&name, changes, spec.show_changes, &mut ret),
        }
        return Ok(ret);
    }
    Ok(manage_file(
        &call,
        ret,
        &path,
        &source,
        &mut m,
        contents.as_deref(),
        &spec,
    )
    .await)
}

/// The mode of the source for `mode: keep`.
async fn keep_mode_of(call: &StateCall, source: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let local = if source.starts_with("salt://") {
        cache_salt(call, source).await.ok().flatten()?
    } else {
        PathBuf::from(source.strip_prefix("file://").unwrap_or(source))
    };
    let md = std::fs::metadata(local).ok()?;
    Some(format!("{:04o}", md.permissions().mode() & 0o7777))
}

/// The metadata a managed file should have.
#[derive(Debug, Clone, Default)]
pub(super) struct FileSpec {
    pub user: Option<Value>,
    pub group: Option<Value>,
    pub mode: Option<String>,
    pub follow: bool,
    pub show_changes: bool,
    pub makedirs: bool,
    pub dir_mode: Option<String>,
    /// Salt's `backup` (`minion` keeps a dated copy under the cachedir's `file_backup`).
    pub backup: Option<String>,
}

/// Salt's `backup_minion`: a copy of `path` at
/// `<cachedir>/file_backup/<dir>/<name>_<Wed_Nov_25_23:55:00_123456_2026>`, same owner and
/// mode.
fn backup_minion(path: &Path, cachedir: &str) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(path)?;
    let now = chrono::Local::now();
    let stamp = now.format("%a_%b_%d_%H:%M:%S_").to_string();
    let micros = format!("{:06}", now.timestamp_subsec_micros());
    let dname = path
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bname = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = Path::new(cachedir)
        .join("file_backup")
        .join(dname.trim_start_matches('/'));
    std::fs::create_dir_all(&dir)?;
    let bk = dir.join(format!("{bname}_{stamp}{micros}_{}", now.format("%Y")));
    std::fs::copy(path, &bk)?;
    let _ = std::os::unix::fs::chown(&bk, Some(md.uid()), Some(md.gid()));
    std::fs::set_permissions(&bk, md.permissions())
}

/// Keeps a backup of `dest` before it is overwritten, when the backup mode asks for one.
fn backup_before_write(call: &StateCall, spec: &FileSpec, dest: &Path) {
    let mode = spec
        .backup
        .clone()
        .filter(|b| !b.is_empty())
        .or_else(|| call.ctx.opt("backup_mode").map(py_str))
        .unwrap_or_default();
    if (mode == "minion" || mode == "both") && dest.exists() {
        let cachedir = call
            .ctx
            .opt("cachedir")
            .map(py_str)
            .unwrap_or_else(|| "/var/cache/salt/minion".into());
        let _ = backup_minion(dest, &cachedir);
    }
}

/// Salt's `check_file_meta` (test mode): what would change, `newfile` for a missing file.
pub(super) async fn check_changes(
    call: &StateCall,
    path: &Path,
    m: &mut Managed,
    contents: Option<&str>,
    spec: &FileSpec,
) -> Result<Map<String, Value>, String> {
    let mut changes = Map::new();
    let Some(meta) = stat_meta(path, spec.follow) else {
        changes.insert("newfile".into(), path.to_string_lossy().into_owned().into());
        return Ok(changes);
    };
    if let Some(sum) = m.sum.clone() {
        let old = std::fs::read(path).unwrap_or_default();
        if hash_bytes(&old, &sum.hash_type).as_deref() != Some(sum.hsum.as_str()) {
            match fetch(call, m).await {
                Ok(new) => {
                    changes.insert("diff".into(), get_diff(&old, &new, true).into());
                }
                Err(_) => {
                    changes.insert("sum".into(), "Checksum differs".into());
                }
            }
        }
    }
    if let Some(text) = contents {
        match std::fs::read(path) {
            Ok(old) => {
                let d = get_diff(&old, text.as_bytes(), true);
                if !d.is_empty() {
                    changes.insert("diff".into(), d.into());
                }
            }
            Err(e) => {
                let msg = format!("Failed to read {}: {}", path.display(), super::strerror(&e));
                changes.insert("diff".into(), msg.into());
            }
        }
    }
    if let Some(u) = &spec.user
        && !super::same_owner(u, &meta.user, meta.uid)
    {
        changes.insert("user".into(), u.clone());
    }
    if let Some(g) = &spec.group
        && !super::same_owner(g, &meta.group, meta.gid)
    {
        changes.insert("group".into(), g.clone());
    }
    if let Some(mode) = &spec.mode
        && *mode != meta.mode
    {
        changes.insert("mode".into(), mode.clone().into());
    }
    Ok(changes)
}

/// Salt's comment when downloaded data does not match `source_hash`: for an existing file
/// it names the source and suggests `source_hash_name`, for a new one it names the file.
fn checksum_mismatch(sum: &Sum, dl: &str, source: &str, name: &str, existing: bool) -> String {
    if existing {
        format!(
            "Specified {} checksum for {source} ({}) does not match actual checksum ({dl}). If \
             the 'source_hash' value refers to a remote file with multiple possible matches, \
             then it may be necessary to set 'source_hash_name'.",
            sum.hash_type, sum.hsum
        )
    } else {
        format!(
            "Specified {} checksum for {name} ({}) does not match actual checksum ({dl})",
            sum.hash_type, sum.hsum
        )
    }
}

/// The `diff` change for new data over `old`: hidden with `show_changes: False`, none when
/// the diff is empty.
fn diff_change(old: &[u8], new: &[u8], show_changes: bool) -> Option<String> {
    if !show_changes {
        return Some("<show_changes=False>".into());
    }
    Some(get_diff(old, new, true)).filter(|d| !d.is_empty())
}

/// The mode for parents `makedirs` creates: `dir_mode`, else the file's mode with each
/// non-zero digit of its last three made executable (`0644` gives `755`).
fn parent_dir_mode(dir_mode: Option<&str>, mode: Option<&str>) -> Option<String> {
    dir_mode.map(str::to_owned).or_else(|| {
        mode.map(|mode| {
            let digits: Vec<char> = mode.chars().collect();
            digits[digits.len().saturating_sub(3)..]
                .iter()
                .map(|c| match c.to_digit(8) {
                    Some(0) | None => *c,
                    Some(d) => char::from_digit(d | 1, 8).unwrap_or(*c),
                })
                .collect()
        })
    })
}

/// Salt's closing comment once a file was written (or found right).
fn closing_comment(name: &str, existing: bool, ret: &mut Ret) {
    if existing {
        if !ret.changes.is_empty() {
            ret.comment = format!("File {name} updated");
        } else if ret.result == Some(true) {
            ret.comment = format!("File {name} is in the correct state");
        }
        return;
    }
    if ret.comment.is_empty() {
        ret.comment = format!("File {name} updated");
    }
    if ret.changes.is_empty() && ret.result == Some(true) {
        ret.comment = format!("File {name} is in the correct state");
    }
}

/// What creating a new file without a source gives: the change and comment, or Salt's
/// failure comment.
fn created_outcome(
    name: &str,
    created: bool,
    has_contents: bool,
    ret: &mut Ret,
) -> Result<(), String> {
    match (created, has_contents) {
        (true, false) => {
            ret.changes
                .insert("new".into(), format!("file {name} created").into());
            ret.comment = "Empty file".into();
            Ok(())
        }
        (true, true) => {
            ret.changes.insert("diff".into(), "New file".into());
            Ok(())
        }
        (false, false) => Err(format!("Empty file {name} not created")),
        (false, true) => Err(format!("File {name} not created")),
    }
}

/// Salt's `manage_file`: writes the file where its content differs, then its owner and mode.
pub(super) async fn manage_file(
    call: &StateCall,
    ret: Ret,
    path: &Path,
    source: &str,
    m: &mut Managed,
    contents: Option<&str>,
    spec: &FileSpec,
) -> Ret {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|md| md.file_type().is_symlink());
    if path.is_file() || is_link {
        let real = if is_link && spec.follow {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        } else {
            path.to_path_buf()
        };
        return update_existing(call, ret, path, &real, source, m, contents, spec).await;
    }
    create_new(call, ret, path, source, m, contents, spec).await
}

/// The way `manage_file` turns a failed write into its answer.
fn commit_failed(ret: Ret, e: &std::io::Error, name: &str) -> Ret {
    error(
        ret,
        format!("Failed to commit change: {}", os_error(e, name)),
    )
}

/// An existing file (or the file a symlink leads to, `real`): the source's data where its
/// hash differs, the content where it differs, then owner and mode.
#[allow(clippy::too_many_arguments)]
async fn update_existing(
    call: &StateCall,
    mut ret: Ret,
    path: &Path,
    real: &Path,
    source: &str,
    m: &mut Managed,
    contents: Option<&str>,
    spec: &FileSpec,
) -> Ret {
    let name = path.to_string_lossy().into_owned();
    if !source.is_empty() {
        ret = match update_from_source(call, ret, &name, real, source, m, spec).await {
            Ok(ret) => ret,
            Err(answer) => return *answer,
        };
    }
    if let Some(text) = contents {
        ret = match update_from_contents(call, ret, &name, real, text, spec) {
            Ok(ret) => ret,
            Err(answer) => return *answer,
        };
    }
    check_perms(
        path,
        &mut ret,
        spec.user.as_ref(),
        spec.group.as_ref(),
        spec.mode.as_deref(),
        spec.follow,
        false,
    );
    closing_comment(&name, true, &mut ret);
    ret
}

/// Writes the source's data over `real` when their hashes differ (checked first when the
/// hash is to be verified); `Err` is the answer to give at once.
async fn update_from_source(
    call: &StateCall,
    mut ret: Ret,
    name: &str,
    real: &Path,
    source: &str,
    m: &mut Managed,
    spec: &FileSpec,
) -> Result<Ret, Box<Ret>> {
    let sum = m.sum.clone().unwrap_or(Sum {
        hash_type: "sha256".into(),
        hsum: String::new(),
    });
    let old = std::fs::read(real).ok();
    let name_sum = old.as_ref().and_then(|o| hash_bytes(o, &sum.hash_type));
    if name_sum.as_deref() == Some(sum.hsum.as_str()) {
        return Ok(ret);
    }
    let Ok(new) = fetch(call, m).await else {
        return Err(Box::new(error(
            ret,
            format!("Source file '{source}' not found"),
        )));
    };
    if m.verify {
        let dl = hash_bytes(&new, &sum.hash_type).unwrap_or_default();
        if dl != sum.hsum {
            let msg = checksum_mismatch(&sum, &dl, source, name, true);
            return Err(Box::new(error(ret, msg)));
        }
    }
    if let Some(d) = diff_change(&old.unwrap_or_default(), &new, spec.show_changes) {
        ret.changes.insert("diff".into(), d.into());
    }
    backup_before_write(call, spec, real);
    if let Err(e) = copy_into(&new, real) {
        return Err(Box::new(commit_failed(ret, &e, name)));
    }
    Ok(ret)
}

/// Writes `text` over `real` when it differs (an unreadable file is a warning, not a
/// change); `Err` is the answer to give at once.
fn update_from_contents(
    call: &StateCall,
    mut ret: Ret,
    name: &str,
    real: &Path,
    text: &str,
    spec: &FileSpec,
) -> Result<Ret, Box<Ret>> {
    let old = match std::fs::read(real) {
        Ok(old) => Some(old),
        Err(e) => {
            let msg = format!(
                "Failed to detect changes to file: Failed to read {}: {}",
                real.display(),
                super::strerror(&e)
            );
            ret.extra
                .insert("warnings".into(), Value::Array(vec![msg.into()]));
            None
        }
    };
    let d = old.map_or_else(String::new, |old| {
        get_diff(&old, text.as_bytes(), spec.show_changes)
    });
    if d.is_empty() {
        return Ok(ret);
    }
    ret.changes.insert("diff".into(), d.into());
    backup_before_write(call, spec, real);
    if let Err(e) = copy_into(text.as_bytes(), real) {
        return Err(Box::new(commit_failed(ret, &e, name)));
    }
    Ok(ret)
}

/// Makes the missing parent of `name` when `makedirs` allows it.
fn make_parents(ret: Ret, name: &str, spec: &FileSpec) -> Result<Ret, Box<Ret>> {
    let contain_dir = dirname(name);
    if Path::new(&contain_dir).is_dir() {
        return Ok(ret);
    }
    if !spec.makedirs {
        let mut ret = ret;
        ret.changes.remove("diff");
        return Err(Box::new(error(ret, "Parent directory not present")));
    }
    let dir_mode = parent_dir_mode(spec.dir_mode.as_deref(), spec.mode.as_deref());
    match makedirs(
        name,
        spec.user.as_ref(),
        spec.group.as_ref(),
        dir_mode.as_deref(),
    ) {
        Ok(()) => Ok(ret),
        Err(e) => Err(Box::new(error(ret, os_error(&e, &contain_dir)))),
    }
}

/// A file that does not exist yet: from its source, or created (empty or with `contents`),
/// then owner and mode.
async fn create_new(
    call: &StateCall,
    ret: Ret,
    path: &Path,
    source: &str,
    m: &mut Managed,
    contents: Option<&str>,
    spec: &FileSpec,
) -> Ret {
    let name = path.to_string_lossy().into_owned();
    let written = if source.is_empty() {
        create_from_contents(ret, &name, path, contents, spec)
    } else {
        create_from_source(call, ret, &name, path, source, m, spec).await
    };
    let mut ret = match written {
        Ok(ret) => ret,
        Err(answer) => return *answer,
    };
    let mode = spec
        .mode
        .clone()
        .unwrap_or_else(|| format!("{:04o}", 0o666 & !umask()));
    check_perms(
        path,
        &mut ret,
        spec.user.as_ref(),
        spec.group.as_ref(),
        Some(&mode),
        false,
        false,
    );
    closing_comment(&name, false, &mut ret);
    ret
}

/// A new file from its source's data, verified against `source_hash` when asked.
async fn create_from_source(
    call: &StateCall,
    mut ret: Ret,
    name: &str,
    path: &Path,
    source: &str,
    m: &mut Managed,
    spec: &FileSpec,
) -> Result<Ret, Box<Ret>> {
    let Ok(new) = fetch(call, m).await else {
        return Err(Box::new(error(
            ret,
            format!("Source file '{source}' not found"),
        )));
    };
    if m.verify
        && let Some(sum) = &m.sum
    {
        let dl = hash_bytes(&new, &sum.hash_type).unwrap_or_default();
        if dl != sum.hsum {
            let msg = checksum_mismatch(sum, &dl, source, name, false);
            return Err(Box::new(error(ret, msg)));
        }
    }
    ret.changes.insert("diff".into(), "New file".into());
    let ret = make_parents(ret, name, spec)?;
    if let Err(e) = copy_into(&new, path) {
        return Err(Box::new(commit_failed(ret, &e, name)));
    }
    Ok(ret)
}

/// A new file without a source: created with a private mode when one is to be set, then
/// filled with `contents` if any.
fn create_from_contents(
    ret: Ret,
    name: &str,
    path: &Path,
    contents: Option<&str>,
    spec: &FileSpec,
) -> Result<Ret, Box<Ret>> {
    let mut ret = make_parents(ret, name, spec)?;
    let create_mode = if spec.mode.is_some() {
        0o600
    } else {
        0o666 & !umask()
    };
    let created = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(create_mode)
            .open(path)
    };
    if let Err(msg) = created_outcome(name, created.is_ok(), contents.is_some(), &mut ret) {
        return Err(Box::new(error(ret, msg)));
    }
    if let Some(text) = contents
        && let Err(e) = copy_into(text.as_bytes(), path)
    {
        return Err(Box::new(commit_failed(ret, &e, name)));
    }
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_lines_end_with_newline() {
        assert_eq!(contents_text(&Value::from("a\r\nb"), true), "a\nb\n");
        assert_eq!(contents_text(&serde_json::json!(["a", 1]), true), "a\n1\n");
        assert_eq!(contents_text(&Value::from("x\n\n"), false), "x");
        assert_eq!(contents_text(&Value::from(""), true), "");
    }

    #[test]
    fn salt_urls_give_path_and_saltenv() {
        assert_eq!(
            parse_salt_url("salt://a/b.txt?saltenv=dev"),
            ("a/b.txt".into(), Some("dev".into()))
        );
        assert_eq!(parse_salt_url("salt://a"), ("a".into(), None));
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn managed_args_checks() {
        let err = |v: Value| managed_args("/f", &args(v)).err().unwrap_or_default();
        assert_eq!(
            managed_args("", &Map::new()).err().as_deref(),
            Some("Destination file name is required")
        );
        assert!(
            err(serde_json::json!({"source": "salt://a", "contents": "x"}))
                .starts_with("'source' cannot be used")
        );
        assert!(
            err(serde_json::json!({"mode": "keep", "contents_pillar": "k"}))
                .starts_with("Mode preservation cannot be used")
        );
        assert!(
            err(serde_json::json!({"contents": "x", "contents_grains": "k"}))
                .starts_with("Only one of")
        );
        // An empty source counts as none; nothing to write means nothing to replace.
        let a = managed_args("/f", &args(serde_json::json!({"source": "", "mode": 600}))).unwrap();
        assert!(!a.source_given && !a.replace && !a.keep_mode);
        assert_eq!(a.mode.as_deref(), Some("0600"));
        let a = managed_args(
            "/f",
            &args(serde_json::json!({"source": "salt://a", "mode": "Keep", "file_mode": 1})),
        )
        .unwrap();
        assert!(a.source_given && a.replace && a.keep_mode && a.warn_file_mode);
        assert_eq!(a.mode, None);
        let a = managed_args(
            "/f",
            &args(serde_json::json!({"contents": "", "replace": false})),
        )
        .unwrap();
        assert!(!a.replace);
    }

    #[test]
    fn contents_from_pillar_keys() {
        let root = serde_json::json!({"a": {"b": "x", "n": 3}, "l": ["p", "q"]});
        assert_eq!(
            lookup_contents(&"a:b".into(), &root, ":", "Pillar"),
            Ok("x".into())
        );
        assert_eq!(
            lookup_contents(&"l.1".into(), &root, ".", "Grain"),
            Ok("q".into())
        );
        assert_eq!(
            lookup_contents(&serde_json::json!(["a:b", "a:n"]), &root, ":", "Pillar"),
            Ok("x\n3".into())
        );
        assert_eq!(
            lookup_contents(&"a:zz".into(), &root, ":", "Grain"),
            Err("Grain a:zz does not exist".into())
        );
    }

    #[test]
    fn empty_contents_named_by_origin() {
        let none = |v: Value, c: Value| empty_contents_error(&args(v), &c);
        assert_eq!(none(serde_json::json!({}), "".into()), None);
        assert_eq!(
            none(serde_json::json!({"allow_empty": false}), "x".into()),
            None
        );
        assert!(
            none(
                serde_json::json!({"allow_empty": false, "contents_pillar": "k:v"}),
                "".into()
            )
            .unwrap()
            .starts_with("contents_pillar k:v value would result in empty contents")
        );
        assert!(
            none(serde_json::json!({"allow_empty": false}), "".into())
                .unwrap()
                .starts_with("'contents' value would")
        );
    }

    #[test]
    fn target_checks() {
        let none = Map::new();
        assert_eq!(
            check_managed_target("rel", false, &none).unwrap_err(),
            "Specified file rel is not an absolute path"
        );
        assert_eq!(
            check_managed_target("/d", true, &none).unwrap_err(),
            "Specified target /d is a directory"
        );
        assert_eq!(
            check_managed_target("/f", false, &args(serde_json::json!({"context": [1]})))
                .unwrap_err(),
            "Context must be formed as a dict"
        );
        assert_eq!(
            check_managed_target("/f", false, &args(serde_json::json!({"defaults": "x"})))
                .unwrap_err(),
            "Defaults must be formed as a dict"
        );
        assert!(
            check_managed_target("/f", false, &args(serde_json::json!({"defaults": ""}))).is_ok()
        );
    }

    #[test]
    fn kept_and_test_mode_comments() {
        let ret = Ret::new("/f");
        assert_eq!(
            kept_file_comment("/f", true, Some("0600"), "0644", &ret).as_deref(),
            Some("File /f will be updated with permissions 0600 from its current state of 0644")
        );
        assert_eq!(
            kept_file_comment("/f", true, Some("0644"), "0644", &ret).as_deref(),
            Some("File /f not updated")
        );
        assert_eq!(
            kept_file_comment("/f", false, None, "0644", &ret).as_deref(),
            Some("File /f exists with proper permissions. No changes made.")
        );
        let mut changed = Ret::new("/f");
        changed.changes.insert("mode".into(), "0600".into());
        assert_eq!(kept_file_comment("/f", false, None, "0644", &changed), None);

        let mut ret = Ret::new("/f");
        test_mode_answer("/f", Map::new(), true, &mut ret);
        assert_eq!(
            (ret.result, ret.comment.as_str()),
            (Some(true), "The file /f is in the correct state")
        );
        let mut ret = Ret::new("/f");
        let changes = args(serde_json::json!({"diff": "--- x", "mode": "0600"}));
        test_mode_answer("/f", changes, false, &mut ret);
        assert_eq!(ret.result, None);
        assert!(
            ret.comment
                .starts_with("The file /f is set to be changed\n")
        );
        assert_eq!(ret.changes["diff"], "<show_changes=False>");
    }

    #[test]
    fn apply_side_decisions() {
        assert_eq!(
            parent_dir_mode(Some("0700"), Some("0644")).as_deref(),
            Some("0700")
        );
        assert_eq!(parent_dir_mode(None, Some("0644")).as_deref(), Some("755"));
        assert_eq!(parent_dir_mode(None, Some("0600")).as_deref(), Some("700"));
        assert_eq!(parent_dir_mode(None, None), None);
        assert_eq!(
            diff_change(b"a", b"b", false).as_deref(),
            Some("<show_changes=False>")
        );
        assert_eq!(diff_change(b"a\n", b"a\n", true), None);
        assert!(diff_change(b"a\n", b"b\n", true).is_some_and(|d| d.contains("+b")));
        let sum = Sum {
            hash_type: "md5".into(),
            hsum: "abc".into(),
        };
        assert!(
            checksum_mismatch(&sum, "def", "salt://s", "/f", true).starts_with(
                "Specified md5 checksum for salt://s (abc) does not match actual checksum (def). If"
            )
        );
        assert_eq!(
            checksum_mismatch(&sum, "def", "salt://s", "/f", false),
            "Specified md5 checksum for /f (abc) does not match actual checksum (def)"
        );
        let mut ret = Ret::new("/f");
        assert!(created_outcome("/f", true, false, &mut ret).is_ok());
        assert_eq!(ret.comment, "Empty file");
        assert_eq!(ret.changes["new"], "file /f created");
        let mut ret = Ret::new("/f");
        assert_eq!(
            created_outcome("/f", false, true, &mut ret),
            Err("File /f not created".into())
        );
        let mut ret = Ret::new("/f");
        closing_comment("/f", false, &mut ret);
        assert_eq!(ret.comment, "File /f is in the correct state");
        let mut ret = Ret::new("/f");
        ret.comment = "Empty file".into();
        ret.changes.insert("new".into(), "x".into());
        closing_comment("/f", false, &mut ret);
        assert_eq!(ret.comment, "Empty file");
        closing_comment("/f", true, &mut ret);
        assert_eq!(ret.comment, "File /f updated");
    }

    #[test]
    fn mode_gets_digits_and_zero_padding() {
        assert_eq!(normalize_mode(&Value::from(644)).as_deref(), Some("0644"));
        assert_eq!(
            normalize_mode(&Value::from("0o755")).as_deref(),
            Some("0755")
        );
        assert_eq!(
            normalize_mode(&Value::from("'0600'")).as_deref(),
            Some("0600")
        );
    }
}
