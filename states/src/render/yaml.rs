//! YAML 1.1 as Salt's loader (`salt/utils/yamlloader.py`, PyYAML's SafeLoader) reads it,
//! built on yaml-rust2's event parser so that a quoted scalar stays a string.
//!
//! What Salt's loader does and this one matches: YAML 1.1 booleans (`yes`/`no`/`on`/`off`
//! in three casings) and nulls (`~`, `null`, empty); integers in decimal, `0x`, `0b` and
//! base 60 (`1:30`); a leading-zero integer read as DECIMAL (`0644` is 644, Salt strips the
//! zeros so that modes read as written), except with a sign where PyYAML's octal remains;
//! floats need a dot (`1e3` is a string); timestamps stay strings; merge keys (`<<`);
//! maps keep their order; a duplicate key is an error ("found conflicting ID").
//! Not representable in JSON: `.inf`/`.nan` stay strings.

use saltq_semantics::python::yaml11_scalar;
use serde_json::{Map, Value};
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use super::RenderError;

/// Parses YAML 1.1 text into ordered JSON data, as Salt's `SaltYamlSafeLoader` with
/// ordered maps; an empty document is `null`.
pub fn load_yaml(text: &str) -> Result<Value, RenderError> {
    let split = pyyaml_anchor_names(text)?;
    let text = split.as_deref().unwrap_or(text);
    let mut builder = Builder {
        events: events(text)?,
        pos: 0,
        anchors: Default::default(),
        copied: 0,
    };
    builder.document()
}

/// The characters PyYAML allows in an anchor or alias name.
fn pyyaml_anchor_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// PyYAML ends an anchor or alias name at the first character outside `[0-9A-Za-z_-]`, where
/// one of `?:,]}%@` and a backquote may follow it (vim-formula's `&colorcolumn: x` is an
/// anchored empty key, `null` in JSON), and refuses any other character there. YAML 1.2, and
/// yaml-rust2 with it, reads on (`colorcolumn:` is the name and `x` the value). The names
/// yaml-rust2's scanner finds are split where PyYAML's end, by a space, so that both read the
/// same nodes; `None` when no name needs it. A scanner error is left to the parse.
fn pyyaml_anchor_names(text: &str) -> Result<Option<String>, RenderError> {
    if !text.contains(['&', '*']) {
        return Ok(None);
    }
    let mut splits = Vec::new();
    for yaml_rust2::scanner::Token(mark, token) in yaml_rust2::scanner::Scanner::new(text.chars()) {
        let name = match &token {
            yaml_rust2::scanner::TokenType::Anchor(n)
            | yaml_rust2::scanner::TokenType::Alias(n) => n,
            _ => continue,
        };
        let Some((at, c)) = name
            .chars()
            .enumerate()
            .find(|(_, c)| !pyyaml_anchor_char(*c))
        else {
            continue;
        };
        if at == 0 || !"?:,]}%@`".contains(c) {
            // Salt's YAML renderer keeps a scanner error's problem alone (libyaml's words) and
            // its line.
            return Err(RenderError {
                message: "did not find expected alphabetic or numeric character".into(),
                line: Some(mark.line()),
            });
        }
        // The name starts one character after the `&` or `*` the token is marked at.
        splits.push(mark.index() + 1 + at);
    }
    if splits.is_empty() {
        return Ok(None);
    }
    let mut out = String::with_capacity(text.len() + splits.len());
    let mut next = splits.iter().peekable();
    for (i, c) in text.chars().enumerate() {
        if next.peek() == Some(&&i) {
            out.push(' ');
            next.next();
        }
        out.push(c);
    }
    Ok(Some(out))
}

/// yaml-rust2's error in PyYAML's words: a scanner error is its problem alone (Salt's YAML
/// renderer keeps only that, with the line apart); a parser error is "while parsing X",
/// the problem and where it is. The mark of the construct being parsed is not known here.
fn pyyaml_error(info: &str, mark: &Marker) -> String {
    if let Some(rest) = info.strip_prefix("while parsing ")
        && let Some((context, problem)) = rest.split_once(", ")
    {
        return format!("while parsing {context}\n{problem}\n{}", mark_text(mark));
    }
    match info {
        i if i.starts_with("tabs disallowed") => {
            "found character that cannot start any token".into()
        }
        "invalid indentation in quoted scalar" | "unclosed quote" => {
            "found unexpected end of stream".into()
        }
        other => other.to_string(),
    }
}

/// The parser's events, read in a loop: yaml-rust2's own `load` recurses once per level of
/// nesting, and block collections (`- - - x`) nest without a limit, so deep text overflowed
/// the stack. Nesting past [`MAX_DEPTH`] is refused at its line.
fn events(text: &str) -> Result<Vec<(Event, Marker)>, RenderError> {
    let mut parser = Parser::new_from_str(text);
    let mut events = Vec::new();
    let mut depth = 0usize;
    loop {
        let (event, mark) = parser.next_token().map_err(|err| {
            let mark = *err.marker();
            RenderError {
                message: pyyaml_error(err.info(), &mark),
                line: Some(mark.line()),
            }
        })?;
        match event {
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(RenderError {
                        message: format!(
                            "while composing a node\ncollections nested deeper than {MAX_DEPTH} \
                             levels\n{}",
                            mark_text(&mark)
                        ),
                        line: Some(mark.line()),
                    });
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            _ => {}
        }
        let end = event == Event::StreamEnd;
        events.push((event, mark));
        if end {
            return Ok(events);
        }
    }
}

struct Builder {
    events: Vec<(Event, Marker)>,
    pos: usize,
    anchors: std::collections::HashMap<usize, Node>,
    /// Nodes copied by aliases so far.
    copied: usize,
}

/// How deep collections may nest: the builder recurses per level (block collections have no
/// limit in the scanner; flow ones stop at 255).
const MAX_DEPTH: usize = 256;

/// How many nodes aliases may copy in one document. PyYAML shares an aliased object; here it
/// is copied, so nested aliases (`&b [*a, *a, ...]`) would grow exponentially with their depth.
const MAX_ALIAS_NODES: usize = 100_000;

/// The number of nodes in `node`, counting at most to `limit + 1`.
fn size(node: &Node, limit: usize) -> usize {
    let mut n = 1;
    let visit = |child: &Node, n: &mut usize| {
        if *n <= limit {
            *n += size(child, limit - *n);
        }
    };
    match node {
        Node::Scalar(..) => {}
        Node::Seq(items) => items.iter().for_each(|i| visit(i, &mut n)),
        Node::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            visit(k, &mut n);
            visit(v, &mut n);
        }),
    }
    n
}

/// A parsed node: the value, plus what a map needs of its keys (the merge key `<<`).
#[derive(Clone)]
enum Node {
    Scalar(Value, bool),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

fn mark_text(mark: &Marker) -> String {
    format!(
        "  in \"<unicode string>\", line {}, column {}",
        mark.line(),
        mark.col() + 1
    )
}

impl Builder {
    /// The stream's single document (`yaml.load`): none is `null`, a second one is
    /// PyYAML's "expected a single document" error.
    fn document(&mut self) -> Result<Value, RenderError> {
        let mut value = None;
        let mut first_mark: Option<Marker> = None;
        while self.pos < self.events.len() {
            let (event, mark) = (&self.events[self.pos].0, self.events[self.pos].1);
            match event {
                Event::DocumentStart => {
                    match first_mark {
                        None => {
                            // An implicit document starts where its first node does
                            // (yaml-rust2 marks it one column on).
                            let earliest = self.events[self.pos + 1..]
                                .iter()
                                .take(3)
                                .map(|e| e.1)
                                .filter(|n| n.line() == mark.line() && n.col() < mark.col())
                                .min_by_key(|n| n.col());
                            first_mark = Some(earliest.unwrap_or(mark));
                        }
                        Some(first) => {
                            return Err(RenderError {
                                message: format!(
                                    "expected a single document in the stream\n{}\nbut found another document\n{}",
                                    mark_text(&first),
                                    mark_text(&mark)
                                ),
                                line: Some(mark.line()),
                            });
                        }
                    }
                    self.pos += 1;
                }
                Event::StreamStart | Event::DocumentEnd | Event::Nothing => self.pos += 1,
                Event::StreamEnd => break,
                _ => {
                    let node = self.node()?;
                    value = Some(to_value(node)?);
                }
            }
        }
        Ok(value.unwrap_or(Value::Null))
    }

    fn node(&mut self) -> Result<Node, RenderError> {
        let (event, mark) = self.events[self.pos].clone();
        self.pos += 1;
        match event {
            Event::Alias(id) => {
                let node = self.anchors.get(&id).ok_or_else(|| RenderError {
                    message: format!("found undefined alias\n{}", mark_text(&mark)),
                    line: Some(mark.line()),
                })?;
                let budget = MAX_ALIAS_NODES - self.copied;
                let n = size(node, budget);
                if n > budget {
                    return Err(RenderError {
                        message: format!(
                            "found an alias past the {MAX_ALIAS_NODES} nodes aliases may copy \
                             in one document\n{}",
                            mark_text(&mark)
                        ),
                        line: Some(mark.line()),
                    });
                }
                self.copied += n;
                Ok(node.clone())
            }
            Event::Scalar(text, style, anchor, tag) => {
                let merge = style == TScalarStyle::Plain && text == "<<" && tag.is_none();
                let node = Node::Scalar(resolve(&text, style, tag.as_ref()), merge);
                if anchor > 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                Ok(node)
            }
            Event::SequenceStart(anchor, _) => {
                let mut items = Vec::new();
                while !matches!(self.events[self.pos].0, Event::SequenceEnd) {
                    items.push(self.node()?);
                }
                self.pos += 1;
                let node = Node::Seq(items);
                if anchor > 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                Ok(node)
            }
            Event::MappingStart(anchor, _) => {
                let mut pairs = Vec::new();
                while !matches!(self.events[self.pos].0, Event::MappingEnd) {
                    let key_mark = self.events[self.pos].1;
                    let key = self.node()?;
                    let value = self.node()?;
                    pairs.push((key, value, key_mark));
                }
                self.pos += 1;
                // PyYAML marks a block mapping at its first key.
                let mark = match pairs.first() {
                    Some((_, _, first))
                        if first.index() < mark.index() || mark.col() > first.col() =>
                    {
                        *first
                    }
                    _ => mark,
                };
                let node = Node::Map(flatten(pairs, &mark)?);
                if anchor > 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                Ok(node)
            }
            other => Err(RenderError {
                message: format!("unexpected YAML event {other:?}"),
                line: Some(mark.line()),
            }),
        }
    }
}

/// Applies merge keys: the merged pairs first (those not set in the map), then the map's own,
/// and checks for duplicate keys as Salt's `construct_mapping` does.
fn flatten(
    pairs: Vec<(Node, Node, Marker)>,
    map_mark: &Marker,
) -> Result<Vec<(Node, Node)>, RenderError> {
    let mut merged: Vec<(Node, Node)> = Vec::new();
    let mut own: Vec<(Node, Node, Marker)> = Vec::new();
    for (key, value, mark) in pairs {
        if matches!(key, Node::Scalar(_, true)) {
            match value {
                Node::Map(inner) => merged.extend(inner),
                Node::Seq(items) => {
                    let mut groups = Vec::new();
                    for item in items {
                        match item {
                            Node::Map(inner) => groups.push(inner),
                            _ => {
                                return Err(RenderError {
                                    message: format!(
                                        "while constructing a mapping\n{}\nexpected a mapping for merging, but found scalar",
                                        mark_text(map_mark)
                                    ),
                                    line: Some(mark.line()),
                                });
                            }
                        }
                    }
                    for group in groups.into_iter().rev() {
                        merged.extend(group);
                    }
                }
                Node::Scalar(..) => {
                    return Err(RenderError {
                        message: format!(
                            "while constructing a mapping\n{}\nexpected a mapping or list of mappings for merging, but found scalar",
                            mark_text(map_mark)
                        ),
                        line: Some(mark.line()),
                    });
                }
            }
        } else {
            own.push((key, value, mark));
        }
    }
    let own_keys: Vec<Option<String>> = own.iter().map(|(k, _, _)| key_string(k)).collect();
    let mut out: Vec<(Node, Node)> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (key, value) in merged {
        let name = key_string(&key);
        if name.is_some() && own_keys.contains(&name) {
            continue;
        }
        if let Some(name) = name {
            seen.retain(|s| s != &name);
            out.retain(|(k, _)| key_string(k).as_deref() != Some(name.as_str()));
            seen.push(name);
        }
        out.push((key, value));
    }
    let mut own_seen: Vec<String> = Vec::new();
    for (key, value, mark) in own {
        let Some(name) = key_string(&key) else {
            return Err(RenderError {
                message: format!(
                    "while constructing a mapping\n{}\nfound unacceptable key\n{}",
                    mark_text(map_mark),
                    mark_text(&mark)
                ),
                line: Some(mark.line()),
            });
        };
        if own_seen.contains(&name) {
            return Err(RenderError {
                message: format!(
                    "while constructing a mapping\n{}\nfound conflicting ID '{}'\n{}",
                    mark_text(map_mark),
                    python_key(&key),
                    mark_text(&mark)
                ),
                line: Some(mark.line()),
            });
        }
        own_seen.push(name);
        out.push((key, value));
    }
    Ok(out)
}

/// The JSON key a YAML key becomes (as `json.dumps` writes Python keys), `None` when the key
/// is not hashable in Python (a list or a map).
fn key_string(key: &Node) -> Option<String> {
    match key {
        Node::Scalar(Value::String(s), _) => Some(s.clone()),
        Node::Scalar(Value::Null, _) => Some("null".into()),
        Node::Scalar(other, _) => Some(other.to_string()),
        _ => None,
    }
}

/// A key as Python's `str()` prints it, for error messages.
fn python_key(key: &Node) -> String {
    match key {
        Node::Scalar(Value::String(s), _) => s.clone(),
        Node::Scalar(Value::Null, _) => "None".into(),
        Node::Scalar(Value::Bool(true), _) => "True".into(),
        Node::Scalar(Value::Bool(false), _) => "False".into(),
        Node::Scalar(other, _) => other.to_string(),
        _ => String::new(),
    }
}

fn to_value(node: Node) -> Result<Value, RenderError> {
    Ok(match node {
        Node::Scalar(v, _) => v,
        Node::Seq(items) => {
            Value::Array(items.into_iter().map(to_value).collect::<Result<_, _>>()?)
        }
        Node::Map(pairs) => {
            let mut map = Map::new();
            for (k, v) in pairs {
                let key = key_string(&k).unwrap_or_default();
                map.insert(key, to_value(v)?);
            }
            Value::Object(map)
        }
    })
}

/// Resolves a scalar by YAML 1.1's implicit types, or by its explicit `!!` tag, as
/// `saltq_semantics::python::yaml11_scalar` types it (the one YAML 1.1 resolver).
fn resolve(text: &str, style: TScalarStyle, tag: Option<&Tag>) -> Value {
    if let Some(tag) = tag {
        let suffix = tag.suffix.rsplit(':').next().unwrap_or("");
        return match suffix {
            "str" | "binary" | "timestamp" => Value::String(text.into()),
            "int" | "float" | "bool" | "null" => yaml11_scalar(text, Some(suffix)),
            _ => yaml11_scalar(text, None),
        };
    }
    if style != TScalarStyle::Plain {
        return Value::String(text.into());
    }
    yaml11_scalar(text, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_zero_is_decimal_and_quoted_stays_string() {
        let v = load_yaml("a: 0644\nb: '0644'\nc: -012\nd: 1e3\n").unwrap();
        assert_eq!(v["a"], 644);
        assert_eq!(v["b"], "0644");
        assert_eq!(v["c"], -10);
        assert_eq!(v["d"], "1e3");
    }

    #[test]
    fn anchor_names_end_where_pyyaml_ends_them() {
        // vim-formula's pillar.example: an anchored empty key (None in Python).
        let v = load_yaml("lets:\n  &colorcolumn: join(range(121,121),\",\")\n").unwrap();
        assert_eq!(
            v,
            serde_json::json!({"lets": {"null": "join(range(121,121),\",\")"}})
        );
        let v = load_yaml("a: &x 1\nb: *x\n? &k\n: v\nq: 'text &n: *m:'\n").unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": 1, "b": 1, "null": "v", "q": "text &n: *m:"})
        );
        let v = load_yaml("k: &a1 v\nl: {x: *a1}\n").unwrap();
        assert_eq!(v, serde_json::json!({"k": "v", "l": {"x": "v"}}));
        let e = load_yaml("a: &x.y 1\n").unwrap_err();
        assert_eq!(
            e.message,
            "did not find expected alphabetic or numeric character"
        );
        assert_eq!(e.line, Some(1));
    }
}
