//! Salt's own test cases, ported as tables. Each table names the Salt 3007.8
//! test it comes from; where saltq deliberately differs, the row says so.

use saltq_semantics::args::{condition_input, parse_input, parse_kwarg};
use saltq_semantics::target::{
    MatchMode, MinionFacts, NodegroupDef, Nodegroups, Target, TargetError, TargetType,
    nodegroup_comp, subdict_match, traverse,
};
use serde_json::{Map, Value, json};

/// A nodegroups map from `(name, definition)` rows.
fn nodegroups(rows: &[(&str, NodegroupDef)]) -> Nodegroups {
    rows.iter()
        .map(|(n, d)| ((*n).to_owned(), d.clone()))
        .collect()
}

/// A string-form nodegroup.
fn expr(s: &str) -> NodegroupDef {
    NodegroupDef::Expr(s.to_owned())
}

/// A list-form nodegroup.
fn words(w: &[&str]) -> NodegroupDef {
    NodegroupDef::Words(w.iter().map(|s| (*s).to_owned()).collect())
}

/// Owned strings.
fn strings(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| (*s).to_owned()).collect()
}

// tests/unit/utils/test_minions.py: NODEGROUPS, EXPECTED (MinionsTestCase.test_nodegroup_comp)
// and NodegroupCompTest.
#[test]
fn nodegroup_comp_matches_salt() {
    let groups = nodegroups(&[
        ("group1", expr("L@host1,host2,host3")),
        ("group2", words(&["G@foo:bar", "or", "web1*"])),
        ("group3", words(&["N@group1", "or", "N@group2"])),
        ("group4", words(&["host4", "host5", "host6"])),
        ("group5", expr("N@group4")),
        ("group6", expr("N@group3")),
        ("group7", words(&["host1"])),
        (
            "simple",
            expr("L@foo.domain.com,bar.domain.com,baz.domain.com or bl*.domain.com"),
        ),
        ("expression", expr("[foo,bar,baz].domain.com")),
        ("recurse", expr("G@os:Debian and N@simple")),
    ]);
    let cases: &[(&str, &[&str])] = &[
        ("group1", &["L@host1,host2,host3"]),
        ("group2", &["G@foo:bar", "or", "web1*"]),
        (
            "group3",
            &[
                "(",
                "(",
                "L@host1,host2,host3",
                ")",
                "or",
                "(",
                "G@foo:bar",
                "or",
                "web1*",
                ")",
                ")",
            ],
        ),
        ("group4", &["L@host4,host5,host6"]),
        ("group5", &["(", "L@host4,host5,host6", ")"]),
        (
            "group6",
            &[
                "(",
                "(",
                "(",
                "L@host1,host2,host3",
                ")",
                "or",
                "(",
                "G@foo:bar",
                "or",
                "web1*",
                ")",
                ")",
                ")",
            ],
        ),
        ("group7", &["L@host1"]),
        (
            "simple",
            &[
                "L@foo.domain.com,bar.domain.com,baz.domain.com",
                "or",
                "bl*.domain.com",
            ],
        ),
        ("expression", &["E@[foo,bar,baz].domain.com"]),
        (
            "recurse",
            &[
                "(",
                "G@os:Debian",
                "and",
                "(",
                "L@foo.domain.com,bar.domain.com,baz.domain.com",
                "or",
                "bl*.domain.com",
                ")",
                ")",
            ],
        ),
    ];
    for (name, want) in cases {
        assert_eq!(nodegroup_comp(name, &groups), Ok(strings(want)), "{name}");
    }
}

// tests/unit/utils/test_minions.py: NodegroupCompTest.test_circular_nodegroup_reference.
// Salt logs and returns []; saltq refuses the cycle.
#[test]
fn nodegroup_cycle_is_an_error() {
    let groups = nodegroups(&[("group1", expr("N@group2")), ("group2", expr("N@group1"))]);
    let want = TargetError::NodegroupCycle(strings(&["group1", "group2", "group1"]));
    assert_eq!(nodegroup_comp("group1", &groups), Err(want.clone()));
    let compiled = Target::compile("group1", TargetType::Nodegroup, None, &groups);
    assert_eq!(compiled.map(|_| ()), Err(want));
}

/// Checks `tgt` as a compound target against one minion.
fn compound_matches(tgt: &str, id: &str, grains: &Value, pillar: &Value) -> Result<bool, String> {
    let target = Target::compile(tgt, TargetType::Compound, None, &Nodegroups::new())
        .map_err(|e| e.to_string())?;
    Ok(target.matches(&MinionFacts {
        id,
        grains: Some(grains),
        pillar: Some(pillar),
    }))
}

// tests/unit/utils/test_minions.py: TargetParseTestCase (parse_target). Each
// engine letter reads the pattern after `@`; checked here through matching.
#[test]
fn parse_target_cases() {
    let grains = json!({"a": "b", "ipv4": ["10.0.0.1"]});
    let pillar = json!({"a": "b c"});
    let cases: &[(&str, &str, Result<bool, &str>)] = &[
        ("G@a:b", "m", Ok(true)),
        ("P@a:b", "m", Ok(true)),
        ("J@a:b", "m", Ok(true)),
        ("I@a:b*", "m", Ok(true)),
        ("L@a:b", "a:b", Ok(true)),
        ("E@a:b", "a:b", Ok(true)),
        (
            "S@a:b",
            "m",
            Err(
                "invalid compound target \"S@a:b\": word 1 \"S@a:b\": invalid ip address or \
                 network \"a:b\"",
            ),
        ),
        (
            "N@a:b",
            "m",
            Err("invalid compound target \"N@a:b\": word 1 \"N@a:b\": unknown nodegroup \"a:b\""),
        ),
        (
            "R@a:b",
            "m",
            Err(
                "range targeting is not supported: saltq has no seco range server (word 1 \
                 \"R@a:b\" of compound target \"R@a:b\")",
            ),
        ),
    ];
    for (tgt, id, want) in cases {
        let got = compound_matches(tgt, id, &grains, &pillar);
        assert_eq!(got, want.map_err(str::to_owned), "{tgt}");
    }
    // test_parse_multiword_target: "G@a:b c" keeps "a:b c" as the pattern.
    let multi = Target::compile("a:b c", TargetType::Pillar, None, &Nodegroups::new());
    let facts = MinionFacts {
        id: "m",
        grains: None,
        pillar: Some(&pillar),
    };
    assert_eq!(multi.map(|t| t.matches(&facts)), Ok(true));
}

// tests/pytests/unit/utils/test_data.py: test_subdict_match and
// test_subdict_match_with_wildcards.
#[test]
fn subdict_match_salt_cases() {
    let two_level = json!({"foo": {"bar": "baz"}});
    let comb = json!({"foo": {"bar": "baz:woz"}});
    let dict_and_list = json!({"abc": ["def", "ghi", {"lorem": {"ipsum": [{"dolor": "sit"}]}}]});
    let three_level = json!({"a": {"b": {"c": "v"}}});
    let cases: &[(&Value, &str, bool)] = &[
        (&two_level, "foo:bar:baz", true),
        (&comb, "foo:bar:baz", false),
        (&comb, "foo:bar:baz:woz", true),
        (&comb, "foo:bar:baz:woz:wiz", false),
        (&dict_and_list, "abc:ghi", true),
        (&dict_and_list, "abc:lorem:ipsum:dolor:sit", true),
        (&three_level, "a:b:c:v", true),
        (&three_level, "a:c:v", false),
        (&three_level, "a:*:c:v", true),
    ];
    for (data, expr, want) in cases {
        assert_eq!(
            subdict_match(data, expr, ":", MatchMode::Glob),
            *want,
            "{expr}"
        );
    }
    let data = json!({"a": {"b": {"ç": "d", "é": ["eff", "gee", "8ch"], "ĩ": {"j": "k"}}}});
    let wildcards = [
        "*:*:*:*",
        "a:*:*:*",
        "a:b:*:*",
        "a:b:ç:*",
        "a:b:*:d",
        "a:*:ç:d",
        "*:b:ç:d",
        "*:*:ç:d",
        "*:*:*:d",
        "a:*:*:d",
        "a:b:*:ef*",
        "a:b:*:g*",
        "a:b:*:j:*",
        "a:b:*:j:k",
        "a:b:*:*:k",
        "a:b:*:*:*",
    ];
    for expr in wildcards {
        assert!(subdict_match(&data, expr, ":", MatchMode::Glob), "{expr}");
    }
}

// tests/pytests/unit/utils/test_data.py: test_traverse_dict,
// test_traverse_dict_and_list and test_issue_39709 (`None` is the default).
// The integer-key case (issue 56444) cannot arise: JSON keys are strings.
#[test]
fn traverse_salt_cases() {
    let two_level = json!({"foo": {"bar": "baz"}});
    let dict_and_list = json!({"foo": ["bar", "baz", {"lorem": {"ipsum": [{"dolor": "sit"}]}}]});
    let cases: &[(&Value, &str, Option<Value>)] = &[
        (&two_level, "foo:bar:baz", None),
        (&two_level, "foo:bar", Some(json!("baz"))),
        (&dict_and_list, "foo:bar", None),
        (&dict_and_list, "foo:1", Some(json!("baz"))),
        (&dict_and_list, "foo:lorem:ipsum:dolor", Some(json!("sit"))),
        (&json!({"foo": {"baz": "didn't work"}}), "foo:bar", None),
        (
            &json!({"foo": {"1234": "it worked"}}),
            "foo:1234",
            Some(json!("it worked")),
        ),
    ];
    for (data, key, want) in cases {
        assert_eq!(traverse(data, key, ":").cloned(), *want, "{key}");
    }
}

/// Grains and pillar of the two minions of Salt's integration tests
/// (tests/integration/files/conf/minion and sub_minion, the `pillar_tree`
/// fixture and the `matcher_grain` custom grain).
fn integration_minions() -> [(&'static str, Value, Value); 2] {
    let pillar = |sub: Option<&str>| {
        let mut p = json!({
            "monty": "python",
            "knights": ["Lancelot", "Galahad", "Bedevere", "Robin"],
            "level1": {"level2": "foo"},
            "companions": {"three": ["liz", "jo", "sarah jane"]},
        });
        if let (Some(sub), Some(map)) = (sub, p.as_object_mut()) {
            map.insert("sub".to_owned(), json!(sub));
        }
        p
    };
    [
        (
            "minion",
            json!({
                "test_grain": "cheese", "match": "maker",
                "planets": ["mercury", "venus", "earth", "mars"],
                "level1": {"level2": "foo"},
                "companions": {"one": ["susan", "ian", "barbara"]},
            }),
            pillar(None),
        ),
        (
            "sub_minion",
            json!({
                "test_grain": "spam", "match": "maker", "role": "sub",
                "planets": ["jupiter", "saturn", "uranus", "neptune"],
                "level1": {"level2": "bar"},
                "companions": {"two": ["jamie", "zoe"]},
            }),
            pillar(Some("sub_minion")),
        ),
    ]
}

/// The nodegroups of tests/pytests/conftest.py.
fn integration_nodegroups() -> Nodegroups {
    nodegroups(&[
        ("min", expr("minion")),
        ("sub_min", expr("sub_minion")),
        ("mins", expr("N@min or N@sub_min")),
        ("list_nodegroup", words(&["minion", "sub_minion"])),
        (
            "multiline_nodegroup",
            words(&["minion", "or", "sub_minion"]),
        ),
        ("one_minion_list", words(&["minion"])),
        ("redundant_minions", expr("N@min or N@mins")),
        ("nodegroup_loop_a", expr("N@nodegroup_loop_b")),
        ("nodegroup_loop_b", expr("N@nodegroup_loop_a")),
        ("missing_minion", expr("L@minion,ghostminion")),
        ("list_group", expr("N@multiline_nodegroup")),
        ("one_list_group", expr("N@one_minion_list")),
        ("list_group2", expr("N@list_nodegroup")),
    ])
}

// tests/pytests/integration/cli/test_matcher.py: which of `minion` and
// `sub_minion` each target reaches. `None`: Salt matches nothing and saltq
// refuses the target (unknown nodegroup, nodegroup loop).
#[test]
fn integration_matcher_cases() {
    use TargetType::*;
    let cases: &[(TargetType, &str, Option<&[&str]>)] = &[
        (List, "minion", Some(&["minion"])),
        (List, "minion,sub_minion", Some(&["minion", "sub_minion"])),
        (Compound, "min* and G@test_grain:cheese", Some(&["minion"])),
        (Compound, "min* and not G@test_grain:foo", Some(&["minion"])),
        (Compound, "min* not G@test_grain:foo", Some(&["minion"])),
        (
            Compound,
            "P@test_grain:^cheese$ and * and G@test_grain:cheese",
            Some(&["minion"]),
        ),
        (Compound, "L@sub_minion and E@.*", Some(&["sub_minion"])),
        (Compound, "not sub_minion", Some(&["minion"])),
        (
            Compound,
            "* and ( not G@test_grain:cheese )",
            Some(&["sub_minion"]),
        ),
        (Compound, "G%@planets%merc*", Some(&["minion"])),
        (
            Compound,
            "P%@planets%^(mercury|saturn)$",
            Some(&["minion", "sub_minion"]),
        ),
        (
            Compound,
            "I%@companions%three%sarah*",
            Some(&["minion", "sub_minion"]),
        ),
        (
            Compound,
            "J%@knights%^(Lancelot|Galahad)$",
            Some(&["minion", "sub_minion"]),
        ),
        (
            Compound,
            "N@multiline_nodegroup",
            Some(&["minion", "sub_minion"]),
        ),
        (
            Compound,
            "N@multiline_nodegroup not sub_minion",
            Some(&["minion"]),
        ),
        (
            Compound,
            "N@multiline_nodegroup not @fakenodegroup not sub_minion",
            Some(&["minion"]),
        ),
        (Nodegroup, "min", Some(&["minion"])),
        (Nodegroup, "sub_min", Some(&["sub_minion"])),
        (Nodegroup, "mins", Some(&["minion", "sub_minion"])),
        (Nodegroup, "unknown_nodegroup", None),
        (
            Nodegroup,
            "redundant_minions",
            Some(&["minion", "sub_minion"]),
        ),
        (Nodegroup, "nodegroup_loop_a", None),
        (
            Nodegroup,
            "multiline_nodegroup",
            Some(&["minion", "sub_minion"]),
        ),
        (Nodegroup, "list_group", Some(&["minion", "sub_minion"])),
        (Nodegroup, "list_group2", Some(&["minion", "sub_minion"])),
        (Nodegroup, "one_list_group", Some(&["minion"])),
        (Nodegroup, "one_minion_list", Some(&["minion"])),
        (Glob, "minion", Some(&["minion"])),
        (Glob, "*", Some(&["minion", "sub_minion"])),
        (Pcre, "^minion$", Some(&["minion"])),
        (Pcre, ".*", Some(&["minion", "sub_minion"])),
        (Grain, "test_grain:cheese", Some(&["minion"])),
        (Grain, "test_grain:spam", Some(&["sub_minion"])),
        (Grain, "match:maker", Some(&["minion", "sub_minion"])),
        (Grain, "planets:earth", Some(&["minion"])),
        (Grain, "planets:saturn", Some(&["sub_minion"])),
        (Grain, "planets:pluto", Some(&[])),
        (Grain, "level1:level2:foo", Some(&["minion"])),
        (Grain, "level1:level2:bar", Some(&["sub_minion"])),
        (Grain, "companions:one:ian", Some(&["minion"])),
        (Grain, "companions:two:jamie", Some(&["sub_minion"])),
        (Grain, "companions:*:susan", Some(&["minion"])),
        (Grain, "companions:one:*", Some(&["minion"])),
        (Grain, "companions:*:*", Some(&["minion", "sub_minion"])),
        (GrainPcre, "test_grain:^cheese$", Some(&["minion"])),
        (GrainPcre, "test_grain:.*am$", Some(&["sub_minion"])),
        (Pillar, "monty:python", Some(&["minion", "sub_minion"])),
        (Pillar, "sub:sub_minion", Some(&["sub_minion"])),
        (Pillar, "knights:Bedevere", Some(&["minion", "sub_minion"])),
        (Pillar, "level1:level2:foo", Some(&["minion", "sub_minion"])),
        (
            Pillar,
            "companions:three:sarah jane",
            Some(&["minion", "sub_minion"]),
        ),
        (
            PillarPcre,
            "monty:^(python|hall)$",
            Some(&["minion", "sub_minion"]),
        ),
        (
            PillarPcre,
            "knights:^(Robin|Lancelot)$",
            Some(&["minion", "sub_minion"]),
        ),
    ];
    let minions = integration_minions();
    let groups = integration_nodegroups();
    for (tgt_type, tgt, want) in cases {
        let delimiter = None;
        let got = Target::compile(tgt, *tgt_type, delimiter, &groups).map(|target| {
            minions
                .iter()
                .filter(|(id, grains, pillar)| {
                    target.matches(&MinionFacts {
                        id,
                        grains: Some(grains),
                        pillar: Some(pillar),
                    })
                })
                .map(|(id, _, _)| *id)
                .collect::<Vec<_>>()
        });
        assert_eq!(got.ok().as_deref(), *want, "{tgt_type} {tgt:?}");
    }
}

// tests/pytests/integration/cli/test_matcher.py: the `missing_minion`
// nodegroup reports `ghostminion` (and `minion`) as listed ids.
#[test]
fn nodegroup_listed_ids() {
    let groups = integration_nodegroups();
    let target = Target::compile("missing_minion", TargetType::Nodegroup, None, &groups);
    assert_eq!(
        target.map(|t| t.listed_ids()),
        Ok(strings(&["minion", "ghostminion"]))
    );
}

// tests/pytests/unit/utils/test_args.py: test_parse_kwarg, test_arguments_regex
// and test_condition_input_string.
#[test]
fn kwarg_and_condition_salt_cases() {
    let cases = [
        ("foo=bar", Some(("foo", "bar"))),
        ("foobar", None),
        ("pip=1.1", Some(("pip", "1.1"))),
        ("pip==1.1", None),
        ("pip=1.2=1", Some(("pip", "1.2=1"))),
    ];
    for (arg, want) in cases {
        assert_eq!(parse_kwarg(arg), want, "{arg}");
    }
    // A 2014 jid is beyond u64, so the typed argument is already its digits.
    let (args, kwargs) = parse_input(&strings(&["*", "foo.bar", "20141020201325675584"]));
    let out = condition_input(args, kwargs);
    assert_eq!(
        out,
        vec![json!("*"), json!("foo.bar"), json!("20141020201325675584")]
    );
    let early = condition_input(vec![json!(10_000_101_000_000_000_000_u64)], Map::new());
    assert_eq!(early, vec![json!("10000101000000000000")]);
}
