//! Salt's CLI outputters (`--out nested|json|yaml|txt|raw|quiet|highstate`), reproducing
//! byte for byte what Salt 3007.8 prints, with and without colour.
//!
//! Golden files made by real Salt (`tests/data/output/gen.py`) pin the output.

mod highstate;
mod json;
mod nested;
mod text;
mod yaml;

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

pub use highstate::HighstateOptions;
pub use yaml::dump as yaml_dump;

/// One of Salt's outputters, as named by `--out`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Outputter {
    /// The default: indented keys and values (`salt/output/nested.py`).
    #[default]
    Nested,
    /// `json.dumps`, four-space indent by default (`salt/output/json_out.py`).
    Json,
    /// `yaml.safe_dump` in block style (`salt/output/yaml_out.py`).
    Yaml,
    /// `id: line` per line of output (`salt/output/txt.py`).
    Txt,
    /// Python's `str()` of the data (`salt/output/raw.py`).
    Raw,
    /// Nothing at all (`salt/output/no_out_quiet.py`).
    Quiet,
    /// State runs: a block per state and a summary (`salt/output/highstate.py`);
    /// what `state.*` functions ask for.
    Highstate,
}

impl Outputter {
    /// Every outputter, in the order they are listed to users.
    pub const ALL: [Outputter; 7] = [
        Outputter::Nested,
        Outputter::Json,
        Outputter::Yaml,
        Outputter::Txt,
        Outputter::Raw,
        Outputter::Quiet,
        Outputter::Highstate,
    ];

    /// The name `--out` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Outputter::Nested => "nested",
            Outputter::Json => "json",
            Outputter::Yaml => "yaml",
            Outputter::Txt => "txt",
            Outputter::Raw => "raw",
            Outputter::Quiet => "quiet",
            Outputter::Highstate => "highstate",
        }
    }
}

impl fmt::Display for Outputter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An `--out` value that names no outputter saltq has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown outputter {name:?}: expected one of nested, json, yaml, txt, raw, quiet, highstate"
)]
pub struct UnknownOutputter {
    /// The name that was given.
    pub name: String,
}

impl FromStr for Outputter {
    type Err = UnknownOutputter;

    /// Parses an `--out` name; `text` is accepted for `txt`, as Salt does.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "nested" => Ok(Outputter::Nested),
            "json" => Ok(Outputter::Json),
            "yaml" => Ok(Outputter::Yaml),
            "txt" | "text" => Ok(Outputter::Txt),
            "raw" => Ok(Outputter::Raw),
            "quiet" => Ok(Outputter::Quiet),
            "highstate" => Ok(Outputter::Highstate),
            other => Err(UnknownOutputter {
                name: other.to_owned(),
            }),
        }
    }
}

/// The CLI options that change how an outputter prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutputOptions {
    /// Colour escapes on (`--force-color`, or stdout is a terminal and no
    /// `--no-color`). Only `nested` and `highstate` use colour.
    pub color: bool,
    /// `--out-indent`: None leaves each outputter's default (json 4, yaml 2);
    /// a negative value prints json on one line and yaml in flow style;
    /// yaml honours only 2 to 9. Json indents above 1024 are treated as 1024.
    pub indent: Option<i64>,
}

/// Exactly what Salt prints to stdout for `data` with outputter `out`: the
/// outputter's text with trailing whitespace removed and one newline added,
/// or the empty string when that text is empty (Salt then prints nothing).
///
/// `data` is what the salt CLI hands to the outputter: without `--static`,
/// one call per returning minion with `{minion_id: return}`; with `--static`,
/// one call with the returns of all minions, `{minion_id: return, ...}`.
/// `salt-call` passes `{"local": return}`. Dicts are printed in their key order
/// by json, txt and raw, and sorted by nested and yaml, as Salt does.
///
/// This is [`render_with_retcode`] with retcode 0, which is what `--static` uses.
pub fn render(out: Outputter, data: &Value, opts: &OutputOptions) -> String {
    render_with_retcode(out, data, opts, 0)
}

/// [`render`] for a return whose retcode is known: the salt CLI passes each
/// minion's retcode (`_retcode`) to the outputter when not `--static`, and the
/// nested outputter then colours keys, separators and `|_` red instead of cyan
/// and green. The retcode changes nothing else and nothing without colour.
pub fn render_with_retcode(
    out: Outputter,
    data: &Value,
    opts: &OutputOptions,
    retcode: i64,
) -> String {
    render_with(out, data, opts, &HighstateOptions::default(), retcode)
}

/// [`render_with_retcode`] with the options of the `highstate` outputter
/// (`--state-output`, `--state-verbose`...), which no other outputter reads.
/// Where Salt's `highstate` outputter fails on the data (a list or a float at
/// the top, a state without `changes`...), Salt prints it with `nested`, and
/// so does this.
pub fn render_with(
    out: Outputter,
    data: &Value,
    opts: &OutputOptions,
    state: &HighstateOptions,
    retcode: i64,
) -> String {
    let text = match out {
        Outputter::Highstate => highstate::render(data, opts.color, state)
            .unwrap_or_else(|edited| nested::render(&edited, opts.color, retcode)),
        Outputter::Nested => nested::render(data, opts.color, retcode),
        Outputter::Json => json::render(data, opts.indent),
        Outputter::Yaml => yaml::render(data, opts.indent),
        Outputter::Txt => text::txt(data),
        Outputter::Raw => text::raw(data),
        Outputter::Quiet => String::new(),
    };
    let text = crate::python::rstrip(&text);
    if text.is_empty() {
        String::new()
    } else {
        format!("{text}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_round_trip() {
        for out in Outputter::ALL {
            assert_eq!(out.as_str().parse::<Outputter>(), Ok(out));
            assert_eq!(out.to_string(), out.as_str());
        }
        assert_eq!("text".parse::<Outputter>(), Ok(Outputter::Txt));
    }

    #[test]
    fn unknown_name_is_named_in_the_error() {
        let err = "pprint".parse::<Outputter>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown outputter \"pprint\": expected one of nested, json, yaml, txt, raw, quiet, highstate"
        );
    }

    #[test]
    fn ping_in_every_outputter() {
        let data = json!({"minion0": true});
        let opts = OutputOptions::default();
        let check = |out, expected: &str| assert_eq!(render(out, &data, &opts), expected);
        check(Outputter::Nested, "minion0:\n    True\n");
        check(Outputter::Json, "{\n    \"minion0\": true\n}\n");
        check(Outputter::Yaml, "minion0: true\n");
        check(Outputter::Txt, "minion0: True\n");
        check(Outputter::Raw, "{'minion0': True}\n");
        check(Outputter::Quiet, "");
        check(Outputter::Highstate, "minion0:\n    True\n");
    }

    #[test]
    fn nothing_printed_for_empty_output() {
        let opts = OutputOptions::default();
        assert_eq!(render(Outputter::Nested, &json!({}), &opts), "");
        assert_eq!(render(Outputter::Txt, &json!({"m": ""}), &opts), "");
        assert_eq!(render(Outputter::Raw, &json!(""), &opts), "");
    }

    #[test]
    fn absurd_indents_do_not_panic() {
        let data = json!({"a": [1, {"b": null}]});
        for indent in [i64::MIN, -1, 0, 1, 10, i64::MAX] {
            let opts = OutputOptions {
                color: true,
                indent: Some(indent),
            };
            for out in Outputter::ALL {
                let _ = render_with_retcode(out, &data, &opts, i64::MIN);
            }
        }
    }
}
