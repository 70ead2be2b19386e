//! Compound targets (`salt/matchers/compound_match.py`): words joined by
//! `and`, `or`, `not` and parentheses, parsed with Python's precedence
//! (not > and > or) and an implicit `and` before a `not` that follows an operand.

use super::Nodegroups;
use super::error::{CompoundError, TargetError};
use super::expr::Expr;
use super::leaf::{DataSource, Leaf};
use super::nodegroup::nodegroup_expr;
use super::subdict::MatchMode;

/// How deep parentheses and nodegroups (each an implicit pair of parentheses) may nest, all
/// counted together: the compiled tree is walked recursively, so its depth is bounded.
pub(crate) const MAX_DEPTH: usize = 100;

/// How many words the nodegroups used by one target may expand to, all told: nodegroups that
/// each use another twice would otherwise grow exponentially with their depth.
pub(crate) const MAX_EXPANDED_WORDS: usize = 50_000;

/// The message for `R@` words.
pub(crate) const RANGE_UNSUPPORTED: &str =
    "range targeting is not supported: saltq has no seco range server";

/// State shared while compiling one target: the nodegroups and the chain of
/// nodegroups being expanded (to detect cycles).
pub(crate) struct Ctx<'a> {
    /// The master's nodegroups.
    pub(crate) nodegroups: &'a Nodegroups,
    /// Names of the nodegroups being expanded, outermost first.
    pub(crate) stack: Vec<String>,
    /// Current nesting of parentheses and nodegroups, across nodegroups.
    pub(crate) depth: usize,
    /// Operand words compiled inside nodegroups so far.
    pub(crate) expanded: usize,
}

impl<'a> Ctx<'a> {
    /// A context for compiling one target.
    pub(crate) fn new(nodegroups: &'a Nodegroups) -> Ctx<'a> {
        Ctx {
            nodegroups,
            stack: Vec::new(),
            depth: 0,
            expanded: 0,
        }
    }
}

/// One word's role in the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    /// `and`
    And,
    /// `or`
    Or,
    /// `not`
    Not,
    /// `(`
    Open,
    /// `)`
    Close,
    /// Anything else: a target word.
    Operand,
}

/// Classifies a word.
fn tok(word: &str) -> Tok {
    match word {
        "and" => Tok::And,
        "or" => Tok::Or,
        "not" => Tok::Not,
        "(" => Tok::Open,
        ")" => Tok::Close,
        _ => Tok::Operand,
    }
}

/// Whether `word` is one of Salt's compound operators.
pub(crate) fn is_operator(word: &str) -> bool {
    tok(word) != Tok::Operand
}

/// Parses compound words into a tree, compiling each operand.
pub(crate) fn parse_compound(words: &[String], ctx: &mut Ctx<'_>) -> Result<Expr, CompoundError> {
    if words.is_empty() {
        return Err(CompoundError::Empty);
    }
    let mut parser = Parser {
        words,
        next: 0,
        ctx,
    };
    let expr = parser.or_expr()?;
    match parser.peek() {
        None => Ok(expr),
        Some(Tok::Close) => Err(CompoundError::UnexpectedClose {
            pos: parser.next + 1,
        }),
        Some(_) => Err(parser.missing_operator()),
    }
}

/// A recursive-descent parser over the words of one expression.
struct Parser<'w, 'c, 'n> {
    /// The words.
    words: &'w [String],
    /// Index of the next word.
    next: usize,
    /// Nodegroups and the expansion chain.
    ctx: &'c mut Ctx<'n>,
}

impl Parser<'_, '_, '_> {
    /// The role of the next word.
    fn peek(&self) -> Option<Tok> {
        self.words.get(self.next).map(|w| tok(w))
    }

    /// `and_expr ("or" and_expr)*`
    fn or_expr(&mut self) -> Result<Expr, CompoundError> {
        let mut items = vec![self.and_expr()?];
        while self.peek() == Some(Tok::Or) {
            self.next += 1;
            items.push(self.and_expr()?);
        }
        Ok(Expr::or(items))
    }

    /// `not_expr (("and" | before "not") not_expr)*`
    fn and_expr(&mut self) -> Result<Expr, CompoundError> {
        let mut items = vec![self.not_expr()?];
        loop {
            match self.peek() {
                Some(Tok::And) => self.next += 1,
                Some(Tok::Not) => {}
                _ => break,
            }
            items.push(self.not_expr()?);
        }
        Ok(Expr::and(items))
    }

    /// `"not" primary | primary` (`not not` is invalid in Salt).
    fn not_expr(&mut self) -> Result<Expr, CompoundError> {
        if self.peek() != Some(Tok::Not) {
            return self.primary();
        }
        self.next += 1;
        if self.peek() == Some(Tok::Not) {
            return Err(self.misplaced());
        }
        Ok(Expr::Not(Box::new(self.primary()?)))
    }

    /// `"(" or_expr ")" | operand`
    fn primary(&mut self) -> Result<Expr, CompoundError> {
        let pos = self.next + 1;
        match self.peek() {
            None => Err(self.at_end()),
            Some(Tok::Open) => self.group(pos),
            Some(Tok::Close) => Err(self.close_without_operand()),
            Some(Tok::And | Tok::Or | Tok::Not) => Err(self.misplaced()),
            Some(Tok::Operand) => {
                let word = &self.words[self.next];
                self.next += 1;
                word_expr(word, pos, self.ctx)
            }
        }
    }

    /// A parenthesised expression whose `(` is at `pos`.
    fn group(&mut self, pos: usize) -> Result<Expr, CompoundError> {
        self.next += 1;
        if self.peek() == Some(Tok::Close) {
            return Err(CompoundError::EmptyParens { pos });
        }
        if self.ctx.depth >= MAX_DEPTH {
            return Err(CompoundError::TooDeep {
                max: MAX_DEPTH,
                pos,
            });
        }
        self.ctx.depth += 1;
        let inner = self.or_expr();
        self.ctx.depth -= 1;
        let inner = inner?;
        match self.peek() {
            Some(Tok::Close) => {
                self.next += 1;
                Ok(inner)
            }
            None => Err(CompoundError::Unclosed { pos }),
            Some(_) => Err(self.missing_operator()),
        }
    }

    /// The word before the next one, with its position.
    fn prev(&self) -> Option<(String, usize)> {
        let i = self.next.checked_sub(1)?;
        Some((self.words[i].clone(), i + 1))
    }

    /// The expression ended where an operand was needed.
    fn at_end(&self) -> CompoundError {
        match self.prev() {
            None => CompoundError::Empty,
            Some((_, pos)) if tok(&self.words[pos - 1]) == Tok::Open => {
                CompoundError::Unclosed { pos }
            }
            Some((word, pos)) => CompoundError::DanglingOperator { word, pos },
        }
    }

    /// A `)` where an operand was needed.
    fn close_without_operand(&self) -> CompoundError {
        match self.prev() {
            Some((word, pos)) if tok(&word) != Tok::Open => {
                CompoundError::DanglingOperator { word, pos }
            }
            _ => CompoundError::UnexpectedClose { pos: self.next + 1 },
        }
    }

    /// An operator where an operand was needed.
    fn misplaced(&self) -> CompoundError {
        let word = self.words[self.next].clone();
        let pos = self.next + 1;
        match self.prev() {
            None => CompoundError::LeadingOperator { word, pos },
            Some((prev, _)) => CompoundError::MisplacedOperator { word, prev, pos },
        }
    }

    /// An operand or `(` right after a complete operand.
    fn missing_operator(&self) -> CompoundError {
        let prev = self.prev().map(|(w, _)| w).unwrap_or_default();
        CompoundError::MissingOperator {
            prev,
            word: self.words[self.next].clone(),
            pos: self.next + 1,
        }
    }
}

/// A target word split as Salt's `TARGET_REX` does.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Word<'a> {
    /// No prefix: a glob on the id.
    Glob(&'a str),
    /// `E@pattern`, or `G|@pattern` with a one-character delimiter.
    Engine {
        /// The prefix letter.
        engine: char,
        /// The custom delimiter, for G, P, I and J.
        delimiter: Option<char>,
        /// What follows the `@`.
        pattern: &'a str,
    },
}

/// Splits a word into engine, delimiter and pattern.
fn split_word(word: &str) -> Word<'_> {
    let mut chars = word.char_indices();
    let (first, second, third) = (chars.next(), chars.next(), chars.next());
    match (first, second, third) {
        (Some((_, e @ ('G' | 'P' | 'I' | 'J'))), Some((_, d)), Some((i, '@'))) => Word::Engine {
            engine: e,
            delimiter: Some(d),
            pattern: &word[i + 1..],
        },
        (Some((_, e)), Some((i, '@')), _) if e.is_ascii_uppercase() => Word::Engine {
            engine: e,
            delimiter: None,
            pattern: &word[i + 1..],
        },
        _ => Word::Glob(word),
    }
}

/// Compiles one operand word at position `pos`.
fn word_expr(word: &str, pos: usize, ctx: &mut Ctx<'_>) -> Result<Expr, CompoundError> {
    let bad = |reason: TargetError| CompoundError::BadWord {
        word: word.to_owned(),
        pos,
        reason: Box::new(reason),
    };
    if let Some(outermost) = ctx.stack.first() {
        ctx.expanded += 1;
        if ctx.expanded > MAX_EXPANDED_WORDS {
            return Err(bad(TargetError::NodegroupTooLarge {
                name: outermost.clone(),
                max: MAX_EXPANDED_WORDS,
            }));
        }
    }
    let (engine, delimiter, pattern) = match split_word(word) {
        Word::Glob(pattern) => return Leaf::glob(word, pattern).map(Expr::Leaf).map_err(bad),
        Word::Engine {
            engine,
            delimiter,
            pattern,
        } => (engine, delimiter, pattern),
    };
    if pattern.is_empty() {
        return Err(CompoundError::EmptyPattern {
            word: word.to_owned(),
            pos,
        });
    }
    let delimiter = delimiter.map_or_else(|| ":".to_owned(), String::from);
    let data = |source, mode| Leaf::data(word, source, pattern, &delimiter, mode);
    let leaf = match engine {
        'G' => data(DataSource::Grains, MatchMode::Glob),
        'P' => data(DataSource::Grains, MatchMode::Regex),
        'I' => data(DataSource::Pillar, MatchMode::Glob),
        'J' => data(DataSource::Pillar, MatchMode::Regex),
        'E' => Leaf::pcre(word, pattern),
        'S' => Leaf::ip(word, pattern),
        'L' => {
            let ids = list_ids(pattern);
            if ids.is_empty() {
                return Err(CompoundError::EmptyPattern {
                    word: word.to_owned(),
                    pos,
                });
            }
            Ok(Leaf::list(word, ids))
        }
        'N' => return nodegroup_word(word, pattern, pos, ctx),
        'R' => Err(TargetError::Unsupported(RANGE_UNSUPPORTED.to_owned())),
        other => {
            return Err(CompoundError::UnknownPrefix {
                prefix: format!("{other}@"),
                word: word.to_owned(),
                pos,
            });
        }
    };
    leaf.map(Expr::Leaf).map_err(bad)
}

/// The ids of an `L@` word: comma separated, empty items dropped.
fn list_ids(pattern: &str) -> Vec<String> {
    pattern
        .split(',')
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Expands `N@name` in place, as a parenthesised sub-expression.
fn nodegroup_word(
    word: &str,
    name: &str,
    pos: usize,
    ctx: &mut Ctx<'_>,
) -> Result<Expr, CompoundError> {
    nodegroup_expr(name, ctx).map_err(|err| match err {
        TargetError::Nodegroup { name, detail } => CompoundError::InNodegroup {
            name,
            pos,
            detail: Box::new(detail),
        },
        other => CompoundError::BadWord {
            word: word.to_owned(),
            pos,
            reason: Box::new(other),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_word_follows_target_rex() {
        let cases: &[(&str, Word<'_>)] = &[
            ("web*", Word::Glob("web*")),
            (
                "G@os:Ubuntu",
                Word::Engine {
                    engine: 'G',
                    delimiter: None,
                    pattern: "os:Ubuntu",
                },
            ),
            (
                "G|@os|Ubuntu",
                Word::Engine {
                    engine: 'G',
                    delimiter: Some('|'),
                    pattern: "os|Ubuntu",
                },
            ),
            (
                "G@@x",
                Word::Engine {
                    engine: 'G',
                    delimiter: Some('@'),
                    pattern: "x",
                },
            ),
            ("L|@a", Word::Glob("L|@a")),
            ("x@y", Word::Glob("x@y")),
            (
                "X@foo",
                Word::Engine {
                    engine: 'X',
                    delimiter: None,
                    pattern: "foo",
                },
            ),
        ];
        for (word, want) in cases {
            assert_eq!(&split_word(word), want, "{word}");
        }
    }
}
