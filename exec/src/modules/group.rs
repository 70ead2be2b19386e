//! Salt's `group` module (`groupadd`): groups read from the group database (`/etc/group`
//! under `root`, or the system's), changed with `groupadd` and `groupdel`.

use serde_json::{Value, json};

use saltq_semantics::python::{self, truthy};

use crate::error::ExecError;
use crate::modules::run_cmd;
use crate::modules::user::etc_file;

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
    parse_group(&std::fs::read_to_string(etc_file(call, "group")).unwrap_or_default())
}

const INFO_DOC: &str = "Return a group: ``{name, passwd, gid, members}``, or ``{}`` when there is
no such group

CLI Example:

.. code-block:: bash

    salt '*' group.info foo
";

async fn info(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("name"));
    Ok(group_db(&call)
        .into_iter()
        .find(|g| g["name"] == json!(name))
        .unwrap_or_else(|| json!({})))
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
