//! Salt's `yamlify_arg` (`salt/utils/args.py`): how a CLI argument string is typed by
//! PyYAML's YAML 1.1 loader with Salt's tweaks. One implementation for the CLI, the
//! master and the minion, pinned by cases recorded from Salt 3007.8.

use serde_json::{Map, Number, Value};

use super::repr::str as py_str;

/// Salt's `yamlify_arg` as observed with PyYAML's C loader and Salt's loader
/// tweaks: `1` is an int, `1.5` a float, `yes`/`True`/`on` true, `~`/`null`/`None`
/// null, `[1, 2]` a list, `{a: 1}` a dict, `'x'` the string `x`, `010` is 10,
/// `1:30` is 90 and dates stay strings. The original string comes back when
/// YAML fails, for blank text and document markers, digits with `_`, text with
/// tabs or newlines, a list or dict not written in brackets or braces, and a
/// `#` that would turn the text into a string or null.
///
/// Beyond Salt: a result JSON cannot hold (`.inf`, `.nan`) keeps the original
/// string, an integer beyond 64 bits becomes its decimal digits as a string,
/// dict keys become their Python `str()`, and YAML features a one-line argument
/// hardly uses (tags other than the standard scalar ones, directives, merge
/// keys) keep the original string.
pub fn yamlify(arg: &str) -> Value {
    let original = || Value::String(arg.to_owned());
    let stripped = arg.trim();
    if matches!(stripped, "" | "---" | "...") {
        return original();
    }
    if arg.contains('_') && stripped.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return original();
    }
    if arg.contains(['\t', '\r', '\n']) {
        return original();
    }
    if arg.contains('#') {
        return match yaml::load(arg) {
            Ok(yaml::Node::Str(_) | yaml::Node::Null) | Err(()) => original(),
            Ok(node) => to_json(&node).unwrap_or_else(original),
        };
    }
    if arg == "None" {
        return Value::Null;
    }
    let Ok(node) = yaml::load(arg) else {
        return original();
    };
    let keep = match &node {
        yaml::Node::Map(_) => !arg.starts_with('{'),
        yaml::Node::Seq(_) => !arg.starts_with('['),
        yaml::Node::Str(s) => s.is_empty() && matches!(arg, "|" | "!"),
        yaml::Node::Null => arg == "!",
        _ => false,
    };
    if keep {
        return original();
    }
    to_json(&node).unwrap_or_else(original)
}

/// PyYAML's YAML 1.1 typing of one scalar as Salt's loader constructs it, for the SLS
/// renderer: a plain scalar by the implicit resolvers (`on` is true, `1:30` is 90, `010` is
/// 10, `1e3` a string, `1.0e+3` a float, `~` null), or one under an explicit standard tag
/// (`tag` is its suffix: `int`, `float`, `bool`, `null`, `str`). Text no constructor reads,
/// and floats JSON cannot hold (`.inf`, `.nan`), stay the string itself.
pub fn yaml11_scalar(text: &str, tag: Option<&str>) -> Value {
    let node = match tag {
        None => yaml::resolve_plain(text),
        Some(tag) => yaml::scalar_tag(tag, text),
    };
    match node {
        Ok(node) => to_json(&node).unwrap_or_else(|| Value::String(text.to_owned())),
        Err(()) => Value::String(text.to_owned()),
    }
}

/// A loaded YAML node as JSON; `None` for a float JSON cannot hold.
fn to_json(node: &yaml::Node) -> Option<Value> {
    use yaml::Node;
    Some(match node {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(*b),
        Node::Int(i) => int_json(*i),
        Node::Float(f) => Value::Number(Number::from_f64(*f)?),
        Node::Str(s) => Value::String(s.clone()),
        Node::Seq(items) => Value::Array(items.iter().map(to_json).collect::<Option<_>>()?),
        Node::Map(pairs) => {
            let mut map = Map::new();
            for (k, v) in pairs {
                map.insert(py_str(&to_json(k)?), to_json(v)?);
            }
            Value::Object(map)
        }
    })
}

/// An integer as a JSON number, or as its digits when beyond 64 bits.
fn int_json(i: i128) -> Value {
    if let Ok(n) = i64::try_from(i) {
        Value::from(n)
    } else if let Ok(n) = u64::try_from(i) {
        Value::from(n)
    } else {
        Value::String(i.to_string())
    }
}

/// A loader for the one-line YAML documents CLI arguments are: plain and
/// quoted scalars typed by YAML 1.1's resolvers, flow collections, a single
/// block entry or pair, anchors and aliases, and the standard scalar tags,
/// following libyaml's scanner where it differs from the YAML spec.
mod yaml {
    use std::collections::HashMap;
    use std::sync::LazyLock;

    use regex::Regex;

    /// A loaded node, as PyYAML would construct it with Salt's loader.
    #[derive(Debug, Clone, PartialEq)]
    pub(super) enum Node {
        /// `~`, `null`, or nothing.
        Null,
        /// YAML 1.1 booleans (`yes`, `On`, `FALSE`...).
        Bool(bool),
        /// Integers (decimal, `0b`, `0x`, octal, sexagesimal).
        Int(i128),
        /// Floats, including `.inf` and `.nan`.
        Float(f64),
        /// Strings (quoted, or plain ones no resolver claims; dates too).
        Str(String),
        /// Sequences.
        Seq(Vec<Node>),
        /// Mappings in order.
        Map(Vec<(Node, Node)>),
    }

    /// Anything that is not a document saltq understands the way PyYAML does.
    type Result<T> = std::result::Result<T, ()>;

    /// Loads one document from a single line.
    pub(super) fn load(text: &str) -> Result<Node> {
        let mut p = Parser {
            s: text.chars().collect(),
            i: 0,
            anchors: HashMap::new(),
            depth: 0,
            copied: 0,
        };
        p.document()
    }

    /// The text before scalar resolution.
    enum Content {
        /// No node at all (`&a` alone, `a:` with no value).
        Empty,
        /// A plain scalar, to be typed by the resolvers.
        Plain(String),
        /// A quoted or block scalar: always a string.
        Quoted(String),
        /// A collection or an alias's value.
        Node(Node),
    }

    /// Whether a node is being read inside `[...]`/`{...}`.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Ctx {
        /// Top level.
        Block,
        /// Inside a flow collection.
        Flow,
    }

    /// The state of one load.
    struct Parser {
        /// The line as characters.
        s: Vec<char>,
        /// The next character's index.
        i: usize,
        /// Anchored nodes, for aliases.
        anchors: HashMap<String, Node>,
        /// How many collections deep the cursor is, to refuse absurd nesting.
        depth: usize,
        /// Nodes copied by aliases so far, to refuse alias bombs.
        copied: usize,
    }

    /// How deep collections may nest before the text is left a string.
    const MAX_DEPTH: usize = 64;

    /// How many nodes aliases may copy in one load before the text is left a string: nested
    /// aliases (`&b [*a, *a, ...]`) otherwise grow exponentially with their depth.
    const MAX_ALIAS_NODES: usize = 10_000;

    /// The number of nodes in `node`, counting at most to `limit + 1`.
    fn size(node: &Node, limit: usize) -> usize {
        match node {
            Node::Seq(items) => items.iter().fold(1, |n, item| {
                if n > limit {
                    n
                } else {
                    n + size(item, limit - n)
                }
            }),
            Node::Map(pairs) => pairs.iter().fold(1, |n, (k, v)| {
                if n > limit {
                    n
                } else {
                    let n = n + size(k, limit - n);
                    if n > limit { n } else { n + size(v, limit - n) }
                }
            }),
            _ => 1,
        }
    }

    /// Whitespace or the end of the text (`None`).
    fn blankz(c: Option<char>) -> bool {
        matches!(c, None | Some(' ' | '\t'))
    }

    impl Parser {
        /// Runs `parse` one nesting level deeper, refusing to go past [`MAX_DEPTH`].
        fn nested<T>(&mut self, parse: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
            if self.depth >= MAX_DEPTH {
                return Err(());
            }
            self.depth += 1;
            let result = parse(self);
            self.depth -= 1;
            result
        }

        /// The character at the cursor plus `ahead`.
        fn at(&self, ahead: usize) -> Option<char> {
            self.s.get(self.i + ahead).copied()
        }

        /// Whether the cursor is at `c`.
        fn is(&self, c: char) -> bool {
            self.at(0) == Some(c)
        }

        /// Skips blanks, then a comment to the end of the line.
        fn skip_space(&mut self) {
            while matches!(self.at(0), Some(' ' | '\t')) {
                self.i += 1;
            }
            if self.is('#') {
                self.i = self.s.len();
            }
        }

        /// Whether the cursor is at the end (after blanks and a comment).
        fn at_end(&mut self) -> bool {
            self.skip_space();
            self.i >= self.s.len()
        }

        /// Whether the three characters at the start are `marker` followed by a blank.
        fn starts_with_marker(&self, marker: &str) -> bool {
            let m: Vec<char> = marker.chars().collect();
            self.s.len() >= 3 && self.s[..3] == m[..] && blankz(self.s.get(3).copied())
        }

        /// `[---] node`, nothing after it.
        fn document(&mut self) -> Result<Node> {
            if self.starts_with_marker("...") || self.is('%') {
                return Err(());
            }
            let node = if self.starts_with_marker("---") {
                self.i = 3;
                if self.at_end() {
                    Node::Null
                } else {
                    self.inline_node(Ctx::Block)?
                }
            } else if self.at_end() {
                Node::Null
            } else {
                self.block_node()?
            };
            if self.at_end() { Ok(node) } else { Err(()) }
        }

        /// A block entry (`- x`), an explicit key (`? x`), a pair (`k: v`) or a plain node.
        fn block_node(&mut self) -> Result<Node> {
            self.skip_space();
            match (self.at(0), blankz(self.at(1))) {
                (Some('-'), true) => {
                    self.i += 1;
                    let item = if self.at_end() {
                        Node::Null
                    } else {
                        self.nested(Self::block_node)?
                    };
                    return Ok(Node::Seq(vec![item]));
                }
                (Some('?'), true) => {
                    self.i += 1;
                    let key = if self.at_end() {
                        Node::Null
                    } else {
                        self.nested(Self::block_node)?
                    };
                    return pair_map(key, Node::Null);
                }
                _ => {}
            }
            let node = self.inline_node(Ctx::Block)?;
            self.skip_space();
            if !(self.is(':') && blankz(self.at(1))) {
                return Ok(node);
            }
            self.i += 1;
            let value = if self.at_end() {
                Node::Null
            } else {
                self.inline_node(Ctx::Block)?
            };
            pair_map(node, value)
        }

        /// A node with its anchor and tag: a scalar, collection or alias.
        fn inline_node(&mut self, ctx: Ctx) -> Result<Node> {
            let (anchor, tag) = self.properties()?;
            let content = self.content(ctx)?;
            if matches!(content, Content::Empty) && anchor.is_none() && tag.is_none() {
                return Err(());
            }
            let node = apply_tag(tag.as_deref(), content)?;
            if let Some(name) = anchor {
                self.anchors.insert(name, node.clone());
            }
            Ok(node)
        }

        /// `&anchor` and `!tag`, in either order, at most one of each.
        fn properties(&mut self) -> Result<(Option<String>, Option<String>)> {
            let (mut anchor, mut tag) = (None, None);
            loop {
                self.skip_space();
                match self.at(0) {
                    Some('&') if anchor.is_none() => anchor = Some(self.anchor_name()?),
                    Some('!') if tag.is_none() => tag = Some(self.tag()),
                    _ => return Ok((anchor, tag)),
                }
            }
        }

        /// The name after `&` or `*`: letters, digits, `-` and `_`, then a
        /// blank or one of libyaml's allowed followers.
        fn anchor_name(&mut self) -> Result<String> {
            self.i += 1;
            let start = self.i;
            while self
                .at(0)
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                self.i += 1;
            }
            let name: String = self.s[start..self.i].iter().collect();
            let follower_ok = blankz(self.at(0))
                || matches!(
                    self.at(0),
                    Some('?' | ':' | ',' | ']' | '}' | '%' | '@' | '`')
                );
            if name.is_empty() || !follower_ok {
                return Err(());
            }
            Ok(name)
        }

        /// The text of a `!tag`, which libyaml wants followed by a blank.
        fn tag(&mut self) -> String {
            let start = self.i;
            while !blankz(self.at(0)) {
                self.i += 1;
            }
            self.s[start..self.i].iter().collect()
        }

        /// The node itself, after its properties.
        fn content(&mut self, ctx: Ctx) -> Result<Content> {
            self.skip_space();
            let flow_end = ctx == Ctx::Flow && matches!(self.at(0), Some(',' | ']' | '}'));
            match self.at(0) {
                None => Ok(Content::Empty),
                Some(_) if flow_end => Ok(Content::Empty),
                Some(':') if ctx == Ctx::Flow || blankz(self.at(1)) => Ok(Content::Empty),
                Some('*') => {
                    let name = self.anchor_name()?;
                    let node = self.anchors.get(&name).ok_or(())?;
                    let budget = MAX_ALIAS_NODES - self.copied;
                    let n = size(node, budget);
                    if n > budget {
                        return Err(());
                    }
                    self.copied += n;
                    Ok(Content::Node(node.clone()))
                }
                Some('[') => self.nested(Self::flow_seq).map(Content::Node),
                Some('{') => self.nested(Self::flow_map).map(Content::Node),
                Some('"') => self.double_quoted().map(Content::Quoted),
                Some('\'') => self.single_quoted().map(Content::Quoted),
                Some('|' | '>') if ctx == Ctx::Block => self.block_scalar_header(),
                Some(_) => self.plain(ctx).map(Content::Plain),
            }
        }

        /// `|` or `>` with an empty body: the empty string.
        fn block_scalar_header(&mut self) -> Result<Content> {
            self.i += 1;
            let mut seen = (false, false);
            loop {
                match self.at(0) {
                    Some('+' | '-') if !seen.0 => seen.0 = true,
                    Some('1'..='9') if !seen.1 => seen.1 = true,
                    _ => break,
                }
                self.i += 1;
            }
            if !blankz(self.at(0)) && !self.is('#') {
                return Err(());
            }
            if self.at_end() {
                Ok(Content::Quoted(String::new()))
            } else {
                Err(())
            }
        }

        /// A plain scalar, trailing blanks dropped; libyaml's start and stop rules.
        fn plain(&mut self, ctx: Ctx) -> Result<String> {
            let flow = ctx == Ctx::Flow;
            let first = self.at(0).ok_or(())?;
            let indicator = "-?:,[]{}#&*!|>'\"%@`".contains(first);
            let may_start = !indicator
                || (!blankz(self.at(1)) && (first == '-' || (!flow && matches!(first, '?' | ':'))));
            if !may_start {
                return Err(());
            }
            let start = self.i;
            let mut end = self.i;
            loop {
                let before = self.i;
                while let Some(c) = self.at(0) {
                    let next = self.at(1);
                    if flow && c == ':' && matches!(next, Some(',' | '?' | '[' | ']' | '{' | '}')) {
                        return Err(());
                    }
                    let stops = (c == ':' && blankz(next))
                        || (flow && matches!(c, ',' | '[' | ']' | '{' | '}'))
                        || c == ' '
                        || c == '\t';
                    if stops {
                        break;
                    }
                    self.i += 1;
                }
                if self.i == before {
                    break;
                }
                end = self.i;
                while matches!(self.at(0), Some(' ' | '\t')) {
                    self.i += 1;
                }
                if matches!(self.at(0), None | Some('#')) {
                    break;
                }
            }
            self.i = end;
            Ok(self.s[start..end].iter().collect())
        }

        /// `'...'` with `''` for a quote.
        fn single_quoted(&mut self) -> Result<String> {
            self.i += 1;
            let mut out = String::new();
            loop {
                match self.at(0) {
                    None => return Err(()),
                    Some('\'') if self.at(1) == Some('\'') => {
                        out.push('\'');
                        self.i += 2;
                    }
                    Some('\'') => {
                        self.i += 1;
                        return Ok(out);
                    }
                    Some(c) => {
                        out.push(c);
                        self.i += 1;
                    }
                }
            }
        }

        /// `"..."` with YAML's backslash escapes.
        fn double_quoted(&mut self) -> Result<String> {
            self.i += 1;
            let mut out = String::new();
            loop {
                match self.at(0) {
                    None => return Err(()),
                    Some('"') => {
                        self.i += 1;
                        return Ok(out);
                    }
                    Some('\\') => {
                        let esc = self.at(1).ok_or(())?;
                        self.i += 2;
                        out.push(self.escape(esc)?);
                    }
                    Some(c) => {
                        out.push(c);
                        self.i += 1;
                    }
                }
            }
        }

        /// The character an escape stands for (`\x41`, `\u263A`, `\n`...).
        fn escape(&mut self, esc: char) -> Result<char> {
            let hex_len = match esc {
                'x' => 2,
                'u' => 4,
                'U' => 8,
                _ => return simple_escape(esc),
            };
            let digits: String = self
                .s
                .get(self.i..self.i + hex_len)
                .ok_or(())?
                .iter()
                .collect();
            if !digits.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(());
            }
            self.i += hex_len;
            let code = u32::from_str_radix(&digits, 16).map_err(|_| ())?;
            char::from_u32(code).ok_or(())
        }

        /// `[a, b: c, ? d]`
        fn flow_seq(&mut self) -> Result<Node> {
            self.i += 1;
            let mut items = Vec::new();
            loop {
                self.skip_space();
                if self.is(']') {
                    self.i += 1;
                    return Ok(Node::Seq(items));
                }
                items.push(self.flow_entry(true)?);
                if !self.entry_separator(']')? {
                    return Ok(Node::Seq(items));
                }
            }
        }

        /// `{a: b, c, ? d}`
        fn flow_map(&mut self) -> Result<Node> {
            self.i += 1;
            let mut pairs: Vec<(Node, Node)> = Vec::new();
            loop {
                self.skip_space();
                if self.is('}') {
                    self.i += 1;
                    return Ok(Node::Map(pairs));
                }
                let Node::Map(mut pair) = self.flow_entry(false)? else {
                    return Err(());
                };
                let (key, value) = pair.pop().ok_or(())?;
                if pairs.iter().any(|(k, _)| keys_equal(k, &key)) {
                    return Err(());
                }
                pairs.push((key, value));
                if !self.entry_separator('}')? {
                    return Ok(Node::Map(pairs));
                }
            }
        }

        /// After an entry: `,` (true: more may follow) or the closing bracket (false).
        fn entry_separator(&mut self, close: char) -> Result<bool> {
            self.skip_space();
            match self.at(0) {
                Some(',') => {
                    self.i += 1;
                    Ok(true)
                }
                Some(c) if c == close => {
                    self.i += 1;
                    Ok(false)
                }
                _ => Err(()),
            }
        }

        /// One flow entry. In a sequence a lone node is returned as is and a
        /// pair as a one-pair map; in a mapping it is always a one-pair map.
        fn flow_entry(&mut self, in_seq: bool) -> Result<Node> {
            // In flow context `?` always starts an explicit key (`[?a]`).
            let explicit = self.is('?');
            if explicit {
                self.i += 1;
                if matches!(self.at(0), Some(',' | ']' | '}')) {
                    return Err(());
                }
            }
            self.skip_space();
            // libyaml takes `:` right after a quoted or bracketed key as the
            // value indicator (`{"a":1}`); elsewhere it needs a blank after it.
            let json_like = matches!(self.at(0), Some('"' | '\'' | '[' | '{'));
            let key = if explicit && matches!(self.at(0), Some(':' | ',' | ']' | '}')) {
                Node::Null
            } else {
                self.inline_node(Ctx::Flow)?
            };
            self.skip_space();
            let indicator_ok = json_like
                || blankz(self.at(1))
                || matches!(self.at(1), Some(',' | ']' | '}' | '[' | '{'));
            if self.is(':') && !indicator_ok {
                return Err(());
            }
            if !self.is(':') {
                return if in_seq && !explicit {
                    Ok(key)
                } else {
                    pair_map(key, Node::Null)
                };
            }
            self.i += 1;
            self.skip_space();
            let value = if matches!(self.at(0), Some(',' | ']' | '}')) {
                Node::Null
            } else {
                self.inline_node(Ctx::Flow)?
            };
            pair_map(key, value)
        }
    }

    /// A one-pair mapping; collections cannot be keys (Python cannot hash them).
    fn pair_map(key: Node, value: Node) -> Result<Node> {
        if matches!(key, Node::Seq(_) | Node::Map(_)) {
            return Err(());
        }
        Ok(Node::Map(vec![(key, value)]))
    }

    /// Python's `==` between hashable keys (`1 == 1.0 == True`).
    fn keys_equal(a: &Node, b: &Node) -> bool {
        let num = |n: &Node| match n {
            Node::Bool(b) => Some(f64::from(u8::from(*b))),
            Node::Int(i) => Some(*i as f64),
            Node::Float(f) => Some(*f),
            _ => None,
        };
        match (num(a), num(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        }
    }

    /// The one-character escapes of double-quoted scalars.
    fn simple_escape(esc: char) -> Result<char> {
        Ok(match esc {
            '0' => '\0',
            'a' => '\u{7}',
            'b' => '\u{8}',
            't' | '\t' => '\t',
            'n' => '\n',
            'v' => '\u{b}',
            'f' => '\u{c}',
            'r' => '\r',
            'e' => '\u{1b}',
            ' ' => ' ',
            '"' => '"',
            '/' => '/',
            '\\' => '\\',
            'N' => '\u{85}',
            '_' => '\u{a0}',
            'L' => '\u{2028}',
            'P' => '\u{2029}',
            _ => return Err(()),
        })
    }

    /// The node for `content` under `tag` (`!!str`, `!!int`, ... or none).
    fn apply_tag(tag: Option<&str>, content: Content) -> Result<Node> {
        // `!!int` and `!<tag:yaml.org,2002:int>` are both `int`; `!` stays `!`;
        // anything else (local tags, `!!!`) is unknown.
        let tag = tag.map(|t| {
            let standard = t
                .strip_prefix("!<tag:yaml.org,2002:")
                .and_then(|t| t.strip_suffix('>'))
                .or_else(|| t.strip_prefix("!!"))
                .filter(|name| name.chars().all(|c| c.is_ascii_lowercase()));
            match (t, standard) {
                ("!", _) => "!",
                (_, Some(name)) => name,
                _ => "?",
            }
        });
        let text = match &content {
            Content::Empty => Some(String::new()),
            Content::Plain(s) | Content::Quoted(s) => Some(s.clone()),
            Content::Node(_) => None,
        };
        match (tag, content) {
            (None, Content::Empty) => Ok(Node::Null),
            (Some("!"), Content::Empty) => Ok(Node::Str(String::new())),
            (None | Some("!"), Content::Plain(s)) => resolve_plain(&s),
            (None | Some("!"), Content::Quoted(s)) => Ok(Node::Str(s)),
            (None | Some("!"), Content::Node(n)) => Ok(n),
            (Some("seq"), Content::Node(n @ Node::Seq(_))) => Ok(n),
            (Some("map"), Content::Node(n @ Node::Map(_))) => Ok(n),
            (Some(tag), _) => scalar_tag(tag, &text.ok_or(())?),
        }
    }

    /// A scalar under an explicit standard tag, constructed without resolving.
    pub(super) fn scalar_tag(tag: &str, text: &str) -> Result<Node> {
        match tag {
            "str" => Ok(Node::Str(text.to_owned())),
            "int" => construct_int(text),
            "float" => construct_float(text),
            "null" => Ok(Node::Null),
            "bool" => match text.to_lowercase().as_str() {
                "yes" | "true" | "on" => Ok(Node::Bool(true)),
                "no" | "false" | "off" => Ok(Node::Bool(false)),
                _ => Err(()),
            },
            _ => Err(()),
        }
    }

    /// PyYAML's YAML 1.1 boolean resolver.
    static BOOL: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(
            r"\A(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)\z",
        )
        .ok()
    });
    /// PyYAML's YAML 1.1 float resolver.
    static FLOAT: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(concat!(
            r"\A(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?",
            r"|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?",
            r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*",
            r"|[-+]?\.(?:inf|Inf|INF)",
            r"|\.(?:nan|NaN|NAN))\z"
        ))
        .ok()
    });
    /// PyYAML's YAML 1.1 integer resolver.
    static INT: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(concat!(
            r"\A(?:[-+]?0b[0-1_]+",
            r"|[-+]?0[0-7_]+",
            r"|[-+]?(?:0|[1-9][0-9_]*)",
            r"|[-+]?0x[0-9a-fA-F_]+",
            r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)\z"
        ))
        .ok()
    });

    /// Whether `re` (compiled once) matches all of `text`.
    fn full(re: &LazyLock<Option<Regex>>, text: &str) -> bool {
        re.as_ref().is_some_and(|r| r.is_match(text))
    }

    /// Types a plain scalar as PyYAML's resolvers do; dates stay strings
    /// (Salt's loader), and `=`/`<<` (value and merge keys) are refused.
    pub(super) fn resolve_plain(text: &str) -> Result<Node> {
        if full(&BOOL, text) {
            let t = text.chars().next();
            return Ok(Node::Bool(
                matches!(t, Some('y' | 'Y' | 't' | 'T')) || text.eq_ignore_ascii_case("on"),
            ));
        }
        if full(&FLOAT, text) {
            return construct_float(text);
        }
        if full(&INT, text) {
            return construct_int(text);
        }
        match text {
            "" | "~" | "null" | "Null" | "NULL" => Ok(Node::Null),
            "=" | "<<" => Err(()),
            _ => Ok(Node::Str(text.to_owned())),
        }
    }

    /// PyYAML's `construct_yaml_int` after Salt's leading-zero strip (so `010` is 10).
    fn construct_int(text: &str) -> Result<Node> {
        let mut v = text.to_owned();
        if v != "0" && v.starts_with('0') && !v.starts_with("0b") && !v.starts_with("0x") {
            v = v.trim_start_matches('0').to_owned();
            if v.is_empty() {
                v = "0".to_owned();
            }
        }
        let v = v.replace('_', "");
        let (negative, body) = match v.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, v.strip_prefix('+').unwrap_or(&v)),
        };
        let magnitude = if body == "0" {
            0
        } else if let Some(bin) = body.strip_prefix("0b") {
            i128::from_str_radix(bin, 2).map_err(|_| ())?
        } else if let Some(hex) = body.strip_prefix("0x") {
            i128::from_str_radix(hex, 16).map_err(|_| ())?
        } else if body.starts_with('0') {
            i128::from_str_radix(body, 8).map_err(|_| ())?
        } else if body.contains(':') {
            sexagesimal_int(body)?
        } else {
            body.parse::<i128>().map_err(|_| ())?
        };
        Ok(Node::Int(if negative { -magnitude } else { magnitude }))
    }

    /// `1:30:00` in base 60.
    fn sexagesimal_int(body: &str) -> Result<i128> {
        let mut value: i128 = 0;
        for part in body.split(':') {
            let digit = part.parse::<i128>().map_err(|_| ())?;
            value = value
                .checked_mul(60)
                .and_then(|v| v.checked_add(digit))
                .ok_or(())?;
        }
        Ok(value)
    }

    /// PyYAML's `construct_yaml_float`.
    fn construct_float(text: &str) -> Result<Node> {
        let v = text.replace('_', "").to_lowercase();
        let (sign, body) = match v.strip_prefix('-') {
            Some(rest) => (-1.0, rest),
            None => (1.0, v.strip_prefix('+').unwrap_or(&v)),
        };
        let magnitude = match body {
            ".inf" => f64::INFINITY,
            ".nan" => return Ok(Node::Float(f64::NAN)),
            b if b.contains(':') => {
                let mut value = 0.0;
                let mut base = 1.0;
                for part in b.split(':').rev() {
                    value += part.parse::<f64>().map_err(|_| ())? * base;
                    base *= 60.0;
                }
                value
            }
            b => b.parse::<f64>().map_err(|_| ())?,
        };
        Ok(Node::Float(sign * magnitude))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absurd_nesting_stays_a_string() {
        let deep = format!("{}1{}", "[".repeat(65), "]".repeat(65));
        assert_eq!(yamlify(&deep), json!(deep));
        let ok = format!("{}1{}", "[".repeat(64), "]".repeat(64));
        assert!(yamlify(&ok).is_array());
        let dashes = format!("{}a #c", "- ".repeat(100));
        assert_eq!(yamlify(&dashes), json!(dashes));
    }
}
