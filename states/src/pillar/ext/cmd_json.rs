//! `cmd_json` (`salt/pillar/cmd_json.py`): `- cmd_json: COMMAND` runs COMMAND (`%s` replaced
//! by the minion id) through `cmd.run`, without a shell as Salt's, and reads its output as a
//! JSON mapping. Where Salt logs "JSON data from ... failed to parse" and gives `{}`, saltq
//! answers an error naming the command, so a broken source is never a silent empty pillar.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{ExtContext, ExtPillar, salt_call};

/// One `cmd_json` entry.
pub struct CmdJson {
    /// The command as configured, `%s` not yet replaced.
    command: String,
}

/// Builds the source from its entry: one command string.
pub fn build(args: &Value, _opts: &Value) -> Result<Arc<dyn ExtPillar>, String> {
    Ok(Arc::new(CmdJson {
        command: command_arg(args)?,
    }))
}

/// The command of a `cmd_json`/`cmd_yaml` entry: a non-empty string.
pub(super) fn command_arg(args: &Value) -> Result<String, String> {
    match args {
        Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
        other => Err(format!(
            "expected the command to run as a string, got {other}"
        )),
    }
}

/// The output read as a mapping: `None` when it is not one, else the data.
pub(super) fn as_mapping(data: Value) -> Result<Map<String, Value>, String> {
    match data {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        other => Err(format!(
            "the output is not a mapping but {}",
            saltq_semantics::python::type_name(&other)
        )),
    }
}

/// Parses `cmd.run`'s output as `cmd_json` does.
pub fn parse(command: &str, output: &str) -> Result<Map<String, Value>, String> {
    let data: Value = serde_json::from_str(output)
        .map_err(|e| format!("JSON data from {command} failed to parse: {e}"))?;
    as_mapping(data).map_err(|e| format!("JSON data from {command}: {e}"))
}

impl ExtPillar for CmdJson {
    fn name(&self) -> &str {
        "cmd_json"
    }

    fn compile(&self, cx: &ExtContext<'_>) -> Result<Map<String, Value>, String> {
        let command = self.command.replace("%s", cx.minion_id);
        let out = salt_call(
            cx,
            "cmd.run",
            vec![Value::String(command.clone())],
            Map::new(),
        )?;
        parse(&command, &saltq_semantics::python::str(&out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compile(cfg: Value, id: &str) -> Result<Map<String, Value>, String> {
        let src = build(&cfg, &Value::Null)?;
        let (grains, pillar, opts) = (json!({}), Map::new(), json!({}));
        src.compile(&ExtContext {
            minion_id: id,
            grains: &grains,
            pillar: &pillar,
            pillarenv: None,
            opts: &opts,
        })
    }

    #[test]
    fn runs_the_command_with_the_minion_id_and_keeps_key_order() {
        let got = compile(
            json!(r#"echo '{"id": "%s", "b": [1, 2], "a": true}'"#),
            "web1",
        )
        .unwrap();
        assert_eq!(
            Value::Object(got.clone()),
            json!({"id": "web1", "b": [1, 2], "a": true})
        );
        assert_eq!(got.keys().collect::<Vec<_>>(), ["id", "b", "a"]);
    }

    #[test]
    fn bad_output_and_bad_config_are_errors_naming_them() {
        let err = compile(json!("echo not json"), "m").unwrap_err();
        assert!(
            err.starts_with("JSON data from echo not json failed to parse"),
            "{err}"
        );
        let err = compile(json!("echo [1]"), "m").unwrap_err();
        assert!(err.contains("not a mapping but list"), "{err}");
        assert!(build(&json!({"cmd": "x"}), &Value::Null).is_err());
        assert!(build(&json!(""), &Value::Null).is_err());
    }
}
