//! Nodegroups (`salt/utils/minions.py: nodegroup_comp`): named compound
//! expressions from the master's config, which may refer to each other.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use super::compound::{Ctx, MAX_DEPTH, MAX_EXPANDED_WORDS, is_operator, parse_compound};
use super::error::TargetError;
use super::expr::Expr;
use crate::python::float_repr;

/// The master's `nodegroups:` map, name to definition.
pub type Nodegroups = BTreeMap<String, NodegroupDef>;

/// A nodegroup's definition, as written in the master's YAML.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum NodegroupDef {
    /// A compound expression in one string, split on whitespace.
    Expr(String),
    /// A list of words, each kept whole; numbers and booleans become their Python `str()`.
    Words(#[serde(deserialize_with = "scalar_words")] Vec<String>),
}

impl NodegroupDef {
    /// The definition's words.
    pub fn words(&self) -> Vec<String> {
        match self {
            NodegroupDef::Expr(s) => s.split_whitespace().map(str::to_owned).collect(),
            NodegroupDef::Words(words) => words.clone(),
        }
    }
}

/// A YAML scalar in a list-form nodegroup.
#[derive(Deserialize)]
#[serde(untagged)]
enum Scalar {
    /// A string.
    Str(String),
    /// A boolean (`str(True)` is `True`).
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer too large for `i64`.
    UInt(u64),
    /// A float.
    Float(f64),
}

/// Reads a list of scalars as the strings Salt would make of them.
fn scalar_words<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    let items = Vec::<Scalar>::deserialize(deserializer)?;
    Ok(items
        .into_iter()
        .map(|s| match s {
            Scalar::Str(s) => s,
            Scalar::Bool(b) => if b { "True" } else { "False" }.to_owned(),
            Scalar::Int(i) => i.to_string(),
            Scalar::UInt(u) => u.to_string(),
            Scalar::Float(f) => float_repr(f),
        })
        .collect())
}

/// Salt's shortcut for a definition with no operators, no `*` and no `X@`
/// prefix: the words are ids (`L@a,b`), or, if any holds one of
/// `( [ { \ ? } ] )`, one regex (`E@a,b`).
fn as_single_word(words: &[String]) -> Option<String> {
    if words.is_empty() || words.iter().any(|w| is_operator(w)) {
        return None;
    }
    let prefixed = |w: &str| {
        let mut c = w.chars();
        matches!((c.next(), c.next()), (Some(l), Some('@')) if l.is_ascii_uppercase())
    };
    if words.iter().any(|w| w.contains('*') || prefixed(w)) {
        return None;
    }
    let regex_chars = ['(', '[', '{', '\\', '?', '}', ']', ')'];
    let engine = if words.iter().any(|w| w.contains(regex_chars)) {
        "E@"
    } else {
        "L@"
    };
    Some(format!("{engine}{}", words.join(",")))
}

/// The compiled expression of nodegroup `name` (parenthesised where used).
pub(crate) fn nodegroup_expr(name: &str, ctx: &mut Ctx<'_>) -> Result<Expr, TargetError> {
    let words = lookup(name, ctx)?;
    too_deep(name, ctx, ctx.depth)?;
    ctx.stack.push(name.to_owned());
    ctx.depth += 1;
    let parsed = match as_single_word(&words) {
        Some(word) => parse_compound(&[word], ctx),
        None => parse_compound(&words, ctx),
    };
    ctx.depth -= 1;
    ctx.stack.pop();
    parsed.map_err(|detail| TargetError::Nodegroup {
        name: name.to_owned(),
        detail,
    })
}

/// Refuses to expand nodegroup `name` at nesting `depth` when that is [`MAX_DEPTH`] already.
fn too_deep(name: &str, ctx: &Ctx<'_>, depth: usize) -> Result<(), TargetError> {
    if depth < MAX_DEPTH {
        return Ok(());
    }
    Err(TargetError::NodegroupTooDeep {
        outer: ctx.stack.first().map_or(name, String::as_str).to_owned(),
        inner: name.to_owned(),
        max: MAX_DEPTH,
    })
}

/// The words of nodegroup `name`, refusing unknown names and cycles.
fn lookup(name: &str, ctx: &Ctx<'_>) -> Result<Vec<String>, TargetError> {
    if ctx.stack.iter().any(|n| n == name) {
        let mut path = ctx.stack.clone();
        path.push(name.to_owned());
        return Err(TargetError::NodegroupCycle(path));
    }
    ctx.nodegroups
        .get(name)
        .map(NodegroupDef::words)
        .ok_or_else(|| TargetError::UnknownNodegroup(name.to_owned()))
}

/// Salt's `nodegroup_comp`: the compound words nodegroup `name` expands to,
/// nested `N@` references replaced by their parenthesised expansions.
///
/// As in Salt, a top-level definition without nested nodegroups comes back
/// as written (or as its `L@`/`E@` shortcut), without parentheses. Unlike
/// Salt, which logs and returns nothing, an unknown name or a cycle is an error.
pub fn nodegroup_comp(name: &str, nodegroups: &Nodegroups) -> Result<Vec<String>, TargetError> {
    let mut ctx = Ctx::new(nodegroups);
    comp(name, &mut ctx, true)
}

/// One level of `nodegroup_comp`.
fn comp(name: &str, ctx: &mut Ctx<'_>, first_call: bool) -> Result<Vec<String>, TargetError> {
    let words = lookup(name, ctx)?;
    too_deep(name, ctx, ctx.stack.len())?;
    ctx.expanded += words.len();
    if ctx.expanded > MAX_EXPANDED_WORDS {
        return Err(TargetError::NodegroupTooLarge {
            name: ctx.stack.first().map_or(name, String::as_str).to_owned(),
            max: MAX_EXPANDED_WORDS,
        });
    }
    ctx.stack.push(name.to_owned());
    let mut ret = Vec::new();
    let mut expanded = false;
    for word in &words {
        match word.strip_prefix("N@") {
            Some(inner) if !inner.is_empty() => {
                expanded = true;
                ret.extend(comp(inner, ctx, false)?);
            }
            _ => ret.push(word.clone()),
        }
    }
    ctx.stack.pop();
    if !ret.is_empty() {
        ret.insert(0, "(".to_owned());
        ret.push(")".to_owned());
    }
    if expanded && first_call {
        return Ok(ret);
    }
    if let Some(word) = as_single_word(&words) {
        return Ok(vec![word]);
    }
    Ok(if first_call { words } else { ret })
}
