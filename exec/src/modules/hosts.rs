//! Salt's `hosts` module: the entries of the hosts file (the `hosts.file` option, Salt's
//! name, `/etc/hosts` by default), read and edited as Salt does: comments kept in place,
//! entries of one address merged, aliases in file order.
//!
//! The parsing and the edits are pure functions over the file's text ([`parse`],
//! [`set_host_text`], [`rm_host_text`], [`write_hosts`]); the functions read the file, call
//! them and write the result back.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use saltq_semantics::python;

use crate::error::ExecError;
use crate::spec::{Call, Function, Lit, Param};

/// The `hosts` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("hosts.list_hosts", handler!(list_hosts)).doc(LIST_HOSTS_DOC),
    Function::new("hosts.get_ip", handler!(get_ip))
        .params(&[Param::req("host")])
        .doc(GET_IP_DOC),
    Function::new("hosts.get_alias", handler!(get_alias))
        .params(&[Param::req("ip")])
        .doc(GET_ALIAS_DOC),
    Function::new("hosts.has_pair", handler!(has_pair))
        .params(&[Param::req("ip"), Param::req("alias")])
        .doc(HAS_PAIR_DOC),
    Function::new("hosts.set_host", handler!(set_host))
        .params(&[
            Param::req("ip"),
            Param::req("alias"),
            Param::opt("comment", Lit::None),
        ])
        .doc(SET_HOST_DOC),
    Function::new("hosts.rm_host", handler!(rm_host))
        .params(&[Param::req("ip"), Param::req("alias")])
        .doc(RM_HOST_DOC),
    Function::new("hosts.add_host", handler!(add_host))
        .params(&[Param::req("ip"), Param::req("alias")])
        .doc(ADD_HOST_DOC),
    Function::new("hosts.set_comment", handler!(set_comment))
        .params(&[Param::req("ip"), Param::req("comment")])
        .doc(SET_COMMENT_DOC),
];

/// The hosts file: the `hosts.file` option, `/etc/hosts` by default.
pub(crate) fn hosts_file(call: &Call) -> PathBuf {
    call.ctx
        .opt("hosts.file")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map_or_else(|| PathBuf::from("/etc/hosts"), PathBuf::from)
}

/// The hosts file's entries as Salt's `list_hosts` returns them: `comment-N: [line]` for each
/// comment line, `ip: {aliases: [...], comment?}` for each address (lines of one address
/// merged), in file order.
pub fn parse(text: &str) -> Map<String, Value> {
    let mut ret = Map::new();
    let mut count = 0;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            ret.insert(format!("comment-{count}"), json!([line]));
            count += 1;
            continue;
        }
        let (line, comment) = match line.find('#') {
            Some(i) => (line[..i].trim(), Some(line[i + 1..].trim_start())),
            None => (line, None),
        };
        let mut comps = line.split_whitespace();
        let Some(ip) = comps.next() else {
            // Salt raises IndexError on a line that is only a trailing comment's `#...`:
            // there is no address to file it under, so it is skipped.
            continue;
        };
        let entry = ret
            .entry(ip.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(e) = entry {
            let aliases = e
                .entry("aliases")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = aliases {
                list.extend(comps.map(|a| json!(a)));
            }
            if let Some(c) = comment.filter(|c| !c.is_empty()) {
                e.insert("comment".into(), json!(c));
            }
        }
    }
    ret
}

/// Salt's `_write_hosts`: the entries back as text, one line each, comments where they were.
pub fn write_hosts(hosts: &Map<String, Value>) -> String {
    let mut out = String::new();
    for (ip, info) in hosts {
        if ip.is_empty() {
            continue;
        }
        let line = if ip.starts_with("comment") {
            info.as_array()
                .map(|l| l.iter().map(python::str).collect::<String>())
                .unwrap_or_default()
        } else {
            let aliases = aliases_of(info).join(" ");
            match info.get("comment") {
                Some(c) => format!("{ip}\t\t{aliases}\t\t# {}", python::str(c)),
                None => format!("{ip}\t\t{aliases}"),
            }
        };
        let line = line.trim();
        if !line.is_empty() {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn aliases_of(info: &Value) -> Vec<String> {
    info.get("aliases")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(python::str).collect())
        .unwrap_or_default()
}

/// Python's `bytes.split()` words of a line.
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Salt's `set_host` over the file's text: the first line of `ip` replaced by the new entry
/// (or removed when `alias` is blank), the address's other lines removed, the entry appended
/// when the address had none.
pub fn set_host_text(text: &str, ip: &str, alias: &str, comment: Option<&str>) -> String {
    let new_line = if alias.trim().is_empty() {
        String::new()
    } else {
        match comment.filter(|c| !c.is_empty()) {
            Some(c) => format!("{ip}\t\t{alias}\t\t# {c}\n"),
            None => format!("{ip}\t\t{alias}\n"),
        }
    };
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    let mut replaced = false;
    for line in &mut lines {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if words(t).first() == Some(&ip) {
            *line = if replaced {
                String::new()
            } else {
                new_line.clone()
            };
            replaced = true;
        }
    }
    if !replaced {
        if let Some(last) = lines.last_mut()
            && !last.ends_with('\n')
        {
            last.push('\n');
        }
        lines.push(new_line);
    }
    lines.concat()
}

/// Salt's `rm_host` over the file's text: `alias` removed from each line of `ip`, a line left
/// with no alias removed. Salt rewrites every line of the address as `ip\t\taliases `.
pub fn rm_host_text(text: &str, ip: &str, alias: &str) -> String {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    for line in &mut lines {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let (info, comment) = match t.split_once('#') {
            Some((info, comment)) => (info, Some(comment.trim_start())),
            None => (t, None),
        };
        let comps = words(info);
        if comps.first() != Some(&ip) {
            continue;
        }
        let mut new = format!("{ip}\t\t");
        for existing in &comps[1..] {
            if *existing != alias {
                new.push_str(existing);
                new.push(' ');
            }
        }
        *line = if new.trim() == ip {
            String::new()
        } else {
            match comment.filter(|c| !c.is_empty()) {
                Some(c) => format!("{new}# {c}\n"),
                None => format!("{new}\n"),
            }
        };
    }
    lines.concat()
}

fn read(path: &Path) -> Result<String, ExecError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(ExecError::execution(format!(
            "Could not read from {}: {e}",
            path.display()
        ))),
    }
}

fn write(path: &Path, text: &str) -> Result<(), ExecError> {
    std::fs::write(path, text)
        .map_err(|e| ExecError::execution(format!("Could not write to {}: {e}", path.display())))
}

/// Salt's `_get_or_create_hostfile`: the file, created empty when missing.
fn get_or_create(call: &Call) -> Result<PathBuf, ExecError> {
    let path = hosts_file(call);
    if !path.exists() {
        write(&path, "")?;
    }
    Ok(path)
}

fn hosts(call: &Call) -> Result<Map<String, Value>, ExecError> {
    Ok(parse(&read(&hosts_file(call))?))
}

/// Salt's `has_pair` over parsed entries: `alias` (or every alias of a list) is on `ip`.
pub fn has_pair_in(hosts: &Map<String, Value>, ip: &str, alias: &Value) -> bool {
    let Some(info) = hosts.get(ip) else {
        return false;
    };
    let aliases = aliases_of(info);
    match alias {
        Value::Array(list) => list.iter().all(|a| aliases.contains(&python::str(a))),
        other => aliases.contains(&python::str(other)),
    }
}

const LIST_HOSTS_DOC: &str = "Return the hosts found in the hosts file (the ``hosts.file`` option,
``/etc/hosts`` by default) in this format::

    {'<ip addr>': {'aliases': ['alias1', 'alias2', ...], 'comment': '...'}}

Comment lines are listed as ``comment-N: [line]``.

CLI Example:

.. code-block:: bash

    salt '*' hosts.list_hosts
";

async fn list_hosts(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Object(hosts(&call)?))
}

const GET_IP_DOC: &str = "Return the ip associated with the named host, ``''`` when none

CLI Example:

.. code-block:: bash

    salt '*' hosts.get_ip <hostname>
";

async fn get_ip(call: Call) -> Result<Value, ExecError> {
    let host = python::str(call.arg("host"));
    let hosts = hosts(&call)?;
    Ok(json!(
        hosts
            .iter()
            .find(|(_, info)| aliases_of(info).contains(&host))
            .map(|(ip, _)| ip.as_str())
            .unwrap_or("")
    ))
}

const GET_ALIAS_DOC: &str =
    "Return the list of aliases associated with an ip, in the order in which
they appear in the hosts file; ``[]`` when there are none

CLI Example:

.. code-block:: bash

    salt '*' hosts.get_alias <ip addr>
";

async fn get_alias(call: Call) -> Result<Value, ExecError> {
    let ip = python::str(call.arg("ip"));
    let hosts = hosts(&call)?;
    Ok(hosts
        .get(&ip)
        .map(|info| json!(aliases_of(info)))
        .unwrap_or_else(|| json!([])))
}

const HAS_PAIR_DOC: &str = "Return true if the alias is set

CLI Example:

.. code-block:: bash

    salt '*' hosts.has_pair <ip> <alias>
";

async fn has_pair(call: Call) -> Result<Value, ExecError> {
    let ip = python::str(call.arg("ip"));
    Ok(json!(has_pair_in(&hosts(&call)?, &ip, call.arg("alias"))))
}

const SET_HOST_DOC: &str = "Set the host entry in the hosts file for the given ip, this will
overwrite any previous entry for the given ip

If ``alias`` does not include any host names (it is the empty string or contains only
whitespace), all entries for the given IP address are removed.

CLI Example:

.. code-block:: bash

    salt '*' hosts.set_host <ip> <alias>
";

async fn set_host(call: Call) -> Result<Value, ExecError> {
    let path = get_or_create(&call)?;
    if !path.is_file() {
        return Ok(json!(false));
    }
    let ip = python::str(call.arg("ip"));
    let alias = python::str(call.arg("alias"));
    let comment = call.opt_arg("comment").map(python::str);
    let text = read(&path)?;
    write(
        &path,
        &set_host_text(&text, &ip, &alias, comment.as_deref()),
    )?;
    Ok(json!(true))
}

const RM_HOST_DOC: &str = "Remove a host entry from the hosts file

CLI Example:

.. code-block:: bash

    salt '*' hosts.rm_host <ip> <alias>
";

async fn rm_host(call: Call) -> Result<Value, ExecError> {
    let ip = python::str(call.arg("ip"));
    if !has_pair_in(&hosts(&call)?, &ip, call.arg("alias")) {
        return Ok(json!(true));
    }
    let alias = python::str(call.arg("alias"));
    let path = get_or_create(&call)?;
    let text = read(&path)?;
    write(&path, &rm_host_text(&text, &ip, &alias))?;
    Ok(json!(true))
}

const ADD_HOST_DOC: &str = "Add a host to an existing entry, if the entry is not in place then
create it with the given host

CLI Example:

.. code-block:: bash

    salt '*' hosts.add_host <ip> <alias>
";

async fn add_host(call: Call) -> Result<Value, ExecError> {
    let path = get_or_create(&call)?;
    if !path.is_file() {
        return Ok(json!(false));
    }
    let ip = python::str(call.arg("ip"));
    let alias = call.arg("alias");
    let mut hosts = hosts(&call)?;
    if has_pair_in(&hosts, &ip, alias) {
        return Ok(json!(true));
    }
    let entry = hosts.entry(ip).or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(e) = entry
        && let Value::Array(list) = e
            .entry("aliases")
            .or_insert_with(|| Value::Array(Vec::new()))
    {
        list.push(json!(python::str(alias)));
    }
    write(&path, &write_hosts(&hosts))?;
    Ok(json!(true))
}

const SET_COMMENT_DOC: &str = "Set the comment for a host to an existing entry, if the entry is not
in place then return False

CLI Example:

.. code-block:: bash

    salt '*' hosts.set_comment <ip> <comment>
";

async fn set_comment(call: Call) -> Result<Value, ExecError> {
    let path = get_or_create(&call)?;
    if !path.is_file() {
        return Ok(json!(false));
    }
    let ip = python::str(call.arg("ip"));
    let comment = call.arg("comment").clone();
    let mut hosts = hosts(&call)?;
    let Some(Value::Object(info)) = hosts.get_mut(&ip) else {
        return Ok(json!(false));
    };
    if info.get("comment") == Some(&comment) {
        return Ok(json!(true));
    }
    info.insert("comment".into(), comment);
    write(&path, &write_hosts(&hosts))?;
    Ok(json!(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# static table\n127.0.0.1\tlocalhost\n\n::1 localhost ip6-localhost # v6\n10.0.0.1 a b\n10.0.0.1 c\n";

    #[test]
    fn parses_as_salt() {
        assert_eq!(
            Value::Object(parse(SAMPLE)),
            json!({
                "comment-0": ["# static table"],
                "127.0.0.1": {"aliases": ["localhost"]},
                "::1": {"aliases": ["localhost", "ip6-localhost"], "comment": "v6"},
                "10.0.0.1": {"aliases": ["a", "b", "c"]},
            })
        );
    }

    #[test]
    fn writes_merged_entries() {
        let mut hosts = parse(SAMPLE);
        hosts.insert("10.0.0.9".into(), json!({"aliases": ["new"]}));
        assert_eq!(
            write_hosts(&hosts),
            "# static table\n127.0.0.1\t\tlocalhost\n::1\t\tlocalhost ip6-localhost\t\t# v6\n\
             10.0.0.1\t\ta b c\n10.0.0.9\t\tnew\n"
        );
    }

    #[test]
    fn set_host_replaces_first_and_drops_others() {
        assert_eq!(
            set_host_text(SAMPLE, "10.0.0.1", "z", None),
            "# static table\n127.0.0.1\tlocalhost\n\n::1 localhost ip6-localhost # v6\n10.0.0.1\t\tz\n"
        );
        assert_eq!(
            set_host_text("127.0.0.1 localhost", "10.1.1.1", "x y", Some("c")),
            "127.0.0.1 localhost\n10.1.1.1\t\tx y\t\t# c\n"
        );
        assert_eq!(
            set_host_text(SAMPLE, "10.0.0.1", "  ", None),
            "# static table\n127.0.0.1\tlocalhost\n\n::1 localhost ip6-localhost # v6\n"
        );
    }

    #[test]
    fn rm_host_rewrites_the_address_lines() {
        assert_eq!(
            rm_host_text(SAMPLE, "10.0.0.1", "b"),
            "# static table\n127.0.0.1\tlocalhost\n\n::1 localhost ip6-localhost # v6\n10.0.0.1\t\ta \n10.0.0.1\t\tc \n"
        );
        assert_eq!(rm_host_text("10.0.0.1 c # x\n", "10.0.0.1", "c"), "");
        assert_eq!(
            rm_host_text("::1 a b # v6\n", "::1", "a"),
            "::1\t\tb # v6\n"
        );
    }

    #[test]
    fn has_pair_takes_lists() {
        let hosts = parse(SAMPLE);
        assert!(has_pair_in(&hosts, "10.0.0.1", &json!("c")));
        assert!(has_pair_in(&hosts, "10.0.0.1", &json!(["a", "c"])));
        assert!(!has_pair_in(&hosts, "10.0.0.1", &json!(["a", "d"])));
        assert!(!has_pair_in(&hosts, "10.9.9.9", &json!("a")));
    }
}
