//! Salt's `pkg` beacon: an event when a listed package's status (`installed`, `upgrade`,
//! `not-installed`) differs from the last poll's.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{Beacon, PollFuture, as_list};
use crate::context::{CallContext, PubInfo};

/// The beacon, with each package's last status (Salt's `__context__["beacon.pkg"]`).
#[derive(Default)]
pub(crate) struct Pkg {
    last: BTreeMap<String, String>,
}

/// What was read of one package: its installed version (empty: not installed) and the
/// newer version available (empty: none).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reading {
    pub installed: String,
    pub latest: String,
}

/// The event for one package, updating its last status; none on the first poll.
pub(crate) fn decide(pkg: &str, last: &mut BTreeMap<String, String>, r: &Reading) -> Option<Value> {
    let (status, version) = if r.installed.is_empty() {
        ("not-installed", Value::Null)
    } else if r.latest.is_empty() {
        ("installed", json!(r.installed))
    } else {
        ("upgrade", json!(r.latest))
    };
    let before = last.insert(pkg.to_owned(), status.to_owned());
    match before {
        Some(b) if b != status => Some(json!({"pkg": pkg, "version": version, "status": status})),
        _ => None,
    }
}

fn pkgs(config: &[Value]) -> Vec<String> {
    config
        .iter()
        .filter_map(|i| i.get("pkgs").and_then(Value::as_array))
        .flatten()
        .map(saltq_semantics::python::str)
        .collect()
}

async fn version(ctx: &CallContext, fun: &str, pkg: &str) -> String {
    let mut kw = Map::new();
    if fun == "pkg.latest_version" {
        kw.insert("refresh".into(), Value::Bool(false));
    }
    let out = crate::call(ctx, fun, vec![json!(pkg)], kw, &PubInfo::default()).await;
    match out.ret {
        Value::String(s) if out.retcode == 0 => s,
        _ => String::new(),
    }
}

impl Beacon for Pkg {
    fn validate(&self, config: &Value) -> Result<(), String> {
        let list = as_list(config, "pkg")?;
        let ok = list
            .iter()
            .any(|i| i.get("pkgs").is_some_and(Value::is_array));
        if !ok {
            return Err("Configuration for pkg beacon requires list of pkgs.".into());
        }
        Ok(())
    }

    fn poll<'a>(&'a mut self, config: &'a [Value], ctx: &'a CallContext) -> PollFuture<'a> {
        Box::pin(async move {
            let mut out = Vec::new();
            for pkg in pkgs(config) {
                let installed = version(ctx, "pkg.version", &pkg).await;
                let latest = if installed.is_empty() {
                    String::new()
                } else {
                    version(ctx, "pkg.latest_version", &pkg).await
                };
                let r = Reading { installed, latest };
                out.extend(decide(&pkg, &mut self.last, &r));
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(installed: &str, latest: &str) -> Reading {
        Reading {
            installed: installed.into(),
            latest: latest.into(),
        }
    }

    #[test]
    fn a_status_change_fires() {
        let mut last = BTreeMap::new();
        assert_eq!(
            decide("nginx", &mut last, &r("1.0", "")),
            None,
            "first poll"
        );
        assert_eq!(decide("nginx", &mut last, &r("1.0", "")), None);
        assert_eq!(
            decide("nginx", &mut last, &r("1.0", "1.1")),
            Some(json!({"pkg": "nginx", "version": "1.1", "status": "upgrade"}))
        );
        assert_eq!(
            decide("nginx", &mut last, &r("", "")),
            Some(json!({"pkg": "nginx", "version": null, "status": "not-installed"}))
        );
        assert!(Pkg::default().validate(&json!([{"pkgs": "x"}])).is_err());
    }
}
