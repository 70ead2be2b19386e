//! The operands of a target: one word of a compound expression, or a whole
//! simple target, compiled once and checked against many minions.

use std::collections::HashMap;

use serde_json::Value;

use super::MinionFacts;
use super::error::TargetError;
use super::expr::Tri;
use super::ipcidr::IpTarget;
use super::pyregex::PyRegex;
use super::subdict::{MAX_PARTS, MatchMode, Matcher, candidate_patterns};
use crate::python::Glob;

/// A compiled operand and the word it came from.
#[derive(Debug, Clone)]
pub(crate) struct Leaf {
    /// The word as written, to print the expression back (`G@os:Ubuntu`, `web*`).
    pub(crate) word: String,
    /// What it checks.
    pub(crate) kind: LeafKind,
}

/// What an operand checks.
#[derive(Debug, Clone)]
pub(crate) enum LeafKind {
    /// `fnmatch` on the minion id.
    Glob(Glob),
    /// `re.match` on the minion id.
    Pcre(PyRegex),
    /// The minion id is one of these.
    List(Vec<String>),
    /// `subdict_match` on grains or pillar.
    Data(DataMatch),
    /// An address or network against the `ipv4`/`ipv6` grains.
    Ip(IpTarget),
}

/// Which of the minion's data a grain or pillar word looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DataSource {
    /// The minion's grains.
    Grains,
    /// The minion's pillar.
    Pillar,
}

/// A compiled `subdict_match` check.
#[derive(Debug, Clone)]
pub(crate) struct DataMatch {
    /// Grains or pillar.
    source: DataSource,
    /// `key:...:value` as given.
    expr: String,
    /// The separator of keys and value.
    delimiter: String,
    /// Glob, regex or exact comparison.
    mode: MatchMode,
    /// The regexes the match may need, compiled once (regex mode only).
    regexes: HashMap<String, Option<PyRegex>>,
}

impl Leaf {
    /// Whether the operand looks at the minion's grains.
    pub(crate) fn reads_grains(&self) -> bool {
        match &self.kind {
            LeafKind::Data(d) => d.source == DataSource::Grains,
            LeafKind::Ip(_) => true,
            LeafKind::Glob(_) | LeafKind::Pcre(_) | LeafKind::List(_) => false,
        }
    }

    /// A glob on the minion id.
    pub(crate) fn glob(word: &str, pattern: &str) -> Result<Leaf, TargetError> {
        let glob = Glob::new(pattern).map_err(|reason| TargetError::Glob {
            pattern: pattern.to_owned(),
            reason,
        })?;
        Ok(Leaf::new(word, LeafKind::Glob(glob)))
    }

    /// A Python regex on the minion id.
    pub(crate) fn pcre(word: &str, pattern: &str) -> Result<Leaf, TargetError> {
        let re = compile_regex(pattern)?;
        Ok(Leaf::new(word, LeafKind::Pcre(re)))
    }

    /// A list of minion ids.
    pub(crate) fn list(word: &str, ids: Vec<String>) -> Leaf {
        Leaf::new(word, LeafKind::List(ids))
    }

    /// An `ipcidr` address or network.
    pub(crate) fn ip(word: &str, target: &str) -> Result<Leaf, TargetError> {
        let ip = IpTarget::parse(target).map_err(TargetError::Ip)?;
        Ok(Leaf::new(word, LeafKind::Ip(ip)))
    }

    /// A grain or pillar match; in regex mode every pattern it may try is
    /// compiled now, and it is an error when none of the values' patterns compiles.
    pub(crate) fn data(
        word: &str,
        source: DataSource,
        expr: &str,
        delimiter: &str,
        mode: MatchMode,
    ) -> Result<Leaf, TargetError> {
        if delimiter.is_empty() {
            return Err(TargetError::EmptyDelimiter);
        }
        if expr.split(delimiter).count() > MAX_PARTS {
            return Err(TargetError::TooManyParts {
                expr: expr.to_owned(),
                max: MAX_PARTS,
            });
        }
        let mut regexes = HashMap::new();
        if mode == MatchMode::Regex {
            let (top, all) = candidate_patterns(expr, delimiter);
            for pattern in all {
                let compiled = PyRegex::new(&pattern).ok();
                regexes.insert(pattern, compiled);
            }
            let usable = top.iter().any(|p| matches!(regexes.get(p), Some(Some(_))));
            if let (false, Some(deepest)) = (usable, top.last()) {
                compile_regex(deepest)?;
            }
        }
        let data = DataMatch {
            source,
            expr: expr.to_owned(),
            delimiter: delimiter.to_owned(),
            mode,
            regexes,
        };
        Ok(Leaf::new(word, LeafKind::Data(data)))
    }

    /// A leaf printed as `word`.
    fn new(word: &str, kind: LeafKind) -> Leaf {
        Leaf {
            word: word.to_owned(),
            kind,
        }
    }

    /// Checks one minion; `Maybe` only in greedy mode, for data the master lacks.
    pub(crate) fn eval(&self, facts: &MinionFacts<'_>, greedy: bool) -> Tri {
        match &self.kind {
            LeafKind::Glob(glob) => glob.is_match(facts.id).into(),
            LeafKind::Pcre(re) => re.is_match(facts.id).into(),
            LeafKind::List(ids) => ids.iter().any(|id| id == facts.id).into(),
            LeafKind::Data(data) => {
                let source = match data.source {
                    DataSource::Grains => facts.grains,
                    DataSource::Pillar => facts.pillar,
                };
                match source {
                    Some(value) => data.matches(value).into(),
                    None if greedy && data.can_match() => Tri::Maybe,
                    None => Tri::False,
                }
            }
            LeafKind::Ip(ip) => match facts.grains {
                Some(grains) => ip.matches(grains).into(),
                None if greedy => Tri::Maybe,
                None => Tri::False,
            },
        }
    }
}

impl DataMatch {
    /// `subdict_match` on the minion's grains or pillar.
    fn matches(&self, data: &Value) -> bool {
        let matcher = Matcher {
            mode: self.mode,
            regexes: Some(&self.regexes),
        };
        matcher.subdict(data, &self.expr, &self.delimiter)
    }

    /// False when no data could match: there is no delimiter in the expression.
    fn can_match(&self) -> bool {
        self.expr.contains(self.delimiter.as_str())
    }
}

/// Compiles a Python regex, naming the pattern on failure.
fn compile_regex(pattern: &str) -> Result<PyRegex, TargetError> {
    PyRegex::new(pattern).map_err(|reason| TargetError::Regex {
        pattern: pattern.to_owned(),
        reason,
    })
}
