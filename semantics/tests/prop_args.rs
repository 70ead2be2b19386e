//! Property tests of the CLI's argument typing (issue #15): `k=v` splitting, YAML typing
//! (`yamlify`), `parse_input`/`condition_input` and multi-function splitting, on arbitrary
//! strings and on generated ones whose answer Salt's rules fix.
//!
//! CI runs a small number of cases; `PROPTEST_CASES=20000 cargo test -p saltq-semantics
//! --test prop_args` runs more (README.md, "Fuzzing").

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use saltq_semantics::args::{
    condition_input, parse_input, parse_input_with, parse_kwarg, split_multi_function,
};
use saltq_semantics::python::yamlify;
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

/// Text that looks like what people type: YAML punctuation, keywords, numbers, `=`.
fn cli_word() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            3 => "[a-zA-Z0-9 ._-]{1,4}",
            2 => prop::sample::select(vec![
                "=", "==", ",", ":", ": ", "[", "]", "{", "}", "'", "\"", "#", " #", "&a ", "*a",
                "!!str ", "!!int ", "yes", "No", "~", "null", "None", "0x1f", "0o7", "010", "1:30",
                "1_0", ".inf", "-.nan", "1e3", "1.5", "-", "? ", "|", ">", "---", "...", "\\",
                "\t", "\n", "é", "\u{0}",
            ])
            .prop_map(str::to_owned),
        ],
        0..8,
    )
    .prop_map(|p| p.concat())
}

/// Any string, or one that looks typed.
fn arg() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), cli_word()]
}

/// Nesting of a value, for the bound below.
fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn kwarg_split_is_the_text_around_the_first_equals(s in arg()) {
        if let Some((name, value)) = parse_kwarg(&s) {
            // `name=value`, or with one final newline (Python's `$`).
            prop_assert!(s == format!("{name}={value}") || s == format!("{name}={value}\n"), "{:?}", s);
            let first = name.chars().next().unwrap();
            prop_assert!(!first.is_ascii_digit() && (first.is_alphanumeric() || first == '_'), "{:?}", name);
            // Python's \w is narrower than Rust's `is_alphanumeric` (no marks), never wider.
            prop_assert!(name.chars().all(|c| c.is_alphanumeric() || "_.-".contains(c)), "{:?}", name);
            prop_assert!(!value.starts_with('=') && !value.contains('\n'), "{:?}", value);
        } else if let Some((name, value)) = s.split_once('=') {
            // Refused only when Salt's KWARG_REGEX refuses (Python's Unicode classes for
            // other names: see the recorded cases below).
            let ident = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
            let value = value.strip_suffix('\n').unwrap_or(value);
            prop_assert!(!ident || value.starts_with('=') || value.contains('\n'), "{:?} refused", s);
        }
    }

    #[test]
    fn identifiers_with_values_always_split(name in "[a-z_][a-z0-9_.-]{0,8}", value in "[^\n=][^\n]{0,10}|") {
        let arg = format!("{name}={value}");
        prop_assert_eq!(parse_kwarg(&arg), Some((name.as_str(), value.as_str())));
        let (pos, kw) = parse_input(std::slice::from_ref(&arg));
        prop_assert!(pos.is_empty());
        prop_assert_eq!(kw.get(&name), Some(&yamlify(&value)));
        let (_, kw) = parse_input_with(std::slice::from_ref(&arg), &[name.as_str()]);
        prop_assert_eq!(kw.get(&name), Some(&Value::String(value.clone())));
    }

    #[test]
    fn yamlify_never_panics_and_is_bounded(s in arg()) {
        let v = yamlify(&s);
        // One line of YAML: nesting stays within the loader's limit.
        prop_assert!(depth(&v) <= 64, "{:?}", s);
        // Whatever failed to load comes back as the text itself.
        if let Value::String(out) = &v {
            prop_assert!(out.chars().count() <= s.chars().count() + 1 || out == &s, "{:?} -> {:?}", s, out);
        }
        // Deterministic.
        prop_assert_eq!(yamlify(&s), v);
    }

    #[test]
    fn typed_scalars_round_trip(n in any::<i64>(), f in -1.0e15f64..1.0e15, b in any::<bool>(), word in "[a-z]{1,10}") {
        prop_assert_eq!(yamlify(&n.to_string()), json!(n));
        // A float written with its dot and digits reads back as that float.
        let text = format!("{f:?}");
        if text.contains('.') && !text.contains('e') {
            prop_assert_eq!(yamlify(&text), json!(f), "{}", text);
        }
        let (t, y) = if b { ("True", "yes") } else { ("False", "no") };
        prop_assert_eq!(yamlify(t), json!(b));
        prop_assert_eq!(yamlify(y), json!(b));
        // A plain word no YAML 1.1 resolver claims stays itself; quoted, it is that string.
        let keyword = ["yes", "no", "on", "off", "y", "n", "true", "false", "null", "none"]
            .contains(&word.as_str());
        if !keyword {
            prop_assert_eq!(yamlify(&word), json!(word));
        }
        prop_assert_eq!(yamlify(&format!("'{word}'")), json!(word));
        prop_assert_eq!(yamlify(&format!("\"{word}\"")), json!(word));
        // Lists and dicts in flow style read back as what they print.
        prop_assert_eq!(yamlify(&format!("[{n}, {word}x]")), json!([n, format!("{word}x")]));
        prop_assert_eq!(yamlify(&format!("{{k: {n}}}")), json!({"k": n}));
    }

    #[test]
    fn parse_input_keeps_every_argument(args in prop::collection::vec(arg(), 0..8)) {
        let (pos, kw) = parse_input(&args);
        let kwargs = args.iter().filter(|a| parse_kwarg(a).is_some()).count();
        prop_assert_eq!(pos.len(), args.len() - kwargs);
        // Repeated names keep the last value.
        prop_assert!(kw.len() <= kwargs);
        let n = pos.len();
        let has_kw = !kw.is_empty();
        let packed = condition_input(pos, kw);
        prop_assert_eq!(packed.len(), n + usize::from(has_kw));
        if has_kw {
            prop_assert_eq!(&packed[n]["__kwarg__"], &json!(true));
        }
    }

    #[test]
    fn multi_function_split_pairs_functions_and_groups(
        funs in prop::collection::vec("[a-z]{1,5}\\.[a-z]{1,5}", 1..4),
        args in prop::collection::vec(prop_oneof![arg(), Just(",".to_owned()), "[a-z]{0,3},[a-z]{0,3}"], 0..6),
        sep in prop_oneof![Just(",".to_owned()), any::<String>()],
    ) {
        let fun = funs.join(",");
        match split_multi_function(&fun, &args, &sep) {
            Ok((f, groups)) => {
                prop_assert_eq!(&f, &funs);
                prop_assert_eq!(f.len(), groups.len());
                if funs.len() == 1 {
                    prop_assert_eq!(&groups[0], &args);
                } else {
                    // Nothing but separators is dropped.
                    let kept: usize = groups.iter().map(Vec::len).sum();
                    prop_assert!(kept <= args.iter().map(|a| a.split(sep.as_str()).count()).sum::<usize>());
                }
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(funs.len() > 1, "{}", msg);
                prop_assert!(msg.contains(&fun) || sep.is_empty(), "{}", msg);
            }
        }
    }

    #[test]
    fn arbitrary_function_words_never_panic(fun in arg(), args in prop::collection::vec(arg(), 0..4), sep in arg()) {
        if let Err(e) = split_multi_function(&fun, &args, &sep) {
            let msg = e.to_string();
            prop_assert!(msg.contains(&fun) || sep.is_empty(), "{}", msg);
        }
    }
}

/// Python's `\d` and `\w` are Unicode-aware, and differ from Rust's on marks and connectors:
/// `parse_kwarg` must agree with Salt 3007.8, recorded with
/// `/work/saltvenv/bin/python -c "import salt.utils.args as a; print(a.parse_kwarg(S))"`.
/// (Found by the long run of `kwarg_split_is_the_text_around_the_first_equals`.)
#[test]
fn regression_kwarg_names_follow_pythons_unicode_classes() {
    let cases: &[(&str, Option<(&str, &str)>)] = &[
        ("\u{ed0}=1", None),  // LAO DIGIT ZERO: a decimal digit first
        ("e\u{301}=1", None), // a combining mark is not alphanumeric in Python
        ("a\u{301}=1", None),
        ("_=1", Some(("_", "1"))),
        ("\u{b2}=1", Some(("\u{b2}", "1"))), // SUPERSCRIPT TWO: numeric, not a decimal digit
        ("a\u{b2}=1", Some(("a\u{b2}", "1"))),
        ("x\u{203f}=1", None), // UNDERTIE: a connector, \w in Rust but not in Python
        ("\u{2160}=1", Some(("\u{2160}", "1"))), // ROMAN NUMERAL ONE
        ("a\u{200d}=1", None), // ZERO WIDTH JOINER
        ("\u{1c5}=1", Some(("\u{1c5}", "1"))),
    ];
    for (arg, want) in cases {
        assert_eq!(parse_kwarg(arg), *want, "{arg:?}");
    }
}
