//! Issue #26 at salt-api's door: a form's `arg`s typed by Salt's `yamlify_arg` (YAML 1.1),
//! a `²x=1` string bound as a keyword by the real minion (Salt's `parse_kwarg`), and the JSON
//! answer spelled as Salt's `json.dumps` spells floats, all through `saltq_semantics::python`.

use serde_json::json;

use super::{Api, start};

/// Salt 3007.8: `yamlify_arg` gives `True`, `90`, `'²x=1'`, `1e-05` for these four words, and
/// the minion's `load_args_and_kwargs` takes `²x=1` as the keyword `²x` (`[^\d\W]`: `²` is
/// `\w`, not `\d`); `json.dumps(1e-05)` is `1e-05`.
#[test]
fn form_args_reach_the_minion_as_salts() {
    let (master, _m) = start();
    let api = Api::new(&master, true);
    let token = api.login("alice", "secret");
    let r = api.request(
        "POST",
        "/",
        &[("X-Auth-Token", token.as_str())],
        Some((
            "application/x-www-form-urlencoded",
            b"client=local&tgt=m1&fun=test.arg&arg=on&arg=1:30&arg=%C2%B2x%3D1&arg=0.00001",
        )),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let ret = &r.json()["return"][0]["m1"];
    assert_eq!(ret["args"], json!([true, 90, 1e-05]), "{}", r.body);
    assert_eq!(ret["kwargs"]["²x"], json!(1), "{}", r.body);
    assert!(r.body.contains("[true, 90, 1e-05]"), "{}", r.body);
}
