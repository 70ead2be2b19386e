//! Unit tests of `archive.extracted`'s pure plan, fed with what the destination holds.

use super::*;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| (*x).to_owned()).collect()
}

#[test]
fn paths_are_checked_in_salts_order() {
    let no_file = |_: &str| false;
    assert_eq!(
        check_paths("srv/app", &no_file, None, None),
        Err("srv/app is not an absolute path".into())
    );
    assert_eq!(
        check_paths("/srv/app/", &|p| p == "/srv/app", None, None),
        Err("/srv/app exists and is not a directory".into())
    );
    assert_eq!(
        check_paths("/srv/app", &no_file, Some("x"), None),
        Err("Value for 'if_missing' is not an absolute path".into())
    );
    assert_eq!(
        check_paths("/srv/app", &no_file, None, Some("/srv/other")),
        Err("Value for 'enforce_ownership_on' must be within /srv/app/".into())
    );
    assert_eq!(
        check_paths("/srv/app", &no_file, Some("/x"), Some("/srv/app/bin")),
        Ok(())
    );
}

#[test]
fn formats_and_trim_output() {
    assert_eq!(archive_format(Some("TAR"), None), Ok("tar".into()));
    assert_eq!(archive_format(None, Some("zip")), Ok("zip".into()));
    assert!(
        archive_format(None, None)
            .unwrap_err()
            .starts_with("Could not guess")
    );
    assert!(
        archive_format(Some("7z"), Some("tar"))
            .unwrap_err()
            .contains("'7z'")
    );
    assert_eq!(check_format("tar", true, false, false), Ok(()));
    assert!(
        check_format("zip", true, false, false)
            .unwrap_err()
            .contains("cmd_unzip")
    );
    assert_eq!(
        check_format("tar", false, false, true),
        Err("The 'password' argument is only supported for zip archives".into())
    );
    assert!(
        check_format("rar", false, false, false)
            .unwrap_err()
            .contains("unrar")
    );
    assert_eq!(trim_output(Some(&json!(true))), Ok(json!(100)));
    assert_eq!(trim_output(None), Ok(json!(false)));
    assert_eq!(trim_output(Some(&json!("5"))), Ok(json!(5)));
    assert_eq!(trim_output(Some(&json!(0))), Ok(json!(0)));
    assert!(trim_output(Some(&json!("many"))).is_err());
}

#[test]
fn list_failure_names_the_workarounds() {
    let msg = list_failure(
        "bad archive.",
        "/var/cache/a.tar",
        "tar",
        false,
        false,
        true,
    );
    assert!(msg.starts_with("bad archive. Additional info follows:\n\narchive location:\n    /var/cache/a.tar\n\nIf the source archive"));
    assert!(msg.ends_with(
        "valid tar archive):\n\n- 'if_missing' must be set\n- Ownership cannot be managed \
         without setting 'enforce_ownership_on'."
    ));
    assert_eq!(
        list_failure("bad.", "/a.zip", "zip", true, false, false),
        "bad. Additional info follows:\n\narchive location:\n    /a.zip"
    );
    assert!(
        list_failure("bad.", "/a.zip", "zip", false, true, true)
            .contains("The following workarounds must be used")
    );
}

#[test]
fn toplevel_and_presence() {
    assert!(
        toplevel_error(true, 2, 0, "tar", "/srv/")
            .unwrap()
            .contains("'tar-bomb'")
    );
    assert!(toplevel_error(true, 1, 1, "zip", "/srv/").is_some());
    assert_eq!(toplevel_error(true, 1, 0, "tar", "/srv/"), None);
    assert_eq!(toplevel_error(false, 3, 2, "tar", "/srv/"), None);
    let wanted = vec![
        ("app/".to_owned(), 'd'),
        ("app/bin".to_owned(), 'f'),
        ("app/link".to_owned(), 'l'),
        ("app/new".to_owned(), 'f'),
        ("app/bin/x".to_owned(), 'f'),
    ];
    let facts = |p: &str| match p {
        "app/" => Found::Dir,
        "app/bin" => Found::Dir,
        "app/link" => Found::Link,
        "app/bin/x" => Found::NotDir,
        _ => Found::Missing,
    };
    assert_eq!(
        presence(&wanted, &facts),
        Ok(Presence {
            missing: true,
            incorrect: s(&["app/bin"]),
        })
    );
    // Under a file that stands where a directory should be: neither missing nor wrong.
    let under_file = vec![("app/".to_owned(), 'd'), ("app/bin/x".to_owned(), 'd')];
    assert_eq!(presence(&under_file, &facts), Ok(Presence::default()));
    let broken = |_: &str| Found::Error("Permission denied (os error 13)".into());
    assert_eq!(
        presence(&wanted, &broken),
        Err("Permission denied (os error 13)".into())
    );
}

#[test]
fn incorrect_paths() {
    let bad = s(&["app/bin"]);
    assert_eq!(
        plan_incorrect(&[], "/srv/", false, false, false),
        Incorrect::Proceed
    );
    assert_eq!(
        plan_incorrect(&bad, "/srv/", false, true, false),
        Incorrect::Proceed
    );
    assert_eq!(
        plan_incorrect(&bad, "/srv/", false, false, true),
        Incorrect::Remove
    );
    let Incorrect::WouldClean(c) = plan_incorrect(&bad, "/srv/", true, true, false) else {
        panic!("test with clean must answer");
    };
    assert!(c.ends_with("would be extracted.\n\n- app/bin"), "{c}");
    let Incorrect::Refuse(c) = plan_incorrect(&bad, "/srv/", true, false, false) else {
        panic!("no force must refuse");
    };
    assert!(c.starts_with("The below paths (relative to /srv/) exist"));
    assert!(c.ends_with("before extracting.\n\n- app/bin"), "{c}");
}

#[test]
fn ownership_targets_and_comments() {
    let dirs = s(&["app/"]);
    let others = s(&["README", "latest"]);
    assert_eq!(
        ownership_targets(None, false, "/srv/", &dirs, &others),
        (s(&["/srv/app/"]), s(&["/srv/README", "/srv/latest"]))
    );
    assert_eq!(
        ownership_targets(Some("/srv/app"), true, "/srv/", &dirs, &others),
        (s(&["/srv/app"]), vec![])
    );
    assert_eq!(
        ownership_targets(Some("/srv/app/f"), false, "/srv/", &dirs, &others),
        (vec![], s(&["/srv/app/f"]))
    );
    assert_eq!(
        would_extract("/a.tar", "/srv/", true, true),
        "Archive /a.tar would be extracted to /srv/, after cleaning destination path(s), \
         due to absence of one or more files/dirs"
    );
}

#[test]
fn reports() {
    let present = Done {
        ownership_updated: true,
        ..Done::default()
    };
    let (result, comment, changes) =
        report(&present, "/a.tar", "/srv/", &json!(false), false, true);
    assert_eq!(result, None);
    assert_eq!(
        comment,
        "All files in archive are already present. Ownership would be updated on one or more \
         files/directories."
    );
    assert!(changes.is_empty());
    let extracted = Done {
        extraction_needed: true,
        contents_missing: true,
        files: s(&["app/"]),
        created_destdir: true,
        enforce_missing: s(&["/srv/app/"]),
        ..Done::default()
    };
    let (result, comment, changes) =
        report(&extracted, "/a.tar", "/srv/", &json!(100), true, false);
    assert_eq!(result, Some(true), "if_missing keeps the result");
    assert_eq!(
        comment,
        "/a.tar extracted to /srv/, due to absence of one or more files/dirs. Output was \
         trimmed to 100 number of lines\n\nWhile trying to enforce user/group ownership, the \
         following paths were missing:\n\n- /srv/app/"
    );
    assert_eq!(
        changes,
        vec![
            ("directories_created", json!(["/srv/"])),
            ("extracted_files", json!(["app/"]))
        ]
    );
    let empty = Done {
        extraction_needed: true,
        enforce_failed: s(&["/srv/x"]),
        ..Done::default()
    };
    let (result, comment, _) = report(&empty, "/a.tar", "/srv/", &json!(false), false, false);
    assert_eq!(result, Some(false));
    assert!(comment.starts_with("No files were extracted from /a.tar\n\nWhile trying"));
}
