//! Salt's `host` state module (`salt/states/host.py`): `host.present`, `host.absent` and
//! `host.only` keep entries of the hosts file (the minion's `hosts.file` option, `/etc/hosts`
//! by default) through the `hosts.*` execution functions, with Salt's comments and changes.
//!
//! Salt walks Python sets of (address, name) pairs to add, comment and remove, so its order
//! over several addresses is the hash's; here they follow the order of `ip`.

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param};
use saltq_semantics::python::{self, truthy};

use super::{Ret, StateCall, StateError, StateFunction, exec, state_handler};

/// The `host` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "host.present",
        params: &[
            Param::req("name"),
            Param::req("ip"),
            Param::opt("comment", Lit::Str("")),
            Param::opt("clean", Lit::Bool(false)),
        ],
        kwargs: false,
        handler: state_handler!(present),
    },
    StateFunction {
        name: "host.absent",
        params: &[Param::req("name"), Param::req("ip")],
        kwargs: false,
        handler: state_handler!(absent),
    },
    StateFunction {
        name: "host.only",
        params: &[Param::req("name"), Param::req("hostnames")],
        kwargs: false,
        handler: state_handler!(only),
    },
];

/// `ip` as a list: a single value becomes a list of one.
fn ip_list(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(items)) => items.iter().map(python::str).collect(),
        Some(other) => vec![python::str(other)],
        None => vec!["None".to_owned()],
    }
}

/// Salt's `salt.utils.validate.net.ip_addr`: an IPv4 or IPv6 address, or network.
fn valid_ip(addr: &str) -> bool {
    let host = addr.split_once('/').map_or(addr, |(h, _)| h);
    host.parse::<std::net::IpAddr>().is_ok()
}

fn push_to(changes: &mut Map<String, Value>, kind: &str, addr: &str, value: Value) {
    let by_addr = changes
        .entry(kind)
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = by_addr
        && let Value::Array(list) = m.entry(addr).or_insert_with(|| Value::Array(Vec::new()))
    {
        list.push(value);
    }
}

fn add_unique(list: &mut Vec<(String, String)>, pair: (String, String)) {
    if !list.contains(&pair) {
        list.push(pair);
    }
}

async fn present(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    let ips = ip_list(call.arg("ip"));
    let comment = call.arg("comment").filter(|c| truthy(c)).map(python::str);
    let clean = call.arg("clean").is_some_and(truthy);
    let all_hosts = exec(&call, "hosts.list_hosts", vec![], Map::new()).await?;
    let all_hosts = all_hosts.as_object().cloned().unwrap_or_default();
    let mut comments = Vec::new();
    let mut to_add: Vec<(String, String)> = Vec::new();
    let mut to_remove: Vec<(String, String)> = Vec::new();
    let mut update_comment: Vec<(String, String)> = Vec::new();
    let mut warnings = Vec::new();

    for addr in &ips {
        if !all_hosts.contains_key(addr) {
            add_unique(&mut to_add, (addr.clone(), name.clone()));
            if let Some(c) = &comment {
                add_unique(&mut update_comment, (addr.clone(), c.clone()));
            }
        }
    }
    for (addr, info) in &all_hosts {
        let aliases: Vec<String> = info
            .get("aliases")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(python::str).collect())
            .unwrap_or_default();
        let has_name = info.get("aliases").is_some() && aliases.contains(&name);
        if !ips.contains(addr) {
            if has_name {
                if clean {
                    add_unique(&mut to_remove, (addr.clone(), name.clone()));
                } else {
                    warnings.push(json!(format!(
                        "Host {name} present for IP address {addr}. To get rid of this warning, \
                         either run this state with 'clean' set to True to remove {name} from \
                         {addr}, or add {addr} to the 'ip' argument."
                    )));
                }
            }
        } else if has_name {
            let current = info.get("comment").map(python::str);
            match (&comment, current) {
                (Some(c), Some(cur)) if &cur != c => {
                    add_unique(&mut update_comment, (addr.clone(), c.clone()));
                }
                (Some(c), None) => add_unique(&mut update_comment, (addr.clone(), c.clone())),
                _ => comments.push(format!("Host {name} ({addr}) already present")),
            }
        } else if valid_ip(addr) {
            add_unique(&mut to_add, (addr.clone(), name.clone()));
            if let Some(c) = &comment {
                add_unique(&mut update_comment, (addr.clone(), c.clone()));
            }
        } else {
            ret.result = Some(false);
            comments.push(format!("Invalid IP Address for {name} ({addr})"));
        }
    }
    if !warnings.is_empty() {
        ret.extra.insert("warnings".into(), Value::Array(warnings));
    }

    for (addr, host) in &to_add {
        if call.test {
            ret.result = None;
            comments.push(format!("Host {host} ({addr}) would be added"));
        } else if truthy(
            &exec(
                &call,
                "hosts.add_host",
                vec![json!(addr), json!(host)],
                Map::new(),
            )
            .await?,
        ) {
            comments.push(format!("Added host {host} ({addr})"));
        } else {
            ret.result = Some(false);
            comments.push(format!("Failed to add host {host} ({addr})"));
            continue;
        }
        push_to(&mut ret.changes, "added", addr, json!(host));
    }
    for (addr, c) in &update_comment {
        if call.test {
            comments.push(format!("Comment for {addr} ({c}) would be added"));
        } else if truthy(
            &exec(
                &call,
                "hosts.set_comment",
                vec![json!(addr), json!(c)],
                Map::new(),
            )
            .await?,
        ) {
            comments.push(format!("Set comment for host {addr} ({c})"));
        } else {
            ret.result = Some(false);
            comments.push(format!("Failed to add comment for host {addr} ({c})"));
            continue;
        }
        push_to(&mut ret.changes, "comment_added", addr, json!(c));
    }
    for (addr, host) in &to_remove {
        if call.test {
            ret.result = None;
            comments.push(format!("Host {host} ({addr}) would be removed"));
        } else if truthy(
            &exec(
                &call,
                "hosts.rm_host",
                vec![json!(addr), json!(host)],
                Map::new(),
            )
            .await?,
        ) {
            comments.push(format!("Removed host {host} ({addr})"));
        } else {
            ret.result = Some(false);
            comments.push(format!("Failed to remove host {host} ({addr})"));
            continue;
        }
        push_to(&mut ret.changes, "removed", addr, json!(host));
    }
    ret.comment = comments.join("\n");
    Ok(ret)
}

async fn absent(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    ret.result = None;
    let mut comments = Vec::new();
    for ip in ip_list(call.arg("ip")) {
        let has = exec(
            &call,
            "hosts.has_pair",
            vec![json!(ip), json!(name)],
            Map::new(),
        )
        .await?;
        if !truthy(&has) {
            ret.result = Some(true);
            comments.push(format!("Host {name} ({ip}) already absent"));
        } else if call.test {
            comments.push(format!("Host {name} ({ip}) needs to be removed"));
        } else if truthy(
            &exec(
                &call,
                "hosts.rm_host",
                vec![json!(ip), json!(name)],
                Map::new(),
            )
            .await?,
        ) {
            ret.changes = Map::from_iter([("host".to_owned(), json!(name))]);
            ret.result = Some(true);
            comments.push(format!("Removed host {name} ({ip})"));
        } else {
            ret.result = Some(false);
            comments.push("Failed to remove host".to_owned());
        }
    }
    ret.comment = comments.join("\n");
    Ok(ret)
}

async fn only(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    ret.result = None;
    let hostnames: Vec<String> = match call.arg("hostnames") {
        Some(Value::Array(items)) => items.iter().map(python::str).collect(),
        Some(other) => vec![python::str(other)],
        None => Vec::new(),
    };
    let old = exec(&call, "hosts.get_alias", vec![json!(name)], Map::new()).await?;
    let old = old
        .as_array()
        .map(|a| a.iter().map(python::str).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let new = hostnames
        .iter()
        .map(|h| h.trim())
        .collect::<Vec<_>>()
        .join(" ");
    if old == new {
        ret.comment = format!("IP address {name} already set to \"{new}\"");
        ret.result = Some(true);
        return Ok(ret);
    }
    if call.test {
        ret.comment = format!("Would change {name} from \"{old}\" to \"{new}\"");
        return Ok(ret);
    }
    let ok = truthy(
        &exec(
            &call,
            "hosts.set_host",
            vec![json!(name), json!(new)],
            Map::new(),
        )
        .await?,
    );
    ret.result = Some(ok);
    if !ok {
        ret.comment = format!("hosts.set_host failed to change {name} from \"{old}\" to \"{new}\"");
        return Ok(ret);
    }
    ret.comment = format!("successfully changed {name} from \"{old}\" to \"{new}\"");
    ret.changes = Map::from_iter([(name.clone(), json!({"old": old, "new": new}))]);
    Ok(ret)
}
