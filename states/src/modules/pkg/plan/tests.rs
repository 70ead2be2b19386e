//! Unit tests of `pkg.installed`'s and `pkg.latest`'s pure plans, fed with the facts.

use super::*;

fn want(items: &[(&str, Option<&str>)]) -> Wanted {
    items
        .iter()
        .map(|(n, v)| ((*n).to_owned(), v.map(str::to_owned)))
        .collect()
}

fn installed(pairs: &[(&str, &str)]) -> Current {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), json!([v])))
        .collect()
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| (*x).to_owned()).collect()
}

#[test]
fn plan_installed_targets_missing_and_unfulfilled_versions() {
    let cur = installed(&[("hello", "2.10-2"), ("curl", "7.88.1-10")]);
    let desired = want(&[
        ("hello", Some("2.10-2")),
        ("curl", Some(">=8.0")),
        ("jq", None),
        ("vim", Some("")),
    ]);
    let plan = plan_installed(&desired, &cur, InstallOpts::default());
    assert_eq!(
        plan.targets,
        want(&[("curl", Some(">=8.0")), ("jq", None), ("vim", Some(""))])
    );
    assert!(plan.to_reinstall.is_empty());
    assert!(plan.version_spec);
    // `allow_updates` lets a newer installed version fulfil `==`.
    let plan = plan_installed(
        &want(&[("hello", Some("2.9"))]),
        &cur,
        InstallOpts {
            allow_updates: true,
            ..InstallOpts::default()
        },
    );
    assert!(plan.is_empty(), "{plan:?}");
}

#[test]
fn plan_installed_reinstall_and_sources() {
    let cur = installed(&[("hello", "2.10-2")]);
    let desired = want(&[
        ("hello", Some("salt://hello.deb")),
        ("jq", Some("/tmp/jq.deb")),
    ]);
    let plan = plan_installed(
        &desired,
        &cur,
        InstallOpts {
            by_sources: true,
            ..InstallOpts::default()
        },
    );
    assert_eq!(plan.targets, want(&[("jq", Some("/tmp/jq.deb"))]));
    assert!(!plan.version_spec);
    assert_eq!(
        all_installed_comment(
            &plan_installed(&want(&[]), &cur, InstallOpts::default()),
            false
        ),
        "All specified packages are already installed"
    );
    let plan = plan_installed(
        &want(&[("hello", Some("2.10-2"))]),
        &cur,
        InstallOpts {
            reinstall: true,
            ..InstallOpts::default()
        },
    );
    assert_eq!(plan.to_reinstall, want(&[("hello", Some("2.10-2"))]));
    let out = installed_test(&plan, false, Map::new());
    assert_eq!(out.result, None);
    assert_eq!(
        out.comment,
        "The following packages would be reinstalled: hello=2.10-2"
    );
    assert_eq!(
        out.changes["hello=2.10-2"],
        json!({"new": "installed", "old": ""})
    );
}

#[test]
fn resolve_latest_falls_back_to_installed() {
    let cur = installed(&[("hello", "2.10-2")]);
    let mut desired = want(&[("hello", Some("latest")), ("jq", Some("latest"))]);
    let latest = wants_latest(&desired, false);
    assert_eq!(latest, names(&["hello", "jq"]));
    assert!(wants_latest(&desired, true).is_empty());
    resolve_latest(
        &mut desired,
        &latest,
        &json!({"hello": "", "jq": "1.6"}),
        &cur,
    );
    assert_eq!(
        desired,
        want(&[("hello", Some("2.10-2")), ("jq", Some("1.6"))])
    );
    // A single package's answer is the bare version.
    let mut one = want(&[("jq", Some("latest"))]);
    resolve_latest(&mut one, &names(&["jq"]), &json!("1.7"), &cur);
    assert_eq!(one, want(&[("jq", Some("1.7"))]));
}

#[test]
fn installed_test_lists_targets_with_installable_versions() {
    let plan = InstallPlan {
        targets: want(&[("jq", None), ("curl", Some("8.0"))]),
        ..InstallPlan::default()
    };
    let installable = Map::from_iter([
        ("jq".to_owned(), json!({"new": "1.6", "old": ""})),
        ("curl".to_owned(), json!({"new": "installed", "old": ""})),
    ]);
    let out = installed_test(&plan, false, installable);
    assert_eq!(
        out.comment,
        "The following packages would be installed/updated: jq, curl"
    );
    assert_eq!(out.changes["jq"]["new"], json!("1.6"));
    let out = installed_test(&plan, true, Map::new());
    assert_eq!(out.changes["curl"], json!({"new": "installed", "old": ""}));
    let (pkgs, sources) = install_args(&plan, false);
    assert_eq!(pkgs, json!([{"jq": null}, {"curl": "8.0"}]));
    assert_eq!(sources, Value::Null);
    let (pkgs, sources) = install_args(&plan, true);
    assert_eq!(pkgs, Value::Null);
    assert_eq!(sources, json!([{"jq": null}, {"curl": "8.0"}]));
}

#[test]
fn installed_report_sorts_modified_failed_and_holds() {
    let desired = want(&[("hello", None), ("jq", Some("1.6")), ("curl", None)]);
    let plan = InstallPlan {
        targets: want(&[("hello", None), ("jq", Some("1.6"))]),
        ..InstallPlan::default()
    };
    let new = installed(&[("hello", "2.10-2"), ("jq", "1.5"), ("curl", "8")]);
    let changes = Map::from_iter([("hello".to_owned(), json!({"new": "2.10-2", "old": ""}))]);
    let holds = Holds {
        modified: vec![json!({
            "name": "hello", "comment": "Package hello is now being held.",
            "changes": {"new": "hold", "old": "install"}, "result": true
        })],
        ..Holds::default()
    };
    let out = installed_report(
        &desired,
        &plan,
        InstallOpts::default(),
        Vec::new(),
        changes,
        &holds,
        &new,
    );
    assert_eq!(out.result, Some(false));
    assert_eq!(
        out.comment,
        "The following packages failed to install/update: jq=1.6\n\
         The following packages were installed/updated: hello\n\
         Package hello is now being held.\n\
         The following packages were already installed: curl"
    );
    assert_eq!(
        out.changes["hello"],
        json!({"new": "2.10-2\nhold", "old": "install"})
    );
}

#[test]
fn installed_report_counts_long_lists_and_reinstalls() {
    let desired = want(&[("libreoffice-core-nogui", None), ("hello", None)]);
    let plan = InstallPlan {
        targets: want(&[("libreoffice-core-nogui", None)]),
        to_reinstall: want(&[("hello", None)]),
        ..InstallPlan::default()
    };
    let new = installed(&[("libreoffice-core-nogui", "7"), ("hello", "2")]);
    let out = installed_report(
        &desired,
        &plan,
        InstallOpts::default(),
        vec!["said by install".into()],
        Map::new(),
        &Holds::default(),
        &new,
    );
    assert_eq!(out.result, Some(false));
    assert_eq!(
        out.comment,
        "said by install\n1 targeted package was installed/updated.\n\
         Reinstall was not successful for package hello."
    );
}

#[test]
fn latest_desired_and_answers_by_name() {
    assert_eq!(latest_desired(None, "hello"), Ok(names(&["hello"])));
    assert_eq!(
        latest_desired(Some(&json!(["jq", {"curl": "8"}])), "x"),
        Ok(names(&["jq", "curl"]))
    );
    assert_eq!(
        latest_desired(Some(&json!([])), "x").unwrap_err().result,
        Some(true)
    );
    assert_eq!(
        latest_desired(Some(&json!({"a": 1})), "x")
            .unwrap_err()
            .comment,
        "Invalidly formatted \"pkgs\" parameter. See minion log."
    );
    assert_eq!(
        by_name(json!("1.6"), "jq"),
        Map::from_iter([("jq".to_owned(), json!("1.6"))])
    );
}

#[test]
fn plan_latest_targets_upgrades_and_reports_unknowns() {
    let desired = names(&["jq", "hello", "curl"]);
    let avail = Map::from_iter([
        ("jq".to_owned(), json!("1.7")),
        ("hello".to_owned(), json!("")),
        ("curl".to_owned(), json!("")),
    ]);
    let cur = Map::from_iter([
        ("jq".to_owned(), json!("1.6")),
        ("hello".to_owned(), json!("2.10")),
        ("curl".to_owned(), json!("")),
    ]);
    let err = plan_latest(&desired, avail.clone(), cur.clone(), true).unwrap_err();
    assert_eq!(err.result, Some(false));
    assert_eq!(err.comment, "No information found for 'curl'.");
    let desired = names(&["jq", "hello"]);
    let plan = plan_latest(&desired, avail.clone(), cur.clone(), true).unwrap();
    assert_eq!(plan.targets, vec![("jq".to_owned(), "1.7".to_owned())]);
    assert_eq!(plan.up_to_date, names(&["hello"]));
    let out = latest_test(&plan);
    assert_eq!(
        out.comment,
        "The following packages would be installed/upgraded: jq\n\
         The following packages are already up-to-date: hello (2.10)"
    );
    assert_eq!(out.changes["jq"], json!({"new": "1.7", "old": "1.6"}));
    let done = plan_latest(&names(&["hello"]), avail, cur, false).unwrap_err();
    assert_eq!(
        done,
        Outcome::new(Some(true), "Package hello is already up-to-date")
    );
}

#[test]
fn latest_report_judges_install_changes() {
    let plan = LatestPlan {
        targets: vec![
            ("jq".to_owned(), "1.7".to_owned()),
            ("curl".to_owned(), "8.1".to_owned()),
        ],
        target_names: names(&["curl", "jq"]),
        up_to_date: names(&["hello"]),
        cur: Map::new(),
    };
    let out = latest_report(&plan, Map::new());
    assert_eq!(
        out,
        Outcome::new(
            Some(false),
            "The following targeted packages failed to update. See debug log for details: \
             (curl, jq). The following packages were already up-to-date: hello"
        )
    );
    let changes = Map::from_iter([
        ("jq".to_owned(), json!({"new": "1.7", "old": "1.6"})),
        ("curl".to_owned(), json!({"new": "8.0", "old": "7"})),
    ]);
    let out = latest_report(&plan, changes);
    assert_eq!(out.result, Some(false));
    assert_eq!(
        out.comment,
        "The following packages failed to update: curl \
         The following packages were successfully installed/upgraded: jq \
         The following packages were already up-to-date: hello"
    );
}
