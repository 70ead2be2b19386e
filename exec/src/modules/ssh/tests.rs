//! `ssh.*`: fingerprints, parsing and line edits checked against salt 3007.8's own helpers
//! (`salt.modules.ssh._fingerprint`, `_validate_keys`, run in /work/saltvenv's Python on the
//! text below, their answers copied here).

use serde_json::json;

use super::*;

const KEY: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIAUoDpCmN991W1dMAPLAKlFCEr4yLZ9pvEe/yLLOC6hr";

#[test]
fn fingerprints_as_salt_makes_them() {
    assert_eq!(
        fingerprint(KEY, None),
        Ok(Some(
            "80:90:69:6c:c3:35:27:9e:37:46:fb:58:71:d5:fd:06:4d:18:b0:df:cf:65:db:36:49:95:d4:93:33:d6:70:9e".into()
        ))
    );
    assert_eq!(
        fingerprint(KEY, Some("MD5")),
        Ok(Some(
            "4d:45:c4:47:89:05:6b:e5:5b:07:e0:8b:d8:9b:aa:f8".into()
        ))
    );
    // Python accepts set trailing bits, refuses bad padding and foreign characters.
    assert!(fingerprint("AB==", None).is_ok_and(|f| f.is_some()));
    assert_eq!(fingerprint("AAA", None), Ok(None));
    assert_eq!(fingerprint("A@AA", None), Ok(None));
    assert_eq!(
        fingerprint("", None),
        Ok(Some(
            "e3:b0:c4:42:98:fc:1c:14:9a:fb:f4:c8:99:6f:b9:24:27:ae:41:e4:64:9b:93:4c:a4:95:99:1b:78:52:b8:55".into()
        ))
    );
    assert_eq!(
        fingerprint(KEY, Some("whirlpool")),
        Err("The fingerprint_hash_type whirlpool is not supported.".into())
    );
}

#[test]
fn key_files_parse_as_salts_validate_keys() {
    let text = format!(
        "# comment\n\nno-pty,command=\"x\" ssh-ed25519 {KEY} test@host extra\nssh-rsa notbase64! bad\necdsa-sha2-nistp256 AAAA\nssh-rsa AAAA first\n"
    );
    let got = parse_auth_keys(&text, None).unwrap_or_default();
    assert_eq!(
        Value::Object(got),
        json!({
            KEY: {"enc": "ssh-ed25519", "comment": "test@host extra",
                  "options": ["no-pty", "command=\"x\""],
                  "fingerprint": "80:90:69:6c:c3:35:27:9e:37:46:fb:58:71:d5:fd:06:4d:18:b0:df:cf:65:db:36:49:95:d4:93:33:d6:70:9e"},
            "AAAA": {"enc": "ssh-rsa", "comment": "first", "options": [],
                     "fingerprint": "70:9e:80:c8:84:87:a2:41:1e:1e:e4:df:b9:f2:2a:86:14:92:d2:0c:47:65:15:0c:0c:79:4a:bd:70:f8:14:7c"},
        })
    );
}

#[test]
fn lines_formatted_replaced_and_removed() {
    let opts = vec!["no-pty".to_owned(), "from=\"10.0.0.1\"".to_owned()];
    assert_eq!(
        format_auth_line(KEY, "ssh-ed25519", "me", &opts),
        format!("no-pty,from=\"10.0.0.1\" ssh-ed25519 {KEY} me\n")
    );
    assert_eq!(
        format_auth_line("AAAA", "ssh-rsa", "", &[]),
        "ssh-rsa AAAA \n"
    );
    let text = format!("# keep\n\nssh-rsa AAAA one\nssh-ed25519 {KEY} two\n  \n");
    assert_eq!(
        remove_key_lines(&text, "AAAA"),
        format!("# keep\nssh-ed25519 {KEY} two\n")
    );
    assert_eq!(
        replace_key_lines(&text, "AAAA", "ssh-rsa AAAA new\n"),
        format!("# keep\nssh-rsa AAAA new\nssh-ed25519 {KEY} two\n")
    );
}

#[test]
fn key_types_and_paths() {
    assert_eq!(refine_enc("rsa"), Ok("ssh-rsa".into()));
    assert_eq!(refine_enc("ecdsa"), Ok("ecdsa-sha2-nistp256".into()));
    assert_eq!(refine_enc("ed25519"), Ok("ssh-ed25519".into()));
    assert_eq!(
        refine_enc("foo"),
        Err("Incorrect encryption key type 'foo'.".into())
    );
    assert_eq!(
        expand_path("/etc/ssh/keys/%u/%%h", "bob", "/home/bob"),
        Ok("/etc/ssh/keys/bob/%h".into())
    );
    assert_eq!(
        expand_path("%h/.ssh/k", "bob", "/home/bob"),
        Ok("/home/bob/.ssh/k".into())
    );
    assert!(expand_path("%x", "bob", "/h").is_err());
    assert!(expand_path("a%", "bob", "/h").is_err());
}
