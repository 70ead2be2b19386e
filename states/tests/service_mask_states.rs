//! `service.masked`/`service.unmasked` on this host (root, systemctl): a unit named for the
//! run that does not exist, so masking it only makes and removes its
//! `/etc/systemd/system/<unit>.service -> /dev/null` link (removed again whatever happens).
//!
//! Salt 3007.8's answers (`data/service_mask/cases.json`, `data/service_mask/gen.py`) were
//! recorded here, where systemd is installed but not running: the first two steps are
//! compared with them; from the first real mask on, Salt's module fails on this host
//! ("Cannot run in offline mode. Failed to get information on unit ...": its unit-change
//! check asks the systemd that is not running), so the later steps are checked against the
//! comments of `salt/states/service.py` for a host where masking works.

mod sysrec;

use serde_json::{Map, Value, json};

struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(format!("/etc/systemd/system/{}.service", self.0));
    }
}

fn has_systemctl() -> bool {
    std::process::Command::new("systemctl")
        .arg("--version")
        .output()
        .is_ok()
}

#[tokio::test]
async fn service_mask_states() {
    if !nix::unistd::geteuid().is_root() || !has_systemctl() {
        eprintln!("skipped: masking a unit needs root and systemctl");
        return;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let unit = format!("saltq-mask-{}-{nanos}", std::process::id());
    let _cleanup = Cleanup(unit.clone());
    let rec = sysrec::subst(&sysrec::load("service_mask"), "saltq-rec-unit", &unit);
    let ctx = sysrec::ctx_for(
        &rec,
        std::path::Path::new("/nonexistent"),
        Map::new(),
        json!({}),
    );
    let steps: Vec<&Value> = rec["steps"].as_array().into_iter().flatten().collect();
    let mut failures = Vec::new();
    // Recorded and comparable: before anything is masked.
    for step in steps.iter().take(2) {
        let got = sysrec::run_step(&ctx, step, "/nonexistent").await;
        if got != step["ret"] {
            failures.push(format!(
                "{}:\n  salt:  {}\n  saltq: {got}",
                step["id"], step["ret"]
            ));
        }
    }
    let link = format!("/etc/systemd/system/{unit}.service");
    let run = |fun: &str, args: Value, test: bool| {
        let step = json!({"id": "s", "fun": fun, "args": args, "test": test});
        let ctx = ctx.clone();
        async move { sysrec::run_step(&ctx, &step, "/nonexistent").await }
    };
    let name = json!([{"name": unit}]);
    let masked = json!({"masked": {"old": false, "new": true}});
    let unmasked = json!({"masked": {"old": true, "new": false}});
    let expect = [
        (
            "service.masked",
            false,
            true,
            format!("Service {unit} was masked"),
            masked.clone(),
        ),
        (
            "service.masked",
            false,
            true,
            format!("Service {unit} is already masked"),
            json!({}),
        ),
        (
            "service.unmasked",
            true,
            true,
            format!("Service {unit} would be unmasked"),
            unmasked.clone(),
        ),
        (
            "service.unmasked",
            false,
            false,
            format!("Service {unit} was unmasked"),
            unmasked,
        ),
        (
            "service.unmasked",
            false,
            false,
            format!("Service {unit} was already unmasked"),
            json!({}),
        ),
    ];
    for (fun, test, linked, comment, changes) in expect {
        let got = run(fun, name.clone(), test).await;
        let want = json!({"name": unit, "result": if test { Value::Null } else { json!(true) },
                          "comment": comment, "changes": changes});
        if got != want {
            failures.push(format!(
                "{fun} (test={test}):\n  want:  {want}\n  saltq: {got}"
            ));
        }
        let is_linked = std::fs::read_link(&link).is_ok_and(|t| t.as_os_str() == "/dev/null");
        if is_linked != linked {
            failures.push(format!(
                "after {fun} (test={test}) {link} linked: {is_linked}"
            ));
        }
    }
    // Runtime masking in test mode only (a real one would make /run/systemd/system, which
    // tells Salt and saltq that systemd runs).
    let got = run(
        "service.masked",
        json!([{"name": unit}, {"runtime": true}]),
        true,
    )
    .await;
    assert_eq!(
        got["comment"],
        json!(format!("Service {unit} would be runtime masked"))
    );
    assert_eq!(
        got["changes"],
        json!({"runtime masked": {"old": false, "new": true}})
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
