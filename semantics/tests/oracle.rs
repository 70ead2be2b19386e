//! Replays fixtures recorded from Salt 3007.8 itself (see `data/oracle/gen.py`):
//! `yamlify_arg`, `fnmatch.fnmatchcase`, `re.match`, `subdict_match`, and the
//! minion's `compound_match` over grains, pillar, lists and ipcidr.

use saltq_semantics::args::yamlify;
use saltq_semantics::target::{
    MatchMode, MinionFacts, Nodegroups, Target, TargetType, fnmatch, subdict_match,
};
use serde_json::Value;

/// Parses a fixture file.
fn fixture(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// The cases of a fixture: the value itself or its `cases` member.
fn cases(doc: &Value) -> &[Value] {
    doc.get("cases")
        .unwrap_or(doc)
        .as_array()
        .map_or(&[], Vec::as_slice)
}

/// A string member of a case.
fn text<'a>(case: &'a Value, key: &str) -> &'a str {
    case.get(key).and_then(Value::as_str).unwrap_or_default()
}

#[test]
fn yamlify_matches_salt() {
    let doc = fixture(include_str!("data/oracle/yamlify.json"));
    let mut failures = Vec::new();
    for case in cases(&doc) {
        let arg = text(case, "arg");
        let got = yamlify(arg);
        if Some(&got) != case.get("want") {
            failures.push(format!("{arg:?}: got {got}, salt {}", case["want"]));
        }
    }
    assert!(cases(&doc).len() > 300);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn fnmatch_matches_python() {
    let doc = fixture(include_str!("data/oracle/fnmatch.json"));
    let mut failures = Vec::new();
    for case in cases(&doc) {
        let (pattern, t) = (text(case, "pattern"), text(case, "text"));
        // `null`: Python raised; saltq matches nothing.
        let want = case["want"].as_bool().unwrap_or(false);
        if fnmatch(pattern, t) != want {
            failures.push(format!("fnmatch({pattern:?}, {t:?}) != {want}"));
        }
    }
    assert!(cases(&doc).len() >= 3000);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

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
