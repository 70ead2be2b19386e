//! Salt's `sysctl` state module (`salt/states/sysctl.py`): `sysctl.present` sets a kernel
//! parameter now and persists it in a config file (`config`, else `sysctl.default_config`),
//! through `sysctl.show`, `sysctl.get` and `sysctl.persist`.

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param};
use saltq_semantics::python;

use super::{Ret, StateCall, StateError, StateFunction, exec, state_handler};

/// The `sysctl` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[StateFunction {
    name: "sysctl.present",
    params: &[
        Param::req("name"),
        Param::req("value"),
        Param::opt("config", Lit::None),
    ],
    kwargs: false,
    handler: state_handler!(present),
}];

/// Python's `re.sub(" +|\t+", " ", s)`: runs of spaces, and runs of tabs, as one space.
fn squeeze(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev: Option<char> = None;
    for c in s.chars() {
        if (c == ' ' || c == '\t') && prev == Some(c) {
            continue;
        }
        prev = Some(c);
        out.push(if c == '\t' { ' ' } else { c });
    }
    // A tab run right after a space run (or the reverse) stays two spaces, as in Python.
    out
}

async fn present(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let value = python::str(call.arg("value").unwrap_or(&Value::Null));
    let mut ret = Ret::new(&name);
    let config = match call.arg("config") {
        Some(c) => python::str(c),
        None => python::str(&exec(&call, "sysctl.default_config", vec![], Map::new()).await?),
    };
    if call.test {
        let configured = exec(
            &call,
            "sysctl.show",
            vec![],
            Map::from_iter([("config_file".to_owned(), json!(config))]),
        )
        .await?;
        if configured.is_null() {
            ret.result = None;
            ret.comment = format!(
                "Sysctl option {name} might be changed, we failed to check config file at \
                 {config}. The file is either unreadable, or missing."
            );
            return Ok(ret);
        }
        let in_config = match &configured {
            Value::Object(m) => m.contains_key(&name),
            Value::Array(a) => a.iter().any(|v| python::str(v) == name),
            _ => false,
        };
        let current = python::str(&exec(&call, "sysctl.get", vec![json!(name)], Map::new()).await?);
        if !current.is_empty() {
            if in_config {
                let want: Vec<&str> = value.split_whitespace().collect();
                let have: Vec<&str> = current.split_whitespace().collect();
                if want == have {
                    ret.comment = format!("Sysctl value {name} = {value} is already set");
                    return Ok(ret);
                }
            } else if squeeze(&current) != squeeze(&value) {
                ret.result = None;
                ret.comment = format!("Sysctl option {name} set to be changed to {value}");
                return Ok(ret);
            } else {
                ret.result = None;
                ret.comment = format!(
                    "Sysctl value is currently set on the running system but not in a config \
                     file. Sysctl option {name} set to be changed to {value} in config file."
                );
                return Ok(ret);
            }
        } else if in_config {
            ret.result = None;
            ret.comment = format!(
                "Sysctl value {name} is present in configuration file but is not present in \
                 the running config. The value {name} is set to be changed to {value}"
            );
            return Ok(ret);
        }
        ret.result = None;
        ret.comment = format!("Sysctl option {name} would be changed to {value}");
        return Ok(ret);
    }
    let update = match exec(
        &call,
        "sysctl.persist",
        vec![json!(name), json!(value), json!(config)],
        Map::new(),
    )
    .await
    {
        Ok(v) => python::str(&v),
        Err(e) => {
            ret.result = Some(false);
            ret.comment = format!("Failed to set {name} to {value}: {}", e.0);
            return Ok(ret);
        }
    };
    if update == "Updated" {
        // Salt reports the value as given (an integer stays an integer).
        let given = call.arg("value").cloned().unwrap_or(Value::Null);
        ret.changes.insert(name.clone(), given);
        ret.comment = format!("Updated sysctl value {name} = {value}");
    } else if update == "Already set" {
        ret.comment = format!("Sysctl value {name} = {value} is already set");
    }
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::squeeze;

    #[test]
    fn squeeze_is_pythons_sub() {
        assert_eq!(squeeze("4096   87380\t\t1"), "4096 87380 1");
        assert_eq!(squeeze("a \tb"), "a  b");
    }
}
