//! Whether a `salt://` path or a saltenv name may be used at all: the pure decision, before
//! any file is touched. A path is relative to the saltenv's roots, `/`-separated; it may not
//! be absolute, climb with `..`, or hold a NUL byte. `.` and empty components are dropped.

use crate::FsError;

/// The path in its one normal form (`a/b/c`, no leading, trailing or doubled `/`, no `.`),
/// or why it is refused. `""` (the whole saltenv) is allowed.
pub fn clean(path: &str) -> Result<String, FsError> {
    let refuse = |why| FsError::BadPath {
        path: path.to_owned(),
        why,
    };
    if path.contains('\0') {
        return Err(refuse("it contains a NUL byte"));
    }
    if path.starts_with('/') {
        return Err(refuse(
            "it is absolute: salt:// paths are relative to the file roots",
        ));
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(refuse("it climbs out with '..'")),
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

/// A saltenv name usable as a directory of the minion's cache: not empty, no `/`, not `.` or
/// `..`, no NUL byte.
pub fn check_saltenv(saltenv: &str) -> Result<(), FsError> {
    if saltenv.is_empty()
        || saltenv == "."
        || saltenv == ".."
        || saltenv.contains('/')
        || saltenv.contains('\0')
    {
        return Err(FsError::BadSaltenv(saltenv.to_owned()));
    }
    Ok(())
}

/// Splits Salt's `salt://path?saltenv=env` into the path and the saltenv it names, if any
/// (`salt.utils.url.parse`). A path without the scheme is taken as it is.
pub fn split_url(url: &str) -> (&str, Option<&str>) {
    let path = url.strip_prefix("salt://").unwrap_or(url);
    match path.split_once('?') {
        Some((p, query)) => {
            let env = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("saltenv="))
                .filter(|e| !e.is_empty());
            (p, env)
        }
        None => (path, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised_or_refused_with_the_reason() {
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("hello.txt", Ok("hello.txt")),
            ("web/files/nginx.conf", Ok("web/files/nginx.conf")),
            ("./web//files/./x", Ok("web/files/x")),
            ("web/", Ok("web")),
            ("", Ok("")),
            ("a..b/c..", Ok("a..b/c..")),
            ("../etc/passwd", Err("climbs out with '..'")),
            ("web/../../etc", Err("climbs out with '..'")),
            ("web/..", Err("climbs out with '..'")),
            ("/etc/passwd", Err("is absolute")),
            ("a\0b", Err("NUL byte")),
        ];
        for (input, expected) in cases {
            match (clean(input), expected) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want, "{input:?}"),
                (Err(e), Err(want)) => {
                    let msg = e.to_string();
                    assert!(msg.contains(want), "{input:?}: {msg}");
                    assert!(msg.contains(&format!("{input:?}")), "names the path: {msg}");
                }
                (got, want) => panic!("{input:?}: got {got:?}, expected {want:?}"),
            }
        }
    }

    #[test]
    fn saltenv_names_must_be_one_directory() {
        for ok in ["base", "dev", "feature-1"] {
            assert!(check_saltenv(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "x\0"] {
            assert!(check_saltenv(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn urls_split_into_path_and_saltenv() {
        assert_eq!(split_url("salt://a/b.txt"), ("a/b.txt", None));
        assert_eq!(split_url("salt://a?saltenv=dev"), ("a", Some("dev")));
        assert_eq!(split_url("salt://a?x=1&saltenv=dev"), ("a", Some("dev")));
        assert_eq!(split_url("salt://a?saltenv="), ("a", None));
        assert_eq!(split_url("a/b"), ("a/b", None));
    }
}
