//! Salt's `ssh_auth` state module (`salt/states/ssh_auth.py`): `ssh_auth.present`,
//! `ssh_auth.absent` and `ssh_auth.manage` for a user's `authorized_keys`, a key given as
//! `name` (`[options] [enc] key [comment]`, split by [`split_key`]) or the keys of a
//! `source` file from the fileserver, through the execution functions `ssh.*`, with Salt's
//! comments and changes.

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param, no_keys_error, parse_auth_keys};
use saltq_semantics::python;

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

const PARAMS: &[Param] = &[
    Param::req("name"),
    Param::req("user"),
    Param::opt("enc", Lit::Str("ssh-rsa")),
    Param::opt("comment", Lit::Str("")),
    Param::opt("source", Lit::Str("")),
    Param::opt("options", Lit::None),
    Param::opt("config", Lit::Str(".ssh/authorized_keys")),
    Param::opt("fingerprint_hash_type", Lit::None),
];

const MANAGE: &[Param] = &[
    Param::req("name"),
    Param::req("ssh_keys"),
    Param::req("user"),
    Param::opt("enc", Lit::Str("ssh-rsa")),
    Param::opt("comment", Lit::Str("")),
    Param::opt("source", Lit::Str("")),
    Param::opt("options", Lit::None),
    Param::opt("config", Lit::Str(".ssh/authorized_keys")),
    Param::opt("fingerprint_hash_type", Lit::None),
];

/// The `ssh_auth` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "ssh_auth.present",
        params: PARAMS,
        kwargs: true,
        handler: state_handler!(present),
    },
    StateFunction {
        name: "ssh_auth.absent",
        params: PARAMS,
        kwargs: false,
        handler: state_handler!(absent),
    },
    StateFunction {
        name: "ssh_auth.manage",
        params: MANAGE,
        kwargs: true,
        handler: state_handler!(manage),
    },
];

/// A key as the state reads it from `name`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Key {
    /// The base64 key.
    pub key: String,
    /// The key type.
    pub enc: String,
    /// The comment.
    pub comment: String,
    /// The options, `None` when `name` had none (the state's `options` stand).
    pub options: Option<Vec<String>>,
}

/// Salt's reading of `name`: `{options} {enc} {key} {comment}` when it holds a key type,
/// else `{key} [comment]`. `maxsplit` is Salt's: the present/absent states keep the rest of
/// the comment (`split(None, 2)`), the test-mode helpers only a one-word comment.
pub fn split_key(name: &str, enc: &str, comment: &str, whole_comment: bool) -> Key {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r"^(.*?)\s?((?:sk-)?(?:ssh\-|ecds)[\w-]+\s.+)$").expect("valid regex")
    });
    let mut out = Key {
        key: name.to_owned(),
        enc: enc.to_owned(),
        comment: comment.to_owned(),
        options: None,
    };
    match re.captures(name) {
        None => {
            let parts: Vec<&str> = if whole_comment {
                split_max(name, 1)
            } else {
                name.split_whitespace().collect()
            };
            if let Some(k) = parts.first() {
                out.key = (*k).to_owned();
            }
            if parts.len() == 2 {
                out.comment = parts[1].to_owned();
            }
        }
        Some(caps) => {
            let opts = caps.get(1).map_or("", |m| m.as_str());
            if !opts.is_empty() {
                out.options = Some(opts.split(',').map(str::to_owned).collect());
            }
            let comps: Vec<&str> = if whole_comment {
                split_max(&caps[2], 2)
            } else {
                caps[2].split_whitespace().collect()
            };
            out.enc = comps[0].to_owned();
            out.key = comps.get(1).copied().unwrap_or("").to_owned();
            if comps.len() == 3 {
                out.comment = comps[2].to_owned();
            }
        }
    }
    out
}

/// Python's `s.split(None, maxsplit)`.
fn split_max(s: &str, maxsplit: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        if out.len() == maxsplit {
            out.push(rest);
            break;
        }
        match rest.find(char::is_whitespace) {
            Some(i) => {
                out.push(&rest[..i]);
                rest = rest[i..].trim_start();
            }
            None => {
                out.push(rest);
                break;
            }
        }
    }
    out
}

/// The state's arguments.
struct Args {
    user: Value,
    enc: String,
    comment: String,
    source: String,
    options: Vec<String>,
    config: Value,
    fp: Value,
}

fn args(call: &StateCall, params: &[Param]) -> Args {
    let p = |k: &str| call.param(params, k);
    Args {
        user: p("user"),
        enc: python::str(&p("enc")),
        comment: python::str(&p("comment")),
        source: python::str(&p("source")),
        options: match p("options") {
            Value::Array(items) => items.iter().map(python::str).collect(),
            Value::Null => Vec::new(),
            other => vec![python::str(&other)],
        },
        config: p("config"),
        fp: p("fingerprint_hash_type"),
    }
}

impl Args {
    fn kw(&self) -> Map<String, Value> {
        let mut kw = Map::new();
        kw.insert("config".into(), self.config.clone());
        kw.insert("fingerprint_hash_type".into(), self.fp.clone());
        kw
    }
}

/// `ssh.check_key` for one key.
async fn check_key(call: &StateCall, a: &Args, k: &Key) -> Result<String, StateError> {
    let v = call
        .salt(
            "ssh.check_key",
            vec![
                a.user.clone(),
                json!(k.key),
                json!(k.enc),
                json!(k.comment),
                json!(k.options.clone().unwrap_or_else(|| a.options.clone())),
            ],
            a.kw(),
        )
        .await?;
    Ok(python::str(&v))
}

/// What `ssh.check_key_file` answers for `source`, and the error Salt keeps in its context
/// when the file holds no key.
async fn check_file(
    call: &StateCall,
    a: &Args,
) -> Result<(Map<String, Value>, Option<String>), StateError> {
    let mut kw = a.kw();
    kw.insert("saltenv".into(), json!(call.saltenv));
    let keys = call
        .salt(
            "ssh.check_key_file",
            vec![a.user.clone(), json!(a.source)],
            kw,
        )
        .await?;
    let keys = keys.as_object().cloned().unwrap_or_default();
    let mut err = None;
    if keys.is_empty() {
        let mut kw = Map::new();
        kw.insert("saltenv".into(), json!(call.saltenv));
        let text = call
            .salt("cp.get_file_str", vec![json!(a.source)], kw)
            .await?;
        if let Some(text) = text.as_str() {
            let fp = a.fp.as_str().map(str::to_owned);
            if parse_auth_keys(text, fp.as_deref())
                .map_err(StateError)?
                .is_empty()
            {
                err = Some(no_keys_error(&a.source));
            }
        }
    }
    Ok((keys, err))
}

async fn present_test(
    call: &StateCall,
    a: &Args,
    k: &Key,
) -> Result<(Option<bool>, String), StateError> {
    if !a.source.is_empty() {
        let (keys, err) = check_file(call, a).await?;
        let comment: String = keys
            .iter()
            .filter(|(_, s)| s.as_str() != Some("exists"))
            .map(|(key, s)| format!("Set to {}: {key}\n", python::str(s)))
            .collect();
        if !comment.is_empty() {
            return Ok((None, comment));
        }
        return Ok(match err {
            Some(e) => (Some(false), e),
            None => (
                Some(true),
                format!("All host keys in file {} are already present", a.source),
            ),
        });
    }
    let k = split_key(&k.key, &k.enc, &k.comment, false).merge(k);
    let user = python::str(&a.user);
    Ok(match check_key(call, a, &k).await?.as_str() {
        "update" => (
            None,
            format!("Key {} for user {user} is set to be updated", k.key),
        ),
        "add" => (
            None,
            format!("Key {} for user {user} is set to be added", k.key),
        ),
        _ => (
            Some(true),
            format!(
                "The authorized host key {} is already present for user {user}",
                k.key
            ),
        ),
    })
}

async fn absent_test(
    call: &StateCall,
    a: &Args,
    k: &Key,
) -> Result<(Option<bool>, String), StateError> {
    if !a.source.is_empty() {
        let (keys, err) = check_file(call, a).await?;
        let comment: String = keys
            .iter()
            .filter(|(_, s)| s.as_str() != Some("add"))
            .map(|(key, _)| format!("Set to remove: {key}\n"))
            .collect();
        if !comment.is_empty() {
            return Ok((None, comment));
        }
        return Ok(match err {
            Some(e) => (Some(false), e),
            None => (
                Some(true),
                format!("All host keys in file {} are already absent", a.source),
            ),
        });
    }
    let k = split_key(&k.key, &k.enc, &k.comment, false).merge(k);
    let user = python::str(&a.user);
    Ok(match check_key(call, a, &k).await?.as_str() {
        "update" | "exists" => (
            None,
            format!("Key {} for user {user} is set for removal", k.key),
        ),
        _ => (Some(true), "Key is already absent".into()),
    })
}

impl Key {
    /// This key's parts, with the options of `earlier` where this one has none.
    fn merge(mut self, earlier: &Key) -> Key {
        if self.options.is_none() {
            self.options = earlier.options.clone();
        }
        self
    }
}

async fn present(call: StateCall) -> Result<Ret, StateError> {
    let a = args(&call, PARAMS);
    present_with(&call, &a, &call.name).await
}

async fn present_with(call: &StateCall, a: &Args, name_in: &str) -> Result<Ret, StateError> {
    let user = python::str(&a.user);
    let k = if a.source.is_empty() {
        split_key(name_in, &a.enc, &a.comment, true)
    } else {
        Key {
            key: name_in.to_owned(),
            enc: a.enc.clone(),
            comment: a.comment.clone(),
            options: None,
        }
    };
    let name = k.key.clone();
    let mut ret = Ret::new(name_in);
    if call.test {
        let (result, comment) = present_test(call, a, &k).await?;
        ret.result = result;
        ret.comment = comment;
        return Ok(ret);
    }
    let options = json!(k.options.clone().unwrap_or_else(|| a.options.clone()));
    // Salt's `__context__["ssh_auth.error"]`: set when a key file held no key.
    let mut no_keys = false;
    let data = if a.source.is_empty() {
        let mut kw = a.kw();
        kw.insert("enc".into(), json!(k.enc));
        kw.insert("comment".into(), json!(k.comment));
        kw.insert("options".into(), options);
        call.salt("ssh.set_auth_key", vec![a.user.clone(), json!(k.key)], kw)
            .await?
    } else {
        let mut skw = Map::new();
        skw.insert("saltenv".into(), json!(call.saltenv));
        let text = call
            .salt("cp.get_file_str", vec![json!(a.source)], skw.clone())
            .await?;
        match text.as_str() {
            None => json!("no key"),
            Some(text) => {
                let mut data = json!("no change");
                let line_re = regex::Regex::new(r"^(sk-)?(ssh\-|ecds).*").expect("valid regex");
                for line in text.trim_end().split('\n') {
                    if line_re.is_match(line) {
                        let parts: Vec<&str> = line.split(' ').collect();
                        let mut kw = a.kw();
                        kw.insert("enc".into(), json!(parts[0]));
                        kw.insert("comment".into(), json!(parts.get(2).copied().unwrap_or("")));
                        kw.insert("options".into(), options.clone());
                        data = call
                            .salt(
                                "ssh.set_auth_key",
                                vec![a.user.clone(), json!(parts.get(1).copied().unwrap_or(""))],
                                kw,
                            )
                            .await?;
                    } else {
                        let mut kw = a.kw();
                        kw.insert("saltenv".into(), json!(call.saltenv));
                        data = call
                            .salt(
                                "ssh.set_auth_key_from_file",
                                vec![a.user.clone(), json!(a.source)],
                                kw,
                            )
                            .await?;
                        no_keys |= data == json!("fail");
                    }
                }
                data
            }
        }
    };
    match data.as_str().unwrap_or("") {
        "replace" => {
            ret.changes.insert(name.clone(), json!("Updated"));
            ret.comment = format!("The authorized host key {name} for user {user} was updated");
        }
        "no change" => {
            ret.comment =
                format!("The authorized host key {name} is already present for user {user}");
        }
        "new" => {
            ret.changes.insert(name.clone(), json!("New"));
            ret.comment = format!("The authorized host key {name} for user {user} was added");
        }
        "no key" => {
            ret.result = Some(false);
            ret.comment = format!(
                "Failed to add the ssh key. Source file {} is missing",
                a.source
            );
        }
        "fail" => {
            ret.result = Some(false);
            ret.comment = if !no_keys {
                "Failed to add the ssh key. Is the home directory available, and/or does the key file exist?".into()
            } else {
                no_keys_error(&a.source)
            };
        }
        "invalid" | "Invalid public key" => {
            ret.result = Some(false);
            ret.comment = "Invalid public ssh key, most likely has spaces or invalid syntax".into();
        }
        _ => {}
    }
    Ok(ret)
}

async fn absent(call: StateCall) -> Result<Ret, StateError> {
    let a = args(&call, PARAMS);
    absent_with(&call, &a, &call.name).await
}

async fn absent_with(call: &StateCall, a: &Args, name_in: &str) -> Result<Ret, StateError> {
    let mut ret = Ret::new(name_in);
    if call.test {
        let k = Key {
            key: name_in.to_owned(),
            enc: a.enc.clone(),
            comment: a.comment.clone(),
            options: None,
        };
        let (result, comment) = absent_test(call, a, &k).await?;
        ret.result = result;
        ret.comment = comment;
        return Ok(ret);
    }
    let mut name = name_in.to_owned();
    if a.source.is_empty() {
        let k = split_key(name_in, &a.enc, &a.comment, false);
        name = k.key.clone();
        let v = call
            .salt(
                "ssh.rm_auth_key",
                vec![a.user.clone(), json!(k.key)],
                a.kw(),
            )
            .await?;
        ret.comment = python::str(&v);
    } else {
        let mut skw = Map::new();
        skw.insert("saltenv".into(), json!(call.saltenv));
        let text = call
            .salt("cp.get_file_str", vec![json!(a.source)], skw)
            .await?;
        let text = python::str(&text);
        let line_re = regex::Regex::new(r"^(sk-)?(ssh\-|ecds).*").expect("valid regex");
        for line in text.trim_end().split('\n') {
            let v = if line_re.is_match(line) {
                let parts: Vec<&str> = line.split(' ').collect();
                call.salt(
                    "ssh.rm_auth_key",
                    vec![a.user.clone(), json!(parts.get(1).copied().unwrap_or(""))],
                    a.kw(),
                )
                .await?
            } else {
                let mut kw = a.kw();
                kw.insert("saltenv".into(), json!(call.saltenv));
                call.salt(
                    "ssh.rm_auth_key_from_file",
                    vec![a.user.clone(), json!(a.source)],
                    kw,
                )
                .await?
            };
            ret.comment = python::str(&v);
        }
    }
    if ret.comment == "User authorized keys file not present" {
        ret.result = Some(false);
    } else if ret.comment == "Key removed" {
        ret.changes.insert(name, json!("Removed"));
    }
    Ok(ret)
}

async fn manage(call: StateCall) -> Result<Ret, StateError> {
    let a = args(&call, MANAGE);
    let keys: Vec<String> = match call.param(MANAGE, "ssh_keys") {
        Value::Array(items) => items.iter().map(python::str).collect(),
        other => vec![python::str(&other)],
    };
    let mut ret = Ret::new("");
    let potential: Vec<&str> = keys.iter().flat_map(|k| k.split(' ')).collect();
    let mut kw = a.kw();
    kw.insert("user".into(), a.user.clone());
    let existing = call.salt("ssh.auth_keys", vec![], kw).await?;
    let mut remove: Vec<String> = existing
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k.clone())
        .filter(|k| !potential.contains(&k.as_str()))
        .collect();
    remove.sort();
    for key in remove {
        if call.test {
            ret.comment = format!("{key} Key set for removal");
            ret.result = None;
        } else {
            let r = absent_with(&call, &a, &key).await?;
            ret.changes.insert(key, json!(r.comment));
        }
    }
    for key in &keys {
        let r = present_with(&call, &a, key).await?;
        if r.changes.is_empty() {
            ret.comment = format!("{}\n{}", ret.comment, r.comment).trim().to_owned();
        } else {
            ret.changes.extend(r.changes);
        }
        match r.result {
            None => ret.result = None,
            Some(false) => ret.result = Some(false),
            Some(true) => {}
        }
    }
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_as_salt_splits_them() {
        let k = split_key(
            "no-pty,from=\"x\" ssh-ed25519 AAAA me@host two",
            "ssh-rsa",
            "",
            true,
        );
        assert_eq!(
            k,
            Key {
                key: "AAAA".into(),
                enc: "ssh-ed25519".into(),
                comment: "me@host two".into(),
                options: Some(vec!["no-pty".into(), "from=\"x\"".into()]),
            }
        );
        let k = split_key("ssh-ed25519 AAAA me@host two", "ssh-rsa", "", false);
        assert_eq!((k.key.as_str(), k.comment.as_str()), ("AAAA", ""));
        let k = split_key("AAAA comment here", "ssh-rsa", "c", true);
        assert_eq!(
            (k.key.as_str(), k.enc.as_str(), k.comment.as_str()),
            ("AAAA", "ssh-rsa", "comment here")
        );
        let k = split_key("AAAA", "ssh-dss", "c", true);
        assert_eq!(
            (k.key.as_str(), k.enc.as_str(), k.comment.as_str()),
            ("AAAA", "ssh-dss", "c")
        );
        assert_eq!(split_max("  a  b c ", 1), ["a", "b c "]);
    }
}
