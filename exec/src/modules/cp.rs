//! Salt's `cp` module: files from the master's fileserver (`salt://`) through the minion's
//! [`FileClient`](crate::FileClient), which caches them by hash in
//! `<cachedir>/files/<saltenv>/<path>`. Returns and their odd corners are Salt's: `""` for a
//! source the master lacks, `False` for a destination directory that does not exist, lists
//! in the fileserver's order.
//!
//! Not Salt's: a path the fileserver refuses (`..`, absolute, a symlink out of the roots)
//! fails with an error naming it, where Salt quietly answers as for a missing file; `gzip`
//! is accepted and ignored (the transport compresses nothing per file, chunks stream).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use saltq_fileserver::path::split_url;
use saltq_semantics::python::{self, fnmatch, truthy};
use serde_json::{Map, Value, json};

use crate::FileClient;
use crate::error::ExecError;
use crate::spec::{Call, Function, Lit, Param};

const NONE: Lit = Lit::None;

/// The `cp` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("cp.cache_dir", handler!(cache_dir))
        .params(&[
            Param::req("path"),
            Param::opt("saltenv", NONE),
            Param::opt("include_empty", Lit::Bool(false)),
            Param::opt("include_pat", NONE),
            Param::opt("exclude_pat", NONE),
        ])
        .doc(CACHE_DIR_DOC),
    Function::new("cp.cache_file", handler!(cache_file))
        .params(&[
            Param::req("path"),
            Param::opt("saltenv", NONE),
            Param::opt("source_hash", NONE),
            Param::opt("verify_ssl", Lit::Bool(true)),
            Param::opt("use_etag", Lit::Bool(false)),
        ])
        .doc(CACHE_FILE_DOC),
    Function::new("cp.cache_files", handler!(cache_files))
        .params(&[Param::req("paths"), Param::opt("saltenv", NONE)])
        .doc(CACHE_FILES_DOC),
    Function::new("cp.cache_master", handler!(cache_master))
        .params(&[Param::opt("saltenv", NONE)])
        .doc(CACHE_MASTER_DOC),
    Function::new("cp.get_dir", handler!(get_dir))
        .params(&[
            Param::req("path"),
            Param::req("dest"),
            Param::opt("saltenv", NONE),
            Param::opt("template", NONE),
            Param::opt("gzip", NONE),
        ])
        .kwargs()
        .doc(GET_DIR_DOC),
    Function::new("cp.get_file", handler!(get_file))
        .params(&[
            Param::req("path"),
            Param::req("dest"),
            Param::opt("saltenv", NONE),
            Param::opt("makedirs", Lit::Bool(false)),
            Param::opt("template", NONE),
            Param::opt("gzip", NONE),
        ])
        .kwargs()
        .doc(GET_FILE_DOC),
    Function::new("cp.get_file_str", handler!(get_file_str))
        .params(&[Param::req("path"), Param::opt("saltenv", NONE)])
        .doc(GET_FILE_STR_DOC),
    Function::new("cp.get_template", handler!(get_template))
        .params(&[
            Param::req("path"),
            Param::req("dest"),
            Param::opt("template", Lit::Str("jinja")),
            Param::opt("saltenv", NONE),
            Param::opt("makedirs", Lit::Bool(false)),
        ])
        .kwargs()
        .doc(GET_TEMPLATE_DOC),
    Function::new("cp.hash_file", handler!(hash_file))
        .params(&[Param::req("path"), Param::opt("saltenv", NONE)])
        .doc(HASH_FILE_DOC),
    Function::new("cp.is_cached", handler!(is_cached))
        .params(&[Param::req("path"), Param::opt("saltenv", NONE)])
        .doc(IS_CACHED_DOC),
    Function::new("cp.list_master", handler!(list_master))
        .params(&[
            Param::opt("saltenv", NONE),
            Param::opt("prefix", Lit::Str("")),
        ])
        .doc(LIST_MASTER_DOC),
    Function::new("cp.list_master_dirs", handler!(list_master_dirs))
        .params(&[
            Param::opt("saltenv", NONE),
            Param::opt("prefix", Lit::Str("")),
        ])
        .doc(LIST_MASTER_DIRS_DOC),
    Function::new("cp.list_minion", handler!(list_minion))
        .params(&[Param::opt("saltenv", NONE)])
        .doc(LIST_MINION_DOC),
    Function::new("cp.list_states", handler!(list_states))
        .params(&[Param::opt("saltenv", NONE)])
        .doc(LIST_STATES_DOC),
];

/// The fileserver client, or the error a minion without one gives.
fn files(call: &Call) -> Result<Arc<dyn FileClient>, ExecError> {
    call.ctx.files.clone().ok_or_else(|| {
        ExecError::execution(format!(
            "{} needs the master's fileserver (salt://), which this minion has no connection to",
            call.fun
        ))
    })
}

/// `saltenv` as passed, else the minion's `saltenv` option, else `base` (Salt's rule).
fn saltenv(call: &Call) -> String {
    let passed = call.arg("saltenv");
    if truthy(passed) {
        return python::str(passed);
    }
    match call.ctx.opt("saltenv") {
        Some(v) if truthy(v) => python::str(v),
        _ => "base".into(),
    }
}

fn cachedir(call: &Call) -> PathBuf {
    call.ctx.opt("cachedir").map_or_else(
        || PathBuf::from("/var/cache/saltq/minion"),
        |v| PathBuf::from(python::str(v)),
    )
}

fn hash_type(call: &Call) -> String {
    call.ctx
        .opt("hash_type")
        .map_or_else(|| saltq_fileserver::DEFAULT_HASH_TYPE.into(), python::str)
}

fn failed(e: String) -> ExecError {
    ExecError::execution(e)
}

fn path_value(p: &Path) -> Value {
    Value::String(p.display().to_string())
}

/// Caches `url` (`salt://path[?saltenv=env]`) in `saltenv` unless the URL names another:
/// the local path, or `None` when the fileserver has no such file. Used by `cmd.script`.
pub(crate) async fn cache_salt_url(
    call: &Call,
    url: &str,
    saltenv: &str,
) -> Result<Option<PathBuf>, ExecError> {
    let (path, senv) = split_url(url);
    files(call)?
        .cache_file(senv.unwrap_or(saltenv), path)
        .await
        .map_err(failed)
}

const CACHE_FILE_DOC: &str = "Cache a file from the master's fileserver in the minion's cachedir
(``<cachedir>/files/<saltenv>/<path>``), fetching it only when the master's copy changed.
Returns the local path, or ``False`` when the master has no such file. A local absolute path
is returned as it is.

CLI Example:

.. code-block:: bash

    salt '*' cp.cache_file salt://path/to/file
    salt '*' cp.cache_file salt://foo/bar.conf saltenv=config
    salt '*' cp.cache_file 'salt://foo/bar.conf?saltenv=config'
";

/// Salt's `cp.cache_file` for one path: the cached path, `False`, or the local path itself.
pub(crate) async fn cache_one(call: &Call, path: &str, saltenv: &str) -> Result<Value, ExecError> {
    if path.starts_with("salt://") {
        return Ok(cache_salt_url(call, path, saltenv)
            .await?
            .map_or(Value::Bool(false), |p| path_value(&p)));
    }
    let local = path.strip_prefix("file://").unwrap_or(path);
    if let Some((scheme, _)) = local.split_once("://") {
        return Err(ExecError::execution(format!(
            "saltq fetches only salt:// and local files, not {scheme}:// ({path})"
        )));
    }
    if !Path::new(local).is_absolute() {
        return Err(ExecError::execution(format!(
            "Path '{}' is not absolute",
            local.trim_end_matches('/')
        )));
    }
    Ok(Value::String(local.trim_end_matches('/').to_owned()))
}

async fn cache_file(call: Call) -> Result<Value, ExecError> {
    let path = python::str(call.arg("path"));
    cache_one(&call, &path, &saltenv(&call)).await
}

const CACHE_FILES_DOC: &str = "Cache several files from the master's fileserver: a list, or a
comma-separated string. Returns one entry per file, as ``cp.cache_file`` does.

CLI Example:

.. code-block:: bash

    salt '*' cp.cache_files salt://pathto/file1,salt://pathto/file1
";

async fn cache_files(call: Call) -> Result<Value, ExecError> {
    let env = saltenv(&call);
    let paths: Vec<String> = match call.arg("paths") {
        Value::Array(items) => items.iter().map(python::str).collect(),
        other => python::str(other).split(',').map(str::to_owned).collect(),
    };
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        out.push(cache_one(&call, &p, &env).await?);
    }
    Ok(Value::Array(out))
}

const CACHE_MASTER_DOC: &str = "Cache every file of a saltenv of the master's fileserver.
Returns the local paths.

CLI Example:

.. code-block:: bash

    salt '*' cp.cache_master
";

async fn cache_master(call: Call) -> Result<Value, ExecError> {
    let env = saltenv(&call);
    let fc = files(&call)?;
    let mut out = Vec::new();
    for f in fc.list_files(&env, "").await.map_err(failed)? {
        out.push(
            fc.cache_file(&env, &f)
                .await
                .map_err(failed)?
                .map_or(Value::Bool(false), |p| path_value(&p)),
        );
    }
    Ok(Value::Array(out))
}

/// Salt's `check_include_exclude`: glob patterns, or regular expressions prefixed `E@`; a
/// list matches when any of its patterns does.
fn include_exclude(path: &str, include: &Value, exclude: &Value) -> bool {
    let one = |pat: &str| match pat.strip_prefix("E@") {
        Some(re) => regex::Regex::new(re).is_ok_and(|r| r.is_match(path)),
        None => fnmatch(path, pat),
    };
    let any = |v: &Value| match v {
        Value::Array(items) => items.iter().any(|p| one(&python::str(p))),
        other => one(&python::str(other)),
    };
    let inc = !truthy(include) || any(include);
    let exc = truthy(exclude) && any(exclude);
    inc && !exc
}

/// A `salt://` URL's path and saltenv, or Salt's error for another kind of path.
fn salt_path<'a>(url: &'a str, saltenv: &str) -> Result<(&'a str, String), ExecError> {
    if !url.starts_with("salt://") {
        return Err(ExecError::execution(format!("Unsupported path: {url}")));
    }
    let (path, senv) = split_url(url);
    Ok((path, senv.map_or_else(|| saltenv.to_owned(), str::to_owned)))
}

const CACHE_DIR_DOC: &str = "Cache every file under a directory of the master's fileserver.
``include_empty`` also makes its empty directories; ``include_pat`` and ``exclude_pat`` are
globs, or regular expressions prefixed ``E@``, matched against the path on the master.

CLI Example:

.. code-block:: bash

    salt '*' cp.cache_dir salt://path/to/dir
    salt '*' cp.cache_dir salt://path/to/dir include_pat='E@*.py$'
";

async fn cache_dir(call: Call) -> Result<Value, ExecError> {
    let url = python::str(call.arg("path"));
    let (path, env) = salt_path(&url, &saltenv(&call))?;
    let dir = format!("{}/", path.trim_end_matches('/'));
    let fc = files(&call)?;
    let mut out = Vec::new();
    for f in fc.list_files(&env, "").await.map_err(failed)? {
        if f.trim().is_empty()
            || !f.starts_with(&dir)
            || !include_exclude(&f, call.arg("include_pat"), call.arg("exclude_pat"))
        {
            continue;
        }
        if let Some(p) = fc.cache_file(&env, &f).await.map_err(failed)? {
            out.push(path_value(&p));
        }
    }
    if truthy(call.arg("include_empty")) {
        let base = cachedir(&call).join("files").join(&env);
        for d in fc.list_empty_dirs(&env, "").await.map_err(failed)? {
            if d.starts_with(&dir) {
                let local = format!("{}/{d}", base.display());
                mkdirs(Path::new(&local))?;
                out.push(Value::String(local));
            }
        }
    }
    Ok(Value::Array(out))
}

fn mkdirs(dir: &Path) -> Result<(), ExecError> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        ExecError::execution(format!("cannot create directory {}: {e}", dir.display()))
    })
}

/// Renders `text` through `engine` with the state system's renderer, on a blocking thread.
async fn render(
    call: &Call,
    text: String,
    engine: &str,
    saltenv: &str,
    extra: Map<String, Value>,
) -> Result<String, String> {
    let Some(states) = call.ctx.states.clone() else {
        return Err(format!(
            "{} cannot render templates: this minion has no renderer",
            call.fun
        ));
    };
    let (ctx, engine, env) = (call.ctx.clone(), engine.to_owned(), saltenv.to_owned());
    tokio::task::spawn_blocking(move || states.render_template(&ctx, &text, &engine, &env, extra))
        .await
        .map_err(|e| format!("rendering failed: {e}"))?
}

/// The keyword arguments a template sees: the call's, without Salt's `__pub_*` keys.
fn template_kwargs(call: &Call) -> Map<String, Value> {
    call.kwargs()
        .iter()
        .filter(|(k, _)| !k.starts_with("__"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Renders the source and destination names when `template` is set (Salt's
/// `_render_filenames`).
async fn render_names(
    call: &Call,
    path: String,
    dest: String,
    saltenv: &str,
) -> Result<(String, String), ExecError> {
    let template = call.arg("template");
    if !truthy(template) {
        return Ok((path, dest));
    }
    let engine = python::str(template);
    let mut out = Vec::with_capacity(2);
    for text in [path, dest] {
        let rendered = render(call, text, &engine, saltenv, template_kwargs(call))
            .await
            .map_err(|e| {
                ExecError::execution(format!("Failed to render file path with error: {e}"))
            })?;
        out.push(rendered);
    }
    let dest = out.pop().unwrap_or_default();
    let path = out.pop().unwrap_or_default();
    Ok((path, dest))
}

/// Copies `src` to `dest` unless `dest` already has the same contents.
fn copy_if_changed(src: &Path, dest: &Path, hash_type: &str) -> Result<(), ExecError> {
    let same = dest.is_file()
        && saltq_fileserver::hash_file(src, hash_type).ok()
            == saltq_fileserver::hash_file(dest, hash_type).ok();
    if !same {
        std::fs::copy(src, dest).map_err(|e| {
            ExecError::execution(format!(
                "cannot copy {} to {}: {e}",
                src.display(),
                dest.display()
            ))
        })?;
    }
    Ok(())
}

/// Salt's fileclient `get_file`: the file at `dest` (a directory gets the source's name),
/// `False` when `dest`'s directory is missing and not to be made, `""` when the master lacks
/// the file.
async fn fetch_to(
    call: &Call,
    fc: &Arc<dyn FileClient>,
    path: &str,
    env: &str,
    dest: &str,
    makedirs: bool,
) -> Result<Value, ExecError> {
    let Some(cached) = fc.cache_file(env, path).await.map_err(failed)? else {
        return Ok(Value::String(String::new()));
    };
    if dest.is_empty() {
        return Ok(path_value(&cached));
    }
    let mut dest = PathBuf::from(dest);
    if dest.is_dir() || dest.as_os_str().to_string_lossy().ends_with('/') {
        let name = path.rsplit('/').next().unwrap_or(path);
        dest = dest.join(name);
    }
    if let Some(dir) = dest.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        if !makedirs {
            return Ok(Value::Bool(false));
        }
        mkdirs(dir)?;
    }
    let (src, to, ht) = (cached, dest.clone(), hash_type(call));
    tokio::task::spawn_blocking(move || copy_if_changed(&src, &to, &ht))
        .await
        .map_err(|e| ExecError::execution(format!("copy failed: {e}")))??;
    Ok(path_value(&dest))
}

const GET_FILE_DOC: &str = "Copy a file from the master's fileserver to ``dest`` on the minion.
``dest`` may be a directory (the file keeps its name); a missing parent directory is made
only with ``makedirs=True``, else ``False`` is returned. Returns ``''`` when the master has
no such file. ``template`` renders the source and destination names (not the contents);
``gzip`` is accepted and ignored.

CLI Example:

.. code-block:: bash

    salt '*' cp.get_file salt://path/to/file /minion/dest
    salt '*' cp.get_file 'salt://{{grains.os}}/vimrc' /etc/vimrc template=jinja
";

async fn get_file(call: Call) -> Result<Value, ExecError> {
    let env = saltenv(&call);
    let (url, dest) = render_names(
        &call,
        python::str(call.arg("path")),
        python::str(call.arg("dest")),
        &env,
    )
    .await?;
    let (path, env) = {
        let (p, senv) = split_url(&url);
        (p.to_owned(), senv.map_or(env, str::to_owned))
    };
    let fc = files(&call)?;
    if fc.hash(&env, &path).await.map_err(failed)?.is_none() {
        return Ok(Value::String(String::new()));
    }
    fetch_to(&call, &fc, &path, &env, &dest, truthy(call.arg("makedirs"))).await
}

const GET_DIR_DOC: &str = "Copy a directory of the master's fileserver, recursively, into
``dest`` on the minion (``salt://a/b`` lands in ``dest/b``). Returns the paths made, sorted.

CLI Example:

.. code-block:: bash

    salt '*' cp.get_dir salt://path/to/dir/ /minion/dest
";

async fn get_dir(call: Call) -> Result<Value, ExecError> {
    let env = saltenv(&call);
    let (url, dest) = render_names(
        &call,
        python::str(call.arg("path")),
        python::str(call.arg("dest")),
        &env,
    )
    .await?;
    let (path, env) = salt_path(&url, &env)?;
    let path = path.trim_end_matches('/');
    let prefix = path.rsplit_once('/').map_or("", |(p, _)| p);
    let fc = files(&call)?;
    let under = |f: &str| f.as_bytes().get(path.len()) == Some(&b'/');
    let mut out = Vec::new();
    for f in fc.list_files(&env, path).await.map_err(failed)? {
        if !under(&f) {
            continue;
        }
        let rel = f[prefix.len()..].trim_start_matches('/');
        out.push(fetch_to(&call, &fc, &f, &env, &format!("{dest}/{rel}"), true).await?);
    }
    for d in fc.list_empty_dirs(&env, path).await.map_err(failed)? {
        if !under(&d) {
            continue;
        }
        let rel = d[prefix.len()..].trim_start_matches('/');
        let local = format!("{dest}/{rel}");
        mkdirs(Path::new(&local))?;
        out.push(Value::String(local));
    }
    out.sort_by_key(python::str);
    Ok(Value::Array(out))
}

const GET_FILE_STR_DOC: &str = "Cache a file from the master's fileserver and return its
contents, or ``False`` when it could not be cached.

CLI Example:

.. code-block:: bash

    salt '*' cp.get_file_str salt://my/file
";

async fn get_file_str(call: Call) -> Result<Value, ExecError> {
    let path = python::str(call.arg("path"));
    match cache_one(&call, &path, &saltenv(&call)).await? {
        Value::String(p) => Ok(std::fs::read(&p).map_or(Value::Bool(false), |bytes| {
            Value::String(String::from_utf8_lossy(&bytes).into_owned())
        })),
        other => Ok(other),
    }
}

const GET_TEMPLATE_DOC: &str = "Render a file of the master's fileserver as a template
(``template``, ``jinja`` by default) with the keyword arguments as extra variables, and write
it to ``dest``. Returns ``dest``, or ``''`` when the file is missing or fails to render.

CLI Example:

.. code-block:: bash

    salt '*' cp.get_template salt://path/to/template /minion/dest
";

async fn get_template(call: Call) -> Result<Value, ExecError> {
    let env = saltenv(&call);
    let url = python::str(call.arg("path"));
    let (path, env) = {
        let (p, senv) = split_url(&url);
        (p.to_owned(), senv.map_or(env, str::to_owned))
    };
    let fc = files(&call)?;
    let Some(cached) = fc.cache_file(&env, &path).await.map_err(failed)? else {
        return Ok(Value::String(String::new()));
    };
    let text = std::fs::read(&cached)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| ExecError::execution(format!("{}: {e}", cached.display())))?;
    let engine = python::str(call.arg("template"));
    let mut extra = template_kwargs(&call);
    extra.insert("saltenv".into(), json!(env));
    let rendered = match render(&call, text, &engine, &env, extra).await {
        Ok(r) => r,
        // Salt logs "Failed to render template with error: ..." and answers "".
        Err(_) => return Ok(Value::String(String::new())),
    };
    let mut makedirs = truthy(call.arg("makedirs"));
    let mut dest = python::str(call.arg("dest"));
    if dest.is_empty() {
        // Salt's extrn_files place for a URL: <cachedir>/extrn_files/<saltenv>/<host>/<path>.
        dest = format!(
            "{}/{path}",
            cachedir(&call).join("extrn_files").join(&env).display()
        );
        makedirs = true;
    }
    let dest = PathBuf::from(dest);
    if let Some(dir) = dest.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        if !makedirs {
            return Ok(Value::String(String::new()));
        }
        mkdirs(dir)?;
    }
    std::fs::write(&dest, rendered)
        .map_err(|e| ExecError::execution(format!("{}: {e}", dest.display())))?;
    Ok(path_value(&dest))
}

const HASH_FILE_DOC: &str = "Return the hash of a file: ``{hsum, hash_type}``. A ``salt://``
path is hashed on the master's fileserver (``''`` when it has no such file); any other path
is a local file.

CLI Example:

.. code-block:: bash

    salt '*' cp.hash_file salt://path/to/file
";

async fn hash_file(call: Call) -> Result<Value, ExecError> {
    let url = python::str(call.arg("path"));
    let env = saltenv(&call);
    if !url.starts_with("salt://") {
        let ht = hash_type(&call);
        let local = PathBuf::from(url.strip_prefix("file://").unwrap_or(&url));
        if !local.is_file() {
            return Ok(json!({}));
        }
        let hsum = saltq_fileserver::hash_file(&local, &ht).map_err(|e| failed(e.to_string()))?;
        return Ok(json!({"hsum": hsum, "hash_type": ht}));
    }
    let (path, senv) = split_url(&url);
    let env = senv.map_or(env, str::to_owned);
    Ok(
        match files(&call)?.hash(&env, path).await.map_err(failed)? {
            Some(h) => json!({"hsum": h.hsum, "hash_type": h.hash_type}),
            None => Value::String(String::new()),
        },
    )
}

const IS_CACHED_DOC: &str = "Return the local path of a file if the minion has it cached,
else ``''``.

CLI Example:

.. code-block:: bash

    salt '*' cp.is_cached salt://path/to/file
";

async fn is_cached(call: Call) -> Result<Value, ExecError> {
    let url = python::str(call.arg("path"));
    let (path, senv) = split_url(&url);
    let env = senv.map_or_else(|| saltenv(&call), str::to_owned);
    let rel = path.trim_start_matches(['|', '/']);
    let cache = cachedir(&call);
    for candidate in [
        cache.join("files").join(&env).join(rel),
        cache.join("localfiles").join(rel),
    ] {
        if candidate.exists() {
            return Ok(path_value(&candidate));
        }
    }
    Ok(Value::String(String::new()))
}

const LIST_MASTER_DOC: &str = "List the files of a saltenv of the master's fileserver, those
whose path starts with ``prefix`` when given.

CLI Example:

.. code-block:: bash

    salt '*' cp.list_master
";

async fn list_master(call: Call) -> Result<Value, ExecError> {
    let prefix = python::str(call.arg("prefix"));
    let list = files(&call)?
        .list_files(&saltenv(&call), &prefix)
        .await
        .map_err(failed)?;
    Ok(json!(list))
}

const LIST_MASTER_DIRS_DOC: &str = "List the directories of a saltenv of the master's
fileserver, those whose path starts with ``prefix`` when given.

CLI Example:

.. code-block:: bash

    salt '*' cp.list_master_dirs
";

async fn list_master_dirs(call: Call) -> Result<Value, ExecError> {
    let prefix = python::str(call.arg("prefix"));
    let list = files(&call)?
        .list_dirs(&saltenv(&call), &prefix)
        .await
        .map_err(failed)?;
    Ok(json!(list))
}

const LIST_STATES_DOC: &str = "List the SLS names of a saltenv of the master's fileserver
(``web/init.sls`` is ``web``, ``web/conf.sls`` is ``web.conf``).

CLI Example:

.. code-block:: bash

    salt '*' cp.list_states
";

/// The SLS names of a file list, sorted and without duplicates (Salt's `list_states`).
pub(crate) fn sls_names(files: &[String]) -> Vec<String> {
    let mut out: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let stem = f
                .strip_suffix("/init.sls")
                .or_else(|| f.strip_suffix(".sls"))?;
            Some(stem.replace('/', "."))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

async fn list_states(call: Call) -> Result<Value, ExecError> {
    let list = files(&call)?
        .list_files(&saltenv(&call), "")
        .await
        .map_err(failed)?;
    Ok(json!(sls_names(&list)))
}

const LIST_MINION_DOC: &str = "List the files the minion has cached: everything under
``<cachedir>/files/<saltenv>`` and ``<cachedir>/localfiles`` (when one of them is missing,
Salt lists its parent directory instead, and so does this).

CLI Example:

.. code-block:: bash

    salt '*' cp.list_minion
";

/// Every file under `dir` (or under its parent when it is not a directory), following links.
fn walk_files(dir: &Path, out: &mut std::collections::BTreeSet<String>) {
    let start = if dir.is_dir() {
        dir.to_owned()
    } else {
        dir.parent().map_or_else(|| dir.to_owned(), Path::to_owned)
    };
    let mut stack = vec![start];
    let mut depth_guard = 0usize;
    while let Some(d) = stack.pop() {
        depth_guard += 1;
        if depth_guard > 100_000 {
            break;
        }
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.is_file() {
                out.insert(p.display().to_string());
            }
        }
    }
}

async fn list_minion(call: Call) -> Result<Value, ExecError> {
    let cache = cachedir(&call);
    let env = saltenv(&call);
    let list = tokio::task::spawn_blocking(move || {
        let mut out = std::collections::BTreeSet::new();
        walk_files(&cache.join("files").join(env), &mut out);
        walk_files(&cache.join("localfiles"), &mut out);
        out
    })
    .await
    .map_err(|e| ExecError::execution(format!("listing the cache failed: {e}")))?;
    Ok(json!(list))
}

#[cfg(test)]
mod tests;
