//! saltq's own targeting cases: every error message, the master's greedy
//! three-valued check, listed ids, nodegroup expansion for publishing, and
//! the loading of `nodegroups:` from YAML.

use saltq_semantics::python::GlobError;
use saltq_semantics::target::{
    MinionFacts, NodegroupDef, Nodegroups, Target, TargetError, TargetType,
};
use serde_json::{Value, json};

/// Owned strings.
fn strings(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| (*s).to_owned()).collect()
}

/// Nodegroups used by the tables below.
fn groups() -> Nodegroups {
    let rows = [
        ("web", NodegroupDef::Expr("web* or G@role:web".to_owned())),
        ("ids", NodegroupDef::Words(strings(&["host1", "host2"]))),
        ("dangling", NodegroupDef::Expr("web* and".to_owned())),
        ("empty", NodegroupDef::Expr(String::new())),
        ("ranged", NodegroupDef::Expr("R@%foo".to_owned())),
        (
            "outer",
            NodegroupDef::Expr("N@web and not N@ids".to_owned()),
        ),
        ("loop1", NodegroupDef::Expr("a or N@loop2".to_owned())),
        ("loop2", NodegroupDef::Expr("N@loop1".to_owned())),
        (
            "nested_bad",
            NodegroupDef::Expr("db* or N@dangling".to_owned()),
        ),
    ];
    rows.into_iter().map(|(n, d)| (n.to_owned(), d)).collect()
}

/// The error message of compiling `tgt`, or `None` when it compiles.
fn compile_error(tgt: &str, tgt_type: TargetType, delimiter: Option<&str>) -> Option<String> {
    Target::compile(tgt, tgt_type, delimiter, &groups())
        .err()
        .map(|e| e.to_string())
}

#[test]
fn error_messages() {
    use TargetType::*;
    let cases: &[(&str, TargetType, Option<&str>, &str)] = &[
        ("", Glob, None, "empty glob target"),
        ("  ", Compound, None, "empty compound target"),
        (",, ,", List, None, "empty list target"),
        (
            "os:x",
            Grain,
            Some(""),
            "invalid delimiter: the delimiter must not be empty",
        ),
        (
            "web(",
            Pcre,
            None,
            "invalid regex \"web(\": Parsing error at position 4: Opening parenthesis without closing parenthesis",
        ),
        (
            "os:(",
            GrainPcre,
            None,
            "invalid regex \"(\": Parsing error at position 1: Opening parenthesis without closing parenthesis",
        ),
        (
            "10.0.0.1/8",
            Ipcidr,
            None,
            "invalid network \"10.0.0.1/8\": host bits are set",
        ),
        (
            "10.0.0",
            Ipcidr,
            None,
            "invalid ip address or network \"10.0.0\"",
        ),
        ("nope", Nodegroup, None, "unknown nodegroup \"nope\""),
        (
            "loop1",
            Nodegroup,
            None,
            "nodegroup cycle: loop1 -> loop2 -> loop1",
        ),
        (
            "dangling",
            Nodegroup,
            None,
            "invalid nodegroup \"dangling\": dangling operator \"and\" at word 2",
        ),
        (
            "empty",
            Nodegroup,
            None,
            "invalid nodegroup \"empty\": empty expression",
        ),
        (
            "ranged",
            Nodegroup,
            None,
            "range targeting is not supported: saltq has no seco range server (word 1 \"R@%foo\" of nodegroup \"ranged\")",
        ),
        (
            "and web*",
            Compound,
            None,
            "invalid compound target \"and web*\": leading operator \"and\" at word 1",
        ),
        (
            "G@os:Ubuntu and",
            Compound,
            None,
            "invalid compound target \"G@os:Ubuntu and\": dangling operator \"and\" at word 2",
        ),
        (
            "web* or )",
            Compound,
            None,
            "invalid compound target \"web* or )\": dangling operator \"or\" at word 2",
        ),
        (
            "not",
            Compound,
            None,
            "invalid compound target \"not\": dangling operator \"not\" at word 1",
        ),
        (
            "web* and or db*",
            Compound,
            None,
            "invalid compound target \"web* and or db*\": operator \"or\" after \"and\" at word 3",
        ),
        (
            "( and web* )",
            Compound,
            None,
            "invalid compound target \"( and web* )\": operator \"and\" after \"(\" at word 2",
        ),
        (
            "not not web*",
            Compound,
            None,
            "invalid compound target \"not not web*\": operator \"not\" after \"not\" at word 2",
        ),
        (
            "web* db1",
            Compound,
            None,
            "invalid compound target \"web* db1\": missing operator between \"web*\" and \"db1\" at word 2",
        ),
        (
            "web* ( db1 )",
            Compound,
            None,
            "invalid compound target \"web* ( db1 )\": missing operator between \"web*\" and \"(\" at word 2",
        ),
        (
            "( web* db1 )",
            Compound,
            None,
            "invalid compound target \"( web* db1 )\": missing operator between \"web*\" and \"db1\" at word 3",
        ),
        (
            "( web*",
            Compound,
            None,
            "invalid compound target \"( web*\": unclosed \"(\" at word 1",
        ),
        (
            "web* and (",
            Compound,
            None,
            "invalid compound target \"web* and (\": unclosed \"(\" at word 3",
        ),
        (
            "web* )",
            Compound,
            None,
            "invalid compound target \"web* )\": unexpected \")\" at word 2",
        ),
        (
            ")",
            Compound,
            None,
            "invalid compound target \")\": unexpected \")\" at word 1",
        ),
        (
            "web* or ( )",
            Compound,
            None,
            "invalid compound target \"web* or ( )\": empty parentheses at word 3",
        ),
        (
            "X@foo",
            Compound,
            None,
            "invalid compound target \"X@foo\": unknown prefix \"X@\" in \"X@foo\" at word 1",
        ),
        (
            "web* or G@",
            Compound,
            None,
            "invalid compound target \"web* or G@\": empty pattern in \"G@\" at word 3",
        ),
        (
            "L@,,",
            Compound,
            None,
            "invalid compound target \"L@,,\": empty pattern in \"L@,,\" at word 1",
        ),
        (
            "E@web(",
            Compound,
            None,
            "invalid compound target \"E@web(\": word 1 \"E@web(\": invalid regex \"web(\": Parsing error at position 4: Opening parenthesis without closing parenthesis",
        ),
        (
            "S@nope",
            Compound,
            None,
            "invalid compound target \"S@nope\": word 1 \"S@nope\": invalid ip address or network \"nope\"",
        ),
        (
            "a or N@nope",
            Compound,
            None,
            "invalid compound target \"a or N@nope\": word 3 \"N@nope\": unknown nodegroup \"nope\"",
        ),
        (
            "a or N@loop1",
            Compound,
            None,
            "nodegroup cycle: loop1 -> loop2 -> loop1",
        ),
        (
            "a or N@dangling",
            Compound,
            None,
            "invalid compound target \"a or N@dangling\": in nodegroup \"dangling\" at word 3: dangling operator \"and\" at word 2",
        ),
        (
            "N@nested_bad",
            Compound,
            None,
            "invalid compound target \"N@nested_bad\": in nodegroup \"nested_bad\" at word 1: in nodegroup \"dangling\" at word 3: dangling operator \"and\" at word 2",
        ),
        (
            "a and R@%foo",
            Compound,
            None,
            "range targeting is not supported: saltq has no seco range server (word 3 \"R@%foo\" of compound target \"a and R@%foo\")",
        ),
    ];
    for (tgt, tgt_type, delimiter, want) in cases {
        let got = compile_error(tgt, *tgt_type, *delimiter);
        assert_eq!(got.as_deref(), Some(*want), "{tgt_type} {tgt:?}");
    }
    let long = "a:".repeat(64) + "b";
    assert_eq!(
        compile_error(&long, Grain, None),
        Some(format!(
            "too many parts in \"{long}\": at most 64 key and value parts are read"
        ))
    );
    let deep = format!("{}a{}", "( ".repeat(101), " )".repeat(101));
    assert_eq!(
        compile_error(&deep, Compound, None)
            .map(|m| m.ends_with("parentheses nested deeper than 100 at word 101")),
        Some(true)
    );
    // fnmatch never fails in Python 3.11 for real patterns; the error exists for safety.
    assert_eq!(
        TargetError::Glob {
            pattern: "[x]".to_owned(),
            reason: GlobError { offset: 0 }
        }
        .to_string(),
        "invalid glob \"[x]\": bad character range in set at offset 0"
    );
}

#[test]
fn target_type_names() {
    for t in TargetType::ALL {
        assert_eq!(t.as_str().parse::<TargetType>(), Ok(t));
        assert_eq!(serde_json::to_value(t).ok(), Some(json!(t.as_str())));
    }
    assert_eq!("".parse::<TargetType>(), Ok(TargetType::Glob));
    let range = "range".parse::<TargetType>().map_err(|e| e.to_string());
    assert_eq!(
        range,
        Err("range targeting is not supported: saltq has no seco range server".to_owned())
    );
    let unknown = "regex".parse::<TargetType>().map_err(|e| e.to_string());
    assert_eq!(
        unknown,
        Err("unknown target type \"regex\": expected glob, pcre, list, grain, grain_pcre, pillar, pillar_pcre, pillar_exact, ipcidr, compound or nodegroup".to_owned())
    );
    assert!(serde_json::from_value::<TargetType>(json!("grain_pcre")).is_ok());
    assert!(serde_json::from_value::<TargetType>(json!("bogus")).is_err());
}

/// A minion for the greedy table: id, and grains/pillar when known.
struct Minion {
    id: &'static str,
    grains: Option<Value>,
    pillar: Option<Value>,
}

impl Minion {
    /// Its facts.
    fn facts(&self) -> MinionFacts<'_> {
        MinionFacts {
            id: self.id,
            grains: self.grains.as_ref(),
            pillar: self.pillar.as_ref(),
        }
    }
}

#[test]
fn greedy_is_three_valued() {
    let unknown = Minion {
        id: "db1",
        grains: None,
        pillar: None,
    };
    let debian = Minion {
        id: "db1",
        grains: Some(json!({"os": "Debian", "ipv4": ["192.168.1.5"]})),
        pillar: None,
    };
    let web_unknown = Minion {
        id: "web1",
        grains: None,
        pillar: None,
    };
    // (target, minion, minion's own check, master's greedy check)
    let cases: &[(&str, &Minion, bool, bool)] = &[
        ("G@os:Ubuntu", &unknown, false, true),
        ("not G@os:Ubuntu", &unknown, true, true),
        ("web* and G@os:Ubuntu", &unknown, false, false),
        ("web* or G@os:Ubuntu", &unknown, false, true),
        ("G@os", &unknown, false, false),
        ("not G@os", &unknown, true, true),
        ("S@10.0.0.0/8", &unknown, false, true),
        ("G@os:Ubuntu", &debian, false, false),
        ("not G@os:Ubuntu", &debian, true, true),
        ("S@10.0.0.0/8", &debian, false, false),
        ("I@env:prod", &debian, false, true),
        ("G@os:Debian and I@env:prod", &debian, false, true),
        ("G@os:Ubuntu and I@env:prod", &debian, false, false),
        ("not ( G@os:Ubuntu or web* )", &web_unknown, false, false),
        ("not ( G@os:Ubuntu and web* )", &web_unknown, true, true),
        ("db1", &unknown, true, true),
        ("not db1", &unknown, false, false),
    ];
    for (tgt, minion, own, greedy) in cases {
        let target = Target::compile(tgt, TargetType::Compound, None, &groups());
        let got = target.map(|t| {
            (
                t.matches(&minion.facts()),
                t.matches_greedy(&minion.facts()),
            )
        });
        assert_eq!(got, Ok((*own, *greedy)), "{tgt} on {}", minion.id);
    }
    let pillar_exact = Target::compile("env:prod", TargetType::PillarExact, None, &groups());
    let facts = unknown.facts();
    assert_eq!(
        pillar_exact.map(|t| (t.matches(&facts), t.matches_greedy(&facts))),
        Ok((false, true))
    );
}

#[test]
fn listed_ids() {
    use TargetType::*;
    let cases: &[(&str, TargetType, &[&str])] = &[
        ("a, b,c", List, &["a", "b", "c"]),
        ("a b", List, &["a", "b"]),
        ("a,,b,a", List, &["a", "b"]),
        ("web*", Glob, &[]),
        ("L@a,b or L@b,c and not L@d", Compound, &["a", "b", "c"]),
        ("web* and N@ids", Compound, &["host1", "host2"]),
        ("ids", Nodegroup, &["host1", "host2"]),
        ("outer", Nodegroup, &[]),
        ("web", Nodegroup, &[]),
    ];
    for (tgt, tgt_type, want) in cases {
        let ids = Target::compile(tgt, *tgt_type, None, &groups()).map(|t| t.listed_ids());
        assert_eq!(ids, Ok(strings(want)), "{tgt_type} {tgt:?}");
    }
    let listed = Target::list(["a", "", "b"]).map(|t| (t.tgt().to_owned(), t.listed_ids()));
    assert_eq!(listed, Ok(("a,b".to_owned(), strings(&["a", "b"]))));
    let empty = Target::list(Vec::<String>::new())
        .map(|_| ())
        .map_err(|e| e.to_string());
    assert_eq!(empty, Err("empty list target".to_owned()));
}

#[test]
fn expanded_compound_for_publishing() {
    use TargetType::*;
    let cases: &[(&str, TargetType, Option<&str>)] = &[
        (
            "G@os:Ubuntu and N@web",
            Compound,
            Some("G@os:Ubuntu and ( web* or G@role:web )"),
        ),
        ("web", Nodegroup, Some("web* or G@role:web")),
        ("ids", Nodegroup, Some("L@host1,host2")),
        (
            "outer",
            Nodegroup,
            Some("( web* or G@role:web ) and not L@host1,host2"),
        ),
        ("a or b and c", Compound, Some("a or b and c")),
        ("( a or b ) and c", Compound, Some("( a or b ) and c")),
        ("not ( a and b )", Compound, Some("not ( a and b )")),
        ("not ( not a )", Compound, Some("not ( not a )")),
        ("a not b", Compound, Some("a and not b")),
        ("G|@os|Ubuntu", Compound, Some("G|@os|Ubuntu")),
        ("web*", Glob, None),
    ];
    for (tgt, tgt_type, want) in cases {
        let expanded =
            Target::compile(tgt, *tgt_type, None, &groups()).map(|t| t.expanded_compound());
        assert_eq!(expanded.as_ref().map(Option::as_deref), Ok(*want), "{tgt}");
        // The published form compiles to the same form without any nodegroups.
        if let Ok(Some(text)) = expanded {
            let again = Target::compile(&text, Compound, None, &Nodegroups::new());
            assert_eq!(
                again.map(|t| t.expanded_compound()),
                Ok(Some(text.clone())),
                "{text}"
            );
        }
    }
}

#[test]
fn simple_types() {
    use TargetType::*;
    let grains =
        json!({"os": "Ubuntu", "ipv4": ["10.1.2.3"], "ipv6": ["fe80::1"], "deep": {"k": "v"}});
    let pillar = json!({"env": "Prod"});
    let facts = |id| MinionFacts {
        id,
        grains: Some(&grains),
        pillar: Some(&pillar),
    };
    let cases: &[(&str, TargetType, Option<&str>, &str, bool)] = &[
        ("web*", Glob, None, "web01.example.com", true),
        ("Web*", Glob, None, "web01", false),
        ("*.com", Glob, None, "a/b.example.com", true),
        (r"web\d+", Pcre, None, "web01.example.com", true),
        (r"\d+", Pcre, None, "web01", false),
        ("minion0, web01", List, None, "web01", true),
        ("minion0 web01", List, None, "web01", true),
        ("minion0,ghost", List, None, "web01", false),
        ("os:ubuntu", Grain, None, "m", true),
        ("os|Ubuntu", Grain, Some("|"), "m", true),
        ("deep::k::v", Grain, Some("::"), "m", true),
        ("os:^Ub", GrainPcre, None, "m", true),
        ("env:prod", Pillar, None, "m", true),
        ("env:p.*", PillarPcre, None, "m", true),
        ("env:prod", PillarExact, None, "m", true),
        ("env:pro*", PillarExact, None, "m", false),
        ("10.0.0.0/8", Ipcidr, None, "m", true),
        ("10.1.2.3", Ipcidr, None, "m", true),
        ("fe80::/10", Ipcidr, None, "m", true),
        ("192.168.0.0/16", Ipcidr, None, "m", false),
    ];
    for (tgt, tgt_type, delimiter, id, want) in cases {
        let got =
            Target::compile(tgt, *tgt_type, *delimiter, &groups()).map(|t| t.matches(&facts(id)));
        assert_eq!(got, Ok(*want), "{tgt_type} {tgt:?} on {id}");
    }
}

#[test]
fn nodegroups_load_from_yaml() {
    let yaml = "web: 'G@role:web or web*'\nids: [host1, 1001, true, 2.5]\n";
    let loaded: Result<Nodegroups, _> = serde_yaml_ng::from_str(yaml);
    let want: Nodegroups = [
        (
            "web".to_owned(),
            NodegroupDef::Expr("G@role:web or web*".to_owned()),
        ),
        (
            "ids".to_owned(),
            NodegroupDef::Words(strings(&["host1", "1001", "True", "2.5"])),
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(loaded.ok(), Some(want));
    assert!(serde_yaml_ng::from_str::<Nodegroups>("bad: {a: 1}").is_err());
}

#[test]
fn targets_are_shareable() {
    fn assert_shareable<T: Send + Sync + Clone + 'static>() {}
    assert_shareable::<Target>();
}

#[test]
fn reads_grains_only_for_grain_and_ipcidr_operands() {
    let cases = [
        ("web*", TargetType::Glob, false),
        ("^web", TargetType::Pcre, false),
        ("a,b", TargetType::List, false),
        ("os:Debian", TargetType::Grain, true),
        ("os:Deb.*", TargetType::GrainPcre, true),
        ("role:web", TargetType::Pillar, false),
        ("role:w.*", TargetType::PillarPcre, false),
        ("role:web", TargetType::PillarExact, false),
        ("10.0.0.0/8", TargetType::Ipcidr, true),
        ("web* and I@role:web", TargetType::Compound, false),
        ("web* and not G@os:Debian", TargetType::Compound, true),
        ("L@a,b or S@10.0.0.1", TargetType::Compound, true),
        ("ids", TargetType::Nodegroup, false),
        ("web", TargetType::Nodegroup, true),
    ];
    for (tgt, tgt_type, want) in cases {
        let t = Target::compile(tgt, tgt_type, None, &groups()).expect(tgt);
        assert_eq!(t.reads_grains(), want, "{tgt} ({tgt_type:?})");
    }
}
