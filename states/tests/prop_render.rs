//! Property tests of the state renderer (issue #15): arbitrary text, and text built from
//! Jinja's and Salt's syntax, through `render_sls` (`jinja|yaml`, and each shebang) and the
//! YAML 1.1 loader. Nothing panics, every render ends within a generous bound (a hang is a
//! defect), and an error says on which line of the file it is.
//!
//! CI runs a small number of cases; `PROPTEST_CASES=5000 cargo test -p saltq-states --test
//! prop_render` runs more (README.md, "Fuzzing").

use std::sync::OnceLock;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use saltq_exec::CallContext;
use saltq_states::render::{RenderContext, RenderError, load_yaml, render_sls};
use serde_json::{Map, json};

/// `default` cases, or `PROPTEST_CASES` when set (for longer runs).
fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        // A failing case may be a hang: shrink a little, not for an hour.
        max_shrink_iters: 64,
        ..ProptestConfig::default()
    }
}

/// The longest a render of these small files may take: far beyond any real one.
const RENDER_WITHIN: Duration = Duration::from_secs(20);

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Runtime::new().expect("runtime"))
}

/// Runs `f` on a blocking thread (where renders run), failing on a hang.
fn bounded<T: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, TestCaseError> {
    runtime().block_on(async {
        match tokio::time::timeout(RENDER_WITHIN, tokio::task::spawn_blocking(f)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(join)) => Err(TestCaseError::fail(format!("{what}: panicked: {join}"))),
            Err(_) => Err(TestCaseError::fail(format!(
                "{what}: no result within {RENDER_WITHIN:?}"
            ))),
        }
    })
}

fn context() -> RenderContext {
    let grains = json!({"os": "Debian", "id": "m1", "roles": ["web"], "num": 3});
    let pillar = json!({"users": {"a": 1}, "port": 80});
    let opts = json!({"id": "m1", "renderer": "jinja|yaml", "file_client": "local"});
    let ctx = CallContext::local(grains.clone(), opts.clone());
    *ctx.pillar.write().unwrap() = pillar.clone();
    RenderContext {
        ctx,
        grains,
        pillar,
        opts,
        saltenv: "base".into(),
        sls: "fuzz".into(),
        source: "fuzz.sls".into(),
        extra: Map::new(),
    }
}

/// An error must say where: a line within the file (or just past its end).
fn check_error(text: &str, err: &RenderError) -> Result<(), TestCaseError> {
    prop_assert!(
        !err.message.trim().is_empty(),
        "empty message for {:?}",
        text
    );
    let lines = text.split('\n').count();
    match err.line {
        Some(line) => prop_assert!(
            line >= 1 && line <= lines + 1,
            "line {} of {} in {:?}: {}",
            line,
            lines,
            text,
            err.message
        ),
        None => prop_assert!(false, "no line for {:?}: {}", text, err.message),
    }
    Ok(())
}

/// Pieces of Jinja and Salt's tags, joined at random: mostly invalid, sometimes not.
fn jinja_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            3 => prop::sample::select(vec![
                "{{ ", " }}", "{% ", " %}", "{#", "#}", "{%- ", " -%}", "{{- ", " -}}",
                "if ", "elif ", "else", "endif", "for ", " in ", "endfor", "set ", "endset", "do ",
                "macro m(a) ", "endmacro", "call ", "endcall", "raw", "endraw", "with ", "endwith",
                "break", "continue", "filter upper", "endfilter", "import_yaml ", "import_json ",
                "import_text ", "load_yaml as ", "endload", "load_json as ", "load_text as ",
                " as x", "from 'x.sls' import y", "include 'x.sls'", "import 'x' as z",
                "grains", "pillar", "opts", "salt", "grains['os']", "grains.get('os', 'x')",
                "pillar.get('users', {})", "x", "y", "loop.index", "range(3)", "range(100000)",
                "'%s' % x", "'%(a)s' % {'a': 1}", "'%d' % 'x'", "'%' % 1", "'{}'.format(1)",
                "|", "| yaml", "| json", "| default(1)", "| join(',')", "| length", "| sort",
                "| regex_replace('a','b')", "| yaml_encode", "| tojson", "| int", "| float",
                "| dictsort", "| unique", "| map('upper')", "| selectattr('x')", "| first",
                "| last", "| load_yaml", "| load_json", "| b64encode", "| sha256", "| to_bool",
                "| is_ip", "| quote", "| indent(2)", "| replace('a')", "|| ",
                "(", ")", "[", "]", "{", "}", ",", ":", "=", "==", "~", "+", "*", "**", "/", "//",
                " and ", " or ", " not ", " is defined", " is mapping", "None", "True", "1", "-1",
                "1e308", "'str'", "\"dq\"", "'unclosed", "\n", "\n  ", "- ", "key: ", "  - item\n",
                "#!jinja|yaml\n", "#!yaml\n", "#!json\n", "#!py\n", "#!jinja|json\n", "&a ", "*a",
                "<<: *a\n", "\t", "\\", "\u{0}", "é",
            ])
            .prop_map(str::to_owned),
            1 => "[a-z0-9 _.:'\"-]{1,6}",
        ],
        0..30,
    )
    .prop_map(|parts| parts.concat())
}

/// A YAML document: nested maps and lists, scalars of every YAML 1.1 type, anchors, aliases
/// and merge keys, in block or flow style.
fn yaml_text() -> impl Strategy<Value = String> {
    let scalar = prop::sample::select(vec![
        "a",
        "yes",
        "No",
        "~",
        "null",
        "0644",
        "-0644",
        "0x1F",
        "0b101",
        "1:30",
        "1_000",
        "1.5",
        "1e3",
        ".inf",
        "-.Inf",
        ".NaN",
        "2024-01-01",
        "'q'",
        "\"dq\\n\"",
        "!!str 1",
        "!!int x",
        "!!float 1",
        "!!bool yes",
        "!!null ''",
        "!!binary aGk=",
        "!!timestamp 2024-01-01",
        "!custom x",
        "|\n  block",
        ">\n  fold",
        "*undefined",
        "''",
        "\"\\x41\"",
        "\"\\U0001F600\"",
    ])
    .prop_map(str::to_owned);
    let node = scalar.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4)
                .prop_map(|items| format!("[{}]", items.join(", "))),
            prop::collection::vec(("[a-z<]{1,3}", inner.clone()), 0..4).prop_map(|kv| {
                let pairs: Vec<String> = kv.into_iter().map(|(k, v)| format!("{k}: {v}")).collect();
                format!("{{{}}}", pairs.join(", "))
            }),
            (0u8..3, inner.clone()).prop_map(|(n, v)| format!("&a{n} {v}")),
            (0u8..3).prop_map(|n| format!("*a{n}")),
        ]
    });
    prop::collection::vec(("[a-z]{1,4}", node, any::<bool>()), 0..5).prop_map(|entries| {
        entries
            .into_iter()
            .map(|(k, v, merge)| {
                if merge {
                    format!("<<: {v}\n")
                } else {
                    format!("{k}: {v}\n")
                }
            })
            .collect::<String>()
    })
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn yaml_loader_on_any_text(text in prop_oneof![any::<String>(), yaml_text()]) {
        let t = text.clone();
        if let Err(e) = bounded("load_yaml", move || load_yaml(&t))? {
            check_error(&text, &e)?;
        }
    }

    #[test]
    fn render_sls_on_any_text(text in prop_oneof![1 => any::<String>(), 3 => jinja_text(), 1 => yaml_text()]) {
        let t = text.clone();
        if let Err(e) = bounded("render_sls", move || render_sls(&t, &context()))? {
            check_error(&text, &e)?;
        }
    }
}

/// Regression (found while writing these tests): YAML aliases were expanded by copying, so
/// nine nested aliases of nine made 9^9 copies (the loader never finished). Salt's loader
/// shares the objects; the copies are now bounded and the document refused past that, with
/// the line of the alias that went over.
#[test]
fn regression_alias_bomb_is_refused() {
    let mut text = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n".to_owned();
    for n in 1..10 {
        let prev = format!("*a{}", n - 1);
        text.push_str(&format!("a{n}: &a{n} [{}]\n", vec![prev; 9].join(", ")));
    }
    let t = text.clone();
    let r = bounded("alias bomb", move || load_yaml(&t)).expect("bounded");
    let err = r.expect_err("refused");
    assert!(err.message.contains("alias"), "{}", err.message);
    assert!(err.line.is_some_and(|l| l > 1), "{err:?}");
    // Modest reuse of anchors still loads.
    let ok = load_yaml("base: &b {a: 1, b: [1, 2]}\nx: *b\ny: {<<: *b, c: 3}\n").expect("aliases");
    assert_eq!(ok["y"], json!({"a": 1, "b": [1, 2], "c": 3}));
}

/// Regression (found while writing these tests): block collections nest without a limit in
/// the scanner (`- - - ... x`), and the loader recursed per level: 50000 levels overflowed the
/// stack. Nesting far deeper than any state file is now refused with its line.
#[test]
fn regression_deep_nesting_is_refused_not_a_stack_overflow() {
    for text in [
        format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000)),
        format!("a: {}\n", "{b: ".repeat(20_000) + "1" + &"}".repeat(20_000)),
        format!("{}x\n", "- ".repeat(50_000)),
        format!("{}x\n", "? ".repeat(50_000)),
    ] {
        let t = text.clone();
        let r = bounded("deep yaml", move || load_yaml(&t)).expect("bounded");
        let e = r.expect_err("refused");
        assert!(e.line.is_some(), "{}", e.message);
    }
    let jinja = format!("x: {{{{ {}1{} }}}}\n", "(".repeat(5_000), ")".repeat(5_000));
    let r = bounded("deep jinja", move || render_sls(&jinja, &context())).expect("bounded");
    if let Err(e) = r {
        assert!(e.line.is_some(), "{}", e.message);
    }
}
