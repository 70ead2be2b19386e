//! `file.replace` and `file.search`: Python-style regular expressions over a whole file,
//! Salt's flags, backup, dry run, append/prepend when not found, and its diff of the change.

use std::fs;
use std::path::{Path, PathBuf};

use regex::bytes::{Regex, RegexBuilder};
use serde_json::Value;

use saltq_semantics::python::{self, truthy};

use super::expand_user;
use crate::difflib::{split_lines, unified_diff};
use crate::error::ExecError;

use crate::spec::{Call, Lit, Param};

/// `file.replace`'s signature in salt 3007.8.
pub(super) const PARAMS: &[Param] = &[
    Param::req("path"),
    Param::req("pattern"),
    Param::req("repl"),
    Param::opt("count", Lit::Int(0)),
    Param::opt("flags", Lit::Int(8)),
    Param::opt("bufsize", Lit::Int(1)),
    Param::opt("append_if_not_found", Lit::Bool(false)),
    Param::opt("prepend_if_not_found", Lit::Bool(false)),
    Param::opt("not_found_content", Lit::None),
    Param::opt("backup", Lit::Str(".bak")),
    Param::opt("dry_run", Lit::Bool(false)),
    Param::opt("search_only", Lit::Bool(false)),
    Param::opt("show_changes", Lit::Bool(true)),
    Param::opt("ignore_if_missing", Lit::Bool(false)),
    Param::opt("preserve_inode", Lit::Bool(true)),
    Param::opt("backslash_literal", Lit::Bool(false)),
];

pub(super) const DOC: &str = "Replace occurrences of a regular expression in a file. With
``show_changes`` (the default) the diff of the change is returned, else ``True`` when
something changed and ``False`` when nothing did.

path
    The file; a symlink is followed.

pattern
    A regular expression (Python syntax, without look-around or back-references).

repl
    The replacement; ``\\1`` and ``\\g<name>`` refer to groups.

count: 0
    Replace at most this many occurrences; 0 means all.

flags: 8
    Python ``re`` flags: a list of names (``[MULTILINE, IGNORECASE]``) or their sum as an
    integer. 8 is ``MULTILINE``.

bufsize: 1
    Accepted for compatibility: the whole file is processed at once.

append_if_not_found / prepend_if_not_found: False
    When the pattern is not found, add ``not_found_content`` (default ``repl``) at the end or
    the start of the file.

backup: .bak
    The suffix of the backup copy made before changing the file; ``False`` for none.

dry_run: False
    Change nothing; return what would change.

search_only: False
    Return whether the pattern is found, changing nothing.

ignore_if_missing: False
    Return ``False`` for a missing file instead of failing.

backslash_literal: False
    Take backslashes in ``repl`` literally.

CLI Examples:

.. code-block:: bash

    salt '*' file.replace /etc/httpd/httpd.conf pattern='LogLevel warn' repl='LogLevel info'
    salt '*' file.replace /some/file pattern='before' repl='after' flags='[MULTILINE, IGNORECASE]'
";

pub(super) const SEARCH_DOC: &str = "Return ``True`` if a regular expression matches in a file. The
arguments are those of ``file.replace``; ``multiline=True`` adds the ``MULTILINE`` flag.

CLI Example:

.. code-block:: bash

    salt '*' file.search /etc/crontab 'mymaintenance.sh'
";

/// Python's `re` flag values.
const FLAG_NAMES: &[(&str, u32)] = &[
    ("TEMPLATE", 1),
    ("IGNORECASE", 2),
    ("LOCALE", 4),
    ("MULTILINE", 8),
    ("DOTALL", 16),
    ("UNICODE", 32),
    ("VERBOSE", 64),
    ("DEBUG", 128),
    ("ASCII", 256),
];

/// Salt's `_get_flags`: a list of flag names, one name, or an integer.
fn flags(value: &Value) -> Result<u32, ExecError> {
    let by_name = |name: &str| {
        let upper = name.trim().to_uppercase();
        let full = match upper.as_str() {
            "T" => "TEMPLATE",
            "I" => "IGNORECASE",
            "L" => "LOCALE",
            "M" => "MULTILINE",
            "S" => "DOTALL",
            "U" => "UNICODE",
            "X" => "VERBOSE",
            "A" => "ASCII",
            other => other,
        };
        FLAG_NAMES
            .iter()
            .find(|(n, _)| *n == full)
            .map(|(_, v)| *v)
            .ok_or_else(|| ExecError::invocation(format!("Invalid re flag given: {name}")))
    };
    match value {
        Value::Array(items) => items
            .iter()
            .try_fold(0, |acc, v| Ok(acc | by_name(&python::str(v))?)),
        Value::Number(n) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| ExecError::invocation(format!("Invalid re flag given: {n}"))),
        Value::String(s) => by_name(s),
        other => Err(ExecError::invocation(format!(
            "Invalid re flag given: {}",
            python::str(other)
        ))),
    }
}

fn compile(pattern: &str, flags: u32) -> Result<Regex, ExecError> {
    RegexBuilder::new(pattern)
        .case_insensitive(flags & 2 != 0)
        .multi_line(flags & 8 != 0)
        .dot_matches_new_line(flags & 16 != 0)
        .ignore_whitespace(flags & 64 != 0)
        .build()
        .map_err(|e| {
            ExecError::exception(
                "re.error",
                format!("{pattern}: {}", e.to_string().lines().last().unwrap_or("")),
            )
        })
}

/// A Python replacement string in the regex crate's syntax: `\1`, `\g<1>` and `\g<name>`
/// become `${1}`/`${name}`, `\n`-style escapes their characters, `$` a literal `$$`.
fn python_repl(repl: &str) -> String {
    let mut out = String::with_capacity(repl.len());
    let mut chars = repl.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match chars.next() {
                Some(d) if d.is_ascii_digit() => {
                    let mut num = d.to_string();
                    if let Some(e) = chars.peek().filter(|e| e.is_ascii_digit()) {
                        num.push(*e);
                        chars.next();
                    }
                    out.push_str(&format!("${{{num}}}"));
                }
                Some('g') if chars.peek() == Some(&'<') => {
                    chars.next();
                    let name: String = chars.by_ref().take_while(|c| *c != '>').collect();
                    out.push_str(&format!("${{{name}}}"));
                }
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('\\') => out.push('\\'),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            other => out.push(other),
        }
    }
    out
}

/// Salt's `is_text` check, simplified: no NUL byte in the first 512 bytes.
fn is_text(data: &[u8]) -> bool {
    !data.iter().take(512).any(|b| *b == 0)
}

/// What one replace run was asked.
struct Request {
    path: PathBuf,
    pattern: String,
    repl: String,
    count: usize,
    flags: u32,
    append: bool,
    prepend: bool,
    not_found_content: Option<String>,
    backup: Option<String>,
    dry_run: bool,
    search_only: bool,
    show_changes: bool,
    ignore_if_missing: bool,
    backslash_literal: bool,
}

fn request(call: &Call, search_only: bool, extra_flags: u32) -> Result<Request, ExecError> {
    let arg = |name: &str| call.bound.params.get(name).unwrap_or(&Value::Null);
    let backup = match arg("backup") {
        Value::Null | Value::Bool(false) => None,
        v => Some(python::str(v)).filter(|s| !s.is_empty()),
    };
    Ok(Request {
        path: expand_user(&python::str(arg("path"))),
        pattern: python::str(arg("pattern")),
        repl: python::str(arg("repl")),
        count: arg("count").as_u64().unwrap_or(0) as usize,
        flags: flags(arg("flags"))? | extra_flags,
        append: truthy(arg("append_if_not_found")),
        prepend: truthy(arg("prepend_if_not_found")),
        not_found_content: Some(arg("not_found_content"))
            .filter(|v| truthy(v))
            .map(python::str),
        backup,
        dry_run: search_only || truthy(arg("dry_run")),
        search_only: search_only || truthy(arg("search_only")),
        show_changes: !search_only && arg("show_changes") != &Value::Bool(false),
        ignore_if_missing: truthy(arg("ignore_if_missing")),
        backslash_literal: truthy(arg("backslash_literal")),
    })
}

/// Salt's `replace` on a request.
fn run(req: &Request) -> Result<Value, ExecError> {
    let path = fs::canonicalize(&req.path).unwrap_or_else(|_| req.path.clone());
    if !path.exists() {
        if req.ignore_if_missing {
            return Ok(Value::Bool(false));
        }
        return Err(ExecError::invocation(format!(
            "File not found: {}",
            path.display()
        )));
    }
    let data = fs::read(&path).map_err(|e| super::os_error(&e, &path))?;
    if !is_text(&data) {
        return Err(ExecError::invocation(format!(
            "Cannot perform string replacements on a binary file: {}",
            path.display()
        )));
    }
    if req.search_only && (req.append || req.prepend) {
        return Err(ExecError::invocation(
            "search_only cannot be used with append/prepend_if_not_found",
        ));
    }
    if req.append && req.prepend {
        return Err(ExecError::invocation(
            "Only one of append and prepend_if_not_found is permitted",
        ));
    }
    let re = compile(&req.pattern, req.flags)?;
    if req.search_only {
        return Ok(Value::Bool(re.is_match(&data)));
    }
    let repl = if req.backslash_literal {
        req.repl.replace('$', "$$")
    } else {
        python_repl(&req.repl)
    };
    let nrepl = re
        .find_iter(&data)
        .take(if req.count == 0 {
            usize::MAX
        } else {
            req.count
        })
        .count();
    let result = re.replacen(&data, req.count, repl.as_bytes()).into_owned();
    let mut found = nrepl > 0;
    let mut has_changes = found && req.pattern != req.repl;
    let content = req
        .not_found_content
        .clone()
        .unwrap_or_else(|| req.repl.clone());
    if (req.append || req.prepend) && !found {
        let escaped = format!("^{}\\r?$", regex::escape(&content));
        found = compile(&escaped, req.flags | 8)?.is_match(&data);
    }
    let orig = String::from_utf8_lossy(&data).into_owned();
    let mut new = String::from_utf8_lossy(&result).into_owned();
    if split_lines(&orig) == split_lines(&new) {
        has_changes = false;
    }
    if !found && (req.append || req.prepend) {
        if req.prepend {
            new = format!("{content}\n{new}");
        } else {
            if !new.is_empty() && !new.ends_with('\n') {
                new.push('\n');
            }
            new.push_str(&content);
            new.push('\n');
        }
        has_changes = true;
    }
    if has_changes && !req.dry_run {
        write_with_backup(&path, req.backup.as_deref(), new.as_bytes())?;
    }
    let diff = unified_diff(&split_lines(&orig), &split_lines(&new));
    if req.show_changes {
        return Ok(Value::String(diff));
    }
    Ok(Value::Bool(has_changes && !diff.is_empty()))
}

/// Keeps a copy of the file under `path + backup`, then rewrites the file in place (its
/// inode, owner and mode stay).
fn write_with_backup(path: &Path, backup: Option<&str>, contents: &[u8]) -> Result<(), ExecError> {
    if let Some(suffix) = backup {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        fs::copy(path, &name).map_err(|e| {
            ExecError::execution(format!(
                "Unable to copy '{}' to the backup file '{}'. Exception: {}",
                path.display(),
                Path::new(&name).display(),
                super::strerror(&e)
            ))
        })?;
    }
    fs::write(path, contents).map_err(|e| {
        ExecError::execution(format!(
            "Unable to write file '{}'. Contents may be truncated. Exception: {}",
            path.display(),
            super::strerror(&e)
        ))
    })
}

pub(super) async fn replace(call: Call) -> Result<Value, ExecError> {
    run(&request(&call, false, 0)?)
}

pub(super) async fn search(call: Call) -> Result<Value, ExecError> {
    let multiline = if truthy(call.arg("multiline")) { 8 } else { 0 };
    run(&request(&call, true, multiline)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_replacements() {
        assert_eq!(python_repl(r"\1-\g<2>-\g<name>"), "${1}-${2}-${name}");
        assert_eq!(python_repl(r"a\nb\\c$d"), "a\nb\\c$$d");
        assert_eq!(python_repl(r"\12"), "${12}");
    }

    #[test]
    fn flag_forms() {
        assert_eq!(flags(&json!(8)).ok(), Some(8));
        assert_eq!(flags(&json!(["MULTILINE", "IGNORECASE"])).ok(), Some(10));
        assert_eq!(flags(&json!("dotall")).ok(), Some(16));
        assert_eq!(flags(&json!(["I", "M"])).ok(), Some(10));
        assert!(flags(&json!(["NOPE"])).is_err());
    }
}
