//! Salt's `debconf` state module (`salt/states/debconfmod.py`): `debconf.set` answers debconf
//! questions, `debconf.set_file` loads a selections file (rendered first with `template`).
//! The execution side (`salt/modules/debconfmod.py`: `show`/`get_selections`, `set`,
//! `set_file`) runs `debconf-get-selections` and `debconf-set-selections` (debconf-utils),
//! which honour `DEBCONF_SYSTEMRC` as Salt's do.

use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use saltq_exec::{Lit, Param};
use saltq_semantics::python;

use super::{Ret, StateCall, StateError, StateFunction, exec, state_handler};
use crate::render::{RenderContext, render_template};

/// The `debconf` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "debconf.set",
        params: &[Param::req("name"), Param::req("data")],
        kwargs: true,
        handler: state_handler!(set),
    },
    StateFunction {
        name: "debconf.set_file",
        params: &[
            Param::req("name"),
            Param::req("source"),
            Param::opt("template", Lit::None),
            Param::opt("context", Lit::None),
            Param::opt("defaults", Lit::None),
        ],
        kwargs: true,
        handler: state_handler!(set_file),
    },
];

/// Salt's `_unpack_lines` pattern: package, question, type, value.
static LINE: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?m)^([^#]\S+)[\t ]+(\S+)[\t ]+(\S+)[\t ]+([^\n]*)$")
        .expect("the selections pattern compiles")
});

async fn run(argv: &[&str]) -> Result<(String, bool), StateError> {
    let out = tokio::process::Command::new(argv[0])
        .args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StateError(format!(
                "{} not found: the debconf states need debconf-utils installed",
                argv[0]
            )),
            _ => StateError(format!("failed to run {}: {e}", argv.join(" "))),
        })?;
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.success(),
    ))
}

/// `debconf.show`: the package's `[question, type, value]` answers, `None` when it has none.
async fn show(package: &str) -> Result<Option<Vec<[String; 3]>>, StateError> {
    let (out, _) = run(&["debconf-get-selections"]).await?;
    let answers: Vec<[String; 3]> = LINE
        .captures_iter(&out)
        .filter(|c| &c[1] == package)
        .map(|c| [c[2].to_owned(), c[3].to_owned(), c[4].to_owned()])
        .collect();
    Ok((!answers.is_empty()).then_some(answers))
}

/// `debconf-set-selections <file>`.
async fn set_from(path: &str) -> Result<(), StateError> {
    run(&["debconf-set-selections", path]).await?;
    Ok(())
}

/// `debconf.set`: one answer through a temporary selections file.
async fn set_one(
    package: &str,
    question: &str,
    kind: &str,
    value: &str,
) -> Result<bool, StateError> {
    let file = tempfile::Builder::new()
        .prefix("salt-")
        .tempfile()
        .map_err(|e| StateError(format!("creating a selections file: {e}")))?;
    std::fs::write(file.path(), format!("{package} {question} {kind} {value}"))
        .map_err(|e| StateError(format!("writing {}: {e}", file.path().display())))?;
    set_from(&file.path().display().to_string()).await?;
    Ok(true)
}

async fn set(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    let Some(Value::Object(data)) = call.arg("data") else {
        return Err(StateError(format!(
            "debconf.set: 'data' must be a mapping of question to {{type, value}}, not {}",
            python::repr(call.arg("data").unwrap_or(&Value::Null))
        )));
    };
    let current = show(&name).await?;
    for (key, args) in data {
        let kind = args
            .get("type")
            .map(python::str)
            .ok_or_else(|| StateError(format!("debconf.set: the answer to {key} has no 'type'")))?;
        let raw = args.get("value").cloned().unwrap_or(Value::Null);
        let value = if kind == "boolean" {
            if python::truthy(&raw) {
                "true"
            } else {
                "false"
            }
            .to_owned()
        } else {
            python::str(&raw)
        };
        let want = [key.clone(), kind.clone(), value.clone()];
        if current.as_ref().is_some_and(|c| c.contains(&want)) {
            if ret.comment.is_empty() {
                ret.comment = "Unchanged answers: ".into();
            }
            ret.comment.push_str(&format!("{key} "));
        } else if call.test {
            ret.result = None;
            ret.changes
                .insert(key.clone(), json!(format!("New value: {value}")));
        } else if set_one(&name, key, &kind, &value).await? {
            let shown = if kind == "password" {
                "(password hidden)".to_owned()
            } else {
                value
            };
            ret.changes.insert(key.clone(), json!(shown));
        } else {
            ret.result = Some(false);
            ret.comment = "Some settings failed to be applied.".into();
            ret.changes.insert(key.clone(), json!("Failed to set!"));
        }
    }
    if ret.changes.is_empty() {
        ret.comment = "All specified answers are already set".into();
    }
    Ok(ret)
}

async fn set_file(call: StateCall) -> Result<Ret, StateError> {
    let name = call.name.clone();
    let mut ret = Ret::new(&name);
    let context = match call.arg("context") {
        None => json!({}),
        Some(c @ Value::Object(_)) => c.clone(),
        Some(_) => {
            ret.result = Some(false);
            ret.comment = "Context must be formed as a dict".into();
            return Ok(ret);
        }
    };
    let defaults = match call.arg("defaults") {
        None => json!({}),
        Some(d @ Value::Object(_)) => d.clone(),
        Some(_) => {
            ret.result = Some(false);
            ret.comment = "Defaults must be formed as a dict".into();
            return Ok(ret);
        }
    };
    if call.test {
        ret.result = None;
        ret.comment = "Debconf selections would have been set.".into();
        return Ok(ret);
    }
    let source = call.arg("source").map(python::str).unwrap_or_default();
    let saltenv = json!(call.saltenv);
    let mut path = json!(source);
    let local = source
        .strip_prefix("file://")
        .or_else(|| source.starts_with('/').then_some(source.as_str()));
    if let Some(template) = call.arg("template").filter(|t| python::truthy(t)) {
        let engine = python::str(template);
        if let Some(file) = local {
            // cp.get_template on a local file: rendered here (defaults, then context over
            // them) into a temporary file.
            let text = match std::fs::read_to_string(file) {
                Ok(t) => t,
                Err(_) => {
                    ret.result = Some(false);
                    ret.comment = "Unable to set debconf selections from file.".into();
                    return Ok(ret);
                }
            };
            let mut extra = defaults.as_object().cloned().unwrap_or_default();
            extra.extend(context.as_object().cloned().unwrap_or_default());
            let rc = RenderContext {
                ctx: call.ctx.clone(),
                grains: call.ctx.grains(),
                pillar: call.ctx.pillar(),
                opts: (*call.ctx.opts).clone(),
                saltenv: call.saltenv.clone(),
                sls: call.sls.clone(),
                source: file.to_owned(),
                extra,
            };
            let out = tokio::task::spawn_blocking(move || render_template(&text, &engine, &rc))
                .await
                .map_err(|e| StateError(format!("the template render stopped: {e}")))?
                .map_err(|e| StateError(e.message))?;
            let tmp = tempfile::Builder::new()
                .prefix("salt-")
                .tempfile()
                .map_err(|e| StateError(format!("creating a selections file: {e}")))?;
            std::fs::write(tmp.path(), out)
                .map_err(|e| StateError(format!("writing {}: {e}", tmp.path().display())))?;
            set_from(&tmp.path().display().to_string()).await?;
            drop(tmp);
            ret.comment = "Debconf selections were set.".into();
            return Ok(ret);
        }
        let kwargs = Map::from_iter([
            ("path".to_owned(), json!(source)),
            ("dest".to_owned(), Value::Null),
            ("template".to_owned(), template.clone()),
            ("saltenv".to_owned(), saltenv.clone()),
            ("context".to_owned(), context),
            ("defaults".to_owned(), defaults),
        ]);
        path = exec(&call, "cp.get_template", vec![], kwargs).await?;
    }
    let cached = exec(&call, "cp.cache_file", vec![path, saltenv], Map::new()).await?;
    if python::truthy(&cached) {
        set_from(&python::str(&cached)).await?;
        ret.comment = "Debconf selections were set.".into();
    } else {
        ret.result = Some(false);
        ret.comment = "Unable to set debconf selections from file.".into();
    }
    Ok(ret)
}

#[cfg(test)]
mod tests {
    use super::LINE;

    #[test]
    fn selections_lines_read_as_salts_pattern() {
        let text = "# comment\npkg\tpkg/q\tstring\thello world\npkg pkg/e string\t\nbad line\n";
        let got: Vec<Vec<&str>> = LINE
            .captures_iter(text)
            .map(|c| {
                (1..=4)
                    .map(|i| c.get(i).map_or("", |m| m.as_str()))
                    .collect()
            })
            .collect();
        assert_eq!(
            got,
            [
                vec!["pkg", "pkg/q", "string", "hello world"],
                vec!["pkg", "pkg/e", "string", ""]
            ]
        );
    }
}
