//! Salt's default `nested` outputter (`salt/output/nested.py`): keys sorted and
//! indented by four, `----------` before nested dicts, `- ` before list items.

use serde_json::Value;

use crate::python::{number_repr, splitlines};

/// The escape sequences of `salt.utils.color.get_colors` that `nested` uses.
struct Palette {
    /// Dict keys and `----------` separators.
    cyan: &'static str,
    /// Strings and the `|_` of nested list items.
    green: &'static str,
    /// Numbers, booleans and None.
    light_yellow: &'static str,
    /// Keys, separators and `|_` when the minion's retcode is not 0.
    red: &'static str,
    /// Reset after every coloured piece.
    endc: &'static str,
}

/// Colours on: `TextFormat` prefixes every code with a reset (`0;`).
const COLORS: Palette = Palette {
    cyan: "\x1b[0;36m",
    green: "\x1b[0;32m",
    light_yellow: "\x1b[0;1;33m",
    red: "\x1b[0;31m",
    endc: "\x1b[0;0m",
};

/// Colours off: every sequence is empty.
const NO_COLORS: Palette = Palette {
    cyan: "",
    green: "",
    light_yellow: "",
    red: "",
    endc: "",
};

/// Renders `data` as `nested.output` does, before Salt right-strips it.
pub(super) fn render(data: &Value, color: bool, retcode: i64) -> String {
    render_at(data, color, retcode, 0)
}

/// [`render`] starting at column `indent` (`nested_indent`), as `highstate`
/// prints a state's changes (at 14).
pub(super) fn render_at(data: &Value, color: bool, retcode: i64, indent: usize) -> String {
    let display = Display {
        palette: if color { &COLORS } else { &NO_COLORS },
        failed: retcode != 0,
    };
    let mut lines = Vec::new();
    display.value(&mut lines, data, indent, "");
    lines.join("\n")
}

/// One `NestDisplay`: the colours and whether the return failed.
struct Display {
    /// The colours in use (all empty when colour is off).
    palette: &'static Palette,
    /// `_retcode != 0`: structure is drawn in red instead of cyan/green.
    failed: bool,
}

impl Display {
    /// `NestDisplay.ustring`: indent, colour, prefix, text, reset, suffix.
    fn line(&self, indent: usize, color: &str, msg: &str, prefix: &str, suffix: &str) -> String {
        let mut s = String::with_capacity(indent + msg.len() + 16);
        s.extend(std::iter::repeat_n(' ', indent));
        s.push_str(color);
        s.push_str(prefix);
        s.push_str(msg);
        s.push_str(self.palette.endc);
        s.push_str(suffix);
        s
    }

    /// The colour of dict keys and separators.
    fn key_color(&self) -> &'static str {
        if self.failed {
            self.palette.red
        } else {
            self.palette.cyan
        }
    }

    /// `NestDisplay.display`: appends the lines for `ret` to `out`.
    fn value(&self, out: &mut Vec<String>, ret: &Value, indent: usize, prefix: &str) {
        let p = self.palette;
        match ret {
            Value::Null => out.push(self.line(indent, p.light_yellow, "None", prefix, "")),
            Value::Bool(b) => {
                let msg = if *b { "True" } else { "False" };
                out.push(self.line(indent, p.light_yellow, msg, prefix, ""));
            }
            Value::Number(n) => {
                out.push(self.line(indent, p.light_yellow, &number_repr(n), prefix, ""));
            }
            Value::String(s) => {
                let cont = " ".repeat(prefix.chars().count());
                for (i, line) in splitlines(s, false).into_iter().enumerate() {
                    let line_prefix = if i == 0 { prefix } else { cont.as_str() };
                    // strip_colors (on by default): a minion cannot drive the terminal.
                    let line = line.replace('\x1b', "?");
                    out.push(self.line(indent, p.green, &line, line_prefix, ""));
                }
            }
            Value::Array(items) => {
                let color = if self.failed { p.red } else { p.green };
                for item in items {
                    match item {
                        Value::Array(_) => {
                            out.push(self.line(indent, color, "|_", "", ""));
                            self.value(out, item, indent + 2, "- ");
                        }
                        Value::Object(_) => {
                            out.push(self.line(indent, color, "|_", "", ""));
                            self.value(out, item, indent + 2, "");
                        }
                        _ => self.value(out, item, indent, "- "),
                    }
                }
            }
            Value::Object(map) => {
                let color = self.key_color();
                if indent > 0 {
                    out.push(self.line(indent, color, "----------", "", ""));
                }
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                for key in keys {
                    out.push(self.line(indent, color, key, prefix, ":"));
                    if let Some(val) = map.get(key) {
                        self.value(out, val, indent + 4, "");
                    }
                }
            }
        }
    }
}
