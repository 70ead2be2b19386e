//! Property tests of targeting (issue #15): arbitrary strings and generated well-formed
//! expressions of every target type go through `Target::compile` and the matchers.
//!
//! What must hold: nothing panics; an error names what is wrong (a compound error's word and
//! position are the word at that position); well-formed expressions compile; a compound
//! matches exactly when the boolean combination of its words does; matching is deterministic;
//! the master's greedy check never excludes a minion the minion itself would match; a
//! nodegroup's expansion holds no `N@` and matches as the nodegroup does; a glob of a
//! literal id matches that id.
//!
//! CI runs a small number of cases; `PROPTEST_CASES=20000 cargo test -p saltq-semantics
//! --test prop_target` runs more (README.md, "Fuzzing").

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use saltq_semantics::target::{
    CompoundError, MinionFacts, NodegroupDef, Nodegroups, Target, TargetError, TargetType,
    nodegroup_comp,
};
use serde_json::{Value, json};

/// `default` cases, or `PROPTEST_CASES` when set (for longer runs).
fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------
// Generators.

/// A minion id as fleets name them.
fn id() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9._-]{0,8}"
}

/// An id that can stand as a word of a compound target: not an operator (`or`).
fn word_id() -> impl Strategy<Value = String> {
    id().prop_filter("an operator is not an id word", |i| {
        !matches!(i.as_str(), "and" | "or" | "not")
    })
}

/// A value found in grains or pillar.
fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-zA-Z0-9 ._-]{0,6}".prop_map(Value::String),
        prop::sample::select(vec!["Debian", "web", "db", "True", "1", "x:y", "*"])
            .prop_map(|s| json!(s)),
        any::<i32>().prop_map(|n| json!(n)),
        any::<bool>().prop_map(|b| json!(b)),
        Just(Value::Null),
    ]
}

/// Grains or pillar: a few known keys, nested dicts and lists, and IP address lists.
fn data() -> impl Strategy<Value = Value> {
    let leaf = scalar();
    let nested = leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    (
        prop::collection::btree_map(key(), nested, 0..5),
        prop::collection::vec(ipv4(), 0..3),
        prop::collection::vec(ipv6(), 0..2),
    )
        .prop_map(|(map, v4, v6)| {
            let mut obj: serde_json::Map<String, Value> = map.into_iter().collect();
            obj.insert("ipv4".into(), json!(v4));
            obj.insert("ipv6".into(), json!(v6));
            Value::Object(obj)
        })
}

/// A grain or pillar key.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec!["os", "role", "roles", "num", "pkg", "a", "b", "0"])
            .prop_map(str::to_owned),
        "[a-z]{1,4}",
    ]
}

fn ipv4() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|o| std::net::Ipv4Addr::from(o).to_string()),
        (0u8..4).prop_map(|h| format!("10.0.0.{h}")),
    ]
}

fn ipv6() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<[u16; 8]>().prop_map(|s| std::net::Ipv6Addr::from(s).to_string()),
        (0u16..4).prop_map(|h| format!("fe80::{h}")),
    ]
}

/// A glob: literal characters, `*`, `?` and sets.
fn glob() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => "[a-z0-9._-]".prop_map(|s: String| s),
            1 => Just("*".to_owned()),
            1 => Just("?".to_owned()),
            1 => Just("[a-m]".to_owned()),
            1 => Just("[!x]".to_owned()),
        ],
        1..6,
    )
    .prop_map(|parts| parts.concat())
    // A bare word `or` is the operator in a compound target, in Salt too: not a glob.
    .prop_filter("an operator is not a glob", |g| {
        !matches!(g.as_str(), "and" | "or" | "not")
    })
}

/// A Python regex that compiles.
fn regex() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "web", "db", r"\d+", r"\d", ".*", "[a-z]+", "(web|db)", "a?", r"\.", "x{1,2}", "$",
        ]),
        1..4,
    )
    .prop_map(|parts| parts.concat())
}

/// A network with its host bits clear, or a bare address.
fn cidr() -> impl Strategy<Value = String> {
    prop_oneof![
        (any::<u32>(), 0u32..=32).prop_map(|(a, len)| {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            format!("{}/{len}", std::net::Ipv4Addr::from(a & mask))
        }),
        (0u8..4).prop_map(|n| format!("10.0.0.{n}")),
        Just("10.0.0.0/30".to_owned()),
        Just("fe80::/64".to_owned()),
    ]
}

/// A well-formed target word of any engine but `N@`.
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => glob(),
        1 => regex().prop_map(|r| format!("E@{r}")),
        1 => prop::collection::vec(id(), 1..4).prop_map(|ids| format!("L@{}", ids.join(","))),
        2 => (key(), glob()).prop_map(|(k, v)| format!("G@{k}:{v}")),
        1 => (key(), key(), glob()).prop_map(|(k, k2, v)| format!("G@{k}:{k2}:{v}")),
        1 => (key(), glob()).prop_map(|(k, v)| format!("G|@{k}|{v}")),
        1 => (key(), regex()).prop_map(|(k, r)| format!("P@{k}:{r}")),
        2 => (key(), glob()).prop_map(|(k, v)| format!("I@{k}:{v}")),
        1 => (key(), regex()).prop_map(|(k, r)| format!("J@{k}:{r}")),
        1 => cidr().prop_map(|c| format!("S@{c}")),
    ]
}

/// A compound expression as a tree.
#[derive(Debug, Clone)]
enum Ast {
    Word(String),
    Not(Box<Ast>),
    And(Vec<Ast>),
    Or(Vec<Ast>),
}

fn ast(words: BoxedStrategy<String>) -> impl Strategy<Value = Ast> {
    words.prop_map(Ast::Word).prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|a| Ast::Not(Box::new(a))),
            prop::collection::vec(inner.clone(), 2..4).prop_map(Ast::And),
            prop::collection::vec(inner, 2..4).prop_map(Ast::Or),
        ]
    })
}

impl Ast {
    /// The compound words: non-leaf operands in parentheses.
    fn words(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut Vec<String>) {
        let operand = |a: &Ast, out: &mut Vec<String>| match a {
            Ast::Word(w) => out.push(w.clone()),
            other => {
                out.push("(".into());
                other.write(out);
                out.push(")".into());
            }
        };
        match self {
            Ast::Word(w) => out.push(w.clone()),
            Ast::Not(a) => {
                out.push("not".into());
                operand(a, out);
            }
            Ast::And(items) | Ast::Or(items) => {
                let op = if matches!(self, Ast::And(_)) {
                    "and"
                } else {
                    "or"
                };
                for (n, item) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(op.into());
                    }
                    operand(item, out);
                }
            }
        }
    }

    /// The expected answer: each word compiled alone, combined with Python's `and`/`or`/`not`.
    fn eval(&self, facts: &MinionFacts<'_>, groups: &Nodegroups) -> bool {
        match self {
            Ast::Word(w) => Target::compile(w, TargetType::Compound, None, groups)
                .unwrap_or_else(|e| panic!("word {w:?} alone: {e}"))
                .matches(facts),
            Ast::Not(a) => !a.eval(facts, groups),
            Ast::And(items) => items.iter().all(|a| a.eval(facts, groups)),
            Ast::Or(items) => items.iter().any(|a| a.eval(facts, groups)),
        }
    }
}

/// Nodegroups `ng0..ngN`, each a compound (as a string or in list form) over words and
/// `N@` references to earlier ones only, so there is no cycle; or a list of ids (Salt reads
/// a definition without operators as one `L@` word).
fn nodegroups() -> impl Strategy<Value = Nodegroups> {
    let def = prop_oneof![
        3 => (ast(word().boxed()), any::<bool>()).prop_map(|(tree, list)| (Some(tree.words()), vec![], list)),
        1 => (prop::collection::vec(word_id(), 1..4), any::<bool>()).prop_map(|(ids, list)| (None, ids, list)),
    ];
    prop::collection::vec((def, any::<u8>()), 1..5).prop_map(|defs| {
        let mut groups = Nodegroups::new();
        for (n, ((tree, ids, list_form), pick)) in defs.into_iter().enumerate() {
            let words = match tree {
                // Ids alone: Salt's `L@` shortcut.
                None => ids,
                Some(words) if n == 0 && words.len() > 1 => words,
                // One word alone would be read as ids or a regex, as Salt does.
                Some(words) if n == 0 => {
                    [words, vec!["or".to_owned(), "L@never".to_owned()]].concat()
                }
                // Refer to an earlier group, nested in the definition.
                Some(words) => [
                    vec!["(".to_owned()],
                    words,
                    vec![
                        ")".to_owned(),
                        "or".to_owned(),
                        format!("N@ng{}", usize::from(pick) % n),
                    ],
                ]
                .concat(),
            };
            let def = if list_form {
                NodegroupDef::Words(words)
            } else {
                NodegroupDef::Expr(words.join(" "))
            };
            groups.insert(format!("ng{n}"), def);
        }
        groups
    })
}

/// Words that stress the compound parser: operators, parentheses, prefixes, bad patterns.
fn compound_noise() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(vec![
                "and",
                "or",
                "not",
                "(",
                ")",
                "G@",
                "G@os",
                "G@os:",
                "L@",
                "L@,",
                "E@(",
                "E@web",
                "S@10.0.0.1/8",
                "S@x",
                "N@ng0",
                "N@nope",
                "R@%x",
                "X@y",
                "web*",
                "[z-a]",
                "G|@a|b",
                "I@a:b",
                "J@a:(",
                "P@a:[",
                "G@a:b:c",
                "*",
            ])
            .prop_map(str::to_owned),
            word(),
            "[ -~]{0,6}",
        ],
        0..10,
    )
    .prop_map(|w| w.join(" "))
}

// ---------------------------------------------------------------------------------------
// Checks.

/// An error's word and position must be the input's word at that position.
fn check_detail(detail: &CompoundError, words: &[String], groups: &Nodegroups) {
    let at = |pos: usize| -> &str {
        assert!(
            pos >= 1 && pos <= words.len(),
            "position {pos} outside {words:?}: {detail}"
        );
        &words[pos - 1]
    };
    let msg = detail.to_string();
    assert!(!msg.is_empty());
    match detail {
        CompoundError::Empty => assert!(words.is_empty(), "{words:?}"),
        CompoundError::LeadingOperator { word, pos }
        | CompoundError::DanglingOperator { word, pos } => {
            assert_eq!(at(*pos), word, "{msg}");
            assert!(matches!(word.as_str(), "and" | "or" | "not"), "{msg}");
        }
        CompoundError::MisplacedOperator { word, prev, pos }
        | CompoundError::MissingOperator { prev, word, pos } => {
            assert_eq!(at(*pos), word, "{msg}");
            assert!(*pos >= 2, "{msg}");
            assert_eq!(at(pos - 1), prev, "{msg}");
        }
        CompoundError::Unclosed { pos }
        | CompoundError::EmptyParens { pos }
        | CompoundError::TooDeep { pos, .. } => {
            assert_eq!(at(*pos), "(", "{msg}")
        }
        CompoundError::UnexpectedClose { pos } => assert_eq!(at(*pos), ")", "{msg}"),
        CompoundError::UnknownPrefix { prefix, word, pos } => {
            assert_eq!(at(*pos), word, "{msg}");
            assert!(word.starts_with(prefix.as_str()), "{msg}");
        }
        CompoundError::EmptyPattern { word, pos } => assert_eq!(at(*pos), word, "{msg}"),
        CompoundError::BadWord { word, pos, reason } => {
            assert_eq!(at(*pos), word, "{msg}");
            assert!(!reason.to_string().is_empty());
        }
        CompoundError::InNodegroup { name, pos, detail } => {
            assert_eq!(at(*pos), format!("N@{name}"), "{msg}");
            let inner = groups[name].words();
            // A definition without operators is read as one `L@`/`E@` word.
            if inner.len() > 1
                && !inner
                    .iter()
                    .any(|w| matches!(w.as_str(), "and" | "or" | "not" | "(" | ")"))
            {
                return;
            }
            check_detail(detail, &inner, groups);
        }
    }
}

/// What holds of any error: a message, and the bad word where there is one.
fn check_error(tgt: &str, tgt_type: TargetType, err: &TargetError, groups: &Nodegroups) {
    let msg = err.to_string();
    assert!(!msg.trim().is_empty(), "empty message for {tgt:?}");
    match err {
        TargetError::Compound { tgt: t, detail } => {
            assert_eq!(t, tgt);
            let words: Vec<String> = tgt.split_whitespace().map(str::to_owned).collect();
            check_detail(detail, &words, groups);
        }
        TargetError::Nodegroup { name, detail } => {
            let inner = groups[name].words();
            if inner.len() > 1
                && !inner
                    .iter()
                    .any(|w| matches!(w.as_str(), "and" | "or" | "not" | "(" | ")"))
            {
                return;
            }
            check_detail(detail, &inner, groups);
        }
        TargetError::Empty(kind) => {
            assert!(
                tgt.trim().is_empty() || tgt_type == TargetType::List,
                "{msg}"
            );
            assert_eq!(*kind, tgt_type.as_str());
        }
        TargetError::UnknownNodegroup(name) => assert!(
            tgt.contains(name.as_str())
                || groups
                    .values()
                    .any(|d| d.words().iter().any(|w| w.contains(name.as_str()))),
            "{msg}"
        ),
        TargetError::NodegroupCycle(path) => {
            assert!(path.len() >= 2 && path.first() == path.last(), "{msg}")
        }
        TargetError::Unsupported(m) => assert!(m.contains("range"), "{msg}"),
        TargetError::NodegroupTooDeep { outer, inner, .. } => {
            assert!(
                groups.contains_key(outer) && groups.contains_key(inner),
                "{msg}"
            )
        }
        TargetError::NodegroupTooLarge { name, .. } => assert!(groups.contains_key(name), "{msg}"),
        // The pattern, address or expression named is the input or a part of it.
        TargetError::Glob { pattern, .. } => assert!(tgt.contains(pattern.as_str()), "{msg}"),
        TargetError::TooManyParts { expr, .. } => assert!(tgt.contains(expr.as_str()), "{msg}"),
        TargetError::Regex { pattern, .. } => {
            assert!(
                tgt.to_lowercase().contains(&pattern.to_lowercase()),
                "{msg}"
            )
        }
        TargetError::Ip(_) | TargetError::EmptyDelimiter | TargetError::UnknownType(_) => {}
    }
}

fn facts<'a>(id: &'a str, grains: &'a Value, pillar: &'a Value) -> MinionFacts<'a> {
    MinionFacts {
        id,
        grains: Some(grains),
        pillar: Some(pillar),
    }
}

/// Every way to read a string, each with and without nodegroups.
fn compile_any(tgt: &str, groups: &Nodegroups) {
    for tgt_type in TargetType::ALL {
        for delimiter in [None, Some(":"), Some("|"), Some("")] {
            match Target::compile(tgt, tgt_type, delimiter, groups) {
                Ok(t) => {
                    let grains = json!({"os": "Debian", "ipv4": ["10.0.0.1"]});
                    let f = facts("web1", &grains, &grains);
                    assert_eq!(t.matches(&f), t.matches(&f));
                    let _ = t.matches_greedy(&MinionFacts {
                        id: "x",
                        grains: None,
                        pillar: None,
                    });
                    let _ = t.listed_ids();
                    if let Some(expanded) = t.expanded_compound() {
                        assert!(
                            !expanded.split_whitespace().any(|w| w.starts_with("N@")),
                            "{expanded}"
                        );
                    }
                }
                Err(e) => check_error(tgt, tgt_type, &e, groups),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Properties.

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn arbitrary_strings_never_panic_and_errors_name_the_problem(tgt in any::<String>(), groups in nodegroups()) {
        compile_any(&tgt, &groups);
    }

    #[test]
    fn compound_noise_never_panics_and_errors_point_at_the_word(tgt in compound_noise(), groups in nodegroups()) {
        compile_any(&tgt, &groups);
    }

    #[test]
    fn target_type_names(name in "[a-z_]{0,12}") {
        match name.parse::<TargetType>() {
            Ok(t) => prop_assert!(name.is_empty() || t.as_str() == name),
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains(&format!("\"{name}\"")) || name == "range", "{}", msg);
            }
        }
    }

    #[test]
    fn compound_matches_as_its_words_combine(
        tree in ast(word().boxed()),
        id in id(),
        grains in data(),
        pillar in data(),
    ) {
        let groups = Nodegroups::new();
        let tgt = tree.words().join(" ");
        let target = Target::compile(&tgt, TargetType::Compound, None, &groups)
            .map_err(|e| TestCaseError::fail(format!("{tgt}: {e}")))?;
        let f = facts(&id, &grains, &pillar);
        let got = target.matches(&f);
        prop_assert_eq!(got, tree.eval(&f, &groups), "{}", tgt);
        // Deterministic, and the same for a clone.
        prop_assert_eq!(got, target.matches(&f));
        prop_assert_eq!(got, target.clone().matches(&f));
        // With all the data known, the master's check is the minion's.
        prop_assert_eq!(target.matches_greedy(&f), got, "{}", tgt);
        // Without the data, the master never leaves out a minion that would match.
        let unknown = MinionFacts { id: &id, grains: None, pillar: None };
        prop_assert!(!got || target.matches_greedy(&unknown), "{} excluded {}", tgt, id);
        // Printed back for minions, it is the same target.
        let printed = target.expanded_compound().expect("a compound prints back");
        let again = Target::compile(&printed, TargetType::Compound, None, &groups)
            .map_err(|e| TestCaseError::fail(format!("{printed}: {e}")))?;
        prop_assert_eq!(again.matches(&f), got, "{} printed as {}", tgt, printed);
    }

    #[test]
    fn implicit_and_before_not(a in word(), b in word(), id in id(), grains in data()) {
        let groups = Nodegroups::new();
        let f = facts(&id, &grains, &grains);
        let implicit = Target::compile(&format!("{a} not {b}"), TargetType::Compound, None, &groups).unwrap();
        let explicit = Target::compile(&format!("{a} and not {b}"), TargetType::Compound, None, &groups).unwrap();
        prop_assert_eq!(implicit.matches(&f), explicit.matches(&f));
    }

    #[test]
    fn nodegroups_expand_without_n_at_and_match_as_their_expansion(
        groups in nodegroups(),
        id in id(),
        grains in data(),
        pillar in data(),
    ) {
        let f = facts(&id, &grains, &pillar);
        let unknown = MinionFacts { id: &id, grains: None, pillar: None };
        for name in groups.keys() {
            let target = Target::compile(name, TargetType::Nodegroup, None, &groups)
                .map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
            let got = target.matches(&f);
            prop_assert!(!got || target.matches_greedy(&unknown));
            // What the master publishes to minions, which have no nodegroups.
            let expanded = target.expanded_compound().expect("a nodegroup expands");
            prop_assert!(!expanded.split_whitespace().any(|w| w.starts_with("N@")), "{}", expanded);
            let published = Target::compile(&expanded, TargetType::Compound, None, &Nodegroups::new())
                .map_err(|e| TestCaseError::fail(format!("{expanded}: {e}")))?;
            prop_assert_eq!(published.matches(&f), got, "{} as {}", name, expanded);
            // Salt's nodegroup_comp gives the same target.
            let words = nodegroup_comp(name, &groups).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(!words.iter().any(|w| w.starts_with("N@")), "{:?}", words);
            let comp = Target::compile(&words.join(" "), TargetType::Compound, None, &Nodegroups::new())
                .map_err(|e| TestCaseError::fail(format!("{words:?}: {e}")))?;
            prop_assert_eq!(comp.matches(&f), got, "{} as {:?}", name, words);
            // N@name inside a compound is the nodegroup in parentheses. The id as `L@id`: a
            // bare id can be an operator word (`or`), which a compound cannot hold.
            let inside = Target::compile(&format!("N@{name} and L@{id}"), TargetType::Compound, None, &groups)
                .map_err(|e| TestCaseError::fail(format!("N@{name}: {e}")))?;
            prop_assert_eq!(inside.matches(&f), got);
        }
    }

    #[test]
    fn a_literal_id_matches_itself(id in "[^*?\\[]{1,16}", other in id()) {
        prop_assume!(!id.trim().is_empty());
        let groups = Nodegroups::new();
        let none = json!({});
        for t in [TargetType::Glob, TargetType::List] {
            // A list target splits on commas and blanks: each piece is an id.
            if t == TargetType::List && id.contains(|c: char| c == ',' || c.is_whitespace()) {
                continue;
            }
            let target = Target::compile(&id, t, None, &groups).unwrap();
            prop_assert!(target.matches(&facts(&id, &none, &none)), "{:?} {}", id, t);
            prop_assert_eq!(target.matches(&facts(&other, &none, &none)), other == id);
        }
        let escaped = regex_escape(&id);
        let pcre = Target::compile(&escaped, TargetType::Pcre, None, &groups).unwrap();
        prop_assert!(pcre.matches(&facts(&id, &none, &none)), "{:?}", escaped);
    }

    #[test]
    fn list_targets_match_exactly_their_ids(ids in prop::collection::vec(id(), 1..6), other in id()) {
        let target = Target::list(ids.clone()).unwrap();
        let none = json!({});
        for i in &ids {
            prop_assert!(target.matches(&facts(i, &none, &none)));
        }
        prop_assert_eq!(target.matches(&facts(&other, &none, &none)), ids.contains(&other));
        prop_assert_eq!(target.listed_ids().len(), {
            let mut u = ids.clone();
            u.sort();
            u.dedup();
            u.len()
        });
    }

    #[test]
    fn grain_value_matches_its_own_glob(k in key(), v in "[a-z0-9._-]{1,8}", id in id()) {
        let grains = json!({ k.clone(): v.clone() });
        let none = json!({});
        let f = facts(&id, &grains, &none);
        let groups = Nodegroups::new();
        for (tgt, t) in [
            (format!("{k}:{v}"), TargetType::Grain),
            (format!("{k}:{}", regex_escape(&v)), TargetType::GrainPcre),
            (format!("G@{k}:{v}"), TargetType::Compound),
        ] {
            let target = Target::compile(&tgt, t, None, &groups).unwrap();
            prop_assert!(target.matches(&f), "{} {}", tgt, t);
            prop_assert!(!target.matches(&facts(&id, &none, &none)), "{} {}", tgt, t);
        }
    }

    #[test]
    fn ipcidr_networks_contain_their_addresses(addr in any::<u32>(), len in 0u32..=32) {
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        let net = format!("{}/{len}", std::net::Ipv4Addr::from(addr & mask));
        let target = Target::compile(&net, TargetType::Ipcidr, None, &Nodegroups::new()).unwrap();
        let grains = json!({"ipv4": [std::net::Ipv4Addr::from(addr).to_string()]});
        prop_assert!(target.matches(&facts("m", &grains, &grains)), "{}", net);
        // With host bits set, Python's strict ip_network refuses the network.
        if len < 32 && addr & !mask != 0 {
            let bad = format!("{}/{len}", std::net::Ipv4Addr::from(addr));
            let err = Target::compile(&bad, TargetType::Ipcidr, None, &Nodegroups::new()).unwrap_err();
            prop_assert!(err.to_string().contains(&bad));
        }
    }
}

/// `re.escape` for the characters that matter.
fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.^$|?*+()[]{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A chain of nodegroups each using the one before.
fn chain(len: usize) -> Nodegroups {
    let mut groups = Nodegroups::new();
    groups.insert("g0".into(), NodegroupDef::Expr("web*".into()));
    for n in 1..len {
        groups.insert(
            format!("g{n}"),
            NodegroupDef::Expr(format!("N@g{} or db{n}", n - 1)),
        );
    }
    groups
}

/// Regression (found by this file): 2000 nodegroups each using the one before overflowed the
/// stack while compiling (the process aborted). Nesting is now bounded: 100 levels compile,
/// deeper is refused naming the nodegroups, by the master's compile and by `nodegroup_comp`.
#[test]
fn regression_deep_nodegroup_chains_are_refused_not_a_stack_overflow() {
    let none = json!({});
    let groups = chain(100);
    let t = Target::compile("g99", TargetType::Nodegroup, None, &groups).expect("100 levels");
    assert!(t.matches(&facts("web1", &none, &none)));
    assert!(t.matches(&facts("db7", &none, &none)));
    assert!(!t.matches(&facts("mail", &none, &none)));
    let words = nodegroup_comp("g99", &groups).expect("100 levels");
    assert!(!words.iter().any(|w| w.starts_with("N@")));

    let groups = chain(2000);
    let err = Target::compile("g1999", TargetType::Nodegroup, None, &groups).unwrap_err();
    assert_eq!(
        err.to_string(),
        "nodegroup \"g1999\" nests nodegroups and parentheses deeper than 100 (at nodegroup \"g1899\")"
    );
    let err = Target::compile("web1 or N@g1999", TargetType::Compound, None, &groups).unwrap_err();
    assert!(
        err.to_string().starts_with("nodegroup \"g1999\" nests"),
        "{err}"
    );
    let err = nodegroup_comp("g1999", &groups).unwrap_err();
    assert!(err.to_string().contains("deeper than 100"), "{err}");
}

/// Regression (found by this file): nodegroups that each use the one before twice expand
/// exponentially with their depth; compiling the 40th never finished. The words all
/// nodegroups of one target expand to are now bounded, and the error names the nodegroup.
#[test]
fn regression_doubling_nodegroups_are_refused_not_a_hang() {
    let mut groups = Nodegroups::new();
    groups.insert("d0".into(), NodegroupDef::Expr("web* or db*".into()));
    for n in 1..40 {
        let prev = format!("N@d{}", n - 1);
        groups.insert(
            format!("d{n}"),
            NodegroupDef::Expr(format!("{prev} or {prev}")),
        );
    }
    let none = json!({});
    let t = Target::compile("d5", TargetType::Nodegroup, None, &groups).expect("64 words");
    assert!(t.matches(&facts("db1", &none, &none)));
    let err = Target::compile("d39", TargetType::Nodegroup, None, &groups).unwrap_err();
    assert_eq!(
        err.to_string(),
        "nodegroup \"d39\" expands to more than 50000 words"
    );
    let err = Target::compile("x and N@d39", TargetType::Compound, None, &groups).unwrap_err();
    assert_eq!(
        err.to_string(),
        "nodegroup \"d39\" expands to more than 50000 words"
    );
    let err = nodegroup_comp("d39", &groups).unwrap_err();
    assert_eq!(
        err.to_string(),
        "nodegroup \"d39\" expands to more than 50000 words"
    );
}
/// Regression (found while writing these tests): a grain key is retried as YAML reads it (Salt's
/// `traverse_dict_and_list`), and YAML aliases expanded by copying: a key of nine nested
/// aliases, nine each, meant 9^9 copies (minutes and gigabytes) for every minion matched.
#[test]
fn regression_alias_bomb_in_a_grain_key_is_cheap() {
    let mut levels = vec!["&a0 [x,x,x,x,x,x,x,x,x]".to_owned()];
    for n in 1..9 {
        let prev = format!("*a{}", n - 1);
        levels.push(format!("&a{n} [{}]", vec![prev; 9].join(",")));
    }
    let key = format!("[{}]", levels.join(","));
    let tgt = format!("{key}:x");
    let grains = json!({"os": "Debian"});
    let t = Target::compile(&tgt, TargetType::Grain, None, &Nodegroups::new()).unwrap();
    assert!(!t.matches(&facts("m1", &grains, &grains)));
    assert_eq!(saltq_semantics::python::yamlify(&key), json!(key));
}
