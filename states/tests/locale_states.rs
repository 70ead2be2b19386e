//! `locale.system` and `locale.present` replayed against Salt 3007.8
//! (`data/locale/cases.json`, recorded by `data/locale/gen.py`) on Debian without a running
//! systemd: the system locale is `/etc/default/locale`, generating one enables it in
//! `/etc/locale.gen` and runs `locale-gen`.
//!
//! The whole sequence changes those files and builds `/usr/lib/locale/locale-archive`, so it
//! runs only with `SALTQ_TEST_LOCALE=1`, as root, on a host like the recording's (only C,
//! C.utf8 and POSIX generated, no locale archive, no `LANG=` in `/etc/default/locale`); a
//! guard puts all three back whatever happens. Otherwise the steps that change nothing on
//! such a host are replayed (`test=True`, and locales already present).

mod sysrec;

use std::path::Path;

use serde_json::{Map, Value, json};

const ARCHIVE: &str = "/usr/lib/locale/locale-archive";
const ETC: [&str; 2] = ["/etc/default/locale", "/etc/locale.gen"];
/// The steps that change nothing on a host like the recording's, in its first state.
const READ_ONLY: [&str; 5] = [
    "system_test",
    "present_c",
    "present_c_spelled",
    "present_test",
    "unsupported_test",
];

/// Puts the /etc files back and removes the archive `locale-gen` built.
struct Restore(Vec<(String, String)>);

impl Drop for Restore {
    fn drop(&mut self) {
        for (path, text) in &self.0 {
            let _ = std::fs::write(path, text);
        }
        let _ = std::fs::remove_file(ARCHIVE);
    }
}

/// Why this host is not like the recording's, if it is not.
fn unlike_recording() -> Option<String> {
    let listed = std::process::Command::new("locale")
        .arg("-a")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if listed.split_whitespace().collect::<Vec<_>>() != ["C", "C.utf8", "POSIX"] {
        return Some(format!("locale -a lists {listed:?}, not C, C.utf8, POSIX"));
    }
    if Path::new(ARCHIVE).exists() {
        return Some(format!("{ARCHIVE} exists"));
    }
    let default = std::fs::read_to_string(ETC[0]).unwrap_or_default();
    if default.lines().any(|l| l.starts_with("LANG=")) {
        return Some(format!("{} sets LANG", ETC[0]));
    }
    let enabled = std::fs::read_to_string(ETC[1]).unwrap_or_default();
    if !enabled.lines().any(|l| l == "# en_US.UTF-8 UTF-8") {
        return Some(format!(
            "{} does not have en_US.UTF-8 commented out",
            ETC[1]
        ));
    }
    for tool in ["locale-gen", "update-locale"] {
        if !Path::new("/usr/sbin").join(tool).exists() {
            return Some(format!("no {tool}"));
        }
    }
    None
}

fn only(rec: &Value, ids: &[&str]) -> Value {
    let mut rec = rec.clone();
    if let Some(Value::Array(steps)) = rec.get_mut("steps") {
        steps.retain(|s| ids.iter().any(|id| s["id"] == *id));
    }
    rec
}

#[tokio::test]
async fn locale_states_match_salt() {
    if Path::new("/run/systemd/system").is_dir() {
        eprintln!("skipped: systemd runs here; the recording is of a host without it");
        return;
    }
    if let Some(why) = unlike_recording() {
        eprintln!("skipped: this host is not like the recording's: {why}");
        return;
    }
    let rec = sysrec::load("locale");
    let dir = sysrec::scratch(&rec);
    let ctx = sysrec::ctx_for(&rec, dir.path(), Map::new(), json!({}));
    if std::env::var_os("SALTQ_TEST_LOCALE").is_none() {
        eprintln!(
            "replaying only the steps that change nothing: set SALTQ_TEST_LOCALE=1 to let this \
             test change /etc/default/locale, /etc/locale.gen and the locale archive (all put back)"
        );
        let rec = only(&rec, &READ_ONLY);
        let failures = sysrec::replay(&rec, &ctx, dir.path(), &[]).await;
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert_eq!(sysrec::steps(&rec), READ_ONLY.len());
        return;
    }
    let saved: Vec<(String, String)> = ETC
        .iter()
        .map(|p| {
            (
                (*p).to_owned(),
                std::fs::read_to_string(p).unwrap_or_default(),
            )
        })
        .collect();
    let _restore = Restore(saved);
    let mut failures = sysrec::replay(&rec, &ctx, dir.path(), &[]).await;
    for (path, want) in rec["etc"].as_object().into_iter().flatten() {
        let got = std::fs::read_to_string(path).unwrap_or_default();
        if Some(got.as_str()) != want.as_str() {
            failures.push(format!("{path}:\n  salt:\n{want}\n  saltq:\n{got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(sysrec::steps(&rec), 13);
}
