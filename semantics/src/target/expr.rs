//! The compiled form of a target: a boolean tree over leaves, evaluated in
//! two- or three-valued logic, and printed back as a compound expression.

use super::MinionFacts;
use super::leaf::{Leaf, LeafKind};

/// A truth value that may be unknown: the master's view of a minion whose
/// grains or pillar it has not cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tri {
    /// Does not match.
    False,
    /// Cannot tell without the minion's data.
    Maybe,
    /// Matches.
    True,
}

impl From<bool> for Tri {
    fn from(b: bool) -> Tri {
        if b { Tri::True } else { Tri::False }
    }
}

impl Tri {
    /// Negation; unknown stays unknown.
    fn not(self) -> Tri {
        match self {
            Tri::False => Tri::True,
            Tri::Maybe => Tri::Maybe,
            Tri::True => Tri::False,
        }
    }
}

/// A target as a tree. `And`/`Or` hold at least two children.
#[derive(Debug, Clone)]
pub(crate) enum Expr {
    /// One operand.
    Leaf(Leaf),
    /// `not x`.
    Not(Box<Expr>),
    /// `a and b and ...`.
    And(Vec<Expr>),
    /// `a or b or ...`.
    Or(Vec<Expr>),
}

impl Expr {
    /// `items` joined by `and` (a single item stands alone).
    pub(crate) fn and(mut items: Vec<Expr>) -> Expr {
        if items.len() == 1 {
            items.remove(0)
        } else {
            Expr::And(items)
        }
    }

    /// `items` joined by `or` (a single item stands alone).
    pub(crate) fn or(mut items: Vec<Expr>) -> Expr {
        if items.len() == 1 {
            items.remove(0)
        } else {
            Expr::Or(items)
        }
    }

    /// Evaluates for one minion (Kleene logic; `Maybe` only arises when `greedy`).
    pub(crate) fn eval(&self, facts: &MinionFacts<'_>, greedy: bool) -> Tri {
        match self {
            Expr::Leaf(leaf) => leaf.eval(facts, greedy),
            Expr::Not(inner) => inner.eval(facts, greedy).not(),
            Expr::And(items) => {
                let mut acc = Tri::True;
                for item in items {
                    match item.eval(facts, greedy) {
                        Tri::False => return Tri::False,
                        Tri::Maybe => acc = Tri::Maybe,
                        Tri::True => {}
                    }
                }
                acc
            }
            Expr::Or(items) => {
                let mut acc = Tri::False;
                for item in items {
                    match item.eval(facts, greedy) {
                        Tri::True => return Tri::True,
                        Tri::Maybe => acc = Tri::Maybe,
                        Tri::False => {}
                    }
                }
                acc
            }
        }
    }

    /// Ids of list operands, in order, except those directly negated (Salt
    /// does not report `not L@...` ids as missing).
    /// Whether any operand looks at the minion's grains (grain words and ipcidr).
    pub(crate) fn reads_grains(&self) -> bool {
        match self {
            Expr::Leaf(leaf) => leaf.reads_grains(),
            Expr::Not(inner) => inner.reads_grains(),
            Expr::And(items) | Expr::Or(items) => items.iter().any(Expr::reads_grains),
        }
    }

    pub(crate) fn listed_ids(&self, out: &mut Vec<String>) {
        match self {
            Expr::Leaf(Leaf {
                kind: LeafKind::List(ids),
                ..
            }) => {
                for id in ids {
                    if !out.contains(id) {
                        out.push(id.clone());
                    }
                }
            }
            Expr::Leaf(_) => {}
            Expr::Not(inner) => {
                if !matches!(**inner, Expr::Leaf(_)) {
                    inner.listed_ids(out);
                }
            }
            Expr::And(items) | Expr::Or(items) => {
                items.iter().for_each(|item| item.listed_ids(out));
            }
        }
    }

    /// Binding strength, to decide where parentheses are needed when printing.
    fn precedence(&self) -> u8 {
        match self {
            Expr::Or(_) => 1,
            Expr::And(_) => 2,
            Expr::Not(_) => 3,
            Expr::Leaf(_) => 4,
        }
    }

    /// Appends the expression as compound words, parenthesised when it binds
    /// more loosely than `min` (parentheses are words of their own).
    pub(crate) fn write(&self, out: &mut Vec<String>, min: u8) {
        if self.precedence() < min {
            out.push("(".to_owned());
            self.write(out, 0);
            out.push(")".to_owned());
            return;
        }
        match self {
            Expr::Leaf(leaf) => out.push(leaf.word.clone()),
            // `not not x` is invalid in Salt, so a negated `not` keeps its parentheses.
            Expr::Not(inner) => {
                out.push("not".to_owned());
                inner.write(out, 4);
            }
            Expr::And(items) => join(items, "and", 3, out),
            Expr::Or(items) => join(items, "or", 2, out),
        }
    }
}

/// Writes `items` separated by `op`, each at least as tight as `min`.
fn join(items: &[Expr], op: &str, min: u8, out: &mut Vec<String>) {
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push(op.to_owned());
        }
        item.write(out, min);
    }
}
