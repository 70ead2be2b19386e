//! `shadow.*`: hashes checked against Python's `crypt.crypt` (glibc, salt 3007.8's
//! `gen_password`), entries parsed as `spwd` gives them.

use serde_json::json;

use super::*;

#[test]
fn hashes_match_glibc_crypt() {
    // python3 -c "import crypt; print(crypt.crypt('secret', '$6$abcdefgh12345678'))"
    assert_eq!(
        crypt_hash("secret", Some("abcdefgh12345678"), "sha512").ok(),
        Some(
            "$6$abcdefgh12345678$8qry.al/7S2fAQnDPL..k3GVAXostN0YvxqwHlKr6Jsf/74.qDax5ahH0CISuJF.P2fnhZoX0.4l8IwZUur9t1"
                .to_owned()
        )
    );
    // python3 -c "import crypt; print(crypt.crypt('secret', '$5$saltsalt'))"
    assert_eq!(
        crypt_hash("secret", Some("saltsalt"), "sha256").ok(),
        Some("$5$saltsalt$0IyaXrmV7.sGNS6tirgqHLqX/G.FBvgkYA.lpPdS5sA".to_owned())
    );
    let random = crypt_hash("secret", None, "sha512").unwrap_or_default();
    let parts: Vec<&str> = random.split('$').collect();
    assert_eq!((parts[1], parts[2].len()), ("6", 16), "{random}");
    assert_eq!(
        crypt_hash("secret", Some(parts[2]), "sha512").ok(),
        Some(random.clone()),
        "the same salt gives the same hash"
    );
    assert!(
        crypt_hash("secret", None, "md5")
            .err()
            .is_some_and(|e| e.to_string().contains("'md5'"))
    );
}

#[test]
fn entries_read_as_spwd_gives_them() {
    assert_eq!(
        parse_entry("alice:$6$x$y:19000:0:99999:7:::"),
        Some(
            json!({"name": "alice", "passwd": "$6$x$y", "lstchg": 19000, "min": 0,
                    "max": 99999, "warn": 7, "inact": -1, "expire": -1})
        )
    );
    assert_eq!(parse_entry("broken:line"), None);
}
