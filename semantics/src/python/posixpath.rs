//! Python's `posixpath` (`os.path` on Linux): `join`, `dirname` and `basename`, as Salt's
//! `file.join`/`file.dirname`/`file.basename` answer them.

/// `os.path.join(a, *p)`: an absolute part discards what came before; a slash is added
/// between parts unless the part before ends with one.
pub fn join<S: AsRef<str>>(parts: &[S]) -> String {
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        let part = part.as_ref();
        if part.starts_with('/') || i == 0 {
            out = part.to_owned();
        } else if out.is_empty() || out.ends_with('/') {
            out.push_str(part);
        } else {
            out.push('/');
            out.push_str(part);
        }
    }
    out
}

/// `os.path.dirname(p)`: everything before the last slash, with trailing slashes removed
/// unless it is all slashes.
pub fn dirname(p: &str) -> String {
    let head = match p.rfind('/') {
        Some(i) => &p[..=i],
        None => "",
    };
    if !head.is_empty() && head.chars().any(|c| c != '/') {
        head.trim_end_matches('/').to_owned()
    } else {
        head.to_owned()
    }
}

/// `os.path.basename(p)`: everything after the last slash.
pub fn basename(p: &str) -> String {
    match p.rfind('/') {
        Some(i) => p[i + 1..].to_owned(),
        None => p.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers recorded from Python 3.11's `posixpath`.
    #[test]
    fn answers_as_python() {
        assert_eq!(join(&["/", "usr", "local", "bin"]), "/usr/local/bin");
        assert_eq!(join(&["a/", "b", "/c", "d"]), "/c/d");
        assert_eq!(join(&["", "a", ""]), "a/");
        assert_eq!(join(&["a"]), "a");
        assert_eq!(dirname("test/path/filename.config"), "test/path");
        assert_eq!(dirname("/a//b"), "/a");
        assert_eq!(dirname("///x"), "///");
        assert_eq!(dirname("x"), "");
        assert_eq!(dirname("a/b/"), "a/b");
        assert_eq!(basename("test/test.config"), "test.config");
        assert_eq!(basename("a/b/"), "");
    }
}
