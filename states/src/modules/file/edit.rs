//! The states that edit a file in place: `file.replace`, `file.blockreplace`,
//! `file.comment`, `file.uncomment`, `file.append`, `file.prepend`, `file.line`.
//! `file.replace`, `file.append`, `file.prepend` and `file.search` go through the execution
//! module; the block, comment and line edits are here.

use std::path::Path;

use saltq_exec::{Lit, Param, PubInfo};
use serde_json::{Map, Value, json};

use super::diff::{unified_diff, unified_diff_lines};
use super::{Ret, StateCall, bool_arg, error, name_of, py_str, str_arg};
use crate::modules::StateError;

const fn opt(name: &'static str) -> Param {
    Param::opt(name, Lit::None)
}

/// `file.append` and `file.prepend`'s parameters.
pub(super) const APPEND_PARAMS: &[Param] = &[
    Param::req("name"),
    opt("text"),
    Param::opt("makedirs", Lit::Bool(false)),
    opt("source"),
    opt("source_hash"),
    Param::opt("template", Lit::Str("jinja")),
    opt("sources"),
    opt("source_hashes"),
    opt("defaults"),
    opt("context"),
    Param::opt("ignore_whitespace", Lit::Bool(true)),
];

/// `file.replace`'s parameters.
pub(super) const REPLACE_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::req("pattern"),
    Param::req("repl"),
    Param::opt("count", Lit::Int(0)),
    Param::opt("flags", Lit::Int(8)),
    Param::opt("bufsize", Lit::Int(1)),
    Param::opt("append_if_not_found", Lit::Bool(false)),
    Param::opt("prepend_if_not_found", Lit::Bool(false)),
    opt("not_found_content"),
    Param::opt("backup", Lit::Str(".bak")),
    Param::opt("show_changes", Lit::Bool(true)),
    Param::opt("ignore_if_missing", Lit::Bool(false)),
    Param::opt("backslash_literal", Lit::Bool(false)),
];

/// `file.blockreplace`'s parameters.
pub(super) const BLOCKREPLACE_PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("marker_start", Lit::Str("#-- start managed zone --")),
    Param::opt("marker_end", Lit::Str("#-- end managed zone --")),
    opt("source"),
    opt("source_hash"),
    Param::opt("template", Lit::Str("jinja")),
    opt("sources"),
    opt("source_hashes"),
    opt("defaults"),
    opt("context"),
    Param::opt("content", Lit::Str("")),
    Param::opt("append_if_not_found", Lit::Bool(false)),
    Param::opt("prepend_if_not_found", Lit::Bool(false)),
    Param::opt("backup", Lit::Str(".bak")),
    Param::opt("show_changes", Lit::Bool(true)),
    opt("append_newline"),
    opt("insert_before_match"),
    opt("insert_after_match"),
];

/// `file.line`'s parameters.
pub(super) const LINE_PARAMS: &[Param] = &[
    Param::req("name"),
    opt("content"),
    opt("match"),
    opt("mode"),
    opt("location"),
    opt("before"),
    opt("after"),
    Param::opt("show_changes", Lit::Bool(true)),
    Param::opt("backup", Lit::Bool(false)),
    Param::opt("quiet", Lit::Bool(false)),
    Param::opt("indent", Lit::Bool(true)),
    Param::opt("create", Lit::Bool(false)),
    opt("user"),
    opt("group"),
    opt("file_mode"),
];

/// Salt's `_check_file`: the path is absolute and exists.
fn check_file(name: &str) -> Result<(), String> {
    if !name.starts_with('/') {
        Err(format!("Specified file {name} is not an absolute path"))
    } else if !Path::new(name).exists() {
        Err(format!("{name}: file not found"))
    } else {
        Ok(())
    }
}

/// Calls an execution function; the error is its message.
async fn exec(
    call: &StateCall,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
) -> Result<Value, String> {
    let out = saltq_exec::call(&call.ctx, fun, args, kwargs, &PubInfo::default()).await;
    if out.success {
        Ok(out.ret)
    } else {
        Err(py_str(&out.ret))
    }
}

/// `re.search(pattern, text, re.MULTILINE)` (Salt's `file.search(..., multiline=True)`).
fn search(text: &str, pattern: &str) -> bool {
    fancy_regex::Regex::new(&format!("(?m){pattern}"))
        .ok()
        .and_then(|r| r.is_match(text).ok())
        .unwrap_or(false)
}

fn read_text(name: &str) -> String {
    String::from_utf8_lossy(&std::fs::read(name).unwrap_or_default()).into_owned()
}

/// `file.replace`.
pub(super) async fn replace(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.replace"));
    }
    if let Err(msg) = check_file(&name) {
        if bool_arg(&call, "ignore_if_missing", false) && msg.contains("file not found") {
            ret.comment = "No changes needed to be made".into();
            return Ok(ret);
        }
        return Ok(error(ret, msg));
    }
    let mut kwargs = Map::new();
    for p in REPLACE_PARAMS.iter().skip(3) {
        if let Some(v) = call.arg(p.name) {
            kwargs.insert(p.name.into(), v.clone());
        }
    }
    kwargs.insert("dry_run".into(), call.test.into());
    kwargs.insert("path".into(), name.clone().into());
    for key in ["pattern", "repl"] {
        kwargs.insert(key.into(), call.arg(key).cloned().unwrap_or(Value::Null));
    }
    let changes = match exec(&call, "file.replace", Vec::new(), kwargs).await {
        Ok(v) => v,
        Err(e) => return Ok(error(ret, e)),
    };
    if saltq_semantics::python::truthy(&changes) {
        ret.changes.insert("diff".into(), changes);
        if call.test {
            ret.result = None;
            ret.comment = "Changes would have been made".into();
        } else {
            ret.comment = "Changes were made".into();
        }
    } else {
        ret.comment = "No changes needed to be made".into();
    }
    Ok(ret)
}

/// The block edit of Salt's `file.blockreplace` on `text`: the new lines, or the error.
#[allow(clippy::too_many_arguments)] // Salt's own parameters, one each
fn block_edit(
    text: &str,
    marker_start: &str,
    marker_end: &str,
    content: &str,
    append: bool,
    prepend: bool,
    append_newline: Option<bool>,
    before: Option<&str>,
    after: Option<&str>,
) -> Result<(Vec<String>, Vec<String>), String> {
    let append_newline = append_newline.unwrap_or(!content.ends_with('\n'));
    let split: Vec<&str> = content.split("\r\n").flat_map(|l| l.split('\n')).collect();
    let add = |linesep: &str, lines: &mut Vec<String>, with_start: bool, end_line: &str| {
        let end = format!("{}{linesep}", end_line.trim_end_matches(['\r', '\n']));
        if with_start {
            lines.push(format!("{marker_start}{linesep}"));
        }
        for (i, l) in split.iter().enumerate() {
            if i + 1 != split.len() {
                lines.push(format!("{l}{linesep}"));
            } else if append_newline {
                lines.push(format!("{l}{linesep}"));
                lines.push(end.clone());
            } else {
                lines.push(format!("{l}{end}"));
            }
        }
    };
    let mut orig = Vec::new();
    let mut new = Vec::new();
    let mut in_block = false;
    let mut found = false;
    let mut linesep: Option<&str> = None;
    for line in text.split_inclusive('\n') {
        let mut keep = true;
        if linesep.is_none() {
            linesep = Some(if line.ends_with("\r\n") { "\r\n" } else { "\n" });
        }
        if line.contains(marker_start) {
            in_block = true;
        } else if in_block {
            keep = false;
            if let Some(pos) = line.find(marker_end) {
                in_block = false;
                found = true;
                add(linesep.unwrap_or("\n"), &mut new, false, &line[pos..]);
            }
        }
        orig.push(line.to_owned());
        if keep {
            new.push(line.to_owned());
        }
    }
    let linesep = linesep.unwrap_or("\n");
    if in_block {
        return Err("Unterminated marked block. End of file reached before marker_end.".into());
    }
    if !found {
        if prepend {
            let mut lines = Vec::new();
            add(linesep, &mut lines, true, marker_end);
            lines.extend(new);
            new = lines;
        } else if append {
            if let Some(last) = new.last_mut()
                && !last.ends_with(linesep)
            {
                last.push_str(linesep);
            }
            add(linesep, &mut new, true, marker_end);
        } else if let Some(re) = before.or(after) {
            let r = fancy_regex::Regex::new(re).map_err(|e| e.to_string())?;
            let Some(mut idx) = orig.iter().position(|l| r.is_match(l).unwrap_or(false)) else {
                return Err("Cannot edit marked block. Markers were not found in file.".into());
            };
            let mut lines = Vec::new();
            add(linesep, &mut lines, true, marker_end);
            for l in lines {
                if after.is_some() && before.is_none() {
                    idx += 1;
                }
                new.insert(idx, l);
                if before.is_some() {
                    idx += 1;
                }
            }
        } else {
            return Err("Cannot edit marked block. Markers were not found in file.".into());
        }
    }
    Ok((orig, new))
}

/// `file.blockreplace`.
pub(super) async fn blockreplace(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    ret.result = Some(false);
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.blockreplace"));
    }
    if let Err(msg) = check_file(&name) {
        return Ok(error(ret, msg));
    }
    let mut content = str_arg(&call, "content").unwrap_or_default();
    // Salt's `_get_template_texts`: `source` then `sources`, each rendered when `template`
    // is set, appended to the content before the accumulators'.
    let mut sources: Vec<String> = Vec::new();
    for key in ["source", "sources"] {
        match call.arg(key) {
            Some(Value::Array(items)) => sources.extend(items.iter().map(py_str)),
            Some(other) => sources.push(py_str(other)),
            None => {}
        }
    }
    let template = str_arg(&call, "template");
    for src in sources {
        let fetched =
            match super::managed::get_managed(&call, &name, &src, "", template.as_deref(), true)
                .await
            {
                Ok(mut m) => super::managed::fetch(&call, &mut m).await,
                Err(e) => Err(e),
            };
        match fetched {
            Ok(data) => content.push_str(&String::from_utf8_lossy(&data)),
            Err(e) => return Ok(error(ret, e)),
        }
    }
    for line in super::accumulated::texts_for(&call.accumulators, &name, &call.id) {
        let line = py_str(&line);
        if content.is_empty() {
            content = line;
        } else {
            content = format!("{content}\n{line}");
        }
    }
    let marker_start =
        str_arg(&call, "marker_start").unwrap_or_else(|| "#-- start managed zone --".into());
    let marker_end =
        str_arg(&call, "marker_end").unwrap_or_else(|| "#-- end managed zone --".into());
    let append = bool_arg(&call, "append_if_not_found", false);
    let prepend = bool_arg(&call, "prepend_if_not_found", false);
    let before = str_arg(&call, "insert_before_match");
    let after = str_arg(&call, "insert_after_match");
    let exclusive = [append, prepend, before.is_some(), after.is_some()]
        .iter()
        .filter(|b| **b)
        .count();
    if exclusive > 1 {
        ret.comment = "Encountered error managing block: Only one of append_if_not_found, \
                       prepend_if_not_found, insert_before_match, and insert_after_match is \
                       permitted. See the log for details."
            .into();
        return Ok(ret);
    }
    let text = read_text(&name);
    let (orig, new) = match block_edit(
        &text,
        &marker_start,
        &marker_end,
        &content,
        append,
        prepend,
        call.arg("append_newline")
            .map(saltq_semantics::python::truthy),
        before.as_deref(),
        after.as_deref(),
    ) {
        Ok(v) => v,
        Err(e) => {
            ret.comment =
                format!("Encountered error managing block: {e}. See the log for details.");
            return Ok(ret);
        }
    };
    let a: Vec<&str> = orig.iter().map(String::as_str).collect();
    let b: Vec<&str> = new.iter().map(String::as_str).collect();
    let diff = unified_diff(&a, &b);
    let has_changes = !diff.is_empty();
    if has_changes && !call.test {
        let backup = call.arg("backup").cloned().unwrap_or_else(|| ".bak".into());
        if backup != Value::Bool(false) {
            let _ = std::fs::copy(&name, format!("{name}{}", py_str(&backup)));
        }
        if let Err(e) = super::managed::copy_into(new.concat().as_bytes(), Path::new(&name)) {
            ret.comment = format!(
                "Encountered error managing block: {}. See the log for details.",
                super::os_error(&e, &name)
            );
            return Ok(ret);
        }
    }
    if has_changes {
        let shown = if bool_arg(&call, "show_changes", true) {
            Value::from(diff)
        } else {
            Value::Bool(true)
        };
        ret.changes.insert("diff".into(), shown);
        if call.test {
            ret.result = None;
            ret.comment = "Changes would be made".into();
        } else {
            ret.result = Some(true);
            ret.comment = "Changes were made".into();
        }
    } else {
        ret.result = Some(true);
        ret.comment = "No changes needed to be made".into();
    }
    Ok(ret)
}

/// Python's `re.sub(r"^(\(\?[iLmsux]\))?\^?(.*?)\$?$", r"\2", regex)`: the regex without
/// its inline flags and anchors.
fn unanchor(regex: &str) -> String {
    let mut r = regex;
    if r.len() >= 4
        && r.starts_with("(?")
        && r.as_bytes()[3] == b')'
        && "iLmsux".contains(r.as_bytes()[2] as char)
    {
        r = &r[4..];
    }
    let r = r.strip_prefix('^').unwrap_or(r);
    let r = r.strip_suffix('$').unwrap_or(r);
    r.to_owned()
}

/// Salt's `file.comment_line` on text: the new text, and whether a line matched.
fn comment_lines(text: &str, regex: &str, ch: &str, cmnt: bool) -> (String, bool) {
    let core = regex.trim_start_matches('^').trim_end_matches('$');
    let re = if cmnt {
        format!(
            "{}({core}){}",
            if regex.starts_with('^') { "^" } else { "" },
            if regex.ends_with('$') { "$" } else { "" }
        )
    } else {
        format!(
            "^{}\\s*({core}){}",
            fancy_regex::escape(ch),
            if regex.ends_with('$') { "$" } else { "" }
        )
    };
    // re.match: anchored at the line's start.
    let Ok(r) = fancy_regex::Regex::new(&format!("^(?:{re})")) else {
        return (text.to_owned(), false);
    };
    let mut found = false;
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        // `$` in Python matches before a trailing newline.
        let body = line.strip_suffix('\n').unwrap_or(line);
        if r.is_match(body).unwrap_or(false) {
            found = true;
            if cmnt {
                out.push_str(ch);
                out.push_str(line);
            } else {
                out.push_str(line.trim_start_matches(|c: char| ch.contains(c)));
            }
        } else {
            out.push_str(line);
        }
    }
    (out, found)
}

/// Writes `text` over `name` keeping its mode and owner, with `name<backup>` holding the
/// old content when `backup` is a suffix.
fn write_with_backup(
    name: &str,
    old: &str,
    text: &str,
    backup: Option<&Value>,
) -> std::io::Result<()> {
    if let Some(b) = backup.filter(|b| saltq_semantics::python::truthy(b)) {
        std::fs::write(format!("{name}{}", py_str(b)), old)?;
    }
    super::managed::copy_into(text.as_bytes(), Path::new(name))
}

/// `file.comment`.
pub(super) async fn comment(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    ret.result = Some(false);
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.comment"));
    }
    if let Err(msg) = check_file(&name) {
        return Ok(error(ret, msg));
    }
    let regex = str_arg(&call, "regex").unwrap_or_default();
    let ch = str_arg(&call, "char").unwrap_or_else(|| "#".into());
    let un = unanchor(&regex);
    let uncomment_re = format!("^(?!\\s*{ch})\\s*{un}");
    let comment_re = format!("{ch}{un}");
    let text = read_text(&name);
    if !search(&text, &uncomment_re) {
        if search(&text, &comment_re) {
            ret.comment = "Pattern already commented".into();
            ret.result = Some(true);
            return Ok(ret);
        } else if bool_arg(&call, "ignore_missing", false) {
            ret.comment = "Pattern not found and ignore_missing set to True".into();
            ret.result = Some(true);
            return Ok(ret);
        }
        return Ok(error(ret, format!("{un}: Pattern not found")));
    }
    finish_comment_edit(&call, ret, &name, &text, &regex, &ch, true, &comment_re)
}

/// `file.uncomment`.
pub(super) async fn uncomment(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    ret.result = Some(false);
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.uncomment"));
    }
    if let Err(msg) = check_file(&name) {
        return Ok(error(ret, msg));
    }
    let regex = str_arg(&call, "regex").unwrap_or_default();
    let ch = str_arg(&call, "char").unwrap_or_else(|| "#".into());
    let bare = regex.trim_start_matches('^');
    let text = read_text(&name);
    let plain_re = format!("^[ \t]*{bare}");
    if search(&text, &format!("{ch}[ \t]*{bare}")) {
    } else if search(&text, &plain_re) {
        ret.comment = "Pattern already uncommented".into();
        ret.result = Some(true);
        return Ok(ret);
    } else {
        return Ok(error(ret, format!("{regex}: Pattern not found")));
    }
    finish_comment_edit(&call, ret, &name, &text, &regex, &ch, false, &plain_re)
}

/// What `file.comment` and `file.uncomment` share once the pattern is found: test mode's
/// answer, or the edit (with its backup), whether `expect` now matches, the diff, and Salt's
/// comment for either outcome.
#[allow(clippy::too_many_arguments)]
fn finish_comment_edit(
    call: &StateCall,
    mut ret: Ret,
    name: &str,
    text: &str,
    regex: &str,
    ch: &str,
    comment: bool,
    expect: &str,
) -> Result<Ret, StateError> {
    if call.test {
        ret.changes.insert(name.to_owned(), "updated".into());
        ret.comment = format!("File {name} is set to be updated");
        ret.result = None;
        return Ok(ret);
    }
    let (new, _) = comment_lines(text, regex, ch, comment);
    let backup = call.arg("backup").cloned().or_else(|| Some(".bak".into()));
    if new != text
        && let Err(e) = write_with_backup(name, text, &new, backup.as_ref())
    {
        return Ok(error(ret, super::os_error(&e, name)));
    }
    ret.result = Some(search(&new, expect));
    if new != text {
        let (a, b) = (super::diff::lines(text), super::diff::lines(&new));
        ret.changes
            .insert("diff".into(), unified_diff(&a, &b).into());
    }
    let (done, missing) = if comment {
        (
            "Commented lines successfully",
            "Expected commented lines not found",
        )
    } else {
        (
            "Uncommented lines successfully",
            "Expected uncommented lines not found",
        )
    };
    ret.comment = if ret.result == Some(true) {
        done
    } else {
        missing
    }
    .into();
    Ok(ret)
}

/// Salt's `build_whitespace_split_regex`: each line's words with any whitespace between.
fn whitespace_split_regex(text: &str) -> String {
    let mut re = String::new();
    for line in saltq_semantics::python::splitlines(text, false) {
        let parts: Vec<String> = line
            .split_whitespace()
            .map(fancy_regex::escape)
            .map(|c| c.into_owned())
            .collect();
        re.push_str(&format!(
            "(?:[\\s]+)?{}(?:[\\s]+)?",
            parts.join("(?:[\\s]+)")
        ));
    }
    format!("(?m)^{re}$")
}

/// The `text` argument as Salt's `_validate_str_list`.
fn text_list(v: Option<&Value>) -> Vec<String> {
    match v {
        None => Vec::new(),
        Some(Value::Array(a)) => a.iter().map(py_str).collect(),
        Some(other) => vec![py_str(other)],
    }
}

/// `file.append`/`file.prepend` up to the point where the file exists: the directory and
/// the file are made (or, in test mode, what touching would do is answered).
async fn ensure_target(
    call: &StateCall,
    name: &str,
    ret: &mut Ret,
) -> Result<Option<Ret>, StateError> {
    let makedirs = call.arg("makedirs") == Some(&Value::Bool(true));
    if makedirs {
        let dir = super::dirname(name);
        if call.test {
            ret.comment = format!("Directory {dir} is set to be updated");
            ret.result = None;
        } else if !Path::new(&dir).is_dir()
            && let Err(e) = super::makedirs(name, None, None, None)
        {
            return Ok(Some(error(ret.clone(), super::os_error(&e, &dir))));
        }
    }
    if let Err(msg) = check_file(name) {
        let mut args = Map::new();
        args.insert("makedirs".into(), makedirs.into());
        let sub = StateCall {
            name: name.to_owned(),
            args,
            ..call.clone()
        };
        let touched = super::simple::touch(sub).await?;
        if call.test {
            return Ok(Some(touched));
        }
        if check_file(name).is_err() {
            return Ok(Some(error(ret.clone(), msg)));
        }
    }
    Ok(None)
}

/// `file.append`.
pub(super) async fn append(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    ret.result = Some(false);
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.append"));
    }
    if let Some(done) = ensure_target(&call, &name, &mut ret).await? {
        return Ok(done);
    }
    let text = text_list(call.arg("text"));
    let ignore_ws = bool_arg(&call, "ignore_whitespace", true);
    let before = read_text(&name);
    let slines: Vec<&str> = saltq_semantics::python::splitlines(&before, false);
    let mut add: Vec<String> = Vec::new();
    for chunk in &text {
        let present = if ignore_ws {
            search(&before, &whitespace_split_regex(chunk))
        } else {
            search(&before, chunk)
        };
        if present {
            continue;
        }
        add.extend(
            saltq_semantics::python::splitlines(chunk, false)
                .into_iter()
                .map(str::to_owned),
        );
    }
    if call.test {
        ret.comment = format!("File {name} is set to be updated");
        ret.result = None;
        let mut nlines: Vec<&str> = slines.clone();
        nlines.extend(add.iter().map(String::as_str));
        if nlines != slines {
            ret.changes.insert(
                "diff".into(),
                unified_diff_lines(&slines, &nlines).join("\n").into(),
            );
        } else {
            ret.comment = format!("File {name} is in correct state");
            ret.result = Some(true);
        }
        return Ok(ret);
    }
    if !add.is_empty() {
        let mut kwargs = Map::new();
        kwargs.insert("args".into(), json!(add));
        let args = std::iter::once(Value::from(name.clone()))
            .chain(add.iter().cloned().map(Value::from))
            .collect();
        if let Err(e) = exec(&call, "file.append", args, Map::new()).await {
            return Ok(error(ret, e));
        }
        ret.comment = format!("Appended {} lines", add.len());
    } else {
        ret.comment = format!("File {name} is in correct state");
    }
    let after = read_text(&name);
    let nlines: Vec<&str> = saltq_semantics::python::splitlines(&after, false);
    if nlines != slines {
        ret.changes.insert(
            "diff".into(),
            unified_diff_lines(&slines, &nlines).join("\n").into(),
        );
    }
    ret.result = Some(true);
    Ok(ret)
}

/// `file.prepend`.
pub(super) async fn prepend(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    ret.result = Some(false);
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.prepend"));
    }
    if let Some(done) = ensure_target(&call, &name, &mut ret).await? {
        return Ok(done);
    }
    let text = text_list(call.arg("text"));
    let header = bool_arg(&call, "header", false);
    let before = read_text(&name);
    let slines: Vec<&str> = super::diff::lines(&before);
    let mut preface: Vec<String> = Vec::new();
    for chunk in &text {
        if !header && search(&before, &whitespace_split_regex(chunk)) {
            continue;
        }
        preface.extend(
            saltq_semantics::python::splitlines(chunk, false)
                .into_iter()
                .map(str::to_owned),
        );
    }
    let mut count = preface.len();
    if call.test {
        let with_nl: Vec<String> = preface.iter().map(|l| format!("{l}\n")).collect();
        let mut nlines: Vec<&str> = with_nl.iter().map(String::as_str).collect();
        nlines.extend(slines.iter());
        if !preface.is_empty() {
            ret.comment = format!("File {name} is set to be updated");
        }
        if nlines != slines {
            ret.changes
                .insert("diff".into(), unified_diff(&slines, &nlines).into());
            ret.result = None;
        } else {
            ret.comment = format!("File {name} is in correct state");
            ret.result = Some(true);
        }
        return Ok(ret);
    }
    let head_same = header && {
        let head: Vec<&str> = slines
            .iter()
            .take(preface.len())
            .flat_map(|l| saltq_semantics::python::splitlines(l, false))
            .collect();
        head == preface.iter().map(String::as_str).collect::<Vec<_>>()
    };
    if head_same {
        count = 0;
    } else if !preface.is_empty() {
        let args = std::iter::once(Value::from(name.clone()))
            .chain(preface.iter().cloned().map(Value::from))
            .collect();
        if let Err(e) = exec(&call, "file.prepend", args, Map::new()).await {
            return Ok(error(ret, e));
        }
    }
    let after = read_text(&name);
    let nlines = super::diff::lines(&after);
    if nlines != slines {
        ret.changes
            .insert("diff".into(), unified_diff(&slines, &nlines).into());
    }
    ret.comment = if count > 0 {
        format!("Prepended {count} lines")
    } else {
        format!("File {name} is in correct state")
    };
    ret.result = Some(true);
    Ok(ret)
}

/// The end of line a line has (`\n`, `\r\n` or `\r`), empty for none.
fn eol(line: &str) -> &str {
    if line.ends_with("\r\n") {
        "\r\n"
    } else if line.ends_with('\n') {
        "\n"
    } else if line.ends_with('\r') {
        "\r"
    } else {
        ""
    }
}

/// Salt's `_set_line_eol`: `line` stripped, ended as `src` is (`\n` when it is not).
fn with_eol(src: &str, line: &str) -> String {
    let e = match eol(src) {
        "" => "\n",
        e => e,
    };
    format!("{}{e}", line.trim_end())
}

/// Salt's `_set_line_indent`: `line` with `src`'s leading blanks when `indent`.
fn with_indent(src: &str, line: &str, indent: bool) -> String {
    if !indent {
        return line.to_owned();
    }
    let lead: String = src
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    format!("{lead}{}", line.trim_start())
}

/// Salt's `_regex_to_static`: the lines a regex (DOTALL) finds, or that contain it as text.
fn lines_matching(lines: &[String], regex: Option<&str>) -> Result<Option<Vec<String>>, String> {
    let Some(re) = regex.filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    if lines.is_empty() {
        return Ok(None);
    }
    let r = fancy_regex::Regex::new(&format!("(?s){re}")).map_err(|e| format!("{e}: '{re}'"))?;
    Ok(Some(
        lines
            .iter()
            .filter(|l| r.is_match(l).unwrap_or(false) || l.contains(re))
            .cloned()
            .collect(),
    ))
}

fn assert_one(probe: &[String], target: &str) -> Result<(), String> {
    let msg = match probe.len() {
        n if n > 1 => "more than",
        0 => "less than",
        _ => return Ok(()),
    };
    Err(format!(
        "Found {msg} expected occurrences in \"{target}\" expression"
    ))
}

/// Salt's `_set_line`: the lines after the edit.
#[allow(clippy::too_many_arguments)] // Salt's own parameters, one each
fn set_line(
    mut lines: Vec<String>,
    content: Option<&str>,
    matcher: Option<&str>,
    mode: &str,
    location: Option<&str>,
    before: Option<&str>,
    after: Option<&str>,
    indent: bool,
) -> Result<Vec<String>, String> {
    let matcher = match matcher.filter(|m| !m.is_empty()) {
        None if before.is_none() && after.is_none() => content,
        m => m,
    };
    let after = lines_matching(&lines, after)?.filter(|v| !v.is_empty());
    let before = lines_matching(&lines, before)?.filter(|v| !v.is_empty());
    let matched = lines_matching(&lines, matcher)?.filter(|v| !v.is_empty());
    let content = content.unwrap_or_default();
    let pos = |lines: &[String], l: &str| lines.iter().position(|x| x == l).unwrap_or(0);
    if lines.is_empty() && (mode == "delete" || mode == "replace") {
        return Ok(Vec::new());
    }
    match mode {
        "delete" => {
            if let Some(m) = matched {
                lines.retain(|l| *l != m[0]);
            }
        }
        "replace" => {
            if let Some(m) = matched {
                let idx = pos(&lines, &m[0]);
                let orig = lines.remove(idx);
                lines.insert(idx, with_indent(&orig, content, indent));
            }
        }
        "insert" => {
            if before.is_none() && after.is_none() && location.is_none() {
                return Err(
                    "On insert either \"location\" or \"before/after\" conditions are required."
                        .into(),
                );
            }
            match location.filter(|l| !l.is_empty()) {
                Some("end") => {
                    let line = match lines.last() {
                        Some(last) => with_indent(last, content, indent),
                        None => content.to_owned(),
                    };
                    lines.push(line);
                }
                Some("start") => match lines.first() {
                    Some(first) => {
                        let line = with_eol(first, content);
                        lines.insert(0, line);
                    }
                    None => lines = vec![format!("{content}\n")],
                },
                Some(_) => {}
                None => match (&before, &after) {
                    (Some(b), Some(a)) => {
                        assert_one(b, "before")?;
                        assert_one(a, "after")?;
                        let last = pos(&lines, &b[0]);
                        let line = with_indent(&lines[last], content, indent);
                        lines.insert(last, line);
                    }
                    (None, Some(a)) => {
                        assert_one(a, "after")?;
                        let idx = pos(&lines, &a[0]);
                        let next = lines.get(idx + 1);
                        if next.is_none_or(|n| {
                            n.trim_end_matches(['\r', '\n'])
                                != content.trim_end_matches(['\r', '\n'])
                        }) {
                            let line = with_indent(&lines[idx], content, indent);
                            lines.insert(idx + 1, line);
                        }
                    }
                    (Some(b), None) => {
                        assert_one(b, "before")?;
                        let idx = pos(&lines, &b[0]);
                        let prev = &lines[if idx == 0 { lines.len() - 1 } else { idx - 1 }];
                        if prev.trim_end_matches(['\r', '\n'])
                            != content.trim_end_matches(['\r', '\n'])
                        {
                            let line = with_indent(&lines[idx], content, indent);
                            lines.insert(idx, line);
                        }
                    }
                    (None, None) => return Err("Neither before or after was found in file".into()),
                },
            }
        }
        "ensure" => {
            match (&before, &after) {
                (Some(b), Some(a)) => {
                    assert_one(a, "after")?;
                    assert_one(b, "before")?;
                    let ai = pos(&lines, &a[0]);
                    let bi = pos(&lines, &b[0]);
                    if !lines.iter().any(|l| l.trim_start() == content) {
                        if ai + 1 == bi {
                            let line = with_indent(&lines[ai], content, indent);
                            lines.insert(ai + 1, line);
                        } else if ai + 2 == bi {
                            lines[ai + 1] = with_indent(&lines[ai], content, indent);
                        } else {
                            return Err("Found more than one line between boundaries \"before\" and \"after\".".into());
                        }
                    }
                }
                (Some(b), None) => {
                    assert_one(b, "before")?;
                    let bi = pos(&lines, &b[0]);
                    if bi == 0
                        || lines[bi - 1].trim_end_matches(['\r', '\n'])
                            != content.trim_end_matches(['\r', '\n'])
                    {
                        let src = if bi == 0 { lines.len() - 1 } else { bi - 1 };
                        let line = with_indent(&lines[src], content, indent);
                        lines.insert(bi, line);
                    }
                }
                (None, Some(a)) => {
                    assert_one(a, "after")?;
                    let ai = pos(&lines, &a[0]);
                    if ai + 1 >= lines.len()
                        || lines[ai + 1].trim_end_matches(['\r', '\n'])
                            != content.trim_end_matches(['\r', '\n'])
                    {
                        let line = with_indent(&lines[ai], content, indent);
                        lines.insert(ai + 1, line);
                    }
                }
                (None, None) => {
                    return Err("Wrong conditions? Unable to ensure line without knowing where to put it before and/or after.".into());
                }
            }
        }
        _ => {}
    }
    Ok(lines)
}

/// `file.line`.
pub(super) async fn line(call: StateCall) -> Result<Ret, StateError> {
    let name = name_of(&call);
    let mut ret = Ret::new(name.clone());
    if name.is_empty() {
        return Ok(error(ret, "Must provide name to file.line"));
    }
    // Salt first runs file.managed with replace=False: creates the file when `create`,
    // and sets user, group and file_mode.
    if name.starts_with('/') && !call.test {
        let p = Path::new(&name);
        if !p.exists() && bool_arg(&call, "create", false) {
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p);
        }
        if p.exists() {
            let mode = call.arg("file_mode").and_then(super::normalize_mode);
            let mut scratch = Ret::new(name.clone());
            super::check_perms(
                p,
                &mut scratch,
                call.arg("user"),
                call.arg("group"),
                mode.as_deref(),
                true,
                false,
            );
        }
    }
    if let Err(msg) = check_file(&name) {
        return Ok(error(ret, msg));
    }
    let mode = str_arg(&call, "mode").map(|m| m.to_lowercase());
    let Some(mode) = mode else {
        return Ok(error(ret, "Mode was not defined. How to process the file?"));
    };
    let content = str_arg(&call, "content");
    if mode != "delete" && content.is_none() {
        return Ok(error(
            ret,
            "Content can only be empty if mode is ['delete']",
        ));
    }
    if !["insert", "ensure", "delete", "replace"].contains(&mode.as_str()) {
        return Ok(error(ret, format!("Unknown mode: \"{mode}\"")));
    }
    let real = std::fs::canonicalize(&name).unwrap_or_else(|_| name.clone().into());
    if !real.is_file() {
        return Ok(error(
            ret,
            format!(
                "File \"{}\" does not exists or is not a file.",
                real.display()
            ),
        ));
    }
    let text = read_text(&real.to_string_lossy());
    let mut body: Vec<String> = super::diff::lines(&text)
        .into_iter()
        .map(str::to_owned)
        .collect();
    if body.last().is_some_and(|l| !eol(l).is_empty()) {
        body.push(String::new());
    }
    if text.is_empty() && (mode == "delete" || mode == "replace") {
        body.clear();
    }
    let body = set_line(
        body,
        content.as_deref(),
        str_arg(&call, "match").as_deref(),
        &mode,
        str_arg(&call, "location").as_deref(),
        str_arg(&call, "before").as_deref(),
        str_arg(&call, "after").as_deref(),
        bool_arg(&call, "indent", true),
    );
    let mut body = match body {
        Ok(b) => b,
        Err(e) => return Ok(error(ret, e)),
    };
    if !body.is_empty() {
        for idx in 0..body.len() {
            if eol(&body[idx]).is_empty() && idx + 1 < body.len() {
                let prev = if idx == 0 { 1 } else { idx - 1 };
                body[idx] = with_eol(&body[prev], &body[idx]);
            }
        }
        if body.last().is_some_and(String::is_empty) {
            body.pop();
        }
    }
    let new = body.concat();
    if new == text {
        ret.comment = "No changes needed to be made".into();
        return Ok(ret);
    }
    let diff: Value = if bool_arg(&call, "show_changes", true) {
        let a = super::diff::lines(&text);
        let b: Vec<&str> = body.iter().map(String::as_str).collect();
        unified_diff(&a, &b).into()
    } else {
        true.into()
    };
    if !call.test
        && let Err(e) = super::managed::copy_into(new.as_bytes(), &real)
    {
        return Ok(error(ret, super::os_error(&e, &name)));
    }
    ret.changes.insert("diff".into(), diff);
    if call.test {
        ret.result = None;
        ret.comment = "Changes would be made".into();
    } else {
        ret.comment = "Changes were made".into();
    }
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unanchor_drops_flags_and_anchors() {
        assert_eq!(unanchor("^bar$"), "bar");
        assert_eq!(unanchor("(?i)^bar"), "bar");
        assert_eq!(unanchor("bar"), "bar");
    }

    #[test]
    fn comment_lines_prefix_matching_lines() {
        assert_eq!(
            comment_lines("foo\nbar\n", "^bar", "#", true),
            ("foo\n#bar\n".into(), true)
        );
        assert_eq!(
            comment_lines("foo\n#bar\n", "bar", "#", false),
            ("foo\nbar\n".into(), true)
        );
    }
}
