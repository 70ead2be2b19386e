//! Salt's `pkgrepo` state module (`salt/states/pkgrepo.py`): `pkgrepo.managed` and
//! `pkgrepo.absent` over the execution functions `pkg.get_repo`, `pkg.mod_repo`,
//! `pkg.del_repo` and `pkg.list_repos`, with Salt's comments and changes.
//!
//! apt (`os_family: Debian`): a repository is its full `deb` line, `[signed-by=...]` and
//! `[arch=...]` options included; keys from `key_url`/`key_text`. As in Salt on Debian (not
//! Ubuntu), `enabled`/`disabled` are accepted and ignored.
//!
//! dnf/yum (`os_family: RedHat`): a repository is its id in a `.repo` file; `humanname` is
//! its `name`, `enabled`/`disabled` its `enabled`, every other argument (`baseurl`,
//! `mirrorlist`, `gpgcheck`, `gpgkey`, `comments`, ...) an option of it, `basedir` where the
//! files are. As in Salt, a `basedir` given is itself compared with the repository (so the
//! state reconfigures, without changes, each time), and `pkgrepo.absent` checks the removal
//! in the config's default directories.
//!
//! Keys from a keyserver (`keyid` + `keyserver`) are fetched by `pkg.mod_repo` (with gpg into
//! the line's `signed-by` keyring when `aptkey` is off); `pkgrepo.absent` with `keyid` removes
//! the key after the repository (`pkg.del_repo_key`).
//!
//! PPAs (`ppa: owner/name`, `name: ppa:owner/name`): on Debian, as Salt there, the definition
//! cannot be parsed. On Ubuntu the PPA is the line `deb http://ppa.launchpad.net/<owner>/
//! <name>/ubuntu <codename> main`; `pkg.mod_repo` adds it with `apt-add-repository` where
//! that is installed (it fetches the key; both need the network), else it answers that the
//! key lookup on Launchpad needs the network and what to give instead.
//!
//! Not done: `copr`; the Launchpad lookup itself.

use serde_json::{Map, Value, json};

use saltq_exec::{AptSourceEntry, Param, apt_expand_repo_def, rpm_combine_comments};
use saltq_semantics::python::{self, is_true, truthy};

use super::service::{Backend, Exec};
use super::{Ret, StateCall, StateError, StateFunction, state_handler};

/// The `pkgrepo` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "pkgrepo.managed",
        params: &[
            Param::req("name"),
            Param::opt("ppa", saltq_exec::Lit::None),
            Param::opt("copr", saltq_exec::Lit::None),
            Param::opt("aptkey", saltq_exec::Lit::Bool(true)),
        ],
        kwargs: true,
        handler: state_handler!(entry_managed),
    },
    StateFunction {
        name: "pkgrepo.absent",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(entry_absent),
    },
];

async fn entry_managed(call: StateCall) -> Result<Ret, StateError> {
    run_with(&Exec(call.ctx.clone()), "pkgrepo.managed", &call).await
}

async fn entry_absent(call: StateCall) -> Result<Ret, StateError> {
    run_with(&Exec(call.ctx.clone()), "pkgrepo.absent", &call).await
}

/// Runs the state function `fun` (`pkgrepo.managed`, ...) against this backend.
pub async fn run_with(b: &dyn Backend, fun: &str, call: &StateCall) -> Result<Ret, StateError> {
    Ok(match fun {
        "pkgrepo.managed" => managed(b, call).await,
        "pkgrepo.absent" => absent(b, call).await?,
        other => return Err(StateError(format!("no state function {other}"))),
    })
}

/// The `os_family` grain, or `Debian` for the OS names Salt counts there when the grain is
/// missing.
fn os_family(call: &StateCall) -> String {
    let grains = call.ctx.grains();
    if let Some(f) = grains.get("os_family").and_then(Value::as_str) {
        return f.to_owned();
    }
    match grains.get("os").and_then(Value::as_str) {
        Some("Debian" | "Ubuntu" | "Mint" | "Raspbian" | "Devuan") => "Debian".into(),
        Some(other) => other.to_owned(),
        None => String::new(),
    }
}

fn ret(name: &str, result: Option<bool>, comment: impl Into<String>) -> Ret {
    Ret {
        name: name.to_owned(),
        result,
        comment: comment.into(),
        ..Ret::default()
    }
}

/// Whether the repository found (`pre`, without `file`) already is what the state asks
/// (`want`, Salt's expanded definition): Salt's loop over the definition's keys, for the
/// `os_family` given.
fn configured(
    pre: &Map<String, Value>,
    want: &Map<String, Value>,
    family: &str,
    kwargs: &Map<String, Value>,
) -> bool {
    let debian = family == "Debian";
    let redhat = family == "RedHat";
    let sorted = |v: &Value| {
        let mut l: Vec<String> = v
            .as_array()
            .into_iter()
            .flatten()
            .map(python::str)
            .collect();
        l.sort();
        l
    };
    for (key, w) in want {
        let Some(p) = pre.get(key) else {
            // dnf counts a repository without `enabled` as enabled.
            if key == "enabled" && redhat && is_true(w) {
                continue;
            }
            return false;
        };
        let same = match key.as_str() {
            "comps" | "key_url" => sorted(w) == sorted(p),
            "line" if debian => {
                if want.get("disabled").is_some_and(truthy) {
                    true
                } else {
                    let words = |s: &str| {
                        let mut w: Vec<String> = s.split_whitespace().map(str::to_owned).collect();
                        if w.len() > 3 {
                            w[3..].sort();
                        }
                        w
                    };
                    let text = python::str(p);
                    let (body, comments) = text.split_once('#').unwrap_or((&text, ""));
                    let comments_ok = kwargs.get("comments").is_none_or(|c| {
                        let c = match c {
                            Value::Array(a) => {
                                a.iter().map(python::str).collect::<Vec<_>>().join(" ")
                            }
                            other => python::str(other),
                        };
                        c.trim() == comments.trim()
                    });
                    words(&python::str(w)) == words(body.trim()) && comments_ok
                }
            }
            "comments" if redhat => rpm_combine_comments(w) == rpm_combine_comments(p),
            "architectures" if truthy(w) => {
                let mut a = sorted(w);
                a.dedup();
                let mut b = sorted(p);
                b.dedup();
                a == b
            }
            // 1/0 against True/False on RedHat and Suse.
            _ if (redhat || family == "Suse") && (w.is_boolean() || p.is_boolean()) => {
                is_true(w) == is_true(p)
            }
            _ => python::str(w) == python::str(p),
        };
        if !same {
            return false;
        }
    }
    true
}

async fn managed(b: &dyn Backend, call: &StateCall) -> Ret {
    let name = call.name.clone();
    let mut r = ret(&name, None, "");
    if !b.has("pkg.get_repo") {
        r.result = Some(false);
        r.comment = "Repo management not implemented on this platform".into();
        return r;
    }
    let mut kwargs: Map<String, Value> = call
        .args
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "ppa" | "copr" | "aptkey"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let has = |k: &str| kwargs.contains_key(k);
    // Salt sets these and goes on: a later answer replaces them.
    if has("key_url") && (has("keyid") || has("keyserver")) {
        r.result = Some(false);
        r.comment = "You may not use both \"keyid\"/\"keyserver\" and \"key_url\" argument.".into();
    }
    if has("key_text") && (has("keyid") || has("keyserver")) {
        r.result = Some(false);
        r.comment =
            "You may not use both \"keyid\"/\"keyserver\" and \"key_text\" argument.".into();
    }
    if has("key_text") && has("key_url") {
        r.result = Some(false);
        r.comment = "You may not use both \"key_url\" and \"key_text\" argument.".into();
    }
    if has("repo") {
        r.result = Some(false);
        r.comment = "'repo' is not a supported argument for this state. The 'name' argument is probably what was intended.".into();
        return r;
    }
    // shift_remove keeps the order of the others: Salt writes a `.repo` file's new options
    // in the order given.
    let enabled = kwargs.shift_remove("enabled");
    let disabled = kwargs.shift_remove("disabled");
    if enabled.is_some() && disabled.is_some() {
        r.result = Some(false);
        r.comment = "Only one of enabled/disabled is allowed".into();
        return r;
    }
    let enabled = if enabled.is_none() && disabled.is_none() {
        Some(json!(true))
    } else {
        enabled
    };
    let allow_insecure = kwargs
        .shift_remove("allow_insecure_key")
        .is_none_or(|v| truthy(&v));
    let insecure = kwargs
        .get("key_url")
        .is_some_and(|u| python::str(u).trim().starts_with("http:"));
    if insecure && !allow_insecure {
        r.result = Some(false);
        r.comment = "Cannot have 'key_url' using http with 'allow_insecure_key' set to True".into();
        return r;
    }
    kwargs.insert("name".into(), json!(name));
    let family = os_family(call);
    let debian = family == "Debian";
    if family == "RedHat" || family == "Suse" {
        if let Some(h) = kwargs.shift_remove("humanname") {
            kwargs.insert("name".into(), h);
        }
        let on = match (&disabled, &enabled) {
            (Some(d), _) => !is_true(d),
            (None, Some(e)) => is_true(e),
            (None, None) => true,
        };
        kwargs.insert("enabled".into(), json!(on));
    }
    let aptkey = call.arg("aptkey").is_none_or(truthy)
        && std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|d| d.join("apt-key").is_file())
        });
    // On Ubuntu, `ppa` names the repository and `disabled` is passed on.
    let mut repo = name.clone();
    if ppa_os(call, &["Ubuntu", "Mint"]) {
        if let Some(ppa) = call.arg("ppa").filter(|v| !v.is_null()) {
            repo = format!("ppa:{}", python::str(ppa));
        }
        let off = match &enabled {
            Some(e) => !is_true(e),
            None => disabled.as_ref().is_some_and(is_true),
        };
        kwargs.insert("disabled".into(), json!(off));
    }
    let mut repo_kw = kwargs.clone();
    repo_kw.shift_remove("name");
    let pre = match b
        .call("pkg.get_repo", vec![json!(repo)], repo_kw.clone())
        .await
    {
        Ok(v) => v.as_object().cloned().unwrap_or_default(),
        Err(e) => {
            r.result = Some(false);
            r.comment = format!("Failed to examine repo '{name}': {e}");
            return r;
        }
    };
    let mut want = if debian {
        let (line, kw) = expand_ppa(call, &repo, &kwargs);
        apt_expand_repo_def(&line, &kw)
    } else {
        kwargs.clone()
    };
    if !pre.is_empty() {
        let mut pre = pre.clone();
        pre.shift_remove("file");
        want.shift_remove("file");
        if configured(&pre, &want, &family, &kwargs) {
            r.result = Some(true);
            r.comment = format!("Package repo '{name}' already configured");
            return r;
        }
    }
    if call.test {
        r.comment = format!(
            "Package repo '{name}' would be configured. This may cause pkg states to behave differently than stated if this action is repeated without test=True, due to the differences in the configured repositories."
        );
        if pre.is_empty() {
            r.changes.insert("repo".into(), json!(name));
        } else {
            for (k, w) in &want {
                let old = pre.get(k).cloned().unwrap_or(Value::Null);
                if *w != old {
                    r.changes.insert(k.clone(), json!({"new": w, "old": old}));
                }
            }
        }
        return r;
    }
    if kwargs.get("clean_file").is_some_and(truthy)
        && let Some(file) = kwargs.get("file").map(python::str)
        && let Err(e) = std::fs::write(&file, "")
    {
        r.result = Some(false);
        r.comment = format!("Failed to configure repo '{name}': emptying {file}: {e}");
        return r;
    }
    let mut mod_kw = repo_kw.clone();
    if debian {
        mod_kw.insert("saltenv".into(), json!(call.saltenv));
        mod_kw.insert("aptkey".into(), json!(aptkey));
    } else {
        // yumpkg's `name` is the repository's human name.
        mod_kw = kwargs.clone();
    }
    if let Err(e) = b.call("pkg.mod_repo", vec![json!(repo)], mod_kw).await {
        r.result = Some(false);
        r.comment = format!("Failed to configure repo '{name}': {e}");
        return r;
    }
    match b.call("pkg.get_repo", vec![json!(repo)], repo_kw).await {
        Ok(post) => {
            if pre.is_empty() {
                r.changes.insert("repo".into(), json!(repo));
            } else {
                for k in want.keys() {
                    let (new, old) = (post.get(k), pre.get(k));
                    if new != old {
                        r.changes.insert(
                            k.clone(),
                            json!({"new": new.cloned().unwrap_or(Value::Null), "old": old.cloned().unwrap_or(Value::Null)}),
                        );
                    }
                }
            }
            r.result = Some(true);
            r.comment = format!("Configured package repo '{name}'");
        }
        Err(e) => {
            r.result = Some(false);
            r.comment = format!("Failed to confirm config of repo '{name}': {e}");
        }
    }
    r
}

/// Whether the `os` grain is one of `names` (Salt's PPA handling is Ubuntu's).
fn ppa_os(call: &StateCall, names: &[&str]) -> bool {
    call.ctx
        .grains()
        .get("os")
        .and_then(Value::as_str)
        .is_some_and(|os| names.contains(&os))
}

/// Salt's `_expand_repo_def` for a `ppa:owner/name` on Ubuntu: the PPA's apt line, and its
/// default file `/etc/apt/sources.list.d/<owner>-<name>-<codename>.list`; any other
/// definition as it is.
fn expand_ppa(
    call: &StateCall,
    repo: &str,
    kwargs: &Map<String, Value>,
) -> (String, Map<String, Value>) {
    let mut kw = kwargs.clone();
    let Some((owner, name)) = repo
        .strip_prefix("ppa:")
        .filter(|_| ppa_os(call, &["Ubuntu", "Mint", "neon"]))
        .and_then(|p| p.split_once('/'))
    else {
        return (repo.to_owned(), kw);
    };
    let dist = call
        .ctx
        .grains()
        .get("oscodename")
        .map(python::str)
        .unwrap_or_default();
    let line = match kwargs.get("ppa_auth") {
        Some(a) => format!(
            "deb https://{}@private-ppa.launchpad.net/{owner}/{name}/ubuntu {dist} main",
            python::str(a)
        ),
        None => format!("deb http://ppa.launchpad.net/{owner}/{name}/ubuntu {dist} main"),
    };
    if !kw.contains_key("file") {
        kw.insert(
            "file".into(),
            json!(format!(
                "/etc/apt/sources.list.d/{owner}-{name}-{dist}.list"
            )),
        );
    }
    (line, kw)
}

/// Salt's `salt.utils.pkg.deb.strip_uri`: an http(s)/ftp URI's trailing slashes dropped.
fn strip_uri(repo: &str) -> String {
    repo.split_whitespace()
        .map(|w| {
            if ["http://", "https://", "ftp://"]
                .iter()
                .any(|p| w.starts_with(p))
            {
                w.trim_end_matches('/')
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

async fn absent(b: &dyn Backend, call: &StateCall) -> Result<Ret, StateError> {
    let mut r = ret(&call.name, None, "");
    let mut kwargs: Map<String, Value> = call.args.clone();
    // On Ubuntu `ppa` names the repository (the answer keeps the state's name).
    let name = match kwargs.get("ppa").map(python::str) {
        Some(ppa) if ppa_os(call, &["Ubuntu", "Mint"]) => {
            kwargs.shift_remove("ppa");
            if ppa.starts_with("ppa:") {
                ppa
            } else {
                format!("ppa:{ppa}")
            }
        }
        _ => call.name.clone(),
    };
    let remove_key = ["keyid", "keyid_ppa"]
        .iter()
        .any(|k| call.arg(k).is_some_and(|v| !v.is_null()));
    let family = os_family(call);
    // yumpkg has no `del_repo_key`.
    if remove_key && (!b.has("pkg.del_repo_key") || family != "Debian") {
        r.result = Some(false);
        r.comment = "Repo key management is not implemented for this platform".into();
        return Ok(r);
    }
    let debian = family == "Debian";
    let stripname = if debian {
        strip_uri(&name)
    } else {
        name.clone()
    };
    let mut repo = match b
        .call("pkg.get_repo", vec![json!(stripname)], kwargs.clone())
        .await
    {
        Ok(v) => v.as_object().cloned().unwrap_or_default(),
        Err(e) => {
            r.result = Some(false);
            r.comment = format!("Failed to configure repo '{name}': {e}");
            return Ok(r);
        }
    };
    if debian && !repo.is_empty() {
        let mut want = AptSourceEntry::parse(&stripname, "").architectures;
        want.sort();
        want.dedup();
        let mut have: Vec<String> = repo
            .get("architectures")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(python::str)
            .collect();
        have.sort();
        have.dedup();
        if want != have {
            repo = Map::new();
        }
    }
    if repo.is_empty() {
        r.result = Some(true);
        r.comment = format!("Package repo {name} is absent");
        return Ok(r);
    }
    if call.test {
        r.comment = format!(
            "Package repo '{name}' will be removed. This may cause pkg states to behave differently than stated if this action is repeated without test=True, due to the differences in the configured repositories."
        );
        return Ok(r);
    }
    if let Err(e) = b
        .call("pkg.del_repo", vec![json!(stripname)], kwargs.clone())
        .await
    {
        r.result = Some(false);
        r.comment = e;
        return Ok(r);
    }
    // Salt lists without the state's arguments (a `basedir` given is not looked at), and an
    // error here escapes the state.
    let repos = b
        .call("pkg.list_repos", vec![], Map::new())
        .await
        .map_err(StateError)?;
    if repos.get(&stripname).is_none() {
        r.changes.insert("repo".into(), json!(name));
        r.comment = format!("Removed repo {name}");
        r.result = Some(true);
        if remove_key {
            match b
                .call("pkg.del_repo_key", vec![json!(stripname)], kwargs)
                .await
            {
                Ok(keyid) => {
                    r.comment
                        .push_str(&format!(", and keyid {}", python::str(&keyid)));
                    r.changes.insert("keyid".into(), keyid);
                }
                Err(e) => {
                    r.result = Some(false);
                    r.comment
                        .push_str(&format!(", but failed to remove key: {e}"));
                }
            }
        }
    } else {
        r.result = Some(false);
        r.comment = format!("Failed to remove repo {name}");
    }
    Ok(r)
}
