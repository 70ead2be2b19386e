//! The apt/dpkg side of `pkg`: `dpkg-query` for what is installed, `apt-cache policy` for
//! candidates, `apt-get` for changes, each output parsed as Salt's `aptpkg` parses it.

use std::cmp::Ordering;

use serde_json::{Map, Value, json};

use saltq_semantics::python;

use super::Installed;
use crate::error::ExecError;
use crate::modules::run_cmd_env;
use crate::process::Output;

use crate::spec::Call;

/// What apt-get needs to run unattended, as Salt sets it.
const APT_ENV: &[(&str, &str)] = &[
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("APT_LISTBUGS_FRONTEND", "none"),
    ("APT_LISTCHANGES_FRONTEND", "none"),
];

/// Keeps local configuration files on upgrades, as Salt's `install` does.
const CONF_OPTS: &[&str] = &[
    "-o",
    "DPkg::Options::=--force-confold",
    "-o",
    "DPkg::Options::=--force-confdef",
];

/// dpkg's package lists.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Lists {
    /// Installed (or held) packages.
    pub installed: Installed,
    /// Removed packages whose configuration remains.
    pub removed: Installed,
    /// Packages marked for purge, still installed.
    pub purge_desired: Installed,
}

/// `dpkg-query -W --showformat '${Status} ${Package} ${Version} ${Architecture}\n'` output;
/// foreign-architecture packages get `:arch` on amd64, as in Salt.
pub(crate) fn parse_dpkg(out: &str, osarch: &str) -> Lists {
    let mut lists = Lists::default();
    for line in out.lines() {
        let c: Vec<&str> = line.split_whitespace().collect();
        let [want, _, status, name, version, arch, ..] = c.as_slice() else {
            continue;
        };
        let mut name = (*name).to_owned();
        if *arch != "all" && osarch == "amd64" && osarch != *arch {
            name = format!("{name}:{arch}");
        }
        let list = if (want.contains("install") || want.contains("hold"))
            && status.contains("installed")
        {
            &mut lists.installed
        } else if want.contains("deinstall") {
            &mut lists.removed
        } else if want.contains("purge") && *status == "installed" {
            &mut lists.purge_desired
        } else {
            continue;
        };
        list.entry(name).or_default().push((*version).to_owned());
    }
    lists
}

pub(super) async fn list(call: &Call) -> Result<Lists, ExecError> {
    let osarch = match call.ctx.grains().get("osarch").and_then(Value::as_str) {
        Some(a) => a.to_owned(),
        None => run(call, &["dpkg", "--print-architecture"])
            .await?
            .stdout
            .trim()
            .to_owned(),
    };
    let out = run(
        call,
        &[
            "dpkg-query",
            "--showformat",
            "${Status} ${Package} ${Version} ${Architecture}\n",
            "-W",
        ],
    )
    .await?;
    Ok(parse_dpkg(&out.stdout, &osarch))
}

async fn run(call: &Call, argv: &[&str]) -> Result<Output, ExecError> {
    run_cmd_env(call, argv, None, APT_ENV).await
}

/// Debian's version order (`dpkg --compare-versions`): epoch, upstream version, revision.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let split = |v: &str| {
        let (epoch, rest) = v
            .split_once(':')
            .map_or((0u64, v), |(e, r)| (e.parse().unwrap_or(0), r));
        let (upstream, revision) = rest.rsplit_once('-').unwrap_or((rest, ""));
        (epoch, upstream.to_owned(), revision.to_owned())
    };
    let (ea, ua, ra) = split(a);
    let (eb, ub, rb) = split(b);
    ea.cmp(&eb)
        .then_with(|| verrevcmp(&ua, &ub))
        .then_with(|| verrevcmp(&ra, &rb))
}

/// dpkg's `verrevcmp`: alternating non-digit runs (`~` first, then the end, letters, others)
/// and numbers.
fn verrevcmp(a: &str, b: &str) -> Ordering {
    let order = |c: Option<u8>| -> i32 {
        match c {
            None => 0,
            Some(b'~') => -1,
            Some(c) if c.is_ascii_digit() => 0,
            Some(c) if c.is_ascii_alphabetic() => i32::from(c),
            Some(c) => i32::from(c) + 256,
        }
    };
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        while (i < a.len() && !a[i].is_ascii_digit()) || (j < b.len() && !b[j].is_ascii_digit()) {
            let (ca, cb) = (order(a.get(i).copied()), order(b.get(j).copied()));
            if ca != cb {
                return ca.cmp(&cb);
            }
            i += 1;
            j += 1;
        }
        let num = |s: &[u8], k: &mut usize| {
            let start = *k;
            while *k < s.len() && s[*k].is_ascii_digit() {
                *k += 1;
            }
            let digits = std::str::from_utf8(&s[start..*k])
                .unwrap_or("0")
                .trim_start_matches('0');
            (digits.len(), digits.to_owned())
        };
        let (na, nb) = (num(a, &mut i), num(b, &mut j));
        match na.cmp(&nb) {
            Ordering::Equal => {}
            other => return other,
        }
    }
    Ordering::Equal
}

/// The `Candidate:` of each package in `apt-cache policy` output (`""` for `(none)`).
pub(crate) fn parse_policy(out: &str) -> Map<String, Value> {
    let mut candidates = Map::new();
    let mut current: Option<String> = None;
    for line in out.lines().map(str::trim) {
        if line.ends_with(':') && !line.starts_with("Version table") {
            current = Some(line.trim_end_matches(':').to_owned());
        } else if let (Some(name), Some(rest)) = (&current, line.strip_prefix("Candidate:")) {
            let candidate = rest.trim();
            let candidate = if candidate.eq_ignore_ascii_case("(none)") {
                ""
            } else {
                candidate
            };
            candidates.insert(name.clone(), json!(candidate));
        }
    }
    candidates
}

pub(super) async fn latest(
    call: &Call,
    names: &[String],
    installed: &Installed,
) -> Result<Map<String, Value>, ExecError> {
    let mut argv = vec!["apt-cache", "-q", "policy"];
    argv.extend(names.iter().map(String::as_str));
    let candidates = parse_policy(&run(call, &argv).await?.stdout);
    let show_installed = call
        .kwargs()
        .get("show_installed")
        .is_some_and(saltq_semantics::python::is_true);
    Ok(names
        .iter()
        .map(|name| {
            let candidate = candidates.get(name).map(python::str).unwrap_or_default();
            let value = match installed.get(name) {
                Some(_) if show_installed => candidate,
                Some(have)
                    if have
                        .iter()
                        .any(|v| compare_versions(v, &candidate) != Ordering::Less) =>
                {
                    String::new()
                }
                _ => candidate,
            };
            (name.clone(), json!(value))
        })
        .collect())
}

/// Whether the apt lists are younger than `secs` (Salt's `cache_valid_time`).
pub(super) fn lists_fresh(secs: f64) -> bool {
    std::fs::metadata("/var/lib/apt/lists")
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age.as_secs_f64() < secs)
}

/// `apt-get -q update` output as Salt's `refresh_db` dict, and the sources that failed.
pub(crate) fn parse_update(out: &str) -> (Map<String, Value>, Vec<String>) {
    let mut ret = Map::new();
    let mut errors = Vec::new();
    let size = regex::Regex::new(r" \[.+B\]$").ok();
    for line in out.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let Some(kind) = cols.first() else { continue };
        let mut ident = cols[1..].join(" ");
        let value = if kind.contains("Get") {
            if let Some(re) = &size {
                ident = re.replace(&ident, "").into_owned();
            }
            json!(true)
        } else if kind.contains("Ign") {
            json!(false)
        } else if kind.contains("Hit") {
            Value::Null
        } else if kind.contains("Err") {
            errors.push(ident.clone());
            json!(false)
        } else {
            continue;
        };
        ret.insert(ident, value);
    }
    (ret, errors)
}

pub(super) async fn refresh(call: &Call, failhard: bool) -> Result<Value, ExecError> {
    let out = run(call, &["apt-get", "-q", "update"]).await?;
    if out.code != 0 {
        return Err(ExecError::execution(out.stderr.trim().to_owned()));
    }
    let (ret, errors) = parse_update(&out.stdout);
    if failhard && !errors.is_empty() {
        return Err(ExecError::execution(format!(
            "Error getting repos: {}",
            errors.join(", ")
        )));
    }
    Ok(Value::Object(ret))
}

/// `apt-get --just-print` output as `{name: version}` of the `Conf` lines.
pub(crate) fn parse_just_print(out: &str) -> Value {
    out.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("Conf ")?;
            let (name, rest) = rest.split_once(' ')?;
            let version = rest.strip_prefix('(')?.split(' ').next()?;
            Some((name.to_owned(), json!(version)))
        })
        .collect::<Map<String, Value>>()
        .into()
}

pub(super) async fn upgradable(call: &Call, dist_upgrade: bool) -> Result<Value, ExecError> {
    let action = if dist_upgrade {
        "dist-upgrade"
    } else {
        "upgrade"
    };
    let mut argv = vec!["apt-get", "--just-print", action];
    let repo = call
        .kwargs()
        .get("fromrepo")
        .map(|r| format!("APT::Default-Release={}", python::str(r)));
    if let Some(r) = &repo {
        argv.extend(["-o", r.as_str()]);
    }
    let out = run(call, &argv).await?;
    if out.code != 0 {
        let detail = if out.stderr.is_empty() {
            &out.stdout
        } else {
            &out.stderr
        };
        return Err(ExecError::execution(format!(
            "Failed to get upgrades: {}",
            detail.trim()
        )));
    }
    Ok(parse_just_print(&out.stdout))
}

/// `apt-get install` of these packages (`name` or `name=version`) and package files.
pub(super) async fn install(
    call: &Call,
    targets: &[(String, Option<String>)],
    files: &[String],
) -> Result<Output, ExecError> {
    let mut argv: Vec<String> = ["apt-get", "-q", "-y"].map(String::from).to_vec();
    argv.extend(CONF_OPTS.iter().map(|s| (*s).to_owned()));
    if let Some(repo) = call.opt_arg("fromrepo").filter(|_| files.is_empty()) {
        argv.extend(["-t".to_owned(), python::str(repo)]);
    }
    if saltq_semantics::python::is_true(call.arg("reinstall")) {
        argv.push("--reinstall".into());
    }
    if saltq_semantics::python::is_true(call.arg("downloadonly")) {
        argv.push("--download-only".into());
    }
    if saltq_semantics::python::is_true(call.arg("skip_verify")) {
        argv.push("--allow-unauthenticated".into());
    }
    argv.push("install".into());
    argv.extend(files.iter().cloned());
    argv.extend(targets.iter().map(|(n, v)| match v {
        Some(v) => format!("{n}={v}"),
        None => n.clone(),
    }));
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    run(call, &refs).await
}

pub(super) async fn remove(
    call: &Call,
    names: &[String],
    purge: bool,
) -> Result<Output, ExecError> {
    let mut argv = vec![
        "apt-get",
        "-q",
        "-y",
        if purge { "purge" } else { "remove" },
    ];
    argv.extend(names.iter().map(String::as_str));
    run(call, &argv).await
}

pub(super) async fn upgrade(call: &Call, dist_upgrade: bool) -> Result<Output, ExecError> {
    let mut argv = vec!["apt-get", "-q", "-y"];
    argv.extend(CONF_OPTS);
    argv.push(if dist_upgrade {
        "dist-upgrade"
    } else {
        "upgrade"
    });
    run(call, &argv).await
}

/// `dpkg --get-selections` output as `{state: [package, ...]}`, in the output's order.
pub(crate) fn parse_selections(out: &str) -> Map<String, Value> {
    let mut ret = Map::new();
    for line in out.lines() {
        let mut cols = line.split_whitespace();
        let (Some(pkg), Some(state)) = (cols.next(), cols.next()) else {
            continue;
        };
        if let Value::Array(list) = ret
            .entry(state.to_owned())
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            list.push(json!(pkg));
        }
    }
    ret
}

/// `dpkg --get-selections PATTERN` (every package without a pattern).
pub(super) async fn get_selections(
    call: &Call,
    pattern: Option<&str>,
) -> Result<Map<String, Value>, ExecError> {
    let out = run(call, &["dpkg", "--get-selections", pattern.unwrap_or("*")]).await?;
    Ok(parse_selections(&out.stdout))
}

/// The selection states dpkg knows (`dpkg(1)`).
pub(crate) const SELECTION_STATES: &[&str] = &["install", "hold", "deinstall", "purge"];

/// Salt's `set_selections`: sets each package's selection (`dpkg --set-selections`) unless
/// it already has it; `{package: {old, new}}` for each one set. In test mode nothing is run.
pub(super) async fn set_selections(
    call: &Call,
    selection: &Map<String, Value>,
    test: bool,
) -> Result<Map<String, Value>, ExecError> {
    let bad: Vec<&str> = selection
        .keys()
        .map(String::as_str)
        .filter(|s| !SELECTION_STATES.contains(s))
        .collect();
    if !bad.is_empty() {
        return Err(ExecError::invocation(format!(
            "Invalid state(s): {}",
            bad.join(", ")
        )));
    }
    let mut current: Map<String, Value> = Map::new();
    for (state, pkgs) in get_selections(call, None).await? {
        for p in pkgs.as_array().into_iter().flatten() {
            current.insert(python::str(p), json!(state));
        }
    }
    let mut ret = Map::new();
    for (state, pkgs) in selection {
        let pkgs: Vec<String> = match pkgs {
            Value::Array(a) => a.iter().map(python::str).collect(),
            other => vec![python::str(other)],
        };
        for pkg in pkgs {
            if current.get(&pkg).and_then(Value::as_str) == Some(state.as_str()) || test {
                continue;
            }
            let line = format!("{pkg} {state}");
            let out = run_cmd_env(
                call,
                &["dpkg", "--set-selections"],
                Some(line.as_bytes()),
                APT_ENV,
            )
            .await?;
            // Salt logs a failure and leaves the package out of its answer.
            if out.code == 0 {
                let old = current.get(&pkg).cloned().unwrap_or(Value::Null);
                ret.insert(pkg, json!({"old": old, "new": state}));
            }
        }
    }
    Ok(ret)
}

/// One package's entry of `hold`/`unhold`, as Salt's aptpkg builds it.
fn hold_entry(target: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("name".into(), json!(target));
    m.insert("changes".into(), json!({}));
    m.insert("result".into(), json!(false));
    m.insert("comment".into(), json!(""));
    m
}

/// Salt's aptpkg `hold` (`hold: true`) and `unhold` for each target:
/// `{target: {name, changes, result, comment}}`.
pub(super) async fn hold(
    call: &Call,
    targets: &[String],
    on: bool,
    test: bool,
) -> Result<Map<String, Value>, ExecError> {
    let mut ret = Map::new();
    for target in targets {
        let mut entry = hold_entry(target);
        let sel = get_selections(call, Some(target)).await?;
        let held = sel
            .get("hold")
            .is_some_and(|v| v.as_array().is_some_and(|a| !a.is_empty()));
        let set = |v: Value| (if on { "hold" } else { "install" }, v);
        if !on && sel.is_empty() {
            entry.insert(
                "comment".into(),
                json!(format!("Package {target} does not have a state.")),
            );
        } else if held == on {
            entry.insert("result".into(), json!(true));
            entry.insert(
                "comment".into(),
                json!(if on {
                    format!("Package {target} is already set to be held.")
                } else {
                    format!("Package {target} is already set not to be held.")
                }),
            );
        } else if test {
            entry.insert("result".into(), Value::Null);
            entry.insert(
                "comment".into(),
                json!(if on {
                    format!("Package {target} is set to be held.")
                } else {
                    format!("Package {target} is set not to be held.")
                }),
            );
        } else {
            let (state, pkgs) = set(json!([target]));
            let mut selection = Map::new();
            selection.insert(state.to_owned(), pkgs);
            let changed = set_selections(call, &selection, false).await?;
            let Some(change) = changed.get(target) else {
                return Err(ExecError::execution(format!(
                    "dpkg --set-selections could not set package {target} to {state}"
                )));
            };
            entry.insert("changes".into(), change.clone());
            entry.insert("result".into(), json!(true));
            entry.insert(
                "comment".into(),
                json!(if on {
                    format!("Package {target} is now being held.")
                } else {
                    format!("Package {target} is no longer being held.")
                }),
            );
        }
        ret.insert(target.clone(), Value::Object(entry));
    }
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_version_order() {
        let cases = [
            ("1.0", "1.0", Ordering::Equal),
            ("1.0-1", "1.0-2", Ordering::Less),
            ("1:1.0", "2.0", Ordering::Greater),
            ("1.0~rc1", "1.0", Ordering::Less),
            ("1.0a", "1.0", Ordering::Greater),
            ("1.0+b1", "1.0", Ordering::Greater),
            ("5.2.15-2+b8", "5.2.15-2+b13", Ordering::Less),
            ("1.10", "1.9", Ordering::Greater),
            ("1.0-1~deb12u1", "1.0-1", Ordering::Less),
            ("2:0", "1:9", Ordering::Greater),
        ];
        for (a, b, want) in cases {
            assert_eq!(compare_versions(a, b), want, "{a} vs {b}");
        }
    }

    #[test]
    fn outputs_like_salt() {
        let dpkg = "install ok installed bash 5.2.15-2+b8 amd64\n\
                    install ok installed libc6 2.36-9 i386\n\
                    install ok installed tzdata 2024a-0 all\n\
                    deinstall ok config-files oldpkg 1.0 amd64\n\
                    hold ok installed held 2.0 amd64\n\
                    purge ok installed goner 3.0 amd64\n\
                    unknown ok not-installed ghost <none> amd64\n";
        let lists = parse_dpkg(dpkg, "amd64");
        let names: Vec<&String> = lists.installed.keys().collect();
        assert_eq!(names, ["bash", "held", "libc6:i386", "tzdata"]);
        assert_eq!(lists.removed.get("oldpkg"), Some(&vec!["1.0".to_owned()]));
        assert_eq!(
            lists.purge_desired.get("goner"),
            Some(&vec!["3.0".to_owned()])
        );

        let policy = "bash:\n  Installed: 5.2.15-2+b8\n  Candidate: 5.2.15-2+b13\n  Version table:\n     5.2.15-2+b13 500\nnosuch:\n  Installed: (none)\n  Candidate: (none)\n";
        assert_eq!(
            Value::Object(parse_policy(policy)),
            json!({"bash": "5.2.15-2+b13", "nosuch": ""})
        );

        let update = "Hit:1 http://deb.debian.org/debian bookworm InRelease\n\
                      Get:2 http://deb.debian.org/debian bookworm-updates InRelease [55.4 kB]\n\
                      Ign:3 http://example.invalid/x stable InRelease\n\
                      Err:4 http://example.invalid/y stable InRelease\n  Could not resolve\n\
                      Reading package lists...\n";
        let (ret, errors) = parse_update(update);
        assert_eq!(
            Value::Object(ret),
            json!({
                "http://deb.debian.org/debian bookworm InRelease": null,
                "http://deb.debian.org/debian bookworm-updates InRelease": true,
                "http://example.invalid/x stable InRelease": false,
                "http://example.invalid/y stable InRelease": false,
            })
        );
        assert_eq!(errors, ["http://example.invalid/y stable InRelease"]);

        let just_print = "Inst bash [5.2.15-2+b8] (5.2.15-2+b13 Debian:12.11/stable [amd64])\n\
                          Inst libcap2 [1:2.66-4] (1:2.66-4+deb12u3+b1 Debian-Security:12/stable-security [amd64])\n\
                          Conf bash (5.2.15-2+b13 Debian:12.11/stable [amd64])\n\
                          Conf libcap2 (1:2.66-4+deb12u3+b1 Debian-Security:12/stable-security [amd64])\n";
        assert_eq!(
            parse_just_print(just_print),
            json!({"bash": "5.2.15-2+b13", "libcap2": "1:2.66-4+deb12u3+b1"})
        );
    }
}
