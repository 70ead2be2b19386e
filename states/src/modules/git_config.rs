//! Salt's `git.config_set` and `git.config_unset` states (`salt/states/git.py`) with the
//! `git.config_get`, `config_get_regexp`, `config_set` and `config_unset` execution functions
//! they call (`salt/modules/git.py`): `git config --local` in `repo` (or `--global` with
//! `global: True`), run as `user` when one is named.

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param};
use saltq_semantics::python;

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

/// The functions of this file (the rest of the `git` state module is in `git.rs`).
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "git.config_set",
        params: &[
            Param::req("name"),
            Param::opt("value", Lit::None),
            Param::opt("multivar", Lit::None),
            Param::opt("repo", Lit::None),
            Param::opt("user", Lit::None),
            Param::opt("password", Lit::None),
            Param::opt("output_encoding", Lit::None),
        ],
        kwargs: true,
        handler: state_handler!(config_set),
    },
    StateFunction {
        name: "git.config_unset",
        params: &[
            Param::req("name"),
            Param::opt("value_regex", Lit::None),
            Param::opt("repo", Lit::None),
            Param::opt("user", Lit::None),
            Param::opt("password", Lit::None),
            Param::opt("output_encoding", Lit::None),
        ],
        kwargs: true,
        handler: state_handler!(config_unset),
    },
];

/// Where `git config` works: a repository (`--local`) or the user's global file.
struct Git {
    repo: Option<String>,
    user: Option<String>,
    global: bool,
}

impl Git {
    /// `git config <args>` with the scope option first: (exit code, stdout, stderr).
    async fn config(&self, args: &[&str]) -> Result<(i32, String, String), StateError> {
        let mut argv: Vec<String> = Vec::new();
        if let Some(u) = &self.user {
            let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
                .ok()
                .flatten()
                .map(|u| u.name);
            if me.as_deref() != Some(u.as_str()) {
                argv.extend(["runuser", "-u", u, "--"].map(String::from));
            }
        }
        argv.extend(["git", "config"].map(String::from));
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        if let Some(r) = &self.repo {
            cmd.current_dir(r);
        }
        if let Some(u) = &self.user
            && let Ok(Some(pw)) = nix::unistd::User::from_name(u)
        {
            cmd.env("HOME", pw.dir);
        }
        let out = cmd.output().await.map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StateError(format!("{}: command not found", argv[0])),
            _ => StateError(format!("failed to run git config in {:?}: {e}", self.repo)),
        })?;
        Ok((
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ))
    }

    fn scope(&self) -> &'static str {
        if self.global { "--global" } else { "--local" }
    }

    /// `git.config_get(all=True)`: the values, `None` when the key is not set.
    async fn get_all(&self, key: &str) -> Result<Option<Vec<String>>, StateError> {
        let (code, out, err) = self.config(&[self.scope(), "--get-all", key]).await?;
        match code {
            0 => Ok(Some(out.lines().map(str::to_owned).collect())),
            1 => Ok(None),
            _ => Err(StateError(err)),
        }
    }

    /// `git.config_get_regexp`: key to its values matching.
    async fn get_regexp(
        &self,
        key: &str,
        value_regex: Option<&str>,
    ) -> Result<Map<String, Value>, StateError> {
        let mut args = vec![self.scope(), "--get-regexp", key];
        if let Some(v) = value_regex {
            args.push(v);
        }
        let (code, out, _) = self.config(&args).await?;
        let mut ret = Map::new();
        if code != 0 {
            return Ok(ret);
        }
        for line in out.lines() {
            let mut parts = line.trim_start().splitn(2, char::is_whitespace);
            let (Some(k), Some(v)) = (parts.next(), parts.next()) else {
                continue;
            };
            let v = v.trim_start();
            if let Value::Array(a) = ret
                .entry(k.to_owned())
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                a.push(json!(v));
            }
        }
        Ok(ret)
    }
}

/// Salt's `clean_kwargs` then `invalid_kwargs`: the keyword arguments no one takes, or none.
fn invalid_kwargs(call: &StateCall, params: &[&str]) -> Option<String> {
    let bad: Vec<String> = call
        .args
        .iter()
        .filter(|(k, _)| {
            !k.starts_with("__") && !params.contains(&k.as_str()) && *k != "global" && *k != "all"
        })
        .map(|(k, v)| format!("{k}={}", python::str(v)))
        .collect();
    (!bad.is_empty()).then(|| {
        format!(
            "The following keyword arguments are not valid: {}",
            bad.join(", ")
        )
    })
}

fn fail(mut ret: Ret, comment: impl Into<String>) -> Ret {
    ret.result = Some(false);
    ret.comment = comment.into();
    ret
}

fn git_for(call: &StateCall) -> Git {
    Git {
        repo: call.arg("repo").map(python::str),
        user: call.arg("user").map(python::str).filter(|u| !u.is_empty()),
        global: call.arg("global").is_some_and(python::truthy),
    }
}

fn list(v: Option<&[String]>) -> Value {
    v.map_or(Value::Null, |v| json!(v))
}

async fn config_set(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let ret = Ret::new(&name);
    let value = call.arg("value");
    let multivar = call.arg("multivar");
    if value.is_some() && multivar.is_some() {
        return Ok(fail(ret, "Only one of 'value' and 'multivar' is permitted"));
    }
    if let Some(msg) = invalid_kwargs(
        &call,
        &[
            "value",
            "multivar",
            "repo",
            "user",
            "password",
            "output_encoding",
        ],
    ) {
        return Ok(fail(ret, msg));
    }
    let git = git_for(&call);
    if !git.global && git.repo.is_none() {
        return Ok(fail(
            ret,
            "Non-global config options require the 'repo' argument to be set",
        ));
    }
    let (desired, shown): (Vec<String>, String) = match (value, multivar) {
        (Some(v), _) => {
            let v = python::str(v);
            (vec![v.clone()], format!("'{v}'"))
        }
        (None, Some(Value::Array(items))) => {
            let d: Vec<String> = items.iter().map(python::str).collect();
            let shown = python::repr(&json!(d));
            (d, shown)
        }
        (None, Some(other)) => {
            let d: Vec<String> = python::str(other).split(',').map(str::to_owned).collect();
            let shown = python::repr(&json!(d));
            (d, shown)
        }
        // Salt fails here with an unbound `desired`; say what is missing instead.
        (None, None) => return Ok(fail(ret, "One of 'value' and 'multivar' is required")),
    };
    let global = if git.global { "Global key " } else { "" };
    let pre = git.get_all(&name).await?;
    let mut ret = ret;
    if pre.as_deref() == Some(desired.as_slice()) {
        ret.comment = format!("{global}'{name}' is already set to {shown}");
        return Ok(ret);
    }
    let verb = if pre.is_none() { "added as" } else { "set to" };
    if call.test {
        ret.changes = Map::from_iter([
            ("old".to_owned(), list(pre.as_deref())),
            ("new".to_owned(), json!(desired)),
        ]);
        ret.result = None;
        ret.comment = format!("{global}'{name}' would be {verb} {shown}");
        return Ok(ret);
    }
    let lower = if git.global { "global key " } else { "" };
    for (i, v) in desired.iter().enumerate() {
        let mut args = Vec::new();
        if git.global {
            args.push("--global");
        }
        args.push(if i == 0 { "--replace-all" } else { "--add" });
        args.extend([name.as_str(), v.as_str()]);
        let (code, _, err) = git.config(&args).await?;
        if code != 0 {
            return Ok(fail(
                ret,
                format!("Failed to set {lower}'{name}' to {shown}: {err}"),
            ));
        }
    }
    let post = git.get_all(&name).await?;
    if pre != post {
        ret.changes.insert(
            name.clone(),
            json!({"old": list(pre.as_deref()), "new": list(post.as_deref())}),
        );
    }
    if post.as_deref() != Some(desired.as_slice()) {
        return Ok(fail(
            ret,
            format!("Failed to set {lower}'{name}' to {shown}"),
        ));
    }
    ret.comment = format!("{global}'{name}' was {verb} {shown}");
    Ok(ret)
}

fn values(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(python::str)
        .collect()
}

async fn config_unset(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    ret.comment = "No matching keys are set".into();
    if let Some(msg) = invalid_kwargs(
        &call,
        &["value_regex", "repo", "user", "password", "output_encoding"],
    ) {
        return Ok(fail(ret, msg));
    }
    let git = git_for(&call);
    let all = call.arg("all").is_some_and(python::truthy);
    if !git.global && git.repo.is_none() {
        return Ok(fail(
            ret,
            "Non-global config options require the 'repo' argument to be set",
        ));
    }
    let value_regex = call.arg("value_regex").map(python::str);
    let key = format!("^{}$", name.trim_start_matches('^').trim_end_matches('$'));
    let pre_matches = git.get_regexp(&key, value_regex.as_deref()).await?;
    if pre_matches.is_empty() {
        return Ok(ret);
    }
    if !all {
        let greedy: Vec<String> = pre_matches
            .iter()
            .filter(|(_, v)| values(v).len() > 1)
            .map(|(k, v)| format!("{k} ({})", values(v).join(", ")))
            .collect();
        if !greedy.is_empty() {
            let msg = if value_regex.is_some() {
                "Multiple values are matched by value_regex for the following keys (set 'all' \
                 to True to force removal): "
            } else {
                "Multivar(s) matched by the key expression (set 'all' to True to force \
                 removal): "
            };
            return Ok(fail(ret, format!("{msg}{}", greedy.join("; "))));
        }
    }
    if call.test {
        ret.changes = pre_matches.clone();
        ret.result = None;
        ret.comment = format!("{} key(s) would have value(s) unset", pre_matches.len());
        return Ok(ret);
    }
    let pre = if value_regex.is_none() {
        pre_matches.clone()
    } else {
        git.get_regexp(&key, None).await?
    };
    let mut failed = Vec::new();
    for key_name in pre_matches.keys() {
        let mut args = vec![
            if all { "--unset-all" } else { "--unset" },
            git.scope(),
            name.as_str(),
        ];
        if let Some(v) = &value_regex {
            args.push(v);
        }
        let (code, _, err) = git.config(&args).await?;
        if code != 0 {
            tracing::error!(
                "Failed to unset '{key_name}': git config returned exit code {code}; {err}"
            );
            failed.push(key_name.clone());
        }
    }
    if !failed.is_empty() {
        return Ok(fail(
            ret,
            format!(
                "Error(s) occurred unsetting values for the following keys (see the minion log \
                 for details): {}",
                failed.join(", ")
            ),
        ));
    }
    let post = git.get_regexp(&key, None).await?;
    for (key_name, before) in &pre {
        // Salt 3007.8 raises KeyError here when every value of a key went; the key's
        // values all went, so all of them are what changed.
        let after = post.get(key_name).map(values).unwrap_or_default();
        let unset: Vec<String> = values(before)
            .into_iter()
            .filter(|x| !after.contains(x))
            .collect();
        if !unset.is_empty() {
            ret.changes.insert(key_name.clone(), json!(unset));
        }
    }
    let post_matches = if value_regex.is_none() {
        post
    } else {
        git.get_regexp(&key, value_regex.as_deref()).await?
    };
    if !post_matches.is_empty() {
        let left: Vec<String> = post_matches
            .iter()
            .map(|(k, v)| format!("{k} ({})", values(v).join(", ")))
            .collect();
        return Ok(fail(
            ret,
            format!("Failed to unset value(s): {}", left.join("; ")),
        ));
    }
    ret.comment = "Value(s) successfully unset".into();
    Ok(ret)
}
