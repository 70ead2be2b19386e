//! The pure decisions of `archive.extracted`: the arguments' checks, the archive format,
//! whether extraction is needed from what the destination holds, what to do with paths of
//! the wrong type, whose ownership to enforce, and the comments Salt gives; `archive.rs`
//! reads the file system, lists, extracts and chowns.

use serde_json::{Value, json};

use saltq_semantics::python::{self, truthy};

use super::join;

/// The checks on `name`, `if_missing` and `enforce_ownership_on` that need no file system,
/// in Salt's order; `is_file` says whether `name` is a file. `Err` is the failure comment.
pub(super) fn check_paths(
    name: &str,
    is_file: &dyn Fn(&str) -> bool,
    if_missing: Option<&str>,
    enforce_on: Option<&str>,
) -> Result<(), String> {
    if !name.starts_with('/') {
        return Err(format!("{name} is not an absolute path"));
    }
    let trimmed = name.trim_end_matches('/');
    if is_file(trimmed) {
        return Err(format!("{trimmed} exists and is not a directory"));
    }
    if if_missing.is_some_and(|p| !p.starts_with('/')) {
        return Err("Value for 'if_missing' is not an absolute path".into());
    }
    if let Some(p) = enforce_on {
        if !p.starts_with('/') {
            return Err("Value for 'enforce_ownership_on' is not an absolute path".into());
        }
        if !std::path::Path::new(p).starts_with(trimmed) {
            return Err(format!(
                "Value for 'enforce_ownership_on' must be within {trimmed}/"
            ));
        }
    }
    Ok(())
}

/// The archive's format: `archive_format` lower-cased, or guessed from the source's name.
pub(super) fn archive_format(given: Option<&str>, guessed: Option<&str>) -> Result<String, String> {
    let format = match (given, guessed) {
        (Some(f), _) => f.to_lowercase(),
        (None, Some(f)) => f.to_owned(),
        (None, None) => {
            return Err(
                "Could not guess archive_format from the value of the 'source' argument. \
                 Please set this archive_format to one of the following: tar, rar, zip"
                    .into(),
            );
        }
    };
    if !["tar", "rar", "zip"].contains(&format.as_str()) {
        return Err(format!(
            "Invalid archive_format '{format}'. Either set it to a supported value (tar, \
             rar, zip) or remove this argument and the archive format will be guessed \
             based on file extension."
        ));
    }
    Ok(format)
}

/// What saltq cannot do for this format: zip `options`/`use_cmd_unzip`, passwords, rar.
pub(super) fn check_format(
    format: &str,
    has_options: bool,
    cmd_unzip: bool,
    password: bool,
) -> Result<(), String> {
    if format == "zip" {
        if has_options || cmd_unzip {
            return Err(
                "archive.cmd_unzip function not available, unzip might not be installed on minion"
                    .into(),
            );
        }
        if password {
            return Err("password-protected zip archives are not supported by saltq".into());
        }
    } else if password {
        return Err("The 'password' argument is only supported for zip archives".into());
    }
    if format == "rar" {
        return Err(
            "archive.unrar function not available, rar/unrar might not be installed on minion"
                .into(),
        );
    }
    Ok(())
}

/// `trim_output` as Salt reads it: `True` is 100, false-ish kept, else an integer.
pub(super) fn trim_output(given: Option<&Value>) -> Result<Value, String> {
    Ok(match given {
        Some(Value::Bool(true)) => json!(100),
        Some(Value::Bool(false)) | None => json!(false),
        Some(v) if !truthy(v) => v.clone(),
        Some(v) => match python::str(v).parse::<i64>() {
            Ok(n) => json!(n),
            Err(_) => {
                return Err(
                    "Invalid value for trim_output, must be True/False or an integer".into(),
                );
            }
        },
    })
}

/// Salt's message when the archive cannot be listed: `msg` with where the archive was and
/// the workarounds the state's arguments lack.
pub(super) fn list_failure(
    msg: &str,
    cached: &str,
    format: &str,
    if_missing: bool,
    enforce_on: bool,
    owner_given: bool,
) -> String {
    let mut msg = format!("{msg} Additional info follows:\n\narchive location:\n    {cached}");
    let mut errors = Vec::new();
    if !if_missing {
        errors.push("'if_missing' must be set");
    }
    if !enforce_on && owner_given {
        errors.push("Ownership cannot be managed without setting 'enforce_ownership_on'.");
    }
    if errors.is_empty() {
        return msg;
    }
    msg.push_str("\n\n");
    if format == "tar" {
        msg.push_str(
            "If the source archive is a tar archive compressed using a compression \
             type not natively supported by the tar command, then setting the \
             'list_options' argument may allow the contents to be listed. \
             Otherwise, if Salt is unable to determine the files/directories in the \
             archive, the following workaround(s) would need to be used for this \
             state to proceed",
        );
    } else {
        msg.push_str("The following workarounds must be used for this state to proceed");
    }
    msg.push_str(&format!(
        " (assuming the source file is a valid {format} archive):\n"
    ));
    for e in errors {
        msg.push_str(&format!("\n- {e}"));
    }
    msg
}

/// The failure when `enforce_toplevel` holds and the archive has several top-level entries.
pub(super) fn toplevel_error(
    enforce: bool,
    top_dirs: usize,
    top_files: usize,
    format: &str,
    name: &str,
) -> Option<String> {
    (enforce && (top_dirs > 1 || top_files > 0)).then(|| {
        format!(
            "Archive does not have a single top-level directory. To allow this archive to \
             be extracted, set 'enforce_toplevel' to False. To avoid a '{format}-bomb' it \
             may also be advisable to set a top-level directory by adding it to the 'name' \
             value (for example, setting 'name' to {name}some_dir instead of {name})."
        )
    })
}

/// What the destination holds at one of the archive's paths.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Found {
    /// A directory.
    Dir,
    /// A symbolic link.
    Link,
    /// Anything else (a file).
    File,
    /// Nothing.
    Missing,
    /// A parent is not a directory (`ENOTDIR`): Salt lets it pass.
    NotDir,
    /// Reading it failed with this error.
    Error(String),
}

/// The archive's contents against the destination.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Presence {
    /// A path is missing (Salt's `contents_missing`).
    pub missing: bool,
    /// Paths that exist with the wrong type, relative to `name`.
    pub incorrect: Vec<String>,
}

/// Compares what the archive holds (`(path, 'd'|'f'|'l')`) with what `found` says the
/// destination holds; `Err` is a read error's text.
pub(super) fn presence(
    wanted: &[(String, char)],
    found: &dyn Fn(&str) -> Found,
) -> Result<Presence, String> {
    let mut out = Presence::default();
    for (path, want) in wanted {
        let ok = match found(path) {
            Found::Missing => {
                out.missing = true;
                continue;
            }
            Found::NotDir => continue,
            Found::Error(e) => return Err(e),
            Found::Dir => *want == 'd',
            Found::Link => *want == 'l',
            Found::File => *want == 'f',
        };
        if !ok {
            out.incorrect.push(path.clone());
        }
    }
    Ok(out)
}

/// What to do with paths of the wrong type.
#[derive(Debug, PartialEq)]
pub(super) enum Incorrect {
    /// Nothing is wrong, or `clean` will clear them.
    Proceed,
    /// Test mode with `clean`: the state ends with this comment and a `None` result.
    WouldClean(String),
    /// The state fails with this comment (no `force`).
    Refuse(String),
    /// `force`: remove them, then extract.
    Remove,
}

/// Salt's handling of `incorrect` paths under `name`.
pub(super) fn plan_incorrect(
    incorrect: &[String],
    name: &str,
    test: bool,
    clean: bool,
    force: bool,
) -> Incorrect {
    if incorrect.is_empty() {
        return Incorrect::Proceed;
    }
    let list: String = incorrect.iter().map(|x| format!("\n- {x}")).collect();
    let comment = format!(
        "The below paths (relative to {name}) exist, but are the incorrect type (file \
         instead of directory, symlink instead of file, etc.)."
    );
    if test && clean {
        return Incorrect::WouldClean(format!(
            "{comment} Since the 'clean' option is enabled, the destination paths would be \
             cleared and the archive would be extracted.\n\n{}",
            list.trim_start_matches('\n')
        ));
    }
    if clean {
        Incorrect::Proceed
    } else if force {
        Incorrect::Remove
    } else {
        Incorrect::Refuse(format!(
            "{comment} To proceed with extraction, set 'force' to True. Note that this will \
             remove these paths before extracting.\n{list}"
        ))
    }
}

/// Salt's `_add_explanation` (no `source_hash_update` here).
pub(super) fn explain(comment: &mut String, contents_missing: bool) {
    if contents_missing {
        comment.push_str(", due to absence of one or more files/dirs");
    }
}

/// The test-mode comment when extraction is needed.
pub(super) fn would_extract(source: &str, name: &str, clean: bool, missing: bool) -> String {
    let mut comment = format!("Archive {source} would be extracted to {name}");
    if clean {
        comment.push_str(", after cleaning destination path(s)");
    }
    explain(&mut comment, missing);
    comment
}

/// The directories (owned recursively) and other paths whose owner is enforced:
/// `enforce_ownership_on` alone (`on_is_dir` says what it is), else the archive's
/// top-level entries under `name`.
pub(super) fn ownership_targets(
    enforce_on: Option<&str>,
    on_is_dir: bool,
    name: &str,
    top_dirs: &[String],
    top_others: &[String],
) -> (Vec<String>, Vec<String>) {
    match enforce_on {
        Some(p) if on_is_dir => (vec![p.to_owned()], Vec::new()),
        Some(p) => (Vec::new(), vec![p.to_owned()]),
        None => (
            top_dirs.iter().map(|d| join(name, d)).collect(),
            top_others.iter().map(|f| join(name, f)).collect(),
        ),
    }
}

/// What extraction and the ownership step left, for the final answer.
#[derive(Debug, Default)]
pub(super) struct Done {
    /// Extraction was needed (and, outside test mode, done).
    pub extraction_needed: bool,
    /// A path was missing before.
    pub contents_missing: bool,
    /// The files extracted, as reported.
    pub files: Vec<String>,
    /// The destination directory was created.
    pub created_destdir: bool,
    /// Paths whose owner could not be enforced because they were missing.
    pub enforce_missing: Vec<String>,
    /// Paths whose owner could not be changed.
    pub enforce_failed: Vec<String>,
    /// Ownership changed (or would change).
    pub ownership_updated: bool,
}

/// The final result and comment (and the changes to add) once done.
pub(super) fn report(
    done: &Done,
    source: &str,
    name: &str,
    trim_output: &Value,
    if_missing: bool,
    test: bool,
) -> (Option<bool>, String, Vec<(&'static str, Value)>) {
    let mut changes = Vec::new();
    let (mut result, mut comment);
    if !done.extraction_needed {
        result = Some(true);
        comment = "All files in archive are already present".to_owned();
        if test && done.ownership_updated {
            result = None;
            comment.push_str(". Ownership would be updated on one or more files/directories.");
        }
    } else if done.files.is_empty() {
        result = Some(false);
        comment = format!("No files were extracted from {source}");
    } else {
        if done.created_destdir {
            changes.push(("directories_created", json!([name])));
        }
        changes.push(("extracted_files", json!(done.files)));
        comment = format!("{source} extracted to {name}");
        explain(&mut comment, done.contents_missing);
        // Salt appends this whether or not the output was trimmed.
        comment.push_str(&format!(
            ". Output was trimmed to {} number of lines",
            python::str(trim_output)
        ));
        result = Some(true);
    }
    if !done.enforce_missing.is_empty() {
        if !if_missing {
            result = Some(false);
        }
        comment.push_str(
            "\n\nWhile trying to enforce user/group ownership, the following paths were \
             missing:\n",
        );
        for item in &done.enforce_missing {
            comment.push_str(&format!("\n- {item}"));
        }
    }
    if !done.enforce_failed.is_empty() {
        result = Some(false);
        comment.push_str(
            "\n\nWhile trying to enforce user/group ownership, Salt was unable to change \
             ownership on the following paths:\n",
        );
        for item in &done.enforce_failed {
            comment.push_str(&format!("\n- {item}"));
        }
    }
    (result, comment, changes)
}

#[cfg(test)]
mod tests;
