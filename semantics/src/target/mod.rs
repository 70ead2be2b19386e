//! Salt targeting: which minions a job is for. The master compiles a target
//! once and checks every accepted minion against its cached data (greedily);
//! each minion checks itself, and its answer is the one that counts.

mod compound;
mod error;
mod expr;
mod ipcidr;
mod leaf;
mod nodegroup;
pub(crate) mod pyregex;
mod subdict;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use self::compound::{Ctx, RANGE_UNSUPPORTED, parse_compound};
use self::expr::{Expr, Tri};
use self::leaf::{DataSource, Leaf};

pub use self::error::{CompoundError, TargetError};
pub use self::ipcidr::{IpTarget, IpTargetError};
pub use self::nodegroup::{NodegroupDef, Nodegroups, nodegroup_comp};
pub use self::subdict::{MAX_PARTS, MatchMode, subdict_match, traverse};

/// Salt's `tgt_type`: how the target expression is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TargetType {
    /// `fnmatch` on the minion id (the default).
    Glob,
    /// `re.match` on the minion id (`-E`).
    Pcre,
    /// Comma- or space-separated minion ids (`-L`).
    List,
    /// `key:value` glob on grains (`-G`).
    Grain,
    /// `key:regex` on grains (`-P`).
    GrainPcre,
    /// `key:value` glob on pillar (`-I`).
    Pillar,
    /// `key:regex` on pillar (`-J`).
    PillarPcre,
    /// `key:value` equality on pillar.
    PillarExact,
    /// An address or network against the minion's IP grains (`-S`).
    Ipcidr,
    /// Words joined by `and`, `or`, `not` and parentheses (`-C`).
    Compound,
    /// A named compound from the master's `nodegroups` (`-N`).
    Nodegroup,
}

impl TargetType {
    /// Every type, in Salt's documentation order.
    pub const ALL: [TargetType; 11] = [
        TargetType::Glob,
        TargetType::Pcre,
        TargetType::List,
        TargetType::Grain,
        TargetType::GrainPcre,
        TargetType::Pillar,
        TargetType::PillarPcre,
        TargetType::PillarExact,
        TargetType::Ipcidr,
        TargetType::Compound,
        TargetType::Nodegroup,
    ];

    /// Salt's name for the type (`grain_pcre`).
    pub fn as_str(self) -> &'static str {
        match self {
            TargetType::Glob => "glob",
            TargetType::Pcre => "pcre",
            TargetType::List => "list",
            TargetType::Grain => "grain",
            TargetType::GrainPcre => "grain_pcre",
            TargetType::Pillar => "pillar",
            TargetType::PillarPcre => "pillar_pcre",
            TargetType::PillarExact => "pillar_exact",
            TargetType::Ipcidr => "ipcidr",
            TargetType::Compound => "compound",
            TargetType::Nodegroup => "nodegroup",
        }
    }
}

impl FromStr for TargetType {
    type Err = TargetError;

    /// Salt's names; the empty string is `glob`, `range` is unsupported.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() {
            return Ok(TargetType::Glob);
        }
        if s == "range" {
            return Err(TargetError::Unsupported(RANGE_UNSUPPORTED.to_owned()));
        }
        TargetType::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| TargetError::UnknownType(s.to_owned()))
    }
}

impl fmt::Display for TargetType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for TargetType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TargetType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// What a target is checked against: a minion's id and, when known, its data.
#[derive(Debug, Clone, Copy)]
pub struct MinionFacts<'a> {
    /// The minion id.
    pub id: &'a str,
    /// The minion's grains; `None` when unknown (the master has none cached).
    pub grains: Option<&'a Value>,
    /// The minion's pillar; `None` when unknown.
    pub pillar: Option<&'a Value>,
}

/// A compiled target, cheap to check against many minions.
#[derive(Debug, Clone)]
pub struct Target {
    /// The expression as given.
    tgt: String,
    /// How it was read.
    tgt_type: TargetType,
    /// The compiled tree.
    expr: Expr,
}

impl Target {
    /// Compiles `tgt` read as `tgt_type`. `delimiter` (default `:`) separates
    /// keys and value in grain and pillar targets; as in Salt, compound words
    /// use their own (`G|@os|Ubuntu`). Invalid input is an error here rather
    /// than a target that silently matches nothing.
    pub fn compile(
        tgt: &str,
        tgt_type: TargetType,
        delimiter: Option<&str>,
        nodegroups: &Nodegroups,
    ) -> Result<Target, TargetError> {
        if tgt.trim().is_empty() {
            return Err(TargetError::Empty(tgt_type.as_str()));
        }
        let delimiter = delimiter.unwrap_or(":");
        let mut ctx = Ctx::new(nodegroups);
        let data = |source, mode| Leaf::data(tgt, source, tgt, delimiter, mode).map(Expr::Leaf);
        let expr = match tgt_type {
            TargetType::Glob => Leaf::glob(tgt, tgt).map(Expr::Leaf)?,
            TargetType::Pcre => Leaf::pcre(tgt, tgt).map(Expr::Leaf)?,
            TargetType::List => return Target::list(split_list(tgt)),
            TargetType::Grain => data(DataSource::Grains, MatchMode::Glob)?,
            TargetType::GrainPcre => data(DataSource::Grains, MatchMode::Regex)?,
            TargetType::Pillar => data(DataSource::Pillar, MatchMode::Glob)?,
            TargetType::PillarPcre => data(DataSource::Pillar, MatchMode::Regex)?,
            TargetType::PillarExact => data(DataSource::Pillar, MatchMode::Exact)?,
            TargetType::Ipcidr => Leaf::ip(tgt, tgt).map(Expr::Leaf)?,
            TargetType::Compound => {
                let words: Vec<String> = tgt.split_whitespace().map(str::to_owned).collect();
                parse_compound(&words, &mut ctx).map_err(|detail| {
                    lift(TargetError::Compound {
                        tgt: tgt.to_owned(),
                        detail,
                    })
                })?
            }
            TargetType::Nodegroup => nodegroup::nodegroup_expr(tgt, &mut ctx).map_err(lift)?,
        };
        Ok(Target {
            tgt: tgt.to_owned(),
            tgt_type,
            expr,
        })
    }

    /// A list target from ids already split (Salt's CLI sends `-L` as a list).
    /// Empty ids are dropped; no ids at all is an error.
    pub fn list<I, S>(ids: I) -> Result<Target, TargetError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let ids: Vec<String> = ids
            .into_iter()
            .map(Into::into)
            .filter(|id: &String| !id.is_empty())
            .collect();
        if ids.is_empty() {
            return Err(TargetError::Empty(TargetType::List.as_str()));
        }
        let tgt = ids.join(",");
        Ok(Target {
            expr: Expr::Leaf(Leaf::list(&format!("L@{tgt}"), ids)),
            tgt,
            tgt_type: TargetType::List,
        })
    }

    /// The expression as given (a list target's ids joined by commas).
    pub fn tgt(&self) -> &str {
        &self.tgt
    }

    /// How the expression was read.
    pub fn tgt_type(&self) -> TargetType {
        self.tgt_type
    }

    /// The minion's own check: grains or pillar that are `None` count as empty.
    pub fn matches(&self, facts: &MinionFacts<'_>) -> bool {
        self.expr.eval(facts, false) == Tri::True
    }

    /// The master's expected-minions check: a grain, pillar or ipcidr operand
    /// whose data is `None` is unknown, the unknown survives `not`, `and` and
    /// `or` (three-valued logic), and an unknown result includes the minion.
    pub fn matches_greedy(&self, facts: &MinionFacts<'_>) -> bool {
        self.expr.eval(facts, true) != Tri::False
    }

    /// Whether checking a minion needs its grains: a grain or ipcidr target, or a compound or
    /// nodegroup with such a word. Lets a caller with many minions skip loading their grains.
    pub fn reads_grains(&self) -> bool {
        self.expr.reads_grains()
    }

    /// Ids named by a list target or the `L@` words of a compound (not those
    /// directly after `not`), in order, without repeats: the ids that are
    /// reported `missing` when they have no accepted key.
    pub fn listed_ids(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.expr.listed_ids(&mut out);
        out
    }

    /// For a compound or nodegroup target, the compound expression with every
    /// nodegroup expanded, to publish to minions (which have no nodegroups).
    /// A word holding whitespace (possible only in a list-form nodegroup)
    /// cannot survive this form.
    pub fn expanded_compound(&self) -> Option<String> {
        if !matches!(self.tgt_type, TargetType::Compound | TargetType::Nodegroup) {
            return None;
        }
        let mut words = Vec::new();
        self.expr.write(&mut words, 0);
        Some(words.join(" "))
    }
}

/// Surfaces what no position explains: a nodegroup cycle, or nodegroups nested too deep or
/// expanding too far, becomes the error itself, and an `R@` word [`TargetError::Unsupported`] (so callers can tell
/// "not offered" from "invalid").
fn lift(err: TargetError) -> TargetError {
    let (detail, whole) = match &err {
        TargetError::Compound { tgt, detail } => (detail, format!("compound target \"{tgt}\"")),
        TargetError::Nodegroup { name, detail } => (detail, format!("nodegroup \"{name}\"")),
        _ => return err,
    };
    match root_word(detail) {
        Some((
            _,
            _,
            whole @ (TargetError::NodegroupCycle(_)
            | TargetError::NodegroupTooDeep { .. }
            | TargetError::NodegroupTooLarge { .. }),
        )) => whole.clone(),
        Some((word, pos, TargetError::Unsupported(why))) => {
            TargetError::Unsupported(format!("{why} (word {pos} \"{word}\" of {whole})"))
        }
        _ => err,
    }
}

/// The innermost bad word behind a compound error, through nodegroups.
fn root_word(detail: &CompoundError) -> Option<(&str, usize, &TargetError)> {
    match detail {
        CompoundError::BadWord { word, pos, reason } => Some((word, *pos, reason)),
        CompoundError::InNodegroup { detail, .. } => root_word(detail),
        _ => None,
    }
}

/// Splits a `-L` target as Salt's CLI does: on commas (spaces removed) when
/// there is a comma, else on whitespace.
fn split_list(tgt: &str) -> Vec<String> {
    if tgt.contains(',') {
        tgt.replace(' ', "").split(',').map(str::to_owned).collect()
    } else {
        tgt.split_whitespace().map(str::to_owned).collect()
    }
}
