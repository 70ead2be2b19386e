//! Salt's `user` module (`useradd`): accounts read from the passwd database (`/etc/passwd`
//! under `root`, or the system's), changed with `useradd`, `usermod` and `userdel`; the
//! `ch*` functions change one attribute and answer whether it now has the value asked for.

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
    Function::new("user.list_groups", handler!(list_groups))
        .params(&[Param::req("name")])
        .doc(LIST_GROUPS_DOC),
    Function::new("user.primary_group", handler!(primary_group))
        .params(&[Param::req("name")])
        .doc(PRIMARY_GROUP_DOC),
    Function::new("user.chuid", handler!(chuid))
        .params(&[Param::req("name"), Param::req("uid"), ROOT])
        .doc(CHUID_DOC),
    Function::new("user.chgid", handler!(chgid))
        .params(&[Param::req("name"), Param::req("gid"), ROOT])
        .doc(CHGID_DOC),
    Function::new("user.chshell", handler!(chshell))
        .params(&[Param::req("name"), Param::req("shell"), ROOT])
        .doc(CHSHELL_DOC),
    Function::new("user.chhome", handler!(chhome))
        .params(&[
            Param::req("name"),
            Param::req("home"),
            Param::opt("persist", Lit::Bool(false)),
            ROOT,
        ])
        .doc(CHHOME_DOC),
    Function::new("user.chgroups", handler!(chgroups))
        .params(&[
            Param::req("name"),
            Param::req("groups"),
            Param::opt("append", Lit::Bool(false)),
            ROOT,
        ])
        .doc(CHGROUPS_DOC),
    Function::new("user.chfullname", handler!(chfullname))
        .params(&[Param::req("name"), Param::req("fullname"), ROOT])
        .doc(CHFULLNAME_DOC),
    Function::new("user.chroomnumber", handler!(chroomnumber))
        .params(&[Param::req("name"), Param::req("roomnumber"), ROOT])
        .doc(CHROOMNUMBER_DOC),
    Function::new("user.chworkphone", handler!(chworkphone))
        .params(&[Param::req("name"), Param::req("workphone"), ROOT])
        .doc(CHWORKPHONE_DOC),
    Function::new("user.chhomephone", handler!(chhomephone))
        .params(&[Param::req("name"), Param::req("homephone"), ROOT])
        .doc(CHHOMEPHONE_DOC),
    Function::new("user.chother", handler!(chother))
        .params(&[Param::req("name"), Param::req("other"), ROOT])
        .doc(CHOTHER_DOC),
    Function::new("user.rename", handler!(rename))
        .params(&[Param::req("name"), Param::req("new_name"), ROOT])
        .doc(RENAME_DOC),
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
    Ok(user_info(&call, &python::str(call.arg("name"))))
}

/// The account named `name` as `user.info` answers it (`{}` when there is none).
pub(crate) fn user_info(call: &Call, name: &str) -> Value {
    passwd_db(call)
        .iter()
        .find(|u| u.name == name)
        .map_or_else(|| json!({}), |u| format_info(u, group_list(u)))
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

/// Whether `/etc/login.defs` says `USERGROUPS_ENAB yes` (the first line that names it).
fn usergroups_enabled() -> bool {
    std::fs::read_to_string("/etc/login.defs")
        .unwrap_or_default()
        .lines()
        .find(|l| l.get(..15).unwrap_or(l).contains("USERGROUPS_ENAB"))
        .is_some_and(|l| l.contains("yes"))
}

/// The group names a `groups` argument gives: a list, or a comma-separated string.
pub(crate) fn group_names(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().map(python::str).collect(),
        Value::Null => Vec::new(),
        other => python::str(other).split(',').map(str::to_owned).collect(),
    }
}

/// The command line `useradd` gets for `add`'s arguments, as Salt builds it.
fn useradd_argv(call: &Call, name: &str) -> Vec<String> {
    let local = truthy(call.arg("local"));
    let mut cmd = vec![if local { "luseradd" } else { "useradd" }.to_owned()];
    let given = |n: &str| {
        call.opt_arg(n)
            .filter(|v| v.as_str() != Some(""))
            .map(python::str)
    };
    if let Some(shell) = call.opt_arg("shell").filter(|v| truthy(v)) {
        cmd.extend(["-s".into(), python::str(shell)]);
    }
    if let Some(uid) = given("uid") {
        cmd.extend(["-u".into(), uid]);
    }
    let groups = call.opt_arg("groups").map(group_names);
    if let Some(gid) = given("gid") {
        cmd.extend(["-g".into(), gid]);
    } else if call.opt_arg("usergroup").is_some_and(truthy) {
        if !local {
            cmd.push("-U".into());
        }
    } else if groups.as_ref().is_some_and(|g| g.iter().any(|g| g == name)) && usergroups_enabled() {
        let gid = nix::unistd::Group::from_name(name)
            .ok()
            .flatten()
            .map_or_else(String::new, |g| g.gid.to_string());
        cmd.extend(["-g".into(), gid]);
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
    if let Some(home) = call.opt_arg("home") {
        cmd.extend(["-d".into(), python::str(home)]);
    }
    if !truthy(call.arg("unique")) {
        cmd.push("-o".into());
    }
    if truthy(call.arg("system")) {
        cmd.push("-r".into());
    }
    cmd.push(name.to_owned());
    if let Some(root) = call.opt_arg("root").map(python::str).filter(|_| !local) {
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
    // The user exists now: as in Salt, what follows cannot make the answer False (a later run
    // sees what is still to change).
    let root = call.opt_arg("root").map(python::str);
    if let Some(groups) = call.opt_arg("groups").filter(|g| truthy(g)) {
        set_groups(&call, &name, &group_names(groups), false, root.as_deref()).await?;
    }
    for field in GECOS {
        if let Some(v) = call.opt_arg(field).filter(|v| truthy(v)) {
            update_gecos(&call, &name, field, v, root.as_deref()).await?;
        }
    }
    Ok(Value::Bool(true))
}

/// The gecos fields, in their order in the passwd entry.
const GECOS: [&str; 5] = ["fullname", "roomnumber", "workphone", "homephone", "other"];

/// A call's `root`, for the helpers shared by several functions.
fn root_of(call: &Call) -> Option<String> {
    call.opt_arg("root").map(python::str)
}

/// The account in `<root>/etc/passwd` (or `/etc/passwd`).
fn lookup_at(root: Option<&str>, name: &str) -> Option<Passwd> {
    let path = Path::new(root.unwrap_or("/")).join("etc/passwd");
    parse_passwd(&std::fs::read_to_string(path).unwrap_or_default())
        .into_iter()
        .find(|u| u.name == name)
}

/// `user.info` under `root`.
pub(crate) fn info_at(root: Option<&str>, name: &str) -> Value {
    lookup_at(root, name).map_or_else(|| json!({}), |u| format_info(&u, group_list(&u)))
}

/// Salt's `_chattrib`: `usermod PARAM VALUE NAME` unless the attribute already has the value;
/// whether it has it afterwards. A missing user is an error.
async fn chattrib(
    call: &Call,
    key: &str,
    value: &Value,
    param: &str,
    persist: bool,
) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let root = root_of(call);
    let before = info_at(root.as_deref(), &name);
    if before.as_object().is_none_or(|m| m.is_empty()) {
        return Err(ExecError::execution(format!(
            "User '{name}' does not exist"
        )));
    }
    if &before[key] == value {
        return Ok(Value::Bool(true));
    }
    let mut argv: Vec<String> = vec!["usermod".into()];
    if let Some(root) = &root {
        argv.extend(["-R".into(), root.clone()]);
    }
    if persist {
        argv.push("-m".into());
    }
    argv.extend([param.into(), python::str(value), name.clone()]);
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    run_cmd(call, &refs).await?;
    Ok(Value::Bool(
        info_at(root.as_deref(), &name).get(key) == Some(value),
    ))
}

/// Salt's `_update_gecos`: one gecos field set with `usermod -c`; whether it has the value
/// afterwards, `False` for a missing user.
async fn update_gecos(
    call: &Call,
    name: &str,
    key: &str,
    value: &Value,
    root: Option<&str>,
) -> Result<bool, ExecError> {
    let value = match value {
        Value::Null => String::new(),
        v => python::str(v),
    };
    let Some(user) = lookup_at(root, name) else {
        return Ok(false);
    };
    let mut fields: Vec<String> = user.gecos.splitn(5, ',').map(str::to_owned).collect();
    fields.resize(5, String::new());
    let idx = GECOS.iter().position(|f| *f == key).unwrap_or(0);
    if fields[idx] == value {
        return Ok(true);
    }
    fields[idx] = value.clone();
    let gecos = fields.join(",").trim_end_matches(',').to_owned();
    let mut argv: Vec<String> = vec!["usermod".into()];
    if let Some(root) = root {
        argv.extend(["-R".into(), root.to_owned()]);
    }
    argv.extend(["-c".into(), gecos, name.to_owned()]);
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    run_cmd(call, &refs).await?;
    let after = lookup_at(root, name).map(|u| {
        let mut f: Vec<String> = u.gecos.splitn(5, ',').map(str::to_owned).collect();
        f.resize(5, String::new());
        f[idx].clone()
    });
    Ok(after.as_deref() == Some(value.as_str()))
}

/// Salt's `chgroups`: the supplementary groups set (or appended to) with `usermod -G`, with
/// `gpasswd -a` as the fallback when usermod cannot find a group in the local files.
async fn set_groups(
    call: &Call,
    name: &str,
    groups: &[String],
    append: bool,
    root: Option<&str>,
) -> Result<bool, ExecError> {
    let current: std::collections::BTreeSet<String> = lookup_at(None, name)
        .map(|u| group_list(&u))
        .unwrap_or_default()
        .into_iter()
        .collect();
    let wanted: std::collections::BTreeSet<String> = groups.iter().cloned().collect();
    if current == wanted {
        return Ok(true);
    }
    let mut argv: Vec<String> = vec!["usermod".into()];
    if append {
        argv.push("-a".into());
    }
    argv.extend(["-G".into(), groups.join(","), name.to_owned()]);
    if let Some(root) = root {
        argv.extend(["-R".into(), root.to_owned()]);
    }
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = run_cmd(call, &refs).await?;
    if out.code != 0 && out.stderr.contains("not found in") {
        let mut ok = true;
        for group in groups {
            if run_cmd(call, &["gpasswd", "-a", name, group]).await?.code != 0 {
                ok = false;
            }
        }
        return Ok(ok);
    }
    Ok(out.code == 0)
}

const LIST_GROUPS_DOC: &str = "Return the names of the groups a user is in (its primary group
included), sorted

CLI Example:

.. code-block:: bash

    salt '*' user.list_groups foo
";

async fn list_groups(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    Ok(json!(
        lookup_at(None, &name)
            .map(|u| group_list(&u))
            .unwrap_or_default()
    ))
}

const PRIMARY_GROUP_DOC: &str = "Return the name of a user's primary group (``id -g -n``)

CLI Example:

.. code-block:: bash

    salt '*' user.primary_group saltadmin
";

async fn primary_group(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let out = run_cmd(&call, &["id", "-g", "-n", &name]).await?;
    let text = if out.code == 0 {
        out.stdout
    } else {
        out.stderr
    };
    Ok(json!(text.trim_end_matches('\n')))
}

const CHUID_DOC: &str = "Change a user's uid (``usermod -u``): ``True`` when it has that uid
afterwards

CLI Example:

.. code-block:: bash

    salt '*' user.chuid foo 4376
";

async fn chuid(call: Call) -> Result<Value, ExecError> {
    let uid = call.arg("uid").clone();
    chattrib(&call, "uid", &uid, "-u", false).await
}

const CHGID_DOC: &str = "Change a user's primary group (``usermod -g``): ``True`` when it has
that gid afterwards

CLI Example:

.. code-block:: bash

    salt '*' user.chgid foo 4376
";

async fn chgid(call: Call) -> Result<Value, ExecError> {
    let gid = call.arg("gid").clone();
    chattrib(&call, "gid", &gid, "-g", false).await
}

const CHSHELL_DOC: &str = "Change a user's login shell (``usermod -s``)

CLI Example:

.. code-block:: bash

    salt '*' user.chshell foo /bin/zsh
";

async fn chshell(call: Call) -> Result<Value, ExecError> {
    let shell = call.arg("shell").clone();
    chattrib(&call, "shell", &shell, "-s", false).await
}

const CHHOME_DOC: &str = "Change a user's home directory (``usermod -d``); ``persist=True``
moves the old home's contents there (``-m``)

CLI Example:

.. code-block:: bash

    salt '*' user.chhome foo /home/users/foo True
";

async fn chhome(call: Call) -> Result<Value, ExecError> {
    let home = call.arg("home").clone();
    let persist = truthy(call.arg("persist"));
    chattrib(&call, "home", &home, "-d", persist).await
}

const CHGROUPS_DOC: &str = "Set the groups a user is in (``usermod -G``), or add to them with
``append=True``; ``groups`` is a list or comma-separated names

CLI Examples:

.. code-block:: bash

    salt '*' user.chgroups foo wheel,root
    salt '*' user.chgroups foo wheel,root append=True
";

async fn chgroups(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let groups = group_names(call.arg("groups"));
    let root = root_of(&call);
    Ok(Value::Bool(
        set_groups(
            &call,
            &name,
            &groups,
            truthy(call.arg("append")),
            root.as_deref(),
        )
        .await?,
    ))
}

async fn gecos_fn(call: Call, field: &str) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let root = root_of(&call);
    let value = call.arg(field).clone();
    Ok(Value::Bool(
        update_gecos(&call, &name, field, &value, root.as_deref()).await?,
    ))
}

const CHFULLNAME_DOC: &str = "Change a user's full name (the first gecos field)

CLI Example:

.. code-block:: bash

    salt '*' user.chfullname foo \"Foo Bar\"
";

async fn chfullname(call: Call) -> Result<Value, ExecError> {
    gecos_fn(call, "fullname").await
}

const CHROOMNUMBER_DOC: &str = "Change a user's room number (the second gecos field)

CLI Example:

.. code-block:: bash

    salt '*' user.chroomnumber foo 123
";

async fn chroomnumber(call: Call) -> Result<Value, ExecError> {
    gecos_fn(call, "roomnumber").await
}

const CHWORKPHONE_DOC: &str = "Change a user's work phone (the third gecos field)

CLI Example:

.. code-block:: bash

    salt '*' user.chworkphone foo 7735550123
";

async fn chworkphone(call: Call) -> Result<Value, ExecError> {
    gecos_fn(call, "workphone").await
}

const CHHOMEPHONE_DOC: &str = "Change a user's home phone (the fourth gecos field)

CLI Example:

.. code-block:: bash

    salt '*' user.chhomephone foo 7735551234
";

async fn chhomephone(call: Call) -> Result<Value, ExecError> {
    gecos_fn(call, "homephone").await
}

const CHOTHER_DOC: &str = "Change a user's other gecos field (the fifth and the rest)

CLI Example:

.. code-block:: bash

    salt '*' user.chother foobar
";

async fn chother(call: Call) -> Result<Value, ExecError> {
    gecos_fn(call, "other").await
}

const RENAME_DOC: &str = "Change a user's login name (``usermod -l``)

CLI Example:

.. code-block:: bash

    salt '*' user.rename name new_name
";

async fn rename(call: Call) -> Result<Value, ExecError> {
    let new_name = python::str(call.arg("new_name"));
    let root = root_of(&call);
    if lookup_at(root.as_deref(), &new_name).is_some() {
        return Err(ExecError::execution(format!(
            "User '{new_name}' already exists"
        )));
    }
    chattrib(&call, "name", &json!(new_name), "-l", false).await
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
