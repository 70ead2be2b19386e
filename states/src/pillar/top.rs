//! The pillar top file as Salt's `Pillar.merge_tops` and `top_matches` read it: rendered
//! top files (one per environment, plus their `include:`) merged into environment →
//! target → SLS names, targets sorted by their `order:`, and matched against the minion with
//! `confirm_top` (compound by default, `match:` to choose, `nodegroup` against the
//! master's `nodegroups`). Salt's pillar ignores `top_file_merging_strategy`; so does this.

use saltq_semantics::target::{MinionFacts, Nodegroups, Target, TargetType};
use serde_json::Value;

/// One target of the merged top: its matcher and SLS names.
#[derive(Debug, Clone, PartialEq)]
pub struct TopTarget {
    /// The target expression.
    pub tgt: String,
    /// The `match:` given (`grain`, `nodegroup`, ...), else compound.
    pub matcher: Option<String>,
    /// The SLS names, in order, without repeats.
    pub sls: Vec<String>,
    /// `order:` (targets are sorted by it, stably).
    pub order: i64,
}

/// The merged top: environments in the order met, each with its targets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Top {
    /// `(saltenv, targets)`.
    pub envs: Vec<(String, Vec<TopTarget>)>,
    /// SLS names listed under `ignore_missing: True`, per environment.
    pub ignore_missing: Vec<(String, String)>,
}

impl Top {
    /// Whether a missing `sls` of `env` is to be skipped silently.
    pub fn ignored(&self, env: &str, sls: &str) -> bool {
        self.ignore_missing
            .iter()
            .any(|(e, s)| e == env && s == sls)
    }
}

/// Salt's `merge_tops`: later top files replace a target of the same environment. An
/// error is Salt's "Error encountered while rendering pillar top file." (a top that is
/// not environment → target → list).
pub fn merge_tops(tops: &[Value]) -> Result<Top, String> {
    let bad = || "Error encountered while rendering pillar top file.".to_owned();
    let mut top = Top::default();
    for ctop in tops {
        let Value::Object(ctop) = ctop else {
            return Err(bad());
        };
        for (env, targets) in ctop {
            if env == "include" {
                continue;
            }
            let Value::Object(targets) = targets else {
                return Err(bad());
            };
            let idx = match top.envs.iter().position(|(e, _)| e == env) {
                Some(i) => i,
                None => {
                    top.envs.push((env.clone(), Vec::new()));
                    top.envs.len() - 1
                }
            };
            for (tgt, comps) in targets {
                let Value::Array(comps) = comps else {
                    return Err(bad());
                };
                let mut t = TopTarget {
                    tgt: tgt.clone(),
                    matcher: None,
                    sls: Vec::new(),
                    order: 0,
                };
                let mut ignore = false;
                for comp in comps {
                    match comp {
                        Value::Object(m) => {
                            if let Some(v) = m.get("match") {
                                t.matcher = Some(saltq_semantics::python::str(v));
                            }
                            if let Some(o) = m.get("order") {
                                t.order = order_of(o);
                            }
                            if m.get("ignore_missing")
                                .is_some_and(saltq_semantics::python::truthy)
                            {
                                ignore = true;
                            }
                        }
                        Value::String(s) if !t.sls.contains(s) => t.sls.push(s.clone()),
                        _ => {}
                    }
                }
                if ignore {
                    for s in &t.sls {
                        top.ignore_missing.push((env.clone(), s.clone()));
                    }
                }
                let list = &mut top.envs[idx].1;
                match list.iter_mut().find(|x| x.tgt == *tgt) {
                    Some(slot) => *slot = t,
                    None => list.push(t),
                }
            }
        }
    }
    for (_, targets) in &mut top.envs {
        targets.sort_by_key(|t| t.order);
    }
    Ok(top)
}

fn order_of(v: &Value) -> i64 {
    match v {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => s.trim().parse().unwrap_or(0),
        Value::Bool(b) => i64::from(*b),
        _ => 0,
    }
}

/// Salt's `top_matches`: per environment (only `pillarenv` when set), the SLS names of
/// every target that matches the minion, without repeats.
pub fn top_matches(
    top: &Top,
    pillarenv: Option<&str>,
    facts: &MinionFacts<'_>,
    nodegroups: &Nodegroups,
) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for (env, targets) in &top.envs {
        if pillarenv.is_some_and(|p| p != env) {
            continue;
        }
        for t in targets {
            if !confirm_top(t, facts, nodegroups) {
                continue;
            }
            let idx = match out.iter().position(|(e, _)| e == env) {
                Some(i) => i,
                None => {
                    out.push((env.clone(), Vec::new()));
                    out.len() - 1
                }
            };
            for s in &t.sls {
                if !out[idx].1.contains(s) {
                    out[idx].1.push(s.clone());
                }
            }
        }
    }
    out
}

/// Salt's `confirm_top`: the target read with its `match:` (compound by default). A target
/// that does not parse matches nothing, as Salt's matchers answer `False` (logged).
fn confirm_top(t: &TopTarget, facts: &MinionFacts<'_>, nodegroups: &Nodegroups) -> bool {
    let tgt_type = match t.matcher.as_deref() {
        None => TargetType::Compound,
        Some(m) => match m.parse::<TargetType>() {
            Ok(tt) => tt,
            Err(e) => {
                tracing::warn!(target = %t.tgt, matcher = m, "pillar top: {e}");
                return false;
            }
        },
    };
    match Target::compile(&t.tgt, tgt_type, None, nodegroups) {
        Ok(target) => target.matches(facts),
        Err(e) => {
            tracing::warn!(target = %t.tgt, "pillar top: {e}");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn facts<'a>(id: &'a str, grains: &'a Value) -> MinionFacts<'a> {
        MinionFacts {
            id,
            grains: Some(grains),
            pillar: None,
        }
    }

    #[test]
    fn every_matcher_and_order() {
        let top = merge_tops(&[json!({
            "base": {
                "*": ["common", "common"],
                "web*": ["web"],
                "os:Debian": [{"match": "grain"}, "debian"],
                "G@os:RedHat or db*": ["compound"],
                "webs": [{"match": "nodegroup"}, "by_group"],
                "first": [{"match": "list"}, {"order": -1}, "early"],
                "web[0-9]": [{"match": "pcre"}, "regex", {"ignore_missing": true}],
            },
            "dev": {"*": ["devonly"]},
        })])
        .unwrap();
        let mut groups = Nodegroups::new();
        groups.insert(
            "webs".into(),
            serde_json::from_value(json!("L@web1,web2")).unwrap(),
        );
        let g = json!({"os": "Debian"});
        let m = top_matches(&top, None, &facts("web1", &g), &groups);
        assert_eq!(
            m,
            vec![
                (
                    "base".to_owned(),
                    vec!["common", "web", "debian", "by_group", "regex"]
                        .into_iter()
                        .map(String::from)
                        .collect::<Vec<_>>()
                ),
                ("dev".to_owned(), vec!["devonly".to_owned()]),
            ]
        );
        assert!(top.ignored("base", "regex"));
        let m = top_matches(
            &top,
            Some("dev"),
            &facts("first", &json!({"os": "RedHat"})),
            &groups,
        );
        assert_eq!(m, vec![("dev".to_owned(), vec!["devonly".to_owned()])]);
        let m = top_matches(
            &top,
            None,
            &facts("first", &json!({"os": "RedHat"})),
            &groups,
        );
        assert_eq!(m[0].1, ["early", "common", "compound"]);
    }

    #[test]
    fn later_top_replaces_a_target_and_bad_shapes_are_salts_error() {
        let top = merge_tops(&[
            json!({"base": {"*": ["a"]}}),
            json!({"base": {"*": ["b"]}, "include": ["x"]}),
        ])
        .unwrap();
        assert_eq!(top.envs[0].1[0].sls, ["b"]);
        assert_eq!(
            merge_tops(&[json!({"base": ["a"]})]).unwrap_err(),
            "Error encountered while rendering pillar top file."
        );
    }
}
