//! `service.*` states replayed against Salt 3007.8's answers (`data/service/cases.json`,
//! recorded by `data/service/gen.py` with Salt's real state functions over a fake service
//! manager). The same fake world is driven here through the states' `Backend`.

#[path = "support/mod.rs"]
mod common;

use std::sync::Mutex;

use saltq_states::modules::StateCall;
use saltq_states::modules::service::{Backend, BackendFuture, Exec, run_with};
use serde_json::{Map, Value, json};

/// The service manager of one case, as `gen.py`'s `fake_salt` models it.
struct World(Mutex<Value>);

impl World {
    fn get(&self, key: &str) -> Value {
        self.0.lock().map(|w| w[key].clone()).unwrap_or(Value::Null)
    }

    fn set(&self, key: &str, v: bool) {
        if let Ok(mut w) = self.0.lock() {
            w[key] = json!(v);
        }
    }

    fn op(&self, fun: &str) -> Result<Value, String> {
        if let Some(msg) = self.get("raise").get(fun) {
            return Err(msg.as_str().unwrap_or_default().to_owned());
        }
        let flag = |k: &str| self.get(k).as_bool().unwrap_or(false);
        let effect = |ok_key: &str, key: &str, to: bool| {
            let ok = flag(ok_key);
            if ok {
                self.set(key, to);
            }
            json!(ok)
        };
        Ok(match fun {
            "service.available" => self.get("available"),
            "service.status" => self.get("running"),
            "service.enabled" => self.get("enabled"),
            "service.disabled" => json!(!flag("enabled")),
            "service.start" => effect("start", "running", true),
            "service.stop" => effect("stop", "running", false),
            "service.restart" => effect("restart", "running", true),
            "service.reload" => self.get("reload"),
            "service.enable" => effect("enable", "enabled", true),
            "service.disable" => effect("disable", "enabled", false),
            "service.get_all" | "service.get_running" => json!([]),
            other => return Err(format!("'{other}' is not available.")),
        })
    }
}

const FUNS: &[&str] = &[
    "service.available",
    "service.status",
    "service.enabled",
    "service.disabled",
    "service.start",
    "service.stop",
    "service.restart",
    "service.reload",
    "service.enable",
    "service.disable",
    "service.get_all",
    "service.get_running",
];

impl Backend for World {
    fn has(&self, fun: &str) -> bool {
        FUNS.contains(&fun)
    }
    fn call<'a>(
        &'a self,
        fun: &'a str,
        _args: Vec<Value>,
        _kw: Map<String, Value>,
    ) -> BackendFuture<'a> {
        let out = self.op(fun);
        Box::pin(async move { out })
    }
    fn booted(&self) -> bool {
        true
    }
    fn offline(&self) -> bool {
        false
    }
    fn params(&self, _fun: &str) -> Vec<&'static str> {
        Vec::new()
    }
}

fn state(name: &str, args: &Value, test: bool) -> StateCall {
    StateCall {
        ctx: common::ctx(),
        name: name.into(),
        args: args.as_object().cloned().unwrap_or_default(),
        test,
        saltenv: "base".into(),
        sls: "cases".into(),
        id: name.into(),
        accumulators: Default::default(),
    }
}

#[tokio::test]
async fn service_states_match_salt() {
    let cases = common::cases("service");
    let mut failures = Vec::new();
    for case in &cases {
        let world = World(Mutex::new(case["world"].clone()));
        let fun = case["fun"].as_str().unwrap_or_default();
        let test = case["test"].as_bool().unwrap_or(false);
        let ret = run_with(&world, fun, &state("web", &case["args"], test))
            .await
            .unwrap_or_else(|e| panic!("{fun}: {e}"));
        let got = common::as_salt(&ret);
        if got != case["ret"] {
            failures.push(format!(
                "{} (test={test}):\n  salt:  {}\n  saltq: {got}",
                case["id"], case["ret"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(cases.len() >= 80);
}

/// On a machine with `systemctl` but no systemd running (this one, and Salt's recording),
/// `running` and `dead` answer Salt's OFFLINE mode; elsewhere the check is skipped.
#[tokio::test]
async fn offline_mode_matches_salt() {
    let exec = Exec(common::ctx());
    if !exec.offline() {
        eprintln!("skipped: systemd runs here, or systemctl is missing (not Salt's offline mode)");
        return;
    }
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/service/offline.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cases: Vec<Value> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cases.len(), 4);
    for case in cases {
        let fun = case["fun"].as_str().unwrap_or_default();
        let test = case["test"].as_bool().unwrap_or(false);
        let name = case["name"].as_str().unwrap_or_default();
        let ret = run_with(&exec, fun, &state(name, &json!({}), test))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(common::as_salt(&ret), case["ret"], "{fun} test={test}");
    }
}

/// Removes the recorded init script, its links and its marker, whatever the test did.
struct InitScript(String);

impl Drop for InitScript {
    fn drop(&mut self) {
        let _ = std::process::Command::new("update-rc.d")
            .args(["-f", &self.0, "remove"])
            .output();
        let _ = std::fs::remove_file(format!("/etc/init.d/{}", self.0));
        let _ = std::fs::remove_file(format!("/run/{}.running", self.0));
    }
}

/// On Debian without a running systemd (this machine, and where `data/service/gen_sysv.py`
/// recorded Salt), the execution functions drive a real System V init script and the
/// states answer as Salt's `debian_service` makes them: each step of `sysv.json` replayed
/// on the same script, linked with the real `update-rc.d`.
#[tokio::test]
async fn sysv_services_match_salt() {
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let sysv = std::path::Path::new("/etc/debian_version").is_file()
        && !std::path::Path::new("/run/systemd/system").is_dir()
        && std::path::Path::new("/usr/sbin/update-rc.d").is_file();
    if !root || !sysv {
        eprintln!("skipped: needs root on Debian without a running systemd, with update-rc.d");
        return;
    }
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/service/sysv.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rec: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let name = rec["name"].as_str().unwrap_or_default().to_owned();
    let script = rec["script"]
        .as_str()
        .unwrap_or_default()
        .replace("{name}", &name);
    let _guard = InitScript(name.clone());
    let file = format!("/etc/init.d/{name}");
    std::fs::write(&file, script).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mode = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
    std::fs::set_permissions(&file, mode).unwrap_or_else(|e| panic!("{file}: {e}"));
    let linked = std::process::Command::new("update-rc.d")
        .args([&name, "defaults"])
        .output()
        .unwrap_or_else(|e| panic!("update-rc.d: {e}"));
    assert!(linked.status.success(), "{linked:?}");

    let ctx = common::ctx();
    let mut failures = Vec::new();
    let steps = rec["steps"].as_array().cloned().unwrap_or_default();
    for step in &steps {
        let id = step["id"].as_str().unwrap_or_default();
        let fun = step["fun"].as_str().unwrap_or_default();
        let test = step["test"].as_bool().unwrap_or(false);
        let got = match step["kind"].as_str() {
            Some("exec") => {
                let args = step["args"].as_array().cloned().unwrap_or_default();
                saltq_exec::call_direct(&ctx, fun, args, Map::new())
                    .await
                    .unwrap_or_else(|e| json!(format!("{e:?}")))
            }
            Some("state") => {
                common::as_salt(&common::run_state(&ctx, fun, id, &step["args"], test).await)
            }
            // The watching state of an SLS: what the runner calls, `service.mod_watch`
            // with the state's arguments and `sfun`.
            _ => {
                let args = &step["args"][id][fun];
                let mut args = args.as_array().cloned().unwrap_or_default();
                args.retain(|a| a.get("watch").is_none());
                args.push(json!({"sfun": "running"}));
                common::as_salt(
                    &common::run_state(&ctx, "service.mod_watch", id, &json!(args), test).await,
                )
            }
        };
        if got != step["ret"] {
            failures.push(format!(
                "{id} (test={test}):\n  salt:  {}\n  saltq: {got}",
                step["ret"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(steps.len(), 23);
}
