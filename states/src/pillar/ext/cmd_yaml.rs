//! `cmd_yaml` (`salt/pillar/cmd_yaml.py`): `- cmd_yaml: COMMAND` runs COMMAND (`%s` replaced
//! by the minion id) through `cmd.run_stdout` with a shell, as Salt's, and reads its output
//! as YAML 1.1. A failure to parse is an error naming the command (Salt logs and gives `{}`).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::cmd_json::{as_mapping, command_arg};
use super::{ExtContext, ExtPillar, salt_call};

/// One `cmd_yaml` entry.
pub struct CmdYaml {
    /// The command as configured, `%s` not yet replaced.
    command: String,
}

/// Builds the source from its entry: one command string.
pub fn build(args: &Value, _opts: &Value) -> Result<Arc<dyn ExtPillar>, String> {
    Ok(Arc::new(CmdYaml {
        command: command_arg(args)?,
    }))
}

/// Parses `cmd.run_stdout`'s output as `cmd_yaml` does.
pub fn parse(command: &str, output: &str) -> Result<Map<String, Value>, String> {
    let data = crate::render::load_yaml(output)
        .map_err(|e| format!("YAML data from '{command}' failed to parse: {}", e.message))?;
    as_mapping(data).map_err(|e| format!("YAML data from '{command}': {e}"))
}

impl ExtPillar for CmdYaml {
    fn name(&self) -> &str {
        "cmd_yaml"
    }

    fn compile(&self, cx: &ExtContext<'_>) -> Result<Map<String, Value>, String> {
        let command = self.command.replace("%s", cx.minion_id);
        let mut kwargs = Map::new();
        kwargs.insert("python_shell".into(), Value::Bool(true));
        let out = salt_call(
            cx,
            "cmd.run_stdout",
            vec![Value::String(command.clone())],
            kwargs,
        )?;
        parse(&command, &saltq_semantics::python::str(&out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn runs_through_a_shell_and_reads_yaml_1_1() {
        let src = build(
            &json!("printf 'id: %s\\nflag: yes\\nport: 0x1F\\n' | cat"),
            &Value::Null,
        )
        .unwrap();
        let (grains, pillar, opts) = (json!({}), Map::new(), json!({}));
        let got = src
            .compile(&ExtContext {
                minion_id: "db1",
                grains: &grains,
                pillar: &pillar,
                pillarenv: None,
                opts: &opts,
            })
            .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"id": "db1", "flag": true, "port": 31})
        );
    }

    #[test]
    fn bad_yaml_is_an_error_naming_the_command() {
        let err = parse("gen", "a: [1").unwrap_err();
        assert!(
            err.starts_with("YAML data from 'gen' failed to parse"),
            "{err}"
        );
        assert!(parse("gen", "- 1").unwrap_err().contains("not a mapping"));
        assert!(parse("gen", "").unwrap().is_empty());
    }
}
