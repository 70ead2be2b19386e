//! Salt's `disk` module: `usage` and `inodeusage` from `df -P` and `df -iP`, keyed by mount
//! point, values as `df` prints them; `blkid` (the block devices' attributes, for the mount
//! states' `mount_by`).

use serde_json::{Map, Value, json};

use saltq_semantics::python;

use crate::error::ExecError;
use crate::modules::run_cmd;

use crate::spec::{Call, Function, Lit, Param};

/// The `disk` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("disk.blkid", handler!(blkid))
        .params(&[
            Param::opt("device", Lit::None),
            Param::opt("token", Lit::None),
        ])
        .doc(BLKID_DOC),
    Function::new("disk.inodeusage", handler!(inodeusage))
        .params(&[Param::opt("args", Lit::None)])
        .doc(INODEUSAGE_DOC),
    Function::new("disk.usage", handler!(usage))
        .params(&[Param::opt("args", Lit::None)])
        .doc(USAGE_DOC),
];

const BLKID_DOC: &str = "Return block device attributes: UUID, LABEL, etc. This function only works
on systems where blkid is available.

device
    Device name from the system

token
    Any valid token used for the search

CLI Example:

.. code-block:: bash

    salt '*' disk.blkid
    salt '*' disk.blkid /dev/sda
    salt '*' disk.blkid token='UUID=6a38ee5-7235-44e7-8b22-816a403bad5d'
    salt '*' disk.blkid token='TYPE=ext4'
";

async fn blkid(call: Call) -> Result<Value, ExecError> {
    let mut argv = vec!["blkid".to_owned()];
    if let Some(device) = call.opt_arg("device").filter(|v| python::truthy(v)) {
        argv.push(python::str(device));
    } else if let Some(token) = call.opt_arg("token").filter(|v| python::truthy(v)) {
        argv.push("-t".into());
        argv.push(python::str(token));
    }
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = run_cmd(&call, &args).await?;
    if out.code > 0 {
        return Ok(json!({}));
    }
    Ok(Value::Object(crate::modules::mount::parse_blkid(
        &out.stdout,
    )))
}

/// Salt's `_clean_flags`: the `df` flags allowed, joined.
fn flags(call: &Call, caller: &str) -> Result<String, ExecError> {
    let Some(args) = call.opt_arg("args") else {
        return Ok(String::new());
    };
    let text = python::str(args);
    let allowed = "aBhHiklPtTxv";
    match text.chars().find(|c| !allowed.contains(*c)) {
        Some(_) => Err(ExecError::execution(format!(
            "Invalid flag passed to {caller}"
        ))),
        None => Ok(text),
    }
}

/// Runs `df` with these flags: its output.
async fn df(call: &Call, base: &str, caller: &str) -> Result<String, ExecError> {
    let extra = flags(call, caller)?;
    let extra = (!extra.is_empty()).then(|| format!("-{extra}"));
    let mut argv = vec!["df", base];
    argv.extend(extra.as_deref());
    Ok(run_cmd(call, &argv).await?.stdout)
}

/// `df -P` output as Salt's `disk.usage` dict. A filesystem name with spaces (or printed on
/// a line of its own) is joined back, as Salt does.
pub(crate) fn parse_usage(out: &str) -> Value {
    let mut ret = Map::new();
    let mut pending: Option<String> = None;
    for line in out
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("Filesystem"))
    {
        let line = match pending.take() {
            Some(old) => format!("{old} {line}"),
            None => line.to_owned(),
        };
        let mut comps: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        if comps.len() == 1 {
            pending = Some(line);
            continue;
        }
        while comps.len() >= 2 && !comps[1].chars().all(|c| c.is_ascii_digit()) {
            let joined = format!("{} {}", comps[0], comps[1]);
            comps.splice(0..2, [joined]);
        }
        if comps.len() >= 6 {
            ret.insert(
                comps[5].clone(),
                json!({"filesystem": comps[0], "1K-blocks": comps[1], "used": comps[2],
                       "available": comps[3], "capacity": comps[4]}),
            );
        }
    }
    Value::Object(ret)
}

/// `df -iP` output as Salt's `disk.inodeusage` dict.
pub(crate) fn parse_inodes(out: &str) -> Value {
    let mut ret = Map::new();
    for line in out.lines().filter(|l| !l.starts_with("Filesystem")) {
        let c: Vec<&str> = line.split_whitespace().collect();
        if c.len() >= 6 {
            ret.insert(
                c[5].to_owned(),
                json!({"inodes": c[1], "used": c[2], "free": c[3], "use": c[4], "filesystem": c[0]}),
            );
        }
    }
    Value::Object(ret)
}

const USAGE_DOC: &str = "Return the usage of the mounted filesystems, as ``df -P`` reports it:
``{mount point: {filesystem, 1K-blocks, used, available, capacity}}``. ``args`` adds ``df``
flags (any of ``aBhHiklPtTxv``).

CLI Example:

.. code-block:: bash

    salt '*' disk.usage
";

async fn usage(call: Call) -> Result<Value, ExecError> {
    if !std::path::Path::new("/etc/mtab").is_file() {
        return Ok(json!({}));
    }
    Ok(parse_usage(&df(&call, "-P", "disk.usage").await?))
}

const INODEUSAGE_DOC: &str = "Return the inode usage of the mounted filesystems, as ``df -iP``
reports it: ``{mount point: {inodes, used, free, use, filesystem}}``

CLI Example:

.. code-block:: bash

    salt '*' disk.inodeusage
";

async fn inodeusage(call: Call) -> Result<Value, ExecError> {
    Ok(parse_inodes(&df(&call, "-iP", "disk.inodeusage").await?))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testutil::{check, run};

    #[test]
    fn df_output_like_salt() {
        // This machine's `df -P`, and what salt 3007.8's disk.usage made of it.
        let out = "Filesystem              1024-blocks     Used Available Capacity Mounted on\n\
                   devtmpfs                   12331664        0  12331664       0% /dev\n\
                   /dev/vda                  264212084 35556228  59729660      38% /\n\
                   my share                          4        0         4       0% /mnt/x\n\
                   very-long-device-name\n          10 1 9 10% /mnt/y\n";
        assert_eq!(
            parse_usage(out),
            json!({
                "/dev": {"filesystem": "devtmpfs", "1K-blocks": "12331664", "used": "0", "available": "12331664", "capacity": "0%"},
                "/": {"filesystem": "/dev/vda", "1K-blocks": "264212084", "used": "35556228", "available": "59729660", "capacity": "38%"},
                "/mnt/x": {"filesystem": "my share", "1K-blocks": "4", "used": "0", "available": "4", "capacity": "0%"},
                "/mnt/y": {"filesystem": "very-long-device-name", "1K-blocks": "10", "used": "1", "available": "9", "capacity": "10%"},
            })
        );
        assert_eq!(
            parse_inodes(
                "Filesystem Inodes IUsed IFree IUse% Mounted on\ndevtmpfs 3082916 114 3082802 1% /dev\n"
            ),
            json!({"/dev": {"inodes": "3082916", "used": "114", "free": "3082802", "use": "1%", "filesystem": "devtmpfs"}})
        );
    }

    #[tokio::test]
    async fn on_this_host() {
        let out = run("disk.usage", json!([])).await;
        let root = &out.ret["/"];
        let keys: Vec<&String> = root
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(
            keys,
            ["filesystem", "1K-blocks", "used", "available", "capacity"]
        );
        let out = run("disk.inodeusage", json!([])).await;
        let keys: Vec<&String> = out.ret["/"]
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(keys, ["inodes", "used", "free", "use", "filesystem"]);
        let out = run("disk.usage", json!(["k"])).await;
        assert!(out.ret.get("/").is_some());
        check(
            "disk.usage",
            json!(["z"]),
            json!({}),
            json!("ERROR: Invalid flag passed to disk.usage"),
            1,
        )
        .await;
    }
}
