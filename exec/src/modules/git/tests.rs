//! The pure parts of the `git` module, against what git prints and what Salt makes of it
//! (the module's calls on a real repository are replayed against Salt's recording in
//! `states/tests/git_states.rs`).

use serde_json::json;

use super::*;

#[test]
fn opts_are_split_as_salt_does() {
    assert_eq!(format_opts(&json!(null)).unwrap(), Vec::<String>::new());
    assert_eq!(
        format_opts(&json!("--hard 'a b' --")).unwrap(),
        ["--hard", "a b"]
    );
    assert_eq!(format_opts(&json!(["-b", 5])).unwrap(), ["-b", "5"]);
    assert_eq!(format_opts(&json!(3)).unwrap(), ["3"]);
    assert!(format_opts(&json!("'open")).is_err());
}

#[test]
fn basic_auth_only_for_https() {
    assert_eq!(
        add_http_basic_auth("https://h/r.git", Some("u"), Some("p")).unwrap(),
        "https://u:p@h/r.git"
    );
    assert_eq!(
        add_http_basic_auth("https://h/r.git", Some("u"), None).unwrap(),
        "https://u@h/r.git"
    );
    assert_eq!(
        add_http_basic_auth("file:///r.git", None, None).unwrap(),
        "file:///r.git"
    );
    assert_eq!(
        add_http_basic_auth("http://h/r.git", Some("u"), None),
        Err(ExecError::invocation("Basic Auth only supported for HTTPS"))
    );
    assert_eq!(
        redact_http_basic_auth("fatal: https://u:p@h/r.git not found"),
        "fatal: https://<redacted>@h/r.git not found"
    );
}

#[test]
fn fetch_output_is_grouped_by_kind() {
    let out = "From file:///srv/remote\n   \
               1a2b3c4..5d6e7f8  main       -> origin/main\n \
               * [new branch]      dev        -> origin/dev\n \
               * [new tag]         v2.0       -> v2.0\n \
               t [tag update]      v1.0       -> v1.0\n \
               + 0a1b2c3...4d5e6f7 feature    -> origin/feature  (forced update)";
    assert_eq!(
        Value::Object(parse_fetch(out)),
        json!({
            "updated branches": {"main": {"old": "1a2b3c4", "new": "5d6e7f8"}},
            "new branches": ["dev"],
            "new tags": ["v2.0"],
        })
    );
    // Git marks tag updates and forced updates with `t` and `+`, which Salt's pattern does
    // not take; a bare `[tag update]` is read.
    assert_eq!(
        Value::Object(parse_fetch(" * [tag update]  v1.0  -> v1.0")),
        json!({"updated tags": ["v1.0"]})
    );
    assert!(parse_fetch("").is_empty());
}

#[test]
fn remotes_and_refs_parse() {
    let out = "origin\thttps://u:p@h/r.git (fetch)\norigin\thttps://u:p@h/r.git (push)\n\
               up\tfile:///x (fetch)\nup\tfile:///y (push)\nodd line";
    assert_eq!(
        Value::Object(parse_remotes(out, true)),
        json!({
            "origin": {"fetch": "https://<redacted>@h/r.git", "push": "https://<redacted>@h/r.git"},
            "up": {"fetch": "file:///x", "push": "file:///y"},
        })
    );
    assert_eq!(
        parse_remotes(out, false)["origin"]["fetch"],
        json!("https://u:p@h/r.git")
    );
    let refs = "abc\tHEAD\ndef\trefs/heads/main\n\n123\trefs/tags/v1^{}";
    assert_eq!(
        Value::Object(parse_ls_remote(refs)),
        json!({"HEAD": "abc", "refs/heads/main": "def", "refs/tags/v1^{}": "123"})
    );
}

#[test]
fn status_groups_files_by_state() {
    let out = " M README\0?? new file.txt\0D  gone\0A  added\0MM both\0";
    assert_eq!(
        Value::Object(parse_status(out)),
        json!({
            "modified": ["README"],
            "untracked": ["new file.txt"],
            "deleted": ["gone"],
            "new": ["added"],
            "MM": ["both"],
        })
    );
}

#[test]
fn version_is_the_last_word() {
    assert_eq!(parse_version("git version 2.47.3"), "2.47.3");
    assert_eq!(
        parse_version("git version 2.39.2 (Apple Git-143)"),
        "2.39.2"
    );
    assert_eq!(parse_version("git version 2.41.0.windows.1"), "2.41.0");
    assert_eq!(parse_version(""), "unknown");
}

#[test]
fn identity_becomes_an_ssh_command() {
    assert_eq!(
        ssh_command("/root/.ssh/it's"),
        "ssh -oStrictHostKeyChecking=no -oPasswordAuthentication=no \
         -oKbdInteractiveAuthentication=no -oChallengeResponseAuthentication=no \
         -oBatchMode=yes -i '/root/.ssh/it'\\''s'"
    );
}
