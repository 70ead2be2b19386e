//! Salt's `yaml` outputter: PyYAML's `safe_dump` through libyaml's emitter
//! (`CSafeDumper`), which is what Salt uses when PyYAML is built with libyaml.
//!
//! The representer side follows PyYAML (dict keys sorted, which strings need
//! quotes because they would read back as another type); the layout follows
//! libyaml's emitter (styles, line folding at 80 columns, indentation).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use crate::python::{number_repr, yaml_float};

/// Renders `data` as `yaml_out.output` does: block style (indent 2, or the
/// `--out-indent` when it is 2 to 9), or flow style when the indent is negative.
pub(super) fn render(data: &Value, indent: Option<i64>) -> String {
    let (flow_style, best_indent) = match indent {
        None => (false, 2),
        Some(n) if n < 0 => (true, 2),
        Some(n @ 2..=9) => (false, n),
        Some(_) => (false, 2),
    };
    let mut emitter = Emitter::new(flow_style, best_indent);
    emitter.node(data, Context::ROOT);
    // DOCUMENT-END (implicit): finish the last line.
    emitter.write_indent();
    emitter.out
}

/// PyYAML's `yaml.dump(data, Dumper=CSafeDumper, default_flow_style=..., sort_keys=...)`:
/// with `default_flow_style` None (Salt's YAML serializer), a list or dict is written in flow
/// style when all its items are scalars, in block style otherwise.
pub fn dump(data: &Value, default_flow_style: Option<bool>, sort_keys: bool) -> String {
    let mut emitter = Emitter::new(default_flow_style == Some(true), 2);
    emitter.best_flow = default_flow_style.is_none();
    emitter.sort_keys = sort_keys;
    emitter.node(data, Context::ROOT);
    emitter.write_indent();
    emitter.out
}

/// Whether PyYAML's representer picks flow style for a collection of these items when
/// `default_flow_style` is None: all of them scalars.
fn all_scalars<'a>(mut items: impl Iterator<Item = &'a Value>) -> bool {
    items.all(|v| !v.is_array() && !v.is_object())
}

/// A scalar as PyYAML's representer hands it to the emitter.
struct Scalar {
    /// The text to write.
    value: String,
    /// Whether the text reads back as its own type when written plain.
    plain_implicit: bool,
    /// Whether the text reads back as its own type when quoted (true only for strings).
    quoted_implicit: bool,
}

impl Scalar {
    /// The scalar PyYAML's `SafeRepresenter` makes of a JSON scalar.
    fn of(v: &Value) -> Scalar {
        let typed = |value: String| Scalar {
            value,
            plain_implicit: true,
            quoted_implicit: false,
        };
        match v {
            Value::Null => typed("null".to_owned()),
            Value::Bool(b) => typed(if *b { "true" } else { "false" }.to_owned()),
            Value::Number(n) if n.is_f64() => typed(yaml_float(n.as_f64().unwrap_or(f64::NAN))),
            Value::Number(n) => typed(number_repr(n)),
            Value::String(s) => Scalar::string(s),
            // Collections are not scalars; callers never ask.
            Value::Array(_) | Value::Object(_) => typed(String::new()),
        }
    }

    /// A string scalar: plain only if no implicit resolver claims the text.
    fn string(s: &str) -> Scalar {
        Scalar {
            value: s.to_owned(),
            plain_implicit: !resolves_to_other_type(s),
            quoted_implicit: true,
        }
    }
}

/// PyYAML's implicit resolvers (YAML 1.1): which first characters select which patterns.
static RESOLVERS: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    let table: [(&str, &str); 8] = [
        (
            "yYnNtTfFoO",
            r"yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
        ),
        (
            "-+0123456789.",
            r"[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
        ),
        (
            "-+0123456789",
            r"[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
        ),
        ("<", r"<<"),
        ("~nN", r"~|null|Null|NULL|"),
        (
            "0123456789",
            r"[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?",
        ),
        ("=", r"="),
        ("!&*", r"!|&|\*"),
    ];
    table
        .into_iter()
        .filter_map(|(first, pattern)| {
            Regex::new(&format!(r"\A(?:{pattern})\z"))
                .ok()
                .map(|re| (first, re))
        })
        .collect()
});

/// Whether PyYAML's resolver would read `s`, written plain, as something other
/// than a string (a bool, number, null, timestamp, merge key...).
fn resolves_to_other_type(s: &str) -> bool {
    let first = s.chars().next();
    // Python's `$` also matches before a final newline.
    let candidates = [Some(s), s.strip_suffix('\n')];
    RESOLVERS.iter().any(|(firsts, re)| {
        let applies = match first {
            None => firsts.contains('n'), // only the null resolver has '' among its first characters
            Some(c) => firsts.contains(c),
        };
        applies && candidates.iter().flatten().any(|c| re.is_match(c))
    })
}

/// Which kind of position a node is emitted in (libyaml's context flags).
#[derive(Clone, Copy, Default)]
struct Context {
    /// Inside a mapping (as key or value).
    mapping: bool,
    /// A simple (single-line, `key:`) mapping key.
    simple_key: bool,
}

impl Context {
    /// The document root.
    const ROOT: Context = Context {
        mapping: false,
        simple_key: false,
    };
    /// A sequence item.
    const ITEM: Context = Context {
        mapping: false,
        simple_key: false,
    };
    /// A mapping value, or a key written after `? `.
    const VALUE: Context = Context {
        mapping: true,
        simple_key: false,
    };
    /// A key written as `key:`.
    const SIMPLE_KEY: Context = Context {
        mapping: true,
        simple_key: true,
    };
}

/// How a scalar is written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    /// Unquoted.
    Plain,
    /// `'...'`, quotes doubled, line breaks doubled.
    Single,
    /// `"..."` with backslash escapes.
    Double,
}

/// What libyaml's `yaml_emitter_analyze_scalar` learns about a scalar's text.
struct Analysis {
    /// The text is empty.
    empty: bool,
    /// The text holds a line break.
    multiline: bool,
    /// May be written plain inside `[...]`/`{...}`.
    flow_plain_allowed: bool,
    /// May be written plain in block style.
    block_plain_allowed: bool,
    /// May be written single-quoted.
    single_quoted_allowed: bool,
}

/// libyaml's `IS_BREAK`.
fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's `IS_BLANKZ`: space, tab, a line break, NUL or the end of the text.
fn is_blankz(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => matches!(c, ' ' | '\t' | '\0') || is_break(c),
    }
}

/// libyaml's `IS_PRINTABLE`: four-byte UTF-8 characters are not printable.
fn is_printable(c: char) -> bool {
    matches!(u32::from(c), 0x0A | 0x20..=0x7E | 0xA0..=0xD7FF | 0xE000..=0xFFFD) && c != '\u{feff}'
}

/// `yaml_emitter_analyze_scalar`.
fn analyze(text: &str) -> Analysis {
    if text.is_empty() {
        return Analysis {
            empty: true,
            multiline: false,
            flow_plain_allowed: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
        };
    }
    let chars: Vec<char> = text.chars().collect();
    let mut block_indicators = false;
    let mut flow_indicators = false;
    let mut line_breaks = false;
    let mut special_characters = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;
    let mut previous_space = false;
    let mut previous_break = false;

    if text.starts_with("---") || text.starts_with("...") {
        block_indicators = true;
        flow_indicators = true;
    }
    let mut preceded_by_whitespace = true;
    let mut followed_by_whitespace = is_blankz(chars.get(1).copied());
    let last = chars.len() - 1;
    for (i, &c) in chars.iter().enumerate() {
        if i == 0 {
            if "#,[]{}&*!|>'\"%@`".contains(c) {
                flow_indicators = true;
                block_indicators = true;
            }
            if c == '?' || c == ':' {
                flow_indicators = true;
                if followed_by_whitespace {
                    block_indicators = true;
                }
            }
            if c == '-' && followed_by_whitespace {
                flow_indicators = true;
                block_indicators = true;
            }
        } else {
            if ",?[]{}".contains(c) {
                flow_indicators = true;
            }
            if c == ':' {
                flow_indicators = true;
                if followed_by_whitespace {
                    block_indicators = true;
                }
            }
            if c == '#' && preceded_by_whitespace {
                flow_indicators = true;
                block_indicators = true;
            }
        }
        if !is_printable(c) {
            special_characters = true;
        }
        if is_break(c) {
            line_breaks = true;
        }
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= i == last;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            leading_break |= i == 0;
            trailing_break |= i == last;
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blankz(Some(c));
        followed_by_whitespace = is_blankz(chars.get(i + 2).copied());
    }

    let mut a = Analysis {
        empty: false,
        multiline: line_breaks,
        flow_plain_allowed: true,
        block_plain_allowed: true,
        single_quoted_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
    }
    if break_space {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if line_breaks {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
    }
    if flow_indicators {
        a.flow_plain_allowed = false;
    }
    if block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// libyaml's emitter state, driven recursively instead of by an event queue.
struct Emitter {
    /// Everything written so far.
    out: String,
    /// Collections in flow style (`--out-indent` negative).
    flow_style: bool,
    /// Collections of scalars only in flow style (`default_flow_style=None`).
    best_flow: bool,
    /// Mapping keys sorted (PyYAML's `sort_keys=True`).
    sort_keys: bool,
    /// Spaces per indentation level.
    best_indent: i64,
    /// Column after which lines are folded.
    best_width: i64,
    /// The current indentation (-1 before the root node).
    indent: i64,
    /// Indentations to return to.
    indents: Vec<i64>,
    /// Depth inside `[...]`/`{...}`.
    flow_level: usize,
    /// Column of the next character, in characters.
    column: i64,
    /// The last character written was whitespace.
    whitespace: bool,
    /// Only indentation and indicators are on the current line so far.
    indention: bool,
    /// The node being emitted is inside a mapping.
    mapping_context: bool,
    /// The node being emitted is a simple key.
    simple_key_context: bool,
}

impl Emitter {
    /// A fresh emitter at the start of the stream.
    fn new(flow_style: bool, best_indent: i64) -> Emitter {
        Emitter {
            out: String::new(),
            flow_style,
            best_flow: false,
            sort_keys: true,
            best_indent,
            best_width: 80,
            indent: -1,
            indents: Vec::new(),
            flow_level: 0,
            column: 0,
            whitespace: true,
            indention: true,
            mapping_context: false,
            simple_key_context: false,
        }
    }

    /// `yaml_emitter_increase_indent`.
    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { self.best_indent } else { 0 };
        } else if !indentless {
            self.indent += self.best_indent;
        }
    }

    /// Returns to the previous indentation.
    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    /// `PUT`: one character that is not a line break.
    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    /// `PUT_BREAK`: a newline.
    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// `WRITE_BREAK`: copies a line break character from the text.
    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    /// `yaml_emitter_write_indent`.
    fn write_indent(&mut self) {
        let indent = self.indent.max(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    /// `yaml_emitter_write_indicator`.
    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in indicator.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    /// `yaml_emitter_emit_node`.
    fn node(&mut self, v: &Value, ctx: Context) {
        self.mapping_context = ctx.mapping;
        self.simple_key_context = ctx.simple_key;
        match v {
            Value::Array(items) => self.sequence(items),
            Value::Object(map) => self.mapping(map),
            scalar => self.scalar(&Scalar::of(scalar)),
        }
    }

    /// A mapping key: always a string.
    fn key(&mut self, key: &str, ctx: Context) {
        self.mapping_context = ctx.mapping;
        self.simple_key_context = ctx.simple_key;
        self.scalar(&Scalar::string(key));
    }

    /// `yaml_emitter_check_simple_key` for a (string) key.
    fn is_simple_key(key: &str) -> bool {
        !analyze(key).multiline && key.len() <= 128
    }

    /// A sequence, in flow style if asked for, nested in flow, or empty.
    fn sequence(&mut self, items: &[Value]) {
        let best = self.best_flow && all_scalars(items.iter());
        if self.flow_level > 0 || self.flow_style || best || items.is_empty() {
            self.write_indicator("[", true, true, false);
            self.increase_indent(true, false);
            self.flow_level += 1;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    self.write_indicator(",", false, false, false);
                }
                if self.column > self.best_width {
                    self.write_indent();
                }
                self.node(item, Context::ITEM);
            }
            self.flow_level -= 1;
            self.pop_indent();
            self.write_indicator("]", false, false, false);
        } else {
            let indentless = self.mapping_context && !self.indention;
            self.increase_indent(false, indentless);
            for item in items {
                self.write_indent();
                self.write_indicator("-", true, false, true);
                self.node(item, Context::ITEM);
            }
            self.pop_indent();
        }
    }

    /// A mapping, its keys sorted unless `sort_keys` is off.
    fn mapping(&mut self, map: &Map<String, Value>) {
        let mut items: Vec<(&String, &Value)> = map.iter().collect();
        if self.sort_keys {
            items.sort_by(|a, b| a.0.cmp(b.0));
        }
        let best = self.best_flow && all_scalars(map.values());
        if self.flow_level > 0 || self.flow_style || best || items.is_empty() {
            self.write_indicator("{", true, true, false);
            self.increase_indent(true, false);
            self.flow_level += 1;
            for (i, (key, value)) in items.into_iter().enumerate() {
                if i > 0 {
                    self.write_indicator(",", false, false, false);
                }
                if self.column > self.best_width {
                    self.write_indent();
                }
                if Self::is_simple_key(key) {
                    self.key(key, Context::SIMPLE_KEY);
                    self.write_indicator(":", false, false, false);
                } else {
                    self.write_indicator("?", true, false, false);
                    self.key(key, Context::VALUE);
                    if self.column > self.best_width {
                        self.write_indent();
                    }
                    self.write_indicator(":", true, false, false);
                }
                self.node(value, Context::VALUE);
            }
            self.flow_level -= 1;
            self.pop_indent();
            self.write_indicator("}", false, false, false);
        } else {
            self.increase_indent(false, false);
            for (key, value) in items {
                self.write_indent();
                if Self::is_simple_key(key) {
                    self.key(key, Context::SIMPLE_KEY);
                    self.write_indicator(":", false, false, false);
                } else {
                    self.write_indicator("?", true, false, true);
                    self.key(key, Context::VALUE);
                    self.write_indent();
                    self.write_indicator(":", true, false, true);
                }
                self.node(value, Context::VALUE);
            }
            self.pop_indent();
        }
    }

    /// `yaml_emitter_select_scalar_style`.
    fn select_style(&self, a: &Analysis, scalar: &Scalar) -> Style {
        let mut style = Style::Plain;
        if self.simple_key_context && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain {
            let flow = self.flow_level > 0;
            if (flow && !a.flow_plain_allowed) || (!flow && !a.block_plain_allowed) {
                style = Style::Single;
            }
            if a.empty && (flow || self.simple_key_context) {
                style = Style::Single;
            }
            if !scalar.plain_implicit {
                style = Style::Single;
            }
        }
        if style == Style::Single && !a.single_quoted_allowed {
            style = Style::Double;
        }
        style
    }

    /// `yaml_emitter_emit_scalar`.
    fn scalar(&mut self, scalar: &Scalar) {
        let analysis = analyze(&scalar.value);
        let style = self.select_style(&analysis, scalar);
        if !scalar.quoted_implicit && style != Style::Plain {
            // A non-string that must be quoted gets the non-specific tag.
            if !self.whitespace {
                self.put(' ');
            }
            self.put('!');
            self.whitespace = false;
            self.indention = false;
        }
        self.increase_indent(true, false);
        let allow_breaks = !self.simple_key_context;
        match style {
            Style::Plain => self.write_plain(&scalar.value, allow_breaks),
            Style::Single => self.write_single_quoted(&scalar.value, allow_breaks),
            Style::Double => self.write_double_quoted(&scalar.value, allow_breaks),
        }
        self.pop_indent();
    }

    /// `yaml_emitter_write_plain_scalar`.
    fn write_plain(&mut self, text: &str, allow_breaks: bool) {
        if !self.whitespace && (!text.is_empty() || self.flow_level > 0) {
            self.put(' ');
        }
        let chars: Vec<char> = text.chars().collect();
        let mut spaces = false;
        let mut breaks = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_is_space = chars.get(i + 1) == Some(&' ');
                if allow_breaks && !spaces && self.column > self.best_width && !next_is_space {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    /// `yaml_emitter_write_single_quoted_scalar`.
    fn write_single_quoted(&mut self, text: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let chars: Vec<char> = text.chars().collect();
        let mut spaces = false;
        let mut breaks = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_is_space = chars.get(i + 1) == Some(&' ');
                if allow_breaks
                    && !spaces
                    && self.column > self.best_width
                    && i != 0
                    && i + 1 != chars.len()
                    && !next_is_space
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        if breaks {
            self.write_indent();
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// `yaml_emitter_write_double_quoted_scalar`.
    fn write_double_quoted(&mut self, text: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let chars: Vec<char> = text.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || c == '\u{feff}' || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                let short = match c {
                    '\0' => Some('0'),
                    '\u{07}' => Some('a'),
                    '\u{08}' => Some('b'),
                    '\t' => Some('t'),
                    '\n' => Some('n'),
                    '\u{0b}' => Some('v'),
                    '\u{0c}' => Some('f'),
                    '\r' => Some('r'),
                    '\u{1b}' => Some('e'),
                    '"' => Some('"'),
                    '\\' => Some('\\'),
                    '\u{85}' => Some('N'),
                    '\u{a0}' => Some('_'),
                    '\u{2028}' => Some('L'),
                    '\u{2029}' => Some('P'),
                    _ => None,
                };
                match short {
                    Some(e) => self.put(e),
                    None => {
                        let cp = u32::from(c);
                        let escaped = if cp <= 0xFF {
                            format!("x{cp:02X}")
                        } else if cp <= 0xFFFF {
                            format!("u{cp:04X}")
                        } else {
                            format!("U{cp:08X}")
                        };
                        for e in escaped.chars() {
                            self.put(e);
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > self.best_width
                    && i != 0
                    && i + 1 != chars.len()
                {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolver_flags_typed_looking_strings() {
        for s in [
            "",
            "~",
            "null",
            "yes",
            "No",
            "on",
            "1",
            "-1",
            "0x1F",
            "012",
            "1_000",
            "1:20",
            "1.0",
            ".5",
            ".inf",
            ".NaN",
            "<<",
            "=",
            "2001-12-14",
            "true\n",
        ] {
            assert!(
                resolves_to_other_type(s),
                "{s:?} should not stay a plain string"
            );
        }
        for s in [
            "1e3", "0o17", "nil", "y", "abc", "\n", "-", "1.0.0", "0x", "null\n\n",
        ] {
            assert!(
                !resolves_to_other_type(s),
                "{s:?} should stay a plain string"
            );
        }
    }

    #[test]
    fn floats_get_a_dot_before_the_exponent() {
        assert_eq!(yaml_float(1e20), "1.0e+20");
        assert_eq!(yaml_float(1.5e-7), "1.5e-07");
        assert_eq!(yaml_float(0.5), "0.5");
        assert_eq!(yaml_float(f64::NEG_INFINITY), "-.inf");
    }
}
