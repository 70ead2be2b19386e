//! The dnf/rpm side of `pkg`: `rpm -qa` for what is installed, `dnf list` for what is
//! available, `dnf` (or `yum`) for changes, parsed as Salt's `yumpkg` does.

use serde_json::{Map, Value, json};

use saltq_semantics::python;

use super::Installed;
use crate::error::ExecError;
use crate::modules::run_cmd;
use crate::process::Output;
use crate::spec::Call;

/// `rpm -qa --queryformat` giving `name_|-epoch_|-version_|-release_|-arch` lines.
const QUERYFORMAT: &str = "%{NAME}_|-%{EPOCH}_|-%{VERSION}_|-%{RELEASE}_|-%{ARCH}\\n";

fn dnf() -> &'static str {
    if crate::modules::cmd::which_path("dnf").is_some() {
        "dnf"
    } else {
        "yum"
    }
}

/// Whether a package of this architecture is native here (no `.arch` suffix in its name).
fn native_arch(arch: &str, cpuarch: &str) -> bool {
    arch == "noarch" || arch == cpuarch || (cpuarch == "x86_64" && arch == "amd64")
}

/// `rpm -qa` output as installed packages: `[epoch:]version-release`, foreign architectures
/// as `name.arch`.
pub(crate) fn parse_rpm(out: &str, cpuarch: &str) -> Installed {
    let mut pkgs = Installed::new();
    for line in out.lines() {
        let f: Vec<&str> = line.split("_|-").collect();
        let [name, epoch, version, release, arch] = f.as_slice() else {
            continue;
        };
        if *name == "gpg-pubkey" {
            continue;
        }
        let epoch = if *epoch == "(none)" || *epoch == "0" {
            String::new()
        } else {
            format!("{epoch}:")
        };
        let name = if native_arch(arch, cpuarch) {
            (*name).to_owned()
        } else {
            format!("{name}.{arch}")
        };
        pkgs.entry(name)
            .or_default()
            .push(format!("{epoch}{version}-{release}"));
    }
    pkgs
}

pub(super) async fn list(call: &Call) -> Result<Installed, ExecError> {
    let cpuarch = call
        .ctx
        .grains()
        .get("cpuarch")
        .and_then(Value::as_str)
        .map_or_else(|| std::env::consts::ARCH.to_owned(), str::to_owned);
    let out = run_cmd(call, &["rpm", "-qa", "--queryformat", QUERYFORMAT]).await?;
    Ok(parse_rpm(&out.stdout, &cpuarch))
}

/// `dnf list` output (`name.arch  [epoch:]version-release  repo` rows) as `{name: version}`,
/// the last row of a name winning (dnf sorts older first).
pub(crate) fn parse_list(out: &str) -> Map<String, Value> {
    let mut ret = Map::new();
    for line in out.lines() {
        let c: Vec<&str> = line.split_whitespace().collect();
        let [name_arch, version, _repo, ..] = c.as_slice() else {
            continue;
        };
        let Some((name, _arch)) = name_arch.rsplit_once('.') else {
            continue;
        };
        if !version.chars().next().is_some_and(|ch| ch.is_ascii_digit()) {
            continue;
        }
        ret.insert(name.to_owned(), json!(version.trim_start_matches("0:")));
    }
    ret
}

pub(super) async fn latest(
    call: &Call,
    names: &[String],
    installed: &Installed,
) -> Result<Map<String, Value>, ExecError> {
    let mut out = Map::new();
    for name in names {
        let which = if installed.contains_key(name) {
            "--upgrades"
        } else {
            "--available"
        };
        let listed = run_cmd(call, &[dnf(), "-q", "list", which, name]).await?;
        let found = parse_list(&listed.stdout);
        out.insert(
            name.clone(),
            found.get(name).cloned().unwrap_or_else(|| json!("")),
        );
    }
    Ok(out)
}

pub(super) async fn refresh(call: &Call) -> Result<Value, ExecError> {
    run_cmd(call, &[dnf(), "-q", "clean", "expire-cache"]).await?;
    let out = run_cmd(call, &[dnf(), "-q", "check-update"]).await?;
    match out.code {
        0 | 100 => Ok(Value::Bool(true)),
        1 => Ok(Value::Bool(false)),
        code => Err(ExecError::execution(format!(
            "Unexpected return code {code} from check-update: {}",
            out.stderr.trim()
        ))),
    }
}

pub(super) async fn upgradable(call: &Call) -> Result<Value, ExecError> {
    let out = run_cmd(call, &[dnf(), "-q", "list", "--upgrades"]).await?;
    if out.code != 0 {
        return Err(ExecError::execution(format!(
            "Failed to get upgrades: {}",
            out.stderr.trim()
        )));
    }
    Ok(Value::Object(parse_list(&out.stdout)))
}

pub(super) async fn install(
    call: &Call,
    targets: &[(String, Option<String>)],
) -> Result<Output, ExecError> {
    let mut argv: Vec<String> = vec![dnf().to_owned(), "-y".into()];
    if let Some(repo) = call.opt_arg("fromrepo") {
        argv.push(format!("--repo={}", python::str(repo)));
    }
    if saltq_semantics::python::is_true(call.arg("skip_verify")) {
        argv.push("--nogpgcheck".into());
    }
    argv.push(
        if saltq_semantics::python::is_true(call.arg("reinstall")) {
            "reinstall"
        } else {
            "install"
        }
        .into(),
    );
    argv.extend(targets.iter().map(|(n, v)| match v {
        Some(v) => format!("{n}-{v}"),
        None => n.clone(),
    }));
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    run_cmd(call, &refs).await
}

pub(super) async fn remove(call: &Call, names: &[String]) -> Result<Output, ExecError> {
    let mut argv = vec![dnf(), "-y", "remove"];
    argv.extend(names.iter().map(String::as_str));
    run_cmd(call, &argv).await
}

pub(super) async fn upgrade(call: &Call) -> Result<Output, ExecError> {
    run_cmd(call, &[dnf(), "-y", "upgrade"]).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpm_and_dnf_outputs() {
        let rpm = "bash_|-(none)_|-5.1.8_|-6.el9_|-x86_64\n\
                   glibc_|-(none)_|-2.34_|-83.el9_|-i686\n\
                   tzdata_|-(none)_|-2024a_|-1.el9_|-noarch\n\
                   shadow-utils_|-2_|-4.9_|-8.el9_|-x86_64\n\
                   gpg-pubkey_|-(none)_|-fd431d51_|-4ae0493b_|-(none)\n";
        let pkgs = parse_rpm(rpm, "x86_64");
        let shown: Vec<(String, String)> =
            pkgs.iter().map(|(k, v)| (k.clone(), v.join(","))).collect();
        assert_eq!(
            shown,
            [
                ("bash".into(), "5.1.8-6.el9".into()),
                ("glibc.i686".into(), "2.34-83.el9".into()),
                ("shadow-utils".into(), "2:4.9-8.el9".into()),
                ("tzdata".into(), "2024a-1.el9".into()),
            ]
        );
        let list = "Available Upgrades\nbash.x86_64      5.1.8-9.el9     baseos\nkernel.x86_64   0:5.14.0-427.el9  baseos\n";
        assert_eq!(
            Value::Object(parse_list(list)),
            json!({"bash": "5.1.8-9.el9", "kernel": "5.14.0-427.el9"})
        );
    }
}
