//! Salt's `user` module (`useradd`): accounts read from the passwd database (`/etc/passwd`
//! under `root`, or the system's), changed with `useradd`, `usermod` and `userdel`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use saltq_semantics::python::{self, truthy};

use crate::error::ExecError;
use crate::modules::run_cmd;

use crate::spec::{Call, Function, Lit, Param};

const ROOT: Param = Param::opt("root", Lit::None);

/// The `user` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("user.add", handler!(add))
        .params(&[
            Param::req("name"),
            Param::opt("uid", Lit::None),
            Param::opt("gid", Lit::None),
            Param::opt("groups", Lit::None),
            Param::opt("home", Lit::None),
            Param::opt("shell", Lit::None),
            Param::opt("unique", Lit::Bool(true)),
            Param::opt("system", Lit::Bool(false)),
            Param::opt("fullname", Lit::Str("")),
            Param::opt("roomnumber", Lit::Str("")),
            Param::opt("workphone", Lit::Str("")),
            Param::opt("homephone", Lit::Str("")),
            Param::opt("other", Lit::Str("")),
            Param::opt("createhome", Lit::Bool(true)),
            Param::opt("loginclass", Lit::None),
            Param::opt("nologinit", Lit::Bool(false)),
            ROOT,
            Param::opt("usergroup", Lit::None),
            Param::opt("local", Lit::Bool(false)),
        ])
        .doc(ADD_DOC),
    Function::new("user.delete", handler!(delete))
        .params(&[
            Param::req("name"),
            Param::opt("remove", Lit::Bool(false)),
            Param::opt("force", Lit::Bool(false)),
            ROOT,
            Param::opt("local", Lit::Bool(false)),
        ])
        .doc(DELETE_DOC),
    Function::new("user.getent", handler!(getent))
        .params(&[Param::opt("refresh", Lit::Bool(false)), ROOT])
        .doc(GETENT_DOC),
    Function::new("user.info", handler!(info))
        .params(&[Param::req("name"), ROOT])
        .doc(INFO_DOC),
    Function::new("user.list_users", handler!(list_users))
        .params(&[ROOT])
        .doc(LIST_USERS_DOC),
];

/// One `/etc/passwd` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Passwd {
    pub name: String,
    pub passwd: String,
    pub uid: u32,
    pub gid: u32,
    pub gecos: String,
    pub dir: String,
    pub shell: String,
}

/// The entries of a passwd file.
pub(crate) fn parse_passwd(text: &str) -> Vec<Passwd> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            let [name, passwd, uid, gid, gecos, dir, shell] = f.as_slice() else {
                return None;
            };
            Some(Passwd {
                name: (*name).to_owned(),
                passwd: (*passwd).to_owned(),
                uid: uid.parse().ok()?,
                gid: gid.parse().ok()?,
                gecos: (*gecos).to_owned(),
                dir: (*dir).to_owned(),
                shell: (*shell).to_owned(),
            })
        })
        .collect()
}

/// `<root>/etc/<file>`, or `/etc/<file>`.
pub(crate) fn etc_file(call: &Call, file: &str) -> PathBuf {
    match call.opt_arg("root").map(python::str) {
        Some(root) => Path::new(&root).join("etc").join(file),
        None => Path::new("/etc").join(file),
    }
}

fn passwd_db(call: &Call) -> Vec<Passwd> {
    parse_passwd(&std::fs::read_to_string(etc_file(call, "passwd")).unwrap_or_default())
}

/// The names of the groups a user is in (Salt's `get_group_list`), sorted.
fn group_list(user: &Passwd) -> Vec<String> {
    let Ok(name) = std::ffi::CString::new(user.name.clone()) else {
        return Vec::new();
    };
    let gids =
        nix::unistd::getgrouplist(&name, nix::unistd::Gid::from_raw(user.gid)).unwrap_or_default();
    let mut names: Vec<String> = gids
        .into_iter()
        .filter_map(|g| {
            nix::unistd::Group::from_gid(g)
                .ok()
                .flatten()
                .map(|g| g.name)
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Salt's `_format_info`: the account with its gecos fields and groups.
pub(crate) fn format_info(user: &Passwd, groups: Vec<String>) -> Value {
    let mut gecos: Vec<&str> = user.gecos.splitn(5, ',').collect();
    gecos.resize(5, "");
    json!({
        "gid": user.gid, "groups": groups, "home": user.dir, "name": user.name,
        "passwd": user.passwd, "shell": user.shell, "uid": user.uid,
        "fullname": gecos[0], "roomnumber": gecos[1], "workphone": gecos[2],
        "homephone": gecos[3], "other": gecos[4],
    })
}

const INFO_DOC: &str = "Return a user's account: ``{gid, groups, home, name, passwd, shell, uid,
fullname, roomnumber, workphone, homephone, other}``, or ``{}`` when there is no such user

CLI Example:

.. code-block:: bash

    salt '*' user.info root
";

async fn info(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    Ok(passwd_db(&call)
        .iter()
        .find(|u| u.name == name)
        .map_or_else(|| json!({}), |u| format_info(u, group_list(u))))
}

const LIST_USERS_DOC: &str = "Return the names of all users, sorted

CLI Example:

.. code-block:: bash

    salt '*' user.list_users
";

async fn list_users(call: Call) -> Result<Value, ExecError> {
    let mut names: Vec<String> = passwd_db(&call).into_iter().map(|u| u.name).collect();
    names.sort();
    Ok(json!(names))
}

const GETENT_DOC: &str = "Return every user's account, as ``user.info`` gives it, in the order of
the passwd database

CLI Example:

.. code-block:: bash

    salt '*' user.getent
";

async fn getent(call: Call) -> Result<Value, ExecError> {
    Ok(passwd_db(&call)
        .iter()
        .map(|u| format_info(u, group_list(u)))
        .collect())
}

/// The command-line flags `useradd` gets for `add`'s arguments, as Salt builds them.
fn useradd_argv(call: &Call, name: &str) -> Vec<String> {
    let local = truthy(call.arg("local"));
    let mut cmd = vec![if local { "luseradd" } else { "useradd" }.to_owned()];
    let arg = |n: &str| {
        call.opt_arg(n)
            .filter(|v| v.as_str() != Some(""))
            .map(python::str)
    };
    if let Some(shell) = arg("shell") {
        cmd.extend(["-s".into(), shell]);
    }
    if let Some(uid) = arg("uid") {
        cmd.extend(["-u".into(), uid]);
    }
    if let Some(gid) = arg("gid") {
        cmd.extend(["-g".into(), gid]);
    } else if call.opt_arg("usergroup").is_some_and(truthy) && !local {
        cmd.push("-U".into());
    }
    if call.arg("usergroup") == &Value::Bool(false) {
        cmd.push(if local { "-n" } else { "-N" }.into());
    }
    if truthy(call.arg("createhome")) {
        if !local {
            cmd.push("-m".into());
        }
    } else {
        cmd.push("-M".into());
    }
    if truthy(call.arg("nologinit")) {
        cmd.push("-l".into());
    }
    if let Some(home) = arg("home") {
        cmd.extend(["-d".into(), home]);
    }
    if !truthy(call.arg("unique")) {
        cmd.push("-o".into());
    }
    if truthy(call.arg("system")) {
        cmd.push("-r".into());
    }
    cmd.push(name.to_owned());
    if let Some(root) = arg("root").filter(|_| !local) {
        cmd.extend(["-R".into(), root]);
    }
    cmd
}

const ADD_DOC: &str = "Add a user (``useradd``); ``True`` on success, ``False`` when ``useradd``
fails. ``groups`` (a list or comma-separated names) sets the supplementary groups; the
gecos fields are set with ``fullname``, ``roomnumber``, ``workphone``, ``homephone`` and
``other``.

CLI Example:

.. code-block:: bash

    salt '*' user.add name <uid> <gid> <groups> <home> <shell>
";

async fn add(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let argv = useradd_argv(&call, &name);
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    if run_cmd(&call, &refs).await?.code != 0 {
        return Ok(Value::Bool(false));
    }
    let groups: Vec<String> = match call.opt_arg("groups") {
        Some(Value::Array(items)) => items.iter().map(python::str).collect(),
        Some(v) => python::str(v)
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        None => Vec::new(),
    };
    if !groups.is_empty() {
        let list = groups.join(",");
        run_cmd(&call, &["usermod", "-G", &list, &name]).await?;
    }
    let gecos: Vec<String> = ["fullname", "roomnumber", "workphone", "homephone", "other"]
        .iter()
        .map(|f| python::str(call.arg(f)))
        .collect();
    if gecos.iter().any(|g| !g.is_empty()) {
        let text = gecos.join(",");
        run_cmd(&call, &["usermod", "-c", text.trim_end_matches(','), &name]).await?;
    }
    Ok(Value::Bool(true))
}

const DELETE_DOC: &str = "Remove a user (``userdel``); ``remove=True`` removes the home
directory too, ``force=True`` removes the user even when logged in

CLI Example:

.. code-block:: bash

    salt '*' user.delete name remove=True force=True
";

async fn delete(call: Call) -> Result<Value, ExecError> {
    let local = truthy(call.arg("local"));
    let name = python::str(call.arg("name"));
    let mut argv: Vec<String> = vec![if local { "luserdel" } else { "userdel" }.into()];
    if truthy(call.arg("remove")) {
        argv.push("-r".into());
    }
    if truthy(call.arg("force")) && !local {
        argv.push("-f".into());
    }
    argv.push(name);
    if let Some(root) = call.opt_arg("root").map(python::str).filter(|_| !local) {
        argv.extend(["-R".into(), root]);
    }
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = run_cmd(&call, &refs).await?;
    // Debian's userdel exits 12 when only the mail spool was missing: a success, as in Salt.
    let debian = call.ctx.grains().get("os_family").and_then(Value::as_str) == Some("Debian");
    let mail_only = out.code == 12
        && debian
        && (out.stderr.contains("var/mail") || out.stderr.contains("var/spool/mail"));
    Ok(Value::Bool(out.code == 0 || mail_only))
}

#[cfg(test)]
mod tests;
