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

/// `dnf install` of these packages (`name` or `name-version`) and package files.
pub(super) async fn install(
    call: &Call,
    targets: &[(String, Option<String>)],
    files: &[String],
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
    argv.extend(files.iter().cloned());
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

/// Salt's default `pattern` of `pkg.list_holds`: a package name.
pub(crate) const HOLD_PATTERN: &str = r"[\w+]+(?:[.-][^-]+)*";

/// Salt's `_get_hold` for dnf: the lock in a `dnf versionlock list` line
/// (`vim-enhanced-2:7.4.827-1.fc22.*`), or only the package name with `full=false`.
pub(crate) fn parse_hold(line: &str, pattern: &str, full: bool) -> Option<String> {
    let re = regex::Regex::new(&format!("({pattern}-\\S+)")).ok()?;
    let lock = re.captures(line)?.get(1)?.as_str().to_owned();
    if full {
        return Some(lock);
    }
    let without_arch = lock.rsplit_once('.').map_or(lock.as_str(), |(a, _)| a);
    let without_release = without_arch
        .rsplit_once('-')
        .map_or(without_arch, |(a, _)| a);
    Some(
        without_release
            .rsplit_once('-')
            .map_or(without_release, |(a, _)| a)
            .to_owned(),
    )
}

/// Salt's `_versionlock_pkg`: the package that brings dnf's versionlock plugin.
pub(crate) fn versionlock_pkg(os: &str, osrelease: &str, osmajorrelease: &str) -> &'static str {
    let num = |s: &str| {
        s.split('.')
            .next()
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(0)
    };
    if os.eq_ignore_ascii_case("fedora") {
        if num(osrelease) >= 26 {
            "python3-dnf-plugin-versionlock"
        } else {
            "python3-dnf-plugins-extras-versionlock"
        }
    } else if num(osmajorrelease) >= 8 {
        "python3-dnf-plugin-versionlock"
    } else {
        "python2-dnf-plugin-versionlock"
    }
}

/// Fails unless the versionlock plugin is installed, as Salt's `_check_versionlock`.
async fn check_versionlock(call: &Call) -> Result<(), ExecError> {
    let grain = |k: &str| {
        call.ctx
            .grains()
            .get(k)
            .map(python::str)
            .unwrap_or_default()
    };
    let plugin = versionlock_pkg(&grain("os"), &grain("osrelease"), &grain("osmajorrelease"));
    if list(call).await?.contains_key(plugin) {
        Ok(())
    } else {
        Err(ExecError::invocation(format!(
            "Cannot proceed, {plugin} is not installed."
        )))
    }
}

/// `dnf versionlock list` as locks (`full`) or package names.
pub(super) async fn list_holds(
    call: &Call,
    pattern: &str,
    full: bool,
) -> Result<Vec<String>, ExecError> {
    check_versionlock(call).await?;
    let out = run_cmd(call, &[dnf(), "versionlock", "list"]).await?;
    Ok(out
        .stdout
        .lines()
        .filter_map(|l| parse_hold(l, pattern, full))
        .collect())
}

/// The command that adds (`on`) or deletes versionlocks.
pub(crate) fn versionlock_argv(dnf: &str, on: bool, targets: &[String]) -> Vec<String> {
    let mut argv = vec![dnf.to_owned(), "versionlock".to_owned()];
    if !on {
        argv.push("delete".to_owned());
    }
    argv.extend(targets.iter().cloned());
    argv
}

/// Salt's yumpkg `hold` (`on`) and `unhold` with dnf: `{target: {name, changes, result,
/// comment}}`.
pub(super) async fn hold(
    call: &Call,
    targets: &[String],
    on: bool,
    test: bool,
) -> Result<Map<String, Value>, ExecError> {
    let locks = list_holds(call, HOLD_PATTERN, false).await?;
    let mut ret = Map::new();
    for target in targets {
        let locked = locks.contains(target);
        let (result, comment, changes) = if locked != on {
            (
                Some(true),
                if on {
                    format!("Package {target} is already set to be held.")
                } else {
                    format!("Package {target} is not being held.")
                },
                json!({}),
            )
        } else if test {
            (
                None,
                if on {
                    format!("Package {target} is set to be held.")
                } else {
                    format!("Package {target} is set to be unheld.")
                },
                json!({}),
            )
        } else {
            let argv = versionlock_argv(dnf(), on, std::slice::from_ref(target));
            let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
            if run_cmd(call, &refs).await?.code == 0 {
                if on {
                    (
                        Some(true),
                        format!("Package {target} is now being held."),
                        json!({"new": "hold", "old": ""}),
                    )
                } else {
                    (
                        Some(true),
                        format!("Package {target} is no longer held."),
                        json!({"new": "", "old": "hold"}),
                    )
                }
            } else if on {
                (
                    Some(false),
                    format!("Package {target} was unable to be held."),
                    json!({}),
                )
            } else {
                (
                    Some(false),
                    format!("Package {target} was unable to be unheld."),
                    json!({}),
                )
            }
        };
        ret.insert(
            target.clone(),
            json!({"name": target, "changes": changes, "result": result, "comment": comment}),
        );
    }
    Ok(ret)
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

    /// `dnf versionlock list` lines in the format dnf 4's plugin prints them (written by hand:
    /// dnf is not on this host), read as Salt's `_get_hold` reads them.
    #[test]
    fn versionlock_list_and_commands() {
        let out = "Last metadata expiration check: 0:12:03 ago on Tue 26 Nov 2024 10:01:02 AM UTC.\n\
                   vim-enhanced-2:8.2.2637-20.el9_1.*\n\
                   python3-dnf-plugin-versionlock-0:4.3.0-13.el9.*\n";
        let full: Vec<String> = out
            .lines()
            .filter_map(|l| parse_hold(l, HOLD_PATTERN, true))
            .collect();
        assert_eq!(
            full,
            [
                "vim-enhanced-2:8.2.2637-20.el9_1.*",
                "python3-dnf-plugin-versionlock-0:4.3.0-13.el9.*"
            ]
        );
        let names: Vec<String> = out
            .lines()
            .filter_map(|l| parse_hold(l, HOLD_PATTERN, false))
            .collect();
        assert_eq!(names, ["vim-enhanced", "python3-dnf-plugin-versionlock"]);
        assert_eq!(
            versionlock_argv("dnf", true, &["hello".into()]),
            ["dnf", "versionlock", "hello"]
        );
        assert_eq!(
            versionlock_argv("dnf", false, &["hello".into(), "sl".into()]),
            ["dnf", "versionlock", "delete", "hello", "sl"]
        );
        assert_eq!(
            versionlock_pkg("Rocky", "9.4", "9"),
            "python3-dnf-plugin-versionlock"
        );
        assert_eq!(
            versionlock_pkg("Fedora", "40", "40"),
            "python3-dnf-plugin-versionlock"
        );
        assert_eq!(
            versionlock_pkg("CentOS", "7.9", "7"),
            "python2-dnf-plugin-versionlock"
        );
    }
}
