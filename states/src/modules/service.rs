//! Salt's `service` state module (`salt/states/service.py`): `service.running`,
//! `service.dead`, `service.enabled`, `service.disabled` and `service.mod_watch` (restart,
//! reload or start on a watch), with Salt's comments and changes.
//!
//! The states reach the service manager through a [`Backend`]: on a minion, [`Exec`] calls
//! the execution functions `service.*` (`__salt__` in Salt); tests drive a fake one. Not
//! done: `service.masked`/`unmasked` (the execution module has no `service.mask`; `unmask`
//! answers Salt's "Service masking not available on this minion"), Windows and macOS
//! special cases.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::Duration;

use serde_json::{Map, Value, json};

use saltq_exec::{CallContext, DirectError, ExecError, Lit, Param, call_direct, lookup};
use saltq_semantics::python::{self, is_true, truthy};

use super::{Ret, StateCall, StateError, StateFunction, state_handler};

/// The future a [`Backend`] call answers with: the function's return, or its error text
/// (Salt's `CommandExecutionError.strerror`).
pub type BackendFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, String>> + Send + 'a>>;

/// The execution functions a state module uses (`__salt__`).
pub trait Backend: Send + Sync {
    /// Whether the execution function exists (`fun in __salt__`).
    fn has(&self, fun: &str) -> bool;
    /// Calls the execution function.
    fn call<'a>(
        &'a self,
        fun: &'a str,
        args: Vec<Value>,
        kwargs: Map<String, Value>,
    ) -> BackendFuture<'a>;
    /// Whether systemd runs (Salt's `salt.utils.systemd.booted`).
    fn booted(&self) -> bool;
    /// Whether systemd is installed but not running (Salt's `service.offline`).
    fn offline(&self) -> bool;
    /// The parameter names of an execution function (Salt's argspec `args`).
    fn params(&self, fun: &str) -> Vec<&'static str>;
}

/// The minion's own execution functions.
#[derive(Debug, Clone)]
pub struct Exec(pub CallContext);

/// The text Salt's state modules give for an execution function's error.
pub(crate) fn error_text(e: DirectError, fun: &str) -> String {
    match e {
        DirectError::Missing => format!("'{fun}' is not available."),
        DirectError::Failed(ExecError::Exception { msg, .. }) => msg,
        DirectError::Failed(other) => other.to_string(),
    }
}

impl Backend for Exec {
    fn has(&self, fun: &str) -> bool {
        lookup(fun).is_some()
    }

    fn call<'a>(
        &'a self,
        fun: &'a str,
        args: Vec<Value>,
        kwargs: Map<String, Value>,
    ) -> BackendFuture<'a> {
        Box::pin(async move {
            call_direct(&self.0, fun, args, kwargs)
                .await
                .map_err(|e| error_text(e, fun))
        })
    }

    fn booted(&self) -> bool {
        Path::new("/run/systemd/system").is_dir()
    }

    fn offline(&self) -> bool {
        !self.booted()
            && std::env::var_os("PATH").is_some_and(|paths| {
                std::env::split_paths(&paths).any(|d| d.join("systemctl").is_file())
            })
    }

    fn params(&self, fun: &str) -> Vec<&'static str> {
        lookup(fun).map_or_else(Vec::new, |f| f.params.iter().map(|p| p.name).collect())
    }
}

const PARAMS: &[Param] = &[
    Param::req("name"),
    Param::opt("enable", Lit::None),
    Param::opt("sig", Lit::None),
    Param::opt("init_delay", Lit::None),
];

/// The `service` state module's functions.
pub const FUNCTIONS: &[StateFunction] = &[
    StateFunction {
        name: "service.running",
        params: PARAMS,
        kwargs: true,
        handler: state_handler!(entry_running),
    },
    StateFunction {
        name: "service.dead",
        params: PARAMS,
        kwargs: true,
        handler: state_handler!(entry_dead),
    },
    StateFunction {
        name: "service.enabled",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(entry_enabled),
    },
    StateFunction {
        name: "service.disabled",
        params: &[Param::req("name")],
        kwargs: true,
        handler: state_handler!(entry_disabled),
    },
    StateFunction {
        name: "service.mod_watch",
        params: &[
            Param::req("name"),
            Param::opt("sfun", Lit::None),
            Param::opt("sig", Lit::None),
            Param::opt("reload", Lit::Bool(false)),
            Param::opt("full_restart", Lit::Bool(false)),
            Param::opt("init_delay", Lit::None),
            Param::opt("force", Lit::Bool(false)),
        ],
        kwargs: true,
        handler: state_handler!(entry_mod_watch),
    },
];

async fn entry_running(call: StateCall) -> Result<Ret, StateError> {
    let b = Exec(call.ctx.clone());
    run_with(&b, "service.running", &call).await
}

async fn entry_dead(call: StateCall) -> Result<Ret, StateError> {
    let b = Exec(call.ctx.clone());
    run_with(&b, "service.dead", &call).await
}

async fn entry_enabled(call: StateCall) -> Result<Ret, StateError> {
    let b = Exec(call.ctx.clone());
    run_with(&b, "service.enabled", &call).await
}

async fn entry_disabled(call: StateCall) -> Result<Ret, StateError> {
    let b = Exec(call.ctx.clone());
    run_with(&b, "service.disabled", &call).await
}

async fn entry_mod_watch(call: StateCall) -> Result<Ret, StateError> {
    let b = Exec(call.ctx.clone());
    run_with(&b, "service.mod_watch", &call).await
}

/// Runs the state function `fun` (`service.running`, ...) against this backend.
pub async fn run_with(b: &dyn Backend, fun: &str, call: &StateCall) -> Result<Ret, StateError> {
    let s = Svc {
        b,
        name: call.name.clone(),
        test: call.test,
        kwargs: call
            .args
            .iter()
            .filter(|(k, _)| !PARAMS.iter().any(|p| p.name == k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    };
    Ok(match fun {
        "service.running" => s.running(call).await,
        "service.dead" => s.dead(call).await,
        "service.enabled" => s.enabled().await,
        "service.disabled" => s.disabled().await,
        "service.mod_watch" => s.mod_watch(call).await,
        other => return Err(StateError(format!("no state function {other}"))),
    })
}

/// What `_enable`/`_disable` answer: the keys they set, to update the state's return with.
#[derive(Debug, Default)]
struct Partial {
    result: Option<Option<bool>>,
    comment: Option<String>,
    changes: Option<Map<String, Value>>,
}

impl Partial {
    fn apply(self, ret: &mut Ret) {
        if let Some(r) = self.result {
            ret.result = r;
        }
        if let Some(c) = self.comment {
            ret.comment = c;
        }
        if let Some(c) = self.changes {
            ret.changes = c;
        }
    }

    fn failed(comment: String) -> Self {
        Self {
            result: Some(Some(false)),
            comment: Some(comment),
            changes: None,
        }
    }
}

/// `started` as Salt's `_enable` takes it: `Some(true)` running, `None` in the desired state,
/// `Some(false)` dead.
type Started = Option<bool>;

struct Svc<'a> {
    b: &'a dyn Backend,
    name: String,
    test: bool,
    /// The state's other keyword arguments, passed on to `service.enable` and friends.
    kwargs: Map<String, Value>,
}

const SYSTEMD_ONLY: &[&str] = &["no_block", "unmask", "unmask_runtime"];

impl Svc<'_> {
    async fn call(&self, fun: &str, args: Vec<Value>) -> Result<Value, String> {
        self.b.call(fun, args, Map::new()).await
    }

    async fn call_kw(
        &self,
        fun: &str,
        args: Vec<Value>,
        kwargs: Map<String, Value>,
    ) -> Result<Value, String> {
        self.b.call(fun, args, kwargs).await
    }

    /// Salt's `_get_systemd_only`: the systemd-only arguments `fun` takes, or warnings
    /// where systemd does not run.
    fn systemd_only(&self, fun: &str) -> (Map<String, Value>, Vec<String>) {
        let params = self.b.params(fun);
        let mut out = Map::new();
        let mut warnings = Vec::new();
        for arg in SYSTEMD_ONLY {
            if let Some(v) = self.kwargs.get(*arg)
                && params.contains(arg)
            {
                if self.b.booted() {
                    out.insert((*arg).to_owned(), v.clone());
                } else {
                    warnings.push(format!(
                        "The '{arg}' argument is not supported by this platform"
                    ));
                }
            }
        }
        (out, warnings)
    }

    fn add_warnings(ret: &mut Ret, warnings: Vec<String>) {
        if warnings.is_empty() {
            return;
        }
        let entry = ret
            .extra
            .entry("warnings")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = entry {
            for w in warnings {
                let w = Value::String(w);
                if !list.contains(&w) {
                    list.push(w);
                }
            }
        }
    }

    /// Salt's `_available`: `Ok(false)` with the "not available" comment set.
    async fn available(&self, ret: &mut Ret) -> Result<bool, String> {
        let avail = if self.b.has("service.available") {
            truthy(
                &self
                    .call("service.available", vec![json!(self.name)])
                    .await?,
            )
        } else if self.b.has("service.get_all") {
            let all = self.call("service.get_all", vec![]).await?;
            all.as_array()
                .is_some_and(|a| a.iter().any(|n| n.as_str() == Some(&self.name)))
        } else {
            false
        };
        if !avail {
            ret.result = Some(false);
            ret.comment = format!("The named service {} is not available", self.name);
        }
        Ok(avail)
    }

    async fn status(&self, sig: &Value, kwargs: Map<String, Value>) -> Result<bool, String> {
        self.call_kw(
            "service.status",
            vec![json!(self.name), sig.clone()],
            kwargs,
        )
        .await
        .map(|v| truthy(&v))
    }

    async fn is_enabled(&self) -> Result<bool, String> {
        if self.b.has("service.enabled") {
            self.call("service.enabled", vec![json!(self.name)])
                .await
                .map(|v| truthy(&v))
        } else {
            Ok(true)
        }
    }

    /// Salt's `_enable`.
    async fn enable(&self, started: Started, result: bool) -> Partial {
        let name = &self.name;
        let mut probe = Ret::new(name.clone());
        match self.available(&mut probe).await {
            Ok(true) => {}
            Ok(false) => {
                return Partial {
                    result: Some(probe.result),
                    comment: Some(probe.comment),
                    changes: None,
                };
            }
            Err(e) => return Partial::failed(e),
        }
        let mut p = Partial {
            result: Some(Some(result)),
            ..Partial::default()
        };
        if !self.b.has("service.enable") || !self.b.has("service.enabled") {
            p.comment = Some(match started {
                Some(true) => {
                    format!("Enable is not available on this minion, service {name} started")
                }
                None => format!(
                    "Enable is not available on this minion, service {name} is in the desired state"
                ),
                Some(false) => {
                    format!("Enable is not available on this minion, service {name} is dead")
                }
            });
            return p;
        }
        let args = || vec![json!(name)];
        let before = match self
            .call_kw("service.enabled", args(), self.kwargs.clone())
            .await
        {
            Ok(v) => truthy(&v),
            Err(e) => return Partial::failed(e),
        };
        if before {
            p.comment = Some(match started {
                Some(true) => format!("Service {name} is already enabled, and is running"),
                None => {
                    p.changes = Some(Map::new());
                    format!("Service {name} is already enabled, and is in the desired state")
                }
                Some(false) => format!("Service {name} is already enabled, and is dead"),
            });
            return p;
        }
        if self.test {
            p.result = Some(None);
            p.comment = Some(format!("Service {name} set to be enabled"));
            return p;
        }
        let enable_error = match self
            .call_kw("service.enable", args(), self.kwargs.clone())
            .await
        {
            Ok(v) if truthy(&v) => {
                let mut changes = Map::new();
                let after = self
                    .call_kw("service.enabled", args(), self.kwargs.clone())
                    .await
                    .map(|v| truthy(&v))
                    .unwrap_or(before);
                if before != after {
                    changes.insert(name.clone(), json!(true));
                }
                p.changes = Some(changes);
                p.comment = Some(match started {
                    Some(true) => format!("Service {name} has been enabled, and is running"),
                    None => {
                        format!("Service {name} has been enabled, and is in the desired state")
                    }
                    Some(false) => format!("Service {name} has been enabled, and is dead"),
                });
                return p;
            }
            Ok(_) => None,
            Err(e) => Some(e),
        };
        p.result = Some(Some(false));
        let mut comment = match started {
            Some(true) => format!(
                "Failed when setting service {name} to start at boot, but the service is running"
            ),
            None => format!(
                "Failed when setting service {name} to start at boot, but the service was already running"
            ),
            Some(false) => format!(
                "Failed when setting service {name} to start at boot, and the service is dead"
            ),
        };
        if let Some(e) = enable_error.filter(|e| !e.is_empty()) {
            comment.push_str(&format!(". Additional information follows:\n\n{e}"));
        }
        p.comment = Some(comment);
        p
    }

    /// Salt's `_disable`.
    async fn disable(&self, started: Started, result: bool) -> Partial {
        let name = &self.name;
        let mut probe = Ret::new(name.clone());
        match self.available(&mut probe).await {
            Ok(true) => {}
            Ok(false) => {
                return Partial {
                    result: Some(Some(true)),
                    comment: Some(probe.comment),
                    changes: None,
                };
            }
            Err(e) => return Partial::failed(e),
        }
        let mut p = Partial {
            result: Some(Some(result)),
            ..Partial::default()
        };
        if !self.b.has("service.disable") || !self.b.has("service.disabled") {
            p.comment = Some(match started {
                Some(true) => {
                    format!("Disable is not available on this minion, service {name} started")
                }
                None => format!(
                    "Disable is not available on this minion, service {name} is in the desired state"
                ),
                Some(false) => {
                    format!("Disable is not available on this minion, service {name} is dead")
                }
            });
            return p;
        }
        let before = match self.call("service.disabled", vec![json!(name)]).await {
            Ok(v) => truthy(&v),
            Err(e) => return Partial::failed(e),
        };
        if before {
            p.comment = Some(match started {
                Some(true) => format!("Service {name} is already disabled, and is running"),
                None => {
                    p.changes = Some(Map::new());
                    format!("Service {name} is already disabled, and is in the desired state")
                }
                Some(false) => format!("Service {name} is already disabled, and is dead"),
            });
            return p;
        }
        if self.test {
            p.result = Some(None);
            p.comment = Some(format!("Service {name} set to be disabled"));
            return p;
        }
        let done = match self
            .call_kw("service.disable", vec![json!(name)], self.kwargs.clone())
            .await
        {
            Ok(v) => truthy(&v),
            Err(e) => return Partial::failed(e),
        };
        if done {
            let mut changes = Map::new();
            let after = self
                .call("service.disabled", vec![json!(name)])
                .await
                .map(|v| truthy(&v))
                .unwrap_or(before);
            if before != after {
                changes.insert(name.clone(), json!(true));
            }
            p.changes = Some(changes);
            p.comment = Some(match started {
                Some(true) => format!("Service {name} has been disabled, and is running"),
                None => format!("Service {name} has been disabled, and is in the desired state"),
                Some(false) => format!("Service {name} has been disabled, and is dead"),
            });
            return p;
        }
        p.result = Some(Some(false));
        p.comment = Some(match started {
            Some(true) => {
                format!("Failed when setting service {name} to not start at boot, and is running")
            }
            None => format!(
                "Failed when setting service {name} to not start at boot, but the service was already running"
            ),
            Some(false) => format!(
                "Failed when setting service {name} to not start at boot, and the service is dead"
            ),
        });
        p
    }

    /// `enable` as the state got it: a string is read with Salt's `is_true`.
    fn enable_arg(call: &StateCall) -> Option<bool> {
        // Salt compares `enable is True` / `enable is False`: other values do nothing.
        match call.arg("enable") {
            Some(Value::String(s)) => Some(is_true(&json!(s))),
            Some(Value::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    fn enabled_used_error(&self, ret: &mut Ret) {
        ret.result = Some(false);
        ret.comment = format!(
            "Service {} uses non-existent option \"enabled\".  Perhaps \"enable\" option was intended?",
            self.name
        );
    }

    fn unmask_comment(&self) -> String {
        if self.kwargs.get("unmask").is_some_and(truthy) && !self.b.has("service.masked") {
            "Service masking not available on this minion".to_owned()
        } else {
            String::new()
        }
    }

    async fn running(&self, call: &StateCall) -> Ret {
        let name = &self.name;
        let mut ret = Ret::new(name.clone());
        if self.kwargs.contains_key("enabled") {
            self.enabled_used_error(&mut ret);
            return ret;
        }
        let enable = Self::enable_arg(call);
        let sig = call.arg("sig").cloned().unwrap_or(Value::Null);
        let init_delay = call.arg("init_delay").cloned();
        if self.b.offline() {
            ret.comment = "Running in OFFLINE mode. Nothing to do".into();
            return ret;
        }
        match self.available(&mut ret).await {
            Ok(true) => {}
            Ok(false) => {
                if self.test {
                    ret.result = None;
                    ret.comment = format!(
                        "Service {name} not present; if created in this state run, it would have been started"
                    );
                }
                return ret;
            }
            Err(e) => {
                ret.result = Some(false);
                ret.comment = e;
                return ret;
            }
        }
        let (status_kwargs, warnings) = self.systemd_only("service.status");
        Self::add_warnings(&mut ret, warnings);
        let before = match self.status(&sig, status_kwargs.clone()).await {
            Ok(s) => s,
            Err(e) => return failed(ret, e),
        };
        let before_enabled = match self.is_enabled().await {
            Ok(s) => s,
            Err(e) => return failed(ret, e),
        };
        let unmask = self.unmask_comment();
        let join = |parts: &[&str]| {
            parts
                .iter()
                .filter(|p| !p.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join("\n")
        };
        if before {
            ret.comment = join(&[&format!("The service {name} is already running"), &unmask]);
            if enable == Some(true) && !before_enabled {
                self.enable(None, true).await.apply(&mut ret);
            } else if enable == Some(false) && before_enabled {
                self.disable(None, true).await.apply(&mut ret);
            }
            return ret;
        }
        if self.test {
            ret.result = None;
            ret.comment = join(&[&format!("Service {name} is set to start"), &unmask]);
            return ret;
        }
        let (start_kwargs, warnings) = self.systemd_only("service.start");
        Self::add_warnings(&mut ret, warnings);
        let started = match self
            .call_kw("service.start", vec![json!(name)], start_kwargs)
            .await
        {
            Ok(v) => truthy(&v),
            Err(e) => return failed(ret, e),
        };
        if !started {
            ret.result = Some(false);
            ret.comment = format!("Service {name} failed to start");
            if enable == Some(true) {
                self.enable(Some(false), false).await.apply(&mut ret);
            } else if enable == Some(false) {
                self.disable(Some(false), false).await.apply(&mut ret);
            }
            return ret;
        }
        let delay = delay(init_delay.as_ref()).await;
        let after = self.status(&sig, status_kwargs).await.unwrap_or(false);
        let after_enabled = self.is_enabled().await.unwrap_or(before_enabled);
        if (before_enabled != after_enabled || before != after) && ret.changes.is_empty() {
            ret.changes.insert(name.clone(), json!(after));
        }
        if after {
            ret.comment = format!("Started service {name}");
        } else {
            ret.comment = format!("Service {name} failed to start");
            ret.result = Some(false);
        }
        if enable == Some(true) {
            self.enable(Some(after), after).await.apply(&mut ret);
        } else if enable == Some(false) {
            self.disable(Some(after), after).await.apply(&mut ret);
        }
        if let Some(d) = delay {
            ret.comment = format!("{}\nDelayed return for {d} seconds", ret.comment);
        }
        if self.kwargs.get("unmask").is_some_and(truthy) {
            ret.comment = format!("{}\n{unmask}", ret.comment);
        }
        ret
    }

    async fn dead(&self, call: &StateCall) -> Ret {
        let name = &self.name;
        let mut ret = Ret::new(name.clone());
        if self.kwargs.contains_key("enabled") {
            self.enabled_used_error(&mut ret);
            return ret;
        }
        let enable = Self::enable_arg(call);
        let sig = call.arg("sig").cloned().unwrap_or(Value::Null);
        if self.b.offline() {
            ret.comment = "Running in OFFLINE mode. Nothing to do".into();
            return ret;
        }
        match self.available(&mut ret).await {
            Ok(true) => {}
            Ok(false) => {
                if self.test {
                    ret.result = None;
                    ret.comment = format!(
                        "Service {name} not present; if created in this state run, it would have been stopped"
                    );
                } else {
                    ret.result = Some(true);
                }
                return ret;
            }
            Err(e) => return failed(ret, e),
        }
        let (status_kwargs, warnings) = self.systemd_only("service.status");
        Self::add_warnings(&mut ret, warnings);
        let before = match self.status(&sig, status_kwargs.clone()).await {
            Ok(s) => s,
            Err(e) => return failed(ret, e),
        };
        let before_enabled = match self.is_enabled().await {
            Ok(s) => s,
            Err(e) => return failed(ret, e),
        };
        if !before {
            ret.comment = format!("The service {name} is already dead");
            if enable == Some(true) && !before_enabled {
                self.enable(None, true).await.apply(&mut ret);
            } else if enable == Some(false) && before_enabled {
                self.disable(None, true).await.apply(&mut ret);
            }
            return ret;
        }
        if self.test {
            ret.result = None;
            ret.comment = format!("Service {name} is set to be killed");
            return ret;
        }
        let (stop_kwargs, warnings) = self.systemd_only("service.stop");
        Self::add_warnings(&mut ret, warnings);
        let stopped = match self
            .call_kw("service.stop", vec![json!(name)], stop_kwargs)
            .await
        {
            Ok(v) => truthy(&v),
            Err(e) => return failed(ret, e),
        };
        if !stopped {
            ret.result = Some(false);
            ret.comment = format!("Service {name} failed to die");
            if enable == Some(true) {
                self.enable(Some(true), false).await.apply(&mut ret);
            } else if enable == Some(false) {
                self.disable(Some(true), false).await.apply(&mut ret);
            }
            return ret;
        }
        delay(call.arg("init_delay")).await;
        // Salt asks the status again without `sig`.
        let after = self
            .status(&Value::Null, status_kwargs)
            .await
            .unwrap_or(true);
        let after_enabled = self.is_enabled().await.unwrap_or(before_enabled);
        if (before_enabled != after_enabled || before != after) && ret.changes.is_empty() {
            ret.changes.insert(name.clone(), json!(after));
        }
        if after {
            ret.result = Some(false);
            ret.comment = format!("Service {name} failed to die");
        } else {
            ret.comment = format!("Service {name} was killed");
        }
        if enable == Some(true) {
            self.enable(Some(after), !after).await.apply(&mut ret);
        } else if enable == Some(false) {
            self.disable(Some(after), !after).await.apply(&mut ret);
        }
        ret
    }

    async fn enabled(&self) -> Ret {
        let mut ret = Ret::new(self.name.clone());
        self.enable(None, true).await.apply(&mut ret);
        if self.test && ret.comment == format!("The named service {} is not available", self.name) {
            ret.result = None;
            ret.comment = format!(
                "Service {} not present; if created in this state run, it would have been enabled",
                self.name
            );
        }
        ret
    }

    async fn disabled(&self) -> Ret {
        let mut ret = Ret::new(self.name.clone());
        self.disable(None, true).await.apply(&mut ret);
        ret
    }

    async fn mod_watch(&self, call: &StateCall) -> Ret {
        let name = &self.name;
        let mut ret = Ret::new(name.clone());
        let sig = call.arg("sig").cloned().unwrap_or(Value::Null);
        let flag = |k: &str| call.arg(k).is_some_and(truthy);
        let (status_kwargs, warnings) = self.systemd_only("service.status");
        Self::add_warnings(&mut ret, warnings);
        let sfun = call.arg("sfun").map(python::str);
        let (func, verb, past) = match sfun.as_deref() {
            Some("dead") => match self.status(&sig, status_kwargs).await {
                Ok(true) => ("service.stop", "stop", "stopped".to_owned()),
                Ok(false) => {
                    ret.comment = "Service is already stopped".into();
                    return ret;
                }
                Err(e) => return failed(ret, e),
            },
            Some("running") => {
                let (func, verb) = match self.status(&sig, status_kwargs).await {
                    Ok(true) => {
                        if self.b.has("service.reload") && flag("reload") {
                            if self.b.has("service.force_reload") && flag("force") {
                                ("service.force_reload", "forcefully reload")
                            } else {
                                ("service.reload", "reload")
                            }
                        } else if self.b.has("service.full_restart") && flag("full_restart") {
                            ("service.full_restart", "fully restart")
                        } else {
                            ("service.restart", "restart")
                        }
                    }
                    Ok(false) => ("service.start", "start"),
                    Err(e) => return failed(ret, e),
                };
                (func, verb, format!("{verb}ed"))
            }
            other => {
                ret.comment = format!(
                    "Unable to trigger watch for service.{}",
                    other.unwrap_or("None")
                );
                ret.result = Some(false);
                return ret;
            }
        };
        if self.test {
            ret.result = None;
            ret.comment = format!("Service is set to be {past}");
            return ret;
        }
        if verb == "start" && self.b.has("service.stop") {
            let _ = self.call("service.stop", vec![json!(name)]).await;
        }
        let (func_kwargs, warnings) = self.systemd_only(func);
        Self::add_warnings(&mut ret, warnings);
        let result = match self.call_kw(func, vec![json!(name)], func_kwargs).await {
            Ok(v) => v,
            Err(e) => return failed(ret, e),
        };
        delay(call.arg("init_delay")).await;
        let ok = truthy(&result);
        ret.changes = Map::new();
        ret.changes.insert(name.clone(), result.clone());
        ret.result = match result {
            Value::Bool(b) => Some(b),
            _ => Some(ok),
        };
        ret.comment = if ok {
            format!("Service {past}")
        } else {
            format!("Failed to {verb} the service")
        };
        ret
    }
}

fn failed(mut ret: Ret, comment: String) -> Ret {
    ret.result = Some(false);
    ret.comment = comment;
    ret
}

/// Sleeps `init_delay` seconds when given; the delay as Salt prints it.
async fn delay(init_delay: Option<&Value>) -> Option<String> {
    let v = init_delay.filter(|v| truthy(v))?;
    let secs = v.as_f64().or_else(|| python::str(v).parse().ok())?;
    if secs.is_finite() && secs > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    }
    Some(python::str(v))
}
