//! The results: one [`Figure`] per measured quantity, checked against issue 7's targets, printed
//! as a Markdown table and written as JSON.

use std::fmt::Write;

use serde::Serialize;

use crate::stats::Summary;

/// A bound a figure must reach.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Target {
    /// The bound, in the figure's unit.
    pub bound: f64,
    /// `true`: the figure must be at least `bound`; `false`: at most.
    pub at_least: bool,
}

impl Target {
    /// At most `bound`.
    pub fn at_most(bound: f64) -> Option<Target> {
        Some(Target {
            bound,
            at_least: false,
        })
    }

    /// At least `bound`.
    pub fn at_least(bound: f64) -> Option<Target> {
        Some(Target {
            bound,
            at_least: true,
        })
    }

    fn met(&self, v: f64) -> bool {
        if self.at_least {
            v >= self.bound
        } else {
            v <= self.bound
        }
    }
}

/// One measured quantity.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// The scenario that measured it (`cli`, `rpc`, `swarm`, `minion-rss`, `returns`).
    pub scenario: &'static str,
    /// The scenario's size (minions).
    pub size: usize,
    /// A stable machine name, e.g. `cli_wall_ms`.
    pub metric: &'static str,
    /// What a reader sees in the table.
    pub label: String,
    /// `ms`, `s`, `MiB`, `returns/s`.
    pub unit: &'static str,
    /// saltq's figure.
    pub saltq: Summary,
    /// Salt's figure from the same run, where Salt can run that size.
    pub salt: Option<Summary>,
    /// How many times faster or lighter saltq is: Salt ÷ saltq for times and sizes, saltq ÷
    /// Salt for rates (units per second).
    pub ratio: Option<f64>,
    /// Issue 7's target, where it sets one.
    pub target: Option<Target>,
    /// Whether saltq's median reaches the target.
    pub met: Option<bool>,
    /// How it was measured, where the label does not say.
    pub note: Option<String>,
}

impl Figure {
    /// A figure with its target checked and its ratio to Salt computed.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        scenario: &'static str,
        size: usize,
        metric: &'static str,
        label: impl Into<String>,
        unit: &'static str,
        saltq: Summary,
        salt: Option<Summary>,
        target: Option<Target>,
    ) -> Figure {
        // How many times better saltq is: for a rate (a unit per second) saltq ÷ Salt, for
        // times and sizes Salt ÷ saltq.
        let ratio = salt
            .filter(|s| saltq.median > 0.0 && s.median > 0.0)
            .map(|s| {
                if unit.ends_with("/s") {
                    saltq.median / s.median
                } else {
                    s.median / saltq.median
                }
            });
        Figure {
            scenario,
            size,
            metric,
            label: label.into(),
            unit,
            saltq,
            salt,
            ratio,
            met: target.map(|t| t.met(saltq.median)),
            target,
            note: None,
        }
    }

    /// Adds a note on how it was measured.
    pub fn note(mut self, note: impl Into<String>) -> Figure {
        self.note = Some(note.into());
        self
    }
}

fn num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn summary(s: &Summary, unit: &str) -> String {
    match (s.min, s.max) {
        (Some(lo), Some(hi)) => format!("{} {unit} ({}–{})", num(s.median), num(lo), num(hi)),
        _ => format!("{} {unit}", num(s.median)),
    }
}

/// The figures as a Markdown table.
pub fn table(figures: &[Figure]) -> String {
    let mut out = String::from(
        "| scenario | saltq median (min–max) | Salt 3007.8, same run | saltq better by | target | met |\n\
         |---|---|---|---|---|---|\n",
    );
    for f in figures {
        let salt = f.salt.map_or("—".into(), |s| summary(&s, f.unit));
        let ratio = f.ratio.map_or("—".into(), |r| format!("{r:.1}×"));
        let target = f.target.map_or("—".into(), |t| {
            format!(
                "{} {} {}",
                if t.at_least { "≥" } else { "≤" },
                num(t.bound),
                f.unit
            )
        });
        let met = match f.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "—",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {salt} | {ratio} | {target} | {met} |",
            f.label,
            summary(&f.saltq, f.unit)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_and_target() {
        let f = Figure::new(
            "cli",
            1,
            "cli_wall_ms",
            "cli",
            "ms",
            Summary::of(&[20.0, 22.0, 30.0]).unwrap(),
            Some(Summary::single(440.0)),
            Target::at_most(25.0),
        );
        assert_eq!(f.ratio, Some(20.0));
        assert_eq!(f.met, Some(true));
        let t = table(&[f]);
        assert!(t.contains("| cli | 22.0 ms (20.0–30.0) | 440 ms | 20.0× | ≤ 25.0 ms | yes |"));
        let slow = Figure::new(
            "returns",
            1,
            "stored_per_s",
            "r",
            "returns/s",
            Summary::single(9000.0),
            None,
            Target::at_least(10000.0),
        );
        assert_eq!(slow.met, Some(false));
        let rate = Figure::new(
            "saltapi",
            1,
            "rps",
            "r",
            "requests/s",
            Summary::single(300.0),
            Some(Summary::single(20.0)),
            None,
        );
        assert_eq!(rate.ratio, Some(15.0), "a rate: saltq ÷ Salt");
    }
}
