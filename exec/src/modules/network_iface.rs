//! Salt's `network.interface` and `network.interface_ip` (`salt/utils/network.py`): one
//! interface's IPv4 addresses, as formulas read them from Jinja. The rest of `network` lives
//! in `network.rs`.

use serde_json::Value;

use saltq_semantics::python;

use crate::error::ExecError;
use crate::grains::net::interfaces;
use crate::modules::network::interface_dict;
use crate::spec::{Call, Function, Param};

/// These `network` functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("network.interface", handler!(interface))
        .params(&[Param::req("iface")])
        .doc(INTERFACE_DOC),
    Function::new("network.interface_ip", handler!(interface_ip))
        .params(&[Param::req("iface")])
        .doc(INTERFACE_IP_DOC),
];

/// The interface's `inet` list (`""` when it has none), or Salt's error text naming the
/// interfaces there are.
fn inet_of(iface: &str) -> Result<Value, String> {
    let all = interfaces();
    match all.iter().find(|i| i.name == iface) {
        Some(i) => Ok(interface_dict(i)
            .get("inet")
            .cloned()
            .unwrap_or_else(|| Value::from(""))),
        None => {
            let names: Vec<&str> = all.iter().map(|i| i.name.as_str()).collect();
            let msg = format!(
                "Interface \"{iface}\" not in available interfaces: \"{}\"",
                names.join("\", \"")
            );
            tracing::error!("{msg}");
            Err(msg)
        }
    }
}

const INTERFACE_DOC: &str = "Return the inet address for a given interface: a list of
``{address, netmask, broadcast, label}``, or an error text when there is no such interface

.. versionadded:: 2014.7.0

CLI Example:

.. code-block:: bash

    salt '*' network.interface eth0
";

async fn interface(call: Call) -> Result<Value, ExecError> {
    Ok(inet_of(&python::str(call.arg("iface"))).unwrap_or_else(Value::String))
}

const INTERFACE_IP_DOC: &str = "Return the inet address for a given interface (its first IPv4
address, ``\"\"`` when it has none), or an error text when there is no such interface

.. versionadded:: 2014.7.0

CLI Example:

.. code-block:: bash

    salt '*' network.interface_ip eth0
";

async fn interface_ip(call: Call) -> Result<Value, ExecError> {
    Ok(match inet_of(&python::str(call.arg("iface"))) {
        Ok(Value::Array(inet)) => inet
            .first()
            .and_then(|a| a.get("address"))
            .cloned()
            .unwrap_or_else(|| Value::from("")),
        Ok(_) => Value::from(""),
        Err(msg) => Value::String(msg),
    })
}
