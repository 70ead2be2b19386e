//! The cases of issue #26 through the states' entry points (Jinja printing and filters,
//! `file.serialize`, the SLS YAML loader): each answer is what Salt 3007.8 gave for the same
//! input (`render_jinja_tmpl`, `salt-call --local state.single file.serialize`,
//! `salt.utils.yaml.safe_load`), now that every one goes through `saltq_semantics::python`.

use saltq_exec::CallContext;
use saltq_states::modules::{StateCall, lookup};
use saltq_states::render::{RenderContext, load_yaml, render_template};
use serde_json::{Map, Value, json};

fn render(text: &str) -> String {
    let opts = json!({"id": "minion1", "file_client": "local"});
    let rc = RenderContext {
        ctx: CallContext::local(json!({}), opts.clone()),
        grains: json!({}),
        pillar: json!({}),
        opts,
        saltenv: "base".into(),
        sls: String::new(),
        source: String::new(),
        extra: Map::new(),
    };
    render_template(text, "jinja", &rc).unwrap_or_else(|e| panic!("{text}: {}", e.message))
}

#[test]
fn jinja_prints_and_filters_as_salt() {
    // Salt 3007.8's `render_jinja_tmpl` of the same template, piece by piece.
    let cases = [
        (r"{{ '\x85' | python }}", r"'\x85'"),
        (r"{{ [0.00001, '\x85'] }}", r"[1e-05, '\x85']"),
        ("{{ 0.00001 }}", "1e-05"),
        ("{{ '%g' % 0.00001 }}", "1e-05"),
        ("{{ '%g' % 1.0 }}", "1"),
        ("{{ [0.00001, 1e16, 1.0] | tojson }}", "[1e-05, 1e+16, 1.0]"),
        (r"{{ '\x85<' | tojson }}", r#""\u0085\u003c""#),
        ("{{ [1] | tojson(indent=2) }}", "[\n  1\n]"),
        ("{{ 'aGVsbG8=extra' | base64_decode }}", "hello"),
    ];
    for (template, want) in cases {
        assert_eq!(render(template), want, "{template}");
    }
}

#[test]
fn sls_yaml_is_yaml_1_1_as_salt() {
    // salt.utils.yaml.safe_load("a: on\nb: 1:30\nc: 1e16\nd: 010\ne: !!float 1\nf: -010\ng: 1.5e+3\n")
    let got = load_yaml("a: on\nb: 1:30\nc: 1e16\nd: 010\ne: !!float 1\nf: -010\ng: 1.5e+3\n")
        .map_err(|e| e.message)
        .unwrap();
    assert_eq!(
        got,
        json!({"a": true, "b": 90, "c": "1e16", "d": 10, "e": 1.0, "f": -8, "g": 1500.0})
    );
}

#[tokio::test]
async fn file_serialize_json_writes_python_floats() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ser.json");
    let mut args = Map::new();
    args.insert(
        "dataset".into(),
        json!({"f": 1e-05, "s": "é\u{85}", "one": 1.0, "big": 1e16}),
    );
    args.insert("serializer".into(), json!("json"));
    let call = StateCall {
        ctx: CallContext::local(json!({}), json!({"id": "minion1"})),
        name: path.to_string_lossy().into_owned(),
        args,
        test: false,
        saltenv: "base".into(),
        sls: String::new(),
        id: "ser".into(),
        accumulators: Default::default(),
    };
    let ret = (lookup("file.serialize").unwrap().handler)(call)
        .await
        .unwrap();
    assert_eq!(ret.result, Some(true), "{}", ret.comment);
    // What `salt-call --local state.single file.serialize ... serializer=json` wrote.
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\n  \"big\": 1e+16,\n  \"f\": 1e-05,\n  \"one\": 1.0,\n  \"s\": \"é\u{85}\"\n}\n"
    );
    let _: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
}
