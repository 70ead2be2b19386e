//! Salt's `group` module (`groupadd`): groups read from the group database (`/etc/group`
//! under `root`, or the system's), changed with `groupadd`, `groupmod`, `groupdel` and
//! `gpasswd` (members).

use serde_json::{Value, json};

use saltq_semantics::python::{self, truthy};

use crate::error::ExecError;
use crate::modules::run_cmd;

use crate::spec::{Call, Function, Lit, Param};

const ROOT: Param = Param::opt("root", Lit::None);

/// The `group` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("group.add", handler!(add))
        .params(&[
            Param::req("name"),
            Param::opt("gid", Lit::None),
            Param::opt("system", Lit::Bool(false)),
            ROOT,
            Param::opt("non_unique", Lit::Bool(false)),
            Param::opt("local", Lit::Bool(false)),
        ])
        .doc(ADD_DOC),
    Function::new("group.delete", handler!(delete))
        .params(&[
            Param::req("name"),
            ROOT,
            Param::opt("local", Lit::Bool(false)),
        ])
        .doc(DELETE_DOC),
    Function::new("group.getent", handler!(getent))
        .params(&[Param::opt("refresh", Lit::Bool(false)), ROOT])
        .doc(GETENT_DOC),
    Function::new("group.info", handler!(info))
        .params(&[Param::req("name"), ROOT])
        .doc(INFO_DOC),
    Function::new("group.chgid", handler!(chgid))
        .params(&[
            Param::req("name"),
            Param::req("gid"),
            ROOT,
            Param::opt("non_unique", Lit::Bool(false)),
        ])
        .doc(CHGID_DOC),
    Function::new("group.adduser", handler!(adduser))
        .params(&[Param::req("name"), Param::req("username"), ROOT])
        .doc(ADDUSER_DOC),
    Function::new("group.deluser", handler!(deluser))
        .params(&[Param::req("name"), Param::req("username"), ROOT])
        .doc(DELUSER_DOC),
    Function::new("group.members", handler!(members))
        .params(&[Param::req("name"), Param::req("members_list"), ROOT])
        .doc(MEMBERS_DOC),
];

/// The entries of a group file as Salt's `{name, passwd, gid, members}`.
pub(crate) fn parse_group(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            let [name, passwd, gid, members] = f.as_slice() else {
                return None;
            };
            let members: Vec<&str> = members.split(',').filter(|m| !m.is_empty()).collect();
            Some(json!({"name": name, "passwd": passwd, "gid": gid.parse::<u32>().ok()?, "members": members}))
        })
        .collect()
}

fn group_db(call: &Call) -> Vec<Value> {
    group_db_at(call.opt_arg("root").map(python::str).as_deref())
}

/// The groups of `<root>/etc/group`, or of `/etc/group`.
fn group_db_at(root: Option<&str>) -> Vec<Value> {
    let path = std::path::Path::new(root.unwrap_or("/")).join("etc/group");
    parse_group(&std::fs::read_to_string(path).unwrap_or_default())
}

/// The group named `name` (`{}` when there is none), as `group.info` answers.
pub(crate) fn group_info(call: &Call, name: &str) -> Value {
    group_db(call)
        .into_iter()
        .find(|g| g["name"] == json!(name))
        .unwrap_or_else(|| json!({}))
}

/// `--root <root>` for `gpasswd` when the call names a root.
fn gpasswd_root(call: &Call) -> Vec<String> {
    call.opt_arg("root")
        .map(|r| vec!["--root".to_owned(), python::str(r)])
        .unwrap_or_default()
}

/// Runs `argv`: whether it exited 0.
async fn succeeds(call: &Call, argv: &[String]) -> Result<bool, ExecError> {
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    Ok(run_cmd(call, &refs).await?.code == 0)
}

const INFO_DOC: &str = "Return a group: ``{name, passwd, gid, members}``, or ``{}`` when there is
no such group

CLI Example:

.. code-block:: bash

    salt '*' group.info foo
";

async fn info(call: Call) -> Result<Value, ExecError> {
    Ok(group_info(&call, &python::str(call.arg("name"))))
}

const GETENT_DOC: &str = "Return every group, as ``group.info`` gives it

CLI Example:

.. code-block:: bash

    salt '*' group.getent
";

async fn getent(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Array(group_db(&call)))
}

const ADD_DOC: &str = "Add a group (``groupadd``): ``True`` on success

CLI Example:

.. code-block:: bash

    salt '*' group.add foo 3456
";

async fn add(call: Call) -> Result<Value, ExecError> {
    let local = truthy(call.arg("local"));
    let mut argv: Vec<String> = vec![if local { "lgroupadd" } else { "groupadd" }.into()];
    if let Some(gid) = call.opt_arg("gid").filter(|v| truthy(v)) {
        argv.extend(["-g".into(), python::str(gid)]);
        if truthy(call.arg("non_unique")) && !local {
            argv.push("-o".into());
        }
    }
    if truthy(call.arg("system")) {
        argv.push("-r".into());
    }
    if let Some(root) = call.opt_arg("root").map(python::str).filter(|_| !local) {
        argv.extend(["-R".into(), root]);
    }
    argv.push(python::str(call.arg("name")));
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    Ok(Value::Bool(run_cmd(&call, &refs).await?.code == 0))
}

const DELETE_DOC: &str = "Remove a group (``groupdel``): ``True`` on success

CLI Example:

.. code-block:: bash

    salt '*' group.delete foo
";

const CHGID_DOC: &str = "Change a group's gid (``groupmod -g``, ``-og`` with ``non_unique``):
``True`` when the group has that gid afterwards, ``False`` when there is no such group

CLI Example:

.. code-block:: bash

    salt '*' group.chgid foo 4376
";

async fn chgid(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let gid = call.arg("gid").clone();
    let before = group_info(&call, &name);
    if before.as_object().is_none_or(|m| m.is_empty()) {
        return Ok(Value::Bool(false));
    }
    if before["gid"] == gid {
        return Ok(Value::Bool(true));
    }
    let mut argv: Vec<String> = vec!["groupmod".into()];
    if let Some(root) = call.opt_arg("root") {
        argv.extend(["-R".into(), python::str(root)]);
    }
    let param = if truthy(call.arg("non_unique")) {
        "-og"
    } else {
        "-g"
    };
    argv.extend([param.into(), python::str(&gid), name.clone()]);
    succeeds(&call, &argv).await?;
    Ok(Value::Bool(group_info(&call, &name)["gid"] == gid))
}

const ADDUSER_DOC: &str = "Add a user to a group (``gpasswd --add``): ``True`` on success

CLI Example:

.. code-block:: bash

     salt '*' group.adduser foo bar
";

async fn adduser(call: Call) -> Result<Value, ExecError> {
    let mut argv: Vec<String> = vec![
        "gpasswd".into(),
        "--add".into(),
        python::str(call.arg("username")),
        python::str(call.arg("name")),
    ];
    argv.extend(gpasswd_root(&call));
    Ok(Value::Bool(succeeds(&call, &argv).await?))
}

const DELUSER_DOC: &str = "Remove a user from a group (``gpasswd --del``): ``True`` on success,
and when the user is not a member or the group does not exist

CLI Example:

.. code-block:: bash

     salt '*' group.deluser foo bar
";

async fn deluser(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    let username = python::str(call.arg("username"));
    // Salt looks the group up without `root`, and answers True for a missing group.
    let members = group_db_at(None)
        .into_iter()
        .find(|g| g["name"] == json!(name))
        .map(|g| g["members"].clone())
        .unwrap_or_default();
    if !members
        .as_array()
        .is_some_and(|m| m.contains(&json!(username)))
    {
        return Ok(Value::Bool(true));
    }
    let mut argv: Vec<String> = vec!["gpasswd".into(), "--del".into(), username, name];
    argv.extend(gpasswd_root(&call));
    Ok(Value::Bool(succeeds(&call, &argv).await?))
}

const MEMBERS_DOC: &str = "Replace a group's members with a comma-separated list (``gpasswd
--members``): ``True`` on success

CLI Example:

.. code-block:: bash

    salt '*' group.members foo 'user1,user2,user3,...'
";

async fn members(call: Call) -> Result<Value, ExecError> {
    let mut argv: Vec<String> = vec![
        "gpasswd".into(),
        "--members".into(),
        python::str(call.arg("members_list")),
        python::str(call.arg("name")),
    ];
    argv.extend(gpasswd_root(&call));
    Ok(Value::Bool(succeeds(&call, &argv).await?))
}

async fn delete(call: Call) -> Result<Value, ExecError> {
    let local = truthy(call.arg("local"));
    let mut argv: Vec<String> = vec![if local { "lgroupdel" } else { "groupdel" }.into()];
    if let Some(root) = call.opt_arg("root").map(python::str).filter(|_| !local) {
        argv.extend(["-R".into(), root]);
    }
    argv.push(python::str(call.arg("name")));
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    Ok(Value::Bool(run_cmd(&call, &refs).await?.code == 0))
}
