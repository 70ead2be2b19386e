//! Replays fixtures recorded from Salt 3007.8 itself (see `data/oracle/gen.py`):
//! `re.match`, `subdict_match`, and the minion's `compound_match` over grains,
//! pillar, lists and ipcidr (`yamlify_arg` and `fnmatch` are replayed by
//! `tests/python.rs`).

mod fixture;

use fixture::{cases, fixture, text};

use saltq_semantics::target::{
    MatchMode, MinionFacts, Nodegroups, Target, TargetType, subdict_match,
};

#[test]
fn pcre_matches_python() {
    let doc = fixture(include_str!("data/oracle/pcre.json"));
    let nodegroups = Nodegroups::new();
    let mut failures = Vec::new();
    for case in cases(&doc) {
        let (pattern, id) = (text(case, "pattern"), text(case, "text"));
        let facts = MinionFacts {
            id,
            grains: None,
            pillar: None,
        };
        let got = Target::compile(pattern, TargetType::Pcre, None, &nodegroups)
            .map(|t| t.matches(&facts));
        let ok = match (case["want"].as_bool(), &got) {
            (Some(want), Ok(m)) => *m == want,
            // Python refused the pattern: so must saltq (the empty one is an empty target).
            (None, Err(_)) => true,
            (Some(_), Err(_)) => pattern.is_empty(),
            (None, Ok(_)) => false,
        };
        if !ok {
            failures.push(format!(
                "re.match({pattern:?}, {id:?}): salt {}, saltq {got:?}",
                case["want"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn subdict_match_matches_salt() {
    let doc = fixture(include_str!("data/oracle/subdict.json"));
    let mut failures = Vec::new();
    for case in cases(&doc) {
        let data = &doc["data"][text(case, "data")];
        let (expr, delimiter) = (text(case, "expr"), text(case, "delimiter"));
        let mode = match text(case, "mode") {
            "regex" => MatchMode::Regex,
            "exact" => MatchMode::Exact,
            _ => MatchMode::Glob,
        };
        let want = case["want"].as_bool().unwrap_or(false);
        if subdict_match(data, expr, delimiter, mode) != want {
            failures.push(format!(
                "{} {expr:?} {mode:?} delimiter {delimiter:?}: salt {want}",
                case["data"]
            ));
        }
    }
    assert!(cases(&doc).len() > 1000);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn compound_matches_salt_minion() {
    let doc = fixture(include_str!("data/oracle/compound.json"));
    let nodegroups = Nodegroups::new();
    let minions = doc["minions"].as_array().map_or(&[][..], Vec::as_slice);
    let mut failures = Vec::new();
    for case in cases(&doc) {
        let id = text(case, "minion");
        let Some(minion) = minions.iter().find(|m| m["id"] == id) else {
            failures.push(format!("no minion {id}"));
            continue;
        };
        let facts = MinionFacts {
            id,
            grains: minion.get("grains"),
            pillar: minion.get("pillar"),
        };
        let tgt = text(case, "tgt");
        let want = case["want"].as_bool().unwrap_or(false);
        match Target::compile(tgt, TargetType::Compound, None, &nodegroups) {
            Ok(target) if target.matches(&facts) != want => {
                failures.push(format!("{tgt:?} on {id}: salt {want}"));
            }
            // saltq refuses what Salt silently matches nothing with.
            Err(err) if want => failures.push(format!("{tgt:?} on {id}: salt {want}, saltq {err}")),
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
