//! Why a target cannot be compiled: every message names the bad word and where it is.

use super::ipcidr::IpTargetError;
use crate::python::GlobError;

/// A target that saltq refuses before anything is published.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// The target is empty or blank.
    #[error("empty {0} target")]
    Empty(&'static str),
    /// A `tgt_type` name Salt does not have.
    #[error(
        "unknown target type \"{0}\": expected glob, pcre, list, grain, grain_pcre, pillar, \
         pillar_pcre, pillar_exact, ipcidr, compound or nodegroup"
    )]
    UnknownType(String),
    /// A Salt feature saltq does not offer (range targeting).
    #[error("{0}")]
    Unsupported(String),
    /// The `--delimiter` given for a grain or pillar target is empty.
    #[error("invalid delimiter: the delimiter must not be empty")]
    EmptyDelimiter,
    /// A grain or pillar expression with more delimiters than saltq reads.
    #[error("too many parts in \"{expr}\": at most {max} key and value parts are read")]
    TooManyParts {
        /// The expression.
        expr: String,
        /// The limit.
        max: usize,
    },
    /// A glob Python's `fnmatch` would reject.
    #[error("invalid glob \"{pattern}\": {reason}")]
    Glob {
        /// The glob as given.
        pattern: String,
        /// What is wrong with it.
        reason: GlobError,
    },
    /// A regular expression that does not compile.
    #[error("invalid regex \"{pattern}\": {reason}")]
    Regex {
        /// The pattern as given (lowercased for grain and pillar values, as Salt does).
        pattern: String,
        /// The regex engine's complaint.
        reason: String,
    },
    /// An `ipcidr` target that is not an address or network.
    #[error("{0}")]
    Ip(IpTargetError),
    /// A nodegroup not defined in the master's `nodegroups`.
    #[error("unknown nodegroup \"{0}\"")]
    UnknownNodegroup(String),
    /// Nodegroups that refer to each other in a loop (the path, first name repeated last).
    #[error("nodegroup cycle: {}", .0.join(" -> "))]
    NodegroupCycle(Vec<String>),
    /// Nodegroups that use each other deeper than saltq expands (the outermost, the innermost).
    #[error(
        "nodegroup \"{outer}\" nests nodegroups and parentheses deeper than {max} (at nodegroup \"{inner}\")"
    )]
    NodegroupTooDeep {
        /// The nodegroup targeted or used first.
        outer: String,
        /// The nodegroup that went over the limit.
        inner: String,
        /// The limit.
        max: usize,
    },
    /// Nodegroups whose expansion, all told, has more words than saltq compiles.
    #[error("nodegroup \"{name}\" expands to more than {max} words")]
    NodegroupTooLarge {
        /// The nodegroup targeted or used first.
        name: String,
        /// The limit.
        max: usize,
    },
    /// A nodegroup whose definition is not a valid compound expression.
    #[error("invalid nodegroup \"{name}\": {detail}")]
    Nodegroup {
        /// The nodegroup's name.
        name: String,
        /// What is wrong with its definition.
        detail: CompoundError,
    },
    /// A compound expression that cannot be parsed.
    #[error("invalid compound target \"{tgt}\": {detail}")]
    Compound {
        /// The expression as given.
        tgt: String,
        /// What is wrong with it.
        detail: CompoundError,
    },
}

/// What is wrong with a compound expression; `pos` counts words from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompoundError {
    /// The expression has no words.
    #[error("empty expression")]
    Empty,
    /// The expression starts with `and` or `or`.
    #[error("leading operator \"{word}\" at word {pos}")]
    LeadingOperator {
        /// The operator.
        word: String,
        /// Its position.
        pos: usize,
    },
    /// An operator with nothing after it (at the end or before `)`).
    #[error("dangling operator \"{word}\" at word {pos}")]
    DanglingOperator {
        /// The operator.
        word: String,
        /// Its position.
        pos: usize,
    },
    /// An operator right after `(` or another operator (`and or`, `not not`).
    #[error("operator \"{word}\" after \"{prev}\" at word {pos}")]
    MisplacedOperator {
        /// The operator.
        word: String,
        /// The word before it.
        prev: String,
        /// Its position.
        pos: usize,
    },
    /// Two operands (or an operand and `(`) with no operator between them.
    #[error("missing operator between \"{prev}\" and \"{word}\" at word {pos}")]
    MissingOperator {
        /// The word before.
        prev: String,
        /// The word that needed an operator before it.
        word: String,
        /// Its position.
        pos: usize,
    },
    /// A `(` never closed.
    #[error("unclosed \"(\" at word {pos}")]
    Unclosed {
        /// Position of the `(`.
        pos: usize,
    },
    /// A `)` with no `(` to close.
    #[error("unexpected \")\" at word {pos}")]
    UnexpectedClose {
        /// Its position.
        pos: usize,
    },
    /// `( )` with nothing inside.
    #[error("empty parentheses at word {pos}")]
    EmptyParens {
        /// Position of the `(`.
        pos: usize,
    },
    /// Parentheses nested deeper than saltq evaluates.
    #[error("parentheses nested deeper than {max} at word {pos}")]
    TooDeep {
        /// The limit.
        max: usize,
        /// Position of the `(` that went over it.
        pos: usize,
    },
    /// A `X@` prefix that is not one of G P I J L S E N R.
    #[error("unknown prefix \"{prefix}\" in \"{word}\" at word {pos}")]
    UnknownPrefix {
        /// The prefix, e.g. `X@`.
        prefix: String,
        /// The whole word.
        word: String,
        /// Its position.
        pos: usize,
    },
    /// A prefix with nothing after it (`G@`, `L@,`).
    #[error("empty pattern in \"{word}\" at word {pos}")]
    EmptyPattern {
        /// The word.
        word: String,
        /// Its position.
        pos: usize,
    },
    /// A word whose pattern is invalid (bad regex, address, nodegroup...).
    #[error("word {pos} \"{word}\": {reason}")]
    BadWord {
        /// The word.
        word: String,
        /// Its position.
        pos: usize,
        /// What is wrong with it.
        reason: Box<TargetError>,
    },
    /// An error inside the definition of a nodegroup used with `N@`.
    #[error("in nodegroup \"{name}\" at word {pos}: {detail}")]
    InNodegroup {
        /// The nodegroup's name.
        name: String,
        /// Position of the `N@` word.
        pos: usize,
        /// What is wrong inside it.
        detail: Box<CompoundError>,
    },
}
